//! The reveal thread (`reveal=async`): threads reaching new code queue what is to be revealed
//! and proceed; the thread gathers requests over a short window and retransforms the classes
//! they chose in one call.

use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use ferrofluid_jvmti::{JavaVm, JniEnv, Jvmti};

use crate::probe::flags;
use crate::probe::thread::SWITCHES;
use crate::runtime::jvm;

use super::classes::CACHE;
use super::reveal::plan_and_retransform;
use super::{lock, ClassKey, SESSIONS};

/// How long the reveal thread waits for more requests before it plans and retransforms what
/// is queued: threads reaching new code tend to come together (many requests on one path), and
/// each RetransformClasses call is a safepoint that sends the dependent compiled code back to
/// the interpreter, so a few calls for many classes cost far less than one per class.
pub(super) const REVEAL_WINDOW: Duration = Duration::from_millis(5);

/// Whether the next sessions reveal lazily on the agent's own thread (`reveal=async`) rather
/// than on the thread that reached new code.
pub fn set_reveal(asynchronous: bool) {
    SESSIONS.asynchronous.store(asynchronous, Ordering::SeqCst);
}

/// A revelation the reveal thread carries out.
pub(super) enum Queued {
    /// The first invocation of this global method id.
    Invocation(u32),
    /// A deferred site (global id) reached.
    Site(u32),
    /// A receiver of a class reached a receiver site (global id).
    Receiver(u32, ClassKey),
}

/// What the reveal thread is asked to do.
pub(super) struct Pending {
    items: Vec<Queued>,
    /// A reveal thread serves the queue.
    running: bool,
    /// The reveal thread is to end.
    stop: bool,
}

/// The reveal thread, the requests queued for it, and the signal that some came.
pub(crate) struct RevealQueue {
    pending: Mutex<Pending>,
    queued: Condvar,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl RevealQueue {
    pub(super) const fn new() -> RevealQueue {
        RevealQueue {
            pending: Mutex::new(Pending {
                items: Vec::new(),
                running: false,
                stop: false,
            }),
            queued: Condvar::new(),
            thread: Mutex::new(None),
        }
    }
}

/// Hands `item` to the reveal thread; false if none runs (the caller reveals it itself).
pub(super) fn enqueue(item: Queued) -> bool {
    let mut q = lock(&SESSIONS.queue.pending);
    if !q.running || q.stop {
        return false;
    }
    q.items.push(item);
    if SWITCHES.collecting.load(Ordering::Relaxed) {
        SWITCHES.unrevealed.fetch_add(1, Ordering::Relaxed);
    }
    SESSIONS.queue.queued.notify_one();
    true
}

/// Lets threads queue requests for a reveal thread about to start.
pub(super) fn accept_requests() {
    let mut q = lock(&SESSIONS.queue.pending);
    q.items.clear();
    q.stop = false;
    q.running = true;
}

/// Starts the reveal thread; without one, what was queued so far is revealed here and the
/// threads reveal for themselves from then on.
pub(super) fn start_reveal_thread(jvmti: Jvmti, env: &JniEnv<'_>) {
    let spawned = match jvm::java_vm() {
        Some(vm) => std::thread::Builder::new()
            .name("ferrofluid-reveal".into())
            .spawn(move || reveal_thread(vm, jvmti))
            .map_err(|e| e.to_string()),
        None => Err("the agent is dormant".into()),
    };
    match spawned {
        Ok(handle) => *lock(&SESSIONS.queue.thread) = Some(handle),
        Err(e) => {
            log::warn!("no reveal thread ({e}): revelation runs on the threads that need it");
            let items = {
                let mut q = lock(&SESSIONS.queue.pending);
                q.running = false;
                std::mem::take(&mut q.items)
            };
            if !items.is_empty() {
                reveal_queued(jvmti, env, items);
            }
        }
    }
}

/// Ends the reveal thread, after the retransformation it may be doing. What it had not
/// revealed yet is dropped with the session.
pub(super) fn stop_reveal_thread() {
    {
        let mut q = lock(&SESSIONS.queue.pending);
        q.stop = true;
        q.running = false;
        SESSIONS.queue.queued.notify_all();
    }
    let handle = lock(&SESSIONS.queue.thread).take();
    if let Some(handle) = handle {
        let _ = handle.join();
    }
    lock(&SESSIONS.queue.pending).items.clear();
}

/// The reveal thread: waits for requests, then stays attached to the JVM while they keep
/// coming (a window passing with nothing queued ends a burst).
pub(super) fn reveal_thread(vm: JavaVm, jvmti: Jvmti) {
    loop {
        {
            let mut q = lock(&SESSIONS.queue.pending);
            while q.items.is_empty() && !q.stop {
                q = SESSIONS
                    .queue
                    .queued
                    .wait(q)
                    .unwrap_or_else(|p| p.into_inner());
            }
            if q.stop {
                return;
            }
        }
        let attached = vm.with_attached_thread("ferrofluid-reveal", |env| {
            ferrofluid_jvmti::ffi_guard("reveal thread", (), || loop {
                std::thread::sleep(REVEAL_WINDOW);
                let items = {
                    let mut q = lock(&SESSIONS.queue.pending);
                    if q.stop {
                        return;
                    }
                    std::mem::take(&mut q.items)
                };
                if items.is_empty() {
                    return;
                }
                reveal_queued(jvmti, env, items);
            })
        });
        if let Err(e) = attached {
            // What stays queued is dropped with the session: those methods keep their probes
            // but their callees are not revealed.
            log::warn!("reveal thread: attaching to the JVM: {e}; revelation runs on the threads that need it");
            lock(&SESSIONS.queue.pending).running = false;
            return;
        }
    }
}

/// Plans every queued revelation, then retransforms the classes they chose together.
pub(super) fn reveal_queued(jvmti: Jvmti, env: &JniEnv<'_>, items: Vec<Queued>) {
    let _reveal = lock(&SESSIONS.reveal);
    let started = std::time::Instant::now();
    let calls = CACHE.retransform_calls.load(Ordering::Relaxed);
    let classes = CACHE.retransform_classes.load(Ordering::Relaxed);
    let mut chosen = 0;
    let kinds = items.iter().fold([0; 3], |mut k, i| {
        k[match i {
            Queued::Invocation(_) => 0,
            Queued::Site(_) => 1,
            Queued::Receiver(..) => 2,
        }] += 1;
        k
    });
    plan_and_retransform(jvmti, env, "asynchronous revelation", |s| {
        for item in &items {
            let batch = match item {
                Queued::Invocation(id) => id
                    .checked_sub(s.base)
                    .map(|pid| s.planner.first_invocation(pid)),
                Queued::Site(site) => site
                    .checked_sub(s.site_base)
                    .map(|local| s.planner.site_reached(local)),
                Queued::Receiver(site, key) => site
                    .checked_sub(s.site_base)
                    .map(|local| s.planner.receiver_seen(local, key.0, &key.1)),
            };
            match batch {
                Some(Ok(batch)) => {
                    chosen += batch.method_count();
                    s.apply(batch, None)
                }
                Some(Err(e)) => log::warn!("asynchronous revelation: {e}"),
                None => {}
            }
        }
        true
    });
    for item in &items {
        if let Queued::Invocation(id) = item {
            flags::clear_bits(*id, flags::PENDING);
        }
    }
    let classes = CACHE.retransform_classes.load(Ordering::Relaxed) - classes;
    if chosen > 0 || classes > 0 {
        log::info!(
            "asynchronous revelation: {} first invocations, {} deferred sites, {} receivers: {chosen} methods, {classes} classes in {} RetransformClasses calls, {:.1} ms",
            kinds[0],
            kinds[1],
            kinds[2],
            CACHE.retransform_calls.load(Ordering::Relaxed) - calls,
            started.elapsed().as_secs_f64() * 1e3
        );
    }
}
