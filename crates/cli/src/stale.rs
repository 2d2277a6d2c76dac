//! Control directories of JVMs that are gone. The agent removes its `/tmp/.ferrofluid-<pid>/` on
//! detach and at JVM exit, but a JVM killed outright (`kill -9`, the OOM killer) cannot: the CLI
//! sweeps such leftovers of this user whenever it looks for JVMs (`list`, `attach`), as HotSpot's
//! tools do with stale hsperfdata files.
//!
//! A directory is stale only if no process has its pid and nothing listens on its socket (a JVM in
//! another PID namespace sharing this `/tmp` has a pid of its own there, but its agent answers).
//! A log that recorded a warning or an error is kept, as the evidence it is meant to be.

use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Removes this user's stale control directories under `tmp`; returns how many.
pub fn sweep(tmp: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return 0;
    };
    // This process's own uid, without libc: `/proc/self` belongs to it.
    let Ok(uid) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(".ferrofluid-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = entry.path();
        // Not followed: a link planted here leads nowhere this sweep removes.
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != uid || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if is_stale(&dir) && remove(&dir) {
            removed += 1;
        }
    }
    removed
}

/// No agent answers on the directory's socket, and its log (if any) holds no warning or error.
fn is_stale(dir: &Path) -> bool {
    let socket = dir.join("control.sock");
    match UnixStream::connect(&socket) {
        Ok(_) => return false,
        Err(e) if e.kind() == ErrorKind::ConnectionRefused || e.kind() == ErrorKind::NotFound => {}
        // A path too long to reach, or no permission: not ours to judge.
        Err(_) => return false,
    }
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap_or_default();
    !log.lines()
        .any(|l| l.contains(" WARN ") || l.contains(" ERROR "))
}

/// Removes the socket, the log and the directory; anything else in it keeps it.
fn remove(dir: &Path) -> bool {
    for file in ["control.sock", "agent.log"] {
        let _ = std::fs::remove_file(dir.join(file));
    }
    std::fs::remove_dir(dir).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    /// The pid of a process that has ended.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    fn control_dir(tmp: &Path, pid: u32, log: Option<&str>) -> std::path::PathBuf {
        let dir = tmp.join(format!(".ferrofluid-{pid}"));
        std::fs::create_dir_all(&dir).unwrap();
        // A socket file nobody listens on any more.
        drop(UnixListener::bind(dir.join("control.sock")).unwrap());
        if let Some(log) = log {
            std::fs::write(dir.join("agent.log"), log).unwrap();
        }
        dir
    }

    #[test]
    fn leftovers_of_dead_jvms_go_and_everything_else_stays() {
        let tmp = std::env::temp_dir().join(format!("ff-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        let dead = dead_pid();
        let gone = control_dir(&tmp, dead, Some("1.0 INFO [agent] started\n"));
        let evidence = tmp.join(".ferrofluid-4000000000");
        std::fs::create_dir_all(&evidence).unwrap();
        std::fs::write(evidence.join("agent.log"), "1.0 WARN [agent] x failed\n").unwrap();
        // Alive: this process's pid, and a socket something listens on under a dead pid.
        let alive = control_dir(&tmp, std::process::id(), None);
        let listening = tmp.join(".ferrofluid-4000000001");
        std::fs::create_dir_all(&listening).unwrap();
        let _listener = UnixListener::bind(listening.join("control.sock")).unwrap();
        let other = tmp.join(".ferrofluid-notapid");
        std::fs::create_dir_all(&other).unwrap();

        assert_eq!(sweep(&tmp), 1);
        assert!(!gone.exists());
        for kept in [&evidence, &alive, &listening, &other] {
            assert!(kept.exists(), "{}", kept.display());
        }
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
