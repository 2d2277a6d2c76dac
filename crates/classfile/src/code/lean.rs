//! A lean single-pass editor for the most common edit: a prologue at offset 0, one
//! fixed snippet before every return, and a catch-all handler appended after the code.
//!
//! Why a second editor: `edit` decodes every instruction into a `Vec<Insn>` and lays
//! code out instruction by instruction, which made `entry-exit` cost as much as ASM.
//! Here one scan marks instruction starts in a bitmap and records the few *events*
//! that matter (returns, branches, switches). Between two events every offset moves
//! by the same amount, so a new offset is a binary search away, unchanged bytes are
//! copied in spans, and the `Code` attribute is written straight into the output.
//!
//! Whatever it does not handle (`jsr`/`ret`, a jump that would overflow 16 bits, an
//! offset that is not an instruction, a constructor whose `super()` call is not
//! reached by straight-line code, ...) makes it return `None`, and the caller uses
//! `edit`, which handles everything. Its output equals `edit`'s for the same edit,
//! except that a constructor's `max_stack` is the declared one plus the snippet's
//! peak (`edit` knows the exact depth there from its dataflow). The differential test
//! `tests/lean_vs_general.rs` checks both over the JDK.

use crate::bytes::PutBe;
use crate::code::annotations::relocate_type_annotations;
use crate::code::frames;
use crate::code::opcodes::*;
use crate::constant_pool::{tag, ConstantPool};
use crate::patch::PoolAppender;

/// Buffers reused across the methods of a class.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// One bit per code offset: an instruction starts there.
    starts: Vec<u64>,
    events: Vec<Event>,
    /// The events that move code (returns and switches): (offset, shift after, is a return).
    /// Branches do not, and mapping an offset searches only these.
    shifts: Vec<(u32, u32, bool)>,
    /// The class's `StackMapTable` Utf8 index, once a method needed it.
    smt_name: Option<u16>,
}

#[derive(Debug, Clone, Copy)]
struct Event {
    /// Original offset of the instruction.
    off: u32,
    /// Original length.
    len: u32,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Return,
    Branch,
    Switch,
}

/// What to insert.
pub(crate) struct Plan<'p> {
    /// Runs once at entry; jumps back to offset 0 skip it.
    pub prologue: &'p [u8],
    /// Placed before every return; jumps to the return run it.
    pub before_return: &'p [u8],
    /// Appended after the code: the catch-all handler.
    pub handler: &'p [u8],
    /// Stack the snippet before a return needs on top of what the method had.
    pub return_peak: u16,
    /// The least `max_stack` the prologue and handler need.
    pub min_stack: u16,
    /// CONSTANT_Class of the handler's exception type (for its frame).
    pub throwable: u16,
    /// The method is a constructor: the handler starts after `super()`/`this()`.
    pub constructor: bool,
    /// The class version requires a StackMapTable for the new handler (>= 51).
    pub frames_required: bool,
    /// The implicit initial frame has no locals (a static method without
    /// parameters): a new table's handler frame is then `same_locals_1_stack_item`.
    pub no_initial_locals: bool,
}

/// A `Code` attribute body, read without allocating.
pub(crate) struct RawCode<'a> {
    max_stack: u16,
    max_locals: u16,
    code: &'a [u8],
    /// The exception table entries (8 bytes each).
    exceptions: &'a [u8],
    attr_count: u16,
    /// The attributes, after `attributes_count`.
    attrs: &'a [u8],
    /// Class-file offset of `attrs[0]`.
    attrs_offset: usize,
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

fn i32_at(b: &[u8], i: usize) -> i32 {
    i32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

impl<'a> RawCode<'a> {
    /// Reads a `Code` body whose first byte is at class-file offset `base`, checking
    /// what `CodeAttribute::parse` checks.
    pub fn parse(data: &'a [u8], base: usize) -> Option<Self> {
        if data.len() < 8 {
            return None;
        }
        let len = u32::from_be_bytes([data[4], data[5], data[6], data[7]]) as usize;
        if len == 0 || len > 0xFFFF || data.len() < 8 + len + 2 {
            return None;
        }
        let code = &data[8..8 + len];
        let n = u16_at(data, 8 + len) as usize;
        let ex_start = 10 + len;
        let ex_end = ex_start + 8 * n;
        if data.len() < ex_end + 2 {
            return None;
        }
        let exceptions = &data[ex_start..ex_end];
        for e in exceptions.chunks_exact(8) {
            let (s, end, h) = (u16_at(e, 0), u16_at(e, 2), u16_at(e, 4));
            if s >= end || end as usize > len || h as usize >= len {
                return None;
            }
        }
        let attr_count = u16_at(data, ex_end);
        let attrs = &data[ex_end + 2..];
        // The attributes must fill the rest exactly.
        let mut at = 0usize;
        for _ in 0..attr_count {
            if attrs.len() < at + 6 {
                return None;
            }
            let l =
                u32::from_be_bytes([attrs[at + 2], attrs[at + 3], attrs[at + 4], attrs[at + 5]]);
            at = at.checked_add(6 + l as usize)?;
        }
        if at != attrs.len() {
            return None;
        }
        Some(RawCode {
            max_stack: u16_at(data, 0),
            max_locals: u16_at(data, 2),
            code,
            exceptions,
            attr_count,
            attrs,
            attrs_offset: base + ex_end + 2,
        })
    }

    /// Each attribute: name index, body, class-file offset of the body.
    fn attributes(&self) -> impl Iterator<Item = (u16, &'a [u8], usize)> + '_ {
        let mut at = 0usize;
        (0..self.attr_count).map(move |_| {
            let name = u16_at(self.attrs, at);
            let l = u32::from_be_bytes([
                self.attrs[at + 2],
                self.attrs[at + 3],
                self.attrs[at + 4],
                self.attrs[at + 5],
            ]) as usize;
            let body = &self.attrs[at + 6..at + 6 + l];
            let off = self.attrs_offset + at + 6;
            at += 6 + l;
            (name, body, off)
        })
    }
}

/// Where offsets go: the scan's events and the shifts between them.
struct Map<'s> {
    starts: &'s [u64],
    shifts: &'s [(u32, u32, bool)],
    code_len: u32,
    /// Shift before the first event (the prologue).
    first: u32,
    /// Shift at the end of the code.
    last: u32,
}

impl Map<'_> {
    fn is_start(&self, o: u32) -> bool {
        o < self.code_len && self.starts[(o / 64) as usize] >> (o % 64) & 1 == 1
    }

    /// The index of the first move at or after `o`, and the shift before it.
    fn locate(&self, o: u32) -> (usize, u32) {
        let i = self.shifts.partition_point(|e| e.0 < o);
        let shift = if i == 0 {
            self.first
        } else {
            self.shifts[i - 1].1
        };
        (i, shift)
    }

    /// A branch's target: an instruction start (not the end of the code).
    fn jump(&self, o: u32) -> Option<u32> {
        if self.is_start(o) {
            self.target(o)
        } else {
            None
        }
    }

    /// Where a jump to original offset `o` lands (on the snippet before a return).
    fn target(&self, o: u32) -> Option<u32> {
        if o == self.code_len {
            return Some(o + self.last);
        }
        if !self.is_start(o) {
            return None;
        }
        Some(o + self.locate(o).1)
    }

    /// The new offset of the instruction originally at `o`.
    fn insn(&self, o: u32) -> Option<u32> {
        if o == self.code_len {
            return Some(o + self.last);
        }
        if !self.is_start(o) {
            return None;
        }
        let (i, shift) = self.locate(o);
        Some(match self.shifts.get(i) {
            Some(&(off, after, true)) if off == o => after + o,
            _ => o + shift,
        })
    }
}

/// True when the Methodref at `index` names `<init>`.
fn calls_init(cp: &ConstantPool<'_>, index: u16) -> Option<bool> {
    let b = cp.class_bytes();
    let o = cp.offset_of(index)?;
    if !matches!(b[o], tag::METHODREF | tag::INTERFACE_METHODREF) {
        return None;
    }
    let nt = cp.offset_of(u16_at(b, o + 3))?;
    if b[nt] != tag::NAME_AND_TYPE {
        return None;
    }
    let name = cp.offset_of(u16_at(b, nt + 1))?;
    Some(b[name] == tag::UTF8 && b.get(name + 1..name + 9) == Some(b"\x00\x06<init>".as_slice()))
}

/// Length of each opcode that is neither an event nor variable-length nor invalid
/// (0 for those): the scan's fast path.
const PLAIN_LEN: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut op = 0;
    while op < 256 {
        let l = FIXED_LEN[op];
        let event = matches!(
            op as u8,
            IRETURN..=RETURN | IFEQ..=RET | IFNULL | IFNONNULL | GOTO_W | JSR_W
        );
        if l != 0xFF && l != 0 && !event {
            t[op] = l;
        }
        op += 1;
    }
    t
};

/// What the scan found.
struct Scanned {
    /// Shift at the end of the code.
    last: u32,
    /// Offset after the `super()`/`this()` call, for constructors.
    super_end: u32,
    has_return: bool,
}

/// Marks instruction starts and records events. `None` for anything left to `edit`.
fn scan(code: &[u8], plan: &Plan<'_>, cp: &ConstantPool<'_>, s: &mut Scratch) -> Option<Scanned> {
    let len = code.len();
    s.starts.clear();
    s.starts.resize(len / 64 + 1, 0);
    s.events.clear();
    s.shifts.clear();
    let ret = plan.before_return.len() as u32;
    let mut shift = plan.prologue.len() as u32;
    let mut has_return = false;
    // Constructors: the handler starts after the first `invokespecial <init>` that is
    // not the initialisation of a `new` object, reached by straight-line code.
    let mut before_super = plan.constructor;
    let mut news = 0u32;
    let mut super_end = 0u32;
    let mut at = 0usize;
    while at < len {
        s.starts[at / 64] |= 1 << (at % 64);
        let op = code[at];
        // Most instructions need nothing but their length (a truncated last one
        // leaves `at` past the end, caught below).
        let plain = PLAIN_LEN[op as usize];
        if plain != 0 && !before_super {
            at += plain as usize;
            continue;
        }
        let (l, kind) = match op {
            IRETURN..=RETURN => {
                has_return = true;
                (1, Some(Kind::Return))
            }
            IFEQ..=GOTO | IFNULL | IFNONNULL => (3, Some(Kind::Branch)),
            GOTO_W => (5, Some(Kind::Branch)),
            JSR | JSR_W | RET => return None,
            TABLESWITCH | LOOKUPSWITCH => {
                let p = (at + 4) & !3;
                if p + 8 > len {
                    return None;
                }
                let l = if op == TABLESWITCH {
                    if p + 12 > len {
                        return None;
                    }
                    let (low, high) = (i32_at(code, p + 4), i32_at(code, p + 8));
                    if low > high {
                        return None;
                    }
                    let n = (high as i64 - low as i64 + 1) as usize;
                    if n > (len - p - 12) / 4 {
                        return None;
                    }
                    p + 12 + 4 * n - at
                } else {
                    let n = i32_at(code, p + 4);
                    if n < 0 || n as usize > (len - p - 8) / 8 {
                        return None;
                    }
                    p + 8 + 8 * n as usize - at
                };
                (l, Some(Kind::Switch))
            }
            WIDE => match code.get(at + 1) {
                Some(&(ILOAD..=ALOAD | ISTORE..=ASTORE)) => (4, None),
                Some(&IINC) => (6, None),
                _ => return None,
            },
            _ => match FIXED_LEN[op as usize] {
                0xFF => return None,
                l => (l as usize, None),
            },
        };
        if at + l > len {
            return None;
        }
        if before_super {
            match op {
                NEW => news += 1,
                INVOKESPECIAL if calls_init(cp, u16_at(code, at + 1))? => {
                    if news == 0 {
                        before_super = false;
                        super_end = (at + l) as u32;
                    } else {
                        news -= 1;
                    }
                }
                ATHROW => return None,
                _ if kind.is_some() => return None,
                _ => {}
            }
        }
        if let Some(kind) = kind {
            match kind {
                Kind::Return => shift += ret,
                Kind::Switch => {
                    let old_pad = (4 - (at + 1) % 4) % 4;
                    let new_pad = (4 - (at + shift as usize + 1) % 4) % 4;
                    shift = (shift as usize + new_pad - old_pad) as u32;
                }
                Kind::Branch => {}
            }
            s.events.push(Event {
                off: at as u32,
                len: l as u32,
                kind,
            });
            if kind != Kind::Branch {
                s.shifts.push((at as u32, shift, kind == Kind::Return));
            }
        }
        at += l;
    }
    if before_super || at != len {
        return None;
    }
    Some(Scanned {
        last: shift,
        super_end,
        has_return,
    })
}

/// Writes the new `Code` attribute body for `plan` into `out`.
/// `None` (with `out` possibly extended) when the method must go through `edit`.
pub(crate) fn rewrite(
    raw: &RawCode<'_>,
    plan: &Plan<'_>,
    cp: &ConstantPool<'_>,
    pool: &mut PoolAppender<'_>,
    s: &mut Scratch,
    out: &mut Vec<u8>,
) -> Option<()> {
    let code = raw.code;
    let code_len = code.len() as u32;
    let scanned = scan(code, plan, cp, s)?;
    let new_len = code_len as usize + scanned.last as usize + plan.handler.len();
    // Switch padding may shrink by 3 per switch; an upper bound keeps every
    // intermediate offset (which `edit` also checks) in range.
    let switches = s.events.iter().filter(|e| e.kind == Kind::Switch).count();
    if new_len + 3 * switches > 0xFFFF {
        return None;
    }
    let map = Map {
        starts: &s.starts,
        shifts: &s.shifts,
        code_len,
        first: plan.prologue.len() as u32,
        last: scanned.last,
    };
    let declared = raw.max_stack;
    let mut max_stack = declared.max(plan.min_stack);
    if scanned.has_return {
        max_stack = max_stack.max(declared.checked_add(plan.return_peak)?);
    }
    out.put_u16(max_stack);
    out.put_u16(raw.max_locals);
    out.put_u32(new_len as u32);
    let code_start = out.len();
    out.extend_from_slice(plan.prologue);
    let mut copied = 0usize;
    for e in &s.events {
        let at = e.off as usize;
        out.extend_from_slice(&code[copied..at]);
        copied = at + e.len as usize;
        let op = code[at];
        match e.kind {
            Kind::Return => {
                out.extend_from_slice(plan.before_return);
                out.push(op);
            }
            Kind::Branch => {
                let me = (out.len() - code_start) as i64;
                let old = if op == GOTO_W {
                    i32_at(code, at + 1) as i64
                } else {
                    u16_at(code, at + 1) as i16 as i64
                };
                let t = u32::try_from(at as i64 + old).ok()?;
                let d = map.jump(t)? as i64 - me;
                out.push(op);
                if op == GOTO_W {
                    out.put_u32(d as i32 as u32);
                } else {
                    if d < i16::MIN as i64 || d > i16::MAX as i64 {
                        return None;
                    }
                    out.put_u16(d as i16 as u16);
                }
            }
            Kind::Switch => {
                let me = (out.len() - code_start) as i64;
                out.push(op);
                while (out.len() - code_start) % 4 != 0 {
                    out.push(0);
                }
                let p = (at + 4) & !3;
                let rel = |out: &mut Vec<u8>, i: usize| -> Option<()> {
                    let t = u32::try_from(at as i64 + i32_at(code, i) as i64).ok()?;
                    out.put_u32((map.jump(t)? as i64 - me) as i32 as u32);
                    Some(())
                };
                rel(out, p)?;
                if op == TABLESWITCH {
                    out.extend_from_slice(&code[p + 4..p + 12]);
                    let mut i = p + 12;
                    while i < copied {
                        rel(out, i)?;
                        i += 4;
                    }
                } else {
                    out.extend_from_slice(&code[p + 4..p + 8]);
                    let mut i = p + 8;
                    while i < copied {
                        out.extend_from_slice(&code[i..i + 4]);
                        rel(out, i + 4)?;
                        i += 8;
                    }
                }
            }
        }
    }
    out.extend_from_slice(&code[copied..]);
    let tail_at = (out.len() - code_start) as u32;
    debug_assert_eq!(tail_at, code_len + scanned.last);
    out.extend_from_slice(plan.handler);

    // The exception table, then the handler appended last (the method's own keep precedence).
    let from = map.target(if plan.constructor {
        scanned.super_end
    } else {
        0
    })?;
    let to = map.target(code_len)?;
    let n = raw.exceptions.len() / 8;
    let added = usize::from(from < to);
    if n + added > 0xFFFF {
        return None;
    }
    out.put_u16((n + added) as u16);
    for e in raw.exceptions.chunks_exact(8) {
        let start = u16_at(e, 0) as u32;
        if plan.constructor
            && (start < scanned.super_end || (u16_at(e, 4) as u32) < scanned.super_end)
        {
            return None;
        }
        out.put_u16(map.target(start)? as u16);
        out.put_u16(map.target(u16_at(e, 2) as u32)? as u16);
        out.put_u16(map.target(u16_at(e, 4) as u32)? as u16);
        out.extend_from_slice(&e[6..8]);
    }
    if added == 1 {
        out.put_u16(from as u16);
        out.put_u16(to as u16);
        out.put_u16(tail_at as u16);
        out.put_u16(0);
    }

    // Attributes, in their order; the StackMapTable streamed, with the handler's frame.
    let mut smt_seen = false;
    let count_at = out.len();
    out.put_u16(raw.attr_count);
    let target = |o: u32| map.target(o);
    let insn = |o: u32| map.insn(o);
    for (name, body, body_offset) in raw.attributes() {
        out.put_u16(name);
        let len_at = out.len();
        out.put_u32(0);
        let start = out.len();
        match cp.utf8_bytes(name).unwrap_or(b"") {
            b"StackMapTable" => {
                if smt_seen || body.len() < 2 || u16_at(body, 0) == 0xFFFF {
                    return None;
                }
                smt_seen = true;
                let last =
                    frames::relocate_into(out, body, body_offset, &target, &insn, &[], &mut |_| {
                        Err(crate::patch::PoolFull)
                    })
                    .ok()?;
                let n = u16_at(out, start) + 1;
                out[start..start + 2].copy_from_slice(&n.to_be_bytes());
                handler_frame(out, tail_at, last, plan.throwable);
            }
            b"LineNumberTable" => {
                let n = lines_len(body, 4)?;
                out.extend_from_slice(&body[..2]);
                for k in 0..n {
                    let e = &body[2 + 4 * k..];
                    out.put_u16(map.target(u16_at(e, 0) as u32)? as u16);
                    out.extend_from_slice(&e[2..4]);
                }
            }
            b"LocalVariableTable" | b"LocalVariableTypeTable" => {
                let n = lines_len(body, 10)?;
                out.extend_from_slice(&body[..2]);
                for k in 0..n {
                    let e = &body[2 + 10 * k..];
                    let start = u16_at(e, 0) as u32;
                    let end = (start + u16_at(e, 2) as u32).min(code_len);
                    let (ns, ne) = (map.target(start)?, map.target(end)?);
                    out.put_u16(ns as u16);
                    out.put_u16((ne - ns) as u16);
                    out.extend_from_slice(&e[4..10]);
                }
            }
            b"RuntimeVisibleTypeAnnotations" | b"RuntimeInvisibleTypeAnnotations" => {
                let moved = relocate_type_annotations(body, body_offset, &target, &insn).ok()?;
                out.extend_from_slice(&moved);
            }
            _ => out.extend_from_slice(body),
        }
        let l = (out.len() - start) as u32;
        out[len_at..len_at + 4].copy_from_slice(&l.to_be_bytes());
    }
    if !smt_seen && plan.frames_required {
        if raw.attr_count == 0xFFFF {
            return None;
        }
        let name = match s.smt_name {
            Some(i) => i,
            None => *s.smt_name.insert(pool.utf8("StackMapTable").ok()?),
        };
        let n = raw.attr_count + 1;
        out[count_at..count_at + 2].copy_from_slice(&n.to_be_bytes());
        out.put_u16(name);
        let len_at = out.len();
        out.put_u32(0);
        let start = out.len();
        out.put_u16(1);
        if plan.no_initial_locals {
            // As `frames::encode` writes it: relative to the initial frame.
            if tail_at < 64 {
                out.push(64 + tail_at as u8);
            } else {
                out.push(247);
                out.put_u16(tail_at as u16);
            }
            out.push(7);
            out.put_u16(plan.throwable);
        } else {
            handler_frame(out, tail_at, -1, plan.throwable);
        }
        let l = (out.len() - start) as u32;
        out[len_at..len_at + 4].copy_from_slice(&l.to_be_bytes());
    }
    Some(())
}

/// Entries in a table of `entry` bytes each, when the body holds exactly that many.
fn lines_len(body: &[u8], entry: usize) -> Option<usize> {
    let n = u16_at(body.get(..2)?, 0) as usize;
    (body.len() == 2 + n * entry).then_some(n)
}

/// The handler's full frame: no locals, the exception on the stack.
fn handler_frame(out: &mut Vec<u8>, at: u32, prev: i64, throwable: u16) {
    out.push(255);
    out.put_u16((at as i64 - prev - 1) as u16);
    out.put_u16(0);
    out.put_u16(1);
    out.push(7);
    out.put_u16(throwable);
}
