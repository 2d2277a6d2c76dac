//! pprof's protobuf profile (`profile.proto` of github.com/google/pprof), gzipped as
//! `go tool pprof`, Grafana Pyroscope and Parca read it.
//!
//! The sample types are the profile's declared metrics ([`Profile::metrics`]: `calls`/`count`
//! and `time`/`nanoseconds` for CPU, `calls` and `bytecodes` for count, `objects` and `bytes`
//! for alloc; a profile of the `alloc` engine names its four as Go's heap profiles do:
//! `alloc_objects`, `alloc_space`, `inuse_objects`, `inuse_space`); a code-region profile has
//! `calls` and `time` per region method. Each calling
//! context with a non-zero value is one sample carrying the node's self values, its stack
//! (leaf first) and a `thread` label; pprof sums samples into flat and cumulative values by
//! itself, so its totals are the profile's. One location and one function per method: the
//! function's name is the frame name (`com.acme.Foo.bar`), its system name adds the
//! descriptor. The model keeps no source positions, so lines are 0 (unknown).
//!
//! The message types are those of `profile.proto`, encoded by prost's derive
//! (docs/decisions/0032-pprof-and-speedscope.md).

use std::collections::HashMap;
use std::io::Write;

use ferrofluid_profile::metric::{CALLS, COUNT, NANOSECONDS, TIME};
use ferrofluid_profile::{Metric, Mode, NodeKind, Profile};
use flate2::write::GzEncoder;
use prost::Message;

use crate::view::frame;
use crate::{Report, ReportError};

/// The messages of pprof's `profile.proto` (proto3), field numbers as there.
pub mod proto {
    #![allow(missing_docs)]

    /// `perftools.profiles.Profile`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "7")]
        pub drop_frames: i64,
        #[prost(int64, tag = "8")]
        pub keep_frames: i64,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
        #[prost(int64, tag = "15")]
        pub doc_url: i64,
    }

    /// `ValueType`: indexes into the string table.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    /// `Sample`: location ids leaf first, one value per sample type.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    /// `Label`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(int64, tag = "1")]
        pub key: i64,
        #[prost(int64, tag = "2")]
        pub str: i64,
        #[prost(int64, tag = "3")]
        pub num: i64,
        #[prost(int64, tag = "4")]
        pub num_unit: i64,
    }

    /// `Mapping`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Mapping {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        #[prost(int64, tag = "5")]
        pub filename: i64,
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
        #[prost(bool, tag = "8")]
        pub has_filenames: bool,
        #[prost(bool, tag = "9")]
        pub has_line_numbers: bool,
        #[prost(bool, tag = "10")]
        pub has_inline_frames: bool,
    }

    /// `Location`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        #[prost(uint64, tag = "3")]
        pub address: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
        #[prost(bool, tag = "5")]
        pub is_folded: bool,
    }

    /// `Line`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
        #[prost(int64, tag = "3")]
        pub column: i64,
    }

    /// `Function`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
        #[prost(int64, tag = "5")]
        pub start_line: i64,
    }
}

/// Options of the pprof writer.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PprofReport {
    /// Gzip the message (`.pb.gz`, what pprof tools expect); `false` writes it raw.
    pub gzip: bool,
}

impl Default for PprofReport {
    fn default() -> Self {
        Self { gzip: true }
    }
}

impl Report for PprofReport {
    fn write(&self, profile: &Profile, out: &mut dyn Write) -> Result<(), ReportError> {
        let bytes = encode(profile).encode_to_vec();
        if self.gzip {
            let mut gz = GzEncoder::new(out, flate2::Compression::default());
            gz.write_all(&bytes)?;
            gz.finish()?;
        } else {
            out.write_all(&bytes)?;
        }
        Ok(())
    }
}

/// The string table: index 0 is the empty string, as pprof requires.
#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Self {
        let mut s = Self::default();
        s.id("");
        s
    }

    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }
}

/// Locations and functions, one each per frame (method or overflow bucket).
struct Frames {
    strings: Strings,
    by_key: HashMap<FrameKey, u64>,
    locations: Vec<proto::Location>,
    functions: Vec<proto::Function>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum FrameKey {
    Kind(NodeKind),
    Region(usize),
}

impl Frames {
    fn id(&mut self, key: FrameKey, name: &str, system_name: &str) -> u64 {
        if let Some(&id) = self.by_key.get(&key) {
            return id;
        }
        let id = self.locations.len() as u64 + 1;
        let function = proto::Function {
            id,
            name: self.strings.id(name),
            system_name: self.strings.id(system_name),
            filename: 0,
            start_line: 0,
        };
        self.functions.push(function);
        self.locations.push(proto::Location {
            id,
            mapping_id: 0,
            address: 0,
            line: vec![proto::Line {
                function_id: id,
                line: 0,
                column: 0,
            }],
            is_folded: false,
        });
        self.by_key.insert(key, id);
        id
    }

    fn node(&mut self, profile: &Profile, kind: NodeKind) -> u64 {
        let name = frame(profile, kind, "");
        let system = match kind {
            NodeKind::Method(m) => profile
                .methods
                .get(m)
                .map_or_else(|| name.clone(), ToString::to_string),
            _ => name.clone(),
        };
        self.id(FrameKey::Kind(kind), &name, &system)
    }
}

/// The sample type Go's heap profiles give an allocation profile's path metric: `alloc_objects`
/// and `alloc_space` (allocated, exact), `inuse_objects` and `inuse_space` (live, estimated).
fn go_heap_name(metric: &str) -> &str {
    match metric {
        ferrofluid_profile::alloc::OBJECTS => "alloc_objects",
        ferrofluid_profile::metric::BYTES => "alloc_space",
        ferrofluid_profile::alloc::LIVE => "inuse_objects",
        ferrofluid_profile::alloc::LIVE_BYTES => "inuse_space",
        other => other,
    }
}

/// The pprof message of `profile`.
pub fn encode(profile: &Profile) -> proto::Profile {
    let mut frames = Frames {
        strings: Strings::new(),
        by_key: HashMap::new(),
        locations: Vec::new(),
        functions: Vec::new(),
    };
    let thread_key = frames.strings.id("thread");
    let thread_id_key = frames.strings.id("thread_id");
    let mut samples = Vec::new();
    let metrics: Vec<Metric> = if profile.mode == Mode::Region {
        vec![Metric::new(CALLS, COUNT), Metric::new(TIME, NANOSECONDS)]
    } else {
        profile.metrics()
    };
    if profile.mode == Mode::Region {
        for (i, r) in profile.regions.iter().flatten().enumerate() {
            if r.count == 0 {
                continue;
            }
            let name = format!("{}.{}", r.class, r.method);
            let system = format!("{name}{}", r.descriptor);
            let loc = frames.id(FrameKey::Region(i), &name, &system);
            samples.push(proto::Sample {
                location_id: vec![loc],
                value: vec![clamp(r.count), clamp(r.total_ns)],
                label: Vec::new(),
            });
        }
    } else {
        for thread in &profile.threads {
            let tree = &thread.tree;
            let values: Vec<Vec<u64>> = (0..metrics.len())
                .map(|i| {
                    profile
                        .metric_values(tree, i)
                        .iter()
                        .map(|v| v.self_value)
                        .collect()
                })
                .collect();
            // The thread's name, and its Java id as a number (`-tagfocus thread_id=31`).
            let labels = vec![
                proto::Label {
                    key: thread_key,
                    str: frames.strings.id(&thread.name),
                    num: 0,
                    num_unit: 0,
                },
                proto::Label {
                    key: thread_id_key,
                    str: 0,
                    num: thread.id as i64,
                    num_unit: 0,
                },
            ];
            // Location ids of each node's stack, leaf first, built from its parent's.
            let mut stacks: Vec<Vec<u64>> = vec![Vec::new(); tree.len()];
            for id in tree.ids() {
                let node = tree.node(id);
                // The thread's own value (none from the recorders) has an empty stack: it
                // counts in pprof's total as in the profile's.
                let stack = match node.parent() {
                    None => Vec::new(),
                    Some(parent) => {
                        let loc = frames.node(profile, node.kind);
                        let mut stack = Vec::with_capacity(stacks[parent.index()].len() + 1);
                        stack.push(loc);
                        stack.extend_from_slice(&stacks[parent.index()]);
                        stack
                    }
                };
                let value: Vec<i64> = values.iter().map(|v| clamp(v[id.index()])).collect();
                if value.iter().any(|&v| v != 0) {
                    samples.push(proto::Sample {
                        location_id: stack.clone(),
                        value,
                        label: labels.clone(),
                    });
                }
                stacks[id.index()] = stack;
            }
        }
    }
    let sample_type: Vec<proto::ValueType> = metrics
        .iter()
        .map(|m| proto::ValueType {
            r#type: frames.strings.id(if profile.alloc.is_some() {
                go_heap_name(&m.name)
            } else {
                &m.name
            }),
            unit: frames.strings.id(&m.unit),
        })
        .collect();
    let primary = if profile.mode == Mode::Region {
        Some(1)
    } else {
        profile.primary_metric()
    };
    let default_sample_type = primary.map_or(0, |i| sample_type[i].r#type);
    let comment = vec![frames
        .strings
        .id(&format!("ferrofluid {} profile", profile.mode))];
    proto::Profile {
        sample_type,
        sample: samples,
        mapping: Vec::new(),
        location: frames.locations,
        function: frames.functions,
        string_table: frames.strings.table,
        drop_frames: 0,
        keep_frames: 0,
        time_nanos: 0,
        duration_nanos: 0,
        period_type: None,
        period: 0,
        comment,
        default_sample_type,
        doc_url: 0,
    }
}

/// pprof values are signed; a count past `i64::MAX` cannot happen in practice.
fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrofluid_profile::{CallTree, NodeId, ThreadProfile};

    #[test]
    fn one_sample_per_context_with_self_values_leaf_first() {
        let mut p = Profile::new(Mode::Count);
        p.extra_metrics.push(Metric::new("bytecodes", COUNT));
        let f = p.methods.insert("demo.A", "f", "()V");
        let g = p.methods.insert("demo.A", "g", "(I)V");
        let mut t = CallTree::with_width(1);
        let fi = t.add_child(NodeId::ROOT, NodeKind::Method(f));
        let gi = t.add_child(fi, NodeKind::Method(g));
        t.node_mut(fi).calls = 1;
        t.extra_mut(fi)[0] = 10;
        t.node_mut(gi).calls = 4;
        t.extra_mut(gi)[0] = 100;
        p.threads.push(ThreadProfile::new("main", 31, t));

        let m = encode(&p);
        let s = |i: i64| m.string_table[i as usize].as_str();
        let types: Vec<(&str, &str)> = m
            .sample_type
            .iter()
            .map(|t| (s(t.r#type), s(t.unit)))
            .collect();
        assert_eq!(types, [("calls", "count"), ("bytecodes", "count")]);
        assert_eq!(s(m.default_sample_type), "bytecodes");
        assert_eq!(m.string_table[0], "");
        let samples: Vec<(Vec<u64>, Vec<i64>)> = m
            .sample
            .iter()
            .map(|x| (x.location_id.clone(), x.value.clone()))
            .collect();
        assert_eq!(
            samples,
            [(vec![1], vec![1, 10]), (vec![2, 1], vec![4, 100])]
        );
        let names: Vec<(&str, &str)> = m
            .function
            .iter()
            .map(|f| (s(f.name), s(f.system_name)))
            .collect();
        assert_eq!(
            names,
            [("demo.A.f", "demo.A.f()V"), ("demo.A.g", "demo.A.g(I)V")]
        );
        assert_eq!(s(m.sample[1].label[0].str), "main");
        assert_eq!(
            (s(m.sample[1].label[1].key), m.sample[1].label[1].num),
            ("thread_id", 31)
        );
        // The message reads back as written.
        assert_eq!(proto::Profile::decode(&*m.encode_to_vec()).unwrap(), m);
    }
}
