//! The one error type of this crate; each variant's message is a complete sentence for the CLI.

use std::io;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error("no process with pid {0}")]
    NoSuchProcess(u32),
    #[error("process {pid} is not a Java virtual machine ({reason})")]
    NotJava { pid: u32, reason: String },
    #[error("permission denied: process {pid} belongs to uid {owner}; run ferrofluid as that user or as root")]
    PermissionDenied { pid: u32, owner: u32 },
    #[error(
        "JVM {pid} did not start its attach listener within {}s (was it started with -XX:+DisableAttachMechanism?)",
        .waited.as_secs_f32()
    )]
    Timeout { pid: u32, waited: Duration },
    #[error("JVM {pid} could not load the agent: {message}")]
    AgentLoadFailed { pid: u32, message: String },
    #[error("JVM {pid} refused command `{command}` (code {code}): {message}")]
    CommandFailed {
        pid: u32,
        command: String,
        code: i32,
        message: String,
    },
    #[error("JVM {pid}: malformed attach reply: {0:?}", .reply)]
    Protocol { pid: u32, reply: String },
    #[error("attach to {pid}: {context}: {source}")]
    Io {
        pid: u32,
        context: &'static str,
        #[source]
        source: io::Error,
    },
}

/// Steps that read or signal the process itself: `NotFound` there means it is gone.
const PROCESS_STEPS: [&str; 3] = [READING_STATUS, READING_MAPS, SENDING_SIGQUIT];
pub(crate) const READING_STATUS: &str = "reading its /proc status";
pub(crate) const READING_MAPS: &str = "reading its /proc memory map";
pub(crate) const SENDING_SIGQUIT: &str = "sending SIGQUIT";

impl AttachError {
    /// Wraps an I/O error, turning the two kinds with a meaning of their own into their variants.
    ///
    /// A refusal is the user's to fix (run as the JVM's owner) only when ferrofluid is not root; a
    /// root tool refused at some step (no `CAP_SYS_PTRACE` in a container, a hardened kernel) gets
    /// the step and the system's reason instead of advice it already follows.
    pub(crate) fn io(pid: u32, owner: u32, context: &'static str, source: io::Error) -> Self {
        match source.kind() {
            io::ErrorKind::NotFound if PROCESS_STEPS.contains(&context) => {
                AttachError::NoSuchProcess(pid)
            }
            io::ErrorKind::PermissionDenied if !crate::creds::is_root() => {
                AttachError::PermissionDenied { pid, owner }
            }
            _ => AttachError::Io {
                pid,
                context,
                source,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_step_names_itself_for_root_and_advises_others() {
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        let err = AttachError::io(42, 999, READING_MAPS, denied);
        if crate::creds::is_root() {
            assert_eq!(
                err.to_string(),
                "attach to 42: reading its /proc memory map: permission denied"
            );
        } else {
            assert_eq!(
                err.to_string(),
                "permission denied: process 42 belongs to uid 999; run ferrofluid as that user or as root"
            );
        }
    }

    #[test]
    fn a_process_step_not_finding_it_means_it_is_gone() {
        let gone = || io::Error::from(io::ErrorKind::NotFound);
        assert!(matches!(
            AttachError::io(7, 0, SENDING_SIGQUIT, gone()),
            AttachError::NoSuchProcess(7)
        ));
        assert!(matches!(
            AttachError::io(7, 0, "attach socket", gone()),
            AttachError::Io { pid: 7, .. }
        ));
    }
}
