//! Attributes that are tables of fixed-shape entries.

use super::reader::{Reader, Want};
use crate::class::{read_attributes, RawAttribute};
use crate::error::Result;

/// One `InnerClasses` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InnerClass {
    /// Class index of the nested class.
    pub inner_class: u16,
    /// Class index of the enclosing class, or 0 (local, anonymous or top-level).
    pub outer_class: u16,
    /// Utf8 index of the simple name, or 0 (anonymous).
    pub inner_name: u16,
    /// `inner_class_access_flags`.
    pub access: u16,
}

/// One `LineNumberTable` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineNumber {
    /// First pc of the line.
    pub start_pc: u16,
    /// Source line.
    pub line: u16,
}

/// One `LocalVariableTable` or `LocalVariableTypeTable` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalVariable {
    /// First pc where the variable has a value.
    pub start_pc: u16,
    /// Length of the range, in code bytes.
    pub length: u16,
    /// Utf8 index of the name.
    pub name: u16,
    /// Utf8 index of the descriptor (or the signature, in a `LocalVariableTypeTable`).
    pub descriptor: u16,
    /// Local variable slot.
    pub index: u16,
}

/// One `BootstrapMethods` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapMethod {
    /// MethodHandle index of the bootstrap method.
    pub method: u16,
    /// Indices of the loadable constants passed as static arguments.
    pub arguments: Vec<u16>,
}

/// One `MethodParameters` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodParameter {
    /// Utf8 index of the name, or 0 (unnamed).
    pub name: u16,
    /// `access_flags` (FINAL, SYNTHETIC, MANDATED).
    pub access: u16,
}

/// One `Record` component.
#[derive(Debug, Clone)]
pub struct RecordComponent<'a> {
    /// Utf8 index of the name.
    pub name: u16,
    /// Utf8 index of the field descriptor.
    pub descriptor: u16,
    /// The component's attributes, undecoded.
    pub attributes: Vec<RawAttribute<'a>>,
}

pub(super) fn inner_classes(r: &mut Reader<'_, '_>) -> Result<Vec<InnerClass>> {
    let count = r.u16("number_of_classes")? as usize;
    r.list(count, 8, |r| {
        Ok(InnerClass {
            inner_class: r.index(Want::CLASS, "inner_class_info_index")?,
            outer_class: r.opt_index(Want::CLASS, "outer_class_info_index")?,
            inner_name: r.opt_index(Want::UTF8, "inner_name_index")?,
            access: r.u16("inner_class_access_flags")?,
        })
    })
}

pub(super) fn line_numbers(r: &mut Reader<'_, '_>) -> Result<Vec<LineNumber>> {
    let count = r.u16("line_number_table_length")? as usize;
    r.list(count, 4, |r| {
        Ok(LineNumber {
            start_pc: r.u16("start_pc")?,
            line: r.u16("line_number")?,
        })
    })
}

pub(super) fn local_variables(
    r: &mut Reader<'_, '_>,
    descriptor: &'static str,
) -> Result<Vec<LocalVariable>> {
    let count = r.u16("local_variable_table_length")? as usize;
    r.list(count, 10, |r| {
        Ok(LocalVariable {
            start_pc: r.u16("start_pc")?,
            length: r.u16("length")?,
            name: r.index(Want::UTF8, "name_index")?,
            descriptor: r.index(Want::UTF8, descriptor)?,
            index: r.u16("index")?,
        })
    })
}

pub(super) fn bootstrap_methods(r: &mut Reader<'_, '_>) -> Result<Vec<BootstrapMethod>> {
    let count = r.u16("num_bootstrap_methods")? as usize;
    r.list(count, 4, |r| {
        let method = r.index(Want::METHOD_HANDLE, "bootstrap_method_ref")?;
        let n = r.u16("num_bootstrap_arguments")? as usize;
        let arguments = r.list(n, 2, |r| r.index(Want::LOADABLE, "bootstrap_argument"))?;
        Ok(BootstrapMethod { method, arguments })
    })
}

pub(super) fn method_parameters(r: &mut Reader<'_, '_>) -> Result<Vec<MethodParameter>> {
    let count = r.u8("parameters_count")? as usize;
    r.list(count, 4, |r| {
        Ok(MethodParameter {
            name: r.opt_index(Want::UTF8, "name_index")?,
            access: r.u16("access_flags")?,
        })
    })
}

pub(super) fn record_components<'a>(r: &mut Reader<'a, '_>) -> Result<Vec<RecordComponent<'a>>> {
    let count = r.u16("components_count")? as usize;
    r.list(count, 6, |r| {
        Ok(RecordComponent {
            name: r.index(Want::UTF8, "name_index")?,
            descriptor: r.index(Want::UTF8, "descriptor_index")?,
            attributes: read_attributes(&mut r.c)?,
        })
    })
}
