//! Building the registry for all of `java.base`: every class must be readable, and the
//! time and memory are printed (not asserted: the machine is shared).

mod common;

use std::time::Instant;

use common::java_base;
use ferrofluid_subgraph::{PlanConfig, Planner, Scheme, BOOTSTRAP};

#[test]
fn registry_of_all_java_base_and_an_eager_closure() {
    let classes = java_base();
    let mut p = Planner::new(PlanConfig {
        roots: vec!["java.util.HashMap::put".parse().unwrap()],
        scheme: Scheme::Eager,
        ..PlanConfig::default()
    });
    let start = Instant::now();
    for bytes in classes.values() {
        assert!(p.add_class(BOOTSTRAP, bytes).unwrap());
    }
    let registered = start.elapsed();
    let start = Instant::now();
    let batch = p.plan();
    let planned = start.elapsed();
    let c = p.counters();
    let r = c.registry;
    println!(
        "java.base: {} classes, {} methods, {} call sites, {} strings, {} references, ~{:.1} MiB; registered in {:.2?}",
        r.classes,
        r.methods,
        r.call_sites,
        r.strings,
        r.references,
        r.approx_bytes as f64 / (1024.0 * 1024.0),
        registered
    );
    println!(
        "eager closure of HashMap::put over java.base: {} methods in {} classes, in {:.2?}",
        batch.method_count(),
        batch.classes.len(),
        planned
    );
    assert_eq!(r.classes, classes.len());
    assert_eq!(c.instrumented, batch.method_count());
    // put -> putVal -> resize, newNode, afterNodeInsertion... and far more through CHA.
    let put_val = p
        .id_of(
            BOOTSTRAP,
            "java/util/HashMap",
            "putVal",
            "(ILjava/lang/Object;Ljava/lang/Object;ZZ)Ljava/lang/Object;",
        )
        .expect("putVal is in the closure");
    assert!(batch.ids().any(|id| id == put_val));
}
