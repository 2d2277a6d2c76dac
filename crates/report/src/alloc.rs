//! The `alloc` mode's tables in the text report: leak suspects first (with their generation
//! history and top allocation paths), then the classes, then the allocation sites.

use std::fmt::Write;

use ferrofluid_profile::alloc::{AllocSummary, ClassAlloc};

/// How the class table is ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClassOrder {
    /// Estimated bytes of the objects that survived a GC, the largest first.
    #[default]
    SurvivedBytes,
    /// Estimated live bytes.
    LiveBytes,
    /// Allocated bytes.
    AllocatedBytes,
    /// Objects allocated.
    Allocated,
    /// Surviving generations.
    Generations,
}

impl std::str::FromStr for ClassOrder {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "survived-bytes" => Ok(ClassOrder::SurvivedBytes),
            "live-bytes" => Ok(ClassOrder::LiveBytes),
            "allocated-bytes" => Ok(ClassOrder::AllocatedBytes),
            "allocated" => Ok(ClassOrder::Allocated),
            "generations" => Ok(ClassOrder::Generations),
            _ => Err(format!(
                "unknown order `{s}` (expected survived-bytes, live-bytes, allocated-bytes, allocated or generations)"
            )),
        }
    }
}

/// Rows of the class and site tables shown, at most.
const MAX_ROWS: usize = 50;

/// The text of `summary`'s tables, classes in `order`.
pub fn text(summary: &AllocSummary, order: ClassOrder) -> String {
    let mut s = String::new();
    let _ = write_text(&mut s, summary, order);
    s
}

/// Appends the HTML of `summary`'s tables: leak suspects, then the classes (a table sortable
/// by any column, as the page's other tables are).
pub(crate) fn html(a: &AllocSummary, s: &mut String) {
    use crate::view::escape;
    let _ = writeln!(s, "<h2>Leak suspects</h2>");
    if a.suspects.is_empty() {
        let _ = writeln!(s, "<p>none</p>");
    }
    for x in &a.suspects {
        let _ = writeln!(
            s,
            "<h3>{}: {} generations (+{})</h3>\n<p>generations sampled about every second: {}</p>",
            escape(&x.class),
            x.generations,
            x.growth,
            escape(&history(&x.history))
        );
        s.push_str(&history_svg(&x.history));
        s.push('\n');
        for p in &x.paths {
            let frames: Vec<String> = p.frames.iter().rev().map(|f| escape(f)).collect();
            let _ = writeln!(
                s,
                "<pre>{} live tracked ({} survived a GC, {} bytes), {} generations\n  at {}</pre>",
                p.live,
                p.survived,
                p.survived_bytes,
                p.generations,
                frames.join("\n  at ")
            );
        }
    }
    let _ = writeln!(
        s,
        "<h2>Classes</h2>\n<p>{}, {} GCs; {}</p>",
        escape(&tracking(a)),
        a.gc_count,
        escape(LIVE_MEANS)
    );
    s.push_str("<table class=\"hot\">\n<thead><tr>");
    for h in [
        "allocated",
        "bytes",
        "tracked",
        "~survived",
        "~survived bytes",
        "~live",
        "~live bytes",
        "~age",
        "~generations",
    ] {
        let _ = write!(s, "<th data-num=\"1\">{h}</th>");
    }
    s.push_str("<th class=\"m\">class</th></tr></thead>\n<tbody>\n");
    for c in &a.classes {
        s.push_str("<tr>");
        for v in [
            c.allocated,
            c.allocated_bytes,
            c.tracked,
            c.survived,
            c.survived_bytes,
            c.live,
            c.live_bytes,
        ] {
            let _ = write!(s, "<td data-v=\"{v}\">{v}</td>");
        }
        let _ = writeln!(
            s,
            "<td data-v=\"{0}\">{0:.2}</td><td data-v=\"{1}\">{1}</td><td class=\"m\" data-v=\"{2}\">{2}</td></tr>",
            c.avg_age,
            c.generations,
            escape(&c.class)
        );
    }
    s.push_str("</tbody></table>\n");
}

/// What the live figures are, said under every class table.
const LIVE_MEANS: &str = "~survived: objects a GC finished after their allocation had not freed \
                          when the profile was taken (age 1 or more); ~live: objects no GC had \
                          freed, garbage not yet collected included (age 0: allocated since the \
                          last GC); survived, live, age and generations are estimated from the \
                          tracked objects (~)";

fn write_text(s: &mut String, a: &AllocSummary, order: ClassOrder) -> std::fmt::Result {
    writeln!(
        s,
        "ferrofluid allocation profile: {}, {} GCs",
        tracking(a),
        a.gc_count
    )?;
    if !a.alloc_classes.is_empty() {
        writeln!(
            s,
            "probed: the sites allocating {} (other sites keep what they counted before)",
            a.alloc_classes.join(", ")
        )?;
    }
    if a.untracked > 0 {
        writeln!(
            s,
            "! {} objects were not tracked: the cap on tracked objects was reached",
            a.untracked
        )?;
    }
    if a.stacks_dropped > 0 {
        writeln!(
            s,
            "! {} allocation stacks were not kept: the cap on stacks was reached",
            a.stacks_dropped
        )?;
    }
    writeln!(s, "{LIVE_MEANS}")?;
    writeln!(s)?;
    write_suspects(s, a)?;
    write_classes(s, a, order)?;
    write_sites(s, a)
}

/// The leak suspects, each with its history and the paths of its live tracked objects.
fn write_suspects(s: &mut String, a: &AllocSummary) -> std::fmt::Result {
    if a.suspects.is_empty() {
        writeln!(s, "Leak suspects: none")?;
    } else {
        writeln!(
            s,
            "Leak suspects (by surviving generations, then their growth)"
        )?;
        for (i, x) in a.suspects.iter().enumerate() {
            writeln!(
                s,
                "{}. {}: {} generations (+{}), history {}",
                i + 1,
                x.class,
                x.generations,
                x.growth,
                history(&x.history)
            )?;
            for p in &x.paths {
                writeln!(
                    s,
                    "   {} live tracked ({} survived a GC, {} bytes), {} generations:",
                    p.live, p.survived, p.survived_bytes, p.generations
                )?;
                for f in p.frames.iter().rev() {
                    writeln!(s, "     at {f}")?;
                }
            }
        }
    }
    writeln!(s)
}

/// The class table, sorted as `order` says, its first [`MAX_ROWS`] rows.
fn write_classes(s: &mut String, a: &AllocSummary, order: ClassOrder) -> std::fmt::Result {
    let mut classes: Vec<&ClassAlloc> = a.classes.iter().collect();
    let by = |c: &ClassAlloc| match order {
        ClassOrder::SurvivedBytes => c.survived_bytes,
        ClassOrder::LiveBytes => c.live_bytes,
        ClassOrder::AllocatedBytes => c.allocated_bytes,
        ClassOrder::Allocated => c.allocated,
        ClassOrder::Generations => u64::from(c.generations),
    };
    let key = match order {
        ClassOrder::SurvivedBytes => "survived bytes",
        ClassOrder::LiveBytes => "live bytes",
        ClassOrder::AllocatedBytes => "allocated bytes",
        ClassOrder::Allocated => "allocated",
        ClassOrder::Generations => "generations",
    };
    classes.sort_by(|x, y| by(y).cmp(&by(x)).then_with(|| x.class.cmp(&y.class)));
    writeln!(s, "Classes (by {key})")?;
    writeln!(
        s,
        "{:>12} {:>14} {:>9} {:>10} {:>13} {:>10} {:>13} {:>8} {:>5}  class",
        "allocated",
        "bytes",
        "tracked",
        "~survived",
        "~surv bytes",
        "~live",
        "~live bytes",
        "~age",
        "~gen"
    )?;
    for c in classes.iter().take(MAX_ROWS) {
        writeln!(
            s,
            "{:>12} {:>14} {:>9} {:>10} {:>13} {:>10} {:>13} {:>8.2} {:>5}  {}",
            c.allocated,
            c.allocated_bytes,
            c.tracked,
            c.survived,
            c.survived_bytes,
            c.live,
            c.live_bytes,
            c.avg_age,
            c.generations,
            c.class
        )?;
    }
    if classes.len() > MAX_ROWS {
        writeln!(s, "({} more classes)", classes.len() - MAX_ROWS)?;
    }
    writeln!(s)
}

/// The allocation sites by bytes, the first [`MAX_ROWS`], each with its kind when not `new`.
fn write_sites(s: &mut String, a: &AllocSummary) -> std::fmt::Result {
    writeln!(s, "Allocation sites (by bytes)")?;
    writeln!(
        s,
        "{:>12} {:>14} {:>10} {:>13}  site",
        "allocated", "bytes", "~survived", "~surv bytes"
    )?;
    for x in a.sites.iter().take(MAX_ROWS) {
        let kind = match x.kind.as_str() {
            "" | "new" => String::new(),
            k => format!(" ({k})"),
        };
        writeln!(
            s,
            "{:>12} {:>14} {:>10} {:>13}  {} @{}{kind}: {}",
            x.allocated, x.bytes, x.survived, x.survived_bytes, x.method, x.bci, x.class
        )?;
    }
    if a.sites.len() > MAX_ROWS {
        writeln!(s, "({} more sites)", a.sites.len() - MAX_ROWS)?;
    }
    writeln!(s)
}

/// A suspect's generation history as a small inline line chart: one point per sample, the
/// height its generation count (0 at the bottom, the history's largest at the top).
pub(crate) fn history_svg(h: &[u32]) -> String {
    const W: f64 = 240.0;
    const H: f64 = 48.0;
    let max = h.iter().copied().max().unwrap_or(0).max(1);
    let step = if h.len() > 1 {
        W / (h.len() - 1) as f64
    } else {
        0.0
    };
    let points: Vec<String> = h
        .iter()
        .enumerate()
        .map(|(i, &g)| {
            format!(
                "{:.1},{:.1}",
                i as f64 * step,
                H - f64::from(g) * H / f64::from(max)
            )
        })
        .collect();
    format!(
        "<svg class=\"history\" width=\"{w}\" height=\"{h}\" viewBox=\"-2 -2 {w} {h}\" \
         role=\"img\"><title>surviving generations, sampled about every second: {title}</title>\
         <line x1=\"0\" y1=\"{H}\" x2=\"{W}\" y2=\"{H}\" stroke=\"#bbb\"/>\
         <polyline fill=\"none\" stroke=\"#c0392b\" stroke-width=\"1.5\" points=\"{points}\"/>\
         <text x=\"{tx}\" y=\"8\" font-size=\"9\">{max}</text></svg>",
        w = W + 24.0,
        h = H + 4.0,
        title = history(h),
        points = points.join(" "),
        tx = W + 3.0,
    )
}

/// The flame graphs of an allocation profile's paths by allocated bytes, allocated objects,
/// survived bytes and live bytes (the metrics it has), one shown at a time: radio buttons switch them (CSS alone).
/// `first` is the metric shown first.
pub(crate) fn flames(profile: &ferrofluid_profile::Profile, first: Option<usize>, s: &mut String) {
    use ferrofluid_profile::alloc::{LIVE_BYTES, OBJECTS, SURVIVED_BYTES};
    use ferrofluid_profile::metric::BYTES;
    let shown: Vec<(usize, &str, &str)> = [
        (BYTES, "bytes", "allocated bytes"),
        (OBJECTS, "objects", "allocated objects"),
        (SURVIVED_BYTES, "survived", "survived bytes (estimated)"),
        (LIVE_BYTES, "live", "live bytes (estimated)"),
    ]
    .into_iter()
    .filter_map(|(name, id, label)| profile.metric_index(name).map(|i| (i, id, label)))
    .collect();
    if shown.is_empty() {
        return;
    }
    let checked = first
        .filter(|f| shown.iter().any(|(i, _, _)| i == f))
        .unwrap_or(shown[0].0);
    s.push_str(
        "<h2 id=\"flame\">Flame graph of allocation paths</h2>\n<p>Width: what the paths \
         allocated, the allocated class as the top frame. Hover a frame for details.</p>\n\
         <div class=\"aflame\">\n",
    );
    for &(i, id, label) in &shown {
        let _ = writeln!(
            s,
            "<input type=\"radio\" name=\"aflame\" id=\"aflame-{id}\"{}><label for=\"aflame-{id}\">{label}</label>",
            if i == checked { " checked" } else { "" }
        );
    }
    for &(i, id, _) in &shown {
        let _ = writeln!(
            s,
            "<div class=\"fl fl-{id}\">{}</div>",
            crate::flame::svg(profile, i)
        );
    }
    s.push_str("</div>\n<style>.aflame .fl{display:none}.aflame label{margin-right:1em}");
    for &(_, id, _) in &shown {
        let _ = write!(s, "#aflame-{id}:checked~.fl-{id}{{display:block}}");
    }
    s.push_str("</style>\n");
}

fn tracking(a: &AllocSummary) -> String {
    if a.track_bytes > 0 {
        return format!(
            "objects tracked by bytes: each site's first, then one every {} allocated there",
            bytes_text(a.track_bytes)
        );
    }
    match a.track_every {
        0 => "counts only (no object tracked)".to_owned(),
        1 => "every object tracked".to_owned(),
        n => format!("every {n}th allocation of each site tracked"),
    }
}

/// A size in the largest binary unit that divides it (`512 KiB`), else in bytes.
fn bytes_text(b: u64) -> String {
    [(30, "GiB"), (20, "MiB"), (10, "KiB")]
        .into_iter()
        .find(|&(shift, _)| b >= 1 << shift && b % (1 << shift) == 0)
        .map_or_else(
            || format!("{b} bytes"),
            |(shift, unit)| format!("{} {unit}", b >> shift),
        )
}

/// The last 20 samples of a generation history.
fn history(h: &[u32]) -> String {
    let from = h.len().saturating_sub(20);
    let v: Vec<String> = h[from..].iter().map(u32::to_string).collect();
    if from > 0 {
        format!("... {}", v.join(" "))
    } else {
        v.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrofluid_profile::alloc::{Suspect, SuspectPath};

    #[test]
    fn suspects_come_first_and_classes_sort_as_asked() {
        let a = AllocSummary {
            track_every: 10,
            gc_count: 7,
            classes: vec![
                ClassAlloc {
                    class: "demo.Leak".into(),
                    allocated: 100,
                    allocated_bytes: 1600,
                    tracked: 10,
                    live: 90,
                    live_bytes: 1440,
                    survived: 80,
                    survived_bytes: 1280,
                    avg_age: 3.5,
                    generations: 6,
                },
                ClassAlloc {
                    class: "long[]".into(),
                    allocated: 10,
                    allocated_bytes: 8000,
                    tracked: 1,
                    live: 0,
                    live_bytes: 0,
                    survived: 0,
                    survived_bytes: 0,
                    avg_age: 0.0,
                    generations: 0,
                },
            ],
            suspects: vec![Suspect {
                class: "demo.Leak".into(),
                generations: 6,
                growth: 5,
                history: vec![1, 3, 6],
                paths: vec![SuspectPath {
                    frames: vec!["demo.Main.main".into(), "demo.Main.leak".into()],
                    live: 9,
                    survived: 8,
                    survived_bytes: 128,
                    generations: 6,
                }],
            }],
            ..AllocSummary::default()
        };
        let t = text(&a, ClassOrder::LiveBytes);
        let suspects = t
            .find("1. demo.Leak: 6 generations (+5), history 1 3 6")
            .unwrap();
        let classes = t.find("Classes (by live bytes)").unwrap();
        assert!(suspects < classes);
        assert!(t.contains(
            "   9 live tracked (8 survived a GC, 128 bytes), 6 generations:\n     at \
             demo.Main.leak\n     at demo.Main.main\n"
        ));
        let rows: Vec<&str> = t[classes..].lines().skip(2).take(2).collect();
        assert!(
            rows[0].ends_with("demo.Leak") && rows[1].ends_with("long[]"),
            "{rows:?}"
        );
        let t = text(&a, ClassOrder::default());
        let classes = t.find("Classes (by survived bytes)").unwrap();
        let rows: Vec<&str> = t[classes..].lines().skip(1).take(3).collect();
        assert_eq!(
            rows[0].split_whitespace().collect::<Vec<_>>(),
            [
                "allocated",
                "bytes",
                "tracked",
                "~survived",
                "~surv",
                "bytes",
                "~live",
                "~live",
                "bytes",
                "~age",
                "~gen",
                "class"
            ]
        );
        assert_eq!(
            rows[1].split_whitespace().collect::<Vec<_>>(),
            [
                "100",
                "1600",
                "10",
                "80",
                "1280",
                "90",
                "1440",
                "3.50",
                "6",
                "demo.Leak"
            ]
        );
        assert!(rows[2].ends_with("long[]"), "{rows:?}");
        let t = text(&a, ClassOrder::AllocatedBytes);
        let classes = t.find("Classes (by allocated bytes)").unwrap();
        let rows: Vec<&str> = t[classes..].lines().skip(2).take(2).collect();
        assert!(
            rows[0].ends_with("long[]") && rows[1].ends_with("demo.Leak"),
            "{rows:?}"
        );
        let mut h = String::new();
        html(&a, &mut h);
        assert!(h.contains("<h3>demo.Leak: 6 generations (+5)</h3>"), "{h}");
        assert!(
            h.contains("9 live tracked (8 survived a GC, 128 bytes), 6 generations\n  at demo.Main.leak\n  at demo.Main.main"),
            "{h}"
        );
        assert!(
            h.contains("<td class=\"m\" data-v=\"long[]\">long[]</td></tr>"),
            "{h}"
        );
    }

    #[test]
    fn a_narrowed_profile_says_which_sites_were_probed() {
        let mut a = AllocSummary {
            track_every: 10,
            ..AllocSummary::default()
        };
        let lines = |a: &AllocSummary| -> Vec<String> {
            text(a, ClassOrder::LiveBytes)
                .lines()
                .take(2)
                .map(str::to_owned)
                .collect()
        };
        assert!(!lines(&a)[1].starts_with("probed:"));
        a.alloc_classes = vec!["com.acme.Cache$Entry".into(), "byte[]".into()];
        assert_eq!(
            lines(&a)[1],
            "probed: the sites allocating com.acme.Cache$Entry, byte[] (other sites keep what they counted before)"
        );
    }

    /// "live" is what no GC has freed yet, garbage included, and "survived" what outlived a GC:
    /// every report says so where it shows the figures, rather than letting "live" read as
    /// "reachable".
    #[test]
    fn the_live_figure_says_what_it_counts() {
        let a = AllocSummary {
            track_every: 10,
            ..AllocSummary::default()
        };
        let said = "~survived: objects a GC finished after their allocation had not freed when \
                    the profile was taken (age 1 or more); ~live: objects no GC had freed, \
                    garbage not yet collected included (age 0: allocated since the last GC); \
                    survived, live, age and generations are estimated from the tracked objects (~)";
        assert_eq!(text(&a, ClassOrder::LiveBytes).lines().nth(1), Some(said));
        let mut h = String::new();
        html(&a, &mut h);
        assert!(h.contains(&format!("0 GCs; {said}</p>")), "{h}");
    }
}
