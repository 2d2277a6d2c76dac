//! Profiling engines: what the agent measures. Each mode of `ferrofluid_profile::Mode` that
//! the agent supports has one engine, a module of this directory implementing [`Engine`], and
//! one line in the registry below ([`engines!`]). The shared runtime (lifecycle, control
//! server, class bytes cache and retransformation, thread state, clock, rings, collector)
//! knows no mode: it reaches the session's engine through the functions of this module only.
//!
//! The probes' hot path reaches the engine without an indirect call: [`enter`] and [`exit`]
//! compare the active engine's mode (one relaxed byte load) and call its probe functions
//! directly, so each engine's probes inline into the natives as before
//! (docs/decisions/0022-engine-interface.md).

use std::sync::atomic::{AtomicU8, Ordering};

use ferrofluid_classfile::ProbeKind;
use ferrofluid_jvmti::{sys, JniEnv};
use ferrofluid_profile::{Mode, Profile};
use ferrofluid_protocol::{AgentOptions, OptionsError};
use ferrofluid_subgraph::PlanConfig;

/// The registry: one line per engine, `Mode => module::Type`. A line may carry attributes
/// (`#[cfg(test)]`). Generates the module declarations, [`find`] and the probe dispatch.
macro_rules! engines {
    ($($(#[$attr:meta])* $mode:ident => $module:ident :: $ty:ident),* $(,)?) => {
        $($(#[$attr])* pub mod $module;)*

        /// The engine of `mode` in this build, if there is one.
        pub fn find(mode: Mode) -> Option<&'static dyn Engine> {
            $($(#[$attr])* if mode == Mode::$mode {
                return Some(&$module::$ty);
            })*
            None
        }

        /// The entry probe of method `id` (or `!id`), started at `start` (`hooks::ticks`):
        /// to the active engine, statically.
        #[inline(always)]
        pub fn enter(env: *mut sys::JNIEnv, id: i32, start: u64) {
            let active = ACTIVE.load(Ordering::Relaxed);
            $($(#[$attr])* if active == Mode::$mode as u8 {
                return <$module::$ty as Engine>::enter(env, id, start);
            })*
        }

        /// The exit (or unwind) probe of method `id`, as [`enter`].
        #[inline(always)]
        pub fn exit(env: *mut sys::JNIEnv, id: i32, start: u64) {
            let active = ACTIVE.load(Ordering::Relaxed);
            $($(#[$attr])* if active == Mode::$mode as u8 {
                return <$module::$ty as Engine>::exit(env, id, start);
            })*
        }
    };
}

mod needs;
pub use needs::{
    disable_all as disable_events, enable_for as enable_events, granted, take_capabilities,
};

engines! {
    Cpu => cpu::Cpu,
    Region => region::Region,
    Count => count::Count,
    Alloc => alloc::Alloc,
    #[cfg(test)] Sample => testing::Entries,
}

/// The start of a probe for the active engine: [`crate::probe::hooks::ticks`], or 0 for an engine
/// that reads no clock (`count`).
#[inline(always)]
pub fn probe_ticks() -> u64 {
    if ACTIVE.load(Ordering::Relaxed) == Mode::Count as u8 {
        0
    } else {
        crate::probe::hooks::ticks()
    }
}

/// The exit (or unwind) probe of a method with block counters through the hooks class: a plain
/// exit. The `count` engine's block probes call `ferrofluid/Counts` instead.
#[inline(always)]
pub fn exit_blocks(env: *mut sys::JNIEnv, id: i32, _bytecodes: i32) {
    if ACTIVE.load(Ordering::Relaxed) != Mode::Count as u8 {
        exit(env, id, crate::probe::hooks::ticks());
    }
}

/// The mode of the active engine (`Mode as u8`), read by every probe.
static ACTIVE: AtomicU8 = AtomicU8::new(Mode::Cpu as u8);

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
}

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
}

/// A profiling engine (async-profiler's `Engine` is the model): what a mode measures, how its
/// probes record it, and how it is reset and read. Lifecycle methods run on agent or control
/// threads; [`Engine::enter`]/[`Engine::exit`] are the probes' hot path, called statically
/// through the registry, never through a vtable.
pub trait Engine: Sync {
    /// The mode this engine measures.
    fn mode(&self) -> Mode;
    /// The unit of its measurements.
    fn units(&self) -> Units;
    /// JVMTI capabilities and events it needs.
    fn needs(&self) -> Needs;
    /// What it instruments, or `None` for an engine without probes (sampling).
    fn instruments(&self) -> Option<Instrumentation>;
    /// The plan of its session: roots, class filter, scheme (used when it instruments).
    fn plan(&self, options: &AgentOptions) -> PlanConfig;
    /// Sets what its probes read for a session about to be planned, forgetting the last one.
    fn configure(&self, _options: &AgentOptions) {}
    /// The session chose global method `id` (before any of its probes can run).
    fn method_chosen(&self, _id: u32) {}
    /// Starts measuring, on a Java thread: calibrates its probes and starts the collector.
    fn start(&self, env: &JniEnv<'_>);
    /// Collection stopped.
    fn stop(&self) {}
    /// Discards what was measured so far and goes on (`reset`; the collector restarted).
    fn reset(&self) {}
    /// The collector's periodic tick (every ms or so, on the collector thread).
    fn tick(&self) {}
    /// Adds what it measured to a snapshot (the collector filled threads and calibration).
    fn snapshot(&self, _profile: &mut Profile) {}
    /// A thread started (JVMTI ThreadStart, on that thread).
    fn thread_start(&self) {}
    /// The current thread ends (JVMTI ThreadEnd).
    fn thread_end(&self) {}
    /// The entry probe of method `id` (or `!id`), started at `start`: the hot path.
    fn enter(env: *mut sys::JNIEnv, id: i32, start: u64)
    where
        Self: Sized;
    /// The exit or unwind probe of method `id`: the hot path.
    fn exit(env: *mut sys::JNIEnv, id: i32, start: u64)
    where
        Self: Sized;
}

/// Every engine of this build, in `Mode::ALL` order.
pub fn registered() -> impl Iterator<Item = &'static dyn Engine> {
    Mode::ALL.into_iter().filter_map(find)
}

/// The active engine (the last session's, `cpu` before any).
pub fn current() -> &'static dyn Engine {
    let active = ACTIVE.load(Ordering::Acquire);
    Mode::ALL
        .into_iter()
        .find(|m| *m as u8 == active)
        .and_then(find)
        .unwrap_or(&cpu::Cpu)
}

/// The engine `options` ask for, if it exists and takes these options.
pub fn check(options: &AgentOptions) -> Result<&'static dyn Engine, EngineError> {
    let mode = options.mode();
    let engine = find(mode).ok_or(EngineError::Unavailable(mode))?;
    options.validate()?;
    Ok(engine)
}

/// The engine `options` ask for, checked: it exists, takes these options, and the JVM gave
/// the capabilities it requires ([`take_capabilities`]; its events are enabled when its session
/// starts, [`enable_events`]).
pub fn select(options: &AgentOptions) -> Result<&'static dyn Engine, EngineError> {
    let engine = check(options)?;
    if !needs::taken() {
        return Ok(engine);
    }
    let (mode, needs) = (engine.mode(), engine.needs());
    for &capability in needs.capabilities {
        if !granted(capability) {
            return Err(EngineError::Capability { mode, capability });
        }
    }
    for &capability in needs.optional {
        if !granted(capability) {
            log::info!("mode {mode}: no {capability:?}; measuring without it");
        }
    }
    Ok(engine)
}

/// Makes `engine` the one the probes reach and configures it for `options`. Called between
/// sessions (the previous session's probes removed).
pub fn activate(engine: &'static dyn Engine, options: &AgentOptions) {
    log::info!("engine {} ({:?})", engine.mode(), engine.units());
    engine.configure(options);
    ACTIVE.store(engine.mode() as u8, Ordering::Release);
}

/// Serialises the unit tests that switch the active engine or the hooks' global switches.
#[cfg(test)]
pub static TEST_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_has_the_modes_the_protocol_announces() {
        let built: Vec<Mode> = registered()
            .map(|e| e.mode())
            .filter(|m| *m != Mode::Sample)
            .collect();
        assert_eq!(built, ferrofluid_protocol::AGENT_MODES);
        for e in registered() {
            assert_eq!(find(e.mode()).map(|f| f.mode()), Some(e.mode()));
        }
    }

    #[test]
    fn modes_without_an_engine_are_refused_in_one_line() {
        let mode = Mode::Native;
        let options = AgentOptions {
            mode: Some(mode),
            ..AgentOptions::default()
        };
        let err = select(&options).err().expect("no engine");
        assert_eq!(
            err.to_string(),
            format!(
                "mode {mode} is not available in this agent (available: cpu, region, alloc, count)"
            )
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
            select(&options).err().map(|e| e.to_string()).as_deref(),
            Some("agent options `cpu` and `region` exclude each other: code-region mode measures wall time only")
        );
        let region = AgentOptions {
            region: vec!["demo.Work::step".parse().unwrap()],
            ..AgentOptions::default()
        };
        let engine = select(&region).expect("region engine");
        assert_eq!(engine.mode(), Mode::Region);
        assert_eq!(
            engine.instruments().map(|i| i.selection),
            Some(Selection::Methods)
        );
        let cpu = select(&AgentOptions::default()).expect("cpu engine");
        assert_eq!(
            (
                cpu.mode(),
                cpu.units(),
                cpu.instruments().map(|i| i.selection)
            ),
            (Mode::Cpu, Units::Nanoseconds, Some(Selection::CallSubgraph))
        );
    }
}
