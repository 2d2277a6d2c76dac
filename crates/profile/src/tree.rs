//! The calling context tree (CCT) of one thread, stored as an arena.
//!
//! Invariant: a child is always stored after its parent, so a reverse walk over the
//! arena visits children before parents (used for bottom-up sums).
//!
//! A [`Node`] holds the fields of the CPU mode (calls, times, probe bookkeeping). The
//! metrics of other modes (`bytecodes`, `objects`, `bytes`, `samples`...) live in a side
//! table of the tree, `width` values per node, so that a CPU tree pays nothing for them
//! (docs/decisions/0024-metrics-model.md).

use crate::method::MethodId;

/// What a node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeKind {
    /// Synthetic root of a thread's tree; its children are the root-method invocations.
    Thread,
    /// An instrumented method in one calling context.
    Method(MethodId),
    /// Synthetic node that absorbs invocations once the node budget is spent.
    Overflow,
}

impl NodeKind {
    /// How hot spots that tie on their values are ordered: methods by id, then the overflow
    /// bucket.
    pub(crate) fn tie_order(self) -> (u8, MethodId) {
        match self {
            NodeKind::Method(m) => (0, m),
            NodeKind::Overflow => (1, MethodId(0)),
            NodeKind::Thread => (2, MethodId(0)),
        }
    }
}

/// Index of a node in its [`CallTree`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(u32);

impl NodeId {
    /// The root (thread) node of every tree.
    pub const ROOT: NodeId = NodeId(0);

    /// Position in the arena.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Measured (uncompensated) data of one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// What the node stands for.
    pub kind: NodeKind,
    /// Invocations, i.e. entry/exit probe pairs whose inner cost lies inside `total_ns`.
    pub calls: u64,
    /// Measured wall time from entry probe to exit probe, summed over invocations, ns.
    pub total_ns: u64,
    /// Probe pairs of direct callees that ran inside this node's measured intervals; each
    /// adds one outer probe cost to this node's self time. Zero for the thread node,
    /// whose root-method probes run outside any measured interval.
    pub outer_calls: u64,
    /// Measured thread CPU time, when the probes sampled it.
    pub cpu_ns: Option<u64>,
    /// Time the probes measured themselves running inside this node's self time, ns: its own
    /// entry probes and its direct callees' exit probes.
    pub probe_ns: u64,
    parent: Option<NodeId>,
    children: Vec<NodeId>,
}

impl Node {
    fn new(kind: NodeKind, parent: Option<NodeId>) -> Self {
        Self {
            kind,
            calls: 0,
            total_ns: 0,
            outer_calls: 0,
            cpu_ns: None,
            probe_ns: 0,
            parent,
            children: Vec::new(),
        }
    }

    /// Parent node; `None` for the root.
    pub fn parent(&self) -> Option<NodeId> {
        self.parent
    }

    /// Children in order of first invocation.
    pub fn children(&self) -> &[NodeId] {
        &self.children
    }

    /// The method, for method nodes.
    pub fn method(&self) -> Option<MethodId> {
        match self.kind {
            NodeKind::Method(m) => Some(m),
            _ => None,
        }
    }

    /// Adds the measured data of `other` (same context) to this node.
    fn add(&mut self, other: &Node) {
        self.calls += other.calls;
        self.total_ns += other.total_ns;
        self.outer_calls += other.outer_calls;
        self.cpu_ns = add_cpu(self.cpu_ns, other.cpu_ns);
        self.probe_ns += other.probe_ns;
    }
}

/// Sums optional CPU times; absent on one side means "not sampled there".
pub(crate) fn add_cpu(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x + y),
        (x, None) => x,
        (None, y) => y,
    }
}

/// A calling context tree rooted at a [`NodeKind::Thread`] node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallTree {
    nodes: Vec<Node>,
    /// Side-table values per node ([`CallTree::extra`]).
    width: usize,
    /// `width` values per node, in node order: the node's own (self) value of each of its
    /// profile's extra metrics.
    extra: Vec<u64>,
}

impl Default for CallTree {
    fn default() -> Self {
        Self::new()
    }
}

impl CallTree {
    /// A tree holding only the thread root.
    pub fn new() -> Self {
        Self::with_width(0)
    }

    /// A tree holding only the thread root, whose nodes carry `width` side-table values
    /// (one per extra metric of its profile, [`crate::Profile::extra_metrics`]).
    pub fn with_width(width: usize) -> Self {
        Self {
            nodes: vec![Node::new(NodeKind::Thread, None)],
            width,
            extra: vec![0; width],
        }
    }

    /// Side-table values per node.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Node `id`'s own values of the extra metrics (empty for a tree of width 0).
    pub fn extra(&self, id: NodeId) -> &[u64] {
        &self.extra[id.index() * self.width..(id.index() + 1) * self.width]
    }

    /// Mutable access to [`CallTree::extra`].
    pub fn extra_mut(&mut self, id: NodeId) -> &mut [u64] {
        &mut self.extra[id.index() * self.width..(id.index() + 1) * self.width]
    }

    /// Widens the side table to `width` values per node (new values 0); never narrows.
    pub fn widen(&mut self, width: usize) {
        if width <= self.width {
            return;
        }
        let mut extra = vec![0; self.nodes.len() * width];
        for i in 0..self.nodes.len() {
            extra[i * width..i * width + self.width]
                .copy_from_slice(&self.extra[i * self.width..(i + 1) * self.width]);
        }
        self.width = width;
        self.extra = extra;
    }

    /// The root node id.
    pub fn root(&self) -> NodeId {
        NodeId::ROOT
    }

    /// Number of nodes, root included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Never true: a tree always has its root. Present for API symmetry.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node `id`. Panics if `id` belongs to another tree and is out of range.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// Mutable access to node `id`.
    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[id.index()]
    }

    /// All node ids in arena order (parents before children).
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = NodeId> + ExactSizeIterator {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// The child of `parent` with `kind`, if any.
    pub fn child(&self, parent: NodeId, kind: NodeKind) -> Option<NodeId> {
        self.node(parent)
            .children
            .iter()
            .copied()
            .find(|&c| self.node(c).kind == kind)
    }

    /// Appends a new, empty child of `parent`. Does not check for an existing one.
    pub fn add_child(&mut self, parent: NodeId, kind: NodeKind) -> NodeId {
        let id = NodeId(u32::try_from(self.nodes.len()).expect("more than 2^32 nodes"));
        self.nodes.push(Node::new(kind, Some(parent)));
        self.extra.resize(self.extra.len() + self.width, 0);
        self.nodes[parent.index()].children.push(id);
        id
    }

    /// The child of `parent` with `kind`, created if missing.
    pub fn child_or_insert(&mut self, parent: NodeId, kind: NodeKind) -> NodeId {
        match self.child(parent, kind) {
            Some(c) => c,
            None => self.add_child(parent, kind),
        }
    }

    /// Measured self time: total minus the children's totals (never negative).
    pub fn self_ns(&self, id: NodeId) -> u64 {
        let node = self.node(id);
        let children: u64 = node.children.iter().map(|&c| self.node(c).total_ns).sum();
        node.total_ns.saturating_sub(children)
    }

    /// Number of method nodes (neither thread nor overflow).
    pub fn method_nodes(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Method(_)))
            .count()
    }

    /// Depth-first pre-order walk from the root, children in stored order: (node, depth).
    pub fn walk(&self) -> Vec<(NodeId, usize)> {
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut stack = vec![(NodeId::ROOT, 0usize)];
        while let Some((id, depth)) = stack.pop() {
            out.push((id, depth));
            for &c in self.node(id).children.iter().rev() {
                stack.push((c, depth + 1));
            }
        }
        out
    }

    /// The path of kinds from the root's child down to `id` (empty for the root).
    pub fn path(&self, id: NodeId) -> Vec<NodeKind> {
        let mut path = Vec::new();
        let mut cur = Some(id);
        while let Some(c) = cur {
            if c == NodeId::ROOT {
                break;
            }
            path.push(self.node(c).kind);
            cur = self.node(c).parent;
        }
        path.reverse();
        path
    }

    /// Finds the node reached by following `path` of kinds from the root.
    pub fn find(&self, path: &[NodeKind]) -> Option<NodeId> {
        path.iter()
            .try_fold(NodeId::ROOT, |at, &kind| self.child(at, kind))
    }

    /// Adds `other` (a tree over the same method table) into this one: nodes in the same
    /// context are summed, new contexts are appended. The roots are summed too.
    pub fn merge(&mut self, other: &CallTree) {
        self.widen(other.width);
        let mut map = vec![NodeId::ROOT; other.nodes.len()];
        // Arena order visits parents before children, so `map[parent]` is ready.
        for id in other.ids() {
            let node = other.node(id);
            let target = match node.parent {
                None => NodeId::ROOT,
                Some(p) => self.child_or_insert(map[p.index()], node.kind),
            };
            self.node_mut(target).add(node);
            for (sum, v) in self.extra_mut(target).iter_mut().zip(other.extra(id)) {
                *sum += v;
            }
            map[id.index()] = target;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(i: u32) -> NodeKind {
        NodeKind::Method(MethodId(i))
    }

    #[test]
    fn self_time_and_paths() {
        let mut t = CallTree::new();
        let f = t.add_child(t.root(), m(0));
        let g = t.add_child(f, m(1));
        t.node_mut(f).total_ns = 100;
        t.node_mut(g).total_ns = 30;
        assert_eq!(t.self_ns(f), 70);
        assert_eq!(t.self_ns(g), 30);
        assert_eq!(t.path(g), vec![m(0), m(1)]);
        assert_eq!(t.find(&[m(0), m(1)]), Some(g));
        assert_eq!(t.find(&[m(1)]), None);
        assert_eq!(t.walk(), vec![(NodeId::ROOT, 0), (f, 1), (g, 2)]);
    }

    #[test]
    fn merge_sums_same_contexts_and_appends_new_ones() {
        let mut a = CallTree::new();
        let f = a.add_child(NodeId::ROOT, m(0));
        a.node_mut(f).calls = 1;
        a.node_mut(f).total_ns = 10;
        a.node_mut(NodeId::ROOT).total_ns = 10;

        let mut b = CallTree::new();
        let f2 = b.add_child(NodeId::ROOT, m(0));
        let h = b.add_child(f2, m(2));
        b.node_mut(f2).calls = 2;
        b.node_mut(f2).total_ns = 50;
        b.node_mut(f2).outer_calls = 3;
        b.node_mut(f2).cpu_ns = Some(7);
        b.node_mut(h).calls = 3;
        b.node_mut(h).total_ns = 20;
        b.node_mut(NodeId::ROOT).total_ns = 50;

        a.merge(&b);
        assert_eq!(a.len(), 3);
        let fa = a.node(f);
        assert_eq!(
            (fa.calls, fa.total_ns, fa.outer_calls, fa.cpu_ns),
            (3, 60, 3, Some(7))
        );
        let ha = a.find(&[m(0), m(2)]).unwrap();
        assert_eq!((a.node(ha).calls, a.node(ha).total_ns), (3, 20));
        assert_eq!(a.node(NodeId::ROOT).total_ns, 60);
        assert_eq!(a.self_ns(f), 40);
    }

    /// The CPU node layout is what a million-node tree pays per node; other modes' metrics
    /// are in the side table (docs/decisions/0024-metrics-model.md).
    #[test]
    fn a_node_stays_88_bytes() {
        assert_eq!(std::mem::size_of::<Node>(), 88);
        assert_eq!(std::mem::size_of::<NodeKind>(), 8);
    }

    #[test]
    fn side_table_values_follow_their_nodes_and_merge() {
        let mut a = CallTree::new();
        let f = a.add_child(NodeId::ROOT, m(0));
        a.node_mut(f).calls = 1;
        let mut b = CallTree::with_width(2);
        let f2 = b.add_child(NodeId::ROOT, m(0));
        let g = b.add_child(f2, m(1));
        b.extra_mut(f2).copy_from_slice(&[3, 30]);
        b.extra_mut(g).copy_from_slice(&[4, 40]);
        assert_eq!(b.extra(NodeId::ROOT), [0, 0]);
        a.merge(&b);
        assert_eq!(a.width(), 2);
        assert_eq!(a.extra(f), [3, 30]);
        assert_eq!(a.extra(a.find(&[m(0), m(1)]).unwrap()), [4, 40]);
        a.merge(&b);
        assert_eq!(a.extra(f), [6, 60]);
        let mut c = CallTree::with_width(1);
        let h = c.add_child(NodeId::ROOT, m(2));
        c.extra_mut(h)[0] = 5;
        c.widen(3);
        assert_eq!(
            (c.extra(NodeId::ROOT), c.extra(h)),
            (&[0, 0, 0][..], &[5, 0, 0][..])
        );
    }
}
