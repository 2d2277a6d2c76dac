//! Threads in a real JVM: their ids are the Java ids (`Thread.getId()`, jcmd's `#N`), and those
//! found blocked when the profile is taken (waiting on a monitor, sleeping) are idle: their wait
//! is marked in the document and listed apart from the hot spots in the reports.

use std::collections::BTreeMap;

use serde_json::Value;

mod common;
use common::{child, compile, read_profile_json, report_stdout, run_java, thread};

/// `Idle` profiled whole (`--include Idle`, no root); the profile, the program's output and the
/// directory.
fn profile_idle(tag: &str) -> (Value, BTreeMap<String, u64>, std::path::PathBuf) {
    let dir = compile("Idle.java", tag);
    let out = dir.join("idle.json");
    let output = run_java(&["--include", "Idle"], &out, &dir, "Idle");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(stdout.ends_with("done\n"), "{stdout}");
    let ids: BTreeMap<String, u64> = stdout
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(name, id)| (name.to_owned(), id.parse().unwrap()))
        .collect();
    assert_eq!(ids.len(), 3, "{stdout}");
    (read_profile_json(&out), ids, dir)
}

#[test]
fn threads_carry_their_java_ids_and_blocked_ones_are_idle() {
    let (doc, ids, dir) = profile_idle("idle");
    // The Java ids the threads printed, as `jcmd PID Thread.print` shows them (`#N`).
    for (name, id) in &ids {
        assert_eq!(thread(&doc, name)["id"], *id, "{name}: {doc}");
    }
    assert_eq!(ids["main"], 1);
    assert_eq!(doc["threads"].as_array().unwrap().len(), 3, "{doc}");

    let main = thread(&doc, "main");
    assert!(main.get("waiting").is_none(), "{main}");
    let expect = [
        (
            "waiter",
            "waiter",
            "waitHere",
            "waiting",
            "java.lang.Object.wait",
        ),
        (
            "sleeper",
            "sleeper",
            "sleepHere",
            "sleeping",
            "java.lang.Thread.sleep",
        ),
    ];
    for (name, outer, inner, state, frame) in expect {
        let t = thread(&doc, name);
        assert_eq!(
            t["waiting"],
            serde_json::json!({"state": state, "frame": frame}),
            "{t}"
        );
        let outer = child(&t["root"], outer);
        assert!(outer.get("waiting").is_none(), "{outer}");
        let blocked = child(outer, inner);
        assert_eq!(blocked["waiting"], true, "{blocked}");
        // The whole wait is its self time (it calls nothing instrumented).
        assert_eq!(blocked["self_ns"], blocked["total_ns"], "{blocked}");
    }

    let text = |flags: &[&str]| report_stdout(&dir.join("idle.json"), flags);
    let report = text(&[]);
    let waited = |name: &str, inner: &str| {
        let t = thread(&doc, name);
        let outer = &t["root"]["children"][0];
        child(outer, inner)["self_ns"].as_u64().unwrap()
    };
    let idle_ns = waited("waiter", "waitHere") + waited("sleeper", "sleepHere");
    let total_ns: u64 = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["root"]["total_ns"].as_u64().unwrap())
        .sum();
    let ms = |ns: u64| {
        let us = (ns + 500) / 1000;
        format!("{}.{:03}", us / 1000, us % 1000)
    };
    assert!(
        report.contains(&format!(
            "Hot spots (busy time of all threads, by self time; {} ms of {} ms in total; {} ms \
             idle in 2 blocked threads, listed below)\n",
            ms(total_ns - idle_ns),
            ms(total_ns),
            ms(idle_ns)
        )),
        "{report}"
    );
    assert!(
        report.contains(
            "  1 thread waiting in Idle.waitHere()V (on top of the stack: java.lang.Object.wait)\n"
        ) && report.contains(
            "  1 thread sleeping in Idle.sleepHere()V (on top of the stack: java.lang.Thread.sleep)\n"
        ),
        "{report}"
    );
    let included = text(&["--include-idle"]);
    assert!(
        included.contains(&format!(
            "Hot spots (all threads, by self time, idle time included; {} ms in total, {} ms idle \
             in 2 blocked threads)\n",
            ms(total_ns),
            ms(idle_ns)
        )),
        "{included}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
