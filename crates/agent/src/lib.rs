//! `libferrofluid_agent.so`, the JVMTI agent of ferrofluid.
//!
//! Loaded at startup (`-agentpath:…/libferrofluid_agent.so=OPTIONS`) or into a running JVM (attach
//! `load`), it parses its options with `ferrofluid-protocol`, logs to its own file, and serves the tool on
//! a UNIX socket in a private directory (0700 directory, 0600 socket, peer uid checked with
//! SO_PEERCRED). `detach` makes it dormant; attaching again wakes it up.
//!
//! It runs inside someone else's JVM, so: every entry point is under `ffi_guard`; failures are logged
//! and returned as error codes, never printed into a running application; no lock is held across JVMTI
//! calls that may load classes.
//!
//! Its modules are four layers, each calling only the ones below (docs/architecture.md,
//! checked by `tests/layers.rs`): `runtime` (lifecycle, control server, sessions, JVMTI
//! events), `engine` (the `Engine` trait, its registry, one folder per mode), `probe` (the
//! machinery the engines' probes share) and `ffi` (what the JVM calls, converting its raw
//! pointers, calling up through handler traits). This root wires the JVM's entry points to the
//! runtime's lifecycle.
//!
//! The crate denies `unsafe_code` (a workspace lint); `ffi` and an engine's own `ffi` module
//! allow it. Below them, `ferrofluid-jvmti` wraps JVMTI, JNI and the OS calls.

mod engine;
// The FFI layer: every entry point the JVM calls and every raw-pointer conversion.
#[allow(unsafe_code)]
mod ffi;
mod probe;
mod runtime;
#[cfg(test)]
mod testing;

pub use engine::bench;
pub use runtime::lifecycle::AgentError;

ffi::entry::entry_points!(runtime::lifecycle::Lifecycle);
