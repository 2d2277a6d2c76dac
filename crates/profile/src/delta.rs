//! What a profile collected between two snapshots of one recording: the later snapshot less
//! the earlier one, for continuous profiling, which sends each interval's profile on its own.
//!
//! The agent's snapshots are cumulative and close every open frame at the snapshot's time
//! (time spent so far counts, and the call once), so the difference of two snapshots is
//! exactly what ran in between: a call open across both counts its time in each interval it
//! spent it in, and its call in the first. Measured values are subtracted before compensation,
//! which the interval's profile then applies with the later snapshot's calibration.
//!
//! Contexts are matched by their path of method names (class, method, descriptor), threads by
//! name and id (or by name alone, as the `alloc` engine numbers its threads afresh in each
//! snapshot), region methods by name. What is not additive over time stays the later
//! snapshot's: the live objects and bytes of an allocation profile (a gauge, as Go's
//! `inuse_*`), the `alloc` engine's class, site and suspect tables, thread states. A value that
//! went down counts 0 in the interval: only the `alloc` engine's per-path shares can (a site's
//! exact count is shared out over its paths anew in each snapshot).

use std::collections::HashMap;

use crate::method::MethodId;
use crate::profile::{Profile, ThreadProfile};
use crate::region::RegionStats;
use crate::tree::{CallTree, NodeId, NodeKind};

impl Profile {
    /// What this profile holds beyond `earlier`, a snapshot of the same recording taken
    /// before it (see the module documentation). Contexts, threads and region methods with
    /// nothing in the interval are left out; a region method's minimum, maximum, percentiles
    /// and last durations, which do not subtract, are left empty (its count, sums and
    /// distribution are the interval's).
    pub fn since(&self, earlier: &Profile) -> Profile {
        let gauges: Vec<bool> = self
            .extra_metrics
            .iter()
            .map(|m| crate::alloc::is_gauge(&m.name))
            .collect();
        let methods = method_map(self, earlier);
        let matched = match_threads(&self.threads, &earlier.threads);
        let threads = self
            .threads
            .iter()
            .zip(matched)
            .filter_map(|(now, before)| {
                let tree = match before {
                    Some(before) => tree_since(&now.tree, &before.tree, &methods, &gauges),
                    None => prune(now.tree.clone()),
                };
                let was = |f: fn(&ThreadProfile) -> u64| before.map_or(0, f);
                let thread = ThreadProfile {
                    cpu_ns: match (now.cpu_ns, before.and_then(|t| t.cpu_ns)) {
                        (Some(n), Some(b)) => Some(n.saturating_sub(b)),
                        (n, _) => n,
                    },
                    overflow_calls: now.overflow_calls.saturating_sub(was(|t| t.overflow_calls)),
                    unmatched_exits: now
                        .unmatched_exits
                        .saturating_sub(was(|t| t.unmatched_exits)),
                    dropped_events: now.dropped_events.saturating_sub(was(|t| t.dropped_events)),
                    alive: match (now.alive, before.and_then(|t| t.alive)) {
                        (Some(n), Some(b)) => Some(crate::profile::Alive {
                            wall_ns: n.wall_ns.saturating_sub(b.wall_ns),
                            cpu_ns: n.cpu_ns.map(|c| c.saturating_sub(b.cpu_ns.unwrap_or(0))),
                        }),
                        (n, _) => n,
                    },
                    tree: tree?,
                    ..now.clone()
                };
                Some(thread)
            })
            .collect();
        let regions = self.regions.as_ref().map(|regions| {
            let by_name: HashMap<(&str, &str, &str), &RegionStats> = earlier
                .regions
                .iter()
                .flatten()
                .map(|r| ((&*r.class, &*r.method, &*r.descriptor), r))
                .collect();
            regions
                .iter()
                .map(|r| {
                    let before = by_name.get(&(&*r.class, &*r.method, &*r.descriptor));
                    region_since(r, before.copied())
                })
                .filter(|r| r.count > 0)
                .collect()
        });
        Profile {
            threads,
            regions,
            ..self.clone()
        }
    }
}

/// For every method id of `now`, the id of the same method in `earlier`, if it has it.
fn method_map(now: &Profile, earlier: &Profile) -> Vec<Option<MethodId>> {
    now.methods
        .iter()
        .map(|(_, info)| earlier.methods.lookup(info))
        .collect()
}

/// For every thread of `now`, the thread of `earlier` it continues: same name and id, else the
/// only unmatched one of the same name.
fn match_threads<'a>(
    now: &[ThreadProfile],
    earlier: &'a [ThreadProfile],
) -> Vec<Option<&'a ThreadProfile>> {
    let mut taken = vec![false; earlier.len()];
    let mut out: Vec<Option<usize>> = now
        .iter()
        .map(|t| {
            let i = earlier
                .iter()
                .position(|e| e.name == t.name && e.id == t.id)?;
            taken[i] = true;
            Some(i)
        })
        .collect();
    for (t, slot) in now.iter().zip(out.iter_mut()) {
        if slot.is_some() {
            continue;
        }
        let mut same = earlier
            .iter()
            .enumerate()
            .filter(|(i, e)| !taken[*i] && e.name == t.name);
        if let (Some((i, _)), None) = (same.next(), same.next()) {
            taken[i] = true;
            *slot = Some(i);
        }
    }
    out.into_iter().map(|i| i.map(|i| &earlier[i])).collect()
}

/// `now` less `before`, node by node; `None` when nothing is left.
fn tree_since(
    now: &CallTree,
    before: &CallTree,
    methods: &[Option<MethodId>],
    gauges: &[bool],
) -> Option<CallTree> {
    let mut tree = now.clone();
    // The node of `before` in the same context as each node of `now` (parents come first).
    let mut map: Vec<Option<NodeId>> = vec![None; now.len()];
    for id in now.ids() {
        let node = now.node(id);
        let earlier = match node.parent() {
            None => Some(NodeId::ROOT),
            Some(parent) => map[parent.index()].and_then(|p| {
                let kind = match node.kind {
                    NodeKind::Method(m) => NodeKind::Method(methods.get(m.index()).copied()??),
                    other => other,
                };
                before.child(p, kind)
            }),
        };
        map[id.index()] = earlier;
        let Some(b) = earlier else { continue };
        let b_node = before.node(b);
        let n = tree.node_mut(id);
        n.calls = n.calls.saturating_sub(b_node.calls);
        n.total_ns = n.total_ns.saturating_sub(b_node.total_ns);
        n.outer_calls = n.outer_calls.saturating_sub(b_node.outer_calls);
        n.probe_ns = n.probe_ns.saturating_sub(b_node.probe_ns);
        if let (Some(c), Some(bc)) = (n.cpu_ns, b_node.cpu_ns) {
            n.cpu_ns = Some(c.saturating_sub(bc));
        }
        let b_extra = before.extra(b);
        for (i, v) in tree.extra_mut(id).iter_mut().enumerate() {
            if !gauges.get(i).copied().unwrap_or(false) {
                *v = v.saturating_sub(b_extra.get(i).copied().unwrap_or(0));
            }
        }
    }
    prune(tree)
}

/// `tree` without the subtrees that hold nothing; `None` when nothing is left at all.
fn prune(tree: CallTree) -> Option<CallTree> {
    let holds = |id: NodeId| {
        let n = tree.node(id);
        n.calls != 0
            || n.total_ns != 0
            || n.outer_calls != 0
            || n.probe_ns != 0
            || n.cpu_ns.is_some_and(|c| c != 0)
            || tree.extra(id).iter().any(|&v| v != 0)
    };
    // Children come after their parents: a reverse walk sees every child first.
    let mut keep = vec![false; tree.len()];
    for id in tree.ids().rev() {
        if holds(id) || tree.node(id).children().iter().any(|c| keep[c.index()]) {
            keep[id.index()] = true;
        }
    }
    if !keep[NodeId::ROOT.index()] {
        return None;
    }
    if keep.iter().all(|&k| k) {
        return Some(tree);
    }
    let mut out = CallTree::with_width(tree.width());
    let mut map = vec![NodeId::ROOT; tree.len()];
    for id in tree.ids() {
        if !keep[id.index()] {
            continue;
        }
        let node = tree.node(id);
        let target = match node.parent() {
            None => NodeId::ROOT,
            Some(p) => out.add_child(map[p.index()], node.kind),
        };
        let copy = out.node_mut(target);
        copy.calls = node.calls;
        copy.total_ns = node.total_ns;
        copy.outer_calls = node.outer_calls;
        copy.cpu_ns = node.cpu_ns;
        copy.probe_ns = node.probe_ns;
        out.extra_mut(target).copy_from_slice(tree.extra(id));
        map[id.index()] = target;
    }
    Some(out)
}

/// A region method's interval: counts, sums and distribution less `before`'s.
fn region_since(now: &RegionStats, before: Option<&RegionStats>) -> RegionStats {
    let Some(b) = before else {
        return now.clone();
    };
    let bars: HashMap<u64, u64> = b
        .distribution
        .iter()
        .map(|bar| (bar.le_ns, bar.count))
        .collect();
    let mut distribution = now.distribution.clone();
    for bar in &mut distribution {
        bar.count = bar
            .count
            .saturating_sub(bars.get(&bar.le_ns).copied().unwrap_or(0));
    }
    // From the first non-empty bar to the last, as the agent writes them.
    while distribution.first().is_some_and(|bar| bar.count == 0) {
        distribution.remove(0);
    }
    while distribution.last().is_some_and(|bar| bar.count == 0) {
        distribution.pop();
    }
    let mut uncompensated = now.uncompensated.clone();
    uncompensated.total_ns = uncompensated
        .total_ns
        .saturating_sub(b.uncompensated.total_ns);
    uncompensated.min_ns = 0;
    uncompensated.max_ns = 0;
    uncompensated.percentiles = Default::default();
    uncompensated.last_ns.clear();
    RegionStats {
        count: now.count.saturating_sub(b.count),
        total_ns: now.total_ns.saturating_sub(b.total_ns),
        nested_ns: now.nested_ns.saturating_sub(b.nested_ns),
        min_ns: 0,
        max_ns: 0,
        percentiles: Default::default(),
        distribution,
        last_ns: Vec::new(),
        uncompensated,
        ..now.clone()
    }
}
