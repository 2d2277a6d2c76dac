//! The `cpu` engine's calibration while it collects: a daemon thread (`ferrofluid-calibrate`)
//! attached to the JVM runs one more batch of the call recorder's probes every
//! [`REMEASURE_EVERY`] into the pool of the profile's batches and hands the new estimate to the
//! collector, so that the estimate follows the probes' speed over the whole profile, not only
//! its first tenth of a second (`probe::calibrate` measures; its events are kept out of the
//! recording). It ends when collection stops.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrofluid_jvmti::{JavaVm, JniEnv};
use ferrofluid_profile::Calibrator;

use crate::probe::calibrate::{self, REMEASURE_EVERY};
use crate::probe::collector;
use crate::probe::thread::SWITCHES;

/// The re-measuring thread of a profile.
pub struct Remeasuring {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Remeasuring {
    /// Starts re-measuring the wall calibration of the profile that collects now, whose
    /// batches so far are `pool` (not with the CPU clock, whose calibration is of whole pairs).
    pub fn start(vm: JavaVm, pool: Calibrator) -> Option<Remeasuring> {
        if SWITCHES.cpu.load(Ordering::SeqCst) {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let spawned = std::thread::Builder::new()
            .name("ferrofluid-calibrate".into())
            .spawn({
                let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
                move || {
                    let attached = vm.with_attached_thread("ferrofluid-calibrate", |env| {
                        ferrofluid_jvmti::ffi_guard("re-measuring the calibration", (), || {
                            remeasure(env, &stop, pool)
                        })
                    });
                    if let Err(e) = attached {
                        log::warn!("calibration: attaching the re-measuring thread: {e}");
                    }
                    done.store(true, Ordering::SeqCst);
                }
            });
        match spawned {
            Ok(thread) => Some(Remeasuring { stop, done, thread }),
            Err(e) => {
                log::warn!("calibration: no re-measuring thread: {e}");
                None
            }
        }
    }

    /// Tells the re-measuring thread to end and waits for it a little (a batch takes a few ms;
    /// a thread held at a safepoint ends on its own later).
    pub fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        let until = Instant::now() + Duration::from_millis(500);
        while !self.done.load(Ordering::SeqCst) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        if self.done.load(Ordering::SeqCst) {
            let _ = self.thread.join();
        }
    }
}

/// Whether the re-measuring thread is to end: told to, or collection stopped.
fn ending(stop: &AtomicBool) -> bool {
    stop.load(Ordering::SeqCst) || !SWITCHES.collecting.load(Ordering::SeqCst)
}

/// The re-measuring thread's loop: a batch every [`REMEASURE_EVERY`] while collection goes on.
fn remeasure(env: &JniEnv<'_>, stop: &AtomicBool, mut pool: Calibrator) {
    let Ok(class) = calibrate::class(env) else {
        return;
    };
    let (mut runs, mut kept) = (0u64, 0u64);
    'profile: loop {
        let next = Instant::now() + REMEASURE_EVERY;
        while Instant::now() < next {
            if ending(stop) {
                break 'profile;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let Some(result) = calibrate::subgraph_batch(env, class) else {
            continue;
        };
        // A batch during which collection stopped recorded only part of its probes.
        if ending(stop) {
            break;
        }
        let Ok(b) = result else {
            break;
        };
        runs += 1;
        kept += u64::from(!b.disturbed());
        pool.add(b);
        if let Some((calibration, stats)) = pool.estimate() {
            collector::calibrated(calibration, stats);
        }
    }
    env.delete_local_ref(class.as_object());
    if let Some((c, stats)) = pool.estimate() {
        log::info!(
            "calibration re-measured in {runs} batches during the profile ({kept} undisturbed): \
             inner {:.1} ns, outer {:.1} ns per call from {} batches; rest per pair {:.1} / \
             {:.1} / {:.1} ns (quartiles)",
            c.inner_ns,
            c.outer_ns,
            stats.kept,
            stats.pair_ns[0],
            stats.pair_ns[1],
            stats.pair_ns[2]
        );
    }
}
