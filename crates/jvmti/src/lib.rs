//! A thin safe layer over the JVMTI and JNI calls the ferrofluid agent makes.
//!
//! - [`JavaVm`] → [`Jvmti`] (an environment, usable from any thread) and [`JniEnv`] (one thread's JNI
//!   interface, whose lifetime bounds the local references [`Class`] and [`Object`] it hands out).
//! - Every JVMTI error becomes [`Error::Jvmti`] naming the function, e.g.
//!   `JVMTI RetransformClasses failed: JVMTI_ERROR_UNMODIFIABLE_CLASS (79)`.
//! - JVMTI-allocated memory is a [`JvmtiBuf`] that deallocates on drop; raw monitors are RAII too.
//! - [`ffi_guard`] is the panic policy every `extern "C"` entry point must use.
//! - References kept beyond a native frame are [`GlobalRef`]/[`WeakGlobalRef`] (and their class
//!   forms), deleted when dropped; static fields are typed handles ([`StaticIntField`],
//!   [`StaticObjectField`]); the operating-system calls the agent makes are in [`os`].
//!
//! `unsafe` is confined to this crate, `ferrofluid-jvmti-sys` and the agent's `ffi` module; each block
//! says why it is sound.
//!
//! The types enforce the JNI rules that matter most. A `JniEnv` belongs to one thread:
//!
//! ```compile_fail
//! fn send<T: Send>(_: T) {}
//! fn f(env: ferrofluid_jvmti::JniEnv<'_>) { send(env) }
//! ```
//!
//! and a local reference cannot outlive the frame of the `JniEnv` that made it:
//!
//! ```compile_fail
//! use ferrofluid_jvmti::{Class, JavaVm};
//! fn escape(vm: JavaVm) -> Class<'static> {
//!     let mut found = None;
//!     vm.with_attached_thread("t", |env| found = env.find_class("java/lang/String").ok()).unwrap();
//!     found.unwrap()
//! }
//! ```
//!
//! while the environment and method IDs may be shared between threads:
//!
//! ```
//! fn shared<T: Send + Sync + Copy>() {}
//! shared::<ferrofluid_jvmti::Jvmti>();
//! shared::<ferrofluid_jvmti::MethodId>();
//! shared::<ferrofluid_jvmti::JavaVm>();
//! shared::<ferrofluid_jvmti::FieldId>();
//! fn owned<T: Send + Sync>() {}
//! owned::<ferrofluid_jvmti::GlobalRef>();
//! owned::<ferrofluid_jvmti::WeakGlobalClass>();
//! owned::<ferrofluid_jvmti::StaticObjectField>();
//! ```
//!
//! A reference borrowed from a global one cannot outlive it:
//!
//! ```compile_fail
//! use ferrofluid_jvmti::{GlobalRef, Object};
//! fn escape(global: GlobalRef) -> Object<'static> {
//!     global.as_local()
//! }
//! ```

#![allow(unsafe_code)]

pub use ferrofluid_jvmti_sys as sys;

mod buf;
mod cell;
mod env;
mod error;
mod global;
mod guard;
mod jni;
mod monitor;
pub mod os;
mod profiling;
mod refs;
mod statics;
mod typed;
mod vthread;

pub use buf::JvmtiBuf;
pub use env::{AgentThreadFn, ClassDefinition, Field, Jvmti, MethodName, ThreadInfo};
pub use error::{error_name, Error, Result};
pub use guard::ffi_guard;
pub use jni::{JavaVm, JniEnv};
pub use monitor::{MonitorGuard, RawMonitor};
pub use profiling::{inlined_methods, LineEntry};
pub use refs::{Class, FieldId, MethodId, Object};

pub use cell::JvmtiCell;
pub use global::{
    AnyClass, AnyObject, Global, GlobalClass, GlobalRef, Kind, LocalRef, Weak, WeakGlobalClass,
    WeakGlobalRef,
};
pub use statics::{class_name_of_type, StaticIntField, StaticObjectField};
pub use typed::{descriptor_matches, Primitive};
pub use vthread::{
    can_support_virtual_threads, virtual_threads_capability, EventCallbacks21, VirtualThreadFn,
    EVENT_VIRTUAL_THREAD_END, EVENT_VIRTUAL_THREAD_START,
};
