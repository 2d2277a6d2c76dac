//! Folded stacks, one line per distinct stack: `thread;frame;frame value`, value =
//! compensated self time in ns (wall, or thread CPU with [`Weight::Cpu`]). Lines are sorted,
//! as flamegraph.pl and inferno expect; stacks with zero self time are left out.

use std::collections::BTreeMap;
use std::io::Write;

use ferrofluid_profile::{NodeId, NodeKind, Profile};

use crate::view::frame;
use crate::{Report, ReportError, Weight};

/// Options of the folded-stacks writer.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CollapsedReport {
    /// Start every stack with the thread name, so threads form the flame graph's base.
    pub thread_frames: bool,
    /// Wall or thread CPU self time.
    pub weight: Weight,
}

impl Default for CollapsedReport {
    fn default() -> Self {
        Self {
            thread_frames: true,
            weight: Weight::Wall,
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
        if let Some(regions) = &profile.regions {
            out.write_all(crate::region::collapsed(regions).as_bytes())?;
            return Ok(());
        }
        // Overloads share a frame name, so equal stacks are summed.
        let mut lines: BTreeMap<String, u64> = BTreeMap::new();
        for thread in &profile.threads {
            let tree = &thread.tree;
            let self_ns: Vec<u64> = match self.weight {
                Weight::Wall => profile.times(tree).iter().map(|t| t.self_ns).collect(),
                Weight::Cpu => profile
                    .cpu_times(tree)
                    .iter()
                    .map(|t| t.map_or(0, |t| t.self_ns))
                    .collect(),
            };
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
                let self_ns = self_ns[id.index()];
                if self_ns > 0 && !path.is_empty() {
                    *lines.entry(path.clone()).or_insert(0) += self_ns;
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
