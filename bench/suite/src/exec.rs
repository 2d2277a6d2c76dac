//! Runs one command with a time cap, in its own process group so a capped run's JVM dies with it.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::SuiteError;

#[derive(Debug, Clone, PartialEq)]
pub enum Exit {
    Ok,
    /// Exit code, or the signal as a negative number.
    Failed(i32),
    /// Killed at the cap.
    Capped,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub exit: Exit,
    /// Wall-clock seconds from spawn to exit (to the kill for a capped run).
    pub secs: f64,
}

/// Runs `cmd` in `dir` with stdout/stderr to `dir/stdout` and `dir/stderr`; kills its whole
/// process group when it runs longer than `cap`.
pub fn run_capped(cmd: &mut Command, dir: &Path, cap: Duration) -> Result<Outcome, SuiteError> {
    let out = File::create(dir.join("stdout")).map_err(SuiteError::io("create stdout file"))?;
    let err = File::create(dir.join("stderr")).map_err(SuiteError::io("create stderr file"))?;
    let start = Instant::now();
    let mut child = cmd
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(SuiteError::io(format!("start {:?}", cmd.get_program())))?;
    loop {
        if let Some(status) = child.try_wait().map_err(SuiteError::io("wait"))? {
            let secs = start.elapsed().as_secs_f64();
            let exit = match status.code() {
                Some(0) => Exit::Ok,
                Some(c) => Exit::Failed(c),
                None => Exit::Failed(
                    -std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0),
                ),
            };
            return Ok(Outcome { exit, secs });
        }
        if start.elapsed() >= cap {
            let secs = start.elapsed().as_secs_f64();
            // The group id is the child's pid (process_group(0)).
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            return Ok(Outcome {
                exit: Exit::Capped,
                secs,
            });
        }
        sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("suite-exec-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn output_and_status_are_recorded() {
        let d = dir("ok");
        let o = run_capped(
            Command::new("sh").args(["-c", "echo hi; echo err >&2; exit 3"]),
            &d,
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(o.exit, Exit::Failed(3));
        assert_eq!(std::fs::read_to_string(d.join("stdout")).unwrap(), "hi\n");
        assert_eq!(std::fs::read_to_string(d.join("stderr")).unwrap(), "err\n");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_run_over_the_cap_is_killed_with_its_children() {
        let d = dir("cap");
        // The grandchild writes its pid; it must be gone after the kill.
        let o = run_capped(
            Command::new("sh").args(["-c", "sleep 60 & echo $! > child; wait"]),
            &d,
            Duration::from_millis(500),
        )
        .unwrap();
        assert_eq!(o.exit, Exit::Capped);
        let pid = std::fs::read_to_string(d.join("child")).unwrap();
        sleep(Duration::from_millis(200));
        let alive = Path::new(&format!("/proc/{}", pid.trim())).exists()
            && !std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
                .unwrap_or_default()
                .contains(") Z ");
        assert!(!alive, "sleep {pid} survived the cap");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
