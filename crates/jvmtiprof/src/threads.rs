//! The registry of the process's threads: one slot per kernel thread id, readable from a signal
//! handler (no lock, no allocation: a lookup is two atomic loads), written off the signal path.
//!
//! A thread is known by its [`ThreadKey`]: its kernel id (tid) and a generation that changes
//! when the tid is registered again after its thread ended, so that a reused tid never passes
//! for the thread that had it before. Each slot carries a [`word`](ThreadRegistry::word) of the
//! agent's own (e.g. "inside a root method") that a signal handler can read, and the sampler's
//! per-thread timer.
//!
//! ```
//! let registry = jvmtiprof::threads::registry();
//! let me = registry.register_current().unwrap();
//! registry.set_word(me, 7);
//! assert_eq!(registry.word(me), Some(7));
//! assert!(registry.keys().contains(&me));
//! assert_eq!(registry.lookup(me.tid()), Some(me));
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::ffi::os;

/// A thread of this process: its kernel thread id and the generation of that id in the
/// registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadKey {
    tid: u32,
    generation: u32,
}

impl ThreadKey {
    /// The kernel thread id (`gettid()`, the `nid` of a `jstack` dump in decimal).
    pub fn tid(self) -> u32 {
        self.tid
    }

    /// Which registration of this tid the key names.
    pub fn generation(self) -> u32 {
        self.generation
    }

    pub(crate) fn new(tid: u32, generation: u32) -> Self {
        ThreadKey { tid, generation }
    }
}

impl fmt::Display for ThreadKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tid {}", self.tid)
    }
}

/// Slots per page of the registry.
const PAGE: usize = 1024;

/// The slot flag of a thread known to be a Java thread (it has a `JNIEnv`).
pub(crate) const FLAG_JAVA: u32 = 1;
/// The slot flag of a thread known not to be a Java thread (a JVM-internal or native thread).
pub(crate) const FLAG_NOT_JAVA: u32 = 2;

/// One thread's state, as signal handlers see it.
#[derive(Default)]
pub(crate) struct Slot {
    /// The tid while registered, 0 when free.
    tid: AtomicU32,
    generation: AtomicU32,
    flags: AtomicU32,
    word: AtomicU64,
    /// The sampler's CPU timer id + 1 (0: none).
    pub(crate) timer: AtomicI32,
    /// The sampler's task-clock perf event descriptor + 1 (0: none).
    pub(crate) perf_fd: AtomicI32,
    /// When the thread's last wall-clock sample was taken (ns, monotonic; 0: never).
    pub(crate) last_wall_ns: AtomicU64,
    /// The thread's CPU time at its last wall-clock tick (the wall sampler's idle test).
    pub(crate) last_wall_cpu_ns: AtomicU64,
    /// The thread's `JNIEnv` (as an address), learnt by its first sample.
    pub(crate) jni_env: AtomicUsize,
}

impl Slot {
    pub(crate) fn key(&self) -> Option<ThreadKey> {
        let tid = self.tid.load(Ordering::Acquire);
        (tid != 0).then(|| ThreadKey::new(tid, self.generation.load(Ordering::Relaxed)))
    }

    pub(crate) fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    pub(crate) fn add_flags(&self, flags: u32) {
        if self.flags.load(Ordering::Relaxed) & flags != flags {
            self.flags.fetch_or(flags, Ordering::Relaxed);
        }
    }

    pub(crate) fn word(&self) -> u64 {
        self.word.load(Ordering::Relaxed)
    }
}

/// What is known about a Java thread of the registry (set by whoever learns it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaThread {
    /// `Thread.getId()`.
    pub id: i64,
    /// `Thread.getName()` when it was learnt.
    pub name: String,
}

/// The threads of this process, by kernel thread id. One per process: [`registry`].
pub struct ThreadRegistry {
    pages: Box<[OnceLock<Box<[Slot]>>]>,
    /// Tids at or above this have no slot (`/proc/sys/kernel/pid_max` at start).
    limit: u32,
    next_generation: AtomicU32,
    /// Registrations refused because the tid was beyond `limit`.
    refused: AtomicU64,
    java: Mutex<HashMap<ThreadKey, JavaThread>>,
}

/// The process's thread registry.
pub fn registry() -> &'static ThreadRegistry {
    static REGISTRY: OnceLock<ThreadRegistry> = OnceLock::new();
    REGISTRY.get_or_init(|| ThreadRegistry::with_limit(pid_max()))
}

/// `/proc/sys/kernel/pid_max`, the bound of every tid (4194304, the kernel's maximum, if unreadable).
fn pid_max() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(4_194_304)
}

impl ThreadRegistry {
    fn with_limit(limit: u32) -> Self {
        let pages = (limit as usize).div_ceil(PAGE);
        ThreadRegistry {
            pages: (0..pages).map(|_| OnceLock::new()).collect(),
            limit,
            next_generation: AtomicU32::new(1),
            refused: AtomicU64::new(0),
            java: Mutex::new(HashMap::new()),
        }
    }

    /// The slot of `tid` if its page exists. Async-signal-safe.
    #[inline]
    pub(crate) fn slot(&self, tid: u32) -> Option<&Slot> {
        let page = self.pages.get(tid as usize / PAGE)?.get()?;
        page.get(tid as usize % PAGE)
    }

    /// The slot of `tid`, its page made if needed. Not async-signal-safe (may allocate).
    fn slot_or_make(&self, tid: u32) -> Option<&Slot> {
        if tid == 0 || tid >= self.limit {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let page = self.pages.get(tid as usize / PAGE)?.get_or_init(|| {
            (0..PAGE)
                .map(|_| Slot::default())
                .collect::<Vec<_>>()
                .into_boxed_slice()
        });
        page.get(tid as usize % PAGE)
    }

    /// Registers thread `tid` of this process (idempotent: a registered tid keeps its key).
    /// `None` when the tid is beyond the registry's bound (counted in [`refused`](Self::refused)).
    pub fn register(&self, tid: u32) -> Option<ThreadKey> {
        let slot = self.slot_or_make(tid)?;
        if let Some(key) = slot.key() {
            return Some(key);
        }
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        slot.generation.store(generation, Ordering::Relaxed);
        slot.flags.store(0, Ordering::Relaxed);
        slot.word.store(0, Ordering::Relaxed);
        slot.last_wall_ns.store(0, Ordering::Relaxed);
        slot.last_wall_cpu_ns.store(0, Ordering::Relaxed);
        slot.jni_env.store(0, Ordering::Relaxed);
        match slot
            .tid
            .compare_exchange(0, tid, Ordering::Release, Ordering::Acquire)
        {
            Ok(_) => Some(ThreadKey::new(tid, generation)),
            // Registered meanwhile by another thread.
            Err(_) => slot.key(),
        }
    }

    /// Registers the calling thread.
    pub fn register_current(&self) -> Option<ThreadKey> {
        self.register(os::gettid())
    }

    /// Forgets thread `key` (its thread ended); a later [`register`](Self::register) of the
    /// same tid gets a new generation. A stale key is ignored.
    pub fn unregister(&self, key: ThreadKey) {
        let Some(slot) = self.slot(key.tid) else {
            return;
        };
        if slot.key() != Some(key) {
            return;
        }
        slot.word.store(0, Ordering::Relaxed);
        slot.tid.store(0, Ordering::Release);
        self.java
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
    }

    /// The key of registered thread `tid`. Async-signal-safe.
    #[inline]
    pub fn lookup(&self, tid: u32) -> Option<ThreadKey> {
        self.slot(tid)?.key()
    }

    /// The calling thread's key, if registered.
    pub fn current(&self) -> Option<ThreadKey> {
        self.lookup(os::gettid())
    }

    /// The agent's word of thread `key` (`None` for a stale key). Async-signal-safe.
    #[inline]
    pub fn word(&self, key: ThreadKey) -> Option<u64> {
        let slot = self.slot(key.tid)?;
        (slot.key() == Some(key)).then(|| slot.word())
    }

    /// Sets the agent's word of thread `key`: a value signal handlers (a
    /// [`SignalHandler`](crate::sampler::SignalHandler), the sampler's
    /// [`Threads::Marked`](crate::sampler::Threads::Marked)) can read. Returns false for a stale key.
    #[inline]
    pub fn set_word(&self, key: ThreadKey, value: u64) -> bool {
        let Some(slot) = self.slot(key.tid) else {
            return false;
        };
        if slot.key() != Some(key) {
            return false;
        }
        slot.word.store(value, Ordering::Relaxed);
        true
    }

    /// Every registered thread.
    pub fn keys(&self) -> Vec<ThreadKey> {
        let mut keys = Vec::new();
        for page in self.pages.iter().filter_map(OnceLock::get) {
            keys.extend(page.iter().filter_map(Slot::key));
        }
        keys
    }

    /// Registrations refused because the tid was beyond `/proc/sys/kernel/pid_max` as it was when
    /// the registry was made.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Whether thread `key` is known to be a Java thread (`Some(true)`), known not to be one
    /// (`Some(false)`, e.g. a GC or compiler thread), or not known yet.
    pub fn is_java(&self, key: ThreadKey) -> Option<bool> {
        let slot = self.slot(key.tid)?;
        if slot.key() != Some(key) {
            return None;
        }
        let flags = slot.flags();
        if flags & FLAG_JAVA != 0 {
            Some(true)
        } else if flags & FLAG_NOT_JAVA != 0 {
            Some(false)
        } else {
            None
        }
    }

    /// Records what thread `key` is in Java (its id and name).
    pub fn set_java(&self, key: ThreadKey, thread: JavaThread) {
        if let Some(slot) = self.slot(key.tid).filter(|s| s.key() == Some(key)) {
            slot.add_flags(FLAG_JAVA);
            self.java
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key, thread);
        }
    }

    /// The Java identity of thread `key`, if known.
    pub fn java(&self, key: ThreadKey) -> Option<JavaThread> {
        self.java
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned()
    }

    /// Brings the registry in line with `/proc/self/task`: registers the threads it lists and
    /// unregisters registered threads it no longer lists. Returns the threads added and removed.
    pub fn scan_process(&self) -> std::io::Result<Scan> {
        let mut live = Vec::new();
        for entry in std::fs::read_dir("/proc/self/task")? {
            if let Some(tid) = entry?.file_name().to_str().and_then(|s| s.parse().ok()) {
                live.push(tid);
            }
        }
        live.sort_unstable();
        let mut scan = Scan::default();
        for key in self.keys() {
            if live.binary_search(&key.tid).is_err() && os::thread_cpu_ns(key.tid).is_none() {
                self.unregister(key);
                scan.removed.push(key);
            }
        }
        for tid in live {
            if self.lookup(tid).is_none() {
                if let Some(key) = self.register(tid) {
                    scan.added.push(key);
                }
            }
        }
        Ok(scan)
    }
}

/// What [`ThreadRegistry::scan_process`] changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Threads registered by the scan.
    pub added: Vec<ThreadKey>,
    /// Threads that had ended.
    pub removed: Vec<ThreadKey>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_change_generation_when_a_tid_is_registered_again() {
        let r = ThreadRegistry::with_limit(5000);
        let a = r.register(4000).unwrap();
        assert_eq!(r.register(4000), Some(a), "idempotent");
        assert!(r.set_word(a, 3));
        r.unregister(a);
        assert_eq!(r.lookup(4000), None);
        assert!(!r.set_word(a, 4), "stale key");
        let b = r.register(4000).unwrap();
        assert_ne!(a, b);
        assert_eq!(b.tid(), 4000);
        assert_eq!(r.word(b), Some(0), "a new registration starts clean");
        assert_eq!(r.word(a), None);
        assert_eq!(r.register(6000), None);
        assert_eq!(r.register(0), None);
        assert_eq!(r.refused(), 2);
        assert_eq!(r.keys(), vec![b]);
    }

    #[test]
    fn a_scan_finds_this_thread_and_forgets_ended_ones() {
        let r = ThreadRegistry::with_limit(pid_max());
        // A thread id that is none of this process's threads: init's (an ended thread's id may
        // be taken again at once by a thread of a test running beside this one).
        assert_ne!(std::process::id(), 1);
        let stale = r.register(1).unwrap();
        let scan = r.scan_process().unwrap();
        let me = r.lookup(os::gettid()).unwrap();
        assert!(scan.added.contains(&me));
        assert!(scan.removed.contains(&stale), "{scan:?}");
        assert_eq!(r.is_java(me), None);
        r.set_java(
            me,
            JavaThread {
                id: 1,
                name: "main".into(),
            },
        );
        assert_eq!(r.is_java(me), Some(true));
        assert_eq!(r.java(me).unwrap().name, "main");
    }
}
