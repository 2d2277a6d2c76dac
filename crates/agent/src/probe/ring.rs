//! A per-thread event ring: one producer (the thread running probes), one consumer (whoever holds
//! the collector lock). The producer takes no lock and allocates nothing while the ring has room.
//! When the collector falls behind and the ring is full, a probe's thread empties it itself
//! (`recorder`, through `collector::drain_own`; the time is factored out as a pause, as JFluid did
//! while a thread's full buffer was processed). Where it cannot, the producer yields for up to
//! [`FULL_WAIT`] for the collector to make room (exactness over speed, as JFluid blocked a thread
//! whose buffer was full); after that the event is dropped and counted, the thread's recording
//! ends there (`hooks`; the collector closes the frames it left open), and the thread's profile
//! is reported inexact.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use ferrofluid_jvmti::os::prefetch_for_write;

/// Slots a ring holds (16 bytes each: 512 KiB per thread that records anything). An event takes
/// one slot, two with the thread CPU clock (`cpu` option).
pub const RING_EVENTS: usize = 1 << 15;
/// How long a producer waits for room in a full ring before dropping the event. A drop ends the
/// thread's recording until its next root entry, so the wait covers a collector descheduled on a
/// loaded machine (5 ms lost the rest of a long root at load average 20 on 2 cores).
pub const FULL_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// How many events ahead of the one it writes the producer asks the CPU for the slot's cache
/// line (64 lines: some microseconds ahead at the probes' rate, far less than a ring).
const PREFETCH_AHEAD: usize = 256;

/// Tag of a slot that carries the thread CPU clock (ns) of the event in the next slot.
const CPU_TAG: u64 = 3;

/// Bits of an event's first word between its kind and its method id that carry the duration of
/// the probe that pushed it, in ticks of the probe clock (at 3 GHz, up to ~0.35 s; longer ones,
/// which waits for room do not make, are cut there).
const PROBE_BITS: u32 = 30;
const PROBE_MAX: u64 = (1 << PROBE_BITS) - 1;

/// What happened: the high 2 bits of an event's first word; the low 32 bits carry the method id,
/// the bits between the probe's duration.
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

impl Event {
    pub fn new(kind: Kind, id: u32, ns: u64) -> Event {
        Event {
            kind,
            id,
            ns,
            probe_ticks: 0,
        }
    }
}

/// A probe that measures itself: its hook started at `start`, in ticks of `clock`. The push
/// reads `clock` again just before it publishes the event and stores the difference in it, less
/// any time it spent making room (reported apart, as a pause).
#[derive(Clone, Copy)]
pub struct ProbeStart {
    pub start: u64,
    pub clock: fn() -> u64,
}

/// A decoded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub kind: Kind,
    pub id: u32,
    /// Monotonic ns (a pause length for [`Kind::Adjust`]). With the CPU clock, the thread CPU
    /// time travels beside it (the same kind of value: a stamp, or the CPU part of a pause).
    pub ns: u64,
    /// How long the probe that pushed the event ran, in ticks of its clock ([`ProbeStart`]);
    /// 0 for events of no probe.
    pub probe_ticks: u32,
}

/// Keeps the producer's and the consumer's counters on separate cache lines.
#[repr(align(64))]
#[derive(Default)]
struct Padded(AtomicUsize);

/// Java thread ids count up from 1 and never come near this: ids from here on stand for threads
/// whose Java id could not be read.
pub const UNKNOWN_JAVA_ID: u64 = 1 << 62;

pub struct Ring {
    /// Recorder key of the thread (one per ring: a thread gets a new ring per session).
    pub thread_id: u64,
    /// The Java thread id (`Thread.getId()`), or [`UNKNOWN_JAVA_ID`] plus the key when it could
    /// not be read.
    pub java_id: u64,
    pub thread_name: String,
    /// The ring of a virtual thread (`vthread`): its thread is reported as virtual.
    pub is_virtual: bool,
    /// The events. Slots are atomics, so the ring is safe code: the producer's and the
    /// consumer's `Relaxed` accesses compile to plain moves, and the Release/Acquire pairs on
    /// `head` and `tail` order them (docs/decisions/0026-ffi-layer.md).
    slots: Box<[[AtomicU64; 2]]>,
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

// Slots are written only by the single producer at `head` and read only by the single consumer
// between `tail` and `head`; the Release store of `head` publishes a slot before the consumer's
// Acquire load sees it, and the Release store of `tail` returns it before the producer's Acquire load.

impl Ring {
    pub fn new(thread_id: u64, thread_name: String) -> Ring {
        Self::with_capacity(thread_id, thread_name, RING_EVENTS)
    }

    /// The same ring, of the Java thread `java_id`.
    pub fn with_java_id(self, java_id: u64) -> Ring {
        Ring { java_id, ..self }
    }

    /// The ring of a virtual thread.
    pub fn into_virtual(self) -> Ring {
        Ring {
            is_virtual: true,
            ..self
        }
    }

    pub fn with_capacity(thread_id: u64, thread_name: String, events: usize) -> Ring {
        Ring {
            thread_id,
            java_id: UNKNOWN_JAVA_ID + thread_id,
            thread_name,
            is_virtual: false,
            slots: (0..events.next_power_of_two())
                .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
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
        self.push_slots(
            [[kind.tag() << 62 | u64::from(id), ns]],
            None,
            wait,
            make_room,
        )
    }

    /// [`Ring::push_within`] for a probe's event (one slot, or two with `cpu_ns`), which carries
    /// the probe's duration from `probe.start` to just before the event is published.
    #[inline]
    pub fn push_probe_within(
        &self,
        event: Event,
        cpu_ns: Option<u64>,
        probe: ProbeStart,
        wait: std::time::Duration,
        make_room: impl FnOnce(),
    ) -> bool {
        let word = event.kind.tag() << 62 | u64::from(event.id);
        match cpu_ns {
            None => self.push_slots([[word, event.ns]], Some(probe), wait, make_room),
            Some(cpu) => self.push_slots(
                [[CPU_TAG << 62, cpu], [word, event.ns]],
                Some(probe),
                wait,
                make_room,
            ),
        }
    }

    /// An event with the thread's CPU clock (`cpu` option): two slots, a CPU slot and then the
    /// event, published together, so that the wall-only event keeps its one slot.
    #[inline]
    pub fn push_with_cpu_within(
        &self,
        event: Event,
        cpu_ns: u64,
        wait: std::time::Duration,
        make_room: impl FnOnce(),
    ) -> bool {
        self.push_slots(
            [
                [CPU_TAG << 62, cpu_ns],
                [event.kind.tag() << 62 | u64::from(event.id), event.ns],
            ],
            None,
            wait,
            make_room,
        )
    }

    /// Writes `N` slots and publishes them with one store of `head`, or none of them (one
    /// dropped event) when the ring stays full. With `probe`, the last slot (the event) gets the
    /// probe's duration.
    #[inline(always)]
    fn push_slots<const N: usize>(
        &self,
        words: [[u64; 2]; N],
        probe: Option<ProbeStart>,
        wait: std::time::Duration,
        make_room: impl FnOnce(),
    ) -> bool {
        let head = self.head.0.load(Ordering::Relaxed);
        let mut making_room = 0;
        if head.wrapping_sub(self.tail_seen.0.load(Ordering::Relaxed)) > self.slots.len() - N {
            let from = probe.map(|p| (p.clock)());
            let room = self.room_after(head, N, wait, make_room);
            if let (Some(p), Some(from)) = (probe, from) {
                making_room = (p.clock)().wrapping_sub(from);
            }
            if !room {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        }
        let mask = self.slots.len() - 1;
        prefetch_for_write(&self.slots[head.wrapping_add(PREFETCH_AHEAD) & mask]);
        // The slots from `head` on are outside [tail, head): the consumer does not read them
        // until the Release store below publishes them.
        for (i, [word, ns]) in words.into_iter().enumerate() {
            let slot = &self.slots[head.wrapping_add(i) & mask];
            slot[0].store(word, Ordering::Relaxed);
            slot[1].store(ns, Ordering::Relaxed);
        }
        if let Some(p) = probe {
            // Read after the slots are written: only the publication and the return are left
            // to the calibrated part of the probe's cost.
            let ticks = (p.clock)()
                .wrapping_sub(p.start)
                .saturating_sub(making_room)
                .min(PROBE_MAX);
            // Written just above, still unpublished.
            let event = &self.slots[head.wrapping_add(N - 1) & mask];
            event[0].store(words[N - 1][0] | ticks << 32, Ordering::Relaxed);
        }
        self.head.0.store(head.wrapping_add(N), Ordering::Release);
        true
    }

    /// The ring looked to the producer at `head` to lack `n` free slots: whether they are free
    /// after a fresh look at the consumer's counter, `make_room`, and waiting at most `wait`.
    #[cold]
    fn room_after(
        &self,
        head: usize,
        n: usize,
        wait: std::time::Duration,
        make_room: impl FnOnce(),
    ) -> bool {
        let full = |tail: usize| head.wrapping_sub(tail) > self.slots.len() - n;
        let tail = self.tail.0.load(Ordering::Acquire);
        self.tail_seen.0.store(tail, Ordering::Relaxed);
        if !full(tail) {
            return true;
        }
        make_room();
        let tail = self.tail.0.load(Ordering::Acquire);
        self.tail_seen.0.store(tail, Ordering::Relaxed);
        !full(tail) || self.wait_for_room(head, n, wait)
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
    fn wait_for_room(&self, head: usize, n: usize, wait: std::time::Duration) -> bool {
        let start = std::time::Instant::now();
        let deadline = start + wait;
        let mut room = false;
        while std::time::Instant::now() < deadline {
            std::thread::yield_now();
            let tail = self.tail.0.load(Ordering::Acquire);
            if head.wrapping_sub(tail) <= self.slots.len() - n {
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

    /// Hands every published event to `f`, oldest first, with its CPU stamp if it has one.
    /// Returns the slots consumed. Consumer side only: callers serialise.
    pub fn drain(&self, mut f: impl FnMut(Event, Option<u64>)) -> usize {
        let tail = self.tail.0.load(Ordering::Relaxed);
        let head = self.head.0.load(Ordering::Acquire);
        let n = head.wrapping_sub(tail);
        // Slots in [tail, head) were published by the producer's Release store of head.
        let slot = |i: usize| {
            let slot = &self.slots[tail.wrapping_add(i) & (self.slots.len() - 1)];
            [
                slot[0].load(Ordering::Relaxed),
                slot[1].load(Ordering::Relaxed),
            ]
        };
        let decode = |[word, ns]: [u64; 2]| Event {
            kind: Kind::from_tag(word >> 62),
            id: word as u32,
            ns,
            probe_ticks: ((word >> 32) & PROBE_MAX) as u32,
        };
        let mut i = 0;
        while i < n {
            let [word, ns] = slot(i);
            if word >> 62 == CPU_TAG {
                // A CPU slot and its event are published together: the event is there.
                if i + 1 < n {
                    f(decode(slot(i + 1)), Some(ns));
                }
                i += 2;
            } else {
                f(decode([word, ns]), None);
                i += 1;
            }
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
        assert_eq!(ring.drain(|e, _| seen.push(e)), 4);
        assert_eq!(seen[3], Event::new(Kind::Enter, 3, 103));
        assert!(ring.push(Kind::Exit, u32::MAX, 7));
        ring.drain(|e, _| seen.push(e));
        assert_eq!(seen[4], Event::new(Kind::Exit, u32::MAX, 7));
        assert!(ring.is_empty());
    }

    #[test]
    fn cpu_stamps_travel_with_their_event_and_fill_two_slots() {
        let ring = Ring::with_capacity(1, "t".into(), 4);
        let wait = std::time::Duration::ZERO;
        assert!(ring.push(Kind::Enter, 1, 10));
        assert!(ring.push_with_cpu_within(Event::new(Kind::Exit, 2, 20), 5, wait, || {}));
        // One slot left: a two-slot event does not fit, and is dropped whole.
        let mut made_room = false;
        assert!(!ring
            .push_with_cpu_within(Event::new(Kind::Adjust, 0, 30), 6, wait, || made_room =
                true));
        assert!(made_room);
        assert_eq!(ring.dropped(), 1);
        assert!(ring.push(Kind::Enter, 3, 40));
        let mut seen = Vec::new();
        assert_eq!(ring.drain(|e, cpu| seen.push((e, cpu))), 4);
        assert_eq!(
            seen,
            [
                (Event::new(Kind::Enter, 1, 10), None),
                (Event::new(Kind::Exit, 2, 20), Some(5)),
                (Event::new(Kind::Enter, 3, 40), None),
            ]
        );
        // Wrapping around the end of the ring keeps the pair together.
        assert!(ring.push(Kind::Exit, 3, 50));
        assert!(ring.push_with_cpu_within(Event::new(Kind::Adjust, 0, 60), 7, wait, || {}));
        seen.clear();
        ring.drain(|e, cpu| seen.push((e, cpu)));
        assert_eq!(
            seen,
            [
                (Event::new(Kind::Exit, 3, 50), None),
                (Event::new(Kind::Adjust, 0, 60), Some(7)),
            ]
        );
    }

    thread_local! {
        static FAKE_CLOCK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    fn fake_clock() -> u64 {
        FAKE_CLOCK.with(|c| c.get())
    }

    #[test]
    fn a_probe_event_carries_its_probe_duration_without_the_time_spent_making_room() {
        let ring = Ring::with_capacity(1, "t".into(), 2);
        let wait = std::time::Duration::ZERO;
        let probe = |start| ProbeStart {
            start,
            clock: fake_clock,
        };
        FAKE_CLOCK.with(|c| c.set(1_000));
        assert!(ring.push_probe_within(
            Event::new(Kind::Enter, 1, 5),
            None,
            probe(990),
            wait,
            || {}
        ));
        // With the CPU clock the event is the second slot; the ring is full now.
        let mut drained = Vec::new();
        let making_room = || {
            FAKE_CLOCK.with(|c| c.set(c.get() + 500));
            ring.drain(|e, _| drained.push(e));
        };
        assert!(ring.push_probe_within(
            Event::new(Kind::Exit, 1, 6),
            Some(9),
            probe(970),
            wait,
            making_room
        ));
        let carried = |e: Event| (e.kind, e.id, e.ns, e.probe_ticks);
        assert_eq!(
            drained.iter().map(|e| carried(*e)).collect::<Vec<_>>(),
            [(Kind::Enter, 1, 5, 10)]
        );
        // Full, and no room made: dropped.
        assert!(!ring.push_probe_within(
            Event::new(Kind::Enter, 2, 7),
            None,
            probe(0),
            wait,
            || {}
        ));
        assert_eq!(ring.dropped(), 1);
        let mut seen = Vec::new();
        ring.drain(|e, cpu| seen.push((carried(e), cpu)));
        // 1,500 - 970, less the 500 spent making room.
        assert_eq!(seen, [((Kind::Exit, 1, 6, 30), Some(9))]);
        // Started long ago: cut at the field's width.
        FAKE_CLOCK.with(|c| c.set(u64::from(u32::MAX) * 4));
        assert!(ring.push_probe_within(Event::new(Kind::Enter, 2, 7), None, probe(0), wait, || {}));
        // Events of no probe carry none.
        assert!(ring.push(Kind::Adjust, 0, 8));
        seen.clear();
        ring.drain(|e, cpu| seen.push((carried(e), cpu)));
        assert_eq!(
            seen,
            [
                ((Kind::Enter, 2, 7, (1 << PROBE_BITS) - 1), None),
                ((Kind::Adjust, 0, 8, 0), None)
            ]
        );
    }

    #[test]
    fn lacks_room_counts_free_slots() {
        let ring = Ring::with_capacity(1, "t".into(), 4);
        assert!(!ring.lacks_room(4));
        assert!(ring.push(Kind::Enter, 1, 1));
        assert!(ring.push(Kind::Enter, 2, 2));
        assert!(!ring.lacks_room(2));
        assert!(ring.lacks_room(3));
        ring.drain(|_, _| {});
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
            ring.drain(|e, _| {
                assert_eq!((e.id, e.ns), (next, u64::from(next)));
                next += 1;
            });
        }
        producer.join().unwrap();
    }
}
