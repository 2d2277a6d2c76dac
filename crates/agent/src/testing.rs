//! Helpers of the agent's unit tests.

/// The class file javac (JDK 17) makes of the Java source `src` (relative to the crate) with
/// `--release release`, read from `class` (its path under the output directory); `None` when
/// there is no JDK 17 javac here (the caller skips).
pub fn compiled(src: &str, release: &str, class: &str) -> Option<Vec<u8>> {
    let javac = "/usr/lib/jvm/java-17-openjdk-amd64/bin/javac";
    if !std::path::Path::new(javac).exists() {
        eprintln!("skipped: no JDK 17 javac");
        return None;
    }
    let out = std::env::temp_dir().join(format!(
        "ff-javac-{}-{}",
        std::process::id(),
        class.replace('/', "-")
    ));
    let ok = std::process::Command::new(javac)
        .args(["--release", release, "-d"])
        .arg(&out)
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(src))
        .status()
        .unwrap()
        .success();
    assert!(ok, "javac {src}");
    let made = std::fs::read(out.join(class)).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    Some(made)
}
