//! The values of the options that name one of a few choices.

use std::fmt;
use std::str::FromStr;

use super::grammar::{BLOCKS_REASON, RECORD_REASON, REVEAL_REASON, TIMING_REASON};

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
    pub(super) fn is_default(&self) -> bool {
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
    pub(super) fn is_default(&self) -> bool {
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

/// Which root invocations sampled timing records (`record=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Record {
    /// Every root invocation: totals are exact over the whole collection.
    All,
    /// Every invocation at first; then, where recording costs the program much, only those
    /// entered in a share of each two seconds that keeps it near 90% of its speed, measured
    /// as it runs.
    Auto,
    /// Those entered in this share of each two seconds, in thousandths (10-1000).
    Share(u32),
}

impl Record {
    /// The value's spelling in the option string and on the command line.
    pub fn name(self) -> String {
        match self {
            Record::All => "all".into(),
            Record::Auto => "auto".into(),
            Record::Share(m) if m % 10 == 0 => format!("{}%", m / 10),
            Record::Share(m) => format!("{}.{}%", m / 10, m % 10),
        }
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Record {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(Record::All),
            "auto" => Ok(Record::Auto),
            _ => {
                let share = s
                    .strip_suffix('%')
                    .and_then(|n| n.parse::<f64>().ok())
                    .filter(|p| (1.0..=100.0).contains(p))
                    .ok_or_else(|| RECORD_REASON.to_owned())?;
                Ok(Record::Share((share * 10.0).round() as u32))
            }
        }
    }
}

/// How `cpu` mode measures time (`timing=`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Timing {
    /// Each call's time read by its probes, compensated for their cost: per-call precision,
    /// a clock read and an agent call per event.
    #[default]
    Probes,
    /// The probes keep only the exact calling-context tree (calls per context, in Java, no
    /// clock); a sampler charges each thread's CPU time (and wall time with `wall`) to its
    /// current context at every interval.
    Sampled,
}

impl Timing {
    pub(super) fn is_default(&self) -> bool {
        *self == Timing::default()
    }

    /// The value's spelling in the option string and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Timing::Probes => "probes",
            Timing::Sampled => "sampled",
        }
    }
}

impl fmt::Display for Timing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Timing {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "probes" => Ok(Timing::Probes),
            "sampled" => Ok(Timing::Sampled),
            _ => Err(TIMING_REASON.into()),
        }
    }
}
