//! The agent's lifecycle: started by `Agent_OnLoad`/`Agent_OnAttach`, dormant after `detach`, stopped
//! by `Agent_OnUnload`. The library stays loaded between attaches (the JVM never unloads an agent), so
//! all state lives in one global slot that is either `None` (dormant) or the running agent.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use ferrofluid_jvmti::{JavaVm, Jvmti};
use ferrofluid_profile::Mode;
use ferrofluid_protocol::{control, socket_path, AgentOptions, OptionsError, Timing};
use ferrofluid_subgraph::{ClassPattern, PlanConfig};

use crate::engine::{self, EngineError};
use crate::probe::collector;
use crate::runtime::census::{self, Census};
use crate::runtime::context::{self, Runtime};
use crate::runtime::push::{Push, PushSetupError};
use crate::runtime::{jvm, logger, private_dir, server, session, snapshot};

/// The agent's lifecycle, as the JVM's entry points drive it (`crate::ffi::entry`).
pub struct Lifecycle;

impl crate::ffi::entry::Lifecycle for Lifecycle {
    type Error = AgentError;

    fn start(vm: JavaVm, options: &str) -> Result<(), AgentError> {
        start(vm, options)
    }

    fn unload() {
        unload()
    }
}

/// Why the agent did not start.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("{0}")]
    Options(#[from] OptionsError),
    #[error("{0}")]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Jvmti(#[from] ferrofluid_jvmti::Error),
    #[error("{0}")]
    Push(#[from] PushSetupError),
    #[error("{context} {}: {source}", .path.display())]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What `status` reports that does not change while the agent runs.
#[derive(Debug, Clone)]
pub struct Info {
    pub pid: u32,
    pub vm_version: String,
    pub options: String,
}

struct Running {
    vm: JavaVm,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    collector: Option<JoinHandle<()>>,
    /// The control server's listener (a clone), to wake the server at a stop.
    listener: Option<UnixListener>,
    socket: PathBuf,
    /// The log file when it is the default one, inside the socket's directory.
    default_log: Option<PathBuf>,
    jvmti: Jvmti,
    /// Continuous profiling from the agent's own threads (`push=`).
    push: Option<Push>,
}

/// The loaded agent: running or dormant, and what outlives a detach. The library stays loaded
/// between attaches (the JVM never unloads an agent).
struct Agent {
    /// The running agent; `None` while dormant.
    state: Mutex<Option<Running>>,
    /// Held by a detach from start to end, and taken by `start`: an attach arriving while the
    /// agent is going dormant (its socket already gone) waits for it instead of starting a
    /// second agent beside the one being torn down. Never taken by class-loading callbacks.
    lifecycle: Mutex<()>,
    /// The options of the running agent (for VMInit, VMDeath and the duration timer).
    options: Mutex<Option<AgentOptions>>,
    /// When collection started by the `duration` option should stop.
    deadline: Mutex<Option<std::time::Instant>>,
    /// How many times `Agent_OnLoad`/`Agent_OnAttach` ran.
    attaches: AtomicU64,
    /// This process has set up its control directory.
    dir_of_this_process: AtomicBool,
}

// Process-wide: the JVM's entry points and callbacks carry no user data.
static AGENT: Agent = Agent {
    state: Mutex::new(None),
    lifecycle: Mutex::new(()),
    options: Mutex::new(None),
    deadline: Mutex::new(None),
    attaches: AtomicU64::new(0),
    dir_of_this_process: AtomicBool::new(false),
};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update is a single assignment: a panicking holder leaves a consistent value.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn options() -> Option<AgentOptions> {
    lock(&AGENT.options).clone()
}

/// The running agent's pushing, if its options ask for it.
fn push() -> Option<Push> {
    state().as_ref().and_then(|r| r.push.clone())
}

/// What the running agent's pushing has done, for the status.
pub fn push_status() -> Option<ferrofluid_protocol::control::PushStatus> {
    push().and_then(|p| p.status())
}

fn lifecycle() -> MutexGuard<'static, ()> {
    lock(&AGENT.lifecycle)
}

fn state() -> MutexGuard<'static, Option<Running>> {
    lock(&AGENT.state)
}

/// How many times `Agent_OnLoad`/`Agent_OnAttach` ran.
pub fn attach_count() -> u64 {
    AGENT.attaches.load(Ordering::SeqCst)
}

/// Starts the agent, or, if it is already running, leaves it as it is (a re-attach reconnects).
pub fn start(vm: JavaVm, options: &str) -> Result<(), AgentError> {
    AGENT.attaches.fetch_add(1, Ordering::SeqCst);
    let opts: AgentOptions = options.parse()?;
    // A mode without an engine is refused before anything is set up.
    engine::check(&opts)?;
    let _lifecycle = lifecycle();
    let mut slot = state();
    if let Some(running) = slot.as_ref() {
        log::info!(
            "attach #{}: agent already running at {}",
            attach_count(),
            running.socket.display()
        );
        return Ok(());
    }
    let pid = std::process::id();
    let socket = opts
        .socket
        .clone()
        .unwrap_or_else(|| control::default_socket_path(Path::new("/tmp"), pid));
    let default_log = open_log(&opts, &socket)?;
    let jvmti = vm.jvmti()?;
    // The URL, credentials and certificates are checked before anything else is set up.
    let push = Push::start(&opts, jvmti)?;
    let live = jvmti.phase()? == ferrofluid_jvmti::sys::JVMTI_PHASE_LIVE;
    context::register_upcalls();
    jvm::setup(vm, jvmti)?;
    let granted = engine::take_capabilities(jvmti, (!live).then(|| opts.mode()))?;
    jvm::set_granted(granted);
    if wants_profile(&opts) {
        if !live {
            engine::at_load(jvmti, &opts, granted)?;
        }
        // The load options' engine has what it requires, or the load fails.
        engine::select(&opts, Some(granted))?;
    }
    let info = Info {
        pid,
        vm_version: jvmti.system_property("java.vm.version").unwrap_or_default(),
        options: opts.to_string(),
    };
    let (stop, thread, listener, collector) = spawn_threads(&socket, info.clone())?;
    *lock(&AGENT.options) = Some(opts.clone());
    // From here on nothing fails the load: probes may call into this library once hooks are bound.
    if let Err(e) = jvm::enable_events(jvmti, !live) {
        log::error!("enabling events: {e}");
    }
    if live {
        go_live(vm, jvmti, wants_profile(&opts));
    }
    log::info!(
        "attach #{}: agent {} started in JVM {pid} ({}), options `{}`, control socket {}",
        attach_count(),
        env!("CARGO_PKG_VERSION"),
        info.vm_version,
        info.options,
        socket.display()
    );
    *slot = Some(Running {
        vm,
        stop,
        thread: Some(thread),
        collector: Some(collector),
        listener,
        socket,
        default_log,
        jvmti,
        push,
    });
    Ok(())
}

/// An I/O error of the agent's start, on `path`, as what it was for (`context`).
fn io_error(context: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> AgentError {
    let path = path.to_path_buf();
    move |source| AgentError::Io {
        context,
        path,
        source,
    }
}

/// Makes the control socket's private directory and opens the log (by default in it, which is
/// then returned).
fn open_log(opts: &AgentOptions, socket: &Path) -> Result<Option<PathBuf>, AgentError> {
    let dir = socket.parent().unwrap_or(Path::new("/")).to_path_buf();
    private_dir::ensure_private_dir(&dir).map_err(io_error("control directory", &dir))?;
    let default_log = opts.log.is_none().then(|| dir.join("agent.log"));
    let own = dir.join("agent.log");
    if opts.log.as_ref() != Some(&own) {
        forget_earlier_process_log(&own);
    }
    let log_path = opts.log.clone().unwrap_or_else(|| dir.join("agent.log"));
    logger::open(&log_path).map_err(io_error("log file", &log_path))?;
    Ok(default_log)
}

/// The agent's threads: their stop flag, the control server and a clone of its listener, the
/// collector.
type Threads = (
    Arc<AtomicBool>,
    JoinHandle<()>,
    Option<UnixListener>,
    JoinHandle<()>,
);

/// Binds the control socket and starts the control server and the collector.
fn spawn_threads(socket: &Path, info: Info) -> Result<Threads, AgentError> {
    // A socket left by an earlier agent of this same pid (detach removes it, a crash may not).
    let _ = std::fs::remove_file(socket);
    let listener = socket_path::bind(socket).map_err(io_error("control socket", socket))?;
    private_dir::make_owner_only(socket).map_err(io_error("control socket", socket))?;
    listener
        .set_nonblocking(true)
        .map_err(io_error("control socket", socket))?;
    let stop = Arc::new(AtomicBool::new(false));
    let wake = listener.try_clone().ok();
    let thread = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("ferrofluid-control".into())
            .spawn(move || server::serve(listener, stop, info))
            .map_err(io_error("control thread for", socket))?
    };
    crate::probe::clock::init_clock();
    let collector = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("ferrofluid-collector".into())
            .spawn(move || {
                collector::run(stop, || {
                    duration_tick();
                    if let Some(active) = context::active() {
                        active.session.tick(&Runtime::detached());
                    }
                })
            })
    };
    match collector {
        Ok(collector) => Ok((stop, thread, wake, collector)),
        Err(e) => {
            stop.store(true, Ordering::SeqCst);
            if let Some(l) = &wake {
                server::wake(l);
            }
            let _ = thread.join();
            Err(io_error("collector thread for", socket)(e))
        }
    }
}

/// Attached to a live JVM: defines the hooks class now and, if the options ask for a profile,
/// starts it on a thread of its own.
fn go_live(vm: JavaVm, jvmti: Jvmti, profile: bool) {
    match vm.jni_env() {
        Ok(env) => match jvm::install_hooks(jvmti, &env) {
            Ok(()) => {
                if profile {
                    let _ = std::thread::Builder::new()
                        .name("ferrofluid-startup".into())
                        .spawn(move || {
                            let _ = vm.with_attached_thread("ferrofluid-startup", |env| {
                                on_live(jvmti, env)
                            });
                        });
                }
            }
            Err(e) => log::error!("{e}; nothing will be instrumented"),
        },
        Err(e) => log::error!("no JNI environment on the attaching thread: {e}"),
    }
}

/// Options that ask for profiling from the start: a root, a region, a mode, an output file or
/// a backend to push to (whole program).
fn wants_profile(opts: &AgentOptions) -> bool {
    !opts.roots.is_empty()
        || !opts.region.is_empty()
        || opts.mode.is_some()
        || opts.file.is_some()
        || opts.push.url.is_some()
}

/// Starts the session `options` describe with its engine: removes the previous session's
/// probes, makes the engine the one probes reach, and instruments what it selects.
fn begin_session(
    jvmti: Jvmti,
    env: &ferrofluid_jvmti::JniEnv<'_>,
    options: &AgentOptions,
) -> Result<session::Outcome, EngineError> {
    let engine = engine::select(options, jvm::granted())?;
    engine.prepare(jvmti, env, options)?;
    // The old session's probes go before the new engine takes them.
    let _ = session::deinstrument_all(jvmti, env);
    engine::enable_events(jvmti, &*engine).map_err(|event| EngineError::Event {
        mode: engine.mode(),
        event,
    })?;
    let active = context::open(engine, env, options);
    let instrumentation = active.session.instruments();
    if instrumentation.is_none() && !engine::transforms_at_load() {
        jvm::class_hook(jvmti, false);
    }
    engine::activate(engine);
    session::set_reveal(options.reveal == ferrofluid_protocol::Reveal::Async);
    Ok(match instrumentation {
        Some(instrumentation) => {
            let mut plan = engine.plan(options);
            let left_alone = if engine.mode() == Mode::Cpu
                && options.timing == Timing::Sampled
                && !options.instrument_inlined
            {
                leave_inlined_alone(jvmti, env, &mut plan)
            } else {
                Vec::new()
            };
            session::set_left_alone(left_alone);
            session::instrument_all(jvmti, env, plan, instrumentation, active.session)
        }
        None => session::Outcome::default(),
    })
}

/// Excludes from `plan` the JDK classes the JIT inlined into much of the compiled code
/// ([`census`]), but for the classes of its roots; returns them (dotted names).
fn leave_inlined_alone(
    jvmti: Jvmti,
    env: &ferrofluid_jvmti::JniEnv<'_>,
    plan: &mut PlanConfig,
) -> Vec<String> {
    let census = match Census::take(jvmti, env) {
        Ok(census) => census,
        Err(e) => {
            log::warn!("compiled code not read ({e}): every class selected is instrumented");
            return Vec::new();
        }
    };
    let left =
        census.inlined_everywhere(|class| plan.roots.iter().any(|r| r.class().matches(class)));
    let names: Vec<String> = left
        .iter()
        .map(|(class, _)| class.replace('/', "."))
        .collect();
    let counts: Vec<String> = names
        .iter()
        .zip(&left)
        .map(|(name, (_, n))| format!("{name} ({n})"))
        .collect();
    log::info!(
        "{} compiled methods in the code cache; {} JDK classes inlined into at least {:.0}% of \
         them are not instrumented (retransforming one discards every compiled method holding \
         it){}{}",
        census.compiled,
        left.len(),
        census::SHARE * 100.0,
        if left.is_empty() { "" } else { ": " },
        counts.join(", ")
    );
    plan.filter.exclude.extend(
        names
            .iter()
            .filter_map(|name| name.parse::<ClassPattern>().ok()),
    );
    names
}

/// The JVM is live and the hooks are bound: start profiling if the options ask for it.
pub fn on_live(jvmti: Jvmti, env: &ferrofluid_jvmti::JniEnv<'_>) {
    let Some(opts) = options() else {
        return;
    };
    if !wants_profile(&opts) {
        return;
    }
    match begin_session(jvmti, env, &opts) {
        Ok(outcome) => {
            for e in &outcome.errors {
                log::warn!("instrument: {e}");
            }
        }
        Err(e) => {
            log::error!("{e}");
            return;
        }
    }
    start_collecting(env);
    if let Some(push) = push() {
        push.begin();
    }
    if let Some(d) = opts.duration {
        *lock(&AGENT.deadline) = Some(std::time::Instant::now() + d);
    }
}

/// Starts a fresh recording and lets the session's engine calibrate and start measuring, on
/// this Java thread.
fn start_collecting(env: &ferrofluid_jvmti::JniEnv<'_>) {
    collector::prepare();
    if let Some(active) = context::active() {
        active.session.start(&Runtime::on(env), env);
    }
}

/// Collector tick: ends collection when the `duration` option's time is up.
fn duration_tick() {
    let mut deadline = lock(&AGENT.deadline);
    if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
        *deadline = None;
        drop(deadline);
        log::info!("duration elapsed: collection stopped");
        finish_collection();
    }
}

/// `adaptive`: from the collector thread, attached to the JVM, drops the probes of `ids`, ends
/// the exits of `quiet` in Java, and retransforms the classes of `retransform` (methods of `ids`
/// or dropped before); returns the ids dropped.
pub fn drop_probes(ids: &[u32], quiet: &[u32], retransform: &[u32]) -> Vec<u32> {
    let Some((vm, jvmti)) = state().as_ref().map(|r| (r.vm, r.jvmti)) else {
        return Vec::new();
    };
    vm.with_attached_thread("ferrofluid-adaptive", |env| {
        session::quiet_probes(env, quiet);
        let dropped = if ids.is_empty() {
            Vec::new()
        } else {
            session::drop_probes(jvmti, env, ids)
        };
        let retransform: Vec<u32> = retransform
            .iter()
            .copied()
            .filter(|id| !ids.contains(id) || dropped.contains(id))
            .collect();
        if !retransform.is_empty() && session::drops_in_java() {
            let classes = session::retransform_dropped(jvmti, env, &retransform);
            log::info!(
                "adaptive: retransformed {classes} classes without the gates of {} dropped methods",
                retransform.len()
            );
        }
        dropped
    })
    .unwrap_or_else(|e| {
        log::warn!("adaptive: attaching to the JVM: {e}");
        Vec::new()
    })
}

/// Stops collecting and writes the `file` option's profile, if any.
pub fn finish_collection() {
    let was = collector::collecting();
    collector::stop();
    if let Some(active) = context::active() {
        active.session.stop(&Runtime::detached());
    }
    session::log_precision();
    if let (true, Some(file)) = (was, options().and_then(|o| o.file)) {
        if let Err(e) = snapshot::write_file(&file) {
            log::error!("writing the profile: {e}");
        }
    }
    end_push(push(), was);
}

/// Ends the agent's pushing with the recording's last snapshot when `collected` (collection
/// ran until now), taken on this thread as `file=` is.
fn end_push(push: Option<Push>, collected: bool) {
    if let Some(push) = push {
        let last = collected.then(snapshot::snapshot).flatten();
        push.end(last.map(|(profile, _)| profile));
    }
}

/// VMDeath: the profile of a run started with `file=` is written now, the tool that owns the
/// session gets what was collected, and the control directory goes.
pub fn on_vm_death() {
    finish_collection();
    crate::runtime::owner::vm_death(|| match snapshot::json() {
        Ok(profile) => control::Response::Exited { profile },
        Err(message) => control::Response::Error { message },
    });
    if let Some(running) = state().as_ref() {
        remove_control_dir(running);
    }
}

/// Makes the agent dormant: no socket, no events, no capabilities. Called by the control thread
/// itself when the tool asks to detach (so it does not join itself).
pub fn detach() {
    let _lifecycle = lifecycle();
    let Some(mut running) = state().take() else {
        return;
    };
    running.thread = None; // the caller is that thread; it ends after replying
    end_push(running.push.take(), collector::collecting());
    shut_down(&running);
    if let Some(c) = running.collector.take() {
        c.thread().unpark();
        let _ = c.join();
    }
    dispose_env(&running);
    crate::runtime::owner::clear();
    session::release_freed_memory();
    #[cfg(feature = "alloc-count")]
    {
        let (bytes, blocks) = crate::ffi::alloc_count::live();
        log::info!("agent heap: {bytes} bytes live in {blocks} blocks");
    }
    log::info!("detached; agent dormant");
    remove_control_dir(&running);
}

/// Stops the agent at JVM shutdown (`Agent_OnUnload`): the control thread is joined.
pub fn unload() {
    let Some(mut running) = state().take() else {
        return;
    };
    let thread = running.thread.take();
    end_push(running.push.take(), false);
    if let Some(c) = running.collector.take() {
        running.stop.store(true, Ordering::SeqCst);
        c.thread().unpark();
        let _ = c.join();
    }
    // At VM death the environment goes away with the VM; disposing it here is neither needed nor safe.
    shut_down(&running);
    if let Some(t) = thread {
        let _ = t.join();
    }
    log::info!("unloaded");
    remove_control_dir(&running);
}

fn shut_down(running: &Running) {
    running.stop.store(true, Ordering::SeqCst);
    if let Some(l) = &running.listener {
        server::wake(l);
    }
    let _ = std::fs::remove_file(&running.socket);
}

/// The first attach of this process removes a default log found in its control directory: it
/// was kept (it held a warning) by an earlier process that had the same pid, and would keep the
/// directory from being removed at detach (with `log=` elsewhere, nothing else removes it).
/// Later attaches append to this process's own.
fn forget_earlier_process_log(log: &Path) {
    if !AGENT.dir_of_this_process.swap(true, Ordering::SeqCst) {
        let _ = std::fs::remove_file(log);
    }
}

/// Removes the socket, the default log and the socket's directory once it is empty, so that
/// detached and exited JVMs leave nothing in `/tmp`. A log that holds a warning or an error of
/// this attach is kept (with its directory) as the evidence of what went wrong; a `log=` file is
/// the user's and always stays.
fn remove_control_dir(running: &Running) {
    let _ = std::fs::remove_file(&running.socket);
    if let Some(log) = &running.default_log {
        if logger::troubles() > 0 {
            return;
        }
        let _ = std::fs::remove_file(log);
    }
    if let Some(dir) = running.socket.parent() {
        // Fails, harmlessly, while anything else is in it.
        let _ = std::fs::remove_dir(dir);
    }
}

/// Disposes the JVMTI environment, which relinquishes its capabilities and disables its events. JVMTI
/// requires a thread attached to the VM, and the control threads are plain OS threads, so the calling
/// thread attaches for the duration of the call.
fn dispose_env(running: &Running) {
    let result = running.vm.with_attached_thread("ferrofluid-detach", |env| {
        // Remove every probe first, while events still tell the agent about retransformations.
        let outcome = session::deinstrument_all(running.jvmti, env);
        for e in &outcome.errors {
            log::warn!("detach: {e}");
        }
        collector::reset();
        context::close();
        engine::disable_events(running.jvmti);
        jvm::disable_events(running.jvmti);
        jvm::forget_env();
        *lock(&AGENT.deadline) = None;
        running.jvmti.dispose()
    });
    if let Err(e) = result.and_then(|r| r) {
        log::warn!("detach: {e}");
    }
}

/// Carries out a control request other than hello/status/detach.
pub fn control(request: control::Request) -> control::Response {
    use control::{Request, Response};
    let error = |message: String| Response::Error { message };
    match request {
        Request::Instrument(options) => {
            // Checked here, before the session is claimed by anything on a Java thread.
            if let Err(e) = engine::select(&options, jvm::granted()) {
                return error(e.to_string());
            }
            // A tool's session replaces the load options' one, and its pushing.
            end_push(push(), collector::collecting());
            with_java_thread(|jvmti, env| match begin_session(jvmti, env, &options) {
                Ok(outcome) => outcome_reply(outcome, "instrument"),
                Err(e) => error(e.to_string()),
            })
        }
        Request::Deinstrument => with_java_thread(|jvmti, env| {
            let outcome = session::deinstrument_all(jvmti, env);
            engine::disable_events(jvmti);
            outcome_reply(outcome, "deinstrument")
        }),
        Request::Start => with_java_thread(|_, env| {
            end_push(push(), collector::collecting());
            start_collecting(env);
            Response::Ok
        }),
        Request::Stop => {
            finish_collection();
            Response::Ok
        }
        Request::Reset => {
            // The interval until the reset is pushed first.
            let restarted = match push() {
                Some(push) => push.rebase(collector::restart),
                None => collector::restart(),
            };
            if !restarted {
                return error("collection was never started".into());
            }
            if let Some(active) = context::active() {
                active.session.reset(&Runtime::detached());
            }
            log::info!("reset: the data collected so far was discarded");
            Response::Ok
        }
        Request::Narrow { alloc_classes } => narrow(alloc_classes),
        Request::Snapshot => match snapshot::json() {
            Ok(profile) => Response::Snapshot { profile },
            Err(e) => error(e),
        },
        Request::Hello { .. } | Request::Status | Request::Detach | Request::Wait { .. } => {
            error("request handled by the server".into())
        }
    }
}

/// `narrow`: the running session (of an engine that [`narrows`](engine::Engine::narrows))
/// probes only the allocation sites of the classes `patterns` selects.
fn narrow(patterns: Vec<ferrofluid_protocol::AllocClassPattern>) -> control::Response {
    let pid = std::process::id();
    let error = |message: String| control::Response::Error { message };
    let modes = engine::narrowable().join(" or ");
    let not_collecting = || error(format!("no {modes} session is collecting in JVM {pid}"));
    let active = context::active();
    let Some(active) = active.filter(|_| session::running() && collector::collecting()) else {
        return not_collecting();
    };
    if !active.engine.narrows() {
        let mode = active.engine.mode();
        return error(format!(
            "JVM {pid} runs a {mode} session: only an {modes} session can be narrowed"
        ));
    }
    with_java_thread(|_, env| {
        active
            .session
            .narrow(&Runtime::on(env), patterns)
            .unwrap_or_else(not_collecting)
    })
}

fn outcome_reply(outcome: session::Outcome, what: &str) -> control::Response {
    if outcome.errors.is_empty() {
        control::Response::Ok
    } else {
        control::Response::Error {
            message: format!(
                "{what}: {} methods in {} classes; {} error(s): {}",
                outcome.methods,
                outcome.classes,
                outcome.errors.len(),
                outcome.errors.join("; ")
            ),
        }
    }
}

/// Runs `f` on the calling (control) thread attached to the JVM, with the agent's environment.
fn with_java_thread(
    f: impl FnOnce(Jvmti, &ferrofluid_jvmti::JniEnv<'_>) -> control::Response,
) -> control::Response {
    let Some((vm, jvmti)) = state().as_ref().map(|r| (r.vm, r.jvmti)) else {
        return control::Response::Error {
            message: "agent is dormant".into(),
        };
    };
    match vm.with_attached_thread("ferrofluid-control", |env| f(jvmti, env)) {
        Ok(r) => r,
        Err(e) => control::Response::Error {
            message: format!("attaching the control thread to the JVM: {e}"),
        },
    }
}
