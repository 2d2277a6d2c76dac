//! What the CLI's real-JVM tests share: the `ferrofluid` binary, the agent library cargo built
//! beside it, a Java test program compiled into a fresh directory, and `ferrofluid run` on it.

#![allow(dead_code)] // each test binary uses its own part

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Output, Stdio};

use ferrofluid_testkit::{agent_library_beside, javac, scratch_dir, JDK17_HOME};

pub fn ferrofluid() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ferrofluid"))
}

/// The agent cdylib (see `ferrofluid_testkit::agent_library_beside`).
pub fn agent() -> PathBuf {
    agent_library_beside(Path::new(env!("CARGO_BIN_EXE_ferrofluid")))
}

/// Compiles `tests/java/SOURCE` into a fresh directory named after `tag` and this process.
pub fn compile(source: &str, tag: &str) -> PathBuf {
    let dir = scratch_dir(Path::new(env!("CARGO_TARGET_TMPDIR")), tag);
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/java")
        .join(source);
    javac(Path::new(JDK17_HOME), &["--release", "17"], &dir, [src]);
    dir
}

/// `ferrofluid run --agent AGENT FLAGS -o OUT -- java -cp DIR MAIN` on JDK 17; panics with its
/// stderr unless it succeeds.
pub fn run_java(flags: &[&str], out: &Path, dir: &Path, main: &str) -> Output {
    run_java_with(flags, out, dir, main, &[])
}

/// [`run_java`] with the program's arguments `args`.
pub fn run_java_with(flags: &[&str], out: &Path, dir: &Path, main: &str, args: &[&str]) -> Output {
    run_java_on(Path::new(JDK17_HOME), flags, out, dir, main, args)
}

/// [`run_java_with`] on the JDK at `home`.
pub fn run_java_on(
    home: &Path,
    flags: &[&str],
    out: &Path,
    dir: &Path,
    main: &str,
    args: &[&str],
) -> Output {
    let output = ferrofluid()
        .arg("run")
        .arg("--agent")
        .arg(agent())
        .args(flags)
        .arg("-o")
        .arg(out)
        .arg("--")
        .arg(home.join("bin/java"))
        .arg("-cp")
        .arg(dir)
        .arg(main)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ferrofluid run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The thread named `name` in a profile document.
pub fn thread<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    entry(doc, "threads", "name", name)
}

/// The entry of array `list` in a profile document whose `key` is `value`.
pub fn entry<'a>(
    doc: &'a serde_json::Value,
    list: &str,
    key: &str,
    value: &str,
) -> &'a serde_json::Value {
    doc[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e[key] == value)
        .unwrap_or_else(|| panic!("no {list} entry with {key} {value} in {doc}"))
}

/// The child of profile node `node` for method `name`.
pub fn child<'a>(node: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    entry(node, "children", "method", name)
}

/// The method names of profile node `node`'s children, in order.
pub fn child_names(node: &serde_json::Value) -> Vec<&str> {
    node["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["method"].as_str().unwrap())
        .collect()
}

/// `ferrofluid attach PID --agent AGENT ARGS`, stdin at EOF, stderr piped; returns once it said
/// it is profiling, with the stderr lines so far and the rest of stderr to read.
// The child is returned running: the caller waits for it.
#[allow(clippy::zombie_processes)]
pub fn attach_profiling(pid: u32, args: &[&str]) -> (Child, Vec<String>, BufReader<ChildStderr>) {
    let mut cli = ferrofluid()
        .arg("attach")
        .arg(pid.to_string())
        .arg("--agent")
        .arg(agent())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(cli.stderr.take().unwrap());
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            let status = cli.wait().unwrap();
            panic!("attach ended ({status}) before profiling: {lines:?}");
        }
        let profiling = line.starts_with("ferrofluid: profiling ");
        lines.push(line);
        if profiling {
            return (cli, lines, stderr);
        }
    }
}
