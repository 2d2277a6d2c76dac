//! read_all, then instrument with every probe; a patched class must read back.
//! The logic is `ferrofluid_classfile::fuzzing::read_patch`, which `cargo test` also
//! runs over the seed corpus (crates/classfile/tests/fuzz_smoke.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ferrofluid_classfile::fuzzing::read_patch(data);
});
