//! Global and weak global references that delete themselves: [`GlobalRef`] and [`GlobalClass`]
//! keep an object (a class) alive and usable on any thread, [`WeakGlobalRef`] and
//! [`WeakGlobalClass`] name one without keeping it alive. Each is `Send + Sync`: JNI global
//! references are valid on every thread, and every use of one goes through a [`JniEnv`] of the
//! current thread.
//!
//! Dropping one deletes the reference with the current thread's `JNIEnv` (`GetEnv`); on a thread
//! not attached to the JVM the reference is left to the JVM (a few bytes, freed with it). Where
//! the thread's environment is at hand, [`Global::delete`] / [`Weak::delete`] say so explicitly.
//!
//! A reference borrowed from one ([`Global::as_local`]) is valid while the global lives; it must
//! not be passed to [`JniEnv::delete_local_ref`].

use std::marker::PhantomData;

use crate::error::{Error, Result};
use crate::refs::{Class, Object};
use crate::{sys, JavaVm, JniEnv};

mod sealed {
    pub trait Sealed {}
}

/// What a global reference refers to: an object of any class ([`AnyObject`]) or a class
/// ([`AnyClass`]), which decides the local reference type it lends out.
pub trait Kind: sealed::Sealed + 'static {
    /// The local reference type of this kind.
    type Local<'a>: Copy;
    #[doc(hidden)]
    fn raw(local: Self::Local<'_>) -> sys::jobject;
    /// # Safety
    /// `raw` must be a live, non-null reference of this kind, valid for `'a`.
    #[doc(hidden)]
    unsafe fn wrap<'a>(raw: sys::jobject) -> Self::Local<'a>;
}

/// A local reference type that can be made global: [`Object`] or [`Class`].
pub trait LocalRef<'a>: Copy {
    /// The kind of global reference it makes.
    type Kind: Kind<Local<'a> = Self>;
}

/// Marker: a reference to any object.
#[derive(Debug)]
pub enum AnyObject {}
/// Marker: a reference to a `java.lang.Class`.
#[derive(Debug)]
pub enum AnyClass {}

impl sealed::Sealed for AnyObject {}
impl sealed::Sealed for AnyClass {}

impl Kind for AnyObject {
    type Local<'a> = Object<'a>;
    fn raw(local: Object<'_>) -> sys::jobject {
        local.as_raw()
    }
    unsafe fn wrap<'a>(raw: sys::jobject) -> Object<'a> {
        // SAFETY: the caller's contract.
        unsafe { Object::from_raw(raw) }
    }
}

impl Kind for AnyClass {
    type Local<'a> = Class<'a>;
    fn raw(local: Class<'_>) -> sys::jobject {
        local.as_raw()
    }
    unsafe fn wrap<'a>(raw: sys::jobject) -> Class<'a> {
        // SAFETY: the caller's contract (a class reference).
        unsafe { Class::from_raw(raw) }
    }
}

impl<'a> LocalRef<'a> for Object<'a> {
    type Kind = AnyObject;
}
impl<'a> LocalRef<'a> for Class<'a> {
    type Kind = AnyClass;
}

/// A JNI global reference, deleted when dropped.
#[derive(Debug)]
pub struct Global<K: Kind> {
    raw: sys::jobject,
    vm: JavaVm,
    kind: PhantomData<K>,
}

/// A global reference to any object.
pub type GlobalRef = Global<AnyObject>;
/// A global reference to a class.
pub type GlobalClass = Global<AnyClass>;

// SAFETY: a global reference is valid on every thread until deleted, and this type deletes it
// once (drop or `delete`); every use takes a `JniEnv` of the using thread.
unsafe impl<K: Kind> Send for Global<K> {}
// SAFETY: as above; shared access only lends the reference out for JNI calls.
unsafe impl<K: Kind> Sync for Global<K> {}

impl<K: Kind> Global<K> {
    /// The referent as a local-style reference, valid while `self` lives.
    pub fn as_local(&self) -> K::Local<'_> {
        // SAFETY: a live, non-null global reference of kind K while `self` is borrowed.
        unsafe { K::wrap(self.raw) }
    }

    /// The raw reference, for JNI/JVMTI calls not wrapped here.
    pub fn as_raw(&self) -> sys::jobject {
        self.raw
    }

    /// Deletes the reference now, with the current thread's environment.
    pub fn delete(self, env: &JniEnv<'_>) {
        let raw = self.raw;
        std::mem::forget(self);
        // SAFETY: a global reference this value owned, not used afterwards (forgotten above).
        unsafe { env.delete_global_ref(raw) };
    }
}

impl<K: Kind> Drop for Global<K> {
    fn drop(&mut self) {
        match self.vm.jni_env() {
            // SAFETY: a global reference this value owns, dropped once.
            Ok(env) => unsafe { env.delete_global_ref(self.raw) },
            Err(_) => log::debug!("a global reference dropped on a detached thread is kept"),
        }
    }
}

/// A JNI weak global reference, deleted when dropped. It does not keep its referent alive:
/// [`Weak::upgrade`] says whether it is still there.
#[derive(Debug)]
pub struct Weak<K: Kind> {
    raw: sys::jweak,
    vm: JavaVm,
    kind: PhantomData<K>,
}

/// A weak global reference to any object.
pub type WeakGlobalRef = Weak<AnyObject>;
/// A weak global reference to a class.
pub type WeakGlobalClass = Weak<AnyClass>;

// SAFETY: as for `Global`: valid on every thread until deleted, deleted once, used with the
// using thread's JniEnv.
unsafe impl<K: Kind> Send for Weak<K> {}
// SAFETY: as above.
unsafe impl<K: Kind> Sync for Weak<K> {}

impl<K: Kind> Weak<K> {
    /// A local reference to the referent, or `None` once it was collected.
    pub fn upgrade<'a>(&self, env: &JniEnv<'a>) -> Option<K::Local<'a>> {
        // SAFETY: a live weak global reference (this value owns it).
        let local = unsafe { env.upgrade_weak(self.raw) }?;
        // SAFETY: a non-null local reference to the referent, of kind K, in env's frame.
        Some(unsafe { K::wrap(local.as_raw()) })
    }

    /// Whether the referent is `other` (`IsSameObject`; a collected referent is the same as
    /// `None`).
    pub fn is<'b>(&self, env: &JniEnv<'_>, other: Option<K::Local<'b>>) -> bool {
        let other = other.map_or(std::ptr::null_mut(), K::raw);
        // SAFETY: a live weak global reference and null or a live local reference.
        unsafe { env.is_same_object(self.raw, other) }
    }

    /// The raw reference, for JNI/JVMTI calls not wrapped here.
    pub fn as_raw(&self) -> sys::jweak {
        self.raw
    }

    /// Deletes the reference now, with the current thread's environment.
    pub fn delete(self, env: &JniEnv<'_>) {
        let raw = self.raw;
        std::mem::forget(self);
        // SAFETY: a weak reference this value owned, not used afterwards (forgotten above).
        unsafe { env.delete_weak_global_ref(raw) };
    }
}

impl<K: Kind> Drop for Weak<K> {
    fn drop(&mut self) {
        match self.vm.jni_env() {
            // SAFETY: a weak reference this value owns, dropped once.
            Ok(env) => unsafe { env.delete_weak_global_ref(self.raw) },
            Err(_) => log::debug!("a weak reference dropped on a detached thread is kept"),
        }
    }
}

impl<'e> JniEnv<'e> {
    /// The `JavaVM` this environment belongs to (`GetJavaVM`).
    pub fn java_vm(&self) -> Result<JavaVm> {
        let function = "GetJavaVM";
        let env = self.as_raw();
        // SAFETY: a valid JNIEnv (type invariant) whose function table lives as long as the VM.
        let f = unsafe { (**env).GetJavaVM }.ok_or(Error::Jni { function })?;
        let mut vm = std::ptr::null_mut();
        // SAFETY: GetJavaVM writes one pointer into `vm`.
        let code = unsafe { f(env, &mut vm) };
        if code != sys::JNI_OK as sys::jint {
            return Err(Error::Jni { function });
        }
        // SAFETY: the JVM's own JavaVM pointer.
        unsafe { JavaVm::from_raw(vm) }.ok_or(Error::Jni { function })
    }

    /// A global reference to `local` (an [`Object`] or a [`Class`]).
    pub fn new_global<'l, L: LocalRef<'l>>(&self, local: L) -> Result<Global<L::Kind>> {
        let vm = self.java_vm()?;
        // SAFETY: a local-kind reference is a live reference of this thread (type invariant).
        let object = unsafe { Object::from_raw(<L::Kind as Kind>::raw(local)) };
        let raw = self.new_global_ref(object)?;
        Ok(Global {
            raw,
            vm,
            kind: PhantomData,
        })
    }

    /// A weak global reference to `local` (an [`Object`] or a [`Class`]).
    pub fn new_weak<'l, L: LocalRef<'l>>(&self, local: L) -> Result<Weak<L::Kind>> {
        let vm = self.java_vm()?;
        // SAFETY: as in `new_global`.
        let object = unsafe { Object::from_raw(<L::Kind as Kind>::raw(local)) };
        let raw = self.new_weak_global_ref(object)?;
        Ok(Weak {
            raw,
            vm,
            kind: PhantomData,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared<T: Send + Sync>() {}

    #[test]
    fn references_may_be_shared_between_threads() {
        shared::<GlobalRef>();
        shared::<GlobalClass>();
        shared::<WeakGlobalRef>();
        shared::<WeakGlobalClass>();
    }

    #[test]
    fn a_global_is_one_pointer_and_a_vm() {
        assert_eq!(
            std::mem::size_of::<GlobalRef>(),
            2 * std::mem::size_of::<usize>()
        );
    }
}
