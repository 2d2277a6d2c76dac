//! The `alloc` engine's tracking (docs/modes/alloc.md): the Java counters of `ferrofluid/Alloc`
//! (read at snapshots), the tracked objects (tagged in the engine's own JVMTI environment, their
//! deaths seen by `ObjectFree`), their allocation stacks, the GC count, and the generation
//! history sampled about every second.
//!
//! Locks: the sites' lock is taken in ClassFileLoadHook (no JVMTI call under it); the tracker's
//! and the frames' only around plain Rust work, never across a JNI or JVMTI call, so
//! `ObjectFree` (which takes the tracker's) never waits on a thread stopped in the JVM.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ferrofluid_jvmti::{JavaVm, JniEnv, Jvmti, JvmtiCell, Object};
use rustc_hash::FxHashMap;

use super::ffi as jni;
use super::STATE;
use crate::engine::Context;
use crate::probe::upcalls::upcalls;

/// What tracking reads and records into: the session's settings, its tracked objects and
/// their stacks.
pub struct Tracking {
    /// The engine's JVMTI environment while a session collects.
    env: JvmtiCell,
    /// Objects are measured and tracked (between `start` and `stop`).
    pub on: AtomicBool,
    /// Every `every`-th allocation of a site is tracked (and the first).
    pub every: AtomicU64,
    /// Or, when positive, one each time about this many more bytes were allocated at a site.
    pub bytes: AtomicU64,
    /// Frames of a tracked object's stack, at most.
    depth: AtomicU32,
    /// Garbage collections finished since the session started.
    pub gcs: AtomicU64,
    /// The session, in the high half of every tag it sets.
    epoch: AtomicU32,
    pub tracker: Mutex<Option<Tracker>>,
    pub frames: Mutex<Option<Frames>>,
}

impl Tracking {
    pub const fn new() -> Tracking {
        Tracking {
            env: JvmtiCell::new(),
            on: AtomicBool::new(false),
            every: AtomicU64::new(10),
            bytes: AtomicU64::new(0),
            depth: AtomicU32::new(DEFAULT_STACK_DEPTH),
            gcs: AtomicU64::new(0),
            epoch: AtomicU32::new(0),
            tracker: Mutex::new(None),
            frames: Mutex::new(None),
        }
    }
}

fn tracking() -> &'static Tracking {
    &STATE.tracking
}

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether objects are tracked now, and the engine's environment that tags them.
pub fn environment() -> Option<ferrofluid_jvmti::Jvmti> {
    tracking()
        .on
        .load(Ordering::Relaxed)
        .then(|| tracking().env.get())
        .flatten()
}

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

/// One tracked object.
#[derive(Clone, Copy)]
pub struct Tracked {
    pub site: u32,
    pub stack: u32,
    pub size: u64,
    /// The GC count when it was allocated.
    pub gc: u64,
    /// The allocating thread (index in the tracker's threads).
    pub thread: u32,
}

#[derive(Default)]
pub struct Tracker {
    /// Slot `i` holds the object tagged `(epoch << 32) | (i + 1)`.
    pub slots: Vec<Option<Tracked>>,
    pub free: Vec<u32>,
    pub live: usize,
    /// Stacks: frame ids, innermost first.
    pub stacks: Vec<Box<[u32]>>,
    pub stack_ids: FxHashMap<Box<[u32]>, u32>,
    /// Stack ids by raw stack: how it was taken ([`StackStart`]) and its `jmethodID`s, which
    /// HotSpot never reuses.
    pub raw_stacks: FxHashMap<Box<[usize]>, u32>,
    /// The allocating threads: Java id and name, as the other modes report them, and whether
    /// it is a virtual thread.
    pub threads: Vec<(u64, String, bool)>,
    /// Per site: objects tracked, and the measured size of its first object.
    pub tracked: FxHashMap<u32, u64>,
    pub sizes: FxHashMap<u32, u64>,
    /// Per (site, stack, thread): objects tracked on that path.
    pub paths: FxHashMap<(u32, u32, u32), u64>,
    pub untracked: u64,
    pub stacks_dropped: u64,
    /// Generation counts per class, sampled about every second.
    pub history: BTreeMap<String, Vec<u32>>,
    pub samples: usize,
    pub last_sample: Option<Instant>,
    /// The counters read when collection stopped.
    pub final_counts: Option<Vec<i64>>,
}

/// Method names of stack frames: `jmethodID` → frame id, and frame id → name.
#[derive(Default)]
pub struct Frames {
    pub ids: FxHashMap<usize, u32>,
    pub names: Vec<(String, String, String)>,
}

thread_local! {
    /// This thread's index in the tracker's threads, with the epoch it was given in.
    static THREAD: Cell<(u32, u32)> = const { Cell::new((u32::MAX, u32::MAX)) };
    static STACK: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// Configures the next session: which objects are tracked (every `every`-th of a site, or by
/// `bytes` when positive) and the stack depth.
pub fn configure(every: u64, bytes: u64, depth: u32) {
    tracking().every.store(every, Ordering::SeqCst);
    tracking().bytes.store(bytes, Ordering::SeqCst);
    tracking().depth.store(depth.clamp(1, 1024), Ordering::SeqCst);
}

/// Defines and resets the counting class, on a Java thread, before probes are inserted.
pub fn install(env: &JniEnv<'_>, jvmti: Option<Jvmti>) -> Result<(), String> {
    jni::install(
        env,
        jvmti,
        tracking().every.load(Ordering::SeqCst),
        tracking().bytes.load(Ordering::SeqCst),
    )
}

/// Starts a session: forgets the last one's tracked objects, opens the engine's JVMTI
/// environment (tags, `ObjectFree`, GC events) and starts measuring.
pub fn start(ctx: &dyn Context) {
    stop(ctx);
    *lock(&tracking().tracker) = Some(Tracker::default());
    *lock(&tracking().frames) = Some(Frames::default());
    tracking().gcs.store(0, Ordering::SeqCst);
    tracking().epoch.fetch_add(1, Ordering::SeqCst);
    super::native::clear();
    match ctx.vm().map(jni::open_env) {
        Some(Ok(env)) => tracking().env.set(Some(env)),
        Some(Err(e)) => log::warn!("alloc: no JVMTI environment for tracking ({e}): counting only"),
        None => {}
    }
    tracking().on.store(true, Ordering::SeqCst);
    if let Some(jvmti) = ctx.jvmti() {
        jni::jni::install(jvmti);
    }
}

/// Stops measuring: keeps the final counts and disposes the environment, which removes every
/// tag it set.
pub fn stop(ctx: &dyn Context) {
    // The deaths seen by the GCs so far first: the profile written after this reads the
    // tracked objects as they are left here.
    flush_frees(ctx.vm());
    if !tracking().on.swap(false, Ordering::SeqCst) {
        return;
    }
    if let Some(jvmti) = ctx.jvmti() {
        jni::jni::uninstall(jvmti);
    }
    let counts = read_final_counts(ctx.vm());
    if let Some(t) = lock(&tracking().tracker).as_mut() {
        t.final_counts = counts;
    }
    if let Some(env) = tracking().env.get() {
        tracking().env.set(None);
        jni::close_env(env);
    }
}

/// Discards what was measured and goes on.
pub fn reset(ctx: &dyn Context) {
    let was = tracking().on.load(Ordering::SeqCst);
    stop(ctx);
    if let Some(vm) = ctx.vm() {
        let _ = vm.with_attached_thread("ferrofluid-alloc", |env| {
            if let Err(e) = install(env, ctx.jvmti()) {
                log::warn!("alloc: {e}");
            }
        });
    }
    if was {
        start(ctx);
    }
}

pub fn read_counts(vm: Option<JavaVm>) -> Option<Vec<i64>> {
    counts_read(vm, false)
}

/// As [`read_counts`], at the end of a session: then lets `ferrofluid/Alloc` drop its counters.
fn read_final_counts(vm: Option<JavaVm>) -> Option<Vec<i64>> {
    counts_read(vm, true)
}

fn counts_read(vm: Option<JavaVm>, forget: bool) -> Option<Vec<i64>> {
    let sites = super::sites::count();
    let vm = vm?;
    vm.with_attached_thread("ferrofluid-alloc", |env| {
        let mut counts = jni::read_counts(env, sites)?;
        let read = super::vm::add_counts(env, &mut counts);
        if forget {
            jni::forget_counts(env);
        }
        read.then_some(counts)
    })
    .ok()
    .flatten()
}

/// Takes in the deaths GCs have seen that the JVM has not reported yet, so that what is read
/// next counts no freed object as live (or as having survived a GC). Not under the tracker's
/// lock: the deaths come in through [`freed`], which takes it.
pub fn flush_frees(vm: Option<JavaVm>) {
    let (Some(vm), Some(jvmti)) = (vm, environment()) else {
        return;
    };
    let _ = vm.with_attached_thread("ferrofluid-alloc", |_| jni::flush_object_free(jvmti));
}

/// A GC finished (in the GC's callback: count only).
pub fn gc_finished() {
    tracking().gcs.fetch_add(1, Ordering::Relaxed);
}

/// A tracked object died (`ObjectFree`, maybe during a GC: no JNI or JVMTI call).
pub fn freed(tag: i64) {
    let tag = tag as u64;
    if (tag >> 32) as u32 != tracking().epoch.load(Ordering::Relaxed) {
        return;
    }
    let slot = (tag & 0xffff_ffff) as usize;
    let mut t = lock(&tracking().tracker);
    let Some(t) = t.as_mut() else { return };
    if let Some(s) = slot.checked_sub(1).and_then(|i| t.slots.get_mut(i)) {
        if s.take().is_some() {
            t.free.push((slot - 1) as u32);
            t.live -= 1;
        }
    }
}

/// Whether objects are tracked at all (else only each site's first is measured).
pub fn tracks() -> bool {
    tracking().every.load(Ordering::Relaxed) > 0 || tracking().bytes.load(Ordering::Relaxed) > 0
}

/// `Alloc.sample`: the first object of `site` (measured) or a later one (tracked); its size (0:
/// not measured).
pub fn sampled(env: &JniEnv<'_>, object: Object<'_>, site: u32) -> u64 {
    sampled_at(env, object, site, StackStart::Alloc)
}

/// Where the Java frames of a tracked object's allocation stack begin.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum StackStart {
    /// Under `Alloc.sample`, `Alloc.tracked` and `Alloc.alloc`.
    Alloc,
    /// Under `Alloc.sampleVm` and more frames of the counting classes (`vm`, `inner`, and
    /// `AllocScope`'s), which are left out.
    Counting,
    /// At the top: a JNI function called by a native method.
    Jni,
}

/// As [`sampled`], the stack's Java frames beginning as `frames` says.
pub fn sampled_at(env: &JniEnv<'_>, object: Object<'_>, site: u32, frames: StackStart) -> u64 {
    if !tracking().on.load(Ordering::Relaxed) {
        return 0;
    }
    let Some(jvmti) = tracking().env.get() else { return 0 };
    let size = jni::object_size(jvmti, object).unwrap_or(0);
    {
        let mut t = lock(&tracking().tracker);
        let Some(t) = t.as_mut() else { return size };
        t.sizes.entry(site).or_insert(size);
        if !tracks() {
            return size;
        }
        if t.live >= MAX_TRACKED {
            t.untracked += 1;
            return size;
        }
    }
    let gc = tracking().gcs.load(Ordering::Relaxed);
    let epoch = tracking().epoch.load(Ordering::Relaxed);
    // The raw stack (`jmethodID`s, then how it was taken) is looked up first: a stack seen
    // before costs one hash of its frames, not a lookup of each frame's id.
    let found = STACK.with(|s| {
        let mut s = s.borrow_mut();
        let depth = tracking().depth.load(Ordering::Relaxed) as usize;
        match frames {
            StackStart::Alloc => jni::stack(jvmti, env, depth, &mut s),
            StackStart::Jni => jni::stack_from(jvmti, 0, depth, &mut s),
            // `vm`/`inner` (recursive) and `AllocScope`'s frames come first: dropped when named.
            StackStart::Counting => jni::stack(jvmti, env, depth + 8, &mut s),
        }
        s.push(frames as usize);
        let known = lock(&tracking().tracker)
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
        let mut t = lock(&tracking().tracker);
        let Some(t) = t.as_mut() else { return size };
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
    size
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
    let depth = tracking().depth.load(Ordering::Relaxed) as usize;
    let f = lock(&tracking().frames);
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
        let f = lock(&tracking().frames);
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
        let mut f = lock(&tracking().frames);
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
    let mounted = crate::probe::vthread::mounted_key().is_some();
    let (index, given) = THREAD.with(Cell::get);
    if given == epoch && !mounted {
        return index;
    }
    let (id, name) = upcalls()
        .map(|u| u.thread_identity(env))
        .unwrap_or((None, None));
    let name = match (name.filter(|n| !n.is_empty()), id) {
        (Some(name), _) => name,
        (None, Some(id)) if mounted => format!("virtual#{id}"),
        (None, _) => "<unnamed>".into(),
    };
    let index = {
        let mut t = lock(&tracking().tracker);
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
    if !tracking().on.load(Ordering::Relaxed) || !tracks() {
        return;
    }
    // The collector ticks far more often than once a second: the throttle comes first, before
    // anything that costs (naming every site took a sixth of the CPU of a tracked run).
    {
        let mut t = lock(&tracking().tracker);
        let Some(t) = t.as_mut() else { return };
        let now = Instant::now();
        if t.last_sample
            .is_some_and(|l| now - l < Duration::from_secs(1))
        {
            return;
        }
        t.last_sample = Some(now);
    }
    let classes = super::sites::classes();
    let gc = tracking().gcs.load(Ordering::Relaxed);
    let mut t = lock(&tracking().tracker);
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

/// How Alloc.java is compiled (see its comment).
#[cfg(test)]
pub(super) const JAVAC: [&str; 9] = [
    "-Xlint:-options",
    "-source",
    "11",
    "-target",
    "11",
    "--add-exports",
    "java.base/jdk.internal.vm.annotation=ALL-UNNAMED",
    "--add-exports",
    "java.base/jdk.internal.misc=ALL-UNNAMED",
];

#[cfg(test)]
mod tests {
    /// The committed class file is what javac makes of the committed source.
    #[test]
    fn class_file_matches_its_source() {
        let Some(made) = crate::testing::compiled_by(
            &["src/engine/alloc/Alloc.java"],
            &super::JAVAC,
            "ferrofluid/Alloc.class",
        ) else {
            return;
        };
        let committed: &[u8] = include_bytes!("Alloc.class");
        assert!(made == committed, "recompile Alloc.java (see its comment)");
    }

    /// 64 threads racing at two sites count exactly, whether they count in sets of their own
    /// with plain adds or in the shared one (more threads than sets, or the sets' budget spent
    /// after ten chunks), counting only, by bytes and every N-th.
    #[test]
    fn racing_threads_count_exactly_in_their_sets_and_the_shared_one() {
        for args in [
            ["0", "0", "-"],
            ["0", "1024", "-"],
            ["7", "0", "-"],
            ["0", "0", "1920"],
        ] {
            let args = if args[2] == "-" { &args[..2] } else { &args[..] };
            let Some(out) = crate::testing::run_java(
                &[
                    "src/engine/alloc/Alloc.java",
                    "tests/java/ferrofluid/AllocDriver.java",
                ],
                &super::JAVAC,
                "ferrofluid.AllocDriver",
                args,
            ) else {
                return;
            };
            assert_eq!(
                out,
                "128000 0\n128000 384000\n0 0\n0 0\n",
                "{args:?}: counts, then none once forgotten"
            );
        }
    }
}
