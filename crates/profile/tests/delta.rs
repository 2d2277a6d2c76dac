//! `Profile::since`: the profile of an interval between two snapshots of one recording.

use ferrofluid_profile::alloc::{path_metrics, LIVE};
use ferrofluid_profile::region::{Bucket, Percentiles, RegionStats, Uncompensated};
use ferrofluid_profile::{
    CallTree, Metric, Mode, NodeId, NodeKind, Profile, Recording, Stamp, ThreadProfile,
};

/// Per context path (frame names), the calls, measured total and self times of `profile`'s
/// thread `name`.
fn contexts(profile: &Profile, name: &str) -> Vec<(String, u64, u64, u64)> {
    let thread = profile.threads.iter().find(|t| t.name == name).unwrap();
    let tree = &thread.tree;
    let times = profile.times(tree);
    tree.ids()
        .skip(1)
        .map(|id| {
            let path: Vec<String> = tree
                .path(id)
                .iter()
                .map(|k| match k {
                    NodeKind::Method(m) => profile.methods.get(*m).unwrap().method.clone(),
                    other => format!("{other:?}"),
                })
                .collect();
            let n = tree.node(id);
            (
                path.join(";"),
                n.calls,
                n.total_ns,
                times[id.index()].self_ns,
            )
        })
        .collect()
}

#[test]
fn an_interval_holds_what_ran_between_two_snapshots() {
    let mut rec = Recording::new(1_000);
    let main = rec
        .methods
        .insert("demo.App", "main", "([Ljava/lang/String;)V");
    let f = rec.methods.insert("demo.App", "f", "()V");
    let g = rec.methods.insert("demo.App", "g", "()V");
    let t = rec.thread(1, "main");
    t.enter(main, Stamp::wall(0));
    t.enter(f, Stamp::wall(10));
    t.exit(f, Stamp::wall(30)).unwrap();
    // `g` is open across the first snapshot, at 100.
    t.enter(g, Stamp::wall(90));
    let first = rec.snapshot(Stamp::wall(100));
    let t = rec.thread(1, "main");
    t.exit(g, Stamp::wall(130)).unwrap();
    t.enter(f, Stamp::wall(140));
    t.exit(f, Stamp::wall(150)).unwrap();
    // A second thread starts after the first snapshot.
    let w = rec.thread(2, "worker");
    w.enter(g, Stamp::wall(160));
    w.exit(g, Stamp::wall(170)).unwrap();
    let second = rec.snapshot(Stamp::wall(200));

    assert_eq!(
        contexts(&first, "main"),
        [
            ("main".into(), 1, 100, 70),
            ("main;f".into(), 1, 20, 20),
            ("main;g".into(), 1, 10, 10),
        ]
    );
    let interval = second.since(&first);
    // main: 100 more ns, of which f 10 and g 30; g's call counted in the first interval.
    assert_eq!(
        contexts(&interval, "main"),
        [
            ("main".into(), 0, 100, 60),
            ("main;f".into(), 1, 10, 10),
            ("main;g".into(), 0, 30, 30),
        ]
    );
    assert_eq!(contexts(&interval, "worker"), [("g".into(), 1, 10, 10)]);
    // Nothing ran: an empty interval. From an empty profile: everything.
    assert!(second.since(&second).threads.is_empty());
    assert_eq!(second.since(&Profile::default()), second);
    // The intervals add up to the whole.
    for thread in ["main", "worker"] {
        let whole = contexts(&second, thread);
        let parts = |p: &Profile| {
            if p.threads.iter().any(|t| t.name == thread) {
                contexts(p, thread)
            } else {
                Vec::new()
            }
        };
        let (a, b) = (parts(&first), parts(&interval));
        for (path, calls, total, own) in whole {
            let get = |v: &[(String, u64, u64, u64)]| {
                v.iter()
                    .find(|c| c.0 == path)
                    .map_or((0, 0, 0), |c| (c.1, c.2, c.3))
            };
            let (x, y) = (get(&a), get(&b));
            assert_eq!(
                (x.0 + y.0, x.1 + y.1, x.2 + y.2),
                (calls, total, own),
                "{path}"
            );
        }
    }
}

#[test]
fn contexts_unchanged_since_are_left_out_and_methods_match_by_name() {
    let tree = |calls: [u64; 2]| {
        let mut p = Profile::new(Mode::Count);
        p.extra_metrics.push(Metric::new("bytecodes", "count"));
        // The later snapshot lists its methods in another order.
        let (a, b) = if calls[0] == 1 {
            let a = p.methods.insert("demo.A", "a", "()V");
            (a, p.methods.insert("demo.A", "b", "()V"))
        } else {
            let b = p.methods.insert("demo.A", "b", "()V");
            (p.methods.insert("demo.A", "a", "()V"), b)
        };
        let mut t = CallTree::with_width(1);
        let na = t.add_child(NodeId::ROOT, NodeKind::Method(a));
        let nb = t.add_child(na, NodeKind::Method(b));
        let nc = t.add_child(NodeId::ROOT, NodeKind::Method(b));
        t.node_mut(na).calls = 1;
        t.extra_mut(na)[0] = 10;
        t.node_mut(nb).calls = calls[0];
        t.extra_mut(nb)[0] = 100 * calls[0];
        t.node_mut(nc).calls = calls[1];
        t.extra_mut(nc)[0] = 7;
        p.threads.push(ThreadProfile::new("main", 1, t));
        p
    };
    let first = tree([1, 2]);
    let second = tree([5, 2]);
    let interval = second.since(&first);
    let t = &interval.threads[0].tree;
    // a (nothing of its own, kept as b's caller) → b: 4 calls, 400 bytecodes; c: nothing.
    assert_eq!(t.len(), 3);
    let a = t.node(NodeId::ROOT).children()[0];
    let b = t.node(a).children()[0];
    assert_eq!((t.node(a).calls, t.extra(a)[0]), (0, 0));
    assert_eq!((t.node(b).calls, t.extra(b)[0]), (4, 400));
    let name = |id: NodeId| {
        let NodeKind::Method(m) = t.node(id).kind else {
            panic!()
        };
        interval.methods.get(m).unwrap().method.clone()
    };
    assert_eq!((name(a), name(b)), ("a".into(), "b".into()));
}

#[test]
fn allocation_gauges_stay_and_threads_match_by_name() {
    let snapshot = |objects: u64, live: u64, id: u64| {
        let mut p = Profile::new(Mode::Alloc);
        p.extra_metrics = path_metrics();
        let m = p.methods.insert("demo.A", "make", "()V");
        let class = p.methods.insert("byte[]", "", "");
        let mut t = CallTree::with_width(4);
        let n = t.add_child(NodeId::ROOT, NodeKind::Method(m));
        let leaf = t.add_child(n, NodeKind::Method(class));
        t.extra_mut(leaf)
            .copy_from_slice(&[objects, objects * 16, live, live * 16]);
        // The alloc engine numbers its threads in name order, afresh in each snapshot.
        p.threads.push(ThreadProfile::new("pool-1", id, t));
        p
    };
    let first = snapshot(10, 8, 1);
    let second = snapshot(25, 3, 2);
    let interval = second.since(&first);
    assert_eq!(interval.extra_metrics[2].name, LIVE);
    let t = &interval.threads[0].tree;
    let leaf = NodeId::ROOT;
    let leaf = t.node(t.node(leaf).children()[0]).children()[0];
    // Allocated: 15 more objects, 240 more bytes; live: 3 objects now.
    assert_eq!(t.extra(leaf), [15, 240, 3, 48]);
    assert_eq!(interval.threads[0].id, 2);
}

#[test]
fn region_counts_sums_and_bars_subtract() {
    let region = |count: u64, total_ns: u64, bars: &[(u64, u64)]| RegionStats {
        class: "demo.Work".into(),
        method: "step".into(),
        descriptor: "()V".into(),
        count,
        threads: 2,
        total_ns,
        min_ns: 3,
        max_ns: 40,
        percentiles: Percentiles {
            p50_ns: 5,
            p90_ns: 20,
            p99_ns: 40,
            p999_ns: 40,
        },
        distribution: bars
            .iter()
            .map(|&(le_ns, count)| Bucket { le_ns, count })
            .collect(),
        last_ns: vec![5, 40],
        uncompensated: Uncompensated {
            total_ns: total_ns + count,
            ..Default::default()
        },
        ..Default::default()
    };
    let profile = |r: Vec<RegionStats>| Profile {
        mode: Mode::Region,
        regions: Some(r),
        ..Default::default()
    };
    let first = profile(vec![region(3, 30, &[(5, 2), (10, 1)])]);
    let second = profile(vec![region(5, 100, &[(5, 2), (10, 1), (20, 1), (50, 1)])]);
    let interval = second.since(&first);
    let r = &interval.regions.as_ref().unwrap()[0];
    assert_eq!((r.count, r.total_ns, r.uncompensated.total_ns), (2, 70, 72));
    let bars: Vec<(u64, u64)> = r.distribution.iter().map(|b| (b.le_ns, b.count)).collect();
    assert_eq!(bars, [(20, 1), (50, 1)]);
    assert_eq!(
        (r.min_ns, r.max_ns, r.percentiles),
        (0, 0, Percentiles::default())
    );
    assert!(r.last_ns.is_empty());
    // A region method with nothing in the interval is left out.
    assert!(second.since(&second).regions.unwrap().is_empty());
}
