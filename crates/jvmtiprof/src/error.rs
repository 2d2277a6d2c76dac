//! The crate's error type.

/// What went wrong, in one line a user can act on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A JVMTI or JNI call failed (the message names the function and the JVM's error code).
    #[error(transparent)]
    Jvm(#[from] ferrofluid_jvmti::Error),
    /// The JVM cannot grant these capabilities in this phase (some are available only to an
    /// agent loaded at startup).
    #[error("the JVM refuses the JVMTI capabilities {0} (load the agent at startup with -agentpath if it was attached)")]
    Capabilities(String),
    /// An operating-system call failed.
    #[error("{what}: {source}")]
    Os {
        /// What was being done.
        what: &'static str,
        /// The system's error.
        source: std::io::Error,
    },
    /// A setting is out of range or inconsistent.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// This JVM does not offer what is needed (e.g. `AsyncGetCallTrace` outside HotSpot).
    #[error("not available in this JVM: {0}")]
    Unavailable(String),
    /// Only one of these may run at a time in a process.
    #[error("{0} is already running in this process")]
    Busy(&'static str),
    /// A method pattern could not be parsed.
    #[error("invalid method pattern '{pattern}': {reason}")]
    Pattern {
        /// The pattern as given.
        pattern: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// `Result<T, jvmtiprof::Error>`.
pub type Result<T> = std::result::Result<T, Error>;
