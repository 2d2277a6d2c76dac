//! `adaptive` with sampled timing: a cost budget for the probes. Sampled timing reads no clock
//! per call, so what a probed call costs is the context update inlined into the method (13-28
//! ns on a busy server's hot path, docs/decisions/0057-exact-calls-sampled-time.md), against a
//! few ns of work for the accessors and small lookups that make most calls on such a path. Now
//! and then the session weighs the calls counted since its last look against the CPU time the
//! sampler charged inside roots over the same span, and removes the probes of the most-called
//! methods until the calls left are estimated to cost at most [`SHARE`] of that time
//! (decision 0066). Their classes are retransformed without those probes. Their later calls are not counted and their time is their callers' own, as with `adaptive`
//! under per-call timing; the profile marks them. A JDK class the JIT has inlined into much of
//! the compiled code keeps its probes: retransforming it would discard every compiled method
//! holding it, at a cost far above the probes' (decision 0068); the budget drops other methods
//! in their place.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::engine::Context;

/// What one probed call is taken to cost: twice the upper end of what the context update was
/// measured to cost per call in compiled code on the H2 server (decision 0057). Code just
/// retransformed runs interpreted or less optimised for a while, and a program the probes slow
/// down makes fewer calls per CPU second: a lower figure let a server at a sixth of its
/// throughput look within budget (decision 0066).
pub const PROBE_NS: u64 = 50;

/// The share of the CPU time inside roots the remaining probes may cost.
pub const SHARE: f64 = 0.05;

/// Calls a method must have made since the last look for its probes to go: a method called
/// this seldom costs little, and its count is worth more than the time.
pub const MIN_CALLS: u64 = 10_000;

/// The share of the compiled methods a JDK class must be inlined into (or be the class of) for
/// the budget to keep its probes. On the live-server benchmark's Jetty, one drop of
/// `Integer.<init>` (a class under the census's 2%) deoptimised enough of the hot path to keep
/// the server at 16-18% of its throughput for the rest of the attach.
pub const HOLD_SHARE: f64 = 0.005;

/// The first look after the recording starts, and the next one after a look that dropped
/// something: while over budget, the program pays for every probe left.
const FIRST: Duration = Duration::from_millis(500);
/// After a look that dropped nothing the next one waits twice as long, up to this (a look
/// copies every context's tree).
const LONGEST: Duration = Duration::from_secs(8);

/// Of `calls` (method id, calls since the last look) of methods keeping their probes, those
/// whose probes go so that the rest cost at most [`SHARE`] of `busy_ns` at [`PROBE_NS`] a
/// call: the most-called first, none called fewer than [`MIN_CALLS`] times, none that `keep`
/// names (their calls still cost). Ids in the order dropped.
pub fn over_budget(calls: &[(u32, u64)], busy_ns: u64, keep: impl Fn(u32) -> bool) -> Vec<u32> {
    let allowed = (busy_ns as f64 * SHARE) as u64;
    let mut cost: u64 = calls
        .iter()
        .map(|&(_, n)| n.saturating_mul(PROBE_NS))
        .sum();
    let mut by_calls: Vec<(u32, u64)> = calls.to_vec();
    // Ties by id: the same counts drop the same methods.
    by_calls.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut drop = Vec::new();
    for (id, n) in by_calls {
        if cost <= allowed || n < MIN_CALLS {
            break;
        }
        if keep(id) {
            continue;
        }
        cost -= n.saturating_mul(PROBE_NS);
        drop.push(id);
    }
    drop
}

/// What the session saw at its last look, and when it looks next.
pub struct Budget {
    next: Instant,
    backoff: Duration,
    /// CPU time charged inside roots, and calls per method, at the last look.
    busy_ns: u64,
    calls: HashMap<u32, u64>,
    /// Methods of classes inlined into much of the compiled code: never dropped.
    held: HashSet<u32>,
}

impl Budget {
    pub fn new() -> Budget {
        Budget {
            next: Instant::now() + FIRST,
            backoff: FIRST,
            busy_ns: 0,
            calls: HashMap::new(),
            held: HashSet::new(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether it is time to look.
pub fn due(budget: &Mutex<Option<Budget>>) -> bool {
    lock(budget)
        .as_ref()
        .is_some_and(|b| Instant::now() >= b.next)
}

/// A look: `calls` the calls per method counted so far, `busy_ns` the CPU time charged inside
/// roots so far. Drops the probes of the methods over budget through the runtime (`ctx`),
/// logs them and schedules the next look. A recording restarted since the last look (less
/// time than then) starts the count over.
pub fn look(
    budget: &Mutex<Option<Budget>>,
    ctx: &dyn Context,
    calls: HashMap<u32, u64>,
    busy_ns: u64,
) {
    let (since, busy, mut held) = {
        let mut guard = lock(budget);
        let Some(b) = guard.as_mut() else {
            return;
        };
        if busy_ns < b.busy_ns {
            b.calls.clear();
            b.busy_ns = 0;
        }
        let dropped = ctx.dropped_ids();
        let since: Vec<(u32, u64)> = calls
            .iter()
            .filter(|(id, _)| !dropped.contains(id))
            .map(|(&id, &n)| (id, n.saturating_sub(b.calls.get(&id).copied().unwrap_or(0))))
            .filter(|&(_, n)| n > 0)
            .collect();
        let busy = busy_ns - b.busy_ns;
        b.calls = calls;
        b.busy_ns = busy_ns;
        b.backoff = (b.backoff * 2).min(LONGEST);
        b.next = Instant::now() + b.backoff;
        (since, busy, b.held.clone())
    };
    if busy == 0 {
        return;
    }
    let mut drop = over_budget(&since, busy, |id| held.contains(&id));
    if drop.is_empty() {
        return;
    }
    // Methods of classes inlined all over the compiled code keep their probes; others go in
    // their place (one census of the code cache per look that drops something).
    let inlined = ctx.jdk_classes_inlined(HOLD_SHARE).unwrap_or_default();
    let mut newly: Vec<(u32, usize)> = Vec::new();
    loop {
        let more: Vec<(u32, usize)> = drop
            .iter()
            .filter_map(|&id| {
                let (class, _, _) = ctx.method_name(id)?;
                inlined.get(&class).map(|&n| (id, n))
            })
            .collect();
        if more.is_empty() {
            break;
        }
        held.extend(more.iter().map(|&(id, _)| id));
        newly.extend(more);
        drop = over_budget(&since, busy, |id| held.contains(&id));
    }
    if !newly.is_empty() {
        if let Some(b) = lock(budget).as_mut() {
            b.held.clone_from(&held);
        }
        let names: Vec<String> = newly
            .iter()
            .take(20)
            .map(|&(id, n)| format!("{} ({n})", super::adaptive::method_label(ctx, id)))
            .collect();
        log::info!(
            "adaptive: {} methods keep their probes: their classes are inlined into (or are \
             the classes of) that many compiled methods, which retransforming them would \
             discard: {}",
            newly.len(),
            names.join(", ")
        );
    }
    if drop.is_empty() {
        return;
    }
    let probed: u64 = since.iter().map(|&(_, n)| n).sum();
    // Retransformed without them: a gate left in Java would cost most of what the probe does.
    let dropped = ctx.drop_probes(&drop, &[], &drop);
    if let Some(b) = lock(budget).as_mut() {
        b.backoff = FIRST;
        b.next = Instant::now() + FIRST;
    }
    let names: Vec<String> = dropped
        .iter()
        .take(20)
        .map(|&id| super::adaptive::method_label(ctx, id))
        .collect();
    log::info!(
        "adaptive: {probed} probed calls in {:.1} ms of CPU time inside roots would cost ~{:.0}%: \
         removed the probes of {} methods (the most called: {})",
        busy as f64 / 1e6,
        probed as f64 * PROBE_NS as f64 * 100.0 / busy as f64,
        dropped.len(),
        names.join(", ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_called_methods_go_until_the_rest_fit_the_budget() {
        // 2 s busy: 5% is 100 ms, 2 M calls at 50 ns.
        let calls = [(1, 1_000_000), (2, 3_000_000), (3, 1_500_000), (4, 400_000)];
        // 5.9 M calls: 2 (3 M) then 3 (1.5 M) leave 1.4 M.
        assert_eq!(over_budget(&calls, 2_000_000_000, |_| false), [2, 3]);
        // Within the budget: nothing goes.
        assert!(over_budget(&calls, 10_000_000_000, |_| false).is_empty());
        // Methods called fewer than MIN_CALLS times keep their probes, over budget or not.
        let few = [(7, MIN_CALLS - 1), (8, MIN_CALLS - 1)];
        assert!(over_budget(&few, 1_000, |_| false).is_empty());
        // Equal counts drop by id.
        assert_eq!(
            over_budget(&[(9, 50_000), (5, 50_000)], 1_000_000, |_| false),
            [5, 9]
        );
    }

    #[test]
    fn methods_kept_still_cost_and_others_go_in_their_place() {
        let calls = [(1, 1_000_000), (2, 3_000_000), (3, 1_500_000), (4, 400_000)];
        // 2 keeps its probes (3 M calls at 50 ns): 3, 1 and 4 go, and the rest still costs
        // more than the budget.
        assert_eq!(over_budget(&calls, 2_000_000_000, |id| id == 2), [3, 1, 4]);
        // Kept or not, a method within the budget does not go.
        assert_eq!(over_budget(&calls, 5_000_000_000, |id| id == 2), [3]);
    }
}
