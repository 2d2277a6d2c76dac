//! The events: execution and allocation samples, a calling-context event per node, a region event
//! per region method.

use ferrofluid_profile::metric::{BYTES, NANOSECONDS, TIME};
use ferrofluid_profile::{MethodInfo, Metric, Mode, NodeKind, Profile, RegionStats, Value};

use crate::jfr::encode::Buf;
use crate::jfr::metadata::{id, metric_fields};
use crate::jfr::pools::{Pools, STATE_RUNNABLE};

/// The events written so far, and the latest tick of any thread's samples.
#[derive(Default)]
pub(crate) struct Events {
    pub(crate) out: Buf,
    pub(crate) end_tick: u64,
}

/// What a context's samples stand for: the indexes of the profile's metrics of time, of samples
/// taken (a sampling profile's samples are samples already) and of allocated bytes (`alloc`).
pub(crate) struct Weights {
    time: Option<usize>,
    taken: Option<usize>,
    bytes: Option<usize>,
    alloc: bool,
}

impl Weights {
    pub(crate) fn of(profile: &Profile, metrics: &[Metric]) -> Weights {
        let alloc = profile.mode == Mode::Alloc;
        Weights {
            time: profile
                .metric_index(TIME)
                .filter(|&i| metrics[i].unit == NANOSECONDS),
            taken: (profile.mode == Mode::Sample)
                .then(|| profile.metric_index("samples"))
                .flatten(),
            bytes: profile.metric_index(BYTES).filter(|_| alloc),
            alloc,
        }
    }
}

/// Where a node's events point: its thread, its stack trace (0: none) and, for an allocated
/// class's node, the class (else 0).
#[derive(Clone, Copy)]
struct At {
    thread: u64,
    stack: u64,
    class: u64,
}

impl Events {
    fn push(&mut self, body: &Buf) {
        self.out.event(&body.0);
    }

    /// `n` execution samples of `stack` on `thread`, `period` apart from `tick`; the tick after
    /// them.
    fn execution_samples(
        &mut self,
        thread: u64,
        stack: u64,
        n: u64,
        mut tick: u64,
        period: u64,
    ) -> u64 {
        for _ in 0..n {
            let mut b = Buf::default();
            b.varint(id::EXECUTION_SAMPLE)
                .varint(tick)
                .varint(thread)
                .varint(stack)
                .varint(STATE_RUNNABLE);
            self.push(&b);
            tick += period;
        }
        tick
    }

    /// A code-region profile's: each region method's own time as execution samples of a stack
    /// of itself alone, and its `ferrofluid.Region` event.
    pub(crate) fn regions(&mut self, pools: &mut Pools, regions: &[RegionStats], period: u64) {
        pools.threads.push(("all threads".to_owned(), 0, false));
        let mut tick = 0u64;
        for r in regions {
            let method = pools.method(&r.class, &r.method, &r.descriptor);
            let own = r.total_ns.saturating_sub(r.nested_ns);
            let stack = pools.stacks.key(vec![method]);
            tick = self.execution_samples(1, stack, samples(own, period), tick, period);
            let mut b = Buf::default();
            b.varint(id::REGION).varint(0).varint(method);
            for v in [
                r.count,
                r.threads,
                r.total_ns,
                r.nested_ns,
                r.min_ns,
                r.max_ns,
                r.percentiles.p50_ns,
                r.percentiles.p90_ns,
                r.percentiles.p99_ns,
                r.percentiles.p999_ns,
            ] {
                b.varint(v);
            }
            self.push(&b);
        }
        self.end_tick = tick;
    }

    /// Thread `t`'s: its samples and a calling-context event per node, depth first.
    pub(crate) fn thread(
        &mut self,
        pools: &mut Pools,
        profile: &Profile,
        t: usize,
        metrics: &[Metric],
        weights: &Weights,
        period: u64,
    ) {
        let thread = &profile.threads[t];
        let thread_key = t as u64 + 1;
        pools
            .threads
            .push((thread.name.clone(), thread.id, thread.virtual_thread));
        let tree = &thread.tree;
        let values: Vec<Vec<Value>> = (0..metrics.len())
            .map(|i| profile.metric_values(tree, i))
            .collect();
        // Per node: its stack's frames and, for an allocated class's node, the class key.
        let mut stacks: Vec<(Vec<u64>, u64)> = vec![(Vec::new(), 0); tree.len()];
        let mut tick = 0u64;
        // The thread's own time (a native profile's bytecode outside every native frame):
        // samples without a stack trace.
        if let (Some(t), None) = (weights.time, weights.taken) {
            let own = values[t][ferrofluid_profile::NodeId::ROOT.index()].self_value;
            tick = self.execution_samples(thread_key, 0, samples(own, period), tick, period);
        }
        for (id, _) in tree.walk() {
            let node = tree.node(id);
            let Some(parent) = node.parent() else {
                continue;
            };
            let parent_frames = stacks[parent.index()].0.clone();
            let allocated = match node.kind {
                NodeKind::Method(m) => profile
                    .methods
                    .get(m)
                    .filter(|i| i.method.is_empty())
                    .map(|i: &MethodInfo| pools.class(&i.class)),
                _ => None,
            };
            let (frames, class_key) = match allocated {
                Some(c) => (parent_frames, c),
                None => {
                    let mut f = Vec::with_capacity(parent_frames.len() + 1);
                    f.push(pools.frame(profile, node.kind));
                    f.extend_from_slice(&parent_frames);
                    (f, 0)
                }
            };
            let stack = if frames.is_empty() {
                0
            } else {
                pools.stacks.key(frames.clone())
            };
            let own: Vec<Value> = values.iter().map(|v| v[id.index()]).collect();
            let n = match (weights.time, weights.taken) {
                (_, Some(s)) => own[s].self_value,
                (Some(t), None) => samples(own[t].self_value, period),
                (None, None) => 0,
            };
            tick = self.execution_samples(thread_key, stack, n, tick, period);
            let at = At {
                thread: thread_key,
                stack,
                class: class_key,
            };
            self.node_events(at, metrics, &own, weights);
            stacks[id.index()] = (frames, class_key);
        }
        self.end_tick = self.end_tick.max(tick);
    }

    /// A node's allocation sample (its bytes, if any) and its calling-context event with `own`,
    /// its values of `metrics`.
    fn node_events(&mut self, at: At, metrics: &[Metric], own: &[Value], weights: &Weights) {
        if let Some(bytes) = weights.bytes {
            if own[bytes].self_value > 0 {
                let mut b = Buf::default();
                b.varint(id::OBJECT_ALLOCATION_SAMPLE)
                    .varint(0)
                    .varint(at.thread)
                    .varint(at.stack)
                    .varint(at.class)
                    .varint(own[bytes].self_value);
                self.push(&b);
            }
        }
        let mut b = Buf::default();
        b.varint(id::CALLING_CONTEXT)
            .varint(0)
            .varint(at.thread)
            .varint(at.stack);
        if weights.alloc {
            b.varint(at.class);
        }
        for (m, v) in metrics.iter().zip(own) {
            b.varint(v.self_value);
            if metric_fields(m).1.is_some() {
                b.varint(v.total);
            }
        }
        self.push(&b);
    }
}

/// Execution samples for `self_ns` of self time: rounded to the nearest period.
pub(crate) fn samples(self_ns: u64, period: u64) -> u64 {
    self_ns / period + u64::from(self_ns % period >= period.div_ceil(2))
}
