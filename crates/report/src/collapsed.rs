//! Folded stacks, one line per distinct stack: `thread;frame;frame value`, value = the
//! node's self value of the weight's metric: by default the mode's primary one (compensated
//! wall time in ns for a CPU profile, thread CPU time with [`Weight::Cpu`], bytecodes for a
//! `count` profile, bytes for an `alloc` one). Lines are sorted, as flamegraph.pl and inferno
//! expect; stacks with a zero value are left out.

use std::collections::BTreeMap;
use std::io::Write;

use ferrofluid_profile::{Mode, NodeId, NodeKind, Profile};

use crate::view::frame;
use crate::{Report, ReportError, Weight};

/// Options of the folded-stacks writer.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CollapsedReport {
    /// Start every stack with the thread name, so threads form the flame graph's base.
    pub thread_frames: bool,
    /// The metric whose self values the lines carry.
    pub weight: Weight,
}

impl Default for CollapsedReport {
    fn default() -> Self {
        Self {
            thread_frames: true,
            weight: Weight::Primary,
        }
    }
}

impl CollapsedReport {
    /// The same writer, with values of `weight`.
    pub fn with_weight(self, weight: Weight) -> Self {
        Self { weight, ..self }
    }
}

/// Frame names may not contain the separator or line breaks; thread names can.
fn clean(name: &str) -> String {
    name.replace([';', '\n', '\r'], "_")
}

impl Report for CollapsedReport {
    fn write(&self, profile: &Profile, out: &mut dyn Write) -> Result<(), ReportError> {
        if profile.mode == Mode::Region {
            let regions = profile.regions.as_deref().unwrap_or_default();
            out.write_all(crate::region::collapsed(regions).as_bytes())?;
            return Ok(());
        }
        let metric = match (self.weight.resolve(profile), &self.weight) {
            (Some(i), _) => i,
            // A time the profile lacks (CPU time without the `cpu` option): nothing weighs.
            (None, Weight::Cpu | Weight::Wall | Weight::Primary) => return Ok(()),
            (None, Weight::Metric(name)) => {
                return Err(ReportError::Io(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("the profile has no metric {name:?}"),
                )))
            }
        };
        // Overloads share a frame name, so equal stacks are summed.
        let mut lines: BTreeMap<String, u64> = BTreeMap::new();
        for thread in &profile.threads {
            let tree = &thread.tree;
            let self_values: Vec<u64> = profile
                .metric_values(tree, metric)
                .iter()
                .map(|v| v.self_value)
                .collect();
            let mut stack: Vec<(NodeId, String)> = vec![(tree.root(), String::new())];
            while let Some((id, prefix)) = stack.pop() {
                let node = tree.node(id);
                let path = match node.kind {
                    NodeKind::Thread if !self.thread_frames => String::new(),
                    kind => {
                        let name = clean(&frame(profile, kind, &thread.name));
                        if prefix.is_empty() {
                            name
                        } else {
                            format!("{prefix};{name}")
                        }
                    }
                };
                let value = self_values[id.index()];
                if value > 0 && !path.is_empty() {
                    *lines.entry(path.clone()).or_insert(0) += value;
                }
                for &c in node.children() {
                    stack.push((c, path.clone()));
                }
            }
        }
        for (stack, value) in lines {
            writeln!(out, "{stack} {value}")?;
        }
        Ok(())
    }
}
