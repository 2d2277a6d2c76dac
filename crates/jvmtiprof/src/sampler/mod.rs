//! Execution sampling: an interval and a callback, with stacks walked asynchronously.
//!
//! - **CPU** ([`Clock::Cpu`]): every thread gets a timer on its own CPU clock (`timer_create` on
//!   the thread's clock with `SIGEV_THREAD_ID`), which signals that thread each time it has used
//!   `interval` of CPU. Threads that exist at start are found in `/proc/self/task`, Java threads
//!   that start later at their `ThreadStart`, and the JVM's own threads by a scan every second.
//! - **Wall clock** ([`Clock::Wall`]): a timer thread visits every thread once per interval, in
//!   batches of 16 spread over the interval, and signals it, waiting ones included. A thread that
//!   used no CPU since its last visit is not signalled: its stack cannot have changed, and a
//!   repeat of its last sample stands for it.
//!
//! On the interrupted thread, inside the signal handler, the sampler calls a [`SignalHandler`]
//! (by default [`WalkStack`]), whose [`SignalContext`] walks the Java stack with HotSpot's
//! `AsyncGetCallTrace` (no safepoint, so no safepoint bias) into a record of a lock-free ring.
//! A fault inside the walk is contained: the sample is dropped and counted, the JVM goes on.
//! Off the signal, [`Samples::drain`] hands the records out, and [`MethodResolver`] names their
//! methods.
//!
//! ```no_run
//! use std::time::Duration;
//! use jvmtiprof::sampler::{Config, Sampler};
//! # fn run(env: &jvmtiprof::JniEnv<'_>, vm: jvmtiprof::JavaVm) -> Result<(), jvmtiprof::Error> {
//! // On a Java thread (in VMInit, Agent_OnAttach, or an attached thread):
//! let (sampler, mut samples) = Sampler::start(vm, env, Config::cpu(Duration::from_millis(10)))?;
//! std::thread::sleep(Duration::from_secs(1));
//! let stats = sampler.stop();
//! samples.drain(|s| println!("{} frames, {} ns", s.frames.len(), s.weight_ns));
//! println!("{} samples, {} lost", stats.samples, stats.lost());
//! # Ok(()) }
//! ```
//!
//! [`MethodResolver`]: crate::stack::MethodResolver

mod drivers;
mod handler;
mod reader;
mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ferrofluid_jvmti::{JavaVm, JniEnv};

use crate::error::{Error, Result};
use crate::ffi::walk::{self, UContext, Walker};
use crate::ffi::{os, signals};
use crate::ring::Ring;
use crate::threads;

pub use handler::{SignalContext, SignalHandler, Verdict, WalkError, WalkStack};
pub use reader::{Frame, FrameType, Sample, SampleState, Samples};

pub(crate) use handler::on_signal;

/// Which clock drives the sampler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Clock {
    /// Each thread's CPU time: a thread is sampled each `interval` of CPU it uses.
    Cpu = 0,
    /// Elapsed time: every thread is sampled each `interval`, running or not.
    Wall = 1,
}

impl Clock {
    fn slot(self) -> usize {
        self as usize
    }
}

/// Which threads are sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Threads {
    /// Every thread of the process, the JVM's own (GC, compiler) included: their samples have
    /// no Java frames ([`WalkError::NotJavaThread`]).
    All,
    /// Java threads only (a thread is known not to be one after its first sample).
    Java,
    /// Threads whose registry word is not zero
    /// ([`ThreadRegistry::set_word`](crate::threads::ThreadRegistry::set_word)): an agent marks
    /// the threads to sample, e.g. while they are inside a method of interest.
    Marked,
}

/// How to sample.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The clock.
    pub clock: Clock,
    /// The sampling interval (of CPU time per thread, or of elapsed time).
    pub interval: Duration,
    /// The deepest stack walked, in frames (deeper stacks keep their innermost frames).
    pub max_frames: usize,
    /// The ring's size in bytes.
    pub buffer_bytes: usize,
    /// The signal; `None` chooses a free one (`SIGPROF` for CPU, `SIGVTALRM` for wall clock, else
    /// a real-time signal).
    pub signal: Option<i32>,
    /// How often `/proc/self/task` is scanned for threads the JVM does not announce.
    pub rescan: Duration,
    /// Which threads.
    pub threads: Threads,
    /// What drives CPU sampling.
    pub cpu_source: CpuSource,
}

/// What drives CPU sampling ([`Clock::Cpu`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CpuSource {
    /// Perf events if the kernel lets this process open them, else POSIX timers.
    Auto,
    /// A software task-clock perf event per thread (`perf_event_open`): its interval is kept by a
    /// high-resolution timer, so any interval is honoured.
    PerfEvents,
    /// A POSIX timer on each thread's CPU clock (`timer_create`, `SIGEV_THREAD_ID`): the kernel
    /// checks them at its scheduler tick (`CONFIG_HZ`, often 250 Hz), so an interval shorter than
    /// the tick yields one signal per tick, whose weight counts every interval that passed.
    Timers,
}

impl Config {
    /// CPU sampling every `interval` of each thread's CPU time.
    pub fn cpu(interval: Duration) -> Config {
        Config {
            clock: Clock::Cpu,
            interval,
            max_frames: 2048,
            buffer_bytes: 16 << 20,
            signal: None,
            rescan: Duration::from_secs(1),
            threads: Threads::All,
            cpu_source: CpuSource::Auto,
        }
    }

    /// Wall-clock sampling of every thread every `interval`.
    pub fn wall(interval: Duration) -> Config {
        Config {
            clock: Clock::Wall,
            ..Config::cpu(interval)
        }
    }

    /// Sets [`Config::max_frames`].
    pub fn max_frames(mut self, n: usize) -> Config {
        self.max_frames = n;
        self
    }

    /// Sets [`Config::buffer_bytes`].
    pub fn buffer_bytes(mut self, n: usize) -> Config {
        self.buffer_bytes = n;
        self
    }

    /// Sets [`Config::signal`].
    pub fn signal(mut self, signal: i32) -> Config {
        self.signal = Some(signal);
        self
    }

    /// Sets [`Config::threads`].
    pub fn threads(mut self, threads: Threads) -> Config {
        self.threads = threads;
        self
    }

    /// Sets [`Config::cpu_source`].
    pub fn cpu_source(mut self, source: CpuSource) -> Config {
        self.cpu_source = source;
        self
    }

    /// Sets [`Config::rescan`].
    pub fn rescan(mut self, every: Duration) -> Config {
        self.rescan = every;
        self
    }

    fn validate(&self) -> Result<()> {
        if self.interval < Duration::from_micros(100) || self.interval > Duration::from_secs(60) {
            return Err(Error::Config(format!(
                "interval {:?} is outside 100us..60s",
                self.interval
            )));
        }
        if self.max_frames == 0 || self.max_frames > 8192 {
            return Err(Error::Config(format!(
                "max_frames {} is outside 1..8192",
                self.max_frames
            )));
        }
        let record = 8 * (2 + handler::FIELDS + 2 * self.max_frames);
        if self.buffer_bytes < 8 * record {
            return Err(Error::Config(format!(
                "a buffer of {} bytes cannot hold 2 records of {} frames ({} bytes needed)",
                self.buffer_bytes,
                self.max_frames,
                8 * record
            )));
        }
        Ok(())
    }
}

/// Counters of a sampler's work: what was taken, and what was lost and why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Signals handled.
    pub signals: u64,
    /// Signals the wall-clock thread sent.
    pub signals_sent: u64,
    /// Samples recorded (delivered by [`Samples::drain`]).
    pub samples: u64,
    /// Of those, with a stack.
    pub walked: u64,
    /// Repeat samples of idle threads (wall clock), recorded without a signal.
    pub repeats: u64,
    /// Recorded without a stack because the walk faulted (and was contained).
    pub faults: u64,
    /// Recorded without a stack because too many threads walked at once.
    pub busy: u64,
    /// Recorded without a stack: the thread is not a Java thread.
    pub not_java: u64,
    /// Recorded without a stack: the handler did not walk, or the JVM has no `AsyncGetCallTrace`.
    pub not_walked: u64,
    /// Recorded without a stack because the JVM could not walk it, by HotSpot's reason
    /// (index `-code - 1`: 0 `no_class_load` ... 9 `safepoint`; [`WalkError::Vm`]).
    pub vm_codes: [u64; 10],
    /// Lost: the ring was full (the consumer fell behind).
    pub buffer_full: u64,
    /// Not recorded: the handler said [`Verdict::Skip`], or the thread was not selected.
    pub filtered: u64,
    /// Timer expiries that came while the previous signal was still pending (CPU), each still
    /// counted in its sample's weight.
    pub overruns: u64,
    /// Faults inside walks contained in this process, by any sampler, since it started.
    pub faults_contained_total: u64,
}

impl Stats {
    /// Samples lost (never delivered): the ring was full.
    pub fn lost(&self) -> u64 {
        self.buffer_full
    }

    /// Samples recorded without a stack, for any reason.
    pub fn without_stack(&self) -> u64 {
        self.faults
            + self.busy
            + self.not_java
            + self.not_walked
            + self.vm_codes.iter().sum::<u64>()
    }
}

#[derive(Default)]
pub(crate) struct AtomicStats {
    pub signals: AtomicU64,
    pub signals_sent: AtomicU64,
    pub samples: AtomicU64,
    pub walked: AtomicU64,
    pub repeats: AtomicU64,
    pub faults: AtomicU64,
    pub busy: AtomicU64,
    pub not_java: AtomicU64,
    pub not_walked: AtomicU64,
    pub vm_codes: [AtomicU64; 10],
    pub buffer_full: AtomicU64,
    pub filtered: AtomicU64,
    pub overruns: AtomicU64,
}

impl AtomicStats {
    pub(crate) fn count_vm_code(&self, code: i32) -> u64 {
        let i = (-(code as i64) - 1).clamp(0, 9) as usize;
        self.vm_codes[i].fetch_add(1, Ordering::Relaxed)
    }

    fn snapshot(&self) -> Stats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            signals: l(&self.signals),
            signals_sent: l(&self.signals_sent),
            samples: l(&self.samples),
            walked: l(&self.walked),
            repeats: l(&self.repeats),
            faults: l(&self.faults),
            busy: l(&self.busy),
            not_java: l(&self.not_java),
            not_walked: l(&self.not_walked),
            vm_codes: std::array::from_fn(|i| l(&self.vm_codes[i])),
            buffer_full: l(&self.buffer_full),
            filtered: l(&self.filtered),
            overruns: l(&self.overruns),
            faults_contained_total: walk::faults_contained(),
        }
    }
}

/// What the signal handler of a running sampler uses.
pub(crate) struct Shared {
    pub clock: Clock,
    pub interval_ns: u64,
    pub max_frames: usize,
    pub threads: Threads,
    pub ring: Ring,
    pub stats: AtomicStats,
    pub walker: Option<Walker>,
    pub handler: Box<dyn SignalHandler>,
}

/// One signal, as the FFI layer hands it over.
pub(crate) struct SignalEvent {
    pub tid: u32,
    pub ucontext: UContext,
    pub overrun: u32,
}

/// Makes the sampler's JVMTI environment now, at `Agent_OnLoad`, so that every method the JIT
/// compiles from the start keeps debug information at every instruction (HotSpot's
/// `-XX:+DebugNonSafepoints`, which the environment sets) and the stack walk can place a sample
/// anywhere in compiled code.
/// The environment then stays for the process. Without it, [`Sampler::start`] makes one, which
/// covers the code compiled from then on, and disposes it when the sampler stops.
pub fn prepare(vm: JavaVm) -> Result<()> {
    support::acquire(vm, true).map(drop)
}

/// Makes the JIT compile again the methods compiled before the sampler's JVMTI environment
/// existed (an agent attached to a running JVM), so that their new code has debug information
/// at every instruction and the walk can place samples inside their loops. Without it, a sample
/// taken between two safepoints of such code is charged to the next place that has debug
/// information, often a caller's loop (docs/jvmtiprof.md, "Attaching").
///
/// It retransforms the classes that declare those methods with their bytes unchanged: HotSpot
/// throws away their compiled code and the code that inlined them (on a JVM that never
/// redefined a class, all compiled code, once), and compiles them again as they run. Costs a
/// pause for the retransformation and a warm-up. Call on a Java thread while a sampler runs;
/// returns how many classes were retransformed.
pub fn recompile(vm: JavaVm, env: &JniEnv<'_>) -> Result<usize> {
    let support = support::acquire(vm, false)?;
    let methods = std::mem::take(
        &mut *support
            .state
            .replayed
            .lock()
            .unwrap_or_else(|p| p.into_inner()),
    );
    let result = support::retransform_declaring_classes(vm, env, &methods);
    support::release(support);
    result
}

/// A running sampler. [`stop`](Sampler::stop) (or dropping it) deletes its timers, stops its
/// thread, makes the signal handler inert and puts the previous handlers back where it can.
pub struct Sampler {
    shared: Arc<Shared>,
    support: Option<Arc<support::Support>>,
    signal: i32,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    stopped: bool,
    perf: bool,
}

impl Sampler {
    /// Starts sampling with the default handler ([`WalkStack`]). Call on a Java thread
    /// (`env`): at `VMInit`, in `Agent_OnAttach`, or on an attached thread.
    pub fn start(vm: JavaVm, env: &JniEnv<'_>, config: Config) -> Result<(Sampler, Samples)> {
        Sampler::start_with(vm, env, config, WalkStack)
    }

    /// Starts sampling with `handler` run for each sample, in the signal handler.
    pub fn start_with(
        vm: JavaVm,
        env: &JniEnv<'_>,
        config: Config,
        handler: impl SignalHandler,
    ) -> Result<(Sampler, Samples)> {
        config.validate()?;
        let slot = config.clock.slot();
        if signals::is_active(slot) {
            return Err(Error::Busy(match config.clock {
                Clock::Cpu => "a CPU sampler",
                Clock::Wall => "a wall-clock sampler",
            }));
        }
        let signal = choose_signal(&config)?;
        let ring = Ring::new(config.buffer_bytes / 8).map_err(|source| Error::Os {
            what: "mapping the sample buffer",
            source,
        })?;
        let walker = Walker::new(env);
        let support = support::acquire(vm, false)?;
        support::catch_up(&support, env);
        let shared = Arc::new(Shared {
            clock: config.clock,
            interval_ns: config.interval.as_nanos() as u64,
            max_frames: config.max_frames,
            threads: config.threads,
            ring,
            stats: AtomicStats::default(),
            walker,
            handler: Box::new(handler),
        });
        let fail = |support: Arc<support::Support>, e: Error| {
            support::release(support);
            e
        };
        if let Err(e) = walk::install_fault_handlers() {
            return Err(fail(
                support,
                Error::Os {
                    what: "installing the fault handler",
                    source: e,
                },
            ));
        }
        if let Err(e) = signals::install(signal) {
            return Err(fail(
                support,
                Error::Os {
                    what: "installing the signal handler",
                    source: e,
                },
            ));
        }
        if !signals::publish(slot, signal, shared.clone()) {
            return Err(fail(support, Error::Busy("a sampler of this clock")));
        }
        let registry = threads::registry();
        if let Err(e) = registry.scan_process() {
            log::warn!("scanning /proc/self/task: {e}");
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut sampler = Sampler {
            shared: shared.clone(),
            support: Some(support.clone()),
            signal,
            stop: stop.clone(),
            thread: None,
            stopped: false,
            perf: false,
        };
        let thread = match config.clock {
            Clock::Cpu => {
                let perf = match config.cpu_source {
                    CpuSource::Timers => false,
                    CpuSource::PerfEvents => true,
                    CpuSource::Auto => perf_events_work(signal, config.interval),
                };
                sampler.perf = perf;
                let spec = drivers::TimerSpec {
                    perf,
                    signal,
                    cookie: drivers::cpu_cookie(),
                    interval: config.interval,
                    threads: config.threads,
                };
                *support
                    .state
                    .cpu_timers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = Some(spec);
                for key in registry.keys() {
                    drivers::arm(&spec, key);
                }
                let rescan = config.rescan;
                std::thread::Builder::new()
                    .name("jvmtiprof-cpu".into())
                    .spawn(move || drivers::cpu_loop(spec, rescan, stop))
            }
            Clock::Wall => {
                let rescan = config.rescan;
                std::thread::Builder::new()
                    .name("jvmtiprof-wall".into())
                    .spawn(move || drivers::wall_loop(shared, signal, rescan, stop))
            }
        };
        match thread {
            Ok(t) => sampler.thread = Some(t),
            Err(e) => {
                sampler.shutdown();
                return Err(Error::Os {
                    what: "starting the sampler's thread",
                    source: e,
                });
            }
        }
        let samples = Samples::new(sampler.shared.clone(), support.state.clone());
        Ok((sampler, samples))
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.shared.stats.snapshot()
    }

    /// Whether CPU sampling runs on perf events (else on POSIX CPU timers).
    pub fn uses_perf_events(&self) -> bool {
        self.perf
    }

    /// The signal the sampler uses.
    pub fn signal(&self) -> i32 {
        self.signal
    }

    /// Gives the calling thread a CPU timer now (a thread the sampler would otherwise find at its
    /// next scan, e.g. one attached to the JVM by native code). Returns whether it got one.
    pub fn add_current_thread(&self) -> bool {
        let Some(key) = threads::registry().register_current() else {
            return false;
        };
        let Some(support) = self.support.as_ref() else {
            return false;
        };
        // Armed under the lock: a stop clears the spec under it before it closes every
        // thread's event, so no event is armed after that sweep (its signals would outlive
        // the sampler).
        let spec = support
            .state
            .cpu_timers
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        spec.is_some_and(|spec| drivers::arm(&spec, key))
    }

    /// Stops sampling: no signal comes after it returns, nothing of the sampler keeps running.
    /// Samples taken before stay in [`Samples`].
    pub fn stop(mut self) -> Stats {
        self.shutdown();
        self.stats()
    }

    fn shutdown(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let slot = self.shared.clock.slot();
        if self.shared.clock == Clock::Cpu {
            if let Some(s) = &self.support {
                *s.state.cpu_timers.lock().unwrap_or_else(|p| p.into_inner()) = None;
            }
        }
        let perf_fds = if self.shared.clock == Clock::Cpu {
            drivers::disarm_all()
        } else {
            Vec::new()
        };
        // Handlers in flight finish; late signals find the slot empty and do nothing.
        if !signals::retract(slot, Duration::from_secs(5)) {
            log::warn!("signal handlers still running after 5 s; the sampler's memory is left");
        }
        // No handler can re-enable these any more.
        for fd in perf_fds {
            os::close_fd(fd);
        }
        let other = 1 - slot;
        let other_uses_signal =
            signals::is_active(other) && signals::slot_signal(other) == self.signal;
        if !other_uses_signal && signals::uninstall(self.signal) {
            signals::forget_signal(slot);
        }
        if !signals::is_active(other) {
            let deadline = os::monotonic_ns() + 1_000_000_000;
            while walk::walks_in_flight() > 0 && os::monotonic_ns() < deadline {
                std::thread::sleep(Duration::from_micros(200));
            }
            if !walk::uninstall_fault_handlers() {
                log::info!(
                    "another fault handler was installed over ours: ours stays, passing faults on"
                );
            }
        }
        if let Some(s) = self.support.take() {
            support::release(s);
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Whether this process may open task-clock perf events (tried on the calling thread).
fn perf_events_work(signal: i32, interval: Duration) -> bool {
    match os::open_task_clock(os::gettid(), signal, interval) {
        Ok(fd) => {
            os::close_fd(fd);
            true
        }
        Err(e) => {
            log::info!("perf events unavailable ({e}): CPU sampling on POSIX timers");
            false
        }
    }
}

/// The signal for a new sampler: the configured one, or the first free of the preferred ones.
fn choose_signal(config: &Config) -> Result<i32> {
    if let Some(s) = config.signal {
        return Ok(s);
    }
    let (first, second) = match config.clock {
        Clock::Cpu => (libc::SIGPROF, libc::SIGVTALRM),
        Clock::Wall => (libc::SIGVTALRM, libc::SIGPROF),
    };
    let taken =
        |s: i32| (0..2).any(|slot| signals::is_active(slot) && signals::slot_signal(slot) == s);
    let rt = libc::SIGRTMIN() + 4..libc::SIGRTMIN() + 12;
    [first, second]
        .into_iter()
        .chain(rt)
        .find(|&s| !taken(s) && signals::is_free(s))
        .ok_or_else(|| Error::Unavailable("no free signal for the sampler".into()))
}
