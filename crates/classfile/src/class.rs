//! The class-file skeleton: header, constant pool, members and raw attributes,
//! all as spans into the borrowed input.

use std::borrow::Cow;
use std::ops::Range;

use crate::bytes::Cursor;
use crate::constant_pool::ConstantPool;
use crate::error::{ClassError, ErrorKind, Result};

/// Oldest class-file major version read (JDK 1.0.2).
pub const MIN_MAJOR: u16 = 45;
/// Newest class-file major version read (JDK 25).
pub const MAX_MAJOR: u16 = 69;

/// Access flags used by the engine.
#[allow(missing_docs)]
pub mod access {
    pub const PUBLIC: u16 = 0x0001;
    pub const PRIVATE: u16 = 0x0002;
    pub const PROTECTED: u16 = 0x0004;
    pub const STATIC: u16 = 0x0008;
    pub const FINAL: u16 = 0x0010;
    pub const SYNCHRONIZED: u16 = 0x0020;
    pub const BRIDGE: u16 = 0x0040;
    pub const VARARGS: u16 = 0x0080;
    pub const NATIVE: u16 = 0x0100;
    pub const INTERFACE: u16 = 0x0200;
    pub const ABSTRACT: u16 = 0x0400;
    pub const STRICT: u16 = 0x0800;
    pub const SYNTHETIC: u16 = 0x1000;
    pub const ANNOTATION: u16 = 0x2000;
    pub const ENUM: u16 = 0x4000;
    pub const MODULE: u16 = 0x8000;
}

/// An attribute as it appears in the file: its name index and its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawAttribute<'a> {
    /// `attribute_name_index`.
    pub name_index: u16,
    /// Offset of `attribute_name_index` in the class file.
    pub offset: usize,
    /// The `info` bytes (after the 6-byte header).
    pub data: &'a [u8],
}

impl<'a> RawAttribute<'a> {
    /// Offset of the first body byte in the class file.
    pub fn data_offset(&self) -> usize {
        self.offset + 6
    }

    /// The whole attribute (header and body) as a span of the class file.
    pub fn span(&self) -> Range<usize> {
        self.offset..self.offset + 6 + self.data.len()
    }

    /// The attribute's name.
    pub fn name(&self, cp: &ConstantPool<'a>) -> Result<Cow<'a, str>> {
        cp.utf8(self.name_index)
    }
}

/// A field or method.
#[derive(Debug, Clone)]
pub struct Member<'a> {
    /// Span of the whole `field_info`/`method_info`.
    pub span: Range<usize>,
    /// `access_flags`.
    pub access: u16,
    /// `name_index`.
    pub name_index: u16,
    /// `descriptor_index`.
    pub descriptor_index: u16,
    /// Attributes in file order.
    pub attributes: Vec<RawAttribute<'a>>,
}

impl<'a> Member<'a> {
    /// The member's name.
    pub fn name(&self, cp: &ConstantPool<'a>) -> Result<Cow<'a, str>> {
        cp.utf8(self.name_index)
    }

    /// The member's descriptor.
    pub fn descriptor(&self, cp: &ConstantPool<'a>) -> Result<Cow<'a, str>> {
        cp.utf8(self.descriptor_index)
    }

    /// The first attribute named `name`.
    pub fn attribute(&self, cp: &ConstantPool<'a>, name: &str) -> Option<RawAttribute<'a>> {
        find_attribute(&self.attributes, cp, name)
    }
}

pub(crate) fn find_attribute<'a>(
    attributes: &[RawAttribute<'a>],
    cp: &ConstantPool<'a>,
    name: &str,
) -> Option<RawAttribute<'a>> {
    attributes
        .iter()
        .copied()
        .find(|a| cp.utf8_bytes(a.name_index).ok() == Some(name.as_bytes()))
}

/// A parsed class file borrowing from its bytes.
#[derive(Debug, Clone)]
pub struct ClassFile<'a> {
    /// The input.
    pub bytes: &'a [u8],
    /// `minor_version`.
    pub minor: u16,
    /// `major_version`.
    pub major: u16,
    /// The constant pool.
    pub constant_pool: ConstantPool<'a>,
    /// Offset of `access_flags`.
    pub access_offset: usize,
    /// `access_flags`.
    pub access: u16,
    /// `this_class`.
    pub this_class: u16,
    /// `super_class` (0 for `java/lang/Object` and module-info).
    pub super_class: u16,
    /// `interfaces` indices.
    pub interfaces: Vec<u16>,
    /// Offset of `fields_count`.
    pub fields_offset: usize,
    /// Fields in order.
    pub fields: Vec<Member<'a>>,
    /// Offset of `methods_count`.
    pub methods_offset: usize,
    /// Methods in order.
    pub methods: Vec<Member<'a>>,
    /// Offset of the class's `attributes_count`.
    pub attributes_offset: usize,
    /// Class attributes in order.
    pub attributes: Vec<RawAttribute<'a>>,
}

impl<'a> ClassFile<'a> {
    /// Reads the skeleton of a class file. Attribute bodies are checked only for
    /// their lengths; [`crate::attributes`] decodes them.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let mut c = Cursor::new(bytes, 0);
        if c.u32("magic")? != 0xCAFE_BABE {
            return Err(ClassError::new(
                ErrorKind::BadMagic,
                0,
                "not a class file: magic is not 0xCAFEBABE",
            ));
        }
        let minor = c.u16("minor_version")?;
        let major = c.u16("major_version")?;
        if !(MIN_MAJOR..=MAX_MAJOR).contains(&major) {
            return Err(ClassError::new(
                ErrorKind::UnsupportedVersion,
                6,
                format!(
                    "class-file version {major}.{minor} is outside {MIN_MAJOR}.0-{MAX_MAJOR}.x"
                ),
            ));
        }
        let constant_pool = ConstantPool::parse(bytes, 8)?;
        let access_offset = constant_pool.end_offset();
        let mut c = Cursor::new(&bytes[access_offset..], access_offset);
        let access = c.u16("access_flags")?;
        let this_class = c.u16("this_class")?;
        let super_class = c.u16("super_class")?;
        let n = c.u16("interfaces_count")? as usize;
        let mut interfaces = Vec::with_capacity(n.min(c.remaining() / 2));
        for _ in 0..n {
            interfaces.push(c.u16("interface")?);
        }
        let fields_offset = c.offset();
        let fields = read_members(&mut c, "field")?;
        let methods_offset = c.offset();
        let methods = read_members(&mut c, "method")?;
        let attributes_offset = c.offset();
        let attributes = read_attributes(&mut c)?;
        c.expect_end("the class file")?;
        let class = ClassFile {
            bytes,
            minor,
            major,
            constant_pool,
            access_offset,
            access,
            this_class,
            super_class,
            interfaces,
            fields_offset,
            fields,
            methods_offset,
            methods,
            attributes_offset,
            attributes,
        };
        class.check_indices()?;
        Ok(class)
    }

    /// Every name, descriptor and attribute-name index must name a Utf8 entry.
    /// Checked by tag only: decoding each string here would cost more than the whole
    /// patch of most methods; strings are decoded (and checked) when used.
    fn check_indices(&self) -> Result<()> {
        let cp = &self.constant_pool;
        let utf8 = |idx: u16, at: usize, what: &str| -> Result<()> {
            if cp.tag(idx) == Some(crate::constant_pool::tag::UTF8) {
                Ok(())
            } else {
                Err(ClassError::new(
                    ErrorKind::BadConstantIndex,
                    at,
                    format!("{what} {idx} is not a Utf8 entry"),
                ))
            }
        };
        cp.class_name(self.this_class).map_err(|e| {
            ClassError::new(
                e.kind().clone(),
                self.access_offset + 2,
                format!("this_class: {}", e.message()),
            )
        })?;
        for m in self.fields.iter().chain(&self.methods) {
            utf8(m.name_index, m.span.start + 2, "member name_index")?;
            utf8(
                m.descriptor_index,
                m.span.start + 4,
                "member descriptor_index",
            )?;
        }
        for a in self
            .fields
            .iter()
            .chain(&self.methods)
            .flat_map(|m| &m.attributes)
            .chain(&self.attributes)
        {
            utf8(a.name_index, a.offset, "attribute name")?;
        }
        Ok(())
    }

    /// Internal name of this class (`java/lang/String`).
    pub fn name(&self) -> Result<Cow<'a, str>> {
        self.constant_pool.class_name(self.this_class)
    }

    /// Internal name of the superclass, if any.
    pub fn super_name(&self) -> Result<Option<Cow<'a, str>>> {
        if self.super_class == 0 {
            Ok(None)
        } else {
            self.constant_pool.class_name(self.super_class).map(Some)
        }
    }

    /// The first class attribute named `name`.
    pub fn attribute(&self, name: &str) -> Option<RawAttribute<'a>> {
        find_attribute(&self.attributes, &self.constant_pool, name)
    }

    /// True for class files new enough to carry StackMapTable frames the verifier requires.
    pub fn needs_frames(&self) -> bool {
        self.major >= 50
    }
}

fn read_members<'a>(c: &mut Cursor<'a>, what: &str) -> Result<Vec<Member<'a>>> {
    let n = c.u16(if what == "field" {
        "fields_count"
    } else {
        "methods_count"
    })? as usize;
    let mut out = Vec::with_capacity(n.min(c.remaining() / 8));
    for _ in 0..n {
        let start = c.offset();
        let access = c.u16("access_flags")?;
        let name_index = c.u16("name_index")?;
        let descriptor_index = c.u16("descriptor_index")?;
        let attributes = read_attributes(c)?;
        out.push(Member {
            span: start..c.offset(),
            access,
            name_index,
            descriptor_index,
            attributes,
        });
    }
    Ok(out)
}

/// Reads `attributes_count` and that many attributes, keeping bodies as slices.
pub(crate) fn read_attributes<'a>(c: &mut Cursor<'a>) -> Result<Vec<RawAttribute<'a>>> {
    let n = c.u16("attributes_count")? as usize;
    let mut out = Vec::with_capacity(n.min(c.remaining() / 6));
    for _ in 0..n {
        let offset = c.offset();
        let name_index = c.u16("attribute_name_index")?;
        let len = c.u32("attribute_length")? as usize;
        let data = c.bytes(len, "attribute body")?;
        out.push(RawAttribute {
            name_index,
            offset,
            data,
        });
    }
    Ok(out)
}
