//! Allocation mode end to end in real JVMs: exact counts per class for every kind of
//! allocating instruction (every array kind, `multianewarray`, an allocation before `super()`,
//! in a lambda, from 8 threads) under `run` and `-agentpath`, with and without tracking; and
//! the DDJ article's leak found by its surviving generations.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::{
    agentpath, attach_while_running, compile, folded_sum, read_profile_json, report, run_java_on,
    run_java_with, u, write_report, JDK17_HOME,
};

fn class<'a>(doc: &'a Value, name: &str) -> &'a Value {
    common::entry(doc, "classes", "class", name)
}

/// (class, objects allocated by one round of `Allocs`).
const EXPECTED: [(&str, u64); 17] = [
    ("Allocs$Plain", 1000),
    ("boolean[]", 10),
    ("byte[]", 11),
    ("char[]", 12),
    ("short[]", 13),
    // 14 `newarray`s, and the 2 inner arrays of each of 19 `new int[2][3]`.
    ("int[]", 14 + 19 * 2),
    ("long[]", 15),
    ("float[]", 16),
    ("double[]", 17),
    ("java.lang.String[]", 18),
    // `new int[2][3]`: the outer array of each multianewarray.
    ("int[][]", 19),
    ("java.lang.String[][]", 20),
    ("Allocs$Child", 21),
    // In Child's constructor, before super().
    ("Allocs$Payload", 21),
    // In a lambda's body.
    ("Allocs$Lam", 300),
    // 8 threads × 20000.
    ("Allocs$Shared", 160_000),
    ("java.lang.Thread", 8),
];

fn check_counts(doc: &Value, rounds: u64, every: u64) {
    assert_eq!(doc["mode"], "alloc");
    assert_eq!(u(&doc["track_every"]), every);
    for (name, n) in EXPECTED {
        assert_eq!(u(&class(doc, name)["allocated"]), n * rounds, "{name}");
    }
    // Bytes: an array is a 16-byte header and its elements; an object its measured size.
    let long = class(doc, "long[]");
    assert_eq!(
        u(&long["allocated_bytes"]),
        rounds * (15 * 16 + (0..15).sum::<u64>() * 8)
    );
    let bytes = class(doc, "byte[]");
    assert_eq!(
        u(&bytes["allocated_bytes"]),
        rounds * (11 * 16 + (0..11).sum::<u64>())
    );
    let plain = class(doc, "Allocs$Plain");
    assert_eq!(u(&plain["allocated_bytes"]), rounds * 1000 * 16);
    // Tracked: the first of each site and every `every`-th (per site, from the first).
    let tracked = if every == 0 {
        0
    } else {
        (1000 * rounds).div_ceil(every)
    };
    assert_eq!(u(&plain["tracked"]), tracked);
    // Sites: each class above has one site, and the sites' counts add up to the classes'.
    let sites = doc["sites"].as_array().unwrap();
    let lam: Vec<&Value> = sites
        .iter()
        .filter(|s| s["class"] == "Allocs$Lam")
        .collect();
    assert_eq!(lam.len(), 1);
    assert!(
        lam[0]["method"]
            .as_str()
            .unwrap()
            .starts_with("Allocs.lambda$round$"),
        "{}",
        lam[0]
    );
    let payload: Vec<&Value> = sites
        .iter()
        .filter(|s| s["class"] == "Allocs$Payload")
        .collect();
    assert_eq!(payload.len(), 1);
    assert_eq!(payload[0]["method"], "Allocs$Child.<init>(I)V");
    check_paths(doc, rounds, every);
}

/// The trees: contexts carry `allocations` (no class leaf nodes), whose counts add up to the
/// classes' exactly, each under the method that allocates it; live values are estimates.
fn check_paths(doc: &Value, rounds: u64, every: u64) {
    assert_eq!(doc["live_estimated"], true);
    let nodes: Vec<&Value> = common::contexts(doc).into_iter().map(|(n, _)| n).collect();
    assert!(nodes.iter().all(|n| n["method"] != ""), "a class leaf node");
    let mut total = std::collections::BTreeMap::<String, u64>::new();
    for n in &nodes {
        for a in n["allocations"].as_array().into_iter().flatten() {
            let class = a["class"].as_str().unwrap();
            assert!(u(&a["live"]) <= u(&a["allocated"]), "{a}");
            *total.entry(class.to_owned()).or_default() += u(&a["allocated"]);
            let allocator = match class {
                "Allocs$Payload" => "Allocs$Child.<init>",
                "Allocs$Lam" | "Allocs$Shared" => "Allocs.lambda$round$",
                _ => "Allocs.round",
            };
            let at = common::frame(n);
            assert!(at.starts_with(allocator), "{class} allocated in {at}");
            if every == 0 {
                assert_eq!((u(&a["live"]), u(&a["generations"])), (0, 0), "{a}");
            }
        }
    }
    for (name, n) in EXPECTED {
        assert_eq!(total.get(name).copied(), Some(n * rounds), "{name}");
    }
    if every == 0 {
        assert_eq!(common::thread_names(doc), ["all threads"]);
        let round = common::child(&doc["threads"][0]["root"], "round");
        let plain = common::entry(round, "allocations", "class", "Allocs$Plain");
        assert_eq!(u(&plain["allocated"]), 1000 * rounds);
        assert_eq!(u(&plain["bytes"]), 16_000 * rounds);
    }
}

#[test]
fn exact_counts_under_run_with_tracking() {
    let dir = compile("Allocs.java", "alloc-run");
    let out = dir.join("out.json");
    let flags = common::args("--mode alloc --include Allocs* --track-every 10");
    let output = run_java_with(&flags, &out, &dir, "Allocs", &["2"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n");
    let doc = read_profile_json(&out);
    check_counts(&doc, 2, 10);
    // Paths: the tracked objects' stacks, the allocated class as the last frame; the
    // shared class is allocated on 8 threads, all under the worker lambda.
    let threads = doc["threads"].as_array().unwrap();
    let workers = threads
        .iter()
        .filter(|t| t["name"].as_str().unwrap().starts_with("Thread-"))
        .count();
    assert_eq!(workers, 16);
}

/// `java -agentpath:…=mode=alloc,include=Allocs*,track-every=N,file=…` on the JDK at `home`.
fn agentpath_allocs(home: &Path, tag: &str, every: u64) -> Value {
    let dir = compile("Allocs.java", tag);
    let out = dir.join("out.json");
    let options = format!(
        "mode=alloc,include=Allocs*,track-every={every},file={}",
        out.display()
    );
    let output = agentpath(home, &options, &dir, &["Allocs"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n");
    read_profile_json(&out)
}

#[test]
fn exact_counts_without_tracking_through_agentpath() {
    let doc = agentpath_allocs(Path::new(JDK17_HOME), "alloc-agentpath", 0);
    check_counts(&doc, 1, 0);
    assert_eq!(doc["leak_suspects"], Value::Array(vec![]));
    assert_eq!(u(&class(&doc, "Allocs$Shared")["generations"]), 0);
}

#[test]
fn exact_counts_on_jdk25() {
    let Some(home) = ferrofluid_testkit::jdk21_or_skip() else {
        return;
    };
    let doc = agentpath_allocs(&home, "alloc-jdk25", 3);
    check_counts(&doc, 1, 3);
}

#[test]
fn exact_counts_under_attach() {
    let dir = compile("Allocs.java", "alloc-attach");
    let doc = attach_while_running(
        Path::new(JDK17_HOME),
        &dir,
        &["Allocs", "0"],
        &common::args("--mode alloc --include Allocs*"),
    );
    check_counts(&doc, 1, 10);
}

/// `Leak 4000` under `ferrofluid run --mode alloc --include Leak*` in a small heap collected
/// often: the directory and the profile's path.
fn leak_profile(tag: &str) -> (PathBuf, PathBuf) {
    let dir = compile("Leak.java", tag);
    let out = dir.join("out.json");
    common::succeeds(
        common::ferrofluid()
            .arg("run")
            .arg("--agent")
            .arg(common::agent())
            .args(["--mode", "alloc", "--include", "Leak*", "-o"])
            .arg(&out)
            .arg("--")
            .arg(Path::new(JDK17_HOME).join("bin/java"))
            .args(["-Xmx64m", "-Xmn4m", "-XX:+UseSerialGC", "-cp"])
            .arg(&dir)
            .args(["Leak", "4000"]),
    );
    (dir, out)
}

#[test]
fn the_leaking_class_comes_first_by_generations() {
    let (dir, out) = leak_profile("alloc-leak");
    let doc = read_profile_json(&out);
    assert!(u(&doc["gc_count"]) >= 5, "too few GCs: {}", doc["gc_count"]);
    let suspects = doc["leak_suspects"].as_array().unwrap();
    assert!(!suspects.is_empty(), "no suspect: {}", doc["classes"]);
    assert_eq!(suspects[0]["class"], "Leak$Entry", "{suspects:?}");
    let path = suspects[0]["paths"][0]["frames"].as_array().unwrap();
    assert_eq!(path.last().unwrap(), "Leak.remember", "{path:?}");
    for quiet in ["Leak$Temp", "Leak$Stable"] {
        assert!(
            suspects.iter().all(|s| s["class"] != quiet),
            "{quiet}: {suspects:?}"
        );
        let g = u(&class(&doc, quiet)["generations"]);
        assert!(g <= 3, "{quiet}: {g} generations");
    }
    let entry = class(&doc, "Leak$Entry");
    assert!(u(&entry["generations"]) > 3);
    // The one path of the entries, none ever freed: every tracked entry is live on it, those
    // allocated before the last GC survived it, and the class's figure is the path's scaled.
    let path = &suspects[0]["paths"][0];
    assert_eq!(suspects[0]["paths"].as_array().unwrap().len(), 1, "{path}");
    assert_eq!(u(&path["live"]), u(&entry["tracked"]), "{path} {entry}");
    let (survived, live) = (u(&path["survived"]), u(&path["live"]));
    assert!(survived > 0 && survived <= live, "{path}");
    let size = u(&entry["allocated_bytes"]) / u(&entry["allocated"]);
    assert_eq!(u(&path["survived_bytes"]), survived * size, "{path}");
    assert_eq!(
        u(&entry["survived"]),
        survived * u(&entry["allocated"]) / u(&entry["tracked"]),
        "{path} {entry}"
    );
    let text = report(&out, &dir.join("out.txt"), &[]);
    let first = text.lines().find(|l| l.starts_with("1. ")).unwrap();
    assert!(first.starts_with("1. Leak$Entry: "), "{text}");
}

/// The site of `method` (Java class name, method name and descriptor) allocating `class`.
fn site<'a>(doc: &'a Value, method: &str, class: &str) -> &'a Value {
    doc["sites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["method"] == method && s["class"] == class)
        .unwrap_or_else(|| panic!("no site {method} allocating {class}: {}", doc["sites"]))
}

/// The node reached from `node` through the children whose `class.method` are `path`.
fn path<'a>(mut node: &'a Value, path: &[&str]) -> &'a Value {
    for step in path {
        node = node["children"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| {
                let name = format!(
                    "{}.{}",
                    c["class"].as_str().unwrap(),
                    c["method"].as_str().unwrap()
                );
                name.trim_end_matches('.') == *step
            })
            .unwrap_or_else(|| panic!("no {step} under {}", node["class"]));
    }
    node
}

const JDK_OUTPUT: &str = "1000 1000 1000 1000 2000\n";

/// `ferrofluid run --mode alloc FLAGS -o OUT -- java -cp DIR JdkAllocs 1000` on the JDK at
/// `home`: the program's output is unchanged; the profile.
fn jdk_allocs(home: &Path, tag: &str, flags: &[&str]) -> Value {
    let dir = compile("JdkAllocs.java", tag);
    let out = dir.join("out.json");
    let flags: Vec<&str> = ["--mode", "alloc"].iter().chain(flags).copied().collect();
    let output = run_java_on(home, &flags, &out, &dir, "JdkAllocs", &["1000"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), JDK_OUTPUT);
    read_profile_json(&out)
}

/// Whole program: the JDK's own allocation sites are counted, with the program's calls above
/// them on the allocation paths.
fn check_jdk_sites(doc: &Value) {
    let node = site(
        doc,
        "java.util.HashMap.newNode(ILjava/lang/Object;Ljava/lang/Object;Ljava/util/HashMap$Node;)Ljava/util/HashMap$Node;",
        "java.util.HashMap$Node",
    );
    assert_eq!(u(&node["allocated"]), 1000);
    let linked = site(
        doc,
        "java.util.LinkedList.linkLast(Ljava/lang/Object;)V",
        "java.util.LinkedList$Node",
    );
    assert_eq!(u(&linked["allocated"]), 1000);
    // TreeMap: the first entry of an empty map, then 999 more.
    let first = site(
        doc,
        "java.util.TreeMap.addEntryToEmptyMap(Ljava/lang/Object;Ljava/lang/Object;)V",
        "java.util.TreeMap$Entry",
    );
    let more = site(
        doc,
        "java.util.TreeMap.addEntry(Ljava/lang/Object;Ljava/lang/Object;Ljava/util/TreeMap$Entry;Z)V",
        "java.util.TreeMap$Entry",
    );
    assert_eq!((u(&first["allocated"]), u(&more["allocated"])), (1, 999));
    // Every node is tracked (`--track-every 1`): the path of the program's puts holds them all.
    let main = common::thread(doc, "main");
    let nodes = path(
        &main["root"],
        &[
            "JdkAllocs.main",
            "java.util.HashMap.put",
            "java.util.HashMap.putVal",
            "java.util.HashMap.newNode",
        ],
    );
    let nodes = common::entry(nodes, "allocations", "class", "java.util.HashMap$Node");
    assert_eq!(u(&nodes["allocated"]), 1000);
    assert_eq!(u(&nodes["bytes"]), 1000 * 32);
    // A static initialiser runs as a call from the VM; the path goes on below it.
    let init = path(
        &main["root"],
        &["JdkAllocs.main", "JdkAllocs$Init.<clinit>"],
    );
    let entries = common::entry(init, "allocations", "class", "JdkAllocs$InitEntry");
    assert_eq!(u(&entries["allocated"]), 100);
    // StringBuilder's arrays: allocated inside the JDK, on the program's appends.
    path(
        &main["root"],
        &["JdkAllocs.main", "java.lang.StringBuilder.append"],
    );
}

#[test]
fn jdk_allocation_sites_are_counted_whole_program() {
    let doc = jdk_allocs(Path::new(JDK17_HOME), "alloc-jdk", &["--track-every", "1"]);
    check_jdk_sites(&doc);
}

#[test]
fn jdk_allocation_sites_are_counted_on_jdk25() {
    let Some(home) = ferrofluid_testkit::jdk21_or_skip() else {
        return;
    };
    let doc = jdk_allocs(&home, "alloc-jdk25-sites", &["--track-every", "1"]);
    check_jdk_sites(&doc);
}

#[test]
fn an_include_of_a_jdk_package_selects_its_sites() {
    let doc = jdk_allocs(
        Path::new(JDK17_HOME),
        "alloc-jdk-include",
        &["--include", "java.util.**", "--track-every", "0"],
    );
    let sites = doc["sites"].as_array().unwrap();
    assert!(!sites.is_empty());
    for s in sites {
        assert!(
            s["method"].as_str().unwrap().starts_with("java.util."),
            "{s}"
        );
    }
    let linked = site(
        &doc,
        "java.util.LinkedList.linkLast(Ljava/lang/Object;)V",
        "java.util.LinkedList$Node",
    );
    assert_eq!(u(&linked["allocated"]), 1000);
}

/// `ferrofluid report` of a leak's profile in every format: the leaking class's paths by live
/// bytes, its chart, Go's heap sample types, one speedscope profile per weight (allocated, live
/// and survived; bytes and objects).
#[test]
fn a_leaks_profile_in_every_format() {
    let (dir, out) = leak_profile("alloc-leak-reports");
    let doc = read_profile_json(&out);
    let report = |file: &str, flags: &[&str]| report(&out, &dir.join(file), flags);
    // Folded stacks: the class last; by live bytes the leaking class's path through remember
    // (it keeps every entry), by allocated objects every path, adding up to the class table.
    let live = report("live.collapsed", &["--weight", "live-bytes"]);
    assert!(
        live.lines().any(|l| l
            .rsplit_once(' ')
            .unwrap()
            .0
            .ends_with(";Leak.remember;Leak$Entry")),
        "{live}"
    );
    let count = report("count.collapsed", &["--weight", "alloc-count"]);
    let entries = folded_sum(&count, ";Leak$Entry");
    assert_eq!(entries, u(&class(&doc, "Leak$Entry")["allocated"]));
    let html = report("out.html", &[]);
    assert!(html.contains("<svg class=\"history\""), "no chart");
    for flame in ["live", "objects", "survived"] {
        assert!(html.contains(&format!("id=\"aflame-{flame}\"")), "{flame}");
    }
    let text = report("out.txt", &["--sort", "generations"]);
    let table = text.find("Classes (by generations)").unwrap();
    let first_row = text[table..].lines().nth(2).unwrap();
    assert!(first_row.ends_with("  Leak$Entry"), "{text}");
    let speedscope: Value = serde_json::from_str(&report("out.speedscope.json", &[])).unwrap();
    assert_eq!(speedscope["profiles"].as_array().unwrap().len(), 6);
    let pprof = dir.join("out.pb.gz");
    write_report(&out, &pprof, &[]);
    let flags = [
        "-nodefraction=0",
        "-sample_index=alloc_objects",
        "-unit=minimum",
    ];
    if let Some(text) = common::go_pprof_top(&pprof, &dir, &flags) {
        let row = text
            .lines()
            .find(|l| l.trim_end().ends_with(" Leak$Entry"))
            .unwrap_or_else(|| panic!("{text}"));
        let flat: u64 = row.split_whitespace().next().unwrap().parse().unwrap();
        assert_eq!(flat, entries, "{text}");
    }
}
