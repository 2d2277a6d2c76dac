//! Probe calibration (JFluid 5.3): `ferrofluid/Calibrate.empty` gets the real entry/exit probes
//! (id [`CALIBRATION_ID`]) and is called in batches from Java on the calibrating thread; the hooks sum
//! the time from the entry probe's timestamp to the exit probe's (the inner time), the batch's wall
//! time gives the total, and `Calibration::from_batches` keeps the minimum over batches.

use std::sync::atomic::Ordering;

use ferrofluid_classfile::{instrument, MethodSite, ProbeKind, ProbeOptions};
use ferrofluid_jvmti::{sys, Class, JniEnv};
use ferrofluid_profile::{Calibration, CalibrationBatch};

use crate::flags;
use crate::hooks::{self, CALIBRATION_ID};

const CLASS: &str = "ferrofluid/Calibrate";
/// `javac --release 8` of `calibrate/Calibrate.java`.
const BYTES: &[u8] = include_bytes!("calibrate/Calibrate.class");
/// Batches of the probes as they run in a profile: each fills the thread's ring several times
/// over, so the collector drains it concurrently (the cache traffic that costs is part of the
/// probes' price), while the time the probes waited for room is left out (profiles factor such
/// waits out as pauses). With short batches that fit in the ring the probes cost ~25% less than
/// in a real profile; counting the waits made the costs vary 5x between runs on a busy machine.
const BATCHES: usize = 16;
const PAIRS: i32 = 40_000;
const _: () = assert!(2 * PAIRS as usize > crate::ring::RING_EVENTS);

/// The calibration class with its probes, defined in the bootstrap loader once per JVM.
fn class<'a>(env: &JniEnv<'a>) -> Result<Class<'a>, String> {
    if let Ok(c) = env.find_class(CLASS) {
        return Ok(c);
    }
    let out = instrument(
        BYTES,
        &ProbeOptions::new(ProbeKind::EntryExit),
        &mut |m: &MethodSite<'_>| (m.name == "empty").then_some(CALIBRATION_ID),
    )
    .map_err(|e| format!("instrumenting {CLASS}: {e}"))?;
    let bytes = out
        .bytes
        .ok_or("the calibration method was not instrumented")?;
    let class = env
        .define_class(CLASS, None, &bytes)
        .map_err(|e| format!("defining {CLASS}: {e}"))?;
    Ok(class)
}

/// Measures the probes on the calling Java thread. Briefly sets collection on (the events of the
/// calibration and of other threads meanwhile go to the recording that `collector::start` then
/// replaces).
pub fn calibrate(env: &JniEnv<'_>) -> Result<Calibration, String> {
    measure(
        env,
        flags::ACTIVE | flags::ROOT | flags::INVOKED,
        hooks::take_calibration_inner,
        hooks::take_calibration_waits,
    )
}

/// The same for the probes of code-region mode, which take another path in the hooks.
pub fn calibrate_region(env: &JniEnv<'_>) -> Result<Calibration, String> {
    measure(
        env,
        flags::ACTIVE | flags::REGION | flags::INVOKED,
        crate::region::take_calibration_inner,
        || 0,
    )
}

/// Runs the batches with the calibration method's flags set to `bits`; `take_inner` and
/// `take_waits` read (and reset) the inner time and the ring waits summed by the hooks.
fn measure(
    env: &JniEnv<'_>,
    bits: u8,
    take_inner: fn() -> u64,
    take_waits: fn() -> u64,
) -> Result<Calibration, String> {
    let class = class(env)?;
    flags::set(CALIBRATION_ID, bits);
    let was = hooks::COLLECTING.swap(true, Ordering::SeqCst);
    let mut batches = Vec::with_capacity(BATCHES);
    let mut failure = None;
    take_inner();
    take_waits();
    for _ in 0..BATCHES {
        // SAFETY: `run(I)J` takes one int.
        let elapsed =
            unsafe { env.call_static_long(class, c"run", c"(I)J", &[sys::jvalue { i: PAIRS }]) };
        match elapsed {
            Ok(ns) => batches.push(CalibrationBatch {
                pairs: PAIRS as u64,
                elapsed_ns: (ns.max(0) as u64).saturating_sub(take_waits()),
                inner_ns: take_inner(),
            }),
            Err(e) => {
                failure = Some(e.to_string());
                break;
            }
        }
    }
    hooks::COLLECTING.store(was, Ordering::SeqCst);
    flags::clear(CALIBRATION_ID);
    env.delete_local_ref(class.as_object());
    if let Some(e) = failure {
        return Err(format!("calibration: {e}"));
    }
    let c = Calibration::from_batches(&batches).ok_or("calibration: no batch")?;
    log::info!(
        "calibrated probes: inner {:.1} ns, outer {:.1} ns per call ({BATCHES} batches of {PAIRS})",
        c.inner_ns,
        c.outer_ns
    );
    Ok(c)
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
