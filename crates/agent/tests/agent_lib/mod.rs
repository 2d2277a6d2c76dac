//! The agent library cargo built for these tests.

use std::path::PathBuf;

/// `target/<profile>/deps/libferrofluid_agent.so`, beside the test executable (cargo does not
/// copy the cdylib up to `target/<profile>/` for `cargo test`).
pub fn agent_so() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().join("libferrofluid_agent.so");
    assert!(path.exists(), "{} not built", path.display());
    path
}
