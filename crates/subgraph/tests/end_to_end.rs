//! The planner driving the class-file engine on a real JVM, without the agent: each
//! round instruments the program's classes through `Planner::selection_for`, runs it
//! under `-Xverify:all` with counting hooks, and reports the methods that ran as first
//! invocations, until lazy revelation has nothing new. The counts must be exact.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::{compile_and_run, Run, APP, JDK17};
use ferrofluid_classfile::{instrument, ProbeKind, ProbeOptions};
use ferrofluid_subgraph::{ClassFilter, MethodId, PlanConfig, Planner, Scheme};

/// Compiles the counting `ferrofluid/Hooks` into its own directory (for the boot class path).
fn hooks_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/hooks/ferrofluid/Hooks.java");
    let ok = Command::new(Path::new(JDK17).join("bin/javac"))
        .arg("-d")
        .arg(dir.path())
        .arg(src)
        .status()
        .unwrap()
        .success();
    assert!(ok, "javac Hooks");
    dir
}

/// Instruments every application class with what the planner chose, runs `main`, and
/// returns entry counts by method id.
fn instrument_and_run(
    run: &Run,
    planner: &Planner,
    main: &str,
    hooks: &Path,
) -> HashMap<MethodId, u64> {
    let options = ProbeOptions::new(ProbeKind::EntryExit);
    let out = tempfile::tempdir().unwrap();
    for (loader, class) in run.loaded.iter().filter(|(l, _)| *l == APP) {
        let bytes = run.bytes(*loader, class);
        let mut selection = planner.selection_for(*loader, class).unwrap();
        let chosen = selection.chosen().len();
        let result = instrument(&bytes, &options, &mut selection).unwrap();
        assert_eq!(result.methods.len(), chosen, "{class}");
        for m in &result.methods {
            assert_eq!(m.result, Ok(()), "{class}.{}{}", m.name, m.descriptor);
            assert_eq!(
                planner.id_of(APP, class, &m.name, &m.descriptor),
                Some(m.id)
            );
        }
        let path = out.path().join(format!("{class}.class"));
        std::fs::write(path, result.bytes.unwrap_or(bytes)).unwrap();
    }
    let output = Command::new(Path::new(JDK17).join("bin/java"))
        .arg("-Xverify:all")
        .arg(format!("-Xbootclasspath/a:{}", hooks.display()))
        .arg("-cp")
        .arg(out.path())
        .arg(main)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("ferrofluid-count "))
        .map(|l| {
            let (id, n) = l.split_once(' ').unwrap();
            (id.parse().unwrap(), n.parse().unwrap())
        })
        .collect()
}

/// Rounds of instrument-run-report until lazy revelation adds nothing. Returns the
/// number of rounds and the last round's entry counts by `Class.method`.
fn converge(run: &Run, planner: &mut Planner, main: &str) -> (usize, HashMap<String, u64>) {
    let hooks = hooks_dir();
    run.load_all(planner, &[]);
    let mut rounds = 0;
    loop {
        rounds += 1;
        let counts = instrument_and_run(run, planner, main, hooks.path());
        let mut revealed = 0;
        for &id in counts.keys() {
            if !planner.is_invoked(id) {
                revealed += planner.first_invocation(id).unwrap().method_count();
            }
        }
        if revealed == 0 {
            let named = counts
                .iter()
                .map(|(&id, &n)| {
                    let m = planner.method(id).unwrap();
                    (format!("{}.{}", m.class, m.name), n)
                })
                .collect();
            return (rounds, named);
        }
    }
}

fn expect(pairs: &[(&str, u64)]) -> HashMap<String, u64> {
    pairs.iter().map(|&(k, v)| (k.to_owned(), v)).collect()
}

fn lazy(root: &str) -> Planner {
    Planner::new(PlanConfig {
        roots: vec![root.parse().unwrap()],
        scheme: Scheme::Lazy,
        filter: ClassFilter::default(),
    })
}

#[test]
fn fig4_lazy_on_a_real_jvm_converges_with_exact_counts() {
    let run = compile_and_run("fig4", "Fig4");
    let mut planner = lazy("Fig4::f");
    let (rounds, counts) = converge(&run, &mut planner, "Fig4");
    // Round 1 counts f only and reveals g and h; round 2 counts all three, reveals nothing.
    assert_eq!(rounds, 2);
    assert_eq!(
        counts,
        expect(&[("Fig4.f", 1), ("Fig4.g", 10), ("Fig4.h", 55)])
    );
    let c = planner.counters();
    assert_eq!((c.instrumented, c.invoked), (3, 3));
}

#[test]
fn interface_calls_on_a_real_jvm_converge_with_exact_counts() {
    let run = compile_and_run("shapes", "Shapes");
    let mut planner = lazy("Shapes::drive");
    let (rounds, counts) = converge(&run, &mut planner, "Shapes");
    // drive; then A.run, B.run, C.run; then B.helper; then nothing new.
    assert_eq!(rounds, 3);
    assert_eq!(
        counts,
        expect(&[
            ("Shapes.drive", 3),
            ("A.run", 1),
            ("B.run", 1),
            ("C.run", 1),
            ("B.helper", 1)
        ])
    );
    let c = planner.counters();
    assert_eq!((c.instrumented, c.invoked), (5, 5));
}
