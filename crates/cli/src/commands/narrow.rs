//! `ferrofluid attach PID --mode alloc --alloc-class P` to a JVM whose `alloc` session is
//! running: narrows that session to the sites allocating P, keeping what it collected
//! (docs/modes/alloc.md, "Narrowing a running session"). With `-o`, the profile of the whole
//! session (before and after narrowing) is written when `--duration` ends, on Enter or a signal;
//! the session itself goes on, owned by whoever started it.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrofluid_protocol::control::{Client, Request, Response};
use ferrofluid_protocol::{AgentOptions, Scheme};

use super::attach::AttachArgs;
use super::output::{out, write_report, Asked};
use crate::interrupt::{self, Interrupts, Mode};

/// How often the wait for the end looks at signals, Enter and the JVM.
const POLL: Duration = Duration::from_millis(200);

/// The flags a narrowing attach cannot apply: they are the running session's own.
fn fixed_flags(options: &AgentOptions) -> Vec<&'static str> {
    [
        ("--root", !options.roots.is_empty()),
        ("--include", !options.filter.include.is_empty()),
        ("--exclude", !options.filter.exclude.is_empty()),
        ("--scheme", options.scheme != Scheme::default()),
        ("--track-every", options.track_every.is_some()),
        ("--track-bytes", options.track_bytes.is_some()),
        ("--stack-depth", options.stack_depth.is_some()),
        ("--file", options.file.is_some()),
    ]
    .into_iter()
    .filter_map(|(flag, given)| given.then_some(flag))
    .collect()
}

/// Why a narrowing attach was refused before it reached the agent: one line, or `None`.
pub(crate) fn refusal(pid: u32, args: &AttachArgs, options: &AgentOptions) -> Option<String> {
    let fixed = fixed_flags(options);
    if !fixed.is_empty() {
        let include = if fixed.contains(&"--include") {
            " (--include selects the allocating code, --alloc-class the allocated classes)"
        } else {
            ""
        };
        return Some(format!(
            "JVM {pid} runs an alloc session already: a second attach narrows it by --alloc-class \
             alone, and {} {} the session's own{include}",
            fixed.join(", "),
            if fixed.len() == 1 { "is" } else { "are" }
        ));
    }
    let other = [
        ("--warmup", args.warmup.is_some()),
        ("--ui", args.ui.is_some()),
        ("--detach", args.detach),
    ];
    other.iter().find(|(_, given)| *given).map(|(flag, _)| {
        format!("{flag} cannot be combined with narrowing the alloc session running in JVM {pid}")
    })
}

/// Narrows the running session of `client`'s agent to `options.alloc_classes`, then, with
/// `-o`, waits and writes the session's profile.
pub(crate) fn run(
    client: &mut Client,
    args: &AttachArgs,
    options: &AgentOptions,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    out(&narrow(client, args.pid, options)?)?;
    let Some(output) = &args.output else {
        eprintln!(
            "ferrofluid: the session goes on; its report holds everything it collected, before \
             and after narrowing"
        );
        return Ok(ExitCode::SUCCESS);
    };
    let interrupts = Interrupts::catch(Mode::Stop {
        again: "interrupted again: quitting without a report; the session goes on".to_owned(),
    })?;
    wait_for_the_end(client, args.pid, options, &interrupts)?;
    let value = match client.request(&Request::Snapshot)? {
        Response::Snapshot { profile } => profile,
        Response::Error { message } => return Err(format!("agent: {message}").into()),
        other => return Err(format!("unexpected agent reply {other:?}").into()),
    };
    // The profile is in hand: no signal discards it now.
    interrupts.keep();
    let profile = ferrofluid_profile::Profile::from_json_slice(&serde_json::to_vec(&value)?)?;
    write_report(&profile, output, Asked::default())?;
    if output != Path::new("-") {
        eprintln!(
            "ferrofluid: wrote the session's profile to {}; the session goes on",
            output.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks the agent to narrow its session; the line saying what became of it.
fn narrow(
    client: &mut Client,
    pid: u32,
    options: &AgentOptions,
) -> Result<String, Box<dyn std::error::Error>> {
    let request = Request::Narrow {
        alloc_classes: options.alloc_classes.clone(),
    };
    let (classes, probed, unprobed) = match client.request(&request)? {
        Response::Narrowed {
            classes,
            sites_probed,
            sites_unprobed,
            ..
        } => (classes, sites_probed, sites_unprobed),
        Response::Error { message } if message.starts_with("malformed request") => {
            return Err(format!(
                "the agent in JVM {pid} is older and cannot narrow a session; detach it first \
                 (`ferrofluid attach {pid} --detach`) and profile again"
            )
            .into())
        }
        Response::Error { message } => return Err(format!("agent: {message}").into()),
        other => return Err(format!("unexpected agent reply {other:?}").into()),
    };
    let patterns: Vec<String> = options
        .alloc_classes
        .iter()
        .map(ToString::to_string)
        .collect();
    let plural = |n: u64, one: &str, many: &str| {
        if n == 1 {
            format!("{n} {one}")
        } else {
            format!("{n} {many}")
        }
    };
    Ok(format!(
        "ferrofluid: narrowed the alloc session of JVM {pid} to the allocated classes {}: {} \
         retransformed; {} probed, {} not (their counts stay as they were)\n",
        patterns.join(", "),
        plural(classes, "class", "classes"),
        plural(probed, "allocation site", "allocation sites"),
        unprobed
    ))
}

/// Waits for `--duration`, Enter (stdin a terminal) or a signal, while the session lasts.
fn wait_for_the_end(
    client: &mut Client,
    pid: u32,
    options: &AgentOptions,
    interrupts: &Interrupts,
) -> Result<(), Box<dyn std::error::Error>> {
    let enter = Arc::new(AtomicBool::new(false));
    let deadline = options.duration.map(|d| Instant::now() + d);
    match options.duration {
        Some(d) => {
            eprintln!("ferrofluid: taking the session's profile in {d:?} (Ctrl-C takes it earlier)")
        }
        None if std::io::stdin().is_terminal() => {
            let enter = Arc::clone(&enter);
            std::thread::spawn(move || {
                let mut line = String::new();
                if std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
                    enter.store(true, Ordering::SeqCst);
                }
            });
            eprintln!("ferrofluid: press Enter or Ctrl-C to take the session's profile");
        }
        None => eprintln!("ferrofluid: taking the session's profile at Ctrl-C or SIGTERM"),
    }
    loop {
        if let Some(signal) = interrupts.received() {
            eprintln!(
                "ferrofluid: {}: taking the session's profile",
                interrupt::name(signal)
            );
            return Ok(());
        }
        if enter.load(Ordering::SeqCst) || deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(());
        }
        std::thread::sleep(POLL);
        // The session is still there: the JVM's exit, or its owner's detach, closes the socket;
        // its owner's `stop` ends collection.
        let collecting = match client.request(&Request::Status) {
            Ok(Response::Status(status)) => status.session_mode.is_some(),
            _ => false,
        };
        if !collecting {
            return Err(format!(
                "the alloc session of JVM {pid} ended (the JVM exited, or the session's owner \
                 stopped it) before its profile was taken; the session's own report holds it; \
                 nothing was written"
            )
            .into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_own_options_are_named() {
        let options = |s: &str| s.parse::<AgentOptions>().unwrap();
        assert!(fixed_flags(&options("mode=alloc,alloc-class=a.B,reveal=async")).is_empty());
        assert_eq!(
            fixed_flags(&options(
                "mode=alloc,alloc-class=a.B,include=a.**,exclude=a.C,track-every=5"
            )),
            ["--include", "--exclude", "--track-every"]
        );
        assert_eq!(
            fixed_flags(&options(
                "mode=alloc,root=A::b,scheme=eager,stack-depth=8,file=x.json"
            )),
            ["--root", "--scheme", "--stack-depth", "--file"]
        );
    }
}
