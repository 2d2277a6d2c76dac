//! Classes (found, defined, their natives registered, their module and hierarchy), the agent
//! thread's `java.lang.Thread`, and strings.

use std::ffi::{c_void, CString};

use crate::error::{Error, Result};
use crate::refs::{Class, Object};
use crate::sys;

use super::JniEnv;

impl<'a> JniEnv<'a> {
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
}
