//! UNIX socket paths of any length.
//!
//! `sockaddr_un` holds 107 bytes of path, so a control socket under a deep directory (a CI checkout,
//! a build's `target/tmp`, a container reached through `/proc/<pid>/root`) could be neither bound nor
//! reached by its path. Linux resolves `/proc/self/fd/N` as the file open on `N`, so a long path is
//! bound and reached through its parent directory held open for the call.

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// The longest path `sockaddr_un` takes: 108 bytes with the terminating NUL.
const SUN_PATH_MAX: usize = 107;

/// Binds a listening socket at `path`, whatever its length.
pub fn bind(path: &Path) -> io::Result<UnixListener> {
    through_parent(path, |p| UnixListener::bind(p))
}

/// Connects to the socket at `path`, whatever its length.
pub fn connect(path: &Path) -> io::Result<UnixStream> {
    through_parent(path, |p| UnixStream::connect(p))
}

fn through_parent<T>(path: &Path, op: impl FnOnce(&Path) -> io::Result<T>) -> io::Result<T> {
    if path.as_os_str().len() <= SUN_PATH_MAX {
        return op(path);
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return op(path);
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    // Open until `op` returns: the short path names the directory only while this descriptor lives.
    let dir = File::open(parent)?;
    let short = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(name);
    op(&short)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A fresh directory whose path is longer than `sockaddr_un` holds, and the top one of it
    /// made here (to remove).
    fn deep_dir(tag: &str) -> (PathBuf, PathBuf) {
        let top = std::env::temp_dir().join(format!("ff-sock-{tag}-{}", std::process::id()));
        let mut dir = top.clone();
        while dir.as_os_str().len() < 150 {
            dir.push("a-directory-deep-enough");
        }
        std::fs::create_dir_all(&dir).unwrap();
        (top, dir)
    }

    #[test]
    fn a_socket_path_longer_than_sun_path_is_bound_and_reached() {
        let (top, dir) = deep_dir("long");
        let path = dir.join("control.sock");
        assert!(path.as_os_str().len() > SUN_PATH_MAX);
        // What std alone does with it: the failure this module exists for.
        let plain = UnixListener::bind(&path).unwrap_err();
        assert_eq!(plain.kind(), io::ErrorKind::InvalidInput, "{plain}");

        let listener = bind(&path).unwrap();
        assert!(path.exists(), "the socket is made at the real path");
        let mut client = connect(&path).unwrap();
        let (mut served, _) = listener.accept().unwrap();
        client.write_all(b"ping").unwrap();
        let mut got = [0; 4];
        served.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
        let _ = std::fs::remove_dir_all(top);
    }

    #[test]
    fn a_long_path_whose_directory_is_missing_fails_as_not_found() {
        let (top, dir) = deep_dir("missing");
        let dir = dir.join("gone");
        let err = bind(&dir.join("control.sock")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        let err = connect(&dir.join("control.sock")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        let _ = std::fs::remove_dir_all(top);
    }

    #[test]
    fn a_short_path_is_used_as_it_is() {
        let path = std::env::temp_dir().join(format!("ff-sock-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = bind(&path).unwrap();
        assert_eq!(
            listener.local_addr().unwrap().as_pathname(),
            Some(path.as_path())
        );
        drop(listener);
        std::fs::remove_file(&path).unwrap();
    }
}
