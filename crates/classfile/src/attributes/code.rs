//! The outer structure of a `Code` attribute (JVMS 4.7.3); instructions stay bytes.

use super::reader::{Reader, Want};
use crate::bytes::Cursor;
use crate::class::{read_attributes, RawAttribute};
use crate::constant_pool::ConstantPool;
use crate::error::{ErrorKind, Result};

/// Longest method body the JVM accepts.
pub const MAX_CODE_LENGTH: usize = 65535;

/// A method body: sizes, the bytecode slice, handlers and nested attributes.
#[derive(Debug, Clone)]
pub struct Code<'a> {
    /// `max_stack`.
    pub max_stack: u16,
    /// `max_locals`.
    pub max_locals: u16,
    /// The instructions.
    pub code: &'a [u8],
    /// Offset of `code[0]` in the class file.
    pub code_offset: usize,
    /// The exception table, in order.
    pub exception_table: Vec<ExceptionHandler>,
    /// Nested attributes (LineNumberTable, StackMapTable, ...), undecoded.
    pub attributes: Vec<RawAttribute<'a>>,
}

/// One exception-table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExceptionHandler {
    /// First covered pc.
    pub start_pc: u16,
    /// First pc past the covered range.
    pub end_pc: u16,
    /// Handler entry pc.
    pub handler_pc: u16,
    /// Class index of the caught type, or 0 for any (`finally`).
    pub catch_type: u16,
}

impl<'a> Code<'a> {
    /// Decodes the `Code` attribute `raw`, checking handler ranges against the code length.
    pub fn parse(raw: RawAttribute<'a>, cp: &ConstantPool<'a>) -> Result<Self> {
        let mut r = Reader::new(raw, cp, "Code");
        // HotSpot reads this layout for every version (JDK 1.0.2's u1/u1/u2 header for
        // 45.0-45.2 class files is not accepted by any current JVM), so it is all we read.
        let max_stack = r.u16("max_stack")?;
        let max_locals = r.u16("max_locals")?;
        let code_length_offset = r.c.offset();
        let code_length = r.u32("code_length")? as usize;
        if code_length == 0 || code_length > MAX_CODE_LENGTH {
            return Err(r.error_at(
                ErrorKind::BadAttribute,
                code_length_offset,
                format_args!("code_length {code_length} is outside 1..={MAX_CODE_LENGTH}"),
            ));
        }
        let code_offset = r.c.offset();
        let code = r.bytes(code_length, "code")?;
        let count = r.u16("exception_table_length")? as usize;
        let exception_table = r.list(count, 8, |r| {
            let entry_offset = r.c.offset();
            let start_pc = r.u16("start_pc")?;
            let end_pc = r.u16("end_pc")?;
            let handler_pc = r.u16("handler_pc")?;
            let catch_type = r.opt_index(Want::CLASS, "catch_type")?;
            let (start, end, handler) = (start_pc as usize, end_pc as usize, handler_pc as usize);
            if start >= end || end > code_length || handler >= code_length {
                return Err(r.error_at(
                    ErrorKind::BadAttribute,
                    entry_offset,
                    format_args!(
                        "exception handler [{start}, {end}) -> {handler} is outside the code (length {code_length})"
                    ),
                ));
            }
            Ok(ExceptionHandler { start_pc, end_pc, handler_pc, catch_type })
        })?;
        let attributes = read_attributes(&mut r.c)?;
        r.finish()?;
        Ok(Code {
            max_stack,
            max_locals,
            code,
            code_offset,
            exception_table,
            attributes,
        })
    }

    /// A cursor over the instructions whose offsets are absolute in the class file.
    pub fn code_cursor(&self) -> Cursor<'a> {
        Cursor::new(self.code, self.code_offset)
    }
}
