//! The `class_model` fuzz target's property over the committed seed corpus
//! (`fuzz/corpus/read_patch/`) and simple mutations of it, so `cargo test` exercises it too:
//! `ClassModel::parse` gives a model or an error for any bytes, never a panic.

use std::path::Path;

use ferrofluid_subgraph::ClassModel;

fn seeds() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/read_patch");
    let mut seeds: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    seeds.sort();
    seeds
}

#[test]
fn every_seed_parses_and_truncated_or_flipped_bytes_never_panic() {
    let seeds = seeds();
    assert_eq!(seeds.len(), 33);
    let mut trivial = 0;
    for (name, bytes) in &seeds {
        let model = ClassModel::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        trivial += model.methods.iter().filter(|m| m.trivial).count();
        // 64 cuts and 64 single-byte flips spread over the file: each gives a model or an
        // error (a panic fails the test).
        let step = (bytes.len() / 64).max(1);
        for at in (0..bytes.len()).step_by(step) {
            let _ = ClassModel::parse(&bytes[..at]);
            let mut flipped = bytes.clone();
            flipped[at] ^= 0xff;
            let _ = ClassModel::parse(&flipped);
        }
    }
    // The seeds' trivial methods (getters, setters, constants...) today: a change of the rule
    // (`model::is_trivial`) shows here.
    assert_eq!(trivial, 65);
}
