//! `go tool pprof` as the oracle for pprof files: found on the machine (Debian's `golang-go`,
//! which `.ci/run` installs), run with `-top`, its table read back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `go`, or `None` (a test then says it is skipped: `.ci/run` installs `golang-go`).
pub fn go() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("FERROFLUID_GO").map(PathBuf::from),
        Some(PathBuf::from("/usr/bin/go")),
        Some(PathBuf::from("/usr/lib/go/bin/go")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .or_else(|| {
            Command::new("go")
                .arg("version")
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|_| PathBuf::from("go"))
        })
}

/// The unit `-unit=` shows a metric of `unit` in without scaling: `ns`, `B`, or `minimum` for
/// counts (which pprof does not scale).
pub fn display_unit(unit: &str) -> &'static str {
    match unit {
        "nanoseconds" => "ns",
        "bytes" => "B",
        _ => "minimum",
    }
}

/// `go tool pprof -top` of `file` for sample type `index`, shown in `unit` ([`display_unit`]):
/// per function (flat, cum), and the total of its "Showing nodes accounting for" line. `dir`
/// holds Go's cache.
pub fn top(
    go: &Path,
    file: &Path,
    index: &str,
    unit: &str,
    dir: &Path,
) -> (BTreeMap<String, (u64, u64)>, u64) {
    let out = Command::new(go)
        .args([
            "tool",
            "pprof",
            "-top",
            "-nodecount=100000",
            "-nodefraction=0",
        ])
        .arg(format!("-sample_index={index}"))
        .arg(format!("-unit={unit}"))
        .arg(file)
        .env("GOCACHE", dir.join("gocache"))
        .env("HOME", dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "go tool pprof failed: {}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let number = |s: &str| -> u64 {
        s.strip_suffix("ns")
            .or_else(|| s.strip_suffix('B'))
            .unwrap_or(s)
            .parse()
            .unwrap_or_else(|_| panic!("{s:?} in\n{text}"))
    };
    let mut rows = BTreeMap::new();
    let mut total = None;
    let mut in_table = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Showing nodes accounting for ") {
            // "X, P% of Y total"
            let of = rest.split(" of ").nth(1).unwrap();
            total = Some(number(of.trim_end_matches(" total")));
            continue;
        }
        if line.trim_start().starts_with("flat") {
            in_table = true;
            continue;
        }
        if in_table {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let name = cols[5..].join(" ");
            rows.insert(name, (number(cols[0]), number(cols[3])));
        }
    }
    (rows, total.unwrap_or_else(|| panic!("no total in\n{text}")))
}
