//! The run loop: every workload under every mode, N times, interleaved (repetition 1 of every
//! mode, then repetition 2, ...) so that load drift on a shared machine hits all modes alike.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::charged::{self, RootTime};
use crate::exec::{run_capped, Exit, Outcome};
use crate::modes::Mode;
use crate::native_share::{self, NativeShare};
use crate::prepare::classpath;
use crate::workloads::{Workload, COMMON_JVM_ARGS};
use crate::SuiteError;

#[derive(Debug, Clone)]
pub struct Config {
    pub work: PathBuf,
    pub workloads: Vec<&'static Workload>,
    /// Modes to run; the baseline is always run first.
    pub modes: Vec<Mode>,
    pub n: u32,
    /// A run is killed after `cap_ratio` x the fastest baseline, or `cap_secs`, whichever is less.
    pub cap_ratio: f64,
    pub cap_secs: f64,
    /// Use each workload's smoke scale.
    pub smoke: bool,
    pub ferrofluid: PathBuf,
    /// `--agent` for `ferrofluid run` (default: the library next to the binary).
    pub agent: Option<PathBuf>,
    pub java: PathBuf,
    pub methodevents: PathBuf,
    /// async-profiler's `libasyncProfiler.so`; its modes are skipped without it.
    pub async_profiler: Option<PathBuf>,
    /// Keep large run outputs (JFR recordings, javac output).
    pub keep: bool,
    /// Every ferrofluid mode also pushes to this URL every this often (`--push URL --every
    /// D`), labelled with the workload and the suite's mode: the data volumes of docs/push.md.
    pub push: Option<(String, String)>,
}

/// Method counts of a run: from the ferrofluid profile, or from the JVMTI agent's summary line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Methods {
    pub instrumented: Option<u64>,
    pub called: u64,
}

#[derive(Debug, Clone)]
pub struct RunResult {
    pub outcome: Outcome,
    pub checksum: Option<String>,
    pub methods: Option<Methods>,
    /// The root method's charged (`root`) or region-measured (`region`) time.
    pub root_time: Option<RootTime>,
    /// The bytecode/native split of a `native` run.
    pub native: Option<NativeShare>,
    pub dir: PathBuf,
}

#[derive(Debug, Clone)]
pub struct ModeResult {
    pub mode: Mode,
    pub runs: Vec<RunResult>,
}

impl ModeResult {
    /// Median seconds of the runs that finished (capped ones count as infinite); None when the
    /// median run was capped or no run finished. Failed runs (crashes) have no time.
    pub fn median_secs(&self) -> Option<f64> {
        let mut t: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|r| match r.outcome.exit {
                Exit::Ok => Some(r.outcome.secs),
                Exit::Capped => Some(f64::INFINITY),
                Exit::Failed(_) => None,
            })
            .collect();
        if t.is_empty() {
            return None;
        }
        t.sort_by(f64::total_cmp);
        let m = if t.len() % 2 == 1 {
            t[t.len() / 2]
        } else {
            (t[t.len() / 2 - 1] + t[t.len() / 2]) / 2.0
        };
        m.is_finite().then_some(m)
    }

    /// Median CPU seconds of the runs that exited by themselves (None if any was capped).
    pub fn median_cpu_secs(&self) -> Option<f64> {
        if self.capped() {
            return None;
        }
        let mut t: Vec<f64> = self
            .runs
            .iter()
            .filter(|r| r.outcome.exit == Exit::Ok)
            .filter_map(|r| r.outcome.cpu_secs)
            .collect();
        if t.is_empty() {
            return None;
        }
        t.sort_by(f64::total_cmp);
        Some(if t.len() % 2 == 1 {
            t[t.len() / 2]
        } else {
            (t[t.len() / 2 - 1] + t[t.len() / 2]) / 2.0
        })
    }

    pub fn capped(&self) -> bool {
        self.runs.iter().any(|r| r.outcome.exit == Exit::Capped)
    }

    /// The exit status of the first run that failed (crashed or exited non-zero).
    pub fn failed(&self) -> Option<i32> {
        self.runs.iter().find_map(|r| match r.outcome.exit {
            Exit::Failed(c) => Some(c),
            _ => None,
        })
    }

    /// The median root time of the runs that have one.
    pub fn root_time(&self) -> Option<RootTime> {
        charged::median(self.runs.iter().filter_map(|r| r.root_time).collect())
    }

    /// The median native split of the runs that have one.
    pub fn native_share(&self) -> Option<NativeShare> {
        native_share::median(self.runs.iter().filter_map(|r| r.native.clone()).collect())
    }

    /// Method counts of the last run that has them.
    pub fn methods(&self) -> Option<Methods> {
        self.runs.iter().rev().find_map(|r| r.methods)
    }
}

#[derive(Debug, Clone)]
pub struct WorkloadResult {
    pub workload: &'static Workload,
    pub scale: u32,
    pub checksum: Option<String>,
    pub modes: BTreeMap<Mode, ModeResult>,
    /// The cap applied to non-baseline runs, seconds.
    pub cap_secs: f64,
}

impl WorkloadResult {
    /// Slowdown of `mode` against the baseline median: Ok(ratio), Err(Some(cap ratio)) when capped,
    /// Err(None) when it did not run.
    pub fn ratio(&self, mode: Mode) -> Result<f64, Option<f64>> {
        let base = self
            .modes
            .get(&Mode::Baseline)
            .and_then(ModeResult::median_secs)
            .ok_or(None)?;
        let m = self.modes.get(&mode).ok_or(None)?;
        match m.median_secs() {
            Some(s) => Ok(s / base),
            None if m.capped() => Err(Some(self.cap_secs / base)),
            None => Err(None),
        }
    }
}

impl WorkloadResult {
    /// CPU time of `mode` against the baseline's (medians); None when either is missing or capped.
    pub fn cpu_ratio(&self, mode: Mode) -> Option<f64> {
        let base = self.modes.get(&Mode::Baseline)?.median_cpu_secs()?;
        Some(self.modes.get(&mode)?.median_cpu_secs()? / base)
    }
}

/// A broken promise: a checksum that differs from the baseline's, or a run that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub workload: &'static str,
    pub mode: Mode,
    pub message: String,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub workloads: Vec<WorkloadResult>,
    pub failures: Vec<Failure>,
}

/// The `checksum NAME HEX` line a workload prints last.
pub fn parse_checksum(stdout: &str) -> Option<String> {
    stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("checksum "))
        .map(|s| s.trim().to_string())
}

/// `methodevents: methods=N calls=C ...` from the JVMTI agent's stderr.
pub fn parse_methodevents(stderr: &str) -> Option<Methods> {
    let line = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("methodevents: "))?;
    let called = line
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("methods="))?
        .parse()
        .ok()?;
    Some(Methods {
        instrumented: None,
        called,
    })
}

/// `methods.instrumented` / `methods.called` of a ferrofluid JSON profile. Only the flat
/// `"methods": {...}` object near the top is parsed: a whole-program profile can be hundreds of
/// MB, with trees deeper than serde_json's recursion limit.
pub fn parse_profile_methods(json: &str) -> Option<Methods> {
    let start = json.find("\"methods\"")?;
    let open = start + json[start..].find('{')?;
    let close = open + json[open..].find('}')?;
    let m: serde_json::Value = serde_json::from_str(&json[open..=close]).ok()?;
    Some(Methods {
        instrumented: m.get("instrumented")?.as_u64(),
        called: m.get("called")?.as_u64()?,
    })
}

/// Compares a run with the reference checksum; the failure names workload and mode.
pub fn check(
    w: &'static str,
    mode: Mode,
    run: &RunResult,
    reference: Option<&str>,
) -> Option<Failure> {
    let fail = |message: String| {
        Some(Failure {
            workload: w,
            mode,
            message,
        })
    };
    let dir = run.dir.display();
    match (&run.outcome.exit, &run.checksum, reference) {
        (Exit::Capped, _, _) => None,
        (Exit::Failed(c), _, _) => fail(format!("exited with status {c} (see {dir}/stderr)")),
        (Exit::Ok, None, _) => fail(format!("printed no checksum line (see {dir}/stdout)")),
        (Exit::Ok, Some(got), Some(want)) if got != want => fail(format!(
            "CHECKSUM DIFFERS: {got} instead of the baseline's {want} (see {dir}/stdout)"
        )),
        _ => None,
    }
}

fn expand(arg: &str, scale: u32, work: &Path, run: &Path) -> String {
    arg.replace("{scale}", &scale.to_string())
        .replace("{work}", &work.display().to_string())
        .replace(
            "{programs}",
            &crate::prepare::suite_dir()
                .join("programs")
                .display()
                .to_string(),
        )
        .replace("{run}", &run.display().to_string())
}

/// The command line of one run.
pub fn command(
    cfg: &Config,
    w: &Workload,
    mode: Mode,
    scale: u32,
    run: &Path,
) -> Result<Command, SuiteError> {
    let cp = std::env::join_paths(classpath(w, &cfg.work)?)
        .map_err(|e| SuiteError::Setup(e.to_string()))?;
    let mut java: Vec<String> = vec![cfg.java.display().to_string()];
    let async_profiler = cfg.async_profiler.as_ref().map(|p| p.display().to_string());
    java.extend(mode.jvm_flags(
        &cfg.methodevents.display().to_string(),
        async_profiler.as_deref(),
    ));
    java.extend(COMMON_JVM_ARGS.iter().map(|s| s.to_string()));
    java.extend(w.jvm_args.iter().map(|s| s.to_string()));
    java.push("-cp".into());
    java.push(cp.to_string_lossy().into_owned());
    java.push(w.main.into());
    java.extend(w.args.iter().map(|a| expand(a, scale, &cfg.work, run)));
    let mut cmd = match mode.ferrofluid_flags(w) {
        Some(flags) => {
            let mut c = Command::new(&cfg.ferrofluid);
            c.arg("run").args(flags).args(["-o", "profile.json"]);
            if let Some((url, every)) = &cfg.push {
                c.args(["--push", url, "--every", every]);
                c.args(["--label", &format!("workload={}", w.name)]);
                c.args(["--label", &format!("suite_mode={}", mode.name())]);
            }
            if let Some(agent) = &cfg.agent {
                c.arg("--agent").arg(agent);
            }
            c.arg("--").args(&java);
            c
        }
        None => {
            let mut c = Command::new(&java[0]);
            c.args(&java[1..]);
            c
        }
    };
    cmd.env_remove("JAVA_TOOL_OPTIONS");
    Ok(cmd)
}

pub(crate) fn one_run(
    cfg: &Config,
    w: &Workload,
    mode: Mode,
    scale: u32,
    dir: &Path,
    cap: f64,
) -> Result<RunResult, SuiteError> {
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(SuiteError::io(format!("clean {}", dir.display())))?;
    }
    fs::create_dir_all(dir).map_err(SuiteError::io(format!("create {}", dir.display())))?;
    let mut cmd = command(cfg, w, mode, scale, dir)?;
    fs::write(dir.join("command"), format!("{cmd:?}\n"))
        .map_err(SuiteError::io("write command"))?;
    let outcome = run_capped(&mut cmd, dir, Duration::from_secs_f64(cap))?;
    let read = |f: &str| fs::read_to_string(dir.join(f)).unwrap_or_default();
    let head = |f: &str| -> String {
        use std::io::Read as _;
        let mut buf = Vec::new();
        if let Ok(file) = fs::File::open(dir.join(f)) {
            let _ = file.take(64 * 1024).read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    };
    let checksum = parse_checksum(&read("stdout"));
    let methods = if mode.is_ferrofluid() {
        parse_profile_methods(&head("profile.json"))
    } else if mode == Mode::JvmtiEvents {
        parse_methodevents(&read("stderr"))
    } else {
        None
    };
    let root_time = match mode {
        // Small profiles: one method's subgraph, or one region.
        Mode::Root | Mode::RootSkipTrivial | Mode::RootAdaptive | Mode::Region
            if outcome.exit == Exit::Ok =>
        {
            fs::read(dir.join("profile.json"))
                .ok()
                .and_then(|json| charged::root_time(&json, w.root))
        }
        _ => None,
    };
    let native = (matches!(mode, Mode::Native | Mode::NativeCpu) && outcome.exit == Exit::Ok)
        .then(|| fs::read(dir.join("profile.json")).ok())
        .flatten()
        .and_then(|json| native_share::native_share(&json));
    if !cfg.keep {
        // Large leftovers not needed for the table.
        let _ = fs::remove_file(dir.join("rec.jfr"));
        let _ = fs::remove_dir_all(dir.join("javac-out"));
        // Whole-program profiles reach hundreds of MB; only their method counts are used.
        let _ = fs::remove_file(dir.join("profile.json"));
    }
    Ok(RunResult {
        outcome,
        checksum,
        methods,
        root_time,
        native,
        dir: dir.to_path_buf(),
    })
}

/// Runs the suite; progress goes to stderr, and `after_each` sees the report after every workload.
pub fn run(cfg: &Config, after_each: &mut dyn FnMut(&Report)) -> Result<Report, SuiteError> {
    let mut report = Report {
        workloads: Vec::new(),
        failures: Vec::new(),
    };
    let mut modes = vec![Mode::Baseline];
    modes.extend(cfg.modes.iter().copied().filter(|m| *m != Mode::Baseline));
    for w in &cfg.workloads {
        let scale = if cfg.smoke {
            w.smoke_scale.unwrap_or(1)
        } else {
            w.scale
        };
        let mut res = WorkloadResult {
            workload: w,
            scale,
            checksum: None,
            modes: BTreeMap::new(),
            cap_secs: cfg.cap_secs,
        };
        let mut fastest_base = f64::INFINITY;
        'reps: for rep in 0..cfg.n {
            for &mode in &modes {
                if rep >= mode.runs(cfg.n)
                    || !mode.is_built()
                    || (mode.is_async_profiler() && cfg.async_profiler.is_none())
                {
                    continue;
                }
                let entry = res.modes.entry(mode).or_insert_with(|| ModeResult {
                    mode,
                    runs: Vec::new(),
                });
                // A mode over the cap once is not run again: its median is "> cap" anyway; a mode
                // that failed (crashed) once is not run again either: the failure is the result.
                if entry.capped() || entry.failed().is_some() {
                    continue;
                }
                let cap = if mode == Mode::Baseline {
                    cfg.cap_secs
                } else {
                    cfg.cap_secs.min(cfg.cap_ratio * fastest_base)
                };
                let dir =
                    cfg.work
                        .join("runs")
                        .join(w.name)
                        .join(format!("{}-{}", mode.name(), rep + 1));
                let r = one_run(cfg, w, mode, scale, &dir, cap)?;
                if mode != Mode::Baseline {
                    res.cap_secs = cap;
                }
                let failure = check(w.name, mode, &r, res.checksum.as_deref());
                eprintln!(
                    "[suite] {} {} {}/{}: {:.2} s {}",
                    w.name,
                    mode.name(),
                    rep + 1,
                    mode.runs(cfg.n),
                    r.outcome.secs,
                    match (&r.outcome.exit, &failure) {
                        (Exit::Capped, _) => "> cap (killed)".to_string(),
                        (_, Some(f)) => format!("FAILED: {}", f.message),
                        _ => "checksum ok".to_string(),
                    } + &r.methods.map_or(String::new(), |m| match m.instrumented {
                        Some(i) => format!(", methods instrumented {i} called {}", m.called),
                        None => format!(", methods called {}", m.called),
                    })
                );
                let baseline_failed = mode == Mode::Baseline && failure.is_some();
                if mode == Mode::Baseline && r.outcome.exit == Exit::Ok {
                    fastest_base = fastest_base.min(r.outcome.secs);
                    res.checksum
                        .get_or_insert_with(|| r.checksum.clone().unwrap_or_default());
                }
                entry.runs.push(r);
                if let Some(f) = failure {
                    report.failures.push(f);
                }
                if baseline_failed || (mode == Mode::Baseline && !fastest_base.is_finite()) {
                    // Without a baseline nothing can be compared.
                    break 'reps;
                }
            }
        }
        report.workloads.push(res);
        after_each(&report);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_result(exit: Exit, secs: f64, checksum: Option<&str>) -> RunResult {
        RunResult {
            outcome: Outcome {
                exit,
                secs,
                cpu_secs: Some(secs / 2.0),
            },
            checksum: checksum.map(String::from),
            methods: None,
            root_time: None,
            native: None,
            dir: PathBuf::from("/w/runs/x"),
        }
    }

    #[test]
    fn checksum_and_counts_are_parsed() {
        assert_eq!(
            parse_checksum("items 3\nchecksum xalan abc123\n").as_deref(),
            Some("xalan abc123")
        );
        assert_eq!(parse_checksum("no sum here\n"), None);
        assert_eq!(
            parse_methodevents("x\nmethodevents: methods=4352 calls=45567218 threads=3\n"),
            Some(Methods {
                instrumented: None,
                called: 4352
            })
        );
        assert_eq!(
            parse_profile_methods(
                r#"{"format":"ferrofluid","methods":{"instrumented":15550,"called":3853}}"#
            ),
            Some(Methods {
                instrumented: Some(15550),
                called: 3853
            })
        );
        assert_eq!(parse_profile_methods("not json"), None);
        // Only the head is read: a truncated document still gives its counts.
        assert_eq!(
            parse_profile_methods("{\n  \"format\": \"ferrofluid\",\n  \"methods\": {\n    \"instrumented\": 5,\n    \"called\": 2\n  },\n  \"threads\": [{\"name\": \"ma"),
            Some(Methods { instrumented: Some(5), called: 2 })
        );
    }

    #[test]
    fn a_differing_checksum_fails_naming_workload_and_mode() {
        let ok = run_result(Exit::Ok, 1.0, Some("h2 aa"));
        assert_eq!(check("h2", Mode::Total, &ok, Some("h2 aa")), None);
        let bad = run_result(Exit::Ok, 1.0, Some("h2 bb"));
        let f = check("h2", Mode::Root, &bad, Some("h2 aa")).unwrap();
        assert_eq!((f.workload, f.mode), ("h2", Mode::Root));
        assert_eq!(
            f.message,
            "CHECKSUM DIFFERS: h2 bb instead of the baseline's h2 aa (see /w/runs/x/stdout)"
        );
        let crashed = run_result(Exit::Failed(134), 1.0, None);
        assert_eq!(
            check("h2", Mode::Total, &crashed, Some("h2 aa"))
                .unwrap()
                .message,
            "exited with status 134 (see /w/runs/x/stderr)"
        );
        let silent = run_result(Exit::Ok, 1.0, None);
        assert!(check("h2", Mode::Total, &silent, Some("h2 aa")).is_some());
        // A capped run has no output to compare; it is reported as "> cap", not as a failure.
        assert_eq!(
            check(
                "h2",
                Mode::Total,
                &run_result(Exit::Capped, 9.0, None),
                Some("h2 aa")
            ),
            None
        );
    }

    #[test]
    fn median_and_ratio_with_capped_and_failed_runs() {
        let mode = |mode, runs: Vec<RunResult>| (mode, ModeResult { mode, runs });
        let w = WorkloadResult {
            workload: crate::workloads::by_name("h2").unwrap(),
            scale: 1,
            checksum: None,
            modes: BTreeMap::from([
                mode(
                    Mode::Baseline,
                    vec![
                        run_result(Exit::Ok, 2.0, None),
                        run_result(Exit::Ok, 4.0, None),
                        run_result(Exit::Ok, 3.0, None),
                    ],
                ),
                mode(
                    Mode::Total,
                    vec![
                        run_result(Exit::Ok, 6.0, None),
                        run_result(Exit::Ok, 9.0, None),
                    ],
                ),
                mode(
                    Mode::JvmtiEvents,
                    vec![run_result(Exit::Capped, 30.0, None)],
                ),
                mode(
                    Mode::Root,
                    vec![
                        run_result(Exit::Failed(134), 1.0, None),
                        run_result(Exit::Ok, 5.0, None),
                    ],
                ),
            ]),
            cap_secs: 30.0,
        };
        assert_eq!(w.ratio(Mode::Total), Ok(2.5));
        assert_eq!(w.ratio(Mode::JvmtiEvents), Err(Some(10.0)));
        // A crashed run has no time: the median is over the runs that finished.
        assert_eq!(w.ratio(Mode::Root), Ok(5.0 / 3.0));
        assert_eq!(w.modes[&Mode::Root].failed(), Some(134));
        assert_eq!(w.modes[&Mode::Total].failed(), None);
        assert_eq!(w.ratio(Mode::LazyMain), Err(None));
        assert_eq!(w.cpu_ratio(Mode::Total), Some(2.5));
        assert_eq!(w.cpu_ratio(Mode::JvmtiEvents), None);
    }
}
