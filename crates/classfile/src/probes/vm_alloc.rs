//! Objects the JVM allocates for a method without an allocating instruction of the method's
//! own: what reflection (`Constructor.newInstance`, `Class.newInstance`, `Array.newInstance`)
//! and `clone()` return, and the inner arrays of a `multianewarray`. The probe after the call
//! (after the `multianewarray`) hands the new object to the counting class's `vm` hook (its
//! inner arrays to `inner`) with a site id that counts per runtime class, since the class is
//! known only when the call returns.

use crate::code::asm::Snippet;
use crate::code::insn::{Insn, Operand};
use crate::code::opcodes::*;
use crate::constant_pool::ConstantPool;
use crate::patch::ClassPatcher;
use crate::probes::entry_exit::push_id;
use crate::probes::{Hook, Refs, Selection, SkipReason};

/// How the JVM came to allocate the objects of a site counted per runtime class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VmAllocKind {
    /// The inner arrays of a `multianewarray`, at the instruction's offset.
    Inner,
    /// What a reflective call returns: `Constructor.newInstance`, `Class.newInstance`,
    /// `Array.newInstance`.
    Reflect,
    /// What `clone()` of an array or `Object.clone` called as `super.clone()` returns.
    Clone,
}

impl VmAllocKind {
    /// The name reports give the kind (`new`: the site's own instruction allocated them).
    pub fn name(self) -> &'static str {
        match self {
            VmAllocKind::Inner => "new",
            VmAllocKind::Reflect => "reflect",
            VmAllocKind::Clone => "clone",
        }
    }
}

/// The calls whose returned object the JVM allocated, and whether the object's inner arrays
/// are new too (`Array.newInstance(Class, int...)`).
fn allocating_call(
    op: u8,
    class: &str,
    name: &str,
    descriptor: &str,
) -> Option<(VmAllocKind, bool)> {
    let reflect = Some((VmAllocKind::Reflect, false));
    match (op, class, name, descriptor) {
        (
            INVOKEVIRTUAL,
            "java/lang/reflect/Constructor",
            "newInstance",
            "([Ljava/lang/Object;)Ljava/lang/Object;",
        )
        | (INVOKEVIRTUAL, "java/lang/Class", "newInstance", "()Ljava/lang/Object;")
        | (
            INVOKESTATIC,
            "java/lang/reflect/Array",
            "newInstance",
            "(Ljava/lang/Class;I)Ljava/lang/Object;",
        ) => reflect,
        (
            INVOKESTATIC,
            "java/lang/reflect/Array",
            "newInstance",
            "(Ljava/lang/Class;[I)Ljava/lang/Object;",
        ) => Some((VmAllocKind::Reflect, true)),
        // The calls that name `Object.clone`, which allocates: an array's clone, `super.clone()`
        // in a class whose superclass is Object, and an unqualified `clone()` in a class that
        // does not override it (javac names Object there). A call naming an override
        // (`Foo.clone`, `super.clone()` naming another superclass) is not counted: the override
        // reaches Object's through a call of its own, which is (docs/decisions/0048).
        (INVOKEVIRTUAL, c, "clone", "()Ljava/lang/Object;") if c.starts_with('[') => {
            Some((VmAllocKind::Clone, false))
        }
        (INVOKESPECIAL | INVOKEVIRTUAL, "java/lang/Object", "clone", "()Ljava/lang/Object;") => {
            Some((VmAllocKind::Clone, false))
        }
        _ => None,
    }
}

/// JDK 17's generated reflection accessors: their `new` makes the object a reflective call
/// returns, which is counted at the call; they get no `alloc` probes, so it is counted once.
pub(crate) fn is_generated_accessor(class: &str) -> bool {
    ["jdk/internal/reflect/Generated", "sun/reflect/Generated"]
        .iter()
        .any(|p| class.starts_with(p) && class.contains("Accessor"))
}

/// The probe after `insn` if it is a call whose returned object the JVM allocated and the
/// selection gives its site an id; `None` otherwise.
pub(crate) fn call_probe(
    cp: &ConstantPool<'_>,
    insn: &Insn,
    method_id: u32,
    hooks: &mut Refs<'_>,
    selection: &mut dyn Selection,
    patcher: &mut ClassPatcher<'_>,
) -> Result<Option<Snippet>, SkipReason> {
    let (Operand::Constant(c), INVOKEVIRTUAL | INVOKESPECIAL | INVOKESTATIC) =
        (&insn.operand, insn.op)
    else {
        return Ok(None);
    };
    let Ok(callee) = cp.member_ref(*c) else {
        return Ok(None);
    };
    let Some((kind, inner)) =
        allocating_call(insn.op, &callee.class, &callee.name, &callee.descriptor)
    else {
        return Ok(None);
    };
    let called = (&*callee.class, &*callee.name, &*callee.descriptor);
    let Some(site) = selection.vm_alloc_site_id(method_id, insn.offset, kind, Some(called)) else {
        return Ok(None);
    };
    let mut s = Snippet::new();
    hook_call(&mut s, hooks, patcher, Hook::AllocVm, site)?;
    if inner {
        hook_call(&mut s, hooks, patcher, Hook::AllocInner, site)?;
    }
    Ok(Some(s))
}

/// Appends to `s` (after the `alloc` probe of a `multianewarray` at `insn`) the count of its
/// inner arrays, if it makes any and the selection gives them a site id.
pub(crate) fn inner_probe(
    s: &mut Snippet,
    insn: &Insn,
    method_id: u32,
    hooks: &mut Refs<'_>,
    selection: &mut dyn Selection,
    patcher: &mut ClassPatcher<'_>,
) -> Result<(), SkipReason> {
    let Operand::MultiNewArray { dims, .. } = insn.operand else {
        return Ok(());
    };
    if dims < 2 {
        return Ok(());
    }
    match selection.vm_alloc_site_id(method_id, insn.offset, VmAllocKind::Inner, None) {
        Some(site) => hook_call(s, hooks, patcher, Hook::AllocInner, site),
        None => Ok(()),
    }
}

/// `dup; <site>; invokestatic hook(Object, int)`: the object on top of the stack stays there.
fn hook_call(
    s: &mut Snippet,
    hooks: &mut Refs<'_>,
    patcher: &mut ClassPatcher<'_>,
    hook: Hook,
    site: u32,
) -> Result<(), SkipReason> {
    let index = hooks.hook(patcher, hook)?;
    s.op(DUP, 0, 1);
    push_id(s, patcher, site)?;
    s.invokestatic(index, 2, 0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calls_the_jvm_allocates_for() {
        let obj = "()Ljava/lang/Object;";
        assert_eq!(
            allocating_call(INVOKEVIRTUAL, "[I", "clone", obj),
            Some((VmAllocKind::Clone, false))
        );
        assert_eq!(
            allocating_call(INVOKESPECIAL, "java/lang/Object", "clone", obj),
            Some((VmAllocKind::Clone, false))
        );
        assert_eq!(allocating_call(INVOKEVIRTUAL, "Foo", "clone", obj), None);
        assert_eq!(allocating_call(INVOKESPECIAL, "Base", "clone", obj), None);
        assert_eq!(
            allocating_call(
                INVOKESTATIC,
                "java/lang/reflect/Array",
                "newInstance",
                "(Ljava/lang/Class;[I)Ljava/lang/Object;"
            ),
            Some((VmAllocKind::Reflect, true))
        );
        assert_eq!(
            allocating_call(INVOKEVIRTUAL, "java/lang/Class", "newInstance", obj),
            Some((VmAllocKind::Reflect, false))
        );
        assert_eq!(
            allocating_call(INVOKEVIRTUAL, "java/lang/reflect/Method", "invoke", obj),
            None
        );
    }

    #[test]
    fn generated_accessors_are_recognised() {
        assert!(is_generated_accessor(
            "jdk/internal/reflect/GeneratedConstructorAccessor12"
        ));
        assert!(is_generated_accessor(
            "sun/reflect/GeneratedMethodAccessor3"
        ));
        assert!(!is_generated_accessor("jdk/internal/reflect/Reflection"));
        assert!(!is_generated_accessor("com/acme/GeneratedAccessor"));
    }
}
