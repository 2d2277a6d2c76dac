//! Calling Java methods, and finding them.

use crate::error::{Error, Result};
use crate::refs::{Class, Object};
use crate::sys;

use super::JniEnv;

impl<'a> JniEnv<'a> {
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
}
