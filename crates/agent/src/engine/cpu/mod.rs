//! The `cpu` engine: the call-subgraph profile (JFluid). Entry/exit probes in the methods the
//! planner reveals under the roots record calls into per-thread rings (`probe::recorder`), the
//! collector builds each thread's calling context tree, and times are compensated with the
//! calibrated probe costs (re-measured while collecting, [`calibration`]). Optionally thread
//! CPU time per call (`cpu`), fewer probes (`skip-trivial`, [`adaptive`]). With
//! `timing=sampled` ([`sampled`]) the probes keep only the exact calling contexts, in Java, and
//! a sampler charges the threads' time to them.

use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

use ferrofluid_classfile::ProbeKind;
use ferrofluid_jvmti::{sys, JniEnv};
use ferrofluid_profile::Mode;
use ferrofluid_protocol::{AgentOptions, Timing};
use ferrofluid_subgraph::{ClassPattern, PlanConfig};

use crate::engine::{
    Capability, Context, Engine, EngineSession, Instrumentation, JvmEvent, Needs, Selection,
    Units,
};
use crate::probe::contexts::UNPROBED;
use crate::probe::thread::SWITCHES;
use crate::probe::{calibrate, collector, recorder};

pub mod adaptive;
mod budget;
pub mod calibration;
mod sampled;
mod share;

/// The call-subgraph engine.
pub struct Cpu;

impl Engine for Cpu {
    fn mode(&self) -> Mode {
        Mode::Cpu
    }

    fn units(&self) -> Units {
        Units::Nanoseconds
    }

    fn needs(&self) -> Needs {
        Needs {
            capabilities: &[Capability::RetransformClasses],
            // Receiver sites and threads started inside roots; without tags their callees
            // are revealed at the callers' first invocation only.
            // Hidden classes reaching receiver sites: without their bytecode, chosen by CHA.
            // Sampled timing: other threads' CPU clocks; without it, times by thread state.
            optional: &[
                Capability::TagObjects,
                Capability::ReadBytecodes,
                Capability::ThreadCpuTime,
            ],
            events: &[
                JvmEvent::ClassFileLoadHook,
                JvmEvent::ClassPrepare,
                JvmEvent::ThreadStart,
                JvmEvent::ThreadEnd,
            ],
        }
    }

    /// With sampled timing, never the classes `ferrofluid/Counts` runs to find a thread's
    /// context.
    fn plan(&self, options: &AgentOptions) -> PlanConfig {
        let sampled = options.timing == Timing::Sampled;
        let mut filter = options.filter.clone();
        if sampled {
            filter.exclude.extend(
                UNPROBED
                    .iter()
                    .map(|c| c.parse::<ClassPattern>().expect("a valid class pattern")),
            );
        }
        PlanConfig {
            roots: options.roots.clone(),
            scheme: options.scheme,
            filter,
            skip_trivial: options.skip_trivial,
            adaptive: options.adaptive,
        }
    }

    fn open(&self, ctx: &dyn Context, options: &AgentOptions) -> Box<dyn EngineSession> {
        if options.timing == Timing::Sampled {
            SWITCHES.cpu.store(false, Ordering::SeqCst);
            return Box::new(sampled::SampledSession::open(ctx, options));
        }
        SWITCHES.cpu.store(options.cpu, Ordering::SeqCst);
        Box::new(CpuSession {
            adaptive: options.adaptive,
            remeasuring: Mutex::new(None),
            schedule: Mutex::new(None),
        })
    }

    #[inline(always)]
    fn enter(env: *mut sys::JNIEnv, id: i32, start: u64) {
        recorder::enter(env, id, start)
    }

    #[inline(always)]
    fn exit(env: *mut sys::JNIEnv, id: i32, start: u64) {
        recorder::exit(env, id, start)
    }
}

/// A call-subgraph session: its calibration's re-measuring thread and, with `adaptive`, when
/// it looks for probes to drop next.
struct CpuSession {
    adaptive: bool,
    remeasuring: Mutex<Option<calibration::Remeasuring>>,
    schedule: Mutex<Option<adaptive::Schedule>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl CpuSession {
    fn stop_remeasuring(&self) {
        let remeasuring = lock(&self.remeasuring).take();
        if let Some(r) = remeasuring {
            r.stop();
        }
    }
}

impl EngineSession for CpuSession {
    fn instruments(&self) -> Option<Instrumentation> {
        Some(Instrumentation {
            probes: ProbeKind::EntryExit,
            selection: Selection::CallSubgraph,
            leaves: false,
        })
    }

    /// Calibrates the probes on this thread, then starts a fresh recording compensated with
    /// the result (measured times only, if calibration failed: the log says why), and
    /// re-measures the calibration while it collects.
    fn start(&self, ctx: &dyn Context, env: &JniEnv<'_>) {
        self.stop_remeasuring();
        let (calibration, cpu_calibration, stats, pool) = match calibrate::calibrate(env) {
            Ok((c, pool)) => (Some(c.wall), c.cpu, Some(c.stats), Some(pool)),
            Err(e) => {
                log::warn!("{e}; times will not be compensated");
                (None, None, None, None)
            }
        };
        collector::start(calibration, cpu_calibration, stats);
        if let (Some(pool), Some(vm)) = (pool, ctx.vm()) {
            *lock(&self.remeasuring) = calibration::Remeasuring::start(vm, pool);
        }
    }

    fn stop(&self, _ctx: &dyn Context) {
        self.stop_remeasuring();
    }

    fn tick(&self, ctx: &dyn Context) {
        if self.adaptive {
            adaptive::tick(&self.schedule, ctx);
        }
    }
}

impl Drop for CpuSession {
    fn drop(&mut self) {
        self.stop_remeasuring();
    }
}
