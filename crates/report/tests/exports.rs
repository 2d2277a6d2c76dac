//! The export formats read by the tools they are for: `go tool pprof -top` lists every
//! method of the golden profiles with the profile's own flat and cumulative totals; the
//! speedscope files validate against speedscope's schema (vendored in
//! `tests/data/speedscope/`) and carry the exact weights.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ferrofluid_profile::{Mode, NodeKind, Profile};
use ferrofluid_report::Format;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn golden(case: &str) -> Profile {
    Profile::from_json_slice(&std::fs::read(data_dir().join(case).join("input.json")).unwrap())
        .unwrap()
}

fn render(profile: &Profile, format: Format) -> Vec<u8> {
    let mut out = Vec::new();
    format.writer().write(profile, &mut out).unwrap();
    out
}

/// Per frame name: (flat, cum) of metric `metric` as the profile's hot spots say.
fn expected(profile: &Profile, metric: usize) -> BTreeMap<String, (u64, u64)> {
    let totals = profile.metric_totals();
    let mut out = BTreeMap::new();
    for spot in &totals.hot_spots {
        let name = match spot.kind {
            NodeKind::Method(m) => profile.methods.get(m).unwrap().frame_name(),
            NodeKind::Overflow => "[overflow]".to_owned(),
            NodeKind::Thread => continue,
        };
        let v = spot.values[metric];
        if v.self_value == 0 && v.total == 0 {
            continue;
        }
        assert!(
            out.insert(name.clone(), (v.self_value, v.total)).is_none(),
            "{name}: an overload; pprof merges them by name"
        );
    }
    out
}

/// `go`, or `None` (the test then says it is skipped: `.ci/run` installs `golang-go`).
fn go() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("FERROFLUID_GO").map(PathBuf::from),
        Some(PathBuf::from("/usr/bin/go")),
        Some(PathBuf::from("/usr/lib/go/bin/go")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .or_else(|| {
            Command::new("go")
                .arg("version")
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|_| PathBuf::from("go"))
        })
}

/// `go tool pprof -top` of `file` for sample type `index`, shown in `unit` (`ns`, `B`, or
/// `minimum` for counts, which pprof does not scale): per function (flat, cum), and the
/// total of its "Showing nodes accounting for" line.
fn pprof_top(
    go: &Path,
    file: &Path,
    index: &str,
    unit: &str,
    dir: &Path,
) -> (BTreeMap<String, (u64, u64)>, u64) {
    let out = Command::new(go)
        .args([
            "tool",
            "pprof",
            "-top",
            "-nodecount=100000",
            "-nodefraction=0",
        ])
        .arg(format!("-sample_index={index}"))
        .arg(format!("-unit={unit}"))
        .arg(file)
        .env("GOCACHE", dir.join("gocache"))
        .env("HOME", dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "go tool pprof failed: {}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let number = |s: &str| -> u64 {
        s.strip_suffix("ns")
            .or_else(|| s.strip_suffix('B'))
            .unwrap_or(s)
            .parse()
            .unwrap_or_else(|_| panic!("{s:?} in\n{text}"))
    };
    let mut rows = BTreeMap::new();
    let mut total = None;
    let mut in_table = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Showing nodes accounting for ") {
            // "X, P% of Y total"
            let of = rest.split(" of ").nth(1).unwrap();
            total = Some(number(of.trim_end_matches(" total")));
            continue;
        }
        if line.trim_start().starts_with("flat") {
            in_table = true;
            continue;
        }
        if in_table {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let name = cols[5..].join(" ");
            rows.insert(name, (number(cols[0]), number(cols[3])));
        }
    }
    (rows, total.unwrap_or_else(|| panic!("no total in\n{text}")))
}

#[test]
fn go_tool_pprof_lists_the_methods_with_the_profiles_totals() {
    let Some(go) = go() else {
        eprintln!(
            "SKIPPED: `go` not found (Debian's golang-go; .ci/run installs it): pprof files not read by go tool pprof"
        );
        return;
    };
    let dir = tempfile_dir("pprof");
    let mut checked = 0;
    for case in ["fig4", "sample", "count", "alloc"] {
        let profile = golden(case);
        let file = dir.join(format!("{case}.pb.gz"));
        std::fs::write(&file, render(&profile, Format::Pprof)).unwrap();
        let totals = profile.metric_totals();
        for (i, metric) in totals.metrics.iter().enumerate() {
            let unit = match metric.unit.as_str() {
                "nanoseconds" => "ns",
                "bytes" => "B",
                _ => "minimum",
            };
            let (rows, total) = pprof_top(&go, &file, &metric.name, unit, &dir);
            assert_eq!(total, totals.totals[i], "{case}: total {}", metric.name);
            assert_eq!(rows, expected(&profile, i), "{case}: {}", metric.name);
            checked += 1;
        }
    }
    assert_eq!(checked, 2 + 3 + 2 + 2);
}

#[test]
fn pprof_of_a_region_profile_has_one_sample_per_region_method() {
    let profile = golden("region");
    let m = ferrofluid_report::pprof::encode(&profile);
    let s = |i: i64| m.string_table[i as usize].clone();
    let regions = profile.regions.as_ref().unwrap();
    let want: Vec<(String, Vec<i64>)> = regions
        .iter()
        .filter(|r| r.count > 0)
        .map(|r| {
            (
                format!("{}.{}", r.class, r.method),
                vec![r.count as i64, r.total_ns as i64],
            )
        })
        .collect();
    let got: Vec<(String, Vec<i64>)> = m
        .sample
        .iter()
        .map(|x| {
            let f = &m.function[x.location_id[0] as usize - 1];
            (s(f.name), x.value.clone())
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(s(m.default_sample_type), "time");
}

fn tempfile_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("ferrofluid-exports-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn schema() -> serde_json::Value {
    serde_json::from_slice(
        &std::fs::read(data_dir().join("speedscope/file-format-schema.json")).unwrap(),
    )
    .unwrap()
}

#[test]
fn speedscope_files_validate_against_the_schema() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    for case in ["fig4", "sample", "count", "alloc", "idle", "region"] {
        let bytes = render(&golden(case), Format::Speedscope);
        let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{case}: {errors:?}");
    }
    // The validator does reject what is not a speedscope file.
    let bad = serde_json::json!({"$schema": ferrofluid_report::speedscope::SCHEMA, "shared": {}, "profiles": []});
    assert!(!validator.is_valid(&bad));
}

/// Fig. 4 with root f, by self time: each context once, stacks root first, weights exact.
#[test]
fn speedscope_weights_are_the_contexts_self_values() {
    let profile = golden("fig4");
    let doc: serde_json::Value =
        serde_json::from_slice(&render(&profile, Format::Speedscope)).unwrap();
    let frames: Vec<&str> = doc["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let p = &doc["profiles"][0];
    assert_eq!(p["type"], "sampled");
    assert_eq!(p["unit"], "nanoseconds");
    let samples: Vec<(String, u64)> = p["samples"]
        .as_array()
        .unwrap()
        .iter()
        .zip(p["weights"].as_array().unwrap())
        .map(|(s, w)| {
            let stack: Vec<&str> = s
                .as_array()
                .unwrap()
                .iter()
                .map(|i| frames[i.as_u64().unwrap() as usize])
                .collect();
            (stack.join(";"), w.as_u64().unwrap())
        })
        .collect();
    // The same stacks and values as the folded stacks (which sum equal names; fig4 has
    // one context per stack).
    let folded = String::from_utf8(render(&profile, Format::Collapsed)).unwrap();
    let thread = profile.threads[0].name.clone();
    let mut want: Vec<(String, u64)> = folded
        .lines()
        .map(|l| {
            let (stack, v) = l.rsplit_once(' ').unwrap();
            let stack = stack.strip_prefix(&format!("{thread};")).unwrap();
            (stack.to_owned(), v.parse().unwrap())
        })
        .collect();
    let mut got = samples.clone();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    let total: u64 = samples.iter().map(|s| s.1).sum();
    assert_eq!(p["endValue"].as_u64().unwrap(), total);
    assert_eq!(total, profile.metric_totals().totals[1]);
    assert_eq!(profile.mode, Mode::Cpu);
}

/// A count profile weighs by bytecodes, unit "none"; one profile per thread.
#[test]
fn speedscope_of_a_count_profile_weighs_by_bytecodes() {
    let profile = golden("count");
    let doc: serde_json::Value =
        serde_json::from_slice(&render(&profile, Format::Speedscope)).unwrap();
    let profiles = doc["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), profile.threads.len());
    let bytecodes = profile.metric_index("bytecodes").unwrap();
    for (p, t) in profiles.iter().zip(&profile.threads) {
        assert_eq!(p["name"], t.name.as_str());
        assert_eq!(p["unit"], "none");
        let total = profile.metric_values(&t.tree, bytecodes)[0].total;
        assert_eq!(p["endValue"].as_u64().unwrap(), total);
        let sum: u64 = p["weights"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_u64().unwrap())
            .sum();
        assert_eq!(sum, total);
    }
}
