//! The `cpu` engine: the call-subgraph profile (JFluid). Entry/exit probes in the methods the
//! planner reveals under the roots record calls into per-thread rings (`hooks`), the collector
//! builds each thread's calling context tree, and times are compensated with the calibrated
//! probe costs (re-measured while collecting). Optionally thread CPU time per call (`cpu`),
//! fewer probes (`skip-trivial`, `adaptive`).

use std::sync::atomic::Ordering;

use ferrofluid_classfile::ProbeKind;
use ferrofluid_jvmti::{sys, JniEnv};
use ferrofluid_profile::Mode;
use ferrofluid_protocol::AgentOptions;
use ferrofluid_subgraph::PlanConfig;

use crate::engine::{Capability, Engine, Instrumentation, JvmEvent, Needs, Selection, Units};
use crate::probe::{calibrate, collector, hooks};

pub mod adaptive;

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
            optional: &[Capability::TagObjects, Capability::ReadBytecodes],
            events: &[
                JvmEvent::ClassFileLoadHook,
                JvmEvent::ClassPrepare,
                JvmEvent::ThreadStart,
                JvmEvent::ThreadEnd,
            ],
        }
    }

    fn instruments(&self) -> Option<Instrumentation> {
        Some(Instrumentation {
            probes: ProbeKind::EntryExit,
            selection: Selection::CallSubgraph,
        })
    }

    fn plan(&self, options: &AgentOptions) -> PlanConfig {
        PlanConfig {
            roots: options.roots.clone(),
            scheme: options.scheme,
            filter: options.filter.clone(),
            skip_trivial: options.skip_trivial,
            adaptive: options.adaptive,
        }
    }

    fn configure(&self, options: &AgentOptions) {
        hooks::CPU.store(options.cpu, Ordering::SeqCst);
    }

    /// Calibrates the probes on this thread, then starts a fresh recording compensated with
    /// the result (measured times only, if calibration failed: the log says why), and
    /// re-measures the calibration while it collects.
    fn start(&self, env: &JniEnv<'_>) {
        let (calibration, cpu_calibration, stats) = match calibrate::calibrate(env) {
            Ok(c) => (Some(c.wall), c.cpu, Some(c.stats)),
            Err(e) => {
                log::warn!("{e}; times will not be compensated");
                (None, None, None)
            }
        };
        let remeasure = calibration.is_some();
        collector::start(calibration, cpu_calibration, stats);
        if let (true, Some(vm)) = (remeasure, crate::runtime::jvm::java_vm()) {
            calibrate::start_remeasuring(vm);
        }
    }

    #[inline(always)]
    fn enter(env: *mut sys::JNIEnv, id: i32, start: u64) {
        hooks::enter(env, id, start)
    }

    #[inline(always)]
    fn exit(env: *mut sys::JNIEnv, id: i32, start: u64) {
        hooks::exit(env, id, start)
    }
}
