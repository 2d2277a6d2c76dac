//! Revelation of calls static analysis cannot see: reflection, method handles and native code
//! calling into Java. Each is caught just before the call, on the calling thread, and only
//! inside a root's dynamic extent; the target is handed to the planner (`Planner::reveal`) and
//! its class retransformed synchronously, as lazy revelation does at a first invocation, so
//! the target's first call is already recorded.
//!
//! - Reflection: `Method.invoke` and `Constructor.newInstanceWithCaller` (behind
//!   `Constructor.newInstance` and `Class.newInstance`) get a `reveal` probe passing their
//!   receiver; the native turns it into a method ID with JNI `FromReflectedMethod`, or, while
//!   the target's class is not initialised (`FromReflectedMethod` would run its initialiser
//!   here), reads its name and descriptor from the receiver's fields.
//! - Static initialisers reflection runs: `Class.forName(name)` and
//!   `Class.forName(name, initialize, loader)` get a probe passing the name
//!   (`Planner::initializing_by_name`), `jdk.internal.misc.Unsafe.ensureClassInitialized`
//!   (behind `Field.get`/`set` of a static field, `Lookup.ensureInitialized` and method handles
//!   on static members) one passing the class, when it is not initialised yet.
//! - Method handles: the constructor of `java.lang.invoke.DirectMethodHandle`, which every
//!   direct method handle (`Lookup.find*`, `unreflect*`, `ldc` constants) goes through, passes
//!   its `MemberName`: the target is revealed when a handle is created inside a root.
//! - Native code: the JNI `Call*Method*`/`NewObject*` wrappers of [`crate::ffi::jni_calls`].
//! - The JVM itself ([`upcalls`]: class loading, `invokedynamic` and constant linkage): no probe,
//!   the session follows these methods from its start like call sites (`Planner::follow_upcall`).
//!
//! Method IDs already handled in this session are remembered, so a repeated reflective or JNI
//! call inside a root costs one set lookup (a lock held only for it).

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

use ferrofluid_classfile::MethodSite;
use ferrofluid_jvmti::{sys, Class, JniEnv, MethodId, Object};

use ferrofluid_subgraph::{CallKind, CallSite};

/// `Hooks.reveal` kinds: what the gateway passes.
const METHOD: i32 = 1;
const MEMBER_NAME: i32 = 2;
const CONSTRUCTOR: i32 = 3;
const CLASS_NAME: i32 = 4;
pub const CLASS: i32 = 5;

/// Gateway methods of the bootstrap loader: class, name, descriptor, the local passed, kind.
const GATEWAYS: [(&str, &str, &str, u16, i32); 6] = [
    (
        "java/lang/reflect/Method",
        "invoke",
        "(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;",
        0,
        METHOD,
    ),
    (
        "java/lang/reflect/Constructor",
        "newInstanceWithCaller",
        "([Ljava/lang/Object;ZLjava/lang/Class;)Ljava/lang/Object;",
        0,
        CONSTRUCTOR,
    ),
    (
        "java/lang/invoke/DirectMethodHandle",
        "<init>",
        "(Ljava/lang/invoke/MethodType;Ljava/lang/invoke/LambdaForm;Ljava/lang/invoke/MemberName;Z)V",
        3,
        MEMBER_NAME,
    ),
    (
        "java/lang/Class",
        "forName",
        "(Ljava/lang/String;)Ljava/lang/Class;",
        0,
        CLASS_NAME,
    ),
    (
        "java/lang/Class",
        "forName",
        "(Ljava/lang/String;ZLjava/lang/ClassLoader;)Ljava/lang/Class;",
        0,
        CLASS_NAME,
    ),
    // Where the JDK initialises a class for reflection on its static fields (the field
    // accessor factory), for `Lookup.ensureInitialized`, and for method handles on static
    // members (`DirectMethodHandle.ensureInitialized`).
    (
        "jdk/internal/misc/Unsafe",
        "ensureClassInitialized",
        "(Ljava/lang/Class;)V",
        1,
        CLASS,
    ),
];

/// Methods the JVM calls itself on a thread inside a root, named by no call site (bootstrap
/// loader): kind, class, name, descriptor. The session follows them like call sites
/// (`Planner::follow_upcall`).
///
/// - `ClassLoader.loadClass(String)`: resolving a class of a non-bootstrap loader.
/// - `MethodHandleNatives`' up-calls (HotSpot's `vmSymbols`): `linkCallSite` links an
///   `invokedynamic` (lambdas, string concatenation: the bootstrap method, spinning a class),
///   `linkDynamicConstant` a dynamic constant, `linkMethodHandleConstant` and
///   `findMethodHandleType` resolve method-handle and method-type constants (bootstrap
///   methods and their arguments among them), `linkMethod` links a signature-polymorphic call
///   (`MethodHandle.invokeExact`, `VarHandle.get`). JDK 17 passes the first two a constant-pool
///   index (an `int`), JDK 25 does not: both descriptors are listed (the one a JDK lacks
///   chooses nothing).
const UPCALLS: [(CallKind, &str, &str, &str); 8] = [
    (
        CallKind::Virtual,
        "java/lang/ClassLoader",
        "loadClass",
        "(Ljava/lang/String;)Ljava/lang/Class;",
    ),
    (
        CallKind::Static,
        MH_NATIVES,
        "linkCallSite",
        "(Ljava/lang/Object;ILjava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/invoke/MemberName;",
    ),
    (
        CallKind::Static,
        MH_NATIVES,
        "linkCallSite",
        "(Ljava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/invoke/MemberName;",
    ),
    (
        CallKind::Static,
        MH_NATIVES,
        "linkDynamicConstant",
        "(Ljava/lang/Object;ILjava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;",
    ),
    (
        CallKind::Static,
        MH_NATIVES,
        "linkDynamicConstant",
        "(Ljava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;",
    ),
    (
        CallKind::Static,
        MH_NATIVES,
        "linkMethodHandleConstant",
        "(Ljava/lang/Class;ILjava/lang/Class;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/invoke/MethodHandle;",
    ),
    (
        CallKind::Static,
        MH_NATIVES,
        "findMethodHandleType",
        "(Ljava/lang/Class;[Ljava/lang/Class;)Ljava/lang/invoke/MethodType;",
    ),
    (
        CallKind::Static,
        MH_NATIVES,
        "linkMethod",
        "(Ljava/lang/Class;ILjava/lang/Class;Ljava/lang/String;Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/invoke/MemberName;",
    ),
];

const MH_NATIVES: &str = "java/lang/invoke/MethodHandleNatives";

/// The up-calls to follow, as call sites.
pub fn upcalls() -> impl Iterator<Item = CallSite<'static>> {
    UPCALLS
        .iter()
        .map(|&(kind, class, name, descriptor)| CallSite::new(kind, class, name, descriptor))
}

/// Internal names of the classes with gateways (all defined by the bootstrap loader).
pub fn gateway_classes() -> impl Iterator<Item = &'static str> {
    GATEWAYS.iter().map(|g| g.0)
}

/// The local and kind of a gateway method, for `instrument_reveal`.
pub fn gateway(m: &MethodSite<'_>) -> Option<(u16, u32)> {
    GATEWAYS
        .iter()
        .find(|g| (g.0, g.1, g.2) == (m.class, m.name, m.descriptor))
        .map(|g| (g.3, g.4 as u32))
}

/// Method IDs revealed (or found not revealable) under the instrumentation generation kept
/// with them (a new session, or the end of one, starts over).
static SEEN: Mutex<(u32, Option<HashSet<MethodId>>)> = Mutex::new((0, None));

/// The set of `generation`, emptied if it belonged to an older one.
fn seen(generation: u32) -> MutexGuard<'static, (u32, Option<HashSet<MethodId>>)> {
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if seen.0 != generation {
        *seen = (generation, None);
    }
    seen
}

/// A JNI wrapper or gateway is about to call `mid`. The ID is marked only once revealed: a
/// thread calling it meanwhile reveals it too, and waits for the first (the planner then has
/// nothing to add), so no thread runs the target before it is instrumented.
#[inline]
pub fn method_called(jni: &JniEnv<'_>, mid: MethodId) {
    if !crate::probe::thread::revealing() {
        return;
    }
    let generation = crate::probe::thread::SWITCHES
        .generation
        .load(Ordering::Acquire);
    if seen(generation)
        .1
        .as_ref()
        .is_some_and(|s| s.contains(&mid))
    {
        return;
    }
    crate::probe::thread::agent_work(jni.as_raw(), || reveal_method(jni, mid));
    seen(generation)
        .1
        .get_or_insert_with(HashSet::new)
        .insert(mid);
}

/// `Hooks.reveal(target, kind)` (`ffi::natives::native_reveal`) for every kind but a class's, inside a
/// root's extent.
pub fn revealed(jni: &JniEnv<'_>, target: Object<'_>, kind: i32) {
    match kind {
        METHOD | CONSTRUCTOR => reveal_reflected(jni, target, kind == CONSTRUCTOR),
        MEMBER_NAME => {
            crate::probe::thread::agent_work(jni.as_raw(), || reveal_member(jni, target))
        }
        CLASS_NAME => {
            crate::probe::thread::agent_work(jni.as_raw(), || reveal_class_name(jni, target))
        }
        _ => {}
    }
}

/// A `java.lang.reflect.Method` or `Constructor` about to be invoked. JNI `FromReflectedMethod`
/// initialises the declaring class (HotSpot), which would run its static initialiser here,
/// before it has probes (and even if the invocation then fails its access checks): the target
/// of a class not initialised yet is revealed by its name and descriptor instead, read from the
/// reflective object's fields, so its initialiser is chosen with it and runs, recorded, where
/// reflection runs it. Its method ID is remembered at a later call, the class initialised.
fn reveal_reflected(jni: &JniEnv<'_>, target: Object<'_>, ctor: bool) {
    let Some(jvmti) = crate::runtime::jvm::jvmti() else {
        return;
    };
    let Ok(Some(class)) = jni.class_field(target, c"clazz") else {
        return;
    };
    let done = sys::JVMTI_CLASS_STATUS_INITIALIZED | sys::JVMTI_CLASS_STATUS_ERROR;
    let initialized = jvmti
        .class_status(class)
        .map_or(true, |s| s as u32 & done != 0);
    if initialized {
        if let Ok(mid) = jni.from_reflected_method(target) {
            method_called(jni, mid);
        }
    } else {
        crate::probe::thread::agent_work(jni.as_raw(), || {
            if let Some((name, descriptor)) = reflected_signature(jvmti, jni, target, ctor) {
                crate::runtime::session::reveal(jvmti, jni, class, &name, &descriptor);
            }
        });
    }
    jni.delete_local_ref(class.as_object());
}

/// The name and descriptor of a reflected method or constructor, from its fields (no Java code
/// runs).
fn reflected_signature(
    jvmti: ferrofluid_jvmti::Jvmti,
    jni: &JniEnv<'_>,
    target: Object<'_>,
    ctor: bool,
) -> Option<(String, String)> {
    let signature = |c: Option<Class<'_>>| -> Option<String> {
        let c = c?;
        let sig = jvmti.class_signature(c);
        jni.delete_local_ref(c.as_object());
        sig.ok().map(|(s, _)| s)
    };
    let mut descriptor = String::from("(");
    let mut complete = true;
    match jni.class_array_field(target, c"parameterTypes") {
        Ok(Some(params)) => {
            for p in params {
                match signature(p) {
                    Some(s) => descriptor.push_str(&s),
                    None => complete = false,
                }
            }
        }
        Ok(None) | Err(_) => complete = false,
    }
    descriptor.push(')');
    let name = if ctor {
        descriptor.push('V');
        Some("<init>".to_owned())
    } else {
        match signature(jni.class_field(target, c"returnType").ok().flatten()) {
            Some(s) => descriptor.push_str(&s),
            None => complete = false,
        }
        let name = jni.object_field(target, c"name", c"Ljava/lang/String;");
        name.ok().flatten().and_then(|n| {
            let s = jni.string_utf(n).ok();
            jni.delete_local_ref(n);
            s
        })
    };
    name.filter(|_| complete).map(|n| (n, descriptor))
}

/// `Class.forName(name)` or `Class.forName(name, initialize, loader)`: the classes of that name
/// whose initialiser waits for a use that runs it get it chosen, as reflection may run it now,
/// from native code. The loader and `initialize` are not seen (the gateway passes one local):
/// a class of that name of another loader, or not initialised after all, gets its initialiser
/// instrumented and not called, as one loaded inside a root does. A class not loaded yet gets it
/// when it loads, inside the root.
fn reveal_class_name(jni: &JniEnv<'_>, name: Object<'_>) {
    let Some(jvmti) = crate::runtime::jvm::jvmti() else {
        return;
    };
    if let Ok(name) = jni.string_utf(name) {
        crate::runtime::session::initializing_by_name(jvmti, jni, &name.replace('.', "/"));
    }
}

/// `Unsafe.ensureClassInitialized(class)`: as `Class.forName`, by the class's name, unless it
/// is initialised already (most calls: the JDK asks each time it uses a static member).
pub fn reveal_class(jni: &JniEnv<'_>, class: Class<'_>) {
    let Some(jvmti) = crate::runtime::jvm::jvmti() else {
        return;
    };
    let done = sys::JVMTI_CLASS_STATUS_INITIALIZED | sys::JVMTI_CLASS_STATUS_ERROR;
    if jvmti
        .class_status(class)
        .map_or(true, |s| s as u32 & done != 0)
    {
        return;
    }
    crate::probe::thread::agent_work(jni.as_raw(), || {
        // `Lpkg/Name;` for a class (arrays and primitives have no initialiser to wait).
        if let Ok((signature, _)) = jvmti.class_signature(class) {
            if let Some(name) = signature
                .strip_prefix('L')
                .and_then(|s| s.strip_suffix(';'))
            {
                crate::runtime::session::initializing_by_name(jvmti, jni, name);
            }
        }
    });
}

fn reveal_method(jni: &JniEnv<'_>, mid: MethodId) {
    let Some(jvmti) = crate::runtime::jvm::jvmti() else {
        return;
    };
    let (Ok(class), Ok(name)) = (
        jvmti.method_declaring_class(jni, mid),
        jvmti.method_name(mid),
    ) else {
        return;
    };
    crate::runtime::session::reveal(jvmti, jni, class, &name.name, &name.signature);
    jni.delete_local_ref(class.as_object());
}

/// The method of a `java.lang.invoke.MemberName` (fields are not calls).
pub fn reveal_member(jni: &JniEnv<'_>, member: Object<'_>) {
    let Some(jvmti) = crate::runtime::jvm::jvmti() else {
        return;
    };
    if !jni
        .call_boolean_method(member, c"isInvocable", c"()Z")
        .unwrap_or(false)
    {
        return;
    }
    let object = |o: Object<'_>, name: &std::ffi::CStr, sig: &std::ffi::CStr| {
        jni.call_object_method(o, name, sig).ok().flatten()
    };
    let class = jni
        .call_class_method(member, c"getDeclaringClass")
        .ok()
        .flatten();
    let name = object(member, c"getName", c"()Ljava/lang/String;");
    let mtype = object(member, c"getMethodType", c"()Ljava/lang/invoke/MethodType;");
    let desc = mtype.and_then(|t| object(t, c"toMethodDescriptorString", c"()Ljava/lang/String;"));
    if let (Some(class), Some(name), Some(desc)) = (class, name, desc) {
        if let (Ok(n), Ok(d)) = (jni.string_utf(name), jni.string_utf(desc)) {
            crate::runtime::session::reveal(jvmti, jni, class, &n, &d);
        }
    }
    let class = class.map(Class::as_object);
    for o in [class, name, mtype, desc].into_iter().flatten() {
        jni.delete_local_ref(o);
    }
}
