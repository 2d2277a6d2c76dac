//! Classes the profiler could not instrument or restore: named in the profile and its reports,
//! so that a profile missing part of its subgraph says which part and why.

use serde::{Deserialize, Serialize};

/// When a class failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClassPhase {
    /// Adding probes (at the session's start or as the subgraph was revealed): the class kept
    /// its original bytes, so calls into it are in its callers' self time.
    Instrument,
    /// Removing probes at the session's end: the class may still carry probes, which record
    /// nothing once the session is over.
    Restore,
}

/// One class that was not instrumented or restored.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FailedClass {
    /// Dotted class name.
    pub class: String,
    /// When it failed.
    pub phase: ClassPhase,
    /// Why: the JVMTI error or the engine's, or why it was not tried.
    pub error: String,
    /// Not tried, because the JVM could not take it and none of its code can run: never linked
    /// (its verification failed) or in error state (its static initialiser failed). Written only
    /// when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
}

impl FailedClass {
    /// A class named by its internal (`a/b/C`) or dotted name.
    pub fn new(class: &str, phase: ClassPhase, error: impl Into<String>, skipped: bool) -> Self {
        Self {
            class: class.replace('/', "."),
            phase,
            error: error.into(),
            skipped,
        }
    }
}

/// Adds `more` to `list`, leaving out a class already listed for the same phase.
pub fn merge_failed(list: &mut Vec<FailedClass>, more: impl IntoIterator<Item = FailedClass>) {
    for f in more {
        if !list
            .iter()
            .any(|g| g.class == f.class && g.phase == f.phase)
        {
            list.push(f);
        }
    }
}
