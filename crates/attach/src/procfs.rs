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

/// The path of the first library mapped into process `pid` whose file name starts with
/// `prefix` and ends in `.so`, as the process sees it (a file deleted since it was loaded
/// included): how a tool finds the agent a JVM loaded already, whose path loads it again.
pub fn mapped_library(pid: u32, prefix: &str) -> io::Result<Option<PathBuf>> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    Ok(find_library(&maps, prefix))
}

/// [`mapped_library`] in the text of a `/proc/<pid>/maps`.
pub fn find_library(maps: &str, prefix: &str) -> Option<PathBuf> {
    maps.lines().find_map(|line| {
        // Address, perms, offset, device, inode, then the path (which may hold spaces).
        let path = line.splitn(6, char::is_whitespace).nth(5)?.trim_start();
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        let name = path.rsplit('/').next()?;
        (path.starts_with('/') && name.starts_with(prefix) && name.ends_with(".so"))
            .then(|| PathBuf::from(path))
    })
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

    #[test]
    fn finds_a_mapped_library_by_file_name_even_deleted() {
        let maps = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1311                       /usr/lib/jvm/java-17-openjdk-amd64/bin/java
7f1c2a000000-7f1c2a200000 r-xp 00000000 08:01 42                         /opt/ff dir/libferrofluid_agent.so (deleted)
7f1c2b000000-7f1c2b001000 rw-p 00000000 00:00 0 
7f1c2c000000-7f1c2c100000 r-xp 00000000 08:01 43                         /usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so
";
        assert_eq!(
            find_library(maps, "libferrofluid_agent"),
            Some(PathBuf::from("/opt/ff dir/libferrofluid_agent.so"))
        );
        assert_eq!(
            find_library(maps, "libjvm"),
            Some(PathBuf::from(
                "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
            ))
        );
        assert_eq!(find_library(maps, "libnothing"), None);
        assert_eq!(
            mapped_library(std::process::id(), "libferrofluid_agent").unwrap(),
            None
        );
    }
}
