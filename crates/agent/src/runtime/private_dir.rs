//! The control socket's private directory (0700) and the peer check (SO_PEERCRED).

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
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

pub use ferrofluid_jvmti::os::{euid, peer_cred, poll_readable, shut_down_listener};

/// Only our own user and root may control the agent.
pub fn peer_allowed(peer: u32, own: u32) -> bool {
    peer == own || peer == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

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
