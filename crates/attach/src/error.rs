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

impl AttachError {
    /// Wraps an I/O error, turning the two kinds with a meaning of their own into their variants.
    pub(crate) fn io(pid: u32, owner: u32, context: &'static str, source: io::Error) -> Self {
        match source.kind() {
            io::ErrorKind::NotFound if context == "process" => AttachError::NoSuchProcess(pid),
            io::ErrorKind::PermissionDenied => AttachError::PermissionDenied { pid, owner },
            _ => AttachError::Io {
                pid,
                context,
                source,
            },
        }
    }
}
