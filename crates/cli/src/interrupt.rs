//! Ctrl-C (SIGINT), SIGTERM and SIGHUP while profiling: ferrofluid never dies of them halfway,
//! with a JVM left instrumented or a report lost.
//!
//! - `attach`: the first signal ends profiling the normal way (snapshot, report, probes removed,
//!   detach). Signals within [`REPEAT_WINDOW`] of it are the same request sent twice: coreutils'
//!   `timeout` signals ferrofluid and then its whole process group, systemd may follow SIGTERM
//!   with SIGHUP, a user presses Ctrl-C twice. Once the profile is in hand ([`Interrupts::keep`])
//!   no signal discards it: it is written, then ferrofluid ends. Only a signal later than the
//!   window, before that point, quits at once; the agent then removes its probes by itself once
//!   it sees its tool gone.
//! - `run`: the JVM is ferrofluid's child and must end first, so that the agent writes the
//!   profile at its exit. A signal the terminal sent to the whole process group has reached the
//!   JVM already; one sent to ferrofluid alone (`kill PID`) is passed on to the JVM, unless it
//!   repeats, within the window, one passed on already.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::exfiltrator::origin::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::{Cause, Origin};

/// How long after the first signal another one is taken as the same request.
pub const REPEAT_WINDOW: Duration = Duration::from_secs(1);

/// What to do with the signals caught.
pub enum Mode {
    /// The first signal asks to stop; a deliberate later one exits at once with this message.
    Stop { again: String },
    /// Signals sent to ferrofluid alone go on to this process (0: none yet).
    Forward(Arc<AtomicU32>),
}

/// What the signals caught so far say.
struct Shared {
    /// The first signal caught (0: none yet).
    first: AtomicI32,
    /// Set once the profile is in hand: no signal may end the process before it is written.
    keep: AtomicBool,
}

/// The signals caught since [`Interrupts::catch`].
pub struct Interrupts {
    shared: Arc<Shared>,
}

/// What one signal does, given what came before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// The first: ask the command to stop (or pass it on to the child).
    First,
    /// A repeat within the window: the same request, nothing more to do.
    Repeat,
    /// A later one while the profile is being written: said, and the report is kept.
    Kept,
    /// A later one, before the profile is in hand: quit at once.
    Quit,
}

/// The action of a signal arriving `since_first` after the first one (`None`: it is the
/// first), the profile being in hand or not.
fn action(since_first: Option<Duration>, keep: bool) -> Action {
    match since_first {
        None => Action::First,
        Some(d) if d < REPEAT_WINDOW => Action::Repeat,
        Some(_) if keep => Action::Kept,
        Some(_) => Action::Quit,
    }
}

impl Interrupts {
    /// Catches SIGINT, SIGTERM and SIGHUP from now on, for the rest of the process.
    pub fn catch(mode: Mode) -> std::io::Result<Interrupts> {
        let mut signals = SignalsInfo::<WithOrigin>::new([SIGINT, SIGTERM, SIGHUP])?;
        let shared = Arc::new(Shared {
            first: AtomicI32::new(0),
            keep: AtomicBool::new(false),
        });
        let seen = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("ferrofluid-signals".into())
            .spawn(move || {
                // For `Stop`: when the first signal came; for `Forward`: the last one passed on.
                let mut first_at: Option<Instant> = None;
                for origin in signals.forever() {
                    let now = Instant::now();
                    let keep = seen.keep.load(Ordering::SeqCst);
                    let act = action(first_at.map(|t| now - t), keep);
                    match (&mode, act) {
                        (_, Action::First) => {
                            seen.first.store(origin.signal, Ordering::SeqCst);
                            first_at = Some(now);
                            if let Mode::Forward(child) = &mode {
                                forward(child, &origin);
                            }
                        }
                        (Mode::Stop { .. }, Action::Repeat) => {}
                        (Mode::Stop { .. }, Action::Kept) => eprintln!(
                            "ferrofluid: {}: the report is being written and is kept; ferrofluid \
                             ends once it is written",
                            name(origin.signal)
                        ),
                        (Mode::Stop { again }, Action::Quit) => {
                            eprintln!("ferrofluid: {again}");
                            std::process::exit(128 + origin.signal);
                        }
                        (Mode::Forward(_), Action::Repeat) => {}
                        (Mode::Forward(child), Action::Kept | Action::Quit) => {
                            first_at = Some(now);
                            forward(child, &origin);
                        }
                    }
                }
            })?;
        Ok(Interrupts { shared })
    }

    /// The first signal caught, if any.
    pub fn received(&self) -> Option<i32> {
        match self.shared.first.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// The profile is in hand: from now on no signal ends the process before it returns.
    /// Called once the agent handed the profile over; the report is written next.
    pub fn keep(&self) {
        self.shared.keep.store(true, Ordering::SeqCst);
    }
}

/// Passes a signal sent to ferrofluid alone on to the child, if it has started.
fn forward(child: &AtomicU32, origin: &Origin) {
    let child = child.load(Ordering::SeqCst);
    let from_child = origin.process.is_some_and(|p| p.pid as u32 == child);
    // The terminal's signals (Ctrl-C, hangup) come from the kernel to the whole foreground
    // group: the JVM has its own copy.
    if child != 0 && matches!(origin.cause, Cause::Sent(_)) && !from_child {
        sys::kill(child, origin.signal);
    }
}

/// The name of a signal caught here.
pub fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

#[allow(unsafe_code)]
mod sys {
    /// Sends `signal` to process `pid`; a process already gone is no error worth reporting.
    pub fn kill(pid: u32, signal: i32) {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return;
        };
        // SAFETY: kill(2) takes two integers and touches no memory of ours.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_within_the_window_are_one_request_and_a_kept_report_is_never_discarded() {
        let ms = Duration::from_millis;
        assert_eq!(action(None, false), Action::First);
        assert_eq!(action(None, true), Action::First);
        // coreutils' `timeout`: the child, then the group, within a millisecond.
        assert_eq!(action(Some(ms(0)), false), Action::Repeat);
        assert_eq!(action(Some(ms(999)), false), Action::Repeat);
        assert_eq!(action(Some(ms(999)), true), Action::Repeat);
        assert_eq!(action(Some(ms(1000)), false), Action::Quit);
        assert_eq!(action(Some(ms(1000)), true), Action::Kept);
        assert_eq!(action(Some(ms(60_000)), true), Action::Kept);
    }
}
