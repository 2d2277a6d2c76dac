//! `ferrofluid report IN.json -o OUT.{txt,html,collapsed,json}`: converts a saved JSON
//! profile into another report format.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ferrofluid_profile::Profile;
use ferrofluid_report::Format;

/// Arguments of `ferrofluid report`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  ferrofluid report profile.json\n  \
    ferrofluid report profile.json -o profile.html\n  \
    ferrofluid report profile.json --format collapsed -o - | flamegraph.pl > flame.svg")]
pub struct ReportArgs {
    /// Saved profile (the .json report of `ferrofluid run`/`attach` or of the agent).
    pub input: PathBuf,
    /// Output file; its extension picks the format. `-` or no -o: text to the terminal.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format, overriding the extension of -o.
    #[arg(long, value_enum, value_name = "F")]
    pub format: Option<FormatArg>,
    /// Folded stacks' values: compensated self wall time, or thread CPU time for a profile
    /// recorded with --cpu (HTML shows both flame graphs by itself).
    #[arg(long, value_enum, value_name = "W", default_value = "wall")]
    pub weight: WeightArg,
    /// Rank the time of threads found blocked when the profile was taken (waiting, parked,
    /// sleeping, blocked in a socket read...) in the hot spots with the rest, instead of
    /// listing it apart (text and HTML).
    #[arg(long)]
    pub include_idle: bool,
    /// Virtual threads (JDK 21+) in text and HTML: merged into one entry, "virtual threads (N)",
    /// or each as its own thread. JSON keeps one entry each.
    #[arg(long, value_enum, value_name = "HOW", default_value = "merged")]
    pub virtual_threads: VirtualThreadsArg,
}

/// How `--virtual-threads` shows virtual threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum VirtualThreadsArg {
    /// One entry for all, their trees merged.
    Merged,
    /// One entry each.
    Each,
}

impl From<VirtualThreadsArg> for ferrofluid_report::VirtualThreads {
    fn from(v: VirtualThreadsArg) -> Self {
        match v {
            VirtualThreadsArg::Merged => ferrofluid_report::VirtualThreads::Merged,
            VirtualThreadsArg::Each => ferrofluid_report::VirtualThreads::Each,
        }
    }
}

/// Weights accepted by `--weight`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WeightArg {
    /// Wall time.
    Wall,
    /// Thread CPU time.
    Cpu,
}

/// Formats accepted by `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Hot spots and call tree as plain text.
    #[value(name = "txt", alias = "text")]
    Txt,
    /// One self-contained HTML page.
    #[value(name = "html")]
    Html,
    /// Folded stacks for flamegraph.pl, inferno, speedscope.
    #[value(name = "collapsed", alias = "folded")]
    Collapsed,
    /// The JSON profile document.
    #[value(name = "json")]
    Json,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Txt => Format::Text,
            FormatArg::Html => Format::Html,
            FormatArg::Collapsed => Format::Collapsed,
            FormatArg::Json => Format::Json,
        }
    }
}

/// Why `ferrofluid report` failed; each message is one line.
#[derive(Debug, thiserror::Error)]
pub enum ReportCmdError {
    /// The input could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// Input path.
        path: PathBuf,
        /// Cause.
        source: io::Error,
    },
    /// The input is not a profile this build understands.
    #[error("{}: {source}", path.display())]
    Parse {
        /// Input path.
        path: PathBuf,
        /// Cause.
        source: ferrofluid_profile::DocumentError,
    },
    /// Neither --format nor the extension of -o names a format.
    #[error("cannot tell the report format from {}; name a .txt, .html, .collapsed or .json file, or pass --format", path.display())]
    NoFormat {
        /// Output path.
        path: PathBuf,
    },
    /// `--weight cpu` for another format than folded stacks.
    #[error("--weight cpu applies to folded stacks (--format collapsed); the HTML report shows a CPU flame graph by itself, and text and JSON show CPU columns")]
    WeightFormat,
    /// `--weight cpu` for a profile without CPU times.
    #[error("{} has no thread CPU times; record the profile with --cpu to weigh stacks by CPU time", path.display())]
    NoCpu {
        /// Input path.
        path: PathBuf,
    },
    /// The output could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// Output path (`-` for the terminal).
        path: PathBuf,
        /// Cause.
        source: io::Error,
    },
}

/// Where the report goes.
#[derive(Debug, PartialEq, Eq)]
enum Target<'a> {
    Stdout,
    File(&'a Path),
}

/// The output target and format chosen by the arguments.
fn plan(args: &ReportArgs) -> Result<(Target<'_>, Format), ReportCmdError> {
    let target = match args.output.as_deref() {
        None => Target::Stdout,
        Some(p) if p == Path::new("-") => Target::Stdout,
        Some(p) => Target::File(p),
    };
    let format = match (args.format, &target) {
        (Some(f), _) => f.into(),
        (None, Target::Stdout) => Format::Text,
        (None, Target::File(p)) => {
            Format::from_path(p).ok_or_else(|| ReportCmdError::NoFormat { path: p.into() })?
        }
    };
    Ok((target, format))
}

/// Runs `ferrofluid report`.
pub fn run(args: ReportArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    convert(&args)?;
    Ok(ExitCode::SUCCESS)
}

fn convert(args: &ReportArgs) -> Result<(), ReportCmdError> {
    let (target, format) = plan(args)?;
    let bytes = std::fs::read(&args.input).map_err(|source| ReportCmdError::Read {
        path: args.input.clone(),
        source,
    })?;
    let profile = Profile::from_json_slice(&bytes).map_err(|source| ReportCmdError::Parse {
        path: args.input.clone(),
        source,
    })?;
    let vthreads = args.virtual_threads.into();
    let writer: Box<dyn ferrofluid_report::Report> = match args.weight {
        WeightArg::Wall if format == Format::Text => Box::new(
            ferrofluid_report::text::TextReport::default()
                .with_idle(args.include_idle)
                .with_virtual_threads(vthreads),
        ),
        WeightArg::Wall if format == Format::Html => Box::new(
            ferrofluid_report::html::HtmlReport::default()
                .with_idle(args.include_idle)
                .with_virtual_threads(vthreads),
        ),
        WeightArg::Wall => format.writer(),
        WeightArg::Cpu if format != Format::Collapsed => return Err(ReportCmdError::WeightFormat),
        WeightArg::Cpu if !profile.has_cpu() => {
            return Err(ReportCmdError::NoCpu {
                path: args.input.clone(),
            })
        }
        WeightArg::Cpu => Box::new(
            ferrofluid_report::collapsed::CollapsedReport::default()
                .with_weight(ferrofluid_report::Weight::Cpu),
        ),
    };
    let result = match target {
        Target::Stdout => {
            let mut out = io::stdout().lock();
            let r = write_all(&*writer, &profile, &mut out);
            // A closed pipe (`| head`) is the reader's choice, not an error.
            match r {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
                r => r,
            }
        }
        Target::File(path) => {
            File::create(path).and_then(|f| write_all(&*writer, &profile, &mut BufWriter::new(f)))
        }
    };
    result.map_err(|source| ReportCmdError::Write {
        path: match target {
            Target::Stdout => PathBuf::from("-"),
            Target::File(p) => p.to_path_buf(),
        },
        source,
    })
}

fn write_all(
    writer: &dyn ferrofluid_report::Report,
    profile: &Profile,
    out: &mut dyn Write,
) -> io::Result<()> {
    writer.write(profile, out).map_err(|e| match e {
        ferrofluid_report::ReportError::Io(io) => io,
    })?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cmd {
        #[command(flatten)]
        args: ReportArgs,
    }

    fn parse(argv: &[&str]) -> ReportArgs {
        let mut full = vec!["report"];
        full.extend_from_slice(argv);
        Cmd::try_parse_from(full).unwrap().args
    }

    fn golden(case: &str, file: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../report/tests/data")
            .join(case)
            .join(file)
    }

    #[test]
    fn format_comes_from_flag_then_extension_then_defaults_to_text() {
        let a = parse(&["p.json", "-o", "out.html"]);
        assert_eq!(
            plan(&a).unwrap(),
            (Target::File(Path::new("out.html")), Format::Html)
        );
        let a = parse(&["p.json", "-o", "out.txt", "--format", "folded"]);
        assert_eq!(plan(&a).unwrap().1, Format::Collapsed);
        let a = parse(&["p.json"]);
        assert_eq!(plan(&a).unwrap(), (Target::Stdout, Format::Text));
        let a = parse(&["p.json", "-o", "-", "--format", "json"]);
        assert_eq!(plan(&a).unwrap(), (Target::Stdout, Format::Json));
        let a = parse(&["p.json", "-o", "out.svg"]);
        assert_eq!(
            plan(&a).unwrap_err().to_string(),
            "cannot tell the report format from out.svg; name a .txt, .html, .collapsed or .json file, or pass --format"
        );
        let err = Cmd::try_parse_from(["report", "p.json", "--format", "svg"]).unwrap_err();
        assert!(err
            .to_string()
            .contains("invalid value 'svg' for '--format <F>'"));
    }

    #[test]
    fn converts_the_sample_into_every_format() {
        let dir = tempfile::tempdir().unwrap();
        let input = golden("sample", "input.json");
        for ext in ["txt", "html", "collapsed", "json"] {
            let out = dir.path().join(format!("sample.{ext}"));
            let args = parse(&[input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
            convert(&args).unwrap();
            let expected = std::fs::read(golden("sample", &format!("report.{ext}"))).unwrap();
            assert_eq!(std::fs::read(&out).unwrap(), expected, "{ext}");
        }
    }

    #[test]
    fn cpu_weighted_folded_stacks_need_cpu_times_and_folded_output() {
        let dir = tempfile::tempdir().unwrap();
        let sample = golden("sample", "input.json");
        let out = dir.path().join("cpu.collapsed");
        let args = parse(&[
            sample.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--weight",
            "cpu",
        ]);
        convert(&args).unwrap();
        let expected = std::fs::read(golden("sample", "report.cpu.collapsed")).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), expected);
        let html = dir.path().join("cpu.html");
        let args = parse(&[
            sample.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
            "--weight",
            "cpu",
        ]);
        assert_eq!(
            convert(&args).unwrap_err().to_string(),
            "--weight cpu applies to folded stacks (--format collapsed); the HTML report shows a CPU flame graph by itself, and text and JSON show CPU columns"
        );
        let fig4 = golden("fig4", "input.json");
        let args = parse(&[
            fig4.to_str().unwrap(),
            "--format",
            "collapsed",
            "--weight",
            "cpu",
        ]);
        assert_eq!(
            convert(&args).unwrap_err().to_string(),
            format!(
                "{} has no thread CPU times; record the profile with --cpu to weigh stacks by CPU time",
                fig4.display()
            )
        );
    }

    #[test]
    fn unreadable_or_foreign_input_is_one_clear_line() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.json");
        let args = parse(&[missing.to_str().unwrap()]);
        let msg = convert(&args).unwrap_err().to_string();
        assert_eq!(
            msg,
            format!(
                "cannot read {}: No such file or directory (os error 2)",
                missing.display()
            )
        );
        let other = dir.path().join("other.json");
        std::fs::write(&other, br#"{"format":"speedscope"}"#).unwrap();
        let msg = convert(&parse(&[other.to_str().unwrap()]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            format!(
                "{}: not a ferrofluid profile: missing field `version` at line 1 column 23",
                other.display()
            )
        );
        let out = dir.path().join("no/such/dir/x.txt");
        let args = parse(&[
            golden("fig4", "input.json").to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        let msg = convert(&args).unwrap_err().to_string();
        assert_eq!(
            msg,
            format!(
                "cannot write {}: No such file or directory (os error 2)",
                out.display()
            )
        );
    }
}
