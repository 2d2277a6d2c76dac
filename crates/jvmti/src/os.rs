//! The few operating-system calls the agent makes, as safe functions: the control socket's peer
//! check and idle poll, the effective uid, clocks, handing freed heap back to the kernel, and the
//! symbols of a shared library the JVM loaded.

use std::io;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

/// The peer's uid and pid (0 when the peer is outside our pid namespace) of a connected UNIX
/// socket (`SO_PEERCRED`).
pub fn peer_cred(stream: &UnixStream) -> io::Result<(u32, u32)> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, a properly sized ucred, for a live fd.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((cred.uid, u32::try_from(cred.pid).unwrap_or(0)))
}

/// Waits up to `timeout` for `fd` to become readable (data or end of stream on a stream, a
/// connection waiting on a listener); an interrupted wait is `Ok(false)`.
pub fn poll_readable(fd: &impl AsRawFd, timeout: Duration) -> io::Result<bool> {
    let mut fd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd for a live descriptor.
    let n = unsafe { libc::poll(&mut fd, 1, ms) };
    match n {
        -1 if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => Ok(false),
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(false),
        _ => Ok(true),
    }
}

/// Shuts a listening socket down, which wakes a thread waiting on it ([`poll_readable`] sees it
/// readable) without a connection: a stop that must not wait for the waiter's timeout.
pub fn shut_down_listener(listener: &UnixListener) -> io::Result<()> {
    // SAFETY: shutdown(2) on a live descriptor this process owns; it reads no memory.
    let rc = unsafe { libc::shutdown(listener.as_raw_fd(), libc::SHUT_RDWR) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The effective uid of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Returns the heap pages glibc's arenas hold free to the kernel (`malloc_trim(0)`); nothing
/// elsewhere.
pub fn malloc_trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// `clock_gettime(clock)` in ns (0 if the clock is not available).
#[inline]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into `ts`; an unknown clock leaves it zero.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), ns.
#[inline]
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The monotonic clock (`CLOCK_MONOTONIC`), ns.
#[inline]
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// The time-stamp counter (`rdtsc`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no preconditions on x86_64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Asks the CPU for the cache line of `p` in exclusive state, ahead of a write (`prefetchw`).
/// Only a hint: it never faults, whatever `p` is, and changes no memory; CPUs without the
/// instruction execute it as a no-op.
#[inline(always)]
pub fn prefetch_for_write<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetchw` only hints the cache hierarchy; it never faults and changes no memory or
    // register.
    unsafe {
        core::arch::asm!("prefetchw [{0}]", in(reg) p, options(nostack, preserves_flags, readonly));
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A shared library (`dlopen`), kept open.
#[derive(Debug)]
pub struct Library(std::ptr::NonNull<libc::c_void>);

// SAFETY: a `dlopen` handle may be used from any thread.
unsafe impl Send for Library {}
// SAFETY: `dlsym` on one handle is thread-safe.
unsafe impl Sync for Library {}

impl Library {
    /// The library at `path`, loaded now if the process has not loaded it yet (its code is
    /// not run: `dlopen` calls no JNI_OnLoad, and a library's own constructors run once).
    pub fn open(path: &str) -> Option<Library> {
        let c = std::ffi::CString::new(path).ok()?;
        // SAFETY: a NUL-terminated path of a library the JVM itself loads.
        let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY) };
        std::ptr::NonNull::new(handle).map(Library)
    }

    /// The address of symbol `name`, if the library defines it.
    pub fn symbol(&self, name: &str) -> Option<*mut libc::c_void> {
        let c = std::ffi::CString::new(name).ok()?;
        // SAFETY: a handle `dlopen` returned (never closed) and a NUL-terminated name.
        let p = unsafe { libc::dlsym(self.0.as_ptr(), c.as_ptr()) };
        (!p.is_null()).then_some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_pair_shows_our_own_credentials() {
        let (a, b) = UnixStream::pair().unwrap();
        assert_eq!(peer_cred(&a).unwrap(), (euid(), std::process::id()));
        assert!(!poll_readable(&a, Duration::from_millis(1)).unwrap());
        drop(b);
        assert!(
            poll_readable(&a, Duration::from_millis(100)).unwrap(),
            "end of stream"
        );
    }

    #[test]
    fn clocks_advance() {
        let (m, c) = (monotonic_ns(), thread_cpu_ns());
        let mut x = 0u64;
        for i in 0..100_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        assert!(monotonic_ns() > m && thread_cpu_ns() >= c && m > 0);
        malloc_trim();
        let v = 7u64;
        prefetch_for_write(&v);
        prefetch_for_write(std::ptr::null::<u64>());
    }
}
