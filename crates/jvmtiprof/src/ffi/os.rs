//! The operating-system calls of the sampler and the timing core, as safe functions: thread ids,
//! thread CPU clocks, per-thread CPU timers, signals to one thread, the monotonic clock and
//! `errno`. Every function here is async-signal-safe unless its documentation says otherwise.

use std::io;
use std::time::Duration;

/// The calling thread's kernel thread id.
#[inline]
pub fn gettid() -> u32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// This process's id.
#[inline]
pub fn getpid() -> i32 {
    // SAFETY: getpid has no preconditions and cannot fail.
    unsafe { libc::getpid() }
}

/// The CPU-time clock of thread `tid` of this process: the kernel's encoding of a per-thread
/// scheduler clock (`MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`, what glibc's
/// `pthread_getcpuclockid` returns), usable with `clock_gettime` and `timer_create` for any
/// thread of the process, not only the caller.
#[inline]
pub fn thread_cpu_clock(tid: u32) -> libc::clockid_t {
    ((!tid) << 3 | 6) as libc::clockid_t
}

fn read_clock(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec; an invalid clock (a thread that ended) fails
    // with EINVAL and leaves it alone.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// CPU time thread `tid` of this process has used, in ns; `None` when it has ended.
#[inline]
pub fn thread_cpu_ns(tid: u32) -> Option<u64> {
    read_clock(thread_cpu_clock(tid))
}

/// CPU time the calling thread has used, in ns.
#[inline]
pub fn current_thread_cpu_ns() -> u64 {
    read_clock(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

/// `CLOCK_MONOTONIC` in ns (the vDSO: no system call).
#[inline]
pub fn monotonic_ns() -> u64 {
    read_clock(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

/// The calling thread's `errno`.
#[inline]
pub fn errno() -> i32 {
    // SAFETY: __errno_location returns the calling thread's errno slot, always valid.
    unsafe { *libc::__errno_location() }
}

/// Sets the calling thread's `errno` (a signal handler restores the interrupted code's).
#[inline]
pub fn set_errno(value: i32) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = value }
}

/// Sends `signal` to thread `tid` of this process (`tgkill`).
#[inline]
pub fn signal_thread(tid: u32, signal: i32) -> bool {
    // SAFETY: tgkill takes plain integers; a thread that ended makes it fail with ESRCH.
    unsafe { libc::syscall(libc::SYS_tgkill, getpid(), tid as libc::pid_t, signal) == 0 }
}

/// A kernel POSIX timer id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerId(pub i32);

/// Creates a timer on thread `tid`'s CPU clock that sends `signal`, with `cookie` as its
/// `si_value`, to that thread (`SIGEV_THREAD_ID`) each `interval` of CPU time the thread uses.
/// Not async-signal-safe only in that it is a system call a handler has no reason to make.
pub fn create_thread_cpu_timer(
    tid: u32,
    signal: i32,
    cookie: usize,
    interval: Duration,
) -> io::Result<TimerId> {
    // SAFETY: sigevent is a plain C struct; all-zero is a valid value to fill in.
    let mut event: libc::sigevent = unsafe { std::mem::zeroed() };
    event.sigev_value = libc::sigval {
        sival_ptr: cookie as *mut libc::c_void,
    };
    event.sigev_signo = signal;
    event.sigev_notify = libc::SIGEV_THREAD_ID;
    event.sigev_notify_thread_id = tid as libc::c_int;
    let mut id: libc::c_int = 0;
    // The raw system call: glibc's wrapper accepts only the clocks it knows.
    // SAFETY: a valid sigevent and an out-pointer for the kernel's int timer id.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_timer_create,
            thread_cpu_clock(tid),
            &mut event as *mut libc::sigevent,
            &mut id as *mut libc::c_int,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let timer = TimerId(id);
    let spec = itimerspec(interval);
    // SAFETY: a timer id the kernel just gave us and a valid itimerspec.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_timer_settime,
            id,
            0,
            &spec as *const libc::itimerspec,
            std::ptr::null_mut::<libc::itimerspec>(),
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        delete_timer(timer);
        return Err(e);
    }
    Ok(timer)
}

fn itimerspec(interval: Duration) -> libc::itimerspec {
    let ts = libc::timespec {
        tv_sec: interval.as_secs() as libc::time_t,
        tv_nsec: interval.subsec_nanos() as libc::c_long,
    };
    libc::itimerspec {
        it_interval: ts,
        it_value: ts,
    }
}

/// Deletes a timer (a signal it already sent may still be delivered).
pub fn delete_timer(timer: TimerId) {
    // SAFETY: timer_delete of an id we created; a stale id fails with EINVAL.
    unsafe { libc::syscall(libc::SYS_timer_delete, timer.0) };
}

/// Whether the timer still counts towards a next expiry: a thread CPU timer whose thread has
/// ended reads as disarmed (zero time to expiry) although it was created periodic.
pub fn timer_armed(timer: TimerId) -> bool {
    let mut spec = itimerspec(Duration::ZERO);
    // SAFETY: an out-pointer to an itimerspec.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_timer_gettime,
            timer.0,
            &mut spec as *mut libc::itimerspec,
        )
    };
    rc == 0 && (spec.it_value.tv_sec != 0 || spec.it_value.tv_nsec != 0)
}

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER5` (112 bytes), the fields used here.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
}

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
const ATTR_DISABLED: u64 = 1;
const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;
const PERF_EVENT_IOC_REFRESH: libc::c_ulong = 0x2402;
const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;
const F_OWNER_TID: libc::c_int = 0;

#[repr(C)]
struct FOwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

/// Opens a software task-clock perf event on thread `tid` of this process that sends `signal`
/// to that thread (with `si_code` `POLL_HUP` and `si_fd` the event's descriptor) each
/// `interval` of its CPU time, counted by a high-resolution timer (not the scheduler tick, which
/// bounds POSIX CPU timers to `CONFIG_HZ`). Each signal disables the event until
/// [`perf_rearm`]. Returns the descriptor.
pub fn open_task_clock(tid: u32, signal: i32, interval: Duration) -> io::Result<i32> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_TASK_CLOCK,
        sample_period: interval.as_nanos().max(1) as u64,
        flags: ATTR_DISABLED | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV,
        wakeup_events: 1,
        ..Default::default()
    };
    // SAFETY: a complete perf_event_attr of the size it states; plain integers otherwise.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            tid as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    } as i32;
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let owner = FOwnerEx {
        kind: F_OWNER_TID,
        pid: tid as libc::pid_t,
    };
    // SAFETY: fcntl/ioctl on the descriptor just opened; `owner` outlives the call.
    let ok = unsafe {
        libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC) == 0
            && libc::fcntl(fd, F_SETSIG, signal) == 0
            && libc::fcntl(fd, F_SETOWN_EX, &owner as *const FOwnerEx) == 0
            && libc::ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) == 0
    };
    if !ok {
        let e = io::Error::last_os_error();
        close_fd(fd);
        return Err(e);
    }
    Ok(fd)
}

/// Re-enables a task-clock event for its next signal.
#[inline]
pub fn perf_rearm(fd: i32) {
    // SAFETY: an ioctl on a descriptor; a closed one fails with EBADF.
    unsafe { libc::ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) };
}

/// Whether the thread of a task-clock event is still alive (a read of an event whose task has
/// exited returns end of file).
pub fn perf_alive(fd: i32) -> bool {
    let mut count = 0u64;
    // SAFETY: reads at most 8 bytes into `count`.
    let n = unsafe { libc::read(fd, (&mut count as *mut u64).cast(), 8) };
    n > 0
}

/// Closes a descriptor.
pub fn close_fd(fd: i32) {
    // SAFETY: closes a descriptor this crate opened, once.
    unsafe { libc::close(fd) };
}

/// Sleeps for `d` (interrupted sleeps resume), off the signal path.
pub fn sleep(d: Duration) {
    std::thread::sleep(d);
}

/// Zeroed 64-bit atomic words in pages of their own (an anonymous private mapping), unmapped
/// when dropped. The kernel backs a page only once it is written, and the whole mapping goes
/// back to it at the drop: a large buffer made per session neither costs its size in resident
/// memory up front nor stays in a malloc arena afterwards (glibc keeps a freed block at the top
/// of a thread's arena resident, and `malloc_trim` does not trim those).
pub struct MappedWords {
    ptr: std::ptr::NonNull<std::sync::atomic::AtomicU64>,
    len: usize,
}

// SAFETY: the mapping is owned by the value and only reached through atomics.
unsafe impl Send for MappedWords {}
// SAFETY: as above: shared access is through `AtomicU64` only.
unsafe impl Sync for MappedWords {}

impl MappedWords {
    /// `len` zeroed words (at least one); an error if the mapping cannot be made.
    pub fn new(len: usize) -> io::Result<MappedWords> {
        let len = len.max(1);
        let bytes = len
            .checked_mul(8)
            .ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        // SAFETY: a new anonymous private mapping at an address the kernel chooses; nothing else
        // refers to it. MAP_NORESERVE: pages are backed as they are written.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = std::ptr::NonNull::new(ptr.cast())
            .ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        Ok(MappedWords { ptr, len })
    }
}

impl std::ops::Deref for MappedWords {
    type Target = [std::sync::atomic::AtomicU64];

    fn deref(&self) -> &Self::Target {
        // SAFETY: `len` words of a page-aligned mapping this value owns, zero-filled by the
        // kernel (a valid `AtomicU64` each), alive until the drop.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for MappedWords {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, of this size; no reference outlives `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len * 8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_cpu_clock_of_this_thread_matches_its_own() {
        let tid = gettid();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        let a = current_thread_cpu_ns();
        let b = thread_cpu_ns(tid).unwrap();
        let c = current_thread_cpu_ns();
        assert!(a <= b && b <= c, "{a} {b} {c}");
        assert!(a > 0);
        assert_eq!(thread_cpu_ns(0x3fff_fff0), None);
        assert!(monotonic_ns() > 0);
        set_errno(42);
        assert_eq!(errno(), 42);
    }

    #[test]
    fn mapped_words_are_zeroed_and_writable_to_the_last() {
        use std::sync::atomic::Ordering;
        let words = MappedWords::new(1 << 20).unwrap();
        assert_eq!(words.len(), 1 << 20);
        assert!(words
            .iter()
            .step_by(512)
            .all(|w| w.load(Ordering::Relaxed) == 0));
        words[0].store(7, Ordering::Relaxed);
        words[(1 << 20) - 1].store(9, Ordering::Relaxed);
        assert_eq!(words[(1 << 20) - 1].load(Ordering::Relaxed), 9);
        assert_eq!(words[0].load(Ordering::Relaxed), 7);
        assert_eq!(MappedWords::new(0).unwrap().len(), 1);
    }
}
