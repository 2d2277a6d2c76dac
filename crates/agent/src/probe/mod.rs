//! The shared probe machinery, below the engines: per-method flags, the probes' clock and
//! per-thread state (root depth, extents, lazy revelation), the call recorder and its event
//! rings, the collector that builds calling-context trees from them, the calibration of the
//! probes, the hooks class's Java fields, and the state a virtual thread carries from carrier to
//! carrier. It reaches the runtime only through what the runtime registered ([`upcalls`]).

pub mod calibrate;
pub mod clock;
pub mod collector;
pub mod contexts;
pub mod flags;
pub mod recorder;
pub mod ring;
pub mod share;
pub mod site_flags;
pub mod thread;
pub mod upcalls;
pub mod vthread;
