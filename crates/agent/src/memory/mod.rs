//! The `alloc` engine's runtime (docs/modes/alloc.md): allocation sites, the Java counters of
//! `ferrofluid/Alloc` (read at snapshots), the tracked objects (tagged in the engine's own
//! JVMTI environment, their deaths seen by `ObjectFree`), the GC count, the generation history
//! sampled about every second, and the profile made of them.
//!
//! Locks: [`SITES`] is taken in ClassFileLoadHook (no JVMTI call under it); [`TRACKER`] and
//! [`FRAMES`] only around plain Rust work, never across a JNI or JVMTI call, so `ObjectFree`
//! (which takes [`TRACKER`]) never waits on a thread stopped in the JVM.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ferrofluid_jvmti::{JniEnv, JvmtiCell, Object};
use ferrofluid_profile::alloc::{
    java_name, AllocSummary, ClassAlloc, SiteAlloc, Suspect, SuspectPath,
};
use ferrofluid_profile::{CallTree, Mode, NodeId, NodeKind, Profile, ThreadProfile};
use rustc_hash::FxHashMap;

use crate::ffi::alloc as jni;

pub mod native;
pub mod scope;
pub mod vm;

/// Default stack depth of tracked objects.
pub const DEFAULT_STACK_DEPTH: u32 = 64;
/// Tracked objects alive at once, at most: past it, objects are counted but not tracked.
pub const MAX_TRACKED: usize = 1 << 20;
/// Distinct allocation stacks kept, at most: past it, a tracked object keeps its allocating
/// method alone.
pub const MAX_STACKS: usize = 1 << 16;
/// Generation samples kept per class (about one per second); older ones are thinned out.
const MAX_HISTORY: usize = 600;
/// Fewer surviving generations than this never make a leak suspect: a set allocated at once
/// (1-3: a collection or two may fall inside its allocation) or short-lived objects (0-2).
pub const SUSPECT_GENERATIONS: u32 = 4;
/// A class is also a suspect only if its generation count grew by this much over its history.
pub const SUSPECT_GROWTH: u32 = 2;

/// A site's allocating method (global method id), bytecode offset and class (internal name),
/// and the site counted per class it belongs to, if any ([`vm`]).
struct Site {
    method: u32,
    bci: u32,
    class: String,
    vm: Option<u32>,
}

#[derive(Default)]
struct Sites {
    sites: Vec<Site>,
    index: HashMap<(u32, u32, String, Option<u32>), u32>,
}

/// Allocation sites over the agent's life: a site keeps its id across sessions and
/// retransformations, so its counter does too.
static SITES: Mutex<Option<Sites>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The id of the site at `bci` of global method `method` allocating `type_name` (internal
/// name or array descriptor).
pub fn site_id(method: u32, bci: u32, type_name: &str) -> u32 {
    site_id_via(method, bci, type_name, None)
}

/// As [`site_id`], for a class counted at site `vm` of [`vm`] (its counters are there).
fn site_id_via(method: u32, bci: u32, type_name: &str, vm: Option<u32>) -> u32 {
    let mut sites = lock(&SITES);
    let sites = sites.get_or_insert_with(Sites::default);
    let key = (method, bci, type_name.to_owned(), vm);
    if let Some(&id) = sites.index.get(&key) {
        return id;
    }
    let id = sites.sites.len() as u32;
    sites.sites.push(Site {
        method,
        bci,
        class: type_name.to_owned(),
        vm,
    });
    sites.index.insert(key, id);
    id
}

fn site_count() -> usize {
    lock(&SITES).as_ref().map_or(0, |s| s.sites.len())
}

/// The engine's JVMTI environment while a session collects.
static ENV: JvmtiCell = JvmtiCell::new();
/// Objects are measured and tracked (between `start` and `stop`).
static TRACKING: AtomicBool = AtomicBool::new(false);
static EVERY: AtomicU64 = AtomicU64::new(10);
static DEPTH: AtomicU32 = AtomicU32::new(DEFAULT_STACK_DEPTH);
/// Garbage collections finished since the session started.
static GCS: AtomicU64 = AtomicU64::new(0);
/// The session, in the high half of every tag it sets.
static EPOCH: AtomicU32 = AtomicU32::new(0);

/// One tracked object.
#[derive(Clone, Copy)]
struct Tracked {
    site: u32,
    stack: u32,
    size: u64,
    /// The GC count when it was allocated.
    gc: u64,
    /// The allocating thread (index in the tracker's threads).
    thread: u32,
}

#[derive(Default)]
struct Tracker {
    /// Slot `i` holds the object tagged `(epoch << 32) | (i + 1)`.
    slots: Vec<Option<Tracked>>,
    free: Vec<u32>,
    live: usize,
    /// Stacks: frame ids, innermost first.
    stacks: Vec<Box<[u32]>>,
    stack_ids: FxHashMap<Box<[u32]>, u32>,
    /// Stack ids by raw stack: how it was taken ([`StackStart`]) and its `jmethodID`s, which
    /// HotSpot never reuses.
    raw_stacks: FxHashMap<Box<[usize]>, u32>,
    /// The allocating threads: Java id and name, as the other modes report them, and whether
    /// it is a virtual thread.
    threads: Vec<(u64, String, bool)>,
    /// Per site: objects tracked, and the measured size of its first object.
    tracked: FxHashMap<u32, u64>,
    sizes: FxHashMap<u32, u64>,
    /// Per (site, stack, thread): objects tracked on that path.
    paths: FxHashMap<(u32, u32, u32), u64>,
    untracked: u64,
    stacks_dropped: u64,
    /// Generation counts per class, sampled about every second.
    history: BTreeMap<String, Vec<u32>>,
    samples: usize,
    last_sample: Option<Instant>,
    /// The counters read when collection stopped.
    final_counts: Option<Vec<i64>>,
}

static TRACKER: Mutex<Option<Tracker>> = Mutex::new(None);

/// Method names of stack frames: `jmethodID` → frame id, and frame id → name.
#[derive(Default)]
struct Frames {
    ids: FxHashMap<usize, u32>,
    names: Vec<(String, String, String)>,
}

static FRAMES: Mutex<Option<Frames>> = Mutex::new(None);

thread_local! {
    /// This thread's index in the tracker's threads, with the epoch it was given in.
    static THREAD: Cell<(u32, u32)> = const { Cell::new((u32::MAX, u32::MAX)) };
    static STACK: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// Configures the next session: sampling period and stack depth.
pub fn configure(every: u64, depth: u32) {
    EVERY.store(every, Ordering::SeqCst);
    DEPTH.store(depth.clamp(1, 1024), Ordering::SeqCst);
}

/// Defines and resets the counting class, on a Java thread, before probes are inserted.
pub fn install(env: &JniEnv<'_>) -> Result<(), String> {
    jni::install(env, EVERY.load(Ordering::SeqCst))
}

/// Starts a session: forgets the last one's tracked objects, opens the engine's JVMTI
/// environment (tags, `ObjectFree`, GC events) and starts measuring.
pub fn start() {
    stop();
    *lock(&TRACKER) = Some(Tracker::default());
    *lock(&FRAMES) = Some(Frames::default());
    GCS.store(0, Ordering::SeqCst);
    EPOCH.fetch_add(1, Ordering::SeqCst);
    native::clear();
    match crate::jvm::java_vm().map(jni::open_env) {
        Some(Ok(env)) => ENV.set(Some(env)),
        Some(Err(e)) => log::warn!("alloc: no JVMTI environment for tracking ({e}): counting only"),
        None => {}
    }
    TRACKING.store(true, Ordering::SeqCst);
    if let Some(jvmti) = crate::jvm::jvmti() {
        crate::ffi::jni_alloc::install(jvmti);
    }
}

/// Stops measuring: keeps the final counts and disposes the environment, which removes every
/// tag it set.
pub fn stop() {
    if !TRACKING.swap(false, Ordering::SeqCst) {
        return;
    }
    if let Some(jvmti) = crate::jvm::jvmti() {
        crate::ffi::jni_alloc::uninstall(jvmti);
    }
    let counts = read_counts();
    if let Some(t) = lock(&TRACKER).as_mut() {
        t.final_counts = counts;
    }
    if let Some(env) = ENV.get() {
        ENV.set(None);
        jni::close_env(env);
    }
}

/// Discards what was measured and goes on.
pub fn reset() {
    let was = TRACKING.load(Ordering::SeqCst);
    stop();
    if let Some(vm) = crate::jvm::java_vm() {
        let _ = vm.with_attached_thread("ferrofluid-alloc", |env| {
            if let Err(e) = install(env) {
                log::warn!("alloc: {e}");
            }
        });
    }
    if was {
        start();
    }
}

fn read_counts() -> Option<Vec<i64>> {
    let sites = site_count();
    let vm = crate::jvm::java_vm()?;
    vm.with_attached_thread("ferrofluid-alloc", |env| {
        let mut counts = jni::read_counts(env, sites)?;
        vm::add_counts(env, &mut counts).then_some(counts)
    })
    .ok()
    .flatten()
}

/// A GC finished (in the GC's callback: count only).
pub fn gc_finished() {
    GCS.fetch_add(1, Ordering::Relaxed);
}

/// A tracked object died (`ObjectFree`, maybe during a GC: no JNI or JVMTI call).
pub fn freed(tag: i64) {
    let tag = tag as u64;
    if (tag >> 32) as u32 != EPOCH.load(Ordering::Relaxed) {
        return;
    }
    let slot = (tag & 0xffff_ffff) as usize;
    let mut t = lock(&TRACKER);
    let Some(t) = t.as_mut() else { return };
    if let Some(s) = slot.checked_sub(1).and_then(|i| t.slots.get_mut(i)) {
        if s.take().is_some() {
            t.free.push((slot - 1) as u32);
            t.live -= 1;
        }
    }
}

/// `Alloc.sample`: the first object of `site` (measured) or an `every`-th one (tracked).
pub fn sampled(env: &JniEnv<'_>, object: Object<'_>, site: u32) {
    sampled_at(env, object, site, StackStart::Alloc);
}

/// Where the Java frames of a tracked object's allocation stack begin.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StackStart {
    /// Under `Alloc.sample` and `Alloc.alloc`.
    Alloc,
    /// Under `Alloc.sampleVm` and more frames of the counting classes (`vm`, `inner`, and
    /// `AllocScope`'s), which are left out.
    Counting,
    /// At the top: a JNI function called by a native method.
    Jni,
}

/// As [`sampled`], the stack's Java frames beginning as `frames` says.
fn sampled_at(env: &JniEnv<'_>, object: Object<'_>, site: u32, frames: StackStart) {
    if !TRACKING.load(Ordering::Relaxed) {
        return;
    }
    let Some(jvmti) = ENV.get() else { return };
    let size = jni::object_size(jvmti, object).unwrap_or(0);
    let every = EVERY.load(Ordering::Relaxed);
    {
        let mut t = lock(&TRACKER);
        let Some(t) = t.as_mut() else { return };
        t.sizes.entry(site).or_insert(size);
        if every == 0 {
            return;
        }
        if t.live >= MAX_TRACKED {
            t.untracked += 1;
            return;
        }
    }
    let gc = GCS.load(Ordering::Relaxed);
    let epoch = EPOCH.load(Ordering::Relaxed);
    // The raw stack (`jmethodID`s, then how it was taken) is looked up first: a stack seen
    // before costs one hash of its frames, not a lookup of each frame's id.
    let found = STACK.with(|s| {
        let mut s = s.borrow_mut();
        let depth = DEPTH.load(Ordering::Relaxed) as usize;
        match frames {
            StackStart::Alloc => jni::stack(jvmti, env, depth, &mut s),
            StackStart::Jni => jni::stack_from(jvmti, 0, depth, &mut s),
            // `vm`/`inner` (recursive) and `AllocScope`'s frames come first: dropped when named.
            StackStart::Counting => jni::stack(jvmti, env, depth + 8, &mut s),
        }
        s.push(frames as usize);
        let known = lock(&TRACKER)
            .as_ref()
            .and_then(|t| t.raw_stacks.get(s.as_slice()).copied());
        match known {
            Some(id) => Ok(id),
            None => Err((
                named_stack(jvmti, env, &s[..s.len() - 1], frames),
                s.clone().into_boxed_slice(),
            )),
        }
    });
    let thread = thread_index(env, epoch);
    let tag = {
        let mut t = lock(&TRACKER);
        let Some(t) = t.as_mut() else { return };
        let stack = match found {
            Ok(id) => id,
            Err((ids, raw)) => {
                let id = match t.stack_ids.get(ids.as_slice()) {
                    Some(&id) => id,
                    None if t.stacks.len() < MAX_STACKS => {
                        let id = t.stacks.len() as u32;
                        let key: Box<[u32]> = ids.into_boxed_slice();
                        t.stacks.push(key.clone());
                        t.stack_ids.insert(key, id);
                        id
                    }
                    None => u32::MAX,
                };
                if t.raw_stacks.len() < 2 * MAX_STACKS {
                    t.raw_stacks.insert(raw, id);
                }
                id
            }
        };
        if stack == u32::MAX {
            t.stacks_dropped += 1;
        }
        let slot = match t.free.pop() {
            Some(i) => i,
            None => {
                t.slots.push(None);
                (t.slots.len() - 1) as u32
            }
        };
        t.slots[slot as usize] = Some(Tracked {
            site,
            stack,
            size,
            gc,
            thread,
        });
        t.live += 1;
        *t.tracked.entry(site).or_insert(0) += 1;
        *t.paths.entry((site, stack, thread)).or_insert(0) += 1;
        ((u64::from(epoch) << 32) | u64::from(slot + 1)) as i64
    };
    if jvmti.set_tag(object, tag).is_err() {
        freed(tag);
    }
}

/// Frame ids of the raw stack `raw` taken as `frames` says, the counting classes' own frames
/// left out (outside the tracker's lock: naming new frames calls JVMTI).
fn named_stack(
    jvmti: ferrofluid_jvmti::Jvmti,
    env: &JniEnv<'_>,
    raw: &[usize],
    frames: StackStart,
) -> Vec<u32> {
    let mut ids = frame_ids(jvmti, env, raw);
    if frames != StackStart::Counting {
        return ids;
    }
    let depth = DEPTH.load(Ordering::Relaxed) as usize;
    let f = lock(&FRAMES);
    let names = f.as_ref().map(|f| f.names.as_slice()).unwrap_or(&[]);
    let counting = |id: &u32| {
        names
            .get(*id as usize)
            .is_some_and(|(c, _, _)| c == "ferrofluid.Alloc" || c == "ferrofluid.AllocScope")
    };
    let skip = ids.iter().take_while(|id| counting(id)).count();
    ids.drain(..skip);
    ids.truncate(depth);
    ids
}

/// Frame ids of the `jmethodID`s of a stack, naming the frames not seen before (outside the lock).
fn frame_ids(jvmti: ferrofluid_jvmti::Jvmti, env: &JniEnv<'_>, methods: &[usize]) -> Vec<u32> {
    let mut out = Vec::with_capacity(methods.len());
    let mut unknown = false;
    {
        let f = lock(&FRAMES);
        for &m in methods {
            let id = f.as_ref().and_then(|f| f.ids.get(&m).copied());
            unknown |= id.is_none();
            out.push(id.unwrap_or(u32::MAX));
        }
    }
    if !unknown {
        return out;
    }
    for (slot, &m) in out.iter_mut().zip(methods) {
        if *slot != u32::MAX {
            continue;
        }
        let name = jni::method_name(jvmti, env, m)
            .unwrap_or_else(|| ("<unknown>".into(), String::new(), String::new()));
        let mut f = lock(&FRAMES);
        let f = f.get_or_insert_with(Frames::default);
        let id = f.names.len() as u32;
        let id = *f.ids.entry(m).or_insert(id);
        if id as usize == f.names.len() {
            f.names.push(name);
        }
        *slot = id;
    }
    out
}

/// The current thread's index in the tracker's threads: one per Java thread (id and name, as
/// the calling-context modes report it; a virtual thread with no name is `virtual#ID`). Kept in
/// a thread-local of the OS thread, except while a virtual thread is mounted on it (the
/// carrier's thread-local is not the virtual thread's).
fn thread_index(env: &JniEnv<'_>, epoch: u32) -> u32 {
    let mounted = crate::vthread::mounted_key().is_some();
    let (index, given) = THREAD.with(Cell::get);
    if given == epoch && !mounted {
        return index;
    }
    let (id, name) = crate::jvm::thread_identity(env);
    let name = match (name.filter(|n| !n.is_empty()), id) {
        (Some(name), _) => name,
        (None, Some(id)) if mounted => format!("virtual#{id}"),
        (None, _) => "<unnamed>".into(),
    };
    let index = {
        let mut t = lock(&TRACKER);
        let Some(t) = t.as_mut() else { return 0 };
        // Without a Java id, threads are told apart by name alone.
        let id = id.unwrap_or(0);
        match t
            .threads
            .iter()
            .position(|(i, n, _)| *i == id && *n == name)
        {
            Some(i) => i as u32,
            None => {
                t.threads.push((id, name, mounted));
                (t.threads.len() - 1) as u32
            }
        }
    };
    if !mounted {
        THREAD.with(|c| c.set((index, epoch)));
    }
    index
}

/// The collector's tick: samples each class's generation count about every second.
pub fn tick() {
    if !TRACKING.load(Ordering::Relaxed) || EVERY.load(Ordering::Relaxed) == 0 {
        return;
    }
    // The collector ticks far more often than once a second: the throttle comes first, before
    // anything that costs (naming every site took a sixth of the CPU of a tracked run).
    {
        let mut t = lock(&TRACKER);
        let Some(t) = t.as_mut() else { return };
        let now = Instant::now();
        if t.last_sample
            .is_some_and(|l| now - l < Duration::from_secs(1))
        {
            return;
        }
        t.last_sample = Some(now);
    }
    let classes = site_classes();
    let gc = GCS.load(Ordering::Relaxed);
    let mut t = lock(&TRACKER);
    let Some(t) = t.as_mut() else { return };
    let mut ages: HashMap<&str, BTreeSet<u64>> = HashMap::new();
    for s in t.slots.iter().flatten() {
        if let Some(c) = classes.get(s.site as usize) {
            ages.entry(c.as_str())
                .or_default()
                .insert(gc - s.gc.min(gc));
        }
    }
    let samples = t.samples;
    for (class, a) in ages {
        let h = t
            .history
            .entry(class.to_owned())
            .or_insert_with(|| vec![0; samples]);
        h.resize(samples, 0);
        h.push(a.len() as u32);
    }
    t.samples += 1;
    for h in t.history.values_mut() {
        h.resize(t.samples, 0);
    }
    if t.samples >= MAX_HISTORY {
        // Every other sample: the history covers twice the time at half the resolution.
        for h in t.history.values_mut() {
            *h = h.iter().step_by(2).copied().collect();
        }
        t.samples = t.samples.div_ceil(2);
    }
}

/// Java class names of the sites, by site id.
fn site_classes() -> Vec<String> {
    lock(&SITES)
        .as_ref()
        .map(|s| s.sites.iter().map(|s| java_name(&s.class)).collect())
        .unwrap_or_default()
}

/// Bytes of `count` objects of a site allocating `class` (internal name) whose arrays held
/// `elements` elements in all, its first object measured at `size` bytes.
fn site_bytes(class: &str, count: u64, elements: u64, size: Option<u64>) -> u64 {
    let Some(element) = class.strip_prefix('[') else {
        return count * size.unwrap_or(0);
    };
    // An array: a 16-byte header (compressed class pointers) and its elements (references
    // compressed to 4 bytes); alignment padding is left out.
    let width = match element.as_bytes().first() {
        Some(b'Z' | b'B') => 1,
        Some(b'C' | b'S') => 2,
        Some(b'J' | b'D') => 8,
        _ => 4,
    };
    count * 16 + elements * width
}

/// Adds the session's allocation profile to `profile`: the class and site tables, the leak
/// suspects, and one tree of allocation paths per thread (objects and bytes per path: the
/// site's exact counts shared out in proportion to its tracked objects on each path).
pub fn snapshot(profile: &mut Profile) {
    profile.mode = Mode::Alloc;
    profile.extra_metrics = ferrofluid_profile::alloc::path_metrics();
    let live_counts = if TRACKING.load(Ordering::SeqCst) {
        read_counts()
    } else {
        None
    };
    let sites: Vec<(u32, u32, String)> = lock(&SITES)
        .as_ref()
        .map(|s| {
            s.sites
                .iter()
                .map(|s| (s.method, s.bci, s.class.clone()))
                .collect()
        })
        .unwrap_or_default();
    // Per site: its kind and the called method shown above its class on the paths.
    let vm_of: Vec<Option<vm::VmSite>> = lock(&SITES)
        .as_ref()
        .map(|s| s.sites.iter().map(|s| s.vm.and_then(vm::site)).collect())
        .unwrap_or_default();
    let kind_of = |s: usize| {
        vm_of
            .get(s)
            .and_then(Option::as_ref)
            .map_or("new", |v| v.kind)
    };
    let callee_of = |s: usize| {
        vm_of
            .get(s)
            .and_then(Option::as_ref)
            .and_then(|v| v.callee.clone())
    };
    let gc = GCS.load(Ordering::SeqCst);
    let every = EVERY.load(Ordering::SeqCst);
    let t = lock(&TRACKER);
    let Some(t) = t.as_ref() else { return };
    let Some(counts) = live_counts.or_else(|| t.final_counts.clone()) else {
        log::warn!("alloc: the counters could not be read");
        return;
    };
    let frames = lock(&FRAMES);
    let names = frames.as_ref().map(|f| f.names.as_slice()).unwrap_or(&[]);
    let count_of = |s: usize| counts.get(2 * s).copied().unwrap_or(0).max(0) as u64;
    let elements_of = |s: usize| counts.get(2 * s + 1).copied().unwrap_or(0).max(0) as u64;
    // Java class names, as the stack frames have them.
    let method_of = |s: usize, id: u32| {
        // A JNI site's method is the native method that called the JNI function.
        if let Some(caller) = vm_of
            .get(s)
            .and_then(Option::as_ref)
            .and_then(|v| v.caller.clone())
        {
            return caller;
        }
        crate::session::method_name(id)
            .map(|(c, m, d)| (java_name(&c), m, d))
            .unwrap_or_else(|| (format!("<method {id}>"), String::new(), String::new()))
    };

    // Sites.
    let mut site_rows = Vec::new();
    let mut bytes = vec![0u64; sites.len()];
    for (s, (method, bci, class)) in sites.iter().enumerate() {
        let n = count_of(s);
        if n == 0 {
            continue;
        }
        bytes[s] = site_bytes(class, n, elements_of(s), t.sizes.get(&(s as u32)).copied());
        let (c, m, d) = method_of(s, *method);
        site_rows.push(SiteAlloc {
            method: format!("{c}.{m}{d}"),
            bci: *bci,
            class: java_name(class),
            allocated: n,
            bytes: bytes[s],
            kind: kind_of(s).to_owned(),
        });
    }
    site_rows.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| a.method.cmp(&b.method))
            .then(a.bci.cmp(&b.bci))
    });

    // Classes.
    #[derive(Default)]
    struct Acc {
        allocated: u64,
        bytes: u64,
        tracked: u64,
        live: u64,
        live_bytes: u64,
        ages: BTreeMap<u64, u64>,
    }
    let mut classes: BTreeMap<String, Acc> = BTreeMap::new();
    for (s, (_, _, class)) in sites.iter().enumerate() {
        let n = count_of(s);
        if n == 0 {
            continue;
        }
        let a = classes.entry(java_name(class)).or_default();
        a.allocated += n;
        a.bytes += bytes[s];
        a.tracked += t.tracked.get(&(s as u32)).copied().unwrap_or(0);
    }
    let mut live_paths: HashMap<(String, u32), (u64, BTreeSet<u64>)> = HashMap::new();
    // Per (site, stack, thread): live tracked objects, their bytes and ages.
    #[derive(Default)]
    struct LivePath {
        objects: u64,
        bytes: u64,
        ages: BTreeSet<u64>,
    }
    let mut live_by_path: HashMap<(u32, u32, u32), LivePath> = HashMap::new();
    for o in t.slots.iter().flatten() {
        let Some((_, _, class)) = sites.get(o.site as usize) else {
            continue;
        };
        let name = java_name(class);
        let age = gc - o.gc.min(gc);
        let a = classes.entry(name.clone()).or_default();
        a.live += 1;
        a.live_bytes += o.size;
        *a.ages.entry(age).or_insert(0) += 1;
        let p = live_paths.entry((name, o.stack)).or_default();
        p.0 += 1;
        p.1.insert(age);
        let q = live_by_path.entry((o.site, o.stack, o.thread)).or_default();
        q.objects += 1;
        q.bytes += o.size;
        q.ages.insert(age);
    }
    let mut class_rows: Vec<ClassAlloc> = classes
        .iter()
        .map(|(name, a)| {
            let scale = |v: u64| {
                if a.tracked == 0 {
                    0
                } else {
                    (u128::from(v) * u128::from(a.allocated) / u128::from(a.tracked)) as u64
                }
            };
            let aged: u64 = a.ages.iter().map(|(age, n)| age * n).sum();
            ClassAlloc {
                class: name.clone(),
                allocated: a.allocated,
                allocated_bytes: a.bytes,
                tracked: a.tracked,
                live: scale(a.live).min(a.allocated),
                live_bytes: scale(a.live_bytes),
                avg_age: if a.live == 0 {
                    0.0
                } else {
                    (aged as f64 / a.live as f64 * 100.0).round() / 100.0
                },
                generations: a.ages.len() as u32,
            }
        })
        .collect();
    class_rows.sort_by(|a, b| {
        b.allocated_bytes
            .cmp(&a.allocated_bytes)
            .then_with(|| a.class.cmp(&b.class))
    });

    // Suspects.
    let frame_name = |f: u32| {
        names
            .get(f as usize)
            .map_or_else(|| "<unknown>".to_owned(), |(c, m, _)| format!("{c}.{m}"))
    };
    let mut suspects: Vec<Suspect> = class_rows
        .iter()
        .filter(|c| c.generations >= SUSPECT_GENERATIONS)
        .filter_map(|c| {
            let history = t.history.get(&c.class).cloned().unwrap_or_default();
            let low = history
                .iter()
                .copied()
                .filter(|&g| g > 0)
                .min()
                .unwrap_or(0);
            let growth = c.generations.saturating_sub(low);
            (growth >= SUSPECT_GROWTH).then(|| {
                let mut paths: Vec<SuspectPath> = live_paths
                    .iter()
                    .filter(|((class, _), _)| *class == c.class)
                    .map(|((_, stack), (live, ages))| SuspectPath {
                        frames: t
                            .stacks
                            .get(*stack as usize)
                            .map(|s| s.iter().rev().map(|&f| frame_name(f)).collect())
                            .unwrap_or_default(),
                        live: *live,
                        generations: ages.len() as u32,
                    })
                    .collect();
                paths.sort_by(|a, b| b.live.cmp(&a.live).then_with(|| a.frames.cmp(&b.frames)));
                paths.truncate(5);
                Suspect {
                    class: c.class.clone(),
                    generations: c.generations,
                    growth,
                    history,
                    paths,
                }
            })
        })
        .collect();
    suspects.sort_by(|a, b| {
        b.generations
            .cmp(&a.generations)
            .then(b.growth.cmp(&a.growth))
            .then_with(|| a.class.cmp(&b.class))
    });

    // Trees: per thread, the tracked paths with the site's counts shared out; sites with no
    // tracked object under "all threads", as their allocating method alone.
    // Per thread (name, Java id; the sites with no tracked object under `all threads`, id 0).
    let mut trees: BTreeMap<(String, u64), CallTree> = BTreeMap::new();
    let mut leaf_ages: BTreeMap<((String, u64), NodeId), BTreeSet<u64>> = BTreeMap::new();
    let mut by_site: BTreeMap<u32, Vec<(u32, u32, u64)>> = BTreeMap::new();
    for (&(site, stack, thread), &n) in &t.paths {
        by_site.entry(site).or_default().push((stack, thread, n));
    }
    for (s, (method, _, class)) in sites.iter().enumerate() {
        let n = count_of(s);
        if n == 0 {
            continue;
        }
        let class_frame = profile.methods.insert(&java_name(class), "", "");
        let callee = callee_of(s).map(|(c, m, d)| profile.methods.insert(&c, &m, &d));
        let paths = by_site.get(&(s as u32)).map(Vec::as_slice).unwrap_or(&[]);
        let tracked: u64 = paths.iter().map(|p| p.2).sum();
        if tracked == 0 {
            let (c, m, d) = method_of(s, *method);
            let tree = trees
                .entry(("all threads".into(), 0))
                .or_insert_with(|| CallTree::with_width(4));
            let m = tree.child_or_insert(
                NodeId::ROOT,
                NodeKind::Method(profile.methods.insert(&c, &m, &d)),
            );
            let m = match callee {
                Some(c) => tree.child_or_insert(m, NodeKind::Method(c)),
                None => m,
            };
            let leaf = tree.child_or_insert(m, NodeKind::Method(class_frame));
            add(tree.extra_mut(leaf), [n, bytes[s], 0, 0]);
            continue;
        }
        let mut given = (0u64, 0u64);
        let mut sorted = paths.to_vec();
        sorted.sort_unstable();
        for (i, &(stack, thread, k)) in sorted.iter().enumerate() {
            let (objects, b) = if i + 1 == sorted.len() {
                (n - given.0, bytes[s] - given.1)
            } else {
                let share = |v: u64| (u128::from(v) * u128::from(k) / u128::from(tracked)) as u64;
                (share(n), share(bytes[s]))
            };
            given = (given.0 + objects, given.1 + b);
            // Live: the path's live tracked objects scaled by the site's allocated / tracked.
            let LivePath {
                objects: live,
                bytes: live_bytes,
                ages,
            } = live_by_path
                .remove(&(s as u32, stack, thread))
                .unwrap_or_default();
            let scale = |v: u64| (u128::from(v) * u128::from(n) / u128::from(tracked)) as u64;
            let thread = t
                .threads
                .get(thread as usize)
                .map(|(id, name, _)| (name.clone(), *id))
                .unwrap_or_default();
            let tree = trees
                .entry(thread.clone())
                .or_insert_with(|| CallTree::with_width(4));
            let mut node = NodeId::ROOT;
            let stack_frames = t.stacks.get(stack as usize).map(|s| &s[..]).unwrap_or(&[]);
            if stack_frames.is_empty() {
                let (c, m, d) = method_of(s, *method);
                node = tree
                    .child_or_insert(node, NodeKind::Method(profile.methods.insert(&c, &m, &d)));
            }
            for &f in stack_frames.iter().rev() {
                let (c, m, d) = names.get(f as usize).cloned().unwrap_or_default();
                node = tree
                    .child_or_insert(node, NodeKind::Method(profile.methods.insert(&c, &m, &d)));
            }
            if let Some(c) = callee {
                node = tree.child_or_insert(node, NodeKind::Method(c));
            }
            let leaf = tree.child_or_insert(node, NodeKind::Method(class_frame));
            add(
                tree.extra_mut(leaf),
                [objects, b, scale(live).min(objects), scale(live_bytes)],
            );
            if !ages.is_empty() {
                leaf_ages.entry((thread, leaf)).or_default().extend(ages);
            }
        }
    }
    let thread_names: Vec<(String, u64)> = trees.keys().cloned().collect();
    let path_generations = leaf_ages
        .into_iter()
        .filter_map(|((thread, leaf), ages)| {
            let i = thread_names.iter().position(|n| *n == thread)?;
            Some(((i, leaf), ages.len() as u32))
        })
        .collect();
    profile.threads = trees
        .into_iter()
        .map(|((name, id), tree)| {
            let virtual_thread = t.threads.iter().any(|v| v.0 == id && v.1 == name && v.2);
            ThreadProfile {
                virtual_thread,
                ..ThreadProfile::new(name, id, tree)
            }
        })
        .collect();
    profile.alloc = Some(AllocSummary {
        track_every: every,
        gc_count: gc,
        untracked: t.untracked,
        stacks_dropped: t.stacks_dropped,
        classes: class_rows,
        sites: site_rows,
        suspects,
        path_generations,
        alloc_classes: crate::narrow::selection(),
    });
}

/// Adds objects, bytes, live and live bytes to a leaf's values ([`path_metrics`]).
///
/// [`path_metrics`]: ferrofluid_profile::alloc::path_metrics
fn add(values: &mut [u64], add: [u64; 4]) {
    for (v, a) in values.iter_mut().zip(add) {
        *v += a;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_bytes_count_header_and_elements() {
        assert_eq!(site_bytes("[J", 3, 30, Some(96)), 3 * 16 + 30 * 8);
        assert_eq!(
            site_bytes("[Ljava/lang/String;", 2, 10, None),
            2 * 16 + 10 * 4
        );
        assert_eq!(site_bytes("[Z", 1, 5, None), 16 + 5);
        assert_eq!(site_bytes("java/lang/Object", 7, 0, Some(16)), 112);
    }

    /// The committed class file is what javac makes of the committed source.
    #[test]
    fn class_file_matches_its_source() {
        let Some(made) =
            crate::testing::compiled("src/memory/Alloc.java", "11", "ferrofluid/Alloc.class")
        else {
            return;
        };
        let committed: &[u8] = include_bytes!("Alloc.class");
        assert!(made == committed, "recompile Alloc.java (see its comment)");
    }

    #[test]
    fn sites_keep_their_ids() {
        let a = site_id(9_000_001, 4, "[J");
        let b = site_id(9_000_001, 9, "[J");
        assert_ne!(a, b);
        assert_eq!(site_id(9_000_001, 4, "[J"), a);
    }
}
