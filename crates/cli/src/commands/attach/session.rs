//! One profile taken by `attach`: instrument, start, collect until `--duration`, Enter, a
//! signal, the UI or the JVM's exit, then probes out, the profile taken, the agent dormant.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrofluid_profile::{FailedClass, Profile};
use ferrofluid_protocol::control::{self, Client, Request, Response};
use ferrofluid_protocol::AgentOptions;

use super::super::connect::{expect_ok, status};
use crate::interrupt::{self, Interrupts, Mode};
use crate::push::PushSession;

/// How profiling ended.
pub(super) enum Ending {
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

/// What a profile session gave.
pub(super) struct Taken {
    pub profile: Profile,
    pub ending: Ending,
    /// The `--root`/`--region` patterns that never matched a loaded method.
    pub never_matched: Vec<String>,
}

/// How often the CLI looks at signals and Enter while the agent waits for the JVM's exit.
const POLL: Duration = Duration::from_millis(200);

/// What a session waits on besides the agent.
struct Waiting<'a> {
    interrupts: &'a Interrupts,
    enter: &'a AtomicBool,
    pid: u32,
    ui: Option<&'a crate::ui::Server>,
}

/// Waits until `deadline`, a signal, Enter or the JVM's exit (whose profile it returns).
fn collect(
    client: &mut Client,
    deadline: Option<Instant>,
    w: &Waiting<'_>,
) -> Result<(Ending, Option<serde_json::Value>), String> {
    loop {
        while let Some(job) = w.ui.and_then(crate::ui::Server::next_job) {
            match crate::ui::serve_job(client, job) {
                Some(job) if job.ask == crate::ui::Ask::Stop => return Ok((Ending::Ui(job), None)),
                Some(job) => return Ok((Ending::Detached(Some(job)), None)),
                None => {}
            }
        }
        if let Some(signal) = w.interrupts.received() {
            return Ok((Ending::Signal(signal), None));
        }
        if w.enter.load(Ordering::SeqCst) {
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
                    "JVM {} ended before its profile could be taken (killed or crashed?): {e}; \
                     nothing was written",
                    w.pid
                ))
            }
        }
    }
}

/// Says at once which roots match no loaded method, with near names; profiling goes on, since
/// their classes may load later. Returns the unmatched patterns.
fn warn_unmatched(client: &mut Client, flag: &str) -> Vec<String> {
    let Ok(status) = status(client) else {
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

/// The flag naming the session's patterns.
fn pattern_flag(options: &AgentOptions) -> &'static str {
    if options.region.is_empty() {
        "--root"
    } else {
        "--region"
    }
}

/// Instruments the session's code and starts collecting; returns the patterns that match no
/// loaded method yet.
fn start(client: &mut Client, options: &AgentOptions) -> Result<Vec<String>, String> {
    let instrument = Request::Instrument(options.clone());
    // Methods the engine could not patch are reported, and the rest is profiled anyway; a
    // session owned by another tool is not ours to profile.
    let instrumenting = crate::progress::spinner("instrumenting");
    let instrumented = client.request(&instrument);
    drop(instrumenting);
    match instrumented.map_err(|e| e.to_string())? {
        Response::Ok => {}
        Response::Error { message } if control::is_refusal(&message) => return Err(message),
        Response::Error { message } => eprintln!("ferrofluid: agent: {message}"),
        other => return Err(format!("unexpected agent reply {other:?}")),
    }
    let unmatched = if options.roots.is_empty() && options.region.is_empty() {
        Vec::new()
    } else {
        warn_unmatched(client, pattern_flag(options))
    };
    expect_ok(client, &Request::Start)?;
    Ok(unmatched)
}

/// What the session profiles, as its messages name it.
fn what(options: &AgentOptions) -> String {
    if !options.region.is_empty() {
        let region: Vec<String> = options.region.iter().map(ToString::to_string).collect();
        format!("the region {}", region.join(", "))
    } else if options.roots.is_empty() {
        "the whole program".to_owned()
    } else {
        let roots: Vec<String> = options.roots.iter().map(ToString::to_string).collect();
        roots.join(", ")
    }
}

/// Set when Enter is pressed on the terminal, if the session waits for it.
fn watch_enter(options: &AgentOptions) -> Arc<AtomicBool> {
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
    enter
}

/// The warm-up, if any, then collecting until the session's end.
fn run_until_end(
    client: &mut Client,
    options: &AgentOptions,
    warmup: Option<Duration>,
    w: &Waiting<'_>,
    push: Option<&mut PushSession>,
) -> Result<(Ending, Option<serde_json::Value>), String> {
    let what = what(options);
    if let Some(warmup) = warmup {
        eprintln!(
            "ferrofluid: warming up {what} for {warmup:?} (what is collected meanwhile is discarded)"
        );
        let (ending, exited) = collect(client, Some(Instant::now() + warmup), w)?;
        if !matches!(ending, Ending::Elapsed) {
            return Ok((ending, exited));
        }
        expect_ok(client, &Request::Reset)?;
    }
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
            eprintln!("ferrofluid: profiling {what} until Ctrl-C, SIGTERM or the JVM's exit");
            None
        }
    };
    crate::push::collect(
        push,
        client,
        deadline,
        |client, until| collect(client, until, w),
        |(ending, _)| match ending {
            Ending::Elapsed => crate::push::Wait::Elapsed,
            Ending::Detached(_) => crate::push::Wait::Detach,
            _ => crate::push::Wait::Other,
        },
    )
}

/// Instruments the call subgraph, collects for `--duration`, until Enter (on a terminal), a
/// signal or the JVM's exit, and returns the profile; unless the JVM exited, the agent is then
/// de-instrumented and detached, leaving the JVM as it was.
pub(super) fn profile_session(
    client: &mut Client,
    options: &AgentOptions,
    warmup: Option<Duration>,
    pid: u32,
    ui: Option<&crate::ui::Server>,
    push: Option<&mut PushSession>,
) -> Result<Taken, Box<dyn std::error::Error>> {
    let interrupts = Interrupts::catch(Mode::Stop {
        again: format!(
            "interrupted again: quitting without a report; the agent in JVM {pid} removes its \
             probes by itself within {} s",
            control::ORPHAN_GRACE_SECS
        ),
    })?;
    let unmatched = start(client, options)?;
    let enter = watch_enter(options);
    let waiting = Waiting {
        interrupts: &interrupts,
        enter: &enter,
        pid,
        ui,
    };
    let (ending, exited) = run_until_end(client, options, warmup, &waiting, push)?;
    if let Ending::Detached(job) = ending {
        // Detach removes every probe and leaves the JVM as it was; nothing is reported.
        if let Err(e) = expect_ok(client, &Request::Detach) {
            if let Some(job) = job {
                job.answer(Err(e.clone()));
            }
            return Err(e.into());
        }
        return Ok(Taken {
            profile: Profile::default(),
            ending: Ending::Detached(job),
            never_matched: Vec::new(),
        });
    }
    if let Ending::Signal(signal) = ending {
        eprintln!(
            "ferrofluid: {}: stopping, writing the report and removing the probes",
            interrupt::name(signal)
        );
    }
    let (value, restore_failures, never_matched) = match exited {
        // Patterns unmatched at the start may have matched later: the threads say whether.
        Some(value) => {
            let ran = value["threads"].as_array().is_some_and(|t| !t.is_empty());
            (value, Vec::new(), if ran { Vec::new() } else { unmatched })
        }
        None => take(client, options, unmatched)?,
    };
    // The profile is in hand: no signal discards it now.
    interrupts.keep();
    Ok(Taken {
        profile: finish(value, restore_failures)?,
        ending,
        never_matched,
    })
}

/// What [`take`] gives: the profile, the classes that could not be restored, and the patterns
/// still unmatched.
type Took = (serde_json::Value, Vec<FailedClass>, Vec<String>);

/// Ends collection, removes the probes, takes the snapshot and leaves the agent dormant.
fn take(
    client: &mut Client,
    options: &AgentOptions,
    unmatched: Vec<String>,
) -> Result<Took, Box<dyn std::error::Error>> {
    let mut never_matched = unmatched;
    if !never_matched.is_empty() {
        if let Ok(status) = status(client) {
            for u in &status.unmatched_roots {
                eprintln!(
                    "ferrofluid: {} {} matched no method while profiling",
                    pattern_flag(options),
                    u.pattern
                );
            }
            never_matched = status
                .unmatched_roots
                .into_iter()
                .map(|u| u.pattern)
                .collect();
        }
    }
    let mut restore_failures = Vec::new();
    expect_ok(client, &Request::Stop)?;
    // Probes out first: the snapshot of a large profile takes seconds to build, send and
    // read, which the program would spend running its probes (the agent keeps what the
    // snapshot says of the ended session). A class that could not be restored must not
    // cost the profile; a JVM that began exiting meanwhile has nothing left to restore.
    match expect_ok(client, &Request::Deinstrument) {
        Err(e) if e.ends_with(" is exiting") => {}
        Err(e) => eprintln!("ferrofluid: warning: {e}"),
        // Restore failures: the agent's status lists them.
        Ok(()) => {
            if let Ok(status) = status(client) {
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
    Ok((value, restore_failures, never_matched))
}

/// The note on calls made before their callees were instrumented: what became of what they
/// called depends on what the mode measures.
pub(super) fn unrevealed_note(mode: &str, calls: u64) -> String {
    let became = match mode {
        "count" => "what they called is not counted, neither its calls nor its bytecodes",
        "alloc" => "what they called is not in the profile, nor are its allocations",
        _ => "what they called counts in their own time",
    };
    format!(
        "{calls} calls ran before their callees were instrumented (--reveal async); {became} \
         (--reveal sync counts every call, at a cost to the running program)"
    )
}

/// The profile of `value` with the classes that could not be restored added.
fn finish(
    value: serde_json::Value,
    restore_failures: Vec<FailedClass>,
) -> Result<Profile, Box<dyn std::error::Error>> {
    if let Some(n) = value.get("dropped_events").and_then(|d| d.as_u64()) {
        if n > 0 {
            eprintln!("ferrofluid: warning: {n} events were dropped; the profile is inexact");
        }
    }
    if let Some(n) = value.get("unrevealed_calls").and_then(|d| d.as_u64()) {
        if n > 0 {
            let mode = value.get("mode").and_then(|m| m.as_str()).unwrap_or("cpu");
            eprintln!("ferrofluid: note: {}", unrevealed_note(mode, n));
        }
    }
    let mut profile = Profile::from_json_slice(&serde_json::to_vec(&value)?)?;
    ferrofluid_profile::merge_failed(&mut profile.failed_classes, restore_failures);
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unrevealed_calls_note_speaks_of_what_the_mode_measures() {
        let cpu = unrevealed_note("cpu", 3);
        assert_eq!(
            cpu,
            "3 calls ran before their callees were instrumented (--reveal async); what they \
             called counts in their own time (--reveal sync counts every call, at a cost to the \
             running program)"
        );
        let count = unrevealed_note("count", 3);
        assert!(!count.contains("time"), "{count}");
        assert!(
            count.contains("what they called is not counted, neither its calls nor its bytecodes"),
            "{count}"
        );
        let alloc = unrevealed_note("alloc", 3);
        assert!(!alloc.contains("own time"), "{alloc}");
    }
}
