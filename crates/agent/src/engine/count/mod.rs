//! The `count` engine: exact bytecode-count calling-context profiles (JP, Binder and Hulaas).
//! The `blocks` (or `blocks-precise`) probes keep a counter per invocation in a local of the
//! method: one `iinc` per basic block, in Java, no call. The method's exit and unwind probes hand
//! the counter, with the method id, to `ferrofluid/Counts` (`Counts.java`), its entry probe
//! the id alone; no clock is read, so a profile is the same on any machine and under any load.
//!
//! `ferrofluid/Counts` (the shared Java contexts, `probe::contexts`) keeps each thread's
//! calling-context tree (JP's method call tree) in Java: nodes carry `calls` and `bytecodes`
//! (that method's own bytecodes in that context, callees excluded); an entry moves the thread's
//! current node to the child for the method (a cache of the children last entered answers most
//! entries inline), an exit adds the count and goes back to the node its frame saved. No JNI
//! call per event: the agent is asked at a root's entry and exit (root depth, extent,
//! recording: the rules of the `cpu` engine) and at a method's first entry (lazy revelation). A
//! virtual thread has its own tree (its own thread local). The agent reads the trees at
//! snapshots. Memory is bounded in Java: [`contexts::MAX_NODES`] nodes per thread and
//! [`contexts::HEAP_SHARE`] of the heap for all, then new contexts count in one overflow node;
//! 65,536 threads per recording, then new threads are counted as dropped.
//!
//! Decisions and measurements: docs/decisions/0030-count-engine.md,
//! docs/decisions/0051-count-contexts-in-java.md.

use std::sync::atomic::Ordering;

use ferrofluid_classfile::{Instrumented, ProbeKind, Selection as Sites};
use ferrofluid_jvmti::{sys, JniEnv};
use ferrofluid_profile::{Mode, Profile};
use ferrofluid_protocol::{AgentOptions, Blocks};
use ferrofluid_subgraph::{ClassPattern, PlanConfig};

use crate::engine::{
    Capability, ClassKey, Context, Engine, EngineSession, Instrumentation, JvmEvent, Needs,
    Selection, Units,
};
use crate::probe::collector;
use crate::probe::contexts::ffi::{self, JavaContext};
use crate::probe::contexts::{self, tree, Recordings, UNPROBED};
use crate::probe::thread::SWITCHES;

/// The bytecode-count engine.
pub struct Count;

impl Engine for Count {
    fn mode(&self) -> Mode {
        Mode::Count
    }

    fn units(&self) -> Units {
        Units::Counts
    }

    fn needs(&self) -> Needs {
        Needs {
            capabilities: &[Capability::RetransformClasses],
            optional: &[Capability::TagObjects],
            events: &[
                JvmEvent::ClassFileLoadHook,
                JvmEvent::ClassPrepare,
                JvmEvent::ThreadStart,
                JvmEvent::ThreadEnd,
            ],
        }
    }

    /// The call subgraph of the roots as in `cpu` mode, without the classes `ferrofluid/Counts`
    /// runs; never `skip-trivial` or `adaptive`: a method without probes would lose its
    /// bytecodes.
    fn plan(&self, options: &AgentOptions) -> PlanConfig {
        let mut filter = options.filter.clone();
        filter.exclude.extend(
            UNPROBED
                .iter()
                .map(|c| c.parse::<ClassPattern>().expect("a valid class pattern")),
        );
        PlanConfig {
            roots: options.roots.clone(),
            scheme: options.scheme,
            filter,
            skip_trivial: false,
            adaptive: false,
        }
    }

    /// Defines `ferrofluid/Counts` on this (Java) thread, before planning.
    fn open(&self, ctx: &dyn Context, options: &AgentOptions) -> Box<dyn EngineSession> {
        SWITCHES.cpu.store(false, Ordering::SeqCst);
        let installed = ctx
            .vm()
            .ok_or_else(|| "no JVM".to_owned())
            .and_then(|vm| vm.jni_env().map_err(|e| e.to_string()))
            .and_then(|env| ffi::install(&env, ctx.jvmti()));
        if let Err(e) = &installed {
            log::error!("count: {e}; nothing is instrumented");
        }
        Box::new(CountSession {
            precise: options.blocks == Blocks::Precise,
            no_root: options.roots.is_empty(),
            ready: installed.is_ok(),
            recordings: Recordings::default(),
        })
    }

    /// No clock: counts are exact.
    #[inline(always)]
    fn ticks() -> u64 {
        0
    }

    /// The block probes of this engine call `ferrofluid/Counts`, not the hooks class.
    #[inline(always)]
    fn enter(_env: *mut sys::JNIEnv, _id: i32, _start: u64) {}

    #[inline(always)]
    fn exit(_env: *mut sys::JNIEnv, _id: i32, _start: u64) {}

    #[inline(always)]
    fn exit_blocks(_env: *mut sys::JNIEnv, _id: i32, _bytecodes: i32) {}
}

/// A bytecode-count session.
struct CountSession {
    /// The block counters (`blocks=precise`).
    precise: bool,
    /// No root: every thread counts.
    no_root: bool,
    /// `ferrofluid/Counts` is defined and bound.
    ready: bool,
    recordings: Recordings,
}

impl EngineSession for CountSession {
    /// Nothing if `ferrofluid/Counts` could not be defined.
    fn instruments(&self) -> Option<Instrumentation> {
        if !self.ready {
            return None;
        }
        let probes = if self.precise {
            ProbeKind::BlocksPrecise
        } else {
            ProbeKind::Blocks
        };
        Some(Instrumentation {
            probes,
            selection: Selection::CallSubgraph,
            leaves: true,
        })
    }

    /// The block probes call `ferrofluid/Counts`, which keeps the calling contexts in Java; a
    /// frame keeps its own.
    fn instrument<'a>(
        &self,
        _class: &ClassKey,
        bytes: &'a [u8],
        probes: ProbeKind,
        sites: &mut dyn Sites,
    ) -> ferrofluid_classfile::Result<Instrumented<'a>> {
        contexts::instrument(bytes, probes, sites)
    }

    /// Nothing to calibrate: counts are exact. Fresh trees from now on.
    fn start(&self, _ctx: &dyn Context, env: &JniEnv<'_>) {
        self.restart(env);
        collector::start(None, None, None);
    }

    fn stop(&self, ctx: &dyn Context) {
        self.with_java(ctx, "stopping", ffi::stop);
    }

    fn reset(&self, ctx: &dyn Context) {
        self.with_java(ctx, "restarting", |env| {
            self.restart(env);
            Ok(())
        });
    }

    fn snapshot(&self, ctx: &dyn Context, profile: &mut Profile) {
        let read = ctx
            .vm()
            .and_then(|vm| vm.with_attached_thread("ferrofluid-count", ffi::read).ok())
            .flatten();
        let (contexts, dropped) = read.unwrap_or_default();
        if dropped > 0 {
            log::warn!("count: {dropped} threads did not count (too many threads in one recording)");
        }
        snapshot_into(profile, contexts, |id| ctx.method_name(id));
    }
}

impl CountSession {
    /// Starts a recording in `ferrofluid/Counts`, if it is installed.
    fn restart(&self, env: &JniEnv<'_>) {
        if !self.ready {
            return;
        }
        if let Err(e) = self.recordings.start(env, self.no_root) {
            log::error!("count: {e}");
        }
    }

    /// Runs `f` on a Java thread (this one, attached if needed), logging what fails.
    fn with_java(
        &self,
        ctx: &dyn Context,
        what: &str,
        f: impl FnOnce(&JniEnv<'_>) -> Result<(), String>,
    ) {
        if !self.ready {
            return;
        }
        if let Err(e) = contexts::on_java_thread(ctx.vm(), "ferrofluid-count", f) {
            log::warn!("count: {what}: {e}");
        }
    }
}

/// Fills `profile` with the count trees: mode `count`, metric `bytecodes`, one tree per thread
/// that counted ([`tree::build`]).
fn snapshot_into(
    profile: &mut Profile,
    contexts: Vec<JavaContext>,
    name_of: impl Fn(u32) -> Option<(String, String, String)>,
) {
    let (methods, built) = tree::build(contexts, 1, name_of);
    let mut out = Vec::with_capacity(built.len());
    for (mut b, nodes) in built {
        for (n, id) in nodes.iter().zip(&b.node_of) {
            if let Some(id) = *id {
                b.thread.tree.extra_mut(id)[0] = n.bytecodes;
            }
        }
        out.push(b.thread);
    }
    profile.methods = methods;
    profile.probes_dropped.clear();
    profile.mode = Mode::Count;
    profile.extra_metrics = Mode::Count.default_metrics();
    profile.calibration = None;
    profile.cpu_calibration = None;
    profile.calibration_stats = None;
    profile.sampling = None;
    profile.threads = out;
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrofluid_profile::MethodId;

    /// How Counts.java is compiled (see its comment).
    const JAVAC: [&str; 9] = [
        "-Xlint:-options",
        "-source",
        "11",
        "-target",
        "11",
        "--add-exports",
        "java.base/jdk.internal.vm.annotation=ALL-UNNAMED",
        "--add-exports",
        "java.base/jdk.internal.misc=ALL-UNNAMED",
    ];

    const SOURCES: [&str; 3] = [
        "src/probe/contexts/Counts.java",
        "../../tools/hooks/ferrofluid/Hooks.java",
        "tests/java/ferrofluid/CountsDriver.java",
    ];

    fn names(id: u32) -> Option<(String, String, String)> {
        // Ids in reverse name order, so that name order is visible.
        Some(("demo/A".into(), format!("m{}", 9 - id), "()V".into()))
    }

    /// The committed class files are what javac makes of the committed source.
    #[test]
    fn class_files_match_their_source() {
        for (class, committed) in [
            (
                "ferrofluid/Counts.class",
                &include_bytes!("../../probe/contexts/Counts.class")[..],
            ),
            (
                "ferrofluid/Counts$Context.class",
                &include_bytes!("../../probe/contexts/Counts$Context.class")[..],
            ),
        ] {
            let Some(made) = crate::testing::compiled_by(&SOURCES[..2], &JAVAC, class) else {
                return;
            };
            assert!(made == committed, "recompile Counts.java (see its comment)");
        }
    }

    /// JP's Fig. 4 shape (f calls h and g(i) 3 times, g(i) calls h i times) counted by the Java
    /// contexts: calls and bytecodes per context, an exit with no entry counted apart, a frame
    /// left open closed by its caller's exit, a second thread with a tree of its own, and a
    /// counter past 2^31 read unsigned.
    #[test]
    fn java_contexts_count_calls_and_bytecodes_per_context() {
        let Some(out) =
            crate::testing::run_java(&SOURCES, &JAVAC, "ferrofluid.CountsDriver", &["fig4"])
        else {
            return;
        };
        assert_eq!(
            out,
            "worker order=0 overflow=0 unmatched=1 current=0\n\
             -1 0 0 0\n1 0 1 10\n3 1 3 12\n2 1 3 21\n3 3 3 12\n7 1 1 0\n\
             second order=1 overflow=0 unmatched=0 current=0\n\
             -1 0 0 0\n4 0 1 4294967295\n\
             dropped=0\n"
        );
    }

    /// Past the node budget, new contexts count in one overflow node (a child of the root), and
    /// the calls open in it return to where they were made.
    #[test]
    fn past_the_node_budget_calls_count_in_one_overflow_node() {
        let Some(out) =
            crate::testing::run_java(&SOURCES, &JAVAC, "ferrofluid.CountsDriver", &["overflow"])
        else {
            return;
        };
        assert_eq!(
            out,
            "worker order=0 overflow=2 unmatched=0 current=0\n\
             -1 0 0 0\n1 0 1 1\n2 1 1 3\n3 1 1 2\n-2 0 2 13\n\
             dropped=0\n"
        );
    }

    fn context(order: u64, nodes: &[(i32, i32, i64, i64)]) -> JavaContext {
        JavaContext {
            name: if order == 0 { "main".into() } else { String::new() },
            order,
            java_id: 7 + order,
            is_virtual: order > 0,
            method: nodes.iter().map(|n| n.0).collect(),
            parent: nodes.iter().map(|n| n.1).collect(),
            calls: nodes.iter().map(|n| n.2).collect(),
            bytecodes: nodes.iter().map(|n| n.3).collect(),
            ..JavaContext::default()
        }
    }

    /// Contexts become one tree per thread in the order threads first counted, methods and
    /// children in name order; an unnamed virtual thread is `virtual#ID`; a node read before its
    /// parent was (a torn copy) is left out with what follows it.
    #[test]
    fn snapshots_order_threads_methods_and_children() {
        let f = [
            (-1, 0, 0, 0),
            (1, 0, 1, 7),
            (2, 1, 2, 20),
            (3, 2, 2, 10),
            (3, 1, 1, 5),
            (-2, 0, 2, 6),
        ];
        let torn = [(-1, 0, 0, 0), (3, 0, 4, 8), (2, 5, 1, 1)];
        let mut profile = Profile::default();
        snapshot_into(&mut profile, vec![context(1, &torn), context(0, &f)], names);
        assert_eq!(profile.mode, Mode::Count);
        let names: Vec<&str> = profile.threads.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["main", "virtual#8"]);
        let tree = &profile.threads[0].tree;
        let frames: Vec<(String, u64, u64)> = tree
            .walk()
            .into_iter()
            .skip(1)
            .map(|(id, _)| {
                let n = tree.node(id);
                let m = n
                    .method()
                    .map_or("<overflow>".to_owned(), |m| {
                        profile.methods.get(m).unwrap().method.clone()
                    });
                (m, n.calls, tree.extra(id)[0])
            })
            .collect();
        // f = m8, g = m7, h = m6: children in name order (m6 before m7 under f).
        assert_eq!(
            frames,
            [
                ("m8".into(), 1, 7),
                ("m6".into(), 1, 5),
                ("m7".into(), 2, 20),
                ("m6".into(), 2, 10),
                ("<overflow>".into(), 2, 6),
            ]
        );
        assert_eq!(profile.methods.get(MethodId(0)).unwrap().method, "m6");
        assert_eq!(profile.threads[1].tree.walk().len(), 2);
    }

    /// The engine never probes the classes `ferrofluid/Counts` runs to find a thread's tree.
    #[test]
    fn the_thread_local_machinery_is_not_planned() {
        let options: AgentOptions = "mode=count".parse().unwrap();
        let plan = Count.plan(&options);
        for c in [
            "java/lang/ThreadLocal",
            "java/lang/ThreadLocal$ThreadLocalMap",
            "java/lang/ThreadLocal$ThreadLocalMap$Entry",
            "java/lang/ref/Reference",
            "java/lang/ref/WeakReference",
        ] {
            assert!(!plan.filter.allows(c), "{c}");
        }
        for c in ["java/lang/ThreadLocalRandom", "java/lang/Thread", "demo/A"] {
            assert!(plan.filter.allows(c), "{c}");
        }
    }
}
