//! Finding running JVMs, as `jps` does, from their hsperfdata files, including JVMs in other PID and mount
//! namespaces (each process's `/tmp` is read through `/proc/<pid>/root`, named by its namespace pid).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::hsperf::{self, Value};
use crate::procfs::{self, ProcInfo};

/// One running JVM, as its hsperfdata describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JvmInfo {
    /// Pid in our namespace (what `attach` takes).
    pub pid: u32,
    /// Pid inside the JVM's own PID namespace.
    pub nspid: u32,
    /// Effective uid of the JVM.
    pub uid: u32,
    /// Main class or jar (first word of `sun.rt.javaCommand`); empty if the JVM did not say.
    pub main: String,
    /// The program's arguments (rest of `sun.rt.javaCommand`).
    pub args: String,
    /// `java.vm.version`, e.g. `17.0.15+6-Debian-1deb12u1`.
    pub vm_version: String,
    /// `java.vm.specification.version`: the Java feature release, e.g. `17`.
    pub spec_version: String,
    /// The hsperfdata file it was read from.
    pub hsperfdata: PathBuf,
}

/// Every JVM this process may read the hsperfdata of, by pid. As a normal user that is your own JVMs (the
/// files are mode 0600); as root, everyone's.
pub fn list_jvms() -> Vec<JvmInfo> {
    procfs::all_pids()
        .into_iter()
        .filter_map(|pid| describe(pid).ok().flatten())
        .collect()
}

/// The JVM with pid `pid`, `Ok(None)` if that process publishes no hsperfdata (not a JVM, or one started
/// with `-XX:-UsePerfData`).
pub fn describe(pid: u32) -> std::io::Result<Option<JvmInfo>> {
    let proc = procfs::info(pid)?;
    let Some(path) = find_hsperfdata(&proc) else {
        return Ok(None);
    };
    let data = std::fs::read(&path)?;
    let Ok(counters) = hsperf::parse(&data) else {
        return Ok(None);
    };
    // A stale file of a dead JVM whose pid was reused: the process must really be a JVM.
    if procfs::maps_libjvm(pid).ok() == Some(false) {
        return Ok(None);
    }
    let text = |name: &str| match counters.get(name) {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let (main, args) = split_command(&text("sun.rt.javaCommand"));
    Ok(Some(JvmInfo {
        pid,
        nspid: proc.nspid,
        uid: proc.euid,
        main,
        args,
        vm_version: text("java.property.java.vm.version"),
        spec_version: text("java.property.java.vm.specification.version"),
        hsperfdata: path,
    }))
}

/// `<root>/tmp/hsperfdata_<any user>/<nspid>`: the user directory is named after the JVM's user *inside*
/// its namespace, which we cannot map from here, so any directory with the right file name counts.
fn find_hsperfdata(proc: &ProcInfo) -> Option<PathBuf> {
    find_in(&procfs::tmp_dir(proc.pid), proc.nspid)
}

fn find_in(tmp: &Path, nspid: u32) -> Option<PathBuf> {
    let entries = std::fs::read_dir(tmp).ok()?;
    entries.filter_map(Result::ok).find_map(|e| {
        let name = e.file_name();
        let candidate = e.path().join(nspid.to_string());
        (name.to_string_lossy().starts_with("hsperfdata_") && candidate.is_file())
            .then_some(candidate)
    })
}

/// `sun.rt.javaCommand` is the main class (or jar path) and the arguments joined by spaces.
fn split_command(command: &str) -> (String, String) {
    match command.trim().split_once(' ') {
        Some((main, args)) => (main.to_owned(), args.trim().to_owned()),
        None => (command.trim().to_owned(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_main_and_arguments() {
        let cases = [
            ("com.acme.Main a b", ("com.acme.Main", "a b")),
            ("/opt/app.jar --port 80", ("/opt/app.jar", "--port 80")),
            ("Loop", ("Loop", "")),
            ("", ("", "")),
        ];
        for (input, (main, args)) in cases {
            assert_eq!(
                split_command(input),
                (main.to_owned(), args.to_owned()),
                "{input:?}"
            );
        }
    }

    #[test]
    fn finds_file_in_any_user_directory() {
        let dir = std::env::temp_dir().join(format!("ff-discover-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("hsperfdata_someone")).unwrap();
        std::fs::create_dir_all(dir.join("other")).unwrap();
        std::fs::write(dir.join("other/77"), b"").unwrap();
        assert_eq!(
            find_in(&dir, 77),
            None,
            "only hsperfdata_* directories count"
        );
        std::fs::write(dir.join("hsperfdata_someone/77"), b"").unwrap();
        assert_eq!(find_in(&dir, 77), Some(dir.join("hsperfdata_someone/77")));
        assert_eq!(find_in(&dir, 78), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
