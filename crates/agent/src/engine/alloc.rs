//! The `alloc` engine: exact allocation counts per site, tracked objects' ages and surviving
//! generations, leak suspects (docs/modes/alloc.md). The `alloc` probe after every allocating
//! instruction calls `ferrofluid/Alloc.alloc`, which counts in Java and hands the agent only
//! the objects it measures or tracks; the runtime is in [`crate::memory`].

use std::sync::atomic::{AtomicBool, Ordering};

use ferrofluid_classfile::ProbeKind;
use ferrofluid_jvmti::{sys, JniEnv};
use ferrofluid_profile::{Mode, Profile};
use ferrofluid_protocol::AgentOptions;
use ferrofluid_subgraph::{PlanConfig, Scheme};

use super::{Capability, Engine, Instrumentation, JvmEvent, Needs, Selection, Units};
use crate::{collector, memory};

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

    /// With roots, the methods of their call subgraph as class-hierarchy analysis finds it
    /// (the `alloc` probe has no entry probe to reveal callees as they run).
    fn plan(&self, options: &AgentOptions) -> PlanConfig {
        PlanConfig {
            roots: options.roots.clone(),
            scheme: match options.scheme {
                Scheme::Lazy => Scheme::Eager,
                s => s,
            },
            filter: platform_excluded(&options.filter),
            skip_trivial: false,
            adaptive: false,
        }
    }

    /// Defines and resets `ferrofluid/Alloc` on this (Java) thread, before planning.
    fn configure(&self, options: &AgentOptions) {
        memory::configure(options.track_every(), options.stack_depth());
        let installed = crate::jvm::java_vm()
            .ok_or_else(|| "no JVM".to_owned())
            .and_then(|vm| vm.jni_env().map_err(|e| e.to_string()))
            .and_then(|env| memory::install(&env));
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

    fn enter(_env: *mut sys::JNIEnv, _id: i32, _start: u64) {}

    fn exit(_env: *mut sys::JNIEnv, _id: i32, _start: u64) {}
}

/// The JDK's own packages, never given `alloc` probes: allocation sites in platform code that
/// runs while the JVM initialises (thread and launcher setup) leave a pending exception the VM
/// does not expect, and it aborts. The application's own allocations are all counted.
const PLATFORM: [&str; 4] = ["java.**", "jdk.**", "sun.**", "com.sun.**"];

/// `filter` with the JDK's packages excluded.
fn platform_excluded(filter: &ferrofluid_subgraph::ClassFilter) -> ferrofluid_subgraph::ClassFilter {
    let mut filter = filter.clone();
    filter.exclude.extend(
        PLATFORM
            .iter()
            .filter_map(|p| p.parse::<ferrofluid_subgraph::ClassPattern>().ok()),
    );
    filter
}
