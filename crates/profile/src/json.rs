//! The JSON profile document (`docs/json-schema.md`), and conversion to and from
//! [`Profile`]. Times in the document are compensated; measured values sit beside them
//! so that a document read back yields the same [`Profile`].

use std::io;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::calibration::{node_times, Calibration};
use crate::compensation::CalibrationStats;
use crate::error::DocumentError;
use crate::failed::FailedClass;
use crate::method::MethodInfo;
use crate::metric::{Metric, Slot};
use crate::mode::Mode;
use crate::profile::{Profile, ThreadProfile, Waiting};
use crate::region::RegionStats;
use crate::tree::{CallTree, NodeId, NodeKind};

/// Value of the `format` field.
pub const FORMAT: &str = "ferrofluid";
/// The document version this crate writes and reads.
pub const VERSION: u32 = 1;
/// Value of the `mode` field for call-subgraph CPU profiles.
pub const MODE_CPU: &str = "cpu";

/// Deepest tree [`Profile::write_json`] still pretty-prints.
pub const PRETTY_MAX_DEPTH: usize = 32;

/// Method name shown for a thread's synthetic root node.
pub const THREAD_NODE_METHOD: &str = "<thread>";
/// Method name shown for an overflow node.
pub const OVERFLOW_NODE_METHOD: &str = "<overflow>";

/// The top-level JSON object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Always `"ferrofluid"`.
    pub format: String,
    /// Document version, 1.
    pub version: u32,
    /// The profile's [`Mode`]: `"cpu"`, `"region"`, `"alloc"`, `"count"`, `"native"` or
    /// `"sample"`.
    pub mode: String,
    /// What the nodes carry ([`Profile::metrics`]); written for the modes other than `cpu`
    /// and `region`, whose readers default it by mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<Metric>,
    /// Instrumented and called method counts.
    pub methods: MethodCounts,
    /// Probe costs that were subtracted, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
    /// The probe pair's thread CPU costs that were subtracted from CPU times, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_calibration: Option<Calibration>,
    /// How far the compensation can be trusted: what the calibration saw and, when the
    /// profile's compensation is unreliable, why. Absent when nothing is known or wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compensation: Option<CompensationDoc>,
    /// One entry per profiled thread (empty in code-region mode).
    #[serde(default)]
    pub threads: Vec<ThreadDoc>,
    /// Code-region mode (`"mode":"region"`): one entry per instrumented region method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regions: Option<Vec<RegionStats>>,
    /// Classes that could not be instrumented or restored; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_classes: Vec<FailedClass>,
    /// Every method whose probes were removed while the program ran (`adaptive`), also those
    /// no node shows (removed before a reset, never called since); absent when none were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_methods: Vec<MethodDoc>,
    /// Allocation mode: every how many allocations of a site one object was tracked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub track_every: Option<u64>,
    /// Allocation mode: garbage collections while profiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc_count: Option<u64>,
    /// Allocation mode: `live`, `live_bytes`, `avg_age` and `generations` (of `classes`, of the
    /// nodes' `allocations`, of `leak_suspects`) are estimates from the tracked objects, every
    /// `track_every`-th. Written (true) with the class table.
    #[serde(default, skip_serializing_if = "is_false")]
    pub live_estimated: bool,
    /// Allocation mode: the allocated classes whose sites were probed (`alloc-class`, or a
    /// narrowing); absent: every class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alloc_classes: Vec<String>,
    /// Allocation mode: objects not tracked (the cap was reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untracked: Option<u64>,
    /// Allocation mode: allocation stacks not kept (the cap was reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacks_dropped: Option<u64>,
    /// Allocation mode: per allocated class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<crate::alloc::ClassAlloc>>,
    /// Allocation mode: per allocation site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sites: Option<Vec<crate::alloc::SiteAlloc>>,
    /// Allocation mode: leak suspects, the strongest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leak_suspects: Option<Vec<crate::alloc::Suspect>>,
    /// Native mode: all threads' time in bytecode, ns; informative (the threads' sum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytecode_ns: Option<u64>,
    /// Native mode: all threads' time in native methods, ns; informative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_ns: Option<u64>,
    /// Native mode with thread CPU times: the bytecode's CPU time, ns; informative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytecode_cpu_ns: Option<u64>,
    /// Native mode with thread CPU times: the native code's CPU time, ns; informative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_cpu_ns: Option<u64>,
    /// Native mode: the native methods by native time. Their names say which nodes are native
    /// frames; the numbers are informative (recomputed from the trees).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub natives: Option<Vec<NativeDoc>>,
    /// Native mode: native methods no measurement covers, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_measured: Option<Vec<crate::native::NotMeasured>>,
    /// Native mode: JNI calls into Java made from no measured native's frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unattributed_upcalls: Option<u64>,
}

/// A native method over every thread and calling context ([`crate::NativeRow`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeDoc {
    /// Dotted class name.
    pub class: String,
    /// Method name.
    pub method: String,
    /// JVM descriptor.
    pub descriptor: String,
    /// Calls.
    #[serde(default)]
    pub calls: u64,
    /// Native time without what its upcalls ran, ns (compensated).
    #[serde(default)]
    pub native_ns: u64,
    /// The same in thread CPU time, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_cpu_ns: Option<u64>,
    /// JNI calls into Java.
    #[serde(default)]
    pub upcalls: u64,
    /// Threads that called it.
    #[serde(default)]
    pub threads: usize,
    /// What the upcalls called, the most called first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upcall_targets: Vec<UpcallTargetDoc>,
}

/// A Java method a native method's upcalls called.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpcallTargetDoc {
    /// Dotted class name.
    pub class: String,
    /// Method name.
    pub method: String,
    /// JVM descriptor.
    pub descriptor: String,
    /// Calls from the native method's frames.
    pub calls: u64,
}

/// A method's name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MethodDoc {
    /// Dotted class name.
    pub class: String,
    /// Method name.
    pub method: String,
    /// JVM descriptor.
    pub descriptor: String,
}

/// How a thread was found blocked when the profile was taken ([`Waiting`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingDoc {
    /// `waiting`, `parked`, `sleeping`, `blocked` or `native`.
    pub state: String,
    /// The method on top of its stack, `java.lang.Object.wait`.
    pub frame: String,
}

/// The document's `compensation` object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompensationDoc {
    /// The calibration's batches, their spread and a cap applied.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<CalibrationStats>,
    /// Why the compensation is unreliable, one sentence with its numbers per reason
    /// ([`crate::Unreliable`]); informative, a reader recomputes it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreliable: Vec<String>,
}

/// JFluid's tables 1-2: how precise the revealed subgraph was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MethodCounts {
    /// Methods that carried probes.
    pub instrumented: u64,
    /// Methods that were invoked at least once while profiled.
    pub called: u64,
    /// Methods left uninstrumented as trivial (`skip-trivial`); absent when none were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trivial_skipped: u64,
    /// Methods whose probes were removed while the program ran, as called often and shorter
    /// than their probes (`adaptive`); absent when none were. Their nodes say so.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub probes_dropped: u64,
}

/// One thread.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadDoc {
    /// Java thread name.
    pub name: String,
    /// Thread id.
    #[serde(default)]
    pub id: u64,
    /// Thread CPU time inside the roots' invocations, ns (compensated with
    /// `cpu_calibration`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<u64>,
    /// Invocations absorbed by overflow nodes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub overflow_calls: u64,
    /// Exit events that matched no open frame.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unmatched_exits: u64,
    /// Events the profiler lost for this thread (its counts are then inexact).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_events: u64,
    /// The thread was found blocked when the profile was taken: idle, waiting in the node
    /// marked `waiting`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<WaitingDoc>,
    /// A virtual thread (JDK 21+); absent for platform threads.
    #[serde(default, rename = "virtual", skip_serializing_if = "is_false")]
    pub virtual_thread: bool,
    /// Native mode: the thread's time in bytecode, ns; informative (from the tree).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytecode_ns: Option<u64>,
    /// Native mode: the thread's time in native methods, ns; informative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_ns: Option<u64>,
    /// Native mode with thread CPU times: the bytecode's CPU time, ns; informative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytecode_cpu_ns: Option<u64>,
    /// Native mode with thread CPU times: the native code's CPU time, ns; informative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_cpu_ns: Option<u64>,
    /// The tree; written as a `"thread"` node.
    pub root: NodeDoc,
}

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

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

fn is_method(k: &NodeKindDoc) -> bool {
    *k == NodeKindDoc::Method
}

impl Profile {
    /// The JSON document of this profile.
    pub fn to_document(&self) -> Document {
        let native = self.native.is_some();
        let total = self.native_total();
        Document {
            format: FORMAT.to_owned(),
            version: VERSION,
            mode: self.mode.name().to_owned(),
            metrics: match self.mode {
                Mode::Cpu | Mode::Region => Vec::new(),
                _ => self.metrics(),
            },
            methods: MethodCounts {
                instrumented: self.instrumented,
                called: self.called(),
                trivial_skipped: self.trivial_skipped,
                probes_dropped: self.probes_dropped.len() as u64,
            },
            calibration: self.calibration,
            cpu_calibration: self.cpu_calibration,
            compensation: {
                let unreliable: Vec<String> =
                    self.unreliable().iter().map(ToString::to_string).collect();
                (self.calibration_stats.is_some() || !unreliable.is_empty()).then(|| {
                    CompensationDoc {
                        calibration: self.calibration_stats.clone(),
                        unreliable,
                    }
                })
            },
            threads: self
                .threads
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let root = self.node_doc(i, &t.tree, t.waiting.as_ref().and_then(|w| w.node));
                    let split = native.then(|| self.native_split(i));
                    ThreadDoc {
                        name: t.name.clone(),
                        id: t.id,
                        // The thread node's, compensated as its nodes' are.
                        cpu_ns: if self.cpu_calibration.is_some() && root.cpu_ns.is_some() {
                            root.cpu_ns
                        } else {
                            t.cpu_ns
                        },
                        overflow_calls: t.overflow_calls,
                        unmatched_exits: t.unmatched_exits,
                        dropped_events: t.dropped_events,
                        waiting: t.waiting.as_ref().map(|w| WaitingDoc {
                            state: w.state.clone(),
                            frame: w.frame.clone(),
                        }),
                        virtual_thread: t.virtual_thread,
                        bytecode_ns: split.map(|s| s.bytecode_ns),
                        native_ns: split.map(|s| s.native_ns),
                        bytecode_cpu_ns: split.and_then(|s| s.bytecode_cpu_ns),
                        native_cpu_ns: split.and_then(|s| s.native_cpu_ns),
                        root,
                    }
                })
                .collect(),
            regions: self.regions.clone(),
            failed_classes: self.failed_classes.clone(),
            dropped_methods: self
                .probes_dropped
                .iter()
                .filter_map(|&m| self.methods.get(m))
                .map(|m| MethodDoc {
                    class: m.class.clone(),
                    method: m.method.clone(),
                    descriptor: m.descriptor.clone(),
                })
                .collect(),
            track_every: self.alloc.as_ref().map(|a| a.track_every),
            gc_count: self.alloc.as_ref().map(|a| a.gc_count),
            live_estimated: self.alloc.is_some(),
            untracked: self.alloc.as_ref().map(|a| a.untracked),
            stacks_dropped: self.alloc.as_ref().map(|a| a.stacks_dropped),
            alloc_classes: self
                .alloc
                .as_ref()
                .map(|a| a.alloc_classes.clone())
                .unwrap_or_default(),
            classes: self.alloc.as_ref().map(|a| a.classes.clone()),
            sites: self.alloc.as_ref().map(|a| a.sites.clone()),
            leak_suspects: self.alloc.as_ref().map(|a| a.suspects.clone()),
            bytecode_ns: native.then_some(total.bytecode_ns),
            native_ns: native.then_some(total.native_ns),
            bytecode_cpu_ns: total.bytecode_cpu_ns.filter(|_| native),
            native_cpu_ns: total.native_cpu_ns.filter(|_| native),
            natives: native.then(|| self.native_docs()),
            not_measured: self.native.as_ref().map(|n| n.not_measured.clone()),
            unattributed_upcalls: self
                .native
                .as_ref()
                .map(|n| n.unattributed_upcalls)
                .filter(|&n| n > 0),
        }
    }

    /// The document's `natives` ([`Profile::native_rows`]).
    fn native_docs(&self) -> Vec<NativeDoc> {
        let name = |m| {
            self.methods.get(m).map_or_else(
                || ("?".to_owned(), "?".to_owned(), String::new()),
                |i| (i.class.clone(), i.method.clone(), i.descriptor.clone()),
            )
        };
        self.native_rows()
            .into_iter()
            .map(|row| {
                let (class, method, descriptor) = name(row.method);
                NativeDoc {
                    class,
                    method,
                    descriptor,
                    calls: row.calls,
                    native_ns: row.native_ns,
                    native_cpu_ns: row.native_cpu_ns,
                    upcalls: row.upcalls,
                    threads: row.threads,
                    upcall_targets: row
                        .targets
                        .iter()
                        .map(|&(m, calls)| {
                            let (class, method, descriptor) = name(m);
                            UpcallTargetDoc {
                                class,
                                method,
                                descriptor,
                                calls,
                            }
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// Whether `id` is an allocation-path leaf: in a profile with the `alloc` tables, a
    /// childless node of a class alone (an entry without a method name).
    fn is_allocation_leaf(&self, tree: &CallTree, id: NodeId) -> bool {
        let node = tree.node(id);
        self.alloc.is_some()
            && node.children().is_empty()
            && matches!(node.kind, NodeKind::Method(m)
                if self.methods.get(m).is_some_and(|i| i.method.is_empty()))
    }

    /// The `allocations` entry of leaf `id` of thread `thread`'s tree.
    fn allocation(&self, thread: usize, tree: &CallTree, id: NodeId) -> crate::alloc::Allocation {
        use crate::alloc::{LIVE, LIVE_BYTES, OBJECTS};
        let values = tree.extra(id);
        let value = |name: &str| {
            self.extra_metrics
                .iter()
                .position(|m| m.name == name)
                .and_then(|i| values.get(i).copied())
                .unwrap_or(0)
        };
        crate::alloc::Allocation {
            class: match tree.node(id).kind {
                NodeKind::Method(m) => self
                    .methods
                    .get(m)
                    .map_or_else(String::new, |i| i.class.clone()),
                _ => String::new(),
            },
            allocated: value(OBJECTS),
            bytes: value(crate::metric::BYTES),
            live: value(LIVE),
            live_bytes: value(LIVE_BYTES),
            generations: self
                .alloc
                .as_ref()
                .and_then(|a| a.path_generations.get(&(thread, id)).copied())
                .unwrap_or(0),
        }
    }

    fn node_doc(&self, thread: usize, tree: &CallTree, waiting: Option<NodeId>) -> NodeDoc {
        let times = node_times(tree, self.calibration.as_ref());
        let raw = node_times(tree, None);
        let cpu = self.cpu_times(tree);
        let cpu_compensated = self.cpu_calibration.is_some();
        // A CPU document keeps every key it always had (and a native one, timed by the same
        // probe pairs); the other modes write the keys of their metrics.
        let cpu_doc = self.mode.is_probe_timed();
        let slots = self.slots();
        let has = |slot: Slot| cpu_doc || slots.iter().any(|&(_, s)| s == slot);
        let (has_calls, has_time) = (has(Slot::Calls), has(Slot::Time));
        // Built bottom-up (children are stored after parents), then moved into parents.
        let mut built: Vec<Option<NodeDoc>> = vec![None; tree.len()];
        let paths = self.alloc.is_some();
        for id in tree.ids().rev() {
            let node = tree.node(id);
            if id != NodeId::ROOT && self.is_allocation_leaf(tree, id) {
                continue;
            }
            let mut allocations = Vec::new();
            let mut children = Vec::new();
            for &c in node.children() {
                match built[c.index()].take() {
                    Some(doc) => children.push(doc),
                    None => allocations.push(self.allocation(thread, tree, c)),
                }
            }
            // The methods of allocation paths carry nothing of their own: their keys are left
            // out unless they do.
            let own: Vec<(String, u64)> = self
                .extra_metrics
                .iter()
                .zip(tree.extra(id))
                .map(|(m, &v)| (m.name.clone(), v))
                .collect();
            let own = if paths && own.iter().all(|&(_, v)| v == 0) {
                Vec::new()
            } else {
                own
            };
            let (kind, class, method, descriptor) = match node.kind {
                NodeKind::Thread => (NodeKindDoc::Thread, "", THREAD_NODE_METHOD, ""),
                NodeKind::Overflow => (NodeKindDoc::Overflow, "", OVERFLOW_NODE_METHOD, ""),
                NodeKind::Method(m) => {
                    let info = self.methods.get(m);
                    (
                        NodeKindDoc::Method,
                        info.map_or("?", |i| i.class.as_str()),
                        info.map_or("?", |i| i.method.as_str()),
                        info.map_or("", |i| i.descriptor.as_str()),
                    )
                }
            };
            let t = times[id.index()];
            let compensated = self.calibration.is_some();
            built[id.index()] = Some(NodeDoc {
                kind,
                class: class.to_owned(),
                method: method.to_owned(),
                descriptor: descriptor.to_owned(),
                calls: has_calls.then_some(node.calls),
                total_ns: has_time.then_some(t.total_ns),
                self_ns: has_time.then_some(t.self_ns),
                metrics: MetricValues(own),
                overhead_ns: compensated.then_some(t.overhead_ns),
                total_overhead_ns: compensated.then_some(t.total_overhead_ns),
                self_uncertain: t.self_uncertain(),
                total_uncertain: t.total_uncertain(),
                measured_total_ns: (cpu_doc || has_time && compensated)
                    .then_some(raw[id.index()].total_ns),
                measured_self_ns: (cpu_doc || has_time && compensated)
                    .then_some(raw[id.index()].self_ns),
                outer_calls: cpu_doc.then_some(node.outer_calls),
                probe_ns: (node.probe_ns > 0).then_some(node.probe_ns),
                cpu_ns: cpu[id.index()].map(|c| c.total_ns),
                cpu_self_ns: cpu[id.index()].map(|c| c.self_ns),
                measured_cpu_ns: node.cpu_ns.filter(|_| cpu_compensated),
                cpu_self_uncertain: cpu[id.index()].is_some_and(|c| c.self_uncertain()),
                cpu_total_uncertain: cpu[id.index()].is_some_and(|c| c.total_uncertain()),
                probes_dropped: matches!(node.kind, NodeKind::Method(m) if self.probes_dropped.contains(&m)),
                waiting: waiting == Some(id),
                allocations,
                children,
            });
        }
        built[NodeId::ROOT.index()].take().expect("root built")
    }

    /// Reads a profile from its document.
    pub fn from_document(doc: &Document) -> Result<Profile, DocumentError> {
        if doc.format != FORMAT {
            return Err(DocumentError::Format(doc.format.clone()));
        }
        if doc.version != VERSION {
            return Err(DocumentError::Version(doc.version));
        }
        let mode: Mode = doc
            .mode
            .parse()
            .map_err(|_| DocumentError::Mode(doc.mode.clone()))?;
        let region = mode == Mode::Region;
        let inline = mode.inline_metrics();
        // The metrics past the mode's own (and a CPU profile's `cpu_time`) are the side table's.
        let extra_metrics: Vec<Metric> = if doc.metrics.is_empty() {
            if mode == Mode::Alloc && doc.classes.is_some() {
                crate::alloc::path_metrics()
            } else {
                mode.default_metrics()
            }
        } else {
            doc.metrics.clone()
        }
        .into_iter()
        .filter(|m| {
            let own = inline.iter().any(|&(name, _)| name == m.name)
                || mode.is_probe_timed() && m.name == crate::metric::CPU_TIME;
            !own
        })
        .collect();
        let names: Vec<String> = extra_metrics.iter().map(|m| m.name.clone()).collect();
        let mut profile = Profile {
            mode,
            extra_metrics,
            instrumented: doc.methods.instrumented,
            trivial_skipped: doc.methods.trivial_skipped,
            calibration: doc.calibration,
            cpu_calibration: doc.cpu_calibration,
            calibration_stats: doc
                .compensation
                .as_ref()
                .and_then(|c| c.calibration.clone()),
            regions: region.then(|| doc.regions.clone().unwrap_or_default()),
            failed_classes: doc.failed_classes.clone(),
            alloc: doc
                .classes
                .as_ref()
                .map(|classes| crate::alloc::AllocSummary {
                    track_every: doc.track_every.unwrap_or_default(),
                    gc_count: doc.gc_count.unwrap_or_default(),
                    untracked: doc.untracked.unwrap_or_default(),
                    stacks_dropped: doc.stacks_dropped.unwrap_or_default(),
                    classes: classes.clone(),
                    sites: doc.sites.clone().unwrap_or_default(),
                    suspects: doc.leak_suspects.clone().unwrap_or_default(),
                    path_generations: Default::default(),
                    alloc_classes: doc.alloc_classes.clone(),
                }),
            ..Profile::default()
        };
        // Methods no node names keep their ids after the trees' (which the writers' ties
        // follow): the same profile reads back the same.
        let mut waiting_nodes = Vec::with_capacity(doc.threads.len());
        let mut trees = Vec::with_capacity(doc.threads.len());
        let mut generations = std::collections::BTreeMap::new();
        for (i, t) in doc.threads.iter().enumerate() {
            let mut tree = CallTree::with_width(names.len());
            let mut waiting = None;
            let mut leaves = Leaves {
                thread: i,
                names: &names,
                generations: &mut generations,
            };
            if t.root.kind == NodeKindDoc::Thread {
                fill_node(&mut tree, NodeId::ROOT, &t.root, mode, &names);
                leaves.add(&mut profile, &mut tree, NodeId::ROOT, &t.root.allocations);
                for child in &t.root.children {
                    waiting = add_subtree(
                        &mut profile,
                        &mut tree,
                        NodeId::ROOT,
                        child,
                        &t.name,
                        &mut leaves,
                    )?
                    .or(waiting);
                }
            } else {
                // A root that is a method: the thread node is implied.
                waiting = add_subtree(
                    &mut profile,
                    &mut tree,
                    NodeId::ROOT,
                    &t.root,
                    &t.name,
                    &mut leaves,
                )?;
                let root_total = t.root.measured_total_ns.or(t.root.total_ns).unwrap_or(0);
                tree.node_mut(NodeId::ROOT).total_ns = root_total;
                tree.node_mut(NodeId::ROOT).cpu_ns = t.root.measured_cpu_ns.or(t.root.cpu_ns);
            }
            waiting_nodes.push(waiting);
            trees.push(tree);
        }
        if let Some(a) = profile.alloc.as_mut() {
            a.path_generations = generations;
        }
        for m in &doc.dropped_methods {
            let id = profile.methods.insert(&m.class, &m.method, &m.descriptor);
            profile.probes_dropped.insert(id);
        }
        if mode == Mode::Native || doc.natives.is_some() {
            let natives = doc
                .natives
                .iter()
                .flatten()
                .map(|n| profile.methods.insert(&n.class, &n.method, &n.descriptor))
                .collect();
            profile.native = Some(crate::native::NativeSummary {
                natives,
                not_measured: doc.not_measured.clone().unwrap_or_default(),
                unattributed_upcalls: doc.unattributed_upcalls.unwrap_or(0),
            });
        }
        for ((t, tree), waiting) in doc.threads.iter().zip(trees).zip(waiting_nodes) {
            // Measured, as the recorder gives it: the thread node's when the document has one.
            let cpu_ns = tree.node(NodeId::ROOT).cpu_ns.or(t.cpu_ns);
            profile.threads.push(ThreadProfile {
                name: t.name.clone(),
                id: t.id,
                cpu_ns,
                tree,
                overflow_calls: t.overflow_calls,
                unmatched_exits: t.unmatched_exits,
                dropped_events: t.dropped_events,
                waiting: t.waiting.as_ref().map(|w| Waiting {
                    state: w.state.clone(),
                    frame: w.frame.clone(),
                    node: waiting,
                }),
                virtual_thread: t.virtual_thread,
            });
        }
        Ok(profile)
    }

    /// Parses a JSON document of any depth (see [`Document::from_json_slice`]).
    pub fn from_json_slice(bytes: &[u8]) -> Result<Profile, DocumentError> {
        Profile::from_document(&Document::from_json_slice(bytes)?)
    }

    /// Writes the JSON document with a final newline: pretty-printed when every tree is
    /// at most [`PRETTY_MAX_DEPTH`] deep, compact otherwise (indentation grows with depth,
    /// so a pretty deep tree is quadratic in size). Deep trees are written on a
    /// heap-allocated stack extension rather than overflowing the caller's (the agent
    /// writes from a JVM thread).
    pub fn write_json(&self, mut out: impl io::Write) -> io::Result<()> {
        let doc = self.to_document();
        let shallow = self
            .threads
            .iter()
            .all(|t| t.tree.walk().iter().all(|&(_, d)| d <= PRETTY_MAX_DEPTH));
        if shallow {
            let mut json = serde_json::Serializer::pretty(&mut out);
            doc.serialize(serde_stacker::Serializer::new(&mut json))?;
        } else {
            let mut json = serde_json::Serializer::new(&mut out);
            doc.serialize(serde_stacker::Serializer::new(&mut json))?;
        }
        out.write_all(b"\n")
    }
}

impl Document {
    /// Parses a JSON document. Nesting depth is unlimited: serde_json's default limit
    /// (128) would reject trees deeper than about 64 levels, and the recursion runs on
    /// a stack that grows on the heap when the native one runs low.
    pub fn from_json_slice(bytes: &[u8]) -> Result<Document, serde_json::Error> {
        let mut json = serde_json::Deserializer::from_slice(bytes);
        json.disable_recursion_limit();
        let doc = Document::deserialize(serde_stacker::Deserializer::new(&mut json))?;
        json.end()?;
        Ok(doc)
    }
}

fn add_subtree(
    profile: &mut Profile,
    tree: &mut CallTree,
    parent: NodeId,
    doc: &NodeDoc,
    thread: &str,
    leaves: &mut Leaves<'_>,
) -> Result<Option<NodeId>, DocumentError> {
    let (mode, names): (Mode, Vec<String>) = (
        profile.mode,
        profile
            .extra_metrics
            .iter()
            .map(|m| m.name.clone())
            .collect(),
    );
    // Explicit stack: documents can be deeper than the native stack allows recursion.
    let mut stack = vec![(parent, doc)];
    let mut waiting = None;
    while let Some((parent, doc)) = stack.pop() {
        let kind = match doc.kind {
            NodeKindDoc::Thread => {
                return Err(DocumentError::NestedThreadNode {
                    thread: thread.to_owned(),
                })
            }
            NodeKindDoc::Overflow => NodeKind::Overflow,
            NodeKindDoc::Method => {
                let m = profile.methods.intern(MethodInfo::new(
                    doc.class.as_str(),
                    doc.method.as_str(),
                    doc.descriptor.as_str(),
                ));
                if doc.probes_dropped {
                    profile.probes_dropped.insert(m);
                }
                NodeKind::Method(m)
            }
        };
        // Sum rather than duplicate, should a document list one context twice.
        let id = tree.child_or_insert(parent, kind);
        fill_node(tree, id, doc, mode, &names);
        leaves.add(profile, tree, id, &doc.allocations);
        if doc.waiting {
            waiting = Some(id);
        }
        for child in doc.children.iter().rev() {
            stack.push((id, child));
        }
    }
    Ok(waiting)
}

/// Reads a thread's `allocations` entries into class leaves of its tree.
struct Leaves<'a> {
    thread: usize,
    /// The profile's extra metrics.
    names: &'a [String],
    generations: &'a mut std::collections::BTreeMap<(usize, NodeId), u32>,
}

impl Leaves<'_> {
    fn add(
        &mut self,
        profile: &mut Profile,
        tree: &mut CallTree,
        parent: NodeId,
        allocations: &[crate::alloc::Allocation],
    ) {
        use crate::alloc::{LIVE, LIVE_BYTES, OBJECTS};
        for a in allocations {
            let class = profile
                .methods
                .intern(MethodInfo::new(a.class.as_str(), "", ""));
            let id = tree.child_or_insert(parent, NodeKind::Method(class));
            for (name, v) in [
                (OBJECTS, a.allocated),
                (crate::metric::BYTES, a.bytes),
                (LIVE, a.live),
                (LIVE_BYTES, a.live_bytes),
            ] {
                if let Some(i) = self.names.iter().position(|n| n == name) {
                    tree.extra_mut(id)[i] += v;
                }
            }
            if a.generations > 0 {
                let g = self.generations.entry((self.thread, id)).or_insert(0);
                *g = (*g).max(a.generations);
            }
        }
    }
}

/// Adds the values of `doc` to node `id`; `names` are the profile's extra metrics.
fn fill_node(tree: &mut CallTree, id: NodeId, doc: &NodeDoc, mode: Mode, names: &[String]) {
    // Outer probe calls are the probe-timed modes': their probes are around every call.
    let default_outer = if doc.kind == NodeKindDoc::Thread || !mode.is_probe_timed() {
        0
    } else {
        doc.children.iter().map(|c| c.calls.unwrap_or(0)).sum()
    };
    for (name, v) in &doc.metrics.0 {
        if let Some(i) = names.iter().position(|n| n == name) {
            tree.extra_mut(id)[i] += v;
        }
    }
    let node = tree.node_mut(id);
    node.calls += doc.calls.unwrap_or(0);
    node.total_ns += doc.measured_total_ns.or(doc.total_ns).unwrap_or(0);
    node.outer_calls += doc.outer_calls.unwrap_or(default_outer);
    node.probe_ns += doc.probe_ns.unwrap_or(0);
    node.cpu_ns = crate::tree::add_cpu(node.cpu_ns, doc.measured_cpu_ns.or(doc.cpu_ns));
}
