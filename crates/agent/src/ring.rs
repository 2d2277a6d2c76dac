//! A per-thread event ring: one producer (the thread running probes), one consumer (whoever holds
//! the collector lock). The producer takes no lock and allocates nothing while the ring has room.
//! When the collector falls behind and the ring is full, a probe's thread empties it itself
//! (`hooks`, through `collector::drain_own`; the time is factored out as a pause, as JFluid did
//! while a thread's full buffer was processed). Where it cannot, the producer yields for up to
//! [`FULL_WAIT`] for the collector to make room (exactness over speed, as JFluid blocked a thread
//! whose buffer was full); after that the event is dropped and counted, and the thread's profile
//! is reported inexact.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Events a ring holds (16 bytes each: 512 KiB per thread that records anything).
pub const RING_EVENTS: usize = 1 << 15;
/// How long a producer waits for room in a full ring before dropping the event.
pub const FULL_WAIT: std::time::Duration = std::time::Duration::from_millis(5);

/// How many events ahead of the one it writes the producer asks the CPU for the slot's cache
/// line (64 lines: some microseconds ahead at the probes' rate, far less than a ring).
const PREFETCH_AHEAD: usize = 256;

/// Asks for `slot`'s cache line in exclusive state before the producer writes it. The collector
/// read that line one lap earlier, so it may sit in the other core's cache: without the hint the
/// producer's store waits for the transfer, and x86 commits stores in order, so the store buffer
/// fills with the JNI transitions' stores and the thread stalls.
#[inline(always)]
fn prefetch_for_write(slot: *const [u64; 2]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetchw` only hints the cache hierarchy; it never faults and changes no memory or
    // register (CPUs without it execute it as a no-op).
    unsafe {
        core::arch::asm!("prefetchw [{0}]", in(reg) slot, options(nostack, preserves_flags, readonly));
    }
}

/// What happened: the high 2 bits of an event's first word; the low 32 bits carry the method id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Enter,
    /// Normal or exceptional exit (the recorder closes frames an exception skipped).
    Exit,
    /// Time the agent spent on this thread (the second word is the pause in ns, not a timestamp).
    Adjust,
}

impl Kind {
    fn tag(self) -> u64 {
        match self {
            Kind::Enter => 0,
            Kind::Exit => 1,
            Kind::Adjust => 2,
        }
    }

    fn from_tag(tag: u64) -> Kind {
        match tag {
            0 => Kind::Enter,
            1 => Kind::Exit,
            _ => Kind::Adjust,
        }
    }
}

/// A decoded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub kind: Kind,
    pub id: u32,
    /// Monotonic ns (a pause length for [`Kind::Adjust`]).
    pub ns: u64,
}

/// Keeps the producer's and the consumer's counters on separate cache lines.
#[repr(align(64))]
#[derive(Default)]
struct Padded(AtomicUsize);

pub struct Ring {
    /// Recorder key of the thread.
    pub thread_id: u64,
    pub thread_name: String,
    slots: Box<[UnsafeCell<[u64; 2]>]>,
    /// Next slot the producer writes (only the producer stores it).
    head: Padded,
    /// The producer's last view of `tail` (only the producer touches it), so that it reads the
    /// consumer's cache line only when the ring looks full.
    tail_seen: Padded,
    /// Next slot the consumer reads (only the consumer stores it).
    tail: Padded,
    dropped: AtomicU64,
    /// Nanoseconds the producer spent waiting for room and has not reported yet
    /// (producer side only): the thread turns it into an adjustment, so the wait is
    /// not charged to the method that happened to be running.
    waited_ns: AtomicU64,
    /// The thread ended (or left this session): once drained, the ring can go.
    pub closed: AtomicBool,
}

// SAFETY: slots are written only by the single producer at `head` and read only by the single consumer
// between `tail` and `head`; the Release store of `head` publishes a slot before the consumer's Acquire
// load sees it, and the Release store of `tail` returns it before the producer's Acquire load.
unsafe impl Sync for Ring {}
// SAFETY: as above; the ring owns plain integers.
unsafe impl Send for Ring {}

impl Ring {
    pub fn new(thread_id: u64, thread_name: String) -> Ring {
        Self::with_capacity(thread_id, thread_name, RING_EVENTS)
    }

    pub fn with_capacity(thread_id: u64, thread_name: String, events: usize) -> Ring {
        Ring {
            thread_id,
            thread_name,
            slots: (0..events.next_power_of_two())
                .map(|_| UnsafeCell::new([0; 2]))
                .collect(),
            head: Padded::default(),
            tail_seen: Padded::default(),
            tail: Padded::default(),
            dropped: AtomicU64::new(0),
            waited_ns: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// Appends an event; false (and counted) when the ring stayed full. Producer side only.
    #[inline]
    pub fn push(&self, kind: Kind, id: u32, ns: u64) -> bool {
        self.push_within(kind, id, ns, FULL_WAIT, || {})
    }

    /// [`Ring::push`] that, finding the ring full, first calls `make_room` (which may drain it)
    /// and then waits at most `wait` for room.
    #[inline]
    pub fn push_within(
        &self,
        kind: Kind,
        id: u32,
        ns: u64,
        wait: std::time::Duration,
        make_room: impl FnOnce(),
    ) -> bool {
        let head = self.head.0.load(Ordering::Relaxed);
        if head.wrapping_sub(self.tail_seen.0.load(Ordering::Relaxed)) >= self.slots.len()
            && !self.room_after(head, wait, make_room)
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let mask = self.slots.len() - 1;
        prefetch_for_write(self.slots[head.wrapping_add(PREFETCH_AHEAD) & mask].get());
        let slot = &self.slots[head & mask];
        // SAFETY: the slot at `head` is outside [tail, head), so the consumer does not read it until
        // the Release store below publishes it (see the Sync impl).
        unsafe { *slot.get() = [kind.tag() << 62 | u64::from(id), ns] };
        self.head.0.store(head.wrapping_add(1), Ordering::Release);
        true
    }

    /// The ring looked full to the producer at `head`: whether there is room after a fresh look
    /// at the consumer's counter, `make_room`, and waiting at most `wait`.
    #[cold]
    fn room_after(&self, head: usize, wait: std::time::Duration, make_room: impl FnOnce()) -> bool {
        let full = |tail: usize| head.wrapping_sub(tail) >= self.slots.len();
        let tail = self.tail.0.load(Ordering::Acquire);
        self.tail_seen.0.store(tail, Ordering::Relaxed);
        if !full(tail) {
            return true;
        }
        make_room();
        let tail = self.tail.0.load(Ordering::Acquire);
        self.tail_seen.0.store(tail, Ordering::Relaxed);
        !full(tail) || self.wait_for_room(head, wait)
    }

    /// Whether fewer than `events` slots are free (producer side). Reads the consumer's counter
    /// only when its last view says so.
    #[inline]
    pub fn lacks_room(&self, events: usize) -> bool {
        let head = self.head.0.load(Ordering::Relaxed);
        let room = |tail: usize| self.slots.len() - head.wrapping_sub(tail) >= events;
        if room(self.tail_seen.0.load(Ordering::Relaxed)) {
            return false;
        }
        let tail = self.tail.0.load(Ordering::Acquire);
        self.tail_seen.0.store(tail, Ordering::Relaxed);
        !room(tail)
    }

    #[cold]
    fn wait_for_room(&self, head: usize, wait: std::time::Duration) -> bool {
        let start = std::time::Instant::now();
        let deadline = start + wait;
        let mut room = false;
        while std::time::Instant::now() < deadline {
            std::thread::yield_now();
            let tail = self.tail.0.load(Ordering::Acquire);
            if head.wrapping_sub(tail) < self.slots.len() {
                self.tail_seen.0.store(tail, Ordering::Relaxed);
                room = true;
                break;
            }
        }
        let waited = start.elapsed().as_nanos() as u64;
        self.waited_ns.fetch_add(waited, Ordering::Relaxed);
        room
    }

    /// Takes the waiting time not yet reported (producer side).
    pub fn take_waited_ns(&self) -> u64 {
        if self.waited_ns.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.waited_ns.swap(0, Ordering::Relaxed)
    }

    /// Hands every published event to `f`, oldest first. Consumer side only: callers serialise.
    pub fn drain(&self, mut f: impl FnMut(Event)) -> usize {
        let tail = self.tail.0.load(Ordering::Relaxed);
        let head = self.head.0.load(Ordering::Acquire);
        let n = head.wrapping_sub(tail);
        for i in 0..n {
            let slot = &self.slots[tail.wrapping_add(i) & (self.slots.len() - 1)];
            // SAFETY: slots in [tail, head) were published by the producer's Release store of head.
            let [word, ns] = unsafe { *slot.get() };
            f(Event {
                kind: Kind::from_tag(word >> 62),
                id: word as u32,
                ns,
            });
        }
        self.tail.0.store(head, Ordering::Release);
        n
    }

    /// Events dropped because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.head.0.load(Ordering::Acquire) == self.tail.0.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_ring_drops_and_counts() {
        let ring = Ring::with_capacity(1, "t".into(), 4);
        for i in 0..6 {
            let pushed = ring.push_within(
                Kind::Enter,
                i,
                100 + u64::from(i),
                Default::default(),
                || {},
            );
            assert_eq!(pushed, i < 4);
        }
        assert_eq!(ring.dropped(), 2);
        let mut seen = Vec::new();
        assert_eq!(ring.drain(|e| seen.push(e)), 4);
        assert_eq!(
            seen[3],
            Event {
                kind: Kind::Enter,
                id: 3,
                ns: 103
            }
        );
        assert!(ring.push(Kind::Exit, u32::MAX, 7));
        ring.drain(|e| seen.push(e));
        assert_eq!(
            seen[4],
            Event {
                kind: Kind::Exit,
                id: u32::MAX,
                ns: 7
            }
        );
        assert!(ring.is_empty());
    }

    #[test]
    fn lacks_room_counts_free_slots() {
        let ring = Ring::with_capacity(1, "t".into(), 4);
        assert!(!ring.lacks_room(4));
        assert!(ring.push(Kind::Enter, 1, 1));
        assert!(ring.push(Kind::Enter, 2, 2));
        assert!(!ring.lacks_room(2));
        assert!(ring.lacks_room(3));
        ring.drain(|_| {});
        assert!(!ring.lacks_room(4));
    }

    #[test]
    fn concurrent_producer_and_consumer_lose_nothing_that_fit() {
        let ring = std::sync::Arc::new(Ring::with_capacity(1, "t".into(), 64));
        let producer = {
            let ring = ring.clone();
            std::thread::spawn(move || {
                let mut sent = 0u32;
                while sent < 100_000 {
                    if ring.push_within(
                        Kind::Adjust,
                        sent,
                        u64::from(sent),
                        Default::default(),
                        || {},
                    ) {
                        sent += 1;
                    }
                }
            })
        };
        let mut next = 0u32;
        while next < 100_000 {
            ring.drain(|e| {
                assert_eq!((e.id, e.ns), (next, u64::from(next)));
                next += 1;
            });
        }
        producer.join().unwrap();
    }
}
