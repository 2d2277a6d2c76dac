//! The pages ferrofluid writes, laid out by headless Chromium at two window widths: the diff
//! page's flame graph fills the window with its labels whole, and the hover tooltip of the
//! profile view (the HTML report's and the live UI's) stays inside the window next to its right
//! edge. Screenshots of each go to the test's target directory.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod browser;
use browser::Driver;
mod common;
use common::ferrofluid;
use ferrofluid_testkit::scratch_dir;

/// The widths the pages are laid out at: a desktop window and a narrow one.
const WIDTHS: [u32; 2] = [1400, 800];

/// A class name long enough to overflow a narrow flame graph's frame, short enough for a wide
/// one's: a label cut at 1400 px is cut by the page, not by the name.
const CLASS: &str = "com.example.inventory.warehouse.Replenishment";
/// A method whose tooltip is wider than any window's spare room to the right of the pointer.
const LONG_CLASS: &str = "com.example.inventory.warehouse.replenishment.strategy.\
                          SeasonalDemandForecastingReplenishmentStrategyFactoryImplementation";

fn node(class: &str, method: &str, calls: u64, bytecodes: u64, children: Vec<Value>) -> Value {
    json!({
        "class": class, "method": method, "descriptor": "(Ljava/lang/String;Ljava/util/Map;)V",
        "calls": calls, "bytecodes": bytecodes, "children": children
    })
}

/// A count-mode profile: `main` calling one method of [`CLASS`] that calls one of
/// [`LONG_CLASS`], which runs every bytecode: each frame is as wide as the graph.
fn profile(scale: u64) -> Value {
    let deepest = node(
        LONG_CLASS,
        "recomputeReorderPointsForAllStockKeepingUnits",
        7,
        9_000 * scale,
        vec![],
    );
    let middle = node(CLASS, "replenishAllWarehouses", 1, 0, vec![deepest]);
    let main = node("demo.App", "main", 1, 0, vec![middle]);
    json!({
        "format": "ferrofluid", "version": 1, "mode": "count",
        "metrics": [{"name": "calls", "unit": "count"}, {"name": "bytecodes", "unit": "count"}],
        "methods": {"instrumented": 3, "called": 3},
        "threads": [{
            "name": "main", "id": 1,
            "root": {"kind": "thread", "class": "", "method": "<thread>", "descriptor": "",
                     "calls": 0, "bytecodes": 0, "children": [main]}
        }]
    })
}

fn run(args: &[&Path]) -> Output {
    let out = ferrofluid().args(args).output().unwrap();
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 1),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The pages under test, written by `ferrofluid diff` and `ferrofluid report`.
fn pages(dir: &Path) -> (PathBuf, PathBuf) {
    let base = dir.join("base.json");
    let new = dir.join("new.json");
    std::fs::write(&base, profile(1).to_string()).unwrap();
    std::fs::write(&new, profile(2).to_string()).unwrap();
    let diff = dir.join("diff.html");
    let report = dir.join("report.html");
    run(&[Path::new("diff"), &base, &new, Path::new("-o"), &diff]);
    run(&[Path::new("report"), &new, Path::new("-o"), &report]);
    (diff, report)
}

fn url(path: &Path) -> String {
    format!("file://{}", path.display())
}

async fn screenshot(page: &fantoccini::Client, name: &str) {
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = page
        .screenshot()
        .await
        .map(|png| std::fs::write(&shot, png));
}

async fn eval(page: &fantoccini::Client, script: &str) -> Value {
    page.execute(script, vec![]).await.unwrap()
}

/// The diff page's flame graph: its width, the page's, and each frame's label beside its name
/// and rendered width, once inferno's script has fitted the labels to the width.
const DIFF_LAYOUT: &str = r#"
const svg = document.querySelector('svg'), frames = document.getElementById('frames');
if (!svg || !frames) return null;
const labels = Array.from(frames.querySelectorAll('g')).map(g => ({
  name: g.querySelector('title').textContent.replace(/ \(.*$/, ''),
  text: g.querySelector('text').textContent.trim(),
  width: g.querySelector('rect').getBoundingClientRect().width }));
return { svg: svg.getBoundingClientRect().width, page: document.body.clientWidth,
         frames: Number(frames.getAttribute('width')), labels };
"#;

async fn check_diff(page: &fantoccini::Client, diff: &Path, width: u32) {
    page.goto(&url(diff)).await.unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    let layout = loop {
        let layout = eval(page, DIFF_LAYOUT).await;
        // inferno fits the frames to the width the page gives the graph, after its load.
        let fitted = layout["frames"].as_f64().zip(layout["svg"].as_f64());
        if fitted.is_some_and(|(f, s)| (f - (s - 20.0)).abs() < 1.0) || Instant::now() > until {
            break layout;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    screenshot(page, &format!("page-diff-{width}.png")).await;
    let svg = layout["svg"].as_f64().unwrap();
    let body = layout["page"].as_f64().unwrap();
    assert!(
        (svg - body).abs() < 1.0,
        "at {width} px the diff's flame graph is {svg} px wide in a page {body} px wide: {layout}"
    );
    let frames = layout["frames"].as_f64().unwrap();
    assert!((frames - (svg - 20.0)).abs() < 1.0, "{layout}");
    // Every frame wide enough for its whole name shows it whole.
    let mut whole = 0;
    for l in layout["labels"].as_array().unwrap() {
        let name = l["name"].as_str().unwrap();
        if l["width"].as_f64().unwrap() > 8.0 * name.len() as f64 + 12.0 {
            assert_eq!(l["text"].as_str(), Some(name), "at {width} px: {layout}");
            whole += 1;
        }
    }
    assert!(whole >= 3, "at {width} px: {layout}");
}

/// Moves the pointer over the deepest frame of the profile view's flame graph, `inset` px from
/// its right edge, and returns the tooltip's box and the window's size.
fn hover_script(inset: u32) -> String {
    format!(
        r#"
const canvas = document.getElementById('ff-flame'), r = canvas.getBoundingClientRect();
const x = r.right - {inset}, y = r.bottom - 8;
canvas.dispatchEvent(new MouseEvent('mousemove', {{ clientX: x, clientY: y, bubbles: true }}));
const tip = document.getElementById('ff-tip'), t = tip.getBoundingClientRect();
return {{ hidden: tip.hidden, text: tip.textContent, left: t.left, right: t.right, top: t.top,
          bottom: t.bottom, width: document.documentElement.clientWidth,
          height: document.documentElement.clientHeight, x, y }};
"#
    )
}

async fn check_tooltip(page: &fantoccini::Client, report: &Path, width: u32) {
    page.goto(&url(report)).await.unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let drawn = eval(page, "return document.getElementById('ff-flame').height;").await;
        if drawn.as_f64().is_some_and(|h| h > 0.0) || Instant::now() > until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for inset in [3, 150] {
        let tip = eval(page, &hover_script(inset)).await;
        screenshot(page, &format!("page-tooltip-{width}-{inset}.png")).await;
        assert_eq!(tip["hidden"], false, "{tip}");
        assert!(
            tip["text"].as_str().unwrap().starts_with(LONG_CLASS),
            "the pointer is over the deepest frame: {tip}"
        );
        let f = |k: &str| tip[k].as_f64().unwrap();
        assert!(
            f("left") >= 0.0
                && f("top") >= 0.0
                && f("right") <= f("width")
                && f("bottom") <= f("height"),
            "at {width} px the tooltip leaves the window: {tip}"
        );
        // Beside the pointer, not over it.
        assert!(
            f("right") <= f("x")
                || f("left") >= f("x")
                || f("bottom") <= f("y")
                || f("top") >= f("y"),
            "{tip}"
        );
    }
}

#[test]
fn flame_graphs_fill_the_window_and_tooltips_stay_inside_it() {
    let dir = scratch_dir(Path::new(env!("CARGO_TARGET_TMPDIR")), "page-layout");
    let (diff, report) = pages(&dir);
    let driver = Driver::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let page = driver.session(&dir.join("chromium-profile")).await;
        for width in WIDTHS {
            page.set_window_size(width, 900).await.unwrap();
            check_diff(&page, &diff, width).await;
            check_tooltip(&page, &report, width).await;
        }
        let _ = page.close().await;
    });
    let _ = std::fs::remove_dir_all(&dir);
}
