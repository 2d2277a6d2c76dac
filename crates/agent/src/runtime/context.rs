//! What the runtime hands down: the active engine's session, the [`engine::Context`] every
//! call into an engine's session gets (the runtime's narrow services to engines), and the
//! [`Upcalls`] the probe machinery finds the runtime through.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use ferrofluid_jvmti::{JavaVm, JniEnv, Jvmti};
use ferrofluid_protocol::AgentOptions;

use crate::engine::{self, ClassKey, EngineSession, MethodName, Selected};
use crate::probe::upcalls::{self, Upcalls};
use crate::runtime::census::Census;
use crate::runtime::{jvm, lifecycle, session};

/// The engine whose probes run, and its session.
#[derive(Clone)]
pub struct Active {
    pub engine: Selected,
    pub session: Arc<dyn EngineSession>,
}

// Process-wide: JVMTI callbacks (ThreadStart, ThreadEnd) and the collector thread reach the
// session's engine; the lifecycle's own lock may be held across JVMTI calls.
/// The active engine's session, from its start until the next session or detach.
static ACTIVE: RwLock<Option<Active>> = RwLock::new(None);

/// The active engine and its session, if a session was started since the agent attached.
pub fn active() -> Option<Active> {
    ACTIVE.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Opens `engine`'s session for `options` on this Java thread and makes it the active one (the
/// previous one is let go); the probes reach the engine from [`engine::activate`] on.
pub fn open(engine: Selected, env: &JniEnv<'_>, options: &AgentOptions) -> Active {
    let session: Arc<dyn EngineSession> = Arc::from(engine.open(&Runtime::on(env), options));
    let active = Active { engine, session };
    *ACTIVE.write().unwrap_or_else(|p| p.into_inner()) = Some(active.clone());
    active
}

/// Lets the active session go (the agent detaches).
pub fn close() {
    let old = ACTIVE.write().unwrap_or_else(|p| p.into_inner()).take();
    drop(old);
}

/// The runtime as an engine sees it, on a thread attached to the JVM (`env`) or not.
pub struct Runtime<'a> {
    env: Option<&'a JniEnv<'a>>,
}

impl<'a> Runtime<'a> {
    /// On a Java thread.
    pub fn on(env: &'a JniEnv<'a>) -> Runtime<'a> {
        Runtime { env: Some(env) }
    }

    /// On a thread of the agent's (the collector, a control thread not attached).
    pub fn detached() -> Runtime<'static> {
        Runtime { env: None }
    }
}

impl Runtime<'_> {
    /// `f` on this Java thread, or on a thread attached to the JVM as `name`; `None` without a
    /// JVM or when the thread cannot be attached.
    fn on_java_thread<T>(&self, name: &str, f: impl FnOnce(&JniEnv<'_>) -> T) -> Option<T> {
        match self.env {
            Some(env) => Some(f(env)),
            None => jvm::java_vm()?.with_attached_thread(name, f).ok(),
        }
    }
}

impl engine::Context for Runtime<'_> {
    fn vm(&self) -> Option<JavaVm> {
        jvm::java_vm()
    }

    fn jvmti(&self) -> Option<Jvmti> {
        jvm::jvmti()
    }

    fn method_name(&self, id: u32) -> Option<MethodName> {
        session::method_name(id)
    }

    fn instrumented(&self) -> bool {
        session::running()
    }

    fn dropped_ids(&self) -> Vec<u32> {
        session::dropped_ids()
    }

    fn drops_in_java(&self) -> bool {
        session::drops_in_java()
    }

    fn drop_probes(&self, drop: &[u32], quiet: &[u32], retransform: &[u32]) -> Vec<u32> {
        lifecycle::drop_probes(drop, quiet, retransform)
    }

    fn jdk_classes_inlined(&self, share: f64) -> Option<HashMap<String, usize>> {
        let jvmti = jvm::jvmti()?;
        let census = self.on_java_thread("ferrofluid-census", |env| Census::take(jvmti, env));
        match census.unwrap_or_else(|| Err("no Java thread to read it on".to_owned())) {
            Ok(census) => Some(census.inlined_into(share, |_| false).into_iter().collect()),
            Err(e) => {
                log::warn!("compiled code not read ({e})");
                None
            }
        }
    }

    fn replan(&self, plan: &mut dyn FnMut() -> Vec<ClassKey>) -> bool {
        let Some(jvmti) = jvm::jvmti() else {
            return false;
        };
        self.on_java_thread("ferrofluid-replan", |env| session::replan(jvmti, env, plan))
            .unwrap_or(false)
    }
}

/// The runtime's services to the probe machinery.
struct Probes;

impl Upcalls for Probes {
    fn first_invocation(&self, env: Option<&JniEnv<'_>>, id: u32) {
        session::first_invocation(env, id)
    }

    fn thread_identity(&self, env: &JniEnv<'_>) -> (Option<u64>, Option<String>) {
        jvm::thread_identity(env)
    }

    fn method_name(&self, id: u32) -> Option<MethodName> {
        session::method_name(id)
    }

    fn jvmti(&self) -> Option<Jvmti> {
        jvm::jvmti()
    }
}

/// Registers the runtime's services with the probe machinery (at every start; the first
/// registration stays).
pub fn register_upcalls() {
    upcalls::register(&Probes);
}
