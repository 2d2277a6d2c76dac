//! Receiver sites (see `ferrofluid_subgraph`'s planner): a virtual call that class-hierarchy
//! analysis cannot narrow passes its receiver to `Hooks.receiver` just before the call. Inside a
//! root's extent, the first time a thread meets a receiver class at a site, the planner chooses
//! the method that class runs there and the agent instruments it before the call proceeds.
//!
//! A deferred site (`ferrofluid_subgraph`'s deferred sites: calls not on their method's entry
//! straight line) comes through `Hooks.site(int)`, whose Java body calls `receiver(null, site)`
//! only while some thread is inside a root and the site has not fired: its calls are revealed the
//! first time any thread inside a root reaches it, after which global per-site flags (here and in
//! `Hooks.fired`, see `site_flags`) let every thread through.
//!
//! The per-thread fast path costs `GetObjectClass` and `GetTag`: every receiver class the
//! agent has looked at carries a JVMTI tag, so a (site, class) pair the thread has seen is a
//! hash-set lookup. A miss takes the slow path once per thread: the class's name and loader,
//! then the planner under the revelation lock, which another thread revealing the same target
//! waits on, so no thread proceeds into an uninstrumented callee.
//!
//! Two receivers are read further. A hidden class (a lambda proxy made outside every root), which
//! the planner never saw: the method the site calls is read from the JVM (its bytecode and
//! constant pool) and what it calls is revealed. A method handle at an `invokeExact`/`invoke`
//! site: what it runs is revealed at each invocation not seen yet, as the class says nothing
//! ([`crate::runtime::handles`]).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use ferrofluid_jvmti::{Class, JniEnv, Jvmti, Object};
use ferrofluid_subgraph::model::{calls_in_code, CallSite};

use crate::runtime::session::{self, ClassKey};

/// (site, class tag) pairs a thread has already seen, at most this many (then forgotten: a
/// repeated slow path costs time, never correctness).
const SEEN_PER_THREAD: usize = 4096;

thread_local! {
    static SEEN: RefCell<HashSet<(u32, i64)>> = RefCell::new(HashSet::new());
    /// Receiver sites that invoke method handles.
    static HANDLE_SITES: RefCell<HashSet<u32>> = RefCell::new(HashSet::new());
}

/// The receiver classes tagged so far.
#[derive(Default)]
struct Tagged {
    /// The last tag given (tags count from 1; 0 means untagged).
    last: i64,
    /// Tag -> the class, as the planner names it.
    classes: HashMap<i64, ClassKey>,
}

// Process-wide: the receiver natives, JVM natives without user data, look classes up by tag
// (tags outlive sessions, as the JVM keeps them).
static TAGGED: Mutex<Option<Tagged>> = Mutex::new(None);

/// A receiver reached site `site`, on a thread inside a root's extent.
pub fn reached_by(jni: &JniEnv<'_>, receiver: Object<'_>, site: u32) {
    let Some(jvmti) = crate::runtime::jvm::jvmti() else {
        return;
    };
    let Ok(class) = jni.object_class(receiver) else {
        return;
    };
    let tag = jvmti.tag(class.as_object()).unwrap_or(0);
    let known = tag != 0 && SEEN.with(|s| s.borrow().contains(&(site, tag)));
    if !known {
        crate::probe::thread::as_pause(jni.as_raw(), || {
            reveal(jvmti, jni, receiver, class, tag, site)
        });
    }
    jni.delete_local_ref(class.as_object());
}

/// Site `site` was reached with no receiver (a deferred site), on a thread inside a root's
/// extent, and not revealed yet: its calls' targets are instrumented before they proceed, then
/// the site is marked so that no thread asks again.
#[cold]
pub fn reached_without_receiver_by(jni: &JniEnv<'_>, site: u32) {
    let Some(jvmti) = crate::runtime::jvm::jvmti() else {
        return;
    };
    crate::probe::thread::as_pause(jni.as_raw(), || {
        session::site_reached(jvmti, jni, site);
    });
}

#[cold]
fn reveal(
    jvmti: Jvmti,
    jni: &JniEnv<'_>,
    receiver: Object<'_>,
    class: Class<'_>,
    tag: i64,
    site: u32,
) {
    if is_handle_site(site) {
        // What runs depends on the handle, not its class: no per-class memory (nor the lock
        // that names tagged classes), every invocation inside a root comes here (a tag on the
        // handle says it is done).
        crate::runtime::handles::invoked(jvmti, jni, receiver);
        return;
    }
    let Some((tag, key)) = tagged(jvmti, jni, class, tag) else {
        return;
    };
    let hidden = is_hidden(&key.1)
        .then(|| session::receiver_site_call(site))
        .flatten()
        .and_then(|(name, descriptor)| calls_of(jvmti, class, &name, &descriptor));
    match hidden {
        Some(calls) => session::hidden_receiver_seen(jvmti, jni, site, key.0, &calls),
        None => session::receiver_seen(jvmti, jni, site, &key),
    }
    // Its callee is instrumented now: the site's Java body may answer for this class.
    crate::probe::site_flags::remember_receiver(jni, site, class);
    SEEN.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() >= SEEN_PER_THREAD {
            s.clear();
        }
        s.insert((site, tag));
    });
}

/// Whether `site` invokes a method handle (`MethodHandle.invokeExact`/`invoke`), remembered per
/// thread once asked.
fn is_handle_site(site: u32) -> bool {
    if HANDLE_SITES.with(|h| h.borrow().contains(&site)) {
        return true;
    }
    let handle = session::is_handle_site(site);
    if handle {
        HANDLE_SITES.with(|h| h.borrow_mut().insert(site));
    }
    handle
}

/// Whether a class name (from JVMTI's signature) is a hidden class's: HotSpot names one like
/// `Lam$$Lambda$14.0x0000000800c03000`, and a dot never appears in a class file's internal name.
fn is_hidden(name: &str) -> bool {
    name.contains('.')
}

/// The calls `class`'s method `name` `descriptor` makes, read from the running JVM (a hidden
/// class has no class-file bytes the agent saw). `None` if the method has no bytecode here (then
/// it is inherited: the class's planner-known supertypes decide) or JVMTI cannot tell.
fn calls_of(
    jvmti: Jvmti,
    class: Class<'_>,
    name: &str,
    descriptor: &str,
) -> Option<Vec<CallSite<'static>>> {
    let methods = jvmti.class_methods(class).ok()?;
    let method = methods.iter().copied().find(|&m| {
        jvmti
            .method_name(m)
            .is_ok_and(|n| n.name == name && n.signature == descriptor)
    })?;
    let code = jvmti.bytecodes(method).ok()?;
    let (count, entries) = jvmti.constant_pool(class).ok()?;
    let mut pool = Vec::with_capacity(entries.len() + 2);
    pool.extend_from_slice(&count.to_be_bytes());
    pool.extend_from_slice(&entries);
    match calls_in_code(&pool, &code) {
        Ok(calls) => Some(calls.into_iter().map(CallSite::into_owned).collect()),
        Err(e) => {
            log::warn!("reading hidden class method {name}{descriptor}: {e}");
            None
        }
    }
}

/// The tag and planner name of `class`, tagging it on first sight.
fn tagged(jvmti: Jvmti, jni: &JniEnv<'_>, class: Class<'_>, tag: i64) -> Option<(i64, ClassKey)> {
    let lock = || TAGGED.lock().unwrap_or_else(|p| p.into_inner());
    if tag != 0 {
        if let Some(key) = lock().as_ref().and_then(|t| t.classes.get(&tag)).cloned() {
            return Some((tag, key));
        }
    }
    let key = session::class_key(jvmti, jni, class)?;
    let tag = {
        let mut tagged = lock();
        let tagged = tagged.get_or_insert_with(Tagged::default);
        tagged.last += 1;
        tagged.last
    };
    jvmti.set_tag(class.as_object(), tag).ok()?;
    lock()
        .get_or_insert_with(Tagged::default)
        .classes
        .insert(tag, key.clone());
    Some((tag, key))
}
