//! The Rust side of the hooks without the JVM: the cost of one enter+exit pair in the hot path
//! (flags, thread-local state, clock, ring push), with a thread draining the ring as the collector
//! does. The JNI transition is measured by `benches/hooks/run.sh`; docs/PERFORMANCE.md has both.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ferrofluid_agent::bench as hooks;

const PAIRS: u32 = 20_000_000;

fn best_of(runs: usize, f: impl Fn()) -> f64 {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64 / f64::from(PAIRS)
        })
        .fold(f64::MAX, f64::min)
}

fn main() {
    hooks::init_clock();
    let (root, leaf, inactive) = (1u32, 2u32, 3u32);
    hooks::bench_method(root, true);
    hooks::bench_method(leaf, false);
    let clock = best_of(5, || {
        let mut sum = 0u64;
        for _ in 0..PAIRS {
            sum = sum.wrapping_add(hooks::now());
        }
        std::hint::black_box(sum);
    });
    let outside = best_of(5, || {
        for _ in 0..PAIRS {
            hooks::bench_pair(leaf);
        }
    });
    let not_instrumented = best_of(5, || {
        for _ in 0..PAIRS {
            hooks::bench_pair(inactive);
        }
    });
    hooks::prime_thread("bench");
    hooks::SWITCHES.collecting.store(true, Ordering::SeqCst);
    let stop = Arc::new(AtomicBool::new(false));
    let drainer = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut events = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let rings = hooks::RINGS.lock().unwrap().clone();
                for r in rings {
                    events += r.drain(|_, _| {}) as u64;
                }
            }
            events
        })
    };
    // Enter the root once, so every pair of `leaf` is recorded.
    hooks::bench_enter(root);
    let inside = best_of(5, || {
        for _ in 0..PAIRS {
            hooks::bench_pair(leaf);
        }
    });
    stop.store(true, Ordering::SeqCst);
    let _ = drainer.join();
    println!("clock read (hooks::now):               {clock:6.2} ns");
    println!("hook pair, method not active:          {not_instrumented:6.2} ns");
    println!("hook pair, outside any root:           {outside:6.2} ns");
    println!("hook pair, recorded (2 events pushed): {inside:6.2} ns");
}
