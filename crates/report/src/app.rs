//! The interactive profile view: one page (HTML, CSS and script compiled in, nothing fetched)
//! that renders a profile document from its declared metrics: flame graph with zoom, search and
//! an inverted view, call tree, hot spots, the region table. The live UI serves it with the
//! profile read from its JSON endpoints (docs/ui.md); the HTML report embeds it with the
//! profile written into the page.

const PAGE: &str = include_str!("app/page.html");
const SCRIPT: &str = include_str!("app/app.js");
const STYLE: &str = include_str!("app/app.css");

/// The whole page of the live UI, which reads its data from the server.
pub fn page() -> String {
    PAGE.replace("/*STYLE*/", STYLE)
        .replace("/*SCRIPT*/", SCRIPT)
}

/// The view as a fragment for another page: its markup, style and script, showing `doc` (a
/// profile document, docs/json-schema.md, with `metrics` present) without a server.
pub fn embedded(doc: &serde_json::Value) -> String {
    let start = PAGE
        .find("<!--APP-->")
        .map_or(0, |i| i + "<!--APP-->".len());
    let end = PAGE.find("<!--/APP-->").unwrap_or(PAGE.len());
    // Markup characters occur only inside JSON strings, where their `\u` escapes mean the same:
    // nothing in the data can end the script element or read as markup.
    let json = doc
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    format!(
        "<style>\n{STYLE}</style>\n{}\n<script>window.FF_PROFILE = {json};</script>\n<script>\n{SCRIPT}</script>\n",
        &PAGE[start..end]
    )
}

/// The profile as the view reads it: its JSON document with its metrics always declared, so that
/// the view renders any mode from them.
pub fn document(profile: &ferrofluid_profile::Profile) -> serde_json::Value {
    let mut doc = serde_json::to_value(profile.to_document()).unwrap_or_default();
    for t in doc["threads"].as_array_mut().into_iter().flatten() {
        allocations_as_leaves(&mut t["root"]);
    }
    if let serde_json::Value::Object(map) = &mut doc {
        if map.get("metrics").is_none_or(serde_json::Value::is_null) {
            let metrics = profile
                .metrics()
                .iter()
                .map(|m| serde_json::json!({ "name": m.name, "unit": m.unit }))
                .collect();
            map.insert("metrics".into(), serde_json::Value::Array(metrics));
        }
    }
    doc
}

/// An allocation profile's `allocations` entries as childless nodes of their context (the
/// allocated class as a frame, its values under the metrics' keys), as the view draws them.
fn allocations_as_leaves(node: &mut serde_json::Value) {
    use serde_json::{json, Value};
    let mut pending = vec![node];
    while let Some(node) = pending.pop() {
        let Some(map) = node.as_object_mut() else {
            continue;
        };
        let leaves: Vec<Value> = match map.remove("allocations") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|a| {
                    json!({"class": a["class"], "method": "", "descriptor": "",
                           "objects": a["allocated"], "bytes": a["bytes"], "live": a["live"],
                           "live_bytes": a["live_bytes"], "survived": a["survived"],
                           "survived_bytes": a["survived_bytes"],
                           "generations": a["generations"],
                           "children": []})
                })
                .collect(),
            _ => Vec::new(),
        };
        if let Some(Value::Array(children)) = map.get_mut("children") {
            children.extend(leaves);
            pending.extend(children.iter_mut());
        }
    }
}

/// The key of a node's own value of metric `name` in the document.
fn own_key(name: &str) -> &str {
    match name {
        "calls" => "calls",
        "time" => "self_ns",
        "cpu_time" => "cpu_self_ns",
        other => other,
    }
}

/// Nodes a document may have before [`prune`] thins it: the page stays quick to load and draw.
pub const MAX_NODES: usize = 50_000;

/// Thins a large document (`doc` of [`document`]) for embedding: callees whose subtree weighs
/// less than `fraction` of the whole (by the weight metric: time, else the first metric other
/// than calls) are replaced, per parent, by one `"kind": "elided"` node carrying their summed
/// own values and their count in `elided`, so every total stays what it was. Documents of at
/// most [`MAX_NODES`] nodes are left whole. Returns how many nodes were elided.
pub fn prune(doc: &mut serde_json::Value, fraction: f64) -> usize {
    use serde_json::Value;
    fn count(node: &Value) -> usize {
        1 + node["children"]
            .as_array()
            .map_or(0, |c| c.iter().map(count).sum())
    }
    fn weigh(node: &Value, key: &str) -> f64 {
        node[key].as_f64().unwrap_or(0.0)
            + node["children"]
                .as_array()
                .map_or(0.0, |c| c.iter().map(|c| weigh(c, key)).sum())
    }
    fn add_own(into: &mut serde_json::Map<String, Value>, node: &Value, keys: &[String]) {
        for k in keys {
            let v = node[k.as_str()].as_f64().unwrap_or(0.0)
                + into.get(k.as_str()).and_then(Value::as_f64).unwrap_or(0.0);
            into.insert(k.clone(), serde_json::json!(v.round() as u64));
        }
        for c in node["children"].as_array().into_iter().flatten() {
            add_own(into, c, keys);
        }
    }
    fn thin(node: &mut Value, key: &str, keys: &[String], floor: f64) -> usize {
        let Some(children) = node.get_mut("children").and_then(Value::as_array_mut) else {
            return 0;
        };
        let (keep, drop): (Vec<Value>, Vec<Value>) = std::mem::take(children)
            .into_iter()
            .partition(|c| weigh(c, key) >= floor);
        let mut elided = 0;
        *children = keep;
        for c in children.iter_mut() {
            elided += thin(c, key, keys, floor);
        }
        if !drop.is_empty() {
            let mut lumped = serde_json::Map::new();
            lumped.insert("kind".into(), "elided".into());
            let n: usize = drop.iter().map(count).sum();
            lumped.insert("elided".into(), n.into());
            for d in &drop {
                add_own(&mut lumped, d, keys);
            }
            lumped.insert("children".into(), Value::Array(Vec::new()));
            children.push(Value::Object(lumped));
            elided += n;
        }
        elided
    }
    let threads = doc["threads"].as_array().map_or(&[][..], Vec::as_slice);
    if threads.iter().map(|t| count(&t["root"])).sum::<usize>() <= MAX_NODES {
        return 0;
    }
    let names: Vec<String> = doc["metrics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["name"].as_str().map(str::to_owned))
        .collect();
    let weight = names
        .iter()
        .find(|n| *n == "time")
        .or_else(|| names.iter().find(|n| *n != "calls"))
        .or(names.first())
        .map_or("self_ns", |n| own_key(n))
        .to_owned();
    let keys: Vec<String> = names.iter().map(|n| own_key(n).to_owned()).collect();
    let all: f64 = threads.iter().map(|t| weigh(&t["root"], &weight)).sum();
    let floor = all * fraction;
    let mut elided = 0;
    for t in doc["threads"].as_array_mut().into_iter().flatten() {
        elided += thin(&mut t["root"], &weight, &keys, floor);
    }
    elided
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn leaf(i: u64) -> serde_json::Value {
        json!({"class": "C", "method": format!("m{i}"), "descriptor": "()V", "calls": 1,
               "self_ns": i, "children": []})
    }

    #[test]
    fn large_documents_lump_light_callees_and_keep_totals() {
        let kids: Vec<_> = (0..MAX_NODES as u64 + 10).map(leaf).collect();
        let mut doc = json!({
            "metrics": [{"name": "calls", "unit": "count"}, {"name": "time", "unit": "nanoseconds"}],
            "threads": [{"name": "main", "root": {"kind": "thread", "calls": 0, "self_ns": 0, "children": kids}}]
        });
        let all: u64 = (0..MAX_NODES as u64 + 10).sum();
        // Leaves under 1/100000 of the whole (12,504.75 ns) go into one lump.
        let elided = prune(&mut doc, 0.00001);
        let children = doc["threads"][0]["root"]["children"].as_array().unwrap();
        assert_eq!(elided, 12_505);
        assert_eq!(children.len(), MAX_NODES + 10 - elided + 1);
        let lump = children.last().unwrap();
        assert_eq!(lump["kind"], "elided");
        assert_eq!(lump["elided"], elided);
        assert_eq!(lump["calls"], elided);
        assert_eq!(lump["self_ns"], (0..12_505u64).sum::<u64>());
        let sum: u64 = children
            .iter()
            .map(|c| c["self_ns"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, all);
    }

    #[test]
    fn small_documents_stay_whole_and_embed_safely() {
        let mut doc = json!({"metrics": [], "threads": [{"name": "</script>", "root": leaf(1)}]});
        assert_eq!(prune(&mut doc, 0.5), 0);
        let html = embedded(&doc);
        assert!(html.contains(r#""name":"\u003c/script\u003e""#), "{html}");
        assert!(!html.contains("</script>\"") && !html.contains("<\\/script>"));
        assert!(!html.contains("<!--APP-->") && html.contains("<div class=\"ffapp\">"));
        assert!(!page().contains("/*SCRIPT*/") && !page().contains("/*STYLE*/"));
    }
}
