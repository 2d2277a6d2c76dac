//! The drain: a thread of the agent, attached to the JVM, that empties the sampler's buffer
//! every 10 ms, names the frames (JVMTI, off the signal) and adds each sample to its group's
//! tree. It keeps what a snapshot needs ([`Collected`]) under a lock that a snapshot takes
//! briefly; the sampler itself never waits for it.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ferrofluid_jvmti::{JavaVm, JniEnv, MethodId};
use ferrofluid_profile::MethodInfo;
use jvmtiprof::sampler::{Clock, FrameType, Sample, SampleState, Samples, Stats};
use jvmtiprof::stack::MethodResolver;
use jvmtiprof::threads::JavaThread;
use rustc_hash::{FxHashMap, FxHashSet};

use super::tree::{Group, Methods, Tree};

/// How often the buffer is emptied.
const EVERY: Duration = Duration::from_millis(10);

/// What the samples made so far.
#[derive(Default)]
pub struct Collected {
    pub methods: Methods,
    pub trees: BTreeMap<Group, Tree>,
    /// The Java identity of the threads of [`Group::Thread`] groups, once known.
    pub threads: FxHashMap<(u32, u32), JavaThread>,
    /// A thread's `JNIEnv` address, to learn its identity.
    envs: FxHashMap<(u32, u32), usize>,
    /// Samples without a stack, by reason.
    pub without_stack: BTreeMap<&'static str, u64>,
    /// With roots: samples of a marked thread whose stack held no root.
    pub outside_roots: u64,
    /// The sampler's counters at the last drain.
    pub stats: Stats,
}

/// The session's roots by name (dotted class, method, descriptor), as the runtime chose them.
pub type RootNames = Arc<Mutex<HashSet<(String, String, String)>>>;

/// What the drain needs besides the samples.
pub struct Setup {
    pub collected: Arc<Mutex<Collected>>,
    pub stop: Arc<AtomicBool>,
    /// `Some` for a hybrid session.
    pub roots: Option<RootNames>,
    pub per_thread: bool,
}

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The drain's own state: the names of methods seen, by `jmethodID`.
struct Drain {
    setup: Setup,
    names: MethodResolver,
    by_id: FxHashMap<usize, u32>,
    root_indices: FxHashSet<u32>,
    /// Method indices of `java.lang.VirtualThread.run`, where a virtual thread's stack begins.
    vthread_run: FxHashSet<u32>,
    own_tid: u32,
    /// How many root names `root_indices` was made for.
    roots_seen: usize,
    /// Whether a thread (registry key) is one of the JIT's compiler threads, once asked.
    compilers: FxHashMap<(u32, u32), bool>,
    path: Vec<u32>,
}

/// Runs the drain until `setup.stop`, then drains once more.
pub fn run(vm: JavaVm, mut samples: Samples, setup: Setup) {
    let result = vm.with_attached_thread("ferrofluid-sampler", |env| {
        let names = match MethodResolver::new(vm) {
            Ok(n) => n,
            Err(e) => {
                log::error!("sample: no JVMTI environment to name methods: {e}");
                return;
            }
        };
        let mut drain = Drain {
            setup,
            names,
            by_id: FxHashMap::default(),
            root_indices: FxHashSet::default(),
            vthread_run: FxHashSet::default(),
            own_tid: jvmtiprof::threads::registry()
                .register_current()
                .map_or(0, |k| k.tid()),
            roots_seen: 0,
            compilers: FxHashMap::default(),
            path: Vec::new(),
        };
        loop {
            let stopping = drain.setup.stop.load(Ordering::Acquire);
            drain.once(env, &mut samples);
            if stopping {
                break;
            }
            // Unparked by the stop, so that a JVM's exit does not wait for the sleep.
            std::thread::park_timeout(EVERY);
        }
    });
    if let Err(e) = result {
        log::error!("sample: attaching the drain thread: {e}");
    }
}

impl Drain {
    fn once(&mut self, env: &JniEnv<'_>, samples: &mut Samples) {
        let roots = self.setup.roots.as_ref().map(|r| lock(r).clone());
        let collected = Arc::clone(&self.setup.collected);
        let mut c = lock(&collected);
        if let Some(roots) = roots.as_ref().filter(|r| r.len() != self.roots_seen) {
            // Roots chosen since: methods named before may be among them.
            self.roots_seen = roots.len();
            self.root_indices = c.methods.indices_of(|m| {
                roots.contains(&(m.class.clone(), m.method.clone(), m.descriptor.clone()))
            });
        }
        samples.drain(|s| self.add(env, &mut c, roots.as_ref(), s));
        c.stats = samples.stats();
        let unknown: Vec<((u32, u32), usize)> = c
            .envs
            .iter()
            .filter(|(k, _)| !c.threads.contains_key(k))
            .map(|(k, e)| (*k, *e))
            .collect();
        drop(c);
        // Threads first seen: their Java names (JVMTI calls, outside the lock).
        for (key, jni_env) in unknown {
            let Some(thread) = jvmtiprof::threads::registry().lookup(key.0) else {
                continue;
            };
            let probe = Sample {
                thread,
                clock: Clock::Cpu,
                time_ns: 0,
                weight_ns: 0,
                state: SampleState::Unknown,
                pc: 0,
                frames: &[],
                error: None,
                user: [0; 2],
                repeated: false,
                jni_env,
            };
            if let Some(t) = samples.java_thread(env, &probe) {
                lock(&collected).threads.insert(key, t);
            }
        }
    }

    /// The session's index of method `m`, named.
    fn method(
        &mut self,
        env: &JniEnv<'_>,
        c: &mut Collected,
        roots: Option<&HashSet<(String, String, String)>>,
        m: Option<MethodId>,
    ) -> u32 {
        let Some(m) = m else {
            return c.methods.intern(MethodInfo::new("[unknown]", "", ""));
        };
        let raw = m.as_raw() as usize;
        if let Some(&i) = self.by_id.get(&raw) {
            return i;
        }
        let info = match self.names.resolve(env, m) {
            Some(i) => MethodInfo::new(i.class.as_str(), i.name.as_str(), i.descriptor.as_str()),
            // Its class was unloaded since.
            None => return c.methods.intern(MethodInfo::new("[unknown]", "", "")),
        };
        let key = (info.class.clone(), info.method.clone(), info.descriptor.clone());
        let i = c.methods.intern(info);
        if roots.is_some_and(|r| r.contains(&key)) {
            self.root_indices.insert(i);
        }
        if key.0 == "java.lang.VirtualThread" && key.1 == "run" {
            self.vthread_run.insert(i);
        }
        self.by_id.insert(raw, i);
        i
    }

    fn add(
        &mut self,
        env: &JniEnv<'_>,
        c: &mut Collected,
        roots: Option<&HashSet<(String, String, String)>>,
        s: &Sample<'_>,
    ) {
        if s.thread.tid() == self.own_tid {
            return;
        }
        let key = (s.thread.tid(), s.thread.generation());
        let mut group = if self.setup.per_thread {
            Group::Thread(key.0, key.1)
        } else {
            Group::All
        };
        if let Some(e) = s.error {
            let mut name = e.name();
            // HotSpot's compiler threads are Java threads without Java frames: their samples are
            // the JIT's CPU time, worth naming as such.
            if name == "unknown_not_java"
                && *self
                    .compilers
                    .entry(key)
                    .or_insert_with(|| is_compiler_thread(key.0))
            {
                name = JIT_COMPILER;
            }
            *c.without_stack.entry(name).or_default() += 1;
            let m = c.methods.intern(MethodInfo::new(format!("[{name}]"), "", ""));
            c.trees
                .entry(group)
                .or_default()
                .add(std::iter::once(m), s.weight_ns, None, state(s));
            return;
        }
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        for f in s.frames {
            let m = self.method(env, c, roots, f.method);
            path.push(m);
        }
        // A virtual thread's own stack ends at `VirtualThread.run`: the carrier's frames go.
        if let Some(at) = path.iter().position(|m| self.vthread_run.contains(m)) {
            path.truncate(at + 1);
            if self.setup.per_thread {
                group = Group::Virtual;
            }
        }
        if roots.is_some() {
            match path.iter().rposition(|m| self.root_indices.contains(m)) {
                Some(at) => path.truncate(at + 1),
                None => {
                    c.outside_roots += 1;
                    self.path = path;
                    return;
                }
            }
        }
        if let Group::Thread(..) = group {
            if s.jni_env != 0 {
                c.envs.insert(key, s.jni_env);
            }
        }
        let kind = s.frames.first().and_then(|f| match f.kind {
            FrameType::Interpreted => Some(0),
            FrameType::Compiled => Some(1),
            FrameType::Inlined => Some(2),
            FrameType::Native => Some(3),
            _ => None,
        });
        c.trees
            .entry(group)
            .or_default()
            .add(path.iter().rev().copied(), s.weight_ns, kind, state(s));
        self.path = path;
    }
}

/// The reason given to the samples of the JIT's compiler threads.
pub const JIT_COMPILER: &str = "jit_compiler";

/// Whether thread `tid` of this process is one of HotSpot's compiler threads (named `C1
/// CompilerThreadN`, `C2 CompilerThreadN`, cut to 15 bytes by the kernel).
fn is_compiler_thread(tid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).is_ok_and(|name| {
        let name = name.trim_end();
        (name.starts_with("C1 ") || name.starts_with("C2 ")) && name[3..].starts_with("Compiler")
    })
}

/// A wall-clock sample's thread state: an index of
/// [`THREAD_STATES`](ferrofluid_profile::sampling::THREAD_STATES) (running, waiting).
fn state(s: &Sample<'_>) -> Option<usize> {
    match (s.clock, s.state) {
        (Clock::Wall, SampleState::Running) => Some(0),
        (Clock::Wall, SampleState::Syscall | SampleState::Idle) => Some(1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's kernel id, from `/proc/thread-self` (`/proc/PID/task/TID`).
    fn own_tid() -> u32 {
        let link = std::fs::read_link("/proc/thread-self").unwrap();
        link.file_name().unwrap().to_str().unwrap().parse().unwrap()
    }

    #[test]
    fn compiler_threads_are_known_by_their_names() {
        let named = |name: &str| {
            std::thread::Builder::new()
                .name(name.to_owned())
                .spawn(|| is_compiler_thread(own_tid()))
                .unwrap()
                .join()
                .unwrap()
        };
        assert!(named("C2 CompilerThread0"));
        assert!(named("C1 CompilerThread12"));
        assert!(!named("main"));
        assert!(!named("C2 Worker"));
        assert!(!is_compiler_thread(u32::MAX));
    }
}
