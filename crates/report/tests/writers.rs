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
    p.regions = Some(Vec::new());
    let region = render(&p, &TextReport::default());
    assert!(region.contains(
        "\nclasses: 1 class could not be instrumented (calls into it are in its callers' self \
         time): org.eclipse.jetty.util.log.Slf4jLog (JVMTI_ERROR_INVALID_CLASS)\n"
    ));
}
