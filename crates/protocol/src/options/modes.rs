//! Which options each mode takes, said once, and the refusals of the others.

use super::{AgentOptions, Mode, OptionsError};

/// The options every mode takes: where the profile goes and for how long, where the agent
/// logs and listens.
pub const COMMON_KEYS: &[&str] = &[
    "mode", "file", "duration", "push", "every", "label", "log", "socket",
];

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
            "timing",
            "record",
            "interval",
            "wall",
            "instrument-inlined",
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
            "track-bytes",
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
        // `root` makes it hybrid: only samples inside the roots' invocations, whose calls are
        // counted exactly.
        Mode::Sample => &[
            "root", "include", "exclude", "reveal", "interval", "wall", "threads",
        ],
    }
}

/// The modes the agent of this release has an engine for; the agent's registry is checked
/// against this list by its tests. The CLI refuses the others before touching a JVM.
pub const AGENT_MODES: &[Mode] = &[
    Mode::Cpu,
    Mode::Region,
    Mode::Alloc,
    Mode::Count,
    Mode::Native,
    Mode::Sample,
];

/// The one line refusing a session of `mode` that an attached agent could not set up (`why`):
/// what only an agent loaded with the JVM can do.
pub fn at_load_only(mode: Mode, why: &str) -> String {
    format!(
        "mode {mode} could not be set up in this JVM ({why}): start the JVM with \
         -agentpath:<libferrofluid_agent.so>=mode={mode},file=F (`ferrofluid run --mode {mode} \
         -o F -- java ...`)"
    )
}

/// The one line saying that `mode` has no engine in the agent.
pub fn mode_unavailable(mode: Mode) -> String {
    let available: Vec<&str> = AGENT_MODES.iter().map(|m| m.name()).collect();
    format!(
        "mode {mode} is not available in this agent (available: {})",
        available.join(", ")
    )
}

impl AgentOptions {
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
            ("track-bytes", self.track_bytes.is_some()),
            ("stack-depth", self.stack_depth.is_some()),
            ("alloc-class", !self.alloc_classes.is_empty()),
            ("timing", self.timing != d.timing),
            ("record", self.record.is_some()),
            ("interval", self.interval.is_some()),
            ("wall", self.wall),
            ("instrument-inlined", self.instrument_inlined),
            ("threads", self.threads),
        ]
        .into_iter()
        .filter_map(|(k, given)| given.then_some(k))
        .collect()
    }

    /// Every option given must be one the mode in effect takes ([`mode_options`]), and
    /// `every` and `label` need `push`.
    pub(super) fn check_modes(&self) -> Result<(), OptionsError> {
        if self.track_every.is_some() && self.track_bytes.is_some() {
            return Err(OptionsError::TrackEveryAndBytes);
        }
        if self.record.is_some() && self.roots.is_empty() {
            return Err(OptionsError::RecordWithoutRoot);
        }
        if self.push.url.is_none() {
            if self.push.every.is_some() {
                return Err(OptionsError::NeedsPush { key: "every" });
            }
            if !self.push.labels.is_empty() {
                return Err(OptionsError::NeedsPush { key: "label" });
            }
        }
        let mode = self.mode();
        let takes = mode_options(mode);
        let given = self.given();
        if let Some(key) = given.iter().find(|k| !takes.contains(k)) {
            return Err(refusal(mode, key));
        }
        if mode == Mode::Cpu {
            let sampled = self.timing == super::Timing::Sampled;
            for key in given {
                match key {
                    "interval" | "wall" | "instrument-inlined" | "record" if !sampled => {
                        return Err(OptionsError::NeedsSampled { key })
                    }
                    "cpu" if sampled => return Err(OptionsError::NeedsProbes { key }),
                    _ => {}
                }
            }
        }
        Ok(())
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
