//! The few JNI calls the agent needs: getting environments, finding classes, creating the agent thread's
//! `java.lang.Thread`, and reference housekeeping. Every call that can raise a Java exception checks for
//! one and clears it, so no exception ever reaches the application.

use std::ffi::{c_void, CString};
use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::error::{Error, Result};
use crate::refs::{Class, Object};
use crate::{sys, Jvmti};

/// Calls a JNI function through the env's function table; yields `None` if the slot is empty.
macro_rules! jni_fn {
    ($env:expr, $name:ident) => {
        // SAFETY: $env is a valid JNIEnv (JniEnv invariant), whose table pointer is valid for the thread.
        unsafe { (**$env.raw.as_ptr()).$name }
    };
}

/// A JNI `Get<Type>ArrayRegion` function for elements of type `T`.
type RegionFn<T> =
    unsafe extern "C" fn(*mut sys::JNIEnv, sys::jarray, sys::jsize, sys::jsize, *mut T);

/// The `JavaVM`: valid on any thread for the life of the process.
#[derive(Debug, Clone, Copy)]
pub struct JavaVm {
    raw: NonNull<sys::JavaVM>,
}

// SAFETY: the JavaVM invocation interface is specified to be callable from any thread.
unsafe impl Send for JavaVm {}
// SAFETY: as above.
unsafe impl Sync for JavaVm {}

impl JavaVm {
    /// # Safety
    /// `raw` must be the JavaVM pointer the JVM passed to `Agent_OnLoad`/`Agent_OnAttach` (or returned).
    pub unsafe fn from_raw(raw: *mut sys::JavaVM) -> Option<Self> {
        NonNull::new(raw).map(|raw| JavaVm { raw })
    }

    pub fn as_raw(self) -> *mut sys::JavaVM {
        self.raw.as_ptr()
    }

    /// A new JVMTI environment (version 1.2, which every JVM since 7 provides).
    pub fn jvmti(self) -> Result<Jvmti> {
        let env = self.get_env(sys::FERROFLUID_JVMTI_VERSION)?;
        // SAFETY: GetEnv succeeded for a JVMTI version, so `env` is a jvmtiEnv*.
        Ok(unsafe { Jvmti::from_raw(env.cast()) }.expect("GetEnv returned OK and NULL"))
    }

    /// The JNI environment of the current thread, if it is attached to the JVM.
    pub fn jni_env<'a>(self) -> Result<JniEnv<'a>> {
        let env = self.get_env(sys::JNI_VERSION_1_8 as sys::jint)?;
        // SAFETY: GetEnv succeeded for a JNI version on this thread, so `env` is this thread's JNIEnv*.
        Ok(unsafe { JniEnv::from_raw(env.cast()) }.expect("GetEnv returned OK and NULL"))
    }

    /// Attaches the current native thread to the JVM as a daemon thread named `name` (so it never
    /// keeps the JVM from exiting), returning its JNI environment. Already-attached threads get theirs.
    pub fn attach_current_thread_as_daemon(self, name: &str) -> Result<JniEnv<'static>> {
        let c_name = CString::new(name).map_err(|_| Error::Nul {
            function: "AttachCurrentThreadAsDaemon",
        })?;
        let mut args = sys::JavaVMAttachArgs {
            version: sys::JNI_VERSION_1_8 as sys::jint,
            name: c_name.as_ptr().cast_mut(),
            group: std::ptr::null_mut(),
        };
        let function = "AttachCurrentThreadAsDaemon";
        // SAFETY: valid JavaVM (type invariant).
        let attach = unsafe { (**self.raw.as_ptr()).AttachCurrentThreadAsDaemon };
        let attach = attach.ok_or(Error::Jni { function })?;
        let mut env = std::ptr::null_mut();
        // SAFETY: out-pointer and attach args that outlive the call (the JVM copies the name).
        let code = unsafe {
            attach(
                self.raw.as_ptr(),
                &mut env,
                (&mut args as *mut sys::JavaVMAttachArgs).cast(),
            )
        };
        if code != sys::JNI_OK as sys::jint {
            return Err(Error::Jni { function });
        }
        // SAFETY: the JVM returned this thread's JNIEnv, valid until the thread detaches; 'static is
        // bounded in practice by `detach_current_thread`'s contract.
        unsafe { JniEnv::from_raw(env.cast()) }.ok_or(Error::Jni { function })
    }

    /// Runs `f` with the current thread attached to the JVM (as a daemon named `name`), detaching it
    /// afterwards if it was not attached before. The closure's `JniEnv` cannot escape it, so no local
    /// reference outlives the attachment.
    pub fn with_attached_thread<R>(
        self,
        name: &str,
        f: impl FnOnce(&JniEnv<'_>) -> R,
    ) -> Result<R> {
        if let Ok(env) = self.jni_env() {
            return Ok(f(&env));
        }
        let env = self.attach_current_thread_as_daemon(name)?;
        let result = f(&env);
        // SAFETY: `env` and every reference made through it were confined to `f`, which has returned.
        unsafe { self.detach_current_thread() }?;
        Ok(result)
    }

    /// Detaches the current thread.
    ///
    /// # Safety
    /// No [`JniEnv`] or local reference of this thread may be used afterwards.
    pub unsafe fn detach_current_thread(self) -> Result<()> {
        // SAFETY: valid JavaVM (type invariant).
        let detach = unsafe { (**self.raw.as_ptr()).DetachCurrentThread };
        let detach = detach.ok_or(Error::Jni {
            function: "DetachCurrentThread",
        })?;
        // SAFETY: caller's contract.
        if unsafe { detach(self.raw.as_ptr()) } != sys::JNI_OK as sys::jint {
            return Err(Error::Jni {
                function: "DetachCurrentThread",
            });
        }
        Ok(())
    }

    fn get_env(self, version: sys::jint) -> Result<*mut c_void> {
        // SAFETY: self.raw is a valid JavaVM (type invariant); its function table lives as long as the VM.
        let get_env = unsafe { (**self.raw.as_ptr()).GetEnv };
        let get_env = get_env.ok_or(Error::GetEnv {
            version,
            code: sys::JNI_ERR,
        })?;
        let mut env = std::ptr::null_mut();
        // SAFETY: GetEnv writes one pointer into `env`.
        let code = unsafe { get_env(self.raw.as_ptr(), &mut env, version) };
        if code != sys::JNI_OK as sys::jint || env.is_null() {
            return Err(Error::GetEnv { version, code });
        }
        Ok(env)
    }
}

/// A thread's `JNIEnv`: proof that the current thread is a Java thread, and the owner of the local
/// references created in the current native frame (lifetime `'a`). Not `Send`: it belongs to one thread.
#[derive(Debug)]
pub struct JniEnv<'a> {
    raw: NonNull<sys::JNIEnv>,
    frame: PhantomData<&'a ()>,
}

impl<'a> JniEnv<'a> {
    /// # Safety
    /// `raw` must be the JNIEnv of the current thread, valid for `'a` (typically the duration of the
    /// callback that received it).
    pub unsafe fn from_raw(raw: *mut sys::JNIEnv) -> Option<Self> {
        NonNull::new(raw).map(|raw| JniEnv {
            raw,
            frame: PhantomData,
        })
    }

    pub fn as_raw(&self) -> *mut sys::JNIEnv {
        self.raw.as_ptr()
    }

    /// `FindClass` with a binary name in internal form (`java/lang/Thread`).
    pub fn find_class(&self, name: &str) -> Result<Class<'a>> {
        let c_name = CString::new(name).map_err(|_| Error::Nul {
            function: "FindClass",
        })?;
        let f = jni_fn!(self, FindClass).ok_or(Error::Jni {
            function: "FindClass",
        })?;
        // SAFETY: valid env and NUL-terminated name.
        let class = unsafe { f(self.raw.as_ptr(), c_name.as_ptr()) };
        self.non_null("FindClass", class)?;
        // SAFETY: FindClass returned a non-null local reference to a class.
        Ok(unsafe { Class::from_raw(class) })
    }

    /// A new, unstarted `java.lang.Thread` named `name`, for JVMTI `RunAgentThread`.
    pub fn new_thread(&self, name: &str) -> Result<Object<'a>> {
        let class = self.find_class("java/lang/Thread")?;
        let ctor = jni_fn!(self, GetMethodID).ok_or(Error::Jni {
            function: "GetMethodID",
        })?;
        // SAFETY: valid env, class reference and NUL-terminated literals.
        let init = unsafe {
            ctor(
                self.raw.as_ptr(),
                class.as_raw(),
                c"<init>".as_ptr(),
                c"(Ljava/lang/String;)V".as_ptr(),
            )
        };
        self.non_null("GetMethodID", init)?;
        let jname = self.new_string_utf(name)?;
        let new_object = jni_fn!(self, NewObjectA).ok_or(Error::Jni {
            function: "NewObjectA",
        })?;
        let args = [sys::jvalue { l: jname.as_raw() }];
        // SAFETY: `init` is Thread(String) of `class`; `args` matches its one-reference signature.
        let thread = unsafe { new_object(self.raw.as_ptr(), class.as_raw(), init, args.as_ptr()) };
        self.delete_local_ref(jname);
        self.delete_local_ref(class.as_object());
        self.non_null("NewObjectA", thread)?;
        // SAFETY: NewObjectA returned a non-null local reference.
        Ok(unsafe { Object::from_raw(thread) })
    }

    /// `NewStringUTF` (the argument is converted to modified UTF-8 by the JVM only for ASCII-safe input;
    /// names used by the agent are ASCII).
    pub fn new_string_utf(&self, s: &str) -> Result<Object<'a>> {
        let c = CString::new(s).map_err(|_| Error::Nul {
            function: "NewStringUTF",
        })?;
        let f = jni_fn!(self, NewStringUTF).ok_or(Error::Jni {
            function: "NewStringUTF",
        })?;
        // SAFETY: valid env and NUL-terminated string.
        let string = unsafe { f(self.raw.as_ptr(), c.as_ptr()) };
        self.non_null("NewStringUTF", string)?;
        // SAFETY: non-null local reference.
        Ok(unsafe { Object::from_raw(string) })
    }

    /// `GetObjectClass`: a local reference to the class of `obj` (which must not be null).
    pub fn object_class(&self, obj: Object<'_>) -> Result<Class<'a>> {
        let f = jni_fn!(self, GetObjectClass).ok_or(Error::Jni {
            function: "GetObjectClass",
        })?;
        // SAFETY: valid env and a live, non-null reference (Object invariant).
        let class = unsafe { f(self.raw.as_ptr(), obj.as_raw()) };
        self.non_null("GetObjectClass", class)?;
        // SAFETY: GetObjectClass returned a non-null local reference to a class.
        Ok(unsafe { Class::from_raw(class) })
    }

    /// Frees a local reference early (for loops that would otherwise fill the local frame).
    pub fn delete_local_ref(&self, obj: Object<'_>) {
        if let Some(f) = jni_fn!(self, DeleteLocalRef) {
            // SAFETY: `obj` is a live local reference of this thread (Object invariant).
            unsafe { f(self.raw.as_ptr(), obj.as_raw()) }
        }
    }

    /// A global reference to `obj`, valid on any thread until [`JniEnv::delete_global_ref`].
    pub fn new_global_ref(&self, obj: Object<'_>) -> Result<sys::jobject> {
        let f = jni_fn!(self, NewGlobalRef).ok_or(Error::Jni {
            function: "NewGlobalRef",
        })?;
        // SAFETY: valid env and live reference.
        let global = unsafe { f(self.raw.as_ptr(), obj.as_raw()) };
        self.non_null("NewGlobalRef", global)?;
        Ok(global)
    }

    /// # Safety
    /// `global` must come from [`JniEnv::new_global_ref`] and not be used afterwards.
    pub unsafe fn delete_global_ref(&self, global: sys::jobject) {
        if let Some(f) = jni_fn!(self, DeleteGlobalRef) {
            // SAFETY: caller's contract.
            unsafe { f(self.raw.as_ptr(), global) }
        }
    }

    /// `DefineClass`: defines `bytes` as class `name` (internal form) in `loader` (`None`: the
    /// bootstrap loader).
    pub fn define_class(
        &self,
        name: &str,
        loader: Option<Object<'_>>,
        bytes: &[u8],
    ) -> Result<Class<'a>> {
        let function = "DefineClass";
        let c_name = CString::new(name).map_err(|_| Error::Nul { function })?;
        let f = jni_fn!(self, DefineClass).ok_or(Error::Jni { function })?;
        let loader = loader.map_or(std::ptr::null_mut(), |l| l.as_raw());
        // SAFETY: valid env, NUL-terminated name, loader reference or null, and a byte buffer that
        // outlives the call (the JVM copies it).
        let class = unsafe {
            f(
                self.raw.as_ptr(),
                c_name.as_ptr(),
                loader,
                bytes.as_ptr().cast(),
                bytes.len() as sys::jsize,
            )
        };
        self.non_null(function, class)?;
        // SAFETY: non-null local reference to the new class.
        Ok(unsafe { Class::from_raw(class) })
    }

    /// `RegisterNatives`: binds native methods of `class` to functions.
    ///
    /// # Safety
    /// Each `(name, signature, function)` must be a native method of `class` and a function whose C
    /// signature matches JNI's for that method descriptor (`JNIEnv*`, `jclass` for static methods, then
    /// the arguments), callable from any Java thread for the rest of the JVM's life.
    pub unsafe fn register_natives(
        &self,
        class: Class<'_>,
        methods: &[(&std::ffi::CStr, &std::ffi::CStr, *mut c_void)],
    ) -> Result<()> {
        let function = "RegisterNatives";
        let f = jni_fn!(self, RegisterNatives).ok_or(Error::Jni { function })?;
        let table: Vec<sys::JNINativeMethod> = methods
            .iter()
            .map(|(name, sig, fn_ptr)| sys::JNINativeMethod {
                name: name.as_ptr().cast_mut(),
                signature: sig.as_ptr().cast_mut(),
                fnPtr: *fn_ptr,
            })
            .collect();
        // SAFETY: valid env and class; the table's strings outlive the call; the caller vouches for
        // the functions.
        let code = unsafe {
            f(
                self.raw.as_ptr(),
                class.as_raw(),
                table.as_ptr(),
                table.len() as sys::jint,
            )
        };
        let raised = self.clear_exception();
        if code != sys::JNI_OK as sys::jint || raised {
            return Err(Error::Jni { function });
        }
        Ok(())
    }

    /// `GetModule`: the module of `class` (the unnamed module of its loader for classpath classes).
    pub fn module_of(&self, class: Class<'_>) -> Result<Object<'a>> {
        let function = "GetModule";
        let f = jni_fn!(self, GetModule).ok_or(Error::Jni { function })?;
        // SAFETY: valid env and class reference.
        let module = unsafe { f(self.raw.as_ptr(), class.as_raw()) };
        self.non_null(function, module)?;
        // SAFETY: non-null local reference.
        Ok(unsafe { Object::from_raw(module) })
    }

    /// A weak global reference to `obj` (does not keep it alive; usable on any thread).
    pub fn new_weak_global_ref(&self, obj: Object<'_>) -> Result<sys::jweak> {
        let function = "NewWeakGlobalRef";
        let f = jni_fn!(self, NewWeakGlobalRef).ok_or(Error::Jni { function })?;
        // SAFETY: valid env and live reference.
        let weak = unsafe { f(self.raw.as_ptr(), obj.as_raw()) };
        self.non_null(function, weak)?;
        Ok(weak)
    }

    /// A local reference to the object behind a weak global reference, or `None` once it was
    /// collected.
    ///
    /// # Safety
    /// `weak` must be a live weak global reference from [`JniEnv::new_weak_global_ref`].
    pub unsafe fn upgrade_weak(&self, weak: sys::jweak) -> Option<Object<'a>> {
        let f = jni_fn!(self, NewLocalRef)?;
        // SAFETY: caller's contract; NewLocalRef of a cleared weak reference returns null.
        let local = unsafe { f(self.raw.as_ptr(), weak) };
        // SAFETY: null or a local reference NewLocalRef returned.
        unsafe { Object::from_nullable(local) }
    }

    /// # Safety
    /// `weak` must come from [`JniEnv::new_weak_global_ref`] and not be used afterwards.
    pub unsafe fn delete_weak_global_ref(&self, weak: sys::jweak) {
        if let Some(f) = jni_fn!(self, DeleteWeakGlobalRef) {
            // SAFETY: caller's contract.
            unsafe { f(self.raw.as_ptr(), weak) }
        }
    }

    /// `IsSameObject` for any two references (local, global or weak; a cleared weak reference is
    /// the same as null).
    ///
    /// # Safety
    /// `a` and `b` must each be null, a live local reference of this thread, or a live global or
    /// weak global reference.
    pub unsafe fn is_same_object(&self, a: sys::jobject, b: sys::jobject) -> bool {
        match jni_fn!(self, IsSameObject) {
            // SAFETY: valid env; the caller vouches for both references.
            Some(f) => unsafe { f(self.raw.as_ptr(), a, b) != 0 },
            None => false,
        }
    }

    /// Calls the static method `name` `signature` of `class`, which returns a `long`. A Java
    /// exception is cleared and reported as an error.
    ///
    /// # Safety
    /// `args` must match the parameter types of `signature`.
    pub unsafe fn call_static_long(
        &self,
        class: Class<'_>,
        name: &std::ffi::CStr,
        signature: &std::ffi::CStr,
        args: &[sys::jvalue],
    ) -> Result<i64> {
        let function = "CallStaticLongMethodA";
        let get = jni_fn!(self, GetStaticMethodID).ok_or(Error::Jni {
            function: "GetStaticMethodID",
        })?;
        // SAFETY: valid env, class reference and NUL-terminated strings.
        let method = unsafe {
            get(
                self.raw.as_ptr(),
                class.as_raw(),
                name.as_ptr(),
                signature.as_ptr(),
            )
        };
        self.non_null("GetStaticMethodID", method)?;
        let call = jni_fn!(self, CallStaticLongMethodA).ok_or(Error::Jni { function })?;
        // SAFETY: `method` is a static method of `class`; the caller vouches for `args`.
        let value = unsafe { call(self.raw.as_ptr(), class.as_raw(), method, args.as_ptr()) };
        self.checked(function, value)
    }

    /// `FromReflectedMethod`: the method ID of a `java.lang.reflect.Method` or `Constructor`.
    pub fn from_reflected_method(&self, method: Object<'_>) -> Result<crate::MethodId> {
        let function = "FromReflectedMethod";
        let f = jni_fn!(self, FromReflectedMethod).ok_or(Error::Jni { function })?;
        // SAFETY: valid env and live reference (the JVM checks its class).
        let id = unsafe { f(self.raw.as_ptr(), method.as_raw()) };
        if self.clear_exception() || id.is_null() {
            return Err(Error::Jni { function });
        }
        // SAFETY: a non-null method ID from the JVM.
        Ok(unsafe { crate::MethodId::from_raw(id) })
    }

    /// Calls the instance method `name` `signature` (no arguments, returning an object) on `obj`.
    /// A Java exception is cleared and reported as an error; a null result is `Ok(None)`.
    pub fn call_object_method(
        &self,
        obj: Object<'_>,
        name: &std::ffi::CStr,
        signature: &std::ffi::CStr,
    ) -> Result<Option<Object<'a>>> {
        let function = "CallObjectMethodA";
        let method = self.method_id_of(obj, name, signature)?;
        let call = jni_fn!(self, CallObjectMethodA).ok_or(Error::Jni { function })?;
        // SAFETY: `method` is a no-argument method of `obj`'s class returning an object.
        let value = unsafe { call(self.raw.as_ptr(), obj.as_raw(), method, std::ptr::null()) };
        let value = self.checked(function, value)?;
        // SAFETY: null or a local reference the call returned.
        Ok(unsafe { Object::from_nullable(value) })
    }

    /// Calls the instance method `name` `signature` (no arguments, returning a boolean) on `obj`.
    pub fn call_boolean_method(
        &self,
        obj: Object<'_>,
        name: &std::ffi::CStr,
        signature: &std::ffi::CStr,
    ) -> Result<bool> {
        let function = "CallBooleanMethodA";
        let method = self.method_id_of(obj, name, signature)?;
        let call = jni_fn!(self, CallBooleanMethodA).ok_or(Error::Jni { function })?;
        // SAFETY: `method` is a no-argument method of `obj`'s class returning a boolean.
        let value = unsafe { call(self.raw.as_ptr(), obj.as_raw(), method, std::ptr::null()) };
        self.checked(function, value != 0)
    }

    /// `GetMethodID` on the class of `obj`.
    fn method_id_of(
        &self,
        obj: Object<'_>,
        name: &std::ffi::CStr,
        signature: &std::ffi::CStr,
    ) -> Result<sys::jmethodID> {
        let function = "GetMethodID";
        let class_of = jni_fn!(self, GetObjectClass).ok_or(Error::Jni { function })?;
        let get = jni_fn!(self, GetMethodID).ok_or(Error::Jni { function })?;
        // SAFETY: valid env and live reference.
        let class = unsafe { class_of(self.raw.as_ptr(), obj.as_raw()) };
        self.non_null("GetObjectClass", class)?;
        // SAFETY: valid env, class reference and NUL-terminated strings.
        let method = unsafe { get(self.raw.as_ptr(), class, name.as_ptr(), signature.as_ptr()) };
        // SAFETY: `class` is the local reference GetObjectClass returned.
        self.delete_local_ref(unsafe { Object::from_raw(class) });
        self.non_null(function, method)?;
        Ok(method)
    }

    /// The contents of a `java.lang.String` (modified UTF-8, converted lossily).
    pub fn string_utf(&self, string: Object<'_>) -> Result<String> {
        let function = "GetStringUTFChars";
        let get = jni_fn!(self, GetStringUTFChars).ok_or(Error::Jni { function })?;
        let release = jni_fn!(self, ReleaseStringUTFChars).ok_or(Error::Jni { function })?;
        // SAFETY: valid env and a live String reference.
        let chars = unsafe { get(self.raw.as_ptr(), string.as_raw(), std::ptr::null_mut()) };
        self.non_null(function, chars.cast_mut())?;
        // SAFETY: a NUL-terminated buffer valid until released.
        let s = unsafe { std::ffi::CStr::from_ptr(chars) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: releases the buffer GetStringUTFChars returned for this string.
        unsafe { release(self.raw.as_ptr(), string.as_raw(), chars) };
        Ok(s)
    }

    /// The instance field `name` of reference type `signature` of `obj` (`GetFieldID` on its
    /// class, then `GetObjectField`; runs no Java code). A null value is `Ok(None)`.
    pub fn object_field(
        &self,
        obj: Object<'_>,
        name: &std::ffi::CStr,
        signature: &std::ffi::CStr,
    ) -> Result<Option<Object<'a>>> {
        let function = "GetFieldID";
        let class_of = jni_fn!(self, GetObjectClass).ok_or(Error::Jni { function })?;
        let field_id = jni_fn!(self, GetFieldID).ok_or(Error::Jni { function })?;
        let get = jni_fn!(self, GetObjectField).ok_or(Error::Jni { function })?;
        // SAFETY: valid env and live reference.
        let class = unsafe { class_of(self.raw.as_ptr(), obj.as_raw()) };
        self.non_null("GetObjectClass", class)?;
        // SAFETY: valid env, class reference and NUL-terminated strings.
        let field =
            unsafe { field_id(self.raw.as_ptr(), class, name.as_ptr(), signature.as_ptr()) };
        // SAFETY: `class` is the local reference GetObjectClass returned.
        self.delete_local_ref(unsafe { Object::from_raw(class) });
        self.non_null(function, field)?;
        // SAFETY: `field` is an instance field of `obj`'s class, of reference type.
        let value = unsafe { get(self.raw.as_ptr(), obj.as_raw(), field) };
        // SAFETY: null or a local reference GetObjectField returned.
        Ok((!value.is_null()).then(|| unsafe { Object::from_raw(value) }))
    }

    /// The instance field `name` of type `long` of `obj` (`GetFieldID` on its class, then
    /// `GetLongField`; runs no Java code).
    pub fn long_field(&self, obj: Object<'_>, name: &std::ffi::CStr) -> Result<i64> {
        let function = "GetFieldID";
        let class_of = jni_fn!(self, GetObjectClass).ok_or(Error::Jni { function })?;
        let field_id = jni_fn!(self, GetFieldID).ok_or(Error::Jni { function })?;
        let get = jni_fn!(self, GetLongField).ok_or(Error::Jni { function })?;
        // SAFETY: valid env and live reference.
        let class = unsafe { class_of(self.raw.as_ptr(), obj.as_raw()) };
        self.non_null("GetObjectClass", class)?;
        // SAFETY: valid env, class reference and NUL-terminated strings.
        let field = unsafe { field_id(self.raw.as_ptr(), class, name.as_ptr(), c"J".as_ptr()) };
        // SAFETY: `class` is the local reference GetObjectClass returned.
        self.delete_local_ref(unsafe { Object::from_raw(class) });
        self.non_null(function, field)?;
        // SAFETY: `field` is an instance field of type long of `obj`'s class.
        Ok(unsafe { get(self.raw.as_ptr(), obj.as_raw(), field) })
    }

    /// `GetSuperclass`: `None` for `java.lang.Object`, interfaces and primitive types.
    pub fn superclass(&self, class: Class<'_>) -> Option<Class<'a>> {
        let f = jni_fn!(self, GetSuperclass)?;
        // SAFETY: valid env and a live class reference.
        let superclass = unsafe { f(self.raw.as_ptr(), class.as_raw()) };
        // SAFETY: null or a local reference to a class.
        unsafe { Class::from_nullable(superclass) }
    }

    /// `IsInstanceOf`: whether `obj` is an instance of `class` (or of a subclass).
    pub fn is_instance_of(&self, obj: Object<'_>, class: Class<'_>) -> bool {
        let Some(f) = jni_fn!(self, IsInstanceOf) else {
            return false;
        };
        // SAFETY: valid env, a live object and a live class reference.
        unsafe { f(self.raw.as_ptr(), obj.as_raw(), class.as_raw()) != 0 }
    }

    /// The value of `field`, an instance field of reference type that `declaring` declares, in
    /// `obj` (`GetObjectField`; runs no Java code). A null value is `Ok(None)`; a static or
    /// primitive field, or an `obj` that is no `declaring`, is an error.
    ///
    /// # Safety
    /// `field` must be one [`crate::Jvmti::fields`] returned for `declaring`.
    pub unsafe fn reference_field(
        &self,
        obj: Object<'_>,
        declaring: Class<'_>,
        field: &crate::Field,
    ) -> Result<Option<Object<'a>>> {
        let function = "GetObjectField";
        if field.is_static || !field.is_reference() || !self.is_instance_of(obj, declaring) {
            return Err(Error::Jni { function });
        }
        let get = jni_fn!(self, GetObjectField).ok_or(Error::Jni { function })?;
        // SAFETY: `declaring` declares `field` (the caller's promise), checked above to be an
        // instance field of reference type of a class `obj` is an instance of.
        let value = unsafe { get(self.raw.as_ptr(), obj.as_raw(), field.id.as_raw()) };
        // SAFETY: null or a local reference GetObjectField returned.
        Ok(unsafe { Object::from_nullable(value) })
    }

    /// The elements of the object array `array` (`GetArrayLength`, `GetObjectArrayElement`), as
    /// local references (`None` for null elements).
    pub fn object_array_elements(&self, array: Object<'_>) -> Result<Vec<Option<Object<'a>>>> {
        let function = "GetObjectArrayElement";
        let length = jni_fn!(self, GetArrayLength).ok_or(Error::Jni { function })?;
        let element = jni_fn!(self, GetObjectArrayElement).ok_or(Error::Jni { function })?;
        // SAFETY: valid env and a live array reference.
        let n = self.checked(function, unsafe {
            length(self.raw.as_ptr(), array.as_raw())
        })?;
        let mut out = Vec::with_capacity(n.max(0) as usize);
        for i in 0..n {
            // SAFETY: valid env, live object-array reference, index within its length.
            let e = unsafe { element(self.raw.as_ptr(), array.as_raw(), i) };
            if self.clear_exception() {
                for o in out.into_iter().flatten() {
                    self.delete_local_ref(o);
                }
                return Err(Error::Jni { function });
            }
            // SAFETY: null or a local reference GetObjectArrayElement returned.
            out.push(unsafe { Object::from_nullable(e) });
        }
        Ok(out)
    }

    /// The elements of the `int[]` `array` (`GetArrayLength`, `GetIntArrayRegion`).
    pub fn int_array_elements(&self, array: Object<'_>) -> Result<Vec<i32>> {
        self.array_region(array, "GetIntArrayRegion", jni_fn!(self, GetIntArrayRegion))
    }

    /// The elements of the `long[]` `array` (`GetArrayLength`, `GetLongArrayRegion`).
    pub fn long_array_elements(&self, array: Object<'_>) -> Result<Vec<i64>> {
        self.array_region(
            array,
            "GetLongArrayRegion",
            jni_fn!(self, GetLongArrayRegion),
        )
    }

    /// The whole of a primitive array through its `Get<Type>ArrayRegion` function `get`.
    fn array_region<T: Copy + Default>(
        &self,
        array: Object<'_>,
        function: &'static str,
        get: Option<RegionFn<T>>,
    ) -> Result<Vec<T>> {
        let get = get.ok_or(Error::Jni { function })?;
        let mut out = vec![T::default(); self.array_length(array, function)?];
        // SAFETY: valid env, a live reference to an array of `T` and a buffer of its length
        // (the caller pairs `get` with the array's element type).
        unsafe {
            get(
                self.raw.as_ptr(),
                array.as_raw(),
                0,
                out.len() as sys::jsize,
                out.as_mut_ptr(),
            )
        };
        self.checked(function, out)
    }

    fn array_length(&self, array: Object<'_>, function: &'static str) -> Result<usize> {
        let length = jni_fn!(self, GetArrayLength).ok_or(Error::Jni { function })?;
        // SAFETY: valid env and a live array reference.
        let n = self.checked(function, unsafe {
            length(self.raw.as_ptr(), array.as_raw())
        })?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// `GetStaticFieldID`: the field `name` of type `signature` of `class`.
    pub fn static_field_id(
        &self,
        class: Class<'_>,
        name: &std::ffi::CStr,
        signature: &std::ffi::CStr,
    ) -> Result<sys::jfieldID> {
        let function = "GetStaticFieldID";
        let f = jni_fn!(self, GetStaticFieldID).ok_or(Error::Jni { function })?;
        // SAFETY: valid env, class reference and NUL-terminated strings.
        let field = unsafe {
            f(
                self.raw.as_ptr(),
                class.as_raw(),
                name.as_ptr(),
                signature.as_ptr(),
            )
        };
        self.non_null(function, field)?;
        Ok(field)
    }

    /// Whether `class` has the static method `name` `signature` (`GetStaticMethodID`; the
    /// `NoSuchMethodError` of a missing one is cleared).
    pub fn static_method_exists(
        &self,
        class: Class<'_>,
        name: &std::ffi::CStr,
        signature: &std::ffi::CStr,
    ) -> Result<bool> {
        let function = "GetStaticMethodID";
        let f = jni_fn!(self, GetStaticMethodID).ok_or(Error::Jni { function })?;
        // SAFETY: valid env, class reference and NUL-terminated strings.
        let method = unsafe {
            f(
                self.raw.as_ptr(),
                class.as_raw(),
                name.as_ptr(),
                signature.as_ptr(),
            )
        };
        Ok(self.non_null(function, method).is_ok())
    }

    /// `SetStaticIntField`.
    ///
    /// # Safety
    /// `field` must be a static `int` field of `class` (from [`JniEnv::static_field_id`]).
    pub unsafe fn set_static_int_field(
        &self,
        class: Class<'_>,
        field: sys::jfieldID,
        value: i32,
    ) -> Result<()> {
        let function = "SetStaticIntField";
        let f = jni_fn!(self, SetStaticIntField).ok_or(Error::Jni { function })?;
        // SAFETY: valid env and class; the caller vouches for the field.
        unsafe { f(self.raw.as_ptr(), class.as_raw(), field, value) };
        self.checked(function, ())
    }

    /// `SetStaticObjectField` (`value` null or a live reference).
    ///
    /// # Safety
    /// `field` must be a static reference field of `class` whose type `value` conforms to.
    pub unsafe fn set_static_object_field(
        &self,
        class: Class<'_>,
        field: sys::jfieldID,
        value: sys::jobject,
    ) -> Result<()> {
        let function = "SetStaticObjectField";
        let f = jni_fn!(self, SetStaticObjectField).ok_or(Error::Jni { function })?;
        // SAFETY: valid env and class; the caller vouches for the field and the value.
        unsafe { f(self.raw.as_ptr(), class.as_raw(), field, value) };
        self.checked(function, ())
    }

    /// `NewByteArray` of `len` zeros, then `SetByteArrayRegion` with `init` from index 0.
    pub fn new_byte_array(&self, len: usize, init: &[u8]) -> Result<Object<'a>> {
        let function = "NewByteArray";
        let new = jni_fn!(self, NewByteArray).ok_or(Error::Jni { function })?;
        let len = sys::jsize::try_from(len).map_err(|_| Error::Jni { function })?;
        // SAFETY: valid env.
        let array = unsafe { new(self.raw.as_ptr(), len) };
        self.non_null(function, array)?;
        // SAFETY: a non-null local reference to the new array.
        let array = unsafe { Object::from_raw(array) };
        if !init.is_empty() {
            if let Err(e) = self.set_byte_array_region(array, 0, init) {
                self.delete_local_ref(array);
                return Err(e);
            }
        }
        Ok(array)
    }

    /// `SetByteArrayRegion`: copies `bytes` into the `byte[]` `array` from index `start`.
    pub fn set_byte_array_region(
        &self,
        array: Object<'_>,
        start: usize,
        bytes: &[u8],
    ) -> Result<()> {
        let function = "SetByteArrayRegion";
        let f = jni_fn!(self, SetByteArrayRegion).ok_or(Error::Jni { function })?;
        let (Ok(start), Ok(len)) = (
            sys::jsize::try_from(start),
            sys::jsize::try_from(bytes.len()),
        ) else {
            return Err(Error::Jni { function });
        };
        // SAFETY: valid env; the JVM checks that `array` is a byte[] and the range lies in it
        // (raising ArrayIndexOutOfBoundsException, cleared below); `bytes` outlives the call.
        unsafe {
            f(
                self.raw.as_ptr(),
                array.as_raw(),
                start,
                len,
                bytes.as_ptr().cast(),
            )
        };
        self.checked(function, ())
    }

    /// `NewObjectArray`: `len` nulls of element class `class`.
    pub fn new_object_array(&self, len: usize, class: Class<'_>) -> Result<Object<'a>> {
        let function = "NewObjectArray";
        let new = jni_fn!(self, NewObjectArray).ok_or(Error::Jni { function })?;
        let len = sys::jsize::try_from(len).map_err(|_| Error::Jni { function })?;
        // SAFETY: valid env and class; a null initial element.
        let array = unsafe { new(self.raw.as_ptr(), len, class.as_raw(), std::ptr::null_mut()) };
        self.non_null(function, array)?;
        // SAFETY: a non-null local reference to the new array.
        Ok(unsafe { Object::from_raw(array) })
    }

    /// `GetObjectArrayElement`: a local reference to `array[index]`, `None` for null.
    pub fn object_array_element(
        &self,
        array: Object<'_>,
        index: usize,
    ) -> Result<Option<Object<'a>>> {
        let function = "GetObjectArrayElement";
        let f = jni_fn!(self, GetObjectArrayElement).ok_or(Error::Jni { function })?;
        let index = sys::jsize::try_from(index).map_err(|_| Error::Jni { function })?;
        // SAFETY: valid env; the JVM checks the array and the index (raising an exception,
        // cleared below).
        let element = unsafe { f(self.raw.as_ptr(), array.as_raw(), index) };
        let element = self.checked(function, element)?;
        // SAFETY: a local reference returned by the JVM, or null.
        Ok(unsafe { Object::from_nullable(element) })
    }

    /// `SetObjectArrayElement`: `array[index] = value`.
    pub fn set_object_array_element(
        &self,
        array: Object<'_>,
        index: usize,
        value: Object<'_>,
    ) -> Result<()> {
        let function = "SetObjectArrayElement";
        let f = jni_fn!(self, SetObjectArrayElement).ok_or(Error::Jni { function })?;
        let index = sys::jsize::try_from(index).map_err(|_| Error::Jni { function })?;
        // SAFETY: valid env; the JVM checks the array, the index and the element's type
        // (raising an exception, cleared below).
        unsafe { f(self.raw.as_ptr(), array.as_raw(), index, value.as_raw()) };
        self.checked(function, ())
    }

    /// Clears a pending Java exception; returns whether there was one.
    pub fn clear_exception(&self) -> bool {
        let (Some(check), Some(clear)) =
            (jni_fn!(self, ExceptionCheck), jni_fn!(self, ExceptionClear))
        else {
            return false;
        };
        // SAFETY: valid env; both functions take only the env.
        unsafe {
            if check(self.raw.as_ptr()) != 0 {
                clear(self.raw.as_ptr());
                return true;
            }
        }
        false
    }

    /// `value`, what JNI function `function` returned, unless it raised an exception (cleared
    /// here): then an error naming the function.
    fn checked<T>(&self, function: &'static str, value: T) -> Result<T> {
        if self.clear_exception() {
            return Err(Error::Jni { function });
        }
        Ok(value)
    }

    fn non_null<T>(&self, function: &'static str, p: *mut T) -> Result<()> {
        // Clear before judging: a pending exception must never outlive this call.
        let raised = self.clear_exception();
        if p.is_null() || raised {
            return Err(Error::Jni { function });
        }
        Ok(())
    }
}
