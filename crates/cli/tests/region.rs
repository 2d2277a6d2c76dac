//! Code-region mode end to end in a real JVM (`ferrofluid run --region`): exact invocation
//! counts (outermost only, per thread, through exceptions), durations ordered as the program
//! makes them, bounded last-N lists, the report writers, and the one-line errors.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

mod common;
use common::{compile, ferrofluid, read_profile_json, report_stdout, run_java, u};

/// `ferrofluid run FLAGS -o OUT -- java -cp DIR Region`.
fn run(dir: &Path, flags: &[&str], out: &Path) -> Output {
    run_java(flags, out, dir, "Region")
}

fn region<'a>(doc: &'a Value, method: &str) -> &'a Value {
    common::entry(doc, "regions", "method", method)
}

#[test]
fn counts_durations_threads_recursion_and_exceptions() {
    let dir = compile("Region.java", "region-counts");
    let out = dir.join("out.json");
    let flags = [
        "--region",
        "Region::sleepy",
        "--region",
        "Region::quick",
        "--region",
        "Region::rec",
        "--region",
        "Region::threaded",
        "--region",
        "Region::thrower",
        "--region",
        "Region::never",
        "--region-last",
        "50",
    ];
    let output = run(&dir, &flags, &out);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "sink 540310\n");
    let doc = read_profile_json(&out);
    assert_eq!(doc["mode"], "region");
    assert_eq!(doc["threads"], Value::Array(vec![]));
    assert_eq!(
        (
            u(&doc["methods"]["instrumented"]),
            u(&doc["methods"]["called"])
        ),
        (6, 5)
    );
    // (method, outermost invocations, threads, kept last durations)
    let expected = [
        ("sleepy", 5, 1, 5),
        // 1000 from main, 100 from the workers' `threaded`, each an outermost `quick`.
        ("quick", 1100, 5, 50),
        // 30 outermost calls of rec(10): the 10 re-entries of each are inside it.
        ("rec", 30, 1, 30),
        ("threaded", 100, 4, 50),
        // Each thrower(4) unwinds through 5 frames of itself.
        ("thrower", 10, 1, 10),
        ("never", 0, 0, 0),
    ];
    for (method, count, threads, last) in expected {
        let r = region(&doc, method);
        assert_eq!(u(&r["count"]), count, "{method} count");
        assert_eq!(u(&r["threads"]), threads, "{method} threads");
        assert_eq!(
            r["last_ns"].as_array().unwrap().len(),
            last,
            "{method} last"
        );
        let bars: u64 = r["distribution"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| u(&b["count"]))
            .sum();
        assert_eq!(bars, count, "{method} distribution");
    }
    // Thread.sleep(20) takes at least 20 ms, probe costs subtracted or not.
    let sleepy = region(&doc, "sleepy");
    for v in [
        &sleepy["min_ns"],
        &sleepy["percentiles"]["p50_ns"],
        &sleepy["uncompensated"]["min_ns"],
    ] {
        assert!(u(v) >= 20_000_000, "{sleepy}");
    }
    let p = &sleepy["percentiles"];
    assert!(u(&p["p50_ns"]) <= u(&p["p90_ns"]) && u(&p["p99_ns"]) <= u(&p["p99.9_ns"]));
    assert!(u(&p["p99.9_ns"]) <= u(&sleepy["max_ns"]));
    // A 10-iteration loop is faster than a 20 ms sleep, and compensation only subtracts.
    let quick = region(&doc, "quick");
    assert!(u(&quick["max_ns"]) < u(&sleepy["min_ns"]));
    assert!(u(&quick["total_ns"]) <= u(&quick["uncompensated"]["total_ns"]));
    // `uncertain` follows the call tree's rule on what was subtracted; 20 ms sleeps are sure.
    for r in doc["regions"].as_array().unwrap() {
        let total = u(&r["total_ns"]);
        let subtracted = u(&r["uncompensated"]["total_ns"]) - total;
        let marked = ferrofluid_profile::probe_dominated(total, subtracted);
        assert_eq!(
            r.get("uncertain") == Some(&Value::Bool(true)),
            marked,
            "{r}"
        );
    }
    assert!(sleepy.get("uncertain").is_none(), "{sleepy}");
    // `threaded` calls the region `quick`: that time is in both totals, and `threaded` says how
    // much of its own is `quick`'s. No other region runs one inside it (`rec` re-enters only
    // itself).
    let threaded = region(&doc, "threaded");
    let nested = u(&threaded["nested_ns"]);
    assert!(
        nested > 0 && nested < u(&threaded["total_ns"]),
        "{threaded}"
    );
    assert!(nested <= u(&quick["total_ns"]), "{threaded} {quick}");
    for method in ["sleepy", "quick", "rec", "thrower", "never"] {
        assert!(region(&doc, method).get("nested_ns").is_none(), "{method}");
    }
    // Folded stacks count each nanosecond once: `threaded` without its `quick`s.
    let folded = report_stdout(&out, &["--format", "collapsed"]);
    let expected: String = ["quick", "rec", "sleepy", "threaded", "thrower"]
        .iter()
        .map(|m| {
            let r = region(&doc, m);
            let own = u(&r["total_ns"]) - r["nested_ns"].as_u64().unwrap_or(0);
            format!("Region.{m} {own}\n")
        })
        .collect();
    assert_eq!(folded, expected);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn text_and_html_reports_and_an_empty_region() {
    let dir = compile("Region.java", "region-reports");
    let txt = dir.join("out.txt");
    run(&dir, &["--region", "Region::sleepy"], &txt);
    let text = std::fs::read_to_string(&txt).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "ferrofluid code-region profile");
    assert_eq!(lines[1], "methods: 1 instrumented, 1 called");
    assert!(lines[3].starts_with("marks: ~ marks a time"), "{text}");
    // The header may go on with a "! compensation unreliable" line on a busy machine.
    let table = lines
        .iter()
        .position(|l| l.starts_with("region "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(table == 5 || lines[4].starts_with("! "), "{text}");
    assert!(
        lines[table + 1].starts_with("Region.sleepy(I)V      5  "),
        "{text}"
    );
    assert!(
        text.contains("\nlatency distribution of Region.sleepy(I)V:\n"),
        "{text}"
    );
    assert!(
        text.contains("\nlast 5 durations, oldest first: "),
        "{text}"
    );

    let html = dir.join("out.html");
    run(&dir, &["--region", "Region::sleepy"], &html);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("<title>ferrofluid code-region profile</title>"));
    assert!(page.contains("Latency distribution of <code>Region.sleepy(I)V</code>"));
    assert!(!page.contains("http"), "the page loads nothing");

    let empty = dir.join("empty.txt");
    let output = run(&dir, &["--region", "Region::nothingLikeThis"], &empty);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "ferrofluid: warning: no method matched the region, so nothing was measured; check --region"
        ),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn root_and_region_together_are_refused_before_java_runs() {
    let output = ferrofluid()
        .args([
            "run",
            "--root",
            "A::b",
            "--region",
            "C::d",
            "--",
            "/nonexistent/java",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "ferrofluid: error: agent options `root` and `region` exclude each other: `region` measures only its own methods, `root` profiles a call subgraph\n"
    );
}
