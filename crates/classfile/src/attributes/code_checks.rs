//! What `read_all` checks inside a `Code` attribute, with [`crate::code`]'s decoders:
//! every instruction decodes, branches and handlers land on instruction starts,
//! constant-pool operands have the right tag, and StackMapTable frames decode and
//! sit on instruction starts.

use super::reader::{check_index, Want};
use super::Code;
use crate::class::{access, ClassFile, Member, RawAttribute};
use crate::code::frames::{self, VType, PARAM_BASE};
use crate::code::insn::{self, Operand};
use crate::code::opcodes::*;
use crate::constant_pool::ConstantPool;
use crate::descriptor::MethodDescriptor;
use crate::error::{ClassError, ErrorKind, Result};

/// Instruction starts of one method body, and the code's position in the file.
pub(super) struct Instructions {
    /// `starts[pc]` is true when an instruction begins at `pc`; `starts[len]` is true.
    starts: Vec<bool>,
    /// The opcode at each start (for `uninitialized(offset)` frames).
    ops: Vec<u8>,
    code_offset: usize,
    /// Number of instructions.
    pub count: usize,
}

/// Decodes the instructions of `code` and checks their targets, operands and handlers.
pub(super) fn check_instructions(
    code: &Code<'_>,
    cp: &ConstantPool<'_>,
    major: u16,
) -> Result<Instructions> {
    let len = code.code.len();
    let insns = insn::decode_all(code.code, code.code_offset)?;
    let mut starts = vec![false; len + 1];
    let mut ops = vec![0u8; len];
    for i in &insns {
        starts[i.offset as usize] = true;
        ops[i.offset as usize] = i.op;
    }
    starts[len] = true;
    for i in &insns {
        let at = code.code_offset + i.offset as usize;
        for target in i.targets() {
            if target as usize >= len || !starts[target as usize] {
                return Err(ClassError::new(
                    ErrorKind::BadCode,
                    at,
                    format!(
                        "{} at pc {} jumps to {target}, not an instruction",
                        name(i.op),
                        i.offset
                    ),
                ));
            }
        }
        let index = match i.operand {
            Operand::Constant(index) | Operand::MultiNewArray { class: index, .. } => index,
            _ => continue,
        };
        let want = match i.op {
            LDC | LDC_W => Want::LDC,
            LDC2_W => Want::LDC2,
            GETSTATIC..=PUTFIELD => Want::FIELD_REF,
            INVOKEVIRTUAL => Want::METHOD_REF,
            INVOKESPECIAL | INVOKESTATIC if major >= 52 => Want::ANY_METHOD_REF,
            INVOKESPECIAL | INVOKESTATIC => Want::METHOD_REF,
            INVOKEINTERFACE => Want::INTERFACE_METHOD_REF,
            INVOKEDYNAMIC => Want::INVOKE_DYNAMIC,
            _ => Want::CLASS,
        };
        check_index(
            cp,
            index,
            want,
            at + 1,
            format_args!("{} at pc {}", name(i.op), i.offset),
        )?;
    }
    let table = code.code_offset + len + 2;
    for (n, h) in code.exception_table.iter().enumerate() {
        let (start, end, handler) = (
            h.start_pc as usize,
            h.end_pc as usize,
            h.handler_pc as usize,
        );
        if !starts[start] || !starts[end] || !starts[handler] {
            return Err(ClassError::new(
                ErrorKind::BadAttribute,
                table + 8 * n,
                format!("Code: exception handler [{start}, {end}) -> {handler} does not start and end on instructions"),
            ));
        }
    }
    Ok(Instructions {
        starts,
        ops,
        code_offset: code.code_offset,
        count: insns.len(),
    })
}

/// Decodes the StackMapTable `raw` of `method`'s body and checks where its frames
/// are and what their object types name. Returns the number of frames.
pub(super) fn check_frames(
    class: &ClassFile<'_>,
    method: &Member<'_>,
    raw: &RawAttribute<'_>,
    code: &Instructions,
) -> Result<usize> {
    let cp = &class.constant_pool;
    let method_name = method.name(cp)?;
    let descriptor = method.descriptor(cp)?;
    let Some(desc) = MethodDescriptor::parse(&descriptor) else {
        return Err(ClassError::new(
            ErrorKind::BadConstantIndex,
            method.span.start + 4,
            format!("descriptor_index: {descriptor:?} is not a method descriptor"),
        ));
    };
    let initial = frames::initial_locals(
        class.this_class,
        method.access & access::STATIC != 0,
        method_name == "<init>",
        &desc,
    );
    let len = code.starts.len() - 1;
    let decoded = frames::decode(raw.data, raw.data_offset(), &initial, len as u32)?;
    let at = raw.data_offset();
    for frame in &decoded {
        let pc = frame.offset as usize;
        if pc >= len || !code.starts[pc] {
            return Err(ClassError::new(
                ErrorKind::BadFrame,
                at,
                format!("StackMapTable: frame at pc {pc} is not at an instruction"),
            ));
        }
        for &t in frame.locals.iter().chain(&frame.stack) {
            match t {
                VType::Object(index) if index < PARAM_BASE => {
                    check_index(
                        cp,
                        index as u16,
                        Want::CLASS,
                        at,
                        format_args!("StackMapTable: frame at pc {pc}"),
                    )?;
                }
                VType::Uninitialized(new_pc) => {
                    let new_pc = new_pc as usize;
                    if new_pc >= len || !code.starts[new_pc] || code.ops[new_pc] != NEW {
                        return Err(ClassError::new(
                            ErrorKind::BadFrame,
                            at,
                            format!(
                                "StackMapTable: frame at pc {pc} has uninitialized({new_pc}), which is not a `new` (code at {:#x})",
                                code.code_offset
                            ),
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(decoded.len())
}
