//! `entry-exit` and the JP basic-block counters (`blocks`, `blocks-precise`):
//! a hook at entry, before every return, and in a handler covering the whole body.

use crate::bytes::PutBe;
use crate::class::{access, ClassFile};
use crate::code::asm::Snippet;
use crate::code::cold::deferred_instructions;
use crate::code::edit::{Edits, FrameEdits, NewHandler};
use crate::code::frames::{self, VType};
use crate::code::insn::{Insn, Operand};
use crate::code::lean;
use crate::code::opcodes::*;
use crate::descriptor::{Kind, MethodDescriptor};
use crate::patch::{ClassPatcher, PoolFull};
use crate::probes::method::{prepare, stack_need, CodeChanges, Mode, Prepared};
use crate::probes::{CallSite, Hook, Invoke, Refs, Selection, SkipReason};

pub(crate) fn pool_full(_: PoolFull) -> SkipReason {
    SkipReason::ConstantPoolFull
}

pub(crate) fn push_id(
    s: &mut Snippet,
    p: &mut ClassPatcher<'_>,
    id: u32,
) -> Result<(), SkipReason> {
    let mut err = None;
    let ok = s
        .push_int(id as i32, || match p.pool.integer(id as i32) {
            Ok(i) => Some(i),
            Err(e) => {
                err = Some(e);
                None
            }
        })
        .is_some();
    if ok {
        Ok(())
    } else {
        Err(pool_full(err.unwrap_or(PoolFull)))
    }
}

/// The bytes that push `id` (as `Snippet::push_int` writes them), interning the
/// Integer constant when it needs `ldc`.
fn id_push(p: &mut ClassPatcher<'_>, id: u32) -> Result<([u8; 3], usize), SkipReason> {
    let v = id as i32;
    let b = |x: u16| x.to_be_bytes();
    Ok(match v {
        -1..=5 => ([(ICONST_0 as i32 + v) as u8, 0, 0], 1),
        -128..=127 => ([BIPUSH, v as i8 as u8, 0], 2),
        -32768..=32767 => {
            let [h, l] = b(v as i16 as u16);
            ([SIPUSH, h, l], 3)
        }
        _ => {
            let i = p.pool.integer(v).map_err(pool_full)?;
            if i <= 255 {
                ([LDC, i as u8, 0], 2)
            } else {
                let [h, l] = b(i);
                ([LDC_W, h, l], 3)
            }
        }
    })
}

/// What [`patch_lean`] keeps across the methods of a class.
pub(crate) struct LeanClass {
    /// The class is `java/lang/Object`, whose `<init>` calls no `super()`.
    pub is_object: bool,
    pub scratch: lean::Scratch,
}

/// `entry-exit` through the lean editor (`code::lean`). `Ok(false)` when the method
/// must go through [`patch`] instead (anything the lean editor does not handle, and
/// every skip, so that reasons come from one place).
pub(crate) fn patch_lean(
    class: &ClassFile<'_>,
    index: usize,
    id: u32,
    descriptor: &str,
    hooks: &mut Refs<'_>,
    patcher: &mut ClassPatcher<'_>,
    lc: &mut LeanClass,
) -> bool {
    let member = &class.methods[index];
    // `prepare` skips a method whose descriptor does not parse (its frames could not be read).
    if member.access & (access::ABSTRACT | access::NATIVE) != 0
        || !MethodDescriptor::is_valid(descriptor)
    {
        return false;
    }
    let cp = &class.constant_pool;
    let mut code_attr = None;
    for (k, a) in member.attributes.iter().enumerate() {
        if cp.utf8_bytes(a.name_index).ok() == Some(b"Code".as_slice()) {
            if code_attr.is_some() {
                return false;
            }
            code_attr = Some(k);
        }
    }
    let Some(code_k) = code_attr else {
        return false;
    };
    let a = &member.attributes[code_k];
    let Some(raw) = lean::RawCode::parse(a.data, a.data_offset()) else {
        return false;
    };
    let constructor =
        !lc.is_object && cp.utf8_bytes(member.name_index).ok() == Some(b"<init>".as_slice());
    // The same constants in the same order as `patch`, so both write the same pool.
    let snippets = (|| -> Result<_, SkipReason> {
        let enter = hooks.hook(patcher, Hook::Enter)?;
        let exit = hooks.hook(patcher, Hook::Exit)?;
        let unwind = hooks.hook(patcher, Hook::Unwind)?;
        let (push, n) = id_push(patcher, id)?;
        let throwable = hooks.throwable(patcher)?;
        Ok((enter, exit, unwind, push, n, throwable))
    })();
    let Ok((enter, exit, unwind, push, n, throwable)) = snippets else {
        return false;
    };
    let call = |buf: &mut [u8; 8], m: u16| {
        buf[..n].copy_from_slice(&push[..n]);
        buf[n] = INVOKESTATIC;
        buf[n + 1..n + 3].copy_from_slice(&m.to_be_bytes());
    };
    let (mut prologue, mut before_return, mut handler) = ([0u8; 8], [0u8; 8], [0u8; 8]);
    call(&mut prologue, enter);
    call(&mut before_return, exit);
    call(&mut handler, unwind);
    handler[n + 3] = ATHROW;
    let plan = lean::Plan {
        prologue: &prologue[..n + 3],
        before_return: &before_return[..n + 3],
        handler: &handler[..n + 4],
        return_peak: 1,
        min_stack: 2,
        throwable,
        constructor,
        frames_required: class.major >= 51,
        no_initial_locals: member.access & access::STATIC != 0 && descriptor.starts_with("()"),
    };
    let (out, pool) = patcher.method_writer();
    let start = out.len();
    out.put_u16(member.access);
    out.put_u16(member.name_index);
    out.put_u16(member.descriptor_index);
    out.put_u16(member.attributes.len() as u16);
    for (k, a) in member.attributes.iter().enumerate() {
        if k != code_k {
            out.extend_from_slice(&class.bytes[a.span()]);
            continue;
        }
        out.put_u16(a.name_index);
        let len_at = out.len();
        out.put_u32(0);
        if lean::rewrite(&raw, &plan, cp, pool, &mut lc.scratch, out).is_none() {
            out.truncate(start);
            return false;
        }
        let l = (out.len() - len_at - 4) as u32;
        out[len_at..len_at + 4].copy_from_slice(&l.to_be_bytes());
    }
    patcher.commit_method(index, start);
    true
}

/// Which counting discipline, if any.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counting {
    None,
    Default,
    Precise,
}

/// Patches method `index` of `class`.
pub(crate) fn patch(
    class: &ClassFile<'_>,
    index: usize,
    id: u32,
    hooks: &mut Refs<'_>,
    counting: Counting,
    patcher: &mut ClassPatcher<'_>,
) -> Result<(), SkipReason> {
    patch_inner(
        class,
        index,
        id,
        hooks,
        counting,
        Receivers::default(),
        patcher,
    )
}

/// The receiver probes of one method: at the call sites `sites` picks, and `this` at entry.
#[derive(Default)]
pub(crate) struct Receivers<'s, 'd> {
    pub sites: Option<&'s mut (dyn Selection + 'd)>,
    pub entry_site: Option<u32>,
}

/// `entry-exit` on method `index`, with the receiver probes `receivers`.
pub(crate) fn patch_with_sites(
    class: &ClassFile<'_>,
    index: usize,
    id: u32,
    hooks: &mut Refs<'_>,
    receivers: Receivers<'_, '_>,
    patcher: &mut ClassPatcher<'_>,
) -> Result<(), SkipReason> {
    patch_inner(class, index, id, hooks, Counting::None, receivers, patcher)
}

fn patch_inner(
    class: &ClassFile<'_>,
    index: usize,
    id: u32,
    hooks: &mut Refs<'_>,
    counting: Counting,
    receivers: Receivers<'_, '_>,
    patcher: &mut ClassPatcher<'_>,
) -> Result<(), SkipReason> {
    let Receivers {
        mut sites,
        entry_site,
    } = receivers;
    let mode = if counting == Counting::None {
        Mode::Plain
    } else {
        Mode::Frames
    };
    let m = prepare(class, &class.methods[index], mode)?;
    let n = m.insns.len();
    let mut edits = Edits::new(n);
    let declared = m.max_depth();
    let mut max_stack = declared;
    let counter = m.code.max_locals;
    let counted = counting != Counting::None;
    // With a context: the entry hook's result, kept in the local after the counter (the first
    // new local without a counter), and in the next one the node its exits return to.
    let context = hooks
        .hooks
        .blocks_context
        .then_some(counter.wrapping_add(u16::from(counted)));
    let saved = context.map(|slot| slot.wrapping_add(1));
    if (counted || context.is_some()) && counter >= u16::MAX - 2 {
        return Err(SkipReason::TooLarge);
    }
    // Locals the probes add before any spill slot.
    let added = u16::from(counted) + 2 * u16::from(context.is_some());
    // Without a counter, a context's exits pass 0 bytecodes.
    let passes_count = counted || context.is_some();
    let ProbeHooks {
        enter,
        exit,
        unwind,
        saved: saved_hook,
        object,
        args,
    } = probe_hooks(hooks, patcher, counted, context.is_some())?;
    // Locals past the method's own that receiver probes use to set arguments aside.
    let mut spill_slots = 0u16;

    // Prologue: runs once, jumps back to offset 0 skip it.
    let mut pro = Snippet::new();
    if counted {
        pro.op(ICONST_0, 0, 1).istore(counter);
    }
    push_id(&mut pro, patcher, id)?;
    match context {
        Some(slot) => {
            pro.invokestatic(enter, 1, 1).store(ASTORE, slot);
            pro.load(ALOAD, slot).invokestatic(saved_hook, 1, 1);
            pro.store(ISTORE, slot + 1);
        }
        None => {
            pro.invokestatic(enter, 1, 0);
        }
    }
    if let Some(site) = entry_site {
        let receiver = hooks.hook(patcher, Hook::Receiver)?;
        pro.load(ALOAD, 0);
        push_id(&mut pro, patcher, site)?;
        pro.invokestatic(receiver, 2, 0);
    }
    max_stack = max_stack.max(pro.peak);
    edits.after[0] = pro.code;

    if counted {
        for (leader, count) in blocks(&m, counting == Counting::Precise) {
            let mut s = Snippet::new();
            let mut left = count;
            while left > 0 {
                let step = left.min(i16::MAX as u32);
                s.iinc(counter, step as i16);
                left -= step;
            }
            edits.before[leader] = s.code;
        }
    }

    let (deferred, block_of) = match sites {
        Some(_) => (deferred_instructions(&m.insns), block_leaders(&m)),
        None => (Vec::new(), Vec::new()),
    };
    // The deferred site probed last, by its block's leader: later calls of the block sharing
    // its id need no probe of their own.
    let mut probed: Option<(u32, u32)> = None;
    for (i, insn) in m.insns.iter().enumerate() {
        if let Some(sel) = sites.as_deref_mut() {
            // Past the context's local, if any.
            let spill = m.code.max_locals + added;
            let is_deferred = deferred.get(i).copied().unwrap_or(false);
            let block = block_of.get(i).copied().unwrap_or(0);
            let at = SiteAt {
                call: insn,
                deferred: is_deferred,
                block,
                probed,
            };
            if let Some(probe) = site_probe(class, at, id, sel, spill, hooks, patcher)? {
                if let Some(site) = probe.deferred {
                    probed = Some((block, site));
                }
                if let Some(s) = probe.code {
                    max_stack = max_stack.max(stack_need(m.depth_before(i), s.peak)?);
                    spill_slots = spill_slots.max(probe.spilled);
                    edits.before[i].extend_from_slice(&s.code);
                }
            }
        }
        if is_return(insn.op) {
            let mut s = Snippet::new();
            if let Some(slot) = context {
                s.load(ALOAD, slot);
            }
            push_id(&mut s, patcher, id)?;
            if counted {
                s.load(ILOAD, counter);
            } else if passes_count {
                s.op(ICONST_0, 0, 1);
            }
            if let Some(slot) = saved {
                s.load(ILOAD, slot);
            }
            s.invokestatic(exit, args, 0);
            max_stack = max_stack.max(stack_need(m.depth_before(i), s.peak)?);
            let before = &mut edits.before[i];
            // A block counter at a return stays first, so the return is counted before it is reported.
            before.extend_from_slice(&s.code);
        }
    }

    // The handler starts with the exception on the stack, then rethrows it.
    let mut handler = Snippet::new();
    if let Some(slot) = context {
        handler.load(ALOAD, slot);
    }
    push_id(&mut handler, patcher, id)?;
    if counted {
        handler.load(ILOAD, counter);
    } else if passes_count {
        handler.op(ICONST_0, 0, 1);
    }
    if let Some(slot) = saved {
        handler.load(ILOAD, slot);
    }
    handler.invokestatic(unwind, args, 0).op(ATHROW, 0, 0);
    max_stack = max_stack.max(stack_need(1, handler.peak)?);
    edits.tail = handler.code;

    let throwable = hooks.throwable(patcher)?;
    let mut handler_locals = Vec::new();
    let mut frame_edits = FrameEdits::default();
    if counted {
        let fresh = frames::set_local_past_end(&mut handler_locals, counter as u32, VType::Integer);
        debug_assert!(fresh, "an empty frame has room for any slot");
        frame_edits.new_locals.push((counter, VType::Integer));
    }
    if let Some(slot) = context {
        let object = VType::Object(u32::from(object));
        let fresh = frames::set_local_past_end(&mut handler_locals, u32::from(slot), object);
        debug_assert!(
            fresh,
            "the context's slot follows the counter's or the method's"
        );
        frame_edits.new_locals.push((slot, object));
        let fresh =
            frames::set_local_past_end(&mut handler_locals, u32::from(slot) + 1, VType::Integer);
        debug_assert!(fresh, "the saved node's slot follows the context's");
        frame_edits.new_locals.push((slot + 1, VType::Integer));
    }
    frame_edits
        .tail_frames
        .push((0, handler_locals, vec![VType::Object(throwable as u32)]));
    let handlers = [NewHandler {
        ranges: m.handler_ranges(),
        handler_in_tail: 0,
        catch_type: 0,
    }];
    let max_locals = if context.is_some() {
        (m.code.max_locals + added)
            .checked_add(spill_slots)
            .ok_or(SkipReason::TooLarge)?
    } else if counted {
        counter + 1
    } else {
        m.code
            .max_locals
            .checked_add(spill_slots)
            .ok_or(SkipReason::TooLarge)?
    };
    m.finish(
        index,
        patcher,
        &CodeChanges {
            edits,
            handlers: &handlers,
            frame_edits,
            max_stack,
            max_locals,
        },
    )
}

/// A leaf's method and what its probe passes: `Some((method, bytecodes))` when `member` has
/// code and no call instruction (`invoke*`), so that a leaf
/// ([`Selection::leaf`](crate::Selection::leaf)) may take the entry-only probe. Under block
/// counting the method must also be one basic block: each call then runs (or, under `Default`,
/// counts) the same `bytecodes`; 0 without counting.
pub(crate) fn leaf<'c, 'a>(
    class: &'c ClassFile<'a>,
    member: &'c crate::class::Member<'a>,
    counting: Counting,
) -> Option<(Prepared<'c, 'a>, u32)> {
    if member.access & (access::ABSTRACT | access::NATIVE) != 0 {
        return None;
    }
    let m = prepare(class, member, Mode::Plain).ok()?;
    if m.insns
        .iter()
        .any(|i| Invoke::of(i.op).is_some() || i.op == INVOKEDYNAMIC)
    {
        return None;
    }
    let bytecodes = match counting {
        Counting::None => 0,
        Counting::Default | Counting::Precise => {
            match blocks(&m, counting == Counting::Precise).as_slice() {
                [(0, bytecodes)] => *bytecodes,
                _ => return None,
            }
        }
    };
    Some((m, bytecodes))
}

/// The probe of leaf `m` ([`leaf`]): at entry, `leafContext(id)` (or, counting, `leafBlocks(id,
/// bytecodes)`), which counts the call in the child of the thread's current context without
/// entering it (nothing can be called from there); nothing at the exits.
pub(crate) fn patch_leaf(
    m: &Prepared<'_, '_>,
    index: usize,
    id: u32,
    counting: Counting,
    bytecodes: u32,
    hooks: &mut Refs<'_>,
    patcher: &mut ClassPatcher<'_>,
) -> Result<(), SkipReason> {
    let mut pro = Snippet::new();
    push_id(&mut pro, patcher, id)?;
    if counting == Counting::None {
        let leaf = hooks.hook(patcher, Hook::LeafContext)?;
        pro.invokestatic(leaf, 1, 0);
    } else {
        let leaf = hooks.hook(patcher, Hook::LeafBlocks)?;
        push_id(&mut pro, patcher, bytecodes)?;
        pro.invokestatic(leaf, 2, 0);
    }
    m.finish_with_prologue(index, patcher, pro)
}

/// A call instruction offered to [`site_probe`].
struct SiteAt<'i> {
    call: &'i Insn,
    /// Not certainly run by an invocation (`deferred_instructions`).
    deferred: bool,
    /// Offset of its basic block's first instruction.
    block: u32,
    /// The deferred site probed last in this method, with its block.
    probed: Option<(u32, u32)>,
}

/// What [`site_probe`] decided for one call.
struct SiteProbe {
    /// The code to insert before the call (`None`: an earlier call of the block shares the
    /// deferred site, whose probe covers this call too).
    code: Option<Snippet>,
    /// Locals from `spill` on that the code uses.
    spilled: u16,
    /// The deferred site id, if the call has one.
    deferred: Option<u32>,
}

/// The site probe before a call, if the selection gives it a site:
/// - a deferred site: the id is passed to the `site` hook (nothing else: the selection knows
///   the call(s) behind it). Calls of one block sharing an id get one probe, before the first;
/// - a receiver site: the probe copies the receiver from under the arguments and passes it
///   with the site id to the `receiver` hook.
///
/// The stack is as before afterwards, so frames and branch targets need no change. Arguments
/// of up to 2 slots are stepped over with stack shuffles; longer ones are stored into fresh
/// locals from `spill` on and loaded back. Those locals are dead outside the probe (no frame
/// lies inside it), so no StackMapTable frame needs to mention them.
fn site_probe(
    class: &ClassFile<'_>,
    at: SiteAt<'_>,
    method_id: u32,
    selection: &mut (dyn Selection + '_),
    spill: u16,
    hooks: &mut Refs<'_>,
    patcher: &mut ClassPatcher<'_>,
) -> Result<Option<SiteProbe>, SkipReason> {
    let call = at.call;
    let Some(invoke) = Invoke::of(call.op) else {
        return Ok(None);
    };
    if !at.deferred && !invoke.is_virtual() {
        return Ok(None);
    }
    let Operand::Constant(index) = call.operand else {
        return Ok(None);
    };
    let cp = &class.constant_pool;
    let Ok(member) = cp.member_ref(index) else {
        return Ok(None);
    };
    let Some(descriptor) = MethodDescriptor::parse(&member.descriptor) else {
        return Ok(None);
    };
    let site = CallSite {
        invoke,
        class: &member.class,
        name: &member.name,
        descriptor: &member.descriptor,
        bci: call.offset,
        block: at.block,
    };
    if at.deferred {
        if let Some(site_id) = selection.deferred_site(method_id, &site) {
            if at.probed == Some((at.block, site_id)) {
                return Ok(Some(SiteProbe {
                    code: None,
                    spilled: 0,
                    deferred: Some(site_id),
                }));
            }
            let hook = hooks.hook(patcher, Hook::Site)?;
            let mut s = Snippet::new();
            push_id(&mut s, patcher, site_id)?;
            s.invokestatic(hook, 1, 0);
            return Ok(Some(SiteProbe {
                code: Some(s),
                spilled: 0,
                deferred: Some(site_id),
            }));
        }
    }
    if !invoke.is_virtual() {
        return Ok(None);
    }
    let arg_slots = descriptor.param_slots();
    if arg_slots > 2 && u32::from(spill) + u32::from(arg_slots) > u32::from(u16::MAX) {
        return Ok(None);
    }
    let Some(site_id) = selection.receiver_site(method_id, &site) else {
        return Ok(None);
    };
    let hook = hooks.hook(patcher, Hook::Receiver)?;
    let mut s = Snippet::new();
    let mut spilled = 0;
    match arg_slots {
        0 => {
            s.op(DUP, 1, 2);
        }
        // [recv, a] -> [recv, a, recv, a] -> [recv, a, recv]
        1 => {
            s.op(DUP2, 2, 4).op(POP, 1, 0);
        }
        // [recv, a, b] -> [a, b, recv, a, b] -> [a, b, recv] -> [recv, a, b, recv]
        2 => {
            s.op(DUP2_X1, 3, 5).op(POP2, 2, 0).op(DUP_X2, 3, 4);
        }
        _ => {
            let mut slots = Vec::with_capacity(descriptor.params.len());
            let mut next = spill;
            for p in &descriptor.params {
                slots.push((p.kind, next));
                next += p.kind.slots();
            }
            for &(kind, slot) in slots.iter().rev() {
                s.store(ISTORE + kind_offset(kind), slot);
            }
            s.op(DUP, 1, 2);
            spilled = arg_slots;
            push_id(&mut s, patcher, site_id)?;
            s.invokestatic(hook, 2, 0);
            for &(kind, slot) in &slots {
                s.load(ILOAD + kind_offset(kind), slot);
            }
            return Ok(Some(SiteProbe {
                code: Some(s),
                spilled,
                deferred: None,
            }));
        }
    }
    push_id(&mut s, patcher, site_id)?;
    s.invokestatic(hook, 2, 0);
    Ok(Some(SiteProbe {
        code: Some(s),
        spilled,
        deferred: None,
    }))
}

/// Offset of `kind`'s opcode from the `ILOAD`/`ISTORE` of its family.
fn kind_offset(kind: Kind) -> u8 {
    match kind {
        Kind::Int => 0,
        Kind::Long => 1,
        Kind::Float => 2,
        Kind::Double => 3,
        Kind::Reference => 4,
    }
}

/// For each instruction, the offset of the first instruction of its basic block (Default BBA).
fn block_leaders(m: &Prepared<'_, '_>) -> Vec<u32> {
    let mut out = Vec::with_capacity(m.insns.len());
    for (leader, count) in blocks(m, false) {
        let offset = m.insns[leader].offset;
        out.extend(std::iter::repeat_n(offset, count as usize));
    }
    out
}

/// Basic blocks as (leader instruction index, bytecodes in the block), per JP's
/// Default BBA (blocks end at control transfers) or Precise BBA (also after any
/// instruction that may throw).
pub(crate) fn blocks(m: &Prepared<'_, '_>, precise: bool) -> Vec<(usize, u32)> {
    let n = m.insns.len();
    let mut leader = vec![false; n];
    leader[0] = true;
    for (i, insn) in m.insns.iter().enumerate() {
        for t in insn.targets() {
            leader[m.index_of[t as usize] as usize] = true;
        }
        let ends = ends_flow(insn.op)
            || is_conditional(insn.op)
            || matches!(insn.op, JSR | JSR_W)
            || (precise && may_throw(insn.op));
        if ends && i + 1 < n {
            leader[i + 1] = true;
        }
    }
    for e in &m.code.exception_table {
        leader[m.index_of[e.handler as usize] as usize] = true;
    }
    let mut out = Vec::new();
    for (i, &leads) in leader.iter().enumerate() {
        if leads {
            out.push((i, 0));
        }
        out.last_mut().expect("instruction 0 leads a block").1 += 1;
    }
    out
}

/// The hooks one method's probes call, with what they need from the constant pool.
struct ProbeHooks {
    enter: u16,
    exit: u16,
    unwind: u16,
    /// `savedContext` (with a context), else 0.
    saved: u16,
    /// `java/lang/Object`, the context local's type (with a context), else 0.
    object: u16,
    /// Arguments of `exit` and `unwind`.
    args: i32,
}

/// The hooks of a method with block counters (`counted`) and/or a context local (`context`).
fn probe_hooks(
    hooks: &mut Refs<'_>,
    patcher: &mut ClassPatcher<'_>,
    counted: bool,
    context: bool,
) -> Result<ProbeHooks, SkipReason> {
    let enter = hooks.hook(
        patcher,
        if context {
            Hook::EnterContext
        } else {
            Hook::Enter
        },
    )?;
    let (exit, unwind) = match (counted, context) {
        (_, true) => (Hook::ExitContext, Hook::UnwindContext),
        (true, false) => (Hook::ExitBlocks, Hook::UnwindBlocks),
        (false, false) => (Hook::Exit, Hook::Unwind),
    };
    let (exit, unwind) = (hooks.hook(patcher, exit)?, hooks.hook(patcher, unwind)?);
    let (saved, object) = if context {
        let saved = hooks.hook(patcher, Hook::SavedContext)?;
        let object = patcher
            .pool
            .class("java/lang/Object")
            .map_err(|_| SkipReason::ConstantPoolFull)?;
        (saved, object)
    } else {
        (0, 0)
    };
    // The id; bytecodes (0 without a counter); with a context, the context and the saved node.
    let args = 1 + i32::from(counted || context) + 2 * i32::from(context);
    Ok(ProbeHooks {
        enter,
        exit,
        unwind,
        saved,
        object,
        args,
    })
}
