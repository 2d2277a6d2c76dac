//! The JVMTI event callbacks of every [`Agent`](crate::agent::Agent): `extern "C"` trampolines
//! that find the environment's closures through its local storage, convert the JVM's arguments and
//! call them under `ffi_guard`.

use std::ffi::{c_char, c_uchar, c_void, CStr};

use ferrofluid_jvmti::{ffi_guard, sys, Class, JniEnv, Jvmti, MethodId, Object};

use crate::agent::{Callbacks, ClassFileLoad, CompiledCode};
use crate::error::Result;

/// Installs `callbacks` for `jvmti`: kept for the rest of the process (a callback may be running
/// on another thread when the environment is disposed), reached through the environment's local
/// storage.
pub(crate) fn install(jvmti: Jvmti, callbacks: Callbacks) -> Result<()> {
    let raw = sys::jvmtiEventCallbacks {
        VMInit: callbacks.vm_init.as_ref().map(|_| vm_init as _),
        VMDeath: callbacks.vm_death.as_ref().map(|_| vm_death as _),
        ThreadStart: callbacks.thread_start.as_ref().map(|_| thread_start as _),
        ThreadEnd: callbacks.thread_end.as_ref().map(|_| thread_end as _),
        ClassLoad: callbacks.class_load.as_ref().map(|_| class_load as _),
        ClassPrepare: callbacks.class_prepare.as_ref().map(|_| class_prepare as _),
        ClassFileLoadHook: callbacks
            .class_file_load
            .as_ref()
            .map(|_| class_file_load_hook as _),
        CompiledMethodLoad: callbacks
            .compiled_method_load
            .as_ref()
            .map(|_| compiled_method_load as _),
        CompiledMethodUnload: callbacks
            .compiled_method_unload
            .as_ref()
            .map(|_| compiled_method_unload as _),
        DynamicCodeGenerated: callbacks
            .dynamic_code
            .as_ref()
            .map(|_| dynamic_code_generated as _),
        GarbageCollectionStart: callbacks.gc_start.as_ref().map(|_| gc_start as _),
        GarbageCollectionFinish: callbacks.gc_finish.as_ref().map(|_| gc_finish as _),
        DataDumpRequest: callbacks.data_dump.as_ref().map(|_| data_dump as _),
        ..Default::default()
    };
    let leaked: &'static Callbacks = Box::leak(Box::new(callbacks));
    jvmti.set_environment_local_storage(leaked as *const Callbacks as usize)?;
    jvmti.set_event_callbacks(&raw)?;
    Ok(())
}

/// The closures of environment `env`.
fn callbacks(env: *mut sys::jvmtiEnv) -> Option<&'static Callbacks> {
    // SAFETY: the JVM passes its live environment to every callback.
    let jvmti = unsafe { Jvmti::from_raw(env) }?;
    let p = jvmti.environment_local_storage().ok()?;
    // SAFETY: `install` stored the address of a leaked `Callbacks` before setting any callback,
    // and nothing else sets this environment's local storage; it lives for the process.
    (p != 0).then(|| unsafe { &*(p as *const Callbacks) })
}

/// # Safety
/// `jni` is the current thread's `JNIEnv`, valid for the callback.
unsafe fn jni_env<'a>(jni: *mut sys::JNIEnv) -> Option<JniEnv<'a>> {
    // SAFETY: caller's contract.
    unsafe { JniEnv::from_raw(jni) }
}

unsafe extern "C" fn vm_init(env: *mut sys::jvmtiEnv, jni: *mut sys::JNIEnv, thread: sys::jthread) {
    ffi_guard("VMInit", (), || {
        // SAFETY: the JVM's arguments for VMInit: this thread's JNIEnv and a live thread.
        let (Some(f), Some(jni), Some(thread)) = (
            callbacks(env).and_then(|c| c.vm_init.as_ref()),
            unsafe { jni_env(jni) },
            unsafe { Object::from_nullable(thread) },
        ) else {
            return;
        };
        f(&jni, thread)
    })
}

unsafe extern "C" fn vm_death(env: *mut sys::jvmtiEnv, jni: *mut sys::JNIEnv) {
    ffi_guard("VMDeath", (), || {
        // SAFETY: this thread's JNIEnv, valid for the callback.
        let (Some(f), Some(jni)) = (callbacks(env).and_then(|c| c.vm_death.as_ref()), unsafe {
            jni_env(jni)
        }) else {
            return;
        };
        f(&jni)
    })
}

unsafe extern "C" fn thread_start(
    env: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
) {
    ffi_guard("ThreadStart", (), || {
        // SAFETY: the new thread's JNIEnv and its Thread object, valid for the callback.
        let (Some(f), Some(jni), Some(thread)) = (
            callbacks(env).and_then(|c| c.thread_start.as_ref()),
            unsafe { jni_env(jni) },
            unsafe { Object::from_nullable(thread) },
        ) else {
            return;
        };
        f(&jni, thread)
    })
}

unsafe extern "C" fn thread_end(
    env: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
) {
    ffi_guard("ThreadEnd", (), || {
        // SAFETY: the ending thread's JNIEnv and its Thread object, valid for the callback.
        let (Some(f), Some(jni), Some(thread)) = (
            callbacks(env).and_then(|c| c.thread_end.as_ref()),
            unsafe { jni_env(jni) },
            unsafe { Object::from_nullable(thread) },
        ) else {
            return;
        };
        f(&jni, thread)
    })
}

unsafe extern "C" fn class_load(
    env: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    class: sys::jclass,
) {
    ffi_guard("ClassLoad", (), || {
        let Some(f) = callbacks(env).and_then(|c| c.class_load.as_ref()) else {
            return;
        };
        // SAFETY: the JVM's arguments for ClassLoad, valid for the callback.
        let (Some(jni), Some(thread), Some(class)) = (
            unsafe { jni_env(jni) },
            unsafe { Object::from_nullable(thread) },
            unsafe { Class::from_nullable(class) },
        ) else {
            return;
        };
        f(&jni, thread, class)
    })
}

unsafe extern "C" fn class_prepare(
    env: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    class: sys::jclass,
) {
    ffi_guard("ClassPrepare", (), || {
        let Some(f) = callbacks(env).and_then(|c| c.class_prepare.as_ref()) else {
            return;
        };
        // SAFETY: the JVM's arguments for ClassPrepare, valid for the callback.
        let (Some(jni), Some(thread), Some(class)) = (
            unsafe { jni_env(jni) },
            unsafe { Object::from_nullable(thread) },
            unsafe { Class::from_nullable(class) },
        ) else {
            return;
        };
        f(&jni, thread, class)
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn class_file_load_hook(
    env: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    class_being_redefined: sys::jclass,
    loader: sys::jobject,
    name: *const c_char,
    _protection_domain: sys::jobject,
    class_data_len: sys::jint,
    class_data: *const c_uchar,
    new_class_data_len: *mut sys::jint,
    new_class_data: *mut *mut c_uchar,
) {
    ffi_guard("ClassFileLoadHook", (), || {
        let Some(f) = callbacks(env).and_then(|c| c.class_file_load.as_ref()) else {
            return;
        };
        if class_data.is_null()
            || class_data_len <= 0
            || new_class_data.is_null()
            || new_class_data_len.is_null()
        {
            return;
        }
        // SAFETY: the JVM passes `class_data_len` bytes of class file, valid for the callback.
        let bytes = unsafe { std::slice::from_raw_parts(class_data, class_data_len as usize) };
        // SAFETY: null or a NUL-terminated internal class name.
        let name = (!name.is_null())
            .then(|| unsafe { CStr::from_ptr(name) }.to_str().ok())
            .flatten();
        // SAFETY: null in the primordial phase, else this thread's JNIEnv; null or a live loader.
        let (jni, loader) = unsafe { (jni_env(jni), Object::from_nullable(loader)) };
        let load = ClassFileLoad {
            name,
            bytes,
            redefining: !class_being_redefined.is_null(),
            loader,
        };
        let Some(out) = f(jni.as_ref(), &load) else {
            return;
        };
        // SAFETY: the JVM's own environment; its allocator is what new_class_data must use.
        let Some(jvmti) = (unsafe { Jvmti::from_raw(env) }) else {
            return;
        };
        let Ok(buf) = jvmti.allocate_copy(&out) else {
            return;
        };
        let (ptr, len) = buf.into_raw();
        // SAFETY: the out-pointers the JVM passed; the buffer is JVMTI memory the JVM now owns.
        unsafe {
            *new_class_data_len = len as sys::jint;
            *new_class_data = ptr;
        }
    })
}

unsafe extern "C" fn compiled_method_load(
    env: *mut sys::jvmtiEnv,
    method: sys::jmethodID,
    code_size: sys::jint,
    code_addr: *const c_void,
    _map_length: sys::jint,
    _map: *const sys::jvmtiAddrLocationMap,
    _compile_info: *const c_void,
) {
    ffi_guard("CompiledMethodLoad", (), || {
        let Some(f) = callbacks(env).and_then(|c| c.compiled_method_load.as_ref()) else {
            return;
        };
        if method.is_null() {
            return;
        }
        f(&CompiledCode {
            // SAFETY: a method ID the JVM passed.
            method: unsafe { MethodId::from_raw(method) },
            address: code_addr as usize,
            size: code_size.max(0) as usize,
        })
    })
}

unsafe extern "C" fn compiled_method_unload(
    env: *mut sys::jvmtiEnv,
    method: sys::jmethodID,
    code_addr: *const c_void,
) {
    ffi_guard("CompiledMethodUnload", (), || {
        let Some(f) = callbacks(env).and_then(|c| c.compiled_method_unload.as_ref()) else {
            return;
        };
        // SAFETY: a method ID the JVM passed (its class may be unloading: only its value is used).
        f(unsafe { MethodId::from_raw(method) }, code_addr as usize)
    })
}

unsafe extern "C" fn dynamic_code_generated(
    env: *mut sys::jvmtiEnv,
    name: *const c_char,
    address: *const c_void,
    length: sys::jint,
) {
    ffi_guard("DynamicCodeGenerated", (), || {
        let Some(f) = callbacks(env).and_then(|c| c.dynamic_code.as_ref()) else {
            return;
        };
        // SAFETY: null or a NUL-terminated name, valid for the callback.
        let name = if name.is_null() {
            ""
        } else {
            unsafe { CStr::from_ptr(name) }.to_str().unwrap_or("")
        };
        f(name, address as usize, length.max(0) as usize)
    })
}

unsafe extern "C" fn gc_start(env: *mut sys::jvmtiEnv) {
    ffi_guard("GarbageCollectionStart", (), || {
        if let Some(f) = callbacks(env).and_then(|c| c.gc_start.as_ref()) {
            f()
        }
    })
}

unsafe extern "C" fn gc_finish(env: *mut sys::jvmtiEnv) {
    ffi_guard("GarbageCollectionFinish", (), || {
        if let Some(f) = callbacks(env).and_then(|c| c.gc_finish.as_ref()) {
            f()
        }
    })
}

unsafe extern "C" fn data_dump(env: *mut sys::jvmtiEnv) {
    ffi_guard("DataDumpRequest", (), || {
        if let Some(f) = callbacks(env).and_then(|c| c.data_dump.as_ref()) {
            f()
        }
    })
}
