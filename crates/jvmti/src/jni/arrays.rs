//! Arrays: their elements read and written, new arrays made.

use crate::error::{Error, Result};
use crate::refs::{Class, Object};
use crate::sys;

use super::JniEnv;

/// A JNI `Get<Type>ArrayRegion` function for elements of type `T`.
type RegionFn<T> =
    unsafe extern "C" fn(*mut sys::JNIEnv, sys::jarray, sys::jsize, sys::jsize, *mut T);

impl<'a> JniEnv<'a> {
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
}
