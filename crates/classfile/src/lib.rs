//! ferrofluid's class-file engine: a zero-copy reader and a byte-preserving patcher
//! that inserts profiling probes while keeping every class verifiable.
//!
//! The engine never renumbers the constant pool and never touches a byte it does not
//! have to: the constant pool is copied and new entries appended, unchanged members and
//! attributes are copied as slices, and only the `Code` attributes of patched methods
//! are rebuilt. This is what `RetransformClasses` requires, and it means a class read
//! and written with no change is byte-identical to its input.
//!
//! ```
//! use ferrofluid_classfile::{instrument, ProbeKind, ProbeOptions};
//! # let bytes = ferrofluid_classfile::testing::minimal_class();
//! let options = ProbeOptions::new(ProbeKind::EntryExit);
//! let mut next_id = 0;
//! let out = instrument(&bytes, &options, &mut |_m: &ferrofluid_classfile::MethodSite<'_>| {
//!     next_id += 1;
//!     Some(next_id)
//! })
//! .unwrap();
//! assert!(out.bytes.is_some());
//! ```
#![deny(missing_docs)]

pub mod attributes;
pub mod bytes;
pub mod class;
pub mod code;
pub mod constant_pool;
pub mod descriptor;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod hooks_class;
pub mod patch;
pub mod probes;
#[doc(hidden)]
pub mod testing;

pub use class::{ClassFile, Member, RawAttribute};
pub use constant_pool::{Constant, ConstantPool};
pub use error::{ClassError, ErrorKind, Result};
pub use hooks_class::{hooks_class, native_hooks_class};
pub use probes::{
    instrument, instrument_reveal, CallSite, HookMethod, Hooks, Instrumented, Invoke,
    MethodOutcome, MethodSite, ProbeKind, ProbeOptions, Selection, SkipReason, VmAllocKind,
};
