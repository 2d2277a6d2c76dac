//! The `reveal` probe: at the entry of a gateway method (`Method.invoke`, a method-handle
//! factory...), `Hooks.reveal(local[slot], kind)` hands one of its reference arguments to the
//! agent, which instruments the call's target before the gateway reaches it.

use crate::class::ClassFile;
use crate::code::asm::Snippet;
use crate::code::opcodes::ALOAD;
use crate::patch::ClassPatcher;
use crate::probes::entry_exit::push_id;
use crate::probes::method::{prepare, Mode};
use crate::probes::{Hook, Hooks, Instrumented, MethodOutcome, MethodSite, Refs, SkipReason};

/// Inserts `Hooks.reveal(local[slot], kind)` at the entry of every method `pick` answers
/// `Some((slot, kind))` for. The local must hold a reference at entry (`this`, or a reference
/// parameter); the caller knows the gateway's descriptor. Works on already instrumented bytes
/// too (the call then runs before the entry probe).
pub fn instrument_reveal<'a>(
    class_bytes: &'a [u8],
    hooks: &Hooks,
    pick: &mut dyn FnMut(&MethodSite<'_>) -> Option<(u16, u32)>,
) -> crate::Result<Instrumented<'a>> {
    let class = ClassFile::parse(class_bytes)?;
    let cp = &class.constant_pool;
    let class_name = class.name()?.into_owned();
    let mut patcher = ClassPatcher::new(&class);
    let mut refs = Refs::new(hooks);
    let mut methods = Vec::new();
    for (index, member) in class.methods.iter().enumerate() {
        let name = member.name(cp)?;
        let descriptor = member.descriptor(cp)?;
        let site = MethodSite {
            class: &class_name,
            name: &name,
            descriptor: &descriptor,
            access: member.access,
        };
        let Some((slot, kind)) = pick(&site) else {
            continue;
        };
        let result = if class_name == hooks.class {
            Err(SkipReason::HookClass)
        } else {
            patch(&class, index, slot, kind, &mut refs, &mut patcher)
        };
        methods.push(MethodOutcome {
            name,
            descriptor,
            id: kind,
            result,
        });
    }
    let bytes = methods
        .iter()
        .any(|m| m.result.is_ok())
        .then(|| patcher.finish());
    Ok(Instrumented {
        class_name,
        bytes,
        methods,
    })
}

fn patch(
    class: &ClassFile<'_>,
    index: usize,
    slot: u16,
    kind: u32,
    refs: &mut Refs<'_>,
    patcher: &mut ClassPatcher<'_>,
) -> Result<(), SkipReason> {
    let m = prepare(class, &class.methods[index], Mode::Plain)?;
    if slot >= m.code.max_locals {
        return Err(SkipReason::Malformed(format!(
            "local {slot} beyond max_locals {}",
            m.code.max_locals
        )));
    }
    let reveal = refs.hook(patcher, Hook::Reveal)?;
    let mut pro = Snippet::new();
    pro.load(ALOAD, slot);
    push_id(&mut pro, patcher, kind)?;
    pro.invokestatic(reveal, 2, 0);
    m.finish_with_prologue(index, patcher, pro)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_the_method_does_not_have_is_a_skip_reason() {
        // `T.f()V` has no locals: slot 0 does not exist.
        let bytes = crate::testing::minimal_class();
        let mut offered = Vec::new();
        let out = instrument_reveal(&bytes, &Hooks::default(), &mut |m| {
            offered.push(format!("{}.{}{}", m.class, m.name, m.descriptor));
            Some((0, 3))
        })
        .unwrap();
        assert_eq!(offered, ["T.f()V"]);
        assert!(out.bytes.is_none());
        assert_eq!(
            out.methods[0].result,
            Err(SkipReason::Malformed("local 0 beyond max_locals 0".into()))
        );
    }
}
