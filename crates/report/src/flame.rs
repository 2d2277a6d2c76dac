//! A flame graph as inline SVG, drawn from the call trees (no external tool needed).
//! Threads form the base row above "all"; widths are the totals of one of the profile's
//! metrics: compensated wall time, or thread CPU time for the second graph of a CPU profile
//! recorded with the `cpu` option; bytecodes, bytes... in the other modes.

use std::fmt::Write as _;

use ferrofluid_profile::{Metric, NodeId, NodeKind, Profile, Value};

use crate::view::{escape, frame, label, percent, sorted_children_by, tip_amount};

const WIDTH: f64 = 1200.0;
const ROW: f64 = 17.0;
/// Frames narrower than this (px) are not drawn, nor are their callees.
const MIN_WIDTH: f64 = 0.2;
/// Approximate glyph width of the 11px monospace font, for label truncation.
const CHAR: f64 = 6.7;

struct Rect {
    depth: usize,
    x: f64,
    w: f64,
    name: String,
    tip: String,
    fill: String,
}

/// Renders the flame graph of `profile` as an `<svg>` element, widths by the totals of
/// metric `metric` of [`Profile::metrics`].
pub(crate) fn svg(profile: &Profile, metric: usize) -> String {
    let metrics = profile.metrics();
    let weight = metrics
        .get(metric)
        .cloned()
        .unwrap_or_else(|| Metric::new("", ""));
    // The other metrics a tooltip names (counts and sizes; the times are the graph's own).
    let shown: Vec<usize> = (0..metrics.len())
        .filter(|&i| i != metric && !metrics[i].is_time())
        .collect();
    let per_thread: Vec<Vec<Value>> = profile
        .threads
        .iter()
        .map(|t| profile.metric_values(&t.tree, metric))
        .collect();
    let others: Vec<Vec<Vec<Value>>> = profile
        .threads
        .iter()
        .map(|t| {
            shown
                .iter()
                .map(|&i| profile.metric_values(&t.tree, i))
                .collect()
        })
        .collect();
    let grand: u64 = per_thread.iter().map(|t| t[0].total).sum();
    let scale = if grand == 0 {
        0.0
    } else {
        WIDTH / grand as f64
    };
    let mut rects = vec![Rect {
        depth: 0,
        x: 0.0,
        w: WIDTH,
        name: "all".to_owned(),
        tip: format!("all threads: {}", tip_amount(&weight, grand)),
        fill: "rgb(200,200,200)".to_owned(),
    }];
    let mut x0 = 0.0;
    for ((thread, times), others) in profile.threads.iter().zip(&per_thread).zip(&others) {
        let tree = &thread.tree;
        // (node, depth, x)
        let mut stack = vec![(NodeId::ROOT, 1usize, x0)];
        while let Some((id, depth, x)) = stack.pop() {
            let w = times[id.index()].total as f64 * scale;
            if w < MIN_WIDTH {
                continue;
            }
            let kind = tree.node(id).kind;
            let name = frame(profile, kind, &thread.name);
            // Where its thread was found blocked: its self time is waiting, drawn cold.
            let idle = thread.waiting.as_ref().is_some_and(|w| w.node == Some(id));
            let mut tip = format!(
                "{} — {}, {}; self {}{}",
                label(profile, kind, &thread.name),
                tip_amount(&weight, times[id.index()].total),
                percent(times[id.index()].total, grand),
                tip_amount(&weight, times[id.index()].self_value),
                if idle { " (idle: waiting)" } else { "" },
            );
            for (&i, values) in shown.iter().zip(others) {
                let _ = write!(
                    tip,
                    "; {}",
                    tip_amount(&metrics[i], values[id.index()].self_value)
                );
            }
            rects.push(Rect {
                depth,
                x,
                w,
                fill: if idle {
                    IDLE_FILL.to_owned()
                } else {
                    color(kind, &name)
                },
                name,
                tip,
            });
            let mut cx = x;
            let mut kids = Vec::new();
            for c in sorted_children_by(profile, tree, id, |n| times[n.index()].total) {
                kids.push((c, depth + 1, cx));
                cx += times[c.index()].total as f64 * scale;
            }
            stack.extend(kids.into_iter().rev());
        }
        x0 += times[0].total as f64 * scale;
    }
    let max_depth = rects.iter().map(|r| r.depth).max().unwrap_or(0);
    let height = (max_depth + 1) as f64 * ROW;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg class="flame" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="monospace" font-size="11">"#
    );
    for r in &rects {
        // Flame graphs grow upwards: depth 0 at the bottom.
        let y = height - (r.depth + 1) as f64 * ROW;
        let chars = ((r.w - 6.0) / CHAR).floor().max(0.0) as usize;
        let text = truncate(&r.name, chars);
        let _ = write!(
            s,
            r#"<g><title>{}</title><rect x="{:.2}" y="{:.0}" width="{:.2}" height="{:.0}" fill="{}" rx="2"/>"#,
            escape(&r.tip),
            r.x,
            y,
            r.w,
            ROW - 1.0,
            r.fill
        );
        if !text.is_empty() {
            let _ = write!(
                s,
                r#"<text x="{:.2}" y="{:.0}">{}</text>"#,
                r.x + 3.0,
                y + 12.0,
                escape(&text)
            );
        }
        s.push_str("</g>\n");
    }
    s.push_str("</svg>");
    s
}

fn truncate(name: &str, chars: usize) -> String {
    let n = name.chars().count();
    if n <= chars {
        name.to_owned()
    } else if chars < 4 {
        String::new()
    } else {
        let mut t: String = name.chars().take(chars - 2).collect();
        t.push_str("..");
        t
    }
}

/// The colour of a frame where its thread was found blocked: cold, unlike every other frame.
const IDLE_FILL: &str = "rgb(150,180,215)";

/// Warm colours as in flamegraph.pl, derived from the frame name so they are stable.
fn color(kind: NodeKind, name: &str) -> String {
    match kind {
        NodeKind::Thread => "rgb(180,190,210)".to_owned(),
        NodeKind::Overflow => "rgb(190,120,220)".to_owned(),
        NodeKind::Method(_) => {
            // FNV-1a: a fixed hash, unlike std's randomly seeded one.
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in name.bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
            let v = |shift: u32| ((h >> shift) & 0xff) as f64 / 255.0;
            format!(
                "rgb({},{},{})",
                205 + (50.0 * v(0)) as u32,
                (230.0 * v(8)) as u32,
                (55.0 * v(16)) as u32
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_truncated_to_the_frame_width() {
        assert_eq!(truncate("com.acme.Foo.bar", 20), "com.acme.Foo.bar");
        assert_eq!(truncate("com.acme.Foo.bar", 8), "com.ac..");
        assert_eq!(truncate("com.acme.Foo.bar", 3), "");
    }
}
