//! The JNI side of the Java contexts: the class `ferrofluid/Counts` (`Counts.java`), which
//! keeps every thread's calling-context tree in Java, defined in the bootstrap loader with its
//! natives bound (the agent's answers at a root's entry and exit, at a method's first entry and
//! at a thread's first probe), started, stopped, read, and sampled (each thread's current node).

use std::ffi::c_void;

use ferrofluid_jvmti::{sys, JniEnv, Jvmti, Object, StaticIntField, StaticObjectField};

use crate::ffi::jni::{call_static, export_internal_misc};
use crate::ffi::natives::Native;

/// Internal name of the counting class.
pub const COUNTS_CLASS: &str = "ferrofluid/Counts";
const CONTEXT_CLASS: &str = "ferrofluid/Counts$Context";
const COUNTS_BYTES: &[u8] = include_bytes!("Counts.class");
const CONTEXT_BYTES: &[u8] = include_bytes!("Counts$Context.class");

/// Defines `ferrofluid/Counts` (or finds it, defined by an earlier session or attach; with
/// `jvmti`, java.base exports it what it reads thread ids with), binds its natives and starts a
/// recording ([`start`]). On a Java thread, before any class carries the session's probes.
pub fn install(env: &JniEnv<'_>, jvmti: Option<Jvmti>) -> Result<(), String> {
    let class = match env.find_class(COUNTS_CLASS) {
        Ok(c) => c,
        Err(_) => {
            env.clear_exception();
            // The nested class first: the bootstrap loader cannot find it on its own.
            match env.find_class(CONTEXT_CLASS) {
                Ok(c) => env.delete_local_ref(c.as_object()),
                Err(_) => {
                    env.clear_exception();
                    let c = env
                        .define_class(CONTEXT_CLASS, None, CONTEXT_BYTES)
                        .map_err(|e| format!("defining {CONTEXT_CLASS}: {e}"))?;
                    env.delete_local_ref(c.as_object());
                }
            }
            let class = env
                .define_class(COUNTS_CLASS, None, COUNTS_BYTES)
                .map_err(|e| format!("defining {COUNTS_CLASS}: {e}"))?;
            if let Some(jvmti) = jvmti {
                export_internal_misc(jvmti, env, class);
            }
            class
        }
    };
    let natives: [Native; 4] = [
        (c"enter0", c"(I)I", native_enter0 as *mut c_void),
        (c"exit0", c"(I)I", native_exit0 as *mut c_void),
        (c"first0", c"(I)I", native_first0 as *mut c_void),
        (c"state0", c"()I", native_state0 as *mut c_void),
    ];
    // SAFETY: the four are the class's static natives with these descriptors, and the functions
    // have their JNI signatures; the library stays loaded while probes exist.
    let bound = unsafe { env.register_natives(class, &natives) }
        .map_err(|e| format!("binding the natives of {COUNTS_CLASS}: {e}"));
    // Initialised now, while no method has its probes: its static initialiser runs code
    // (`ThreadLocal`'s) whose probes would call the class before its fields are set.
    // SAFETY: `stop()V` takes nothing.
    let initialised = bound.and_then(|()| {
        unsafe { call_static(env, class, c"stop", c"()V", &[], false) }
            .map(|_| ())
            .map_err(|e| format!("{COUNTS_CLASS}: {e}"))
    });
    if initialised.is_ok() {
        log_thread_lookup(env, class);
    }
    env.delete_local_ref(class.as_object());
    initialised
}

/// Says how the probes find a thread's context: by its id, or (the agent could not export
/// `jdk.internal.misc` to the class, or an older agent defined it) by its identity hash,
/// which costs a call into the VM at each probe of a thread another thread joins.
fn log_thread_lookup(env: &JniEnv<'_>, class: ferrofluid_jvmti::Class<'_>) {
    match env
        .static_int_field(class, c"BY_ID")
        .and_then(|field| field.get(env))
    {
        Ok(1) => log::info!("{COUNTS_CLASS}: probes find threads by id"),
        Ok(_) => log::warn!(
            "{COUNTS_CLASS}: probes find threads by identity hash (slower on threads being joined)"
        ),
        Err(_) => {
            env.clear_exception();
            log::info!("{COUNTS_CLASS} was defined by an older agent: probes find threads by identity hash");
        }
    }
}

/// Starts a recording: every thread counts into a new context from its next probe (its open
/// calling contexts carried over, unless `new_session`: the method ids of an earlier session's
/// open calls mean nothing in this one). `no_root`: every thread counts; `max_nodes` per
/// context; `heap_share`: the fraction of the JVM's maximum heap all contexts' nodes may use.
pub fn start(
    env: &JniEnv<'_>,
    no_root: bool,
    max_nodes: usize,
    heap_share: f64,
    new_session: bool,
) -> Result<(), String> {
    let args = [
        sys::jvalue {
            z: u8::from(no_root),
        },
        sys::jvalue {
            i: i32::try_from(max_nodes).unwrap_or(i32::MAX),
        },
        sys::jvalue { d: heap_share },
        sys::jvalue {
            z: u8::from(new_session),
        },
    ];
    with_class(env, |class| {
        // SAFETY: `reset(ZIDZ)V` takes a boolean, an int, a double and a boolean.
        unsafe { call_static(env, class, c"reset", c"(ZIDZ)V", &args, false) }.map(|_| ())
    })
}

/// Ends the recording: nothing counts any more; the contexts stay readable.
pub fn stop(env: &JniEnv<'_>) -> Result<(), String> {
    with_class(env, |class| {
        // SAFETY: `stop()V` takes nothing.
        unsafe { call_static(env, class, c"stop", c"()V", &[], false) }.map(|_| ())
    })
}

fn with_class<R>(
    env: &JniEnv<'_>,
    f: impl FnOnce(ferrofluid_jvmti::Class<'_>) -> Result<R, String>,
) -> Result<R, String> {
    let class = env.find_class(COUNTS_CLASS).map_err(|e| {
        env.clear_exception();
        format!("{COUNTS_CLASS}: {e}")
    })?;
    let out = f(class).map_err(|e| format!("{COUNTS_CLASS}: {e}"));
    env.delete_local_ref(class.as_object());
    out
}

/// One thread's calling-context tree as `Counts.contexts()` copied it.
#[derive(Debug, Default)]
pub struct JavaContext {
    pub name: String,
    /// The order in which threads first counted.
    pub order: u64,
    pub java_id: u64,
    pub is_virtual: bool,
    pub overflow_calls: u64,
    pub unmatched_exits: u64,
    /// The node the thread is in.
    pub current: u32,
    /// Per node: method id (`-1` the root, `-2` the overflow node), parent, calls, bytecodes.
    pub method: Vec<i32>,
    pub parent: Vec<i32>,
    pub calls: Vec<i64>,
    pub bytecodes: Vec<i64>,
}

/// Every context of the recording, and the threads that could not count; `None` if the class
/// cannot be read.
pub fn read(env: &JniEnv<'_>) -> Option<(Vec<JavaContext>, u64)> {
    let array = with_class(env, |class| {
        // SAFETY: `contexts()[Ljava/lang/Object;` takes nothing and returns an Object[].
        unsafe { call_static(env, class, c"contexts", c"()[Ljava/lang/Object;", &[], true) }
    });
    let array = match array {
        Ok(Some(a)) => a,
        Ok(None) => return None,
        Err(e) => {
            log::warn!("count: reading the contexts: {e}");
            return None;
        }
    };
    let elements = env.object_array_elements(array);
    env.delete_local_ref(array);
    let elements = elements.ok()?;
    let mut contexts = Vec::with_capacity(elements.len() / 6);
    let mut chunks = elements.chunks_exact(6);
    for chunk in chunks.by_ref() {
        let mut c = JavaContext::default();
        if let Some(name) = chunk[0] {
            c.name = env.string_utf(name).unwrap_or_default();
        }
        let meta = chunk[1].map(|m| longs(env, m)).unwrap_or_default();
        if let [order, java_id, is_virtual, overflow, unmatched, current] = meta[..] {
            c.order = order as u64;
            c.java_id = java_id as u64;
            c.is_virtual = is_virtual != 0;
            c.overflow_calls = overflow as u64;
            c.unmatched_exits = unmatched as u64;
            c.current = current as u32;
        }
        c.method = chunk[2].map(|a| ints(env, a)).unwrap_or_default();
        c.parent = chunk[3].map(|a| ints(env, a)).unwrap_or_default();
        c.calls = chunk[4].map(|a| longs(env, a)).unwrap_or_default();
        c.bytecodes = chunk[5].map(|a| longs(env, a)).unwrap_or_default();
        for o in chunk.iter().flatten() {
            env.delete_local_ref(*o);
        }
        contexts.push(c);
    }
    let dropped = match chunks.remainder() {
        [Some(d)] => {
            let d = *d;
            let v = longs(env, d);
            env.delete_local_ref(d);
            v.first().copied().unwrap_or(0) as u64
        }
        _ => 0,
    };
    Some((contexts, dropped))
}

/// The fields `Counts.sample()` fills, found once per sampler.
pub struct SampleFields {
    threads: StaticObjectField,
    nodes: StaticObjectField,
    agent_calls: StaticObjectField,
    count: StaticIntField,
}

impl SampleFields {
    /// The fields of the defined `ferrofluid/Counts`.
    pub fn find(env: &JniEnv<'_>) -> Result<SampleFields, String> {
        with_class(env, |class| {
            let fields = (|| {
                Ok::<_, ferrofluid_jvmti::Error>(SampleFields {
                    threads: env.static_object_field(
                        class,
                        c"sampledThreads",
                        c"[Ljava/lang/Object;",
                    )?,
                    nodes: env.static_object_field(class, c"sampledNodes", c"[I")?,
                    agent_calls: env.static_object_field(class, c"sampledAgentCalls", c"[I")?,
                    count: env.static_int_field(class, c"sampledCount")?,
                })
            })();
            fields.map_err(|e| {
                env.clear_exception();
                e.to_string()
            })
        })
    }

    /// Runs `Counts.sample()` and hands `f` each context's thread (a local reference, deleted
    /// after), the node it is in (-1: not recording) and how often it left the agent's work so
    /// far, in the contexts' order.
    pub fn sample(
        &self,
        env: &JniEnv<'_>,
        mut f: impl FnMut(usize, Object<'_>, i32, i32),
    ) -> Result<(), String> {
        with_class(env, |class| {
            // SAFETY: `sample()V` takes nothing and returns nothing.
            unsafe { call_static(env, class, c"sample", c"()V", &[], false) }.map(|_| ())
        })?;
        let n = self.count.get(env).map_err(|e| e.to_string())?.max(0) as usize;
        if n == 0 {
            return Ok(());
        }
        let threads = self.threads.get(env).map_err(|e| e.to_string())?;
        let nodes = self.nodes.get(env).map_err(|e| e.to_string())?;
        let agent = self.agent_calls.get(env).map_err(|e| e.to_string())?;
        let (Some(threads), Some(nodes), Some(agent)) = (threads, nodes, agent) else {
            return Ok(());
        };
        let current = ints(env, nodes);
        let agent_calls = ints(env, agent);
        env.delete_local_ref(nodes);
        env.delete_local_ref(agent);
        for (i, (&node, &calls)) in current.iter().zip(&agent_calls).enumerate().take(n) {
            if let Ok(Some(thread)) = env.object_array_element(threads, i) {
                f(i, thread, node, calls);
                env.delete_local_ref(thread);
            }
        }
        env.delete_local_ref(threads);
        Ok(())
    }
}

fn ints(env: &JniEnv<'_>, array: Object<'_>) -> Vec<i32> {
    env.int_array_elements(array).unwrap_or_default()
}

fn longs(env: &JniEnv<'_>, array: Object<'_>) -> Vec<i64> {
    env.long_array_elements(array).unwrap_or_default()
}

/// `Counts.enter0(id)`: a root's entry (`id` is `~method`).
extern "C" fn native_enter0(env: *mut sys::JNIEnv, _: sys::jclass, id: sys::jint) -> sys::jint {
    ferrofluid_jvmti::ffi_guard("Counts.enter0", 0, || {
        super::probes::entry(env, id) as sys::jint
    })
}

/// `Counts.exit0(id)`: a root's exit.
extern "C" fn native_exit0(env: *mut sys::JNIEnv, _: sys::jclass, id: sys::jint) -> sys::jint {
    ferrofluid_jvmti::ffi_guard("Counts.exit0", 0, || {
        super::probes::exit(env, id) as sys::jint
    })
}

/// `Counts.first0(id)`: a method's first entry in the recording (or one not yet ready).
extern "C" fn native_first0(env: *mut sys::JNIEnv, _: sys::jclass, id: sys::jint) -> sys::jint {
    ferrofluid_jvmti::ffi_guard("Counts.first0", 0, || {
        super::probes::entry(env, id) as sys::jint
    })
}

/// `Counts.state0()`: whether this thread records now, and whether it is a virtual thread.
extern "C" fn native_state0(_: *mut sys::JNIEnv, _: sys::jclass) -> sys::jint {
    ferrofluid_jvmti::ffi_guard("Counts.state0", 0, || super::probes::state() as sys::jint)
}
