//! Per-method (and per-site) flags the probes read on every call, lock-free: a two-level table indexed by the global
//! method id (chunks allocated on first use, never freed, so a reader never sees freed memory).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// The method is instrumented in the current session (probes of older sessions see 0 and do nothing).
pub const ACTIVE: u8 = 1;
/// The method matches a root pattern: entering it starts recording on its thread.
pub const ROOT: u8 = 2;
/// Its first invocation was handled (lazy revelation done).
pub const INVOKED: u8 = 4;
/// `adaptive` dropped the method's probes (`site_flags::drop_probes`): its entries are no
/// longer recorded; an exit is, for an invocation entered before (the collector tells).
pub const DROPPED: u8 = 8;
/// `reveal=async`: its first invocation was queued for the reveal thread, which has not
/// instrumented its callees yet (its invocations meanwhile are counted as unrevealed).
pub const PENDING: u8 = 32;

const CHUNK_BITS: u32 = 16;
const CHUNK: usize = 1 << CHUNK_BITS;
/// Ids beyond `CHUNKS * CHUNK` (16 Mi) are never active.
const CHUNKS: usize = 256;

type Chunk = [AtomicU8; CHUNK];

/// A byte of flags per id, lock-free to read.
pub struct FlagTable {
    /// Chunks made on first use; `OnceLock::get` is one Acquire load.
    chunks: [OnceLock<Box<Chunk>>; CHUNKS],
}

/// Per-method flags, by global method id.
static METHODS: FlagTable = FlagTable::new();
/// Sites that were reached with no receiver (deferred sites, through `Hooks.site`),
/// by global site id: [`FIRED`] once the call's target is instrumented.
pub static SITES: FlagTable = FlagTable::new();
/// A site's call was revealed (in [`SITES`]).
pub const FIRED: u8 = 1;

/// Largest id the table can hold, plus one.
#[cfg(test)]
pub const MAX_IDS: u32 = (CHUNKS * CHUNK) as u32;

impl FlagTable {
    pub const fn new() -> Self {
        FlagTable {
            chunks: [const { OnceLock::new() }; CHUNKS],
        }
    }

    #[inline]
    pub fn get(&self, id: u32) -> u8 {
        match self
            .chunks
            .get((id >> CHUNK_BITS) as usize)
            .and_then(OnceLock::get)
        {
            Some(chunk) => chunk[id as usize & (CHUNK - 1)].load(Ordering::Acquire),
            None => 0,
        }
    }

    fn slot(&self, id: u32) -> Option<&AtomicU8> {
        let chunk = self
            .chunks
            .get((id >> CHUNK_BITS) as usize)?
            .get_or_init(|| Box::new([const { AtomicU8::new(0) }; CHUNK]));
        Some(&chunk[id as usize & (CHUNK - 1)])
    }

    /// Sets bits of `id`; false if the id is beyond the table.
    pub fn set(&self, id: u32, bits: u8) -> bool {
        self.slot(id)
            .map(|s| s.fetch_or(bits, Ordering::Release))
            .is_some()
    }

    /// Clears `bits` of `id`.
    pub fn clear_bits(&self, id: u32, bits: u8) {
        if self.get(id) & bits != 0 {
            if let Some(s) = self.slot(id) {
                s.fetch_and(!bits, Ordering::Release);
            }
        }
    }

    /// Clears every flag of `id`.
    pub fn clear(&self, id: u32) {
        if self.get(id) != 0 {
            if let Some(s) = self.slot(id) {
                s.store(0, Ordering::Release);
            }
        }
    }
}

/// The flags of method `id`.
#[inline]
pub fn get(id: u32) -> u8 {
    METHODS.get(id)
}

/// Sets bits of method `id`; false if the id is beyond the table.
pub fn set(id: u32, bits: u8) -> bool {
    METHODS.set(id, bits)
}

/// Clears `bits` of method `id`.
pub fn clear_bits(id: u32, bits: u8) {
    METHODS.clear_bits(id, bits)
}

/// Clears every flag of method `id`.
pub fn clear(id: u32) {
    METHODS.clear(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_clear_across_chunks() {
        let ids = [7_000_000u32, 7_000_000 + CHUNK as u32, MAX_IDS - 1];
        for id in ids {
            assert_eq!(get(id), 0);
            assert!(set(id, ACTIVE));
            assert!(set(id, ROOT));
            assert_eq!(get(id), ACTIVE | ROOT);
            clear_bits(id, ROOT | PENDING);
            assert_eq!(get(id), ACTIVE);
            clear(id);
            assert_eq!(get(id), 0);
        }
        assert!(!set(MAX_IDS, ACTIVE));
        assert_eq!(get(MAX_IDS), 0);
    }

    #[test]
    fn sites_are_a_table_of_their_own() {
        let id = 7_100_000u32;
        assert!(SITES.set(id, FIRED));
        assert_eq!((SITES.get(id), get(id)), (FIRED, 0));
        SITES.clear(id);
        assert_eq!(SITES.get(id), 0);
    }
}
