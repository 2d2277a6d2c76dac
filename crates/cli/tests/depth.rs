//! A real JVM recursing 20,000 frames deep under a profiled root: the JVM exits normally,
//! the profile's tree stops at the depth bound with one overflow node, and
//! `ferrofluid report` renders it as text and HTML.

use ferrofluid_profile::{NodeKind, Profile, MAX_DEPTH};

mod common;
use common::{compile, report, run_java};

const DEPTH: u64 = 20_000;

#[test]
fn deep_recursion_is_bounded_and_reported() {
    let dir = compile("Deep.java", "depth");
    let out = dir.join("deep.json");
    let output = run_java(&["--root", "Deep::run"], &out, &dir, "Deep");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("depth {}\n", DEPTH + 1)
    );

    let profile = Profile::from_json_slice(&std::fs::read(&out).unwrap()).unwrap();
    let thread = profile.threads.iter().find(|t| t.name == "deep").unwrap();
    let tree = &thread.tree;
    let walk = tree.walk();
    assert_eq!(walk.iter().map(|&(_, d)| d).max(), Some(MAX_DEPTH + 1));
    // run, then down(20000)..down(0): the first MAX_DEPTH in method nodes, the rest in
    // the overflow node (with the JDK methods println calls from there).
    let deep_calls = |f: &dyn Fn(NodeKind) -> bool| -> u64 {
        walk.iter()
            .map(|&(id, _)| tree.node(id))
            .filter(|n| f(n.kind))
            .map(|n| n.calls)
            .sum()
    };
    let beyond = DEPTH + 2 - MAX_DEPTH as u64;
    assert_eq!(deep_calls(&|k| k == NodeKind::Overflow), beyond);
    let is_deep = |k: NodeKind| match k {
        NodeKind::Method(m) => profile.methods.get(m).is_some_and(|i| i.class == "Deep"),
        _ => false,
    };
    assert_eq!(deep_calls(&is_deep), MAX_DEPTH as u64);
    assert_eq!(thread.overflow_calls, beyond);

    for (name, marker) in [
        ("deep.txt", "[overflow: contexts"),
        ("deep.html", "[overflow: contexts"),
    ] {
        let text = report(&out, &dir.join(name), &[]);
        assert!(
            text.contains(&format!(
                "{beyond} calls beyond the node budget or depth bound"
            )),
            "{name} lacks the overflow note"
        );
        assert!(text.contains(marker), "{name} lacks the overflow node");
    }
}
