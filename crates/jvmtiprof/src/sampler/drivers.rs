//! What makes the signals come: per-thread CPU timers (CPU clock) and the timer thread that
//! signals threads in turn (wall clock), plus the periodic scan of `/proc/self/task` that finds
//! threads the JVM does not announce (its own GC and compiler threads, native threads).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::ffi::os::{self, TimerId};
use crate::ffi::signals;
use crate::ring::KIND_REPEAT;
use crate::threads::{self, ThreadKey, FLAG_NOT_JAVA};

use super::handler::{
    meta, FIELDS, F_ENV, F_KEY, F_META, F_TIME, F_USER, F_WEIGHT, S_NOT_WALKED, T_IDLE,
};
use super::{Clock, Shared, Threads};

/// How CPU timers are made for the running CPU sampler.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimerSpec {
    /// Task-clock perf events (else POSIX CPU timers).
    pub perf: bool,
    pub signal: i32,
    pub cookie: usize,
    pub interval: Duration,
    pub threads: Threads,
}

/// Gives thread `key` a CPU timer (unless it has one). Not for a thread known not to be a Java
/// thread when only Java threads are sampled.
pub(crate) fn arm(spec: &TimerSpec, key: ThreadKey) -> bool {
    let Some(slot) = threads::registry().slot(key.tid()) else {
        return false;
    };
    if slot.key() != Some(key)
        || slot.timer.load(Ordering::Relaxed) != 0
        || slot.perf_fd.load(Ordering::Relaxed) != 0
    {
        return false;
    }
    if spec.threads == Threads::Java && slot.flags() & FLAG_NOT_JAVA != 0 {
        return false;
    }
    if spec.perf {
        return match os::open_task_clock(key.tid(), spec.signal, spec.interval) {
            Ok(fd) => {
                if slot
                    .perf_fd
                    .compare_exchange(0, fd + 1, Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
                {
                    os::close_fd(fd);
                    return false;
                }
                true
            }
            Err(e) => {
                if e.raw_os_error() != Some(libc::ESRCH) {
                    log::debug!("perf_event_open for tid {}: {e}", key.tid());
                }
                false
            }
        };
    }
    match os::create_thread_cpu_timer(key.tid(), spec.signal, spec.cookie, spec.interval) {
        Ok(timer) => {
            if slot
                .timer
                .compare_exchange(0, timer.0 + 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                os::delete_timer(timer);
                return false;
            }
            true
        }
        // The thread ended meanwhile.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => false,
        Err(e) => {
            log::debug!("timer_create for tid {}: {e}", key.tid());
            false
        }
    }
}

/// Deletes thread `key`'s CPU timer or perf event, if any (the thread has ended, or is the
/// caller, or is no longer sampled).
pub(crate) fn disarm(key: ThreadKey) {
    if let Some(fd) = take(key) {
        os::close_fd(fd);
    }
}

/// Deletes thread `key`'s CPU timer; returns its perf event descriptor for the caller to close.
fn take(key: ThreadKey) -> Option<i32> {
    let slot = threads::registry().slot(key.tid())?;
    let t = slot.timer.swap(0, Ordering::AcqRel);
    if t != 0 {
        os::delete_timer(TimerId(t - 1));
    }
    let fd = slot.perf_fd.swap(0, Ordering::AcqRel);
    (fd != 0).then_some(fd - 1)
}

/// Deletes every CPU timer; returns the perf event descriptors, to be closed once no signal
/// handler can be using them.
pub(crate) fn disarm_all() -> Vec<i32> {
    threads::registry()
        .keys()
        .into_iter()
        .filter_map(take)
        .collect()
}

/// The CPU sampler's housekeeping thread: every `rescan`, finds new threads (and gives them
/// timers), forgets ended ones, replaces timers whose thread is gone (a reused tid), and drops the
/// timers of non-Java threads when only Java threads are sampled.
pub(crate) fn cpu_loop(spec: TimerSpec, rescan: Duration, stop: Arc<AtomicBool>) {
    let registry = threads::registry();
    while !sleep_unless(&stop, rescan) {
        let Ok(scan) = registry.scan_process() else {
            continue;
        };
        for key in &scan.removed {
            disarm(*key);
        }
        for key in registry.keys() {
            let Some(slot) = registry.slot(key.tid()) else {
                continue;
            };
            let t = slot.timer.load(Ordering::Relaxed);
            let fd = slot.perf_fd.load(Ordering::Relaxed);
            if t != 0 || fd != 0 {
                let dead = if fd != 0 {
                    !os::perf_alive(fd - 1)
                } else {
                    !os::timer_armed(TimerId(t - 1))
                };
                let unwanted = spec.threads == Threads::Java && slot.flags() & FLAG_NOT_JAVA != 0;
                if dead || unwanted {
                    disarm(key);
                }
                if !dead {
                    continue;
                }
            }
            arm(&spec, key);
        }
    }
}

/// Sleeps `d` in short steps; true as soon as `stop` is set.
fn sleep_unless(stop: &AtomicBool, d: Duration) -> bool {
    let step = Duration::from_millis(20);
    let mut left = d;
    while !left.is_zero() {
        if stop.load(Ordering::Acquire) {
            return true;
        }
        let s = left.min(step);
        os::sleep(s);
        left -= s;
    }
    stop.load(Ordering::Acquire)
}

/// A thread that used at most this much CPU since its last wall-clock tick did not run.
const IDLE_CPU_NS: u64 = 10_000;

/// Threads signalled per tick at most: the timer thread's work per tick is bounded, and a
/// cycle through all threads is spread over the interval.
pub(crate) const WALL_BATCH: usize = 16;

/// The wall-clock timer thread: each interval, every selected thread once, in batches of
/// [`WALL_BATCH`] spread over the interval. A thread that used no CPU since its last tick is not
/// signalled: its stack cannot have changed, and a repeat record (its last stack again, with the
/// time since) stands for it.
pub(crate) fn wall_loop(shared: Arc<Shared>, signal: i32, rescan: Duration, stop: Arc<AtomicBool>) {
    let registry = threads::registry();
    let me = os::gettid();
    let interval = Duration::from_nanos(shared.interval_ns);
    let min_sleep = Duration::from_micros(100);
    let mut last_scan = 0u64;
    let mut list: Vec<ThreadKey> = Vec::new();
    loop {
        let cycle_start = os::monotonic_ns();
        if cycle_start.saturating_sub(last_scan) >= rescan.as_nanos() as u64 {
            let _ = registry.scan_process();
            last_scan = cycle_start;
        }
        list.clear();
        list.extend(registry.keys().into_iter().filter(|k| k.tid() != me));
        let batches = list.len().div_ceil(WALL_BATCH).max(1);
        for (i, batch) in list.chunks(WALL_BATCH).enumerate() {
            if stop.load(Ordering::Acquire) {
                return;
            }
            for &key in batch {
                tick(&shared, signal, key);
            }
            // Spread the batches over the interval.
            let due = cycle_start + shared.interval_ns * (i as u64 + 1) / batches as u64;
            let now = os::monotonic_ns();
            let wait = Duration::from_nanos(due.saturating_sub(now)).max(min_sleep);
            if sleep_unless(&stop, wait.min(interval)) {
                return;
            }
        }
        if list.is_empty() && sleep_unless(&stop, interval) {
            return;
        }
    }
}

/// One thread's wall-clock tick.
fn tick(shared: &Shared, signal: i32, key: ThreadKey) {
    let Some(slot) = threads::registry().slot(key.tid()) else {
        return;
    };
    if slot.key() != Some(key) {
        return;
    }
    let flags = slot.flags();
    match shared.threads {
        Threads::Java if flags & FLAG_NOT_JAVA != 0 => return,
        Threads::Marked if slot.word() == 0 => return,
        _ => {}
    }
    let Some(cpu) = os::thread_cpu_ns(key.tid()) else {
        return;
    };
    let last_cpu = slot.last_wall_cpu_ns.swap(cpu, Ordering::Relaxed);
    let sampled_before = slot.last_wall_ns.load(Ordering::Relaxed) != 0;
    // The signal handler sets `last_wall_cpu_ns` as it leaves, so that its own CPU time (and the
    // few µs of going back to sleep) do not count as the thread running.
    if sampled_before && cpu.saturating_sub(last_cpu) <= IDLE_CPU_NS {
        repeat(shared, key, slot);
    } else if os::signal_thread(key.tid(), signal) {
        shared.stats.signals_sent.fetch_add(1, Ordering::Relaxed);
    }
}

/// A repeat record: thread `key` did not run since its last sample.
fn repeat(shared: &Shared, key: ThreadKey, slot: &threads::Slot) {
    let now = os::monotonic_ns();
    let last = slot.last_wall_ns.swap(now, Ordering::Relaxed);
    let weight = if last == 0 || now <= last {
        shared.interval_ns
    } else {
        now - last
    };
    let Some(record) = shared.ring.reserve(1 + FIELDS) else {
        shared.stats.buffer_full.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let body = record.body();
    body[F_KEY].store(
        key.tid() as u64 | (key.generation() as u64) << 32,
        Ordering::Relaxed,
    );
    body[F_TIME].store(now, Ordering::Relaxed);
    body[F_WEIGHT].store(weight, Ordering::Relaxed);
    body[F_META].store(
        meta(Clock::Wall, T_IDLE, S_NOT_WALKED, None, 0),
        Ordering::Relaxed,
    );
    body[F_ENV].store(
        slot.jni_env.load(Ordering::Relaxed) as u64,
        Ordering::Relaxed,
    );
    body[F_USER].store(0, Ordering::Relaxed);
    body[F_USER + 1].store(0, Ordering::Relaxed);
    record.commit(KIND_REPEAT, 1 + FIELDS);
    shared.stats.repeats.fetch_add(1, Ordering::Relaxed);
}

/// The cookie of the CPU sampler's timers.
pub(crate) fn cpu_cookie() -> usize {
    signals::cookie(0)
}
