//! The signal side of the sampler: what runs inside the signal handler, on the interrupted thread.
//!
//! Code here must be async-signal-safe: no allocation, no lock, no thread-local storage of a
//! dynamically loaded library, no JNI or JVMTI call. It only reads atomics, calls the guarded
//! stack walk and writes words of a record reserved in the sampler's lock-free ring.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use crate::ffi::walk::{UContext, WalkResult};
use crate::ring::{Reservation, KIND_SAMPLE};
use crate::threads::{self, ThreadKey, FLAG_JAVA, FLAG_NOT_JAVA};

use super::{Clock, Shared, SignalEvent, Threads};
pub use crate::ffi::handler::{SignalHandler, WalkStack};

/// Words of a sample record before its frames (after the ring's header word).
pub(crate) const FIELDS: usize = 8;
pub(crate) const F_KEY: usize = 0;
pub(crate) const F_TIME: usize = 1;
pub(crate) const F_WEIGHT: usize = 2;
pub(crate) const F_PC: usize = 3;
pub(crate) const F_META: usize = 4;
pub(crate) const F_ENV: usize = 5;
pub(crate) const F_USER: usize = 6;

/// How a record's walk ended (the `status` byte of its meta word).
pub(crate) const S_WALKED: u64 = 0;
pub(crate) const S_VM_CODE: u64 = 1;
pub(crate) const S_FAULT: u64 = 2;
pub(crate) const S_BUSY: u64 = 3;
pub(crate) const S_NOT_JAVA: u64 = 4;
pub(crate) const S_NOT_WALKED: u64 = 5;
pub(crate) const S_UNAVAILABLE: u64 = 6;

/// Thread states in records.
pub(crate) const T_RUNNING: u64 = 1;
pub(crate) const T_SYSCALL: u64 = 2;
pub(crate) const T_IDLE: u64 = 3;

/// A record's meta word: the clock, the thread state, the walk's status, the frame whose
/// compiled code the program counter was in (plus one; 0: none found) and the frame count.
pub(crate) fn meta(clock: Clock, state: u64, status: u64, compiled: Option<u8>, n: i32) -> u64 {
    let compiled = compiled
        .filter(|&c| c < u8::MAX)
        .map_or(0, |c| u64::from(c) + 1);
    (clock as u64) | state << 8 | status << 16 | compiled << 24 | (n as u32 as u64) << 32
}

/// Why a sample has no stack (or a partial one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WalkError {
    /// `AsyncGetCallTrace` gave no frames, for this reason (HotSpot's `ticks_*` code, from -1
    /// `no_class_load` to -10 `safepoint`; [`WalkError::name`] names it).
    Vm(i32),
    /// The walk faulted and was abandoned; the fault was contained.
    Fault,
    /// Too many threads were walking at once (more than the guard's table holds).
    Busy,
    /// The thread is not a Java thread (a JVM-internal or native thread).
    NotJavaThread,
    /// The signal handler did not walk the stack.
    NotWalked,
    /// The JVM has no `AsyncGetCallTrace`.
    Unavailable,
    /// The ring had no room: the sample was lost (only counted, never delivered).
    BufferFull,
}

impl WalkError {
    /// A short stable name (`gc_active`, `fault`, ...), for reports and counters.
    pub fn name(self) -> &'static str {
        match self {
            WalkError::Vm(-1) => "no_class_load",
            WalkError::Vm(-2) => "gc_active",
            WalkError::Vm(-3) => "unknown_not_java",
            WalkError::Vm(-4) => "not_walkable_not_java",
            WalkError::Vm(-5) => "unknown_java",
            WalkError::Vm(-6) => "not_walkable_java",
            WalkError::Vm(-7) => "unknown_state",
            WalkError::Vm(-8) => "thread_exit",
            WalkError::Vm(-9) => "deopt",
            WalkError::Vm(-10) => "safepoint",
            WalkError::Vm(_) => "vm_other",
            WalkError::Fault => "fault",
            WalkError::Busy => "busy",
            WalkError::NotJavaThread => "not_java_thread",
            WalkError::NotWalked => "not_walked",
            WalkError::Unavailable => "unavailable",
            WalkError::BufferFull => "buffer_full",
        }
    }
}

impl std::fmt::Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a [`SignalHandler`] decides for a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Put the sample into the buffer.
    Record,
    /// Drop it (counted as `filtered`).
    Skip,
}

/// One sample being taken, inside the signal handler: what a [`SignalHandler`] can read, and
/// the record it fills. Every method is async-signal-safe.
pub struct SignalContext<'a> {
    shared: &'a Shared,
    tid: u32,
    key: Option<ThreadKey>,
    word: u64,
    env: Option<usize>,
    ucontext: UContext,
    time_ns: u64,
    weight_ns: u64,
    state: u64,
    user: [u64; 2],
    record: Option<Reservation<'a>>,
    walked: Option<Result<usize, WalkError>>,
    frames: i32,
    compiled: Option<u8>,
    status: u64,
    lost: bool,
}

impl<'a> SignalContext<'a> {
    /// The interrupted thread's kernel id.
    pub fn tid(&self) -> u32 {
        self.tid
    }

    /// The interrupted thread's registry key (`None` if it is not registered).
    pub fn thread(&self) -> Option<ThreadKey> {
        self.key
    }

    /// The thread's registry word ([`ThreadRegistry::set_word`](crate::threads::ThreadRegistry::set_word)),
    /// 0 if unregistered.
    pub fn thread_word(&self) -> u64 {
        self.word
    }

    /// Whether the thread is a Java thread (has a `JNIEnv`).
    pub fn is_java_thread(&self) -> bool {
        self.env.is_some()
    }

    /// Which clock this sampler follows.
    pub fn clock(&self) -> Clock {
        self.shared.clock
    }

    /// When the sample was taken (`CLOCK_MONOTONIC`, ns).
    pub fn time_ns(&self) -> u64 {
        self.time_ns
    }

    /// The time the sample stands for, in ns: the interval (times the number of expiries for a CPU
    /// timer that fired late), or, in wall-clock mode, the time since the thread's last sample.
    pub fn weight_ns(&self) -> u64 {
        self.weight_ns
    }

    /// The interrupted program counter.
    pub fn pc(&self) -> usize {
        self.ucontext.pc()
    }

    /// Sets user word `index` (0 or 1) of the record, delivered with the sample.
    pub fn set_user(&mut self, index: usize, value: u64) {
        if let Some(u) = self.user.get_mut(index) {
            *u = value;
        }
    }

    /// Walks the interrupted thread's Java stack (once; later calls return the first result):
    /// the number of frames, up to the sampler's maximum depth.
    pub fn walk_stack(&mut self) -> Result<usize, WalkError> {
        if let Some(done) = self.walked {
            return done;
        }
        let result = self.walk();
        self.walked = Some(result);
        result
    }

    fn walk(&mut self) -> Result<usize, WalkError> {
        let shared = self.shared;
        let Some(walker) = shared.walker else {
            self.status = S_UNAVAILABLE;
            return Err(WalkError::Unavailable);
        };
        let Some(env) = self.env else {
            self.status = S_NOT_JAVA;
            return Err(WalkError::NotJavaThread);
        };
        let Some(record) = shared.ring.reserve(1 + FIELDS + 2 * shared.max_frames) else {
            self.lost = true;
            return Err(WalkError::BufferFull);
        };
        let frames = &record.body()[FIELDS..];
        let result = walker.walk(env, self.ucontext, frames, self.tid);
        self.record = Some(record);
        match result {
            WalkResult::Frames(n, compiled) if n >= 0 => {
                self.status = S_WALKED;
                self.frames = n;
                self.compiled = compiled;
                Ok(n as usize)
            }
            WalkResult::Frames(code, _) => {
                self.status = S_VM_CODE;
                self.frames = code;
                Err(WalkError::Vm(code))
            }
            WalkResult::Fault => {
                self.status = S_FAULT;
                Err(WalkError::Fault)
            }
            WalkResult::Busy => {
                self.status = S_BUSY;
                Err(WalkError::Busy)
            }
        }
    }

    /// Writes the record (or drops the sample) and counts it.
    fn finish(mut self, verdict: Verdict) {
        let stats = &self.shared.stats;
        if self.lost {
            stats.buffer_full.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if verdict == Verdict::Skip {
            if let Some(r) = self.record.take() {
                r.cancel();
            }
            stats.filtered.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let record = match self.record.take() {
            Some(r) => r,
            None => match self.shared.ring.reserve(1 + FIELDS) {
                Some(r) => r,
                None => {
                    stats.buffer_full.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            },
        };
        match self.status {
            S_WALKED => stats.walked.fetch_add(1, Ordering::Relaxed),
            S_VM_CODE => stats.count_vm_code(self.frames),
            S_FAULT => stats.faults.fetch_add(1, Ordering::Relaxed),
            S_BUSY => stats.busy.fetch_add(1, Ordering::Relaxed),
            S_NOT_JAVA => stats.not_java.fetch_add(1, Ordering::Relaxed),
            _ => stats.not_walked.fetch_add(1, Ordering::Relaxed),
        };
        let body = record.body();
        let key = self.key.map_or(self.tid as u64, |k| {
            k.tid() as u64 | (k.generation() as u64) << 32
        });
        let n = if self.status == S_WALKED || self.status == S_VM_CODE {
            self.frames
        } else {
            0
        };
        body[F_KEY].store(key, Ordering::Relaxed);
        body[F_TIME].store(self.time_ns, Ordering::Relaxed);
        body[F_WEIGHT].store(self.weight_ns, Ordering::Relaxed);
        body[F_PC].store(self.ucontext.pc() as u64, Ordering::Relaxed);
        body[F_META].store(
            meta(self.shared.clock, self.state, self.status, self.compiled, n),
            Ordering::Relaxed,
        );
        body[F_ENV].store(self.env.unwrap_or(0) as u64, Ordering::Relaxed);
        body[F_USER].store(self.user[0], Ordering::Relaxed);
        body[F_USER + 1].store(self.user[1], Ordering::Relaxed);
        let used = 1 + FIELDS + 2 * n.max(0) as usize;
        record.commit(KIND_SAMPLE, used);
        stats.samples.fetch_add(1, Ordering::Relaxed);
    }
}

/// The sampler's work for one signal, on the interrupted thread.
pub(crate) fn on_signal(shared: &Shared, event: SignalEvent) {
    let stats = &shared.stats;
    stats.signals.fetch_add(1, Ordering::Relaxed);
    stats
        .overruns
        .fetch_add(event.overrun as u64, Ordering::Relaxed);
    let slot = threads::registry().slot(event.tid);
    let key = slot.and_then(|s| s.key());
    let slot = slot.filter(|_| key.is_some());
    let word = slot.map_or(0, |s| s.word());
    if shared.threads == Threads::Marked && word == 0 {
        stats.filtered.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let now = crate::ffi::os::monotonic_ns();
    let interval = shared.interval_ns;
    let weight = match shared.clock {
        Clock::Cpu => interval.saturating_mul(1 + event.overrun as u64),
        Clock::Wall => match slot {
            Some(s) => {
                let last = s.last_wall_ns.swap(now, Ordering::Relaxed);
                if last == 0 || now <= last {
                    interval
                } else {
                    now - last
                }
            }
            None => interval,
        },
    };
    let env = shared.walker.and_then(|w| w.jni_env());
    if let Some(s) = slot {
        match env {
            Some(e) => {
                s.add_flags(FLAG_JAVA);
                s.jni_env.store(e, Ordering::Relaxed);
            }
            None => s.add_flags(FLAG_NOT_JAVA),
        }
    }
    if shared.threads == Threads::Java && env.is_none() {
        stats.filtered.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let state = match shared.clock {
        Clock::Cpu => T_RUNNING,
        Clock::Wall if event.ucontext.in_syscall() => T_SYSCALL,
        Clock::Wall => T_RUNNING,
    };
    let mut ctx = SignalContext {
        shared,
        tid: event.tid,
        key,
        word,
        env,
        ucontext: event.ucontext,
        time_ns: now,
        weight_ns: weight,
        state,
        user: [0; 2],
        record: None,
        walked: None,
        frames: 0,
        compiled: None,
        status: S_NOT_WALKED,
        lost: false,
    };
    let verdict = catch_unwind(AssertUnwindSafe(|| shared.handler.on_sample(&mut ctx)))
        .unwrap_or(Verdict::Skip);
    ctx.finish(verdict);
    if shared.clock == Clock::Wall {
        if let Some(s) = slot {
            // What the wall-clock thread compares with: CPU used after this handler is running.
            s.last_wall_cpu_ns
                .store(crate::ffi::os::current_thread_cpu_ns(), Ordering::Relaxed);
        }
    }
}
