//! The native of the block-counting probes, `Hooks.exitBlocks(id, bytecodes)` (and
//! `unwindBlocks`): the `count` engine's exit, which takes the bytecodes the method's block
//! counters summed (`engine::exit_blocks`). In the hooks class this agent generates those have
//! Java bodies that return outside every root and call the natives `exitBlocks0` and
//! `unwindBlocks0` otherwise (`ferrofluid_classfile::hooks_class`).

use std::ffi::c_void;

use ferrofluid_jvmti::sys;

use super::natives::Native;

/// The block probes' natives, for the hooks class's registration table: `exitBlocks0` and
/// `unwindBlocks0` with `gated` (the class has the Java gates), else (a class an older agent
/// defined in this JVM) `exitBlocks` and `unwindBlocks` themselves.
pub fn natives(gated: bool) -> Vec<Native> {
    let blocks = native_exit_blocks as *mut c_void;
    if gated {
        vec![
            (c"exitBlocks0", c"(II)V", blocks),
            (c"unwindBlocks0", c"(II)V", blocks),
        ]
    } else {
        vec![
            (c"exitBlocks", c"(II)V", blocks),
            (c"unwindBlocks", c"(II)V", blocks),
        ]
    }
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
