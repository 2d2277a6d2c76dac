//! JVMTI `GetAllStackTraces`: every thread's stack at a safepoint.

use std::ptr::null_mut;

use ferrofluid_jvmti::{sys, JniEnv, Jvmti, MethodId, Object};

use crate::error::{Error, Result};
use crate::stack::{SafepointFrame, ThreadStack};

/// Every live thread's stack, up to `max_frames` frames each, taken at one safepoint.
pub(crate) fn all_stack_traces(
    jvmti: Jvmti,
    env: &JniEnv<'_>,
    max_frames: usize,
) -> Result<Vec<ThreadStack>> {
    let raw = jvmti.as_raw();
    let (mut info, mut count): (*mut sys::jvmtiStackInfo, sys::jint) = (null_mut(), 0);
    // SAFETY: a live environment, two out-pointers; on a Java thread (we hold its JniEnv).
    let rc = unsafe {
        match (**raw).GetAllStackTraces {
            Some(f) => f(raw, max_frames as sys::jint, &mut info, &mut count),
            None => sys::JVMTI_ERROR_NOT_AVAILABLE,
        }
    };
    if rc != sys::JVMTI_ERROR_NONE {
        return Err(Error::Jvm(ferrofluid_jvmti::Error::Jvmti {
            function: "GetAllStackTraces",
            code: rc,
        }));
    }
    if info.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: JVMTI returned `count` stack infos in one allocation (frame buffers included).
    let infos = unsafe { std::slice::from_raw_parts(info, count.max(0) as usize) };
    let mut out = Vec::with_capacity(infos.len());
    for i in infos {
        let frames = if i.frame_buffer.is_null() {
            &[][..]
        } else {
            // SAFETY: `frame_count` frames in the same allocation.
            unsafe { std::slice::from_raw_parts(i.frame_buffer, i.frame_count.max(0) as usize) }
        };
        out.push(ThreadStack {
            state: i.state,
            frames: frames
                .iter()
                .filter(|f| !f.method.is_null())
                .map(|f| SafepointFrame {
                    // SAFETY: a method ID the JVM just returned for a live frame.
                    method: unsafe { MethodId::from_raw(f.method) },
                    location: f.location,
                })
                .collect(),
        });
        // SAFETY: a local reference GetAllStackTraces returned to this thread.
        if let Some(t) = unsafe { Object::from_nullable(i.thread) } {
            env.delete_local_ref(t);
        }
    }
    // SAFETY: the single block JVMTI allocated for the result, freed once.
    unsafe {
        if let Some(f) = (**raw).Deallocate {
            f(raw, info.cast());
        }
    }
    Ok(out)
}
