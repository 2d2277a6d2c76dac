//! Allocation mode's "survived a GC" figure in a real JVM: objects kept across a forced GC, objects
//! dropped before it and objects allocated after it, every one tracked and then tracked by bytes.

use serde_json::Value;

mod common;
use common::{compile, read_profile_json, run_java_with, u};

fn class<'a>(doc: &'a Value, name: &str) -> &'a Value {
    common::entry(doc, "classes", "class", name)
}

/// `Survivors` under `ferrofluid run --mode alloc --include Survivors* FLAGS`: its profile.
fn survivors(tag: &str, flags: &str) -> Value {
    let dir = compile("Survivors.java", tag);
    let out = dir.join("out.json");
    // System.gc() is a full collection (with every collector, unless told to run concurrently):
    // every dropped object is freed by it.
    let line = format!("--mode alloc --include Survivors* {flags}");
    let flags = common::args(&line);
    let output = run_java_with(&flags, &out, &dir, "Survivors", &[]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "370 124750\n");
    read_profile_json(&out)
}

/// (allocated, survived, live) of `name`, each survived object's bytes its class's size.
fn figures(doc: &Value, name: &str) -> (u64, u64, u64) {
    let c = class(doc, name);
    let (allocated, survived) = (u(&c["allocated"]), u(&c["survived"]));
    let size = u(&c["allocated_bytes"]) / allocated;
    assert_eq!(u(&c["survived_bytes"]), survived * size, "{name}: {c}");
    (allocated, survived, u(&c["live"]))
}

#[test]
fn objects_kept_across_a_gc_survive_it_and_garbage_does_not() {
    let doc = survivors("alloc-survived", "--track-every 1");
    assert!(u(&doc["gc_count"]) >= 1, "no GC seen");
    assert_eq!(figures(&doc, "Survivors$Kept"), (300, 300, 300));
    assert_eq!(figures(&doc, "Survivors$Dropped"), (500, 0, 0));
    // Allocated after the last GC: live, but no GC has looked at them.
    assert_eq!(figures(&doc, "Survivors$Late"), (70, 0, 70));
    assert_eq!(u(&class(&doc, "Survivors$Kept")["tracked"]), 300);
}

#[test]
fn tracked_by_bytes_a_site_tracks_one_object_per_interval() {
    let doc = survivors("alloc-survived-bytes", "--track-bytes 1k");
    assert_eq!(u(&doc["track_bytes"]), 1024);
    assert_eq!(u(&doc["track_every"]), 0);
    // A Kept is 24 bytes: the first, then one every 1024 / 24 = 42 allocations.
    assert_eq!(
        u(&class(&doc, "Survivors$Kept")["allocated_bytes"]),
        300 * 24
    );
    assert_eq!(
        u(&class(&doc, "Survivors$Kept")["tracked"]),
        300_u64.div_ceil(42)
    );
    assert_eq!(
        u(&class(&doc, "Survivors$Late")["tracked"]),
        70_u64.div_ceil(42)
    );
    // Scaled by allocated / tracked: every tracked Kept survived, no tracked Dropped did.
    assert_eq!(figures(&doc, "Survivors$Kept"), (300, 300, 300));
    assert_eq!(figures(&doc, "Survivors$Dropped"), (500, 0, 0));
    assert_eq!(figures(&doc, "Survivors$Late"), (70, 0, 70));
}

#[test]
fn track_every_and_track_bytes_exclude_each_other() {
    let dir = compile("Survivors.java", "alloc-survived-both");
    let out = common::ferrofluid()
        .args([
            "run",
            "--mode",
            "alloc",
            "--track-every",
            "5",
            "--track-bytes",
            "1k",
        ])
        .arg("-o")
        .arg(dir.join("out.json"))
        .arg("--")
        .arg("java")
        .arg("-cp")
        .arg(&dir)
        .arg("Survivors")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`track-every` and `track-bytes` exclude each other"),
        "{err}"
    );
    assert!(!dir.join("out.json").exists());
}
