//! The profile crate's modules import one way: the profile (`profile`, and `json`, `recording`,
//! `totals` over it) holds the parts of the model (`metric`, `alloc`, `compensation`, `region`,
//! `calibration`), which build on the trees and method table; never the reverse.

#[test]
fn modules_import_one_way() {
    ferrofluid_testkit::assert_no_module_cycles(std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
}
