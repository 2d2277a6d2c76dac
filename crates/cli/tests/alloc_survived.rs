//! Allocation mode's "survived a GC" figure in a real JVM: objects kept across a forced GC, objects
//! dropped before it and objects allocated after it, every one tracked and then tracked by bytes;
//! per class, per allocation site, per calling context and in the text report.

use serde_json::Value;

mod common;
use common::{child, compile, read_profile_json, run_java_with, thread, u};

fn class<'a>(doc: &'a Value, name: &str) -> &'a Value {
    common::entry(doc, "classes", "class", name)
}

/// What the method at the end of `path` (method names from thread `main`'s root) allocates of
/// `class` in that calling context.
fn allocation<'a>(doc: &'a Value, path: &[&str], class: &str) -> &'a Value {
    let node = path
        .iter()
        .fold(&thread(doc, "main")["root"], |node, m| child(node, m));
    common::entry(node, "allocations", "class", class)
}

/// (allocated, survived, survived bytes) of an `allocations` or `sites` entry.
fn path_figures(a: &Value) -> (u64, u64, u64) {
    (
        u(&a["allocated"]),
        u(&a["survived"]),
        u(&a["survived_bytes"]),
    )
}

/// The site of `Survivors.make`, where the `Item`s of both contexts are allocated.
fn make_site(doc: &Value) -> &Value {
    doc["sites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["method"] == "Survivors.make(I)LSurvivors$Item;")
        .unwrap_or_else(|| panic!("no site of Survivors.make: {}", doc["sites"]))
}

const KEEP: [&str; 3] = ["main", "keepItems", "make"];
const DROP: [&str; 3] = ["main", "dropItems", "make"];
const ITEM: &str = "Survivors$Item";

/// `Survivors` under `ferrofluid run --mode alloc --include Survivors* FLAGS`: its profile, and
/// the profile's path.
fn survivors(tag: &str, flags: &str) -> Value {
    survivors_at(tag, flags).0
}

fn survivors_at(tag: &str, flags: &str) -> (Value, std::path::PathBuf) {
    let dir = compile("Survivors.java", tag);
    let out = dir.join("out.json");
    // System.gc() is a full collection (with every collector, unless told to run concurrently):
    // every dropped object is freed by it.
    let line = format!("--mode alloc --include Survivors* {flags}");
    let flags = common::args(&line);
    let output = run_java_with(&flags, &out, &dir, "Survivors", &[]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "570 169600\n");
    (read_profile_json(&out), out)
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

/// One site, two calling contexts: the Items kept across the GC survive on the path through
/// `keepItems`, those dropped before it on the path through `dropItems` do not; the site has
/// both, the text report's site table and suspects' words say so.
#[test]
fn each_site_and_calling_context_has_its_own_survivors() {
    let (doc, out) = survivors_at("alloc-survived-paths", "--track-every 1");
    assert_eq!(figures(&doc, ITEM), (500, 200, 200));
    let (keep, drop) = (allocation(&doc, &KEEP, ITEM), allocation(&doc, &DROP, ITEM));
    assert_eq!(path_figures(keep), (200, 200, 200 * 24));
    assert_eq!(path_figures(drop), (300, 0, 0));
    assert_eq!((u(&keep["live"]), u(&drop["live"])), (200, 0));
    let site = make_site(&doc);
    assert_eq!(site["class"], ITEM);
    assert_eq!(path_figures(site), (500, 200, 200 * 24));
    // The sites of main: every Kept survived, no Dropped or Late did.
    let main_site = |class: &str| {
        doc["sites"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["class"] == class)
            .map(path_figures)
            .unwrap()
    };
    assert_eq!(main_site("Survivors$Kept"), (300, 300, 300 * 24));
    assert_eq!(main_site("Survivors$Dropped"), (500, 0, 0));
    assert_eq!(main_site("Survivors$Late"), (70, 0, 0));
    let late = allocation(&doc, &["main"], "Survivors$Late");
    assert_eq!((path_figures(late), u(&late["live"])), ((70, 0, 0), 70));

    let dir = out.parent().unwrap();
    let text = common::report(&out, &dir.join("out.txt"), &[]);
    let sites = &text[text.find("Allocation sites (by bytes)").unwrap()..];
    let row = sites
        .lines()
        .find(|l| l.contains("Survivors.make"))
        .unwrap_or_else(|| panic!("{sites}"));
    assert_eq!(
        row.split_whitespace().take(4).collect::<Vec<_>>(),
        ["500", "12000", "200", "4800"],
        "{row}"
    );
    // The trees' columns: the path through keepItems survived whole, the one through dropItems
    // not at all.
    let tree = &text[text.find("metrics:").unwrap()..];
    assert!(
        tree.contains("survived (count)") && tree.contains("survived_bytes (bytes)"),
        "{tree}"
    );
    let html = common::report(&out, &dir.join("out.html"), &[]);
    assert!(
        html.contains("survived bytes (estimated)"),
        "no survived flame graph"
    );
    for (weight, keep, drop) in [("survived-bytes", 4800, 0), ("survived-count", 200, 0)] {
        let folded = common::report(
            &out,
            &dir.join(format!("{weight}.collapsed")),
            &["--weight", weight],
        );
        assert_eq!(
            common::folded_sum(&folded, "keepItems;Survivors.make;Survivors$Item"),
            keep
        );
        assert_eq!(
            common::folded_sum(&folded, "dropItems;Survivors.make;Survivors$Item"),
            drop
        );
    }
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
    // Items of 24 bytes at one site, 200 kept then 300 dropped: tracked are the 1st, 43rd, …,
    // 5 of the kept (of 12), scaled by 500 / 12.
    assert_eq!(u(&make_site(&doc)["allocated"]), 500);
    let (tracked, kept) = (500_u64.div_ceil(42), 200_u64.div_ceil(42));
    let survived = kept * 500 / tracked;
    let survived_bytes = kept * 24 * 500 / tracked;
    let site = make_site(&doc);
    assert_eq!(
        (u(&site["survived"]), u(&site["survived_bytes"])),
        (survived, survived_bytes)
    );
    let keep = allocation(&doc, &KEEP, ITEM);
    assert_eq!(
        (u(&keep["survived"]), u(&keep["survived_bytes"])),
        (survived, survived_bytes)
    );
    let drop = allocation(&doc, &DROP, ITEM);
    assert_eq!((u(&drop["survived"]), u(&drop["survived_bytes"])), (0, 0));
    assert_eq!(
        u(&keep["allocated"]) + u(&drop["allocated"]),
        500,
        "{keep} {drop}"
    );
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
