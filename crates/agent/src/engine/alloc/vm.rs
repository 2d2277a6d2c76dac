//! Sites whose objects the JVM allocates without an allocating instruction of the calling
//! method (docs/decisions/0048-vm-allocations.md): what reflection and `clone()` return
//! (counted after the call by `ferrofluid/Alloc.vm`) and the inner arrays of a
//! `multianewarray` (`Alloc.inner`), and what native code allocates through JNI (counted by the
//! agent's JNI wrappers, [`super::native`]). The Java side counts such a site per runtime class, in
//! [`SLOTS`] counters; at a snapshot each (site, class) becomes an allocation site like any
//! other (same method and offset, the class it counted), so the tables, trees and reports need
//! nothing of their own but the site's kind and, for a call, the called method as a frame.

use std::collections::HashMap;

use ferrofluid_classfile::VmAllocKind;
use ferrofluid_jvmti::{JniEnv, Object};

use super::tracker::{self, lock, StackStart};
use super::{native, sites, STATE};
use super::ffi as jni;

/// Counters per site in `ferrofluid/Alloc` (`SLOTS` there): 15 classes and every other class.
pub const SLOTS: usize = 16;
/// The class name a site's last counter stands for (its 16th class and beyond).
pub const OTHER_CLASSES: &str = "<other classes>";

/// A site counted per runtime class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmSite {
    /// The calling method (global method id; `u32::MAX` for a JNI site, whose method is
    /// [`VmSite::caller`]).
    pub method: u32,
    /// Offset of the call or `multianewarray` (0 for JNI).
    pub bci: u32,
    /// `new`, `reflect`, `clone` or `jni`.
    pub kind: &'static str,
    /// A JNI site's native method (Java class name, name, descriptor).
    pub caller: Option<(String, String, String)>,
    /// The called method (Java class name, name, descriptor), shown as a frame above the
    /// allocated class on the allocation paths.
    pub callee: Option<(String, String, String)>,
}

/// The sites counted per class, over the agent's life as the other sites: an id stays with its
/// site.
#[derive(Default)]
pub struct VmSites {
    sites: Vec<VmSite>,
    index: HashMap<(u32, u32, VmAllocKind), u32>,
    jni: HashMap<((String, String, String), &'static str), u32>,
}

/// The id of the site at `bci` of global method `method` (a call of `callee`, internal class
/// name, for reflection and `clone()`).
pub fn site_id(
    method: u32,
    bci: u32,
    kind: VmAllocKind,
    callee: Option<(&str, &str, &str)>,
) -> u32 {
    let mut sites = lock(&STATE.vm_sites);
    let sites = sites.get_or_insert_with(VmSites::default);
    if let Some(&id) = sites.index.get(&(method, bci, kind)) {
        return id;
    }
    let id = sites.sites.len() as u32;
    sites.sites.push(VmSite {
        method,
        bci,
        kind: kind.name(),
        caller: None,
        callee: callee.map(|(c, m, d)| {
            (
                ferrofluid_profile::alloc::java_name(c),
                m.to_owned(),
                d.to_owned(),
            )
        }),
    });
    sites.index.insert((method, bci, kind), id);
    id
}

/// The id of the site of JNI function `function` called by the native method `caller`.
pub fn jni_site_id(caller: (String, String, String), function: &'static str) -> u32 {
    let mut sites = lock(&STATE.vm_sites);
    let sites = sites.get_or_insert_with(VmSites::default);
    let key = (caller, function);
    if let Some(&id) = sites.jni.get(&key) {
        return id;
    }
    let id = sites.sites.len() as u32;
    sites.sites.push(VmSite {
        method: u32::MAX,
        bci: 0,
        kind: "jni",
        caller: Some(key.0.clone()),
        callee: Some(("JNIEnv".to_owned(), function.to_owned(), String::new())),
    });
    sites.jni.insert(key, id);
    id
}

/// The site `id`.
pub fn site(id: u32) -> Option<VmSite> {
    lock(&STATE.vm_sites).as_ref()?.sites.get(id as usize).cloned()
}

fn site_count() -> usize {
    lock(&STATE.vm_sites).as_ref().map_or(0, |s| s.sites.len())
}

/// The allocation site of `vm` (a site counted per class) allocating `class` (internal name).
pub fn class_site(vm: u32, class: &str) -> Option<u32> {
    let s = site(vm)?;
    Some(sites::site_id_via(s.method, s.bci, class, Some(vm)))
}

/// Adds the per-class counters of `ferrofluid/Alloc` to `counts` (objects at `2*s`, array
/// elements at `2*s+1` of allocation site `s`); false if they could not be read.
pub fn add_counts(env: &JniEnv<'_>, counts: &mut Vec<i64>) -> bool {
    let sites = site_count();
    if sites == 0 {
        return true;
    }
    native::add_counts(counts);
    let Some((values, names)) = jni::read_vm_counts(env, sites, SLOTS) else {
        return false;
    };
    for vm in 0..sites {
        for slot in 0..SLOTS {
            let i = vm * SLOTS + slot;
            let (n, elements) = (values[2 * i], values[2 * i + 1]);
            if n == 0 {
                continue;
            }
            let class = match &names[i] {
                Some(c) => c.as_str(),
                None if slot == SLOTS - 1 => OTHER_CLASSES,
                None => continue,
            };
            let Some(s) = class_site(vm as u32, class) else {
                continue;
            };
            let s = s as usize;
            if counts.len() < 2 * (s + 1) {
                counts.resize(2 * (s + 1), 0);
            }
            counts[2 * s] += n;
            counts[2 * s + 1] += elements;
        }
    }
    true
}

/// `Alloc.sampleVm`: the first object of a class at site `vm`, or one tracked after it; its size
/// (0: not measured).
pub fn sampled(env: &JniEnv<'_>, object: Object<'_>, vm: u32) -> u64 {
    let Some(class) = jni::class_name(env, object) else {
        return 0;
    };
    match class_site(vm, &class) {
        Some(site) => tracker::sampled_at(env, object, site, StackStart::Counting),
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_counted_per_class_keeps_its_id_and_its_classes_become_sites() {
        let call = Some((
            "java/lang/reflect/Array",
            "newInstance",
            "(Ljava/lang/Class;I)Ljava/lang/Object;",
        ));
        let a = site_id(9_100_001, 7, VmAllocKind::Reflect, call);
        assert_eq!(site_id(9_100_001, 7, VmAllocKind::Reflect, call), a);
        assert_ne!(site_id(9_100_001, 7, VmAllocKind::Inner, None), a);
        let s = site(a).unwrap();
        assert_eq!(s.callee.unwrap().0, "java.lang.reflect.Array");
        let ints = class_site(a, "[I").unwrap();
        assert_eq!(class_site(a, "[I"), Some(ints));
        assert_ne!(class_site(a, "[J"), Some(ints));
        assert_eq!(class_site(u32::MAX, "[I"), None);
        let caller = ("Native".to_owned(), "make".to_owned(), "()V".to_owned());
        let j = jni_site_id(caller.clone(), "NewIntArray");
        assert_eq!(jni_site_id(caller.clone(), "NewIntArray"), j);
        assert_ne!(jni_site_id(caller, "AllocObject"), j);
        assert_eq!(site(j).unwrap().kind, "jni");
    }
}
