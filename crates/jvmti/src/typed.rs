//! JNI reads and calls whose declared Java types make the results' kinds certain, so they need no
//! promise from the caller: a field or method declared of type `java.lang.Class` yields
//! [`Class`] references, and a static call checks its arguments against the method descriptor.

use std::ffi::CStr;

use crate::error::{Error, Result};
use crate::refs::{Class, Object};
use crate::{sys, JniEnv};

/// A primitive argument of a static call ([`JniEnv::call_static_long_method`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Primitive {
    Int(i32),
    Long(i64),
    Boolean(bool),
}

impl Primitive {
    fn descriptor(self) -> u8 {
        match self {
            Primitive::Int(_) => b'I',
            Primitive::Long(_) => b'J',
            Primitive::Boolean(_) => b'Z',
        }
    }

    fn value(self) -> sys::jvalue {
        match self {
            Primitive::Int(i) => sys::jvalue { i },
            Primitive::Long(j) => sys::jvalue { j },
            Primitive::Boolean(z) => sys::jvalue { z: u8::from(z) },
        }
    }
}

/// Whether method descriptor `descriptor` takes exactly `args` and returns `returns` (a
/// primitive descriptor character).
pub fn descriptor_matches(descriptor: &[u8], args: &[Primitive], returns: u8) -> bool {
    let mut expected: Vec<u8> = vec![b'('];
    expected.extend(args.iter().map(|a| a.descriptor()));
    expected.extend([b')', returns]);
    descriptor == expected.as_slice()
}

impl<'a> JniEnv<'a> {
    /// The instance field `name` of `obj`, declared `java.lang.Class`: `Ok(None)` for null.
    pub fn class_field(&self, obj: Object<'_>, name: &CStr) -> Result<Option<Class<'a>>> {
        let value = self.object_field(obj, name, c"Ljava/lang/Class;")?;
        // SAFETY: a local reference read from a field declared `Class`, so a class.
        Ok(value.map(|v| unsafe { Class::from_raw(v.as_raw()) }))
    }

    /// The elements of the instance field `name` of `obj`, declared `java.lang.Class[]`, as
    /// local references (`None` for null elements); `Ok(None)` if the field is null.
    pub fn class_array_field(
        &self,
        obj: Object<'_>,
        name: &CStr,
    ) -> Result<Option<Vec<Option<Class<'a>>>>> {
        let Some(array) = self.object_field(obj, name, c"[Ljava/lang/Class;")? else {
            return Ok(None);
        };
        let elements = self.object_array_elements(array);
        self.delete_local_ref(array);
        // SAFETY: elements of an array declared `Class[]`: classes or null.
        let classes = elements?
            .into_iter()
            .map(|e| e.map(|o| unsafe { Class::from_raw(o.as_raw()) }))
            .collect();
        Ok(Some(classes))
    }

    /// Calls the no-argument instance method `name` of `obj` that returns a `java.lang.Class`
    /// (descriptor `()Ljava/lang/Class;`); `Ok(None)` for null.
    pub fn call_class_method(&self, obj: Object<'_>, name: &CStr) -> Result<Option<Class<'a>>> {
        let value = self.call_object_method(obj, name, c"()Ljava/lang/Class;")?;
        // SAFETY: a local reference a method declared to return `Class` returned.
        Ok(value.map(|v| unsafe { Class::from_raw(v.as_raw()) }))
    }

    /// Calls the static method `name` `signature` of `class`, which returns a `long`, with
    /// `args`. An error, and no call, if the descriptor does not take exactly `args` or does not
    /// return `long`; a Java exception is cleared and reported as an error.
    pub fn call_static_long_method(
        &self,
        class: Class<'_>,
        name: &CStr,
        signature: &CStr,
        args: &[Primitive],
    ) -> Result<i64> {
        if !descriptor_matches(signature.to_bytes(), args, b'J') {
            return Err(Error::Jni {
                function: "CallStaticLongMethodA",
            });
        }
        let values: Vec<sys::jvalue> = args.iter().map(|a| a.value()).collect();
        // SAFETY: `values` match the descriptor's parameters (checked above).
        unsafe { self.call_static_long(class, name, signature, &values) }
    }
}

impl crate::Jvmti {
    /// The non-null values of the instance fields of reference type that `declaring` declares
    /// and `wanted` accepts, in `obj` (`GetClassFields`, then `GetObjectField` for each; runs no
    /// Java code). An error if `obj` is no instance of `declaring`.
    pub fn reference_fields<'a>(
        self,
        env: &JniEnv<'a>,
        obj: Object<'_>,
        declaring: Class<'_>,
        mut wanted: impl FnMut(&crate::Field) -> bool,
    ) -> Result<Vec<(crate::Field, Object<'a>)>> {
        let mut values = Vec::new();
        for field in self.fields(declaring)? {
            if field.is_static || !field.is_reference() || !wanted(&field) {
                continue;
            }
            // SAFETY: `field` is one `fields` returned for `declaring`.
            match unsafe { env.reference_field(obj, declaring, &field) } {
                Ok(Some(value)) => values.push((field, value)),
                Ok(None) => {}
                Err(e) => {
                    for (_, v) in values {
                        env.delete_local_ref(v);
                    }
                    return Err(e);
                }
            }
        }
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_matched_exactly() {
        let ii = [Primitive::Int(1), Primitive::Int(2)];
        assert!(descriptor_matches(b"(II)J", &ii, b'J'));
        assert!(!descriptor_matches(b"(IJ)J", &ii, b'J'));
        assert!(!descriptor_matches(b"(II)I", &ii, b'J'));
        assert!(!descriptor_matches(b"(I)J", &ii, b'J'));
        assert!(!descriptor_matches(b"(III)J", &ii, b'J'));
        assert!(descriptor_matches(b"()J", &[], b'J'));
        assert!(descriptor_matches(
            b"(JZ)J",
            &[Primitive::Long(3), Primitive::Boolean(true)],
            b'J'
        ));
        assert!(!descriptor_matches(
            b"(Ljava/lang/Object;)J",
            &[Primitive::Long(3)],
            b'J'
        ));
    }
}
