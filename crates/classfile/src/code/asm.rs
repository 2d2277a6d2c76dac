//! A tiny assembler for the straight-line snippets probes insert.

use crate::bytes::PutBe;
use crate::code::opcodes::*;

/// Straight-line bytecode under construction, with its peak stack use.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Snippet {
    /// The bytes.
    pub code: Vec<u8>,
    /// Current stack depth relative to the start.
    depth: i32,
    /// Highest depth reached relative to the start.
    pub peak: u16,
}

impl Snippet {
    /// An empty snippet.
    pub fn new() -> Self {
        Snippet::default()
    }

    fn moved(&mut self, delta: i32) {
        self.depth += delta;
        self.peak = self.peak.max(self.depth.max(0) as u16);
    }

    /// Pushes an int constant; `ldc` needs a pool index for large values.
    pub fn push_int(
        &mut self,
        value: i32,
        ldc_index: impl FnOnce() -> Option<u16>,
    ) -> Option<&mut Self> {
        match value {
            -1..=5 => self.code.push((ICONST_0 as i32 + value) as u8),
            -128..=127 => {
                self.code.push(BIPUSH);
                self.code.push(value as i8 as u8);
            }
            -32768..=32767 => {
                self.code.push(SIPUSH);
                self.code.put_u16(value as i16 as u16);
            }
            _ => {
                let i = ldc_index()?;
                if i <= 255 {
                    self.code.push(LDC);
                    self.code.push(i as u8);
                } else {
                    self.code.push(LDC_W);
                    self.code.put_u16(i);
                }
            }
        }
        self.moved(1);
        Some(self)
    }

    /// `invokestatic` of a method taking `pop` slots and returning `push` slots.
    pub fn invokestatic(&mut self, method_ref: u16, pop: i32, push: i32) -> &mut Self {
        self.code.push(INVOKESTATIC);
        self.code.put_u16(method_ref);
        self.moved(-pop);
        self.moved(push);
        self
    }

    /// `invokespecial` / `invokevirtual` style call with a receiver already counted in `pop`.
    pub fn invoke(&mut self, op: u8, method_ref: u16, pop: i32, push: i32) -> &mut Self {
        self.code.push(op);
        self.code.put_u16(method_ref);
        self.moved(-pop);
        self.moved(push);
        self
    }

    fn local_op(&mut self, short_base: u8, op: u8, slot: u16) {
        if slot <= 3 {
            self.code.push(short_base + slot as u8);
        } else if slot <= 255 {
            self.code.push(op);
            self.code.push(slot as u8);
        } else {
            self.code.push(WIDE);
            self.code.push(op);
            self.code.put_u16(slot);
        }
    }

    /// Loads a local of the given load opcode family (`ILOAD`, `LLOAD`, `FLOAD`, `DLOAD`, `ALOAD`).
    pub fn load(&mut self, load_op: u8, slot: u16) -> &mut Self {
        let short = ILOAD_0 + (load_op - ILOAD) * 4;
        self.local_op(short, load_op, slot);
        self.moved(if matches!(load_op, LLOAD | DLOAD) {
            2
        } else {
            1
        });
        self
    }

    /// Stores into a local with the given store opcode family (`ISTORE` ... `ASTORE`).
    pub fn store(&mut self, store_op: u8, slot: u16) -> &mut Self {
        let short = ISTORE_0 + (store_op - ISTORE) * 4;
        self.local_op(short, store_op, slot);
        self.moved(if matches!(store_op, LSTORE | DSTORE) {
            -2
        } else {
            -1
        });
        self
    }

    /// `istore slot`.
    pub fn istore(&mut self, slot: u16) -> &mut Self {
        self.local_op(ISTORE_0, ISTORE, slot);
        self.moved(-1);
        self
    }

    /// `iinc slot, delta` (wide when needed).
    pub fn iinc(&mut self, slot: u16, delta: i16) -> &mut Self {
        if slot <= 255 && (-128..=127).contains(&delta) {
            self.code
                .extend_from_slice(&[IINC, slot as u8, delta as i8 as u8]);
        } else {
            self.code.extend_from_slice(&[WIDE, IINC]);
            self.code.put_u16(slot);
            self.code.put_u16(delta as u16);
        }
        self
    }

    /// Any one-byte instruction with its stack effect.
    pub fn op(&mut self, op: u8, pop: i32, push: i32) -> &mut Self {
        self.code.push(op);
        self.moved(-pop);
        self.moved(push);
        self
    }

    /// True when nothing was emitted.
    pub fn is_empty(&self) -> bool {
        self.code.is_empty()
    }
}
