//! The constant pool, indexed once and decoded lazily.

use std::borrow::Cow;

use crate::bytes::Cursor;
use crate::error::{ClassError, ErrorKind, Result};

/// Constant-pool tags (JVMS 4.4).
#[allow(missing_docs)]
pub mod tag {
    pub const UTF8: u8 = 1;
    pub const INTEGER: u8 = 3;
    pub const FLOAT: u8 = 4;
    pub const LONG: u8 = 5;
    pub const DOUBLE: u8 = 6;
    pub const CLASS: u8 = 7;
    pub const STRING: u8 = 8;
    pub const FIELDREF: u8 = 9;
    pub const METHODREF: u8 = 10;
    pub const INTERFACE_METHODREF: u8 = 11;
    pub const NAME_AND_TYPE: u8 = 12;
    pub const METHOD_HANDLE: u8 = 15;
    pub const METHOD_TYPE: u8 = 16;
    pub const DYNAMIC: u8 = 17;
    pub const INVOKE_DYNAMIC: u8 = 18;
    pub const MODULE: u8 = 19;
    pub const PACKAGE: u8 = 20;
}

/// One decoded constant-pool entry. Strings borrow from the class bytes.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Constant<'a> {
    Utf8(&'a [u8]),
    Integer(i32),
    Float(f32),
    Long(i64),
    Double(f64),
    Class {
        name: u16,
    },
    String {
        utf8: u16,
    },
    Fieldref {
        class: u16,
        name_and_type: u16,
    },
    Methodref {
        class: u16,
        name_and_type: u16,
    },
    InterfaceMethodref {
        class: u16,
        name_and_type: u16,
    },
    NameAndType {
        name: u16,
        descriptor: u16,
    },
    MethodHandle {
        kind: u8,
        reference: u16,
    },
    MethodType {
        descriptor: u16,
    },
    Dynamic {
        bootstrap: u16,
        name_and_type: u16,
    },
    InvokeDynamic {
        bootstrap: u16,
        name_and_type: u16,
    },
    Module {
        name: u16,
    },
    Package {
        name: u16,
    },
    /// The second slot of a Long or Double, and slot 0.
    Unusable,
}

/// The constant pool of one class: the raw bytes plus the offset of each entry.
#[derive(Debug, Clone)]
pub struct ConstantPool<'a> {
    /// The whole class file, so offsets are absolute.
    class: &'a [u8],
    /// Offset of each entry's tag byte; 0 for slot 0 and the second slot of Long/Double.
    offsets: Vec<u32>,
    /// Offset just past the last entry.
    end: usize,
}

/// Bytes after the tag of a constant-pool entry of tag `kind` other than Utf8 (whose length is in
/// the entry); `None` for an unknown tag. One table for `parse` and `parse_quick`.
fn fixed_entry_len(kind: u8) -> Option<usize> {
    Some(match kind {
        tag::INTEGER | tag::FLOAT => 4,
        tag::LONG | tag::DOUBLE => 8,
        tag::CLASS | tag::STRING | tag::METHOD_TYPE | tag::MODULE | tag::PACKAGE => 2,
        tag::FIELDREF
        | tag::METHODREF
        | tag::INTERFACE_METHODREF
        | tag::NAME_AND_TYPE
        | tag::DYNAMIC
        | tag::INVOKE_DYNAMIC => 4,
        tag::METHOD_HANDLE => 3,
        _ => return None,
    })
}

impl<'a> ConstantPool<'a> {
    /// Indexes the pool that starts at `start` (the `constant_pool_count` field).
    pub(crate) fn parse(class: &'a [u8], start: usize) -> Result<Self> {
        // Well-formed pools take the quick loop; anything it rejects is read again
        // by the checked one, which says exactly what is wrong and where.
        if let Some(pool) = Self::parse_quick(class, start) {
            return Ok(pool);
        }
        let mut cur = Cursor::new(&class[start..], start);
        let count = cur.u16("constant_pool_count")? as usize;
        if count == 0 {
            return Err(ClassError::new(
                ErrorKind::BadConstantIndex,
                start,
                "constant_pool_count is 0",
            ));
        }
        let mut offsets = vec![0u32; count];
        let mut i = 1;
        while i < count {
            offsets[i] = cur.offset() as u32;
            let t = cur.u8("constant tag")?;
            let len = match t {
                tag::UTF8 => cur.u16("Utf8 length")? as usize,
                other => fixed_entry_len(other).ok_or_else(|| {
                    ClassError::new(
                        ErrorKind::BadConstantTag,
                        cur.offset() - 1,
                        format!("unknown constant-pool tag {other} at index {i}"),
                    )
                })?,
            };
            cur.skip(len, "constant-pool entry")?;
            if t == tag::LONG || t == tag::DOUBLE {
                if i + 1 >= count {
                    return Err(ClassError::new(
                        ErrorKind::BadConstantIndex,
                        offsets[i] as usize,
                        format!(
                            "8-byte constant at index {i} needs two slots but the pool has {count}"
                        ),
                    ));
                }
                i += 2;
            } else {
                i += 1;
            }
        }
        let end = cur.offset();
        Ok(ConstantPool {
            class,
            offsets,
            end,
        })
    }

    /// `parse` without error reporting: `None` wherever `parse` would fail.
    fn parse_quick(class: &'a [u8], start: usize) -> Option<Self> {
        let byte = |i: usize| class.get(i).copied();
        let count = u16::from_be_bytes([byte(start)?, byte(start + 1)?]) as usize;
        if count == 0 {
            return None;
        }
        let mut offsets = vec![0u32; count];
        let mut at = start + 2;
        let mut i = 1;
        while i < count {
            offsets[i] = at as u32;
            let t = byte(at)?;
            let len = match t {
                tag::UTF8 => 2 + u16::from_be_bytes([byte(at + 1)?, byte(at + 2)?]) as usize,
                other => fixed_entry_len(other)?,
            };
            at += 1 + len;
            if at > class.len() {
                return None;
            }
            if t == tag::LONG || t == tag::DOUBLE {
                if i + 1 >= count {
                    return None;
                }
                i += 2;
            } else {
                i += 1;
            }
        }
        Some(ConstantPool {
            class,
            offsets,
            end: at,
        })
    }

    /// The whole class file the pool belongs to (entry offsets index into it).
    pub(crate) fn class_bytes(&self) -> &'a [u8] {
        self.class
    }

    /// Offset of each entry's tag byte by index; 0 for unusable slots.
    pub(crate) fn raw_offsets(&self) -> &[u32] {
        &self.offsets
    }

    /// A pool on its own, as JVMTI `GetConstantPool` gives one after its count: `bytes` holds the
    /// `constant_pool_count` (big-endian `u16`) and then the entries (JVMS 4.4).
    pub fn parse_standalone(bytes: &'a [u8]) -> Result<Self> {
        Self::parse(bytes, 0)
    }

    /// `constant_pool_count`: one more than the highest index.
    pub fn count(&self) -> u16 {
        self.offsets.len() as u16
    }

    /// Offset just past the pool: where the access flags start.
    pub fn end_offset(&self) -> usize {
        self.end
    }

    /// The tag at `index`, or `None` for slot 0, unusable slots and out-of-range indices.
    pub fn tag(&self, index: u16) -> Option<u8> {
        match self.offsets.get(index as usize) {
            Some(&off) if off != 0 => Some(self.class[off as usize]),
            _ => None,
        }
    }

    /// Offset of the tag byte of entry `index`, or `None` for unusable or out-of-range slots.
    pub fn offset_of(&self, index: u16) -> Option<usize> {
        match self.offsets.get(index as usize) {
            Some(&off) if off != 0 => Some(off as usize),
            _ => None,
        }
    }

    /// The index of the entry whose tag byte is at `offset`, if one is.
    pub fn index_at_offset(&self, offset: usize) -> Option<u16> {
        let o = &self.offsets;
        // Unused slots hold 0 and never follow each other (slot 0, second halves of
        // Long/Double), so "own offset, or the previous slot's" is sorted.
        let key = |i: usize| if o[i] != 0 { o[i] } else { o[i - 1] };
        let (mut lo, mut hi) = (1usize, o.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if (key(mid) as usize) < offset {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo < o.len() && o[lo] as usize == offset).then_some(lo as u16)
    }

    /// The bytes of entry `index` (tag included) in the class file.
    pub fn entry_span(&self, index: u16) -> Option<std::ops::Range<usize>> {
        let off = self.offset_of(index)?;
        let len = match self.class[off] {
            tag::UTF8 => {
                3 + u16::from_be_bytes([self.class[off + 1], self.class[off + 2]]) as usize
            }
            tag::INTEGER | tag::FLOAT => 5,
            tag::LONG | tag::DOUBLE => 9,
            tag::CLASS | tag::STRING | tag::METHOD_TYPE | tag::MODULE | tag::PACKAGE => 3,
            tag::METHOD_HANDLE => 4,
            _ => 5,
        };
        Some(off..off + len)
    }

    /// Raw descriptor bytes of a Fieldref/Methodref/InterfaceMethodref/Dynamic/InvokeDynamic,
    /// read without decoding (the hot path of code analysis).
    pub fn ref_descriptor_bytes(&self, index: u16) -> Option<&'a [u8]> {
        let b = self.class;
        let u16_at = |o: usize| u16::from_be_bytes([b[o], b[o + 1]]);
        let off = self.offset_of(index)?;
        if !matches!(
            b[off],
            tag::FIELDREF
                | tag::METHODREF
                | tag::INTERFACE_METHODREF
                | tag::DYNAMIC
                | tag::INVOKE_DYNAMIC
        ) {
            return None;
        }
        let nat = self.offset_of(u16_at(off + 3))?;
        if b[nat] != tag::NAME_AND_TYPE {
            return None;
        }
        let d = self.offset_of(u16_at(nat + 3))?;
        if b[d] != tag::UTF8 {
            return None;
        }
        Some(&b[d + 3..d + 3 + u16_at(d + 1) as usize])
    }

    /// Decodes the entry at `index`.
    pub fn get(&self, index: u16) -> Result<Constant<'a>> {
        let off = match self.offsets.get(index as usize) {
            Some(&off) if off != 0 => off as usize,
            _ if (index as usize) < self.offsets.len() => return Ok(Constant::Unusable),
            _ => return Err(self.bad_index(index, "out of range")),
        };
        let mut c = Cursor::new(&self.class[off..self.end], off);
        let t = c.u8("tag")?;
        let u16 = |c: &mut Cursor<'a>| c.u16("constant operand");
        Ok(match t {
            tag::UTF8 => {
                let n = c.u16("length")? as usize;
                Constant::Utf8(c.bytes(n, "Utf8")?)
            }
            tag::INTEGER => Constant::Integer(c.i32("int")?),
            tag::FLOAT => Constant::Float(f32::from_bits(c.u32("float")?)),
            tag::LONG => {
                Constant::Long(((c.u32("long")? as u64) << 32 | c.u32("long")? as u64) as i64)
            }
            tag::DOUBLE => Constant::Double(f64::from_bits(
                (c.u32("double")? as u64) << 32 | c.u32("double")? as u64,
            )),
            tag::CLASS => Constant::Class { name: u16(&mut c)? },
            tag::STRING => Constant::String { utf8: u16(&mut c)? },
            tag::FIELDREF => Constant::Fieldref {
                class: u16(&mut c)?,
                name_and_type: u16(&mut c)?,
            },
            tag::METHODREF => Constant::Methodref {
                class: u16(&mut c)?,
                name_and_type: u16(&mut c)?,
            },
            tag::INTERFACE_METHODREF => Constant::InterfaceMethodref {
                class: u16(&mut c)?,
                name_and_type: u16(&mut c)?,
            },
            tag::NAME_AND_TYPE => Constant::NameAndType {
                name: u16(&mut c)?,
                descriptor: u16(&mut c)?,
            },
            tag::METHOD_HANDLE => Constant::MethodHandle {
                kind: c.u8("kind")?,
                reference: u16(&mut c)?,
            },
            tag::METHOD_TYPE => Constant::MethodType {
                descriptor: u16(&mut c)?,
            },
            tag::DYNAMIC => Constant::Dynamic {
                bootstrap: u16(&mut c)?,
                name_and_type: u16(&mut c)?,
            },
            tag::INVOKE_DYNAMIC => Constant::InvokeDynamic {
                bootstrap: u16(&mut c)?,
                name_and_type: u16(&mut c)?,
            },
            tag::MODULE => Constant::Module { name: u16(&mut c)? },
            tag::PACKAGE => Constant::Package { name: u16(&mut c)? },
            _ => unreachable!("tags were checked when the pool was indexed"),
        })
    }

    #[cold]
    fn bad_index(&self, index: u16, why: &str) -> ClassError {
        ClassError::new(
            ErrorKind::BadConstantIndex,
            0,
            format!(
                "constant-pool index {index} is {why} (pool has {} slots)",
                self.offsets.len()
            ),
        )
    }

    /// Raw modified-UTF-8 bytes of the Utf8 entry at `index`.
    pub fn utf8_bytes(&self, index: u16) -> Result<&'a [u8]> {
        // The common case without decoding a `Constant`: `parse` checked every entry's bounds.
        if let Some(&off) = self.offsets.get(index as usize) {
            let o = off as usize;
            if off != 0 && self.class[o] == tag::UTF8 {
                let len = u16::from_be_bytes([self.class[o + 1], self.class[o + 2]]) as usize;
                return Ok(&self.class[o + 3..o + 3 + len]);
            }
        }
        match self.get(index)? {
            Constant::Utf8(b) => Ok(b),
            _ => Err(self.bad_index(index, "not a Utf8 entry")),
        }
    }

    /// The Utf8 entry at `index` as text (modified UTF-8 decoded; borrowed when plain ASCII).
    pub fn utf8(&self, index: u16) -> Result<Cow<'a, str>> {
        decode_mutf8(self.utf8_bytes(index)?).ok_or_else(|| {
            ClassError::new(
                ErrorKind::BadUtf8,
                self.offsets[index as usize] as usize,
                "malformed modified UTF-8",
            )
        })
    }

    /// The internal name of the CONSTANT_Class at `index`.
    pub fn class_name(&self, index: u16) -> Result<Cow<'a, str>> {
        match self.get(index)? {
            Constant::Class { name } => self.utf8(name),
            _ => Err(self.bad_index(index, "not a Class entry")),
        }
    }

    /// `(name, descriptor)` of the NameAndType at `index`.
    pub fn name_and_type(&self, index: u16) -> Result<(Cow<'a, str>, Cow<'a, str>)> {
        match self.get(index)? {
            Constant::NameAndType { name, descriptor } => {
                Ok((self.utf8(name)?, self.utf8(descriptor)?))
            }
            _ => Err(self.bad_index(index, "not a NameAndType entry")),
        }
    }

    /// `(class, name, descriptor)` of a Fieldref, Methodref or InterfaceMethodref.
    pub fn member_ref(&self, index: u16) -> Result<MemberRef<'a>> {
        match self.get(index)? {
            Constant::Fieldref {
                class,
                name_and_type,
            }
            | Constant::Methodref {
                class,
                name_and_type,
            }
            | Constant::InterfaceMethodref {
                class,
                name_and_type,
            } => {
                let (name, descriptor) = self.name_and_type(name_and_type)?;
                Ok(MemberRef {
                    class: self.class_name(class)?,
                    name,
                    descriptor,
                })
            }
            _ => Err(self.bad_index(index, "not a field or method reference")),
        }
    }

    /// The descriptor named by a member reference, InvokeDynamic or Dynamic entry.
    pub fn descriptor_of(&self, index: u16) -> Result<Cow<'a, str>> {
        match self.get(index)? {
            Constant::Fieldref { name_and_type, .. }
            | Constant::Methodref { name_and_type, .. }
            | Constant::InterfaceMethodref { name_and_type, .. }
            | Constant::Dynamic { name_and_type, .. }
            | Constant::InvokeDynamic { name_and_type, .. } => {
                Ok(self.name_and_type(name_and_type)?.1)
            }
            _ => Err(self.bad_index(index, "not a reference with a descriptor")),
        }
    }

    /// The raw bytes of the pool entries (without the count), for copying verbatim.
    pub fn entries_bytes(&self) -> &'a [u8] {
        let start = self.offsets.get(1).copied().unwrap_or(0) as usize;
        if self.offsets.len() <= 1 {
            &self.class[self.end..self.end]
        } else {
            &self.class[start..self.end]
        }
    }
}

/// A resolved field or method reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRef<'a> {
    /// Internal name of the owner class (`java/lang/String`).
    pub class: Cow<'a, str>,
    /// Member name.
    pub name: Cow<'a, str>,
    /// Field or method descriptor.
    pub descriptor: Cow<'a, str>,
}

/// Decodes modified UTF-8 (JVMS 4.4.7). Returns `None` when malformed.
///
/// Unpaired surrogates (legal in class files) become U+FFFD, so the text is
/// for display and matching; byte-exact work uses the raw bytes.
pub fn decode_mutf8(bytes: &[u8]) -> Option<Cow<'_, str>> {
    // ASCII without NUL is the same in modified UTF-8 and UTF-8 (checks that run a word at a time).
    if let Ok(s) = std::str::from_utf8(bytes) {
        if s.is_ascii() && !bytes.contains(&0) {
            return Some(Cow::Borrowed(s));
        }
    }
    let mut units: Vec<u16> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b != 0 && b < 0x80 {
            units.push(b as u16);
            i += 1;
        } else if b & 0xE0 == 0xC0 {
            let b2 = *bytes.get(i + 1)?;
            if b2 & 0xC0 != 0x80 {
                return None;
            }
            units.push(((b as u16 & 0x1F) << 6) | (b2 as u16 & 0x3F));
            i += 2;
        } else if b & 0xF0 == 0xE0 {
            let b2 = *bytes.get(i + 1)?;
            let b3 = *bytes.get(i + 2)?;
            if b2 & 0xC0 != 0x80 || b3 & 0xC0 != 0x80 {
                return None;
            }
            units.push(((b as u16 & 0x0F) << 12) | ((b2 as u16 & 0x3F) << 6) | (b3 as u16 & 0x3F));
            i += 3;
        } else {
            return None;
        }
    }
    Some(Cow::Owned(String::from_utf16_lossy(&units)))
}

/// Encodes text as modified UTF-8, for new constant-pool entries.
pub fn encode_mutf8(text: &str) -> Vec<u8> {
    // ASCII without NUL is its own encoding (names and descriptors almost always are).
    if text.bytes().all(|b| (1..0x80).contains(&b)) {
        return text.as_bytes().to_vec();
    }
    let mut out = Vec::with_capacity(text.len());
    for unit in text.encode_utf16() {
        match unit {
            0x01..=0x7F => out.push(unit as u8),
            0 | 0x80..=0x7FF => {
                out.push(0xC0 | (unit >> 6) as u8);
                out.push(0x80 | (unit & 0x3F) as u8);
            }
            _ => {
                out.push(0xE0 | (unit >> 12) as u8);
                out.push(0x80 | ((unit >> 6) & 0x3F) as u8);
                out.push(0x80 | (unit & 0x3F) as u8);
            }
        }
    }
    out
}
