//! Instrumentation sessions: the call-subgraph planner of the session running, the classes it
//! patched, and the class hooks that feed it; revelation (lazy, on the probes' threads or the
//! reveal thread), retransformation, and `adaptive`'s drops.
//!
//! Method ids handed to probes are global: `base + planner id`, with a fresh `base` per session, so a
//! probe of an older session that still runs in some frame can never be mistaken for a new method
//! (its flags are cleared and it records nothing).
//!
//! State: the sessions' ([`Sessions`]: the session running, what the last one said, the ids
//! handed out, revelation) and the class bytes cache's (`classes::ClassCache`, over the
//! agent's life), each one process-wide value reached from the JVM's callbacks.
//!
//! Locks: the session, the class cache and the names are each held only for bookkeeping, never
//! across a JVMTI call that may load classes or retransform (the ClassFileLoadHook of a
//! retransformation runs on the retransforming thread and takes the session's lock itself).
//!
//! - [`classes`]: the class bytes cache and the class hooks (ClassFileLoadHook, ClassPrepare).
//! - [`instrument`]: starting and ending a session.
//! - [`retransform`]: retransformations, a failing class isolated by halving.
//! - [`reveal`]: revelation on the thread that needs it.
//! - [`queue`]: the reveal thread (`reveal=async`).
//! - [`selection`]: the ids the planner hands out, as probes pass them.
//! - [`adaptive`]: dropping the probes of short, frequent methods.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ferrofluid_classfile::SkipReason;
use ferrofluid_jvmti::{JniEnv, Jvmti};
use ferrofluid_profile::{ClassPhase, FailedClass};
use ferrofluid_subgraph::{MethodPattern, Planner, BOOTSTRAP};

use crate::engine::{EngineSession, Instrumentation, Selection as Chosen};
use crate::probe::flags;
use crate::probe::thread::SWITCHES;

pub mod adaptive;
pub mod classes;
pub mod instrument;
pub mod queue;
pub mod retransform;
pub mod reveal;
pub mod selection;

pub use adaptive::{drop_probes, drops_in_java, quiet_probes, retransform_dropped};
pub use classes::{class_file_load, class_key, class_prepared};
pub use instrument::{deinstrument_all, instrument_all};
pub use queue::set_reveal;
pub use reveal::{
    first_invocation, hidden_receiver_seen, initializing_by_name, is_handle_site, receiver_seen,
    receiver_site_call, reveal, site_reached,
};

pub use crate::engine::ClassKey;

use classes::CACHE;
use reveal::plan_and_retransform;
use selection::Offset;

pub struct Session {
    planner: Planner,
    base: u32,
    /// Receiver-site ids handed to probes are `site_base + planner site`, fresh per session like
    /// method ids, so a probe of an older session never names a site of this one.
    site_base: u32,
    roots: Vec<MethodPattern>,
    /// Classes whose current bytes carry probes.
    instrumented: BTreeSet<ClassKey>,
    /// Loaded classes with newly chosen methods, to retransform.
    pending: BTreeSet<ClassKey>,
    /// Classes with newly chosen methods that cannot be retransformed yet: loaded but not
    /// prepared (a verifier or a subclass loaded them), so the agent has no reference to them.
    /// They are retransformed at their ClassPrepare, before any of their code can run.
    unprepared: BTreeSet<ClassKey>,
    /// Static initialisers are chosen for classes not initialised yet (lazy and eager with
    /// roots; `total` has them already, an engine selecting methods alone times just those).
    initializers: bool,
    /// Classes loaded before the session, not initialised yet and not registered yet (their
    /// bytes come with their first retransformation): their `<clinit>` is chosen then.
    uninitialized: HashSet<ClassKey>,
    /// Methods the engine could not patch: `class.method descriptor: reason`.
    failures: Vec<String>,
    /// Reflection and method-handle gateways get `reveal` probes (lazy and eager with roots).
    gateways: bool,
    /// The engine's probes and which methods get them.
    instrumentation: Instrumentation,
    /// JDK classes whose current bytes carry gateway probes (not counted as instrumented).
    gated: BTreeSet<ClassKey>,
    /// The engine's part of the session: it puts its probes into a class's bytes.
    engine: Arc<dyn EngineSession>,
}

/// What `instrument`/`deinstrument` did, for the reply and the log.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub classes: usize,
    pub methods: usize,
    pub errors: Vec<String>,
}

/// The sessions: the one running, what the last one said when it ended, the ids handed out over
/// the agent's life, and revelation's lock and queue.
pub(crate) struct Sessions {
    /// The session running (instrumented, until `deinstrument`).
    current: Mutex<Option<Session>>,
    /// Global id -> its method.
    names: Mutex<Option<HashMap<u32, MethodName>>>,
    /// Where the next session's ids start (lower ids are reserved for calibration).
    next_base: AtomicU32,
    next_site_base: AtomicU32,
    /// Classes the current (or last) session could not instrument or restore, or left alone
    /// because none of their code can run, in the order met: for the profile and `status`.
    /// Cleared when a session starts; bounded by [`MAX_FAILED`].
    failed: Mutex<Vec<FailedClass>>,
    /// What a snapshot says of the last session once it ended (`deinstrument`), so that a tool
    /// may remove the probes before it asks for the profile: methods instrumented, trivial
    /// methods skipped, global ids of the methods whose probes were dropped.
    ended: Mutex<Option<(u64, u64, Vec<u32>)>>,
    /// JDK classes the current (or last) session leaves uninstrumented as inlined into much of
    /// the compiled code (`runtime::census`), dotted names: for the profile.
    left_alone: Mutex<Vec<String>>,
    /// Serialises lazy revelation: a thread that reaches a method's first invocation while
    /// another thread is still instrumenting its callees waits, so that no thread proceeds into
    /// uninstrumented callees. Held across RetransformClasses; the ClassFileLoadHook never takes
    /// it.
    reveal: Mutex<()>,
    /// `reveal=async` for the sessions started from now on ([`queue::set_reveal`]).
    asynchronous: AtomicBool,
    /// The reveal thread and what it is asked to reveal.
    queue: queue::RevealQueue,
}

// Process-wide: the class hooks and the probes' revelation, JVM callbacks without user data,
// reach the session running.
pub(crate) static SESSIONS: Sessions = Sessions {
    current: Mutex::new(None),
    names: Mutex::new(None),
    next_base: AtomicU32::new(crate::probe::thread::FIRST_SESSION_ID),
    next_site_base: AtomicU32::new(0),
    failed: Mutex::new(Vec::new()),
    ended: Mutex::new(None),
    left_alone: Mutex::new(Vec::new()),
    reveal: Mutex::new(()),
    asynchronous: AtomicBool::new(false),
    queue: queue::RevealQueue::new(),
};

/// Internal class name, method name, descriptor.
pub type MethodName = (String, String, String);

const MAX_FAILED: usize = 1000;

/// Sessions' method ids begin again at the first once they pass this: half the ids the probes'
/// tables hold (`Counts.MAX_METHODS`, the budget's drop levels: 4 Mi), the other half room for
/// the session that passes it.
pub(super) const METHOD_IDS_WRAP: u32 = (crate::probe::site_flags::MAX_METHODS / 2) as u32;
/// The same for receiver-site ids (`site_flags::MAX_SITES`).
pub(super) const SITE_IDS_WRAP: u32 = (crate::probe::site_flags::MAX_SITES / 2) as u32;

/// Where the ids of the session after one whose ids began at `base` and numbered `count` begin:
/// right after them, or at `first` once past `wrap`. Each session's ids are new, so that a probe
/// an ended session left on a thread's stack (a frame that has not returned) is not taken for
/// one of the next session's; but the probes' tables hold ids up to a limit, which repeated
/// attaches (one a minute, for continuous profiling) would pass within hours. A session's ids
/// are flagged and named afresh when it starts, so reusing those of sessions long ended costs
/// at most such a frame's exit counted in the method that has its id now.
pub(super) fn next_ids(base: u32, count: u32, first: u32, wrap: u32) -> u32 {
    match base.checked_add(count) {
        Some(next) if next <= wrap => next,
        _ => first,
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The name and descriptor of global method `id`, for the collector.
pub fn method_name(id: u32) -> Option<MethodName> {
    let named = lock(&SESSIONS.names)
        .as_ref()
        .and_then(|names| names.get(&id).cloned());
    named.or_else(|| crate::engine::method_name(id))
}

/// Classes the current (or last) session could not instrument or restore ([`Sessions::failed`]).
pub fn failed_classes() -> Vec<FailedClass> {
    lock(&SESSIONS.failed).clone()
}

/// Sets the classes the session starting leaves uninstrumented as inlined everywhere.
pub fn set_left_alone(classes: Vec<String>) {
    *lock(&SESSIONS.left_alone) = classes;
}

/// The classes the current (or last) session left uninstrumented as inlined everywhere.
pub fn left_alone() -> Vec<String> {
    lock(&SESSIONS.left_alone).clone()
}

/// Logs a class that could not be instrumented or restored, and lists it for the profile.
pub(super) fn record_failed(class: &str, phase: ClassPhase, error: String, skipped: bool) {
    let what = match (phase, skipped) {
        (ClassPhase::Instrument, false) => "not instrumented",
        (ClassPhase::Restore, false) => "not restored",
        (ClassPhase::Instrument, true) => "not instrumented (skipped)",
        (ClassPhase::Restore, true) => "not restored (skipped)",
    };
    log::warn!("{what}: {class}: {error}");
    let mut failed = lock(&SESSIONS.failed);
    if failed.len() < MAX_FAILED {
        ferrofluid_profile::merge_failed(
            &mut failed,
            [FailedClass::new(class, phase, error, skipped)],
        );
    }
}

/// Why a class in error state is not retransformed (RetransformClasses refuses it with
/// `JVMTI_ERROR_INVALID_CLASS` without trying; none of its code can run).
const IN_ERROR: &str = "in error state: its static initialiser failed";

/// Why an unlinked class is not restored now (none of its code can run before it links; its
/// probes are removed at its ClassPrepare if that comes while the agent is attached).
const NOT_LINKED: &str = "not linked: its linking failed, or nothing used it yet";

/// Number of methods carrying probes and classes patched in the current session.
pub fn counts() -> (u64, u64) {
    lock(&SESSIONS.current).as_ref().map_or((0, 0), |s| {
        (
            s.planner.counters().instrumented as u64,
            s.instrumented.len() as u64,
        )
    })
}

/// The session's root patterns that match no loaded method, each with near names.
pub fn unmatched_roots() -> Vec<ferrofluid_protocol::control::Unmatched> {
    let session = lock(&SESSIONS.current);
    let Some(s) = session.as_ref() else {
        return Vec::new();
    };
    s.planner
        .unmatched_roots()
        .into_iter()
        .map(|p| ferrofluid_protocol::control::Unmatched {
            pattern: p.to_string(),
            near: s.planner.near_names(p, 3),
        })
        .collect()
}

/// Whether a session is running (instrumented, until `deinstrument`).
pub fn running() -> bool {
    lock(&SESSIONS.current).is_some()
}

/// Runs `plan` on the running session (no class is instrumented meanwhile), then retransforms
/// the classes it returns, before this returns (an engine's request: an `alloc` session
/// narrowed to new allocated classes). False without a session.
pub fn replan(jvmti: Jvmti, env: &JniEnv<'_>, plan: &mut dyn FnMut() -> Vec<ClassKey>) -> bool {
    let _reveal = lock(&SESSIONS.reveal);
    plan_and_retransform(jvmti, env, "replanning", |s| {
        s.pending.extend(plan());
        true
    })
}

/// Methods the current session instrumented, or the last one if it ended: what a profile says.
pub fn methods_instrumented() -> u64 {
    match lock(&SESSIONS.current).as_ref() {
        Some(s) => s.planner.counters().instrumented as u64,
        None => lock(&SESSIONS.ended).as_ref().map_or(0, |e| e.0),
    }
}

/// Methods the session's planner left uninstrumented as trivial (or the last session's).
pub fn trivial_skipped() -> u64 {
    match lock(&SESSIONS.current).as_ref() {
        Some(s) => s.planner.counters().trivial_skipped as u64,
        None => lock(&SESSIONS.ended).as_ref().map_or(0, |e| e.1),
    }
}

/// The global ids of the methods whose probes were dropped ([`drop_probes`]), in the current
/// session or the last one.
pub fn dropped_ids() -> Vec<u32> {
    match lock(&SESSIONS.current).as_ref() {
        Some(s) => s.planner.dropped().map(|pid| s.base + pid).collect(),
        None => lock(&SESSIONS.ended)
            .as_ref()
            .map_or_else(Vec::new, |e| e.2.clone()),
    }
}

/// Logs how precise the subgraph was: methods instrumented, called, receiver sites, and the
/// names most often instrumented but never called (what a better analysis would save).
pub fn log_precision() {
    let session = lock(&SESSIONS.current);
    let Some(s) = session.as_ref() else {
        return;
    };
    let c = s.planner.counters();
    if s.methods_only() {
        // Nothing is revealed, so the planner sees no first calls: the profile has the calls.
        log::info!(
            "subgraph: {} methods instrumented alone (their calls are in the profile)",
            c.instrumented
        );
        return;
    }
    let mut uncalled: HashMap<String, usize> = HashMap::new();
    for id in 0..c.instrumented as u32 {
        if let Some(m) = s.planner.method(id).filter(|m| !m.invoked) {
            *uncalled
                .entry(format!("{}{}", m.name, m.descriptor))
                .or_default() += 1;
        }
    }
    let mut top: Vec<(String, usize)> = uncalled.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let top: Vec<String> = top
        .iter()
        .take(12)
        .map(|(n, k)| format!("{n} x{k}"))
        .collect();
    log::info!(
        "subgraph: {} methods instrumented, {} called, {} receiver sites ({} of them deferred sites); never called: {}",
        c.instrumented,
        c.invoked,
        c.receiver_sites,
        c.deferred_sites,
        top.join(", ")
    );
    log::info!(
        "retransformations: {} calls, {} classes, {} ms; calls before their callees were instrumented (reveal=async): {}",
        CACHE.retransform_calls.load(Ordering::Relaxed),
        CACHE.retransform_classes.load(Ordering::Relaxed),
        CACHE.retransform_ns.load(Ordering::Relaxed) / 1_000_000,
        SWITCHES.unrevealed.load(Ordering::Relaxed)
    );
}

/// FNV-1a of class bytes, for the log lines that prove a class was restored.
pub fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl Session {
    /// Whether the engine instruments the methods the roots name alone (nothing revealed).
    pub(super) fn methods_only(&self) -> bool {
        self.instrumentation.selection == Chosen::Methods
    }

    /// Records newly chosen methods (flags before any probe can call them) and queues their
    /// classes for retransformation, except `loading` (being transformed right now).
    fn apply(&mut self, batch: ferrofluid_subgraph::Batch, loading: Option<&ClassKey>) {
        let mut names = lock(&SESSIONS.names);
        let names = names.get_or_insert_with(HashMap::new);
        let methods_only = self.methods_only();
        let engine = Arc::clone(&self.engine);
        for class in &batch.classes {
            for &pid in &class.methods {
                let Some(m) = self.planner.method(pid) else {
                    continue;
                };
                let id = self.base + pid;
                let root = self
                    .roots
                    .iter()
                    .any(|r| r.matches(m.class, m.name, m.descriptor));
                let mut bits = flags::ACTIVE;
                if root {
                    bits |= flags::ROOT;
                }
                if methods_only {
                    // Only the methods named get probes, and their callees are never revealed.
                    if !root {
                        continue;
                    }
                    bits |= flags::INVOKED;
                }
                engine.method_chosen(id);
                flags::set(id, bits);
                names.insert(
                    id,
                    (
                        m.class.to_owned(),
                        m.name.to_owned(),
                        m.descriptor.to_owned(),
                    ),
                );
            }
            let key = (class.loader, class.class.clone());
            if Some(&key) != loading {
                self.pending.insert(key);
            }
        }
    }

    /// Instruments `bytes` of `key` with the methods chosen so far, and its gateways: new
    /// bytes, or `None`.
    fn transform(&mut self, key: &ClassKey, bytes: &[u8]) -> Option<Vec<u8>> {
        let probed = self.probe(key, bytes);
        if !self.gateways
            || key.0 != BOOTSTRAP
            || !crate::runtime::reveal::gateway_classes().any(|c| c == key.1)
        {
            return probed;
        }
        let input = probed.as_deref().unwrap_or(bytes);
        let hooks = ferrofluid_classfile::Hooks::default();
        match ferrofluid_classfile::instrument_reveal(
            input,
            &hooks,
            &mut crate::runtime::reveal::gateway,
        ) {
            Ok(out) => {
                if out.methods.is_empty() {
                    log::info!("{}: no gateway method in this JDK's version", key.1);
                }
                for m in &out.methods {
                    if let Err(reason) = &m.result {
                        let e = format!("gateway {}.{}{}: {reason}", key.1, m.name, m.descriptor);
                        log::warn!("not instrumented: {e}");
                        self.failures.push(e);
                    }
                }
                if out.bytes.is_some() {
                    self.gated.insert(key.clone());
                }
                out.bytes.or(probed)
            }
            Err(e) => {
                log::warn!("gateway {}: {e}", key.1);
                probed
            }
        }
    }

    /// The entry-exit probes of the methods chosen so far.
    fn probe(&mut self, key: &ClassKey, bytes: &[u8]) -> Option<Vec<u8>> {
        let selection = self.planner.selection_for(key.0, &key.1)?;
        if selection.chosen().is_empty() {
            // Its last probed methods were dropped (`adaptive`): back to its original bytes.
            self.instrumented.remove(key);
            return None;
        }
        let mut selection = Offset {
            selection,
            base: self.base,
            site_base: self.site_base,
            methods_only: self.instrumentation.selection == Chosen::Methods,
            leaves: self.instrumentation.leaves,
        };
        let instrumented =
            self.engine
                .instrument(key, bytes, self.instrumentation.probes, &mut selection);
        match instrumented {
            Ok(out) => {
                for m in &out.methods {
                    if let Err(reason) = &m.result {
                        if !matches!(
                            reason,
                            SkipReason::Abstract
                                | SkipReason::Native
                                | SkipReason::Intrinsic
                                | SkipReason::NothingToDo
                        ) {
                            let e = format!("{}.{}{}: {reason}", key.1, m.name, m.descriptor);
                            log::warn!("not instrumented: {e}");
                            self.failures.push(e);
                        }
                    }
                }
                if out.bytes.is_some() {
                    self.instrumented.insert(key.clone());
                }
                out.bytes
            }
            Err(e) => {
                record_failed(
                    &key.1,
                    ClassPhase::Instrument,
                    format!("class file engine: {e}"),
                    false,
                );
                None
            }
        }
    }
}

/// Hands the memory the ended session freed back to the system. A snapshot builds and
/// serialises a profile of up to hundreds of MB in small allocations, on whichever control
/// thread served it; glibc keeps what each thread's arena freed, so without this the JVM's RSS
/// grew by about a snapshot's size every few sessions (docs/PERFORMANCE.md, "Soak").
pub fn release_freed_memory() {
    ferrofluid_jvmti::os::malloc_trim();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids go on after the last session's until they pass the wrap, then begin again at the
    /// first, also when the sum would overflow; the tables' limits hold a session past it.
    #[test]
    fn session_ids_begin_again_once_past_the_wrap() {
        let first = crate::probe::thread::FIRST_SESSION_ID;
        assert_eq!(
            next_ids(first, 25_000, first, METHOD_IDS_WRAP),
            first + 25_000
        );
        assert_eq!(
            next_ids(METHOD_IDS_WRAP - 10, 10, first, METHOD_IDS_WRAP),
            METHOD_IDS_WRAP
        );
        assert_eq!(
            next_ids(METHOD_IDS_WRAP - 10, 11, first, METHOD_IDS_WRAP),
            first
        );
        assert_eq!(next_ids(u32::MAX - 1, 5, 0, SITE_IDS_WRAP), 0);
        // A thousand whole-program sessions of 25,000 methods never reach an id the tables
        // drop.
        let mut base = first;
        for _ in 0..1000 {
            assert!(base + 25_000 < crate::probe::site_flags::MAX_METHODS as u32);
            assert!(base + 25_000 < crate::probe::flags::MAX_IDS);
            base = next_ids(base, 25_000, first, METHOD_IDS_WRAP);
        }
    }
}
