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
use std::path::Path;
use std::str::FromStr;

use ferrofluid_profile::Profile;
use thiserror::Error;

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
    /// `alloc-count`, `live-bytes` and `live-count` (an allocation profile's `bytes`,
    /// `objects`, `live_bytes` and `live`), else a metric's name.
    pub fn named(name: &str) -> Weight {
        match name {
            "wall" => Weight::Wall,
            "cpu" => Weight::Cpu,
            "alloc-bytes" => Weight::Metric(ferrofluid_profile::metric::BYTES.to_owned()),
            "alloc-count" => Weight::Metric(ferrofluid_profile::alloc::OBJECTS.to_owned()),
            "live-bytes" => Weight::Metric(ferrofluid_profile::alloc::LIVE_BYTES.to_owned()),
            "live-count" => Weight::Metric(ferrofluid_profile::alloc::LIVE.to_owned()),
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

/// The report formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Plain text for a terminal (`.txt`).
    Text,
    /// One self-contained HTML page (`.html`, `.htm`).
    Html,
    /// Folded stacks (`.collapsed`, `.folded`).
    Collapsed,
    /// The JSON profile document (`.json`).
    Json,
    /// pprof's gzipped protobuf (`.pb.gz`, `.pprof`).
    Pprof,
    /// speedscope's JSON file format (`.speedscope.json`).
    Speedscope,
    /// A JFR recording (`.jfr`).
    Jfr,
}

/// A format name that is not one of ours.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown report format {:?} (expected {names})", .0, names = Format::NAMES)]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "txt" | "text" => Ok(Format::Text),
            "html" | "htm" => Ok(Format::Html),
            "collapsed" | "folded" => Ok(Format::Collapsed),
            "json" => Ok(Format::Json),
            "pprof" | "pb.gz" => Ok(Format::Pprof),
            "speedscope" | "speedscope.json" => Ok(Format::Speedscope),
            "jfr" => Ok(Format::Jfr),
            _ => Err(UnknownFormat(s.to_owned())),
        }
    }
}

impl Format {
    /// The report formats, in documentation order.
    pub const ALL: [Format; 4] = [Format::Text, Format::Html, Format::Collapsed, Format::Json];

    /// The formats other tools read (pprof, speedscope, JFR).
    pub const EXPORTS: [Format; 3] = [Format::Pprof, Format::Speedscope, Format::Jfr];

    /// Every format's name, for messages.
    pub const NAMES: &'static str = "txt, html, collapsed, json, pprof, speedscope or jfr";

    /// Every file extension that names a format, for messages.
    pub const EXTENSIONS: &'static str =
        ".txt, .html, .collapsed, .json, .pb.gz, .pprof, .speedscope.json or .jfr";

    /// The format named by a file's extension, if it names one; the two-part extensions
    /// `.pb.gz` and `.speedscope.json` first.
    pub fn from_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        for (suffix, format) in [
            (".pb.gz", Format::Pprof),
            (".speedscope.json", Format::Speedscope),
        ] {
            if name.len() > suffix.len() && name.ends_with(suffix) {
                return Some(format);
            }
        }
        path.extension()?.to_str()?.parse().ok()
    }

    /// The usual file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Text => "txt",
            Format::Html => "html",
            Format::Collapsed => "collapsed",
            Format::Json => "json",
            Format::Pprof => "pb.gz",
            Format::Speedscope => "speedscope.json",
            Format::Jfr => "jfr",
        }
    }

    /// A writer for this format with default options.
    pub fn writer(self) -> Box<dyn Report> {
        match self {
            Format::Text => Box::new(text::TextReport::default()),
            Format::Html => Box::new(html::HtmlReport::default()),
            Format::Collapsed => Box::new(collapsed::CollapsedReport::default()),
            Format::Json => Box::new(json::JsonReport::default()),
            Format::Pprof => Box::new(pprof::PprofReport::default()),
            Format::Speedscope => Box::new(speedscope::SpeedscopeReport::default()),
            Format::Jfr => Box::new(jfr::JfrReport::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_from_names_and_extensions() {
        assert_eq!("HTML".parse::<Format>(), Ok(Format::Html));
        assert_eq!("folded".parse::<Format>(), Ok(Format::Collapsed));
        assert_eq!(
            "svg".parse::<Format>().unwrap_err().to_string(),
            "unknown report format \"svg\" (expected txt, html, collapsed, json, pprof, speedscope or jfr)"
        );
        assert_eq!(
            Format::from_path(Path::new("out/p.txt")),
            Some(Format::Text)
        );
        assert_eq!(
            Format::from_path(Path::new("p.collapsed")),
            Some(Format::Collapsed)
        );
        assert_eq!(Format::from_path(Path::new("p")), None);
        for f in Format::ALL {
            assert_eq!(f.extension().parse::<Format>(), Ok(f));
        }
    }

    #[test]
    fn export_formats_from_two_part_extensions() {
        for f in Format::EXPORTS {
            assert_eq!(f.extension().parse::<Format>(), Ok(f));
            let file = format!("out/p.{}", f.extension());
            assert_eq!(Format::from_path(Path::new(&file)), Some(f));
        }
        assert_eq!(Format::from_path(Path::new("P.PPROF")), Some(Format::Pprof));
        assert_eq!(
            Format::from_path(Path::new("p.speedscope")),
            Some(Format::Speedscope)
        );
        assert_eq!(Format::from_path(Path::new("p.gz")), None);
        assert_eq!(
            Format::from_path(Path::new("speedscope.json")),
            Some(Format::Json)
        );
    }
}
