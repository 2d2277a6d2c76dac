//! Reading and setting fields, instance and static.

use crate::error::{Error, Result};
use crate::refs::{Class, Object};
use crate::sys;

use super::JniEnv;

impl<'a> JniEnv<'a> {
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
}
