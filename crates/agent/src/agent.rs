//! The agent's lifecycle: started by `Agent_OnLoad`/`Agent_OnAttach`, dormant after `detach`, stopped
//! by `Agent_OnUnload`. The library stays loaded between attaches (the JVM never unloads an agent), so
//! all state lives in one global slot that is either `None` (dormant) or the running agent.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use ferrofluid_jvmti::{JavaVm, Jvmti};
use ferrofluid_protocol::{control, socket_path, AgentOptions, OptionsError};

use crate::engine::{self, EngineError};
use crate::{collector, jvm, logger, private_dir, server, session};

/// Why the agent did not start.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("{0}")]
    Options(#[from] OptionsError),
    #[error("{0}")]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Jvmti(#[from] ferrofluid_jvmti::Error),
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
    socket: PathBuf,
    /// The log file when it is the default one, inside the socket's directory.
    default_log: Option<PathBuf>,
    jvmti: Jvmti,
}

/// The options of the running agent (for VMInit, VMDeath and the duration timer).
static OPTIONS: Mutex<Option<AgentOptions>> = Mutex::new(None);
/// When collection started by the `duration` option should stop.
static DEADLINE: Mutex<Option<std::time::Instant>> = Mutex::new(None);

fn options() -> Option<AgentOptions> {
    OPTIONS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

static STATE: Mutex<Option<Running>> = Mutex::new(None);
/// Held by a detach from start to end, and taken by `start`: an attach arriving while the agent
/// is going dormant (its socket already gone) waits for it instead of starting a second agent
/// beside the one being torn down. Never taken by class-loading callbacks.
static LIFECYCLE: Mutex<()> = Mutex::new(());

fn lifecycle() -> MutexGuard<'static, ()> {
    LIFECYCLE.lock().unwrap_or_else(|p| p.into_inner())
}
static ATTACH_COUNT: AtomicU64 = AtomicU64::new(0);

fn state() -> MutexGuard<'static, Option<Running>> {
    // The slot stays consistent even if a holder panicked (every update is a single assignment).
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// How many times `Agent_OnLoad`/`Agent_OnAttach` ran.
pub fn attach_count() -> u64 {
    ATTACH_COUNT.load(Ordering::SeqCst)
}

/// Starts the agent, or, if it is already running, leaves it as it is (a re-attach reconnects).
pub fn start(vm: JavaVm, options: &str) -> Result<(), AgentError> {
    ATTACH_COUNT.fetch_add(1, Ordering::SeqCst);
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
    let dir = socket.parent().unwrap_or(Path::new("/")).to_path_buf();
    let io = |context, path: &Path| {
        let path = path.to_path_buf();
        move |source| AgentError::Io {
            context,
            path,
            source,
        }
    };
    private_dir::ensure_private_dir(&dir).map_err(io("control directory", &dir))?;
    let default_log = opts.log.is_none().then(|| dir.join("agent.log"));
    let own = dir.join("agent.log");
    if opts.log.as_ref() != Some(&own) {
        forget_earlier_process_log(&own);
    }
    let log_path = opts.log.clone().unwrap_or_else(|| dir.join("agent.log"));
    logger::open(&log_path).map_err(io("log file", &log_path))?;

    let jvmti = vm.jvmti()?;
    let live = jvmti.phase()? == ferrofluid_jvmti::sys::JVMTI_PHASE_LIVE;
    jvm::setup(vm, jvmti)?;
    engine::take_capabilities(jvmti)?;
    if wants_profile(&opts) {
        // The load options' engine has what it requires, or the load fails.
        engine::select(&opts)?;
    }
    let info = Info {
        pid,
        vm_version: jvmti.system_property("java.vm.version").unwrap_or_default(),
        options: opts.to_string(),
    };
    // A socket left by an earlier agent of this same pid (detach removes it, a crash may not).
    let _ = std::fs::remove_file(&socket);
    let listener = socket_path::bind(&socket).map_err(io("control socket", &socket))?;
    private_dir::make_owner_only(&socket).map_err(io("control socket", &socket))?;
    listener
        .set_nonblocking(true)
        .map_err(io("control socket", &socket))?;

    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = Arc::clone(&stop);
        let info = info.clone();
        std::thread::Builder::new()
            .name("ferrofluid-control".into())
            .spawn(move || server::serve(listener, stop, info))
            .map_err(io("control thread for", &socket))?
    };
    crate::hooks::init_clock();
    let collector = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("ferrofluid-collector".into())
            .spawn(move || {
                collector::run(stop, || {
                    duration_tick();
                    crate::adaptive::tick(drop_probes);
                })
            })
    };
    let collector = match collector {
        Ok(c) => c,
        Err(e) => {
            stop.store(true, Ordering::SeqCst);
            let _ = thread.join();
            return Err(AgentError::Io {
                context: "collector thread for",
                path: socket,
                source: e,
            });
        }
    };
    *OPTIONS.lock().unwrap_or_else(|p| p.into_inner()) = Some(opts.clone());
    // From here on nothing fails the load: probes may call into this library once hooks are bound.
    if let Err(e) = jvm::enable_events(jvmti, !live) {
        log::error!("enabling events: {e}");
    }
    if live {
        match vm.jni_env() {
            Ok(env) => match jvm::install_hooks(jvmti, &env) {
                Ok(()) => {
                    if wants_profile(&opts) {
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
        socket,
        default_log,
        jvmti,
    });
    Ok(())
}

/// Options that ask for profiling from the start: a root, a region, a mode, or an output file
/// (whole program).
fn wants_profile(opts: &AgentOptions) -> bool {
    !opts.roots.is_empty() || !opts.region.is_empty() || opts.mode.is_some() || opts.file.is_some()
}

/// Starts the session `options` describe with its engine: removes the previous session's
/// probes, makes the engine the one probes reach, and instruments what it selects.
fn begin_session(
    jvmti: Jvmti,
    env: &ferrofluid_jvmti::JniEnv<'_>,
    options: &AgentOptions,
) -> Result<session::Outcome, EngineError> {
    let engine = engine::select(options)?;
    // The old session's probes go before the new engine takes them.
    let _ = session::deinstrument_all(jvmti, env);
    engine::enable_events(jvmti, engine).map_err(|event| EngineError::Event {
        mode: engine.mode(),
        event,
    })?;
    engine::activate(engine, options);
    session::set_reveal(options.reveal == ferrofluid_protocol::Reveal::Async);
    Ok(match engine.instruments() {
        Some(instrumentation) => {
            session::instrument_all(jvmti, env, engine.plan(options), instrumentation)
        }
        None => session::Outcome::default(),
    })
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
    if let Some(d) = opts.duration {
        *DEADLINE.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::time::Instant::now() + d);
    }
}

/// Starts a fresh recording and lets the session's engine calibrate and start measuring, on
/// this Java thread.
fn start_collecting(env: &ferrofluid_jvmti::JniEnv<'_>) {
    collector::prepare();
    engine::current().start(env);
}

/// Collector tick: ends collection when the `duration` option's time is up.
fn duration_tick() {
    let mut deadline = DEADLINE.lock().unwrap_or_else(|p| p.into_inner());
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
fn drop_probes(ids: &[u32], quiet: &[u32], retransform: &[u32]) -> Vec<u32> {
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
    engine::current().stop();
    session::log_precision();
    if let (true, Some(file)) = (was, options().and_then(|o| o.file)) {
        if let Err(e) = collector::write_file(&file) {
            log::error!("writing the profile: {e}");
        }
    }
}

/// VMDeath: the profile of a run started with `file=` is written now, the tool that owns the
/// session gets what was collected, and the control directory goes.
pub fn on_vm_death() {
    finish_collection();
    crate::owner::vm_death(|| match collector::snapshot_json() {
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
    shut_down(&running);
    if let Some(c) = running.collector.take() {
        let _ = c.join();
    }
    dispose_env(&running);
    crate::owner::clear();
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
    if let Some(c) = running.collector.take() {
        running.stop.store(true, Ordering::SeqCst);
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
    let _ = std::fs::remove_file(&running.socket);
}

/// This process has set up its control directory (the library stays loaded across detaches).
static DIR_OF_THIS_PROCESS: AtomicBool = AtomicBool::new(false);

/// The first attach of this process removes a default log found in its control directory: it
/// was kept (it held a warning) by an earlier process that had the same pid, and would keep the
/// directory from being removed at detach (with `log=` elsewhere, nothing else removes it).
/// Later attaches append to this process's own.
fn forget_earlier_process_log(log: &Path) {
    if !DIR_OF_THIS_PROCESS.swap(true, Ordering::SeqCst) {
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
        engine::disable_events(running.jvmti);
        jvm::disable_events(running.jvmti);
        jvm::forget_env();
        *DEADLINE.lock().unwrap_or_else(|p| p.into_inner()) = None;
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
            if let Err(e) = engine::select(&options) {
                return error(e.to_string());
            }
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
            start_collecting(env);
            Response::Ok
        }),
        Request::Stop => {
            finish_collection();
            Response::Ok
        }
        Request::Reset => {
            if !collector::restart() {
                return error("collection was never started".into());
            }
            engine::current().reset();
            log::info!("reset: the data collected so far was discarded");
            Response::Ok
        }
        Request::Narrow { alloc_classes } => narrow(alloc_classes),
        Request::Snapshot => match collector::snapshot_json() {
            Ok(profile) => Response::Snapshot { profile },
            Err(e) => error(e),
        },
        Request::Hello { .. } | Request::Status | Request::Detach | Request::Wait { .. } => {
            error("request handled by the server".into())
        }
    }
}

/// `narrow`: the running `alloc` session probes only the sites allocating `patterns`.
fn narrow(patterns: Vec<ferrofluid_protocol::AllocClassPattern>) -> control::Response {
    let pid = std::process::id();
    let error = |message: String| control::Response::Error { message };
    let mode = engine::current().mode();
    if !session::running() || !collector::collecting() {
        return error(format!("no alloc session is collecting in JVM {pid}"));
    }
    if mode != ferrofluid_profile::Mode::Alloc {
        return error(format!(
            "JVM {pid} runs a {mode} session: only an alloc session can be narrowed"
        ));
    }
    with_java_thread(
        |jvmti, env| match session::narrow_alloc(jvmti, env, patterns) {
            Some(n) => control::Response::Narrowed {
                alloc_classes: crate::narrow::selection(),
                classes: n.changed.len() as u64,
                sites_probed: n.probed,
                sites_unprobed: n.unprobed,
            },
            None => error(format!("no alloc session is collecting in JVM {pid}")),
        },
    )
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
