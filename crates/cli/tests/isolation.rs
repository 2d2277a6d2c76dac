//! Classes that cannot be instrumented or restored cost neither the profile nor the rest of the
//! subgraph: `tests/java/isolate/Isolate.java`, compiled against an interface that is absent
//! when it runs (as Jetty's `Slf4jLog` without slf4j), has classes that fail to link before and
//! inside the root and classes whose static initialiser fails; the profile is written, its tree
//! is exact, the classes left alone are named in the JSON document, the text report and on
//! stderr, and the JVM is left with nothing instrumented.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

mod common;
use common::{
    agent, attach, ferrofluid, java, read_profile_json, report_stdout, scratch, Program, JDK17_HOME,
};
use ferrofluid_testkit::javac;

/// `Isolate.java` compiled into `DIR/app` against `IsoMissing`, which stays in `DIR/dep`, off
/// the class path the program runs with.
fn compile(tag: &str) -> PathBuf {
    let dir = scratch(tag);
    let src = common::source_path("isolate");
    let jdk = Path::new(JDK17_HOME);
    let dep = dir.join("dep");
    javac(
        jdk,
        &["--release", "17"],
        &dep,
        [src.join("IsoMissing.java")],
    );
    let dep = dep.to_str().unwrap();
    let flags = ["--release", "17", "-cp", dep];
    javac(jdk, &flags, &dir.join("app"), [src.join("Isolate.java")]);
    dir
}

/// `java -cp DIR/app Isolate DIR/go DIR/end`.
fn isolate(dir: &Path) -> Command {
    let mut java = java(Path::new(JDK17_HOME));
    java.arg("-cp")
        .arg(dir.join("app"))
        .arg("Isolate")
        .arg(dir.join("go"))
        .arg(dir.join("end"));
    java
}

/// The flags both tests profile with: the root and the test program's classes only.
/// `--reveal sync`: the exact tree is asserted, which `attach`'s asynchronous revelation does not
/// promise for the first calls.
const FLAGS: [&str; 6] = [
    "--root",
    "Isolate::work",
    "--include",
    "Iso*",
    "--reveal",
    "sync",
];

/// What the program prints after the root's three calls: 12 per call, and the 2 failures
/// before the root and 4 in each call.
const WORKED: &str = "worked 36 failures 14\n";

/// The root's tree: every good callee with its exact count, the failed initialiser of
/// `IsoBroken` (instrumented as it loaded inside the root), nothing of the classes that never
/// linked.
fn assert_exact_tree(doc: &Value) {
    let expected: Vec<(String, u64)> = [
        ("Isolate.work", 3),
        ("Isolate.work/IsoBroken.<clinit>", 1),
        ("Isolate.work/IsoOther.<init>", 3),
        ("Isolate.work/IsoOther.add", 12),
        ("Isolate.work/IsoOther.add/IsoGood.twice", 12),
    ]
    .iter()
    .map(|(p, n)| (p.to_string(), *n))
    .collect();
    assert_eq!(doc["threads"][0]["name"], "main");
    assert_eq!(common::call_paths(doc), expected, "{doc}");
}

/// Reads lines of `from` until one contains `wanted`; all lines read, joined.
fn read_until(from: &mut impl BufRead, wanted: &str) -> String {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if from.read_line(&mut line).unwrap() == 0 {
            return seen;
        }
        seen.push_str(&line);
        if line.contains(wanted) {
            return seen;
        }
    }
}

/// `ferrofluid attach` to a running program, until Enter: `IsoLate` (instrumented as it loaded
/// inside the root, then unable to link) and `IsoBroken` (whose initialiser failed inside the
/// root) cannot be restored, which once failed the whole command (exit 2, no file);
/// `IsoUnlinkable` and `IsoBrokenEarly`, loaded before, are not even tried.
#[test]
fn classes_that_cannot_be_restored_are_named_and_the_profile_is_written() {
    let dir = compile("isolate-attach");
    let out = dir.join("out.json");
    let log = dir.join("agent.log");
    let mut program = Program::spawn(&mut isolate(&dir));
    let ready = program.line();
    let pid: u32 = ready.strip_prefix("ready ").unwrap_or("0").parse().unwrap();
    let mut cli = attach(pid)
        .args(FLAGS)
        .arg("--log")
        .arg(&log)
        .arg("-o")
        .arg(&out)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(cli.stderr.take().unwrap());
    let mut said = read_until(&mut stderr, "until Ctrl-C");
    // Profiling: the root runs now, then the profile is taken.
    std::fs::write(dir.join("go"), "").unwrap();
    let worked = format!("{}\n", program.line());
    // Ctrl-C ends a profile whose stdin is no terminal.
    common::kill("INT", &cli.id().to_string());
    said.push_str(&common::rest(stderr));
    let attached = cli.wait().unwrap();
    let status = attach(pid).output().unwrap();
    let detached = ferrofluid()
        .args(["attach", &pid.to_string(), "--detach"])
        .output()
        .unwrap();
    // Let the program end before asserting anything, so no JVM is left waiting.
    std::fs::write(dir.join("end"), "").unwrap();
    program.succeeds();
    let log = std::fs::read_to_string(&log).unwrap_or_default();

    assert_eq!(worked, WORKED);
    assert!(attached.success(), "{said}\n{log}");
    let warning = "ferrofluid: warning: 2 classes were not restored, as none of their code can \
                   run: IsoBroken (in error state: its static initialiser failed), IsoLate (not \
                   linked: its linking failed, or nothing used it yet)\n";
    assert!(said.contains(warning), "{said}");
    assert!(!said.contains("ferrofluid: error"), "{said}");
    let doc = read_profile_json(&out);
    assert_exact_tree(&doc);
    assert_eq!(
        doc["failed_classes"],
        json!([
            {"class": "IsoBroken", "phase": "restore",
             "error": "in error state: its static initialiser failed", "skipped": true},
            {"class": "IsoLate", "phase": "restore",
             "error": "not linked: its linking failed, or nothing used it yet", "skipped": true},
        ])
    );
    let text = report_stdout(&out, &["-o", "-"]);
    assert!(
        text.contains(&format!(
            "\n! {}",
            &warning["ferrofluid: warning: ".len()..]
        )),
        "{text}"
    );
    // The classes that cannot be retransformed were never tried (the JVM would have answered
    // JVMTI_ERROR_INVALID_CLASS, failing the batch they were in).
    assert!(!log.contains("JVMTI_ERROR"), "{log}");
    assert!(!log.contains("panic") && !log.contains("ERROR"), "{log}");
    // Everything else was restored: a new session finds nothing instrumented.
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("\ninstrumented:   0 classes, 0 methods\n"),
        "{status}"
    );
    assert!(detached.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `ferrofluid run` (the agent from the JVM's start, writing its profile at exit): the class in
/// error state before the root first calls it is named as not instrumented, the rest of the
/// subgraph is exact.
#[test]
fn a_class_in_error_state_is_named_in_a_run_profile() {
    let dir = compile("isolate-run");
    std::fs::write(dir.join("go"), "").unwrap();
    std::fs::write(dir.join("end"), "").unwrap();
    let out = dir.join("out.json");
    let program = isolate(&dir);
    let run = ferrofluid()
        .arg("run")
        .arg("--agent")
        .arg(agent())
        .args(FLAGS)
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg(program.get_program())
        .args(program.get_args())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{said}");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.ends_with(WORKED), "{stdout}");
    assert!(
        said.contains(
            "ferrofluid: warning: 1 class was not instrumented, as none of its code can run: \
             IsoBrokenEarly (in error state: its static initialiser failed)\n"
        ),
        "{said}"
    );
    let doc = read_profile_json(&out);
    assert_exact_tree(&doc);
    assert_eq!(
        doc["failed_classes"],
        json!([{"class": "IsoBrokenEarly", "phase": "instrument",
                "error": "in error state: its static initialiser failed", "skipped": true}])
    );
    let _ = std::fs::remove_dir_all(&dir);
}
