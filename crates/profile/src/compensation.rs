//! How far the compensation can be trusted: the calibration made robust against a busy
//! machine, bounded by what the probes measured of themselves, and the rules by which a
//! profile says it is unreliable.
//!
//! A calibration batch whose thread lost its CPU (another process ran, a safepoint stopped
//! it) measures the scheduler, not the probes: its wall time grows by whole time slices,
//! milliseconds spread over its pairs. Such batches are left out ([`DISTURBED_SHARE`]).
//! Batches are pooled over the whole profile ([`Calibrator`]: at start and now and then
//! while it runs), and the estimate is the median of the kept ones, as
//! [`Calibration::from_batches`] explains. What is still wrong is bounded: the calibrated rest
//! of a pair may not exceed [`REST_CAP`] times what the profile's probes measured of
//! themselves per pair, and no node loses more than its measured time
//! ([`crate::node_times`]). What cannot be bounded is said ([`Unreliable`]).

use std::collections::VecDeque;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::calibration::{Calibration, CalibrationBatch};
use crate::tree::{CallTree, NodeKind};

/// A calibration batch is disturbed when its thread was off its CPU for more than this share
/// of its wall time. Undisturbed, the thread's CPU clock and the wall clock advance together
/// (a few µs apart over a batch of milliseconds); one lost time slice is a millisecond or more.
pub const DISTURBED_SHARE: f64 = 0.02;

/// The fewest batches an estimate is made from. With fewer undisturbed ones, the estimate is
/// made from the cheapest `MIN_KEPT` batches of the pool and the profile says the machine was
/// loaded: losing the CPU only ever adds time to a batch (a time slice spread over its pairs,
/// or nothing when it fell inside a probe's own measured interval), so on a busy machine the
/// cheapest batches are the ones it disturbed least.
pub const MIN_KEPT: usize = 8;

/// Batches kept in the pool (the most recent ones): with one batch every quarter second this
/// is the last four minutes of a profile.
pub const POOL: usize = 1024;

/// The kept batches disagree when their interquartile range exceeds this share of their
/// median. The probes' two speeds on a quiet machine (a rest of ~21 and ~31 ns per pair) stay
/// under it; a calibration running at several speeds does not.
pub const DISAGREE_SHARE: f64 = 0.5;

/// The calibrated rest of a pair (the calls into the probes and back) is at most this many
/// times what the probes measured of themselves per pair in the profile. In application code
/// the rest was measured at 0.6-0.9 times the measured part (docs/PERFORMANCE.md, "Session
/// 12") and a quiet calibration's rest at up to ~1.1 times an application's measured part;
/// a rest above 1.5 times is the calibration's error, not the probes' cost.
pub const REST_CAP: f64 = 1.5;

/// Compensation is unreliable when the calibrated rest subtracted exceeds this share of the
/// measured time: most of what is reported is then an estimate's remainder.
pub const ESTIMATE_SHARE: f64 = 0.5;

/// What the calibration saw: the numbers the report's verdict is made from.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct CalibrationStats {
    /// Batches run, at start and during the profile.
    pub batches: u64,
    /// Of them, batches whose thread was off its CPU more than [`DISTURBED_SHARE`] of their
    /// time.
    pub disturbed: u64,
    /// The share of all batches' wall time their thread spent off its CPU.
    pub descheduled_share: f64,
    /// Batches the estimate was made from (the undisturbed ones among the most recent
    /// [`POOL`], or the [`MIN_KEPT`] cheapest of those).
    pub kept: u64,
    /// Quartiles of the kept batches' calibrated rest per pair (inner + outer), ns: first,
    /// median, third.
    pub pair_ns: [f64; 3],
    /// The calibration as estimated, when [`REST_CAP`] lowered what was subtracted (the
    /// profile's `calibration` is then the capped one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrated: Option<Calibration>,
}

/// Calibration batches pooled over a profile.
#[derive(Clone, Debug, Default)]
pub struct Calibrator {
    pool: VecDeque<CalibrationBatch>,
    batches: u64,
    disturbed: u64,
    wall_ns: u64,
    off_cpu_ns: u64,
}

impl CalibrationBatch {
    /// Its thread was off its CPU for more than [`DISTURBED_SHARE`] of its wall time.
    pub fn disturbed(&self) -> bool {
        self.off_cpu_ns as f64 > DISTURBED_SHARE * self.wall_ns as f64
    }

    /// The calibrated rest per pair it measured, ns.
    fn per_pair(&self) -> f64 {
        self.elapsed_ns as f64 / self.pairs.max(1) as f64
    }
}

impl Calibrator {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a batch (empty batches are ignored); the oldest leaves a full pool.
    pub fn add(&mut self, batch: CalibrationBatch) {
        if batch.pairs == 0 {
            return;
        }
        self.batches += 1;
        self.disturbed += u64::from(batch.disturbed());
        self.wall_ns += batch.wall_ns;
        self.off_cpu_ns += batch.off_cpu_ns.min(batch.wall_ns);
        if self.pool.len() == POOL {
            self.pool.pop_front();
        }
        self.pool.push_back(batch);
    }

    /// Undisturbed batches in the pool.
    pub fn undisturbed(&self) -> usize {
        self.pool.iter().filter(|b| !b.disturbed()).count()
    }

    /// The estimate: the median of the undisturbed batches in the pool, or, with fewer than
    /// [`MIN_KEPT`] of them, of the [`MIN_KEPT`] cheapest. `None` without a batch.
    pub fn estimate(&self) -> Option<(Calibration, CalibrationStats)> {
        let mut kept: Vec<CalibrationBatch> = self
            .pool
            .iter()
            .filter(|b| !b.disturbed())
            .copied()
            .collect();
        if kept.len() < MIN_KEPT {
            let mut all: Vec<CalibrationBatch> = self.pool.iter().copied().collect();
            all.sort_by(|a, b| a.per_pair().total_cmp(&b.per_pair()));
            all.truncate(MIN_KEPT);
            kept = all;
        }
        let calibration = Calibration::from_batches(&kept)?;
        let pairs: Vec<f64> = kept
            .iter()
            .map(|b| b.elapsed_ns as f64 / b.pairs as f64)
            .collect();
        let stats = CalibrationStats {
            batches: self.batches,
            disturbed: self.disturbed,
            descheduled_share: if self.wall_ns == 0 {
                0.0
            } else {
                self.off_cpu_ns as f64 / self.wall_ns as f64
            },
            kept: kept.len() as u64,
            pair_ns: quartiles(pairs),
            calibrated: None,
        };
        Some((calibration, stats))
    }
}

/// First quartile, median and third quartile (linear interpolation between ranks); zeros
/// when empty.
fn quartiles(mut xs: Vec<f64>) -> [f64; 3] {
    if xs.is_empty() {
        return [0.0; 3];
    }
    xs.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let pos = q * (xs.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        xs[lo] + (xs[hi] - xs[lo]) * (pos - lo as f64)
    };
    [at(0.25), at(0.5), at(0.75)]
}

impl Calibration {
    /// This calibration with its rest per pair (inner + outer) at most [`REST_CAP`] times
    /// `measured_pair_ns`, what the probes measured of themselves per pair; inner and outer
    /// keep their proportion. `None` when it is within the cap or nothing was measured.
    pub fn capped(&self, measured_pair_ns: f64) -> Option<Calibration> {
        let rest = self.inner_ns + self.outer_ns;
        let cap = REST_CAP * measured_pair_ns;
        if measured_pair_ns <= 0.0 || rest <= cap {
            return None;
        }
        Some(Calibration {
            inner_ns: self.inner_ns * cap / rest,
            outer_ns: self.outer_ns * cap / rest,
        })
    }
}

/// What the probes of `trees` measured of themselves, and their pairs (calls of method
/// nodes).
pub fn measured_probes<'a>(trees: impl IntoIterator<Item = &'a CallTree>) -> (u64, u64) {
    let (mut probe_ns, mut pairs) = (0u64, 0u64);
    for tree in trees {
        for id in tree.ids() {
            let node = tree.node(id);
            probe_ns += node.probe_ns;
            if let NodeKind::Method(_) = node.kind {
                pairs += node.calls;
            }
        }
    }
    (probe_ns, pairs)
}

/// Why a profile's compensation is unreliable, with the numbers.
#[derive(Clone, Debug, PartialEq)]
pub enum Unreliable {
    /// Fewer than [`MIN_KEPT`] calibration batches ran without losing their CPU.
    Loaded {
        /// Batches run.
        batches: u64,
        /// Of them, disturbed.
        disturbed: u64,
        /// Share of the calibration's wall time off its CPU.
        descheduled_share: f64,
    },
    /// The kept batches' interquartile range exceeds [`DISAGREE_SHARE`] of their median.
    Disagree {
        /// Quartiles of the rest per pair, ns.
        pair_ns: [f64; 3],
    },
    /// The calibrated rest exceeded [`REST_CAP`] times the probes' measured part and was
    /// lowered to it.
    Capped {
        /// Calibrated rest per pair, ns.
        calibrated_ns: f64,
        /// What the probes measured of themselves per pair, ns.
        measured_ns: f64,
        /// The rest subtracted instead, ns.
        applied_ns: f64,
    },
    /// The calibrated rest subtracted exceeds [`ESTIMATE_SHARE`] of the measured time.
    MostlyEstimate {
        /// Calibrated rest subtracted, over all threads, ns.
        estimated_ns: u64,
        /// Measured time inside the roots, over all threads, ns.
        measured_ns: u64,
    },
}

impl fmt::Display for Unreliable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Unreliable::Loaded {
                batches,
                disturbed,
                descheduled_share,
            } => write!(
                f,
                "the machine was busy while calibrating ({disturbed} of {batches} calibration \
                 batches lost their CPU, {:.0}% of their time off CPU)",
                descheduled_share * 100.0
            ),
            Unreliable::Disagree {
                pair_ns: [q1, m, q3],
            } => write!(
                f,
                "the calibration batches disagree (probe pair's rest {q1:.1} / {m:.1} / {q3:.1} ns \
                 per call, quartiles)"
            ),
            Unreliable::Capped {
                calibrated_ns,
                measured_ns,
                applied_ns,
            } => write!(
                f,
                "the calibrated rest of a probe pair ({calibrated_ns:.1} ns) exceeded {REST_CAP} \
                 times what the probes measured of themselves ({measured_ns:.1} ns per pair): \
                 {applied_ns:.1} ns subtracted instead"
            ),
            Unreliable::MostlyEstimate {
                estimated_ns,
                measured_ns,
            } => write!(
                f,
                "{:.0}% of the measured time ({} of {} ms) was subtracted as calibrated probe cost",
                estimated_ns as f64 * 100.0 / measured_ns.max(1) as f64,
                ms(estimated_ns),
                ms(measured_ns)
            ),
        }
    }
}

fn ms(ns: u64) -> String {
    let us = (ns + 500) / 1000;
    format!("{}.{:03}", us / 1000, us % 1000)
}

/// The rules on the calibration's own numbers (`stats`), with the profile's measured probe
/// time per pair when the rest was capped.
pub fn calibration_verdict(
    stats: &CalibrationStats,
    applied: Option<&Calibration>,
    measured_pair_ns: f64,
) -> Vec<Unreliable> {
    let mut out = Vec::new();
    if stats.kept > 0 && stats.batches - stats.disturbed < MIN_KEPT as u64 {
        out.push(Unreliable::Loaded {
            batches: stats.batches,
            disturbed: stats.disturbed,
            descheduled_share: stats.descheduled_share,
        });
    }
    let [q1, median, q3] = stats.pair_ns;
    if q3 - q1 > DISAGREE_SHARE * median {
        out.push(Unreliable::Disagree {
            pair_ns: stats.pair_ns,
        });
    }
    if let (Some(c), Some(a)) = (stats.calibrated, applied) {
        out.push(Unreliable::Capped {
            calibrated_ns: c.inner_ns + c.outer_ns,
            measured_ns: measured_pair_ns,
            applied_ns: a.inner_ns + a.outer_ns,
        });
    }
    out
}

/// The share rule: `estimated_ns` of calibrated rest subtracted from `measured_ns`.
pub fn mostly_estimate(estimated_ns: u64, measured_ns: u64) -> bool {
    estimated_ns as f64 > ESTIMATE_SHARE * measured_ns as f64
}
