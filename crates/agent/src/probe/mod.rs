//! The shared probe machinery: per-method flags, the probes' clock and per-thread state, the
//! event rings and the collector that builds calling-context trees from them, the calibration
//! of the probes, and the hooks class's Java fields.

pub mod calibrate;
pub mod collector;
pub mod flags;
pub mod hooks;
pub mod ring;
pub mod site_flags;
pub mod vthread;
