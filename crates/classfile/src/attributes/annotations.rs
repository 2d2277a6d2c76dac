//! Annotations, parameter annotations, type annotations and element values (JVMS 4.7.16-4.7.22).

use super::reader::{Reader, Want};
use crate::error::{ErrorKind, Result};

/// How deeply element values may nest (arrays of annotations of arrays...).
/// javac output stays far below; the bound keeps hostile input from exhausting the stack.
pub const MAX_ELEMENT_DEPTH: usize = 64;

/// One annotation: its type and element-value pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    /// Utf8 index of the annotation type's field descriptor (`Ljava/lang/Deprecated;`).
    pub type_index: u16,
    /// The explicitly given elements.
    pub elements: Vec<ElementPair>,
}

/// One `element_name = value` pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElementPair {
    /// Utf8 index of the element name.
    pub name: u16,
    /// The value.
    pub value: ElementValue,
}

/// An element value (JVMS 4.7.16.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElementValue {
    /// A primitive or string: `tag` is one of `BCDFIJSZs`, `index` names a constant of the matching kind.
    Const {
        /// The tag byte.
        tag: u8,
        /// The constant's index.
        index: u16,
    },
    /// An enum constant.
    Enum {
        /// Utf8 index of the enum type's descriptor.
        type_name: u16,
        /// Utf8 index of the constant's simple name.
        const_name: u16,
    },
    /// A class literal: Utf8 index of a return descriptor (`V` for `void.class`).
    Class(u16),
    /// A nested annotation.
    Annotation(Annotation),
    /// An array of values.
    Array(Vec<ElementValue>),
}

/// One type annotation (JVMS 4.7.20).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeAnnotation {
    /// `target_type` (0x00-0x4B).
    pub target_type: u8,
    /// Which type in the declaration or code is annotated.
    pub target: TargetInfo,
    /// The path from the target type to the annotated part (array element, type argument...).
    pub path: Vec<TypePathEntry>,
    /// The annotation itself.
    pub annotation: Annotation,
}

/// `target_info`, by `target_type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetInfo {
    /// 0x00, 0x01: a type parameter of a class or method.
    TypeParameter {
        /// Type parameter index.
        index: u8,
    },
    /// 0x10: `extends` (0xFFFF) or the n-th `implements` clause.
    Supertype {
        /// Index into `interfaces`, or 0xFFFF for the superclass.
        index: u16,
    },
    /// 0x11, 0x12: a bound of a type parameter.
    TypeParameterBound {
        /// Type parameter index.
        type_parameter: u8,
        /// Bound index.
        bound: u8,
    },
    /// 0x13-0x15: field type, method return type or receiver type.
    Empty,
    /// 0x16: a formal parameter's type.
    FormalParameter {
        /// Parameter index.
        index: u8,
    },
    /// 0x17: the n-th `throws` type.
    Throws {
        /// Index into the `Exceptions` attribute.
        index: u16,
    },
    /// 0x40, 0x41: a local variable (or resource variable) over code ranges.
    LocalVar(Vec<LocalVarTarget>),
    /// 0x42: the type of a `catch` clause.
    Catch {
        /// Index into the exception table.
        exception_table_index: u16,
    },
    /// 0x43-0x46: `instanceof`, `new`, or a method reference expression at a pc.
    Offset {
        /// The instruction's pc.
        offset: u16,
    },
    /// 0x47-0x4B: a type argument of a cast, constructor or method call at a pc.
    TypeArgument {
        /// The instruction's pc.
        offset: u16,
        /// Which type argument.
        index: u8,
    },
}

/// One range of a local-variable type annotation target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalVarTarget {
    /// First pc.
    pub start_pc: u16,
    /// Length in code bytes.
    pub length: u16,
    /// Local variable slot.
    pub index: u16,
}

/// One step of a `type_path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypePathEntry {
    /// 0: array element, 1: nested type, 2: wildcard bound, 3: type argument.
    pub kind: u8,
    /// Type argument index (kind 3), else 0.
    pub argument: u8,
}

pub(super) fn annotations(r: &mut Reader<'_, '_>) -> Result<Vec<Annotation>> {
    let count = r.u16("num_annotations")? as usize;
    r.list(count, 4, |r| annotation(r, 0))
}

pub(super) fn parameter_annotations(r: &mut Reader<'_, '_>) -> Result<Vec<Vec<Annotation>>> {
    let count = r.u8("num_parameters")? as usize;
    r.list(count, 2, annotations)
}

pub(super) fn type_annotations(r: &mut Reader<'_, '_>) -> Result<Vec<TypeAnnotation>> {
    let count = r.u16("num_annotations")? as usize;
    r.list(count, 6, type_annotation)
}

fn annotation(r: &mut Reader<'_, '_>, depth: usize) -> Result<Annotation> {
    let type_index = r.index(Want::UTF8, "type_index")?;
    let count = r.u16("num_element_value_pairs")? as usize;
    let elements = r.list(count, 5, |r| {
        Ok(ElementPair {
            name: r.index(Want::UTF8, "element_name_index")?,
            value: element_value(r, depth + 1)?,
        })
    })?;
    Ok(Annotation {
        type_index,
        elements,
    })
}

pub(super) fn element_value(r: &mut Reader<'_, '_>, depth: usize) -> Result<ElementValue> {
    let offset = r.c.offset();
    if depth > MAX_ELEMENT_DEPTH {
        return Err(r.error_at(
            ErrorKind::BadAttribute,
            offset,
            format_args!("element values nested deeper than {MAX_ELEMENT_DEPTH}"),
        ));
    }
    let tag = r.u8("element_value tag")?;
    let want = match tag {
        b'B' | b'C' | b'I' | b'S' | b'Z' => Want::INTEGER,
        b'D' => Want::DOUBLE,
        b'F' => Want::FLOAT,
        b'J' => Want::LONG,
        b's' => Want::UTF8,
        b'e' => {
            let type_name = r.index(Want::UTF8, "type_name_index")?;
            let const_name = r.index(Want::UTF8, "const_name_index")?;
            return Ok(ElementValue::Enum {
                type_name,
                const_name,
            });
        }
        b'c' => {
            return Ok(ElementValue::Class(
                r.index(Want::UTF8, "class_info_index")?,
            ))
        }
        b'@' => return Ok(ElementValue::Annotation(annotation(r, depth + 1)?)),
        b'[' => {
            let count = r.u16("num_values")? as usize;
            return Ok(ElementValue::Array(
                r.list(count, 3, |r| element_value(r, depth + 1))?,
            ));
        }
        other => {
            return Err(r.error_at(
                ErrorKind::BadAttribute,
                offset,
                format_args!("unknown element_value tag {:?}", other as char),
            ))
        }
    };
    Ok(ElementValue::Const {
        tag,
        index: r.index(want, "const_value_index")?,
    })
}

fn type_annotation(r: &mut Reader<'_, '_>) -> Result<TypeAnnotation> {
    let offset = r.c.offset();
    let target_type = r.u8("target_type")?;
    let target = match target_type {
        0x00 | 0x01 => TargetInfo::TypeParameter {
            index: r.u8("type_parameter_index")?,
        },
        0x10 => TargetInfo::Supertype {
            index: r.u16("supertype_index")?,
        },
        0x11 | 0x12 => TargetInfo::TypeParameterBound {
            type_parameter: r.u8("type_parameter_index")?,
            bound: r.u8("bound_index")?,
        },
        0x13..=0x15 => TargetInfo::Empty,
        0x16 => TargetInfo::FormalParameter {
            index: r.u8("formal_parameter_index")?,
        },
        0x17 => TargetInfo::Throws {
            index: r.u16("throws_type_index")?,
        },
        0x40 | 0x41 => {
            let count = r.u16("table_length")? as usize;
            TargetInfo::LocalVar(r.list(count, 6, |r| {
                Ok(LocalVarTarget {
                    start_pc: r.u16("start_pc")?,
                    length: r.u16("length")?,
                    index: r.u16("index")?,
                })
            })?)
        }
        0x42 => TargetInfo::Catch {
            exception_table_index: r.u16("exception_table_index")?,
        },
        0x43..=0x46 => TargetInfo::Offset {
            offset: r.u16("offset")?,
        },
        0x47..=0x4B => TargetInfo::TypeArgument {
            offset: r.u16("offset")?,
            index: r.u8("type_argument_index")?,
        },
        other => {
            return Err(r.error_at(
                ErrorKind::BadAttribute,
                offset,
                format_args!("unknown target_type {other:#04x}"),
            ))
        }
    };
    let length = r.u8("path_length")? as usize;
    let path = r.list(length, 2, |r| {
        let offset = r.c.offset();
        let kind = r.u8("type_path_kind")?;
        let argument = r.u8("type_argument_index")?;
        if kind > 3 {
            return Err(r.error_at(
                ErrorKind::BadAttribute,
                offset,
                format_args!("unknown type_path_kind {kind}"),
            ));
        }
        Ok(TypePathEntry { kind, argument })
    })?;
    Ok(TypeAnnotation {
        target_type,
        target,
        path,
        annotation: annotation(r, 0)?,
    })
}
