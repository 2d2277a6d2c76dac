//! `ferrofluid report IN.json -o OUT`: converts a saved JSON profile into another report format
//! or an export (the formats of [`ferrofluid_report::FORMATS`]), or serves it in the web UI.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ferrofluid_profile::{Mode, Profile};
use ferrofluid_report::{Format, Weight};

use super::formats::FormatArg;

const EXAMPLES: &str = "Examples:\n  ferrofluid report profile.json\n  \
    ferrofluid report profile.json -o profile.html\n  \
    ferrofluid report profile.json --format collapsed -o - | flamegraph.pl > flame.svg\n  \
    ferrofluid report profile.json --ui";

/// Arguments of `ferrofluid report`.
#[derive(Debug, clap::Args)]
#[command(after_help = format!("{}\n\n{EXAMPLES}", super::formats::formats_help()))]
pub struct ReportArgs {
    /// Saved profile (the .json report of `ferrofluid run`/`attach` or of the agent).
    pub input: PathBuf,
    /// Output file; its extension picks the format (see Formats below). `-` or no -o: text to
    /// the terminal.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format, overriding the extension of -o.
    #[arg(long, value_enum, value_name = "F")]
    pub format: Option<FormatArg>,
    /// The metric folded stacks' values (and the HTML flame graph of a profile of another mode
    /// than cpu) weigh by: `wall` (compensated self wall time, the default of a CPU profile),
    /// `cpu` (thread CPU time of a profile recorded with --cpu; its HTML shows both flame graphs
    /// by itself), `alloc-bytes`, `alloc-count`, `live-bytes`, `live-count`, `survived-bytes`,
    /// `survived-count` (an allocation profile's paths), or a metric of the profile (`calls`, `bytecodes`, `objects`, `bytes`,
    /// `samples`...). Default: the mode's primary metric.
    #[arg(long, value_name = "METRIC")]
    pub weight: Option<String>,
    /// Rank the time of threads found blocked when the profile was taken (waiting, parked,
    /// sleeping, blocked in a socket read...) in the hot spots with the rest, instead of
    /// listing it apart (text and HTML).
    #[arg(long)]
    pub include_idle: bool,
    /// The class table of an allocation profile (text): by `survived-bytes` (default: bytes
    /// of the objects that survived a GC), `live-bytes`, `allocated-bytes`, `allocated` or
    /// `generations`.
    #[arg(long, value_name = "ORDER", value_parser = parse_class_order)]
    pub sort: Option<ferrofluid_report::alloc::ClassOrder>,
    /// Virtual threads (JDK 21+) in text and HTML: merged into one entry, "virtual threads (N)",
    /// or each as its own thread. JSON keeps one entry each.
    #[arg(long, value_enum, value_name = "HOW", default_value = "merged")]
    pub virtual_threads: VirtualThreadsArg,
    /// Serve the profile's web UI on ADDR (default 127.0.0.1:0: loopback, a free port) until
    /// Ctrl-C, instead of converting it; the URL printed carries the access token (docs/ui.md).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::ui::DEFAULT_ADDR,
          conflicts_with_all = ["output", "format"])]
    pub ui: Option<std::net::SocketAddr>,
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
    #[error("cannot tell the report format from {}; name {}, or pass --format", path.display(), Format::file_names())]
    NoFormat {
        /// Output path.
        path: PathBuf,
    },
    /// `--weight cpu` for another format than folded stacks.
    #[error("--weight cpu applies to folded stacks (--format collapsed); the HTML report shows a CPU flame graph by itself, and text and JSON show CPU columns")]
    WeightFormat,
    /// `--weight METRIC` (not `wall` or `cpu`) for text or JSON, or for the HTML report of a
    /// CPU profile.
    #[error("--weight {weight} applies to folded stacks (--format collapsed) and to the HTML flame graph of a profile of another mode than cpu")]
    MetricFormat {
        /// The metric asked for.
        weight: String,
    },
    /// `--weight METRIC` naming no metric of the profile.
    #[error("{} has no metric {weight:?} (its metrics: {available})", path.display())]
    NoMetric {
        /// Input path.
        path: PathBuf,
        /// The metric asked for.
        weight: String,
        /// The profile's metrics, comma-separated.
        available: String,
    },
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
        (Some(FormatArg(f)), _) => f,
        (None, Target::Stdout) => Format::Text,
        (None, Target::File(p)) => {
            Format::from_path(p).ok_or_else(|| ReportCmdError::NoFormat { path: p.into() })?
        }
    };
    Ok((target, format))
}

/// Runs `ferrofluid report`.
pub fn run(args: ReportArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    if let Some(addr) = args.ui {
        return serve(&args, addr);
    }
    convert(&args)?;
    Ok(ExitCode::SUCCESS)
}

/// `--ui`: serves the saved profile until a signal.
fn serve(
    args: &ReportArgs,
    addr: std::net::SocketAddr,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let bytes = std::fs::read(&args.input).map_err(|source| ReportCmdError::Read {
        path: args.input.clone(),
        source,
    })?;
    let profile = Profile::from_json_slice(&bytes).map_err(|source| ReportCmdError::Parse {
        path: args.input.clone(),
        source,
    })?;
    let interrupts = crate::interrupt::Interrupts::catch(crate::interrupt::Mode::Stop {
        again: "interrupted again: quitting".into(),
    })?;
    let about =
        serde_json::json!({ "file": args.input.display().to_string(), "command": "report" });
    let server = crate::ui::Server::saved(addr, &profile, about)?;
    super::output::out(&format!(
        "ferrofluid: serving {} at {} (Ctrl-C stops)\n",
        args.input.display(),
        server.url()
    ))?;
    while interrupts.received().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    server.close();
    Ok(ExitCode::SUCCESS)
}

fn convert(args: &ReportArgs) -> Result<(), ReportCmdError> {
    let (target, format) = plan(args)?;
    let reading = match target {
        Target::File(_) => Some(crate::progress::spinner("reading the profile")),
        Target::Stdout => None,
    };
    let bytes = std::fs::read(&args.input).map_err(|source| ReportCmdError::Read {
        path: args.input.clone(),
        source,
    })?;
    let profile = Profile::from_json_slice(&bytes).map_err(|source| ReportCmdError::Parse {
        path: args.input.clone(),
        source,
    })?;
    drop(reading);
    let writer = writer(args, &profile, format)?;
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
            // Not on the terminal while the report itself may go there.
            let _writing = crate::progress::spinner("writing the report");
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

fn parse_class_order(s: &str) -> Result<ferrofluid_report::alloc::ClassOrder, String> {
    s.parse()
}

/// The writer of `format` for `profile` with the options of `args`.
fn writer(
    args: &ReportArgs,
    profile: &Profile,
    format: Format,
) -> Result<Box<dyn ferrofluid_report::Report>, ReportCmdError> {
    use ferrofluid_report::collapsed::CollapsedReport;
    use ferrofluid_report::html::HtmlReport;
    use ferrofluid_report::text::TextReport;
    let weight = args.weight.as_deref().map(Weight::named);
    let vthreads = args.virtual_threads.into();
    // The weight must name one of the profile's metrics where it is used.
    let check = |w: &Weight| match w.resolve(profile) {
        Some(_) => Ok(()),
        None if *w == Weight::Cpu && profile.mode == Mode::Cpu => Err(ReportCmdError::NoCpu {
            path: args.input.clone(),
        }),
        None => Err(ReportCmdError::NoMetric {
            path: args.input.clone(),
            weight: args.weight.clone().unwrap_or_default(),
            available: profile
                .metrics()
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    };
    Ok(match (format, weight) {
        (Format::Collapsed, Some(w)) => {
            check(&w)?;
            Box::new(CollapsedReport::default().with_weight(w))
        }
        (Format::Html, Some(w)) if profile.mode != Mode::Cpu => {
            check(&w)?;
            Box::new(
                HtmlReport::default()
                    .with_weight(w)
                    .with_idle(args.include_idle)
                    .with_virtual_threads(vthreads),
            )
        }
        (_, Some(Weight::Cpu)) => return Err(ReportCmdError::WeightFormat),
        (Format::Text, None | Some(Weight::Wall)) => Box::new(
            TextReport::default()
                .with_class_order(args.sort.unwrap_or_default())
                .with_idle(args.include_idle)
                .with_virtual_threads(vthreads),
        ),
        (Format::Html, None | Some(Weight::Wall)) => Box::new(
            HtmlReport::default()
                .with_idle(args.include_idle)
                .with_virtual_threads(vthreads),
        ),
        (_, None | Some(Weight::Wall)) => format.writer(),
        (_, Some(_)) => {
            return Err(ReportCmdError::MetricFormat {
                weight: args.weight.clone().unwrap_or_default(),
            })
        }
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

    /// A golden report's bytes: an HTML one with its `<!-- page/NAME -->` lines replaced by the
    /// page's parts stored once beside the goldens (the report crate's `tests/golden.rs`).
    fn expected(case: &str, file: &str) -> Vec<u8> {
        let bytes = std::fs::read(golden(case, file)).unwrap();
        if !file.ends_with(".html") {
            return bytes;
        }
        let mut page = String::from_utf8(bytes).unwrap();
        for name in [
            "style.html",
            "view.html",
            "view-script.html",
            "sort-script.html",
        ] {
            let part = std::fs::read_to_string(golden("page", name)).unwrap();
            page = page.replace(&format!("<!-- page/{name} -->\n"), &part);
        }
        page.into_bytes()
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
            "cannot tell the report format from out.svg; name a .txt, .html, .collapsed, .json, .pb.gz, .pprof, .speedscope.json or .jfr file, or pass --format"
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
            let expected = expected("sample", &format!("report.{ext}"));
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
        let expected = expected("sample", "report.cpu.collapsed");
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
    fn other_modes_weigh_by_any_of_their_metrics() {
        let dir = tempfile::tempdir().unwrap();
        let count = golden("count", "input.json");
        let alloc = golden("alloc", "input.json");
        let run = |input: &Path, out: &str, extra: &[&str]| {
            let out = dir.path().join(out);
            let mut argv = vec![input.to_str().unwrap(), "-o", out.to_str().unwrap()];
            argv.extend_from_slice(extra);
            convert(&parse(&argv)).map(|()| std::fs::read(&out).unwrap())
        };
        // Default: the mode's primary metric (bytecodes), as the golden report.
        assert_eq!(
            run(&count, "count.collapsed", &[]).unwrap(),
            expected("count", "report.collapsed")
        );
        assert_eq!(
            run(&count, "calls.collapsed", &["--weight", "calls"]).unwrap(),
            expected("count", "report.calls.collapsed")
        );
        assert_eq!(
            run(&alloc, "objects.html", &["--weight", "objects"]).unwrap(),
            expected("alloc", "report.objects.html")
        );
        assert_eq!(
            run(&count, "count.txt", &["--weight", "calls"])
                .unwrap_err()
                .to_string(),
            "--weight calls applies to folded stacks (--format collapsed) and to the HTML flame \
             graph of a profile of another mode than cpu"
        );
        assert_eq!(
            run(&alloc, "alloc.collapsed", &["--weight", "calls"])
                .unwrap_err()
                .to_string(),
            format!(
                "{} has no metric \"calls\" (its metrics: objects, bytes)",
                alloc.display()
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
