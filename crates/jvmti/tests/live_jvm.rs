//! The safe layer against a real JVM created in this process (libjvm's `JNI_CreateJavaVM`): every
//! wrapped call is made for real, and results are compared with what the JDK must answer.

#![allow(unsafe_code)] // this test plays the JVM's side of the FFI boundary

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ferrofluid_jvmti::{ffi_guard, sys, Class, Error, JniEnv, Jvmti};

mod common;
use common::{vm, with_env};

#[test]
fn phase_properties_and_typed_errors() {
    with_env("props", |jvmti, _| {
        assert_eq!(jvmti.phase().unwrap(), sys::JVMTI_PHASE_LIVE);
        assert_eq!(
            jvmti
                .system_property("java.vm.specification.version")
                .unwrap(),
            "17"
        );
        let err = jvmti.system_property("no.such.property").unwrap_err();
        assert_eq!(
            err,
            Error::Jvmti {
                function: "GetSystemProperty",
                code: sys::JVMTI_ERROR_NOT_AVAILABLE
            }
        );
        assert_eq!(
            err.to_string(),
            "JVMTI GetSystemProperty failed: JVMTI_ERROR_NOT_AVAILABLE (98)"
        );
        assert_eq!(
            jvmti.system_property("a\0b").unwrap_err(),
            Error::Nul {
                function: "GetSystemProperty"
            }
        );
    });
}

#[test]
fn classes_methods_and_names() {
    with_env("classes", |jvmti, env| {
        let classes = jvmti.loaded_classes(env).unwrap();
        assert!(classes.len() > 300, "{} classes", classes.len());
        let string = classes
            .iter()
            .copied()
            .find(|&c| jvmti.class_signature(c).unwrap().0 == "Ljava/lang/String;")
            .expect("java.lang.String is loaded");
        let (_, generic) = jvmti.class_signature(string).unwrap();
        let generic = generic.expect("String is generic (Comparable<String>)");
        assert!(generic.starts_with(
            "Ljava/lang/Object;Ljava/io/Serializable;Ljava/lang/Comparable<Ljava/lang/String;>;"
        ));
        let methods = jvmti.class_methods(string).unwrap();
        let names: Vec<_> = methods
            .iter()
            .map(|&m| jvmti.method_name(m).unwrap())
            .collect();
        assert!(names
            .iter()
            .any(|n| n.name == "length" && n.signature == "()I"));
        let declaring = jvmti.method_declaring_class(env, methods[0]).unwrap();
        assert_eq!(
            jvmti.class_signature(declaring).unwrap().0,
            "Ljava/lang/String;"
        );

        let found = env.find_class("java/util/ArrayList").unwrap();
        assert_eq!(
            jvmti.class_signature(found).unwrap().0,
            "Ljava/util/ArrayList;"
        );
        assert_eq!(
            env.find_class("no/such/Clazz").unwrap_err(),
            Error::Jni {
                function: "FindClass"
            }
        );
        assert!(
            !env.clear_exception(),
            "the NoClassDefFoundError was cleared"
        );
        let modules = jvmti.all_modules(env).unwrap();
        assert!(modules.len() > 10, "{} modules", modules.len());
    });
}

#[test]
fn fields_superclasses_and_reference_fields() {
    with_env("fields", |jvmti, env| {
        let thread_class = env.find_class("java/lang/Thread").unwrap();
        let thread = env.new_thread("field-reader").unwrap();
        let fields = jvmti.fields(thread_class).unwrap();
        let field = |name: &str| fields.iter().find(|f| f.name == name).unwrap();
        let name = field("name");
        assert_eq!(name.signature, "Ljava/lang/String;");
        assert!(!name.is_static && name.is_reference());
        let priority = field("priority");
        assert!(!priority.is_reference());
        let statics: Vec<_> = fields.iter().filter(|f| f.is_static).collect();
        assert!(!statics.is_empty());

        // SAFETY: each field is one `fields` returned for `thread_class`.
        let read = |obj, f| unsafe { env.reference_field(obj, thread_class, f) };
        let value = read(thread, name).unwrap().expect("a named thread");
        assert_eq!(env.string_utf(value).unwrap(), "field-reader");
        let refused = Err(Error::Jni {
            function: "GetObjectField",
        });
        assert_eq!(read(thread, priority), refused);
        assert_eq!(read(thread, statics[0]), refused);
        // Not a Thread: refused before any JNI call.
        assert!(!env.is_instance_of(value, thread_class));
        assert_eq!(read(value, name), refused);

        let object = env.superclass(thread_class).unwrap();
        assert_eq!(
            jvmti.class_signature(object).unwrap().0,
            "Ljava/lang/Object;"
        );
        assert!(env.is_instance_of(thread, object));
        assert!(env.superclass(object).is_none());
    });
}

static HOOKED: Mutex<Vec<(String, usize, [u8; 4])>> = Mutex::new(Vec::new());

unsafe extern "C" fn hook(
    _jvmti: *mut sys::jvmtiEnv,
    _jni: *mut sys::JNIEnv,
    _class: sys::jclass,
    _loader: sys::jobject,
    name: *const std::ffi::c_char,
    _domain: sys::jobject,
    len: sys::jint,
    data: *const u8,
    _new_len: *mut sys::jint,
    _new_data: *mut *mut u8,
) {
    ffi_guard("ClassFileLoadHook", (), || {
        if name.is_null() {
            return;
        }
        // SAFETY: the JVM passes a C string and `len` bytes of class data.
        let (name, head) = unsafe {
            (
                std::ffi::CStr::from_ptr(name)
                    .to_string_lossy()
                    .into_owned(),
                std::slice::from_raw_parts(data, 4),
            )
        };
        HOOKED
            .lock()
            .unwrap()
            .push((name, len as usize, head.try_into().unwrap()));
    })
}

#[test]
fn retransform_runs_the_hook_and_rejects_unmodifiable_classes() {
    with_env("retransform", |jvmti, env| {
        let mut caps = sys::jvmtiCapabilities::default();
        caps.set_can_retransform_classes(1);
        jvmti.add_capabilities(&caps).unwrap();
        assert_eq!(jvmti.capabilities().unwrap().can_retransform_classes(), 1);
        // Loaded before the hook is enabled, so the only hook event for it is the retransformation.
        let list = env.find_class("java/util/LinkedList").unwrap();
        let callbacks = sys::jvmtiEventCallbacks {
            ClassFileLoadHook: Some(hook),
            ..Default::default()
        };
        jvmti.set_event_callbacks(&callbacks).unwrap();
        jvmti
            .set_event_notification_mode(true, sys::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK)
            .unwrap();

        assert!(jvmti.is_modifiable_class(list).unwrap());
        jvmti.retransform_classes(&[list]).unwrap();
        let ints: Class<'_> = env.find_class("[I").unwrap();
        assert!(!jvmti.is_modifiable_class(ints).unwrap());
        let err = jvmti.retransform_classes(&[ints]).unwrap_err();
        assert_eq!(err.jvmti_code(), Some(sys::JVMTI_ERROR_UNMODIFIABLE_CLASS));
        jvmti
            .set_event_notification_mode(false, sys::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK)
            .unwrap();

        let hooked = HOOKED.lock().unwrap();
        let seen: Vec<_> = hooked
            .iter()
            .filter(|(n, _, _)| n == "java/util/LinkedList")
            .collect();
        assert_eq!(seen.len(), 1, "{hooked:?}");
        assert_eq!(seen[0].2, [0xca, 0xfe, 0xba, 0xbe]);
        assert!(seen[0].1 > 1000);
    });
}

#[test]
fn monitors_threads_cpu_time_and_memory() {
    with_env("ff-test-thread", |jvmti, env| {
        let monitor = jvmti.create_raw_monitor("test monitor").unwrap();
        {
            let guard = monitor.enter().unwrap();
            let start = Instant::now();
            guard.wait(Duration::from_millis(30)).unwrap();
            assert!(start.elapsed() >= Duration::from_millis(25));
            guard.notify_all().unwrap();
            let _reentered = monitor.enter().unwrap();
        }

        let me = jvmti.current_thread(env).unwrap();
        let info = jvmti.thread_info(env, me).unwrap();
        assert_eq!(
            (info.name.as_str(), info.is_daemon),
            ("ff-test-thread", true)
        );

        let mut caps = sys::jvmtiCapabilities::default();
        caps.set_can_get_current_thread_cpu_time(1);
        jvmti.add_capabilities(&caps).unwrap();
        let before = jvmti.current_thread_cpu_time().unwrap();
        let mut x = 0u64;
        while jvmti.current_thread_cpu_time().unwrap() < before + 5_000_000 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }

        let buf = jvmti.allocate_copy(b"\xca\xfe\xba\xbe").unwrap();
        assert_eq!(&buf[..], b"\xca\xfe\xba\xbe");
        let (ptr, len) = buf.into_raw();
        assert_eq!(len, 4);
        assert_eq!(jvmti.allocate(0).unwrap().len(), 0);
        // into_raw hands ownership out (normally to the JVM, as new_class_data); free it ourselves.
        // SAFETY: ptr came from this environment's Allocate and is freed once.
        unsafe { deallocate_raw(jvmti, ptr) };
    });
}

/// Deallocates through JVMTI's own table, as the JVM does with `new_class_data`.
unsafe fn deallocate_raw(jvmti: Jvmti, p: *mut u8) {
    let env = jvmti.as_raw();
    // SAFETY: live environment, memory from its Allocate.
    unsafe { ((**env).Deallocate.unwrap())(env, p) };
}

static AGENT_RAN: AtomicBool = AtomicBool::new(false);

unsafe extern "C" fn agent_body(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    arg: *mut c_void,
) {
    ffi_guard("agent thread", (), || {
        // SAFETY: the JVM passes live environments for this thread.
        let (jvmti, jni) = unsafe {
            (
                Jvmti::from_raw(jvmti).unwrap(),
                JniEnv::from_raw(jni).unwrap(),
            )
        };
        let me = jvmti.current_thread(&jni).unwrap();
        let info = jvmti.thread_info(&jni, me).unwrap();
        assert_eq!(arg as usize, 42);
        AGENT_RAN.store(
            info.name == "ff-agent-test" && info.is_daemon,
            Ordering::SeqCst,
        );
    })
}

#[test]
fn runs_an_agent_thread() {
    with_env("starter", |jvmti, env| {
        let thread = env.new_thread("ff-agent-test").unwrap();
        // SAFETY: agent_body catches panics and only reads its integer argument.
        unsafe {
            jvmti.run_agent_thread(
                thread,
                agent_body,
                42 as *const c_void,
                sys::JVMTI_THREAD_NORM_PRIORITY as i32,
            )
        }
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !AGENT_RAN.load(Ordering::SeqCst) {
            assert!(Instant::now() < deadline, "agent thread did not run");
            std::thread::sleep(Duration::from_millis(10));
        }
    });
}

#[test]
fn capability_and_argument_errors_name_the_function() {
    with_env("errors", |jvmti, env| {
        let code = |r: ferrofluid_jvmti::Result<()>| r.unwrap_err().jvmti_code();
        // Fresh environment without capabilities.
        assert_eq!(
            code(jvmti.set_native_method_prefix("ff_")),
            Some(sys::JVMTI_ERROR_MUST_POSSESS_CAPABILITY)
        );
        let me = jvmti.current_thread(env).unwrap();
        assert_eq!(
            jvmti.thread_cpu_time(me).unwrap_err(),
            Error::Jvmti {
                function: "GetThreadCpuTime",
                code: sys::JVMTI_ERROR_MUST_POSSESS_CAPABILITY
            }
        );
        let list = env.find_class("java/util/ArrayList").unwrap();
        let def = ferrofluid_jvmti::ClassDefinition {
            class: list,
            bytes: b"not a class",
        };
        assert_eq!(
            code(jvmti.redefine_classes(&[def])),
            Some(sys::JVMTI_ERROR_MUST_POSSESS_CAPABILITY)
        );
        assert_eq!(
            code(jvmti.add_to_bootstrap_class_loader_search("/nonexistent/ff.jar")),
            Some(sys::JVMTI_ERROR_ILLEGAL_ARGUMENT)
        );
        // Every module reads java.base; asking for it again is accepted.
        let modules = jvmti.all_modules(env).unwrap();
        assert_eq!(jvmti.add_module_reads(modules[0], modules[0]), Ok(()));
    });
}

#[test]
fn with_attached_thread_attaches_only_when_needed() {
    let vm = vm();
    let name = std::thread::spawn(move || {
        let inside = vm
            .with_attached_thread("ff-scoped", |env| {
                let jvmti = vm.jvmti().unwrap();
                let me = jvmti.current_thread(env).unwrap();
                let info = jvmti.thread_info(env, me).unwrap();
                jvmti.dispose().unwrap();
                info.name
            })
            .unwrap();
        // Detached again afterwards: this native thread has no JNIEnv any more.
        assert!(vm.jni_env().is_err());
        inside
    })
    .join()
    .unwrap();
    assert_eq!(name, "ff-scoped");
}
