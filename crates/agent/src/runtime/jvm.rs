//! The agent's JVMTI environment: capabilities, event callbacks, the bootstrap hooks class and
//! module readability, virtual-thread events, and what JVMTI says of threads. The callbacks are
//! the FFI layer's ([`crate::ffi::events`]), instantiated for the runtime's handler
//! ([`crate::runtime::events`]); each runs under `ffi_guard` and leaves the JVM as it found it
//! on failure.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use ferrofluid_jvmti::{sys, Class, GlobalRef, JavaVm, JniEnv, Jvmti, JvmtiCell, Object};

use crate::engine::{Granted, RUNTIME_EVENTS};
use crate::ffi::{events, natives};
use crate::runtime::events::Events;

/// The agent's hold on the JVM.
struct Jvm {
    /// The live environment; empty while dormant.
    jvmti: JvmtiCell,
    /// The JVM, with the environment.
    vm: Mutex<Option<JavaVm>>,
    /// The capabilities the engines asked for that the JVM granted this environment.
    granted: Mutex<Option<Granted>>,
    /// The virtual-thread mount and unmount extension events (their indices), while the agent
    /// follows virtual threads.
    virtual_threads: Mutex<Option<(i32, i32)>>,
    /// The hooks class's module (the bootstrap loader's unnamed module), once known. Never
    /// deleted: the hooks class lives as long as the JVM, and so does its module.
    hooks_module: OnceLock<GlobalRef>,
}

// Process-wide: JVMTI callbacks, JNI wrappers and the probes' upcalls carry no user data, and
// need the environment.
static JVM: Jvm = Jvm {
    jvmti: JvmtiCell::new(),
    vm: Mutex::new(None),
    granted: Mutex::new(None),
    virtual_threads: Mutex::new(None),
    hooks_module: OnceLock::new(),
};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Internal name of the hooks class.
pub const HOOKS_CLASS: &str = "ferrofluid/Hooks";

const MOUNT_EVENT: &std::ffi::CStr = c"com.sun.hotspot.events.VirtualThreadMount";
const UNMOUNT_EVENT: &std::ffi::CStr = c"com.sun.hotspot.events.VirtualThreadUnmount";

/// The live environment (cleared before disposal), if any.
pub fn jvmti() -> Option<Jvmti> {
    JVM.jvmti.get()
}

/// The JVM the agent runs in, while it is not dormant.
pub fn java_vm() -> Option<JavaVm> {
    *lock(&JVM.vm)
}

/// The capabilities the JVM granted the engines, once asked (`None` before: no JVM).
pub fn granted() -> Option<Granted> {
    *lock(&JVM.granted)
}

/// Remembers the capabilities the JVM granted this environment.
pub fn set_granted(granted: Granted) {
    *lock(&JVM.granted) = Some(granted);
}

/// Takes the runtime's capabilities and installs the callbacks. The engines' capabilities are
/// taken by `engine::take_capabilities`; events are enabled by [`enable_events`] and, for a
/// session, by its engine.
pub fn setup(vm: JavaVm, jvmti: Jvmti) -> ferrofluid_jvmti::Result<()> {
    // The class bytes cache sees every class the JVM loads or retransforms.
    let mut caps = sys::jvmtiCapabilities::default();
    caps.set_can_generate_all_class_hook_events(1);
    jvmti.add_capabilities(&caps)?;
    let callbacks = events::event_callbacks::<Events>();
    jvmti.set_event_callbacks(&callbacks)?;
    setup_virtual_threads(jvmti, &callbacks);
    JVM.jvmti.set(Some(jvmti));
    *lock(&JVM.vm) = Some(vm);
    Ok(())
}

/// Takes `can_support_virtual_threads` if this JVM offers it (JDK 21+) and installs `base`
/// with the virtual-thread callbacks. On an older JVM it does nothing: the callbacks are
/// `base` as installed already.
fn setup_virtual_threads(jvmti: Jvmti, base: &sys::jvmtiEventCallbacks) {
    let offered = jvmti
        .potential_capabilities()
        .map(|c| ferrofluid_jvmti::can_support_virtual_threads(&c))
        .unwrap_or(false);
    if !offered {
        return;
    }
    if let Err(e) = jvmti.add_capabilities(&ferrofluid_jvmti::virtual_threads_capability()) {
        log::warn!("virtual threads: {e}; their profiles will be inexact");
        return;
    }
    let (mount, unmount) = match (
        jvmti.extension_event_index(MOUNT_EVENT),
        jvmti.extension_event_index(UNMOUNT_EVENT),
    ) {
        (Ok(Some(m)), Ok(Some(u))) => (m, u),
        _ => {
            log::warn!("virtual threads: no mount/unmount events; their profiles will be inexact");
            return;
        }
    };
    let callbacks = events::virtual_thread_callbacks::<Events>(base);
    if let Err(e) = jvmti.set_event_callbacks_21(&callbacks) {
        log::warn!("virtual threads: {e}; their profiles will be inexact");
        return;
    }
    *lock(&JVM.virtual_threads) = Some((mount, unmount));
    log::info!("virtual threads: followed across carriers");
}

/// Enables [`RUNTIME_EVENTS`] (and `VMInit`, at load), and the virtual-thread events.
pub fn enable_events(jvmti: Jvmti, vm_init: bool) -> ferrofluid_jvmti::Result<()> {
    for e in RUNTIME_EVENTS {
        jvmti.set_event_notification_mode(true, e)?;
    }
    if vm_init {
        jvmti.set_event_notification_mode(true, sys::JVMTI_EVENT_VM_INIT)?;
    }
    enable_virtual_thread_events(jvmti);
    Ok(())
}

/// Enables the virtual-thread events (if [`setup`] took them).
fn enable_virtual_thread_events(jvmti: Jvmti) {
    let Some((mount, unmount)) = *lock(&JVM.virtual_threads) else {
        return;
    };
    crate::probe::vthread::new_epoch();
    // HotSpot posts an extension event once it has a callback and is enabled by its index.
    let result = (|| {
        jvmti.set_extension_thread_event(mount, Some(events::mount_callback::<Events>()))?;
        jvmti.set_event_notification_mode(true, mount as sys::jvmtiEvent)?;
        jvmti.set_extension_thread_event(unmount, Some(events::unmount_callback::<Events>()))?;
        jvmti.set_event_notification_mode(true, unmount as sys::jvmtiEvent)?;
        jvmti.set_event_notification_mode(true, ferrofluid_jvmti::EVENT_VIRTUAL_THREAD_START)?;
        jvmti.set_event_notification_mode(true, ferrofluid_jvmti::EVENT_VIRTUAL_THREAD_END)
    })();
    if let Err(e) = result {
        log::warn!("virtual threads: {e}; their profiles will be inexact");
    }
}

/// Turns the class file load hook on or off. The runtime keeps it on (the class bytes cache);
/// a session that changes no class turns it off while it runs: with the hook on, HotSpot reads
/// the bytes of every class it maps from the shared archive to post it. Classes loaded
/// meanwhile are unknown to a later session, which retransforms them to see their bytes.
pub fn class_hook(jvmti: Jvmti, on: bool) {
    if !on {
        log::info!("class file load hook off while this session runs (it changes no class)");
    }
    if let Err(e) = jvmti.set_event_notification_mode(on, sys::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK) {
        log::warn!(
            "class file load hook {}: {e}",
            if on { "on" } else { "off" }
        );
    }
}

/// Disables every event and forgets the environment (before it is disposed).
pub fn disable_events(jvmti: Jvmti) {
    disable_virtual_thread_events(jvmti);
    for e in RUNTIME_EVENTS.into_iter().chain([sys::JVMTI_EVENT_VM_INIT]) {
        let _ = jvmti.set_event_notification_mode(false, e);
    }
}

/// Disables the virtual-thread events (the environment is about to be disposed).
fn disable_virtual_thread_events(jvmti: Jvmti) {
    let Some((mount, unmount)) = lock(&JVM.virtual_threads).take() else {
        return;
    };
    for index in [mount, unmount] {
        let _ = jvmti.set_event_notification_mode(false, index as sys::jvmtiEvent);
        let _ = jvmti.set_extension_thread_event(index, None);
    }
    let _ = jvmti.set_event_notification_mode(false, ferrofluid_jvmti::EVENT_VIRTUAL_THREAD_START);
    let _ = jvmti.set_event_notification_mode(false, ferrofluid_jvmti::EVENT_VIRTUAL_THREAD_END);
    // Their thread-local storage goes with the environment.
    crate::probe::vthread::forget_parked();
}

pub fn forget_env() {
    JVM.jvmti.set(None);
    *lock(&JVM.vm) = None;
}

/// Defines `ferrofluid/Hooks` in the bootstrap loader (or finds it, defined by an earlier attach of
/// this library), binds its natives, and makes every named module read its module. Call only when
/// nothing can fail afterwards: from here on probes may call into this library.
pub fn install_hooks(jvmti: Jvmti, env: &JniEnv<'_>) -> Result<(), String> {
    let class = match env.find_class(HOOKS_CLASS) {
        Ok(c) => c,
        Err(_) => {
            let bytes = ferrofluid_classfile::hooks_class(&ferrofluid_classfile::Hooks::default());
            env.define_class(HOOKS_CLASS, None, &bytes)
                .map_err(|e| format!("defining {HOOKS_CLASS}: {e}"))?
        }
    };
    let gated = env
        .static_method_exists(class, c"enter0", c"(I)V")
        .unwrap_or(false);
    if !gated {
        log::info!("{HOOKS_CLASS} was defined by an older agent: every probe makes a JNI call");
    }
    let receiver_gated = env
        .static_method_exists(class, c"receiver0", c"(Ljava/lang/Object;I)V")
        .unwrap_or(false);
    let blocks_gated = env
        .static_method_exists(class, c"exitBlocks0", c"(II)V")
        .unwrap_or(false);
    natives::register_hooks::<crate::engine::Dispatch, crate::runtime::natives::Sites>(
        env,
        class,
        gated,
        receiver_gated,
        blocks_gated,
    )
    .map_err(|e| format!("binding {HOOKS_CLASS} natives: {e}"))?;
    crate::probe::site_flags::install(env, class);
    if JVM.hooks_module.get().is_none() {
        let module = env.module_of(class).map_err(|e| e.to_string())?;
        let global = env.new_global(module);
        env.delete_local_ref(module);
        let global = global.map_err(|e| e.to_string())?;
        // Set once: install_hooks runs on one thread at a time (VMInit, or attach).
        if let Err(extra) = JVM.hooks_module.set(global) {
            extra.delete(env);
        }
    }
    env.delete_local_ref(class.as_object());
    read_hooks_module_all(jvmti, env);
    Ok(())
}

fn hooks_module() -> Option<Object<'static>> {
    JVM.hooks_module.get().map(GlobalRef::as_local)
}

/// Every module of the VM reads the hooks' module (idempotent; new modules need another call).
pub fn read_hooks_module_all(jvmti: Jvmti, env: &JniEnv<'_>) {
    let Some(hooks) = hooks_module() else {
        return;
    };
    match jvmti.all_modules(env) {
        Ok(modules) => {
            for &m in modules.iter() {
                if let Err(e) = jvmti.add_module_reads(m, hooks) {
                    log::warn!("AddModuleReads: {e}");
                }
                env.delete_local_ref(m);
            }
        }
        Err(e) => log::warn!("GetAllModules: {e}"),
    }
}

/// The module of `class` reads the hooks' module.
pub fn read_hooks_module(jvmti: Jvmti, env: &JniEnv<'_>, class: Class<'_>) {
    let Some(hooks) = hooks_module() else {
        return;
    };
    if let Ok(module) = env.module_of(class) {
        if let Err(e) = jvmti.add_module_reads(module, hooks) {
            log::warn!("AddModuleReads: {e}");
        }
        env.delete_local_ref(module);
    }
}

/// The Java id (`Thread.getId()`, jcmd's `#N`) and name of the current thread (hooks ask once
/// per thread); either `None` where it could not be read.
pub fn thread_identity(env: &JniEnv<'_>) -> (Option<u64>, Option<String>) {
    let Some(jvmti) = jvmti() else {
        return (None, None);
    };
    let Ok(thread) = jvmti.current_thread(env) else {
        return (None, None);
    };
    let name = jvmti.thread_info(env, thread).ok().map(|i| i.name);
    let id = java_thread_id(env, thread);
    env.delete_local_ref(thread);
    (id, name)
}

/// `Thread.getId()` of `thread`, read from its `tid` field (no Java code runs: the method could
/// carry probes).
fn java_thread_id(env: &JniEnv<'_>, thread: Object<'_>) -> Option<u64> {
    match env.long_field(thread, c"tid") {
        Ok(id) if id > 0 => Some(id as u64),
        Ok(_) => None,
        Err(e) => {
            log::debug!("reading a thread's id: {e}");
            None
        }
    }
}

/// Threads of `of` (Java ids) found blocked now, by Java id: how they wait ([`ferrofluid_profile::Waiting::state`])
/// and the method on top of their stack (`java.lang.Object.wait`). Waiting (`Object.wait`),
/// parked, sleeping and blocked on a monitor are JVMTI thread states; a thread running a native
/// method is blocked only in one of [`BLOCKING_NATIVES`] (a socket read is "runnable" to the
/// JVM). Virtual threads are the ones parked (unmounted) inside a root's extent
/// ([`crate::probe::vthread::parked_in_root`]): one blocked while mounted on its carrier is not seen.
/// Empty where the JVM cannot say.
pub fn blocked_threads(
    env: &JniEnv<'_>,
    of: &std::collections::HashSet<u64>,
) -> HashMap<u64, (String, String)> {
    let mut blocked = HashMap::new();
    let Some(jvmti) = jvmti() else {
        return blocked;
    };
    let threads = match jvmti.all_threads(env) {
        Ok(t) => t,
        Err(e) => {
            log::warn!("listing threads: {e}");
            return blocked;
        }
    };
    let virtuals = crate::probe::vthread::parked_in_root(env);
    for &thread in threads.iter().chain(&virtuals) {
        if let Some(id) = java_thread_id(env, thread).filter(|id| of.contains(id)) {
            if let Some(how) = blocked_thread(jvmti, env, thread) {
                blocked.insert(id, how);
            }
        }
        env.delete_local_ref(thread);
    }
    blocked
}

/// [`blocked_threads`] read on the calling thread attached to the JVM; empty while dormant.
pub fn blocked_threads_now(of: &std::collections::HashSet<u64>) -> HashMap<u64, (String, String)> {
    let Some(vm) = java_vm() else {
        return HashMap::new();
    };
    vm.with_attached_thread("ferrofluid-snapshot", |env| blocked_threads(env, of))
        .unwrap_or_else(|e| {
            log::warn!("reading thread states: {e}");
            HashMap::new()
        })
}

/// Native methods a thread waits in while the JVM calls it runnable: (class, method prefix).
const BLOCKING_NATIVES: &[(&str, &str)] = &[
    ("java/lang/ref/Reference", "waitForReferencePendingList"),
    ("sun/nio/ch/EPoll", "wait"),
    ("sun/nio/ch/Net", "poll"),
    ("sun/nio/ch/Net", "accept"),
    ("sun/nio/ch/Net", "connect"),
    ("sun/nio/ch/NioSocketImpl", "park"),
    ("sun/nio/ch/SocketDispatcher", "read"),
    ("sun/nio/ch/DatagramDispatcher", "read"),
    ("sun/nio/ch/DatagramChannelImpl", "receive"),
    ("sun/nio/ch/ServerSocketChannelImpl", "accept"),
    ("java/net/SocketInputStream", "socketRead"),
    ("java/net/PlainSocketImpl", "socketAccept"),
    ("java/io/FileInputStream", "read"),
    ("java/lang/ProcessHandleImpl", "waitForProcessExit"),
    ("java/lang/ProcessImpl", "waitForProcessExit"),
];

fn blocked_thread(jvmti: Jvmti, env: &JniEnv<'_>, thread: Object<'_>) -> Option<(String, String)> {
    let state = jvmti.thread_state(thread).ok()? as u32;
    let how = if state & sys::JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER != 0 {
        "blocked"
    } else if state & sys::JVMTI_THREAD_STATE_SLEEPING != 0 {
        "sleeping"
    } else if state & sys::JVMTI_THREAD_STATE_PARKED != 0 {
        "parked"
    } else if state & sys::JVMTI_THREAD_STATE_WAITING != 0 {
        "waiting"
    } else if state & sys::JVMTI_THREAD_STATE_IN_NATIVE != 0 {
        "native"
    } else {
        return None;
    };
    let method = jvmti.top_frame(thread).ok()??;
    let name = jvmti.method_name(method).ok()?;
    let class = jvmti.method_class_name(env, method).ok()?;
    if how == "native"
        && !BLOCKING_NATIVES
            .iter()
            .any(|(c, m)| *c == class && name.name.starts_with(m))
    {
        return None;
    }
    Some((
        how.to_owned(),
        format!("{}.{}", class.replace('/', "."), name.name),
    ))
}
