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

mod adaptive;
mod agent;
#[allow(unsafe_code)]
mod calibrate;
mod collector;
#[allow(unsafe_code)]
mod entry;
#[allow(unsafe_code)]
mod flags;
#[allow(unsafe_code)]
mod handles;
#[allow(unsafe_code)]
pub mod hooks;
#[allow(unsafe_code)]
mod jni_intercept;
#[allow(unsafe_code)]
mod jvm;
mod logger;
mod owner;
#[allow(unsafe_code)]
mod private_dir;
#[allow(unsafe_code)]
mod receiver;
mod region;
#[allow(unsafe_code)]
mod reveal;
#[allow(unsafe_code)]
pub mod ring;
mod server;
#[allow(unsafe_code)]
mod session;
#[allow(unsafe_code)]
mod site_flags;
mod vthread;

pub use agent::AgentError;
