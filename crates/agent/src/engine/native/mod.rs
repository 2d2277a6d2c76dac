//! The `native` engine: how much of each thread's time goes to native code and how much to
//! bytecode, per native method with its calls and its JNI upcalls (IPA; docs/modes/native.md,
//! docs/decisions/0055-native-mode.md).
//!
//! Bytecode → native: every native method of the classes the load options select is wrapped as
//! its class first loads ([`wrap`]), from the primordial phase on: a Java method of the same name
//! calls the hooks class around the renamed native, and the hooks call [`probes`] while a
//! session collects. Native → bytecode: the JNI `Call*Method*` wrappers time each upcall as a
//! frame of the Java method it calls. Both are events in the thread's ring; the collector builds
//! the trees, where a native frame's self time is native time and the rest is bytecode.
//!
//! Wrappers can be added only as a class first loads (a retransformation may not add methods):
//! from the JVM's start (`-agentpath`, `ferrofluid run`) every class is wrapped; an `attach`
//! ([`Engine::prepare`]) wraps the classes loaded after it and lists the natives of those loaded
//! before as not measured.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{OnceLock, RwLock};

use ferrofluid_classfile::ProbeKind;
use ferrofluid_jvmti::{sys, GlobalClass, JniEnv, Jvmti, MethodId};
use ferrofluid_profile::native::{reason, NativeSummary, NotMeasured, UPCALLS};
use ferrofluid_profile::{MethodInfo, Mode, NodeId, Profile, ThreadProfile};
use ferrofluid_protocol::AgentOptions;
use ferrofluid_subgraph::PlanConfig;

use crate::engine::{
    Capability, Context, Engine, EngineError, EngineSession, Granted, Instrumentation, JvmEvent,
    MethodName, Needs, Selection, Units,
};
use crate::probe::collector;
use crate::probe::ring::UNKNOWN_JAVA_ID;
use crate::probe::thread::SWITCHES;

mod alive;
mod calibrate;
#[allow(unsafe_code)]
mod ffi;
mod probes;
pub mod wrap;

/// The engine's state over the JVM's life: the wrappers outlive every session.
struct State {
    wrapping: wrap::Wrapping,
    /// The agent's load set the prefix up: sessions may run.
    loaded: AtomicBool,
    /// The hooks class, once defined.
    hooks: OnceLock<GlobalClass>,
    /// `libjava`, where the boot classes' natives are.
    libjava: OnceLock<ffi::Libjava>,
    /// Upcall targets: `jmethodID` -> id (`None`: a wrapped native's wrapper).
    targets: RwLock<Targets>,
    /// Upcalls made outside every measured native frame, this recording.
    unattributed: AtomicU64,
    /// The session has roots: only transitions inside a root's extent are recorded.
    in_roots: AtomicBool,
}

// Process-wide: the class file load hook wraps natives from the primordial phase on, before any
// session exists, and the wrappers with their ids stay for the JVM's life; the JVM's callbacks
// and the hooks' natives carry no user data.
static STATE: State = State {
    wrapping: wrap::Wrapping::new(),
    loaded: AtomicBool::new(false),
    hooks: OnceLock::new(),
    libjava: OnceLock::new(),
    targets: RwLock::new(None),
    unattributed: AtomicU64::new(0),
    in_roots: AtomicBool::new(false),
};

/// The `native` engine.
pub struct Native;

impl Engine for Native {
    fn mode(&self) -> Mode {
        Mode::Native
    }

    fn units(&self) -> Units {
        Units::Nanoseconds
    }

    fn needs(&self) -> Needs {
        Needs {
            capabilities: &[],
            // Checked at load ([`at_load`]): without them the engine is not ready.
            // Other threads' CPU clocks, for `cpu`: without it their CPU time is their trees'.
            // The roots' probes, put in by retransforming their classes.
            optional: &[
                Capability::NativePrefix,
                Capability::EarlyStart,
                Capability::EarlyClassHooks,
                Capability::ThreadCpuTime,
                Capability::RetransformClasses,
            ],
            events: &[
                JvmEvent::ClassFileLoadHook,
                JvmEvent::ClassPrepare,
                JvmEvent::ThreadStart,
                JvmEvent::ThreadEnd,
            ],
        }
    }

    fn plan(&self, options: &AgentOptions) -> PlanConfig {
        PlanConfig {
            roots: options.roots.clone(),
            scheme: options.scheme,
            filter: options.filter.clone(),
            skip_trivial: false,
            adaptive: false,
        }
    }

    fn prepare(&self, jvmti: Jvmti, env: &JniEnv<'_>, options: &AgentOptions) -> Result<(), EngineError> {
        if STATE.loaded.load(Ordering::SeqCst) {
            return Ok(());
        }
        at_attach(jvmti, env, options)
    }

    fn open(&self, _ctx: &dyn Context, options: &AgentOptions) -> Box<dyn EngineSession> {
        SWITCHES.cpu.store(options.cpu, Ordering::SeqCst);
        Box::new(NativeSession {
            cpu: options.cpu,
            roots: !options.roots.is_empty(),
            alive: alive::Lifetimes::new(options.cpu),
            jvmti: OnceLock::new(),
        })
    }

    // The roots' entry and exit probes (and an earlier session's leftovers): recorded as the
    // call recorder does, which marks each thread's extent inside the roots.
    #[inline(always)]
    fn enter(env: *mut sys::JNIEnv, id: i32, start: u64) {
        crate::probe::recorder::enter(env, id, start)
    }

    #[inline(always)]
    fn exit(env: *mut sys::JNIEnv, id: i32, start: u64) {
        crate::probe::recorder::exit(env, id, start)
    }
}

/// At `Agent_OnLoad` for a `native` profile: the prefix is set and wrapping starts, the hooks
/// class is defined at the early VMStart ([`vm_start`]).
pub fn at_load(jvmti: Jvmti, options: &AgentOptions, granted: Granted) -> Result<(), EngineError> {
    for capability in [
        Capability::NativePrefix,
        Capability::EarlyStart,
        Capability::EarlyClassHooks,
    ] {
        if !granted.has(capability) {
            return Err(EngineError::Capability {
                mode: Mode::Native,
                capability,
            });
        }
    }
    let prefix = jvmti.set_native_method_prefix(wrap::PREFIX);
    let vm_start = jvmti.set_event_notification_mode(true, sys::JVMTI_EVENT_VM_START);
    if let Err(e) = prefix.and(vm_start) {
        log::error!("native: {e}");
        return Err(EngineError::AtLoadOnly(Mode::Native, e.to_string()));
    }
    let home = jvmti.system_property("java.home").unwrap_or_default();
    let _ = STATE.libjava.set(ffi::Libjava::of(&home));
    STATE.wrapping.start(options.filter.clone());
    STATE.loaded.store(true, Ordering::SeqCst);
    log::info!("native: wrapping native methods as classes load (prefix {})", wrap::PREFIX);
    Ok(())
}

/// At an attach (the agent was not loaded with the JVM): the native-method prefix is set, the
/// hooks class defined, and wrapping starts for the classes loaded from now on (this session's
/// filter); the natives of the classes loaded before cannot get wrappers (a retransformation may
/// not add methods) and are listed as not measured (`loaded-before-agent`). Wrapping stays on for
/// the JVM's life, as at a load.
fn at_attach(jvmti: Jvmti, env: &JniEnv<'_>, options: &AgentOptions) -> Result<(), EngineError> {
    let refused = |why: String| {
        log::warn!("native: {why}");
        EngineError::AtLoadOnly(Mode::Native, why)
    };
    Capability::NativePrefix
        .add(jvmti)
        .map_err(|e| refused(format!("the native-method prefix capability: {e}")))?;
    jvmti
        .set_native_method_prefix(wrap::PREFIX)
        .map_err(|e| refused(format!("setting the native-method prefix: {e}")))?;
    if STATE.hooks.get().is_none() {
        let hooks = ffi::define_hooks(env).map_err(refused)?;
        let _ = STATE.hooks.set(hooks);
    }
    // Wrapping first, then the listing: a class loaded in between is wrapped, not listed.
    STATE.wrapping.start(options.filter.clone());
    STATE.loaded.store(true, Ordering::SeqCst);
    let before = loaded_natives(jvmti, env);
    let listed = {
        let mut wrapped = STATE.wrapping.wrapped();
        let mut listed = 0;
        for method in before {
            if !wrapped.is_wrapped(&method) {
                wrapped.listed(&method.0, &method.1, &method.2, reason::LOADED_BEFORE_AGENT, None);
                listed += 1;
            }
        }
        listed
    };
    log::info!(
        "native: attached: {listed} natives of classes loaded before are not measured; classes loaded from now on are wrapped (prefix {})",
        wrap::PREFIX
    );
    Ok(())
}

/// The natives of the loaded classes wrapping would select: internal class name, name,
/// descriptor.
fn loaded_natives(jvmti: Jvmti, env: &JniEnv<'_>) -> Vec<MethodName> {
    let classes = match jvmti.loaded_classes(env) {
        Ok(c) => c,
        Err(e) => {
            log::warn!("native: listing the loaded classes: {e}");
            return Vec::new();
        }
    };
    let mut natives = Vec::new();
    for &class in classes.iter() {
        let name = jvmti
            .class_signature(class)
            .ok()
            .and_then(|(sig, _)| Some(sig.strip_prefix('L')?.strip_suffix(';')?.to_owned()));
        if let Some(name) = name.filter(|n| STATE.wrapping.selects(n)) {
            for &method in jvmti.class_methods(class).iter().flat_map(|m| m.iter()) {
                let native = jvmti.method_modifiers(method).is_ok_and(|m| m & 0x0100 != 0);
                if let Some(m) = native.then(|| jvmti.method_name(method).ok()).flatten() {
                    natives.push((name.clone(), m.name, m.signature));
                }
            }
        }
        env.delete_local_ref(class.as_object());
    }
    natives
}

/// The early VMStart: the hooks class is defined before any wrapper can run.
pub fn vm_start(jvmti: Jvmti, env: &JniEnv<'_>) {
    if !STATE.loaded.load(Ordering::SeqCst) || STATE.hooks.get().is_some() {
        return;
    }
    let _ = jvmti.set_event_notification_mode(false, sys::JVMTI_EVENT_VM_START);
    match ffi::define_hooks(env) {
        Ok(hooks) => {
            let _ = STATE.hooks.set(hooks);
        }
        Err(e) => {
            // No wrapper may run without it: stop wrapping (classes wrapped already would fail
            // at their first native call, so none may have been).
            STATE.wrapping.on.store(false, Ordering::SeqCst);
            log::error!("native: {e}; no native method is wrapped");
        }
    }
}

/// The bytes of a class with its natives wrapped ([`wrap::Wrapping::transform`]). Before the
/// JVM is live, a boot class's natives that `libjava` exports under their JNI names stay
/// unwrapped: HotSpot would resolve the prefixed name through `ClassLoader.findNative`, which
/// cannot run yet, and binding them for it logs a warning per native on stdout
/// (docs/decisions/0055-native-mode.md, 6). Natives bound by `registerNatives` (`Thread.sleep`,
/// `Object.wait`) and every class loaded later are wrapped.
pub fn transform(boot: bool, name: &str, bytes: &[u8]) -> Option<Vec<u8>> {
    if !STATE.wrapping.on.load(Ordering::Relaxed) {
        return None;
    }
    let early = boot
        && crate::probe::upcalls::upcalls()
            .and_then(|u| u.jvmti())
            .and_then(|j| j.phase().ok())
            .is_none_or(|p| p != sys::JVMTI_PHASE_LIVE);
    let libjava = STATE.libjava.get().filter(|_| early);
    let by_name = |class: &str, method: &str, descriptor: &str| {
        libjava.is_some_and(|l| l.function(class, method, descriptor).is_some())
    };
    STATE.wrapping.transform(boot, name, bytes, &by_name)
}

/// Whether natives are wrapped as their classes load (the agent was loaded for `native`).
pub fn transforms_at_load() -> bool {
    STATE.wrapping.on.load(Ordering::Relaxed)
}

/// The name of a wrapped native or upcall target.
pub fn method_name(id: u32) -> Option<MethodName> {
    if id < wrap::FIRST_ID {
        return None;
    }
    STATE.wrapping.wrapped().name(id).cloned()
}

/// The id of the Java method an upcall calls (handed out on its first call); `None` for a
/// wrapped native's wrapper (a JNI call of it opens that native's frame itself) or a method
/// JVMTI cannot name.
fn upcall_target(env: &JniEnv<'_>, mid: MethodId) -> Option<u32> {
    let key = mid.as_raw() as usize;
    if let Some(&id) = read_targets().as_ref().and_then(|t| t.get(&key)) {
        return id;
    }
    let jvmti = crate::probe::upcalls::upcalls()?.jvmti()?;
    let name = method_of(jvmti, env, mid)?;
    let id = {
        let mut wrapped = STATE.wrapping.wrapped();
        let id = wrapped.id(name, false);
        (!wrapped.is_native(id)).then_some(id)
    };
    let mut targets = STATE.targets.write().unwrap_or_else(|p| p.into_inner());
    targets.get_or_insert_with(Default::default).insert(key, id);
    id
}

type Targets = Option<std::collections::HashMap<usize, Option<u32>>>;

fn read_targets() -> std::sync::RwLockReadGuard<'static, Targets> {
    STATE.targets.read().unwrap_or_else(|p| p.into_inner())
}

/// Internal class name, name and descriptor of `mid`.
fn method_of(jvmti: Jvmti, env: &JniEnv<'_>, mid: MethodId) -> Option<MethodName> {
    let name = jvmti.method_name(mid).ok()?;
    let class = jvmti.method_class_name(env, mid).ok()?;
    Some((class, name.name, name.signature))
}

fn unattributed_upcall() {
    STATE.unattributed.fetch_add(1, Ordering::Relaxed);
}

/// Whether this thread's transitions are recorded now: always without roots, inside a root's
/// extent with them.
#[inline]
fn records_here() -> bool {
    !STATE.in_roots.load(Ordering::Relaxed) || crate::probe::thread::in_root()
}

/// A `native` session: the hooks switched on while it collects, the upcalls timed, each
/// thread's time alive followed. With roots, the roots alone get entry and exit probes, which
/// mark each thread's extent inside them, and only what happens there is recorded: the tree of
/// each thread is rooted at the roots, their native calls in their calling contexts, the roots'
/// own time (and of the Java methods they call) bytecode.
struct NativeSession {
    cpu: bool,
    roots: bool,
    alive: alive::Lifetimes,
    /// The agent's JVMTI environment, from the start.
    jvmti: OnceLock<Jvmti>,
}

impl EngineSession for NativeSession {
    fn instruments(&self) -> Option<Instrumentation> {
        self.roots.then_some(Instrumentation {
            probes: ProbeKind::EntryExit,
            selection: Selection::Methods,
            leaves: false,
        })
    }

    fn start(&self, ctx: &dyn Context, env: &JniEnv<'_>) {
        STATE.unattributed.store(0, Ordering::SeqCst);
        STATE.in_roots.store(self.roots, Ordering::SeqCst);
        // The wrappers on before recording: the calibration times them.
        let calibration = match STATE.hooks.get() {
            Some(hooks) => match ffi::set_active(env, hooks, true) {
                Ok(()) => calibrate::calibrate(env)
                    .inspect(|c| {
                        log::info!(
                            "native: a wrapper adds {:.1} ns to a native call (half inside its frame)",
                            c.inner_ns + c.outer_ns
                        )
                    })
                    .map_err(|e| log::warn!("native: calibrating the wrappers: {e}; times are not compensated"))
                    .ok(),
                Err(e) => {
                    log::error!("native: switching the wrappers on: {e}");
                    None
                }
            },
            None => {
                log::error!("native: no hooks class: nothing is measured");
                None
            }
        };
        // The transitions cost CPU time as they cost elapsed time: one calibration for both.
        collector::start(calibration, calibration.filter(|_| self.cpu), None);
        if let Some(jvmti) = ctx.jvmti() {
            let _ = self.jvmti.set(jvmti);
            if !self.roots {
                self.alive.begin(jvmti, env);
            }
            ffi::install_upcalls(jvmti);
        }
    }

    fn stop(&self, ctx: &dyn Context) {
        // The wrappers stay, inert: one field read and a branch each.
        let (Some(vm), Some(hooks)) = (ctx.vm(), STATE.hooks.get()) else {
            return;
        };
        let off = vm.with_attached_thread("ferrofluid-native", |env| {
            if let Some(&jvmti) = self.jvmti.get() {
                self.alive.end_all(jvmti, env);
            }
            ffi::set_active(env, hooks, false)
        });
        if let Err(e) = off.map_err(|e| e.to_string()).and_then(|r| r) {
            log::warn!("native: switching the wrappers off: {e}");
        }
        if let Some(jvmti) = ctx.jvmti() {
            crate::ffi::jni_calls::uninstall(jvmti);
        }
        log::info!(
            "native: {} classes keep inert wrappers until the JVM exits",
            STATE.wrapping.wrapped().classes
        );
    }

    fn reset(&self, ctx: &dyn Context) {
        STATE.unattributed.store(0, Ordering::SeqCst);
        if self.roots {
            return;
        }
        if let (Some(vm), Some(&jvmti)) = (ctx.vm(), self.jvmti.get()) {
            let begun = vm.with_attached_thread("ferrofluid-native", |env| {
                self.alive.begin(jvmti, env);
            });
            if let Err(e) = begun {
                log::warn!("native: listing threads: {e}");
            }
        }
    }

    fn snapshot(&self, ctx: &dyn Context, profile: &mut Profile) {
        // With roots a thread's time is its roots'.
        let alive = if self.roots {
            HashMap::new()
        } else {
            let jvmti = self.jvmti.get().copied();
            ctx.vm()
                .and_then(|vm| {
                    vm.with_attached_thread("ferrofluid-native", |env| {
                        self.alive.measure(jvmti, Some(env))
                    })
                    .ok()
                })
                .unwrap_or_else(|| self.alive.measure(None, None))
        };
        native_profile(profile, self.cpu, alive);
    }

    fn thread_start(&self, env: &JniEnv<'_>) {
        if let Some(&jvmti) = self.jvmti.get().filter(|_| !self.roots) {
            self.alive.started(jvmti, env);
        }
    }

    fn thread_end(&self, env: &JniEnv<'_>) {
        if let Some(&jvmti) = self.jvmti.get().filter(|_| !self.roots) {
            self.alive.ended(jvmti, env);
        }
    }
}

/// Makes the collector's profile a native one: its mode and metrics, which methods are native
/// frames, each native frame's upcalls (its children's calls), the natives not measured, each
/// thread's time alive (`alive`, by Java id), which its thread node's time becomes: the
/// thread's own time there is its bytecode between native calls, in every view and format. A
/// thread that made no native call gets an empty tree, unless it was idle all along (the JVM's
/// own waiting threads).
fn native_profile(profile: &mut Profile, cpu: bool, mut alive: HashMap<u64, alive::Lived>) {
    profile.mode = Mode::Native;
    for t in profile.threads.iter_mut().filter(|t| !t.virtual_thread) {
        if let Some(lived) = alive.remove(&t.id) {
            t.set_alive(lived.alive);
        }
    }
    // A thread whose first native ran while its `Thread` was being built (the `DestroyJavaVM`
    // thread the launcher attaches at exit) has no Java id yet in its events: it is the one
    // followed thread of its name left unmatched.
    for t in profile.threads.iter_mut() {
        if t.virtual_thread || t.id < UNKNOWN_JAVA_ID {
            continue;
        }
        let mut named = alive.iter().filter(|(_, l)| l.name == t.name);
        if let (Some((&id, _)), None) = (named.next(), named.next()) {
            let lived = alive.remove(&id).expect("just found");
            t.id = id;
            t.set_alive(lived.alive);
        }
    }
    let mut rest: Vec<_> = alive.into_iter().filter(|(_, l)| !l.idle()).collect();
    rest.sort_by_key(|&(id, _)| id);
    for (id, lived) in rest {
        let mut thread = ThreadProfile::new(lived.name, id, ferrofluid_profile::CallTree::new());
        thread.set_alive(lived.alive);
        profile.threads.push(thread);
    }
    let cpu = cpu
        && profile
            .threads
            .iter()
            .any(|t| t.cpu_ns.is_some() || t.alive.is_some_and(|a| a.cpu_ns.is_some()));
    let (natives, not_measured, dropped) = {
        let wrapped = STATE.wrapping.wrapped();
        let names: BTreeSet<MethodInfo> = wrapped
            .natives()
            .map(|(c, m, d)| MethodInfo::from_internal(c, m, d))
            .collect();
        let natives: BTreeSet<_> = profile
            .methods
            .iter()
            .filter(|(_, info)| names.contains(info))
            .map(|(id, _)| id)
            .collect();
        let not_measured: Vec<NotMeasured> = wrapped.not_measured.clone();
        (natives, not_measured, wrapped.not_measured_dropped)
    };
    if dropped > 0 {
        log::info!("native: {dropped} more natives not measured, not listed");
    }
    profile.extra_metrics = ferrofluid_profile::native::metrics(cpu);
    let width = profile.extra_metrics.len();
    let upcalls = profile
        .extra_metrics
        .iter()
        .position(|m| m.name == UPCALLS)
        .unwrap_or(1);
    for t in &mut profile.threads {
        let tree = &mut t.tree;
        tree.widen(width);
        let ids: Vec<NodeId> = tree.ids().collect();
        for id in ids {
            let is_native = tree.node(id).method().is_some_and(|m| natives.contains(&m));
            if is_native {
                // Its upcalls' frames; a native child is one the JVM's own calls reached.
                let calls: u64 = tree
                    .node(id)
                    .children()
                    .iter()
                    .filter(|&&c| !tree.node(c).method().is_some_and(|m| natives.contains(&m)))
                    .map(|&c| tree.node(c).calls)
                    .sum();
                tree.extra_mut(id)[upcalls] = calls;
            }
        }
    }
    profile.native = Some(NativeSummary {
        natives,
        not_measured,
        unattributed_upcalls: STATE.unattributed.load(Ordering::Relaxed),
    });
    profile.set_native_metrics();
}
