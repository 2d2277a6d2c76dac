//! A whole profile: its mode and metrics, method table, calibration and one tree per thread.

use std::collections::BTreeSet;

use crate::calibration::{node_cpu_times, node_times, Calibration, CpuTimes, Times};
use crate::method::{MethodId, MethodTable};
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
    /// CPU calibration.
    pub fn cpu_times(&self, tree: &CallTree) -> Vec<Option<CpuTimes>> {
        node_cpu_times(tree, self.cpu_calibration.as_ref())
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
            .then(sort_key(a.kind).cmp(&sort_key(b.kind)))
    });
    spots
}

fn sort_key(kind: NodeKind) -> (u8, MethodId) {
    match kind {
        NodeKind::Method(m) => (0, m),
        NodeKind::Overflow => (1, MethodId(0)),
        NodeKind::Thread => (2, MethodId(0)),
    }
}
