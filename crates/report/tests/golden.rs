//! Golden outputs under `tests/data/<case>/`. `FERROFLUID_BLESS=1 cargo test` rewrites
//! them; on a mismatch the actual output is left in the temp dir for diffing.
//!
//! Every HTML report repeats the same page around its document: the report's style sheet, the
//! interactive view's style, markup and script, the table-sorting script. Those parts are stored
//! once, in `tests/data/page/`, and an HTML golden holds a line `<!-- page/NAME -->` in place of
//! each; it is compared, byte for byte, as the whole page with those lines replaced by the files.

mod common;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use ferrofluid_profile::Profile;
use ferrofluid_report::collapsed::CollapsedReport;
use ferrofluid_report::{Format, Report, Weight};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn blessing() -> bool {
    std::env::var_os("FERROFLUID_BLESS").is_some_and(|v| v == "1")
}

/// Writes `bytes` to `path` aside and renames it over: another test may be reading it
/// (`golden_sample_cpu_folded_stacks` reads the sample's `input.json`, every HTML case the page's
/// parts).
fn write_atomically(path: &Path, bytes: &[u8]) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let name = path.file_name().unwrap().to_string_lossy();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let aside = path.with_file_name(format!("{name}.{}-{n}.tmp", std::process::id()));
    std::fs::write(&aside, bytes).unwrap();
    std::fs::rename(&aside, path).unwrap();
}

/// The marker line an HTML golden holds in place of the page's part `name`.
fn marker(name: &str) -> String {
    format!("<!-- page/{name} -->\n")
}

/// The parts every HTML report repeats, in their order on the page: the report's style sheet, the
/// view's style and markup (up to its `window.FF_PROFILE` line, the document), the view's script,
/// the sorting script at the end.
const PAGE_PARTS: [&str; 4] = [
    "style.html",
    "view.html",
    "view-script.html",
    "sort-script.html",
];

/// Where the [`PAGE_PARTS`] stand in `html`.
fn page_parts(html: &str) -> [Range<usize>; 4] {
    let find = |from: usize, what: &str| {
        from + html[from..]
            .find(what)
            .unwrap_or_else(|| panic!("no {what:?} in the HTML report after byte {from}"))
    };
    let through = |from: usize, what: &str| find(from, what) + what.len();
    let style = find(0, "<style>\n")..through(0, "</style>\n");
    let document = find(style.end, "<script>window.FF_PROFILE = ");
    let view = find(style.end, "<style>\n")..document;
    let after = through(document, "</script>\n");
    let script = find(after, "<script>\n")..through(after, "</script>\n");
    assert_eq!(
        script.start, after,
        "the view's script follows its document"
    );
    let last = html.rfind("<script>\n").unwrap();
    let sort = last..through(last, "</script>\n");
    assert!(script.end <= sort.start);
    [style, view, script, sort]
}

/// The golden form of an HTML report: its page's parts written to `tests/data/page/` and
/// replaced by their markers.
fn bless_html(html: &[u8]) -> Vec<u8> {
    let html = std::str::from_utf8(html).expect("an HTML report is UTF-8");
    let mut golden = String::new();
    let mut at = 0;
    for (name, range) in PAGE_PARTS.into_iter().zip(page_parts(html)) {
        write_atomically(
            &data_dir().join("page").join(name),
            html[range.clone()].as_bytes(),
        );
        golden.push_str(&html[at..range.start]);
        golden.push_str(&marker(name));
        at = range.end;
    }
    golden.push_str(&html[at..]);
    golden.into_bytes()
}

/// An HTML golden with its markers replaced by the page's parts: the whole page.
fn expand_html(golden: &[u8]) -> Vec<u8> {
    let mut page = String::from_utf8(golden.to_vec()).expect("an HTML golden is UTF-8");
    for name in PAGE_PARTS {
        let part = std::fs::read_to_string(data_dir().join("page").join(name))
            .unwrap_or_else(|e| panic!("page/{name}: {e} (run with FERROFLUID_BLESS=1)"));
        assert_eq!(page.matches(&marker(name)).count(), 1, "page/{name} marker");
        page = page.replace(&marker(name), &part);
    }
    page.into_bytes()
}

/// Compares `actual` with the golden file, or rewrites it when blessing.
fn check(case: &str, file: &str, actual: &[u8]) {
    let path = data_dir().join(case).join(file);
    let html = file.ends_with(".html");
    if blessing() {
        let golden = if html {
            bless_html(actual)
        } else {
            actual.to_vec()
        };
        write_atomically(&path, &golden);
        return;
    }
    let golden = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with FERROFLUID_BLESS=1)", path.display()));
    let expected = if html { expand_html(&golden) } else { golden };
    if expected != actual {
        let out = std::env::temp_dir().join("ferrofluid-golden").join(case);
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join(file), actual).unwrap();
        panic!(
            "{} differs; actual output: {} (FERROFLUID_BLESS=1 to accept)",
            path.display(),
            out.join(file).display()
        );
    }
}

fn render(profile: &Profile, format: Format) -> Vec<u8> {
    let mut out = Vec::new();
    format.writer().write(profile, &mut out).unwrap();
    out
}

fn run_case(case: &str, profile: Profile) {
    let mut input = Vec::new();
    profile.write_json(&mut input).unwrap();
    check(case, "input.json", &input);
    // Reports are made from the checked-in document, as `ferrofluid report` does.
    let read =
        Profile::from_json_slice(&std::fs::read(data_dir().join(case).join("input.json")).unwrap())
            .unwrap();
    for format in Format::ALL {
        let bytes = render(&read, format);
        assert_eq!(
            bytes,
            render(&read, format),
            "{case}: {format:?} not deterministic"
        );
        assert_eq!(
            bytes,
            render(&profile, format),
            "{case}: {format:?} differs after JSON"
        );
        check(case, &format!("report.{}", format.extension()), &bytes);
    }
}

#[test]
fn golden_fig4() {
    run_case("fig4", common::fig4());
}

#[test]
fn golden_native() {
    run_case("native", common::native());
}

#[test]
fn golden_sample() {
    run_case("sample", common::sample());
}

/// Idle threads are listed apart from the hot spots; a method whose probes were removed and that
/// no node shows is still counted.
#[test]
fn golden_idle() {
    run_case("idle", common::idle());
}

/// The sample has CPU times: folded stacks weighted by them.
#[test]
fn golden_sample_cpu_folded_stacks() {
    let read = Profile::from_json_slice(
        &std::fs::read(data_dir().join("sample").join("input.json")).unwrap(),
    )
    .unwrap();
    let writer = CollapsedReport::default().with_weight(Weight::Cpu);
    let mut out = Vec::new();
    writer.write(&read, &mut out).unwrap();
    check("sample", "report.cpu.collapsed", &out);
    // A profile without CPU times has no CPU stacks.
    let fig4 = common::fig4();
    assert!(!fig4.has_cpu());
    let mut none = Vec::new();
    writer.write(&fig4, &mut none).unwrap();
    assert!(none.is_empty(), "{}", String::from_utf8_lossy(&none));
}

/// A code-region profile: a 20 ms method with a few slow outliers, inside which a tiny region
/// method ran all its calls, and a method never called.
fn region() -> Profile {
    use ferrofluid_profile::region::{Bucket, Percentiles, RegionStats, Uncompensated};
    let step = RegionStats {
        class: "demo.Work".into(),
        method: "step".into(),
        descriptor: "(I)V".into(),
        count: 12,
        threads: 2,
        total_ns: 262_000_000,
        nested_ns: 45_000,
        min_ns: 20_050_000,
        max_ns: 41_000_000,
        percentiles: Percentiles {
            p50_ns: 20_100_000,
            p90_ns: 40_000_000,
            p99_ns: 41_000_000,
            p999_ns: 41_000_000,
        },
        distribution: vec![Bucket {
            le_ns: 50_000_000,
            count: 12,
        }],
        last_ns: vec![20_100_000, 41_000_000, 20_050_000],
        uncompensated: Uncompensated {
            total_ns: 262_000_720,
            min_ns: 20_050_060,
            max_ns: 41_000_060,
            percentiles: Percentiles {
                p50_ns: 20_100_060,
                p90_ns: 40_000_060,
                p99_ns: 41_000_060,
                p999_ns: 41_000_060,
            },
            last_ns: vec![20_100_060, 41_000_060, 20_050_060],
        },
        uncertain: false,
    };
    let tiny = RegionStats {
        class: "demo.Work".into(),
        method: "tiny".into(),
        descriptor: "()I".into(),
        count: 1000,
        threads: 1,
        total_ns: 45_000,
        nested_ns: 0,
        min_ns: 30,
        max_ns: 900,
        percentiles: Percentiles {
            p50_ns: 40,
            p90_ns: 50,
            p99_ns: 200,
            p999_ns: 900,
        },
        distribution: vec![
            Bucket {
                le_ns: 50,
                count: 950,
            },
            Bucket {
                le_ns: 100,
                count: 0,
            },
            Bucket {
                le_ns: 200,
                count: 49,
            },
            Bucket {
                le_ns: 500,
                count: 0,
            },
            Bucket {
                le_ns: 1000,
                count: 1,
            },
        ],
        last_ns: vec![40, 41],
        uncompensated: Uncompensated {
            total_ns: 105_000,
            min_ns: 90,
            max_ns: 960,
            percentiles: Percentiles {
                p50_ns: 100,
                p90_ns: 110,
                p99_ns: 260,
                p999_ns: 960,
            },
            last_ns: vec![100, 101],
        },
        // 60 µs of probes subtracted from 105 µs measured.
        uncertain: true,
    };
    let never = RegionStats {
        class: "demo.Work".into(),
        method: "never".into(),
        descriptor: "()V".into(),
        ..Default::default()
    };
    Profile {
        mode: ferrofluid_profile::Mode::Region,
        instrumented: 3,
        calibration: Some(ferrofluid_profile::Calibration {
            inner_ns: 60.0,
            outer_ns: 40.0,
        }),
        regions: Some(vec![step, tiny, never]),
        ..Profile::default()
    }
}

#[test]
fn golden_region() {
    run_case("region", region());
}

/// A `count` profile (exact calls and executed bytecodes per context, no clock) of two
/// threads: a parser whose lexer runs most bytecodes, and a recursive hash.
fn count() -> Profile {
    use ferrofluid_profile::{CallTree, Metric, Mode, NodeId, NodeKind, ThreadProfile};
    let mut p = Profile::new(Mode::Count);
    p.extra_metrics.push(Metric::new("bytecodes", "count"));
    p.instrumented = 6;
    let mut m =
        |class: &str, name: &str, desc: &str| NodeKind::Method(p.methods.insert(class, name, desc));
    let main = m("demo.App", "main", "([Ljava/lang/String;)V");
    let parse = m("demo.Parser", "parse", "(Ljava/lang/String;)Ldemo/Ast;");
    let next = m("demo.Lexer", "next", "()I");
    let hash = m("demo.Util", "hash", "(I)I");
    let run = m("demo.Worker", "run", "()V");
    let _never = m("demo.Util", "never", "()V");
    // (parent, kind, calls, bytecodes)
    let build = |nodes: &[(usize, NodeKind, u64, u64)]| {
        let mut tree = CallTree::with_width(1);
        let mut ids = vec![NodeId::ROOT];
        for &(parent, kind, calls, bytecodes) in nodes {
            let id = tree.add_child(ids[parent], kind);
            tree.node_mut(id).calls = calls;
            tree.extra_mut(id)[0] = bytecodes;
            ids.push(id);
        }
        tree
    };
    let main_tree = build(&[
        (0, main, 1, 20),
        (1, parse, 3, 900),
        (2, next, 60, 1200),
        (1, hash, 1, 50),
        (4, hash, 1, 40),
    ]);
    let worker_tree = build(&[(0, run, 1, 10), (1, next, 40, 800)]);
    p.threads.push(ThreadProfile::new("main", 1, main_tree));
    p.threads
        .push(ThreadProfile::new("worker-1", 14, worker_tree));
    p
}

/// An `alloc` profile: objects and bytes allocated per context, no calls.
fn alloc() -> Profile {
    use ferrofluid_profile::{CallTree, Metric, Mode, NodeId, NodeKind, ThreadProfile};
    let mut p = Profile::new(Mode::Alloc);
    p.extra_metrics = vec![
        Metric::new("objects", "count"),
        Metric::new("bytes", "bytes"),
    ];
    p.instrumented = 4;
    let mut m =
        |class: &str, name: &str, desc: &str| NodeKind::Method(p.methods.insert(class, name, desc));
    let main = m("demo.App", "main", "([Ljava/lang/String;)V");
    let fill = m("demo.Cache", "fill", "(I)V");
    let put = m(
        "java.util.HashMap",
        "put",
        "(Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;",
    );
    let parse = m("demo.Parser", "parse", "(Ljava/lang/String;)Ldemo/Ast;");
    let mut tree = CallTree::with_width(2);
    let mut add = |parent: NodeId, kind, objects, bytes| {
        let id = tree.add_child(parent, kind);
        tree.extra_mut(id).copy_from_slice(&[objects, bytes]);
        id
    };
    let main = add(NodeId::ROOT, main, 1, 24);
    let fill = add(main, fill, 100, 6_400);
    add(fill, put, 50, 1_600);
    add(main, parse, 10, 480);
    p.threads.push(ThreadProfile::new("main", 1, tree));
    p
}

/// Every writer renders a `count` profile from its metrics; folded stacks weigh by any one.
#[test]
fn golden_count() {
    run_case("count", count());
    let calls = CollapsedReport::default().with_weight(Weight::Metric("calls".into()));
    let mut out = Vec::new();
    calls.write(&count(), &mut out).unwrap();
    check("count", "report.calls.collapsed", &out);
}

/// The same for an `alloc` profile, which has no calls; a metric it lacks is an error.
#[test]
fn golden_alloc() {
    run_case("alloc", alloc());
    let objects = CollapsedReport::default().with_weight(Weight::Metric("objects".into()));
    let mut out = Vec::new();
    objects.write(&alloc(), &mut out).unwrap();
    check("alloc", "report.objects.collapsed", &out);
    let html = ferrofluid_report::html::HtmlReport::default()
        .with_weight(Weight::Metric("objects".into()));
    let mut out = Vec::new();
    html.write(&alloc(), &mut out).unwrap();
    check("alloc", "report.objects.html", &out);
    let err = CollapsedReport::default()
        .with_weight(Weight::Metric("calls".into()))
        .write(&alloc(), &mut Vec::new())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot write the report: the profile has no metric \"calls\""
    );
}

/// An allocation profile as the `alloc` engine makes it (class leaves with live values, the
/// class table, a leak suspect): every format, and folded stacks by each allocation weight.
#[test]
fn golden_alloc_paths() {
    run_case("allocpaths", common::alloc_paths());
    for weight in ["alloc-count", "live-bytes"] {
        let report = CollapsedReport::default().with_weight(Weight::named(weight));
        let mut out = Vec::new();
        report.write(&common::alloc_paths(), &mut out).unwrap();
        check("allocpaths", &format!("report.{weight}.collapsed"), &out);
    }
}
