//! What the signal handler may touch, checked in a JVM created in this process: a sampled
//! native thread, one the JVM never saw, must not get libjvm's thread-local block, which glibc
//! allocates with `malloc` on the thread's first access; a signal that interrupted `malloc` there
//! deadlocks the thread on the allocator's lock (seen as a JVM hanging at exit, its sampler
//! thread stuck in `__tls_get_addr` under the signal handler).
#![allow(unsafe_code)]

#[path = "../../jvmti/tests/common/mod.rs"]
mod live;

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ferrofluid_jvmti::os::thread_cpu_ns;
use jvmtiprof::sampler::{Config, Sampler, SignalContext, SignalHandler, Threads, Verdict};

/// The handler's observations, kept in atomics (no lock in a signal handler) for two tids.
static NATIVE_TID: AtomicU32 = AtomicU32::new(0);
static JAVA_TID: AtomicU32 = AtomicU32::new(0);
static NATIVE_AS_JAVA: AtomicU64 = AtomicU64::new(0);
static NATIVE_AS_NATIVE: AtomicU64 = AtomicU64::new(0);
static JAVA_AS_JAVA: AtomicU64 = AtomicU64::new(0);
static JAVA_AS_NATIVE: AtomicU64 = AtomicU64::new(0);

struct Observe;

// SAFETY: reads the context and adds to atomics.
unsafe impl SignalHandler for Observe {
    fn on_sample(&self, ctx: &mut SignalContext<'_>) -> Verdict {
        let java = ctx.is_java_thread();
        let counter = if ctx.tid() == NATIVE_TID.load(Ordering::Relaxed) {
            if java {
                &NATIVE_AS_JAVA
            } else {
                &NATIVE_AS_NATIVE
            }
        } else if ctx.tid() == JAVA_TID.load(Ordering::Relaxed) {
            if java {
                &JAVA_AS_JAVA
            } else {
                &JAVA_AS_NATIVE
            }
        } else {
            return Verdict::Skip;
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Verdict::Skip
    }
}

/// Whether the calling thread has its block of libjvm's thread-locals (`dlpi_tls_data` is null
/// until the thread first touches them).
fn has_libjvm_thread_locals() -> bool {
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _: usize, out: *mut c_void) -> c_int {
        // SAFETY: glibc passes a valid record and our pointer back.
        let (info, out) = unsafe { (&*info, &mut *(out as *mut Option<bool>)) };
        if info.dlpi_name.is_null() {
            return 0;
        }
        // SAFETY: a NUL-terminated module path.
        let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy();
        if name.ends_with("/libjvm.so") {
            *out = Some(!info.dlpi_tls_data.is_null());
            return 1;
        }
        0
    }
    let mut out: Option<bool> = None;
    // SAFETY: a callback of the required type and a pointer it alone uses.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut out as *mut Option<bool> as *mut c_void) };
    out.expect("libjvm is loaded")
}

fn spin_cpu(for_how_long: Duration) {
    let start = thread_cpu_ns();
    let mut x = 1u64;
    while thread_cpu_ns() - start < for_how_long.as_nanos() as u64 {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

/// A native thread sampled on its CPU clock is told apart from a Java thread without calling
/// into the JVM: it never gets libjvm's thread-locals, while the attached thread is named a
/// Java thread.
#[test]
fn a_sampled_native_thread_never_touches_the_jvms_thread_locals() {
    let vm = live::vm();
    live::with_env("signal-safety", |_, env| {
        // SAFETY: gettid takes nothing and cannot fail.
        JAVA_TID.store(unsafe { libc::gettid() } as u32, Ordering::Relaxed);
        let config = Config::cpu(Duration::from_millis(1))
            .threads(Threads::All)
            .rescan(Duration::from_millis(5));
        let (sampler, _samples) =
            Sampler::start_with(vm, env, config, Observe).expect("the sampler starts");
        let native = std::thread::spawn(|| {
            assert!(
                !has_libjvm_thread_locals(),
                "a fresh native thread has no libjvm thread-locals"
            );
            // SAFETY: gettid takes nothing and cannot fail.
            NATIVE_TID.store(unsafe { libc::gettid() } as u32, Ordering::Relaxed);
            let deadline = Instant::now() + Duration::from_secs(10);
            while NATIVE_AS_NATIVE.load(Ordering::Relaxed) + NATIVE_AS_JAVA.load(Ordering::Relaxed)
                < 50
                && Instant::now() < deadline
            {
                spin_cpu(Duration::from_millis(10));
            }
            has_libjvm_thread_locals()
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while JAVA_AS_JAVA.load(Ordering::Relaxed) + JAVA_AS_NATIVE.load(Ordering::Relaxed) < 50
            && Instant::now() < deadline
        {
            spin_cpu(Duration::from_millis(10));
        }
        let touched = native.join().unwrap();
        sampler.stop();
        let native = (
            NATIVE_AS_NATIVE.load(Ordering::Relaxed),
            NATIVE_AS_JAVA.load(Ordering::Relaxed),
        );
        let java = (
            JAVA_AS_JAVA.load(Ordering::Relaxed),
            JAVA_AS_NATIVE.load(Ordering::Relaxed),
        );
        assert!(native.0 >= 50 && native.1 == 0, "native thread: {native:?}");
        assert!(java.0 >= 50 && java.1 == 0, "attached thread: {java:?}");
        assert!(
            !touched,
            "sampling the native thread allocated its libjvm thread-locals"
        );
    });
}
