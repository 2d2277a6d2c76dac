//! A real JVM for integration tests: compiles `Checksum.java` into a fresh directory and runs it; the
//! program prints `i checksum` every 20 ms forever (`ferrofluid_testkit::ticker_line`), so tests
//! can check its output is undisturbed. The agent's tests use it too (`#[path]`).

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ferrofluid_testkit::{ticker_line, Lines};

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

pub struct Jvm {
    pub child: Child,
    lines: Lines,
    dir: PathBuf,
    seen: u64,
}

impl Jvm {
    /// Starts `java Checksum alpha beta`, as `user` (via runuser) if given; returns once it printed.
    pub fn start(tag: &str, user: Option<&str>) -> Jvm {
        match user {
            Some(u) => Self::start_under(tag, &["runuser", "-u", u, "--"]),
            None => Self::start_under(tag, &[]),
        }
    }

    /// Starts `prefix... java -cp DIR Checksum alpha beta` (e.g. under `unshare`); returns once it printed.
    pub fn start_under(tag: &str, prefix: &[&str]) -> Jvm {
        Self::launch(tag, prefix, &[])
    }

    /// Starts `prefix... java JVM_ARGS... -cp DIR Checksum alpha beta`; returns once it printed.
    pub fn launch(tag: &str, prefix: &[&str], jvm_args: &[&str]) -> Jvm {
        // Not under /tmp: a test mounts a private /tmp for the JVM, which would hide the
        // classes when the checkout itself lives under /tmp (as CI clones may).
        let target_tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let base = if target_tmp.starts_with("/tmp") {
            PathBuf::from("/var/tmp")
        } else {
            target_tmp
        };
        let dir = base.join(format!("ff-attach-{tag}-{}", std::process::id()));
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
        let mut child = cmd
            .args(jvm_args)
            .arg("-cp")
            .arg(&dir)
            .args(["Checksum", "alpha", "beta"])
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("java on PATH");
        let lines = Lines::spawn(child.stdout.take().unwrap());
        let mut jvm = Jvm {
            child,
            lines,
            dir,
            seen: 0,
        };
        jvm.expect_lines(1);
        jvm
    }

    /// The JVM's pid (for runuser, the java child of runuser).
    pub fn java_pid(&self) -> u32 {
        let pid = self.child.id();
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
            let line = self.lines.next_within(Duration::from_secs(20));
            self.seen += 1;
            assert_eq!(line, ticker_line(self.seen), "JVM output disturbed");
        }
    }

    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Jvm {
    fn drop(&mut self) {
        if let Ok(children) =
            std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", self.child.id()))
        {
            for c in children.split_whitespace() {
                let _ = Command::new("kill").arg(c).status();
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
