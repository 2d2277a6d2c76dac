//! Near names for a root pattern that matches no loaded method: a typo in the class or the
//! method name, a class named without its package, a wrong descriptor. Used to say "did you
//! mean ...?" within seconds instead of profiling nothing for the whole duration.

use crate::pattern::MethodPattern;
use crate::registry::Registry;

/// Up to `max` loaded methods (`com.acme.Server::handle`) whose names come closest to
/// `pattern`, closest first.
pub(crate) fn near_names(registry: &Registry, pattern: &MethodPattern, max: usize) -> Vec<String> {
    let class_text = pattern.class().exact().map(|c| c.to_lowercase());
    let simple_text = class_text.as_deref().map(simple);
    let method_text = pattern.method_literal().map(|m| m.to_lowercase());
    let mut found: Vec<(usize, String)> = Vec::new();
    for class in &registry.classes {
        let name = registry.strings.resolve(class.name);
        if name.contains("$$Lambda") {
            continue;
        }
        let class_distance = if pattern.class().matches(name) {
            0
        } else if let (Some(full), Some(short)) = (&class_text, simple_text) {
            let lower = name.to_lowercase();
            // A class named without its package (or in the wrong one) costs one edit.
            let d = distance(&lower, full).min(distance(simple(&lower), short) + 1);
            if d > tolerance(short) {
                continue;
            }
            d
        } else {
            continue;
        };
        for method in class.methods.iter().filter(|m| m.has_code()) {
            let m = registry.strings.resolve(method.name);
            let descriptor = registry.strings.resolve(method.descriptor);
            let (method_distance, shown) = if pattern.matches(name, m, descriptor) {
                (0, m.to_owned())
            } else if pattern.class().matches(name) && pattern.method_matches(m) {
                // Only the descriptor differs: show the one the method has.
                (1, format!("{m}{}", descriptor.replace('/', ".")))
            } else if let Some(wanted) = &method_text {
                let d = distance(&m.to_lowercase(), wanted);
                if d > tolerance(wanted) {
                    continue;
                }
                (d, m.to_owned())
            } else if pattern.method_matches(m) {
                (0, m.to_owned())
            } else {
                continue;
            };
            let score = class_distance + method_distance;
            if score > 0 {
                found.push((score, format!("{}::{shown}", name.replace('/', "."))));
            }
        }
    }
    found.sort();
    found.dedup_by(|a, b| a.1 == b.1);
    found.into_iter().take(max).map(|(_, n)| n).collect()
}

/// The simple name of an internal class name.
fn simple(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// How many edits still make a name "near": one for short names, one more per five characters.
fn tolerance(name: &str) -> usize {
    1 + name.chars().count() / 5
}

/// Edit distance counting a swap of two neighbours as one edit (optimal string alignment).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > 8 {
        return a.len().abs_diff(b.len());
    }
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for (i, row) in d.chunks_mut(w).enumerate() {
        row[0] = i;
    }
    for (j, cell) in d.iter_mut().take(w).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1)
                .min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
        }
    }
    d[a.len() * w + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClassModel, MethodModel};
    use crate::registry::BOOTSTRAP;

    fn registry(classes: &[(&str, &[&str])]) -> Registry {
        let mut r = Registry::new();
        for (name, methods) in classes {
            let methods = methods
                .iter()
                .map(|m| MethodModel::new(m, "(I)V", 0x0001, vec![]))
                .collect();
            r.add(BOOTSTRAP, &ClassModel::new(name, None, &[], 0x0001, methods));
        }
        r
    }

    fn near(r: &Registry, pattern: &str) -> Vec<String> {
        near_names(r, &pattern.parse().unwrap(), 3)
    }

    #[test]
    fn typos_missing_packages_and_descriptors_find_the_method() {
        let r = registry(&[
            ("com/acme/Server", &["handle", "start"]),
            ("com/acme/Client", &["handle"]),
            ("org/other/Thing", &["run"]),
        ]);
        assert_eq!(near(&r, "com.acme.Sevrer::handle"), ["com.acme.Server::handle"]);
        assert_eq!(near(&r, "com.acme.Server::hadnle"), ["com.acme.Server::handle"]);
        assert_eq!(near(&r, "Server::handle"), ["com.acme.Server::handle"]);
        assert_eq!(
            near(&r, "com.acme.Server::handle()V"),
            ["com.acme.Server::handle(I)V"]
        );
        assert_eq!(near(&r, "com.acme.*::hndle"), ["com.acme.Client::handle", "com.acme.Server::handle"]);
        assert!(near(&r, "com.acme.Nothing::like").is_empty());
        assert!(near(&r, "net.**::run").is_empty());
    }

    #[test]
    fn distance_counts_swaps_once() {
        assert_eq!(distance("server", "sevrer"), 1);
        assert_eq!(distance("handle", "hadnle"), 1);
        assert_eq!(distance("abc", "abc"), 0);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
