//! Typed JNI references. A local reference is valid only in the native frame (callback, agent thread
//! iteration) that received it; the lifetime `'a` is that frame's, borrowed from the [`crate::JniEnv`]
//! that proves the current thread is a Java thread.

use std::marker::PhantomData;

use crate::sys;

macro_rules! local_ref {
    ($(#[$doc:meta])* $name:ident, $raw:ty) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name<'a> {
            raw: $raw,
            frame: PhantomData<&'a ()>,
        }

        impl<'a> $name<'a> {
            /// Wraps a raw reference received from the JVM.
            ///
            /// # Safety
            /// `raw` must be a live, non-null JNI reference of this kind, valid for `'a`.
            pub unsafe fn from_raw(raw: $raw) -> Self {
                Self { raw, frame: PhantomData }
            }

            /// Wraps a raw reference the JVM returned, which may be null (`None`).
            ///
            /// # Safety
            /// `raw` must be null or a live JNI reference of this kind, valid for `'a`.
            pub unsafe fn from_nullable(raw: $raw) -> Option<Self> {
                (!raw.is_null()).then_some(Self { raw, frame: PhantomData })
            }

            /// The raw reference, for JNI/JVMTI calls not wrapped here.
            pub fn as_raw(self) -> $raw {
                self.raw
            }
        }
    };
}

local_ref!(
    /// A `java.lang.Class` reference.
    Class,
    sys::jclass
);
local_ref!(
    /// Any object reference (a thread, a module...).
    Object,
    sys::jobject
);

impl<'a> Class<'a> {
    /// The same reference seen as an object.
    pub fn as_object(self) -> Object<'a> {
        // SAFETY: a jclass is a jobject.
        unsafe { Object::from_raw(self.raw) }
    }
}

/// A JVM ID type (`jmethodID`, `jfieldID`): an opaque handle valid for as long as its class is
/// loaded, on any thread, so it carries no frame.
macro_rules! jvm_id {
    ($(#[$doc:meta])* $name:ident, $raw:ty) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name($raw);

        // SAFETY: an opaque, immutable handle that JNI/JVMTI accept from any thread.
        unsafe impl Send for $name {}
        // SAFETY: as above; it is never dereferenced on the Rust side.
        unsafe impl Sync for $name {}

        impl $name {
            pub fn as_raw(self) -> $raw {
                self.0
            }
        }
    };
}

jvm_id!(
    /// A `jfieldID` (the same in JNI and JVMTI).
    FieldId,
    sys::jfieldID
);
jvm_id!(
    /// A `jmethodID`.
    MethodId,
    sys::jmethodID
);

impl MethodId {
    /// # Safety
    /// `raw` must be a method ID handed out by the JVM, of a class that is still loaded when used.
    pub unsafe fn from_raw(raw: sys::jmethodID) -> Self {
        MethodId(raw)
    }
}

impl FieldId {
    /// A field ID `GetStaticFieldID` returned.
    pub(crate) fn from_raw_static(raw: sys::jfieldID) -> Self {
        FieldId(raw)
    }
}
