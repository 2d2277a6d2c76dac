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

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::method::MethodId;
use crate::metric::{Metric, COUNT, NANOSECONDS};
use crate::profile::Profile;
use crate::tree::{CallTree, NodeId, NodeKind};

/// Metric of a native profile's nodes: a native frame's native time, ns (compensated; 0 for
/// every other node).
pub const NATIVE_TIME: &str = "native_time";
/// The same in thread CPU time (`cpu` option).
pub const NATIVE_CPU_TIME: &str = "native_cpu_time";
/// Metric of a native profile's nodes: the JNI calls into Java a native frame made.
pub const UPCALLS: &str = "upcalls";

/// Why a native method is listed as not measured ([`NotMeasured::reason`]).
pub mod reason {
    /// `@IntrinsicCandidate`: compiled callers may run HotSpot's intrinsic instead of calling
    /// it, so a wrapper would count what the JIT decides; not wrapped.
    pub const INTRINSIC: &str = "intrinsic";
    /// Signature polymorphic (`MethodHandle.invokeExact`, `VarHandle.get`...): not wrapped.
    pub const SIGNATURE_POLYMORPHIC: &str = "signature-polymorphic";
    /// `registerNatives`, the binding of its class's natives: not wrapped.
    pub const NATIVE_BINDING: &str = "native-binding";
    /// Finds its caller's frames by its own place on the stack (`Throwable.fillInStackTrace`):
    /// not wrapped.
    pub const FRAME_SENSITIVE: &str = "frame-sensitive";
    /// Its class was loaded before the agent: a wrapper can be added only as a class first
    /// loads (`attach`).
    pub const LOADED_BEFORE_AGENT: &str = "loaded-before-agent";
    /// The wrapper could not be built (the detail says why); the native runs as it was.
    pub const NOT_WRAPPED: &str = "not-wrapped";
}

/// The metrics of a `native` profile's trees past `calls` and `time` (and `cpu_time`), in
/// column order: `native_time`, `upcalls`, and with thread CPU times `native_cpu_time`.
pub fn metrics(cpu: bool) -> Vec<Metric> {
    let mut m = vec![
        Metric::new(NATIVE_TIME, NANOSECONDS),
        Metric::new(UPCALLS, COUNT),
    ];
    if cpu {
        m.push(Metric::new(NATIVE_CPU_TIME, NANOSECONDS));
    }
    m
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

    fn add(&mut self, other: &Split) {
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

impl Profile {
    /// Whether a node of `kind` is a native method's frame.
    pub fn is_native_frame(&self, kind: NodeKind) -> bool {
        match (kind, &self.native) {
            (NodeKind::Method(m), Some(n)) => n.natives.contains(&m),
            _ => false,
        }
    }

    fn extra_column(&self, name: &str) -> Option<usize> {
        self.extra_metrics.iter().position(|m| m.name == name)
    }

    /// Sets the `native_time` (and `native_cpu_time`) of every native frame to its compensated
    /// self time, and 0 elsewhere: what the engine does once its trees are complete, so that
    /// every writer reads the same numbers.
    pub fn set_native_metrics(&mut self) {
        let (Some(wall), cpu_column) = (
            self.extra_column(NATIVE_TIME),
            self.extra_column(NATIVE_CPU_TIME),
        ) else {
            return;
        };
        for t in 0..self.threads.len() {
            let tree = &self.threads[t].tree;
            let times = self.times(tree);
            let cpu = self.cpu_times(tree);
            let native: Vec<bool> = tree
                .ids()
                .map(|id| self.is_native_frame(tree.node(id).kind))
                .collect();
            let tree = &mut self.threads[t].tree;
            for id in tree.ids().collect::<Vec<_>>() {
                let own = native[id.index()];
                tree.extra_mut(id)[wall] = if own { times[id.index()].self_ns } else { 0 };
                if let Some(c) = cpu_column {
                    tree.extra_mut(id)[c] = match (own, cpu[id.index()]) {
                        (true, Some(t)) => t.self_ns,
                        _ => 0,
                    };
                }
            }
        }
    }

    /// Thread `index`'s split ([`Profile::threads`]): its tree's native time, and the rest of
    /// its tree's (compensated) time as bytecode.
    pub fn native_split(&self, index: usize) -> Split {
        let Some(thread) = self.threads.get(index) else {
            return Split::default();
        };
        let tree = &thread.tree;
        let own_sum = |column: Option<usize>| -> u64 {
            column.map_or(0, |c| {
                tree.ids()
                    .map(|id| tree.extra(id).get(c).copied().unwrap_or(0))
                    .sum()
            })
        };
        let native_ns = own_sum(self.extra_column(NATIVE_TIME));
        let whole = self.times(tree)[NodeId::ROOT.index()].total_ns;
        let cpu_whole = self.cpu_times(tree)[NodeId::ROOT.index()].map(|c| c.total_ns);
        let native_cpu_ns = cpu_whole.map(|_| own_sum(self.extra_column(NATIVE_CPU_TIME)));
        Split {
            bytecode_ns: whole.saturating_sub(native_ns),
            native_ns,
            bytecode_cpu_ns: cpu_whole.map(|w| w.saturating_sub(native_cpu_ns.unwrap_or(0))),
            native_cpu_ns,
        }
    }

    /// Every thread's split added up.
    pub fn native_total(&self) -> Split {
        let mut total = Split::default();
        for i in 0..self.threads.len() {
            total.add(&self.native_split(i));
        }
        total
    }

    /// The native methods by native time (the most first; ties by calls, then method id), each
    /// merged over threads and calling contexts; a method of [`NativeSummary::natives`] without
    /// a frame has a row of zeros.
    pub fn native_rows(&self) -> Vec<NativeRow> {
        let Some(summary) = &self.native else {
            return Vec::new();
        };
        let wall = self.extra_column(NATIVE_TIME);
        let cpu = self.extra_column(NATIVE_CPU_TIME);
        let upcalls = self.extra_column(UPCALLS);
        let mut rows: BTreeMap<MethodId, (NativeRow, BTreeMap<MethodId, u64>)> = summary
            .natives
            .iter()
            .map(|&m| {
                let row = NativeRow {
                    method: m,
                    calls: 0,
                    native_ns: 0,
                    native_cpu_ns: None,
                    upcalls: 0,
                    targets: Vec::new(),
                    threads: 0,
                };
                (m, (row, BTreeMap::new()))
            })
            .collect();
        for thread in &self.threads {
            let tree = &thread.tree;
            let mut seen = BTreeSet::new();
            for id in tree.ids() {
                let node = tree.node(id);
                let Some((row, targets)) = node.method().and_then(|m| rows.get_mut(&m)) else {
                    continue;
                };
                let value = |c: Option<usize>| c.map_or(0, |c| tree.extra(id)[c]);
                row.calls += node.calls;
                row.native_ns += value(wall);
                if cpu.is_some() && node.cpu_ns.is_some() {
                    row.native_cpu_ns = Some(row.native_cpu_ns.unwrap_or(0) + value(cpu));
                }
                row.upcalls += value(upcalls);
                add_targets(tree, id, targets);
                if seen.insert(row.method) {
                    row.threads += 1;
                }
            }
        }
        let mut rows: Vec<NativeRow> = rows
            .into_values()
            .map(|(mut row, targets)| {
                row.targets = targets.into_iter().collect();
                row.targets
                    .sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                row
            })
            .collect();
        rows.sort_by(|a, b| {
            b.native_ns
                .cmp(&a.native_ns)
                .then(b.calls.cmp(&a.calls))
                .then(a.method.cmp(&b.method))
        });
        rows
    }
}

/// The calls of each method child of `id` (what its upcalls called), added to `targets`.
fn add_targets(tree: &CallTree, id: NodeId, targets: &mut BTreeMap<MethodId, u64>) {
    for &c in tree.node(id).children() {
        if let Some(m) = tree.node(c).method() {
            *targets.entry(m).or_insert(0) += tree.node(c).calls;
        }
    }
}
