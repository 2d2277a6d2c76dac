//! Global and weak references, typed static fields, typed calls and the JVMTI cell against a real JVM
//! created in this process (the harness of `live_jvm.rs`, one JVM per test binary).

#![allow(unsafe_code)] // this test plays the JVM's side of the FFI boundary

use std::ffi::{c_void, CString};
use std::sync::OnceLock;

use ferrofluid_jvmti::{sys, JavaVm, JniEnv, Jvmti, JvmtiCell, Primitive};

/// `$JAVA_HOME/lib/server/libjvm.so`, by default the JDK 17 these bindings were generated from.
fn libjvm() -> String {
    ferrofluid_testkit::java_home()
        .join("lib/server/libjvm.so")
        .display()
        .to_string()
}

type CreateJavaVm =
    unsafe extern "C" fn(*mut *mut sys::JavaVM, *mut *mut c_void, *mut c_void) -> sys::jint;

/// One JVM per process (HotSpot allows no second one), created on a thread that then parks forever so
/// the creating thread never exits while attached.
fn vm() -> JavaVm {
    static VM: OnceLock<JavaVm> = OnceLock::new();
    *VM.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let path = CString::new(libjvm()).unwrap();
            // SAFETY: dlopen/dlsym of the JDK's libjvm with a valid path and symbol name.
            let create: CreateJavaVm = unsafe {
                let lib = libc::dlopen(path.as_ptr(), libc::RTLD_NOW);
                assert!(!lib.is_null(), "cannot load {}", libjvm());
                let sym = libc::dlsym(lib, c"JNI_CreateJavaVM".as_ptr());
                assert!(!sym.is_null());
                std::mem::transmute::<*mut c_void, CreateJavaVm>(sym)
            };
            // -Xrs: leave SIGQUIT etc. to the test harness.
            let opt = CString::new("-Xrs").unwrap();
            let mut options = [sys::JavaVMOption {
                optionString: opt.as_ptr().cast_mut(),
                extraInfo: std::ptr::null_mut(),
            }];
            let mut args = sys::JavaVMInitArgs {
                version: sys::JNI_VERSION_1_8 as sys::jint,
                nOptions: 1,
                options: options.as_mut_ptr(),
                ignoreUnrecognized: 0,
            };
            let (mut jvm, mut env) = (std::ptr::null_mut(), std::ptr::null_mut());
            // SAFETY: arguments laid out as jni.h requires, alive during the call.
            let rc = unsafe {
                create(
                    &mut jvm,
                    &mut env,
                    (&mut args as *mut sys::JavaVMInitArgs).cast(),
                )
            };
            assert_eq!(rc, 0, "JNI_CreateJavaVM");
            // SAFETY: the pointer JNI_CreateJavaVM returned.
            tx.send(unsafe { JavaVm::from_raw(jvm) }.unwrap()).unwrap();
            loop {
                std::thread::park();
            }
        });
        rx.recv().unwrap()
    })
}

/// Runs `f` on this test's thread attached to the JVM.
fn with_env(name: &str, f: impl FnOnce(Jvmti, &JniEnv<'_>)) {
    let vm = vm();
    let env = vm.attach_current_thread_as_daemon(name).unwrap();
    let jvmti = vm.jvmti().unwrap();
    f(jvmti, &env);
    jvmti.dispose().unwrap();
    // SAFETY: nothing of this thread's JNI frame is used after this point.
    unsafe { vm.detach_current_thread() }.unwrap();
}

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
