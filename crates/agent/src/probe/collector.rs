//! Off the hot path: drains every thread's ring into a `ferrofluid_profile::Recording`, on its own
//! OS thread every millisecond and on demand (snapshot, stop). Holding the collector lock makes the
//! caller the rings' single consumer.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rustc_hash::FxHashMap;

use ferrofluid_profile::{MethodInfo, Profile, Recording, Stamp, DEFAULT_MAX_NODES};

use super::clock;
use super::flags;
use super::recorder::RINGS;
use super::ring::{Event, Kind, Ring};
use super::thread::{begin_fields, BEGIN_ID, FIRST_SESSION_ID, SWITCHES};
use super::upcalls::upcalls;

/// How often the collector thread drains the rings.
const PERIOD: Duration = Duration::from_millis(1);

struct Collector {
    recording: Recording,
    /// Global probe id -> id in the recording's method table. Looked up for every event: with
    /// the default SipHash this lookup was half of the collector's time, and the collector's
    /// time is the probes' too (a pair costs ~40 ns more while it drains concurrently).
    ids: FxHashMap<u32, ferrofluid_profile::MethodId>,
    /// Events lost in full rings since the last start, all threads.
    dropped: u64,
    /// Drops per ring already counted (rings only count up).
    seen_drops: HashMap<u64, u64>,
    /// Drops since the last start, per thread (recorder key).
    dropped_by_thread: HashMap<u64, u64>,
    /// One ring's events (with their CPU stamps) while they are recorded (kept, so a drain does
    /// not allocate it).
    events: Vec<(Event, Option<u64>)>,
    /// The epoch ([`SWITCHES`]`.epoch`) this recording takes events of.
    epoch: u32,
    /// Per ring (recorder key): the recording its events belong to now ([`Segment`]).
    segments: FxHashMap<u64, Segment>,
}

/// Where a ring's events stand: a thread's recording begins with a mark ([`BEGIN_ID`])
/// carrying its epoch and its ring's drop count then.
#[derive(Clone, Copy, Default)]
struct Segment {
    /// The recording under way began in this collector's epoch: its events count. Until a
    /// thread's first mark, and from a mark of another epoch on, they do not: they were
    /// recorded before collecting (re)started, and the frames they open would never close.
    current: bool,
    /// The ring's drop count (low 32 bits) at the mark.
    dropped: u32,
}

impl Collector {
    fn new() -> Collector {
        Collector {
            recording: Recording::new(DEFAULT_MAX_NODES),
            ids: FxHashMap::default(),
            dropped: 0,
            seen_drops: HashMap::new(),
            dropped_by_thread: HashMap::new(),
            events: Vec::new(),
            epoch: SWITCHES.epoch.load(Ordering::SeqCst),
            segments: FxHashMap::default(),
        }
    }

    fn method(&mut self, id: u32) -> ferrofluid_profile::MethodId {
        if let Some(&m) = self.ids.get(&id) {
            return m;
        }
        let info = match upcalls().and_then(|u| u.method_name(id)) {
            Some((class, name, descriptor)) => {
                MethodInfo::from_internal(&class, &name, &descriptor)
            }
            None => MethodInfo::new("?", format!("method#{id}"), "()V"),
        };
        let m = self.recording.methods.intern(info);
        self.ids.insert(id, m);
        m
    }

    /// Moves every published event into the recording; forgets rings of ended threads. Returns the
    /// most events found in one ring.
    fn drain(&mut self) -> usize {
        let rings: Vec<_> = lock(&RINGS).clone();
        let mut most = 0;
        for ring in &rings {
            most = most.max(self.drain_ring(ring));
        }
        // A ring only the registry still holds belongs to an ended thread (or an older session),
        // or to a virtual thread that parked (`vthread`).
        let mut paused = Vec::new();
        let mut gone_keys = Vec::new();
        let mut registry = lock(&RINGS);
        registry.retain(|r| {
            let gone =
                Arc::strong_count(r) <= 2 && r.closed.load(Ordering::Acquire) && r.is_empty();
            if gone {
                gone_keys.push(r.thread_id);
                if r.is_virtual {
                    paused.push(r.thread_id);
                }
            }
            !gone
        });
        // A virtual thread may already record into its next ring, of the same key, while the
        // one it let go waits here: that key's segment and tree are the live ring's.
        let live: HashSet<u64> = registry.iter().map(|r| r.thread_id).collect();
        drop(registry);
        gone_keys.retain(|k| !live.contains(k));
        paused.retain(|k| !live.contains(k));
        for key in gone_keys {
            // A later ring of the same key (a virtual thread's) begins with a mark.
            self.segments.remove(&key);
        }
        for key in paused {
            self.recording.virtual_paused(key);
        }
        most
    }

    /// Keeps of `events` (one drain of the ring keyed `key`, whose drop count is now
    /// `dropped`) those of a recording begun in this collector's epoch, marks included.
    /// Returns whether that recording lost events after its mark: the thread ended it there
    /// (`super::thread::recording_lost`), so the frames it left open are to be closed after these
    /// events, and what the ring holds until its next mark does not count.
    fn keep_current(
        &mut self,
        key: u64,
        dropped: u64,
        events: &mut Vec<(Event, Option<u64>)>,
    ) -> bool {
        let epoch = self.epoch;
        let segment = self.segments.entry(key).or_default();
        events.retain(|(e, _)| {
            if e.kind == Kind::Adjust && e.id == BEGIN_ID {
                let (of, dropped) = begin_fields(e.ns);
                *segment = Segment {
                    current: of == epoch,
                    dropped,
                };
            }
            segment.current
        });
        let lost = segment.current && segment.dropped != dropped as u32;
        if lost {
            segment.current = false;
        }
        lost
    }

    /// Moves `ring`'s published events into the recording; returns how many.
    fn drain_ring(&mut self, ring: &Ring) -> usize {
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        ring.drain(|e, cpu| events.push((e, cpu)));
        let drops = ring.dropped();
        let seen = self.seen_drops.entry(ring.thread_id).or_insert(0);
        if drops > *seen {
            self.dropped += drops - *seen;
            *self.dropped_by_thread.entry(ring.thread_id).or_insert(0) += drops - *seen;
            *seen = drops;
        }
        // Re-measuring the calibration during a profile records nothing: its probes' events
        // (method ids below the sessions') are dropped, and so are its pauses, since its thread
        // never gets a tree (the `cpu` engine's re-measuring thread).
        events.retain(|(e, _)| e.kind == Kind::Adjust || e.id >= FIRST_SESSION_ID);
        let lost = self.keep_current(ring.thread_id, drops, &mut events);
        let calls = events.iter().any(|(e, _)| e.kind != Kind::Adjust);
        if !calls && !self.recording.has_thread(ring.thread_id) {
            events.clear();
        }
        if !events.is_empty() {
            let mapped: Vec<(Kind, u32, ferrofluid_profile::MethodId, Stamp)> = events
                .iter()
                .map(|&(e, cpu)| {
                    let at = stamp(e.ns, cpu).by_probe(clock::ticks_to_ns(e.probe_ticks.into()));
                    let m = match e.id {
                        BEGIN_ID => ferrofluid_profile::MethodId(0),
                        id => self.method(id),
                    };
                    (e.kind, e.id, m, at)
                })
                .collect();
            let rec = self
                .recording
                .thread_of(ring.thread_id, ring.java_id, &ring.thread_name);
            for (kind, id, m, at) in mapped {
                match kind {
                    // A recording begins: frames still open are the previous one's, whose
                    // end was lost.
                    Kind::Adjust if id == BEGIN_ID => {
                        rec.close_open();
                    }
                    Kind::Enter => rec.enter(m, at),
                    // An exit with no open frame (the thread was inside a root before collection
                    // started) is counted by the recorder and otherwise ignored.
                    // A method whose probes were dropped: only invocations entered before.
                    Kind::Exit if flags::get(id) & flags::DROPPED != 0 => {
                        rec.exit_if_innermost(m, at);
                    }
                    Kind::Exit => {
                        let _ = rec.exit(m, at);
                    }
                    Kind::Adjust => rec.adjust(at),
                }
            }
            if ring.is_virtual {
                self.recording.mark_virtual(ring.thread_id);
            }
        }
        if lost && self.recording.has_thread(ring.thread_id) {
            self.recording
                .thread_of(ring.thread_id, ring.java_id, &ring.thread_name)
                .close_open();
        }
        let n = events.len();
        self.events = events;
        n
    }
}

/// The recorder's stamp of an event: its wall time, and its thread CPU time if it carries one.
fn stamp(wall_ns: u64, cpu_ns: Option<u64>) -> Stamp {
    match cpu_ns {
        Some(cpu) => Stamp::with_cpu(wall_ns, cpu),
        None => Stamp::wall(wall_ns),
    }
}

// Process-wide: a probe whose ring is full (a JVM native without user data) drains it into the
// recording.
/// The recording of the profile collecting (or collected last).
static COLLECTOR: Mutex<Option<Collector>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Makes sure rings are drained (before calibration, which records events).
pub fn prepare() {
    lock(&COLLECTOR).get_or_insert_with(Collector::new);
}

/// Starts collecting into a fresh recording (earlier events are discarded), whose times are
/// compensated with `calibration` (and CPU times with `cpu_calibration`).
pub fn start(
    calibration: Option<ferrofluid_profile::Calibration>,
    cpu_calibration: Option<ferrofluid_profile::Calibration>,
    calibration_stats: Option<ferrofluid_profile::CalibrationStats>,
) {
    let mut c = lock(&COLLECTOR);
    if let Some(old) = c.as_mut() {
        old.drain();
    }
    let mut fresh = Collector::new();
    fresh.recording.calibration = calibration;
    fresh.recording.cpu_calibration = cpu_calibration;
    fresh.recording.calibration_stats = calibration_stats;
    // Rings count drops for their life; only drops from now on concern this recording.
    fresh.seen_drops = lock(&RINGS)
        .iter()
        .map(|r| (r.thread_id, r.dropped()))
        .collect();
    // Threads recording in the old epoch may go on pushing its events until they see the new
    // one: the fresh recording takes a thread's events from its first mark of this epoch on.
    fresh.epoch = SWITCHES.epoch.fetch_add(1, Ordering::SeqCst) + 1;
    *c = Some(fresh);
    SWITCHES.collecting.store(true, Ordering::SeqCst);
}

/// The wall calibration measured again while collecting (the `cpu` engine re-measures):
/// it replaces the recording's, with what it saw.
pub fn calibrated(
    calibration: ferrofluid_profile::Calibration,
    stats: ferrofluid_profile::CalibrationStats,
) {
    if let Some(c) = lock(&COLLECTOR).as_mut() {
        c.recording.calibration = Some(calibration);
        c.recording.calibration_stats = Some(stats);
    }
}

/// Stops collecting; the data stays for `snapshot`.
pub fn stop() {
    SWITCHES.collecting.store(false, Ordering::SeqCst);
    if let Some(c) = lock(&COLLECTOR).as_mut() {
        c.drain();
    }
}

pub fn collecting() -> bool {
    SWITCHES.collecting.load(Ordering::SeqCst)
}

/// Of `drops` (global method id, wall time just after its probes were dropped), the ids whose
/// exits may return in Java from now on: no invocation entered before the drop can still be
/// open or unseen ([`ferrofluid_profile::Recording::quiet_since`]).
pub fn quiet_drops(drops: &[(u32, u64)]) -> Vec<u32> {
    let c = lock(&COLLECTOR);
    let Some(c) = c.as_ref() else {
        return Vec::new();
    };
    drops
        .iter()
        .filter(|&&(id, at)| c.recording.quiet_since(c.ids.get(&id).copied(), at))
        .map(|&(id, _)| id)
        .collect()
}

/// The global ids of the methods recorded so far that were called at least `min_calls` times
/// and take less time than their probes ([`ferrofluid_profile::MethodTotals`]), with their calls;
/// and the time spent inside roots so far. The trees are read under the collector lock, which a
/// thread whose ring fills waits for: a few thousand nodes at a time ([`TOTALS_STEP`]), letting
/// go in between.
pub fn short_and_frequent(min_calls: u64) -> (Vec<(u32, u64)>, InsideRoots) {
    let mut totals = ferrofluid_profile::MethodTotals::default();
    for index in 0.. {
        let mut pass = None;
        loop {
            let c = lock(&COLLECTOR);
            let Some(rec) = c.as_ref().map(|c| &c.recording) else {
                return (Vec::new(), InsideRoots::default());
            };
            let Some(tree) = rec.thread_tree(index) else {
                break;
            };
            let pass = pass.get_or_insert_with(|| ferrofluid_profile::TreeTotals::new(tree));
            if pass.step(tree, rec.calibration.as_ref(), TOTALS_STEP) {
                break;
            }
        }
        match pass {
            Some(pass) => totals.add(pass.finish()),
            None => break,
        }
    }
    let c = lock(&COLLECTOR);
    let Some(c) = c.as_ref() else {
        return (Vec::new(), InsideRoots::default());
    };
    let inside = InsideRoots {
        ns: totals.root_ns(),
        calls: totals.root_calls(),
    };
    let short = totals.short_and_frequent(c.recording.calibration.as_ref(), min_calls);
    if short.is_empty() {
        return (Vec::new(), inside);
    }
    let ids = c
        .ids
        .iter()
        .filter_map(|(&id, m)| {
            let at = short.binary_search_by_key(m, |&(m, _)| m).ok()?;
            Some((id, short[at].1))
        })
        .collect();
    (ids, inside)
}

/// The time spent inside roots, compensated (zero where the probes' estimated cost covers all
/// of it), over the outermost calls that ended.
#[derive(Clone, Copy, Debug, Default)]
pub struct InsideRoots {
    pub ns: u64,
    pub calls: u64,
}

/// Tree nodes [`short_and_frequent`] reads per taking of the collector lock: well under a
/// millisecond, while a busy thread fills its ring in a few.
const TOTALS_STEP: usize = 20_000;

/// Events dropped since the last start.
pub fn dropped() -> u64 {
    lock(&COLLECTOR).as_ref().map_or(0, |c| c.dropped)
}

/// The profile so far (open frames closed now), and the events dropped since the last start;
/// `None` if collection never started. `blocked(threads)` tells which of `threads` (Java ids,
/// those inside a recorded frame) JVMTI finds blocked and how: it is asked first, with no lock
/// held, and a thread it names is marked waiting in its innermost open frame. `dropped_ids`:
/// the global ids of the methods whose probes were dropped, for `probes_dropped`.
pub fn snapshot(
    blocked: impl FnOnce(&HashSet<u64>) -> HashMap<u64, (String, String)>,
    dropped_ids: &[u32],
) -> Option<(Profile, u64)> {
    // Only threads inside a recorded frame can be waiting in one.
    let inside: HashSet<u64> = lock(&COLLECTOR)
        .as_ref()?
        .recording
        .open_frames()
        .into_iter()
        .filter_map(|(_, id, node)| node.map(|_| id))
        .collect();
    let blocked = if inside.is_empty() {
        HashMap::new()
    } else {
        blocked(&inside)
    };
    let mut c = lock(&COLLECTOR);
    let c = c.as_mut()?;
    c.drain();
    let open = c.recording.open_frames();
    let mut profile = c.recording.snapshot(Stamp::wall(clock::now()));
    for (t, (key, id, node)) in profile.threads.iter_mut().zip(open) {
        t.dropped_events = c.dropped_by_thread.get(&key).copied().unwrap_or(0);
        if let (Some((state, frame)), Some(node)) = (blocked.get(&id), node) {
            t.waiting = Some(ferrofluid_profile::Waiting {
                state: state.clone(),
                frame: frame.clone(),
                node: Some(node),
            });
        }
    }
    profile.probes_dropped = dropped_ids
        .iter()
        .filter_map(|id| c.ids.get(id).copied())
        .collect();
    Some((profile, c.dropped))
}

/// Discards what was collected so far and goes on collecting ([`Recording::restart`]): calls
/// in flight count their time from now on. False if collection was never started.
pub fn restart() -> bool {
    let mut c = lock(&COLLECTOR);
    let Some(c) = c.as_mut() else {
        return false;
    };
    c.drain();
    c.recording.restart(Stamp::wall(clock::now()));
    c.dropped = 0;
    c.dropped_by_thread.clear();
    true
}

/// Forgets everything collected (detach).
pub fn reset() {
    SWITCHES.collecting.store(false, Ordering::SeqCst);
    *lock(&COLLECTOR) = None;
}

/// Empties `ring`, whose own thread found it full (the collector fell behind, e.g. on a busy
/// machine), on that thread: the caller factors the time out as a pause. Without this the thread
/// would wait for the collector and, after [`crate::probe::ring::FULL_WAIT`], drop events, which leaves
/// its tree inexact. False when the collector lock is taken or collection is not set up.
pub fn drain_own(ring: &Ring) -> bool {
    let mut c = match COLLECTOR.try_lock() {
        Ok(c) => c,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return false,
    };
    match c.as_mut() {
        Some(c) => {
            c.drain_ring(ring);
            true
        }
        None => false,
    }
}

/// How long the collector thread sleeps once the rings have been empty for [`IDLE_ROUNDS`]
/// rounds (an agent without a session, an engine without probe events, a program between
/// bursts): it only ticks then, and a thousand wake-ups a second would take time slices from the
/// program for nothing. A thread whose ring fills meanwhile empties it itself.
const IDLE_PERIOD: Duration = Duration::from_millis(10);

/// Rounds without an event before the collector sleeps [`IDLE_PERIOD`].
const IDLE_ROUNDS: u32 = 10;

/// The collector thread's body: drains until `stop` is set, calling `tick` after each round. It
/// sleeps [`PERIOD`] between rounds unless a ring was more than a quarter full, so a busy
/// thread's ring is emptied at once, and [`IDLE_PERIOD`] while the rings stay empty; whoever
/// sets `stop` unparks it, so that a JVM's exit does not wait for its sleep.
pub fn run(stop: Arc<AtomicBool>, tick: impl Fn()) {
    let busy = super::ring::RING_EVENTS / 4;
    let mut most = 0;
    let mut idle = 0;
    while !stop.load(Ordering::SeqCst) {
        if idle >= IDLE_ROUNDS {
            std::thread::park_timeout(IDLE_PERIOD);
        } else if most < busy {
            std::thread::park_timeout(PERIOD);
        }
        most = lock(&COLLECTOR).as_mut().map_or(0, |c| c.drain());
        idle = if most == 0 { idle.saturating_add(1) } else { 0 };
        tick();
    }
}

#[cfg(test)]
mod tests;
