//! The byte-preserving class writer.
//!
//! Why our own writer rather than a class-file model that re-serialises: the
//! `RetransformClasses` contract (never renumber the constant pool, change nothing
//! but method code) and byte-identical round trips need a writer that copies every
//! byte it was not asked to change. Existing crates re-encode and drift (see
//! docs/classfile.md). Here the constant pool is copied verbatim with new entries
//! appended, untouched methods are copied as slices, and only replaced or added
//! methods are written anew.

use std::collections::HashMap;

use crate::bytes::PutBe;
use crate::class::{ClassFile, Member};
use crate::constant_pool::{encode_mutf8, tag};
use crate::error::Result;

/// The constant pool has no room for the entries a probe needs (65535 slots at most).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("constant pool is full (65535 entries)")]
pub struct PoolFull;

/// Appends constant-pool entries after the existing ones, reusing identical entries.
///
/// Lookups in the original pool build no index: they scan the entries' tags (and
/// UTF-8 lengths) and compare bytes. A probe needs a handful of entries per class,
/// so this is far cheaper than indexing every entry of every class.
#[derive(Debug)]
pub struct PoolAppender<'a> {
    class: &'a ClassFile<'a>,
    appended: Vec<u8>,
    next_index: u32,
    /// Entries appended so far: (offset in `appended`, length, index).
    new_entries: Vec<(u32, u32, u16)>,
    /// The last Integer appended: a method pushes its id several times in a row.
    last_integer: Option<(i32, u16)>,
}

impl<'a> PoolAppender<'a> {
    /// An appender for `class`'s pool.
    pub fn new(class: &'a ClassFile<'a>) -> Self {
        PoolAppender {
            class,
            appended: Vec::new(),
            next_index: class.constant_pool.count() as u32,
            new_entries: Vec::new(),
            last_integer: None,
        }
    }

    /// Number of entries appended so far (counting Long/Double as two).
    pub fn appended_slots(&self) -> u32 {
        self.next_index - self.class.constant_pool.count() as u32
    }

    fn original_count(&self) -> u16 {
        self.class.constant_pool.count()
    }

    /// Index of an existing entry equal to `entry` (tag + body).
    fn find(&self, entry: &[u8]) -> Option<u16> {
        let cp = &self.class.constant_pool;
        let bytes = self.class.bytes;
        let found = if entry[0] == tag::UTF8 {
            // Length bytes first: most entries differ there, so few bodies are compared.
            (1..cp.count()).find(|&i| {
                cp.offset_of(i).is_some_and(|o| {
                    bytes[o] == tag::UTF8
                        && bytes[o + 1] == entry[1]
                        && bytes[o + 2] == entry[2]
                        && &bytes[o..o + entry.len()] == entry
                })
            })
        } else if self.refers_to_appended(entry) {
            // The original pool cannot hold an entry that refers to an appended one.
            None
        } else {
            (1..cp.count()).find(|&i| {
                cp.offset_of(i).is_some_and(|o| {
                    bytes[o] == entry[0]
                        && bytes.get(o + 1) == entry.get(1)
                        && bytes.get(o..o + entry.len()) == Some(entry)
                })
            })
        };
        found.or_else(|| {
            self.new_entries
                .iter()
                .find(|&&(o, l, _)| &self.appended[o as usize..(o + l) as usize] == entry)
                .map(|&(_, _, i)| i)
        })
    }

    fn refers_to_appended(&self, entry: &[u8]) -> bool {
        let refs = match entry[0] {
            tag::CLASS | tag::STRING | tag::METHOD_TYPE => 1,
            tag::NAME_AND_TYPE | tag::FIELDREF | tag::METHODREF | tag::INTERFACE_METHODREF => 2,
            _ => 0,
        };
        (0..refs).any(|k| {
            u16::from_be_bytes([entry[1 + 2 * k], entry[2 + 2 * k]]) >= self.original_count()
        })
    }

    fn intern(&mut self, entry: Vec<u8>) -> Result<u16, PoolFull> {
        if let Some(i) = self.find(&entry) {
            return Ok(i);
        }
        self.append(entry)
    }

    /// Like `intern`, but reuses only appended entries: for entries that accompany a
    /// new one (the members of a class the pool never mentioned) a search of the
    /// original pool rarely pays for itself.
    fn intern_appended(&mut self, entry: Vec<u8>) -> Result<u16, PoolFull> {
        let known = self
            .new_entries
            .iter()
            .find(|&&(o, l, _)| self.appended[o as usize..(o + l) as usize] == entry[..])
            .map(|&(_, _, i)| i);
        match known {
            Some(i) => Ok(i),
            None => self.append(entry),
        }
    }

    fn append(&mut self, entry: Vec<u8>) -> Result<u16, PoolFull> {
        let slots = if entry[0] == tag::LONG || entry[0] == tag::DOUBLE {
            2
        } else {
            1
        };
        if self.next_index + slots > 0xFFFF {
            return Err(PoolFull);
        }
        let index = self.next_index as u16;
        self.next_index += slots;
        self.new_entries
            .push((self.appended.len() as u32, entry.len() as u32, index));
        self.appended.extend_from_slice(&entry);
        Ok(index)
    }

    /// A CONSTANT_Utf8.
    pub fn utf8(&mut self, text: &str) -> Result<u16, PoolFull> {
        self.intern(utf8_entry(text)?)
    }

    fn two(&mut self, t: u8, a: u16, b: Option<u16>) -> Result<u16, PoolFull> {
        self.intern(two_entry(t, a, b))
    }

    /// A CONSTANT_Class for an internal name or array descriptor.
    pub fn class(&mut self, internal_name: &str) -> Result<u16, PoolFull> {
        let n = self.utf8(internal_name)?;
        self.two(tag::CLASS, n, None)
    }

    /// A CONSTANT_NameAndType.
    pub fn name_and_type(&mut self, name: &str, descriptor: &str) -> Result<u16, PoolFull> {
        let n = self.utf8(name)?;
        let d = self.utf8(descriptor)?;
        self.two(tag::NAME_AND_TYPE, n, Some(d))
    }

    /// A CONSTANT_Methodref.
    pub fn method_ref(
        &mut self,
        class: &str,
        name: &str,
        descriptor: &str,
    ) -> Result<u16, PoolFull> {
        let c = self.class(class)?;
        if c >= self.original_count() {
            // A class new to this pool: its NameAndType and strings are appended as well.
            let n = self.intern_appended(utf8_entry(name)?)?;
            let d = self.intern_appended(utf8_entry(descriptor)?)?;
            let nt = self.intern_appended(two_entry(tag::NAME_AND_TYPE, n, Some(d)))?;
            return self.intern_appended(two_entry(tag::METHODREF, c, Some(nt)));
        }
        let nt = self.name_and_type(name, descriptor)?;
        self.two(tag::METHODREF, c, Some(nt))
    }

    /// A CONSTANT_Integer. Method ids are unique per method, so they are appended
    /// without searching (a search per method would cost more than a rare duplicate),
    /// reusing only the previous one.
    pub fn integer(&mut self, value: i32) -> Result<u16, PoolFull> {
        if let Some((v, i)) = self.last_integer {
            if v == value {
                return Ok(i);
            }
        }
        let mut e = vec![tag::INTEGER];
        e.put_u32(value as u32);
        let i = self.append(e)?;
        self.last_integer = Some((value, i));
        Ok(i)
    }

    /// The new `constant_pool_count`.
    pub fn count(&self) -> u16 {
        self.next_index as u16
    }

    /// The appended entries, encoded.
    pub fn appended_bytes(&self) -> &[u8] {
        &self.appended
    }
}

fn utf8_entry(text: &str) -> Result<Vec<u8>, PoolFull> {
    let body = encode_mutf8(text);
    if body.len() > 0xFFFF {
        return Err(PoolFull);
    }
    let mut e = Vec::with_capacity(3 + body.len());
    e.push(tag::UTF8);
    e.put_u16(body.len() as u16);
    e.extend_from_slice(&body);
    Ok(e)
}

fn two_entry(t: u8, a: u16, b: Option<u16>) -> Vec<u8> {
    let mut e = Vec::with_capacity(5);
    e.push(t);
    e.put_u16(a);
    if let Some(b) = b {
        e.put_u16(b);
    }
    e
}

/// Assembles the patched class: original bytes plus appended constants, replaced and added methods.
#[derive(Debug)]
pub struct ClassPatcher<'a> {
    class: &'a ClassFile<'a>,
    /// The constant-pool appender; use it to create every index the new code refers to.
    pub pool: PoolAppender<'a>,
    replaced: HashMap<usize, Vec<u8>>,
    added: Vec<Vec<u8>>,
}

impl<'a> ClassPatcher<'a> {
    /// A patcher that, with no edits, writes `class` back byte for byte.
    pub fn new(class: &'a ClassFile<'a>) -> Self {
        ClassPatcher {
            class,
            pool: PoolAppender::new(class),
            replaced: HashMap::new(),
            added: Vec::new(),
        }
    }

    /// Replaces method number `index` with a complete `method_info`.
    pub fn replace_method(&mut self, index: usize, method_info: Vec<u8>) {
        self.replaced.insert(index, method_info);
    }

    /// Appends a complete `method_info` after the existing methods.
    pub fn add_method(&mut self, method_info: Vec<u8>) {
        self.added.push(method_info);
    }

    /// True when nothing would change.
    pub fn is_unchanged(&self) -> bool {
        self.replaced.is_empty() && self.added.is_empty() && self.pool.appended_slots() == 0
    }

    /// Writes the class.
    pub fn finish(self) -> Vec<u8> {
        let c = self.class;
        let b = c.bytes;
        let extra: usize = self.replaced.values().map(Vec::len).sum::<usize>()
            + self.added.iter().map(Vec::len).sum::<usize>()
            + self.pool.appended_bytes().len();
        let mut out = Vec::with_capacity(b.len() + extra);
        out.extend_from_slice(&b[..8]);
        out.put_u16(self.pool.count());
        out.extend_from_slice(&b[10..c.constant_pool.end_offset()]);
        out.extend_from_slice(self.pool.appended_bytes());
        out.extend_from_slice(&b[c.access_offset..c.methods_offset]);
        out.put_u16((c.methods.len() + self.added.len()) as u16);
        for (i, m) in c.methods.iter().enumerate() {
            match self.replaced.get(&i) {
                Some(new) => out.extend_from_slice(new),
                None => out.extend_from_slice(&b[m.span.clone()]),
            }
        }
        for m in &self.added {
            out.extend_from_slice(m);
        }
        out.extend_from_slice(&b[c.attributes_offset..]);
        out
    }
}

/// Builds a `method_info` from `member`, with a new name and/or access and the
/// `Code` attribute body replaced (or added when `code` is given and none existed).
/// Other attributes are copied verbatim, in order.
pub fn rebuild_method(
    class: &ClassFile<'_>,
    member: &Member<'_>,
    access: u16,
    name_index: u16,
    code_name_index: Option<u16>,
    code: Option<&[u8]>,
) -> Vec<u8> {
    let cp = &class.constant_pool;
    let mut out = Vec::with_capacity(member.span.len() + code.map_or(0, |c| c.len()));
    out.put_u16(access);
    out.put_u16(name_index);
    out.put_u16(member.descriptor_index);
    let is_code =
        |a: &crate::RawAttribute<'_>| cp.utf8_bytes(a.name_index).ok() == Some(b"Code".as_slice());
    let has_code = member.attributes.iter().any(is_code);
    let count = member.attributes.len() + usize::from(code.is_some() && !has_code);
    out.put_u16(count as u16);
    for a in &member.attributes {
        match code {
            Some(body) if is_code(a) => {
                out.put_u16(a.name_index);
                out.put_u32(body.len() as u32);
                out.extend_from_slice(body);
            }
            _ => out.extend_from_slice(&class.bytes[a.span()]),
        }
    }
    if let (Some(body), false) = (code, has_code) {
        out.put_u16(code_name_index.expect("a Code name index when adding code"));
        out.put_u32(body.len() as u32);
        out.extend_from_slice(body);
    }
    out
}

/// Parses `bytes` and writes them back through the patcher with no edits.
/// The result is byte-identical to the input: the test of the writer's fidelity.
pub fn rewrite_unchanged(bytes: &[u8]) -> Result<Vec<u8>> {
    let class = ClassFile::parse(bytes)?;
    Ok(ClassPatcher::new(&class).finish())
}
