//! The `alloc` engine: exact allocation counts per site, tracked objects' ages and surviving
//! generations, leak suspects (docs/modes/alloc.md). The `alloc` probe after every allocating
//! instruction calls `ferrofluid/Alloc.alloc`, which counts in Java and hands the agent only
//! the objects it measures or tracks; the runtime is in [`crate::engine::alloc::memory`].

use std::sync::atomic::{AtomicBool, Ordering};

use ferrofluid_classfile::ProbeKind;
use ferrofluid_jvmti::{sys, JniEnv};
use ferrofluid_profile::{Mode, Profile};
use ferrofluid_protocol::AgentOptions;
use ferrofluid_subgraph::{PlanConfig, Scheme};

use crate::engine::{Capability, Engine, Instrumentation, JvmEvent, Needs, Selection, Units};
use crate::probe::collector;

// The engine's FFI: its JNI natives and wrappers, its JVMTI environment.
#[allow(unsafe_code)]
pub mod ffi;
pub mod memory;
pub mod narrow;


/// The counting class is defined and reset for the session being planned: without it no
/// class may call it, and the engine instruments nothing.
static READY: AtomicBool = AtomicBool::new(false);

/// The allocation engine.
pub struct Alloc;

impl Engine for Alloc {
    fn mode(&self) -> Mode {
        Mode::Alloc
    }

    fn units(&self) -> Units {
        Units::Bytes
    }

    fn needs(&self) -> Needs {
        // Tags and the ObjectFree/GC events come from the engine's own JVMTI environment
        // (`ffi::alloc::open_env`); without them it counts and tracks nothing.
        Needs {
            capabilities: &[Capability::RetransformClasses],
            optional: &[],
            events: &[
                JvmEvent::ClassFileLoadHook,
                JvmEvent::ClassPrepare,
                JvmEvent::ThreadStart,
                JvmEvent::ThreadEnd,
            ],
        }
    }

    fn instruments(&self) -> Option<Instrumentation> {
        READY.load(Ordering::SeqCst).then_some(Instrumentation {
            probes: ProbeKind::Alloc,
            selection: Selection::CallSubgraph,
        })
    }

    /// With roots, their call subgraph revealed as the scheme says (entry/exit probes calling
    /// `ferrofluid/AllocScope` keep each thread's root depth and reveal callees: `memory::scope`).
    fn plan(&self, options: &AgentOptions) -> PlanConfig {
        PlanConfig {
            roots: options.roots.clone(),
            scheme: match options.scheme {
                // Without roots every class is instrumented as it loads; nothing is revealed.
                Scheme::Lazy if options.roots.is_empty() => Scheme::Eager,
                s => s,
            },
            filter: options.filter.clone(),
            skip_trivial: false,
            adaptive: false,
        }
    }

    /// Defines and resets `ferrofluid/Alloc` on this (Java) thread, before planning.
    fn configure(&self, options: &AgentOptions) {
        memory::configure(options.track_every(), options.stack_depth());
        memory::native::configure(&options.filter);
        crate::engine::alloc::narrow::configure(&options.alloc_classes);
        let installed = crate::runtime::jvm::java_vm()
            .ok_or_else(|| "no JVM".to_owned())
            .and_then(|vm| vm.jni_env().map_err(|e| e.to_string()))
            .and_then(|env| {
                memory::install(&env)?;
                memory::scope::configure(&env, !options.roots.is_empty())
            });
        if let Err(e) = &installed {
            log::error!("alloc: {e}; nothing is instrumented");
        }
        READY.store(installed.is_ok(), Ordering::SeqCst);
    }

    fn start(&self, _env: &JniEnv<'_>) {
        memory::start();
        collector::start(None, None, None);
    }

    fn stop(&self) {
        memory::stop();
    }

    fn reset(&self) {
        memory::reset();
    }

    fn tick(&self) {
        memory::tick();
    }

    fn snapshot(&self, profile: &mut Profile) {
        memory::snapshot(profile);
    }

    /// With roots only (without, the `alloc` probe is the only one).
    #[inline(always)]
    fn enter(env: *mut sys::JNIEnv, id: i32, start: u64) {
        memory::scope::enter(env, id, start)
    }

    #[inline(always)]
    fn exit(env: *mut sys::JNIEnv, id: i32, start: u64) {
        memory::scope::exit(env, id, start)
    }
}
