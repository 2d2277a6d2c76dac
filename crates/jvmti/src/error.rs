//! Errors of the safe layer: every one names the JVMTI/JNI function that failed.

use crate::sys;

/// A failed JVMTI or JNI call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A JVMTI function returned an error code.
    #[error("JVMTI {function} failed: {} ({code})", error_name(*.code))]
    Jvmti {
        function: &'static str,
        code: sys::jvmtiError,
    },
    /// `JavaVM::GetEnv` refused the interface version (JVMTI or JNI).
    #[error("JavaVM GetEnv({version:#x}) failed with {code}")]
    GetEnv { version: sys::jint, code: sys::jint },
    /// A JNI function returned NULL or raised a Java exception (which was cleared: the agent never leaves
    /// an exception pending in someone else's thread).
    #[error("JNI {function} failed (a Java exception was raised and cleared)")]
    Jni { function: &'static str },
    /// A string argument had an interior NUL byte and cannot be passed as a C string.
    #[error("{function}: argument contains a NUL byte")]
    Nul { function: &'static str },
}

impl Error {
    /// The JVMTI error code, if this is a JVMTI error.
    pub fn jvmti_code(&self) -> Option<sys::jvmtiError> {
        match self {
            Error::Jvmti { code, .. } => Some(*code),
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The specification's name of a JVMTI error code, e.g. `JVMTI_ERROR_WRONG_PHASE`.
pub fn error_name(code: sys::jvmtiError) -> &'static str {
    match code {
        sys::JVMTI_ERROR_NONE => "JVMTI_ERROR_NONE",
        sys::JVMTI_ERROR_INVALID_THREAD => "JVMTI_ERROR_INVALID_THREAD",
        sys::JVMTI_ERROR_INVALID_THREAD_GROUP => "JVMTI_ERROR_INVALID_THREAD_GROUP",
        sys::JVMTI_ERROR_INVALID_PRIORITY => "JVMTI_ERROR_INVALID_PRIORITY",
        sys::JVMTI_ERROR_THREAD_NOT_SUSPENDED => "JVMTI_ERROR_THREAD_NOT_SUSPENDED",
        sys::JVMTI_ERROR_THREAD_SUSPENDED => "JVMTI_ERROR_THREAD_SUSPENDED",
        sys::JVMTI_ERROR_THREAD_NOT_ALIVE => "JVMTI_ERROR_THREAD_NOT_ALIVE",
        sys::JVMTI_ERROR_INVALID_OBJECT => "JVMTI_ERROR_INVALID_OBJECT",
        sys::JVMTI_ERROR_INVALID_CLASS => "JVMTI_ERROR_INVALID_CLASS",
        sys::JVMTI_ERROR_CLASS_NOT_PREPARED => "JVMTI_ERROR_CLASS_NOT_PREPARED",
        sys::JVMTI_ERROR_INVALID_METHODID => "JVMTI_ERROR_INVALID_METHODID",
        sys::JVMTI_ERROR_INVALID_LOCATION => "JVMTI_ERROR_INVALID_LOCATION",
        sys::JVMTI_ERROR_INVALID_FIELDID => "JVMTI_ERROR_INVALID_FIELDID",
        sys::JVMTI_ERROR_INVALID_MODULE => "JVMTI_ERROR_INVALID_MODULE",
        sys::JVMTI_ERROR_NO_MORE_FRAMES => "JVMTI_ERROR_NO_MORE_FRAMES",
        sys::JVMTI_ERROR_OPAQUE_FRAME => "JVMTI_ERROR_OPAQUE_FRAME",
        sys::JVMTI_ERROR_TYPE_MISMATCH => "JVMTI_ERROR_TYPE_MISMATCH",
        sys::JVMTI_ERROR_INVALID_SLOT => "JVMTI_ERROR_INVALID_SLOT",
        sys::JVMTI_ERROR_DUPLICATE => "JVMTI_ERROR_DUPLICATE",
        sys::JVMTI_ERROR_NOT_FOUND => "JVMTI_ERROR_NOT_FOUND",
        sys::JVMTI_ERROR_INVALID_MONITOR => "JVMTI_ERROR_INVALID_MONITOR",
        sys::JVMTI_ERROR_NOT_MONITOR_OWNER => "JVMTI_ERROR_NOT_MONITOR_OWNER",
        sys::JVMTI_ERROR_INTERRUPT => "JVMTI_ERROR_INTERRUPT",
        sys::JVMTI_ERROR_INVALID_CLASS_FORMAT => "JVMTI_ERROR_INVALID_CLASS_FORMAT",
        sys::JVMTI_ERROR_CIRCULAR_CLASS_DEFINITION => "JVMTI_ERROR_CIRCULAR_CLASS_DEFINITION",
        sys::JVMTI_ERROR_FAILS_VERIFICATION => "JVMTI_ERROR_FAILS_VERIFICATION",
        sys::JVMTI_ERROR_UNSUPPORTED_REDEFINITION_METHOD_ADDED => {
            "JVMTI_ERROR_UNSUPPORTED_REDEFINITION_METHOD_ADDED"
        }
        sys::JVMTI_ERROR_UNSUPPORTED_REDEFINITION_SCHEMA_CHANGED => {
            "JVMTI_ERROR_UNSUPPORTED_REDEFINITION_SCHEMA_CHANGED"
        }
        sys::JVMTI_ERROR_INVALID_TYPESTATE => "JVMTI_ERROR_INVALID_TYPESTATE",
        sys::JVMTI_ERROR_UNSUPPORTED_REDEFINITION_HIERARCHY_CHANGED => {
            "JVMTI_ERROR_UNSUPPORTED_REDEFINITION_HIERARCHY_CHANGED"
        }
        sys::JVMTI_ERROR_UNSUPPORTED_REDEFINITION_METHOD_DELETED => {
            "JVMTI_ERROR_UNSUPPORTED_REDEFINITION_METHOD_DELETED"
        }
        sys::JVMTI_ERROR_UNSUPPORTED_VERSION => "JVMTI_ERROR_UNSUPPORTED_VERSION",
        sys::JVMTI_ERROR_NAMES_DONT_MATCH => "JVMTI_ERROR_NAMES_DONT_MATCH",
        sys::JVMTI_ERROR_UNSUPPORTED_REDEFINITION_CLASS_MODIFIERS_CHANGED => {
            "JVMTI_ERROR_UNSUPPORTED_REDEFINITION_CLASS_MODIFIERS_CHANGED"
        }
        sys::JVMTI_ERROR_UNSUPPORTED_REDEFINITION_METHOD_MODIFIERS_CHANGED => {
            "JVMTI_ERROR_UNSUPPORTED_REDEFINITION_METHOD_MODIFIERS_CHANGED"
        }
        sys::JVMTI_ERROR_UNSUPPORTED_REDEFINITION_CLASS_ATTRIBUTE_CHANGED => {
            "JVMTI_ERROR_UNSUPPORTED_REDEFINITION_CLASS_ATTRIBUTE_CHANGED"
        }
        sys::JVMTI_ERROR_UNMODIFIABLE_CLASS => "JVMTI_ERROR_UNMODIFIABLE_CLASS",
        sys::JVMTI_ERROR_UNMODIFIABLE_MODULE => "JVMTI_ERROR_UNMODIFIABLE_MODULE",
        sys::JVMTI_ERROR_NOT_AVAILABLE => "JVMTI_ERROR_NOT_AVAILABLE",
        sys::JVMTI_ERROR_MUST_POSSESS_CAPABILITY => "JVMTI_ERROR_MUST_POSSESS_CAPABILITY",
        sys::JVMTI_ERROR_NULL_POINTER => "JVMTI_ERROR_NULL_POINTER",
        sys::JVMTI_ERROR_ABSENT_INFORMATION => "JVMTI_ERROR_ABSENT_INFORMATION",
        sys::JVMTI_ERROR_INVALID_EVENT_TYPE => "JVMTI_ERROR_INVALID_EVENT_TYPE",
        sys::JVMTI_ERROR_ILLEGAL_ARGUMENT => "JVMTI_ERROR_ILLEGAL_ARGUMENT",
        sys::JVMTI_ERROR_NATIVE_METHOD => "JVMTI_ERROR_NATIVE_METHOD",
        sys::JVMTI_ERROR_CLASS_LOADER_UNSUPPORTED => "JVMTI_ERROR_CLASS_LOADER_UNSUPPORTED",
        sys::JVMTI_ERROR_OUT_OF_MEMORY => "JVMTI_ERROR_OUT_OF_MEMORY",
        sys::JVMTI_ERROR_ACCESS_DENIED => "JVMTI_ERROR_ACCESS_DENIED",
        sys::JVMTI_ERROR_WRONG_PHASE => "JVMTI_ERROR_WRONG_PHASE",
        sys::JVMTI_ERROR_INTERNAL => "JVMTI_ERROR_INTERNAL",
        sys::JVMTI_ERROR_UNATTACHED_THREAD => "JVMTI_ERROR_UNATTACHED_THREAD",
        sys::JVMTI_ERROR_INVALID_ENVIRONMENT => "JVMTI_ERROR_INVALID_ENVIRONMENT",
        _ => "unknown JVMTI error",
    }
}

/// Turns a JVMTI return code into a `Result`.
pub(crate) fn check(function: &'static str, code: sys::jvmtiError) -> Result<()> {
    if code == sys::JVMTI_ERROR_NONE {
        Ok(())
    } else {
        Err(Error::Jvmti { function, code })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_function_and_code() {
        let e = Error::Jvmti {
            function: "RetransformClasses",
            code: sys::JVMTI_ERROR_UNMODIFIABLE_CLASS,
        };
        assert_eq!(
            e.to_string(),
            "JVMTI RetransformClasses failed: JVMTI_ERROR_UNMODIFIABLE_CLASS (79)"
        );
        assert_eq!(e.jvmti_code(), Some(79));
        assert_eq!(error_name(12345), "unknown JVMTI error");
        assert_eq!(check("GetPhase", 0), Ok(()));
    }
}
