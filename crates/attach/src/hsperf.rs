//! Reader of HotSpot's `hsperfdata` files: the shared-memory counters each JVM publishes at
//! `/tmp/hsperfdata_<user>/<pid>` (what `jps` and jvmstat read).
//!
//! Layout (HotSpot `perfMemory.hpp`): a 32-byte prologue, then `num_entries` self-describing entries from
//! `entry_offset`. Every read is bounds-checked: the file is written concurrently by a live JVM, so a torn
//! or truncated file must give an error or fewer counters, never a panic.

use std::collections::BTreeMap;

/// `PERFDATA_MAGIC`, stored big-endian whatever the byte order of the rest.
const MAGIC: u32 = 0xcafe_c0c0;
const PROLOGUE_LEN: usize = 32;
/// Fixed part of an entry: length, name offset, vector length, type/flags/units/variability, data offset.
const ENTRY_HEADER_LEN: usize = 20;

/// A counter's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A `J` (jlong) scalar.
    Long(i64),
    /// A `B` (byte) vector, which HotSpot uses for strings; cut at the first NUL.
    String(String),
}

/// Why an hsperfdata file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HsperfError {
    #[error("not an hsperfdata file (magic {0:#010x}, expected 0xcafec0c0)")]
    BadMagic(u32),
    #[error("hsperfdata file truncated ({len} bytes, needs {needed})")]
    Truncated { len: usize, needed: usize },
    #[error("hsperfdata file is not accessible yet (JVM still starting)")]
    NotAccessible,
}

/// Parses all counters of an hsperfdata image, by name. Entries whose bounds are broken end the scan (the
/// JVM may be appending); what was read before is kept.
pub fn parse(data: &[u8]) -> Result<BTreeMap<String, Value>, HsperfError> {
    if data.len() < PROLOGUE_LEN {
        return Err(HsperfError::Truncated {
            len: data.len(),
            needed: PROLOGUE_LEN,
        });
    }
    let magic = u32::from_be_bytes(data[0..4].try_into().expect("4 bytes"));
    if magic != MAGIC {
        return Err(HsperfError::BadMagic(magic));
    }
    let little = data[4] == 1;
    let rd = Reader { data, little };
    if data[7] == 0 {
        return Err(HsperfError::NotAccessible);
    }
    let entry_offset = rd.u32(24).unwrap_or(0) as usize;
    let num_entries = rd.u32(28).unwrap_or(0);
    let mut counters = BTreeMap::new();
    let mut at = entry_offset;
    for _ in 0..num_entries {
        let Some((name, value, len)) = rd.entry(at) else {
            break;
        };
        counters.insert(name, value);
        at += len;
    }
    Ok(counters)
}

struct Reader<'a> {
    data: &'a [u8],
    little: bool,
}

impl Reader<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        self.data.get(at..at.checked_add(N)?)?.try_into().ok()
    }

    fn u32(&self, at: usize) -> Option<u32> {
        let b = self.bytes::<4>(at)?;
        Some(if self.little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    }

    fn i64(&self, at: usize) -> Option<i64> {
        let b = self.bytes::<8>(at)?;
        Some(if self.little {
            i64::from_le_bytes(b)
        } else {
            i64::from_be_bytes(b)
        })
    }

    /// Reads the entry at `at`: (name, value, entry length). `None` if anything is out of bounds.
    fn entry(&self, at: usize) -> Option<(String, Value, usize)> {
        let len = self.u32(at)? as usize;
        let end = at.checked_add(len)?;
        if len < ENTRY_HEADER_LEN || end > self.data.len() {
            return None;
        }
        let entry = &self.data[at..end];
        let name_offset = self.u32(at + 4)? as usize;
        let vector_length = self.u32(at + 8)? as usize;
        let data_type = entry[12];
        let data_offset = self.u32(at + 16)? as usize;
        let name = c_string(entry.get(name_offset..)?)?;
        let value = match (data_type, vector_length) {
            (b'J', 0) => Value::Long(self.i64(at.checked_add(data_offset)?)?),
            (b'B', n) if n > 0 => {
                let raw = entry.get(data_offset..data_offset.checked_add(n)?)?;
                Value::String(c_string_lossy(raw))
            }
            // Other types (vectors of longs...) are not used by discovery; keep the entry as empty.
            _ => Value::String(String::new()),
        };
        Some((name, value, len))
    }
}

fn c_string(raw: &[u8]) -> Option<String> {
    let nul = raw.iter().position(|&b| b == 0)?;
    Some(String::from_utf8_lossy(&raw[..nul]).into_owned())
}

fn c_string_lossy(raw: &[u8]) -> String {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds an hsperfdata image the way HotSpot lays it out, so the parser is tested on known bytes.
    pub(crate) fn image(little: bool, entries: &[(&str, Value)]) -> Vec<u8> {
        let put32 = |v: &mut Vec<u8>, x: u32| {
            v.extend_from_slice(&if little {
                x.to_le_bytes()
            } else {
                x.to_be_bytes()
            })
        };
        let mut body = Vec::new();
        for (name, value) in entries {
            let mut e = Vec::new();
            let name_offset = ENTRY_HEADER_LEN as u32;
            let data_offset = (ENTRY_HEADER_LEN + name.len() + 1).next_multiple_of(8) as u32;
            let (ty, vlen, data) = match value {
                Value::Long(x) => (
                    b'J',
                    0,
                    if little {
                        x.to_le_bytes().to_vec()
                    } else {
                        x.to_be_bytes().to_vec()
                    },
                ),
                Value::String(s) => {
                    let mut d = s.as_bytes().to_vec();
                    d.resize(s.len() + 8, 0);
                    (b'B', d.len() as u32, d)
                }
            };
            let len = (data_offset as usize + data.len()).next_multiple_of(8) as u32;
            put32(&mut e, len);
            put32(&mut e, name_offset);
            put32(&mut e, vlen);
            e.extend_from_slice(&[ty, 0, 1, 3]);
            put32(&mut e, data_offset);
            e.extend_from_slice(name.as_bytes());
            e.push(0);
            e.resize(data_offset as usize, 0);
            e.extend_from_slice(&data);
            e.resize(len as usize, 0);
            body.extend_from_slice(&e);
        }
        let mut v = MAGIC.to_be_bytes().to_vec();
        v.extend_from_slice(&[u8::from(little), 2, 0, 1]);
        put32(&mut v, (PROLOGUE_LEN + body.len()) as u32);
        put32(&mut v, 0);
        v.extend_from_slice(&[0; 8]);
        put32(&mut v, PROLOGUE_LEN as u32);
        put32(&mut v, entries.len() as u32);
        v.extend_from_slice(&body);
        v
    }

    fn sample() -> Vec<(&'static str, Value)> {
        vec![
            (
                "sun.rt.javaCommand",
                Value::String("com.acme.Main a b".into()),
            ),
            (
                "java.property.java.vm.version",
                Value::String("17.0.15+6".into()),
            ),
            ("sun.os.hrt.frequency", Value::Long(1_000_000_000)),
        ]
    }

    #[test]
    fn reads_both_byte_orders() {
        for little in [true, false] {
            let c = parse(&image(little, &sample())).unwrap();
            assert_eq!(c.len(), 3);
            assert_eq!(
                c["sun.rt.javaCommand"],
                Value::String("com.acme.Main a b".into())
            );
            assert_eq!(
                c["java.property.java.vm.version"],
                Value::String("17.0.15+6".into())
            );
            assert_eq!(c["sun.os.hrt.frequency"], Value::Long(1_000_000_000));
        }
    }

    #[test]
    fn rejects_foreign_and_short_files() {
        assert_eq!(
            parse(b"short"),
            Err(HsperfError::Truncated { len: 5, needed: 32 })
        );
        let mut bad = image(true, &sample());
        bad[0] = 0;
        assert_eq!(parse(&bad), Err(HsperfError::BadMagic(0x00fe_c0c0)));
        let mut starting = image(true, &sample());
        starting[7] = 0;
        assert_eq!(parse(&starting), Err(HsperfError::NotAccessible));
    }

    #[test]
    fn truncated_entries_keep_what_was_read() {
        let full = image(true, &sample());
        // Cut inside the third entry: the first two survive, no panic at any cut point.
        let third_start = full.len() - 56; // 20-byte header + 21-byte name padded to 48, + 8 data
        let c = parse(&full[..third_start + 10]).unwrap();
        assert_eq!(c.len(), 2);
        for cut in PROLOGUE_LEN..full.len() {
            assert!(parse(&full[..cut]).unwrap().len() <= 3);
        }
    }
}
