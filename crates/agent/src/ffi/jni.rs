//! JNI calls of static Java methods with arguments the caller vouches for: how the engines
//! start, reset and read the Java classes they define in the bootstrap loader; what those
//! classes may use of java.base.

use std::ffi::CStr;

use ferrofluid_jvmti::{sys, Class, JniEnv, Jvmti, Object};

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

/// java.base exports `jdk.internal.misc` to the module of `class` (one of the agent's classes in
/// the bootstrap loader, just defined and not yet initialised): its probes read a thread's id
/// with that package's `Unsafe`, a field read that calls nothing the probes could reach, and
/// fall back to the identity hash without it. `AddModuleExports` runs Java code (the first use
/// of a lambda in `java.lang.Module`), so only the engines whose classes read thread ids ask
/// for it, when they define them: the export, like the classes, outlives the agent.
pub fn export_internal_misc(jvmti: Jvmti, env: &JniEnv<'_>, class: Class<'_>) {
    let thread = match env.find_class("java/lang/Thread") {
        Ok(c) => c,
        Err(e) => {
            env.clear_exception();
            log::warn!("exporting jdk.internal.misc: {e}");
            return;
        }
    };
    match (env.module_of(thread), env.module_of(class)) {
        (Ok(base), Ok(to)) => {
            if let Err(e) = jvmti.add_module_exports(base, "jdk.internal.misc", to) {
                log::warn!("AddModuleExports jdk.internal.misc: {e}");
            }
            env.delete_local_ref(base);
            env.delete_local_ref(to);
        }
        (base, to) => {
            for m in [base, to].into_iter().flatten() {
                env.delete_local_ref(m);
            }
            log::warn!("exporting jdk.internal.misc: no module");
        }
    }
    env.delete_local_ref(thread.as_object());
}
