//! Virtual threads (JDK 21+) end to end: a root run in 100 virtual threads that block (sleep,
//! park, a contended lock, a monitor, a yield) and resume on other carriers is counted exactly,
//! one tree per virtual thread, with `ferrofluid run` and with `ferrofluid attach`; the
//! platform thread beside them is unchanged; the text report merges the virtual threads by
//! default and lists them one by one on request; sampled timing counts them as exactly.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::{
    attach_while_running, calls, child, child_names, compile, read_profile_json, report,
    report_stdout, run_java_on, thread,
};
use ferrofluid_testkit::jdk21_or_skip;

const THREADS: usize = 100;
const CALLS: u64 = 50;

/// The root `task` of `VThreads`, and that class alone, revealed before the first calls return.
const TASK: &str = "--root VThreads::task --include VThreads --reveal sync";

/// `ferrofluid run FLAGS -o DIR/out.json -- java -cp DIR MAIN` on `jdk`, `MAIN.java` compiled
/// into a fresh `DIR`: the directory, the profile's path and what the program printed, which
/// ends with `done`.
fn run_on(jdk: &Path, main: &str, tag: &str, flags: &[&str]) -> (PathBuf, PathBuf, String) {
    let dir = compile(&format!("{main}.java"), tag);
    let out = dir.join("out.json");
    let output = run_java_on(jdk, flags, &out, &dir, main, &[]);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(stdout.ends_with("done\n"), "{stdout}");
    (dir, out, stdout)
}

/// The number a line of `stdout` gives after `prefix`.
fn printed(stdout: &str, prefix: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {prefix:?} line: {stdout}"))
}

/// [`run_on`] of `VThreads` with the flags [`TASK`] and `flags`, which prints `done` alone.
fn run_task(jdk: &Path, tag: &str, flags: &[&str]) -> (PathBuf, PathBuf) {
    let flags: Vec<&str> = common::args(TASK)
        .into_iter()
        .chain(flags.iter().copied())
        .collect();
    let (dir, out, stdout) = run_on(jdk, "VThreads", tag, &flags);
    assert_eq!(stdout, "done\n");
    (dir, out)
}

/// The tree of one `task` run: one call, 50 `leaf` and 50 `block` calls under it, nothing else.
fn assert_one_task(t: &Value) {
    let root = &t["root"];
    assert_eq!(child_names(root), ["task"], "{t}");
    let task = child(root, "task");
    assert_eq!(calls(task), 1, "{t}");
    let mut names = child_names(task);
    names.sort_unstable();
    assert_eq!(names, ["block", "leaf"], "{t}");
    assert_eq!(calls(child(task, "leaf")), CALLS, "{t}");
    assert_eq!(calls(child(task, "block")), CALLS, "{t}");
    for leaf in ["leaf", "block"] {
        assert!(child_names(child(task, leaf)).is_empty(), "{t}");
    }
}

/// One entry per virtual thread, each `virtual#ID` with its own exact tree; the main thread
/// (a platform thread) as ever.
fn assert_exact(doc: &Value) {
    assert_eq!(doc["dropped_events"].as_u64().unwrap_or(0), 0, "{doc}");
    let threads = doc["threads"].as_array().unwrap();
    let virtuals: Vec<&Value> = threads.iter().filter(|t| t["virtual"] == true).collect();
    assert_eq!(virtuals.len(), THREADS, "{doc}");
    let mut ids: Vec<u64> = virtuals.iter().map(|t| t["id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), THREADS);
    for t in &virtuals {
        assert_eq!(t["name"], format!("virtual#{}", t["id"]), "{t}");
        assert_one_task(t);
    }
    let leaves: u64 = virtuals
        .iter()
        .map(|t| calls(child(child(&t["root"], "task"), "leaf")))
        .sum();
    assert_eq!(leaves, THREADS as u64 * CALLS);
    let main = thread(doc, "main");
    assert!(main.get("virtual").is_none(), "{main}");
    assert_one_task(main);
    assert_eq!(threads.len(), THREADS + 1, "{doc}");
}

#[test]
fn a_root_in_virtual_threads_started_by_run_is_exact_with_one_tree_each() {
    let Some(jdk) = jdk21_or_skip() else {
        return;
    };
    let (dir, out) = run_task(&jdk, "vthreads-run", &[]);
    let doc = read_profile_json(&out);
    assert_exact(&doc);

    // Text: one merged entry by default, one per virtual thread on request.
    let report_of = |flags: &[&str]| report_stdout(&out, flags);
    let merged = report_of(&[]);
    assert!(merged.contains("threads: 2\n"), "{merged}");
    assert!(
        merged.contains("Call tree of thread \"virtual threads (100)\" (id 0)"),
        "{merged}"
    );
    assert!(merged.contains("Call tree of thread \"main\""), "{merged}");
    assert_eq!(
        merged.matches("Call tree of thread ").count(),
        2,
        "{merged}"
    );
    let each = report_of(&["--virtual-threads", "each"]);
    assert!(each.contains("threads: 101\n"), "{each}");
    assert_eq!(each.matches("Call tree of thread ").count(), 101, "{each}");
    // The hot spots count every call either way.
    for text in [&merged, &each] {
        let leaf = text
            .lines()
            .find(|l| l.ends_with("VThreads.leaf(I)V"))
            .unwrap_or_else(|| panic!("{text}"));
        let words: Vec<&str> = leaf.split_whitespace().collect();
        assert_eq!(words[2], "5050", "{leaf}");
    }
    let page = report(&out, &dir.join("out.html"), &[]);
    assert!(page.contains("virtual threads (100)"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sampled timing keeps the same exact trees, one per virtual thread (its probes are the
/// counting ones, its contexts per virtual thread), and says where its times come from.
#[test]
fn a_root_in_virtual_threads_with_sampled_timing_is_exact_with_one_tree_each() {
    let Some(jdk) = jdk21_or_skip() else {
        return;
    };
    let (dir, out) = run_task(&jdk, "vthreads-sampled", &["--timing", "sampled"]);
    let doc = read_profile_json(&out);
    assert_eq!(doc["sampling"]["source"], "thread_clocks", "{doc}");
    assert_exact(&doc);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_root_in_virtual_threads_of_an_attached_jvm_is_exact_with_one_tree_each() {
    let Some(jdk) = jdk21_or_skip() else {
        return;
    };
    let dir = compile("VThreads.java", "vthreads-attach");
    // The program runs its virtual threads and exits: attach ends with the whole of it.
    let line = format!("{TASK} --duration 5m");
    let flags = common::args(&line);
    let doc = attach_while_running(&jdk, &dir, &["VThreads"], &flags);
    assert_exact(&doc);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--cpu` on virtual threads: each one's CPU clock counts its own time on every carrier it ran
/// on, so every node's CPU time fits in its wall time, on each virtual thread as on the platform
/// thread (a carrier's clock read at entry on one carrier and at exit on another would not).
#[test]
fn thread_cpu_time_of_virtual_threads_is_their_own() {
    let Some(jdk) = jdk21_or_skip() else {
        return;
    };
    let (dir, out) = run_task(&jdk, "vthreads-cpu", &["--cpu"]);
    let doc = read_profile_json(&out);
    assert_exact(&doc);
    // Measured against measured: the fields a reader falls back to when they are absent.
    let field = |node: &Value, key: &str, fallback: &str| {
        node.get(key)
            .or_else(|| node.get(fallback))
            .and_then(Value::as_u64)
    };
    for t in doc["threads"].as_array().unwrap() {
        let task = child(&t["root"], "task");
        assert!(field(task, "measured_cpu_ns", "cpu_ns").is_some(), "{t}");
        for node in [task, child(task, "leaf"), child(task, "block")] {
            let cpu = field(node, "measured_cpu_ns", "cpu_ns").unwrap_or(0);
            let wall = field(node, "measured_total_ns", "total_ns").unwrap_or(0);
            let calls = node["calls"].as_u64().unwrap_or(0);
            assert!(
                ferrofluid_testkit::cpu_fits_wall_calls(cpu, wall, calls),
                "{} ns of CPU in {wall} ns: {t}",
                cpu
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A virtual thread parked inside the profiled extent when the profile is taken is idle, as a
/// blocked platform thread is: its wait is marked on the thread and on its innermost open frame.
#[test]
fn a_virtual_thread_parked_when_the_profile_is_taken_is_idle() {
    let Some(jdk) = jdk21_or_skip() else {
        return;
    };
    let flags = ["--include", "IdleVirtual"];
    let (dir, out, stdout) = run_on(&jdk, "IdleVirtual", "vthreads-idle", &flags);
    let id = printed(&stdout, "virtual ");
    let doc = read_profile_json(&out);
    let parker = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no thread {id}: {doc}"));
    assert_eq!(parker["virtual"], true, "{parker}");
    assert_eq!(parker["waiting"]["state"], "parked", "{parker}");
    let outer = child(&parker["root"], "parker");
    assert!(outer.get("waiting").is_none(), "{outer}");
    assert_eq!(child(outer, "parkHere")["waiting"], true, "{parker}");
    let main = thread(&doc, "main");
    assert!(main.get("waiting").is_none(), "{main}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--cpu` on virtual threads that spin and sleep: the CPU time of their roots adds up to no more
/// than the whole process used meanwhile (a virtual thread charged with its carriers' clocks
/// gets the time of every virtual thread that ran on them while it slept: about 100 times as
/// much).
#[test]
fn virtual_threads_cpu_time_adds_up_to_no_more_than_the_process_used() {
    let Some(jdk) = jdk21_or_skip() else {
        return;
    };
    let flags = common::args("--root VThreadsCpu::task --include VThreadsCpu --reveal sync --cpu");
    let (dir, out, stdout) = run_on(&jdk, "VThreadsCpu", "vthreads-cpu-sum", &flags);
    let process = printed(&stdout, "cpu ");
    let doc = read_profile_json(&out);
    let virtuals: Vec<&Value> = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["virtual"] == true)
        .collect();
    assert_eq!(virtuals.len(), 100, "{doc}");
    let roots: u64 = virtuals
        .iter()
        .map(|t| {
            let task = child(&t["root"], "task");
            assert_eq!(calls(task), 1, "{t}");
            task.get("measured_cpu_ns")
                .or_else(|| task.get("cpu_ns"))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        })
        .sum();
    assert!(roots > 0, "{doc}");
    assert!(
        roots <= process + process / 10,
        "the virtual threads' roots took {roots} ns of CPU, the process {process} ns"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
