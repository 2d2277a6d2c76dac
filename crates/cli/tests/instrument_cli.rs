//! `ferrofluid instrument` end to end on small generated inputs: summary counts, what is
//! copied, dropped and patched, and the one-line errors.

use std::fs;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output};

use zip::write::SimpleFileOptions;

/// `ferrofluid instrument INPUT OUTPUT FLAGS...`.
fn instrument(input: impl AsRef<Path>, output: impl AsRef<Path>, flags: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrofluid"))
        .arg("instrument")
        .arg(input.as_ref())
        .arg(output.as_ref())
        .args(flags.split_whitespace())
        .output()
        .expect("run ferrofluid")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn write_jar(path: &Path, entries: &[(&str, &[u8])]) {
    let mut zip = zip::ZipWriter::new(fs::File::create(path).unwrap());
    for (name, data) in entries {
        zip.start_file(*name, SimpleFileOptions::default()).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap();
}

fn read_jar(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut archive = zip::ZipArchive::new(fs::File::open(path).unwrap()).unwrap();
    (0..archive.len())
        .map(|i| {
            let mut f = archive.by_index(i).unwrap();
            let mut data = Vec::new();
            f.read_to_end(&mut data).unwrap();
            (f.name().to_owned(), data)
        })
        .collect()
}

#[test]
fn jar_to_jar_patches_copies_drops_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jar");
    let output = dir.path().join("out.jar");
    let class = ferrofluid_classfile::testing::minimal_class();
    write_jar(
        &input,
        &[
            ("META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\r\n\r\n"),
            ("META-INF/SIGNER.SF", b"sig"),
            ("META-INF/SIGNER.RSA", b"rsa"),
            ("T.class", &class),
            ("Broken.class", b"\xCA\xFE\xBA\xBE\x00"),
            ("data/readme.txt", b"hello"),
        ],
    );
    let out = instrument(&input, &output, "--probe entry-exit");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stdout(&out),
        format!(
            "instrumented {} -> {} with probe entry-exit\n\
             classes: 1 patched, 0 unchanged (0 not selected), 1 failed\n\
             methods: 1 patched, 0 skipped\n\
             other entries: 2 copied unchanged\n\
             signature files dropped (patched classes would break the signature): META-INF/SIGNER.SF, META-INF/SIGNER.RSA\n\
             failed classes were copied unchanged; run with --verbose to see why\n",
            input.display(),
            output.display()
        )
    );
    let entries = read_jar(&output);
    assert_eq!(
        entries.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        [
            "META-INF/MANIFEST.MF",
            "T.class",
            "Broken.class",
            "data/readme.txt"
        ]
    );
    assert_ne!(entries[1].1, class, "T.class must be patched");
    assert_eq!(
        entries[2].1, b"\xCA\xFE\xBA\xBE\x00",
        "an unreadable class is copied unchanged"
    );
    assert_eq!(entries[3].1, b"hello");
}

#[test]
fn include_pattern_leaves_other_classes_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("T.class");
    fs::write(&input, ferrofluid_classfile::testing::minimal_class()).unwrap();
    let output = dir.path().join("out");
    let out = instrument(
        &input,
        &output,
        "--probe blocks --include com.acme.* --verbose",
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert!(text.starts_with("unchanged  T (not selected)\n"), "{text}");
    assert!(
        text.contains("classes: 0 patched, 1 unchanged (1 not selected), 0 failed\n"),
        "{text}"
    );
    assert_eq!(
        fs::read(output.join("T.class")).unwrap(),
        ferrofluid_classfile::testing::minimal_class()
    );
}

#[test]
fn verbose_lists_each_method_with_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("classes");
    fs::create_dir_all(input.join("a")).unwrap();
    fs::write(
        input.join("a/T.class"),
        ferrofluid_classfile::testing::minimal_class(),
    )
    .unwrap();
    let output = dir.path().join("T.class");
    let out = instrument(input.join("a/T.class"), &output, "--probe native --verbose");
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert!(text.starts_with("unchanged  T (0 methods patched, 1 skipped)\n  #0 f()V skipped not-native: not native\n"), "{text}");
    assert!(
        text.contains("methods: 0 patched, 1 skipped (not-native 1)\n"),
        "{text}"
    );
}

#[test]
fn unreadable_input_is_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("broken.jar");
    fs::write(&input, b"not a zip").unwrap();
    let out = instrument(&input, dir.path().join("o"), "--probe alloc");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "ferrofluid: error: cannot read '{}' as a jar: ",
            input.display()
        )),
        "{err}"
    );
    assert!(err.trim_end().ends_with("(is it a valid jar?)"), "{err}");
}

#[test]
fn missing_input_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out");
    let out = instrument("/nonexistent/app.jar", &output, "--probe alloc");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "ferrofluid: error: cannot read '/nonexistent/app.jar': no such file or directory\n"
    );
    assert!(
        !output.exists(),
        "nothing is created when the input is missing"
    );
}
