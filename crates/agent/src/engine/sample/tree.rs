//! The samples' calling-context trees, as the drain builds them: one per group (every thread
//! merged, or one per thread, virtual threads together), nodes keyed by the session's own method
//! indices, each counting its own samples, their time, their innermost frame's type and (wall
//! clock) whether the thread ran or waited. Bounded:
//! past [`MAX_NODES`] nodes a group's new contexts go to an overflow node under its thread.

use ferrofluid_profile::sampling::{FRAME_TYPES, SIDE_COLUMNS};
use ferrofluid_profile::{CallTree, MethodId, MethodInfo, MethodTable, NodeId, NodeKind};
use rustc_hash::{FxHashMap, FxHashSet};

/// Nodes a group's tree may have.
pub const MAX_NODES: usize = 1 << 20;

/// A method index standing for the overflow node.
pub const OVERFLOW: u32 = u32::MAX;

/// Where a sample goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    /// Every thread merged.
    All,
    /// One thread, by its registry key (tid, generation).
    Thread(u32, u32),
    /// Every virtual thread merged.
    Virtual,
}

/// Per node: own samples, their time, then own samples by frame type and by thread state.
const WIDTH: usize = 2 + SIDE_COLUMNS;

#[derive(Default)]
struct Node {
    parent: u32,
    method: u32,
    values: [u64; WIDTH],
}

/// One group's tree: node 0 is the thread.
pub struct Tree {
    nodes: Vec<Node>,
    children: FxHashMap<(u32, u32), u32>,
    /// Samples that went to the overflow node.
    pub overflowed: u64,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: vec![Node::default()],
            children: FxHashMap::default(),
            overflowed: 0,
        }
    }
}

impl Tree {
    fn child(&mut self, parent: u32, method: u32) -> u32 {
        if let Some(&c) = self.children.get(&(parent, method)) {
            return c;
        }
        if self.nodes.len() >= MAX_NODES && method != OVERFLOW {
            return self.child(0, OVERFLOW);
        }
        let id = self.nodes.len() as u32;
        self.nodes.push(Node {
            parent,
            method,
            ..Node::default()
        });
        self.children.insert((parent, method), id);
        id
    }

    /// Adds one sample: its path from the outermost frame, its time, its innermost frame's type
    /// (an index of [`FRAME_TYPES`], if one applies) and its thread's state (an index of
    /// [`THREAD_STATES`](ferrofluid_profile::sampling::THREAD_STATES), on the wall clock).
    pub fn add(
        &mut self,
        path: impl Iterator<Item = u32>,
        weight_ns: u64,
        kind: Option<usize>,
        state: Option<usize>,
    ) {
        let mut at = 0;
        for m in path {
            at = self.child(at, m);
            if self.nodes[at as usize].method == OVERFLOW {
                self.overflowed += 1;
                break;
            }
        }
        let values = &mut self.nodes[at as usize].values;
        values[0] += 1;
        values[1] += weight_ns;
        if let Some(k) = kind {
            values[2 + k] += 1;
        }
        if let Some(s) = state {
            values[2 + FRAME_TYPES.len() + s] += 1;
        }
    }

    /// Samples in the tree.
    pub fn samples(&self) -> u64 {
        self.nodes.iter().map(|n| n.values[0]).sum()
    }

    /// The profile's tree, children in method-name order; `ids` maps method indices to the
    /// profile's method ids.
    pub fn to_profile(&self, ids: &[MethodId]) -> CallTree {
        let mut kids: Vec<Vec<u32>> = vec![Vec::new(); self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            kids[n.parent as usize].push(i as u32);
        }
        let kind = |m: u32| match ids.get(m as usize) {
            Some(&id) => NodeKind::Method(id),
            None => NodeKind::Overflow,
        };
        let mut tree = CallTree::with_width(WIDTH);
        tree.extra_mut(NodeId::ROOT)
            .copy_from_slice(&self.nodes[0].values);
        let mut stack = vec![(0u32, NodeId::ROOT)];
        while let Some((ours, theirs)) = stack.pop() {
            let mut children = std::mem::take(&mut kids[ours as usize]);
            children.sort_by_key(|&c| kind(self.nodes[c as usize].method));
            for &c in children.iter().rev() {
                let n = &self.nodes[c as usize];
                let id = tree.add_child(theirs, kind(n.method));
                tree.extra_mut(id).copy_from_slice(&n.values);
                stack.push((c, id));
            }
        }
        tree
    }
}

/// The session's methods: resolved frames, `[reason]` frames of samples without a stack.
#[derive(Default)]
pub struct Methods {
    infos: Vec<MethodInfo>,
    by_info: FxHashMap<MethodInfo, u32>,
}

impl Methods {
    /// The index of `info`, interned.
    pub fn intern(&mut self, info: MethodInfo) -> u32 {
        if let Some(&i) = self.by_info.get(&info) {
            return i;
        }
        let i = self.infos.len() as u32;
        self.infos.push(info.clone());
        self.by_info.insert(info, i);
        i
    }

    /// The indices of the methods `select` chooses.
    pub fn indices_of(&self, select: impl Fn(&MethodInfo) -> bool) -> FxHashSet<u32> {
        (0..self.infos.len() as u32)
            .filter(|&i| select(&self.infos[i as usize]))
            .collect()
    }

    /// The profile's method table, names sorted, and each index's id in it.
    pub fn to_profile(&self) -> (MethodTable, Vec<MethodId>) {
        let mut order: Vec<u32> = (0..self.infos.len() as u32).collect();
        order.sort_by(|&a, &b| self.infos[a as usize].cmp(&self.infos[b as usize]));
        let mut table = MethodTable::default();
        let mut ids = vec![MethodId(0); self.infos.len()];
        for i in order {
            ids[i as usize] = table.intern(self.infos[i as usize].clone());
        }
        (table, ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_build_a_tree_with_own_counts_and_frame_types() {
        let mut methods = Methods::default();
        let a = methods.intern(MethodInfo::new("demo.A", "a", "()V"));
        let b = methods.intern(MethodInfo::new("demo.A", "b", "()V"));
        assert_eq!(methods.intern(MethodInfo::new("demo.A", "a", "()V")), a);
        let mut tree = Tree::default();
        tree.add([a, b].into_iter(), 10, Some(1), None);
        tree.add([a, b].into_iter(), 10, Some(2), Some(1));
        tree.add([a].into_iter(), 20, Some(0), Some(0));
        assert_eq!(tree.samples(), 3);
        let (table, ids) = methods.to_profile();
        assert_eq!(table.len(), 2);
        let t = tree.to_profile(&ids);
        let an = t.node(NodeId::ROOT).children()[0];
        let bn = t.node(an).children()[0];
        assert_eq!(t.extra(an), [1, 20, 1, 0, 0, 0, 1, 0]);
        assert_eq!(t.extra(bn), [2, 20, 0, 1, 1, 0, 0, 1]);
    }
}
