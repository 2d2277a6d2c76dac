//! Probe calibration and overhead compensation (JFluid, section 5.3).
//!
//! Per invocation, a method's measured interval contains the *inner* part of its own
//! probe pair (after the entry timestamp, before the exit timestamp), and for each
//! direct call it makes, the *outer* part of the callee's probe pair (before the
//! callee's entry timestamp, after its exit timestamp). Hence, per node,
//! `self_exact = self_measured - calls * inner - outer_calls * outer`.
//!
//! Probes that measure themselves (the agent's: each event carries its probe's duration,
//! summed per node as [`crate::Node::probe_ns`]) leave only the rest to the calibration: the
//! calls into the probe and back, which no timestamp can see. Then
//! `self_exact = self_measured - probe_ns - calls * inner - outer_calls * outer`, with the
//! calibrated `inner` and `outer` of that rest alone.

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CalibrationBatch {
    /// Number of probe pairs run.
    pub pairs: u64,
    /// Wall time of the whole batch less what its probes measured of themselves, ns.
    pub elapsed_ns: u64,
    /// Sum over pairs of (exit timestamp - entry timestamp), ns.
    pub inner_ns: u64,
    /// Wall time of the whole batch, ns.
    pub wall_ns: u64,
    /// Of `wall_ns`, the time its thread was off its CPU (wall time less thread CPU time):
    /// preempted, or stopped at a safepoint ([`crate::compensation::DISTURBED_SHARE`]).
    pub off_cpu_ns: u64,
}

impl Calibration {
    /// Averages each batch and keeps the median of the batch averages; inner and total
    /// costs separately, outer = total - inner (never negative). `None` without a
    /// non-empty batch.
    ///
    /// JFluid (5.3) keeps the minimum, the cost of undisturbed compiled probes. Measured
    /// here, the probes' cost has two levels that hold for stretches of 0.1-2 s (pairs of
    /// ~62 and ~104 ns on the development VM, whatever the call site or CPU), and the
    /// application's pairs average over both, so the minimum under-compensates whenever
    /// one batch lands on the low level. The median is the level the calibration spent
    /// most of its time at: over 60 profiled runs it was 10 ns from the application's pair
    /// (median) where the minimum was 20, and the root's charged time stayed within 1.10 of
    /// its true time in 37 runs instead of 16 (docs/decisions/0004-calibration.md).
    /// The few warm-up batches (interpreted code) move it by at most a rank each.
    pub fn from_batches(batches: &[CalibrationBatch]) -> Option<Self> {
        let (totals, inners) = Self::batch_averages(batches);
        Some(Self::from_levels(median(totals)?, median(inners)?))
    }

    /// JFluid's estimate: the minimum of the batch averages (see [`Calibration::from_batches`]).
    pub fn minimum_of_batches(batches: &[CalibrationBatch]) -> Option<Self> {
        let (totals, inners) = Self::batch_averages(batches);
        let min = |xs: Vec<f64>| xs.into_iter().reduce(f64::min);
        Some(Self::from_levels(min(totals)?, min(inners)?))
    }

    /// Per non-empty batch: total and inner ns per pair.
    fn batch_averages(batches: &[CalibrationBatch]) -> (Vec<f64>, Vec<f64>) {
        batches
            .iter()
            .filter(|b| b.pairs > 0)
            .map(|b| {
                let n = b.pairs as f64;
                (b.elapsed_ns as f64 / n, b.inner_ns as f64 / n)
            })
            .unzip()
    }

    /// The probes' cost inside a node's measured self time: the inner part of each of its
    /// own `calls` and the outer part of each of its `outer_calls` (direct callees' pairs).
    pub fn overhead_ns(&self, calls: u64, outer_calls: u64) -> f64 {
        calls as f64 * self.inner_ns + outer_calls as f64 * self.outer_ns
    }

    fn from_levels(total: f64, inner: f64) -> Self {
        Self {
            inner_ns: inner,
            outer_ns: (total - inner).max(0.0),
        }
    }
}

/// The median of `xs` (the mean of the middle two for an even count); `None` when empty.
fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    match xs.len() {
        0 => None,
        n if n % 2 == 1 => Some(xs[mid]),
        _ => Some((xs[mid - 1] + xs[mid]) / 2.0),
    }
}

/// How far the probe pairs of an application's call sites may cost from the calibrated
/// pair, as a share of it, where the whole pair is calibrated (code regions, thread CPU
/// time). Over 60 profiled runs of the accuracy benchmark the pair measured in the
/// application came to 0.70-1.42 times the calibrated one, within ±30% in 57 runs
/// (docs/decisions/0011-uncertain-times-are-marked.md): the pair's cost has levels that change over a run and
/// differ between call sites, which one calibration cannot follow.
pub const PROBE_SPREAD: f64 = 0.30;

/// The same for the calibrated rest of probes that measure themselves (wall time): the calls
/// into the probes and back. Smaller than a whole pair, but relatively less certain: in
/// application code it came to 0.5-0.9 times the calibrated rest in the accuracy benchmark's
/// tiny methods and 1.7-1.9 times in Lucene's subgraph, whose code runs slower around each
/// call into a probe than the calibration loop does (docs/decisions/0012-probes-measure-themselves.md).
pub const REST_SPREAD: f64 = 1.0;

/// A compensated time is marked uncertain when the uncertainty of the probe cost subtracted
/// from it (`PROBE_SPREAD` of that cost) is more than this share of it: it may then be off by
/// more than 10%. Its call counts stay exact.
pub const UNCERTAIN_SHARE: f64 = 0.10;

/// Whether a compensated `time_ns` from which `overhead_ns` of calibrated probe-pair cost was
/// subtracted is mostly probe cost (see [`UNCERTAIN_SHARE`]). Never without compensation
/// (`overhead_ns` 0).
pub fn probe_dominated(time_ns: u64, overhead_ns: u64) -> bool {
    overhead_ns as f64 * PROBE_SPREAD > time_ns as f64 * UNCERTAIN_SHARE
}

/// [`probe_dominated`] for a wall time from which `overhead_ns` of calibrated rest was
/// subtracted besides what its probes measured of themselves ([`REST_SPREAD`]).
pub fn rest_dominated(time_ns: u64, overhead_ns: u64) -> bool {
    overhead_ns as f64 * REST_SPREAD > time_ns as f64 * UNCERTAIN_SHARE
}

/// Times of one node as reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Times {
    /// Including callees, ns.
    pub total_ns: u64,
    /// Excluding callees, ns.
    pub self_ns: u64,
    /// Calibrated probe cost subtracted from the measured self time, ns (0 when not
    /// compensated): an estimate, hence the uncertainty marks. At most the measured self time
    /// less `probe_ns` ([`compensate`]).
    pub overhead_ns: u64,
    /// Calibrated probe cost subtracted in the whole subtree (this node's and its callees'), ns.
    pub total_overhead_ns: u64,
    /// Probe time the probes measured themselves and that was subtracted from the measured
    /// self time, ns (0 when not compensated); at most the measured self time.
    pub probe_ns: u64,
    /// The same in the whole subtree, ns.
    pub total_probe_ns: u64,
}

impl Times {
    /// The self time is mostly probe cost: its count is exact, its time is not.
    pub fn self_uncertain(&self) -> bool {
        rest_dominated(self.self_ns, self.overhead_ns)
    }

    /// The same for the total: the subtree's probes cost too much for it to be within 10%.
    pub fn total_uncertain(&self) -> bool {
        rest_dominated(self.total_ns, self.total_overhead_ns)
    }
}

/// Thread CPU times of one node (the `cpu` option), compensated like [`Times`] when the
/// profile has a CPU calibration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CpuTimes {
    /// Including callees, ns.
    pub total_ns: u64,
    /// Excluding callees, ns.
    pub self_ns: u64,
    /// Probe CPU cost subtracted from the self time, ns (0 without a CPU calibration).
    pub overhead_ns: u64,
    /// Probe CPU cost subtracted in the whole subtree, ns.
    pub total_overhead_ns: u64,
}

impl CpuTimes {
    /// The self CPU time is mostly probe cost ([`probe_dominated`]: the CPU calibration is of the
    /// whole pair).
    pub fn self_uncertain(&self) -> bool {
        probe_dominated(self.self_ns, self.overhead_ns)
    }

    /// The same for the total.
    pub fn total_uncertain(&self) -> bool {
        probe_dominated(self.total_ns, self.total_overhead_ns)
    }
}

/// CPU times of every node of `tree` that has a measured CPU time (`None` elsewhere),
/// indexed by [`NodeId::index`].
///
/// As [`node_times`], with the probe pair's CPU costs: each node's measured self CPU time
/// (its `cpu_ns` less its children's) loses `calls * inner + outer_calls * outer`, at most
/// all of it ([`compensate`]), and totals are rebuilt bottom-up. Without `cpu_calibration` the measured values.
///
/// With `wall` (the same tree's [`node_times`]) and a CPU calibration, no compensated self CPU
/// time exceeds its node's compensated self wall time: a thread runs no longer than the time that passes. The two compensations are
/// estimated apart (the wall one from what the probes measured of themselves, which on a busy
/// machine includes their time off the CPU; the CPU one from a calibration on a platform
/// thread), so without the bound a method called often enough could show more CPU than wall
/// time; what the bound takes counts as probe cost.
pub fn node_cpu_times(
    tree: &CallTree,
    cpu_calibration: Option<&Calibration>,
    wall: Option<&[Times]>,
) -> Vec<Option<CpuTimes>> {
    let mut times: Vec<Option<CpuTimes>> = vec![None; tree.len()];
    for id in tree.ids().rev() {
        let node = tree.node(id);
        let Some(measured) = node.cpu_ns else {
            continue;
        };
        let (children_measured, children_total, children_overhead) =
            node.children().iter().fold((0, 0, 0), |(m, t, o), c| {
                let measured = tree.node(*c).cpu_ns.unwrap_or(0);
                let child = times[c.index()].unwrap_or_default();
                (
                    m + measured,
                    t + child.total_ns,
                    o + child.total_overhead_ns,
                )
            });
        let measured_self = measured.saturating_sub(children_measured);
        // Never more than was measured: the cost subtracted is what the self time lost.
        let overhead =
            cpu_calibration.map_or(0.0, |cal| cal.overhead_ns(node.calls, node.outer_calls));
        let (_, overhead_ns, self_ns) = compensate(measured_self, 0, overhead);
        // Measured values stay as read: two clocks read apart may put a pure-CPU node a few µs
        // over its wall time, which the docs state; only compensated values are bounded.
        let bound = match (wall, cpu_calibration) {
            (Some(w), Some(_)) => w[id.index()].self_ns,
            _ => u64::MAX,
        };
        let (self_ns, overhead_ns) = if self_ns > bound {
            (bound, overhead_ns + (self_ns - bound))
        } else {
            (self_ns, overhead_ns)
        };
        times[id.index()] = Some(CpuTimes {
            total_ns: self_ns + children_total,
            self_ns,
            overhead_ns,
            total_overhead_ns: overhead_ns + children_overhead,
        });
    }
    times
}

/// Times of every node of `tree`, indexed by [`NodeId::index`].
///
/// Without calibration these are the measured values. With it, each node's self time
/// is compensated (its probes' measured time and the calibrated rest subtracted, each at
/// most what is left of the measured self time: noise, or a calibration made on a busy
/// machine, can make a tiny method look negative; [`compensate`]), and totals are rebuilt bottom-up
/// from compensated self times so that a parent's total always equals its self time plus
/// its children's totals.
pub fn node_times(tree: &CallTree, calibration: Option<&Calibration>) -> Vec<Times> {
    let mut times = vec![Times::default(); tree.len()];
    let Some(cal) = calibration else {
        for id in tree.ids() {
            times[id.index()] = Times {
                total_ns: tree.node(id).total_ns,
                self_ns: tree.self_ns(id),
                ..Times::default()
            };
        }
        return times;
    };
    // Reverse arena order: children (stored after parents) are done first.
    for id in tree.ids().rev() {
        let node = tree.node(id);
        let (probe_ns, overhead_ns, self_ns) = compensate(
            tree.self_ns(id),
            node.probe_ns,
            cal.overhead_ns(node.calls, node.outer_calls),
        );
        let (children, children_overhead, children_probes) =
            node.children().iter().fold((0, 0, 0), |(t, o, p), c| {
                let c = &times[c.index()];
                (
                    t + c.total_ns,
                    o + c.total_overhead_ns,
                    p + c.total_probe_ns,
                )
            });
        times[id.index()] = Times {
            total_ns: self_ns + children,
            self_ns,
            overhead_ns,
            total_overhead_ns: overhead_ns + children_overhead,
            probe_ns,
            total_probe_ns: probe_ns + children_probes,
        };
    }
    times
}

/// One node's compensation: of `measured_self_ns`, what its probes measured of themselves
/// (`probe_ns`) and then the calibrated `overhead_ns` are subtracted, each at most what is
/// left, so that nothing subtracted exceeds what was measured and no self time is negative.
/// Returns what was subtracted of each (the calibrated part rounded) and the self time left
/// (rounded).
pub fn compensate(measured_self_ns: u64, probe_ns: u64, overhead_ns: f64) -> (u64, u64, u64) {
    let probe = probe_ns.min(measured_self_ns);
    let left = measured_self_ns - probe;
    let overhead = (overhead_ns.round().max(0.0) as u64).min(left);
    let self_ns = ((left as f64 - overhead_ns).round().max(0.0) as u64).min(left);
    (probe, overhead, self_ns)
}

/// Convenience: the times of one node (computes the whole tree; use [`node_times`]
/// for many nodes).
pub fn times_of(tree: &CallTree, id: NodeId, calibration: Option<&Calibration>) -> Times {
    node_times(tree, calibration)[id.index()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(pairs: u64, elapsed_ns: u64, inner_ns: u64) -> CalibrationBatch {
        CalibrationBatch {
            pairs,
            elapsed_ns,
            inner_ns,
            ..CalibrationBatch::default()
        }
    }

    #[test]
    fn median_of_batch_averages() {
        // Per pair: totals 90, 60, 300 (a warm-up batch), 62; inners 40, 25, 120, 26. The
        // empty batch is ignored.
        let batches = [
            batch(100, 9_000, 4_000),
            batch(100, 6_000, 2_500),
            batch(10, 3_000, 1_200),
            batch(0, 1, 1),
            batch(100, 6_200, 2_600),
        ];
        let cal = Calibration::from_batches(&batches).unwrap();
        assert_eq!(cal.inner_ns, 33.0); // (26 + 40) / 2
        assert_eq!(cal.outer_ns, 43.0); // (62 + 90) / 2 - 33
        let odd = Calibration::from_batches(&batches[..3]).unwrap();
        assert_eq!((odd.inner_ns, odd.outer_ns), (40.0, 50.0));
        assert_eq!(Calibration::from_batches(&[]), None);
        assert_eq!(Calibration::from_batches(&[batch(0, 5, 5)]), None);
    }

    #[test]
    fn minimum_of_batch_averages() {
        let batches = [
            batch(100, 9_000, 4_000),
            batch(100, 6_000, 2_500),
            batch(0, 1, 1),
        ];
        let cal = Calibration::minimum_of_batches(&batches).unwrap();
        assert_eq!(cal.inner_ns, 25.0);
        assert_eq!(cal.outer_ns, 35.0);
        assert_eq!(Calibration::minimum_of_batches(&[]), None);
    }

    #[test]
    fn uncertainty_follows_the_share_of_probe_cost() {
        // 30% of 100 ns of probe cost is 30 ns: uncertain below 300 ns, not from 300 ns.
        assert!(probe_dominated(299, 100));
        assert!(!probe_dominated(300, 100));
        assert!(probe_dominated(0, 1));
        // Without compensation nothing is uncertain, not even an empty node.
        assert!(!probe_dominated(0, 0));
        // The calibrated rest of self-measuring probes may be off by all of it.
        assert!(rest_dominated(999, 100));
        assert!(!rest_dominated(1_000, 100));
        assert!(!rest_dominated(0, 0));
        let t = Times {
            total_ns: 1_000,
            self_ns: 50,
            overhead_ns: 20,
            total_overhead_ns: 400,
            // Measured probe time is no estimate: it never makes a time uncertain.
            probe_ns: 5_000,
            total_probe_ns: 50_000,
        };
        assert!(t.self_uncertain()); // 20 > 5
        assert!(t.total_uncertain()); // 400 > 100
        let rest_only = Times {
            total_ns: 150,
            self_ns: 150,
            overhead_ns: 20,
            total_overhead_ns: 20,
            ..Times::default()
        };
        // 30% of 20 is under 10% of 150, all of 20 is not.
        assert!(rest_only.self_uncertain() && rest_only.total_uncertain());
        assert!(!probe_dominated(150, 20));
        let measured_only = Times {
            total_ns: 100,
            self_ns: 10,
            probe_ns: 1_000,
            total_probe_ns: 1_000,
            ..Times::default()
        };
        assert!(!measured_only.self_uncertain() && !measured_only.total_uncertain());
        assert_eq!(
            Calibration {
                inner_ns: 2.5,
                outer_ns: 4.0
            }
            .overhead_ns(2, 3),
            17.0
        );
    }

    #[test]
    fn cpu_times_are_compensated_like_wall_times() {
        use crate::method::MethodId;
        use crate::recorder::{Stamp, ThreadRecorder};
        let (f, g) = (MethodId(0), MethodId(1));
        let mut rec = ThreadRecorder::new(10);
        rec.enter(f, Stamp::with_cpu(0, 0));
        for i in 0..2 {
            rec.enter(g, Stamp::with_cpu(10 + i * 100, 10 + i * 100));
            rec.exit(g, Stamp::with_cpu(60 + i * 100, 60 + i * 100))
                .unwrap();
        }
        rec.exit(f, Stamp::with_cpu(1_000, 400)).unwrap();
        let tree = rec.finish(Stamp::wall(1_000));
        let (thread, f_node) = (tree.root(), tree.node(tree.root()).children()[0]);
        let g_node = tree.node(f_node).children()[0];
        let measured = node_cpu_times(&tree, None, None);
        assert_eq!(
            measured[f_node.index()],
            Some(CpuTimes {
                total_ns: 400,
                self_ns: 300,
                ..CpuTimes::default()
            })
        );
        let cal = Calibration {
            inner_ns: 7.0,
            outer_ns: 3.0,
        };
        let cpu = node_cpu_times(&tree, Some(&cal), None);
        // g: 100 - 2 * 7 = 86; f: 300 - 7 - 2 * 3 = 287, total 287 + 86.
        assert_eq!(
            cpu[g_node.index()],
            Some(CpuTimes {
                total_ns: 86,
                self_ns: 86,
                overhead_ns: 14,
                total_overhead_ns: 14
            })
        );
        assert_eq!(
            cpu[f_node.index()],
            Some(CpuTimes {
                total_ns: 373,
                self_ns: 287,
                overhead_ns: 13,
                total_overhead_ns: 27
            })
        );
        // 30% of the 27 ns subtracted is under 10% of 373 ns, and of g's 14 under 10% of 86;
        // 14 ns subtracted from what left 10 ns is mostly probe cost.
        let f_cpu = cpu[f_node.index()].unwrap();
        assert!(!f_cpu.total_uncertain() && !f_cpu.self_uncertain());
        assert!(!cpu[g_node.index()].unwrap().self_uncertain());
        let tiny = CpuTimes {
            total_ns: 10,
            self_ns: 10,
            overhead_ns: 14,
            total_overhead_ns: 14,
        };
        assert!(tiny.self_uncertain() && tiny.total_uncertain());
        assert_eq!(cpu[thread.index()].unwrap().total_ns, 373);
        // A tree without CPU stamps has no CPU times.
        let mut wall = ThreadRecorder::new(10);
        wall.enter(f, Stamp::wall(0));
        wall.exit(f, Stamp::wall(5)).unwrap();
        let wall = wall.finish(Stamp::wall(5));
        assert!(node_cpu_times(&wall, Some(&cal), None)
            .iter()
            .all(Option::is_none));
    }

    #[test]
    fn self_cpu_never_exceeds_self_wall() {
        use crate::method::MethodId;
        use crate::recorder::{Stamp, ThreadRecorder};
        // The wall calibration takes 50 of f's 100 ns, the CPU one 5 of its 90: the CPU time
        // left is bounded by the wall time left, the rest counted as probe cost.
        let f = MethodId(0);
        let mut rec = ThreadRecorder::new(10);
        rec.enter(f, Stamp::with_cpu(0, 0));
        rec.exit(f, Stamp::with_cpu(100, 90)).unwrap();
        let tree = rec.finish(Stamp::wall(100));
        let f_node = tree.node(tree.root()).children()[0];
        let wall_cal = Calibration {
            inner_ns: 50.0,
            outer_ns: 0.0,
        };
        let cpu_cal = Calibration {
            inner_ns: 5.0,
            outer_ns: 0.0,
        };
        let wall = node_times(&tree, Some(&wall_cal));
        assert_eq!(wall[f_node.index()].self_ns, 50);
        let unbounded = node_cpu_times(&tree, Some(&cpu_cal), None)[f_node.index()].unwrap();
        assert_eq!((unbounded.self_ns, unbounded.overhead_ns), (85, 5));
        let cpu = node_cpu_times(&tree, Some(&cpu_cal), Some(&wall))[f_node.index()].unwrap();
        assert_eq!((cpu.self_ns, cpu.total_ns, cpu.overhead_ns), (50, 50, 40));
    }

    #[test]
    fn outer_is_never_negative() {
        // Inner and total are estimated separately, so noise can put inner above total.
        let cal = Calibration::from_batches(&[batch(10, 500, 600)]).unwrap();
        assert_eq!((cal.inner_ns, cal.outer_ns), (60.0, 0.0));
    }
}
