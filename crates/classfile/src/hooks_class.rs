//! The bytes of the hooks class the agent defines in the bootstrap class loader:
//! a public final class whose hook methods are `public static native`, bound by the
//! agent with `RegisterNatives`.

use crate::bytes::PutBe;
use crate::probes::Hooks;

/// Class-file version of the generated class (Java 8: no module attributes needed).
const MAJOR: u16 = 52;

/// Builds the hooks class for `hooks`: every hook method as `public static native`.
pub fn hooks_class(hooks: &Hooks) -> Vec<u8> {
    let methods = [
        &hooks.enter,
        &hooks.exit,
        &hooks.unwind,
        &hooks.exit_blocks,
        &hooks.unwind_blocks,
        &hooks.alloc,
        &hooks.native_enter,
        &hooks.native_exit,
        &hooks.receiver,
        &hooks.reveal,
    ];
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut utf8 = |s: &str| -> u16 {
        let mut e = vec![1u8];
        e.put_u16(s.len() as u16);
        e.extend_from_slice(s.as_bytes());
        pool.push(e);
        pool.len() as u16
    };
    let this_name = utf8(&hooks.class);
    let super_name = utf8("java/lang/Object");
    let mut members = Vec::new();
    for m in methods {
        members.push((utf8(&m.name), utf8(&m.descriptor)));
    }
    let this_class = pool.len() as u16 + 1;
    pool.push({
        let mut e = vec![7u8];
        e.put_u16(this_name);
        e
    });
    let super_class = pool.len() as u16 + 1;
    pool.push({
        let mut e = vec![7u8];
        e.put_u16(super_name);
        e
    });
    let mut b = Vec::with_capacity(512);
    b.put_u32(0xCAFE_BABE);
    b.put_u16(0);
    b.put_u16(MAJOR);
    b.put_u16(pool.len() as u16 + 1);
    for e in &pool {
        b.extend_from_slice(e);
    }
    b.put_u16(0x0001 | 0x0010 | 0x0020); // public final super
    b.put_u16(this_class);
    b.put_u16(super_class);
    b.put_u16(0); // interfaces
    b.put_u16(0); // fields
    b.put_u16(members.len() as u16);
    for (name, desc) in members {
        b.put_u16(0x0001 | 0x0008 | 0x0100); // public static native
        b.put_u16(name);
        b.put_u16(desc);
        b.put_u16(0);
    }
    b.put_u16(0); // class attributes
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClassFile;

    #[test]
    fn hooks_class_parses_with_every_hook_static_native() {
        let hooks = Hooks::default();
        let bytes = hooks_class(&hooks);
        let c = ClassFile::parse(&bytes).unwrap();
        assert_eq!(c.name().unwrap(), "ferrofluid/Hooks");
        assert_eq!(c.methods.len(), 10);
        for m in &c.methods {
            assert_eq!(m.access, 0x0109);
        }
        let names: Vec<_> = c
            .methods
            .iter()
            .map(|m| m.name(&c.constant_pool).unwrap().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "enter",
                "exit",
                "unwind",
                "exitBlocks",
                "unwindBlocks",
                "alloc",
                "nativeEnter",
                "nativeExit",
                "receiver",
                "reveal"
            ]
        );
    }
}
