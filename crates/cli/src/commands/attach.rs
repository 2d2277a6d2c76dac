//! `ferrofluid attach PID`: loads the agent into a running JVM (or reconnects to the agent already in it)
//! and talks to it over its control socket. Also home of the agent flags shared with `ferrofluid run`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrofluid_attach::VirtualMachine;
use ferrofluid_protocol::control::{self, Client, Request, Response, Status};
use ferrofluid_protocol::{
    AgentOption, AgentOptions, ClassPattern, MethodPattern, Mode as ProfileMode, Reveal, Scheme,
    Takes, OPTIONS,
};

use crate::interrupt::{self, Interrupts, Mode};

/// Agent flags: one per agent option of [`ferrofluid_protocol::OPTIONS`] (`--KEY VALUE`, or
/// `--KEY` for a boolean, with the help declared there), translated one to one into the agent
/// option string (docs/agent-options.md); and `--agent`.
#[derive(Debug, Clone, Default)]
pub struct AgentFlags {
    /// The options given: `(key, value)` in the order of `OPTIONS`, a repeated flag's values in
    /// command-line order, each spelt as the option string spells it.
    given: Vec<(&'static str, String)>,
    /// `--reveal`, if given (`run` and `attach` default differently).
    pub reveal: Option<Reveal>,
    /// The agent library (default: libferrofluid_agent.so next to the ferrofluid executable).
    pub agent: Option<PathBuf>,
}

const AGENT_HELP: &str =
    "The agent library (default: libferrofluid_agent.so next to the ferrofluid executable)";

impl clap::Args for AgentFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        OPTIONS.iter().fold(cmd, |cmd, o| cmd.arg(flag(o))).arg(
            clap::Arg::new("agent")
                .long("agent")
                .value_name("PATH")
                .value_parser(clap::value_parser!(PathBuf))
                .help(AGENT_HELP),
        )
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for AgentFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = AgentFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.given.clear();
        for o in OPTIONS {
            if o.takes == Takes::Flag {
                if matches.get_flag(o.key) {
                    self.given.push((o.key, "true".to_owned()));
                }
            } else if let Some(values) = matches.get_many::<String>(o.key) {
                self.given.extend(values.map(|v| (o.key, v.clone())));
            }
        }
        self.reveal = self
            .given
            .iter()
            .find(|(key, _)| *key == "reveal")
            .and_then(|(_, v)| v.parse().ok());
        self.agent = matches.get_one::<PathBuf>("agent").cloned();
        Ok(())
    }
}

/// The flag of agent option `o`.
fn flag(o: &'static AgentOption) -> clap::Arg {
    let arg = clap::Arg::new(o.key).long(o.key).help(o.help);
    let value = |arg: clap::Arg| {
        arg.value_name(o.value_name)
            .value_parser(move |s: &str| canonical(o.key, s))
    };
    match o.takes {
        Takes::Flag => arg.action(clap::ArgAction::SetTrue),
        Takes::Value => value(arg).action(clap::ArgAction::Set),
        Takes::Values => value(arg).action(clap::ArgAction::Append),
    }
}

/// The value of a `--KEY` flag as the option string spells it, checked here where the command
/// line says what it expects in its own words; an option with no check here (a path) is checked
/// by the option grammar ([`AgentFlags::options`]).
fn canonical(key: &str, s: &str) -> Result<String, String> {
    match key {
        "mode" => parse_mode(s).map(|m| m.name().to_owned()),
        "root" | "region" => parse_root(s).map(|p| p.to_string()),
        "include" | "exclude" => parse_class(s).map(|p| p.to_string()),
        "alloc-class" => s
            .parse::<ferrofluid_protocol::AllocClassPattern>()
            .map(|p| p.to_string())
            .map_err(|e| e.kind.to_string()),
        "scheme" => s
            .parse::<Scheme>()
            .map(|x| x.name().to_owned())
            .map_err(|e| e.to_string()),
        "region-last" => s
            .parse::<u32>()
            .map(|n| n.to_string())
            .map_err(|e| e.to_string()),
        "reveal" => parse_reveal(s).map(|r| r.name().to_owned()),
        "duration" => parse_duration(s).map(ferrofluid_protocol::format_duration),
        _ => Ok(s.to_owned()),
    }
}

fn parse_root(s: &str) -> Result<MethodPattern, String> {
    s.parse()
        .map_err(|e: ferrofluid_protocol::PatternError| e.kind.to_string())
}

fn parse_class(s: &str) -> Result<ClassPattern, String> {
    s.parse()
        .map_err(|e: ferrofluid_protocol::PatternError| e.kind.to_string())
}

fn parse_mode(s: &str) -> Result<ProfileMode, String> {
    s.parse()
        .map_err(|e: ferrofluid_profile::UnknownMode| e.to_string())
}

fn parse_reveal(s: &str) -> Result<Reveal, String> {
    s.parse()
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    ferrofluid_protocol::parse_duration(s)
        .ok_or_else(|| "expected a whole number with unit ms, s, m or h".into())
}

/// Why agent flags were refused: one line.
#[derive(Debug, thiserror::Error)]
pub enum FlagsError {
    #[error(transparent)]
    Options(#[from] ferrofluid_protocol::OptionsError),
    #[error("{}", ferrofluid_protocol::mode_unavailable(*.0))]
    Unavailable(ProfileMode),
}

impl AgentFlags {
    /// The options these flags stand for, checked to survive the trip through the option string
    /// and to name a mode the agent has.
    pub fn options(&self) -> Result<AgentOptions, FlagsError> {
        let options =
            AgentOptions::from_pairs(self.given.iter().map(|(key, v)| (*key, v.as_str())))?;
        options.validate()?;
        if !ferrofluid_protocol::AGENT_MODES.contains(&options.mode()) {
            return Err(FlagsError::Unavailable(options.mode()));
        }
        Ok(options)
    }

    /// The agent library to load, which must exist.
    pub fn agent_library(&self) -> Result<PathBuf, String> {
        let path = match &self.agent {
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .map_err(|e| format!("cannot locate the ferrofluid executable: {e}"))?
                .with_file_name("libferrofluid_agent.so"),
        };
        let path = std::path::absolute(&path).unwrap_or(path);
        if !path.is_file() {
            return Err(format!(
                "agent library {} not found (build it with `cargo build -p ferrofluid-agent` or pass --agent)",
                path.display()
            ));
        }
        Ok(path)
    }
}

/// Arguments of `ferrofluid attach`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  ferrofluid attach 4242\n  ferrofluid attach 4242 --detach\n  \
    ferrofluid attach 4242 --root com.acme.Report::render --duration 30s -o profile.html\n  \
    ferrofluid attach 4242 --root com.acme.Report::render --warmup 10s --duration 30s -o profile.html\n  \
    ferrofluid attach 4242 --mode region --region 'com.acme.**::handle*' --duration 30s -o latency.txt\n  \
    ferrofluid attach 4242 --mode alloc -o allocations.html\n  \
    ferrofluid attach 4242 --mode alloc --alloc-class 'com.acme.Cache$Entry'   # narrows the alloc session running\n  \
    ferrofluid attach 4242 --reset"
)]
pub struct AttachArgs {
    /// Process id of the JVM (see `ferrofluid list`).
    pub pid: u32,
    #[command(flatten)]
    pub flags: AgentFlags,
    /// Profile, then write the report here (.txt, .html, .collapsed, .json; the exports .pb.gz,
    /// .speedscope.json, .jfr; `-`: text to the terminal). Profiling runs for --duration, or
    /// until Enter (stdin a terminal), Ctrl-C, SIGTERM or the JVM's exit; then the agent removes
    /// its probes and goes dormant. Exit status 1 if no --root/--region pattern ever matched a
    /// method.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Detach the agent after connecting: it removes everything it did and goes dormant.
    #[arg(long)]
    pub detach: bool,
    /// With -o: discard what is collected in this first stretch of profiling (lazy revelation's
    /// retransformations and the recompilations they cause), then profile for --duration.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "output")]
    pub warmup: Option<Duration>,
    /// Discard what the agent already running in the JVM has collected so far, and let it go on
    /// (a warm-up left out of a profile started by `ferrofluid run`, `-agentpath` or another
    /// `ferrofluid attach`). Calls in flight count their time from the reset on.
    #[arg(long, conflicts_with_all = ["detach", "output", "warmup", "root", "region", "mode"])]
    pub reset: bool,
    /// Seconds to wait for the JVM's attach listener.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub timeout: u64,
    /// Profile, and serve a live web UI of the profile on ADDR while profiling runs (default
    /// 127.0.0.1:0: loopback, a free port). The URL printed carries the access token every
    /// request needs; the page's Stop button writes the report (docs/ui.md).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::ui::DEFAULT_ADDR,
          conflicts_with_all = ["detach", "reset"])]
    pub ui: Option<std::net::SocketAddr>,
}

/// Runs `ferrofluid attach`.
pub fn run(args: AttachArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let mut options = args.flags.options()?;
    if ferrofluid_protocol::AT_LOAD_ONLY.contains(&options.mode()) {
        return Err(ferrofluid_protocol::at_load_only(options.mode()).into());
    }
    let profiling = args.output.is_some()
        || args.ui.is_some()
        || !options.roots.is_empty()
        || !options.region.is_empty()
        || options.mode.is_some();
    let mut session = options.clone();
    // A live server keeps serving while its request path is revealed (docs/PERFORMANCE.md).
    if ferrofluid_protocol::mode_options(session.mode()).contains(&"reveal") {
        session.reveal = args.flags.reveal.unwrap_or(Reveal::Async);
    }
    if profiling {
        // The tool drives the session over the socket; the agent starts nothing by itself.
        options = AgentOptions {
            log: options.log.clone(),
            socket: options.socket.clone(),
            ..AgentOptions::default()
        };
        if let Some(out) = &args.output {
            report_format(out)?;
            // Before anything is loaded or instrumented, not after the whole profile.
            check_writable(out)?;
        }
    }
    // Bound before the JVM is touched: an address that cannot be served fails first.
    let ui = match args.ui {
        Some(addr) => Some(crate::ui::Server::live(
            addr,
            serde_json::json!({ "pid": args.pid, "command": "attach" }),
        )?),
        None => None,
    };
    // Leftovers of JVMs killed outright, which could not clean up after themselves.
    crate::stale::sweep(std::path::Path::new("/tmp"));
    let socket = socket_path(args.pid, options.socket.as_deref())?;
    if args.reset {
        return reset(args.pid, &socket);
    }
    let (mut client, how) = match Client::connect(&socket) {
        Ok(client) => (client, "reconnected to"),
        Err(_) => {
            let agent = args.flags.agent_library()?;
            let vm =
                VirtualMachine::attach_with_timeout(args.pid, Duration::from_secs(args.timeout))?;
            let loading = crate::progress::spinner("loading the agent");
            vm.load_agent(&agent, &options.to_string())?;
            drop(loading);
            let client = Client::connect(&socket).map_err(|e| {
                format!(
                    "agent loaded into JVM {}, but its socket {}: {e}",
                    args.pid,
                    socket.display()
                )
            })?;
            (client, "attached to")
        }
    };
    // An alloc session running is narrowed, not replaced, by --alloc-class.
    if how == "reconnected to" && profiling && !session.alloc_classes.is_empty() {
        if let Some(mode) = running_mode(&mut client)? {
            if mode != ProfileMode::Alloc.name() {
                return Err(format!(
                    "JVM {} runs a {mode} session: --alloc-class narrows only an alloc session; \
                     stop that session first",
                    args.pid
                )
                .into());
            }
            if let Some(refusal) = super::narrow::refusal(args.pid, &args, &session) {
                return Err(refusal.into());
            }
            return super::narrow::run(&mut client, &args, &session);
        }
    }
    if how == "reconnected to" && (profiling || args.detach) {
        refuse_if_owned(&mut client, args.pid, profiling)?;
    }
    out(&format!(
        "ferrofluid: {how} the agent in JVM {} (agent {})\n",
        client.pid, client.agent_version
    ))?;
    // `--socket` only says where to find the agent; any other option would have needed a fresh load.
    let wanted = AgentOptions {
        socket: None,
        ..options.clone()
    };
    if how == "reconnected to" && wanted != AgentOptions::default() {
        eprintln!(
            "ferrofluid: note: the agent was already running; its options are unchanged (detach first to change them)"
        );
    }
    if profiling && !args.detach {
        if let Some(ui) = &ui {
            out(&format!("ferrofluid: live UI at {}\n", ui.url()))?;
        }
        let (profile, ending, unmatched) =
            profile_session(&mut client, &session, args.warmup, args.pid, ui.as_ref())?;
        let ending = match ending {
            Ending::Detached(job) => {
                let said = format!(
                    "detached: the agent in JVM {} removed its probes and is dormant; no report was written",
                    args.pid
                );
                eprintln!("ferrofluid: {said}");
                crate::ui::finish(ui, job, said);
                return Ok(ExitCode::SUCCESS);
            }
            Ending::Ui(job) => {
                let path = args.output.as_deref().unwrap_or(Path::new("-"));
                let written = write_report(&profile, path);
                let said = match &written {
                    Ok(()) if path == Path::new("-") => {
                        "stopped: the report went to the terminal".to_owned()
                    }
                    Ok(()) => format!("stopped: report written to {}", path.display()),
                    Err(e) => format!("stopped, but the report could not be written: {e}"),
                };
                crate::ui::finish(ui, Some(job), said);
                written?;
                Ending::Elapsed
            }
            ending => {
                write_report(&profile, args.output.as_deref().unwrap_or(Path::new("-")))?;
                crate::ui::finish(ui, None, "profiling has ended".to_owned());
                ending
            }
        };
        if let Ending::Exited = ending {
            eprintln!(
                "ferrofluid: JVM {} exited while profiling; the report holds what ran until then",
                args.pid
            );
        }
        // No root (or region) pattern ever matched a method: nothing the user asked for ran.
        let patterns = session.roots.len() + session.region.len();
        return Ok(if patterns > 0 && unmatched == patterns {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        });
    }
    let request = if args.detach {
        Request::Detach
    } else {
        Request::Status
    };
    match client.request(&request)? {
        Response::Status(status) => out(&format_status(&status))?,
        Response::Ok => out(&format!(
            "ferrofluid: detached; the agent in JVM {} is dormant\n",
            client.pid
        ))?,
        Response::Error { message } => return Err(format!("agent: {message}").into()),
        other => return Err(format!("unexpected agent reply {other:?}").into()),
    }
    Ok(ExitCode::SUCCESS)
}

/// Fails if `path` cannot be written, leaving it as it was: a report that cannot be written is
/// found before profiling, not after it.
pub(crate) fn check_writable(path: &Path) -> Result<(), String> {
    if path == Path::new("-") {
        return Ok(());
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| format!("cannot write the report to {}: {e}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Fails with what is going on if another tool owns the agent's session: a second tool must
/// never take over (or end) a profile the first one is collecting. Nor may a new profile
/// (`profiling`) replace the session the agent's own options started (`ferrofluid run`,
/// `-agentpath`), whose profile is written when it ends; `--reset` and `--detach` still reach it.
pub(crate) fn refuse_if_owned(
    client: &mut Client,
    pid: u32,
    profiling: bool,
) -> Result<(), String> {
    match client
        .request(&Request::Status)
        .map_err(|e| e.to_string())?
    {
        Response::Status(Status {
            owner: Some(owner), ..
        }) if !owner.orphaned => Err(control::busy_message(pid, &owner)),
        Response::Status(Status {
            owner: None,
            collecting: true,
            options,
            ..
        }) if profiling => Err(control::started_session_message(pid, &options)),
        _ => Ok(()),
    }
}

/// The mode of the session the agent runs and collects, if any.
fn running_mode(client: &mut Client) -> Result<Option<String>, String> {
    match client
        .request(&Request::Status)
        .map_err(|e| e.to_string())?
    {
        Response::Status(status) => Ok(status.session_mode),
        Response::Error { message } => Err(format!("agent: {message}")),
        other => Err(format!("unexpected agent reply {other:?}")),
    }
}

/// `--reset`: the agent must be running already; loading one would have nothing to reset.
fn reset(pid: u32, socket: &Path) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let mut client = Client::connect(socket).map_err(|e| {
        format!(
            "no ferrofluid agent answers in JVM {pid} ({}: {e}); --reset clears the data of a profile already running",
            socket.display()
        )
    })?;
    refuse_if_owned(&mut client, pid, false)?;
    expect_ok(&mut client, &Request::Reset)?;
    out(&format!(
        "ferrofluid: the agent in JVM {pid} discarded the data collected so far and goes on profiling\n"
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// One request that must be answered `Ok`.
fn expect_ok(client: &mut Client, request: &Request) -> Result<(), String> {
    match client.request(request).map_err(|e| e.to_string())? {
        Response::Ok => Ok(()),
        Response::Error { message } => Err(format!("agent: {message}")),
        other => Err(format!("unexpected agent reply {other:?}")),
    }
}

/// How profiling ended.
enum Ending {
    /// `--duration` (or the warm-up) elapsed.
    Elapsed,
    /// Enter on the terminal.
    Enter,
    /// SIGINT, SIGTERM or SIGHUP.
    Signal(i32),
    /// The JVM exited; the agent handed over what it collected.
    Exited,
    /// The UI's Stop button: the report is written, then the page is answered.
    Ui(crate::ui::Job),
    /// The UI's Detach button (the page is answered once detached): no report.
    Detached(Option<crate::ui::Job>),
}

/// How often the CLI looks at signals and Enter while the agent waits for the JVM's exit.
const POLL: Duration = Duration::from_millis(200);

/// Waits until `deadline`, a signal, Enter or the JVM's exit (whose profile it returns).
fn collect(
    client: &mut Client,
    deadline: Option<Instant>,
    interrupts: &Interrupts,
    enter: &AtomicBool,
    pid: u32,
    ui: Option<&crate::ui::Server>,
) -> Result<(Ending, Option<serde_json::Value>), String> {
    loop {
        while let Some(job) = ui.and_then(crate::ui::Server::next_job) {
            match crate::ui::serve_job(client, job) {
                Some(job) if job.ask == crate::ui::Ask::Stop => return Ok((Ending::Ui(job), None)),
                Some(job) => return Ok((Ending::Detached(Some(job)), None)),
                None => {}
            }
        }
        if let Some(signal) = interrupts.received() {
            return Ok((Ending::Signal(signal), None));
        }
        if enter.load(Ordering::SeqCst) {
            return Ok((Ending::Enter, None));
        }
        let now = Instant::now();
        let wait = match deadline {
            Some(d) if now >= d => return Ok((Ending::Elapsed, None)),
            Some(d) => (d - now).min(POLL),
            None => POLL,
        };
        let request = Request::Wait {
            timeout_ms: wait.as_millis() as u64,
        };
        match client.request(&request) {
            Ok(Response::Ok) => {}
            Ok(Response::Exited { profile }) => return Ok((Ending::Exited, Some(profile))),
            Ok(Response::Error { message }) => return Err(format!("agent: {message}")),
            Ok(other) => return Err(format!("unexpected agent reply {other:?}")),
            Err(e) => {
                return Err(format!(
                    "JVM {pid} ended before its profile could be taken (killed or crashed?): {e}; \
                     nothing was written"
                ))
            }
        }
    }
}

/// Says at once which roots match no loaded method, with near names; profiling goes on, since
/// their classes may load later. Returns the unmatched patterns.
fn warn_unmatched(client: &mut Client, flag: &str) -> Vec<String> {
    let Ok(Response::Status(status)) = client.request(&Request::Status) else {
        return Vec::new();
    };
    for u in &status.unmatched_roots {
        let hint = if u.near.is_empty() {
            String::new()
        } else {
            format!("; did you mean {}?", u.near.join(" or "))
        };
        eprintln!(
            "ferrofluid: warning: no loaded method matches {flag} {}{hint} (profiling goes on in \
             case its class loads later)",
            u.pattern
        );
    }
    status
        .unmatched_roots
        .into_iter()
        .map(|u| u.pattern)
        .collect()
}

/// Instruments the call subgraph, collects for `--duration`, until Enter (on a terminal), a
/// signal or the JVM's exit, and returns the profile; unless the JVM exited, the agent is then
/// de-instrumented and detached, leaving the JVM as it was.
fn profile_session(
    client: &mut Client,
    options: &AgentOptions,
    warmup: Option<Duration>,
    pid: u32,
    ui: Option<&crate::ui::Server>,
) -> Result<(ferrofluid_profile::Profile, Ending, usize), Box<dyn std::error::Error>> {
    let interrupts = Interrupts::catch(Mode::Stop {
        again: format!(
            "interrupted again: quitting without a report; the agent in JVM {pid} removes its \
             probes by itself within {} s",
            control::ORPHAN_GRACE_SECS
        ),
    })?;
    let instrument = Request::Instrument(options.clone());
    // Methods the engine could not patch are reported, and the rest is profiled anyway; a
    // session owned by another tool is not ours to profile.
    let instrumenting = crate::progress::spinner("instrumenting");
    let instrumented = client.request(&instrument);
    drop(instrumenting);
    match instrumented? {
        Response::Ok => {}
        Response::Error { message } if control::is_refusal(&message) => return Err(message.into()),
        Response::Error { message } => eprintln!("ferrofluid: agent: {message}"),
        other => return Err(format!("unexpected agent reply {other:?}").into()),
    }
    let flag = if options.region.is_empty() {
        "--root"
    } else {
        "--region"
    };
    let unmatched = if options.roots.is_empty() && options.region.is_empty() {
        Vec::new()
    } else {
        warn_unmatched(client, flag)
    };
    expect_ok(client, &Request::Start)?;
    let what = if !options.region.is_empty() {
        let region: Vec<String> = options.region.iter().map(ToString::to_string).collect();
        format!("the region {}", region.join(", "))
    } else if options.roots.is_empty() {
        "the whole program".to_owned()
    } else {
        let roots: Vec<String> = options.roots.iter().map(ToString::to_string).collect();
        roots.join(", ")
    };
    let enter = Arc::new(AtomicBool::new(false));
    if options.duration.is_none() && std::io::stdin().is_terminal() {
        let enter = Arc::clone(&enter);
        std::thread::spawn(move || {
            let mut line = String::new();
            if std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
                enter.store(true, Ordering::SeqCst);
            }
        });
    }
    let mut ended = None;
    if let Some(w) = warmup {
        eprintln!(
            "ferrofluid: warming up {what} for {w:?} (what is collected meanwhile is discarded)"
        );
        let (ending, exited) = collect(
            client,
            Some(Instant::now() + w),
            &interrupts,
            &enter,
            pid,
            ui,
        )?;
        if let Ending::Elapsed = ending {
            expect_ok(client, &Request::Reset)?;
        } else {
            ended = Some((ending, exited));
        }
    }
    let (ending, exited) = match ended {
        Some(e) => e,
        None => {
            let deadline = match options.duration {
                Some(d) => {
                    eprintln!("ferrofluid: profiling {what} for {d:?} (Ctrl-C stops earlier)");
                    Some(Instant::now() + d)
                }
                None if std::io::stdin().is_terminal() => {
                    eprintln!("ferrofluid: profiling {what}; press Enter or Ctrl-C to stop");
                    None
                }
                None => {
                    eprintln!(
                        "ferrofluid: profiling {what} until Ctrl-C, SIGTERM or the JVM's exit"
                    );
                    None
                }
            };
            collect(client, deadline, &interrupts, &enter, pid, ui)?
        }
    };
    if let Ending::Detached(job) = ending {
        // Detach removes every probe and leaves the JVM as it was; nothing is reported.
        if let Err(e) = expect_ok(client, &Request::Detach) {
            if let Some(job) = job {
                job.answer(Err(e.clone()));
            }
            return Err(e.into());
        }
        return Ok((
            ferrofluid_profile::Profile::default(),
            Ending::Detached(job),
            0,
        ));
    }
    if let Ending::Signal(signal) = ending {
        eprintln!(
            "ferrofluid: {}: stopping, writing the report and removing the probes",
            interrupt::name(signal)
        );
    }
    // Patterns that never matched: those unmatched at the start, unless the JVM exits (then
    // any that matched later made the profile's threads).
    let mut still_unmatched = unmatched.len();
    let mut restore_failures = Vec::new();
    let value = match exited {
        Some(value) => {
            if value["threads"].as_array().is_some_and(|t| !t.is_empty()) {
                still_unmatched = 0;
            }
            value
        }
        None => {
            if !unmatched.is_empty() {
                if let Ok(Response::Status(status)) = client.request(&Request::Status) {
                    for u in &status.unmatched_roots {
                        eprintln!(
                            "ferrofluid: {flag} {} matched no method while profiling",
                            u.pattern
                        );
                    }
                    still_unmatched = status.unmatched_roots.len();
                }
            }
            expect_ok(client, &Request::Stop)?;
            // Probes out first: the snapshot of a large profile takes seconds to build, send and
            // read, which the program would spend running its probes (the agent keeps what the
            // snapshot says of the ended session). A class that could not be restored must not
            // cost the profile; a JVM that began exiting meanwhile has nothing left to restore.
            match expect_ok(client, &Request::Deinstrument) {
                Err(e) if e.ends_with(" is exiting") => {}
                Err(e) => eprintln!("ferrofluid: warning: {e}"),
                Ok(()) => {
                    // Restore failures: the agent's status lists them.
                    if let Ok(Response::Status(status)) = client.request(&Request::Status) {
                        restore_failures = status.failed_classes;
                    }
                }
            }
            let snapshot = crate::progress::spinner("taking the profile");
            let taken = client.request(&Request::Snapshot);
            drop(snapshot);
            let value = match taken? {
                Response::Snapshot { profile } => profile,
                Response::Error { message } => return Err(format!("agent: {message}").into()),
                other => return Err(format!("unexpected agent reply {other:?}").into()),
            };
            match expect_ok(client, &Request::Detach) {
                Err(e) if e.ends_with(" is exiting") => {}
                Err(e) => eprintln!("ferrofluid: warning: {e}"),
                Ok(()) => {}
            }
            value
        }
    };
    finish(value, restore_failures, ending, still_unmatched)
}

/// The profile of `value` with the classes that could not be restored added, and how the
/// session ended.
fn finish(
    value: serde_json::Value,
    restore_failures: Vec<ferrofluid_profile::FailedClass>,
    ending: Ending,
    still_unmatched: usize,
) -> Result<(ferrofluid_profile::Profile, Ending, usize), Box<dyn std::error::Error>> {
    if let Some(n) = value.get("dropped_events").and_then(|d| d.as_u64()) {
        if n > 0 {
            eprintln!("ferrofluid: warning: {n} events were dropped; the profile is inexact");
        }
    }
    if let Some(n) = value.get("unrevealed_calls").and_then(|d| d.as_u64()) {
        if n > 0 {
            eprintln!(
                "ferrofluid: note: {n} calls ran before their callees were instrumented (--reveal \
                 async); what they called counts in their own time (--reveal sync counts every \
                 call, at a cost to the running program)"
            );
        }
    }
    let mut profile = ferrofluid_profile::Profile::from_json_slice(&serde_json::to_vec(&value)?)?;
    ferrofluid_profile::merge_failed(&mut profile.failed_classes, restore_failures);
    Ok((profile, ending, still_unmatched))
}

/// The report format of `path` (`-`: text).
pub(crate) fn report_format(path: &Path) -> Result<ferrofluid_report::Format, String> {
    if path == Path::new("-") {
        return Ok(ferrofluid_report::Format::Text);
    }
    ferrofluid_report::Format::from_path(path).ok_or_else(|| {
        format!(
            "cannot tell the report format from {}; name a {} file",
            path.display(),
            ferrofluid_report::Format::EXTENSIONS
        )
    })
}

/// Why a profile is empty, said in one line, so an empty report is never a silent one.
pub(crate) fn emptiness_warning(profile: &ferrofluid_profile::Profile) -> Option<String> {
    if let Some(regions) = &profile.regions {
        return if profile.instrumented == 0 {
            Some(
                "no method matched the region, so nothing was measured; check --region \
                 (CLASS::METHOD, e.g. com.acme.Report::render; `*` within a package, `**` across)"
                    .to_owned(),
            )
        } else if regions.iter().all(|r| r.count == 0) {
            Some(format!(
                "{} methods were instrumented but no region invocation completed while measuring",
                profile.instrumented
            ))
        } else {
            None
        };
    }
    if profile.instrumented == 0 {
        Some(
            "no method matched the roots, so nothing was profiled; check --root \
             (CLASS::METHOD, e.g. com.acme.Report::render; `*` within a package, `**` across)"
                .to_owned(),
        )
    } else if profile.threads.is_empty() {
        Some(format!(
            "{} methods were instrumented but no root ran while profiling",
            profile.instrumented
        ))
    } else {
        None
    }
}

/// Writes `profile` to `path` in the format its extension names (`-`: text to stdout).
pub(crate) fn write_report(
    profile: &ferrofluid_profile::Profile,
    path: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    use std::io::Write;
    if let Some(warning) = emptiness_warning(profile) {
        eprintln!("ferrofluid: warning: {warning}");
    }
    for note in ferrofluid_report::failed_class_notes(profile) {
        eprintln!("ferrofluid: warning: {note}");
    }
    let writer = report_format(path)?.writer();
    let mut buf = Vec::new();
    let writing = crate::progress::spinner("writing the report");
    writer.write(profile, &mut buf).map_err(|e| match e {
        ferrofluid_report::ReportError::Io(io) => io,
    })?;
    drop(writing);
    if path == Path::new("-") {
        out(&String::from_utf8_lossy(&buf))?;
    } else {
        std::fs::File::create(path)
            .and_then(|mut f| f.write_all(&buf))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!("ferrofluid: report written to {}", path.display());
    }
    Ok(())
}

/// Writes to stdout; a closed pipe (`ferrofluid attach 1 | head -1`) is not an error.
pub(crate) fn out(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// The agent's socket as seen from here: its path in the JVM's file system, reached through
/// `/proc/<pid>/root` (so JVMs in containers work too).
pub(crate) fn socket_path(
    pid: u32,
    explicit: Option<&Path>,
) -> Result<PathBuf, ferrofluid_attach::AttachError> {
    let info = ferrofluid_attach::procfs::info(pid)
        .map_err(|_| ferrofluid_attach::AttachError::NoSuchProcess(pid))?;
    let root = PathBuf::from(format!("/proc/{pid}/root"));
    Ok(match explicit {
        Some(p) => root.join(p.strip_prefix("/").unwrap_or(p)),
        None => control::default_socket_path(&root.join("tmp"), info.nspid),
    })
}

fn format_status(s: &Status) -> String {
    let options = if s.options.is_empty() {
        "(defaults)"
    } else {
        &s.options
    };
    let mut text = format!(
        "pid:            {}\nJVM:            {}\nagent:          {}\noptions:        {options}\n\
         collecting:     {}\ninstrumented:   {} classes, {} methods\ndropped events: {}\nattaches:       {}\n",
        s.pid,
        s.vm_version,
        s.agent_version,
        if s.collecting { "yes" } else { "no" },
        s.instrumented_classes,
        s.instrumented_methods,
        s.dropped_events,
        s.attach_count
    );
    if let Some(o) = &s.owner {
        let state = if o.orphaned {
            format!(
                "; it disconnected: the probes are removed within {} s",
                control::ORPHAN_GRACE_SECS
            )
        } else {
            String::new()
        };
        let by = if o.pid == 0 {
            "ferrofluid".to_owned()
        } else {
            format!("ferrofluid pid {}", o.pid)
        };
        text += &format!(
            "profiled by:    {by} since {} UTC ({}){state}\n",
            control::utc_time(o.since_ms),
            o.what
        );
    }
    for u in &s.unmatched_roots {
        text += &format!("no match yet:   {}\n", u.pattern);
    }
    if !s.alloc_classes.is_empty() {
        text += &format!("alloc classes:  {}\n", s.alloc_classes.join(", "));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn empty_profiles_say_why() {
        let mut p = ferrofluid_profile::Profile::default();
        assert!(emptiness_warning(&p)
            .unwrap()
            .starts_with("no method matched the roots"));
        p.instrumented = 3;
        assert_eq!(
            emptiness_warning(&p).unwrap(),
            "3 methods were instrumented but no root ran while profiling"
        );
        let mut r = ferrofluid_profile::Profile {
            regions: Some(vec![]),
            ..Default::default()
        };
        assert!(emptiness_warning(&r)
            .unwrap()
            .starts_with("no method matched the region, so nothing was measured; check --region"));
        r.instrumented = 1;
        r.regions = Some(vec![ferrofluid_profile::RegionStats::default()]);
        assert_eq!(
            emptiness_warning(&r).unwrap(),
            "1 methods were instrumented but no region invocation completed while measuring"
        );
        r.regions.as_mut().unwrap()[0].count = 1;
        assert_eq!(emptiness_warning(&r), None);
    }

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        flags: AgentFlags,
    }

    fn options(argv: &[&str]) -> Result<String, String> {
        let w = Wrapper::try_parse_from(std::iter::once("t").chain(argv.iter().copied()))
            .map_err(|e| e.to_string().lines().next().unwrap_or_default().to_owned())?;
        w.flags
            .options()
            .map(|o| o.to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn flags_translate_into_the_one_option_grammar() {
        let cases: &[(&[&str], &str)] = &[
            (&[], ""),
            (&["--scheme", "lazy"], ""),
            (
                &[
                    "--root",
                    "com.acme.Foo::bar",
                    "--root",
                    "A::*",
                    "--scheme",
                    "total",
                    "--duration",
                    "90s",
                    "--file",
                    "out.json",
                ],
                "root=com.acme.Foo::bar,root=A::*,scheme=total,file=out.json,duration=90s",
            ),
            (
                &["--log", "/tmp/a.log", "--socket", "/tmp/ff/s"],
                "log=/tmp/a.log,socket=/tmp/ff/s",
            ),
            (
                &[
                    "--exclude",
                    "java.**",
                    "--include",
                    "com/acme/**",
                    "--root",
                    "*::main",
                ],
                "root=*::main,include=com.acme.**,exclude=java.**",
            ),
            (
                &["--region", "demo.Work::step", "--region-last", "5"],
                "region=demo.Work::step,region-last=5",
            ),
        ];
        for (argv, expected) in cases {
            assert_eq!(options(argv).as_deref(), Ok(*expected), "{argv:?}");
        }
    }

    #[test]
    fn bad_flags_are_one_line_errors() {
        let cases = [
            (["--scheme", "fast"], "error: invalid value 'fast' for '--scheme <SCHEME>': unknown scheme `fast` (expected lazy, eager or total)"),
            (["--duration", "30"], "error: invalid value '30' for '--duration <DURATION>': expected a whole number with unit ms, s, m or h"),
            (["--root", "Foo.bar"], "error: invalid value 'Foo.bar' for '--root <METHOD>': expected CLASS::METHOD (e.g. com.acme.Report::render)"),
            (["--exclude", "java..lang"], "error: invalid value 'java..lang' for '--exclude <CLASSES>': empty package or class name between separators"),
        ];
        for (argv, message) in cases {
            assert_eq!(options(&argv), Err(message.to_owned()));
        }
        assert_eq!(
            options(&["--root", "A::b", "--region", "C::d"]),
            Err("agent options `root` and `region` exclude each other: `region` measures only its own methods, `root` profiles a call subgraph".into())
        );
        assert_eq!(
            options(&["--region-last", "3"]),
            Err("agent option `region-last` needs `region`".into())
        );
        assert_eq!(
            options(&["--file", "a,b.json"]),
            Err("bad value `a,b.json` for agent option `file`: expected a non-empty path without commas".into())
        );
    }

    #[test]
    fn mode_is_one_flag_and_modes_without_an_engine_are_refused() {
        assert_eq!(
            options(&["--mode", "cpu", "--root", "A::b"]).as_deref(),
            Ok("mode=cpu,root=A::b")
        );
        assert_eq!(
            options(&["--mode", "region", "--region", "demo.Work::step"]).as_deref(),
            Ok("mode=region,region=demo.Work::step")
        );
        // `--region P` is short for `--mode region` with P.
        assert_eq!(
            options(&["--region", "demo.Work::step"]).as_deref(),
            Ok("region=demo.Work::step")
        );
        assert_eq!(
            options(&["--mode", "sample"]),
            Err("mode sample is not available in this agent (available: cpu, region, alloc, count, native)".to_owned())
        );
        assert_eq!(options(&["--mode", "native"]).as_deref(), Ok("mode=native"));
        assert_eq!(
            options(&["--mode", "count", "--root", "A::f", "--blocks", "precise"]).as_deref(),
            Ok("mode=count,root=A::f,blocks=precise")
        );
        assert_eq!(
            options(&["--mode", "cpu", "--blocks", "precise"]),
            Err("agent option `blocks` does not apply to mode cpu; mode cpu takes root, include, exclude, scheme, cpu, skip-trivial, adaptive, reveal".into())
        );
        assert_eq!(
            options(&["--mode", "heap"]),
            Err("error: invalid value 'heap' for '--mode <MODE>': unknown mode `heap` (expected one of cpu, region, alloc, count, native, sample)".into())
        );
        assert_eq!(
            options(&["--mode", "cpu", "--region", "A::b"]),
            Err("agent option `region` does not apply to mode cpu; mode cpu takes root, include, exclude, scheme, cpu, skip-trivial, adaptive, reveal".into())
        );
        assert_eq!(
            options(&["--mode", "region", "--region", "A::b", "--cpu"]),
            Err("agent options `cpu` and `region` exclude each other: code-region mode measures wall time only".into())
        );
    }

    #[test]
    fn status_names_the_allocated_classes_of_a_narrowed_session() {
        let s = Status {
            session_mode: Some("alloc".into()),
            alloc_classes: vec!["com.acme.Cache$Entry".into(), "byte[]".into()],
            ..Default::default()
        };
        assert!(format_status(&s).ends_with("alloc classes:  com.acme.Cache$Entry, byte[]\n"));
    }

    #[test]
    fn status_is_printed_as_aligned_lines() {
        let s = Status {
            pid: 7,
            vm_version: "17.0.15".into(),
            agent_version: "0.1.0".into(),
            attach_count: 2,
            ..Default::default()
        };
        assert_eq!(
            format_status(&s),
            "pid:            7\nJVM:            17.0.15\nagent:          0.1.0\noptions:        (defaults)\n\
             collecting:     no\ninstrumented:   0 classes, 0 methods\ndropped events: 0\nattaches:       2\n"
        );
    }

    #[test]
    fn report_format_comes_from_the_extension() {
        use ferrofluid_report::Format;
        assert_eq!(report_format(Path::new("-")), Ok(Format::Text));
        assert_eq!(report_format(Path::new("p.html")), Ok(Format::Html));
        assert_eq!(report_format(Path::new("a/p.json")), Ok(Format::Json));
        assert_eq!(
            report_format(Path::new("p.svg")),
            Err("cannot tell the report format from p.svg; name a .txt, .html, .collapsed, .json, .pb.gz, .pprof, .speedscope.json or .jfr file".into())
        );
    }

    #[test]
    fn socket_paths_go_through_the_jvms_root() {
        let me = std::process::id();
        assert_eq!(
            socket_path(me, None).unwrap(),
            PathBuf::from(format!("/proc/{me}/root/tmp/.ferrofluid-{me}/control.sock"))
        );
        assert_eq!(
            socket_path(me, Some(Path::new("/run/ff/s"))).unwrap(),
            PathBuf::from(format!("/proc/{me}/root/run/ff/s"))
        );
    }
}
