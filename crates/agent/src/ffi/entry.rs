//! The entry points the JVM calls: `Agent_OnLoad`, `Agent_OnAttach`, `Agent_OnUnload`. Each runs
//! under `ffi_guard`: no panic crosses into the JVM, and a failure returns an error code instead
//! of touching the application. The exported functions are made by [`entry_points!`] for the
//! runtime's [`Lifecycle`], in `lib.rs`: this layer converts, the runtime acts.

use std::ffi::{c_char, CStr};
use std::fmt::Display;

use ferrofluid_jvmti::{ffi_guard, sys, JavaVm};

const JNI_OK: sys::jint = sys::JNI_OK as sys::jint;
const JNI_ERR: sys::jint = sys::JNI_ERR;

/// What the entry points do: the agent's lifecycle.
pub trait Lifecycle {
    type Error: Display;
    /// Starts the agent in `vm` with the option string `options` (or wakes a dormant one, or
    /// leaves a running one as it is).
    fn start(vm: JavaVm, options: &str) -> Result<(), Self::Error>;
    /// The JVM shuts down.
    fn unload();
}

/// `Agent_OnLoad`: the agent loaded at JVM startup by `-agentpath:…=OPTIONS`.
///
/// # Safety
/// Called by the JVM with its `JavaVM` and a NUL-terminated option string (or NULL).
pub unsafe fn on_load<L: Lifecycle>(vm: *mut sys::JavaVM, options: *mut c_char) -> sys::jint {
    ffi_guard("Agent_OnLoad", JNI_ERR, || {
        // SAFETY: the JVM's contract for Agent_OnLoad arguments.
        let (vm, options) = unsafe { (JavaVm::from_raw(vm), option_string(options)) };
        match vm.map(|vm| L::start(vm, &options)) {
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

/// `Agent_OnAttach`: the agent loaded into a running JVM by the attach `load` command
/// (`ferrofluid attach`), or called again for an agent already loaded (then it reconnects to
/// the running agent, or wakes a dormant one).
///
/// # Safety
/// As for [`on_load`].
pub unsafe fn on_attach<L: Lifecycle>(vm: *mut sys::JavaVM, options: *mut c_char) -> sys::jint {
    ffi_guard("Agent_OnAttach", JNI_ERR, || {
        // SAFETY: the JVM's contract for Agent_OnAttach arguments.
        let (vm, options) = unsafe { (JavaVm::from_raw(vm), option_string(options)) };
        match vm.map(|vm| L::start(vm, &options)) {
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

/// `Agent_OnUnload`: the JVM shuts down.
pub fn on_unload<L: Lifecycle>() {
    ffi_guard("Agent_OnUnload", (), L::unload)
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

/// Exports `Agent_OnLoad`, `Agent_OnAttach` and `Agent_OnUnload` for the lifecycle `$l`.
macro_rules! entry_points {
    ($l:ty) => {
        /// Loaded at JVM startup by `-agentpath:libferrofluid_agent.so=OPTIONS`.
        ///
        /// # Safety
        /// Called by the JVM with its `JavaVM` and a NUL-terminated option string (or NULL).
        #[allow(unsafe_code)]
        #[no_mangle]
        pub unsafe extern "C" fn Agent_OnLoad(
            vm: *mut ferrofluid_jvmti::sys::JavaVM,
            options: *mut std::ffi::c_char,
            _: *mut std::ffi::c_void,
        ) -> ferrofluid_jvmti::sys::jint {
            // SAFETY: the JVM's arguments, passed on.
            unsafe { $crate::ffi::entry::on_load::<$l>(vm, options) }
        }

        /// Loaded into a running JVM by the attach `load` command, or called again for an
        /// agent already loaded.
        ///
        /// # Safety
        /// As for `Agent_OnLoad`.
        #[allow(unsafe_code)]
        #[no_mangle]
        pub unsafe extern "C" fn Agent_OnAttach(
            vm: *mut ferrofluid_jvmti::sys::JavaVM,
            options: *mut std::ffi::c_char,
            _: *mut std::ffi::c_void,
        ) -> ferrofluid_jvmti::sys::jint {
            // SAFETY: the JVM's arguments, passed on.
            unsafe { $crate::ffi::entry::on_attach::<$l>(vm, options) }
        }

        /// Called when the JVM shuts down.
        ///
        /// # Safety
        /// Called by the JVM once, at exit.
        #[allow(unsafe_code)]
        #[no_mangle]
        pub unsafe extern "C" fn Agent_OnUnload(_vm: *mut ferrofluid_jvmti::sys::JavaVM) {
            $crate::ffi::entry::on_unload::<$l>()
        }
    };
}
pub(crate) use entry_points;
