//! The Java contexts read at a snapshot as profile trees: one per thread that entered a
//! context, in the order threads first counted; method ids given in name order and children in
//! name order, so that two runs that counted the same give the same document (thread ids aside).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use ferrofluid_profile::{
    CallTree, MethodId, MethodInfo, MethodTable, NodeId, NodeKind, ThreadProfile,
};

use super::ffi::JavaContext;

/// The method of a tree's overflow node (no method has this id; the root's is `u32::MAX`).
pub const OVERFLOW: u32 = u32::MAX - 1;
/// The root's index in a thread's node arena.
pub const ROOT_NODE: u32 = 0;

/// One calling context of one thread, as Java keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// Global method id (`u32::MAX` for the root, [`OVERFLOW`]).
    pub method: u32,
    pub parent: u32,
    pub calls: u64,
    pub bytecodes: u64,
}

/// A context's nodes as the agent keeps them (a node whose parent is not before it, read
/// while its thread counted, is dropped with its subtree).
pub fn nodes_of(c: &JavaContext) -> Vec<Node> {
    let n = c
        .method
        .len()
        .min(c.parent.len())
        .min(c.calls.len())
        .min(c.bytecodes.len());
    let mut nodes = Vec::with_capacity(n);
    for i in 0..n {
        let parent = c.parent[i] as u32;
        if i > 0 && parent as usize >= i {
            break;
        }
        nodes.push(Node {
            method: c.method[i] as u32,
            parent,
            calls: c.calls[i] as u64,
            bytecodes: c.bytecodes[i] as u64,
        });
    }
    nodes
}

/// One thread's tree and, per Java node, its node in the tree (`None`: dropped as torn).
pub struct Built {
    pub context: JavaContext,
    pub thread: ThreadProfile,
    pub node_of: Vec<Option<NodeId>>,
}

/// The trees of `contexts` (those with a node besides the root), each `width` side-table
/// columns wide, calls filled; `name_of` names a global method id.
pub fn build(
    mut contexts: Vec<JavaContext>,
    width: usize,
    name_of: impl Fn(u32) -> Option<(String, String, String)>,
) -> (MethodTable, Vec<(Built, Vec<Node>)>) {
    contexts.sort_by_key(|c| c.order);
    let copies: Vec<(JavaContext, Vec<Node>)> = contexts
        .into_iter()
        .map(|c| {
            let nodes = nodes_of(&c);
            (c, nodes)
        })
        .filter(|(_, nodes)| nodes.len() > 1)
        .collect();
    let mut names: BTreeMap<u32, MethodInfo> = BTreeMap::new();
    for (_, nodes) in &copies {
        for n in nodes.iter().filter(|n| n.method < OVERFLOW) {
            names
                .entry(n.method)
                .or_insert_with(|| match name_of(n.method) {
                    Some((class, name, descriptor)) => {
                        MethodInfo::from_internal(&class, &name, &descriptor)
                    }
                    None => MethodInfo::new("?", format!("method#{}", n.method), "()V"),
                });
        }
    }
    let mut by_name: Vec<(&MethodInfo, u32)> = names.iter().map(|(id, m)| (m, *id)).collect();
    by_name.sort();
    let mut methods = MethodTable::default();
    let ids: FxHashMap<u32, MethodId> = by_name
        .into_iter()
        .map(|(m, id)| (id, methods.intern(m.clone())))
        .collect();
    let mut out = Vec::with_capacity(copies.len());
    for (c, nodes) in copies {
        // Virtual threads mostly have no name: `virtual#ID`, as in the other modes.
        let name = match &c.name {
            n if !n.is_empty() => n.clone(),
            _ if c.is_virtual => format!("virtual#{}", c.java_id),
            _ => "?".to_owned(),
        };
        let (tree, node_of) = to_tree(&nodes, &ids, width);
        let mut thread = ThreadProfile::new(name, c.java_id, tree);
        thread.overflow_calls = c.overflow_calls;
        thread.unmatched_exits = c.unmatched_exits;
        thread.virtual_thread = c.is_virtual;
        out.push((
            Built {
                context: c,
                thread,
                node_of,
            },
            nodes,
        ));
    }
    (methods, out)
}

/// A thread's nodes as a profile tree with calls, children in method-id order.
fn to_tree(
    nodes: &[Node],
    ids: &FxHashMap<u32, MethodId>,
    width: usize,
) -> (CallTree, Vec<Option<NodeId>>) {
    let kind = |n: &Node| match ids.get(&n.method) {
        Some(&m) => NodeKind::Method(m),
        None => NodeKind::Overflow,
    };
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); nodes.len()];
    for (i, n) in nodes.iter().enumerate().skip(1) {
        children[n.parent as usize].push(i as u32);
    }
    let mut tree = CallTree::with_width(width);
    let mut node_of = vec![None; nodes.len()];
    node_of[ROOT_NODE as usize] = Some(NodeId::ROOT);
    // (our node, its node in `tree`), depth first; children sorted by kind.
    let mut stack = vec![(ROOT_NODE, NodeId::ROOT)];
    while let Some((ours, theirs)) = stack.pop() {
        let mut kids = std::mem::take(&mut children[ours as usize]);
        kids.sort_by_key(|&c| kind(&nodes[c as usize]));
        let added: Vec<(u32, NodeId)> = kids
            .into_iter()
            .map(|c| {
                let n = &nodes[c as usize];
                let id = tree.add_child(theirs, kind(n));
                tree.node_mut(id).calls = n.calls;
                node_of[c as usize] = Some(id);
                (c, id)
            })
            .collect();
        stack.extend(added.into_iter().rev());
    }
    (tree, node_of)
}
