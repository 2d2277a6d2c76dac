//! How much each metric may change before the diff reports it.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use ferrofluid_profile::metric::CALLS;
use thiserror::Error;

/// How much a metric may change before the diff reports it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Threshold {
    /// Never reported.
    Unchecked,
    /// More than this many units (`0`: any change).
    Absolute(u64),
    /// More than this percentage of the base value (any value from a base of 0).
    Percent(f64),
}

/// A threshold that does not parse.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("invalid threshold {0:?}: give a number of units (0: any change), a percentage like 5%, or none")]
pub struct BadThreshold(pub String);

impl FromStr for Threshold {
    type Err = BadThreshold;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadThreshold(s.to_owned());
        let t = s.trim();
        if t == "none" {
            return Ok(Threshold::Unchecked);
        }
        if let Some(p) = t.strip_suffix('%') {
            let p: f64 = p.trim().parse().map_err(|_| bad())?;
            return if p.is_finite() && p >= 0.0 {
                Ok(Threshold::Percent(p))
            } else {
                Err(bad())
            };
        }
        t.parse().map(Threshold::Absolute).map_err(|_| bad())
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Threshold::Unchecked => f.write_str("not checked"),
            Threshold::Absolute(0) => f.write_str("any change"),
            Threshold::Absolute(n) => write!(f, "more than {n}"),
            Threshold::Percent(p) => write!(f, "more than {p}%"),
        }
    }
}

impl Threshold {
    /// Whether a change from `base` to `new` by more than `noise` goes past this threshold;
    /// the part within `noise` does not count.
    pub fn exceeded(self, base: u64, new: u64, noise: u64) -> bool {
        let delta = base.abs_diff(new);
        if delta <= noise {
            return false;
        }
        match self {
            Threshold::Unchecked => false,
            Threshold::Absolute(n) => delta > n,
            Threshold::Percent(p) => base == 0 || delta as f64 * 100.0 > p * base as f64,
        }
    }
}

/// The thresholds per metric name; a metric without one is not checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Thresholds {
    /// By metric name (`calls`, `time`, `bytecodes`, `objects`, `bytes`, ...).
    pub by_metric: BTreeMap<String, Threshold>,
}

impl Default for Thresholds {
    /// Any change in a count (calls, bytecodes, objects, bytes); times are not checked.
    fn default() -> Self {
        let mut by_metric = BTreeMap::new();
        for name in [CALLS, "bytecodes", "objects", "bytes", "samples"] {
            by_metric.insert(name.to_owned(), Threshold::Absolute(0));
        }
        Self { by_metric }
    }
}

impl Thresholds {
    /// The threshold of `metric`.
    pub fn of(&self, metric: &str) -> Threshold {
        self.by_metric
            .get(metric)
            .copied()
            .unwrap_or(Threshold::Unchecked)
    }
}
