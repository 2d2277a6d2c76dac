//! Static fields as typed handles: a [`StaticIntField`] or [`StaticObjectField`] holds its class
//! (a [`GlobalClass`]) with the field ID, so reading or writing one needs no promise from the
//! caller. An object field also holds the class of its declared type, and a value is written only
//! if it is an instance of it (JNI itself does not check, and a wrongly typed value in a field
//! would break the JVM's type safety).

use std::ffi::CStr;

use crate::error::{Error, Result};
use crate::global::GlobalClass;
use crate::refs::{Class, FieldId, Object};
use crate::JniEnv;

/// A static `int` field of a class.
#[derive(Debug)]
pub struct StaticIntField {
    class: GlobalClass,
    id: FieldId,
}

/// A static reference field of a class, with the class of its declared type.
#[derive(Debug)]
pub struct StaticObjectField {
    class: GlobalClass,
    id: FieldId,
    of_type: GlobalClass,
}

/// The class `FindClass` takes for a field of type `signature` (`Lpkg/Name;` → `pkg/Name`, an
/// array descriptor as it is); `None` for a primitive type or a malformed descriptor.
pub fn class_name_of_type(signature: &str) -> Option<&str> {
    if signature.starts_with('[') && signature.len() > 1 {
        return Some(signature);
    }
    signature
        .strip_prefix('L')
        .and_then(|s| s.strip_suffix(';'))
        .filter(|s| !s.is_empty())
}

impl<'e> JniEnv<'e> {
    /// The static `int` field `name` of `class`.
    pub fn static_int_field(&self, class: Class<'_>, name: &CStr) -> Result<StaticIntField> {
        let id = self.static_field_id(class, name, c"I")?;
        Ok(StaticIntField {
            class: self.new_global(class)?,
            id: FieldId::from_raw_static(id),
        })
    }

    /// The static field `name` of reference type `signature` (`[B`, `Ljava/lang/String;`...) of
    /// `class`. Its type must be a class this thread's `FindClass` finds (the JDK's are).
    pub fn static_object_field(
        &self,
        class: Class<'_>,
        name: &CStr,
        signature: &CStr,
    ) -> Result<StaticObjectField> {
        let function = "GetStaticFieldID";
        let type_name = signature
            .to_str()
            .ok()
            .and_then(class_name_of_type)
            .ok_or(Error::Jni { function })?;
        let id = self.static_field_id(class, name, signature)?;
        let type_class = self.find_class(type_name)?;
        let of_type = self.new_global(type_class);
        self.delete_local_ref(type_class.as_object());
        Ok(StaticObjectField {
            class: self.new_global(class)?,
            id: FieldId::from_raw_static(id),
            of_type: of_type?,
        })
    }
}

/// A JNI function of `env`'s table, or an error naming it.
macro_rules! jni_fn {
    ($env:expr, $name:ident) => {{
        let raw = $env.as_raw();
        // SAFETY: a valid JNIEnv (JniEnv invariant), whose table lives as long as the VM.
        (
            raw,
            unsafe { (**raw).$name }.ok_or(Error::Jni {
                function: stringify!($name),
            })?,
        )
    }};
}

impl StaticIntField {
    /// The class that declares the field.
    pub fn class(&self) -> Class<'_> {
        self.class.as_local()
    }

    /// The field's value (`GetStaticIntField`).
    pub fn get(&self, env: &JniEnv<'_>) -> Result<i32> {
        let (raw, f) = jni_fn!(env, GetStaticIntField);
        // SAFETY: `id` is the static int field of `class`, a live global reference.
        Ok(unsafe { f(raw, self.class.as_raw(), self.id.as_raw()) })
    }

    /// `class.field = value` (`SetStaticIntField`).
    pub fn set(&self, env: &JniEnv<'_>, value: i32) -> Result<()> {
        // SAFETY: `id` is the static int field of `class` (how it was made).
        unsafe { env.set_static_int_field(self.class.as_local(), self.id.as_raw(), value) }
    }
}

impl StaticObjectField {
    /// The class that declares the field.
    pub fn class(&self) -> Class<'_> {
        self.class.as_local()
    }

    /// The field's value as a local reference (`GetStaticObjectField`); `None` for null.
    pub fn get<'a>(&self, env: &JniEnv<'a>) -> Result<Option<Object<'a>>> {
        let (raw, f) = jni_fn!(env, GetStaticObjectField);
        // SAFETY: `id` is a static reference field of `class`, a live global reference.
        let value = unsafe { f(raw, self.class.as_raw(), self.id.as_raw()) };
        // SAFETY: null or a local reference of this thread's frame.
        Ok(unsafe { Object::from_nullable(value) })
    }

    /// `class.field = value` (`SetStaticObjectField`; `None`: null). An error, and nothing
    /// written, if `value` is not an instance of the field's type.
    pub fn set(&self, env: &JniEnv<'_>, value: Option<Object<'_>>) -> Result<()> {
        if let Some(v) = value {
            if !env.is_instance_of(v, self.of_type.as_local()) {
                return Err(Error::Jni {
                    function: "SetStaticObjectField",
                });
            }
        }
        let raw = value.map_or(std::ptr::null_mut(), Object::as_raw);
        // SAFETY: `id` is a static reference field of `class`, and `raw` null or an instance of
        // its declared type (checked above).
        unsafe { env.set_static_object_field(self.class.as_local(), self.id.as_raw(), raw) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_types_name_their_classes() {
        assert_eq!(class_name_of_type("[B"), Some("[B"));
        assert_eq!(
            class_name_of_type("[Ljava/lang/Class;"),
            Some("[Ljava/lang/Class;")
        );
        assert_eq!(
            class_name_of_type("Ljava/lang/String;"),
            Some("java/lang/String")
        );
        assert_eq!(class_name_of_type("I"), None);
        assert_eq!(class_name_of_type("L;"), None);
        assert_eq!(class_name_of_type("["), None);
    }

    fn shared<T: Send + Sync>() {}

    #[test]
    fn fields_may_be_shared_between_threads() {
        shared::<StaticIntField>();
        shared::<StaticObjectField>();
    }
}
