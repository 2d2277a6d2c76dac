//! The compiled code now in the JVM's code cache, as the methods each compiled method holds
//! (itself and what the JIT inlined into it): `GenerateEvents(COMPILED_METHOD_LOAD)` replays
//! one `CompiledMethodLoad` event per compiled method, on the calling thread, in a JVMTI
//! environment opened for it and disposed right after.

use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard};

use ferrofluid_jvmti::{ffi_guard, inlined_methods, sys, JavaVm, MethodId};

/// The methods of each compiled method replayed so far; `Some` only while [`compiled_code`]
/// runs (a compilation finishing meanwhile on another thread may add one, harmlessly).
static CODE: Mutex<Option<Vec<Vec<usize>>>> = Mutex::new(None);

fn code() -> MutexGuard<'static, Option<Vec<Vec<usize>>>> {
    CODE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Per compiled method in the code cache now, the methods it holds. An error when the JVM
/// cannot replay its compiled code to a new environment.
pub fn compiled_code(vm: JavaVm) -> Result<Vec<Vec<MethodId>>, String> {
    let jvmti = vm.jvmti().map_err(|e| e.to_string())?;
    let mut caps = sys::jvmtiCapabilities::default();
    caps.set_can_generate_compiled_method_load_events(1);
    *code() = Some(Vec::new());
    let replay = || -> ferrofluid_jvmti::Result<()> {
        jvmti.add_capabilities(&caps)?;
        let callbacks = sys::jvmtiEventCallbacks {
            CompiledMethodLoad: Some(compiled_method_load),
            ..Default::default()
        };
        jvmti.set_event_callbacks(&callbacks)?;
        jvmti.set_event_notification_mode(true, sys::JVMTI_EVENT_COMPILED_METHOD_LOAD)?;
        let replayed = jvmti.generate_events(sys::JVMTI_EVENT_COMPILED_METHOD_LOAD);
        jvmti.set_event_notification_mode(false, sys::JVMTI_EVENT_COMPILED_METHOD_LOAD)?;
        replayed
    };
    let outcome = replay();
    let _ = jvmti.dispose();
    let replayed = code().take().unwrap_or_default();
    outcome.map_err(|e| e.to_string())?;
    Ok(replayed
        .into_iter()
        .map(|methods| {
            methods
                .into_iter()
                // SAFETY: method IDs the JVM named in this call's events; a method ID stays
                // valid while its class is loaded, and JVMTI checks it when used.
                .map(|m| unsafe { MethodId::from_raw(m as sys::jmethodID) })
                .collect()
        })
        .collect())
}

/// `CompiledMethodLoad`: records the methods of one compiled method. No JVMTI call here.
unsafe extern "C" fn compiled_method_load(
    _: *mut sys::jvmtiEnv,
    method: sys::jmethodID,
    _code_size: sys::jint,
    _code_addr: *const c_void,
    _map_length: sys::jint,
    _map: *const sys::jvmtiAddrLocationMap,
    compile_info: *const c_void,
) {
    ffi_guard("CompiledMethodLoad", (), || {
        // SAFETY: the pointer the JVM passed to this callback, live until it returns.
        let inlined = unsafe { inlined_methods(compile_info) };
        let mut methods: Vec<usize> = inlined.iter().map(|m| m.as_raw() as usize).collect();
        if !method.is_null() && !methods.contains(&(method as usize)) {
            methods.push(method as usize);
        }
        if let Some(code) = code().as_mut() {
            code.push(methods);
        }
    })
}
