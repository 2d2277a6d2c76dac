//! `ferrofluid attach PID --reset` on a profile started by `ferrofluid run`: what was collected
//! before is gone, a call in flight counts its time from the reset but not its call, and what
//! follows is counted exactly; in code-region mode too. And `--reset` without an agent.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

mod common;
use common::{
    attach, calls, child, child_names, compile, ferrofluid, java, read_profile_json, report_stdout,
    run_command, Program, JDK17_HOME,
};

/// Runs `Warm` under `ferrofluid run FLAGS`, resets the profile when the program says it is warm,
/// lets it finish; returns the profile, the program's last line and what `--reset` printed.
fn run_with_reset(flags: &[&str], tag: &str) -> (Value, String, String) {
    let dir = compile("Warm.java", tag);
    let (go, out) = (dir.join("go"), dir.join("out.json"));
    let mut run = Program::spawn(
        run_command(Path::new(JDK17_HOME), flags, &out, &dir, "Warm")
            .arg(&go)
            .stderr(Stdio::piped()),
    );
    let warm = run.line();
    let pid = warm.strip_prefix("warm ").map(str::to_owned);
    let reset = pid.map(|pid| {
        ferrofluid()
            .args(["attach", &pid, "--reset"])
            .output()
            .unwrap()
    });
    // Let the program end before asserting anything, so no JVM is left waiting.
    std::fs::write(&go, "").unwrap();
    let rest = run.rest();
    let status = run.wait();
    let mut stderr = String::new();
    run.child()
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "ferrofluid run failed: {stderr}");
    let reset = reset.unwrap_or_else(|| panic!("no `warm PID` line but {warm:?}"));
    assert!(
        reset.status.success(),
        "{}",
        String::from_utf8_lossy(&reset.stderr)
    );
    let profile = read_profile_json(&out);
    let _ = std::fs::remove_dir_all(&dir);
    (
        profile,
        rest,
        String::from_utf8_lossy(&reset.stdout).into_owned(),
    )
}

/// `java -cp DIR MAIN ARG` without the agent, once it has printed its first line.
fn java_started(dir: &Path, main: &str, arg: &Path) -> Program {
    let java = Program::spawn(
        java(Path::new(JDK17_HOME))
            .arg("-cp")
            .arg(dir)
            .arg(main)
            .arg(arg),
    );
    java.line();
    java
}

#[test]
fn after_a_reset_the_tree_holds_exactly_what_followed_it() {
    let flags = [
        "--root",
        "Warm::work",
        "--root",
        "Warm::hold",
        "--include",
        "Warm",
    ];
    let (doc, rest, said) = run_with_reset(&flags, "reset-tree");
    assert_eq!(rest, "sink 244\n");
    assert!(
        said.starts_with("ferrofluid: the agent in JVM ")
            && said.ends_with(" discarded the data collected so far and goes on profiling\n"),
        "{said}"
    );
    let threads = doc["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{doc}");
    let main = &threads[0]["root"];
    assert_eq!(child_names(main), ["hold", "work"]);
    // `hold` was in flight: its time after the reset, not its call; its `work` came after.
    let hold = child(main, "hold");
    assert_eq!(calls(hold), 0);
    assert!(hold["total_ns"].as_u64().unwrap() > 0);
    assert_eq!(calls(child(hold, "work")), 1);
    assert_eq!(calls(child(child(hold, "work"), "step")), 2);
    // The five warm-up calls of `work` are gone; the three after the reset are there.
    let work = child(main, "work");
    assert_eq!(calls(work), 3);
    assert_eq!(calls(child(work, "step")), 12);
    assert_eq!(child_names(work), ["step"]);
}

#[test]
fn a_reset_in_region_mode_counts_the_invocations_begun_after_it() {
    let (doc, rest, _) = run_with_reset(&["--region", "Warm::work"], "reset-region");
    assert_eq!(rest, "sink 244\n");
    let work = common::entry(&doc, "regions", "method", "work");
    // One inside `hold`, three after it; none of the five before the reset.
    assert_eq!(work["count"], 4, "{doc}");
}

#[test]
fn reset_without_an_agent_says_so_and_loads_none() {
    let dir = compile("Warm.java", "reset-none");
    let go = dir.join("go");
    let mut java = java_started(&dir, "Warm", &go);
    let pid = java.pid().to_string();
    let out = ferrofluid()
        .args(["attach", &pid, "--reset"])
        .output()
        .unwrap();
    std::fs::write(&go, "").unwrap();
    java.succeeds();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "ferrofluid: error: no ferrofluid agent answers in JVM {pid} ("
        )) && err.ends_with("; --reset clears the data of a profile already running\n")
            && err.lines().count() == 1,
        "{err}"
    );
}

/// `ferrofluid attach` with `--root Rounds::round --include Rounds`, `flags` and a log, to a
/// running `Rounds` that is stopped once attach returns; returns the profile document, what
/// attach said on stderr (it must have succeeded), the agent's log and the profile's path.
fn attach_to_rounds(tag: &str, flags: &[&str]) -> (Value, String, String, std::path::PathBuf) {
    let dir = compile("Rounds.java", tag);
    let (stop, out, log) = (
        dir.join("stop"),
        dir.join("out.json"),
        dir.join("agent.log"),
    );
    let mut java = java_started(&dir, "Rounds", &stop);
    let attached = attach(java.pid())
        .args(["--root", "Rounds::round", "--include", "Rounds"])
        .args(flags)
        .arg("--log")
        .arg(&log)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    std::fs::write(&stop, "").unwrap();
    java.succeeds();
    let stderr = String::from_utf8_lossy(&attached.stderr).into_owned();
    assert!(attached.status.success(), "{stderr}");
    let log = std::fs::read_to_string(&log).unwrap();
    (read_profile_json(&out), stderr, log, out)
}

#[test]
fn attach_with_a_warmup_resets_once_and_keeps_the_tree_exact() {
    let (doc, stderr, log, out) =
        attach_to_rounds("reset-warmup", &["--warmup", "500ms", "--duration", "1s"]);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
    assert!(
        stderr.contains(
            "ferrofluid: warming up Rounds::round for 500ms (what is collected meanwhile is discarded)\n"
        ),
        "{stderr}"
    );
    assert_eq!(
        log.matches("reset: the data collected so far was discarded")
            .count(),
        1,
        "{log}"
    );
    let main = &common::thread(&doc, "main")["root"];
    let round = child(main, "round");
    let rounds = calls(round);
    // About 1 s of rounds every millisecond or so, whatever the round in flight at the reset.
    assert!(rounds > 50, "{doc}");
    // A `round` in flight at the reset is not counted, its `work` is if it began after.
    let work = child(round, "work");
    assert!(calls(work) == rounds || calls(work) == rounds + 1, "{doc}");
    // Ten `step`s per counted `work`, and those of a `work` in flight that came after the reset
    // (at most nine: a `step` in flight is not counted either).
    assert_eq!(calls(child(work, "step")) / 10, calls(work), "{doc}");
}

/// `attach --adaptive --warmup`: `step` (ten calls a round, far shorter than its probes) loses
/// its probes during the warm-up, so no node of the profile shows it after the reset; the
/// profile still counts it and names it, and the report's header says so.
#[test]
fn probes_removed_during_the_warmup_are_still_reported() {
    let (doc, _, log, out) = attach_to_rounds(
        "reset-adaptive",
        &["--adaptive", "--warmup", "4s", "--duration", "500ms"],
    );
    let removed = log
        .find("adaptive: removed the probes of 1 methods called at least 10000 times")
        .unwrap_or_else(|| panic!("{log}"));
    let reset = log
        .find("reset: the data collected so far was discarded")
        .unwrap_or_else(|| panic!("{log}"));
    assert!(removed < reset, "{log}");
    assert!(log.contains(" ms): Rounds.step(I)V\n"), "{log}");
    assert_eq!(doc["methods"]["probes_dropped"], 1, "{}", doc["methods"]);
    assert_eq!(
        doc["dropped_methods"],
        serde_json::json!([{"class": "Rounds", "method": "step", "descriptor": "(I)V"}])
    );
    let main = &common::thread(&doc, "main")["root"];
    let work = child(child(main, "round"), "work");
    assert_eq!(child_names(work), Vec::<&str>::new(), "{doc}");
    // The report made from the document says so.
    let text = report_stdout(&out, &[]);
    assert!(
        text.contains(
            "; 1 called often and shorter than their probes had them removed as the program ran"
        ),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}
