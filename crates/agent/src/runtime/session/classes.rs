//! The class bytes cache and the class hooks: every class's original bytes as the
//! ClassFileLoadHook saw them, a weak reference to each prepared class, the loaders' ids; the
//! planner of the session running sees new classes here and instruments the bytes of those it
//! chose.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ferrofluid_jvmti::{Class, JniEnv, Jvmti, Object, WeakGlobalClass, WeakGlobalRef};
use ferrofluid_subgraph::{Initialization, LoaderId, BOOTSTRAP};

use crate::runtime::jvm;

use super::retransform::{flush_pending, retransform};
use super::{digest, lock, ClassKey, SESSIONS};

/// The class bytes cache and what the runtime knows of loaded classes, over the agent's life
/// (across detach and re-attach).
pub(crate) struct ClassCache {
    /// Loaded classes: a weak reference to each and its original bytes.
    pub(super) classes: Mutex<Option<Classes>>,
    /// Loaders seen so far, by identity hash code: a weak global reference to each and its id.
    /// Weak references outlive the JVMTI environment, so class bytes cached under a loader id
    /// stay valid across detach/attach. They are never removed (nor deleted). Keyed by hash so
    /// that a class load compares its loader with the few of the same hash, not with every
    /// loader the application ever made.
    loaders: Mutex<Option<Loaders>>,
    next_loader: AtomicU64,
    /// Classes ever instrumented, whose retransformations are logged with a digest of their
    /// bytes.
    traced: Mutex<Option<HashSet<ClassKey>>>,
    /// Instrumented classes that were not linked when their session ended: retransforming them
    /// would make the JVM link them first (and fail again if their linking failed), so their
    /// probes are removed at their ClassPrepare, if it comes while the agent is attached.
    pub(super) restore_at_prepare: Mutex<BTreeSet<ClassKey>>,
    /// RetransformClasses calls, classes they named and ns they took, since the agent loaded:
    /// what revelation costs the application (logged with the precision).
    pub(super) retransform_calls: AtomicU64,
    pub(super) retransform_classes: AtomicU64,
    pub(super) retransform_ns: AtomicU64,
}

/// Loaders by identity hash code (`None`: not read), each a weak reference and its id.
type Loaders = HashMap<Option<i32>, Vec<(WeakGlobalRef, LoaderId)>>;

// Process-wide: the class hooks, JVMTI callbacks without user data, fill it.
pub(crate) static CACHE: ClassCache = ClassCache {
    classes: Mutex::new(None),
    loaders: Mutex::new(None),
    next_loader: AtomicU64::new(1),
    traced: Mutex::new(None),
    restore_at_prepare: Mutex::new(BTreeSet::new()),
    retransform_calls: AtomicU64::new(0),
    retransform_classes: AtomicU64::new(0),
    retransform_ns: AtomicU64::new(0),
};

/// Loaded classes: a weak reference to each (to retransform it) and its original bytes as the
/// ClassFileLoadHook saw them, so that a new session (even after detach and re-attach) plans without
/// retransforming every loaded class again: each retransformation leaves the JVM a new class version
/// to keep while old frames run, and repeating them for every class makes each cycle slower.
/// Entries of unloaded classes stay (their weak reference is cleared); memory is the price, up to
/// [`CACHE_LIMIT`] bytes of class files.
#[derive(Default)]
pub(super) struct Classes {
    /// Shared so that a reader takes one out of the lock and upgrades it after.
    pub(super) refs: HashMap<ClassKey, Arc<WeakGlobalClass>>,
    pub(super) bytes: HashMap<ClassKey, Arc<[u8]>>,
    /// The sum of `bytes`' lengths.
    cached: usize,
    /// Class file loads (first loads and retransformations) whose bytes were not kept, the
    /// cache being full.
    not_cached: u64,
}

/// The most class-file bytes the cache keeps: an agent loaded with a large application (or one
/// that defines classes without end) holds no more native memory than this for it. Classes
/// loaded once it is full are unknown to the planner, which retransforms them to see their
/// bytes when a session needs them, as it does the classes loaded before the agent.
pub(super) const CACHE_LIMIT: usize = 256 << 20;

impl Classes {
    /// Keeps `bytes` as `key`'s original bytes unless some are kept already or `limit` bytes
    /// would be exceeded (counted in [`Classes::not_cached`]). True when this call kept them.
    fn keep(&mut self, key: &ClassKey, bytes: &[u8], limit: usize) -> bool {
        if self.bytes.contains_key(key) {
            return false;
        }
        if self.cached.saturating_add(bytes.len()) > limit {
            self.not_cached += 1;
            if self.not_cached == 1 {
                log::info!(
                    "class bytes cache full ({} MiB): the bytes of classes loaded from now on are \
                     read back by retransforming them when a session plans them",
                    limit >> 20
                );
            }
            return false;
        }
        self.cached += bytes.len();
        self.bytes.insert(key.clone(), bytes.into());
        true
    }

    /// Class file loads whose bytes were not kept because the cache was full.
    pub(super) fn not_cached(&self) -> u64 {
        self.not_cached
    }
}

/// The id of class loader `loader` (assigned on first sight; the bootstrap loader is `None`).
pub fn loader_id(env: &JniEnv<'_>, loader: Option<Object<'_>>) -> Option<LoaderId> {
    let Some(loader) = loader else {
        return Some(BOOTSTRAP);
    };
    let hash = jvm::jvmti().and_then(|j| j.object_hash_code(loader).ok());
    let mut loaders = lock(&CACHE.loaders);
    let loaders = loaders.get_or_insert_with(HashMap::new);
    let same = |(weak, _): &&(WeakGlobalRef, LoaderId)| weak.is(env, Some(loader));
    // A loader whose hash could not be read is kept under no hash (`None`), which every lookup
    // also searches: a loader never gets two ids.
    let found = match hash {
        Some(h) => [Some(h), None]
            .iter()
            .filter_map(|k| loaders.get(k))
            .flatten()
            .find(same),
        None => loaders.values().flatten().find(same),
    };
    if let Some((_, id)) = found {
        return Some(*id);
    }
    let weak = env.new_weak(loader).ok()?;
    let id = CACHE.next_loader.fetch_add(1, Ordering::Relaxed);
    loaders.entry(hash).or_default().push((weak, id));
    Some(id)
}

/// The ClassFileLoadHook: remembers the class's bytes, lets the planner see a new class, and
/// returns instrumented bytes if the session chose methods of it. `None`: keep the bytes.
pub fn class_file_load(
    env: &JniEnv<'_>,
    loader: Option<Object<'_>>,
    name: &str,
    redefining: bool,
    bytes: &[u8],
) -> Option<Vec<u8>> {
    if name.starts_with(ferrofluid_subgraph::AGENT_PACKAGE) {
        return None;
    }
    let key = (loader_id(env, loader)?, name.to_owned());
    lock(&CACHE.classes)
        .get_or_insert_with(Classes::default)
        .keep(&key, bytes, CACHE_LIMIT);
    // What engines add as classes first load (native wrappers) comes first, and again at every
    // redefinition: methods cannot be added or removed by one.
    let loaded = crate::engine::transform_at_load(key.0 == BOOTSTRAP, name, bytes);
    let input = loaded.as_deref().unwrap_or(bytes);
    let out = {
        let mut session = lock(&SESSIONS.current);
        match session.as_mut() {
            // An engine that instruments the roots' methods alone needs no other class: not
            // parsing each one as it loads keeps class loading at its speed (the hybrid sampler
            // on a program that loads thousands of classes).
            Some(s) if s.methods_only() && !s.roots.iter().any(|r| r.class().matches(name)) => None,
            Some(s) => {
                if s.planner.selection_for(key.0, name).is_none() {
                    // A class being defined is not initialised yet: its first use usually
                    // follows on the thread loading it, so if that thread is inside a root
                    // its initialiser is chosen now, else when a call or static field access
                    // would run it (classes loaded by other threads, or by retransformations at
                    // the session's start, which link classes). One loaded before the session
                    // (retransformed to show its bytes) may not be initialised either. Reported
                    // before the class is planned, which may follow calls and field accesses
                    // that initialise it.
                    let when = if !redefining {
                        Some(if crate::probe::thread::in_root() {
                            Initialization::Now
                        } else {
                            Initialization::OnCall
                        })
                    } else if s.uninitialized.remove(&key) {
                        Some(Initialization::OnCall)
                    } else {
                        None
                    };
                    match s.planner.add_class(key.0, input) {
                        Ok(_) => {
                            if let Some(when) = when.filter(|_| s.initializers) {
                                let batch = s.planner.class_not_initialized(key.0, name, when);
                                s.apply(batch, Some(&key));
                            }
                            let batch = s.planner.plan();
                            s.apply(batch, Some(&key));
                        }
                        Err(e) => log::warn!("planner: {name}: {e}"),
                    }
                }
                let out = s.transform(&key, input);
                if out.is_none() {
                    s.instrumented.remove(&key);
                    s.gated.remove(&key);
                }
                out
            }
            None => None,
        }
    };
    let out = out.or(loaded);
    if redefining || out.is_some() {
        let mut traced = lock(&CACHE.traced);
        let traced = traced.get_or_insert_with(HashSet::new);
        if out.is_some() {
            traced.insert(key.clone());
        }
        if traced.contains(&key) {
            log::info!(
                "class file load hook {name}: {} bytes in, digest {:016x}; {}",
                bytes.len(),
                digest(bytes),
                match &out {
                    Some(b) => format!("instrumented, {} bytes out", b.len()),
                    None => "original kept".to_owned(),
                }
            );
        }
    }
    out
}

/// ClassPrepare: remembers a weak reference to the class (to retransform it later) and, if it was
/// instrumented, makes its module read the hooks' module.
pub fn class_prepared(jvmti: Jvmti, env: &JniEnv<'_>, class: Class<'_>) {
    let Some(key) = class_key(jvmti, env, class) else {
        return;
    };
    remember(env, &key, class);
    // Instrumented by a session that ended before the class linked: restored now (or given
    // the probes of the current session), before its code can run.
    let restore = lock(&CACHE.restore_at_prepare).remove(&key);
    // Methods chosen while the class was loaded but not prepared (it could not be
    // retransformed then), or chosen in other classes by a class-load hook (which cannot
    // retransform): instrumented now, before code of the class can run.
    let due = match lock(&SESSIONS.current).as_mut() {
        Some(s) => {
            if s.unprepared.remove(&key) || restore {
                s.pending.insert(key.clone());
            }
            !s.pending.is_empty()
        }
        None => {
            if restore {
                let refused = retransform(jvmti, env, std::slice::from_ref(&key));
                let error = refused.failed.first().map(|(_, e)| e.as_str());
                log::info!(
                    "{}: linked after its session ended: {}",
                    key.1,
                    error.map_or("probes removed".to_owned(), |e| format!(
                        "still carries probes: {e}"
                    ))
                );
            }
            false
        }
    };
    if due {
        flush_pending(jvmti, env);
    }
    let instrumented = lock(&SESSIONS.current)
        .as_ref()
        .is_some_and(|s| s.instrumented.contains(&key) || s.gated.contains(&key));
    if instrumented {
        jvm::read_hooks_module(jvmti, env, class);
    }
}

/// The planner's name of `class`: its defining loader's id and internal name.
pub fn class_key(jvmti: Jvmti, env: &JniEnv<'_>, class: Class<'_>) -> Option<ClassKey> {
    let (sig, _) = jvmti.class_signature(class).ok()?;
    let name = sig.strip_prefix('L')?.strip_suffix(';')?.to_owned();
    let loader = jvmti.class_loader(env, class).ok()?;
    let id = loader_id(env, loader);
    if let Some(l) = loader {
        env.delete_local_ref(l);
    }
    Some((id?, name))
}

pub(super) fn remember(env: &JniEnv<'_>, key: &ClassKey, class: Class<'_>) {
    let mut classes = lock(&CACHE.classes);
    let classes = classes.get_or_insert_with(Classes::default);
    if classes.refs.contains_key(key) {
        return;
    }
    if let Ok(weak) = env.new_weak(class) {
        classes.refs.insert(key.clone(), Arc::new(weak));
    }
}

/// The JVMTI class status of `key`, if it is still loaded.
pub(super) fn status_of(jvmti: Jvmti, env: &JniEnv<'_>, key: &ClassKey) -> Option<u32> {
    let weak = Arc::clone(lock(&CACHE.classes).as_ref()?.refs.get(key)?);
    let class = weak.upgrade(env)?;
    let status = jvmti.class_status(class).ok();
    env.delete_local_ref(class.as_object());
    status.map(|st| st as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_keeps_first_bytes_up_to_its_limit_and_counts_the_rest() {
        let mut c = Classes::default();
        let key = |n: &str| (BOOTSTRAP, n.to_owned());
        assert!(c.keep(&key("A"), &[1; 60], 100));
        // A redefinition's bytes never replace the original ones.
        assert!(!c.keep(&key("A"), &[2; 10], 100));
        assert!(c.keep(&key("B"), &[3; 40], 100));
        assert!(!c.keep(&key("C"), &[4; 1], 100));
        assert!(!c.keep(&key("D"), &[5; 1], 100));
        assert_eq!(c.bytes[&key("A")].as_ref(), &[1; 60][..]);
        assert_eq!((c.bytes.len(), c.cached, c.not_cached()), (2, 100, 2));
    }
}
