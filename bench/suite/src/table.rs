//! The Markdown section the suite writes into docs/PERFORMANCE.md.

use std::fmt::Write as _;
use std::process::Command;

use crate::charged::RootTime;
use crate::modes::Mode;
use crate::suite::{Config, ModeResult, Report, WorkloadResult};

/// Where and when the numbers were taken.
#[derive(Debug, Clone)]
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub load_before: String,
    pub load_after: String,
    pub jdk: String,
    pub date: String,
    pub commit: String,
    pub command: String,
}

fn stdout_of(cmd: &mut Command) -> String {
    cmd.output()
        .map(|o| {
            let text = if o.stdout.is_empty() {
                o.stderr
            } else {
                o.stdout
            };
            String::from_utf8_lossy(&text).trim().to_string()
        })
        .unwrap_or_default()
}

/// The 1/5/15-minute load averages.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

impl Machine {
    /// Everything but `load_after`, taken before the run.
    pub fn before(cfg: &Config, repo: &std::path::Path) -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("model name"))
                    .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
            })
            .unwrap_or_else(|| "?".into());
        let jdk = stdout_of(Command::new(&cfg.java).arg("-version"));
        let commit = stdout_of(
            Command::new("git")
                .arg("-C")
                .arg(repo)
                .args(["describe", "--always", "--dirty"]),
        );
        Machine {
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu,
            load_before: load_average(),
            load_after: String::new(),
            jdk: jdk.lines().nth(1).unwrap_or(&jdk).to_string(),
            date: stdout_of(Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"])),
            commit,
            command: std::env::args().collect::<Vec<_>>().join(" "),
        }
    }
}

/// "1.23x", "> cap (4.6x)" (the cap over the median baseline), "n/a (not built)" or "–".
fn ratio_cell(w: &WorkloadResult, mode: Mode) -> String {
    if !mode.is_built() {
        return "n/a (not built)".into();
    }
    if let Some(code) = w.modes.get(&mode).and_then(|m| m.failed()) {
        return format!("**FAILED** ({})", exit_name(code));
    }
    match w.ratio(mode) {
        Ok(r) => format!("{r:.2}x"),
        Err(Some(cap)) => format!("> cap ({cap:.1}x)"),
        Err(None) => "–".into(),
    }
}

/// 134 is the JVM's abort after a fatal error (hs_err file in the run directory).
fn exit_name(code: i32) -> String {
    match code {
        134 => "JVM crash, exit 134".into(),
        c if c < 0 => format!("signal {}", -c),
        c => format!("exit {c}"),
    }
}

/// Geometric mean of the ratios; capped runs enter at the cap, which makes it a lower bound ("≥").
pub fn geomean(report: &Report, mode: Mode) -> Option<(f64, bool)> {
    let mut logs = Vec::new();
    let mut bound = false;
    for w in &report.workloads {
        if w.modes.get(&mode).is_some_and(|m| m.failed().is_some()) {
            continue;
        }
        match w.ratio(mode) {
            Ok(r) => logs.push(r.ln()),
            Err(Some(cap)) => {
                logs.push(cap.ln());
                bound = true;
            }
            Err(None) => {}
        }
    }
    if logs.is_empty() {
        return None;
    }
    Some(((logs.iter().sum::<f64>() / logs.len() as f64).exp(), bound))
}

fn geomean_cell(report: &Report, mode: Mode) -> String {
    if !mode.is_built() {
        return "n/a (not built)".into();
    }
    match geomean(report, mode) {
        Some((g, bound)) => format!("**{}{g:.2}x**", if bound { "≥ " } else { "" }),
        None => "–".into(),
    }
}

fn methods_cell(w: &WorkloadResult, mode: Mode) -> String {
    if !mode.is_built() {
        return "n/a".into();
    }
    match w.modes.get(&mode).and_then(|m| m.methods()) {
        Some(m) => match m.instrumented {
            Some(i) if m.called > 0 => {
                format!("{i} / {} ({:.2})", m.called, i as f64 / m.called as f64)
            }
            Some(i) => format!("{i} / 0"),
            None => m.called.to_string(),
        },
        None => "–".into(),
    }
}

fn lazy_ratio(w: &WorkloadResult) -> Option<f64> {
    let m = w.modes.get(&Mode::LazyMain)?.methods()?;
    (m.called > 0).then(|| m.instrumented.unwrap_or(0) as f64 / m.called as f64)
}

fn verdict(value: Option<f64>, goal: f64) -> &'static str {
    match value {
        Some(v) if v <= goal => "met",
        Some(_) => "**not met**",
        None => "not measured",
    }
}

/// The timed columns, with the goal of those that have one (a geometric-mean slowdown).
const TIMED: [(Mode, &str, Option<f64>); 26] = [
    (Mode::Total, "total", Some(2.0)),
    (Mode::LazyMain, "lazy main", None),
    (Mode::Root, "root ~10%", Some(1.10)),
    (Mode::RootSkipTrivial, "root ~10%, skip trivial", None),
    (
        Mode::RootAdaptive,
        "root ~10%, skip trivial, adaptive",
        None,
    ),
    (Mode::Region, "region", Some(1.02)),
    (Mode::Count, "count", Some(2.0)),
    (Mode::CountRoot, "count, root ~10%", Some(1.3)),
    (Mode::CpuSampled, "cpu, sampled timing", Some(1.5)),
    (Mode::CpuSampledRoot, "cpu, sampled timing, root ~10%", None),
    (Mode::Native, "native", Some(1.05)),
    (Mode::NativeCpu, "native, --cpu", None),
    (Mode::Alloc10, "alloc, track every 10th", Some(2.0)),
    (Mode::Alloc100, "alloc, track every 100th", Some(1.3)),
    (Mode::Alloc0, "alloc, count only", Some(1.10)),
    (Mode::AllocBytes, "alloc, tracked by bytes (512k)", None),
    (Mode::Sample, "sample 100 Hz", Some(1.02)),
    (Mode::Sample1k, "sample 1 kHz", Some(1.10)),
    (Mode::SampleRoot, "sample 100 Hz, root ~10%", Some(1.03)),
    (Mode::AsyncCpu, "async-profiler cpu", None),
    (Mode::AsyncCpu1k, "async-profiler cpu 1 kHz", None),
    (Mode::AsyncAlloc, "async-profiler alloc", None),
    (Mode::JfrDefault, "JFR default", None),
    (Mode::JfrProfile, "JFR profile", None),
    (Mode::JvmtiEvents, "JVMTI entry/exit", None),
    (Mode::TotalVerify, "total + -Xverify:all", None),
];

/// Columns shown only when some workload ran them.
fn optional_column(mode: Mode) -> bool {
    matches!(
        mode,
        Mode::Count
            | Mode::CountRoot
            | Mode::CpuSampled
            | Mode::CpuSampledRoot
            | Mode::Native
            | Mode::NativeCpu
            | Mode::Alloc10
            | Mode::Alloc100
            | Mode::Alloc0
            | Mode::AllocBytes
            | Mode::Sample
            | Mode::Sample1k
            | Mode::SampleRoot
            | Mode::AsyncCpu
            | Mode::AsyncCpu1k
            | Mode::AsyncAlloc
    )
}

/// The root and region medians of a workload, when both ran.
fn root_times(w: &WorkloadResult) -> Option<(RootTime, RootTime)> {
    let of = |mode| w.modes.get(&mode).and_then(ModeResult::root_time);
    Some((of(Mode::Root)?, of(Mode::Region)?))
}

/// Charged / region time per workload that has both (and a region time above 0).
fn charged_ratios(report: &Report) -> Vec<f64> {
    report
        .workloads
        .iter()
        .filter_map(root_times)
        .filter(|(_, region)| region.ns > 0)
        .map(|(root, region)| root.ns as f64 / region.ns as f64)
        .collect()
}

fn geomean_of(values: &[f64]) -> Option<f64> {
    (!values.is_empty())
        .then(|| (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

/// JFluid's accuracy measure (its Table 2) on real programs: what the call subgraph profile
/// charges the root, against the root's time in code-region mode, whose probes are two per
/// root call.
fn accuracy(s: &mut String, report: &Report) {
    let region_and_root = |w: &WorkloadResult| {
        let of = |mode| w.modes.get(&mode).and_then(ModeResult::root_time);
        let (root, skip, adaptive) = (
            of(Mode::Root),
            of(Mode::RootSkipTrivial),
            of(Mode::RootAdaptive),
        );
        Some((of(Mode::Region)?, root, skip, adaptive))
            .filter(|_| root.is_some() || skip.is_some() || adaptive.is_some())
    };
    if !report
        .workloads
        .iter()
        .any(|w| region_and_root(w).is_some())
    {
        return;
    }
    let _ = writeln!(
        s,
        "### Accuracy: charged time of the root / its time in code-region mode\n"
    );
    let _ = writeln!(s, "JFluid's Table 2 measure: the compensated total of the root method's invocations under `root ~10%` (lazy call subgraph profile) against their total in code-region mode (medians of the runs; region durations are compensated for the region probes only). `~`: the report marks the charged time as mostly probe cost. Different call counts mean the two modes did not see the same invocations.\n");
    let _ = writeln!(s, "| workload | root calls (root / region) | region ms | charged ms | charged / region | measured / region | skip trivial: charged ms | charged / region | adaptive: charged ms | charged / region |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let ms = |ns: u64| format!("{:.1}", ns as f64 / 1e6);
    for w in &report.workloads {
        let Some((region, root, skip, adaptive)) = region_and_root(w) else {
            continue;
        };
        let ratio = |ns: u64| {
            if region.ns == 0 {
                "–".to_string()
            } else {
                format!("{:.2}", ns as f64 / region.ns as f64)
            }
        };
        let profiled = root.or(skip).or(adaptive).unwrap_or_default();
        let calls = if profiled.calls == region.calls {
            profiled.calls.to_string()
        } else {
            format!("**{} / {}**", profiled.calls, region.calls)
        };
        let charged = |t: Option<RootTime>| {
            t.map_or(("–".into(), "–".into()), |t| {
                let mark = if t.uncertain { "~" } else { "" };
                (format!("{mark}{}", ms(t.ns)), ratio(t.ns))
            })
        };
        let ((root_ms, root_ratio), (skip_ms, skip_ratio)) = (charged(root), charged(skip));
        let (adaptive_ms, adaptive_ratio) = charged(adaptive);
        let measured = root.map_or("–".into(), |t| ratio(t.measured_ns));
        let _ = writeln!(
            s,
            "| {} | {calls} | {} | {root_ms} | {root_ratio} | {measured} | {skip_ms} | {skip_ratio} | {adaptive_ms} | {adaptive_ratio} |",
            w.workload.name,
            ms(region.ns),
        );
    }
    let _ = writeln!(s);
}

/// IPA's Table II for the suite: each workload's threads' time split between native methods
/// and bytecode, from its median `native-cpu` run (by CPU share; else its `native` run).
fn native_shares(s: &mut String, report: &Report) {
    let shares: Vec<_> = report
        .workloads
        .iter()
        .filter_map(|w| {
            let of = |mode| w.modes.get(&mode).and_then(ModeResult::native_share);
            Some((
                w.workload.name,
                of(Mode::NativeCpu).or_else(|| of(Mode::Native))?,
            ))
        })
        .collect();
    if shares.is_empty() {
        return;
    }
    let _ = writeln!(s, "### Native code's share of the time (`--mode native`)\n");
    let _ = writeln!(s, "IPA's Table II for these programs: every thread's time alive while recording, the JVM's idle threads left out, split between native methods (less the bytecode of their upcalls) and bytecode (docs/modes/native.md), from the `native-cpu` run (`--cpu`) with the median CPU share (else the `native` run). Elapsed time a thread waits inside a native (`Object.wait`, `Unsafe.park`, a socket read) is native time; CPU time is what ran.\n");
    let _ = writeln!(s, "| workload | native share of time | native ms | bytecode ms | native share of CPU | native CPU ms | bytecode CPU ms | natives that ran | most native CPU (else time), ms |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---|");
    let ms = |ns: u64| format!("{:.1}", ns as f64 / 1e6);
    for (name, share) in shares {
        let top = share
            .top
            .as_ref()
            .map_or("–".into(), |(m, ns)| format!("`{m}` ({})", ms(*ns)));
        let (cpu_share, native_cpu, bytecode_cpu) = match share.cpu {
            Some((b, n)) => (
                format!("{:.1}%", share.cpu_share().unwrap_or(0.0) * 100.0),
                ms(n),
                ms(b),
            ),
            None => ("–".into(), "–".into(), "–".into()),
        };
        let _ = writeln!(
            s,
            "| {name} | {:.1}% | {} | {} | {cpu_share} | {native_cpu} | {bytecode_cpu} | {} | {top} |",
            share.share() * 100.0,
            ms(share.native_ns),
            ms(share.bytecode_ns),
            share.natives,
        );
    }
    let _ = writeln!(s);
}

/// The whole section (without the markers).
pub fn render(report: &Report, cfg: &Config, m: &Machine, partial: Option<&str>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## Overhead and correctness suite\n");
    let _ = writeln!(
        s,
        "Written by `bench/suite` itself (how to prepare, run and add a workload: [bench/README.md](../bench/README.md)).\n"
    );
    if let Some(p) = partial {
        let _ = writeln!(s, "**PARTIAL RESULT: {p}**\n");
    }
    let _ = writeln!(s, "- Date: {}; ferrofluid commit `{}`", m.date, m.commit);
    let _ = writeln!(s, "- Machine: {} cores, {}; load average (1/5/15 min) before {}, after {} (shared with other engineers' builds and JVMs: ratios are side by side in one run, interleaved)", m.cores, m.cpu, m.load_before, m.load_after);
    let _ = writeln!(s, "- JDK: {}", m.jdk);
    let _ = writeln!(
        s,
        "- Command: `{}` (through `bench/suite/run.sh`, after `bench/suite/prepare.sh`)",
        m.command
    );
    let _ = writeln!(
        s,
        "- Median of {} runs per mode (`total + -Xverify:all` runs once: a correctness check); wall time of the whole command (JVM start to exit, report written); a run is killed at {}x the fastest baseline or {} s, whichever is less, shown as \"> cap\" and not run again; a mode whose run FAILED (crashed or exited non-zero) is not run again and is left out of the geometric mean\n",
        cfg.n, cfg.cap_ratio, cfg.cap_secs
    );
    let _ = writeln!(s, "### Slowdown vs baseline (median wall time ratio)\n");
    // The count and alloc columns only when some workload ran them.
    let timed: Vec<(Mode, &str, Option<f64>)> = TIMED
        .into_iter()
        .filter(|(mode, _, _)| {
            !optional_column(*mode) || report.workloads.iter().any(|w| w.modes.contains_key(mode))
        })
        .collect();
    let mut header = String::from("| workload | baseline |");
    let mut rule = String::from("|---|---:|");
    for &(_, name, _) in &timed {
        let _ = write!(header, " {name} |");
        rule.push_str("---:|");
    }
    let _ = writeln!(s, "{header}\n{rule}");
    for w in &report.workloads {
        let base = w
            .modes
            .get(&Mode::Baseline)
            .and_then(|b| b.median_secs())
            .map_or("–".into(), |b| format!("{b:.2} s"));
        let _ = write!(s, "| {} | {base} |", w.workload.name);
        for &(mode, _, _) in &timed {
            let _ = write!(s, " {} |", ratio_cell(w, mode));
        }
        let _ = writeln!(s);
    }
    let _ = write!(s, "| geometric mean | |");
    for &(mode, _, _) in &timed {
        let _ = write!(s, " {} |", geomean_cell(report, mode));
    }
    let _ = writeln!(s);
    let _ = write!(s, "| goal | |");
    for &(_, _, goal) in &timed {
        let _ = write!(
            s,
            " {} |",
            goal.map_or(String::new(), |g| format!("≤ {g:.2}x"))
        );
    }
    let _ = writeln!(s, "\n");

    let _ = writeln!(
        s,
        "### CPU time vs baseline (median user+system CPU of the whole process tree)\n"
    );
    let _ = writeln!(s, "On a machine shared with other work, wall time mostly measures waiting for a core; CPU time does not (it includes the JIT and GC threads, and `ferrofluid run`'s own report writing).\n");
    let _ = writeln!(s, "{header}\n{rule}");
    for w in &report.workloads {
        let base = w
            .modes
            .get(&Mode::Baseline)
            .and_then(|b| b.median_cpu_secs())
            .map_or("–".into(), |b| format!("{b:.2} s"));
        let _ = write!(s, "| {} | {base} |", w.workload.name);
        for &(mode, _, _) in &timed {
            let cell = match w.cpu_ratio(mode) {
                _ if !mode.is_built() => "n/a (not built)".to_string(),
                Some(r) => format!("{r:.2}x"),
                None => ratio_cell(w, mode),
            };
            let _ = write!(s, " {cell} |");
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s);

    let _ = writeln!(
        s,
        "### Methods: instrumented / called (ratio); JVMTI: distinct methods called\n"
    );
    let _ = writeln!(s, "| workload | total | lazy main | root ~10% | root ~10%, skip trivial | region | JVMTI entry/exit | output (all ferrofluid modes, -Xverify:all) |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---|");
    for w in &report.workloads {
        let failed = report
            .failures
            .iter()
            .filter(|f| f.workload == w.workload.name)
            .count();
        let out = if failed == 0 {
            format!("same checksum (`{}`)", w.checksum.as_deref().unwrap_or("?"))
        } else {
            format!("**{failed} FAILURE(S)**")
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {out} |",
            w.workload.name,
            methods_cell(w, Mode::Total),
            methods_cell(w, Mode::LazyMain),
            methods_cell(w, Mode::Root),
            methods_cell(w, Mode::RootSkipTrivial),
            methods_cell(w, Mode::Region),
            methods_cell(w, Mode::JvmtiEvents),
        );
    }
    let _ = writeln!(s);

    accuracy(&mut s, report);
    native_shares(&mut s, report);

    let total = geomean(report, Mode::Total).map(|g| g.0);
    let root = geomean(report, Mode::Root).map(|g| g.0);
    let region = if Mode::Region.is_built() {
        geomean(report, Mode::Region).map(|g| g.0)
    } else {
        None
    };
    let lazy_max = report
        .workloads
        .iter()
        .filter_map(lazy_ratio)
        .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.max(r))));
    let show = |v: Option<f64>, unit: &str| v.map_or("–".into(), |v| format!("{v:.2}{unit}"));
    let _ = writeln!(s, "### Goals (measured, not asserted)\n");
    let _ = writeln!(s, "| goal | measured | |");
    let _ = writeln!(s, "|---|---:|---|");
    let _ = writeln!(
        s,
        "| whole-program exact CPU (`--scheme total`), geometric-mean slowdown ≤ 2.0x | {} | {} |",
        show(total, "x"),
        verdict(total, 2.0)
    );
    let _ = writeln!(
        s,
        "| root method covering ~10% of the run, geometric mean ≤ 1.10x | {} | {} |",
        show(root, "x"),
        verdict(root, 1.10)
    );
    let _ = writeln!(
        s,
        "| code region ≤ 1.02x | {} | {} |",
        if Mode::Region.is_built() {
            show(region, "x")
        } else {
            "n/a (not built)".into()
        },
        verdict(region, 1.02)
    );
    for (mode, what, goal) in [
        (
            Mode::Count,
            "whole-program bytecode counts (`--mode count`)",
            2.0,
        ),
        (Mode::CountRoot, "bytecode counts under the ~10% root", 1.3),
        (
            Mode::Alloc0,
            "allocation counts only (`--mode alloc --track-every 0`)",
            1.10,
        ),
        (
            Mode::CpuSampled,
            "exact calls with sampled time (`--timing sampled`)",
            1.5,
        ),
        (
            Mode::Native,
            "native-code accounting (`--mode native`)",
            1.05,
        ),
        (
            Mode::Alloc10,
            "allocations, every 10th object tracked with its stack",
            2.0,
        ),
        (
            Mode::Alloc100,
            "allocations, every 100th object tracked",
            1.3,
        ),
        (
            Mode::Sample,
            "CPU sampling at 100 Hz (`--mode sample`)",
            1.02,
        ),
        (Mode::Sample1k, "CPU sampling at 1 kHz", 1.10),
        (
            Mode::SampleRoot,
            "CPU sampling at 100 Hz inside the ~10% root (hybrid)",
            1.03,
        ),
    ] {
        if report.workloads.iter().any(|w| w.modes.contains_key(&mode)) {
            let g = geomean(report, mode).map(|g| g.0);
            let _ = writeln!(
                s,
                "| {what}, geometric-mean slowdown ≤ {goal:.2}x | {} | {} |",
                show(g, "x"),
                verdict(g, goal)
            );
        }
    }
    let charged = charged_ratios(report);
    let worst = charged.iter().copied().reduce(f64::max);
    let _ = writeln!(
        s,
        "| root method: charged time / time in code-region mode ≤ 1.10 (worst workload; geometric mean {}) | {} | {} |",
        show(geomean_of(&charged), ""),
        show(worst, ""),
        verdict(worst, 1.10)
    );
    let _ = writeln!(
        s,
        "| lazy scheme: instrumented/called ≤ 1.2 (worst workload, from main) | {} | {} |\n",
        show(lazy_max, ""),
        verdict(lazy_max, 1.2)
    );

    let _ = writeln!(s, "### Workloads\n");
    let _ = writeln!(s, "| workload | what | scale | root ~10% = region method (share of JFR samples) | Debian package |");
    let _ = writeln!(s, "|---|---|---:|---|---|");
    for w in &report.workloads {
        let wl = w.workload;
        let _ = writeln!(
            s,
            "| {} | {} | {} | `{}` ({}) | {} |",
            wl.name, wl.what, w.scale, wl.root, wl.root_share, wl.packages
        );
    }
    let _ = writeln!(s);
    if report.failures.is_empty() {
        let _ = writeln!(
            s,
            "Output equality: every run's checksum equals its baseline's."
        );
    } else {
        let _ = writeln!(s, "**Output equality FAILED:**\n");
        for f in &report.failures {
            let _ = writeln!(s, "- {} / {}: {}", f.workload, f.mode.name(), f.message);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;
    use crate::exec::{Exit, Outcome};
    use crate::suite::{Failure, Methods, ModeResult, RunResult};

    fn run(exit: Exit, secs: f64, cpu: f64, methods: Option<Methods>) -> RunResult {
        RunResult {
            outcome: Outcome {
                exit,
                secs,
                cpu_secs: Some(cpu),
            },
            checksum: Some("h2 aa".into()),
            methods,
            root_time: None,
            native: None,
            dir: PathBuf::from("/w"),
        }
    }

    #[test]
    fn the_section_shows_ratios_cpu_failures_and_counts() {
        let w = crate::workloads::by_name("h2").unwrap();
        let counts = Some(Methods {
            instrumented: Some(30),
            called: 20,
        });
        let modes = BTreeMap::from([
            (Mode::Baseline, vec![run(Exit::Ok, 10.0, 4.0, None)]),
            (Mode::Total, vec![run(Exit::Ok, 15.0, 8.0, counts)]),
            (Mode::LazyMain, vec![run(Exit::Failed(134), 1.0, 1.0, None)]),
            (Mode::JvmtiEvents, vec![run(Exit::Capped, 50.0, 0.0, None)]),
        ])
        .into_iter()
        .map(|(mode, runs)| (mode, ModeResult { mode, runs }))
        .collect();
        let report = Report {
            workloads: vec![WorkloadResult {
                workload: w,
                scale: 2,
                checksum: Some("h2 aa".into()),
                modes,
                cap_secs: 50.0,
            }],
            failures: vec![Failure {
                workload: "h2",
                mode: Mode::LazyMain,
                message: "exited with status 134".into(),
            }],
        };
        let cfg = Config {
            work: PathBuf::from("/w"),
            workloads: vec![w],
            modes: vec![],
            n: 1,
            cap_ratio: 5.0,
            cap_secs: 200.0,
            smoke: false,
            ferrofluid: PathBuf::from("/f"),
            agent: None,
            java: PathBuf::from("/j"),
            methodevents: PathBuf::from("/m"),
            async_profiler: None,
            keep: false,
            push: None,
        };
        let m = Machine {
            cores: 2,
            cpu: "cpu".into(),
            load_before: "1".into(),
            load_after: "2".into(),
            jdk: "jdk".into(),
            date: "today".into(),
            commit: "abc".into(),
            command: "suite run".into(),
        };
        let s = render(&report, &cfg, &m, None);
        let region = if Mode::Region.is_built() {
            "–"
        } else {
            "n/a (not built)"
        };
        // Wall: total 1.5x, lazy crashed, JVMTI over the cap (50 s / 10 s).
        let wall = format!("| h2 | 10.00 s | 1.50x | **FAILED** (JVM crash, exit 134) | – | – | – | {region} | – | – | > cap (5.0x) | – |");
        assert!(s.contains(&wall), "{s}");
        // CPU: total 8 s / 4 s.
        let cpu = format!("| h2 | 4.00 s | 2.00x | **FAILED** (JVM crash, exit 134) | – | – | – | {region} | – | – | > cap (5.0x) | – |");
        assert!(s.contains(&cpu), "{s}");
        assert!(s.contains("| h2 | 30 / 20 (1.50) | – |"), "{s}");
        assert!(
            s.contains("- h2 / lazy-main: exited with status 134"),
            "{s}"
        );
        // The crashed mode stays out of the geometric mean; the capped one enters at its cap.
        assert!(s.contains("| geometric mean | | **1.50x** | – |"), "{s}");
        assert!(s.contains("**≥ 5.00x**"), "{s}");
    }

    #[test]
    fn the_native_share_table_takes_each_workload_s_median_run() {
        let native = |native_ns| {
            let mut r = run(Exit::Ok, 1.0, 1.0, None);
            r.native = Some(crate::native_share::NativeShare {
                bytecode_ns: 3_000_000,
                native_ns,
                cpu: None,
                natives: 40,
                top: Some(("java.lang.Thread.sleep".into(), native_ns / 2)),
            });
            r
        };
        let w = |name, runs| WorkloadResult {
            workload: crate::workloads::by_name(name).unwrap(),
            scale: 1,
            checksum: None,
            modes: [(
                Mode::Native,
                ModeResult {
                    mode: Mode::Native,
                    runs,
                },
            )]
            .into_iter()
            .collect(),
            cap_secs: 9.0,
        };
        let report = Report {
            workloads: vec![
                w(
                    "h2",
                    vec![native(1_000_000), native(9_000_000), native(3_000_000)],
                ),
                // A failed run has no profile.
                w("javac", vec![run(Exit::Failed(1), 1.0, 1.0, None)]),
                // The `--cpu` run's numbers where there is one.
                WorkloadResult {
                    modes: [Mode::Native, Mode::NativeCpu]
                        .into_iter()
                        .map(|mode| {
                            let mut r = native(1_000_000);
                            if mode == Mode::NativeCpu {
                                r.native.as_mut().unwrap().cpu = Some((1_500_000, 500_000));
                            }
                            (
                                mode,
                                ModeResult {
                                    mode,
                                    runs: vec![r],
                                },
                            )
                        })
                        .collect(),
                    ..w("xalan", vec![])
                },
            ],
            failures: vec![],
        };
        let mut s = String::new();
        native_shares(&mut s, &report);
        assert!(
            s.contains(
                "| h2 | 50.0% | 3.0 | 3.0 | – | – | – | 40 | `java.lang.Thread.sleep` (1.5) |\n"
            ),
            "{s}"
        );
        assert!(!s.contains("| javac"), "{s}");
        assert!(
            s.contains("| xalan | 25.0% | 1.0 | 3.0 | 25.0% | 0.5 | 1.5 | 40 | `java.lang.Thread.sleep` (0.5) |\n"),
            "{s}"
        );
    }

    #[test]
    fn the_accuracy_table_compares_charged_with_region_time() {
        let timed = |ns, calls, uncertain| {
            let mut r = run(Exit::Ok, 1.0, 1.0, None);
            r.root_time = Some(RootTime {
                calls,
                ns,
                measured_ns: 2 * ns,
                uncertain,
            });
            r
        };
        let result = |name, modes: Vec<(Mode, Vec<RunResult>)>| WorkloadResult {
            workload: crate::workloads::by_name(name).unwrap(),
            scale: 1,
            checksum: None,
            modes: modes
                .into_iter()
                .map(|(mode, runs)| (mode, ModeResult { mode, runs }))
                .collect(),
            cap_secs: 9.0,
        };
        let report = Report {
            workloads: vec![
                // Medians: root 12 ms of 3 runs, region 10 ms.
                result(
                    "h2",
                    vec![
                        (
                            Mode::Root,
                            vec![
                                timed(12_000_000, 7, false),
                                timed(30_000_000, 7, false),
                                timed(11_000_000, 7, false),
                            ],
                        ),
                        (Mode::Region, vec![timed(10_000_000, 7, false)]),
                        (Mode::RootSkipTrivial, vec![timed(11_500_000, 7, true)]),
                        (Mode::RootAdaptive, vec![timed(10_500_000, 7, false)]),
                    ],
                ),
                result(
                    "javac",
                    vec![
                        (Mode::Root, vec![timed(5_000_000, 3, true)]),
                        (Mode::Region, vec![timed(5_000_000, 4, false)]),
                    ],
                ),
                // No region run: no row.
                result("xalan", vec![(Mode::Root, vec![timed(1, 1, false)])]),
            ],
            failures: vec![],
        };
        let mut s = String::new();
        accuracy(&mut s, &report);
        assert!(
            s.contains("| h2 | 7 | 10.0 | 12.0 | 1.20 | 2.40 | ~11.5 | 1.15 | 10.5 | 1.05 |\n"),
            "{s}"
        );
        assert!(
            s.contains("| javac | **3 / 4** | 5.0 | ~5.0 | 1.00 | 2.00 | – | – | – | – |\n"),
            "{s}"
        );
        assert!(!s.contains("| xalan"), "{s}");
        assert_eq!(charged_ratios(&report), vec![1.2, 1.0]);
        // Nothing to compare: no section.
        let mut empty = String::new();
        accuracy(
            &mut empty,
            &Report {
                workloads: vec![],
                failures: vec![],
            },
        );
        assert_eq!(empty, "");
    }
}
