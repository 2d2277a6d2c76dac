//! A profile read back from its document.

use crate::error::DocumentError;
use crate::json::document::{Document, ThreadDoc, FORMAT, VERSION};
use crate::json::node::{NodeDoc, NodeKindDoc};
use crate::method::MethodInfo;
use crate::metric::Metric;
use crate::mode::Mode;
use crate::profile::{Alive, Profile, ThreadProfile, Waiting};
use crate::tree::{CallTree, NodeId, NodeKind};

impl Profile {
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
        let extra_metrics = extra_metrics(doc, mode);
        let names: Vec<String> = extra_metrics.iter().map(|m| m.name.clone()).collect();
        // A sample profile's nodes keep their own samples and frame types.
        let names = if mode == Mode::Sample {
            crate::sampling::column_keys(&names)
        } else {
            names
        };
        let mut profile = Profile {
            mode,
            extra_metrics,
            instrumented: doc.methods.instrumented,
            trivial_skipped: doc.methods.trivial_skipped,
            inlined_left_alone: doc.methods.inlined_left_alone.clone(),
            calibration: doc.calibration,
            cpu_calibration: doc.cpu_calibration,
            calibration_stats: doc
                .compensation
                .as_ref()
                .and_then(|c| c.calibration.clone()),
            regions: region.then(|| doc.regions.clone().unwrap_or_default()),
            sampling: doc.sampling.clone(),
            failed_classes: doc.failed_classes.clone(),
            alloc: alloc_summary(doc),
            ..Profile::default()
        };
        // Methods no node names keep their ids after the trees' (which the writers' ties
        // follow): the same profile reads back the same.
        let mut waiting_nodes = Vec::with_capacity(doc.threads.len());
        let mut trees = Vec::with_capacity(doc.threads.len());
        let mut generations = std::collections::BTreeMap::new();
        for (i, t) in doc.threads.iter().enumerate() {
            let mut leaves = Leaves {
                thread: i,
                names: &names,
                generations: &mut generations,
            };
            let (tree, waiting) = read_tree(&mut profile, t, &mut leaves)?;
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
        profile.read_native(doc, mode);
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
                alive: t.alive_ns.map(|wall_ns| Alive {
                    wall_ns,
                    cpu_ns: t.alive_cpu_ns,
                }),
            });
        }
        Ok(profile)
    }

    /// Parses a JSON document of any depth (see [`Document::from_json_slice`]).
    pub fn from_json_slice(bytes: &[u8]) -> Result<Profile, DocumentError> {
        Profile::from_document(&Document::from_json_slice(bytes)?)
    }
}

/// The metrics of a document's nodes past the mode's own (and a CPU profile's `cpu_time`): the
/// side table's.
fn extra_metrics(doc: &Document, mode: Mode) -> Vec<Metric> {
    let inline = mode.inline_metrics();
    if doc.metrics.is_empty() {
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
            || mode.is_probe_timed() && m.name == crate::metric::CPU_TIME
            || mode == Mode::Sample && m.name == crate::metric::CALLS;
        !own
    })
    .collect()
}

/// The allocation tables of an `alloc` document (the paths' generations come with its trees).
fn alloc_summary(doc: &Document) -> Option<crate::alloc::AllocSummary> {
    doc.classes
        .as_ref()
        .map(|classes| crate::alloc::AllocSummary {
            track_every: doc.track_every.unwrap_or_default(),
            track_bytes: doc.track_bytes.unwrap_or_default(),
            gc_count: doc.gc_count.unwrap_or_default(),
            untracked: doc.untracked.unwrap_or_default(),
            stacks_dropped: doc.stacks_dropped.unwrap_or_default(),
            classes: classes.clone(),
            sites: doc.sites.clone().unwrap_or_default(),
            suspects: doc.leak_suspects.clone().unwrap_or_default(),
            path_generations: Default::default(),
            alloc_classes: doc.alloc_classes.clone(),
        })
}

/// The tree of thread `t`, and its node marked `waiting`.
fn read_tree(
    profile: &mut Profile,
    t: &ThreadDoc,
    leaves: &mut Leaves<'_>,
) -> Result<(CallTree, Option<NodeId>), DocumentError> {
    let mut tree = CallTree::with_width(leaves.names.len());
    let mut waiting = None;
    if t.root.kind == NodeKindDoc::Thread {
        fill_node(&mut tree, NodeId::ROOT, &t.root, profile.mode, leaves.names);
        leaves.add(profile, &mut tree, NodeId::ROOT, &t.root.allocations);
        for child in &t.root.children {
            waiting =
                add_subtree(profile, &mut tree, NodeId::ROOT, child, &t.name, leaves)?.or(waiting);
        }
    } else {
        // A root that is a method: the thread node is implied.
        waiting = add_subtree(profile, &mut tree, NodeId::ROOT, &t.root, &t.name, leaves)?;
        let root_total = t.root.measured_total_ns.or(t.root.total_ns).unwrap_or(0);
        tree.node_mut(NodeId::ROOT).total_ns = root_total;
        tree.node_mut(NodeId::ROOT).cpu_ns = t.root.measured_cpu_ns.or(t.root.cpu_ns);
    }
    Ok((tree, waiting))
}

fn add_subtree(
    profile: &mut Profile,
    tree: &mut CallTree,
    parent: NodeId,
    doc: &NodeDoc,
    thread: &str,
    leaves: &mut Leaves<'_>,
) -> Result<Option<NodeId>, DocumentError> {
    let mode = profile.mode;
    let names = leaves.names.to_vec();
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
        use crate::alloc::{LIVE, LIVE_BYTES, OBJECTS, SURVIVED, SURVIVED_BYTES};
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
                (SURVIVED, a.survived),
                (SURVIVED_BYTES, a.survived_bytes),
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
