//! The planner on real programs: compiled with javac, run on JDK 17 to learn the classes
//! the JVM loads and the methods it invokes, then replayed against the planner.

mod common;

use common::{compile_and_run, first, names, APP};
use ferrofluid_subgraph::{ClassFilter, Counters, PlanConfig, Planner, Scheme};

fn config(root: &str, scheme: Scheme, filter: ClassFilter) -> PlanConfig {
    PlanConfig {
        roots: vec![root.parse().unwrap()],
        scheme,
        filter,
        skip_trivial: false,
        adaptive: false,
    }
}

fn no_jdk() -> ClassFilter {
    ClassFilter {
        include: vec![],
        exclude: ["java.**", "jdk.**", "sun.**"]
            .iter()
            .map(|p| p.parse().unwrap())
            .collect(),
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn counts(c: Counters) -> (usize, usize) {
    (c.instrumented, c.invoked)
}

#[test]
fn fig4_lazy_reveals_h_and_g_at_the_first_call_of_f() {
    let run = compile_and_run("fig4", "Fig4");
    // JDK classes included: f's subgraph has none, so the counts stay exact.
    let mut p = Planner::new(config("Fig4::f", Scheme::Lazy, ClassFilter::default()));
    let b = run.load_all(&mut p, &[]);
    assert_eq!(names(&p, &b), ["Fig4.f"]);
    let id = |p: &Planner, name, d| p.id_of(APP, "Fig4", name, d).unwrap();
    let b = p.first_invocation(id(&p, "f", "()V")).unwrap();
    assert_eq!(sorted(names(&p, &b)), ["Fig4.g", "Fig4.h"]);
    assert_eq!(b.classes.len(), 1);
    assert!(p.first_invocation(id(&p, "h", "()V")).unwrap().is_empty());
    assert!(p.first_invocation(id(&p, "g", "(I)V")).unwrap().is_empty());
    assert_eq!(counts(p.counters()), (3, 3));
}

#[test]
fn fig4_skipping_trivial_methods_leaves_out_h_but_not_a_trivial_root() {
    let run = compile_and_run("fig4", "Fig4");
    let skip = |root| PlanConfig {
        skip_trivial: true,
        adaptive: false,
        ..config(root, Scheme::Lazy, ClassFilter::default())
    };
    let mut p = Planner::new(skip("Fig4::f"));
    run.load_all(&mut p, &[]);
    let id = |p: &Planner, name, d| p.id_of(APP, "Fig4", name, d).unwrap();
    let b = p.first_invocation(id(&p, "f", "()V")).unwrap();
    // `h` is empty: its calls are left to `f` and `g`, which have loops.
    assert_eq!(names(&p, &b), ["Fig4.g"]);
    assert!(p.first_invocation(id(&p, "g", "(I)V")).unwrap().is_empty());
    let c = p.counters();
    assert_eq!((c.instrumented, c.invoked, c.trivial_skipped), (2, 2, 1));
    // A root is what the user asked for: instrumented however trivial.
    let mut p = Planner::new(skip("Fig4::h"));
    let b = run.load_all(&mut p, &[]);
    assert_eq!(names(&p, &b), ["Fig4.h"]);
    assert_eq!(p.counters().trivial_skipped, 0);
    // Total: every method but the trivial ones (`h`; `<init>` calls `Object.<init>`).
    let only_fig4 = ClassFilter {
        include: vec!["Fig4".parse().unwrap()],
        exclude: vec![],
    };
    let mut p = Planner::new(PlanConfig {
        roots: vec![],
        skip_trivial: true,
        adaptive: false,
        ..config("Fig4::f", Scheme::Total, only_fig4)
    });
    let b = run.load_all(&mut p, &[]);
    assert_eq!(
        sorted(names(&p, &b)),
        ["Fig4.<init>", "Fig4.f", "Fig4.g", "Fig4.main"]
    );
    assert_eq!(p.counters().trivial_skipped, 1);
}

#[test]
fn fig4_exact_counts_per_scheme() {
    let run = compile_and_run("fig4", "Fig4");
    let only_fig4 = ClassFilter {
        include: vec!["Fig4".parse().unwrap()],
        exclude: vec![],
    };
    for (scheme, filter, at_load, expected) in [
        (Scheme::Lazy, ClassFilter::default(), 1, (3, 3)),
        (Scheme::Eager, ClassFilter::default(), 3, (3, 3)),
        // <init>, main, f, g, h: all run.
        (Scheme::Total, only_fig4, 5, (5, 5)),
    ] {
        let mut p = Planner::new(config("Fig4::f", scheme, filter));
        assert_eq!(
            run.load_all(&mut p, &[]).method_count(),
            at_load,
            "{scheme}"
        );
        run.replay(&mut p);
        assert_eq!(counts(p.counters()), expected, "{scheme}");
    }
}

#[test]
fn interface_implementation_loaded_later_is_added() {
    let run = compile_and_run("shapes", "Shapes");
    let order: Vec<&str> = run.loaded.iter().map(|(_, c)| c.as_str()).collect();
    let pos = |c| order.iter().position(|&x| x == c).unwrap();
    assert!(pos("C") > pos("B"), "C is loaded last, by Class.forName");

    let mut p = Planner::new(config(
        "Shapes::drive",
        Scheme::Lazy,
        ClassFilter::default(),
    ));
    let b = run.load_all(&mut p, &["C"]);
    assert_eq!(names(&p, &b), ["Shapes.drive"]);
    let drive = p.id_of(APP, "Shapes", "drive", "(LTask;)V").unwrap();
    let b = p.first_invocation(drive).unwrap();
    assert_eq!(names(&p, &b), ["A.run", "B.run"]);
    let b = p.class_loaded(APP, &run.bytes(APP, "C")).unwrap();
    assert_eq!(names(&p, &b), ["C.run"]);
    let b_run = p.id_of(APP, "B", "run", "()V").unwrap();
    assert_eq!(first(&mut p, b_run), ["B.helper"]);
    // C's constructor ran through reflection: invisible to the analysis, revealed by the agent.
    let b = p.reveal(APP, "C", "<init>", "()V").unwrap();
    assert_eq!(names(&p, &b), ["C.<init>"]);
    // Its first invocation reveals nothing: java.lang.Object is never instrumented.
    let init = p.id_of(APP, "C", "<init>", "()V").unwrap();
    assert!(first(&mut p, init).is_empty());
    run.replay(&mut p);
    assert_eq!(counts(p.counters()), (6, 6));
}

#[test]
fn shapes_exact_counts_per_scheme() {
    let run = compile_and_run("shapes", "Shapes");
    for (scheme, before_c, after_c, expected) in [
        // drive; then A.run, B.run at drive's first call; C.run when C loads; B.helper.
        (Scheme::Lazy, 1, 1, (5, 5)),
        (Scheme::Eager, 4, 1, (5, 5)),
        // Every method with code of Shapes, A, B (C comes later); Shapes.<init> never runs.
        (Scheme::Total, 8, 2, (10, 9)),
    ] {
        let mut p = Planner::new(config("Shapes::drive", scheme, no_jdk()));
        assert_eq!(
            run.load_all(&mut p, &["C"]).method_count(),
            before_c,
            "{scheme}"
        );
        run.replay(&mut p);
        let b = p.class_loaded(APP, &run.bytes(APP, "C")).unwrap();
        assert_eq!(b.method_count(), after_c, "{scheme}");
        run.replay(&mut p);
        assert_eq!(counts(p.counters()), expected, "{scheme}");
    }
}

#[test]
fn lambda_body_and_method_reference_are_revealed() {
    let run = compile_and_run("lambdas", "Lambdas");
    let mut p = Planner::new(config("Lambdas::run", Scheme::Lazy, no_jdk()));
    let b = run.load_all(&mut p, &[]);
    assert_eq!(names(&p, &b), ["Lambdas.run"]);
    let root = p.id_of(APP, "Lambdas", "run", "()V").unwrap();
    let b = p.first_invocation(root).unwrap();
    // `work`, the lambda body's one certain callee, comes with it (look-ahead), so the body's
    // own first invocation reveals nothing.
    assert_eq!(
        sorted(names(&p, &b)),
        ["Lambdas.helper", "Lambdas.lambda$run$0", "Lambdas.work"]
    );
    let lambda = p
        .id_of(APP, "Lambdas", "lambda$run$0", "(Ljava/lang/Integer;)V")
        .unwrap();
    assert!(first(&mut p, lambda).is_empty());
    run.replay(&mut p);
    assert_eq!(counts(p.counters()), (4, 4));

    for (scheme, expected) in [(Scheme::Eager, (4, 4)), (Scheme::Total, (6, 5))] {
        let mut p = Planner::new(config("Lambdas::run", scheme, no_jdk()));
        run.load_all(&mut p, &[]);
        run.replay(&mut p);
        assert_eq!(counts(p.counters()), expected, "{scheme}");
    }
}

#[test]
fn jdk_methods_reachable_from_a_root_are_profiled_and_string_concat_is_ignored() {
    let run = compile_and_run("lambdas", "Lambdas");
    let mut p = Planner::new(config(
        "Lambdas::main",
        Scheme::Lazy,
        ClassFilter::default(),
    ));
    run.load_all(&mut p, &[]);
    let main = p
        .id_of(APP, "Lambdas", "main", "([Ljava/lang/String;)V")
        .unwrap();
    let revealed = first(&mut p, main);
    assert!(revealed.contains(&"Lambdas.run".to_owned()));
    assert!(revealed.contains(&"java/io/PrintStream.println".to_owned()));
    assert!(
        !revealed.iter().any(|m| m.contains("StringConcatFactory")),
        "the concat invokedynamic is not a call: {revealed:?}"
    );
    // `run` is on `main`'s entry line: its one-target callees come with `main`'s (look-ahead).
    for m in ["java/util/List.of", "Lambdas.lambda$run$0", "Lambdas.work"] {
        assert!(revealed.contains(&m.to_owned()), "{m} in {revealed:?}");
    }
    // `List.forEach` has several implementations: it waits for `run`'s first invocation.
    assert!(!revealed.iter().any(|m| m.ends_with(".forEach")));
    let run_id = p.id_of(APP, "Lambdas", "run", "()V").unwrap();
    let revealed = first(&mut p, run_id);
    assert!(
        revealed.contains(&"java/util/ArrayList.forEach".to_owned()),
        "{revealed:?}"
    );
}

/// JFluid tables 1-2 on the lambda program with the JDK included: how many methods each
/// scheme instruments against how many run. Printed, not asserted beyond sanity.
#[test]
fn precision_per_scheme_is_reported() {
    let run = compile_and_run("lambdas", "Lambdas");
    let mut lazy_instrumented = 0;
    for scheme in [Scheme::Lazy, Scheme::Eager] {
        let mut p = Planner::new(config("Lambdas::main", scheme, ClassFilter::default()));
        run.load_all(&mut p, &[]);
        run.replay(&mut p);
        let (instrumented, invoked) = counts(p.counters());
        println!(
            "{scheme}: {instrumented} instrumented, {invoked} called, ratio {:.2}",
            instrumented as f64 / invoked as f64
        );
        assert!(invoked <= instrumented && invoked > 10, "{scheme}");
        if scheme == Scheme::Lazy {
            lazy_instrumented = instrumented;
        } else {
            assert!(
                instrumented > lazy_instrumented,
                "eager instruments more than lazy"
            );
        }
    }
}
