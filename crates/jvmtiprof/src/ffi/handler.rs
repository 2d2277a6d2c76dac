//! The sampler's signal-side callback type. An `unsafe` trait: implementing it is the promise
//! that the callback is async-signal-safe, which the compiler cannot check (it is re-exported as
//! [`crate::sampler::SignalHandler`]).

use crate::sampler::{SignalContext, Verdict};

/// What runs in the signal handler for each sample.
///
/// # Safety
///
/// [`on_sample`](SignalHandler::on_sample) runs inside a signal handler, on a thread interrupted
/// anywhere (inside `malloc`, holding a lock, in the JVM). It must be async-signal-safe: no
/// allocation or deallocation, no lock, no `println!`, no thread-local of a dynamically loaded
/// library (this crate's included), no JNI or JVMTI call, nothing that may panic. It may read and
/// write atomics and memory it owns, and use the [`SignalContext`]. Implementing the trait is the
/// promise that it does only that.
///
/// ```
/// use jvmtiprof::sampler::{SignalContext, SignalHandler, Verdict};
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// /// Walks only threads whose registry word is odd, and counts the rest.
/// struct OddThreads { skipped: AtomicU64 }
///
/// // SAFETY: atomics and the context only.
/// unsafe impl SignalHandler for OddThreads {
///     fn on_sample(&self, ctx: &mut SignalContext<'_>) -> Verdict {
///         if ctx.thread_word() % 2 == 0 {
///             self.skipped.fetch_add(1, Ordering::Relaxed);
///             return Verdict::Skip;
///         }
///         let _ = ctx.walk_stack();
///         ctx.set_user(0, ctx.thread_word());
///         Verdict::Record
///     }
/// }
/// ```
pub unsafe trait SignalHandler: Send + Sync + 'static {
    /// Called for each sample of a selected thread.
    fn on_sample(&self, ctx: &mut SignalContext<'_>) -> Verdict;
}

/// The default handler: walks the stack and records every sample.
#[derive(Debug, Default, Clone, Copy)]
pub struct WalkStack;

// SAFETY: calls only the context's async-signal-safe methods.
unsafe impl SignalHandler for WalkStack {
    fn on_sample(&self, ctx: &mut SignalContext<'_>) -> Verdict {
        let _ = ctx.walk_stack();
        Verdict::Record
    }
}
