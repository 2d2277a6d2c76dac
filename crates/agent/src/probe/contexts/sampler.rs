//! Sampled timing: a thread of the agent wakes every interval, reads each Java context's thread
//! and the node it is in (`Counts.sample()`), and charges the thread's CPU time since its last
//! sample (JVMTI `GetThreadCpuTime`) to that node; with `wall`, the elapsed time too, the part
//! spent off the CPU to the thread's state then (`GetThreadState`: blocked on a monitor,
//! waiting, sleeping, parked, in native code, runnable but not running), never to the node's
//! own time. A thread outside every root (node -1 or the root) is not charged, nor an interval
//! in which the thread did the agent's work (revelation on its first call of a method). The probes read
//! no clock: the time a node gets is an estimate from its samples, the calls are exact.
//!
//! A thread on the CPU in a native method (JNI code, which carries no probes) is charged to a
//! frame of that method under its current node (`GetStackTrace`'s top frame, read only for
//! threads in native code), as a stack sampler would name it, instead of to the Java caller.
//!
//! A thread whose CPU clock cannot be read (a virtual thread, or no `can_get_thread_cpu_time`)
//! is charged the elapsed time as CPU time when it is runnable and not in native code, nothing
//! otherwise (counted in [`Charged::without_clock`]).

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ferrofluid_jvmti::{sys, Class, JavaVm, JniEnv, Jvmti, MethodId, Object};

use super::ffi::SampleFields;

/// The off-CPU states, as the frames that carry their time are named.
pub const STATES: [&str; 6] = [
    "[blocked: monitor]",
    "[blocked: wait]",
    "[blocked: sleep]",
    "[blocked: park]",
    "[blocked: native]",
    "[off-cpu: runnable]",
];

/// Native methods one node's samples name, at most (the next ones charge the node itself).
const NATIVES_PER_NODE: usize = 8;
/// Native methods named in all, at most (the next ones charge their nodes themselves).
const MAX_NATIVE_METHODS: usize = 4096;

/// What the samples taken in one native method called from a node were charged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NativeTime {
    /// Index in [`Charged::native_methods`].
    pub method: u32,
    pub samples: u64,
    /// CPU time, ns.
    pub cpu_ns: u64,
    /// Elapsed time on the CPU (`wall`), ns.
    pub wall_ns: u64,
}

/// What one node of one context was charged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeTime {
    /// Samples taken while the thread was in the node and on the CPU for most of the interval.
    pub samples: u64,
    /// CPU time, ns.
    pub cpu_ns: u64,
    /// Elapsed time on the CPU (`wall`), ns.
    pub wall_ns: u64,
    /// Elapsed time off the CPU by state ([`STATES`]; `wall`), ns, and the samples that were
    /// mostly off the CPU.
    pub off_ns: [u64; STATES.len()],
    pub off_samples: [u64; STATES.len()],
    /// Samples on the CPU in native methods called from the node (not in the fields above).
    pub natives: Vec<NativeTime>,
}

/// One context's clocks at its last sample and what its nodes were charged.
#[derive(Clone, Debug, Default)]
pub struct ContextTime {
    last_cpu: Option<u64>,
    last_wall: Option<u64>,
    last_agent_calls: i32,
    /// The node of its last sample (0: none, or outside the roots).
    last_node: i32,
    /// The native method it was in at its last sample.
    last_native: Option<u32>,
    /// By the context's node index.
    pub nodes: Vec<NodeTime>,
}

/// Everything charged since the sampler started (or was reset).
#[derive(Clone, Debug, Default)]
pub struct Charged {
    /// By the contexts' order (the order threads first counted).
    pub contexts: Vec<ContextTime>,
    /// Samples charged to a node.
    pub samples: u64,
    /// Samples of threads outside every root, not charged.
    pub outside: u64,
    /// Intervals in which the thread did the agent's work, not charged.
    pub agent_work: u64,
    /// Samples of threads whose CPU clock could not be read (charged by their state).
    pub without_clock: u64,
    /// Sampler wake-ups.
    pub ticks: u64,
    /// The native methods [`NativeTime::method`] names: class (internal name), name,
    /// descriptor. Kept across resets.
    pub native_methods: Vec<(String, String, String)>,
    /// Index in `native_methods` by `jmethodID`.
    native_index: HashMap<usize, u32>,
}

impl Charged {
    /// The CPU time charged to nodes, ns.
    pub fn cpu_ns(&self) -> u64 {
        self.contexts
            .iter()
            .flat_map(|c| &c.nodes)
            .map(|n| n.cpu_ns)
            .sum()
    }

    /// Forgets what was charged, keeping each thread's clocks (a reset: the next interval
    /// counts from the last sample).
    pub fn clear(&mut self) {
        for c in &mut self.contexts {
            c.nodes.clear();
        }
        self.samples = 0;
        self.outside = 0;
        self.agent_work = 0;
        self.without_clock = 0;
        self.ticks = 0;
    }
}

/// How the sampler charges.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub interval: Duration,
    /// Elapsed time too, off-CPU time by state.
    pub wall: bool,
}

/// The running sampler thread.
pub struct Sampler {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Option<JoinHandle<()>>,
    charged: Arc<Mutex<Charged>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Sampler {
    /// Starts sampling the contexts of `ferrofluid/Counts` (defined already).
    pub fn start(vm: JavaVm, jvmti: Jvmti, settings: Settings) -> Result<Sampler, String> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let charged = Arc::new(Mutex::new(Charged::default()));
        let (s, c) = (Arc::clone(&stop), Arc::clone(&charged));
        let handle = std::thread::Builder::new()
            .name("ferrofluid-timing".into())
            .spawn(move || {
                let ran = vm.with_attached_thread("ferrofluid-timing", |env| {
                    run(env, jvmti, settings, &s, &c);
                });
                if let Err(e) = ran {
                    log::error!("sampled timing: the sampler could not attach: {e}");
                }
            })
            .map_err(|e| format!("no sampler thread: {e}"))?;
        Ok(Sampler {
            stop,
            handle: Some(handle),
            charged,
        })
    }

    /// A copy of what was charged so far.
    pub fn charged(&self) -> Charged {
        lock(&self.charged).clone()
    }

    /// Forgets what was charged so far.
    pub fn reset(&self) {
        lock(&self.charged).clear();
    }

    /// Stops the thread and waits for it; what was charged stays readable.
    pub fn stop(&mut self) {
        {
            let (flag, wake) = &*self.stop;
            *lock(flag) = true;
            wake.notify_all();
        }
        if let Some(h) = self.handle.take() {
            if h.join().is_err() {
                log::error!("sampled timing: the sampler thread panicked");
            }
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(
    env: &JniEnv<'_>,
    jvmti: Jvmti,
    settings: Settings,
    stop: &(Mutex<bool>, Condvar),
    charged: &Mutex<Charged>,
) {
    let fields = match SampleFields::find(env) {
        Ok(f) => f,
        Err(e) => {
            log::error!("sampled timing: {e}; no times");
            return;
        }
    };
    // JDK 21+: `GetThreadCpuTime` resolves a virtual thread's carrier without holding off its
    // unmounting, and a JDK 25 JVM crashed there (`Continuation::is_continuation_mounted`) on a
    // virtual thread unmounting at that moment; a virtual thread has no CPU clock to read
    // anyway. Absent before JDK 21: no thread is virtual.
    let virtual_class = env.find_class("java/lang/BaseVirtualThread").ok();
    let epoch = Instant::now();
    let mut next = Instant::now() + settings.interval;
    let mut failures = 0u32;
    loop {
        {
            let (flag, wake) = stop;
            let mut stopped = lock(flag);
            loop {
                if *stopped {
                    return;
                }
                let now = Instant::now();
                if now >= next {
                    break;
                }
                stopped = wake
                    .wait_timeout(stopped, next - now)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0);
            }
        }
        // A late wake-up is not made up for: the next interval starts now.
        next = (next + settings.interval).max(Instant::now());
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tick(env, jvmti, settings, &fields, virtual_class, epoch, charged)
        }));
        match result {
            Ok(Ok(())) => failures = 0,
            Ok(Err(e)) => {
                failures += 1;
                if failures == 1 {
                    log::warn!("sampled timing: {e}");
                }
            }
            Err(_) => {
                log::error!("sampled timing: a sample failed; sampling stops");
                return;
            }
        }
    }
}

/// One sample of every context; a thread of `virtual_class` has no CPU clock read.
fn tick(
    env: &JniEnv<'_>,
    jvmti: Jvmti,
    settings: Settings,
    fields: &SampleFields,
    virtual_class: Option<Class<'_>>,
    epoch: Instant,
    charged: &Mutex<Charged>,
) -> Result<(), String> {
    let mut taken: Vec<(usize, Seen, Option<MethodId>)> = Vec::new();
    fields.sample(env, |i, thread: Object<'_>, node, agent_calls| {
        let is_virtual = virtual_class.is_some_and(|c| env.is_instance_of(thread, c));
        let cpu = if is_virtual {
            None
        } else {
            jvmti.thread_cpu_time(thread).ok().map(|n| n.max(0) as u64)
        };
        let state = jvmti.thread_state(thread).unwrap_or(0);
        // The method a thread runs native code in: only such a thread's stack is read (a
        // thread in native code answers without being stopped).
        let native = if cpu.is_some() && state & sys::JVMTI_THREAD_STATE_IN_NATIVE as i32 != 0 {
            jvmti
                .top_frame(thread)
                .ok()
                .flatten()
                .filter(|&m| jvmti.method_modifiers(m).is_ok_and(|a| a & ACC_NATIVE != 0))
        } else {
            None
        };
        taken.push((
            i,
            Seen {
                node,
                cpu,
                state,
                agent_calls,
                native: None,
            },
            native,
        ));
    })?;
    // The nodes were read before the stacks: a thread whose node changed meanwhile may have
    // been in its native method outside that node (a root returned, a file checked after it).
    if taken.iter().any(|(_, _, native)| native.is_some()) {
        let mut nodes = Vec::new();
        fields.sample(env, |i, _, node, _| nodes.push((i, node)))?;
        for (i, seen, native) in &mut taken {
            let still = nodes.iter().any(|&(j, node)| j == *i && node == seen.node);
            if !still {
                *native = None;
            }
        }
    }
    let now = epoch.elapsed().as_nanos() as u64;
    let mut c = lock(charged);
    c.ticks += 1;

    for (i, mut seen, native) in taken {
        // A native frame is CPU time in the method: a thread without a CPU clock (a virtual
        // thread) cannot show it, and is charged by its state.
        seen.native = native
            .filter(|_| seen.cpu.is_some())
            .and_then(|m| native_index(&mut c, env, jvmti, m));
        charge(&mut c, settings, i, seen, now);
    }
    Ok(())
}

const ACC_NATIVE: i32 = 0x0100;

/// The agent's own natives (the probes' calls into the agent at a root's entry and exit):
/// time in them is the probes', charged to the node as any probe's is, never a frame.
const AGENT_NATIVE: u32 = u32::MAX;

/// The index of native method `m` in `c.native_methods`, named the first time it is seen;
/// `None` past [`MAX_NATIVE_METHODS`], if it cannot be named, or for the agent's own natives.
fn native_index(c: &mut Charged, env: &JniEnv<'_>, jvmti: Jvmti, m: MethodId) -> Option<u32> {
    let key = m.as_raw() as usize;
    if let Some(&i) = c.native_index.get(&key) {
        return (i != AGENT_NATIVE).then_some(i);
    }
    if c.native_methods.len() >= MAX_NATIVE_METHODS {
        return None;
    }
    let name = jvmti.method_name(m).ok()?;
    let class = jvmti.method_class_name(env, m).ok()?;
    if class.starts_with("ferrofluid/") {
        c.native_index.insert(key, AGENT_NATIVE);
        return None;
    }
    let i = c.native_methods.len() as u32;
    c.native_methods.push((class, name.name, name.signature));
    c.native_index.insert(key, i);
    Some(i)
}

/// What a sample saw of one context's thread.
#[derive(Clone, Copy, Debug)]
struct Seen {
    /// The node it is in (-1: not recording).
    node: i32,
    /// Its CPU clock, if readable.
    cpu: Option<u64>,
    /// `GetThreadState`.
    state: i32,
    /// How often it left the agent's work so far.
    agent_calls: i32,
    /// The native method it is in (index in [`Charged::native_methods`]), read only for a
    /// thread in native code.
    native: Option<u32>,
}

/// Charges context `i`'s interval to the node it is in (or counts it outside the roots, or as
/// the agent's).
fn charge(c: &mut Charged, settings: Settings, i: usize, seen: Seen, now: u64) {
    let Seen {
        node,
        cpu,
        state,
        agent_calls,
        native,
    } = seen;
    if state & sys::JVMTI_THREAD_STATE_ALIVE as i32 == 0 {
        return;
    }
    if c.contexts.len() <= i {
        c.contexts.resize_with(i + 1, ContextTime::default);
    }
    let ctx = &mut c.contexts[i];
    let d_wall = ctx.last_wall.map(|w| now.saturating_sub(w));
    ctx.last_wall = Some(now);
    let d_cpu = match (cpu, ctx.last_cpu) {
        (Some(now_cpu), Some(last)) => Some(now_cpu.saturating_sub(last)),
        _ => None,
    };
    if cpu.is_some() {
        ctx.last_cpu = cpu;
    }
    let agent_work = ctx.last_agent_calls != agent_calls;
    ctx.last_agent_calls = agent_calls;
    let last_node = std::mem::replace(&mut ctx.last_node, node.max(0));
    let was_native = std::mem::replace(&mut ctx.last_native, native);
    let Some(d_wall) = d_wall else {
        // The first sight of the thread: its clocks' starting point.
        return;
    };
    if agent_work {
        c.agent_work += 1;
        return;
    }
    if node <= 0 {
        c.outside += 1;
        return;
    }
    let running = state & sys::JVMTI_THREAD_STATE_RUNNABLE as i32 != 0
        && state & sys::JVMTI_THREAD_STATE_IN_NATIVE as i32 == 0;
    let d_cpu = match d_cpu {
        Some(d) => d,
        None if cpu.is_some() => return,
        None => {
            c.without_clock += 1;
            if running {
                d_wall
            } else {
                0
            }
        }
    };
    if !settings.wall && d_cpu == 0 {
        // A CPU-time sample is a thread on the CPU: one that did not run in the interval (a
        // thread blocked in a queue's `remove` for the whole run) takes none, as a CPU
        // sampler's timer would not fire for it.
        return;
    }
    let ctx = &mut c.contexts[i];
    // A thread off the CPU now ran before it stopped: its CPU time is the last sample's node's
    // (where it most likely ran), its time off the CPU the node it waits in.
    let ran_in = if running || last_node <= 0 {
        node
    } else {
        last_node
    };
    let n = node.max(ran_in) as usize;
    if ctx.nodes.len() <= n {
        ctx.nodes.resize_with(n + 1, NodeTime::default);
    }
    let on = d_cpu.min(d_wall);
    let off = d_wall - on;
    let mostly_off = settings.wall && off > on;
    // In the same native method, called from the same node, at this sample and the last: the
    // CPU time between them ran there (a thread that just entered one ran its caller before).
    if let Some(method) = native.filter(|&m| was_native == Some(m) && last_node == node) {
        let t = &mut ctx.nodes[node as usize];
        let at = t.natives.iter().position(|n| n.method == method);
        let at = match at {
            Some(at) => Some(at),
            None if t.natives.len() < NATIVES_PER_NODE => {
                t.natives.push(NativeTime {
                    method,
                    ..NativeTime::default()
                });
                Some(t.natives.len() - 1)
            }
            None => None,
        };
        if let Some(at) = at {
            let n = &mut t.natives[at];
            n.cpu_ns += d_cpu;
            if settings.wall {
                n.wall_ns += on;
            }
            if !mostly_off {
                n.samples += 1;
            }
            if settings.wall && off > 0 {
                let s = off_state(state);
                t.off_ns[s] += off;
                if mostly_off {
                    t.off_samples[s] += 1;
                }
            }
            c.samples += 1;
            return;
        }
    }
    let r = &mut ctx.nodes[ran_in as usize];
    r.cpu_ns += d_cpu;
    if settings.wall {
        r.wall_ns += on;
    }
    if !mostly_off {
        r.samples += 1;
    }
    c.samples += 1;
    if settings.wall && off > 0 {
        let t = &mut ctx.nodes[node as usize];
        let s = off_state(state);
        t.off_ns[s] += off;
        if mostly_off {
            t.off_samples[s] += 1;
        }
    }
}

/// The index in [`STATES`] of a thread off the CPU in `state` (`GetThreadState` bits).
pub fn off_state(state: i32) -> usize {
    let has = |bit: u32| state & bit as i32 != 0;
    if has(sys::JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER) {
        0
    } else if has(sys::JVMTI_THREAD_STATE_SLEEPING) {
        2
    } else if has(sys::JVMTI_THREAD_STATE_PARKED) {
        3
    } else if has(sys::JVMTI_THREAD_STATE_WAITING) {
        1
    } else if has(sys::JVMTI_THREAD_STATE_IN_NATIVE) {
        4
    } else {
        5
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNNING: i32 = (sys::JVMTI_THREAD_STATE_ALIVE | sys::JVMTI_THREAD_STATE_RUNNABLE) as i32;
    const NATIVE: i32 = RUNNING | sys::JVMTI_THREAD_STATE_IN_NATIVE as i32;
    const WAITING: i32 = (sys::JVMTI_THREAD_STATE_ALIVE
        | sys::JVMTI_THREAD_STATE_WAITING
        | sys::JVMTI_THREAD_STATE_WAITING_INDEFINITELY
        | sys::JVMTI_THREAD_STATE_IN_OBJECT_WAIT) as i32;
    fn seen(node: i32, cpu: Option<u64>, state: i32) -> Seen {
        Seen {
            node,
            cpu,
            state,
            agent_calls: 0,
            native: None,
        }
    }

    const WALL: Settings = Settings {
        interval: Duration::from_millis(10),
        wall: true,
    };

    /// CPU time goes to the node the thread is in (one that is off the CPU now: the node it was
    /// in before); elapsed time off the CPU goes to the state, a sample mostly off the CPU
    /// counts there; the first sight of a thread charges nothing and
    /// a thread outside the roots is counted apart.
    #[test]
    fn intervals_are_charged_to_the_current_node_and_state() {
        let mut c = Charged::default();
        charge(&mut c, WALL, 0, seen(3, Some(100), RUNNING), 1_000);
        assert_eq!(c.samples, 0);
        charge(&mut c, WALL, 0, seen(3, Some(10_100), RUNNING), 11_000);
        charge(&mut c, WALL, 0, seen(2, Some(10_600), NATIVE), 21_000);
        charge(&mut c, WALL, 0, seen(-1, Some(10_600), RUNNING), 31_000);
        let nodes = &c.contexts[0].nodes;
        // The 500 ns of CPU before the thread blocked in node 2's native code ran in node 3.
        assert_eq!(
            (nodes[3].samples, nodes[3].cpu_ns, nodes[3].wall_ns),
            (1, 10_500, 10_500)
        );
        assert_eq!(
            (nodes[2].samples, nodes[2].cpu_ns, nodes[2].wall_ns),
            (0, 0, 0)
        );
        assert_eq!((nodes[2].off_ns[4], nodes[2].off_samples[4]), (9_500, 1));
        assert_eq!((c.samples, c.outside, c.without_clock), (2, 1, 0));
    }

    /// A thread in the same native method at two samples in a row, from the same node, ran
    /// there: that interval's CPU time goes to the method under the node. A thread that just
    /// entered a native method ran its caller before.
    #[test]
    fn cpu_time_in_a_native_method_goes_to_its_frame() {
        let mut c = Charged::default();
        let cpu_only = Settings {
            wall: false,
            ..WALL
        };
        let native = |node, cpu, method| Seen {
            native: Some(method),
            ..seen(node, Some(cpu), NATIVE)
        };
        charge(&mut c, cpu_only, 0, seen(3, Some(0), RUNNING), 0);
        charge(&mut c, cpu_only, 0, native(3, 8_000, 0), 10_000);
        charge(&mut c, cpu_only, 0, native(3, 17_000, 0), 20_000);
        charge(&mut c, cpu_only, 0, native(3, 26_000, 1), 30_000);
        let t = &c.contexts[0].nodes[3];
        assert_eq!((t.samples, t.cpu_ns), (2, 17_000));
        assert_eq!(
            t.natives,
            [NativeTime {
                method: 0,
                samples: 1,
                cpu_ns: 9_000,
                wall_ns: 0
            }]
        );
        assert_eq!(c.samples, 3);
    }

    /// Without a CPU clock (a virtual thread), elapsed time counts as CPU time while runnable
    /// outside native code.
    #[test]
    fn threads_without_a_cpu_clock_are_charged_by_state() {
        let mut c = Charged::default();
        let cpu_only = Settings {
            wall: false,
            ..WALL
        };
        charge(&mut c, cpu_only, 1, seen(5, None, RUNNING), 0);
        charge(&mut c, cpu_only, 1, seen(5, None, RUNNING), 7_000);
        charge(&mut c, cpu_only, 1, seen(5, None, NATIVE), 9_000);
        let t = &c.contexts[1].nodes[5];
        // The interval in native code ran nothing: no sample.
        assert_eq!((t.samples, t.cpu_ns, t.wall_ns), (1, 7_000, 0));
        assert_eq!(c.without_clock, 2);
    }

    /// With the CPU clock, a thread that did not run in an interval takes no sample: its
    /// node gets neither time nor samples, however long it waits there.
    #[test]
    fn a_thread_that_did_not_run_takes_no_cpu_sample() {
        let mut c = Charged::default();
        let cpu_only = Settings {
            wall: false,
            ..WALL
        };
        charge(&mut c, cpu_only, 0, seen(4, Some(500), WAITING), 0);
        for k in 1..=5 {
            charge(&mut c, cpu_only, 0, seen(4, Some(500), WAITING), k * 10_000);
        }
        charge(&mut c, cpu_only, 0, seen(4, Some(3_500), RUNNING), 60_000);
        let t = &c.contexts[0].nodes[4];
        assert_eq!((t.samples, t.cpu_ns), (1, 3_000));
        assert_eq!(c.samples, 1);
    }

    /// An interval in which the thread did the agent's work is left out.
    #[test]
    fn intervals_with_the_agents_work_are_left_out() {
        let mut c = Charged::default();
        charge(&mut c, WALL, 0, seen(3, Some(0), RUNNING), 0);
        let busy = Seen {
            agent_calls: 1,
            ..seen(3, Some(9_000), RUNNING)
        };
        charge(&mut c, WALL, 0, busy, 10_000);
        charge(
            &mut c,
            WALL,
            0,
            Seen {
                agent_calls: 1,
                ..seen(3, Some(19_000), RUNNING)
            },
            20_000,
        );
        assert_eq!((c.agent_work, c.samples), (1, 1));
        assert_eq!(c.contexts[0].nodes[3].cpu_ns, 10_000);
    }

    #[test]
    fn states_are_named_by_what_holds_the_thread() {
        let s = |bits: u32| STATES[off_state(bits as i32)];
        assert_eq!(
            s(sys::JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER),
            "[blocked: monitor]"
        );
        assert_eq!(
            s(sys::JVMTI_THREAD_STATE_WAITING | sys::JVMTI_THREAD_STATE_SLEEPING),
            "[blocked: sleep]"
        );
        assert_eq!(
            s(sys::JVMTI_THREAD_STATE_WAITING | sys::JVMTI_THREAD_STATE_PARKED),
            "[blocked: park]"
        );
        assert_eq!(
            s(sys::JVMTI_THREAD_STATE_WAITING | sys::JVMTI_THREAD_STATE_IN_OBJECT_WAIT),
            "[blocked: wait]"
        );
        assert_eq!(s(NATIVE as u32), "[blocked: native]");
        assert_eq!(s(RUNNING as u32), "[off-cpu: runnable]");
    }
}
