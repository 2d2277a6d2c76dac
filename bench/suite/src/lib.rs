//! The overhead and correctness suite: real Java workloads from Debian packages, each
//! run as a baseline, under ferrofluid's modes and beside the anchors users compare with (JFR and
//! a JVMTI MethodEntry/MethodExit agent). Every run's checksum must equal the baseline's; the
//! table goes into docs/PERFORMANCE.md. See bench/README.md.

pub mod charged;
pub mod compare;
pub mod doc;
pub mod exec;
pub mod modes;
pub mod native_share;
pub mod prepare;
pub mod suite;
pub mod table;
pub mod workloads;

use std::path::PathBuf;

/// Everything that can stop the suite; the CLI prints it as one line.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Setup(String),
    #[error("{} not found; run bench/suite/prepare.sh first", .0.display())]
    NotPrepared(PathBuf),
}

impl SuiteError {
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SuiteError {
        let what = what.into();
        move |source| SuiteError::Io { what, source }
    }
}
