//! The call recorder: what the probes of an engine recording calling contexts in rings (`cpu`)
//! do inside a root's extent. Each pushes `(kind, id, ns)` into its thread's own ring, stamped
//! with the probe's first clock reading and carrying the probe's own duration; a full ring is
//! emptied by its thread (the time factored out as a pause). The calibration's probes also sum
//! their inner and own durations here.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use ferrofluid_jvmti::sys;

use super::clock::{now, ticks, ticks_to_ns, time_at};
use super::flags::{self, ACTIVE, INVOKED, ROOT};
use super::ring::{Event, Kind, ProbeStart, Ring};
use super::thread::{
    begin_word, cpu_stamp, enter_with, exit_with, next_thread_key, recording_lost, thread_cpu,
    Local, BEGIN_ID, CALIBRATION_ID, FIRST_SESSION_ID, LOCAL,
};
use super::upcalls::upcalls;

// Process-wide: threads add their rings from the probes (JVM natives without user data); the
// collector drains them.
/// Every ring of a thread that recorded something.
pub static RINGS: Mutex<Vec<Arc<Ring>>> = Mutex::new(Vec::new());

impl Local {
    /// Pushes the pause adjustment for agent work that took `wall` ns (and `cpu` ns of thread
    /// CPU time, if measured).
    pub(super) fn push_pause(&self, env: *mut sys::JNIEnv, id: u32, wall: u64, cpu: Option<u64>) {
        // A wait for room in this push is measured from here, not from the pause's CPU time.
        let cpu = cpu.map(|c| Cpu {
            word: c,
            clock: thread_cpu(),
        });
        self.push_from(env, Event::new(Kind::Adjust, id, wall), cpu, None, false);
    }

    /// Pushes the event of a probe that started at `start` (in [`ticks`]; also its timestamp),
    /// which may empty the thread's full ring itself (probes run in application code, where the
    /// agent holds no lock on the thread). `cpu`: the probe's CPU clock reading. Returns the
    /// thread CPU time it paused for room (reported as a pause; 0 unless the CPU clock is read).
    #[inline]
    fn push_probe(
        &self,
        env: *mut sys::JNIEnv,
        kind: Kind,
        id: u32,
        start: u64,
        cpu: Option<u64>,
    ) -> u64 {
        let cpu = cpu.map(|c| Cpu { word: c, clock: c });
        let probe = ProbeStart {
            start,
            clock: ticks,
        };
        let event = Event::new(kind, id, time_at(start));
        self.push_from(env, event, cpu, Some(probe), true)
    }

    #[inline]
    fn push_from(
        &self,
        env: *mut sys::JNIEnv,
        event: Event,
        cpu: Option<Cpu>,
        probe: Option<ProbeStart>,
        drain_own: bool,
    ) -> u64 {
        if let Some(ring) = self.ring.borrow().as_ref() {
            return push_reporting_waits(ring, event, cpu, probe, drain_own);
        }
        // The borrow above has ended: `new_ring` stores the ring in `self.ring`.
        let ring = self.new_ring(env);
        push_reporting_waits(&ring, event, cpu, probe, drain_own)
    }

    /// Before a recorded probe reads its clocks: a recording that begins gets its mark in the
    /// ring, and the ring, if the thread has none yet, is made first (agent work, which neither
    /// the probe's measured duration nor the frame's CPU time should hold: the probe's start is
    /// read again after it). Returns the probe's start; `None` when the mark was dropped, which
    /// ended the recording: the probe records nothing.
    #[inline(always)]
    fn ready(&self, env: *mut sys::JNIEnv, start: u64) -> Option<u64> {
        if !self.begin.get() {
            return Some(start);
        }
        self.mark_begin(env, start)
    }

    #[cold]
    fn mark_begin(&self, env: *mut sys::JNIEnv, start: u64) -> Option<u64> {
        self.begin.set(false);
        let existing = self.ring.borrow().clone();
        let (ring, start) = match existing {
            Some(ring) => (ring, start),
            None => (self.new_ring(env), ticks()),
        };
        let word = begin_word(self.recording.get().0, ring.dropped());
        let mark = Event::new(Kind::Adjust, BEGIN_ID, word);
        push_reporting_waits(&ring, mark, None, None, true);
        self.records_exit().then_some(start)
    }

    #[cold]
    fn new_ring(&self, env: *mut sys::JNIEnv) -> Arc<Ring> {
        self.busy.set(true);
        let (java_id, name) = crate::ffi::with_env(env, |jni| match (upcalls(), jni) {
            (Some(upcalls), Some(jni)) => upcalls.thread_identity(jni),
            _ => (None, None),
        });
        self.busy.set(false);
        let ring = match super::vthread::mounted_key() {
            Some(key) => super::vthread::ring(key, java_id, name),
            None => Ring::new(next_thread_key(), name.unwrap_or_else(|| "?".to_owned())),
        };
        let ring = Arc::new(match java_id {
            Some(id) => ring.with_java_id(id),
            None => ring,
        });
        RINGS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::clone(&ring));
        *self.ring.borrow_mut() = Some(Arc::clone(&ring));
        ring
    }
}

/// Records the entry of method `id` (or of `!id`, [`always_native`]) into the thread's ring,
/// a probe started at `start` ([`ticks`]): the calling-context engines' entry probe.
#[inline]
pub(crate) fn enter(env: *mut sys::JNIEnv, id: i32, start: u64) {
    enter_with(env, id, start, |l, id, start| {
        let Some(start) = l.ready(env, start) else {
            return;
        };
        let c = cpu_stamp();
        let waited = l.push_probe(env, Kind::Enter, id, start, c);
        if id < FIRST_SESSION_ID {
            calibration_enter(l, id, start, c, waited);
        }
    });
}

/// Records the exit of method `id`, as [`enter`].
#[inline]
pub(crate) fn exit(env: *mut sys::JNIEnv, id: i32, start: u64) {
    exit_with(env, id, start, |l, id, start| {
        let Some(start) = l.ready(env, start) else {
            return;
        };
        let c = cpu_stamp();
        let waited = l.push_probe(env, Kind::Exit, id, start, c);
        if id < FIRST_SESSION_ID {
            calibration_exit(l, id, start, c, waited);
        }
    });
}

/// A transition probe of an engine that records every thread while collecting, whatever its
/// root depth (the `native` engine: a wrapped native's entry and exit, an upcall's): `kind` of
/// method `id`, started at `start` ([`ticks`]), into the thread's ring with the recorder's
/// marks and pauses. A thread's first entry while collecting begins its recording; an exit
/// before one (a frame entered before collecting started) is not recorded. Returns whether it
/// was.
#[inline]
pub(crate) fn transition(env: *mut sys::JNIEnv, kind: Kind, id: u32, start: u64) -> bool {
    if !super::thread::SWITCHES.collecting.load(Ordering::Relaxed) {
        return false;
    }
    LOCAL
        .try_with(|l| {
            if l.busy.get() {
                return false;
            }
            l.sync();
            let epoch = super::thread::SWITCHES.epoch.load(Ordering::Relaxed);
            if l.recording.get().0 != epoch {
                if kind != Kind::Enter {
                    return false;
                }
                l.recording.set((epoch, 0));
                l.begin.set(true);
            }
            let Some(start) = l.ready(env, start) else {
                return false;
            };
            let c = cpu_stamp();
            l.push_probe(env, kind, id, start, c);
            true
        })
        .unwrap_or(false)
}

/// Calibration: the thread CPU time a calibration probe waited for room in the ring, kept apart.
fn add_calibration_cpu_waits(l: &Local, waited_cpu: u64) {
    l.calibration_cpu_waits
        .set(l.calibration_cpu_waits.get() + waited_cpu);
}

/// Calibration: a probe that started at `start` ([`ticks`]) ends now; adds its whole duration
/// (any wait for room in the ring included) to the measured part and returns its end (ticks).
/// Called last, with only integer stores after the clock read, so that what the calibration
/// leaves to be estimated is what an application probe leaves: the calls into the probe and
/// back, outside every clock reading.
#[inline(always)]
fn calibration_probe_ends(l: &Local, start: u64) -> u64 {
    let end = ticks();
    l.calibration_probes
        .set(l.calibration_probes.get() + end.wrapping_sub(start));
    end
}

/// Calibration: an entry probe of `id` that started at `start` ([`ticks`]), with CPU clock
/// `c`, and paused `waited_cpu` of thread CPU time.
#[cold]
fn calibration_enter(l: &Local, id: u32, start: u64, c: Option<u64>, waited_cpu: u64) {
    add_calibration_cpu_waits(l, waited_cpu);
    if id != CALIBRATION_ID {
        calibration_probe_ends(l, start);
        return;
    }
    if let Some(c) = c {
        // A wait after the entry's CPU stamp is inside the inner interval: skip it.
        l.calibration_cpu
            .set((c + waited_cpu, l.calibration_cpu.get().1));
    }
    // The callee's inner interval starts where its entry probe ended.
    let sum = l.calibration.get().1;
    let ended = calibration_probe_ends(l, start);
    l.calibration.set((ended, sum));
}

/// Calibration: an exit probe of `id`, as [`calibration_enter`].
#[cold]
fn calibration_exit(l: &Local, id: u32, start: u64, c: Option<u64>, waited_cpu: u64) {
    add_calibration_cpu_waits(l, waited_cpu);
    if id == CALIBRATION_ID {
        let (entered, sum) = l.calibration.get();
        l.calibration
            .set((entered, sum + start.wrapping_sub(entered)));
        if let Some(c) = c {
            let (entered, sum) = l.calibration_cpu.get();
            l.calibration_cpu
                .set((entered, sum + c.saturating_sub(entered)));
        }
    }
    calibration_probe_ends(l, start);
}

/// The CPU part of an event: `word` goes into the ring with it; `clock` is the thread's CPU
/// clock just before the push, from which a pause for room in the ring is measured.
#[derive(Clone, Copy)]
struct Cpu {
    word: u64,
    clock: u64,
}

/// Pushes an event; if a full ring made this thread pause, emptying it itself (`drain_own`) or
/// waiting for the collector, the pause is reported, so it is not charged to the running method.
/// A `probe`'s event carries the probe's duration. Returns the pause's thread CPU time (0
/// unless measured).
#[inline]
fn push_reporting_waits(
    ring: &Ring,
    event: Event,
    cpu: Option<Cpu>,
    probe: Option<ProbeStart>,
    drain_own: bool,
) -> u64 {
    let mut drained = 0;
    let make_room = || {
        if drain_own {
            drained = drain_own_ring(ring);
        }
    };
    let wait = super::ring::FULL_WAIT;
    let pushed = match (probe, cpu) {
        (Some(p), cpu) => ring.push_probe_within(event, cpu.map(|c| c.word), p, wait, make_room),
        (None, None) => ring.push_within(event.kind, event.id, event.ns, wait, make_room),
        (None, Some(c)) => ring.push_with_cpu_within(event, c.word, wait, make_room),
    };
    if !pushed {
        recording_lost();
    }
    let waited = ring.take_waited_ns();
    let paused = drained + waited;
    if paused == 0 {
        return 0;
    }
    if event.id < FIRST_SESSION_ID && !matches!(event.kind, Kind::Adjust) {
        let _ = LOCAL.try_with(|l| {
            l.calibration_waited
                .set(l.calibration_waited.get() + waited)
        });
    }
    report_pause(ring, paused, cpu.map(|c| c.clock))
}

/// Pushes the adjustment for a pause of `wall` ns in a push that started at CPU clock `cpu`;
/// returns the pause's thread CPU time (0 unless measured).
#[cold]
fn report_pause(ring: &Ring, wall: u64, cpu: Option<u64>) -> u64 {
    let adjust = Event::new(Kind::Adjust, 0, wall);
    let (pushed, cpu) = match cpu.map(|c| thread_cpu().saturating_sub(c)) {
        None => (ring.push(Kind::Adjust, 0, wall), 0),
        Some(cpu) => (
            ring.push_with_cpu_within(adjust, cpu, super::ring::FULL_WAIT, || {}),
            cpu,
        ),
    };
    if !pushed {
        recording_lost();
    }
    cpu
}

/// Empties the thread's full ring on the thread itself; returns how long that took (ns). The
/// collector thread or a snapshot may hold the collector lock (and then drain the ring
/// itself): the thread retries for up to the ring's wait limit.
#[cold]
fn drain_own_ring(ring: &Ring) -> u64 {
    let start = now();
    let deadline = start + super::ring::FULL_WAIT.as_nanos() as u64;
    while !super::collector::drain_own(ring) && ring.lacks_room(1) && now() < deadline {
        std::thread::yield_now();
    }
    now().saturating_sub(start)
}

/// Calibration: the thread CPU time the calibration probes waited for room in the ring since
/// the last call (and resets it), on this thread.
pub fn take_calibration_cpu_waits() -> u64 {
    LOCAL
        .try_with(|l| l.calibration_cpu_waits.replace(0))
        .unwrap_or(0)
}

/// Calibration: the wall time its probes waited for room in the ring since the last call (and
/// resets it), on this thread.
pub fn take_calibration_waited() -> u64 {
    LOCAL
        .try_with(|l| l.calibration_waited.replace(0))
        .unwrap_or(0)
}

/// Calibration: [`take_calibration_inner`] in thread CPU time.
pub fn take_calibration_cpu_inner() -> u64 {
    LOCAL
        .try_with(|l| l.calibration_cpu.replace((0, 0)).1)
        .unwrap_or(0)
}

/// Calibration: the probes' own durations summed since the last call (and resets it), ns.
pub fn take_calibration_probes() -> u64 {
    LOCAL
        .try_with(|l| ticks_to_ns(l.calibration_probes.replace(0)))
        .unwrap_or(0)
}

/// Calibration: the inner time summed since the last call (and resets it), on this thread.
pub fn take_calibration_inner() -> u64 {
    LOCAL
        .try_with(|l| {
            let (_, sum) = l.calibration.get();
            l.calibration.set((0, 0));
            ticks_to_ns(sum)
        })
        .unwrap_or(0)
}

/// Makes `id` an active, already invoked method (a root if `root`), without a JVM (benchmarks).
#[doc(hidden)]
pub fn bench_method(id: u32, root: bool) {
    flags::set(id, ACTIVE | INVOKED | if root { ROOT } else { 0 });
}

/// Gives the current thread a ring named `name` without a JVM (benchmarks, tests).
#[doc(hidden)]
pub fn prime_thread(name: &str) {
    prime_thread_with(name, super::ring::RING_EVENTS);
}

/// [`prime_thread`] with a ring of `events` slots (tests that fill it).
#[doc(hidden)]
pub fn prime_thread_with(name: &str, events: usize) {
    LOCAL.with(|l| {
        l.sync();
        let ring = Arc::new(Ring::with_capacity(next_thread_key(), name.into(), events));
        RINGS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::clone(&ring));
        *l.ring.borrow_mut() = Some(ring);
    });
}

/// The free slots of this thread's ring (tests that fill it).
#[cfg(test)]
pub(crate) fn own_ring_free() -> usize {
    LOCAL.with(|l| {
        l.ring.borrow().as_ref().map_or(0, |r| {
            (0..=super::ring::RING_EVENTS)
                .take_while(|&n| !r.lacks_room(n))
                .last()
                .unwrap_or(0)
        })
    })
}
