//! Revelation on the thread that needs it: a method's first invocation, a deferred site, a
//! receiver class at a receiver site, reflection, method handles and JNI calls; the planner
//! chooses, the classes are retransformed before the call proceeds.

use std::sync::atomic::Ordering;

use ferrofluid_jvmti::{Class, JniEnv, Jvmti};
use ferrofluid_subgraph::LoaderId;

use crate::probe::flags;
use crate::runtime::jvm;

use super::classes::class_key;
use super::queue::{enqueue, Queued};
use super::retransform::flush_pending;
use super::{lock, ClassKey, Session, SESSIONS};

/// Reveals method `name` `descriptor` of `class`, about to be called through reflection, a
/// method handle or native code, and retransforms what the planner chose, before the call
/// proceeds (on the calling thread, like [`first_invocation`]).
pub fn reveal(jvmti: Jvmti, env: &JniEnv<'_>, class: Class<'_>, name: &str, descriptor: &str) {
    let Some(key) = class_key(jvmti, env, class) else {
        return;
    };
    let _reveal = lock(&SESSIONS.reveal);
    plan_and_retransform(jvmti, env, "revelation", |s| {
        match s.planner.reveal(key.0, &key.1, name, descriptor) {
            Ok(batch) => {
                if !batch.is_empty() {
                    log::info!(
                        "revealed {}.{name}{descriptor}: {} methods",
                        key.1,
                        batch.method_count()
                    );
                }
                s.apply(batch, None);
            }
            Err(e) => log::debug!("reveal: {e}"),
        }
        true
    });
}

/// Reflection may initialise a class named `class` (internal name) of some loader now
/// (`Class.forName`): the initialisers of those waiting for it are instrumented before it
/// proceeds.
pub fn initializing_by_name(jvmti: Jvmti, env: &JniEnv<'_>, class: &str) {
    let _reveal = lock(&SESSIONS.reveal);
    plan_and_retransform(jvmti, env, "initialisation by name", |s| {
        let batch = s.planner.initializing_by_name(class);
        if !batch.is_empty() {
            log::info!(
                "initialising {class} by name: {} methods",
                batch.method_count()
            );
        }
        s.apply(batch, None);
        true
    });
}

/// Runs `plan` on the session, then retransforms the classes it queued, on the calling thread,
/// before the call that needed them proceeds. Callers hold [`Sessions::reveal`]. `plan` returns false
/// when the request is not the current session's; so does this function, also without a session.
pub(super) fn plan_and_retransform(
    jvmti: Jvmti,
    env: &JniEnv<'_>,
    what: &str,
    plan: impl FnOnce(&mut Session) -> bool,
) -> bool {
    let queued = {
        let mut session = lock(&SESSIONS.current);
        let Some(s) = session.as_mut() else {
            return false;
        };
        if !plan(s) {
            return false;
        }
        !s.pending.is_empty()
    };
    if queued {
        log::debug!("{what}: retransforming");
        flush_pending(jvmti, env);
    }
    true
}

/// The first invocation of global method `id` (lazy revelation), on the invoking thread.
pub fn first_invocation(env: Option<&JniEnv<'_>>, id: u32) {
    let Some(jvmti) = jvm::jvmti() else {
        return;
    };
    if SESSIONS.asynchronous.load(Ordering::Relaxed) {
        if flags::get(id) & flags::INVOKED != 0 {
            return;
        }
        flags::set(id, flags::INVOKED | flags::PENDING);
        if enqueue(Queued::Invocation(id)) {
            return;
        }
        flags::clear_bits(id, flags::INVOKED | flags::PENDING);
    }
    let _reveal = lock(&SESSIONS.reveal);
    if flags::get(id) & flags::INVOKED != 0 {
        return;
    }
    let Some(env) = env else {
        return;
    };
    let planned = plan_and_retransform(jvmti, env, "lazy revelation", |s| {
        if id < s.base {
            return false;
        }
        match s.planner.first_invocation(id - s.base) {
            Ok(batch) => s.apply(batch, None),
            Err(e) => log::warn!("first invocation of {id}: {e}"),
        }
        true
    });
    if !planned {
        return;
    }
    flags::set(id, flags::INVOKED);
}

/// Site `site` was reached with no receiver (a deferred site) on this thread, inside a root's
/// extent: its calls' targets are instrumented before they proceed, then the site is flagged
/// (`flags::SITES`, and `Hooks.fired` so that `Hooks.site` returns in Java from then on). False
/// when the site is not the current session's (or the planner failed): it stays unflagged.
pub fn site_reached(jvmti: Jvmti, env: &JniEnv<'_>, site: u32) -> bool {
    if SESSIONS.asynchronous.load(Ordering::Relaxed) && flags::SITES.get(site) & flags::FIRED == 0 {
        // Flagged first, so that other threads pass it in Java while the reveal thread works.
        flags::SITES.set(site, flags::FIRED);
        crate::probe::site_flags::mark(env, site);
        if enqueue(Queued::Site(site)) {
            return true;
        }
        flags::SITES.clear(site);
    }
    let _reveal = lock(&SESSIONS.reveal);
    if flags::SITES.get(site) & flags::FIRED != 0 {
        // Another thread revealed it while this one waited for the lock.
        return true;
    }
    let mut revealed = false;
    plan_and_retransform(jvmti, env, "deferred site revelation", |s| {
        let Some(local) = site.checked_sub(s.site_base) else {
            return false;
        };
        match s.planner.site_reached(local) {
            Ok(batch) => {
                s.apply(batch, None);
                revealed = true;
            }
            Err(e) => log::warn!("deferred site {site}: {e}"),
        }
        true
    });
    if revealed {
        // Only now, with every class retransformed: a thread that sees the flag skips the hook.
        flags::SITES.set(site, flags::FIRED);
        crate::probe::site_flags::mark(env, site);
    }
    revealed
}

/// The name and descriptor of the method receiver site `site` calls, if it is one of the current
/// session's receiver sites.
pub fn receiver_site_call(site: u32) -> Option<(String, String)> {
    let session = lock(&SESSIONS.current);
    let s = session.as_ref()?;
    let (name, descriptor) = s
        .planner
        .receiver_site_call(site.checked_sub(s.site_base)?)?;
    Some((name.to_owned(), descriptor.to_owned()))
}

/// Whether `site` is one of the current session's receiver sites that invoke a method handle.
pub fn is_handle_site(site: u32) -> bool {
    let session = lock(&SESSIONS.current);
    session.as_ref().is_some_and(|s| {
        site.checked_sub(s.site_base)
            .is_some_and(|local| s.planner.is_handle_site(local))
    })
}

/// A receiver of a hidden class of loader `loader` reached receiver site `site` on this thread,
/// inside a root's extent, and the method it runs there makes `calls` (see `crate::runtime::receiver`):
/// their targets are instrumented before the call proceeds.
pub fn hidden_receiver_seen(
    jvmti: Jvmti,
    env: &JniEnv<'_>,
    site: u32,
    loader: LoaderId,
    calls: &[ferrofluid_subgraph::model::CallSite<'_>],
) {
    let _reveal = lock(&SESSIONS.reveal);
    plan_and_retransform(jvmti, env, "hidden receiver revelation", |s| {
        let Some(local) = site.checked_sub(s.site_base) else {
            return false;
        };
        match s.planner.hidden_receiver_seen(local, loader, calls) {
            Ok(batch) => s.apply(batch, None),
            Err(e) => log::warn!("receiver site {site}: {e}"),
        }
        true
    });
}

/// A receiver of class `key` reached receiver site `site` on this thread, inside a root's extent:
/// the method it runs there is instrumented before the call proceeds (see `crate::runtime::receiver`).
pub fn receiver_seen(jvmti: Jvmti, env: &JniEnv<'_>, site: u32, key: &ClassKey) {
    if SESSIONS.asynchronous.load(Ordering::Relaxed) && enqueue(Queued::Receiver(site, key.clone()))
    {
        return;
    }
    let _reveal = lock(&SESSIONS.reveal);
    plan_and_retransform(jvmti, env, "receiver revelation", |s| {
        let Some(local) = site.checked_sub(s.site_base) else {
            return false;
        };
        match s.planner.receiver_seen(local, key.0, &key.1) {
            Ok(batch) => s.apply(batch, None),
            Err(e) => log::warn!("receiver site {site}: {e}"),
        }
        true
    });
}
