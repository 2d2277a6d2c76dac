//! The asynchronous stack walk: HotSpot's `AsyncGetCallTrace` (found with `dlsym`), called
//! through the C guard of `csrc/walk_guard.c` so that a fault inside it is contained, and what a
//! signal handler reads from the interrupted context (its program counter, whether it was in a
//! system call).

use std::ffi::{c_int, c_void};
use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;

use ferrofluid_jvmti::sys;

/// `ASGCT_CallFrame`: `{ jint lineno; jmethodID method_id; }`, 16 bytes on 64-bit targets.
#[repr(C)]
struct CallFrame {
    lineno: i32,
    method_id: *mut c_void,
}

/// `ASGCT_CallTrace`.
#[repr(C)]
struct CallTrace {
    env_id: *mut c_void,
    num_frames: c_int,
    frames: *mut CallFrame,
}

type Asgct = unsafe extern "C" fn(*mut CallTrace, c_int, *mut c_void);

extern "C" {
    fn jvmtiprof_walk(
        asgct: Asgct,
        env: *mut c_void,
        ucontext: *mut c_void,
        frames: *mut CallFrame,
        depth: c_int,
        tid: c_int,
        num_frames: *mut c_int,
    ) -> c_int;
    fn jvmtiprof_install_fault_handlers() -> c_int;
    fn jvmtiprof_uninstall_fault_handlers() -> c_int;
    fn jvmtiprof_faults_contained() -> std::ffi::c_ulong;
    fn jvmtiprof_walks_in_flight() -> c_int;
    #[cfg(test)]
    fn jvmtiprof_faulting_walk(trace: *mut CallTrace, depth: c_int, ucontext: *mut c_void);
}

/// The walk function and what it needs: `AsyncGetCallTrace` and the `JavaVM` whose `GetEnv`
/// names the interrupted thread.
#[derive(Clone, Copy)]
pub(crate) struct Walker {
    asgct: Asgct,
    vm: *mut sys::JavaVM,
}

// SAFETY: a function pointer and the process-wide JavaVM, both callable from any thread.
unsafe impl Send for Walker {}
// SAFETY: as above.
unsafe impl Sync for Walker {}

/// `AsyncGetCallTrace` of the JVM in this process, if it exports one.
fn asgct() -> Option<Asgct> {
    static FUNCTION: OnceLock<Option<usize>> = OnceLock::new();
    let f = *FUNCTION.get_or_init(|| {
        // SAFETY: a symbol lookup in the already loaded libraries, by a C string.
        let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"AsyncGetCallTrace".as_ptr()) };
        (!f.is_null()).then_some(f as usize)
    });
    // SAFETY: HotSpot exports `void AsyncGetCallTrace(ASGCT_CallTrace*, jint, void*)`.
    f.map(|f| unsafe { std::mem::transmute::<usize, Asgct>(f) })
}

impl Walker {
    /// The walker of `vm`, `None` when the JVM has no `AsyncGetCallTrace`.
    pub fn new(vm: ferrofluid_jvmti::JavaVm) -> Option<Walker> {
        Some(Walker {
            asgct: asgct()?,
            vm: vm.as_raw(),
        })
    }

    /// A walker whose walk always faults (the containment tests).
    #[cfg(test)]
    pub fn faulting() -> Walker {
        Walker {
            asgct: jvmtiprof_faulting_walk,
            vm: std::ptr::null_mut(),
        }
    }

    /// The calling thread's `JNIEnv`, `None` for a thread the JVM does not know (a native
    /// thread) or one that is not a Java thread. Async-signal-safe in HotSpot: `GetEnv` reads the
    /// thread's own VM structure and allocates nothing.
    pub fn jni_env(&self) -> Option<usize> {
        if self.vm.is_null() {
            return Some(1);
        }
        // SAFETY: the process's JavaVM, valid for its life.
        let get_env = unsafe { (**self.vm).GetEnv }?;
        let mut env: *mut c_void = std::ptr::null_mut();
        // SAFETY: one out-pointer.
        let rc = unsafe { get_env(self.vm, &mut env, sys::JNI_VERSION_1_6 as sys::jint) };
        (rc == sys::JNI_OK as sys::jint && !env.is_null()).then_some(env as usize)
    }

    /// Walks the calling thread's Java stack as `ucontext` (the context the kernel passed to the
    /// running signal handler) shows it, into `frames`: two words per frame, the first holding
    /// the bytecode index (or -3 for a native method) in its low 32 bits, the second the
    /// `jmethodID`. `env` is the thread's `JNIEnv` ([`Walker::jni_env`]).
    pub fn walk(
        &self,
        env: usize,
        ucontext: UContext,
        frames: &[AtomicU64],
        tid: u32,
    ) -> WalkResult {
        let depth = (frames.len() / 2) as c_int;
        if depth == 0 {
            return WalkResult::Frames(0);
        }
        let mut n: c_int = 0;
        // An AtomicU64 is an UnsafeCell: writing through a pointer derived from a shared slice
        // is allowed, and nothing reads these words until the record is committed.
        let out = frames.as_ptr() as *mut CallFrame;
        // SAFETY: `out` has room for `depth` 16-byte frames (2 words each, 8-byte aligned);
        // `ucontext` is the interrupted context of this thread's running signal handler (or
        // null); `env` is this thread's JNIEnv; the guard contains a fault inside the walk.
        let rc = unsafe {
            jvmtiprof_walk(
                self.asgct,
                env as *mut c_void,
                ucontext.0,
                out,
                depth,
                tid as c_int,
                &mut n,
            )
        };
        match rc {
            0 => WalkResult::Frames(n),
            1 => WalkResult::Fault,
            _ => WalkResult::Busy,
        }
    }
}

/// What the guarded walk did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WalkResult {
    /// It returned this many frames (negative: HotSpot's reason for none).
    Frames(i32),
    /// It faulted; the fault was contained.
    Fault,
    /// Too many threads were walking at once; it was not tried.
    Busy,
}

/// Installs the fault handler that contains faults inside walks, over the JVM's.
pub(crate) fn install_fault_handlers() -> std::io::Result<()> {
    // SAFETY: sigaction calls only.
    if unsafe { jvmtiprof_install_fault_handlers() } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Puts the JVM's fault handlers back where ours is still the one installed; returns whether
/// both were.
pub(crate) fn uninstall_fault_handlers() -> bool {
    // SAFETY: sigaction calls only; no walk is in flight (the caller waited for them).
    unsafe { jvmtiprof_uninstall_fault_handlers() == 3 }
}

/// Faults inside walks contained since the library was loaded.
pub(crate) fn faults_contained() -> u64 {
    // SAFETY: an atomic load.
    unsafe { jvmtiprof_faults_contained() as u64 }
}

/// Threads inside a walk now.
pub(crate) fn walks_in_flight() -> usize {
    // SAFETY: atomic loads.
    unsafe { jvmtiprof_walks_in_flight().max(0) as usize }
}

/// The interrupted context a signal handler received (`ucontext_t*`), opaque outside this
/// module.
#[derive(Clone, Copy)]
pub(crate) struct UContext(pub(crate) *mut c_void);

impl UContext {
    /// No context (a walk from outside a signal handler).
    #[cfg(test)]
    pub fn none() -> UContext {
        UContext(std::ptr::null_mut())
    }

    /// The interrupted program counter (0 when unknown).
    pub fn pc(self) -> usize {
        if self.0.is_null() {
            return 0;
        }
        // SAFETY: the kernel's ucontext_t for the running handler.
        let uc = unsafe { &*(self.0 as *const libc::ucontext_t) };
        #[cfg(target_arch = "x86_64")]
        {
            uc.uc_mcontext.gregs[libc::REG_RIP as usize] as usize
        }
        #[cfg(target_arch = "aarch64")]
        {
            uc.uc_mcontext.pc as usize
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let _ = uc;
            0
        }
    }

    /// Whether the thread was blocked in a system call: the signal interrupted a `syscall`
    /// (`svc`) instruction, the kernel having set the program counter back to it for a restart
    /// or past it with `-EINTR` as its result.
    pub fn in_syscall(self) -> bool {
        let pc = self.pc();
        if pc == 0 {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: the kernel's ucontext_t for the running handler.
            let uc = unsafe { &*(self.0 as *const libc::ucontext_t) };
            let rax = uc.uc_mcontext.gregs[libc::REG_RAX as usize];
            let page = pc & 0xfff;
            // `syscall` is 0f 05. The interrupted pc lies in mapped, executable code; the two
            // bytes read stay inside its page.
            let at = |p: usize| -> [u8; 2] {
                // SAFETY: see above; `p` and `p + 1` are in the page of `pc`.
                unsafe { [*(p as *const u8), *((p + 1) as *const u8)] }
            };
            (page <= 0xffe && at(pc) == [0x0f, 0x05])
                || (page >= 2 && at(pc - 2) == [0x0f, 0x05] && rax == -(libc::EINTR as i64))
        }
        #[cfg(target_arch = "aarch64")]
        {
            // `svc #0` is d4000001; instructions are 4-byte aligned, so the word stays in the page.
            let at = |p: usize| -> u32 {
                // SAFETY: a 4-byte aligned instruction word in the page of `pc`.
                unsafe { *(p as *const u32) }
            };
            let page = pc & 0xfff;
            at(pc) == 0xd400_0001 || (page >= 4 && at(pc - 4) == 0xd400_0001)
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_inside_the_walk_is_contained() {
        install_fault_handlers().unwrap();
        let before = faults_contained();
        let frames: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
        let w = Walker::faulting();
        let tid = crate::ffi::os::gettid();
        for _ in 0..3 {
            assert_eq!(w.walk(1, UContext::none(), &frames, tid), WalkResult::Fault);
        }
        assert_eq!(faults_contained() - before, 3);
        assert_eq!(walks_in_flight(), 0);
        assert!(uninstall_fault_handlers());
    }
}
