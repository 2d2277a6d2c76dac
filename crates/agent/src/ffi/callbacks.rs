//! The JVMTI event callbacks. Each converts the JVM's raw arguments and runs its work under
//! `ffi_guard` (or `hooks::agent_callback`, which also factors the time out of a recording
//! thread): no panic crosses into the JVM, and a failure leaves the JVM as it was.

use std::ffi::CStr;

use ferrofluid_jvmti::{ffi_guard, sys, Class, JniEnv, Jvmti, Object};

use crate::probe::{hooks, vthread};
use crate::runtime::{jvm, session};

/// The callbacks the agent installs (`SetEventCallbacks`); events are enabled separately.
pub fn event_callbacks() -> sys::jvmtiEventCallbacks {
    sys::jvmtiEventCallbacks {
        VMInit: Some(vm_init),
        VMDeath: Some(vm_death),
        ThreadStart: Some(thread_start),
        ThreadEnd: Some(thread_end),
        ClassFileLoadHook: Some(class_file_load_hook),
        ClassPrepare: Some(class_prepare),
        ..Default::default()
    }
}

unsafe extern "C" fn vm_init(
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
        // The hooks are installed and the agent goes live.
        match jvm::install_hooks(jvmti, &env) {
            Ok(()) => crate::runtime::lifecycle::on_live(jvmti, &env),
            Err(e) => log::error!("VMInit: {e}; nothing will be instrumented"),
        }
    })
}

unsafe extern "C" fn vm_death(_jvmti: *mut sys::jvmtiEnv, _env: *mut sys::JNIEnv) {
    ffi_guard("VMDeath", (), crate::runtime::lifecycle::on_vm_death)
}

unsafe extern "C" fn thread_start(
    _: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    thread: sys::jthread,
) {
    ffi_guard("ThreadStart", (), || {
        // SAFETY: the event's thread: null or a live local reference for the callback.
        hooks::thread_start(env, unsafe { Object::from_nullable(thread) })
    })
}

unsafe extern "C" fn thread_end(_: *mut sys::jvmtiEnv, env: *mut sys::JNIEnv, _: sys::jthread) {
    ffi_guard("ThreadEnd", (), || hooks::thread_end(env))
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn class_file_load_hook(
    _jvmti: *mut sys::jvmtiEnv,
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
    hooks::agent_callback(env, "ClassFileLoadHook", || {
        // SAFETY: the JNIEnv of the loading thread, valid for the callback.
        let Some(env) = (unsafe { JniEnv::from_raw(env) }) else {
            return;
        };
        let Some(jvmti) = jvm::jvmti() else {
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
        let Some(out) = session::class_file_load(&env, loader, &name, redefining, bytes) else {
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

unsafe extern "C" fn class_prepare(
    jvmti: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    _thread: sys::jthread,
    class: sys::jclass,
) {
    hooks::agent_callback(env, "ClassPrepare", || {
        // SAFETY: the JVM passes its environment, this thread's JNIEnv and a live class reference.
        let (Some(jvmti), Some(env)) = (unsafe { Jvmti::from_raw(jvmti) }, unsafe {
            JniEnv::from_raw(env)
        }) else {
            return;
        };
        // SAFETY: as above.
        let class = unsafe { Class::from_raw(class) };
        session::class_prepared(jvmti, &env, class);
    });
}

// The virtual-thread events (JDK 21+), installed by `vthread::setup`.

pub extern "C" fn virtual_thread_mount(
    _: *mut sys::jvmtiEnv,
    _: *mut sys::JNIEnv,
    _: sys::jthread,
) {
    ffi_guard("VirtualThreadMount", (), vthread::mounted)
}

pub extern "C" fn virtual_thread_unmount(
    _: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    thread: sys::jthread,
) {
    ffi_guard("VirtualThreadUnmount", (), || {
        // SAFETY: the JNIEnv of the carrier, and the event's thread: null or a live local
        // reference to the virtual thread, for the callback.
        let (env, thread) = unsafe { (JniEnv::from_raw(env), Object::from_nullable(thread)) };
        vthread::unmounting(env.as_ref(), thread)
    })
}

pub extern "C" fn virtual_thread_start(
    _: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    thread: sys::jthread,
) {
    ffi_guard("VirtualThreadStart", (), || {
        // SAFETY: the event's thread: null or a live local reference for the callback.
        vthread::started(env, unsafe { Object::from_nullable(thread) })
    })
}

pub extern "C" fn virtual_thread_end(
    _: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    _: sys::jthread,
) {
    ffi_guard("VirtualThreadEnd", (), || vthread::ended(env))
}
