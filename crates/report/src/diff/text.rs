//! The diff as text, and the one-line description of a change the other formats reuse.

use std::io::Write;

use ferrofluid_profile::metric::TIME;
use ferrofluid_profile::Metric;

use crate::diff::compare::{Change, ContextDiff, Exceeding, MethodDiff, Presence, ProfileDiff};
use crate::diff::thresholds::Thresholds;
use crate::view::ms;
use crate::ReportError;

/// A signed change of `metric`: `+3`, `-1.250 ms`.
fn signed(metric: &Metric, d: i128) -> String {
    let sign = if d < 0 { "-" } else { "+" };
    let v = u64::try_from(d.unsigned_abs()).unwrap_or(u64::MAX);
    if metric.is_time() {
        format!("{sign}{} ms", ms(v))
    } else {
        format!("{sign}{v}")
    }
}

/// `10 -> 11 (+1)`, `1.000 ms -> 1.200 ms (+0.200 ms ±0.010 ms)`.
pub fn describe(metric: &Metric, c: &Change) -> String {
    let value = |v: u64| {
        if metric.is_time() {
            format!("{} ms", ms(v))
        } else {
            v.to_string()
        }
    };
    let noise = if c.noise > 0 {
        format!(" ±{} ms", ms(c.noise))
    } else {
        String::new()
    };
    format!(
        "{} -> {} ({}{noise})",
        value(c.base),
        value(c.new),
        signed(metric, c.delta())
    )
}

/// How many of the exceeding changes a report lists.
pub const MOST_MOVED: usize = 20;

/// One change beyond the thresholds as the text report and `ferrofluid diff` list it: kind,
/// metric, the change, the context or method.
pub fn moved_line(diff: &ProfileDiff, e: &Exceeding) -> String {
    let metric = diff
        .metrics
        .iter()
        .find(|m| m.name == e.metric)
        .expect("a compared metric");
    format!(
        "{} {}: {}   {}",
        e.kind,
        e.metric,
        describe(metric, &e.change),
        e.name
    )
}

/// The diff as text: totals, the changes past the thresholds (the contexts that moved most
/// first), new and vanished contexts, and every method that changed.
pub fn write_text(
    diff: &ProfileDiff,
    thresholds: &Thresholds,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    write_totals(diff, thresholds, out)?;
    write_exceeding(diff, &diff.exceeding(thresholds), out)?;
    for presence in [Presence::New, Presence::Vanished] {
        write_contexts(diff, presence, out)?;
    }
    write_changed_methods(diff, out)
}

/// The header: each metric's totals and threshold, and what is not compared.
fn write_totals(
    diff: &ProfileDiff,
    thresholds: &Thresholds,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    writeln!(
        out,
        "ferrofluid diff of two {} profiles (threads merged)",
        diff.mode
    )?;
    for (m, c) in diff.metrics.iter().zip(&diff.totals) {
        writeln!(
            out,
            "  total {}: {}   threshold: {}",
            m.name,
            describe(m, c),
            thresholds.of(&m.name)
        )?;
    }
    if diff.metrics.iter().any(|m| m.name == TIME) {
        writeln!(
            out,
            "  ± is the probe compensation's uncertainty in both profiles; variation between runs is not included"
        )?;
    }
    if !diff.not_compared.is_empty() {
        writeln!(
            out,
            "  not compared (in one profile only): {}",
            diff.not_compared.join(", ")
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// The verdict: the changes past the thresholds, the [`MOST_MOVED`] that moved most.
fn write_exceeding(
    diff: &ProfileDiff,
    exceeding: &[Exceeding],
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    if exceeding.is_empty() {
        writeln!(out, "No change beyond the thresholds.")?;
    } else {
        let contexts = exceeding.iter().filter(|e| e.kind == "context").count();
        let methods = exceeding.len() - contexts;
        writeln!(
            out,
            "Changes beyond the thresholds: {contexts} in contexts, {methods} in methods; moved most:"
        )?;
        for e in exceeding.iter().take(MOST_MOVED) {
            writeln!(out, "  {}", moved_line(diff, e))?;
        }
        if exceeding.len() > MOST_MOVED {
            writeln!(out, "  ... and {} more", exceeding.len() - MOST_MOVED)?;
        }
    }
    Ok(())
}

/// The contexts of one profile only (`presence`: new or vanished), with their values there.
fn write_contexts(
    diff: &ProfileDiff,
    presence: Presence,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let title = if presence == Presence::New {
        "New contexts"
    } else {
        "Vanished contexts"
    };
    let list: Vec<&ContextDiff> = diff
        .contexts
        .iter()
        .filter(|c| c.presence == presence)
        .collect();
    if list.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n{title} ({}):", list.len())?;
    for c in list {
        let values: Vec<String> = diff
            .metrics
            .iter()
            .zip(&c.values)
            .map(|(m, v)| {
                let x = if presence == Presence::New {
                    v.new
                } else {
                    v.base
                };
                format!("{} {}", m.name, crate::view::number(m, x))
            })
            .collect();
        writeln!(out, "  {}   {}", values.join(", "), c.path.join(";"))?;
    }
    Ok(())
}

/// Every method whose values changed, with its self values in both.
fn write_changed_methods(diff: &ProfileDiff, out: &mut dyn Write) -> Result<(), ReportError> {
    let changed: Vec<&MethodDiff> = diff
        .methods
        .iter()
        .filter(|m| {
            m.self_values
                .iter()
                .chain(&m.totals)
                .any(|c| c.base != c.new)
        })
        .collect();
    if !changed.is_empty() {
        writeln!(
            out,
            "\nMethods that changed ({}), self values:",
            changed.len()
        )?;
        for m in changed {
            let values: Vec<String> = diff
                .metrics
                .iter()
                .zip(&m.self_values)
                .map(|(metric, c)| format!("{} {}", metric.name, describe(metric, c)))
                .collect();
            writeln!(out, "  {}   {}", m.method, values.join(", "))?;
        }
    }
    Ok(())
}
