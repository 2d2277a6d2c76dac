//! Tree building, compensation and hot spots, with hand-computed numbers.

use ferrofluid_profile::{
    Calibration, CallTree, EventError, MethodId, NodeKind, Profile, Stamp, ThreadProfile,
    ThreadRecorder, Times,
};

/// A thread replaying probe events on a simulated clock.
struct Sim {
    rec: ThreadRecorder,
    t: u64,
}

impl Sim {
    fn new(max_nodes: usize) -> Self {
        Self {
            rec: ThreadRecorder::new(max_nodes),
            t: 0,
        }
    }
    fn enter(&mut self, m: MethodId) {
        self.rec.enter(m, Stamp::wall(self.t));
    }
    fn exit(&mut self, m: MethodId) {
        self.rec.exit(m, Stamp::wall(self.t)).unwrap();
    }
    fn work(&mut self, ns: u64) {
        self.t += ns;
    }
    fn finish(self) -> CallTree {
        let t = self.t;
        self.rec.finish(Stamp::wall(t))
    }
}

struct Fig4 {
    f: MethodId,
    g: MethodId,
    h: MethodId,
}

/// The JP paper's Fig. 4 program: f calls h() and g(i) for i = 1..=10; g(i) calls h()
/// i times. Costs: h body 7; a caller spends 1 after each call; g spends 2 + 3 around
/// its loop; f spends 5 + 4 around its loop.
fn fig4(profile: &mut Profile) -> (Fig4, CallTree) {
    let m = Fig4 {
        f: profile.methods.insert("Fig4", "f", "()V"),
        g: profile.methods.insert("Fig4", "g", "(I)V"),
        h: profile.methods.insert("Fig4", "h", "()V"),
    };
    let mut s = Sim::new(1000);
    let h = |s: &mut Sim| {
        s.enter(m.h);
        s.work(7);
        s.exit(m.h);
        s.work(1);
    };
    s.enter(m.f);
    s.work(5);
    for i in 1..=10 {
        h(&mut s);
        s.enter(m.g);
        s.work(2);
        for _ in 0..i {
            h(&mut s);
        }
        s.work(3);
        s.exit(m.g);
        s.work(1);
    }
    s.work(4);
    s.exit(m.f);
    (m, s.finish())
}

fn kinds(ms: &[MethodId]) -> Vec<NodeKind> {
    ms.iter().map(|&m| NodeKind::Method(m)).collect()
}

#[test]
fn fig4_counts_and_measured_times() {
    let mut p = Profile::default();
    let (m, tree) = fig4(&mut p);
    let node = |path: &[MethodId]| tree.node(tree.find(&kinds(path)).unwrap()).clone();

    let (f, fh, fg, fgh) = (
        node(&[m.f]),
        node(&[m.f, m.h]),
        node(&[m.f, m.g]),
        node(&[m.f, m.g, m.h]),
    );
    assert_eq!((f.calls, fh.calls, fg.calls, fgh.calls), (1, 10, 10, 55));
    assert_eq!(tree.len(), 5, "thread, f, f->h, f->g, f->g->h");
    // h: 10 x 7. g(i): 2 + 8i + 3, summed: 50 + 8*55. f: 5 + 10*(8 + 1) + 490 + 4.
    assert_eq!(
        (f.total_ns, fh.total_ns, fg.total_ns, fgh.total_ns),
        (589, 70, 490, 385)
    );
    assert_eq!((f.outer_calls, fg.outer_calls, fh.outer_calls), (20, 55, 0));
    let root = tree.node(tree.root());
    assert_eq!((root.calls, root.total_ns, root.outer_calls), (0, 589, 0));
    let f_id = tree.find(&kinds(&[m.f])).unwrap();
    let g_id = tree.find(&kinds(&[m.f, m.g])).unwrap();
    assert_eq!(tree.self_ns(f_id), 29); // 5 + 4 + 20 gaps of 1
    assert_eq!(tree.self_ns(g_id), 105); // 10 * 5 + 55 gaps of 1
}

#[test]
fn fig4_compensated_times_and_hot_spots() {
    let mut p = Profile::default();
    let (m, tree) = fig4(&mut p);
    p.calibration = Some(Calibration {
        inner_ns: 1.0,
        outer_ns: 1.0,
    });
    p.threads.push(ThreadProfile::new("main", 1, tree));
    let tree = &p.threads[0].tree;
    let times = p.times(tree);
    let at = |path: &[MethodId]| times[tree.find(&kinds(path)).unwrap().index()];
    // self - calls * inner - outer_calls * outer
    assert_eq!(
        at(&[m.f, m.h]),
        Times {
            total_ns: 60,
            self_ns: 60,
            overhead_ns: 10,
            total_overhead_ns: 10,
            ..Times::default()
        }
    ); // 70 - 10
    assert_eq!(
        at(&[m.f, m.g, m.h]),
        Times {
            total_ns: 330,
            self_ns: 330,
            overhead_ns: 55,
            total_overhead_ns: 55,
            ..Times::default()
        }
    ); // 385 - 55
    assert_eq!(
        at(&[m.f, m.g]),
        Times {
            total_ns: 370,
            self_ns: 40,
            overhead_ns: 65,
            total_overhead_ns: 120,
            ..Times::default()
        }
    ); // 105 - 10 - 55
    assert_eq!(
        at(&[m.f]),
        Times {
            total_ns: 438,
            self_ns: 8,
            overhead_ns: 21,
            total_overhead_ns: 151,
            ..Times::default()
        }
    ); // 29 - 1 - 20
    assert_eq!(
        times[0],
        Times {
            total_ns: 438,
            self_ns: 0,
            overhead_ns: 0,
            total_overhead_ns: 151,
            ..Times::default()
        }
    );

    // Uncompensated values stay available.
    let raw = ferrofluid_profile::node_times(tree, None);
    assert_eq!(
        raw[tree.find(&kinds(&[m.f])).unwrap().index()],
        Times {
            total_ns: 589,
            self_ns: 29,
            overhead_ns: 0,
            total_overhead_ns: 0,
            ..Times::default()
        }
    );

    let spots = p.hot_spots();
    let rows: Vec<_> = spots
        .iter()
        .map(|s| (s.kind, s.self_ns, s.total_ns, s.calls))
        .collect();
    assert_eq!(
        rows,
        vec![
            (NodeKind::Method(m.h), 390, 390, 65),
            (NodeKind::Method(m.g), 40, 370, 10),
            (NodeKind::Method(m.f), 8, 438, 1),
        ]
    );
    assert_eq!(spots[0].avg_self_ns(), 6.0);
    // Calibrated rest may be off by all of it: h's 390 ns of self time had 65 ns subtracted,
    // more than a tenth of it; so had f's 8 (21) and the root's total of 438 (151).
    assert_eq!(
        spots
            .iter()
            .map(|s| (s.overhead_ns, s.self_uncertain(), s.total_uncertain()))
            .collect::<Vec<_>>(),
        vec![(65, true, true), (65, true, true), (21, true, true)]
    );
    assert!(at(&[m.f]).self_uncertain() && at(&[m.f, m.h]).self_uncertain());
    // With a tenth of that cost the times are certain: f's 27 ns of self time had 2 ns
    // subtracted, under a tenth of it.
    p.calibration = Some(Calibration {
        inner_ns: 0.1,
        outer_ns: 0.1,
    });
    let times = p.times(&p.threads[0].tree);
    let at = |path: &[MethodId]| times[tree.find(&kinds(path)).unwrap().index()];
    assert!(!at(&[m.f, m.g, m.h]).self_uncertain() && !at(&[m.f, m.g, m.h]).total_uncertain());
    assert_eq!(at(&[m.f]).self_ns, 27);
    assert!(!at(&[m.f]).self_uncertain());
    assert_eq!(p.called(), 3);
}

#[test]
fn compensation_never_goes_negative() {
    let mut s = Sim::new(10);
    let (a, b) = (MethodId(0), MethodId(1));
    s.enter(a);
    s.work(3);
    s.enter(b);
    s.work(2);
    s.exit(b);
    s.exit(a);
    let tree = s.finish();
    let cal = Calibration {
        inner_ns: 2.5,
        outer_ns: 4.0,
    };
    let times = ferrofluid_profile::node_times(&tree, Some(&cal));
    // a: 3 - 2.5 - 4 < 0 -> 0; b: 2 - 2.5 < 0 -> 0. What is subtracted is what was measured,
    // not the 6.5 and 2.5 ns calibrated: 3 and 2 ns.
    assert_eq!(
        times[1],
        Times {
            total_ns: 0,
            self_ns: 0,
            overhead_ns: 3,
            total_overhead_ns: 5,
            ..Times::default()
        }
    );
    assert_eq!(
        times[2],
        Times {
            total_ns: 0,
            self_ns: 0,
            overhead_ns: 2,
            total_overhead_ns: 2,
            ..Times::default()
        }
    );
}

#[test]
fn exception_with_exit_probes_in_every_frame() {
    // try/finally probes: c, b and a all report exits while the exception passes.
    let (f, a, b, c) = (MethodId(0), MethodId(1), MethodId(2), MethodId(3));
    let mut s = Sim::new(100);
    s.enter(f);
    s.work(1);
    s.enter(a);
    s.enter(b);
    s.enter(c);
    s.work(10);
    s.exit(c);
    s.exit(b);
    s.exit(a);
    s.work(1);
    s.exit(f);
    let tree = s.finish();
    let total = |p: &[MethodId]| tree.node(tree.find(&kinds(p)).unwrap()).total_ns;
    assert_eq!(
        (
            total(&[f]),
            total(&[f, a]),
            total(&[f, a, b]),
            total(&[f, a, b, c])
        ),
        (12, 10, 10, 10)
    );
}

#[test]
fn exception_caught_five_frames_up_with_unwind() {
    // f -> a -> b -> c -> d -> e; e throws; caught in a (depth 2) at t=20 without exit
    // events for b..e; a then calls b again and returns normally.
    let ms: Vec<MethodId> = (0..6).map(MethodId).collect();
    let (f, a, b, c, d, e) = (ms[0], ms[1], ms[2], ms[3], ms[4], ms[5]);
    let mut s = Sim::new(100);
    for &m in &ms {
        s.enter(m);
        s.work(2);
    }
    // t = 12; e runs until the throw at 20.
    s.work(8);
    s.rec.unwind_to(2, Stamp::wall(s.t));
    assert_eq!(s.rec.depth(), 2);
    s.work(5);
    s.enter(b);
    s.work(3);
    s.exit(b);
    s.exit(a);
    s.exit(f);
    let tree = s.finish();
    let node = |p: &[MethodId]| tree.node(tree.find(&kinds(p)).unwrap()).clone();
    assert_eq!(node(&[f, a, b, c, d, e]).total_ns, 10); // 10..20
    assert_eq!(node(&[f, a, b, c, d]).total_ns, 12); // 8..20
    assert_eq!(node(&[f, a, b, c]).total_ns, 14);
    let ab = node(&[f, a, b]);
    assert_eq!((ab.calls, ab.total_ns), (2, 16 + 3));
    let fa = node(&[f, a]);
    assert_eq!((fa.calls, fa.total_ns, fa.outer_calls), (1, 26, 2)); // 2..28
    assert_eq!(node(&[f]).total_ns, 28);
    assert_eq!(tree.len(), 7);
}

#[test]
fn exit_closes_frames_unwound_without_exit_events() {
    let (f, a, b, c) = (MethodId(0), MethodId(1), MethodId(2), MethodId(3));
    let mut s = Sim::new(100);
    s.enter(f);
    s.enter(a);
    s.work(1);
    s.enter(b);
    s.enter(c);
    s.work(4);
    s.exit(a); // b and c had no exit: both end now, with a.
    s.work(2);
    s.exit(f);
    let tree = s.finish();
    let total = |p: &[MethodId]| tree.node(tree.find(&kinds(p)).unwrap()).total_ns;
    assert_eq!(
        (
            total(&[f]),
            total(&[f, a]),
            total(&[f, a, b]),
            total(&[f, a, b, c])
        ),
        (7, 5, 4, 4)
    );
}

#[test]
fn recursion_keeps_contexts_and_counts_totals_once() {
    // r(3) -> r(2) -> r(1), each level spending 1 before and 1 after its call.
    let r = MethodId(0);
    let mut p = Profile::default();
    let mut s = Sim::new(100);
    for _ in 0..3 {
        s.enter(r);
        s.work(1);
    }
    for _ in 0..3 {
        s.work(1);
        s.exit(r);
    }
    let tree = s.finish();
    let totals: Vec<_> = (1..=3)
        .map(|n| {
            tree.node(tree.find(&vec![NodeKind::Method(r); n]).unwrap())
                .total_ns
        })
        .collect();
    assert_eq!(totals, vec![6, 4, 2]);
    p.methods.insert("R", "r", "(I)I");
    p.threads.push(ThreadProfile::new("main", 1, tree));
    let spot = &p.hot_spots()[0];
    assert_eq!((spot.self_ns, spot.total_ns, spot.calls), (6, 6, 3));
}

#[test]
fn recursive_exit_pops_the_innermost_frame_of_the_method() {
    // f -> r -> g -> r -> h; the inner r exits while h has no exit: h and the inner r
    // close, the outer r and g stay open.
    let (f, r, g, h) = (MethodId(0), MethodId(1), MethodId(2), MethodId(3));
    let mut s = Sim::new(100);
    for m in [f, r, g, r, h] {
        s.enter(m);
        s.work(1);
    }
    s.exit(r);
    assert_eq!(s.rec.depth(), 3);
    s.exit(g);
    s.exit(r);
    s.exit(f);
    let tree = s.finish();
    let total = |p: &[MethodId]| tree.node(tree.find(&kinds(p)).unwrap()).total_ns;
    assert_eq!(total(&[f, r, g, r, h]), 1);
    assert_eq!(total(&[f, r, g, r]), 2);
    assert_eq!(total(&[f, r, g]), 3);
    assert_eq!(total(&[f, r]), 4);
}

#[test]
fn unmatched_exit_is_reported_and_counted() {
    let mut rec = ThreadRecorder::new(10);
    rec.enter(MethodId(0), Stamp::wall(0));
    assert_eq!(
        rec.exit(MethodId(1), Stamp::wall(1)),
        Err(EventError::UnmatchedExit {
            method: MethodId(1),
            depth: 1
        })
    );
    assert_eq!(rec.unmatched_exits(), 1);
    assert_eq!(rec.depth(), 1);
}

/// A method whose probes are being dropped (`adaptive`): its exit closes the innermost frame
/// only if that frame is its own (an invocation entered before the drop); otherwise, even with
/// an outer frame of it open (a recursive call entered after the drop), it is ignored and not
/// counted as unmatched.
#[test]
fn an_exit_of_a_dropping_method_closes_only_its_innermost_frame() {
    let (f, d) = (MethodId(0), MethodId(1));
    let mut rec = ThreadRecorder::new(10);
    rec.enter(f, Stamp::wall(0));
    rec.enter(d, Stamp::wall(10));
    // d's own invocation, entered before the drop, closes.
    assert!(rec.exit_if_innermost(d, Stamp::wall(12)) && rec.depth() == 1);
    // Calls of d whose entries were dropped: their exits are ignored.
    assert!(!rec.exit_if_innermost(d, Stamp::wall(20)));
    assert!(!rec.exit_if_innermost(d, Stamp::wall(25)));
    assert_eq!(
        (rec.depth(), rec.unmatched_exits(), rec.last_wall_ns()),
        (1, 0, 25)
    );
    assert!(!rec.is_open(d) && rec.is_open(f));
    rec.exit(f, Stamp::wall(30)).unwrap();
    let tree = rec.finish(Stamp::wall(30));
    let fnode = tree.node(tree.root()).children()[0];
    let dnode = tree.node(fnode).children()[0];
    assert_eq!((tree.node(fnode).calls, tree.node(dnode).calls), (1, 1));
    assert_eq!(tree.node(dnode).total_ns, 2);
}

/// When the exits of a dropped method may stop reaching the recorder: once every thread is
/// outside every frame, or has an event at or after the drop and no open frame of the method.
#[test]
fn a_dropped_method_is_quiet_once_every_thread_moved_past_the_drop_without_it_open() {
    let (f, d) = (MethodId(0), MethodId(1));
    let mut r = ferrofluid_profile::Recording::new(100);
    r.thread(1, "a").enter(f, Stamp::wall(0));
    r.thread(1, "a").enter(d, Stamp::wall(5));
    r.thread(2, "b").enter(f, Stamp::wall(3));
    r.thread(3, "idle");
    let drop_at = 10;
    // a has d open; b has seen nothing since the drop (it may be about to record d's entry).
    assert!(!r.quiet_since(Some(d), drop_at));
    r.thread(1, "a").exit(d, Stamp::wall(12)).unwrap();
    assert!(!r.quiet_since(Some(d), drop_at));
    r.thread(2, "b").exit(f, Stamp::wall(11)).unwrap();
    assert!(r.quiet_since(Some(d), drop_at));
    // b, back inside f with no event since: quiet only for a later drop once it moves on.
    r.thread(2, "b").enter(f, Stamp::wall(13));
    assert!(r.quiet_since(Some(d), drop_at) && !r.quiet_since(None, 14));
    r.thread(1, "a").exit(f, Stamp::wall(14)).unwrap();
    r.thread(2, "b").enter(d, Stamp::wall(15));
    assert!(!r.quiet_since(Some(d), 14) && r.quiet_since(None, 14));
}

#[test]
fn node_budget_overflows_into_a_visible_node() {
    // Budget 2: f and f->g get nodes; f->h and everything under it go to f's overflow
    // node. h calls k twice, k calls h once: all nested in the overflow frame.
    let (f, g, h, k) = (MethodId(0), MethodId(1), MethodId(2), MethodId(3));
    let mut s = Sim::new(2);
    s.enter(f);
    s.enter(g);
    s.work(5);
    s.exit(g);
    s.enter(h); // overflow, timed: 10 ns
    s.work(2);
    s.enter(k);
    s.work(2);
    s.exit(k);
    s.enter(k);
    s.enter(h);
    s.work(3);
    s.exit(h);
    s.exit(k);
    s.work(3);
    s.exit(h);
    s.enter(g); // existing node: no overflow
    s.work(5);
    s.exit(g);
    s.exit(f);
    assert_eq!(s.rec.overflow_calls(), 4);
    let tree = s.finish();
    assert_eq!(tree.method_nodes(), 2);
    let fid = tree.find(&kinds(&[f])).unwrap();
    let ov = tree.child(fid, NodeKind::Overflow).unwrap();
    let n = tree.node(ov);
    assert_eq!((n.calls, n.total_ns, n.outer_calls), (4, 10, 3));
    let fnode = tree.node(fid);
    assert_eq!((fnode.total_ns, fnode.outer_calls), (20, 3));
    assert_eq!(tree.self_ns(fid), 0);
    let cal = Calibration {
        inner_ns: 1.0,
        outer_ns: 0.5,
    };
    let times = ferrofluid_profile::node_times(&tree, Some(&cal));
    // overflow: 10 - 4 * 1 - 3 * 0.5 = 4.5 -> 5 (rounded half away from zero)
    assert_eq!(
        times[ov.index()],
        Times {
            total_ns: 5,
            self_ns: 5,
            overhead_ns: 6,
            total_overhead_ns: 6,
            ..Times::default()
        }
    );
}

#[test]
fn snapshot_closes_open_frames_without_disturbing_the_recorder() {
    let (f, g) = (MethodId(0), MethodId(1));
    let mut rec = ThreadRecorder::new(10);
    rec.enter(f, Stamp::wall(100));
    rec.enter(g, Stamp::wall(110));
    let snap = rec.snapshot(Stamp::wall(150));
    assert_eq!(snap.node(snap.find(&kinds(&[f])).unwrap()).total_ns, 50);
    assert_eq!(snap.node(snap.find(&kinds(&[f, g])).unwrap()).total_ns, 40);
    assert_eq!(rec.depth(), 2);
    rec.exit(g, Stamp::wall(160)).unwrap();
    rec.exit(f, Stamp::wall(170)).unwrap();
    let tree = rec.finish(Stamp::wall(200));
    assert_eq!(tree.node(tree.find(&kinds(&[f])).unwrap()).total_ns, 70);
}

#[test]
fn thread_cpu_time_is_summed_per_node() {
    let (f, g) = (MethodId(0), MethodId(1));
    let mut rec = ThreadRecorder::new(10);
    rec.enter(f, Stamp::with_cpu(0, 1000));
    rec.enter(g, Stamp::with_cpu(10, 1004));
    rec.exit(g, Stamp::with_cpu(30, 1010)).unwrap();
    rec.exit(f, Stamp::with_cpu(40, 1012)).unwrap();
    let tree = rec.finish(Stamp::wall(40));
    assert_eq!(tree.node(tree.find(&kinds(&[f])).unwrap()).cpu_ns, Some(12));
    assert_eq!(
        tree.node(tree.find(&kinds(&[f, g])).unwrap()).cpu_ns,
        Some(6)
    );
    assert_eq!(tree.node(tree.root()).cpu_ns, Some(12));
}

#[test]
fn open_frames_end_in_cpu_time_at_their_threads_last_probe() {
    // f -> g -> exit g, f still running when the snapshot is taken from another thread, with
    // a profiler pause inside f after g returned.
    let (f, g) = (MethodId(0), MethodId(1));
    let mut rec = ThreadRecorder::new(10);
    rec.enter(f, Stamp::with_cpu(0, 1000));
    rec.enter(g, Stamp::with_cpu(10, 1004));
    rec.exit(g, Stamp::with_cpu(30, 1010)).unwrap();
    rec.adjust(Stamp::with_cpu(500, 300));
    let snap = rec.snapshot(Stamp::wall(900));
    let node = |t: &ferrofluid_profile::CallTree, path: &[MethodId]| {
        let n = t.node(t.find(&kinds(path)).unwrap());
        (n.total_ns, n.cpu_ns)
    };
    // Wall to the snapshot, less the pause; CPU to g's exit, the pause moved both ends.
    assert_eq!(node(&snap, &[f]), (400, Some(10)));
    assert_eq!(node(&snap, &[f, g]), (20, Some(6)));
    assert_eq!(snap.node(snap.root()).cpu_ns, Some(10));
    // A closing stamp that carries the clock wins.
    let done = rec.finish(Stamp::with_cpu(950, 1320));
    assert_eq!(node(&done, &[f]), (450, Some(20)));
}

#[test]
fn threads_merge_into_one_tree() {
    let mut p = Profile::default();
    let (m, t1) = fig4(&mut p);
    let (_, t2) = fig4(&mut p);
    p.threads.push(ThreadProfile::new("main", 1, t1));
    p.threads.push(ThreadProfile::new("worker-1", 12, t2));
    let all = p.merged();
    let node = |path: &[MethodId]| all.node(all.find(&kinds(path)).unwrap()).clone();
    assert_eq!(
        (
            node(&[m.f]).calls,
            node(&[m.f, m.h]).calls,
            node(&[m.f, m.g]).calls,
            node(&[m.f, m.g, m.h]).calls
        ),
        (2, 20, 20, 110)
    );
    assert_eq!(node(&[m.f]).total_ns, 2 * 589);
    assert_eq!(all.len(), 5);
    assert_eq!(p.hot_spots()[0].calls, 130);
}

#[test]
fn profiler_pauses_are_factored_out_of_open_frames() {
    // f -> g; while g runs, the profiler spends 1000 ns (wall) / 800 ns (CPU) on the
    // thread, e.g. instrumenting g's callees before g proceeds.
    let (f, g) = (MethodId(0), MethodId(1));
    let mut rec = ThreadRecorder::new(10);
    rec.enter(f, Stamp::with_cpu(0, 0));
    rec.enter(g, Stamp::with_cpu(10, 10));
    rec.adjust(Stamp::with_cpu(1000, 800));
    rec.exit(g, Stamp::with_cpu(1030, 830)).unwrap();
    rec.exit(f, Stamp::with_cpu(1040, 840)).unwrap();
    let tree = rec.finish(Stamp::wall(1040));
    let g_node = tree.node(tree.find(&kinds(&[f, g])).unwrap());
    assert_eq!((g_node.total_ns, g_node.cpu_ns), (20, Some(20)));
    let f_node = tree.node(tree.find(&kinds(&[f])).unwrap());
    assert_eq!((f_node.total_ns, f_node.cpu_ns), (40, Some(40)));
}

#[test]
fn probes_measured_by_themselves_are_charged_where_they_ran_and_subtracted() {
    // f calls g twice; g throws out of its second call, which f's exit probe closes. Each
    // stamp is its probe's start; an entry probe runs inside the frame it opens, an exit
    // probe inside the frame it returns to.
    let (f, g) = (MethodId(0), MethodId(1));
    let mut rec = ThreadRecorder::new(10);
    let at = |t, probe| Stamp::wall(t).by_probe(probe);
    rec.enter(f, at(0, 4));
    rec.enter(g, at(10, 3));
    rec.exit(g, at(20, 5)).unwrap();
    rec.enter(g, at(30, 3));
    // g's exception skips its exit probe; f's exit closes both frames.
    rec.exit(f, at(45, 6)).unwrap();
    let tree = rec.finish(Stamp::wall(50));
    let node = |p: &[MethodId]| tree.node(tree.find(&kinds(p)).unwrap()).clone();
    // f: its own entry probe and g's one exit probe; f's exit probe ran in the thread node.
    let (fn_, gn) = (node(&[f]), node(&[f, g]));
    assert_eq!((fn_.total_ns, fn_.probe_ns), (45, 4 + 5));
    assert_eq!((gn.calls, gn.total_ns, gn.probe_ns), (2, 10 + 15, 3 + 3));
    assert_eq!(tree.node(tree.root()).probe_ns, 0);
    let cal = Calibration {
        inner_ns: 1.0,
        outer_ns: 2.0,
    };
    let times = ferrofluid_profile::node_times(&tree, Some(&cal));
    let id = |p: &[MethodId]| tree.find(&kinds(p)).unwrap().index();
    // g: 25 measured, less 6 measured probe time and 2 inner costs.
    assert_eq!(
        times[id(&[f, g])],
        Times {
            total_ns: 17,
            self_ns: 17,
            overhead_ns: 2,
            total_overhead_ns: 2,
            probe_ns: 6,
            total_probe_ns: 6,
        }
    );
    // f: 45 - 25 = 20 measured self, less 9 measured, 1 inner and 2 outer costs.
    assert_eq!(
        times[id(&[f])],
        Times {
            total_ns: 6 + 17,
            self_ns: 6,
            overhead_ns: 5,
            total_overhead_ns: 7,
            probe_ns: 9,
            total_probe_ns: 15,
        }
    );
    // Uncompensated: the measured values, probes included.
    let raw = ferrofluid_profile::node_times(&tree, None);
    assert_eq!((raw[id(&[f])].self_ns, raw[id(&[f])].probe_ns), (20, 0));
}

#[test]
fn recording_keeps_threads_apart_and_snapshots_while_running() {
    let mut r = ferrofluid_profile::Recording::new(100);
    let f = r.methods.insert("A", "f", "()V");
    let g = r.methods.insert("A", "g", "()V");
    r.instrumented = 2;
    r.thread(1, "main").enter(f, Stamp::wall(0));
    r.thread(7, "worker").enter(g, Stamp::wall(5));
    r.thread(7, "ignored: known id")
        .exit(g, Stamp::wall(25))
        .unwrap();
    let snap = r.snapshot(Stamp::wall(100));
    let names: Vec<_> = snap
        .threads
        .iter()
        .map(|t| (t.name.as_str(), t.id))
        .collect();
    assert_eq!(names, vec![("main", 1), ("worker", 7)]);
    let main = &snap.threads[0].tree;
    assert_eq!(main.node(main.find(&kinds(&[f])).unwrap()).total_ns, 100);
    assert_eq!(snap.called(), 2);
    // The snapshot did not end main's frame.
    r.thread(1, "main").exit(f, Stamp::wall(150)).unwrap();
    let done = r.finish(Stamp::wall(200));
    let main = &done.threads[0].tree;
    assert_eq!(main.node(main.find(&kinds(&[f])).unwrap()).total_ns, 150);
    assert_eq!(
        done.threads[1]
            .tree
            .node(done.threads[1].tree.root())
            .total_ns,
        20
    );
}

#[test]
fn wide_nodes_find_their_children_again() {
    // 40 distinct callees (past the linear-scan width), each called twice.
    let root = MethodId(0);
    let mut s = Sim::new(1000);
    s.enter(root);
    for round in 0..2 {
        for i in 1..=40 {
            s.enter(MethodId(i));
            s.work(i as u64 + round);
            s.exit(MethodId(i));
        }
    }
    s.exit(root);
    let tree = s.finish();
    assert_eq!(tree.len(), 42);
    for i in 1..=40u32 {
        let n = tree.node(tree.find(&kinds(&[root, MethodId(i)])).unwrap());
        assert_eq!((n.calls, n.total_ns), (2, 2 * i as u64 + 1));
    }
}

/// `adaptive`'s choice: methods called at least `min_calls` times whose compensated time per
/// call is under a probe pair's cost (measured probe time per pair plus the calibrated rest).
#[test]
fn short_and_frequent_methods_take_less_than_their_probes() {
    let (r, s, l, t) = (MethodId(0), MethodId(1), MethodId(2), MethodId(3));
    let mut rec = ferrofluid_profile::Recording::new(100);
    rec.calibration = Some(Calibration {
        inner_ns: 2.0,
        outer_ns: 3.0,
    });
    let th = rec.thread(1, "main");
    // Every probe measures 10 ns of itself: 20 per pair, 25 with the rest.
    let at = |t, probe| Stamp::wall(t).by_probe(probe);
    let mut now = 0;
    th.enter(r, at(now, 10));
    let mut calls = |th: &mut ferrofluid_profile::ThreadRecorder, m, n, ns| {
        for _ in 0..n {
            now += 20;
            th.enter(m, at(now, 10));
            now += ns;
            th.exit(m, at(now, 10)).unwrap();
        }
    };
    // s: 30 measured per call, less its entry probe's 10 and the inner 2: 18 < 25.
    calls(th, s, 12, 30);
    // l: 488 per call.
    calls(th, l, 12, 500);
    // t: as short as s, but called 5 times only.
    calls(th, t, 5, 30);
    th.exit(r, at(now + 20, 10)).unwrap();
    assert_eq!(rec.short_and_frequent(10), [(s, 12)]);
    assert_eq!(rec.short_and_frequent(5), [(s, 12), (t, 5)]);
    // Without calibration nothing is compensated: s's 30 measured per call exceed the 20 its
    // probes measured per pair.
    rec.calibration = None;
    assert_eq!(rec.short_and_frequent(5), []);
}
