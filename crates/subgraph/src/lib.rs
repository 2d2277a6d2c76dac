//! ferrofluid's call-subgraph planner: decides WHICH methods to instrument for CPU
//! profiling of the call subgraph under some root methods (JFluid, sections 6.1-6.2).
//! It never touches JVMTI: the agent reports loaded classes and first invocations and
//! retransforms what the returned [`Batch`]es name, with the ids handed out here.
//!
//! - [`MethodPattern`], [`ClassPattern`], [`ClassFilter`]: roots and `--include`/`--exclude`.
//! - [`ClassModel`]: a class's supertypes, methods, call sites (lambdas resolved) and static
//!   field accesses.
//! - [`Planner`]: the registry of loaded classes keyed by (loader, name), class-hierarchy
//!   analysis, the `lazy`/`eager`/`total` schemes, method ids and counters.
//! - [`ClassSelection`]: the per-class [`ferrofluid_classfile::Selection`] for retransforming.
//!
//! See `docs/subgraph.md` for the grammar, the schemes and what cannot be seen statically.
//!
//! ```
//! use ferrofluid_subgraph::{
//!     CallKind, CallSite, ClassModel, MethodModel, PlanConfig, Planner, Scheme, BOOTSTRAP,
//! };
//!
//! let config = PlanConfig {
//!     roots: vec!["demo.App::run".parse().unwrap()],
//!     scheme: Scheme::Lazy,
//!     ..PlanConfig::default()
//! };
//! let mut planner = Planner::new(config);
//! let run = MethodModel::new(
//!     "run",
//!     "()V",
//!     0x0009, // public static
//!     vec![CallSite::new(CallKind::Static, "demo/App", "work", "()V")],
//! );
//! let work = MethodModel::new("work", "()V", 0x0009, vec![]);
//! planner.add_model(BOOTSTRAP, &ClassModel::new("demo/App", None, &[], 0x0001, vec![run, work]));
//!
//! // The root is instrumented when its class loads...
//! let batch = planner.plan();
//! assert_eq!(batch.method_count(), 1);
//! let root = batch.classes[0].methods[0];
//! // ...and its callees at its first invocation.
//! let batch = planner.first_invocation(root).unwrap();
//! let work_id = batch.classes[0].methods[0];
//! assert_eq!(planner.method(work_id).unwrap().name, "work");
//! assert_eq!((planner.counters().instrumented, planner.counters().invoked), (2, 1));
//! ```
#![deny(missing_docs)]

pub mod alloc_class;
mod cha;
pub mod error;
mod intern;
pub mod model;
mod near;
pub mod pattern;
mod planner;
pub mod registry;
mod selection;

pub use alloc_class::AllocClassPattern;
pub use error::{PatternError, PatternErrorKind, SubgraphError};
pub use model::{CallKind, CallSite, ClassModel, Lambda, MethodModel};
pub use pattern::{ClassFilter, ClassPattern, MethodPattern};
pub use planner::{
    Batch, ClassBatch, Counters, Initialization, MethodId, MethodInfo, PlanConfig, Planner, Scheme,
    UnknownScheme, AGENT_PACKAGE, MIN_TARGETS, NEVER_INSTRUMENTED,
};
pub use registry::{LoaderId, RegistryStats, BOOTSTRAP};
pub use selection::ClassSelection;
