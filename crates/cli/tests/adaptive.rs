//! `ferrofluid run --adaptive` in a real JVM: the probes of a method called often and shorter
//! than its probes are removed while the program runs; the rest of the tree keeps exact counts
//! and every frame closes.

use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

mod common;
use common::{child, child_names, compile, read_profile_json, run_java_with, thread};

/// One profiled JVM at a time: each keeps a core busy, its compiler and collector threads
/// beside it, and two at once on a 2-CPU machine can starve a collector until a ring fills and
/// events are dropped, which the tests check never happens.
static ONE_JVM: Mutex<()> = Mutex::new(());

fn one_jvm() -> MutexGuard<'static, ()> {
    ONE_JVM.lock().unwrap_or_else(|p| p.into_inner())
}

/// `ferrofluid run FLAGS --include Adaptive --adaptive` on `Adaptive ARGS`, one JVM at a time:
/// the profile (with one method's probes dropped), the agent's log and the program's rounds.
fn profile(tag: &str, flags: &[&str], args: &[&str]) -> (Value, String, u64) {
    let _one = one_jvm();
    let dir = compile("Adaptive.java", tag);
    let out = dir.join("adaptive.json");
    let log = dir.join("agent.log");
    let mut all = flags.to_vec();
    all.extend(["--include", "Adaptive", "--adaptive", "--log"]);
    all.push(log.to_str().unwrap());
    let output = run_java_with(&all, &out, &dir, "Adaptive", args);
    let rounds: u64 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap();
    let doc = read_profile_json(&out);
    assert_eq!(doc["methods"]["probes_dropped"], 1, "{}", doc["methods"]);
    (doc, std::fs::read_to_string(&log).unwrap(), rounds)
}

/// `round`'s node after `rounds` rounds: exact calls; `big` keeps its probes (one exact call a
/// round); `small` lost them after at least 10000 calls, before the program ended.
fn assert_round(round: &Value, rounds: u64) {
    assert_eq!(round["calls"], rounds, "{round}");
    assert_eq!(child(round, "big")["calls"], rounds, "{round}");
    assert!(child(round, "big").get("probes_dropped").is_none());
    let small = child(round, "small");
    assert_eq!(small["probes_dropped"], true, "{small}");
    let calls = small["calls"].as_u64().unwrap();
    assert!(
        (10_000..rounds * 20_000).contains(&calls),
        "{calls} of {} calls",
        rounds * 20_000
    );
}

/// Runs `Adaptive ARGS` (`big`'s iterations per round, maybe `hold`) with root `round` (and
/// `hold`); checks what every adaptive run must show, and returns the profile and the agent's
/// log.
fn run_adaptive(tag: &str, args: &[&str]) -> (Value, String) {
    let roots = ["--root", "Adaptive::round", "--root", "Adaptive::hold"];
    let (doc, log, rounds) = profile(tag, &roots, args);
    let main = thread(&doc, "main");
    assert!(main.get("unmatched_exits").is_none(), "{main}");
    assert!(main.get("dropped_events").is_none(), "{main}");
    let roots = main["root"]["children"].as_array().unwrap();
    assert_eq!(roots.len(), 1, "{main}");
    assert_round(&roots[0], rounds);
    assert!(
        log.contains(
            "adaptive: removed the probes of 1 methods called at least 10000 times and shorter \
             than their probes (found in "
        ) && log.contains(" ms): Adaptive.small(I)I\n"),
        "{log}"
    );
    (doc, log)
}

/// Dropped in Java (`Hooks.dropped`): entries at once, exits once no call of `small` entered
/// before the drop could still be running.
fn assert_quiet(log: &str) {
    assert!(
        log.contains("adaptive: the exits of 1 dropped methods now end in Java\n"),
        "{log}"
    );
}

/// `big` runs ~20 µs a round, `small` 20,000 times: dropped in Java, `small`'s gates would
/// cost a large share of the round (so large that a busy machine stretching the rounds' time
/// does not bring it under the threshold), so its class is retransformed too, and only the calls
/// already running keep the old code's gates (no exits to end in Java later).
#[test]
fn short_frequent_methods_lose_their_probes_as_the_program_runs() {
    let (_, log) = run_adaptive("adaptive", &["20000"]);
    assert!(!log.contains("now end in Java"), "{log}");
    assert!(
        log.contains("adaptive: the gates of 1 methods of Adaptive to drop would cost ")
            && log.contains("% of the time inside roots: retransforming the class\n")
            && log.contains(
                "adaptive: retransformed 1 classes without the gates of 1 dropped methods\n"
            ),
        "{log}"
    );
}

/// With `big` ~50 times longer, the gates would cost well under 2% of the round: the class is
/// not retransformed, the probes return in Java.
#[test]
fn a_class_whose_dropped_gates_cost_little_is_not_retransformed() {
    let (_, log) = run_adaptive("adaptive-long", &["10000000"]);
    assert_quiet(&log);
    assert!(
        !log.contains("retransforming the class") && !log.contains("adaptive: retransformed"),
        "{log}"
    );
}

/// A thread sleeps inside a root the whole run: `small`'s drop can never be quiet (that thread
/// might have entered `small` before the drop, unseen), so after a second its class is
/// retransformed instead, and its exits stop reaching the agent.
#[test]
fn a_drop_held_back_by_a_blocked_root_thread_retransforms_after_a_second() {
    let (doc, log) = run_adaptive("adaptive-hold", &["10000000", "hold"]);
    let holder = thread(&doc, "holder");
    let holds = holder["root"]["children"].as_array().unwrap();
    assert_eq!(holds.len(), 1, "{holder}");
    assert_eq!(holds[0]["method"], "hold");
    assert_eq!(holds[0]["calls"], 1);
    assert!(!log.contains("now end in Java"), "{log}");
    assert!(
        log.contains(
            "adaptive: 1 dropped methods were not quiet after 1000 ms (a thread stays inside a \
             root without recording anything): their classes retransformed\n"
        ) && log
            .contains("adaptive: retransformed 1 classes without the gates of 1 dropped methods\n"),
        "{log}"
    );
}

/// With no root (`--scheme total`) every instrumented frame counts in the thread's depth, so
/// the probes are dropped by retransforming: dropped in Java, the exits of `small` would lower
/// a depth its entries no longer raised, and `round`'s exits would be lost (without it, `round`
/// nested in itself, 211 + 1 + 9918 calls deep, instead of 10130 calls under `main`).
#[test]
fn without_a_root_the_tree_stays_exact_as_probes_are_dropped() {
    // A ring that overflowed (its collector starved of CPU on a loaded machine) says so with
    // `dropped_events`, and a lost event is an unmatched exit: such a run tests the machine, not
    // the tree, and is repeated (twice at most).
    let mut attempt = 0;
    let (doc, log, rounds) = loop {
        let run = profile("adaptive-total", &["--scheme", "total"], &[]);
        attempt += 1;
        if thread(&run.0, "main").get("dropped_events").is_none() || attempt == 3 {
            break run;
        }
    };
    let main_thread = thread(&doc, "main");
    assert!(
        main_thread.get("unmatched_exits").is_none(),
        "{main_thread}"
    );
    assert!(main_thread.get("overflow_calls").is_none(), "{main_thread}");
    let main = &main_thread["root"]["children"][0];
    assert_eq!(main["method"], "main", "{main_thread}");
    let children = main["children"].as_array().unwrap();
    assert_eq!(children.len(), 1, "{main}");
    let round = &children[0];
    assert_eq!(round["method"], "round");
    assert_eq!(round["calls"], rounds);
    let names = child_names(round);
    assert_eq!(names.len(), 2, "{round}");
    assert!(
        names.contains(&"small") && names.contains(&"big"),
        "{round}"
    );
    assert_eq!(child(round, "big")["calls"], rounds);
    assert!(
        log.contains(" ms): Adaptive.small(I)I\n") && !log.contains("now end in Java"),
        "{log}"
    );
}

/// With sampled timing the budget decides: `small`'s 20000 calls a round would cost far more
/// than 5% of the round's CPU time, so its probes go; `big`, called once a round, keeps them
/// and its exact calls, and the root's time is what was sampled in it.
#[test]
fn sampled_timing_removes_the_probes_over_budget() {
    let flags = ["--timing", "sampled", "--root", "Adaptive::round"];
    let (doc, log, rounds) = profile("adaptive-sampled", &flags, &["200000"]);
    assert_eq!(doc["sampling"]["source"], "thread_clocks", "{doc}");
    let main = thread(&doc, "main");
    let round = child(&main["root"], "round");
    assert_round(round, rounds);
    assert!(round["total_ns"].as_u64().unwrap() > 0, "{round}");
    assert!(
        log.contains("removed the probes of 1 methods (the most called: Adaptive.small(I)I)"),
        "{log}"
    );
}
