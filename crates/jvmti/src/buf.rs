//! Memory the JVMTI `Allocate`s and the caller must `Deallocate`: owned here, freed on drop.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::env::Jvmti;

/// An array allocated by JVMTI (result of `GetLoadedClasses`, `GetClassMethods`, `Allocate`...).
/// Dropping it calls `Deallocate`, so no path forgets to, even on early return.
pub struct JvmtiBuf<T: Copy> {
    env: Jvmti,
    ptr: Option<NonNull<T>>,
    len: usize,
}

impl<T: Copy> JvmtiBuf<T> {
    /// # Safety
    /// `ptr` must be null (then `len` is ignored) or memory from `env`'s `Allocate` holding `len`
    /// initialized `T`s, owned by nobody else.
    pub(crate) unsafe fn from_raw(env: Jvmti, ptr: *mut T, len: usize) -> Self {
        let ptr = NonNull::new(ptr);
        JvmtiBuf {
            env,
            len: if ptr.is_some() { len } else { 0 },
            ptr,
        }
    }

    /// Gives up ownership without deallocating: for memory handed to the JVM, such as a
    /// ClassFileLoadHook's `new_class_data`.
    pub fn into_raw(self) -> (*mut T, usize) {
        let me = std::mem::ManuallyDrop::new(self);
        (me.ptr.map_or(std::ptr::null_mut(), NonNull::as_ptr), me.len)
    }
}

impl<T: Copy> Deref for JvmtiBuf<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self.ptr {
            // SAFETY: from_raw's contract: `len` initialized elements, exclusively ours until drop.
            Some(p) => unsafe { std::slice::from_raw_parts(p.as_ptr(), self.len) },
            None => &[],
        }
    }
}

impl<T: Copy> DerefMut for JvmtiBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self.ptr {
            // SAFETY: as in deref, and `&mut self` makes the access exclusive.
            Some(p) => unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), self.len) },
            None => &mut [],
        }
    }
}

impl<T: Copy> Drop for JvmtiBuf<T> {
    fn drop(&mut self) {
        if let Some(p) = self.ptr {
            // Deallocate can only fail for a bad pointer, which from_raw's contract excludes; there is
            // nothing useful to do with an error while dropping.
            let _ = self.env.deallocate_raw(p.as_ptr().cast());
        }
    }
}

impl<T: Copy + std::fmt::Debug> std::fmt::Debug for JvmtiBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
