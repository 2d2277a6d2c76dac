//! The `native` mode's model: the bytecode/native split per thread and in total, the native
//! methods merged over threads and contexts, compensated as the CPU mode's times are, and the
//! JSON document (`"mode":"native"`, per thread `bytecode_ns`/`native_ns`, top-level `natives`)
//! read back into the same profile.

use ferrofluid_profile::native::{self, reason, NativeSummary, NotMeasured, NATIVE_TIME, UPCALLS};
use ferrofluid_profile::{
    Calibration, CallTree, MethodId, Mode, NodeId, NodeKind, Profile, ThreadProfile,
};

/// Adds a node of `m` under `parent`: `calls`, measured `total_ns`, direct callees' probe pairs.
fn node(
    tree: &mut CallTree,
    parent: NodeId,
    m: MethodId,
    calls: u64,
    total_ns: u64,
    outer: u64,
) -> NodeId {
    let id = tree.add_child(parent, NodeKind::Method(m));
    let n = tree.node_mut(id);
    n.calls = calls;
    n.total_ns = total_ns;
    n.outer_calls = outer;
    id
}

/// Two threads: `main` reads a file through a native that calls back into Java 10 times (the
/// callback inflating through another native) and sleeps twice; `worker` sleeps once. Probe
/// pairs cost 10 ns inside a frame and 5 ns in its caller. With `cpu`, thread CPU times too.
fn profile(cpu: bool) -> Profile {
    let mut p = Profile::new(Mode::Native);
    p.extra_metrics = native::metrics(cpu);
    let read = p
        .methods
        .insert("java.io.FileInputStream", "readBytes", "([BII)I");
    let run = p.methods.insert("demo.Callback", "run", "()V");
    let inflate = p.methods.insert(
        "java.util.zip.Inflater",
        "inflateBytesBytes",
        "(J[BII[BII)J",
    );
    let sleep = p.methods.insert("java.lang.Thread", "sleep", "(J)V");
    let upcalls = p
        .extra_metrics
        .iter()
        .position(|m| m.name == UPCALLS)
        .unwrap();

    let mut main = CallTree::with_width(p.extra_metrics.len());
    main.node_mut(NodeId::ROOT).total_ns = 1_000_000;
    main.node_mut(NodeId::ROOT).outer_calls = 102;
    let r = node(&mut main, NodeId::ROOT, read, 100, 500_000, 10);
    main.extra_mut(r)[upcalls] = 10;
    let u = node(&mut main, r, run, 10, 50_000, 5);
    let i = node(&mut main, u, inflate, 5, 20_000, 0);
    let s = node(&mut main, NodeId::ROOT, sleep, 2, 300_000, 0);
    if cpu {
        for (id, ns) in [
            (NodeId::ROOT, 600_000),
            (r, 200_000),
            (u, 40_000),
            (i, 18_000),
            (s, 1_000),
        ] {
            main.node_mut(id).cpu_ns = Some(ns);
        }
    }
    let mut main = ThreadProfile::new("main", 1, main);
    main.cpu_ns = cpu.then_some(600_000);
    p.threads.push(main);

    let mut worker = CallTree::with_width(p.extra_metrics.len());
    worker.node_mut(NodeId::ROOT).total_ns = 400_000;
    worker.node_mut(NodeId::ROOT).outer_calls = 1;
    let s = node(&mut worker, NodeId::ROOT, sleep, 1, 200_000, 0);
    if cpu {
        worker.node_mut(NodeId::ROOT).cpu_ns = Some(3_000);
        worker.node_mut(s).cpu_ns = Some(500);
    }
    let mut worker = ThreadProfile::new("worker", 2, worker);
    worker.cpu_ns = cpu.then_some(3_000);
    p.threads.push(worker);

    p.instrumented = 3;
    p.calibration = Some(Calibration {
        inner_ns: 10.0,
        outer_ns: 5.0,
    });
    p.native = Some(NativeSummary {
        natives: [read, inflate, sleep].into(),
        not_measured: vec![
            NotMeasured {
                class: "java.lang.System".into(),
                method: "arraycopy".into(),
                descriptor: "(Ljava/lang/Object;ILjava/lang/Object;II)V".into(),
                reason: reason::INTRINSIC.into(),
                detail: None,
            },
            NotMeasured {
                class: "java.lang.Object".into(),
                method: "wait".into(),
                descriptor: "(J)V".into(),
                reason: reason::LOADED_BEFORE_AGENT.into(),
                detail: None,
            },
        ],
        unattributed_upcalls: 3,
    });
    p.set_native_metrics();
    p
}

#[test]
fn native_time_is_native_frames_compensated_self_time_and_bytecode_the_rest() {
    let p = profile(false);
    // main: readBytes 500000 - 50000 (its upcall) - 100 calls x 10 - 10 upcall pairs x 5;
    // inflate 20000 - 5 x 10; sleep 300000 - 2 x 10.
    let main = p.native_split(0);
    assert_eq!(main.native_ns, 448_950 + 19_950 + 299_980);
    // The thread's own 200000 - 102 x 5, and the callback's 30000 - 10 x 10 - 5 x 5.
    assert_eq!(main.bytecode_ns, 199_490 + 29_875);
    assert_eq!((main.bytecode_cpu_ns, main.native_cpu_ns), (None, None));
    let worker = p.native_split(1);
    assert_eq!((worker.bytecode_ns, worker.native_ns), (199_995, 199_990));
    let total = p.native_total();
    assert_eq!((total.bytecode_ns, total.native_ns), (429_360, 968_870));
    // Every thread's time is split, nothing lost: the trees' compensated totals.
    let whole: u64 = p.threads.iter().map(|t| p.times(&t.tree)[0].total_ns).sum();
    assert_eq!(total.total_ns(), whole);
    // The metric `native_time` adds up to the same.
    let i = p.metric_index(NATIVE_TIME).unwrap();
    assert_eq!(p.metric_totals().totals[i], 968_870);
}

#[test]
fn native_methods_merge_threads_and_contexts_with_their_upcalls() {
    let p = profile(false);
    let rows = p.native_rows();
    let name = |m: MethodId| p.methods.get(m).unwrap().method.clone();
    let summary: Vec<(String, u64, u64, u64, usize)> = rows
        .iter()
        .map(|r| (name(r.method), r.calls, r.native_ns, r.upcalls, r.threads))
        .collect();
    assert_eq!(
        summary,
        [
            ("sleep".to_owned(), 3, 299_980 + 199_990, 0, 2),
            ("readBytes".to_owned(), 100, 448_950, 10, 1),
            ("inflateBytesBytes".to_owned(), 5, 19_950, 0, 1),
        ]
    );
    assert_eq!(
        rows[1]
            .targets
            .iter()
            .map(|&(m, c)| (name(m), c))
            .collect::<Vec<_>>(),
        [("run".to_owned(), 10)]
    );
    assert!(p.is_native_frame(NodeKind::Method(rows[0].method)));
    assert!(!p.is_native_frame(NodeKind::Thread));
}

#[test]
fn thread_cpu_time_splits_the_same_way() {
    let p = profile(true);
    let names: Vec<String> = p.metrics().iter().map(ToString::to_string).collect();
    assert_eq!(
        names,
        [
            "calls/count",
            "time/nanoseconds",
            "cpu_time/nanoseconds",
            "native_time/nanoseconds",
            "upcalls/count",
            "native_cpu_time/nanoseconds"
        ]
    );
    // readBytes 200000 - 40000, inflate 18000, sleep 1000 (measured: no CPU calibration).
    let main = p.native_split(0);
    assert_eq!(main.native_cpu_ns, Some(179_000));
    assert_eq!(main.bytecode_cpu_ns, Some(600_000 - 179_000));
    let total = p.native_total();
    assert_eq!(total.native_cpu_ns, Some(179_500));
    assert_eq!(total.bytecode_cpu_ns, Some(421_000 + 2_500));
    assert_eq!(p.native_rows()[0].native_cpu_ns, Some(1_500));
}

#[test]
fn the_document_has_the_split_and_the_natives_and_reads_back_the_same() {
    for cpu in [false, true] {
        let p = profile(cpu);
        let mut bytes = Vec::new();
        p.write_json(&mut bytes).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["mode"], "native");
        assert_eq!(v["bytecode_ns"], 429_360);
        assert_eq!(v["native_ns"], 968_870);
        assert_eq!(v["threads"][0]["bytecode_ns"], 229_365);
        assert_eq!(v["threads"][0]["native_ns"], 768_880);
        assert_eq!(v["threads"][1]["native_ns"], 199_990);
        let read = &v["natives"][1];
        assert_eq!(
            (
                &read["class"],
                &read["method"],
                &read["calls"],
                &read["native_ns"],
                &read["upcalls"]
            ),
            (
                &"java.io.FileInputStream".into(),
                &"readBytes".into(),
                &100.into(),
                &448_950.into(),
                &10.into()
            )
        );
        assert_eq!(
            read["upcall_targets"],
            serde_json::json!([{"class": "demo.Callback", "method": "run", "descriptor": "()V", "calls": 10}])
        );
        assert_eq!(v["not_measured"][0]["reason"], "intrinsic");
        assert_eq!(v["unattributed_upcalls"], 3);
        // Nodes: a native frame's own native time and upcalls; the probe bookkeeping of a
        // probe-timed mode.
        let node = &v["threads"][0]["root"]["children"][0];
        assert_eq!(
            (&node["native_time"], &node["upcalls"]),
            (&448_950.into(), &10.into())
        );
        assert_eq!(node["outer_calls"], 10);
        assert_eq!(v["threads"][0]["root"]["outer_calls"], 102);
        if cpu {
            assert_eq!(v["native_cpu_ns"], 179_500);
            assert_eq!(v["threads"][0]["bytecode_cpu_ns"], 421_000);
        } else {
            assert!(v.get("native_cpu_ns").is_none());
        }
        let back = Profile::from_json_slice(&bytes).unwrap();
        assert_eq!(back, p, "cpu: {cpu}");
    }
}

/// A document that declares no metrics gets the mode's defaults, and one without `natives`
/// has no native frames but still splits its threads' time.
#[test]
fn defaults_of_a_minimal_native_document() {
    let doc = r#"{"format":"ferrofluid","version":1,"mode":"native",
        "methods":{"instrumented":1,"called":1},
        "threads":[{"name":"t","id":3,"root":{"kind":"thread","class":"","method":"<thread>",
          "descriptor":"","calls":0,"total_ns":100,"self_ns":40,
          "children":[{"class":"A","method":"n","descriptor":"()V","calls":2,"total_ns":60,
            "self_ns":60,"native_time":60,"children":[]}]}}]}"#;
    let p = Profile::from_json_slice(doc.as_bytes()).unwrap();
    let names: Vec<String> = p.metrics().iter().map(ToString::to_string).collect();
    assert_eq!(
        names,
        [
            "calls/count",
            "time/nanoseconds",
            "native_time/nanoseconds",
            "upcalls/count"
        ]
    );
    let split = p.native_split(0);
    assert_eq!((split.bytecode_ns, split.native_ns), (40, 60));
    assert!(p.native_rows().is_empty());
}

/// A thread's time alive while the profile recorded makes its bytecode time: all of it less
/// its native time, the bytecode between native calls included; its CPU time likewise. The
/// document keeps it (`alive_ns`, `alive_cpu_ns`); without it the split is the tree's.
#[test]
fn a_thread_alive_longer_than_its_native_calls_ran_bytecode_the_rest() {
    let mut p = profile(true);
    let tree = p.native_split(0);
    p.threads[0].alive = Some(ferrofluid_profile::Alive {
        wall_ns: 5_000_000,
        cpu_ns: Some(3_000_000),
    });
    let split = p.native_split(0);
    assert_eq!(
        (split.native_ns, split.native_cpu_ns),
        (tree.native_ns, tree.native_cpu_ns)
    );
    assert_eq!(split.bytecode_ns, 5_000_000 - tree.native_ns);
    assert_eq!(
        split.bytecode_cpu_ns,
        Some(3_000_000 - tree.native_cpu_ns.unwrap())
    );
    let mut bytes = Vec::new();
    p.write_json(&mut bytes).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["threads"][0]["alive_ns"], 5_000_000);
    assert_eq!(v["threads"][0]["alive_cpu_ns"], 3_000_000);
    assert_eq!(v["threads"][0]["bytecode_ns"], split.bytecode_ns);
    assert_eq!(v["threads"][1].get("alive_ns"), None);
    assert_eq!(Profile::from_json_slice(&bytes).unwrap(), p);

    // A thread that made no native call: all bytecode.
    let doc = r#"{"format":"ferrofluid","version":1,"mode":"native",
        "methods":{"instrumented":0,"called":0},
        "threads":[{"name":"u","id":4,"alive_ns":500,"root":{"kind":"thread","class":"",
          "method":"<thread>","descriptor":"","calls":0,"total_ns":0,"self_ns":0,
          "children":[]}}]}"#;
    let p = Profile::from_json_slice(doc.as_bytes()).unwrap();
    let split = p.native_split(0);
    assert_eq!((split.bytecode_ns, split.native_ns), (500, 0));
}

/// `set_alive` makes the thread node's time (and CPU time) the time alive where the tree
/// measured less, and never lowers it.
#[test]
fn setting_a_thread_s_time_alive_stretches_its_thread_node() {
    let mut p = profile(true);
    let root = p.threads[0].tree.node(NodeId::ROOT).total_ns;
    p.threads[0].set_alive(ferrofluid_profile::Alive {
        wall_ns: root + 500,
        cpu_ns: Some(7_000_000),
    });
    let node = p.threads[0].tree.node(NodeId::ROOT);
    assert_eq!((node.total_ns, node.cpu_ns), (root + 500, Some(7_000_000)));
    assert_eq!(p.threads[0].cpu_ns, Some(7_000_000));
    p.threads[1].set_alive(ferrofluid_profile::Alive {
        wall_ns: 1,
        cpu_ns: None,
    });
    assert!(p.threads[1].tree.node(NodeId::ROOT).total_ns > 1);
}
