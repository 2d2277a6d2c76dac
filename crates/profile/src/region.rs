//! Code-region mode (JFluid's lightweight mode): for each region method, the distribution of the
//! gross (wall) time of its outermost invocations per thread. The agent measures and aggregates;
//! this is the data the JSON document carries and the report writers render.

use serde::{Deserialize, Serialize};

/// Value of the document's `mode` field for code-region profiles.
pub const MODE_REGION: &str = "region";

/// Percentiles of a duration distribution, ns (each at most 1% above the true value: the
/// agent's histograms keep two significant digits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9_ns")]
    pub p999_ns: u64,
}

/// One bar of the latency distribution: invocations with `previous le_ns < duration <= le_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    /// Upper bound of the bar, ns.
    pub le_ns: u64,
    /// Invocations in the bar.
    pub count: u64,
}

/// Durations as measured, probe costs included.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Uncompensated {
    /// Sum of the durations, ns.
    pub total_ns: u64,
    /// Shortest, ns.
    pub min_ns: u64,
    /// Longest, ns.
    pub max_ns: u64,
    /// Percentiles.
    pub percentiles: Percentiles,
    /// The last durations, oldest first.
    pub last_ns: Vec<u64>,
}

/// The measurements of one region method, over all threads.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RegionStats {
    /// Dotted class name.
    pub class: String,
    /// Method name.
    pub method: String,
    /// JVM descriptor.
    pub descriptor: String,
    /// Outermost invocations that completed while collecting (recursive re-entries are inside
    /// their outermost invocation and not counted).
    pub count: u64,
    /// Threads that completed at least one invocation.
    pub threads: u64,
    /// Sum of the compensated durations, ns.
    pub total_ns: u64,
    /// Of `total_ns`, the compensated time of other region methods' invocations that ran
    /// directly inside these (they have their own `total_ns`); absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nested_ns: u64,
    /// Shortest compensated duration, ns (0 without invocations).
    pub min_ns: u64,
    /// Longest compensated duration, ns.
    pub max_ns: u64,
    /// Percentiles of the compensated durations.
    pub percentiles: Percentiles,
    /// Latency distribution of the compensated durations (log-scale bars, 1-2-5 steps, from
    /// the first non-empty bar to the last).
    pub distribution: Vec<Bucket>,
    /// The last compensated durations (all threads, by end time), oldest first.
    pub last_ns: Vec<u64>,
    /// The same, measured.
    pub uncompensated: Uncompensated,
    /// The compensated durations are mostly probe cost (see [`RegionStats::probe_dominated`]):
    /// the count is exact, the times are not. Written only when `true`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub uncertain: bool,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl RegionStats {
    /// The compensated time spent in these invocations outside other region methods, ns:
    /// what a folded stack of this method alone weighs.
    pub fn own_ns(&self) -> u64 {
        self.total_ns.saturating_sub(self.nested_ns)
    }

    /// Mean compensated duration, ns (0 without invocations).
    pub fn mean_ns(&self) -> u64 {
        self.total_ns.checked_div(self.count).unwrap_or(0)
    }

    /// Whether the probe cost subtracted (measured less compensated total) is large beside
    /// what is left, by the rule the call tree's `~` marks follow
    /// ([`crate::calibration::probe_dominated`]); the agent sets [`RegionStats::uncertain`] by it.
    pub fn probe_dominated(&self) -> bool {
        crate::calibration::probe_dominated(
            self.total_ns,
            self.uncompensated.total_ns.saturating_sub(self.total_ns),
        )
    }

    /// A label `com.acme.Foo.bar(I)V`.
    pub fn label(&self) -> String {
        format!("{}.{}{}", self.class, self.method, self.descriptor)
    }
}

/// The bar bounds of [`RegionStats::distribution`]: 1, 2, 5, 10, 20, 50 ... ns up to past `max`.
pub fn bucket_bounds(max: u64) -> Vec<u64> {
    let mut bounds = Vec::new();
    let mut decade: u64 = 1;
    loop {
        for step in [1, 2, 5] {
            let b = decade.saturating_mul(step);
            bounds.push(b);
            if b >= max || b == u64::MAX {
                return bounds;
            }
        }
        decade = decade.saturating_mul(10);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_step_1_2_5_until_max() {
        assert_eq!(bucket_bounds(0), [1]);
        assert_eq!(bucket_bounds(7), [1, 2, 5, 10]);
        assert_eq!(bucket_bounds(50), [1, 2, 5, 10, 20, 50]);
        assert_eq!(*bucket_bounds(u64::MAX).last().unwrap(), u64::MAX);
    }

    #[test]
    fn mean_and_label() {
        let r = RegionStats {
            class: "demo.Work".into(),
            method: "step".into(),
            descriptor: "(I)V".into(),
            count: 4,
            total_ns: 10,
            ..Default::default()
        };
        assert_eq!(r.mean_ns(), 2);
        assert_eq!(r.label(), "demo.Work.step(I)V");
        assert_eq!(RegionStats::default().mean_ns(), 0);
    }

    #[test]
    fn durations_mostly_probe_cost_are_probe_dominated() {
        let region = |total_ns, measured_ns| RegionStats {
            count: 10,
            total_ns,
            uncompensated: Uncompensated {
                total_ns: measured_ns,
                ..Default::default()
            },
            ..Default::default()
        };
        // 30% of 100 ns subtracted is 30 ns: above 10% of 200 ns, below 10% of 400 ns.
        assert!(region(200, 300).probe_dominated());
        assert!(!region(400, 500).probe_dominated());
        // Not compensated: nothing subtracted, nothing to doubt.
        assert!(!region(5, 5).probe_dominated());
        let json = |r: &RegionStats| serde_json::to_string(r).unwrap();
        assert!(!json(&region(400, 500)).contains("uncertain"));
        let marked = RegionStats {
            uncertain: true,
            ..region(200, 300)
        };
        assert!(json(&marked).ends_with(r#""uncertain":true}"#));
        let back: RegionStats = serde_json::from_str(&json(&marked)).unwrap();
        assert_eq!(back, marked);
    }
}
