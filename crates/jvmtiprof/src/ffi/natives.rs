//! The natives of the interception hooks class (`jvmtiprof/Hooks.enter/exit/unwind(I)V`): defined
//! once per process in the bootstrap loader, bound here with `RegisterNatives`.

use ferrofluid_jvmti::{ffi_guard, sys, JniEnv};

use crate::error::Result;
use crate::intercept::{on_probe, Exit, Probe, HOOKS_CLASS};

/// Defines the hooks class from `bytes` (unless an earlier install did) and binds its natives.
pub(crate) fn bind(env: &JniEnv<'_>, bytes: &[u8]) -> Result<()> {
    let class = match env.find_class(HOOKS_CLASS) {
        Ok(c) => c,
        Err(_) => env.define_class(HOOKS_CLASS, None, bytes)?,
    };
    let natives = [
        (c"enter", c"(I)V", enter as *mut std::ffi::c_void),
        (c"exit", c"(I)V", exit as *mut std::ffi::c_void),
        (c"unwind", c"(I)V", unwind as *mut std::ffi::c_void),
    ];
    // SAFETY: each function below has the JNI signature of a static native `(I)V` method
    // (JNIEnv*, jclass, jint) and stays callable for the life of the process.
    let bound = unsafe { env.register_natives(class, &natives) };
    env.delete_local_ref(class.as_object());
    bound.map_err(Into::into)
}

/// # Safety
/// Called by the JVM for `Hooks.enter(id)` with the calling thread's JNIEnv.
unsafe extern "C" fn enter(env: *mut sys::JNIEnv, _: sys::jclass, id: sys::jint) {
    ffi_guard("Hooks.enter", (), || {
        // SAFETY: the JVM passes the calling thread's JNIEnv to a native method.
        if let Some(env) = unsafe { JniEnv::from_raw(env) } {
            on_probe(&env, id, Probe::Enter)
        }
    })
}

/// # Safety
/// Called by the JVM for `Hooks.exit(id)` with the calling thread's JNIEnv.
unsafe extern "C" fn exit(env: *mut sys::JNIEnv, _: sys::jclass, id: sys::jint) {
    ffi_guard("Hooks.exit", (), || {
        // SAFETY: the JVM passes the calling thread's JNIEnv to a native method.
        if let Some(env) = unsafe { JniEnv::from_raw(env) } {
            on_probe(&env, id, Probe::Exit(Exit::Return))
        }
    })
}

/// # Safety
/// Called by the JVM for `Hooks.unwind(id)` with the calling thread's JNIEnv.
unsafe extern "C" fn unwind(env: *mut sys::JNIEnv, _: sys::jclass, id: sys::jint) {
    ffi_guard("Hooks.unwind", (), || {
        // SAFETY: the JVM passes the calling thread's JNIEnv to a native method.
        if let Some(env) = unsafe { JniEnv::from_raw(env) } {
            on_probe(&env, id, Probe::Exit(Exit::Throw))
        }
    })
}
