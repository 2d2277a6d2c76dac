//! Calling contexts kept in Java: `ferrofluid/Counts` (`Counts.java`) keeps each thread's
//! calling-context tree (JP's method call tree) in primitive arrays, found by its `Thread`'s
//! identity hash (else a `ThreadLocal`); probes that call it pass the context from entry to exit
//! in a local of the method, so an entry is a child lookup and an exit a store, with no JNI call
//! per event. The agent is asked at a root's entry and exit and at a method's first entry
//! ([`probes`], natives bound in [`ffi`]). Two engines use it: `count` (block counters: calls
//! and bytecodes per context) and `cpu` with sampled timing (calls per context; [`sampler`]
//! charges each thread's CPU and wall time to the node it is in, read from outside the thread).
//! [`tree`] turns the contexts read at a snapshot into profile trees.
//!
//! Decisions: docs/decisions/0051-count-contexts-in-java.md, 0057-sampled-timing.md.

#[allow(unsafe_code)]
pub mod ffi;
pub mod probes;
pub mod sampler;
pub mod tree;

/// The classes `ferrofluid/Counts` runs to find a thread's tree: never probed by an engine
/// using it (their probes would call it again before it found the tree). Calls of their methods
/// count as their callers'.
pub const UNPROBED: [&str; 4] = [
    "java.lang.ThreadLocal",
    "java.lang.ThreadLocal$*",
    "java.lang.ref.Reference",
    "java.lang.ref.WeakReference",
];

/// Nodes one thread's tree may have; past it new contexts count into the overflow node.
pub const MAX_NODES: usize = ferrofluid_profile::DEFAULT_MAX_NODES;
/// The share of the JVM's maximum heap all trees' nodes may take (40 bytes a node).
pub const HEAP_SHARE: f64 = 0.05;
