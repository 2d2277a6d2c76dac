//! The bytes of a JFR chunk: compressed integers, strings, the metadata element tree, events
//! with their size prefix and the chunk header. What the JDK's reader
//! (`jdk.jfr.internal.consumer.ChunkHeader`, `RecordingInput`, `MetadataReader`,
//! `StringParser`) expects; knows nothing of profiles.

use std::collections::HashMap;

/// Size of the chunk header; events start after it.
pub(crate) const HEADER_SIZE: usize = 68;

/// Event type id of the metadata event.
pub(crate) const METADATA_EVENT: u64 = 0;
/// Event type id of checkpoint (constant pool) events.
pub(crate) const CHECKPOINT_EVENT: u64 = 1;

/// String encodings (the first byte of a string value).
const STRING_NULL: u8 = 0;
const STRING_EMPTY: u8 = 1;
const STRING_UTF8: u8 = 3;

/// Chunk header flag: integers are compressed (LEB128).
const FLAG_COMPRESSED_INTS: u8 = 1;
/// Chunk header flag: the last chunk of the recording.
const FLAG_FINAL_CHUNK: u8 = 2;

/// An append-only buffer of JFR values.
#[derive(Default)]
pub(crate) struct Buf(pub(crate) Vec<u8>);

impl Buf {
    /// An unsigned compressed integer: 7 bits a byte, low bits first, the high bit set on all
    /// bytes but the last; the ninth byte, if any, carries 8 bits.
    pub(crate) fn varint(&mut self, mut v: u64) -> &mut Self {
        for _ in 0..8 {
            if v < 0x80 {
                self.0.push(v as u8);
                return self;
            }
            self.0.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
        self
    }

    /// A Java `long`.
    pub(crate) fn long(&mut self, v: i64) -> &mut Self {
        self.varint(v as u64)
    }

    /// A Java `int`: its 32 bits, so -1 takes five bytes as the JDK writes it.
    pub(crate) fn int(&mut self, v: i32) -> &mut Self {
        self.varint(u64::from(v as u32))
    }

    /// A `boolean`: one byte.
    pub(crate) fn boolean(&mut self, v: bool) -> &mut Self {
        self.0.push(u8::from(v));
        self
    }

    /// A string value: null, empty, or UTF-8 bytes with their length.
    pub(crate) fn string(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            None => self.0.push(STRING_NULL),
            Some("") => self.0.push(STRING_EMPTY),
            Some(s) => {
                self.0.push(STRING_UTF8);
                self.varint(s.len() as u64);
                self.0.extend_from_slice(s.as_bytes());
            }
        }
        self
    }

    /// Appends `body` as one event: its size (counting the size field itself) first.
    pub(crate) fn event(&mut self, body: &[u8]) -> &mut Self {
        let mut size = body.len() + 1;
        while varint_len(size as u64) + body.len() != size {
            size = body.len() + varint_len(size as u64);
        }
        self.varint(size as u64);
        self.0.extend_from_slice(body);
        self
    }
}

/// Bytes of `v` as a compressed integer.
pub(crate) fn varint_len(v: u64) -> usize {
    let bits = 64 - v.leading_zeros() as usize;
    bits.div_ceil(7).clamp(1, 9)
}

/// One element of the metadata tree: a name, string attributes, children.
#[derive(Debug)]
pub(crate) struct Element {
    name: &'static str,
    attributes: Vec<(String, String)>,
    children: Vec<Element>,
}

impl Element {
    pub(crate) fn new(name: &'static str) -> Self {
        Self {
            name,
            attributes: Vec::new(),
            children: Vec::new(),
        }
    }

    pub(crate) fn attr(mut self, name: impl ToString, value: impl ToString) -> Self {
        self.attributes.push((name.to_string(), value.to_string()));
        self
    }

    pub(crate) fn child(mut self, child: Element) -> Self {
        self.children.push(child);
        self
    }

    pub(crate) fn push(&mut self, child: Element) {
        self.children.push(child);
    }

    fn strings<'a>(&'a self, pool: &mut Vec<&'a str>, index: &mut HashMap<&'a str, usize>) {
        let mut add = |s: &'a str| {
            if !index.contains_key(s) {
                index.insert(s, pool.len());
                pool.push(s);
            }
        };
        add(self.name);
        for (k, v) in &self.attributes {
            add(k);
            add(v);
        }
        for c in &self.children {
            c.strings(pool, index);
        }
    }

    fn write(&self, out: &mut Buf, index: &HashMap<&str, usize>) {
        out.varint(index[self.name] as u64);
        out.varint(self.attributes.len() as u64);
        for (k, v) in &self.attributes {
            out.varint(index[k.as_str()] as u64);
            out.varint(index[v.as_str()] as u64);
        }
        out.varint(self.children.len() as u64);
        for c in &self.children {
            c.write(out, index);
        }
    }
}

/// The metadata event's payload after its header: the string table, then the element tree
/// rooted at `root`, every name and attribute as an index into the table.
pub(crate) fn metadata_payload(root: &Element, out: &mut Buf) {
    let mut pool = Vec::new();
    let mut index = HashMap::new();
    root.strings(&mut pool, &mut index);
    out.varint(pool.len() as u64);
    for s in &pool {
        out.string(Some(s));
    }
    root.write(out, &index);
}

/// What the chunk header says besides positions: the start (ns since the epoch) and the
/// duration; ticks are nanoseconds from the start.
pub(crate) struct ChunkTimes {
    pub(crate) start_nanos: i64,
    pub(crate) duration_nanos: i64,
}

/// Ticks per second of every timestamp in the file: ticks are nanoseconds.
pub(crate) const TICKS_PER_SECOND: i64 = 1_000_000_000;

/// A complete single-chunk file: header, `events`, then the checkpoint event and the metadata
/// event (each already framed by [`Buf::event`]), with the header pointing at both.
pub(crate) fn chunk(
    events: &[u8],
    checkpoint: &[u8],
    metadata: &[u8],
    times: &ChunkTimes,
) -> Vec<u8> {
    let checkpoint_at = HEADER_SIZE + events.len();
    let metadata_at = checkpoint_at + checkpoint.len();
    let size = metadata_at + metadata.len();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(b"FLR\0");
    out.extend_from_slice(&2u16.to_be_bytes()); // major
    out.extend_from_slice(&1u16.to_be_bytes()); // minor
    out.extend_from_slice(&(size as i64).to_be_bytes());
    out.extend_from_slice(&(checkpoint_at as i64).to_be_bytes());
    out.extend_from_slice(&(metadata_at as i64).to_be_bytes());
    out.extend_from_slice(&times.start_nanos.to_be_bytes());
    out.extend_from_slice(&times.duration_nanos.to_be_bytes());
    out.extend_from_slice(&0i64.to_be_bytes()); // start ticks
    out.extend_from_slice(&TICKS_PER_SECOND.to_be_bytes());
    // File state 0 (finished), two unused bytes, the flags.
    out.extend_from_slice(&[0, 0, 0, FLAG_COMPRESSED_INTS | FLAG_FINAL_CHUNK]);
    debug_assert_eq!(out.len(), HEADER_SIZE);
    out.extend_from_slice(events);
    out.extend_from_slice(checkpoint);
    out.extend_from_slice(metadata);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_integers_as_the_jdk_writes_them() {
        let enc = |v: u64| {
            let mut b = Buf::default();
            b.varint(v);
            b.0
        };
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(127), [127]);
        assert_eq!(enc(128), [0x80, 1]);
        assert_eq!(enc(300), [0xac, 2]);
        // Nine bytes at most, the last one carrying 8 bits.
        assert_eq!(enc(u64::MAX), [0xff; 9]);
        for v in [0, 1, 127, 128, 16_383, 16_384, 1 << 56, u64::MAX] {
            assert_eq!(enc(v).len(), varint_len(v), "{v}");
        }
        let mut b = Buf::default();
        b.int(-1);
        assert_eq!(b.0, [0xff, 0xff, 0xff, 0xff, 0x0f]);
    }

    #[test]
    fn an_event_counts_its_own_size_field() {
        for len in [0, 1, 125, 126, 127, 128, 16_381, 16_382, 16_383, 20_000] {
            let mut b = Buf::default();
            b.event(&vec![7; len]);
            let mut size = 0u64;
            let mut shift = 0;
            for &byte in &b.0 {
                size |= u64::from(byte & 0x7f) << shift;
                shift += 7;
                if byte < 0x80 {
                    break;
                }
            }
            assert_eq!(size as usize, b.0.len(), "body of {len}");
        }
    }

    #[test]
    fn strings_null_empty_and_utf8() {
        let mut b = Buf::default();
        b.string(None).string(Some("")).string(Some("é"));
        assert_eq!(b.0, [0, 1, 3, 2, 0xc3, 0xa9]);
    }
}
