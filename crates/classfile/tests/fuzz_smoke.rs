//! Runs the `read_patch` fuzz target's logic over the committed seed corpus
//! (`fuzz/corpus/read_patch/`), so `cargo test` exercises the fuzzer too.

use std::path::{Path, PathBuf};

use ferrofluid_classfile::attributes::AttributeKind;
use ferrofluid_classfile::class::access;
use ferrofluid_classfile::fuzzing::read_patch;
use ferrofluid_classfile::{ClassFile, ProbeKind};

/// Every file of `fuzz/<dir>`, sorted by name, as (name, bytes).
fn inputs(dir: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(dir);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect()
}

#[test]
fn seed_corpus_reads_and_patches() {
    let seeds = inputs("corpus/read_patch");
    assert_eq!(seeds.len(), 33, "fuzz/seeds-src/collect.py writes 33 seeds");
    let mut patched = [0usize; ProbeKind::ALL.len()];
    for (name, bytes) in &seeds {
        let outcome = read_patch(bytes);
        // Every seed is a valid class: it reads, and every probe handles it.
        let summary = outcome.read.unwrap_or_else(|e| panic!("{name}: {e}"));
        let class = ClassFile::parse(bytes).unwrap();
        let has_native = class.methods.iter().any(|m| m.access & access::NATIVE != 0);
        for (&kind, result) in ProbeKind::ALL.iter().zip(&outcome.patched) {
            let done = result.unwrap_or_else(|| panic!("{name}: instrument failed with {kind}"));
            patched[kind as usize] += done as usize;
            // Probes that hook every body change exactly the classes that have code;
            // the native probe exactly those with native methods.
            let expected = match kind {
                ProbeKind::EntryExit | ProbeKind::Blocks | ProbeKind::BlocksPrecise => {
                    Some(summary.count(AttributeKind::Code) > 0)
                }
                ProbeKind::Native => Some(has_native),
                ProbeKind::Alloc => None,
            };
            if let Some(expected) = expected {
                assert_eq!(done, expected, "{name}: patched by {kind}");
            }
        }
    }
    for (kind, n) in ProbeKind::ALL.iter().zip(patched) {
        println!("{kind}: {n} of {} seeds patched", seeds.len());
    }
    // Object, Thread and Tricky declare native methods.
    assert_eq!(patched[ProbeKind::Native as usize], 3);
}

/// Inputs the fuzzer found crashing, kept so they stay fixed (fuzz/README.md lists
/// them): frames with locals past `max_locals`, jumps and handlers inside instructions,
/// a `max_stack` at the 16-bit limit. Each is now a skip reason, never a panic.
#[test]
fn fuzz_regressions_do_not_panic() {
    let regressions = inputs("regressions/read_patch");
    assert!(!regressions.is_empty());
    for (name, bytes) in &regressions {
        println!("{name}");
        let _ = read_patch(bytes);
    }
}
