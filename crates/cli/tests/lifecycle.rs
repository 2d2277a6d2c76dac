//! Interruption and lifecycle on real JVMs: Ctrl-C and SIGTERM on `attach` and `run` write the
//! report and leave the JVM as it was; a killed `attach` leaves no probes behind; outputs are
//! checked before anything happens; a second tool cannot take a session over; the JVM exiting
//! mid-profile ends `attach` with what was collected; a root that matches nothing is named at
//! once, with near names; the control directory goes on detach and exit; a JVM that loaded the
//! agent once is attached to again without an agent library beside ferrofluid; the agent loaded
//! with the JVM keeps class data sharing on.

use std::io::{BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{
    agent, agentpath, attach, calls, child, compile, ferrofluid, kill, read_profile_json, rest,
    run_command, Program, Rounds, JDK17_HOME,
};
use ferrofluid_protocol::control::{self, Client, Request, Response};

/// `ferrofluid attach PID --agent AGENT --reveal sync ARGS` (the exact counts asserted are not
/// promised by asynchronous revelation): [`common::attach_profiling`].
fn attach_profiling(pid: u32, args: &[&str]) -> (Child, Vec<String>, BufReader<ChildStderr>) {
    let args: Vec<&str> = ["--reveal", "sync"].iter().chain(args).copied().collect();
    common::attach_profiling(pid, &args)
}

/// `ferrofluid attach PID` (status), which loads the agent if none answers.
fn status(pid: u32) -> String {
    String::from_utf8(common::succeeds(&mut attach(pid)).stdout).unwrap()
}

/// The agent a status found was dormant (it had to be loaded again) and instruments nothing.
fn assert_restored(status: &str) {
    assert!(
        status.starts_with("ferrofluid: attached to the agent in JVM ")
            && status.contains("\ncollecting:     no\ninstrumented:   0 classes, 0 methods\n")
            && !status.contains("profiled by:"),
        "{status}"
    );
}

/// The calls of `round`, `work` and `step` under the main thread's root.
fn rounds(doc: &Value) -> (u64, u64, u64) {
    let main = &common::thread(doc, "main")["root"];
    let round = child(main, "round");
    let work = child(round, "work");
    (calls(round), calls(work), calls(child(work, "step")))
}

/// A profile stopped while `Rounds` runs: at least one round, and whatever of the round in
/// flight had begun.
fn assert_rounds_in_flight(doc: &Value) {
    let (round, work, step) = rounds(doc);
    assert!(round > 0, "{doc}");
    assert!(work == round || work + 1 == round, "{doc}");
    assert!(step <= 10 * work && step + 10 >= 10 * work, "{doc}");
}

fn interrupted(signal: &str, name: &str, duration: &[&str], said: &str, tag: &str) {
    let target = Rounds::start(tag);
    let out = target.dir.join("out.json");
    let mut args = vec!["--root", "Rounds::round", "--include", "Rounds", "-o"];
    args.push(out.to_str().unwrap());
    args.extend_from_slice(duration);
    let (mut cli, lines, stderr) = attach_profiling(target.pid(), &args);
    assert_eq!(lines.last().unwrap(), said);
    // Stdin at its end stops nothing: profiling goes on until the signal.
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        cli.try_wait().unwrap().is_none(),
        "attach stopped by itself"
    );
    kill(signal, &cli.id().to_string());
    let ended = cli.wait().unwrap();
    let err = rest(stderr);
    assert!(ended.success(), "{err}");
    assert_eq!(
        err,
        format!(
            "ferrofluid: {name}: stopping, writing the report and removing the probes\n\
             ferrofluid: report written to {}\n",
            out.display()
        )
    );
    assert_rounds_in_flight(&read_profile_json(&out));
    // Detached: the control directory is gone, and the agent found next is dormant.
    assert!(!target.control_dir().exists());
    assert_restored(&status(target.pid()));
    target.finish();
}

#[test]
fn ctrl_c_on_attach_writes_the_report_and_restores_the_jvm() {
    interrupted(
        "INT",
        "SIGINT",
        &[],
        "ferrofluid: profiling Rounds::round until Ctrl-C, SIGTERM or the JVM's exit\n",
        "life-int",
    );
}

#[test]
fn sigterm_on_attach_with_a_duration_ends_it_early_the_same_way() {
    interrupted(
        "TERM",
        "SIGTERM",
        &["--duration", "5m"],
        "ferrofluid: profiling Rounds::round for 300s (Ctrl-C stops earlier)\n",
        "life-term",
    );
}

#[test]
fn a_killed_attach_leaves_no_probes_after_the_grace_period() {
    let target = Rounds::start("life-kill");
    let (out, log) = (target.dir.join("out.json"), target.dir.join("agent.log"));
    let (out_arg, log_arg) = (out.to_str().unwrap(), log.to_str().unwrap());
    let flags = ["--root", "Rounds::round", "-o", out_arg, "--log", log_arg];
    let (mut cli, _, _) = attach_profiling(target.pid(), &flags);
    kill("KILL", &cli.id().to_string());
    cli.wait().unwrap();
    // The agent notices at once, and goes dormant after the grace period (5 s).
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut text = String::new();
    while Instant::now() < deadline {
        text = std::fs::read_to_string(&log).unwrap();
        if text.contains("detached; agent dormant") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let gone = format!("the tool that started this session (pid {}) ", cli.id());
    for said in [
        "disconnected without ending it; the probes are removed in 5 s unless a tool takes over",
        "is gone: removing the probes and going dormant",
    ] {
        assert_eq!(text.matches(&format!("{gone}{said}")).count(), 1, "{text}");
    }
    assert!(text.contains("] deinstrumented "), "{text}");
    assert!(!out.exists());
    assert!(!target.control_dir().exists());
    assert_restored(&status(target.pid()));
    target.finish();
}

#[test]
fn unwritable_outputs_fail_at_once_and_touch_nothing() {
    let target = Rounds::start("life-out");
    let attached = attach(target.pid())
        .args(["--root", "Rounds::round", "-o", "/nonexistent/dir/p.html"])
        .output()
        .unwrap();
    let said = "ferrofluid: error: cannot write the report to /nonexistent/dir/p.html: No such \
                file or directory (os error 2)\n";
    assert_eq!(attached.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&attached.stderr), said);
    // Nothing was loaded into the JVM.
    assert!(!target.control_dir().exists());
    let run = ferrofluid()
        .arg("run")
        .arg("--agent")
        .arg(agent())
        .args([
            "--root",
            "Rounds::round",
            "-o",
            "/nonexistent/dir/p.html",
            "--",
        ])
        .arg(Path::new(JDK17_HOME).join("bin/java"))
        .arg("-cp")
        .arg(&target.dir)
        .arg("Rounds")
        .arg(&target.stop)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&run.stderr), said);
    // The program never started.
    assert_eq!(String::from_utf8_lossy(&run.stdout), "");
    target.finish();
}

#[test]
fn a_second_tool_is_refused_and_the_first_keeps_profiling() {
    let target = Rounds::start("life-second");
    let pid = target.pid();
    let (out, out2) = (target.dir.join("out.json"), target.dir.join("out2.txt"));
    let (mut first, _, stderr) = attach_profiling(
        pid,
        &["--root", "Rounds::round", "-o", out.to_str().unwrap()],
    );
    let busy_start = format!(
        "ferrofluid: error: JVM {pid} is already being profiled by another ferrofluid (pid {}), since ",
        first.id()
    );
    let busy_end = format!(
        " UTC (root Rounds::round); stop it first, or run `ferrofluid attach {pid}` for its status\n"
    );
    let pid_arg = pid.to_string();
    for args in [
        &[
            "--root",
            "Rounds::work",
            "--duration",
            "1s",
            "-o",
            out2.to_str().unwrap(),
        ][..],
        &["--reset"],
        &["--detach"],
    ] {
        let second = ferrofluid()
            .arg("attach")
            .arg(&pid_arg)
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&second.stderr);
        assert_eq!(second.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with(&busy_start) && err.ends_with(&busy_end) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    assert!(!out2.exists());
    // The agent refuses by itself too, whatever the tool checked first.
    let socket = control::default_socket_path(Path::new("/tmp"), pid);
    let mut raw = Client::connect(&socket).unwrap();
    for request in [
        Request::Instrument(ferrofluid_protocol::AgentOptions {
            roots: vec!["Rounds::work".parse().unwrap()],
            ..Default::default()
        }),
        Request::Stop,
        Request::Deinstrument,
        Request::Detach,
        Request::Wait { timeout_ms: 1 },
    ] {
        let Response::Error { message } = raw.request(&request).unwrap() else {
            panic!("{request:?} was not refused");
        };
        if let Request::Wait { .. } = request {
            assert_eq!(
                message,
                "`wait` is only for the connection that started the session"
            );
        } else {
            assert!(
                message.starts_with(&busy_start["ferrofluid: error: ".len()..])
                    && message.ends_with(busy_end.trim_end()),
                "{message}"
            );
        }
    }
    drop(raw);
    // Status stays open to everyone, and says who profiles.
    let s = status(pid);
    assert!(
        s.starts_with("ferrofluid: reconnected to the agent")
            && s.contains("\ncollecting:     yes\n")
            && s.contains(&format!(
                "\nprofiled by:    ferrofluid pid {} since ",
                first.id()
            ))
            && s.ends_with(" UTC (root Rounds::round)\n"),
        "{s}"
    );
    kill("INT", &first.id().to_string());
    let ended = first.wait().unwrap();
    let err = rest(stderr);
    assert!(ended.success(), "{err}");
    assert_rounds_in_flight(&read_profile_json(&out));
    assert_restored(&status(pid));
    target.finish();
}

#[test]
fn the_jvm_exiting_mid_profile_ends_attach_with_what_was_collected() {
    let target = Rounds::start("life-exit");
    let pid = target.pid();
    let out = target.dir.join("out.json");
    let args = [
        "--root",
        "Rounds::round",
        "--include",
        "Rounds",
        "--duration",
        "5m",
        "-o",
        out.to_str().unwrap(),
    ];
    let (mut cli, _, stderr) = attach_profiling(pid, &args);
    std::thread::sleep(Duration::from_millis(300));
    let control_dir = target.control_dir();
    let asked = Instant::now();
    std::fs::write(&target.stop, "").unwrap();
    let ended = cli.wait().unwrap();
    let took = asked.elapsed();
    eprintln!("attach ended {took:?} after the program was asked to stop");
    let err = rest(stderr);
    assert!(ended.success(), "{err}");
    // Long before the 5 minutes.
    assert!(took < Duration::from_secs(300));
    assert_eq!(
        err,
        format!(
            "ferrofluid: report written to {}\n\
             ferrofluid: JVM {pid} exited while profiling; the report holds what ran until then\n",
            out.display()
        )
    );
    // Every round completed before the JVM exited: the counts are exact.
    let (round, work, step) = rounds(&read_profile_json(&out));
    assert!(round > 0);
    assert_eq!((work, step), (round, 10 * round));
    let mut target = target;
    target.exits_well();
    assert!(!control_dir.exists());
    target.finish();
}

#[test]
fn a_root_that_matches_nothing_is_named_at_once_with_near_names() {
    let target = Rounds::start("life-typo");
    let out = target.dir.join("out.json");
    let attached = attach(target.pid())
        .args(["--root", "Rounds::rund", "--root", "Ronuds::round"])
        .args(["--duration", "1s", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&attached.stderr);
    assert_eq!(attached.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    let goes_on = "? (profiling goes on in case its class loads later)";
    // Before profiling starts, not after the duration.
    assert_eq!(
        lines[..3],
        [
            format!("ferrofluid: warning: no loaded method matches --root Rounds::rund; did you mean Rounds::round{goes_on}"),
            format!("ferrofluid: warning: no loaded method matches --root Ronuds::round; did you mean Rounds::round{goes_on}"),
            "ferrofluid: profiling Rounds::rund, Ronuds::round for 1s (Ctrl-C stops earlier)".to_owned(),
        ]
    );
    assert_eq!(
        lines[3..5],
        [
            "ferrofluid: --root Rounds::rund matched no method while profiling",
            "ferrofluid: --root Ronuds::round matched no method while profiling",
        ]
    );
    // The empty report names the patterns, not the methods the agent probes for itself.
    assert_eq!(
        lines[5],
        "ferrofluid: warning: no loaded class has a method matching --root Rounds::rund, \
         Ronuds::round, so nothing was profiled; check the pattern (CLASS::METHOD, e.g. \
         com.acme.Report::render; `*` within a package, `**` across) and that the class is \
         loaded in the JVM while profiling (`ferrofluid attach PID` lists the patterns with no \
         match yet)"
    );
    assert!(!err.contains("instrumented"), "{err}");
    assert!(out.exists());
    target.finish();
}

/// `ferrofluid run --root Rounds::round -o out.txt -- java ... Rounds STOP` in a process group
/// of its own, its stderr piped; returns once the program printed `ready`.
fn run_rounds(dir: &Path, out: &Path, stop: &Path) -> Program {
    let flags = ["--root", "Rounds::round"];
    Program::started(
        run_command(Path::new(JDK17_HOME), &flags, out, dir, "Rounds")
            .arg(stop)
            .stderr(Stdio::piped())
            .process_group(0),
        "ready",
    )
}

/// The stderr of `run`, which ended.
fn stderr_of(run: &mut Program) -> String {
    let mut err = String::new();
    run.child()
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err
}

fn interrupted_run(target: &str, signal: &str, name: &str, code: i32, tag: &str) {
    let dir = compile("Rounds.java", tag);
    let (out, stop) = (dir.join("out.txt"), dir.join("stop"));
    let mut run = run_rounds(&dir, &out, &stop);
    // A few rounds profiled.
    std::thread::sleep(Duration::from_millis(500));
    let pid = run.pid();
    kill(signal, &target.replace("PID", &pid.to_string()));
    let status = run.wait();
    let _ = std::fs::write(&stop, "");
    let err = stderr_of(&mut run);
    // The program's own status, and its report.
    assert_eq!(status.code(), Some(code), "{err}");
    assert_eq!(
        err,
        format!(
            "ferrofluid: {name}: the program ended (exit status {code}); writing what was profiled\n\
             ferrofluid: report written to {}\n",
            out.display()
        )
    );
    let report = std::fs::read_to_string(&out).unwrap();
    assert!(report.contains(" Rounds.step(I)V\n"), "{report}");
    let tmp = std::env::temp_dir().join(format!("ferrofluid-run-{pid}.json"));
    assert!(!tmp.exists(), "{} left behind", tmp.display());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_on_run_reaches_the_jvm_and_the_report_is_written() {
    // As a terminal does: the whole process group gets it.
    interrupted_run("-PID", "INT", "SIGINT", 130, "life-run-int");
}

#[test]
fn sigterm_to_run_alone_is_passed_to_the_jvm_and_the_report_is_written() {
    interrupted_run("PID", "TERM", "SIGTERM", 143, "life-run-term");
}

#[test]
fn run_without_an_output_prints_the_text_report() {
    let dir = compile("Rounds.java", "life-run-text");
    let stop = dir.join("stop");
    std::fs::write(&stop, "").unwrap();
    let run = ferrofluid()
        .arg("run")
        .arg("--agent")
        .arg(agent())
        .args(["--root", "Rounds::main", "--include", "Rounds", "--"])
        .arg(Path::new(JDK17_HOME).join("bin/java"))
        .arg("-cp")
        .arg(&dir)
        .arg("Rounds")
        .arg(&stop)
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(run.status.success(), "{err}");
    assert_eq!(err, "");
    // The program's output, then the report.
    assert!(out.starts_with("ready\nferrofluid CPU profile\n"), "{out}");
    assert!(
        out.contains(" Rounds.main([Ljava/lang/String;)V\n"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The JVM `ferrofluid run` (pid `run`) started: its child process.
fn child_of(run: u32) -> u32 {
    for _ in 0..500 {
        let tasks = std::fs::read_dir(format!("/proc/{run}/task")).unwrap();
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            if let Some(pid) = children.split_whitespace().next() {
                return pid.parse().unwrap();
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("ferrofluid run (pid {run}) started no JVM");
}

/// The session `ferrofluid run` started (no owning tool: `--reset` may reach it) writes its
/// profile when the program ends; a new `attach -o` must not replace it, and says what to do.
#[test]
fn attach_does_not_replace_the_session_a_run_started() {
    let dir = compile("Rounds.java", "life-run-attach");
    let (out, stop) = (dir.join("out.txt"), dir.join("stop"));
    let mut run = run_rounds(&dir, &out, &stop);
    let jvm = child_of(run.pid());
    let attached = attach(jvm)
        .args(["--root", "Rounds::step", "--duration", "1s", "-o"])
        .arg(dir.join("other.txt"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    std::fs::write(&stop, "").unwrap();
    let status = run.wait();
    let err = stderr_of(&mut run);

    let said = String::from_utf8_lossy(&attached.stderr);
    assert_eq!(attached.status.code(), Some(2), "{said}");
    assert!(
        said.contains(&format!(
            "ferrofluid: error: JVM {jvm} is already being profiled by the session it was started with"
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "`ferrofluid attach {jvm} --reset` restarts its collection"
        )),
        "{said}"
    );
    assert!(!dir.join("other.txt").exists());
    // The first session went on and wrote its profile of the root it was given.
    assert!(status.success(), "{err}");
    let report = std::fs::read_to_string(&out).unwrap();
    assert!(report.contains(" Rounds.round()V\n"), "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A JVM keeps the agent it loaded (no JVM unloads one): a later `attach` wakes that copy by its
/// own path, with no agent library beside the ferrofluid that attaches (an installed binary, a
/// copy taken to another machine); an `--agent` naming another library is said to be unused.
#[test]
fn attach_to_a_jvm_that_loaded_the_agent_needs_no_library_beside_ferrofluid() {
    let target = Rounds::start("life-reload");
    let detached =
        String::from_utf8(common::succeeds(attach(target.pid()).arg("--detach")).stdout).unwrap();
    assert!(detached.contains("ferrofluid: detached; "), "{detached}");
    let lone = target.dir.join("bin");
    std::fs::create_dir(&lone).unwrap();
    let copy = lone.join("ferrofluid");
    std::fs::copy(env!("CARGO_BIN_EXE_ferrofluid"), &copy).unwrap();
    assert!(!lone.join("libferrofluid_agent.so").exists());

    let out = target.dir.join("out.json");
    let profiled = Command::new(&copy)
        .args(["attach", &target.pid().to_string(), "--reveal", "sync"])
        .args(["--root", "Rounds::round", "--duration", "1s", "-o"])
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&profiled.stderr);
    assert!(profiled.status.success(), "{said}");
    assert_eq!(
        String::from_utf8_lossy(&profiled.stdout),
        format!(
            "ferrofluid: attached to the agent in JVM {} (agent {})\n",
            target.pid(),
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_rounds_in_flight(&read_profile_json(&out));

    let elsewhere = lone.join("libferrofluid_agent.so");
    let status = Command::new(&copy)
        .args(["attach", &target.pid().to_string(), "--agent"])
        .arg(&elsewhere)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(status.status.success());
    assert_eq!(
        String::from_utf8_lossy(&status.stderr),
        format!(
            "ferrofluid: note: JVM {} has the agent {} loaded already, which it keeps (a JVM \
             cannot unload an agent); --agent {} is not loaded\n",
            target.pid(),
            std::fs::canonicalize(agent()).unwrap().display(),
            elsewhere.display()
        )
    );
    assert_restored(&String::from_utf8_lossy(&status.stdout));
    target.finish();
}

/// The agent loaded with the JVM keeps class data sharing on for every mode but `native`, whose
/// early class hook events turn it off (every JDK class is then parsed from its bytes):
/// `-Xshare:on` makes a JVM that cannot map its archive fail to start.
#[test]
fn the_agent_at_load_keeps_class_data_sharing() {
    let dir = compile("LoadedLate.java", "life-cds");
    for options in [
        "mode=sample",
        "mode=cpu,root=LoadedLate::main",
        "mode=count,root=LoadedLate::main",
        "mode=alloc",
        "mode=region,region=LoadedLate::main",
    ] {
        let out = dir.join("out.json");
        let _ = std::fs::remove_file(&out);
        let options = format!("{options},file={}", out.display());
        let run = agentpath(
            Path::new(JDK17_HOME),
            &options,
            &dir,
            &["-Xshare:on", "LoadedLate"],
        );
        assert_eq!(String::from_utf8_lossy(&run.stdout), "ready\n", "{options}");
        assert!(out.exists(), "{options}: no profile");
    }
}
