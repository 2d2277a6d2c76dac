//! The loaded classes, keyed by (loader, internal name), with their supertype links
//! and, per method, the deduplicated call sites as interned references and the classes its
//! static field accesses name.
//!
//! A name used by a class (its supertypes, its call targets) is resolved the way the
//! agent can see it without running Java code: first among the classes defined by the
//! class's own loader, then by each parent the agent reported
//! ([`crate::Planner::set_loader_parent`]), then the bootstrap loader; failing that, the first
//! class of that name defined by any loader. Child-first loaders and loaders that
//! delegate sideways are thus approximated by name, which can only add methods.

use std::collections::{HashMap, HashSet};

use ferrofluid_classfile::class::access;

use crate::intern::{Interner, Sym};
use crate::model::{CallKind, ClassModel};

/// A class loader as the agent identifies it (e.g. an object tag). [`BOOTSTRAP`] is the
/// bootstrap loader, the implicit last parent of every loader.
pub type LoaderId = u64;

/// The bootstrap class loader.
pub const BOOTSTRAP: LoaderId = 0;

/// Longest parent chain followed (guards against a cycle reported by mistake).
const MAX_LOADER_DEPTH: usize = 64;

/// Index of a registered class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ClassId(pub(crate) u32);

/// A registered method: its class and its index among the class's methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct MethodKey {
    pub(crate) class: ClassId,
    pub(crate) index: u32,
}

/// An interned method reference `(class, name, descriptor)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RefId(u32);

/// A call site as stored: 8 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Call {
    pub(crate) kind: CallKind,
    pub(crate) target: RefId,
}

#[derive(Debug)]
pub(crate) struct MethodRec {
    pub(crate) name: Sym,
    pub(crate) descriptor: Sym,
    pub(crate) access: u16,
    /// Calls made outside cold code (sorted, no duplicates).
    pub(crate) calls: Box<[Call]>,
    /// Calls made only in cold code (`crate::model::CallSite::cold`), sorted, no duplicates.
    pub(crate) deferred_calls: Box<[Call]>,
    /// `crate::model::MethodModel::trivial`.
    pub(crate) trivial: bool,
}

impl MethodRec {
    /// Has bytecode to instrument.
    pub(crate) fn has_code(&self) -> bool {
        self.access & (access::ABSTRACT | access::NATIVE) == 0
    }

    /// Takes part in virtual dispatch (JVMS 5.4.6: not static, not private).
    pub(crate) fn is_virtual(&self) -> bool {
        self.access & (access::STATIC | access::PRIVATE) == 0
    }
}

#[derive(Debug)]
pub(crate) struct ClassRec {
    pub(crate) loader: LoaderId,
    pub(crate) name: Sym,
    pub(crate) access: u16,
    pub(crate) super_name: Option<Sym>,
    pub(crate) interfaces: Box<[Sym]>,
    /// Resolved superclass, once loaded.
    pub(crate) super_id: Option<ClassId>,
    /// Resolved direct superinterfaces that are loaded.
    pub(crate) interface_ids: Vec<ClassId>,
    /// Loaded classes and interfaces whose direct supertype this is.
    pub(crate) subtypes: Vec<ClassId>,
    pub(crate) methods: Box<[MethodRec]>,
    /// `(method index, class)`: the classes each method's static field accesses name
    /// (`crate::model::MethodModel::static_fields`), sorted, no duplicates. Kept per class, as
    /// most methods have none.
    static_fields: Box<[(u32, Sym)]>,
    /// `(interface, method, implementation)` of the lambdas it makes.
    pub(crate) lambdas: Box<[(Sym, Sym, Call)]>,
}

impl ClassRec {
    pub(crate) fn is_interface(&self) -> bool {
        self.access & access::INTERFACE != 0
    }
}

/// Sizes of the registry, for counters and the memory budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegistryStats {
    /// Classes registered.
    pub classes: usize,
    /// Methods registered.
    pub methods: usize,
    /// Distinct call sites stored (deduplicated per method).
    pub call_sites: usize,
    /// Distinct strings interned.
    pub strings: usize,
    /// Distinct method references interned.
    pub references: usize,
    /// Approximate heap bytes held by the registry.
    pub approx_bytes: usize,
}

/// The loaded classes.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    pub(crate) strings: Interner,
    refs: Vec<(Sym, Sym, Sym)>,
    ref_ids: HashMap<(Sym, Sym, Sym), RefId>,
    pub(crate) classes: Vec<ClassRec>,
    by_key: HashMap<(LoaderId, Sym), ClassId>,
    by_name: HashMap<Sym, Vec<ClassId>>,
    parents: HashMap<LoaderId, LoaderId>,
    /// Classes waiting for a supertype of this name to be registered.
    unlinked: HashMap<Sym, Vec<ClassId>>,
    call_sites: usize,
    /// Interfaces some registered class makes lambdas of (`ClassModel::lambdas`).
    lambda_interfaces: HashSet<Sym>,
    /// (interface, method) -> the implementation methods of the lambdas registered classes
    /// make of it (`ClassModel::lambdas`), as calls from their class's loader.
    lambdas: HashMap<(Sym, Sym), Vec<(LoaderId, Call)>>,
    /// Entries of all classes' `static_fields`.
    static_fields: usize,
    methods: usize,
}

impl Registry {
    /// An empty registry.
    pub(crate) fn new() -> Self {
        Registry::default()
    }

    /// Records that `loader` delegates to `parent`.
    pub(crate) fn set_loader_parent(&mut self, loader: LoaderId, parent: LoaderId) {
        if loader != parent {
            self.parents.insert(loader, parent);
        }
    }

    /// Registers a class defined by `loader`. Returns `None` when a class of that name is
    /// already registered for that loader (a retransformation or redefinition seen again).
    /// Whether some registered class makes lambdas of interface `name`: a call on it may reach a
    /// hidden class.
    pub(crate) fn is_lambda_interface(&self, name: Sym) -> bool {
        self.lambda_interfaces.contains(&name)
    }

    /// The implementation methods of the lambdas registered classes make of `interface` whose
    /// `method` runs them, with the loader of the class making each.
    pub(crate) fn lambdas(&self, interface: Sym, method: Sym) -> &[(LoaderId, Call)] {
        self.lambdas
            .get(&(interface, method))
            .map_or(&[], |v| v.as_slice())
    }

    pub(crate) fn add(&mut self, loader: LoaderId, model: &ClassModel<'_>) -> Option<ClassId> {
        let name = self.strings.intern(&model.name);
        if self.by_key.contains_key(&(loader, name)) {
            return None;
        }
        let id = ClassId(u32::try_from(self.classes.len()).expect("fewer than 2^32 classes"));
        let mut lambdas = Vec::with_capacity(model.lambdas.len());
        for lambda in &model.lambdas {
            let key = (
                self.strings.intern(&lambda.interface),
                self.strings.intern(&lambda.method),
            );
            self.lambda_interfaces.insert(key.0);
            let t = &lambda.target;
            let call = Call {
                kind: t.kind,
                target: self.intern_ref(&t.class, &t.name, &t.descriptor),
            };
            let made = self.lambdas.entry(key).or_default();
            if !made.contains(&(loader, call)) {
                made.push((loader, call));
            }
            lambdas.push((key.0, key.1, call));
        }
        let mut static_fields = Vec::new();
        let methods: Box<[MethodRec]> = model
            .methods
            .iter()
            .enumerate()
            .map(|(index, m)| {
                let mut calls = Vec::new();
                let mut deferred_calls = Vec::new();
                for c in &m.calls {
                    let call = Call {
                        kind: c.kind,
                        target: self.intern_ref(&c.class, &c.name, &c.descriptor),
                    };
                    if c.deferred {
                        &mut deferred_calls
                    } else {
                        &mut calls
                    }
                    .push(call);
                }
                calls.sort_unstable();
                calls.dedup();
                deferred_calls.sort_unstable();
                deferred_calls.dedup();
                deferred_calls.retain(|c| calls.binary_search(c).is_err());
                self.call_sites += calls.len() + deferred_calls.len();
                for class in &m.static_fields {
                    static_fields.push((index as u32, self.strings.intern(class)));
                }
                MethodRec {
                    name: self.strings.intern(&m.name),
                    descriptor: self.strings.intern(&m.descriptor),
                    access: m.access,
                    calls: calls.into_boxed_slice(),
                    deferred_calls: deferred_calls.into_boxed_slice(),
                    trivial: m.trivial,
                }
            })
            .collect();
        static_fields.sort_unstable();
        static_fields.dedup();
        self.static_fields += static_fields.len();
        self.methods += methods.len();
        let super_name = model.super_name.as_deref().map(|s| self.strings.intern(s));
        let interfaces: Box<[Sym]> = model
            .interfaces
            .iter()
            .map(|i| self.strings.intern(i))
            .collect();
        self.classes.push(ClassRec {
            loader,
            name,
            access: model.access,
            super_name,
            interfaces: interfaces.clone(),
            super_id: None,
            interface_ids: Vec::new(),
            subtypes: Vec::new(),
            methods,
            static_fields: static_fields.into_boxed_slice(),
            lambdas: lambdas.into_boxed_slice(),
        });
        self.by_key.insert((loader, name), id);
        self.by_name.entry(name).or_default().push(id);
        for supertype in super_name.into_iter().chain(interfaces.iter().copied()) {
            match self.resolve_class(loader, supertype) {
                Some(target) => self.link(id, target, supertype),
                None => self.unlinked.entry(supertype).or_default().push(id),
            }
        }
        // Classes registered before this supertype of theirs (the agent's initial list
        // comes in no particular order).
        if let Some(waiting) = self.unlinked.remove(&name) {
            for w in waiting {
                self.link(w, id, name);
            }
        }
        Some(id)
    }

    fn link(&mut self, sub: ClassId, sup: ClassId, name: Sym) {
        let rec = &mut self.classes[sub.0 as usize];
        if rec.super_name == Some(name) {
            rec.super_id = Some(sup);
        } else {
            rec.interface_ids.push(sup);
        }
        self.classes[sup.0 as usize].subtypes.push(sub);
    }

    pub(crate) fn intern_ref(&mut self, class: &str, name: &str, descriptor: &str) -> RefId {
        let key = (
            self.strings.intern(class),
            self.strings.intern(name),
            self.strings.intern(descriptor),
        );
        self.reference_to(key)
    }

    /// The reference `(class, name, descriptor)`, interned.
    pub(crate) fn reference_to(&mut self, key: (Sym, Sym, Sym)) -> RefId {
        if let Some(&id) = self.ref_ids.get(&key) {
            return id;
        }
        let id = RefId(u32::try_from(self.refs.len()).expect("fewer than 2^32 references"));
        self.refs.push(key);
        self.ref_ids.insert(key, id);
        id
    }

    pub(crate) fn reference(&self, id: RefId) -> (Sym, Sym, Sym) {
        self.refs[id.0 as usize]
    }

    pub(crate) fn class(&self, id: ClassId) -> &ClassRec {
        &self.classes[id.0 as usize]
    }

    pub(crate) fn method(&self, key: MethodKey) -> &MethodRec {
        &self.class(key.class).methods[key.index as usize]
    }

    /// The classes the static field accesses of `key` name, each once.
    pub(crate) fn static_fields(&self, key: MethodKey) -> Vec<Sym> {
        let all = &self.class(key.class).static_fields;
        let start = all.partition_point(|&(m, _)| m < key.index);
        all[start..]
            .iter()
            .take_while(|&&(m, _)| m == key.index)
            .map(|&(_, class)| class)
            .collect()
    }

    /// The class `name` as seen from `loader` (see the module docs).
    pub(crate) fn resolve_class(&self, loader: LoaderId, name: Sym) -> Option<ClassId> {
        self.resolve_class_how(loader, name).map(|(id, _)| id)
    }

    /// Like [`Registry::resolve_class`]; the flag is false when only the by-name
    /// fallback found the class (a visible one may still be loaded later).
    pub(crate) fn resolve_class_how(&self, loader: LoaderId, name: Sym) -> Option<(ClassId, bool)> {
        let mut current = Some(loader);
        for _ in 0..MAX_LOADER_DEPTH {
            let Some(l) = current else { break };
            if let Some(&id) = self.by_key.get(&(l, name)) {
                return Some((id, true));
            }
            current = self.parents.get(&l).copied();
        }
        if let Some(&id) = self.by_key.get(&(BOOTSTRAP, name)) {
            return Some((id, true));
        }
        let first = self.by_name.get(&name).and_then(|ids| ids.first().copied());
        first.map(|id| (id, false))
    }

    /// Every registered class named `name`, whatever its loader.
    pub(crate) fn classes_named(&self, name: Sym) -> Vec<ClassId> {
        self.by_name.get(&name).cloned().unwrap_or_default()
    }

    /// The class `name` (internal form) defined by exactly `loader`.
    pub(crate) fn lookup(&self, loader: LoaderId, name: &str) -> Option<ClassId> {
        self.by_key.get(&(loader, self.strings.get(name)?)).copied()
    }

    /// The class `name` (internal form) as seen from `loader`.
    pub(crate) fn resolve_class_str(&self, loader: LoaderId, name: &str) -> Option<ClassId> {
        self.resolve_class(loader, self.strings.get(name)?)
    }

    /// The method `name descriptor` declared by `class`.
    pub(crate) fn declared(&self, class: ClassId, name: Sym, descriptor: Sym) -> Option<MethodKey> {
        self.class(class)
            .methods
            .iter()
            .position(|m| m.name == name && m.descriptor == descriptor)
            .map(|index| MethodKey {
                class,
                index: index as u32,
            })
    }

    /// `class` and all its loaded subtypes, transitively, each once.
    pub(crate) fn subtypes_of(&self, class: ClassId) -> Vec<ClassId> {
        let mut seen = std::collections::HashSet::new();
        let mut out = vec![class];
        seen.insert(class);
        let mut i = 0;
        while i < out.len() {
            for &s in &self.class(out[i]).subtypes {
                if seen.insert(s) {
                    out.push(s);
                }
            }
            i += 1;
        }
        out
    }

    /// All loaded proper supertypes of `class`, transitively, each once.
    pub(crate) fn supertypes_of(&self, class: ClassId) -> Vec<ClassId> {
        let mut out: Vec<ClassId> = Vec::new();
        let mut stack = vec![class];
        while let Some(c) = stack.pop() {
            let rec = self.class(c);
            for s in rec
                .super_id
                .into_iter()
                .chain(rec.interface_ids.iter().copied())
            {
                if !out.contains(&s) {
                    out.push(s);
                    stack.push(s);
                }
            }
        }
        out
    }

    /// Whether every supertype of `class`, transitively, is registered and linked. Not so while
    /// a supertype's bytes are still to come: attaching registers the loaded classes in no
    /// particular order, so a subclass may be planned before the superclass it inherits
    /// methods from, and CHA would then find no target for an inherited method.
    pub(crate) fn hierarchy_linked(&self, class: ClassId) -> bool {
        // `Object` declares nothing a call would be revealed into (calls into it get no site).
        let object = self.strings.get("java/lang/Object");
        let mut stack = vec![class];
        let mut seen = std::collections::HashSet::new();
        while let Some(c) = stack.pop() {
            if !seen.insert(c) {
                continue;
            }
            let rec = self.class(c);
            let super_missing =
                rec.super_id.is_none() && rec.super_name.is_some_and(|n| Some(n) != object);
            if super_missing || rec.interface_ids.len() < rec.interfaces.len() {
                return false;
            }
            stack.extend(rec.super_id);
            stack.extend(rec.interface_ids.iter().copied());
        }
        true
    }

    /// Counts and an estimate of the heap held.
    pub(crate) fn stats(&self) -> RegistryStats {
        use std::mem::size_of;
        let strings = self.strings.len();
        let approx_bytes = self.strings.string_bytes()
            // Each string: an Arc header, a table slot and a map entry (key + value, ~2x load).
            + strings * (16 + 16 + 2 * (16 + 4))
            + self.refs.len() * (12 + 2 * (12 + 4))
            + self.classes.len() * (size_of::<ClassRec>() + 2 * 2 * (16 + 4))
            + self.methods * size_of::<MethodRec>()
            + self.call_sites * size_of::<Call>()
            + self.static_fields * size_of::<(u32, Sym)>()
            + self
                .classes
                .iter()
                .map(|c| (c.interfaces.len() + c.interface_ids.len() + c.subtypes.len()) * 4)
                .sum::<usize>();
        RegistryStats {
            classes: self.classes.len(),
            methods: self.methods,
            call_sites: self.call_sites,
            strings,
            references: self.refs.len(),
            approx_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CallSite, MethodModel};

    fn class<'a>(name: &'a str, sup: Option<&'a str>) -> ClassModel<'a> {
        ClassModel::new(name, sup, &[], access::PUBLIC, vec![])
    }

    #[test]
    fn same_name_in_two_loaders_stays_apart() {
        let mut r = Registry::new();
        r.set_loader_parent(1, BOOTSTRAP);
        r.set_loader_parent(2, BOOTSTRAP);
        let obj = r.add(BOOTSTRAP, &class("java/lang/Object", None)).unwrap();
        let a1 = r.add(1, &class("p/A", Some("java/lang/Object"))).unwrap();
        let a2 = r.add(2, &class("p/A", Some("java/lang/Object"))).unwrap();
        assert_ne!(a1, a2);
        assert!(r.add(1, &class("p/A", Some("java/lang/Object"))).is_none());
        let name = r.strings.get("p/A").unwrap();
        assert_eq!(r.resolve_class(1, name), Some(a1));
        assert_eq!(r.resolve_class(2, name), Some(a2));
        // A loader the agent never described falls back to the first by name.
        assert_eq!(r.resolve_class(9, name), Some(a1));
        let object = r.strings.get("java/lang/Object").unwrap();
        assert_eq!(r.resolve_class(2, object), Some(obj));
        assert_eq!(r.subtypes_of(obj), vec![obj, a1, a2]);
    }

    #[test]
    fn child_loader_sees_parent_classes_and_subclass_may_come_first() {
        let mut r = Registry::new();
        r.set_loader_parent(2, 1);
        let b = r.add(2, &class("p/B", Some("p/A"))).unwrap();
        let a = r.add(1, &class("p/A", None)).unwrap();
        assert_eq!(r.class(b).super_id, Some(a));
        assert_eq!(r.subtypes_of(a), vec![a, b]);
        assert_eq!(r.supertypes_of(b), vec![a]);
    }

    #[test]
    fn call_sites_are_interned_and_deduplicated() {
        let mut r = Registry::new();
        let call = CallSite::new(CallKind::Virtual, "p/A", "run", "()V");
        let m = MethodModel::new("go", "()V", 0, vec![call.clone(), call.clone()]);
        let id = r
            .add(
                BOOTSTRAP,
                &ClassModel::new("p/A", None, &[], 0, vec![m.clone(), m]),
            )
            .unwrap();
        let methods = &r.class(id).methods;
        assert_eq!((methods[0].calls.len(), methods[1].calls.len()), (1, 1));
        assert_eq!(methods[0].calls[0], methods[1].calls[0]);
        let s = r.stats();
        assert_eq!(
            (s.classes, s.methods, s.call_sites, s.references),
            (1, 2, 2, 1)
        );
        assert_eq!(s.strings, 4); // p/A, run, ()V, go
    }

    #[test]
    fn static_field_classes_are_kept_per_method_and_deduplicated() {
        let mut r = Registry::new();
        let m = |name| MethodModel::new(name, "()V", 0, vec![]);
        let methods = vec![
            m("a").with_static_fields(&["p/B", "p/C", "p/B"]),
            m("none"),
            m("c").with_static_fields(&["p/C"]),
        ];
        let id = r
            .add(BOOTSTRAP, &ClassModel::new("p/A", None, &[], 0, methods))
            .unwrap();
        let names = |index| {
            r.static_fields(MethodKey { class: id, index })
                .into_iter()
                .map(|s| r.strings.resolve(s))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(0), ["p/B", "p/C"]);
        assert!(names(1).is_empty());
        assert_eq!(names(2), ["p/C"]);
    }
}
