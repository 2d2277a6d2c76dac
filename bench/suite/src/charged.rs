//! The time a workload's root method took, read from a run's profile: charged by the call
//! subgraph profile (`root` mode) or measured by code-region mode (`region` mode, on the same
//! method). Their ratio is JFluid's accuracy measure (its Table 2: charged time against root
//! time from the lightweight region mechanism): an exact compensation charges the root what it
//! costs without the profiler.

use ferrofluid_profile::json::{NodeDoc, NodeKindDoc};
use ferrofluid_profile::Document;

/// Invocations of the root method and the time they took, summed over threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RootTime {
    /// Outermost invocations (a recursive re-entry is inside the one that encloses it).
    pub calls: u64,
    /// Compensated time, ns.
    pub ns: u64,
    /// Measured time, probe cost included, ns.
    pub measured_ns: u64,
    /// Some charged total is mostly probe cost (the report marks it `~`).
    pub uncertain: bool,
}

/// The root time in a profile of mode `cpu` (the thread nodes' children named like `root`,
/// `class::method`) or `region` (every region; the suite's region pattern is the root).
pub fn root_time(json: &[u8], root: &str) -> Option<RootTime> {
    let doc = Document::from_json_slice(json).ok()?;
    if let Some(regions) = &doc.regions {
        return Some(regions.iter().fold(RootTime::default(), |t, r| RootTime {
            calls: t.calls + r.count,
            ns: t.ns + r.total_ns,
            measured_ns: t.measured_ns + r.uncompensated.total_ns,
            uncertain: false,
        }));
    }
    let (class, method) = root.split_once("::")?;
    // `name(descriptor)` names one overload; a bare name all of them.
    let (method, descriptor) = match method.find('(') {
        Some(at) => (&method[..at], Some(&method[at..])),
        None => (method, None),
    };
    let is_root = |n: &&NodeDoc| {
        n.kind == NodeKindDoc::Method
            && n.class == class
            && n.method == method
            && descriptor.is_none_or(|d| n.descriptor == d)
    };
    Some(
        doc.threads
            .iter()
            .flat_map(|t| t.root.children.iter().filter(is_root))
            .fold(RootTime::default(), |t, n| RootTime {
                calls: t.calls + n.calls.unwrap_or(0),
                ns: t.ns + n.total_ns.unwrap_or(0),
                measured_ns: t.measured_ns + n.measured_total_ns.or(n.total_ns).unwrap_or(0),
                uncertain: t.uncertain || n.total_uncertain,
            }),
    )
}

/// The median of `times` by compensated time (the lower middle one of an even count: a real
/// run's numbers, not a mix of two).
pub fn median(mut times: Vec<RootTime>) -> Option<RootTime> {
    times.sort_by_key(|t| t.ns);
    let n = times.len();
    (n > 0).then(|| times[(n - 1) / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPU: &str = r#"{"format":"ferrofluid","version":1,"mode":"cpu",
      "methods":{"instrumented":3,"called":3},
      "calibration":{"inner_ns":10.0,"outer_ns":20.0},
      "threads":[
        {"name":"main","root":{"kind":"thread","class":"","method":"<thread>","descriptor":"",
          "calls":0,"total_ns":900,"self_ns":0,"children":[
          {"class":"a.B","method":"run","descriptor":"()V","calls":2,"total_ns":700,"self_ns":500,
           "measured_total_ns":800,"total_uncertain":true,"children":[
            {"class":"a.B","method":"run","descriptor":"()V","calls":1,"total_ns":200,"self_ns":200,"children":[]}]},
          {"class":"a.B","method":"run","descriptor":"(I)V","calls":1,"total_ns":100,"self_ns":100,"children":[]},
          {"class":"a.C","method":"run","descriptor":"()V","calls":5,"total_ns":100,"self_ns":100,"children":[]}]}},
        {"name":"t","root":{"kind":"thread","class":"","method":"<thread>","descriptor":"",
          "calls":0,"total_ns":50,"self_ns":0,"children":[
          {"class":"a.B","method":"run","descriptor":"()V","calls":1,"total_ns":50,"self_ns":50,
           "measured_total_ns":60,"children":[]}]}}]}"#;

    #[test]
    fn charged_time_sums_the_outermost_root_invocations_of_all_threads() {
        // Both overloads of a.B::run, not the nested call, not a.C::run.
        assert_eq!(
            root_time(CPU.as_bytes(), "a.B::run"),
            Some(RootTime {
                calls: 4,
                ns: 850,
                measured_ns: 960,
                uncertain: true
            })
        );
        assert_eq!(
            root_time(CPU.as_bytes(), "a.X::run"),
            Some(RootTime::default())
        );
        // One overload by its descriptor: its outermost invocations only.
        assert_eq!(
            root_time(CPU.as_bytes(), "a.B::run(I)V"),
            Some(RootTime {
                calls: 1,
                ns: 100,
                measured_ns: 100,
                uncertain: false
            })
        );
        assert_eq!(root_time(CPU.as_bytes(), "no-separator"), None);
        assert_eq!(root_time(b"{", "a.B::run"), None);
    }

    #[test]
    fn region_time_sums_the_regions() {
        let region = |count: u64, total: u64, measured: u64| {
            format!(
                r#"{{"class":"a.B","method":"run","descriptor":"()V","count":{count},"threads":1,
                "total_ns":{total},"min_ns":1,"max_ns":2,
                "percentiles":{{"p50_ns":1,"p90_ns":1,"p99_ns":1,"p99.9_ns":1}},
                "distribution":[],"last_ns":[],
                "uncompensated":{{"total_ns":{measured},"min_ns":1,"max_ns":2,
                  "percentiles":{{"p50_ns":1,"p90_ns":1,"p99_ns":1,"p99.9_ns":1}},"last_ns":[]}}}}"#
            )
        };
        let doc = format!(
            r#"{{"format":"ferrofluid","version":1,"mode":"region",
            "methods":{{"instrumented":2,"called":2}},"threads":[],
            "regions":[{},{}]}}"#,
            region(3, 300, 330),
            region(1, 50, 55)
        );
        assert_eq!(
            root_time(doc.as_bytes(), "a.B::run"),
            Some(RootTime {
                calls: 4,
                ns: 350,
                measured_ns: 385,
                uncertain: false
            })
        );
    }

    #[test]
    fn the_median_is_one_runs_numbers() {
        let t = |ns| RootTime {
            calls: 1,
            ns,
            measured_ns: ns + 1,
            uncertain: false,
        };
        assert_eq!(median(vec![t(30), t(10), t(20)]), Some(t(20)));
        assert_eq!(median(vec![t(30), t(10)]), Some(t(10)));
        assert_eq!(median(vec![]), None);
    }
}
