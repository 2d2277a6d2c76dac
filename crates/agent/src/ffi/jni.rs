//! JNI calls of static Java methods with arguments the caller vouches for: how the engines
//! start, reset and read the Java classes they define in the bootstrap loader.

use std::ffi::CStr;

use ferrofluid_jvmti::{sys, Class, JniEnv, Object};

/// Calls static method `name` `signature` of `class`, returning its object result when
/// `returns_object` (else `None`). A Java exception is cleared and reported.
///
/// # Safety
/// `args` must match the parameters of `signature`, and `returns_object` its return type.
pub unsafe fn call_static<'a>(
    env: &JniEnv<'a>,
    class: Class<'_>,
    name: &CStr,
    signature: &CStr,
    args: &[sys::jvalue],
    returns_object: bool,
) -> Result<Option<Object<'a>>, String> {
    let raw = env.as_raw();
    // SAFETY: the current thread's JNIEnv; a live class reference and NUL-terminated strings.
    let method = unsafe {
        match (**raw).GetStaticMethodID {
            Some(get) => get(raw, class.as_raw(), name.as_ptr(), signature.as_ptr()),
            None => std::ptr::null_mut(),
        }
    };
    if method.is_null() {
        env.clear_exception();
        return Err(format!("static method {name:?} not found"));
    }
    let result = if returns_object {
        // SAFETY: a static method of `class` returning an object; the caller vouches for `args`.
        let o = unsafe {
            match (**raw).CallStaticObjectMethodA {
                Some(call) => call(raw, class.as_raw(), method, args.as_ptr()),
                None => std::ptr::null_mut(),
            }
        };
        // SAFETY: null or a local reference the call returned.
        unsafe { Object::from_nullable(o) }
    } else {
        // SAFETY: a static void method of `class`; the caller vouches for `args`.
        unsafe {
            if let Some(call) = (**raw).CallStaticVoidMethodA {
                call(raw, class.as_raw(), method, args.as_ptr());
            }
        }
        None
    };
    if env.clear_exception() {
        return Err(format!("{name:?} threw"));
    }
    Ok(result)
}
