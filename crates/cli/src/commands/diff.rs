//! `ferrofluid diff BASE.json NEW.json [-o diff.{txt,json,html}]`: what changed between two
//! profiles of the same mode, with an exit status a CI job gates on: 0 when nothing changed
//! beyond the thresholds, 1 when something did, 2 on error.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ferrofluid_profile::Profile;
use ferrofluid_report::diff::{self, ProfileDiff, Threshold, Thresholds};

/// Arguments of `ferrofluid diff`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 nothing changed beyond the thresholds, 1 something did, 2 error.\n\n\
    Examples:\n  ferrofluid diff base.json new.json\n  \
    ferrofluid diff base.json new.json --max-bytecodes-change 5% -o diff.html\n  \
    ferrofluid diff base.json new.json --max-calls-change none --max-time-change 10%"
)]
pub struct DiffArgs {
    /// The profile to compare against (a saved .json profile).
    pub base: PathBuf,
    /// The profile compared (of the same mode).
    pub new: PathBuf,
    /// Output file: .txt, .json or .html by its extension. `-` or no -o: text to the terminal.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How much a context's or method's calls may change: a number of calls (0: any change),
    /// a percentage of the base (`5%`) or `none`.
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "T",
        default_value = "0"
    )]
    pub max_calls_change: Threshold,
    /// How much a context's or method's self time may change beyond its noise: ns, a
    /// percentage (`10%`) or `none`.
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "T",
        default_value = "none"
    )]
    pub max_time_change: Threshold,
    /// How much a context's or method's bytecodes (count mode) may change: a number, a
    /// percentage (`5%`) or `none`.
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "T",
        default_value = "0"
    )]
    pub max_bytecodes_change: Threshold,
    /// A threshold for any other metric, as METRIC=T (`objects=0`, `bytes=10%`, `cpu_time=20%`);
    /// repeatable.
    #[arg(long, allow_hyphen_values = true, value_name = "METRIC=T", value_parser = metric_threshold)]
    pub max_change: Vec<(String, Threshold)>,
}

fn metric_threshold(s: &str) -> Result<(String, Threshold), String> {
    let (name, t) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: give METRIC=T, e.g. bytes=5%"))?;
    Ok((name.to_owned(), t.parse().map_err(|e| format!("{e}"))?))
}

impl DiffArgs {
    /// The thresholds per metric.
    pub fn thresholds(&self) -> Thresholds {
        let mut t = Thresholds::default();
        t.by_metric.insert(
            ferrofluid_profile::metric::CALLS.into(),
            self.max_calls_change,
        );
        t.by_metric.insert(
            ferrofluid_profile::metric::TIME.into(),
            self.max_time_change,
        );
        t.by_metric
            .insert("bytecodes".into(), self.max_bytecodes_change);
        for (name, threshold) in &self.max_change {
            t.by_metric.insert(name.clone(), *threshold);
        }
        t
    }
}

/// Why `ferrofluid diff` failed; each message is one line.
#[derive(Debug, thiserror::Error)]
pub enum DiffCmdError {
    /// An input could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// Input path.
        path: PathBuf,
        /// Cause.
        source: io::Error,
    },
    /// An input is not a profile.
    #[error("{}: {source}", path.display())]
    Parse {
        /// Input path.
        path: PathBuf,
        /// Cause.
        source: ferrofluid_profile::DocumentError,
    },
    /// The profiles cannot be compared.
    #[error(transparent)]
    Diff(#[from] diff::DiffError),
    /// The output's extension names no diff format.
    #[error("cannot tell the diff format from {}; name a .txt, .json or .html file", path.display())]
    NoFormat {
        /// Output path.
        path: PathBuf,
    },
    /// Writing failed.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// Output path.
        path: PathBuf,
        /// Cause.
        source: io::Error,
    },
}

fn load(path: &Path) -> Result<Profile, DiffCmdError> {
    let bytes = std::fs::read(path).map_err(|source| DiffCmdError::Read {
        path: path.into(),
        source,
    })?;
    Profile::from_json_slice(&bytes).map_err(|source| DiffCmdError::Parse {
        path: path.into(),
        source,
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DiffFormat {
    Text,
    Json,
    Html,
}

fn format_of(path: &Path) -> Result<DiffFormat, DiffCmdError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("txt" | "text") => Ok(DiffFormat::Text),
        Some("json") => Ok(DiffFormat::Json),
        Some("html" | "htm") => Ok(DiffFormat::Html),
        _ => Err(DiffCmdError::NoFormat { path: path.into() }),
    }
}

/// Runs `ferrofluid diff`: exit 0 (no change beyond the thresholds) or 1.
pub fn run(args: DiffArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let target = args.output.as_deref().filter(|p| *p != Path::new("-"));
    let format = target.map(format_of).transpose()?;
    let base = load(&args.base)?;
    let new = load(&args.new)?;
    let diff = ProfileDiff::new(&base, &new).map_err(DiffCmdError::from)?;
    let thresholds = args.thresholds();
    let write =
        |out: &mut dyn Write, format: DiffFormat| -> Result<(), ferrofluid_report::ReportError> {
            match format {
                DiffFormat::Text => diff::write_text(&diff, &thresholds, out),
                DiffFormat::Json => diff::write_json(&diff, &thresholds, out),
                DiffFormat::Html => diff::write_html(&diff, &thresholds, out),
            }
        };
    let to_io = |e: ferrofluid_report::ReportError| match e {
        ferrofluid_report::ReportError::Io(io) => io,
    };
    match (target, format) {
        (Some(path), Some(format)) => {
            let mut buf = Vec::new();
            write(&mut buf, format)
                .map_err(to_io)
                .and_then(|()| std::fs::write(path, &buf))
                .map_err(|source| DiffCmdError::Write {
                    path: path.into(),
                    source,
                })?;
            // The verdict on the terminal too, so a CI log says what moved.
            let exceeding = diff.exceeding(&thresholds);
            let mut out = io::stdout().lock();
            if exceeding.is_empty() {
                writeln!(out, "ferrofluid diff: no change beyond the thresholds")?;
            } else {
                writeln!(
                    out,
                    "ferrofluid diff: {} changes beyond the thresholds; moved most:",
                    exceeding.len()
                )?;
                for e in exceeding.iter().take(diff::MOST_MOVED) {
                    writeln!(out, "  {}", diff::moved_line(&diff, e))?;
                }
            }
            eprintln!("ferrofluid: diff written to {}", path.display());
        }
        _ => {
            let mut out = io::stdout().lock();
            match write(&mut out, DiffFormat::Text).map_err(to_io) {
                Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                    return Err(DiffCmdError::Write {
                        path: "-".into(),
                        source: e,
                    }
                    .into())
                }
                _ => {}
            }
        }
    }
    Ok(if diff.exceeding(&thresholds).is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cmd {
        #[command(flatten)]
        args: DiffArgs,
    }

    #[test]
    fn thresholds_from_flags() {
        let a = Cmd::try_parse_from([
            "diff",
            "a.json",
            "b.json",
            "--max-bytecodes-change",
            "5%",
            "--max-change",
            "bytes=100",
        ])
        .unwrap()
        .args;
        let t = a.thresholds();
        assert_eq!(t.of("calls"), Threshold::Absolute(0));
        assert_eq!(t.of("time"), Threshold::Unchecked);
        assert_eq!(t.of("bytecodes"), Threshold::Percent(5.0));
        assert_eq!(t.of("bytes"), Threshold::Absolute(100));
        assert_eq!(t.of("objects"), Threshold::Absolute(0));
        let err = Cmd::try_parse_from(["diff", "a.json", "b.json", "--max-calls-change", "lots"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid threshold \"lots\""), "{err}");
        assert_eq!(
            format_of(Path::new("d.svg")).unwrap_err().to_string(),
            "cannot tell the diff format from d.svg; name a .txt, .json or .html file"
        );
    }
}
