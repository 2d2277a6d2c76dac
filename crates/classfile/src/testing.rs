//! Small hand-assembled classes for doc examples and unit tests.

use crate::bytes::PutBe;

/// A minimal valid class `T` (version 52) with one static method `f()V` whose body is `return`.
pub fn minimal_class() -> Vec<u8> {
    let mut b = Vec::new();
    b.put_u32(0xCAFE_BABE);
    b.put_u16(0);
    b.put_u16(52);
    let utf8 = |b: &mut Vec<u8>, s: &str| {
        b.push(1);
        b.put_u16(s.len() as u16);
        b.extend_from_slice(s.as_bytes());
    };
    b.put_u16(8); // 7 entries
    utf8(&mut b, "T"); // 1
    b.push(7);
    b.put_u16(1); // 2: Class T
    utf8(&mut b, "java/lang/Object"); // 3
    b.push(7);
    b.put_u16(3); // 4: Class Object
    utf8(&mut b, "f"); // 5
    utf8(&mut b, "()V"); // 6
    utf8(&mut b, "Code"); // 7
    b.put_u16(0x21); // public super
    b.put_u16(2);
    b.put_u16(4);
    b.put_u16(0); // interfaces
    b.put_u16(0); // fields
    b.put_u16(1); // methods
    b.put_u16(0x09); // public static
    b.put_u16(5);
    b.put_u16(6);
    b.put_u16(1);
    b.put_u16(7);
    b.put_u32(13);
    b.put_u16(0); // max_stack
    b.put_u16(0); // max_locals
    b.put_u32(1);
    b.push(0xb1); // return
    b.put_u16(0);
    b.put_u16(0);
    b.put_u16(0); // class attributes
    b
}
