//! The `region` engine, code-region mode (JFluid's lightweight mode): only the region methods
//! carry probes (selected alone: nothing is revealed), and each
//! outermost invocation per thread costs two timestamps and one histogram record. Nothing goes
//! through the event rings or the calling context tree.
//!
//! Per thread: the open region frames (a recursive re-entry, or another region method called
//! inside, only counts a nested probe pair for compensation) and, per region method, two
//! histograms (compensated and measured durations) with the last N durations. A thread's stats
//! sit behind a mutex that only this thread and snapshots take, so it is uncontended; when the
//! thread is gone, its stats are folded into one aggregate, so memory is bounded by the live
//! threads that ran a region method.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ferrofluid_profile::region::RegionStats;
use ferrofluid_profile::{Calibration, MethodInfo};


use ferrofluid_classfile::ProbeKind;
use ferrofluid_jvmti::{sys, JniEnv};
use ferrofluid_profile::{Mode, Profile};
use ferrofluid_protocol::AgentOptions;
use ferrofluid_subgraph::{PlanConfig, Scheme};

use crate::engine::{
    Capability, Context, Engine, EngineSession, Instrumentation, JvmEvent, Needs, Selection,
    Units,
};
use crate::probe::clock::{now, time_at};
use crate::probe::flags::{self, ACTIVE};
use crate::probe::thread::{method_id, CALIBRATION_ID, SWITCHES};
use crate::probe::{calibrate, collector};

mod stats;
use stats::{stats_of, ThreadStats};

/// The code-region engine.
pub struct Region;

impl Engine for Region {
    fn mode(&self) -> Mode {
        Mode::Region
    }

    fn units(&self) -> Units {
        Units::Nanoseconds
    }

    fn needs(&self) -> Needs {
        Needs {
            capabilities: &[Capability::RetransformClasses],
            optional: &[],
            events: &[JvmEvent::ClassFileLoadHook, JvmEvent::ClassPrepare],
        }
    }

    /// The region methods are the plan's roots, never skipped; nothing else is instrumented.
    fn plan(&self, options: &AgentOptions) -> PlanConfig {
        PlanConfig {
            roots: options.region.clone(),
            scheme: Scheme::Lazy,
            filter: options.filter.clone(),
            skip_trivial: false,
            adaptive: false,
        }
    }

    fn open(&self, _ctx: &dyn Context, options: &AgentOptions) -> Box<dyn EngineSession> {
        // Region probes time wall durations only.
        SWITCHES.cpu.store(false, Ordering::SeqCst);
        STATE.last_n.store(options.region_last(), Ordering::SeqCst);
        lock(&STATE.registry).ids.clear();
        Box::new(RegionSession)
    }

    #[inline(always)]
    fn enter(_env: *mut sys::JNIEnv, id: i32, _start: u64) {
        let id = method_id(id as u32);
        if flags::get(id) & ACTIVE != 0 {
            enter(id);
        }
    }

    #[inline(always)]
    fn exit(_env: *mut sys::JNIEnv, id: i32, start: u64) {
        let id = method_id(id as u32);
        if flags::get(id) & ACTIVE != 0 {
            exit(id, start);
        }
    }
}

/// A code-region session: its state is what the probes read ([`STATE`]).
struct RegionSession;

impl EngineSession for RegionSession {
    fn instruments(&self) -> Option<Instrumentation> {
        Some(Instrumentation {
            probes: ProbeKind::EntryExit,
            selection: Selection::Methods,
            leaves: false,
        })
    }

    fn method_chosen(&self, id: u32) {
        lock(&STATE.registry).ids.insert(id);
    }

    /// Calibrates the region probes (the callee alone: a region's callees have no probes),
    /// then measures afresh with that calibration.
    fn start(&self, _ctx: &dyn Context, env: &JniEnv<'_>) {
        let probes = calibrate::Probes {
            callee: flags::ACTIVE | flags::INVOKED,
            caller: 0,
            take_inner: take_calibration_inner,
            take_probes: || 0,
        };
        let (calibration, stats) = match calibrate::calibrate_with(env, probes) {
            Ok(c) => (Some(c.wall), Some(c.stats)),
            Err(e) => {
                log::warn!("{e}; times will not be compensated");
                (None, None)
            }
        };
        start(calibration.as_ref());
        collector::start(calibration, None, stats);
    }

    fn reset(&self, _ctx: &dyn Context) {
        restart();
    }

    fn tick(&self, _ctx: &dyn Context) {
        retire_ended();
    }

    fn snapshot(&self, ctx: &dyn Context, profile: &mut Profile) {
        profile.mode = ferrofluid_profile::Mode::Region;
        profile.regions = Some(snapshot(|id| ctx.method_name(id)));
    }
}

/// Region frames open at once on one thread beyond which new ones are not measured.
const MAX_OPEN: usize = 64;

/// What the region probes read and record into: the session's settings, the measurement's
/// start and calibration, and every thread's stats.
struct State {
    /// How many last durations to keep per method.
    last_n: AtomicU32,
    /// Bumped when collection starts: threads then record into fresh stats.
    epoch: AtomicU32,
    /// When collection started: invocations that began earlier are not recorded.
    start_ns: AtomicU64,
    /// Probe costs (f64 bits, ns): subtracted once per invocation, and per nested probe pair.
    inner_ns: AtomicU64,
    pair_ns: AtomicU64,
    registry: Mutex<Registry>,
}

// Process-wide: the region probes, JVM natives without user data, record into it.
static STATE: State = State {
    last_n: AtomicU32::new(ferrofluid_protocol::DEFAULT_REGION_LAST),
    epoch: AtomicU32::new(1),
    start_ns: AtomicU64::new(u64::MAX),
    inner_ns: AtomicU64::new(0),
    pair_ns: AtomicU64::new(0),
    registry: Mutex::new(Registry {
        ids: BTreeSet::new(),
        live: Vec::new(),
        retired: ThreadStats {
            methods: Vec::new(),
        },
    }),
};

/// The region methods of the session (global ids), and every thread's stats.
struct Registry {
    ids: BTreeSet<u32>,
    live: Vec<Arc<Mutex<ThreadStats>>>,
    /// Stats of threads that ended.
    retired: ThreadStats,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An open outermost region invocation.
struct Open {
    id: u32,
    depth: u32,
    start: u64,
    /// Region probe pairs that ran inside it (recursion, other region methods).
    nested: u32,
    /// Compensated durations of the other region methods' invocations that ran directly inside
    /// it (not inside one of those), ns.
    regions_ns: u64,
}

struct Local {
    generation: Cell<u32>,
    open: RefCell<Vec<Open>>,
    stats: RefCell<Option<(u32, Arc<Mutex<ThreadStats>>)>>,
    /// Calibration: measured durations of the calibration method, summed.
    calibration: Cell<u64>,
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            generation: Cell::new(0),
            open: RefCell::new(Vec::new()),
            stats: RefCell::new(None),
            calibration: Cell::new(0),
        }
    };
}

impl Local {
    /// A new instrumentation session forgets the frames of the old one (whose exits may never come).
    #[inline]
    fn sync_generation(&self) {
        let g = SWITCHES.generation.load(Ordering::Acquire);
        if self.generation.get() != g {
            self.generation.set(g);
            self.open.borrow_mut().clear();
        }
    }

    fn record(&self, id: u32, end: u64, raw: u64, comp: u64, nested: u64) {
        let epoch = STATE.epoch.load(Ordering::Acquire);
        let mut slot = self.stats.borrow_mut();
        let stats = match slot.as_ref() {
            Some((e, s)) if *e == epoch => Arc::clone(s),
            _ => {
                let fresh = Arc::new(Mutex::new(ThreadStats::default()));
                lock(&STATE.registry).live.push(Arc::clone(&fresh));
                *slot = Some((epoch, Arc::clone(&fresh)));
                fresh
            }
        };
        drop(slot);
        let keep = STATE.last_n.load(Ordering::Relaxed) as usize;
        lock(&stats).method(id).record(end, raw, comp, nested, keep);
    }
}

/// Entry probe of region method `id`.
#[inline]
fn enter(id: u32) {
    let _ = LOCAL.try_with(|l| {
        l.sync_generation();
        let mut open = l.open.borrow_mut();
        for o in open.iter_mut() {
            o.nested += 1;
        }
        if let Some(o) = open.iter_mut().find(|o| o.id == id) {
            o.depth += 1;
            return;
        }
        if open.len() < MAX_OPEN {
            // The timestamp is read last, so the bookkeeping above is outside the interval.
            open.push(Open {
                id,
                depth: 1,
                start: 0,
                nested: 0,
                regions_ns: 0,
            });
            let last = open.len() - 1;
            open[last].start = now();
        }
    });
}

/// Exit (or unwind) probe of region method `id`, whose hook read the clock at `start`
/// ([`crate::probe::clock::ticks`]) first thing: the interval ends there.
#[inline]
fn exit(id: u32, start: u64) {
    let end = time_at(start);
    let _ = LOCAL.try_with(|l| {
        l.sync_generation();
        let mut open = l.open.borrow_mut();
        let Some(i) = open.iter().position(|o| o.id == id) else {
            return;
        };
        open[i].depth -= 1;
        if open[i].depth > 0 {
            return;
        }
        // In order: the frame that encloses it is the last one left.
        let o = open.remove(i);
        let raw = end.saturating_sub(o.start);
        if id == CALIBRATION_ID {
            drop(open);
            l.calibration.set(l.calibration.get() + raw);
            return;
        }
        let comp = compensate(raw, o.nested);
        // Its time is inside the enclosing region's too: folded stacks count it once.
        if let Some(outer) = open.last_mut() {
            outer.regions_ns += comp;
        }
        drop(open);
        if !SWITCHES.collecting.load(Ordering::Relaxed) || o.start < STATE.start_ns.load(Ordering::Relaxed)
        {
            return;
        }
        l.record(id, end, raw, comp, o.regions_ns);
    });
}

/// `raw` minus the probe costs inside it: the inner part of its own pair and every nested pair.
fn compensate(raw: u64, nested: u32) -> u64 {
    let inner = f64::from_bits(STATE.inner_ns.load(Ordering::Relaxed));
    let pair = f64::from_bits(STATE.pair_ns.load(Ordering::Relaxed));
    let cost = inner + f64::from(nested) * pair;
    (raw as f64 - cost).round().max(0.0) as u64
}

/// Calibration: the measured durations of the calibration method summed since the last call.
pub fn take_calibration_inner() -> u64 {
    LOCAL.try_with(|l| l.calibration.replace(0)).unwrap_or(0)
}

/// Starts a fresh measurement, compensated with `calibration` (of the region probes).
pub fn start(calibration: Option<&Calibration>) {
    let (inner, outer) = calibration.map_or((0.0, 0.0), |c| (c.inner_ns, c.outer_ns));
    STATE.inner_ns.store(inner.to_bits(), Ordering::SeqCst);
    STATE.pair_ns.store((inner + outer).to_bits(), Ordering::SeqCst);
    restart();
}

/// Discards the durations recorded so far, keeping the calibration: invocations that began
/// before are not counted when they end (a region's duration is its whole invocation).
pub fn restart() {
    let mut registry = lock(&STATE.registry);
    registry.live.clear();
    registry.retired = ThreadStats::default();
    STATE.epoch.fetch_add(1, Ordering::SeqCst);
    STATE.start_ns.store(now(), Ordering::SeqCst);
}

/// Folds the stats of ended threads (only the registry holds them) into the aggregate.
pub fn retire_ended() {
    let keep = STATE.last_n.load(Ordering::Relaxed) as usize;
    let mut registry = lock(&STATE.registry);
    let registry = &mut *registry;
    let mut i = 0;
    while i < registry.live.len() {
        if Arc::strong_count(&registry.live[i]) == 1 {
            let gone = registry.live.swap_remove(i);
            registry.retired.merge(&lock(&gone), keep);
        } else {
            i += 1;
        }
    }
}

/// Every region method's measurements so far, all threads merged; methods without a completed
/// invocation are listed with count 0. Does not stop or disturb the running threads.
pub fn snapshot(name: impl Fn(u32) -> Option<(String, String, String)>) -> Vec<RegionStats> {
    retire_ended();
    let keep = STATE.last_n.load(Ordering::Relaxed) as usize;
    let (ids, mut all) = {
        let registry = lock(&STATE.registry);
        let mut all = ThreadStats::default();
        all.merge(&registry.retired, keep);
        for t in &registry.live {
            let t = lock(t);
            all.merge(&t, keep);
        }
        (registry.ids.clone(), all)
    };
    ids.iter()
        .map(|&id| {
            let info = match name(id) {
                Some((class, method, descriptor)) => {
                    MethodInfo::from_internal(&class, &method, &descriptor)
                }
                None => MethodInfo::new("?", format!("method#{id}"), "()V"),
            };
            stats_of(info, all.method(id))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compensation_subtracts_inner_once_and_pairs_per_nested_call() {
        STATE.inner_ns.store(10.0f64.to_bits(), Ordering::SeqCst);
        STATE.pair_ns.store(25.0f64.to_bits(), Ordering::SeqCst);
        assert_eq!(compensate(1_000, 0), 990);
        assert_eq!(compensate(1_000, 4), 890);
        assert_eq!(compensate(5, 0), 0);
    }
}
