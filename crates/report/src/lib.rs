//! ferrofluid's report writers. Each format lives in its own module behind the tiny
//! [`Report`] trait and knows nothing about the others:
//!
//! | format | module | content |
//! |---|---|---|
//! | `.txt` | [`text`] | hot spots and the call tree with percentages, for a terminal |
//! | `.html` | [`html`] | one self-contained page: flame graph, sortable hot spots, expandable tree |
//! | `.collapsed` | [`collapsed`] | folded stacks for flamegraph.pl, inferno, speedscope |
//! | `.json` | [`json`] | the profile document of `docs/json-schema.md` |
//! | `.pb.gz`, `.pprof` | [`pprof`] | pprof's protobuf, for `go tool pprof`, Pyroscope, Parca |
//! | `.speedscope.json` | [`speedscope`] | speedscope's file format |
//! | `.jfr` | [`jfr`] | a JFR recording, for JDK Mission Control and the JDK's `jfr` tool |
//!
//! A code-region profile (`"mode":"region"`, [`Profile::regions`]) is rendered by the text and
//! HTML writers as a summary table and latency distributions; folded stacks get one line per
//! region method (its total time). A native profile (`"mode":"native"`, [`Profile::native`])
//! gets a section of its own above its trees: the bytecode/native split per thread and in total,
//! the native methods by native time with their upcalls, the natives not measured.
//!
//! Trees of every mode are drawn from the profile's declared metrics ([`Profile::metrics`]):
//! folded stacks and flame graphs weigh by any metric ([`Weight`]). The text and HTML reports
//! of a CPU profile keep its compensation columns and marks; those of the other modes show a
//! self and a total column per metric.
//!
//! All writers are deterministic: the same profile gives the same bytes.
//!
//! ```
//! use ferrofluid_profile::{Profile, Stamp, ThreadProfile, ThreadRecorder};
//! use ferrofluid_report::{Format, Report};
//!
//! let mut profile = Profile::default();
//! let main = profile.methods.insert("com.acme.App", "main", "([Ljava/lang/String;)V");
//! let mut rec = ThreadRecorder::default();
//! rec.enter(main, Stamp::wall(0));
//! rec.exit(main, Stamp::wall(2_000_000)).unwrap();
//! profile.threads.push(ThreadProfile::new("main", 1, rec.finish(Stamp::wall(2_000_000))));
//!
//! let mut out = Vec::new();
//! Format::Collapsed.writer().write(&profile, &mut out).unwrap();
//! assert_eq!(String::from_utf8(out).unwrap(), "main;com.acme.App.main 2000000\n");
//! ```
#![deny(missing_docs)]

pub mod alloc;
pub mod app;
pub mod collapsed;
pub mod diff;
mod flame;
mod format;
pub mod html;
pub mod jfr;
pub mod json;
mod metrics;
mod native;
pub mod pprof;
mod region;
pub mod speedscope;
pub mod text;
mod view;
mod vthreads;

use std::io;

use ferrofluid_profile::Profile;
use thiserror::Error;

pub use format::{Format, FormatInfo, UnknownFormat, FORMATS};
pub use vthreads::{
    grouped as group_virtual_threads, merged_name as merged_virtual_name, VirtualThreads,
};

/// The lines the report headers give the classes that could not be instrumented or restored
/// (one per kind, naming the classes); empty when there are none.
pub fn failed_class_notes(profile: &Profile) -> Vec<String> {
    view::failed_notes(profile)
}

/// A report writer.
pub trait Report {
    /// Writes the report of `profile` to `out`.
    fn write(&self, profile: &Profile, out: &mut dyn io::Write) -> Result<(), ReportError>;
}

/// Why a report could not be written.
#[derive(Debug, Error)]
pub enum ReportError {
    /// Writing failed.
    #[error("cannot write the report: {0}")]
    Io(#[from] io::Error),
}

/// What a flame graph's widths and folded stacks' values measure: one of the profile's
/// metrics ([`Profile::metrics`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Weight {
    /// The mode's primary metric ([`Profile::primary_metric`]): wall time for a CPU profile.
    #[default]
    Primary,
    /// Wall time (compensated), the metric `time`.
    Wall,
    /// Thread CPU time (compensated), the metric `cpu_time`, for profiles recorded with the
    /// `cpu` option; without it nothing weighs anything.
    Cpu,
    /// The metric of this name.
    Metric(String),
}

impl Weight {
    /// The weight named `name`: `wall` and `cpu` (the CPU mode's times), `alloc-bytes`,
    /// `alloc-count`, `live-bytes`, `live-count`, `survived-bytes` and `survived-count` (an
    /// allocation profile's `bytes`, `objects`, `live_bytes`, `live`, `survived_bytes` and
    /// `survived`), else a metric's name.
    pub fn named(name: &str) -> Weight {
        match name {
            "wall" => Weight::Wall,
            "cpu" => Weight::Cpu,
            "alloc-bytes" => Weight::Metric(ferrofluid_profile::metric::BYTES.to_owned()),
            "alloc-count" => Weight::Metric(ferrofluid_profile::alloc::OBJECTS.to_owned()),
            "live-bytes" => Weight::Metric(ferrofluid_profile::alloc::LIVE_BYTES.to_owned()),
            "live-count" => Weight::Metric(ferrofluid_profile::alloc::LIVE.to_owned()),
            "survived-bytes" => {
                Weight::Metric(ferrofluid_profile::alloc::SURVIVED_BYTES.to_owned())
            }
            "survived-count" => Weight::Metric(ferrofluid_profile::alloc::SURVIVED.to_owned()),
            other => Weight::Metric(other.to_owned()),
        }
    }

    /// The index of this weight's metric in [`Profile::metrics`]; `None` when the profile
    /// does not have it.
    pub fn resolve(&self, profile: &Profile) -> Option<usize> {
        match self {
            Weight::Primary => profile.primary_metric(),
            Weight::Wall => profile.metric_index(ferrofluid_profile::metric::TIME),
            Weight::Cpu => profile.metric_index(ferrofluid_profile::metric::CPU_TIME),
            Weight::Metric(name) => profile.metric_index(name),
        }
    }
}
