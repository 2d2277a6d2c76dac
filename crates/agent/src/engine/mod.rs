//! Profiling engines: what the agent measures. Each mode of `ferrofluid_profile::Mode` that the
//! agent supports has one engine, a folder of this directory implementing [`Engine`], and one
//! line in the registry below ([`engines!`]). The runtime (lifecycle, control server,
//! sessions, class bytes cache and retransformation, JVMTI events) drives an engine only
//! through [`Engine`] and the session it opens ([`EngineSession`]), handing it what it may ask
//! of the runtime as a [`Context`]; an engine uses the shared probe machinery (`crate::probe`)
//! and the FFI layer below it, never the runtime's modules nor another engine's.
//!
//! The probes' hot path reaches the engine without an indirect call: [`enter`] and [`exit`]
//! compare the active engine's slot (one relaxed byte load) and call its probe functions
//! directly, so each engine's probes inline into the natives of the hooks class (their
//! dispatch, [`Dispatch`], is what the runtime binds them to).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};

use ferrofluid_classfile::{Instrumented, ProbeKind, ProbeOptions, Selection as Sites};
use ferrofluid_jvmti::{sys, JavaVm, Jvmti};
use ferrofluid_profile::{Mode, Profile};
use ferrofluid_protocol::{control, AgentOptions, AllocClassPattern, OptionsError};
use ferrofluid_subgraph::{LoaderId, PlanConfig};

use crate::probe::clock;

pub mod bench;
mod needs;
pub use needs::{
    disable_all as disable_events, enable_for as enable_events, take_capabilities, Granted,
    RUNTIME_EVENTS,
};

/// The registry: one line per engine, `Slot => module::Type`, and for an engine that
/// measures a mode of the protocol, `for Mode`. A line may carry attributes (`#[cfg(test)]`).
/// Generates the module declarations, the slots, [`find`], [`registered`] and the probe
/// dispatch.
macro_rules! engines {
    ($($(#[$attr:meta])* $slot:ident $(for $mode:ident)? => $module:ident :: $ty:ident),* $(,)?) => {
        $($(#[$attr])* mod $module;)*

        /// The engines of this build, by the byte the probes compare.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Slot {
            $($(#[$attr])* $slot,)*
        }

        /// The engine of `mode` in this build, if there is one.
        pub fn find(mode: Mode) -> Option<Selected> {
            $($(#[$attr])* {
                $(if mode == Mode::$mode {
                    return Some(Selected { slot: Slot::$slot, engine: &$module::$ty });
                })?
            })*
            None
        }

        /// Every engine of this build in a slot of its own (the test engine among them).
        #[cfg(test)]
        fn slots() -> Vec<Selected> {
            vec![$($(#[$attr])* Selected { slot: Slot::$slot, engine: &$module::$ty },)*]
        }

        /// The probe's clock reading at its start, for the active engine.
        #[inline(always)]
        pub fn probe_ticks() -> u64 {
            let active = ACTIVE.load(Ordering::Relaxed);
            $($(#[$attr])* if active == Slot::$slot as u8 {
                return <$module::$ty as Engine>::ticks();
            })*
            clock::ticks()
        }

        /// The entry probe of method `id` (or `!id`), started at `start`: to the active
        /// engine, statically.
        #[inline(always)]
        pub fn enter(env: *mut sys::JNIEnv, id: i32, start: u64) {
            let active = ACTIVE.load(Ordering::Relaxed);
            $($(#[$attr])* if active == Slot::$slot as u8 {
                return <$module::$ty as Engine>::enter(env, id, start);
            })*
        }

        /// The exit (or unwind) probe of method `id`, as [`enter`].
        #[inline(always)]
        pub fn exit(env: *mut sys::JNIEnv, id: i32, start: u64) {
            let active = ACTIVE.load(Ordering::Relaxed);
            $($(#[$attr])* if active == Slot::$slot as u8 {
                return <$module::$ty as Engine>::exit(env, id, start);
            })*
        }

        /// The exit (or unwind) probe of a method with block counters, as [`exit`].
        #[inline(always)]
        pub fn exit_blocks(env: *mut sys::JNIEnv, id: i32, bytecodes: i32) {
            let active = ACTIVE.load(Ordering::Relaxed);
            $($(#[$attr])* if active == Slot::$slot as u8 {
                return <$module::$ty as Engine>::exit_blocks(env, id, bytecodes);
            })*
        }
    };
}

engines! {
    Cpu for Cpu => cpu::Cpu,
    Region for Region => region::Region,
    Count for Count => count::Count,
    Alloc for Alloc => alloc::Alloc,
    Native for Native => native::Native,
    Sample for Sample => sample::Sample,
    #[cfg(test)] Testing => testing::Entries,
}

// Process-wide: the probes, JVM natives without user data, dispatch on it.
/// The slot of the active engine (`Slot as u8`), read by every probe.
static ACTIVE: AtomicU8 = AtomicU8::new(Slot::Cpu as u8);

/// The probes of the hooks class dispatched to the active engine: what the runtime binds the
/// natives of `ferrofluid/Hooks` to.
pub struct Dispatch;

impl crate::ffi::natives::Probes for Dispatch {
    #[inline(always)]
    fn ticks() -> u64 {
        probe_ticks()
    }

    #[inline(always)]
    fn enter(env: *mut sys::JNIEnv, id: i32, start: u64) {
        enter(env, id, start)
    }

    #[inline(always)]
    fn exit(env: *mut sys::JNIEnv, id: i32, start: u64) {
        exit(env, id, start)
    }

    #[inline(always)]
    fn exit_blocks(env: *mut sys::JNIEnv, id: i32, bytecodes: i32) {
        exit_blocks(env, id, bytecodes)
    }
}

/// The unit of what an engine measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    /// Time, ns.
    Nanoseconds,
    /// Events counted: calls, bytecodes.
    Counts,
    /// Bytes allocated.
    Bytes,
}

/// A JVMTI capability an engine needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// `can_retransform_classes` (and class hook events): every instrumenting engine.
    RetransformClasses,
    /// `can_tag_objects`: receiver sites, threads started inside roots, tracked objects.
    TagObjects,
    /// `can_get_bytecodes` and `can_get_constant_pool`: the calls of a hidden class's method
    /// (a lambda proxy) reaching a receiver site.
    ReadBytecodes,
    /// `can_get_thread_cpu_time`: other threads' CPU clocks (sampled timing).
    ThreadCpuTime,
    /// `can_set_native_method_prefix`: wrappers of native methods (`native`).
    NativePrefix,
    /// `can_generate_early_vmstart`: the `native` engine defines its hooks class before any
    /// Java code runs (only offered at load).
    EarlyStart,
    /// `can_generate_early_class_hook_events`: the `native` engine wraps the natives of the
    /// classes loaded before the start phase (only offered at load).
    EarlyClassHooks,
}

/// A JVMTI event an engine needs enabled while its session runs. (The engines of alloc and
/// native add theirs, with the capabilities they take: docs/decisions/0022-engine-interface.md;
/// a variant is mapped to JVMTI in `needs.rs`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JvmEvent {
    ClassFileLoadHook,
    ClassPrepare,
    ThreadStart,
    ThreadEnd,
}

/// What an engine asks of the JVM. Optional needs make the engine do less without them (the
/// runtime logs it); required ones refuse the session.
#[derive(Debug, Clone, Copy, Default)]
pub struct Needs {
    pub capabilities: &'static [Capability],
    pub optional: &'static [Capability],
    pub events: &'static [JvmEvent],
}

/// Which methods an instrumenting engine's probes go into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// The call subgraph of the plan's roots, revealed as its scheme says (every thread with
    /// no root): gateways, receiver and deferred sites, threads started inside roots.
    CallSubgraph,
    /// The methods the plan's roots name, alone: nothing is revealed, no site is probed, and
    /// only their classes are retransformed.
    Methods,
}

/// What an engine instruments: its probes and where they go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instrumentation {
    pub probes: ProbeKind,
    pub selection: Selection,
    /// Trivial methods (straight-line code that calls nothing) take the leaf probe
    /// (`ferrofluid_classfile::Selection::leaf`): their calls counted at entry alone. For
    /// probes whose exits record nothing a leaf's entry cannot (calls counted in Java).
    pub leaves: bool,
}

/// A class as the runtime's planner knows it: defining loader (its id) and internal name.
pub type ClassKey = (LoaderId, String);

/// Internal class name, method name, descriptor.
pub use crate::probe::upcalls::MethodName;

/// Why a session could not start with the engine asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    #[error("{}", ferrofluid_protocol::mode_unavailable(*.0))]
    Unavailable(Mode),
    #[error("{0}")]
    Options(#[from] OptionsError),
    #[error("mode {mode} needs the JVMTI capability {capability:?}, which this JVM did not grant")]
    Capability { mode: Mode, capability: Capability },
    #[error("mode {mode} needs the JVMTI event {event:?}, which this JVM did not enable")]
    Event { mode: Mode, event: JvmEvent },
    #[error("{}", ferrofluid_protocol::at_load_only(*.0, .1))]
    AtLoadOnly(Mode, String),
}

/// What an engine may ask of the runtime: the narrow services the runtime hands an engine's
/// session with every call (the runtime implements it; an engine never names the runtime).
pub trait Context {
    /// The JVM, while the agent is attached.
    fn vm(&self) -> Option<JavaVm>;
    /// The agent's JVMTI environment, while the agent is attached.
    fn jvmti(&self) -> Option<Jvmti>;
    /// The class, name and descriptor of global method `id`, if a session chose it.
    fn method_name(&self, id: u32) -> Option<MethodName>;
    /// Whether the session's probes are in place (from `instrument` until `deinstrument`).
    fn instrumented(&self) -> bool;
    /// The global ids of the methods whose probes were dropped in this session (or the last).
    fn dropped_ids(&self) -> Vec<u32>;
    /// Whether dropped probes end in Java; otherwise dropping them retransforms their classes.
    fn drops_in_java(&self) -> bool;
    /// On a thread attached to the JVM: drops the probes of `drop` (roots keep theirs), ends
    /// the exits of `quiet` in Java, and retransforms the classes of `retransform` (methods of
    /// `drop` or dropped before); returns the ids dropped.
    fn drop_probes(&self, drop: &[u32], quiet: &[u32], retransform: &[u32]) -> Vec<u32>;
    /// A census of the code cache taken now: the JDK's classes inlined into (or the classes of)
    /// at least `share` of the compiled methods, by internal name, with how many; empty while
    /// little is compiled; `None` when the code cache cannot be read.
    fn jdk_classes_inlined(&self, share: f64) -> Option<HashMap<String, usize>>;
    /// Runs `plan` under the session's lock (no class is instrumented meanwhile), then
    /// retransforms the classes it returns, before this returns. False without a session.
    fn replan(&self, plan: &mut dyn FnMut() -> Vec<ClassKey>) -> bool;
}

/// A profiling engine (async-profiler's `Engine` is the model): what a mode measures, how its
/// probes record it, and the session it opens. Its lifecycle runs on agent or control
/// threads; [`Engine::enter`]/[`Engine::exit`] are the probes' hot path, called statically
/// through the registry, never through a vtable.
pub trait Engine: Sync {
    /// The mode this engine measures.
    fn mode(&self) -> Mode;
    /// The unit of its measurements.
    fn units(&self) -> Units;
    /// JVMTI capabilities and events it needs.
    fn needs(&self) -> Needs;
    /// The plan of its session: roots, class filter, scheme (used when it instruments).
    fn plan(&self, options: &AgentOptions) -> PlanConfig;
    /// Whether its sessions can be narrowed to allocated classes (`narrow`).
    fn narrows(&self) -> bool {
        false
    }
    /// Sets up, on a Java thread before its session opens, what the agent's load would have
    /// (`native` at an attach: its prefix and hooks class); a session it cannot set up for is
    /// refused with the error.
    fn prepare(
        &self,
        _jvmti: Jvmti,
        _env: &ferrofluid_jvmti::JniEnv<'_>,
        _options: &AgentOptions,
    ) -> Result<(), EngineError> {
        Ok(())
    }
    /// Opens its session for `options`, on a Java thread, before the session is planned: sets
    /// what its probes read for it (forgetting the last session) and defines the Java classes
    /// they call.
    fn open(&self, ctx: &dyn Context, options: &AgentOptions) -> Box<dyn EngineSession>;
    /// The start of a probe: [`clock::ticks`], or 0 for an engine that reads no clock.
    #[inline(always)]
    fn ticks() -> u64
    where
        Self: Sized,
    {
        clock::ticks()
    }
    /// The entry probe of method `id` (or `!id`), started at `start`: the hot path.
    fn enter(env: *mut sys::JNIEnv, id: i32, start: u64)
    where
        Self: Sized;
    /// The exit or unwind probe of method `id`: the hot path.
    fn exit(env: *mut sys::JNIEnv, id: i32, start: u64)
    where
        Self: Sized;
    /// The exit or unwind probe of a method with block counters through the hooks class: a
    /// plain exit, unless the engine's block probes count.
    #[inline(always)]
    fn exit_blocks(env: *mut sys::JNIEnv, id: i32, _bytecodes: i32)
    where
        Self: Sized,
    {
        Self::exit(env, id, clock::ticks())
    }
}

/// An engine's part of one session: what it instruments and what it measured, from the
/// session's start until the next session (or detach) replaces it. Every call gets the
/// runtime's [`Context`].
pub trait EngineSession: Send + Sync {
    /// What it instruments, or `None` for no probes (sampling, or an engine whose Java
    /// classes could not be defined).
    fn instruments(&self) -> Option<Instrumentation>;
    /// The session chose global method `id` (before any of its probes can run).
    fn method_chosen(&self, _id: u32) {}
    /// Instruments the bytes of class `class` with `probes`, the methods and sites `sites`
    /// says (the runtime's selection, under its session lock). By default the probes call the
    /// hooks class.
    fn instrument<'a>(
        &self,
        _class: &ClassKey,
        bytes: &'a [u8],
        probes: ProbeKind,
        sites: &mut dyn Sites,
    ) -> ferrofluid_classfile::Result<Instrumented<'a>> {
        ferrofluid_classfile::instrument(bytes, &ProbeOptions::new(probes), sites)
    }
    /// Starts measuring, on a Java thread: calibrates its probes and starts the collector.
    fn start(&self, ctx: &dyn Context, env: &ferrofluid_jvmti::JniEnv<'_>);
    /// Collection stopped.
    fn stop(&self, _ctx: &dyn Context) {}
    /// Discards what was measured so far and goes on (`reset`; the collector restarted).
    fn reset(&self, _ctx: &dyn Context) {}
    /// The collector's periodic tick (every ms or so, on the collector thread).
    fn tick(&self, _ctx: &dyn Context) {}
    /// Adds what it measured to a snapshot (the collector filled threads and calibration).
    fn snapshot(&self, _ctx: &dyn Context, _profile: &mut Profile) {}
    /// A thread started (JVMTI ThreadStart, on that thread).
    fn thread_start(&self, _env: &ferrofluid_jvmti::JniEnv<'_>) {}
    /// The current thread ends (JVMTI ThreadEnd).
    fn thread_end(&self, _env: &ferrofluid_jvmti::JniEnv<'_>) {}
    /// `narrow`: probes only the allocation sites of classes `patterns` selects, before this
    /// returns (for an engine that [`Engine::narrows`]); `None` without a session.
    fn narrow(
        &self,
        _ctx: &dyn Context,
        _patterns: Vec<AllocClassPattern>,
    ) -> Option<control::Response> {
        None
    }
    /// The allocated classes its probes select (`status`), as the option spells them; empty
    /// for every class or an engine without such a selection.
    fn alloc_classes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// An engine and its slot in the registry.
#[derive(Clone, Copy)]
pub struct Selected {
    pub slot: Slot,
    pub engine: &'static dyn Engine,
}

impl std::ops::Deref for Selected {
    type Target = dyn Engine;

    fn deref(&self) -> &(dyn Engine + 'static) {
        self.engine
    }
}

/// Every engine of this build that measures a mode, in `Mode::ALL` order.
pub fn registered() -> impl Iterator<Item = Selected> {
    Mode::ALL.into_iter().filter_map(find)
}

/// The modes whose sessions can be narrowed, as the messages name them (`alloc`).
pub fn narrowable() -> Vec<&'static str> {
    registered()
        .filter(|e| e.narrows())
        .map(|e| e.mode().name())
        .collect()
}

/// The engine `options` ask for, if it exists and takes these options.
pub fn check(options: &AgentOptions) -> Result<Selected, EngineError> {
    let mode = options.mode();
    let engine = find(mode).ok_or(EngineError::Unavailable(mode))?;
    options.validate()?;
    Ok(engine)
}

/// The engine `options` ask for, checked: it exists, takes these options, and the JVM gave
/// the capabilities it requires (`granted`, [`take_capabilities`]; `None` without a JVM: unit
/// tests and benchmarks); its events are enabled when its session starts ([`enable_events`]).
pub fn select(options: &AgentOptions, granted: Option<Granted>) -> Result<Selected, EngineError> {
    let engine = check(options)?;
    let Some(granted) = granted else {
        return Ok(engine);
    };
    let (mode, needs) = (engine.mode(), engine.needs());
    for &capability in needs.capabilities {
        if !granted.has(capability) {
            return Err(EngineError::Capability { mode, capability });
        }
    }
    for &capability in needs.optional {
        if !granted.has(capability) {
            log::info!("mode {mode}: no {capability:?}; measuring without it");
        }
    }
    Ok(engine)
}

/// The work of engines that change classes as they first load, at `Agent_OnLoad` for the load
/// options `options` (the `native` engine's prefix and early events); logged, never fatal
/// beyond the options' own engine refusing.
pub fn at_load(jvmti: Jvmti, options: &AgentOptions, granted: Granted) -> Result<(), EngineError> {
    if options.mode() == Mode::Native {
        native::at_load(jvmti, options, granted)?;
    }
    Ok(())
}

/// The early VMStart: engines that changed classes from the primordial phase on define what
/// those classes call.
pub fn vm_start(jvmti: Jvmti, env: &ferrofluid_jvmti::JniEnv<'_>) {
    native::vm_start(jvmti, env)
}

/// ClassFileLoadHook, before the session's instrumentation: the bytes the engines that change
/// classes as they load make of class `name` (`boot`: of the bootstrap loader), or `None`.
/// Called on redefinitions too, which must keep what the first load added.
pub fn transform_at_load(boot: bool, name: &str, bytes: &[u8]) -> Option<Vec<u8>> {
    native::transform(boot, name, bytes)
}

/// Whether an engine changes classes as they first load (the class file load hook must stay
/// on whatever the session).
pub fn transforms_at_load() -> bool {
    native::transforms_at_load()
}

/// The class, name and descriptor of a method id that no session handed out (the `native`
/// engine's wrapped natives and upcall targets).
pub fn method_name(id: u32) -> Option<MethodName> {
    native::method_name(id)
}

/// Makes `engine` the one the probes reach. Called between sessions (the previous session's
/// probes removed), after its session was opened.
pub fn activate(engine: Selected) {
    log::info!("engine {} ({:?})", engine.mode(), engine.units());
    ACTIVE.store(engine.slot as u8, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_has_the_modes_the_protocol_announces() {
        let built: Vec<Mode> = registered().map(|e| e.mode()).collect();
        assert_eq!(built, ferrofluid_protocol::AGENT_MODES);
        for e in registered() {
            assert_eq!(find(e.mode()).map(|f| f.mode()), Some(e.mode()));
        }
    }

    #[test]
    fn every_mode_has_its_engine() {
        for mode in Mode::ALL {
            let options = AgentOptions {
                mode: Some(mode),
                ..AgentOptions::default()
            };
            let found = find(mode).map(|s| s.mode());
            assert_eq!(found, Some(mode), "{mode}");
            // An engine that cannot run here is refused in one line, never missing.
            if let Err(err) = select(&options, None) {
                assert!(!err.to_string().contains('\n'), "{err}");
                assert!(!matches!(err, EngineError::Unavailable(_)), "{err}");
            }
        }
        assert_eq!(
            EngineError::Unavailable(Mode::Sample).to_string(),
            "mode sample is not available in this agent (available: cpu, region, alloc, count, native, sample)"
        );
    }

    #[test]
    fn options_are_checked_for_the_engine() {
        let options = AgentOptions {
            mode: Some(Mode::Region),
            cpu: true,
            ..AgentOptions::default()
        };
        assert_eq!(
            select(&options, None).err().map(|e| e.to_string()).as_deref(),
            Some("agent options `cpu` and `region` exclude each other: code-region mode measures wall time only")
        );
        let region = AgentOptions {
            region: vec!["demo.Work::step".parse().unwrap()],
            ..AgentOptions::default()
        };
        let engine = select(&region, None).expect("region engine");
        assert_eq!(engine.mode(), Mode::Region);
        let session = engine.open(&testing::NoJvm, &region);
        assert_eq!(
            session.instruments().map(|i| i.selection),
            Some(Selection::Methods)
        );
        let cpu = select(&AgentOptions::default(), None).expect("cpu engine");
        let session = cpu.open(&testing::NoJvm, &AgentOptions::default());
        assert_eq!(
            (
                cpu.mode(),
                cpu.units(),
                session.instruments().map(|i| i.selection)
            ),
            (Mode::Cpu, Units::Nanoseconds, Some(Selection::CallSubgraph))
        );
    }

    #[test]
    fn every_slot_is_dispatched_to() {
        let slots: Vec<Slot> = slots().iter().map(|s| s.slot).collect();
        assert_eq!(
            slots,
            [
                Slot::Cpu,
                Slot::Region,
                Slot::Count,
                Slot::Alloc,
                Slot::Native,
                Slot::Sample,
                Slot::Testing
            ]
        );
        assert_eq!(
            find(Mode::Region).map(|s| s.slot),
            Some(Slot::Region),
            "the test engine has a slot, not a mode"
        );
    }
}
