//! The `adaptive` option: as the program runs, the probes of methods that are called often and
//! take less time than their own probes are removed (YourKit's "adaptive tracing", JProfiler's
//! "overhead hot spots", done without a restart). In real programs most probe pairs are of such
//! methods (accessors that are not trivial enough for `skip-trivial`, small lookups): 69-94% of
//! them in the suite's workloads (docs/PERFORMANCE.md, "Session 13"), and their probes' cost is
//! what compensation can only estimate. Their later calls count in their callers' self time, as
//! the time of trivial methods does.
//!
//! The collector thread looks now and then ([`tick`]); the decision is the profile crate's
//! (`MethodTotals::short_and_frequent`, over trees read a step at a time), the removal the
//! session's (`session::drop_probes`): in Java, entries first, exits once no invocation entered
//! before the drop can still be running (`collector::quiet_drops`, checked on every tick).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The first look at the recording, after collection starts, and the interval after a look
/// that dropped nothing. (Waiting the doubled interval after those too saves a few ms of looks,
/// but on the accuracy benchmark a method whose calls started later kept its probes a second
/// longer: the `graded` root went from 0.97-1.07 to 1.09-1.18.)
const FIRST: Duration = Duration::from_millis(500);
/// After each round of drops the next look waits twice as long, up to this: a long run has a
/// few rounds, most of them early, where most of the probe cost is saved. (A look reads every
/// tree, some ms of the collector's time; with a hooks class of an older agent each round also
/// retransforms.)
const LONGEST: Duration = Duration::from_secs(8);

/// Calls a method must have made before its probes may go: enough for its average to mean
/// something, few enough that the probes go early in a long run (a few milliseconds of probes).
pub const MIN_CALLS: u64 = 10_000;

/// When to look next, and the interval after the next round of drops.
struct Schedule {
    next: Instant,
    backoff: Duration,
    /// Methods dropped whose exits still reach the agent, with the wall time ([`crate::hooks::now`])
    /// just after their drop.
    dropping: Vec<(u32, u64)>,
}

static SCHEDULE: Mutex<Option<Schedule>> = Mutex::new(None);

/// Collector tick: while an adaptive session collects, drops the probes of the methods found
/// short and frequent since the last look and ends the exits of earlier drops in Java once they
/// are quiet, with `act(drop, quiet)` (on a thread attached to the JVM; returns the ids dropped),
/// and logs the drops.
pub fn tick(act: impl FnOnce(&[u32], &[u32]) -> Vec<u32>) {
    let now = Instant::now();
    let (look, dropping) = {
        let mut schedule = SCHEDULE.lock().unwrap_or_else(|p| p.into_inner());
        if !crate::collector::collecting() {
            *schedule = None;
            return;
        }
        let s = schedule.get_or_insert(Schedule {
            next: now + FIRST,
            backoff: FIRST,
            dropping: Vec::new(),
        });
        let look = now >= s.next;
        if look {
            s.next = now + FIRST;
        }
        // Every tick: until then each call of the method costs a JNI call it does not measure.
        let quiet = !s.dropping.is_empty();
        if !look && !quiet {
            return;
        }
        (
            look,
            if quiet {
                s.dropping.clone()
            } else {
                Vec::new()
            },
        )
    };
    if !crate::session::adaptive() {
        return;
    }
    let quiet = crate::collector::quiet_drops(&dropping);
    let mut wanted = Vec::new();
    let looking = Instant::now();
    if look {
        let already = crate::session::dropped_ids();
        wanted = crate::collector::short_and_frequent(MIN_CALLS)
            .into_iter()
            .filter(|id| !already.contains(id))
            .collect();
    }
    let looked = looking.elapsed();
    if wanted.is_empty() && quiet.is_empty() {
        return;
    }
    let dropped = act(&wanted, &quiet);
    let at = crate::hooks::now();
    if let Some(s) = SCHEDULE.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        s.dropping.retain(|(id, _)| !quiet.contains(id));
        if crate::site_flags::can_drop() {
            s.dropping.extend(dropped.iter().map(|&id| (id, at)));
        }
        if !dropped.is_empty() {
            s.backoff = (s.backoff * 2).min(LONGEST);
            s.next = Instant::now() + s.backoff;
        }
    }
    if !quiet.is_empty() {
        log::info!(
            "adaptive: the exits of {} dropped methods now end in Java",
            quiet.len()
        );
    }
    if dropped.is_empty() {
        return;
    }
    let names: Vec<String> = dropped
        .iter()
        .map(|&id| match crate::session::method_name(id) {
            Some((class, name, descriptor)) => {
                format!("{}.{name}{descriptor}", class.replace('/', "."))
            }
            None => format!("method#{id}"),
        })
        .collect();
    log::info!(
        "adaptive: removed the probes of {} methods called at least {MIN_CALLS} times and \
         shorter than their probes (found in {:.1} ms): {}",
        dropped.len(),
        looked.as_secs_f64() * 1e3,
        names.join(", ")
    );
}
