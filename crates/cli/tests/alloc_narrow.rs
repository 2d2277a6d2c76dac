//! Narrowing a running `alloc` session to the sites of some allocated classes, in real JVMs:
//! `tests/java/Narrow.java` leaks `Narrow$Entry` objects into a map beside short-lived
//! `Narrow$Noise` ones, n1 of each in a first phase and n2 in a second; between them a second
//! `ferrofluid attach --alloc-class 'Narrow$Entry'` narrows the session. The entries count
//! n1 + n2 exactly, the noise n1 (its site lost its probe, its count stays), the entries'
//! allocation path is there, the noise's class is retransformed without its probe and the class
//! whose only site stays probed is not retransformed; the program's output is unchanged. A
//! session started by an `attach` (narrowed by a second one that writes its own report) on
//! JDK 17, one started by `-agentpath` on JDK 25.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

mod common;
use common::{agent, compile, ferrofluid, java, read_profile_json, u, Program, JDK17_HOME};

const N1: u64 = 3000;
const N2: u64 = 2000;

/// The program's output for `N1`, `N2`: checksums of the two phases and the map's size.
fn expected_output() -> Vec<String> {
    let sum = |n: u64| n * (n - 1) / 2;
    vec![
        format!("phase1 {}", sum(N1)),
        format!("phase2 {} {}", sum(N1) + sum(N2), N1 + N2),
    ]
}

/// What the narrowing attach prints: `Narrow` (its `File` and `HashMap` sites) and
/// `Narrow$Churn` (the noise's site) lose probes; `Narrow$Cache` keeps its one probed site and
/// is not retransformed.
const NARROWED: &str = "ferrofluid: narrowed the alloc session of JVM {pid} to the allocated \
    classes Narrow$Entry: 2 classes retransformed; 1 allocation site probed, 6 not (their counts \
    stay as they were)";

/// `Narrow N1 N2 DIR` on the JVM of `java_home`, with `jvm_args` before the class path, once it
/// printed `ready`.
fn start(java_home: &Path, jvm_args: &[String], dir: &Path) -> Program {
    Program::started(
        java(java_home)
            .args(jvm_args)
            .arg("-cp")
            .arg(dir)
            .arg("Narrow")
            .args([N1.to_string(), N2.to_string()])
            .arg(dir),
        "ready",
    )
}

/// `ferrofluid attach PID --mode alloc --alloc-class Narrow$Entry`: the narrowing attach.
fn narrow(pid: u32) -> Command {
    let mut cli = ferrofluid();
    cli.args(["attach", &pid.to_string()]).args([
        "--mode",
        "alloc",
        "--alloc-class",
        "Narrow$Entry",
    ]);
    cli
}

/// The class table's `allocated` of `class`, if listed.
fn allocated(doc: &Value, class: &str) -> Option<u64> {
    doc["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == class)
        .map(|c| u(&c["allocated"]))
}

/// Every calling context (as `Class.method` frames from the thread's root) whose method
/// allocates `class`, with the objects allocated there.
fn paths_allocating(doc: &Value, class: &str) -> Vec<(Vec<String>, u64)> {
    let mut found = Vec::new();
    for thread in doc["threads"].as_array().unwrap() {
        let mut stack = vec![(&thread["root"], Vec::new())];
        while let Some((node, frames)) = stack.pop() {
            for a in node["allocations"].as_array().into_iter().flatten() {
                if a["class"] == class {
                    found.push((frames.clone(), u(&a["allocated"])));
                }
            }
            for child in node["children"].as_array().into_iter().flatten() {
                let mut frames = frames.clone();
                frames.push(common::frame(child));
                stack.push((child, frames));
            }
        }
    }
    found
}

/// The counts and paths of a profile of the whole session, narrowed between the phases.
fn check_profile(doc: &Value) {
    assert_eq!(doc["mode"], "alloc");
    assert_eq!(doc["alloc_classes"], serde_json::json!(["Narrow$Entry"]));
    assert_eq!(
        allocated(doc, "Narrow$Entry"),
        Some(N1 + N2),
        "{}",
        doc["classes"]
    );
    assert_eq!(
        allocated(doc, "Narrow$Noise"),
        Some(N1),
        "{}",
        doc["classes"]
    );
    let entries = paths_allocating(doc, "Narrow$Entry");
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        entries[0],
        (
            vec![
                "Narrow.main".to_owned(),
                "Narrow.phase".to_owned(),
                "Narrow$Cache.remember".to_owned()
            ],
            N1 + N2
        )
    );
    let noise: u64 = paths_allocating(doc, "Narrow$Noise")
        .iter()
        .map(|(_, n)| n)
        .sum();
    assert_eq!(noise, N1);
}

/// The agent's log says what the narrowing did: the noise's class retransformed back to its
/// original bytes, the class keeping its probed site left alone.
fn check_log(log: &Path) {
    let log = std::fs::read_to_string(log).unwrap();
    let narrowed = log
        .find("alloc: narrowing to allocated classes [Narrow$Entry]: 2 classes to retransform, 1 sites probed, 6 not")
        .unwrap_or_else(|| panic!("no narrowing in the log:\n{log}"));
    let after = &log[narrowed..];
    let churn = after
        .lines()
        .find(|l| l.contains("class file load hook Narrow$Churn:"))
        .unwrap_or_else(|| panic!("Narrow$Churn not retransformed:\n{after}"));
    assert!(churn.ends_with("original kept"), "{churn}");
    let main = after
        .lines()
        .find(|l| l.contains("class file load hook Narrow:"))
        .unwrap_or_else(|| panic!("Narrow not retransformed:\n{after}"));
    assert!(main.ends_with("original kept"), "{main}");
    assert!(
        !after.contains("class file load hook Narrow$Cache:"),
        "Narrow$Cache retransformed:\n{after}"
    );
}

/// A whole-program session started by `attach -o`, narrowed by a second `attach -o` that
/// writes the session's profile at SIGTERM and leaves the session running; the first attach
/// writes its report when the program ends. Both hold everything since the session began.
#[test]
fn a_second_attach_narrows_an_attached_session_and_keeps_its_counts() {
    let dir = compile("Narrow.java", "alloc-narrow-attach");
    let (out1, out2, log) = (
        dir.join("first.json"),
        dir.join("second.json"),
        dir.join("agent.log"),
    );
    let mut java = start(Path::new(JDK17_HOME), &[], &dir);
    let pid = java.pid().to_string();
    // stderr is kept open until the CLI ends: it says more when it writes the profile.
    let mut flags = common::args("--mode alloc --include Narrow* --log");
    flags.extend([log.to_str().unwrap(), "-o", out1.to_str().unwrap()]);
    let (mut first, _, _stderr) = common::attach_profiling(java.pid(), &flags);
    std::fs::write(dir.join("go1"), "").unwrap();
    java.expect(&expected_output()[0]);

    let mut second = Program::spawn(narrow(java.pid()).arg("-o").arg(&out2).stdin(Stdio::null()));
    assert_eq!(second.line(), NARROWED.replace("{pid}", &pid));
    // The agent's status names the selection in force.
    let status = ferrofluid().args(["attach", &pid]).output().unwrap();
    let shown = String::from_utf8_lossy(&status.stdout);
    assert!(
        shown.contains("\nalloc classes:  Narrow$Entry\n"),
        "{shown}"
    );
    std::fs::write(dir.join("go2"), "").unwrap();
    java.expect(&expected_output()[1]);
    // SIGTERM: the second attach takes the session's profile and leaves the session running.
    common::kill("TERM", &second.pid().to_string());
    second.succeeds();
    check_profile(&read_profile_json(&out2));

    std::fs::write(dir.join("end"), "").unwrap();
    java.succeeds();
    let status = first.wait().unwrap();
    assert!(status.success());
    check_profile(&read_profile_json(&out1));
    check_log(&log);
}

/// A session the agent's own options started (`-agentpath`, JDK 25), narrowed by an attach
/// without `-o`: the profile the agent writes at exit holds everything. An attach that would
/// change the session's own options is refused in one line.
#[test]
fn an_attach_narrows_a_session_started_by_agentpath_on_jdk25() {
    let Some(home) = ferrofluid_testkit::jdk21_or_skip() else {
        return;
    };
    let dir = compile("Narrow.java", "alloc-narrow-agentpath");
    let (out, log) = (dir.join("out.json"), dir.join("agent.log"));
    let option = format!(
        "-agentpath:{}=mode=alloc,include=Narrow*,file={},log={}",
        agent().display(),
        out.display(),
        log.display()
    );
    let mut java = start(&home, &[option], &dir);
    let pid = java.pid().to_string();
    std::fs::write(dir.join("go1"), "").unwrap();
    java.expect(&expected_output()[0]);

    let refused = narrow(java.pid())
        .args(["--include", "Narrow$Cache"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr),
        format!(
            "ferrofluid: error: JVM {pid} runs an alloc session already: a second attach narrows \
             it by --alloc-class alone, and --include is the session's own (--include selects \
             the allocating code, --alloc-class the allocated classes)\n"
        )
    );

    let narrowing = common::succeeds(narrow(java.pid()).stdin(Stdio::null()));
    assert_eq!(
        String::from_utf8_lossy(&narrowing.stdout),
        format!("{}\n", NARROWED.replace("{pid}", &pid))
    );
    std::fs::write(dir.join("go2"), "").unwrap();
    java.expect(&expected_output()[1]);
    std::fs::write(dir.join("end"), "").unwrap();
    java.succeeds();
    check_profile(&read_profile_json(&out));
    check_log(&log);
}

/// Only an `alloc` session can be narrowed: a `cpu` session running is named in one line, and
/// goes on unharmed.
#[test]
fn narrowing_a_session_of_another_mode_is_refused() {
    let dir = compile("Narrow.java", "alloc-narrow-cpu");
    let out = dir.join("out.json");
    let option = format!(
        "-agentpath:{}=root=Narrow::phase,file={}",
        agent().display(),
        out.display()
    );
    let mut java = start(Path::new(JDK17_HOME), &[option], &dir);
    let pid = java.pid().to_string();
    let refused = narrow(java.pid()).output().unwrap();
    std::fs::write(dir.join("go1"), "").unwrap();
    std::fs::write(dir.join("go2"), "").unwrap();
    std::fs::write(dir.join("end"), "").unwrap();
    java.expect(&expected_output()[0]);
    java.expect(&expected_output()[1]);
    java.succeeds();
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr),
        format!(
            "ferrofluid: error: JVM {pid} runs a cpu session: --alloc-class narrows only an alloc \
             session; stop that session first\n"
        )
    );
    // The cpu session saw both phases.
    let doc = read_profile_json(&out);
    let calls: u64 = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["root"]["children"].as_array().into_iter().flatten())
        .filter(|n| n["method"] == "phase")
        .map(|n| u(&n["calls"]))
        .sum();
    assert_eq!(calls, 2, "{doc}");
}

/// `--alloc-class` from the start (`ferrofluid run`): the other sites never get a probe.
#[test]
fn run_with_alloc_classes_probes_only_their_sites() {
    let dir = compile("Narrow.java", "alloc-narrow-run");
    for phase in ["go1", "go2", "end"] {
        std::fs::write(dir.join(phase), "").unwrap();
    }
    let out = dir.join("out.json");
    let output = common::run_java_with(
        &[
            "--mode",
            "alloc",
            "--include",
            "Narrow*",
            "--alloc-class",
            "Narrow$Entry",
        ],
        &out,
        &dir,
        "Narrow",
        &[&N1.to_string(), &N2.to_string(), dir.to_str().unwrap()],
    );
    let printed: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(printed[1..], expected_output()[..]);
    let doc = read_profile_json(&out);
    assert_eq!(doc["alloc_classes"], serde_json::json!(["Narrow$Entry"]));
    let classes: Vec<(&str, u64)> = doc["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["class"].as_str().unwrap(), u(&c["allocated"])))
        .collect();
    assert_eq!(classes, [("Narrow$Entry", N1 + N2)]);
}
