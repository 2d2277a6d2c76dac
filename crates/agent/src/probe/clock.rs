//! The probes' clock: the TSC, scaled to ns, where the kernel itself trusts it, else
//! `CLOCK_MONOTONIC` (docs/decisions/0001-tsc-clock.md).

use std::sync::atomic::{AtomicU64, Ordering};

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
    if TSC.scale.load(Ordering::Relaxed) != 0 {
        return ferrofluid_jvmti::os::rdtsc();
    }
    monotonic()
}

/// The monotonic time (ns) of a [`ticks`] reading.
#[inline]
pub fn time_at(ticks: u64) -> u64 {
    if TSC.scale.load(Ordering::Relaxed) == 0 {
        return ticks;
    }
    TSC.ns_base.load(Ordering::Relaxed)
        + ticks_to_ns(ticks.wrapping_sub(TSC.base.load(Ordering::Relaxed)))
}

/// A duration in [`ticks`], in ns.
#[inline]
pub fn ticks_to_ns(ticks: u64) -> u64 {
    let scale = f64::from_bits(TSC.scale.load(Ordering::Relaxed));
    if scale > 0.0 {
        (ticks as f64 * scale) as u64
    } else {
        ticks
    }
}

#[inline]
fn monotonic() -> u64 {
    ferrofluid_jvmti::os::monotonic_ns()
}

/// The TSC's scale and origin, set once by [`init_clock`].
struct Tsc {
    /// ns per TSC tick (f64 bits); 0: use `CLOCK_MONOTONIC`.
    scale: AtomicU64,
    /// A TSC reading and the `CLOCK_MONOTONIC` time (ns) it stands for.
    base: AtomicU64,
    ns_base: AtomicU64,
}

// Process-wide: every probe, a JVM native without user data, reads the clock.
static TSC: Tsc = Tsc {
    scale: AtomicU64::new(0),
    base: AtomicU64::new(0),
    ns_base: AtomicU64::new(0),
};

/// How long the TSC is scaled against `CLOCK_MONOTONIC`: both ends are bracketed reads (tens of
/// ns each, [`tsc_and_monotonic`]), so 5 ms scales it within 0.01%; the agent's load (and with
/// it the JVM's start) waits for it.
const CALIBRATION: std::time::Duration = std::time::Duration::from_millis(5);

/// Uses the TSC for timestamps if the kernel itself uses it as its clock source (which it does only
/// when the TSC is invariant and synchronised across CPUs), scaled against `CLOCK_MONOTONIC` over
/// [`CALIBRATION`], unless the environment has `FERROFLUID_CLOCK=monotonic`. Called once, before
/// any probe records.
pub fn init_clock() {
    #[cfg(target_arch = "x86_64")]
    {
        if TSC.scale.load(Ordering::SeqCst) != 0 {
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
        std::thread::sleep(CALIBRATION);
        let (t1, n1) = tsc_and_monotonic();
        if t1 <= t0 || n1 <= n0 {
            return;
        }
        let scale = (n1 - n0) as f64 / (t1 - t0) as f64;
        TSC.base.store(t1, Ordering::SeqCst);
        TSC.ns_base.store(n1, Ordering::SeqCst);
        TSC.scale.store(scale.to_bits(), Ordering::SeqCst);
        log::info!("timestamps: TSC at {:.3} GHz", 1.0 / scale);
    }
}

/// The TSC and `CLOCK_MONOTONIC` read together: of a few tries, the one whose monotonic read
/// the fewest TSC ticks bracket (the TSC at its middle). A thread preempted between two plain
/// reads skews the scale by the preemption over the calibration window (on a busy CI machine 2%
/// over 20 ms, which made a method's thread CPU time exceed its wall time).
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
