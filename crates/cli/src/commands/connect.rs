//! The control connection to the agent in a running JVM: found on its socket, or loaded first
//! (`attach`, `top`); and the requests every command makes of it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ferrofluid_attach::VirtualMachine;
use ferrofluid_protocol::control::{self, Client, Request, Response, Status};
use ferrofluid_protocol::AgentOptions;

use super::agent_flags::AgentFlags;

/// The file name every build of the agent library starts with.
const AGENT_LIBRARY: &str = "libferrofluid_agent";

/// The agent's socket as seen from here: its path in the JVM's file system, reached through
/// `/proc/<pid>/root` (so JVMs in containers work too).
pub(crate) fn socket_path(
    pid: u32,
    explicit: Option<&Path>,
) -> Result<PathBuf, ferrofluid_attach::AttachError> {
    let info = ferrofluid_attach::procfs::info(pid)
        .map_err(|_| ferrofluid_attach::AttachError::NoSuchProcess(pid))?;
    let root = PathBuf::from(format!("/proc/{pid}/root"));
    Ok(match explicit {
        Some(p) => root.join(p.strip_prefix("/").unwrap_or(p)),
        None => control::default_socket_path(&root.join("tmp"), info.nspid),
    })
}

/// How [`connect`] reached the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reached {
    /// It answered on its socket: a session may be running.
    Reconnected,
    /// It was loaded (or woken from dormancy) with the options given.
    Loaded,
}

impl Reached {
    /// As the first line of `attach` says it.
    pub(crate) fn verb(self) -> &'static str {
        match self {
            Reached::Reconnected => "reconnected to",
            Reached::Loaded => "attached to",
        }
    }
}

/// The connection to the agent in JVM `pid` on `socket`: the agent answering there, else the
/// agent loaded with `options`. A JVM that loaded the agent before keeps it (no JVM unloads an
/// agent): it is woken by loading that same library again, which then needs no file beside
/// ferrofluid, and no other copy is loaded beside it. Only a JVM without it loads
/// [`AgentFlags::agent_library`].
pub(crate) fn connect(
    pid: u32,
    socket: &Path,
    flags: &AgentFlags,
    options: &AgentOptions,
    timeout: Duration,
) -> Result<(Client, Reached), Box<dyn std::error::Error>> {
    if let Ok(client) = Client::connect(socket) {
        return Ok((client, Reached::Reconnected));
    }
    let loaded = ferrofluid_attach::procfs::mapped_library(pid, AGENT_LIBRARY)
        .ok()
        .flatten();
    let agent = match loaded {
        Some(path) => {
            if let Some(asked) = &flags.agent {
                // The maps name the file itself, links resolved.
                let asked = std::fs::canonicalize(asked)
                    .or_else(|_| std::path::absolute(asked))
                    .unwrap_or_else(|_| asked.clone());
                if asked != path {
                    eprintln!(
                        "ferrofluid: note: JVM {pid} has the agent {} loaded already, which it \
                         keeps (a JVM cannot unload an agent); --agent {} is not loaded",
                        path.display(),
                        asked.display()
                    );
                }
            }
            path
        }
        None => flags.agent_library()?,
    };
    let vm = VirtualMachine::attach_with_timeout(pid, timeout)?;
    let loading = crate::progress::spinner("loading the agent");
    vm.load_agent(&agent, &options.to_string())?;
    drop(loading);
    let client = Client::connect(socket).map_err(|e| {
        format!(
            "agent loaded into JVM {pid}, but its socket {}: {e}",
            socket.display()
        )
    })?;
    Ok((client, Reached::Loaded))
}

/// Fails with what is going on if another tool owns the agent's session: a second tool must
/// never take over (or end) a profile the first one is collecting. Nor may a new profile
/// (`profiling`) replace the session the agent's own options started (`ferrofluid run`,
/// `-agentpath`), whose profile is written when it ends; `--reset` and `--detach` still reach it.
pub(crate) fn refuse_if_owned(
    client: &mut Client,
    pid: u32,
    profiling: bool,
) -> Result<(), String> {
    match client
        .request(&Request::Status)
        .map_err(|e| e.to_string())?
    {
        Response::Status(Status {
            owner: Some(owner), ..
        }) if !owner.orphaned => Err(control::busy_message(pid, &owner)),
        Response::Status(Status {
            owner: None,
            collecting: true,
            options,
            ..
        }) if profiling => Err(control::started_session_message(pid, &options)),
        _ => Ok(()),
    }
}

/// The agent's status.
pub(crate) fn status(client: &mut Client) -> Result<Status, String> {
    match client
        .request(&Request::Status)
        .map_err(|e| e.to_string())?
    {
        Response::Status(status) => Ok(status),
        Response::Error { message } => Err(format!("agent: {message}")),
        other => Err(format!("unexpected agent reply {other:?}")),
    }
}

/// One request that must be answered `Ok`.
pub(crate) fn expect_ok(client: &mut Client, request: &Request) -> Result<(), String> {
    match client.request(request).map_err(|e| e.to_string())? {
        Response::Ok => Ok(()),
        Response::Error { message } => Err(format!("agent: {message}")),
        other => Err(format!("unexpected agent reply {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_paths_go_through_the_jvms_root() {
        let me = std::process::id();
        assert_eq!(
            socket_path(me, None).unwrap(),
            PathBuf::from(format!("/proc/{me}/root/tmp/.ferrofluid-{me}/control.sock"))
        );
        assert_eq!(
            socket_path(me, Some(Path::new("/run/ff/s"))).unwrap(),
            PathBuf::from(format!("/proc/{me}/root/run/ff/s"))
        );
    }
}
