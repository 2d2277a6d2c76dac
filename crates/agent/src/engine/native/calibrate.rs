//! What a wrapper adds to a native call, measured on this JVM at each session's start, for the
//! profile's compensation: `ferrofluid/NativeCalibrate` (`calibrate/NativeCalibrate.java`) has
//! a native wrapped as an application's are (`wrapped`) and one left alone (`bare`), both bound
//! to a function that does nothing; the agent times a loop of each, in alternating batches, with
//! the wrappers switched on but nothing recorded. The difference per call is the calls into the
//! hooks and back (the hooks' own work while recording is measured by the probes themselves and
//! subtracted as measured). Half of it falls between the two timestamps of a native frame (its
//! inner time), half in its caller (outer): each hook is one call in and one return.

use ferrofluid_classfile::{instrument, MethodSite, ProbeKind, ProbeOptions};
use ferrofluid_jvmti::{Class, JniEnv, Primitive};
use ferrofluid_profile::Calibration;

use super::{ffi, wrap};

const CLASS: &str = "ferrofluid/NativeCalibrate";
/// `javac --release 8` of `calibrate/NativeCalibrate.java`.
const BYTES: &[u8] = include_bytes!("calibrate/NativeCalibrate.class");
/// Calls per batch: long enough that the loops run compiled after the first batches.
const CALLS: i32 = 10_000;
/// Batches of each loop; the first [`WARM_UP`] run interpreted or C1-compiled code.
const BATCHES: usize = 12;
const WARM_UP: usize = 4;
/// The id the calibration wrapper passes (never a wrapped native's: those start at
/// [`wrap::FIRST_ID`]); nothing is recorded while calibrating.
const ID: u32 = 0;

/// The calibration class with its `wrapped` native wrapped, defined once per JVM.
fn class<'a>(env: &JniEnv<'a>) -> Result<Class<'a>, String> {
    let mut options = ProbeOptions::new(ProbeKind::Native);
    wrap::HOOKS_CLASS.clone_into(&mut options.hooks.native_class);
    wrap::PREFIX.clone_into(&mut options.hooks.native_prefix);
    let out = instrument(BYTES, &options, &mut |m: &MethodSite<'_>| {
        (m.name == "wrapped").then_some(ID)
    })
    .map_err(|e| format!("wrapping {CLASS}: {e}"))?;
    let bytes = out
        .bytes
        .ok_or_else(|| format!("wrapping {CLASS}: nothing wrapped"))?;
    ffi::define_calibration(env, CLASS, &bytes)
}

/// Measures the wrappers on the calling Java thread (the hooks class must be `active` and
/// nothing collecting): the median over the compiled batches of (wrapped − bare) per call.
pub fn calibrate(env: &JniEnv<'_>) -> Result<Calibration, String> {
    let class = class(env)?;
    let args = [Primitive::Int(CALLS)];
    let run = |method: &std::ffi::CStr| -> Result<i64, String> {
        env.call_static_long_method(class, method, c"(I)J", &args)
            .map_err(|e| e.to_string())
    };
    let mut per_call = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let wrapped = run(c"runWrapped")?;
        let bare = run(c"runBare")?;
        per_call.push((wrapped - bare) as f64 / f64::from(CALLS));
    }
    env.delete_local_ref(class.as_object());
    let total = median(&per_call[WARM_UP..]).max(0.0);
    Ok(Calibration {
        inner_ns: total / 2.0,
        outer_ns: total / 2.0,
    })
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    /// The committed class file is what javac makes of the committed source.
    #[test]
    fn class_file_matches_its_source() {
        let Some(made) = crate::testing::compiled(
            "src/engine/native/calibrate/NativeCalibrate.java",
            "8",
            "ferrofluid/NativeCalibrate.class",
        ) else {
            return;
        };
        assert!(
            made == super::BYTES,
            "recompile NativeCalibrate.java (see its comment)"
        );
    }

    #[test]
    fn the_median_is_the_lower_middle_value() {
        assert_eq!(super::median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(&[4.0, 1.0, 3.0, 2.0]), 2.0);
        assert_eq!(super::median(&[]), 0.0);
    }
}
