//! StackMapTable frames (JVMS 4.7.4): decoded into explicit locals/stack lists,
//! edited, and re-encoded in the most compact form.

use crate::bytes::{Cursor, PutBe};
use crate::descriptor::{Kind, MethodDescriptor};
use crate::error::{ClassError, ErrorKind, Result};
use crate::patch::PoolFull;

/// A verification type. Long and Double stand for two slots, as in the attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VType {
    /// `top`.
    Top,
    /// `int`.
    Integer,
    /// `float`.
    Float,
    /// `double` (two slots).
    Double,
    /// `long` (two slots).
    Long,
    /// `null`.
    Null,
    /// `uninitializedThis`.
    UninitializedThis,
    /// An object type: a constant-pool Class index (`<= 0xFFFF`), or
    /// `PARAM_BASE + n` for the type of parameter `n`, which has no Class entry
    /// until a frame must spell it out.
    Object(u32),
    /// An object created by the `new` at this code offset, not yet initialised.
    Uninitialized(u32),
}

/// Base of the [`VType::Object`] values that stand for parameter types.
pub const PARAM_BASE: u32 = 0x1_0000;

impl VType {
    /// Slots the type occupies.
    pub fn slots(self) -> u32 {
        match self {
            VType::Long | VType::Double => 2,
            _ => 1,
        }
    }
}

/// A frame with every local and stack entry spelled out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Code offset the frame applies to.
    pub offset: u32,
    /// Locals, one entry per Long/Double (as in the attribute).
    pub locals: Vec<VType>,
    /// Operand stack, bottom first.
    pub stack: Vec<VType>,
}

/// Total slots taken by `types`.
pub fn slot_count(types: &[VType]) -> u32 {
    types.iter().map(|t| t.slots()).sum()
}

/// The implicit frame at offset 0, derived from the method descriptor.
pub fn initial_locals(
    this_class: u16,
    is_static: bool,
    is_constructor: bool,
    desc: &MethodDescriptor<'_>,
) -> Vec<VType> {
    let mut locals = Vec::with_capacity(desc.params.len() + 1);
    if !is_static {
        locals.push(if is_constructor {
            VType::UninitializedThis
        } else {
            VType::Object(this_class as u32)
        });
    }
    for (i, p) in desc.params.iter().enumerate() {
        locals.push(match p.kind {
            Kind::Int => VType::Integer,
            Kind::Long => VType::Long,
            Kind::Float => VType::Float,
            Kind::Double => VType::Double,
            Kind::Reference => VType::Object(PARAM_BASE + i as u32),
        });
    }
    locals
}

fn read_vtype(c: &mut Cursor<'_>) -> Result<VType> {
    let at = c.offset();
    Ok(match c.u8("verification type")? {
        0 => VType::Top,
        1 => VType::Integer,
        2 => VType::Float,
        3 => VType::Double,
        4 => VType::Long,
        5 => VType::Null,
        6 => VType::UninitializedThis,
        7 => VType::Object(c.u16("Object cpool_index")? as u32),
        8 => VType::Uninitialized(c.u16("Uninitialized offset")? as u32),
        t => {
            return Err(ClassError::new(
                ErrorKind::BadFrame,
                at,
                format!("unknown verification type tag {t}"),
            ))
        }
    })
}

fn read_vtypes(c: &mut Cursor<'_>, n: usize, into: &mut Vec<VType>) -> Result<()> {
    if n > c.remaining() {
        return Err(c.error(
            ErrorKind::BadFrame,
            format!("frame claims {n} types, only {} bytes left", c.remaining()),
        ));
    }
    into.reserve(n);
    for _ in 0..n {
        into.push(read_vtype(c)?);
    }
    Ok(())
}

/// Decodes a StackMapTable body (`data` starts at `number_of_entries`; `base` is its
/// offset in the class file) into explicit frames.
pub fn decode(data: &[u8], base: usize, initial: &[VType], code_len: u32) -> Result<Vec<Frame>> {
    let mut c = Cursor::new(data, base);
    let n = c.u16("number_of_entries")? as usize;
    let mut frames: Vec<Frame> = Vec::with_capacity(n.min(data.len()));
    let mut locals = initial.to_vec();
    let mut prev: i64 = -1;
    for _ in 0..n {
        let at = c.offset();
        let t = c.u8("frame_type")?;
        let mut stack = Vec::new();
        let delta = match t {
            0..=63 => t as u32,
            64..=127 => {
                stack.push(read_vtype(&mut c)?);
                (t - 64) as u32
            }
            128..=246 => {
                return Err(ClassError::new(
                    ErrorKind::BadFrame,
                    at,
                    format!("reserved frame type {t}"),
                ))
            }
            247 => {
                let d = c.u16("offset_delta")? as u32;
                stack.push(read_vtype(&mut c)?);
                d
            }
            248..=250 => {
                let k = (251 - t) as usize;
                if k > locals.len() {
                    return Err(ClassError::new(
                        ErrorKind::BadFrame,
                        at,
                        format!("chop_frame removes {k} of {} locals", locals.len()),
                    ));
                }
                locals.truncate(locals.len() - k);
                c.u16("offset_delta")? as u32
            }
            251 => c.u16("offset_delta")? as u32,
            252..=254 => {
                let d = c.u16("offset_delta")? as u32;
                read_vtypes(&mut c, (t - 251) as usize, &mut locals)?;
                d
            }
            255 => {
                let d = c.u16("offset_delta")? as u32;
                let nl = c.u16("number_of_locals")? as usize;
                locals.clear();
                read_vtypes(&mut c, nl, &mut locals)?;
                let ns = c.u16("number_of_stack_items")? as usize;
                read_vtypes(&mut c, ns, &mut stack)?;
                d
            }
        };
        let offset = prev + delta as i64 + 1;
        if offset >= code_len as i64 {
            return Err(ClassError::new(
                ErrorKind::BadFrame,
                at,
                format!("frame at offset {offset} is past the code ({code_len} bytes)"),
            ));
        }
        prev = offset;
        frames.push(Frame {
            offset: offset as u32,
            locals: locals.clone(),
            stack,
        });
    }
    c.expect_end("StackMapTable")?;
    Ok(frames)
}

fn write_vtype(
    out: &mut Vec<u8>,
    t: VType,
    resolve: &mut dyn FnMut(u32) -> Result<u16, PoolFull>,
) -> Result<(), PoolFull> {
    match t {
        VType::Top => out.push(0),
        VType::Integer => out.push(1),
        VType::Float => out.push(2),
        VType::Double => out.push(3),
        VType::Long => out.push(4),
        VType::Null => out.push(5),
        VType::UninitializedThis => out.push(6),
        VType::Object(i) => {
            out.push(7);
            out.put_u16(if i < PARAM_BASE {
                i as u16
            } else {
                resolve(i)?
            });
        }
        VType::Uninitialized(o) => {
            out.push(8);
            out.put_u16(o as u16);
        }
    }
    Ok(())
}

/// Encodes `frames` (sorted by offset, offsets distinct) as a StackMapTable body,
/// each frame in its shortest form relative to the previous one.
/// `resolve` turns a parameter placeholder into a constant-pool Class index.
pub fn encode(
    frames: &[Frame],
    initial: &[VType],
    resolve: &mut dyn FnMut(u32) -> Result<u16, PoolFull>,
) -> Result<Vec<u8>, PoolFull> {
    let mut out = Vec::with_capacity(2 + frames.len() * 4);
    out.put_u16(frames.len() as u16);
    let mut prev_locals: &[VType] = initial;
    let mut prev: i64 = -1;
    for f in frames {
        let delta = (f.offset as i64 - prev - 1) as u32;
        prev = f.offset as i64;
        let (pl, cl) = (prev_locals.len(), f.locals.len());
        let same_prefix = f.locals[..cl.min(pl)] == prev_locals[..cl.min(pl)];
        if f.stack.is_empty() && cl == pl && same_prefix {
            if delta < 64 {
                out.push(delta as u8);
            } else {
                out.push(251);
                out.put_u16(delta as u16);
            }
        } else if f.stack.len() == 1 && cl == pl && same_prefix {
            if delta < 64 {
                out.push(64 + delta as u8);
            } else {
                out.push(247);
                out.put_u16(delta as u16);
            }
            write_vtype(&mut out, f.stack[0], resolve)?;
        } else if f.stack.is_empty() && same_prefix && cl < pl && pl - cl <= 3 {
            out.push((251 - (pl - cl)) as u8);
            out.put_u16(delta as u16);
        } else if f.stack.is_empty() && same_prefix && cl > pl && cl - pl <= 3 {
            out.push((251 + (cl - pl)) as u8);
            out.put_u16(delta as u16);
            for &t in &f.locals[pl..] {
                write_vtype(&mut out, t, resolve)?;
            }
        } else {
            out.push(255);
            out.put_u16(delta as u16);
            out.put_u16(cl as u16);
            for &t in &f.locals {
                write_vtype(&mut out, t, resolve)?;
            }
            out.put_u16(f.stack.len() as u16);
            for &t in &f.stack {
                write_vtype(&mut out, t, resolve)?;
            }
        }
        prev_locals = &f.locals;
    }
    Ok(out)
}

/// Puts `t` into local slot `slot` of `locals` (entries form), padding with Top.
/// Returns false (and changes nothing) when the locals already reach past `slot`,
/// which a frame of valid code never does (the slot is the old `max_locals`).
#[must_use]
pub fn set_local_past_end(locals: &mut Vec<VType>, slot: u32, t: VType) -> bool {
    let used = slot_count(locals);
    if used > slot {
        return false;
    }
    for _ in used..slot {
        locals.push(VType::Top);
    }
    locals.push(t);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(frames: &[Frame], initial: &[VType]) -> Vec<Frame> {
        let bytes = encode(frames, initial, &mut |_| Ok(99)).unwrap();
        decode(&bytes, 0, initial, 1000).unwrap()
    }

    #[test]
    fn encodes_each_form_and_decodes_back() {
        let init = vec![VType::Object(3), VType::Integer];
        let frames = vec![
            Frame {
                offset: 0,
                locals: init.clone(),
                stack: vec![],
            },
            Frame {
                offset: 5,
                locals: init.clone(),
                stack: vec![VType::Long],
            },
            Frame {
                offset: 100,
                locals: init.clone(),
                stack: vec![VType::Null],
            },
            Frame {
                offset: 200,
                locals: vec![VType::Object(3), VType::Integer, VType::Long, VType::Top],
                stack: vec![],
            },
            Frame {
                offset: 201,
                locals: vec![VType::Object(3)],
                stack: vec![],
            },
            Frame {
                offset: 300,
                locals: vec![VType::Float],
                stack: vec![VType::Uninitialized(7), VType::Integer],
            },
            Frame {
                offset: 400,
                locals: vec![VType::Float],
                stack: vec![],
            },
        ];
        assert_eq!(roundtrip(&frames, &init), frames);
        let bytes = encode(&frames, &init, &mut |_| Ok(99)).unwrap();
        // same_frame(0), same_locals_1(5-0-1=4), extended(94), append 2, chop 3, full, same(99 -> extended)
        assert_eq!(&bytes[..4], &[0, 7, 0, 64 + 4]);
    }

    #[test]
    fn parameter_placeholders_are_resolved_only_when_written() {
        let init = vec![VType::Object(PARAM_BASE)];
        let mut asked = 0;
        let same = [Frame {
            offset: 3,
            locals: init.clone(),
            stack: vec![],
        }];
        encode(&same, &init, &mut |_| {
            asked += 1;
            Ok(1)
        })
        .unwrap();
        assert_eq!(asked, 0);
        let full = [Frame {
            offset: 3,
            locals: init.clone(),
            stack: vec![VType::Integer, VType::Integer],
        }];
        let b = encode(&full, &init, &mut |p| {
            asked += 1;
            assert_eq!(p, PARAM_BASE);
            Ok(42)
        })
        .unwrap();
        assert_eq!(asked, 1);
        assert_eq!(b, vec![0, 1, 255, 0, 3, 0, 1, 7, 0, 42, 0, 2, 1, 1]);
    }

    #[test]
    fn streaming_relocation_matches_decode_and_encode() {
        let init = vec![VType::Object(3), VType::Integer];
        let frames = vec![
            Frame {
                offset: 2,
                locals: init.clone(),
                stack: vec![],
            },
            Frame {
                offset: 9,
                locals: init.clone(),
                stack: vec![VType::Uninitialized(4)],
            },
            Frame {
                offset: 30,
                locals: vec![VType::Object(3), VType::Integer, VType::Long],
                stack: vec![],
            },
            Frame {
                offset: 31,
                locals: vec![VType::Object(3)],
                stack: vec![],
            },
            Frame {
                offset: 40,
                locals: vec![VType::Float],
                stack: vec![VType::Integer],
            },
        ];
        let bytes = encode(&frames, &init, &mut |_| Ok(1)).unwrap();
        // Everything moves by 70 bytes, so the two `same` forms must grow to extended forms.
        let moved = |o: u32| Some(o + 70);
        let extra = [Frame {
            offset: 200,
            locals: vec![],
            stack: vec![VType::Object(9)],
        }];
        let out = relocate(&bytes, 0, &moved, &moved, &extra, &mut |_| Ok(1)).unwrap();
        let back = decode(&out, 0, &init, 1000).unwrap();
        let mut expected: Vec<Frame> = frames
            .iter()
            .map(|f| Frame {
                offset: f.offset + 70,
                locals: f.locals.clone(),
                stack: f
                    .stack
                    .iter()
                    .map(|t| match t {
                        VType::Uninitialized(o) => VType::Uninitialized(o + 70),
                        t => *t,
                    })
                    .collect(),
            })
            .collect();
        expected.push(extra[0].clone());
        assert_eq!(back, expected);
        assert_eq!(
            out[2], 251,
            "same_frame with delta 72 becomes same_frame_extended"
        );
    }

    #[test]
    fn rejects_reserved_and_overlong_frames() {
        assert_eq!(
            decode(&[0, 1, 200], 10, &[], 100).unwrap_err().kind(),
            &ErrorKind::BadFrame
        );
        assert_eq!(
            decode(&[0, 1, 250, 0, 0], 0, &[], 100).unwrap_err().kind(),
            &ErrorKind::BadFrame
        );
        assert_eq!(decode(&[0, 1, 63], 0, &[], 10).unwrap_err().offset(), 2);
    }
}

/// Relocates a StackMapTable body without decoding frames into lists: each frame's
/// offset goes through `target`, `Uninitialized` offsets through `insn`, and frame
/// types are widened (`same` -> `same_frame_extended`, ...) when a delta grows past 63.
/// `extra` frames (full frames at new offsets past every relocated one) are appended.
/// Used when a probe leaves frame contents alone, which is the common case.
pub fn relocate(
    data: &[u8],
    base: usize,
    target: &dyn Fn(u32) -> Option<u32>,
    insn: &dyn Fn(u32) -> Option<u32>,
    extra: &[Frame],
    resolve: &mut dyn FnMut(u32) -> Result<u16, PoolFull>,
) -> Result<Vec<u8>, RelocateError> {
    let mut out = Vec::with_capacity(data.len() + 8 + extra.len() * 8);
    relocate_into(&mut out, data, base, target, insn, extra, resolve)?;
    Ok(out)
}

/// [`relocate`] appending to `out`; returns the new offset of the last frame written
/// (-1 when none), for a caller that appends more frames.
pub fn relocate_into(
    out: &mut Vec<u8>,
    data: &[u8],
    base: usize,
    target: &dyn Fn(u32) -> Option<u32>,
    insn: &dyn Fn(u32) -> Option<u32>,
    extra: &[Frame],
    resolve: &mut dyn FnMut(u32) -> Result<u16, PoolFull>,
) -> Result<i64, RelocateError> {
    let mut c = Cursor::new(data, base);
    let n = c.u16("number_of_entries")?;
    out.put_u16(n + extra.len() as u16);
    let (mut prev_old, mut prev_new): (i64, i64) = (-1, -1);
    let bad = |what: String| RelocateError::Malformed(what);
    let copy_vtype = |c: &mut Cursor<'_>, out: &mut Vec<u8>| -> Result<(), RelocateError> {
        let t = c.u8("verification type")?;
        out.push(t);
        match t {
            0..=6 => {}
            7 => out.put_u16(c.u16("cpool_index")?),
            8 => {
                let o = c.u16("offset")? as u32;
                let new = insn(o)
                    .ok_or_else(|| bad(format!("Uninitialized({o}) is not an instruction")))?;
                out.put_u16(new as u16);
            }
            t => return Err(bad(format!("unknown verification type tag {t}"))),
        }
        Ok(())
    };
    for _ in 0..n {
        let t = c.u8("frame_type")?;
        let delta = match t {
            0..=63 => t as i64,
            64..=127 => (t - 64) as i64,
            128..=246 => return Err(bad(format!("reserved frame type {t}"))),
            _ => c.u16("offset_delta")? as i64,
        };
        let old = prev_old + delta + 1;
        let new = target(old as u32)
            .ok_or_else(|| bad(format!("frame at {old} is not an instruction")))?
            as i64;
        let nd = (new - prev_new - 1) as u16;
        prev_old = old;
        prev_new = new;
        match t {
            0..=63 | 251 if nd < 64 && t != 251 => out.push(nd as u8),
            0..=63 | 251 => {
                out.push(251);
                out.put_u16(nd);
            }
            64..=127 | 247 => {
                if nd < 64 && t != 247 {
                    out.push(64 + nd as u8);
                } else {
                    out.push(247);
                    out.put_u16(nd);
                }
                copy_vtype(&mut c, out)?;
            }
            248..=250 => {
                out.push(t);
                out.put_u16(nd);
            }
            252..=254 => {
                out.push(t);
                out.put_u16(nd);
                for _ in 0..t - 251 {
                    copy_vtype(&mut c, out)?;
                }
            }
            _ => {
                out.push(255);
                out.put_u16(nd);
                for _ in 0..2 {
                    let k = c.u16("count")?;
                    out.put_u16(k);
                    for _ in 0..k {
                        copy_vtype(&mut c, out)?;
                    }
                }
            }
        }
    }
    c.expect_end("StackMapTable")?;
    for f in extra {
        let nd = (f.offset as i64 - prev_new - 1) as u16;
        prev_new = f.offset as i64;
        out.push(255);
        out.put_u16(nd);
        out.put_u16(f.locals.len() as u16);
        for &t in &f.locals {
            write_vtype(out, t, resolve)?;
        }
        out.put_u16(f.stack.len() as u16);
        for &t in &f.stack {
            write_vtype(out, t, resolve)?;
        }
    }
    Ok(prev_new)
}

/// Why [`relocate`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelocateError {
    /// The attribute could not be read or names a non-instruction.
    Malformed(String),
    /// No room for a constant a new frame needs.
    PoolFull,
}

impl From<ClassError> for RelocateError {
    fn from(e: ClassError) -> Self {
        RelocateError::Malformed(e.to_string())
    }
}

impl From<PoolFull> for RelocateError {
    fn from(_: PoolFull) -> Self {
        RelocateError::PoolFull
    }
}
