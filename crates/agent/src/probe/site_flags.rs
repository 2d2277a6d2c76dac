//! The Java side of deferred sites: the static fields `active` and `fired` of `ferrofluid/Hooks`,
//! which the Java body of `Hooks.site(int)` reads so that a site costs no JNI call when no thread is
//! inside a root's extent or once its calls are revealed (`ferrofluid_classfile::hooks_class`).
//!
//! **`fired`** is a `byte[]` indexed by global site id: `fired[site] = 1` once the site's calls are
//! instrumented (set under the revelation lock, after the retransformation). It grows by replacing
//! it with a bigger copy (`SetStaticObjectField`); a thread still reading the old array, or a site
//! beyond its end, only takes the native path, whose own per-site flag (`flags::SITES`) answers.
//! Ids beyond [`MAX_SITES`] are never flagged (memory stays bounded at 4 MiB). A session's end
//! drops the array (site ids are never reused, so stale flags could not mislead anyway).
//!
//! **`seen`** is a `Class[]` indexed by receiver site id: `seen[site]` is a receiver class whose
//! callee at the site is instrumented, so that `Hooks.receiver` returns in Java for it. It is
//! written only when a thread revealed (site, class), after the retransformation; a site keeps
//! the class revealed last (a polymorphic site answers in Java for one of its classes, the
//! others take the native path, whose per-thread set answers). It grows like `fired`, copying
//! the old entries, up to [`MAX_SEEN`] sites, and is dropped at a session's end (which also
//! lets the classes go).
//!
//! **`dropped`** is a `byte[]` indexed by global method id: the level to which `adaptive` dropped
//! the method's probes (1: its entry probe returns in Java; 2: its exit probes too). It grows and
//! is dropped with the session like `fired`, up to [`MAX_METHODS`] ids.
//!
//! **`active`** is nonzero while some thread is inside a root's extent. A thread inside one must
//! never see 0 (its deferred sites would not reveal their calls); a stale 1 while nobody is inside
//! only costs native calls that return at once. The count of threads inside lives in a word
//! with a *published* bit, which is set only after `active = 1` was written and cleared (by the
//! last thread out, with a compare-and-swap from "0 threads, published") before `active = 0` is
//! written; both writes happen under the fields' lock. A thread entering adds itself with one atomic add:
//! if the bit was set, `active` is 1 and stays 1 while the thread is counted (the bit can only be
//! cleared at a count of 0); if not, it takes the lock and publishes before it proceeds. So
//! entering a root's extent costs one atomic add unless the thread is the first one in, and
//! leaving one compare-and-swap unless it is the last one out. The word also holds an *epoch*,
//! bumped when a session ends ([`reset`]): a thread counted in an older epoch (its session gone)
//! never subtracts itself from the new count. The field need not be `volatile`: a thread changes
//! its own state only inside a native hook call, across which compiled code cannot keep a field
//! in a register.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use ferrofluid_jvmti::{
    Class, GlobalClass, GlobalRef, JniEnv, Object, StaticIntField, StaticObjectField,
};

/// Site ids from here on are never flagged in `fired` (they take the native path).
pub const MAX_SITES: usize = 1 << 22;
/// Method ids from here on never get a `dropped` level (their probes stay).
pub const MAX_METHODS: usize = 1 << 22;
/// Receiver site ids from here on never get a `seen` entry (at most 1 MiB of references).
pub const MAX_SEEN: usize = 1 << 17;

/// The count of threads inside a root's extent and the hooks class's fields.
struct HooksFields {
    /// The epoch (high 32 bits, from 1), the threads inside a root's extent times [`ONE`], and
    /// [`PUBLISHED`].
    state: AtomicU64,
    /// Serialises the writes of both fields and the arrays' growth.
    fields: Mutex<Fields>,
}

// Process-wide: the probes, JVM natives without user data, count their threads in and out.
static HOOKS: HooksFields = HooksFields {
    state: AtomicU64::new(1 << EPOCH_SHIFT),
    fields: Mutex::new(Fields {
        active: None,
        fired: Bytes::EMPTY,
        dropped: Bytes::EMPTY,
        seen: None,
        class_class: None,
        seen_array: None,
        seen_len: 0,
    }),
};
/// `Hooks.active` is 1 (set after the write, cleared before the write of 0).
const PUBLISHED: u64 = 1;
/// One thread in the count.
const ONE: u64 = 2;
const EPOCH_SHIFT: u32 = 32;
/// The count and the published bit.
const LOW: u64 = (1 << EPOCH_SHIFT) - 1;

fn epoch(state: u64) -> u32 {
    (state >> EPOCH_SHIFT) as u32
}

/// The hooks class's fields, once [`install`] found them.
struct Fields {
    /// `active` (it holds the hooks class, `ferrofluid/Hooks`).
    active: Option<StaticIntField>,
    /// `fired`.
    fired: Bytes,
    /// `dropped` (no field when the class has none: defined by an older agent).
    dropped: Bytes,
    /// `seen`, `None` when the class has none (defined by an older agent).
    seen: Option<StaticObjectField>,
    /// `java.lang.Class`, the element class of `seen`.
    class_class: Option<GlobalClass>,
    /// The current `seen` array, if any.
    seen_array: Option<GlobalRef>,
    /// Its length.
    seen_len: usize,
}

/// A static `byte[]` field of the hooks class and the array it holds.
struct Bytes {
    /// The field, `None` when unknown.
    field: Option<StaticObjectField>,
    /// The current array, if any.
    array: Option<GlobalRef>,
    /// What the array holds (its length is the array's).
    values: Vec<u8>,
}

impl Bytes {
    const EMPTY: Bytes = Bytes {
        field: None,
        array: None,
        values: Vec::new(),
    };

    /// Drops the array: the field is null.
    fn clear(&mut self, env: &JniEnv<'_>) {
        if let Some(field) = &self.field {
            if publish_array(env, field, &mut self.array, None) {
                self.values = Vec::new();
            }
        }
    }

    /// `array[index] = value`, growing the array first (to a power of two up to `max`) if
    /// needed. False if the JVM refused or `index` is beyond `max`.
    fn set(&mut self, env: &JniEnv<'_>, index: usize, value: u8, max: usize) -> bool {
        let Some(field) = &self.field else {
            return false;
        };
        if index >= max {
            return false;
        }
        if index >= self.values.len() {
            let len = (index + 1).next_power_of_two().clamp(1024, max);
            let mut values = self.values.clone();
            values.resize(len, 0);
            values[index] = value;
            let Ok(array) = env.new_byte_array(len, &values) else {
                log::warn!("hooks flags: no array of {len} bytes");
                return false;
            };
            let published = publish_array(env, field, &mut self.array, Some(array));
            env.delete_local_ref(array);
            if published {
                self.values = values;
            }
            return published;
        }
        let Some(array) = &self.array else {
            return false;
        };
        self.values[index] = value;
        env.set_byte_array_region(array.as_local(), index, &[value])
            .is_ok()
    }
}

fn lock() -> std::sync::MutexGuard<'static, Fields> {
    HOOKS.fields.lock().unwrap_or_else(|p| p.into_inner())
}

/// Learns the hooks class's fields (once per library load) and clears them: `active = 0` and no
/// `fired` array. False when the class has no such fields (defined by an older agent in this JVM):
/// then deferred sites must stay off, since probes would call a `site` method it lacks.
pub fn install(env: &JniEnv<'_>, class: Class<'_>) -> bool {
    let mut f = lock();
    if f.active.is_none() {
        let has_site = env
            .static_method_exists(class, c"site", c"(I)V")
            .unwrap_or(false);
        let active = env.static_int_field(class, c"active");
        let fired = env.static_object_field(class, c"fired", c"[B");
        let (true, Ok(active), Ok(fired)) = (has_site, active, fired) else {
            log::warn!("ferrofluid/Hooks has no site(int), active or fired: deferred sites off");
            return false;
        };
        (f.active, f.fired.field) = (Some(active), Some(fired));
        if let Ok(dropped) = env.static_object_field(class, c"dropped", c"[B") {
            f.dropped.field = Some(dropped);
        }
        let seen = env.static_object_field(class, c"seen", c"[Ljava/lang/Class;");
        let class_class = env.find_class("java/lang/Class").and_then(|c| {
            let global = env.new_global(c);
            env.delete_local_ref(c.as_object());
            global
        });
        if let (Ok(seen), Ok(class_class)) = (seen, class_class) {
            (f.seen, f.class_class) = (Some(seen), Some(class_class));
        }
    }
    clear_arrays(env, &mut f);
    // `active` as the count says (a thread may be inside already, calibrating).
    let state = HOOKS.state.load(Ordering::Acquire);
    if state & PUBLISHED == 0 && state & LOW != 0 {
        drop(f);
        publish(&HOOKS.state, Some(env));
    } else if let Some(active) = &f.active {
        let _ = active.set(env, i32::from(state & PUBLISHED != 0));
    }
    true
}

/// Whether [`install`] found the fields (deferred sites may be used).
pub fn available() -> bool {
    lock().active.is_some()
}

/// Resets both fields at a session's end (after the generation changed): no `fired` array,
/// `active = 0`, nobody counted, in a new epoch (threads counted in the old one never subtract
/// themselves).
pub fn reset(env: &JniEnv<'_>) {
    let mut f = lock();
    let Some(active) = &f.active else {
        return;
    };
    let next = epoch(HOOKS.state.load(Ordering::Acquire))
        .wrapping_add(1)
        .max(1);
    HOOKS
        .state
        .store(u64::from(next) << EPOCH_SHIFT, Ordering::SeqCst);
    let _ = active.set(env, 0);
    clear_arrays(env, &mut f);
}

/// Points the static array field `field` at `array` (`None`: null) and drops the global
/// reference `held` kept to the array it replaces, which then holds one to the new array.
/// False, and nothing changed, if the JVM refused.
fn publish_array(
    env: &JniEnv<'_>,
    field: &StaticObjectField,
    held: &mut Option<GlobalRef>,
    array: Option<Object<'_>>,
) -> bool {
    let global = match array.map(|a| env.new_global(a)) {
        Some(Ok(global)) => Some(global),
        Some(Err(_)) => return false,
        None => None,
    };
    if field.set(env, array).is_err() {
        if let Some(global) = global {
            global.delete(env);
        }
        return false;
    }
    if let Some(old) = std::mem::replace(held, global) {
        old.delete(env);
    }
    true
}

fn clear_seen(env: &JniEnv<'_>, f: &mut Fields) {
    let Some(seen) = &f.seen else {
        return;
    };
    if publish_array(env, seen, &mut f.seen_array, None) {
        f.seen_len = 0;
    }
}

/// A thread revealed receiver class `receiver` at receiver site `site` (its callee is
/// instrumented): `seen[site] = receiver`, growing the array first if needed.
pub fn remember_receiver(env: &JniEnv<'_>, site: u32, receiver: Class<'_>) {
    let site = site as usize;
    if site >= MAX_SEEN {
        return;
    }
    let mut f = lock();
    let f = &mut *f;
    let (Some(seen), Some(class_class)) = (&f.seen, &f.class_class) else {
        return;
    };
    if site >= f.seen_len {
        let len = (site + 1).next_power_of_two().clamp(1024, MAX_SEEN);
        let Ok(array) = env.new_object_array(len, class_class.as_local()) else {
            log::warn!("receiver cache: no array of {len} classes");
            return;
        };
        if let Some(old) = &f.seen_array {
            let old = old.as_local();
            for i in 0..f.seen_len {
                if let Ok(Some(e)) = env.object_array_element(old, i) {
                    let _ = env.set_object_array_element(array, i, e);
                    env.delete_local_ref(e);
                }
            }
        }
        let published = publish_array(env, seen, &mut f.seen_array, Some(array));
        env.delete_local_ref(array);
        if !published {
            return;
        }
        f.seen_len = len;
    }
    if let Some(array) = &f.seen_array {
        let _ = env.set_object_array_element(array.as_local(), site, receiver.as_object());
    }
}

fn clear_arrays(env: &JniEnv<'_>, f: &mut Fields) {
    if f.active.is_none() {
        return;
    }
    f.fired.clear(env);
    f.dropped.clear(env);
    clear_seen(env, f);
}

/// Deferred site `site` has fired: its calls are instrumented. Sets `fired[site] = 1`, growing
/// the array first if needed.
pub fn mark(env: &JniEnv<'_>, site: u32) {
    lock().fired.set(env, site as usize, 1, MAX_SITES);
}

/// Whether probes can be dropped in Java (the hooks class has `dropped`).
pub fn can_drop() -> bool {
    lock().dropped.field.is_some()
}

/// `adaptive` dropped method `id`'s probes to `level` (1: its entry returns in Java, 2: every
/// probe). False if the array could not hold it.
pub fn drop_probes(env: &JniEnv<'_>, id: u32, level: u8) -> bool {
    lock().dropped.set(env, id as usize, level, MAX_METHODS)
}

/// Sets `active` to 1 until the session ends ([`reset`]), as if a thread were inside a root for
/// the whole session: with no root, every thread records, so no probe may return in Java.
pub fn hold_active(env: &JniEnv<'_>) {
    let _ = entered(&HOOKS.state, Some(env));
}

/// [`entered_by`] with the raw `JNIEnv` a probe's native received.
#[inline]
pub fn thread_entered(env: *mut ferrofluid_jvmti::sys::JNIEnv) -> u32 {
    crate::ffi::with_env(env, entered_by)
}

/// [`left_by`] with the raw `JNIEnv` a probe's native received.
#[inline]
pub fn thread_left(env: *mut ferrofluid_jvmti::sys::JNIEnv, counted_in: u32) {
    crate::ffi::with_env(env, |jni| left_by(jni, counted_in))
}

/// This thread entered a root's extent (its root depth left 0): it is counted, and `active` is 1
/// when this returns (unless `env` is `None`: no Java to tell). Returns the epoch it was counted
/// in, for [`left_by`].
#[inline]
pub fn entered_by(env: Option<&JniEnv<'_>>) -> u32 {
    entered(&HOOKS.state, env)
}

#[inline]
fn entered(state: &AtomicU64, env: Option<&JniEnv<'_>>) -> u32 {
    let old = state.fetch_add(ONE, Ordering::AcqRel);
    if old & PUBLISHED == 0 {
        publish(state, env);
    }
    epoch(old)
}

#[cold]
fn publish(state: &AtomicU64, env: Option<&JniEnv<'_>>) {
    let Some(env) = env else {
        return;
    };
    let f = lock();
    let Some(active) = &f.active else {
        return;
    };
    let now = state.load(Ordering::Acquire);
    // Nobody inside: a reset came in between, and this thread's session is gone.
    if now & PUBLISHED == 0 && now & LOW != 0 && active.set(env, 1).is_ok() {
        state.fetch_or(PUBLISHED, Ordering::AcqRel);
    }
}

/// This thread left every root's extent, after [`entered_by`] returned `counted_in`. Does
/// nothing if the epoch changed since (the count was reset with the session). With no `env`,
/// the last thread out leaves `active` at 1.
#[inline]
pub fn left_by(env: Option<&JniEnv<'_>>, counted_in: u32) {
    left(&HOOKS.state, env, counted_in)
}

#[inline]
fn left(state: &AtomicU64, env: Option<&JniEnv<'_>>, counted_in: u32) {
    let mut now = state.load(Ordering::Acquire);
    loop {
        if epoch(now) != counted_in || now & LOW < ONE {
            return;
        }
        match state.compare_exchange_weak(now, now - ONE, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => break,
            Err(changed) => now = changed,
        }
    }
    if now & LOW == ONE + PUBLISHED {
        unpublish(state, env, counted_in);
    }
}

#[cold]
fn unpublish(state: &AtomicU64, env: Option<&JniEnv<'_>>, counted_in: u32) {
    let Some(env) = env else {
        return;
    };
    let f = lock();
    let Some(active) = &f.active else {
        return;
    };
    // Only if nobody entered meanwhile; an entering thread waits for the lock, then publishes.
    let epoch = u64::from(counted_in) << EPOCH_SHIFT;
    if state
        .compare_exchange(
            epoch | PUBLISHED,
            epoch,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_ok()
    {
        let _ = active.set(env, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a JVM (null env) nothing is published, but the count and epochs behave: a
    /// thread counted before a reset never subtracts itself afterwards. (A word of its own:
    /// other tests' threads enter roots through the hooks.)
    #[test]
    fn counts_survive_resets_without_underflow() {
        let state = AtomicU64::new(1 << EPOCH_SHIFT);
        let null = None;
        let e = entered(&state, null);
        let f = entered(&state, null);
        assert_eq!((e, f), (1, 1));
        assert_eq!(state.load(Ordering::SeqCst) & LOW, 2 * ONE);
        left(&state, null, f);
        assert_eq!(state.load(Ordering::SeqCst) & LOW, ONE);
        // A reset (what `reset` does to the word).
        state.store(2 << EPOCH_SHIFT, Ordering::SeqCst);
        left(&state, null, e);
        assert_eq!(state.load(Ordering::SeqCst), 2 << EPOCH_SHIFT);
        let g = entered(&state, null);
        assert_eq!(g, 2);
        left(&state, null, g);
        left(&state, null, g);
        assert_eq!(state.load(Ordering::SeqCst), 2 << EPOCH_SHIFT);
    }
}
