//! Near names for a root pattern that matches no loaded method: a typo in the class or the
//! method name, a class named without its package, a wrong descriptor. Used to say "did you
//! mean ...?" within seconds instead of profiling nothing for the whole duration.

use std::collections::HashMap;

use crate::intern::Sym;
use crate::pattern::MethodPattern;
use crate::registry::{ClassId, Registry};

/// Up to `max` loaded methods (`com.acme.Server::handle`) whose names come closest to
/// `pattern`, closest first. Allocation-free per class and cached per method name, since it runs
/// under the agent's session lock over every loaded class.
pub(crate) fn near_names(registry: &Registry, pattern: &MethodPattern, max: usize) -> Vec<String> {
    let class_text = pattern.class().exact();
    let simple_text = class_text.as_deref().map(simple);
    let method_text = pattern.method_literal();
    let mut scratch = Vec::new();
    // Distance of each method name (interned) to the pattern's, once per name: a registry holds
    // tens of thousands of classes but far fewer distinct method names.
    let mut method_distances: HashMap<Sym, Option<usize>> = HashMap::new();
    let mut found: Vec<(usize, ClassId, u32)> = Vec::new();
    for (index, class) in registry.classes.iter().enumerate() {
        let name = registry.strings.resolve(class.name);
        let class_matches = pattern.class().matches(name);
        let class_distance = if class_matches {
            0
        } else if let (Some(full), Some(short)) = (&class_text, simple_text) {
            // A class named without its package (or in the wrong one) costs one edit.
            let tolerance = tolerance(short);
            let by_simple = within(simple(name), short, tolerance - 1, &mut scratch).map(|d| d + 1);
            let d = match within(name, full, tolerance, &mut scratch) {
                Some(d) => Some(by_simple.map_or(d, |s| s.min(d))),
                None => by_simple,
            };
            match d {
                Some(d) => d,
                None => continue,
            }
        } else {
            continue;
        };
        if name.contains("$$Lambda") {
            continue;
        }
        for (m, method) in class.methods.iter().enumerate() {
            if !method.has_code() {
                continue;
            }
            // 0: the name matches (then only the descriptor can differ); else its distance.
            let d = *method_distances.entry(method.name).or_insert_with(|| {
                let method_name = registry.strings.resolve(method.name);
                if pattern.method_matches(method_name) {
                    Some(0)
                } else {
                    let wanted = method_text.as_deref()?;
                    within(method_name, wanted, tolerance(wanted), &mut scratch)
                }
            });
            let method_distance = match d {
                // Only the descriptor differs: shown with the method's own.
                Some(0) if class_matches => 1,
                Some(d) => d,
                None => continue,
            };
            let score = class_distance + method_distance;
            if score > 0 {
                found.push((score, ClassId(index as u32), m as u32));
            }
        }
    }
    found.sort_by_key(|&(score, class, method)| {
        let c = &registry.classes[class.0 as usize];
        (
            score,
            registry.strings.resolve(c.name),
            registry.strings.resolve(c.methods[method as usize].name),
        )
    });
    let mut names: Vec<String> = Vec::new();
    for (_, class, method) in found {
        let c = &registry.classes[class.0 as usize];
        let name = registry.strings.resolve(c.name);
        let rec = &c.methods[method as usize];
        let method_name = registry.strings.resolve(rec.name);
        let shown = if pattern.class().matches(name) && pattern.method_matches(method_name) {
            let descriptor = registry.strings.resolve(rec.descriptor);
            format!("{method_name}{}", descriptor.replace('/', "."))
        } else {
            method_name.to_owned()
        };
        let text = format!("{}::{shown}", name.replace('/', "."));
        if !names.contains(&text) {
            names.push(text);
            if names.len() == max {
                break;
            }
        }
    }
    names
}

/// The simple name of an internal class name.
fn simple(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// How many edits still make a name "near": one for short names, one more per five characters.
fn tolerance(name: &str) -> usize {
    1 + name.len() / 5
}

/// The distance of `a` to `b` ignoring ASCII case, if it is at most `limit`.
fn within(a: &str, b: &str, limit: usize, scratch: &mut Vec<usize>) -> Option<usize> {
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let d = distance(a.as_bytes(), b.as_bytes(), scratch);
    (d <= limit).then_some(d)
}

/// Edit distance counting a swap of two neighbours as one edit (optimal string alignment), on
/// bytes ignoring ASCII case; `scratch` is reused between calls.
fn distance(a: &[u8], b: &[u8], scratch: &mut Vec<usize>) -> usize {
    let w = b.len() + 1;
    scratch.clear();
    scratch.resize((a.len() + 1) * w, 0);
    let d = scratch;
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().take(w).enumerate() {
        *cell = j;
    }
    let eq = |x: u8, y: u8| x.eq_ignore_ascii_case(&y);
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(!eq(a[i - 1], b[j - 1]));
            let mut v = (d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1)
                .min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && eq(a[i - 1], b[j - 2]) && eq(a[i - 2], b[j - 1]) {
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
            r.add(
                BOOTSTRAP,
                &ClassModel::new(name, None, &[], 0x0001, methods),
            );
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
        assert_eq!(
            near(&r, "com.acme.Sevrer::handle"),
            ["com.acme.Server::handle"]
        );
        assert_eq!(
            near(&r, "com.acme.Server::hadnle"),
            ["com.acme.Server::handle"]
        );
        assert_eq!(near(&r, "Server::handle"), ["com.acme.Server::handle"]);
        assert_eq!(
            near(&r, "com.acme.Server::handle()V"),
            ["com.acme.Server::handle(I)V"]
        );
        assert_eq!(
            near(&r, "com.acme.*::hndle"),
            ["com.acme.Client::handle", "com.acme.Server::handle"]
        );
        assert!(near(&r, "com.acme.Nothing::like").is_empty());
        assert!(near(&r, "net.**::run").is_empty());
    }

    #[test]
    fn distance_counts_swaps_once() {
        let d = |a: &str, b: &str| distance(a.as_bytes(), b.as_bytes(), &mut Vec::new());
        assert_eq!(d("server", "sevrer"), 1);
        assert_eq!(d("handle", "hadnle"), 1);
        assert_eq!(d("Server", "server"), 0);
        assert_eq!(d("abc", "abc"), 0);
        assert_eq!(d("", "abc"), 3);
        assert_eq!(d("kitten", "sitting"), 3);
        assert_eq!(within("kitten", "sitting", 2, &mut Vec::new()), None);
    }
}
