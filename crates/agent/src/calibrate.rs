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
//! The shape matters: the first calibration called `empty` from one loop entered from native code
//! (so only on-stack-replaced, and each call a root of its own), and its probe pairs cost ~15-20 ns
//! less than the same probes in application code, which the profile then over-charged. Now the
//! probes run as in an application: an instrumented caller inside a root's extent, called from
//! Java often enough to be compiled normally by C2, calls the instrumented callee.

use std::sync::atomic::Ordering;

use ferrofluid_classfile::{instrument, MethodSite, ProbeKind, ProbeOptions};
use ferrofluid_jvmti::{sys, Class, JniEnv};
use ferrofluid_profile::{Calibration, CalibrationBatch};

use crate::flags;
use crate::hooks::{self, CALIBRATION_CALLER_ID, CALIBRATION_ID};

const CLASS: &str = "ferrofluid/Calibrate";
/// `javac --release 8` of `calibrate/Calibrate.java`.
const BYTES: &[u8] = include_bytes!("calibrate/Calibrate.class");
/// Batches of the probes as they run in a profile: each fills the thread's ring several times
/// over, so the collector drains it concurrently (the cache traffic that costs is part of the
/// probes' price), while the time the probes waited for room is left out (profiles factor such
/// waits out as pauses). With short batches that fit in the ring the probes cost ~25% less than
/// in a real profile; counting the waits made the costs vary 5x between runs on a busy machine.
/// The first two or three batches run interpreted and C1-compiled code; the median is the others'.
const BATCHES: usize = 24;
/// Calls of `caller` per batch: after a few batches C2 compiles it as an ordinary method (HotSpot
/// wants some 600 invocations), as it compiles application methods.
const CALLS: i32 = 200;
/// The same with the thread CPU clock (`cpu` option): each probe then makes a system call (~1 µs
/// here), so fewer calls keep the calibration under a second; the clock reads dwarf the
/// difference compiled code would make, and the ring still fills (two slots per event).
const CPU_CALLS: i32 = 40;
/// Calls of `empty` per call of `caller`, as an application's caller calls a small method in a loop.
const PER_CALL: i32 = 200;
const _: () = assert!(2 * (CALLS * PER_CALL) as usize > crate::ring::RING_EVENTS);

/// The calibration class with its probes, defined in the bootstrap loader once per JVM.
fn class<'a>(env: &JniEnv<'a>) -> Result<Class<'a>, String> {
    if let Ok(c) = env.find_class(CLASS) {
        return Ok(c);
    }
    let out = instrument(
        BYTES,
        &ProbeOptions::new(ProbeKind::EntryExit),
        // Both always take the native path: the caller is a root, and the callee is a region
        // when region probes are calibrated. (Inside a root every probe takes it anyway.)
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

/// Probe costs: wall, and thread CPU when the session measures it.
pub struct Calibrated {
    pub wall: Calibration,
    pub cpu: Option<Calibration>,
}

/// Measures the probes on the calling Java thread. Briefly sets collection on (the events of the
/// calibration and of other threads meanwhile go to the recording that `collector::start` then
/// replaces).
pub fn calibrate(env: &JniEnv<'_>) -> Result<Calibrated, String> {
    measure(
        env,
        Probes {
            callee: flags::ACTIVE | flags::INVOKED,
            caller: flags::ACTIVE | flags::ROOT | flags::INVOKED,
            take_inner: hooks::take_calibration_inner,
            take_probes: hooks::take_calibration_probes,
        },
    )
}

/// The same for the probes of code-region mode, which take another path in the hooks. Only the
/// callee is a region (the caller's probes stay inactive: a region's callees have none).
pub fn calibrate_region(env: &JniEnv<'_>) -> Result<Calibration, String> {
    let calibrated = measure(
        env,
        Probes {
            callee: flags::ACTIVE | flags::REGION | flags::INVOKED,
            caller: 0,
            take_inner: crate::region::take_calibration_inner,
            take_probes: || 0,
        },
    )?;
    Ok(calibrated.wall)
}

/// Which probes a calibration measures.
struct Probes {
    /// Flags of the callee (`empty`) and of the caller (`caller`) while calibrating.
    callee: u8,
    caller: u8,
    /// Read (and reset) the inner time and the probes' own measured durations (waits for room
    /// in the ring included) summed by the hooks.
    take_inner: fn() -> u64,
    take_probes: fn() -> u64,
}

/// Runs the batches with the calibration methods' flags set as `probes` says.
fn measure(env: &JniEnv<'_>, probes: Probes) -> Result<Calibrated, String> {
    let class = class(env)?;
    // Region probes never read the CPU clock.
    let cpu = hooks::CPU.load(Ordering::SeqCst) && probes.caller != 0;
    let calls = if cpu { CPU_CALLS } else { CALLS };
    flags::set(CALIBRATION_ID, probes.callee);
    flags::set(CALIBRATION_CALLER_ID, probes.caller);
    // An active caller's probe pair costs what the callee's does, once per call: counted as pairs.
    let pairs = calls as u64 * (PER_CALL as u64 + u64::from(probes.caller != 0));
    let was = hooks::COLLECTING.swap(true, Ordering::SeqCst);
    let mut batches = Vec::with_capacity(BATCHES);
    let mut cpu_batches = Vec::with_capacity(BATCHES);
    // Per batch, ns per pair the probes measured of themselves (logged).
    let mut measured = Vec::with_capacity(BATCHES);
    let mut failure = None;
    (probes.take_inner)();
    (probes.take_probes)();
    hooks::take_calibration_cpu_inner();
    hooks::take_calibration_cpu_waits();
    for _ in 0..BATCHES {
        let args = [sys::jvalue { i: calls }, sys::jvalue { i: PER_CALL }];
        let cpu_start = hooks::thread_cpu();
        // SAFETY: `run(II)J` takes two ints.
        let elapsed = unsafe { env.call_static_long(class, c"run", c"(II)J", &args) };
        // The JNI call's own CPU cost is inside, spread over thousands of pairs.
        let cpu_elapsed = hooks::thread_cpu().saturating_sub(cpu_start);
        // The inner times are the callee's only: scale them to all the pairs counted.
        let scale = |inner: u64| inner * pairs / (calls * PER_CALL) as u64;
        match elapsed {
            Ok(ns) => {
                // What the probes measured of themselves, profiles subtract as measured: the
                // calibration is of the rest.
                let probes_ns = (probes.take_probes)();
                measured.push(probes_ns / pairs);
                batches.push(CalibrationBatch {
                    pairs,
                    elapsed_ns: (ns.max(0) as u64).saturating_sub(probes_ns),
                    inner_ns: scale((probes.take_inner)()),
                });
                cpu_batches.push(CalibrationBatch {
                    pairs,
                    elapsed_ns: cpu_elapsed.saturating_sub(hooks::take_calibration_cpu_waits()),
                    inner_ns: scale(hooks::take_calibration_cpu_inner()),
                });
            }
            Err(e) => {
                failure = Some(e.to_string());
                break;
            }
        }
    }
    hooks::COLLECTING.store(was, Ordering::SeqCst);
    flags::clear(CALIBRATION_ID);
    flags::clear(CALIBRATION_CALLER_ID);
    env.delete_local_ref(class.as_object());
    if let Some(e) = failure {
        return Err(format!("calibration: {e}"));
    }
    let c = Calibration::from_batches(&batches).ok_or("calibration: no batch")?;
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
             of {BATCHES} batches of {calls} calls; per batch, total/inner ns per call: {})",
            cpu.inner_ns,
            cpu.outer_ns,
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
                "{:.0}/{:.0}/{measured}",
                b.elapsed_ns as f64 / n,
                b.inner_ns as f64 / n
            )
        })
        .collect();
    log::info!(
        "calibrated probes (apart from what they measure of themselves): inner {:.1} ns, outer \
         {:.1} ns per call, the median of {BATCHES} batches of {calls} calls of a caller making \
         {PER_CALL} calls (their minimum, JFluid's estimate: inner {:.1}, outer {:.1}); per \
         batch, total/inner/measured ns per call: {})",
        c.inner_ns,
        c.outer_ns,
        jfluid.inner_ns,
        jfluid.outer_ns,
        each.join(" ")
    );
    Ok(Calibrated { wall: c, cpu })
}

#[cfg(test)]
mod tests {
    /// The committed class file is what javac makes of the committed source.
    #[test]
    fn class_file_matches_its_source() {
        let javac = "/usr/lib/jvm/java-17-openjdk-amd64/bin/javac";
        if !std::path::Path::new(javac).exists() {
            eprintln!("skipped: no JDK 17 javac");
            return;
        }
        let out = std::env::temp_dir().join(format!("ff-calibrate-{}", std::process::id()));
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src/calibrate/Calibrate.java");
        let ok = std::process::Command::new(javac)
            .args(["--release", "8", "-d"])
            .arg(&out)
            .arg(src)
            .status()
            .unwrap()
            .success();
        assert!(ok);
        let made = std::fs::read(out.join("ferrofluid/Calibrate.class")).unwrap();
        let _ = std::fs::remove_dir_all(&out);
        assert!(
            made == super::BYTES,
            "recompile Calibrate.java (see its comment)"
        );
    }
}
