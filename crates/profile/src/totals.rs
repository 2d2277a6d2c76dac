//! Calls and compensated time per method over threads, and the `adaptive` option's choice of the
//! methods whose probes cost more than they do.

use std::collections::BTreeMap;

use crate::calibration::Calibration;
use crate::method::MethodId;
use crate::tree::{CallTree, NodeKind};

/// Per method, invocations and compensated time including callees, summed over the trees
/// added; with all their probe pairs and what the probes measured of themselves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodTotals {
    pairs: u64,
    probe_ns: u64,
    /// Compensated time of the outermost recorded calls: the time spent inside roots.
    root_ns: u64,
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

    /// Adds another thread's totals.
    pub fn add(&mut self, other: MethodTotals) {
        self.pairs += other.pairs;
        self.probe_ns += other.probe_ns;
        self.root_ns += other.root_ns;
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
        let mut twice = totals.clone();
        twice.add(totals);
        assert_eq!(twice.of_method(p), Some((24, 24 * 33)));
        assert_eq!(twice.root_ns(), 2 * r_total);
    }
}
