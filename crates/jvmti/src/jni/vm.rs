//! The `JavaVM`: environments got, threads attached and detached.

use std::ffi::{c_void, CString};
use std::ptr::NonNull;

use crate::error::{Error, Result};
use crate::{sys, Jvmti};

use super::JniEnv;

/// The `JavaVM`: valid on any thread for the life of the process.
#[derive(Debug, Clone, Copy)]
pub struct JavaVm {
    raw: NonNull<sys::JavaVM>,
}

// SAFETY: the JavaVM invocation interface is specified to be callable from any thread.
unsafe impl Send for JavaVm {}
// SAFETY: as above.
unsafe impl Sync for JavaVm {}

impl JavaVm {
    /// # Safety
    /// `raw` must be the JavaVM pointer the JVM passed to `Agent_OnLoad`/`Agent_OnAttach` (or returned).
    pub unsafe fn from_raw(raw: *mut sys::JavaVM) -> Option<Self> {
        NonNull::new(raw).map(|raw| JavaVm { raw })
    }

    pub fn as_raw(self) -> *mut sys::JavaVM {
        self.raw.as_ptr()
    }

    /// A new JVMTI environment (version 1.2, which every JVM since 7 provides).
    pub fn jvmti(self) -> Result<Jvmti> {
        let env = self.get_env(sys::FERROFLUID_JVMTI_VERSION)?;
        // SAFETY: GetEnv succeeded for a JVMTI version, so `env` is a jvmtiEnv*.
        Ok(unsafe { Jvmti::from_raw(env.cast()) }.expect("GetEnv returned OK and NULL"))
    }

    /// The JNI environment of the current thread, if it is attached to the JVM.
    pub fn jni_env<'a>(self) -> Result<JniEnv<'a>> {
        let env = self.get_env(sys::JNI_VERSION_1_8 as sys::jint)?;
        // SAFETY: GetEnv succeeded for a JNI version on this thread, so `env` is this thread's JNIEnv*.
        Ok(unsafe { JniEnv::from_raw(env.cast()) }.expect("GetEnv returned OK and NULL"))
    }

    /// Attaches the current native thread to the JVM as a daemon thread named `name` (so it never
    /// keeps the JVM from exiting), returning its JNI environment. Already-attached threads get theirs.
    pub fn attach_current_thread_as_daemon(self, name: &str) -> Result<JniEnv<'static>> {
        let c_name = CString::new(name).map_err(|_| Error::Nul {
            function: "AttachCurrentThreadAsDaemon",
        })?;
        let mut args = sys::JavaVMAttachArgs {
            version: sys::JNI_VERSION_1_8 as sys::jint,
            name: c_name.as_ptr().cast_mut(),
            group: std::ptr::null_mut(),
        };
        let function = "AttachCurrentThreadAsDaemon";
        // SAFETY: valid JavaVM (type invariant).
        let attach = unsafe { (**self.raw.as_ptr()).AttachCurrentThreadAsDaemon };
        let attach = attach.ok_or(Error::Jni { function })?;
        let mut env = std::ptr::null_mut();
        // SAFETY: out-pointer and attach args that outlive the call (the JVM copies the name).
        let code = unsafe {
            attach(
                self.raw.as_ptr(),
                &mut env,
                (&mut args as *mut sys::JavaVMAttachArgs).cast(),
            )
        };
        if code != sys::JNI_OK as sys::jint {
            return Err(Error::Jni { function });
        }
        // SAFETY: the JVM returned this thread's JNIEnv, valid until the thread detaches; 'static is
        // bounded in practice by `detach_current_thread`'s contract.
        unsafe { JniEnv::from_raw(env.cast()) }.ok_or(Error::Jni { function })
    }

    /// Runs `f` with the current thread attached to the JVM (as a daemon named `name`), detaching it
    /// afterwards if it was not attached before. The closure's `JniEnv` cannot escape it, so no local
    /// reference outlives the attachment.
    pub fn with_attached_thread<R>(
        self,
        name: &str,
        f: impl FnOnce(&JniEnv<'_>) -> R,
    ) -> Result<R> {
        if let Ok(env) = self.jni_env() {
            return Ok(f(&env));
        }
        let env = self.attach_current_thread_as_daemon(name)?;
        let result = f(&env);
        // SAFETY: `env` and every reference made through it were confined to `f`, which has returned.
        unsafe { self.detach_current_thread() }?;
        Ok(result)
    }

    /// Detaches the current thread.
    ///
    /// # Safety
    /// No [`JniEnv`] or local reference of this thread may be used afterwards.
    pub unsafe fn detach_current_thread(self) -> Result<()> {
        // SAFETY: valid JavaVM (type invariant).
        let detach = unsafe { (**self.raw.as_ptr()).DetachCurrentThread };
        let detach = detach.ok_or(Error::Jni {
            function: "DetachCurrentThread",
        })?;
        // SAFETY: caller's contract.
        if unsafe { detach(self.raw.as_ptr()) } != sys::JNI_OK as sys::jint {
            return Err(Error::Jni {
                function: "DetachCurrentThread",
            });
        }
        Ok(())
    }

    fn get_env(self, version: sys::jint) -> Result<*mut c_void> {
        // SAFETY: self.raw is a valid JavaVM (type invariant); its function table lives as long as the VM.
        let get_env = unsafe { (**self.raw.as_ptr()).GetEnv };
        let get_env = get_env.ok_or(Error::GetEnv {
            version,
            code: sys::JNI_ERR,
        })?;
        let mut env = std::ptr::null_mut();
        // SAFETY: GetEnv writes one pointer into `env`.
        let code = unsafe { get_env(self.raw.as_ptr(), &mut env, version) };
        if code != sys::JNI_OK as sys::jint || env.is_null() {
            return Err(Error::GetEnv { version, code });
        }
        Ok(env)
    }
}
