//! What the CLI's real-JVM tests share: the `ferrofluid` binary, the agent library cargo built
//! beside it, and a Java test program compiled into a fresh directory.

use std::path::{Path, PathBuf};
use std::process::Command;

/// JDK 17's tools.
pub const JAVA: &str = "/usr/lib/jvm/java-17-openjdk-amd64/bin";

pub fn ferrofluid() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ferrofluid"))
}

/// The agent cdylib: next to `ferrofluid` after `cargo build`, in `deps/` when `cargo test
/// --workspace` built it for the agent crate's own tests (cargo does not copy it up then).
pub fn agent() -> PathBuf {
    let exe = Path::new(env!("CARGO_BIN_EXE_ferrofluid"));
    let dir = exe.parent().unwrap();
    [dir.to_path_buf(), dir.join("deps")]
        .into_iter()
        .map(|d| d.join("libferrofluid_agent.so"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "libferrofluid_agent.so not built in {}: run `cargo test --workspace --release` or \
                 `cargo build --release -p ferrofluid-agent` first",
                dir.display()
            )
        })
}

/// Compiles `tests/java/SOURCE` into a fresh directory named after `tag` and this process.
pub fn compile(source: &str, tag: &str) -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ff-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/java")
        .join(source);
    let ok = Command::new(Path::new(JAVA).join("javac"))
        .args(["--release", "17", "-d"])
        .arg(&dir)
        .arg(src)
        .status()
        .unwrap()
        .success();
    assert!(ok, "javac {source}");
    dir
}
