//! What ferrofluid's integration tests share, whatever crate they test: where the JDKs are,
//! `javac` into fresh directories, the agent library cargo built, a program's output read line by
//! line with a deadline ([`Program`], and the ticker JVM [`Ticker`] built on it), and the profile
//! JSON the agent and the CLI write, with the lookups the tests make in it; the guard that a
//! crate's modules import one way; `go tool pprof` read back ([`pprof`]), and an HTTP receiver
//! standing in for a profiling backend ([`receiver`]).
//!
//! A dev-dependency only. It depends on no workspace crate, so any crate's tests can use it without
//! cargo building a second copy of the crate under test. What needs the crate under test stays in
//! that crate's `tests/common/` (the CLI's commands, the report crate's profiles, the in-process
//! JVM of the JVMTI bindings, the planner's replay of a run), built on this.

mod agent;
mod jdk;
mod json;
mod modules;
pub mod pprof;
mod process;
pub mod receiver;
mod ticker;
mod timing;

pub use agent::{agent_library_beside, agent_library_beside_test, AGENT_LIBRARY};
pub use jdk::{
    fresh_dir, java_home, javac, jdk21_or_skip, jdk25_or_skip, scratch_dir, JDK17_HOME, JDK25_HOME,
};
pub use json::{child, child_names, entry, parse_profile_json, read_profile_json, thread, u};
pub use modules::assert_no_module_cycles;
pub use process::{Lines, Program, PATIENCE};
pub use ticker::{ticker_line, Ticker};
pub use timing::{cpu_fits_wall, cpu_fits_wall_calls};
