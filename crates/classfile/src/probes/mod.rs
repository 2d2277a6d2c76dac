//! Probes: pure functions from class bytes to instrumented class bytes.

mod alloc;
mod entry_exit;
mod method;
mod native;
mod reveal;
mod vm_alloc;

pub use reveal::instrument_reveal;
pub use vm_alloc::VmAllocKind;

use std::borrow::Cow;
use std::fmt;

use crate::class::ClassFile;
use crate::patch::ClassPatcher;
use entry_exit::Counting;

/// The hook methods a probe may call.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Hook {
    Enter,
    Exit,
    Unwind,
    ExitBlocks,
    UnwindBlocks,
    Alloc,
    NativeEnter,
    NativeExit,
    Receiver,
    Reveal,
    Site,
    AllocVm,
    AllocInner,
    EnterContext,
    SavedContext,
    ExitContext,
    UnwindContext,
    LeafContext,
    LeafBlocks,
}

const ACC_STATIC: u16 = 0x0008;

/// The cache slot of `java/lang/Throwable`, after every hook's.
const THROWABLE_SLOT: usize = Hook::LeafBlocks as usize + 1;

/// Constant-pool indices of the hooks and of `java/lang/Throwable`, interned once per class.
pub(crate) struct Refs<'h> {
    pub hooks: &'h Hooks,
    cache: [Option<u16>; THROWABLE_SLOT + 1],
    prefetched: bool,
}

impl<'h> Refs<'h> {
    fn new(hooks: &'h Hooks) -> Self {
        Refs {
            hooks,
            cache: [None; THROWABLE_SLOT + 1],
            prefetched: false,
        }
    }

    /// Looks up every class-level constant a probe may need in one pool scan, once.
    fn prefetch(&mut self, p: &mut ClassPatcher<'_>) {
        if !self.prefetched {
            self.prefetched = true;
            p.pool
                .prefetch(&[&self.hooks.class, "java/lang/Throwable", "StackMapTable"]);
        }
    }

    /// The Methodref of `hook`.
    pub fn hook(&mut self, p: &mut ClassPatcher<'_>, hook: Hook) -> Result<u16, SkipReason> {
        let h = self.hooks;
        let m = match hook {
            Hook::Enter => &h.enter,
            Hook::Exit => &h.exit,
            Hook::Unwind => &h.unwind,
            Hook::ExitBlocks => &h.exit_blocks,
            Hook::UnwindBlocks => &h.unwind_blocks,
            Hook::Alloc => &h.alloc,
            Hook::NativeEnter => &h.native_enter,
            Hook::NativeExit => &h.native_exit,
            Hook::Receiver => &h.receiver,
            Hook::Reveal => &h.reveal,
            Hook::Site => &h.site,
            Hook::AllocVm => &h.alloc_vm,
            Hook::AllocInner => &h.alloc_inner,
            Hook::EnterContext => &h.enter_context,
            Hook::SavedContext => &h.saved_context,
            Hook::ExitContext => &h.exit_context,
            Hook::UnwindContext => &h.unwind_context,
            Hook::LeafContext => &h.leaf_context,
            Hook::LeafBlocks => &h.leaf_blocks,
        };
        if let Some(i) = self.cache[hook as usize] {
            return Ok(i);
        }
        self.prefetch(p);
        let class = match hook {
            Hook::Alloc | Hook::AllocVm | Hook::AllocInner => &h.alloc_class,
            Hook::NativeEnter | Hook::NativeExit => &h.native_class,
            _ => &h.class,
        };
        let i = p
            .pool
            .method_ref(class, &m.name, &m.descriptor)
            .map_err(|_| SkipReason::ConstantPoolFull)?;
        self.cache[hook as usize] = Some(i);
        Ok(i)
    }

    /// The Class entry of `java/lang/Throwable` (the type caught by exit handlers).
    pub fn throwable(&mut self, p: &mut ClassPatcher<'_>) -> Result<u16, SkipReason> {
        if let Some(i) = self.cache[THROWABLE_SLOT] {
            return Ok(i);
        }
        self.prefetch(p);
        let i = p
            .pool
            .class("java/lang/Throwable")
            .map_err(|_| SkipReason::ConstantPoolFull)?;
        self.cache[THROWABLE_SLOT] = Some(i);
        Ok(i)
    }
}

/// Which probe to insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    /// Hook calls at method entry, before every return, and on abrupt exit.
    EntryExit,
    /// JP basic-block counters, Default BBA: blocks end at control transfers.
    Blocks,
    /// JP basic-block counters, Precise BBA: blocks also end after instructions that may throw.
    BlocksPrecise,
    /// A hook call with each newly allocated object and its allocation-site id.
    Alloc,
    /// Native-method wrappers (JVMTI native method prefix).
    Native,
}

impl ProbeKind {
    /// All probes, in CLI order.
    pub const ALL: [ProbeKind; 5] = [
        ProbeKind::EntryExit,
        ProbeKind::Blocks,
        ProbeKind::BlocksPrecise,
        ProbeKind::Alloc,
        ProbeKind::Native,
    ];

    /// The CLI name (`entry-exit`, `blocks`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ProbeKind::EntryExit => "entry-exit",
            ProbeKind::Blocks => "blocks",
            ProbeKind::BlocksPrecise => "blocks-precise",
            ProbeKind::Alloc => "alloc",
            ProbeKind::Native => "native",
        }
    }
}

impl fmt::Display for ProbeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ProbeKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ProbeKind::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            format!("unknown probe '{s}' (expected one of: entry-exit, blocks, blocks-precise, alloc, native)")
        })
    }
}

/// One static hook method: its name and descriptor in the hook class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookMethod {
    /// Method name.
    pub name: String,
    /// Method descriptor; must match what the probe pushes.
    pub descriptor: String,
}

impl HookMethod {
    fn new(name: &str, descriptor: &str) -> Self {
        HookMethod {
            name: name.to_owned(),
            descriptor: descriptor.to_owned(),
        }
    }
}

/// The hook class and its static methods that probes call.
///
/// The defaults name the class the agent defines in the bootstrap class loader;
/// `tools/hooks/ferrofluid/Hooks.java` is a no-op class with the same shape for
/// running statically instrumented code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hooks {
    /// Internal name of the hook class (`ferrofluid/Hooks`). Its own methods are never patched.
    pub class: String,
    /// `enter(I)V`: method id, at entry (entry-exit and blocks probes).
    pub enter: HookMethod,
    /// `exit(I)V`: method id, before each return.
    pub exit: HookMethod,
    /// `unwind(I)V`: method id, when the method exits by an exception.
    pub unwind: HookMethod,
    /// `exitBlocks(II)V`: method id and bytecodes executed, before each return.
    pub exit_blocks: HookMethod,
    /// `unwindBlocks(II)V`: method id and bytecodes executed, on exit by an exception.
    pub unwind_blocks: HookMethod,
    /// The block probes pass a context from entry to exit ([`Hooks::enter_context`] and the
    /// two below in place of `enter`, `exitBlocks` and `unwindBlocks`), kept in a local. The
    /// `entry-exit` probes too (calls only: in place of `enter`, `exit` and `unwind`, with 0
    /// bytecodes); their methods annotated `@IntrinsicCandidate` are then skipped, as with
    /// block probes.
    pub blocks_context: bool,
    /// `enterContext(I)Ljava/lang/Object;`: method id, at entry; returns what the method's
    /// exit hands back (with [`Hooks::blocks_context`]).
    pub enter_context: HookMethod,
    /// `savedContext(Ljava/lang/Object;)I`: the entry's context, right after the entry; returns
    /// what the method's exits hand back with it (the node to return to), kept in a second local.
    pub saved_context: HookMethod,
    /// `exitContext(Ljava/lang/Object;III)V`: the entry's context, method id, bytecodes
    /// executed and what `savedContext` returned, before each return.
    pub exit_context: HookMethod,
    /// `unwindContext(Ljava/lang/Object;III)V`: as `exitContext`, on exit by an exception.
    pub unwind_context: HookMethod,
    /// `leafContext(I)V`: method id, at the entry of a leaf ([`Selection::leaf`]): the
    /// method's only probe (with [`Hooks::blocks_context`]).
    pub leaf_context: HookMethod,
    /// `leafBlocks(II)V`: method id and the bytecodes each call counts, at the entry of a leaf
    /// under block counting (with [`Hooks::blocks_context`]).
    pub leaf_blocks: HookMethod,
    /// `alloc(Ljava/lang/Object;I)V`: the new object and its allocation-site id.
    pub alloc: HookMethod,
    /// Internal name of the class declaring [`Hooks::alloc`] (by default [`Hooks::class`]; the
    /// agent's `alloc` engine names a class whose Java body counts without a JNI call).
    pub alloc_class: String,
    /// `vm(Ljava/lang/Object;I)V` of [`Hooks::alloc_class`]: an object a call returned that the
    /// JVM allocated for it (reflection, `clone()`), and the call site's id
    /// ([`Selection::vm_alloc_site_id`]).
    pub alloc_vm: HookMethod,
    /// `inner(Ljava/lang/Object;I)V` of [`Hooks::alloc_class`]: a new multi-dimensional array
    /// whose inner arrays are counted at the site's id ([`Selection::vm_alloc_site_id`]).
    pub alloc_inner: HookMethod,
    /// Internal name of the class declaring [`Hooks::native_enter`] and [`Hooks::native_exit`]
    /// (by default [`Hooks::class`]; the agent's `native` engine names a class of its own,
    /// [`crate::hooks_class::native_hooks_class`], which the boot loader can find before the
    /// agent's other hooks exist).
    pub native_class: String,
    /// `nativeEnter(I)V`: method id, before calling the native method.
    pub native_enter: HookMethod,
    /// `nativeExit(I)V`: method id, after the native method returned or threw.
    pub native_exit: HookMethod,
    /// `receiver(Ljava/lang/Object;I)V`: the receiver of a virtual call about to be made at a
    /// receiver site (see [`Selection::receiver_site`]) and the site's id.
    pub receiver: HookMethod,
    /// `reveal(Ljava/lang/Object;I)V`: an argument of a gateway method (`Method.invoke`'s
    /// receiver...) and the gateway's kind, at entry ([`instrument_reveal`]).
    pub reveal: HookMethod,
    /// `site(I)V`: a deferred site (see [`Selection::deferred_site`]) is about to run its
    /// call(s). Not native in the agent's class: a Java body returns at once once the site has
    /// fired (see [`crate::hooks_class`]) and calls `receiver(null, site)` otherwise.
    pub site: HookMethod,
    /// Prefix given to wrapped native methods (what the agent passes to SetNativeMethodPrefix).
    pub native_prefix: String,
}

impl Default for Hooks {
    fn default() -> Self {
        Hooks {
            class: "ferrofluid/Hooks".to_owned(),
            enter: HookMethod::new("enter", "(I)V"),
            exit: HookMethod::new("exit", "(I)V"),
            unwind: HookMethod::new("unwind", "(I)V"),
            exit_blocks: HookMethod::new("exitBlocks", "(II)V"),
            unwind_blocks: HookMethod::new("unwindBlocks", "(II)V"),
            blocks_context: false,
            enter_context: HookMethod::new("enterContext", "(I)Ljava/lang/Object;"),
            saved_context: HookMethod::new("savedContext", "(Ljava/lang/Object;)I"),
            exit_context: HookMethod::new("exitContext", "(Ljava/lang/Object;III)V"),
            unwind_context: HookMethod::new("unwindContext", "(Ljava/lang/Object;III)V"),
            leaf_context: HookMethod::new("leafContext", "(I)V"),
            leaf_blocks: HookMethod::new("leafBlocks", "(II)V"),
            alloc: HookMethod::new("alloc", "(Ljava/lang/Object;I)V"),
            alloc_class: "ferrofluid/Hooks".to_owned(),
            alloc_vm: HookMethod::new("vm", "(Ljava/lang/Object;I)V"),
            alloc_inner: HookMethod::new("inner", "(Ljava/lang/Object;I)V"),
            native_class: "ferrofluid/Hooks".to_owned(),
            native_enter: HookMethod::new("nativeEnter", "(I)V"),
            native_exit: HookMethod::new("nativeExit", "(I)V"),
            receiver: HookMethod::new("receiver", "(Ljava/lang/Object;I)V"),
            reveal: HookMethod::new("reveal", "(Ljava/lang/Object;I)V"),
            site: HookMethod::new("site", "(I)V"),
            native_prefix: "ferrofluid$$".to_owned(),
        }
    }
}

/// What to insert and which hooks to call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProbeOptions {
    /// The probe.
    pub kind: ProbeKind,
    /// The hook class.
    pub hooks: Hooks,
    /// Use the lean single-pass editor where it applies (the default); `false` sends
    /// every method through the general editor (for differential tests).
    pub lean_editor: bool,
}

impl ProbeOptions {
    /// Options for `kind` with the default hook class.
    pub fn new(kind: ProbeKind) -> Self {
        ProbeOptions {
            kind,
            hooks: Hooks::default(),
            lean_editor: true,
        }
    }
}

/// A method offered to the [`Selection`].
#[derive(Debug, Clone, Copy)]
pub struct MethodSite<'s> {
    /// Internal name of the declaring class.
    pub class: &'s str,
    /// Method name.
    pub name: &'s str,
    /// Method descriptor.
    pub descriptor: &'s str,
    /// Access flags.
    pub access: u16,
}

/// How a call instruction dispatches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invoke {
    /// `invokestatic`.
    Static,
    /// `invokespecial`.
    Special,
    /// `invokevirtual`.
    Virtual,
    /// `invokeinterface`.
    Interface,
}

impl Invoke {
    /// The dispatch of invoke opcode `op` (`invokedynamic` and others: `None`).
    pub fn of(op: u8) -> Option<Invoke> {
        use crate::code::opcodes::*;
        match op {
            INVOKESTATIC => Some(Invoke::Static),
            INVOKESPECIAL => Some(Invoke::Special),
            INVOKEVIRTUAL => Some(Invoke::Virtual),
            INVOKEINTERFACE => Some(Invoke::Interface),
            _ => None,
        }
    }

    /// Whether the target depends on the receiver's class.
    pub fn is_virtual(self) -> bool {
        matches!(self, Invoke::Virtual | Invoke::Interface)
    }
}

/// A call offered to [`Selection::receiver_site`] (virtual and interface calls) and
/// [`Selection::deferred_site`] (deferred calls of any dispatch).
#[derive(Debug, Clone, Copy)]
pub struct CallSite<'s> {
    /// How the call dispatches.
    pub invoke: Invoke,
    /// Internal name of the class or interface the call names.
    pub class: &'s str,
    /// Method name.
    pub name: &'s str,
    /// Method descriptor.
    pub descriptor: &'s str,
    /// Offset of the invoke instruction in the original code.
    pub bci: u32,
    /// Offset of the first instruction of its basic block (blocks end at control transfers
    /// and start at branch targets and handlers), in the original code.
    pub block: u32,
}

/// Chooses the methods to patch and hands out ids.
pub trait Selection {
    /// The id to pass to hooks for `method`, or `None` to leave it alone.
    fn method_id(&mut self, method: &MethodSite<'_>) -> Option<u32>;

    /// The id of the allocation site at bytecode offset `bci` in method `method_id`
    /// that creates an instance of `type_name` (internal name or array descriptor).
    fn alloc_site_id(&mut self, method_id: u32, bci: u32, type_name: &str) -> u32 {
        let _ = (method_id, type_name);
        bci
    }

    /// The id of a site at `bci` of method `method_id` whose objects the JVM allocates without
    /// an allocating instruction of the method (`kind`; `callee`: the called method's class,
    /// name and descriptor, for calls), counted per runtime class; `None`, the default, inserts
    /// no probe there.
    fn vm_alloc_site_id(
        &mut self,
        method_id: u32,
        bci: u32,
        kind: VmAllocKind,
        callee: Option<(&str, &str, &str)>,
    ) -> Option<u32> {
        let _ = (method_id, bci, kind, callee);
        None
    }

    /// Whether an allocation of `type_name` (internal name or array descriptor) gets an
    /// `alloc` probe: a site refused here gets none, and a method left with none is not
    /// patched. Every allocation by default.
    fn wants_alloc_of(&mut self, type_name: &str) -> bool {
        let _ = type_name;
        true
    }

    /// Whether the `entry-exit` probe should offer this selection its calls (deferred ones
    /// through [`Selection::deferred_site`], virtual and interface ones through
    /// [`Selection::receiver_site`]). Off by default: asking costs a constant-pool lookup per
    /// call instruction.
    fn wants_receiver_sites(&self) -> bool {
        false
    }

    /// The site id for `call` in method `method_id`, or `None`. With an id, the probe passes
    /// the call's receiver and the id to the `receiver` hook just before the call, so that a
    /// profiler can learn which implementations a call site really reaches (and instrument
    /// only those) instead of every override class-hierarchy analysis allows. Arguments of
    /// more than 2 slots are set aside in new locals past the method's own while the
    /// receiver is copied.
    fn receiver_site(&mut self, method_id: u32, call: &CallSite<'_>) -> Option<u32> {
        let _ = (method_id, call);
        None
    }

    /// The site id of a deferred call (`crate::code::cold::deferred_instructions`: neither on the
    /// method's entry straight line nor in a block every path to a `return` runs, so an
    /// invocation may not make it) in method `method_id`, or
    /// `None`. With an id, the probe passes the id to the `site` hook just before the call, so
    /// that a profiler can leave the targets of calls a run may never make uninstrumented until
    /// they are made. Calls of one basic block may share an id: then only the first of them in
    /// the block gets the probe (the selection reveals them all when it runs). Asked before
    /// [`Selection::receiver_site`], which is asked when this gives `None`.
    fn deferred_site(&mut self, method_id: u32, call: &CallSite<'_>) -> Option<u32> {
        let _ = (method_id, call);
        None
    }

    /// Whether method `method_id` is a leaf whose calls its entry alone can count: with
    /// [`Hooks::blocks_context`], its only probe is then a call of [`Hooks::leaf_context`]
    /// (`entry-exit`) or [`Hooks::leaf_blocks`] (block counting) at entry (no exit probe, no
    /// handler, no locals), so that it stays as small as the JIT found it. A method with a call
    /// instruction gets the full probes whatever this says (its callees' entries need its
    /// context), and so does, under block counting, one of more than one basic block (what a
    /// call counts must not depend on its path). No by default.
    fn leaf(&mut self, method_id: u32, method: &MethodSite<'_>) -> bool {
        let _ = (method_id, method);
        false
    }

    /// A site id to pass `this` with to the `receiver` hook at the entry of `method` (right
    /// after the `enter` hook), or `None`. Only instance methods other than constructors, under
    /// `entry-exit` (a profiler uses it to recognise an object, e.g. the thread a
    /// `Thread.start` starts).
    fn entry_site(&mut self, method_id: u32, method: &MethodSite<'_>) -> Option<u32> {
        let _ = (method_id, method);
        None
    }
}

impl<F: FnMut(&MethodSite<'_>) -> Option<u32>> Selection for F {
    fn method_id(&mut self, method: &MethodSite<'_>) -> Option<u32> {
        self(method)
    }
}

/// Why a selected method was left unpatched. The class stays valid either way.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SkipReason {
    /// Abstract (or interface-abstract) method: no code.
    Abstract,
    /// Native method under a probe other than `native`.
    Native,
    /// Not a native method, under the `native` probe.
    NotNative,
    /// Has no `Code` attribute although it should.
    NoCode,
    /// The patched code would exceed 65535 bytes.
    TooLarge,
    /// A jump would exceed 16 bits where it cannot be widened.
    JumpOverflow,
    /// Bytecode the probe does not support (e.g. `jsr`/`ret` for probes that need frames).
    Unsupported(String),
    /// The method belongs to the hook class.
    HookClass,
    /// A probe would add nothing (e.g. `alloc` in a method that allocates nothing).
    NothingToDo,
    /// The code could not be analysed: malformed or beyond what the engine handles.
    Malformed(String),
    /// The constant pool has no room for the probe's constants.
    ConstantPoolFull,
    /// An `@IntrinsicCandidate` under a block-counting probe or `native`: compiled code may
    /// run HotSpot's own code for its calls instead of its bytecode (or, for a native, instead
    /// of calling it), so what its probes count depends on the JIT.
    Intrinsic,
    /// A signature-polymorphic native (`MethodHandle.invokeExact`, `VarHandle.get`...) under
    /// `native`: the JVM links each call to it by the call site's descriptor, which a wrapper
    /// with one descriptor cannot take.
    SignaturePolymorphic,
    /// A native named `registerNatives` under `native`: the call that binds its class's other
    /// natives, once, from the static initialiser. HotSpot binds some of them itself by their
    /// JNI name (`Unsafe`, `MethodHandleNatives`...), which a prefixed name would defeat, and
    /// the JDK's run before a prefixed native can be resolved. Also the natives of the JDK's
    /// native-library classes, which look natives up (`NativeLibrary.findEntry0`).
    NativeBinding,
    /// A native under `native` whose JVM code finds its caller's frames by its own position
    /// on the stack (`Throwable.fillInStackTrace` skips its frames by name; a wrapper would put
    /// two frames in every exception's stack trace).
    FrameSensitive,
    /// A native under `native` whose JVM code runs Java code by its own calls, not JNI
    /// (`NativeMethodAccessorImpl.invoke0`, `Class.forName0`...): a wrapper would count that
    /// Java code as native time.
    RunsJava,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Abstract => f.write_str("abstract"),
            SkipReason::Native => f.write_str("native"),
            SkipReason::NotNative => f.write_str("not native"),
            SkipReason::NoCode => f.write_str("no code"),
            SkipReason::TooLarge => f.write_str("code too large"),
            SkipReason::JumpOverflow => f.write_str("jump overflow"),
            SkipReason::Unsupported(s) => write!(f, "unsupported: {s}"),
            SkipReason::HookClass => f.write_str("hook class"),
            SkipReason::NothingToDo => f.write_str("nothing to do"),
            SkipReason::Malformed(s) => write!(f, "malformed: {s}"),
            SkipReason::ConstantPoolFull => f.write_str("constant pool full"),
            SkipReason::Intrinsic => f.write_str("intrinsic candidate"),
            SkipReason::SignaturePolymorphic => f.write_str("signature polymorphic"),
            SkipReason::NativeBinding => f.write_str("binds natives"),
            SkipReason::FrameSensitive => f.write_str("walks the stack from its own frame"),
            SkipReason::RunsJava => f.write_str("runs Java code by the JVM's own calls"),
        }
    }
}

impl SkipReason {
    /// A short stable key for summaries (`too-large`, `abstract`, ...).
    pub fn key(&self) -> &'static str {
        match self {
            SkipReason::Abstract => "abstract",
            SkipReason::Native => "native",
            SkipReason::NotNative => "not-native",
            SkipReason::NoCode => "no-code",
            SkipReason::TooLarge => "too-large",
            SkipReason::JumpOverflow => "jump-overflow",
            SkipReason::Unsupported(_) => "unsupported",
            SkipReason::HookClass => "hook-class",
            SkipReason::NothingToDo => "nothing-to-do",
            SkipReason::Malformed(_) => "malformed",
            SkipReason::ConstantPoolFull => "pool-full",
            SkipReason::Intrinsic => "intrinsic",
            SkipReason::SignaturePolymorphic => "signature-polymorphic",
            SkipReason::NativeBinding => "native-binding",
            SkipReason::FrameSensitive => "frame-sensitive",
            SkipReason::RunsJava => "runs-java",
        }
    }
}

/// What happened to one selected method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodOutcome<'a> {
    /// Method name (borrowed from the class bytes: no allocation per method).
    pub name: Cow<'a, str>,
    /// Method descriptor.
    pub descriptor: Cow<'a, str>,
    /// The id the selection gave it.
    pub id: u32,
    /// `Ok` when patched.
    pub result: Result<(), SkipReason>,
}

/// The result of [`instrument`].
#[derive(Debug, Clone)]
pub struct Instrumented<'a> {
    /// Internal name of the class.
    pub class_name: String,
    /// New class bytes, or `None` when nothing was patched (use the input unchanged).
    pub bytes: Option<Vec<u8>>,
    /// One entry per selected method.
    pub methods: Vec<MethodOutcome<'a>>,
}

/// Whether `member` is annotated `@IntrinsicCandidate` (JDK 16 on) or `@HotSpotIntrinsicCandidate`
/// (JDK 9 to 15).
fn is_intrinsic_candidate(class: &ClassFile<'_>, member: &crate::class::Member<'_>) -> bool {
    use crate::attributes::{decode, Attribute, Context, Location};
    let cp = &class.constant_pool;
    let Some(raw) = member.attribute(cp, "RuntimeVisibleAnnotations") else {
        return false;
    };
    let Ok(Attribute::RuntimeVisibleAnnotations(list)) =
        decode(raw, cp, Context::new(class, Location::Method))
    else {
        return false;
    };
    list.iter().any(|a| {
        matches!(
            cp.utf8(a.type_index).as_deref(),
            Ok("Ljdk/internal/vm/annotation/IntrinsicCandidate;"
                | "Ljdk/internal/HotSpotIntrinsicCandidate;")
        )
    })
}

/// The block counting `kind` does (none for the probes that count no bytecodes).
fn counting(kind: ProbeKind) -> Counting {
    match kind {
        ProbeKind::Blocks => Counting::Default,
        ProbeKind::BlocksPrecise => Counting::Precise,
        _ => Counting::None,
    }
}

/// Inserts `options.kind` into every method `selection` picks.
///
/// Fails only when the class cannot be read; a method that cannot be patched is
/// reported in [`Instrumented::methods`] and left as it was.
pub fn instrument<'a>(
    class_bytes: &'a [u8],
    options: &ProbeOptions,
    selection: &mut dyn Selection,
) -> crate::Result<Instrumented<'a>> {
    let class = ClassFile::parse(class_bytes)?;
    let cp = &class.constant_pool;
    let class_name = class.name()?.into_owned();
    let is_hook_class = class_name == options.hooks.class
        || class_name == options.hooks.alloc_class
        || class_name == options.hooks.native_class;
    let mut patcher = ClassPatcher::new(&class);
    let mut refs = Refs::new(&options.hooks);
    let mut methods = Vec::with_capacity(class.methods.len());
    let mut lean_class = entry_exit::LeanClass {
        is_object: class_name == "java/lang/Object",
        scratch: Default::default(),
    };
    for (index, member) in class.methods.iter().enumerate() {
        let name = member.name(cp)?;
        let descriptor = member.descriptor(cp)?;
        let site = MethodSite {
            class: &class_name,
            name: &name,
            descriptor: &descriptor,
            access: member.access,
        };
        let Some(id) = selection.method_id(&site) else {
            continue;
        };
        let hooks = &mut refs;
        // A leaf's entry-only probe, where the context probes take one (an intrinsic candidate
        // gets none at all, below).
        let counting = counting(options.kind);
        let leaf = (options.hooks.blocks_context
            && matches!(
                options.kind,
                ProbeKind::EntryExit | ProbeKind::Blocks | ProbeKind::BlocksPrecise
            )
            && !is_hook_class
            && selection.leaf(id, &site)
            && !is_intrinsic_candidate(&class, member))
        .then(|| entry_exit::leaf(&class, member, counting))
        .flatten();
        let result = if is_hook_class {
            Err(SkipReason::HookClass)
        } else if let Some((m, bytecodes)) = leaf {
            entry_exit::patch_leaf(&m, index, id, counting, bytecodes, hooks, &mut patcher)
        } else {
            match options.kind {
                ProbeKind::EntryExit
                    if options.hooks.blocks_context && is_intrinsic_candidate(&class, member) =>
                {
                    Err(SkipReason::Intrinsic)
                }
                ProbeKind::EntryExit => {
                    let is_instance = member.access & ACC_STATIC == 0 && *name != *"<init>";
                    let entry_site = if is_instance {
                        selection.entry_site(id, &site)
                    } else {
                        None
                    };
                    let wants_sites = selection.wants_receiver_sites();
                    // Receiver probes need the general editor (they insert code at call sites).
                    // The lean editor has no context local.
                    let lean = options.lean_editor
                        && !options.hooks.blocks_context
                        && !wants_sites
                        && entry_site.is_none()
                        && entry_exit::patch_lean(
                            &class,
                            index,
                            id,
                            &descriptor,
                            hooks,
                            &mut patcher,
                            &mut lean_class,
                        );
                    if lean {
                        Ok(())
                    } else {
                        let sites = if wants_sites {
                            Some(&mut *selection)
                        } else {
                            None
                        };
                        let receivers = entry_exit::Receivers { sites, entry_site };
                        entry_exit::patch_with_sites(
                            &class,
                            index,
                            id,
                            hooks,
                            receivers,
                            &mut patcher,
                        )
                    }
                }
                ProbeKind::Blocks | ProbeKind::BlocksPrecise
                    if is_intrinsic_candidate(&class, member) =>
                {
                    Err(SkipReason::Intrinsic)
                }
                ProbeKind::Blocks => {
                    entry_exit::patch(&class, index, id, hooks, Counting::Default, &mut patcher)
                }
                ProbeKind::BlocksPrecise => {
                    entry_exit::patch(&class, index, id, hooks, Counting::Precise, &mut patcher)
                }
                ProbeKind::Alloc => alloc::patch(&class, index, id, hooks, selection, &mut patcher),
                ProbeKind::Native => native::patch(&class, index, id, hooks, &mut patcher),
            }
        };
        methods.push(MethodOutcome {
            name,
            descriptor,
            id,
            result,
        });
    }
    let patched = methods.iter().any(|m| m.result.is_ok());
    let bytes = if patched {
        Some(patcher.finish())
    } else {
        None
    };
    Ok(Instrumented {
        class_name,
        bytes,
        methods,
    })
}
