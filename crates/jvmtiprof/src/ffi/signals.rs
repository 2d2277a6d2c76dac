//! The profiling signal handler and the running samplers it serves.
//!
//! A sampler publishes its shared state in one of two slots (CPU, wall clock); the handler finds
//! it there by the signal's cookie (per-thread timers) or number (signals from the wall-clock
//! thread), counts itself in flight while it uses it, and calls the sampler's safe signal-side code.
//! Stopping a sampler empties its slot and waits until no handler is in flight before the state can
//! go. A signal that is not one of ours goes to the handler we replaced, as the kernel would have
//! delivered it.

use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrofluid_jvmti::ffi_guard;

use crate::ffi::os;
use crate::ffi::walk::UContext;
use crate::sampler::{self, Shared};

/// The `si_value` of our timers' signals: a tag and the slot.
const COOKIE: usize = 0x6a76_6d74_7066_0000;

/// `si_code`s (`<asm-generic/siginfo.h>`).
const SI_TIMER: i32 = -2;
const SI_TKILL: i32 = -6;
/// Sent by the kernel itself (`kill` by the kernel), not by a timer or an event.
const SI_KERNEL: i32 = 0x80;
/// The `si_code` of a perf event's signal when its event limit is reached.
const POLL_HUP: i32 = 6;

/// The start of `siginfo_t` on Linux: three ints, padding to 8 bytes on 64-bit targets, then
/// the union, whose timer variant is `{ int tid; int overrun; sigval value; }` and whose kill
/// variant starts `{ pid_t pid; uid_t uid; }`.
#[repr(C)]
struct SigInfoHead {
    signo: c_int,
    errno: c_int,
    code: c_int,
    #[cfg(target_pointer_width = "64")]
    _pad: c_int,
    first: c_int,
    second: c_int,
    value: usize,
}

struct Active {
    shared: AtomicPtr<Shared>,
    in_flight: AtomicUsize,
    signal: AtomicI32,
}

static ACTIVE: [Active; 2] = [
    Active {
        shared: AtomicPtr::new(std::ptr::null_mut()),
        in_flight: AtomicUsize::new(0),
        signal: AtomicI32::new(0),
    },
    Active {
        shared: AtomicPtr::new(std::ptr::null_mut()),
        in_flight: AtomicUsize::new(0),
        signal: AtomicI32::new(0),
    },
];

/// The cookie of slot `slot`'s timers.
pub(crate) fn cookie(slot: usize) -> usize {
    COOKIE | slot
}

/// Makes `shared` the running sampler of `slot`, served on `signal` (signals from this process
/// on it are taken for the sampler's until [`forget_signal`]). Fails if the slot is taken.
pub(crate) fn publish(slot: usize, signal: i32, shared: Arc<Shared>) -> bool {
    let active = &ACTIVE[slot];
    let raw = Arc::into_raw(shared) as *mut Shared;
    active.signal.store(signal, Ordering::SeqCst);
    if active
        .shared
        .compare_exchange(
            std::ptr::null_mut(),
            raw,
            Ordering::SeqCst,
            Ordering::SeqCst,
        )
        .is_err()
    {
        // SAFETY: `raw` came from Arc::into_raw just above and was not published.
        drop(unsafe { Arc::from_raw(raw) });
        return false;
    }
    true
}

/// Empties `slot` and waits (up to `timeout`) until no handler uses its sampler any more.
/// Returns false if handlers were still in flight at the timeout (the state is then leaked
/// rather than freed under them).
pub(crate) fn retract(slot: usize, timeout: Duration) -> bool {
    let active = &ACTIVE[slot];
    let raw = active.shared.swap(std::ptr::null_mut(), Ordering::SeqCst);
    if raw.is_null() {
        return true;
    }
    let deadline = os::monotonic_ns() + timeout.as_nanos() as u64;
    while active.in_flight.load(Ordering::SeqCst) != 0 {
        if os::monotonic_ns() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    // SAFETY: `raw` came from Arc::into_raw in `publish`; it is out of the slot, and every
    // handler that loaded it has left (a handler counts itself in flight before loading).
    drop(unsafe { Arc::from_raw(raw) });
    true
}

/// Signals on `slot`'s signal are no longer taken for a sampler's (once its handler is gone).
pub(crate) fn forget_signal(slot: usize) {
    ACTIVE[slot].signal.store(0, Ordering::SeqCst);
}

/// The signal of `slot`'s sampler (0: none).
pub(crate) fn slot_signal(slot: usize) -> i32 {
    ACTIVE[slot].signal.load(Ordering::SeqCst)
}

/// Whether a sampler runs in `slot`.
pub(crate) fn is_active(slot: usize) -> bool {
    !ACTIVE[slot].shared.load(Ordering::SeqCst).is_null()
}

/// The handlers we replaced, per signal number, and whether ours is installed.
struct Previous {
    action: UnsafeCell<libc::sigaction>,
    ours: AtomicBool,
}

// SAFETY: `action` is written only while our handler is not installed for its signal (before
// `sigaction` installs ours, a full barrier), and read by our handler and `uninstall` after.
unsafe impl Sync for Previous {}

const NSIG: usize = 65;

static PREVIOUS: [Previous; NSIG] = [const {
    Previous {
        // SAFETY: an all-zero sigaction is SIG_DFL with an empty mask.
        action: UnsafeCell::new(unsafe { std::mem::zeroed() }),
        ours: AtomicBool::new(false),
    }
}; NSIG];

fn current_action(signal: i32) -> Option<libc::sigaction> {
    // SAFETY: an all-zero sigaction is a valid out-value.
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a query only (null new action).
    (unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) } == 0).then_some(current)
}

fn is_ours(action: &libc::sigaction) -> bool {
    action.sa_flags & libc::SA_SIGINFO != 0
        && action.sa_sigaction == on_signal as *const () as usize
}

/// Whether `signal` is free for a sampler: its handler is the default, ignored, or ours.
pub(crate) fn is_free(signal: i32) -> bool {
    match current_action(signal) {
        Some(a) => {
            a.sa_sigaction == libc::SIG_DFL || a.sa_sigaction == libc::SIG_IGN || is_ours(&a)
        }
        None => false,
    }
}

/// Installs the profiling handler for `signal` (idempotent).
pub(crate) fn install(signal: i32) -> std::io::Result<()> {
    let index = signal as usize;
    if index == 0 || index >= NSIG {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    let current = current_action(signal).ok_or_else(std::io::Error::last_os_error)?;
    if is_ours(&current) {
        PREVIOUS[index].ours.store(true, Ordering::SeqCst);
        return Ok(());
    }
    // SAFETY: our handler is not installed for `signal`: nothing reads the slot now.
    unsafe { *PREVIOUS[index].action.get() = current };
    // SAFETY: an all-zero sigaction, then filled in.
    let mut ours: libc::sigaction = unsafe { std::mem::zeroed() };
    ours.sa_sigaction = on_signal as *const () as usize;
    ours.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // Block every signal but the synchronous fault signals while the handler runs, so that no
    // other handler (the other sampler's included) runs on top of a walk.
    // SAFETY: sigfillset/sigdelset on our own set.
    unsafe {
        libc::sigfillset(&mut ours.sa_mask);
        for s in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGILL,
            libc::SIGFPE,
            libc::SIGTRAP,
        ] {
            libc::sigdelset(&mut ours.sa_mask, s);
        }
    }
    // SAFETY: a valid sigaction for a valid signal number.
    if unsafe { libc::sigaction(signal, &ours, std::ptr::null_mut()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    PREVIOUS[index].ours.store(true, Ordering::SeqCst);
    Ok(())
}

/// Puts back the handler ours replaced for `signal`, if ours is still the installed one (else
/// ours stays and passes every signal that is not ours on). Signals of ours still pending are
/// discarded first: the default action of `SIGPROF` would end the process. A default action
/// replaced is not put back: the signal stays ignored, because a timer or perf event of ours
/// may still deliver one late (a thread arming its event as the sampler stopped), and that
/// would end the process.
pub(crate) fn uninstall(signal: i32) -> bool {
    let index = signal as usize;
    if index == 0 || index >= NSIG || !PREVIOUS[index].ours.load(Ordering::SeqCst) {
        return true;
    }
    match current_action(signal) {
        Some(current) if is_ours(&current) => {}
        _ => return false,
    }
    // SAFETY: an all-zero sigaction is SIG_DFL; set to SIG_IGN, which discards pending signals.
    let mut ignore: libc::sigaction = unsafe { std::mem::zeroed() };
    ignore.sa_sigaction = libc::SIG_IGN;
    // SAFETY: written before our handler was installed (see `Previous`).
    let was_default = unsafe { (*PREVIOUS[index].action.get()).sa_sigaction } == libc::SIG_DFL;
    // SAFETY: valid sigactions; `PREVIOUS` holds what `install` read.
    let restored = unsafe {
        libc::sigaction(signal, &ignore, std::ptr::null_mut()) == 0
            && (was_default
                || libc::sigaction(signal, PREVIOUS[index].action.get(), std::ptr::null_mut()) == 0)
    };
    if restored {
        PREVIOUS[index].ours.store(false, Ordering::SeqCst);
    }
    restored
}

/// Hands a signal that is not ours to the handler we replaced.
///
/// # Safety
/// The arguments are those the kernel passed to our handler.
unsafe fn chain(signal: c_int, info: *mut libc::siginfo_t, uc: *mut c_void) {
    let index = signal as usize;
    if index >= NSIG {
        return;
    }
    // SAFETY: written before our handler was installed (see `Previous`).
    let previous = unsafe { &*PREVIOUS[index].action.get() };
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_IGN {
        return;
    }
    if handler == libc::SIG_DFL {
        // SAFETY: the kernel's siginfo for an SA_SIGINFO handler; only the head is read.
        let code = unsafe { (*(info as *const SigInfoHead)).code };
        if code > 0 && code != SI_KERNEL {
            // A timer's or an event's (`POLL_*`), not one somebody sent: a late one of a
            // sampler of ours that stopped. Its default action would end the process.
            return;
        }
        // The default action of the profiling signals ends the process: do what the kernel
        // would have done without us for a signal sent on purpose.
        // SAFETY: reset to the default and send the signal again.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
        return;
    }
    if previous.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the replaced handler, with the arguments the kernel gave us.
        let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
            unsafe { std::mem::transmute(handler) };
        f(signal, info, uc);
    } else {
        // SAFETY: as above, a one-argument handler.
        let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(handler) };
        f(signal);
    }
}

extern "C" fn on_signal(signal: c_int, info: *mut libc::siginfo_t, uc: *mut c_void) {
    let saved = os::errno();
    ffi_guard("profiling signal", (), || {
        if info.is_null() {
            return;
        }
        // SAFETY: the kernel's siginfo for an SA_SIGINFO handler; only the head is read.
        let head = unsafe { &*(info as *const SigInfoHead) };
        let (slot, overrun) =
            if head.code == POLL_HUP && ACTIVE[0].signal.load(Ordering::Relaxed) == signal {
                // A task-clock perf event of the CPU sampler (si_fd in the low half of the word):
                // enable it again for the next interval.
                let fd = head.value as u32 as i32;
                let ours = crate::threads::registry()
                    .slot(os::gettid())
                    .is_some_and(|s| s.perf_fd.load(Ordering::Relaxed) == fd + 1);
                if ours {
                    os::perf_rearm(fd);
                }
                (Some(0), 0)
            } else if head.code == SI_TIMER && head.value & !1 == COOKIE {
                (Some(head.value & 1), head.second.max(0) as u32)
            } else if let Some(slot) = (head.code == SI_TKILL && head.first == os::getpid())
                .then(|| (0..2).find(|&s| ACTIVE[s].signal.load(Ordering::Relaxed) == signal))
                .flatten()
            {
                (Some(slot), 0)
            } else {
                // SAFETY: the kernel's arguments to this handler.
                unsafe { chain(signal, info, uc) };
                return;
            };
        // One of ours; once its sampler has stopped, there is nothing to do.
        let Some(slot) = slot else {
            return;
        };
        let active = &ACTIVE[slot];
        active.in_flight.fetch_add(1, Ordering::SeqCst);
        let raw = active.shared.load(Ordering::SeqCst);
        if !raw.is_null() {
            // SAFETY: published by `publish` and not freed while we are counted in flight.
            let shared = unsafe { &*raw };
            sampler::on_signal(
                shared,
                sampler::SignalEvent {
                    tid: os::gettid(),
                    ucontext: UContext(uc),
                    overrun,
                },
            );
        }
        active.in_flight.fetch_sub(1, Ordering::SeqCst);
    });
    os::set_errno(saved);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foreign_signal_goes_to_the_replaced_handler() {
        static SEEN: AtomicUsize = AtomicUsize::new(0);
        extern "C" fn theirs(_: c_int) {
            SEEN.fetch_add(1, Ordering::SeqCst);
        }
        let signal = libc::SIGRTMIN() + 10;
        // SAFETY: a plain handler for an unused real-time signal.
        unsafe { libc::signal(signal, theirs as *const () as usize) };
        assert!(!is_free(signal));
        install(signal).unwrap();
        install(signal).unwrap();
        // SAFETY: sends a signal to this process; the handler above counts it.
        unsafe { libc::raise(signal) };
        assert_eq!(SEEN.load(Ordering::SeqCst), 1, "passed on");
        // From this process but on a signal no sampler uses: passed on too.
        assert!(os::signal_thread(os::gettid(), signal));
        assert_eq!(SEEN.load(Ordering::SeqCst), 2);
        assert!(uninstall(signal));
        assert_eq!(
            current_action(signal).unwrap().sa_sigaction,
            theirs as *const () as usize
        );
        // SAFETY: back to the default for the test process.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
        assert!(is_free(signal));
    }

    #[test]
    fn a_default_action_replaced_stays_ignored() {
        let signal = libc::SIGRTMIN() + 11;
        // SAFETY: the default action for an unused real-time signal.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
        install(signal).unwrap();
        assert!(uninstall(signal));
        // A late signal of a stopped sampler's timer is dropped, not the end of the process.
        assert_eq!(current_action(signal).unwrap().sa_sigaction, libc::SIG_IGN);
        // SAFETY: the signal is ignored: raising it does nothing.
        unsafe { libc::raise(signal) };
        assert!(is_free(signal));
        // Installed again over SIG_IGN, uninstalled back to it.
        install(signal).unwrap();
        assert!(uninstall(signal));
        assert_eq!(current_action(signal).unwrap().sa_sigaction, libc::SIG_IGN);
        // SAFETY: back to the default for the test process.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
}
