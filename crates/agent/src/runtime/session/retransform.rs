//! Retransformation: of the classes a session queued, in batches; a class the JVM cannot
//! take (not linked, in error state) is left to its ClassPrepare or named, and a failing batch is
//! halved until the failing classes are found.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use ferrofluid_jvmti::{sys, Class, JniEnv, Jvmti, WeakGlobalClass};
use ferrofluid_profile::ClassPhase;

use super::classes::{status_of, CACHE};
use super::{lock, record_failed, ClassKey, IN_ERROR, SESSIONS};

/// Classes retransformed per JVMTI call.
pub(super) const RETRANSFORM_BATCH: usize = 100;

/// Retransforms the classes queued by the session until nothing new is queued. A queued class
/// that is not prepared yet waits for its ClassPrepare (`Session::unprepared`); one that cannot
/// be retransformed is listed ([`Sessions::failed`]) and the others proceed.
pub(super) fn flush_pending(jvmti: Jvmti, env: &JniEnv<'_>) {
    for _ in 0..64 {
        let pending: Vec<ClassKey> = match lock(&SESSIONS.current).as_mut() {
            Some(s) => {
                // Under the session lock, so that `class_prepared` (which remembers the class
                // first, then looks here) cannot miss a class set aside now.
                let classes = lock(&CACHE.classes);
                let (ready, unprepared): (Vec<ClassKey>, Vec<ClassKey>) =
                    std::mem::take(&mut s.pending)
                        .into_iter()
                        .partition(|k| classes.as_ref().is_some_and(|c| c.refs.contains_key(k)));
                s.unprepared.extend(unprepared);
                ready
            }
            None => return,
        };
        if pending.is_empty() {
            break;
        }
        let refused = retransform(jvmti, env, &pending);
        set_aside(jvmti, env, &refused.unlinked);
        for key in refused.in_error {
            record_failed(&key.1, ClassPhase::Instrument, IN_ERROR.to_owned(), true);
        }
        for (key, e) in refused.failed {
            record_failed(&key.1, ClassPhase::Instrument, e, false);
        }
    }
}

/// Classes [`retransform`] found not linked wait for their ClassPrepare
/// (`Session::unprepared`). Their status is read again under the session lock, which
/// `class_prepared` takes after the JVM marks a class linked: one linked since it was found
/// unlinked (whose ClassPrepare may have come and gone) is queued again instead.
pub(super) fn set_aside(jvmti: Jvmti, env: &JniEnv<'_>, keys: &[ClassKey]) {
    if keys.is_empty() {
        return;
    }
    let mut session = lock(&SESSIONS.current);
    let Some(s) = session.as_mut() else {
        return;
    };
    for key in keys {
        if status_of(jvmti, env, key).is_some_and(|st| st & sys::JVMTI_CLASS_STATUS_PREPARED != 0) {
            s.pending.insert(key.clone());
        } else {
            s.unprepared.insert(key.clone());
        }
    }
}

/// What [`retransform`] left as it was.
#[derive(Debug, Default)]
pub struct Refused {
    /// Classes not linked: RetransformClasses would have the JVM link them first, which fails
    /// again for a class whose linking failed (`JVMTI_ERROR_INVALID_CLASS`, the whole call with
    /// it) and links any other before the program does. None of their code can run before they
    /// link, and their ClassPrepare says when they do.
    pub unlinked: Vec<ClassKey>,
    /// Classes in error state (a static initialiser that failed), which RetransformClasses
    /// refuses (`JVMTI_ERROR_INVALID_CLASS`, the whole call with them).
    pub in_error: Vec<ClassKey>,
    /// Classes whose retransformation failed, with the error.
    pub failed: Vec<(ClassKey, String)>,
}

/// Retransforms `keys` in batches, except the classes the JVM cannot take ([`Refused`]); a
/// failing batch is retried without the classes that fail ([`isolate_failures`]), so one bad
/// class names itself and holds back none of the others.
pub fn retransform(jvmti: Jvmti, env: &JniEnv<'_>, keys: &[ClassKey]) -> Refused {
    let mut refused = Refused::default();
    for chunk in keys.chunks(RETRANSFORM_BATCH) {
        let weak: Vec<(ClassKey, Arc<WeakGlobalClass>)> = {
            let classes = lock(&CACHE.classes);
            let refs = classes.as_ref().map(|c| &c.refs);
            chunk
                .iter()
                .filter_map(|k| match refs.and_then(|r| r.get(k)) {
                    Some(w) => Some((k.clone(), Arc::clone(w))),
                    None => {
                        // Never prepared (a class instrumented as it loaded, whose linking
                        // has not happened or failed): no reference to it yet.
                        refused.unlinked.push(k.clone());
                        None
                    }
                })
                .collect()
        };
        let mut locals = Vec::new();
        for (key, w) in weak {
            if let Some(class) = w.upgrade(env) {
                // Unknown status: tried, and isolated if it fails.
                let status = jvmti
                    .class_status(class)
                    .map_or(sys::JVMTI_CLASS_STATUS_PREPARED, |st| st as u32);
                if status & sys::JVMTI_CLASS_STATUS_ERROR != 0 {
                    refused.in_error.push(key);
                } else if status & sys::JVMTI_CLASS_STATUS_PREPARED == 0 {
                    refused.unlinked.push(key);
                } else {
                    locals.push((key, class));
                    continue;
                }
                env.delete_local_ref(class.as_object());
            }
        }
        if locals.is_empty() {
            continue;
        }
        let mut attempt = |part: &[(ClassKey, Class<'_>)]| {
            let classes: Vec<Class<'_>> = part.iter().map(|(_, c)| *c).collect();
            let started = std::time::Instant::now();
            let result = jvmti.retransform_classes(&classes);
            let took = started.elapsed();
            log::info!(
                "retransformed {} classes in {:.1} ms",
                classes.len(),
                took.as_secs_f64() * 1e3
            );
            CACHE
                .retransform_ns
                .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
            CACHE.retransform_calls.fetch_add(1, Ordering::Relaxed);
            CACHE
                .retransform_classes
                .fetch_add(classes.len() as u64, Ordering::Relaxed);
            result.map_err(|e| e.to_string())
        };
        if let Err(e) = attempt(&locals) {
            log::warn!(
                "retransforming {} classes: {e}; retrying without the failing ones",
                locals.len()
            );
            for (i, e) in isolate_failures(&locals, e, &mut attempt) {
                refused.failed.push((locals[i].0.clone(), e));
            }
        }
        for (_, class) in locals {
            env.delete_local_ref(class.as_object());
        }
    }
    refused
}

/// The items of `items`, whose batch failed with `error`, that fail on their own, with their
/// errors, in order; every other item ends up in a batch that succeeded. Found by halving: both
/// halves are tried, and a failing half is halved again, so that one bad class among n costs
/// about 2·log2(n) retransformations instead of n.
pub(crate) fn isolate_failures<T, E>(
    items: &[T],
    error: E,
    mut attempt: impl FnMut(&[T]) -> Result<(), E>,
) -> Vec<(usize, E)> {
    let mut failing = Vec::new();
    let mut parts = vec![(0, items.len(), error)];
    while let Some((start, end, error)) = parts.pop() {
        if end - start <= 1 {
            if end > start {
                failing.push((start, error));
            }
            continue;
        }
        let middle = start + (end - start) / 2;
        for (a, b) in [(start, middle), (middle, end)] {
            if let Err(e) = attempt(&items[a..b]) {
                parts.push((a, b, e));
            }
        }
    }
    failing.sort_by_key(|(i, _)| *i);
    failing
}

#[cfg(test)]
mod tests {
    use super::isolate_failures;

    /// `isolate_failures` over 0..n where the items of `bad` fail whatever batch they are in:
    /// the failing items with their errors, and how many attempts it took.
    fn isolate(n: usize, bad: &[usize]) -> (Vec<(usize, String)>, usize, Vec<usize>) {
        let items: Vec<usize> = (0..n).collect();
        let mut attempts = 0;
        let mut done = Vec::new();
        let failing = isolate_failures(&items, "whole batch".to_owned(), |part| {
            attempts += 1;
            match part.iter().find(|i| bad.contains(i)) {
                Some(i) => Err(format!("class {i}")),
                None => {
                    done.extend_from_slice(part);
                    Ok(())
                }
            }
        });
        done.sort_unstable();
        (failing, attempts, done)
    }

    #[test]
    fn one_bad_class_in_a_batch_costs_a_few_halvings_and_holds_back_no_other() {
        let (failing, attempts, done) = isolate(100, &[37]);
        assert_eq!(failing, [(37, "class 37".to_owned())]);
        // 2 per halving, 6 of them down to class 37 (100, 50, 25, 13, 6, 3, then 1 class);
        // retrying class by class would take 100.
        assert_eq!(attempts, 12);
        let others: Vec<usize> = (0..100).filter(|&i| i != 37).collect();
        assert_eq!(done, others);
    }

    #[test]
    fn every_bad_class_is_named_in_order_and_the_rest_proceed() {
        let (failing, _, done) = isolate(10, &[9, 0, 4]);
        let names: Vec<usize> = failing.iter().map(|(i, _)| *i).collect();
        assert_eq!(names, [0, 4, 9]);
        assert_eq!(done, [1, 2, 3, 5, 6, 7, 8]);
        // A batch of one failing class gets the error of the batch itself.
        let (failing, attempts, _) = isolate(1, &[0]);
        assert_eq!(
            (failing, attempts),
            (vec![(0, "whole batch".to_owned())], 0)
        );
        // A batch that failed while its halves succeed (a transient failure): none is named.
        let (failing, attempts, done) = isolate(6, &[]);
        assert_eq!((failing.len(), attempts, done.len()), (0, 2, 6));
    }
}
