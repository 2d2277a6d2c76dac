//! The bytes of the hooks class the agent defines in the bootstrap class loader: a public final
//! class whose hook methods are `public static native`, bound by the agent with `RegisterNatives`,
//! except five with Java bodies, so that the common cases cost no JNI call:
//!
//! ```java
//! public static int active;    // nonzero while some thread is inside a root's extent
//! public static byte[] fired;  // fired[site] != 0: the site's calls are revealed
//! // enter, exit and unwind: a probe outside every root returns in Java. A negative id is a
//! // method that must reach the agent even then (a root, a code region): the agent passes
//! // such methods' ids as `~id`.
//! public static void enter(int id) {
//!     if (active == 0 && id >= 0) return;
//!     enterInRoot(id);          // exit and unwind call exitInRoot
//! }
//! // exitBlocks and unwindBlocks (the block counters' exits): the same gate, then the native
//! // exitBlocks0 (unwindBlocks0) with the id and the bytecodes.
//! public static void exitBlocks(int id, int n) {
//!     if (active == 0 && id >= 0) return;
//!     exitBlocks0(id, n);
//! }
//! // dropped[id]: the method's probes were dropped (`adaptive`): 1, its enter returns here;
//! // 2, once no invocation recorded before the drop can still be running, its exit too.
//! public static byte[] dropped;
//! public static void enterInRoot(int id) {
//!     byte[] d = dropped;
//!     if (id >= 0 && d != null && id < d.length && d[id] != 0) return;
//!     enter0(id);               // native; exitInRoot calls exit0, returns if d[id] >= 2
//! }
//! public static void site(int site) {
//!     if (active == 0) return;
//!     byte[] f = fired;
//!     if (f != null && site < f.length && f[site] != 0) return;
//!     receiver0(null, site);
//! }
//! public static Class[] seen;  // seen[site]: a receiver class whose callee is instrumented
//! // A receiver site: a virtual call's receiver, before the call. The agent's native looks up
//! // (site, class) per thread at JNI cost; a class it has seen once at the site is answered here.
//! public static void receiver(Object o, int site) {
//!     if (active == 0) return;
//!     Class[] s = seen;
//!     // A negative site is `Thread.start`'s, always the agent's.
//!     if (o != null && site >= 0 && s != null && site < s.length && s[site] == o.getClass())
//!         return;
//!     receiver0(o, site);
//! }
//! ```
//!
//! The gate, `enterInRoot`/`exitInRoot` and `site` bodies are 16 (17 for the block exits),
//! 30/31 and 32 bytes of bytecode, under the 35 bytes up to which C1 and C2 inline any call (the dropped check is a
//! method of its own to stay under it); `receiver`'s 44 are inlined where the call is hot (C2 inlines up
//! to 325 bytes there), a plain Java call elsewhere. None throws: the gates and `site` are
//! never given a negative id, `receiver` indexes `seen` only with a site in its bounds and
//! calls `getClass` only on a non-null receiver (a call on null throws at its own site, as
//! without the profiler).

use crate::bytes::PutBe;
use crate::code::opcodes::{
    ACONST_NULL, ALOAD_0, ARRAYLENGTH, GETSTATIC, IFEQ, IFNULL, ILOAD_0, INVOKESTATIC,
    INVOKEVIRTUAL, RETURN,
};
use crate::probes::{HookMethod, Hooks};

/// Class-file version of the generated class (Java 8: no module attributes needed; frames
/// required, so the Java bodies carry a StackMapTable).
const MAJOR: u16 = 52;

/// The static field the agent keeps nonzero while any thread is inside a root's extent.
pub const ACTIVE_FIELD: &str = "active";
/// The static `byte[]` field of per-site flags the agent sets once a deferred site fired.
pub const FIRED_FIELD: &str = "fired";
/// The native `(I)V` that the Java body of the enter hook calls.
pub const ENTER_NATIVE: &str = "enter0";
/// The native `(I)V` that the Java bodies of the exit and unwind hooks call.
pub const EXIT_NATIVE: &str = "exit0";
/// The native `(II)V` that the Java body of the `exitBlocks` hook calls.
pub const EXIT_BLOCKS_NATIVE: &str = "exitBlocks0";
/// The native `(II)V` that the Java body of the `unwindBlocks` hook calls.
pub const UNWIND_BLOCKS_NATIVE: &str = "unwindBlocks0";
/// The static `byte[]` field of per-method levels of dropped probes, which the agent sets.
pub const DROPPED_FIELD: &str = "dropped";
/// The Java method the enter gate calls inside a root: returns if the probes were dropped.
pub const ENTER_IN_ROOT: &str = "enterInRoot";
/// The Java method the exit and unwind gates call inside a root.
pub const EXIT_IN_ROOT: &str = "exitInRoot";
/// The static `Class[]` field of receiver classes per site, which the agent fills.
pub const SEEN_FIELD: &str = "seen";
/// The native `(Ljava/lang/Object;I)V` that the Java bodies of `receiver` and `site` call.
pub const RECEIVER_NATIVE: &str = "receiver0";

const ILOAD_1: u8 = 0x1b;
const ALOAD_1: u8 = 0x2b;
const ALOAD_2: u8 = 0x2c;
const AALOAD: u8 = 0x32;
const BALOAD: u8 = 0x33;
const ASTORE_1: u8 = 0x4c;
const ASTORE_2: u8 = 0x4d;
const IFNE: u8 = 0x9a;
const IFLT: u8 = 0x9b;
const ICONST_2: u8 = 0x05;
const IF_ICMPLT: u8 = 0xa1;
const IF_ICMPGE: u8 = 0xa2;
const IF_ACMPEQ: u8 = 0xa5;

const PUBLIC: u16 = 0x0001;
const STATIC: u16 = 0x0008;
const NATIVE: u16 = 0x0100;

/// A constant pool under construction (indices from 1).
#[derive(Default)]
struct Pool(Vec<Vec<u8>>);

impl Pool {
    /// A `public final` class's bytes up to its (empty) interfaces: magic, version, this pool,
    /// access, this and super class.
    fn class_header(&self, capacity: usize, this_class: u16, super_class: u16) -> Vec<u8> {
        let mut b = Vec::with_capacity(capacity);
        b.put_u32(0xCAFE_BABE);
        b.put_u16(0);
        b.put_u16(MAJOR);
        b.put_u16(self.0.len() as u16 + 1);
        for e in &self.0 {
            b.extend_from_slice(e);
        }
        b.put_u16(PUBLIC | 0x0010 | 0x0020); // public final super
        b.put_u16(this_class);
        b.put_u16(super_class);
        b.put_u16(0); // interfaces
        b
    }

    fn add(&mut self, entry: Vec<u8>) -> u16 {
        self.0.push(entry);
        self.0.len() as u16
    }

    fn utf8(&mut self, s: &str) -> u16 {
        let mut e = vec![1u8];
        e.put_u16(s.len() as u16);
        e.extend_from_slice(s.as_bytes());
        self.add(e)
    }

    fn class(&mut self, name: &str) -> u16 {
        let name = self.utf8(name);
        let mut e = vec![7u8];
        e.put_u16(name);
        self.add(e)
    }

    /// A Fieldref (tag 9) or Methodref (tag 10) of `class`.
    fn member(&mut self, tag: u8, class: u16, name: u16, descriptor: u16) -> u16 {
        let mut nt = vec![12u8];
        nt.put_u16(name);
        nt.put_u16(descriptor);
        let nt = self.add(nt);
        let mut e = vec![tag];
        e.put_u16(class);
        e.put_u16(nt);
        self.add(e)
    }
}

/// Builds the hooks class for `hooks`: every hook method as `public static native`, except
/// `enter`, `exit`, `unwind`, `exitBlocks`, `unwindBlocks`, `enterInRoot`, `exitInRoot`, `site`
/// and `receiver` (see the
/// module's doc), the natives those call, and the static fields `active`, `fired`, `seen` and
/// `dropped`.
pub fn hooks_class(hooks: &Hooks) -> Vec<u8> {
    let mut pool = Pool::default();
    let this_class = pool.class(&hooks.class);
    let super_class = pool.class("java/lang/Object");
    let int_void = pool.utf8("(I)V");
    let enter0 = (pool.utf8(ENTER_NATIVE), int_void);
    let exit0 = (pool.utf8(EXIT_NATIVE), int_void);
    let mut signature = |m: &HookMethod| (pool.utf8(&m.name), pool.utf8(&m.descriptor));
    let receiver_sig = signature(&hooks.receiver);
    let reveal_sig = signature(&hooks.reveal);
    let exit_blocks_sig = signature(&hooks.exit_blocks);
    let unwind_blocks_sig = signature(&hooks.unwind_blocks);
    let exit_blocks0 = (pool.utf8(EXIT_BLOCKS_NATIVE), exit_blocks_sig.1);
    let unwind_blocks0 = (pool.utf8(UNWIND_BLOCKS_NATIVE), unwind_blocks_sig.1);
    let mut signature = |m: &HookMethod| (pool.utf8(&m.name), pool.utf8(&m.descriptor));
    let mut natives = vec![enter0, exit0, exit_blocks0, unwind_blocks0];
    for m in [&hooks.alloc, &hooks.native_enter, &hooks.native_exit] {
        natives.push(signature(m));
    }
    let receiver0 = (pool.utf8(RECEIVER_NATIVE), receiver_sig.1);
    natives.push(receiver0);
    natives.push(reveal_sig);
    let (active_name, int) = (pool.utf8(ACTIVE_FIELD), pool.utf8("I"));
    let (fired_name, bytes_desc) = (pool.utf8(FIRED_FIELD), pool.utf8("[B"));
    let active = pool.member(9, this_class, active_name, int);
    let fired = pool.member(9, this_class, fired_name, bytes_desc);
    let (seen_name, classes_desc) = (pool.utf8(SEEN_FIELD), pool.utf8("[Ljava/lang/Class;"));
    let seen = pool.member(9, this_class, seen_name, classes_desc);
    let get_class = {
        let object = pool.class("java/lang/Object");
        let (name, desc) = (pool.utf8("getClass"), pool.utf8("()Ljava/lang/Class;"));
        pool.member(10, object, name, desc)
    };
    let dropped_name = pool.utf8(DROPPED_FIELD);
    let dropped = pool.member(9, this_class, dropped_name, bytes_desc);
    let enter0_ref = pool.member(10, this_class, enter0.0, enter0.1);
    let exit0_ref = pool.member(10, this_class, exit0.0, exit0.1);
    let receiver = pool.member(10, this_class, receiver0.0, receiver0.1);
    let byte_array = pool.class("[B");
    let in_root = [
        (pool.utf8(ENTER_IN_ROOT), enter0_ref, DropLevel::Enter),
        (pool.utf8(EXIT_IN_ROOT), exit0_ref, DropLevel::Exit),
    ];
    let enter_in_root = pool.member(10, this_class, in_root[0].0, int_void);
    let exit_in_root = pool.member(10, this_class, in_root[1].0, int_void);
    let mut gated = Vec::new();
    for (m, next) in [
        (&hooks.enter, enter_in_root),
        (&hooks.exit, exit_in_root),
        (&hooks.unwind, exit_in_root),
    ] {
        gated.push((pool.utf8(&m.name), pool.utf8(&m.descriptor), next, 1));
    }
    for ((name, desc), native) in [
        (exit_blocks_sig, exit_blocks0),
        (unwind_blocks_sig, unwind_blocks0),
    ] {
        let next = pool.member(10, this_class, native.0, native.1);
        gated.push((name, desc, next, 2));
    }
    let (site_name, site_desc) = (
        pool.utf8(&hooks.site.name),
        pool.utf8(&hooks.site.descriptor),
    );
    let code_name = pool.utf8("Code");
    let frames_name = pool.utf8("StackMapTable");

    let mut b = pool.class_header(768, this_class, super_class);
    b.put_u16(4); // fields
    for (name, desc) in [
        (active_name, int),
        (fired_name, bytes_desc),
        (seen_name, classes_desc),
        (dropped_name, bytes_desc),
    ] {
        b.put_u16(PUBLIC | STATIC);
        b.put_u16(name);
        b.put_u16(desc);
        b.put_u16(0);
    }
    b.put_u16((natives.len() + gated.len() + in_root.len() + 2) as u16);
    for (name, desc) in natives {
        b.put_u16(PUBLIC | STATIC | NATIVE);
        b.put_u16(name);
        b.put_u16(desc);
        b.put_u16(0);
    }
    let java = JavaMethod {
        code_name,
        frames_name,
    };
    // The gate's one frame: at GATE_SLOW_AT, the entry frame (locals [int] or [int, int]) and
    // an empty stack (same_frame).
    let gate_frames = [0, 1, GATE_SLOW_AT as u8];
    for (name, desc, next, args) in gated {
        java.write(
            &mut b,
            name,
            desc,
            &gate_code(active, next, args),
            args,
            &gate_frames,
        );
    }
    for (name, native, level) in in_root {
        let code = in_root_code(dropped, native, level);
        let slow_at = in_root_slow_at(level);
        // At the native call the entry frame again, locals [int] (same_frame): `d`, stored on
        // some paths, is not used there.
        let frames = [0, 1, slow_at as u8];
        java.write(&mut b, name, int_void, &code, 2, &frames);
    }
    // StackMapTable: at SLOW_AT (26) locals [int, byte[]] (append_frame, 1 local); at RETURN_AT
    // (31) locals [int] again (chop_frame of 1, offset_delta 31 - 26 - 1).
    let mut frames = Vec::new();
    frames.put_u16(2);
    frames.push(252);
    frames.put_u16(SLOW_AT);
    frames.push(7); // Object_variable_info
    frames.put_u16(byte_array);
    frames.push(250);
    frames.put_u16(RETURN_AT - SLOW_AT - 1);
    let site = site_code(active, fired, receiver);
    java.write(&mut b, site_name, site_desc, &site, 2, &frames);
    // Both branch targets have the entry frame, locals [Object, int] (same_frame, twice).
    let frames = [
        0,
        2,
        RECEIVER_SLOW_AT as u8,
        (RECEIVER_RETURN_AT - RECEIVER_SLOW_AT - 1) as u8,
    ];
    let code = receiver_code(active, seen, get_class, receiver);
    java.write(&mut b, receiver_sig.0, receiver_sig.1, &code, 3, &frames);
    b.put_u16(0); // class attributes
    b
}

/// Pool indices shared by the Java-bodied methods.
struct JavaMethod {
    code_name: u16,
    frames_name: u16,
}

impl JavaMethod {
    /// A `public static` method with `code`, `locals` local slots (and as many stack slots, which
    /// suffices for these bodies) and a StackMapTable of `frames` (its entry count included).
    fn write(
        &self,
        b: &mut Vec<u8>,
        name: u16,
        desc: u16,
        code: &[u8],
        locals: u16,
        frames: &[u8],
    ) {
        b.put_u16(PUBLIC | STATIC);
        b.put_u16(name);
        b.put_u16(desc);
        b.put_u16(1); // attributes: Code
        b.put_u16(self.code_name);
        b.put_u32((2 + 2 + 4 + code.len() + 2 + 2 + 2 + 4 + frames.len()) as u32);
        b.put_u16(locals); // max_stack
        b.put_u16(locals); // max_locals
        b.put_u32(code.len() as u32);
        b.extend_from_slice(code);
        b.put_u16(0); // exception table
        b.put_u16(1); // attributes: StackMapTable
        b.put_u16(self.frames_name);
        b.put_u32(frames.len() as u32);
        b.extend_from_slice(frames);
    }
}

/// The operand bytes of a branch at `from` to `target`: offsets are relative to the branching
/// instruction.
fn to(from: u16, target: u16) -> [u8; 2] {
    target.wrapping_sub(from).to_be_bytes()
}

/// Offset of the native call in [`gate_code`].
const GATE_SLOW_AT: u16 = 11;

/// The body of `enter`, `exit` and `unwind` (`args` 1), `exitBlocks` and `unwindBlocks` (`args`
/// 2: the id, then the bytecodes, passed on), with the pool indices of `active` and of the
/// method it calls inside a root.
fn gate_code(active: u16, next: u16, args: u16) -> Vec<u8> {
    let [ah, al] = active.to_be_bytes();
    let [nh, nl] = next.to_be_bytes();
    let [s3h, s3l] = to(3, GATE_SLOW_AT);
    let [s7h, s7l] = to(7, GATE_SLOW_AT);
    #[rustfmt::skip]
    let mut code = vec![
        GETSTATIC, ah, al,      // 0: active
        IFNE, s3h, s3l,         // 3: some thread inside a root: the agent decides
        ILOAD_0,                // 6
        IFLT, s7h, s7l,         // 7: a root or a region: the agent decides
        RETURN,                 // 10: outside every root
        ILOAD_0,                // 11: GATE_SLOW_AT
    ];
    if args == 2 {
        code.push(ILOAD_1);
    }
    code.extend([INVOKESTATIC, nh, nl, RETURN]);
    debug_assert_eq!(code[GATE_SLOW_AT as usize], ILOAD_0);
    code
}

/// Which probe an `…InRoot` body serves: the level of `dropped[id]` at which it returns in Java.
#[derive(Clone, Copy)]
enum DropLevel {
    /// Returns at any level (1 or 2).
    Enter,
    /// Returns at level 2 and above.
    Exit,
}

/// Appends the load of `flags[arg 0]` from the static `byte[]` field `field`, via local 1 (17
/// bytes): branches to `slow` when the array is null or the index beyond it (an index is never
/// negative here), else leaves the element on the stack.
fn push_flag_load(code: &mut Vec<u8>, field: u16, slow: u16) {
    let at = code.len() as u16;
    let [fh, fl] = field.to_be_bytes();
    let [nh, nl] = to(at + 5, slow);
    let [bh, bl] = to(at + 11, slow);
    #[rustfmt::skip]
    code.extend([
        GETSTATIC, fh, fl,      // +0: the array
        ASTORE_1,               // +3
        ALOAD_1,                // +4
        IFNULL, nh, nl,         // +5
        ILOAD_0,                // +8
        ALOAD_1,                // +9
        ARRAYLENGTH,            // +10
        IF_ICMPGE, bh, bl,      // +11
        ALOAD_1,                // +14
        ILOAD_0,                // +15
        BALOAD,                 // +16
    ]);
}

/// Offset of the native call in [`in_root_code`].
fn in_root_slow_at(level: DropLevel) -> u16 {
    match level {
        DropLevel::Enter => 25,
        DropLevel::Exit => 26,
    }
}

/// The body of `enterInRoot` or `exitInRoot` (see the module's doc), with the pool indices of
/// `dropped` and of the native it calls.
fn in_root_code(dropped: u16, native: u16, level: DropLevel) -> Vec<u8> {
    let slow = in_root_slow_at(level);
    let [nh, nl] = native.to_be_bytes();
    let [s1h, s1l] = to(1, slow);
    #[rustfmt::skip]
    let mut code = vec![
        ILOAD_0,                // 0
        IFLT, s1h, s1l,         // 1: a root or a region: never dropped
    ];
    push_flag_load(&mut code, dropped, slow); // 4: dropped[id]
    match level {
        DropLevel::Enter => {
            let [h, l] = to(21, slow);
            code.extend([IFEQ, h, l]); // 21: not dropped: the agent records
        }
        DropLevel::Exit => {
            let [h, l] = to(22, slow);
            code.extend([ICONST_2, IF_ICMPLT, h, l]); // 21: below 2: the agent decides
        }
    }
    code.push(RETURN); // dropped: return
    debug_assert_eq!(code.len(), slow as usize);
    code.extend([ILOAD_0, INVOKESTATIC, nh, nl, RETURN]);
    code
}

/// Offsets of the slow path (the native call) and of the `return` in [`site_code`].
const SLOW_AT: u16 = 26;
const RETURN_AT: u16 = 31;

/// The body of `site(int)` (see the module's doc), with the pool indices of the fields and of
/// the native `receiver(Object, int)`.
fn site_code(active: u16, fired: u16, receiver: u16) -> Vec<u8> {
    let [ah, al] = active.to_be_bytes();
    let [rh, rl] = receiver.to_be_bytes();
    let [r3h, r3l] = to(3, RETURN_AT);
    let [r23h, r23l] = to(23, RETURN_AT);
    #[rustfmt::skip]
    let mut code = vec![
        GETSTATIC, ah, al,      // 0: active
        IFEQ, r3h, r3l,         // 3: outside every root: return
    ];
    push_flag_load(&mut code, fired, SLOW_AT); // 6: fired[site]
    #[rustfmt::skip]
    code.extend([
        IFNE, r23h, r23l,       // 23: fired: return
        ACONST_NULL,            // 26: SLOW_AT
        ILOAD_0,                // 27
        INVOKESTATIC, rh, rl,   // 28: receiver(null, site)
        RETURN,                 // 31: RETURN_AT
    ]);
    debug_assert_eq!(
        (code[SLOW_AT as usize], code[RETURN_AT as usize]),
        (ACONST_NULL, RETURN)
    );
    code
}

/// Offsets of the native call and of the `return` in [`receiver_code`].
const RECEIVER_SLOW_AT: u16 = 38;
const RECEIVER_RETURN_AT: u16 = 43;

/// The body of `receiver(Object, int)` (see the module's doc), with the pool indices of the
/// fields, of `Object.getClass()` and of the native `receiver0`.
fn receiver_code(active: u16, seen: u16, get_class: u16, native: u16) -> Vec<u8> {
    let [ah, al] = active.to_be_bytes();
    let [sh, sl] = seen.to_be_bytes();
    let [gh, gl] = get_class.to_be_bytes();
    let [nh, nl] = native.to_be_bytes();
    let [r3h, r3l] = to(3, RECEIVER_RETURN_AT);
    let [s7h, s7l] = to(7, RECEIVER_SLOW_AT);
    let [s11h, s11l] = to(11, RECEIVER_SLOW_AT);
    let [s19h, s19l] = to(19, RECEIVER_SLOW_AT);
    let [s25h, s25l] = to(25, RECEIVER_SLOW_AT);
    let [r35h, r35l] = to(35, RECEIVER_RETURN_AT);
    #[rustfmt::skip]
    let code = vec![
        GETSTATIC, ah, al,          // 0: active
        IFEQ, r3h, r3l,             // 3: outside every root: return
        ALOAD_0,                    // 6
        IFNULL, s7h, s7l,           // 7: on null (about to throw): the agent decides
        ILOAD_1,                    // 10
        IFLT, s11h, s11l,           // 11: `Thread.start`'s site (-1): the agent's
        GETSTATIC, sh, sl,          // 14: seen
        ASTORE_2,                   // 17
        ALOAD_2,                    // 18
        IFNULL, s19h, s19l,         // 19
        ILOAD_1,                    // 22
        ALOAD_2,                    // 23
        ARRAYLENGTH,                // 24
        IF_ICMPGE, s25h, s25l,      // 25
        ALOAD_2,                    // 28
        ILOAD_1,                    // 29
        AALOAD,                     // 30
        ALOAD_0,                    // 31
        INVOKEVIRTUAL, gh, gl,      // 32: o.getClass()
        IF_ACMPEQ, r35h, r35l,      // 35: seen here: return
        ALOAD_0,                    // 38: RECEIVER_SLOW_AT
        ILOAD_1,                    // 39
        INVOKESTATIC, nh, nl,       // 40: receiver0(o, site)
        RETURN,                     // 43: RECEIVER_RETURN_AT
    ];
    debug_assert_eq!(
        (
            code[RECEIVER_SLOW_AT as usize],
            code[RECEIVER_RETURN_AT as usize]
        ),
        (ALOAD_0, RETURN)
    );
    code
}

/// The native `(I)V` that the Java body of `nativeEnter` calls in [`native_hooks_class`].
pub const NATIVE_ENTER_NATIVE: &str = "nativeEnter0";
/// The native `(I)V` that the Java body of `nativeExit` calls in [`native_hooks_class`].
pub const NATIVE_EXIT_NATIVE: &str = "nativeExit0";

/// Builds the class of the `native` probe's hooks, [`Hooks::native_class`]: `nativeEnter` and
/// `nativeExit` with Java bodies that call the agent only while it records, the natives they
/// call, and the static field [`ACTIVE_FIELD`]:
///
/// ```java
/// public final class NativeHooks {
///     public static int active;   // nonzero while the agent records; 0 before and after
///     public static void nativeEnter(int id) { if (active != 0) nativeEnter0(id); }
///     public static void nativeExit(int id) { if (active != 0) nativeExit0(id); }
///     public static native void nativeEnter0(int id);
///     public static native void nativeExit0(int id);
/// }
/// ```
///
/// Wrappers are added as classes first load, from the primordial phase on, and stay after the
/// agent detaches: this class must be found by the boot loader before the agent can bind natives
/// (so the gate keeps unbound natives from being called until it set `active`), and its bodies
/// leave an inert wrapper one field read and a branch (11 bytes, inlined by both compilers).
pub fn native_hooks_class(hooks: &Hooks) -> Vec<u8> {
    let mut pool = Pool::default();
    let this_class = pool.class(&hooks.native_class);
    let super_class = pool.class("java/lang/Object");
    let (active_name, int) = (pool.utf8(ACTIVE_FIELD), pool.utf8("I"));
    let active = pool.member(9, this_class, active_name, int);
    let mut gates = Vec::new();
    let mut natives = Vec::new();
    for (hook, native) in [
        (&hooks.native_enter, NATIVE_ENTER_NATIVE),
        (&hooks.native_exit, NATIVE_EXIT_NATIVE),
    ] {
        let desc = pool.utf8(&hook.descriptor);
        let native_name = pool.utf8(native);
        let target = pool.member(10, this_class, native_name, desc);
        gates.push((pool.utf8(&hook.name), desc, target));
        natives.push((native_name, desc));
    }
    let code_name = pool.utf8("Code");
    let frames_name = pool.utf8("StackMapTable");

    let mut b = pool.class_header(320, this_class, super_class);
    b.put_u16(1); // fields
    b.put_u16(PUBLIC | STATIC);
    b.put_u16(active_name);
    b.put_u16(int);
    b.put_u16(0);
    b.put_u16((gates.len() + natives.len()) as u16);
    for (name, desc) in natives {
        b.put_u16(PUBLIC | STATIC | NATIVE);
        b.put_u16(name);
        b.put_u16(desc);
        b.put_u16(0);
    }
    let java = JavaMethod {
        code_name,
        frames_name,
    };
    let [ah, al] = active.to_be_bytes();
    for (name, desc, target) in gates {
        let [th, tl] = target.to_be_bytes();
        #[rustfmt::skip]
        let code = [
            GETSTATIC, ah, al,      // 0: active
            IFEQ, 0, 7,             // 3: not recording: to 10
            ILOAD_0,                // 6
            INVOKESTATIC, th, tl,   // 7
            RETURN,                 // 10
        ];
        // At 10 the entry frame, locals [int], empty stack (same_frame).
        java.write(&mut b, name, desc, &code, 1, &[0, 1, 10]);
    }
    b.put_u16(0); // class attributes
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClassFile;

    #[test]
    fn hooks_class_parses_with_natives_then_java_bodies() {
        let hooks = Hooks::default();
        let bytes = hooks_class(&hooks);
        let c = ClassFile::parse(&bytes).unwrap();
        assert_eq!(c.name().unwrap(), "ferrofluid/Hooks");
        assert_eq!(c.methods.len(), 18);
        for m in &c.methods[..9] {
            assert_eq!(m.access, 0x0109);
        }
        for m in &c.methods[9..] {
            assert_eq!(m.access, 0x0009);
        }
        assert_eq!(c.fields.len(), 4);
        let names: Vec<_> = c
            .methods
            .iter()
            .map(|m| m.name(&c.constant_pool).unwrap().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "enter0",
                "exit0",
                "exitBlocks0",
                "unwindBlocks0",
                "alloc",
                "nativeEnter",
                "nativeExit",
                "receiver0",
                "reveal",
                "enter",
                "exit",
                "unwind",
                "exitBlocks",
                "unwindBlocks",
                "enterInRoot",
                "exitInRoot",
                "site",
                "receiver"
            ]
        );
    }
}
