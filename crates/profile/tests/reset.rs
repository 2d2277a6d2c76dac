//! `Recording::restart` (the control protocol's `reset`): what was recorded before is forgotten,
//! calls in flight count their time from the reset, not their call.

use ferrofluid_profile::{MethodId, NodeKind, Recording, Stamp};

const F: MethodId = MethodId(0);
const G: MethodId = MethodId(1);
const H: MethodId = MethodId(2);

fn at(t: u64) -> Stamp {
    Stamp::wall(t)
}

#[test]
fn after_a_restart_the_tree_holds_exactly_what_followed_it() {
    let mut r = Recording::new(100);
    let a = r.thread(1, "a");
    a.enter(F, at(0));
    a.enter(G, at(5));
    a.exit(G, at(10)).unwrap();
    a.enter(G, at(15));
    // b recorded a whole call and is outside every frame at the reset: it is forgotten.
    r.thread(2, "b").enter(H, at(1));
    r.thread(2, "b").exit(H, at(2)).unwrap();

    r.restart(at(20));
    let a = r.thread(1, "a");
    a.exit(G, at(30)).unwrap();
    a.enter(H, at(32));
    a.exit(H, at(40)).unwrap();
    a.exit(F, at(50)).unwrap();
    a.enter(F, at(60));
    a.exit(F, at(70)).unwrap();

    let profile = r.finish(at(80));
    assert_eq!(profile.threads.len(), 1, "b had nothing open");
    let t = &profile.threads[0];
    assert_eq!(
        (t.name.as_str(), t.overflow_calls, t.unmatched_exits),
        ("a", 0, 0)
    );
    let tree = &t.tree;
    let node = |path: &[MethodId]| {
        let kinds: Vec<_> = path.iter().map(|&m| NodeKind::Method(m)).collect();
        let n = tree.node(tree.find(&kinds).unwrap());
        (n.calls, n.total_ns, n.outer_calls)
    };
    // f: its call in flight from 20 to 50, plus one whole call from 60 to 70.
    assert_eq!(node(&[F]), (1, 40, 1));
    // g was in flight: 10 ns after the reset, and no call.
    assert_eq!(node(&[F, G]), (0, 10, 0));
    assert_eq!(node(&[F, H]), (1, 8, 0));
    assert_eq!(tree.node(tree.root()).total_ns, 40);
    assert_eq!(tree.len(), 4, "thread, f, f/g, f/h");
}

#[test]
fn frames_inside_an_overflow_frame_share_its_node_after_a_restart() {
    // One method node allowed: g goes to an overflow node, h nested inside it stays there.
    let mut r = Recording::new(1);
    let a = r.thread(7, "a");
    a.enter(F, at(0));
    a.enter(G, at(1));
    a.enter(H, at(2));
    r.restart(at(10));
    let a = r.thread(7, "a");
    a.exit(H, at(12)).unwrap();
    a.exit(G, at(15)).unwrap();
    a.exit(F, at(20)).unwrap();
    let profile = r.finish(at(30));
    let tree = &profile.threads[0].tree;
    let f = tree.find(&[NodeKind::Method(F)]).unwrap();
    let overflow = tree.child(f, NodeKind::Overflow).unwrap();
    assert_eq!(tree.node(overflow).calls, 0);
    assert_eq!(
        tree.node(overflow).total_ns,
        5,
        "g's frame from 10 to 15; h untimed"
    );
    assert_eq!(tree.node(f).total_ns, 10);
    assert_eq!(profile.threads[0].overflow_calls, 0);
    assert_eq!(tree.len(), 3);
}

#[test]
fn open_frames_take_their_threads_last_cpu_clock_at_a_restart_from_another_thread() {
    let mut r = Recording::new(100);
    let a = r.thread(1, "a");
    a.enter(F, Stamp::with_cpu(0, 0));
    a.enter(G, Stamp::with_cpu(10, 8));
    // The collector's reset carries no CPU clock: a's CPU time counts from its last event (8).
    r.restart(at(20));
    let a = r.thread(1, "a");
    a.exit(G, Stamp::with_cpu(30, 25)).unwrap();
    a.exit(F, Stamp::with_cpu(40, 33)).unwrap();
    let profile = r.finish(at(50));
    let tree = &profile.threads[0].tree;
    let f = tree.find(&[NodeKind::Method(F)]).unwrap();
    let g = tree
        .find(&[NodeKind::Method(F), NodeKind::Method(G)])
        .unwrap();
    assert_eq!((tree.node(f).total_ns, tree.node(f).cpu_ns), (20, Some(25)));
    assert_eq!((tree.node(g).total_ns, tree.node(g).cpu_ns), (10, Some(17)));
}
