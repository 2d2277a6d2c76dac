//! Call-tree profiles of the modes other than `cpu` (`count`, `alloc`, `native`, `sample`),
//! rendered from their declared metrics alone: a self and a total column per metric in the
//! hot spots and the call tree, and a flame graph by any metric. Nothing here knows a mode.

use std::fmt::Write as _;

use ferrofluid_profile::{Metric, MetricTotals, NodeId, NodeKind, Profile, ThreadProfile, Value};

use crate::view::{
    amount, escape, heading, number, percent, plural, row_label, sorted_children_by,
};

/// The lines above the hot spots.
fn header(profile: &Profile, totals: &MetricTotals) -> Vec<(&'static str, String)> {
    let metrics: Vec<String> = totals
        .metrics
        .iter()
        .map(|m| format!("{} ({})", m.name, m.unit))
        .collect();
    let total: Vec<String> = totals
        .metrics
        .iter()
        .zip(&totals.totals)
        .map(|(m, &v)| amount(m, v))
        .collect();
    let mut lines = vec![
        ("metrics", metrics.join(", ")),
        (
            "methods",
            format!(
                "{} instrumented, {} called",
                profile.instrumented,
                profile.called()
            ),
        ),
        ("threads", profile.threads.len().to_string()),
        ("total", total.join(", ")),
    ];
    for note in crate::view::failed_notes(profile) {
        lines.push(("classes", note));
    }
    let lost: u64 = profile.threads.iter().map(|t| t.dropped_events).sum();
    if lost > 0 {
        lines.push((
            "!",
            format!("{lost} events were lost: the threads marked below have inexact counts"),
        ));
    }
    lines
}

/// The notes under a thread's call-tree header.
fn thread_notes(thread: &ThreadProfile) -> Vec<String> {
    let mut notes = Vec::new();
    if thread.overflow_calls > 0 {
        notes.push(format!(
            "{} calls beyond the node budget or depth bound are counted in [overflow] nodes",
            thread.overflow_calls
        ));
    }
    if thread.dropped_events > 0 {
        notes.push(format!(
            "{} events were lost (the profiler's buffer for this thread stayed full): its counts \
             are inexact",
            thread.dropped_events
        ));
    }
    notes
}

/// Per metric of `values` (one thread's, per node): the node's `(self, total)` pair.
fn at(values: &[Vec<Value>], id: NodeId) -> impl Iterator<Item = Value> + '_ {
    values.iter().map(move |v| v[id.index()])
}

/// Column headings: per metric `self M` (and `self %` after the primary's) and `total M`.
fn spot_headings(totals: &MetricTotals) -> Vec<String> {
    let mut cols = Vec::new();
    for (i, m) in totals.metrics.iter().enumerate() {
        cols.push(format!("self {}", heading(m)));
        if i == totals.primary {
            cols.push("self %".to_owned());
        }
        cols.push(format!("total {}", heading(m)));
    }
    cols
}

/// The cells of [`spot_headings`] for one hot spot.
fn spot_cells(totals: &MetricTotals, values: &[Value]) -> Vec<String> {
    let grand = totals.totals.get(totals.primary).copied().unwrap_or(0);
    let mut cells = Vec::new();
    for (i, (m, v)) in totals.metrics.iter().zip(values).enumerate() {
        cells.push(number(m, v.self_value));
        if i == totals.primary {
            cells.push(percent(v.self_value, grand));
        }
        cells.push(number(m, v.total));
    }
    cells
}

fn width(heading: &str) -> usize {
    heading.chars().count().max(10)
}

/// What a thread's tree adds up to, per metric.
fn thread_total(metrics: &[Metric], values: &[Vec<Value>]) -> String {
    metrics
        .iter()
        .zip(values)
        .map(|(m, v)| amount(m, v[NodeId::ROOT.index()].total))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The text report.
pub(crate) fn text(profile: &Profile, cutoff: f64, max_hot_spots: usize) -> String {
    let totals = profile.metric_totals();
    let mut s = format!("ferrofluid {} profile\n", profile.mode);
    for (key, line) in header(profile, &totals) {
        let sep = if key == "!" { " " } else { ": " };
        let _ = writeln!(s, "{key}{sep}{line}");
    }
    let primary = totals.metrics.get(totals.primary);
    let _ = writeln!(
        s,
        "\nHot spots (all threads, by self {})",
        primary.map_or("value", |m| m.name.as_str())
    );
    let cols = spot_headings(&totals);
    for c in &cols {
        let _ = write!(s, "{c:>w$} ", w = width(c));
    }
    s.push_str(" method\n");
    for spot in totals.hot_spots.iter().take(max_hot_spots) {
        for (c, cell) in cols.iter().zip(spot_cells(&totals, &spot.values)) {
            let _ = write!(s, "{cell:>w$} ", w = width(c));
        }
        let _ = writeln!(s, " {}", row_label(profile, spot.kind, ""));
    }
    if totals.hot_spots.len() > max_hot_spots {
        let _ = writeln!(
            s,
            "[{} more methods not shown]",
            totals.hot_spots.len() - max_hot_spots
        );
    }
    for (thread, values) in profile.threads.iter().zip(&totals.threads) {
        text_tree(profile, &totals, thread, values, cutoff, &mut s);
    }
    s
}

fn text_tree(
    profile: &Profile,
    totals: &MetricTotals,
    thread: &ThreadProfile,
    values: &[Vec<Value>],
    cutoff: f64,
    s: &mut String,
) {
    let tree = &thread.tree;
    let primary: &[Value] = values.get(totals.primary).map_or(&[], Vec::as_slice);
    let total_of = |id: NodeId| primary.get(id.index()).map_or(0, |v| v.total);
    let whole = total_of(NodeId::ROOT);
    let _ = writeln!(
        s,
        "\nCall tree of thread {:?} (id {}): {}",
        thread.name,
        thread.id,
        thread_total(&totals.metrics, values)
    );
    for note in thread_notes(thread) {
        let _ = writeln!(s, "  ! {note}");
    }
    let mut cols = vec!["total %".to_owned()];
    for m in &totals.metrics {
        cols.push(format!("total {}", heading(m)));
        cols.push(format!("self {}", heading(m)));
    }
    for c in &cols {
        let _ = write!(s, "{c:>w$} ", w = width(c));
    }
    s.push_str(" method\n");
    let limit = (cutoff * whole as f64).ceil() as u64;
    // Explicit stack of (row, depth).
    let mut stack: Vec<(Row, usize)> = Vec::new();
    let push_children = |stack: &mut Vec<_>, id: NodeId, depth: usize| {
        let kids = sorted_children_by(profile, tree, id, total_of);
        let (shown, hidden): (Vec<NodeId>, Vec<NodeId>) =
            kids.into_iter().partition(|&c| total_of(c) >= limit);
        if !hidden.is_empty() {
            let nodes = hidden.iter().map(|&h| subtree_nodes(tree, h)).sum();
            let total = hidden.iter().map(|&h| total_of(h)).sum();
            stack.push((Row::Hidden { nodes, total }, depth));
        }
        for &c in shown.iter().rev() {
            stack.push((Row::Node(c), depth));
        }
    };
    push_children(&mut stack, NodeId::ROOT, 0);
    while let Some((item, depth)) = stack.pop() {
        let indent = "  ".repeat(depth);
        match item {
            Row::Hidden { nodes, total } => {
                let _ = write!(s, "{:>w$} ", percent(total, whole), w = width(&cols[0]));
                for c in &cols[1..] {
                    let _ = write!(s, "{:>w$} ", "", w = width(c));
                }
                let _ = writeln!(
                    s,
                    " {indent}[{} below {}% hidden]",
                    plural(nodes as u64, "node"),
                    cutoff * 100.0
                );
            }
            Row::Node(id) => {
                let _ = write!(
                    s,
                    "{:>w$} ",
                    percent(total_of(id), whole),
                    w = width(&cols[0])
                );
                for (i, (m, v)) in totals.metrics.iter().zip(at(values, id)).enumerate() {
                    let (ct, cs) = (&cols[1 + 2 * i], &cols[2 + 2 * i]);
                    let _ = write!(s, "{:>w$} ", number(m, v.total), w = width(ct));
                    let _ = write!(s, "{:>w$} ", number(m, v.self_value), w = width(cs));
                }
                let _ = writeln!(
                    s,
                    " {indent}{}",
                    row_label(profile, tree.node(id).kind, &thread.name)
                );
                if tree.node(id).kind != NodeKind::Overflow {
                    push_children(&mut stack, id, depth + 1);
                }
            }
        }
    }
}

/// A line of the text call tree: a node, or the callees below the cutoff.
enum Row {
    Node(NodeId),
    Hidden { nodes: usize, total: u64 },
}

fn subtree_nodes(tree: &ferrofluid_profile::CallTree, id: NodeId) -> usize {
    let mut n = 0;
    let mut stack = vec![id];
    while let Some(c) = stack.pop() {
        n += 1;
        stack.extend_from_slice(tree.node(c).children());
    }
    n
}

/// How much of the HTML page's trees is drawn: nodes below `cutoff` of their thread's total are
/// summarised, nodes at or above `open_above` start expanded.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fold {
    pub cutoff: f64,
    pub open_above: f64,
}

/// The body of the HTML page: summary, flame graph by metric `weight` (if any), hot spots,
/// trees folded as `fold` says.
pub(crate) fn html(profile: &Profile, weight: Option<usize>, fold: Fold, s: &mut String) {
    let totals = profile.metric_totals();
    s.push_str("<table class=\"summary\">\n");
    let _ = writeln!(
        s,
        "<tr><td>Mode</td><td>{}</td></tr>",
        escape(profile.mode.name())
    );
    for (key, line) in header(profile, &totals) {
        let key = match key {
            "!" => "",
            k => k,
        };
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td></tr>",
            upper_first(key),
            escape(&line)
        );
    }
    s.push_str("</table>\n");
    if profile.alloc.is_some() {
        crate::alloc::flames(profile, weight, s);
    } else if let Some(w) = weight {
        let _ = writeln!(
            s,
            "<h2 id=\"flame\">Flame graph</h2>\n<p>Width: {} including callees. Hover a frame \
             for details.</p>",
            escape(&totals.metrics[w].name)
        );
        s.push_str(&crate::flame::svg(profile, w));
        s.push('\n');
    }
    let primary = totals.metrics.get(totals.primary);
    let _ = writeln!(
        s,
        "<h2 id=\"hot\">Hot spots</h2>\n<p>All threads, by self {}. Click a column to sort.</p>",
        escape(primary.map_or("value", |m| m.name.as_str()))
    );
    s.push_str("<table class=\"hot\">\n<thead><tr><th class=\"m\">Method</th>");
    for (i, c) in spot_headings(&totals).iter().enumerate() {
        // The rows come sorted by the primary metric's self value.
        let class = if i == 2 * totals.primary {
            " class=\"desc\""
        } else {
            ""
        };
        let _ = write!(
            s,
            "<th data-num=\"1\"{class}>{}</th>",
            escape(&upper_first(c))
        );
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for spot in &totals.hot_spots {
        let name = escape(&row_label(profile, spot.kind, ""));
        let _ = write!(
            s,
            "<tr><td class=\"m\" data-v=\"{name}\" title=\"{name}\">{name}</td>"
        );
        let mut raw = Vec::new();
        for (i, v) in spot.values.iter().enumerate() {
            raw.push(v.self_value.to_string());
            if i == totals.primary {
                let grand = totals.totals[i];
                raw.push(if grand == 0 {
                    "0.0000".to_owned()
                } else {
                    format!("{:.4}", v.self_value as f64 * 100.0 / grand as f64)
                });
            }
            raw.push(v.total.to_string());
        }
        for (v, cell) in raw.iter().zip(spot_cells(&totals, &spot.values)) {
            let _ = write!(s, "<td data-v=\"{v}\">{cell}</td>");
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table>\n");
    s.push_str("<h2 id=\"tree\">Call tree</h2>\n");
    for (thread, values) in profile.threads.iter().zip(&totals.threads) {
        html_tree(profile, fold, &totals, thread, values, s);
    }
}

fn html_tree(
    profile: &Profile,
    fold: Fold,
    totals: &MetricTotals,
    thread: &ThreadProfile,
    values: &[Vec<Value>],
    s: &mut String,
) {
    let tree = &thread.tree;
    let primary: &[Value] = values.get(totals.primary).map_or(&[], Vec::as_slice);
    let total_of = |id: NodeId| primary.get(id.index()).map_or(0, |v| v.total);
    let whole = total_of(NodeId::ROOT);
    let limit = (fold.cutoff * whole as f64).ceil() as u64;
    let open_limit = fold.open_above * whole as f64;
    let _ = writeln!(
        s,
        "<div class=\"tree\">\n<details open><summary><b>Thread {}</b> (id {}): {}</summary>",
        escape(&thread.name),
        thread.id,
        escape(&thread_total(&totals.metrics, values))
    );
    for note in thread_notes(thread) {
        let _ = writeln!(s, "<div class=\"warn\">{}</div>", escape(&note));
    }
    enum Item {
        Node(NodeId),
        Hidden(usize, u64),
        Close,
    }
    let mut stack = vec![Item::Close];
    let children = |id: NodeId, stack: &mut Vec<Item>| {
        let kids = sorted_children_by(profile, tree, id, total_of);
        let hidden: Vec<NodeId> = kids
            .iter()
            .copied()
            .filter(|&c| total_of(c) < limit)
            .collect();
        if !hidden.is_empty() {
            let total = hidden.iter().map(|&h| total_of(h)).sum();
            stack.push(Item::Hidden(hidden.len(), total));
        }
        for &c in kids.iter().rev() {
            if total_of(c) >= limit {
                stack.push(Item::Node(c));
            }
        }
    };
    children(NodeId::ROOT, &mut stack);
    let primary_metric = totals.metrics.get(totals.primary);
    while let Some(item) = stack.pop() {
        match item {
            Item::Close => s.push_str("</details>\n"),
            Item::Hidden(n, total) => {
                let _ = writeln!(
                    s,
                    "<div class=\"leaf hidden\">{n} callees below {}% hidden ({})</div>",
                    fold.cutoff * 100.0,
                    escape(&primary_metric.map_or_else(String::new, |m| amount(m, total)))
                );
            }
            Item::Node(id) => {
                let node = tree.node(id);
                let total = total_of(id);
                let pct = if whole == 0 {
                    0.0
                } else {
                    total as f64 * 100.0 / whole as f64
                };
                let values: Vec<String> = totals
                    .metrics
                    .iter()
                    .zip(at(values, id))
                    .map(|(m, v)| {
                        format!("{} (self {})", amount(m, v.total), number(m, v.self_value))
                    })
                    .collect();
                let line = format!(
                    "<span class=\"pct\">{}</span><span class=\"bar\" style=\"width:{:.1}px\"></span>\
                     <span class=\"ms\">{}</span> {}",
                    percent(total, whole),
                    pct * 0.8,
                    escape(&values.join(", ")),
                    escape(&row_label(profile, node.kind, &thread.name))
                );
                if node.children().is_empty() || node.kind == NodeKind::Overflow {
                    let _ = writeln!(s, "<div class=\"leaf\">{line}</div>");
                } else {
                    let open = if total as f64 >= open_limit {
                        " open"
                    } else {
                        ""
                    };
                    let _ = writeln!(s, "<details{open}><summary>{line}</summary>");
                    stack.push(Item::Close);
                    children(id, &mut stack);
                }
            }
        }
    }
    s.push_str("</div>\n");
}

fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| {
        c.to_uppercase().chain(chars).collect::<String>()
    })
}
