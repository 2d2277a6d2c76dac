//! A region method's measurements: durations (compensated and measured) in histograms, with
//! the last few, per thread and merged, and their summary for the profile.

use std::collections::VecDeque;

use ferrofluid_profile::region::{bucket_bounds, Bucket, Percentiles, RegionStats, Uncompensated};
use ferrofluid_profile::MethodInfo;
use hdrhistogram::Histogram;

/// Longest duration the histograms tell apart (longer ones count as this), ns: one hour.
pub(super) const MAX_NS: u64 = 3_600_000_000_000;

/// Significant digits of the histograms: percentiles within 1%, ~36 KiB per histogram.
const DIGITS: u8 = 2;

/// One region method's measurements on one thread (or merged).
#[derive(Clone)]
pub(super) struct MethodStats {
    count: u64,
    threads: u64,
    total: u64,
    /// Compensated time of other region methods' invocations nested directly inside.
    nested: u64,
    raw_total: u64,
    min: u64,
    max: u64,
    raw_min: u64,
    raw_max: u64,
    hist: Histogram<u64>,
    raw_hist: Histogram<u64>,
    /// (end timestamp, compensated, measured), oldest first.
    last: VecDeque<(u64, u64, u64)>,
}

impl MethodStats {
    pub(super) fn new() -> MethodStats {
        let hist = Histogram::new_with_bounds(1, MAX_NS, DIGITS).expect("valid histogram bounds");
        MethodStats {
            count: 0,
            threads: 0,
            total: 0,
            nested: 0,
            raw_total: 0,
            min: u64::MAX,
            max: 0,
            raw_min: u64::MAX,
            raw_max: 0,
            raw_hist: hist.clone(),
            hist,
            last: VecDeque::new(),
        }
    }

    pub(super) fn record(&mut self, end: u64, raw: u64, comp: u64, nested: u64, keep: usize) {
        self.count += 1;
        self.threads = 1;
        self.total += comp;
        self.nested += nested.min(comp);
        self.raw_total += raw;
        self.min = self.min.min(comp);
        self.max = self.max.max(comp);
        self.raw_min = self.raw_min.min(raw);
        self.raw_max = self.raw_max.max(raw);
        self.hist.saturating_record(comp.min(MAX_NS));
        self.raw_hist.saturating_record(raw.min(MAX_NS));
        if keep > 0 {
            if self.last.len() >= keep {
                self.last.pop_front();
            }
            self.last.push_back((end, comp, raw));
        }
    }

    pub(super) fn merge(&mut self, other: &MethodStats, keep: usize) {
        self.count += other.count;
        self.threads += other.threads;
        self.total += other.total;
        self.nested += other.nested;
        self.raw_total += other.raw_total;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.raw_min = self.raw_min.min(other.raw_min);
        self.raw_max = self.raw_max.max(other.raw_max);
        // Same bounds on both sides: adding cannot fail.
        let _ = self.hist.add(&other.hist);
        let _ = self.raw_hist.add(&other.raw_hist);
        let mut last: Vec<_> = self.last.iter().chain(&other.last).copied().collect();
        last.sort_by_key(|l| l.0);
        let skip = last.len().saturating_sub(keep);
        self.last = last.into_iter().skip(skip).collect();
    }
}

#[derive(Default)]
pub(super) struct ThreadStats {
    /// (global id, stats); a thread runs few region methods, so a vector is fastest.
    pub(super) methods: Vec<(u32, MethodStats)>,
}

impl ThreadStats {
    pub(super) fn method(&mut self, id: u32) -> &mut MethodStats {
        let i = match self.methods.iter().position(|(m, _)| *m == id) {
            Some(i) => i,
            None => {
                self.methods.push((id, MethodStats::new()));
                self.methods.len() - 1
            }
        };
        &mut self.methods[i].1
    }

    pub(super) fn merge(&mut self, other: &ThreadStats, keep: usize) {
        for (id, s) in &other.methods {
            self.method(*id).merge(s, keep);
        }
    }
}

pub(super) fn stats_of(info: MethodInfo, s: &MethodStats) -> RegionStats {
    let empty = s.count == 0;
    let or0 = |v: u64| if empty { 0 } else { v };
    let mut stats = RegionStats {
        class: info.class,
        method: info.method,
        descriptor: info.descriptor,
        count: s.count,
        threads: s.threads,
        total_ns: s.total,
        nested_ns: s.nested,
        min_ns: or0(s.min),
        max_ns: s.max,
        percentiles: percentiles(&s.hist, s.max),
        distribution: distribution(&s.hist),
        last_ns: s.last.iter().map(|l| l.1).collect(),
        uncompensated: Uncompensated {
            total_ns: s.raw_total,
            min_ns: or0(s.raw_min),
            max_ns: s.raw_max,
            percentiles: percentiles(&s.raw_hist, s.raw_max),
            last_ns: s.last.iter().map(|l| l.2).collect(),
        },
        uncertain: false,
    };
    stats.uncertain = stats.probe_dominated();
    stats
}

/// Percentiles from the histogram, never above the exact maximum (the histogram's answer is the
/// top of a bucket).
fn percentiles(h: &Histogram<u64>, max: u64) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    let at = |q: f64| h.value_at_quantile(q).min(max);
    Percentiles {
        p50_ns: at(0.50),
        p90_ns: at(0.90),
        p99_ns: at(0.99),
        p999_ns: at(0.999),
    }
}

/// Log-scale bars from the first non-empty one to the last.
fn distribution(h: &Histogram<u64>) -> Vec<Bucket> {
    if h.is_empty() {
        return Vec::new();
    }
    let bounds = bucket_bounds(h.max());
    let mut counts = vec![0u64; bounds.len()];
    for v in h.iter_recorded() {
        // A histogram bucket goes to the bar of its lowest value (its values differ by < 1%).
        let low = h.lowest_equivalent(v.value_iterated_to());
        let i = bounds.partition_point(|b| *b < low).min(bounds.len() - 1);
        counts[i] += v.count_at_value();
    }
    let first = counts.iter().position(|c| *c > 0).unwrap_or(0);
    let last = counts.iter().rposition(|c| *c > 0).unwrap_or(0);
    (first..=last)
        .map(|i| Bucket {
            le_ns: bounds[i],
            count: counts[i],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(durations: &[u64]) -> MethodStats {
        let mut s = MethodStats::new();
        for (i, d) in durations.iter().enumerate() {
            s.record(i as u64, d + 10, *d, 0, 3);
        }
        s
    }

    #[test]
    fn one_thread_summary() {
        let s = stats(&[1_000, 2_000, 3_000, 20_000_000]);
        let r = stats_of(MethodInfo::from_internal("demo/Work", "step", "()V"), &s);
        assert_eq!((r.class.as_str(), r.count, r.threads), ("demo.Work", 4, 1));
        assert_eq!(
            (r.total_ns, r.min_ns, r.max_ns),
            (20_006_000, 1_000, 20_000_000)
        );
        assert_eq!(r.uncompensated.total_ns, 20_006_040);
        assert_eq!(
            (r.uncompensated.min_ns, r.uncompensated.max_ns),
            (1_010, 20_000_010)
        );
        assert_eq!(r.last_ns, [2_000, 3_000, 20_000_000]);
        assert_eq!(r.uncompensated.last_ns, [2_010, 3_010, 20_000_010]);
        // Two significant digits: within 1% above the true value, never above the maximum.
        let p = r.percentiles;
        assert!((2_000..=2_020).contains(&p.p50_ns), "{p:?}");
        assert_eq!(
            (p.p90_ns, p.p99_ns, p.p999_ns),
            (20_000_000, 20_000_000, 20_000_000)
        );
        let bars: Vec<(u64, u64)> = r.distribution.iter().map(|b| (b.le_ns, b.count)).collect();
        assert_eq!(
            bars,
            [
                (1_000, 1),
                (2_000, 1),
                (5_000, 1),
                (10_000, 0),
                (20_000, 0),
                (50_000, 0),
                (100_000, 0),
                (200_000, 0),
                (500_000, 0),
                (1_000_000, 0),
                (2_000_000, 0),
                (5_000_000, 0),
                (10_000_000, 0),
                (20_000_000, 1)
            ]
        );
    }

    #[test]
    fn merging_threads_keeps_the_last_by_end_time() {
        let mut a = stats(&[5, 7]); // ends 0, 1
        let mut b = MethodStats::new();
        b.record(5, 1, 1, 0, 3);
        b.record(0, 9, 9, 5, 3);
        a.merge(&b, 3);
        assert_eq!(
            (a.count, a.threads, a.total, a.nested, a.min, a.max),
            (4, 2, 22, 5, 1, 9)
        );
        let last: Vec<u64> = a.last.iter().map(|l| l.1).collect();
        assert_eq!(last, [9, 7, 1]);
    }

    #[test]
    fn empty_method_reports_zeros() {
        let r = stats_of(MethodInfo::new("A", "b", "()V"), &MethodStats::new());
        assert_eq!((r.count, r.min_ns, r.max_ns), (0, 0, 0));
        assert_eq!(r.percentiles, Percentiles::default());
        assert!(r.distribution.is_empty() && r.last_ns.is_empty());
    }
}
