//! Verification types at an arbitrary instruction, derived by simulating forward
//! from the nearest StackMapTable frame before it.
//!
//! Needed only when the editor widens a conditional jump (`ifeq far` becomes
//! `ifne next; goto_w far`): `next` becomes a branch target and needs a frame.
//! Between two frames code is straight-line (every branch target has a frame), so a
//! forward simulation needs no merging and therefore no class hierarchy.

use std::collections::HashMap;

use crate::code::frames::{Frame, VType, PARAM_BASE};
use crate::code::insn::{Insn, Operand};
use crate::code::opcodes::*;
use crate::constant_pool::{Constant, ConstantPool};
use crate::descriptor::{parse_field_type, FieldType, Kind, MethodDescriptor};
use crate::patch::{PoolAppender, PoolFull};

/// Why no frame could be derived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimError(pub String);

impl From<PoolFull> for SimError {
    fn from(_: PoolFull) -> Self {
        SimError("constant pool full".into())
    }
}

type Res<T> = Result<T, SimError>;

fn fail<T>(m: impl Into<String>) -> Res<T> {
    Err(SimError(m.into()))
}

/// The simulator's view of one method.
pub struct TypeSim<'s, 'a> {
    /// The class's pool.
    pub cp: &'s ConstantPool<'a>,
    /// `this_class`.
    pub this_class: u16,
    /// Decoded instructions.
    pub insns: &'s [Insn],
    /// Original frames, sorted.
    pub frames: &'s [Frame],
    /// The implicit initial frame's locals.
    pub initial_locals: &'s [VType],
    /// Internal names of reference parameters (for `PARAM_BASE + n` placeholders).
    pub param_class_names: &'s [Option<&'s str>],
    /// `max_locals`.
    pub max_locals: u16,
}

struct State {
    locals: Vec<VType>,
    stack: Vec<VType>,
}

fn to_slots(types: &[VType], len: usize) -> Vec<VType> {
    let mut out = Vec::with_capacity(len.max(types.len() * 2));
    for &t in types {
        out.push(t);
        if t.slots() == 2 {
            out.push(VType::Top);
        }
    }
    if out.len() < len {
        out.resize(len, VType::Top);
    }
    out
}

fn to_entries(slots: &[VType], trim: bool) -> Vec<VType> {
    let mut out = Vec::with_capacity(slots.len());
    let mut i = 0;
    while i < slots.len() {
        out.push(slots[i]);
        i += slots[i].slots() as usize;
    }
    if trim {
        while out.last() == Some(&VType::Top) {
            out.pop();
        }
    }
    out
}

impl TypeSim<'_, '_> {
    /// The frame (entries form, locals trimmed) before instruction `target`.
    pub fn frame_before(
        &self,
        target: usize,
        pool: &mut PoolAppender<'_>,
    ) -> Res<(Vec<VType>, Vec<VType>)> {
        let offset = self.insns[target].offset;
        let start = self.frames.iter().rev().find(|f| f.offset <= offset);
        let (mut st, from) = match start {
            Some(f) => (
                State {
                    locals: to_slots(&f.locals, self.max_locals as usize),
                    stack: to_slots(&f.stack, 0),
                },
                f.offset,
            ),
            None => (
                State {
                    locals: to_slots(self.initial_locals, self.max_locals as usize),
                    stack: Vec::new(),
                },
                0,
            ),
        };
        let mut names: HashMap<u32, String> = HashMap::new();
        for insn in self
            .insns
            .iter()
            .filter(|i| i.offset >= from && i.offset < offset)
        {
            if ends_flow(insn.op) {
                return fail("an unconditional jump lies between the frame and the target");
            }
            self.step(insn, &mut st, pool, &mut names)?;
        }
        Ok((to_entries(&st.locals, true), to_entries(&st.stack, false)))
    }

    fn class_name(&self, t: VType, names: &HashMap<u32, String>) -> Res<String> {
        match t {
            VType::Object(i) if i >= PARAM_BASE => self
                .param_class_names
                .get((i - PARAM_BASE) as usize)
                .copied()
                .flatten()
                .map(str::to_owned)
                .ok_or_else(|| SimError("bad parameter placeholder".into())),
            VType::Object(i) => match names.get(&i) {
                Some(n) => Ok(n.clone()),
                None => self
                    .cp
                    .class_name(i as u16)
                    .map(|c| c.into_owned())
                    .map_err(|e| SimError(e.message().into())),
            },
            _ => fail("not an object type"),
        }
    }

    fn object(
        &self,
        name: &str,
        pool: &mut PoolAppender<'_>,
        names: &mut HashMap<u32, String>,
    ) -> Res<VType> {
        let i = pool.class(name)? as u32;
        names.insert(i, name.to_owned());
        Ok(VType::Object(i))
    }

    fn field_type(
        &self,
        t: FieldType<'_>,
        pool: &mut PoolAppender<'_>,
        names: &mut HashMap<u32, String>,
    ) -> Res<Vec<VType>> {
        Ok(match t.kind {
            Kind::Int => vec![VType::Integer],
            Kind::Float => vec![VType::Float],
            Kind::Long => vec![VType::Long, VType::Top],
            Kind::Double => vec![VType::Double, VType::Top],
            Kind::Reference => {
                vec![self.object(t.class_name().expect("reference"), pool, names)?]
            }
        })
    }

    fn step(
        &self,
        insn: &Insn,
        st: &mut State,
        pool: &mut PoolAppender<'_>,
        names: &mut HashMap<u32, String>,
    ) -> Res<()> {
        use VType::*;
        let op = insn.op;
        let pop = |st: &mut State, n: usize| -> Res<Vec<VType>> {
            if st.stack.len() < n {
                return fail("operand stack underflow");
            }
            Ok(st.stack.split_off(st.stack.len() - n))
        };
        let local = match insn.operand {
            Operand::Local(l) => l as usize,
            _ => 0,
        };
        let cpi = match insn.operand {
            Operand::Constant(c) => c,
            Operand::MultiNewArray { class, .. } => class,
            _ => 0,
        };
        let push: Vec<VType> = match op {
            NOP | IINC | GOTO | GOTO_W => vec![],
            ACONST_NULL => vec![Null],
            ICONST_M1..=ICONST_5 | BIPUSH | SIPUSH => vec![Integer],
            0x09 | 0x0a => vec![Long, Top],
            0x0b..=0x0d => vec![Float],
            0x0e | 0x0f => vec![Double, Top],
            LDC | LDC_W | LDC2_W => {
                match self.cp.get(cpi).map_err(|e| SimError(e.message().into()))? {
                    Constant::Integer(_) => vec![Integer],
                    Constant::Float(_) => vec![Float],
                    Constant::Long(_) => vec![Long, Top],
                    Constant::Double(_) => vec![Double, Top],
                    Constant::String { .. } => {
                        vec![self.object("java/lang/String", pool, names)?]
                    }
                    Constant::Class { .. } => vec![self.object("java/lang/Class", pool, names)?],
                    Constant::MethodType { .. } => {
                        vec![self.object("java/lang/invoke/MethodType", pool, names)?]
                    }
                    Constant::MethodHandle { .. } => {
                        vec![self.object("java/lang/invoke/MethodHandle", pool, names)?]
                    }
                    Constant::Dynamic { .. } => {
                        let d = self
                            .cp
                            .descriptor_of(cpi)
                            .map_err(|e| SimError(e.message().into()))?;
                        let (t, _) = parse_field_type(&d)
                            .ok_or_else(|| SimError("bad constant descriptor".into()))?;
                        self.field_type(t, pool, names)?
                    }
                    _ => return fail("ldc of an unloadable constant"),
                }
            }
            ILOAD | 0x1a..=0x1d => vec![Integer],
            FLOAD | 0x22..=0x25 => vec![Float],
            LLOAD | 0x1e..=0x21 => vec![Long, Top],
            DLOAD | 0x26..=0x29 => vec![Double, Top],
            ALOAD | 0x2a..=0x2d => vec![*st
                .locals
                .get(local)
                .ok_or_else(|| SimError("aload past max_locals".into()))?],
            IALOAD | 0x33..=SALOAD => {
                pop(st, 2)?;
                vec![Integer]
            }
            0x2f => {
                pop(st, 2)?;
                vec![Long, Top]
            }
            0x30 => {
                pop(st, 2)?;
                vec![Float]
            }
            0x31 => {
                pop(st, 2)?;
                vec![Double, Top]
            }
            0x32 => {
                let arr = pop(st, 2)?[0];
                if arr == Null {
                    vec![Null]
                } else {
                    let name = self.class_name(arr, names)?;
                    let comp = name
                        .strip_prefix('[')
                        .ok_or_else(|| SimError("aaload from a non-array".into()))?;
                    let (t, _) =
                        parse_field_type(comp).ok_or_else(|| SimError("bad array type".into()))?;
                    self.field_type(t, pool, names)?
                }
            }
            ISTORE..=ASTORE | ISTORE_0..=ASTORE_3 => {
                let kind = if op <= ASTORE {
                    op - ISTORE
                } else {
                    (op - ISTORE_0) / 4
                };
                let wide = kind == 1 || kind == 3;
                let v = pop(st, if wide { 2 } else { 1 })?;
                let need = local + if wide { 2 } else { 1 };
                if need > st.locals.len() {
                    return fail("store past max_locals");
                }
                if local > 0 && st.locals[local - 1].slots() == 2 {
                    st.locals[local - 1] = Top;
                }
                st.locals[local] = v[0];
                if wide {
                    st.locals[local + 1] = Top;
                }
                vec![]
            }
            IASTORE..=SASTORE => {
                pop(st, if op == 0x50 || op == 0x52 { 4 } else { 3 })?;
                vec![]
            }
            POP => {
                pop(st, 1)?;
                vec![]
            }
            POP2 => {
                pop(st, 2)?;
                vec![]
            }
            DUP..=SWAP => {
                let need = [1, 2, 3, 2, 3, 4, 2][(op - DUP) as usize];
                let t = pop(st, need)?;
                match op {
                    DUP => vec![t[0], t[0]],
                    DUP_X1 => vec![t[1], t[0], t[1]],
                    DUP_X2 => vec![t[2], t[0], t[1], t[2]],
                    DUP2 => vec![t[0], t[1], t[0], t[1]],
                    DUP2_X1 => vec![t[1], t[2], t[0], t[1], t[2]],
                    DUP2_X2 => vec![t[2], t[3], t[0], t[1], t[2], t[3]],
                    _ => vec![t[1], t[0]],
                }
            }
            0x60..=0x83 => {
                // add/sub/mul/div/rem, neg, shifts, and/or/xor: the result has the operand kind.
                let (p, k) = match op {
                    0x60..=0x73 => ([2, 4, 2, 4][((op - 0x60) % 4) as usize], (op - 0x60) % 4),
                    0x74..=0x77 => ([1, 2, 1, 2][(op - 0x74) as usize], op - 0x74),
                    0x78 | 0x7a | 0x7c => (2, 0),
                    0x79 | 0x7b | 0x7d => (3, 1),
                    0x7e | 0x80 | 0x82 => (2, 0),
                    _ => (4, 1),
                };
                pop(st, p)?;
                match k {
                    0 => vec![Integer],
                    1 => vec![Long, Top],
                    2 => vec![Float],
                    _ => vec![Double, Top],
                }
            }
            0x85..=0x93 => {
                let from = [1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 1, 1, 1][(op - 0x85) as usize];
                pop(st, from)?;
                match op {
                    0x85 | 0x8c | 0x8f => vec![Long, Top],
                    0x86 | 0x89 | 0x90 => vec![Float],
                    0x87 | 0x8a | 0x8d => vec![Double, Top],
                    _ => vec![Integer],
                }
            }
            0x94..=0x98 => {
                pop(st, if op == 0x94 || op >= 0x97 { 4 } else { 2 })?;
                vec![Integer]
            }
            0x99..=0x9e | IFNULL | IFNONNULL => {
                pop(st, 1)?;
                vec![]
            }
            0x9f..=IF_ACMPNE => {
                pop(st, 2)?;
                vec![]
            }
            GETSTATIC | GETFIELD => {
                if op == GETFIELD {
                    pop(st, 1)?;
                }
                let d = self
                    .cp
                    .descriptor_of(cpi)
                    .map_err(|e| SimError(e.message().into()))?;
                let (t, _) =
                    parse_field_type(&d).ok_or_else(|| SimError("bad field descriptor".into()))?;
                self.field_type(t, pool, names)?
            }
            PUTSTATIC | PUTFIELD => {
                let d = self
                    .cp
                    .descriptor_of(cpi)
                    .map_err(|e| SimError(e.message().into()))?;
                let (t, _) =
                    parse_field_type(&d).ok_or_else(|| SimError("bad field descriptor".into()))?;
                pop(st, t.kind.slots() as usize + usize::from(op == PUTFIELD))?;
                vec![]
            }
            INVOKEVIRTUAL..=INVOKEDYNAMIC => {
                let d = self
                    .cp
                    .descriptor_of(cpi)
                    .map_err(|e| SimError(e.message().into()))?;
                let md = MethodDescriptor::parse(&d)
                    .ok_or_else(|| SimError("bad method descriptor".into()))?;
                pop(st, md.param_slots() as usize)?;
                if !matches!(op, INVOKESTATIC | INVOKEDYNAMIC) {
                    let recv = pop(st, 1)?[0];
                    let is_init = op == INVOKESPECIAL
                        && self
                            .cp
                            .member_ref(cpi)
                            .map(|m| m.name == "<init>")
                            .unwrap_or(false);
                    if is_init {
                        let init = match recv {
                            UninitializedThis => Object(self.this_class as u32),
                            Uninitialized(at) => {
                                let new = self
                                    .insns
                                    .iter()
                                    .find(|i| i.offset == at)
                                    .map(|i| &i.operand);
                                match new {
                                    Some(Operand::Constant(c)) => Object(*c as u32),
                                    _ => return fail("Uninitialized does not name a new"),
                                }
                            }
                            _ => return fail("<init> on an initialised object"),
                        };
                        for t in st.locals.iter_mut().chain(st.stack.iter_mut()) {
                            if *t == recv {
                                *t = init;
                            }
                        }
                    }
                }
                match md.ret {
                    Some(t) => self.field_type(t, pool, names)?,
                    None => vec![],
                }
            }
            NEW => vec![Uninitialized(insn.offset)],
            NEWARRAY => {
                pop(st, 1)?;
                let Operand::NewArray(t) = insn.operand else {
                    unreachable!()
                };
                let name = ["[Z", "[C", "[F", "[D", "[B", "[S", "[I", "[J"]
                    .get((t as usize).wrapping_sub(4))
                    .ok_or_else(|| SimError("bad newarray type".into()))?;
                vec![self.object(name, pool, names)?]
            }
            ANEWARRAY => {
                pop(st, 1)?;
                let e = self
                    .cp
                    .class_name(cpi)
                    .map_err(|e| SimError(e.message().into()))?;
                let name = if e.starts_with('[') {
                    format!("[{e}")
                } else {
                    format!("[L{e};")
                };
                vec![self.object(&name, pool, names)?]
            }
            ARRAYLENGTH | INSTANCEOF => {
                pop(st, 1)?;
                vec![Integer]
            }
            CHECKCAST => {
                pop(st, 1)?;
                vec![Object(cpi as u32)]
            }
            MONITORENTER | MONITOREXIT => {
                pop(st, 1)?;
                vec![]
            }
            MULTIANEWARRAY => {
                let Operand::MultiNewArray { dims, .. } = insn.operand else {
                    unreachable!()
                };
                pop(st, dims as usize)?;
                vec![Object(cpi as u32)]
            }
            _ => return fail(format!("cannot simulate {}", name(op))),
        };
        st.stack.extend(push);
        Ok(())
    }
}
