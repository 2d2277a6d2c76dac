//! Writer behaviour beyond the golden files: cut-off, self-containment, sums.

mod common;

use ferrofluid_profile::Profile;
use ferrofluid_report::collapsed::CollapsedReport;
use ferrofluid_report::text::TextReport;
use ferrofluid_report::{Format, Report};

fn render(profile: &Profile, report: &dyn Report) -> String {
    let mut out = Vec::new();
    report.write(profile, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// f (10 ms) calls a (6 ms, which calls x: 0.02 ms) and b (0.04 ms), no calibration.
fn small() -> Profile {
    let mut p = Profile::default();
    let f = p.methods.insert("F", "f", "()V");
    let a = p.methods.insert("A", "a", "()V");
    let b = p.methods.insert("B", "b", "()V");
    let x = p.methods.insert("X", "x", "()V");
    let mut s = common::Sim::new(100, false);
    s.enter(f);
    s.enter(a);
    s.work(5_980_000);
    s.leaf(x, 20_000);
    s.exit(a);
    s.leaf(b, 40_000);
    s.work(3_960_000);
    s.exit(f);
    let (tree, _, _) = s.finish();
    p.threads
        .push(ferrofluid_profile::ThreadProfile::new("main", 1, tree));
    p.instrumented = 4;
    p
}

#[test]
fn text_tree_hides_nodes_below_the_cutoff_and_says_so() {
    let text = render(&small(), &TextReport::default());
    let tree: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Call tree"))
        .collect();
    assert_eq!(
        tree,
        vec![
            "Call tree of thread \"main\" (id 1): 10.000 ms",
            "total %     total ms      self ms      calls  method",
            " 100.0%       10.000        3.960          1  F.f()V",
            "  60.0%        6.000        5.980          1    A.a()V",
            "   0.2%        0.020                              [1 node below 0.5% hidden]",
            "   0.4%        0.040                            [1 node below 0.5% hidden]",
        ]
    );
    assert!(text.contains("times: measured, not compensated (no calibration)\n"));
    // With no cut-off every node is listed.
    let mut all = TextReport::default();
    all.cutoff = 0.0;
    let text = render(&small(), &all);
    assert!(text.contains("   0.2%        0.020        0.020          1      X.x()V\n"));
    assert!(!text.contains("hidden"));
}

#[test]
fn folded_stacks_sum_to_the_compensated_total() {
    for p in [common::fig4(), common::sample()] {
        let text = render(&p, &CollapsedReport::default());
        let sum: u64 = text
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        let total: u64 = p.threads.iter().map(|t| p.times(&t.tree)[0].total_ns).sum();
        assert_eq!(sum, total);
    }
    let mut bare = CollapsedReport::default();
    bare.thread_frames = false;
    assert_eq!(
        render(&small(), &bare),
        "F.f 3960000\nF.f;A.a 5980000\nF.f;A.a;X.x 20000\nF.f;B.b 40000\n"
    );
}

#[test]
fn html_is_one_self_contained_page() {
    let html = render(&common::sample(), &*Format::Html.writer());
    assert!(html.starts_with("<!DOCTYPE html>\n"));
    assert!(html.ends_with("</html>\n"));
    // Nothing fetched from anywhere: the only URL is the SVG namespace name, once per flame
    // graph (the sample has CPU times, so a second graph weighs them).
    assert_eq!(html.matches("http").count(), 2);
    assert_eq!(
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(),
        2
    );
    for external in ["<link", " src=", "@import", "url("] {
        assert!(!html.contains(external), "{external}");
    }
    assert_eq!(html.matches("<svg").count(), 2);
    assert!(html.contains("<h2 id=\"flame-cpu\">Flame graph, thread CPU time</h2>"));
    let wall_only = render(&common::fig4(), &*Format::Html.writer());
    assert_eq!(wall_only.matches("<svg").count(), 1);
    assert!(!wall_only.contains("flame-cpu"));
    assert_eq!(html.matches("<table class=\"hot\">").count(), 1);
    // 12 hot-spot rows: 11 methods and the overflow bucket.
    assert_eq!(html.matches("<tr><td class=\"m\"").count(), 12);
    // Thread names are escaped, never markup.
    assert!(html.contains("worker &lt;1&gt;;&quot;io&quot;"));
    assert!(!html.contains("worker <1>"));
    // Every opened <details> is closed.
    assert_eq!(
        html.matches("<details").count(),
        html.matches("</details>").count()
    );
}

/// A method whose probes `adaptive` removed is named so in trees and hot spots (text, HTML) and
/// in the methods line; frame names of flame graphs and folded stacks stay plain; the JSON
/// document keeps the mark through a round trip.
#[test]
fn methods_whose_probes_were_removed_say_so_where_rows_are_listed() {
    let mut p = small();
    let a = p.methods.insert("A", "a", "()V");
    p.probes_dropped.insert(a);
    let mut all = TextReport::default();
    all.cutoff = 0.0;
    let text = render(&p, &all);
    assert!(text.contains(
        "methods: 4 instrumented, 4 called; 1 called often and shorter than their probes had \
         them removed as the program ran (marked \"probes removed\": their calls are those \
         before, their later time is their callers' self time)\n"
    ));
    assert!(
        text.contains("  60.0%        6.000        5.980          1    A.a()V (probes removed)\n")
    );
    assert_eq!(text.matches("(probes removed)").count(), 2, "{text}");
    let html = render(&p, &ferrofluid_report::html::HtmlReport::default());
    assert!(html.contains("A.a()V (probes removed)"));
    let folded = render(&p, &CollapsedReport::default());
    assert!(!folded.contains("probes removed"), "{folded}");
    let doc = serde_json::to_value(p.to_document()).unwrap();
    assert_eq!(doc["methods"]["probes_dropped"], 1);
    let node_a = &doc["threads"][0]["root"]["children"][0]["children"][0];
    assert_eq!(
        (&node_a["method"], &node_a["probes_dropped"]),
        (&"a".into(), &true.into())
    );
    assert!(doc["threads"][0]["root"]["children"][0]
        .get("probes_dropped")
        .is_none());
    let back = Profile::from_document(&p.to_document()).unwrap();
    assert_eq!(back.probes_dropped.len(), 1);
    assert_eq!(back.to_document(), p.to_document());
}

/// Classes that could not be instrumented or restored, or were left alone, are named in the
/// header of the text and HTML reports (one line per kind, JVMTI errors by their name), in
/// code-region reports too; a profile without any has no such line.
#[test]
fn failed_classes_are_named_in_the_headers() {
    use ferrofluid_profile::{ClassPhase, FailedClass};
    let plain = render(&small(), &TextReport::default());
    assert!(!plain.contains("! "), "{plain}");
    let mut p = small();
    p.failed_classes = vec![
        FailedClass::new(
            "org/eclipse/jetty/util/log/Slf4jLog",
            ClassPhase::Instrument,
            "JVMTI RetransformClasses failed: JVMTI_ERROR_INVALID_CLASS (21)",
            false,
        ),
        FailedClass::new(
            "a/Gone",
            ClassPhase::Restore,
            "never linked: its verification failed",
            true,
        ),
        FailedClass::new(
            "a/Worse",
            ClassPhase::Restore,
            "JVMTI RetransformClasses failed: JVMTI_ERROR_INTERNAL (113)",
            false,
        ),
        FailedClass::new(
            "a/Other",
            ClassPhase::Restore,
            "JVMTI RetransformClasses failed: JVMTI_ERROR_FAILS_VERIFICATION (62)",
            false,
        ),
    ];
    let text = render(&p, &TextReport::default());
    let header: Vec<&str> = text.lines().take(6).collect();
    assert_eq!(
        header,
        [
            "ferrofluid CPU profile",
            "methods: 4 instrumented, 4 called",
            "threads: 1",
            "! 1 class could not be instrumented (calls into it are in its callers' self time): \
             org.eclipse.jetty.util.log.Slf4jLog (JVMTI_ERROR_INVALID_CLASS)",
            "! 2 classes could not be restored (they keep probes that record nothing): \
             a.Worse (JVMTI_ERROR_INTERNAL), a.Other (JVMTI_ERROR_FAILS_VERIFICATION)",
            "! 1 class was not restored, as none of its code can run: \
             a.Gone (never linked: its verification failed)",
        ]
    );
    let html = render(&p, &*Format::Html.writer());
    assert!(html.contains(
        "<tr><td>Classes</td><td>1 class could not be instrumented (calls into it are in its \
         callers&#39; self time): org.eclipse.jetty.util.log.Slf4jLog (JVMTI_ERROR_INVALID_CLASS)\
         </td></tr>"
    ));
    p.mode = ferrofluid_profile::Mode::Region;
    p.regions = Some(Vec::new());
    let region = render(&p, &TextReport::default());
    assert!(region.contains(
        "\nclasses: 1 class could not be instrumented (calls into it are in its callers' self \
         time): org.eclipse.jetty.util.log.Slf4jLog (JVMTI_ERROR_INVALID_CLASS)\n"
    ));
}

/// Two threads run `f` in the same context: on "busy" 10,000 calls whose probes cost more than
/// the 0.5 ms they measured (their compensated self time is clamped at 0), on "main" one call
/// of 5 ms. The threads' own trees add up to 5 ms; one tree of both threads merged would let
/// the first thread's excess subtract from the second's time (4.5 ms). Text, HTML and JSON all
/// say 5 ms, from `Profile::totals`.
fn two_threads_one_clamped() -> Profile {
    let mut p = Profile::default();
    let f = p.methods.insert("F", "f", "()V");
    let thread = |calls: u64, total_ns: u64| {
        let mut tree = ferrofluid_profile::CallTree::new();
        let node = tree.add_child(tree.root(), ferrofluid_profile::NodeKind::Method(f));
        tree.node_mut(node).calls = calls;
        tree.node_mut(node).total_ns = total_ns;
        tree.node_mut(tree.root()).total_ns = total_ns;
        tree
    };
    p.threads.push(ferrofluid_profile::ThreadProfile::new(
        "busy",
        2,
        thread(10_000, 500_000),
    ));
    p.threads.push(ferrofluid_profile::ThreadProfile::new(
        "main",
        1,
        thread(1, 5_000_100),
    ));
    p.calibration = Some(ferrofluid_profile::Calibration {
        inner_ns: 100.0,
        outer_ns: 0.0,
    });
    p.instrumented = 1;
    p
}

#[test]
fn text_html_and_json_give_the_same_totals() {
    let p = two_threads_one_clamped();
    let totals = p.totals(false);
    assert_eq!(totals.total_ns, 5_000_000);
    assert_eq!(totals.hot_spots.len(), 1);
    assert_eq!(
        (totals.hot_spots[0].self_ns, totals.hot_spots[0].calls),
        (5_000_000, 10_001)
    );
    assert_eq!(p.hot_spots(), totals.hot_spots);
    // What one merged tree would say: the disagreement the totals avoid.
    let merged = p.merged();
    assert_eq!(p.times(&merged)[0].total_ns, 4_500_000);

    let text = render(&p, &TextReport::default());
    assert!(
        text.contains("Hot spots (all threads, by self time; 5.000 ms in total)\n"),
        "{text}"
    );
    assert!(
        text.contains("      ~5.000  100.0%      10001        0.500       ~5.000  F.f()V\n"),
        "{text}"
    );
    let trees: u64 = ["busy", "main"]
        .iter()
        .map(|t| {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("Call tree of thread \"{t}\"")))
                .unwrap();
            let ms = line.split_once("): ").unwrap().1.split(' ').next().unwrap();
            (ms.parse::<f64>().unwrap() * 1e6).round() as u64
        })
        .sum();
    assert_eq!(trees, 5_000_000);

    let html = render(&p, &*Format::Html.writer());
    assert!(
        html.contains("<tr><td>Total</td><td>5.000 ms</td></tr>"),
        "{html}"
    );
    assert!(html.contains("<td data-v=\"5000000\">~5.000</td><td data-v=\"100.0000\">100.0%</td>"));
    assert!(html.contains("<title>all threads: 5.000 ms</title>"));

    let doc = serde_json::to_value(p.to_document()).unwrap();
    let json: u64 = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["root"]["total_ns"].as_u64().unwrap())
        .sum();
    assert_eq!(json, 5_000_000);
    let back = Profile::from_json_slice(&serde_json::to_vec(&doc).unwrap()).unwrap();
    assert_eq!(back.totals(false), totals);
}

/// The methods whose probes were removed are in the document by name, so that a profile read
/// back counts them all, also those no node shows (removed before a reset).
#[test]
fn removed_probes_no_node_shows_survive_the_document() {
    let mut p = small();
    let a = p.methods.insert("A", "a", "()V");
    let gone = p.methods.insert("G", "gone", "(I)I");
    p.probes_dropped.extend([a, gone]);
    let doc = serde_json::to_value(p.to_document()).unwrap();
    assert_eq!(doc["methods"]["probes_dropped"], 2);
    assert_eq!(
        doc["dropped_methods"],
        serde_json::json!([
            {"class": "A", "method": "a", "descriptor": "()V"},
            {"class": "G", "method": "gone", "descriptor": "(I)I"}
        ])
    );
    let back = Profile::from_document(&p.to_document()).unwrap();
    assert_eq!(back.probes_dropped.len(), 2);
    assert_eq!(back.to_document(), p.to_document());
    let text = render(&back, &TextReport::default());
    assert!(text.contains("methods: 4 instrumented, 4 called; 2 called often"));
}

/// A profile whose second thread was found parked in `take` (7 ms of self time there, 1 ms of
/// work in `run` around it): hot spots rank the 10 ms of `main` and the 1 ms of `run`, the wait
/// is listed apart; with idle time included it ranks with the rest. The document says which
/// thread and node.
fn with_an_idle_thread() -> Profile {
    let mut p = small();
    let run = p.methods.insert("W", "run", "()V");
    let take = p.methods.insert("Q", "take", "()Ljava/lang/Object;");
    let mut s = common::Sim::new(100, false);
    s.enter(run);
    s.work(1_000_000);
    s.enter(take);
    s.work(7_000_000);
    let node = s.rec.innermost();
    let (tree, _, _) = s.finish();
    let mut worker = ferrofluid_profile::ThreadProfile::new("worker-1", 21, tree);
    worker.waiting = Some(ferrofluid_profile::Waiting {
        state: "parked".into(),
        frame: "jdk.internal.misc.Unsafe.park".into(),
        node,
    });
    p.threads.push(worker);
    p
}

#[test]
fn idle_threads_are_listed_apart_from_the_hot_spots() {
    let p = with_an_idle_thread();
    let totals = p.totals(false);
    assert_eq!(
        (totals.total_ns, totals.idle_ns, totals.hot_ns()),
        (18_000_000, 7_000_000, 11_000_000)
    );
    let text = render(&p, &TextReport::default());
    let hot: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Hot spots"))
        .take_while(|l| !l.starts_with("Call tree"))
        .collect();
    assert_eq!(
        hot,
        [
            "Hot spots (busy time of all threads, by self time; 11.000 ms of 18.000 ms in total; \
             7.000 ms idle in 1 blocked thread, listed below)",
            "     self ms  self %      calls  avg self us     total ms  method",
            "       5.980   54.4%          1     5980.000        6.000  A.a()V",
            "       3.960   36.0%          1     3960.000       10.000  F.f()V",
            "       1.000    9.1%          1     1000.000        1.000  W.run()V",
            "       0.040    0.4%          1       40.000        0.040  B.b()V",
            "       0.020    0.2%          1       20.000        0.020  X.x()V",
            "       0.000    0.0%          1        0.000        0.000  Q.take()Ljava/lang/Object;",
            "",
            "Idle: threads found blocked when the profile was taken (left out of the hot spots \
             above), by time waiting",
            "       7.000  1 thread parked in Q.take()Ljava/lang/Object; (on top of the stack: \
             jdk.internal.misc.Unsafe.park)",
            "",
        ]
    );
    assert!(text.contains(
        "Call tree of thread \"worker-1\" (id 21): 8.000 ms\n  idle: found parked in \
         jdk.internal.misc.Unsafe.park when the profile was taken (the self time of the node \
         marked [idle] is waiting)\n"
    ));
    assert!(text.contains(
        "  87.5%        7.000        7.000          1    Q.take()Ljava/lang/Object; [idle: parked \
         in jdk.internal.misc.Unsafe.park]\n"
    ));
    let with_idle = render(&p, &TextReport::default().with_idle(true));
    assert!(with_idle.contains(
        "Hot spots (all threads, by self time, idle time included; 18.000 ms in total, 7.000 ms \
         idle in 1 blocked thread)\n     self ms  self %      calls  avg self us     total ms  \
         method\n       7.000   38.9%          1     7000.000        7.000  Q.take()Ljava/lang/Object;\n"
    ));
    assert!(with_idle.contains("(ranked in the hot spots above too)"));

    let html = render(&p, &*Format::Html.writer());
    assert!(html.contains(
        "<tr><td>Idle</td><td>7.000 ms in 1 thread found blocked when the profile was taken</td></tr>"
    ));
    assert!(html.contains(
        "<p>Busy time of all threads, by self time; 11.000 ms of 18.000 ms in total; 7.000 ms \
         idle in 1 blocked thread, listed below. Click a column to sort.</p>"
    ));
    assert!(html.contains("<h2 id=\"idle\">Idle</h2>"));
    assert!(html.contains("<td data-v=\"7000000\">7.000</td><td class=\"m\""));

    let doc = serde_json::to_value(p.to_document()).unwrap();
    let worker = &doc["threads"][1];
    assert_eq!(
        worker["waiting"],
        serde_json::json!({"state": "parked", "frame": "jdk.internal.misc.Unsafe.park"})
    );
    let take = &worker["root"]["children"][0]["children"][0];
    assert_eq!(
        (&take["method"], &take["waiting"]),
        (&"take".into(), &true.into())
    );
    assert!(worker["root"]["children"][0].get("waiting").is_none());
    assert!(doc["threads"][0].get("waiting").is_none());
    let back = Profile::from_document(&p.to_document()).unwrap();
    assert_eq!(back.threads[1].waiting, p.threads[1].waiting);
    assert_eq!(render(&back, &TextReport::default()), text);
}

/// Region `outer` (10 ms, 3 calls) ran region `inner` (4 ms of its 5 ms) inside it: folded
/// stacks weigh `outer` by its 6 ms outside `inner`, so that the lines add up to the 11 ms spent
/// inside regions, each nanosecond once.
#[test]
fn nested_regions_count_once_in_folded_stacks() {
    use ferrofluid_profile::region::RegionStats;
    let region = |method: &str, total_ns, nested_ns| RegionStats {
        class: "R".into(),
        method: method.into(),
        descriptor: "()V".into(),
        count: 3,
        threads: 1,
        total_ns,
        nested_ns,
        ..Default::default()
    };
    let p = Profile {
        mode: ferrofluid_profile::Mode::Region,
        instrumented: 3,
        regions: Some(vec![
            region("outer", 10_000_000, 4_000_000),
            region("inner", 5_000_000, 0),
            // Nothing outside the regions nested in it: no line.
            region("shell", 2_000_000, 2_000_000),
        ]),
        ..Profile::default()
    };
    assert_eq!(
        render(&p, &CollapsedReport::default()),
        "R.inner 5000000\nR.outer 6000000\n"
    );
    let doc = serde_json::to_value(p.to_document()).unwrap();
    assert_eq!(doc["regions"][0]["nested_ns"], 4_000_000);
    assert!(doc["regions"][1].get("nested_ns").is_none());
    assert_eq!(Profile::from_document(&p.to_document()).unwrap(), p);
}

/// The idle golden case's totals: two JDK threads' 820 ms of waiting apart from the 40.15 ms of
/// work, and every thread's total in the sum.
#[test]
fn idle_jdk_threads_do_not_lead_the_hot_spots() {
    let p = common::idle();
    let totals = p.totals(false);
    assert_eq!(
        (totals.total_ns, totals.idle_ns, totals.hot_ns()),
        (860_150_000, 820_000_000, 40_150_000)
    );
    assert_eq!(totals.idle_threads(), 2);
    let idle: Vec<(u64, &str, &str)> = totals
        .idle
        .iter()
        .map(|s| (s.idle_ns, s.state.as_str(), s.frame.as_str()))
        .collect();
    assert_eq!(
        idle,
        [
            (510_000_000, "waiting", "java.lang.Object.wait"),
            (
                310_000_000,
                "native",
                "java.lang.ref.Reference.waitForReferencePendingList"
            )
        ]
    );
    // With idle time, `ReferenceQueue.remove` leads, as it did before idle time was told apart.
    let name = |kind| match kind {
        ferrofluid_profile::NodeKind::Method(m) => p.methods.get(m).unwrap().method.clone(),
        other => format!("{other:?}"),
    };
    assert_eq!(name(p.hot_spots()[0].kind), "remove");
    assert_eq!(name(totals.hot_spots[0].kind), "compute");
    assert_eq!(totals.hot_spots[0].self_ns, 36_000_000);
}
