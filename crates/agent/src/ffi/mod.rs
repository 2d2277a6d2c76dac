//! The agent's common FFI layer, the bottom of its layers: every function the JVM calls that is
//! not an engine's own (`Agent_OnLoad`/`OnAttach`/`OnUnload`, the JVMTI event callbacks, the JNI
//! natives of `ferrofluid/Hooks`, the JNI call wrappers) and every conversion of a raw pointer
//! the JVM hands over into a typed reference of `ferrofluid_jvmti`. These functions only
//! convert, run the work under `ffi_guard` (no panic unwinds into the JVM), and call up through
//! what the layers above registered: each is generic over a trait the runtime or the engine
//! registry implements ([`entry::Lifecycle`], [`events::JvmEvents`], [`natives::Probes`],
//! [`natives::Sites`], [`jni_calls::JniCalls`]), instantiated where the upper layer installs
//! it, so a call up is a static call and this layer names no module above it. The code above
//! is written without `unsafe` (the crate denies it; this module and the engines' own `ffi`
//! modules allow it).
//!
//! - [`entry`]: the agent's load and unload entry points (instantiated in `lib.rs`).
//! - [`events`]: the JVMTI event callbacks.
//! - [`natives`]: the natives of the hooks class and their registration table.
//! - [`jni_calls`]: the JNI `Call*Method*`/`NewObject*` wrappers.
//! - [`jni`]: JNI calls of static Java methods.
//! - [`census`]: the compiled methods in the code cache, replayed to an environment of its own.
//!
//! Below this layer are `ferrofluid-jvmti` (JVMTI/JNI, global references, OS calls) and
//! `ferrofluid-jvmti-sys`; docs/decisions/0026-ffi-layer.md says what lives where.

use ferrofluid_jvmti::{sys, JniEnv};

#[cfg(feature = "alloc-count")]
pub mod alloc_count;
pub mod census;
pub mod entry;
pub mod events;
pub mod jni;
pub mod jni_calls;
pub mod natives;

/// Runs `f` with the JNIEnv a native of the hooks (or of an engine's class) was called with
/// (`None` for null: the benchmarks call the probes without a JVM). `env` is one a native
/// received from the JVM, handed down unconverted from the native.
#[inline]
pub fn with_env<R>(env: *mut sys::JNIEnv, f: impl FnOnce(Option<&JniEnv<'_>>) -> R) -> R {
    // SAFETY: null or the JNIEnv the JVM passed to the calling native: the current thread's,
    // valid for the native call `f` runs within.
    f(unsafe { JniEnv::from_raw(env) }.as_ref())
}
