//! Virtual threads (JDK 21+): the probes' per-thread state follows a virtual thread from
//! carrier to carrier.
//!
//! The probes keep a thread's state (root depth, its count in `Hooks.active`, its ring) in Rust
//! thread-locals, which belong to the OS thread: the carrier. With `can_support_virtual_threads`
//! the JVM reports each virtual thread's mount and unmount on the virtual thread itself, on its
//! carrier. On mount the carrier's own state is put aside and the virtual thread's is installed;
//! on unmount it is taken back out and kept, under the virtual thread's recorder key, in a map
//! that the virtual thread's JVMTI thread-local storage points into (only for a virtual thread
//! that has something to keep), and the carrier's is restored. The
//! probes are unchanged: they find the mounted virtual thread's state where a platform thread's
//! is (docs/decisions/0025-virtual-threads.md).
//!
//! A virtual thread records into a ring of its own ([`VIRTUAL_RING_EVENTS`] slots), which moves
//! with it and so has one producer at a time (a mount happens after the unmount before it).
//! When it unmounts outside every root, the ring is emptied into the recording if the collector
//! lock is free, and then let go: a virtual thread parked between roots holds no ring, and the
//! next one it gets carries the same recorder key, so its events continue the same tree, in
//! order (the old ring was empty). Parked time stays inside the open frames, as a platform
//! thread's blocking does.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};

use ferrofluid_jvmti::{JniEnv, Jvmti, Object, WeakGlobalRef};

use super::ring::Ring;
use super::thread::{next_thread_key, swap_carried, Carried};

/// Slots of a virtual thread's ring (16 bytes each: 32 KiB). Virtual threads are many, so their
/// rings are smaller than a platform thread's; a full one is emptied by its thread, as any.
pub const VIRTUAL_RING_EVENTS: usize = 1 << 11;

/// The virtual threads followed.
struct Virtual {
    /// Bumped each time the events are enabled: a carrier's record of a mount made under an
    /// older environment (before a detach) is stale.
    epoch: AtomicU32,
    /// The state of each parked virtual thread that has one, by recorder key; the virtual
    /// thread's JVMTI thread-local storage holds the key. Entries leave at the next mount.
    parked: Mutex<Option<HashMap<u64, Parked>>>,
}

// Process-wide: the virtual-thread events, JVMTI callbacks without user data, swap states in
// and out.
static VIRTUAL: Virtual = Virtual {
    epoch: AtomicU32::new(1),
    parked: Mutex::new(None),
};

/// What a carrier knows of the virtual thread mounted on it.
#[derive(Clone, Copy)]
struct Mounted {
    epoch: u32,
    /// The virtual thread's recorder key; 0 until it records.
    key: u64,
}

thread_local! {
    static MOUNTED: Cell<Option<Mounted>> = const { Cell::new(None) };
    /// The carrier's own state while a virtual thread is mounted on it.
    static CARRIER: RefCell<Option<Carried>> = const { RefCell::new(None) };
}

/// A parked virtual thread's state, and the thread itself while it is inside a root's extent
/// (for [`parked_in_root`]).
struct Parked {
    carried: Carried,
    thread: Option<WeakGlobalRef>,
}

fn parked() -> MutexGuard<'static, Option<HashMap<u64, Parked>>> {
    VIRTUAL.parked.lock().unwrap_or_else(|p| p.into_inner())
}

/// Forgets every parked virtual thread's state (the agent's environment, whose thread-local
/// storage holds their keys, is about to be disposed): their rings are closed.
pub fn forget_parked() {
    for (_, parked) in parked().take().into_iter().flatten() {
        close(parked.carried);
    }
}

/// Starts a new epoch of mounts (the virtual-thread events are enabled again): a carrier's
/// record of a mount made under an older environment is stale.
pub fn new_epoch() {
    VIRTUAL.epoch.fetch_add(1, Ordering::AcqRel);
}

/// The recorder key of the virtual thread mounted on this carrier (given on first use), or
/// `None` on a platform thread.
pub fn mounted_key() -> Option<u64> {
    MOUNTED
        .try_with(|m| {
            let mut now = m
                .get()
                .filter(|v| v.epoch == VIRTUAL.epoch.load(Ordering::Relaxed))?;
            if now.key == 0 {
                now.key = next_thread_key();
                m.set(Some(now));
            }
            Some(now.key)
        })
        .ok()
        .flatten()
}

/// A ring for the mounted virtual thread with recorder key `key`: named `virtual#ID` when it
/// has no name, as virtual threads mostly have not.
pub fn ring(key: u64, java_id: Option<u64>, name: Option<String>) -> Ring {
    let name = match name.filter(|n| !n.is_empty()) {
        Some(n) => n,
        None => format!("virtual#{}", java_id.unwrap_or(key)),
    };
    let ring = Ring::with_capacity(key, name, VIRTUAL_RING_EVENTS).into_virtual();
    match java_id {
        Some(id) => ring.with_java_id(id),
        None => ring,
    }
}

/// The current virtual thread is on this carrier: its kept state replaces the carrier's.
/// Idempotent (the start of a virtual thread may come with a mount event or not).
pub fn mounted(jvmti: Option<Jvmti>) {
    let epoch = VIRTUAL.epoch.load(Ordering::Relaxed);
    if MOUNTED
        .try_with(|m| m.get().is_some_and(|v| v.epoch == epoch))
        .unwrap_or(true)
    {
        return;
    }
    let key = jvmti
        .and_then(|j| j.thread_local_storage().ok())
        .map_or(0, |v| v as u64);
    let carried = if key == 0 {
        Carried::default()
    } else {
        parked()
            .as_mut()
            .and_then(|m| m.remove(&key))
            .map(|p| p.carried)
            .unwrap_or_default()
    };
    let own = swap_carried(carried);
    let _ = CARRIER.try_with(|c| *c.borrow_mut() = Some(own));
    let _ = MOUNTED.try_with(|m| m.set(Some(Mounted { epoch, key })));
}

/// The current virtual thread leaves this carrier: its state goes with it, the carrier's comes
/// back. Returns the virtual thread's state and key.
fn unmounted() -> (Carried, u64) {
    let own = CARRIER
        .try_with(|c| c.borrow_mut().take())
        .ok()
        .flatten()
        .unwrap_or_default();
    let carried = swap_carried(own);
    let key = MOUNTED
        .try_with(|m| m.take())
        .ok()
        .flatten()
        .filter(|v| v.epoch == VIRTUAL.epoch.load(Ordering::Relaxed))
        .map_or(0, |v| v.key);
    (carried, key)
}

/// Empties the ring of a virtual thread that unmounts outside every root into the recording
/// and lets it go if that worked: a virtual thread parked between roots holds no ring. Inside a
/// root it keeps its ring: getting a new one at every switch costs ~40 µs a switch
/// (docs/decisions/0025-virtual-threads.md). A ring that dropped events is kept, so its
/// recorder key's drop count stays that of one ring.
fn release_ring(carried: &mut Carried) {
    if carried.in_root() > 0 {
        return;
    }
    let Some(ring) = carried.ring.as_ref() else {
        return;
    };
    if !ring.is_empty() {
        super::collector::drain_own(ring);
    }
    if ring.is_empty() && ring.dropped() == 0 {
        ring.closed.store(true, Ordering::Release);
        carried.ring = None;
    }
}

pub fn unmounting(jvmti: Option<Jvmti>, env: Option<&JniEnv<'_>>, thread: Option<Object<'_>>) {
    let (mut carried, mut key) = unmounted();
    release_ring(&mut carried);
    if carried.is_idle() && key == 0 {
        return;
    }
    let Some(j) = jvmti else {
        close(carried);
        return;
    };
    if key == 0 {
        key = next_thread_key();
    }
    // The key, not a pointer: no memory hangs on the storage (it may outlive the environment).
    if let Err(e) = j.set_thread_local_storage(key as usize) {
        log::debug!("virtual thread state: {e}");
        close(carried);
        return;
    }
    if carried.is_idle() {
        return; // the key alone: the same tree when it records again
    }
    // Inside a root it is waiting in an open frame: kept for the snapshot's idle detection.
    let thread = match (env, thread) {
        (Some(env), Some(thread)) if carried.in_root() > 0 => env.new_weak(thread).ok(),
        _ => None,
    };
    if let Some(old) = parked()
        .get_or_insert_with(HashMap::new)
        .insert(key, Parked { carried, thread })
    {
        close(old.carried);
    }
}

/// A state that cannot be kept: its ring is closed (the collector lets it go once drained).
fn close(carried: Carried) {
    if let Some(ring) = carried.ring {
        ring.closed.store(true, Ordering::Release);
    }
}

/// The virtual threads parked inside a root's extent now (local references in `env`'s frame):
/// `GetAllThreads` lists platform threads only, and these are the ones waiting in open frames.
pub fn parked_in_root<'a>(env: &JniEnv<'a>) -> Vec<Object<'a>> {
    parked()
        .iter()
        .flat_map(|m| m.values())
        .filter_map(|p| p.thread.as_ref()?.upgrade(env))
        .collect()
}

/// A virtual thread ends (JVMTI VirtualThreadEnd, on it, after its thread state ended): its
/// state is let go.
pub fn ended() {
    let (carried, _) = unmounted();
    close(carried);
}
