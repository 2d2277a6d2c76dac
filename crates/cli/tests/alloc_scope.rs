//! Allocation mode with roots, in real JVMs: only the allocations made while the thread is
//! inside a root invocation count (the same allocating method called inside and outside the
//! roots, on 2 threads at once; a recursive root; a root left by an exception), with the call
//! subgraph revealed lazily or planned eagerly; under `run` on JDK 17 and `-agentpath` on JDK 25.

use serde_json::Value;

mod common;
use common::{agentpath, compile, read_profile_json, run_java_with, u};

/// `Scoped` profiled with its three roots and `flags`.
fn scoped(tag: &str, flags: &[&str]) -> Value {
    let dir = compile("Scoped.java", tag);
    let out = dir.join("out.json");
    let mut all = vec![
        "--mode",
        "alloc",
        "--root",
        "Scoped::root",
        "--root",
        "Scoped::recurse",
        "--root",
        "Scoped::thrower",
    ];
    all.extend_from_slice(flags);
    let output = run_java_with(&all, &out, &dir, "Scoped", &[]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n");
    read_profile_json(&out)
}

fn check_in_root_counts(doc: &Value, every: u64) {
    assert_eq!(doc["mode"], "alloc");
    let classes = doc["classes"].as_array().unwrap();
    let allocated = |name: &str| {
        classes
            .iter()
            .find(|c| c["class"] == name)
            .map(|c| u(&c["allocated"]))
    };
    // Per thread: `root` 1000, `recurse(9)` 2 per level, `thrower` 1 each of 5 times; the
    // 2 * 3250 + 100 made by the same method outside the roots are not counted.
    assert_eq!(
        allocated("Scoped$Item"),
        Some(2 * (1000 + 20 + 5)),
        "{classes:?}"
    );
    assert_eq!(allocated("java.lang.IllegalStateException"), Some(2 * 5));
    // Allocated outside every root only: its method is not in the subgraph.
    assert_eq!(allocated("Scoped$Other"), None, "{classes:?}");
    assert_eq!(classes.len(), 2, "{classes:?}");
    let sites = doc["sites"].as_array().unwrap();
    let item: Vec<&Value> = sites
        .iter()
        .filter(|s| s["class"] == "Scoped$Item")
        .collect();
    assert_eq!(item.len(), 1, "{sites:?}");
    assert_eq!(item[0]["method"], "Scoped.make()Ljava/lang/Object;");
    let item = classes
        .iter()
        .find(|c| c["class"] == "Scoped$Item")
        .unwrap();
    // The first of the site and every `every`-th after it.
    assert_eq!(u(&item["tracked"]), (2 * 1025u64).div_ceil(every));
}

#[test]
fn only_allocations_inside_the_roots_count_with_lazy_revelation() {
    let doc = scoped("alloc-scope-lazy", &["--track-every", "10"]);
    check_in_root_counts(&doc, 10);
}

#[test]
fn only_allocations_inside_the_roots_count_with_the_eager_plan() {
    let doc = scoped(
        "alloc-scope-eager",
        &["--scheme", "eager", "--track-every", "7"],
    );
    check_in_root_counts(&doc, 7);
}

/// `-agentpath:…=mode=alloc,root=…` on JDK 25 (or 21): the same counts.
#[test]
fn only_allocations_inside_the_roots_count_through_agentpath_on_jdk25() {
    let Some(home) = ferrofluid_testkit::jdk21_or_skip() else {
        return;
    };
    let dir = compile("Scoped.java", "alloc-scope-jdk25");
    let out = dir.join("out.json");
    let options = format!(
        "mode=alloc,root=Scoped::root,root=Scoped::recurse,root=Scoped::thrower,track-every=5,\
         file={}",
        out.display()
    );
    let output = agentpath(&home, &options, &dir, &["Scoped"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n");
    check_in_root_counts(&read_profile_json(&out), 5);
}

/// A thread's first `ThreadLocal` lookup inside a root allocates in `ThreadLocal`'s own code,
/// which the root's subgraph reaches: the program's threads must neither overflow their stacks
/// nor lose work, and the root's own allocation counts exactly (one buffer per thread).
#[test]
fn a_root_that_reads_a_fresh_thread_local_runs_unchanged() {
    for scheme in ["lazy", "eager"] {
        let dir = compile(
            "ScopedThreadLocal.java",
            &format!("alloc-scope-tl-{scheme}"),
        );
        let out = dir.join("out.json");
        let flags = [
            "--mode",
            "alloc",
            "--root",
            "ScopedThreadLocal::root",
            "--scheme",
            scheme,
        ];
        let output = run_java_with(&flags, &out, &dir, "ScopedThreadLocal", &[]);
        // 4 threads x 50 rounds x (sum of the digit counts of 0..999 = 2890).
        assert_eq!(String::from_utf8_lossy(&output.stdout), "578000\n");
        assert!(
            !String::from_utf8_lossy(&output.stderr).contains("StackOverflowError"),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let doc = read_profile_json(&out);
        let builders = doc["sites"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["class"] == "java.lang.StringBuilder")
            .map(|s| u(&s["allocated"]))
            .sum::<u64>();
        assert_eq!(builders, 4, "{scheme}: {}", doc["sites"]);
    }
}
