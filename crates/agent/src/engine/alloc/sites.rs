//! Allocation sites over the agent's life: a site keeps its id across sessions and
//! retransformations, so its counter in `ferrofluid/Alloc` does too.

use std::collections::HashMap;

use ferrofluid_profile::alloc::java_name;

use super::tracker::lock;
use super::STATE;

/// A site's allocating method (global method id), bytecode offset and class (internal name),
/// and the site counted per class it belongs to, if any ([`super::vm`]).
#[derive(Clone)]
pub struct Site {
    pub method: u32,
    pub bci: u32,
    pub class: String,
    pub vm: Option<u32>,
}

/// Every site, by id.
#[derive(Default)]
pub struct Sites {
    sites: Vec<Site>,
    index: HashMap<(u32, u32, String, Option<u32>), u32>,
}

/// Set in the id an array-allocating instruction's probe passes to `Alloc.alloc` (the sign
/// bit, which no site id reaches).
pub const ARRAY_MARK: u32 = 1 << 31;

/// The id of the site at `bci` of global method `method` allocating `type_name` (internal
/// name or array descriptor).
pub fn site_id(method: u32, bci: u32, type_name: &str) -> u32 {
    site_id_via(method, bci, type_name, None)
}

/// As [`site_id`], for a class counted at site `vm` of [`super::vm`] (its counters are there).
pub fn site_id_via(method: u32, bci: u32, type_name: &str, vm: Option<u32>) -> u32 {
    let mut sites = lock(&STATE.sites);
    let sites = sites.get_or_insert_with(Sites::default);
    let key = (method, bci, type_name.to_owned(), vm);
    if let Some(&id) = sites.index.get(&key) {
        return id;
    }
    let id = sites.sites.len() as u32;
    sites.sites.push(Site {
        method,
        bci,
        class: type_name.to_owned(),
        vm,
    });
    sites.index.insert(key, id);
    id
}

/// How many sites there are.
pub fn count() -> usize {
    lock(&STATE.sites).as_ref().map_or(0, |s| s.sites.len())
}

/// Every site, by id.
pub fn all() -> Vec<Site> {
    lock(&STATE.sites)
        .as_ref()
        .map(|s| s.sites.clone())
        .unwrap_or_default()
}

/// Java class names of the sites, by site id.
pub fn classes() -> Vec<String> {
    lock(&STATE.sites)
        .as_ref()
        .map(|s| s.sites.iter().map(|s| java_name(&s.class)).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_keep_their_ids() {
        let a = site_id(9_000_001, 4, "[J");
        let b = site_id(9_000_001, 9, "[J");
        assert_ne!(a, b);
        assert_eq!(site_id(9_000_001, 4, "[J"), a);
    }
}
