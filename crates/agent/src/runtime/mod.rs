//! The runtime, the top layer: the agent's lifecycle and control server, sessions (the class
//! bytes cache, planning and retransformation, revelation), the JVMTI environment and its
//! events, the thread registry. It drives the engines through `crate::engine` and hands them
//! its services as a [`context::Runtime`]; the layers below reach it only through what it
//! registers (`probe::upcalls`, the FFI layer's handler traits).

pub mod census;
pub mod context;
pub mod events;
pub mod handles;
pub mod jvm;
pub mod lifecycle;
pub mod logger;
pub mod natives;
pub mod owner;
pub mod private_dir;
pub mod push;
pub mod receiver;
pub mod reveal;
pub mod server;
pub mod session;
pub mod snapshot;
pub mod threads;
