//! One calling-context node of the document, read without buffering its subtree.

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Kind of a node in the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKindDoc {
    /// An instrumented method (the default, omitted when writing).
    #[default]
    Method,
    /// A thread's synthetic root.
    Thread,
    /// Invocations beyond the node budget or the depth bound.
    Overflow,
}

/// One calling-context node. Keys other than the fields below whose values are counts are the
/// node's own values of the document's `metrics` (`"bytecodes": 1200`).
#[derive(Clone, Debug, PartialEq, Default, Serialize)]
pub struct NodeDoc {
    /// `"thread"` or `"overflow"` for synthetic nodes; absent for methods.
    #[serde(default, skip_serializing_if = "is_method")]
    pub kind: NodeKindDoc,
    /// Dotted class name; empty for synthetic nodes.
    pub class: String,
    /// Method name; `<thread>` / `<overflow>` for synthetic nodes.
    pub method: String,
    /// JVM descriptor; empty for synthetic nodes.
    pub descriptor: String,
    /// Invocations; absent in modes without a `calls` metric (readers default it to 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    /// Compensated time including callees, ns; absent in modes without a `time` metric.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_ns: Option<u64>,
    /// Compensated time excluding callees, ns; absent like `total_ns`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_ns: Option<u64>,
    /// The node's own values of the document's metrics kept beside the fields above
    /// ([`Profile::extra_metrics`]), written as keys of the node: `"bytecodes": 1200`.
    #[serde(flatten)]
    pub metrics: MetricValues,
    /// Measured (uncompensated) total, ns. Readers default it to `total_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_total_ns: Option<u64>,
    /// Measured (uncompensated) self time, ns; informative, recomputed on reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_self_ns: Option<u64>,
    /// Probe pairs of direct callees inside this node's intervals. Readers default it
    /// to the sum of the children's `calls` (0 under a thread node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outer_calls: Option<u64>,
    /// Time the probes measured themselves running inside this node's measured self time, ns
    /// (its entry probes, its direct callees' exit probes); absent when 0. Compensation
    /// subtracts it with `overhead_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_ns: Option<u64>,
    /// Calibrated probe cost subtracted from the measured self time, ns; absent when not
    /// compensated. Informative: readers recompute it from the calibration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_ns: Option<u64>,
    /// Probe cost subtracted in the whole subtree, ns; informative, like `overhead_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_overhead_ns: Option<u64>,
    /// `self_ns` is mostly probe cost and may be off by more than 10% (crate docs:
    /// [`crate::probe_dominated`]); written only when true.
    #[serde(default, skip_serializing_if = "is_false")]
    pub self_uncertain: bool,
    /// The same for `total_ns`; written only when true.
    #[serde(default, skip_serializing_if = "is_false")]
    pub total_uncertain: bool,
    /// Thread CPU time including callees, ns: compensated when the document has
    /// `cpu_calibration`, else measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<u64>,
    /// Thread CPU time excluding callees, ns (compensated like `cpu_ns`); informative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_self_ns: Option<u64>,
    /// Measured thread CPU time including callees, ns, when `cpu_ns` is compensated.
    /// Readers default it to `cpu_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_cpu_ns: Option<u64>,
    /// `cpu_self_ns` is mostly probe CPU cost (the rule of `self_uncertain`); written only
    /// when true; informative, a reader recomputes it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cpu_self_uncertain: bool,
    /// The same for `cpu_ns`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cpu_total_uncertain: bool,
    /// The method's probes were removed while the program ran (`adaptive`): `calls` are
    /// those before, and its later calls are in its callers' self time. Written only when
    /// true.
    #[serde(default, skip_serializing_if = "is_false")]
    pub probes_dropped: bool,
    /// Its thread was found blocked here (its `waiting`): `self_ns` is idle time, not work.
    /// Written only when true.
    #[serde(default, skip_serializing_if = "is_false")]
    pub waiting: bool,
    /// Allocation mode: what this method allocates in this context, per class (the class
    /// leaves of the tree in memory); absent when nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocations: Vec<crate::alloc::Allocation>,
    /// Callees in order of first invocation.
    #[serde(default)]
    pub children: Vec<NodeDoc>,
}

impl Drop for NodeDoc {
    /// Iterative: the derived drop would recurse once per level and overflow the native
    /// stack on a deep tree.
    fn drop(&mut self) {
        let mut pending = std::mem::take(&mut self.children);
        while let Some(mut node) = pending.pop() {
            pending.append(&mut node.children);
        }
    }
}

/// A node's values of extra metrics, by metric name, in the document's metric order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct MetricValues(pub Vec<(String, u64)>);

impl Serialize for MetricValues {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// The keys of a node, matched without allocating; `Other` is a metric's name (or a key a
/// later version added).
enum NodeKey {
    Kind,
    Class,
    Method,
    Descriptor,
    Calls,
    TotalNs,
    SelfNs,
    MeasuredTotalNs,
    MeasuredSelfNs,
    OuterCalls,
    ProbeNs,
    OverheadNs,
    TotalOverheadNs,
    SelfUncertain,
    TotalUncertain,
    CpuNs,
    CpuSelfNs,
    MeasuredCpuNs,
    CpuSelfUncertain,
    CpuTotalUncertain,
    ProbesDropped,
    Waiting,
    Allocations,
    Children,
    Other(String),
}

impl<'de> Deserialize<'de> for NodeKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = NodeKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a node key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<NodeKey, E> {
                Ok(match key {
                    "kind" => NodeKey::Kind,
                    "class" => NodeKey::Class,
                    "method" => NodeKey::Method,
                    "descriptor" => NodeKey::Descriptor,
                    "calls" => NodeKey::Calls,
                    "total_ns" => NodeKey::TotalNs,
                    "self_ns" => NodeKey::SelfNs,
                    "measured_total_ns" => NodeKey::MeasuredTotalNs,
                    "measured_self_ns" => NodeKey::MeasuredSelfNs,
                    "outer_calls" => NodeKey::OuterCalls,
                    "probe_ns" => NodeKey::ProbeNs,
                    "overhead_ns" => NodeKey::OverheadNs,
                    "total_overhead_ns" => NodeKey::TotalOverheadNs,
                    "self_uncertain" => NodeKey::SelfUncertain,
                    "total_uncertain" => NodeKey::TotalUncertain,
                    "cpu_ns" => NodeKey::CpuNs,
                    "cpu_self_ns" => NodeKey::CpuSelfNs,
                    "measured_cpu_ns" => NodeKey::MeasuredCpuNs,
                    "cpu_self_uncertain" => NodeKey::CpuSelfUncertain,
                    "cpu_total_uncertain" => NodeKey::CpuTotalUncertain,
                    "probes_dropped" => NodeKey::ProbesDropped,
                    "waiting" => NodeKey::Waiting,
                    "allocations" => NodeKey::Allocations,
                    "children" => NodeKey::Children,
                    other => NodeKey::Other(other.to_owned()),
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

/// A value that is kept when it is a count and skipped otherwise (a key this version does not
/// know, holding anything).
struct MaybeCount(Option<u64>);

impl<'de> Deserialize<'de> for MaybeCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl<'de> Visitor<'de> for CountVisitor {
            type Value = MaybeCount;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<MaybeCount, E> {
                Ok(MaybeCount(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<MaybeCount, E> {
                Ok(MaybeCount(u64::try_from(v).ok()))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<MaybeCount, E> {
                Ok(MaybeCount(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<MaybeCount, E> {
                Ok(MaybeCount(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<MaybeCount, E> {
                Ok(MaybeCount(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<MaybeCount, E> {
                Ok(MaybeCount(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<MaybeCount, E> {
                Ok(MaybeCount(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<MaybeCount, D::Error> {
                MaybeCount::deserialize(d)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeCount, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeCount(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaybeCount, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaybeCount(None))
            }
        }
        d.deserialize_any(CountVisitor)
    }
}

/// By hand rather than derived: the keys a node does not name are its metrics' values, and
/// serde's `flatten` would buffer each node's whole subtree before reading it.
impl<'de> Deserialize<'de> for NodeDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NodeVisitor;
        impl<'de> Visitor<'de> for NodeVisitor {
            type Value = NodeDoc;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a profile node")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NodeDoc, A::Error> {
                let mut n = NodeDoc::default();
                let (mut class, mut method, mut descriptor) = (None, None, None);
                while let Some(key) = map.next_key::<NodeKey>()? {
                    match key {
                        NodeKey::Kind => n.kind = map.next_value()?,
                        NodeKey::Class => class = Some(map.next_value()?),
                        NodeKey::Method => method = Some(map.next_value()?),
                        NodeKey::Descriptor => descriptor = Some(map.next_value()?),
                        NodeKey::Calls => n.calls = map.next_value()?,
                        NodeKey::TotalNs => n.total_ns = map.next_value()?,
                        NodeKey::SelfNs => n.self_ns = map.next_value()?,
                        NodeKey::MeasuredTotalNs => n.measured_total_ns = map.next_value()?,
                        NodeKey::MeasuredSelfNs => n.measured_self_ns = map.next_value()?,
                        NodeKey::OuterCalls => n.outer_calls = map.next_value()?,
                        NodeKey::ProbeNs => n.probe_ns = map.next_value()?,
                        NodeKey::OverheadNs => n.overhead_ns = map.next_value()?,
                        NodeKey::TotalOverheadNs => n.total_overhead_ns = map.next_value()?,
                        NodeKey::SelfUncertain => n.self_uncertain = map.next_value()?,
                        NodeKey::TotalUncertain => n.total_uncertain = map.next_value()?,
                        NodeKey::CpuNs => n.cpu_ns = map.next_value()?,
                        NodeKey::CpuSelfNs => n.cpu_self_ns = map.next_value()?,
                        NodeKey::MeasuredCpuNs => n.measured_cpu_ns = map.next_value()?,
                        NodeKey::CpuSelfUncertain => n.cpu_self_uncertain = map.next_value()?,
                        NodeKey::CpuTotalUncertain => n.cpu_total_uncertain = map.next_value()?,
                        NodeKey::ProbesDropped => n.probes_dropped = map.next_value()?,
                        NodeKey::Waiting => n.waiting = map.next_value()?,
                        NodeKey::Allocations => n.allocations = map.next_value()?,
                        NodeKey::Children => n.children = map.next_value()?,
                        NodeKey::Other(name) => {
                            if let MaybeCount(Some(v)) = map.next_value()? {
                                n.metrics.0.push((name, v));
                            }
                        }
                    }
                }
                n.class = class.ok_or_else(|| de::Error::missing_field("class"))?;
                n.method = method.ok_or_else(|| de::Error::missing_field("method"))?;
                n.descriptor = descriptor.ok_or_else(|| de::Error::missing_field("descriptor"))?;
                Ok(n)
            }
        }
        d.deserialize_map(NodeVisitor)
    }
}

pub(crate) fn is_zero(v: &u64) -> bool {
    *v == 0
}

pub(crate) fn is_false(v: &bool) -> bool {
    !*v
}

pub(crate) fn is_method(k: &NodeKindDoc) -> bool {
    *k == NodeKindDoc::Method
}
