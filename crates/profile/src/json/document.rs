//! The document's top level: what a profile says besides its trees, and one entry per thread.

use serde::{Deserialize, Serialize};

use crate::calibration::Calibration;
use crate::compensation::CalibrationStats;
use crate::failed::FailedClass;
use crate::json::node::{is_false, is_zero, NodeDoc};
use crate::metric::Metric;
use crate::region::RegionStats;

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
    /// Allocation mode: tracked by bytes, one object each time about this many more bytes were
    /// allocated at a site (absent: tracked by count, `track_every`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub track_bytes: Option<u64>,
    /// Allocation mode: garbage collections while profiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc_count: Option<u64>,
    /// Allocation mode: `live`, `live_bytes`, `survived`, `survived_bytes`, `avg_age` and
    /// `generations` (of `classes`; `live`, `live_bytes`, `survived`, `survived_bytes` and
    /// `generations` also of the nodes' `allocations`, `survived` and `survived_bytes` of
    /// `sites`; `live`, `survived` and `generations` of `leak_suspects`) are estimates from the tracked objects, every
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
    /// Sample mode: how it sampled, samples without a stack and lost, by reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<crate::sampling::Sampling>,
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    /// JDK classes left uninstrumented as inlined into much of the compiled code (sampled
    /// timing at an attach); absent when none were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inlined_left_alone: Vec<String>,
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
    /// Native mode: how long the thread was alive while the profile recorded, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alive_ns: Option<u64>,
    /// Native mode with thread CPU times: the thread's CPU time while alive, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alive_cpu_ns: Option<u64>,
    /// The tree; written as a `"thread"` node.
    pub root: NodeDoc,
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
