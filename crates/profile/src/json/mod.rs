//! The JSON profile document (`docs/json-schema.md`), and conversion to and from
//! [`Profile`]. Times in the document are compensated; measured values sit beside them
//! so that a document read back yields the same [`Profile`].

//!
//! [`Document`] and its parts are the document's shape; writing a profile as one and reading one
//! back are two modules of their own.

mod document;
mod native;
mod node;
mod read;
mod write;

pub use document::{
    CompensationDoc, Document, MethodCounts, MethodDoc, NativeDoc, ThreadDoc, UpcallTargetDoc,
    WaitingDoc, FORMAT, MODE_CPU, OVERFLOW_NODE_METHOD, PRETTY_MAX_DEPTH, THREAD_NODE_METHOD,
    VERSION,
};
pub use node::{MetricValues, NodeDoc, NodeKindDoc};
