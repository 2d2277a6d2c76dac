//! The values of the options that name one of a few choices.

use std::fmt;
use std::str::FromStr;

use super::grammar::{BLOCKS_REASON, REVEAL_REASON};

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
