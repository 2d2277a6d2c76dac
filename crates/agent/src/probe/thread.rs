//! The probes' per-thread state and the switches they read: the rules every calling-context
//! engine's probes share. A thread's root depth (the root frames open on it), whether it
//! records (inside a root frame entered while collecting), its count in `Hooks.active`, lazy
//! revelation at a method's first invocation, and agent work done on an application thread
//! (probes ignored while it runs, its time factored out of the thread's open frames).
//!
//! While no thread is inside a root (`Hooks.active` is 0), only roots' probes reach the agent;
//! the others return in Java (`ferrofluid_classfile::hooks_class`). Per call: one load of the
//! method's flags; for active methods one thread-local access. No lock, no Java heap
//! allocation. A thread-local guard makes the probes ignore what they reach while the agent
//! itself works on the thread (lazy revelation, naming the thread), so nothing recurses.
//!
//! A thread's state lives in a Rust thread-local of its OS thread: a virtual thread's is
//! swapped in and out of its carrier's ([`swap_carried`], [`super::vthread`]).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use ferrofluid_jvmti::sys;

use super::clock::{now, ticks};
use super::flags::{self, ACTIVE, DROPPED, INVOKED, PENDING, ROOT};
use super::ring::Ring;
use super::upcalls::upcalls;

/// What every probe reads besides its method's flags: switches the runtime sets between and
/// during sessions, and counters the probes bump.
pub struct Switches {
    /// Bumped when instrumentation changes: threads then forget their root depth and ring.
    pub generation: AtomicU32,
    /// Events are recorded only while collecting; root depths are tracked always.
    pub collecting: AtomicBool,
    /// Bumped each time collecting starts. A thread records only inside a root frame it
    /// entered while collecting in this epoch: a root already running when collecting started
    /// would otherwise show its callees at the top of the tree and end in an unmatched exit.
    pub epoch: AtomicU32,
    /// No root: every instrumented method records on every thread.
    pub all_threads: AtomicBool,
    /// The session measures thread CPU time too (`cpu` option): recorded probes read the
    /// thread's CPU clock and pauses are measured in CPU time as well.
    pub cpu: AtomicBool,
    /// Under `reveal=async`, calls that ran before what they call was instrumented: invocations
    /// of a method whose first invocation waits for the reveal thread, and the deferred sites
    /// and receivers queued (once each, when queued). Their callees' time is in their self time
    /// and their callees' calls are not counted; a lower bound of what the profile misses (a
    /// call into an uninstrumented method of a revealed class cannot be told apart).
    pub unrevealed: AtomicU64,
    /// The next recorder key of a thread's ring.
    next_thread: AtomicU64,
}

// Process-wide: the probes are JVM natives without user data.
pub static SWITCHES: Switches = Switches {
    generation: AtomicU32::new(1),
    collecting: AtomicBool::new(false),
    epoch: AtomicU32::new(1),
    all_threads: AtomicBool::new(false),
    cpu: AtomicBool::new(false),
    unrevealed: AtomicU64::new(0),
    next_thread: AtomicU64::new(1),
};

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

/// The second word of a [`BEGIN_ID`] mark: the epoch ([`Switches::epoch`]) of the recording it
/// begins, and how many events the ring had dropped then (the low 32 bits of
/// [`Ring::dropped`]).
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

pub struct Local {
    /// Calibration, in [`ticks`]: when the last entry probe of [`CALIBRATION_ID`] ended, and
    /// the sum of its inner times (from there to the start of its exit probe).
    pub(super) calibration: Cell<(u64, u64)>,
    /// Calibration, in [`ticks`]: the probes' own durations (callee's and caller's), which the
    /// events carry and profiles subtract as measured (waits for room in the ring included,
    /// which profiles factor out as pauses): the calibration leaves them out of its costs.
    pub(super) calibration_probes: Cell<u64>,
    /// Calibration with the CPU clock: the probe's inner CPU time as `calibration`, and the
    /// time its probes waited for room in a full ring, in thread CPU time.
    pub(super) calibration_cpu: Cell<(u64, u64)>,
    pub(super) calibration_cpu_waits: Cell<u64>,
    /// Calibration: wall time its probes waited for room in the ring (yielding the CPU), which
    /// is not the scheduler taking the CPU away.
    pub(super) calibration_waited: Cell<u64>,
    generation: Cell<u32>,
    /// Subtracted from the OS thread's CPU clock to give this state's own ([`thread_cpu`]):
    /// 0 on a platform thread; on a carrier, what makes the mounted virtual thread's clock
    /// count only its own time on carriers, and the carrier's not count its virtual threads'.
    cpu_offset: Cell<u64>,
    /// The agent is working on this thread: probes are ignored.
    pub(super) busy: Cell<bool>,
    /// Root frames open on this thread.
    in_root: Cell<u32>,
    /// The epoch ([`Switches::epoch`]) in which this thread records (0: it does not), and the root depth outside
    /// the root frame that began the recording: it stops when that frame exits, or when one of
    /// its events is dropped.
    pub(super) recording: Cell<(u32, u32)>,
    /// A recording began and its mark ([`BEGIN_ID`]) is not in the ring yet.
    pub(super) begin: Cell<bool>,
    /// The epoch in which this thread counted itself inside a root's extent for `Hooks.active`
    /// (`site_flags`), 0 if it is not counted.
    counted: Cell<u32>,
    /// Root frames open outside every root's extent that the recording share left out
    /// (`super::share`): their exits close them here.
    gated: Cell<u32>,
    /// The thread CPU clock at the start of the root invocation being measured (0: none), and
    /// when the thread last began measuring one ([`super::clock::now`]).
    measuring: Cell<u64>,
    last_measured: Cell<u64>,
    pub(super) ring: RefCell<Option<Arc<Ring>>>,
}

thread_local! {
    pub(super) static LOCAL: Local = const {
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
            gated: Cell::new(0),
            measuring: Cell::new(0),
            last_measured: Cell::new(0),
            ring: RefCell::new(None),
        }
    };
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
pub(super) fn cpu_stamp() -> Option<u64> {
    if SWITCHES.cpu.load(Ordering::Relaxed) {
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

impl Local {
    #[inline]
    fn sync_generation(&self) {
        let g = SWITCHES.generation.load(Ordering::Acquire);
        if self.generation.get() != g {
            self.generation.set(g);
            self.in_root.set(0);
            self.recording.set((0, 0));
            self.begin.set(false);
            self.gated.set(0);
            self.measuring.set(0);
            // The count was reset with the session (`site_flags::reset`): this does nothing then.
            let counted = self.counted.replace(0);
            if counted != 0 {
                crate::probe::site_flags::thread_left(std::ptr::null_mut(), counted);
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
        let epoch = SWITCHES.epoch.load(Ordering::Relaxed);
        if self.recording.get().0 == epoch {
            return true;
        }
        if root {
            self.recording.set((epoch, depth));
            self.begin.set(true);
        }
        root
    }

    /// Whether an exit is recorded, while collecting: inside a recorded root frame.
    #[inline(always)]
    pub(super) fn records_exit(&self) -> bool {
        self.recording.get().0 == SWITCHES.epoch.load(Ordering::Relaxed)
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
        if self.counted.get() == 0 && !SWITCHES.all_threads.load(Ordering::Relaxed) {
            self.counted
                .set(crate::probe::site_flags::thread_entered(env));
        }
    }

    /// The thread's root depth returns to 0.
    #[inline]
    fn left_extent(&self, env: *mut sys::JNIEnv) {
        let counted = self.counted.replace(0);
        if counted != 0 {
            crate::probe::site_flags::thread_left(env, counted);
        }
    }
}

/// A new recorder key for a thread's ring.
pub fn next_thread_key() -> u64 {
    SWITCHES.next_thread.fetch_add(1, Ordering::Relaxed)
}

/// The per-thread state that follows a virtual thread from carrier to carrier ([`super::vthread`]).
#[derive(Default)]
pub struct Carried {
    generation: u32,
    in_root: u32,
    recording: (u32, u32),
    begin: bool,
    counted: u32,
    gated: u32,
    /// Its CPU clock ([`thread_cpu`]) when it was put aside (0: a new virtual thread).
    cpu: u64,
    pub ring: Option<Arc<Ring>>,
}

impl Carried {
    /// Nothing to keep: outside every root, uncounted, no ring.
    pub fn is_idle(&self) -> bool {
        self.in_root == 0 && self.counted == 0 && self.gated == 0 && self.ring.is_none()
    }

    /// Root frames open.
    pub fn in_root(&self) -> u32 {
        self.in_root
    }
}

/// Puts `carried` in this OS thread's state and returns what was there.
pub fn swap_carried(carried: Carried) -> Carried {
    let mut carried = Some(carried);
    LOCAL
        .try_with(|l| {
            let c = carried.take().unwrap_or_default();
            // The CPU clock goes with the state: the outgoing one's stops here, the incoming
            // one's resumes where it stopped (read only when CPU time is measured).
            let cpu = if SWITCHES.cpu.load(Ordering::Relaxed) {
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
                gated: l.gated.replace(c.gated),
                cpu,
                ring: std::mem::replace(&mut *l.ring.borrow_mut(), c.ring),
            }
        })
        .unwrap_or_default()
}

/// The entry probe of a calling-context engine that keeps its own per-thread state: the
/// extents, roots, revelation and agent-work rules of the recorder's probes
/// (`super::recorder::enter`), with `record(method id)` in place of the ring push (called
/// while collecting, inside a root's extent).
#[inline(always)]
pub(crate) fn enter_gated(env: *mut sys::JNIEnv, id: i32, start: u64, record: impl FnOnce(u32)) {
    enter_with(env, id, start, |_, id, _| record(id));
}

/// The exit probe as [`enter_gated`] is the entry probe.
#[inline(always)]
pub(crate) fn exit_gated(env: *mut sys::JNIEnv, id: i32, start: u64, record: impl FnOnce(u32)) {
    exit_with(env, id, start, |_, id, _| record(id));
}

/// A probe's entry under the rules every calling-context engine shares; `record` runs while
/// collecting, inside a recorded root frame.
#[inline(always)]
pub(super) fn enter_with(
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
        let root = f & ROOT != 0 || SWITCHES.all_threads.load(Ordering::Relaxed);
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
            } else if SWITCHES.collecting.load(Ordering::Relaxed) {
                // `reveal=async`: its callees are not instrumented yet.
                SWITCHES.unrevealed.fetch_add(1, Ordering::Relaxed);
            }
        }
        if SWITCHES.collecting.load(Ordering::Relaxed) && l.records_entry(root, depth) {
            record(l, id, start);
        }
    });
}

/// A probe's exit, as [`enter_with`].
#[inline(always)]
pub(super) fn exit_with(
    env: *mut sys::JNIEnv,
    id: i32,
    start: u64,
    record: impl FnOnce(&Local, u32, u64),
) {
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
        if SWITCHES.collecting.load(Ordering::Relaxed) && l.records_exit() {
            record(l, id, start);
        }
        if f & ROOT != 0 || SWITCHES.all_threads.load(Ordering::Relaxed) {
            l.in_root.set(depth - 1);
            l.root_exited(depth - 1);
            if depth == 1 {
                l.left_extent(env);
            }
        }
    });
}

/// Lazy revelation on the first invocation of `id`: its callees are instrumented before it
/// proceeds, and the time that took is factored out of the thread's open frames.
#[cold]
pub(crate) fn first_invocation(l: &Local, env: *mut sys::JNIEnv, id: u32) {
    l.busy.set(true);
    let start = Start::now();
    ferrofluid_jvmti::ffi_guard("first invocation", (), || {
        if let Some(upcalls) = upcalls() {
            crate::ffi::with_env(env, |jni| upcalls.first_invocation(jni, id));
        }
    });
    let (wall, cpu) = start.elapsed();
    l.busy.set(false);
    if SWITCHES.collecting.load(Ordering::Relaxed) {
        l.push_pause(env, id, wall, cpu);
    }
}

/// Whether revelation may run on this thread now (reflection, method handles, JNI calls): it
/// is inside a root's dynamic extent and not already doing agent work. With no root every
/// method is instrumented already.
#[inline]
pub fn revealing() -> bool {
    if SWITCHES.all_threads.load(Ordering::Relaxed) {
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
        if l.in_root.get() > 0 && SWITCHES.collecting.load(Ordering::Relaxed) {
            l.push_pause(env, 0, wall, cpu);
        }
    });
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
        if l.in_root.get() > 0 && SWITCHES.collecting.load(Ordering::Relaxed) {
            l.push_pause(env, 0, wall, cpu);
        }
    });
}

/// Whether this thread is inside a root's dynamic extent (and the agent is not busy on it).
pub fn in_extent() -> bool {
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
        if SWITCHES.collecting.load(Ordering::Relaxed) {
            l.push_pause(env, 0, wall, cpu);
        }
    });
}

impl Local {
    /// The agent is working on this thread: its probes are ignored.
    pub(crate) fn busy(&self) -> bool {
        self.busy.get()
    }

    /// Forgets an older session's state (its root frames, recording and ring).
    pub(crate) fn sync(&self) {
        self.sync_generation();
    }

    /// Root frames open on this thread.
    pub(crate) fn depth(&self) -> u32 {
        self.in_root.get()
    }

    /// A root's entry at root depth `depth` (before it): one more root frame, and the thread
    /// counts itself inside a root's extent if it was outside.
    pub(crate) fn root_entered(&self, env: *mut sys::JNIEnv, depth: u32) {
        self.in_root.set(depth + 1);
        if depth == 0 {
            self.entered_extent(env);
        }
    }

    /// A root entered outside every root's extent that the recording share leaves out: the
    /// thread stays outside, and the frame's exit comes to [`Local::gated_exit`].
    pub(crate) fn gated_entry(&self) {
        self.gated.set(self.gated.get() + 1);
    }

    /// Root frames open that the recording share left out.
    pub(crate) fn gated_depth(&self) -> u32 {
        self.gated.get()
    }

    /// A root's exit outside every root's extent: whether it closes a frame the recording
    /// share left out.
    pub(crate) fn gated_exit(&self) -> bool {
        let g = self.gated.get();
        if g == 0 {
            return false;
        }
        self.gated.set(g - 1);
        true
    }

    /// A root invocation begins outside every root's extent: its thread CPU time is measured
    /// if the thread measured none in the last [`super::share::MEASURE_EVERY_NS`] (a platform
    /// thread only: a virtual thread's CPU clock is its carrier's).
    pub(crate) fn begin_measure(&self) {
        if !super::share::measuring() {
            return;
        }
        let t = super::clock::now();
        if self.measuring.get() != 0
            || t.wrapping_sub(self.last_measured.get()) < super::share::MEASURE_EVERY_NS
            || super::vthread::mounted_key().is_some()
        {
            return;
        }
        self.last_measured.set(t);
        self.measuring
            .set(ferrofluid_jvmti::os::thread_cpu_ns().max(1));
    }

    /// The measured root invocation (if any) ends, recorded or not.
    pub(crate) fn end_measure(&self, recorded: bool) {
        let start = self.measuring.replace(0);
        if start != 0 {
            let cpu = ferrofluid_jvmti::os::thread_cpu_ns().saturating_sub(start);
            super::share::measured(recorded, cpu);
        }
    }

    /// Whether an entry at root depth `depth` is recorded (see [`Local::records_entry`]).
    pub(crate) fn recorded_entry(&self, root: bool, depth: u32) -> bool {
        self.records_entry(root, depth)
    }

    /// Whether an exit is recorded now: inside a recorded root frame.
    pub(crate) fn recorded_exit(&self) -> bool {
        self.records_exit()
    }
}

/// Runs `f` with this thread's state; `None` while the thread-local is gone (thread exit).
pub(crate) fn with_local<R>(f: impl FnOnce(&Local) -> R) -> Option<R> {
    LOCAL.try_with(f).ok()
}

/// A thread starts inside a root's extent (one started inside a root, at its ThreadStart): it
/// stays inside for its whole life, and records if collecting has begun.
pub fn started_in_root(env: *mut sys::JNIEnv) {
    let _ = LOCAL.try_with(|l| {
        l.sync_generation();
        l.in_root.set(1);
        if SWITCHES.collecting.load(Ordering::Relaxed) {
            l.recording.set((SWITCHES.epoch.load(Ordering::Relaxed), 0));
            l.begin.set(true);
        }
        l.entered_extent(env);
    });
}

/// The current thread ends (JVMTI ThreadEnd): it leaves every root's extent, and its ring is
/// closed and released.
pub fn ended(env: *mut sys::JNIEnv) {
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

/// An event of this thread was dropped (its ring stayed full): the thread's tree can no longer
/// follow its stack, so its recording ends here, as if its root had returned, and the next
/// root it enters begins a new one. The collector closes the frames left open
/// (`super::collector`).
#[cold]
pub(super) fn recording_lost() {
    let _ = LOCAL.try_with(|l| {
        l.recording.set((0, 0));
        l.begin.set(false);
    });
}
