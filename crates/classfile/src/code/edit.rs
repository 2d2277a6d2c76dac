//! Relocating code edits: the one place that decides where every instruction goes.
//!
//! Probes describe straight-line snippets to insert at original offsets; this
//! module lays the new code out (re-padding switches, widening jumps whose 16-bit
//! offsets overflow), emits it, and relocates everything that holds a code offset
//! through one map: branches, switch tables, the exception table, StackMapTable
//! frames (including `Uninitialized` offsets), LineNumberTable,
//! LocalVariable(Type)Table and code-level type annotations.

use crate::bytes::{Cursor, PutBe};
use crate::code::annotations::relocate_type_annotations;
use crate::code::frames::{self, Frame, VType};
use crate::code::insn::{Insn, Operand};
use crate::code::opcodes::*;
use crate::code::typesim::TypeSim;
use crate::code::{CodeAttribute, ExceptionEntry};
use crate::constant_pool::ConstantPool;
use crate::patch::{PoolAppender, PoolFull};

/// Why an edit could not be applied. The method keeps its original code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    /// The new code would exceed 65535 bytes.
    TooLarge,
    /// A conditional jump overflows 16 bits where no frame exists for its widened form.
    JumpOverflow,
    /// No room in the constant pool.
    PoolFull,
    /// An offset-bearing attribute could not be read.
    Malformed(String),
}

impl From<PoolFull> for EditError {
    fn from(_: PoolFull) -> Self {
        EditError::PoolFull
    }
}

/// Code to insert.
#[derive(Debug, Clone, Default)]
pub struct Edits {
    /// Snippets that branches to the offset also execute: placed before the instruction,
    /// and jumps to it land on the snippet. Indexed by instruction index (`n` = end of code).
    pub before: Vec<Vec<u8>>,
    /// Snippets that run only when falling through from the previous instruction
    /// ("after" it): jumps to the offset skip them. Indexed like `before`.
    pub after: Vec<Vec<u8>>,
    /// Code appended after the original code (handlers); position-independent.
    pub tail: Vec<u8>,
}

impl Edits {
    /// No edits yet for code with `n` instructions.
    pub fn new(n: usize) -> Self {
        Edits {
            before: vec![Vec::new(); n + 1],
            after: vec![Vec::new(); n + 1],
            tail: Vec::new(),
        }
    }
}

/// Where everything went.
#[derive(Debug, Clone)]
pub struct Layout {
    /// New offset of each original instruction (index `n`: end of the original code).
    insn_at: Vec<u32>,
    /// Start of each position's "after" group (before the "before" group).
    after_at: Vec<u32>,
    /// Start of each position's "before" group: where jumps to the original offset land.
    before_at: Vec<u32>,
    /// Per instruction: emitted in a widened form.
    widened: Vec<bool>,
    /// Offset of the tail.
    pub tail_at: u32,
    /// Total code length.
    pub len: u32,
}

/// Maps original offsets to new ones.
pub struct Relocation<'l> {
    layout: &'l Layout,
    index_of: &'l [u32],
    code_len: u32,
}

impl Relocation<'_> {
    fn index(&self, off: u32) -> Option<usize> {
        if off == self.code_len {
            return Some(self.layout.insn_at.len() - 1);
        }
        match self.index_of.get(off as usize) {
            Some(&i) if i != u32::MAX => Some(i as usize),
            _ => None,
        }
    }

    /// Where a jump to original offset `off` must land.
    pub fn target(&self, off: u32) -> Option<u32> {
        self.index(off).map(|i| self.layout.before_at[i])
    }

    /// The new offset of the instruction originally at `off`.
    pub fn insn(&self, off: u32) -> Option<u32> {
        self.index(off).map(|i| self.layout.insn_at[i])
    }
}

fn branch_size(insn: &Insn, widened: bool) -> u32 {
    match (insn.op, widened) {
        (GOTO | JSR, true) => 5,
        (op, true) if is_conditional(op) => 8,
        _ => insn.len,
    }
}

fn switch_size(insn: &Insn, at: u32) -> u32 {
    let pad = (4 - (at + 1) % 4) % 4;
    match &insn.operand {
        Operand::TableSwitch { targets, .. } => 1 + pad + 12 + 4 * targets.len() as u32,
        Operand::LookupSwitch { pairs, .. } => 1 + pad + 8 + 8 * pairs.len() as u32,
        _ => insn.len,
    }
}

/// Lays out `insns` with `edits`, widening jumps until every offset fits.
pub fn layout(insns: &[Insn], index_of: &[u32], edits: &Edits) -> Result<Layout, EditError> {
    let n = insns.len();
    let mut l = Layout {
        insn_at: vec![0; n + 1],
        after_at: vec![0; n + 1],
        before_at: vec![0; n + 1],
        widened: vec![false; n],
        tail_at: 0,
        len: 0,
    };
    loop {
        let mut at: u64 = 0;
        // Positions run one past the last instruction (code appended at the end).
        #[allow(clippy::needless_range_loop)]
        for i in 0..=n {
            l.after_at[i] = at as u32;
            at += edits.after[i].len() as u64;
            l.before_at[i] = at as u32;
            at += edits.before[i].len() as u64;
            l.insn_at[i] = at as u32;
            if i < n {
                let insn = &insns[i];
                at += match insn.op {
                    TABLESWITCH | LOOKUPSWITCH => switch_size(insn, at as u32),
                    _ => branch_size(insn, l.widened[i]),
                } as u64;
            }
            if at > 0xFFFF {
                return Err(EditError::TooLarge);
            }
        }
        l.tail_at = at as u32;
        at += edits.tail.len() as u64;
        if at > 0xFFFF {
            return Err(EditError::TooLarge);
        }
        l.len = at as u32;
        let mut changed = false;
        for (i, insn) in insns.iter().enumerate() {
            let short = matches!(insn.op, IFEQ..=JSR | IFNULL | IFNONNULL);
            if !short || l.widened[i] {
                continue;
            }
            let Operand::Branch { target } = insn.operand else {
                continue;
            };
            let t = l.before_at[index_of[target as usize] as usize] as i64;
            let d = t - l.insn_at[i] as i64;
            if d < i16::MIN as i64 || d > i16::MAX as i64 {
                // `if!cond next; goto_w far`: `next` must be the plain fall-through.
                if is_conditional(insn.op) && (i + 1 >= n || !edits.after[i + 1].is_empty()) {
                    return Err(EditError::JumpOverflow);
                }
                l.widened[i] = true;
                changed = true;
            }
        }
        if !changed {
            return Ok(l);
        }
    }
}

/// Emits the new code array.
pub fn emit(code: &[u8], insns: &[Insn], index_of: &[u32], edits: &Edits, l: &Layout) -> Vec<u8> {
    let n = insns.len();
    let mut out = Vec::with_capacity(l.len as usize);
    let target = |t: u32| l.before_at[index_of[t as usize] as usize] as i64;
    // Positions run one past the last instruction (code appended at the end).
    // Instructions that move unchanged are copied in runs, one copy per run.
    let mut run_start: Option<usize> = None;
    #[allow(clippy::needless_range_loop)]
    for i in 0..=n {
        let plain = i < n
            && edits.after[i].is_empty()
            && edits.before[i].is_empty()
            && !matches!(
                insns[i].operand,
                Operand::Branch { .. } | Operand::TableSwitch { .. } | Operand::LookupSwitch { .. }
            );
        if plain {
            run_start.get_or_insert(insns[i].offset as usize);
            continue;
        }
        if let Some(start) = run_start.take() {
            let end = if i < n {
                insns[i].offset as usize
            } else {
                code.len()
            };
            out.extend_from_slice(&code[start..end]);
        }
        out.extend_from_slice(&edits.after[i]);
        out.extend_from_slice(&edits.before[i]);
        if i == n {
            break;
        }
        let insn = &insns[i];
        let me = l.insn_at[i] as i64;
        debug_assert_eq!(out.len() as i64, me);
        match &insn.operand {
            Operand::Branch { target: t } => {
                let d = target(*t) - me;
                match insn.op {
                    GOTO_W | JSR_W => {
                        out.push(insn.op);
                        out.put_u32(d as i32 as u32);
                    }
                    GOTO | JSR if l.widened[i] => {
                        out.push(if insn.op == GOTO { GOTO_W } else { JSR_W });
                        out.put_u32(d as i32 as u32);
                    }
                    op if l.widened[i] => {
                        // if!cond +8 (to the next instruction); goto_w target
                        out.push(invert_condition(op));
                        out.put_u16(8);
                        out.push(GOTO_W);
                        out.put_u32((d - 3) as i32 as u32);
                    }
                    op => {
                        out.push(op);
                        out.put_u16(d as i16 as u16);
                    }
                }
            }
            Operand::TableSwitch {
                default,
                low,
                high,
                targets,
            } => {
                out.push(insn.op);
                while out.len() % 4 != 0 {
                    out.push(0);
                }
                out.put_u32((target(*default) - me) as i32 as u32);
                out.put_u32(*low as u32);
                out.put_u32(*high as u32);
                for &t in targets {
                    out.put_u32((target(t) - me) as i32 as u32);
                }
            }
            Operand::LookupSwitch { default, pairs } => {
                out.push(insn.op);
                while out.len() % 4 != 0 {
                    out.push(0);
                }
                out.put_u32((target(*default) - me) as i32 as u32);
                out.put_u32(pairs.len() as u32);
                for &(k, t) in pairs {
                    out.put_u32(k as u32);
                    out.put_u32((target(t) - me) as i32 as u32);
                }
            }
            _ => out.extend_from_slice(&code[insn.offset as usize..insn.end() as usize]),
        }
    }
    out.extend_from_slice(&edits.tail);
    out
}

/// An exception handler to add, in original offsets; added after the existing ones.
#[derive(Debug, Clone)]
pub struct NewHandler {
    /// Covered ranges `[start, end)` in original offsets (`end` may be the code length).
    pub ranges: Vec<(u32, u32)>,
    /// Handler offset relative to the start of the tail.
    pub handler_in_tail: u32,
    /// CONSTANT_Class of the caught type, 0 for any.
    pub catch_type: u16,
}

/// Frame changes that go with the edits.
#[derive(Debug, Clone, Default)]
pub struct FrameEdits {
    /// New locals added to every existing frame, in slot order: slot and type.
    pub new_locals: Vec<(u16, VType)>,
    /// New frames in the tail: (offset relative to the tail, locals, stack).
    pub tail_frames: Vec<(u32, Vec<VType>, Vec<VType>)>,
}

/// What a probe changes in one method's code.
#[derive(Debug, Clone)]
pub struct CodeChanges<'h> {
    /// Inserted code.
    pub edits: Edits,
    /// Handlers to append to the exception table.
    pub handlers: &'h [NewHandler],
    /// Frame changes.
    pub frame_edits: FrameEdits,
    /// New `max_stack`.
    pub max_stack: u16,
    /// New `max_locals`.
    pub max_locals: u16,
}

/// Everything needed to rebuild one `Code` attribute.
pub struct Rewrite<'r, 'a> {
    /// The class's pool.
    pub cp: &'r ConstantPool<'a>,
    /// The original attribute.
    pub code: &'r CodeAttribute<'a>,
    /// Its instructions.
    pub insns: &'r [Insn],
    /// Instruction index per offset.
    pub index_of: &'r [u32],
    /// Original frames, if the caller decoded them (decoded here on demand otherwise).
    pub frames: Option<&'r [Frame]>,
    /// The original StackMapTable attribute, if any.
    pub smt: Option<crate::RawAttribute<'a>>,
    /// The implicit initial frame's locals.
    pub initial_locals: &'r [VType],
    /// `this_class`, for the type of `this` once initialised.
    pub this_class: u16,
    /// True when the class version requires a StackMapTable for new branch targets (>= 51).
    pub frames_required: bool,
    /// Parameter descriptors, for spelling out parameter types in frames.
    pub param_class_names: &'r [Option<&'r str>],
}

/// Rebuilds the `Code` attribute body with `edits`.
pub fn rewrite(
    r: &Rewrite<'_, '_>,
    pool: &mut PoolAppender<'_>,
    c: &CodeChanges<'_>,
) -> Result<Vec<u8>, EditError> {
    let (edits, handlers, frame_edits) = (&c.edits, c.handlers, &c.frame_edits);
    let (max_stack, max_locals) = (c.max_stack, c.max_locals);
    let code_len = r.code.code.len() as u32;
    let l = layout(r.insns, r.index_of, edits)?;
    let rel = Relocation {
        layout: &l,
        index_of: r.index_of,
        code_len,
    };
    let new_code = emit(r.code.code, r.insns, r.index_of, edits, &l);

    let mut out = Vec::with_capacity(new_code.len() + 64);
    out.put_u16(max_stack);
    out.put_u16(max_locals);
    out.put_u32(new_code.len() as u32);
    out.extend_from_slice(&new_code);
    let map = |o: u32| {
        rel.target(o)
            .ok_or_else(|| EditError::Malformed(format!("offset {o} is not an instruction")))
    };

    let mut table: Vec<ExceptionEntry> =
        Vec::with_capacity(r.code.exception_table.len() + handlers.len());
    for e in &r.code.exception_table {
        table.push(ExceptionEntry {
            start: map(e.start as u32)? as u16,
            end: map(e.end as u32)? as u16,
            handler: map(e.handler as u32)? as u16,
            catch_type: e.catch_type,
        });
    }
    for h in handlers {
        for &(s, e) in &h.ranges {
            let (s, e) = (map(s)?, map(e)?);
            if s < e {
                table.push(ExceptionEntry {
                    start: s as u16,
                    end: e as u16,
                    handler: (l.tail_at + h.handler_in_tail) as u16,
                    catch_type: h.catch_type,
                });
            }
        }
    }
    if table.len() > 0xFFFF {
        return Err(EditError::TooLarge);
    }
    out.put_u16(table.len() as u16);
    for e in &table {
        out.put_u16(e.start);
        out.put_u16(e.end);
        out.put_u16(e.handler);
        out.put_u16(e.catch_type);
    }

    let mut attrs: Vec<(u16, Vec<u8>)> = Vec::with_capacity(r.code.attributes.len() + 1);
    let mut wrote_frames = false;
    let needs_frames =
        r.smt.is_some() || (r.frames_required && !frame_edits.tail_frames.is_empty());
    for a in &r.code.attributes {
        let name = r.cp.utf8_bytes(a.name_index).unwrap_or(b"");
        let mut c = Cursor::new(a.data, a.data_offset());
        let body = match name {
            b"StackMapTable" => {
                if wrote_frames {
                    continue;
                }
                wrote_frames = true;
                frames_body(r, pool, &rel, &l, frame_edits)?
            }
            b"LineNumberTable" => relocate_table(&mut c, 4, |e, c| {
                let start = c.u16("start_pc")?;
                e.put_u16(map(start as u32).map_err(to_class_error)? as u16);
                e.put_u16(c.u16("line_number")?);
                Ok(())
            })?,
            b"LocalVariableTable" | b"LocalVariableTypeTable" => {
                relocate_table(&mut c, 10, |e, c| {
                    let start = c.u16("start_pc")? as u32;
                    let len = c.u16("length")? as u32;
                    let ns = map(start).map_err(to_class_error)?;
                    let ne = map((start + len).min(code_len)).map_err(to_class_error)?;
                    e.put_u16(ns as u16);
                    e.put_u16((ne - ns) as u16);
                    e.extend_from_slice(c.bytes(6, "local variable entry")?);
                    Ok(())
                })?
            }
            b"RuntimeVisibleTypeAnnotations" | b"RuntimeInvisibleTypeAnnotations" => {
                relocate_type_annotations(a.data, a.data_offset(), &|o| rel.target(o), &|o| {
                    rel.insn(o)
                })
                .map_err(|e| EditError::Malformed(e.to_string()))?
            }
            _ => a.data.to_vec(),
        };
        attrs.push((a.name_index, body));
    }
    if needs_frames && !wrote_frames {
        let name = pool.utf8("StackMapTable")?;
        attrs.push((name, frames_body(r, pool, &rel, &l, frame_edits)?));
    }
    out.put_u16(attrs.len() as u16);
    for (name, body) in attrs {
        out.put_u16(name);
        out.put_u32(body.len() as u32);
        out.extend_from_slice(&body);
    }
    Ok(out)
}

fn to_class_error(e: EditError) -> crate::ClassError {
    crate::ClassError::new(crate::ErrorKind::BadAttribute, 0, format!("{e:?}"))
}

fn relocate_table(
    c: &mut Cursor<'_>,
    entry_len: usize,
    mut each: impl FnMut(&mut Vec<u8>, &mut Cursor<'_>) -> crate::Result<()>,
) -> Result<Vec<u8>, EditError> {
    let mut run = |c: &mut Cursor<'_>| -> crate::Result<Vec<u8>> {
        let n = c.u16("table length")?;
        let mut out = Vec::with_capacity(2 + n as usize * entry_len);
        out.put_u16(n);
        for _ in 0..n {
            each(&mut out, c)?;
        }
        c.expect_end("offset table")?;
        Ok(out)
    };
    run(c).map_err(|e| EditError::Malformed(e.to_string()))
}

/// Moves a frame given in original offsets to the new code: offset, `Uninitialized`
/// offsets, and the new local.
fn relocate_frame(f: &Frame, rel: &Relocation<'_>, fe: &FrameEdits) -> Result<Frame, EditError> {
    let remap = |t: &VType| -> Result<VType, EditError> {
        Ok(match *t {
            VType::Uninitialized(o) => VType::Uninitialized(rel.insn(o).ok_or_else(|| {
                EditError::Malformed(format!("Uninitialized({o}) is not an instruction"))
            })?),
            t => t,
        })
    };
    let mut locals = f.locals.iter().map(remap).collect::<Result<Vec<_>, _>>()?;
    for &(slot, t) in &fe.new_locals {
        if !frames::set_local_past_end(&mut locals, slot as u32, t) {
            return Err(EditError::Malformed(format!(
                "frame at {} has locals past max_locals",
                f.offset
            )));
        }
    }
    let stack = f.stack.iter().map(remap).collect::<Result<Vec<_>, _>>()?;
    let offset = rel.target(f.offset).ok_or_else(|| {
        EditError::Malformed(format!("frame at {} is not an instruction", f.offset))
    })?;
    Ok(Frame {
        offset,
        locals,
        stack,
    })
}

/// Frames (in original offsets) for the instructions after widened conditionals
/// that had none: they became branch targets.
fn widened_fall_throughs(
    r: &Rewrite<'_, '_>,
    decoded: &[Frame],
    l: &Layout,
    pool: &mut PoolAppender<'_>,
) -> Result<Vec<Frame>, EditError> {
    let mut out = Vec::new();
    let sim = TypeSim {
        cp: r.cp,
        this_class: r.this_class,
        insns: r.insns,
        frames: decoded,
        initial_locals: r.initial_locals,
        param_class_names: r.param_class_names,
        max_locals: r.code.max_locals,
    };
    for (i, insn) in r.insns.iter().enumerate() {
        if !l.widened[i] || !is_conditional(insn.op) {
            continue;
        }
        let next = r.insns[i + 1].offset;
        if decoded.binary_search_by_key(&next, |f| f.offset).is_ok() {
            continue;
        }
        let (locals, stack) = sim
            .frame_before(i + 1, pool)
            .map_err(|_| EditError::JumpOverflow)?;
        out.push(Frame {
            offset: next,
            locals,
            stack,
        });
    }
    Ok(out)
}

/// The new StackMapTable body: streamed when frame contents stay as they were,
/// decoded and re-encoded when a local is added or a widened jump needs a new frame.
fn frames_body(
    r: &Rewrite<'_, '_>,
    pool: &mut PoolAppender<'_>,
    rel: &Relocation<'_>,
    l: &Layout,
    fe: &FrameEdits,
) -> Result<Vec<u8>, EditError> {
    let widened_conditional = r
        .insns
        .iter()
        .enumerate()
        .any(|(i, insn)| l.widened[i] && is_conditional(insn.op));
    let tail: Vec<Frame> = fe
        .tail_frames
        .iter()
        .map(|(off, locals, stack)| Frame {
            offset: l.tail_at + off,
            locals: locals.clone(),
            stack: stack.clone(),
        })
        .collect();
    let mut resolve = |p: u32| resolve_param(r, pool, p);
    if let (Some(smt), true, false) = (r.smt, fe.new_locals.is_empty(), widened_conditional) {
        return frames::relocate(
            smt.data,
            smt.data_offset(),
            &|o| rel.target(o),
            &|o| rel.insn(o),
            &tail,
            &mut resolve,
        )
        .map_err(|e| match e {
            frames::RelocateError::PoolFull => EditError::PoolFull,
            frames::RelocateError::Malformed(m) => EditError::Malformed(m),
        });
    }
    let owned;
    let decoded: &[Frame] = match (r.frames, r.smt) {
        (Some(f), _) => f,
        (None, Some(smt)) => {
            owned = frames::decode(
                smt.data,
                smt.data_offset(),
                r.initial_locals,
                r.code.code.len() as u32,
            )
            .map_err(|e| EditError::Malformed(e.to_string()))?;
            &owned
        }
        (None, None) => &[],
    };
    encode_frames(r, decoded, pool, rel, l, fe)
}

/// The constant-pool Class of the parameter a frame placeholder stands for
/// (appended only when a frame must spell the type out).
fn resolve_param(
    r: &Rewrite<'_, '_>,
    pool: &mut PoolAppender<'_>,
    placeholder: u32,
) -> Result<u16, PoolFull> {
    let k = (placeholder - frames::PARAM_BASE) as usize;
    let name = r
        .param_class_names
        .get(k)
        .copied()
        .flatten()
        .ok_or(PoolFull)?;
    pool.class(name)
}

fn encode_frames(
    r: &Rewrite<'_, '_>,
    decoded: &[Frame],
    pool: &mut PoolAppender<'_>,
    rel: &Relocation<'_>,
    l: &Layout,
    fe: &FrameEdits,
) -> Result<Vec<u8>, EditError> {
    let mut all: Vec<Frame> = decoded.to_vec();
    all.extend(widened_fall_throughs(r, decoded, l, pool)?);
    all.sort_by_key(|f| f.offset);
    let mut out = all
        .iter()
        .map(|f| relocate_frame(f, rel, fe))
        .collect::<Result<Vec<_>, _>>()?;
    for (off, locals, stack) in &fe.tail_frames {
        out.push(Frame {
            offset: l.tail_at + off,
            locals: locals.clone(),
            stack: stack.clone(),
        });
    }
    let mut resolve = |p: u32| resolve_param(r, pool, p);
    Ok(frames::encode(&out, r.initial_locals, &mut resolve)?)
}
