//! The attach tests' target, `ferrofluid_testkit::Ticker`, under the name these tests and the
//! agent's (through `#[path]`) use.

pub use ferrofluid_testkit::Ticker as Jvm;
