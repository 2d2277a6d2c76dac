//! The planner's reading of a class file (`ferrofluid_subgraph::ClassModel::parse`: supertypes,
//! call sites, static field accesses, trivial methods), which the agent runs on every class a
//! JVM loads: any input must give a model or an error, never a panic. Seeds: the class files of
//! `corpus/read_patch`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(model) = ferrofluid_subgraph::ClassModel::parse(data) {
        // A model from the same bytes is the same model.
        assert_eq!(ferrofluid_subgraph::ClassModel::parse(data).ok(), Some(model));
    }
});
