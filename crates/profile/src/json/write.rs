//! A profile written as its document.

use std::io;

use serde::Serialize;

use crate::calibration::node_times;
use crate::json::document::{
    CompensationDoc, Document, MethodCounts, MethodDoc, ThreadDoc, WaitingDoc, FORMAT,
    OVERFLOW_NODE_METHOD, PRETTY_MAX_DEPTH, THREAD_NODE_METHOD, VERSION,
};
use crate::json::node::{MetricValues, NodeDoc, NodeKindDoc};
use crate::metric::Slot;
use crate::mode::Mode;
use crate::profile::Profile;
use crate::tree::{CallTree, NodeId, NodeKind};

impl Profile {
    /// The JSON document of this profile.
    pub fn to_document(&self) -> Document {
        let native = self.native.is_some();
        let mut doc = Document {
            format: FORMAT.to_owned(),
            version: VERSION,
            mode: self.mode.name().to_owned(),
            // A CPU profile lists its metrics only when it has more than its own (sampled
            // timing's samples).
            metrics: match self.mode {
                Mode::Cpu if !self.extra_metrics.is_empty() => self.metrics(),
                Mode::Cpu | Mode::Region => Vec::new(),
                _ => self.metrics(),
            },
            methods: MethodCounts {
                instrumented: self.instrumented,
                called: self.called(),
                trivial_skipped: self.trivial_skipped,
                probes_dropped: self.probes_dropped.len() as u64,
                inlined_left_alone: self.inlined_left_alone.clone(),
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
                        alive_ns: t.alive.map(|a| a.wall_ns),
                        alive_cpu_ns: t.alive.and_then(|a| a.cpu_ns),
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
            track_bytes: self
                .alloc
                .as_ref()
                .map(|a| a.track_bytes)
                .filter(|&b| b > 0),
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
            sampling: self.sampling.clone(),
            bytecode_ns: None,
            native_ns: None,
            bytecode_cpu_ns: None,
            native_cpu_ns: None,
            natives: None,
            not_measured: None,
            unattributed_upcalls: None,
        };
        self.write_native(&mut doc);
        doc
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
        use crate::alloc::{LIVE, LIVE_BYTES, OBJECTS, SURVIVED, SURVIVED_BYTES};
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
            survived: value(SURVIVED),
            survived_bytes: value(SURVIVED_BYTES),
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
        let samples = (self.mode == Mode::Sample)
            .then(|| self.metric_index(crate::sampling::SAMPLES))
            .flatten()
            .map(|i| self.metric_values(tree, i));
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
            } else if let Some(samples) = &samples {
                let total = samples[id.index()].total;
                crate::sampling::node_keys(&self.extra_metrics, tree.extra(id), total)
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
