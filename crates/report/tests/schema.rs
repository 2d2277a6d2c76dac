//! `docs/json-schema.md` is checked against the code: its examples parse into the
//! document types without losing or inventing fields, the full example's compensated
//! numbers are what the model computes, and every field the writer emits is documented.

use std::collections::BTreeSet;
use std::path::Path;

use ferrofluid_profile::json::Document;
use ferrofluid_profile::Profile;
use serde_json::Value;

fn schema_doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/json-schema.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_blocks(md: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in md.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```json") => current = Some(String::new()),
            (Some(_), "```") => blocks.push(current.take().unwrap()),
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn examples_parse_exactly_and_the_full_one_is_consistent() {
    let blocks = json_blocks(&schema_doc());
    assert_eq!(
        blocks.len(),
        3,
        "the full, the minimal and the code-region example"
    );
    for (i, block) in blocks.iter().enumerate() {
        let value: Value = serde_json::from_str(block).unwrap();
        let doc: Document = serde_json::from_value(value.clone()).unwrap();
        // Unknown or misspelt fields would vanish in this round trip.
        assert_eq!(serde_json::to_value(&doc).unwrap(), value, "example {i}");
        Profile::from_document(&doc).unwrap();
    }
    let full: Document = serde_json::from_str(&blocks[0]).unwrap();
    let profile = Profile::from_document(&full).unwrap();
    assert_eq!(
        profile.to_document(),
        full,
        "example's numbers are not what ferrofluid computes"
    );
    let region: Document = serde_json::from_str(&blocks[2]).unwrap();
    let profile = Profile::from_document(&region).unwrap();
    assert_eq!(profile.regions.as_ref().map(Vec::len), Some(1));
    assert_eq!(profile.to_document(), region);
}

fn keys(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                out.insert(k.clone());
                keys(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

#[test]
fn every_written_field_is_documented() {
    let md = schema_doc();
    let mut seen = BTreeSet::new();
    for case in ["fig4", "sample", "region", "idle"] {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/{case}/report.json"));
        let v = ferrofluid_testkit::read_profile_json(&path);
        keys(&v, &mut seen);
    }
    assert!(
        seen.len() >= 20,
        "golden files cover the optional fields too: {seen:?}"
    );
    let undocumented: Vec<_> = seen
        .iter()
        .filter(|k| !md.contains(&format!("`{k}`")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "not in docs/json-schema.md: {undocumented:?}"
    );
}

fn tagged_blocks(md: &str, tag: &str) -> Vec<String> {
    let open = format!("```json {tag}");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in md.lines() {
        match (&mut current, line.trim_end()) {
            (None, l) if l == open => current = Some(String::new()),
            (Some(_), "```") => blocks.push(current.take().unwrap()),
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// The `count` example reads into a profile with a `bytecodes` side table and is written back
/// byte for byte.
#[test]
fn the_count_example_round_trips() {
    let blocks = tagged_blocks(&schema_doc(), "count");
    assert_eq!(blocks.len(), 1);
    let value: Value = serde_json::from_str(&blocks[0]).unwrap();
    let doc: Document = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(serde_json::to_value(&doc).unwrap(), value);
    let profile = Profile::from_document(&doc).unwrap();
    assert_eq!(profile.mode, ferrofluid_profile::Mode::Count);
    assert_eq!(profile.threads[0].tree.width(), 1);
    assert_eq!(profile.to_document(), doc);
    let mut written = Vec::new();
    profile.write_json(&mut written).unwrap();
    assert_eq!(String::from_utf8(written).unwrap(), blocks[0]);
}

/// The keys of the other modes' documents are documented too.
#[test]
fn every_metric_key_is_documented() {
    let md = schema_doc();
    let mut seen = BTreeSet::new();
    for case in ["count", "alloc"] {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/{case}/report.json"));
        keys(&ferrofluid_testkit::read_profile_json(&path), &mut seen);
    }
    for key in ["metrics", "name", "unit", "bytecodes", "objects", "bytes"] {
        assert!(seen.contains(key), "{key} not written: {seen:?}");
    }
    let undocumented: Vec<_> = seen
        .iter()
        .filter(|k| !md.contains(&format!("`{k}`")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "not in docs/json-schema.md: {undocumented:?}"
    );
}

/// The keys of an allocation profile made by the `alloc` engine are documented too.
#[test]
fn every_allocation_key_is_documented() {
    let md = schema_doc();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/allocpaths/report.json");
    let mut seen = BTreeSet::new();
    keys(&ferrofluid_testkit::read_profile_json(&path), &mut seen);
    for key in [
        "allocations",
        "allocated",
        "live",
        "live_bytes",
        "generations",
        "live_estimated",
    ] {
        assert!(seen.contains(key), "{key} not written: {seen:?}");
    }
    let undocumented: Vec<_> = seen
        .iter()
        .filter(|k| !md.contains(&format!("`{k}`")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "not in docs/json-schema.md: {undocumented:?}"
    );
}

/// The keys of a native profile are documented too.
#[test]
fn every_native_key_is_documented() {
    let md = schema_doc();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/native/report.json");
    let mut seen = BTreeSet::new();
    keys(&ferrofluid_testkit::read_profile_json(&path), &mut seen);
    for key in [
        "bytecode_ns",
        "native_ns",
        "natives",
        "upcall_targets",
        "not_measured",
        "reason",
        "detail",
        "native_time",
        "upcalls",
    ] {
        assert!(seen.contains(key), "{key} not written: {seen:?}");
    }
    let undocumented: Vec<_> = seen
        .iter()
        .filter(|k| !md.contains(&format!("`{k}`")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "not in docs/json-schema.md: {undocumented:?}"
    );
}
