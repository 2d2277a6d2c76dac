//! Global and weak references, typed static fields, typed calls and the JVMTI cell against a real JVM
//! created in this process (`common`: one JVM per test binary).

#![allow(unsafe_code)] // this test plays the JVM's side of the FFI boundary

use ferrofluid_jvmti::{sys, JvmtiCell, Primitive};

mod common;
use common::{vm, with_env};

#[test]
fn global_references_outlive_their_frame_and_thread() {
    let vm = vm();
    let (global, weak) = {
        let mut made = None;
        with_env("make-refs", |_, env| {
            let s = env.new_string_utf("kept").unwrap();
            let global = env.new_global(s).unwrap();
            let weak = env.new_weak(s).unwrap();
            assert!(weak.is(env, Some(s)));
            assert!(!weak.is(env, None));
            env.delete_local_ref(s);
            made = Some((global, weak));
        });
        made.unwrap()
    };
    // Another thread, another frame: both still name the string.
    let other = std::thread::spawn(move || {
        vm.with_attached_thread("use-refs", |env| {
            assert_eq!(env.string_utf(global.as_local()).unwrap(), "kept");
            let up = weak.upgrade(env).expect("the global keeps it alive");
            assert_eq!(env.string_utf(up).unwrap(), "kept");
            assert!(weak.is(env, Some(global.as_local())));
            env.delete_local_ref(up);
            global.delete(env);
            weak.delete(env);
        })
        .unwrap();
    });
    other.join().unwrap();
    // Dropped on a detached thread: kept for the JVM, no panic.
    let dropped = std::thread::spawn(move || {
        let class = vm
            .with_attached_thread("class-ref", |env| {
                let c = env.find_class("java/lang/String").unwrap();
                env.new_global(c).unwrap()
            })
            .unwrap();
        drop(class);
    });
    dropped.join().unwrap();
    // Dropped on an attached thread: deleted through GetEnv.
    with_env("drop-refs", |jvmti, env| {
        let c = env.find_class("java/lang/Thread").unwrap();
        let global = env.new_global(c).unwrap();
        let weak = env.new_weak(c).unwrap();
        env.delete_local_ref(c.as_object());
        assert_eq!(
            jvmti.class_signature(global.as_local()).unwrap().0,
            "Ljava/lang/Thread;"
        );
        let up = weak.upgrade(env).unwrap();
        assert_eq!(jvmti.class_signature(up).unwrap().0, "Ljava/lang/Thread;");
        env.delete_local_ref(up.as_object());
        assert!(env.java_vm().unwrap().as_raw() == vm.as_raw());
        drop((global, weak));
    });
}

#[test]
fn static_fields_are_typed_and_checked() {
    with_env("statics", |_, env| {
        let bytes = ferrofluid_classfile::hooks_class(&ferrofluid_classfile::Hooks::default());
        let hooks = env.define_class("ferrofluid/Hooks", None, &bytes).unwrap();
        let active = env.static_int_field(hooks, c"active").unwrap();
        assert_eq!(active.get(env).unwrap(), 0);
        active.set(env, 1).unwrap();
        assert_eq!(active.get(env).unwrap(), 1);
        assert!(env.static_int_field(hooks, c"fired").is_err(), "not an int");
        assert!(env.static_int_field(hooks, c"no_such").is_err());

        let fired = env.static_object_field(hooks, c"fired", c"[B").unwrap();
        assert!(fired.get(env).unwrap().is_none());
        let array = env.new_byte_array(4, &[0, 1]).unwrap();
        fired.set(env, Some(array)).unwrap();
        let read = fired.get(env).unwrap().unwrap();
        env.set_byte_array_region(read, 2, &[7]).unwrap();
        env.delete_local_ref(read);
        let not_bytes = env.new_string_utf("no").unwrap();
        assert!(fired.set(env, Some(not_bytes)).is_err(), "type checked");
        assert!(fired.get(env).unwrap().is_some(), "left as it was");
        fired.set(env, None).unwrap();
        assert!(fired.get(env).unwrap().is_none());

        let seen = env
            .static_object_field(hooks, c"seen", c"[Ljava/lang/Class;")
            .unwrap();
        let class_class = env.find_class("java/lang/Class").unwrap();
        let classes = env.new_object_array(2, class_class).unwrap();
        seen.set(env, Some(classes)).unwrap();
        assert!(
            seen.set(env, Some(array)).is_err(),
            "a byte[] is no Class[]"
        );
        assert!(env.static_object_field(hooks, c"fired", c"I").is_err());
        for o in [array, not_bytes, classes, class_class.as_object()] {
            env.delete_local_ref(o);
        }
    });
}

#[test]
fn typed_calls_check_their_descriptors() {
    with_env("calls", |jvmti, env| {
        let integer = env.find_class("java/lang/Integer").unwrap();
        let widened = env
            .call_static_long_method(integer, c"toUnsignedLong", c"(I)J", &[Primitive::Int(-1)])
            .unwrap();
        assert_eq!(widened, 0xffff_ffff);
        assert!(env
            .call_static_long_method(integer, c"toUnsignedLong", c"(I)J", &[Primitive::Long(1)])
            .is_err());
        assert!(env
            .call_static_long_method(integer, c"parseInt", c"(Ljava/lang/String;)I", &[])
            .is_err());
        let s = env.new_string_utf("x").unwrap();
        let class = env.call_class_method(s, c"getClass").unwrap().unwrap();
        assert_eq!(
            jvmti.class_signature(class).unwrap().0,
            "Ljava/lang/String;"
        );
        for o in [s, class.as_object(), integer.as_object()] {
            env.delete_local_ref(o);
        }
    });
}

#[test]
fn a_cell_keeps_an_environment() {
    static CELL: JvmtiCell = JvmtiCell::new();
    with_env("cell", |jvmti, _| {
        CELL.set(Some(jvmti));
        assert_eq!(CELL.get(), Some(jvmti));
        assert_eq!(CELL.get().unwrap().phase().unwrap(), sys::JVMTI_PHASE_LIVE);
        CELL.set(None);
        assert_eq!(CELL.get(), None);
    });
}
