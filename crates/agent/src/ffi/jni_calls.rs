//! Native code calling into Java: the agent wraps the JNI functions that call a Java method
//! (`Call<Type>Method{,V,A}`, `CallNonvirtual…`, `CallStatic…`, `NewObject{,V,A}`) with JVMTI
//! `SetJNIFunctionTable`, and tells a handler ([`JniCalls`]) before each call and, if it asks,
//! after it returns: the runtime's revelation instruments a method a native method calls inside
//! a root's extent before the call proceeds; the `native` engine times the upcall. Outside what
//! the handler watches a wrapper costs one thread-local check, then forwards to the JVM's own
//! function.
//!
//! The `…V` and `…A` wrappers are here; the variadic ones are in `csrc/jni_variadic.c` (stable
//! Rust cannot define C-variadic functions) and call the `…V` wrapper through the table.

use std::sync::atomic::{AtomicPtr, Ordering};

use ferrofluid_jvmti::{sys, JniEnv, Jvmti, MethodId};

/// What a wrapper tells before it forwards a call and after the call returns.
pub trait JniCalls {
    /// Native code is about to call the Java method `mid`; true asks for
    /// [`JniCalls::method_returned`] once the call returns.
    fn method_called(env: &JniEnv<'_>, mid: MethodId) -> bool;
    /// The call [`JniCalls::method_called`] asked about returned (or threw), on the same thread.
    fn method_returned(_env: &JniEnv<'_>) {}
}

// A process-wide static: JNI functions get no user data, and the wrappers of every thread
// forward through it.
/// The table in effect before the agent installed its own (leaked: a wrapper may run on some
/// thread at any time, even after the table was restored).
static ORIGINAL: AtomicPtr<sys::JNINativeInterface_> = AtomicPtr::new(std::ptr::null_mut());

fn original() -> &'static sys::JNINativeInterface_ {
    // SAFETY: wrappers are installed only after ORIGINAL was set to a leaked, never freed table.
    unsafe { &*ORIGINAL.load(Ordering::Acquire) }
}

/// The handler's check before every call: cheap unless it watches the thread. True when the
/// handler wants [`after`].
#[inline]
fn before<H: JniCalls>(env: *mut sys::JNIEnv, mid: sys::jmethodID) -> bool {
    ferrofluid_jvmti::ffi_guard("JNI call wrapper", false, || {
        // SAFETY: the JNIEnv native code passed to this JNI function: the calling thread's.
        let Some(jni) = (unsafe { JniEnv::from_raw(env) }) else {
            return false;
        };
        if mid.is_null() {
            return false;
        }
        // SAFETY: a method ID native code passes to a JNI call function: one the JVM handed
        // out, of a loaded class (anything else is undefined behaviour in JNI itself).
        let mid = unsafe { MethodId::from_raw(mid) };
        H::method_called(&jni, mid)
    })
}

/// The handler's part after a call [`before`] asked about returned.
#[cold]
fn after<H: JniCalls>(env: *mut sys::JNIEnv) {
    ferrofluid_jvmti::ffi_guard("JNI call wrapper", (), || {
        // SAFETY: as in `before`: the calling thread's JNIEnv.
        if let Some(jni) = unsafe { JniEnv::from_raw(env) } {
            H::method_returned(&jni)
        }
    })
}

/// Wrappers of the `…V`/`…A` functions whose receiver part is `$($p: $t),*`.
macro_rules! wrappers {
    ($args:ty; $(($field:ident, ($($p:ident: $t:ty),*), $ret:ty)),* $(,)?) => {$(
        #[allow(non_snake_case)]
        pub(super) unsafe extern "C" fn $field<H: JniCalls>(
            env: *mut sys::JNIEnv,
            $($p: $t,)*
            mid: sys::jmethodID,
            args: $args,
        ) -> $ret {
            let watched = before::<H>(env, mid);
            // SAFETY: installed only when the original had this function (checked in
            // `install`); the JVM's own arguments are forwarded unchanged.
            let r = unsafe { original().$field.unwrap_unchecked()(env, $($p,)* mid, args) };
            if watched {
                after::<H>(env);
            }
            r
        }
    )*};
}

mod v {
    use super::*;
    type Va = *mut sys::__va_list_tag;
    type O = sys::jobject;
    wrappers!(Va;
        (CallObjectMethodV, (o: O), sys::jobject),
        (CallBooleanMethodV, (o: O), sys::jboolean),
        (CallByteMethodV, (o: O), sys::jbyte),
        (CallCharMethodV, (o: O), sys::jchar),
        (CallShortMethodV, (o: O), sys::jshort),
        (CallIntMethodV, (o: O), sys::jint),
        (CallLongMethodV, (o: O), sys::jlong),
        (CallFloatMethodV, (o: O), sys::jfloat),
        (CallDoubleMethodV, (o: O), sys::jdouble),
        (CallVoidMethodV, (o: O), ()),
        (CallNonvirtualObjectMethodV, (o: O, c: O), sys::jobject),
        (CallNonvirtualBooleanMethodV, (o: O, c: O), sys::jboolean),
        (CallNonvirtualByteMethodV, (o: O, c: O), sys::jbyte),
        (CallNonvirtualCharMethodV, (o: O, c: O), sys::jchar),
        (CallNonvirtualShortMethodV, (o: O, c: O), sys::jshort),
        (CallNonvirtualIntMethodV, (o: O, c: O), sys::jint),
        (CallNonvirtualLongMethodV, (o: O, c: O), sys::jlong),
        (CallNonvirtualFloatMethodV, (o: O, c: O), sys::jfloat),
        (CallNonvirtualDoubleMethodV, (o: O, c: O), sys::jdouble),
        (CallNonvirtualVoidMethodV, (o: O, c: O), ()),
        (CallStaticObjectMethodV, (c: O), sys::jobject),
        (CallStaticBooleanMethodV, (c: O), sys::jboolean),
        (CallStaticByteMethodV, (c: O), sys::jbyte),
        (CallStaticCharMethodV, (c: O), sys::jchar),
        (CallStaticShortMethodV, (c: O), sys::jshort),
        (CallStaticIntMethodV, (c: O), sys::jint),
        (CallStaticLongMethodV, (c: O), sys::jlong),
        (CallStaticFloatMethodV, (c: O), sys::jfloat),
        (CallStaticDoubleMethodV, (c: O), sys::jdouble),
        (CallStaticVoidMethodV, (c: O), ()),
        (NewObjectV, (c: O), sys::jobject),
    );
}

mod a {
    use super::*;
    type Ja = *const sys::jvalue;
    type O = sys::jobject;
    wrappers!(Ja;
        (CallObjectMethodA, (o: O), sys::jobject),
        (CallBooleanMethodA, (o: O), sys::jboolean),
        (CallByteMethodA, (o: O), sys::jbyte),
        (CallCharMethodA, (o: O), sys::jchar),
        (CallShortMethodA, (o: O), sys::jshort),
        (CallIntMethodA, (o: O), sys::jint),
        (CallLongMethodA, (o: O), sys::jlong),
        (CallFloatMethodA, (o: O), sys::jfloat),
        (CallDoubleMethodA, (o: O), sys::jdouble),
        (CallVoidMethodA, (o: O), ()),
        (CallNonvirtualObjectMethodA, (o: O, c: O), sys::jobject),
        (CallNonvirtualBooleanMethodA, (o: O, c: O), sys::jboolean),
        (CallNonvirtualByteMethodA, (o: O, c: O), sys::jbyte),
        (CallNonvirtualCharMethodA, (o: O, c: O), sys::jchar),
        (CallNonvirtualShortMethodA, (o: O, c: O), sys::jshort),
        (CallNonvirtualIntMethodA, (o: O, c: O), sys::jint),
        (CallNonvirtualLongMethodA, (o: O, c: O), sys::jlong),
        (CallNonvirtualFloatMethodA, (o: O, c: O), sys::jfloat),
        (CallNonvirtualDoubleMethodA, (o: O, c: O), sys::jdouble),
        (CallNonvirtualVoidMethodA, (o: O, c: O), ()),
        (CallStaticObjectMethodA, (c: O), sys::jobject),
        (CallStaticBooleanMethodA, (c: O), sys::jboolean),
        (CallStaticByteMethodA, (c: O), sys::jbyte),
        (CallStaticCharMethodA, (c: O), sys::jchar),
        (CallStaticShortMethodA, (c: O), sys::jshort),
        (CallStaticIntMethodA, (c: O), sys::jint),
        (CallStaticLongMethodA, (c: O), sys::jlong),
        (CallStaticFloatMethodA, (c: O), sys::jfloat),
        (CallStaticDoubleMethodA, (c: O), sys::jdouble),
        (CallStaticVoidMethodA, (c: O), ()),
        (NewObjectA, (c: O), sys::jobject),
    );
}

/// Declarations of the C wrappers and the list of `(field, wrapper)` pairs.
macro_rules! variadic {
    ($(($field:ident, ($($t:ty),*), $ret:ty)),* $(,)?) => {
        mod c {
            use super::{sys, O};
            extern "C" {
                $(
                    #[link_name = concat!("ferrofluid_jni_", stringify!($field))]
                    pub fn $field(env: *mut sys::JNIEnv, $(_: $t,)* mid: sys::jmethodID, ...) -> $ret;
                )*
            }
        }

        /// Puts every wrapper into `t`; false if the JVM's table lacks one of the functions.
        fn wrap_all<H: JniCalls>(t: &mut sys::JNINativeInterface_) -> bool {
            let fixed = wrap_fixed::<H>(t);
            let complete = $(t.$field.is_some() &&)* fixed;
            $(t.$field = Some(c::$field);)*
            complete
        }
    };
}

type O = sys::jobject;
variadic!(
    (CallObjectMethod, (O), sys::jobject),
    (CallBooleanMethod, (O), sys::jboolean),
    (CallByteMethod, (O), sys::jbyte),
    (CallCharMethod, (O), sys::jchar),
    (CallShortMethod, (O), sys::jshort),
    (CallIntMethod, (O), sys::jint),
    (CallLongMethod, (O), sys::jlong),
    (CallFloatMethod, (O), sys::jfloat),
    (CallDoubleMethod, (O), sys::jdouble),
    (CallVoidMethod, (O), ()),
    (CallNonvirtualObjectMethod, (O, O), sys::jobject),
    (CallNonvirtualBooleanMethod, (O, O), sys::jboolean),
    (CallNonvirtualByteMethod, (O, O), sys::jbyte),
    (CallNonvirtualCharMethod, (O, O), sys::jchar),
    (CallNonvirtualShortMethod, (O, O), sys::jshort),
    (CallNonvirtualIntMethod, (O, O), sys::jint),
    (CallNonvirtualLongMethod, (O, O), sys::jlong),
    (CallNonvirtualFloatMethod, (O, O), sys::jfloat),
    (CallNonvirtualDoubleMethod, (O, O), sys::jdouble),
    (CallNonvirtualVoidMethod, (O, O), ()),
    (CallStaticObjectMethod, (O), sys::jobject),
    (CallStaticBooleanMethod, (O), sys::jboolean),
    (CallStaticByteMethod, (O), sys::jbyte),
    (CallStaticCharMethod, (O), sys::jchar),
    (CallStaticShortMethod, (O), sys::jshort),
    (CallStaticIntMethod, (O), sys::jint),
    (CallStaticLongMethod, (O), sys::jlong),
    (CallStaticFloatMethod, (O), sys::jfloat),
    (CallStaticDoubleMethod, (O), sys::jdouble),
    (CallStaticVoidMethod, (O), ()),
    (NewObject, (O), sys::jobject),
);

/// Puts the `…V`/`…A` wrappers into `t`; false if the table lacks one of the functions.
fn wrap_fixed<H: JniCalls>(t: &mut sys::JNINativeInterface_) -> bool {
    macro_rules! set {
        ($($m:ident::$f:ident),* $(,)?) => {{
            let complete = $(t.$f.is_some() &&)* true;
            $(t.$f = Some($m::$f::<H>);)*
            complete
        }};
    }
    set!(
        v::CallObjectMethodV,
        v::CallBooleanMethodV,
        v::CallByteMethodV,
        v::CallCharMethodV,
        v::CallShortMethodV,
        v::CallIntMethodV,
        v::CallLongMethodV,
        v::CallFloatMethodV,
        v::CallDoubleMethodV,
        v::CallVoidMethodV,
        v::CallNonvirtualObjectMethodV,
        v::CallNonvirtualBooleanMethodV,
        v::CallNonvirtualByteMethodV,
        v::CallNonvirtualCharMethodV,
        v::CallNonvirtualShortMethodV,
        v::CallNonvirtualIntMethodV,
        v::CallNonvirtualLongMethodV,
        v::CallNonvirtualFloatMethodV,
        v::CallNonvirtualDoubleMethodV,
        v::CallNonvirtualVoidMethodV,
        v::CallStaticObjectMethodV,
        v::CallStaticBooleanMethodV,
        v::CallStaticByteMethodV,
        v::CallStaticCharMethodV,
        v::CallStaticShortMethodV,
        v::CallStaticIntMethodV,
        v::CallStaticLongMethodV,
        v::CallStaticFloatMethodV,
        v::CallStaticDoubleMethodV,
        v::CallStaticVoidMethodV,
        v::NewObjectV,
        a::CallObjectMethodA,
        a::CallBooleanMethodA,
        a::CallByteMethodA,
        a::CallCharMethodA,
        a::CallShortMethodA,
        a::CallIntMethodA,
        a::CallLongMethodA,
        a::CallFloatMethodA,
        a::CallDoubleMethodA,
        a::CallVoidMethodA,
        a::CallNonvirtualObjectMethodA,
        a::CallNonvirtualBooleanMethodA,
        a::CallNonvirtualByteMethodA,
        a::CallNonvirtualCharMethodA,
        a::CallNonvirtualShortMethodA,
        a::CallNonvirtualIntMethodA,
        a::CallNonvirtualLongMethodA,
        a::CallNonvirtualFloatMethodA,
        a::CallNonvirtualDoubleMethodA,
        a::CallNonvirtualVoidMethodA,
        a::CallStaticObjectMethodA,
        a::CallStaticBooleanMethodA,
        a::CallStaticByteMethodA,
        a::CallStaticCharMethodA,
        a::CallStaticShortMethodA,
        a::CallStaticIntMethodA,
        a::CallStaticLongMethodA,
        a::CallStaticFloatMethodA,
        a::CallStaticDoubleMethodA,
        a::CallStaticVoidMethodA,
        a::NewObjectA,
    )
}

fn is_ours(t: &sys::JNINativeInterface_) -> bool {
    // A C symbol has one address (a Rust function may be duplicated across codegen units).
    let ours = c::CallStaticVoidMethod as *const ();
    t.CallStaticVoidMethod
        .is_some_and(|f| std::ptr::eq(f as *const (), ours))
}

/// Installs the wrappers of handler `H` (idempotent for one handler; another handler's wrappers
/// are replaced). Errors are logged: without them, native callbacks into the subgraph are simply
/// not revealed (or, for the `native` engine, not timed).
pub fn install<H: JniCalls>(jvmti: Jvmti) {
    let table = match jvmti.jni_function_table() {
        Ok(t) => t,
        Err(e) => {
            log::warn!("JNI function table: {e}; native callbacks will not be revealed");
            return;
        }
    };
    let Some(current) = table.first().copied() else {
        return;
    };
    if is_ours(&current) {
        // The variadic wrappers call the `V` ones through the table: the handler is theirs.
        let v = v::CallStaticVoidMethodV::<H> as *const () as usize;
        if current
            .CallStaticVoidMethodV
            .map(|f| f as *const () as usize)
            == Some(v)
        {
            return;
        }
        let saved = ORIGINAL.load(Ordering::Acquire);
        if saved.is_null() {
            return;
        }
        // SAFETY: `saved` is the JVM's own table, saved by the first install.
        let mut ours = unsafe { *saved };
        wrap_all::<H>(&mut ours);
        // SAFETY: as below.
        if let Err(e) = unsafe { jvmti.set_jni_function_table(&ours) } {
            log::warn!("SetJNIFunctionTable: {e}");
        }
        return;
    }
    let mut ours = current;
    if !wrap_all::<H>(&mut ours) {
        log::warn!("JNI function table incomplete; native callbacks will not be revealed");
        return;
    }
    ORIGINAL.store(Box::into_raw(Box::new(current)), Ordering::Release);
    // SAFETY: every wrapper has its slot's JNI signature, lives as long as the library (never
    // unloaded) and forwards to the original table saved above.
    match unsafe { jvmti.set_jni_function_table(&ours) } {
        Ok(()) => log::info!("JNI calls into Java wrapped (native callbacks are revealed)"),
        Err(e) => log::warn!("SetJNIFunctionTable: {e}; native callbacks will not be revealed"),
    }
}

/// Restores the JVM's own table, if the wrappers are installed.
pub fn uninstall(jvmti: Jvmti) {
    let installed = jvmti
        .jni_function_table()
        .ok()
        .and_then(|t| t.first().copied())
        .is_some_and(|t| is_ours(&t));
    let saved = ORIGINAL.load(Ordering::Acquire);
    if !installed || saved.is_null() {
        return;
    }
    // SAFETY: `saved` is the table the JVM had, whose functions are the JVM's own.
    if let Err(e) = unsafe { jvmti.set_jni_function_table(&*saved) } {
        log::warn!("restoring the JNI function table: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        static ferrofluid_jni_v_slots: [i32; 31];
    }

    #[test]
    fn the_c_wrappers_call_the_v_variants_at_their_table_slots() {
        use std::mem::offset_of;
        type T = sys::JNINativeInterface_;
        let slot = |offset: usize| (offset / std::mem::size_of::<usize>()) as i32;
        let mut expected = Vec::new();
        macro_rules! slots {
            ($($f:ident),*) => { $(expected.push(slot(offset_of!(T, $f)));)* };
        }
        slots!(
            CallObjectMethodV,
            CallNonvirtualObjectMethodV,
            CallStaticObjectMethodV,
            CallBooleanMethodV,
            CallNonvirtualBooleanMethodV,
            CallStaticBooleanMethodV,
            CallByteMethodV,
            CallNonvirtualByteMethodV,
            CallStaticByteMethodV,
            CallCharMethodV,
            CallNonvirtualCharMethodV,
            CallStaticCharMethodV,
            CallShortMethodV,
            CallNonvirtualShortMethodV,
            CallStaticShortMethodV,
            CallIntMethodV,
            CallNonvirtualIntMethodV,
            CallStaticIntMethodV,
            CallLongMethodV,
            CallNonvirtualLongMethodV,
            CallStaticLongMethodV,
            CallFloatMethodV,
            CallNonvirtualFloatMethodV,
            CallStaticFloatMethodV,
            CallDoubleMethodV,
            CallNonvirtualDoubleMethodV,
            CallStaticDoubleMethodV,
            CallVoidMethodV,
            CallNonvirtualVoidMethodV,
            CallStaticVoidMethodV,
            NewObjectV
        );
        // SAFETY: a constant array defined in csrc/jni_variadic.c.
        let c_slots = unsafe { ferrofluid_jni_v_slots };
        assert_eq!(c_slots.to_vec(), expected);
    }

    struct Nothing;

    impl JniCalls for Nothing {
        fn method_called(_: &JniEnv<'_>, _: MethodId) -> bool {
            false
        }
    }

    fn wrap_all(t: &mut sys::JNINativeInterface_) -> bool {
        super::wrap_all::<Nothing>(t)
    }

    #[test]
    fn wrapping_a_table_replaces_every_call_function() {
        // SAFETY: an all-zero table is valid (every slot an empty Option).
        let mut t: sys::JNINativeInterface_ = unsafe { std::mem::zeroed() };
        assert!(!is_ours(&t));
        assert!(!wrap_all(&mut t), "an empty table is incomplete");
        assert!(wrap_all(&mut t), "now every call slot holds a function");
        assert!(is_ours(&t));
        let addr = |f: Option<*const ()>| f.map(|p| p as usize);
        assert_eq!(
            addr(t.CallVoidMethod.map(|f| f as *const ())),
            addr(Some(c::CallVoidMethod as *const ()))
        );
        assert!(t.NewObjectA.is_some() && t.CallNonvirtualFloatMethodV.is_some());
        assert!(t.GetVersion.is_none(), "other functions untouched");
    }
}
