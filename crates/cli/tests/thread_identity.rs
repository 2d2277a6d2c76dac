//! One thread identity, its Java id (`Thread.getId()`) and name, in every mode that reports
//! threads (`cpu`, `count`, `alloc`) and every format: three threads, two of them with the same
//! name, each kept apart under its own id in the JSON document, the text and HTML reports and
//! the JFR recording, and named in the folded stacks, speedscope and pprof (whose samples
//! carry the id too, as the label `thread_id`). (`region` merges every thread's histograms: it
//! reports no thread.)

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::{compile, run_java, succeeds, write_report};
use ferrofluid_testkit::{read_profile_json, JDK17_HOME};

/// The workers `Named` printed: (name, Java id).
fn workers(stdout: &str) -> Vec<(String, u64)> {
    let workers: Vec<(String, u64)> = stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("thread ")?.split(' ');
            Some((w.next()?.to_owned(), w.next()?.parse().ok()?))
        })
        .collect();
    assert_eq!(workers.len(), 3, "{stdout}");
    workers
}

/// `ferrofluid report PROFILE -o DIR/NAME`, read back as text (lossy: pprof and JFR are binary).
fn report(profile: &Path, dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    write_report(profile, &path, &[]);
    path
}

/// (name, Java id) of the threads of the events of a JFR file, as JDK 17's `jfr` reads them.
fn jfr_threads(file: &Path) -> Vec<(String, u64)> {
    let out = succeeds(
        Command::new("timeout")
            .arg("120")
            .arg(Path::new(JDK17_HOME).join("bin/jfr"))
            .args(["print", "--json"])
            .arg(file),
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut threads: Vec<(String, u64)> = doc["recording"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            let t = &e["values"]["eventThread"];
            Some((
                t["javaName"].as_str()?.to_owned(),
                t["javaThreadId"].as_u64()?,
            ))
        })
        .collect();
    threads.sort();
    threads.dedup();
    threads
}

/// pprof's `thread` and `thread_id` tags of a `.pb.gz`, as `go tool pprof -tags` prints them;
/// `None` without Go.
fn pprof_tags(file: &Path, dir: &Path) -> Option<String> {
    if !Path::new("/usr/bin/go").is_file() {
        eprintln!(
            "SKIPPED: /usr/bin/go not found (.ci/run installs golang-go): pprof tags not read"
        );
        return None;
    }
    let out = Command::new("/usr/bin/go")
        .args(["tool", "pprof", "-tags"])
        .arg(file)
        .env("HOME", dir)
        .env("GOCACHE", dir.join("gocache"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn check_mode(mode: &str, flags: &[&str]) {
    let dir = compile("Named.java", &format!("thread-identity-{mode}"));
    let out = dir.join("out.json");
    let output = run_java(flags, &out, &dir, "Named");
    let workers = workers(&String::from_utf8_lossy(&output.stdout));
    let ids: Vec<u64> = workers.iter().map(|w| w.1).collect();
    let mut distinct = ids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "{workers:?}");

    // JSON: one entry per worker, under its Java id and name.
    let doc = read_profile_json(&out);
    let mut found: Vec<(String, u64)> = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["id"].as_u64().unwrap(),
            )
        })
        .filter(|(name, _)| name == "alpha" || name == "beta")
        .collect();
    found.sort();
    let mut want = workers.clone();
    want.sort();
    assert_eq!(found, want, "{mode}: {}", doc["threads"]);

    // Text and HTML: each worker's tree headed by its name and id.
    let text = std::fs::read_to_string(report(&out, &dir, "out.txt")).unwrap();
    let html = std::fs::read_to_string(report(&out, &dir, "out.html")).unwrap();
    for (name, id) in &workers {
        assert!(
            text.contains(&format!("thread {name:?} (id {id})")),
            "{mode}: {text}"
        );
        assert!(
            html.contains(&format!("<b>Thread {name}</b> (id {id})")),
            "{mode}: no {name} {id} in the HTML"
        );
    }

    // JFR: the events' threads.
    let jfr = jfr_threads(&report(&out, &dir, "out.jfr"));
    for w in &workers {
        assert!(jfr.contains(w), "{mode}: {w:?} not in {jfr:?}");
    }

    // Folded stacks and speedscope: named.
    let folded = std::fs::read_to_string(report(&out, &dir, "out.collapsed")).unwrap();
    for name in ["alpha", "beta"] {
        assert!(
            folded.lines().any(|l| l.starts_with(&format!("{name};"))),
            "{mode}: {folded}"
        );
    }
    let speedscope: Value =
        serde_json::from_slice(&std::fs::read(report(&out, &dir, "out.speedscope.json")).unwrap())
            .unwrap();
    let text_of_speedscope = speedscope.to_string();
    for name in ["alpha", "beta"] {
        assert!(
            text_of_speedscope.contains(&format!("\"{name}\"")),
            "{mode}: {speedscope}"
        );
    }

    // pprof: the name and the id of each worker's samples.
    if let Some(tags) = pprof_tags(&report(&out, &dir, "out.pb.gz"), &dir) {
        for (name, id) in &workers {
            assert!(tags.contains(name.as_str()), "{mode}: {tags}");
            let tagged = format!("): {id}");
            assert!(
                tags.lines().any(|l| l.trim_end().ends_with(&tagged)),
                "{mode}: {tags}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cpu_mode_names_threads_by_java_id_and_name() {
    check_mode("cpu", &["--root", "Named::work", "--include", "Named"]);
}

#[test]
fn count_mode_names_threads_by_java_id_and_name() {
    check_mode(
        "count",
        &[
            "--mode",
            "count",
            "--root",
            "Named::work",
            "--include",
            "Named",
        ],
    );
}

#[test]
fn alloc_mode_names_threads_by_java_id_and_name() {
    check_mode(
        "alloc",
        &[
            "--mode",
            "alloc",
            "--include",
            "Named",
            "--track-every",
            "1",
        ],
    );
}
