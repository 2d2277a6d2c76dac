//! What the nodes of a profile's trees measure: its metrics, as pprof's sample types are
//! (a name and a unit: `calls`/`count`, `time`/`nanoseconds`, `bytes`/`bytes`). Every node
//! carries one value per metric; its self and total values are summed here, and
//! [`crate::Profile`]'s metric methods give them per metric, so that hot spots, folded stacks,
//! flame graphs and call trees work over "metric i" whatever the mode
//! (docs/decisions/0024-metrics-model.md).
//!
//! ```
//! use ferrofluid_profile::{CallTree, Metric, Mode, NodeId, NodeKind, Profile, ThreadProfile};
//!
//! let mut profile = Profile::new(Mode::Count);
//! profile.extra_metrics.push(Metric::new("bytecodes", "count"));
//! let f = profile.methods.insert("demo.A", "f", "()V");
//! let g = profile.methods.insert("demo.A", "g", "()V");
//! let mut tree = CallTree::with_width(1);
//! let fi = tree.add_child(NodeId::ROOT, NodeKind::Method(f));
//! let gi = tree.add_child(fi, NodeKind::Method(g));
//! tree.node_mut(fi).calls = 1;
//! tree.extra_mut(fi)[0] = 10;
//! tree.node_mut(gi).calls = 4;
//! tree.extra_mut(gi)[0] = 100;
//! profile.threads.push(ThreadProfile::new("main", 1, tree));
//!
//! let names: Vec<String> = profile.metrics().iter().map(ToString::to_string).collect();
//! assert_eq!(names, ["calls/count", "bytecodes/count"]);
//! let bytecodes = profile.metric_index("bytecodes").unwrap();
//! assert_eq!(profile.primary_metric(), Some(bytecodes));
//! let values = profile.metric_values(&profile.threads[0].tree, bytecodes);
//! assert_eq!((values[fi.index()].self_value, values[fi.index()].total), (10, 110));
//! let totals = profile.metric_totals();
//! assert_eq!(totals.totals, [5, 110]);
//! assert_eq!(totals.hot_spots[0].kind, NodeKind::Method(g));
//! ```

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::mode::Mode;
use crate::tree::{CallTree, NodeId, NodeKind};

/// Name of the metric kept in [`crate::Node::calls`]: invocations.
pub const CALLS: &str = "calls";
/// Name of the metric kept in [`crate::Node::total_ns`]: time including callees, compensated
/// with the profile's calibration when it has one.
pub const TIME: &str = "time";
/// Name of the metric kept in [`crate::Node::cpu_ns`]: thread CPU time including callees.
pub const CPU_TIME: &str = "cpu_time";

/// Unit of counted metrics.
pub const COUNT: &str = "count";
/// Unit of times.
pub const NANOSECONDS: &str = "nanoseconds";
/// Unit of sizes.
pub const BYTES: &str = "bytes";

/// One metric of a profile: pprof's `ValueType`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Metric {
    /// `calls`, `time`, `bytecodes`, `objects`, `bytes`, `samples`...; also the key of its
    /// values in the document's nodes.
    pub name: String,
    /// `count`, `nanoseconds` or `bytes`.
    pub unit: String,
}

impl Metric {
    /// A metric named `name`, counted in `unit`.
    pub fn new(name: impl Into<String>, unit: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            unit: unit.into(),
        }
    }

    /// Whether its values are times in nanoseconds.
    pub fn is_time(&self) -> bool {
        self.unit == NANOSECONDS
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.name, self.unit)
    }
}

/// Where a node keeps a metric's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// [`crate::Node::calls`], the node's own count.
    Calls,
    /// [`crate::Node::total_ns`], including callees; compensated.
    Time,
    /// [`crate::Node::cpu_ns`], including callees; compensated.
    CpuTime,
    /// Column `i` of the tree's side table ([`CallTree::extra`]), the node's own value.
    Extra(usize),
}

/// A node's value of one metric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Value {
    /// The node's own: its self time, its calls, the bytes it allocated itself.
    pub self_value: u64,
    /// With its callees'.
    pub total: u64,
}

/// One method (or the overflow bucket) over all its contexts and threads, per metric.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricSpot {
    /// [`NodeKind::Method`] or [`NodeKind::Overflow`].
    pub kind: NodeKind,
    /// Per metric of [`MetricTotals::metrics`]: self values summed over all contexts, and
    /// totals of the outermost contexts only (a recursive call is counted once).
    pub values: Vec<Value>,
}

/// The totals of a profile over its metrics, computed once for every writer.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricTotals {
    /// [`crate::Profile::metrics`].
    pub metrics: Vec<Metric>,
    /// The metric hot spots are ranked by ([`crate::Profile::primary_metric`], else 0).
    pub primary: usize,
    /// Per thread, per metric, per node: the values ([`crate::Profile::metric_values`]).
    pub threads: Vec<Vec<Vec<Value>>>,
    /// Per metric: the sum of the threads' roots' totals.
    pub totals: Vec<u64>,
    /// By the primary metric's self value (descending), then the other metrics' in order,
    /// then method id; the overflow bucket sorts like a method.
    pub hot_spots: Vec<MetricSpot>,
}

impl Mode {
    /// The metrics a node of this mode keeps in its own fields ([`Slot`]), before the
    /// profile's extra metrics; a CPU profile with thread CPU times adds `cpu_time`.
    pub fn inline_metrics(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Mode::Cpu | Mode::Native => &[(CALLS, COUNT), (TIME, NANOSECONDS)],
            Mode::Count => &[(CALLS, COUNT)],
            Mode::Region | Mode::Alloc | Mode::Sample => &[],
        }
    }

    /// The extra metrics a document of this mode carries when it does not declare them:
    /// `bytecodes` (count), `objects` and `bytes` (alloc), `native_time` and `upcalls`
    /// (native), `samples` and `estimated_time` (sample).
    pub fn default_metrics(self) -> Vec<Metric> {
        match self {
            Mode::Cpu | Mode::Region => Vec::new(),
            Mode::Count => vec![Metric::new("bytecodes", COUNT)],
            Mode::Alloc => vec![Metric::new("objects", COUNT), Metric::new(BYTES, BYTES)],
            Mode::Native => native_metrics(false),
            Mode::Sample => vec![
                Metric::new("samples", COUNT),
                Metric::new("estimated_time", NANOSECONDS),
            ],
        }
    }

    /// The metric reports weigh by unless told otherwise: `time` (cpu, native, region),
    /// `bytecodes` (count), `bytes` (alloc), `samples` (sample).
    pub fn primary_metric(self) -> &'static str {
        match self {
            Mode::Cpu | Mode::Native | Mode::Region => TIME,
            Mode::Count => "bytecodes",
            Mode::Alloc => BYTES,
            Mode::Sample => "samples",
        }
    }
}

/// Values whose node keeps its own (`own`): totals summed bottom-up (children are stored
/// after their parents).
pub(crate) fn summed(tree: &CallTree, own: impl Fn(NodeId) -> u64) -> Vec<Value> {
    let mut values: Vec<Value> = tree
        .ids()
        .map(|id| {
            let v = own(id);
            Value {
                self_value: v,
                total: v,
            }
        })
        .collect();
    for id in tree.ids().rev() {
        if let Some(p) = tree.node(id).parent() {
            values[p.index()].total += values[id.index()].total;
        }
    }
    values
}

/// Adds the spots of one tree (`values` per metric, per node): depth first with the kinds on
/// the current path, so that a recursive context's total is not added to its outer one's.
pub(crate) fn add_spots(
    tree: &CallTree,
    values: &[Vec<Value>],
    by_kind: &mut HashMap<NodeKind, MetricSpot>,
) {
    let mut on_path: HashMap<NodeKind, u32> = HashMap::new();
    let mut stack = vec![(tree.root(), false)];
    while let Some((id, leaving)) = stack.pop() {
        let node = tree.node(id);
        if leaving {
            *on_path.get_mut(&node.kind).expect("kind entered") -= 1;
            continue;
        }
        if node.kind != NodeKind::Thread {
            let outermost = on_path.get(&node.kind).copied().unwrap_or(0) == 0;
            let spot = by_kind.entry(node.kind).or_insert_with(|| MetricSpot {
                kind: node.kind,
                values: vec![Value::default(); values.len()],
            });
            for (sum, metric) in spot.values.iter_mut().zip(values) {
                sum.self_value += metric[id.index()].self_value;
                if outermost {
                    sum.total += metric[id.index()].total;
                }
            }
        }
        *on_path.entry(node.kind).or_insert(0) += 1;
        stack.push((id, true));
        for &c in node.children().iter().rev() {
            stack.push((c, false));
        }
    }
}

/// Metric of a native profile's nodes: a native frame's native time, ns (compensated; 0 for
/// every other node).
pub const NATIVE_TIME: &str = "native_time";
/// The same in thread CPU time (`cpu` option).
pub const NATIVE_CPU_TIME: &str = "native_cpu_time";
/// Metric of a native profile's nodes: the JNI calls into Java a native frame made.
pub const UPCALLS: &str = "upcalls";

/// The metrics of a `native` profile's trees past `calls` and `time` (and `cpu_time`), in
/// column order: `native_time`, `upcalls`, and with thread CPU times `native_cpu_time`.
pub fn native_metrics(cpu: bool) -> Vec<Metric> {
    let mut m = vec![
        Metric::new(NATIVE_TIME, NANOSECONDS),
        Metric::new(UPCALLS, COUNT),
    ];
    if cpu {
        m.push(Metric::new(NATIVE_CPU_TIME, NANOSECONDS));
    }
    m
}
