//! `alloc`: hand each new object or array and its allocation-site id to a hook,
//! once the object is usable (after its constructor call).

use crate::class::ClassFile;
use crate::code::asm::Snippet;
use crate::code::edit::Edits;
use crate::code::insn::Operand;
use crate::code::opcodes::*;
use crate::patch::ClassPatcher;
use crate::probes::entry_exit::push_id;
use crate::probes::method::{prepare, stack_need, Mode};
use crate::probes::vm_alloc;
use crate::probes::{Hook, Refs, Selection, SkipReason};

/// Element type names of `newarray`'s `atype` operand (4..=11).
const PRIMITIVE_ARRAYS: [&str; 8] = ["[Z", "[C", "[F", "[D", "[B", "[S", "[I", "[J"];

pub(crate) fn patch(
    class: &ClassFile<'_>,
    index: usize,
    id: u32,
    hooks: &mut Refs<'_>,
    selection: &mut dyn Selection,
    patcher: &mut ClassPatcher<'_>,
) -> Result<(), SkipReason> {
    // Its objects are counted at the reflective call that runs it.
    if class
        .name()
        .is_ok_and(|n| vm_alloc::is_generated_accessor(&n))
    {
        return Err(SkipReason::NothingToDo);
    }
    let m = prepare(class, &class.methods[index], Mode::Objects)?;
    let analysis = m.analysis.as_ref().expect("Objects mode runs the dataflow");
    let cp = &class.constant_pool;
    let mut edits = Edits::new(m.insns.len());
    let mut max_stack = m.max_depth();
    let mut hook = None;
    let mut vm_probed = false;
    for (i, insn) in m.insns.iter().enumerate() {
        if let Some(s) = vm_alloc::call_probe(cp, insn, id, hooks, selection, patcher)? {
            max_stack = max_stack.max(stack_need(m.depth_before(i + 1), s.peak)?);
            edits.after[i + 1] = s.code;
            vm_probed = true;
            continue;
        }
        let class_of = |idx: u16| {
            cp.class_name(idx)
                .map(|c| c.into_owned())
                .map_err(|e| SkipReason::Malformed(e.to_string()))
        };
        let type_name = match (&insn.operand, insn.op) {
            (Operand::NewArray(t), _) => {
                match PRIMITIVE_ARRAYS.get((*t as usize).wrapping_sub(4)) {
                    Some(n) => (*n).to_owned(),
                    None => {
                        return Err(SkipReason::Malformed(format!(
                            "newarray of unknown type {t}"
                        )))
                    }
                }
            }
            (Operand::Constant(c), ANEWARRAY) => {
                let e = class_of(*c)?;
                if e.starts_with('[') {
                    format!("[{e}")
                } else {
                    format!("[L{e};")
                }
            }
            (Operand::MultiNewArray { class, .. }, _) => class_of(*class)?,
            (_, INVOKESPECIAL) => match analysis.inits.get(&i) {
                Some(site) if site.result_on_top => {
                    let new = &m.insns[m.index_of[site.new_offset as usize] as usize];
                    match new.operand {
                        Operand::Constant(c) => class_of(c)?,
                        _ => continue,
                    }
                }
                _ => continue,
            },
            _ => continue,
        };
        if !selection.wants_alloc_of(&type_name) {
            continue;
        }
        // The object sits on top of the stack right after the instruction.
        let site_bci = match insn.op {
            INVOKESPECIAL => analysis.inits[&i].new_offset,
            _ => insn.offset,
        };
        let site = selection.alloc_site_id(id, site_bci, &type_name);
        let hook_index = match hook {
            Some(h) => h,
            None => *hook.insert(hooks.hook(patcher, Hook::Alloc)?),
        };
        let mut s = Snippet::new();
        s.op(DUP, 0, 1);
        push_id(&mut s, patcher, site)?;
        s.invokestatic(hook_index, 2, 0);
        vm_alloc::inner_probe(&mut s, insn, id, hooks, selection, patcher)?;
        let after = m.depth_before(i + 1);
        max_stack = max_stack.max(stack_need(after, s.peak)?);
        edits.after[i + 1] = s.code;
    }
    if hook.is_none() && !vm_probed {
        return Err(SkipReason::NothingToDo);
    }
    m.finish_inserted(index, patcher, edits, max_stack)
}
