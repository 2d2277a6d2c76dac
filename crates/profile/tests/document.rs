//! The JSON document: round trips, defaults for third-party documents, errors.

use ferrofluid_profile::{
    Calibration, DocumentError, MethodId, NodeKind, Profile, Stamp, ThreadProfile, ThreadRecorder,
};

fn small_profile() -> Profile {
    let mut p = Profile::default();
    let f = p.methods.insert("com.acme.Foo", "f", "()V");
    let g = p.methods.insert("com.acme.Foo", "g", "(I)V");
    let mut rec = ThreadRecorder::new(1);
    // f's entry probe and g's exit probe measured themselves: 4 + 3 ns of f's self time.
    rec.enter(f, Stamp::with_cpu(0, 0).by_probe(4));
    rec.enter(g, Stamp::with_cpu(10, 5)); // over budget: overflow
    rec.exit(g, Stamp::with_cpu(30, 15).by_probe(3)).unwrap();
    rec.exit(f, Stamp::with_cpu(50, 20)).unwrap();
    let mut t = ThreadProfile::new("main", 1, rec.finish(Stamp::wall(50)));
    t.overflow_calls = 1;
    t.cpu_ns = Some(20);
    p.threads.push(t);
    p.instrumented = 4;
    p.calibration = Some(Calibration {
        inner_ns: 2.0,
        outer_ns: 1.0,
    });
    p
}

#[test]
fn document_has_the_issue_shape_and_round_trips() {
    let p = small_profile();
    let mut bytes = Vec::new();
    p.write_json(&mut bytes).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["format"], "ferrofluid");
    assert_eq!(v["version"], 1);
    assert_eq!(v["mode"], "cpu");
    assert_eq!(
        v["methods"],
        serde_json::json!({"instrumented": 4, "called": 1})
    );
    let thread = &v["threads"][0];
    assert_eq!(thread["name"], "main");
    assert_eq!(thread["overflow_calls"], 1);
    let root = &thread["root"];
    assert_eq!(root["kind"], "thread");
    let f = &root["children"][0];
    assert_eq!(f.get("kind"), None);
    assert_eq!(
        (&f["class"], &f["method"], &f["descriptor"]),
        (&"com.acme.Foo".into(), &"f".into(), &"()V".into())
    );
    // f: measured 50, self 30 - 7 (measured probes) - 2 (inner) - 1 (outer) = 20;
    // overflow: 20 - 2 = 18.
    assert_eq!(
        (&f["calls"], &f["total_ns"], &f["self_ns"]),
        (&1.into(), &38.into(), &20.into())
    );
    assert_eq!(
        (
            &f["measured_total_ns"],
            &f["measured_self_ns"],
            &f["probe_ns"]
        ),
        (&50.into(), &30.into(), &7.into())
    );
    let ov = &f["children"][0];
    assert_eq!(
        (&ov["kind"], &ov["method"], &ov["self_ns"]),
        (&"overflow".into(), &"<overflow>".into(), &18.into())
    );
    // Reading back gives the same document; the method table keeps only called methods
    // (g never got a node of its own), so compare documents rather than tables.
    let back = Profile::from_json_slice(&bytes).unwrap();
    assert_eq!(back.to_document(), p.to_document());
    assert_eq!(back.threads, p.threads);
}

#[test]
fn minimal_document_with_a_method_root_is_read_with_defaults() {
    let json = br#"{"format":"ferrofluid","version":1,"mode":"cpu",
        "methods":{"instrumented":2,"called":2},
        "threads":[{"name":"t","root":{"class":"A","method":"f","descriptor":"()V",
            "calls":1,"total_ns":100,"self_ns":60,
            "children":[{"class":"A","method":"g","descriptor":"()V","calls":4,
                "total_ns":40,"self_ns":40}]}}]}"#;
    let p = Profile::from_json_slice(json).unwrap();
    let t = &p.threads[0].tree;
    let f = t.find(&[NodeKind::Method(MethodId(0))]).unwrap();
    assert_eq!(t.node(t.root()).total_ns, 100);
    assert_eq!(
        (t.node(f).calls, t.node(f).total_ns, t.node(f).outer_calls),
        (1, 100, 4)
    );
    assert_eq!(t.self_ns(f), 60);
    assert_eq!(p.methods.get(MethodId(1)).unwrap().to_string(), "A.g()V");
}

#[test]
fn foreign_documents_are_rejected_with_a_reason() {
    let err = |json: &str| {
        Profile::from_json_slice(json.as_bytes())
            .unwrap_err()
            .to_string()
    };
    let doc = |format: &str, version: u32, mode: &str| {
        format!(
            r#"{{"format":"{format}","version":{version},"mode":"{mode}","methods":{{"instrumented":0,"called":0}},"threads":[]}}"#
        )
    };
    assert_eq!(
        err(&doc("pprof", 1, "cpu")),
        "not a ferrofluid profile: format is \"pprof\", expected \"ferrofluid\""
    );
    assert_eq!(
        err(&doc("ferrofluid", 2, "cpu")),
        "ferrofluid profile version 2 is not supported (this build reads version 1)"
    );
    assert_eq!(
        err(&doc("ferrofluid", 1, "heap")),
        "profile mode \"heap\" is not supported (expected one of cpu, region, alloc, count, \
         native, sample)"
    );
    assert!(err("[1]").starts_with("not a ferrofluid profile: invalid type"));
    let nested = r#"{"format":"ferrofluid","version":1,"mode":"cpu","methods":{"instrumented":0,"called":0},
        "threads":[{"name":"x","root":{"kind":"thread","class":"","method":"<thread>","descriptor":"",
        "calls":0,"total_ns":0,"self_ns":0,"children":[{"kind":"thread","class":"","method":"<thread>",
        "descriptor":"","calls":0,"total_ns":0,"self_ns":0}]}}]}"#;
    assert!(matches!(
        Profile::from_json_slice(nested.as_bytes()),
        Err(DocumentError::NestedThreadNode { .. })
    ));
}

#[test]
fn failed_classes_are_written_only_when_some_failed_and_read_back() {
    use ferrofluid_profile::{ClassPhase, FailedClass};
    let mut p = small_profile();
    let mut bytes = Vec::new();
    p.write_json(&mut bytes).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v.get("failed_classes"), None);
    p.failed_classes = vec![
        FailedClass::new(
            "org/acme/Bad",
            ClassPhase::Instrument,
            "JVMTI RetransformClasses failed: JVMTI_ERROR_INVALID_CLASS (21)",
            false,
        ),
        FailedClass::new(
            "org.acme.Unlinked",
            ClassPhase::Restore,
            "never linked",
            true,
        ),
    ];
    let mut bytes = Vec::new();
    p.write_json(&mut bytes).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        v["failed_classes"],
        serde_json::json!([
            {"class": "org.acme.Bad", "phase": "instrument",
             "error": "JVMTI RetransformClasses failed: JVMTI_ERROR_INVALID_CLASS (21)"},
            {"class": "org.acme.Unlinked", "phase": "restore", "error": "never linked",
             "skipped": true},
        ])
    );
    assert_eq!(
        Profile::from_json_slice(&bytes).unwrap().failed_classes,
        p.failed_classes
    );
}

#[test]
fn merged_failures_name_each_class_once_per_phase() {
    use ferrofluid_profile::{merge_failed, ClassPhase, FailedClass};
    let a = FailedClass::new("A", ClassPhase::Instrument, "x", false);
    let a_again = FailedClass::new("A", ClassPhase::Instrument, "y", false);
    let a_restore = FailedClass::new("A", ClassPhase::Restore, "z", false);
    let mut list = vec![a.clone()];
    merge_failed(&mut list, [a_again, a_restore.clone()]);
    assert_eq!(list, [a, a_restore]);
}

/// A `count` document: its extra metric is read into the trees' side table and written back;
/// without `metrics` a reader assumes the mode's; a node's unknown keys are ignored.
#[test]
fn documents_of_other_modes_carry_their_metrics() {
    let json = r#"{"format":"ferrofluid","version":1,"mode":"count",
        "methods":{"instrumented":1,"called":1},
        "threads":[{"name":"main","root":{"class":"demo.A","method":"f","descriptor":"()V",
            "calls":2,"bytecodes":70,"later":"ignored","children":[
            {"class":"demo.A","method":"g","descriptor":"()V","calls":5,"bytecodes":30,
             "future":{"nested":[1,2]}}]}}]}"#;
    let p = Profile::from_json_slice(json.as_bytes()).unwrap();
    assert_eq!(p.mode, ferrofluid_profile::Mode::Count);
    let names: Vec<String> = p.metrics().iter().map(|m| m.to_string()).collect();
    assert_eq!(names, ["calls/count", "bytecodes/count"]);
    let t = &p.threads[0].tree;
    let f = t.find(&[NodeKind::Method(MethodId(0))]).unwrap();
    let g = t
        .find(&[NodeKind::Method(MethodId(0)), NodeKind::Method(MethodId(1))])
        .unwrap();
    assert_eq!(
        (t.node(f).calls, t.extra(f), t.extra(g)),
        (2, &[70][..], &[30][..])
    );
    assert_eq!(t.node(f).outer_calls, 0);
    let mut out = Vec::new();
    p.write_json(&mut out).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["metrics"][1]["name"], "bytecodes");
    let f_doc = &v["threads"][0]["root"]["children"][0];
    assert_eq!(
        (&f_doc["calls"], &f_doc["bytecodes"]),
        (&2.into(), &70.into())
    );
    assert!(f_doc.get("total_ns").is_none() && f_doc.get("outer_calls").is_none());
    assert_eq!(Profile::from_json_slice(&out).unwrap(), p);
}
