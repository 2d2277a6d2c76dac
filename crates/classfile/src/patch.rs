//! The byte-preserving class writer.
//!
//! Why our own writer rather than a class-file model that re-serialises: the
//! `RetransformClasses` contract (never renumber the constant pool, change nothing
//! but method code) and byte-identical round trips need a writer that copies every
//! byte it was not asked to change. Existing crates re-encode and drift (see
//! docs/classfile.md). Here the constant pool is copied verbatim with new entries
//! appended, untouched methods are copied as slices, and only replaced or added
//! methods are written anew.

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
    /// Original-pool lookups answered in advance by [`Self::prefetch`]: entry, index if present.
    memo: Vec<(Vec<u8>, Option<u16>)>,
    /// Reused to encode entries before lookup.
    entry_buf: Vec<u8>,
}

impl<'a> PoolAppender<'a> {
    /// An appender for `class`'s pool.
    pub fn new(class: &'a ClassFile<'a>) -> Self {
        PoolAppender {
            class,
            // Room for a probe's usual additions without growing.
            appended: Vec::with_capacity(256),
            next_index: class.constant_pool.count() as u32,
            new_entries: Vec::with_capacity(32),
            last_integer: None,
            memo: Vec::new(),
            entry_buf: Vec::with_capacity(64),
        }
    }

    /// Finds, in one scan of the original pool, the Utf8 entries of `texts` and the
    /// Class entries that name them, so that later lookups of these entries scan
    /// nothing (each lookup would otherwise scan the whole pool once).
    #[allow(clippy::needless_range_loop)] // k indexes three parallel arrays
    pub fn prefetch(&mut self, texts: &[&str]) {
        const MAX: usize = 4;
        let cp = &self.class.constant_pool;
        let b = self.class.bytes;
        // The wanted Utf8 entries, encoded one after the other in `entry_buf`.
        let mut buf = std::mem::take(&mut self.entry_buf);
        buf.clear();
        buf.reserve(texts.iter().map(|t| 3 + t.len()).sum());
        let mut spans = [(0usize, 0usize); MAX];
        let mut n = 0;
        for t in texts.iter().take(MAX) {
            let start = buf.len();
            if write_utf8_entry(&mut buf, t).is_ok() {
                spans[n] = (start, buf.len());
                n += 1;
            } else {
                buf.truncate(start);
            }
        }
        let wanted = |k: usize| &buf[spans[k].0..spans[k].1];
        // Lengths first: most entries differ from every wanted one there.
        let mut lens = [u16::MAX; MAX];
        for (k, l) in lens.iter_mut().enumerate().take(n) {
            *l = (spans[k].1 - spans[k].0 - 3) as u16;
        }
        let mut utf8 = [None; MAX];
        let offsets = cp.raw_offsets();
        for (i, &o) in offsets.iter().enumerate().skip(1) {
            let o = o as usize;
            if o == 0 || b[o] != tag::UTF8 {
                continue;
            }
            let len = u16::from_be_bytes([b[o + 1], b[o + 2]]);
            if !lens.contains(&len) {
                continue;
            }
            for k in 0..n {
                if utf8[k].is_none() && len == lens[k] && b[o..].starts_with(wanted(k)) {
                    utf8[k] = Some(i as u16);
                }
            }
        }
        let mut classes = [None; MAX];
        if utf8.iter().any(Option::is_some) {
            for (i, &o) in offsets.iter().enumerate().skip(1) {
                let o = o as usize;
                if o == 0 || b[o] != tag::CLASS {
                    continue;
                }
                let name = u16::from_be_bytes([b[o + 1], b[o + 2]]);
                for k in 0..n {
                    if classes[k].is_none() && utf8[k] == Some(name) {
                        classes[k] = Some(i as u16);
                    }
                }
            }
        }
        self.memo.reserve(2 * n);
        for k in 0..n {
            if let Some(u) = utf8[k] {
                let (e, len) = two_entry(tag::CLASS, u, None);
                self.memo.push((e[..len].to_vec(), classes[k]));
            }
            self.memo.push((wanted(k).to_vec(), utf8[k]));
        }
        self.entry_buf = buf;
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
        let memo = self.memo.iter().find(|(e, _)| e[..] == *entry);
        let found = if let Some(&(_, known)) = memo {
            known
        } else if entry[0] == tag::UTF8 {
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

    fn intern(&mut self, entry: &[u8]) -> Result<u16, PoolFull> {
        if let Some(i) = self.find(entry) {
            return Ok(i);
        }
        self.append(entry)
    }

    /// Like `intern`, but reuses only appended entries: for entries that accompany a
    /// new one (the members of a class the pool never mentioned) a search of the
    /// original pool rarely pays for itself.
    fn intern_appended(&mut self, entry: &[u8]) -> Result<u16, PoolFull> {
        let known = self
            .new_entries
            .iter()
            .find(|&&(o, l, _)| self.appended[o as usize..(o + l) as usize] == *entry)
            .map(|&(_, _, i)| i);
        match known {
            Some(i) => Ok(i),
            None => self.append(entry),
        }
    }

    /// Runs `f` with the encoded Utf8 entry of `text` (built in a reused buffer).
    fn with_utf8<R>(
        &mut self,
        text: &str,
        f: impl FnOnce(&mut Self, &[u8]) -> Result<R, PoolFull>,
    ) -> Result<R, PoolFull> {
        let mut e = std::mem::take(&mut self.entry_buf);
        e.clear();
        let r = match write_utf8_entry(&mut e, text) {
            Ok(()) => f(self, &e),
            Err(err) => Err(err),
        };
        self.entry_buf = e;
        r
    }

    fn append(&mut self, entry: &[u8]) -> Result<u16, PoolFull> {
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
        self.appended.extend_from_slice(entry);
        Ok(index)
    }

    /// A CONSTANT_Utf8.
    pub fn utf8(&mut self, text: &str) -> Result<u16, PoolFull> {
        self.with_utf8(text, |p, e| p.intern(e))
    }

    fn two(&mut self, t: u8, a: u16, b: Option<u16>) -> Result<u16, PoolFull> {
        let (e, n) = two_entry(t, a, b);
        self.intern(&e[..n])
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
            let n = self.with_utf8(name, |p, e| p.intern_appended(e))?;
            let d = self.with_utf8(descriptor, |p, e| p.intern_appended(e))?;
            let (e, k) = two_entry(tag::NAME_AND_TYPE, n, Some(d));
            let nt = self.intern_appended(&e[..k])?;
            let (e, k) = two_entry(tag::METHODREF, c, Some(nt));
            return self.intern_appended(&e[..k]);
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
        let v = (value as u32).to_be_bytes();
        let i = self.append(&[tag::INTEGER, v[0], v[1], v[2], v[3]])?;
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

fn write_utf8_entry(e: &mut Vec<u8>, text: &str) -> Result<(), PoolFull> {
    e.push(tag::UTF8);
    if text.len() <= 0xFFFF && text.bytes().all(|b| (1..0x80).contains(&b)) {
        e.put_u16(text.len() as u16);
        e.extend_from_slice(text.as_bytes());
        return Ok(());
    }
    let body = encode_mutf8(text);
    if body.len() > 0xFFFF {
        return Err(PoolFull);
    }
    e.put_u16(body.len() as u16);
    e.extend_from_slice(&body);
    Ok(())
}

/// A one- or two-operand entry (Class, NameAndType, Methodref, ...) and its length.
fn two_entry(t: u8, a: u16, b: Option<u16>) -> ([u8; 5], usize) {
    let [a1, a2] = a.to_be_bytes();
    match b {
        Some(b) => {
            let [b1, b2] = b.to_be_bytes();
            ([t, a1, a2, b1, b2], 5)
        }
        None => ([t, a1, a2, 0, 0], 3),
    }
}

/// Assembles the patched class: original bytes plus appended constants, replaced and added methods.
#[derive(Debug)]
pub struct ClassPatcher<'a> {
    class: &'a ClassFile<'a>,
    /// The constant-pool appender; use it to create every index the new code refers to.
    pub pool: PoolAppender<'a>,
    /// Replaced methods' bytes, one after the other (one buffer, not one per method).
    methods_out: Vec<u8>,
    /// Per method: its replacement's span in `methods_out` (empty until the first replacement).
    replaced: Vec<Option<(u32, u32)>>,
    added: Vec<Vec<u8>>,
}

impl<'a> ClassPatcher<'a> {
    /// A patcher that, with no edits, writes `class` back byte for byte.
    pub fn new(class: &'a ClassFile<'a>) -> Self {
        ClassPatcher {
            class,
            pool: PoolAppender::new(class),
            methods_out: Vec::new(),
            replaced: Vec::new(),
            added: Vec::new(),
        }
    }

    /// Replaces method number `index` with a complete `method_info`.
    pub fn replace_method(&mut self, index: usize, method_info: Vec<u8>) {
        let start = self.methods_out.len();
        self.methods_out.extend_from_slice(&method_info);
        self.commit_method(index, start);
    }

    /// The buffer replaced methods are written to, and the pool, for writing a
    /// `method_info` in place: append it, then [`Self::commit_method`] with its start
    /// (or truncate the buffer back to abandon it).
    pub(crate) fn method_writer(&mut self) -> (&mut Vec<u8>, &mut PoolAppender<'a>) {
        if self.methods_out.capacity() == 0 {
            // Patched methods are a little longer than the originals: one allocation.
            let methods = self.class.attributes_offset - self.class.methods_offset;
            self.methods_out.reserve(methods + methods / 4 + 256);
        }
        (&mut self.methods_out, &mut self.pool)
    }

    /// Makes the bytes of `methods_out` from `start` to its end the new method `index`.
    pub(crate) fn commit_method(&mut self, index: usize, start: usize) {
        if self.replaced.is_empty() {
            self.replaced = vec![None; self.class.methods.len()];
        }
        self.replaced[index] = Some((start as u32, self.methods_out.len() as u32));
    }

    /// Appends a complete `method_info` after the existing methods.
    pub fn add_method(&mut self, method_info: Vec<u8>) {
        self.added.push(method_info);
    }

    /// True when nothing would change.
    pub fn is_unchanged(&self) -> bool {
        self.replaced.iter().all(Option::is_none)
            && self.added.is_empty()
            && self.pool.appended_slots() == 0
    }

    /// Writes the class.
    pub fn finish(self) -> Vec<u8> {
        let c = self.class;
        let b = c.bytes;
        let extra: usize = self.methods_out.len()
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
            match self.replaced.get(i).copied().flatten() {
                Some((s, e)) => out.extend_from_slice(&self.methods_out[s as usize..e as usize]),
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
