//! `ferrofluid diff` as a CI gate: two runs of the same program give exact profiles whose diff
//! exits 0; a program changed to call a method once more exits 1 naming it; bad input exits 2
//! with one line. CPU profiles from real JVM runs (root `Gate::root`), and the count golden of
//! the report crate.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::{compile, ferrofluid, run_java, scratch, source_path, JDK17_HOME};

/// The profile `name` of `tests/java/Gate.java` (`base`), or of the same program changed to call
/// `step` four times instead of three (`new`).
fn gate_profile(version: &str, name: &str) -> PathBuf {
    let dir = if version == "base" {
        compile("Gate.java", "gate-base")
    } else {
        let dir = scratch("gate-new");
        let base = std::fs::read_to_string(source_path("Gate.java")).unwrap();
        assert_eq!(base.matches("i < 3").count(), 1);
        let source = dir.join("Gate.java");
        std::fs::write(&source, base.replace("i < 3", "i < 4")).unwrap();
        ferrofluid_testkit::javac(Path::new(JDK17_HOME), &["--release", "17"], &dir, [source]);
        dir
    };
    let out = dir.join(name);
    run_java(
        &["--root", "Gate::root", "--include", "Gate"],
        &out,
        &dir,
        "Gate",
    );
    out
}

fn diff(args: &[&str]) -> Output {
    ferrofluid().arg("diff").args(args).output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn a_call_more_fails_the_gate_and_identical_runs_pass() {
    let base = gate_profile("base", "base.json");
    let again = gate_profile("base", "again.json");
    let new = gate_profile("new", "new.json");

    // Same program twice: calls are exact, times are not checked by default.
    let same = diff(&[p(&base), p(&again)]);
    let (out, err) = text(&same);
    assert_eq!(same.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("No change beyond the thresholds."), "{out}");
    assert!(out.contains("total calls: 5 -> 5 (+0)"), "{out}");

    // One call more of step(I)V: the context root;step and the method, nothing else.
    let moved = diff(&[p(&base), p(&new)]);
    let (out, err) = text(&moved);
    assert_eq!(moved.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("Changes beyond the thresholds: 1 in contexts, 1 in methods; moved most:"),
        "{out}"
    );
    assert!(
        out.contains("  context calls: 3 -> 4 (+1)   Gate.root()V;Gate.step(I)V\n"),
        "{out}"
    );
    assert!(
        out.contains("  method calls: 3 -> 4 (+1)   Gate.step(I)V\n"),
        "{out}"
    );
    assert!(!out.contains("Gate.check()V\n"), "{out}");

    // A third more calls is within 50%.
    let lenient = diff(&[p(&base), p(&new), "--max-calls-change", "50%"]);
    assert_eq!(lenient.status.code(), Some(0), "{:?}", text(&lenient));

    // JSON and HTML outputs say the same; the verdict is printed too.
    let dir = base.parent().unwrap();
    let json = dir.join("diff.json");
    let o = diff(&[p(&base), p(&new), "-o", p(&json)]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    assert!(
        text(&o)
            .0
            .starts_with("ferrofluid diff: 2 changes beyond the thresholds; moved most:\n"),
        "{:?}",
        text(&o)
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["format"], "ferrofluid-diff");
    assert_eq!(doc["mode"], "cpu");
    let ex = doc["exceeding"].as_array().unwrap();
    assert_eq!(ex.len(), 2, "{doc}");
    assert_eq!(ex[0]["name"], "Gate.root()V;Gate.step(I)V");
    assert_eq!(
        (
            ex[0]["change"]["base"].as_u64(),
            ex[0]["change"]["new"].as_u64()
        ),
        (Some(3), Some(4))
    );
    let html = dir.join("diff.html");
    let o = diff(&[p(&base), p(&new), "-o", p(&html)]);
    assert_eq!(o.status.code(), Some(1));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg"), "{page}");
    assert!(page.contains("Gate.step"), "{page}");
}

fn golden(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../report/tests/data")
        .join(case)
        .join("input.json")
}

/// The count golden against itself and against a copy where one context executed 100 more
/// bytecodes (1200 -> 1300, 8.3%).
#[test]
fn count_profiles_compare_bytecodes_exactly_or_within_a_percentage() {
    let count = golden("count");
    let same = diff(&[p(&count), p(&count)]);
    assert_eq!(same.status.code(), Some(0), "{:?}", text(&same));

    let original = std::fs::read_to_string(&count).unwrap();
    let needle = "\"bytecodes\": 1200,";
    assert_eq!(original.matches(needle).count(), 1);
    let dir = scratch("diff-count");
    let more = dir.join("more.json");
    std::fs::write(&more, original.replace(needle, "\"bytecodes\": 1300,")).unwrap();

    let o = diff(&[p(&count), p(&more)]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(
            "  context bytecodes: 1200 -> 1300 (+100)   demo.App.main([Ljava/lang/String;)V;demo.Parser.parse(Ljava/lang/String;)Ldemo/Ast;;demo.Lexer.next()I\n"
        ),
        "{out}"
    );
    let within = diff(&[p(&count), p(&more), "--max-bytecodes-change", "10%"]);
    assert_eq!(within.status.code(), Some(0), "{:?}", text(&within));
    let over = diff(&[p(&count), p(&more), "--max-bytecodes-change", "5%"]);
    assert_eq!(over.status.code(), Some(1), "{:?}", text(&over));
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let count = golden("count");
    let fig4 = golden("fig4");
    let region = golden("region");
    let cases: [(&[&str], &str); 4] = [
        (
            &[p(&count), p(&fig4)],
            "ferrofluid: error: cannot compare a count profile with a cpu profile: diff two profiles of the same mode\n",
        ),
        (
            &[p(&region), p(&region)],
            "ferrofluid: error: code-region profiles have no calling contexts to compare; diff cpu, count or alloc profiles\n",
        ),
        (
            &[p(&count), "/nonexistent/new.json"],
            "ferrofluid: error: cannot read /nonexistent/new.json: No such file or directory (os error 2)\n",
        ),
        (
            &[p(&count), p(&count), "-o", "diff.svg"],
            "ferrofluid: error: cannot tell the diff format from diff.svg; name a .txt, .json or .html file\n",
        ),
    ];
    for (args, message) in cases {
        let o = diff(args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert_eq!(err, message, "{args:?}");
        assert_eq!(out, "", "{args:?}");
    }
    // Not a profile: one line naming the file.
    let o = diff(&[p(&count), p(&count.with_file_name("report.txt"))]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("report.txt"), "{err}");
}
