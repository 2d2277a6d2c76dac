//! "Sample and print the call stack", as an agent: samples every thread's Java stack and, when
//! the JVM ends, prints the methods with the most self samples and the hottest stacks.
//!
//! ```sh
//! cargo build --release -p jvmtiprof --examples
//! java -agentpath:target/release/examples/libstack_sampler.so=interval=10ms,top=10 -cp app Main
//! ```
//!
//! Options (comma-separated `key=value`):
//! - `interval=10ms` (`us`, `ms`, `s`): the sampling interval;
//! - `clock=cpu|wall`: each thread's CPU time, or elapsed time for every thread;
//! - `cpu=auto|perf|timers`: what drives CPU sampling (perf events where allowed, by default);
//! - `walker=async|safepoint`: `AsyncGetCallTrace` in a signal handler (the default), or JVMTI
//!   `GetAllStackTraces` from a thread every interval (runnable Java threads only), to show
//!   safepoint bias;
//! - `threads=all|java`, `depth=N` (frames, 256), `top=N` (10), `out=FILE` (stderr by default);
//! - `recompile=true`: attached to a running JVM, have the JIT compile again what it compiled
//!   before, so that samples land inside loops of that code too (`jvmtiprof::sampler::recompile`);
//! - `duration=5s`: stop sampling after this long, or `stop_file=PATH`: once PATH exists (the
//!   report still comes at the JVM's end).
//!
//! The report's lines: `samples N ...` (intervals sampled, and the sampler's counters), `self N
//! METHOD` (intervals whose innermost frame is METHOD; a CPU timer that fired late counts each
//! interval that passed), `stack N FRAME;FRAME;...` (root first, the format flame graph tools read), and
//! `kinds ...` (frames by type).

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use jvmtiprof::agent::{Agent, AgentContext, Phase};
use jvmtiprof::sampler::{
    Clock, Config, CpuSource, FrameType, Sample, SampleState, Sampler, Samples, Stats, Threads,
};
use jvmtiprof::stack::{safepoint_stacks, MethodResolver};
use jvmtiprof::{Error, JavaVm, JniEnv, MethodId};

#[derive(Clone)]
struct Options {
    interval: Duration,
    clock: Clock,
    source: CpuSource,
    safepoint: bool,
    threads: Threads,
    depth: usize,
    top: usize,
    out: Option<String>,
    duration: Option<Duration>,
    stop_file: Option<String>,
    recompile: bool,
}

fn parse_duration(s: &str) -> Option<Duration> {
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = n.parse().ok()?;
    Some(match unit {
        "us" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        _ => return None,
    })
}

fn parse(options: &str) -> Result<Options, Error> {
    let mut o = Options {
        interval: Duration::from_millis(10),
        clock: Clock::Cpu,
        source: CpuSource::Auto,
        safepoint: false,
        threads: Threads::All,
        depth: 256,
        top: 10,
        out: None,
        duration: None,
        stop_file: None,
        recompile: false,
    };
    for item in options.split(',').filter(|s| !s.is_empty()) {
        let (key, value) = item.split_once('=').unwrap_or((item, ""));
        let bad = || Error::Config(format!("bad option '{item}'"));
        match key {
            "interval" => o.interval = parse_duration(value).ok_or_else(bad)?,
            "clock" => {
                o.clock = match value {
                    "cpu" => Clock::Cpu,
                    "wall" => Clock::Wall,
                    _ => return Err(bad()),
                }
            }
            "cpu" => {
                o.source = match value {
                    "auto" => CpuSource::Auto,
                    "perf" => CpuSource::PerfEvents,
                    "timers" => CpuSource::Timers,
                    _ => return Err(bad()),
                }
            }
            "walker" => {
                o.safepoint = match value {
                    "async" => false,
                    "safepoint" => true,
                    _ => return Err(bad()),
                }
            }
            "threads" => {
                o.threads = match value {
                    "all" => Threads::All,
                    "java" => Threads::Java,
                    _ => return Err(bad()),
                }
            }
            "depth" => o.depth = value.parse().map_err(|_| bad())?,
            "top" => o.top = value.parse().map_err(|_| bad())?,
            "out" => o.out = Some(value.to_owned()),
            "duration" => o.duration = Some(parse_duration(value).ok_or_else(bad)?),
            "stop_file" => o.stop_file = Some(value.to_owned()),
            "recompile" => o.recompile = value.parse().map_err(|_| bad())?,
            _ => return Err(bad()),
        }
    }
    Ok(o)
}

/// Samples aggregated by name.
#[derive(Default)]
struct Profile {
    samples: u64,
    self_counts: HashMap<String, u64>,
    stacks: HashMap<String, u64>,
    kinds: HashMap<&'static str, u64>,
    errors: HashMap<&'static str, u64>,
    states: HashMap<&'static str, u64>,
}

impl Profile {
    /// Adds a sample that stands for `ticks` intervals (a CPU timer that fired late counts every
    /// interval that passed).
    fn add(
        &mut self,
        names: &[String],
        kinds: &[FrameType],
        error: Option<&'static str>,
        ticks: u64,
    ) {
        self.samples += ticks;
        let mut stack: Vec<String> = names.iter().rev().cloned().collect();
        if let Some(e) = error {
            *self.errors.entry(e).or_default() += ticks;
            stack.push(format!("[{e}]"));
        }
        if let Some(top) = stack.last() {
            *self.self_counts.entry(top.clone()).or_default() += ticks;
        }
        *self.stacks.entry(stack.join(";")).or_default() += ticks;
        for k in kinds {
            *self.kinds.entry(k.name()).or_default() += 1;
        }
    }

    fn write(&self, out: &mut dyn Write, top: usize, how: &str, stats: Option<Stats>) {
        let mut line = format!("samples {} {how}", self.samples);
        if let Some(s) = stats {
            line += &format!(
                " signals={} walked={} lost={} faults={} busy={} not_java={} vm_errors={} filtered={} faults_contained_total={}",
                s.signals,
                s.walked,
                s.lost(),
                s.faults,
                s.busy,
                s.not_java,
                s.vm_codes.iter().sum::<u64>(),
                s.filtered,
                s.faults_contained_total
            );
        }
        let _ = writeln!(out, "{line}");
        let mut errors: Vec<_> = self.errors.iter().collect();
        errors.sort();
        for (e, n) in errors {
            let _ = writeln!(out, "error {n} {e}");
        }
        let mut states: Vec<_> = self.states.iter().collect();
        states.sort();
        let states: Vec<String> = states.iter().map(|(k, n)| format!("{k}={n}")).collect();
        let _ = writeln!(out, "states {}", states.join(" "));
        let mut kinds: Vec<_> = self.kinds.iter().collect();
        kinds.sort();
        let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{k}={n}")).collect();
        let _ = writeln!(out, "kinds {}", kinds.join(" "));
        for (name, n) in sorted(&self.self_counts).into_iter().take(top) {
            let _ = writeln!(out, "self {n} {name}");
        }
        for (stack, n) in sorted(&self.stacks).into_iter().take(top) {
            let _ = writeln!(out, "stack {n} {stack}");
        }
    }
}

fn sorted(map: &HashMap<String, u64>) -> Vec<(&String, &u64)> {
    let mut v: Vec<_> = map.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v
}

/// Names frames through the resolver into `names`.
fn name_frames(
    names: &mut MethodResolver,
    env: &JniEnv<'_>,
    methods: impl Iterator<Item = Option<MethodId>>,
    out: &mut Vec<String>,
) {
    out.clear();
    for m in methods {
        let name = m
            .and_then(|m| names.resolve(env, m))
            .map_or_else(|| "[unknown]".to_owned(), |i| i.qualified_name());
        out.push(name);
    }
}

struct Consumer {
    samples: Samples,
    names: MethodResolver,
    profile: Profile,
    scratch: Vec<String>,
    kinds: Vec<FrameType>,
    interval_ns: u64,
}

impl Consumer {
    fn drain(&mut self, env: &JniEnv<'_>) {
        let Consumer {
            samples,
            names,
            profile,
            scratch,
            kinds,
            interval_ns,
        } = self;
        let interval = (*interval_ns).max(1);
        samples.drain(|s: &Sample<'_>| {
            name_frames(names, env, s.frames.iter().map(|f| f.method), scratch);
            kinds.clear();
            kinds.extend(s.frames.iter().map(|f| f.kind));
            let ticks = ((s.weight_ns + interval / 2) / interval).max(1);
            let state = match s.state {
                SampleState::Running => "running",
                SampleState::Syscall => "syscall",
                SampleState::Idle => "idle",
                SampleState::Unknown => "unknown",
            };
            *profile.states.entry(state).or_default() += ticks;
            profile.add(scratch, kinds, s.error.map(|e| e.name()), ticks);
        });
    }
}

enum Running {
    Async {
        sampler: Arc<Mutex<Option<Sampler>>>,
        stop: Arc<AtomicBool>,
        consumer: JoinHandle<Option<Consumer>>,
    },
    Safepoint {
        stop: Arc<AtomicBool>,
        thread: JoinHandle<Profile>,
    },
}

static RUNNING: Mutex<Option<Running>> = Mutex::new(None);
static PERF: AtomicBool = AtomicBool::new(false);
static RECOMPILED: AtomicU64 = AtomicU64::new(0);

fn start_sampling(vm: JavaVm, env: &JniEnv<'_>, o: &Options) -> Result<(), Error> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let running = if o.safepoint {
        let interval = o.interval;
        let depth = o.depth;
        let thread = std::thread::spawn(move || {
            let mut profile = Profile::default();
            let _ = vm.with_attached_thread("stack-sampler-safepoint", |env| {
                let Ok(mut names) = MethodResolver::new(vm) else {
                    return;
                };
                let Ok(jvmti) = vm.jvmti() else {
                    return;
                };
                let mut scratch = Vec::new();
                while !flag.load(Ordering::Acquire) {
                    if let Ok(stacks) = safepoint_stacks(jvmti, env, depth) {
                        for t in stacks.iter().filter(|t| t.is_running_java()) {
                            name_frames(
                                &mut names,
                                env,
                                t.frames.iter().map(|f| Some(f.method)),
                                &mut scratch,
                            );
                            profile.add(&scratch, &[], None, 1);
                        }
                    }
                    std::thread::sleep(interval);
                }
                let _ = jvmti.dispose();
            });
            profile
        });
        Running::Safepoint { stop, thread }
    } else {
        let config = match o.clock {
            Clock::Cpu => Config::cpu(o.interval),
            Clock::Wall => Config::wall(o.interval),
        }
        .max_frames(o.depth)
        .threads(o.threads)
        .cpu_source(o.source);
        let (sampler, samples) = Sampler::start(vm, env, config)?;
        if o.recompile {
            let n = jvmtiprof::sampler::recompile(vm, env)?;
            RECOMPILED.store(n as u64, Ordering::Relaxed);
        }
        PERF.store(sampler.uses_perf_events(), Ordering::Relaxed);
        let names = MethodResolver::new(vm)?;
        let mut consumer = Consumer {
            samples,
            names,
            profile: Profile::default(),
            scratch: Vec::new(),
            kinds: Vec::new(),
            interval_ns: o.interval.as_nanos() as u64,
        };
        let sampler = Arc::new(Mutex::new(Some(sampler)));
        let (running, duration, stop_file) = (sampler.clone(), o.duration, o.stop_file.clone());
        let consumer = std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let attached = vm.with_attached_thread("stack-sampler-consumer", |env| {
                while !flag.load(Ordering::Acquire) {
                    consumer.drain(env);
                    let due = duration.is_some_and(|d| started.elapsed() >= d)
                        || stop_file
                            .as_ref()
                            .is_some_and(|f| std::path::Path::new(f).exists());
                    if due {
                        // Stopped on a thread attached to the JVM, as JVMTI wants.
                        let sampler = running.lock().unwrap_or_else(|p| p.into_inner()).take();
                        if let Some(s) = sampler {
                            s.stop();
                        }
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            });
            attached.ok().map(|_| consumer)
        });
        Running::Async {
            sampler,
            stop,
            consumer,
        }
    };
    *RUNNING.lock().unwrap_or_else(|p| p.into_inner()) = Some(running);
    Ok(())
}

fn finish(env: &JniEnv<'_>, o: &Options) {
    let Some(running) = RUNNING.lock().unwrap_or_else(|p| p.into_inner()).take() else {
        return;
    };
    let mut out: Box<dyn Write> = match &o.out {
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("stack_sampler: {path}: {e}");
                return;
            }
        },
        None => Box::new(std::io::stderr()),
    };
    match running {
        Running::Async {
            sampler,
            stop,
            consumer,
        } => {
            let sampler = sampler.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(s) = sampler {
                s.stop();
            }
            stop.store(true, Ordering::Release);
            let Ok(Some(mut consumer)) = consumer.join() else {
                return;
            };
            consumer.drain(env);
            let source = match (o.clock, PERF.load(Ordering::Relaxed)) {
                (Clock::Wall, _) => "signals",
                (Clock::Cpu, true) => "perf",
                (Clock::Cpu, false) => "timers",
            };
            let how = format!(
                "walker=async clock={:?} source={source} interval={:?} recompiled={}",
                o.clock,
                o.interval,
                RECOMPILED.load(Ordering::Relaxed)
            )
            .to_lowercase();
            let stats = consumer.samples.stats();
            consumer.profile.write(&mut out, o.top, &how, Some(stats));
        }
        Running::Safepoint { stop, thread } => {
            stop.store(true, Ordering::Release);
            if let Ok(profile) = thread.join() {
                let how = format!("walker=safepoint interval={:?}", o.interval).to_lowercase();
                profile.write(&mut out, o.top, &how, None);
            }
        }
    }
    let _ = out.flush();
}

fn start(ctx: AgentContext) -> Result<(), Error> {
    let o = parse(&ctx.options)?;
    let vm = ctx.vm;
    if ctx.phase == Phase::OnLoad && !o.safepoint {
        // The JVMTI environment the walk needs, now: every method compiled from the start keeps
        // debug information at every instruction.
        jvmtiprof::sampler::prepare(vm)?;
    }
    let (o1, o2) = (o.clone(), o.clone());
    // The handle can go: the environment stays for the JVM's life.
    let _agent = Agent::builder(vm)
        .on_vm_init(move |env, _| {
            if let Err(e) = start_sampling(vm, env, &o1) {
                eprintln!("stack_sampler: {e}");
            }
        })
        .on_vm_death(move |env| finish(env, &o2))
        .build()?;
    if ctx.phase == Phase::Live {
        let env = vm.jni_env()?;
        start_sampling(vm, &env, &o)?;
    }
    Ok(())
}

jvmtiprof::export_agent!(start);
