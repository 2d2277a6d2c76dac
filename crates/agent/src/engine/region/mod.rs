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
use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ferrofluid_profile::region::{bucket_bounds, Bucket, Percentiles, RegionStats, Uncompensated};
use ferrofluid_profile::{Calibration, MethodInfo};
use hdrhistogram::Histogram;

use ferrofluid_classfile::ProbeKind;
use ferrofluid_jvmti::{sys, JniEnv};
use ferrofluid_profile::{Mode, Profile};
use ferrofluid_protocol::AgentOptions;
use ferrofluid_subgraph::{PlanConfig, Scheme};

use crate::engine::{Capability, Engine, Instrumentation, JvmEvent, Needs, Selection, Units};
use crate::probe::flags::{self, ACTIVE};
use crate::probe::hooks::{self, CALIBRATION_ID};
use crate::probe::{calibrate, collector};

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

    fn instruments(&self) -> Option<Instrumentation> {
        Some(Instrumentation {
            probes: ProbeKind::EntryExit,
            selection: Selection::Methods,
        })
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

    fn configure(&self, options: &AgentOptions) {
        // Region probes time wall durations only.
        hooks::CPU.store(false, Ordering::SeqCst);
        LAST_N.store(options.region_last(), Ordering::SeqCst);
        lock(&REGISTRY).ids.clear();
    }

    fn method_chosen(&self, id: u32) {
        lock(&REGISTRY).ids.insert(id);
    }

    /// Calibrates the region probes (the callee alone: a region's callees have no probes),
    /// then measures afresh with that calibration.
    fn start(&self, env: &JniEnv<'_>) {
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

    fn reset(&self) {
        restart();
    }

    fn tick(&self) {
        retire_ended();
    }

    fn snapshot(&self, profile: &mut Profile) {
        profile.mode = ferrofluid_profile::Mode::Region;
        profile.regions = Some(snapshot(crate::runtime::session::method_name));
    }

    #[inline(always)]
    fn enter(_env: *mut sys::JNIEnv, id: i32, _start: u64) {
        let id = hooks::method_id(id as u32);
        if flags::get(id) & ACTIVE != 0 {
            enter(id);
        }
    }

    #[inline(always)]
    fn exit(_env: *mut sys::JNIEnv, id: i32, start: u64) {
        let id = hooks::method_id(id as u32);
        if flags::get(id) & ACTIVE != 0 {
            exit(id, start);
        }
    }
}

/// Longest duration the histograms tell apart (longer ones count as this), ns: one hour.
const MAX_NS: u64 = 3_600_000_000_000;
/// Significant digits of the histograms: percentiles within 1%, ~36 KiB per histogram.
const DIGITS: u8 = 2;
/// Region frames open at once on one thread beyond which new ones are not measured.
const MAX_OPEN: usize = 64;

/// How many last durations to keep per method.
static LAST_N: AtomicU32 = AtomicU32::new(ferrofluid_protocol::DEFAULT_REGION_LAST);
/// Bumped when collection starts: threads then record into fresh stats.
static EPOCH: AtomicU32 = AtomicU32::new(1);
/// When collection started: invocations that began earlier are not recorded.
static START_NS: AtomicU64 = AtomicU64::new(u64::MAX);
/// Probe costs (f64 bits, ns): subtracted once per invocation, and per nested probe pair.
static INNER_NS: AtomicU64 = AtomicU64::new(0);
static PAIR_NS: AtomicU64 = AtomicU64::new(0);

/// The region methods of the session (global ids), and every thread's stats.
struct Registry {
    ids: BTreeSet<u32>,
    live: Vec<Arc<Mutex<ThreadStats>>>,
    /// Stats of threads that ended.
    retired: ThreadStats,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    ids: BTreeSet::new(),
    live: Vec::new(),
    retired: ThreadStats {
        methods: Vec::new(),
    },
});

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One region method's measurements on one thread (or merged).
#[derive(Clone)]
struct MethodStats {
    count: u64,
    threads: u64,
    total: u64,
    /// Compensated time of other region methods' invocations nested directly inside.
    nested: u64,
    raw_total: u64,
    min: u64,
    max: u64,
    raw_min: u64,
    raw_max: u64,
    hist: Histogram<u64>,
    raw_hist: Histogram<u64>,
    /// (end timestamp, compensated, measured), oldest first.
    last: VecDeque<(u64, u64, u64)>,
}

impl MethodStats {
    fn new() -> MethodStats {
        let hist = Histogram::new_with_bounds(1, MAX_NS, DIGITS).expect("valid histogram bounds");
        MethodStats {
            count: 0,
            threads: 0,
            total: 0,
            nested: 0,
            raw_total: 0,
            min: u64::MAX,
            max: 0,
            raw_min: u64::MAX,
            raw_max: 0,
            raw_hist: hist.clone(),
            hist,
            last: VecDeque::new(),
        }
    }

    fn record(&mut self, end: u64, raw: u64, comp: u64, nested: u64, keep: usize) {
        self.count += 1;
        self.threads = 1;
        self.total += comp;
        self.nested += nested.min(comp);
        self.raw_total += raw;
        self.min = self.min.min(comp);
        self.max = self.max.max(comp);
        self.raw_min = self.raw_min.min(raw);
        self.raw_max = self.raw_max.max(raw);
        self.hist.saturating_record(comp.min(MAX_NS));
        self.raw_hist.saturating_record(raw.min(MAX_NS));
        if keep > 0 {
            if self.last.len() >= keep {
                self.last.pop_front();
            }
            self.last.push_back((end, comp, raw));
        }
    }

    fn merge(&mut self, other: &MethodStats, keep: usize) {
        self.count += other.count;
        self.threads += other.threads;
        self.total += other.total;
        self.nested += other.nested;
        self.raw_total += other.raw_total;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.raw_min = self.raw_min.min(other.raw_min);
        self.raw_max = self.raw_max.max(other.raw_max);
        // Same bounds on both sides: adding cannot fail.
        let _ = self.hist.add(&other.hist);
        let _ = self.raw_hist.add(&other.raw_hist);
        let mut last: Vec<_> = self.last.iter().chain(&other.last).copied().collect();
        last.sort_by_key(|l| l.0);
        let skip = last.len().saturating_sub(keep);
        self.last = last.into_iter().skip(skip).collect();
    }
}

#[derive(Default)]
struct ThreadStats {
    /// (global id, stats); a thread runs few region methods, so a vector is fastest.
    methods: Vec<(u32, MethodStats)>,
}

impl ThreadStats {
    fn method(&mut self, id: u32) -> &mut MethodStats {
        let i = match self.methods.iter().position(|(m, _)| *m == id) {
            Some(i) => i,
            None => {
                self.methods.push((id, MethodStats::new()));
                self.methods.len() - 1
            }
        };
        &mut self.methods[i].1
    }

    fn merge(&mut self, other: &ThreadStats, keep: usize) {
        for (id, s) in &other.methods {
            self.method(*id).merge(s, keep);
        }
    }
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
        let g = hooks::GENERATION.load(Ordering::Acquire);
        if self.generation.get() != g {
            self.generation.set(g);
            self.open.borrow_mut().clear();
        }
    }

    fn record(&self, id: u32, end: u64, raw: u64, comp: u64, nested: u64) {
        let epoch = EPOCH.load(Ordering::Acquire);
        let mut slot = self.stats.borrow_mut();
        let stats = match slot.as_ref() {
            Some((e, s)) if *e == epoch => Arc::clone(s),
            _ => {
                let fresh = Arc::new(Mutex::new(ThreadStats::default()));
                lock(&REGISTRY).live.push(Arc::clone(&fresh));
                *slot = Some((epoch, Arc::clone(&fresh)));
                fresh
            }
        };
        drop(slot);
        let keep = LAST_N.load(Ordering::Relaxed) as usize;
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
            open[last].start = hooks::now();
        }
    });
}

/// Exit (or unwind) probe of region method `id`, whose hook read the clock at `start`
/// ([`hooks::ticks`]) first thing: the interval ends there.
#[inline]
fn exit(id: u32, start: u64) {
    let end = hooks::time_at(start);
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
        if !hooks::COLLECTING.load(Ordering::Relaxed) || o.start < START_NS.load(Ordering::Relaxed)
        {
            return;
        }
        l.record(id, end, raw, comp, o.regions_ns);
    });
}

/// `raw` minus the probe costs inside it: the inner part of its own pair and every nested pair.
fn compensate(raw: u64, nested: u32) -> u64 {
    let inner = f64::from_bits(INNER_NS.load(Ordering::Relaxed));
    let pair = f64::from_bits(PAIR_NS.load(Ordering::Relaxed));
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
    INNER_NS.store(inner.to_bits(), Ordering::SeqCst);
    PAIR_NS.store((inner + outer).to_bits(), Ordering::SeqCst);
    restart();
}

/// Discards the durations recorded so far, keeping the calibration: invocations that began
/// before are not counted when they end (a region's duration is its whole invocation).
pub fn restart() {
    let mut registry = lock(&REGISTRY);
    registry.live.clear();
    registry.retired = ThreadStats::default();
    EPOCH.fetch_add(1, Ordering::SeqCst);
    START_NS.store(hooks::now(), Ordering::SeqCst);
}

/// Folds the stats of ended threads (only the registry holds them) into the aggregate.
pub fn retire_ended() {
    let keep = LAST_N.load(Ordering::Relaxed) as usize;
    let mut registry = lock(&REGISTRY);
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
    let keep = LAST_N.load(Ordering::Relaxed) as usize;
    let (ids, mut all) = {
        let registry = lock(&REGISTRY);
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

fn stats_of(info: MethodInfo, s: &MethodStats) -> RegionStats {
    let empty = s.count == 0;
    let or0 = |v: u64| if empty { 0 } else { v };
    let mut stats = RegionStats {
        class: info.class,
        method: info.method,
        descriptor: info.descriptor,
        count: s.count,
        threads: s.threads,
        total_ns: s.total,
        nested_ns: s.nested,
        min_ns: or0(s.min),
        max_ns: s.max,
        percentiles: percentiles(&s.hist, s.max),
        distribution: distribution(&s.hist),
        last_ns: s.last.iter().map(|l| l.1).collect(),
        uncompensated: Uncompensated {
            total_ns: s.raw_total,
            min_ns: or0(s.raw_min),
            max_ns: s.raw_max,
            percentiles: percentiles(&s.raw_hist, s.raw_max),
            last_ns: s.last.iter().map(|l| l.2).collect(),
        },
        uncertain: false,
    };
    stats.uncertain = stats.probe_dominated();
    stats
}

/// Percentiles from the histogram, never above the exact maximum (the histogram's answer is the
/// top of a bucket).
fn percentiles(h: &Histogram<u64>, max: u64) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    let at = |q: f64| h.value_at_quantile(q).min(max);
    Percentiles {
        p50_ns: at(0.50),
        p90_ns: at(0.90),
        p99_ns: at(0.99),
        p999_ns: at(0.999),
    }
}

/// Log-scale bars from the first non-empty one to the last.
fn distribution(h: &Histogram<u64>) -> Vec<Bucket> {
    if h.is_empty() {
        return Vec::new();
    }
    let bounds = bucket_bounds(h.max());
    let mut counts = vec![0u64; bounds.len()];
    for v in h.iter_recorded() {
        // A histogram bucket goes to the bar of its lowest value (its values differ by < 1%).
        let low = h.lowest_equivalent(v.value_iterated_to());
        let i = bounds.partition_point(|b| *b < low).min(bounds.len() - 1);
        counts[i] += v.count_at_value();
    }
    let first = counts.iter().position(|c| *c > 0).unwrap_or(0);
    let last = counts.iter().rposition(|c| *c > 0).unwrap_or(0);
    (first..=last)
        .map(|i| Bucket {
            le_ns: bounds[i],
            count: counts[i],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(durations: &[u64]) -> MethodStats {
        let mut s = MethodStats::new();
        for (i, d) in durations.iter().enumerate() {
            s.record(i as u64, d + 10, *d, 0, 3);
        }
        s
    }

    #[test]
    fn one_thread_summary() {
        let s = stats(&[1_000, 2_000, 3_000, 20_000_000]);
        let r = stats_of(MethodInfo::from_internal("demo/Work", "step", "()V"), &s);
        assert_eq!((r.class.as_str(), r.count, r.threads), ("demo.Work", 4, 1));
        assert_eq!(
            (r.total_ns, r.min_ns, r.max_ns),
            (20_006_000, 1_000, 20_000_000)
        );
        assert_eq!(r.uncompensated.total_ns, 20_006_040);
        assert_eq!(
            (r.uncompensated.min_ns, r.uncompensated.max_ns),
            (1_010, 20_000_010)
        );
        assert_eq!(r.last_ns, [2_000, 3_000, 20_000_000]);
        assert_eq!(r.uncompensated.last_ns, [2_010, 3_010, 20_000_010]);
        // Two significant digits: within 1% above the true value, never above the maximum.
        let p = r.percentiles;
        assert!((2_000..=2_020).contains(&p.p50_ns), "{p:?}");
        assert_eq!(
            (p.p90_ns, p.p99_ns, p.p999_ns),
            (20_000_000, 20_000_000, 20_000_000)
        );
        let bars: Vec<(u64, u64)> = r.distribution.iter().map(|b| (b.le_ns, b.count)).collect();
        assert_eq!(
            bars,
            [
                (1_000, 1),
                (2_000, 1),
                (5_000, 1),
                (10_000, 0),
                (20_000, 0),
                (50_000, 0),
                (100_000, 0),
                (200_000, 0),
                (500_000, 0),
                (1_000_000, 0),
                (2_000_000, 0),
                (5_000_000, 0),
                (10_000_000, 0),
                (20_000_000, 1)
            ]
        );
    }

    #[test]
    fn merging_threads_keeps_the_last_by_end_time() {
        let mut a = stats(&[5, 7]); // ends 0, 1
        let mut b = MethodStats::new();
        b.record(5, 1, 1, 0, 3);
        b.record(0, 9, 9, 5, 3);
        a.merge(&b, 3);
        assert_eq!(
            (a.count, a.threads, a.total, a.nested, a.min, a.max),
            (4, 2, 22, 5, 1, 9)
        );
        let last: Vec<u64> = a.last.iter().map(|l| l.1).collect();
        assert_eq!(last, [9, 7, 1]);
    }

    #[test]
    fn empty_method_reports_zeros() {
        let r = stats_of(MethodInfo::new("A", "b", "()V"), &MethodStats::new());
        assert_eq!((r.count, r.min_ns, r.max_ns), (0, 0, 0));
        assert_eq!(r.percentiles, Percentiles::default());
        assert!(r.distribution.is_empty() && r.last_ns.is_empty());
    }

    #[test]
    fn compensation_subtracts_inner_once_and_pairs_per_nested_call() {
        INNER_NS.store(10.0f64.to_bits(), Ordering::SeqCst);
        PAIR_NS.store(25.0f64.to_bits(), Ordering::SeqCst);
        assert_eq!(compensate(1_000, 0), 990);
        assert_eq!(compensate(1_000, 4), 890);
        assert_eq!(compensate(5, 0), 0);
    }
}
