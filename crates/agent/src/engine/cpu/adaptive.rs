//! The `adaptive` option: as the program runs, the probes of methods that are called often and
//! take less time than their own probes are removed (YourKit's "adaptive tracing", JProfiler's
//! "overhead hot spots", done without a restart). In real programs most probe pairs are of such
//! methods (accessors that are not trivial enough for `skip-trivial`, small lookups): 69-94% of
//! them in the suite's workloads (docs/decisions/0013-adaptive-probe-removal.md), and their probes' cost is
//! what compensation can only estimate. Their later calls count in their callers' self time, as
//! the time of trivial methods does.
//!
//! The collector thread looks now and then ([`tick`]); the decision is the profile crate's
//! (`MethodTotals::short_and_frequent`, over trees read a step at a time), the removal the
//! runtime session's (`Context::drop_probes`): in Java, entries first, exits once no invocation entered
//! before the drop can still be running (`collector::quiet_drops`, checked on every tick). A
//! class is retransformed without them as well where the gates left in Java would cost too much
//! ([`costly_gates`]) or a drop stays unquiet ([`stale_drops`]).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::engine::Context;
use crate::probe::collector::{self, InsideRoots};
use crate::probe::clock;

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

/// What the gates of a method dropped in Java cost per call, against none once its class is
/// retransformed without its probes: `crates/cli/tests/java/Adaptive.java`'s 1-ns method
/// costs ~3.5 ns per call dropped in Java, ~1 ns retransformed (docs/decisions/
/// 0013-adaptive-probe-removal.md).
const GATES_NS: f64 = 2.5;

/// The share of the time inside roots that the gates of a class's methods dropped in one
/// round must be expected to cost for the class to be retransformed as well. A
/// retransformation sends back to the interpreter every compiled method that inlined one of
/// the class's methods, a one-off cost that a class this busy repays. In the suite's four
/// workloads no class came near (at most 1.6%, java.nio.Buffer in Lucene), in the accuracy
/// benchmark one did (3.6%, docs/decisions/0013-adaptive-probe-removal.md).
const RETRANSFORM_SHARE: f64 = 0.02;

/// Of `short` (global id, calls so far) about to be dropped, the methods whose classes
/// (`class_of`) are worth retransforming, with the share their gates would cost: at least
/// [`RETRANSFORM_SHARE`] of the time inside roots over the same calls once the probes are gone
/// (`inside`'s compensated time, the gates added). Compensation may leave no time at all
/// where the probes cost far more than the program (the gates' share is then whole). None
/// while no root call has ended. Ascending ids.
fn costly_gates(
    short: &[(u32, u64)],
    inside: InsideRoots,
    class_of: impl Fn(u32) -> Option<String>,
) -> Vec<(String, f64, Vec<u32>)> {
    if inside.calls == 0 {
        return Vec::new();
    }
    let mut by_class: BTreeMap<String, (u64, Vec<u32>)> = BTreeMap::new();
    for &(id, calls) in short {
        if let Some(class) = class_of(id) {
            let entry = by_class.entry(class).or_default();
            entry.0 += calls;
            entry.1.push(id);
        }
    }
    by_class
        .into_iter()
        .map(|(class, (calls, mut ids))| {
            ids.sort_unstable();
            let gates = calls as f64 * GATES_NS;
            (class, gates / (inside.ns as f64 + gates), ids)
        })
        .filter(|&(_, share, _)| share >= RETRANSFORM_SHARE)
        .collect()
}

/// How long after its drop a method's exits may keep reaching the agent, a JNI call each,
/// before its class is retransformed instead (the exits of calls already running stay with
/// the old code). A drop is quiet within milliseconds unless some thread stays inside a root
/// without recording anything (blocked there); then the exits would go on costing until that
/// thread moves.
const QUIET_WAIT_NS: u64 = 1_000_000_000;

/// Of `dropping` (id, wall time of its drop), those not in `quiet` dropped at least
/// [`QUIET_WAIT_NS`] before `now`.
fn stale_drops(dropping: &[(u32, u64)], quiet: &[u32], now: u64) -> Vec<u32> {
    dropping
        .iter()
        .filter(|&&(id, at)| !quiet.contains(&id) && now.saturating_sub(at) >= QUIET_WAIT_NS)
        .map(|&(id, _)| id)
        .collect()
}

/// When to look next, and the interval after the next round of drops: the session's.
pub struct Schedule {
    next: Instant,
    backoff: Duration,
    /// Methods dropped whose exits still reach the agent, with the wall time
    /// ([`clock::now`]) just after their drop.
    dropping: Vec<(u32, u64)>,
}

/// What a tick does: drop the probes of `drop`, end the exits of `quiet` in Java, retransform
/// the classes of `retransform` (stale drops, and drops whose gates would cost too much).
#[derive(Default)]
struct Round {
    drop: Vec<u32>,
    quiet: Vec<u32>,
    stale: Vec<u32>,
    retransform: Vec<u32>,
    /// How long finding `drop` took.
    looked: Duration,
}

/// Collector tick: while an adaptive session collects, drops the probes of the methods found
/// short and frequent since the last look and ends the exits of earlier drops in Java once they
/// are quiet, through the runtime (`ctx`, on a thread attached to the JVM; the classes of stale
/// drops and of drops whose gates would cost too much are retransformed too), and logs the
/// drops. `schedule`: the session's.
pub fn tick(schedule: &Mutex<Option<Schedule>>, ctx: &dyn Context) {
    let Some((look, dropping)) = due(schedule) else {
        return;
    };
    if !ctx.instrumented() {
        return;
    }
    let round = choose(look, &dropping, ctx);
    if round.drop.is_empty() && round.quiet.is_empty() && round.stale.is_empty() {
        return;
    }
    let dropped = ctx.drop_probes(&round.drop, &round.quiet, &round.retransform);
    let at = clock::now();
    if let Some(s) = lock(schedule).as_mut() {
        s.dropping
            .retain(|(id, _)| !round.quiet.contains(id) && !round.stale.contains(id));
        if ctx.drops_in_java() {
            // A class retransformed with the drop has no gates left to quiet but in the calls
            // already running, and must not be retransformed again as stale.
            s.dropping.extend(
                dropped
                    .iter()
                    .filter(|id| !round.retransform.contains(id))
                    .map(|&id| (id, at)),
            );
        }
        if !dropped.is_empty() {
            s.backoff = (s.backoff * 2).min(LONGEST);
            s.next = Instant::now() + s.backoff;
        }
    }
    log_round(&round, &dropped, ctx);
}

/// Method `id` as the log names it: `pkg.Class.name(descriptor)`, or `method#id` if unknown.
pub fn method_label(ctx: &dyn Context, id: u32) -> String {
    match ctx.method_name(id) {
        Some((class, name, descriptor)) => {
            format!("{}.{name}{descriptor}", class.replace('/', "."))
        }
        None => format!("method#{id}"),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether this tick looks at the recording, and the drops whose exits may be quiet now
/// (every tick: until then each call of the method costs a JNI call it does not measure);
/// `None` when there is nothing to do (or nothing collects: the schedule starts over).
fn due(schedule: &Mutex<Option<Schedule>>) -> Option<(bool, Vec<(u32, u64)>)> {
    let now = Instant::now();
    let mut schedule = lock(schedule);
    if !collector::collecting() {
        *schedule = None;
        return None;
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
    let quiet = !s.dropping.is_empty();
    if !look && !quiet {
        return None;
    }
    Some((look, if quiet { s.dropping.clone() } else { Vec::new() }))
}

/// The round of a tick: the drops now quiet or stale, and when looking, the short and frequent
/// methods not dropped yet.
fn choose(look: bool, dropping: &[(u32, u64)], ctx: &dyn Context) -> Round {
    let quiet = collector::quiet_drops(dropping);
    let stale = stale_drops(dropping, &quiet, clock::now());
    let mut round = Round {
        retransform: stale.clone(),
        quiet,
        stale,
        ..Round::default()
    };
    let looking = Instant::now();
    if look {
        let already = ctx.dropped_ids();
        let (short, inside) = collector::short_and_frequent(MIN_CALLS);
        let short: Vec<(u32, u64)> = short
            .into_iter()
            .filter(|(id, _)| !already.contains(id))
            .collect();
        round.drop = short.iter().map(|&(id, _)| id).collect();
        let class_of = |id| ctx.method_name(id).map(|(class, _, _)| class);
        // Otherwise every drop retransforms anyway.
        let costly = if ctx.drops_in_java() {
            costly_gates(&short, inside, class_of)
        } else {
            Vec::new()
        };
        for (class, share, ids) in costly {
            log::info!(
                "adaptive: the gates of {} methods of {} to drop would cost {:.1}% of the time \
                 inside roots: retransforming the class",
                ids.len(),
                class.replace('/', "."),
                share * 100.0
            );
            round.retransform.extend(ids);
        }
    }
    round.looked = looking.elapsed();
    round
}

/// Logs what a round did: quiet and stale drops, and the methods whose probes were `dropped`.
fn log_round(round: &Round, dropped: &[u32], ctx: &dyn Context) {
    if !round.quiet.is_empty() {
        log::info!(
            "adaptive: the exits of {} dropped methods now end in Java",
            round.quiet.len()
        );
    }
    if !round.stale.is_empty() {
        log::info!(
            "adaptive: {} dropped methods were not quiet after {} ms (a thread stays inside a \
             root without recording anything): their classes retransformed",
            round.stale.len(),
            QUIET_WAIT_NS / 1_000_000
        );
    }
    if dropped.is_empty() {
        return;
    }
    let names: Vec<String> = dropped.iter().map(|&id| method_label(ctx, id)).collect();
    log::info!(
        "adaptive: removed the probes of {} methods called at least {MIN_CALLS} times and \
         shorter than their probes (found in {:.1} ms): {}",
        dropped.len(),
        round.looked.as_secs_f64() * 1e3,
        names.join(", ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_is_retransformed_when_its_dropped_methods_gates_would_cost_enough() {
        let class_of = |id: u32| Some(if id < 10 { "A" } else { "B" }.to_owned());
        let inside = |ns| InsideRoots { ns, calls: 1 };
        // 980 ms inside roots without the probes: 2% of it with the gates is 8 M calls at
        // 2.5 ns (20 ms). A: 5 M + 3 M calls, B: 7.9 M.
        let short = [(3, 5_000_000), (1, 3_000_000), (10, 7_900_000)];
        let hot = costly_gates(&short, inside(980_000_000), class_of);
        assert_eq!(hot.len(), 1);
        let (class, share, ids) = &hot[0];
        assert_eq!(class, "A");
        assert!((share - 0.02).abs() < 1e-12, "{share}");
        assert_eq!(ids, &[1, 3]);
        // Twice the time inside roots: A's gates are ~1% of it.
        assert!(costly_gates(&short, inside(1_960_000_000), class_of).is_empty());
        // The probes cost all the time measured: the gates would be all that is left.
        let all = costly_gates(&short, inside(0), class_of);
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(|&(_, share, _)| share == 1.0));
        // No root call has ended: nothing to weigh the calls against.
        let none = InsideRoots { ns: 0, calls: 0 };
        assert!(costly_gates(&short, none, class_of).is_empty());
        // A method whose class is unknown counts for none.
        assert!(costly_gates(&short, inside(980_000_000), |_| None).is_empty());
    }

    #[test]
    fn a_drop_not_quiet_within_the_wait_is_stale() {
        let dropping = [(1, 0), (2, 0), (3, 500_000_000)];
        // 2 is quiet; 3 was dropped half a second later.
        assert_eq!(stale_drops(&dropping, &[2], QUIET_WAIT_NS), [1]);
        assert!(stale_drops(&dropping, &[2], QUIET_WAIT_NS - 1).is_empty());
        assert_eq!(stale_drops(&dropping, &[], 2 * QUIET_WAIT_NS), [1, 2, 3]);
    }
}
