//! A cursor over one attribute body that checks constant-pool indices as it reads them.

use crate::bytes::Cursor;
use crate::class::RawAttribute;
use crate::constant_pool::{tag, ConstantPool};
use crate::error::{ClassError, ErrorKind, Result};

/// The constant-pool tags a field accepts, and how to name them in an error.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Want {
    tags: &'static [u8],
    name: &'static str,
}

impl Want {
    pub const UTF8: Want = Want {
        tags: &[tag::UTF8],
        name: "Utf8",
    };
    pub const CLASS: Want = Want {
        tags: &[tag::CLASS],
        name: "Class",
    };
    pub const NAME_AND_TYPE: Want = Want {
        tags: &[tag::NAME_AND_TYPE],
        name: "NameAndType",
    };
    pub const MODULE: Want = Want {
        tags: &[tag::MODULE],
        name: "Module",
    };
    pub const PACKAGE: Want = Want {
        tags: &[tag::PACKAGE],
        name: "Package",
    };
    pub const METHOD_HANDLE: Want = Want {
        tags: &[tag::METHOD_HANDLE],
        name: "MethodHandle",
    };
    pub const INTEGER: Want = Want {
        tags: &[tag::INTEGER],
        name: "Integer",
    };
    pub const FLOAT: Want = Want {
        tags: &[tag::FLOAT],
        name: "Float",
    };
    pub const LONG: Want = Want {
        tags: &[tag::LONG],
        name: "Long",
    };
    pub const DOUBLE: Want = Want {
        tags: &[tag::DOUBLE],
        name: "Double",
    };
    pub const FIELD_REF: Want = Want {
        tags: &[tag::FIELDREF],
        name: "Fieldref",
    };
    pub const METHOD_REF: Want = Want {
        tags: &[tag::METHODREF],
        name: "Methodref",
    };
    pub const INTERFACE_METHOD_REF: Want = Want {
        tags: &[tag::INTERFACE_METHODREF],
        name: "InterfaceMethodref",
    };
    pub const ANY_METHOD_REF: Want = Want {
        tags: &[tag::METHODREF, tag::INTERFACE_METHODREF],
        name: "Methodref or InterfaceMethodref",
    };
    pub const INVOKE_DYNAMIC: Want = Want {
        tags: &[tag::INVOKE_DYNAMIC],
        name: "InvokeDynamic",
    };
    /// What `ldc` and `ldc_w` may load.
    pub const LDC: Want = Want {
        tags: &[
            tag::INTEGER,
            tag::FLOAT,
            tag::CLASS,
            tag::STRING,
            tag::METHOD_HANDLE,
            tag::METHOD_TYPE,
            tag::DYNAMIC,
        ],
        name: "Integer, Float, Class, String, MethodHandle, MethodType or Dynamic",
    };
    /// What `ldc2_w` may load.
    pub const LDC2: Want = Want {
        tags: &[tag::LONG, tag::DOUBLE, tag::DYNAMIC],
        name: "Long, Double or Dynamic",
    };
    pub const CONSTANT_VALUE: Want = Want {
        tags: &[
            tag::INTEGER,
            tag::FLOAT,
            tag::LONG,
            tag::DOUBLE,
            tag::STRING,
        ],
        name: "Integer, Float, Long, Double or String",
    };
    /// What `ldc` and bootstrap arguments may load (JVMS 4.4: loadable constants).
    pub const LOADABLE: Want = Want {
        tags: &[
            tag::INTEGER,
            tag::FLOAT,
            tag::LONG,
            tag::DOUBLE,
            tag::CLASS,
            tag::STRING,
            tag::METHOD_HANDLE,
            tag::METHOD_TYPE,
            tag::DYNAMIC,
        ],
        name: "loadable constant",
    };
}

/// Name of a constant-pool tag, for messages.
pub(crate) fn tag_name(t: u8) -> &'static str {
    match t {
        tag::UTF8 => "Utf8",
        tag::INTEGER => "Integer",
        tag::FLOAT => "Float",
        tag::LONG => "Long",
        tag::DOUBLE => "Double",
        tag::CLASS => "Class",
        tag::STRING => "String",
        tag::FIELDREF => "Fieldref",
        tag::METHODREF => "Methodref",
        tag::INTERFACE_METHODREF => "InterfaceMethodref",
        tag::NAME_AND_TYPE => "NameAndType",
        tag::METHOD_HANDLE => "MethodHandle",
        tag::METHOD_TYPE => "MethodType",
        tag::DYNAMIC => "Dynamic",
        tag::INVOKE_DYNAMIC => "InvokeDynamic",
        tag::MODULE => "Module",
        tag::PACKAGE => "Package",
        _ => "unknown",
    }
}

/// Checks that `index` names an entry with one of `want`'s tags; the error is placed at `offset`.
pub(crate) fn check_index(
    cp: &ConstantPool<'_>,
    index: u16,
    want: Want,
    offset: usize,
    what: std::fmt::Arguments<'_>,
) -> Result<u16> {
    match cp.tag(index) {
        Some(t) if want.tags.contains(&t) => Ok(index),
        Some(t) => Err(ClassError::new(
            ErrorKind::BadConstantIndex,
            offset,
            format!("{what}: constant-pool index {index} is {}, expected {}", tag_name(t), want.name),
        )),
        None => Err(ClassError::new(
            ErrorKind::BadConstantIndex,
            offset,
            format!(
                "{what}: constant-pool index {index} is not a usable entry (pool has {} slots), expected {}",
                cp.count(),
                want.name
            ),
        )),
    }
}

/// Reads one attribute body; `name` prefixes every error message.
pub(crate) struct Reader<'a, 'c> {
    pub c: Cursor<'a>,
    pub cp: &'c ConstantPool<'a>,
    pub name: &'static str,
}

impl<'a, 'c> Reader<'a, 'c> {
    pub fn new(raw: RawAttribute<'a>, cp: &'c ConstantPool<'a>, name: &'static str) -> Self {
        Reader {
            c: Cursor::new(raw.data, raw.data_offset()),
            cp,
            name,
        }
    }

    pub fn u8(&mut self, what: &str) -> Result<u8> {
        self.c.u8(what).map_err(|e| self.prefixed(e))
    }

    pub fn u16(&mut self, what: &str) -> Result<u16> {
        self.c.u16(what).map_err(|e| self.prefixed(e))
    }

    pub fn u32(&mut self, what: &str) -> Result<u32> {
        self.c.u32(what).map_err(|e| self.prefixed(e))
    }

    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        self.c.bytes(n, what).map_err(|e| self.prefixed(e))
    }

    /// The same error with the attribute name in front of its message.
    #[cold]
    fn prefixed(&self, e: ClassError) -> ClassError {
        ClassError::new(
            e.kind().clone(),
            e.offset(),
            format!("{}: {}", self.name, e.message()),
        )
    }

    /// An error of `kind` at absolute `offset`, prefixed with the attribute name.
    #[cold]
    pub fn error_at(
        &self,
        kind: ErrorKind,
        offset: usize,
        message: impl std::fmt::Display,
    ) -> ClassError {
        ClassError::new(kind, offset, format!("{}: {message}", self.name))
    }

    /// Reads an index that must name an entry with one of `want`'s tags.
    pub fn index(&mut self, want: Want, what: &str) -> Result<u16> {
        let offset = self.c.offset();
        let index = self.u16(what)?;
        check_index(
            self.cp,
            index,
            want,
            offset,
            format_args!("{}: {what}", self.name),
        )
    }

    /// Like [`Reader::index`], but 0 (meaning "none") is accepted.
    pub fn opt_index(&mut self, want: Want, what: &str) -> Result<u16> {
        let offset = self.c.offset();
        let index = self.u16(what)?;
        if index == 0 {
            return Ok(0);
        }
        check_index(
            self.cp,
            index,
            want,
            offset,
            format_args!("{}: {what}", self.name),
        )
    }

    /// Reads `count` items of at least `min_size` bytes each; capacity is bounded by
    /// the bytes left, so a hostile count cannot allocate more than the input justifies.
    pub fn list<T>(
        &mut self,
        count: usize,
        min_size: usize,
        mut item: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::with_capacity(count.min(self.c.remaining() / min_size.max(1)));
        for _ in 0..count {
            out.push(item(self)?);
        }
        Ok(out)
    }

    /// A u16 count followed by that many u16 indices of `want`'s tags.
    pub fn index_list(&mut self, want: Want, what: &str) -> Result<Vec<u16>> {
        let count = self.u16("count")? as usize;
        self.list(count, 2, |r| r.index(want, what))
    }

    /// Fails unless the whole body was read.
    pub fn finish(&self) -> Result<()> {
        if self.c.is_empty() {
            Ok(())
        } else {
            Err(self.error_at(
                ErrorKind::TrailingBytes,
                self.c.offset(),
                format_args!(
                    "{} bytes past the end of the attribute's contents",
                    self.c.remaining()
                ),
            ))
        }
    }
}
