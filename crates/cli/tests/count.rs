//! The `count` mode end to end in a real JVM (`tests/java/Count.java`): exact calls and
//! executed bytecodes per calling context under both block definitions, derived below from the
//! class's bytecode (javac 17, `--release 17`; `javap -c -p Count.class` shows the same
//! instructions); identical profiles from two runs; `-agentpath`; the report writers; `attach`
//! (`tests/java/CountAttach.java`, the same methods) counting only the calls made after it, a
//! thread that ended before the profile included; virtual threads (`tests/java/VThreads.java`,
//! JDK 21+), each counted in its own tree across the carriers it runs on.
//!
//! Derivations (each instruction executed counts 1):
//! - `h()`: getstatic, iconst_1, iadd, putstatic, return: 5.
//! - `g(i)`: 2 before the loop, the loop test (iload, iload, if_icmpge) i + 1 times, the body
//!   (invokestatic h, iinc, goto) i times, return: 2 + 3(i + 1) + 3i + 1 = 6 + 6i.
//! - `f()`: 2 + 3 · 11 (loop test) + 5 · 10 (invokestatic h, iload, invokestatic g, iinc,
//!   goto) + 1 = 86; it calls `h` 10 times (50 bytecodes) and `g(0..9)` 10 times:
//!   Σ(6 + 6i) = 60 + 6 · 45 = 330, which call `h` 0 + 1 + ... + 9 = 45 times (225).
//! - `cut(n)`: 17 instructions in one block (no branch); for n = 1, `iastore` (the 11th)
//!   throws. Default blocks count the block whole at its start: 4 · 17 = 68, 2 · 6 = 12 more
//!   than executed. Precise blocks end after each instruction that may throw (`newarray`,
//!   `iastore`, `ireturn`): 6 + 5 + 6, and a throwing call counts 6 + 5 = 11: 2 · 17 + 2 · 11 = 56.
//! - `cuts()`: 2 + 3 · 5 (loop test); a normal iteration runs the 8 instructions of its `try`
//!   block (getstatic, iload, iconst_2, irem, invokestatic cut, iadd, putstatic, goto) and the
//!   increment (iinc, goto): 10; a throwing one runs 5 of them (through invokestatic), the
//!   handler's 5 and the increment's 2: 12; return 1. 2 + 15 + 2 · 10 + 2 · 12 + 1 = 62.
//!   Default blocks count the `try` block whole when `cut` throws: 3 more per throw, 68.
//! - `work()`: 2 + 3 · 101 + 6 · 100 (iload, iconst_4, irem, invokestatic g, iinc, goto) + 1 =
//!   906; it calls `g(i % 4)` 100 times: 25 · (6 + 12 + 18 + 24) = 1500, which call `h`
//!   25 · 6 = 150 times (750).

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::{
    agentpath, attach_while_running, child, child_names, compile, read_profile_json, report,
    run_java, run_java_on, thread, u, JDK17_HOME,
};
use ferrofluid_testkit::jdk21_or_skip;

const ROOTS: [&str; 6] = [
    "--root",
    "Count::f",
    "--root",
    "Count::cuts",
    "--root",
    "Count::work",
];

/// (calls, bytecodes) of `node`.
fn counts(node: &Value) -> (u64, u64) {
    (u(&node["calls"]), u(&node["bytecodes"]))
}

/// The JP paper's Fig. 4 under `f`: 10 `h`, 10 `g(0..9)` calling `h` 45 times.
fn check_fig4(f: &Value) {
    assert_eq!(counts(f), (1, 86));
    assert_eq!(child_names(f), ["g", "h"]);
    assert_eq!(counts(child(f, "h")), (10, 50));
    let g = child(f, "g");
    assert_eq!(counts(g), (10, 330));
    assert_eq!(child_names(g), ["h"]);
    assert_eq!(counts(child(g, "h")), (45, 225));
}

/// `work` (one call): `g(i % 4)` 100 times, which call `h` 150 times.
fn check_work(root: &Value) {
    assert_eq!(child_names(root), ["work"]);
    let work = child(root, "work");
    assert_eq!(counts(work), (1, 906));
    let g = child(work, "g");
    assert_eq!(counts(g), (100, 1500));
    assert_eq!(counts(child(g, "h")), (150, 750));
}

/// Checks the trees of a profile of `Count` with the roots [`ROOTS`]; `cut` and `cuts` counted
/// with `cut_bytecodes` and `cuts_bytecodes`.
fn check(doc: &Value, cut_bytecodes: u64, cuts_bytecodes: u64) {
    assert_eq!(doc["mode"], "count");
    assert_eq!(
        doc["metrics"],
        serde_json::json!([{"name": "calls", "unit": "count"}, {"name": "bytecodes", "unit": "count"}])
    );
    let threads = doc["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 9, "main and 8 workers");
    let main = &thread(doc, "main")["root"];
    // Children in name order: `cuts` before `f`.
    assert_eq!(child_names(main), ["cuts", "f"]);
    check_fig4(child(main, "f"));
    let cuts = child(main, "cuts");
    assert_eq!(counts(cuts), (1, cuts_bytecodes));
    assert_eq!(child_names(cuts), ["cut"]);
    assert_eq!(counts(child(cuts, "cut")), (4, cut_bytecodes));
    for t in 0..8 {
        check_work(&thread(doc, &format!("worker-{t}"))["root"]);
    }
    for t in threads {
        assert_eq!(t.get("overflow_calls"), None);
        assert_eq!(t.get("unmatched_exits"), None);
    }
}

/// `ferrofluid run --mode count ROOTS FLAGS -o DIR/NAME -- java -cp DIR Count`, which prints
/// `done`: the profile's path.
fn count(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let flags: Vec<&str> = ["--mode", "count"]
        .iter()
        .chain(&ROOTS)
        .chain(flags)
        .copied()
        .collect();
    let output = run_java(&flags, &out, dir, "Count");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n");
    out
}

#[test]
fn fig4_exceptions_and_8_threads_are_counted_exactly_under_both_block_definitions() {
    let dir = compile("Count.java", "count-exact");
    let out = count(&dir, "default.json", &[]);
    // Default blocks over-count the blocks exceptions cut short: `cut` by 12, `cuts` by 6.
    check(&read_profile_json(&out), 68, 68);

    let out = count(&dir, "precise.json", &["--blocks", "precise"]);
    check(&read_profile_json(&out), 56, 62);
}

/// The document without what differs between runs: thread ids, threads in name order.
fn canonical(mut doc: Value) -> Value {
    let threads = doc["threads"].as_array_mut().unwrap();
    for t in threads.iter_mut() {
        t.as_object_mut().unwrap().remove("id");
    }
    threads.sort_by_key(|t| t["name"].as_str().unwrap().to_owned());
    doc
}

#[test]
fn two_runs_give_identical_profiles_and_agentpath_gives_the_same() {
    let dir = compile("Count.java", "count-repro");
    let first = count(&dir, "first.json", &["--blocks", "precise"]);
    let second = count(&dir, "second.json", &["--blocks", "precise"]);
    let first = canonical(read_profile_json(&first));
    check(&first, 56, 62);
    assert_eq!(first, canonical(read_profile_json(&second)));

    let direct = dir.join("direct.json");
    let options = format!(
        "mode=count,root=Count::f,root=Count::cuts,root=Count::work,blocks=precise,file={}",
        direct.display()
    );
    agentpath(Path::new(JDK17_HOME), &options, &dir, &["Count"]);
    assert_eq!(first, canonical(read_profile_json(&direct)));
}

#[test]
fn reports_weigh_by_bytecodes() {
    let dir = compile("Count.java", "count-reports");
    let out = count(&dir, "out.json", &[]);
    let report = |name: &str| report(&out, &dir.join(name), &[]);
    let collapsed = report("out.collapsed");
    let main: Vec<&str> = collapsed
        .lines()
        .filter(|l| l.starts_with("main;"))
        .collect();
    assert_eq!(
        main,
        [
            "main;Count.cuts 68",
            "main;Count.cuts;Count.cut 68",
            "main;Count.f 86",
            "main;Count.f;Count.g 330",
            "main;Count.f;Count.g;Count.h 225",
            "main;Count.f;Count.h 50",
        ]
    );
    let text = report("out.txt");
    assert!(text.starts_with("ferrofluid count profile\n"), "{text}");
    // 1 + 4 + 1 + 10 + 45 + 10 calls on main, 1 + 100 + 150 on each worker; bytecodes likewise.
    let calls = 71 + 8 * 251;
    let bytecodes = 68 + 68 + 86 + 330 + 225 + 50 + 8 * (906 + 1500 + 750);
    assert!(
        text.contains(&format!("total: {calls} calls, {bytecodes} bytecodes\n")),
        "{text}"
    );
    // The hottest method by its own bytecodes over all threads: `g`, 330 + 8 · 1500.
    let spots = text.split("by self bytecodes)\n").nth(1).unwrap();
    let first = spots.lines().nth(1).unwrap();
    assert!(
        first.contains(" 12330 ") && first.ends_with("Count.g(I)V"),
        "{first}"
    );
}

/// `attach` to a program that ran the roots before: only the calls made after it are counted,
/// exactly, and the thread that ran `work` and ended before the profile was written keeps its
/// tree.
#[test]
fn attach_counts_the_calls_after_it_and_keeps_ended_threads() {
    let dir = compile("CountAttach.java", "count-attach");
    // `eager`: the whole subgraph is instrumented before profiling starts (attach reveals
    // asynchronously, which `lazy` would leave to the first calls).
    let flags = [
        "--mode",
        "count",
        "--scheme",
        "eager",
        "--root",
        "CountAttach::f",
        "--root",
        "CountAttach::work",
    ];
    let doc = attach_while_running(Path::new(JDK17_HOME), &dir, &["CountAttach"], &flags);
    assert_eq!(doc["mode"], "count");
    let mut names = common::thread_names(&doc);
    names.sort_unstable();
    assert_eq!(names, ["ended", "main"], "{doc}");
    // One `f` after attach (the three before are not counted): the counts of `Count`'s `f`.
    let main = &thread(&doc, "main")["root"];
    assert_eq!(child_names(main), ["f"]);
    check_fig4(child(main, "f"));
    check_work(&thread(&doc, "ended")["root"]);
    for t in doc["threads"].as_array().unwrap() {
        assert_eq!(t.get("unmatched_exits"), None, "{t}");
    }
    assert_eq!(doc.get("unrevealed_calls"), None, "{doc}");
}

/// 100 virtual threads run the root `task`, blocking after each of its 50 `leaf` calls so that
/// they move between carriers: each has its own tree with `task`'s and `leaf`'s exact counts
/// (`task(n)`: 2 + 3 · 51 (loop test) + 7 · 50 (iload, invokestatic leaf, iload, iload,
/// invokestatic block, iinc, goto) + 1 = 506; `leaf(i)`: getstatic, iload, i2l, ladd,
/// putstatic, return: 6), none on a carrier. Skipped without a JDK 21+.
#[test]
fn virtual_threads_count_in_their_own_trees() {
    let Some(jdk) = jdk21_or_skip() else {
        return;
    };
    let dir = compile("VThreads.java", "count-vthreads");
    let out = dir.join("out.json");
    let flags = common::args("--mode count --root VThreads::task --include VThreads");
    let output = run_java_on(&jdk, &flags, &out, &dir, "VThreads", &[]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n");
    let doc = read_profile_json(&out);
    let threads = doc["threads"].as_array().unwrap();
    let virtuals: Vec<&Value> = threads.iter().filter(|t| t["virtual"] == true).collect();
    assert_eq!(virtuals.len(), 100, "{doc}");
    assert_eq!(threads.len(), 101, "100 virtual threads and main: {doc}");
    let mut ids: Vec<u64> = virtuals.iter().map(|t| u(&t["id"])).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 100);
    let main = thread(&doc, "main");
    assert_eq!(main.get("virtual"), None);
    for t in virtuals.iter().copied().chain([main]) {
        if t["virtual"] == true {
            assert_eq!(t["name"], format!("virtual#{}", t["id"]), "{t}");
        }
        let root = &t["root"];
        assert_eq!(child_names(root), ["task"], "{t}");
        let task = child(root, "task");
        assert_eq!(counts(task), (1, 506), "{t}");
        assert_eq!(child_names(task), ["block", "leaf"], "{t}");
        assert_eq!(counts(child(task, "leaf")), (50, 300), "{t}");
        assert_eq!(u(&child(task, "block")["calls"]), 50, "{t}");
        assert_eq!(t.get("unmatched_exits"), None, "{t}");
    }
}

/// Trivial methods of one basic block take one probe, at entry, that counts the call and the
/// block's bytecodes whether it returns or throws (`tests/java/Leaves.java`, `work(6)` three
/// times): `getX` (aload_0, getfield, ireturn: 3), `twice` (iload_0, iconst_2, imul, ireturn:
/// 4), `at` (aload_0, getfield, iload_1, iaload, ireturn: 5, counted whole by Default blocks
/// when `iaload` throws, for indexes 4 and 5).
#[test]
fn trivial_leaves_count_calls_and_bytecodes_at_entry() {
    let dir = compile("Leaves.java", "count-leaves");
    let out = dir.join("leaves.json");
    let flags = [
        "--mode",
        "count",
        "--root",
        "Leaves::work",
        "--include",
        "Leaves",
    ];
    let output = run_java(&flags, &out, &dir, "Leaves");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "114\n");
    let doc = read_profile_json(&out);
    let main = thread(&doc, "main");
    let work = child(&main["root"], "work");
    assert_eq!(u(&work["calls"]), 3);
    assert_eq!(child_names(work), ["at", "getX", "twice"]);
    assert_eq!(counts(child(work, "getX")), (18, 54));
    assert_eq!(counts(child(work, "twice")), (18, 72));
    assert_eq!(counts(child(work, "at")), (18, 90));
}
