//! Thresholds, contexts and methods compared, refusals.

use super::*;
use ferrofluid_profile::{CallTree, Metric, Mode, NodeId, NodeKind, Profile, ThreadProfile};

fn count(calls: &[(u64, u64)]) -> Profile {
    let mut p = Profile::new(Mode::Count);
    p.extra_metrics.push(Metric::new("bytecodes", "count"));
    let f = p.methods.insert("demo.A", "f", "()V");
    let g = p.methods.insert("demo.A", "g", "()V");
    let mut t = CallTree::with_width(1);
    let fi = t.add_child(NodeId::ROOT, NodeKind::Method(f));
    t.node_mut(fi).calls = 1;
    t.extra_mut(fi)[0] = 10;
    if let Some(&(c, b)) = calls.first() {
        let gi = t.add_child(fi, NodeKind::Method(g));
        t.node_mut(gi).calls = c;
        t.extra_mut(gi)[0] = b;
    }
    p.threads.push(ThreadProfile::new("main", 1, t));
    p
}

#[test]
fn thresholds_parse_and_judge() {
    assert_eq!("0".parse(), Ok(Threshold::Absolute(0)));
    assert_eq!(" 5% ".parse(), Ok(Threshold::Percent(5.0)));
    assert_eq!("none".parse(), Ok(Threshold::Unchecked));
    assert_eq!(
        "5x".parse::<Threshold>().unwrap_err().to_string(),
        "invalid threshold \"5x\": give a number of units (0: any change), a percentage like 5%, or none"
    );
    assert!("-1%".parse::<Threshold>().is_err());
    assert!(Threshold::Absolute(0).exceeded(10, 11, 0));
    assert!(!Threshold::Absolute(0).exceeded(10, 10, 0));
    assert!(!Threshold::Absolute(1).exceeded(10, 11, 0));
    assert!(Threshold::Percent(5.0).exceeded(100, 106, 0));
    assert!(!Threshold::Percent(5.0).exceeded(100, 105, 0));
    assert!(Threshold::Percent(5.0).exceeded(0, 1, 0));
    assert!(!Threshold::Absolute(0).exceeded(100, 150, 50));
    assert!(!Threshold::Unchecked.exceeded(0, 1_000, 0));
}

#[test]
fn a_call_more_is_a_change_a_new_context_too() {
    let base = count(&[(4, 100)]);
    let same = ProfileDiff::new(&base, &base.clone()).unwrap();
    assert!(same.exceeding(&Thresholds::default()).is_empty());

    let more = count(&[(5, 125)]);
    let diff = ProfileDiff::new(&base, &more).unwrap();
    let ex = diff.exceeding(&Thresholds::default());
    let got: Vec<(&str, &str, &str, i128)> = ex
        .iter()
        .map(|e| (e.kind, e.name.as_str(), e.metric.as_str(), e.change.delta()))
        .collect();
    assert_eq!(
        got,
        [
            ("context", "demo.A.f()V;demo.A.g()V", "bytecodes", 25),
            ("context", "demo.A.f()V;demo.A.g()V", "calls", 1),
            ("method", "demo.A.g()V", "bytecodes", 25),
            ("method", "demo.A.g()V", "calls", 1),
        ]
    );
    let mut lenient = Thresholds::default();
    lenient
        .by_metric
        .insert("bytecodes".into(), Threshold::Percent(25.0));
    lenient
        .by_metric
        .insert("calls".into(), Threshold::Percent(25.0));
    assert!(diff.exceeding(&lenient).is_empty());

    let none = count(&[]);
    let diff = ProfileDiff::new(&none, &base).unwrap();
    let g = &diff.contexts[1];
    assert_eq!(
        (g.presence, g.values[0], g.values[1].new),
        (
            Presence::New,
            Change {
                base: 0,
                new: 4,
                noise: 0
            },
            100
        )
    );
    let back = ProfileDiff::new(&base, &none).unwrap();
    assert_eq!(back.contexts[1].presence, Presence::Vanished);
    assert_eq!(back.methods[1].presence, Presence::Vanished);
}

#[test]
fn different_modes_are_refused() {
    let cpu = Profile::new(Mode::Cpu);
    assert_eq!(
        ProfileDiff::new(&cpu, &count(&[])).unwrap_err().to_string(),
        "cannot compare a cpu profile with a count profile: diff two profiles of the same mode"
    );
}
