//! The report crate's modules import one way: the writers of each format (`html`, `text`, ...)
//! use the sections they share (`metrics`, `alloc`, `region`, `flame`), which use the shared
//! helpers of `view`; never the reverse.

#[test]
fn modules_import_one_way() {
    ferrofluid_testkit::assert_no_module_cycles(std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
}
