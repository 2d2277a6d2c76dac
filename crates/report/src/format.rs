//! The report formats, declared once in [`FORMATS`]: their names, file extensions and what they
//! are for. Parsing names and paths, the command line's help and every "which format?" message
//! read this table.

use std::path::Path;
use std::str::FromStr;

use thiserror::Error;

use crate::{collapsed, html, jfr, json, pprof, speedscope, text, Report};

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

/// One format's entry in [`FORMATS`].
#[derive(Clone, Copy, Debug)]
pub struct FormatInfo {
    /// The format.
    pub format: Format,
    /// Its name (`--format NAME`).
    pub name: &'static str,
    /// Other names it answers to.
    pub aliases: &'static [&'static str],
    /// The file extensions that name it, the usual one first; a two-part one (`pb.gz`) is
    /// matched before the last part alone.
    pub extensions: &'static [&'static str],
    /// What it holds and what reads it.
    pub about: &'static str,
}

/// Every report format, in documentation order: the profile's own reports, then the formats
/// other tools read.
pub const FORMATS: &[FormatInfo] = &[
    FormatInfo {
        format: Format::Text,
        name: "txt",
        aliases: &["text"],
        extensions: &["txt"],
        about: "hot spots and call tree as plain text",
    },
    FormatInfo {
        format: Format::Html,
        name: "html",
        aliases: &["htm"],
        extensions: &["html", "htm"],
        about: "one self-contained page: flame graph, hot spots, call tree",
    },
    FormatInfo {
        format: Format::Collapsed,
        name: "collapsed",
        aliases: &["folded"],
        extensions: &["collapsed", "folded"],
        about: "folded stacks for flamegraph.pl, inferno, speedscope",
    },
    FormatInfo {
        format: Format::Json,
        name: "json",
        aliases: &[],
        extensions: &["json"],
        about: "the JSON profile document (docs/json-schema.md)",
    },
    FormatInfo {
        format: Format::Pprof,
        name: "pprof",
        aliases: &["pb.gz"],
        extensions: &["pb.gz", "pprof"],
        about: "pprof's gzipped protobuf, for go tool pprof, Pyroscope, Parca",
    },
    FormatInfo {
        format: Format::Speedscope,
        name: "speedscope",
        aliases: &["speedscope.json"],
        extensions: &["speedscope.json"],
        about: "speedscope's file format",
    },
    FormatInfo {
        format: Format::Jfr,
        name: "jfr",
        aliases: &[],
        extensions: &["jfr"],
        about: "a JFR recording, for JDK Mission Control and the JDK's jfr tool",
    },
];

/// A format name that is not one of ours.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown report format {:?} (expected {})", .0, Format::names())]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.to_ascii_lowercase();
        FORMATS
            .iter()
            .find(|f| f.name == s || f.aliases.contains(&s.as_str()))
            .map(|f| f.format)
            .ok_or(UnknownFormat(s))
    }
}

/// `a, b, c or d`.
fn listed(items: impl IntoIterator<Item = String>) -> String {
    let items: Vec<String> = items.into_iter().collect();
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

impl Format {
    /// The profile's own reports, each with a golden file per test case; [`Format::EXPORTS`]
    /// are the rest of [`FORMATS`].
    pub const ALL: [Format; 4] = [Format::Text, Format::Html, Format::Collapsed, Format::Json];

    /// The formats other tools read (pprof, speedscope, JFR).
    pub const EXPORTS: [Format; 3] = [Format::Pprof, Format::Speedscope, Format::Jfr];

    /// This format's entry in [`FORMATS`].
    pub fn info(self) -> &'static FormatInfo {
        FORMATS
            .iter()
            .find(|f| f.format == self)
            .expect("every format is in FORMATS")
    }

    /// Every format's name, for messages: `txt, html, ... or jfr`.
    pub fn names() -> String {
        listed(FORMATS.iter().map(|f| f.name.to_owned()))
    }

    /// Every file name that names a format, for messages: `a .txt, .html, ... or .jfr file`.
    pub fn file_names() -> String {
        let extensions = FORMATS
            .iter()
            .flat_map(|f| {
                f.extensions
                    .iter()
                    .filter(|e| **e != "htm" && **e != "folded")
            })
            .map(|e| format!(".{e}"));
        format!("a {} file", listed(extensions))
    }

    /// Every format with what it is, one per line, indented: for the command line's help.
    pub fn help_lines() -> String {
        FORMATS
            .iter()
            .map(|f| {
                let extensions: Vec<String> =
                    f.extensions.iter().map(|e| format!(".{e}")).collect();
                format!("  {:<26}{}", extensions.join(", "), f.about)
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The format named by a file's extension, if it names one: a two-part extension
    /// (`.pb.gz`, `.speedscope.json`) first, else the last one as a format's name.
    pub fn from_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let two_part = FORMATS.iter().find(|f| {
            f.extensions.iter().any(|e| {
                e.contains('.') && name.len() > e.len() + 1 && name.ends_with(&format!(".{e}"))
            })
        });
        match two_part {
            Some(f) => Some(f.format),
            None => path.extension()?.to_str()?.parse().ok(),
        }
    }

    /// The usual file extension.
    pub fn extension(self) -> &'static str {
        self.info().extensions[0]
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
        assert_eq!(Format::from_path(Path::new("p.htm")), Some(Format::Html));
        assert_eq!(Format::from_path(Path::new("p")), None);
        assert_eq!(Format::from_path(Path::new(".json")), None);
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

    /// The table holds every format once, and the two lists of formats split it.
    #[test]
    fn the_table_is_complete() {
        let mut listed: Vec<Format> = Format::ALL.into_iter().chain(Format::EXPORTS).collect();
        let table: Vec<Format> = FORMATS.iter().map(|f| f.format).collect();
        assert_eq!(listed, table);
        listed.dedup();
        assert_eq!(listed.len(), 7);
        assert_eq!(
            Format::file_names(),
            "a .txt, .html, .collapsed, .json, .pb.gz, .pprof, .speedscope.json or .jfr file"
        );
        for f in FORMATS {
            assert_eq!(f.format.info().name, f.name);
            assert_eq!(f.name.parse::<Format>(), Ok(f.format));
        }
    }
}
