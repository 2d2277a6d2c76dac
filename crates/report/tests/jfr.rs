//! The JFR export read by the JDK's own reader: `jfr print --json` and `jfr summary` of JDK 17
//! (and JDK 25 when installed) read the recordings of the golden profiles, and the events'
//! stacks and values are the profiles' exactly.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ferrofluid_profile::{CallTree, Mode, NodeId, NodeKind, Profile, ThreadProfile};
use ferrofluid_report::jfr::JfrReport;
use ferrofluid_report::Report;
use ferrofluid_testkit::{JDK17_HOME, JDK25_HOME};
use serde_json::Value;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn golden(case: &str) -> Profile {
    Profile::from_json_slice(&std::fs::read(data_dir().join(case).join("input.json")).unwrap())
        .unwrap()
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrofluid-jfr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes the recording of `profile` and returns its path: a file of its own, since tests
/// running at once write recordings of the same case.
fn write(profile: &Profile, report: &JfrReport, name: &str) -> PathBuf {
    static WRITTEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let mut bytes = Vec::new();
    report.write(profile, &mut bytes).unwrap();
    let n = WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = temp_dir().join(format!("{name}-{n}.jfr"));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The `jfr` tools to check with: JDK 17's (always: the tests' JDK), JDK 25's when installed
/// (`$FERROFLUID_JDK25` or the default place).
fn jfr_tools() -> Vec<PathBuf> {
    let jdk17 = Path::new(JDK17_HOME).join("bin/jfr");
    assert!(jdk17.is_file(), "{} missing", jdk17.display());
    let mut tools = vec![jdk17];
    let jdk25 = std::env::var_os("FERROFLUID_JDK25")
        .map(PathBuf::from)
        .unwrap_or_else(|| JDK25_HOME.into())
        .join("bin/jfr");
    if jdk25.is_file() {
        tools.push(jdk25);
    } else {
        eprintln!("SKIPPED on JDK 25: no {}", jdk25.display());
    }
    tools
}

fn run(jfr: &Path, args: &[&str], file: &Path) -> String {
    let out = Command::new("timeout")
        .arg("120")
        .arg(jfr)
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}{text}",
        jfr.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The events of type `event` as `jfr print --json` gives them.
fn events(jfr: &Path, file: &Path, event: &str) -> Vec<Value> {
    let text = run(jfr, &["print", "--json", "--events", event], file);
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["recording"]["events"].as_array().unwrap().clone()
}

/// `Class.method(descriptor)` of each frame, outermost first, joined by `;`.
fn stack(trace: &Value) -> String {
    if trace.is_null() {
        return String::new();
    }
    let mut frames: Vec<String> = trace["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let m = &f["method"];
            format!(
                "{}.{}{}",
                m["type"]["name"].as_str().unwrap().replace('/', "."),
                m["name"].as_str().unwrap(),
                m["descriptor"].as_str().unwrap()
            )
        })
        .collect();
    frames.reverse();
    frames.join(";")
}

/// Nanoseconds of an ISO-8601 duration as `jfr print --json` writes timespans (`PT0.00002725S`,
/// `PT1M2.5S`), or the number itself.
fn nanos(v: &Value) -> u64 {
    if let Some(n) = v.as_u64() {
        return n;
    }
    let s = v.as_str().unwrap().strip_prefix("PT").unwrap();
    let mut total = 0u64;
    let mut rest = s;
    for (unit, scale) in [('H', 3_600_000_000_000u64), ('M', 60_000_000_000)] {
        if let Some((n, r)) = rest.split_once(unit) {
            total += n.parse::<u64>().unwrap() * scale;
            rest = r;
        }
    }
    if let Some(secs) = rest.strip_suffix('S') {
        let (whole, frac) = secs.split_once('.').unwrap_or((secs, ""));
        total += whole.parse::<u64>().unwrap() * 1_000_000_000;
        let frac = format!("{frac:0<9}");
        total += frac[..9].parse::<u64>().unwrap();
    }
    total
}

fn method_path(profile: &Profile, tree: &CallTree, id: NodeId) -> String {
    tree.path(id)
        .iter()
        .filter_map(|k| match k {
            NodeKind::Method(m) => {
                let info = profile.methods.get(*m).unwrap();
                (!info.method.is_empty()).then(|| info.to_string())
            }
            NodeKind::Overflow => Some("ferrofluid.[overflow]()V".to_owned()),
            NodeKind::Thread => None,
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// Per (thread, stack): the context event's fields, as the profile says and as JFR read them.
type Contexts = BTreeMap<(String, String), BTreeMap<String, u64>>;

fn expected_contexts(profile: &Profile) -> Contexts {
    let metrics = profile.metrics();
    let mut out = Contexts::new();
    for thread in &profile.threads {
        let tree = &thread.tree;
        let values: Vec<_> = (0..metrics.len())
            .map(|i| profile.metric_values(tree, i))
            .collect();
        for id in tree.ids().skip(1) {
            let mut fields = BTreeMap::new();
            for (i, m) in metrics.iter().enumerate() {
                let v = values[i][id.index()];
                if m.name == "calls" {
                    fields.insert("calls".to_owned(), v.self_value);
                } else {
                    let camel: String = m
                        .name
                        .split('_')
                        .map(|w| w[..1].to_uppercase() + &w[1..])
                        .collect();
                    fields.insert(format!("self{camel}"), v.self_value);
                    fields.insert(format!("total{camel}"), v.total);
                }
            }
            let key = (thread.name.clone(), method_path(profile, tree, id));
            assert!(out.insert(key, fields).is_none());
        }
    }
    out
}

fn read_contexts(jfr: &Path, file: &Path) -> Contexts {
    let mut out = Contexts::new();
    for e in events(jfr, file, "ferrofluid.CallingContext") {
        let v = &e["values"];
        let mut fields = BTreeMap::new();
        for (k, x) in v.as_object().unwrap() {
            if ["startTime", "eventThread", "stackTrace", "objectClass"].contains(&k.as_str()) {
                continue;
            }
            fields.insert(k.clone(), nanos(x));
        }
        let key = (
            v["eventThread"]["javaName"].as_str().unwrap().to_owned(),
            stack(&v["stackTrace"]),
        );
        assert!(out.insert(key, fields).is_none());
    }
    out
}

#[test]
fn jfr_print_reads_every_context_with_its_exact_values() {
    let tools = jfr_tools();
    for case in ["fig4", "sample", "count", "alloc", "idle", "native"] {
        let profile = golden(case);
        let file = write(&profile, &JfrReport::default(), case);
        let want = expected_contexts(&profile);
        assert!(want.len() >= 4, "{case}");
        for jfr in &tools {
            assert_eq!(read_contexts(jfr, &file), want, "{case} {}", jfr.display());
        }
    }
}

/// Per stack: execution samples.
fn sample_counts(jfr: &Path, file: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for e in events(jfr, file, "jdk.ExecutionSample") {
        assert_eq!(e["values"]["state"], "STATE_RUNNABLE");
        *out.entry(stack(&e["values"]["stackTrace"])).or_default() += 1;
    }
    out
}

/// Fig. 4's self times (27.25, 68.5, 99.1 and 376.75 µs) in samples of 10 µs, rounded.
#[test]
fn execution_samples_are_the_self_time_of_each_context_per_period() {
    let profile = golden("fig4");
    let file = write(
        &profile,
        &JfrReport::default().with_period_ns(10_000),
        "fig4-10us",
    );
    let want: BTreeMap<String, u64> = [
        ("demo.Fig4.f()V", 3),
        ("demo.Fig4.f()V;demo.Fig4.h()V", 7),
        ("demo.Fig4.f()V;demo.Fig4.g(I)V", 10),
        ("demo.Fig4.f()V;demo.Fig4.g(I)V;demo.Fig4.h()V", 38),
    ]
    .into_iter()
    .map(|(s, n)| (s.to_owned(), n))
    .collect();
    for jfr in jfr_tools() {
        assert_eq!(sample_counts(&jfr, &file), want, "{}", jfr.display());
    }

    // The default period, 1 ms, on a profile of milliseconds: every context's rounded share.
    let profile = golden("sample");
    let file = write(&profile, &JfrReport::default(), "sample");
    let time = profile.metric_index("time").unwrap();
    let mut want = BTreeMap::new();
    for thread in &profile.threads {
        let values = profile.metric_values(&thread.tree, time);
        for id in thread.tree.ids().skip(1) {
            let ms = (values[id.index()].self_value + 500_000) / 1_000_000;
            if ms > 0 {
                *want
                    .entry(method_path(&profile, &thread.tree, id))
                    .or_default() += ms;
            }
        }
    }
    assert_eq!(want.values().sum::<u64>(), 38);
    for jfr in jfr_tools() {
        assert_eq!(sample_counts(&jfr, &file), want, "{}", jfr.display());
    }
}

/// `jfr summary`: one chunk of version 2.1, and the count of each event type.
#[test]
fn jfr_summary_counts_the_events_of_every_mode() {
    let cases = [
        // (case, execution samples, contexts, allocation samples, regions)
        ("fig4", 0, 4, 0, 0),
        ("sample", 38, 14, 0, 0),
        ("count", 0, 7, 0, 0),
        ("alloc", 0, 4, 4, 0),
        ("region", 262, 0, 0, 3),
    ];
    for jfr in jfr_tools() {
        for (case, samples, contexts, allocations, regions) in cases {
            let file = write(&golden(case), &JfrReport::default(), case);
            let text = run(&jfr, &["summary"], &file);
            assert!(text.contains(" Version: 2.1\n"), "{text}");
            assert!(text.contains(" Chunks: 1\n"), "{text}");
            let count = |event: &str| -> u64 {
                text.lines()
                    .find_map(|l| {
                        let cols: Vec<&str> = l.split_whitespace().collect();
                        (cols.first() == Some(&event)).then(|| cols[1].parse().unwrap())
                    })
                    .unwrap_or_else(|| panic!("{event} not in\n{text}"))
            };
            let got = (
                count("jdk.ExecutionSample"),
                count("ferrofluid.CallingContext"),
                count("jdk.ObjectAllocationSample"),
                count("ferrofluid.Region"),
            );
            assert_eq!(
                got,
                (samples, contexts, allocations, regions),
                "{case} {}",
                jfr.display()
            );
        }
    }
}

/// An allocation path ending in its allocated class: one `jdk.ObjectAllocationSample` per
/// path, its stack the allocating methods, its class the allocated one, its weight the bytes.
#[test]
fn allocation_samples_carry_class_stack_and_bytes() {
    let mut profile = Profile::new(Mode::Alloc);
    profile.extra_metrics = Mode::Alloc.default_metrics();
    let main = profile
        .methods
        .insert("demo.App", "main", "([Ljava/lang/String;)V");
    let fill = profile.methods.insert("demo.Cache", "fill", "(I)V");
    let longs = profile.methods.insert("long[]", "", "");
    let entry = profile.methods.insert("java.util.HashMap$Node", "", "");
    let mut tree = CallTree::with_width(2);
    let m = tree.add_child(NodeId::ROOT, NodeKind::Method(main));
    let f = tree.add_child(m, NodeKind::Method(fill));
    for (parent, class, objects, bytes) in [(m, longs, 2, 160), (f, entry, 100, 3200)] {
        let c = tree.add_child(parent, NodeKind::Method(class));
        tree.extra_mut(c).copy_from_slice(&[objects, bytes]);
    }
    profile
        .threads
        .push(ThreadProfile::new("worker-1", 7, tree));
    let file = write(&profile, &JfrReport::default(), "alloc-classes");
    for jfr in jfr_tools() {
        let mut got: Vec<(String, String, u64, String)> =
            events(&jfr, &file, "jdk.ObjectAllocationSample")
                .iter()
                .map(|e| {
                    let v = &e["values"];
                    (
                        stack(&v["stackTrace"]),
                        v["objectClass"]["name"].as_str().unwrap().to_owned(),
                        v["weight"].as_u64().unwrap(),
                        v["eventThread"]["javaName"].as_str().unwrap().to_owned(),
                    )
                })
                .collect();
        got.sort();
        let main = "demo.App.main([Ljava/lang/String;)V";
        assert_eq!(
            got,
            [
                (main.to_owned(), "[J".to_owned(), 160, "worker-1".to_owned()),
                (
                    format!("{main};demo.Cache.fill(I)V"),
                    "java/util/HashMap$Node".to_owned(),
                    3200,
                    "worker-1".to_owned()
                ),
            ],
            "{}",
            jfr.display()
        );
        // The context events carry both metrics and the class.
        let contexts = events(&jfr, &file, "ferrofluid.CallingContext");
        let node = contexts
            .iter()
            .find(|e| e["values"]["objectClass"]["name"] == "java/util/HashMap$Node")
            .unwrap();
        assert_eq!(node["values"]["selfObjects"], 100);
        assert_eq!(node["values"]["selfBytes"], 3200);
    }
}

/// A code-region profile: one `ferrofluid.Region` per region method with its numbers, and
/// execution samples of its time outside nested regions.
#[test]
fn region_events_carry_each_region_methods_numbers() {
    let profile = golden("region");
    let file = write(&profile, &JfrReport::default(), "region");
    let regions = profile.regions.as_ref().unwrap();
    for jfr in jfr_tools() {
        let got: Vec<(String, Vec<u64>)> = events(&jfr, &file, "ferrofluid.Region")
            .iter()
            .map(|e| {
                let v = &e["values"];
                let m = &v["method"];
                let name = format!(
                    "{}.{}{}",
                    m["type"]["name"].as_str().unwrap().replace('/', "."),
                    m["name"].as_str().unwrap(),
                    m["descriptor"].as_str().unwrap()
                );
                let numbers = [
                    "count",
                    "threads",
                    "totalTime",
                    "nestedTime",
                    "minTime",
                    "maxTime",
                    "p50Time",
                    "p90Time",
                    "p99Time",
                    "p999Time",
                ]
                .iter()
                .map(|f| nanos(&v[*f]))
                .collect();
                (name, numbers)
            })
            .collect();
        let want: Vec<(String, Vec<u64>)> = regions
            .iter()
            .map(|r| {
                (
                    format!("{}.{}{}", r.class, r.method, r.descriptor),
                    vec![
                        r.count,
                        r.threads,
                        r.total_ns,
                        r.nested_ns,
                        r.min_ns,
                        r.max_ns,
                        r.percentiles.p50_ns,
                        r.percentiles.p90_ns,
                        r.percentiles.p99_ns,
                        r.percentiles.p999_ns,
                    ],
                )
            })
            .collect();
        assert_eq!(got, want, "{}", jfr.display());
        // demo.Work.step: 262 ms, 45 µs of it in nested regions.
        let samples = sample_counts(&jfr, &file);
        assert_eq!(
            samples.into_iter().collect::<Vec<_>>(),
            [("demo.Work.step(I)V".to_owned(), 262)],
            "{}",
            jfr.display()
        );
    }
}
