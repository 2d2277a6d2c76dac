//! What a method handle invoked at a handle site inside a root will run (the planner's
//! `is_handle_site`: `MethodHandle.invokeExact`/`invoke`). A direct handle names its method in
//! its `member`; a bound or adapted one (`bindTo`, `insertArguments`, `filterReturnValue`,
//! `asType`, `asVarargsCollector`...) holds the handles it adapts in its own fields (a
//! `BoundMethodHandle` species' `argL0`..., a `DelegatingMethodHandle`'s `target`), so the
//! agent walks those fields down to the direct handles and reveals every method they name:
//! the target, filters and converters alike. Fields are read with JNI and JVMTI only; no Java
//! code runs. A handle walked in this session carries a JVMTI tag naming the session, and so
//! does each `MemberName` revealed, so a handle invoked again costs one `GetTag`.
//!
//! Not followed: handles held in arrays or other objects (loops' clauses, `guardWithTest` with
//! a `MutableCallSite`): their targets are seen when something else reveals them.

use std::sync::atomic::Ordering;

use ferrofluid_jvmti::{Class, JniEnv, Jvmti, Object};

/// At most this many handles are walked per invocation: adapter chains are a few deep, and a
/// handle site must cost a bounded time however a program builds its handles.
const MOST_HANDLES: usize = 32;

const METHOD_HANDLE: &str = "Ljava/lang/invoke/MethodHandle;";
const MEMBER_NAME: &str = "Ljava/lang/invoke/MemberName;";

/// `handle` is about to be invoked at a handle site on a thread inside a root: the methods it
/// runs are revealed unless this session did already.
pub fn invoked<'a>(jvmti: Jvmti, jni: &JniEnv<'a>, handle: Object<'a>) {
    // Receiver classes are tagged from 1 up: negative tags cannot collide with them.
    let done = -1
        - i64::from(
            crate::probe::thread::SWITCHES
                .generation
                .load(Ordering::Acquire),
        );
    if jvmti.tag(handle).ok() == Some(done) {
        return;
    }
    let mut to_walk = vec![handle];
    let mut walked = 0;
    while let Some(h) = to_walk.pop() {
        if walked < MOST_HANDLES && (walked == 0 || jvmti.tag(h).ok() != Some(done)) {
            walked += 1;
            for held in held_by(jvmti, jni, h) {
                match held {
                    Held::Member(member) => {
                        if jvmti.tag(member).ok() != Some(done) {
                            crate::runtime::reveal::reveal_member(jni, member);
                            let _ = jvmti.set_tag(member, done);
                        }
                        jni.delete_local_ref(member);
                    }
                    Held::Handle(inner) => to_walk.push(inner),
                }
            }
            let _ = jvmti.set_tag(h, done);
        }
        if h != handle {
            jni.delete_local_ref(h);
        }
    }
}

/// What a handle holds that says what it runs.
enum Held<'a> {
    /// A direct handle's method (`DirectMethodHandle.member`, or a constructor handle's
    /// `initMethod`).
    Member(Object<'a>),
    /// A handle it adapts or delegates to.
    Handle(Object<'a>),
}

/// The `MemberName`s and handles in the instance fields `handle`'s class and its superclasses
/// declare below `java.lang.invoke.MethodHandle` (whose own fields are caches of handles made
/// from this one, not what it runs). Empty if anything cannot be read.
fn held_by<'a>(jvmti: Jvmti, jni: &JniEnv<'a>, handle: Object<'_>) -> Vec<Held<'a>> {
    let mut held = Vec::new();
    let Ok(mut class) = jni.object_class(handle) else {
        return held;
    };
    let mut below = Vec::new();
    // The class chain: its classes are few (a species, BoundMethodHandle, MethodHandle).
    let method_handle = loop {
        match jvmti.class_signature(class) {
            Ok((sig, _)) if sig == METHOD_HANDLE => break Some(class),
            Ok(_) => {}
            Err(_) => break None,
        }
        below.push(class);
        match jni.superclass(class) {
            Some(superclass) => class = superclass,
            None => break None,
        }
    };
    if let Some(method_handle) = method_handle {
        for &declaring in &below {
            read_fields(jvmti, jni, handle, declaring, method_handle, &mut held);
        }
        jni.delete_local_ref(method_handle.as_object());
    }
    for c in below {
        jni.delete_local_ref(c.as_object());
    }
    held
}

fn read_fields<'a>(
    jvmti: Jvmti,
    jni: &JniEnv<'a>,
    handle: Object<'_>,
    declaring: Class<'_>,
    method_handle: Class<'_>,
    held: &mut Vec<Held<'a>>,
) {
    // A species keeps bound values in `Object` fields, a delegating handle its target in a
    // `MethodHandle` one; anything else is no handle (or, like a MemberName, not one field of
    // those types).
    let wanted = |f: &ferrofluid_jvmti::Field| {
        f.signature == MEMBER_NAME
            || f.signature == METHOD_HANDLE
            || f.signature == "Ljava/lang/Object;"
    };
    let Ok(values) = jvmti.reference_fields(jni, handle, declaring, wanted) else {
        return;
    };
    for (field, value) in values {
        if field.signature == MEMBER_NAME {
            held.push(Held::Member(value));
        } else if jni.is_instance_of(value, method_handle) {
            held.push(Held::Handle(value));
        } else {
            jni.delete_local_ref(value);
        }
    }
}
