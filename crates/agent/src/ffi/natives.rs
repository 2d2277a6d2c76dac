//! The natives of `ferrofluid/Hooks`: the probes' (`enter`, `exit`, `receiver`...), `reveal`,
//! their registration table, and the conversions of the raw pointers they hand on.
//!
//! Each probe native is one direct `extern "C"` function reading the clock first and calling
//! the engine dispatch (`crate::engine`) or the hooks (`crate::probe::hooks`), which inline into it.
//! The JVM's raw `JNIEnv` travels on to where it is needed (rarely: a new ring, revelation) and
//! is converted there by the functions at the end of this file.

use std::ffi::{c_void, CStr};

use ferrofluid_jvmti::{ffi_guard, sys, Class, JniEnv, Object};

use crate::engine;
use crate::probe::{hooks, site_flags};
use crate::runtime::{receiver, reveal};

/// One native of the hooks class for RegisterNatives: name, descriptor, function.
pub type Native = (&'static CStr, &'static CStr, *mut c_void);

/// Every native of the hooks class: the tables below in order, a later entry for the same
/// method replacing an earlier one (an engine's FFI module may bind a method the probes' table
/// binds to a no-op). An engine's natives are one more line here. `blocks_gated`: the class has
/// the Java gates of `exitBlocks`/`unwindBlocks` (`crate::engine::count::ffi::natives`).
pub fn hooks_natives(gated: bool, receiver_gated: bool, blocks_gated: bool) -> Vec<Native> {
    merge([
        probe_natives(gated, receiver_gated),
        reveal_natives(),
        crate::engine::count::ffi::natives(blocks_gated),
    ])
}

/// The natives of `tables` in order, a later one replacing an earlier one of the same name.
fn merge(tables: impl IntoIterator<Item = Vec<Native>>) -> Vec<Native> {
    let mut natives: Vec<Native> = Vec::new();
    for native in tables.into_iter().flatten() {
        natives.retain(|n| n.0 != native.0);
        natives.push(native);
    }
    natives
}

/// The probes' natives. With `gated` (the class this agent generates), `enter`/`exit`/`unwind`
/// have Java bodies that call the natives `enter0`/`exit0`; without (a class an older agent
/// defined in this JVM), they are natives themselves. Likewise `receiver` calls the native
/// `receiver0` when `receiver_gated`.
fn probe_natives(gated: bool, receiver_gated: bool) -> Vec<Native> {
    let enter = native_enter as *mut c_void;
    let exit = native_exit as *mut c_void;
    let mut natives = if gated {
        vec![(c"enter0", c"(I)V", enter), (c"exit0", c"(I)V", exit)]
    } else {
        vec![
            (c"enter", c"(I)V", enter),
            (c"exit", c"(I)V", exit),
            (c"unwind", c"(I)V", exit),
        ]
    };
    let receiver = if receiver_gated {
        c"receiver0"
    } else {
        c"receiver"
    };
    natives.extend([
        (
            c"alloc",
            c"(Ljava/lang/Object;I)V",
            native_alloc as *mut c_void,
        ),
        (c"nativeEnter", c"(I)V", enter),
        (c"nativeExit", c"(I)V", exit),
        (
            receiver,
            c"(Ljava/lang/Object;I)V",
            native_receiver as *mut c_void,
        ),
    ]);
    natives
}

fn reveal_natives() -> Vec<Native> {
    vec![(
        c"reveal",
        c"(Ljava/lang/Object;I)V",
        native_reveal as *mut c_void,
    )]
}

/// Binds every native of the hooks class `class` ([`hooks_natives`]).
pub fn register_hooks(
    env: &JniEnv<'_>,
    class: Class<'_>,
    gated: bool,
    receiver_gated: bool,
    blocks_gated: bool,
) -> ferrofluid_jvmti::Result<()> {
    let natives = hooks_natives(gated, receiver_gated, blocks_gated);
    // SAFETY: `natives` lists the static native methods of the hooks class with functions of the
    // matching JNI signatures; the library is never unloaded once hooks are bound
    // (Agent_OnAttach cannot fail after this point).
    unsafe { env.register_natives(class, &natives) }
}

// The probes' natives. The code they call is written not to panic; ffi_guard (free unless a
// panic happens) makes sure none could unwind into the JVM anyway.
//
// Each reads the clock first: what follows, up to the publication of its event, is the probe's
// measured duration. Reading it later, after the flag and thread-local checks, was tried: it
// saves the read where a probe records nothing, but moves ~12 ns per probe from the measured
// part to the calibrated rest, the uncertain part (docs/decisions/0012-probes-measure-themselves.md).

extern "C" fn native_enter(env: *mut sys::JNIEnv, _: sys::jclass, id: sys::jint) {
    let start = engine::probe_ticks();
    ffi_guard("Hooks.enter", (), || engine::enter(env, id, start))
}

extern "C" fn native_exit(env: *mut sys::JNIEnv, _: sys::jclass, id: sys::jint) {
    let start = engine::probe_ticks();
    ffi_guard("Hooks.exit", (), || engine::exit(env, id, start))
}

extern "C" fn native_alloc(_: *mut sys::JNIEnv, _: sys::jclass, _: sys::jobject, _: sys::jint) {}

extern "C" fn native_receiver(
    env: *mut sys::JNIEnv,
    _: sys::jclass,
    receiver: sys::jobject,
    site: sys::jint,
) {
    ffi_guard("Hooks.receiver", (), || {
        // SAFETY: the native's argument: null or a live local reference for this call.
        match unsafe { Object::from_nullable(receiver) } {
            Some(receiver) => hooks::receiver(env, receiver, site as u32),
            None => hooks::receiver_absent(env, site as u32),
        }
    })
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

/// Runs `f` with the JNIEnv a native of the hooks was called with (`None` for null: the
/// benchmarks call the hooks without a JVM). `env` comes from a native of this module only.
#[inline]
pub fn with_env<R>(env: *mut sys::JNIEnv, f: impl FnOnce(Option<&JniEnv<'_>>) -> R) -> R {
    // SAFETY: null or the JNIEnv the JVM passed to the calling native: the current thread's,
    // valid for the native call `f` runs within.
    f(unsafe { JniEnv::from_raw(env) }.as_ref())
}

/// [`site_flags`]' count of threads inside a root, for the hooks (`env` as in [`with_env`]).
#[inline]
pub fn thread_entered(env: *mut sys::JNIEnv) -> u32 {
    with_env(env, site_flags::entered_by)
}

/// As [`thread_entered`], for leaving.
#[inline]
pub fn thread_left(env: *mut sys::JNIEnv, counted_in: u32) {
    with_env(env, |jni| site_flags::left_by(jni, counted_in))
}

/// [`crate::runtime::jvm::thread_identity`] of the thread of a native of the hooks.
pub fn current_thread_identity(env: *mut sys::JNIEnv) -> (Option<u64>, Option<String>) {
    with_env(env, |jni| {
        jni.map_or((None, None), crate::runtime::jvm::thread_identity)
    })
}

/// `Hooks.receiver(receiver, site)` with a receiver, inside a root's extent.
pub fn reached(env: *mut sys::JNIEnv, receiver: Object<'_>, site: u32) {
    with_env(env, |jni| {
        if let Some(jni) = jni {
            receiver::reached_by(jni, receiver, site);
        }
    })
}

/// `Hooks.receiver(null, site)` of a deferred site not revealed yet, inside a root's extent.
#[cold]
pub fn reached_without_receiver(env: *mut sys::JNIEnv, site: u32) {
    with_env(env, |jni| {
        if let Some(jni) = jni {
            receiver::reached_without_receiver_by(jni, site);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(natives: &[Native]) -> Vec<&str> {
        natives.iter().map(|n| n.0.to_str().unwrap()).collect()
    }

    #[test]
    fn every_native_of_the_hooks_class_is_bound_once() {
        assert_eq!(
            names(&hooks_natives(true, true, true)),
            [
                "enter0",
                "exit0",
                "alloc",
                "nativeEnter",
                "nativeExit",
                "receiver0",
                "reveal",
                "exitBlocks0",
                "unwindBlocks0"
            ]
        );
        let older = hooks_natives(false, false, false);
        let older = names(&older);
        assert_eq!(older[..3], ["enter", "exit", "unwind"]);
        assert_eq!(older[older.len() - 2..], ["exitBlocks", "unwindBlocks"]);
    }

    #[test]
    fn a_later_table_replaces_a_method_an_earlier_one_binds() {
        extern "C" fn other(_: *mut sys::JNIEnv, _: sys::jclass, _: sys::jobject, _: sys::jint) {}
        let replacement: Native = (c"alloc", c"(Ljava/lang/Object;I)V", other as *mut c_void);
        let natives = merge([probe_natives(true, true), vec![replacement]]);
        assert_eq!(natives.len(), probe_natives(true, true).len());
        let alloc: Vec<&Native> = natives.iter().filter(|n| n.0 == c"alloc").collect();
        assert_eq!(alloc.len(), 1);
        assert_eq!(alloc[0].2, other as *mut c_void);
    }
}
