//! Code-region profiles (`"mode":"region"`): a summary table of the region methods (count,
//! total, mean, min, percentiles, max) and each one's latency distribution and last durations,
//! as text or as a section of the HTML page.

use std::fmt::Write as _;

use ferrofluid_profile::{Profile, RegionStats};

use crate::view::{escape, times_note, uncertainty_note};

/// A duration with a unit that suits it: `850 ns`, `12.3 µs`, `20.104 ms`, `1.500 s`.
pub(crate) fn duration(ns: u64) -> String {
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else {
        format!("{:.3} s", ns as f64 / 1e9)
    }
}

const COLUMNS: [&str; 10] = [
    "calls", "total", "mean", "min", "p50", "p90", "p99", "p99.9", "max", "threads",
];

fn row(r: &RegionStats) -> [String; 10] {
    let p = &r.percentiles;
    // Durations mostly made of probe cost carry the call tree's `~` mark.
    let time = |ns: u64| {
        if r.uncertain {
            format!("~{}", duration(ns))
        } else {
            duration(ns)
        }
    };
    [
        r.count.to_string(),
        time(r.total_ns),
        time(r.mean_ns()),
        time(r.min_ns),
        time(p.p50_ns),
        time(p.p90_ns),
        time(p.p99_ns),
        time(p.p999_ns),
        time(r.max_ns),
        r.threads.to_string(),
    ]
}

/// The header lines common to both writers.
fn header(profile: &Profile) -> Vec<String> {
    let mut lines = vec![
        format!(
            "methods: {} instrumented, {} called",
            profile.instrumented,
            profile.called()
        ),
        format!(
            "times: wall time of each outermost invocation, {}",
            times_note(profile)
        ),
    ];
    lines.extend(uncertainty_note(profile).map(|note| format!("marks: {note}")));
    lines.extend(
        crate::view::failed_notes(profile)
            .into_iter()
            .map(|note| format!("classes: {note}")),
    );
    lines.extend(
        crate::view::unreliable_notes(profile)
            .into_iter()
            .map(|n| format!("! {n}")),
    );
    lines
}

/// The text report of a code-region profile.
pub(crate) fn text(profile: &Profile, regions: &[RegionStats]) -> String {
    let mut s = String::from("ferrofluid code-region profile\n");
    for line in header(profile) {
        let _ = writeln!(s, "{line}");
    }
    let rows: Vec<(String, [String; 10])> = regions.iter().map(|r| (r.label(), row(r))).collect();
    let name_width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0).max(6);
    let mut widths = COLUMNS.map(str::len);
    for (_, cells) in &rows {
        for (w, c) in widths.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let _ = write!(s, "\n{:<name_width$}", "region");
    for (c, w) in COLUMNS.iter().zip(widths) {
        let _ = write!(s, "  {c:>w$}");
    }
    s.push('\n');
    for (name, cells) in &rows {
        let _ = write!(s, "{name:<name_width$}");
        for (c, w) in cells.iter().zip(widths) {
            let _ = write!(s, "  {c:>w$}");
        }
        s.push('\n');
    }
    for r in regions.iter().filter(|r| r.count > 0) {
        let _ = writeln!(s, "\nlatency distribution of {}:", r.label());
        let most = r.distribution.iter().map(|b| b.count).max().unwrap_or(0);
        let labels: Vec<String> = r
            .distribution
            .iter()
            .map(|b| format!("<= {}", duration(b.le_ns)))
            .collect();
        let label_width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        for (b, label) in r.distribution.iter().zip(&labels) {
            let bar = bar_len(b.count, most, 40);
            let pad = label_width - label.chars().count();
            let _ = writeln!(
                s,
                "  {label}{:pad$}  {:<40}  {}",
                "",
                "#".repeat(bar),
                b.count
            );
        }
        let last: Vec<String> = r.last_ns.iter().map(|d| duration(*d)).collect();
        let _ = writeln!(
            s,
            "last {} durations, oldest first: {}",
            last.len(),
            last.join(", ")
        );
        let u = &r.uncompensated;
        let _ = writeln!(
            s,
            "uncompensated: total {}, min {}, p50 {}, p99 {}, max {}",
            duration(u.total_ns),
            duration(u.min_ns),
            duration(u.percentiles.p50_ns),
            duration(u.percentiles.p99_ns),
            duration(u.max_ns)
        );
    }
    s
}

/// Bar length for `count` out of `most`, at least 1 for a non-empty bar.
fn bar_len(count: u64, most: u64, width: u64) -> usize {
    if count == 0 || most == 0 {
        return 0;
    }
    ((count * width).div_ceil(most)).clamp(1, width) as usize
}

/// The body of the HTML page of a code-region profile (summary, table, distributions).
pub(crate) fn html(profile: &Profile, regions: &[RegionStats], s: &mut String) {
    s.push_str("<table class=\"summary\">\n");
    for line in header(profile) {
        let (k, v) = line.split_once(": ").unwrap_or(("", &line));
        let _ = writeln!(s, "<tr><td>{}</td><td>{}</td></tr>", escape(k), escape(v));
    }
    s.push_str("</table>\n<h2 id=\"regions\">Regions</h2>\n<table class=\"hot\">\n<thead><tr><th class=\"m\">region</th>");
    for c in COLUMNS {
        let _ = write!(s, "<th data-num=\"1\">{c}</th>");
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for r in regions {
        let label = escape(&r.label());
        let _ = write!(s, "<tr><td class=\"m\" data-v=\"{label}\">{label}</td>");
        let p = &r.percentiles;
        let values = [
            r.count,
            r.total_ns,
            r.mean_ns(),
            r.min_ns,
            p.p50_ns,
            p.p90_ns,
            p.p99_ns,
            p.p999_ns,
            r.max_ns,
            r.threads,
        ];
        for (v, text) in values.iter().zip(row(r)) {
            let _ = write!(s, "<td data-v=\"{v}\">{}</td>", escape(&text));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table>\n");
    for r in regions.iter().filter(|r| r.count > 0) {
        let _ = writeln!(
            s,
            "<h2>Latency distribution of <code>{}</code></h2>\n<table class=\"dist\">",
            escape(&r.label())
        );
        let most = r.distribution.iter().map(|b| b.count).max().unwrap_or(0);
        for b in &r.distribution {
            let _ = writeln!(
                s,
                "<tr><td>&le; {}</td><td><span class=\"bar\" style=\"width:{}px\"></span></td><td>{}</td></tr>",
                escape(&duration(b.le_ns)),
                bar_len(b.count, most, 300),
                b.count
            );
        }
        s.push_str("</table>\n");
        let last: Vec<String> = r.last_ns.iter().map(|d| duration(*d)).collect();
        let _ = writeln!(
            s,
            "<p>Last {} durations, oldest first: {}</p>",
            last.len(),
            escape(&last.join(", "))
        );
        let u = &r.uncompensated;
        let _ = writeln!(
            s,
            "<p>Uncompensated: total {}, min {}, p50 {}, p99 {}, max {}</p>",
            escape(&duration(u.total_ns)),
            escape(&duration(u.min_ns)),
            escape(&duration(u.percentiles.p50_ns)),
            escape(&duration(u.percentiles.p99_ns)),
            escape(&duration(u.max_ns))
        );
    }
}

/// Folded-stacks lines: one per region method with invocations, valued by its total less the
/// time of other region methods that ran inside it, which have their own lines: a line's value
/// is counted once, and the lines add up to the time spent inside regions.
pub(crate) fn collapsed(regions: &[RegionStats]) -> String {
    let mut lines: Vec<String> = regions
        .iter()
        .filter(|r| r.count > 0 && r.own_ns() > 0)
        .map(|r| {
            format!(
                "{}.{} {}",
                r.class.replace([';', '\n', '\r'], "_"),
                r.method,
                r.own_ns()
            )
        })
        .collect();
    lines.sort();
    lines.into_iter().map(|l| l + "\n").collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_their_unit() {
        assert_eq!(duration(850), "850 ns");
        assert_eq!(duration(12_345), "12.3 µs");
        assert_eq!(duration(20_104_000), "20.104 ms");
        assert_eq!(duration(1_500_000_000), "1.500 s");
    }

    #[test]
    fn bars_scale_to_the_largest_and_show_any_count() {
        assert_eq!(bar_len(0, 10, 40), 0);
        assert_eq!(bar_len(1, 1000, 40), 1);
        assert_eq!(bar_len(10, 10, 40), 40);
        assert_eq!(bar_len(5, 10, 40), 20);
    }
}
