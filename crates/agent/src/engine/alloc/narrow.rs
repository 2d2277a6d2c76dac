//! The `alloc` mode's selection of allocated classes (`alloc-class`), and narrowing a running
//! session to new ones (docs/modes/alloc.md, "Narrowing a running session";
//! docs/decisions/0046-narrowing-allocation-sites.md).
//!
//! The class-file engine asks, per allocation site, whether its allocated class is wanted
//! (`Selection::wants_alloc_of`); a site not wanted gets no probe. The agent remembers the
//! allocated class of every site of every class the session instrumented, probed or not, so that
//! a narrowing retransforms only the classes with a site whose probe comes or goes. Counts,
//! site ids and tracked objects (`super::sites`, `super::tracker`) are not touched.
//!
//! Locks: both are taken under the session's lock (in the ClassFileLoadHook and while
//! narrowing), never the other way round, and never across a JVMTI call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use ferrofluid_protocol::AllocClassPattern;

use super::STATE;
use crate::engine::ClassKey;

/// The allocated type recorded for a reflective or `clone()` call site, whose objects' classes
/// are known only at run time: no selection of classes matches it, every class does.
pub const CALL_SITE_TYPE: &str = "<call>";

/// The selection of allocated classes and the sites it applies to.
pub struct Narrow {
    /// The selection in force: empty selects every class.
    selection: Mutex<Option<Arc<[AllocClassPattern]>>>,
    /// Per class instrumented in the current session: the allocated type (internal name or
    /// array descriptor) of each of its allocation sites, probed or not.
    sites: Mutex<Option<HashMap<ClassKey, Vec<String>>>>,
}

impl Narrow {
    pub const fn new() -> Narrow {
        Narrow {
            selection: Mutex::new(None),
            sites: Mutex::new(None),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts an `alloc` session's selection: `patterns`, and no class seen yet.
pub fn configure(patterns: &[AllocClassPattern]) {
    *lock(&STATE.narrow.selection) = Some(normalized(patterns.to_vec()));
    *lock(&STATE.narrow.sites) = None;
}

/// `patterns`, or none when one of them is every class (so the profile says "every class").
fn normalized(patterns: Vec<AllocClassPattern>) -> Arc<[AllocClassPattern]> {
    if patterns.iter().any(AllocClassPattern::is_every_class) {
        Arc::new([])
    } else {
        patterns.into()
    }
}

/// The selection in force, for one class's instrumentation.
pub fn current() -> Arc<[AllocClassPattern]> {
    lock(&STATE.narrow.selection).clone().unwrap_or_else(|| Arc::new([]))
}

/// The selection in force as the option string spells it (empty: every class).
pub fn selection() -> Vec<String> {
    current().iter().map(ToString::to_string).collect()
}

/// `key` was instrumented: the allocated types of its sites, in order.
pub fn record(key: &ClassKey, types: Vec<String>) {
    lock(&STATE.narrow.sites)
        .get_or_insert_with(HashMap::new)
        .insert(key.clone(), types);
}

/// What a narrowing changes.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Narrowing {
    /// Classes with a site whose probe comes or goes: to retransform.
    pub changed: Vec<ClassKey>,
    /// Sites of the classes seen so far that have a probe under the new selection.
    pub probed: u64,
    /// Sites of the classes seen so far that have none.
    pub unprobed: u64,
}

/// Makes `patterns` the selection in force and says which classes must be retransformed for
/// it. The caller holds the session's lock, so no class is instrumented meanwhile.
pub fn narrow_to(patterns: Vec<AllocClassPattern>) -> Narrowing {
    let new = normalized(patterns);
    let old = lock(&STATE.narrow.selection)
        .replace(Arc::clone(&new))
        .unwrap_or_else(|| Arc::new([]));
    let sites = lock(&STATE.narrow.sites);
    let mut narrowing = Narrowing::default();
    for (key, types) in sites.iter().flatten() {
        let mut changed = false;
        for t in types {
            let now = AllocClassPattern::any_matches(&new, t);
            changed |= now != AllocClassPattern::any_matches(&old, t);
            if now {
                narrowing.probed += 1;
            } else {
                narrowing.unprobed += 1;
            }
        }
        if changed {
            narrowing.changed.push(key.clone());
        }
    }
    narrowing.changed.sort();
    narrowing
}

#[cfg(test)]
mod tests {
    use super::*;


    fn patterns(list: &[&str]) -> Vec<AllocClassPattern> {
        list.iter().map(|p| p.parse().unwrap()).collect()
    }

    fn key(name: &str) -> ClassKey {
        (ferrofluid_subgraph::BOOTSTRAP, name.to_owned())
    }

    /// Only classes with a site whose probe comes or goes are retransformed, in either
    /// direction, and every site is counted once per narrowing.
    #[test]
    fn only_classes_whose_probes_change_are_retransformed() {
        let _one = crate::testing::SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        configure(&[]);
        record(
            &key("app/Cache"),
            vec!["app/Cache$Entry".into(), "[B".into()],
        );
        record(&key("app/Noise"), vec!["app/Noise".into()]);
        record(&key("app/Quiet"), vec![]);
        let n = narrow_to(patterns(&["app.Cache$Entry"]));
        assert_eq!(
            n,
            Narrowing {
                changed: vec![key("app/Cache"), key("app/Noise")],
                probed: 1,
                unprobed: 2,
            }
        );
        assert_eq!(selection(), ["app.Cache$Entry"]);
        // The same selection again changes nothing.
        let n = narrow_to(patterns(&["app.Cache$Entry"]));
        assert_eq!((n.changed.len(), n.probed, n.unprobed), (0, 1, 2));
        // Arrays of bytes back: only the class allocating them.
        let n = narrow_to(patterns(&["app.Cache$Entry", "byte[]"]));
        assert_eq!(
            (n.changed, n.probed, n.unprobed),
            (vec![key("app/Cache")], 2, 1)
        );
        // Every class again (`*`).
        let n = narrow_to(patterns(&["*"]));
        assert_eq!(
            (n.changed, n.probed, n.unprobed),
            (vec![key("app/Noise")], 3, 0)
        );
        assert!(selection().is_empty());
        // A new session forgets the classes of the last one.
        configure(&patterns(&["x.Y"]));
        assert_eq!(narrow_to(Vec::new()), Narrowing::default());
    }

    /// A class whose only allocations are reflective or `clone()` calls loses their probes to
    /// any selection of classes and gets them back with every class.
    #[test]
    fn call_sites_are_probed_only_for_every_class() {
        let _one = crate::testing::SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        configure(&[]);
        record(&key("app/Copier"), vec![CALL_SITE_TYPE.into()]);
        let n = narrow_to(patterns(&["app.Entry"]));
        assert_eq!(
            (n.changed, n.probed, n.unprobed),
            (vec![key("app/Copier")], 0, 1)
        );
        let n = narrow_to(patterns(&["*"]));
        assert_eq!(
            (n.changed, n.probed, n.unprobed),
            (vec![key("app/Copier")], 1, 0)
        );
    }
}
