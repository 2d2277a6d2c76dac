//! Starting a session (planning over every loaded class, instrumenting what it chose) and
//! ending it (restoring every patched class).

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use ferrofluid_jvmti::{sys, JniEnv, Jvmti};
use ferrofluid_profile::ClassPhase;
use ferrofluid_subgraph::{Initialization, PlanConfig, Planner, BOOTSTRAP};

use crate::engine::{Capability, EngineSession, Instrumentation, Selection as Chosen};
use crate::probe::flags;
use crate::probe::thread::SWITCHES;
use crate::runtime::jvm;

use super::classes::{class_key, remember, status_of, CACHE};
use super::queue::{accept_requests, start_reveal_thread, stop_reveal_thread};
use super::retransform::{flush_pending, retransform, set_aside};
use super::{
    lock, next_ids, record_failed, ClassKey, Outcome, Session, IN_ERROR, METHOD_IDS_WRAP,
    NOT_LINKED, SESSIONS, SITE_IDS_WRAP,
};

/// Starts a session: plans over every loaded class and instruments what it chose, with the
/// engine's probes (`instrumentation`). Replaces (and first removes) any previous session.
pub fn instrument_all(
    jvmti: Jvmti,
    env: &JniEnv<'_>,
    config: PlanConfig,
    instrumentation: Instrumentation,
    engine: Arc<dyn EngineSession>,
) -> Outcome {
    let mut outcome = deinstrument_all(jvmti, env);
    outcome.errors.clear();
    lock(&SESSIONS.failed).clear();
    // The names of the ended session's ids: its recording, which named them, is replaced when
    // this one starts collecting (each session's ids are new, so the table would only grow).
    lock(&SESSIONS.names).take();
    jvm::read_hooks_module_all(jvmti, env);
    let all = config.roots.is_empty();
    // An engine selecting methods alone times just those and reveals nothing.
    let methods_only = instrumentation.selection == Chosen::Methods;
    let gateways = config.effective_scheme() != ferrofluid_subgraph::Scheme::Total && !methods_only;
    let roots = config.roots.clone();
    let filter = config.filter.clone();
    let mut planner = Planner::new(config);
    // Methods timed alone need no receiver probes in them.
    // Deferred sites call `Hooks.site`, which a hooks class defined by an older agent may lack.
    planner.set_receiver_sites(
        !methods_only
            && jvm::granted().is_some_and(|g| g.has(Capability::TagObjects))
            && crate::probe::site_flags::available(),
    );
    let mut loaded = loaded_classes(jvmti, env, &mut planner);
    if methods_only {
        // The engine instruments the methods named and nothing else: only their classes'
        // bytes are needed. Retransforming every other class to see its bytes would send all
        // compiled code back to the interpreter for nothing.
        loaded
            .unknown
            .retain(|key| roots.iter().any(|r| r.class().matches(&key.1)));
    } else if !filter.include.is_empty() {
        // Nor are the bytes of classes the filter keeps out (a session planned from samples
        // includes a few dozen): only the gateways' classes besides.
        let gateways: Vec<&str> = crate::runtime::reveal::gateway_classes().collect();
        loaded
            .unknown
            .retain(|key| filter.allows(&key.1) || gateways.contains(&key.1.as_str()));
    }
    let mut session = Session {
        planner,
        base: SESSIONS.next_base.load(Ordering::SeqCst),
        site_base: SESSIONS.next_site_base.load(Ordering::SeqCst),
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
        engine,
    };
    plan(&mut session, &mut loaded);
    if session.planner.scheme() == ferrofluid_subgraph::Scheme::Lazy && gateways {
        follow_the_jvm(&mut session, &loaded.known);
        crate::ffi::jni_calls::install::<crate::runtime::natives::Sites>(jvmti);
    }
    if all {
        // Every thread records: no probe may return in Java (`Hooks.active` stays 1 until the
        // session's end resets it).
        crate::probe::site_flags::hold_active(env);
    }
    SWITCHES.all_threads.store(all, Ordering::SeqCst);
    let revealing =
        session.planner.scheme() != ferrofluid_subgraph::Scheme::Total && !methods_only && !all;
    *lock(&SESSIONS.current) = Some(session);
    SWITCHES.unrevealed.store(0, Ordering::Relaxed);
    let asynchronous = revealing && SESSIONS.asynchronous.load(Ordering::SeqCst);
    if asynchronous {
        // Requests are queued from now on, but served only once the planner has seen every
        // loaded class (below): a call into a class whose bytes it has not seen yet would
        // reveal nothing.
        accept_requests();
    }
    show_unknown(jvmti, env, &loaded.unknown);
    flush_pending(jvmti, env);
    if asynchronous {
        start_reveal_thread(jvmti, env);
    }
    started(&mut outcome, loaded.known.len() + loaded.unknown.len());
    outcome
}

/// The loaded classes a session may change.
struct Loaded {
    /// Those whose bytes the cache has: registered with the planner already.
    known: Vec<ClassKey>,
    /// Those whose bytes the agent never saw (loaded before it).
    unknown: Vec<ClassKey>,
    /// Of both, the classes whose static initialiser has not run: it may run inside a root.
    uninitialized: HashSet<ClassKey>,
}

/// Every loaded class the agent may change, remembered, and whether its bytes are known; those
/// known are registered with `planner`.
fn loaded_classes(jvmti: Jvmti, env: &JniEnv<'_>, planner: &mut Planner) -> Loaded {
    let mut loaded = Loaded {
        known: Vec::new(),
        unknown: Vec::new(),
        uninitialized: HashSet::new(),
    };
    if let Ok(classes) = jvmti.loaded_classes(env) {
        for &class in classes.iter() {
            if jvmti.is_modifiable_class(class).unwrap_or(false) {
                if let Some(key) = class_key(jvmti, env, class) {
                    if !key.1.starts_with(ferrofluid_subgraph::AGENT_PACKAGE) {
                        remember(env, &key, class);
                        let status = jvmti.class_status(class).unwrap_or(0) as u32;
                        if status
                            & (sys::JVMTI_CLASS_STATUS_INITIALIZED | sys::JVMTI_CLASS_STATUS_ERROR)
                            == 0
                        {
                            loaded.uninitialized.insert(key.clone());
                        }
                        loaded.known.push(key);
                    }
                }
            }
            env.delete_local_ref(class.as_object());
        }
    }
    let classes = lock(&CACHE.classes);
    let bytes = classes.as_ref().map(|c| &c.bytes);
    let unknown = &mut loaded.unknown;
    loaded
        .known
        .retain(|key| match bytes.and_then(|b| b.get(key)) {
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
    if let Some(n) = classes.as_ref().map(|c| c.not_cached()).filter(|&n| n > 0) {
        log::info!(
            "the class bytes cache is full ({} MiB): {n} class file loads were not kept",
            super::classes::CACHE_LIMIT >> 20
        );
    }
    loaded
}

/// The session's first plan: the initialisers of classes not initialised yet, then what the
/// roots reach.
fn plan(session: &mut Session, loaded: &mut Loaded) {
    // Known classes are registered already; the others when their bytes show up. Before
    // planning: under `eager` the plan follows calls and field accesses, which may initialise
    // them.
    let unknown_set: HashSet<&ClassKey> = loaded.unknown.iter().collect();
    let uninitialized = std::mem::take(&mut loaded.uninitialized);
    if session.initializers {
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
    }
    let batch = session.planner.plan();
    session.apply(batch, None);
}

/// Methods the JVM calls itself from whatever bytecode needed them (class loading,
/// `invokedynamic` and constant linkage): followed like call sites, so that this work inside a
/// root shows where it happens, instead of as that method's self time (not under `eager`, whose
/// closure would take all the class-loading and linkage code up front); and the gateways'
/// classes, whose bytes are `known`, queued for their probes (otherwise retransforming the
/// unknown classes shows them).
fn follow_the_jvm(session: &mut Session, known: &[ClassKey]) {
    for upcall in crate::runtime::reveal::upcalls() {
        let batch = session.planner.follow_upcall(&upcall);
        session.apply(batch, None);
    }
    for class in crate::runtime::reveal::gateway_classes() {
        let key = (BOOTSTRAP, class.to_owned());
        if known.contains(&key) {
            session.pending.insert(key);
        }
    }
}

/// Classes whose bytes the agent never saw (loaded before it): retransforming them shows their
/// bytes to the planner, which instruments them in the same hook if it chooses them. Those not
/// linked show them at their ClassPrepare; those in error state never (no plan chose them, so
/// they are only logged).
fn show_unknown(jvmti: Jvmti, env: &JniEnv<'_>, unknown: &[ClassKey]) {
    let refused = retransform(jvmti, env, unknown);
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
}

/// What the session started with, into `outcome` and the log (`scanned`: the loaded classes
/// looked at).
fn started(outcome: &mut Outcome, scanned: usize) {
    let mut errors = Vec::new();
    let mut session = lock(&SESSIONS.current);
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
        "instrumented {} methods in {} classes ({scanned} loaded classes scanned, {} errors)",
        outcome.methods,
        outcome.classes,
        outcome.errors.len()
    );
}

/// Ends the session: every patched class is retransformed with no hook answer, which restores the
/// bytes it had before the agent touched it.
pub fn deinstrument_all(jvmti: Jvmti, env: &JniEnv<'_>) -> Outcome {
    stop_reveal_thread();
    crate::runtime::jvm::class_hook(jvmti, true);
    let Some(session) = lock(&SESSIONS.current).take() else {
        return Outcome::default();
    };
    *lock(&SESSIONS.ended) = Some((
        session.planner.counters().instrumented as u64,
        session.planner.counters().trivial_skipped as u64,
        session
            .planner
            .dropped()
            .map(|pid| session.base + pid)
            .collect(),
    ));
    SWITCHES.generation.fetch_add(1, Ordering::SeqCst);
    crate::probe::site_flags::reset(env);
    crate::ffi::jni_calls::uninstall(jvmti);
    let count = session.planner.counters().instrumented as u32;
    for id in session.base..session.base + count {
        flags::clear(id);
    }
    SESSIONS.next_base.store(
        next_ids(
            session.base,
            count,
            crate::probe::thread::FIRST_SESSION_ID,
            METHOD_IDS_WRAP,
        ),
        Ordering::SeqCst,
    );
    let sites = session.planner.counters().receiver_sites as u32;
    SESSIONS.next_site_base.store(
        next_ids(session.site_base, sites, 0, SITE_IDS_WRAP),
        Ordering::SeqCst,
    );
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
        lock(&CACHE.restore_at_prepare).extend(refused.unlinked.iter().cloned());
        // One linked since it was found unlinked may have had its ClassPrepare already.
        let linked: Vec<ClassKey> = refused
            .unlinked
            .iter()
            .filter(|k| {
                status_of(jvmti, env, k)
                    .is_some_and(|st| st & sys::JVMTI_CLASS_STATUS_PREPARED != 0)
                    && lock(&CACHE.restore_at_prepare).remove(*k)
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
