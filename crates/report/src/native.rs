//! The `native` mode's own section of the text and HTML reports, above the trees the metrics
//! writers draw: the time split between bytecode and native code, in total and per thread; the
//! native methods by native time with their calls, upcalls and what the upcalls called; the
//! natives no measurement covers. Every number comes from [`Profile::native_split`] and
//! [`Profile::native_rows`], as the JSON document's do.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ferrofluid_profile::native::{reason, NotMeasured, Split};
use ferrofluid_profile::{NativeRow, Profile};

use crate::view::escape;
use crate::view::{ms, percent, plural};

/// Upcall targets named per native method; the rest are counted.
const TARGETS_SHOWN: usize = 3;
/// Natives named per not-measured reason in the text report; the rest are counted.
const NOT_MEASURED_SHOWN: usize = 6;

/// `1.500 ms native (60.0%), 1.000 ms bytecode (40.0%)`, and the CPU split when measured.
fn split_line(split: &Split) -> String {
    let whole = split.total_ns();
    let mut line = format!(
        "{} ms native ({}), {} ms bytecode ({}) of {} ms",
        ms(split.native_ns),
        percent(split.native_ns, whole),
        ms(split.bytecode_ns),
        percent(split.bytecode_ns, whole),
        ms(whole)
    );
    if let (Some(n), Some(b)) = (split.native_cpu_ns, split.bytecode_cpu_ns) {
        let _ = write!(
            line,
            "; CPU {} ms native ({}), {} ms bytecode ({})",
            ms(n),
            percent(n, n + b),
            ms(b),
            percent(b, n + b)
        );
    }
    line
}

fn name(profile: &Profile, m: ferrofluid_profile::MethodId) -> String {
    profile.methods.get(m).map_or_else(
        || format!("<method {}>", m.0),
        |i| format!("{}.{}{}", i.class, i.method, i.descriptor),
    )
}

/// `Callback.run()V 10, Other.f()V 2 (+1 more)`.
fn targets(profile: &Profile, row: &NativeRow) -> String {
    let mut s: Vec<String> = row
        .targets
        .iter()
        .take(TARGETS_SHOWN)
        .map(|&(m, calls)| format!("{} {calls}", name(profile, m)))
        .collect();
    if row.targets.len() > TARGETS_SHOWN {
        s.push(format!("(+{} more)", row.targets.len() - TARGETS_SHOWN));
    }
    s.join(", ")
}

/// The reasons a native is not measured, in the order the reports group them.
const REASONS: [&str; 8] = [
    reason::LOADED_BEFORE_AGENT,
    reason::EARLY_BOOT,
    reason::INTRINSIC,
    reason::NOT_WRAPPED,
    reason::SIGNATURE_POLYMORPHIC,
    reason::NATIVE_BINDING,
    reason::FRAME_SENSITIVE,
    reason::RUNS_JAVA,
];

/// The not-measured natives by reason, in the order of [`REASONS`], then others.
fn by_reason(list: &[NotMeasured]) -> Vec<(&str, Vec<&NotMeasured>)> {
    let mut groups: BTreeMap<(usize, &str), Vec<&NotMeasured>> = BTreeMap::new();
    for n in list {
        let rank = REASONS
            .iter()
            .position(|r| *r == n.reason)
            .unwrap_or(REASONS.len());
        groups.entry((rank, &n.reason)).or_default().push(n);
    }
    groups.into_iter().map(|((_, r), v)| (r, v)).collect()
}

/// What a not-measured reason means, for the reports.
fn reason_text(r: &str) -> &'static str {
    match r {
        reason::LOADED_BEFORE_AGENT => {
            "loaded before the agent (a wrapper can be added only as a class first loads)"
        }
        reason::EARLY_BOOT => {
            "bound by name in libjava before the JVM was live (a prefixed name could not be resolved then)"
        }
        reason::INTRINSIC => "JIT intrinsics (compiled callers may skip any wrapper)",
        reason::NOT_WRAPPED => "no wrapper could be built",
        reason::SIGNATURE_POLYMORPHIC => "signature polymorphic (linked by the JVM per call site)",
        reason::NATIVE_BINDING => {
            "the binding of natives (registerNatives, native-library lookups)"
        }
        reason::FRAME_SENSITIVE => "find their callers by their own stack frame",
        reason::RUNS_JAVA => {
            "run Java code by the JVM's own calls (reflection, class initialisation and definition)"
        }
        _ => "not measured",
    }
}

/// The share of all threads' time a native method's native time is.
fn share(row: &NativeRow, whole: u64) -> String {
    percent(row.native_ns, whole)
}

/// What an agent attached to a running JVM could not see: the natives of the classes loaded
/// before it, whose time is their callers' bytecode.
fn loaded_before(profile: &Profile) -> Option<String> {
    let n = profile
        .native
        .as_ref()?
        .not_measured
        .iter()
        .filter(|m| m.reason == reason::LOADED_BEFORE_AGENT)
        .count();
    (n > 0).then(|| {
        format!(
            "attached to a running JVM: no wrapper for {} of classes loaded before the agent, whose time is their callers' bytecode (start the JVM with the agent to measure them)",
            plural(n as u64, "native")
        )
    })
}

/// The text section.
pub(crate) fn text(profile: &Profile) -> String {
    let mut s = String::new();
    let total = profile.native_total();
    let whole = total.total_ns();
    let cpu = total.native_cpu_ns.is_some();
    let _ = writeln!(
        s,
        "Native code: time in native methods against time in bytecode"
    );
    let _ = writeln!(s, "all threads: {}", split_line(&total));
    let summary = profile.native.as_ref();
    if let Some(n) = summary.filter(|n| n.unattributed_upcalls > 0) {
        let _ = writeln!(
            s,
            "! {} made from no measured native: their time counts as bytecode",
            plural(n.unattributed_upcalls, "JNI upcall")
        );
    }
    if let Some(line) = loaded_before(profile) {
        let _ = writeln!(s, "! {line}");
    }
    let _ = writeln!(s, "\nPer thread");
    let cpu_cols = if cpu {
        format!(" {:>14} {:>14}", "native CPU ms", "bytecode CPU")
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "{:>12} {:>8} {:>12}{cpu_cols}  thread",
        "native ms", "native %", "bytecode ms"
    );
    for (i, t) in profile.threads.iter().enumerate() {
        let split = profile.native_split(i);
        let cpu_cells = if cpu {
            format!(
                " {:>14} {:>14}",
                split.native_cpu_ns.map_or_else(|| "-".to_owned(), ms),
                split.bytecode_cpu_ns.map_or_else(|| "-".to_owned(), ms)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "{:>12} {:>8} {:>12}{cpu_cells}  {} (id {})",
            ms(split.native_ns),
            percent(split.native_ns, split.total_ns()),
            ms(split.bytecode_ns),
            t.name,
            t.id
        );
    }
    let rows = profile.native_rows();
    let _ = writeln!(
        s,
        "\nNative methods by native time (all threads; upcalls' bytecode not included)"
    );
    let cpu_col = if cpu {
        format!(" {:>13}", "native CPU ms")
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "{:>12} {:>7} {:>10} {:>12} {:>8} {:>7}{cpu_col}  method  [upcalls to]",
        "native ms", "% time", "calls", "avg us", "upcalls", "threads"
    );
    for row in rows.iter().filter(|r| r.calls > 0) {
        let cpu_cell = if cpu {
            format!(
                " {:>13}",
                row.native_cpu_ns.map_or_else(|| "-".to_owned(), ms)
            )
        } else {
            String::new()
        };
        let to = if row.targets.is_empty() {
            String::new()
        } else {
            format!("  [{}]", targets(profile, row))
        };
        let _ = writeln!(
            s,
            "{:>12} {:>7} {:>10} {:>12.3} {:>8} {:>7}{cpu_cell}  {}{to}",
            ms(row.native_ns),
            share(row, whole),
            row.calls,
            row.avg_ns() / 1000.0,
            row.upcalls,
            row.threads,
            name(profile, row.method)
        );
    }
    if let Some(n) = summary.filter(|n| !n.not_measured.is_empty()) {
        let _ = writeln!(
            s,
            "\nNot measured: {} (their time counts as their callers' bytecode)",
            plural(n.not_measured.len() as u64, "native method")
        );
        for (r, list) in by_reason(&n.not_measured) {
            let mut names: Vec<String> = list
                .iter()
                .take(NOT_MEASURED_SHOWN)
                .map(|n| match &n.detail {
                    Some(d) => format!("{}.{}{} ({d})", n.class, n.method, n.descriptor),
                    None => format!("{}.{}{}", n.class, n.method, n.descriptor),
                })
                .collect();
            if list.len() > NOT_MEASURED_SHOWN {
                names.push(format!("and {} more", list.len() - NOT_MEASURED_SHOWN));
            }
            let _ = writeln!(
                s,
                "  {} {}: {}",
                list.len(),
                reason_text(r),
                names.join(", ")
            );
        }
    }
    s.push('\n');
    s
}

/// The HTML section.
pub(crate) fn html(profile: &Profile, s: &mut String) {
    let total = profile.native_total();
    let whole = total.total_ns();
    let cpu = total.native_cpu_ns.is_some();
    let _ = writeln!(
        s,
        "<h2 id=\"native\">Native code</h2>\n<p>All threads: {}.</p>",
        escape(&split_line(&total))
    );
    if let Some(n) = profile
        .native
        .as_ref()
        .filter(|n| n.unattributed_upcalls > 0)
    {
        let _ = writeln!(
            s,
            "<p class=\"warn\">{} made from no measured native: their time counts as bytecode.</p>",
            escape(&plural(n.unattributed_upcalls, "JNI upcall"))
        );
    }
    if let Some(line) = loaded_before(profile) {
        let _ = writeln!(s, "<p class=\"warn\">{}.</p>", escape(&line));
    }
    s.push_str("<table class=\"hot\">\n<thead><tr><th class=\"m\">Thread</th>");
    s.push_str("<th data-num=\"1\">Native ms</th><th data-num=\"1\">Native %</th><th data-num=\"1\">Bytecode ms</th>");
    if cpu {
        s.push_str("<th data-num=\"1\">Native CPU ms</th><th data-num=\"1\">Bytecode CPU ms</th>");
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for (i, t) in profile.threads.iter().enumerate() {
        let split = profile.native_split(i);
        let name = escape(&format!("{} (id {})", t.name, t.id));
        let _ = write!(
            s,
            "<tr><td class=\"m\" data-v=\"{name}\">{name}</td><td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td>",
            split.native_ns,
            ms(split.native_ns),
            split.native_ns,
            percent(split.native_ns, split.total_ns()),
            split.bytecode_ns,
            ms(split.bytecode_ns)
        );
        if cpu {
            for v in [split.native_cpu_ns, split.bytecode_cpu_ns] {
                let _ = write!(
                    s,
                    "<td data-v=\"{}\">{}</td>",
                    v.unwrap_or(0),
                    v.map_or_else(|| "-".to_owned(), ms)
                );
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table>\n");
    s.push_str(
        "<h2 id=\"natives\">Native methods</h2>\n<p>By native time, all threads; the bytecode \
         their upcalls ran is not included. Click a column to sort.</p>\n",
    );
    s.push_str(
        "<table class=\"hot\">\n<thead><tr><th class=\"m\">Method</th><th data-num=\"1\" \
         class=\"desc\">Native ms</th><th data-num=\"1\">% time</th><th data-num=\"1\">Calls</th>\
         <th data-num=\"1\">Avg us</th><th data-num=\"1\">Upcalls</th><th data-num=\"1\">Threads</th>",
    );
    if cpu {
        s.push_str("<th data-num=\"1\">Native CPU ms</th>");
    }
    s.push_str("<th class=\"m\">Upcalls to</th></tr></thead>\n<tbody>\n");
    for row in profile.native_rows().iter().filter(|r| r.calls > 0) {
        let method = escape(&name(profile, row.method));
        let _ = write!(
            s,
            "<tr><td class=\"m\" data-v=\"{method}\" title=\"{method}\">{method}</td>\
             <td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td>\
             <td data-v=\"{:.3}\">{:.3}</td><td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td>",
            row.native_ns,
            ms(row.native_ns),
            row.native_ns,
            share(row, whole),
            row.calls,
            row.calls,
            row.avg_ns() / 1000.0,
            row.avg_ns() / 1000.0,
            row.upcalls,
            row.upcalls,
            row.threads,
            row.threads
        );
        if cpu {
            let v = row.native_cpu_ns;
            let _ = write!(
                s,
                "<td data-v=\"{}\">{}</td>",
                v.unwrap_or(0),
                v.map_or_else(|| "-".to_owned(), ms)
            );
        }
        let to = escape(&targets(profile, row));
        let _ = writeln!(s, "<td class=\"m\" data-v=\"{to}\">{to}</td></tr>");
    }
    s.push_str("</tbody>\n</table>\n");
    if let Some(n) = profile
        .native
        .as_ref()
        .filter(|n| !n.not_measured.is_empty())
    {
        let _ = writeln!(
            s,
            "<h2 id=\"not-measured\">Not measured</h2>\n<p>{}: their time counts as their \
             callers' bytecode.</p>",
            escape(&plural(n.not_measured.len() as u64, "native method"))
        );
        for (r, list) in by_reason(&n.not_measured) {
            let _ = writeln!(
                s,
                "<details><summary>{} {}</summary><div class=\"tree\">",
                list.len(),
                escape(reason_text(r))
            );
            for n in list {
                let detail = n
                    .detail
                    .as_ref()
                    .map_or_else(String::new, |d| format!(" ({d})"));
                let _ = writeln!(
                    s,
                    "<div class=\"leaf\">{}</div>",
                    escape(&format!("{}.{}{}{detail}", n.class, n.method, n.descriptor))
                );
            }
            s.push_str("</div></details>\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reason the agent gives has its own words, and the groups follow their order.
    #[test]
    fn every_reason_is_explained_in_order() {
        let all = REASONS;
        for r in all {
            assert_ne!(reason_text(r), reason_text("unknown"), "{r}");
        }
        let list: Vec<NotMeasured> = all
            .iter()
            .rev()
            .map(|r| NotMeasured {
                class: "A".into(),
                method: "m".into(),
                descriptor: "()V".into(),
                reason: (*r).into(),
                detail: None,
            })
            .collect();
        let order: Vec<&str> = by_reason(&list).into_iter().map(|(r, _)| r).collect();
        assert_eq!(order, all);
    }
}
