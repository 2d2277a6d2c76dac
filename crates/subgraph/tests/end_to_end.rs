//! The planner driving the class-file engine on a real JVM, without the agent: each
//! round instruments the program's classes through `Planner::selection_for`, runs it
//! under `-Xverify:all` with counting hooks, and reports the methods that ran as first
//! invocations, until lazy revelation has nothing new. The counts must be exact.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::{compile_and_run, Run, APP};
use ferrofluid_classfile::{instrument, ProbeKind, ProbeOptions};
use ferrofluid_subgraph::{ClassFilter, MethodId, PlanConfig, Planner, Scheme, BOOTSTRAP};
use ferrofluid_testkit::JDK17_HOME;

/// Compiles the counting `ferrofluid/Hooks` into its own directory (for the boot class path).
fn hooks_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/hooks/ferrofluid/Hooks.java");
    ferrofluid_testkit::javac(Path::new(JDK17_HOME), &[], dir.path(), [src]);
    dir
}

/// What one run reported: entry counts by method id, the receiver classes (internal names)
/// seen at each receiver site, and the deferred sites reached.
struct Reported {
    counts: HashMap<MethodId, u64>,
    receivers: Vec<(u32, String)>,
    sites: Vec<u32>,
}

/// Instruments every application class with what the planner chose, runs `main`, and
/// returns what the hooks reported.
fn instrument_and_run(run: &Run, planner: &mut Planner, main: &str, hooks: &Path) -> Reported {
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
    let output = Command::new(Path::new(JDK17_HOME).join("bin/java"))
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
    let stdout = String::from_utf8(output.stdout).unwrap();
    let pairs = |prefix: &'static str| {
        stdout
            .lines()
            .filter_map(move |l| l.strip_prefix(prefix))
            .map(|l| l.split_once(' ').unwrap())
    };
    Reported {
        counts: pairs("ferrofluid-count ")
            .map(|(id, n)| (id.parse().unwrap(), n.parse().unwrap()))
            .collect(),
        receivers: pairs("ferrofluid-receiver ")
            .map(|(site, class)| (site.parse().unwrap(), class.replace('.', "/")))
            .collect(),
        sites: pairs("ferrofluid-site ")
            .map(|(site, _)| site.parse().unwrap())
            .collect(),
    }
}

/// Rounds of instrument-run-report until lazy revelation adds nothing. Returns the
/// number of rounds and the last round's entry counts by `Class.method`.
fn converge(run: &Run, planner: &mut Planner, main: &str) -> (usize, HashMap<String, u64>) {
    let hooks = hooks_dir();
    run.load_all(planner, &[]);
    let mut rounds = 0;
    loop {
        rounds += 1;
        let Reported {
            counts,
            receivers,
            sites,
        } = instrument_and_run(run, planner, main, hooks.path());
        let mut revealed = 0;
        for site in sites {
            revealed += planner.site_reached(site).unwrap().method_count();
        }
        for (site, class) in receivers {
            // The receiver's defining loader: the application's, else the JDK's.
            let loader = if run.loaded.iter().any(|(l, c)| *l == APP && *c == class) {
                APP
            } else {
                BOOTSTRAP
            };
            revealed += planner
                .receiver_seen(site, loader, &class)
                .unwrap()
                .method_count();
        }
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
        skip_trivial: false,
        adaptive: false,
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

/// A call of `Object.toString` becomes a receiver site: only the classes whose instances
/// reach it get their `toString` instrumented (P, Q and String), not R, which is loaded and
/// overrides it but never reaches the call; with receiver sites off, CHA chooses R's too.
#[test]
fn receiver_sites_choose_only_the_receivers_that_reach_a_call() {
    let run = compile_and_run("receivers", "Receivers");
    let mut planner = lazy("Receivers::main");
    let (rounds, counts) = converge(&run, &mut planner, "Receivers");
    // main; describe; P.toString and Q.toString (from receivers); Q.helper; nothing new.
    assert_eq!(rounds, 4);
    let app: HashMap<String, u64> = counts
        .into_iter()
        .filter(|(k, _)| !k.starts_with("java/"))
        .collect();
    assert_eq!(
        app,
        expect(&[
            ("Receivers.main", 1),
            ("Receivers.describe", 12),
            ("P.<init>", 1),
            ("Q.<init>", 1),
            ("P.toString", 4),
            ("Q.toString", 4),
            ("Q.helper", 4)
        ])
    );
    let to_string =
        |class: &str, loader| planner.id_of(loader, class, "toString", "()Ljava/lang/String;");
    assert!(
        to_string("R", APP).is_none(),
        "R.toString must not be chosen"
    );
    assert!(to_string("java/lang/String", BOOTSTRAP).is_some());
    assert!(to_string("java/lang/Integer", BOOTSTRAP).is_none());
    // One receiver site; the others are deferred sites (calls after a branch).
    let c = planner.counters();
    assert_eq!(c.receiver_sites - c.deferred_sites, 1);

    let mut cha = lazy("Receivers::main");
    cha.set_receiver_sites(false);
    let (_, counts) = converge(&run, &mut cha, "Receivers");
    assert_eq!(counts.get("P.toString"), Some(&4));
    assert!(cha
        .id_of(APP, "R", "toString", "()Ljava/lang/String;")
        .is_some());
    assert!(cha.counters().instrumented > planner.counters().instrumented + 50);
}
