//! The JNI and JVMTI side of the `alloc` engine: the `ferrofluid/Alloc` class (defined in the
//! bootstrap loader, its native bound, its counters read), the engine's own JVMTI environment
//! (object tags, `ObjectFree`, `GarbageCollectionFinish`: an environment of its own, so that
//! disposing it at the end of a session removes every tag it set), and the calls made for a
//! tracked object (`GetObjectSize`, `GetStackTrace`, method names).

use std::cell::Cell;

use ferrofluid_jvmti::{ffi_guard, sys, JavaVm, JniEnv, Jvmti, MethodId, Object};

use crate::ffi::jni::call_static;

use super::{tracker, vm};
use crate::probe::upcalls::upcalls;

pub mod jni;
pub mod scope;

/// Internal name of the counting class.
pub const ALLOC_CLASS: &str = "ferrofluid/Alloc";
const ALLOC_BYTES: &[u8] = include_bytes!("../Alloc.class");

/// Defines `ferrofluid/Alloc` (or finds it, defined by an earlier session or attach), binds its
/// native and resets it to count from zero, tracking every `every`-th allocation of a site (and
/// the first), or, with `bytes` positive, one each time about `bytes` more bytes were allocated
/// there; with `jvmti`, java.base exports it what it reads thread ids with. On a Java thread,
/// before any class carries `alloc` probes.
pub fn install(
    env: &JniEnv<'_>,
    jvmti: Option<Jvmti>,
    every: u64,
    bytes: u64,
) -> Result<(), String> {
    let class = match env.find_class(ALLOC_CLASS) {
        Ok(c) => c,
        Err(_) => {
            env.clear_exception();
            let class = env
                .define_class(ALLOC_CLASS, None, ALLOC_BYTES)
                .map_err(|e| format!("defining {ALLOC_CLASS}: {e}"))?;
            if let Some(jvmti) = jvmti {
                crate::ffi::jni::export_internal_misc(jvmti, env, class);
            }
            class
        }
    };
    let natives = [
        (
            c"sample",
            c"(Ljava/lang/Object;I)J",
            native_sample as *mut std::ffi::c_void,
        ),
        (
            c"sampleVm",
            c"(Ljava/lang/Object;I)J",
            native_sample_vm as *mut std::ffi::c_void,
        ),
    ];
    // SAFETY: `sample` and `sampleVm` are the class's static natives, `(Object, int) -> long`,
    // and `native_sample`/`native_sample_vm` have that JNI signature; the library stays loaded
    // while probes exist.
    unsafe { env.register_natives(class, &natives) }
        .map_err(|e| format!("binding {ALLOC_CLASS}.sample: {e}"))?;
    let long = |v: u64| sys::jvalue {
        j: i64::try_from(v).unwrap_or(i64::MAX),
    };
    // SAFETY: `reset(JJ)V` takes two longs.
    let reset = unsafe {
        call_static(
            env,
            class,
            c"reset",
            c"(JJ)V",
            &[long(every), long(bytes)],
            false,
        )
    };
    env.delete_local_ref(class.as_object());
    reset.map(|_| ())
}

/// The counters of sites `0..sites` (`2*s`: objects, `2*s+1`: array elements), read from
/// `ferrofluid/Alloc`; `None` if it cannot be read.
pub fn read_counts(env: &JniEnv<'_>, sites: usize) -> Option<Vec<i64>> {
    let class = env.find_class(ALLOC_CLASS).ok()?;
    let n = sys::jvalue {
        i: i32::try_from(sites).ok()?,
    };
    // SAFETY: `counts(I)[J` takes one int and returns a long[].
    let array = unsafe { call_static(env, class, c"counts", c"(I)[J", &[n], true) };
    env.delete_local_ref(class.as_object());
    let array = array.ok()??;
    let out = env.long_array_elements(array);
    env.delete_local_ref(array);
    out.ok().filter(|o| o.len() == 2 * sites)
}

/// Lets `ferrofluid/Alloc` drop its counters, read at the end of a session, so that an ended
/// session keeps none of the heap they took.
pub fn forget_counts(env: &JniEnv<'_>) {
    let Ok(class) = env.find_class(ALLOC_CLASS) else {
        env.clear_exception();
        return;
    };
    // SAFETY: `forget()V` takes nothing and returns nothing.
    if let Err(e) = unsafe { call_static(env, class, c"forget", c"()V", &[], false) } {
        log::warn!("alloc: {e}");
    }
    env.delete_local_ref(class.as_object());
}

/// The counters of the sites counted per class `0..sites` (`slots` per site: objects and
/// array elements of each) and their classes' internal names, read from `ferrofluid/Alloc`.
pub fn read_vm_counts(
    env: &JniEnv<'_>,
    sites: usize,
    slots: usize,
) -> Option<(Vec<i64>, Vec<Option<String>>)> {
    let class = env.find_class(ALLOC_CLASS).ok()?;
    let n = sys::jvalue {
        i: i32::try_from(sites).ok()?,
    };
    // SAFETY: `vmCounts(I)[J` and `vmNames(I)[Ljava/lang/String;` take one int and return an
    // array.
    let (counts, names) = unsafe {
        (
            call_static(env, class, c"vmCounts", c"(I)[J", &[n], true),
            call_static(
                env,
                class,
                c"vmNames",
                c"(I)[Ljava/lang/String;",
                &[n],
                true,
            ),
        )
    };
    env.delete_local_ref(class.as_object());
    let (counts, names) = (counts.ok()??, names.ok()??);
    let out = env.long_array_elements(counts);
    env.delete_local_ref(counts);
    let out = out.ok().filter(|o| o.len() == 2 * slots * sites);
    let elements = env.object_array_elements(names);
    env.delete_local_ref(names);
    let elements = elements.ok()?;
    let mut classes = Vec::with_capacity(elements.len());
    for e in elements {
        classes.push(e.and_then(|e| {
            let s = env.string_utf(e).ok();
            env.delete_local_ref(e);
            s
        }));
    }
    let out = out?;
    (classes.len() == slots * sites).then_some((out, classes))
}

/// Internal name of the class of `object` (`java/lang/String`, `[I`).
pub fn class_name(env: &JniEnv<'_>, object: Object<'_>) -> Option<String> {
    let jvmti = upcalls()?.jvmti()?;
    let class = env.object_class(object).ok()?;
    let signature = jvmti.class_signature(class).map(|s| s.0);
    env.delete_local_ref(class.as_object());
    let signature = signature.ok()?;
    Some(
        match signature
            .strip_prefix('L')
            .and_then(|s| s.strip_suffix(';'))
        {
            Some(name) => name.to_owned(),
            None => signature,
        },
    )
}

/// `Alloc.sample(o, site)`: the first allocation of a site and each one tracked after it; the
/// object's size in bytes (0: not measured).
extern "C" fn native_sample(
    env: *mut sys::JNIEnv,
    _: sys::jclass,
    object: sys::jobject,
    site: sys::jint,
) -> sys::jlong {
    ffi_guard("Alloc.sample", 0, || {
        // SAFETY: the JNIEnv of this native call and its argument, a live local reference.
        let (Some(env), Some(object)) = (unsafe { JniEnv::from_raw(env) }, unsafe {
            Object::from_nullable(object)
        }) else {
            return 0;
        };
        size(tracker::sampled(&env, object, site as u32))
    })
}

fn size(bytes: u64) -> sys::jlong {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

/// `Alloc.sampleVm(o, site)`: the first allocation of a class at a site counted per class,
/// and each one tracked after it; the object's size in bytes (0: not measured).
extern "C" fn native_sample_vm(
    env: *mut sys::JNIEnv,
    _: sys::jclass,
    object: sys::jobject,
    site: sys::jint,
) -> sys::jlong {
    ffi_guard("Alloc.sampleVm", 0, || {
        // SAFETY: the JNIEnv of this native call and its argument, a live local reference.
        let (Some(env), Some(object)) = (unsafe { JniEnv::from_raw(env) }, unsafe {
            Object::from_nullable(object)
        }) else {
            return 0;
        };
        size(vm::sampled(&env, object, site as u32))
    })
}

/// Posts now, on this (attached) thread, the `ObjectFree` events of tagged objects that GCs
/// freed and the JVM has not posted yet: since JDK 16 it posts them after a GC, from its service
/// thread, and enabling the event (again) flushes them.
pub fn flush_object_free(jvmti: Jvmti) {
    if let Err(e) = jvmti.set_event_notification_mode(true, sys::JVMTI_EVENT_OBJECT_FREE) {
        log::debug!("alloc: ObjectFree events not flushed: {e}");
    }
}

/// A JVMTI environment for the engine, with tags, `ObjectFree` and `GarbageCollectionFinish`
/// enabled. Disposing it ([`Jvmti::dispose`]) removes every tag it set.
pub fn open_env(vm: JavaVm) -> Result<Jvmti, String> {
    let jvmti = vm.jvmti().map_err(|e| e.to_string())?;
    let mut caps = sys::jvmtiCapabilities::default();
    caps.set_can_tag_objects(1);
    caps.set_can_generate_object_free_events(1);
    caps.set_can_generate_garbage_collection_events(1);
    let setup = || -> ferrofluid_jvmti::Result<()> {
        jvmti.add_capabilities(&caps)?;
        let callbacks = sys::jvmtiEventCallbacks {
            ObjectFree: Some(object_free),
            GarbageCollectionFinish: Some(gc_finish),
            ClassLoad: Some(class_load),
            ..Default::default()
        };
        jvmti.set_event_callbacks(&callbacks)?;
        jvmti.set_event_notification_mode(true, sys::JVMTI_EVENT_OBJECT_FREE)?;
        // `AsyncGetCallTrace` answers only while some environment has them on ([`stack`]).
        jvmti.set_event_notification_mode(true, sys::JVMTI_EVENT_CLASS_LOAD)?;
        jvmti.set_event_notification_mode(true, sys::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH)
    };
    if let Err(e) = setup() {
        let _ = jvmti.dispose();
        return Err(e.to_string());
    }
    Ok(jvmti)
}

/// Stops the environment's events and disposes it (its tags go with it).
pub fn close_env(jvmti: Jvmti) {
    let _ = jvmti.set_event_notification_mode(false, sys::JVMTI_EVENT_CLASS_LOAD);
    let _ = jvmti.set_event_notification_mode(false, sys::JVMTI_EVENT_OBJECT_FREE);
    let _ = jvmti.set_event_notification_mode(false, sys::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH);
    let _ = jvmti.dispose();
}

/// `ObjectFree`: a tracked object died. No JNI or JVMTI call is allowed here.
unsafe extern "C" fn object_free(_: *mut sys::jvmtiEnv, tag: sys::jlong) {
    ffi_guard("ObjectFree", (), || tracker::freed(tag))
}

/// `ClassLoad`: nothing to do (enabled for [`stack`]).
unsafe extern "C" fn class_load(
    _: *mut sys::jvmtiEnv,
    _: *mut sys::JNIEnv,
    _: sys::jthread,
    _: sys::jclass,
) {
}

/// `GarbageCollectionFinish`: counted, nothing else (no JNI or JVMTI call is allowed here).
unsafe extern "C" fn gc_finish(_: *mut sys::jvmtiEnv) {
    ffi_guard("GarbageCollectionFinish", (), tracker::gc_finished)
}

/// `GetObjectSize` of `object`.
pub fn object_size(jvmti: Jvmti, object: Object<'_>) -> Option<u64> {
    let raw = jvmti.as_raw();
    let mut size: sys::jlong = 0;
    // SAFETY: a live environment and object reference, one out-pointer.
    let err = unsafe {
        match (**raw).GetObjectSize {
            Some(f) => f(raw, object.as_raw(), &mut size),
            None => sys::JVMTI_ERROR_NOT_AVAILABLE,
        }
    };
    (err == sys::JVMTI_ERROR_NONE).then_some(size as u64)
}

/// The counting class's frames on top of a tracked object's stack: `sample`, `tracked`,
/// `alloc`.
const COUNTING_FRAMES: usize = 3;

/// The current thread's stack below the counting class's frames ([`COUNTING_FRAMES`]): up to
/// `depth` method ids, innermost first.
///
/// HotSpot's `AsyncGetCallTrace` walks the same frames as `GetStackTrace` at a fraction of the
/// cost (no `vframe` objects, no register map updates: `GetStackTrace` was most of a tracked
/// object's cost); it needs class-load events on (the environment [`open_env`] makes has them)
/// and gives only method ids already made, so a stack with a frame it cannot name is taken
/// again with `GetStackTrace`, which makes them.
pub fn stack(jvmti: Jvmti, env: &JniEnv<'_>, depth: usize, out: &mut Vec<usize>) {
    out.clear();
    if fast_stack(env, depth, out) {
        // `AsyncGetCallTrace` stops at the first call from the VM into Java (class loading, a
        // static initialiser, a JNI upcall): a stack shorter than `depth` is whole only if it
        // ends in the thread's own first frame.
        if out.len() == depth || out.last() == Some(&BOTTOM.with(Cell::get)) {
            return;
        }
        out.clear();
    }
    slow_stack(jvmti, COUNTING_FRAMES, depth, out);
    if out.len() < depth {
        if let Some(&bottom) = out.last() {
            BOTTOM.with(|b| b.set(bottom));
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CallFrame {
    /// The bytecode index (-3 for a native method's frame).
    lineno: sys::jint,
    method: sys::jmethodID,
}

#[repr(C)]
struct CallTrace {
    env: *mut sys::JNIEnv,
    /// Frames filled, or a negative reason for none.
    num_frames: sys::jint,
    frames: *mut CallFrame,
}

type AsyncGetCallTrace = unsafe extern "C" fn(*mut CallTrace, sys::jint, *mut std::ffi::c_void);

fn async_get_call_trace() -> Option<AsyncGetCallTrace> {
    // Process-wide: the JVM's exported function, looked up once.
    static FUNCTION: std::sync::OnceLock<Option<AsyncGetCallTrace>> = std::sync::OnceLock::new();
    *FUNCTION.get_or_init(|| {
        // SAFETY: a lookup in the already loaded libraries of the process, by a C string.
        let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"AsyncGetCallTrace".as_ptr()) };
        // SAFETY: HotSpot's exported `AsyncGetCallTrace(ASGCT_CallTrace*, jint, void*)`.
        (!f.is_null())
            .then(|| unsafe { std::mem::transmute::<*mut std::ffi::c_void, AsyncGetCallTrace>(f) })
    })
}

thread_local! {
    /// The method of this thread's first Java frame (0: not known yet), from a whole stack
    /// `GetStackTrace` took.
    static BOTTOM: Cell<usize> = const { Cell::new(0) };
    static CALL_FRAMES: std::cell::RefCell<Vec<CallFrame>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// [`stack`] through `AsyncGetCallTrace`; false when it gave no stack or a frame without id.
fn fast_stack(env: &JniEnv<'_>, depth: usize, out: &mut Vec<usize>) -> bool {
    let Some(f) = async_get_call_trace() else {
        return false;
    };
    CALL_FRAMES.with(|frames| {
        let mut frames = frames.borrow_mut();
        let want = depth + COUNTING_FRAMES;
        frames.resize(
            want,
            CallFrame {
                lineno: 0,
                method: std::ptr::null_mut(),
            },
        );
        let mut trace = CallTrace {
            env: env.as_raw(),
            num_frames: 0,
            frames: frames.as_mut_ptr(),
        };
        // SAFETY: the current thread's own JNIEnv, in a native method (its last Java frame is
        // set and walkable); the buffer holds `want` frames; no signal context is needed.
        unsafe { f(&mut trace, want as sys::jint, std::ptr::null_mut()) };
        let n = trace.num_frames;
        if n < COUNTING_FRAMES as sys::jint {
            return false;
        }
        let got = &frames[COUNTING_FRAMES..n as usize];
        if got.iter().any(|f| f.method.is_null()) {
            return false;
        }
        out.extend(got.iter().map(|f| f.method as usize));
        true
    })
}

/// The current thread's stack from frame `start` (0: the top) through `GetStackTrace`: up to
/// `depth` method ids, innermost first.
pub fn stack_from(jvmti: Jvmti, start: usize, depth: usize, out: &mut Vec<usize>) {
    out.clear();
    slow_stack(jvmti, start, depth, out);
}

fn slow_stack(jvmti: Jvmti, start: usize, depth: usize, out: &mut Vec<usize>) {
    let mut frames = vec![sys::jvmtiFrameInfo::default(); depth];
    let mut count: sys::jint = 0;
    let raw = jvmti.as_raw();
    // SAFETY: null is the current thread; the buffer holds `depth` frames.
    let err = unsafe {
        match (**raw).GetStackTrace {
            Some(f) => f(
                raw,
                std::ptr::null_mut(),
                start as sys::jint,
                depth as sys::jint,
                frames.as_mut_ptr(),
                &mut count,
            ),
            None => sys::JVMTI_ERROR_NOT_AVAILABLE,
        }
    };
    if err == sys::JVMTI_ERROR_NONE {
        out.extend(
            frames[..count.max(0) as usize]
                .iter()
                .map(|f| f.method as usize),
        );
    }
}

/// Declaring class (Java name), name and descriptor of the method `method` (a `jmethodID`
/// [`stack`] returned, on the thread that took the stack).
pub fn method_name(
    jvmti: Jvmti,
    env: &JniEnv<'_>,
    method: usize,
) -> Option<(String, String, String)> {
    if method == 0 {
        return None;
    }
    // SAFETY: a method ID GetStackTrace returned for a frame of this thread, just now.
    let id = unsafe { MethodId::from_raw(method as sys::jmethodID) };
    let name = jvmti.method_name(id).ok()?;
    let internal = jvmti.method_class_name(env, id).ok()?;
    Some((
        ferrofluid_profile::alloc::java_name(&internal),
        name.name,
        name.signature,
    ))
}
