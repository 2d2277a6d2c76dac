//! The reports of an allocation profile made by the `alloc` engine: folded stacks by each
//! allocation weight (the class as the last frame), the HTML page's generation chart and
//! flame-graph switch, the text report's orders, pprof's sample types as Go's heap profiles
//! name them (read by `go tool pprof -top`), and speedscope's one profile per weight.

#[allow(dead_code)] // the other tests' profiles
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use ferrofluid_report::alloc::ClassOrder;
use ferrofluid_report::collapsed::CollapsedReport;
use ferrofluid_report::text::TextReport;
use ferrofluid_report::{Format, Report, Weight};

fn render(report: &dyn Report) -> String {
    let mut out = Vec::new();
    report.write(&common::alloc_paths(), &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn folded(weight: &str) -> String {
    render(&CollapsedReport::default().with_weight(Weight::named(weight)))
}

#[test]
fn folded_stacks_by_each_weight_end_in_the_allocated_class() {
    assert_eq!(
        folded("alloc-bytes"),
        "main;demo.App.main;demo.Cache.remember;demo.Cache$Entry 24000\n\
         main;demo.App.main;demo.Cache.remember;long[] 80000\n\
         main;demo.App.main;demo.Parser.parse;char[] 20000\n\
         worker-1;demo.Parser.parse;char[] 12000\n"
    );
    assert_eq!(
        folded("alloc-count"),
        "main;demo.App.main;demo.Cache.remember;demo.Cache$Entry 1000\n\
         main;demo.App.main;demo.Cache.remember;long[] 1000\n\
         main;demo.App.main;demo.Parser.parse;char[] 500\n\
         worker-1;demo.Parser.parse;char[] 300\n"
    );
    assert_eq!(
        folded("live-bytes"),
        "main;demo.App.main;demo.Cache.remember;demo.Cache$Entry 21600\n\
         main;demo.App.main;demo.Parser.parse;char[] 400\n"
    );
    // The default is allocated bytes.
    assert_eq!(render(&CollapsedReport::default()), folded("alloc-bytes"));
}

#[test]
fn the_page_charts_each_suspects_generations_and_switches_its_flame_graph() {
    let page = render(&*Format::Html.writer());
    // The history 0 1 2 2 4 6 over 240 px, 6 at the top of 48 px.
    assert!(
        page.contains(
            "<polyline fill=\"none\" stroke=\"#c0392b\" stroke-width=\"1.5\" \
             points=\"0.0,48.0 48.0,40.0 96.0,32.0 144.0,32.0 192.0,16.0 240.0,0.0\"/>"
        ),
        "{page}"
    );
    let suspects = page.find("<h2>Leak suspects</h2>").unwrap();
    let chart = page.find("<svg class=\"history\"").unwrap();
    let classes = page.find("<h2>Classes</h2>").unwrap();
    assert!(suspects < chart && chart < classes);
    for (id, label, checked) in [
        ("bytes", "allocated bytes", " checked"),
        ("objects", "allocated objects", ""),
        ("live", "live bytes (estimated)", ""),
    ] {
        assert!(
            page.contains(&format!(
                "<input type=\"radio\" name=\"aflame\" id=\"aflame-{id}\"{checked}><label for=\"aflame-{id}\">{label}</label>"
            )),
            "{id}"
        );
        assert!(page.contains(&format!("#aflame-{id}:checked~.fl-{id}{{display:block}}")));
        assert_eq!(
            page.matches(&format!("<div class=\"fl fl-{id}\"><svg"))
                .count(),
            1
        );
    }
    // The class table sorts by any column (the page's sortable tables).
    assert!(page.contains("<td class=\"m\" data-v=\"demo.Cache$Entry\">demo.Cache$Entry</td>"));
    // --weight picks the graph shown first.
    let live = render(
        &ferrofluid_report::html::HtmlReport::default().with_weight(Weight::named("live-bytes")),
    );
    assert!(live.contains("id=\"aflame-live\" checked>"));
    assert!(live.contains("id=\"aflame-bytes\"><label"));
}

fn class_rows(order: ClassOrder) -> Vec<String> {
    let text = render(&TextReport::default().with_class_order(order));
    let at = text.find("Classes (by ").unwrap();
    text[at..]
        .lines()
        .skip(2)
        .take(3)
        .map(|l| l.rsplit("  ").next().unwrap().to_owned())
        .collect()
}

#[test]
fn the_text_report_puts_suspects_first_and_sorts_classes() {
    let text = render(&TextReport::default());
    let suspect = text
        .find("1. demo.Cache$Entry: 6 generations (+5), history 0 1 2 2 4 6")
        .unwrap();
    assert!(suspect < text.find("Classes (by survived bytes)").unwrap());
    assert!(text.contains(
        "   90 live tracked (80 survived a GC, 1920 bytes), 6 generations:\n     at demo.Cache.remember\n     at demo.App.main\n"
    ));
    for (order, want) in [
        (
            ClassOrder::SurvivedBytes,
            ["demo.Cache$Entry", "char[]", "long[]"],
        ),
        (
            ClassOrder::LiveBytes,
            ["demo.Cache$Entry", "char[]", "long[]"],
        ),
        (
            ClassOrder::AllocatedBytes,
            ["long[]", "char[]", "demo.Cache$Entry"],
        ),
        (
            ClassOrder::Allocated,
            ["demo.Cache$Entry", "long[]", "char[]"],
        ),
        (
            ClassOrder::Generations,
            ["demo.Cache$Entry", "char[]", "long[]"],
        ),
    ] {
        assert_eq!(class_rows(order), want, "{order:?}");
    }
    assert_eq!("allocated".parse::<ClassOrder>(), Ok(ClassOrder::Allocated));
    assert_eq!(
        "survived-bytes".parse::<ClassOrder>(),
        Ok(ClassOrder::SurvivedBytes)
    );
}

#[test]
fn speedscope_has_one_profile_per_weight() {
    let doc: serde_json::Value =
        serde_json::from_str(&render(&*Format::Speedscope.writer())).unwrap();
    let frames: Vec<&str> = doc["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let profiles = doc["profiles"].as_array().unwrap();
    let names: Vec<&str> = profiles
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "allocated bytes",
            "allocated objects",
            "live bytes (estimated)",
            "live objects (estimated)",
            "survived bytes (estimated)",
            "survived objects (estimated)"
        ]
    );
    let live = &profiles[2];
    assert_eq!(live["unit"], "bytes");
    let samples: Vec<(String, u64)> = live["samples"]
        .as_array()
        .unwrap()
        .iter()
        .zip(live["weights"].as_array().unwrap())
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
    assert_eq!(
        samples,
        [
            (
                "main;demo.App.main;demo.Cache.remember;demo.Cache$Entry".to_owned(),
                21_600
            ),
            (
                "main;demo.App.main;demo.Parser.parse;char[]".to_owned(),
                400
            ),
        ]
    );
    assert_eq!(profiles[1]["endValue"], 2800);
    let schema: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/speedscope/file-format-schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(jsonschema::validator_for(&schema).unwrap().is_valid(&doc));
}

fn go() -> Option<PathBuf> {
    [
        std::env::var_os("FERROFLUID_GO").map(PathBuf::from),
        Some(PathBuf::from("/usr/bin/go")),
        Some(PathBuf::from("/usr/lib/go/bin/go")),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.is_file())
}

/// `go tool pprof -top` by each of Go's heap sample types: the totals and the classes' flat
/// values are the profile's.
#[test]
fn go_tool_pprof_reads_go_heap_sample_types() {
    let m = ferrofluid_report::pprof::encode(&common::alloc_paths());
    let s = |i: i64| m.string_table[i as usize].clone();
    let types: Vec<(String, String)> = m
        .sample_type
        .iter()
        .map(|t| (s(t.r#type), s(t.unit)))
        .collect();
    assert_eq!(
        types,
        [
            ("alloc_objects".into(), "count".into()),
            ("alloc_space".into(), "bytes".into()),
            ("inuse_objects".into(), "count".into()),
            ("inuse_space".into(), "bytes".into()),
            ("survived".into(), "count".into()),
            ("survived_bytes".into(), "bytes".into()),
        ]
    );
    assert_eq!(s(m.default_sample_type), "alloc_space");
    let Some(go) = go() else {
        eprintln!("SKIPPED: `go` not found (.ci/run installs golang-go)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("ferrofluid-alloc-pprof-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("alloc.pb.gz");
    let mut gz = Vec::new();
    Format::Pprof
        .writer()
        .write(&common::alloc_paths(), &mut gz)
        .unwrap();
    std::fs::write(&file, gz).unwrap();
    for (index, unit, total, rows) in [
        (
            "alloc_space",
            "B",
            136_000,
            vec![
                ("long[]", 80_000),
                ("char[]", 32_000),
                ("demo.Cache$Entry", 24_000),
            ],
        ),
        (
            "alloc_objects",
            "minimum",
            2_800,
            vec![
                ("demo.Cache$Entry", 1_000),
                ("long[]", 1_000),
                ("char[]", 800),
            ],
        ),
        (
            "inuse_space",
            "B",
            22_000,
            vec![("demo.Cache$Entry", 21_600), ("char[]", 400)],
        ),
        (
            "inuse_objects",
            "minimum",
            910,
            vec![("demo.Cache$Entry", 900), ("char[]", 10)],
        ),
    ] {
        let out = Command::new(&go)
            .args(["tool", "pprof", "-top", "-nodefraction=0"])
            .arg(format!("-sample_index={index}"))
            .arg(format!("-unit={unit}"))
            .arg(&file)
            .env("GOCACHE", dir.join("gocache"))
            .env("HOME", &dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let suffix = if unit == "B" { "B" } else { "" };
        assert!(
            text.contains(&format!("of {total}{suffix} total")),
            "{index}: {text}"
        );
        for (class, flat) in rows {
            assert!(
                text.lines().any(|l| {
                    let cols: Vec<&str> = l.split_whitespace().collect();
                    cols.len() == 6 && cols[5] == class && cols[0] == format!("{flat}{suffix}")
                }),
                "{index} {class} {flat}: {text}"
            );
        }
    }
}
