//! `ferrofluid run --skip-trivial` in a real JVM: trivial methods get no probes (their time
//! stays in their callers), the rest of the tree keeps its exact counts, and the reports say
//! how many were left out.

use serde_json::Value;

mod common;
use common::{call_paths, child_names, compile, read_profile_json, run_java, thread};

/// `(method, calls)` of a node and of its children, which must be leaves.
fn shape(node: &Value) -> ((&str, u64), Vec<(&str, u64)>) {
    fn pair(n: &Value) -> (&str, u64) {
        (n["method"].as_str().unwrap(), n["calls"].as_u64().unwrap())
    }
    let children = node["children"].as_array().unwrap();
    for c in children {
        assert!(c["children"].as_array().unwrap().is_empty(), "{c}");
    }
    (pair(node), children.iter().map(pair).collect())
}

fn main_thread(doc: &Value) -> &Value {
    let main = thread(doc, "main");
    let roots = main["root"]["children"].as_array().unwrap();
    assert_eq!(roots.len(), 1, "{main}");
    &roots[0]
}

#[test]
fn trivial_methods_are_left_to_their_callers() {
    let dir = compile("Trivial.java", "trivial");
    let flags = ["--root", "Trivial::f", "--include", "Trivial"];

    let out = dir.join("keep.json");
    let output = run_java(&flags, &out, &dir, "Trivial");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "10\n");
    let doc = read_profile_json(&out);
    assert_eq!(doc["methods"]["instrumented"], 4, "{}", doc["methods"]);
    assert!(doc["methods"].get("trivial_skipped").is_none());
    let f = main_thread(&doc);
    let names = child_names(f);
    assert_eq!(names.len(), 3, "h, g and getX under f: {f}");

    let skip = [&flags[..], &["--skip-trivial"]].concat();
    let out = dir.join("skip.json");
    let output = run_java(&skip, &out, &dir, "Trivial");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "10\n");
    let doc = read_profile_json(&out);
    assert_eq!(
        (
            &doc["methods"]["instrumented"],
            &doc["methods"]["called"],
            &doc["methods"]["trivial_skipped"]
        ),
        (&Value::from(2), &Value::from(2), &Value::from(2)),
        "{}",
        doc["methods"]
    );
    assert_eq!(shape(main_thread(&doc)), (("f", 1), vec![("g", 10)]));

    let out = dir.join("skip.txt");
    run_java(&skip, &out, &dir, "Trivial");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains(
            "methods: 2 instrumented, 2 called; 2 trivial left uninstrumented (their time is their callers' self time)"
        ),
        "{text}"
    );
}

/// Under sampled timing trivial methods keep their counts, from one probe at their entry (no
/// exit probe, no handler): each call, returning or throwing, counts once in its caller's
/// context, as per-call timing counts it.
#[test]
fn trivial_methods_count_every_call_under_sampled_timing() {
    let dir = compile("Leaves.java", "leaves");
    let want: Vec<(String, u64)> = [
        ("Leaves.work", 3),
        ("Leaves.work/Leaves.at", 18),
        ("Leaves.work/Leaves.getX", 18),
        ("Leaves.work/Leaves.twice", 18),
    ]
    .iter()
    .map(|&(p, n)| (p.to_owned(), n))
    .collect();
    for timing in ["sampled", "probes"] {
        let out = dir.join(format!("{timing}.json"));
        let flags = [
            "--root",
            "Leaves::work",
            "--include",
            "Leaves",
            "--timing",
            timing,
        ];
        let output = run_java(&flags, &out, &dir, "Leaves");
        assert_eq!(String::from_utf8_lossy(&output.stdout), "114\n");
        let doc = read_profile_json(&out);
        assert_eq!(call_paths(&doc), want, "{timing}");
        assert_eq!(
            doc["methods"]["instrumented"], 4,
            "{timing}: {}",
            doc["methods"]
        );
    }
}
