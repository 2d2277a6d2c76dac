//! Typed errors for reading and patching class files.
//!
//! Every error carries the byte offset in the input where the problem was found,
//! so a user can look at the class with a hex dump and see what is wrong.

use std::fmt;

/// What went wrong while reading a class file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input ended before a structure did.
    Truncated,
    /// The first four bytes are not `0xCAFEBABE`.
    BadMagic,
    /// The class-file version is outside 45.0..=69.x.
    UnsupportedVersion,
    /// A constant-pool index is zero, out of range, or of the wrong kind.
    BadConstantIndex,
    /// A constant-pool entry has an unknown tag.
    BadConstantTag,
    /// Modified UTF-8 that cannot be decoded.
    BadUtf8,
    /// An attribute's contents do not match its declared length or format.
    BadAttribute,
    /// Bytecode that cannot be decoded (unknown opcode, branch outside the code, ...).
    BadCode,
    /// A StackMapTable frame that cannot be decoded.
    BadFrame,
    /// Bytes left over after the last structure.
    TrailingBytes,
}

/// An error while reading a class file: what, and at which byte offset.
#[derive(Clone, PartialEq, Eq)]
pub struct ClassError {
    inner: Box<Inner>,
}

#[derive(Clone, PartialEq, Eq)]
struct Inner {
    kind: ErrorKind,
    offset: usize,
    message: String,
}

impl ClassError {
    /// Creates an error at `offset` (relative to the start of the class file).
    #[cold]
    pub fn new(kind: ErrorKind, offset: usize, message: impl Into<String>) -> Self {
        ClassError {
            inner: Box::new(Inner {
                kind,
                offset,
                message: message.into(),
            }),
        }
    }

    /// The kind of problem.
    pub fn kind(&self) -> &ErrorKind {
        &self.inner.kind
    }

    /// Byte offset in the class file where the problem was found.
    pub fn offset(&self) -> usize {
        self.inner.offset
    }

    /// Human-readable description, without the offset.
    pub fn message(&self) -> &str {
        &self.inner.message
    }
}

impl fmt::Display for ClassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (at offset {:#x})",
            self.inner.message, self.inner.offset
        )
    }
}

impl fmt::Debug for ClassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ClassError({:?}, {:#x}, {:?})",
            self.inner.kind, self.inner.offset, self.inner.message
        )
    }
}

impl std::error::Error for ClassError {}

/// Result alias for this crate.
pub type Result<T, E = ClassError> = std::result::Result<T, E>;
