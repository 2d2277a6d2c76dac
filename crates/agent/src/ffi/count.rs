//! The native of the block-counting probes, `Hooks.exitBlocks(id, bytecodes)` (and
//! `unwindBlocks`): the `count` engine's exit, which takes the bytecodes the method's block
//! counters summed (`engine::exit_blocks`).

use std::ffi::c_void;

use ferrofluid_jvmti::sys;

use super::natives::Native;

/// The block probes' natives, for the hooks class's registration table.
pub fn natives() -> Vec<Native> {
    let blocks = native_exit_blocks as *mut c_void;
    vec![
        (c"exitBlocks", c"(II)V", blocks),
        (c"unwindBlocks", c"(II)V", blocks),
    ]
}

/// `Hooks.exitBlocks(id, bytecodes)` and `Hooks.unwindBlocks(id, bytecodes)`.
pub extern "C" fn native_exit_blocks(
    env: *mut sys::JNIEnv,
    _: sys::jclass,
    id: sys::jint,
    bytecodes: sys::jint,
) {
    ferrofluid_jvmti::ffi_guard("Hooks.exitBlocks", (), || {
        crate::engine::exit_blocks(env, id, bytecodes)
    })
}
