//! Decoding instructions: boundaries, branch targets, switch tables, local indices.

use crate::code::opcodes::*;
use crate::error::{ClassError, ErrorKind, Result};

/// One decoded instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insn {
    /// Offset in the code array.
    pub offset: u32,
    /// The opcode (for `wide`, the widened opcode; see [`Insn::wide`]).
    pub op: u8,
    /// True for a `wide`-prefixed instruction.
    pub wide: bool,
    /// Length in bytes, padding and prefix included.
    pub len: u32,
    /// Operands that matter to relocation and analysis.
    pub operand: Operand,
}

/// Decoded operands (offsets absolute; field names follow JVMS).
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operand {
    /// No operand the engine cares about (or only an immediate value).
    None,
    /// A constant-pool index (ldc, field/method refs, new, checkcast...).
    Constant(u16),
    /// `multianewarray`: class index and dimensions.
    MultiNewArray { class: u16, dims: u8 },
    /// `newarray`: the primitive element type code.
    NewArray(u8),
    /// A local-variable index (loads, stores, `ret`).
    Local(u16),
    /// `iinc`.
    Iinc { local: u16, delta: i16 },
    /// A branch; `target` is absolute.
    Branch { target: u32 },
    /// `tableswitch`; targets absolute.
    TableSwitch {
        default: u32,
        low: i32,
        high: i32,
        targets: Vec<u32>,
    },
    /// `lookupswitch`; targets absolute.
    LookupSwitch {
        default: u32,
        pairs: Vec<(i32, u32)>,
    },
}

impl Insn {
    /// Offset of the next instruction.
    pub fn end(&self) -> u32 {
        self.offset + self.len
    }

    /// Every branch target of this instruction (not including fall-through).
    pub fn targets(&self) -> impl Iterator<Item = u32> + '_ {
        let (single, table): (Option<u32>, &[u32]) = match &self.operand {
            Operand::Branch { target } => (Some(*target), &[]),
            Operand::TableSwitch {
                default, targets, ..
            } => (Some(*default), targets),
            Operand::LookupSwitch { default, .. } => (Some(*default), &[]),
            _ => (None, &[]),
        };
        let pairs = match &self.operand {
            Operand::LookupSwitch { pairs, .. } => pairs.as_slice(),
            _ => &[],
        };
        single
            .into_iter()
            .chain(table.iter().copied())
            .chain(pairs.iter().map(|p| p.1))
    }
}

fn bad(offset: u32, code_offset: usize, msg: String) -> ClassError {
    ClassError::new(ErrorKind::BadCode, code_offset + offset as usize, msg)
}

/// Decodes the instruction at `offset` of `code`. `code_offset` is where `code`
/// starts in the class file, for error positions.
pub fn decode_at(code: &[u8], offset: u32, code_offset: usize) -> Result<Insn> {
    let at = offset as usize;
    let op = code[at];
    let rd_u8 = |i: usize| -> Result<u8> {
        code.get(i).copied().ok_or_else(|| {
            bad(
                offset,
                code_offset,
                format!("{} runs past the end of the code", name(op)),
            )
        })
    };
    let rd_u16 = |i: usize| -> Result<u16> { Ok(u16::from_be_bytes([rd_u8(i)?, rd_u8(i + 1)?])) };
    let rd_i32 = |i: usize| -> Result<i32> {
        Ok(i32::from_be_bytes([
            rd_u8(i)?,
            rd_u8(i + 1)?,
            rd_u8(i + 2)?,
            rd_u8(i + 3)?,
        ]))
    };
    let rel = |delta: i64| -> Result<u32> {
        let t = offset as i64 + delta;
        if t < 0 || t >= code.len() as i64 {
            Err(bad(
                offset,
                code_offset,
                format!("{} jumps outside the code (to {t})", name(op)),
            ))
        } else {
            Ok(t as u32)
        }
    };
    let Some(fixed) = fixed_len(op) else {
        return Err(bad(
            offset,
            code_offset,
            format!("invalid opcode {op:#04x}"),
        ));
    };
    let (len, wide, op, operand) = match op {
        TABLESWITCH => {
            let p = (at + 4) & !3;
            let default = rel(rd_i32(p)? as i64)?;
            let low = rd_i32(p + 4)?;
            let high = rd_i32(p + 8)?;
            if low > high {
                return Err(bad(
                    offset,
                    code_offset,
                    format!("tableswitch low {low} > high {high}"),
                ));
            }
            let n = (high as i64 - low as i64 + 1) as usize;
            if n > (code.len().saturating_sub(p + 12)) / 4 {
                return Err(bad(
                    offset,
                    code_offset,
                    "tableswitch runs past the end of the code".into(),
                ));
            }
            let mut targets = Vec::with_capacity(n);
            for i in 0..n {
                targets.push(rel(rd_i32(p + 12 + 4 * i)? as i64)?);
            }
            (
                (p + 12 + 4 * n - at) as u32,
                false,
                op,
                Operand::TableSwitch {
                    default,
                    low,
                    high,
                    targets,
                },
            )
        }
        LOOKUPSWITCH => {
            let p = (at + 4) & !3;
            let default = rel(rd_i32(p)? as i64)?;
            let n = rd_i32(p + 4)?;
            if n < 0 || n as usize > (code.len().saturating_sub(p + 8)) / 8 {
                return Err(bad(
                    offset,
                    code_offset,
                    format!("lookupswitch with bad npairs {n}"),
                ));
            }
            let mut pairs = Vec::with_capacity(n as usize);
            for i in 0..n as usize {
                pairs.push((rd_i32(p + 8 + 8 * i)?, rel(rd_i32(p + 12 + 8 * i)? as i64)?));
            }
            (
                (p + 8 + 8 * n as usize - at) as u32,
                false,
                op,
                Operand::LookupSwitch { default, pairs },
            )
        }
        WIDE => {
            let wop = rd_u8(at + 1)?;
            match wop {
                ILOAD..=ALOAD | ISTORE..=ASTORE | RET => {
                    (4, true, wop, Operand::Local(rd_u16(at + 2)?))
                }
                IINC => (
                    6,
                    true,
                    wop,
                    Operand::Iinc {
                        local: rd_u16(at + 2)?,
                        delta: rd_u16(at + 4)? as i16,
                    },
                ),
                _ => {
                    return Err(bad(
                        offset,
                        code_offset,
                        format!("wide cannot modify {}", name(wop)),
                    ))
                }
            }
        }
        _ => {
            let operand = match op {
                LDC => Operand::Constant(rd_u8(at + 1)? as u16),
                LDC_W
                | LDC2_W
                | GETSTATIC..=INVOKEDYNAMIC
                | NEW
                | ANEWARRAY
                | CHECKCAST
                | INSTANCEOF => Operand::Constant(rd_u16(at + 1)?),
                MULTIANEWARRAY => Operand::MultiNewArray {
                    class: rd_u16(at + 1)?,
                    dims: rd_u8(at + 3)?,
                },
                NEWARRAY => Operand::NewArray(rd_u8(at + 1)?),
                ILOAD..=ALOAD | ISTORE..=ASTORE | RET => Operand::Local(rd_u8(at + 1)? as u16),
                ILOAD_0..=ALOAD_3 => Operand::Local(((op - ILOAD_0) % 4) as u16),
                ISTORE_0..=ASTORE_3 => Operand::Local(((op - ISTORE_0) % 4) as u16),
                IINC => Operand::Iinc {
                    local: rd_u8(at + 1)? as u16,
                    delta: rd_u8(at + 2)? as i8 as i16,
                },
                IFEQ..=JSR | IFNULL | IFNONNULL => Operand::Branch {
                    target: rel(rd_u16(at + 1)? as i16 as i64)?,
                },
                GOTO_W | JSR_W => Operand::Branch {
                    target: rel(rd_i32(at + 1)? as i64)?,
                },
                _ => Operand::None,
            };
            if at + fixed as usize > code.len() {
                return Err(bad(
                    offset,
                    code_offset,
                    format!("{} runs past the end of the code", name(op)),
                ));
            }
            (fixed as u32, false, op, operand)
        }
    };
    Ok(Insn {
        offset,
        op,
        wide,
        len,
        operand,
    })
}

/// Decodes every instruction of `code`, in order.
pub fn decode_all(code: &[u8], code_offset: usize) -> Result<Vec<Insn>> {
    let mut out = Vec::with_capacity(code.len() / 2);
    let mut at = 0u32;
    while (at as usize) < code.len() {
        let insn = decode_at(code, at, code_offset)?;
        at = insn.end();
        out.push(insn);
    }
    Ok(out)
}
