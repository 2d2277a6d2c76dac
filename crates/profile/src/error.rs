//! Errors of the profile model.

use thiserror::Error;

use crate::method::MethodId;

/// A probe event that does not fit the simulated stack.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EventError {
    /// An exit whose method has no open frame (e.g. entered before recording began).
    #[error("exit of method {} with no open frame (stack depth {depth})", method.0)]
    UnmatchedExit {
        /// The exiting method.
        method: MethodId,
        /// Stack depth when the exit arrived.
        depth: usize,
    },
}

/// A JSON profile document that cannot be read.
#[derive(Debug, Error)]
pub enum DocumentError {
    /// Not JSON, or JSON of the wrong shape.
    #[error("not a ferrofluid profile: {0}")]
    Json(#[from] serde_json::Error),
    /// `format` is not `"ferrofluid"`.
    #[error("not a ferrofluid profile: format is {0:?}, expected \"ferrofluid\"")]
    Format(String),
    /// A `version` this build does not know.
    #[error("ferrofluid profile version {0} is not supported (this build reads version 1)")]
    Version(u32),
    /// A `mode` that is not a [`crate::Mode`].
    #[error(
        "profile mode {0:?} is not supported (expected one of cpu, region, alloc, count, native, sample)"
    )]
    Mode(String),
    /// A thread node below the root.
    #[error("thread {thread:?}: a \"thread\" node may only be a thread's root")]
    NestedThreadNode {
        /// Name of the offending thread.
        thread: String,
    },
}
