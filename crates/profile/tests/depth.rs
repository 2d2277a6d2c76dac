//! Deep recursion: the recorder bounds tree depth, and documents of any depth are
//! written, read and dropped without deep native recursion.

use ferrofluid_profile::json::PRETTY_MAX_DEPTH;
use ferrofluid_profile::{Document, NodeId, NodeKind, Profile, Recording, Stamp, MAX_DEPTH};

const DEEP: u64 = 100_000;

/// One thread recursing `DEEP` levels into `r`, entered at t=i and left at t=2*DEEP-i.
fn deep_recording() -> Profile {
    let mut rec = Recording::new(1 << 20);
    let r = rec.methods.insert("com.acme.Deep", "r", "(I)V");
    let t = rec.thread(1, "main");
    for i in 0..DEEP {
        t.enter(r, Stamp::wall(i));
    }
    for i in (0..DEEP).rev() {
        t.exit(r, Stamp::wall(2 * DEEP - i)).unwrap();
    }
    rec.finish(Stamp::wall(2 * DEEP))
}

fn depth_of(tree: &ferrofluid_profile::CallTree) -> usize {
    tree.walk().iter().map(|&(_, d)| d).max().unwrap()
}

#[test]
fn deep_recursion_is_charged_to_one_overflow_node_at_the_bound() {
    let profile = deep_recording();
    let thread = &profile.threads[0];
    let tree = &thread.tree;
    // Root, MAX_DEPTH method nodes, one overflow node below the deepest.
    assert_eq!(tree.len(), MAX_DEPTH + 2);
    assert_eq!(tree.method_nodes(), MAX_DEPTH);
    assert_eq!(depth_of(tree), MAX_DEPTH + 1);
    let overflow = NodeId::ROOT.index() + MAX_DEPTH + 1;
    let ids: Vec<NodeId> = tree.ids().collect();
    let node = tree.node(ids[overflow]);
    assert_eq!(node.kind, NodeKind::Overflow);
    let beyond = DEEP - MAX_DEPTH as u64;
    assert_eq!(node.calls, beyond);
    assert_eq!(thread.overflow_calls, beyond);
    // Every invocation is counted exactly once.
    let calls: u64 = ids.iter().map(|&id| tree.node(id).calls).sum();
    assert_eq!(calls, DEEP);
    // The overflow node is timed by its outermost frame only: entered at MAX_DEPTH,
    // left at 2*DEEP-MAX_DEPTH; its parent's total covers it.
    assert_eq!(node.total_ns, 2 * (DEEP - MAX_DEPTH as u64));
    let parent = tree.node(node.parent().unwrap());
    assert_eq!(parent.total_ns, node.total_ns + 2);
    assert_eq!(parent.outer_calls, 1);
    assert_eq!(tree.node(NodeId::ROOT).total_ns, 2 * DEEP);
}

#[test]
fn deep_recording_round_trips_through_json() {
    let profile = deep_recording();
    let mut json = Vec::new();
    profile.write_json(&mut json).unwrap();
    let back = Profile::from_json_slice(&json).unwrap();
    assert_eq!(back, profile);
}

/// A hand-built document `levels` deep: a chain of `f` methods, each called once.
fn chain_json(levels: usize) -> String {
    let node = r#"{"class":"com.acme.C","method":"f","descriptor":"()V","calls":1,"total_ns":10,"self_ns":0,"children":["#;
    let mut s = String::from(
        r#"{"format":"ferrofluid","version":1,"mode":"cpu","methods":{"instrumented":1,"called":1},"threads":[{"name":"main","root":"#,
    );
    for _ in 0..levels {
        s.push_str(node);
    }
    for _ in 0..levels {
        s.push_str("]}");
    }
    s.push_str("}]}");
    s
}

#[test]
fn documents_deeper_than_the_bound_are_read() {
    let levels = 5_000;
    let json = chain_json(levels);
    let profile = Profile::from_json_slice(json.as_bytes()).unwrap();
    let tree = &profile.threads[0].tree;
    // The document's root is a method: the thread node above it is implied.
    assert_eq!(tree.len(), levels + 1);
    assert_eq!(depth_of(tree), levels);
    let deepest = tree.ids().last().unwrap();
    assert_eq!(tree.node(deepest).calls, 1);
    assert_eq!(tree.path(deepest).len(), levels);

    // Written back (deeper than any recorder makes) and read again, then dropped.
    let mut again = Vec::new();
    profile.write_json(&mut again).unwrap();
    assert_eq!(Profile::from_json_slice(&again).unwrap(), profile);
    drop(Document::from_json_slice(&again).unwrap());
}

#[test]
fn trailing_garbage_is_still_an_error() {
    let mut json = chain_json(3);
    json.push_str(" x");
    assert!(Profile::from_json_slice(json.as_bytes())
        .unwrap_err()
        .to_string()
        .contains("trailing characters"));
}

#[test]
fn deep_trees_are_written_compact_and_shallow_ones_pretty() {
    let deep = deep_recording();
    let mut json = Vec::new();
    deep.write_json(&mut json).unwrap();
    assert_eq!(json.iter().filter(|&&b| b == b'\n').count(), 1);

    let profile = Profile::from_json_slice(chain_json(PRETTY_MAX_DEPTH).as_bytes()).unwrap();
    json.clear();
    profile.write_json(&mut json).unwrap();
    assert!(json.starts_with(b"{\n  \"format\": \"ferrofluid\""));
}
