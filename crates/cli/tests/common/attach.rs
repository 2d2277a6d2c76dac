//! `ferrofluid attach` to a test program already running: the program started and its `ready`
//! awaited ([`Program`]), the CLI until it says it profiles, the `Rounds` target of the lifecycle
//! and UI tests.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};

use ferrofluid_protocol::control;
use ferrofluid_testkit::{read_profile_json, Program, JDK17_HOME};
use serde_json::Value;

use super::{agent, compile, ferrofluid, java};

/// Sends `signal` (`INT`, `TERM`, `KILL`) to `target` (a pid, or `-PGID`).
pub fn kill(signal: &str, target: &str) {
    let status = Command::new("kill")
        .args(["-s", signal, "--", target])
        .status()
        .unwrap();
    assert!(status.success(), "kill -s {signal} -- {target}");
}

/// The rest of a child's stderr, to its end.
pub fn rest(mut stderr: BufReader<ChildStderr>) -> String {
    let mut s = String::new();
    stderr.read_to_string(&mut s).unwrap();
    s
}

/// Ends an attach session as Ctrl-C does: what it said after `stderr` was read so far; the CLI
/// must exit successfully.
pub fn interrupt(mut cli: Child, stderr: BufReader<ChildStderr>) -> String {
    kill("INT", &cli.id().to_string());
    let said = rest(stderr);
    assert!(cli.wait().unwrap().success(), "{said}");
    said
}

/// `ferrofluid attach PID --agent AGENT`.
pub fn attach(pid: u32) -> Command {
    let mut cli = ferrofluid();
    cli.arg("attach")
        .arg(pid.to_string())
        .arg("--agent")
        .arg(agent());
    cli
}

/// `ferrofluid attach PID --agent AGENT ARGS`, stdin at EOF, stderr piped; returns once it said
/// it is profiling, with the stderr lines so far and the rest of stderr to read.
// The child is returned running: the caller waits for it.
#[allow(clippy::zombie_processes)]
pub fn attach_profiling(pid: u32, args: &[&str]) -> (Child, Vec<String>, BufReader<ChildStderr>) {
    let mut cli = attach(pid)
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

/// The attach handshake: `java -cp DIR PROGRAM... DIR/go` on the JDK at `home`, started without
/// the agent, prints `ready`; `ferrofluid attach PID --agent AGENT FLAGS -o DIR/out.json` runs
/// until it profiles; then `go` is written, and the program must print `done` as the last of its
/// output and exit well, and attach must succeed. The profile.
#[allow(clippy::zombie_processes)] // a failed attach kills the target and panics
pub fn attach_while_running(home: &Path, dir: &Path, program: &[&str], flags: &[&str]) -> Value {
    let (go, out) = (dir.join("go"), dir.join("out.json"));
    let mut java = Program::started(
        java(home).arg("-cp").arg(dir).args(program).arg(&go),
        "ready",
    );
    let mut args = flags.to_vec();
    args.extend(["-o", out.to_str().unwrap()]);
    // stderr is kept open until the CLI ends: it says more when it writes the profile.
    let (mut cli, said, mut stderr) = attach_profiling(java.pid(), &args);
    std::fs::write(&go, "").unwrap();
    assert_eq!(java.rest(), "done\n");
    java.succeeds();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let status = cli.wait().unwrap();
    assert!(status.success(), "{said:?} {rest}");
    read_profile_json(&out)
}

/// `Rounds` (a `round` of ten `step`s through `work` every millisecond until the file `stop`
/// exists) running without the agent, once it printed `ready`.
pub struct Rounds {
    pub dir: PathBuf,
    pub stop: PathBuf,
    java: Program,
}

impl Rounds {
    pub fn start(tag: &str) -> Rounds {
        let dir = compile("Rounds.java", tag);
        let stop = dir.join("stop");
        let java = Program::started(
            java(Path::new(JDK17_HOME))
                .arg("-cp")
                .arg(&dir)
                .arg("Rounds")
                .arg(&stop),
            "ready",
        );
        Rounds { dir, stop, java }
    }

    pub fn pid(&self) -> u32 {
        self.java.pid()
    }

    /// The agent's control directory in this JVM (the default one).
    pub fn control_dir(&self) -> PathBuf {
        control::default_socket_path(Path::new("/tmp"), self.pid())
            .parent()
            .unwrap()
            .to_path_buf()
    }

    /// Waits for the JVM to exit, and checks that it exited well (the agent left it as it was).
    pub fn exits_well(&mut self) {
        self.java.succeeds();
    }

    /// Lets the program end, checks that it ended well, and removes its directory.
    pub fn finish(mut self) {
        std::fs::write(&self.stop, "").unwrap();
        self.exits_well();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Rounds {
    fn drop(&mut self) {
        // A failed assertion must not leave the JVM behind.
        let _ = std::fs::write(&self.stop, "");
        let _ = std::fs::remove_dir_all(self.control_dir());
    }
}
