//! Builds one thread's calling context tree from its probe events.
//!
//! The recorder mirrors the thread's real stack. Exits name their method so that frames
//! an exception unwound without an exit probe are closed too: everything above the
//! innermost frame of the exiting method is popped at the exit's timestamp. An explicit
//! [`ThreadRecorder::unwind_to`] handles a catch that names its frame depth.

use std::collections::HashMap;

use crate::error::EventError;
use crate::method::MethodId;
use crate::tree::{add_cpu, CallTree, NodeId, NodeKind};

/// Children of a node are scanned linearly up to this many; wider nodes (a dispatcher
/// calling hundreds of methods) are looked up through a hash index.
const LINEAR_CHILDREN: usize = 16;

/// Default budget of method nodes per thread tree.
pub const DEFAULT_MAX_NODES: usize = 1 << 20;

/// Deepest method node of a tree: calls nested deeper (deep recursion) are charged to
/// one overflow node at depth `MAX_DEPTH + 1`, like calls beyond the node budget. Keeps
/// every tree shallow enough to write, read and drop without deep native recursion.
pub const MAX_DEPTH: usize = 1024;

/// One timestamp of a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Monotonic wall clock, ns.
    pub wall_ns: u64,
    /// Thread CPU clock, ns, when requested.
    pub cpu_ns: Option<u64>,
    /// How long the probe that took this stamp ran, ns, as it measured itself (0: not
    /// measured). The stamp is the probe's start, so an entry probe's time lies inside the
    /// frame it opens and an exit probe's inside the frame it returns to.
    pub probe_ns: u64,
}

impl Stamp {
    /// A wall-clock-only stamp.
    pub fn wall(wall_ns: u64) -> Self {
        Self {
            wall_ns,
            cpu_ns: None,
            probe_ns: 0,
        }
    }

    /// A stamp with both clocks.
    pub fn with_cpu(wall_ns: u64, cpu_ns: u64) -> Self {
        Self {
            wall_ns,
            cpu_ns: Some(cpu_ns),
            probe_ns: 0,
        }
    }

    /// This stamp, taken by a probe that ran `probe_ns`.
    pub fn by_probe(self, probe_ns: u64) -> Self {
        Self { probe_ns, ..self }
    }
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    method: MethodId,
    node: NodeId,
    enter: Stamp,
    /// False for frames nested inside an overflow frame: the outer overflow frame's
    /// interval already contains them, so timing them again would count twice.
    timed: bool,
}

/// Turns enter/exit/unwind events of one thread into a [`CallTree`].
#[derive(Clone, Debug)]
pub struct ThreadRecorder {
    tree: CallTree,
    stack: Vec<Frame>,
    max_nodes: usize,
    method_nodes: usize,
    overflow_calls: u64,
    unmatched_exits: u64,
    wide: HashMap<(NodeId, NodeKind), NodeId>,
    /// The thread CPU clock of the latest event that carried it (moved past pauses like the
    /// open frames' starts): where frames still open end in CPU time when they are closed by
    /// a stamp without it (a snapshot, or the end, seen from another thread).
    last_cpu: Option<u64>,
    /// The wall time of the latest enter or exit event.
    last_wall: u64,
}

impl Default for ThreadRecorder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_NODES)
    }
}

impl ThreadRecorder {
    /// A recorder that creates at most `max_nodes` method nodes, none deeper than
    /// [`MAX_DEPTH`]. Further contexts are counted in one overflow node under the parent
    /// where the budget or the depth ran out, so the tree holds at most
    /// `2 * max_nodes + 1` nodes and is at most `MAX_DEPTH + 1` deep.
    pub fn new(max_nodes: usize) -> Self {
        Self {
            tree: CallTree::new(),
            stack: Vec::new(),
            max_nodes,
            method_nodes: 0,
            overflow_calls: 0,
            unmatched_exits: 0,
            wide: HashMap::new(),
            last_cpu: None,
            last_wall: 0,
        }
    }

    /// Current simulated stack depth.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// Invocations counted in overflow nodes so far.
    pub fn overflow_calls(&self) -> u64 {
        self.overflow_calls
    }

    /// Whether an invocation of `method` is open (entered, not exited yet).
    pub fn is_open(&self, method: MethodId) -> bool {
        self.stack.iter().any(|f| f.method == method)
    }

    /// The node of the innermost open frame, `None` outside every frame. It keeps its id in
    /// the tree [`ThreadRecorder::finish`] returns.
    pub fn innermost(&self) -> Option<NodeId> {
        self.stack.last().map(|f| f.node)
    }

    /// The wall time of the latest enter or exit event (0 before any).
    pub fn last_wall_ns(&self) -> u64 {
        self.last_wall
    }

    /// Exit events that matched no open frame (ignored).
    pub fn unmatched_exits(&self) -> u64 {
        self.unmatched_exits
    }

    /// The tree so far; open frames are not yet counted in it.
    pub fn tree(&self) -> &CallTree {
        &self.tree
    }

    /// Method entry probe.
    pub fn enter(&mut self, method: MethodId, at: Stamp) {
        self.saw(at);
        let parent = self.stack.last().map_or(NodeId::ROOT, |f| f.node);
        let parent_kind = self.tree.node(parent).kind;
        let (node, timed) = if parent_kind == NodeKind::Overflow {
            // Everything below an overflow frame stays in it.
            self.overflow_calls += 1;
            (parent, false)
        } else {
            let kind = NodeKind::Method(method);
            let node = match self.child(parent, kind) {
                Some(c) => c,
                // `stack.len()` is the depth of `parent`: the new node would be one deeper.
                None if self.method_nodes < self.max_nodes && self.stack.len() < MAX_DEPTH => {
                    self.method_nodes += 1;
                    self.add_child(parent, kind)
                }
                None => {
                    self.overflow_calls += 1;
                    match self.child(parent, NodeKind::Overflow) {
                        Some(c) => c,
                        None => self.add_child(parent, NodeKind::Overflow),
                    }
                }
            };
            (node, true)
        };
        if parent_kind != NodeKind::Thread {
            self.tree.node_mut(parent).outer_calls += 1;
        }
        let entered = self.tree.node_mut(node);
        entered.calls += 1;
        entered.probe_ns += at.probe_ns;
        self.stack.push(Frame {
            method,
            node,
            enter: at,
            timed,
        });
    }

    /// Method exit probe (normal return or exception). Frames above the innermost frame
    /// of `method` were unwound by an exception without their own exit and are closed
    /// at the same instant.
    pub fn exit(&mut self, method: MethodId, at: Stamp) -> Result<(), EventError> {
        self.saw(at);
        let Some(pos) = self.stack.iter().rposition(|f| f.method == method) else {
            self.unmatched_exits += 1;
            return Err(EventError::UnmatchedExit {
                method,
                depth: self.stack.len(),
            });
        };
        self.pop_to(pos, at);
        self.probe_returned(at);
        Ok(())
    }

    /// The exit probe of a method whose probes were being dropped while it ran: closes the
    /// innermost frame if it is `method`'s (an invocation recorded before the drop) and
    /// ignores the exit otherwise (one whose entry was not recorded). Returns whether it
    /// closed a frame.
    pub fn exit_if_innermost(&mut self, method: MethodId, at: Stamp) -> bool {
        if self.stack.last().is_none_or(|f| f.method != method) {
            self.saw(at);
            return false;
        }
        let _ = self.exit(method, at);
        true
    }

    /// Exception caught in the frame at `depth` (1 = outermost frame): closes every frame
    /// above it at `at`.
    pub fn unwind_to(&mut self, depth: usize, at: Stamp) {
        self.saw(at);
        if depth < self.stack.len() {
            self.pop_to(depth, at);
        }
        self.probe_returned(at);
    }

    /// A probe that closed frames ran after them, in the frame it returned to (none is timed
    /// for the thread node).
    fn probe_returned(&mut self, at: Stamp) {
        if let Some(f) = self.stack.last() {
            self.tree.node_mut(f.node).probe_ns += at.probe_ns;
        }
    }

    /// Factors out time the profiler itself spent on this thread (JFluid's "adjust
    /// time" event: dumping buffers, analysing and retransforming classes in a probe):
    /// every open frame's interval contains the pause, so each start moves forward.
    pub fn adjust(&mut self, pause: Stamp) {
        for f in &mut self.stack {
            f.enter.wall_ns += pause.wall_ns;
            if let (Some(c), Some(p)) = (f.enter.cpu_ns.as_mut(), pause.cpu_ns) {
                *c += p;
            }
        }
        if let (Some(c), Some(p)) = (self.last_cpu.as_mut(), pause.cpu_ns) {
            *c += p;
        }
    }

    fn saw(&mut self, at: Stamp) {
        self.last_wall = self.last_wall.max(at.wall_ns);
        if at.cpu_ns.is_some() {
            self.last_cpu = at.cpu_ns;
        }
    }

    /// Closes every open frame at the thread's latest event (its wall time, and its CPU clock
    /// if measured): frames whose ends were lost (events dropped), for which that event is the
    /// last moment known to be inside them. Their calls stay counted. Returns how many frames
    /// were open.
    pub fn close_open(&mut self) -> usize {
        let open = self.stack.len();
        let at = Stamp {
            wall_ns: self.last_wall,
            cpu_ns: self.last_cpu,
            probe_ns: 0,
        };
        self.pop_to(0, at);
        open
    }

    /// Closes all open frames at `at` and returns the finished tree.
    ///
    /// Without a CPU clock in `at` (another thread's clock cannot be read from here), open
    /// frames end in CPU time at this thread's last event that carried one: their CPU time is
    /// what they used up to their thread's latest probe, never less than their callees'.
    pub fn finish(mut self, at: Stamp) -> CallTree {
        let at = Stamp {
            cpu_ns: at.cpu_ns.or(self.last_cpu),
            ..at
        };
        self.pop_to(0, at);
        self.tree
    }

    /// Forgets what was recorded before `at` (a reset of the profile): the tree keeps only the
    /// path of the frames still open, with nothing counted, and those frames are timed from
    /// `at`. From then on the tree holds exactly what happens after `at`: a call in flight
    /// counts the time it spends after `at`, not the call itself (it began before).
    pub fn restart(&mut self, at: Stamp) {
        let mut tree = CallTree::new();
        let mut node = NodeId::ROOT;
        let mut method_nodes = 0;
        let cpu_now = at.cpu_ns.or(self.last_cpu);
        for frame in &mut self.stack {
            // Frames inside an overflow frame share its node.
            if frame.timed {
                let kind = self.tree.node(frame.node).kind;
                node = tree.add_child(node, kind);
                if kind != NodeKind::Overflow {
                    method_nodes += 1;
                }
            }
            frame.node = node;
            frame.enter = Stamp {
                wall_ns: at.wall_ns,
                cpu_ns: frame.enter.cpu_ns.and(cpu_now),
                probe_ns: 0,
            };
        }
        self.tree = tree;
        self.method_nodes = method_nodes;
        self.overflow_calls = 0;
        self.unmatched_exits = 0;
        self.wide.clear();
        self.last_cpu = cpu_now;
    }

    /// The tree as if every open frame ended at `at`, leaving the recorder untouched:
    /// a snapshot while the program runs.
    pub fn snapshot(&self, at: Stamp) -> CallTree {
        self.clone().finish(at)
    }

    fn child(&self, parent: NodeId, kind: NodeKind) -> Option<NodeId> {
        if self.tree.node(parent).children().len() <= LINEAR_CHILDREN {
            self.tree.child(parent, kind)
        } else {
            self.wide.get(&(parent, kind)).copied()
        }
    }

    fn add_child(&mut self, parent: NodeId, kind: NodeKind) -> NodeId {
        let id = self.tree.add_child(parent, kind);
        let kids = self.tree.node(parent).children();
        if kids.len() == LINEAR_CHILDREN + 1 {
            // The node just became wide: index all its children.
            for &c in kids {
                self.wide.insert((parent, self.tree.node(c).kind), c);
            }
        } else if kids.len() > LINEAR_CHILDREN {
            self.wide.insert((parent, kind), id);
        }
        id
    }

    /// Pops frames until `len` remain, closing each at `at`.
    fn pop_to(&mut self, len: usize, at: Stamp) {
        while self.stack.len() > len {
            let frame = self.stack.pop().expect("stack longer than len");
            if !frame.timed {
                continue;
            }
            let wall = at.wall_ns.saturating_sub(frame.enter.wall_ns);
            let cpu = match (frame.enter.cpu_ns, at.cpu_ns) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            };
            let node = self.tree.node_mut(frame.node);
            node.total_ns += wall;
            node.cpu_ns = add_cpu(node.cpu_ns, cpu);
            if self.stack.is_empty() {
                let root = self.tree.node_mut(NodeId::ROOT);
                root.total_ns += wall;
                root.cpu_ns = add_cpu(root.cpu_ns, cpu);
            }
        }
    }
}
