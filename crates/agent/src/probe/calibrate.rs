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
use std::time::{Duration, Instant};

use ferrofluid_classfile::{instrument, MethodSite, ProbeKind, ProbeOptions};
use ferrofluid_jvmti::{Class, JniEnv, Primitive};
use ferrofluid_profile::compensation::MIN_KEPT;
use ferrofluid_profile::{Calibration, CalibrationBatch, CalibrationStats, Calibrator};

use super::flags;
use super::recorder::{
    take_calibration_cpu_inner, take_calibration_cpu_waits, take_calibration_inner,
    take_calibration_probes, take_calibration_waited,
};
use super::ring::RING_EVENTS;
use super::thread::{always_native, thread_cpu, CALIBRATION_CALLER_ID, CALIBRATION_ID, SWITCHES};

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
const _: () = assert!(2 * (CALLS * PER_CALL) as usize > RING_EVENTS);

/// The calibration class with its probes, defined in the bootstrap loader once per JVM.
pub fn class<'a>(env: &JniEnv<'a>) -> Result<Class<'a>, String> {
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
            "empty" => Some(always_native(CALIBRATION_ID)),
            "caller" => Some(always_native(CALIBRATION_CALLER_ID)),
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

// Process-wide: the calibration methods' flags are; the calibrations of any session's engine
// and the re-measuring thread take turns on them.
/// A calibration is running (its methods' flags are set): the start calibration waits for a
/// re-measurement to end, a re-measurement skips its turn.
static MEASURING: AtomicBool = AtomicBool::new(false);

/// The call recorder's probes (the `cpu` engine's): an active caller and callee.
pub const SUBGRAPH: Probes = Probes {
    callee: flags::ACTIVE | flags::INVOKED,
    caller: flags::ACTIVE | flags::ROOT | flags::INVOKED,
    take_inner: take_calibration_inner,
    take_probes: take_calibration_probes,
};

/// Measures the call recorder's probes on the calling Java thread, into a fresh pool of
/// batches (a new profile), returned with the estimate for re-measuring. Briefly sets
/// collection on (the events of the calibration and of other threads meanwhile go to the
/// recording that `collector::start` then replaces).
pub fn calibrate(env: &JniEnv<'_>) -> Result<(Calibrated, Calibrator), String> {
    measure(env, SUBGRAPH)
}

/// Measures the probes of an engine with its own probe path (`probes` says which flags the
/// calibration methods get and where its probes sum their inner time), on the calling Java
/// thread, into a fresh pool; never with the CPU clock unless the caller is active too.
pub fn calibrate_with(env: &JniEnv<'_>, probes: Probes) -> Result<Calibrated, String> {
    let (calibrated, _) = measure(env, probes)?;
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
    let cpu_start = thread_cpu();
    let elapsed = env.call_static_long_method(class, c"run", c"(II)J", &args);
    // The JNI call's own CPU cost is inside, spread over thousands of pairs.
    let cpu_elapsed = thread_cpu().saturating_sub(cpu_start);
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
            .saturating_sub(take_calibration_waited()),
    };
    let cpu = CalibrationBatch {
        pairs,
        elapsed_ns: cpu_elapsed.saturating_sub(take_calibration_cpu_waits()),
        inner_ns: scale(take_calibration_cpu_inner()),
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
    take_calibration_cpu_inner();
    take_calibration_cpu_waits();
    take_calibration_waited();
}

fn disarm() {
    flags::clear(CALIBRATION_ID);
    flags::clear(CALIBRATION_CALLER_ID);
}

/// Runs the batches with the calibration methods' flags set as `probes` says, into a fresh
/// pool.
fn measure(env: &JniEnv<'_>, probes: Probes) -> Result<(Calibrated, Calibrator), String> {
    let class = class(env)?;
    // A re-measurement still running (it was told to stop) ends within a batch.
    let _measuring = Measuring::take(Duration::from_secs(2))
        .ok_or("calibration: another calibration did not end")?;
    // Probes calibrated without an active caller never read the CPU clock.
    let cpu = SWITCHES.cpu.load(Ordering::SeqCst) && probes.caller != 0;
    let calls = if cpu { CPU_CALLS } else { CALLS };
    arm(&probes);
    let was = SWITCHES.collecting.swap(true, Ordering::SeqCst);
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
    SWITCHES.collecting.store(was, Ordering::SeqCst);
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
    let calibrated = Calibrated {
        wall: c,
        cpu,
        stats,
    };
    Ok((calibrated, pool))
}

/// One batch of the call-subgraph probes on this thread (the calibration class `class`),
/// unless another calibration is running (`None`): how a profile's calibration is measured
/// again while it collects.
pub fn subgraph_batch(
    env: &JniEnv<'_>,
    class: Class<'_>,
) -> Option<Result<CalibrationBatch, String>> {
    let _measuring = Measuring::take(Duration::ZERO)?;
    arm(&SUBGRAPH);
    let result = batch(env, class, &SUBGRAPH, CALLS);
    disarm();
    Some(result.map(|(b, _, _)| b))
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
