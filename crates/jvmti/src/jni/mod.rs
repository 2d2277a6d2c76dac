//! The few JNI calls the agent needs: getting environments, finding classes, creating the agent thread's
//! `java.lang.Thread`, and reference housekeeping. Every call that can raise a Java exception checks for
//! one and clears it, so no exception ever reaches the application.
//!
//! [`JavaVm`] in `vm`; the calls of a [`JniEnv`] by what they touch: `classes` (and strings),
//! `refs`, `calls`, `fields`, `arrays`.

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::error::{Error, Result};
use crate::sys;

/// Calls a JNI function through the env's function table; yields `None` if the slot is empty.
macro_rules! jni_fn {
    ($env:expr, $name:ident) => {
        // SAFETY: $env is a valid JNIEnv (JniEnv invariant), whose table pointer is valid for the thread.
        unsafe { (**$env.raw.as_ptr()).$name }
    };
}

mod arrays;
mod calls;
mod classes;
mod fields;
mod refs;
mod vm;

pub use vm::JavaVm;

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
