//! An instrumentation session: the call-subgraph planner, the classes it patched, and the
//! ClassFileLoadHook/ClassPrepare handlers that feed it.
//!
//! Method ids handed to probes are global: `base + planner id`, with a fresh `base` per session, so a
//! probe of an older session that still runs in some frame can never be mistaken for a new method
//! (its flags are cleared and it records nothing).
//!
//! Locks: `SESSION`, `CLASSES` and `NAMES` are each held only for bookkeeping, never across a JVMTI
//! call that may load classes or retransform (the ClassFileLoadHook of a retransformation runs on
//! the retransforming thread and takes `SESSION` itself).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use ferrofluid_classfile::{CallSite, MethodSite, ProbeKind, ProbeOptions, Selection, SkipReason};
use ferrofluid_jvmti::{sys, Class, JavaVm, JniEnv, Jvmti, Object, WeakGlobalClass, WeakGlobalRef};
use ferrofluid_profile::{ClassPhase, FailedClass};
use ferrofluid_subgraph::{
    ClassSelection, Initialization, LoaderId, MethodPattern, PlanConfig, Planner, BOOTSTRAP,
};

use crate::engine::{Instrumentation, Selection as Chosen};
use crate::flags;
use crate::hooks;

/// A class as the planner knows it: defining loader (tag) and internal name.
pub type ClassKey = (LoaderId, String);

/// Classes retransformed per JVMTI call.
const RETRANSFORM_BATCH: usize = 100;

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
}

/// What `instrument`/`deinstrument` did, for the reply and the log.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub classes: usize,
    pub methods: usize,
    pub errors: Vec<String>,
}

static SESSION: Mutex<Option<Session>> = Mutex::new(None);
/// Where the next session's ids start (lower ids are reserved for calibration).
static NEXT_BASE: AtomicU32 = AtomicU32::new(hooks::FIRST_SESSION_ID);
static NEXT_SITE_BASE: AtomicU32 = AtomicU32::new(0);
static NEXT_LOADER: AtomicU64 = AtomicU64::new(1);
/// RetransformClasses calls, classes they named and ns they took, since the agent loaded: what
/// revelation costs the application (logged with the precision).
static RETRANSFORM_CALLS: AtomicU64 = AtomicU64::new(0);
static RETRANSFORM_CLASSES: AtomicU64 = AtomicU64::new(0);
static RETRANSFORM_NS: AtomicU64 = AtomicU64::new(0);

/// Loaded classes: a weak reference to each (to retransform it) and its original bytes as the
/// ClassFileLoadHook saw them, so that a new session (even after detach and re-attach) plans without
/// retransforming every loaded class again: each retransformation leaves the JVM a new class version
/// to keep while old frames run, and repeating them for every class makes each cycle slower.
/// Entries of unloaded classes stay (their weak reference is cleared); memory is the price.
#[derive(Default)]
struct Classes {
    /// Shared so that a reader takes one out of the lock and upgrades it after.
    refs: HashMap<ClassKey, Arc<WeakGlobalClass>>,
    bytes: HashMap<ClassKey, Arc<[u8]>>,
}

static CLASSES: Mutex<Option<Classes>> = Mutex::new(None);
/// Internal class name, method name, descriptor.
pub type MethodName = (String, String, String);

/// Global id -> its method.
static NAMES: Mutex<Option<HashMap<u32, MethodName>>> = Mutex::new(None);
/// Classes ever instrumented, whose retransformations are logged with a digest of their bytes.
static TRACED: Mutex<Option<HashSet<ClassKey>>> = Mutex::new(None);

/// Classes the current (or last) session could not instrument or restore, or left alone because
/// none of their code can run, in the order met: for the profile and `status`. Cleared when a
/// session starts; bounded by [`MAX_FAILED`].
static FAILED: Mutex<Vec<FailedClass>> = Mutex::new(Vec::new());
const MAX_FAILED: usize = 1000;

/// Instrumented classes that were not linked when their session ended: retransforming them
/// would make the JVM link them first (and fail again if their linking failed), so their
/// probes are removed at their ClassPrepare, if it comes while the agent is attached.
static RESTORE_AT_PREPARE: Mutex<BTreeSet<ClassKey>> = Mutex::new(BTreeSet::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The name and descriptor of global method `id`, for the collector.
pub fn method_name(id: u32) -> Option<MethodName> {
    lock(&NAMES).as_ref()?.get(&id).cloned()
}

/// Classes the current (or last) session could not instrument or restore ([`FAILED`]).
pub fn failed_classes() -> Vec<FailedClass> {
    lock(&FAILED).clone()
}

/// Logs a class that could not be instrumented or restored, and lists it for the profile.
fn record_failed(class: &str, phase: ClassPhase, error: String, skipped: bool) {
    let what = match (phase, skipped) {
        (ClassPhase::Instrument, false) => "not instrumented",
        (ClassPhase::Restore, false) => "not restored",
        (ClassPhase::Instrument, true) => "not instrumented (skipped)",
        (ClassPhase::Restore, true) => "not restored (skipped)",
    };
    log::warn!("{what}: {class}: {error}");
    let mut failed = lock(&FAILED);
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
/// What a snapshot says of the last session once it ended (`deinstrument`), so that a tool may
/// remove the probes before it asks for the profile: methods instrumented, trivial methods
/// skipped, global ids of the methods whose probes were dropped.
static ENDED: Mutex<Option<(u64, u64, Vec<u32>)>> = Mutex::new(None);

/// Number of methods carrying probes and classes patched in the current session.
pub fn counts() -> (u64, u64) {
    lock(&SESSION).as_ref().map_or((0, 0), |s| {
        (
            s.planner.counters().instrumented as u64,
            s.instrumented.len() as u64,
        )
    })
}

/// The session's root patterns that match no loaded method, each with near names.
pub fn unmatched_roots() -> Vec<ferrofluid_protocol::control::Unmatched> {
    let session = lock(&SESSION);
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
    lock(&SESSION).is_some()
}

/// Narrows the running `alloc` session to the sites allocating `patterns` (`crate::narrow`):
/// the classes with a site whose probe comes or goes are retransformed, before this returns.
/// `None` without a session.
pub fn narrow_alloc(
    jvmti: Jvmti,
    env: &JniEnv<'_>,
    patterns: Vec<ferrofluid_protocol::AllocClassPattern>,
) -> Option<crate::narrow::Narrowing> {
    let _reveal = lock(&REVEAL);
    let mut narrowing = None;
    plan_and_retransform(jvmti, env, "narrowing", |s| {
        let n = crate::narrow::narrow_to(patterns);
        log::info!(
            "alloc: narrowing to allocated classes [{}]: {} classes to retransform, {} sites probed, {} not",
            crate::narrow::selection().join(", "),
            n.changed.len(),
            n.probed,
            n.unprobed
        );
        s.pending.extend(n.changed.iter().cloned());
        narrowing = Some(n);
        true
    });
    narrowing
}

/// Methods the current session instrumented, or the last one if it ended: what a profile says.
pub fn methods_instrumented() -> u64 {
    match lock(&SESSION).as_ref() {
        Some(s) => s.planner.counters().instrumented as u64,
        None => lock(&ENDED).as_ref().map_or(0, |e| e.0),
    }
}

/// Methods the session's planner left uninstrumented as trivial (or the last session's).
pub fn trivial_skipped() -> u64 {
    match lock(&SESSION).as_ref() {
        Some(s) => s.planner.counters().trivial_skipped as u64,
        None => lock(&ENDED).as_ref().map_or(0, |e| e.1),
    }
}

/// Whether the session drops the probes of short, frequent methods (`adaptive`; only where
/// the engine's plan asks for it).
pub fn adaptive() -> bool {
    lock(&SESSION)
        .as_ref()
        .is_some_and(|s| s.planner.config().adaptive)
}

/// The global ids of the methods whose probes were dropped ([`drop_probes`]), in the current
/// session or the last one.
pub fn dropped_ids() -> Vec<u32> {
    match lock(&SESSION).as_ref() {
        Some(s) => s.planner.dropped().map(|pid| s.base + pid).collect(),
        None => lock(&ENDED).as_ref().map_or_else(Vec::new, |e| e.2.clone()),
    }
}

/// Drops the probes of the methods with global ids `ids` (`adaptive`: called often, shorter
/// than their probes); roots keep theirs. Returns the ids dropped.
///
/// In Java, without retransforming: a retransformation sends the compiled code of the class,
/// and of every method that inlined one of its methods, back to the interpreter, which on real
/// programs cost more than the probes saved (docs/decisions/0013-adaptive-probe-removal.md). The method's
/// native flag [`flags::DROPPED`] is set first, so that no entry is recorded from then on, then
/// `Hooks.dropped[id] = 1`, so that entries return in Java. Its exits still reach the agent,
/// which records those of invocations entered before, until [`quiet_probes`] ends them in Java
/// too. Its probes go for good when its class is retransformed for another reason (the planner
/// no longer selects it). Retransforms instead where [`drops_in_java`] is false.
pub fn drop_probes(jvmti: Jvmti, env: &JniEnv<'_>, ids: &[u32]) -> Vec<u32> {
    let dropped: Vec<u32> = {
        let mut session = lock(&SESSION);
        let Some(s) = session.as_mut() else {
            return Vec::new();
        };
        ids.iter()
            .copied()
            .filter(|&id| {
                id.checked_sub(s.base)
                    .and_then(|pid| s.planner.drop_probes(pid))
                    .is_some()
            })
            .collect()
    };
    if !drops_in_java() {
        // Calls already running finish in the old code and still record their exits, so every
        // recorded frame closes.
        retransform_dropped(jvmti, env, &dropped);
        return dropped;
    }
    for &id in &dropped {
        flags::set(id, flags::DROPPED);
    }
    std::sync::atomic::fence(Ordering::SeqCst);
    for &id in &dropped {
        crate::site_flags::drop_probes(env, id, 1);
    }
    dropped
}

/// Whether [`drop_probes`] drops in Java. Not with a hooks class from an older agent (no
/// `dropped`), and not with no root: there every instrumented frame counts in the thread's
/// depth (`hooks::ALL_THREADS`), which a dropped method's entry would no longer raise while the
/// exits of its calls, still reaching the agent until the drop is quiet, would lower it, and
/// the thread, its depth run down to zero, would stop recording its exits.
pub fn drops_in_java() -> bool {
    crate::site_flags::can_drop() && !hooks::ALL_THREADS.load(Ordering::SeqCst)
}

/// Methods dropped by [`drop_probes`] whose exits may now end in Java (`Hooks.dropped[id] = 2`):
/// no invocation entered before the drop can still be running (`collector::quiet_drops`).
pub fn quiet_probes(env: &JniEnv<'_>, ids: &[u32]) {
    for &id in ids {
        crate::site_flags::drop_probes(env, id, 2);
    }
}

/// Retransforms the classes of dropped methods `ids` (global ids, taken out of the planner's
/// selection by [`drop_probes`]), so that their probes go from the bytes, gates included: a
/// method dropped in Java still runs them, a few ns per call, which for a busy class outweighs
/// the deoptimisation a retransformation costs (`adaptive::costly_gates`). Returns how many
/// classes.
pub fn retransform_dropped(jvmti: Jvmti, env: &JniEnv<'_>, ids: &[u32]) -> usize {
    let _reveal = lock(&REVEAL);
    let mut classes = 0;
    plan_and_retransform(jvmti, env, "adaptive", |s| {
        for &id in ids {
            let Some(m) = id.checked_sub(s.base).and_then(|pid| s.planner.method(pid)) else {
                continue;
            };
            classes += usize::from(s.pending.insert((m.loader, m.class.to_owned())));
        }
        true
    });
    classes
}

/// Logs how precise the subgraph was: methods instrumented, called, receiver sites, and the
/// names most often instrumented but never called (what a better analysis would save).
pub fn log_precision() {
    let session = lock(&SESSION);
    let Some(s) = session.as_ref() else {
        return;
    };
    let c = s.planner.counters();
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
        RETRANSFORM_CALLS.load(Ordering::Relaxed),
        RETRANSFORM_CLASSES.load(Ordering::Relaxed),
        RETRANSFORM_NS.load(Ordering::Relaxed) / 1_000_000,
        UNREVEALED.load(Ordering::Relaxed)
    );
}

/// FNV-1a of class bytes, for the log lines that prove a class was restored.
pub fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The ids the planner hands out, shifted by the session's base.
struct Offset<'p> {
    selection: ClassSelection<'p>,
    base: u32,
    site_base: u32,
    /// The engine's methods alone: no thread-start site.
    methods_only: bool,
    /// The allocated classes whose sites get `alloc` probes (`crate::narrow`), and the
    /// allocated type of every site met, probed or not.
    alloc_classes: Arc<[ferrofluid_protocol::AllocClassPattern]>,
    alloc_types: Vec<String>,
}

impl Selection for Offset<'_> {
    /// Roots (whose flags `apply` set before any class is instrumented) are passed as
    /// [`hooks::always_native`]: their probes reach the agent while no thread is inside a root.
    fn method_id(&mut self, method: &MethodSite<'_>) -> Option<u32> {
        let id = self.selection.method_id(method)? + self.base;
        Some(if flags::get(id) & flags::ROOT != 0 {
            hooks::always_native(id)
        } else {
            id
        })
    }

    fn wants_receiver_sites(&self) -> bool {
        self.selection.wants_receiver_sites()
    }

    fn wants_alloc_of(&mut self, type_name: &str) -> bool {
        self.alloc_types.push(type_name.to_owned());
        ferrofluid_protocol::AllocClassPattern::any_matches(&self.alloc_classes, type_name)
    }

    fn alloc_site_id(&mut self, method_id: u32, bci: u32, type_name: &str) -> u32 {
        crate::memory::site_id(hooks::method_id(method_id), bci, type_name)
    }

    fn vm_alloc_site_id(
        &mut self,
        method_id: u32,
        bci: u32,
        kind: ferrofluid_classfile::VmAllocKind,
        callee: Option<(&str, &str, &str)>,
    ) -> Option<u32> {
        // What a call returns is known only at run time: with a selection of allocated classes
        // in force, calls get no probe (a narrowing retransforms their classes for that).
        self.alloc_types
            .push(crate::narrow::CALL_SITE_TYPE.to_owned());
        if !ferrofluid_protocol::AllocClassPattern::any_matches(
            &self.alloc_classes,
            crate::narrow::CALL_SITE_TYPE,
        ) {
            return None;
        }
        let method = hooks::method_id(method_id);
        Some(crate::memory::vm::site_id(method, bci, kind, callee))
    }

    fn receiver_site(&mut self, method_id: u32, call: &CallSite<'_>) -> Option<u32> {
        let site = self
            .selection
            .receiver_site(hooks::method_id(method_id), call)?;
        site.checked_add(self.site_base)
            .filter(|&s| s != hooks::THREAD_START_SITE)
    }

    fn deferred_site(&mut self, method_id: u32, call: &CallSite<'_>) -> Option<u32> {
        let local = hooks::method_id(method_id).checked_sub(self.base)?;
        let site = self.selection.deferred_site(local, call)?;
        // `Hooks.site` indexes `fired` with its int: never a negative one. (Unreachable in
        // practice: it would take 2^31 sites over the agent's life.)
        site.checked_add(self.site_base)
            .filter(|&s| i32::try_from(s).is_ok())
    }

    /// `Thread.start()` passes the thread it starts, so that a thread started inside a root
    /// (and only that one) is profiled as its own tree.
    fn entry_site(&mut self, _method_id: u32, m: &MethodSite<'_>) -> Option<u32> {
        let start = (m.class, m.name, m.descriptor) == ("java/lang/Thread", "start", "()V");
        (start
            && !self.methods_only
            && crate::engine::granted(crate::engine::Capability::TagObjects))
        .then_some(hooks::THREAD_START_SITE)
    }
}

impl Session {
    /// Records newly chosen methods (flags before any probe can call them) and queues their
    /// classes for retransformation, except `loading` (being transformed right now).
    fn apply(&mut self, batch: ferrofluid_subgraph::Batch, loading: Option<&ClassKey>) {
        let mut names = lock(&NAMES);
        let names = names.get_or_insert_with(HashMap::new);
        let methods_only = self.instrumentation.selection == Chosen::Methods;
        let engine = crate::engine::current();
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
            || !crate::reveal::gateway_classes().any(|c| c == key.1)
        {
            return probed;
        }
        let input = probed.as_deref().unwrap_or(bytes);
        let hooks = ferrofluid_classfile::Hooks::default();
        match ferrofluid_classfile::instrument_reveal(input, &hooks, &mut crate::reveal::gateway) {
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
        let mut options = ProbeOptions::new(self.instrumentation.probes);
        options.hooks.alloc_class = crate::ffi::alloc::ALLOC_CLASS.to_owned();
        if matches!(
            self.instrumentation.probes,
            ProbeKind::Blocks | ProbeKind::BlocksPrecise
        ) {
            // The `count` engine keeps its calling contexts in Java; a frame keeps its own.
            options.hooks.class = crate::ffi::count::COUNTS_CLASS.to_owned();
            options.hooks.blocks_context = true;
        }
        let mut selection = Offset {
            selection,
            base: self.base,
            site_base: self.site_base,
            methods_only: self.instrumentation.selection == Chosen::Methods,
            alloc_classes: crate::narrow::current(),
            alloc_types: Vec::new(),
        };
        let instrumented = crate::memory::scope::instrument(bytes, &options, &mut selection);
        if !selection.alloc_types.is_empty() {
            crate::narrow::record(key, selection.alloc_types);
        }
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

/// Loaders seen so far: a weak global reference to each and its id. Weak references outlive the
/// JVMTI environment, so class bytes cached under a loader id stay valid across detach/attach.
/// They are never removed (nor deleted).
static LOADERS: Mutex<Vec<(WeakGlobalRef, LoaderId)>> = Mutex::new(Vec::new());

/// The id of class loader `loader` (assigned on first sight; the bootstrap loader is `None`).
pub fn loader_id(env: &JniEnv<'_>, loader: Option<Object<'_>>) -> Option<LoaderId> {
    let Some(loader) = loader else {
        return Some(BOOTSTRAP);
    };
    let mut loaders = lock(&LOADERS);
    if let Some((_, id)) = loaders.iter().find(|(weak, _)| weak.is(env, Some(loader))) {
        return Some(*id);
    }
    let weak = env.new_weak(loader).ok()?;
    let id = NEXT_LOADER.fetch_add(1, Ordering::Relaxed);
    loaders.push((weak, id));
    Some(id)
}

/// The ClassFileLoadHook: remembers the class's bytes, lets the planner see a new class, and
/// returns instrumented bytes if the session chose methods of it. `None`: keep the bytes.
pub fn class_file_load(
    env: &JniEnv<'_>,
    loader: Option<Object<'_>>,
    name: &str,
    redefining: bool,
    bytes: &[u8],
) -> Option<Vec<u8>> {
    if name.starts_with(ferrofluid_subgraph::AGENT_PACKAGE) {
        return None;
    }
    let key = (loader_id(env, loader)?, name.to_owned());
    lock(&CLASSES)
        .get_or_insert_with(Classes::default)
        .bytes
        .entry(key.clone())
        .or_insert_with(|| bytes.into());
    let out = {
        let mut session = lock(&SESSION);
        match session.as_mut() {
            Some(s) => {
                if s.planner.selection_for(key.0, name).is_none() {
                    // A class being defined is not initialised yet: its first use usually
                    // follows on the thread loading it, so if that thread is inside a root
                    // its initialiser is chosen now, else when a call or static field access
                    // would run it (classes loaded by other threads, or by retransformations at
                    // the session's start, which link classes). One loaded before the session
                    // (retransformed to show its bytes) may not be initialised either. Reported
                    // before the class is planned, which may follow calls and field accesses
                    // that initialise it.
                    let when = if !redefining {
                        Some(if hooks::in_root() {
                            Initialization::Now
                        } else {
                            Initialization::OnCall
                        })
                    } else if s.uninitialized.remove(&key) {
                        Some(Initialization::OnCall)
                    } else {
                        None
                    };
                    match s.planner.add_class(key.0, bytes) {
                        Ok(_) => {
                            if let Some(when) = when.filter(|_| s.initializers) {
                                let batch = s.planner.class_not_initialized(key.0, name, when);
                                s.apply(batch, Some(&key));
                            }
                            let batch = s.planner.plan();
                            s.apply(batch, Some(&key));
                        }
                        Err(e) => log::warn!("planner: {name}: {e}"),
                    }
                }
                let out = s.transform(&key, bytes);
                if out.is_none() {
                    s.instrumented.remove(&key);
                    s.gated.remove(&key);
                }
                out
            }
            None => None,
        }
    };
    if redefining || out.is_some() {
        let mut traced = lock(&TRACED);
        let traced = traced.get_or_insert_with(HashSet::new);
        if out.is_some() {
            traced.insert(key.clone());
        }
        if traced.contains(&key) {
            log::info!(
                "class file load hook {name}: {} bytes in, digest {:016x}; {}",
                bytes.len(),
                digest(bytes),
                match &out {
                    Some(b) => format!("instrumented, {} bytes out", b.len()),
                    None => "original kept".to_owned(),
                }
            );
        }
    }
    out
}

/// ClassPrepare: remembers a weak reference to the class (to retransform it later) and, if it was
/// instrumented, makes its module read the hooks' module.
pub fn class_prepared(jvmti: Jvmti, env: &JniEnv<'_>, class: Class<'_>) {
    let Some(key) = class_key(jvmti, env, class) else {
        return;
    };
    remember(env, &key, class);
    // Instrumented by a session that ended before the class linked: restored now (or given
    // the probes of the current session), before its code can run.
    let restore = lock(&RESTORE_AT_PREPARE).remove(&key);
    // Methods chosen while the class was loaded but not prepared (it could not be
    // retransformed then), or chosen in other classes by a class-load hook (which cannot
    // retransform): instrumented now, before code of the class can run.
    let due = match lock(&SESSION).as_mut() {
        Some(s) => {
            if s.unprepared.remove(&key) || restore {
                s.pending.insert(key.clone());
            }
            !s.pending.is_empty()
        }
        None => {
            if restore {
                let refused = retransform(jvmti, env, std::slice::from_ref(&key));
                let error = refused.failed.first().map(|(_, e)| e.as_str());
                log::info!(
                    "{}: linked after its session ended: {}",
                    key.1,
                    error.map_or("probes removed".to_owned(), |e| format!(
                        "still carries probes: {e}"
                    ))
                );
            }
            false
        }
    };
    if due {
        flush_pending(jvmti, env);
    }
    let instrumented = lock(&SESSION)
        .as_ref()
        .is_some_and(|s| s.instrumented.contains(&key) || s.gated.contains(&key));
    if instrumented {
        crate::jvm::read_hooks_module(jvmti, env, class);
    }
}

/// The planner's name of `class`: its defining loader's id and internal name.
pub fn class_key(jvmti: Jvmti, env: &JniEnv<'_>, class: Class<'_>) -> Option<ClassKey> {
    let (sig, _) = jvmti.class_signature(class).ok()?;
    let name = sig.strip_prefix('L')?.strip_suffix(';')?.to_owned();
    let loader = jvmti.class_loader(env, class).ok()?;
    let id = loader_id(env, loader);
    if let Some(l) = loader {
        env.delete_local_ref(l);
    }
    Some((id?, name))
}

fn remember(env: &JniEnv<'_>, key: &ClassKey, class: Class<'_>) {
    let mut classes = lock(&CLASSES);
    let classes = classes.get_or_insert_with(Classes::default);
    if classes.refs.contains_key(key) {
        return;
    }
    if let Ok(weak) = env.new_weak(class) {
        classes.refs.insert(key.clone(), Arc::new(weak));
    }
}

/// Starts a session: plans over every loaded class and instruments what it chose, with the
/// engine's probes (`instrumentation`). Replaces (and first removes) any previous session.
pub fn instrument_all(
    jvmti: Jvmti,
    env: &JniEnv<'_>,
    config: PlanConfig,
    instrumentation: Instrumentation,
) -> Outcome {
    let mut outcome = deinstrument_all(jvmti, env);
    outcome.errors.clear();
    lock(&FAILED).clear();
    // The names of the ended session's ids: its recording, which named them, is replaced when
    // this one starts collecting (each session's ids are new, so the table would only grow).
    lock(&NAMES).take();
    crate::jvm::read_hooks_module_all(jvmti, env);
    let all = config.roots.is_empty();
    // An engine selecting methods alone times just those and reveals nothing.
    let methods_only = instrumentation.selection == Chosen::Methods;
    let gateways = config.effective_scheme() != ferrofluid_subgraph::Scheme::Total && !methods_only;
    let roots = config.roots.clone();
    let mut planner = Planner::new(config);
    // Methods timed alone need no receiver probes in them.
    // Deferred sites call `Hooks.site`, which a hooks class defined by an older agent may lack.
    planner.set_receiver_sites(
        !methods_only
            && crate::engine::granted(crate::engine::Capability::TagObjects)
            && crate::site_flags::available(),
    );
    // Every loaded class the agent may change, and whether its bytes are known.
    let mut unknown = Vec::new();
    let mut known = Vec::new();
    // Of those, the classes whose static initialiser has not run: it may run inside a root.
    let mut uninitialized = HashSet::new();
    if let Ok(loaded) = jvmti.loaded_classes(env) {
        for &class in loaded.iter() {
            if jvmti.is_modifiable_class(class).unwrap_or(false) {
                if let Some(key) = class_key(jvmti, env, class) {
                    if !key.1.starts_with(ferrofluid_subgraph::AGENT_PACKAGE) {
                        remember(env, &key, class);
                        let status = jvmti.class_status(class).unwrap_or(0) as u32;
                        if status
                            & (sys::JVMTI_CLASS_STATUS_INITIALIZED | sys::JVMTI_CLASS_STATUS_ERROR)
                            == 0
                        {
                            uninitialized.insert(key.clone());
                        }
                        known.push(key);
                    }
                }
            }
            env.delete_local_ref(class.as_object());
        }
    }
    {
        let classes = lock(&CLASSES);
        let bytes = classes.as_ref().map(|c| &c.bytes);
        known.retain(|key| match bytes.and_then(|b| b.get(key)) {
            Some(b) => {
                if let Err(e) = planner.add_class(key.0, b) {
                    log::warn!("planner: {}: {e}", key.1);
                }
                true
            }
            None => {
                unknown.push(key.clone());
                false
            }
        });
    }
    if methods_only {
        // The engine instruments the methods named and nothing else: only their classes'
        // bytes are needed. Retransforming every other class to see its bytes would send all
        // compiled code back to the interpreter for nothing.
        unknown.retain(|key| roots.iter().any(|r| r.class().matches(&key.1)));
    }
    let base = NEXT_BASE.load(Ordering::SeqCst);
    let mut session = Session {
        planner,
        base,
        site_base: NEXT_SITE_BASE.load(Ordering::SeqCst),
        roots,
        instrumented: BTreeSet::new(),
        pending: BTreeSet::new(),
        unprepared: BTreeSet::new(),
        initializers: gateways,
        uninitialized: HashSet::new(),
        failures: Vec::new(),
        gateways,
        gated: BTreeSet::new(),
        instrumentation,
    };
    // Known classes are registered already; the others when their bytes show up. Before
    // planning: under `eager` the plan follows calls and field accesses, which may initialise
    // them.
    let unknown_set: HashSet<&ClassKey> = unknown.iter().collect();
    if !session.initializers {
        uninitialized.clear();
    }
    for key in uninitialized {
        if unknown_set.contains(&key) {
            session.uninitialized.insert(key);
        } else {
            let batch =
                session
                    .planner
                    .class_not_initialized(key.0, &key.1, Initialization::OnCall);
            session.apply(batch, None);
        }
    }
    let batch = session.planner.plan();
    session.apply(batch, None);
    if session.planner.scheme() == ferrofluid_subgraph::Scheme::Lazy && gateways {
        // Methods the JVM calls itself from whatever bytecode needed them (class loading,
        // `invokedynamic` and constant linkage): followed like call sites, so that this work
        // inside a root shows where it happens, instead of as that method's self time. Not under
        // `eager`, whose closure would take all the class-loading and linkage code up front.
        for upcall in crate::reveal::upcalls() {
            let batch = session.planner.follow_upcall(&upcall);
            session.apply(batch, None);
        }
        // Their bytes known: retransform them for their probes (otherwise `unknown` does).
        for class in crate::reveal::gateway_classes() {
            let key = (BOOTSTRAP, class.to_owned());
            if known.contains(&key) {
                session.pending.insert(key);
            }
        }
        crate::jni_intercept::install(jvmti);
    }
    if all {
        // Every thread records: no probe may return in Java (`Hooks.active` stays 1 until the
        // session's end resets it).
        crate::site_flags::hold_active(env);
    }
    hooks::ALL_THREADS.store(all, Ordering::SeqCst);
    let revealing =
        session.planner.scheme() != ferrofluid_subgraph::Scheme::Total && !methods_only && !all;
    *lock(&SESSION) = Some(session);
    UNREVEALED.store(0, Ordering::Relaxed);
    let asynchronous = revealing && ASYNC.load(Ordering::SeqCst);
    if asynchronous {
        // Requests are queued from now on, but served only once the planner has seen every
        // loaded class (below): a call into a class whose bytes it has not seen yet would
        // reveal nothing.
        accept_requests();
    }
    // Classes whose bytes the agent never saw (loaded before it): retransforming them shows their
    // bytes to the planner, which instruments them in the same hook if it chooses them. Those not
    // linked show them at their ClassPrepare; those in error state never (no plan chose them, so
    // they are only logged).
    let refused = retransform(jvmti, env, &unknown);
    set_aside(jvmti, env, &refused.unlinked);
    for key in &refused.in_error {
        log::info!("{}: {IN_ERROR}", key.1);
    }
    log::info!(
        "of {} loaded classes whose bytes were unknown, {} not linked wait for their ClassPrepare \
         and {} in error state are left alone",
        unknown.len(),
        refused.unlinked.len(),
        refused.in_error.len()
    );
    for (key, e) in refused.failed {
        record_failed(&key.1, ClassPhase::Instrument, e, false);
    }
    flush_pending(jvmti, env);
    let mut errors = Vec::new();
    if asynchronous {
        start_reveal_thread(jvmti, env);
    }
    let mut session = lock(&SESSION);
    if let Some(s) = session.as_mut() {
        errors.append(&mut s.failures);
        outcome.classes = s.instrumented.len();
        outcome.methods = s.planner.counters().instrumented;
        let unmatched = s.planner.unmatched_roots();
        if !unmatched.is_empty() {
            let list: Vec<String> = unmatched.iter().map(|p| p.to_string()).collect();
            log::info!("roots not loaded yet: {}", list.join(", "));
        }
    }
    outcome.errors = errors;
    log::info!(
        "instrumented {} methods in {} classes ({} loaded classes scanned, {} errors)",
        outcome.methods,
        outcome.classes,
        known.len() + unknown.len(),
        outcome.errors.len()
    );
    outcome
}

/// Retransforms the classes queued by the session until nothing new is queued. A queued class
/// that is not prepared yet waits for its ClassPrepare (`Session::unprepared`); one that cannot
/// be retransformed is listed ([`FAILED`]) and the others proceed.
fn flush_pending(jvmti: Jvmti, env: &JniEnv<'_>) {
    for _ in 0..64 {
        let pending: Vec<ClassKey> = match lock(&SESSION).as_mut() {
            Some(s) => {
                // Under the session lock, so that `class_prepared` (which remembers the class
                // first, then looks here) cannot miss a class set aside now.
                let classes = lock(&CLASSES);
                let (ready, unprepared): (Vec<ClassKey>, Vec<ClassKey>) =
                    std::mem::take(&mut s.pending)
                        .into_iter()
                        .partition(|k| classes.as_ref().is_some_and(|c| c.refs.contains_key(k)));
                s.unprepared.extend(unprepared);
                ready
            }
            None => return,
        };
        if pending.is_empty() {
            break;
        }
        let refused = retransform(jvmti, env, &pending);
        set_aside(jvmti, env, &refused.unlinked);
        for key in refused.in_error {
            record_failed(&key.1, ClassPhase::Instrument, IN_ERROR.to_owned(), true);
        }
        for (key, e) in refused.failed {
            record_failed(&key.1, ClassPhase::Instrument, e, false);
        }
    }
}

/// Classes [`retransform`] found not linked wait for their ClassPrepare
/// (`Session::unprepared`). Their status is read again under the session lock, which
/// `class_prepared` takes after the JVM marks a class linked: one linked since it was found
/// unlinked (whose ClassPrepare may have come and gone) is queued again instead.
fn set_aside(jvmti: Jvmti, env: &JniEnv<'_>, keys: &[ClassKey]) {
    if keys.is_empty() {
        return;
    }
    let mut session = lock(&SESSION);
    let Some(s) = session.as_mut() else {
        return;
    };
    for key in keys {
        if status_of(jvmti, env, key).is_some_and(|st| st & sys::JVMTI_CLASS_STATUS_PREPARED != 0) {
            s.pending.insert(key.clone());
        } else {
            s.unprepared.insert(key.clone());
        }
    }
}

/// The JVMTI class status of `key`, if it is still loaded.
fn status_of(jvmti: Jvmti, env: &JniEnv<'_>, key: &ClassKey) -> Option<u32> {
    let weak = Arc::clone(lock(&CLASSES).as_ref()?.refs.get(key)?);
    let class = weak.upgrade(env)?;
    let status = jvmti.class_status(class).ok();
    env.delete_local_ref(class.as_object());
    status.map(|st| st as u32)
}

/// Ends the session: every patched class is retransformed with no hook answer, which restores the
/// bytes it had before the agent touched it.
pub fn deinstrument_all(jvmti: Jvmti, env: &JniEnv<'_>) -> Outcome {
    stop_reveal_thread();
    let Some(session) = lock(&SESSION).take() else {
        return Outcome::default();
    };
    *lock(&ENDED) = Some((
        session.planner.counters().instrumented as u64,
        session.planner.counters().trivial_skipped as u64,
        session
            .planner
            .dropped()
            .map(|pid| session.base + pid)
            .collect(),
    ));
    hooks::GENERATION.fetch_add(1, Ordering::SeqCst);
    crate::site_flags::reset(env);
    crate::jni_intercept::uninstall(jvmti);
    let count = session.planner.counters().instrumented as u32;
    for id in session.base..session.base + count {
        flags::clear(id);
    }
    NEXT_BASE.store(session.base + count, Ordering::SeqCst);
    let sites = session.planner.counters().receiver_sites as u32;
    NEXT_SITE_BASE.store(session.site_base + sites, Ordering::SeqCst);
    let classes: Vec<ClassKey> = session
        .instrumented
        .union(&session.gated)
        .cloned()
        .collect();
    let refused = retransform(jvmti, env, &classes);
    for key in &refused.in_error {
        record_failed(&key.1, ClassPhase::Restore, IN_ERROR.to_owned(), true);
    }
    let mut failed = refused.in_error.len() + refused.failed.len();
    for (key, e) in refused.failed {
        record_failed(&key.1, ClassPhase::Restore, e, false);
    }
    if !refused.unlinked.is_empty() {
        lock(&RESTORE_AT_PREPARE).extend(refused.unlinked.iter().cloned());
        // One linked since it was found unlinked may have had its ClassPrepare already.
        let linked: Vec<ClassKey> = refused
            .unlinked
            .iter()
            .filter(|k| {
                status_of(jvmti, env, k)
                    .is_some_and(|st| st & sys::JVMTI_CLASS_STATUS_PREPARED != 0)
                    && lock(&RESTORE_AT_PREPARE).remove(*k)
            })
            .cloned()
            .collect();
        let again = retransform(jvmti, env, &linked);
        for (key, e) in again.failed {
            record_failed(&key.1, ClassPhase::Restore, e, false);
            failed += 1;
        }
        for key in refused.unlinked.iter().filter(|k| !linked.contains(k)) {
            record_failed(&key.1, ClassPhase::Restore, NOT_LINKED.to_owned(), true);
            failed += 1;
        }
    }
    log::info!(
        "deinstrumented {} classes ({failed} not restored)",
        classes.len()
    );
    Outcome {
        classes: session.instrumented.len(),
        methods: count as usize,
        errors: Vec::new(),
    }
}

/// What [`retransform`] left as it was.
#[derive(Debug, Default)]
pub struct Refused {
    /// Classes not linked: RetransformClasses would have the JVM link them first, which fails
    /// again for a class whose linking failed (`JVMTI_ERROR_INVALID_CLASS`, the whole call with
    /// it) and links any other before the program does. None of their code can run before they
    /// link, and their ClassPrepare says when they do.
    pub unlinked: Vec<ClassKey>,
    /// Classes in error state (a static initialiser that failed), which RetransformClasses
    /// refuses (`JVMTI_ERROR_INVALID_CLASS`, the whole call with them).
    pub in_error: Vec<ClassKey>,
    /// Classes whose retransformation failed, with the error.
    pub failed: Vec<(ClassKey, String)>,
}

/// Retransforms `keys` in batches, except the classes the JVM cannot take ([`Refused`]); a
/// failing batch is retried without the classes that fail ([`isolate_failures`]), so one bad
/// class names itself and holds back none of the others.
pub fn retransform(jvmti: Jvmti, env: &JniEnv<'_>, keys: &[ClassKey]) -> Refused {
    let mut refused = Refused::default();
    for chunk in keys.chunks(RETRANSFORM_BATCH) {
        let weak: Vec<(ClassKey, Arc<WeakGlobalClass>)> = {
            let classes = lock(&CLASSES);
            let refs = classes.as_ref().map(|c| &c.refs);
            chunk
                .iter()
                .filter_map(|k| match refs.and_then(|r| r.get(k)) {
                    Some(w) => Some((k.clone(), Arc::clone(w))),
                    None => {
                        // Never prepared (a class instrumented as it loaded, whose linking
                        // has not happened or failed): no reference to it yet.
                        refused.unlinked.push(k.clone());
                        None
                    }
                })
                .collect()
        };
        let mut locals = Vec::new();
        for (key, w) in weak {
            if let Some(class) = w.upgrade(env) {
                // Unknown status: tried, and isolated if it fails.
                let status = jvmti
                    .class_status(class)
                    .map_or(sys::JVMTI_CLASS_STATUS_PREPARED, |st| st as u32);
                if status & sys::JVMTI_CLASS_STATUS_ERROR != 0 {
                    refused.in_error.push(key);
                } else if status & sys::JVMTI_CLASS_STATUS_PREPARED == 0 {
                    refused.unlinked.push(key);
                } else {
                    locals.push((key, class));
                    continue;
                }
                env.delete_local_ref(class.as_object());
            }
        }
        if locals.is_empty() {
            continue;
        }
        let mut attempt = |part: &[(ClassKey, Class<'_>)]| {
            let classes: Vec<Class<'_>> = part.iter().map(|(_, c)| *c).collect();
            let started = std::time::Instant::now();
            let result = jvmti.retransform_classes(&classes);
            let took = started.elapsed();
            log::info!(
                "retransformed {} classes in {:.1} ms",
                classes.len(),
                took.as_secs_f64() * 1e3
            );
            RETRANSFORM_NS.fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
            RETRANSFORM_CALLS.fetch_add(1, Ordering::Relaxed);
            RETRANSFORM_CLASSES.fetch_add(classes.len() as u64, Ordering::Relaxed);
            result.map_err(|e| e.to_string())
        };
        if let Err(e) = attempt(&locals) {
            log::warn!(
                "retransforming {} classes: {e}; retrying without the failing ones",
                locals.len()
            );
            for (i, e) in isolate_failures(&locals, e, &mut attempt) {
                refused.failed.push((locals[i].0.clone(), e));
            }
        }
        for (_, class) in locals {
            env.delete_local_ref(class.as_object());
        }
    }
    refused
}

/// The items of `items`, whose batch failed with `error`, that fail on their own, with their
/// errors, in order; every other item ends up in a batch that succeeded. Found by halving: both
/// halves are tried, and a failing half is halved again, so that one bad class among n costs
/// about 2·log2(n) retransformations instead of n.
pub(crate) fn isolate_failures<T, E>(
    items: &[T],
    error: E,
    mut attempt: impl FnMut(&[T]) -> Result<(), E>,
) -> Vec<(usize, E)> {
    let mut failing = Vec::new();
    let mut parts = vec![(0, items.len(), error)];
    while let Some((start, end, error)) = parts.pop() {
        if end - start <= 1 {
            if end > start {
                failing.push((start, error));
            }
            continue;
        }
        let middle = start + (end - start) / 2;
        for (a, b) in [(start, middle), (middle, end)] {
            if let Err(e) = attempt(&items[a..b]) {
                parts.push((a, b, e));
            }
        }
    }
    failing.sort_by_key(|(i, _)| *i);
    failing
}

/// Reveals method `name` `descriptor` of `class`, about to be called through reflection, a
/// method handle or native code, and retransforms what the planner chose, before the call
/// proceeds (on the calling thread, like [`first_invocation`]).
pub fn reveal(jvmti: Jvmti, env: &JniEnv<'_>, class: Class<'_>, name: &str, descriptor: &str) {
    let Some(key) = class_key(jvmti, env, class) else {
        return;
    };
    let _reveal = lock(&REVEAL);
    plan_and_retransform(jvmti, env, "revelation", |s| {
        match s.planner.reveal(key.0, &key.1, name, descriptor) {
            Ok(batch) => {
                if !batch.is_empty() {
                    log::info!(
                        "revealed {}.{name}{descriptor}: {} methods",
                        key.1,
                        batch.method_count()
                    );
                }
                s.apply(batch, None);
            }
            Err(e) => log::debug!("reveal: {e}"),
        }
        true
    });
}

/// Reflection may initialise a class named `class` (internal name) of some loader now
/// (`Class.forName`): the initialisers of those waiting for it are instrumented before it
/// proceeds.
pub fn initializing_by_name(jvmti: Jvmti, env: &JniEnv<'_>, class: &str) {
    let _reveal = lock(&REVEAL);
    plan_and_retransform(jvmti, env, "initialisation by name", |s| {
        let batch = s.planner.initializing_by_name(class);
        if !batch.is_empty() {
            log::info!(
                "initialising {class} by name: {} methods",
                batch.method_count()
            );
        }
        s.apply(batch, None);
        true
    });
}

/// Runs `plan` on the session, then retransforms the classes it queued, on the calling thread,
/// before the call that needed them proceeds. Callers hold [`REVEAL`]. `plan` returns false
/// when the request is not the current session's; so does this function, also without a session.
fn plan_and_retransform(
    jvmti: Jvmti,
    env: &JniEnv<'_>,
    what: &str,
    plan: impl FnOnce(&mut Session) -> bool,
) -> bool {
    let queued = {
        let mut session = lock(&SESSION);
        let Some(s) = session.as_mut() else {
            return false;
        };
        if !plan(s) {
            return false;
        }
        !s.pending.is_empty()
    };
    if queued {
        log::debug!("{what}: retransforming");
        flush_pending(jvmti, env);
    }
    true
}

/// Serialises lazy revelation: a thread that reaches a method's first invocation while another
/// thread is still instrumenting its callees waits, so that no thread proceeds into uninstrumented
/// callees. Held across RetransformClasses; the ClassFileLoadHook never takes it.
static REVEAL: Mutex<()> = Mutex::new(());

/// The first invocation of global method `id` (lazy revelation), on the invoking thread.
pub fn first_invocation(env: Option<&JniEnv<'_>>, id: u32) {
    let Some(jvmti) = crate::jvm::jvmti() else {
        return;
    };
    if ASYNC.load(Ordering::Relaxed) {
        if flags::get(id) & flags::INVOKED != 0 {
            return;
        }
        flags::set(id, flags::INVOKED | flags::PENDING);
        if enqueue(Queued::Invocation(id)) {
            return;
        }
        flags::clear_bits(id, flags::INVOKED | flags::PENDING);
    }
    let _reveal = lock(&REVEAL);
    if flags::get(id) & flags::INVOKED != 0 {
        return;
    }
    let Some(env) = env else {
        return;
    };
    let planned = plan_and_retransform(jvmti, env, "lazy revelation", |s| {
        if id < s.base {
            return false;
        }
        match s.planner.first_invocation(id - s.base) {
            Ok(batch) => s.apply(batch, None),
            Err(e) => log::warn!("first invocation of {id}: {e}"),
        }
        true
    });
    if !planned {
        return;
    }
    flags::set(id, flags::INVOKED);
}

/// Site `site` was reached with no receiver (a deferred site) on this thread, inside a root's
/// extent: its calls' targets are instrumented before they proceed, then the site is flagged
/// (`flags::SITES`, and `Hooks.fired` so that `Hooks.site` returns in Java from then on). False
/// when the site is not the current session's (or the planner failed): it stays unflagged.
pub fn site_reached(jvmti: Jvmti, env: &JniEnv<'_>, site: u32) -> bool {
    if ASYNC.load(Ordering::Relaxed) && flags::SITES.get(site) & flags::FIRED == 0 {
        // Flagged first, so that other threads pass it in Java while the reveal thread works.
        flags::SITES.set(site, flags::FIRED);
        crate::site_flags::mark(env, site);
        if enqueue(Queued::Site(site)) {
            return true;
        }
        flags::SITES.clear(site);
    }
    let _reveal = lock(&REVEAL);
    if flags::SITES.get(site) & flags::FIRED != 0 {
        // Another thread revealed it while this one waited for the lock.
        return true;
    }
    let mut revealed = false;
    plan_and_retransform(jvmti, env, "deferred site revelation", |s| {
        let Some(local) = site.checked_sub(s.site_base) else {
            return false;
        };
        match s.planner.site_reached(local) {
            Ok(batch) => {
                s.apply(batch, None);
                revealed = true;
            }
            Err(e) => log::warn!("deferred site {site}: {e}"),
        }
        true
    });
    if revealed {
        // Only now, with every class retransformed: a thread that sees the flag skips the hook.
        flags::SITES.set(site, flags::FIRED);
        crate::site_flags::mark(env, site);
    }
    revealed
}

/// The name and descriptor of the method receiver site `site` calls, if it is one of the current
/// session's receiver sites.
pub fn receiver_site_call(site: u32) -> Option<(String, String)> {
    let session = lock(&SESSION);
    let s = session.as_ref()?;
    let (name, descriptor) = s
        .planner
        .receiver_site_call(site.checked_sub(s.site_base)?)?;
    Some((name.to_owned(), descriptor.to_owned()))
}

/// Whether `site` is one of the current session's receiver sites that invoke a method handle.
pub fn is_handle_site(site: u32) -> bool {
    let session = lock(&SESSION);
    session.as_ref().is_some_and(|s| {
        site.checked_sub(s.site_base)
            .is_some_and(|local| s.planner.is_handle_site(local))
    })
}

/// A receiver of a hidden class of loader `loader` reached receiver site `site` on this thread,
/// inside a root's extent, and the method it runs there makes `calls` (see `crate::receiver`):
/// their targets are instrumented before the call proceeds.
pub fn hidden_receiver_seen(
    jvmti: Jvmti,
    env: &JniEnv<'_>,
    site: u32,
    loader: LoaderId,
    calls: &[ferrofluid_subgraph::model::CallSite<'_>],
) {
    let _reveal = lock(&REVEAL);
    plan_and_retransform(jvmti, env, "hidden receiver revelation", |s| {
        let Some(local) = site.checked_sub(s.site_base) else {
            return false;
        };
        match s.planner.hidden_receiver_seen(local, loader, calls) {
            Ok(batch) => s.apply(batch, None),
            Err(e) => log::warn!("receiver site {site}: {e}"),
        }
        true
    });
}

/// A receiver of class `key` reached receiver site `site` on this thread, inside a root's extent:
/// the method it runs there is instrumented before the call proceeds (see `crate::receiver`).
pub fn receiver_seen(jvmti: Jvmti, env: &JniEnv<'_>, site: u32, key: &ClassKey) {
    if ASYNC.load(Ordering::Relaxed) && enqueue(Queued::Receiver(site, key.clone())) {
        return;
    }
    let _reveal = lock(&REVEAL);
    plan_and_retransform(jvmti, env, "receiver revelation", |s| {
        let Some(local) = site.checked_sub(s.site_base) else {
            return false;
        };
        match s.planner.receiver_seen(local, key.0, &key.1) {
            Ok(batch) => s.apply(batch, None),
            Err(e) => log::warn!("receiver site {site}: {e}"),
        }
        true
    });
}

/// `reveal=async` for the sessions started from now on ([`set_reveal`]).
static ASYNC: AtomicBool = AtomicBool::new(false);

/// Under `reveal=async`, calls that ran before what they call was instrumented: invocations of a
/// method whose first invocation waits for the reveal thread, and the deferred sites and
/// receivers queued (once each, when queued). Their callees' time is in their self time and
/// their callees' calls are not counted; a lower bound of what the profile misses (a call into
/// an uninstrumented method of a revealed class cannot be told apart).
pub static UNREVEALED: AtomicU64 = AtomicU64::new(0);

/// How long the reveal thread waits for more requests before it plans and retransforms what
/// is queued: threads reaching new code tend to come together (many requests on one path), and
/// each RetransformClasses call is a safepoint that sends the dependent compiled code back to
/// the interpreter, so a few calls for many classes cost far less than one per class.
const REVEAL_WINDOW: Duration = Duration::from_millis(5);

/// Whether the next sessions reveal lazily on the agent's own thread (`reveal=async`) rather
/// than on the thread that reached new code.
pub fn set_reveal(asynchronous: bool) {
    ASYNC.store(asynchronous, Ordering::SeqCst);
}

/// A revelation the reveal thread carries out.
enum Queued {
    /// The first invocation of this global method id.
    Invocation(u32),
    /// A deferred site (global id) reached.
    Site(u32),
    /// A receiver of a class reached a receiver site (global id).
    Receiver(u32, ClassKey),
}

struct RevealQueue {
    items: Vec<Queued>,
    /// A reveal thread serves the queue.
    running: bool,
    /// The reveal thread is to end.
    stop: bool,
}

static QUEUE: Mutex<RevealQueue> = Mutex::new(RevealQueue {
    items: Vec::new(),
    running: false,
    stop: false,
});
static QUEUED: Condvar = Condvar::new();
static REVEAL_THREAD: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);

/// Hands `item` to the reveal thread; false if none runs (the caller reveals it itself).
fn enqueue(item: Queued) -> bool {
    let mut q = lock(&QUEUE);
    if !q.running || q.stop {
        return false;
    }
    q.items.push(item);
    if hooks::COLLECTING.load(Ordering::Relaxed) {
        UNREVEALED.fetch_add(1, Ordering::Relaxed);
    }
    QUEUED.notify_one();
    true
}

/// Lets threads queue requests for a reveal thread about to start.
fn accept_requests() {
    let mut q = lock(&QUEUE);
    q.items.clear();
    q.stop = false;
    q.running = true;
}

/// Starts the reveal thread; without one, what was queued so far is revealed here and the
/// threads reveal for themselves from then on.
fn start_reveal_thread(jvmti: Jvmti, env: &JniEnv<'_>) {
    let spawned = match crate::jvm::java_vm() {
        Some(vm) => std::thread::Builder::new()
            .name("ferrofluid-reveal".into())
            .spawn(move || reveal_thread(vm, jvmti))
            .map_err(|e| e.to_string()),
        None => Err("the agent is dormant".into()),
    };
    match spawned {
        Ok(handle) => *lock(&REVEAL_THREAD) = Some(handle),
        Err(e) => {
            log::warn!("no reveal thread ({e}): revelation runs on the threads that need it");
            let items = {
                let mut q = lock(&QUEUE);
                q.running = false;
                std::mem::take(&mut q.items)
            };
            if !items.is_empty() {
                reveal_queued(jvmti, env, items);
            }
        }
    }
}

/// Ends the reveal thread, after the retransformation it may be doing. What it had not
/// revealed yet is dropped with the session.
fn stop_reveal_thread() {
    {
        let mut q = lock(&QUEUE);
        q.stop = true;
        q.running = false;
        QUEUED.notify_all();
    }
    let handle = lock(&REVEAL_THREAD).take();
    if let Some(handle) = handle {
        let _ = handle.join();
    }
    lock(&QUEUE).items.clear();
}

/// The reveal thread: waits for requests, then stays attached to the JVM while they keep
/// coming (a window passing with nothing queued ends a burst).
fn reveal_thread(vm: JavaVm, jvmti: Jvmti) {
    loop {
        {
            let mut q = lock(&QUEUE);
            while q.items.is_empty() && !q.stop {
                q = QUEUED.wait(q).unwrap_or_else(|p| p.into_inner());
            }
            if q.stop {
                return;
            }
        }
        let attached = vm.with_attached_thread("ferrofluid-reveal", |env| {
            ferrofluid_jvmti::ffi_guard("reveal thread", (), || loop {
                std::thread::sleep(REVEAL_WINDOW);
                let items = {
                    let mut q = lock(&QUEUE);
                    if q.stop {
                        return;
                    }
                    std::mem::take(&mut q.items)
                };
                if items.is_empty() {
                    return;
                }
                reveal_queued(jvmti, env, items);
            })
        });
        if let Err(e) = attached {
            // What stays queued is dropped with the session: those methods keep their probes
            // but their callees are not revealed.
            log::warn!("reveal thread: attaching to the JVM: {e}; revelation runs on the threads that need it");
            lock(&QUEUE).running = false;
            return;
        }
    }
}

/// Plans every queued revelation, then retransforms the classes they chose together.
fn reveal_queued(jvmti: Jvmti, env: &JniEnv<'_>, items: Vec<Queued>) {
    let _reveal = lock(&REVEAL);
    let started = std::time::Instant::now();
    let calls = RETRANSFORM_CALLS.load(Ordering::Relaxed);
    let classes = RETRANSFORM_CLASSES.load(Ordering::Relaxed);
    let mut chosen = 0;
    let kinds = items.iter().fold([0; 3], |mut k, i| {
        k[match i {
            Queued::Invocation(_) => 0,
            Queued::Site(_) => 1,
            Queued::Receiver(..) => 2,
        }] += 1;
        k
    });
    plan_and_retransform(jvmti, env, "asynchronous revelation", |s| {
        for item in &items {
            let batch = match item {
                Queued::Invocation(id) => id
                    .checked_sub(s.base)
                    .map(|pid| s.planner.first_invocation(pid)),
                Queued::Site(site) => site
                    .checked_sub(s.site_base)
                    .map(|local| s.planner.site_reached(local)),
                Queued::Receiver(site, key) => site
                    .checked_sub(s.site_base)
                    .map(|local| s.planner.receiver_seen(local, key.0, &key.1)),
            };
            match batch {
                Some(Ok(batch)) => {
                    chosen += batch.method_count();
                    s.apply(batch, None)
                }
                Some(Err(e)) => log::warn!("asynchronous revelation: {e}"),
                None => {}
            }
        }
        true
    });
    for item in &items {
        if let Queued::Invocation(id) = item {
            flags::clear_bits(*id, flags::PENDING);
        }
    }
    let classes = RETRANSFORM_CLASSES.load(Ordering::Relaxed) - classes;
    if chosen > 0 || classes > 0 {
        log::info!(
            "asynchronous revelation: {} first invocations, {} deferred sites, {} receivers: {chosen} methods, {classes} classes in {} RetransformClasses calls, {:.1} ms",
            kinds[0],
            kinds[1],
            kinds[2],
            RETRANSFORM_CALLS.load(Ordering::Relaxed) - calls,
            started.elapsed().as_secs_f64() * 1e3
        );
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
    use super::isolate_failures;

    /// `isolate_failures` over 0..n where the items of `bad` fail whatever batch they are in:
    /// the failing items with their errors, and how many attempts it took.
    fn isolate(n: usize, bad: &[usize]) -> (Vec<(usize, String)>, usize, Vec<usize>) {
        let items: Vec<usize> = (0..n).collect();
        let mut attempts = 0;
        let mut done = Vec::new();
        let failing = isolate_failures(&items, "whole batch".to_owned(), |part| {
            attempts += 1;
            match part.iter().find(|i| bad.contains(i)) {
                Some(i) => Err(format!("class {i}")),
                None => {
                    done.extend_from_slice(part);
                    Ok(())
                }
            }
        });
        done.sort_unstable();
        (failing, attempts, done)
    }

    #[test]
    fn one_bad_class_in_a_batch_costs_a_few_halvings_and_holds_back_no_other() {
        let (failing, attempts, done) = isolate(100, &[37]);
        assert_eq!(failing, [(37, "class 37".to_owned())]);
        // 2 per halving, 6 of them down to class 37 (100, 50, 25, 13, 6, 3, then 1 class);
        // retrying class by class would take 100.
        assert_eq!(attempts, 12);
        let others: Vec<usize> = (0..100).filter(|&i| i != 37).collect();
        assert_eq!(done, others);
    }

    #[test]
    fn every_bad_class_is_named_in_order_and_the_rest_proceed() {
        let (failing, _, done) = isolate(10, &[9, 0, 4]);
        let names: Vec<usize> = failing.iter().map(|(i, _)| *i).collect();
        assert_eq!(names, [0, 4, 9]);
        assert_eq!(done, [1, 2, 3, 5, 6, 7, 8]);
        // A batch of one failing class gets the error of the batch itself.
        let (failing, attempts, _) = isolate(1, &[0]);
        assert_eq!(
            (failing, attempts),
            (vec![(0, "whole batch".to_owned())], 0)
        );
        // A batch that failed while its halves succeed (a transient failure): none is named.
        let (failing, attempts, done) = isolate(6, &[]);
        assert_eq!((failing.len(), attempts, done.len()), (0, 2, 6));
    }
}
