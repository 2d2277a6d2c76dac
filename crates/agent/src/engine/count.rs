//! The `count` engine: exact bytecode-count calling-context profiles (JP, Binder and Hulaas).
//! The `blocks` (or `blocks-precise`) probes keep a counter per invocation in a local of the
//! method: one `iinc` per basic block, in Java, no call. The method's exit and unwind probes hand
//! the counter to the agent with the method id (`Hooks.exitBlocks`/`unwindBlocks`), its entry
//! probe the id alone. Like `Hooks.enter`/`exit`, the block exits return in Java while no thread
//! is inside a root (`Hooks.active` 0) unless the id is a root's `~id`; with no root `active`
//! stays 1, so every probe reaches the agent. No clock is read: a profile is the same on any machine and under any load.
//!
//! Per thread the agent keeps a calling context tree (JP's method call tree) whose nodes carry
//! `calls` and `bytecodes` (that method's own bytecodes in that context, callees excluded),
//! updated in place by the thread's probes: an entry moves the thread's current node to the
//! child for the method (created at the first call), an exit adds the count and moves back to
//! the parent. Nothing goes through the event rings or the collector. Each thread's tree sits
//! behind a mutex that only that thread and snapshots take (uncontended); its current node is
//! also an atomic, readable from any thread ([`current_node`]). Memory is bounded: at
//! [`MAX_NODES`] nodes per thread, new contexts count into one overflow node, and the profile
//! says how many calls went there. A virtual thread counts into a tree of its own, which moves
//! with it from carrier to carrier in the hooks' carried state ([`swap_carried`]).
//!
//! Extents, roots, lazy revelation and the ignoring of the agent's own work are those of the
//! `cpu` engine (`hooks::enter_gated`/`exit_gated`): a count profile covers the same calls.
//! Decision and measurements: docs/decisions/0030-count-engine.md.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rustc_hash::FxHashMap;

use ferrofluid_classfile::ProbeKind;
use ferrofluid_jvmti::{sys, JniEnv};
use ferrofluid_profile::{
    CallTree, MethodId, MethodInfo, MethodTable, Mode, NodeId, NodeKind, Profile, ThreadProfile,
};
use ferrofluid_protocol::{AgentOptions, Blocks};
use ferrofluid_subgraph::PlanConfig;

use super::{Capability, Engine, Instrumentation, JvmEvent, Needs, Selection, Units};
use crate::{collector, hooks};

/// Nodes one thread's tree may have; past it new contexts count into the overflow node.
pub const MAX_NODES: usize = ferrofluid_profile::DEFAULT_MAX_NODES;

/// The method of a tree's root and of its overflow node (no method has these ids).
const ROOT: u32 = u32::MAX;
const OVERFLOW: u32 = u32::MAX - 1;
/// The root's index in a thread's node arena.
const ROOT_NODE: u32 = 0;

/// The block counters of the session (`blocks=`): 0 default, 1 precise.
static PRECISE: AtomicU32 = AtomicU32::new(0);
/// Bumped when a recording starts afresh: threads then count into new trees.
static EPOCH: AtomicU32 = AtomicU32::new(1);
/// Numbers threads in the order they first counted (the report's thread order).
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

/// The bytecode-count engine.
pub struct Count;

impl Engine for Count {
    fn mode(&self) -> Mode {
        Mode::Count
    }

    fn units(&self) -> Units {
        Units::Counts
    }

    fn needs(&self) -> Needs {
        Needs {
            capabilities: &[Capability::RetransformClasses],
            optional: &[Capability::TagObjects],
            events: &[
                JvmEvent::ClassFileLoadHook,
                JvmEvent::ClassPrepare,
                JvmEvent::ThreadStart,
                JvmEvent::ThreadEnd,
            ],
        }
    }

    fn instruments(&self) -> Option<Instrumentation> {
        let probes = if PRECISE.load(Ordering::Relaxed) != 0 {
            ProbeKind::BlocksPrecise
        } else {
            ProbeKind::Blocks
        };
        Some(Instrumentation {
            probes,
            selection: Selection::CallSubgraph,
        })
    }

    /// The call subgraph of the roots as in `cpu` mode; never `skip-trivial` or `adaptive`: a
    /// method without probes would lose its bytecodes.
    fn plan(&self, options: &AgentOptions) -> PlanConfig {
        PlanConfig {
            roots: options.roots.clone(),
            scheme: options.scheme,
            filter: options.filter.clone(),
            skip_trivial: false,
            adaptive: false,
        }
    }

    fn configure(&self, options: &AgentOptions) {
        hooks::CPU.store(false, Ordering::SeqCst);
        let precise = u32::from(options.blocks == Blocks::Precise);
        PRECISE.store(precise, Ordering::SeqCst);
    }

    /// Nothing to calibrate: counts are exact. Fresh trees from now on.
    fn start(&self, _env: &JniEnv<'_>) {
        restart();
        collector::start(None, None, None);
    }

    fn reset(&self) {
        restart();
    }

    fn snapshot(&self, profile: &mut Profile) {
        snapshot_into(profile, crate::session::method_name);
    }

    fn thread_end(&self) {
        let _ = LOCAL.try_with(|l| {
            if let Some(t) = l.thread.borrow_mut().take() {
                lock(&t.tree).ended = true;
            }
        });
    }

    #[inline(always)]
    fn enter(env: *mut sys::JNIEnv, id: i32, start: u64) {
        hooks::enter_gated(env, id, start, |id| enter(env, id));
    }

    /// The exit of a method without block counters (a native method's wrapper): its calls count,
    /// with no bytecodes of its own.
    #[inline(always)]
    fn exit(env: *mut sys::JNIEnv, id: i32, start: u64) {
        hooks::exit_gated(env, id, start, |id| exit(env, id, 0));
    }
}

/// The exit or unwind of method `id` (or `!id`) whose block counters summed `bytecodes`.
#[inline(always)]
pub fn exit_blocks(env: *mut sys::JNIEnv, id: i32, bytecodes: i32) {
    // The counter is an `int` local: a method running over 2^31 bytecodes in one invocation
    // wraps it, which an unsigned reading postpones to 2^32.
    hooks::exit_gated(env, id, 0, |id| exit(env, id, u64::from(bytecodes as u32)));
}

/// One calling context of one thread.
#[derive(Clone, Copy)]
struct Node {
    /// Global method id ([`ROOT`], [`OVERFLOW`]).
    method: u32,
    parent: u32,
    calls: u64,
    bytecodes: u64,
}

impl Node {
    fn new(method: u32, parent: u32) -> Node {
        Node {
            method,
            parent,
            calls: 0,
            bytecodes: 0,
        }
    }
}

/// One thread's tree.
struct Tree {
    nodes: Vec<Node>,
    /// (parent, method) -> child.
    children: FxHashMap<(u32, u32), u32>,
    /// The innermost open context.
    current: u32,
    /// Calls open inside the overflow node (which keeps no structure).
    overflow_depth: u32,
    /// The context the outermost overflowing call was made from.
    overflow_return: u32,
    overflow_calls: u64,
    /// Exits that matched no open context (entered before the recording started).
    unmatched_exits: u64,
    /// The thread ended.
    ended: bool,
}

impl Tree {
    fn new() -> Tree {
        Tree {
            nodes: vec![Node::new(ROOT, ROOT_NODE)],
            children: FxHashMap::default(),
            current: ROOT_NODE,
            overflow_depth: 0,
            overflow_return: ROOT_NODE,
            overflow_calls: 0,
            unmatched_exits: 0,
            ended: false,
        }
    }

    /// A fresh tree holding the open contexts of `self` (root first), with no counts: the
    /// calls in flight when a recording restarts go on in their contexts.
    fn restarted(&self) -> Tree {
        let mut path = Vec::new();
        // Overflowing calls in flight are forgotten: their exits will be unmatched.
        let mut n = if self.overflow_depth > 0 {
            self.overflow_return
        } else {
            self.current
        };
        while n != ROOT_NODE {
            path.push(self.nodes[n as usize].method);
            n = self.nodes[n as usize].parent;
        }
        let mut fresh = Tree::new();
        for method in path.into_iter().rev() {
            fresh.current = fresh.child(fresh.current, method);
        }
        fresh
    }

    /// The child of `parent` for `method`, created if needed (the overflow node past the budget).
    #[inline]
    fn child(&mut self, parent: u32, method: u32) -> u32 {
        if let Some(&c) = self.children.get(&(parent, method)) {
            return c;
        }
        self.new_child(parent, method)
    }

    #[cold]
    fn new_child(&mut self, parent: u32, method: u32) -> u32 {
        let (parent, method) = if self.nodes.len() >= MAX_NODES {
            (ROOT_NODE, OVERFLOW)
        } else {
            (parent, method)
        };
        if let Some(&c) = self.children.get(&(parent, method)) {
            return c;
        }
        let index = self.nodes.len() as u32;
        self.nodes.push(Node::new(method, parent));
        self.children.insert((parent, method), index);
        index
    }

    #[inline]
    fn enter(&mut self, method: u32) {
        if self.overflow_depth > 0 {
            self.overflow_depth += 1;
            self.overflow_calls += 1;
            let o = self.current as usize;
            self.nodes[o].calls += 1;
            return;
        }
        let c = self.child(self.current, method);
        self.nodes[c as usize].calls += 1;
        if self.nodes[c as usize].method == OVERFLOW {
            self.overflow_depth = 1;
            self.overflow_calls += 1;
            // The contexts open below the budget stay where they were: the overflow node is
            // the current one until its calls return.
            self.overflow_return = self.current;
        }
        self.current = c;
    }

    #[inline]
    fn exit(&mut self, method: u32, bytecodes: u64) {
        if self.overflow_depth > 0 {
            let o = self.current as usize;
            self.nodes[o].bytecodes += bytecodes;
            self.overflow_depth -= 1;
            if self.overflow_depth == 0 {
                self.current = self.overflow_return;
            }
            return;
        }
        let mut n = self.current;
        // The innermost open context of `method`: the current one unless frames were left
        // without their exit (a session change), which are closed with it.
        while n != ROOT_NODE && self.nodes[n as usize].method != method {
            n = self.nodes[n as usize].parent;
        }
        if n == ROOT_NODE {
            self.unmatched_exits += 1;
            return;
        }
        self.nodes[n as usize].bytecodes += bytecodes;
        self.current = self.nodes[n as usize].parent;
    }
}

/// A thread's tree and its current node as others see it.
struct ThreadCounts {
    /// Numbered in the order threads first counted.
    order: u64,
    name: String,
    java_id: u64,
    tree: Mutex<Tree>,
    /// [`Tree::current`], published after each probe (relaxed) for readers outside the thread.
    current: AtomicU32,
    /// A virtual thread (its tree follows it from carrier to carrier).
    is_virtual: bool,
}

/// A virtual thread's tree while it is not mounted (`hooks::Carried`).
pub(crate) struct Carried {
    thread: Arc<ThreadCounts>,
    epoch: u32,
}

/// Puts `incoming` (a virtual thread's tree, or the carrier's own) in this OS thread's place and
/// returns what was there: the probes of a virtual thread count into its own tree whatever
/// carrier runs it. `None` in: the thread makes its tree at its next probe.
pub(crate) fn swap_carried(incoming: Option<Carried>) -> Option<Carried> {
    LOCAL
        .try_with(|l| {
            let out = l.thread.borrow_mut().take().map(|thread| Carried {
                thread,
                epoch: l.epoch.get(),
            });
            match incoming {
                Some(c) => {
                    *l.thread.borrow_mut() = Some(c.thread);
                    l.epoch.set(c.epoch);
                }
                None => l.epoch.set(0),
            }
            out
        })
        .ok()
        .flatten()
}

/// Every thread's counts of the current recording.
static THREADS: Mutex<Vec<Arc<ThreadCounts>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Local {
    /// This thread's counts and the epoch they belong to.
    thread: RefCell<Option<Arc<ThreadCounts>>>,
    epoch: Cell<u32>,
    /// The agent is naming this thread (JNI calls that run Java code): probes are ignored.
    naming: Cell<bool>,
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            thread: RefCell::new(None),
            epoch: Cell::new(0),
            naming: Cell::new(false),
        }
    };
}

/// Runs `f` on this thread's tree, made at its first probe (or after a restart).
#[inline(always)]
fn with_tree(env: *mut sys::JNIEnv, f: impl FnOnce(&mut Tree)) {
    let _ = LOCAL.try_with(|l| {
        if l.naming.get() {
            return;
        }
        let epoch = EPOCH.load(Ordering::Acquire);
        if l.epoch.get() != epoch {
            renew(l, env, epoch);
        }
        if let Some(t) = l.thread.borrow().as_ref() {
            let mut tree = lock(&t.tree);
            f(&mut tree);
            t.current.store(tree.current, Ordering::Relaxed);
        }
    });
}

/// The thread counts into a fresh tree of recording `epoch`, its open contexts carried over.
#[cold]
fn renew(l: &Local, env: *mut sys::JNIEnv, epoch: u32) {
    let old = l.thread.borrow_mut().take();
    let (tree, name, java_id, is_virtual) = match &old {
        Some(t) => (
            lock(&t.tree).restarted(),
            t.name.clone(),
            t.java_id,
            t.is_virtual,
        ),
        None => {
            l.naming.set(true);
            let (java_id, name) = crate::jvm::current_thread_identity(env);
            l.naming.set(false);
            let java_id = java_id.unwrap_or(0);
            let is_virtual = crate::vthread::mounted_key().is_some();
            // Virtual threads mostly have no name: `virtual#ID`, as in the other modes.
            let name = match name.filter(|n| !n.is_empty()) {
                Some(n) => n,
                None if is_virtual => format!("virtual#{java_id}"),
                None => "?".to_owned(),
            };
            (Tree::new(), name, java_id, is_virtual)
        }
    };
    let counts = Arc::new(ThreadCounts {
        order: NEXT_THREAD.fetch_add(1, Ordering::Relaxed),
        name,
        java_id,
        current: AtomicU32::new(tree.current),
        tree: Mutex::new(tree),
        is_virtual,
    });
    lock(&THREADS).push(Arc::clone(&counts));
    *l.thread.borrow_mut() = Some(counts);
    l.epoch.set(epoch);
}

#[inline(always)]
fn enter(env: *mut sys::JNIEnv, id: u32) {
    with_tree(env, |t| t.enter(id));
}

#[inline(always)]
fn exit(env: *mut sys::JNIEnv, id: u32, bytecodes: u64) {
    with_tree(env, |t| t.exit(id, bytecodes));
}

/// Forgets every tree: threads count into fresh ones from their next probe.
fn restart() {
    let mut threads = lock(&THREADS);
    EPOCH.fetch_add(1, Ordering::AcqRel);
    threads.clear();
}

/// The node thread `java_id` is counting in now, as (global method ids from the root down):
/// what a sampler attributes a sample to. `None` if that thread has no tree.
// No sampler reads it yet; the tests do.
#[cfg_attr(not(test), allow(dead_code))]
pub fn current_node(java_id: u64) -> Option<Vec<u32>> {
    let t = lock(&THREADS)
        .iter()
        .rev()
        .find(|t| t.java_id == java_id)
        .cloned()?;
    let at = t.current.load(Ordering::Relaxed);
    let tree = lock(&t.tree);
    let mut path = Vec::new();
    let mut n = at.min(tree.nodes.len() as u32 - 1);
    while n != ROOT_NODE {
        path.push(tree.nodes[n as usize].method);
        n = tree.nodes[n as usize].parent;
    }
    path.reverse();
    Some(path)
}

/// Fills `profile` with the count trees: mode `count`, metric `bytecodes`, one tree per thread
/// that counted, in the order threads first counted. Method ids are given in name order and
/// children are in name order, so that two runs that counted the same give the same document
/// (thread ids aside).
fn snapshot_into(
    profile: &mut Profile,
    name_of: impl Fn(u32) -> Option<(String, String, String)>,
) {
    let mut threads: Vec<Arc<ThreadCounts>> = lock(&THREADS).clone();
    threads.sort_by_key(|t| t.order);
    // Copies, so that no thread waits for the naming below.
    let copies: Vec<(Arc<ThreadCounts>, Vec<Node>, u64, u64)> = threads
        .into_iter()
        .map(|t| {
            let tree = lock(&t.tree);
            let copy = (tree.nodes.clone(), tree.overflow_calls, tree.unmatched_exits);
            drop(tree);
            (t, copy.0, copy.1, copy.2)
        })
        .filter(|(_, nodes, _, _)| nodes.len() > 1)
        .collect();
    let mut names: BTreeMap<u32, MethodInfo> = BTreeMap::new();
    for (_, nodes, _, _) in &copies {
        for n in nodes.iter().filter(|n| n.method < OVERFLOW) {
            names.entry(n.method).or_insert_with(|| match name_of(n.method) {
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
    for (t, nodes, overflow_calls, unmatched_exits) in copies {
        let mut thread = ThreadProfile::new(t.name.clone(), t.java_id, to_tree(&nodes, &ids));
        thread.overflow_calls = overflow_calls;
        thread.unmatched_exits = unmatched_exits;
        thread.virtual_thread = t.is_virtual;
        out.push(thread);
    }
    profile.methods = methods;
    profile.probes_dropped.clear();
    profile.mode = Mode::Count;
    profile.extra_metrics = Mode::Count.default_metrics();
    profile.calibration = None;
    profile.cpu_calibration = None;
    profile.calibration_stats = None;
    profile.threads = out;
}

/// A thread's nodes as a profile tree (width 1: `bytecodes`), children in method-id order.
fn to_tree(nodes: &[Node], ids: &FxHashMap<u32, MethodId>) -> CallTree {
    let kind = |n: &Node| match ids.get(&n.method) {
        Some(&m) => NodeKind::Method(m),
        None => NodeKind::Overflow,
    };
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); nodes.len()];
    for (i, n) in nodes.iter().enumerate().skip(1) {
        children[n.parent as usize].push(i as u32);
    }
    let mut tree = CallTree::with_width(1);
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
                tree.extra_mut(id)[0] = n.bytecodes;
                (c, id)
            })
            .collect();
        stack.extend(added.into_iter().rev());
    }
    tree
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(id: u32) -> Option<(String, String, String)> {
        // Ids in reverse name order, so that name order is visible.
        Some(("demo/A".into(), format!("m{}", 9 - id), "()V".into()))
    }

    /// f(1) calls g(2) twice, g calls h(3); an exit without its entry is counted apart; a
    /// restart keeps the open contexts with no counts.
    #[test]
    fn trees_count_calls_and_bytecodes_per_context() {
        let mut t = Tree::new();
        t.enter(1);
        for _ in 0..2 {
            t.enter(2);
            t.enter(3);
            t.exit(3, 5);
            t.exit(2, 10);
        }
        t.enter(3);
        assert_eq!(t.nodes[t.current as usize].method, 3);
        let open = t.restarted();
        t.exit(3, 5);
        t.exit(1, 7);
        t.exit(4, 1);
        assert_eq!(t.unmatched_exits, 1);
        let got: Vec<(u32, u32, u64, u64)> = t
            .nodes
            .iter()
            .map(|n| (n.method, n.parent, n.calls, n.bytecodes))
            .collect();
        assert_eq!(
            got,
            [(ROOT, 0, 0, 0), (1, 0, 1, 7), (2, 1, 2, 20), (3, 2, 2, 10), (3, 1, 1, 5)]
        );
        let path: Vec<u32> = open.nodes.iter().map(|n| n.method).collect();
        assert_eq!((path, open.nodes[2].calls), (vec![ROOT, 1, 3], 0));
        assert_eq!(open.nodes[open.current as usize].method, 3);

        let mut profile = Profile::default();
        let counts = ThreadCounts {
            order: 1,
            name: "main".into(),
            java_id: 7,
            current: AtomicU32::new(t.current),
            tree: Mutex::new(t),
            is_virtual: false,
        };
        let _lock = crate::engine::TEST_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        restart();
        lock(&THREADS).push(Arc::new(counts));
        snapshot_into(&mut profile, names);
        assert_eq!(current_node(7), Some(vec![]));
        restart();
        assert_eq!(profile.mode, Mode::Count);
        let tree = &profile.threads[0].tree;
        let frames: Vec<(String, u64, u64)> = tree
            .walk()
            .into_iter()
            .skip(1)
            .map(|(id, _)| {
                let n = tree.node(id);
                let m = profile.methods.get(n.method().unwrap()).unwrap();
                (m.method.clone(), n.calls, tree.extra(id)[0])
            })
            .collect();
        // f = m8, g = m7, h = m6: children in name order (m6 before m7 under f).
        assert_eq!(
            frames,
            [
                ("m8".into(), 1, 7),
                ("m6".into(), 1, 5),
                ("m7".into(), 2, 20),
                ("m6".into(), 2, 10),
            ]
        );
        // Method ids in name order.
        assert_eq!(profile.methods.get(MethodId(0)).unwrap().method, "m6");
    }

    /// Calls that alternate between callees, and the same callee from two contexts, each find
    /// their own node.
    #[test]
    fn contexts_find_their_children_in_any_order() {
        let mut t = Tree::new();
        t.enter(1);
        for m in [2, 3, 2, 2, 3, 1] {
            t.enter(m);
            t.enter(2);
            t.exit(2, 1);
            t.exit(m, 10);
        }
        t.exit(1, 4);
        let got: Vec<(u32, u32, u64, u64)> = t
            .nodes
            .iter()
            .map(|n| (n.method, n.parent, n.calls, n.bytecodes))
            .collect();
        assert_eq!(
            got,
            [
                (ROOT, 0, 0, 0),
                (1, 0, 1, 4),
                (2, 1, 3, 30),
                (2, 2, 3, 3),
                (3, 1, 2, 20),
                (2, 4, 2, 2),
                (1, 1, 1, 10),
                (2, 6, 1, 1),
            ]
        );
    }

    #[test]
    fn past_the_node_budget_calls_count_in_one_overflow_node() {
        let mut t = Tree::new();
        t.nodes.resize(MAX_NODES, t.nodes[0]);
        t.enter(1);
        t.enter(2);
        t.exit(2, 3);
        t.exit(1, 4);
        let o = &t.nodes[MAX_NODES];
        assert_eq!((o.method, o.calls, o.bytecodes), (OVERFLOW, 2, 7));
        assert_eq!((t.overflow_calls, t.current), (2, ROOT_NODE));
    }
}
