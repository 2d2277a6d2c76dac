//! What native code allocates through JNI (`AllocObject`, `NewObject*`, `NewObjectArray`,
//! `New<Primitive>Array`, `NewString*`), counted by the agent's wrappers of those functions
//! (`ffi::jni`) while an `alloc` session runs: a JNI allocation is rare and already a
//! native call, so each is counted here, under a lock, against the native method that made it
//! (the thread's top Java frame), as a site of kind `jni` (docs/decisions/0048-vm-allocations.md).

use std::sync::atomic::Ordering;
use std::sync::Mutex;

use ferrofluid_jvmti::{JniEnv, Object};
use ferrofluid_subgraph::ClassFilter;
use rustc_hash::FxHashMap;

use super::ffi as jni;
use super::tracker::{self, lock, StackStart};
use super::{narrow, scope, vm, STATE};

/// What native code allocated through JNI this session.
pub struct JniAllocs {
    /// Per allocation site: objects and array elements allocated through JNI this session.
    counts: Mutex<Option<FxHashMap<u32, (u64, u64)>>>,
    /// JNI sites by (`jmethodID` of the native method, function): named once; `None` when the
    /// method's class does not pass the session's filter.
    callers: Mutex<Option<Callers>>,
    /// The session's `--include`/`--exclude`: a native method's class must pass it, as a
    /// method's class must for its allocating instructions to be counted.
    filter: Mutex<Option<ClassFilter>>,
}

impl JniAllocs {
    pub const fn new() -> JniAllocs {
        JniAllocs {
            counts: Mutex::new(None),
            callers: Mutex::new(None),
            filter: Mutex::new(None),
        }
    }
}

type Callers = FxHashMap<(usize, &'static str), Option<u32>>;

/// The package of the agent's own classes (`ferrofluid/Hooks`, `ferrofluid/Alloc`...).
const OWN_PACKAGE: &str = "ferrofluid/";

/// Configures the next session: which classes' native methods are counted.
pub fn configure(filter: &ClassFilter) {
    *lock(&STATE.jni.filter) = Some(filter.clone());
    *lock(&STATE.jni.callers) = None;
}

/// Forgets the counts (a session starts).
pub fn clear() {
    *lock(&STATE.jni.counts) = None;
}

/// JNI function `function` returned `object`, of internal class name `class` if the function
/// says (else its class is looked up), an array of `length` elements if it is one.
pub fn allocated(
    env: &JniEnv<'_>,
    object: Object<'_>,
    function: &'static str,
    class: Option<&'static str>,
    length: Option<u32>,
) {
    let Some(jvmti) = tracker::environment() else {
        return;
    };
    if scope::rooted() && !crate::probe::thread::in_root() {
        return;
    }
    let mut top = Vec::with_capacity(1);
    jni::stack_from(jvmti, 0, 1, &mut top);
    let method = top.first().copied().unwrap_or(0);
    let known = lock(&STATE.jni.callers)
        .as_ref()
        .and_then(|c| c.get(&(method, function)).copied());
    let site = match known {
        Some(s) => s,
        None => {
            let caller = jni::method_name(jvmti, env, method);
            // Not counted: the agent's own allocations (in its natives, or on a thread with no
            // Java frame, as its own threads and the launcher's are) and those of classes the
            // filters leave out.
            let s = caller
                .filter(|(class, _, _)| {
                    let internal = class.replace('.', "/");
                    !internal.starts_with(OWN_PACKAGE)
                        && lock(&STATE.jni.filter).as_ref().is_none_or(|f| f.allows(&internal))
                })
                .map(|caller| vm::jni_site_id(caller, function));
            lock(&STATE.jni.callers)
                .get_or_insert_with(FxHashMap::default)
                .insert((method, function), s);
            s
        }
    };
    let Some(site) = site else { return };
    let class = match class {
        Some(c) => c.to_owned(),
        None => match jni::class_name(env, object) {
            Some(c) => c,
            None => return,
        },
    };
    // A narrowed session counts only the classes it selects.
    if !ferrofluid_protocol::AllocClassPattern::any_matches(&narrow::current(), &class) {
        return;
    }
    let Some(site) = vm::class_site(site, &class) else {
        return;
    };
    let before = {
        let mut counts = lock(&STATE.jni.counts);
        let c = counts
            .get_or_insert_with(FxHashMap::default)
            .entry(site)
            .or_insert((0, 0));
        let before = c.0;
        c.0 += 1;
        c.1 += u64::from(length.unwrap_or(0));
        before
    };
    let every = STATE.tracking.every.load(Ordering::Relaxed);
    if before == 0 || (every > 0 && before % every == 0) {
        tracker::sampled_at(env, object, site, StackStart::Jni);
    }
}

/// Adds the JNI counts to `counts` (objects at `2*s`, array elements at `2*s+1` of site `s`).
pub fn add_counts(counts: &mut Vec<i64>) {
    let c = lock(&STATE.jni.counts);
    for (&site, &(n, elements)) in c.iter().flatten() {
        let s = site as usize;
        if counts.len() < 2 * (s + 1) {
            counts.resize(2 * (s + 1), 0);
        }
        counts[2 * s] += n as i64;
        counts[2 * s + 1] += elements as i64;
    }
}
