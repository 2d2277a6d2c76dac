//! `cpu` mode with sampled timing: exact calls per calling context from the Java contexts
//! (`probe::contexts`: entry-exit probes calling `ferrofluid/Counts`, no clock read, no agent
//! call per event), times from the sampler charging each thread's CPU time (and elapsed time
//! with `wall`) to the context it is in. docs/modes/cpu.md, "Timing"; decision 0057.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use ferrofluid_classfile::{Instrumented, ProbeKind, Selection as Sites};
use ferrofluid_jvmti::JniEnv;
use ferrofluid_profile::metric::{Metric, COUNT};
use ferrofluid_profile::sampling::{RecordShare, Sampling, SELF_SAMPLES};
use ferrofluid_profile::{MethodInfo, Mode, NodeId, NodeKind, Profile};
use ferrofluid_protocol::{AgentOptions, Record};

use crate::engine::{ClassKey, Context, EngineSession, Instrumentation, Selection};
use crate::probe::collector;
use crate::probe::contexts::ffi::{self, JavaContext};
use crate::probe::contexts::sampler::{Charged, Sampler, Settings, STATES};
use crate::probe::contexts::{self, tree, Recordings};

use super::budget::{self, Budget};
use super::share;

/// What `Sampling::source` says the times came from.
const SOURCE: &str = "thread_clocks";

/// A sampled-timing session.
pub struct SampledSession {
    settings: Settings,
    /// No root: every thread counts.
    no_root: bool,
    /// `ferrofluid/Counts` is defined and bound.
    ready: bool,
    recordings: Recordings,
    sampler: Mutex<Option<Sampler>>,
    /// What the last sampler charged, once it stopped.
    charged: Mutex<Option<Charged>>,
    /// `adaptive`: the probes' cost budget, while collecting.
    adaptive: bool,
    budget: Mutex<Option<Budget>>,
    /// `record`: which root invocations are recorded, and its controller while collecting.
    record: Record,
    share: Mutex<Option<share::Control>>,
    /// What the controller did when collection stopped.
    share_state: Mutex<Option<share::State>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SampledSession {
    /// Defines `ferrofluid/Counts` on this (Java) thread, before planning.
    pub fn open(ctx: &dyn Context, options: &AgentOptions) -> SampledSession {
        let installed = ctx
            .vm()
            .ok_or_else(|| "no JVM".to_owned())
            .and_then(|vm| vm.jni_env().map_err(|e| e.to_string()))
            .and_then(|env| ffi::install(&env, ctx.jvmti()));
        if let Err(e) = &installed {
            log::error!("cpu (sampled timing): {e}; nothing is instrumented");
        }
        SampledSession {
            settings: Settings {
                interval: options.interval(),
                wall: options.wall,
            },
            no_root: options.roots.is_empty(),
            ready: installed.is_ok(),
            recordings: Recordings::default(),
            sampler: Mutex::new(None),
            charged: Mutex::new(None),
            adaptive: options.adaptive,
            budget: Mutex::new(None),
            record: options.record.unwrap_or(Record::All),
            share: Mutex::new(None),
            share_state: Mutex::new(None),
        }
    }

    /// A recording starts: the recording share's controller with it (roots only).
    fn start_share(&self) {
        *lock(&self.share_state) = None;
        if !self.no_root {
            *lock(&self.share) = Some(share::Control::start(self.record, Instant::now()));
        }
    }

    /// Collection stops: every root entry records again, and the controller's state is kept.
    fn stop_share(&self) {
        let control = lock(&self.share).take();
        if let Some(c) = control {
            *lock(&self.share_state) = Some(c.state());
        }
        crate::probe::share::set_open(crate::probe::share::ALL);
        crate::probe::share::set_measuring(false);
    }

    /// `adaptive`: when due, weighs the calls counted since the last look against the CPU
    /// time charged inside roots, and drops the probes over budget.
    fn keep_budget(&self, ctx: &dyn Context) {
        if !budget::due(&self.budget) {
            return;
        }
        let read = ctx
            .vm()
            .and_then(|vm| vm.with_attached_thread("ferrofluid-adaptive", ffi::read).ok())
            .flatten();
        let Some((contexts, _)) = read else {
            return;
        };
        let mut calls: HashMap<u32, u64> = HashMap::new();
        for c in &contexts {
            for (&m, &n) in c.method.iter().zip(&c.calls) {
                if m >= 0 && n > 0 {
                    *calls.entry(m as u32).or_default() += n as u64;
                }
            }
        }
        let busy_ns = match lock(&self.sampler).as_ref() {
            Some(s) => s.charged().cpu_ns(),
            None => return,
        };
        budget::look(&self.budget, ctx, calls, busy_ns);
    }

    fn stop_sampler(&self) {
        let sampler = lock(&self.sampler).take();
        if let Some(mut s) = sampler {
            s.stop();
            *lock(&self.charged) = Some(s.charged());
        }
    }

    /// What was charged: the running sampler's so far, else the last one's.
    fn charged(&self) -> Charged {
        if let Some(s) = lock(&self.sampler).as_ref() {
            return s.charged();
        }
        lock(&self.charged).clone().unwrap_or_default()
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
        if let Err(e) = contexts::on_java_thread(ctx.vm(), "ferrofluid-cpu", f) {
            log::warn!("cpu (sampled timing): {what}: {e}");
        }
    }
}

impl EngineSession for SampledSession {
    /// Entry-exit probes keeping the contexts in Java; nothing if `ferrofluid/Counts` could not
    /// be defined.
    fn instruments(&self) -> Option<Instrumentation> {
        self.ready.then_some(Instrumentation {
            probes: ProbeKind::EntryExit,
            selection: Selection::CallSubgraph,
            leaves: true,
        })
    }

    /// The probes call `ferrofluid/Counts`, the context passed from entry to exit in a local.
    fn instrument<'a>(
        &self,
        _class: &ClassKey,
        bytes: &'a [u8],
        probes: ProbeKind,
        sites: &mut dyn Sites,
    ) -> ferrofluid_classfile::Result<Instrumented<'a>> {
        contexts::instrument(bytes, probes, sites)
    }

    /// Fresh contexts from now on, and a sampler charging them.
    fn start(&self, ctx: &dyn Context, env: &JniEnv<'_>) {
        self.stop_sampler();
        *lock(&self.charged) = None;
        collector::start(None, None, None);
        if !self.ready {
            return;
        }
        if let Err(e) = self.recordings.start(env, self.no_root) {
            log::error!("cpu (sampled timing): {e}");
            return;
        }
        self.start_share();
        let (Some(vm), Some(jvmti)) = (ctx.vm(), ctx.jvmti()) else {
            return;
        };
        match Sampler::start(vm, jvmti, self.settings) {
            Ok(s) => {
                log::info!(
                    "cpu: sampled timing, {} every {:?}",
                    if self.settings.wall {
                        "CPU and elapsed time"
                    } else {
                        "CPU time"
                    },
                    self.settings.interval
                );
                *lock(&self.sampler) = Some(s);
                if self.adaptive {
                    *lock(&self.budget) = Some(Budget::new());
                }
            }
            Err(e) => log::error!("cpu (sampled timing): {e}; calls only"),
        }
    }

    fn stop(&self, ctx: &dyn Context) {
        self.stop_share();
        *lock(&self.budget) = None;
        self.stop_sampler();
        self.with_java(ctx, "stopping", ffi::stop);
    }

    fn reset(&self, ctx: &dyn Context) {
        self.with_java(ctx, "restarting", |env| {
            self.recordings.start(env, self.no_root)
        });
        let sharing = lock(&self.share).is_some();
        if sharing {
            self.start_share();
        }
        if let Some(s) = lock(&self.sampler).as_ref() {
            s.reset();
        }
        *lock(&self.charged) = None;
        if let Some(b) = lock(&self.budget).as_mut() {
            *b = Budget::new();
        }
    }

    fn tick(&self, ctx: &dyn Context) {
        if let Some(c) = lock(&self.share).as_mut() {
            c.tick(Instant::now());
        }
        if self.adaptive {
            self.keep_budget(ctx);
        }
    }

    fn snapshot(&self, ctx: &dyn Context, profile: &mut Profile) {
        let read = ctx
            .vm()
            .and_then(|vm| vm.with_attached_thread("ferrofluid-cpu", ffi::read).ok())
            .flatten();
        let (contexts, dropped) = read.unwrap_or_default();
        if dropped > 0 {
            log::warn!("cpu: {dropped} threads did not count (too many threads in one recording)");
        }
        let charged = self.charged();
        snapshot_into(profile, contexts, &charged, self.settings, |id| {
            ctx.method_name(id)
        });
        if let Some(s) = profile.sampling.as_mut() {
            s.roots = !self.no_root;
            if !self.no_root {
                let state = lock(&self.share)
                    .as_ref()
                    .map(|c| c.state())
                    .or(*lock(&self.share_state))
                    .unwrap_or_default();
                let (seen, recorded) = crate::probe::share::counts();
                s.record = Some(RecordShare {
                    policy: self.record.name(),
                    root_invocations: seen,
                    recorded,
                    open_per_mille: state.open,
                    cost_ratio: state.cost_ratio,
                });
            }
        }
        for id in ctx.dropped_ids() {
            if let Some((class, name, descriptor)) = ctx.method_name(id) {
                let m = profile
                    .methods
                    .intern(MethodInfo::from_internal(&class, &name, &descriptor));
                profile.probes_dropped.insert(m);
            }
        }
    }
}

impl Drop for SampledSession {
    fn drop(&mut self) {
        self.stop_sampler();
    }
}

/// The metric of a node's own samples.
fn samples_metric() -> Metric {
    Metric::new(SELF_SAMPLES, COUNT)
}

/// Fills `profile` with the contexts' trees, exact calls and sampled times: `total_ns` the
/// node's elapsed time with `wall`, else its CPU time, callees included; with `wall`, `cpu_ns`
/// too and the off-CPU time in `[state]` children; a side-table column of own samples.
fn snapshot_into(
    profile: &mut Profile,
    contexts: Vec<JavaContext>,
    charged: &Charged,
    settings: Settings,
    name_of: impl Fn(u32) -> Option<(String, String, String)>,
) {
    let (mut methods, built) = tree::build(contexts, 1, name_of);
    let states: Vec<NodeKind> = STATES
        .iter()
        .map(|s| NodeKind::Method(methods.intern(MethodInfo::new(*s, "", ""))))
        .collect();
    let natives: Vec<NodeKind> = charged
        .native_methods
        .iter()
        .map(|(class, name, descriptor)| {
            NodeKind::Method(methods.intern(MethodInfo::from_internal(class, name, descriptor)))
        })
        .collect();
    let mut threads = Vec::with_capacity(built.len());
    for (mut b, _) in built {
        let times = charged
            .contexts
            .get(b.context.order as usize)
            .map(|c| c.nodes.as_slice())
            .unwrap_or_default();
        let tree = &mut b.thread.tree;
        // Own times first, then totals bottom-up (a child's id is past its parent's).
        let mut own_cpu = vec![0u64; tree.len()];
        for (ours, t) in times.iter().enumerate() {
            let Some(Some(id)) = b.node_of.get(ours).copied() else {
                continue;
            };
            if id == NodeId::ROOT {
                continue;
            }
            tree.extra_mut(id)[0] += t.samples;
            own_cpu[id.index()] += t.cpu_ns;
            tree.node_mut(id).total_ns += if settings.wall { t.wall_ns } else { t.cpu_ns };
            if settings.wall {
                for (s, &kind) in states.iter().enumerate() {
                    if t.off_ns[s] == 0 && t.off_samples[s] == 0 {
                        continue;
                    }
                    let child = tree.child_or_insert(id, kind);
                    tree.node_mut(child).total_ns += t.off_ns[s];
                    tree.extra_mut(child)[0] += t.off_samples[s];
                }
            }
            // Native methods have no probes: their frames have samples and time, no calls.
            for n in &t.natives {
                let Some(&kind) = natives.get(n.method as usize) else {
                    continue;
                };
                let child = tree.child_or_insert(id, kind);
                tree.node_mut(child).total_ns += if settings.wall { n.wall_ns } else { n.cpu_ns };
                tree.extra_mut(child)[0] += n.samples;
                if own_cpu.len() <= child.index() {
                    own_cpu.resize(child.index() + 1, 0);
                }
                own_cpu[child.index()] += n.cpu_ns;
            }
        }
        own_cpu.resize(tree.len(), 0);
        let mut cpu = own_cpu;
        for id in tree.ids().rev().filter(|&id| id != NodeId::ROOT) {
            let Some(parent) = tree.node(id).parent() else {
                continue;
            };
            let (total, c) = (tree.node(id).total_ns, cpu[id.index()]);
            tree.node_mut(parent).total_ns += total;
            cpu[parent.index()] += c;
        }
        if settings.wall {
            for id in tree.ids() {
                tree.node_mut(id).cpu_ns = Some(cpu[id.index()]);
            }
            b.thread.cpu_ns = Some(cpu[NodeId::ROOT.index()]);
        }
        threads.push(b.thread);
    }
    profile.methods = methods;
    profile.probes_dropped.clear();
    profile.mode = Mode::Cpu;
    profile.extra_metrics = vec![samples_metric()];
    profile.calibration = None;
    profile.cpu_calibration = None;
    profile.calibration_stats = None;
    profile.sampling = Some(Sampling {
        clock: if settings.wall { "wall" } else { "cpu" }.to_owned(),
        interval_ns: settings.interval.as_nanos() as u64,
        source: SOURCE.to_owned(),
        samples: charged.samples,
        walked: charged.samples,
        without_stack: [("without_cpu_clock".to_owned(), charged.without_clock)]
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .collect(),
        lost: [("agent_work".to_owned(), charged.agent_work)]
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .collect(),
        roots: true,
        outside_roots: charged.outside,
        faults_contained: 0,
        record: None,
    });
    profile.threads = threads;
}

/// The default interval, for the tests.
#[cfg(test)]
const TEN_MS: std::time::Duration = std::time::Duration::from_millis(10);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::contexts::sampler::{ContextTime, NativeTime, NodeTime};

    fn names(id: u32) -> Option<(String, String, String)> {
        Some(("demo/A".into(), format!("m{id}"), "()V".into()))
    }

    fn context() -> JavaContext {
        // root -> m1 -> m2
        JavaContext {
            name: "main".into(),
            java_id: 1,
            method: vec![-1, 1, 2],
            parent: vec![0, 0, 1],
            calls: vec![0, 1, 4],
            bytecodes: vec![0, 0, 0],
            ..JavaContext::default()
        }
    }

    fn charged() -> Charged {
        let mut blocked = NodeTime {
            samples: 1,
            cpu_ns: 1_000,
            wall_ns: 1_000,
            ..NodeTime::default()
        };
        blocked.off_ns[4] = 30_000;
        blocked.off_samples[4] = 3;
        let mut c = ContextTime::default();
        c.nodes = vec![
            NodeTime::default(),
            NodeTime {
                samples: 2,
                cpu_ns: 20_000,
                wall_ns: 20_000,
                ..NodeTime::default()
            },
            blocked,
        ];
        let mut charged = Charged::default();
        charged.contexts = vec![c];
        charged.samples = 6;
        charged.outside = 2;
        charged
    }

    /// The CPU-time profile of [`context`] with `charged`, and its nodes below the thread:
    /// frame, calls, total time, own samples.
    fn cpu_rows(charged: &Charged) -> (Profile, Vec<(String, u64, u64, u64)>) {
        let mut p = Profile::default();
        let cpu_only = Settings {
            interval: TEN_MS,
            wall: false,
        };
        snapshot_into(&mut p, vec![context()], charged, cpu_only, names);
        let tree = &p.threads[0].tree;
        let rows = tree
            .walk()
            .into_iter()
            .skip(1)
            .map(|(id, _)| {
                let n = tree.node(id);
                let m = p.methods.get(n.method().unwrap()).unwrap();
                (m.frame_name(), n.calls, n.total_ns, tree.extra(id)[0])
            })
            .collect();
        (p, rows)
    }

    /// Calls come from the contexts, times from what the sampler charged: own CPU time per
    /// node, totals with the callees'; with `wall`, off-CPU time in a `[state]` child.
    #[test]
    fn contexts_and_charges_make_one_tree() {
        let (mut p, rows) = cpu_rows(&charged());
        assert_eq!(
            rows,
            [
                ("demo.A.m1".into(), 1, 21_000, 2),
                ("demo.A.m2".into(), 4, 1_000, 1)
            ]
        );
        let s = p.sampling.as_ref().unwrap();
        assert_eq!((s.clock.as_str(), s.samples, s.outside_roots), ("cpu", 6, 2));

        let wall = Settings {
            interval: TEN_MS,
            wall: true,
        };
        snapshot_into(&mut p, vec![context()], &charged(), wall, names);
        let tree = &p.threads[0].tree;
        let rows: Vec<(String, u64, Option<u64>, u64)> = tree
            .walk()
            .into_iter()
            .skip(1)
            .map(|(id, _)| {
                let n = tree.node(id);
                let m = p.methods.get(n.method().unwrap()).unwrap();
                let name = format!("{}{}", m.class, m.method);
                (name, n.total_ns, n.cpu_ns, tree.extra(id)[0])
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("demo.Am1".into(), 51_000, Some(21_000), 2),
                ("demo.Am2".into(), 31_000, Some(1_000), 1),
                ("[blocked: native]".into(), 30_000, Some(0), 3),
            ]
        );
        assert_eq!(p.threads[0].cpu_ns, Some(21_000));
    }

    /// CPU time in a native method called from a node is a child frame of that node, named
    /// as the method, with its samples and time and no calls (it has no probes).
    #[test]
    fn native_methods_are_frames_with_samples_and_no_calls() {
        let mut charged = charged();
        charged.native_methods = vec![(
            "java/util/zip/Deflater".into(),
            "deflateBytesBytes".into(),
            "(J[BII[BIIII)I".into(),
        )];
        charged.contexts[0].nodes[2].natives = vec![NativeTime {
            method: 0,
            samples: 5,
            cpu_ns: 50_000,
            wall_ns: 52_000,
        }];
        assert_eq!(
            cpu_rows(&charged).1,
            [
                ("demo.A.m1".into(), 1, 71_000, 2),
                ("demo.A.m2".into(), 4, 51_000, 1),
                ("java.util.zip.Deflater.deflateBytesBytes".into(), 0, 50_000, 5),
            ]
        );
    }
}
