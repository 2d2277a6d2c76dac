//! The control server: plain OS threads (they need no JNI), one accepting connections on the agent's
//! socket and one per connection (at most [`MAX_CONNECTIONS`]), speaking the framed protocol of
//! `ferrofluid_protocol::control`. A tool that keeps a connection open does not block another.

use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrofluid_protocol::control::{
    self, FrameError, Request, Response, Status, MIN_PROTOCOL_VERSION, PROTOCOL_VERSION,
};

use crate::runtime::lifecycle::{self, Info};
use crate::runtime::owner::{self, Conn};
use crate::runtime::{context, private_dir, session};

/// The longest `wait` a tool may ask for (its reads time out after 60 s).
const MAX_WAIT: Duration = Duration::from_secs(30);

/// How often an idle server looks at its stop flag and the orphan timer (a stop also wakes it at
/// once: [`wake`]).
const IDLE_POLL: Duration = Duration::from_millis(50);
/// Connections served at once; more are closed at once with an error reply.
pub const MAX_CONNECTIONS: usize = 8;
/// How long a peer may take to send the rest of a frame it started.
const FRAME_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves until detached or stopped. Never panics across its caller: errors are logged.
pub fn serve(listener: UnixListener, stop: Arc<AtomicBool>, info: Info) {
    ferrofluid_jvmti::ffi_guard("control server", (), || {
        let info = Arc::new(info);
        let active = Arc::new(AtomicUsize::new(0));
        while !stop.load(Ordering::SeqCst) {
            if owner::orphan_expired() {
                // As on `detach`: probes removed, events off, dormant; this loop then ends.
                lifecycle::detach();
                continue;
            }
            match private_dir::poll_readable(&listener, IDLE_POLL) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    log::warn!("waiting for control connections: {e}");
                    std::thread::sleep(IDLE_POLL);
                    continue;
                }
            }
            if stop.load(Ordering::SeqCst) {
                break;
            }
            match listener.accept() {
                Ok((mut stream, _)) => {
                    if active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                        let message =
                            format!("too many control connections (max {MAX_CONNECTIONS})");
                        let _ = control::write_frame(&mut stream, &Response::Error { message });
                        continue;
                    }
                    active.fetch_add(1, Ordering::SeqCst);
                    let (stop, info, active) =
                        (Arc::clone(&stop), Arc::clone(&info), Arc::clone(&active));
                    let spawned = std::thread::Builder::new()
                        .name("ferrofluid-conn".into())
                        .spawn(move || {
                            ferrofluid_jvmti::ffi_guard("control connection", (), || {
                                match handle(stream, &stop, &info) {
                                    Ok(()) => {}
                                    // The tool went away mid-reply (killed): expected, and handled.
                                    Err(FrameError::Io(e))
                                        if matches!(
                                            e.kind(),
                                            io::ErrorKind::BrokenPipe
                                                | io::ErrorKind::ConnectionReset
                                        ) =>
                                    {
                                        log::info!("control connection: {e}");
                                    }
                                    Err(e) => log::warn!("control connection: {e}"),
                                }
                            });
                            active.fetch_sub(1, Ordering::SeqCst);
                        });
                    if let Err(e) = spawned {
                        log::warn!("control connection thread: {e}");
                    }
                }
                // The peer gave up between the wait and the accept.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    log::warn!("accept: {e}");
                    std::thread::sleep(IDLE_POLL);
                }
            }
        }
        log::info!("control server stopped");
    })
}

/// Wakes a server waiting on `listener` (a clone of its own) after its stop flag was set, so
/// that it ends now rather than at its next look (a JVM's exit waits for it).
pub fn wake(listener: &UnixListener) {
    if let Err(e) = private_dir::shut_down_listener(listener) {
        log::info!("waking the control server: {e}");
    }
}

fn handle(stream: UnixStream, stop: &AtomicBool, info: &Info) -> Result<(), FrameError> {
    stream.set_nonblocking(false)?;
    let (peer, pid) = private_dir::peer_cred(&stream)?;
    if !private_dir::peer_allowed(peer, private_dir::euid()) {
        log::warn!("refused control connection from uid {peer}");
        return Ok(());
    }
    let conn = owner::connection(pid);
    let result = serve_conn(stream, stop, info, conn);
    // However it ended: a session this connection owned and did not end is orphaned.
    owner::closed(conn);
    result
}

fn serve_conn(
    mut stream: UnixStream,
    stop: &AtomicBool,
    info: &Info,
    conn: Conn,
) -> Result<(), FrameError> {
    let mut hello_done = false;
    loop {
        if !wait_readable(&stream, stop)? {
            return Ok(());
        }
        stream.set_read_timeout(Some(FRAME_TIMEOUT))?;
        let request: Request = match control::read_frame(&mut stream) {
            Ok(r) => r,
            Err(FrameError::Closed) => return Ok(()),
            Err(FrameError::Malformed(e)) => {
                let message = format!("malformed request: {e}");
                control::write_frame(&mut stream, &Response::Error { message })?;
                continue;
            }
            Err(e) => return Err(e),
        };
        let response = match (hello_done, request) {
            (false, Request::Hello { version })
                if (MIN_PROTOCOL_VERSION..=PROTOCOL_VERSION).contains(&version) =>
            {
                hello_done = true;
                Response::Hello {
                    version,
                    agent_version: env!("CARGO_PKG_VERSION").into(),
                    pid: info.pid,
                }
            }
            (false, Request::Hello { version }) => {
                let message = format!(
                    "protocol version {version} not supported (agent speaks {PROTOCOL_VERSION})"
                );
                control::write_frame(&mut stream, &Response::Error { message })?;
                return Ok(());
            }
            (false, _) => {
                let message = "the first request must be `hello`".to_owned();
                control::write_frame(&mut stream, &Response::Error { message })?;
                return Ok(());
            }
            (true, Request::Status) => Response::Status(status(info)),
            (true, Request::Hello { .. }) => Response::Error {
                message: "already said hello".into(),
            },
            (true, request) => {
                if let Err(message) = owner::admit(conn, &request, info.pid) {
                    Response::Error { message }
                } else {
                    match request {
                        Request::Detach => {
                            // Become dormant before replying, so a tool that re-attaches right
                            // after the reply finds a clean slate.
                            lifecycle::detach();
                            owner::released(conn);
                            control::write_frame(&mut stream, &Response::Ok)?;
                            return Ok(());
                        }
                        Request::Wait { timeout_ms } => {
                            let timeout = Duration::from_millis(timeout_ms).min(MAX_WAIT);
                            if let Some(exited) = owner::wait_exit(timeout) {
                                let written = control::write_frame(&mut stream, &exited);
                                owner::delivered();
                                written?;
                                continue;
                            }
                            Response::Ok
                        }
                        Request::Deinstrument => {
                            let reply = lifecycle::control(request);
                            owner::released(conn);
                            reply
                        }
                        other => lifecycle::control(other),
                    }
                }
            }
        };
        control::write_frame(&mut stream, &response)?;
    }
}

/// Waits until the peer sent something (or closed), checking the stop flag meanwhile.
fn wait_readable(stream: &UnixStream, stop: &AtomicBool) -> io::Result<bool> {
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(false);
        }
        // Readable also means closed; read_frame then reports Closed.
        if private_dir::poll_readable(stream, IDLE_POLL)? {
            return Ok(true);
        }
    }
}

fn status(info: &Info) -> Status {
    let running = running_session();
    Status {
        pid: info.pid,
        agent_version: env!("CARGO_PKG_VERSION").into(),
        vm_version: info.vm_version.clone(),
        options: info.options.clone(),
        collecting: crate::probe::collector::collecting(),
        instrumented_classes: session::counts().1,
        instrumented_methods: session::counts().0,
        dropped_events: crate::probe::collector::dropped(),
        attach_count: lifecycle::attach_count(),
        failed_classes: session::failed_classes(),
        owner: owner::owner(),
        unmatched_roots: session::unmatched_roots(),
        session_mode: running.as_ref().map(|a| a.engine.mode().name().to_owned()),
        alloc_classes: running
            .map(|a| a.session.alloc_classes())
            .unwrap_or_default(),
        push: lifecycle::push_status(),
    }
}

/// The engine and session running and collecting, if any.
fn running_session() -> Option<context::Active> {
    (session::running() && crate::probe::collector::collecting())
        .then(context::active)
        .flatten()
}
