//! Golden outputs under `tests/data/<case>/`. `FERROFLUID_BLESS=1 cargo test` rewrites
//! them; on a mismatch the actual output is left in the temp dir for diffing.

mod common;

use std::path::{Path, PathBuf};

use ferrofluid_profile::Profile;
use ferrofluid_report::Format;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn blessing() -> bool {
    std::env::var_os("FERROFLUID_BLESS").is_some_and(|v| v == "1")
}

/// Compares `actual` with the golden file, or rewrites it when blessing.
fn check(case: &str, file: &str, actual: &[u8]) {
    let path = data_dir().join(case).join(file);
    if blessing() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with FERROFLUID_BLESS=1)", path.display()));
    if expected != actual {
        let out = std::env::temp_dir().join("ferrofluid-golden").join(case);
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join(file), actual).unwrap();
        panic!(
            "{} differs; actual output: {} (FERROFLUID_BLESS=1 to accept)",
            path.display(),
            out.join(file).display()
        );
    }
}

fn render(profile: &Profile, format: Format) -> Vec<u8> {
    let mut out = Vec::new();
    format.writer().write(profile, &mut out).unwrap();
    out
}

fn run_case(case: &str, profile: Profile) {
    let mut input = Vec::new();
    profile.write_json(&mut input).unwrap();
    check(case, "input.json", &input);
    // Reports are made from the checked-in document, as `ferrofluid report` does.
    let read =
        Profile::from_json_slice(&std::fs::read(data_dir().join(case).join("input.json")).unwrap())
            .unwrap();
    for format in Format::ALL {
        let bytes = render(&read, format);
        assert_eq!(
            bytes,
            render(&read, format),
            "{case}: {format:?} not deterministic"
        );
        assert_eq!(
            bytes,
            render(&profile, format),
            "{case}: {format:?} differs after JSON"
        );
        check(case, &format!("report.{}", format.extension()), &bytes);
    }
}

#[test]
fn golden_fig4() {
    run_case("fig4", common::fig4());
}

#[test]
fn golden_sample() {
    run_case("sample", common::sample());
}
