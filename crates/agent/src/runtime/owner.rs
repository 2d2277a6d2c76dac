//! Who drives the profiling session. The control connection that sends `instrument` owns the
//! session until it ends it (`deinstrument`, `detach`): other connections may ask for `status` but
//! nothing that changes the session, so a second tool can never take over (or end) a profile
//! another one is collecting. A session the agent's own options started (`-agentpath`, `ferrofluid
//! run`) has no owner and stays open to every tool.
//!
//! If the owning connection closes without ending the session (the tool was killed), the session
//! is *orphaned*: after [`ORPHAN_GRACE_SECS`] the control server makes the agent dormant, as a
//! `detach` would, so that a dead tool never leaves probes behind. Meanwhile another tool may take
//! the session over.
//!
//! The owner also learns that the JVM exits: its `wait` request blocks until then, and VMDeath hands
//! it the profile collected until that moment before letting the JVM go on exiting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ferrofluid_protocol::control::{busy_message, Owner, Request, Response, ORPHAN_GRACE_SECS};
use ferrofluid_protocol::MethodPattern;

/// The longest VMDeath waits for the owner to take the final profile: a wedged tool delays the
/// JVM's exit by this much at most.
const HANDOFF_TIMEOUT: Duration = Duration::from_secs(10);

/// A control connection: a number unique in the process and its peer's pid.
#[derive(Debug, Clone, Copy)]
pub struct Conn {
    pub id: u64,
    pub pid: u32,
}

struct Claim {
    conn: u64,
    owner: Owner,
}

enum Session {
    Free,
    Live(Claim),
    Orphaned(Claim, Instant),
}

/// The final profile on its way from VMDeath to the owner.
enum Handoff {
    Idle,
    Offered(Box<Response>),
    Writing,
    Done,
}

struct State {
    session: Session,
    handoff: Handoff,
    /// VMDeath was posted: nothing may change the session any more.
    dying: bool,
    /// Connections that narrowed the session: they may read its snapshots, owner or not.
    narrowers: Vec<u64>,
}

/// Who owns the session, and the connections that may ask.
struct Owners {
    state: Mutex<State>,
    /// Signalled when the session or the hand-over changes.
    changed: Condvar,
    /// Numbers control connections, so that the session's owner is told apart from other
    /// tools (unique in the process: a connection of an earlier attach may still be closing).
    next_conn: AtomicU64,
}

// Process-wide: the control connections of every attach and VMDeath (a JVMTI callback without
// user data) meet here.
static OWNERS: Owners = Owners {
    state: Mutex::new(State {
        session: Session::Free,
        handoff: Handoff::Idle,
        dying: false,
        narrowers: Vec::new(),
    }),
    changed: Condvar::new(),
    next_conn: AtomicU64::new(1),
};

fn state() -> MutexGuard<'static, State> {
    // Every update is a plain assignment: a panicking holder leaves a consistent value.
    OWNERS.state.lock().unwrap_or_else(|p| p.into_inner())
}

/// A new control connection from the process `pid`.
pub fn connection(pid: u32) -> Conn {
    Conn {
        id: OWNERS.next_conn.fetch_add(1, Ordering::SeqCst),
        pid,
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What an `instrument` request profiles, for other tools' messages.
fn what(request: &Request) -> String {
    let list = |patterns: &[MethodPattern]| {
        patterns
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Request::Instrument(options) = request else {
        return "the whole program".to_owned();
    };
    let what = match options.mode() {
        ferrofluid_protocol::Mode::Region => format!("region {}", list(&options.region)),
        _ if !options.roots.is_empty() => format!("root {}", list(&options.roots)),
        _ => "the whole program".to_owned(),
    };
    match options.mode() {
        ferrofluid_protocol::Mode::Cpu | ferrofluid_protocol::Mode::Region => what,
        mode => format!("{mode}: {what}"),
    }
}

/// Whether `conn` may make `request` (hello and status are always served); an `instrument` makes
/// it the owner. `Err` is the reply's message.
pub fn admit(conn: Conn, request: &Request, jvm_pid: u32) -> Result<(), String> {
    let mut s = state();
    // A dying VM is no place to retransform classes; reading what was collected is fine (a
    // tool whose `--duration` ends just as the JVM exits still gets its profile).
    let reads = matches!(
        request,
        Request::Wait { .. } | Request::Stop | Request::Snapshot
    );
    if s.dying && !reads {
        return Err(format!("JVM {jvm_pid} is exiting"));
    }
    let owner_conn = match &s.session {
        Session::Live(c) => Some(c.conn),
        _ => None,
    };
    match request {
        Request::Wait { .. } => match owner_conn {
            Some(c) if c == conn.id => Ok(()),
            _ => Err("`wait` is only for the connection that started the session".into()),
        },
        // Narrowing changes which sites count, not whose session it is; the tool that narrowed
        // may then read what the session collected.
        Request::Narrow { .. } => {
            if !s.narrowers.contains(&conn.id) {
                s.narrowers.push(conn.id);
            }
            Ok(())
        }
        Request::Snapshot if s.narrowers.contains(&conn.id) => Ok(()),
        _ if owner_conn.is_some_and(|c| c != conn.id) => {
            let Session::Live(c) = &s.session else {
                unreachable!()
            };
            Err(busy_message(jvm_pid, &c.owner))
        }
        Request::Instrument(_) => {
            if let Session::Orphaned(c, _) = &s.session {
                log::info!(
                    "a new tool (pid {}) takes over the session left by pid {}",
                    conn.pid,
                    c.owner.pid
                );
            }
            s.session = Session::Live(Claim {
                conn: conn.id,
                owner: Owner {
                    pid: conn.pid,
                    since_ms: now_ms(),
                    what: what(request),
                    orphaned: false,
                },
            });
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `conn`'s `deinstrument` or `detach` succeeded: the session it owned (or an orphaned one) is over.
pub fn released(conn: Conn) {
    let mut s = state();
    let ends = match &s.session {
        Session::Live(c) => c.conn == conn.id,
        Session::Orphaned(..) => true,
        Session::Free => false,
    };
    if ends {
        s.session = Session::Free;
        OWNERS.changed.notify_all();
    }
}

/// `conn` closed. If it owned the session, the session is orphaned.
pub fn closed(conn: Conn) {
    let mut s = state();
    s.narrowers.retain(|&c| c != conn.id);
    if let Session::Live(c) = &s.session {
        if c.conn == conn.id {
            let Session::Live(mut claim) = std::mem::replace(&mut s.session, Session::Free) else {
                unreachable!()
            };
            claim.owner.orphaned = true;
            if !s.dying {
                log::info!(
                    "the tool that started this session (pid {}) disconnected without ending it; \
                     the probes are removed in {ORPHAN_GRACE_SECS} s unless a tool takes over",
                    claim.owner.pid
                );
            }
            let deadline = Instant::now() + Duration::from_secs(ORPHAN_GRACE_SECS);
            s.session = Session::Orphaned(claim, deadline);
            OWNERS.changed.notify_all();
        }
    }
}

/// Control-server tick: true once an orphaned session's grace period is over (the caller then
/// makes the agent dormant).
pub fn orphan_expired() -> bool {
    let mut s = state();
    match &s.session {
        Session::Orphaned(c, deadline) if !s.dying && Instant::now() >= *deadline => {
            log::info!(
                "the tool that started this session (pid {}) is gone: removing the probes and \
                 going dormant",
                c.owner.pid
            );
            s.session = Session::Free;
            true
        }
        _ => false,
    }
}

/// The agent went dormant: no session, no owner.
pub fn clear() {
    let mut s = state();
    s.session = Session::Free;
    OWNERS.changed.notify_all();
}

/// The owner, for `status`.
pub fn owner() -> Option<Owner> {
    match &state().session {
        Session::Free => None,
        Session::Live(c) | Session::Orphaned(c, _) => Some(c.owner.clone()),
    }
}

/// `wait` from the owner: `None` if the JVM did not start exiting within `timeout`, else the
/// reply carrying the final profile. The caller writes it, then calls [`delivered`].
pub fn wait_exit(timeout: Duration) -> Option<Response> {
    let s = state();
    let (mut s, _) = OWNERS
        .changed
        .wait_timeout_while(s, timeout, |s| !matches!(s.handoff, Handoff::Offered(_)))
        .unwrap_or_else(|p| p.into_inner());
    match std::mem::replace(&mut s.handoff, Handoff::Writing) {
        Handoff::Offered(reply) => Some(*reply),
        other => {
            s.handoff = other;
            None
        }
    }
}

/// The final profile was written to the owner (or could not be).
pub fn delivered() {
    state().handoff = Handoff::Done;
    OWNERS.changed.notify_all();
}

/// VMDeath: from now on nothing changes the session. If a tool owns it, `finale` makes the reply
/// to its `wait` (the final profile), and the JVM's exit waits until the tool has it, the tool is
/// gone, or [`HANDOFF_TIMEOUT`].
pub fn vm_death(finale: impl FnOnce() -> Response) {
    let live = {
        let mut s = state();
        s.dying = true;
        matches!(s.session, Session::Live(_))
    };
    if !live {
        return;
    }
    // Made without the lock: a snapshot of a big profile takes a while.
    let reply = finale();
    let mut s = state();
    s.handoff = Handoff::Offered(Box::new(reply));
    OWNERS.changed.notify_all();
    let (s, timeout) = OWNERS
        .changed
        .wait_timeout_while(s, HANDOFF_TIMEOUT, |s| {
            matches!(s.handoff, Handoff::Offered(_) | Handoff::Writing)
                && matches!(s.session, Session::Live(_))
        })
        .unwrap_or_else(|p| p.into_inner());
    match (&s.handoff, timeout.timed_out()) {
        (Handoff::Done, _) => log::info!("JVM exiting: the final profile went to its tool"),
        (_, true) => log::warn!(
            "JVM exiting: its tool did not take the final profile within {HANDOFF_TIMEOUT:?}"
        ),
        _ => log::warn!("JVM exiting: its tool left before taking the final profile"),
    }
}
