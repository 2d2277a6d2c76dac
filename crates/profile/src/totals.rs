//! Calls and compensated time per method over threads, and the `adaptive` option's choice of the
//! methods whose probes cost more than they do.

use std::collections::BTreeMap;

use crate::calibration::{node_times, Calibration};
use crate::method::MethodId;
use crate::profile::hot_spots;
use crate::tree::{CallTree, NodeKind};

/// Per method, invocations and compensated time including callees (recursive calls counted
/// once, as in hot spots), summed over the trees added; with all their probe pairs and what the
/// probes measured of themselves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodTotals {
    pairs: u64,
    probe_ns: u64,
    methods: BTreeMap<MethodId, (u64, u64)>,
}

impl MethodTotals {
    /// The totals of one thread's tree, compensated with `calibration`.
    pub fn of_tree(tree: &CallTree, calibration: Option<&Calibration>) -> Self {
        let mut totals = MethodTotals::default();
        for id in tree.ids() {
            let node = tree.node(id);
            if matches!(node.kind, NodeKind::Method(_)) {
                totals.pairs += node.calls;
                totals.probe_ns += node.probe_ns;
            }
        }
        let times = node_times(tree, calibration);
        for spot in hot_spots(tree, &times) {
            if let NodeKind::Method(m) = spot.kind {
                let sum = totals.methods.entry(m).or_default();
                sum.0 += spot.calls;
                sum.1 += spot.total_ns;
            }
        }
        totals
    }

    /// Adds another thread's totals.
    pub fn add(&mut self, other: MethodTotals) {
        self.pairs += other.pairs;
        self.probe_ns += other.probe_ns;
        for (m, (calls, total_ns)) in other.methods {
            let sum = self.methods.entry(m).or_default();
            sum.0 += calls;
            sum.1 += total_ns;
        }
    }

    /// Methods called at least `min_calls` times that take less time per call, callees
    /// included, than a probe pair costs: what the probes measured of themselves per pair on
    /// average, plus the calibrated rest of `calibration`. Their probes cost more than they do,
    /// so compensation subtracts mostly estimates there (`adaptive` removes their probes).
    /// Ascending ids.
    pub fn short_and_frequent(
        &self,
        calibration: Option<&Calibration>,
        min_calls: u64,
    ) -> Vec<MethodId> {
        if self.pairs == 0 {
            return Vec::new();
        }
        let rest = calibration.map_or(0.0, |c| c.inner_ns + c.outer_ns);
        let pair_ns = self.probe_ns as f64 / self.pairs as f64 + rest;
        self.methods
            .iter()
            .filter(|&(_, &(calls, total_ns))| {
                calls >= min_calls.max(1) && (total_ns as f64) < pair_ns * calls as f64
            })
            .map(|(&m, _)| m)
            .collect()
    }
}
