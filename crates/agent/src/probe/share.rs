//! The recording share: which root invocations begin a recording. Time is cut into windows of
//! [`PERIOD_NS`]; a root entered (outside every root) in the first `open` thousandths of a
//! window is recorded whole, every call under it counted; one entered in the rest is not
//! recorded at all, and its thread stays outside every root's extent, so that its probes return
//! at their first check while no other thread records. Each recorded invocation is complete:
//! calls per invocation stay exact, totals cover the recorded invocations (counted here,
//! beside every invocation seen).
//!
//! The probes measure the thread CPU time of a sample of the root invocations, recorded and
//! not, for the session's controller (`engine::cpu::share`), which sets `open` from the cost
//! it sees. Process-wide, as [`super::thread::SWITCHES`]: the probes are JVM natives without
//! user data.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use super::clock::now;

/// A window: the share's unit of time. Long against a recorded invocation: while one records,
/// every other thread's probes find their thread (only to return), so each window costs the
/// program its open share plus the time its last recordings take to end.
pub const PERIOD_NS: u64 = 2_000_000_000;

/// The least time between two measured invocations of one thread: at most a thousand CPU clock
/// reads (a system call each) per second and thread.
pub const MEASURE_EVERY_NS: u64 = 1_000_000;

/// `open`: every root entry begins a recording.
pub const ALL: u32 = 1000;

pub struct Share {
    /// Thousandths of each window in which root entries begin recordings.
    open: AtomicU32,
    /// The controller wants root invocations measured.
    measure: AtomicBool,
    /// Root invocations entered outside every root while collecting, and of those, recorded.
    seen: AtomicU64,
    recorded: AtomicU64,
    /// Measured invocations since the controller last took them: CPU ns and count, recorded
    /// ones and the others.
    recorded_cpu: AtomicU64,
    recorded_n: AtomicU64,
    skipped_cpu: AtomicU64,
    skipped_n: AtomicU64,
}

// Process-wide: the probes that read it are JVM natives without user data.
pub static SHARE: Share = Share {
    open: AtomicU32::new(ALL),
    measure: AtomicBool::new(false),
    seen: AtomicU64::new(0),
    recorded: AtomicU64::new(0),
    recorded_cpu: AtomicU64::new(0),
    recorded_n: AtomicU64::new(0),
    skipped_cpu: AtomicU64::new(0),
    skipped_n: AtomicU64::new(0),
};

/// What the probes measured since the last [`take`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Measured {
    pub recorded_cpu_ns: u64,
    pub recorded: u64,
    pub skipped_cpu_ns: u64,
    pub skipped: u64,
}

/// Whether the window open at time `t` (ns) begins recordings, with `open` thousandths.
#[inline]
pub fn admits(open: u32, t: u64) -> bool {
    open >= ALL || (t % PERIOD_NS) * u64::from(ALL) < u64::from(open) * PERIOD_NS
}

/// A root is entered outside every root while collecting: whether it begins a recording.
#[inline]
pub fn admit() -> bool {
    let open = SHARE.open.load(Ordering::Relaxed);
    let admitted = admits(open, now());
    SHARE.seen.fetch_add(1, Ordering::Relaxed);
    if admitted {
        SHARE.recorded.fetch_add(1, Ordering::Relaxed);
    }
    admitted
}

/// A measured root invocation (recorded or not) took `cpu_ns` of its thread's CPU time.
pub fn measured(recorded: bool, cpu_ns: u64) {
    let (sum, n) = if recorded {
        (&SHARE.recorded_cpu, &SHARE.recorded_n)
    } else {
        (&SHARE.skipped_cpu, &SHARE.skipped_n)
    };
    sum.fetch_add(cpu_ns, Ordering::Relaxed);
    n.fetch_add(1, Ordering::Relaxed);
}

/// Sets the share of each window that begins recordings, thousandths (clamped to 0-1000).
pub fn set_open(open: u32) {
    SHARE.open.store(open.min(ALL), Ordering::Relaxed);
}

/// Whether root invocations are to be measured.
#[inline]
pub fn measuring() -> bool {
    SHARE.measure.load(Ordering::Relaxed)
}

/// Starts or stops measuring root invocations.
pub fn set_measuring(on: bool) {
    SHARE.measure.store(on, Ordering::Relaxed);
}

/// The measurements since the last call, for the controller.
pub fn take() -> Measured {
    Measured {
        recorded_cpu_ns: SHARE.recorded_cpu.swap(0, Ordering::Relaxed),
        recorded: SHARE.recorded_n.swap(0, Ordering::Relaxed),
        skipped_cpu_ns: SHARE.skipped_cpu.swap(0, Ordering::Relaxed),
        skipped: SHARE.skipped_n.swap(0, Ordering::Relaxed),
    }
}

/// Root invocations seen and recorded since the last [`reset`].
pub fn counts() -> (u64, u64) {
    (
        SHARE.seen.load(Ordering::Relaxed),
        SHARE.recorded.load(Ordering::Relaxed),
    )
}

/// A recording starts: every root entry records until the controller says otherwise, and the
/// counts start from zero.
pub fn reset() {
    set_open(ALL);
    set_measuring(false);
    SHARE.seen.store(0, Ordering::Relaxed);
    SHARE.recorded.store(0, Ordering::Relaxed);
    take();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_opens_for_its_share_at_its_start() {
        let p = PERIOD_NS;
        assert!(admits(ALL, 123));
        assert!(!admits(0, 0));
        assert!(admits(250, 0));
        assert!(admits(250, p / 4 - 1));
        assert!(!admits(250, p / 4));
        assert!(!admits(250, p - 1));
        assert!(admits(250, 7 * p + 1));
        assert!(!admits(250, 7 * p + p / 2));
    }
}
