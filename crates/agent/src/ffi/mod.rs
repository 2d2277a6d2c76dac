//! The agent's FFI layer: every function the JVM calls (`Agent_OnLoad`/`OnAttach`/`OnUnload`,
//! the JVMTI event callbacks, the JNI natives of `ferrofluid/Hooks` and the JNI call wrappers)
//! and every conversion of a raw pointer the JVM hands over into a typed reference of
//! `ferrofluid_jvmti`. These functions only convert, run the work under `ffi_guard` (no panic
//! unwinds into the JVM), and call safe functions of the other modules, which are written
//! without `unsafe` (the crate denies it; this module alone allows it).
//!
//! - [`entry`]: the agent's load and unload entry points.
//! - [`callbacks`]: the JVMTI event callbacks.
//! - [`natives`]: `Hooks.reveal`, the registration of the hooks' natives, and the raw-argument
//!   functions the probes' natives (in `hooks`, kept there so that each stays one direct call)
//!   use.
//! - [`count`]: the block-counting probes' exit native.
//! - [`jni_intercept`]: the JNI `Call*Method*`/`NewObject*` wrappers.
//! - [`jni_alloc`]: the allocating JNI functions' wrappers of the `alloc` mode.
//!
//! Below this layer are `ferrofluid-jvmti` (JVMTI/JNI, global references, OS calls) and
//! `ferrofluid-jvmti-sys`; docs/decisions/0026-ffi-layer.md says what lives where.

pub mod alloc;
#[cfg(feature = "alloc-count")]
pub mod alloc_count;
pub mod alloc_scope;
pub mod callbacks;
pub mod count;
pub mod entry;
pub mod jni_alloc;
pub mod jni_intercept;
pub mod natives;
