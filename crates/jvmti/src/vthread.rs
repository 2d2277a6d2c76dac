//! The JVMTI calls of virtual-thread support (JDK 21+): the `can_support_virtual_threads`
//! capability, the `VirtualThreadStart`/`End` events (87, 88), the `VirtualThreadMount`/`Unmount`
//! extension events and thread-local storage. The JDK 17 headers the bindings come from predate
//! them, so their layouts are spelled out here; on a JVM without them nothing here is offered.

use std::ffi::{c_void, CStr};
use std::ptr::null_mut;

use crate::env::Jvmti;
use crate::error::{check, Error, Result};
use crate::sys;

/// Bit of `can_support_virtual_threads` in `jvmtiCapabilities` (it follows
/// `can_generate_sampled_object_alloc_events`, bit 43, in the JDK 21 `jvmti.h`).
const CAN_SUPPORT_VIRTUAL_THREADS_BIT: usize = 44;

/// `JVMTI_EVENT_VIRTUAL_THREAD_START`.
pub const EVENT_VIRTUAL_THREAD_START: sys::jvmtiEvent = 87;
/// `JVMTI_EVENT_VIRTUAL_THREAD_END`.
pub const EVENT_VIRTUAL_THREAD_END: sys::jvmtiEvent = 88;

/// A virtual-thread event callback: `(jvmti, jni, virtual_thread)`.
pub type VirtualThreadFn = unsafe extern "C" fn(*mut sys::jvmtiEnv, *mut sys::JNIEnv, sys::jthread);

/// The JDK 21 `jvmtiEventCallbacks`: the JDK 17 struct followed by `VirtualThreadStart` and
/// `VirtualThreadEnd`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct EventCallbacks21 {
    pub base: sys::jvmtiEventCallbacks,
    pub virtual_thread_start: Option<VirtualThreadFn>,
    pub virtual_thread_end: Option<VirtualThreadFn>,
}

/// Whether `caps` has `can_support_virtual_threads`.
pub fn can_support_virtual_threads(caps: &sys::jvmtiCapabilities) -> bool {
    caps._bitfield_1.get(CAN_SUPPORT_VIRTUAL_THREADS_BIT, 1) != 0
}

/// Capabilities with only `can_support_virtual_threads`.
pub fn virtual_threads_capability() -> sys::jvmtiCapabilities {
    let mut caps = sys::jvmtiCapabilities::default();
    caps._bitfield_1.set(CAN_SUPPORT_VIRTUAL_THREADS_BIT, 1, 1);
    caps
}

impl Jvmti {
    /// Installs the callbacks, virtual-thread events included (JDK 21+ only: an older JVM
    /// would ignore the two extra entries, but their events do not exist there).
    pub fn set_event_callbacks_21(self, callbacks: &EventCallbacks21) -> Result<()> {
        let size = std::mem::size_of::<EventCallbacks21>() as sys::jint;
        let env = self.as_raw();
        // SAFETY: a live environment; pointer and exact size of the JDK 21 callbacks struct,
        // which the JVM copies.
        unsafe {
            match (**env).SetEventCallbacks {
                Some(f) => check(
                    "SetEventCallbacks",
                    f(env, (callbacks as *const EventCallbacks21).cast(), size),
                ),
                None => Err(not_available("SetEventCallbacks")),
            }
        }
    }

    /// The index of the extension event named `id` (e.g.
    /// `com.sun.hotspot.events.VirtualThreadMount`), if this JVM has it.
    pub fn extension_event_index(self, id: &CStr) -> Result<Option<sys::jint>> {
        let env = self.as_raw();
        let (mut n, mut infos): (sys::jint, *mut sys::jvmtiExtensionEventInfo) = (0, null_mut());
        // SAFETY: two out-pointers.
        unsafe {
            match (**env).GetExtensionEvents {
                Some(f) => check("GetExtensionEvents", f(env, &mut n, &mut infos))?,
                None => return Err(not_available("GetExtensionEvents")),
            }
        }
        let mut found = None;
        for i in 0..n.max(0) as usize {
            // SAFETY: JVMTI returned `n` infos at `infos`.
            let info = unsafe { &*infos.add(i) };
            // SAFETY: a NUL-terminated string JVMTI allocated.
            if found.is_none() && !info.id.is_null() && unsafe { CStr::from_ptr(info.id) } == id {
                found = Some(info.extension_event_index);
            }
            // The strings and parameter arrays are the caller's to deallocate.
            for p in 0..info.param_count.max(0) as usize {
                // SAFETY: `param_count` params at `params`.
                let name = unsafe { (*info.params.add(p)).name };
                self.deallocate(name.cast());
            }
            self.deallocate(info.params.cast());
            self.deallocate(info.id.cast());
            self.deallocate(info.short_description.cast());
        }
        self.deallocate(infos.cast());
        Ok(found)
    }

    /// Sets (or with `None` clears) the callback of extension event `index`, whose
    /// parameters are `(jvmti, jni, thread)`, as the virtual-thread mount events' are.
    pub fn set_extension_thread_event(
        self,
        index: sys::jint,
        callback: Option<VirtualThreadFn>,
    ) -> Result<()> {
        let env = self.as_raw();
        // SAFETY: `jvmtiExtensionEvent` is `void (*)(jvmtiEnv*, ...)`; the JVM calls it with
        // the event's three pointer arguments, which the x86_64 and aarch64 Linux calling
        // conventions pass in the same registers to a variadic and a fixed-argument function.
        let callback: sys::jvmtiExtensionEvent = unsafe { std::mem::transmute(callback) };
        // SAFETY: an index GetExtensionEvents gave and a callback (or null).
        unsafe {
            match (**env).SetExtensionEventCallback {
                Some(f) => check("SetExtensionEventCallback", f(env, index, callback)),
                None => Err(not_available("SetExtensionEventCallback")),
            }
        }
    }

    /// The current thread's JVMTI thread-local storage, as a number (0 if never set); for a
    /// virtual thread, the virtual thread's own.
    pub fn thread_local_storage(self) -> Result<usize> {
        let env = self.as_raw();
        let mut data: *mut c_void = null_mut();
        // SAFETY: a null thread (the current one) and one out-pointer.
        unsafe {
            match (**env).GetThreadLocalStorage {
                Some(f) => check("GetThreadLocalStorage", f(env, null_mut(), &mut data))?,
                None => return Err(not_available("GetThreadLocalStorage")),
            }
        }
        Ok(data as usize)
    }

    /// Sets the current thread's JVMTI thread-local storage to a number (the JVM stores it as
    /// a pointer it never dereferences).
    pub fn set_thread_local_storage(self, data: usize) -> Result<()> {
        let data = data as *const c_void;
        let env = self.as_raw();
        // SAFETY: a null thread (the current one); the JVM only stores the pointer.
        unsafe {
            match (**env).SetThreadLocalStorage {
                Some(f) => check("SetThreadLocalStorage", f(env, null_mut(), data)),
                None => Err(not_available("SetThreadLocalStorage")),
            }
        }
    }

    fn deallocate(self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        let env = self.as_raw();
        // SAFETY: memory JVMTI allocated for this environment, deallocated once.
        unsafe {
            if let Some(f) = (**env).Deallocate {
                f(env, ptr);
            }
        }
    }
}

fn not_available(function: &'static str) -> Error {
    Error::Jvmti {
        function,
        code: sys::JVMTI_ERROR_NOT_AVAILABLE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capability_bit_follows_sampled_allocation() {
        let mut caps = sys::jvmtiCapabilities::default();
        caps.set_can_generate_sampled_object_alloc_events(1);
        assert!(!can_support_virtual_threads(&caps));
        assert_eq!(caps._bitfield_1.get(43, 1), 1);
        let v = virtual_threads_capability();
        assert!(can_support_virtual_threads(&v));
        assert_eq!(v.can_generate_sampled_object_alloc_events(), 0);
        assert_eq!(
            std::mem::size_of::<EventCallbacks21>(),
            std::mem::size_of::<sys::jvmtiEventCallbacks>() + 2 * std::mem::size_of::<usize>()
        );
        // Event 87 is the slot right after SampledObjectAlloc (86).
        assert_eq!(
            std::mem::offset_of!(EventCallbacks21, virtual_thread_start),
            std::mem::offset_of!(sys::jvmtiEventCallbacks, SampledObjectAlloc)
                + std::mem::size_of::<usize>()
        );
    }
}
