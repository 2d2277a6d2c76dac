//! Acting as the target JVM's user on one thread only.
//!
//! HotSpot accepts an attach connection only from a peer whose effective uid/gid equal its own (root is
//! accepted too, but the trigger file must be owned by the JVM's user). A root tool therefore switches
//! identity. `seteuid(2)` from libc would switch *every* thread of the process (glibc broadcasts it), which
//! would race with whatever else the tool does, so the switch uses the raw syscalls, which on Linux change
//! only the calling thread's credentials, on a short-lived thread of its own.

use std::io;

/// Runs `f` on a new thread whose effective (and filesystem) uid/gid are `uid`/`gid`, when this process
/// is root and the target is not; otherwise runs it on a new thread unchanged.
pub fn as_user<T: Send>(uid: u32, gid: u32, f: impl FnOnce() -> T + Send) -> io::Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            if is_root() && uid != 0 {
                switch_thread(uid, gid)?;
            }
            Ok(f())
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("attach worker thread panicked")))
    })
}

/// Whether the effective uid of this process is 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The effective uid of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn switch_thread(uid: u32, gid: u32) -> io::Result<()> {
    // -1: leave that id unchanged.
    let keep = libc::uid_t::MAX;
    // Group first: once the uid is no longer root the thread may not change its gid any more.
    // SAFETY: raw setresgid/setresuid take three integer ids and touch no memory; they only change the
    // credentials of the calling thread, which is a private scoped thread that ends after `f`.
    let rc = unsafe { libc::syscall(libc::SYS_setresgid, keep, gid as libc::gid_t, keep) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    let rc = unsafe { libc::syscall(libc::SYS_setresuid, keep, uid as libc::uid_t, keep) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends SIGQUIT, which makes HotSpot look for the `.attach_pid` trigger and start its attach listener.
pub fn sigquit(pid: u32) -> io::Result<()> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: kill takes two integers; the caller has checked that the target maps libjvm.so, so the
    // signal is handled by the JVM instead of terminating the process.
    let rc = unsafe { libc::kill(pid, libc::SIGQUIT) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_stays_on_its_thread() {
        if !is_root() {
            eprintln!("skipped: needs root to switch identity");
            return;
        }
        let seen = as_user(65534, 65534, euid).unwrap();
        assert_eq!(seen, 65534);
        // The rest of the process is still root.
        assert_eq!(euid(), 0);
    }
}
