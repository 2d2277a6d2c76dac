//! Calling contexts kept in Java: `ferrofluid/Counts` (`Counts.java`) keeps each thread's
//! calling-context tree (JP's method call tree) in primitive arrays, found by its `Thread`'s
//! identity hash (else a `ThreadLocal`); probes that call it pass the context from entry to exit
//! in a local of the method, so an entry is a child lookup and an exit a store, with no JNI call
//! per event. The agent is asked at a root's entry and exit and at a method's first entry
//! ([`probes`], natives bound in [`ffi`]). Two engines use it: `count` (block counters: calls
//! and bytecodes per context) and `cpu` with sampled timing (calls per context; [`sampler`]
//! charges each thread's CPU and wall time to the node it is in, read from outside the thread).
//! [`tree`] turns the contexts read at a snapshot into profile trees.
//!
//! Decisions: docs/decisions/0051-count-contexts-in-java.md, 0057-sampled-timing.md.

#[allow(unsafe_code)]
pub mod ffi;
pub mod probes;
pub mod sampler;
pub mod tree;

/// The classes `ferrofluid/Counts` runs to find a thread's tree: never probed by an engine
/// using it (their probes would call it again before it found the tree). Calls of their methods
/// count as their callers'.
pub const UNPROBED: [&str; 4] = [
    "java.lang.ThreadLocal",
    "java.lang.ThreadLocal$*",
    "java.lang.ref.Reference",
    "java.lang.ref.WeakReference",
];

/// Nodes one thread's tree may have; past it new contexts count into the overflow node.
pub const MAX_NODES: usize = ferrofluid_profile::DEFAULT_MAX_NODES;
/// The share of the JVM's maximum heap all trees' nodes may take (48 bytes a node).
pub const HEAP_SHARE: f64 = 0.05;

/// Instruments `bytes` with `probes` calling `ferrofluid/Counts`, each frame keeping its context
/// in a local from entry to exit.
pub fn instrument<'a>(
    bytes: &'a [u8],
    probes: ferrofluid_classfile::ProbeKind,
    sites: &mut dyn ferrofluid_classfile::Selection,
) -> ferrofluid_classfile::Result<ferrofluid_classfile::Instrumented<'a>> {
    let mut options = ferrofluid_classfile::ProbeOptions::new(probes);
    options.hooks.class = ffi::COUNTS_CLASS.to_owned();
    options.hooks.blocks_context = true;
    ferrofluid_classfile::instrument(bytes, &options, sites)
}

/// Runs `f` on a thread of `vm` attached as `thread` (the calls into `ferrofluid/Counts` made
/// outside the JVM's own threads).
pub fn on_java_thread(
    vm: Option<ferrofluid_jvmti::JavaVm>,
    thread: &str,
    f: impl FnOnce(&ferrofluid_jvmti::JniEnv<'_>) -> Result<(), String>,
) -> Result<(), String> {
    let vm = vm.ok_or_else(|| "no JVM".to_owned())?;
    vm.with_attached_thread(thread, f)
        .map_err(|e| e.to_string())
        .and_then(|r| r)
}

/// A session's recordings in `ferrofluid/Counts`: the first starts the session (calls open in
/// an earlier session's contexts are not carried over), later ones are its resets.
#[derive(Debug, Default)]
pub struct Recordings {
    started: std::sync::atomic::AtomicBool,
}

impl Recordings {
    /// Starts a recording (`no_root`: every thread counts).
    pub fn start(&self, env: &ferrofluid_jvmti::JniEnv<'_>, no_root: bool) -> Result<(), String> {
        let new_session = !self
            .started
            .swap(true, std::sync::atomic::Ordering::Relaxed);
        // Every root invocation records unless the session's controller says otherwise.
        crate::probe::share::reset();
        ffi::start(env, no_root, MAX_NODES, HEAP_SHARE, new_session)
    }
}
