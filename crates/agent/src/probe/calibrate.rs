//! Probe calibration (JFluid 5.3): `ferrofluid/Calibrate.caller` (id [`CALIBRATION_CALLER_ID`], a
//! root) calls `Calibrate.empty` (id [`CALIBRATION_ID`]) in a loop, both with the real entry/exit
//! probes, in batches run from Java on the calibrating thread. The probes measure their own
//! duration (every event carries it, and profiles subtract it as measured), so the calibration is
//! of the rest, the calls into the probes and back: the hooks sum the time from the end of the
//! callee's entry probe to the start of its exit probe (the inner time) and every probe's own
//! duration, the batch's wall time less those durations gives the total, and
//! `Calibration::from_batches` keeps the median of the batch averages (JFluid keeps the minimum;
//! why not here is said there).
//!
//! On a busy machine a batch may lose its CPU (another process runs, a safepoint stops the
//! thread) and then measures the scheduler: each batch also reads the thread's CPU clock, and
//! one whose thread was off its CPU for more than 2% of its time is left out
//! (`ferrofluid_profile::Calibrator`); batches go on until enough ran undisturbed, within a
//! budget. While a call-subgraph profile collects, a daemon thread (`ferrofluid-calibrate`)
//! runs one more batch every [`REMEASURE_EVERY`] and the pool's estimate replaces the
//! recording's calibration: the estimate follows the probes' speed over the whole profile,
//! not only its first tenth of a second. Its events are kept out of the recording.
//!
//! The shape matters: the first calibration called `empty` from one loop entered from native code
//! (so only on-stack-replaced, and each call a root of its own), and its probe pairs cost ~15-20 ns
//! less than the same probes in application code, which the profile then over-charged. Now the
//! probes run as in an application: an instrumented caller inside a root's extent, called from
//! Java often enough to be compiled normally by C2, calls the instrumented callee.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ferrofluid_classfile::{instrument, MethodSite, ProbeKind, ProbeOptions};
use ferrofluid_jvmti::{Class, JavaVm, JniEnv, Primitive};
use ferrofluid_profile::compensation::MIN_KEPT;
use ferrofluid_profile::{Calibration, CalibrationBatch, CalibrationStats, Calibrator};

use crate::probe::flags;
use crate::probe::hooks::{self, CALIBRATION_CALLER_ID, CALIBRATION_ID};

const CLASS: &str = "ferrofluid/Calibrate";
/// `javac --release 8` of `calibrate/Calibrate.java`.
const BYTES: &[u8] = include_bytes!("calibrate/Calibrate.class");
/// Batches of the probes as they run in a profile: each fills the thread's ring several times
/// over, so the collector drains it concurrently (the cache traffic that costs is part of the
/// probes' price), while the time the probes waited for room is left out (profiles factor such
/// waits out as pauses). With short batches that fit in the ring the probes cost ~25% less than
/// in a real profile; counting the waits made the costs vary 5x between runs on a busy machine.
/// The first two or three batches run interpreted and C1-compiled code; the median is the others'.
/// At least this many run; more while fewer than `MIN_KEPT` of them ran undisturbed.
const BATCHES: usize = 24;
/// At most this many batches at start, and for at most [`BUDGET`]: on a machine too busy for
/// `MIN_KEPT` undisturbed batches the least disturbed are used and the profile says so.
const MAX_BATCHES: usize = 120;
const BUDGET: Duration = Duration::from_secs(1);
/// How often the profile's calibration is measured again while it collects: one batch (a few
/// ms, 0.5-1% of a core) on the `ferrofluid-calibrate` thread.
pub const REMEASURE_EVERY: Duration = Duration::from_millis(500);
/// Calls of `caller` per batch: after a few batches C2 compiles it as an ordinary method (HotSpot
/// wants some 600 invocations), as it compiles application methods.
const CALLS: i32 = 200;
/// The same with the thread CPU clock (`cpu` option): each probe then makes a system call (~1 µs
/// here), so fewer calls keep the calibration under a second; the clock reads dwarf the
/// difference compiled code would make, and the ring still fills (two slots per event).
const CPU_CALLS: i32 = 40;
/// Calls of `empty` per call of `caller`, as an application's caller calls a small method in a loop.
const PER_CALL: i32 = 200;
const _: () = assert!(2 * (CALLS * PER_CALL) as usize > crate::probe::ring::RING_EVENTS);

/// The calibration class with its probes, defined in the bootstrap loader once per JVM.
fn class<'a>(env: &JniEnv<'a>) -> Result<Class<'a>, String> {
    if let Ok(c) = env.find_class(CLASS) {
        return Ok(c);
    }
    let out = instrument(
        BYTES,
        &ProbeOptions::new(ProbeKind::EntryExit),
        // Both always take the native path: the caller is a root, and the callee may be
        // calibrated alone (an engine whose probes time single methods). (Inside a root every
        // probe takes it anyway.)
        &mut |m: &MethodSite<'_>| match m.name {
            "empty" => Some(hooks::always_native(CALIBRATION_ID)),
            "caller" => Some(hooks::always_native(CALIBRATION_CALLER_ID)),
            _ => None,
        },
    )
    .map_err(|e| format!("instrumenting {CLASS}: {e}"))?;
    let bytes = out
        .bytes
        .ok_or("the calibration methods were not instrumented")?;
    let class = env
        .define_class(CLASS, None, &bytes)
        .map_err(|e| format!("defining {CLASS}: {e}"))?;
    Ok(class)
}

/// Probe costs: wall, and thread CPU when the session measures it; with what the wall
/// calibration saw.
pub struct Calibrated {
    pub wall: Calibration,
    pub cpu: Option<Calibration>,
    pub stats: CalibrationStats,
}

/// The batches of the current profile's wall calibration (at start and re-measured).
static POOL: Mutex<Option<Calibrator>> = Mutex::new(None);
/// A calibration is running (its methods' flags are set): the start calibration waits for a
/// re-measurement to end, a re-measurement skips its turn.
static MEASURING: AtomicBool = AtomicBool::new(false);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

const SUBGRAPH: Probes = Probes {
    callee: flags::ACTIVE | flags::INVOKED,
    caller: flags::ACTIVE | flags::ROOT | flags::INVOKED,
    take_inner: hooks::take_calibration_inner,
    take_probes: hooks::take_calibration_probes,
};

/// Measures the probes on the calling Java thread (a fresh pool: a new profile). Briefly sets
/// collection on (the events of the calibration and of other threads meanwhile go to the
/// recording that `collector::start` then replaces).
pub fn calibrate(env: &JniEnv<'_>) -> Result<Calibrated, String> {
    stop_remeasuring();
    measure(env, SUBGRAPH)
}

/// Measures the probes of an engine with its own probe path (`probes` says which flags the
/// calibration methods get and where its probes sum their inner time), on the calling Java
/// thread, into a fresh pool; never with the CPU clock unless the caller is active too.
pub fn calibrate_with(env: &JniEnv<'_>, probes: Probes) -> Result<Calibrated, String> {
    stop_remeasuring();
    let calibrated = measure(env, probes)?;
    Ok(Calibrated {
        cpu: calibrated.cpu.filter(|_| probes.caller != 0),
        ..calibrated
    })
}

/// Holds [`MEASURING`] while alive.
struct Measuring;

impl Measuring {
    /// Waits up to `wait` for another calibration to end.
    fn take(wait: Duration) -> Option<Measuring> {
        let until = Instant::now() + wait;
        loop {
            if MEASURING
                .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return Some(Measuring);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Measuring {
    fn drop(&mut self) {
        MEASURING.store(false, Ordering::SeqCst);
    }
}

/// Which probes a calibration measures.
#[derive(Clone, Copy)]
pub struct Probes {
    /// Flags of the callee (`empty`) and of the caller (`caller`) while calibrating.
    pub callee: u8,
    pub caller: u8,
    /// Read (and reset) the inner time and the probes' own measured durations (waits for room
    /// in the ring included) summed by the hooks.
    pub take_inner: fn() -> u64,
    pub take_probes: fn() -> u64,
}

/// One batch: `calls` calls of `caller` making `PER_CALL` calls each, the flags set as
/// `probes` says by the caller of this. With the CPU clock on, also the batch's CPU figures.
fn batch(
    env: &JniEnv<'_>,
    class: Class<'_>,
    probes: &Probes,
    calls: i32,
) -> Result<(CalibrationBatch, CalibrationBatch, u64), String> {
    // An active caller's probe pair costs what the callee's does, once per call: counted as pairs.
    let pairs = calls as u64 * (PER_CALL as u64 + u64::from(probes.caller != 0));
    let args = [Primitive::Int(calls), Primitive::Int(PER_CALL)];
    let cpu_start = hooks::thread_cpu();
    let elapsed = env.call_static_long_method(class, c"run", c"(II)J", &args);
    // The JNI call's own CPU cost is inside, spread over thousands of pairs.
    let cpu_elapsed = hooks::thread_cpu().saturating_sub(cpu_start);
    // The inner times are the callee's only: scale them to all the pairs counted.
    let scale = |inner: u64| inner * pairs / (calls * PER_CALL) as u64;
    let wall = elapsed.map_err(|e| e.to_string())?.max(0) as u64;
    // What the probes measured of themselves, profiles subtract as measured: the calibration is
    // of the rest.
    let probes_ns = (probes.take_probes)();
    let b = CalibrationBatch {
        pairs,
        elapsed_ns: wall.saturating_sub(probes_ns),
        inner_ns: scale((probes.take_inner)()),
        wall_ns: wall,
        // Time the thread was not running: preempted, or stopped at a safepoint; not the
        // waits for room in its ring, where it yields the CPU (left out of the costs anyway).
        off_cpu_ns: wall
            .saturating_sub(cpu_elapsed)
            .saturating_sub(hooks::take_calibration_waited()),
    };
    let cpu = CalibrationBatch {
        pairs,
        elapsed_ns: cpu_elapsed.saturating_sub(hooks::take_calibration_cpu_waits()),
        inner_ns: scale(hooks::take_calibration_cpu_inner()),
        ..CalibrationBatch::default()
    };
    Ok((b, cpu, probes_ns / pairs.max(1)))
}

/// Sets the calibration methods' flags as `probes` says and clears every per-thread sum.
fn arm(probes: &Probes) {
    flags::set(CALIBRATION_ID, probes.callee);
    flags::set(CALIBRATION_CALLER_ID, probes.caller);
    (probes.take_inner)();
    (probes.take_probes)();
    hooks::take_calibration_cpu_inner();
    hooks::take_calibration_cpu_waits();
    hooks::take_calibration_waited();
}

fn disarm() {
    flags::clear(CALIBRATION_ID);
    flags::clear(CALIBRATION_CALLER_ID);
}

/// Runs the batches with the calibration methods' flags set as `probes` says, into a fresh
/// pool.
fn measure(env: &JniEnv<'_>, probes: Probes) -> Result<Calibrated, String> {
    let class = class(env)?;
    // A re-measurement still running (it was told to stop) ends within a batch.
    let _measuring = Measuring::take(Duration::from_secs(2))
        .ok_or("calibration: another calibration did not end")?;
    // Probes calibrated without an active caller never read the CPU clock.
    let cpu = hooks::CPU.load(Ordering::SeqCst) && probes.caller != 0;
    let calls = if cpu { CPU_CALLS } else { CALLS };
    arm(&probes);
    let was = hooks::COLLECTING.swap(true, Ordering::SeqCst);
    let mut pool = Calibrator::new();
    let mut batches = Vec::with_capacity(BATCHES);
    let mut cpu_batches = Vec::with_capacity(BATCHES);
    // Per batch, ns per pair the probes measured of themselves (logged).
    let mut measured = Vec::with_capacity(BATCHES);
    let mut failure = None;
    let started = Instant::now();
    while batches.len() < BATCHES
        || (pool.undisturbed() < MIN_KEPT
            && batches.len() < MAX_BATCHES
            && started.elapsed() < BUDGET)
    {
        match batch(env, class, &probes, calls) {
            Ok((b, c, m)) => {
                pool.add(b);
                batches.push(b);
                cpu_batches.push(c);
                measured.push(m);
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    hooks::COLLECTING.store(was, Ordering::SeqCst);
    disarm();
    env.delete_local_ref(class.as_object());
    if let Some(e) = failure {
        return Err(format!("calibration: {e}"));
    }
    let (c, stats) = pool.estimate().ok_or("calibration: no batch")?;
    let cpu = cpu
        .then(|| Calibration::from_batches(&cpu_batches))
        .flatten();
    if let Some(cpu) = cpu {
        let each: Vec<String> = cpu_batches
            .iter()
            .map(|b| format!("{}/{}", b.elapsed_ns / b.pairs, b.inner_ns / b.pairs))
            .collect();
        log::info!(
            "calibrated probes' thread CPU time: inner {:.1} ns, outer {:.1} ns per call (median \
             of {} batches of {calls} calls; per batch, total/inner ns per call: {})",
            cpu.inner_ns,
            cpu.outer_ns,
            cpu_batches.len(),
            each.join(" ")
        );
    }
    let jfluid = Calibration::minimum_of_batches(&batches).unwrap_or(c);
    // Every batch is logged: on a busy machine their spread shows how far the probes' cost
    // moves with scheduling (docs/PERFORMANCE.md, accuracy).
    let each: Vec<String> = batches
        .iter()
        .zip(&measured)
        .map(|(b, measured)| {
            let n = b.pairs as f64;
            format!(
                "{:.0}/{:.0}/{measured}/{:.0}%",
                b.elapsed_ns as f64 / n,
                b.inner_ns as f64 / n,
                b.off_cpu_ns as f64 * 100.0 / b.wall_ns.max(1) as f64
            )
        })
        .collect();
    log::info!(
        "calibrated probes (apart from what they measure of themselves): inner {:.1} ns, outer \
         {:.1} ns per call, the median of {} undisturbed batches of {} ({} off their CPU more \
         than 2% of their time) of {calls} calls of a caller making {PER_CALL} calls (their \
         minimum, JFluid's estimate: inner {:.1}, outer {:.1}); per batch, \
         total/inner/measured ns per call/off-CPU share: {})",
        c.inner_ns,
        c.outer_ns,
        stats.kept,
        stats.batches,
        stats.disturbed,
        jfluid.inner_ns,
        jfluid.outer_ns,
        each.join(" ")
    );
    if probes.caller != 0 {
        *lock(&POOL) = Some(pool);
    }
    Ok(Calibrated {
        wall: c,
        cpu,
        stats,
    })
}

/// The re-measuring thread of the current profile.
struct Remeasurer {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

static REMEASURER: Mutex<Option<Remeasurer>> = Mutex::new(None);

/// Starts re-measuring the wall calibration of the call-subgraph profile that collects now
/// (not with the CPU clock, whose calibration is of whole pairs; the engines whose probes
/// time single methods do not ask): a
/// daemon thread attached to the JVM runs one batch every [`REMEASURE_EVERY`] into the pool and
/// hands the new estimate to the collector. It ends when collection stops.
pub fn start_remeasuring(vm: JavaVm) {
    stop_remeasuring();
    if hooks::CPU.load(Ordering::SeqCst) || lock(&POOL).is_none() {
        return;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let spawned = std::thread::Builder::new()
        .name("ferrofluid-calibrate".into())
        .spawn({
            let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
            move || {
                let attached = vm.with_attached_thread("ferrofluid-calibrate", |env| {
                    ferrofluid_jvmti::ffi_guard("re-measuring the calibration", (), || {
                        remeasure(env, &stop)
                    })
                });
                if let Err(e) = attached {
                    log::warn!("calibration: attaching the re-measuring thread: {e}");
                }
                done.store(true, Ordering::SeqCst);
            }
        });
    match spawned {
        Ok(thread) => *lock(&REMEASURER) = Some(Remeasurer { stop, done, thread }),
        Err(e) => log::warn!("calibration: no re-measuring thread: {e}"),
    }
}

/// Tells the re-measuring thread to end and waits for it a little (a batch takes a few ms; a
/// thread held at a safepoint ends on its own later).
pub fn stop_remeasuring() {
    let Some(r) = lock(&REMEASURER).take() else {
        return;
    };
    r.stop.store(true, Ordering::SeqCst);
    let until = Instant::now() + Duration::from_millis(500);
    while !r.done.load(Ordering::SeqCst) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
    if r.done.load(Ordering::SeqCst) {
        let _ = r.thread.join();
    }
}

/// The re-measuring thread's loop: a batch every [`REMEASURE_EVERY`] while collection goes on.
fn remeasure(env: &JniEnv<'_>, stop: &AtomicBool) {
    let Ok(class) = class(env) else {
        return;
    };
    let (mut runs, mut kept) = (0u64, 0u64);
    'profile: loop {
        let next = Instant::now() + REMEASURE_EVERY;
        while Instant::now() < next {
            if stop.load(Ordering::SeqCst) || !hooks::COLLECTING.load(Ordering::SeqCst) {
                break 'profile;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let Some(_measuring) = Measuring::take(Duration::ZERO) else {
            continue;
        };
        arm(&SUBGRAPH);
        let result = batch(env, class, &SUBGRAPH, CALLS);
        disarm();
        // A batch during which collection stopped recorded only part of its probes.
        if stop.load(Ordering::SeqCst) || !hooks::COLLECTING.load(Ordering::SeqCst) {
            break;
        }
        let Ok((b, _, _)) = result else {
            break;
        };
        runs += 1;
        kept += u64::from(!b.disturbed());
        let estimate = lock(&POOL).as_mut().and_then(|pool| {
            pool.add(b);
            pool.estimate()
        });
        if let Some((calibration, stats)) = estimate {
            crate::probe::collector::calibrated(calibration, stats);
        }
    }
    env.delete_local_ref(class.as_object());
    if let Some((c, stats)) = lock(&POOL).as_ref().and_then(Calibrator::estimate) {
        log::info!(
            "calibration re-measured in {runs} batches during the profile ({kept} undisturbed): \
             inner {:.1} ns, outer {:.1} ns per call from {} batches; rest per pair {:.1} / \
             {:.1} / {:.1} ns (quartiles)",
            c.inner_ns,
            c.outer_ns,
            stats.kept,
            stats.pair_ns[0],
            stats.pair_ns[1],
            stats.pair_ns[2]
        );
    }
}

#[cfg(test)]
mod tests {
    /// The committed class file is what javac makes of the committed source.
    #[test]
    fn class_file_matches_its_source() {
        let Some(made) = crate::testing::compiled(
            "src/probe/calibrate/Calibrate.java",
            "8",
            "ferrofluid/Calibrate.class",
        ) else {
            return;
        };
        assert!(
            made == super::BYTES,
            "recompile Calibrate.java (see its comment)"
        );
    }
}
