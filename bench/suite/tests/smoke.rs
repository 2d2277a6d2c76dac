//! The CI smoke run of the suite (correctness only, no timing): the smoke workloads at their tiny
//! scale, once each as a baseline and under every ferrofluid mode, through `ferrofluid run` and
//! the real agent. Every run must exit normally with the baseline's checksum, and ferrofluid's
//! profiles must have counted methods (the roots must match methods that ran).

use std::path::PathBuf;

use ferrofluid_suite::exec::Exit;
use ferrofluid_suite::modes::{Mode, ALL};
use ferrofluid_suite::prepare;
use ferrofluid_suite::suite::{self, Config};
use ferrofluid_suite::workloads::{Workload, WORKLOADS};

/// `total` under `-Xverify:all` is part of the smoke (it crashed HotSpot 17's C2 while
/// `java.lang.Object::<init>` was instrumented; the planner never instruments `java.lang.Object` now).
const SMOKE_VERIFY: bool = true;

/// `target/release`: cargo builds the `ferrofluid` binary there for the cli crate's tests, and the
/// agent cdylib in `deps/` for the agent crate's tests (both before any test runs).
fn built(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    for dir in [deps, deps.parent().unwrap()] {
        if dir.join(name).is_file() {
            return dir.join(name);
        }
    }
    panic!(
        "{name} not built in {}; run `cargo test --workspace --release` or \
         `cargo build --release -p ferrofluid -p ferrofluid-agent` first",
        deps.parent().unwrap().display()
    );
}

#[test]
fn smoke_workloads_give_the_baseline_checksum_under_every_ferrofluid_mode() {
    let workloads: Vec<&'static Workload> = WORKLOADS
        .iter()
        .filter(|w| w.smoke_scale.is_some())
        .collect();
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("suite-smoke");
    prepare::drivers(&work, &workloads).unwrap_or_else(|e| panic!("{e}"));
    let modes: Vec<Mode> = ALL
        .into_iter()
        .filter(|m| *m == Mode::Baseline || m.is_ferrofluid())
        .filter(|m| m.is_built() && (SMOKE_VERIFY || *m != Mode::TotalVerify))
        .collect();
    let cfg = Config {
        work: work.clone(),
        workloads: workloads.clone(),
        modes: modes.clone(),
        n: 1,
        // Correctness only: generous caps, so a slow shared CI machine does not skip checks.
        cap_ratio: 100.0,
        cap_secs: 300.0,
        smoke: true,
        ferrofluid: built("ferrofluid"),
        agent: Some(built("libferrofluid_agent.so")),
        java: prepare::java_home().join("bin/java"),
        methodevents: work.join("libmethodevents.so"),
        async_profiler: None,
        keep: false,
        push: None,
    };
    let report = suite::run(&cfg, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let failures: Vec<String> = report
        .failures
        .iter()
        .map(|f| format!("{} / {}: {}", f.workload, f.mode.name(), f.message))
        .collect();
    assert!(
        failures.is_empty(),
        "output equality failed:\n{}",
        failures.join("\n")
    );
    assert_eq!(report.workloads.len(), 3);
    for w in &report.workloads {
        let name = w.workload.name;
        let checksum = w.checksum.as_deref().unwrap();
        assert!(
            checksum.starts_with(&format!("{name} ")),
            "{name}: {checksum}"
        );
        assert_eq!(w.modes.keys().copied().collect::<Vec<_>>(), modes, "{name}");
        for (mode, m) in &w.modes {
            assert_eq!(m.runs.len(), 1, "{name} {mode:?}");
            let run = &m.runs[0];
            assert_eq!(
                run.outcome.exit,
                Exit::Ok,
                "{name} {mode:?} (see {})",
                run.dir.display()
            );
            assert_eq!(run.checksum.as_deref(), Some(checksum), "{name} {mode:?}");
            if mode.is_ferrofluid() {
                let counts = run
                    .methods
                    .unwrap_or_else(|| panic!("{name} {mode:?}: no profile"));
                let instrumented = counts.instrumented.unwrap();
                assert!(
                    counts.called >= 1,
                    "{name} {mode:?}: the root matched nothing that ran"
                );
                // Sampling instruments nothing (or only its root) and names the methods it saw;
                // native mode wraps native methods, which have no bytecode to instrument.
                let sampled = matches!(
                    mode,
                    Mode::Sample
                        | Mode::Sample1k
                        | Mode::SampleRoot
                        | Mode::Native
                        | Mode::NativeCpu
                );
                assert!(
                    sampled || instrumented >= counts.called,
                    "{name} {mode:?}: {counts:?}"
                );
            }
        }
        // The whole program calls more methods than main's subgraph, which calls more than the root's.
        let called = |mode| w.modes[&mode].runs[0].methods.unwrap().called;
        assert!(called(Mode::Total) > called(Mode::LazyMain), "{name}");
        assert!(called(Mode::LazyMain) > called(Mode::Root), "{name}");
    }
}
