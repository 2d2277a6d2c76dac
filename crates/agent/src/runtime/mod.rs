//! The runtime: the agent's lifecycle, the control server, sessions (the class bytes cache,
//! planning and retransformation, revelation), the JVMTI environment and its events.

pub mod handles;
pub mod jvm;
pub mod lifecycle;
pub mod logger;
pub mod owner;
pub mod private_dir;
pub mod receiver;
pub mod reveal;
pub mod server;
pub mod session;
