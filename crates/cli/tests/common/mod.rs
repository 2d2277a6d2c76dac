//! What the CLI's real-JVM tests share, on top of `ferrofluid_testkit` (the JDKs, `javac`, the
//! [`Program`] handshake, the profile JSON lookups): the `ferrofluid` binary and the agent library
//! cargo built beside it, the test programs of `tests/java` compiled into fresh directories and
//! run under `ferrofluid run` or `-agentpath` ([`run`]) or attached to ([`attach`]), and the
//! reports `ferrofluid report` makes of their profiles.

#![allow(dead_code, unused_imports)] // each test binary uses its own part

mod attach;
mod run;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use attach::{attach, attach_profiling, attach_while_running, interrupt, kill, rest, Rounds};
pub use ferrofluid_testkit::{
    child, child_names, entry, read_profile_json, thread, u, Program, JDK17_HOME,
};
pub use run::{agentpath, run_command, run_java, run_java_on, run_java_with};

use ferrofluid_testkit::{agent_library_beside, javac, scratch_dir};

pub fn ferrofluid() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ferrofluid"))
}

/// The agent cdylib (see `ferrofluid_testkit::agent_library_beside`).
pub fn agent() -> PathBuf {
    agent_library_beside(Path::new(env!("CARGO_BIN_EXE_ferrofluid")))
}

/// `HOME/bin/java`.
pub fn java(home: &Path) -> Command {
    Command::new(home.join("bin/java"))
}

/// A fresh directory for a test's files, named after `tag` and this process.
pub fn scratch(tag: &str) -> PathBuf {
    scratch_dir(Path::new(env!("CARGO_TARGET_TMPDIR")), tag)
}

/// Compiles `tests/java/SOURCE` into a fresh directory named after `tag` and this process.
pub fn compile(source: &str, tag: &str) -> PathBuf {
    let dir = scratch(tag);
    javac(
        Path::new(JDK17_HOME),
        &["--release", "17"],
        &dir,
        [source_path(source)],
    );
    dir
}

/// `tests/java/SOURCE`.
/// `dir/lib<name>.so`, a JNI library built from `tests/native/<source>` with the system C
/// compiler against JDK 17's headers.
pub fn jni_library(dir: &Path, source: &str, name: &str) -> PathBuf {
    let out = dir.join(format!("lib{name}.so"));
    let include = Path::new(JDK17_HOME).join("include");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&out)
        .arg(format!("-I{}", include.display()))
        .arg(format!("-I{}", include.join("linux").display()))
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/native")
                .join(source),
        )
        .status()
        .expect("a C compiler `cc` on PATH");
    assert!(status.success(), "cc {source}");
    out
}

pub fn source_path(source: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/java")
        .join(source)
}

/// Runs `command` to its end and panics, with its stderr, unless it succeeded; its output.
pub fn succeeds(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", command.get_program()));
    assert!(
        output.status.success(),
        "{:?} {:?} failed ({}): {}",
        command.get_program(),
        command.get_args().collect::<Vec<_>>(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `ferrofluid report INPUT -o OUTPUT FLAGS`, which must succeed.
pub fn write_report(input: &Path, output: &Path, flags: &[&str]) {
    succeeds(
        ferrofluid()
            .arg("report")
            .arg(input)
            .arg("-o")
            .arg(output)
            .args(flags),
    );
}

/// [`write_report`]; the report's text.
pub fn report(input: &Path, output: &Path, flags: &[&str]) -> String {
    write_report(input, output, flags);
    std::fs::read_to_string(output).unwrap_or_else(|e| panic!("{}: {e}", output.display()))
}

/// `ferrofluid report INPUT FLAGS`, which must succeed: the report it prints.
pub fn report_stdout(input: &Path, flags: &[&str]) -> String {
    let output = succeeds(ferrofluid().arg("report").arg(input).args(flags));
    String::from_utf8(output.stdout).unwrap()
}

/// The `calls` of profile node `node`.
pub fn calls(node: &serde_json::Value) -> u64 {
    u(&node["calls"])
}

/// The lines of folded stacks `folded` whose stack ends with `suffix`: their values added up.
pub fn folded_sum(folded: &str, suffix: &str) -> u64 {
    folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap())
        .filter(|(stack, _)| stack.ends_with(suffix))
        .map(|(_, n)| n.parse::<u64>().unwrap())
        .sum()
}

/// `go tool pprof -top FLAGS PPROF` (Go's own reader of the pprof format), its caches in `dir`,
/// which must succeed: what it prints; `None` when Go is not installed (`.ci/run` installs
/// golang-go).
pub fn go_pprof_top(pprof: &Path, dir: &Path, flags: &[&str]) -> Option<String> {
    let go = ["/usr/bin/go", "/usr/lib/go/bin/go"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())?;
    let top = succeeds(
        Command::new(go)
            .args(["tool", "pprof", "-top"])
            .args(flags)
            .arg(pprof)
            .env("GOCACHE", dir.join("gocache"))
            .env("HOME", dir),
    );
    Some(String::from_utf8_lossy(&top.stdout).into_owned())
}

/// Every node of every thread's tree of a profile document, with its parent (`None` for the
/// threads' roots).
pub fn contexts(doc: &serde_json::Value) -> Vec<(&serde_json::Value, Option<&serde_json::Value>)> {
    let mut out = Vec::new();
    let mut pending: Vec<_> = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (&t["root"], None))
        .collect();
    while let Some((node, parent)) = pending.pop() {
        out.push((node, parent));
        pending.extend(
            node["children"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| (c, Some(node))),
        );
    }
    out
}

/// `class.method` of profile node `node`.
pub fn frame(node: &serde_json::Value) -> String {
    format!(
        "{}.{}",
        node["class"].as_str().unwrap(),
        node["method"].as_str().unwrap()
    )
}

/// The calls per call path (`A.f/B.g`, outermost first) of the one thread of a profile document,
/// in path order.
pub fn call_paths(doc: &serde_json::Value) -> Vec<(String, u64)> {
    let threads = doc["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{doc}");
    let mut out = Vec::new();
    let mut stack = vec![(&threads[0]["root"], String::new())];
    while let Some((node, prefix)) = stack.pop() {
        for child in node["children"].as_array().into_iter().flatten() {
            let name = frame(child);
            let path = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            out.push((path.clone(), calls(child)));
            stack.push((child, path));
        }
    }
    out.sort();
    out
}

/// The words of `line`: a command line's fixed arguments written as one string.
pub fn args(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The names of a profile document's threads, in the document's order.
pub fn thread_names(doc: &serde_json::Value) -> Vec<&str> {
    doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}
