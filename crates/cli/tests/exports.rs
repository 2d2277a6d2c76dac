//! `ferrofluid run -o` writes the exports its extension names, from a real JVM run (root
//! `Gate::root`: root once, step three times, check once).

use std::path::Path;
use std::process::Command;

mod common;
use common::{compile, ferrofluid, go_pprof_top, run_java, write_report};

fn gate(out: &Path, dir: &Path) {
    run_java(
        &["--root", "Gate::root", "--include", "Gate"],
        out,
        dir,
        "Gate",
    );
}

#[test]
fn run_writes_speedscope_and_pprof_by_extension() {
    let dir = compile("Gate.java", "exports");

    let speedscope = dir.join("gate.speedscope.json");
    gate(&speedscope, &dir);
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&speedscope).unwrap()).unwrap();
    assert_eq!(
        doc["$schema"],
        "https://www.speedscope.app/file-format-schema.json"
    );
    let frames: Vec<&str> = doc["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(frames, ["Gate.root", "Gate.step", "Gate.check"], "{doc}");
    let main = &doc["profiles"][0];
    assert_eq!(
        (&main["name"], &main["unit"]),
        (&"main".into(), &"nanoseconds".into())
    );
    let stacks: Vec<Vec<u64>> = main["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s.as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_u64().unwrap())
                .collect()
        })
        .collect();
    // Contexts whose self time rounded to 0 ns are left out; root's is not.
    assert_eq!(stacks[0], [0]);
    assert!(
        stacks
            .iter()
            .all(|s| [vec![0], vec![0, 1], vec![0, 2]].contains(s)),
        "{doc}"
    );

    let pprof = dir.join("gate.pb.gz");
    gate(&pprof, &dir);
    let bytes = std::fs::read(&pprof).unwrap();
    assert_eq!(&bytes[..2], [0x1f, 0x8b], "gzip");
    let flags = ["-sample_index=calls", "-unit=minimum"];
    let Some(text) = go_pprof_top(&pprof, &dir, &flags) else {
        eprintln!(
            "SKIPPED: no go (.ci/run installs golang-go): gate.pb.gz not read by go tool pprof"
        );
        return;
    };
    assert!(
        text.contains("Showing nodes accounting for 5, 100% of 5 total"),
        "{text}"
    );
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let mut flat_cum: Vec<(&str, &str, &str)> = rows.iter().map(|r| (r[5], r[0], r[3])).collect();
    flat_cum.sort();
    assert_eq!(
        flat_cum,
        [
            ("Gate.check", "1", "1"),
            ("Gate.root", "1", "5"),
            ("Gate.step", "3", "3")
        ],
        "{text}"
    );
}

/// Per stack (outermost first, `;`-joined): the `calls` of the `ferrofluid.CallingContext`
/// events of `file`, as JDK 17's `jfr print --json` reads them.
fn jfr_calls(file: &Path) -> Vec<(String, u64)> {
    let jfr = Path::new(ferrofluid_testkit::JDK17_HOME).join("bin/jfr");
    let out = common::succeeds(
        Command::new("timeout")
            .arg("120")
            .arg(&jfr)
            .args(["print", "--json", "--events", "ferrofluid.CallingContext"])
            .arg(file),
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut rows: Vec<(String, u64)> = doc["recording"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let v = &e["values"];
            let mut frames: Vec<String> = v["stackTrace"]["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    let m = &f["method"];
                    let class = m["type"]["name"].as_str().unwrap();
                    format!("{class}.{}", m["name"].as_str().unwrap())
                })
                .collect();
            frames.reverse();
            (frames.join(";"), v["calls"].as_u64().unwrap())
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn run_and_report_write_jfr_that_jfr_print_reads() {
    let dir = compile("Gate.java", "exports-jfr");
    let want = [
        ("Gate.root".to_owned(), 1),
        ("Gate.root;Gate.check".to_owned(), 1),
        ("Gate.root;Gate.step".to_owned(), 3),
    ];

    let jfr = dir.join("gate.jfr");
    gate(&jfr, &dir);
    assert_eq!(&std::fs::read(&jfr).unwrap()[..4], b"FLR\0");
    assert_eq!(jfr_calls(&jfr), want);

    // The same from a saved profile.
    let json = dir.join("gate.json");
    gate(&json, &dir);
    let converted = dir.join("converted.jfr");
    write_report(&json, &converted, &[]);
    assert_eq!(jfr_calls(&converted), want);

    // A name that says no format lists every one.
    let out = ferrofluid()
        .arg("report")
        .arg(&json)
        .arg("-o")
        .arg(dir.join("p.svg"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.ends_with(
            "; name a .txt, .html, .collapsed, .json, .pb.gz, .pprof, .speedscope.json or .jfr \
             file, or pass --format\n"
        ),
        "{stderr}"
    );
}
