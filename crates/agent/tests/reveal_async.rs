//! `reveal=async`: the thread reaching new code does not wait; the agent's reveal thread
//! instruments what it calls a moment later, and the calls made meanwhile are counted.

mod harness;

use std::path::Path;

use ferrofluid_testkit::{javac, scratch_dir, JDK17_HOME};
use harness::{call_paths, run_with_agent_at_startup};

#[test]
fn async_revelation_instruments_the_callees_soon_after_and_counts_what_ran_before() {
    let dir = scratch_dir(Path::new(env!("CARGO_TARGET_TMPDIR")), "reveal-async");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/AsyncReveal.java");
    javac(Path::new(JDK17_HOME), &["--release", "17"], &dir, [src]);
    let log = dir.join("agent.log");
    let (profile, log, stdout) = run_with_agent_at_startup(
        Path::new(JDK17_HOME),
        &dir,
        "root=AsyncReveal::root,reveal=async",
        &[],
        &["AsyncReveal", log.to_str().unwrap()],
    );

    // The program's answers are unchanged.
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!((words[0], words[2]), ("calls", "sum"), "{stdout}");
    let calls: u64 = words[1].parse().unwrap();
    let leaf = |x: i32| x.wrapping_mul(31).wrapping_add(7);
    let sum: i64 = (0..calls as i32)
        .map(|i| i64::from((leaf(i) ^ leaf(i.wrapping_add(1))).wrapping_add(1)))
        .sum();
    assert_eq!(words[3], sum.to_string(), "{stdout}");
    assert!(
        calls > 1000,
        "the reveal thread never logged: {stdout}\n{log}"
    );

    let paths = call_paths(&profile);
    let at = |p: &str| paths.get(p).copied().unwrap_or(0);
    // The root is instrumented before it first runs: every call counted.
    assert_eq!(at("AsyncReveal.root"), calls, "{paths:?}");
    // Its callees only from the reveal thread's retransformation on: at least the last 1000
    // calls, never the first one.
    let middle = at("AsyncReveal.root/AsyncReveal.middle");
    assert!(
        (1000..calls).contains(&middle),
        "{middle} of {calls}: {paths:?}"
    );
    // `leaf` was looked ahead with `middle` (one retransformation): each counted `middle` call
    // counts its two `leaf` calls.
    assert_eq!(
        at("AsyncReveal.root/AsyncReveal.middle/AsyncReveal.leaf"),
        2 * middle,
        "{paths:?}"
    );
    // Every root call that ran without its callees is counted.
    let marker = "calls before their callees were instrumented (reveal=async): ";
    let unrevealed: u64 = log
        .lines()
        .rev()
        .find_map(|l| l.split_once(marker))
        .and_then(|(_, n)| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no unrevealed count in the log:\n{log}"));
    assert!(
        unrevealed >= calls - middle,
        "{unrevealed} unrevealed, {} root calls without callees",
        calls - middle
    );
    assert!(
        log.contains("asynchronous revelation: 1 first invocations"),
        "{log}"
    );
}
