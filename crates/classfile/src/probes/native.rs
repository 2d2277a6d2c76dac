//! `native`: IPA-style wrappers. The native method is renamed with the JVMTI native
//! prefix and a Java method with the original name and flags calls hooks around it:
//!
//! ```java
//! native int foo(int a);                  // becomes
//! int foo(int a) {                        // the original flags but `native`
//!     Hooks.nativeEnter(ID);              // `Hooks::native_class`
//!     int r;
//!     try { r = ferrofluid$$foo(a); }     // invokestatic, or invokespecial for an instance method
//!     catch (Throwable t) { Hooks.nativeExit(ID); throw t; }
//!     Hooks.nativeExit(ID);
//!     return r;                           // kept on the operand stack, no local
//! }
//! private native int ferrofluid$$foo(int a);  // never synchronized: the wrapper holds the monitor
//! ```
//!
//! Left alone (docs/classfile.md, "The native probe"): natives HotSpot may replace by an
//! intrinsic (`@IntrinsicCandidate`: compiled callers would skip the wrapper, so its counts would
//! depend on the JIT), the signature-polymorphic natives of `MethodHandle` and `VarHandle` (the
//! JVM links their calls itself; a wrapper would change their meaning), `registerNatives`
//! (the binding step itself, which HotSpot may do by the JNI name), the natives of the JDK's
//! native-library classes ([`NATIVE_LOOKUP`]), the natives that find frames
//! by their own place on the stack ([`FRAME_SENSITIVE`]) and natives of interfaces.

use crate::bytes::PutBe;
use crate::class::{access, ClassFile};
use crate::code::asm::Snippet;
use crate::code::frames::{self, Frame, VType};
use crate::code::opcodes::*;
use crate::descriptor::{Kind, MethodDescriptor};
use crate::patch::{rebuild_method, ClassPatcher};
use crate::probes::entry_exit::{pool_full, push_id};
use crate::probes::{Hook, Refs, SkipReason};

pub(crate) fn patch(
    class: &ClassFile<'_>,
    index: usize,
    id: u32,
    hooks: &mut Refs<'_>,
    patcher: &mut ClassPatcher<'_>,
) -> Result<(), SkipReason> {
    let cp = &class.constant_pool;
    let member = &class.methods[index];
    if member.access & access::NATIVE == 0 {
        return Err(SkipReason::NotNative);
    }
    if class.access & access::INTERFACE != 0 {
        return Err(SkipReason::Unsupported(
            "native method in an interface".into(),
        ));
    }
    let bad = |e: crate::ClassError| SkipReason::Malformed(e.to_string());
    let name = member.name(cp).map_err(bad)?;
    let desc_text = member.descriptor(cp).map_err(bad)?;
    let desc = MethodDescriptor::parse(&desc_text)
        .ok_or_else(|| SkipReason::Malformed(format!("bad descriptor {desc_text}")))?;
    let class_name = class.name().map_err(bad)?;
    if is_signature_polymorphic(&class_name, member.access, &desc_text) {
        return Err(SkipReason::SignaturePolymorphic);
    }
    if super::is_intrinsic_candidate(class, member) {
        return Err(SkipReason::Intrinsic);
    }
    if *name == *"registerNatives" || NATIVE_LOOKUP.contains(&&*class_name) {
        return Err(SkipReason::NativeBinding);
    }
    if FRAME_SENSITIVE.contains(&(&*class_name, &*name, &*desc_text)) {
        return Err(SkipReason::FrameSensitive);
    }
    if RUNS_JAVA.contains(&(&*class_name, &*name)) {
        return Err(SkipReason::RunsJava);
    }
    let is_static = member.access & access::STATIC != 0;

    let prefixed = format!("{}{}", hooks.hooks.native_prefix, name);
    let prefixed_name = patcher.pool.utf8(&prefixed).map_err(pool_full)?;
    let target = patcher
        .pool
        .method_ref(&class_name, &prefixed, &desc_text)
        .map_err(pool_full)?;
    let enter = hooks.hook(patcher, Hook::NativeEnter)?;
    let exit = hooks.hook(patcher, Hook::NativeExit)?;
    let code_name = patcher.pool.utf8("Code").map_err(pool_full)?;

    // enter; try { r = prefixed(args) } catch (Throwable t) { exit; throw t } exit; return r
    let mut s = Snippet::new();
    push_id(&mut s, patcher, id)?;
    s.invokestatic(enter, 1, 0);
    let try_start = s.code.len();
    let mut slot = 0u16;
    if !is_static {
        s.load(ALOAD, 0);
        slot = 1;
    }
    for p in &desc.params {
        let op = match p.kind {
            Kind::Int => ILOAD,
            Kind::Long => LLOAD,
            Kind::Float => FLOAD,
            Kind::Double => DLOAD,
            Kind::Reference => ALOAD,
        };
        s.load(op, slot);
        slot += p.kind.slots();
    }
    let args = slot as i32;
    let ret = desc.return_slots() as i32;
    if is_static {
        s.invokestatic(target, args, ret);
    } else {
        s.invoke(INVOKESPECIAL, target, args, ret);
    }
    let try_end = s.code.len();
    push_id(&mut s, patcher, id)?;
    s.invokestatic(exit, 1, 0);
    let ret_op = match desc.ret.map(|t| t.kind) {
        None => RETURN,
        Some(Kind::Int) => IRETURN,
        Some(Kind::Long) => IRETURN + 1,
        Some(Kind::Float) => IRETURN + 2,
        Some(Kind::Double) => IRETURN + 3,
        Some(Kind::Reference) => IRETURN + 4,
    };
    s.op(ret_op, ret, 0);
    let handler = s.code.len();
    let mut h = Snippet::new();
    push_id(&mut h, patcher, id)?;
    h.invokestatic(exit, 1, 0).op(ATHROW, 0, 0);
    let max_stack = s.peak.max(1 + h.peak);
    s.code.extend_from_slice(&h.code);

    let mut body = Vec::with_capacity(s.code.len() + 32);
    body.put_u16(max_stack);
    body.put_u16(slot);
    body.put_u32(s.code.len() as u32);
    body.extend_from_slice(&s.code);
    body.put_u16(1);
    for v in [try_start, try_end, handler, 0] {
        body.put_u16(v as u16);
    }
    if class.major >= 50 {
        let throwable = hooks.throwable(patcher)?;
        let smt = patcher.pool.utf8("StackMapTable").map_err(pool_full)?;
        let frame = Frame {
            offset: handler as u32,
            locals: vec![],
            stack: vec![VType::Object(throwable as u32)],
        };
        let initial = frames::initial_locals(class.this_class, is_static, false, &desc);
        let names: Vec<Option<&str>> = desc.params.iter().map(|p| p.class_name()).collect();
        let encoded = frames::encode(&[frame], &initial, &mut |p| {
            let name = names[(p - frames::PARAM_BASE) as usize]
                .expect("placeholders are for reference parameters");
            patcher.pool.class(name)
        })
        .map_err(pool_full)?;
        body.put_u16(1);
        body.put_u16(smt);
        body.put_u32(encoded.len() as u32);
        body.extend_from_slice(&encoded);
    } else {
        body.put_u16(0);
    }

    // Private: no vtable slot, nothing can override or call it but the wrapper. Not
    // synchronized: the wrapper keeps the flag and holds the monitor around the call.
    let renamed_access = (member.access
        & !(access::PUBLIC | access::PROTECTED | access::SYNCHRONIZED | access::VARARGS))
        | access::PRIVATE;
    let renamed = rebuild_method(class, member, renamed_access, prefixed_name, None, None);
    patcher.replace_method(index, renamed);
    let wrapper_access = member.access & !access::NATIVE;
    let wrapper = rebuild_method(
        class,
        member,
        wrapper_access,
        member.name_index,
        Some(code_name),
        Some(&body),
    );
    patcher.add_method(wrapper);
    Ok(())
}

/// Natives whose JVM code finds frames by its own place on the stack, which a wrapper frame
/// would shift: `fillInStackTrace` skips its own frames by name before it records the caller's
/// (a wrapped one would leave two frames atop every exception's stack trace), and
/// `getClassContext` returns the classes from its caller on.
/// Natives whose JVM code runs Java code by its own calls, not through JNI, where no upcall is
/// seen: reflection's invocations (the method or constructor invoked), class initialisation
/// (`<clinit>`) and class definition (the loader's `loadClass` for the supertypes). Wrapped,
/// their frames would count that Java code as native time.
const RUNS_JAVA: [(&str, &str); 9] = [
    ("jdk/internal/reflect/NativeMethodAccessorImpl", "invoke0"),
    (
        "jdk/internal/reflect/NativeConstructorAccessorImpl",
        "newInstance0",
    ),
    (
        "jdk/internal/reflect/DirectMethodHandleAccessor$NativeAccessor",
        "invoke0",
    ),
    (
        "jdk/internal/reflect/DirectConstructorHandleAccessor$NativeAccessor",
        "newInstance0",
    ),
    ("java/lang/Class", "forName0"),
    ("jdk/internal/misc/Unsafe", "ensureClassInitialized0"),
    ("jdk/internal/misc/Unsafe", "defineClass0"),
    ("java/lang/ClassLoader", "defineClass1"),
    ("java/lang/ClassLoader", "defineClass2"),
];

/// The JDK's native-library classes, whose natives load libraries and look their symbols up:
/// HotSpot resolves a prefixed native of a library's class through `ClassLoader.findNative`,
/// which calls `findEntry0`; were that wrapped, resolving its own prefixed name would call it
/// again, without end (JDK 21+, where it is `NativeLibrary.findEntry0`).
const NATIVE_LOOKUP: [&str; 3] = [
    "jdk/internal/loader/NativeLibrary",
    "jdk/internal/loader/NativeLibraries",
    "jdk/internal/loader/RawNativeLibraries",
];

const FRAME_SENSITIVE: [(&str, &str, &str); 2] = [
    (
        "java/lang/Throwable",
        "fillInStackTrace",
        "(I)Ljava/lang/Throwable;",
    ),
    (
        "java/lang/SecurityManager",
        "getClassContext",
        "()[Ljava/lang/Class;",
    ),
];

/// Whether a native method is signature polymorphic (JVMS 2.9.3): declared in
/// `java.lang.invoke.MethodHandle` or `VarHandle`, `ACC_VARARGS | ACC_NATIVE`, one `Object[]`
/// parameter. Calls to them are linked by the JVM to whatever the call site's descriptor says.
fn is_signature_polymorphic(class: &str, flags: u16, descriptor: &str) -> bool {
    matches!(
        class,
        "java/lang/invoke/MethodHandle" | "java/lang/invoke/VarHandle"
    ) && flags & (access::VARARGS | access::NATIVE) == access::VARARGS | access::NATIVE
        && descriptor.starts_with("([Ljava/lang/Object;)")
}
