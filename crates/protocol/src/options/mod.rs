//! The agent option string: comma-separated `key=value` pairs (see `docs/agent-options.md`).
//!
//! `FromStr` and `Display` are inverse: `s.parse::<AgentOptions>()?.to_string()` is the canonical form of
//! `s`, and parsing a canonical form gives back the same value. Values can therefore contain neither `,`
//! nor a leading/trailing space; paths with commas are rejected with an error saying so.
//!
//! Root methods and class filters use the pattern grammar of `ferrofluid-subgraph` (`docs/subgraph.md`),
//! so what the planner accepts and what the agent is told are one language.
//!
//! Here the struct, its accessors and errors; [`grammar`] reads and writes the string, [`modes`]
//! says which options each mode takes, [`values`] holds the options' named choices.

mod grammar;
mod modes;
#[cfg(test)]
mod tests;
mod values;

use std::path::PathBuf;
use std::time::Duration;

pub use ferrofluid_profile::Mode;
pub use ferrofluid_subgraph::{
    AllocClassPattern, ClassFilter, ClassPattern, MethodPattern, Scheme,
};

use crate::push::PushOptions;
use crate::serde_str::{as_string, as_strings};
use grammar::{suggestion, PATH_REASON, REGION_LAST_REASON};
pub use modes::{at_load_only, mode_options, mode_unavailable, AGENT_MODES, COMMON_KEYS};
pub use values::{Blocks, Record, Reveal, Timing};

pub use crate::option_table::KEYS;

/// How many of the last region durations are kept when `region-last` is not given.
pub const DEFAULT_REGION_LAST: u32 = 100;
/// Largest accepted `region-last` (memory is bounded by it, per region method and thread).
pub const MAX_REGION_LAST: u32 = 100_000;
/// Every how many allocations of a site one object is tracked when `track-every` is not given.
pub const DEFAULT_TRACK_EVERY: u64 = 10;
/// Frames of a tracked object's allocation stack kept when `stack-depth` is not given.
pub const DEFAULT_STACK_DEPTH: u32 = 64;
/// Largest accepted `stack-depth`.
pub const MAX_STACK_DEPTH: u32 = 1024;
/// The sampling interval when `interval` is not given (100 Hz).
pub const DEFAULT_SAMPLE_INTERVAL: Duration = Duration::from_millis(10);
/// Shortest accepted `interval`.
pub const MIN_SAMPLE_INTERVAL: Duration = Duration::from_millis(1);
/// Longest accepted `interval`.
pub const MAX_SAMPLE_INTERVAL: Duration = Duration::from_secs(60);

/// Parsed agent options: the one options struct of ferrofluid. The CLI fills it from its flags
/// and prints it for `-agentpath:`/attach `load`, an `instrument` request carries it
/// ([`crate::control::Request::Instrument`]: the fields that say what to measure, with the
/// serde names below), and the agent reads its session from it. `Default` is the empty option
/// string: no roots (nothing instrumented until the tool asks), no class filter, lazy scheme, no
/// output file, no time limit, default log and socket.
///
/// Which fields a mode takes is said once, by [`mode_options`], and checked by
/// [`AgentOptions::validate`] (also when parsing).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AgentOptions {
    /// Root methods of the profiled call subgraph (`root=` may be repeated). If any is given the
    /// agent starts instrumenting at load.
    #[serde(with = "as_strings")]
    pub roots: Vec<MethodPattern>,
    /// Classes that may be instrumented (`include=`/`exclude=`, each repeatable).
    #[serde(flatten, with = "filter_fields")]
    pub filter: ClassFilter,
    /// How the call subgraph under the roots is revealed.
    #[serde(with = "as_string")]
    pub scheme: Scheme,
    /// Code-region mode (`region=`, repeatable): only these methods are instrumented and the gross
    /// time of each outermost invocation is measured. Implies `mode=region`.
    #[serde(default, with = "as_strings", skip_serializing_if = "Vec::is_empty")]
    pub region: Vec<MethodPattern>,
    /// How many of the last region durations to keep (`region-last=`; default
    /// [`DEFAULT_REGION_LAST`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_last: Option<u32>,
    /// Also measure thread CPU time at every recorded probe (`cpu=true`; default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cpu: bool,
    /// Leave trivial methods (accessor-sized, no loop, no call) uninstrumented, roots excepted:
    /// their time counts in their callers' self time (`skip-trivial=true`; default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_trivial: bool,
    /// Remove, as the program runs, the probes of methods called often that take less time than
    /// their own probes: their later calls count in their callers' self time
    /// (`adaptive=true`; default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adaptive: bool,
    /// When lazy revelation instruments what a method calls (`reveal=sync|async`; default sync).
    #[serde(default, skip_serializing_if = "Reveal::is_default")]
    pub reveal: Reveal,
    /// Which bytecode blocks the `count` mode's counters cover (`blocks=default|precise`;
    /// default `default`).
    #[serde(default, skip_serializing_if = "Blocks::is_default")]
    pub blocks: Blocks,
    /// Allocation mode: track every N-th allocation of each site (`track-every=N`; 0: count
    /// only; default [`DEFAULT_TRACK_EVERY`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub track_every: Option<u64>,
    /// Allocation mode: track by bytes instead, one object each time about this many more bytes
    /// were allocated at a site (`track-bytes=SIZE`: `512k`, `1m` or bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub track_bytes: Option<u64>,
    /// Allocation mode: frames kept of a tracked object's allocation stack (`stack-depth=D`;
    /// default [`DEFAULT_STACK_DEPTH`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_depth: Option<u32>,
    /// Allocation mode: the allocated classes whose sites get probes (`alloc-class=`,
    /// repeatable; none: every class).
    #[serde(default, with = "as_strings", skip_serializing_if = "Vec::is_empty")]
    pub alloc_classes: Vec<AllocClassPattern>,
    /// CPU mode: how time is measured (`timing=probes|sampled`; default probes).
    #[serde(default, skip_serializing_if = "Timing::is_default")]
    pub timing: Timing,
    /// CPU mode with sampled timing and roots: which root invocations are recorded
    /// (`record=all|auto|N%`; default all, and `ferrofluid attach` sends auto).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<Record>,
    /// Sample mode, and CPU mode with sampled timing: the sampling interval (`interval=`;
    /// default [`DEFAULT_SAMPLE_INTERVAL`]).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "millis")]
    pub interval: Option<Duration>,
    /// Sample mode: wall-clock sampling of every thread; CPU mode with sampled timing: elapsed
    /// time charged too, off-CPU time by thread state (`wall=true`; default: each thread's CPU
    /// time).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wall: bool,
    /// CPU mode with sampled timing: instrument the classes the JIT inlined into much of the
    /// compiled code too (`instrument-inlined=true`; default: left alone).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub instrument_inlined: bool,
    /// Sample mode: one tree per thread (`threads=true`; default: one merged tree).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub threads: bool,
    /// What to measure (`mode=`), when given; see [`AgentOptions::mode`] for the mode in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Where the agent writes the profile when profiling stops (JSON).
    #[serde(skip)]
    pub file: Option<PathBuf>,
    /// Stop profiling this long after it started.
    #[serde(skip)]
    pub duration: Option<Duration>,
    /// Continuous profiling from the agent's own thread (`push=`, `every=`, `label=`).
    #[serde(skip)]
    pub push: PushOptions,
    /// The agent's log file (default: `agent.log` beside the control socket).
    #[serde(skip)]
    pub log: Option<PathBuf>,
    /// Path of the control socket (default: `/tmp/.ferrofluid-<pid>/control.sock`).
    #[serde(skip)]
    pub socket: Option<PathBuf>,
}

/// An optional duration as whole milliseconds on the wire.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_u64(d.as_millis() as u64),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

/// `include`/`exclude` as two fields of the options' wire form.
mod filter_fields {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{ClassFilter, ClassPattern};
    use crate::serde_str::as_strings;

    #[derive(Serialize)]
    struct Out<'a> {
        #[serde(with = "as_strings")]
        include: &'a [ClassPattern],
        #[serde(with = "as_strings")]
        exclude: &'a [ClassPattern],
    }

    #[derive(Deserialize)]
    struct In {
        #[serde(default, with = "as_strings")]
        include: Vec<ClassPattern>,
        #[serde(default, with = "as_strings")]
        exclude: Vec<ClassPattern>,
    }

    pub fn serialize<S: Serializer>(f: &ClassFilter, s: S) -> Result<S::Ok, S::Error> {
        Out {
            include: &f.include,
            exclude: &f.exclude,
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ClassFilter, D::Error> {
        let In { include, exclude } = In::deserialize(d)?;
        Ok(ClassFilter { include, exclude })
    }
}

/// Why an option string was rejected. Messages name the key and what it accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    #[error("unknown agent option `{key}`{}; accepted: {}", suggestion(.key), KEYS.join(", "))]
    UnknownKey { key: String },
    #[error("agent option `{key}` needs a value: `{key}=...`")]
    MissingValue { key: String },
    #[error("bad value `{value}` for agent option `{key}`: {reason}")]
    BadValue {
        key: &'static str,
        value: String,
        reason: String,
    },
    #[error("agent option `{key}` given twice")]
    Duplicate { key: &'static str },
    #[error("agent options `root` and `region` exclude each other: `region` measures only its own methods, `root` profiles a call subgraph")]
    RootAndRegion,
    #[error("agent options `track-every` and `track-bytes` exclude each other: each says which objects are tracked, by count or by bytes")]
    TrackEveryAndBytes,
    #[error("agent option `region-last` needs `region`")]
    RegionLastWithoutRegion,
    #[error("agent options `cpu` and `region` exclude each other: code-region mode measures wall time only")]
    CpuAndRegion,
    #[error("agent options `adaptive` and `region` exclude each other: code-region mode has no probes to remove")]
    AdaptiveAndRegion,
    #[error("agent option `{key}` does not apply to mode {mode}; mode {mode} takes {}", mode_options(*.mode).join(", "))]
    NotInMode { key: &'static str, mode: Mode },
    #[error("agent option `{key}` applies to mode cpu only with `timing=sampled`")]
    NeedsSampled { key: &'static str },
    #[error("agent option `{key}` needs `timing=probes`: sampled timing has no per-call clock")]
    NeedsProbes { key: &'static str },
    #[error("agent option `record` needs `root`: with no root every thread records all along")]
    RecordWithoutRoot,
    #[error("agent option `{key}` needs `push`")]
    NeedsPush { key: &'static str },
}

impl AgentOptions {
    /// The mode in effect: `mode=` if given, else `region` when region methods are named, else
    /// `cpu`.
    pub fn mode(&self) -> Mode {
        match self.mode {
            Some(m) => m,
            None if !self.region.is_empty() => Mode::Region,
            None => Mode::Cpu,
        }
    }

    /// Every how many allocations of a site one object is tracked (0: none; 0 too when
    /// tracked by bytes).
    pub fn track_every(&self) -> u64 {
        match self.track_bytes {
            Some(_) => 0,
            None => self.track_every.unwrap_or(DEFAULT_TRACK_EVERY),
        }
    }

    /// About every how many bytes allocated at a site one object is tracked (0: by count).
    pub fn track_bytes(&self) -> u64 {
        self.track_bytes.unwrap_or(0)
    }

    /// Frames kept of a tracked object's allocation stack.
    pub fn stack_depth(&self) -> u32 {
        self.stack_depth.unwrap_or(DEFAULT_STACK_DEPTH)
    }

    /// The sampling interval of sample mode.
    pub fn interval(&self) -> Duration {
        self.interval.unwrap_or(DEFAULT_SAMPLE_INTERVAL)
    }

    /// How many last region durations to keep.
    pub fn region_last(&self) -> u32 {
        self.region_last.unwrap_or(DEFAULT_REGION_LAST)
    }

    /// Checks that `Display` will round-trip: paths must be valid UTF-8 without commas or edge spaces.
    /// The CLI calls this before building an option string from user-supplied paths.
    pub fn validate(&self) -> Result<(), OptionsError> {
        self.check_modes()?;
        if let Some(d) = self
            .interval
            .filter(|d| !(MIN_SAMPLE_INTERVAL..=MAX_SAMPLE_INTERVAL).contains(d))
        {
            return Err(OptionsError::BadValue {
                key: "interval",
                value: crate::duration::format_duration(d),
                reason: grammar::INTERVAL_REASON.into(),
            });
        }
        if self.region_last.is_some_and(|n| n > MAX_REGION_LAST) {
            return Err(OptionsError::BadValue {
                key: "region-last",
                value: self.region_last.unwrap_or_default().to_string(),
                reason: REGION_LAST_REASON.into(),
            });
        }
        let check = |key: &'static str, p: &Option<PathBuf>| match p {
            Some(p) => match p.to_str() {
                Some(s) if !s.is_empty() && !s.contains(',') && s.trim() == s => Ok(()),
                _ => Err(OptionsError::BadValue {
                    key,
                    value: p.display().to_string(),
                    reason: PATH_REASON.into(),
                }),
            },
            None => Ok(()),
        };
        check("file", &self.file)?;
        check("log", &self.log)?;
        check("socket", &self.socket)
    }
}
