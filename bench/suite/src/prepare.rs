//! Builds what the workloads need in the work directory: the compiled drivers, the javac
//! workload's source tree and the JVMTI event agent. Idempotent: finished steps are skipped.
//! (Installing the Debian packages is prepare.sh's job.)

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::workloads::{find_jar, Workload, DEBIAN_JAVA};
use crate::SuiteError;

pub const DEFAULT_JAVA_HOME: &str = "/usr/lib/jvm/java-17-openjdk-amd64";

/// `$JAVA_HOME`, else Debian's JDK 17.
pub fn java_home() -> PathBuf {
    std::env::var_os("JAVA_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| DEFAULT_JAVA_HOME.into())
}

/// bench/suite in the source tree.
pub fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The class path of a workload's jars, or which jar is missing.
pub fn classpath(w: &Workload, work: &Path) -> Result<Vec<PathBuf>, SuiteError> {
    let mut cp = Vec::new();
    if w.drivers {
        cp.push(work.join("classes"));
    }
    for name in w.jars {
        cp.push(find_jar(Path::new(DEBIAN_JAVA), name).ok_or_else(|| {
            SuiteError::Setup(format!(
                "{DEBIAN_JAVA}/{name}.jar missing (workload {}); apt-get install -y {}",
                w.name, w.packages
            ))
        })?);
    }
    Ok(cp)
}

fn run(cmd: &mut Command, what: &str) -> Result<(), SuiteError> {
    let out = cmd.output().map_err(SuiteError::io(what.to_string()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(5)
            .collect::<Vec<_>>();
        return Err(SuiteError::Setup(format!(
            "{what} failed ({}): {}",
            out.status,
            last.join(" | ")
        )));
    }
    Ok(())
}

/// Compiles `Sum.java` and the drivers of `workloads` into `work/classes`.
pub fn drivers(work: &Path, workloads: &[&Workload]) -> Result<(), SuiteError> {
    let src = suite_dir().join("java/suite");
    let mut files = vec![src.join("Sum.java")];
    let mut cp = Vec::new();
    for w in workloads.iter().filter(|w| w.drivers) {
        let class = w.main.rsplit('.').next().unwrap_or(w.main);
        files.push(src.join(format!("{class}.java")));
        cp.extend(classpath(w, work)?.into_iter().skip(1));
    }
    let classes = work.join("classes");
    fs::create_dir_all(&classes).map_err(SuiteError::io("create work/classes"))?;
    let cp = std::env::join_paths(cp).map_err(|e| SuiteError::Setup(e.to_string()))?;
    run(
        Command::new(java_home().join("bin/javac"))
            .arg("-d")
            .arg(&classes)
            .arg("-cp")
            .arg(cp)
            .args(["-nowarn", "-encoding", "UTF-8"])
            .args(&files),
        "javac of the suite's drivers",
    )
}

/// The javac workload's input: the JDK 17 `java.xml` sources in `work/javac-src/java.xml`, from
/// `$JAVA_HOME/lib/src.zip` or else from Debian's openjdk-17-source package (downloaded, not
/// installed, so the JDK in use is not upgraded).
pub fn javac_sources(work: &Path) -> Result<(), SuiteError> {
    let dest = work.join("javac-src");
    if dest.join("java.xml/module-info.java").is_file() {
        return Ok(());
    }
    let local = java_home().join("lib/src.zip");
    let zip = if local.is_file() {
        local
    } else {
        let dl = work.join("download");
        fs::create_dir_all(&dl).map_err(SuiteError::io("create work/download"))?;
        let zip = dl.join("src.zip");
        if !zip.is_file() {
            let has_deb = |dl: &Path| -> Option<PathBuf> {
                fs::read_dir(dl)
                    .ok()?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .find(|p| {
                        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                            n.starts_with("openjdk-17-source_") && n.ends_with(".deb")
                        })
                    })
            };
            if has_deb(&dl).is_none() {
                run(
                    Command::new("apt-get")
                        .args(["download", "openjdk-17-source"])
                        .current_dir(&dl),
                    "apt-get download openjdk-17-source",
                )?;
            }
            let deb = has_deb(&dl).ok_or_else(|| {
                SuiteError::Setup("apt-get download openjdk-17-source left no .deb".into())
            })?;
            run(
                Command::new("sh")
                    .arg("-c")
                    .arg("dpkg-deb --fsys-tarfile \"$1\" | tar -xO ./usr/lib/jvm/openjdk-17/lib/src.zip > src.zip.part && mv src.zip.part src.zip")
                    .arg("sh")
                    .arg(&deb)
                    .current_dir(&dl),
                "extracting src.zip from openjdk-17-source",
            )?;
        }
        zip
    };
    fs::create_dir_all(&dest).map_err(SuiteError::io("create work/javac-src"))?;
    run(
        Command::new(java_home().join("bin/jar"))
            .arg("xf")
            .arg(&zip)
            .arg("java.xml")
            .current_dir(&dest),
        "unpacking java.xml from src.zip",
    )
}

/// The JVMTI MethodEntry/MethodExit agent, `work/libmethodevents.so`.
pub fn methodevents(work: &Path) -> Result<PathBuf, SuiteError> {
    let src = suite_dir().join("agent/methodevents.c");
    let lib = work.join("libmethodevents.so");
    let fresh = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    if lib.is_file() && fresh(&lib) >= fresh(&src) {
        return Ok(lib);
    }
    let include = java_home().join("include");
    run(
        Command::new("cc")
            .args(["-O2", "-Wall", "-shared", "-fPIC"])
            .arg(format!("-I{}", include.display()))
            .arg(format!("-I{}", include.join("linux").display()))
            .arg("-o")
            .arg(&lib)
            .arg(&src)
            .arg("-lpthread"),
        "cc of agent/methodevents.c",
    )?;
    Ok(lib)
}

/// Everything the given workloads need.
pub fn all(work: &Path, workloads: &[&Workload]) -> Result<(), SuiteError> {
    fs::create_dir_all(work).map_err(SuiteError::io(format!("create {}", work.display())))?;
    drivers(work, workloads)?;
    if workloads.iter().any(|w| w.name == "javac") {
        javac_sources(work)?;
    }
    methodevents(work)?;
    Ok(())
}
