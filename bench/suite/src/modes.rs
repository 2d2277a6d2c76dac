//! The configurations each workload runs under, and the command line of each.

use crate::workloads::Workload;

/// Code-region mode (`ferrofluid run --region PATTERN`). Flip to `true` once `--region` is in the
/// `ferrofluid` being measured; until then the table shows "n/a (not built)".
pub const REGION_BUILT: bool = true;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    Baseline,
    /// Whole program, exact CPU: `--scheme total` without roots.
    Total,
    /// `--scheme total` under `-Xverify:all`: correctness only (run once).
    TotalVerify,
    /// Lazy scheme from the workload's main method.
    LazyMain,
    /// Lazy scheme from a root covering ~10% of the run.
    Root,
    /// The same, trivial methods left without probes (`--skip-trivial`).
    RootSkipTrivial,
    /// The same, and the probes of short, frequent methods removed as it runs (`--adaptive`).
    RootAdaptive,
    /// Code region around one method.
    Region,
    /// Whole program, exact bytecode counts: `--mode count --scheme total` without roots.
    Count,
    /// Bytecode counts under the ~10% root (`--mode count`, lazy scheme).
    CountRoot,
    JfrDefault,
    JfrProfile,
    /// The JVMTI MethodEntry/MethodExit agent of bench/suite/agent.
    JvmtiEvents,
    /// Whole program, exact calls with sampled time: `--timing sampled --scheme total`.
    CpuSampled,
    /// Exact calls with sampled time under the ~10% root (lazy scheme).
    CpuSampledRoot,
    /// Whole program, native methods wrapped: time in native code vs bytecode (`--mode native`).
    Native,
    /// The same with thread CPU times (`--cpu`): the native share of the CPU time.
    NativeCpu,
    /// Whole program, allocations counted and every 10th of each site tracked.
    Alloc10,
    /// Whole program, allocations counted and every 100th of each site tracked.
    Alloc100,
    /// Whole program, allocations counted only (`--track-every 0`).
    Alloc0,
    /// Whole program, allocations counted and tracked by bytes (`--track-bytes 512k`, the
    /// interval of async-profiler's `alloc` and JFR's).
    AllocBytes,
    /// Whole program, CPU sampling at 100 Hz (`--mode sample --interval 10ms`).
    Sample,
    /// Whole program, CPU sampling at 1 kHz (`--interval 1ms`).
    Sample1k,
    /// The hybrid: sampling at 100 Hz only inside the ~10% root (`--mode sample --root`).
    SampleRoot,
    /// async-profiler's CPU sampling (`event=cpu`, 10 ms), when a library is given.
    AsyncCpu,
    /// async-profiler's CPU sampling at 1 kHz (`event=cpu`, 1 ms).
    AsyncCpu1k,
    /// async-profiler's allocation sampling (`event=alloc`, its default 512 KiB interval).
    AsyncAlloc,
}

pub const ALL: [Mode; 27] = [
    Mode::Baseline,
    Mode::Total,
    Mode::TotalVerify,
    Mode::LazyMain,
    Mode::Root,
    Mode::RootSkipTrivial,
    Mode::RootAdaptive,
    Mode::Region,
    Mode::Count,
    Mode::CountRoot,
    Mode::CpuSampled,
    Mode::CpuSampledRoot,
    Mode::Native,
    Mode::NativeCpu,
    Mode::Alloc10,
    Mode::Alloc100,
    Mode::Alloc0,
    Mode::AllocBytes,
    Mode::Sample,
    Mode::Sample1k,
    Mode::SampleRoot,
    Mode::AsyncCpu,
    Mode::AsyncCpu1k,
    Mode::AsyncAlloc,
    Mode::JfrDefault,
    Mode::JfrProfile,
    Mode::JvmtiEvents,
];

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Baseline => "baseline",
            Mode::Total => "total",
            Mode::TotalVerify => "total-verify",
            Mode::LazyMain => "lazy-main",
            Mode::Root => "root",
            Mode::RootSkipTrivial => "root-skip-trivial",
            Mode::RootAdaptive => "root-adaptive",
            Mode::Region => "region",
            Mode::Count => "count",
            Mode::CountRoot => "count-root",
            Mode::CpuSampled => "cpu-sampled",
            Mode::CpuSampledRoot => "cpu-sampled-root",
            Mode::Native => "native",
            Mode::NativeCpu => "native-cpu",
            Mode::JfrDefault => "jfr",
            Mode::JfrProfile => "jfr-profile",
            Mode::JvmtiEvents => "jvmti-events",
            Mode::Alloc10 => "alloc-10",
            Mode::Alloc100 => "alloc-100",
            Mode::Alloc0 => "alloc-0",
            Mode::AllocBytes => "alloc-bytes",
            Mode::Sample => "sample",
            Mode::Sample1k => "sample-1k",
            Mode::SampleRoot => "sample-root",
            Mode::AsyncCpu => "async-cpu",
            Mode::AsyncCpu1k => "async-cpu-1k",
            Mode::AsyncAlloc => "async-alloc",
        }
    }

    pub fn from_name(name: &str) -> Option<Mode> {
        ALL.into_iter().find(|m| m.name() == name)
    }

    /// Runs under ferrofluid (so they have method counts).
    pub fn is_ferrofluid(self) -> bool {
        matches!(
            self,
            Mode::Total
                | Mode::TotalVerify
                | Mode::LazyMain
                | Mode::Root
                | Mode::RootSkipTrivial
                | Mode::RootAdaptive
                | Mode::Region
                | Mode::Count
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
        )
    }

    /// Whether this ferrofluid can run the mode at all.
    pub fn is_built(self) -> bool {
        self != Mode::Region || REGION_BUILT
    }

    /// Correctness-only modes run once, whatever N is.
    pub fn runs(self, n: u32) -> u32 {
        if self == Mode::TotalVerify {
            1
        } else {
            n
        }
    }

    /// `ferrofluid run` flags before `--`; None for modes that run java directly.
    pub fn ferrofluid_flags(self, w: &Workload) -> Option<Vec<String>> {
        let flags: Vec<&str> = match self {
            Mode::Total | Mode::TotalVerify => vec!["--scheme", "total"],
            Mode::LazyMain => vec!["--scheme", "lazy", "--root", w.main_root],
            Mode::Root => vec!["--scheme", "lazy", "--root", w.root],
            Mode::RootSkipTrivial => vec!["--scheme", "lazy", "--root", w.root, "--skip-trivial"],
            Mode::RootAdaptive => vec![
                "--scheme",
                "lazy",
                "--root",
                w.root,
                "--skip-trivial",
                "--adaptive",
            ],
            Mode::Region => vec!["--region", w.region],
            Mode::Count => vec!["--mode", "count", "--scheme", "total"],
            Mode::CountRoot => vec!["--mode", "count", "--scheme", "lazy", "--root", w.root],
            Mode::CpuSampled => vec!["--timing", "sampled", "--scheme", "total"],
            Mode::CpuSampledRoot => {
                vec!["--timing", "sampled", "--scheme", "lazy", "--root", w.root]
            }
            Mode::Native => vec!["--mode", "native"],
            Mode::NativeCpu => vec!["--mode", "native", "--cpu"],
            Mode::Alloc10 => vec!["--mode", "alloc", "--track-every", "10"],
            Mode::Alloc100 => vec!["--mode", "alloc", "--track-every", "100"],
            Mode::Alloc0 => vec!["--mode", "alloc", "--track-every", "0"],
            Mode::AllocBytes => vec!["--mode", "alloc", "--track-bytes", "512k"],
            Mode::Sample => vec!["--mode", "sample", "--interval", "10ms"],
            Mode::Sample1k => vec!["--mode", "sample", "--interval", "1ms"],
            Mode::SampleRoot => vec!["--mode", "sample", "--interval", "10ms", "--root", w.root],
            _ => return None,
        };
        Some(flags.into_iter().map(String::from).collect())
    }

    /// async-profiler's modes, which run only when its library is given.
    pub fn is_async_profiler(self) -> bool {
        matches!(self, Mode::AsyncCpu | Mode::AsyncCpu1k | Mode::AsyncAlloc)
    }

    /// JVM flags this mode adds (before the workload's own); `methodevents` is the JVMTI agent,
    /// `async_profiler` async-profiler's library (`libasyncProfiler.so`).
    pub fn jvm_flags(self, methodevents: &str, async_profiler: Option<&str>) -> Vec<String> {
        match self {
            Mode::AsyncCpu | Mode::AsyncCpu1k | Mode::AsyncAlloc => {
                let event = match self {
                    Mode::AsyncCpu => "cpu,interval=10ms",
                    Mode::AsyncCpu1k => "cpu,interval=1ms",
                    _ => "alloc",
                };
                async_profiler.map_or_else(Vec::new, |lib| {
                    vec![format!(
                        "-agentpath:{lib}=start,event={event},file=async.collapsed,collapsed"
                    )]
                })
            }
            Mode::TotalVerify => vec!["-Xverify:all".into()],
            Mode::JfrDefault => vec!["-XX:StartFlightRecording:filename=rec.jfr".into()],
            Mode::JfrProfile => {
                vec!["-XX:StartFlightRecording:settings=profile,filename=rec.jfr".into()]
            }
            Mode::JvmtiEvents => vec![format!("-agentpath:{methodevents}")],
            _ => vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::by_name;

    #[test]
    fn names_round_trip() {
        for m in ALL {
            assert_eq!(Mode::from_name(m.name()), Some(m));
        }
        assert_eq!(Mode::from_name("fast"), None);
    }

    #[test]
    fn ferrofluid_flags_per_mode() {
        let w = by_name("h2").unwrap();
        assert_eq!(
            Mode::Root.ferrofluid_flags(w).unwrap(),
            ["--scheme", "lazy", "--root", w.root]
        );
        assert_eq!(
            Mode::LazyMain.ferrofluid_flags(w).unwrap(),
            ["--scheme", "lazy", "--root", "suite.H2::main"]
        );
        assert_eq!(
            Mode::Region.ferrofluid_flags(w).unwrap(),
            ["--region", w.region]
        );
        assert_eq!(
            Mode::CountRoot.ferrofluid_flags(w).unwrap(),
            ["--mode", "count", "--scheme", "lazy", "--root", w.root]
        );
        assert_eq!(Mode::Baseline.ferrofluid_flags(w), None);
        assert_eq!(
            Mode::JvmtiEvents.jvm_flags("/a.so", None),
            ["-agentpath:/a.so"]
        );
        assert_eq!(
            Mode::AsyncAlloc.jvm_flags("/a.so", Some("/ap.so")),
            ["-agentpath:/ap.so=start,event=alloc,file=async.collapsed,collapsed"]
        );
        assert!(Mode::AsyncCpu.jvm_flags("/a.so", None).is_empty());
        assert_eq!(
            Mode::AsyncCpu1k.jvm_flags("/a.so", Some("/ap.so")),
            ["-agentpath:/ap.so=start,event=cpu,interval=1ms,file=async.collapsed,collapsed"]
        );
        assert_eq!(
            Mode::SampleRoot.ferrofluid_flags(w).unwrap(),
            ["--mode", "sample", "--interval", "10ms", "--root", w.root]
        );
        assert_eq!(
            Mode::CpuSampledRoot.ferrofluid_flags(w).unwrap(),
            ["--timing", "sampled", "--scheme", "lazy", "--root", w.root]
        );
        assert_eq!(Mode::TotalVerify.runs(5), 1);
        assert_eq!(Mode::Total.runs(5), 5);
    }
}
