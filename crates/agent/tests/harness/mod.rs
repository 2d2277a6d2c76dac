//! What the agent's real-JVM tests share beyond `ferrofluid_testkit`: the control socket of an
//! attached agent, a JVM run with the agent loaded at startup, and call paths of a profile.

#![allow(dead_code)] // each test binary uses its own part

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use ferrofluid_protocol::control::default_socket_path;
use ferrofluid_testkit::{agent_library_beside_test, read_profile_json};
use serde_json::Value;

/// The control socket the agent attached to the JVM `pid` listens on.
pub fn socket_of(pid: u32) -> PathBuf {
    let info = ferrofluid_attach::procfs::info(pid).unwrap();
    default_socket_path(&ferrofluid_attach::procfs::tmp_dir(pid), info.nspid)
}

/// `-agentpath:AGENT=OPTIONS,file=DIR/out.json,log=DIR/agent.log,socket=DIR/ctl/control.sock`.
pub fn startup_agent_arg(dir: &Path, options: &str) -> String {
    format!(
        "-agentpath:{}={options},file={},log={},socket={}",
        agent_library_beside_test().display(),
        dir.join("out.json").display(),
        dir.join("agent.log").display(),
        dir.join("ctl/control.sock").display()
    )
}

/// Runs `JDK/bin/java -agentpath:…=OPTIONS,… JVM_ARGS -cp DIR ARGS`, the program compiled into
/// `dir` (see [`startup_agent_arg`]); asserts the JVM succeeded and the agent logged no panic or
/// error. Returns the profile the agent wrote at exit, its log and the program's stdout, and
/// removes `dir`.
pub fn run_with_agent_at_startup(
    jdk: &Path,
    dir: &Path,
    options: &str,
    jvm_args: &[String],
    args: &[&str],
) -> (Value, String, String) {
    let run = Command::new(jdk.join("bin/java"))
        .arg(startup_agent_arg(dir, options))
        .args(jvm_args)
        .arg("-cp")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap_or_default();
    assert!(
        run.status.success(),
        "{}\n{log}",
        String::from_utf8_lossy(&run.stderr)
    );
    let profile = read_profile_json(&dir.join("out.json"));
    let _ = std::fs::remove_dir_all(dir);
    assert!(!log.contains("panic") && !log.contains("ERROR"), "{log}");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    (profile, log, stdout)
}

/// Calls per call path (`Fig4.f/Fig4.g/Fig4.h`) summed over threads.
pub fn call_paths(profile: &Value) -> BTreeMap<String, u64> {
    fn walk(node: &Value, prefix: &str, out: &mut BTreeMap<String, u64>) {
        for child in node["children"].as_array().into_iter().flatten() {
            let class = child["class"].as_str().unwrap_or("");
            let name = child["method"].as_str().unwrap_or("?");
            let path = if prefix.is_empty() {
                format!("{class}.{name}")
            } else {
                format!("{prefix}/{class}.{name}")
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

/// Expected call paths, as [`call_paths`] returns them.
pub fn paths(expected: &[(&str, u64)]) -> BTreeMap<String, u64> {
    expected.iter().map(|(p, n)| (p.to_string(), *n)).collect()
}

/// Ends a test's JVM that an agent was attached to: removes the agent's socket directory (through
/// /proc/PID/root, so only while the JVM lives), then kills the JVM and removes the work `dir`.
pub fn stop_attached_jvm(mut child: Child, socket: &Path, dir: &Path) {
    if let Some(socket_dir) = socket.parent() {
        let _ = std::fs::remove_dir_all(socket_dir);
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(dir);
}
