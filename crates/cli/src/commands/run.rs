//! `ferrofluid run [FLAGS] -- java ARGS...`: starts a JVM with the agent loaded from its first class.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use super::agent_flags::AgentFlags;
use super::output::{check_writable, out, report_format, write_report, Asked};
use crate::interrupt::{self, Interrupts, Mode};

const EXAMPLES: &str = "Examples:\n  ferrofluid run --root com.acme.Main::main -o out.html -- java -cp app.jar com.acme.Main\n  \
    ferrofluid run --mode region --region com.acme.Report::render -o regions.txt -- java -cp app.jar com.acme.Main\n  \
    ferrofluid run --file out.json -- ./gradlew test   (agent passed via JAVA_TOOL_OPTIONS)\n  \
    ferrofluid run --mode count --push http://pyroscope:4040/ingest --every 10s -- java -jar app.jar";

/// Arguments of `ferrofluid run`.
#[derive(Debug, clap::Args)]
#[command(after_help = format!("{}\n\n{EXAMPLES}", super::formats::formats_help()))]
pub struct RunArgs {
    #[command(flatten)]
    pub flags: AgentFlags,
    #[arg(short, long, value_name = "FILE", help = super::formats::output_help(
          "when the JVM exits",
          "Text to the terminal is the default without --file. Without --root the whole program \
           is profiled"))]
    pub output: Option<PathBuf>,
    /// Serve a live web UI of the profile on ADDR while the program runs (default 127.0.0.1:0:
    /// loopback, a free port); the URL printed carries the access token (docs/ui.md). The report
    /// is written when the program exits, as without it.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::ui::DEFAULT_ADDR)]
    pub ui: Option<std::net::SocketAddr>,
    /// The command: `java ARGS...`, or any command that starts JVMs.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Runs `ferrofluid run`; exits with the command's exit code.
pub fn run(args: RunArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let mut options = args.flags.options()?;
    let agent = args.flags.agent_library()?;
    if args.output.is_some() && options.file.is_some() {
        return Err("give either --file (the agent's JSON) or -o (a report), not both".into());
    }
    // Without -o, --file or --push the text report goes to the terminal when the JVM exits: a
    // profile is never taken only to be thrown away.
    let output = match (&args.output, &options.file) {
        (Some(o), _) => Some(o.clone()),
        (None, None) if options.push.url.is_none() => Some(PathBuf::from("-")),
        (None, _) => None,
    };
    if options.push.url.is_some() {
        // The agent pushes, with the credentials of the environment the JVM inherits: checked
        // before it starts.
        ferrofluid_push::Auth::from_env()?;
    }
    if let Some(file) = &options.file {
        check_writable(file)?;
    }
    // The agent writes its JSON profile at exit (to the output itself for .json, else to a
    // temporary file converted afterwards).
    let mut convert: Option<(PathBuf, PathBuf)> = None;
    if let Some(output) = &output {
        let format = report_format(output)?;
        check_writable(output)?;
        let json = if format == ferrofluid_report::Format::Json && output.as_os_str() != "-" {
            std::path::absolute(output)?
        } else {
            let tmp =
                std::env::temp_dir().join(format!("ferrofluid-run-{}.json", std::process::id()));
            convert = Some((tmp.clone(), output.clone()));
            tmp
        };
        options.file = Some(json);
        options.validate()?;
    }
    // Bound before the program starts: an address that cannot be served fails first.
    let ui = match args.ui {
        Some(addr) => Some(crate::ui::Server::live(
            addr,
            serde_json::json!({ "command": "run" }),
        )?),
        None => None,
    };
    let agentpath = agentpath_arg(&agent.display().to_string(), &options.to_string());
    let mut command = build_command(&args.command, &agentpath);
    // Caught before the JVM starts: Ctrl-C reaches it too, and ferrofluid must outlive it to
    // write its report.
    let child_pid = Arc::new(AtomicU32::new(0));
    let interrupts = Interrupts::catch(Mode::Forward(Arc::clone(&child_pid)))?;
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run `{}`: {e}", args.command[0]))?;
    child_pid.store(child.id(), Ordering::SeqCst);
    let done = Arc::new(AtomicBool::new(false));
    let ui = ui.map(|server| {
        let _ = out(&format!("ferrofluid: live UI at {}\n", server.url()));
        let (pid, socket, done) = (child.id(), options.socket.clone(), Arc::clone(&done));
        std::thread::spawn(move || serve_ui(server, pid, socket.as_deref(), &done))
    });
    let status = child.wait();
    done.store(true, Ordering::SeqCst);
    if let Some(ui) = ui {
        let _ = ui.join();
    }
    let status = status?;
    // Like a shell: the command's code, or 128 + the signal that killed it.
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    if let Some(signal) = interrupts.received() {
        eprintln!(
            "ferrofluid: {}: the program ended (exit status {code}); writing what was profiled",
            interrupt::name(signal)
        );
    }
    report(convert, options.file.as_deref())?;
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// The report of the profile the agent wrote as the JVM exited: `convert` = (its temporary
/// JSON, the output) converted, else the failed classes of the JSON `file` it wrote itself said.
fn report(
    convert: Option<(PathBuf, PathBuf)>,
    file: Option<&Path>,
) -> Result<(), Box<dyn std::error::Error>> {
    if let Some((json, output)) = convert {
        let bytes = std::fs::read(&json).map_err(|e| {
            format!(
                "the agent wrote no profile ({}: {e}); the JVM may have been killed, or see the \
                 agent's log",
                json.display()
            )
        })?;
        // The temporary JSON goes once the report is written, and is named if it stays.
        let written = ferrofluid_profile::Profile::from_json_slice(&bytes)
            .map_err(|e| e.to_string())
            .and_then(|p| write_report(&p, &output, Asked::default()).map_err(|e| e.to_string()));
        match written {
            Ok(()) => {
                let _ = std::fs::remove_file(&json);
            }
            Err(e) => {
                return Err(
                    format!("{e}; the agent's profile is kept in {}", json.display()).into(),
                )
            }
        }
    } else if let Some(json) = file {
        // Written by the agent itself: its failed classes are said all the same.
        let profile = std::fs::read(json)
            .ok()
            .and_then(|b| ferrofluid_profile::Profile::from_json_slice(&b).ok());
        for note in profile
            .iter()
            .flat_map(ferrofluid_report::failed_class_notes)
        {
            eprintln!("ferrofluid: warning: {note}");
        }
    }
    Ok(())
}

/// Answers the UI's requests through the agent's control socket in JVM `pid` until `done`. The
/// session is the one the agent's options started: it ends with the program, which writes the
/// report, so Stop and Detach are refused.
fn serve_ui(
    server: crate::ui::Server,
    pid: u32,
    socket: Option<&std::path::Path>,
    done: &AtomicBool,
) {
    let mut client = None;
    while !done.load(Ordering::SeqCst) {
        if client.is_none() {
            // The agent opens its socket as the JVM starts.
            client = super::connect::socket_path(pid, socket)
                .ok()
                .and_then(|path| ferrofluid_protocol::control::Client::connect(&path).ok());
        }
        while let Some(job) = server.next_job() {
            let Some(c) = client.as_mut() else {
                job.answer(Err("the agent's control socket is not open yet".into()));
                continue;
            };
            if let Some(job) = crate::ui::serve_job(c, job) {
                job.answer(Err(
                    "`ferrofluid run` writes its report when the program exits: end the program \
                     to stop profiling"
                        .into(),
                ));
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    crate::ui::finish(
        Some(server),
        None,
        "the program exited; ferrofluid writes the report".into(),
    );
}

/// `-agentpath:LIB=OPTIONS` (no `=` for empty options).
fn agentpath_arg(library: &str, options: &str) -> String {
    if options.is_empty() {
        format!("-agentpath:{library}")
    } else {
        format!("-agentpath:{library}={options}")
    }
}

/// For `java`, the agent goes first among its arguments (so it is loaded before anything else); any other
/// command gets it through `JAVA_TOOL_OPTIONS`, which every JVM it starts reads.
fn build_command(argv: &[String], agentpath: &str) -> Command {
    let mut command = Command::new(&argv[0]);
    let is_java = std::path::Path::new(&argv[0])
        .file_name()
        .is_some_and(|n| n == "java");
    if is_java {
        command.arg(agentpath);
    } else {
        let existing = std::env::var("JAVA_TOOL_OPTIONS").unwrap_or_default();
        command.env(
            "JAVA_TOOL_OPTIONS",
            format!("{agentpath} {existing}").trim_end(),
        );
    }
    command.args(&argv[1..]);
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(c: &Command) -> Vec<String> {
        std::iter::once(c.get_program())
            .chain(c.get_args())
            .map(|s| s.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn java_gets_the_agent_as_first_argument() {
        let a = agentpath_arg("/x/libferrofluid_agent.so", "file=o.json");
        assert_eq!(a, "-agentpath:/x/libferrofluid_agent.so=file=o.json");
        let c = build_command(
            &[
                "/usr/bin/java".into(),
                "-cp".into(),
                ".".into(),
                "Main".into(),
            ],
            &a,
        );
        assert_eq!(argv(&c), ["/usr/bin/java", &a, "-cp", ".", "Main"]);
        assert_eq!(agentpath_arg("/x/l.so", ""), "-agentpath:/x/l.so");
    }

    #[test]
    fn other_commands_get_java_tool_options() {
        let c = build_command(&["./gradlew".into(), "test".into()], "-agentpath:/x/l.so");
        assert_eq!(argv(&c), ["./gradlew", "test"]);
        let envs: Vec<_> = c
            .get_envs()
            .map(|(k, v)| (k.to_owned(), v.map(|v| v.to_owned())))
            .collect();
        assert_eq!(envs.len(), 1);
        assert_eq!(envs[0].0, "JAVA_TOOL_OPTIONS");
        assert!(envs[0]
            .1
            .as_ref()
            .unwrap()
            .to_string_lossy()
            .starts_with("-agentpath:/x/l.so"));
    }
}
