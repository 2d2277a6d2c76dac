//! A bounds-checked big-endian cursor over borrowed bytes.

use crate::error::{ClassError, ErrorKind, Result};

/// Reads big-endian values from a slice, never past its end.
///
/// `base` is the offset of `data[0]` within the whole class file, so errors
/// report positions a user can find in a hex dump.
#[derive(Clone, Debug)]
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor over `data`, whose first byte is at `base` in the class file.
    pub fn new(data: &'a [u8], base: usize) -> Self {
        Cursor { data, pos: 0, base }
    }

    /// Absolute offset (in the class file) of the next byte to read.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// Position relative to the start of this cursor's slice.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// True when every byte was read.
    pub fn is_empty(&self) -> bool {
        self.pos == self.data.len()
    }

    /// The underlying slice.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    #[cold]
    fn truncated(&self, what: &str, need: usize) -> ClassError {
        ClassError::new(
            ErrorKind::Truncated,
            self.offset(),
            format!(
                "truncated {what}: need {need} bytes, {} left",
                self.remaining()
            ),
        )
    }

    /// Reads `n` bytes.
    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(self.truncated(what, n));
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize, what: &str) -> Result<()> {
        self.bytes(n, what).map(|_| ())
    }

    /// Reads one byte.
    pub fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.bytes(1, what)?[0])
    }

    /// Reads a big-endian u16.
    pub fn u16(&mut self, what: &str) -> Result<u16> {
        let b = self.bytes(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// Reads a big-endian u32.
    pub fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a big-endian i32.
    pub fn i32(&mut self, what: &str) -> Result<i32> {
        self.u32(what).map(|v| v as i32)
    }

    /// An error of `kind` at the current position.
    #[cold]
    pub fn error(&self, kind: ErrorKind, message: impl Into<String>) -> ClassError {
        ClassError::new(kind, self.offset(), message)
    }

    /// Fails unless every byte was consumed.
    pub fn expect_end(&self, what: &str) -> Result<()> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(self.error(
                ErrorKind::TrailingBytes,
                format!("{} unexpected bytes at the end of {what}", self.remaining()),
            ))
        }
    }
}

/// Big-endian writes onto a `Vec<u8>`.
pub(crate) trait PutBe {
    fn put_u16(&mut self, v: u16);
    fn put_u32(&mut self, v: u32);
}

impl PutBe for Vec<u8> {
    #[inline]
    fn put_u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    #[inline]
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
}
