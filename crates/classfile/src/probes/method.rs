//! What every probe needs to know about a method before editing it.

use crate::class::{access, ClassFile, Member};
use crate::code::analysis::{analyse, Analysis, MethodContext};
pub(crate) use crate::code::edit::CodeChanges;
use crate::code::edit::{self, EditError, Edits, FrameEdits, Rewrite};
use crate::code::frames::{self, Frame, VType};
use crate::code::insn::{decode_all, Insn};
use crate::code::CodeAttribute;
use crate::descriptor::MethodDescriptor;
use crate::patch::{rebuild_method, ClassPatcher};
use crate::probes::SkipReason;

/// A method decoded and analysed, ready for a probe to describe its edits.
pub(crate) struct Prepared<'c, 'a> {
    pub class: &'c ClassFile<'a>,
    pub member: &'c Member<'a>,
    pub code: CodeAttribute<'a>,
    pub insns: Vec<Insn>,
    pub index_of: Vec<u32>,
    /// Decoded frames, when the mode asked for them (`None` also when there is no StackMapTable).
    pub frames: Option<Vec<Frame>>,
    /// The StackMapTable attribute, if any.
    pub smt: Option<crate::RawAttribute<'a>>,
    pub initial_locals: Vec<VType>,
    pub param_class_names: Vec<Option<String>>,
    /// The dataflow, when the mode asked for it (always for constructors).
    pub analysis: Option<Analysis>,
    pub is_constructor: bool,
}

/// How much a probe needs to know about a method beyond its instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Mode {
    /// Instructions only: frames are relocated as they stream by.
    Plain,
    /// Frames decoded (the probe changes their locals).
    Frames,
    /// Frames decoded and the object-tracking dataflow run.
    Objects,
}

impl From<EditError> for SkipReason {
    fn from(e: EditError) -> Self {
        match e {
            EditError::TooLarge => SkipReason::TooLarge,
            EditError::JumpOverflow => SkipReason::JumpOverflow,
            EditError::PoolFull => SkipReason::ConstantPoolFull,
            EditError::Malformed(m) => SkipReason::Malformed(m),
        }
    }
}

fn malformed(e: impl std::fmt::Display) -> SkipReason {
    SkipReason::Malformed(e.to_string())
}

/// Decodes and analyses `member`'s code. Fails for abstract and native methods.
pub(crate) fn prepare<'c, 'a>(
    class: &'c ClassFile<'a>,
    member: &'c Member<'a>,
    mode: Mode,
) -> Result<Prepared<'c, 'a>, SkipReason> {
    let cp = &class.constant_pool;
    if member.access & access::ABSTRACT != 0 {
        return Err(SkipReason::Abstract);
    }
    if member.access & access::NATIVE != 0 {
        return Err(SkipReason::Native);
    }
    let raw = member.attribute(cp, "Code").ok_or(SkipReason::NoCode)?;
    let code = CodeAttribute::parse(&raw).map_err(malformed)?;
    let insns = decode_all(code.code, code.code_offset).map_err(malformed)?;
    let mut index_of = vec![u32::MAX; code.code.len()];
    for (i, insn) in insns.iter().enumerate() {
        index_of[insn.offset as usize] = i as u32;
    }
    check_offsets(&code, &insns, &index_of)?;
    let name = member.name(cp).map_err(malformed)?;
    let desc_text = member.descriptor(cp).map_err(malformed)?;
    let desc = MethodDescriptor::parse(&desc_text)
        .ok_or_else(|| malformed(format!("bad descriptor {desc_text}")))?;
    let is_static = member.access & access::STATIC != 0;
    let class_name = class.name().map_err(malformed)?;
    let is_constructor = name == "<init>" && class_name != "java/lang/Object";
    let initial_locals = frames::initial_locals(class.this_class, is_static, is_constructor, &desc);
    let param_class_names = desc
        .params
        .iter()
        .map(|p| p.class_name().map(str::to_owned))
        .collect();
    // Constructors always need the dataflow: exit handlers must not cover code before super().
    let mode = if is_constructor { Mode::Objects } else { mode };
    let smt = member_code_attr(&code, class, "StackMapTable");
    let frames = match smt {
        Some(smt) if mode >= Mode::Frames => Some(
            frames::decode(
                smt.data,
                smt.data_offset(),
                &initial_locals,
                code.code.len() as u32,
            )
            .map_err(malformed)?,
        ),
        _ => None,
    };
    let param_slots = desc.param_slots() + u16::from(!is_static);
    let analysis = if mode == Mode::Objects {
        let ctx = MethodContext {
            cp,
            insns: &insns,
            index_of: &index_of,
            exception_table: &code.exception_table,
            frames: frames.as_deref().unwrap_or(&[]),
            max_locals: code.max_locals,
            is_constructor,
            param_slots,
            track_objects: true,
        };
        Some(analyse(&ctx).map_err(|e| SkipReason::Malformed(e.0))?)
    } else {
        None
    };
    Ok(Prepared {
        class,
        member,
        code,
        insns,
        index_of,
        frames,
        smt,
        initial_locals,
        param_class_names,
        analysis,
        is_constructor,
    })
}

/// Every jump target and exception-table offset must start an instruction (the
/// editor maps offsets through instruction indices). The JVM rejects such code too;
/// here it becomes a skip reason instead of an index out of bounds.
fn check_offsets(
    code: &CodeAttribute<'_>,
    insns: &[Insn],
    index_of: &[u32],
) -> Result<(), SkipReason> {
    let is_start = |o: u32| index_of.get(o as usize).is_some_and(|&i| i != u32::MAX);
    for insn in insns {
        if let Some(t) = insn.targets().find(|&t| !is_start(t)) {
            return Err(malformed(format!(
                "jump at {} to {t}, inside an instruction",
                insn.offset
            )));
        }
    }
    for e in &code.exception_table {
        let end_ok = e.end as usize == code.code.len() || is_start(e.end as u32);
        if !is_start(e.start as u32) || !is_start(e.handler as u32) || !end_ok {
            return Err(malformed(format!(
                "exception range {}..{} -> {} does not fall on instruction boundaries",
                e.start, e.end, e.handler
            )));
        }
    }
    Ok(())
}

/// `depth + peak` as a `max_stack`, or `TooLarge` past 65535.
pub(crate) fn stack_need(depth: u16, peak: u16) -> Result<u16, SkipReason> {
    depth.checked_add(peak).ok_or(SkipReason::TooLarge)
}

fn member_code_attr<'a>(
    code: &CodeAttribute<'a>,
    class: &ClassFile<'a>,
    name: &str,
) -> Option<crate::RawAttribute<'a>> {
    crate::class::find_attribute(&code.attributes, &class.constant_pool, name)
}

impl Prepared<'_, '_> {
    /// Stack depth before instruction `i` (`n` = end), or the declared maximum when unknown.
    pub fn depth_before(&self, i: usize) -> u16 {
        self.analysis
            .as_ref()
            .and_then(|a| a.depth.get(i).copied().flatten())
            .unwrap_or(self.code.max_stack)
    }

    /// The highest stack depth the code reaches: computed when analysed, else as declared.
    pub fn max_depth(&self) -> u16 {
        let computed = self.analysis.as_ref().map_or(0, |a| a.max_depth);
        self.code.max_stack.max(computed)
    }

    /// Ranges where an exit handler may apply: all the code, except in constructors,
    /// where code that runs while `this` is uninitialised (and unreachable code) is left out.
    pub fn handler_ranges(&self) -> Vec<(u32, u32)> {
        let end = self.code.code.len() as u32;
        let Some(analysis) = self.analysis.as_ref().filter(|_| self.is_constructor) else {
            return vec![(0, end)];
        };
        let mut ranges = Vec::new();
        let mut start: Option<u32> = None;
        for (i, insn) in self.insns.iter().enumerate() {
            let ok = analysis.depth[i].is_some() && !analysis.this_uninit[i];
            match (ok, start) {
                (true, None) => start = Some(insn.offset),
                (false, Some(s)) => {
                    ranges.push((s, insn.offset));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            ranges.push((s, end));
        }
        ranges
    }

    /// True when new frames must be written for new branch targets and handlers.
    pub fn frames_required(&self) -> bool {
        self.class.major >= 51 || self.smt.is_some()
    }

    /// [`Prepared::finish`] for changes that only insert code (`edits`): no new handler, no
    /// new local, frames as they are.
    pub fn finish_inserted(
        &self,
        method_index: usize,
        patcher: &mut ClassPatcher<'_>,
        edits: Edits,
        max_stack: u16,
    ) -> Result<(), SkipReason> {
        self.finish(
            method_index,
            patcher,
            &CodeChanges {
                edits,
                handlers: &[],
                frame_edits: FrameEdits::default(),
                max_stack,
                max_locals: self.code.max_locals,
            },
        )
    }

    /// [`Prepared::finish_inserted`] for a prologue alone: `prologue` runs once at entry (jumps
    /// back to offset 0 skip it).
    pub fn finish_with_prologue(
        &self,
        method_index: usize,
        patcher: &mut ClassPatcher<'_>,
        prologue: crate::code::asm::Snippet,
    ) -> Result<(), SkipReason> {
        let mut edits = Edits::new(self.insns.len());
        let max_stack = self.max_depth().max(prologue.peak);
        edits.after[0] = prologue.code;
        self.finish_inserted(method_index, patcher, edits, max_stack)
    }

    /// Rewrites the code and replaces the method in `patcher`.
    pub fn finish(
        &self,
        method_index: usize,
        patcher: &mut ClassPatcher<'_>,
        c: &CodeChanges<'_>,
    ) -> Result<(), SkipReason> {
        let names: Vec<Option<&str>> = self
            .param_class_names
            .iter()
            .map(|n| n.as_deref())
            .collect();
        let rw = Rewrite {
            cp: &self.class.constant_pool,
            code: &self.code,
            insns: &self.insns,
            index_of: &self.index_of,
            frames: self.frames.as_deref(),
            smt: self.smt,
            initial_locals: &self.initial_locals,
            this_class: self.class.this_class,
            frames_required: self.frames_required(),
            param_class_names: &names,
        };
        let body = edit::rewrite(&rw, &mut patcher.pool, c)?;
        let info = rebuild_method(
            self.class,
            self.member,
            self.member.access,
            self.member.name_index,
            None,
            Some(&body),
        );
        patcher.replace_method(method_index, info);
        Ok(())
    }
}
