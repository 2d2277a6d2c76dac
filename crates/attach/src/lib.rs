//! Finding running JVMs and loading agents into them, with no JDK tools needed.
//!
//! - [`list_jvms`] / [`describe`]: discovery from hsperfdata files (pid, main class, arguments, version),
//!   also for JVMs in other PID/mount namespaces.
//! - [`VirtualMachine`]: the HotSpot attach protocol (`load` an agent, run a `jcmd` command). When run as
//!   root it acts as the JVM's user, as HotSpot requires.
//!
//! ```no_run
//! let vm = ferrofluid_attach::VirtualMachine::attach(4242)?;
//! println!("{}", vm.jcmd("VM.version")?);
//! # Ok::<(), ferrofluid_attach::AttachError>(())
//! ```

mod client;
#[allow(unsafe_code)]
mod creds;
mod discover;
mod error;
pub mod hsperf;
pub mod procfs;

pub use client::{VirtualMachine, DEFAULT_COMMAND_TIMEOUT, DEFAULT_LISTENER_TIMEOUT};
pub use discover::{describe, list_jvms, JvmInfo};
pub use error::AttachError;
