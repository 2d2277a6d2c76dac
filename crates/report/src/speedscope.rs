//! speedscope's file format (`https://www.speedscope.app/file-format-schema.json`): one
//! "sampled" profile per thread whose samples are the thread's calling contexts (stacks root
//! first, as frame indexes into the shared frame list) weighted by their self value of the
//! profile's primary metric: compensated wall time in ns for CPU, bytecodes for count, bytes
//! for alloc. Contexts with a zero weight are left out; samples follow the call tree depth
//! first, so speedscope's time-ordered view draws each thread's tree once. A code-region
//! profile is one profile of one sample per region method (its total time). A profile of the
//! `alloc` engine has one profile per weight (allocated bytes and objects, live bytes and
//! objects, survived bytes and objects), the threads' paths under their thread's frame.

use std::collections::HashMap;
use std::io::Write;

use ferrofluid_profile::{Mode, NodeKind, Profile};
use serde::Serialize;

use crate::view::frame;
use crate::{Report, ReportError};

/// The schema every file names.
pub const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// Options of the speedscope writer.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct SpeedscopeReport {}

#[derive(Serialize)]
struct File<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    name: String,
    exporter: &'a str,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: usize,
    shared: Shared,
    profiles: Vec<Sampled>,
}

#[derive(Serialize)]
struct Shared {
    frames: Vec<Frame>,
}

#[derive(Serialize)]
struct Frame {
    name: String,
}

#[derive(Serialize)]
struct Sampled {
    r#type: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: u64,
    #[serde(rename = "endValue")]
    end_value: u64,
    samples: Vec<Vec<usize>>,
    weights: Vec<u64>,
}

/// speedscope's unit for one of ours: counts have none.
fn unit(ours: &str) -> &'static str {
    match ours {
        ferrofluid_profile::metric::NANOSECONDS => "nanoseconds",
        ferrofluid_profile::metric::BYTES => "bytes",
        _ => "none",
    }
}

#[derive(Default)]
struct Frames {
    list: Vec<Frame>,
    index: HashMap<String, usize>,
}

impl Frames {
    /// Frames are keyed by name: speedscope merges equal names anyway.
    fn id(&mut self, name: String) -> usize {
        if let Some(&i) = self.index.get(&name) {
            return i;
        }
        let i = self.list.len();
        self.index.insert(name.clone(), i);
        self.list.push(Frame { name });
        i
    }
}

impl Report for SpeedscopeReport {
    fn write(&self, profile: &Profile, out: &mut dyn Write) -> Result<(), ReportError> {
        let mut frames = Frames::default();
        let mut profiles = Vec::new();
        let metric_name;
        if profile.mode == Mode::Region {
            metric_name = ferrofluid_profile::metric::TIME.to_owned();
            let mut p = sampled("regions".to_owned(), "nanoseconds");
            for r in profile.regions.iter().flatten().filter(|r| r.count > 0) {
                let f = frames.id(format!("{}.{}", r.class, r.method));
                p.push(vec![f], r.total_ns);
            }
            profiles.push(p);
        } else if profile.alloc.is_some() {
            metric_name = "allocation paths".to_owned();
            profiles = alloc_profiles(profile, &mut frames);
        } else {
            let metrics = profile.metrics();
            let primary = profile.primary_metric();
            metric_name = primary.map_or_else(String::new, |i| metrics[i].name.clone());
            if let Some(metric) = primary {
                for thread in &profile.threads {
                    let tree = &thread.tree;
                    let values = profile.metric_values(tree, metric);
                    let mut p = sampled(thread.name.clone(), unit(&metrics[metric].unit));
                    let mut stack: Vec<usize> = Vec::new();
                    for (id, depth) in tree.walk() {
                        let node = tree.node(id);
                        if node.kind == NodeKind::Thread {
                            // The thread's own value (a native profile's bytecode outside every
                            // native frame) under a frame of its name, as folded stacks have it.
                            let w = values[id.index()].self_value;
                            if w > 0 {
                                let f = frames.id(frame(profile, node.kind, &thread.name));
                                p.push(vec![f], w);
                            }
                            continue;
                        }
                        stack.truncate(depth - 1);
                        stack.push(frames.id(frame(profile, node.kind, &thread.name)));
                        let w = values[id.index()].self_value;
                        if w > 0 {
                            p.push(stack.clone(), w);
                        }
                    }
                    profiles.push(p);
                }
            }
        }
        let file = File {
            schema: SCHEMA,
            name: format!("ferrofluid {} profile ({metric_name})", profile.mode),
            exporter: concat!("ferrofluid ", env!("CARGO_PKG_VERSION")),
            active_profile_index: 0,
            shared: Shared {
                frames: frames.list,
            },
            profiles,
        };
        serde_json::to_writer(&mut *out, &file).map_err(std::io::Error::from)?;
        out.write_all(b"\n")?;
        Ok(())
    }
}

/// An allocation profile's paths: one profile per weight (allocated bytes and objects, live
/// and survived bytes and objects), each of every thread's contexts, the thread as the outermost frame.
fn alloc_profiles(profile: &Profile, frames: &mut Frames) -> Vec<Sampled> {
    use ferrofluid_profile::alloc::{LIVE, LIVE_BYTES, OBJECTS, SURVIVED, SURVIVED_BYTES};
    use ferrofluid_profile::metric::BYTES;
    let metrics = profile.metrics();
    let mut profiles = Vec::new();
    for (name, title) in [
        (BYTES, "allocated bytes"),
        (OBJECTS, "allocated objects"),
        (LIVE_BYTES, "live bytes (estimated)"),
        (LIVE, "live objects (estimated)"),
        (SURVIVED_BYTES, "survived bytes (estimated)"),
        (SURVIVED, "survived objects (estimated)"),
    ] {
        let Some(metric) = profile.metric_index(name) else {
            continue;
        };
        let mut p = sampled(title.to_owned(), unit(&metrics[metric].unit));
        for thread in &profile.threads {
            let tree = &thread.tree;
            let values = profile.metric_values(tree, metric);
            let mut stack: Vec<usize> = Vec::new();
            for (id, depth) in tree.walk() {
                let node = tree.node(id);
                stack.truncate(depth);
                stack.push(frames.id(frame(profile, node.kind, &thread.name)));
                let w = values[id.index()].self_value;
                if w > 0 {
                    p.push(stack.clone(), w);
                }
            }
        }
        profiles.push(p);
    }
    profiles
}

fn sampled(name: String, unit: &'static str) -> Sampled {
    Sampled {
        r#type: "sampled",
        name,
        unit,
        start_value: 0,
        end_value: 0,
        samples: Vec::new(),
        weights: Vec::new(),
    }
}

impl Sampled {
    fn push(&mut self, stack: Vec<usize>, weight: u64) {
        self.samples.push(stack);
        self.weights.push(weight);
        self.end_value += weight;
    }
}
