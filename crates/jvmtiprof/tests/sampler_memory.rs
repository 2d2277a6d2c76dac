//! What a sampler leaves behind once stopped, in a JVM created in this process: the closures of
//! its JVMTI environment are never freed (a callback may still run when the environment is
//! disposed), so they must not keep its state (the code map of every compiled method, the thread
//! tables) alive. Counted with this binary's own global allocator.
#![allow(unsafe_code)]

#[path = "../../jvmti/tests/common/mod.rs"]
mod live;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use jvmtiprof::sampler::{Config, Sampler};

/// Bytes allocated and not freed, by anything in this process that uses Rust's allocator.
static LIVE: AtomicI64 = AtomicI64::new(0);

struct Counting;

// SAFETY: every call goes to the system allocator with the caller's arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// One sampler at a time in this process (a second one would be refused as busy).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Starts a sampler (which replays every compiled method into its code map), samples a little
/// and stops it, dropping its samples.
fn cycle(vm: jvmtiprof::JavaVm, env: &jvmtiprof::JniEnv<'_>) {
    let (sampler, samples) =
        Sampler::start(vm, env, Config::cpu(Duration::from_millis(1))).expect("the sampler starts");
    std::thread::sleep(Duration::from_millis(20));
    sampler.stop();
    drop(samples);
}

/// Ten start/stop cycles keep less than 4 KB each: a stopped sampler's code map (tens of KB
/// with the few hundred methods this JVM compiled) was kept for the process's life.
#[test]
fn a_stopped_sampler_keeps_almost_nothing() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let vm = live::vm();
    live::with_env("sampler-memory", |_, env| {
        // The first cycle makes what stays for the process (the thread registry, the handlers).
        cycle(vm, env);
        cycle(vm, env);
        let before = LIVE.load(Ordering::Relaxed);
        for _ in 0..10 {
            cycle(vm, env);
        }
        let kept = LIVE.load(Ordering::Relaxed) - before;
        assert!(kept < 40_000, "10 sampler cycles kept {kept} bytes");
    });
}

/// The process's resident memory in bytes (`VmRSS`).
fn resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// Samplers started one after another, each from a thread of its own that lives on (as an
/// agent's sessions are, beside the application's threads), leave none of their 16 MiB buffers
/// resident: allocated on the heap, each buffer was written whole at its start and, freed,
/// stayed at the top of its thread's malloc arena, which `malloc_trim` does not trim: up to one
/// buffer per arena for the process's life.
#[test]
fn stopped_samplers_leave_no_buffer_resident() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let vm = live::vm();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let mut releases = Vec::new();
    let mut threads = Vec::new();
    let mut session = || {
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let done = done_tx.clone();
        threads.push(std::thread::spawn(move || {
            live::with_env("sampler-rss", |_, env| cycle(vm, env));
            done.send(()).unwrap();
            // Alive until the end, so that the next session's thread gets an arena of its own.
            let _ = release_rx.recv();
        }));
        done_rx.recv().unwrap();
        releases.push(release_tx);
    };
    session();
    session();
    let before = resident();
    for _ in 0..6 {
        session();
    }
    let grown = resident().saturating_sub(before);
    drop(releases);
    for t in threads {
        t.join().unwrap();
    }
    assert!(
        grown < 16 << 20,
        "6 sampler sessions left {} MiB more resident",
        grown >> 20
    );
}
