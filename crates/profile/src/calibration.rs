//! Probe calibration and overhead compensation (JFluid, section 5.3).
//!
//! Per invocation, a method's measured interval contains the *inner* part of its own
//! probe pair (after the entry timestamp, before the exit timestamp), and for each
//! direct call it makes, the *outer* part of the callee's probe pair (before the
//! callee's entry timestamp, after its exit timestamp). Hence, per node,
//! `self_exact = self_measured - calls * inner - outer_calls * outer`.

use serde::{Deserialize, Serialize};

use crate::tree::{CallTree, NodeId};

/// Calibrated probe costs, ns per probe pair (fractional: they are averages).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Inner time t_I: from the entry probe's timestamp to the exit probe's timestamp
    /// when nothing runs between them.
    pub inner_ns: f64,
    /// Outer time t_O: the rest of a probe pair's cost, charged to the caller.
    pub outer_ns: f64,
}

/// One calibration batch: `pairs` back-to-back entry/exit probe pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CalibrationBatch {
    /// Number of probe pairs run.
    pub pairs: u64,
    /// Wall time of the whole batch, ns.
    pub elapsed_ns: u64,
    /// Sum over pairs of (exit timestamp - entry timestamp), ns.
    pub inner_ns: u64,
}

impl Calibration {
    /// JFluid's procedure: average each batch and keep the minimum, which is the cost
    /// of the probes once compiled and undisturbed. Inner and total costs are minimised
    /// separately; outer = total - inner (never negative). `None` without a non-empty
    /// batch.
    pub fn from_batches(batches: &[CalibrationBatch]) -> Option<Self> {
        let used = batches.iter().filter(|b| b.pairs > 0);
        let (total, inner) = used.fold((f64::INFINITY, f64::INFINITY), |(t, i), b| {
            let n = b.pairs as f64;
            (t.min(b.elapsed_ns as f64 / n), i.min(b.inner_ns as f64 / n))
        });
        if !total.is_finite() {
            return None;
        }
        Some(Self {
            inner_ns: inner,
            outer_ns: (total - inner).max(0.0),
        })
    }
}

/// Times of one node as reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Times {
    /// Including callees, ns.
    pub total_ns: u64,
    /// Excluding callees, ns.
    pub self_ns: u64,
}

/// Times of every node of `tree`, indexed by [`NodeId::index`].
///
/// Without calibration these are the measured values. With it, each node's self time
/// is compensated (and clamped at zero: noise can make a tiny method look negative),
/// and totals are rebuilt bottom-up from compensated self times so that a parent's
/// total always equals its self time plus its children's totals.
pub fn node_times(tree: &CallTree, calibration: Option<&Calibration>) -> Vec<Times> {
    let mut times = vec![Times::default(); tree.len()];
    let Some(cal) = calibration else {
        for id in tree.ids() {
            times[id.index()] = Times {
                total_ns: tree.node(id).total_ns,
                self_ns: tree.self_ns(id),
            };
        }
        return times;
    };
    // Reverse arena order: children (stored after parents) are done first.
    for id in tree.ids().rev() {
        let node = tree.node(id);
        let overhead = node.calls as f64 * cal.inner_ns + node.outer_calls as f64 * cal.outer_ns;
        let self_ns = (tree.self_ns(id) as f64 - overhead).round().max(0.0) as u64;
        let children: u64 = node
            .children()
            .iter()
            .map(|c| times[c.index()].total_ns)
            .sum();
        times[id.index()] = Times {
            total_ns: self_ns + children,
            self_ns,
        };
    }
    times
}

/// Convenience: the times of one node (computes the whole tree; use [`node_times`]
/// for many nodes).
pub fn times_of(tree: &CallTree, id: NodeId, calibration: Option<&Calibration>) -> Times {
    node_times(tree, calibration)[id.index()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimum_of_batch_averages() {
        let batches = [
            CalibrationBatch {
                pairs: 100,
                elapsed_ns: 9_000,
                inner_ns: 4_000,
            },
            CalibrationBatch {
                pairs: 100,
                elapsed_ns: 6_000,
                inner_ns: 2_500,
            },
            CalibrationBatch {
                pairs: 0,
                elapsed_ns: 1,
                inner_ns: 1,
            },
        ];
        let cal = Calibration::from_batches(&batches).unwrap();
        assert_eq!(cal.inner_ns, 25.0);
        assert_eq!(cal.outer_ns, 35.0);
        assert_eq!(Calibration::from_batches(&[]), None);
    }
}
