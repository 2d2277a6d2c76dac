//! The hybrid's probes: the roots' entry and exit probes mark each thread's extent inside a
//! root for the sampler (its registry word, which the signal handler reads: only marked
//! threads are sampled) and count the roots' calls exactly, per thread.
//!
//! A thread's calls live in a map of its own behind an uncontended lock (only a snapshot takes
//! it from another thread), registered once per thread and session.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use jvmtiprof::threads::{registry, ThreadKey};
use rustc_hash::FxHashMap;

use crate::probe::flags::{self, ACTIVE};
use crate::probe::thread::method_id;

/// The word a thread inside a root has in the sampler's thread registry.
const INSIDE: u64 = 1;

/// One thread's root calls, by global method id.
pub type Calls = Arc<Mutex<FxHashMap<u32, u64>>>;

/// Every thread's calls in this session, with its registry key.
struct Extents {
    /// Bumped by each session: a thread's state of an older one is stale.
    epoch: AtomicU32,
    threads: Mutex<Vec<(ThreadKey, Calls)>>,
}

// Process-wide: the probes, JVM natives without user data, register their threads in it.
static EXTENTS: Extents = Extents {
    epoch: AtomicU32::new(1),
    threads: Mutex::new(Vec::new()),
};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A thread's state: its registry key, how deep it is inside roots, its calls.
struct Local {
    epoch: Cell<u32>,
    key: Cell<Option<ThreadKey>>,
    depth: Cell<u32>,
    calls: RefCell<Option<Calls>>,
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            epoch: Cell::new(0),
            key: Cell::new(None),
            depth: Cell::new(0),
            calls: RefCell::new(None),
        }
    };
}

impl Local {
    /// Joins the current session: registers the thread and its calls.
    fn sync(&self) {
        let epoch = EXTENTS.epoch.load(Ordering::Acquire);
        if self.epoch.get() == epoch {
            return;
        }
        self.epoch.set(epoch);
        self.depth.set(0);
        let key = registry().register_current();
        self.key.set(key);
        let calls: Calls = Arc::default();
        if let Some(key) = key {
            lock(&EXTENTS.threads).push((key, calls.clone()));
        }
        *self.calls.borrow_mut() = Some(calls);
    }
}

/// A new session: every thread's extent and calls start afresh; threads marked by the last one
/// are unmarked.
pub fn new_session() {
    let old = std::mem::take(&mut *lock(&EXTENTS.threads));
    for (key, _) in old {
        registry().set_word(key, 0);
    }
    EXTENTS.epoch.fetch_add(1, Ordering::AcqRel);
}

/// Entry probe of method `id` (a root of the session when its flags say so).
#[inline]
pub fn enter(id: i32) {
    let id = method_id(id as u32);
    if flags::get(id) & ACTIVE == 0 {
        return;
    }
    let _ = LOCAL.try_with(|l| {
        l.sync();
        let depth = l.depth.get() + 1;
        l.depth.set(depth);
        if let Some(calls) = l.calls.borrow().as_ref() {
            *lock(calls).entry(id).or_insert(0) += 1;
        }
        if depth == 1 {
            if let Some(key) = l.key.get() {
                registry().set_word(key, INSIDE);
            }
        }
    });
}

/// Exit (or unwind) probe of method `id`.
#[inline]
pub fn exit(id: i32) {
    let id = method_id(id as u32);
    if flags::get(id) & ACTIVE == 0 {
        return;
    }
    let _ = LOCAL.try_with(|l| {
        // A root entered before this session began leaves nothing to close.
        if l.epoch.get() != EXTENTS.epoch.load(Ordering::Acquire) || l.depth.get() == 0 {
            return;
        }
        let depth = l.depth.get() - 1;
        l.depth.set(depth);
        if depth == 0 {
            if let Some(key) = l.key.get() {
                registry().set_word(key, 0);
            }
        }
    });
}

/// Every thread's root calls so far, by registry key.
pub fn calls() -> Vec<(ThreadKey, FxHashMap<u32, u64>)> {
    lock(&EXTENTS.threads)
        .iter()
        .map(|(key, calls)| (*key, lock(calls).clone()))
        .collect()
}

/// Forgets the calls counted so far (`reset`), keeping the threads' extents.
pub fn clear_calls() {
    for (_, calls) in lock(&EXTENTS.threads).iter() {
        lock(calls).clear();
    }
}
