//! A JVM that prints a checksum line every 20 ms forever: a target to attach to whose output shows
//! at once whether anything disturbed it.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::Program;

const SOURCE: &str = r#"
public class Checksum {
    public static void main(String[] args) throws Exception {
        long c = 0;
        for (long i = 1; ; i++) {
            c = c * 31 + i;
            System.out.println(i + " " + c);
            Thread.sleep(20);
        }
    }
}
"#;

/// The line `i c` the tests' ticker programs ([`Ticker`]'s `Checksum`, the agent's `Driver`)
/// print at iteration `i`, with `c = c * 31 + i` in Java's wrapping `long` arithmetic: any other
/// line means the program's output was disturbed.
pub fn ticker_line(i: u64) -> String {
    let c = (1..=i).fold(0i64, |c, k| c.wrapping_mul(31).wrapping_add(k as i64));
    format!("{i} {c}")
}

/// `java Checksum alpha beta`, compiled into a fresh directory, printing [`ticker_line`]s.
pub struct Ticker {
    program: Program,
    dir: PathBuf,
    seen: u64,
}

impl Ticker {
    /// Starts `java Checksum alpha beta`, as `user` (via runuser) if given; returns once it printed.
    pub fn start(tag: &str, user: Option<&str>) -> Ticker {
        match user {
            Some(u) => Self::start_under(tag, &["runuser", "-u", u, "--"]),
            None => Self::start_under(tag, &[]),
        }
    }

    /// Starts `prefix... java -cp DIR Checksum alpha beta` (e.g. under `unshare`); returns once it
    /// printed.
    pub fn start_under(tag: &str, prefix: &[&str]) -> Ticker {
        Self::launch(tag, prefix, &[])
    }

    /// Starts `prefix... java JVM_ARGS... -cp DIR Checksum alpha beta`; returns once it printed.
    pub fn launch(tag: &str, prefix: &[&str], jvm_args: &[&str]) -> Ticker {
        let dir = scratch_base().join(format!("ff-attach-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("Checksum.java"), SOURCE).unwrap();
        let status = Command::new("javac")
            .arg("Checksum.java")
            .current_dir(&dir)
            .status()
            .unwrap();
        assert!(status.success(), "javac failed");
        // World-readable, for a JVM run as another user.
        let _ = Command::new("chmod")
            .args(["-R", "a+rX"])
            .arg(&dir)
            .status();
        let mut cmd = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg("java");
                c
            }
            None => Command::new("java"),
        };
        cmd.args(jvm_args)
            .arg("-cp")
            .arg(&dir)
            .args(["Checksum", "alpha", "beta"])
            .current_dir(&dir)
            .stderr(Stdio::null());
        let mut jvm = Ticker {
            program: Program::spawn(&mut cmd),
            dir,
            seen: 0,
        };
        jvm.expect_lines(1);
        jvm
    }

    /// The JVM's pid (for runuser, the java child of runuser).
    pub fn java_pid(&self) -> u32 {
        let pid = self.program.pid();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.trim() == "java" {
                return pid;
            }
            let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .unwrap_or_default();
            if let Some(c) = children.split_whitespace().next() {
                return c.parse().unwrap();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("no java process under {pid}");
    }

    /// Reads `n` more lines and asserts each is exactly the expected checksum line.
    pub fn expect_lines(&mut self, n: u64) {
        for _ in 0..n {
            let line = self.program.line_within(Duration::from_secs(20));
            self.seen += 1;
            assert_eq!(line, ticker_line(self.seen), "JVM output disturbed");
        }
    }

    /// Whether the JVM (or the command that started it) still runs.
    pub fn alive(&mut self) -> bool {
        self.program.child().try_wait().unwrap().is_none()
    }
}

/// Where the classes go: not under /tmp, which a test mounts privately for the JVM (it would hide
/// them when the checkout itself lives under /tmp, as CI clones may). `target/tmp` (cargo's
/// `CARGO_TARGET_TMPDIR`, found from the test executable in `target/<profile>/deps/`), else
/// `/var/tmp`.
fn scratch_base() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    match exe.ancestors().nth(3) {
        Some(target) if !target.starts_with("/tmp") => target.join("tmp"),
        _ => PathBuf::from("/var/tmp"),
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        let pid = self.program.pid();
        if let Ok(children) = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
            for c in children.split_whitespace() {
                let _ = Command::new("kill").arg(c).status();
            }
        }
        let child = self.program.child();
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticker_lines() {
        assert_eq!(ticker_line(1), "1 1");
        assert_eq!(ticker_line(2), "2 33");
        assert_eq!(ticker_line(3), "3 1026");
    }
}
