//! Helpers shared by the writers: names, ordering, number formatting.

use std::fmt::Write as _;

use ferrofluid_profile::Mode;

use ferrofluid_profile::{
    CallTree, CpuTimes, IdleSpot, Metric, NodeId, NodeKind, Profile, ProfileTotals, ThreadProfile,
    Times,
};

/// `com.acme.Foo.bar(I)V` for methods; bracketed names for synthetic nodes.
pub(crate) fn label(profile: &Profile, kind: NodeKind, thread: &str) -> String {
    match kind {
        NodeKind::Method(m) => profile
            .methods
            .get(m)
            .map_or_else(|| format!("<method {}>", m.0), |i| i.to_string()),
        NodeKind::Overflow => {
            "[overflow: contexts beyond the node budget or depth bound]".to_owned()
        }
        NodeKind::Thread => format!("[thread {thread}]"),
    }
}

/// [`label`] in call trees and hot-spot tables, where a method whose probes were removed as
/// the program ran (`adaptive`) says so: its calls are those before, and its later time is in
/// its callers' self time. Frame names (flame graphs, folded stacks) stay plain.
pub(crate) fn row_label(profile: &Profile, kind: NodeKind, thread: &str) -> String {
    let plain = label(profile, kind, thread);
    match kind {
        NodeKind::Method(m) if profile.probes_dropped.contains(&m) => {
            format!("{plain} (probes removed)")
        }
        _ => plain,
    }
}

/// [`row_label`] of node `id` of `thread`'s tree, which says so where the thread was found
/// blocked (its self time there is waiting).
pub(crate) fn tree_label(profile: &Profile, thread: &ThreadProfile, id: NodeId) -> String {
    let plain = row_label(profile, thread.tree.node(id).kind, &thread.name);
    match &thread.waiting {
        Some(w) if w.node == Some(id) => {
            format!("{plain} [idle: {} in {}]", how_blocked(&w.state), w.frame)
        }
        _ => plain,
    }
}

/// The line under a thread's call-tree header when it was found blocked.
pub(crate) fn waiting_note(thread: &ThreadProfile) -> Option<String> {
    let w = thread.waiting.as_ref()?;
    Some(format!(
        "idle: found {} in {} when the profile was taken (the self time of the node marked \
         [idle] is waiting)",
        how_blocked(&w.state),
        w.frame
    ))
}

/// A thread's [`ferrofluid_profile::Waiting::state`] in words.
fn how_blocked(state: &str) -> &str {
    match state {
        "blocked" => "blocked on a monitor",
        "native" => "blocked in native code",
        other => other,
    }
}

/// The title of the hot-spots table, with the time it shares and where idle time went.
pub(crate) fn hot_spots_title(totals: &ProfileTotals) -> String {
    if totals.idle.is_empty() {
        return format!(
            "Hot spots (all threads, by self time; {} ms in total)",
            ms(totals.total_ns)
        );
    }
    let idle = format!(
        "{} ms idle in {}",
        ms(totals.idle_ns),
        plural(totals.idle_threads(), "blocked thread")
    );
    if totals.idle_included {
        format!(
            "Hot spots (all threads, by self time, idle time included; {} ms in total, {idle})",
            ms(totals.total_ns)
        )
    } else {
        format!(
            "Hot spots (busy time of all threads, by self time; {} ms of {} ms in total; {idle}, \
             listed below)",
            ms(totals.hot_ns()),
            ms(totals.total_ns)
        )
    }
}

/// One line of the idle list: `2 threads waiting in M (on top of the stack: F)`.
pub(crate) fn idle_line(profile: &Profile, spot: &IdleSpot) -> String {
    format!(
        "{} {} in {} (on top of the stack: {})",
        plural(spot.threads, "thread"),
        how_blocked(&spot.state),
        label(profile, spot.kind, ""),
        spot.frame
    )
}

/// `1 thread`, `2 threads`.
pub(crate) fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// `com.acme.Foo.bar` (no descriptor), the usual flame-graph frame name.
pub(crate) fn frame(profile: &Profile, kind: NodeKind, thread: &str) -> String {
    match kind {
        NodeKind::Method(m) => profile
            .methods
            .get(m)
            .map_or_else(|| format!("<method {}>", m.0), |i| i.frame_name()),
        NodeKind::Overflow => "[overflow]".to_owned(),
        NodeKind::Thread => thread.to_owned(),
    }
}

/// Children of `id`, hottest first (compensated total), ties by label then position,
/// so output does not depend on anything but the profile.
pub(crate) fn sorted_children(
    profile: &Profile,
    tree: &CallTree,
    id: NodeId,
    times: &[Times],
) -> Vec<NodeId> {
    sorted_children_by(profile, tree, id, |c| times[c.index()].total_ns)
}

/// Children of `id` by `total` (descending), ties by label then position.
pub(crate) fn sorted_children_by(
    profile: &Profile,
    tree: &CallTree,
    id: NodeId,
    total: impl Fn(NodeId) -> u64,
) -> Vec<NodeId> {
    let mut kids: Vec<(NodeId, String)> = tree
        .node(id)
        .children()
        .iter()
        .map(|&c| (c, label(profile, tree.node(c).kind, "")))
        .collect();
    kids.sort_by(|(a, la), (b, lb)| {
        total(*b)
            .cmp(&total(*a))
            .then_with(|| la.cmp(lb))
            .then(a.cmp(b))
    });
    kids.into_iter().map(|(c, _)| c).collect()
}

/// A value of `metric` as a number: milliseconds with three decimals for times, else whole.
pub(crate) fn number(metric: &Metric, v: u64) -> String {
    if metric.is_time() {
        ms(v)
    } else {
        v.to_string()
    }
}

/// A value of `metric` with what it counts: `1.500 ms`, `1200 bytecodes`, `64 bytes`.
pub(crate) fn tip_amount(metric: &Metric, v: u64) -> String {
    if metric.is_time() {
        format!("{} ms", ms(v))
    } else {
        format!("{v} {}", metric.name)
    }
}

/// [`tip_amount`] that names a time other than `time` too: `0.300 ms native_time`.
pub(crate) fn amount(metric: &Metric, v: u64) -> String {
    if metric.is_time() && metric.name != ferrofluid_profile::metric::TIME {
        format!("{} ms {}", ms(v), metric.name)
    } else {
        tip_amount(metric, v)
    }
}

/// A column heading for `metric`: `bytecodes`, `time ms`.
pub(crate) fn heading(metric: &Metric) -> String {
    if metric.is_time() {
        format!("{} ms", metric.name)
    } else {
        metric.name.clone()
    }
}

/// ns as milliseconds with three decimals.
/// "N instrumented, M called", and the methods left to their callers if any were: trivial
/// ones (`skip-trivial`), and short, frequent ones whose probes were removed (`adaptive`).
pub(crate) fn methods_note(profile: &Profile) -> String {
    let mut note = format!(
        "{} instrumented, {} called",
        profile.instrumented,
        profile.called()
    );
    if profile.trivial_skipped > 0 {
        let _ = write!(
            note,
            "; {} trivial left uninstrumented (their time is their callers' self time)",
            profile.trivial_skipped
        );
    }
    if !profile.inlined_left_alone.is_empty() {
        let _ = write!(
            note,
            "; {} JDK classes inlined into much of the compiled code left uninstrumented (their \
             calls are not counted, their time is their callers' self time; \
             --instrument-inlined counts them): {}",
            profile.inlined_left_alone.len(),
            profile.inlined_left_alone.join(", ")
        );
    }
    if !profile.probes_dropped.is_empty() {
        let _ = write!(
            note,
            "; {} called often and shorter than their probes had them removed as the program ran \
             (marked \"probes removed\": their calls are those before, their later time is their \
             callers' self time)",
            profile.probes_dropped.len()
        );
    }
    note
}

/// How many names [`failed_notes`] lists per line before "and N more".
const FAILED_NAMES: usize = 10;

/// One line per kind of class failure, naming the classes: those that could not be
/// instrumented or restored, and those left alone because none of their code can run.
/// Empty when every class was handled.
pub(crate) fn failed_notes(profile: &Profile) -> Vec<String> {
    use ferrofluid_profile::ClassPhase;
    let kinds = [
        (
            ClassPhase::Instrument,
            false,
            "could not be instrumented (calls into it are in its callers' self time)",
            "could not be instrumented (calls into them are in their callers' self time)",
        ),
        (
            ClassPhase::Restore,
            false,
            "could not be restored (it keeps probes that record nothing)",
            "could not be restored (they keep probes that record nothing)",
        ),
        (
            ClassPhase::Instrument,
            true,
            "was not instrumented, as none of its code can run",
            "were not instrumented, as none of their code can run",
        ),
        (
            ClassPhase::Restore,
            true,
            "was not restored, as none of its code can run",
            "were not restored, as none of their code can run",
        ),
    ];
    let mut notes = Vec::new();
    for (phase, skipped, one, many) in kinds {
        let failed: Vec<_> = profile
            .failed_classes
            .iter()
            .filter(|f| f.phase == phase && f.skipped == skipped)
            .collect();
        if failed.is_empty() {
            continue;
        }
        let (count, what) = if failed.len() == 1 {
            ("1 class".to_owned(), one)
        } else {
            (format!("{} classes", failed.len()), many)
        };
        let mut note = format!("{count} {what}:");
        for (i, f) in failed.iter().take(FAILED_NAMES).enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            let _ = write!(note, "{sep}{} ({})", f.class, short_error(&f.error));
        }
        if failed.len() > FAILED_NAMES {
            let _ = write!(note, " and {} more", failed.len() - FAILED_NAMES);
        }
        notes.push(note);
    }
    notes
}

/// A JVMTI error by its name alone (`JVMTI_ERROR_INVALID_CLASS`), any other error whole.
fn short_error(error: &str) -> &str {
    match error.find("JVMTI_ERROR_") {
        Some(at) => {
            let name = &error[at..];
            let end = name
                .find(|c: char| !(c.is_ascii_uppercase() || c == '_'))
                .unwrap_or(name.len());
            &name[..end]
        }
        None => error,
    }
}

pub(crate) fn ms(ns: u64) -> String {
    let us = (ns + 500) / 1000;
    format!("{}.{:03}", us / 1000, us % 1000)
}

/// [`ms`], marked `~` when the time is mostly probe cost (see [`uncertainty_note`]).
pub(crate) fn ms_marked(ns: u64, uncertain: bool) -> String {
    if uncertain {
        format!("~{}", ms(ns))
    } else {
        ms(ns)
    }
}

/// What the `~` mark means, for compensated profiles. Code regions calibrate their whole
/// probe pair; call-subgraph probes measure themselves and calibrate only the rest, which is
/// less certain (`REST_SPREAD`).
pub(crate) fn uncertainty_note(profile: &Profile) -> Option<String> {
    profile.calibration.map(|_| {
        let (spread, what) = match profile.mode {
            Mode::Region => (ferrofluid_profile::PROBE_SPREAD, "cost"),
            _ => (ferrofluid_profile::REST_SPREAD, "calibrated cost"),
        };
        format!(
            "~ marks a time that is mostly probe cost (±{:.0}% of the {what} subtracted exceeds \
             {:.0}% of it): its call count is exact, the time is not",
            spread * 100.0,
            ferrofluid_profile::UNCERTAIN_SHARE * 100.0
        )
    })
}

/// `, probe cost subtracted N ms` for a thread's header, from the times of its tree's root,
/// with the part the probes measured of themselves when there is one; empty when the profile
/// is not compensated. When the calibrated part exceeds half of the thread's `measured_ns`
/// ([`ferrofluid_profile::compensation::mostly_estimate`]), it says so with the share.
pub(crate) fn subtracted_note(profile: &Profile, root: &Times, measured_ns: u64) -> String {
    let mut note = match (profile.calibration, root.total_probe_ns) {
        (None, _) => return String::new(),
        (Some(_), 0) => format!(", probe cost subtracted {} ms", ms(root.total_overhead_ns)),
        (Some(_), measured) => format!(
            ", probe cost subtracted {} ms ({} ms of it measured by the probes)",
            ms(root.total_overhead_ns + measured),
            ms(measured)
        ),
    };
    if ferrofluid_profile::compensation::mostly_estimate(root.total_overhead_ns, measured_ns) {
        let _ = write!(
            note,
            " (unreliable: {} of the measured {} ms is calibrated estimate)",
            percent(root.total_overhead_ns, measured_ns),
            ms(measured_ns)
        );
    }
    note
}

/// One line per reason the profile's compensation is unreliable ([`Profile::unreliable`]),
/// each `compensation unreliable: REASON`; none when it is not.
pub(crate) fn unreliable_notes(profile: &Profile) -> Vec<String> {
    profile
        .unreliable()
        .iter()
        .map(|why| {
            format!(
                "compensation unreliable: {why}; compensated times may be off by more than the \
                 ~ marks say, counts are exact"
            )
        })
        .collect()
}

/// [`ms_marked`] of an optional CPU time (marked when `uncertain`); `-` where none was
/// measured.
pub(crate) fn cpu_ms(ns: Option<u64>, uncertain: bool) -> String {
    ns.map_or_else(|| "-".to_owned(), |ns| ms_marked(ns, uncertain))
}

/// How the thread CPU times were obtained, for profiles that have them (`cpu` option).
pub(crate) fn cpu_note(profile: &Profile) -> Option<String> {
    if !profile.has_cpu() {
        return None;
    }
    if profile.sampling.is_some() {
        return Some("thread CPU times sampled with the same samples".to_owned());
    }
    Some(match profile.cpu_calibration {
        Some(c) => format!(
            "thread CPU times compensated for the probes' CPU time (inner {:.1} ns, outer {:.1} ns \
             per call)",
            c.inner_ns, c.outer_ns
        ),
        None => "thread CPU times measured, not compensated (they include the probes' own CPU \
                 time)"
            .to_owned(),
    })
}

/// `, thread CPU N ms` for a thread's header (compensated as its nodes are); empty without.
pub(crate) fn thread_cpu_note(thread: &ThreadProfile, cpu: &[Option<CpuTimes>]) -> String {
    let root = cpu.first().copied().flatten().map(|c| c.total_ns);
    match root.or(thread.cpu_ns) {
        Some(ns) => format!(", thread CPU {} ms", ms(ns)),
        None => String::new(),
    }
}

/// `part` as a percentage of `whole`, one decimal.
pub(crate) fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "0.0%".to_owned();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

/// One line saying how times were obtained. Call-subgraph probes measure themselves and
/// calibrate the rest; code-region probes calibrate their whole pair.
pub(crate) fn times_note(profile: &Profile) -> String {
    if let Some(s) = profile
        .sampling
        .as_ref()
        .filter(|_| profile.mode == Mode::Cpu)
    {
        return sampled_note(s);
    }
    match (profile.calibration, profile.mode == Mode::Region) {
        (Some(c), true) => format!(
            "compensated for probe overhead (inner {:.1} ns, outer {:.1} ns per call)",
            c.inner_ns, c.outer_ns
        ),
        (Some(c), false) => format!(
            "compensated for probe overhead (what each probe measured of itself, and inner \
             {:.1} ns, outer {:.1} ns per call calibrated)",
            c.inner_ns, c.outer_ns
        ),
        (None, _) => "measured, not compensated (no calibration)".to_owned(),
    }
}

/// How sampled timing measured: the clock, the interval, the samples, and what a time from few
/// samples is worth (a count of n samples is within about ±2√n of its expectation, 95%).
pub(crate) fn sampled_note(s: &ferrofluid_profile::sampling::Sampling) -> String {
    let clock = if s.clock == "wall" {
        "elapsed time (off-CPU time under [blocked: ...] frames; CPU time in its own column)"
    } else {
        "thread CPU time"
    };
    let mut note = format!(
        "sampled: {clock} charged to each thread's current calling context every {} ms, {} \
         samples; calls are exact, times are estimates: a time from n samples is within about \
         ±20% at n = 100, ±63% at n = 10 (95%; `self_samples` per node in JSON)",
        s.interval_ns as f64 / 1e6,
        s.samples,
    );
    if s.outside_roots > 0 {
        let _ = write!(
            note,
            "; {} samples outside the roots left out",
            s.outside_roots
        );
    }
    if let Some(r) = s.record.as_ref().filter(|r| r.partial()) {
        let _ = write!(
            note,
            "; recorded {} of {} root invocations ({}; each whole: calls per invocation exact, \
             totals of the recorded ones{})",
            r.recorded,
            r.root_invocations,
            percent(r.recorded, r.root_invocations),
            match r.cost_ratio {
                Some(c) => format!(
                    "; record={}: a recorded invocation took {c:.2}x the CPU time of another, \
                     {:.1}% of each two seconds recorded at the end",
                    r.policy,
                    f64::from(r.open_per_mille) / 10.0
                ),
                None => format!("; record={}", r.policy),
            }
        );
    }
    if let Some(n) = s.without_stack.get("without_cpu_clock").filter(|n| **n > 0) {
        let _ = write!(
            note,
            "; {n} samples of threads without a CPU clock (virtual threads) charged by their state"
        );
    }
    note
}

/// What a CPU profile's thread lost, one note each: calls in overflow nodes, exits that matched no
/// frame, events dropped.
pub(crate) fn lost_notes(thread: &ThreadProfile) -> Vec<String> {
    let mut notes = Vec::new();
    if thread.overflow_calls > 0 {
        notes.push(format!(
            "{} calls beyond the node budget or depth bound are counted in [overflow] nodes",
            thread.overflow_calls
        ));
    }
    if thread.unmatched_exits > 0 {
        notes.push(format!(
            "{} exit events matched no open frame and were ignored",
            thread.unmatched_exits
        ));
    }
    if thread.dropped_events > 0 {
        notes.push(format!(
            "{} events were lost (the profiler's buffer for this thread stayed full): its counts \
             and times are inexact",
            thread.dropped_events
        ));
    }
    notes
}

/// Escapes text for HTML element content and quoted attributes.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_round_to_the_microsecond() {
        assert_eq!(ms(0), "0.000");
        assert_eq!(ms(1_234_567), "1.235");
        assert_eq!(ms(999_499), "0.999");
        assert_eq!(ms(999_600), "1.000");
        assert_eq!(percent(1, 3), "33.3%");
        assert_eq!(percent(5, 0), "0.0%");
        assert_eq!(ms_marked(1_234_567, true), "~1.235");
        assert_eq!(ms_marked(1_234_567, false), "1.235");
    }

    #[test]
    fn an_unreliable_compensation_is_said_with_its_numbers() {
        let mut profile = Profile::default();
        assert_eq!(unreliable_notes(&profile), Vec::<String>::new());
        profile.calibration = Some(ferrofluid_profile::Calibration {
            inner_ns: 10.0,
            outer_ns: 11.0,
        });
        profile.calibration_stats = Some(ferrofluid_profile::CalibrationStats {
            batches: 120,
            disturbed: 115,
            descheduled_share: 0.5,
            kept: 8,
            pair_ns: [21.0, 21.0, 22.0],
            calibrated: None,
        });
        assert_eq!(
            unreliable_notes(&profile),
            [
                "compensation unreliable: the machine was busy while calibrating (115 of 120 \
              calibration batches lost their CPU, 50% of their time off CPU); compensated times \
              may be off by more than the ~ marks say, counts are exact"
            ]
        );
    }

    #[test]
    fn the_subtracted_probe_cost_names_its_measured_part() {
        let mut profile = Profile::default();
        let root = Times {
            total_overhead_ns: 1_500_000,
            total_probe_ns: 2_500_000,
            ..Times::default()
        };
        assert_eq!(subtracted_note(&profile, &root, 10_000_000), "");
        profile.calibration = Some(ferrofluid_profile::Calibration {
            inner_ns: 10.0,
            outer_ns: 11.0,
        });
        assert_eq!(
            subtracted_note(&profile, &root, 10_000_000),
            ", probe cost subtracted 4.000 ms (2.500 ms of it measured by the probes)"
        );
        // 1.5 ms of calibrated rest in 2.9 ms measured: over half.
        assert_eq!(
            subtracted_note(&profile, &root, 2_900_000),
            ", probe cost subtracted 4.000 ms (2.500 ms of it measured by the probes) \
             (unreliable: 51.7% of the measured 2.900 ms is calibrated estimate)"
        );
        let calibrated_only = Times {
            total_probe_ns: 0,
            ..root
        };
        assert_eq!(
            subtracted_note(&profile, &calibrated_only, 3_000_000),
            ", probe cost subtracted 1.500 ms"
        );
    }
}
