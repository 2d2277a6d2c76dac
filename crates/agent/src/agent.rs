//! The agent's lifecycle: started by `Agent_OnLoad`/`Agent_OnAttach`, dormant after `detach`, stopped
//! by `Agent_OnUnload`. The library stays loaded between attaches (the JVM never unloads an agent), so
//! all state lives in one global slot that is either `None` (dormant) or the running agent.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use ferrofluid_jvmti::{JavaVm, Jvmti};
use ferrofluid_protocol::{control, AgentOptions, OptionsError};

use crate::{logger, private_dir, server};

/// Why the agent did not start.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("{0}")]
    Options(#[from] OptionsError),
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
    socket: PathBuf,
    jvmti: Jvmti,
}

static STATE: Mutex<Option<Running>> = Mutex::new(None);
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
    let log_path = opts.log.clone().unwrap_or_else(|| dir.join("agent.log"));
    logger::open(&log_path).map_err(io("log file", &log_path))?;

    let jvmti = vm.jvmti()?;
    let info = Info {
        pid,
        vm_version: jvmti.system_property("java.vm.version").unwrap_or_default(),
        options: opts.to_string(),
    };
    // A socket left by an earlier agent of this same pid (detach removes it, a crash may not).
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket).map_err(io("control socket", &socket))?;
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
        socket,
        jvmti,
    });
    Ok(())
}

/// Makes the agent dormant: no socket, no events, no capabilities. Called by the control thread
/// itself when the tool asks to detach (so it does not join itself).
pub fn detach() {
    let Some(mut running) = state().take() else {
        return;
    };
    running.thread = None; // the caller is that thread; it ends after replying
    shut_down(&running);
    dispose_env(&running);
    log::info!("detached; agent dormant");
}

/// Stops the agent at JVM shutdown (`Agent_OnUnload`): the control thread is joined.
pub fn unload() {
    let Some(mut running) = state().take() else {
        return;
    };
    let thread = running.thread.take();
    // At VM death the environment goes away with the VM; disposing it here is neither needed nor safe.
    shut_down(&running);
    if let Some(t) = thread {
        let _ = t.join();
    }
    log::info!("unloaded");
}

fn shut_down(running: &Running) {
    running.stop.store(true, Ordering::SeqCst);
    let _ = std::fs::remove_file(&running.socket);
}

/// Disposes the JVMTI environment, which relinquishes its capabilities and disables its events. JVMTI
/// requires a thread attached to the VM, and the control threads are plain OS threads, so the calling
/// thread attaches for the duration of the call.
fn dispose_env(running: &Running) {
    let result = running
        .vm
        .with_attached_thread("ferrofluid-detach", |_env| running.jvmti.dispose());
    if let Err(e) = result.and_then(|r| r) {
        log::warn!("detach: {e}");
    }
}
