//! The probes called as the natives call them, through the active engine's dispatch, without a
//! JVM: for the benchmark (`benches/hot_path.rs`) and tests. `env` is never used unless a ring
//! must be created, which [`prime_thread`] does first.

use crate::probe::clock::ticks;

pub use crate::probe::clock::{init_clock, now};
pub use crate::probe::recorder::{bench_method, prime_thread, RINGS};
pub use crate::probe::thread::SWITCHES;

/// The entry and exit probes of `id`.
#[doc(hidden)]
pub fn bench_pair(id: u32) {
    super::enter(std::ptr::null_mut(), id as i32, ticks());
    super::exit(std::ptr::null_mut(), id as i32, ticks());
}

/// Enters `id` only (e.g. a root, for the frames that follow).
#[doc(hidden)]
pub fn bench_enter(id: u32) {
    super::enter(std::ptr::null_mut(), id as i32, ticks());
}

/// Exits `id` only.
#[doc(hidden)]
pub fn bench_exit(id: u32) {
    super::exit(std::ptr::null_mut(), id as i32, ticks());
}
