//! A bounded multi-producer, single-consumer ring of variable-length records, in 64-bit words,
//! that signal handlers can write: reserving is one compare-and-swap, writing is plain atomic
//! stores, and nothing blocks or allocates. A record that does not fit is refused, and the
//! producer counts it.
//!
//! A record starts with a header word: its length in words, its kind, and the committed bit,
//! which the producer sets last (release) and the consumer waits for (acquire). A producer may
//! reserve more than it then uses: it commits a shorter record followed by padding. A record
//! never wraps: when one would not fit before the end of the buffer, the producer reserves the
//! rest of the buffer as padding too. The consumer zeroes what it has read before it hands the
//! space back, so that a header it reads is either zero (not committed yet) or complete.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::ffi::os::MappedWords;

/// Record kinds.
pub(crate) const KIND_PAD: u64 = 0;
pub(crate) const KIND_SAMPLE: u64 = 1;
pub(crate) const KIND_REPEAT: u64 = 2;

const COMMITTED: u64 = 1 << 63;

fn header(len: usize, kind: u64) -> u64 {
    COMMITTED | kind << 32 | len as u64
}

pub(crate) struct Ring {
    /// Mapped, not allocated: a sampler's buffer (16 MiB by default) is backed only as far as
    /// samples reach and goes back to the system when the sampler stops.
    words: MappedWords,
    mask: usize,
    /// Words reserved so far (monotonic).
    head: AtomicUsize,
    /// Words consumed so far (monotonic).
    tail: AtomicUsize,
}

/// Space reserved for one record: `len` words from `start`.
pub(crate) struct Reservation<'r> {
    ring: &'r Ring,
    start: usize,
    len: usize,
}

impl Ring {
    /// A ring of at least `words` words (rounded up to a power of two, at least 1024); an error
    /// if the system gives no memory for it.
    pub fn new(words: usize) -> std::io::Result<Ring> {
        let n = words.max(1024).next_power_of_two();
        Ok(Ring {
            words: MappedWords::new(n)?,
            mask: n - 1,
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
        })
    }

    /// Reserves `len` words (at least 1, at most a quarter of the ring). Async-signal-safe.
    pub fn reserve(&self, len: usize) -> Option<Reservation<'_>> {
        let cap = self.words.len();
        if len == 0 || len > cap / 4 {
            return None;
        }
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            let tail = self.tail.load(Ordering::Acquire);
            let offset = head & self.mask;
            let pad = if offset + len > cap { cap - offset } else { 0 };
            if head + pad + len - tail > cap {
                return None;
            }
            match self.head.compare_exchange_weak(
                head,
                head + pad + len,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    if pad > 0 {
                        self.words[offset].store(header(pad, KIND_PAD), Ordering::Release);
                    }
                    return Some(Reservation {
                        ring: self,
                        start: (head + pad) & self.mask,
                        len,
                    });
                }
                Err(now) => head = now,
            }
        }
    }

    /// Reads every committed record in order, up to the first one not committed yet, and frees
    /// their space. `f` gets each non-padding record's kind and words (the header excluded).
    /// Single consumer.
    pub fn drain(&self, mut f: impl FnMut(u64, &[AtomicU64])) -> usize {
        let mut tail = self.tail.load(Ordering::Relaxed);
        let mut records = 0;
        loop {
            let at = tail & self.mask;
            let h = self.words[at].load(Ordering::Acquire);
            if h & COMMITTED == 0 {
                break;
            }
            let len = (h & 0xffff_ffff) as usize;
            let kind = (h >> 32) & 0x7fff_ffff;
            if len == 0 || at + len > self.words.len() {
                // Cannot happen with well-formed producers; stop rather than loop.
                break;
            }
            if kind != KIND_PAD {
                f(kind, &self.words[at + 1..at + len]);
                records += 1;
            }
            for w in &self.words[at..at + len] {
                w.store(0, Ordering::Relaxed);
            }
            tail += len;
            self.tail.store(tail, Ordering::Release);
        }
        records
    }

    /// Words reserved and not consumed yet.
    pub fn used(&self) -> usize {
        self.head
            .load(Ordering::Relaxed)
            .saturating_sub(self.tail.load(Ordering::Relaxed))
    }
}

impl<'r> Reservation<'r> {
    /// The reserved words after the header.
    pub fn body(&self) -> &'r [AtomicU64] {
        &self.ring.words[self.start + 1..self.start + self.len]
    }

    /// Commits the first `used` words (header included, at least 1) as a record of `kind`; the
    /// rest of the reservation becomes padding.
    pub fn commit(self, kind: u64, used: usize) {
        let used = used.clamp(1, self.len);
        if used < self.len {
            self.ring.words[self.start + used]
                .store(header(self.len - used, KIND_PAD), Ordering::Release);
        }
        self.ring.words[self.start].store(header(used, kind), Ordering::Release);
    }

    /// Gives the space back unused (it becomes padding).
    pub fn cancel(self) {
        let len = self.len;
        self.commit(KIND_PAD, len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(ring: &Ring, len: usize, used: usize, value: u64) -> bool {
        let Some(r) = ring.reserve(len) else {
            return false;
        };
        for w in &r.body()[..used - 1] {
            w.store(value, Ordering::Relaxed);
        }
        r.commit(KIND_SAMPLE, used);
        true
    }

    #[test]
    fn records_come_out_in_order_and_space_comes_back() {
        let ring = Ring::new(1024).unwrap();
        let mut expected = Vec::new();
        let mut next = 0u64;
        for round in 0..200 {
            for _ in 0..(round % 7 + 1) {
                let len = 3 + (next as usize * 37) % 200;
                let used = 1 + (next as usize * 11) % len;
                if write(&ring, len, used, next) {
                    expected.push((next, used - 1));
                }
                next += 1;
            }
            let mut got = Vec::new();
            ring.drain(|kind, words| {
                assert_eq!(kind, KIND_SAMPLE);
                let v = words.first().map(|w| w.load(Ordering::Relaxed));
                assert!(words.iter().all(|w| Some(w.load(Ordering::Relaxed)) == v));
                got.push((v, words.len()));
            });
            for (g, e) in got.iter().zip(expected.drain(..)) {
                assert_eq!(g.1, e.1);
                if e.1 > 0 {
                    assert_eq!(g.0, Some(e.0));
                }
            }
            assert_eq!(ring.used(), 0);
        }
    }

    #[test]
    fn a_full_ring_refuses_and_an_uncommitted_record_holds_the_rest_back() {
        let ring = Ring::new(1024).unwrap();
        let held = ring.reserve(200).unwrap();
        assert!(write(&ring, 200, 10, 1));
        assert!(write(&ring, 200, 10, 2));
        assert!(write(&ring, 200, 10, 3));
        assert!(write(&ring, 200, 10, 4));
        assert!(!write(&ring, 200, 10, 5), "full");
        assert!(ring.reserve(300).is_none(), "over a quarter");
        assert_eq!(
            ring.drain(|_, _| {}),
            0,
            "the first record is not committed"
        );
        held.cancel();
        assert_eq!(ring.drain(|_, _| {}), 4);
        assert!(write(&ring, 200, 10, 6), "room again");
    }

    #[test]
    fn producers_on_many_threads() {
        let ring = std::sync::Arc::new(Ring::new(1 << 14).unwrap());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let producers: Vec<_> = (0..4u64)
            .map(|t| {
                let ring = ring.clone();
                std::thread::spawn(move || {
                    let mut written = 0u64;
                    for i in 0..20_000u64 {
                        let len = 2 + (i as usize % 50);
                        if write(&ring, len, len, t << 32 | i) {
                            written += 1;
                        }
                    }
                    written
                })
            })
            .collect();
        let consumer = {
            let (ring, stop) = (ring.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut last = [None::<u64>; 4];
                let mut n = 0u64;
                loop {
                    let done = stop.load(Ordering::Acquire);
                    ring.drain(|_, words| {
                        let v = words[0].load(Ordering::Relaxed);
                        let (t, i) = ((v >> 32) as usize, v & 0xffff_ffff);
                        assert!(words.iter().all(|w| w.load(Ordering::Relaxed) == v));
                        assert!(last[t].is_none_or(|l| l < i), "per-producer order");
                        last[t] = Some(i);
                        n += 1;
                    });
                    if done {
                        return n;
                    }
                    std::thread::yield_now();
                }
            })
        };
        let written: u64 = producers.into_iter().map(|p| p.join().unwrap()).sum();
        stop.store(true, Ordering::Release);
        assert_eq!(consumer.join().unwrap(), written);
    }
}
