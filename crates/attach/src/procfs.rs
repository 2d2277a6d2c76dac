//! What `/proc/<pid>` tells about a process: its user, its pid inside its own PID namespace, whether it
//! runs a JVM, and the paths of its `/tmp` and working directory as seen from here (through
//! `/proc/<pid>/root`, so containers in other mount namespaces work too).

use std::io;
use std::path::PathBuf;

/// Identity of a live process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: u32,
    /// The pid inside the process's innermost PID namespace (last `NSpid` field); equal to `pid` outside
    /// containers. HotSpot names its files with this one.
    pub nspid: u32,
    /// Effective uid and gid: what the JVM compares the attach peer's credentials to.
    pub euid: u32,
    pub egid: u32,
}

/// Reads `/proc/<pid>/status`. `NotFound` if there is no such process.
pub fn info(pid: u32) -> io::Result<ProcInfo> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    parse_status(pid, &status)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unreadable /proc status"))
}

/// Parses the `Uid:`, `Gid:` and `NSpid:` lines of a `/proc/<pid>/status` text.
pub fn parse_status(pid: u32, status: &str) -> Option<ProcInfo> {
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|rest| {
                rest.split_whitespace()
                    .filter_map(|w| w.parse::<u32>().ok())
                    .collect::<Vec<_>>()
            })
    };
    // `Uid:` is real, effective, saved, filesystem.
    let euid = *field("Uid:")?.get(1)?;
    let egid = *field("Gid:")?.get(1)?;
    // Kernels before 4.1 have no NSpid line: then there are no nested namespaces to care about.
    let nspid = field("NSpid:")
        .and_then(|v| v.last().copied())
        .unwrap_or(pid);
    Some(ProcInfo {
        pid,
        nspid,
        euid,
        egid,
    })
}

/// `/proc/<pid>/root/tmp`: the process's `/tmp`, where HotSpot puts hsperfdata and the attach socket.
pub fn tmp_dir(pid: u32) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/root/tmp"))
}

/// `/proc/<pid>/cwd`: the preferred place of the `.attach_pid` trigger file.
pub fn cwd_dir(pid: u32) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/cwd"))
}

/// Whether the process has HotSpot's `libjvm.so` mapped: the check that makes sending it SIGQUIT safe
/// (for any other process SIGQUIT's default action would kill it).
pub fn maps_libjvm(pid: u32) -> io::Result<bool> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    Ok(maps.lines().any(|l| l.ends_with("/libjvm.so")))
}

/// All numeric entries of `/proc`.
pub fn all_pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ids_and_innermost_nspid() {
        let status = "Name:\tjava\nPid:\t4242\nUid:\t1000\t1001\t1001\t1001\nGid:\t50\t51\t51\t51\nNSpid:\t4242\t7\n";
        assert_eq!(
            parse_status(4242, status),
            Some(ProcInfo {
                pid: 4242,
                nspid: 7,
                euid: 1001,
                egid: 51
            })
        );
        let old_kernel = "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n";
        assert_eq!(parse_status(9, old_kernel).unwrap().nspid, 9);
        assert_eq!(parse_status(9, "Name: x\n"), None);
    }

    #[test]
    fn reads_this_process() {
        let me = info(std::process::id()).unwrap();
        assert_eq!(me.pid, std::process::id());
        assert!(
            !maps_libjvm(std::process::id()).unwrap(),
            "a Rust test binary maps no libjvm.so"
        );
        assert!(all_pids().contains(&std::process::id()));
    }
}
