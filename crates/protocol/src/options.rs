//! The agent option string: comma-separated `key=value` pairs (see `docs/agent-options.md`).
//!
//! `FromStr` and `Display` are inverse: `s.parse::<AgentOptions>()?.to_string()` is the canonical form of
//! `s`, and parsing a canonical form gives back the same value. Values can therefore contain neither `,`
//! nor a leading/trailing space; paths with commas are rejected with an error saying so.
//!
//! Root methods and class filters use the pattern grammar of `ferrofluid-subgraph` (`docs/subgraph.md`),
//! so what the planner accepts and what the agent is told are one language.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

pub use ferrofluid_profile::Mode;
pub use ferrofluid_subgraph::{
    AllocClassPattern, ClassFilter, ClassPattern, MethodPattern, Scheme,
};

use crate::duration::{format_duration, parse_duration};
use crate::serde_str::{as_string, as_strings};

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
    /// Allocation mode: frames kept of a tracked object's allocation stack (`stack-depth=D`;
    /// default [`DEFAULT_STACK_DEPTH`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_depth: Option<u32>,
    /// Allocation mode: the allocated classes whose sites get probes (`alloc-class=`,
    /// repeatable; none: every class).
    #[serde(default, with = "as_strings", skip_serializing_if = "Vec::is_empty")]
    pub alloc_classes: Vec<AllocClassPattern>,
    /// What to measure (`mode=`), when given; see [`AgentOptions::mode`] for the mode in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Where the agent writes the profile when profiling stops (JSON).
    #[serde(skip)]
    pub file: Option<PathBuf>,
    /// Stop profiling this long after it started.
    #[serde(skip)]
    pub duration: Option<Duration>,
    /// The agent's log file (default: `agent.log` beside the control socket).
    #[serde(skip)]
    pub log: Option<PathBuf>,
    /// Path of the control socket (default: `/tmp/.ferrofluid-<pid>/control.sock`).
    #[serde(skip)]
    pub socket: Option<PathBuf>,
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

/// The options every mode takes: where the profile goes and for how long, where the agent
/// logs and listens.
pub const COMMON_KEYS: &[&str] = &["mode", "file", "duration", "log", "socket"];

/// The options `mode` takes besides [`COMMON_KEYS`]: the one place that says which option
/// applies to which mode ([`AgentOptions::validate`] refuses the others when given).
pub fn mode_options(mode: Mode) -> &'static [&'static str] {
    match mode {
        Mode::Cpu => &[
            "root",
            "include",
            "exclude",
            "scheme",
            "cpu",
            "skip-trivial",
            "adaptive",
            "reveal",
        ],
        // `reveal` is taken (and has no effect: nothing is revealed) because `ferrofluid
        // attach` sends `reveal=async` for every session.
        Mode::Region => &["region", "region-last", "include", "exclude", "reveal"],
        Mode::Alloc => &[
            "root",
            "include",
            "exclude",
            "scheme",
            "reveal",
            "track-every",
            "stack-depth",
            "alloc-class",
        ],
        // Not `skip-trivial`: a method without probes would lose its bytecodes, and counts
        // are exact or nothing.
        Mode::Count => &["root", "include", "exclude", "scheme", "blocks", "reveal"],
        // Without a root the whole program (the natives of the classes `include`/`exclude`
        // select); with roots, the natives called inside their extent, in calling context.
        // `reveal`: attach sends it (see `Region`).
        Mode::Native => &["root", "include", "exclude", "scheme", "cpu", "reveal"],
        Mode::Sample => &["root", "include", "exclude"],
    }
}

/// The modes the agent of this release has an engine for; the agent's registry is checked
/// against this list by its tests. The CLI refuses the others before touching a JVM.
pub const AGENT_MODES: &[Mode] = &[Mode::Cpu, Mode::Region, Mode::Alloc, Mode::Count];

/// The one line saying that `mode` has no engine in the agent.
pub fn mode_unavailable(mode: Mode) -> String {
    let available: Vec<&str> = AGENT_MODES.iter().map(|m| m.name()).collect();
    format!(
        "mode {mode} is not available in this agent (available: {})",
        available.join(", ")
    )
}

/// When lazy revelation instruments the callees of a method run for the first time (`reveal=`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Reveal {
    /// Before the method proceeds, on its thread: every call is counted, and each thread
    /// reaching new code waits for a retransformation (JFluid's scheme).
    #[default]
    Sync,
    /// On the agent's reveal thread, which gathers what threads reached over a few ms into one
    /// retransformation; the method proceeds at once, so the calls it makes before its callees
    /// are instrumented are not seen (counted as `unrevealed_calls`).
    Async,
}

impl Reveal {
    fn is_default(&self) -> bool {
        *self == Reveal::default()
    }

    /// The value's spelling in the option string and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Reveal::Sync => "sync",
            Reveal::Async => "async",
        }
    }
}

impl fmt::Display for Reveal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Reveal {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sync" => Ok(Reveal::Sync),
            "async" => Ok(Reveal::Async),
            _ => Err(REVEAL_REASON.into()),
        }
    }
}

/// Where the `count` mode's block counters end a block (JP's block definitions, `blocks=`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Blocks {
    /// At control transfers only: one counter update per basic block. A block cut short by an
    /// exception is counted whole (JP's Default BBA).
    #[default]
    Default,
    /// Also after every instruction that may throw: exact under exceptions, more updates
    /// (JP's Precise BBA).
    Precise,
}

impl Blocks {
    fn is_default(&self) -> bool {
        *self == Blocks::default()
    }

    /// The value's spelling in the option string and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Blocks::Default => "default",
            Blocks::Precise => "precise",
        }
    }
}

impl fmt::Display for Blocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Blocks {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "default" => Ok(Blocks::Default),
            "precise" => Ok(Blocks::Precise),
            _ => Err(BLOCKS_REASON.into()),
        }
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
    #[error("agent option `region-last` needs `region`")]
    RegionLastWithoutRegion,
    #[error("agent options `cpu` and `region` exclude each other: code-region mode measures wall time only")]
    CpuAndRegion,
    #[error("agent options `adaptive` and `region` exclude each other: code-region mode has no probes to remove")]
    AdaptiveAndRegion,
    #[error("agent option `{key}` does not apply to mode {mode}; mode {mode} takes {}", mode_options(*.mode).join(", "))]
    NotInMode { key: &'static str, mode: Mode },
}

const PATH_REASON: &str = "expected a non-empty path without commas";
const DURATION_REASON: &str = "expected a positive whole number with unit ms, s, m or h (e.g. 30s)";
const SCHEME_REASON: &str = "expected one of lazy, eager, total";
const REGION_LAST_REASON: &str = "expected a whole number from 0 to 100000";
const BOOL_REASON: &str = "expected true or false";
const REVEAL_REASON: &str = "expected sync or async";
const BLOCKS_REASON: &str = "expected default or precise";
const TRACK_EVERY_REASON: &str = "expected a whole number (0: count only)";
const STACK_DEPTH_REASON: &str = "expected a whole number from 1 to 1024";
const MODE_REASON: &str = "expected one of cpu, region, alloc, count, native, sample";

fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// ` (did you mean `scheme`?)` for a key within two edits of an accepted one.
fn suggestion(key: &str) -> String {
    KEYS.iter()
        .map(|k| (edit_distance(key, k), k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

impl FromStr for AgentOptions {
    type Err = OptionsError;

    fn from_str(s: &str) -> Result<Self, OptionsError> {
        let mut parser = Parser::default();
        // The JVM passes NULL or "" for no options; stray empty items (`a=1,,b=2`) are tolerated.
        for item in s.split(',').filter(|i| !i.is_empty()) {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            parser.set(key, value)?;
        }
        parser.opts.check_modes()?;
        Ok(parser.opts)
    }
}

impl AgentOptions {
    /// The options of `(key, value)` pairs, each as `key=value` in an option string, with no
    /// comma to split on (a path may hold one: [`AgentOptions::validate`] says so). Not
    /// validated: what the CLI fills from its flags, one pair per flag given.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<AgentOptions, OptionsError> {
        let mut parser = Parser::default();
        for (key, value) in pairs {
            parser.set(key, value)?;
        }
        Ok(parser.opts)
    }
}

/// The options read so far, and which of the keys with a default value were given.
#[derive(Default)]
struct Parser {
    opts: AgentOptions,
    seen_scheme: bool,
    seen_cpu: bool,
    seen_skip_trivial: bool,
    seen_adaptive: bool,
    seen_reveal: bool,
    seen_blocks: bool,
}

impl Parser {
    /// Reads the item `key=value`.
    fn set(&mut self, key: &str, value: &str) -> Result<(), OptionsError> {
        let key: &'static str =
            KEYS.iter()
                .find(|k| **k == key)
                .copied()
                .ok_or_else(|| OptionsError::UnknownKey {
                    key: key.to_owned(),
                })?;
        if value.is_empty() {
            return Err(OptionsError::MissingValue {
                key: key.to_owned(),
            });
        }
        let bad = |reason: String| OptionsError::BadValue {
            key,
            value: value.to_owned(),
            reason,
        };
        let untrimmed = value.trim() != value;
        let path = |slot: &mut Option<PathBuf>| {
            if slot.is_some() {
                return Err(OptionsError::Duplicate { key });
            }
            if untrimmed {
                return Err(bad(PATH_REASON.into()));
            }
            *slot = Some(PathBuf::from(value));
            Ok(())
        };
        // The pattern parser trims; a value with edge spaces would not round-trip.
        let pattern_reason = |e: ferrofluid_subgraph::PatternError| e.kind.to_string();
        match key {
            "mode" => {
                if self.opts.mode.is_some() {
                    return Err(OptionsError::Duplicate { key });
                }
                self.opts.mode = Some(value.parse().map_err(|_| bad(MODE_REASON.into()))?);
            }
            "root" | "region" if untrimmed => return Err(bad("leading or trailing space".into())),
            "root" => self
                .opts
                .roots
                .push(value.parse().map_err(|e| bad(pattern_reason(e)))?),
            "region" => self
                .opts
                .region
                .push(value.parse().map_err(|e| bad(pattern_reason(e)))?),
            "region-last" => {
                if self.opts.region_last.is_some() {
                    return Err(OptionsError::Duplicate { key });
                }
                let n = value
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n <= MAX_REGION_LAST && n.to_string() == value)
                    .ok_or_else(|| bad(REGION_LAST_REASON.into()))?;
                self.opts.region_last = Some(n);
            }
            "track-every" => {
                if self.opts.track_every.is_some() {
                    return Err(OptionsError::Duplicate { key });
                }
                let n = value
                    .parse::<u64>()
                    .ok()
                    .filter(|n| n.to_string() == value)
                    .ok_or_else(|| bad(TRACK_EVERY_REASON.into()))?;
                self.opts.track_every = Some(n);
            }
            "stack-depth" => {
                if self.opts.stack_depth.is_some() {
                    return Err(OptionsError::Duplicate { key });
                }
                let n = value
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=MAX_STACK_DEPTH).contains(n) && n.to_string() == value)
                    .ok_or_else(|| bad(STACK_DEPTH_REASON.into()))?;
                self.opts.stack_depth = Some(n);
            }
            "include" | "exclude" => {
                if untrimmed {
                    return Err(bad("leading or trailing space".into()));
                }
                let p: ClassPattern = value.parse().map_err(|e| bad(pattern_reason(e)))?;
                if key == "include" {
                    self.opts.filter.include.push(p);
                } else {
                    self.opts.filter.exclude.push(p);
                }
            }
            "alloc-class" => {
                if untrimmed {
                    return Err(bad("leading or trailing space".into()));
                }
                self.opts
                    .alloc_classes
                    .push(value.parse().map_err(|e| bad(pattern_reason(e)))?);
            }
            "scheme" => {
                if std::mem::replace(&mut self.seen_scheme, true) {
                    return Err(OptionsError::Duplicate { key });
                }
                self.opts.scheme = value.parse().map_err(|_| bad(SCHEME_REASON.into()))?;
            }
            "cpu" => {
                if std::mem::replace(&mut self.seen_cpu, true) {
                    return Err(OptionsError::Duplicate { key });
                }
                self.opts.cpu = parse_bool(value).ok_or_else(|| bad(BOOL_REASON.into()))?;
            }
            "skip-trivial" => {
                if std::mem::replace(&mut self.seen_skip_trivial, true) {
                    return Err(OptionsError::Duplicate { key });
                }
                self.opts.skip_trivial =
                    parse_bool(value).ok_or_else(|| bad(BOOL_REASON.into()))?;
            }
            "adaptive" => {
                if std::mem::replace(&mut self.seen_adaptive, true) {
                    return Err(OptionsError::Duplicate { key });
                }
                self.opts.adaptive = parse_bool(value).ok_or_else(|| bad(BOOL_REASON.into()))?;
            }
            "blocks" => {
                if std::mem::replace(&mut self.seen_blocks, true) {
                    return Err(OptionsError::Duplicate { key });
                }
                self.opts.blocks = value.parse().map_err(bad)?;
            }
            "reveal" => {
                if std::mem::replace(&mut self.seen_reveal, true) {
                    return Err(OptionsError::Duplicate { key });
                }
                self.opts.reveal = value.parse().map_err(bad)?;
            }
            "duration" => {
                if self.opts.duration.is_some() {
                    return Err(OptionsError::Duplicate { key });
                }
                self.opts.duration =
                    Some(parse_duration(value).ok_or_else(|| bad(DURATION_REASON.into()))?);
            }
            "file" => path(&mut self.opts.file)?,
            "log" => path(&mut self.opts.log)?,
            "socket" => path(&mut self.opts.socket)?,
            _ => unreachable!("every key of KEYS is handled"),
        }
        Ok(())
    }
}

impl fmt::Display for AgentOptions {
    /// The canonical form: keys in [`KEYS`] order, defaults omitted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut items: Vec<String> = self.mode.iter().map(|m| format!("mode={m}")).collect();
        items.extend(self.roots.iter().map(|r| format!("root={r}")));
        items.extend(self.region.iter().map(|r| format!("region={r}")));
        if let Some(n) = self.region_last {
            items.push(format!("region-last={n}"));
        }
        items.extend(self.filter.include.iter().map(|p| format!("include={p}")));
        items.extend(self.filter.exclude.iter().map(|p| format!("exclude={p}")));
        if self.scheme != Scheme::default() {
            items.push(format!("scheme={}", self.scheme.name()));
        }
        if self.blocks != Blocks::default() {
            items.push(format!("blocks={}", self.blocks));
        }
        if self.cpu {
            items.push("cpu=true".into());
        }
        if self.skip_trivial {
            items.push("skip-trivial=true".into());
        }
        if self.adaptive {
            items.push("adaptive=true".into());
        }
        if self.reveal != Reveal::default() {
            items.push(format!("reveal={}", self.reveal));
        }
        if let Some(n) = self.track_every {
            items.push(format!("track-every={n}"));
        }
        if let Some(n) = self.stack_depth {
            items.push(format!("stack-depth={n}"));
        }
        items.extend(
            self.alloc_classes
                .iter()
                .map(|p| format!("alloc-class={p}")),
        );
        if let Some(p) = &self.file {
            items.push(format!("file={}", p.display()));
        }
        if let Some(d) = self.duration {
            items.push(format!("duration={}", format_duration(d)));
        }
        if let Some(p) = &self.log {
            items.push(format!("log={}", p.display()));
        }
        if let Some(p) = &self.socket {
            items.push(format!("socket={}", p.display()));
        }
        f.write_str(&items.join(","))
    }
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

    /// The option keys given a value other than their default (common ones left out).
    fn given(&self) -> Vec<&'static str> {
        let d = Self::default();
        [
            ("root", self.roots != d.roots),
            ("region", self.region != d.region),
            ("region-last", self.region_last.is_some()),
            ("include", !self.filter.include.is_empty()),
            ("exclude", !self.filter.exclude.is_empty()),
            ("scheme", self.scheme != d.scheme),
            ("blocks", self.blocks != d.blocks),
            ("cpu", self.cpu),
            ("skip-trivial", self.skip_trivial),
            ("adaptive", self.adaptive),
            ("reveal", self.reveal != d.reveal),
            ("track-every", self.track_every.is_some()),
            ("stack-depth", self.stack_depth.is_some()),
            ("alloc-class", !self.alloc_classes.is_empty()),
        ]
        .into_iter()
        .filter_map(|(k, given)| given.then_some(k))
        .collect()
    }

    /// Every option given must be one the mode in effect takes ([`mode_options`]).
    fn check_modes(&self) -> Result<(), OptionsError> {
        let mode = self.mode();
        let takes = mode_options(mode);
        match self.given().into_iter().find(|k| !takes.contains(k)) {
            None => Ok(()),
            Some(key) => Err(refusal(mode, key)),
        }
    }

    /// Every how many allocations of a site one object is tracked (0: none).
    pub fn track_every(&self) -> u64 {
        self.track_every.unwrap_or(DEFAULT_TRACK_EVERY)
    }

    /// Frames kept of a tracked object's allocation stack.
    pub fn stack_depth(&self) -> u32 {
        self.stack_depth.unwrap_or(DEFAULT_STACK_DEPTH)
    }

    /// How many last region durations to keep.
    pub fn region_last(&self) -> u32 {
        self.region_last.unwrap_or(DEFAULT_REGION_LAST)
    }

    /// Checks that `Display` will round-trip: paths must be valid UTF-8 without commas or edge spaces.
    /// The CLI calls this before building an option string from user-supplied paths.
    pub fn validate(&self) -> Result<(), OptionsError> {
        self.check_modes()?;
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

/// Why `mode` refuses option `key`: the region mode's own messages for the options of a call
/// subgraph, and a general line for the rest.
fn refusal(mode: Mode, key: &'static str) -> OptionsError {
    match (mode, key) {
        (Mode::Region, "root") => OptionsError::RootAndRegion,
        (Mode::Region, "cpu") => OptionsError::CpuAndRegion,
        (Mode::Region, "adaptive") => OptionsError::AdaptiveAndRegion,
        (_, "region-last") => OptionsError::RegionLastWithoutRegion,
        _ => OptionsError::NotInMode { key, mode },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(s: &str) -> MethodPattern {
        s.parse().unwrap()
    }

    fn class(s: &str) -> ClassPattern {
        s.parse().unwrap()
    }

    /// (input, parsed value, canonical form)
    fn valid_cases() -> Vec<(&'static str, AgentOptions, &'static str)> {
        let d = AgentOptions::default;
        vec![
            ("", d(), ""),
            (",,", d(), ""),
            ("scheme=lazy", d(), ""),
            (
                "root=com.acme.Foo::bar,scheme=eager,file=out.json,duration=30s,log=/tmp/x.log,socket=/tmp/ff/s",
                AgentOptions {
                    roots: vec![root("com.acme.Foo::bar")],
                    scheme: Scheme::Eager,
                    file: Some("out.json".into()),
                    duration: Some(Duration::from_secs(30)),
                    log: Some("/tmp/x.log".into()),
                    socket: Some("/tmp/ff/s".into()),
                    ..d()
                },
                "root=com.acme.Foo::bar,scheme=eager,file=out.json,duration=30s,log=/tmp/x.log,socket=/tmp/ff/s",
            ),
            (
                "socket=/s,exclude=java.**,root=A::*,include=com.acme.**,root=p.B$Inner::<init>(ILjava/lang/String;)V,\
                 scheme=total,duration=1500ms,exclude=jdk.**",
                AgentOptions {
                    roots: vec![root("A::*"), root("p.B$Inner::<init>(ILjava/lang/String;)V")],
                    filter: ClassFilter {
                        include: vec![class("com.acme.**")],
                        exclude: vec![class("java.**"), class("jdk.**")],
                    },
                    scheme: Scheme::Total,
                    duration: Some(Duration::from_millis(1500)),
                    socket: Some("/s".into()),
                    ..d()
                },
                "root=A::*,root=p.B$Inner::<init>(ILjava/lang/String;)V,include=com.acme.**,exclude=java.**,\
                 exclude=jdk.**,scheme=total,duration=1500ms,socket=/s",
            ),
            // Internal names are accepted and printed in the Java spelling.
            (
                "root=com/acme/Foo::bar",
                AgentOptions { roots: vec![root("com.acme.Foo::bar")], ..d() },
                "root=com.acme.Foo::bar",
            ),
            ("duration=120s", AgentOptions { duration: Some(Duration::from_secs(120)), ..d() }, "duration=2m"),
            ("cpu=false", d(), ""),
            (
                "file=o.json,cpu=true,root=A::b",
                AgentOptions { roots: vec![root("A::b")], cpu: true, file: Some("o.json".into()), ..d() },
                "root=A::b,cpu=true,file=o.json",
            ),
            ("skip-trivial=false", d(), ""),
            (
                "skip-trivial=true,root=A::b",
                AgentOptions { roots: vec![root("A::b")], skip_trivial: true, ..d() },
                "root=A::b,skip-trivial=true",
            ),
            ("adaptive=false", d(), ""),
            ("reveal=sync", d(), ""),
            (
                "reveal=async,root=A::b",
                AgentOptions { roots: vec![root("A::b")], reveal: Reveal::Async, ..d() },
                "root=A::b,reveal=async",
            ),
            (
                "adaptive=true,skip-trivial=true,root=A::b",
                AgentOptions { roots: vec![root("A::b")], skip_trivial: true, adaptive: true, ..d() },
                "root=A::b,skip-trivial=true,adaptive=true",
            ),
            (
                "file=r.json,region-last=7,region=demo.Work::step(I)V,region=B::*",
                AgentOptions {
                    region: vec![root("demo.Work::step(I)V"), root("B::*")],
                    region_last: Some(7),
                    file: Some("r.json".into()),
                    ..d()
                },
                "region=demo.Work::step(I)V,region=B::*,region-last=7,file=r.json",
            ),
        ]
    }

    #[test]
    fn parses_and_prints_canonically() {
        for (input, value, canonical) in valid_cases() {
            let parsed: AgentOptions = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(parsed, value, "{input}");
            assert_eq!(parsed.to_string(), canonical, "{input}");
            assert_eq!(
                canonical.parse::<AgentOptions>().unwrap(),
                value,
                "canonical form round-trips"
            );
            assert_eq!(value.validate(), Ok(()));
        }
    }

    #[test]
    fn errors_name_the_key_and_accepted_values() {
        let keys = "accepted: mode, root, region, region-last, include, exclude, scheme, blocks, cpu, skip-trivial, adaptive, reveal, track-every, stack-depth, alloc-class, file, duration, log, socket";
        let cases = [
            ("sceme=lazy", format!("unknown agent option `sceme` (did you mean `scheme`?); {keys}")),
            ("verbose", format!("unknown agent option `verbose`; {keys}")),
            ("file=", "agent option `file` needs a value: `file=...`".into()),
            ("root", "agent option `root` needs a value: `root=...`".into()),
            ("scheme=fast", "bad value `fast` for agent option `scheme`: expected one of lazy, eager, total".into()),
            (
                "duration=30",
                "bad value `30` for agent option `duration`: expected a positive whole number with unit ms, s, m or h (e.g. 30s)".into(),
            ),
            (
                "root=com.acme.Foo.bar",
                "bad value `com.acme.Foo.bar` for agent option `root`: expected CLASS::METHOD (e.g. com.acme.Report::render)".into(),
            ),
            (
                "root=Foo::bar(I",
                "bad value `Foo::bar(I` for agent option `root`: `(I` is not a method descriptor such as (ILjava/lang/String;)V".into(),
            ),
            (" root=A::b", format!("unknown agent option ` root` (did you mean `root`?); {keys}")),
            ("root= A::b", "bad value ` A::b` for agent option `root`: leading or trailing space".into()),
            (
                "exclude=java..lang",
                "bad value `java..lang` for agent option `exclude`: empty package or class name between separators".into(),
            ),
            ("file= out.json", "bad value ` out.json` for agent option `file`: expected a non-empty path without commas".into()),
            ("file=a,file=b", "agent option `file` given twice".into()),
            ("scheme=lazy,scheme=eager", "agent option `scheme` given twice".into()),
            ("duration=1s,duration=2s", "agent option `duration` given twice".into()),
            (
                "root=A::b,region=C::d",
                "agent options `root` and `region` exclude each other: `region` measures only its own methods, `root` profiles a call subgraph".into(),
            ),
            ("region-last=5", "agent option `region-last` needs `region`".into()),
            ("region=C::d,region-last=-1", "bad value `-1` for agent option `region-last`: expected a whole number from 0 to 100000".into()),
            ("region=C::d,region-last=100001", "bad value `100001` for agent option `region-last`: expected a whole number from 0 to 100000".into()),
            ("region=C::d,region-last=1,region-last=2", "agent option `region-last` given twice".into()),
            ("cpu=yes", "bad value `yes` for agent option `cpu`: expected true or false".into()),
            ("cpu=true,cpu=true", "agent option `cpu` given twice".into()),
            (
                "skip-trivial=1",
                "bad value `1` for agent option `skip-trivial`: expected true or false".into(),
            ),
            (
                "skip-trivial=true,skip-trivial=false",
                "agent option `skip-trivial` given twice".into(),
            ),
            ("adaptive=on", "bad value `on` for agent option `adaptive`: expected true or false".into()),
            ("reveal=later", "bad value `later` for agent option `reveal`: expected sync or async".into()),
            ("reveal=sync,reveal=async", "agent option `reveal` given twice".into()),
            ("adaptive=true,adaptive=true", "agent option `adaptive` given twice".into()),
            (
                "region=C::d,adaptive=true",
                "agent options `adaptive` and `region` exclude each other: code-region mode has no probes to remove".into(),
            ),
            (
                "region=C::d,cpu=true",
                "agent options `cpu` and `region` exclude each other: code-region mode measures wall time only".into(),
            ),
            ("region=C.d", "bad value `C.d` for agent option `region`: expected CLASS::METHOD (e.g. com.acme.Report::render)".into()),
        ];
        for (input, message) in cases {
            let err = input.parse::<AgentOptions>().unwrap_err();
            assert_eq!(err.to_string(), message, "{input}");
        }
    }

    #[test]
    fn mode_is_one_option_and_each_mode_says_what_it_takes() {
        let d = AgentOptions::default;
        for mode in Mode::ALL {
            let s = format!("mode={mode}");
            let parsed: AgentOptions = s.parse().unwrap();
            assert_eq!(
                parsed,
                AgentOptions {
                    mode: Some(mode),
                    ..d()
                }
            );
            assert_eq!(parsed.to_string(), s);
            assert_eq!(parsed.mode(), mode);
        }
        // `region=` alone is region mode; nothing is cpu mode.
        assert_eq!(
            "region=A::b".parse::<AgentOptions>().unwrap().mode(),
            Mode::Region
        );
        assert_eq!(d().mode(), Mode::Cpu);
        let canonical = "mode=region,region=A::b,region-last=3,include=a.**,file=r.json";
        let parsed: AgentOptions = "file=r.json,include=a.**,region-last=3,region=A::b,mode=region"
            .parse()
            .unwrap();
        assert_eq!(parsed.to_string(), canonical);
        let cases = [
            ("mode=fast", "bad value `fast` for agent option `mode`: expected one of cpu, region, alloc, count, native, sample"),
            ("mode=cpu,mode=cpu", "agent option `mode` given twice"),
            ("mode=cpu,region=A::b", "agent option `region` does not apply to mode cpu; mode cpu takes root, include, exclude, scheme, cpu, skip-trivial, adaptive, reveal"),
            ("mode=region,root=A::b", "agent options `root` and `region` exclude each other: `region` measures only its own methods, `root` profiles a call subgraph"),
            ("mode=region,scheme=eager", "agent option `scheme` does not apply to mode region; mode region takes region, region-last, include, exclude, reveal"),
            ("mode=sample,cpu=true", "agent option `cpu` does not apply to mode sample; mode sample takes root, include, exclude"),
            ("mode=count,region-last=4", "agent option `region-last` needs `region`"),
            ("mode=native,blocks=precise", "agent option `blocks` does not apply to mode native; mode native takes root, include, exclude, scheme, cpu, reveal"),
            ("mode=native,adaptive=true", "agent option `adaptive` does not apply to mode native; mode native takes root, include, exclude, scheme, cpu, reveal"),
        ];
        for (input, message) in cases {
            let err = input.parse::<AgentOptions>().unwrap_err();
            assert_eq!(err.to_string(), message, "{input}");
        }
        // The native mode's: whole program (classes selected) or roots, with thread CPU time;
        // `reveal` as `ferrofluid attach` sends it.
        let native = "mode=native,root=A::b,include=com.acme.**,scheme=eager,cpu=true,reveal=async";
        assert_eq!(native.parse::<AgentOptions>().unwrap().to_string(), native);
        // Options common to every mode are always taken.
        for mode in Mode::ALL {
            let s = format!("mode={mode},file=p.json,duration=1s,log=/l,socket=/s");
            assert!(s.parse::<AgentOptions>().is_ok(), "{s}");
        }
        assert_eq!(
            mode_unavailable(Mode::Native),
            "mode native is not available in this agent (available: cpu, region, alloc, count)"
        );
    }

    #[test]
    fn alloc_class_is_allocs_own_repeatable_option() {
        let parsed: AgentOptions =
            "alloc-class=byte[],mode=alloc,include=com.acme.**,alloc-class=com.acme.Cache$Entry"
                .parse()
                .unwrap();
        let names: Vec<String> = parsed.alloc_classes.iter().map(|p| p.to_string()).collect();
        assert_eq!(names, ["byte[]", "com.acme.Cache$Entry"]);
        assert!(parsed.alloc_classes[0].matches("[B"));
        assert!(parsed.alloc_classes[1].matches("com/acme/Cache$Entry"));
        let canonical =
            "mode=alloc,include=com.acme.**,alloc-class=byte[],alloc-class=com.acme.Cache$Entry";
        assert_eq!(parsed.to_string(), canonical);
        assert_eq!(canonical.parse::<AgentOptions>().unwrap(), parsed);
        // On the wire (an `instrument` request), as canonical strings.
        let wire = serde_json::to_value(&parsed).unwrap();
        assert_eq!(
            wire["alloc_classes"],
            serde_json::json!(["byte[]", "com.acme.Cache$Entry"])
        );
        assert_eq!(
            serde_json::from_value::<AgentOptions>(wire).unwrap(),
            parsed
        );
        let without = serde_json::to_value(AgentOptions::default()).unwrap();
        assert!(without.get("alloc_classes").is_none());
        let cases = [
            ("mode=alloc,alloc-class=byte[", "bad value `byte[` for agent option `alloc-class`: character '[' at 4 cannot appear in a class name"),
            ("mode=alloc,alloc-class=[]", "bad value `[]` for agent option `alloc-class`: the class part is empty (use `*` for any class)"),
            ("mode=alloc,alloc-class= a.B", "bad value ` a.B` for agent option `alloc-class`: leading or trailing space"),
            ("alloc-class=a.B", "agent option `alloc-class` does not apply to mode cpu; mode cpu takes root, include, exclude, scheme, cpu, skip-trivial, adaptive, reveal"),
            ("mode=count,alloc-class=a.B", "agent option `alloc-class` does not apply to mode count; mode count takes root, include, exclude, scheme, blocks, reveal"),
        ];
        for (input, message) in cases {
            let err = input.parse::<AgentOptions>().unwrap_err();
            assert_eq!(err.to_string(), message, "{input}");
        }
    }

    #[test]
    fn blocks_is_counts_own_option() {
        let parsed: AgentOptions = "blocks=precise,root=A::f,mode=count".parse().unwrap();
        assert_eq!(parsed.blocks, Blocks::Precise);
        assert_eq!(parsed.to_string(), "mode=count,root=A::f,blocks=precise");
        // The default is not written.
        let default: AgentOptions = "mode=count,blocks=default".parse().unwrap();
        assert_eq!(
            (default.blocks, default.to_string().as_str()),
            (Blocks::Default, "mode=count")
        );
        let cases = [
            ("mode=count,blocks=exact", "bad value `exact` for agent option `blocks`: expected default or precise"),
            ("mode=count,blocks=precise,blocks=precise", "agent option `blocks` given twice"),
            ("blocks=precise", "agent option `blocks` does not apply to mode cpu; mode cpu takes root, include, exclude, scheme, cpu, skip-trivial, adaptive, reveal"),
            ("mode=count,skip-trivial=true", "agent option `skip-trivial` does not apply to mode count; mode count takes root, include, exclude, scheme, blocks, reveal"),
        ];
        for (input, message) in cases {
            let err = input.parse::<AgentOptions>().unwrap_err();
            assert_eq!(err.to_string(), message, "{input}");
        }
    }

    #[test]
    fn validate_rejects_paths_that_would_not_round_trip() {
        let opts = AgentOptions {
            file: Some("a,b.json".into()),
            ..Default::default()
        };
        assert_eq!(
            opts.validate().unwrap_err().to_string(),
            "bad value `a,b.json` for agent option `file`: expected a non-empty path without commas"
        );
    }
}
