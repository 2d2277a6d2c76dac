//! The guard on a crate's module graph: imports run one way.

use std::path::Path;
use std::process::Command;

/// Runs `tools/module_cycles.py CRATE/src --split` (the graph of `crate::` imports between a
/// crate's files) on the crate at `crate_dir` and panics naming the import cycles it finds.
pub fn assert_no_module_cycles(crate_dir: &Path) {
    let script = crate_dir.join("../../tools/module_cycles.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(crate_dir.join("src"))
        .arg("--split")
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {}: {e}", script.display()));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}: {said}{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let cycles: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with("cycle of "))
        .collect();
    assert!(
        cycles.is_empty(),
        "modules of {} import each other in a cycle (a module below imports one above it): \
         {cycles:?}; `python3 tools/module_cycles.py {} --split -v` lists every import",
        crate_dir.display(),
        crate_dir.join("src").display()
    );
}
