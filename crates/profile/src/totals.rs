//! The totals every report shows ([`ProfileTotals`]: one computation, so that no two writers
//! can disagree), and calls and compensated time per method over threads for the `adaptive`
//! option's choice of the methods whose probes cost more than they do.

use std::collections::BTreeMap;

use crate::calibration::{Calibration, CpuTimes, Times};
use crate::method::MethodId;
use crate::profile::{hot_spots_with_cpu, HotSpot, Profile};
use crate::tree::{CallTree, NodeId, NodeKind};

/// One thread's times as the reports show them.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadTimes {
    /// Compensated times of every node of its tree ([`Profile::times`]).
    pub times: Vec<Times>,
    /// CPU times of every node ([`Profile::cpu_times`]).
    pub cpu: Vec<Option<CpuTimes>>,
    /// Time it spent waiting where it was found blocked ([`crate::Waiting`]): the compensated
    /// self time of that node; 0 for a thread not found blocked.
    pub idle_ns: u64,
}

impl ThreadTimes {
    /// The thread's total: what its call tree adds up to.
    pub fn total_ns(&self) -> u64 {
        self.times[NodeId::ROOT.index()].total_ns
    }
}

/// One place where threads were found blocked, over the threads blocked there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleSpot {
    /// The method whose self time is the wait (the innermost recorded frame).
    pub kind: NodeKind,
    /// How they wait ([`crate::Waiting::state`]).
    pub state: String,
    /// The method on top of their stacks.
    pub frame: String,
    /// Threads found blocked there.
    pub threads: u64,
    /// Their time waiting there (self time), ns.
    pub idle_ns: u64,
}

/// The totals of a whole profile, computed once for every writer: the sum of the threads'
/// totals (what their call trees add up to, and the flame graph's width), and hot spots summed
/// over the threads' own trees, so that their self times add up to that sum. (Hot spots of the
/// threads merged into one tree first were tried: compensation clamps a negative self time at
/// zero per node, and a merged node's noise partly cancels out, so they added up to less than
/// the call trees did.) Idle time, the self time of the node where a thread was found blocked,
/// is left out of the hot spots unless asked for and listed apart.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileTotals {
    /// Per thread of [`Profile::threads`], in order.
    pub threads: Vec<ThreadTimes>,
    /// The sum of the threads' totals, ns.
    pub total_ns: u64,
    /// Of it, time threads spent waiting where they were found blocked, ns.
    pub idle_ns: u64,
    /// Whether the hot spots include idle time.
    pub idle_included: bool,
    /// By self time (descending), then calls (descending), then method id.
    pub hot_spots: Vec<HotSpot>,
    /// Where threads were found blocked, longest wait first (then by method and frame).
    pub idle: Vec<IdleSpot>,
}

impl ProfileTotals {
    /// The time the hot spots share: the total, less idle time unless included.
    pub fn hot_ns(&self) -> u64 {
        if self.idle_included {
            self.total_ns
        } else {
            self.total_ns - self.idle_ns
        }
    }

    /// Threads found blocked, with a wait recorded.
    pub fn idle_threads(&self) -> u64 {
        self.idle.iter().map(|s| s.threads).sum()
    }
}

impl Profile {
    /// The totals of this profile ([`ProfileTotals`]); hot spots with idle time when
    /// `include_idle`.
    pub fn totals(&self, include_idle: bool) -> ProfileTotals {
        let mut by_kind: BTreeMap<(u8, MethodId), HotSpot> = BTreeMap::new();
        let mut idle: BTreeMap<(NodeKind, String, String), (u64, u64)> = BTreeMap::new();
        let mut threads = Vec::with_capacity(self.threads.len());
        for thread in &self.threads {
            let tree = &thread.tree;
            let times = self.times(tree);
            let cpu = self.cpu_times(tree);
            let waiting = thread
                .waiting
                .as_ref()
                .and_then(|w| Some((w, w.node.filter(|n| n.index() < tree.len())?)));
            let idle_ns = waiting.map_or(0, |(_, n)| times[n.index()].self_ns);
            let spots = match waiting {
                Some((w, node)) if idle_ns > 0 => {
                    let sum = idle
                        .entry((tree.node(node).kind, w.state.clone(), w.frame.clone()))
                        .or_default();
                    sum.0 += 1;
                    sum.1 += idle_ns;
                    if include_idle {
                        hot_spots_with_cpu(tree, &times, &cpu)
                    } else {
                        hot_spots_with_cpu(tree, &without_wait(tree, &times, node), &cpu)
                    }
                }
                _ => hot_spots_with_cpu(tree, &times, &cpu),
            };
            for spot in spots {
                add_spot(&mut by_kind, spot);
            }
            threads.push(ThreadTimes {
                times,
                cpu,
                idle_ns,
            });
        }
        let mut hot_spots: Vec<HotSpot> = by_kind.into_values().collect();
        hot_spots.sort_by(|a, b| {
            b.self_ns
                .cmp(&a.self_ns)
                .then(b.calls.cmp(&a.calls))
                .then(spot_key(a.kind).cmp(&spot_key(b.kind)))
        });
        let mut idle: Vec<IdleSpot> = idle
            .into_iter()
            .map(|((kind, state, frame), (threads, idle_ns))| IdleSpot {
                kind,
                state,
                frame,
                threads,
                idle_ns,
            })
            .collect();
        idle.sort_by_key(|s| std::cmp::Reverse(s.idle_ns));
        ProfileTotals {
            total_ns: threads.iter().map(ThreadTimes::total_ns).sum(),
            idle_ns: threads.iter().map(|t| t.idle_ns).sum(),
            idle_included: include_idle,
            threads,
            hot_spots,
            idle,
        }
    }
}

/// `times` with the self time of `node` (a wait) taken out of it and of its ancestors' totals.
fn without_wait(tree: &CallTree, times: &[Times], node: NodeId) -> Vec<Times> {
    let mut busy = times.to_vec();
    let wait = busy[node.index()].self_ns;
    busy[node.index()].self_ns = 0;
    let mut at = Some(node);
    while let Some(n) = at {
        busy[n.index()].total_ns -= wait;
        at = tree.node(n).parent();
    }
    busy
}

fn spot_key(kind: NodeKind) -> (u8, MethodId) {
    match kind {
        NodeKind::Method(m) => (0, m),
        NodeKind::Overflow => (1, MethodId(0)),
        NodeKind::Thread => (2, MethodId(0)),
    }
}

fn add_spot(by_kind: &mut BTreeMap<(u8, MethodId), HotSpot>, spot: HotSpot) {
    use std::collections::btree_map::Entry;
    match by_kind.entry(spot_key(spot.kind)) {
        Entry::Vacant(v) => {
            v.insert(spot);
        }
        Entry::Occupied(mut o) => {
            let sum = o.get_mut();
            sum.self_ns += spot.self_ns;
            sum.total_ns += spot.total_ns;
            sum.calls += spot.calls;
            sum.overhead_ns += spot.overhead_ns;
            sum.total_overhead_ns += spot.total_overhead_ns;
            sum.cpu = match (sum.cpu, spot.cpu) {
                (Some(a), Some(b)) => Some(CpuTimes {
                    total_ns: a.total_ns + b.total_ns,
                    self_ns: a.self_ns + b.self_ns,
                    overhead_ns: a.overhead_ns + b.overhead_ns,
                    total_overhead_ns: a.total_overhead_ns + b.total_overhead_ns,
                }),
                (a, b) => a.or(b),
            };
        }
    }
}

/// Per method, invocations and compensated time including callees, summed over the trees
/// added; with all their probe pairs and what the probes measured of themselves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodTotals {
    pairs: u64,
    probe_ns: u64,
    /// Compensated time of the outermost recorded calls: the time spent inside roots.
    root_ns: u64,
    /// Those calls (zero while no root call has ended).
    root_calls: u64,
    methods: BTreeMap<MethodId, (u64, u64)>,
}

impl MethodTotals {
    /// The totals of one thread's tree, compensated with `calibration` ([`TreeTotals`] in one
    /// go).
    pub fn of_tree(tree: &CallTree, calibration: Option<&Calibration>) -> Self {
        let mut pass = TreeTotals::new(tree);
        while !pass.step(tree, calibration, usize::MAX) {}
        pass.finish()
    }

    /// A method's invocations and compensated total (ns), if it was called.
    pub fn of_method(&self, m: MethodId) -> Option<(u64, u64)> {
        self.methods.get(&m).copied()
    }

    /// Compensated time spent inside roots (by the outermost calls that ended), over threads.
    pub fn root_ns(&self) -> u64 {
        self.root_ns
    }

    /// Calls of the outermost recorded methods, over threads: zero while [`Self::root_ns`]
    /// has nothing to say.
    pub fn root_calls(&self) -> u64 {
        self.root_calls
    }

    /// Adds another thread's totals.
    pub fn add(&mut self, other: MethodTotals) {
        self.pairs += other.pairs;
        self.probe_ns += other.probe_ns;
        self.root_ns += other.root_ns;
        self.root_calls += other.root_calls;
        for (m, (calls, total_ns)) in other.methods {
            let sum = self.methods.entry(m).or_default();
            sum.0 += calls;
            sum.1 += total_ns;
        }
    }

    /// Methods called at least `min_calls` times that take less time per call, callees
    /// included, than a probe pair costs: what the probes measured of themselves per pair on
    /// average, plus the calibrated rest of `calibration` (at most [`REST_CAP`] times the
    /// measured part, as in profiles: [`Calibration::capped`]). Their probes cost more than
    /// they do, so compensation subtracts mostly estimates there (`adaptive` removes their
    /// probes). Ascending ids, each with its calls.
    ///
    /// [`REST_CAP`]: crate::compensation::REST_CAP
    pub fn short_and_frequent(
        &self,
        calibration: Option<&Calibration>,
        min_calls: u64,
    ) -> Vec<(MethodId, u64)> {
        if self.pairs == 0 {
            return Vec::new();
        }
        let measured = self.probe_ns as f64 / self.pairs as f64;
        let rest = calibration.map_or(0.0, |c| {
            let c = c.capped(measured).unwrap_or(*c);
            c.inner_ns + c.outer_ns
        });
        let pair_ns = measured + rest;
        self.methods
            .iter()
            .filter(|&(_, &(calls, total_ns))| {
                calls >= min_calls.max(1) && (total_ns as f64) < pair_ns * calls as f64
            })
            .map(|(&m, &(calls, _))| (m, calls))
            .collect()
    }
}

/// [`MethodTotals`] of one thread's tree, a step at a time: the agent reads the tree under its
/// collector lock, which a thread whose event buffer fills (in a few milliseconds) waits for,
/// so it lets go between steps. One pass from the leaves up: a node's compensated total is its
/// measured total less what the probes of its subtree measured of themselves and the
/// calibrated rest of its own calls (inner) and of every call below it (inner and outer).
/// Unlike [`crate::node_times`] no self time is clamped at zero, and a recursive method counts
/// at every level, which only makes it look longer. (Counting only its outermost calls, as hot
/// spots do, was tried: while that outer call is still running its node has no time yet, and
/// its finished inner calls would make a long recursion look short.) A tree is only appended to, with children
/// after their parents, so nodes added between steps are left for the next look and counters
/// that grew meanwhile are read as they are then.
#[derive(Clone, Debug)]
pub struct TreeTotals {
    /// Per node: probe time measured in its subtree, and its descendants' calls.
    below: Vec<(u64, u64)>,
    /// Nodes `0..left` are still to do, from the last one down.
    left: usize,
    by_method: Vec<(u64, u64)>,
    pairs: u64,
    probe_ns: u64,
    root_ns: u64,
    root_calls: u64,
}

impl TreeTotals {
    /// A pass over the nodes `tree` has now.
    pub fn new(tree: &CallTree) -> Self {
        TreeTotals {
            below: vec![(0, 0); tree.len()],
            left: tree.len(),
            by_method: Vec::new(),
            pairs: 0,
            probe_ns: 0,
            root_ns: 0,
            root_calls: 0,
        }
    }

    /// Does up to `budget` more nodes of `tree` (the same tree, maybe grown since); true when
    /// every node is done, or when `tree` is not that tree (it has fewer nodes).
    pub fn step(
        &mut self,
        tree: &CallTree,
        calibration: Option<&Calibration>,
        budget: usize,
    ) -> bool {
        if tree.len() < self.below.len() {
            self.left = 0;
            return true;
        }
        let (inner, outer) = calibration.map_or((0.0, 0.0), |c| (c.inner_ns, c.outer_ns));
        let stop = self.left.saturating_sub(budget);
        for id in tree.ids().take(self.left).skip(stop).rev() {
            let node = tree.node(id);
            let (probe_ns, calls_below) = self.below[id.index()];
            let probe_ns = probe_ns + node.probe_ns;
            if let NodeKind::Method(m) = node.kind {
                self.pairs += node.calls;
                self.probe_ns += node.probe_ns;
                let rest = node.calls as f64 * inner + calls_below as f64 * (inner + outer);
                let total = (node.total_ns as f64 - probe_ns as f64 - rest).max(0.0) as u64;
                let at = m.0 as usize;
                if self.by_method.len() <= at {
                    self.by_method.resize(at + 1, (0, 0));
                }
                self.by_method[at].0 += node.calls;
                self.by_method[at].1 += total;
                let outermost = node
                    .parent()
                    .is_some_and(|p| matches!(tree.node(p).kind, NodeKind::Thread));
                if outermost {
                    self.root_ns += total;
                    self.root_calls += node.calls;
                }
            }
            if let Some(parent) = node.parent() {
                let calls = match node.kind {
                    NodeKind::Thread => 0,
                    _ => node.calls,
                };
                let up = &mut self.below[parent.index()];
                up.0 += probe_ns;
                up.1 += calls_below + calls;
            }
        }
        self.left = stop;
        stop == 0
    }

    /// The totals of the nodes done.
    pub fn finish(self) -> MethodTotals {
        MethodTotals {
            pairs: self.pairs,
            probe_ns: self.probe_ns,
            root_ns: self.root_ns,
            root_calls: self.root_calls,
            methods: self
                .by_method
                .into_iter()
                .enumerate()
                .filter(|(_, (calls, _))| *calls > 0)
                .map(|(m, sums)| (MethodId(m as u32), sums))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{Stamp, ThreadRecorder};

    /// A caller's compensated total leaves out its callees' probes, measured and calibrated.
    #[test]
    fn a_callers_total_leaves_out_the_probes_of_its_subtree() {
        let (r, p, s) = (MethodId(0), MethodId(1), MethodId(2));
        let mut rec = ThreadRecorder::new(10);
        let at = |t, probe| Stamp::wall(t).by_probe(probe);
        rec.enter(r, at(0, 10));
        let mut now = 0;
        for _ in 0..12 {
            // p: 70 measured per call, s inside it 20.
            now += 10;
            rec.enter(p, at(now, 10));
            rec.enter(s, at(now + 20, 10));
            rec.exit(s, at(now + 40, 10)).unwrap();
            now += 70;
            rec.exit(p, at(now, 10)).unwrap();
        }
        rec.exit(r, at(now + 10, 10)).unwrap();
        let tree = rec.finish(Stamp::wall(now + 20));
        let cal = Calibration {
            inner_ns: 2.0,
            outer_ns: 3.0,
        };
        let totals = MethodTotals::of_tree(&tree, Some(&cal));
        // Step by step, three nodes at a time, the same.
        let mut pass = TreeTotals::new(&tree);
        while !pass.step(&tree, Some(&cal), 3) {}
        assert_eq!(pass.finish(), totals);
        // s: 20 - 10 (its entry probe) - 2 (inner).
        assert_eq!(totals.of_method(s), Some((12, 12 * 8)));
        // p: 70 - 30 (its entry, s's entry and exit) - 2 (inner) - 5 (s's pair).
        assert_eq!(totals.of_method(p), Some((12, 12 * 33)));
        // A pair: 490 ns measured over 25 pairs, plus 5: 24.6 ns. p is longer, s shorter.
        assert_eq!(totals.short_and_frequent(Some(&cal), 10), [(s, 12)]);
        // Inside roots: r's compensated total, nothing of its callees counted again.
        let (_, r_total) = totals.of_method(r).unwrap();
        assert!(r_total > 0 && r_total < 970, "{r_total}");
        assert_eq!(totals.root_ns(), r_total);
        assert_eq!(totals.root_calls(), 1);
        let mut twice = totals.clone();
        twice.add(totals);
        assert_eq!(twice.of_method(p), Some((24, 24 * 33)));
        assert_eq!(twice.root_ns(), 2 * r_total);
        assert_eq!(twice.root_calls(), 2);
    }
}
