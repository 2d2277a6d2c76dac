//! The JNI side of the `alloc` engine's roots (`super::super::scope`): the `ferrofluid/AllocScope`
//! class, defined in the bootstrap loader next to `ferrofluid/Alloc`, and its reset.

use crate::ffi::jni::call_static;
use ferrofluid_jvmti::JniEnv;

/// Internal name of the class the probes of an `alloc` session with roots call.
pub const SCOPE_CLASS: &str = "ferrofluid/AllocScope";
const SCOPE_BYTES: &[u8] = include_bytes!("../AllocScope.class");

/// Defines `ferrofluid/AllocScope` (or finds it, defined by an earlier session or attach) and
/// resets it: every thread is outside every root. On a Java thread, before any class calls it
/// (its static initialiser runs here, never inside a probe).
pub fn install(env: &JniEnv<'_>) -> Result<(), String> {
    let class = match env.find_class(SCOPE_CLASS) {
        Ok(c) => c,
        Err(_) => {
            env.clear_exception();
            env.define_class(SCOPE_CLASS, None, SCOPE_BYTES)
                .map_err(|e| format!("defining {SCOPE_CLASS}: {e}"))?
        }
    };
    // SAFETY: `reset()V` takes nothing and returns nothing.
    let reset = unsafe { call_static(env, class, c"reset", c"()V", &[], false) };
    env.delete_local_ref(class.as_object());
    reset
        .map(|_| ())
        .map_err(|e| format!("resetting {SCOPE_CLASS}: {e}"))
}
