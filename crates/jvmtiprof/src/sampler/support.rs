//! What the stack walk needs from the JVM, kept by a JVMTI environment of the sampler's own:
//! `ClassLoad` on (`AsyncGetCallTrace` answers only then), a `jmethodID` for every method of every
//! prepared class (the walk cannot create one), debug information at every instruction the JIT
//! compiles, where the interpreter is (`DynamicCodeGenerated`), and thread start/end for the CPU
//! timers.
//!
//! On HotSpot the debug information comes from its `DebugNonSafepoints` flag, set through its
//! VMStructs for as long as the environment lives, and the walk finds a sample's compiled frame
//! in HotSpot's own structures. A JVM that describes neither gets `CompiledMethodLoad` on
//! instead, which keeps the same information and maps the compiled code, but costs HotSpot an
//! address map of every method it compiles, built for the event (docs/jvmtiprof.md, "Frame
//! types").

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ferrofluid_jvmti::{sys, JavaVm, JniEnv, Jvmti};

use crate::agent::{Agent, Event};
use crate::codemap::{Blob, CodeMap};
use crate::error::Result;
use crate::ffi::vmstructs;
use crate::threads::{self, JavaThread};

/// Shared with the environment's closures.
pub(crate) struct SupportState {
    pub codemap: CodeMap,
    /// Set while the compiled-code events of code that existed already are replayed.
    replaying: AtomicBool,
    /// Methods whose code was compiled before this environment existed (replayed, or found
    /// compiled in HotSpot's structures): compiled without debug information between
    /// safepoints, unless the JVM ran with `-XX:+DebugNonSafepoints`.
    pub replayed: Mutex<Vec<usize>>,
    /// Whether `CompiledMethodLoad` is on (the JVM's flag and structures could not be used).
    pub compiled_method_events: bool,
    /// `DebugNonSafepoints` before this environment set it, to put back when it goes.
    debug_flag_before: Option<bool>,
    /// The running CPU sampler's timer settings, for threads that start while it runs.
    pub cpu_timers: Mutex<Option<super::drivers::TimerSpec>>,
    /// Java threads by `JNIEnv` address, learnt at their start.
    pub java_threads: Mutex<HashMap<usize, JavaThread>>,
    jvmti: OnceLock<Jvmti>,
}

pub(crate) struct Support {
    pub agent: Agent,
    pub state: Arc<SupportState>,
    /// Whether [`prepare`](crate::sampler::prepare) made it (it then stays for the process).
    pub permanent: bool,
}

static SUPPORT: Mutex<Option<Arc<Support>>> = Mutex::new(None);

impl SupportState {
    pub fn jvmti(&self) -> Option<Jvmti> {
        self.jvmti.get().copied()
    }
}

/// The support environment: the one [`prepare`](crate::sampler::prepare) made, or a new one.
pub(crate) fn acquire(vm: JavaVm, permanent: bool) -> Result<Arc<Support>> {
    let mut support = SUPPORT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = support.as_ref() {
        return Ok(s.clone());
    }
    let tables = vmstructs::get();
    let typed_by_walk = tables.and_then(|t| t.code_layout()).is_some();
    let debug_flag_before = if typed_by_walk {
        tables.and_then(|t| t.set_bool_flag(DEBUG_NON_SAFEPOINTS, true))
    } else {
        None
    };
    let compiled_method_events = debug_flag_before.is_none();
    if compiled_method_events {
        log::info!(
            "sampler: no VMStructs for DebugNonSafepoints and frame types; CompiledMethodLoad on"
        );
    }
    let state = Arc::new(SupportState {
        codemap: CodeMap::default(),
        replaying: AtomicBool::new(false),
        replayed: Mutex::new(Vec::new()),
        compiled_method_events,
        debug_flag_before,
        cpu_timers: Mutex::new(None),
        java_threads: Mutex::new(HashMap::new()),
        jvmti: OnceLock::new(),
    });
    // The environment's closures outlive it (a callback may still run on another thread when
    // it is disposed, so they are never freed): they hold the state weakly, and once the last
    // sampler and reader let it go its code map and thread tables are freed, not kept for the
    // process's life with every environment made since.
    let weak = Arc::downgrade(&state);
    let (s1, s2, s3, s4, s5, s6) = (
        weak.clone(),
        weak.clone(),
        weak.clone(),
        weak.clone(),
        weak.clone(),
        weak,
    );
    let mut builder = Agent::builder(vm)
        .capabilities(|c| {
            c.set_can_get_line_numbers(1);
            c.set_can_get_source_file_name(1);
        })
        // AsyncGetCallTrace returns nothing unless some environment has ClassLoad on.
        .on_class_load(|_, _, _| {})
        .on_class_prepare(move |_, _, class| {
            if let Some(jvmti) = s1.upgrade().and_then(|s| s.jvmti()) {
                // GetClassMethods makes a jmethodID for each method, which the walk can only read.
                if let Ok(methods) = jvmti.class_methods(class) {
                    drop(methods);
                }
            }
        })
        .on_dynamic_code(move |name, address, size| {
            let Some(s) = s4.upgrade() else { return };
            let blob = if name == "Interpreter" {
                Blob::Interpreter
            } else {
                Blob::Stub
            };
            s.codemap.add(address, size, blob)
        })
        .on_thread_start(move |env, thread| {
            if let Some(s) = s5.upgrade() {
                thread_started(&s, env, thread)
            }
        })
        .on_thread_end(move |env, _| {
            if let Some(s) = s6.upgrade() {
                thread_ended(&s, env)
            }
        });
    if compiled_method_events {
        builder = builder
            .on_compiled_method_load(move |code| {
                let Some(s) = s2.upgrade() else { return };
                if s.replaying.load(Ordering::Acquire) {
                    s.replayed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(code.method.as_raw() as usize);
                }
                s.codemap.add(
                    code.address,
                    code.size,
                    Blob::Compiled(code.method.as_raw() as usize),
                )
            })
            .on_compiled_method_unload(move |_, address| {
                if let Some(s) = s3.upgrade() {
                    s.codemap.remove(address)
                }
            });
    }
    let agent = match builder.build() {
        Ok(agent) => agent,
        Err(e) => {
            restore_debug_flag(&state);
            return Err(e);
        }
    };
    let _ = state.jvmti.set(agent.jvmti());
    let support = support.insert(Arc::new(Support {
        agent,
        state,
        permanent,
    }));
    Ok(support.clone())
}

/// Lets the support environment go unless it is permanent or someone else still holds it (a
/// running sampler, a [`recompile`](crate::sampler::recompile) in progress).
pub(crate) fn release(support: Arc<Support>) {
    if support.permanent {
        return;
    }
    let mut slot = SUPPORT.lock().unwrap_or_else(|p| p.into_inner());
    // The slot's reference and this one: nobody else holds it (new holders take the lock first).
    let last = Arc::strong_count(&support) == 2;
    if last && slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, &support)) {
        *slot = None;
        drop(slot);
        let jvmti = support.agent.jvmti();
        for e in [
            Event::ClassLoad,
            Event::ClassPrepare,
            Event::CompiledMethodLoad,
            Event::CompiledMethodUnload,
            Event::DynamicCodeGenerated,
            Event::ThreadStart,
            Event::ThreadEnd,
        ] {
            let _ = jvmti.set_event_notification_mode(false, e.raw());
        }
        let _ = jvmti.dispose();
        restore_debug_flag(&support.state);
    }
}

const DEBUG_NON_SAFEPOINTS: &str = "DebugNonSafepoints";

/// Puts `DebugNonSafepoints` back as it was before the environment set it (the code compiled
/// meanwhile keeps its debug information).
fn restore_debug_flag(state: &SupportState) {
    if let (Some(before), Some(tables)) = (state.debug_flag_before, vmstructs::get()) {
        tables.set_bool_flag(DEBUG_NON_SAFEPOINTS, before);
    }
}

/// Makes a `jmethodID` for every method of every loaded class, notes the methods compiled
/// already (for [`recompile`](crate::sampler::recompile)) and replays the generated-code events
/// (for an environment made while the program runs).
pub(crate) fn catch_up(support: &Support, env: &JniEnv<'_>) {
    let jvmti = support.agent.jvmti();
    let state = &support.state;
    let tables = vmstructs::get().filter(|_| !state.compiled_method_events);
    let mut compiled = Vec::new();
    if let Ok(classes) = jvmti.loaded_classes(env) {
        for &class in classes.iter() {
            if let Ok(status) = jvmti.class_status(class) {
                if status & sys::JVMTI_CLASS_STATUS_PREPARED as i32 != 0 {
                    if let (Ok(methods), Some(tables)) = (jvmti.class_methods(class), tables) {
                        compiled.extend(
                            methods
                                .iter()
                                .filter(|&&m| tables.is_compiled(m))
                                .map(|m| m.as_raw() as usize),
                        );
                    }
                }
            }
            env.delete_local_ref(class.as_object());
        }
    }
    if !compiled.is_empty() {
        state
            .replayed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(compiled);
    }
    if let Err(e) = jvmti.generate_events(sys::JVMTI_EVENT_DYNAMIC_CODE_GENERATED) {
        log::debug!("GenerateEvents: {e}");
    }
    if !state.compiled_method_events {
        return;
    }
    // HotSpot sends these on this thread, during the call.
    support.state.replaying.store(true, Ordering::Release);
    if let Err(e) = jvmti.generate_events(sys::JVMTI_EVENT_COMPILED_METHOD_LOAD) {
        log::debug!("GenerateEvents: {e}");
    }
    support.state.replaying.store(false, Ordering::Release);
}

fn thread_started(state: &SupportState, env: &JniEnv<'_>, thread: ferrofluid_jvmti::Object<'_>) {
    let registry = threads::registry();
    let Some(key) = registry.register_current() else {
        return;
    };
    if let Some(jvmti) = state.jvmti() {
        let name = jvmti
            .thread_info(env, thread)
            .map(|i| i.name)
            .unwrap_or_default();
        let id = env.long_field(thread, c"tid").unwrap_or(-1);
        let java = JavaThread { id, name };
        state
            .java_threads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(env.as_raw() as usize, java.clone());
        registry.set_java(key, java);
    }
    if let Some(spec) = *state.cpu_timers.lock().unwrap_or_else(|p| p.into_inner()) {
        super::drivers::arm(&spec, key);
    }
}

fn thread_ended(state: &SupportState, env: &JniEnv<'_>) {
    let registry = threads::registry();
    if let Some(key) = registry.current() {
        super::drivers::disarm(key);
        registry.unregister(key);
    }
    state
        .java_threads
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&(env.as_raw() as usize));
}

/// Retransforms (bytes unchanged) the modifiable classes that declare `methods`.
pub(crate) fn retransform_declaring_classes(
    vm: JavaVm,
    env: &JniEnv<'_>,
    methods: &[usize],
) -> Result<usize> {
    let agent = Agent::builder(vm)
        .capabilities(|c| c.set_can_retransform_classes(1))
        .build()?;
    let jvmti = agent.jvmti();
    let mut seen = std::collections::HashSet::new();
    let mut classes = Vec::new();
    for &m in methods {
        let Some(method) = crate::ffi::method_id(m) else {
            continue;
        };
        let Ok(class) = jvmti.method_declaring_class(env, method) else {
            continue;
        };
        let name = jvmti
            .class_signature(class)
            .map(|(s, _)| s)
            .unwrap_or_default();
        if jvmti.is_modifiable_class(class).unwrap_or(false) && seen.insert(name) {
            classes.push(class);
        } else {
            env.delete_local_ref(class.as_object());
        }
    }
    let mut done = 0;
    for batch in classes.chunks(64) {
        if jvmti.retransform_classes(batch).is_ok() {
            done += batch.len();
        } else {
            // One class the JVM refuses holds back no other.
            done += batch
                .iter()
                .filter(|c| jvmti.retransform_classes(&[**c]).is_ok())
                .count();
        }
    }
    for class in classes {
        env.delete_local_ref(class.as_object());
    }
    let _ = agent.dispose();
    Ok(done)
}
