//! Reference housekeeping: local, global and weak global references.

use crate::error::{Error, Result};
use crate::refs::Object;
use crate::sys;

use super::JniEnv;

impl<'a> JniEnv<'a> {
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
}
