//! What the `native` mode measures (IPA, docs/modes/native.md): each thread's time split between
//! bytecode (interpreted or compiled) and native code, and per native method its calls, its
//! native time (without the bytecode its JNI upcalls run), its upcalls and the Java methods they
//! call.
//!
//! The trees carry it all. A native method's frame is a node of a method in
//! [`NativeSummary::natives`]; its children are what its upcalls ran (the Java methods native
//! code called through JNI, and below them whatever those called). Per node, besides `calls` and
//! `time` (compensated as in the CPU mode: a native frame's self time is native time, every other
//! node's is bytecode time), two metrics of the node's own: `native_time` (a native frame's
//! compensated self time, 0 elsewhere) and `upcalls` (the JNI calls into Java that frame made).
//! With thread CPU times, `cpu_time` and `native_cpu_time` likewise. A thread's native time is
//! its tree's `native_time`, its bytecode time the rest of its tree's time; the table of native
//! methods merges their frames over threads and contexts. Nothing here is stored twice: the
//! document's `natives`, `bytecode_ns` and `native_ns` are written from the trees and recomputed
//! when read.
//!
//! ```
//! use ferrofluid_profile::native::{NativeSummary, NATIVE_TIME, UPCALLS};
//! use ferrofluid_profile::{CallTree, Mode, NodeId, NodeKind, Profile, ThreadProfile};
//!
//! let mut profile = Profile::new(Mode::Native);
//! profile.extra_metrics = ferrofluid_profile::native::metrics(false);
//! let read = profile.methods.insert("java.io.FileInputStream", "readBytes", "([BII)I");
//! let up = profile.methods.insert("demo.Callback", "run", "()V");
//! let mut tree = CallTree::with_width(2);
//! tree.node_mut(NodeId::ROOT).total_ns = 10_000;
//! let r = tree.add_child(NodeId::ROOT, NodeKind::Method(read));
//! tree.node_mut(r).calls = 4;
//! tree.node_mut(r).total_ns = 7_000;
//! let u = tree.add_child(r, NodeKind::Method(up));
//! tree.node_mut(u).calls = 2;
//! tree.node_mut(u).total_ns = 1_000;
//! profile.threads.push(ThreadProfile::new("main", 1, tree));
//! profile.native = Some(NativeSummary {
//!     natives: [read].into(),
//!     ..NativeSummary::default()
//! });
//! profile.set_native_metrics();
//! profile.threads[0].tree.extra_mut(r)[1] = 2; // the engine counts the upcalls
//!
//! let split = profile.native_split(0);
//! assert_eq!((split.bytecode_ns, split.native_ns), (4_000, 6_000));
//! let rows = profile.native_rows();
//! assert_eq!((rows[0].calls, rows[0].native_ns, rows[0].upcalls), (4, 6_000, 2));
//! assert_eq!(rows[0].targets, [(up, 2)]);
//! ```

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::method::MethodId;

pub use crate::metric::{native_metrics as metrics, NATIVE_CPU_TIME, NATIVE_TIME, UPCALLS};

/// Why a native method is listed as not measured ([`NotMeasured::reason`]).
pub mod reason {
    /// `@IntrinsicCandidate`: compiled callers may run HotSpot's intrinsic instead of calling
    /// it, so a wrapper would count what the JIT decides; not wrapped.
    pub const INTRINSIC: &str = "intrinsic";
    /// Signature polymorphic (`MethodHandle.invokeExact`, `VarHandle.get`...): not wrapped.
    pub const SIGNATURE_POLYMORPHIC: &str = "signature-polymorphic";
    /// `registerNatives`, the binding of its class's natives, and the natives that load
    /// libraries and look natives up (`NativeLibrary.findEntry0`): not wrapped.
    pub const NATIVE_BINDING: &str = "native-binding";
    /// Finds its caller's frames by its own place on the stack (`Throwable.fillInStackTrace`):
    /// not wrapped.
    pub const FRAME_SENSITIVE: &str = "frame-sensitive";
    /// Runs Java code by the JVM's own calls, where no JNI upcall is seen (reflection's
    /// `invoke0`, `Class.forName0`, class definition): its time is that Java code's; not wrapped.
    pub const RUNS_JAVA: &str = "runs-java";
    /// Its class was loaded before the agent: a wrapper can be added only as a class first
    /// loads (`attach`).
    pub const LOADED_BEFORE_AGENT: &str = "loaded-before-agent";
    /// A boot class's native that HotSpot resolves by its JNI name in `libjava`, of a class
    /// loaded before the JVM is live: a prefixed name could not be resolved then.
    pub const EARLY_BOOT: &str = "early-boot";
    /// The wrapper could not be built (the detail says why); the native runs as it was.
    pub const NOT_WRAPPED: &str = "not-wrapped";
}

/// A native method the profile has no measurement of, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NotMeasured {
    /// Dotted class name.
    pub class: String,
    /// Method name.
    pub method: String,
    /// JVM descriptor.
    pub descriptor: String,
    /// One of [`reason`]'s values.
    pub reason: String,
    /// For [`reason::NOT_WRAPPED`], what went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The `native` mode's tables ([`Profile::native`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NativeSummary {
    /// The native methods whose frames the trees have: a node of one of these is native code.
    pub natives: BTreeSet<MethodId>,
    /// Native methods no measurement covers, in the order met.
    pub not_measured: Vec<NotMeasured>,
    /// JNI calls into Java made from no wrapped native's frame (from a native not measured, or a
    /// thread attached from native code): their time is bytecode time of the thread, and no
    /// native method is charged with them.
    pub unattributed_upcalls: u64,
}

/// A thread's (or all threads') time split between bytecode and native code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Time in bytecode (interpreted or compiled), ns.
    pub bytecode_ns: u64,
    /// Time in native methods, without the bytecode their upcalls ran, ns.
    pub native_ns: u64,
    /// With thread CPU times: the bytecode's CPU time, ns.
    pub bytecode_cpu_ns: Option<u64>,
    /// With thread CPU times: the native code's CPU time, ns.
    pub native_cpu_ns: Option<u64>,
}

impl Split {
    /// Bytecode and native time together.
    pub fn total_ns(&self) -> u64 {
        self.bytecode_ns + self.native_ns
    }

    pub(crate) fn add(&mut self, other: &Split) {
        self.bytecode_ns += other.bytecode_ns;
        self.native_ns += other.native_ns;
        self.bytecode_cpu_ns = add_opt(self.bytecode_cpu_ns, other.bytecode_cpu_ns);
        self.native_cpu_ns = add_opt(self.native_cpu_ns, other.native_cpu_ns);
    }
}

fn add_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

/// One native method over every thread and calling context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeRow {
    /// The native method.
    pub method: MethodId,
    /// Its calls.
    pub calls: u64,
    /// Its native time, without what its upcalls ran, ns.
    pub native_ns: u64,
    /// The same in thread CPU time, when measured.
    pub native_cpu_ns: Option<u64>,
    /// Its JNI calls into Java.
    pub upcalls: u64,
    /// What the upcalls called: the method of each child of its frames, with that child's calls,
    /// the most called first (ties by method id).
    pub targets: Vec<(MethodId, u64)>,
    /// Threads that called it.
    pub threads: usize,
}

impl NativeRow {
    /// Native time per call, ns.
    pub fn avg_ns(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.native_ns as f64 / self.calls as f64
        }
    }
}
