//! The thread registry's events: a thread starting or ending (its probe state and the active
//! engine's), and a thread started inside a root, which is inside the root's extent for its
//! whole life: `Thread.start()` passes the thread it starts to the hooks (a receiver site of its
//! own, [`THREAD_START_SITE`]), which tags it; its ThreadStart finds the tag.

use ferrofluid_jvmti::{sys, Object};

use crate::probe::thread;
use crate::runtime::{context, jvm};

/// The receiver-site id `Thread.start()` passes its thread with (see [`thread_start`]).
pub const THREAD_START_SITE: u32 = u32::MAX;

/// Tag of a `Thread` object started inside a root (receiver classes get positive tags).
const STARTED_IN_ROOT: i64 = -1;

/// `Thread.start()` was entered on `thread` by this thread, inside a root's extent: the thread
/// is marked, so that [`thread_start`] knows it for the one started here.
pub fn thread_starting(thread: Object<'_>) {
    let Some(jvmti) = jvm::jvmti() else {
        return;
    };
    if let Err(e) = jvmti.set_tag(thread, STARTED_IN_ROOT) {
        log::warn!("marking a thread started inside a root: {e}");
    }
}

/// A thread starts (JVMTI ThreadStart, on the new thread): if a thread inside a root started it
/// (its `Thread` object carries the mark), it is inside the root's extent for its whole life.
pub fn thread_start(env: *mut sys::JNIEnv, thread: Option<Object<'_>>) {
    if let Some(active) = context::active() {
        crate::ffi::with_env(env, |jni| {
            if let Some(jni) = jni {
                active.session.thread_start(jni);
            }
        });
    }
    let (Some(jvmti), Some(thread)) = (jvm::jvmti(), thread) else {
        return;
    };
    if jvmti.tag(thread).ok() != Some(STARTED_IN_ROOT) {
        return;
    }
    let _ = jvmti.set_tag(thread, 0);
    thread::started_in_root(env);
}

/// The current thread ends (JVMTI ThreadEnd): its ring is closed and released.
pub fn thread_end(env: *mut sys::JNIEnv) {
    if let Some(active) = context::active() {
        crate::ffi::with_env(env, |jni| {
            if let Some(jni) = jni {
                active.session.thread_end(jni);
            }
        });
    }
    thread::ended(env);
}
