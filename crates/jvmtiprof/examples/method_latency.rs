//! A method-latency agent: intercepts the methods a pattern names and, when the JVM ends, prints
//! each one's calls (returns and exceptions apart) and a latency histogram summary.
//!
//! ```sh
//! cargo build --release -p jvmtiprof --examples
//! java -agentpath:target/release/examples/libmethod_latency.so=method=com.acme.Service::handle* -cp app Main
//! ```
//!
//! Options (comma-separated): `method=PATTERN` (repeatable; `Class::method`, wildcards `*`, an
//! optional descriptor), `out=FILE` (stderr by default). Loaded at startup, it instruments from
//! `VMInit` on; attached to a running JVM, it also retransforms the classes already loaded.
//!
//! Report lines: `method CLASS.NAME DESCRIPTOR calls=N returns=N throws=N mean_ns=...
//! p50_ns=... p90_ns=... p99_ns=... max_ns=...`, and `failed CLASS WHY` for what could not be
//! instrumented.

use std::cell::RefCell;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use hdrhistogram::Histogram;
use jvmtiprof::agent::{Agent, AgentContext, Phase};
use jvmtiprof::intercept::{Exit, Interception, Interceptor};
use jvmtiprof::timing::monotonic_ns;
use jvmtiprof::{Error, JavaVm, JniEnv};

/// Per-method counters and latencies, by interception id.
#[derive(Default)]
struct Method {
    calls: AtomicU64,
    returns: AtomicU64,
    throws: AtomicU64,
    latency: Mutex<Option<Histogram<u64>>>,
}

/// Ids are dense: a table grown under a lock, read without one through `OnceLock`s.
struct Table {
    methods: Vec<OnceLock<Arc<Method>>>,
}

static TABLE: OnceLock<Table> = OnceLock::new();
static INTERCEPTION: Mutex<Option<Interception>> = Mutex::new(None);
static OUT: OnceLock<Option<String>> = OnceLock::new();

const MAX_METHODS: usize = 1 << 16;

fn method(id: u32) -> Option<&'static Arc<Method>> {
    let slot = TABLE.get()?.methods.get(id as usize)?;
    Some(slot.get_or_init(Default::default))
}

thread_local! {
    /// Entry times of the intercepted calls open on this thread.
    static OPEN: RefCell<Vec<(u32, u64)>> = const { RefCell::new(Vec::new()) };
}

fn entered(id: u32) {
    if let Some(m) = method(id) {
        m.calls.fetch_add(1, Ordering::Relaxed);
    }
    OPEN.with(|o| o.borrow_mut().push((id, monotonic_ns())));
}

fn left(id: u32, exit: Exit) {
    let now = monotonic_ns();
    let Some(m) = method(id) else {
        return;
    };
    match exit {
        Exit::Return => m.returns.fetch_add(1, Ordering::Relaxed),
        Exit::Throw => m.throws.fetch_add(1, Ordering::Relaxed),
    };
    // The matching entry: the innermost open one of this method (entries of callees that ended
    // without an exit event are dropped with it).
    let start = OPEN.with(|o| {
        let mut open = o.borrow_mut();
        let at = open.iter().rposition(|&(i, _)| i == id)?;
        let start = open[at].1;
        open.truncate(at);
        Some(start)
    });
    if let Some(start) = start {
        let mut h = m.latency.lock().unwrap_or_else(|p| p.into_inner());
        // 1 ns to an hour, 3 significant digits.
        let h = h.get_or_insert_with(|| {
            Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds")
        });
        h.saturating_record(now.saturating_sub(start).max(1));
    }
}

fn install(vm: JavaVm, env: &JniEnv<'_>, patterns: &[String]) -> Result<(), Error> {
    let mut interceptor = Interceptor::new();
    for p in patterns {
        interceptor = interceptor.method(p)?;
    }
    let interception = interceptor
        .on_entry(|_, m| entered(m.id))
        .on_exit(|_, m, exit| left(m.id, exit))
        .install(vm, env)?;
    *INTERCEPTION.lock().unwrap_or_else(|p| p.into_inner()) = Some(interception);
    Ok(())
}

fn report(env: &JniEnv<'_>) {
    let Some(interception) = INTERCEPTION
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    else {
        return;
    };
    let mut out: Box<dyn Write> = match OUT.get().and_then(Option::as_deref) {
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("method_latency: {path}: {e}");
                return;
            }
        },
        None => Box::new(std::io::stderr()),
    };
    let methods = interception.methods();
    let _ = writeln!(out, "intercepted {} methods", methods.len());
    for info in &methods {
        let Some(m) = method(info.id) else { continue };
        let calls = m.calls.load(Ordering::Relaxed);
        let mut line = format!(
            "method {}.{} {} calls={} returns={} throws={}",
            info.class,
            info.name,
            info.descriptor,
            calls,
            m.returns.load(Ordering::Relaxed),
            m.throws.load(Ordering::Relaxed)
        );
        if let Some(h) = m.latency.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            line += &format!(
                " mean_ns={:.0} p50_ns={} p90_ns={} p99_ns={} max_ns={}",
                h.mean(),
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.9),
                h.value_at_quantile(0.99),
                h.max()
            );
        }
        let _ = writeln!(out, "{line}");
    }
    for (class, why) in interception.failures() {
        let _ = writeln!(out, "failed {class} {why}");
    }
    match interception.remove(env) {
        Ok(r) => {
            let _ = writeln!(
                out,
                "removed restored={} not_restored={}",
                r.restored,
                r.not_restored.len()
            );
        }
        Err(e) => {
            let _ = writeln!(out, "removed error {e}");
        }
    }
    let _ = out.flush();
}

fn start(ctx: AgentContext) -> Result<(), Error> {
    let mut patterns = Vec::new();
    let mut out = None;
    for item in ctx.options.split(',').filter(|s| !s.is_empty()) {
        match item.split_once('=') {
            Some(("method", p)) => patterns.push(p.to_owned()),
            Some(("out", f)) => out = Some(f.to_owned()),
            _ => return Err(Error::Config(format!("bad option '{item}'"))),
        }
    }
    if patterns.is_empty() {
        return Err(Error::Config("give at least one method=PATTERN".into()));
    }
    let _ = OUT.set(out);
    let _ = TABLE.set(Table {
        methods: (0..MAX_METHODS).map(|_| OnceLock::new()).collect(),
    });
    let vm = ctx.vm;
    let at_init = patterns.clone();
    // The handle can go: the environment stays for the JVM's life.
    let _agent = Agent::builder(vm)
        .on_vm_init(move |env, _| {
            if let Err(e) = install(vm, env, &at_init) {
                eprintln!("method_latency: {e}");
            }
        })
        .on_vm_death(report)
        .build()?;
    if ctx.phase == Phase::Live {
        install(vm, &vm.jni_env()?, &patterns)?;
    }
    Ok(())
}

jvmtiprof::export_agent!(start);
