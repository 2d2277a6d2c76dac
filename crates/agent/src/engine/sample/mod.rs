//! The `sample` engine: stack samples on a timer, walked without a safepoint, per calling
//! context. Built on the `jvmtiprof` crate: its sampler gives each thread a CPU timer (or
//! signals every thread on the wall clock), walks the interrupted thread's Java stack with
//! `AsyncGetCallTrace` inside the signal handler, crash-contained, into a lock-free buffer; the
//! drain ([`drain`]) names the frames and builds the trees ([`tree`]).
//!
//! With roots it is a hybrid: the roots alone get entry and exit probes ([`extent`]), which mark
//! each thread's extent inside them for the sampler (only marked threads are sampled) and count
//! the roots' calls exactly; the samples' stacks are cut at their outermost root.
//! docs/modes/sample.md, docs/decisions/0059-sample-engine.md.

mod drain;
mod extent;
mod tree;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use ferrofluid_classfile::ProbeKind;
use ferrofluid_jvmti::{sys, JniEnv};
use ferrofluid_profile::sampling::{self, Sampling};
use ferrofluid_profile::{Mode, NodeId, NodeKind, Profile, ThreadProfile};
use ferrofluid_protocol::AgentOptions;
use ferrofluid_subgraph::{PlanConfig, Scheme};
use jvmtiprof::sampler::{Config, Sampler, Threads};

use crate::engine::{
    Capability, Context, Engine, EngineSession, Instrumentation, JvmEvent, Needs, Selection,
    Units,
};
use crate::probe::collector;
use drain::{lock, Collected, RootNames};
use tree::Group;

/// The sampling engine.
pub struct Sample;

impl Engine for Sample {
    fn mode(&self) -> Mode {
        Mode::Sample
    }

    fn units(&self) -> Units {
        Units::Counts
    }

    fn needs(&self) -> Needs {
        Needs {
            // The hybrid's root probes.
            capabilities: &[Capability::RetransformClasses],
            optional: &[],
            events: &[JvmEvent::ClassFileLoadHook, JvmEvent::ClassPrepare],
        }
    }

    /// The roots alone are instrumented.
    fn plan(&self, options: &AgentOptions) -> PlanConfig {
        PlanConfig {
            roots: options.roots.clone(),
            scheme: Scheme::Lazy,
            filter: options.filter.clone(),
            skip_trivial: false,
            adaptive: false,
        }
    }

    fn open(&self, _ctx: &dyn Context, options: &AgentOptions) -> Box<dyn EngineSession> {
        extent::new_session();
        Box::new(SampleSession {
            interval: options.interval(),
            wall: options.wall,
            per_thread: options.threads,
            hybrid: !options.roots.is_empty(),
            chosen: Mutex::new(Vec::new()),
            root_names: RootNames::default(),
            collected: Arc::default(),
            running: Mutex::new(None),
        })
    }

    /// The root probes read no clock.
    #[inline(always)]
    fn ticks() -> u64 {
        0
    }

    #[inline(always)]
    fn enter(_env: *mut sys::JNIEnv, id: i32, _start: u64) {
        extent::enter(id)
    }

    #[inline(always)]
    fn exit(_env: *mut sys::JNIEnv, id: i32, _start: u64) {
        extent::exit(id)
    }
}

/// A running sampler and its drain.
struct Running {
    sampler: Sampler,
    stop: Arc<AtomicBool>,
    drain: JoinHandle<()>,
    perf_events: bool,
}

/// A sample session: its settings, the roots chosen, what the drain collected.
struct SampleSession {
    interval: Duration,
    wall: bool,
    per_thread: bool,
    hybrid: bool,
    /// Global ids of the roots, as chosen; named at the next tick.
    chosen: Mutex<Vec<u32>>,
    root_names: RootNames,
    collected: Arc<Mutex<Collected>>,
    running: Mutex<Option<Running>>,
}

impl SampleSession {
    fn config(&self) -> Config {
        let config = if self.wall {
            Config::wall(self.interval)
        } else {
            Config::cpu(self.interval)
        };
        // The JVM's own threads have no Java stack to show; a hybrid samples marked threads.
        config.threads(if self.hybrid {
            Threads::Marked
        } else {
            Threads::Java
        })
    }

    /// Names the roots chosen since the last call (the drain matches frames by name).
    fn name_roots(&self, ctx: &dyn Context) {
        let ids = std::mem::take(&mut *lock(&self.chosen));
        if ids.is_empty() {
            return;
        }
        let mut names = lock(&self.root_names);
        for id in ids {
            match ctx.method_name(id) {
                Some((class, method, descriptor)) => {
                    names.insert((class.replace('/', "."), method, descriptor));
                }
                None => lock(&self.chosen).push(id),
            }
        }
    }

    fn stop_sampling(&self) {
        let Some(running) = lock(&self.running).take() else {
            return;
        };
        let stats = running.sampler.stop();
        running.stop.store(true, Ordering::Release);
        running.drain.thread().unpark();
        if running.drain.join().is_err() {
            log::error!("sample: the drain thread panicked");
        }
        log::info!(
            "sample: stopped after {} samples ({} with a stack, {} lost)",
            stats.samples,
            stats.walked,
            stats.lost()
        );
    }

    fn sampling(&self, c: &Collected, perf_events: bool) -> Sampling {
        let stats = c.stats;
        let samples = c.trees.values().map(tree::Tree::samples).sum();
        Sampling {
            clock: if self.wall { "wall" } else { "cpu" }.to_owned(),
            interval_ns: self.interval.as_nanos() as u64,
            source: match (self.wall, perf_events) {
                (true, _) => "wall_thread",
                (false, true) => "perf_events",
                (false, false) => "timers",
            }
            .to_owned(),
            samples,
            walked: samples - c.without_stack.values().sum::<u64>(),
            without_stack: c
                .without_stack
                .iter()
                .map(|(k, v)| ((*k).to_owned(), *v))
                .collect(),
            lost: [("buffer_full".to_owned(), stats.buffer_full)]
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .collect(),
            roots: self.hybrid,
            outside_roots: if self.hybrid {
                stats.filtered + c.outside_roots
            } else {
                0
            },
            faults_contained: stats.faults_contained_total,
            record: None,
        }
    }
}

impl EngineSession for SampleSession {
    fn instruments(&self) -> Option<Instrumentation> {
        self.hybrid.then_some(Instrumentation {
            probes: ProbeKind::EntryExit,
            selection: Selection::Methods,
            leaves: false,
        })
    }

    fn method_chosen(&self, id: u32) {
        lock(&self.chosen).push(id);
    }

    /// Starts the sampler on this Java thread, and its drain.
    fn start(&self, ctx: &dyn Context, env: &JniEnv<'_>) {
        self.stop_sampling();
        *lock(&self.collected) = Collected::default();
        extent::clear_calls();
        self.name_roots(ctx);
        // The collector keeps the session's state (collecting or not) and its snapshots; the
        // probes record nothing into it.
        collector::start(None, None, None);
        let Some(vm) = ctx.vm() else {
            return;
        };
        let (sampler, samples) = match Sampler::start(vm, env, self.config()) {
            Ok(s) => s,
            Err(e) => {
                log::error!("sample: the sampler did not start: {e}");
                return;
            }
        };
        let stop = Arc::new(AtomicBool::new(false));
        let setup = drain::Setup {
            collected: Arc::clone(&self.collected),
            stop: Arc::clone(&stop),
            roots: self.hybrid.then(|| Arc::clone(&self.root_names)),
            per_thread: self.per_thread,
        };
        let perf_events = sampler.uses_perf_events();
        let spawned = std::thread::Builder::new()
            .name("ferrofluid-sampler".into())
            .spawn(move || drain::run(vm, samples, setup));
        match spawned {
            Ok(drain) => {
                log::info!(
                    "sample: {} clock every {:?} ({})",
                    if self.wall { "wall" } else { "cpu" },
                    self.interval,
                    if perf_events { "perf events" } else { "timers" }
                );
                *lock(&self.running) = Some(Running {
                    sampler,
                    stop,
                    drain,
                    perf_events,
                });
            }
            Err(e) => {
                sampler.stop();
                log::error!("sample: no drain thread: {e}");
            }
        }
    }

    fn stop(&self, _ctx: &dyn Context) {
        self.stop_sampling();
    }

    fn reset(&self, _ctx: &dyn Context) {
        let mut c = lock(&self.collected);
        c.trees.clear();
        c.without_stack.clear();
        c.outside_roots = 0;
        drop(c);
        extent::clear_calls();
    }

    fn tick(&self, ctx: &dyn Context) {
        self.name_roots(ctx);
    }

    fn snapshot(&self, ctx: &dyn Context, profile: &mut Profile) {
        let perf_events = lock(&self.running).as_ref().is_some_and(|r| r.perf_events);
        let c = lock(&self.collected);
        let (mut methods, ids) = c.methods.to_profile();
        let mut threads: Vec<(Group, ThreadProfile)> = c
            .trees
            .iter()
            .map(|(&group, t)| {
                let mut thread = new_thread(&c, group, t.to_profile(&ids));
                thread.overflow_calls = t.overflowed;
                (group, thread)
            })
            .collect();
        // The roots' exact calls, under the thread where their samples start.
        for (key, calls) in extent::calls() {
            let group = match self.per_thread {
                true => Group::Thread(key.tid(), key.generation()),
                false => Group::All,
            };
            for (id, n) in calls.into_iter().filter(|&(_, n)| n > 0) {
                let Some((class, method, descriptor)) = ctx.method_name(id) else {
                    continue;
                };
                let m = methods.intern(ferrofluid_profile::MethodInfo::from_internal(
                    &class,
                    &method,
                    &descriptor,
                ));
                let at = match threads.iter().position(|(g, _)| *g == group) {
                    Some(at) => at,
                    None => {
                        let empty = tree::Tree::default().to_profile(&[]);
                        threads.push((group, new_thread(&c, group, empty)));
                        threads.len() - 1
                    }
                };
                let tree = &mut threads[at].1.tree;
                let node = tree.child_or_insert(NodeId::ROOT, NodeKind::Method(m));
                tree.node_mut(node).calls += n;
            }
        }
        profile.mode = Mode::Sample;
        profile.extra_metrics = sampling::metrics();
        profile.methods = methods;
        profile.calibration = None;
        profile.cpu_calibration = None;
        profile.calibration_stats = None;
        profile.sampling = Some(self.sampling(&c, perf_events));
        profile.threads = threads.into_iter().map(|(_, t)| t).collect();
    }
}

/// The profile's thread of `group`.
fn new_thread(c: &Collected, group: Group, tree: ferrofluid_profile::CallTree) -> ThreadProfile {
    match group {
        Group::All => ThreadProfile::new("all threads", 0, tree),
        Group::Virtual => {
            let mut t = ThreadProfile::new("virtual threads", 0, tree);
            t.virtual_thread = true;
            t
        }
        Group::Thread(tid, generation) => match c.threads.get(&(tid, generation)) {
            Some(j) => ThreadProfile::new(j.name.clone(), j.id.max(0) as u64, tree),
            None => ThreadProfile::new(format!("tid {tid}"), 0, tree),
        },
    }
}

impl Drop for SampleSession {
    fn drop(&mut self) {
        self.stop_sampling();
    }
}
