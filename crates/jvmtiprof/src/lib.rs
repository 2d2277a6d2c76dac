//! Build JVMTI profiling agents in Rust.
//!
//! JVMTI gives an agent events and queries; a profiler needs more: sampling without safepoint
//! bias, stacks taken inside a signal handler without crashing the JVM, per-thread CPU time, and
//! entry/exit callbacks for chosen methods. `jvmtiprof` offers these, in the spirit of the
//! JVMTIPROF extension of JVMTI, as safe Rust:
//!
//! - [`sampler`]: **execution sampling**. An interval and a callback, on each thread's CPU clock
//!   (per-thread CPU timers) or on the wall clock (a timer thread signalling every thread). The
//!   callback runs in the signal handler and is typed as such ([`sampler::SignalHandler`] is an
//!   `unsafe` trait: implementing it is the promise of async-signal-safety); it fills a
//!   preallocated record of a lock-free ring, drained off the signal ([`sampler::Samples`]), with
//!   every lost sample counted by reason.
//! - **Asynchronous stack traces**: HotSpot's `AsyncGetCallTrace`, on the interrupted context,
//!   crash-contained: a fault inside the walk is caught by a `SIGSEGV`/`SIGBUS` handler installed
//!   over the JVM's, which jumps back to just before the walk when the faulting thread is inside
//!   one and hands every other fault to the JVM's handler. Frames come typed (interpreted,
//!   compiled, inlined, native) and are named off the signal ([`stack::MethodResolver`]).
//! - [`timing`]: the **timing core**: a registry of the process's threads ([`threads`]), any
//!   thread's CPU clock, and a poller that says, every interval, for each registered thread, how
//!   much CPU and wall time passed and what state it is in. The CPU sampler is built on it too.
//! - [`intercept`]: **method interception** by pattern: entry and exit callbacks for the methods
//!   a pattern names, in classes loaded later and already loaded, by bytecode instrumentation
//!   (a hooks class of this crate, defined in the bootstrap loader, whose natives call the
//!   callbacks); removable.
//! - [`agent`]: the JVMTI an agent writer needs around these: entry points
//!   ([`export_agent!`]), an environment with capabilities and events as closures, `catch_unwind`
//!   at every boundary.
//!
//! A complete agent: sample every thread's CPU at 100 Hz from startup and print the hottest
//! methods when the JVM ends (the crate's `examples/stack_sampler.rs` is a fuller one).
//!
//! ```no_run
//! use std::sync::Mutex;
//! use std::time::Duration;
//! use jvmtiprof::agent::{Agent, AgentContext};
//! use jvmtiprof::sampler::{Config, Sampler, Samples};
//! use jvmtiprof::stack::MethodResolver;
//!
//! static RUNNING: Mutex<Option<(Sampler, Samples)>> = Mutex::new(None);
//!
//! fn start(ctx: AgentContext) -> Result<(), jvmtiprof::Error> {
//!     let vm = ctx.vm;
//!     jvmtiprof::sampler::prepare(vm)?; // debug information at every compiled instruction
//!     let agent = Agent::builder(vm)
//!         .on_vm_init(move |env, _| {
//!             match Sampler::start(vm, env, Config::cpu(Duration::from_millis(10))) {
//!                 Ok(s) => *RUNNING.lock().unwrap() = Some(s),
//!                 Err(e) => eprintln!("sampler: {e}"),
//!             }
//!         })
//!         .on_vm_death(move |env| {
//!             let Some((sampler, mut samples)) = RUNNING.lock().unwrap().take() else { return };
//!             sampler.stop();
//!             let mut names = MethodResolver::new(vm).unwrap();
//!             let mut top = std::collections::HashMap::<String, u64>::new();
//!             samples.drain(|s| {
//!                 if let Some(m) = s.frames.first().and_then(|f| f.method) {
//!                     if let Some(info) = names.resolve(env, m) {
//!                         *top.entry(info.qualified_name()).or_default() += 1;
//!                     }
//!                 }
//!             });
//!             for (method, n) in top {
//!                 println!("{n:8} {method}");
//!             }
//!         })
//!         .build()?;
//!     drop(agent); // the environment stays until the JVM ends
//!     Ok(())
//! }
//!
//! jvmtiprof::export_agent!(start);
//! ```
//!
//! Linux only (x86-64 and aarch64), HotSpot JVMs (OpenJDK 8 to 25). How the sampler is made safe
//! and its limits: `docs/jvmtiprof.md` in the repository.

#![deny(missing_docs)]

pub mod agent;
mod codemap;
mod error;
#[allow(unsafe_code)]
mod ffi;
pub mod intercept;
mod ring;
pub mod sampler;
pub mod stack;
pub mod threads;
pub mod timing;

pub use error::{Error, Result};
pub use ferrofluid_jvmti::{
    sys, Class, JavaVm, JniEnv, Jvmti, MethodId, MethodName, Object, ThreadInfo,
};

#[doc(hidden)]
pub mod __private {
    pub use crate::ffi::entry::{run, unload};
}

/// Exports the JVMTI entry points (`Agent_OnLoad`, `Agent_OnAttach`, `Agent_OnUnload`) of a
/// `cdylib` agent, calling `start` with an [`AgentContext`](agent::AgentContext) (and `unload`,
/// if given, when the JVM unloads the agent). `start` runs under `catch_unwind`; an error it
/// returns makes the JVM refuse the agent (at startup, with the error on stderr).
///
/// ```no_run
/// fn start(ctx: jvmtiprof::agent::AgentContext) -> Result<(), jvmtiprof::Error> {
///     println!("loaded with options {:?}", ctx.options);
///     Ok(())
/// }
/// fn unload() {}
/// jvmtiprof::export_agent!(start, unload = unload);
/// ```
#[macro_export]
macro_rules! export_agent {
    ($start:path) => {
        $crate::export_agent!($start, unload = $crate::__private_no_unload);
    };
    ($start:path, unload = $unload:path) => {
        /// The JVM's entry point for an agent loaded at startup (`-agentpath:`).
        ///
        /// # Safety
        /// Called by the JVM with its `JavaVM` and option string.
        #[allow(unsafe_code)]
        #[no_mangle]
        pub unsafe extern "C" fn Agent_OnLoad(
            vm: *mut $crate::sys::JavaVM,
            options: *mut ::std::ffi::c_char,
            _reserved: *mut ::std::ffi::c_void,
        ) -> $crate::sys::jint {
            // SAFETY: the JVM's arguments to Agent_OnLoad.
            unsafe { $crate::__private::run(vm, options, $crate::agent::Phase::OnLoad, $start) }
        }

        /// The JVM's entry point for an agent loaded into a running JVM (attach `load`).
        ///
        /// # Safety
        /// Called by the JVM with its `JavaVM` and option string.
        #[allow(unsafe_code)]
        #[no_mangle]
        pub unsafe extern "C" fn Agent_OnAttach(
            vm: *mut $crate::sys::JavaVM,
            options: *mut ::std::ffi::c_char,
            _reserved: *mut ::std::ffi::c_void,
        ) -> $crate::sys::jint {
            // SAFETY: the JVM's arguments to Agent_OnAttach.
            unsafe { $crate::__private::run(vm, options, $crate::agent::Phase::Live, $start) }
        }

        /// The JVM's call when it unloads the agent (at exit).
        ///
        /// # Safety
        /// Called by the JVM once.
        #[allow(unsafe_code)]
        #[no_mangle]
        pub unsafe extern "C" fn Agent_OnUnload(_vm: *mut $crate::sys::JavaVM) {
            $crate::__private::unload($unload)
        }
    };
}

#[doc(hidden)]
pub fn __private_no_unload() {}
