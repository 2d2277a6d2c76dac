//! The JVMTI calls a sampling profiler makes beside the agent's: method line tables and source
//! files, replaying compiled-code events, the environment's local storage.

use std::ffi::c_void;
use std::ptr::null_mut;

use crate::buf::JvmtiBuf;
use crate::error::{check, Error, Result};
use crate::refs::{Class, MethodId};
use crate::{sys, Jvmti};

/// Calls `$name` through the environment's function table (inside an `unsafe` block whose SAFETY
/// comment covers the arguments).
macro_rules! call {
    ($jvmti:expr, $name:ident ( $($arg:expr),* $(,)? )) => {{
        let env = $jvmti.as_raw();
        match (**env).$name {
            Some(f) => check(stringify!($name), f(env, $($arg),*)),
            None => Err(Error::Jvmti { function: stringify!($name), code: sys::JVMTI_ERROR_NOT_AVAILABLE }),
        }
    }};
}

/// One entry of a method's line number table: from bytecode index `start` on, source line `line`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineEntry {
    pub start: i64,
    pub line: i32,
}

impl Jvmti {
    /// `GetLineNumberTable` (capability `can_get_line_numbers`): empty for a method without one
    /// (native, abstract, or compiled without `-g:lines`).
    pub fn line_number_table(self, method: MethodId) -> Result<Vec<LineEntry>> {
        let (mut n, mut ptr) = (0, null_mut());
        // SAFETY: a method ID and two out-pointers.
        let rc = unsafe { call!(self, GetLineNumberTable(method.as_raw(), &mut n, &mut ptr)) };
        match rc {
            Ok(()) => {}
            Err(e) if e.jvmti_code() == Some(sys::JVMTI_ERROR_ABSENT_INFORMATION) => {
                return Ok(Vec::new())
            }
            Err(e) if e.jvmti_code() == Some(sys::JVMTI_ERROR_NATIVE_METHOD) => {
                return Ok(Vec::new())
            }
            Err(e) => return Err(e),
        }
        // SAFETY: JVMTI allocated `n` entries for us.
        let table = unsafe { JvmtiBuf::from_raw(self, ptr, n as usize) };
        Ok(table
            .iter()
            .map(|e| LineEntry {
                start: e.start_location,
                line: e.line_number,
            })
            .collect())
    }

    /// `GetSourceFileName` (capability `can_get_source_file_name`): `None` without a
    /// `SourceFile` attribute.
    pub fn source_file_name(self, class: Class<'_>) -> Result<Option<String>> {
        let mut name = null_mut();
        // SAFETY: a live class reference and one out-pointer.
        let rc = unsafe { call!(self, GetSourceFileName(class.as_raw(), &mut name)) };
        match rc {
            Ok(()) => {}
            Err(e) if e.jvmti_code() == Some(sys::JVMTI_ERROR_ABSENT_INFORMATION) => {
                return Ok(None)
            }
            Err(e) => return Err(e),
        }
        if name.is_null() {
            return Ok(None);
        }
        // SAFETY: JVMTI returned a NUL-terminated string it allocated.
        let s = unsafe { std::ffi::CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: the string came from this environment's allocator; freed once, here.
        drop(unsafe { JvmtiBuf::from_raw(self, name.cast::<u8>(), 1) });
        Ok(Some(s))
    }

    /// `GetMethodModifiers`: the method's access flags.
    pub fn method_modifiers(self, method: MethodId) -> Result<i32> {
        let mut m = 0;
        // SAFETY: a method ID and one out-pointer.
        unsafe { call!(self, GetMethodModifiers(method.as_raw(), &mut m)) }?;
        Ok(m)
    }

    /// `GenerateEvents`: sends `CompiledMethodLoad` or `DynamicCodeGenerated` events for the code
    /// that exists already (what an agent that attaches late needs).
    pub fn generate_events(self, event: sys::jvmtiEvent) -> Result<()> {
        // SAFETY: an integer argument.
        unsafe { call!(self, GenerateEvents(event)) }
    }

    /// `GetEnvironmentLocalStorage`: the value the environment's owner stored (0 when none).
    /// Callable from any thread, in event callbacks too.
    pub fn environment_local_storage(self) -> Result<usize> {
        let mut data: *mut c_void = null_mut();
        // SAFETY: one out-pointer.
        unsafe { call!(self, GetEnvironmentLocalStorage(&mut data)) }?;
        Ok(data as usize)
    }

    /// `SetEnvironmentLocalStorage`: a value for the environment's owner (e.g. the address of
    /// the state its event callbacks need).
    pub fn set_environment_local_storage(self, data: usize) -> Result<()> {
        // SAFETY: the value is opaque to the JVM.
        unsafe { call!(self, SetEnvironmentLocalStorage(data as *const c_void)) }
    }
}

/// The methods a `CompiledMethodLoad` event's `compile_info` names as inlined into the compiled
/// code (the compiled method itself among them), each once, in the order first seen; nothing
/// when the JVM sent no inline record.
///
/// # Safety
/// `compile_info` is null or the pointer the JVM passed to the `CompiledMethodLoad` callback
/// running now (its records live until the callback returns).
pub unsafe fn inlined_methods(compile_info: *const c_void) -> Vec<MethodId> {
    use sys::cmlr::{
        jvmtiCompiledMethodLoadInlineRecord, jvmtiCompiledMethodLoadRecordHeader,
        JVMTI_CMLR_INLINE_INFO,
    };
    let mut seen: Vec<sys::jmethodID> = Vec::new();
    let mut set = std::collections::HashSet::new();
    let mut header = compile_info as *const jvmtiCompiledMethodLoadRecordHeader;
    while !header.is_null() {
        // SAFETY: a record of the JVM's list, live during the callback (the caller's contract).
        let h = unsafe { &*header };
        if h.kind == JVMTI_CMLR_INLINE_INFO {
            // SAFETY: a record of kind INLINE_INFO is an inline record, header first.
            let record = unsafe { &*(header as *const jvmtiCompiledMethodLoadInlineRecord) };
            for pc in 0..record.numpcs.max(0) as usize {
                // SAFETY: `pcinfo` has `numpcs` entries.
                let info = unsafe { &*record.pcinfo.add(pc) };
                for frame in 0..info.numstackframes.max(0) as usize {
                    // SAFETY: `methods` has `numstackframes` entries.
                    let m = unsafe { *info.methods.add(frame) };
                    if !m.is_null() && set.insert(m as usize) {
                        seen.push(m);
                    }
                }
            }
        }
        header = h.next;
    }
    seen.into_iter()
        // SAFETY: method IDs the JVM named.
        .map(|m| unsafe { MethodId::from_raw(m) })
        .collect()
}
