//! The JNI side of `ferrofluid/Hooks`: the `reveal` native, the registration of every native of
//! the class, and the raw-argument functions the probes' natives call. Those natives (`enter`,
//! `exit`, `receiver`... in `hooks`) stay direct `extern "C"` functions there, one call from the
//! JVM to their inlined bodies; what they hand on with the JVM's raw pointers is converted here.

use ferrofluid_jvmti::{ffi_guard, sys, Class, JniEnv, Object};

use crate::{hooks, receiver, reveal, site_flags};

/// Binds every native of the hooks class `class` ([`hooks::natives`] and [`native_reveal`]).
pub fn register_hooks(
    env: &JniEnv<'_>,
    class: Class<'_>,
    gated: bool,
    receiver_gated: bool,
) -> ferrofluid_jvmti::Result<()> {
    let natives = hooks::natives(gated, receiver_gated);
    // SAFETY: `natives` lists the static native methods of the hooks class with functions of the
    // matching JNI signatures; the library is never unloaded once hooks are bound
    // (Agent_OnAttach cannot fail after this point).
    unsafe { env.register_natives(class, &natives) }
}

/// `Hooks.reveal(target, kind)`, called by gateway probes.
pub extern "C" fn native_reveal(
    env: *mut sys::JNIEnv,
    _: sys::jclass,
    target: sys::jobject,
    kind: sys::jint,
) {
    ffi_guard("Hooks.reveal", (), || {
        if target.is_null() || !hooks::revealing() {
            return;
        }
        // SAFETY: the JNIEnv of this native call.
        let Some(jni) = (unsafe { JniEnv::from_raw(env) }) else {
            return;
        };
        if kind == reveal::CLASS {
            // SAFETY: the gateway of this kind (`Unsafe.ensureClassInitialized`) passes its
            // `Class<?>` parameter: a live local reference to a class.
            let class = unsafe { Class::from_raw(target) };
            reveal::reveal_class(&jni, class);
            return;
        }
        // SAFETY: a live local reference passed to this native method.
        let target = unsafe { Object::from_raw(target) };
        reveal::revealed(&jni, target, kind);
    })
}

/// [`site_flags`]' count of threads inside a root, for a native of `hooks` (`env` is the
/// JNIEnv of its call, or null where there is none).
#[inline]
pub fn thread_entered(env: *mut sys::JNIEnv) -> u32 {
    // SAFETY: null or the JNIEnv the JVM passed to the calling native: the current thread's.
    site_flags::entered_by(unsafe { JniEnv::from_raw(env) }.as_ref())
}

/// As [`thread_entered`], for leaving.
#[inline]
pub fn thread_left(env: *mut sys::JNIEnv, counted_in: u32) {
    // SAFETY: as in `thread_entered`.
    site_flags::left_by(unsafe { JniEnv::from_raw(env) }.as_ref(), counted_in)
}

/// [`crate::jvm::thread_identity`] of the thread of a native of `hooks`.
pub fn current_thread_identity(env: *mut sys::JNIEnv) -> (Option<u64>, Option<String>) {
    // SAFETY: the JNIEnv the JVM passed to the calling native: the current thread's.
    match unsafe { JniEnv::from_raw(env) } {
        Some(env) => crate::jvm::thread_identity(&env),
        None => (None, None),
    }
}

/// `Hooks.receiver(receiver, site)` with a non-null receiver, inside a root's extent.
pub fn reached(env: *mut sys::JNIEnv, receiver: sys::jobject, site: u32) {
    // SAFETY: the JNIEnv of the calling native, and its argument: a live local reference.
    let (Some(jni), Some(receiver)) = (unsafe { JniEnv::from_raw(env) }, unsafe {
        Object::from_nullable(receiver)
    }) else {
        return;
    };
    receiver::reached_by(&jni, receiver, site);
}

/// `Hooks.receiver(null, site)` of a deferred site not revealed yet, inside a root's extent.
#[cold]
pub fn reached_without_receiver(env: *mut sys::JNIEnv, site: u32) {
    // SAFETY: the JNIEnv of the calling native.
    if let Some(jni) = unsafe { JniEnv::from_raw(env) } {
        receiver::reached_without_receiver_by(&jni, site);
    }
}
