//! The profile JSON document (docs/json-schema.md): parsed at any depth, and the lookups the tests
//! make in it.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

/// Parses a profile JSON document (the agent's `file=` output, `ferrofluid run -o`) of any
/// nesting depth: serde_json's default limit of 128 levels rejects a call tree deeper than about
/// 64 frames, so the limit is off and the recursion runs on a stack that grows on the heap (as
/// `ferrofluid_profile::Document::from_json_slice` parses). Panics on invalid JSON.
pub fn parse_profile_json(json: &str) -> Value {
    let mut de = serde_json::Deserializer::from_str(json);
    de.disable_recursion_limit();
    let value = Value::deserialize(serde_stacker::Deserializer::new(&mut de))
        .unwrap_or_else(|e| panic!("profile JSON: {e}"));
    de.end().unwrap_or_else(|e| panic!("profile JSON: {e}"));
    value
}

/// Reads and parses the profile JSON file `path` (see [`parse_profile_json`]).
pub fn read_profile_json(path: &Path) -> Value {
    let json = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_profile_json(&json)
}

/// `v` as a number; panics naming it otherwise.
pub fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The thread named `name` in a profile document.
pub fn thread<'a>(doc: &'a Value, name: &str) -> &'a Value {
    entry(doc, "threads", "name", name)
}

/// The entry of array `list` in a profile document whose `key` is `value`.
pub fn entry<'a>(doc: &'a Value, list: &str, key: &str, value: &str) -> &'a Value {
    doc[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e[key] == value)
        .unwrap_or_else(|| panic!("no {list} entry with {key} {value} in {doc}"))
}

/// The child of profile node `node` for method `name`.
pub fn child<'a>(node: &'a Value, name: &str) -> &'a Value {
    entry(node, "children", "method", name)
}

/// The method names of profile node `node`'s children, in order.
pub fn child_names(node: &Value) -> Vec<&str> {
    node["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["method"].as_str().unwrap())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_json_parses() {
        let depth = 2000;
        let json = format!("{}0{}", "[".repeat(depth), "]".repeat(depth));
        assert!(serde_json::from_str::<Value>(&json).is_err());
        let mut v = &parse_profile_json(&json);
        for _ in 0..depth {
            v = &v[0];
        }
        assert_eq!(v, 0);
    }

    #[test]
    fn trailing_garbage_is_refused() {
        assert!(std::panic::catch_unwind(|| parse_profile_json("{} x")).is_err());
    }

    #[test]
    fn lookups() {
        let doc = serde_json::json!({"threads": [{"name": "main", "root": {"children": [
            {"method": "f", "calls": 2, "children": []}, {"method": "g", "children": []}]}}]});
        let root = &thread(&doc, "main")["root"];
        assert_eq!(child_names(root), ["f", "g"]);
        assert_eq!(u(&child(root, "f")["calls"]), 2);
        assert!(std::panic::catch_unwind(|| thread(&doc, "other").clone()).is_err());
    }
}
