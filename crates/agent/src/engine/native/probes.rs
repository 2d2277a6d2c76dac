//! The `native` engine's hot path: a wrapped native's entry and exit (the hooks class's natives,
//! called by the wrappers while `active` is set) and an upcall's start and return (the JNI call
//! wrappers). Each is one event in the thread's ring (`probe::recorder::transition`); the
//! thread's depth of open native frames and the upcalls it is inside live in thread-locals.

use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;

use ferrofluid_jvmti::{sys, JniEnv, MethodId};

use crate::probe::clock::ticks;
use crate::probe::recorder::transition;
use crate::probe::ring::Kind;
use crate::probe::thread::SWITCHES;

/// Upcalls a thread can be inside at once and still have timed (deeper ones are counted as
/// their caller's time).
const MAX_NESTED_UPCALLS: usize = 256;

thread_local! {
    /// Native frames open on this thread (entered through a wrapper, not exited).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// The ids of the upcalls this thread is inside, innermost last; `None` for one not timed.
    static UPCALLS: RefCell<Vec<Option<u32>>> = const { RefCell::new(Vec::new()) };
}

/// A wrapper's `nativeEnter(id)`: the native frame of `id` opens.
#[inline]
pub fn native_enter(env: *mut sys::JNIEnv, id: u32) {
    let start = ticks();
    let _ = DEPTH.try_with(|d| d.set(d.get() + 1));
    if super::records_here() {
        transition(env, Kind::Enter, id, start);
    }
}

/// A wrapper's `nativeExit(id)`: the native frame of `id` closes (returned or threw).
#[inline]
pub fn native_exit(env: *mut sys::JNIEnv, id: u32) {
    let start = ticks();
    let _ = DEPTH.try_with(|d| d.set(d.get().saturating_sub(1)));
    if super::records_here() {
        transition(env, Kind::Exit, id, start);
    }
}

/// Native code is about to call Java method `mid` through JNI: inside a native frame, an upcall
/// frame of that method opens; outside every one, it is counted as unattributed. True when the
/// call's return is to be told ([`upcall_returned`]).
#[inline]
pub fn upcall(env: &JniEnv<'_>, mid: MethodId) -> bool {
    if !SWITCHES.collecting.load(Ordering::Relaxed) || !super::records_here() {
        return false;
    }
    upcall_collecting(env, mid)
}

#[cold]
fn upcall_collecting(env: &JniEnv<'_>, mid: MethodId) -> bool {
    let start = ticks();
    if DEPTH.try_with(Cell::get).unwrap_or(0) == 0 {
        super::unattributed_upcall();
        return false;
    }
    let id = super::upcall_target(env, mid);
    let timed = id.filter(|&id| transition(env.as_raw(), Kind::Enter, id, start));
    UPCALLS
        .try_with(|u| {
            let mut u = u.borrow_mut();
            if u.len() >= MAX_NESTED_UPCALLS {
                return false;
            }
            u.push(timed);
            true
        })
        .unwrap_or(false)
}

/// The upcall [`upcall`] opened returned (or threw): its frame closes.
pub fn upcall_returned(env: &JniEnv<'_>) {
    let start = ticks();
    let id = UPCALLS
        .try_with(|u| u.borrow_mut().pop().flatten())
        .ok()
        .flatten();
    if let Some(id) = id {
        transition(env.as_raw(), Kind::Exit, id, start);
    }
}
