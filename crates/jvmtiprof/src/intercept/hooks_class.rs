//! The bytes of the hooks class the interceptor defines in the bootstrap loader:
//!
//! ```java
//! public final class jvmtiprof/Hooks {
//!     public static native void enter(int id);
//!     public static native void exit(int id);
//!     public static native void unwind(int id);
//! }
//! ```
//!
//! Natives have no code, so the class is a constant pool and three method entries.

/// Internal name of the hooks class.
pub(crate) const HOOKS_CLASS: &str = "jvmtiprof/Hooks";

const ACC_PUBLIC: u16 = 0x0001;
const ACC_STATIC: u16 = 0x0008;
const ACC_FINAL: u16 = 0x0010;
const ACC_SUPER: u16 = 0x0020;
const ACC_NATIVE: u16 = 0x0100;

/// The class file (version 52, Java 8).
pub(crate) fn bytes() -> Vec<u8> {
    let utf8 = [
        HOOKS_CLASS,
        "java/lang/Object",
        "enter",
        "exit",
        "unwind",
        "(I)V",
    ];
    let mut out = Vec::with_capacity(160);
    out.extend_from_slice(&0xCAFE_BABEu32.to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&52u16.to_be_bytes());
    // #1..#6 Utf8, #7 Class #1, #8 Class #2.
    out.extend_from_slice(&(utf8.len() as u16 + 3).to_be_bytes());
    for s in utf8 {
        out.push(1);
        out.extend_from_slice(&(s.len() as u16).to_be_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    for name in [1u16, 2] {
        out.push(7);
        out.extend_from_slice(&name.to_be_bytes());
    }
    out.extend_from_slice(&(ACC_PUBLIC | ACC_FINAL | ACC_SUPER).to_be_bytes());
    out.extend_from_slice(&7u16.to_be_bytes());
    out.extend_from_slice(&8u16.to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes()); // interfaces
    out.extend_from_slice(&0u16.to_be_bytes()); // fields
    out.extend_from_slice(&3u16.to_be_bytes());
    for name in [3u16, 4, 5] {
        out.extend_from_slice(&(ACC_PUBLIC | ACC_STATIC | ACC_NATIVE).to_be_bytes());
        out.extend_from_slice(&name.to_be_bytes());
        out.extend_from_slice(&6u16.to_be_bytes());
        out.extend_from_slice(&0u16.to_be_bytes()); // attributes
    }
    out.extend_from_slice(&0u16.to_be_bytes()); // class attributes
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrofluid_classfile::ClassFile;

    #[test]
    fn the_class_reads_back() {
        let bytes = bytes();
        let class = ClassFile::parse(&bytes).unwrap();
        assert_eq!(class.name().unwrap(), HOOKS_CLASS);
        let cp = &class.constant_pool;
        let methods: Vec<(String, String, u16)> = class
            .methods
            .iter()
            .map(|m| {
                (
                    m.name(cp).unwrap().into_owned(),
                    m.descriptor(cp).unwrap().into_owned(),
                    m.access,
                )
            })
            .collect();
        assert_eq!(
            methods,
            [
                ("enter".into(), "(I)V".into(), 0x0109),
                ("exit".into(), "(I)V".into(), 0x0109),
                ("unwind".into(), "(I)V".into(), 0x0109)
            ]
        );
    }
}
