//! The JVMTI event callbacks. Each converts the JVM's raw arguments and runs the handler of
//! [`JvmEvents`] under `ffi_guard` (the class hooks under [`JvmEvents::class_hook`], which also
//! factors the time out of a recording thread): no panic crosses into the JVM, and a failure
//! leaves the JVM as it was. The runtime installs [`event_callbacks`] for its handler.

use std::ffi::CStr;

use ferrofluid_jvmti::{ffi_guard, sys, Class, EventCallbacks21, JniEnv, Jvmti, Object};

/// What the agent does on the JVMTI events it enables (the runtime's handler).
pub trait JvmEvents {
    /// VMStart (early, with `can_generate_early_vmstart`): JNI works, no Java code ran yet.
    fn vm_start(jvmti: Jvmti, env: &JniEnv<'_>);
    /// VMInit: the JVM is live.
    fn vm_init(jvmti: Jvmti, env: &JniEnv<'_>);
    /// VMDeath.
    fn vm_death();
    /// ThreadStart, on the new thread (`env` as the JVM passed it).
    fn thread_start(env: *mut sys::JNIEnv, thread: Option<Object<'_>>);
    /// ThreadEnd, on the ending thread.
    fn thread_end(env: *mut sys::JNIEnv);
    /// Runs `work`, the agent's part of a class hook on an application thread, as agent work
    /// on that thread (its probes off, its time left out of the thread's recording), under
    /// `ffi_guard` named `what`.
    fn class_hook(env: *mut sys::JNIEnv, what: &'static str, work: &mut dyn FnMut());
    /// ClassFileLoadHook: the bytes that replace the class's, or `None` to keep them.
    fn class_file_load(
        env: &JniEnv<'_>,
        loader: Option<Object<'_>>,
        name: &str,
        redefining: bool,
        bytes: &[u8],
    ) -> Option<Vec<u8>>;
    /// ClassPrepare.
    fn class_prepare(jvmti: Jvmti, env: &JniEnv<'_>, class: Class<'_>);
    /// A virtual thread mounts on this carrier (HotSpot's mount extension event).
    fn virtual_thread_mount(jvmti: Option<Jvmti>);
    /// A virtual thread unmounts from this carrier.
    fn virtual_thread_unmount(
        jvmti: Option<Jvmti>,
        env: Option<&JniEnv<'_>>,
        thread: Option<Object<'_>>,
    );
    /// VirtualThreadStart, on the virtual thread.
    fn virtual_thread_start(
        jvmti: Option<Jvmti>,
        env: *mut sys::JNIEnv,
        thread: Option<Object<'_>>,
    );
    /// VirtualThreadEnd, on the virtual thread.
    fn virtual_thread_end(jvmti: Option<Jvmti>, env: *mut sys::JNIEnv);
}

/// The callbacks of handler `E` (`SetEventCallbacks`); events are enabled separately.
pub fn event_callbacks<E: JvmEvents>() -> sys::jvmtiEventCallbacks {
    sys::jvmtiEventCallbacks {
        VMStart: Some(vm_start::<E>),
        VMInit: Some(vm_init::<E>),
        VMDeath: Some(vm_death::<E>),
        ThreadStart: Some(thread_start::<E>),
        ThreadEnd: Some(thread_end::<E>),
        ClassFileLoadHook: Some(class_file_load_hook::<E>),
        ClassPrepare: Some(class_prepare::<E>),
        ..Default::default()
    }
}

/// `base` with the virtual-thread callbacks of `E` (JDK 21+).
pub fn virtual_thread_callbacks<E: JvmEvents>(base: &sys::jvmtiEventCallbacks) -> EventCallbacks21 {
    EventCallbacks21 {
        base: *base,
        virtual_thread_start: Some(virtual_thread_start::<E>),
        virtual_thread_end: Some(virtual_thread_end::<E>),
    }
}

/// The extension event callback of a virtual thread's mount (HotSpot's
/// `VirtualThreadMount`), for `SetExtensionEventCallback`.
pub fn mount_callback<E: JvmEvents>() -> ferrofluid_jvmti::VirtualThreadFn {
    virtual_thread_mount::<E>
}

/// As [`mount_callback`], for the unmount.
pub fn unmount_callback<E: JvmEvents>() -> ferrofluid_jvmti::VirtualThreadFn {
    virtual_thread_unmount::<E>
}

unsafe extern "C" fn vm_start<E: JvmEvents>(jvmti: *mut sys::jvmtiEnv, env: *mut sys::JNIEnv) {
    ffi_guard("VMStart", (), || {
        // SAFETY: the JVM passes its live environment and this thread's JNIEnv.
        let (Some(jvmti), Some(env)) = (unsafe { Jvmti::from_raw(jvmti) }, unsafe {
            JniEnv::from_raw(env)
        }) else {
            return;
        };
        E::vm_start(jvmti, &env);
    })
}

unsafe extern "C" fn vm_init<E: JvmEvents>(
    jvmti: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    _thread: sys::jthread,
) {
    ffi_guard("VMInit", (), || {
        // SAFETY: the JVM passes its live environment and this thread's JNIEnv.
        let (Some(jvmti), Some(env)) = (unsafe { Jvmti::from_raw(jvmti) }, unsafe {
            JniEnv::from_raw(env)
        }) else {
            return;
        };
        E::vm_init(jvmti, &env);
    })
}

unsafe extern "C" fn vm_death<E: JvmEvents>(_jvmti: *mut sys::jvmtiEnv, _env: *mut sys::JNIEnv) {
    ffi_guard("VMDeath", (), E::vm_death)
}

unsafe extern "C" fn thread_start<E: JvmEvents>(
    _: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    thread: sys::jthread,
) {
    ffi_guard("ThreadStart", (), || {
        // SAFETY: the event's thread: null or a live local reference for the callback.
        E::thread_start(env, unsafe { Object::from_nullable(thread) })
    })
}

unsafe extern "C" fn thread_end<E: JvmEvents>(
    _: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    _: sys::jthread,
) {
    ffi_guard("ThreadEnd", (), || E::thread_end(env))
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn class_file_load_hook<E: JvmEvents>(
    jvmti: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    class_being_redefined: sys::jclass,
    loader: sys::jobject,
    name: *const std::ffi::c_char,
    _protection_domain: sys::jobject,
    class_data_len: sys::jint,
    class_data: *const u8,
    new_class_data_len: *mut sys::jint,
    new_class_data: *mut *mut u8,
) {
    E::class_hook(env, "ClassFileLoadHook", &mut || {
        // SAFETY: the environment the callback belongs to, and the JNIEnv of the loading
        // thread, valid for the callback.
        let (Some(jvmti), Some(env)) = (unsafe { Jvmti::from_raw(jvmti) }, unsafe {
            JniEnv::from_raw(env)
        }) else {
            return;
        };
        if name.is_null() || class_data.is_null() || class_data_len <= 0 {
            return; // hidden and anonymous classes have no name: never instrumented
        }
        // SAFETY: a NUL-terminated class name for the duration of the callback.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        // SAFETY: the JVM's class bytes, valid for the duration of the callback.
        let bytes = unsafe { std::slice::from_raw_parts(class_data, class_data_len as usize) };
        let redefining = !class_being_redefined.is_null();
        // SAFETY: null (the bootstrap loader) or a live local reference for the callback.
        let loader = unsafe { Object::from_nullable(loader) };
        let Some(out) = E::class_file_load(&env, loader, &name, redefining, bytes) else {
            return;
        };
        match jvmti.allocate_copy(&out) {
            Ok(buf) => {
                let (ptr, len) = buf.into_raw();
                // SAFETY: out-pointers of the callback; the JVM takes ownership of JVMTI memory.
                unsafe {
                    *new_class_data_len = len as sys::jint;
                    *new_class_data = ptr;
                }
            }
            Err(e) => log::warn!("{name}: class left original: {e}"),
        }
    });
}

unsafe extern "C" fn class_prepare<E: JvmEvents>(
    jvmti: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    _thread: sys::jthread,
    class: sys::jclass,
) {
    E::class_hook(env, "ClassPrepare", &mut || {
        // SAFETY: the JVM passes its environment, this thread's JNIEnv and a live class reference.
        let (Some(jvmti), Some(env)) = (unsafe { Jvmti::from_raw(jvmti) }, unsafe {
            JniEnv::from_raw(env)
        }) else {
            return;
        };
        // SAFETY: as above.
        let class = unsafe { Class::from_raw(class) };
        E::class_prepare(jvmti, &env, class);
    });
}

// The virtual-thread events (JDK 21+).

extern "C" fn virtual_thread_mount<E: JvmEvents>(
    jvmti: *mut sys::jvmtiEnv,
    _: *mut sys::JNIEnv,
    _: sys::jthread,
) {
    ffi_guard("VirtualThreadMount", (), || {
        // SAFETY: the environment the extension event belongs to.
        E::virtual_thread_mount(unsafe { Jvmti::from_raw(jvmti) })
    })
}

extern "C" fn virtual_thread_unmount<E: JvmEvents>(
    jvmti: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    thread: sys::jthread,
) {
    ffi_guard("VirtualThreadUnmount", (), || {
        // SAFETY: the event's environment, the JNIEnv of the carrier, and the event's thread:
        // null or a live local reference to the virtual thread, for the callback.
        let (jvmti, env, thread) = unsafe {
            (
                Jvmti::from_raw(jvmti),
                JniEnv::from_raw(env),
                Object::from_nullable(thread),
            )
        };
        E::virtual_thread_unmount(jvmti, env.as_ref(), thread)
    })
}

extern "C" fn virtual_thread_start<E: JvmEvents>(
    jvmti: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    thread: sys::jthread,
) {
    ffi_guard("VirtualThreadStart", (), || {
        // SAFETY: the event's environment, and its thread: null or a live local reference for
        // the callback.
        let (jvmti, thread) = unsafe { (Jvmti::from_raw(jvmti), Object::from_nullable(thread)) };
        E::virtual_thread_start(jvmti, env, thread)
    })
}

extern "C" fn virtual_thread_end<E: JvmEvents>(
    jvmti: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    _: sys::jthread,
) {
    ffi_guard("VirtualThreadEnd", (), || {
        // SAFETY: the event's environment.
        E::virtual_thread_end(unsafe { Jvmti::from_raw(jvmti) }, env)
    })
}
