//! Where cargo left the agent library.

use std::path::{Path, PathBuf};

/// The agent library's file name.
pub const AGENT_LIBRARY: &str = "libferrofluid_agent.so";

/// The agent library in the first of `dirs` that has it; panics with how to build it otherwise.
/// The newest of the candidates: `cargo test` refreshes only the copy in `deps/`, so one left
/// beside the binary by an earlier `cargo build` may be stale.
fn find_agent_library(dirs: &[PathBuf]) -> PathBuf {
    dirs.iter()
        .map(|d| d.join(AGENT_LIBRARY))
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max_by_key(|(modified, _)| *modified)
        .map(|(_, p)| p)
        .unwrap_or_else(|| {
            panic!(
                "{AGENT_LIBRARY} not built in {}: run `cargo test --workspace --release` or \
                 `cargo build --release -p ferrofluid-agent` first",
                dirs[0].display()
            )
        })
}

/// For the agent crate's own tests: cargo builds the cdylib into `target/<profile>/deps/`, beside
/// the test executable, and does not copy it up to `target/<profile>/` for `cargo test`.
pub fn agent_library_beside_test() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    find_agent_library(&[exe.parent().unwrap().to_path_buf()])
}

/// For tests that run the agent without building it (the CLI's, with `bin` its binary): next to
/// `bin` after `cargo build`, in `deps/` when `cargo test --workspace` built it for the agent
/// crate's own tests.
pub fn agent_library_beside(bin: &Path) -> PathBuf {
    let dir = bin.parent().unwrap();
    find_agent_library(&[dir.to_path_buf(), dir.join("deps")])
}
