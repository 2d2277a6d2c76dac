//! What the probe machinery asks of the runtime, which registers itself here when the agent
//! starts: the probes run in JVM natives that carry no user data, so the runtime is found
//! through this one registration, never named.

use std::sync::OnceLock;

use ferrofluid_jvmti::{JniEnv, Jvmti};

/// Internal class name, method name, descriptor.
pub type MethodName = (String, String, String);

/// The runtime's services to the probes.
pub trait Upcalls: Sync {
    /// Lazy revelation: global method `id` is invoked for the first time on this thread, inside
    /// a root's extent; its callees are instrumented before this returns (or queued for the
    /// reveal thread). `env`: the thread's, `None` without a JVM.
    fn first_invocation(&self, env: Option<&JniEnv<'_>>, id: u32);
    /// The Java id (`Thread.getId()`) and name of the current thread, as far as they can be
    /// read.
    fn thread_identity(&self, env: &JniEnv<'_>) -> (Option<u64>, Option<String>);
    /// The class, name and descriptor of global method `id`, if a session chose it.
    fn method_name(&self, id: u32) -> Option<MethodName>;
    /// The agent's JVMTI environment, while it is attached.
    fn jvmti(&self) -> Option<Jvmti>;
}

// Process-wide: the probes and the collector find the runtime from JVM natives without user
// data.
static UPCALLS: OnceLock<&'static dyn Upcalls> = OnceLock::new();

/// Registers the runtime (once per process; later calls keep the first).
pub fn register(upcalls: &'static dyn Upcalls) {
    let _ = UPCALLS.set(upcalls);
}

/// The runtime, once registered (never in unit tests and benchmarks, which run without a JVM).
#[inline]
pub fn upcalls() -> Option<&'static dyn Upcalls> {
    UPCALLS.get().copied()
}
