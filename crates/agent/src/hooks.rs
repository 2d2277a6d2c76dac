//! The hot path: what the natives of the bootstrap class `ferrofluid/Hooks` (`ffi::natives`)
//! do for every probe.
//!
//! The natives hand each probe to the session's engine (`crate::engine`, a static call chosen
//! by one byte); this module is the call recorder that engines recording calling contexts use.
//! While no thread is inside a root (`Hooks.active` is 0), only roots' probes come
//! here; the others return in Java (`ferrofluid_classfile::hooks_class`). Per call: one load of
//! the method's flags; for active methods one thread-local access, and when
//! the thread is inside a root's dynamic extent (or every thread is profiled) a clock read and a
//! push into the thread's own ring. No lock, no Java heap allocation. A thread-local guard makes the
//! hooks ignore probes reached while the agent itself works on the thread (lazy revelation, naming
//! the thread), so nothing recurses.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ferrofluid_jvmti::{sys, Object};

use crate::flags::{self, ACTIVE, DROPPED, INVOKED, PENDING, ROOT};
use crate::ring::{Event, Kind, ProbeStart, Ring};

/// Bumped when instrumentation changes: threads then forget their root depth and ring.
pub static GENERATION: AtomicU32 = AtomicU32::new(1);
/// Events are recorded only while collecting; root depths are tracked always.
pub static COLLECTING: AtomicBool = AtomicBool::new(false);
/// Bumped each time collecting starts. A thread records only inside a root frame it entered
/// while collecting in this epoch: a root already running when collecting started would
/// otherwise show its callees at the top of the tree and end in an unmatched exit.
pub static EPOCH: AtomicU32 = AtomicU32::new(1);
/// No root: every instrumented method records on every thread.
pub static ALL_THREADS: AtomicBool = AtomicBool::new(false);
/// The session measures thread CPU time too (`cpu` option): recorded probes read the thread's
/// CPU clock and pauses are measured in CPU time as well.
pub static CPU: AtomicBool = AtomicBool::new(false);
/// Every ring of a thread that recorded something; the collector drains them.
pub static RINGS: Mutex<Vec<Arc<Ring>>> = Mutex::new(Vec::new());
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);
/// The receiver-site id `Thread.start()` passes its thread with (see [`thread_start`]).
pub const THREAD_START_SITE: u32 = u32::MAX;

/// The method id reserved for calibration (`ferrofluid/Calibrate.empty`, the calibrated callee).
pub const CALIBRATION_ID: u32 = 0;
/// The id of `ferrofluid/Calibrate.caller`, the calibration's root, which calls the callee.
pub const CALIBRATION_CALLER_ID: u32 = 1;
/// Sessions' method ids start here, above the calibration's.
pub const FIRST_SESSION_ID: u32 = 2;

/// The id of the adjust event that marks where a thread's recording begins, before its first
/// event ([`begin_word`]): the collector takes a thread's events only from a mark of its own
/// epoch on, and closes at a mark the frames a recording left open.
pub const BEGIN_ID: u32 = u32::MAX;

/// The second word of a [`BEGIN_ID`] mark: the [`EPOCH`] of the recording it begins, and how
/// many events the ring had dropped then (the low 32 bits of [`Ring::dropped`]).
pub fn begin_word(epoch: u32, dropped: u64) -> u64 {
    u64::from(epoch) << 32 | (dropped & u64::from(u32::MAX))
}

/// The epoch and drop count of a [`begin_word`].
pub fn begin_fields(word: u64) -> (u32, u32) {
    ((word >> 32) as u32, word as u32)
}

/// The id that the probes of method `id` pass when they must reach the agent even while no thread
/// is inside a root's extent (a root, a method an engine selects alone): `!id`, a negative int.
/// The Java bodies of `Hooks.enter`/`exit`/`unwind`/`exitBlocks`/`unwindBlocks` return without
/// a JNI call for a non-negative id while `Hooks.active` is 0
/// (`ferrofluid_classfile::hooks_class`).
pub const fn always_native(id: u32) -> u32 {
    !id
}

/// The method id a probe passed (undoing [`always_native`]).
#[inline]
pub const fn method_id(id: u32) -> u32 {
    if (id as i32) < 0 {
        !id
    } else {
        id
    }
}

struct Local {
    /// Calibration, in [`ticks`]: when the last entry probe of [`CALIBRATION_ID`] ended, and
    /// the sum of its inner times (from there to the start of its exit probe).
    calibration: Cell<(u64, u64)>,
    /// Calibration, in [`ticks`]: the probes' own durations (callee's and caller's), which the
    /// events carry and profiles subtract as measured (waits for room in the ring included,
    /// which profiles factor out as pauses): the calibration leaves them out of its costs.
    calibration_probes: Cell<u64>,
    /// Calibration with the CPU clock: the probe's inner CPU time as `calibration`, and the
    /// time its probes waited for room in a full ring, in thread CPU time.
    calibration_cpu: Cell<(u64, u64)>,
    calibration_cpu_waits: Cell<u64>,
    /// Calibration: wall time its probes waited for room in the ring (yielding the CPU), which
    /// is not the scheduler taking the CPU away.
    calibration_waited: Cell<u64>,
    generation: Cell<u32>,
    /// Subtracted from the OS thread's CPU clock to give this state's own ([`thread_cpu`]):
    /// 0 on a platform thread; on a carrier, what makes the mounted virtual thread's clock
    /// count only its own time on carriers, and the carrier's not count its virtual threads'.
    cpu_offset: Cell<u64>,
    /// The agent is working on this thread: probes are ignored.
    busy: Cell<bool>,
    /// Root frames open on this thread.
    in_root: Cell<u32>,
    /// The [`EPOCH`] in which this thread records (0: it does not), and the root depth outside
    /// the root frame that began the recording: it stops when that frame exits, or when one of
    /// its events is dropped.
    recording: Cell<(u32, u32)>,
    /// A recording began and its mark ([`BEGIN_ID`]) is not in the ring yet.
    begin: Cell<bool>,
    /// The epoch in which this thread counted itself inside a root's extent for `Hooks.active`
    /// (`site_flags`), 0 if it is not counted.
    counted: Cell<u32>,
    ring: RefCell<Option<Arc<Ring>>>,
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            calibration: Cell::new((0, 0)),
            calibration_probes: Cell::new(0),
            calibration_cpu: Cell::new((0, 0)),
            calibration_cpu_waits: Cell::new(0),
            calibration_waited: Cell::new(0),
            generation: Cell::new(0),
            cpu_offset: Cell::new(0),
            busy: Cell::new(false),
            in_root: Cell::new(0),
            recording: Cell::new((0, 0)),
            begin: Cell::new(false),
            counted: Cell::new(0),
            ring: RefCell::new(None),
        }
    };
}

/// Monotonic clock, ns: the TSC scaled to ns once [`init_clock`] found it reliable (16 ns per read
/// instead of 40 for `clock_gettime` on the development VM, and two reads per recorded call),
/// `CLOCK_MONOTONIC` otherwise.
#[inline]
pub fn now() -> u64 {
    time_at(ticks())
}

/// The probes' clock, in ticks: the TSC if [`init_clock`] found it reliable, else
/// `CLOCK_MONOTONIC` ns. A probe reads it first thing and again just before it publishes its
/// event, so that the event carries the probe's own duration (docs/decisions/0012-probes-measure-themselves.md).
#[inline]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if TSC_SCALE.load(Ordering::Relaxed) != 0 {
        return ferrofluid_jvmti::os::rdtsc();
    }
    monotonic()
}

/// The monotonic time (ns) of a [`ticks`] reading.
#[inline]
pub fn time_at(ticks: u64) -> u64 {
    if TSC_SCALE.load(Ordering::Relaxed) == 0 {
        return ticks;
    }
    NS_BASE.load(Ordering::Relaxed)
        + ticks_to_ns(ticks.wrapping_sub(TSC_BASE.load(Ordering::Relaxed)))
}

/// A duration in [`ticks`], in ns.
#[inline]
pub fn ticks_to_ns(ticks: u64) -> u64 {
    let scale = f64::from_bits(TSC_SCALE.load(Ordering::Relaxed));
    if scale > 0.0 {
        (ticks as f64 * scale) as u64
    } else {
        ticks
    }
}

/// The calling thread's CPU clock, ns (user and system time): the Java thread's, a virtual
/// thread's included (its time on each carrier it ran on, [`swap_carried`]). A system call: ~1 µs
/// on the development VM (docs/PERFORMANCE.md, "Thread CPU time"), so only read with the `cpu`
/// option.
#[inline]
pub fn thread_cpu() -> u64 {
    let offset = LOCAL.try_with(|l| l.cpu_offset.get()).unwrap_or(0);
    ferrofluid_jvmti::os::thread_cpu_ns().wrapping_sub(offset)
}

/// The thread's CPU clock if the session measures it.
#[inline]
fn cpu_stamp() -> Option<u64> {
    if CPU.load(Ordering::Relaxed) {
        Some(thread_cpu())
    } else {
        None
    }
}

/// Both clocks at the start of agent work on a thread (the CPU clock only if measured).
#[derive(Clone, Copy)]
struct Start {
    wall: u64,
    cpu: Option<u64>,
}

impl Start {
    fn now() -> Start {
        Start {
            wall: now(),
            cpu: cpu_stamp(),
        }
    }

    /// The pause from this start until now: wall, and CPU as measured.
    fn elapsed(self) -> (u64, Option<u64>) {
        (
            now().saturating_sub(self.wall),
            self.cpu.map(|c| thread_cpu().saturating_sub(c)),
        )
    }
}

#[inline]
fn monotonic() -> u64 {
    ferrofluid_jvmti::os::monotonic_ns()
}

/// ns per TSC tick (f64 bits); 0: use `CLOCK_MONOTONIC`.
static TSC_SCALE: AtomicU64 = AtomicU64::new(0);
static TSC_BASE: AtomicU64 = AtomicU64::new(0);
static NS_BASE: AtomicU64 = AtomicU64::new(0);

/// Uses the TSC for timestamps if the kernel itself uses it as its clock source (which it does only
/// when the TSC is invariant and synchronised across CPUs), scaled against `CLOCK_MONOTONIC` over
/// 20 ms, unless the environment has `FERROFLUID_CLOCK=monotonic`. Called once, before any probe
/// records.
pub fn init_clock() {
    #[cfg(target_arch = "x86_64")]
    {
        if TSC_SCALE.load(Ordering::SeqCst) != 0 {
            return;
        }
        // Escape hatch, and the A/B switch of the benchmark.
        if std::env::var_os("FERROFLUID_CLOCK").is_some_and(|v| v == "monotonic") {
            log::info!("timestamps: CLOCK_MONOTONIC (FERROFLUID_CLOCK)");
            return;
        }
        let source = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .unwrap_or_default();
        if source.trim() != "tsc" {
            log::info!(
                "timestamps: CLOCK_MONOTONIC (clock source {})",
                source.trim()
            );
            return;
        }
        let (t0, n0) = tsc_and_monotonic();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (t1, n1) = tsc_and_monotonic();
        if t1 <= t0 || n1 <= n0 {
            return;
        }
        let scale = (n1 - n0) as f64 / (t1 - t0) as f64;
        TSC_BASE.store(t1, Ordering::SeqCst);
        NS_BASE.store(n1, Ordering::SeqCst);
        TSC_SCALE.store(scale.to_bits(), Ordering::SeqCst);
        log::info!("timestamps: TSC at {:.3} GHz", 1.0 / scale);
    }
}

/// The TSC and `CLOCK_MONOTONIC` read together: of a few tries, the one whose monotonic read
/// the fewest TSC ticks bracket (the TSC at its middle). A thread preempted between two plain
/// reads skews the scale by the preemption over the 20 ms window: on a busy CI machine 2%, which
/// made a method's thread CPU time exceed its wall time.
#[cfg(target_arch = "x86_64")]
fn tsc_and_monotonic() -> (u64, u64) {
    let tsc = ferrofluid_jvmti::os::rdtsc;
    (0..16)
        .map(|_| {
            let before = tsc();
            let ns = monotonic();
            let width = tsc().wrapping_sub(before);
            (width, before.wrapping_add(width / 2), ns)
        })
        .min_by_key(|&(width, _, _)| width)
        .map_or((0, 0), |(_, tsc, ns)| (tsc, ns))
}

impl Local {
    #[inline]
    fn sync_generation(&self) {
        let g = GENERATION.load(Ordering::Acquire);
        if self.generation.get() != g {
            self.generation.set(g);
            self.in_root.set(0);
            self.recording.set((0, 0));
            self.begin.set(false);
            // The count was reset with the session (`site_flags::reset`): this does nothing then.
            let counted = self.counted.replace(0);
            if counted != 0 {
                crate::site_flags::thread_left(std::ptr::null_mut(), counted);
            }
            if let Some(old) = self.ring.borrow_mut().take() {
                old.closed.store(true, Ordering::Release);
            }
        }
    }

    /// Whether an entry at root depth `depth` (before it) is recorded, while collecting: inside
    /// a recorded root frame, or a root's entry, which begins a recording.
    #[inline(always)]
    fn records_entry(&self, root: bool, depth: u32) -> bool {
        let epoch = EPOCH.load(Ordering::Relaxed);
        if self.recording.get().0 == epoch {
            return true;
        }
        if root {
            self.recording.set((epoch, depth));
            self.begin.set(true);
        }
        root
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

    /// Whether an exit is recorded, while collecting: inside a recorded root frame.
    #[inline(always)]
    fn records_exit(&self) -> bool {
        self.recording.get().0 == EPOCH.load(Ordering::Relaxed)
    }

    /// A root frame exited, leaving root depth `depth`: the recording it began ends.
    #[inline(always)]
    fn root_exited(&self, depth: u32) {
        if self.recording.get().1 == depth {
            self.recording.set((0, 0));
        }
    }

    /// The thread's root depth leaves 0: it counts itself for `Hooks.active` before any of its
    /// site probes runs. Not with no root (every thread records, and there are no sites).
    #[inline]
    fn entered_extent(&self, env: *mut sys::JNIEnv) {
        if self.counted.get() == 0 && !ALL_THREADS.load(Ordering::Relaxed) {
            self.counted.set(crate::site_flags::thread_entered(env));
        }
    }

    /// The thread's root depth returns to 0.
    #[inline]
    fn left_extent(&self, env: *mut sys::JNIEnv) {
        let counted = self.counted.replace(0);
        if counted != 0 {
            crate::site_flags::thread_left(env, counted);
        }
    }

    /// Pushes the pause adjustment for agent work that took `wall` ns (and `cpu` ns of thread
    /// CPU time, if measured).
    fn push_pause(&self, env: *mut sys::JNIEnv, id: u32, wall: u64, cpu: Option<u64>) {
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

    #[cold]
    fn new_ring(&self, env: *mut sys::JNIEnv) -> Arc<Ring> {
        self.busy.set(true);
        let (java_id, name) = crate::jvm::current_thread_identity(env);
        self.busy.set(false);
        let ring = match crate::vthread::mounted_key() {
            Some(key) => crate::vthread::ring(key, java_id, name),
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

/// A new recorder key for a thread's ring.
pub(crate) fn next_thread_key() -> u64 {
    NEXT_THREAD.fetch_add(1, Ordering::Relaxed)
}

/// The per-thread state that follows a virtual thread from carrier to carrier (`vthread`).
#[derive(Default)]
pub(crate) struct Carried {
    generation: u32,
    in_root: u32,
    recording: (u32, u32),
    begin: bool,
    counted: u32,
    /// Its CPU clock ([`thread_cpu`]) when it was put aside (0: a new virtual thread).
    cpu: u64,
    pub ring: Option<Arc<Ring>>,
}

impl Carried {
    /// Nothing to keep: outside every root, uncounted, no ring.
    pub fn is_idle(&self) -> bool {
        self.in_root == 0 && self.counted == 0 && self.ring.is_none()
    }

    /// Root frames open.
    pub fn in_root(&self) -> u32 {
        self.in_root
    }
}

/// Puts `carried` in this OS thread's state and returns what was there.
pub(crate) fn swap_carried(carried: Carried) -> Carried {
    let mut carried = Some(carried);
    LOCAL
        .try_with(|l| {
            let c = carried.take().unwrap_or_default();
            // The CPU clock goes with the state: the outgoing one's stops here, the incoming
            // one's resumes where it stopped (read only when CPU time is measured).
            let cpu = if CPU.load(Ordering::Relaxed) {
                let now = ferrofluid_jvmti::os::thread_cpu_ns();
                now.wrapping_sub(l.cpu_offset.replace(now.wrapping_sub(c.cpu)))
            } else {
                l.cpu_offset.set(0);
                0
            };
            Carried {
                generation: l.generation.replace(c.generation),
                in_root: l.in_root.replace(c.in_root),
                recording: l.recording.replace(c.recording),
                begin: l.begin.replace(c.begin),
                counted: l.counted.replace(c.counted),
                cpu,
                ring: std::mem::replace(&mut *l.ring.borrow_mut(), c.ring),
            }
        })
        .unwrap_or_default()
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

/// The entry probe of a calling-context engine that keeps its own per-thread state: the
/// extents, roots, revelation and agent-work rules of [`enter`], with `record(method id)` in
/// place of the ring push (called while collecting, inside a root's extent).
#[inline(always)]
pub(crate) fn enter_gated(env: *mut sys::JNIEnv, id: i32, start: u64, record: impl FnOnce(u32)) {
    enter_with(env, id, start, |_, id, _| record(id));
}

/// The exit probe as [`enter_gated`] is the entry probe.
#[inline(always)]
pub(crate) fn exit_gated(env: *mut sys::JNIEnv, id: i32, start: u64, record: impl FnOnce(u32)) {
    exit_with(env, id, start, |_, id, _| record(id));
}

#[inline(always)]
fn enter_with(
    env: *mut sys::JNIEnv,
    id: i32,
    mut start: u64,
    record: impl FnOnce(&Local, u32, u64),
) {
    let id = method_id(id as u32);
    let f = flags::get(id);
    if f & (ACTIVE | DROPPED) != ACTIVE {
        return;
    }
    let _ = LOCAL.try_with(|l| {
        if l.busy.get() {
            return;
        }
        l.sync_generation();
        let root = f & ROOT != 0 || ALL_THREADS.load(Ordering::Relaxed);
        let depth = l.in_root.get();
        if depth == 0 && !root {
            return;
        }
        if root {
            l.in_root.set(depth + 1);
            if depth == 0 {
                l.entered_extent(env);
            }
        }
        if f & (INVOKED | PENDING) != INVOKED {
            if f & INVOKED == 0 {
                first_invocation(l, env, id);
                // Revelation is factored out as a pause, not as this probe's time.
                start = ticks();
            } else if COLLECTING.load(Ordering::Relaxed) {
                // `reveal=async`: its callees are not instrumented yet.
                crate::session::UNREVEALED.fetch_add(1, Ordering::Relaxed);
            }
        }
        if COLLECTING.load(Ordering::Relaxed) && l.records_entry(root, depth) {
            record(l, id, start);
        }
    });
}

/// Answer bits of the `count` engine's natives ([`counted_entry`], [`counted_exit`],
/// [`counted_state`]), as `ferrofluid/Counts` reads them: count this probe; the thread records
/// from now on; the method's entries may count in Java without asking; a virtual thread.
pub(crate) const COUNT_RECORD: u32 = 1;
pub(crate) const COUNT_RECORDING: u32 = 2;
pub(crate) const COUNT_READY: u32 = 4;
pub(crate) const COUNT_VIRTUAL: u32 = 8;

/// The `count` engine's entry (its calling contexts are kept in Java): a root's entry (`!id`),
/// or the first entry of a method in a recording. The rules of [`enter`]: root depth, extent,
/// lazy revelation, agent work ignored; the answer says whether the entry counts, whether the
/// thread records, and (not a root) whether the method's entries need no more asking: it is
/// active and revealed. With no root every thread records, and only first entries come here.
pub(crate) fn counted_entry(env: *mut sys::JNIEnv, id: i32) -> u32 {
    let root_probe = id < 0;
    let id = method_id(id as u32);
    let f = flags::get(id);
    if f & (ACTIVE | DROPPED) != ACTIVE {
        return 0;
    }
    let all = ALL_THREADS.load(Ordering::Relaxed);
    LOCAL
        .try_with(|l| {
            if l.busy.get() {
                return 0;
            }
            l.sync_generation();
            let root = root_probe && f & ROOT != 0;
            let depth = l.in_root.get();
            if root {
                l.in_root.set(depth + 1);
                if depth == 0 {
                    l.entered_extent(env);
                }
            } else if depth == 0 && !all {
                return 0;
            }
            if f & INVOKED == 0 {
                first_invocation(l, env, id);
            } else if f & PENDING != 0 && COLLECTING.load(Ordering::Relaxed) {
                crate::session::UNREVEALED.fetch_add(1, Ordering::Relaxed);
            }
            let mut out = 0;
            if COLLECTING.load(Ordering::Relaxed) {
                if all || l.records_entry(root, depth) {
                    out |= COUNT_RECORD;
                }
                if all || l.records_exit() {
                    out |= COUNT_RECORDING;
                }
            }
            if !root && flags::get(id) & (ACTIVE | INVOKED | PENDING) == ACTIVE | INVOKED {
                out |= COUNT_READY;
            }
            out
        })
        .unwrap_or(0)
}

/// The `count` engine's exit of a root (`!id`), as [`exit`]: whether it counts and whether the
/// thread still records after it.
pub(crate) fn counted_exit(env: *mut sys::JNIEnv, id: i32) -> u32 {
    let mut out = 0;
    exit_with(env, id, 0, |_, _, _| out |= COUNT_RECORD);
    out | counted_state() & COUNT_RECORDING
}

/// Whether this thread records now (the `count` engine's first probe of a thread in a
/// recording), and whether it is a virtual thread.
pub(crate) fn counted_state() -> u32 {
    let virtual_thread = if crate::vthread::mounted_key().is_some() {
        COUNT_VIRTUAL
    } else {
        0
    };
    let recording = COLLECTING.load(Ordering::Relaxed)
        && (ALL_THREADS.load(Ordering::Relaxed)
            || LOCAL
                .try_with(|l| {
                    l.sync_generation();
                    !l.busy.get() && l.records_exit()
                })
                .unwrap_or(false));
    virtual_thread | if recording { COUNT_RECORDING } else { 0 }
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

#[inline(always)]
fn exit_with(env: *mut sys::JNIEnv, id: i32, start: u64, record: impl FnOnce(&Local, u32, u64)) {
    let id = method_id(id as u32);
    let f = flags::get(id);
    if f & ACTIVE == 0 {
        return;
    }
    let _ = LOCAL.try_with(|l| {
        if l.busy.get() {
            return;
        }
        l.sync_generation();
        let depth = l.in_root.get();
        if depth == 0 {
            return;
        }
        if COLLECTING.load(Ordering::Relaxed) && l.records_exit() {
            record(l, id, start);
        }
        if f & ROOT != 0 || ALL_THREADS.load(Ordering::Relaxed) {
            l.in_root.set(depth - 1);
            l.root_exited(depth - 1);
            if depth == 1 {
                l.left_extent(env);
            }
        }
    });
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

/// Lazy revelation on the first invocation of `id`: its callees are instrumented before it
/// proceeds, and the time that took is factored out of the thread's open frames.
#[cold]
fn first_invocation(l: &Local, env: *mut sys::JNIEnv, id: u32) {
    l.busy.set(true);
    let start = Start::now();
    ferrofluid_jvmti::ffi_guard("first invocation", (), || {
        crate::ffi::natives::with_env(env, |jni| crate::session::first_invocation(jni, id))
    });
    let (wall, cpu) = start.elapsed();
    l.busy.set(false);
    if COLLECTING.load(Ordering::Relaxed) {
        l.push_pause(env, id, wall, cpu);
    }
}

/// Whether revelation may run on this thread now (reflection, method handles, JNI calls): it
/// is inside a root's dynamic extent and not already doing agent work. With no root every
/// method is instrumented already.
#[inline]
pub fn revealing() -> bool {
    if ALL_THREADS.load(Ordering::Relaxed) {
        return false;
    }
    LOCAL
        .try_with(|l| {
            l.sync_generation();
            !l.busy.get() && l.in_root.get() > 0
        })
        .unwrap_or(false)
}

/// Whether this thread is inside a root's dynamic extent, busy with agent work or not.
pub fn in_root() -> bool {
    LOCAL
        .try_with(|l| {
            l.sync_generation();
            l.in_root.get() > 0
        })
        .unwrap_or(false)
}

/// Runs revelation work `f` on this application thread: probes it reaches are ignored, and its
/// time is factored out of the thread's open frames, as lazy revelation's is.
#[cold]
pub fn agent_work(env: *mut sys::JNIEnv, f: impl FnOnce()) {
    let _ = LOCAL.try_with(|l| {
        l.busy.set(true);
        let start = Start::now();
        ferrofluid_jvmti::ffi_guard("revelation", (), f);
        let (wall, cpu) = start.elapsed();
        l.busy.set(false);
        if l.in_root.get() > 0 && COLLECTING.load(Ordering::Relaxed) {
            l.push_pause(env, 0, wall, cpu);
        }
    });
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
    let wait = crate::ring::FULL_WAIT;
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
            ring.push_with_cpu_within(adjust, cpu, crate::ring::FULL_WAIT, || {}),
            cpu,
        ),
    };
    if !pushed {
        recording_lost();
    }
    cpu
}

/// An event of this thread was dropped (its ring stayed full): the thread's tree can no longer
/// follow its stack, so its recording ends here, as if its root had returned, and the next
/// root it enters begins a new one. The collector closes the frames left open (`collector`).
#[cold]
fn recording_lost() {
    let _ = LOCAL.try_with(|l| {
        l.recording.set((0, 0));
        l.begin.set(false);
    });
}

/// Empties the thread's full ring on the thread itself; returns how long that took (ns). The
/// collector thread or a snapshot may hold the collector lock (and then drain the ring
/// itself): the thread retries for up to the ring's wait limit.
#[cold]
fn drain_own_ring(ring: &Ring) -> u64 {
    let start = now();
    let deadline = start + crate::ring::FULL_WAIT.as_nanos() as u64;
    while !crate::collector::drain_own(ring) && ring.lacks_room(1) && now() < deadline {
        std::thread::yield_now();
    }
    now().saturating_sub(start)
}

/// Runs agent work done on an application thread outside the hooks (the class-load hook,
/// class preparation): probes it reaches are ignored, since the Java code it runs is the
/// agent's (JVMTI `AddModuleReads` calls `jdk.internal.module.Modules.addReads`), and its time
/// is factored out of the thread's open frames, as lazy revelation's is. Work nested in a
/// revelation is already inside that pause. `work` runs under `ffi_guard` (named `what`), so
/// that a panic in it cannot leave the thread's probes off.
pub fn agent_callback(env: *mut sys::JNIEnv, what: &'static str, work: impl FnOnce()) {
    let start = Start::now();
    let nested = LOCAL.try_with(|l| l.busy.replace(true)).unwrap_or(true);
    ferrofluid_jvmti::ffi_guard(what, (), work);
    if nested {
        return;
    }
    let (wall, cpu) = start.elapsed();
    let _ = LOCAL.try_with(|l| {
        l.busy.set(false);
        if l.in_root.get() > 0 && COLLECTING.load(Ordering::Relaxed) {
            l.push_pause(env, 0, wall, cpu);
        }
    });
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

/// Tag of a `Thread` object started inside a root (receiver classes get positive tags).
const STARTED_IN_ROOT: i64 = -1;

/// `Thread.start()` was entered on `thread` by this thread, inside a root's extent: the thread
/// is marked, so that [`thread_start`] knows it for the one started here.
fn thread_starting(thread: Object<'_>) {
    let Some(jvmti) = crate::jvm::jvmti() else {
        return;
    };
    if let Err(e) = jvmti.set_tag(thread, STARTED_IN_ROOT) {
        log::warn!("marking a thread started inside a root: {e}");
    }
}

/// A thread starts (JVMTI ThreadStart, on the new thread): if a thread inside a root started it
/// (its `Thread` object carries the mark), it is inside the root's extent for its whole life.
pub(crate) fn thread_start(env: *mut sys::JNIEnv, thread: Option<Object<'_>>) {
    crate::engine::current().thread_start();
    let (Some(jvmti), Some(thread)) = (crate::jvm::jvmti(), thread) else {
        return;
    };
    if jvmti.tag(thread).ok() != Some(STARTED_IN_ROOT) {
        return;
    }
    let _ = jvmti.set_tag(thread, 0);
    let _ = LOCAL.try_with(|l| {
        l.sync_generation();
        l.in_root.set(1);
        // Its whole life is inside the extent: it records if collecting has begun.
        if COLLECTING.load(Ordering::Relaxed) {
            l.recording.set((EPOCH.load(Ordering::Relaxed), 0));
            l.begin.set(true);
        }
        l.entered_extent(env);
    });
}

/// The current thread ends (JVMTI ThreadEnd): its ring is closed and released.
pub fn thread_end(env: *mut sys::JNIEnv) {
    crate::engine::current().thread_end();
    let _ = LOCAL.try_with(|l| {
        l.recording.set((0, 0));
        l.begin.set(false);
        if l.in_root.replace(0) > 0 {
            l.left_extent(env);
        }
        if let Some(ring) = l.ring.borrow_mut().take() {
            ring.closed.store(true, Ordering::Release);
        }
    });
}

/// `Hooks.receiver(null, site)`: a deferred site, through `Hooks.site` (or a receiver site on
/// null, about to throw).
#[inline]
pub(crate) fn receiver_absent(env: *mut sys::JNIEnv, site: u32) {
    if flags::SITES.get(site) & flags::FIRED == 0 && in_extent() {
        crate::receiver::reached_without_receiver(env, site);
    }
}

/// `Hooks.receiver(receiver, site)` with a receiver: a receiver site, or `Thread.start()`.
#[inline]
pub(crate) fn receiver(env: *mut sys::JNIEnv, receiver: Object<'_>, site: u32) {
    if !in_extent() {
        return;
    }
    match site {
        THREAD_START_SITE => thread_starting(receiver),
        site => crate::receiver::reached(env, receiver, site),
    }
}

/// Whether this thread is inside a root's dynamic extent (and the agent is not busy on it).
fn in_extent() -> bool {
    LOCAL
        .try_with(|l| {
            if l.busy.get() {
                return false;
            }
            l.sync_generation();
            l.in_root.get() > 0
        })
        .unwrap_or(false)
}

/// Runs agent work on an application thread with the probes off, and factors its time out of
/// the thread's open frames, as lazy revelation does.
pub fn as_pause(env: *mut sys::JNIEnv, work: impl FnOnce()) {
    let mut work = Some(work);
    let _ = LOCAL.try_with(|l| {
        l.busy.set(true);
        let start = Start::now();
        if let Some(work) = work.take() {
            work();
        }
        let (wall, cpu) = start.elapsed();
        l.busy.set(false);
        if COLLECTING.load(Ordering::Relaxed) {
            l.push_pause(env, 0, wall, cpu);
        }
    });
}

/// Calls the hooks as the natives do, through the active engine, without a JVM: for the
/// benchmark and tests. `env` is never used unless a ring must be created, which
/// [`prime_thread`] does first.
#[doc(hidden)]
pub fn bench_pair(id: u32) {
    crate::engine::enter(std::ptr::null_mut(), id as i32, ticks());
    crate::engine::exit(std::ptr::null_mut(), id as i32, ticks());
}

/// Enters `id` only (e.g. a root, for the frames that follow), without a JVM (benchmarks).
#[doc(hidden)]
pub fn bench_enter(id: u32) {
    crate::engine::enter(std::ptr::null_mut(), id as i32, ticks());
}

/// Exits `id` only, without a JVM (benchmarks, tests).
#[doc(hidden)]
pub fn bench_exit(id: u32) {
    crate::engine::exit(std::ptr::null_mut(), id as i32, ticks());
}

/// Makes `id` an active, already invoked method (a root if `root`), without a JVM (benchmarks).
#[doc(hidden)]
pub fn bench_method(id: u32, root: bool) {
    flags::set(id, ACTIVE | INVOKED | if root { ROOT } else { 0 });
}

/// Gives the current thread a ring named `name` without a JVM (benchmarks, tests).
#[doc(hidden)]
pub fn prime_thread(name: &str) {
    prime_thread_with(name, crate::ring::RING_EVENTS);
}

/// [`prime_thread`] with a ring of `events` slots (tests that fill it).
#[doc(hidden)]
pub fn prime_thread_with(name: &str, events: usize) {
    LOCAL.with(|l| {
        l.sync_generation();
        let ring = Arc::new(Ring::with_capacity(
            NEXT_THREAD.fetch_add(1, Ordering::Relaxed),
            name.into(),
            events,
        ));
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
            (0..=crate::ring::RING_EVENTS)
                .take_while(|&n| !r.lacks_room(n))
                .last()
                .unwrap_or(0)
        })
    })
}
