//! `ferrofluid-suite prepare` / `ferrofluid-suite run`: see bench/README.md.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ferrofluid_suite::modes::{Mode, ALL};
use ferrofluid_suite::suite::{self, Config};
use ferrofluid_suite::table::{self, Machine};
use ferrofluid_suite::workloads::{by_name, Workload, WORKLOADS};
use ferrofluid_suite::{compare, doc, prepare, SuiteError};

#[derive(Parser)]
#[command(
    name = "ferrofluid-suite",
    about = "Overhead and correctness suite on real Java programs"
)]
struct Opt {
    /// Work directory (compiled drivers, inputs, run outputs) [default: $CARGO_TARGET_DIR/suite-work]
    #[arg(long, global = true)]
    work: Option<PathBuf>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Compile the drivers and the JVMTI agent, unpack the javac sources (idempotent)
    Prepare {
        /// Only these workloads (comma-separated names)
        #[arg(long, value_delimiter = ',')]
        workloads: Vec<String>,
    },
    /// Run the table (and write it into docs/PERFORMANCE.md)
    Run {
        /// Runs per mode (the median is reported)
        #[arg(long, default_value_t = 3)]
        n: u32,
        /// Kill a run after this many times the fastest baseline...
        #[arg(long, default_value_t = 10.0)]
        cap_ratio: f64,
        /// ...or after this many seconds, whichever is less
        #[arg(long, default_value_t = 300.0)]
        cap_secs: f64,
        /// Only these workloads (comma-separated names)
        #[arg(long, value_delimiter = ',')]
        workloads: Vec<String>,
        /// Only these modes (comma-separated: baseline, total, total-verify, lazy-main, root, root-skip-trivial, root-adaptive, region, count, count-root, cpu-sampled, cpu-sampled-root, native, native-cpu, alloc-10, alloc-100, alloc-0, alloc-bytes, sample, sample-1k, sample-root, async-cpu, async-cpu-1k, async-alloc, jfr, jfr-profile, jvmti-events)
        #[arg(long, value_delimiter = ',')]
        modes: Vec<String>,
        /// The CI subset: smoke workloads at tiny scale, ferrofluid modes only, N=1, no table
        #[arg(long)]
        smoke: bool,
        /// Do not touch docs/PERFORMANCE.md; print the section on stdout instead
        #[arg(long)]
        no_doc: bool,
        /// Keep JFR recordings and javac output in the run directories
        #[arg(long)]
        keep: bool,
        /// The ferrofluid binary [default: $CARGO_TARGET_DIR/release/ferrofluid]
        #[arg(long)]
        ferrofluid: Option<PathBuf>,
        /// The agent library for `ferrofluid run --agent` [default: next to the binary]
        #[arg(long)]
        agent: Option<PathBuf>,
        /// Compare with another build: a directory holding its `ferrofluid` and
        /// `libferrofluid_agent.so`. Each ferrofluid mode runs under both builds, interleaved; the
        /// table of both slowdowns goes into docs/PERFORMANCE.md between its compare markers
        /// (to stdout with --no-doc)
        #[arg(long, value_name = "DIR")]
        reference: Option<PathBuf>,
        /// async-profiler's `libasyncProfiler.so`, for the `async-cpu`, `async-cpu-1k` and `async-alloc` anchor
        /// columns (skipped without it)
        #[arg(long, value_name = "LIB", env = "ASYNC_PROFILER")]
        async_profiler: Option<PathBuf>,
        /// Every ferrofluid mode also pushes its profile to this backend URL every
        /// --push-every, labelled workload=NAME and suite_mode=MODE (bench/suite/push-volumes.sh)
        #[arg(long, value_name = "URL")]
        push: Option<String>,
        /// With --push: how often
        #[arg(
            long,
            value_name = "DURATION",
            default_value = "10s",
            requires = "push"
        )]
        push_every: String,
    },
}

fn repo() -> PathBuf {
    prepare::suite_dir().join("../..")
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"))
}

fn select(names: &[String]) -> Result<Vec<&'static Workload>, SuiteError> {
    if names.is_empty() {
        return Ok(WORKLOADS.iter().collect());
    }
    names
        .iter()
        .map(|n| {
            by_name(n).ok_or_else(|| {
                let all: Vec<_> = WORKLOADS.iter().map(|w| w.name).collect();
                SuiteError::Setup(format!("unknown workload `{n}`; known: {}", all.join(", ")))
            })
        })
        .collect()
}

fn main() -> ExitCode {
    let opt = Opt::parse();
    let work = opt
        .work
        .clone()
        .unwrap_or_else(|| target_dir().join("suite-work"));
    match run(opt.command, &work) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ferrofluid-suite: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(cmd: Cmd, work: &Path) -> Result<ExitCode, SuiteError> {
    match cmd {
        Cmd::Prepare { workloads } => {
            prepare::all(work, &select(&workloads)?)?;
            eprintln!("ferrofluid-suite: prepared {}", work.display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Run {
            n,
            cap_ratio,
            cap_secs,
            workloads,
            modes,
            smoke,
            no_doc,
            keep,
            ferrofluid,
            agent,
            reference,
            async_profiler,
            push,
            push_every,
        } => {
            let mut selected = select(&workloads)?;
            if smoke && workloads.is_empty() {
                selected.retain(|w| w.smoke_scale.is_some());
            }
            let modes: Vec<Mode> = if !modes.is_empty() {
                modes
                    .iter()
                    .map(|m| {
                        Mode::from_name(m).ok_or_else(|| {
                            SuiteError::Setup(format!(
                                "unknown mode `{m}`; known: {}",
                                ALL.map(|m| m.name()).join(", ")
                            ))
                        })
                    })
                    .collect::<Result<_, _>>()?
            } else if smoke {
                ALL.into_iter()
                    .filter(|m| *m == Mode::Baseline || m.is_ferrofluid())
                    .collect()
            } else {
                ALL.to_vec()
            };
            let ferrofluid = ferrofluid.unwrap_or_else(|| target_dir().join("release/ferrofluid"));
            if !ferrofluid.is_file() {
                return Err(SuiteError::Setup(format!(
                    "{} not found; cargo build --release -p ferrofluid -p ferrofluid-agent",
                    ferrofluid.display()
                )));
            }
            if !work.join("classes/suite/Sum.class").is_file() {
                return Err(SuiteError::NotPrepared(work.join("classes")));
            }
            let cfg = Config {
                work: work.to_path_buf(),
                workloads: selected,
                modes,
                n: if smoke { 1 } else { n },
                cap_ratio,
                cap_secs,
                smoke,
                ferrofluid,
                agent,
                java: prepare::java_home().join("bin/java"),
                methodevents: work.join("libmethodevents.so"),
                async_profiler,
                keep,
                push: push.map(|url| (url, push_every)),
            };
            if let Some(dir) = reference {
                let pair = (dir.join("ferrofluid"), dir.join("libferrofluid_agent.so"));
                if !pair.0.is_file() || !pair.1.is_file() {
                    return Err(SuiteError::Setup(format!(
                        "{} must hold `ferrofluid` and `libferrofluid_agent.so`",
                        dir.display()
                    )));
                }
                let machine = Machine::before(&cfg, &repo());
                let (results, failures) = compare::run(&cfg, pair)?;
                let section = format!(
                    "- Date: {}; current build: commit `{}`; reference: `{}`\n- Load average \
                     (1/5/15 min) before {}, after {}\n- Command: `{}`\n\n{}",
                    machine.date,
                    machine.commit,
                    dir.display(),
                    machine.load_before,
                    table::load_average(),
                    machine.command,
                    compare::render(&results, &cfg.modes, cfg.n)
                );
                if no_doc {
                    print!("{section}");
                } else {
                    let doc_path = repo().join("docs/PERFORMANCE.md");
                    let old = std::fs::read_to_string(&doc_path)
                        .map_err(SuiteError::io(format!("read {}", doc_path.display())))?;
                    let new =
                        doc::replace_between(&old, doc::COMPARE_BEGIN, doc::COMPARE_END, &section);
                    std::fs::write(&doc_path, new)
                        .map_err(SuiteError::io(format!("write {}", doc_path.display())))?;
                    eprintln!(
                        "ferrofluid-suite: comparison written to {}",
                        doc_path.display()
                    );
                }
                return Ok(failed(&failures));
            }
            let doc_path = repo().join("docs/PERFORMANCE.md");
            let write_doc = !no_doc && !smoke;
            let mut machine = Machine::before(&cfg, &repo());
            let total = cfg.workloads.len();
            let write = |report: &suite::Report,
                         partial: Option<&str>,
                         machine: &Machine|
             -> Result<(), SuiteError> {
                if !write_doc {
                    return Ok(());
                }
                let old = std::fs::read_to_string(&doc_path)
                    .map_err(SuiteError::io(format!("read {}", doc_path.display())))?;
                let section = table::render(report, &cfg, machine, partial);
                std::fs::write(&doc_path, doc::replace_section(&old, &section))
                    .map_err(SuiteError::io(format!("write {}", doc_path.display())))
            };
            let mut progress_error = None;
            let report = suite::run(&cfg, &mut |r| {
                if r.workloads.len() < total {
                    let mut m = machine.clone();
                    m.load_after = format!("{} (run still going)", table::load_average());
                    let note = format!(
                        "{} of {total} workloads done, the run is still going or was interrupted",
                        r.workloads.len()
                    );
                    if let Err(e) = write(r, Some(&note), &m) {
                        progress_error.get_or_insert(e);
                    }
                }
            })?;
            if let Some(e) = progress_error {
                return Err(e);
            }
            machine.load_after = table::load_average();
            write(&report, None, &machine)?;
            if no_doc && !smoke {
                print!("{}", table::render(&report, &cfg, &machine, None));
            }
            if write_doc {
                eprintln!("ferrofluid-suite: table written to {}", doc_path.display());
            }
            Ok(failed(&report.failures))
        }
    }
}

/// Exit status 1 when some run's output differed from its baseline's (each is named).
fn failed(failures: &[suite::Failure]) -> ExitCode {
    if failures.is_empty() {
        eprintln!("ferrofluid-suite: all checksums equal the baselines'");
        ExitCode::SUCCESS
    } else {
        eprintln!("ferrofluid-suite: OUTPUT EQUALITY FAILED:");
        for f in failures {
            eprintln!("  {} / {}: {}", f.workload, f.mode.name(), f.message);
        }
        ExitCode::from(1)
    }
}
