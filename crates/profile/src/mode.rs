//! The kinds of profile ferrofluid takes. One value names a mode everywhere: the agent option
//! `mode=`, the CLI's `--mode`, the wire protocol and the document's `"mode"` key.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A profiling mode: what the agent measures and what a profile's tree nodes carry.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Call-subgraph CPU profile: calls and (compensated) time per calling context.
    #[default]
    Cpu,
    /// Code regions: per region method, counts and duration statistics; no tree.
    Region,
    /// Allocations: objects and bytes per allocation site and calling context, object ages.
    Alloc,
    /// Executed bytecodes and calls per calling context, no clock.
    Count,
    /// Time in native code against time in bytecode.
    Native,
    /// Stack samples taken on a timer.
    Sample,
}

impl Mode {
    /// Every mode, in the order the docs list them.
    pub const ALL: [Mode; 6] = [
        Mode::Cpu,
        Mode::Region,
        Mode::Alloc,
        Mode::Count,
        Mode::Native,
        Mode::Sample,
    ];

    /// Whether its trees' times come from probe pairs around every node, compensated for the
    /// probes' cost as the CPU mode's are (`cpu`, `native`).
    pub const fn is_probe_timed(self) -> bool {
        matches!(self, Mode::Cpu | Mode::Native)
    }

    /// The name used in options, on the wire and in documents.
    pub const fn name(self) -> &'static str {
        match self {
            Mode::Cpu => "cpu",
            Mode::Region => "region",
            Mode::Alloc => "alloc",
            Mode::Count => "count",
            Mode::Native => "native",
            Mode::Sample => "sample",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode `{0}` (expected one of cpu, region, alloc, count, native, sample)")]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMode(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Mode::ALL {
            assert_eq!(m.name().parse::<Mode>(), Ok(m));
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{m}\""));
        }
        assert_eq!(
            "cpuu".parse::<Mode>().unwrap_err().to_string(),
            "unknown mode `cpuu` (expected one of cpu, region, alloc, count, native, sample)"
        );
    }
}
