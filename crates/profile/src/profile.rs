//! A whole profile: its mode and metrics, method table, calibration and one tree per thread.

use std::collections::{BTreeSet, HashMap};

use crate::calibration::{node_cpu_times, node_times, Calibration, CpuTimes, Times};
use crate::compensation::{
    calibration_verdict, measured_probes, mostly_estimate, CalibrationStats, Unreliable,
};
use crate::method::{MethodId, MethodTable};
use crate::metric::{
    add_spots, summed, Metric, MetricSpot, MetricTotals, Slot, Value, CALLS, CPU_TIME, NANOSECONDS,
};
use crate::mode::Mode;
use crate::tree::{CallTree, NodeId, NodeKind};

/// How a thread was found blocked when the profile was taken: the evidence that the self time
/// of its innermost recorded frame is waiting, not work (docs/decisions/0018-idle-threads.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    /// `waiting` (`Object.wait`), `parked` (`LockSupport.park`), `sleeping` (`Thread.sleep`),
    /// `blocked` (entering a monitor) or `native` (in a native method known to block: a socket
    /// read, accept, poll or epoll wait).
    pub state: String,
    /// The method on top of its stack, `java.lang.Object.wait`.
    pub frame: String,
    /// Its innermost recorded frame, whose self time is the wait; `None` when it had none.
    pub node: Option<NodeId>,
}

/// One profiled thread.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadProfile {
    /// Java thread name.
    pub name: String,
    /// Thread id (the Java thread id when known).
    pub id: u64,
    /// Thread CPU time over the whole recording, ns, when requested.
    pub cpu_ns: Option<u64>,
    /// The calling context tree.
    pub tree: CallTree,
    /// Invocations counted in overflow nodes because the node budget ran out.
    pub overflow_calls: u64,
    /// Exit events that matched no open frame.
    pub unmatched_exits: u64,
    /// Events the profiler lost (its buffer for this thread stayed full): when non-zero,
    /// this thread's counts and times are inexact.
    pub dropped_events: u64,
    /// Set when the thread was found blocked when the profile was taken: it is idle there.
    pub waiting: Option<Waiting>,
    /// A virtual thread (JDK 21+), or the merge of virtual threads past the recording's cap
    /// ([`crate::Recording::max_virtual_threads`]).
    pub virtual_thread: bool,
    /// How long the thread was alive while the profile recorded, when the mode measures it
    /// (`native`: a thread's bytecode time is this less its native time).
    pub alive: Option<Alive>,
}

/// A thread's time alive while a profile recorded: from the recording's start (or the thread's,
/// if later) to the snapshot (or the thread's end).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Alive {
    /// Elapsed time, ns.
    pub wall_ns: u64,
    /// The thread's CPU time over the same span, ns, when thread CPU times were asked for.
    pub cpu_ns: Option<u64>,
}

impl ThreadProfile {
    /// A thread with an empty tree.
    pub fn new(name: impl Into<String>, id: u64, tree: CallTree) -> Self {
        Self {
            name: name.into(),
            id,
            cpu_ns: None,
            tree,
            overflow_calls: 0,
            unmatched_exits: 0,
            dropped_events: 0,
            waiting: None,
            virtual_thread: false,
            alive: None,
        }
    }

    /// Sets how long the thread was alive while the profile recorded, and makes that its
    /// thread node's time (and CPU time) where its tree measured less: the thread's own time
    /// is then what ran outside every frame, in every view and format.
    pub fn set_alive(&mut self, alive: Alive) {
        self.alive = Some(alive);
        let root = self.tree.node_mut(NodeId::ROOT);
        root.total_ns = root.total_ns.max(alive.wall_ns);
        if let Some(c) = alive.cpu_ns {
            let c = root.cpu_ns.unwrap_or(0).max(c);
            root.cpu_ns = Some(c);
            self.cpu_ns = Some(c);
        }
    }
}

/// A profile of a call subgraph: what its mode measures, per calling context.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Profile {
    /// What was measured; set by whoever builds the profile (the default is [`Mode::Cpu`]).
    pub mode: Mode,
    /// The metrics its trees carry beyond the mode's own ([`Mode::inline_metrics`]), in the
    /// order of their columns in the trees' side tables ([`CallTree::extra`]); empty for a CPU
    /// profile. [`Profile::metrics`] lists them all.
    pub extra_metrics: Vec<crate::metric::Metric>,
    /// Names of the methods the trees refer to.
    pub methods: MethodTable,
    /// Number of methods that carried probes (JFluid's "instrumented").
    pub instrumented: u64,
    /// Methods left uninstrumented as trivial (the `skip-trivial` option): their time is in
    /// their callers' self time, their calls are not counted.
    pub trivial_skipped: u64,
    /// JDK classes left uninstrumented as inlined into much of the JVM's compiled code
    /// (sampled timing at an attach, unless `instrument-inlined`), dotted names: their calls are
    /// not counted, their time is their callers' self time.
    pub inlined_left_alone: Vec<String>,
    /// Methods whose probes were removed while the program ran (the `adaptive` option): called
    /// often and shorter than their probes. Their nodes count the calls before; later calls are
    /// in their callers' self time.
    pub probes_dropped: BTreeSet<MethodId>,
    /// Probe costs to subtract; `None` reports measured times.
    pub calibration: Option<Calibration>,
    /// The probe pair's thread CPU costs, subtracted from CPU times (`cpu` option); `None`
    /// reports measured CPU times.
    pub cpu_calibration: Option<Calibration>,
    /// What the calibration saw (batches left out, their spread, a cap applied): what
    /// [`Profile::unreliable`] judges the compensation by. `None`: not known.
    pub calibration_stats: Option<crate::compensation::CalibrationStats>,
    /// Per-thread trees, in report order.
    pub threads: Vec<ThreadProfile>,
    /// Code-region mode ([`Mode::Region`]): the region methods' measurements (then `threads`
    /// is empty and `calibration` is that of the region probes); `None` in other modes.
    pub regions: Option<Vec<crate::region::RegionStats>>,
    /// Classes that could not be instrumented or restored (or were skipped as none of their
    /// code can run), in the order met.
    pub failed_classes: Vec<crate::failed::FailedClass>,
    /// Allocation mode ([`Mode::Alloc`]): per class and per site counts, ages, leak suspects.
    pub alloc: Option<crate::alloc::AllocSummary>,
    /// Native mode ([`Mode::Native`]): which nodes are native frames, the natives not measured.
    pub native: Option<crate::native::NativeSummary>,
    /// Sample mode ([`Mode::Sample`]): how it sampled and what was lost.
    pub sampling: Option<crate::sampling::Sampling>,
}

/// Hot-spot line: one method (or the overflow bucket) summed over all its contexts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotSpot {
    /// [`NodeKind::Method`] or [`NodeKind::Overflow`].
    pub kind: NodeKind,
    /// Self time over all contexts, ns.
    pub self_ns: u64,
    /// Time including callees, ns; recursive invocations are counted once (only the
    /// outermost context on each path contributes).
    pub total_ns: u64,
    /// Invocations.
    pub calls: u64,
    /// Probe cost subtracted from the self time, ns (0 when not compensated).
    pub overhead_ns: u64,
    /// Probe cost subtracted in the subtrees counted in `total_ns`, ns.
    pub total_overhead_ns: u64,
    /// Thread CPU time, summed as `self_ns` and `total_ns` are, when measured (`cpu` option).
    pub cpu: Option<CpuTimes>,
}

impl HotSpot {
    /// The self time is mostly probe cost ([`crate::probe_dominated`]).
    pub fn self_uncertain(&self) -> bool {
        crate::calibration::rest_dominated(self.self_ns, self.overhead_ns)
    }

    /// The same for the total.
    pub fn total_uncertain(&self) -> bool {
        crate::calibration::rest_dominated(self.total_ns, self.total_overhead_ns)
    }

    /// Average self time per invocation, ns.
    pub fn avg_self_ns(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.self_ns as f64 / self.calls as f64
        }
    }
}

impl Profile {
    /// An empty profile of `mode`.
    pub fn new(mode: Mode) -> Self {
        Self {
            mode,
            ..Self::default()
        }
    }

    /// Number of distinct methods that appear (with at least one call, or another metric's
    /// value) in some tree: JFluid's "called" (in code-region mode: region methods with an
    /// invocation).
    pub fn called(&self) -> u64 {
        if let Some(regions) = &self.regions {
            return regions.iter().filter(|r| r.count > 0).count() as u64;
        }
        let mut seen = BTreeSet::new();
        for t in &self.threads {
            for id in t.tree.ids() {
                let n = t.tree.node(id);
                let counted = n.calls > 0 || t.tree.extra(id).iter().any(|&v| v > 0);
                if let (Some(m), true) = (n.method(), counted) {
                    seen.insert(m);
                }
            }
        }
        seen.len() as u64
    }

    /// All threads merged into one tree (same contexts summed).
    pub fn merged(&self) -> CallTree {
        let mut all = CallTree::new();
        for t in &self.threads {
            all.merge(&t.tree);
        }
        all
    }

    /// Times of every node of `tree`, compensated with this profile's calibration.
    pub fn times(&self, tree: &CallTree) -> Vec<Times> {
        node_times(tree, self.calibration.as_ref())
    }

    /// CPU times of every node of `tree` that has them, compensated with this profile's
    /// CPU calibration, none above its node's compensated wall time.
    pub fn cpu_times(&self, tree: &CallTree) -> Vec<Option<CpuTimes>> {
        let wall = self.times(tree);
        node_cpu_times(tree, self.cpu_calibration.as_ref(), Some(&wall))
    }

    /// Whether any thread has CPU times (the `cpu` option was on).
    pub fn has_cpu(&self) -> bool {
        self.threads.iter().any(|t| t.cpu_ns.is_some())
    }

    /// Hot spots over all threads, by self time (descending), then calls (descending),
    /// then method id; the overflow bucket, if any, sorts like a method. Summed over the
    /// threads' own trees, idle time included ([`Profile::totals`]).
    pub fn hot_spots(&self) -> Vec<HotSpot> {
        self.totals(true).hot_spots
    }
}

/// The profile's metrics (docs/decisions/0024-metrics-model.md): which it has, each node's value,
/// totals and hot spots over all of them.
impl Profile {
    /// Every metric of this profile, in column order: the mode's own
    /// ([`Mode::inline_metrics`]; `cpu_time` when a CPU or native profile has thread CPU
    /// times), then [`Profile::extra_metrics`].
    pub fn metrics(&self) -> Vec<Metric> {
        self.slots().into_iter().map(|(m, _)| m).collect()
    }

    /// [`Profile::metrics`] with where nodes keep each.
    pub fn slots(&self) -> Vec<(Metric, Slot)> {
        let mut slots: Vec<(Metric, Slot)> = self
            .mode
            .inline_metrics()
            .iter()
            .map(|&(name, unit)| {
                let slot = if name == CALLS {
                    Slot::Calls
                } else {
                    Slot::Time
                };
                (Metric::new(name, unit), slot)
            })
            .collect();
        if self.mode.is_probe_timed() && self.has_cpu() {
            slots.push((Metric::new(CPU_TIME, NANOSECONDS), Slot::CpuTime));
        }
        // A sample profile with roots counts the roots' calls exactly.
        if self.mode == Mode::Sample && self.sampling.as_ref().is_some_and(|s| s.roots) {
            slots.insert(0, (Metric::new(CALLS, crate::metric::COUNT), Slot::Calls));
        }
        slots.extend(
            self.extra_metrics
                .iter()
                .enumerate()
                .map(|(i, m)| (m.clone(), Slot::Extra(i))),
        );
        slots
    }

    /// The index in [`Profile::metrics`] of the metric named `name`.
    pub fn metric_index(&self, name: &str) -> Option<usize> {
        self.metrics().iter().position(|m| m.name == name)
    }

    /// The index of the mode's primary metric ([`Mode::primary_metric`]), else the first
    /// metric; `None` when the profile has none.
    pub fn primary_metric(&self) -> Option<usize> {
        self.metric_index(self.mode.primary_metric())
            .or_else(|| (!self.metrics().is_empty()).then_some(0))
    }

    /// The values of metric `index` of [`Profile::metrics`] for every node of `tree` (all 0
    /// for an index out of range). Times are compensated as [`Profile::times`] does.
    pub fn metric_values(&self, tree: &CallTree, index: usize) -> Vec<Value> {
        match self.slots().get(index).map(|&(_, s)| s) {
            Some(slot) => self.slot_values(tree, slot),
            None => vec![Value::default(); tree.len()],
        }
    }

    fn slot_values(&self, tree: &CallTree, slot: Slot) -> Vec<Value> {
        match slot {
            Slot::Time => self
                .times(tree)
                .iter()
                .map(|t| Value {
                    self_value: t.self_ns,
                    total: t.total_ns,
                })
                .collect(),
            Slot::CpuTime => self
                .cpu_times(tree)
                .iter()
                .map(|c| {
                    c.map_or_else(Value::default, |c| Value {
                        self_value: c.self_ns,
                        total: c.total_ns,
                    })
                })
                .collect(),
            Slot::Calls => summed(tree, |id| tree.node(id).calls),
            Slot::Extra(i) => summed(tree, |id| tree.extra(id).get(i).copied().unwrap_or(0)),
        }
    }

    /// Totals and hot spots over every metric ([`MetricTotals`]).
    pub fn metric_totals(&self) -> MetricTotals {
        let slots = self.slots();
        let threads: Vec<Vec<Vec<Value>>> = self
            .threads
            .iter()
            .map(|t| {
                slots
                    .iter()
                    .map(|&(_, s)| self.slot_values(&t.tree, s))
                    .collect()
            })
            .collect();
        let totals = (0..slots.len())
            .map(|i| {
                threads
                    .iter()
                    .map(|t| t[i][NodeId::ROOT.index()].total)
                    .sum()
            })
            .collect();
        let mut by_kind: HashMap<NodeKind, MetricSpot> = HashMap::new();
        for (thread, values) in self.threads.iter().zip(&threads) {
            add_spots(&thread.tree, values, &mut by_kind);
        }
        let primary = self.primary_metric().unwrap_or(0);
        let mut hot_spots: Vec<MetricSpot> = by_kind.into_values().collect();
        hot_spots.sort_by(|a, b| {
            let own = |s: &MetricSpot, i: usize| s.values.get(i).map_or(0, |v| v.self_value);
            let mut order = own(b, primary).cmp(&own(a, primary));
            for i in 0..slots.len() {
                order = order.then(own(b, i).cmp(&own(a, i)));
            }
            order.then(a.kind.tie_order().cmp(&b.kind.tie_order()))
        });
        MetricTotals {
            metrics: slots.into_iter().map(|(m, _)| m).collect(),
            primary,
            threads,
            totals,
            hot_spots,
        }
    }
}

/// Compensation's verdicts on the whole profile.
impl Profile {
    /// Caps the calibration by what the probes of its threads measured of themselves
    /// ([`Calibration::capped`]), keeping the estimate in [`CalibrationStats::calibrated`].
    /// Probe-timed profiles only (code-region probes do not measure themselves).
    pub fn cap_calibration(&mut self) {
        if !self.mode.is_probe_timed() {
            return;
        }
        let Some(cal) = self.calibration else {
            return;
        };
        let (probe_ns, pairs) = measured_probes(self.threads.iter().map(|t| &t.tree));
        if pairs == 0 {
            return;
        }
        if let Some(capped) = cal.capped(probe_ns as f64 / pairs as f64) {
            self.calibration = Some(capped);
            self.calibration_stats
                .get_or_insert_with(CalibrationStats::default)
                .calibrated = Some(cal);
        }
    }

    /// Why this profile's compensation is unreliable; empty when it is not (or when it is not
    /// compensated).
    pub fn unreliable(&self) -> Vec<Unreliable> {
        if self.calibration.is_none() {
            return Vec::new();
        }
        let (probe_ns, pairs) = measured_probes(self.threads.iter().map(|t| &t.tree));
        let measured_pair = if pairs == 0 {
            0.0
        } else {
            probe_ns as f64 / pairs as f64
        };
        let mut out = self.calibration_stats.as_ref().map_or_else(Vec::new, |s| {
            calibration_verdict(s, self.calibration.as_ref(), measured_pair)
        });
        let (mut estimated, mut measured) = (0, 0);
        for t in &self.threads {
            let root = self.times(&t.tree)[t.tree.root().index()];
            estimated += root.total_overhead_ns;
            measured += t.tree.node(t.tree.root()).total_ns;
        }
        if mostly_estimate(estimated, measured) {
            out.push(Unreliable::MostlyEstimate {
                estimated_ns: estimated,
                measured_ns: measured,
            });
        }
        out
    }
}

/// Hot spots of one tree with precomputed `times`.
pub fn hot_spots(tree: &CallTree, times: &[Times]) -> Vec<HotSpot> {
    hot_spots_with_cpu(tree, times, &[])
}

/// [`hot_spots`] with CPU times too (`cpu`, indexed like `times`; empty or `None`: none).
pub fn hot_spots_with_cpu(
    tree: &CallTree,
    times: &[Times],
    cpu: &[Option<CpuTimes>],
) -> Vec<HotSpot> {
    use std::collections::HashMap;
    let mut by_kind: HashMap<NodeKind, HotSpot> = HashMap::new();
    // Depth-first with the multiset of kinds on the current path, so that a recursive
    // context's total is not added on top of its outer context's.
    let mut on_path: HashMap<NodeKind, u32> = HashMap::new();
    let mut stack = vec![(tree.root(), false)];
    while let Some((id, leaving)) = stack.pop() {
        let node = tree.node(id);
        if leaving {
            *on_path.get_mut(&node.kind).expect("kind entered") -= 1;
            continue;
        }
        let outermost = on_path.get(&node.kind).copied().unwrap_or(0) == 0;
        if node.kind != NodeKind::Thread {
            let spot = by_kind.entry(node.kind).or_insert(HotSpot {
                kind: node.kind,
                self_ns: 0,
                total_ns: 0,
                calls: 0,
                overhead_ns: 0,
                total_overhead_ns: 0,
                cpu: None,
            });
            if let Some(c) = cpu.get(id.index()).copied().flatten() {
                let sum = spot.cpu.get_or_insert_with(CpuTimes::default);
                sum.self_ns += c.self_ns;
                sum.overhead_ns += c.overhead_ns;
                if outermost {
                    sum.total_ns += c.total_ns;
                    sum.total_overhead_ns += c.total_overhead_ns;
                }
            }
            spot.self_ns += times[id.index()].self_ns;
            spot.overhead_ns += times[id.index()].overhead_ns;
            spot.calls += node.calls;
            if outermost {
                spot.total_ns += times[id.index()].total_ns;
                spot.total_overhead_ns += times[id.index()].total_overhead_ns;
            }
        }
        *on_path.entry(node.kind).or_insert(0) += 1;
        stack.push((id, true));
        for &c in node.children().iter().rev() {
            stack.push((c, false));
        }
    }
    let mut spots: Vec<HotSpot> = by_kind.into_values().collect();
    spots.sort_by(|a, b| {
        b.self_ns
            .cmp(&a.self_ns)
            .then(b.calls.cmp(&a.calls))
            .then(a.kind.tie_order().cmp(&b.kind.tie_order()))
    });
    spots
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{BYTES, COUNT};
    use crate::{Stamp, ThreadRecorder};

    #[test]
    fn a_cpu_profile_declares_calls_time_and_cpu_time_when_measured() {
        let mut p = Profile::default();
        let f = p.methods.insert("demo.A", "f", "()V");
        let mut rec = ThreadRecorder::default();
        rec.enter(f, Stamp::with_cpu(0, 0));
        rec.exit(f, Stamp::with_cpu(100, 60)).unwrap();
        let tree = rec.finish(Stamp::with_cpu(100, 60));
        let cpu_ns = tree.node(NodeId::ROOT).cpu_ns;
        p.threads.push(ThreadProfile::new("main", 1, tree));
        let names =
            |p: &Profile| -> Vec<String> { p.metrics().iter().map(|m| m.to_string()).collect() };
        assert_eq!(names(&p), ["calls/count", "time/nanoseconds"]);
        assert_eq!(p.primary_metric(), Some(1));
        p.threads[0].cpu_ns = cpu_ns;
        assert_eq!(
            names(&p),
            ["calls/count", "time/nanoseconds", "cpu_time/nanoseconds"]
        );
        let totals = p.metric_totals();
        assert_eq!(totals.totals, [1, 100, 60]);
        assert_eq!(totals.hot_spots.len(), 1);
        // The same sums as the CPU hot spots.
        let spot = &p.hot_spots()[0];
        let generic = &totals.hot_spots[0];
        assert_eq!(
            (generic.values[0].self_value, generic.values[1].self_value),
            (spot.calls, spot.self_ns)
        );
    }

    #[test]
    fn recursion_counts_a_total_once() {
        let mut p = Profile::new(Mode::Alloc);
        p.extra_metrics = vec![Metric::new("objects", COUNT), Metric::new("bytes", BYTES)];
        let r = NodeKind::Method(p.methods.insert("demo.A", "r", "()V"));
        let mut tree = CallTree::with_width(2);
        let outer = tree.add_child(NodeId::ROOT, r);
        let inner = tree.add_child(outer, r);
        tree.extra_mut(outer).copy_from_slice(&[1, 16]);
        tree.extra_mut(inner).copy_from_slice(&[2, 48]);
        p.threads.push(ThreadProfile::new("main", 1, tree));
        let totals = p.metric_totals();
        assert_eq!(totals.primary, 1);
        assert_eq!(totals.totals, [3, 64]);
        assert_eq!(
            totals.hot_spots[0].values,
            [
                Value {
                    self_value: 3,
                    total: 3
                },
                Value {
                    self_value: 64,
                    total: 64
                }
            ]
        );
    }
}
