//! Method interception by pattern: entry and exit callbacks for the methods a
//! [`MethodPattern`] names, by bytecode instrumentation.
//!
//! The matching methods get `entry-exit` probes (the class-file engine of `ferrofluid-classfile`):
//! a call to `jvmtiprof/Hooks.enter(id)` at entry, `exit(id)` before every return and
//! `unwind(id)` when an exception leaves the method. The hooks class is defined in the bootstrap
//! loader (so every class, the JDK's included, can call it) and its natives are bound to this
//! crate, which calls the callbacks with the method's [`InterceptedMethod`]. Classes that load
//! later are instrumented as they load (`ClassFileLoadHook`), classes already loaded by
//! `RetransformClasses`. [`Interception::remove`] retransforms them back to their original bytes.
//!
//! The callbacks run on the Java thread that called the method, in a native method: they may use
//! JNI. A call of an intercepted method made from inside a callback (on the same thread) is not
//! reported, so a callback that runs Java code cannot recurse into itself.
//!
//! ```no_run
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use jvmtiprof::intercept::{Exit, Interceptor};
//! # fn f(vm: jvmtiprof::JavaVm, env: &jvmtiprof::JniEnv<'_>) -> Result<(), jvmtiprof::Error> {
//! static CALLS: AtomicU64 = AtomicU64::new(0);
//! let interception = Interceptor::new()
//!     .method("com.acme.Service::handle*")?
//!     .on_entry(|_env, _method| { CALLS.fetch_add(1, Ordering::Relaxed); })
//!     .on_exit(|_env, method, exit| {
//!         if exit == Exit::Throw {
//!             eprintln!("{} threw", method.name);
//!         }
//!     })
//!     .install(vm, env)?;
//! // ... later
//! let report = interception.remove(env)?;
//! assert!(report.not_restored.is_empty());
//! # Ok(()) }
//! ```

mod hooks_class;
mod pattern;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ferrofluid_classfile::{instrument, Hooks, MethodSite, ProbeKind, ProbeOptions};
use ferrofluid_jvmti::{Class, JavaVm, JniEnv, Jvmti};

use crate::agent::{Agent, ClassFileLoad, Event};
use crate::error::{Error, Result};
use crate::stack::java_name;

pub use pattern::MethodPattern;

pub(crate) use hooks_class::HOOKS_CLASS;

/// How a method left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exit {
    /// By a return instruction.
    Return,
    /// By an exception.
    Throw,
}

/// An instrumented method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterceptedMethod {
    /// Its id (dense, from 0; what [`Interception::method`] takes).
    pub id: u32,
    /// The class's binary name in Java form.
    pub class: String,
    /// The method's name.
    pub name: String,
    /// The method's descriptor.
    pub descriptor: String,
}

type EntryFn = dyn Fn(&JniEnv<'_>, &InterceptedMethod) + Send + Sync;
type ExitFn = dyn Fn(&JniEnv<'_>, &InterceptedMethod, Exit) + Send + Sync;

/// Builds an interception: patterns and callbacks.
#[must_use = "nothing is intercepted until install()"]
#[derive(Default)]
pub struct Interceptor {
    patterns: Vec<MethodPattern>,
    on_entry: Option<Box<EntryFn>>,
    on_exit: Option<Box<ExitFn>>,
}

impl Interceptor {
    /// An interceptor with no pattern yet.
    pub fn new() -> Interceptor {
        Interceptor::default()
    }

    /// Adds the methods `pattern` names ([`MethodPattern`]).
    pub fn method(mut self, pattern: &str) -> Result<Interceptor> {
        self.patterns.push(pattern.parse()?);
        Ok(self)
    }

    /// Called at each entry of an intercepted method, on its thread.
    pub fn on_entry(
        mut self,
        f: impl Fn(&JniEnv<'_>, &InterceptedMethod) + Send + Sync + 'static,
    ) -> Interceptor {
        self.on_entry = Some(Box::new(f));
        self
    }

    /// Called at each exit of an intercepted method (return or exception), on its thread.
    pub fn on_exit(
        mut self,
        f: impl Fn(&JniEnv<'_>, &InterceptedMethod, Exit) + Send + Sync + 'static,
    ) -> Interceptor {
        self.on_exit = Some(Box::new(f));
        self
    }

    /// Instruments the matching methods of the classes loaded now and of those that load later.
    /// Call on a Java thread (`env`: `VMInit`, `Agent_OnAttach`, an attached thread). One
    /// interception at a time per process.
    pub fn install(self, vm: JavaVm, env: &JniEnv<'_>) -> Result<Interception> {
        if self.patterns.is_empty() {
            return Err(Error::Config("no method pattern to intercept".into()));
        }
        let slot = claim_slot()?;
        let state = STATES[slot].get_or_init(|| State {
            patterns: self.patterns,
            on_entry: self.on_entry,
            on_exit: self.on_exit,
            methods: MethodTable::default(),
            ids: Mutex::new(HashMap::new()),
            patched: Mutex::new(HashSet::new()),
            failures: Mutex::new(Vec::new()),
            active: AtomicBool::new(true),
        });
        let result = (|| {
            crate::ffi::natives::bind(env, &hooks_class::bytes())?;
            let agent = Agent::builder(vm)
                .capabilities(|c| c.set_can_retransform_classes(1))
                .on_class_file_load(move |_, load| state.transform(load))
                .build()?;
            read_hooks_module(agent.jvmti(), env);
            CURRENT.store(slot, Ordering::Release);
            let interception = Interception { agent, state };
            interception.retransform_matching(env);
            Ok(interception)
        })();
        if result.is_err() {
            state.active.store(false, Ordering::Release);
            BUSY.store(false, Ordering::Release);
        }
        result
    }
}

/// A running interception.
pub struct Interception {
    agent: Agent,
    state: &'static State,
}

/// What [`Interception::remove`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoveReport {
    /// Classes put back to their original bytes.
    pub restored: usize,
    /// Classes that could not be retransformed (with the JVM's error); their probes stay, and
    /// call nothing.
    pub not_restored: Vec<(String, String)>,
}

impl Interception {
    /// The methods instrumented so far.
    pub fn methods(&self) -> Vec<Arc<InterceptedMethod>> {
        self.state.methods.all()
    }

    /// Method `id`.
    pub fn method(&self, id: u32) -> Option<Arc<InterceptedMethod>> {
        self.state.methods.get(id).cloned()
    }

    /// Classes and methods the engine could not instrument, with why.
    pub fn failures(&self) -> Vec<(String, String)> {
        self.state
            .failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Stops the callbacks at once, then puts every instrumented class back to its original
    /// bytes and ends the interceptor's JVMTI environment.
    pub fn remove(self, env: &JniEnv<'_>) -> Result<RemoveReport> {
        self.state.active.store(false, Ordering::Release);
        let jvmti = self.agent.jvmti();
        let patched: HashSet<String> =
            std::mem::take(&mut *self.state.patched.lock().unwrap_or_else(|p| p.into_inner()));
        let mut report = RemoveReport::default();
        let classes = loaded_classes_where(jvmti, env, |name| patched.contains(name));
        retransform(jvmti, env, &classes, &mut |name, result| match result {
            Ok(()) => report.restored += 1,
            Err(e) => report.not_restored.push((java_name_of(name), e)),
        });
        for (_, class) in classes {
            env.delete_local_ref(class.as_object());
        }
        let _ = self.agent.set_event(Event::ClassFileLoadHook, false);
        let _ = self.agent.dispose();
        BUSY.store(false, Ordering::Release);
        Ok(report)
    }

    fn retransform_matching(&self, env: &JniEnv<'_>) {
        let jvmti = self.agent.jvmti();
        let state = self.state;
        let classes = loaded_classes_where(jvmti, env, |name| {
            name != HOOKS_CLASS && state.patterns.iter().any(|p| p.matches_class(name))
        });
        let modifiable: Vec<(String, Class<'_>)> = classes
            .into_iter()
            .filter(|(_, c)| jvmti.is_modifiable_class(*c).unwrap_or(false))
            .collect();
        retransform(jvmti, env, &modifiable, &mut |name, result| {
            if let Err(e) = result {
                state.fail(name, e);
            }
        });
        for (_, class) in modifiable {
            env.delete_local_ref(class.as_object());
        }
    }
}

/// The loaded classes whose internal name passes `keep` (local references).
fn loaded_classes_where<'a>(
    jvmti: Jvmti,
    env: &JniEnv<'a>,
    keep: impl Fn(&str) -> bool,
) -> Vec<(String, Class<'a>)> {
    let mut out = Vec::new();
    let Ok(classes) = jvmti.loaded_classes(env) else {
        return out;
    };
    for &class in classes.iter() {
        let internal = jvmti
            .class_signature(class)
            .ok()
            .and_then(|(s, _)| s.strip_prefix('L')?.strip_suffix(';').map(str::to_owned));
        match internal {
            Some(name) if keep(&name) => out.push((name, class)),
            _ => env.delete_local_ref(class.as_object()),
        }
    }
    out
}

/// Retransforms `classes` in batches; a failed batch is retried one class at a time, so that one
/// class the JVM refuses holds back no other.
fn retransform(
    jvmti: Jvmti,
    _env: &JniEnv<'_>,
    classes: &[(String, Class<'_>)],
    report: &mut dyn FnMut(&str, std::result::Result<(), String>),
) {
    for batch in classes.chunks(64) {
        let refs: Vec<Class<'_>> = batch.iter().map(|(_, c)| *c).collect();
        if jvmti.retransform_classes(&refs).is_ok() {
            for (name, _) in batch {
                report(name, Ok(()));
            }
            continue;
        }
        for (name, class) in batch {
            report(
                name,
                jvmti
                    .retransform_classes(&[*class])
                    .map_err(|e| e.to_string()),
            );
        }
    }
}

fn java_name_of(internal: &str) -> String {
    java_name(&format!("L{internal};"))
}

/// Makes every named module read the hooks class's module, so that classes in named modules
/// (the JDK's) can call it.
fn read_hooks_module(jvmti: Jvmti, env: &JniEnv<'_>) {
    let Ok(class) = env.find_class(HOOKS_CLASS) else {
        return;
    };
    let module = env.module_of(class);
    env.delete_local_ref(class.as_object());
    let Ok(hooks) = module else {
        return;
    };
    if let Ok(modules) = jvmti.all_modules(env) {
        for &m in modules.iter() {
            if let Err(e) = jvmti.add_module_reads(m, hooks) {
                log::debug!("AddModuleReads: {e}");
            }
            env.delete_local_ref(m);
        }
    }
    env.delete_local_ref(hooks);
}

/// Interceptions a process may install over its life (each keeps its state for good: a probe
/// may call in at any time).
const MAX_INSTALLS: usize = 256;

static STATES: [OnceLock<State>; MAX_INSTALLS] = [const { OnceLock::new() }; MAX_INSTALLS];
static NEXT: AtomicUsize = AtomicUsize::new(0);
static CURRENT: AtomicUsize = AtomicUsize::new(usize::MAX);
static BUSY: AtomicBool = AtomicBool::new(false);

fn claim_slot() -> Result<usize> {
    if BUSY.swap(true, Ordering::AcqRel) {
        return Err(Error::Busy("an interception"));
    }
    let slot = NEXT.fetch_add(1, Ordering::AcqRel);
    if slot >= MAX_INSTALLS {
        BUSY.store(false, Ordering::Release);
        return Err(Error::Unavailable(format!(
            "more than {MAX_INSTALLS} interceptions in one process"
        )));
    }
    Ok(slot)
}

/// One chunk of [`MethodTable`].
type MethodChunk = Box<[OnceLock<Arc<InterceptedMethod>>]>;

/// Method ids to methods, without a lock for readers: chunks of 1024, made as needed.
struct MethodTable {
    chunks: Box<[OnceLock<MethodChunk>]>,
    len: AtomicUsize,
}

const CHUNK: usize = 1024;

impl Default for MethodTable {
    fn default() -> Self {
        MethodTable {
            chunks: (0..CHUNK).map(|_| OnceLock::new()).collect(),
            len: AtomicUsize::new(0),
        }
    }
}

impl MethodTable {
    fn get(&self, id: u32) -> Option<&Arc<InterceptedMethod>> {
        let id = id as usize;
        self.chunks.get(id / CHUNK)?.get()?.get(id % CHUNK)?.get()
    }

    fn set(&self, method: InterceptedMethod) -> bool {
        let id = method.id as usize;
        let Some(chunk) = self.chunks.get(id / CHUNK) else {
            return false;
        };
        let chunk = chunk.get_or_init(|| (0..CHUNK).map(|_| OnceLock::new()).collect());
        let _ = chunk[id % CHUNK].set(Arc::new(method));
        self.len.fetch_max(id + 1, Ordering::AcqRel);
        true
    }

    fn all(&self) -> Vec<Arc<InterceptedMethod>> {
        (0..self.len.load(Ordering::Acquire) as u32)
            .filter_map(|id| self.get(id).cloned())
            .collect()
    }
}

struct State {
    patterns: Vec<MethodPattern>,
    on_entry: Option<Box<EntryFn>>,
    on_exit: Option<Box<ExitFn>>,
    methods: MethodTable,
    ids: Mutex<HashMap<(String, String, String), u32>>,
    /// Internal names of the classes instrumented.
    patched: Mutex<HashSet<String>>,
    failures: Mutex<Vec<(String, String)>>,
    active: AtomicBool,
}

impl State {
    fn fail(&self, class: &str, why: String) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if failures.len() < 10_000 {
            failures.push((java_name_of(class), why));
        }
    }

    /// The class file load hook: the class with probes in its matching methods, or `None`.
    fn transform(&self, load: &ClassFileLoad<'_>) -> Option<Vec<u8>> {
        if !self.active.load(Ordering::Acquire) {
            return None;
        }
        let name = load.name?;
        if name == HOOKS_CLASS || !self.patterns.iter().any(|p| p.matches_class(name)) {
            return None;
        }
        let mut options = ProbeOptions::new(ProbeKind::EntryExit);
        options.hooks = Hooks {
            class: HOOKS_CLASS.to_owned(),
            alloc_class: HOOKS_CLASS.to_owned(),
            ..Hooks::default()
        };
        let mut select = |m: &MethodSite<'_>| self.method_id(m);
        match instrument(load.bytes, &options, &mut select) {
            Ok(out) => {
                for m in out.methods.iter().filter(|m| m.result.is_err()) {
                    if let Err(why) = &m.result {
                        self.fail(name, format!("{}{}: {why}", m.name, m.descriptor));
                    }
                }
                let bytes = out.bytes?;
                self.patched
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(name.to_owned());
                Some(bytes)
            }
            Err(e) => {
                self.fail(name, e.to_string());
                None
            }
        }
    }

    fn method_id(&self, m: &MethodSite<'_>) -> Option<u32> {
        const ABSTRACT_OR_NATIVE: u16 = 0x0400 | 0x0100;
        if m.access & ABSTRACT_OR_NATIVE != 0
            || !self
                .patterns
                .iter()
                .any(|p| p.matches(m.class, m.name, m.descriptor))
        {
            return None;
        }
        let key = (
            m.class.to_owned(),
            m.name.to_owned(),
            m.descriptor.to_owned(),
        );
        let mut ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&id) = ids.get(&key) {
            return Some(id);
        }
        let id = ids.len() as u32;
        let method = InterceptedMethod {
            id,
            class: java_name_of(m.class),
            name: m.name.to_owned(),
            descriptor: m.descriptor.to_owned(),
        };
        if !self.methods.set(method) {
            return None;
        }
        ids.insert(key, id);
        Some(id)
    }
}

thread_local! {
    /// Set while this thread runs a callback: intercepted calls it makes are not reported.
    static IN_CALLBACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// What a probe reports, from the hooks' natives.
pub(crate) enum Probe {
    Enter,
    Exit(Exit),
}

/// A probe's call: finds the method and runs the callback (not reentrantly).
pub(crate) fn on_probe(env: &JniEnv<'_>, id: i32, probe: Probe) {
    let current = CURRENT.load(Ordering::Acquire);
    let Some(state) = STATES.get(current).and_then(OnceLock::get) else {
        return;
    };
    if !state.active.load(Ordering::Relaxed) || id < 0 {
        return;
    }
    let Some(method) = state.methods.get(id as u32) else {
        return;
    };
    if IN_CALLBACK.with(|c| c.replace(true)) {
        return;
    }
    match probe {
        Probe::Enter => {
            if let Some(f) = &state.on_entry {
                f(env, method)
            }
        }
        Probe::Exit(exit) => {
            if let Some(f) = &state.on_exit {
                f(env, method, exit)
            }
        }
    }
    IN_CALLBACK.with(|c| c.set(false));
}
