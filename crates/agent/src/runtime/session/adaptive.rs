//! `adaptive`: dropping the probes of short, frequent methods, in Java where the hooks class
//! allows it, else by retransforming their classes.

use std::sync::atomic::Ordering;

use ferrofluid_jvmti::{JniEnv, Jvmti};

use crate::probe::flags;
use crate::probe::thread::SWITCHES;

use super::reveal::plan_and_retransform;
use super::{lock, SESSIONS};

/// Drops the probes of the methods with global ids `ids` (`adaptive`: called often, shorter
/// than their probes); roots keep theirs. Returns the ids dropped.
///
/// In Java, without retransforming: a retransformation sends the compiled code of the class,
/// and of every method that inlined one of its methods, back to the interpreter, which on real
/// programs cost more than the probes saved (docs/decisions/0013-adaptive-probe-removal.md). The method's
/// native flag [`flags::DROPPED`] is set first, so that no entry is recorded from then on, then
/// `Hooks.dropped[id] = 1`, so that entries return in Java. Its exits still reach the agent,
/// which records those of invocations entered before, until [`quiet_probes`] ends them in Java
/// too. Its probes go for good when its class is retransformed for another reason (the planner
/// no longer selects it). Retransforms instead where [`drops_in_java`] is false.
pub fn drop_probes(jvmti: Jvmti, env: &JniEnv<'_>, ids: &[u32]) -> Vec<u32> {
    let dropped: Vec<u32> = {
        let mut session = lock(&SESSIONS.current);
        let Some(s) = session.as_mut() else {
            return Vec::new();
        };
        ids.iter()
            .copied()
            .filter(|&id| {
                id.checked_sub(s.base)
                    .and_then(|pid| s.planner.drop_probes(pid))
                    .is_some()
            })
            .collect()
    };
    if !drops_in_java() {
        // Calls already running finish in the old code and still record their exits, so every
        // recorded frame closes.
        retransform_dropped(jvmti, env, &dropped);
        return dropped;
    }
    for &id in &dropped {
        flags::set(id, flags::DROPPED);
    }
    std::sync::atomic::fence(Ordering::SeqCst);
    for &id in &dropped {
        crate::probe::site_flags::drop_probes(env, id, 1);
    }
    dropped
}

/// Whether [`drop_probes`] drops in Java. Not with a hooks class from an older agent (no
/// `dropped`), and not with no root: there every instrumented frame counts in the thread's
/// depth (`crate::probe::thread::SWITCHES.all_threads`), which a dropped method's entry would no longer raise while the
/// exits of its calls, still reaching the agent until the drop is quiet, would lower it, and
/// the thread, its depth run down to zero, would stop recording its exits.
pub fn drops_in_java() -> bool {
    crate::probe::site_flags::can_drop() && !SWITCHES.all_threads.load(Ordering::SeqCst)
}

/// Methods dropped by [`drop_probes`] whose exits may now end in Java (`Hooks.dropped[id] = 2`):
/// no invocation entered before the drop can still be running (`collector::quiet_drops`).
pub fn quiet_probes(env: &JniEnv<'_>, ids: &[u32]) {
    for &id in ids {
        crate::probe::site_flags::drop_probes(env, id, 2);
    }
}

/// Retransforms the classes of dropped methods `ids` (global ids, taken out of the planner's
/// selection by [`drop_probes`]), so that their probes go from the bytes, gates included: a
/// method dropped in Java still runs them, a few ns per call, which for a busy class outweighs
/// the deoptimisation a retransformation costs (`adaptive::costly_gates`). Returns how many
/// classes.
pub fn retransform_dropped(jvmti: Jvmti, env: &JniEnv<'_>, ids: &[u32]) -> usize {
    let _reveal = lock(&SESSIONS.reveal);
    let mut classes = 0;
    plan_and_retransform(jvmti, env, "adaptive", |s| {
        for &id in ids {
            let Some(m) = id.checked_sub(s.base).and_then(|pid| s.planner.method(pid)) else {
                continue;
            };
            classes += usize::from(s.pending.insert((m.loader, m.class.to_owned())));
        }
        true
    });
    classes
}
