//! The control socket's private directory (0700) and the peer check (SO_PEERCRED).

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Creates `dir` with mode 0700, or accepts an existing one only if it is a real directory (not a
/// symlink) owned by us with no group/other access: anything else could let another user reach or
/// replace the socket.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() || meta.uid() != euid() || meta.mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "refusing {}: not a 0700 directory owned by uid {}",
                dir.display(),
                euid()
            ),
        ));
    }
    Ok(())
}

/// Sets a file's mode to 0600.
pub fn make_owner_only(path: &Path) -> io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

/// The peer's uid and pid (0 when the peer is outside our pid namespace) of a connected UNIX
/// socket.
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

/// Waits up to `timeout` for `stream` to become readable (data or end of stream).
pub fn poll_readable(stream: &UnixStream, timeout: std::time::Duration) -> io::Result<bool> {
    let mut fd = libc::pollfd {
        fd: stream.as_raw_fd(),
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

/// Only our own user and root may control the agent.
pub fn peer_allowed(peer: u32, own: u32) -> bool {
    peer == own || peer == 0
}

pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_rules() {
        assert!(peer_allowed(1000, 1000));
        assert!(peer_allowed(0, 1000));
        assert!(!peer_allowed(1001, 1000));
        let (a, _b) = UnixStream::pair().unwrap();
        assert_eq!(peer_cred(&a).unwrap(), (euid(), std::process::id()));
    }

    #[test]
    fn private_dir_is_created_0700_and_checked() {
        let base = std::env::temp_dir().join(format!("ff-private-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir(&base).unwrap();
        let dir = base.join("d");
        ensure_private_dir(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        ensure_private_dir(&dir).unwrap(); // existing and safe: accepted
        let open = base.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            ensure_private_dir(&open).unwrap_err().kind(),
            io::ErrorKind::PermissionDenied
        );
        let link = base.join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert_eq!(
            ensure_private_dir(&link).unwrap_err().kind(),
            io::ErrorKind::PermissionDenied
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
