//! Ctrl-C (SIGINT), SIGTERM and SIGHUP while profiling: ferrofluid never dies of them halfway,
//! with a JVM left instrumented or a report lost.
//!
//! - `attach`: the first signal ends profiling the normal way (snapshot, report, probes removed,
//!   detach); a second one quits at once, and the agent then removes its probes by itself once
//!   it sees its tool gone.
//! - `run`: the JVM is ferrofluid's child and must end first, so that the agent writes the
//!   profile at its exit. A signal the terminal sent to the whole process group has reached the
//!   JVM already; one sent to ferrofluid alone (`kill PID`) is passed on to the JVM.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::exfiltrator::origin::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::Cause;

/// What to do with the signals caught.
pub enum Mode {
    /// The first signal asks to stop; a second one exits at once with this message.
    Stop { again: String },
    /// Signals sent to ferrofluid alone go on to this process (0: none yet).
    Forward(Arc<AtomicU32>),
}

/// The signals caught since [`Interrupts::catch`].
pub struct Interrupts {
    first: Arc<AtomicI32>,
}

impl Interrupts {
    /// Catches SIGINT, SIGTERM and SIGHUP from now on, for the rest of the process.
    pub fn catch(mode: Mode) -> std::io::Result<Interrupts> {
        let mut signals = SignalsInfo::<WithOrigin>::new([SIGINT, SIGTERM, SIGHUP])?;
        let first = Arc::new(AtomicI32::new(0));
        let seen = Arc::clone(&first);
        std::thread::Builder::new()
            .name("ferrofluid-signals".into())
            .spawn(move || {
                for origin in signals.forever() {
                    let again = seen
                        .compare_exchange(0, origin.signal, Ordering::SeqCst, Ordering::SeqCst)
                        .is_err();
                    match &mode {
                        Mode::Stop { again: message } if again => {
                            eprintln!("ferrofluid: {message}");
                            std::process::exit(128 + origin.signal);
                        }
                        Mode::Stop { .. } => {}
                        Mode::Forward(child) => {
                            let child = child.load(Ordering::SeqCst);
                            let from_child = origin.process.is_some_and(|p| p.pid as u32 == child);
                            // The terminal's signals (Ctrl-C, hangup) come from the kernel to the
                            // whole foreground group: the JVM has its own copy.
                            if child != 0 && matches!(origin.cause, Cause::Sent(_)) && !from_child {
                                sys::kill(child, origin.signal);
                            }
                        }
                    }
                }
            })?;
        Ok(Interrupts { first })
    }

    /// The first signal caught, if any.
    pub fn received(&self) -> Option<i32> {
        match self.first.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
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
