//! The JNI functions that allocate (`AllocObject`, `NewObject{,V,A}`, `NewObjectArray`,
//! `New<Primitive>Array`, `NewString`, `NewStringUTF`), wrapped with JVMTI
//! `SetJNIFunctionTable` while an `alloc` session runs, so that what native code allocates is
//! counted (`super::super::native`). Only these slots change, and only for `alloc`: the other modes keep
//! the JVM's functions. Each wrapper calls the function the table held when they were installed
//! (the JVM's, or the revelation wrapper of `crate::ffi::jni_calls` for `NewObjectV`/`NewObjectA`),
//! then counts a non-null result.

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use ferrofluid_jvmti::{ffi_guard, sys, JniEnv, Jvmti, Object};

/// The wrappers' state.
struct Wrapped {
    /// The table as it was when the wrappers were installed (leaked: a wrapper may run on some
    /// thread at any time, even after the table was restored).
    saved: AtomicPtr<sys::JNINativeInterface_>,
    /// A session counts: the wrappers forward without counting otherwise.
    counting: AtomicBool,
}

// Process-wide: JNI functions get no user data, and the wrappers of every thread forward through
// it.
static WRAPPED: Wrapped = Wrapped {
    saved: AtomicPtr::new(std::ptr::null_mut()),
    counting: AtomicBool::new(false),
};

fn saved() -> &'static sys::JNINativeInterface_ {
    // SAFETY: wrappers are installed only after `saved` was set to a leaked, never freed table.
    unsafe { &*WRAPPED.saved.load(Ordering::Acquire) }
}

/// Counts `object`, just returned by JNI function `function` (see `native::allocated`).
#[inline]
fn allocated(
    env: *mut sys::JNIEnv,
    object: sys::jobject,
    function: &'static str,
    class: Option<&'static str>,
    length: Option<sys::jsize>,
) {
    if object.is_null() || !WRAPPED.counting.load(Ordering::Relaxed) {
        return;
    }
    ffi_guard("JNI allocation wrapper", (), || {
        // SAFETY: the JNIEnv native code passed to this JNI function (the calling thread's) and
        // the local reference the function just returned.
        let (Some(jni), Some(object)) = (unsafe { JniEnv::from_raw(env) }, unsafe {
            Object::from_nullable(object)
        }) else {
            return;
        };
        let length = length.map(|l| l.max(0) as u32);
        super::super::native::allocated(&jni, object, function, class, length);
    })
}

unsafe extern "C" fn alloc_object(env: *mut sys::JNIEnv, class: sys::jclass) -> sys::jobject {
    // SAFETY: installed only where the saved table had this function; arguments forwarded.
    let o = unsafe { saved().AllocObject.unwrap_unchecked()(env, class) };
    allocated(env, o, "AllocObject", None, None);
    o
}

unsafe extern "C" fn new_object_v(
    env: *mut sys::JNIEnv,
    class: sys::jclass,
    mid: sys::jmethodID,
    args: *mut sys::__va_list_tag,
) -> sys::jobject {
    // SAFETY: as in `alloc_object`.
    let o = unsafe { saved().NewObjectV.unwrap_unchecked()(env, class, mid, args) };
    allocated(env, o, "NewObject", None, None);
    o
}

unsafe extern "C" fn new_object_a(
    env: *mut sys::JNIEnv,
    class: sys::jclass,
    mid: sys::jmethodID,
    args: *const sys::jvalue,
) -> sys::jobject {
    // SAFETY: as in `alloc_object`.
    let o = unsafe { saved().NewObjectA.unwrap_unchecked()(env, class, mid, args) };
    allocated(env, o, "NewObject", None, None);
    o
}

unsafe extern "C" fn new_object_array(
    env: *mut sys::JNIEnv,
    len: sys::jsize,
    class: sys::jclass,
    init: sys::jobject,
) -> sys::jobjectArray {
    // SAFETY: as in `alloc_object`.
    let o = unsafe { saved().NewObjectArray.unwrap_unchecked()(env, len, class, init) };
    allocated(env, o, "NewObjectArray", None, Some(len));
    o
}

unsafe extern "C" fn new_string(
    env: *mut sys::JNIEnv,
    chars: *const sys::jchar,
    len: sys::jsize,
) -> sys::jstring {
    // SAFETY: as in `alloc_object`.
    let o = unsafe { saved().NewString.unwrap_unchecked()(env, chars, len) };
    allocated(env, o, "NewString", Some("java/lang/String"), None);
    o
}

unsafe extern "C" fn new_string_utf(
    env: *mut sys::JNIEnv,
    utf: *const std::os::raw::c_char,
) -> sys::jstring {
    // SAFETY: as in `alloc_object`.
    let o = unsafe { saved().NewStringUTF.unwrap_unchecked()(env, utf) };
    allocated(env, o, "NewStringUTF", Some("java/lang/String"), None);
    o
}

/// Wrappers of `New<Primitive>Array`: (slot, name, array class).
macro_rules! primitive_arrays {
    ($(($field:ident, $f:ident, $class:literal)),* $(,)?) => {
        $(
            unsafe extern "C" fn $f(env: *mut sys::JNIEnv, len: sys::jsize) -> sys::jobject {
                // SAFETY: as in `alloc_object`.
                let o = unsafe { saved().$field.unwrap_unchecked()(env, len) };
                allocated(env, o, stringify!($field), Some($class), Some(len));
                o
            }
        )*

        /// Puts every wrapper into `t`; false if the table lacks one of the functions.
        fn wrap(t: &mut sys::JNINativeInterface_) -> bool {
            let complete = t.AllocObject.is_some()
                && t.NewObject.is_some()
                && t.NewObjectV.is_some()
                && t.NewObjectA.is_some()
                && t.NewObjectArray.is_some()
                && t.NewString.is_some()
                && t.NewStringUTF.is_some()
                $(&& t.$field.is_some())*;
            t.AllocObject = Some(alloc_object);
            t.NewObject = Some(c::NewObject);
            t.NewObjectV = Some(new_object_v);
            t.NewObjectA = Some(new_object_a);
            t.NewObjectArray = Some(new_object_array);
            t.NewString = Some(new_string);
            t.NewStringUTF = Some(new_string_utf);
            $(t.$field = Some($f);)*
            complete
        }

        /// Puts back into `t` the functions of `saved` where `t` holds a wrapper.
        fn unwrap(t: &mut sys::JNINativeInterface_, saved: &sys::JNINativeInterface_) {
            let ours = |a: Option<*const ()>, b: *const ()| a.is_some_and(|a| std::ptr::eq(a, b));
            if ours(t.AllocObject.map(|f| f as *const ()), alloc_object as *const ()) {
                t.AllocObject = saved.AllocObject;
            }
            if ours(t.NewObject.map(|f| f as *const ()), c::NewObject as *const ()) {
                t.NewObject = saved.NewObject;
            }
            if ours(t.NewObjectV.map(|f| f as *const ()), new_object_v as *const ()) {
                t.NewObjectV = saved.NewObjectV;
            }
            if ours(t.NewObjectA.map(|f| f as *const ()), new_object_a as *const ()) {
                t.NewObjectA = saved.NewObjectA;
            }
            if ours(t.NewObjectArray.map(|f| f as *const ()), new_object_array as *const ()) {
                t.NewObjectArray = saved.NewObjectArray;
            }
            if ours(t.NewString.map(|f| f as *const ()), new_string as *const ()) {
                t.NewString = saved.NewString;
            }
            if ours(t.NewStringUTF.map(|f| f as *const ()), new_string_utf as *const ()) {
                t.NewStringUTF = saved.NewStringUTF;
            }
            $(
                if ours(t.$field.map(|f| f as *const ()), $f as *const ()) {
                    t.$field = saved.$field;
                }
            )*
        }
    };
}

primitive_arrays!(
    (NewBooleanArray, new_boolean_array, "[Z"),
    (NewByteArray, new_byte_array, "[B"),
    (NewCharArray, new_char_array, "[C"),
    (NewShortArray, new_short_array, "[S"),
    (NewIntArray, new_int_array, "[I"),
    (NewLongArray, new_long_array, "[J"),
    (NewFloatArray, new_float_array, "[F"),
    (NewDoubleArray, new_double_array, "[D"),
);

/// The variadic `NewObject` (in `csrc/jni_variadic.c`): calls `NewObjectV` through the table,
/// that is [`new_object_v`], which counts.
mod c {
    use super::sys;
    extern "C" {
        #[link_name = "ferrofluid_jni_NewObject"]
        pub fn NewObject(
            env: *mut sys::JNIEnv,
            class: sys::jclass,
            mid: sys::jmethodID,
            ...
        ) -> sys::jobject;
    }
}

fn is_wrapped(t: &sys::JNINativeInterface_) -> bool {
    t.AllocObject
        .is_some_and(|f| std::ptr::eq(f as *const (), alloc_object as *const ()))
}

/// Wraps the allocating JNI functions and starts counting (idempotent). Errors are logged:
/// without the wrappers, JNI allocations are not counted.
pub fn install(jvmti: Jvmti) {
    let current = match jvmti.jni_function_table() {
        Ok(t) => t.first().copied(),
        Err(e) => {
            log::warn!("JNI function table: {e}; JNI allocations are not counted");
            return;
        }
    };
    let Some(current) = current else { return };
    if is_wrapped(&current) {
        WRAPPED.counting.store(true, Ordering::SeqCst);
        return;
    }
    let mut ours = current;
    if !wrap(&mut ours) {
        log::warn!("JNI function table incomplete; JNI allocations are not counted");
        return;
    }
    WRAPPED.saved.store(Box::into_raw(Box::new(current)), Ordering::Release);
    WRAPPED.counting.store(true, Ordering::SeqCst);
    // SAFETY: every wrapper has its slot's JNI signature, lives as long as the library (never
    // unloaded) and forwards to the table saved above.
    if let Err(e) = unsafe { jvmti.set_jni_function_table(&ours) } {
        WRAPPED.counting.store(false, Ordering::SeqCst);
        log::warn!("SetJNIFunctionTable: {e}; JNI allocations are not counted");
    }
}

/// Stops counting and puts back the functions the wrappers replaced, where the table still
/// holds them (another wrapper installed since stays, forwarding to them).
pub fn uninstall(jvmti: Jvmti) {
    WRAPPED.counting.store(false, Ordering::SeqCst);
    let saved = WRAPPED.saved.load(Ordering::Acquire);
    if saved.is_null() {
        return;
    }
    let Some(mut table) = jvmti
        .jni_function_table()
        .ok()
        .and_then(|t| t.first().copied())
    else {
        return;
    };
    if !is_wrapped(&table) {
        return;
    }
    // SAFETY: `saved` is the leaked table the wrappers were installed over.
    unwrap(&mut table, unsafe { &*saved });
    // SAFETY: the table's functions are the JVM's own or live wrappers of this library.
    if let Err(e) = unsafe { jvmti.set_jni_function_table(&table) } {
        log::warn!("restoring the JNI allocation functions: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_replaces_the_allocating_functions_and_unwrapping_puts_them_back() {
        // SAFETY: an all-zero table is valid (every slot an empty Option).
        let empty: sys::JNINativeInterface_ = unsafe { std::mem::zeroed() };
        let mut t = empty;
        assert!(!wrap(&mut t), "an empty table is incomplete");
        assert!(is_wrapped(&t));
        assert!(t.NewIntArray.is_some() && t.NewStringUTF.is_some() && t.NewObject.is_some());
        assert!(t.CallVoidMethodV.is_none(), "other functions untouched");
        unwrap(&mut t, &empty);
        assert!(!is_wrapped(&t));
        assert!(t.NewIntArray.is_none() && t.NewObjectV.is_none() && t.NewObject.is_none());
    }
}
