//! An allocation profile's document: per calling context the `allocations` of that method
//! (its class leaves in memory), the class table, `live_estimated`; read back the same, and
//! documents that wrote class leaves as nodes still read.

use ferrofluid_profile::alloc::{path_metrics, AllocSummary, ClassAlloc};
use ferrofluid_profile::{CallTree, Mode, NodeId, NodeKind, Profile, ThreadProfile};
use serde_json::{json, Value};

fn profile() -> Profile {
    let mut p = Profile::new(Mode::Alloc);
    p.extra_metrics = path_metrics();
    let main = p
        .methods
        .insert("demo.App", "main", "([Ljava/lang/String;)V");
    let fill = p.methods.insert("demo.Cache", "fill", "(I)V");
    let entry = p.methods.insert("demo.Cache$Entry", "", "");
    let longs = p.methods.insert("long[]", "", "");
    let mut tree = CallTree::with_width(6);
    let m = tree.add_child(NodeId::ROOT, NodeKind::Method(main));
    let f = tree.add_child(m, NodeKind::Method(fill));
    let e = tree.add_child(f, NodeKind::Method(entry));
    tree.extra_mut(e)
        .copy_from_slice(&[1000, 16_000, 900, 14_400, 600, 9_600]);
    let l = tree.add_child(m, NodeKind::Method(longs));
    tree.extra_mut(l).copy_from_slice(&[10, 960, 0, 0, 0, 0]);
    p.threads.push(ThreadProfile::new("main", 1, tree));
    let mut summary = AllocSummary {
        track_every: 10,
        gc_count: 7,
        classes: vec![ClassAlloc {
            class: "demo.Cache$Entry".into(),
            allocated: 1000,
            allocated_bytes: 16_000,
            tracked: 100,
            live: 900,
            live_bytes: 14_400,
            survived: 600,
            survived_bytes: 9_600,
            avg_age: 2.5,
            generations: 6,
        }],
        ..AllocSummary::default()
    };
    summary.path_generations.insert((0, e), 6);
    p.alloc = Some(summary);
    p
}

fn written(p: &Profile) -> Value {
    let mut out = Vec::new();
    p.write_json(&mut out).unwrap();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn contexts_carry_what_their_method_allocates() {
    let doc = written(&profile());
    assert_eq!(doc["track_every"], 10);
    assert_eq!(doc["gc_count"], 7);
    assert_eq!(doc["live_estimated"], true);
    assert_eq!(doc["classes"][0]["class"], "demo.Cache$Entry");
    let main = &doc["threads"][0]["root"]["children"][0];
    assert_eq!(
        *main,
        json!({
            "class": "demo.App", "method": "main", "descriptor": "([Ljava/lang/String;)V",
            "allocations": [
                {"class": "long[]", "allocated": 10, "bytes": 960, "live": 0, "live_bytes": 0,
                 "survived": 0, "survived_bytes": 0, "generations": 0}
            ],
            "children": [{
                "class": "demo.Cache", "method": "fill", "descriptor": "(I)V",
                "allocations": [
                    {"class": "demo.Cache$Entry", "allocated": 1000, "bytes": 16000, "live": 900,
                     "live_bytes": 14400, "survived": 600, "survived_bytes": 9600,
                     "generations": 6}
                ],
                "children": []
            }]
        })
    );
    let root = &doc["threads"][0]["root"];
    assert!(root.get("objects").is_none() && root.get("allocations").is_none());
}

#[test]
fn documents_read_back_the_same() {
    let p = profile();
    let back = Profile::from_json_slice(&serde_json::to_vec(&written(&p)).unwrap()).unwrap();
    assert_eq!(back.to_document(), p.to_document());
    let a = back.alloc.as_ref().unwrap();
    assert_eq!(
        a.path_generations.values().copied().collect::<Vec<_>>(),
        [6]
    );
    assert_eq!(back.metrics(), path_metrics());
}

/// A document whose class leaves are nodes with `objects` and `bytes` keys (no `live`) reads
/// into the same tree, and is written with `allocations`.
#[test]
fn class_leaf_nodes_still_read() {
    let old = json!({
        "format": "ferrofluid", "version": 1, "mode": "alloc",
        "metrics": [{"name": "objects", "unit": "count"}, {"name": "bytes", "unit": "bytes"}],
        "methods": {"instrumented": 1, "called": 1},
        "track_every": 10, "gc_count": 2, "classes": [],
        "threads": [{"name": "main", "id": 1, "root": {
            "kind": "thread", "class": "", "method": "<thread>", "descriptor": "",
            "objects": 0, "bytes": 0,
            "children": [{"class": "demo.App", "method": "main", "descriptor": "()V",
                "objects": 0, "bytes": 0,
                "children": [{"class": "int[]", "method": "", "descriptor": "",
                    "objects": 3, "bytes": 72, "children": []}]}]}}]
    });
    let p = Profile::from_json_slice(&serde_json::to_vec(&old).unwrap()).unwrap();
    let doc = written(&p);
    assert_eq!(
        doc["threads"][0]["root"]["children"][0]["allocations"],
        json!([{"class": "int[]", "allocated": 3, "bytes": 72, "live": 0, "live_bytes": 0,
                "survived": 0, "survived_bytes": 0, "generations": 0}])
    );
}

/// A document written before the survived figures (four path metrics, `allocations`, sites and
/// suspect paths without `survived`) reads with them at 0 and keeps its four metrics.
#[test]
fn documents_without_survived_figures_still_read() {
    let old = json!({
        "format": "ferrofluid", "version": 1, "mode": "alloc",
        "metrics": [{"name": "objects", "unit": "count"}, {"name": "bytes", "unit": "bytes"},
                    {"name": "live", "unit": "count"}, {"name": "live_bytes", "unit": "bytes"}],
        "methods": {"instrumented": 1, "called": 1},
        "track_every": 10, "gc_count": 2, "live_estimated": true,
        "classes": [{"class": "int[]", "allocated": 3, "allocated_bytes": 72, "tracked": 1,
                     "live": 3, "live_bytes": 72, "avg_age": 1.0, "generations": 1}],
        "sites": [{"method": "demo.App.main()V", "bci": 4, "class": "int[]", "allocated": 3,
                   "bytes": 72}],
        "leak_suspects": [{"class": "int[]", "generations": 4, "growth": 2, "history": [2, 4],
                           "paths": [{"frames": ["demo.App.main"], "live": 1,
                                      "generations": 1}]}],
        "threads": [{"name": "main", "id": 1, "root": {
            "kind": "thread", "class": "", "method": "<thread>", "descriptor": "",
            "children": [{"class": "demo.App", "method": "main", "descriptor": "()V",
                "allocations": [{"class": "int[]", "allocated": 3, "bytes": 72, "live": 3,
                                 "live_bytes": 72, "generations": 1}],
                "children": []}]}}]
    });
    let p = Profile::from_json_slice(&serde_json::to_vec(&old).unwrap()).unwrap();
    assert_eq!(p.metrics().len(), 4);
    let a = p.alloc.as_ref().unwrap();
    assert_eq!((a.classes[0].survived, a.classes[0].survived_bytes), (0, 0));
    assert_eq!((a.sites[0].survived, a.sites[0].survived_bytes), (0, 0));
    let path = &a.suspects[0].paths[0];
    assert_eq!((path.live, path.survived, path.survived_bytes), (1, 0, 0));
    let doc = written(&p);
    assert_eq!(
        doc["threads"][0]["root"]["children"][0]["allocations"],
        json!([{"class": "int[]", "allocated": 3, "bytes": 72, "live": 3, "live_bytes": 72,
                "survived": 0, "survived_bytes": 0, "generations": 1}])
    );
}
