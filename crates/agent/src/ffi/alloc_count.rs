//! With the `alloc-count` feature, the agent's global allocator: the system's, counting the
//! bytes and blocks live, so that a soak can tell what the agent keeps across sessions (logged
//! at each detach).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};

// Process-wide: the global allocator has no other place to keep its count.
/// Bytes the agent has allocated and not freed.
static BYTES: AtomicI64 = AtomicI64::new(0);
/// Blocks the agent has allocated and not freed.
static BLOCKS: AtomicI64 = AtomicI64::new(0);

struct Counting;

// SAFETY: every call is passed on to the system allocator with the caller's arguments; the
// counters are only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
            BLOCKS.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
            BLOCKS.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        BLOCKS.fetch_sub(1, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            BYTES.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        }
        p
    }
}

// Process-wide: a global allocator is one by definition.
#[global_allocator]
static COUNTING: Counting = Counting;

/// Bytes and blocks the agent has allocated and not freed.
pub fn live() -> (i64, i64) {
    (
        BYTES.load(Ordering::Relaxed),
        BLOCKS.load(Ordering::Relaxed),
    )
}
