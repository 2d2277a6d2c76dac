//! A type-free dataflow over a method's code.
//!
//! It tracks only the stack depth and where uninitialised objects are (`this`
//! before `super()`, objects between `new` and their constructor call). That is all
//! the probes need: the stack depth at each insertion point (to recompute
//! `max_stack`), where `this` is initialised (an exit handler may not cover code
//! before), and which constructor call initialises which `new` (allocation hooks
//! go after it). No class hierarchy is needed, so nothing is loaded.

use std::collections::HashMap;

use crate::code::frames::{Frame, VType};
use crate::code::insn::{Insn, Operand};
use crate::code::opcodes::*;
use crate::code::ExceptionEntry;
use crate::constant_pool::ConstantPool;
use crate::descriptor::{field_slots_bytes, method_slots_bytes};

/// A slot's tag: what the analysis knows of the value in it.
type Tag = u32;
const OTHER: Tag = 0;
const UNINIT_THIS: Tag = 1;
/// `UNINIT_BASE + n`: the object created by the `new` at offset `n`.
const UNINIT_BASE: Tag = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    locals: Vec<Tag>,
    stack: Vec<Tag>,
}

/// The constructor call that initialises an object created by `new`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitSite {
    /// Offset of the `new`.
    pub new_offset: u32,
    /// True when, after the call, a reference to the new object is on top of the stack.
    pub result_on_top: bool,
}

/// What the analysis found.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Stack depth (slots) before each instruction, by instruction index; `None` if unreachable.
    pub depth: Vec<Option<u16>>,
    /// Before each instruction: does a local hold `uninitializedThis`? (`false` if unreachable.)
    pub this_uninit: Vec<bool>,
    /// Highest stack depth reached.
    pub max_depth: u16,
    /// For each `invokespecial <init>` (by instruction index) on an object from `new`.
    pub inits: HashMap<usize, InitSite>,
}

/// Why the analysis gave up. The method is then left unpatched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalysisError(pub String);

type Res<T> = Result<T, AnalysisError>;

fn err<T>(msg: impl Into<String>) -> Res<T> {
    Err(AnalysisError(msg.into()))
}

/// Inputs that describe the method.
pub struct MethodContext<'c, 'a> {
    /// The class's pool, for descriptors of invoked methods and fields.
    pub cp: &'c ConstantPool<'a>,
    /// Decoded instructions.
    pub insns: &'c [Insn],
    /// Instruction index of each code offset (`u32::MAX` inside an instruction).
    pub index_of: &'c [u32],
    /// The exception table.
    pub exception_table: &'c [ExceptionEntry],
    /// Decoded StackMapTable frames (empty for old classes).
    pub frames: &'c [Frame],
    /// `max_locals`.
    pub max_locals: u16,
    /// True for `<init>` of a class other than `java/lang/Object`.
    pub is_constructor: bool,
    /// Slots of `this` + parameters.
    pub param_slots: u16,
    /// Track uninitialised objects (constructors, allocation sites); otherwise only
    /// the stack depth is computed, which is all most methods need and much cheaper.
    pub track_objects: bool,
}

fn tag_of(t: VType) -> Tag {
    match t {
        VType::UninitializedThis => UNINIT_THIS,
        VType::Uninitialized(n) => UNINIT_BASE + n,
        _ => OTHER,
    }
}

fn frame_state(f: &Frame, max_locals: u16, track: bool) -> State {
    if !track {
        let depth = f.stack.iter().map(|t| t.slots() as usize).sum();
        return State {
            locals: Vec::new(),
            stack: vec![OTHER; depth],
        };
    }
    let mut locals = Vec::with_capacity(max_locals as usize);
    for &t in &f.locals {
        locals.push(tag_of(t));
        if t.slots() == 2 {
            locals.push(OTHER);
        }
    }
    locals.resize(locals.len().max(max_locals as usize), OTHER);
    let mut stack = Vec::new();
    for &t in &f.stack {
        stack.push(tag_of(t));
        if t.slots() == 2 {
            stack.push(OTHER);
        }
    }
    State { locals, stack }
}

/// Runs the dataflow.
pub fn analyse(m: &MethodContext<'_, '_>) -> Res<Analysis> {
    let n = m.insns.len();
    let mut block_start = vec![false; n];
    let idx = |off: u32| -> Res<usize> {
        match m.index_of.get(off as usize) {
            Some(&i) if i != u32::MAX => Ok(i as usize),
            _ => err(format!("offset {off} is not an instruction boundary")),
        }
    };
    block_start[0] = true;
    for (i, insn) in m.insns.iter().enumerate() {
        for t in insn.targets() {
            block_start[idx(t)?] = true;
        }
        if (ends_flow(insn.op) || is_conditional(insn.op) || matches!(insn.op, JSR | JSR_W))
            && i + 1 < n
        {
            block_start[i + 1] = true;
        }
    }
    for e in m.exception_table {
        block_start[idx(e.handler as u32)?] = true;
        idx(e.start as u32)?;
        if (e.end as usize) < m.index_of.len() {
            idx(e.end as u32)?;
        }
    }
    let mut states: Vec<Option<State>> = vec![None; n];
    let mut queued = vec![false; n];
    let mut work: Vec<usize> = Vec::new();

    let tracked_locals = if m.track_objects {
        m.max_locals as usize
    } else {
        0
    };
    let mut entry = State {
        locals: vec![OTHER; tracked_locals],
        stack: Vec::new(),
    };
    if m.param_slots > m.max_locals {
        return err("parameters need more locals than max_locals");
    }
    if m.is_constructor && m.track_objects {
        entry.locals[0] = UNINIT_THIS;
    }
    merge_into(&mut states, &mut queued, &mut work, 0, entry)?;
    for f in m.frames {
        let i = idx(f.offset)?;
        block_start[i] = true;
        merge_into(
            &mut states,
            &mut queued,
            &mut work,
            i,
            frame_state(f, m.max_locals, m.track_objects),
        )?;
    }

    if !m.track_objects {
        // Depth only: every handler starts with just the exception on the stack.
        for e in m.exception_table {
            let hs = State {
                locals: Vec::new(),
                stack: vec![OTHER],
            };
            merge_into(
                &mut states,
                &mut queued,
                &mut work,
                idx(e.handler as u32)?,
                hs,
            )?;
        }
    }
    let mut out = Analysis {
        depth: vec![None; n],
        this_uninit: vec![false; n],
        max_depth: 0,
        inits: HashMap::new(),
    };
    while let Some(b) = work.pop() {
        queued[b] = false;
        let mut st = states[b].clone().expect("queued blocks have a state");
        let mut i = b;
        loop {
            let insn = &m.insns[i];
            out.depth[i] = Some(st.stack.len() as u16);
            out.max_depth = out.max_depth.max(st.stack.len() as u16);
            out.this_uninit[i] = st.locals.contains(&UNINIT_THIS);
            for e in m.exception_table.iter().filter(|_| m.track_objects) {
                if (e.start as u32) <= insn.offset && insn.offset < e.end as u32 {
                    let h = idx(e.handler as u32)?;
                    let unchanged = states[h].as_ref().is_some_and(|cur| {
                        cur.locals
                            .iter()
                            .zip(&st.locals)
                            .all(|(a, b)| *a == OTHER || a == b)
                    });
                    if unchanged {
                        continue;
                    }
                    let hs = State {
                        locals: st.locals.clone(),
                        stack: vec![OTHER],
                    };
                    merge_into(
                        &mut states,
                        &mut queued,
                        &mut work,
                        idx(e.handler as u32)?,
                        hs,
                    )?;
                }
            }
            let before = if matches!(insn.op, JSR | JSR_W) {
                Some(st.clone())
            } else {
                None
            };
            step(m, insn, &mut st, &mut out)?;
            out.max_depth = out.max_depth.max(st.stack.len() as u16);
            for t in insn.targets() {
                merge_into(&mut states, &mut queued, &mut work, idx(t)?, st.clone())?;
            }
            if ends_flow(insn.op) {
                break;
            }
            if i + 1 >= n {
                return err("code falls off its end");
            }
            let next_state = match before {
                // After a subroutine returns, the stack is as before the jsr.
                Some(b) => b,
                None => st,
            };
            if block_start[i + 1] {
                merge_into(&mut states, &mut queued, &mut work, i + 1, next_state)?;
                break;
            }
            st = next_state;
            i += 1;
        }
    }
    Ok(out)
}

fn merge_into(
    states: &mut [Option<State>],
    queued: &mut [bool],
    work: &mut Vec<usize>,
    at: usize,
    incoming: State,
) -> Res<()> {
    let changed = match &mut states[at] {
        slot @ None => {
            *slot = Some(incoming);
            true
        }
        Some(cur) => {
            if cur.stack.len() != incoming.stack.len() {
                return err(format!(
                    "stack depth {} and {} meet at instruction {at}",
                    cur.stack.len(),
                    incoming.stack.len()
                ));
            }
            let mut changed = false;
            for (a, b) in cur
                .locals
                .iter_mut()
                .zip(&incoming.locals)
                .chain(cur.stack.iter_mut().zip(&incoming.stack))
            {
                if *a != *b && *a != OTHER {
                    *a = OTHER;
                    changed = true;
                }
            }
            changed
        }
    };
    if changed && !queued[at] {
        queued[at] = true;
        work.push(at);
    }
    Ok(())
}

fn pop(st: &mut State, n: usize) -> Res<()> {
    if st.stack.len() < n {
        return err("operand stack underflow");
    }
    st.stack.truncate(st.stack.len() - n);
    Ok(())
}

fn push(st: &mut State, n: usize) {
    st.stack.extend(std::iter::repeat_n(OTHER, n));
}

fn set_local(st: &mut State, i: u16, tag: Tag) -> Res<()> {
    if st.locals.is_empty() {
        return Ok(()); // not tracking objects
    }
    match st.locals.get_mut(i as usize) {
        Some(l) => {
            *l = tag;
            Ok(())
        }
        None => err(format!("local {i} is past max_locals")),
    }
}

fn step(m: &MethodContext<'_, '_>, insn: &Insn, st: &mut State, out: &mut Analysis) -> Res<()> {
    let op = insn.op;
    let cp_desc = |i: u16| {
        m.cp.ref_descriptor_bytes(i)
            .ok_or_else(|| AnalysisError(format!("constant {i} is not a member reference")))
    };
    let local = || match insn.operand {
        Operand::Local(l) => l,
        _ => 0,
    };
    let (p, q): (usize, usize) = match op {
        NOP | IINC | GOTO | GOTO_W | RET | RETURN => (0, 0),
        ACONST_NULL..=0x08 | 0x0b..=0x0d | BIPUSH | SIPUSH | LDC | LDC_W => (0, 1),
        0x09 | 0x0a | 0x0e | 0x0f | LDC2_W => (0, 2),
        ILOAD | FLOAD | 0x1a..=0x1d | 0x22..=0x25 => (0, 1),
        ALOAD | 0x2a..=0x2d => {
            // Untracked locals read as plain values.
            let t = match st.locals.get(local() as usize) {
                Some(&t) => t,
                None if st.locals.is_empty() => OTHER,
                None => return err("aload past max_locals"),
            };
            st.stack.push(t);
            (0, 0)
        }
        LLOAD | DLOAD | 0x1e..=0x21 | 0x26..=0x29 => (0, 2),
        0x2f | 0x31 => (2, 2),
        IALOAD..=SALOAD => (2, 1),
        ISTORE | FSTORE | 0x3b..=0x3e | 0x43..=0x46 => {
            pop(st, 1)?;
            set_local(st, local(), OTHER)?;
            (0, 0)
        }
        ASTORE | 0x4b..=0x4e => {
            let t = *st
                .stack
                .last()
                .ok_or_else(|| AnalysisError("operand stack underflow".into()))?;
            pop(st, 1)?;
            set_local(st, local(), t)?;
            (0, 0)
        }
        LSTORE | DSTORE | 0x3f..=0x42 | 0x47..=0x4a => {
            pop(st, 2)?;
            set_local(st, local(), OTHER)?;
            set_local(st, local() + 1, OTHER)?;
            (0, 0)
        }
        0x50 | 0x52 => (4, 0),
        IASTORE..=SASTORE => (3, 0),
        POP => (1, 0),
        POP2 => (2, 0),
        DUP..=SWAP => {
            let need = [1, 2, 3, 2, 3, 4, 2][(op - DUP) as usize];
            if st.stack.len() < need {
                return err("operand stack underflow");
            }
            let len = st.stack.len();
            let top: Vec<Tag> = st.stack[len - need..].to_vec();
            st.stack.truncate(len - need);
            let rebuilt: Vec<Tag> = match op {
                DUP => vec![top[0], top[0]],
                DUP_X1 => vec![top[1], top[0], top[1]],
                DUP_X2 => vec![top[2], top[0], top[1], top[2]],
                DUP2 => vec![top[0], top[1], top[0], top[1]],
                DUP2_X1 => vec![top[1], top[2], top[0], top[1], top[2]],
                DUP2_X2 => vec![top[2], top[3], top[0], top[1], top[2], top[3]],
                _ => vec![top[1], top[0]],
            };
            st.stack.extend(rebuilt);
            (0, 0)
        }
        0x60..=0x73 => match (op - 0x60) % 4 {
            1 | 3 => (4, 2),
            _ => (2, 1),
        },
        0x74..=0x77 => match op {
            0x75 | 0x77 => (2, 2),
            _ => (1, 1),
        },
        0x78 | 0x7a | 0x7c => (2, 1),
        0x79 | 0x7b | 0x7d => (3, 2),
        0x7e | 0x80 | 0x82 => (2, 1),
        0x7f | 0x81 | 0x83 => (4, 2),
        0x85..=0x93 => [
            (1, 2),
            (1, 1),
            (1, 2),
            (2, 1),
            (2, 1),
            (2, 2),
            (1, 1),
            (1, 2),
            (1, 2),
            (2, 1),
            (2, 2),
            (2, 1),
            (1, 1),
            (1, 1),
            (1, 1),
        ][(op - 0x85) as usize],
        0x94 => (4, 1),
        0x95 | 0x96 => (2, 1),
        0x97 | 0x98 => (4, 1),
        0x99..=0x9e | IFNULL | IFNONNULL | TABLESWITCH | LOOKUPSWITCH => (1, 0),
        0x9f..=IF_ACMPNE => (2, 0),
        JSR | JSR_W => (0, 1),
        IRETURN | 0xae | 0xb0 | ATHROW | MONITORENTER | MONITOREXIT => (1, 0),
        0xad | 0xaf => (2, 0),
        GETSTATIC | PUTSTATIC | GETFIELD | PUTFIELD => {
            let Operand::Constant(i) = insn.operand else {
                unreachable!()
            };
            let s = field_slots_bytes(cp_desc(i)?)
                .ok_or_else(|| AnalysisError("bad field descriptor".into()))?
                as usize;
            match op {
                GETSTATIC => (0, s),
                PUTSTATIC => (s, 0),
                GETFIELD => (1, s),
                _ => (1 + s, 0),
            }
        }
        INVOKEVIRTUAL..=INVOKEDYNAMIC => {
            let Operand::Constant(i) = insn.operand else {
                unreachable!()
            };
            let d = cp_desc(i)?;
            let (args, ret) = method_slots_bytes(d)
                .ok_or_else(|| AnalysisError("bad method descriptor".into()))?;
            let args = args as usize;
            let recv = usize::from(!matches!(op, INVOKESTATIC | INVOKEDYNAMIC));
            if op == INVOKESPECIAL && m.track_objects {
                let name =
                    m.cp.member_ref(i)
                        .map_err(|e| AnalysisError(e.message().to_owned()))?
                        .name;
                if name == "<init>" {
                    let len = st.stack.len();
                    if len < args + 1 {
                        return err("operand stack underflow");
                    }
                    let receiver = st.stack[len - args - 1];
                    st.stack.truncate(len - args - 1);
                    if receiver >= UNINIT_BASE {
                        let index = m.index_of[insn.offset as usize] as usize;
                        let result_on_top = st.stack.last() == Some(&receiver);
                        out.inits.insert(
                            index,
                            InitSite {
                                new_offset: receiver - UNINIT_BASE,
                                result_on_top,
                            },
                        );
                    }
                    if receiver != OTHER {
                        for t in st.locals.iter_mut().chain(st.stack.iter_mut()) {
                            if *t == receiver {
                                *t = OTHER;
                            }
                        }
                    }
                    return Ok(());
                }
            }
            (args + recv, ret as usize)
        }
        NEW => {
            st.stack.push(if m.track_objects {
                UNINIT_BASE + insn.offset
            } else {
                OTHER
            });
            (0, 0)
        }
        NEWARRAY | ANEWARRAY | ARRAYLENGTH | CHECKCAST | INSTANCEOF => (1, 1),
        MULTIANEWARRAY => {
            let Operand::MultiNewArray { dims, .. } = insn.operand else {
                unreachable!()
            };
            if dims == 0 {
                return err("multianewarray with 0 dimensions");
            }
            (dims as usize, 1)
        }
        _ => return err(format!("unexpected opcode {}", name(op))),
    };
    pop(st, p)?;
    push(st, q);
    Ok(())
}
