//! The HotSpot attach protocol, spoken natively (what `jcmd` and jattach do):
//!
//! 1. If `<tmp>/.java_pid<nspid>` does not exist, create the trigger `.attach_pid<nspid>` in the JVM's
//!    working directory (or its `/tmp`), send SIGQUIT, and wait for the socket to appear (sending
//!    SIGQUIT once more halfway through the wait, as the JDK does).
//! 2. For each command, connect and send `1\0<cmd>\0<arg0>\0<arg1>\0<arg2>\0` (protocol version 1).
//! 3. The reply is `<rc>\n<output>`; the JVM closes the connection after one command.
//!
//! All of it runs as the JVM's user (see [`crate::creds`]), because HotSpot checks the peer's euid/egid
//! and the owner of the trigger file.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::creds;
use crate::error::{AttachError, READING_MAPS, READING_STATUS, SENDING_SIGQUIT};
use crate::procfs::{self, ProcInfo};

/// How long to wait for the attach listener after SIGQUIT.
pub const DEFAULT_LISTENER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a command may take (an agent's `Agent_OnAttach` runs inside the `load` command).
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(20);

/// A JVM whose attach listener is running.
#[derive(Debug, Clone)]
pub struct VirtualMachine {
    proc: ProcInfo,
    socket: PathBuf,
    command_timeout: Duration,
}

impl VirtualMachine {
    /// Attaches to `pid` with the default listener timeout.
    pub fn attach(pid: u32) -> Result<Self, AttachError> {
        Self::attach_with_timeout(pid, DEFAULT_LISTENER_TIMEOUT)
    }

    /// Checks that `pid` is a JVM we may talk to, starts its attach listener if needed, and waits at most
    /// `timeout` for it.
    pub fn attach_with_timeout(pid: u32, timeout: Duration) -> Result<Self, AttachError> {
        let proc = procfs::info(pid).map_err(|e| AttachError::io(pid, 0, READING_STATUS, e))?;
        if !creds::is_root() && creds::euid() != proc.euid {
            return Err(AttachError::PermissionDenied {
                pid,
                owner: proc.euid,
            });
        }
        let socket = procfs::tmp_dir(pid).join(format!(".java_pid{}", proc.nspid));
        let vm = VirtualMachine {
            proc,
            socket,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
        };
        let as_user = |f: &(dyn Fn() -> Result<bool, AttachError> + Sync)| {
            creds::as_user(proc.euid, proc.egid, f)
                .map_err(|e| AttachError::io(pid, proc.euid, "switching to the JVM's user", e))?
        };
        // Only a JVM may get SIGQUIT: for any other process it is fatal. Checked before the
        // socket too: a JVM killed without cleaning up leaves its `.java_pid<pid>` behind, and a
        // later process given the same pid would otherwise pass for a JVM that is listening.
        match maps_libjvm(&proc) {
            Ok(true) => {}
            Ok(false) => {
                let reason = "it does not map libjvm.so".to_owned();
                return Err(AttachError::NotJava { pid, reason });
            }
            Err(e) => return Err(AttachError::io(pid, proc.euid, READING_MAPS, e)),
        }
        if as_user(&|| Ok(is_listening(&vm.socket)))? {
            return Ok(vm);
        }
        as_user(&|| vm.start_listener(timeout))?;
        Ok(vm)
    }

    /// Sets how long one command may run before the reply is abandoned.
    pub fn with_command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// The pid this handle attaches to.
    pub fn pid(&self) -> u32 {
        self.proc.pid
    }

    /// Runs a diagnostic command, as `jcmd <pid> <command>` does, and returns its output.
    pub fn jcmd(&self, command: &str) -> Result<String, AttachError> {
        let (code, output) = self.execute("jcmd", [command, "", ""])?;
        if code != 0 {
            return Err(self.refused(command, code, output));
        }
        Ok(output)
    }

    /// Loads the native agent at `path` (made absolute) with `options`; returns the JVM's output.
    ///
    /// Fails with [`AttachError::AgentLoadFailed`] if the library cannot be loaded or its `Agent_OnAttach`
    /// returns non-zero.
    pub fn load_agent(&self, path: &Path, options: &str) -> Result<String, AttachError> {
        let pid = self.pid();
        let path = std::path::absolute(path).map_err(|e| AttachError::Io {
            pid,
            context: "agent path",
            source: e,
        })?;
        let path_str = path.to_string_lossy();
        let (code, output) = self.execute("load", [&path_str, "true", options])?;
        let message = output.trim().to_owned();
        if code != 0 {
            return Err(AttachError::AgentLoadFailed { pid, message });
        }
        // Since JDK 9 a successful `load` reports the agent's own return code: `return code: N` (JDK 17)
        // or a bare `N` on the first output line.
        match agent_return_code(&message) {
            Some(0) | None => Ok(output),
            Some(rc) => Err(AttachError::AgentLoadFailed {
                pid,
                message: format!("Agent_OnAttach returned {rc}"),
            }),
        }
    }

    /// Sends one raw attach command and returns `(rc, output)`.
    pub fn execute(&self, command: &str, args: [&str; 3]) -> Result<(i32, String), AttachError> {
        let pid = self.pid();
        let request = encode_request(command, args);
        let reply = creds::as_user(self.proc.euid, self.proc.egid, || self.exchange(&request))
            .and_then(|r| r)
            .map_err(|e| AttachError::io(pid, self.proc.euid, "attach socket", e))?;
        match parse_reply(&reply) {
            Some(parsed) => Ok(parsed),
            None => Err(AttachError::Protocol { pid, reply }),
        }
    }

    fn exchange(&self, request: &[u8]) -> io::Result<String> {
        let mut stream = UnixStream::connect(&self.socket)?;
        stream.set_read_timeout(Some(self.command_timeout))?;
        stream.set_write_timeout(Some(self.command_timeout))?;
        stream.write_all(request)?;
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply)?;
        Ok(String::from_utf8_lossy(&reply).into_owned())
    }

    /// Creates the trigger file, signals, and waits for the socket. Runs as the JVM's user.
    fn start_listener(&self, timeout: Duration) -> Result<bool, AttachError> {
        let pid = self.pid();
        let name = format!(".attach_pid{}", self.proc.nspid);
        // HotSpot looks in its cwd first, then in /tmp; the cwd may not be writable.
        let trigger = [
            procfs::cwd_dir(pid).join(&name),
            procfs::tmp_dir(pid).join(&name),
        ]
        .into_iter()
        .find(|p| std::fs::File::create(p).is_ok())
        .ok_or_else(|| AttachError::Io {
            pid,
            context: "creating the .attach_pid trigger file",
            source: io::Error::from(io::ErrorKind::PermissionDenied),
        })?;
        let result = self.signal_and_wait(timeout);
        let _ = std::fs::remove_file(&trigger);
        result.map(|()| true)
    }

    /// Sends SIGQUIT and waits for the socket; halfway through the wait, a second SIGQUIT, as the
    /// JDK's own attach client sends: a JVM still starting (its signal dispatcher not running
    /// yet) or too busy to look at the trigger file may let the first one pass as a thread-dump
    /// request.
    fn signal_and_wait(&self, timeout: Duration) -> Result<(), AttachError> {
        let pid = self.pid();
        let quit = || {
            creds::sigquit(pid)
                .map_err(|e| AttachError::io(pid, self.proc.euid, SENDING_SIGQUIT, e))
        };
        quit()?;
        let start = Instant::now();
        let mut again = true;
        while start.elapsed() < timeout {
            if is_listening(&self.socket) {
                return Ok(());
            }
            if !Path::new(&format!("/proc/{pid}")).exists() {
                return Err(AttachError::NoSuchProcess(pid));
            }
            if again && start.elapsed() >= timeout / 2 {
                again = false;
                quit()?;
            }
            std::thread::sleep(POLL);
        }
        Err(AttachError::Timeout {
            pid,
            waited: timeout,
        })
    }

    fn refused(&self, command: &str, code: i32, output: String) -> AttachError {
        let message = output.trim().to_owned();
        AttachError::CommandFailed {
            pid: self.pid(),
            command: command.to_owned(),
            code,
            message,
        }
    }
}

/// Whether the process maps libjvm.so. Reading another user's map takes `CAP_SYS_PTRACE`, which a
/// root in a container may lack; the JVM's own user may always read it, so that is the second try.
fn maps_libjvm(proc: &ProcInfo) -> io::Result<bool> {
    match procfs::maps_libjvm(proc.pid) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied && creds::is_root() => {
            creds::as_user(proc.euid, proc.egid, || procfs::maps_libjvm(proc.pid))?
        }
        read => read,
    }
}

/// Whether a JVM listens on the socket: a socket file alone may be the leftover of a JVM killed
/// before it could remove it, whose pid a later process got (CI once attached to such a
/// leftover, owned by another user). A connection without a request is dropped by HotSpot.
fn is_listening(path: &Path) -> bool {
    is_socket(path) && UnixStream::connect(path).is_ok()
}

fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

/// `1\0<cmd>\0<a0>\0<a1>\0<a2>\0`: protocol version 1 and always exactly three arguments.
fn encode_request(command: &str, args: [&str; 3]) -> Vec<u8> {
    let mut out = b"1\0".to_vec();
    for part in std::iter::once(command).chain(args) {
        out.extend_from_slice(part.as_bytes());
        out.push(0);
    }
    out
}

/// The agent's return code in the output of a successful `load`.
fn agent_return_code(output: &str) -> Option<i32> {
    let first = output.lines().next()?.trim();
    first
        .strip_prefix("return code:")
        .unwrap_or(first)
        .trim()
        .parse()
        .ok()
}

/// `<rc>\n<output>` → `(rc, output)`.
fn parse_reply(reply: &str) -> Option<(i32, String)> {
    let (code, output) = reply.split_once('\n').unwrap_or((reply, ""));
    Some((code.trim().parse().ok()?, output.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_requests() {
        assert_eq!(
            encode_request("jcmd", ["VM.version", "", ""]),
            b"1\0jcmd\0VM.version\0\0\0"
        );
        assert_eq!(
            encode_request("load", ["/a/lib.so", "true", "k=v"]),
            b"1\0load\0/a/lib.so\0true\0k=v\0"
        );
    }

    #[test]
    fn finds_the_agents_return_code() {
        assert_eq!(agent_return_code("return code: -1\n"), Some(-1));
        assert_eq!(agent_return_code("0\n"), Some(0));
        assert_eq!(agent_return_code("return code: 0"), Some(0));
        assert_eq!(agent_return_code(""), None);
        assert_eq!(agent_return_code("loaded"), None);
    }

    #[test]
    fn parses_replies() {
        assert_eq!(
            parse_reply("0\nOpenJDK 17\n"),
            Some((0, "OpenJDK 17\n".into()))
        );
        assert_eq!(
            parse_reply("-1\n/x.so was not loaded."),
            Some((-1, "/x.so was not loaded.".into()))
        );
        assert_eq!(parse_reply("0"), Some((0, String::new())));
        assert_eq!(parse_reply("garbage\n"), None);
        assert_eq!(parse_reply(""), None);
    }
}
