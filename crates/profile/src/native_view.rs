//! The `native` mode's numbers read from a profile's trees ([`crate::native`]): which nodes are
//! native frames, each thread's bytecode/native split, the native methods merged over threads
//! and contexts.

use std::collections::{BTreeMap, BTreeSet};

use crate::method::MethodId;
use crate::native::{NativeRow, Split, NATIVE_CPU_TIME, NATIVE_TIME, UPCALLS};
use crate::profile::Profile;
use crate::tree::{CallTree, NodeId, NodeKind};

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
    /// its time as bytecode: of its time alive while the profile recorded
    /// ([`ThreadProfile::alive`](crate::ThreadProfile::alive)) where measured, else of its
    /// tree's (compensated) time.
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
        let alive = thread.alive.unwrap_or_default();
        let whole = self.times(tree)[NodeId::ROOT.index()]
            .total_ns
            .max(alive.wall_ns);
        let cpu_whole = match (self.cpu_times(tree)[NodeId::ROOT.index()], alive.cpu_ns) {
            (Some(c), alive) => Some(c.total_ns.max(alive.unwrap_or(0))),
            (None, alive) => alive,
        };
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
                add_targets(tree, id, &summary.natives, targets);
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
/// A native frame's children that are native frames themselves (Java code the JVM ran from the
/// native, a class's initialiser, called another native) are not upcalls.
fn add_targets(
    tree: &CallTree,
    id: NodeId,
    natives: &std::collections::BTreeSet<MethodId>,
    targets: &mut BTreeMap<MethodId, u64>,
) {
    for &c in tree.node(id).children() {
        if let Some(m) = tree.node(c).method().filter(|m| !natives.contains(m)) {
            *targets.entry(m).or_insert(0) += tree.node(c).calls;
        }
    }
}
