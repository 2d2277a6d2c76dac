//! Signals as process managers and wrappers send them, on real JVMs: coreutils' `timeout`
//! signals `attach` and then its whole process group within a millisecond, and the report is
//! written all the same; SIGTERM alone, as systemd or a container runtime sends it, ends `attach`
//! and `run` with the full report.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::{
    attach, calls, child, compile, read_profile_json, run_command, Program, Rounds, JDK17_HOME,
};

/// Runs `script` in `sh`, which must succeed.
fn sh(script: &str) {
    let status = Command::new("sh").arg("-c").arg(script).status().unwrap();
    assert!(status.success(), "{script}");
}

/// The calls of `round` and of `step` under the main thread's root.
fn rounds(doc: &serde_json::Value) -> (u64, u64) {
    let round = child(&common::thread(doc, "main")["root"], "round");
    (calls(round), calls(child(child(round, "work"), "step")))
}

/// `attach` in a process group of its own, as `timeout` starts its command: the signal to it,
/// then the same signal to its group, as `timeout` sends them. `timeout` sends them within a
/// millisecond, which the kernel may merge into one; here the second goes once `attach` said it
/// took the first (it is then taking the profile), well within the window in which a repeat is
/// the same request. The report is written, the JVM left as it was, and nothing more is said.
fn signalled_twice(signal: &str, name: &str, tag: &str) {
    let target = Rounds::start(tag);
    let out = target.dir.join("out.json");
    let mut cli = attach(target.pid())
        .args([
            "--reveal",
            "sync",
            "--root",
            "Rounds::round",
            "--include",
            "Rounds",
        ])
        .arg("-o")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(cli.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert_eq!(
        line,
        "ferrofluid: profiling Rounds::round until Ctrl-C, SIGTERM or the JVM's exit\n"
    );
    std::thread::sleep(Duration::from_millis(300));
    let pid = cli.id();
    sh(&format!("kill -s {signal} {pid}"));
    line.clear();
    stderr.read_line(&mut line).unwrap();
    assert_eq!(
        line,
        format!("ferrofluid: {name}: stopping, writing the report and removing the probes\n")
    );
    sh(&format!("kill -s {signal} -- -{pid}"));
    let status = cli.wait().unwrap();
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    assert!(status.success(), "{status}: {err}");
    assert_eq!(
        err,
        format!("ferrofluid: report written to {}\n", out.display())
    );
    let (round, step) = rounds(&read_profile_json(&out));
    assert!(
        round > 0 && step + 10 >= 10 * round,
        "{round} rounds, {step} steps"
    );
    // Detached: the agent found next is dormant and instruments nothing.
    let status = String::from_utf8(common::succeeds(&mut attach(target.pid())).stdout).unwrap();
    assert!(
        status.starts_with("ferrofluid: attached to the agent in JVM ")
            && status.contains("\ncollecting:     no\ninstrumented:   0 classes, 0 methods\n"),
        "{status}"
    );
    target.finish();
}

#[test]
fn sigint_from_timeout_to_attach_and_its_group_writes_the_report() {
    signalled_twice("INT", "SIGINT", "signals-int");
}

#[test]
fn sigterm_twice_within_the_window_writes_the_report() {
    signalled_twice("TERM", "SIGTERM", "signals-term");
}

/// `ferrofluid run` under a process manager: SIGTERM to ferrofluid alone reaches the JVM, and
/// the whole report is written when it exits; a second SIGTERM to the group (the JVM has it
/// too) changes nothing.
#[test]
fn sigterm_to_run_and_then_its_group_writes_the_full_report() {
    let dir = compile("Rounds.java", "signals-run");
    let (out, stop) = (dir.join("out.json"), dir.join("stop"));
    let mut run = Program::started(
        run_command(
            Path::new(JDK17_HOME),
            &["--root", "Rounds::round"],
            &out,
            &dir,
            "Rounds",
        )
        .arg(&stop)
        .stderr(Stdio::piped())
        .process_group(0),
        "ready",
    );
    std::thread::sleep(Duration::from_millis(500));
    let pid = run.pid();
    sh(&format!(
        "kill -s TERM {pid}; sleep 0.2; kill -s TERM -- -{pid}"
    ));
    let status = run.wait();
    let _ = std::fs::write(&stop, "");
    let mut err = String::new();
    run.child()
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(143), "{err}");
    // The agent wrote the JSON profile itself as the JVM exited.
    assert_eq!(
        err,
        "ferrofluid: SIGTERM: the program ended (exit status 143); writing what was profiled\n"
    );
    let (round, step) = rounds(&read_profile_json(&out));
    assert!(
        round > 0 && step + 10 >= 10 * round,
        "{round} rounds, {step} steps"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
