//! The agent entry points' common part, which [`export_agent!`](crate::export_agent) expands to
//! call: the JVM's arguments made safe, the agent's start function run under `catch_unwind`, its
//! error reported.

use std::ffi::{c_char, CStr};

use ferrofluid_jvmti::{ffi_guard, sys, JavaVm};

use crate::agent::{AgentContext, Phase};
use crate::error::Error;

/// Runs `start` for `Agent_OnLoad` / `Agent_OnAttach`.
///
/// # Safety
/// `vm` and `options` are what the JVM passed to the entry point: its `JavaVM` and a
/// NUL-terminated option string or null.
pub unsafe fn run(
    vm: *mut sys::JavaVM,
    options: *const c_char,
    phase: Phase,
    start: fn(AgentContext) -> Result<(), Error>,
) -> sys::jint {
    ffi_guard("agent start", sys::JNI_ERR, || {
        // SAFETY: the JVM's JavaVM for this entry point.
        let Some(vm) = (unsafe { JavaVm::from_raw(vm) }) else {
            return sys::JNI_ERR;
        };
        let options = if options.is_null() {
            String::new()
        } else {
            // SAFETY: the JVM passes a NUL-terminated string.
            unsafe { CStr::from_ptr(options) }
                .to_string_lossy()
                .into_owned()
        };
        match start(AgentContext { vm, options, phase }) {
            Ok(()) => sys::JNI_OK as sys::jint,
            Err(e) => {
                log::error!("agent failed to start: {e}");
                if phase == Phase::OnLoad || std::env::var_os("JVMTIPROF_DEBUG").is_some() {
                    // The JVM is about to refuse to start; stderr is where java reports it.
                    eprintln!("agent failed to start: {e}");
                }
                sys::JNI_ERR
            }
        }
    })
}

/// Runs `unload` for `Agent_OnUnload`.
pub fn unload(unload: fn()) {
    ffi_guard("Agent_OnUnload", (), unload)
}
