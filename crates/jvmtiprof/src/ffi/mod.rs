//! The crate's FFI layer, and its only `unsafe` code: the operating-system calls of the sampler
//! (`os`), the profiling signal handler (`signals`), the guarded stack walk (`walk`, with the C
//! of `csrc/walk_guard.c`), HotSpot's tables of its own layout and flags (`vmstructs`), the
//! JVMTI event trampolines (`events`), the
//! signal-side callback trait (`handler`), the natives of the
//! interception hooks (`natives`) and the agent entry points (`entry`). Everything else calls these
//! through safe functions. Each `unsafe` block says why it is sound.

pub(crate) mod entry;
pub(crate) mod events;
pub(crate) mod handler;
pub(crate) mod natives;

pub(crate) mod os;
pub(crate) mod signals;
pub(crate) mod stacks;
pub(crate) mod vmstructs;
pub(crate) mod walk;

use ferrofluid_jvmti::{sys, MethodId};

/// A `jmethodID` read back from a sample record (0: none).
pub(crate) fn method_id(raw: usize) -> Option<MethodId> {
    // SAFETY: `raw` is a jmethodID the JVM wrote into a record (HotSpot never frees one; a method
    // whose class was unloaded has a cleared id, which JVMTI calls reject with
    // JVMTI_ERROR_INVALID_METHODID).
    (raw != 0).then(|| unsafe { MethodId::from_raw(raw as sys::jmethodID) })
}
