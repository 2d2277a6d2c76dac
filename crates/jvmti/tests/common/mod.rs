//! The harness of the live-JVM tests: one JVM per test binary, created in this process with
//! libjvm's `JNI_CreateJavaVM`, and a test's thread attached to it.
#![allow(dead_code, unsafe_code)]

use std::ffi::{c_void, CString};
use std::sync::OnceLock;

use ferrofluid_jvmti::{sys, JavaVm, JniEnv, Jvmti};

/// `$JAVA_HOME/lib/server/libjvm.so`, by default the JDK 17 these bindings were generated from.
pub fn libjvm() -> String {
    ferrofluid_testkit::java_home()
        .join("lib/server/libjvm.so")
        .display()
        .to_string()
}

type CreateJavaVm =
    unsafe extern "C" fn(*mut *mut sys::JavaVM, *mut *mut c_void, *mut c_void) -> sys::jint;

/// One JVM per process (HotSpot allows no second one), created on a thread that then parks forever so
/// the creating thread never exits while attached.
pub fn vm() -> JavaVm {
    static VM: OnceLock<JavaVm> = OnceLock::new();
    *VM.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let path = CString::new(libjvm()).unwrap();
            // SAFETY: dlopen/dlsym of the JDK's libjvm with a valid path and symbol name.
            let create: CreateJavaVm = unsafe {
                // RTLD_GLOBAL as the java launcher does: `dlsym(RTLD_DEFAULT, ..)` finds its symbols.
                let lib = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
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
pub fn with_env(name: &str, f: impl FnOnce(Jvmti, &JniEnv<'_>)) {
    let vm = vm();
    let env = vm.attach_current_thread_as_daemon(name).unwrap();
    let jvmti = vm.jvmti().unwrap();
    f(jvmti, &env);
    jvmti.dispose().unwrap();
    // SAFETY: nothing of this thread's JNI frame is used after this point.
    unsafe { vm.detach_current_thread() }.unwrap();
}
