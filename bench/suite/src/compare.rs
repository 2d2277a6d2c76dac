//! Two builds of ferrofluid side by side: every workload's baseline, then each mode under the
//! build being measured and under a reference build (e.g. the last release), interleaved within
//! every repetition so that load drift on a shared machine hits both alike. The result is a
//! table of slowdowns against the same baseline and their ratio, new over reference.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::exec::Exit;
use crate::modes::Mode;
use crate::suite::{check, one_run, Config, Failure, ModeResult, RunResult};
use crate::workloads::Workload;
use crate::SuiteError;

/// Which build ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Build {
    Current,
    Reference,
}

/// The runs of one workload: the baseline's and, per (mode, build), the others.
#[derive(Debug, Clone)]
pub struct Compared {
    pub workload: &'static Workload,
    pub baseline: ModeResult,
    pub modes: BTreeMap<(Mode, Build), ModeResult>,
    pub cap_secs: f64,
}

impl Compared {
    /// Slowdown of `mode` under `build` against the baseline median: Ok(ratio), Err(Some(cap
    /// ratio)) when capped, Err(None) when it did not finish.
    pub fn ratio(&self, mode: Mode, build: Build) -> Result<f64, Option<f64>> {
        let base = self.baseline.median_secs().ok_or(None)?;
        let m = self.modes.get(&(mode, build)).ok_or(None)?;
        match m.median_secs() {
            Some(s) => Ok(s / base),
            None if m.capped() => Err(Some(self.cap_secs / base)),
            None => Err(None),
        }
    }

    /// CPU time of `mode` under `build` against the baseline's (medians of runs that finished).
    pub fn cpu_ratio(&self, mode: Mode, build: Build) -> Option<f64> {
        let base = self.baseline.median_cpu_secs()?;
        Some(self.modes.get(&(mode, build))?.median_cpu_secs()? / base)
    }
}

/// Runs `cfg`'s workloads and modes under the build of `cfg` and under `reference` (a ferrofluid
/// binary and its agent library).
pub fn run(
    cfg: &Config,
    reference: (PathBuf, PathBuf),
) -> Result<(Vec<Compared>, Vec<Failure>), SuiteError> {
    let mut refcfg = cfg.clone();
    refcfg.ferrofluid = reference.0;
    refcfg.agent = Some(reference.1);
    let modes: Vec<Mode> = cfg
        .modes
        .iter()
        .copied()
        .filter(|m| m.is_ferrofluid())
        .collect();
    let mut out = Vec::new();
    let mut failures = Vec::new();
    for w in &cfg.workloads {
        let mut c = Compared {
            workload: w,
            baseline: ModeResult {
                mode: Mode::Baseline,
                runs: Vec::new(),
            },
            modes: BTreeMap::new(),
            cap_secs: cfg.cap_secs,
        };
        let mut checksum: Option<String> = None;
        let mut fastest = f64::INFINITY;
        for rep in 0..cfg.n {
            let dir = |name: &str| {
                cfg.work
                    .join("compare")
                    .join(w.name)
                    .join(format!("{name}-{}", rep + 1))
            };
            let r = one_run(
                cfg,
                w,
                Mode::Baseline,
                w.scale,
                &dir("baseline"),
                cfg.cap_secs,
            )?;
            report(w, "baseline", rep, cfg.n, &r);
            if let Some(f) = check(w.name, Mode::Baseline, &r, checksum.as_deref()) {
                failures.push(f);
            }
            if r.outcome.exit == Exit::Ok {
                fastest = fastest.min(r.outcome.secs);
                checksum.get_or_insert_with(|| r.checksum.clone().unwrap_or_default());
            }
            c.baseline.runs.push(r);
            if !fastest.is_finite() {
                break;
            }
            let cap = cfg.cap_secs.min(cfg.cap_ratio * fastest);
            c.cap_secs = cap;
            for &mode in &modes {
                for (build, bcfg, tag) in [
                    (Build::Current, cfg, "current"),
                    (Build::Reference, &refcfg, "reference"),
                ] {
                    let entry = c.modes.entry((mode, build)).or_insert_with(|| ModeResult {
                        mode,
                        runs: Vec::new(),
                    });
                    if entry.capped() || entry.failed().is_some() {
                        continue;
                    }
                    let name = format!("{}-{tag}", mode.name());
                    let r = one_run(bcfg, w, mode, w.scale, &dir(&name), cap)?;
                    report(w, &name, rep, cfg.n, &r);
                    if let Some(f) = check(w.name, mode, &r, checksum.as_deref()) {
                        failures.push(f);
                    }
                    entry.runs.push(r);
                }
            }
        }
        out.push(c);
    }
    Ok((out, failures))
}

fn report(w: &Workload, name: &str, rep: u32, n: u32, r: &RunResult) {
    eprintln!(
        "[compare] {} {name} {}/{n}: {:.2} s{}",
        w.name,
        rep + 1,
        r.outcome.secs,
        match r.outcome.exit {
            Exit::Ok => "",
            Exit::Capped => " > cap (killed)",
            Exit::Failed(_) => " FAILED",
        }
    );
}

fn cell(r: Result<f64, Option<f64>>) -> String {
    match r {
        Ok(x) => format!("{x:.2}x"),
        Err(Some(cap)) => format!("> {cap:.1}x"),
        Err(None) => "n/a".into(),
    }
}

/// The markdown table: a row per workload and mode, the slowdowns under both builds and their
/// ratio (below 1: the current build is faster), the same for CPU time (what a shared machine
/// disturbs least), then the geometric means of the ratios.
pub fn render(results: &[Compared], modes: &[Mode], n: u32) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| workload | mode | current | reference | current / reference | CPU current / reference |\n|---|---|---:|---:|---:|---:|"
    );
    let mut per_mode: BTreeMap<Mode, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for c in results {
        for &mode in modes.iter().filter(|m| m.is_ferrofluid()) {
            let cur = c.ratio(mode, Build::Current);
            let refr = c.ratio(mode, Build::Reference);
            let both = match (cur, refr) {
                (Ok(a), Ok(b)) => {
                    per_mode.entry(mode).or_default().0.push(a / b);
                    format!("{:.3}", a / b)
                }
                _ => "n/a".into(),
            };
            let cpu = match (
                c.cpu_ratio(mode, Build::Current),
                c.cpu_ratio(mode, Build::Reference),
            ) {
                (Some(a), Some(b)) => {
                    per_mode.entry(mode).or_default().1.push(a / b);
                    format!("{:.3}", a / b)
                }
                _ => "n/a".into(),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {both} | {cpu} |",
                c.workload.name,
                mode.name(),
                cell(cur),
                cell(refr)
            );
        }
    }
    let geomean = |v: &[f64]| match v.len() {
        0 => "n/a".to_string(),
        n => format!(
            "{:.3} ({n} workloads)",
            (v.iter().map(|x| x.ln()).sum::<f64>() / n as f64).exp()
        ),
    };
    for (mode, (wall, cpu)) in per_mode {
        let _ = writeln!(
            s,
            "| geometric mean | {} | | | {} | {} |",
            mode.name(),
            geomean(&wall),
            geomean(&cpu)
        );
    }
    let _ = writeln!(s, "\nMedians of {n} interleaved runs per build.");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Outcome;
    use crate::workloads::by_name;

    fn runs(secs: &[f64]) -> ModeResult {
        ModeResult {
            mode: Mode::Root,
            runs: secs
                .iter()
                .map(|&s| RunResult {
                    outcome: Outcome {
                        exit: Exit::Ok,
                        secs: s,
                        cpu_secs: Some(2.0 * s),
                    },
                    checksum: None,
                    methods: None,
                    root_time: None,
                    native: None,
                    dir: PathBuf::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn the_table_gives_both_slowdowns_and_their_ratio() {
        let w = by_name("h2").unwrap();
        let mut modes = BTreeMap::new();
        modes.insert((Mode::Root, Build::Current), runs(&[3.0, 3.1, 2.9]));
        modes.insert((Mode::Root, Build::Reference), runs(&[4.0, 4.2, 3.9]));
        let c = Compared {
            workload: w,
            baseline: runs(&[1.0, 1.1, 0.9]),
            modes,
            cap_secs: 10.0,
        };
        let table = render(&[c], &[Mode::Root, Mode::Region], 3);
        assert!(
            table.contains("| h2 | root | 3.00x | 4.00x | 0.750 | 0.750 |"),
            "{table}"
        );
        assert!(
            table.contains("| h2 | region | n/a | n/a | n/a | n/a |"),
            "{table}"
        );
        assert!(
            table.contains(
                "| geometric mean | root | | | 0.750 (1 workloads) | 0.750 (1 workloads) |"
            ),
            "{table}"
        );
    }
}
