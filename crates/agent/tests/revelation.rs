//! Calls static analysis cannot see, revealed at run time in real JVMs (docs/subgraph.md): a
//! method reached only through `Method.invoke`, `Constructor.newInstance`, a method handle
//! (`findVirtual` + `invokeExact`) or a JNI callback from a native method is profiled exactly,
//! with its whole subtree, inside the root; the same calls from outside any root record nothing.

mod agent_lib;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agent_lib::agent_so;
use ferrofluid_attach::VirtualMachine;
use ferrofluid_protocol::control::{default_socket_path, Client, Request, Response};

use serde_json::Value;

const JDK17: &str = "/usr/lib/jvm/java-17-openjdk-amd64";
const JDK25: &str = "/usr/lib/jvm/temurin-25-jdk-amd64";

/// A fresh directory with `Reveal.java` compiled into it; unique per call, since tests running
/// at the same time may run the same scenario (each removes its directory when done).
fn compile(tag: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ff-reveal-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/Reveal.java");
    let ok = Command::new(Path::new(JDK17).join("bin/javac"))
        .args(["--release", "17", "-d"])
        .arg(&dir)
        .arg(src)
        .status()
        .unwrap()
        .success();
    assert!(ok, "javac Reveal");
    dir
}

/// Builds `tests/native/nat.c` into `dir/libnat.so` with the system C compiler.
fn native_library(dir: &Path) -> PathBuf {
    let out = dir.join("libnat.so");
    let include = Path::new(JDK17).join("include");
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
fn run(jdk: &str, scenario: &str, options: &str) -> (Value, String, String) {
    let dir = compile(&format!("{scenario}-{}", jdk.len()));
    let out = dir.join("out.json");
    let log = dir.join("agent.log");
    let mut cmd = Command::new(Path::new(jdk).join("bin/java"));
    cmd.arg(format!(
        "-agentpath:{}={options},file={},log={},socket={}",
        agent_so().display(),
        out.display(),
        log.display(),
        dir.join("ctl/control.sock").display()
    ));
    if scenario == "native" {
        cmd.arg(format!("-Dnat.lib={}", native_library(&dir).display()));
    }
    let run = cmd
        .arg("-cp")
        .arg(&dir)
        .args(["Reveal", scenario])
        .output()
        .unwrap();
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        run.status.success(),
        "{}\n{log}",
        String::from_utf8_lossy(&run.stderr)
    );
    let profile: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!log.contains("panic") && !log.contains("ERROR"), "{log}");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    (profile, log, stdout)
}

/// Calls per call path (`Refl.root/Refl.run/Refl.h`) summed over threads.
fn call_paths(profile: &Value) -> BTreeMap<String, u64> {
    fn walk(node: &Value, prefix: &str, out: &mut BTreeMap<String, u64>) {
        for child in node["children"].as_array().into_iter().flatten() {
            let name = format!(
                "{}.{}",
                child["class"].as_str().unwrap_or(""),
                child["method"].as_str().unwrap_or("?")
            );
            let path = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            *out.entry(path.clone()).or_insert(0) += child["calls"].as_u64().unwrap();
            walk(child, &path, out);
        }
    }
    let mut out = BTreeMap::new();
    for t in profile["threads"].as_array().unwrap() {
        walk(&t["root"], "", &mut out);
    }
    out
}

fn paths(expected: &[(&str, u64)]) -> BTreeMap<String, u64> {
    expected.iter().map(|(p, n)| (p.to_string(), *n)).collect()
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

fn reflection_and_method_handles(jdk: &str) {
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
    reflection_and_method_handles(JDK17);
}

#[test]
fn reflection_and_method_handles_on_jdk25() {
    if !Path::new(JDK25).join("bin/java").exists() {
        eprintln!("skipped: no JDK 25 at {JDK25}");
        return;
    }
    reflection_and_method_handles(JDK25);
}

#[test]
fn a_native_callback_inside_the_root_is_profiled_exactly() {
    let (profile, log, stdout) = run(JDK17, "native", "root=Nat::run,include=Nat");
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
    assert_eq!(profile["methods"]["instrumented"], 3, "{log}");
    assert_eq!(profile["methods"]["called"], 3);
    assert!(log.contains("JNI calls into Java wrapped"), "{log}");
    assert!(log.contains("revealed Nat.back(I)V: 1 methods"), "{log}");
}

#[test]
fn with_the_jdk_profiled_too_the_targets_subtrees_are_the_same() {
    // No filter: `Method.invoke` and the method-handle machinery are in the subgraph themselves
    // (entry-exit probes and the gateway probe in the same method), between the Refl frames.
    let (profile, log, stdout) = run(JDK17, "reflection", "root=Refl::root");
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
    if !Path::new(JDK25).join("bin/java").exists() {
        eprintln!("skipped: no JDK 25 at {JDK25}");
        return;
    }
    let (profile, log, stdout) = run(JDK25, "native", "root=Nat::run,include=Nat");
    assert_eq!(stdout, "ok native 0 16 0\n");
    assert_eq!(
        call_paths(&profile),
        paths(&[
            ("Nat.run", 1),
            ("Nat.run/Nat.back", 1),
            ("Nat.run/Nat.back/Nat.h", 4),
        ]),
        "{profile}\n{log}"
    );
}

#[test]
fn attached_to_a_running_jvm_reflection_and_handles_are_revealed_and_restored() {
    let dir = compile("serve");
    let mut child = Command::new(Path::new(JDK17).join("bin/java"))
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
    VirtualMachine::attach(pid)
        .unwrap()
        .load_agent(&agent_so(), "")
        .unwrap();
    let info = ferrofluid_attach::procfs::info(pid).unwrap();
    let socket = default_socket_path(&ferrofluid_attach::procfs::tmp_dir(pid), info.nspid);
    let mut client = Client::connect(&socket).unwrap();
    let instrument = Request::Instrument {
        roots: vec!["Refl::root".parse().unwrap()],
        include: vec!["Refl".parse().unwrap()],
        exclude: vec![],
        scheme: "lazy".parse().unwrap(),
        region: vec![],
        region_last: None,
    };
    assert_eq!(client.request(&instrument).unwrap(), Response::Ok);
    assert_eq!(client.request(&Request::Start).unwrap(), Response::Ok);
    run(&mut stdin);
    let profile = match client.request(&Request::Snapshot).unwrap() {
        Response::Snapshot { profile } => profile,
        other => panic!("{other:?}"),
    };
    let log_path = socket.parent().unwrap().join("agent.log");
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
    let _ = std::fs::remove_dir_all(socket.parent().unwrap());
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn eight_threads_calling_one_target_reflectively_at_once_are_each_exact() {
    let (profile, log, stdout) = run(JDK17, "threads", "root=Par::work,include=Par");
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
