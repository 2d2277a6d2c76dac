//! The entry points the JVM calls. Each runs under `ffi_guard`: no panic crosses into the JVM, and a
//! failure returns an error code instead of touching the application.

use std::ffi::{c_char, c_void, CStr};

use ferrofluid_jvmti::{ffi_guard, sys, JavaVm};

use crate::runtime::lifecycle;

const JNI_OK: sys::jint = sys::JNI_OK as sys::jint;
const JNI_ERR: sys::jint = sys::JNI_ERR;

/// Loaded at JVM startup by `-agentpath:libferrofluid_agent.so=OPTIONS`.
///
/// # Safety
/// Called by the JVM with its `JavaVM` and a NUL-terminated option string (or NULL).
#[no_mangle]
pub unsafe extern "C" fn Agent_OnLoad(
    vm: *mut sys::JavaVM,
    options: *mut c_char,
    _: *mut c_void,
) -> sys::jint {
    ffi_guard("Agent_OnLoad", JNI_ERR, || {
        // SAFETY: the JVM's contract for Agent_OnLoad arguments.
        let (vm, options) = unsafe { (JavaVm::from_raw(vm), option_string(options)) };
        match vm.map(|vm| lifecycle::start(vm, &options)) {
            Some(Ok(())) => JNI_OK,
            Some(Err(e)) => {
                // The JVM is about to refuse to start; stderr is where java reports that.
                eprintln!("ferrofluid agent: {e}");
                log::error!("Agent_OnLoad: {e}");
                JNI_ERR
            }
            None => JNI_ERR,
        }
    })
}

/// Loaded into a running JVM by the attach `load` command (`ferrofluid attach`), or called again for an
/// agent already loaded (then it reconnects to the running agent, or wakes a dormant one).
///
/// # Safety
/// As for [`Agent_OnLoad`].
#[no_mangle]
pub unsafe extern "C" fn Agent_OnAttach(
    vm: *mut sys::JavaVM,
    options: *mut c_char,
    _: *mut c_void,
) -> sys::jint {
    ffi_guard("Agent_OnAttach", JNI_ERR, || {
        // SAFETY: the JVM's contract for Agent_OnAttach arguments.
        let (vm, options) = unsafe { (JavaVm::from_raw(vm), option_string(options)) };
        match vm.map(|vm| lifecycle::start(vm, &options)) {
            Some(Ok(())) => JNI_OK,
            Some(Err(e)) => {
                // Never print into a running application's stderr: the tool sees the return code.
                log::error!("Agent_OnAttach: {e}");
                JNI_ERR
            }
            None => JNI_ERR,
        }
    })
}

/// Called when the JVM shuts down.
///
/// # Safety
/// Called by the JVM once, at exit.
#[no_mangle]
pub unsafe extern "C" fn Agent_OnUnload(_vm: *mut sys::JavaVM) {
    ffi_guard("Agent_OnUnload", (), lifecycle::unload)
}

/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn option_string(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: caller's contract.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
