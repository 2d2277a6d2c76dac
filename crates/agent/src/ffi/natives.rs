//! The natives of `ferrofluid/Hooks`: the probes' (`enter`, `exit`, `exitBlocks`, ...), the
//! sites' (`receiver`, `reveal`), and their registration table.
//!
//! Each probe native is one direct `extern "C"` function reading the clock first and calling
//! the probe dispatch ([`Probes`], the engine registry's), which inlines into it: the natives are
//! generic over the dispatch and the site handler ([`Sites`], the runtime's), instantiated
//! where the runtime binds them, so no call goes through a pointer. The JVM's raw `JNIEnv`
//! travels on to where it is needed (rarely: a new ring, revelation) and is converted there
//! ([`super::with_env`]).

use std::ffi::{c_void, CStr};

use ferrofluid_jvmti::{ffi_guard, sys, Class, JniEnv, Object};

/// One native of the hooks class for RegisterNatives: name, descriptor, function.
pub type Native = (&'static CStr, &'static CStr, *mut c_void);

/// Where the probes' natives go: the active engine's probes (the engine registry's dispatch).
pub trait Probes {
    /// The probe's clock reading at its start (or 0 for an engine that reads none).
    fn ticks() -> u64;
    /// The entry probe of method `id` (or `!id`), started at `start`.
    fn enter(env: *mut sys::JNIEnv, id: i32, start: u64);
    /// The exit or unwind probe of method `id`.
    fn exit(env: *mut sys::JNIEnv, id: i32, start: u64);
    /// The exit or unwind probe of a method with block counters, with its `bytecodes`.
    fn exit_blocks(env: *mut sys::JNIEnv, id: i32, bytecodes: i32);
}

/// Where the sites' natives go: receivers, deferred sites and gateways (the runtime's
/// revelation).
pub trait Sites {
    /// `Hooks.reveal`'s kind whose target is a `java.lang.Class`.
    const CLASS_KIND: i32;
    /// `Hooks.receiver(receiver, site)`: a receiver site, `Thread.start()`, or (no receiver) a
    /// deferred site.
    fn receiver(env: *mut sys::JNIEnv, receiver: Option<Object<'_>>, site: u32);
    /// Whether revelation may run on this thread now (`Hooks.reveal` does nothing otherwise).
    fn revealing() -> bool;
    /// `Hooks.reveal(class, CLASS_KIND)`.
    fn reveal_class(env: &JniEnv<'_>, class: Class<'_>);
    /// `Hooks.reveal(target, kind)` for every other kind.
    fn reveal(env: &JniEnv<'_>, target: Object<'_>, kind: i32);
}

/// Every native of the hooks class, the dispatch `P` and the sites `S` behind them: the tables
/// below in order, a later entry for the same method replacing an earlier one. `gated`,
/// `receiver_gated`, `blocks_gated`: the class has the Java gates of `enter`/`exit`/`unwind`,
/// `receiver`, and `exitBlocks`/`unwindBlocks` (the class this agent generates; a class an older
/// agent defined in this JVM may lack them).
pub fn hooks_natives<P: Probes, S: Sites>(
    gated: bool,
    receiver_gated: bool,
    blocks_gated: bool,
) -> Vec<Native> {
    merge([
        probe_natives::<P, S>(gated, receiver_gated),
        reveal_natives::<S>(),
        block_natives::<P>(blocks_gated),
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
fn probe_natives<P: Probes, S: Sites>(gated: bool, receiver_gated: bool) -> Vec<Native> {
    let enter = native_enter::<P> as *mut c_void;
    let exit = native_exit::<P> as *mut c_void;
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
            native_receiver::<S> as *mut c_void,
        ),
    ]);
    natives
}

fn reveal_natives<S: Sites>() -> Vec<Native> {
    vec![(
        c"reveal",
        c"(Ljava/lang/Object;I)V",
        native_reveal::<S> as *mut c_void,
    )]
}

/// The block probes' natives: `exitBlocks0` and `unwindBlocks0` with `gated` (the class has
/// the Java gates), else `exitBlocks` and `unwindBlocks` themselves.
fn block_natives<P: Probes>(gated: bool) -> Vec<Native> {
    let blocks = native_exit_blocks::<P> as *mut c_void;
    if gated {
        vec![
            (c"exitBlocks0", c"(II)V", blocks),
            (c"unwindBlocks0", c"(II)V", blocks),
        ]
    } else {
        vec![
            (c"exitBlocks", c"(II)V", blocks),
            (c"unwindBlocks", c"(II)V", blocks),
        ]
    }
}

/// Binds every native of the hooks class `class` ([`hooks_natives`]).
pub fn register_hooks<P: Probes, S: Sites>(
    env: &JniEnv<'_>,
    class: Class<'_>,
    gated: bool,
    receiver_gated: bool,
    blocks_gated: bool,
) -> ferrofluid_jvmti::Result<()> {
    let natives = hooks_natives::<P, S>(gated, receiver_gated, blocks_gated);
    // SAFETY: `natives` lists the static native methods of the hooks class with the functions
    // of this module of the matching JNI signatures; the library is never unloaded once hooks
    // are bound (Agent_OnAttach cannot fail after this point).
    unsafe { env.register_natives(class, &natives) }
}

// The probes' natives. The code they call is written not to panic; ffi_guard (free unless a
// panic happens) makes sure none could unwind into the JVM anyway.
//
// Each reads the clock first: what follows, up to the publication of its event, is the probe's
// measured duration. Reading it later, after the flag and thread-local checks, was tried: it
// saves the read where a probe records nothing, but moves ~12 ns per probe from the measured
// part to the calibrated rest, the uncertain part (docs/decisions/0012-probes-measure-themselves.md).

extern "C" fn native_enter<P: Probes>(env: *mut sys::JNIEnv, _: sys::jclass, id: sys::jint) {
    let start = P::ticks();
    ffi_guard("Hooks.enter", (), || P::enter(env, id, start))
}

extern "C" fn native_exit<P: Probes>(env: *mut sys::JNIEnv, _: sys::jclass, id: sys::jint) {
    let start = P::ticks();
    ffi_guard("Hooks.exit", (), || P::exit(env, id, start))
}

/// `Hooks.exitBlocks(id, bytecodes)` and `Hooks.unwindBlocks(id, bytecodes)`.
extern "C" fn native_exit_blocks<P: Probes>(
    env: *mut sys::JNIEnv,
    _: sys::jclass,
    id: sys::jint,
    bytecodes: sys::jint,
) {
    ffi_guard("Hooks.exitBlocks", (), || {
        P::exit_blocks(env, id, bytecodes)
    })
}

extern "C" fn native_alloc(_: *mut sys::JNIEnv, _: sys::jclass, _: sys::jobject, _: sys::jint) {}

extern "C" fn native_receiver<S: Sites>(
    env: *mut sys::JNIEnv,
    _: sys::jclass,
    receiver: sys::jobject,
    site: sys::jint,
) {
    ffi_guard("Hooks.receiver", (), || {
        // SAFETY: the native's argument: null or a live local reference for this call.
        S::receiver(env, unsafe { Object::from_nullable(receiver) }, site as u32)
    })
}

/// `Hooks.reveal(target, kind)`, called by gateway probes.
extern "C" fn native_reveal<S: Sites>(
    env: *mut sys::JNIEnv,
    _: sys::jclass,
    target: sys::jobject,
    kind: sys::jint,
) {
    ffi_guard("Hooks.reveal", (), || {
        if target.is_null() || !S::revealing() {
            return;
        }
        // SAFETY: the JNIEnv of this native call.
        let Some(jni) = (unsafe { JniEnv::from_raw(env) }) else {
            return;
        };
        if kind == S::CLASS_KIND {
            // SAFETY: the gateway of this kind (`Unsafe.ensureClassInitialized`) passes its
            // `Class<?>` parameter: a live local reference to a class.
            let class = unsafe { Class::from_raw(target) };
            S::reveal_class(&jni, class);
            return;
        }
        // SAFETY: a live local reference passed to this native method.
        let target = unsafe { Object::from_raw(target) };
        S::reveal(&jni, target, kind);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dispatch and a site handler that do nothing: the tables' shape.
    struct Nothing;

    impl Probes for Nothing {
        fn ticks() -> u64 {
            0
        }
        fn enter(_: *mut sys::JNIEnv, _: i32, _: u64) {}
        fn exit(_: *mut sys::JNIEnv, _: i32, _: u64) {}
        fn exit_blocks(_: *mut sys::JNIEnv, _: i32, _: i32) {}
    }

    impl Sites for Nothing {
        const CLASS_KIND: i32 = 5;
        fn receiver(_: *mut sys::JNIEnv, _: Option<Object<'_>>, _: u32) {}
        fn revealing() -> bool {
            false
        }
        fn reveal_class(_: &JniEnv<'_>, _: Class<'_>) {}
        fn reveal(_: &JniEnv<'_>, _: Object<'_>, _: i32) {}
    }

    fn names(natives: &[Native]) -> Vec<&str> {
        natives.iter().map(|n| n.0.to_str().unwrap()).collect()
    }

    fn hooks_natives(gated: bool, receiver_gated: bool, blocks_gated: bool) -> Vec<Native> {
        super::hooks_natives::<Nothing, Nothing>(gated, receiver_gated, blocks_gated)
    }

    fn probe_natives(gated: bool, receiver_gated: bool) -> Vec<Native> {
        super::probe_natives::<Nothing, Nothing>(gated, receiver_gated)
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
