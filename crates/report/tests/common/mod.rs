//! Profiles used by the golden tests, built from probe events on a simulated clock.

use ferrofluid_profile::{
    Calibration, CallTree, MethodId, Profile, Stamp, ThreadProfile, ThreadRecorder,
};

/// A thread replaying probe events; time advances only through `work`.
pub struct Sim {
    pub rec: ThreadRecorder,
    pub t: u64,
    cpu: bool,
}

impl Sim {
    pub fn new(max_nodes: usize, cpu: bool) -> Self {
        Self {
            rec: ThreadRecorder::new(max_nodes),
            t: 0,
            cpu,
        }
    }
    fn stamp(&self) -> Stamp {
        if self.cpu {
            // CPU time runs at 3/4 of wall time in this fake thread.
            Stamp::with_cpu(self.t, self.t / 4 * 3)
        } else {
            Stamp::wall(self.t)
        }
    }
    pub fn enter(&mut self, m: MethodId) {
        let s = self.stamp();
        self.rec.enter(m, s);
    }
    pub fn exit(&mut self, m: MethodId) {
        let s = self.stamp();
        self.rec.exit(m, s).unwrap();
    }
    pub fn work(&mut self, ns: u64) {
        self.t += ns;
    }
    /// enter, work, exit.
    pub fn leaf(&mut self, m: MethodId, ns: u64) {
        self.enter(m);
        self.work(ns);
        self.exit(m);
    }
    pub fn finish(self) -> (CallTree, u64, u64) {
        let s = self.stamp();
        let (overflow, unmatched) = (self.rec.overflow_calls(), self.rec.unmatched_exits());
        (self.rec.finish(s), overflow, unmatched)
    }
}

/// The JP paper's Fig. 4 program with root f, in microseconds: h works 7 us, callers
/// work 1 us after each call, g 2 + 3 us around its loop, f 5 + 4 us around its loop.
pub fn fig4() -> Profile {
    const US: u64 = 1000;
    let mut p = Profile::default();
    let f = p.methods.insert("demo.Fig4", "f", "()V");
    let g = p.methods.insert("demo.Fig4", "g", "(I)V");
    let h = p.methods.insert("demo.Fig4", "h", "()V");
    let mut s = Sim::new(1000, false);
    s.enter(f);
    s.work(5 * US);
    for i in 1..=10 {
        s.leaf(h, 7 * US);
        s.work(US);
        s.enter(g);
        s.work(2 * US);
        for _ in 0..i {
            s.leaf(h, 7 * US);
            s.work(US);
        }
        s.work(3 * US);
        s.exit(g);
        s.work(US);
    }
    s.work(4 * US);
    s.exit(f);
    let (tree, _, _) = s.finish();
    p.threads.push(ThreadProfile::new("main", 1, tree));
    p.instrumented = 3;
    p.calibration = Some(Calibration {
        inner_ns: 150.0,
        outer_ns: 80.0,
    });
    p
}

/// A server-like profile: two threads, an exception unwinding three frames, recursion,
/// tiny callees below the cut-off, an overflow, an unmatched exit, thread CPU time and
/// names that need escaping.
pub fn sample() -> Profile {
    let mut p = Profile::default();
    let m = |p: &mut Profile, c: &str, n: &str, d: &str| p.methods.insert(c, n, d);
    let handle = m(&mut p, "com.acme.Server", "handle", "(Lcom/acme/Request;)V");
    let parse = m(
        &mut p,
        "com.acme.Request",
        "parse",
        "([B)Lcom/acme/Request;",
    );
    let render = m(&mut p, "com.acme.Report", "render", "(I)Ljava/lang/String;");
    let append = m(
        &mut p,
        "java.lang.StringBuilder",
        "append",
        "(Ljava/lang/String;)Ljava/lang/StringBuilder;",
    );
    let walk = m(&mut p, "com.acme.Tree", "walk", "(Lcom/acme/Node;)I");
    let check = m(&mut p, "com.acme.Auth", "check", "(Ljava/lang/String;)Z");
    let lookup = m(
        &mut p,
        "com.acme.Auth",
        "lookup",
        "(Ljava/lang/String;)Lcom/acme/User;",
    );
    let fail = m(&mut p, "com.acme.Auth", "fail", "()V");
    let tiny = m(&mut p, "com.acme.Util", "tiny", "()I");
    let run = m(&mut p, "com.acme.Worker", "run", "()V");
    let flush = m(&mut p, "com.acme.Worker", "flush", "()V");
    let ms = 1_000_000u64;

    let mut s = Sim::new(1000, false);
    for req in 0..3u64 {
        s.enter(handle);
        s.work(ms / 2);
        s.leaf(parse, 2 * ms + req * 100_000);
        // Auth: check -> lookup -> fail throws; caught in check (depth 2) after 0.3 ms.
        s.enter(check);
        s.work(100_000);
        s.enter(lookup);
        s.work(200_000);
        s.enter(fail);
        s.work(100_000);
        s.rec.unwind_to(2, Stamp::wall(s.t));
        s.work(50_000);
        s.exit(check);
        s.enter(render);
        for _ in 0..5 {
            s.leaf(append, 300_000);
        }
        s.work(ms);
        s.leaf(tiny, 2_000);
        s.exit(render);
        // walk recurses three levels.
        for _ in 0..3 {
            s.enter(walk);
            s.work(400_000);
        }
        for _ in 0..3 {
            s.exit(walk);
        }
        s.exit(handle);
    }
    let (tree, overflow, unmatched) = s.finish();
    let mut main = ThreadProfile::new("main", 1, tree);
    main.overflow_calls = overflow;
    main.unmatched_exits = unmatched;
    p.threads.push(main);

    // Worker: a node budget of 2 forces an overflow; one stray exit.
    let mut s = Sim::new(2, true);
    let _ = s.rec.exit(flush, Stamp::with_cpu(0, 0));
    s.enter(run);
    for _ in 0..4 {
        s.leaf(flush, 3 * ms);
        s.enter(render);
        s.leaf(append, ms);
        s.work(ms);
        s.exit(render);
    }
    s.exit(run);
    let (tree, overflow, unmatched) = s.finish();
    let mut worker = ThreadProfile::new("worker <1>;\"io\"", 12, tree);
    worker.overflow_calls = overflow;
    worker.unmatched_exits = unmatched;
    worker.cpu_ns = Some(s_cpu_total(&worker));
    p.threads.push(worker);

    p.instrumented = 14;
    p.calibration = Some(Calibration {
        inner_ns: 120.5,
        outer_ns: 60.25,
    });
    p.cpu_calibration = Some(Calibration {
        inner_ns: 80.5,
        outer_ns: 40.25,
    });
    p
}

fn s_cpu_total(t: &ThreadProfile) -> u64 {
    t.tree.node(t.tree.root()).cpu_ns.unwrap_or(0)
}

/// A whole-program profile led by idle JDK threads, as JFluid-style profilers show them without
/// telling: `main` works 40 ms (`run` → `compute`, 1,000 calls), "Finalizer" waits 510 ms in
/// `ReferenceQueue.remove` (on top: `Object.wait`) and "Reference Handler" 310 ms in
/// `processPendingReferences` (on top: the native `waitForReferencePendingList`), both found
/// blocked when the profile was taken. One method had its probes removed before a reset and
/// was not called since: no node shows it.
pub fn idle() -> Profile {
    const MS: u64 = 1_000_000;
    let mut p = Profile::default();
    let run = p.methods.insert("com.acme.Batch", "run", "()V");
    let compute = p.methods.insert("com.acme.Batch", "compute", "(I)J");
    let finalizer_run = p
        .methods
        .insert("java.lang.ref.Finalizer$FinalizerThread", "run", "()V");
    let remove = p.methods.insert(
        "java.lang.ref.ReferenceQueue",
        "remove",
        "(J)Ljava/lang/ref/Reference;",
    );
    let handler_run = p
        .methods
        .insert("java.lang.ref.Reference$ReferenceHandler", "run", "()V");
    let pending = p
        .methods
        .insert("java.lang.ref.Reference", "processPendingReferences", "()V");
    let gone = p.methods.insert("com.acme.Batch", "mask", "(I)I");
    p.probes_dropped.insert(gone);

    let mut main = Sim::new(100, false);
    main.enter(run);
    main.work(4 * MS);
    for _ in 0..1000 {
        main.leaf(compute, 36_000);
    }
    main.exit(run);
    let (tree, _, _) = main.finish();
    p.threads.push(ThreadProfile::new("main", 1, tree));

    let blocked = |outer, inner, work: u64, wait: u64| {
        let mut s = Sim::new(100, false);
        s.enter(outer);
        s.work(work);
        s.enter(inner);
        s.work(wait);
        let node = s.rec.innermost();
        (s.finish().0, node)
    };
    let (tree, node) = blocked(finalizer_run, remove, MS / 10, 510 * MS);
    let mut finalizer = ThreadProfile::new("Finalizer", 3, tree);
    finalizer.waiting = Some(ferrofluid_profile::Waiting {
        state: "waiting".into(),
        frame: "java.lang.Object.wait".into(),
        node,
    });
    let (tree, node) = blocked(handler_run, pending, MS / 20, 310 * MS);
    let mut handler = ThreadProfile::new("Reference Handler", 2, tree);
    handler.waiting = Some(ferrofluid_profile::Waiting {
        state: "native".into(),
        frame: "java.lang.ref.Reference.waitForReferencePendingList".into(),
        node,
    });
    p.threads.push(finalizer);
    p.threads.push(handler);
    p.instrumented = 7;
    p
}

/// An allocation profile as the `alloc` engine makes it: paths whose class leaves carry
/// objects, bytes, live, live bytes, survived and survived bytes; the class table; a leak suspect with its history.
#[allow(dead_code)] // not every test file uses every profile
pub fn alloc_paths() -> Profile {
    use ferrofluid_profile::alloc::{path_metrics, AllocSummary, ClassAlloc, Suspect, SuspectPath};
    use ferrofluid_profile::{CallTree, Mode, NodeId, NodeKind, ThreadProfile};
    let mut p = Profile::new(Mode::Alloc);
    p.extra_metrics = path_metrics();
    p.instrumented = 3;
    let mut m =
        |class: &str, name: &str, desc: &str| NodeKind::Method(p.methods.insert(class, name, desc));
    let main = m("demo.App", "main", "([Ljava/lang/String;)V");
    let remember = m("demo.Cache", "remember", "(I)V");
    let parse = m("demo.Parser", "parse", "(Ljava/lang/String;)V");
    let entry = m("demo.Cache$Entry", "", "");
    let longs = m("long[]", "", "");
    let chars = m("char[]", "", "");
    let mut gens = std::collections::BTreeMap::new();
    let mut tree = CallTree::with_width(6);
    let leaf = |tree: &mut CallTree, parent, kind, values: [u64; 6]| {
        let id = tree.add_child(parent, kind);
        tree.extra_mut(id).copy_from_slice(&values);
        id
    };
    let a = tree.add_child(NodeId::ROOT, main);
    let r = tree.add_child(a, remember);
    let e = leaf(
        &mut tree,
        r,
        entry,
        [1000, 24_000, 900, 21_600, 800, 19_200],
    );
    gens.insert((0, e), 6);
    let l = leaf(&mut tree, r, longs, [1000, 80_000, 0, 0, 0, 0]);
    gens.insert((0, l), 1);
    let q = tree.add_child(a, parse);
    leaf(&mut tree, q, chars, [500, 20_000, 10, 400, 10, 400]);
    p.threads.push(ThreadProfile::new("main", 1, tree));
    let mut tree = CallTree::with_width(6);
    let q = tree.add_child(NodeId::ROOT, parse);
    leaf(&mut tree, q, chars, [300, 12_000, 0, 0, 0, 0]);
    p.threads.push(ThreadProfile::new("worker-1", 2, tree));
    let class = |class: &str,
                 allocated,
                 allocated_bytes,
                 tracked,
                 live: u64,
                 live_bytes: u64,
                 survived: u64,
                 avg_age,
                 generations| ClassAlloc {
        class: class.into(),
        allocated,
        allocated_bytes,
        tracked,
        live,
        live_bytes,
        // Bytes in proportion, as the tracked objects of one class have one size.
        survived_bytes: (live_bytes * survived).checked_div(live).unwrap_or(0),
        survived,
        avg_age,
        generations,
    };
    p.alloc = Some(AllocSummary {
        track_every: 10,
        gc_count: 12,
        classes: vec![
            class("long[]", 1000, 80_000, 100, 0, 0, 0, 0.0, 0),
            class("char[]", 800, 32_000, 80, 10, 400, 10, 1.0, 1),
            class(
                "demo.Cache$Entry",
                1000,
                24_000,
                100,
                900,
                21_600,
                800,
                4.5,
                6,
            ),
        ],
        suspects: vec![Suspect {
            class: "demo.Cache$Entry".into(),
            generations: 6,
            growth: 5,
            history: vec![0, 1, 2, 2, 4, 6],
            paths: vec![SuspectPath {
                frames: vec!["demo.App.main".into(), "demo.Cache.remember".into()],
                live: 90,
                survived: 80,
                survived_bytes: 1920,
                generations: 6,
            }],
        }],
        path_generations: gens,
        ..AllocSummary::default()
    });
    p
}

/// A `native` profile with roots, as the native engine records it inside a root's extent, in
/// microseconds: three requests of a server each read a socket (2 ms in native code), compress
/// (50 us of bytecode around a 300 us native deflate) and transform through a native that calls
/// back into Java twice (10 us of bytecode each); a worker sleeps 5 ms. The natives not measured
/// are a JIT intrinsic, one loaded before the agent and one whose wrapper failed.
#[allow(dead_code)] // not every test file uses every profile
pub fn native() -> Profile {
    use ferrofluid_profile::native::{self, reason, NativeSummary, NotMeasured, UPCALLS};
    use ferrofluid_profile::{Mode, NodeKind};
    const US: u64 = 1000;
    let mut p = Profile::new(Mode::Native);
    p.extra_metrics = native::metrics(false);
    let handle = p
        .methods
        .insert("demo.Server", "handle", "(Ljava/net/Socket;)V");
    let read = p.methods.insert(
        "java.net.SocketInputStream",
        "socketRead0",
        "(Ljava/io/FileDescriptor;[BIII)I",
    );
    let compress = p.methods.insert("demo.Codec", "compress", "([B)[B");
    let deflate = p.methods.insert(
        "java.util.zip.Deflater",
        "deflateBytesBytes",
        "(J[BII[BIII)J",
    );
    let transform = p.methods.insert("demo.Native", "transform", "([B)I");
    let each = p.methods.insert("demo.Native", "each", "(I)V");
    let run = p.methods.insert("demo.Worker", "run", "()V");
    let sleep = p.methods.insert("java.lang.Thread", "sleep", "(J)V");

    let mut s = Sim::new(1000, false);
    for _ in 0..3 {
        s.enter(handle);
        s.work(100 * US);
        s.leaf(read, 2000 * US);
        s.enter(compress);
        s.work(50 * US);
        s.leaf(deflate, 300 * US);
        s.work(20 * US);
        s.exit(compress);
        s.enter(transform);
        s.work(40 * US);
        for _ in 0..2 {
            s.leaf(each, 10 * US);
            s.work(5 * US);
        }
        s.work(30 * US);
        s.exit(transform);
        s.exit(handle);
    }
    let (mut tree, _, _) = s.finish();
    tree.widen(p.extra_metrics.len());
    let upcalls = p
        .extra_metrics
        .iter()
        .position(|m| m.name == UPCALLS)
        .unwrap();
    let at = tree
        .find(&[NodeKind::Method(handle), NodeKind::Method(transform)])
        .unwrap();
    tree.extra_mut(at)[upcalls] = 6;
    p.threads.push(ThreadProfile::new("main", 1, tree));

    let mut s = Sim::new(1000, false);
    s.enter(run);
    s.leaf(sleep, 5000 * US);
    s.work(1000 * US);
    s.exit(run);
    let (mut tree, _, _) = s.finish();
    tree.widen(p.extra_metrics.len());
    p.threads.push(ThreadProfile::new("worker-1", 7, tree));

    p.instrumented = 8;
    p.calibration = Some(Calibration {
        inner_ns: 100.0,
        outer_ns: 50.0,
    });
    let not_measured =
        |class: &str, method: &str, descriptor: &str, why: &str, detail: Option<&str>| {
            NotMeasured {
                class: class.into(),
                method: method.into(),
                descriptor: descriptor.into(),
                reason: why.into(),
                detail: detail.map(Into::into),
            }
        };
    p.native = Some(NativeSummary {
        natives: [read, deflate, transform, sleep].into(),
        not_measured: vec![
            not_measured(
                "java.lang.System",
                "arraycopy",
                "(Ljava/lang/Object;ILjava/lang/Object;II)V",
                reason::INTRINSIC,
                None,
            ),
            not_measured(
                "java.lang.Object",
                "wait",
                "(J)V",
                reason::LOADED_BEFORE_AGENT,
                None,
            ),
            not_measured(
                "demo.Huge",
                "compute",
                "()V",
                reason::NOT_WRAPPED,
                Some("constant pool full"),
            ),
        ],
        unattributed_upcalls: 0,
    });
    p.set_native_metrics();
    p
}
