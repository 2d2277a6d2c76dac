//! Helpers of the agent's unit tests.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

// Process-wide: the unit tests that switch the active engine, the probes' switches or the
// alloc engine's selection run one at a time, whatever thread the harness gives them.
/// Serialises the unit tests that change process-wide state.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// JDK 17's tools.
const JDK: &str = "/usr/lib/jvm/java-17-openjdk-amd64/bin";

/// The class file javac (JDK 17) makes of the Java source `src` (relative to the crate) with
/// `--release release`, read from `class` (its path under the output directory); `None` when
/// there is no JDK 17 javac here (the caller skips).
pub fn compiled(src: &str, release: &str, class: &str) -> Option<Vec<u8>> {
    compiled_with(&[src], release, class)
}

/// As [`compiled`], for a source that needs others (`srcs[0]`; the others compiled with it).
pub fn compiled_with(srcs: &[&str], release: &str, class: &str) -> Option<Vec<u8>> {
    compiled_by(srcs, &["--release", release], class)
}

/// As [`compiled_with`], with javac options `options` in place of `--release`.
pub fn compiled_by(srcs: &[&str], options: &[&str], class: &str) -> Option<Vec<u8>> {
    let out = javac(
        srcs,
        options,
        &format!("ff-javac-{}", class.replace('/', "-")),
    )?;
    let made = std::fs::read(out.join(class)).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    Some(made)
}

/// Compiles `srcs` (paths from this crate) with javac `options` and runs class `main` with JDK
/// 17 with `args`; its standard output, or `None` without a JDK 17.
pub fn run_java(srcs: &[&str], options: &[&str], main: &str, args: &[&str]) -> Option<String> {
    let out = javac(srcs, options, &format!("ff-run-{}", main.replace('.', "-")))?;
    let run = std::process::Command::new(Path::new(JDK).join("java"))
        .arg("-cp")
        .arg(&out)
        .arg(main)
        .args(args)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        run.status.success(),
        "{main}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    Some(String::from_utf8(run.stdout).unwrap())
}

/// Compiles `srcs` with `options` into a fresh temporary directory named after `name` and the
/// process; `None` without a JDK 17 javac.
fn javac(srcs: &[&str], options: &[&str], name: &str) -> Option<PathBuf> {
    let javac = Path::new(JDK).join("javac");
    if !javac.exists() {
        eprintln!("skipped: no JDK 17 javac");
        return None;
    }
    let out = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let ok = std::process::Command::new(javac)
        .args(options)
        .arg("-d")
        .arg(&out)
        .args(
            srcs.iter()
                .map(|s| Path::new(env!("CARGO_MANIFEST_DIR")).join(s)),
        )
        .status()
        .unwrap()
        .success();
    assert!(ok, "javac {srcs:?}");
    Some(out)
}
