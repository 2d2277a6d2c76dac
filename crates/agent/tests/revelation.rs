//! Calls static analysis cannot see, revealed at run time in real JVMs (docs/subgraph.md): a
//! method reached only through `Method.invoke`, `Constructor.newInstance`, a method handle
//! (`findVirtual` + `invokeExact`) or a JNI callback from a native method is profiled exactly,
//! with its whole subtree, inside the root; the same calls from outside any root record nothing.

mod harness;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ferrofluid_attach::VirtualMachine;
use ferrofluid_protocol::control::{Client, Request, Response};
use ferrofluid_protocol::AgentOptions;
use ferrofluid_testkit::{
    agent_library_beside_test as agent_so, javac, jdk25_or_skip, scratch_dir, JDK17_HOME,
};
use harness::{call_paths, paths, run_with_agent_at_startup, socket_of, stop_attached_jvm};

use serde_json::Value;

/// A fresh directory with `Reveal.java` compiled into it; unique per call, since tests running
/// at the same time may run the same scenario (each removes its directory when done).
fn compile(tag: &str) -> PathBuf {
    let dir = scratch_dir(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        &format!("reveal-{tag}"),
    );
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/Reveal.java");
    javac(Path::new(JDK17_HOME), &["--release", "17"], &dir, [src]);
    dir
}

/// Builds `tests/native/nat.c` into `dir/libnat.so` with the system C compiler.
fn native_library(dir: &Path) -> PathBuf {
    let out = dir.join("libnat.so");
    let include = Path::new(JDK17_HOME).join("include");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&out)
        .arg(format!("-I{}", include.display()))
        .arg(format!("-I{}", include.join("linux").display()))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native/nat.c"))
        .status()
        .expect("a C compiler `cc` on PATH");
    assert!(status.success(), "cc nat.c");
    out
}

/// Runs `java [-Dnat.lib=…] Reveal SCENARIO` with the agent and `options`; returns the profile
/// written at exit, the agent's log and the program's output.
fn run(jdk: &Path, scenario: &str, options: &str) -> (Value, String, String) {
    let dir = compile(&format!("{scenario}-{}", jdk.as_os_str().len()));
    let mut jvm_args = Vec::new();
    if scenario == "native" {
        jvm_args.push(format!("-Dnat.lib={}", native_library(&dir).display()));
    }
    run_with_agent_at_startup(jdk, &dir, options, &jvm_args, &["Reveal", scenario])
}

/// The calls of each path of `Refl` methods, JDK frames between them left out.
fn refl_paths(profile: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (path, calls) in call_paths(profile) {
        let last = path.rsplit('/').next().unwrap();
        if !last.starts_with("Refl.") {
            continue;
        }
        let own: Vec<&str> = path.split('/').filter(|m| m.starts_with("Refl.")).collect();
        *out.entry(own.join("/")).or_insert(0) += calls;
    }
    out
}

fn expected_refl() -> BTreeMap<String, u64> {
    let run = "Refl.root/Refl.run";
    paths(&[
        ("Refl.root", 1),
        ("Refl.root/Refl.<init>", 1),
        (run, 1),
        (&format!("{run}/Refl.viaMethod"), 1),
        (&format!("{run}/Refl.viaMethod/Refl.h"), 3),
        (&format!("{run}/Refl.<init>"), 1),
        (&format!("{run}/Refl.<init>/Refl.h"), 2),
        (&format!("{run}/Refl.viaHandle"), 2),
        (&format!("{run}/Refl.viaHandle/Refl.h"), 10),
    ])
}

fn reflection_and_method_handles(jdk: &Path) {
    let (profile, log, stdout) = run(jdk, "reflection", "root=Refl::root,include=Refl");
    // 4 runs of Refl.run (3 outside the root) of 3 + 2 + 2 * 5 calls of h.
    assert_eq!(stdout, "ok reflection 60 0 0\n");
    assert_eq!(call_paths(&profile), expected_refl(), "{profile}\n{log}");
    assert_eq!(profile["threads"].as_array().unwrap().len(), 1);
    // root, run, the two constructors, viaMethod, viaHandle, h: all instrumented, all called.
    assert_eq!(profile["methods"]["instrumented"], 7, "{log}");
    assert_eq!(profile["methods"]["called"], 7);
    for target in ["Refl.viaMethod()V", "Refl.<init>(I)V", "Refl.viaHandle()V"] {
        assert!(
            log.contains(&format!("revealed {target}: 1 methods")),
            "{target}\n{log}"
        );
    }
}

#[test]
fn reflection_and_method_handles_inside_the_root_are_profiled_exactly() {
    reflection_and_method_handles(Path::new(JDK17_HOME));
}

#[test]
fn reflection_and_method_handles_on_jdk25() {
    let Some(jdk25) = jdk25_or_skip() else {
        return;
    };
    reflection_and_method_handles(jdk25);
}

/// Runs the `native` scenario on `jdk` and checks its output and call paths; returns the profile
/// and the agent's log.
fn native_callback(jdk: &Path) -> (Value, String) {
    let (profile, log, stdout) = run(jdk, "native", "root=Nat::run,include=Nat");
    // 4 callbacks (3 outside the root) of 4 calls of h.
    assert_eq!(stdout, "ok native 0 16 0\n");
    // The native method has no bytecode to probe: the callback is a child of its caller.
    assert_eq!(
        call_paths(&profile),
        paths(&[
            ("Nat.run", 1),
            ("Nat.run/Nat.back", 1),
            ("Nat.run/Nat.back/Nat.h", 4),
        ]),
        "{profile}\n{log}"
    );
    (profile, log)
}

#[test]
fn a_native_callback_inside_the_root_is_profiled_exactly() {
    let (profile, log) = native_callback(Path::new(JDK17_HOME));
    assert_eq!(profile["methods"]["instrumented"], 3, "{log}");
    assert_eq!(profile["methods"]["called"], 3);
    assert!(log.contains("JNI calls into Java wrapped"), "{log}");
    assert!(log.contains("revealed Nat.back(I)V: 1 methods"), "{log}");
}

#[test]
fn with_the_jdk_profiled_too_the_targets_subtrees_are_the_same() {
    // No filter: `Method.invoke` and the method-handle machinery are in the subgraph themselves
    // (entry-exit probes and the gateway probe in the same method), between the Refl frames.
    let (profile, log, stdout) = run(Path::new(JDK17_HOME), "reflection", "root=Refl::root");
    assert_eq!(stdout, "ok reflection 60 0 0\n");
    assert_eq!(refl_paths(&profile), expected_refl(), "{log}");
    let all = call_paths(&profile);
    assert!(
        all.keys()
            .any(|p| p.contains("/java.lang.reflect.Method.invoke/")),
        "{all:?}"
    );
}

#[test]
fn a_native_callback_on_jdk25() {
    let Some(jdk25) = jdk25_or_skip() else {
        return;
    };
    native_callback(jdk25);
}

#[test]
fn attached_to_a_running_jvm_reflection_and_handles_are_revealed_and_restored() {
    let dir = compile("serve");
    let mut child = Command::new(Path::new(JDK17_HOME).join("bin/java"))
        .arg("-cp")
        .arg(&dir)
        .args(["Reveal", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let mut runs = 0;
    let mut run = |stdin: &mut std::process::ChildStdin| {
        writeln!(stdin, "run").unwrap();
        stdin.flush().unwrap();
        runs += 1;
        assert_eq!(
            lines.next().unwrap().unwrap(),
            format!("done {}", 15 * runs)
        );
    };
    // Refl and the reflection and method-handle classes loaded before the agent.
    run(&mut stdin);
    let pid = child.id();
    // Detach removes the default log with the control directory: this one stays for the checks.
    let log_path = dir.join("agent.log");
    VirtualMachine::attach(pid)
        .unwrap()
        .load_agent(&agent_so(), &format!("log={}", log_path.display()))
        .unwrap();
    let socket = socket_of(pid);
    let mut client = Client::connect(&socket).unwrap();
    let instrument = Request::Instrument(AgentOptions {
        roots: vec!["Refl::root".parse().unwrap()],
        filter: ferrofluid_protocol::ClassFilter {
            include: vec!["Refl".parse().unwrap()],
            exclude: vec![],
        },
        scheme: "lazy".parse().unwrap(),
        ..AgentOptions::default()
    });
    assert_eq!(client.request(&instrument).unwrap(), Response::Ok);
    assert_eq!(client.request(&Request::Start).unwrap(), Response::Ok);
    run(&mut stdin);
    let profile = match client.request(&Request::Snapshot).unwrap() {
        Response::Snapshot { profile } => profile,
        other => panic!("{other:?}"),
    };
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert_eq!(call_paths(&profile), expected_refl(), "{log}");
    // Detaching restores the gateway classes and the JNI table; the program runs on.
    assert_eq!(client.request(&Request::Detach).unwrap(), Response::Ok);
    run(&mut stdin);
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    for class in [
        "java/lang/reflect/Method",
        "java/lang/reflect/Constructor",
        "java/lang/invoke/DirectMethodHandle",
    ] {
        let restored = format!("class file load hook {class}: ");
        assert!(
            log.lines()
                .any(|l| l.contains(&restored) && l.ends_with("original kept")),
            "{class}\n{log}"
        );
    }
    assert!(!log.contains("panic") && !log.contains("ERROR"), "{log}");
    stop_attached_jvm(child, &socket, &dir);
}

#[test]
fn eight_threads_calling_one_target_reflectively_at_once_are_each_exact() {
    let (profile, log, stdout) = run(
        Path::new(JDK17_HOME),
        "threads",
        "root=Par::work,include=Par",
    );
    assert_eq!(stdout, "ok threads 0 0 24\n");
    let threads = profile["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 8, "{profile}");
    for t in threads {
        let one = serde_json::json!({ "threads": [t] });
        assert_eq!(
            call_paths(&one),
            paths(&[
                ("Par.work", 1),
                ("Par.work/Par.target", 1),
                ("Par.work/Par.target/Par.h", 3),
            ]),
            "{t}\n{log}"
        );
    }
}
