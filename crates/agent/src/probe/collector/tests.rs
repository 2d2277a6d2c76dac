//! The collector's unit tests.

use super::*;
use crate::probe::recorder::{bench_method, prime_thread};
use crate::probe::thread::{begin_word, thread_cpu};

/// The recording probes (the `cpu` engine's) of method `id`, as its natives call them.
fn enter(id: u32) {
    crate::probe::recorder::enter(std::ptr::null_mut(), id as i32, clock::ticks());
}

fn exit(id: u32) {
    crate::probe::recorder::exit(std::ptr::null_mut(), id as i32, clock::ticks());
}

fn pair(id: u32) {
    enter(id);
    exit(id);
}

/// With no collector thread, a thread that fills its ring three times over empties it
/// itself: nothing is dropped and the counts are exact; with the CPU clock too, whose
/// events take two slots. One test: the collector and the `cpu` switch are global.
#[test]
fn a_full_ring_is_drained_by_its_own_thread() {
    let _engine = crate::testing::SERIAL
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    drain_own_ring(false);
    drain_own_ring(true);
}

/// A root already running when collecting starts is not recorded, nor are its callees
/// (they would show at the top of the tree, their root's exit unmatched); its next call is.
#[test]
fn a_root_running_when_collecting_starts_is_recorded_from_its_next_call() {
    let _engine = crate::testing::SERIAL
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let (root, leaf) = (4_000_011, 4_000_012);
    bench_method(root, true);
    bench_method(leaf, false);
    let name = "in-flight-root";
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            prime_thread(name);
            enter(root);
            start(None, None, None);
            pair(leaf);
            exit(root);
            pair(leaf);
            enter(root);
            pair(leaf);
            pair(leaf);
            exit(root);
        })
        .unwrap()
        .join()
        .unwrap();
    stop();
    let (profile, _) = snapshot(|_| HashMap::new(), &[]).unwrap();
    let doc = serde_json::to_value(profile.to_document()).unwrap();
    let thread = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap()
        .clone();
    reset();
    let top = thread["root"]["children"].as_array().unwrap();
    assert_eq!(top.len(), 1, "{thread}");
    assert_eq!(top[0]["calls"], 1, "{thread}");
    assert_eq!(top[0]["children"][0]["calls"], 2, "{thread}");
    assert_eq!(thread.get("unmatched_exits"), None, "{thread}");
}

/// The profile document's thread named `name`.
fn thread_named(profile: &Profile, name: &str) -> serde_json::Value {
    let doc = serde_json::to_value(profile.to_document()).unwrap();
    doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no thread {name}: {doc}"))
        .clone()
}

/// The method names of a profile node's children, with their calls.
fn children(node: &serde_json::Value) -> Vec<(String, u64)> {
    node["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let name = c["method"].as_str().unwrap().to_owned();
            (name, c["calls"].as_u64().unwrap())
        })
        .collect()
}

/// A fresh recording takes a ring's events from its thread's first mark of the
/// recording's epoch on: events before any mark or after a mark of an older epoch (a
/// thread that went on recording while collecting restarted) are not its own, and would
/// open frames that never close. A recording that lost events after its mark has its open
/// frames closed, and what its thread pushes until its next mark does not count.
#[test]
fn a_recording_takes_only_its_own_epoch_and_closes_what_a_loss_left_open() {
    let (r, a, l) = (4_000_021, 4_000_022, 4_000_023);
    let (name_r, name_a, name_l) = ("method#4000021", "method#4000022", "method#4000023");
    let mut c = Collector::new();
    c.epoch = 5;
    let ring = Ring::with_capacity(77, "epochs".into(), 16);
    let wait = Duration::ZERO;
    let push = |kind: Kind, id: u32, ns: u64| ring.push_within(kind, id, ns, wait, || {});
    let mark = |epoch: u32, dropped: u64| {
        assert!(push(Kind::Adjust, BEGIN_ID, begin_word(epoch, dropped)));
    };
    // Before any mark, then a recording of epoch 4: not this recording's.
    assert!(push(Kind::Enter, a, 10));
    mark(4, 0);
    assert!(push(Kind::Enter, r, 20));
    assert!(push(Kind::Enter, a, 30));
    c.drain_ring(&ring);
    assert!(!c.recording.has_thread(77));
    // Epoch 5: counted.
    mark(5, 0);
    for (kind, id, ns) in [
        (Kind::Enter, r, 100),
        (Kind::Enter, a, 110),
        (Kind::Exit, a, 120),
        (Kind::Exit, r, 130),
    ] {
        assert!(push(kind, id, ns));
    }
    c.drain_ring(&ring);
    // A recording that loses an event: `r` and `a` open, the ring full, one dropped.
    mark(5, 0);
    assert!(push(Kind::Enter, r, 200));
    assert!(push(Kind::Enter, a, 210));
    let mut ns = 220;
    while push(Kind::Enter, l, ns) && push(Kind::Exit, l, ns + 5) {
        ns += 10;
    }
    assert!(ring.dropped() > 0);
    c.drain_ring(&ring);
    // What the thread pushes after the loss, before its next mark: not counted.
    assert!(push(Kind::Exit, a, 900));
    assert!(push(Kind::Enter, l, 910));
    c.drain_ring(&ring);
    mark(5, ring.dropped());
    assert!(push(Kind::Enter, r, 1000));
    assert!(push(Kind::Exit, r, 1010));
    c.drain_ring(&ring);
    let thread = thread_named(&c.recording.snapshot(Stamp::wall(2000)), "epochs");
    assert_eq!(thread.get("unmatched_exits"), None, "{thread}");
    let root = &thread["root"];
    assert_eq!(children(root), [(name_r.to_owned(), 3)], "{thread}");
    let r_node = &root["children"][0];
    assert_eq!(children(r_node), [(name_a.to_owned(), 2)], "{thread}");
    let a_node = &r_node["children"][0];
    let leaves = children(a_node);
    assert_eq!(leaves.len(), 1, "{thread}");
    assert_eq!(leaves[0].0, name_l, "{thread}");
    // The frames the loss left open end at the last event seen in them.
    assert_eq!(r_node["total_ns"], 30 + (ns - 200) + 10, "{thread}");
}

/// A virtual thread that parked outside every root let its ring go, and records into its
/// next one (the same key) before the collector forgets the first: forgetting it leaves the
/// live ring's recording alone, so a call it spreads over two drains counts.
#[test]
fn a_virtual_thread_s_old_ring_leaves_its_next_ring_s_recording_alone() {
    let _engine = crate::testing::SERIAL
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let (r, name_r) = (4_000_041, "method#4000041");
    let key = 4_000_040;
    let mut c = Collector::new();
    c.epoch = 9;
    let old = Arc::new(Ring::with_capacity(key, "vt".into(), 16).into_virtual());
    old.closed.store(true, Ordering::Release);
    let next = Arc::new(Ring::with_capacity(key, "vt".into(), 16).into_virtual());
    lock(&RINGS).extend([old.clone(), next.clone()]);
    drop(old);
    let wait = Duration::ZERO;
    let push = |kind: Kind, id: u32, ns: u64| next.push_within(kind, id, ns, wait, || {});
    for round in 0..2 {
        let at = 100 * (round + 1);
        assert!(push(Kind::Adjust, BEGIN_ID, begin_word(9, 0)));
        assert!(push(Kind::Enter, r, at));
        c.drain();
        assert!(push(Kind::Exit, r, at + 10));
        c.drain();
    }
    next.closed.store(true, Ordering::Release);
    lock(&RINGS).retain(|ring| !Arc::ptr_eq(ring, &next));
    let thread = thread_named(&c.recording.snapshot(Stamp::wall(1000)), "vt");
    assert_eq!(thread.get("unmatched_exits"), None, "{thread}");
    assert_eq!(
        children(&thread["root"]),
        [(name_r.to_owned(), 2)],
        "{thread}"
    );
    assert_eq!(thread["root"]["children"][0]["total_ns"], 20, "{thread}");
}

/// A thread whose ring stays full (the collector lock taken meanwhile) loses events: its
/// recording ends there and the next root it enters begins a new one, so what it does in
/// between (a method entered outside any recorded root, whose exit is lost too) never
/// becomes the bottom of its tree with later roots under it.
#[test]
fn dropped_events_never_put_a_subtree_under_another_method() {
    let _engine = crate::testing::SERIAL
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let (root, leaf, other) = (4_000_031, 4_000_032, 4_000_033);
    bench_method(root, true);
    bench_method(leaf, false);
    bench_method(other, false);
    start(None, None, None);
    let name = "drops";
    let (to_main, from_worker) = std::sync::mpsc::channel::<bool>();
    let (to_worker, from_main) = std::sync::mpsc::channel::<()>();
    let main = std::thread::current();
    let worker = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            // `true`: take the collector lock; `false`: let it go. Returns once done.
            let collector = |take: bool| {
                to_main.send(take).unwrap();
                from_main.recv().unwrap();
            };
            let events = 16;
            crate::probe::recorder::prime_thread_with(name, events);
            let fill = || {
                for _ in 0..events {
                    if crate::probe::recorder::own_ring_free() <= 2 {
                        break;
                    }
                    pair(leaf);
                }
                if crate::probe::recorder::own_ring_free() == 2 {
                    crate::probe::thread::as_pause(std::ptr::null_mut(), || {});
                }
            };
            collector(true);
            // A root whose exit takes the ring's last slot.
            enter(root);
            fill();
            exit(root);
            // The next root's entry finds the ring full: lost.
            enter(root);
            collector(false);
            // Inside that root, a method whose exit is lost too.
            enter(other);
            collector(true);
            fill();
            if crate::probe::recorder::own_ring_free() == 1 {
                crate::probe::thread::as_pause(std::ptr::null_mut(), || {});
            }
            exit(other);
            exit(root);
            collector(false);
            // A root recorded in full.
            enter(root);
            pair(leaf);
            exit(root);
        })
        .unwrap();
    let _ = main;
    let mut held = None;
    while let Ok(take) = from_worker.recv() {
        held = if take { Some(lock(&COLLECTOR)) } else { None };
        to_worker.send(()).unwrap();
    }
    drop(held);
    worker.join().unwrap();
    stop();
    let (profile, dropped) = snapshot(|_| HashMap::new(), &[]).unwrap();
    reset();
    assert!(dropped > 0);
    let thread = thread_named(&profile, name);
    assert_eq!(thread.get("unmatched_exits"), None, "{thread}");
    let top = children(&thread["root"]);
    assert_eq!(top, [("method#4000031".to_owned(), 2)], "{thread}");
    let under = children(&thread["root"]["children"][0]);
    assert_eq!(under.len(), 1, "{thread}");
    assert_eq!(under[0].0, "method#4000032", "{thread}");
}

fn drain_own_ring(cpu: bool) {
    let (root, leaf) = (4_000_001, 4_000_002);
    bench_method(root, true);
    bench_method(leaf, false);
    SWITCHES.cpu.store(cpu, Ordering::SeqCst);
    start(None, None, None);
    let pairs = 3 * crate::probe::ring::RING_EVENTS / 2;
    let name = format!("drain-test-{cpu}");
    std::thread::Builder::new()
        .name(name.clone())
        .spawn({
            let name = name.clone();
            move || {
                prime_thread(&name);
                enter(root);
                for _ in 0..pairs {
                    pair(leaf);
                }
                // Spin: CPU time in the root's own code.
                let t = thread_cpu();
                while thread_cpu() < t + 20_000_000 {}
                exit(root);
            }
        })
        .unwrap()
        .join()
        .unwrap();
    stop();
    SWITCHES.cpu.store(false, Ordering::SeqCst);
    let (profile, dropped) = snapshot(|_| HashMap::new(), &[]).unwrap();
    assert_eq!(dropped, 0);
    let doc = serde_json::to_value(profile.to_document()).unwrap();
    let thread = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name.as_str())
        .unwrap();
    let root_node = &thread["root"]["children"][0];
    let leaf_node = &root_node["children"][0];
    assert_eq!(root_node["calls"], 1);
    assert_eq!(leaf_node["calls"], pairs as u64);
    if cpu {
        // Uncompensated (no calibration here): the spin and the probes' clock reads.
        let root_cpu = root_node["cpu_ns"].as_u64().unwrap();
        let leaf_cpu = leaf_node["cpu_ns"].as_u64().unwrap();
        assert!(root_cpu >= 20_000_000 + leaf_cpu, "{root_cpu} {leaf_cpu}");
        assert!(root_cpu <= root_node["total_ns"].as_u64().unwrap());
        assert_eq!(thread["cpu_ns"].as_u64(), Some(root_cpu));
    } else {
        let text = thread.to_string();
        assert!(!text.contains("cpu_ns"), "{text}");
    }
    reset();
}
