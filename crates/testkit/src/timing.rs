//! How far a thread's CPU time may disagree with its wall time.

/// Whether `cpu` ns of thread CPU time fits in an interval of `wall` ns. The two come from
/// different kernel clocks (`CLOCK_THREAD_CPUTIME_ID` and the TSC or `CLOCK_MONOTONIC`), which
/// disagree by tens of µs: with no agent loaded, the JVM's own `getCurrentThreadCpuTime` and
/// `nanoTime` around a 50 ms spin gave CPU up to 38 µs above wall in 10 of 30 runs on the
/// development VM (a KVM guest; docs/PERFORMANCE.md, "Thread CPU time"). Allows 50 µs plus 0.1%.
pub fn cpu_fits_wall(cpu: u64, wall: u64) -> bool {
    cpu <= wall + wall / 1000 + 50_000
}

/// [`cpu_fits_wall`] for the sums over `calls` intervals (a node's `calls` invocations): each
/// interval's two clocks may disagree by up to a CPU clock read (µs on the development VM, where
/// `--cpu` costs 2.9-3.4 µs of CPU per recorded call), so 3 µs more are allowed per call.
pub fn cpu_fits_wall_calls(cpu: u64, wall: u64, calls: u64) -> bool {
    cpu_fits_wall(cpu, wall + calls.saturating_mul(3_000))
}
