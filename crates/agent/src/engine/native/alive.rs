//! How long each thread is alive while a `native` session records, and its CPU time then: a
//! thread's bytecode time is that less its native time, including the bytecode it runs between
//! native calls, which no event marks (IPA counts a thread's whole life the same way).
//!
//! The threads alive when recording starts are listed (JVMTI `GetAllThreads`) and read then;
//! later ones at their ThreadStart, on the thread; a thread that ends is read at its ThreadEnd;
//! the others when the profile is taken (or when collection stops). The agent's own threads are
//! left out. CPU times are the JVMTI thread CPU clocks (`GetThreadCpuTime`, the current thread's
//! own at its start and end), read with or without `cpu`: they tell an idle thread (one that
//! waits in the JVM all along, as the Signal Dispatcher does) from one running bytecode.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use ferrofluid_jvmti::{JniEnv, Jvmti, Object};
use ferrofluid_profile::Alive;

use crate::probe::clock;

/// The threads the map keeps at most; past it, threads starting are not followed (counted,
/// logged): their time is their tree's, as without this measurement.
const MAX_THREADS: usize = 65_536;

/// A thread's name prefix for the agent's own threads.
const AGENT_THREADS: &str = "ferrofluid-";

/// One thread's span so far.
#[derive(Debug, Clone)]
struct Life {
    name: String,
    /// `clock::now()` at its start (or the recording's).
    start_ns: u64,
    cpu_start: Option<u64>,
    /// Set at its end (or when collection stopped).
    end: Option<(u64, Option<u64>)>,
}

impl Life {
    fn starting(name: String, start_ns: u64, cpu_start: Option<u64>) -> Life {
        Life {
            name,
            start_ns,
            cpu_start,
            end: None,
        }
    }
}

/// A thread's time alive, measured.
#[derive(Debug, Clone)]
pub(super) struct Lived {
    pub name: String,
    /// What the profile says (CPU time when asked for).
    pub alive: Alive,
    /// Its CPU time over the span, whether asked for or not, if it could be read.
    pub cpu_ns: Option<u64>,
}

impl Lived {
    /// It ran (on the CPU) less than 1% of its span: a thread waiting in the JVM all along.
    pub fn idle(&self) -> bool {
        self.cpu_ns
            .is_some_and(|cpu| cpu.saturating_mul(100) < self.alive.wall_ns)
    }
}

/// The spans of one recording, by Java thread id.
#[derive(Debug, Default)]
pub(super) struct Lifetimes {
    cpu: bool,
    threads: Mutex<HashMap<u64, Life>>,
    not_followed: AtomicU64,
}

/// A thread's Java id (`Thread.tid`) and name; `None` for the agent's threads or a thread
/// JVMTI or JNI cannot read.
fn identity(jvmti: Jvmti, env: &JniEnv<'_>, thread: Object<'_>) -> Option<(u64, String)> {
    let name = jvmti.thread_info(env, thread).ok()?.name;
    if name.starts_with(AGENT_THREADS) {
        return None;
    }
    let id = env.long_field(thread, c"tid").ok().filter(|&id| id > 0)?;
    Some((id as u64, name))
}

/// `thread`'s CPU time, ns, if it can be read.
fn cpu_of(jvmti: Jvmti, thread: Object<'_>) -> Option<u64> {
    jvmti.thread_cpu_time(thread).ok().map(|ns| ns.max(0) as u64)
}

impl Lifetimes {
    pub(super) fn new(cpu: bool) -> Self {
        Self {
            cpu,
            ..Self::default()
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Life>> {
        self.threads.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Recording starts (or starts again): every live thread's span begins now.
    pub(super) fn begin(&self, jvmti: Jvmti, env: &JniEnv<'_>) {
        let now = clock::now();
        let read = self.live(jvmti, env);
        let mut threads = self.lock();
        threads.clear();
        self.not_followed
            .store(0, Ordering::Relaxed);
        for (id, name, cpu) in read.into_iter().take(MAX_THREADS) {
            threads.insert(id, Life::starting(name, now, cpu));
        }
    }

    /// Every live thread but the agent's: Java id, name and CPU time now. Read without the
    /// lock (JVMTI and JNI calls).
    fn live(&self, jvmti: Jvmti, env: &JniEnv<'_>) -> Vec<(u64, String, Option<u64>)> {
        let threads = match jvmti.all_threads(env) {
            Ok(t) => t,
            Err(e) => {
                log::warn!("native: listing threads: {e}");
                return Vec::new();
            }
        };
        let mut read = Vec::with_capacity(threads.len());
        for &thread in threads.iter() {
            if let Some((id, name)) = identity(jvmti, env, thread) {
                read.push((id, name, cpu_of(jvmti, thread)));
            }
            env.delete_local_ref(thread);
        }
        read
    }

    /// The current thread starts (its ThreadStart): its span begins now.
    pub(super) fn started(&self, jvmti: Jvmti, env: &JniEnv<'_>) {
        let Some((id, name)) = current(jvmti, env) else {
            return;
        };
        let cpu = Some(ferrofluid_jvmti::os::thread_cpu_ns());
        let now = clock::now();
        let mut threads = self.lock();
        if threads.len() >= MAX_THREADS && !threads.contains_key(&id) {
            self.not_followed
                .fetch_add(1, Ordering::Relaxed);
            return;
        }
        threads.insert(id, Life::starting(name, now, cpu));
    }

    /// The current thread ends (its ThreadEnd): its span ends now.
    pub(super) fn ended(&self, jvmti: Jvmti, env: &JniEnv<'_>) {
        let Some((id, _)) = current(jvmti, env) else {
            return;
        };
        let cpu = Some(ferrofluid_jvmti::os::thread_cpu_ns());
        let now = clock::now();
        if let Some(life) = self.lock().get_mut(&id) {
            life.end.get_or_insert((now, cpu));
        }
    }

    /// Collection stops: every span still open ends now.
    pub(super) fn end_all(&self, jvmti: Jvmti, env: &JniEnv<'_>) {
        let now = clock::now();
        let read = self.live(jvmti, env);
        let mut threads = self.lock();
        for (id, _, cpu) in read {
            if let Some(life) = threads.get_mut(&id) {
                life.end.get_or_insert((now, cpu));
            }
        }
    }

    /// Every followed thread's time alive so far, by Java id: the open spans as if they ended
    /// now.
    pub(super) fn measure(&self, jvmti: Option<Jvmti>, env: Option<&JniEnv<'_>>) -> HashMap<u64, Lived> {
        let now = clock::now();
        let cpu_now: HashMap<u64, Option<u64>> = match (jvmti, env) {
            (Some(jvmti), Some(env)) => self
                .live(jvmti, env)
                .into_iter()
                .map(|(id, _, cpu)| (id, cpu))
                .collect(),
            _ => HashMap::new(),
        };
        let not_followed = self
            .not_followed
            .load(Ordering::Relaxed);
        if not_followed > 0 {
            log::info!(
                "native: {not_followed} threads started past {MAX_THREADS} followed: their bytecode time is their natives' upcalls' only"
            );
        }
        self.lock()
            .iter()
            .map(|(&id, life)| {
                let (end, cpu_end) = life
                    .end
                    .unwrap_or_else(|| (now, cpu_now.get(&id).copied().flatten()));
                let cpu_ns = match (life.cpu_start, cpu_end) {
                    (Some(start), Some(end)) => Some(end.saturating_sub(start)),
                    _ => None,
                };
                let lived = Lived {
                    name: life.name.clone(),
                    alive: Alive {
                        wall_ns: end.saturating_sub(life.start_ns),
                        cpu_ns: cpu_ns.filter(|_| self.cpu),
                    },
                    cpu_ns,
                };
                (id, lived)
            })
            .collect()
    }
}

/// The current thread's Java id and name ([`identity`]).
fn current(jvmti: Jvmti, env: &JniEnv<'_>) -> Option<(u64, String)> {
    let thread = jvmti.current_thread(env).ok()?;
    let identity = identity(jvmti, env, thread);
    env.delete_local_ref(thread);
    identity
}

#[cfg(test)]
mod tests {
    use super::*;

    fn life(name: &str, start_ns: u64, cpu_start: u64, end: Option<(u64, u64)>) -> Life {
        Life {
            name: name.to_owned(),
            start_ns,
            cpu_start: Some(cpu_start),
            end: end.map(|(t, c)| (t, Some(c))),
        }
    }

    #[test]
    fn an_ended_thread_measures_its_span_and_cpu_only_when_asked() {
        for cpu in [false, true] {
            let l = Lifetimes::new(cpu);
            l.lock().insert(7, life("w", 1_000, 50, Some((11_000, 9_050))));
            l.lock().insert(8, life("idle", 1_000, 50, Some((101_000, 100))));
            let m = l.measure(None, None);
            let w = &m[&7];
            assert_eq!(w.name, "w");
            assert_eq!(w.alive.wall_ns, 10_000);
            assert_eq!(w.alive.cpu_ns, cpu.then_some(9_000));
            assert_eq!(w.cpu_ns, Some(9_000));
            assert!(!w.idle());
            // 50 ns of CPU in 100 us alive: under 1%.
            assert!(m[&8].idle());
        }
    }

    #[test]
    fn an_open_span_ends_now_and_without_a_cpu_reading_is_not_idle() {
        let l = Lifetimes::new(true);
        let start = clock::now();
        l.lock().insert(3, life("main", start, 0, None));
        let m = l.measure(None, None);
        assert!(m[&3].alive.wall_ns <= clock::now() - start);
        assert_eq!((m[&3].alive.cpu_ns, m[&3].cpu_ns), (None, None));
        assert!(!m[&3].idle());
    }
}
