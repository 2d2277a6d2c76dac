//! The timing core: how much CPU and wall time each thread used, without signals.
//!
//! Any thread's CPU clock can be read from any thread of the process
//! ([`thread_cpu_time`]); the kernel's scheduler statistics add the time a thread waited for a
//! CPU ([`sched_stat`]). A [`Poller`] turns these into deltas: every interval, for each
//! registered thread, its [`Tick`]: CPU time, wall time, time waiting for a CPU, and the
//! interval's state (running, runnable but off the CPU, blocked). The wall-clock sampler uses the
//! same clocks to leave threads that did not run alone.
//!
//! ```
//! use std::time::Duration;
//! use jvmtiprof::timing::{Detail, Poller};
//!
//! let registry = jvmtiprof::threads::registry();
//! let me = registry.register_current().unwrap();
//! let mut poller = Poller::new(Detail::Scheduler);
//! poller.poll(&[me], |_| {}); // the first poll of a thread is its baseline
//! let start = jvmtiprof::timing::current_thread_cpu_time();
//! while jvmtiprof::timing::current_thread_cpu_time() < start + Duration::from_millis(20) {} // spin
//! let mut ticks = Vec::new();
//! poller.poll(&[me], |tick| ticks.push(*tick));
//! assert_eq!(ticks.len(), 1);
//! assert!(ticks[0].cpu_ns >= 20_000_000, "{:?}", ticks[0]);
//! ```

use std::collections::HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ferrofluid_jvmti::{JavaVm, JniEnv};

use crate::error::{Error, Result};
use crate::ffi::os;
use crate::threads::{self, ThreadKey};

/// CPU time thread `tid` of this process has used; `None` if it has ended.
pub fn thread_cpu_time(tid: u32) -> Option<Duration> {
    os::thread_cpu_ns(tid).map(Duration::from_nanos)
}

/// CPU time the calling thread has used.
pub fn current_thread_cpu_time() -> Duration {
    Duration::from_nanos(os::current_thread_cpu_ns())
}

/// The monotonic clock (`CLOCK_MONOTONIC`), in ns: the time base of samples and ticks.
pub fn monotonic_ns() -> u64 {
    os::monotonic_ns()
}

/// The kernel's scheduler statistics of a thread (`/proc/self/task/TID/schedstat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedStat {
    /// Time on a CPU, ns.
    pub cpu_ns: u64,
    /// Time runnable but waiting in a run queue, ns.
    pub wait_ns: u64,
    /// Times it was given a CPU.
    pub timeslices: u64,
}

/// The scheduler statistics of thread `tid` of this process; `None` if it has ended (or the
/// kernel keeps none: `CONFIG_SCHED_INFO`).
pub fn sched_stat(tid: u32) -> Option<SchedStat> {
    let mut buf = [0u8; 96];
    let n = read_proc(tid, "schedstat", &mut buf)?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let mut fields = text.split_ascii_whitespace().map(|f| f.parse::<u64>().ok());
    Some(SchedStat {
        cpu_ns: fields.next()??,
        wait_ns: fields.next()??,
        timeslices: fields.next()??,
    })
}

/// The state letter the kernel shows for a thread (`/proc/self/task/TID/stat`, field 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OsState {
    /// `R`: on a CPU or in a run queue.
    Running,
    /// `S`: waiting, interruptible (sleep, park, a socket, a lock).
    Sleeping,
    /// `D`: waiting, uninterruptible (usually disk I/O).
    DiskSleep,
    /// `T`/`t`: stopped or traced.
    Stopped,
    /// Any other letter (`Z`, `X`, `I`...).
    Other(char),
}

/// The kernel's state of thread `tid` of this process; `None` if it has ended.
pub fn os_state(tid: u32) -> Option<OsState> {
    let mut buf = [0u8; 512];
    let n = read_proc(tid, "stat", &mut buf)?;
    // "pid (comm) S ...": the name may hold spaces and parentheses; the state follows the last ')'.
    let close = buf[..n].iter().rposition(|&b| b == b')')?;
    let letter = *buf.get(close + 2)? as char;
    Some(match letter {
        'R' => OsState::Running,
        'S' => OsState::Sleeping,
        'D' => OsState::DiskSleep,
        'T' | 't' => OsState::Stopped,
        c => OsState::Other(c),
    })
}

fn read_proc(tid: u32, file: &str, buf: &mut [u8]) -> Option<usize> {
    let mut f = std::fs::File::open(format!("/proc/self/task/{tid}/{file}")).ok()?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(_) => return None,
        }
    }
    Some(n)
}

/// What a thread did during one poll interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadState {
    /// On a CPU for most of the interval.
    Running,
    /// Runnable but waiting for a CPU for most of it (needs [`Detail::Scheduler`]).
    Runnable,
    /// Waiting (I/O, a lock, `sleep`, `park`) for most of it (needs [`Detail::Scheduler`]).
    Blocked,
    /// Off the CPU for most of it, waiting for a CPU or for something else: [`Detail::Clocks`]
    /// does not tell which.
    Idle,
}

/// One thread's interval, as a [`Poller`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    /// The thread.
    pub thread: ThreadKey,
    /// CPU time used during the interval, ns.
    pub cpu_ns: u64,
    /// Wall time of the interval (since this thread's previous tick), ns.
    pub wall_ns: u64,
    /// Time runnable but waiting for a CPU, ns ([`Detail::Scheduler`] only).
    pub wait_ns: Option<u64>,
    /// What it did for most of the interval.
    pub state: ThreadState,
}

impl Tick {
    /// Wall time neither on a CPU nor waiting for one (with [`Detail::Scheduler`]; otherwise
    /// wall time off the CPU), ns.
    pub fn off_cpu_ns(&self) -> u64 {
        self.wall_ns
            .saturating_sub(self.cpu_ns)
            .saturating_sub(self.wait_ns.unwrap_or(0))
    }
}

/// How much a [`Poller`] reads per thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// The thread's CPU clock: one system call per thread.
    Clocks,
    /// The kernel's scheduler statistics: one `/proc` read per thread (a few µs), which add the
    /// time waiting for a CPU and tell runnable from blocked.
    Scheduler,
}

#[derive(Clone, Copy)]
struct Reading {
    wall_ns: u64,
    cpu_ns: u64,
    wait_ns: u64,
    seen: u64,
}

/// Turns clock readings into per-interval deltas, per thread.
pub struct Poller {
    detail: Detail,
    last: HashMap<ThreadKey, Reading>,
    round: u64,
}

impl Poller {
    /// A poller reading `detail`.
    pub fn new(detail: Detail) -> Poller {
        Poller {
            detail,
            last: HashMap::new(),
            round: 0,
        }
    }

    /// Reads `threads` and calls `f` with the tick of each thread that was read before (the first
    /// reading of a thread is its baseline). Threads that ended are skipped and forgotten.
    pub fn poll(&mut self, threads: &[ThreadKey], mut f: impl FnMut(&Tick)) {
        self.round += 1;
        for &thread in threads {
            let now = os::monotonic_ns();
            let read = match self.detail {
                Detail::Clocks => os::thread_cpu_ns(thread.tid()).map(|cpu| (cpu, 0)),
                Detail::Scheduler => sched_stat(thread.tid()).map(|s| (s.cpu_ns, s.wait_ns)),
            };
            let Some((cpu_ns, wait_ns)) = read else {
                self.last.remove(&thread);
                continue;
            };
            let reading = Reading {
                wall_ns: now,
                cpu_ns,
                wait_ns,
                seen: self.round,
            };
            if let Some(prev) = self.last.insert(thread, reading) {
                let wall = now.saturating_sub(prev.wall_ns);
                let cpu = cpu_ns.saturating_sub(prev.cpu_ns);
                let wait = wait_ns.saturating_sub(prev.wait_ns);
                let (wait, state) = match self.detail {
                    Detail::Clocks => (None, state_of(cpu, None, wall)),
                    Detail::Scheduler => (Some(wait), state_of(cpu, Some(wait), wall)),
                };
                f(&Tick {
                    thread,
                    cpu_ns: cpu,
                    wall_ns: wall,
                    wait_ns: wait,
                    state,
                });
            }
        }
        // Forget threads not polled for a while (ended, or no longer asked for).
        let round = self.round;
        self.last.retain(|_, r| round - r.seen < 16);
    }

    /// [`poll`](Self::poll) over every thread of the registry.
    pub fn poll_registered(&mut self, f: impl FnMut(&Tick)) {
        let keys = threads::registry().keys();
        self.poll(&keys, f);
    }
}

fn state_of(cpu: u64, wait: Option<u64>, wall: u64) -> ThreadState {
    match wait {
        None if cpu > 0 && cpu >= wall / 2 => ThreadState::Running,
        None => ThreadState::Idle,
        Some(w) => {
            let blocked = wall.saturating_sub(cpu).saturating_sub(w);
            if cpu > 0 && cpu >= w && cpu >= blocked {
                ThreadState::Running
            } else if w > 0 && w > blocked {
                ThreadState::Runnable
            } else {
                ThreadState::Blocked
            }
        }
    }
}

/// A thread polling every interval. Stops (and joins) when dropped.
pub struct PollerThread {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PollerThread {
    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for PollerThread {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts a thread that polls the registry's threads every `interval` and hands each round's
/// ticks to `f`.
pub fn spawn(
    interval: Duration,
    detail: Detail,
    mut f: impl FnMut(&[Tick]) + Send + 'static,
) -> Result<PollerThread> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("jvmtiprof-poller".into())
        .spawn(move || run_loop(interval, detail, &flag, |ticks| f(ticks)))
        .map_err(|e| Error::Os {
            what: "starting the poller thread",
            source: e,
        })?;
    Ok(PollerThread {
        stop,
        thread: Some(thread),
    })
}

/// As [`spawn`], on a thread attached to the JVM (a daemon named `name`), so that `f` can use JNI:
/// e.g. to read each running thread's current calling context from a Java field.
pub fn spawn_attached(
    vm: JavaVm,
    name: &str,
    interval: Duration,
    detail: Detail,
    mut f: impl FnMut(&JniEnv<'_>, &[Tick]) + Send + 'static,
) -> Result<PollerThread> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread_name = name.to_owned();
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let attached = vm.with_attached_thread(&thread_name, |env| {
                run_loop(interval, detail, &flag, |ticks| f(env, ticks));
            });
            if let Err(e) = attached {
                log::error!("poller thread cannot attach to the JVM: {e}");
            }
        })
        .map_err(|e| Error::Os {
            what: "starting the poller thread",
            source: e,
        })?;
    Ok(PollerThread {
        stop,
        thread: Some(thread),
    })
}

fn run_loop(interval: Duration, detail: Detail, stop: &AtomicBool, mut f: impl FnMut(&[Tick])) {
    let mut poller = Poller::new(detail);
    let mut ticks = Vec::new();
    let me = os::gettid();
    let mut next = os::monotonic_ns();
    while !stop.load(Ordering::Acquire) {
        let keys: Vec<ThreadKey> = threads::registry()
            .keys()
            .into_iter()
            .filter(|k| k.tid() != me)
            .collect();
        ticks.clear();
        poller.poll(&keys, |t| ticks.push(*t));
        if !ticks.is_empty() {
            f(&ticks);
        }
        next += interval.as_nanos() as u64;
        let now = os::monotonic_ns();
        if next <= now {
            // Fell behind (a slow callback): skip ahead rather than poll in a burst.
            next = now + interval.as_nanos() as u64;
        }
        let mut left = Duration::from_nanos(next - now);
        while !left.is_zero() && !stop.load(Ordering::Acquire) {
            let step = left.min(Duration::from_millis(20));
            std::thread::sleep(step);
            left -= step;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleeping_thread_is_blocked_and_a_spinning_one_runs() {
        let registry = threads::registry();
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        // Blocked once for the whole test: on a busy machine a thread that wakes up often
        // spends much of its time waiting for a CPU (runnable, not blocked).
        let sleeper = std::thread::spawn(move || {
            tx.send(registry.register_current().unwrap()).unwrap();
            let _ = stopped.recv();
        });
        let sleeping = rx.recv().unwrap();
        let me = registry.register_current().unwrap();
        let mut poller = Poller::new(Detail::Scheduler);
        poller.poll(&[me, sleeping], |_| panic!("baseline only"));
        // Spin for 20 ms of CPU (however long the machine makes that take) and 30 ms of wall.
        let (cpu, wall) = (current_thread_cpu_time(), std::time::Instant::now());
        while current_thread_cpu_time() < cpu + Duration::from_millis(20)
            || wall.elapsed() < Duration::from_millis(30)
        {}
        let mut ticks = HashMap::new();
        poller.poll(&[me, sleeping], |tick| {
            ticks.insert(tick.thread, *tick);
        });
        stop.send(()).unwrap();
        sleeper.join().unwrap();
        let spin = ticks[&me];
        let sleep = ticks[&sleeping];
        assert!(spin.cpu_ns > 10_000_000, "{spin:?}");
        assert!(sleep.cpu_ns < 5_000_000, "{sleep:?}");
        assert!(sleep.wall_ns >= 30_000_000, "{sleep:?}");
        assert_eq!(sleep.state, ThreadState::Blocked, "{sleep:?}");
        assert!(sleep.off_cpu_ns() > 20_000_000, "{sleep:?}");
        assert!(matches!(
            spin.state,
            ThreadState::Running | ThreadState::Runnable
        ));
        assert_eq!(os_state(me.tid()), Some(OsState::Running));
        assert!(sched_stat(me.tid()).unwrap().timeslices > 0);
    }

    #[test]
    fn states_from_deltas() {
        assert_eq!(state_of(9, Some(0), 10), ThreadState::Running);
        assert_eq!(state_of(1, Some(8), 10), ThreadState::Runnable);
        assert_eq!(state_of(1, Some(1), 10), ThreadState::Blocked);
        assert_eq!(state_of(1, None, 10), ThreadState::Idle);
        assert_eq!(state_of(0, Some(0), 0), ThreadState::Blocked);
    }
}
