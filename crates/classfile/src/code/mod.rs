//! Bytecode: instruction decoding, frames, analysis and relocating edits.

pub mod analysis;
pub mod annotations;
pub mod asm;
pub mod cold;
pub mod edit;
pub mod frames;
pub mod insn;
pub(crate) mod lean;
pub mod opcodes;
pub mod typesim;

use crate::bytes::Cursor;
use crate::class::{read_attributes, RawAttribute};
use crate::error::{ClassError, ErrorKind, Result};

/// One `exception_table` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExceptionEntry {
    /// First covered offset.
    pub start: u16,
    /// Offset just past the covered range.
    pub end: u16,
    /// Handler offset.
    pub handler: u16,
    /// CONSTANT_Class of the caught type, 0 for any.
    pub catch_type: u16,
}

/// A decoded `Code` attribute (instructions stay bytes until asked for).
#[derive(Debug, Clone)]
pub struct CodeAttribute<'a> {
    /// `max_stack`.
    pub max_stack: u16,
    /// `max_locals`.
    pub max_locals: u16,
    /// The bytecode.
    pub code: &'a [u8],
    /// Offset of `code[0]` in the class file.
    pub code_offset: usize,
    /// The exception table, in order (order is semantics: first match wins).
    pub exception_table: Vec<ExceptionEntry>,
    /// Sub-attributes (LineNumberTable, StackMapTable, ...).
    pub attributes: Vec<RawAttribute<'a>>,
}

impl<'a> CodeAttribute<'a> {
    /// Decodes the body of a `Code` attribute.
    pub fn parse(raw: &RawAttribute<'a>) -> Result<Self> {
        let mut c = Cursor::new(raw.data, raw.data_offset());
        let max_stack = c.u16("max_stack")?;
        let max_locals = c.u16("max_locals")?;
        let len = c.u32("code_length")? as usize;
        if len == 0 || len > 65535 {
            return Err(c.error(
                ErrorKind::BadAttribute,
                format!("code_length {len} is outside 1..=65535"),
            ));
        }
        let code_offset = c.offset();
        let code = c.bytes(len, "code")?;
        let n = c.u16("exception_table_length")? as usize;
        let mut exception_table = Vec::with_capacity(n.min(c.remaining() / 8));
        for _ in 0..n {
            let at = c.offset();
            let e = ExceptionEntry {
                start: c.u16("start_pc")?,
                end: c.u16("end_pc")?,
                handler: c.u16("handler_pc")?,
                catch_type: c.u16("catch_type")?,
            };
            if e.start >= e.end || e.end as usize > len || e.handler as usize >= len {
                return Err(ClassError::new(
                    ErrorKind::BadAttribute,
                    at,
                    format!(
                        "exception range {}..{} -> {} outside the code ({len} bytes)",
                        e.start, e.end, e.handler
                    ),
                ));
            }
            exception_table.push(e);
        }
        let attributes = read_attributes(&mut c)?;
        c.expect_end("the Code attribute")?;
        Ok(CodeAttribute {
            max_stack,
            max_locals,
            code,
            code_offset,
            exception_table,
            attributes,
        })
    }
}
