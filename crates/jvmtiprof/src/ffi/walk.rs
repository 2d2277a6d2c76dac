//! The asynchronous stack walk: HotSpot's `AsyncGetCallTrace` (found with `dlsym`), called
//! through the C guard of `csrc/walk_guard.c` so that a fault inside it is contained, and what a
//! signal handler reads from the interrupted context (its program counter, whether it was in a
//! system call).

use std::ffi::{c_int, c_void};
use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;

use ferrofluid_jvmti::sys;

use super::vmstructs::CodeLayout;

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
        layout: *const CodeLayout,
        pc: usize,
        compiled_frame: *mut c_int,
    ) -> c_int;
    fn jvmtiprof_install_fault_handlers() -> c_int;
    fn jvmtiprof_uninstall_fault_handlers() -> c_int;
    fn jvmtiprof_faults_contained() -> std::ffi::c_ulong;
    fn jvmtiprof_walks_in_flight() -> c_int;
    #[cfg(test)]
    fn jvmtiprof_faulting_walk(trace: *mut CallTrace, depth: c_int, ucontext: *mut c_void);
}

/// The walk function and what it needs: `AsyncGetCallTrace`, how a signal handler finds the
/// interrupted thread's `JNIEnv` ([`JavaThreads`]), and where HotSpot keeps compiled code (to
/// tell which frame's code the program counter is in; `None`: the JVM does not describe it).
#[derive(Clone, Copy)]
pub(crate) struct Walker {
    asgct: Asgct,
    threads: Option<JavaThreads>,
    layout: Option<CodeLayout>,
}

/// Where HotSpot keeps the current thread for its own signal handlers: a pthread key whose value
/// on every thread the JVM knows is its `Thread`, and, on a Java thread, the `JNIEnv` a fixed
/// offset into it. `JavaVM::GetEnv` cannot be called from a signal handler: it reads libjvm's
/// `__thread` variable, which on a thread that never touched it (a native thread, the sampler's
/// own) makes glibc allocate the thread's block, and a signal that interrupted `malloc` then
/// deadlocks on the allocator's lock. `pthread_getspecific` reads the thread's key array and
/// allocates nothing; HotSpot sets this key on every thread it starts or attaches, for the same
/// reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct JavaThreads {
    key: libc::pthread_key_t,
    /// The `JNIEnv`'s offset into HotSpot's `JavaThread`.
    env_offset: usize,
    /// A `JNIEnv`'s first word: the JNI function table every Java thread shares, which no other
    /// `Thread` has at that offset.
    functions: usize,
}

/// How far into HotSpot's `JavaThread` its `JNIEnv` may be (0x2b0 in JDK 17, 0x4a0 in JDK 25).
const MAX_ENV_OFFSET: usize = 0x1000;

/// glibc's `PTHREAD_KEYS_MAX`: keys are below it.
const KEYS_MAX: libc::pthread_key_t = 1024;

impl JavaThreads {
    /// Finds the key on the calling thread, a Java thread whose `JNIEnv` is `env`: the one key
    /// whose value is at most [`MAX_ENV_OFFSET`] below `env`.
    fn find(env: *mut sys::JNIEnv) -> Option<JavaThreads> {
        if env.is_null() {
            return None;
        }
        // SAFETY: `env` is the calling thread's JNIEnv: its first word is its function table.
        let functions = unsafe { *(env as *const usize) };
        let env = env as usize;
        let mut found = None;
        for key in 0..KEYS_MAX {
            // SAFETY: reads the calling thread's value of `key`; a key never created reads null.
            let value = unsafe { libc::pthread_getspecific(key) } as usize;
            if value != 0 && value < env && env - value <= MAX_ENV_OFFSET {
                if found.is_some() {
                    // Two candidates: not sure which one is HotSpot's.
                    return None;
                }
                found = Some(JavaThreads {
                    key,
                    env_offset: env - value,
                    functions,
                });
            }
        }
        if let Some(t) = &found {
            log::debug!(
                "HotSpot's thread key {}, JNIEnv at +{:#x}",
                t.key,
                t.env_offset
            );
        }
        found
    }

    /// The calling thread's `JNIEnv`, `None` for a thread that is not a Java thread.
    /// Async-signal-safe: one key read and one memory read.
    fn current_env(&self) -> Option<usize> {
        // SAFETY: reads the calling thread's value of the key.
        let thread = unsafe { libc::pthread_getspecific(self.key) } as usize;
        if thread == 0 {
            return None;
        }
        let env = thread + self.env_offset;
        // SAFETY: `thread` is a live HotSpot `Thread` of the calling thread (the JVM clears the
        // key before freeing it), at least a few hundred bytes long and allocated in the C heap,
        // so the word `env_offset` into it is mapped even for the smaller `Thread` kinds.
        let first = unsafe { *(env as *const usize) };
        (first == self.functions).then_some(env)
    }
}

// SAFETY: a function pointer and plain words, usable from any thread.
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
    /// The walker of this JVM, found from `env`, the calling Java thread's `JNIEnv`; `None` when
    /// the JVM has no `AsyncGetCallTrace` or no thread key a signal handler can read (logged).
    pub fn new(env: &ferrofluid_jvmti::JniEnv<'_>) -> Option<Walker> {
        let Some(asgct) = asgct() else {
            log::warn!("this JVM has no AsyncGetCallTrace: samples will have no stacks");
            return None;
        };
        let Some(threads) = JavaThreads::find(env.as_raw()) else {
            log::warn!(
                "no thread key tells a signal handler which thread is a Java thread: samples \
                 will have no stacks"
            );
            return None;
        };
        let layout = super::vmstructs::get().and_then(|v| v.code_layout());
        if layout.is_none() {
            log::info!("this JVM does not describe its compiled code (VMStructs)");
        }
        Some(Walker {
            asgct,
            threads: Some(threads),
            layout,
        })
    }

    /// A walker whose walk always faults (the containment tests).
    #[cfg(test)]
    pub fn faulting() -> Walker {
        Walker {
            asgct: jvmtiprof_faulting_walk,
            threads: None,
            layout: None,
        }
    }

    /// The calling thread's `JNIEnv`, `None` for a thread that is not a Java thread (a native
    /// thread, a JVM thread that runs no Java). Async-signal-safe: calls nothing in the JVM
    /// ([`JavaThreads`]).
    pub fn jni_env(&self) -> Option<usize> {
        match &self.threads {
            Some(t) => t.current_env(),
            None => Some(1),
        }
    }

    /// Walks the calling thread's Java stack as `ucontext` (the context the kernel passed to the
    /// running signal handler) shows it, into `frames`: two words per frame, the first holding
    /// the bytecode index (or -3 for a native method) in its low 32 bits, the second the
    /// `jmethodID`. `env` is the thread's `JNIEnv` ([`Walker::jni_env`]). With the frames comes
    /// the index of the frame whose compiled code the interrupted program counter is in, if any.
    pub fn walk(
        &self,
        env: usize,
        ucontext: UContext,
        frames: &[AtomicU64],
        tid: u32,
    ) -> WalkResult {
        let depth = (frames.len() / 2) as c_int;
        if depth == 0 {
            return WalkResult::Frames(0, None);
        }
        let (mut n, mut compiled): (c_int, c_int) = (0, -1);
        let layout = self
            .layout
            .as_ref()
            .map_or(std::ptr::null(), |l| l as *const CodeLayout);
        // An AtomicU64 is an UnsafeCell: writing through a pointer derived from a shared slice
        // is allowed, and nothing reads these words until the record is committed.
        let out = frames.as_ptr() as *mut CallFrame;
        // SAFETY: `out` has room for `depth` 16-byte frames (2 words each, 8-byte aligned);
        // `ucontext` is the interrupted context of this thread's running signal handler (or
        // null); `env` is this thread's JNIEnv; `layout` is null or this JVM's (read from its
        // VMStructs); the guard contains a fault inside the walk and the frame typing.
        let rc = unsafe {
            jvmtiprof_walk(
                self.asgct,
                env as *mut c_void,
                ucontext.0,
                out,
                depth,
                tid as c_int,
                &mut n,
                layout,
                ucontext.pc(),
                &mut compiled,
            )
        };
        match rc {
            0 => WalkResult::Frames(n, u8::try_from(compiled).ok()),
            1 => WalkResult::Fault,
            _ => WalkResult::Busy,
        }
    }
}

/// What the guarded walk did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WalkResult {
    /// It returned this many frames (negative: HotSpot's reason for none), and the index of the
    /// frame whose compiled code the program counter is in (the frames above were inlined into
    /// it), if it found one.
    Frames(i32, Option<u8>),
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
