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
    /// CPU seconds (user + system) of the whole process tree, for a run that exited by itself.
    /// On a machine shared with other work, wall time mostly measures waiting for a core; CPU
    /// time does not.
    pub cpu_secs: Option<f64>,
}

/// User + system CPU seconds of this process's waited-for children (`cutime` + `cstime` of
/// /proc/self/stat; a child's own waited-for children are included in its times, so a run's
/// whole tree counts). The kernel reports them in USER_HZ ticks, 100 per second on Linux.
pub fn children_cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest: Vec<&str> = stat
        .get(stat.rfind(')')? + 2..)?
        .split_whitespace()
        .collect();
    // cutime and cstime are fields 16 and 17; `rest` starts at field 3.
    let ticks: u64 = rest.get(13)?.parse::<u64>().ok()? + rest.get(14)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// Runs `cmd` in `dir` with stdout/stderr to `dir/stdout` and `dir/stderr`; kills its whole
/// process group when it runs longer than `cap`.
pub fn run_capped(cmd: &mut Command, dir: &Path, cap: Duration) -> Result<Outcome, SuiteError> {
    let out = File::create(dir.join("stdout")).map_err(SuiteError::io("create stdout file"))?;
    let err = File::create(dir.join("stderr")).map_err(SuiteError::io("create stderr file"))?;
    let cpu_before = children_cpu_secs();
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
            let cpu_secs = match (cpu_before, children_cpu_secs()) {
                (Some(a), Some(b)) => Some(b - a),
                _ => None,
            };
            return Ok(Outcome {
                exit,
                secs,
                cpu_secs,
            });
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
                cpu_secs: None,
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
    fn cpu_time_of_the_whole_tree_is_measured() {
        let d = dir("cpu");
        // A grandchild that spins a fixed number of iterations, then a sleep that uses no CPU.
        let spin = run_capped(
            Command::new("sh").args([
                "-c",
                "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; sleep 0.3",
            ]),
            &d,
            Duration::from_secs(120),
        )
        .unwrap();
        let idle = run_capped(
            Command::new("sh").args(["-c", "sleep 0.5"]),
            &d,
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!((&spin.exit, &idle.exit), (&Exit::Ok, &Exit::Ok));
        let (busy, quiet) = (spin.cpu_secs.unwrap(), idle.cpu_secs.unwrap());
        assert!(busy >= 0.1, "spinning child used {busy} s of CPU");
        assert!(quiet < 0.1, "sleeping child used {quiet} s of CPU");
        assert!(idle.secs >= 0.5);
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
