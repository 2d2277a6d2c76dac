//! The diff as an HTML page around inferno's differential flame graph.

use std::collections::BTreeMap;
use std::io::Write;

use crate::diff::compare::ProfileDiff;
use crate::diff::text::write_text;
use crate::diff::thresholds::Thresholds;
use crate::ReportError;

/// The frame name of a context path entry: `class.method`, without the descriptor (whose
/// `;` would split a folded stack).
fn frame_of(signature: &str) -> &str {
    signature.split('(').next().unwrap_or(signature)
}

/// The differential folded stacks of the primary metric: `stack base new` per stack, as
/// inferno's differential flame graph reads them (widths from the new profile, red where it
/// grew, blue where it shrank).
pub fn differential_lines(diff: &ProfileDiff) -> Vec<String> {
    let primary = diff
        .metrics
        .iter()
        .position(|m| m.name == diff.mode.primary_metric())
        .unwrap_or(0);
    let mut stacks: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for c in &diff.contexts {
        let Some(v) = c.values.get(primary) else {
            continue;
        };
        if v.base == 0 && v.new == 0 {
            continue;
        }
        let stack: Vec<&str> = c.path.iter().map(|f| frame_of(f)).collect();
        let e = stacks.entry(stack.join(";")).or_default();
        e.0 += v.base;
        e.1 += v.new;
    }
    stacks
        .into_iter()
        .map(|(stack, (a, b))| format!("{stack} {a} {b}"))
        .collect()
}

/// The diff as one self-contained HTML page: inferno's differential flame graph of the
/// primary metric, then the text report's tables.
pub fn write_html(
    diff: &ProfileDiff,
    thresholds: &Thresholds,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    use crate::view::escape;
    let lines = differential_lines(diff);
    let metric = diff
        .metrics
        .iter()
        .find(|m| m.name == diff.mode.primary_metric())
        .or(diff.metrics.first());
    let mut svg = Vec::new();
    if !lines.is_empty() {
        let mut opt = inferno::flamegraph::Options::default();
        opt.title = format!(
            "Differential flame graph: {}",
            metric.map_or("", |m| m.name.as_str())
        );
        opt.subtitle = Some("widths: new profile; red: grew, blue: shrank".to_owned());
        opt.count_name = metric.map_or_else(String::new, |m| {
            if m.is_time() {
                "ns".to_owned()
            } else {
                m.name.clone()
            }
        });
        opt.deterministic = true;
        inferno::flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), &mut svg)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    let mut text = Vec::new();
    write_text(diff, thresholds, &mut text)?;
    let text = String::from_utf8_lossy(&text);
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>ferrofluid diff ({mode})</title>\
         <style>body{{font-family:sans-serif;margin:1em}}pre{{font-size:13px;overflow-x:auto}}\
         body>svg{{display:block;width:100%}}</style>\
         </head><body>\n<h1>ferrofluid diff of two {mode} profiles</h1>\n",
        mode = diff.mode
    )?;
    if svg.is_empty() {
        writeln!(out, "<p>Neither profile has a value to draw.</p>")?;
    } else {
        // Inline, without the XML prolog and doctype an HTML body does not take.
        let svg = String::from_utf8_lossy(&svg);
        out.write_all(svg[svg.find("<svg").unwrap_or(0)..].as_bytes())?;
    }
    writeln!(out, "\n<pre>{}</pre>\n</body></html>", escape(&text))?;
    Ok(())
}
