//! `ferrofluid attach PID`: loads the agent into a running JVM (or reconnects to the agent already in it)
//! and talks to it over its control socket: status, detach, reset, narrowing a running `alloc`
//! session, or a profile ([`session`]).

mod session;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use ferrofluid_protocol::control::{self, Client, Request, Response, Status};
use ferrofluid_protocol::{AgentOptions, Mode as ProfileMode, Reveal, Timing};

use super::agent_flags::{parse_duration, AgentFlags};
use super::connect::{self, expect_ok, refuse_if_owned, Reached};
use super::formats::{formats_help, output_help};
use super::output::{check_writable, out, report_format, write_report, Asked};
use crate::push::PushSession;
use session::{profile_session, Ending, Taken};

mod presample;

const EXAMPLES: &str = "Examples:\n  ferrofluid attach 4242\n  ferrofluid attach 4242 --detach\n  \
    ferrofluid attach 4242 --root com.acme.Report::render --duration 30s -o profile.html\n  \
    ferrofluid attach 4242 --root com.acme.Report::render --warmup 10s --duration 30s -o profile.html\n  \
    ferrofluid attach 4242 --mode region --region 'com.acme.**::handle*' --duration 30s -o latency.txt\n  \
    ferrofluid attach 4242 --mode alloc -o allocations.html\n  \
    ferrofluid attach 4242 --mode alloc --alloc-class 'com.acme.Cache$Entry'   # narrows the alloc session running\n  \
    ferrofluid attach 4242 --reset";

/// Arguments of `ferrofluid attach`.
#[derive(Debug, clap::Args)]
#[command(after_help = format!("{}\n\n{EXAMPLES}", formats_help()))]
pub struct AttachArgs {
    /// Process id of the JVM (see `ferrofluid list`).
    #[arg(value_parser = parse_pid, allow_negative_numbers = true)]
    pub pid: u32,
    #[command(flatten)]
    pub flags: AgentFlags,
    #[arg(short, long, value_name = "FILE", help = output_help("when profiling ends",
          "Profiling runs for --duration, or until Enter (stdin a terminal), Ctrl-C, SIGTERM or \
           the JVM's exit; then the agent removes its probes and goes dormant. Exit status 1 if \
           no --root/--region pattern ever matched a method"))]
    pub output: Option<PathBuf>,
    /// Detach the agent after connecting: it removes everything it did and goes dormant.
    #[arg(long)]
    pub detach: bool,
    /// With -o: discard what is collected in this first stretch of profiling (lazy revelation's
    /// retransformations and the recompilations they cause), then profile for --duration.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "output",
          allow_hyphen_values = true)]
    pub warmup: Option<Duration>,
    /// Discard what the agent already running in the JVM has collected so far, and let it go on
    /// (a warm-up left out of a profile started by `ferrofluid run`, `-agentpath` or another
    /// `ferrofluid attach`). Calls in flight count their time from the reset on.
    #[arg(long, conflicts_with_all = ["detach", "output", "warmup", "root", "region", "mode"])]
    pub reset: bool,
    /// With sampled timing and --root: instrument every class the roots reach, not only the
    /// classes one second of stack samples under the roots saw first (docs/modes/cpu.md,
    /// "Timing").
    #[arg(long)]
    pub no_presample: bool,
    /// Seconds to wait for the JVM's attach listener.
    #[arg(long, default_value_t = 10, value_name = "SECS", value_parser = parse_seconds,
          allow_hyphen_values = true)]
    pub timeout: u64,
    /// Profile, and serve a live web UI of the profile on ADDR while profiling runs (default
    /// 127.0.0.1:0: loopback, a free port). The URL printed carries the access token every
    /// request needs; the page's Stop button writes the report (docs/ui.md).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::ui::DEFAULT_ADDR,
          conflicts_with_all = ["detach", "reset"])]
    pub ui: Option<std::net::SocketAddr>,
}

/// A process id: a positive whole number.
pub(crate) fn parse_pid(s: &str) -> Result<u32, String> {
    s.parse::<u32>().ok().filter(|pid| *pid > 0).ok_or_else(|| {
        "expected a process id, a positive whole number (see `ferrofluid list`)".into()
    })
}

/// A wait in whole seconds, at least one.
pub(crate) fn parse_seconds(s: &str) -> Result<u64, String> {
    s.parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| "expected a whole number of seconds, at least 1".into())
}

/// What `attach` was asked to do, beyond the flags.
struct Plan {
    /// The options the agent is loaded with, if it must be loaded.
    load: AgentOptions,
    /// The options of the session to profile.
    session: AgentOptions,
    /// Whether a profile is to be taken.
    profiling: bool,
}

/// The options to load the agent with and the session's, checked before the JVM is touched.
fn plan(args: &AttachArgs) -> Result<Plan, Box<dyn std::error::Error>> {
    // Exact calls with sampled time: the probes' cost a live server can bear
    // (docs/modes/cpu.md, "Timing"); per-call timing when asked for.
    let options = args.flags.options_timed(Timing::Sampled)?;
    let profiling = args.output.is_some()
        || args.ui.is_some()
        || !options.roots.is_empty()
        || !options.region.is_empty()
        || options.mode.is_some()
        || options.push.url.is_some();
    if options.push.url.is_some() && (args.detach || args.reset) {
        return Err("--push profiles: it cannot be given with --detach or --reset".into());
    }
    let mut session = options.clone();
    // A live server keeps serving while its request path is revealed (docs/PERFORMANCE.md).
    if ferrofluid_protocol::mode_options(session.mode()).contains(&"reveal") {
        session.reveal = args.flags.reveal.unwrap_or(Reveal::Async);
    }
    if !profiling {
        return Ok(Plan {
            load: options,
            session,
            profiling,
        });
    }
    if let Some(out) = &args.output {
        report_format(out)?;
        // Before anything is loaded or instrumented, not after the whole profile.
        check_writable(out)?;
    }
    // The tool drives the session over the socket; the agent starts nothing by itself.
    let load = AgentOptions {
        log: options.log.clone(),
        socket: options.socket.clone(),
        ..AgentOptions::default()
    };
    Ok(Plan {
        load,
        session,
        profiling,
    })
}

/// Runs `ferrofluid attach`.
pub fn run(args: AttachArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let plan = plan(&args)?;
    // Bound before the JVM is touched: an address that cannot be served fails first.
    let ui = match args.ui {
        Some(addr) => Some(crate::ui::Server::live(
            addr,
            serde_json::json!({ "pid": args.pid, "command": "attach" }),
        )?),
        None => None,
    };
    // Leftovers of JVMs killed outright, which could not clean up after themselves.
    crate::stale::sweep(Path::new("/tmp"));
    let socket = connect::socket_path(args.pid, plan.load.socket.as_deref())?;
    let push = PushSession::start(&plan.session.push, args.pid, plan.session.mode().name())?;
    if args.reset {
        return reset(args.pid, &socket);
    }
    let timeout = Duration::from_secs(args.timeout);
    let (mut client, reached) =
        connect::connect(args.pid, &socket, &args.flags, &plan.load, timeout)?;
    if reached == Reached::Reconnected {
        // An alloc session running is narrowed, not replaced, by --alloc-class.
        if plan.profiling && !plan.session.alloc_classes.is_empty() {
            if let Some(code) = narrow(&mut client, &args, &plan.session)? {
                return Ok(code);
            }
        }
        if plan.profiling || args.detach {
            refuse_if_owned(&mut client, args.pid, plan.profiling)?;
        }
    }
    out(&format!(
        "ferrofluid: {} the agent in JVM {} (agent {})\n",
        reached.verb(),
        client.pid,
        client.agent_version
    ))?;
    // `--socket` only says where to find the agent; any other option would have needed a fresh load.
    let wanted = AgentOptions {
        socket: None,
        ..plan.load.clone()
    };
    if reached == Reached::Reconnected && wanted != AgentOptions::default() {
        eprintln!(
            "ferrofluid: note: the agent was already running; its options are unchanged (detach first to change them)"
        );
    }
    if plan.profiling && !args.detach {
        return profile(&mut client, &args, &plan.session, ui, push);
    }
    status_or_detach(&mut client, args.detach)
}

/// `--alloc-class` to a JVM whose agent runs a session: narrows it if it is an alloc session
/// (`Some`: done); `None` if no session runs.
fn narrow(
    client: &mut Client,
    args: &AttachArgs,
    session: &AgentOptions,
) -> Result<Option<ExitCode>, Box<dyn std::error::Error>> {
    let Some(mode) = connect::status(client)?.session_mode else {
        return Ok(None);
    };
    if mode != ProfileMode::Alloc.name() {
        return Err(format!(
            "JVM {} runs a {mode} session: --alloc-class narrows only an alloc session; \
             stop that session first",
            args.pid
        )
        .into());
    }
    if let Some(refusal) = super::narrow::refusal(args.pid, args, session) {
        return Err(refusal.into());
    }
    super::narrow::run(client, args, session).map(Some)
}

/// Takes the profile and writes its report; exit status 1 when no pattern ever matched.
fn profile(
    client: &mut Client,
    args: &AttachArgs,
    session: &AgentOptions,
    ui: Option<crate::ui::Server>,
    mut push: Option<PushSession>,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    if let Some(ui) = &ui {
        out(&format!("ferrofluid: live UI at {}\n", ui.url()))?;
    }
    let narrowed;
    let session = if !args.no_presample && presample::applies(session) {
        match presample::narrowed(client, session, presample::LENGTH) {
            Ok(Some(o)) => {
                narrowed = o;
                &narrowed
            }
            Ok(None) => session,
            Err(e) => {
                eprintln!(
                    "ferrofluid: sampling before instrumenting: {e}; instrumenting every class \
                     the roots reach"
                );
                session
            }
        }
    } else {
        session
    };
    let Taken {
        profile,
        ending,
        never_matched,
    } = profile_session(
        client,
        session,
        args.warmup,
        args.pid,
        ui.as_ref(),
        push.as_mut(),
    )?;
    if let Some(push) = push {
        let last = (!matches!(ending, Ending::Detached(_))).then_some(&profile);
        push.finish(last);
    }
    let path = args.output.as_deref().unwrap_or(Path::new("-"));
    let asked = Asked {
        never_matched: Some(&never_matched),
    };
    match ending {
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
            let written = write_report(&profile, path, asked);
            let said = match &written {
                Ok(()) if path == Path::new("-") => {
                    "stopped: the report went to the terminal".to_owned()
                }
                Ok(()) => format!("stopped: report written to {}", path.display()),
                Err(e) => format!("stopped, but the report could not be written: {e}"),
            };
            crate::ui::finish(ui, Some(job), said);
            written?;
        }
        ending => {
            // With --push the profile went to the backend; a report only with -o.
            if args.output.is_some() || session.push.url.is_none() {
                write_report(&profile, path, asked)?;
            }
            crate::ui::finish(ui, None, "profiling has ended".to_owned());
            if let Ending::Exited = ending {
                eprintln!(
                    "ferrofluid: JVM {} exited while profiling; the report holds what ran until then",
                    args.pid
                );
            }
        }
    }
    // No root (or region) pattern ever matched a method: nothing the user asked for ran.
    let patterns = session.roots.len() + session.region.len();
    Ok(if patterns > 0 && never_matched.len() == patterns {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The agent's status, or `--detach`.
fn status_or_detach(
    client: &mut Client,
    detach: bool,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let request = if detach {
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

/// The agent's status as aligned lines.
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
    if let Some(p) = &s.push {
        text += &format_push(p);
    }
    text
}

/// The agent's pushing: where, how often, what arrived and what did not.
fn format_push(p: &control::PushStatus) -> String {
    let every = ferrofluid_protocol::format_duration(Duration::from_millis(p.every_ms));
    let mut text = format!(
        "pushing:        every {every} to {}\n                {} profiles sent ({} KiB), {} dropped, \
         {} failed attempts, {} waiting\n",
        p.url,
        p.sent,
        p.bytes.div_ceil(1024),
        p.dropped,
        p.failures,
        p.pending
    );
    if let Some(why) = &p.last_failure {
        text += &format!("                last attempt failed: {why}\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn status_says_what_the_agents_pushing_did() {
        let s = Status {
            push: Some(control::PushStatus {
                url: "http://pyroscope:4040/ingest".into(),
                every_ms: 10_000,
                sent: 12,
                bytes: 2_049,
                dropped: 1,
                failures: 3,
                pending: 2,
                last_failure: Some("connection refused".into()),
            }),
            ..Default::default()
        };
        assert!(format_status(&s).ends_with(
            "pushing:        every 10s to http://pyroscope:4040/ingest\n                12 profiles \
             sent (3 KiB), 1 dropped, 3 failed attempts, 2 waiting\n                last attempt \
             failed: connection refused\n"
        ));
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
}
