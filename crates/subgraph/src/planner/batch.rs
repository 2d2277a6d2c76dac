//! What the planner answers: the methods to instrument now, by class, and its counters.

use crate::registry::{LoaderId, RegistryStats};
#[cfg(doc)]
use crate::{PlanConfig, Planner};

use super::MethodId;

/// The methods of one class to instrument now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassBatch {
    /// The class's defining loader.
    pub loader: LoaderId,
    /// Internal name.
    pub class: String,
    /// Methods newly chosen in this class. The class's full set (what a retransformation
    /// must instrument) is what [`Planner::selection_for`] selects.
    pub methods: Vec<MethodId>,
}

/// Methods to instrument now, grouped by class, in registration order of the classes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    /// One entry per class with new methods.
    pub classes: Vec<ClassBatch>,
}

impl Batch {
    /// Nothing to do.
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }

    /// Number of methods in the batch.
    pub fn method_count(&self) -> usize {
        self.classes.iter().map(|c| c.methods.len()).sum()
    }

    /// All method ids, class by class.
    pub fn ids(&self) -> impl Iterator<Item = MethodId> + '_ {
        self.classes.iter().flat_map(|c| c.methods.iter().copied())
    }
}

/// JFluid tables 1-2 and registry sizes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Methods chosen for instrumentation (ids handed out).
    pub instrumented: usize,
    /// Of those, methods the agent reported as invoked.
    pub invoked: usize,
    /// Methods that would have been chosen but were left out as trivial
    /// ([`PlanConfig::skip_trivial`]).
    pub trivial_skipped: usize,
    /// Call sites whose class is not loaded yet, kept until it is.
    pub pending_call_sites: usize,
    /// Sites whose targets are chosen at run time: virtual calls by the receivers seen, and
    /// deferred calls when they first run.
    pub receiver_sites: usize,
    /// Of those, deferred sites (one per basic block with deferred calls).
    pub deferred_sites: usize,
    /// Registry sizes.
    pub registry: RegistryStats,
}

/// A chosen method, by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodInfo<'p> {
    /// Its id.
    pub id: MethodId,
    /// Defining loader of its class.
    pub loader: LoaderId,
    /// Internal name of its class.
    pub class: &'p str,
    /// Name.
    pub name: &'p str,
    /// Descriptor.
    pub descriptor: &'p str,
    /// Access flags.
    pub access: u16,
    /// Whether its first invocation was reported.
    pub invoked: bool,
}
