//! The `alloc` engine: exact allocation counts per site, tracked objects' ages and surviving
//! generations, leak suspects (docs/modes/alloc.md). The `alloc` probe after every allocating
//! instruction calls `ferrofluid/Alloc.alloc` (`Alloc.java`), which counts in Java and hands
//! the agent only the objects it measures or tracks ([`tracker`]); what native code allocates
//! through JNI is counted by the engine's JNI wrappers (`ffi::jni`); with roots, only inside
//! their extent ([`scope`]); the allocated classes whose sites get probes can be
//! narrowed in a running session ([`narrow`]).

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use ferrofluid_classfile::{
    CallSite, Instrumented, MethodSite, ProbeKind, ProbeOptions, Selection as Sites, VmAllocKind,
};
use ferrofluid_jvmti::{sys, JniEnv};
use ferrofluid_profile::{Mode, Profile};
use ferrofluid_protocol::{control, AgentOptions, AllocClassPattern};
use ferrofluid_subgraph::{PlanConfig, Scheme};

use crate::engine::{
    Capability, ClassKey, Context, Engine, EngineSession, Instrumentation, JvmEvent, Needs,
    Selection, Units,
};
use crate::probe::collector;
use crate::probe::thread::method_id;

// The engine's FFI: its JNI natives and wrappers, its JVMTI environment.
#[allow(unsafe_code)]
mod ffi;
mod narrow;
mod native;
mod scope;
mod sites;
mod snapshot;
mod tracker;
mod vm;

/// What the engine's natives (`Alloc.sample`), its JNI wrappers and the callbacks of its JVMTI
/// environment (`ObjectFree`, GC) read and record into.
struct State {
    /// Allocation sites over the agent's life.
    sites: Mutex<Option<sites::Sites>>,
    /// The sites counted per runtime class, over the agent's life.
    vm_sites: Mutex<Option<vm::VmSites>>,
    /// The session's tracked objects, and what tracking reads.
    tracking: tracker::Tracking,
    /// What native code allocated through JNI this session.
    jni: native::JniAllocs,
    /// The allocated classes whose sites get probes, and the sites of the classes seen.
    narrow: narrow::Narrow,
    /// The session has roots: its probes call `ferrofluid/AllocScope`.
    rooted: AtomicBool,
}

// Process-wide: the engine's natives, JNI wrappers and JVMTI callbacks carry no user data.
static STATE: State = State {
    sites: Mutex::new(None),
    vm_sites: Mutex::new(None),
    tracking: tracker::Tracking::new(),
    jni: native::JniAllocs::new(),
    narrow: narrow::Narrow::new(),
    rooted: AtomicBool::new(false),
};

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
        // (`ffi::open_env`); without them it counts and tracks nothing.
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

    /// With roots, their call subgraph revealed as the scheme says (entry/exit probes calling
    /// `ferrofluid/AllocScope` keep each thread's root depth and reveal callees: [`scope`]).
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

    fn narrows(&self) -> bool {
        true
    }

    /// Defines and resets `ferrofluid/Alloc` on this (Java) thread, before planning.
    fn open(&self, ctx: &dyn Context, options: &AgentOptions) -> Box<dyn EngineSession> {
        tracker::configure(
            options.track_every(),
            options.track_bytes(),
            options.stack_depth(),
        );
        native::configure(&options.filter);
        narrow::configure(&options.alloc_classes);
        let installed = ctx
            .vm()
            .ok_or_else(|| "no JVM".to_owned())
            .and_then(|vm| vm.jni_env().map_err(|e| e.to_string()))
            .and_then(|env| {
                tracker::install(&env, ctx.jvmti())?;
                scope::configure(&env, !options.roots.is_empty())
            });
        if let Err(e) = &installed {
            log::error!("alloc: {e}; nothing is instrumented");
        }
        Box::new(AllocSession {
            ready: installed.is_ok(),
        })
    }

    /// With roots only (without, the `alloc` probe is the only one).
    #[inline(always)]
    fn enter(env: *mut sys::JNIEnv, id: i32, start: u64) {
        scope::enter(env, id, start)
    }

    #[inline(always)]
    fn exit(env: *mut sys::JNIEnv, id: i32, start: u64) {
        scope::exit(env, id, start)
    }
}

/// An allocation session.
struct AllocSession {
    /// The counting class is defined and reset for the session: without it no class may call
    /// it, and the engine instruments nothing.
    ready: bool,
}

impl EngineSession for AllocSession {
    fn instruments(&self) -> Option<Instrumentation> {
        self.ready.then_some(Instrumentation {
            probes: ProbeKind::Alloc,
            selection: Selection::CallSubgraph,
            leaves: false,
        })
    }

    /// The `alloc` probes call `ferrofluid/Alloc`, at the sites of the classes the selection of
    /// allocated classes wants ([`narrow`]); the allocated type of every site met is
    /// remembered, probed or not, for a narrowing.
    fn instrument<'a>(
        &self,
        class: &ClassKey,
        bytes: &'a [u8],
        probes: ProbeKind,
        sites: &mut dyn Sites,
    ) -> ferrofluid_classfile::Result<Instrumented<'a>> {
        let mut options = ProbeOptions::new(probes);
        options.hooks.alloc_class = ffi::ALLOC_CLASS.to_owned();
        let mut sites = AllocSites {
            sites,
            classes: narrow::current(),
            types: Vec::new(),
        };
        let instrumented = scope::instrument(bytes, &options, &mut sites);
        if !sites.types.is_empty() {
            narrow::record(class, sites.types);
        }
        instrumented
    }

    fn start(&self, ctx: &dyn Context, _env: &JniEnv<'_>) {
        tracker::start(ctx);
        collector::start(None, None, None);
    }

    fn stop(&self, ctx: &dyn Context) {
        tracker::stop(ctx);
    }

    fn reset(&self, ctx: &dyn Context) {
        tracker::reset(ctx);
    }

    fn tick(&self, _ctx: &dyn Context) {
        tracker::tick();
    }

    fn snapshot(&self, ctx: &dyn Context, profile: &mut Profile) {
        snapshot::snapshot(ctx, profile);
    }

    fn narrow(
        &self,
        ctx: &dyn Context,
        patterns: Vec<AllocClassPattern>,
    ) -> Option<control::Response> {
        let mut patterns = Some(patterns);
        let mut narrowing = None;
        let planned = ctx.replan(&mut || {
            let n = narrow::narrow_to(patterns.take().unwrap_or_default());
            log::info!(
                "alloc: narrowing to allocated classes [{}]: {} classes to retransform, {} sites probed, {} not",
                narrow::selection().join(", "),
                n.changed.len(),
                n.probed,
                n.unprobed
            );
            let changed = n.changed.clone();
            narrowing = Some(n);
            changed
        });
        let n = narrowing.filter(|_| planned)?;
        Some(control::Response::Narrowed {
            alloc_classes: narrow::selection(),
            classes: n.changed.len() as u64,
            sites_probed: n.probed,
            sites_unprobed: n.unprobed,
        })
    }

    fn alloc_classes(&self) -> Vec<String> {
        narrow::selection()
    }
}

/// The runtime's selection of one class's methods and sites, with this engine's allocation
/// sites: the allocated classes the selection in force wants, and each site's id.
struct AllocSites<'s> {
    sites: &'s mut dyn Sites,
    /// The allocated classes whose sites get `alloc` probes ([`narrow`]).
    classes: std::sync::Arc<[AllocClassPattern]>,
    /// The allocated type of every site met, probed or not.
    types: Vec<String>,
}

impl Sites for AllocSites<'_> {
    fn method_id(&mut self, method: &MethodSite<'_>) -> Option<u32> {
        self.sites.method_id(method)
    }

    fn wants_receiver_sites(&self) -> bool {
        self.sites.wants_receiver_sites()
    }

    fn wants_alloc_of(&mut self, type_name: &str) -> bool {
        self.types.push(type_name.to_owned());
        AllocClassPattern::any_matches(&self.classes, type_name)
    }

    fn alloc_site_id(&mut self, method_id: u32, bci: u32, type_name: &str) -> u32 {
        let site = sites::site_id(self::method_id(method_id), bci, type_name);
        // The probe's id says whether its instruction allocates an array, so that `Alloc.alloc`
        // counts an array's length without asking the object's class.
        if type_name.starts_with('[') {
            site | sites::ARRAY_MARK
        } else {
            site
        }
    }

    fn vm_alloc_site_id(
        &mut self,
        method_id: u32,
        bci: u32,
        kind: VmAllocKind,
        callee: Option<(&str, &str, &str)>,
    ) -> Option<u32> {
        // What a call returns is known only at run time: with a selection of allocated classes
        // in force, calls get no probe (a narrowing retransforms their classes for that).
        self.types.push(narrow::CALL_SITE_TYPE.to_owned());
        if !AllocClassPattern::any_matches(&self.classes, narrow::CALL_SITE_TYPE) {
            return None;
        }
        let method = self::method_id(method_id);
        Some(vm::site_id(method, bci, kind, callee))
    }

    fn receiver_site(&mut self, method_id: u32, call: &CallSite<'_>) -> Option<u32> {
        self.sites.receiver_site(method_id, call)
    }

    fn deferred_site(&mut self, method_id: u32, call: &CallSite<'_>) -> Option<u32> {
        self.sites.deferred_site(method_id, call)
    }

    fn entry_site(&mut self, method_id: u32, method: &MethodSite<'_>) -> Option<u32> {
        self.sites.entry_site(method_id, method)
    }
}
