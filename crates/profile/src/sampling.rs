//! Sample mode: what a sampling profile says about its sampling, and how its nodes' sample
//! counts are spelt in the document.
//!
//! A sample profile's trees carry the metrics `samples` (count) and `estimated_time`
//! (nanoseconds: what the samples stand for), each node its own values (the samples whose
//! innermost frame it is), and, in side-table columns past the metrics, its own samples by the
//! kind of code their innermost frame ran ([`FRAME_TYPES`]). The document writes a node's
//! `samples` as the samples through it (callees included) and its own as `self_samples`, as a
//! time is `total_ns` and `self_ns`; the frame types as `self_interpreted`, `self_compiled`,
//! `self_inlined`, `self_native`; on the wall clock, its own samples by what the thread was doing
//! ([`THREAD_STATES`]: `self_running`, `self_waiting`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metric::Metric;

/// The samples metric.
pub const SAMPLES: &str = "samples";
/// The document key of a node's own samples.
pub const SELF_SAMPLES: &str = "self_samples";
/// The time the samples stand for: per sample, the interval (CPU) or the time since the
/// thread's previous sample (wall clock).
pub const ESTIMATED_TIME: &str = "estimated_time";
/// The kinds of code a sample's innermost frame ran, in side-table order, as document keys.
pub const FRAME_TYPES: [&str; 4] = [
    "self_interpreted",
    "self_compiled",
    "self_inlined",
    "self_native",
];

/// What a wall-clock sample's thread was doing, in side-table order after [`FRAME_TYPES`], as
/// document keys: running Java or native code, or waiting (the sample interrupted a system call,
/// or the thread used no CPU since its previous sample: sleeping, parked, blocked on a monitor,
/// in I/O, or not given a core). CPU samples are running by definition and carry neither.
pub const THREAD_STATES: [&str; 2] = ["self_running", "self_waiting"];

/// Side-table columns of a sample profile's nodes past its metrics.
pub const SIDE_COLUMNS: usize = FRAME_TYPES.len() + THREAD_STATES.len();

/// The metrics of a sample profile ([`SAMPLES`], [`ESTIMATED_TIME`]).
pub fn metrics() -> Vec<Metric> {
    crate::Mode::Sample.default_metrics()
}

/// How a sample profile was sampled, and what was lost.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Sampling {
    /// `cpu` (each thread's CPU time) or `wall` (elapsed time, every thread).
    pub clock: String,
    /// The interval, ns.
    pub interval_ns: u64,
    /// What drove the samples: `perf_events`, `timers` (POSIX CPU timers) or `wall_thread`.
    pub source: String,
    /// Samples in the trees (each with a stack, or a `[reason]` frame saying why it has none).
    pub samples: u64,
    /// Of those, with a Java stack.
    pub walked: u64,
    /// Samples without a Java stack, by reason (`gc_active`, `not_walkable_java`, `fault`, ...):
    /// in the trees as frames `[reason]` under the thread.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub without_stack: BTreeMap<String, u64>,
    /// Samples lost and in no tree, by reason (`buffer_full`: the agent fell behind).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lost: BTreeMap<String, u64>,
    /// With roots: the profile holds only samples taken inside a root's invocation, and the
    /// roots' nodes count their calls exactly.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub roots: bool,
    /// With roots: samples taken outside every root, dropped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outside_roots: u64,
    /// Faults inside stack walks that were contained (each sample is in `without_stack` as
    /// `fault`), since the agent was loaded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub faults_contained: u64,
    /// Sampled timing with roots: which root invocations were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordShare>,
}

/// Which root invocations sampled timing recorded (`record=`): each recorded one whole, so
/// calls per invocation are exact; totals count the recorded invocations only.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct RecordShare {
    /// The option: `all`, `auto` or a share (`10%`).
    pub policy: String,
    /// Root invocations entered outside every root while collecting.
    pub root_invocations: u64,
    /// Of those, recorded.
    pub recorded: u64,
    /// The share of each two-second window that began recordings when the profile was
    /// taken, thousandths.
    pub open_per_mille: u32,
    /// `auto`: the last measured ratio of a recorded invocation's thread CPU time to an
    /// unrecorded one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_ratio: Option<f64>,
}

impl RecordShare {
    /// Whether some root invocations were left out.
    pub fn partial(&self) -> bool {
        self.recorded < self.root_invocations
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A node's document keys in a sample profile: `samples` as the total `total`, its own as
/// `self_samples`, the other metrics' own values, then its frame types and thread states when not
/// 0 (`extra`: the node's side-table row, metrics first).
pub fn node_keys(metrics: &[Metric], extra: &[u64], total: u64) -> Vec<(String, u64)> {
    let mut keys = Vec::with_capacity(metrics.len() + 1 + SIDE_COLUMNS);
    for (m, &v) in metrics.iter().zip(extra) {
        if m.name == SAMPLES {
            keys.push((SAMPLES.to_owned(), total));
            keys.push((SELF_SAMPLES.to_owned(), v));
        } else {
            keys.push((m.name.clone(), v));
        }
    }
    let side = extra.get(metrics.len()..).unwrap_or_default();
    for (name, &v) in FRAME_TYPES.iter().chain(&THREAD_STATES).zip(side) {
        if v > 0 {
            keys.push(((*name).to_owned(), v));
        }
    }
    keys
}

/// The document keys a reader puts into the side-table columns of a sample profile whose
/// metrics are `names`: a node's own samples from `self_samples` (its `samples` is a total),
/// then the frame types and thread states.
pub fn column_keys(names: &[String]) -> Vec<String> {
    names
        .iter()
        .map(|n| {
            if n == SAMPLES {
                SELF_SAMPLES.to_owned()
            } else {
                n.clone()
            }
        })
        .chain(
            FRAME_TYPES
                .iter()
                .chain(&THREAD_STATES)
                .map(|s| (*s).to_owned()),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CallTree, Mode, NodeId, NodeKind, Profile, ThreadProfile};

    /// A hybrid sample profile: a root with exact calls, samples below it by frame type.
    fn hybrid() -> Profile {
        let mut p = Profile::new(Mode::Sample);
        p.extra_metrics = metrics();
        p.sampling = Some(Sampling {
            clock: "cpu".into(),
            interval_ns: 10_000_000,
            source: "timers".into(),
            samples: 5,
            walked: 4,
            without_stack: [("gc_active".to_owned(), 1)].into(),
            lost: [("buffer_full".to_owned(), 2)].into(),
            roots: true,
            outside_roots: 7,
            faults_contained: 0,
            record: None,
        });
        let root = NodeKind::Method(p.methods.insert("demo.A", "root", "()V"));
        let leaf = NodeKind::Method(p.methods.insert("demo.A", "leaf", "(I)J"));
        let gc = NodeKind::Method(p.methods.insert("[gc_active]", "", ""));
        let mut tree = CallTree::with_width(2 + SIDE_COLUMNS);
        let r = tree.add_child(NodeId::ROOT, root);
        let l = tree.add_child(r, leaf);
        let g = tree.add_child(NodeId::ROOT, gc);
        tree.node_mut(r).calls = 3;
        tree.extra_mut(r)
            .copy_from_slice(&[1, 10_000_000, 1, 0, 0, 0, 0, 0]);
        tree.extra_mut(l)
            .copy_from_slice(&[3, 30_000_000, 0, 2, 1, 0, 2, 1]);
        tree.extra_mut(g)
            .copy_from_slice(&[1, 10_000_000, 0, 0, 0, 0, 0, 0]);
        p.threads.push(ThreadProfile::new("all threads", 0, tree));
        p
    }

    #[test]
    fn a_sample_document_has_totals_self_samples_and_frame_types_and_reads_back() {
        let p = hybrid();
        let names: Vec<String> = p.metrics().iter().map(|m| m.to_string()).collect();
        assert_eq!(
            names,
            ["calls/count", "samples/count", "estimated_time/nanoseconds"]
        );
        let mut json = Vec::new();
        p.write_json(&mut json).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(v["mode"], "sample");
        assert_eq!(v["sampling"]["lost"]["buffer_full"], 2);
        assert_eq!(v["sampling"]["outside_roots"], 7);
        let root = &v["threads"][0]["root"];
        assert_eq!(
            (&root["samples"], &root["self_samples"]),
            (&5.into(), &0.into())
        );
        let r = &root["children"][0];
        assert_eq!(r["method"], "root");
        assert_eq!(
            (
                &r["calls"],
                &r["samples"],
                &r["self_samples"],
                &r["self_interpreted"]
            ),
            (&3.into(), &4.into(), &1.into(), &1.into())
        );
        assert!(
            r.get("self_compiled").is_none(),
            "zero frame types are left out"
        );
        let l = &r["children"][0];
        assert_eq!(
            (
                &l["samples"],
                &l["self_samples"],
                &l["self_compiled"],
                &l["self_inlined"]
            ),
            (&3.into(), &3.into(), &2.into(), &1.into())
        );
        assert_eq!(
            (&l["self_running"], &l["self_waiting"]),
            (&2.into(), &1.into())
        );
        assert!(r.get("self_waiting").is_none());
        assert_eq!(l["estimated_time"], 30_000_000);
        assert_eq!(Profile::from_json_slice(&json).unwrap(), p);
        // Samples are the primary metric: hot spots by own samples.
        let totals = p.metric_totals();
        assert_eq!(totals.metrics[totals.primary].name, SAMPLES);
        assert_eq!(totals.totals, [3, 5, 50_000_000]);
    }
}
