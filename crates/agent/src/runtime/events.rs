//! The runtime's handler of the JVMTI events it enables (`crate::ffi::events` converts and
//! calls it): the lifecycle's VMInit and VMDeath, the class hooks of the session, the threads'
//! starts and ends, virtual threads' mounts.

use ferrofluid_jvmti::{sys, Class, JniEnv, Jvmti, Object};

use crate::ffi::events::JvmEvents;
use crate::probe::{thread, vthread};
use crate::runtime::{jvm, lifecycle, session, threads};

/// The runtime's JVMTI event handler.
pub struct Events;

impl JvmEvents for Events {
    fn vm_start(jvmti: Jvmti, env: &JniEnv<'_>) {
        crate::engine::vm_start(jvmti, env)
    }

    fn vm_init(jvmti: Jvmti, env: &JniEnv<'_>) {
        // The hooks are installed and the agent goes live.
        match jvm::install_hooks(jvmti, env) {
            Ok(()) => lifecycle::on_live(jvmti, env),
            Err(e) => log::error!("VMInit: {e}; nothing will be instrumented"),
        }
    }

    fn vm_death() {
        lifecycle::on_vm_death()
    }

    fn thread_start(env: *mut sys::JNIEnv, thread: Option<Object<'_>>) {
        threads::thread_start(env, thread)
    }

    fn thread_end(env: *mut sys::JNIEnv) {
        threads::thread_end(env)
    }

    fn class_hook(env: *mut sys::JNIEnv, what: &'static str, work: &mut dyn FnMut()) {
        thread::agent_callback(env, what, work)
    }

    fn class_file_load(
        env: &JniEnv<'_>,
        loader: Option<Object<'_>>,
        name: &str,
        redefining: bool,
        bytes: &[u8],
    ) -> Option<Vec<u8>> {
        session::class_file_load(env, loader, name, redefining, bytes)
    }

    fn class_prepare(jvmti: Jvmti, env: &JniEnv<'_>, class: Class<'_>) {
        session::class_prepared(jvmti, env, class)
    }

    fn virtual_thread_mount(jvmti: Option<Jvmti>) {
        vthread::mounted(jvmti)
    }

    fn virtual_thread_unmount(
        jvmti: Option<Jvmti>,
        env: Option<&JniEnv<'_>>,
        thread: Option<Object<'_>>,
    ) {
        vthread::unmounting(jvmti, env, thread)
    }

    fn virtual_thread_start(
        jvmti: Option<Jvmti>,
        env: *mut sys::JNIEnv,
        thread: Option<Object<'_>>,
    ) {
        vthread::mounted(jvmti);
        threads::thread_start(env, thread);
    }

    fn virtual_thread_end(jvmti: Option<Jvmti>, env: *mut sys::JNIEnv) {
        vthread::mounted(jvmti);
        threads::thread_end(env);
        vthread::ended();
    }
}
