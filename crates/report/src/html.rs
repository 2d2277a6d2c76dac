//! One self-contained HTML page: summary, flame graph (inline SVG), sortable hot-spots
//! table and an expandable call tree (`<details>`, works without JavaScript). Nothing
//! is loaded from the network.

use std::fmt::Write as _;
use std::io::Write;

use ferrofluid_profile::{
    Mode, NodeId, NodeKind, Profile, ProfileTotals, ThreadProfile, ThreadTimes,
};

use crate::view::{
    cpu_ms, cpu_note, escape, hot_spots_title, idle_line, lost_notes, ms, ms_marked, percent,
    row_label, sorted_children, subtracted_note, thread_cpu_note, times_note, tree_label,
    uncertainty_note, waiting_note,
};
use crate::{flame, Report, ReportError, Weight};

/// Options of the HTML report.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HtmlReport {
    /// Page title.
    pub title: String,
    /// Tree nodes below this fraction of their thread's total are summarised, which
    /// bounds the page size for huge trees.
    pub cutoff: f64,
    /// Tree nodes at or above this fraction start expanded.
    pub open_above: f64,
    /// Rank the time of threads found blocked (idle) with the rest in the hot spots, instead
    /// of listing it apart.
    pub include_idle: bool,
    /// Virtual threads merged into one entry (the default) or one by one.
    pub virtual_threads: crate::VirtualThreads,
    /// The metric the flame graph of a profile of another mode than `cpu` weighs by (a CPU
    /// profile draws wall time, and thread CPU time when it has it).
    pub weight: Weight,
}

impl HtmlReport {
    /// The same report, its flame graph weighed by `weight` (profiles of other modes than
    /// `cpu`).
    pub fn with_weight(self, weight: Weight) -> Self {
        Self { weight, ..self }
    }

    /// The same report, with idle time ranked in the hot spots when `include`.
    pub fn with_idle(self, include: bool) -> Self {
        Self {
            include_idle: include,
            ..self
        }
    }

    /// The same report, showing virtual threads as `mode` says.
    pub fn with_virtual_threads(self, mode: crate::VirtualThreads) -> Self {
        Self {
            virtual_threads: mode,
            ..self
        }
    }
}

impl Default for HtmlReport {
    fn default() -> Self {
        Self {
            title: "ferrofluid CPU profile".to_owned(),
            cutoff: 0.0005,
            open_above: 0.05,
            include_idle: false,
            virtual_threads: crate::VirtualThreads::Merged,
            weight: Weight::Primary,
        }
    }
}

const STYLE: &str = r#"body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
.summary td{padding:0 1em 0 0}
svg.flame{max-width:100%;height:auto;display:block}
svg.flame g:hover rect{stroke:#000;stroke-width:.5}
table.hot{border-collapse:collapse;font-size:.9em}
table.hot th,table.hot td{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}
table.hot td.m,table.hot th.m{text-align:left;font-family:monospace}
table.hot td.m{max-width:40em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
table.hot th{cursor:pointer;background:#f3f3f3;user-select:none;white-space:nowrap}
table.hot th.asc::after{content:" \25B2"}table.hot th.desc::after{content:" \25BC"}
.tree{font-size:.9em}.tree details,.tree .leaf{margin-left:1.2em}
.tree summary,.tree .leaf{white-space:nowrap;font-family:monospace}
.tree .leaf{padding-left:1.1em}
.tree .pct{display:inline-block;width:4.5em;text-align:right}
.tree .bar{display:inline-block;height:.7em;background:#e8743b;margin:0 .5em;vertical-align:middle}
.tree .ms{color:#555}.tree .hidden{color:#888;font-style:italic}
.warn{color:#a40}
table.dist td{padding:1px 6px;font-size:.9em;white-space:nowrap}
table.dist .bar{display:inline-block;height:.8em;background:#e8743b}"#;

const SCRIPT: &str = r#"document.querySelectorAll('table.hot').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
    var asc=th.classList.contains('asc')?false:th.classList.contains('desc')?true:!th.dataset.num;
    t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc')});
    th.classList.add(asc?'asc':'desc');
    var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);
    rows.sort(function(x,y){var a=x.cells[i].dataset.v,c=y.cells[i].dataset.v;
      var r=th.dataset.num?(parseFloat(a)-parseFloat(c)):a.localeCompare(c);return asc?r:-r});
    rows.forEach(function(r){b.appendChild(r)});});});});"#;

impl Report for HtmlReport {
    fn write(&self, profile: &Profile, out: &mut dyn Write) -> Result<(), ReportError> {
        let profile = &*crate::group_virtual_threads(profile, self.virtual_threads);
        let mut s = String::new();
        if profile.mode != Mode::Cpu {
            let title = if self.title != HtmlReport::default().title {
                escape(&self.title)
            } else if profile.mode == Mode::Region {
                "ferrofluid code-region profile".to_owned()
            } else {
                format!("ferrofluid {} profile", profile.mode)
            };
            let _ = write!(
                s,
                "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
                 <title>{title}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
            );
            self.interactive(profile, &mut s);
            if profile.mode == Mode::Region {
                let regions = profile.regions.as_deref().unwrap_or_default();
                crate::region::html(profile, regions, &mut s);
            } else {
                if let Some(alloc) = &profile.alloc {
                    crate::alloc::html(alloc, &mut s);
                }
                if profile.native.is_some() {
                    crate::native::html(profile, &mut s);
                }
                let fold = crate::metrics::Fold {
                    cutoff: self.cutoff,
                    open_above: self.open_above,
                };
                crate::metrics::html(profile, self.weight.resolve(profile), fold, &mut s);
            }
            let _ = write!(s, "<script>\n{SCRIPT}\n</script>\n</body>\n</html>\n");
            out.write_all(s.as_bytes())?;
            return Ok(());
        }
        let title = escape(&self.title);
        let _ = write!(
            s,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>{title}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
        );
        let totals = profile.totals(self.include_idle);
        self.summary(profile, &totals, &mut s);
        self.interactive(profile, &mut s);
        s.push_str("<h2 id=\"flame\">Flame graph</h2>\n");
        s.push_str("<p>Width: time including callees. Hover a frame for details.</p>\n");
        let metric = |w: Weight| w.resolve(profile).unwrap_or(usize::MAX);
        s.push_str(&flame::svg(profile, metric(Weight::Wall)));
        s.push('\n');
        if profile.has_cpu() {
            s.push_str("<h2 id=\"flame-cpu\">Flame graph, thread CPU time</h2>\n");
            s.push_str(
                "<p>Width: thread CPU time including callees (a method that waits is narrow here).</p>\n",
            );
            s.push_str(&flame::svg(profile, metric(Weight::Cpu)));
            s.push('\n');
        }
        self.hot_spots(profile, &totals, &mut s);
        s.push_str("<h2 id=\"tree\">Call tree</h2>\n");
        for (thread, times) in profile.threads.iter().zip(&totals.threads) {
            self.tree(profile, thread, times, &mut s);
        }
        let _ = write!(s, "<script>\n{SCRIPT}\n</script>\n</body>\n</html>\n");
        out.write_all(s.as_bytes())?;
        Ok(())
    }
}

impl HtmlReport {
    /// The interactive view (`crate::app`), the profile written into the page: threads merged,
    /// zoom, search, callers' view; large profiles thinned by the cutoff.
    fn interactive(&self, profile: &Profile, s: &mut String) {
        let mut doc = crate::app::document(profile);
        let elided = crate::app::prune(&mut doc, self.cutoff);
        s.push_str("<h2 id=\"view\">Interactive view</h2>\n<p>All threads merged (one tower each, or one \
                    thread, on demand). Click a frame to zoom in, the grey frames above it to zoom out; \
                    search highlights what matches and says its share.");
        if elided > 0 {
            let _ = write!(
                s,
                " {elided} light callees (under {} of the whole) are lumped per caller.",
                percent_of(self.cutoff)
            );
        }
        s.push_str("</p>\n");
        s.push_str(&crate::app::embedded(&doc));
    }

    fn summary(&self, profile: &Profile, totals: &ProfileTotals, s: &mut String) {
        let grand = totals.total_ns;
        s.push_str("<table class=\"summary\">\n");
        let mut row = |k: &str, v: String| {
            let _ = writeln!(s, "<tr><td>{k}</td><td>{}</td></tr>", escape(&v));
        };
        row("Methods", crate::view::methods_note(profile));
        row("Threads", profile.threads.len().to_string());
        for note in crate::view::failed_notes(profile) {
            row("Classes", note);
        }
        row("Total", format!("{} ms", ms(grand)));
        if totals.idle_ns > 0 {
            row(
                "Idle",
                format!(
                    "{} ms in {} found blocked when the profile was taken",
                    ms(totals.idle_ns),
                    crate::view::plural(totals.idle_threads(), "thread")
                ),
            );
        }
        row("Times", times_note(profile));
        if let Some(note) = uncertainty_note(profile) {
            row("", note);
        }
        if let Some(note) = cpu_note(profile) {
            row("CPU times", note);
        }
        for note in crate::view::unreliable_notes(profile) {
            let _ = writeln!(
                s,
                "<tr><td></td><td class=\"warn\">{}</td></tr>",
                escape(&note)
            );
        }
        s.push_str("</table>\n");
    }

    fn hot_spots(&self, profile: &Profile, totals: &ProfileTotals, s: &mut String) {
        let grand = totals.hot_ns();
        let cpu = profile.has_cpu();
        let title = if totals.idle.is_empty() {
            "All threads".to_owned()
        } else {
            let title = hot_spots_title(totals);
            upper_first(
                title
                    .strip_prefix("Hot spots (")
                    .and_then(|t| t.strip_suffix(')'))
                    .unwrap_or(&title),
            )
        };
        let _ = writeln!(
            s,
            "<h2 id=\"hot\">Hot spots</h2>\n<p>{}. Click a column to sort.</p>",
            escape(&title)
        );
        s.push_str(
            "<table class=\"hot\">\n<thead><tr><th class=\"m\">Method</th>\
             <th data-num=\"1\" class=\"desc\">Self ms</th><th data-num=\"1\">Self %</th>\
             <th data-num=\"1\">Calls</th><th data-num=\"1\">Avg self µs</th>\
             <th data-num=\"1\">Total ms</th>",
        );
        if cpu {
            s.push_str("<th data-num=\"1\">Self CPU ms</th><th data-num=\"1\">CPU ms</th>");
        }
        s.push_str("</tr></thead>\n<tbody>\n");
        for spot in &totals.hot_spots {
            let name = escape(&row_label(profile, spot.kind, ""));
            let pct = if grand == 0 {
                0.0
            } else {
                spot.self_ns as f64 * 100.0 / grand as f64
            };
            let cpu_cells = if cpu {
                let cell = |ns: Option<u64>, uncertain: bool| {
                    format!(
                        "<td data-v=\"{}\">{}</td>",
                        ns.unwrap_or(0),
                        cpu_ms(ns, uncertain)
                    )
                };
                cell(
                    spot.cpu.map(|c| c.self_ns),
                    spot.cpu.is_some_and(|c| c.self_uncertain()),
                ) + &cell(
                    spot.cpu.map(|c| c.total_ns),
                    spot.cpu.is_some_and(|c| c.total_uncertain()),
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "<tr><td class=\"m\" data-v=\"{name}\" title=\"{name}\">{name}</td><td data-v=\"{}\">{}</td>\
                 <td data-v=\"{pct:.4}\">{}</td><td data-v=\"{}\">{}</td>\
                 <td data-v=\"{:.3}\">{:.3}</td><td data-v=\"{}\">{}</td>{cpu_cells}</tr>",
                spot.self_ns,
                ms_marked(spot.self_ns, spot.self_uncertain()),
                percent(spot.self_ns, grand),
                spot.calls,
                spot.calls,
                spot.avg_self_ns(),
                spot.avg_self_ns() / 1000.0,
                spot.total_ns,
                ms_marked(spot.total_ns, spot.total_uncertain()),
            );
        }
        s.push_str("</tbody>\n</table>\n");
        if !totals.idle.is_empty() {
            let _ = writeln!(
                s,
                "<h2 id=\"idle\">Idle</h2>\n<p>Threads found blocked when the profile was taken, \
                 by time waiting ({}).</p>\n<table class=\"hot\">\n<thead><tr>\
                 <th data-num=\"1\" class=\"desc\">Idle ms</th><th class=\"m\">Where</th>\
                 </tr></thead>\n<tbody>",
                if totals.idle_included {
                    "ranked in the hot spots above too"
                } else {
                    "left out of the hot spots above"
                }
            );
            for spot in &totals.idle {
                let line = escape(&idle_line(profile, spot));
                let _ = writeln!(
                    s,
                    "<tr><td data-v=\"{}\">{}</td><td class=\"m\" data-v=\"{line}\">{line}</td></tr>",
                    spot.idle_ns,
                    ms(spot.idle_ns)
                );
            }
            s.push_str("</tbody>\n</table>\n");
        }
    }

    fn tree(
        &self,
        profile: &Profile,
        thread: &ThreadProfile,
        thread_times: &ThreadTimes,
        s: &mut String,
    ) {
        let tree = &thread.tree;
        let times = &thread_times.times;
        let cpu = &thread_times.cpu;
        let whole = times[0].total_ns;
        let limit = (self.cutoff * whole as f64).ceil() as u64;
        let open_limit = self.open_above * whole as f64;
        let _ = write!(
            s,
            "<div class=\"tree\">\n<details open><summary><b>Thread {}</b> (id {}): {} ms",
            escape(&thread.name),
            thread.id,
            ms(whole)
        );
        s.push_str(&thread_cpu_note(thread, cpu));
        s.push_str(&subtracted_note(
            profile,
            &times[0],
            tree.node(tree.root()).total_ns,
        ));
        s.push_str("</summary>\n");
        if let Some(note) = waiting_note(thread) {
            let _ = writeln!(s, "<div class=\"warn\">{}</div>", escape(&note));
        }
        // Fixed text: nothing in it to escape.
        for note in lost_notes(thread) {
            let _ = writeln!(s, "<div class=\"warn\">{note}</div>");
        }
        // Explicit stack; `Close` ends a <details> after its children.
        enum Item {
            Node(NodeId),
            Hidden(usize, u64),
            Close,
        }
        let mut stack = vec![Item::Close];
        let children = |id: NodeId, stack: &mut Vec<Item>| {
            let kids = sorted_children(profile, tree, id, times);
            let hidden: Vec<NodeId> = kids
                .iter()
                .copied()
                .filter(|c| times[c.index()].total_ns < limit)
                .collect();
            if !hidden.is_empty() {
                let total = hidden.iter().map(|h| times[h.index()].total_ns).sum();
                stack.push(Item::Hidden(hidden.len(), total));
            }
            for &c in kids.iter().rev() {
                if times[c.index()].total_ns >= limit {
                    stack.push(Item::Node(c));
                }
            }
        };
        children(NodeId::ROOT, &mut stack);
        while let Some(item) = stack.pop() {
            match item {
                Item::Close => s.push_str("</details>\n"),
                Item::Hidden(n, total) => {
                    let _ = writeln!(
                        s,
                        "<div class=\"leaf hidden\">{n} callees below {}% hidden ({} ms)</div>",
                        self.cutoff * 100.0,
                        ms(total)
                    );
                }
                Item::Node(id) => {
                    let node = tree.node(id);
                    let t = times[id.index()];
                    let line = tree_line(profile, thread, thread_times, id, whole);
                    let leaf = node.children().is_empty() || node.kind == NodeKind::Overflow;
                    if leaf {
                        let _ = writeln!(s, "<div class=\"leaf\">{line}</div>");
                    } else {
                        let open = if t.total_ns as f64 >= open_limit {
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
}

/// One node's line in the HTML call tree: its share of the thread (`whole`), a bar, its times,
/// CPU time, calls and name.
fn tree_line(
    profile: &Profile,
    thread: &ThreadProfile,
    thread_times: &ThreadTimes,
    id: NodeId,
    whole: u64,
) -> String {
    let node = thread.tree.node(id);
    let t = thread_times.times[id.index()];
    let cpu = &thread_times.cpu;
    let pct = if whole == 0 {
        0.0
    } else {
        t.total_ns as f64 * 100.0 / whole as f64
    };
    let cpu_part = cpu[id.index()]
        .map(|c| format!(", CPU {} ms", ms_marked(c.total_ns, c.total_uncertain())))
        .unwrap_or_default();
    format!(
        "<span class=\"pct\">{}</span><span class=\"bar\" style=\"width:{:.1}px\"></span>\
         <span class=\"ms\">{} ms, self {} ms{cpu_part}, {} calls</span> {}",
        percent(t.total_ns, whole),
        pct * 0.8,
        ms_marked(t.total_ns, t.total_uncertain()),
        ms_marked(t.self_ns, t.self_uncertain()),
        node.calls,
        escape(&tree_label(profile, thread, id))
    )
}

/// `text` with its first letter in upper case.
/// `fraction` as a percentage for prose.
fn percent_of(fraction: f64) -> String {
    format!("{}%", fraction * 100.0)
}

fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| {
        c.to_uppercase().chain(chars).collect::<String>()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
    }
}
