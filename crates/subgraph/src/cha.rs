//! Class-hierarchy analysis over the loaded classes: which methods a call site may run.
//!
//! - `invokestatic`/`invokespecial`: the one method found by resolution (the named class,
//!   its superclasses, then default methods of its superinterfaces).
//! - `invokevirtual`/`invokeinterface`: for the named class `C` and every loaded subtype
//!   `S` of `C`, the method a receiver of class `S` would run. That is every override
//!   declared in a subtype (default methods of subinterfaces included), plus, for a
//!   subtype whose superclass is outside `C`'s hierarchy, the method it inherits from
//!   there (`class B extends A implements Runnable` runs `A.run`). A resolved method
//!   that is private or static is not virtual: only it is returned.
//!
//! Only methods with bytecode are returned: abstract and native methods cannot carry an
//! entry/exit probe.

use std::collections::HashSet;

use crate::intern::Sym;
use crate::model::CallKind;
use crate::registry::{ClassId, LoaderId, MethodKey, Registry};

/// What a call site may reach.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Targets {
    /// Methods with bytecode, each once.
    pub(crate) methods: Vec<MethodKey>,
    /// False when the named class is not loaded yet (nothing could be resolved).
    pub(crate) class_loaded: bool,
}

/// The possible targets of a call of `(class, name, descriptor)` with `kind`, made by
/// code defined in `loader`.
pub(crate) fn targets(
    reg: &Registry,
    loader: LoaderId,
    kind: CallKind,
    class: Sym,
    name: Sym,
    descriptor: Sym,
) -> Targets {
    let Some(c) = reg.resolve_class(loader, class) else {
        return Targets::default();
    };
    let mut out = Targets {
        methods: Vec::new(),
        class_loaded: true,
    };
    let resolved = resolve(reg, c, name, descriptor);
    let dispatches = kind.is_virtual() && resolved.is_none_or(|m| reg.method(m).is_virtual());
    if !dispatches {
        out.methods
            .extend(resolved.filter(|&m| reg.method(m).has_code()));
        return out;
    }
    let subtypes = reg.subtypes_of(c);
    let in_hierarchy: HashSet<ClassId> = subtypes.iter().copied().collect();
    let mut seen = HashSet::new();
    for &s in &subtypes {
        let found = match reg.declared(s, name, descriptor) {
            Some(m) if reg.method(m).is_virtual() => Some(m),
            // A static or private method of the same signature does not override; the
            // receiver's class inherits from above, which this loop or the walk covers.
            _ => {
                let rec = reg.class(s);
                let outside = rec.super_id.is_none_or(|sup| !in_hierarchy.contains(&sup));
                if rec.is_interface() || !outside {
                    None
                } else {
                    rec.super_id
                        .and_then(|sup| resolve_virtual(reg, sup, name, descriptor))
                        .or_else(|| default_method(reg, s, name, descriptor))
                }
            }
        };
        if let Some(m) = found.filter(|&m| reg.method(m).has_code()) {
            if seen.insert(m) {
                out.methods.push(m);
            }
        }
    }
    out
}

/// The method a receiver of the newly loaded `class` runs for a virtual call of
/// `name descriptor` (a default method, for an interface), if it has bytecode.
pub(crate) fn receiver_target(
    reg: &Registry,
    class: ClassId,
    name: Sym,
    descriptor: Sym,
) -> Option<MethodKey> {
    let found = if reg.class(class).is_interface() {
        reg.declared(class, name, descriptor)
            .filter(|&m| reg.method(m).is_virtual())
    } else {
        resolve_virtual(reg, class, name, descriptor)
    };
    found.filter(|&m| reg.method(m).has_code())
}

/// JVMS 5.4.3.3/5.4.3.4 method resolution from `class`: the class and its superclasses,
/// then the superinterfaces (a non-abstract method first).
pub(crate) fn resolve(
    reg: &Registry,
    class: ClassId,
    name: Sym,
    descriptor: Sym,
) -> Option<MethodKey> {
    let mut c = Some(class);
    while let Some(id) = c {
        if let Some(m) = reg.declared(id, name, descriptor) {
            return Some(m);
        }
        c = reg.class(id).super_id;
    }
    interface_method(reg, class, name, descriptor, true)
        .or_else(|| interface_method(reg, class, name, descriptor, false))
}

/// The method a receiver whose class is `class` runs: the first virtual declaration up
/// the superclass chain, else a default method of a superinterface.
fn resolve_virtual(
    reg: &Registry,
    class: ClassId,
    name: Sym,
    descriptor: Sym,
) -> Option<MethodKey> {
    let mut c = Some(class);
    while let Some(id) = c {
        if let Some(m) = reg.declared(id, name, descriptor) {
            if reg.method(m).is_virtual() {
                return Some(m);
            }
        }
        c = reg.class(id).super_id;
    }
    default_method(reg, class, name, descriptor)
}

fn default_method(reg: &Registry, class: ClassId, name: Sym, descriptor: Sym) -> Option<MethodKey> {
    interface_method(reg, class, name, descriptor, true)
}

/// A method declared in a superinterface of `class` (of any of its superclasses too);
/// with `concrete`, only a non-abstract, non-static, non-private one.
fn interface_method(
    reg: &Registry,
    class: ClassId,
    name: Sym,
    descriptor: Sym,
    concrete: bool,
) -> Option<MethodKey> {
    reg.supertypes_of(class)
        .into_iter()
        .filter(|&s| reg.class(s).is_interface())
        .filter_map(|s| reg.declared(s, name, descriptor))
        .find(|&m| {
            let rec = reg.method(m);
            !concrete || (rec.has_code() && rec.is_virtual())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClassModel, MethodModel};
    use crate::registry::BOOTSTRAP;
    use ferrofluid_classfile::class::access::*;

    fn m(name: &'static str, flags: u16) -> MethodModel<'static> {
        MethodModel::new(name, "()V", flags, vec![])
    }

    struct Fixture {
        reg: Registry,
    }

    impl Fixture {
        fn new(classes: Vec<ClassModel<'static>>) -> Self {
            let mut reg = Registry::new();
            for c in &classes {
                reg.add(BOOTSTRAP, c).unwrap();
            }
            Fixture { reg }
        }

        /// Targets as `Class.method` strings, sorted.
        fn targets(&self, kind: CallKind, class: &str, name: &str) -> Vec<String> {
            let s = |x: &str| self.reg.strings.get(x).unwrap_or_else(|| panic!("{x}"));
            let t = targets(&self.reg, BOOTSTRAP, kind, s(class), s(name), s("()V"));
            let mut names: Vec<String> = t
                .methods
                .iter()
                .map(|&k| {
                    let c = self.reg.class(k.class);
                    let rec = self.reg.method(k);
                    format!(
                        "{}.{}",
                        self.reg.strings.resolve(c.name),
                        self.reg.strings.resolve(rec.name)
                    )
                })
                .collect();
            names.sort();
            names
        }
    }

    fn shapes() -> Fixture {
        Fixture::new(vec![
            ClassModel::new("Object", None, &[], PUBLIC, vec![m("toString", PUBLIC)]),
            ClassModel::new(
                "Shape",
                None,
                &[],
                PUBLIC | INTERFACE | ABSTRACT,
                vec![m("area", PUBLIC | ABSTRACT), m("describe", PUBLIC)],
            ),
            ClassModel::new("Base", Some("Object"), &[], PUBLIC, vec![m("area", PUBLIC)]),
            ClassModel::new("Square", Some("Base"), &["Shape"], PUBLIC, vec![]),
            ClassModel::new(
                "Circle",
                Some("Object"),
                &["Shape"],
                PUBLIC,
                vec![
                    m("area", PUBLIC),
                    m("describe", PUBLIC),
                    m("helper", PRIVATE),
                ],
            ),
            ClassModel::new(
                "Ring",
                Some("Circle"),
                &[],
                PUBLIC | FINAL,
                vec![
                    m("area", PUBLIC | FINAL),
                    m("toString", PUBLIC),
                    m("util", STATIC),
                ],
            ),
            ClassModel::new(
                "Blob",
                Some("Object"),
                &["Shape"],
                PUBLIC,
                vec![m("area", NATIVE)],
            ),
            ClassModel::new("Util", Some("Object"), &[], PUBLIC, vec![m("util", STATIC)]),
            ClassModel::new("SubUtil", Some("Util"), &[], PUBLIC, vec![]),
        ])
    }

    #[test]
    fn interface_call_reaches_all_implementations_including_inherited_and_default() {
        let f = shapes();
        // Square inherits area from Base (outside Shape's hierarchy); Blob's is native.
        assert_eq!(
            f.targets(CallKind::Interface, "Shape", "area"),
            ["Base.area", "Circle.area", "Ring.area"]
        );
        // Default method plus Circle's override (Square, Blob and Ring run the default or Circle's).
        assert_eq!(
            f.targets(CallKind::Interface, "Shape", "describe"),
            ["Circle.describe", "Shape.describe"]
        );
    }

    #[test]
    fn virtual_call_reaches_resolved_method_and_overrides_in_subclasses() {
        let f = shapes();
        assert_eq!(
            f.targets(CallKind::Virtual, "Circle", "area"),
            ["Circle.area", "Ring.area"]
        );
        assert_eq!(f.targets(CallKind::Virtual, "Ring", "area"), ["Ring.area"]);
        // Resolved in a superclass: Square.area is Base.area.
        assert_eq!(
            f.targets(CallKind::Virtual, "Square", "area"),
            ["Base.area"]
        );
        assert_eq!(
            f.targets(CallKind::Virtual, "Object", "toString"),
            ["Object.toString", "Ring.toString"]
        );
        // Default method inherited by a class whose chain has none.
        assert_eq!(
            f.targets(CallKind::Virtual, "Square", "describe"),
            ["Shape.describe"]
        );
    }

    #[test]
    fn private_static_and_special_calls_are_not_dispatched() {
        let f = shapes();
        assert_eq!(
            f.targets(CallKind::Virtual, "Circle", "helper"),
            ["Circle.helper"]
        );
        assert_eq!(
            f.targets(CallKind::Special, "Circle", "area"),
            ["Circle.area"]
        );
        assert_eq!(
            f.targets(CallKind::Special, "Square", "area"),
            ["Base.area"]
        );
        // A static method is found in a superclass and not dispatched (Ring.util hides nothing here).
        assert_eq!(
            f.targets(CallKind::Static, "SubUtil", "util"),
            ["Util.util"]
        );
        assert_eq!(f.targets(CallKind::Static, "Util", "util"), ["Util.util"]);
        // Abstract and native methods are not targets.
        assert!(f.targets(CallKind::Special, "Blob", "area").is_empty());
    }

    #[test]
    fn unloaded_class_is_reported() {
        let mut f = shapes();
        let s = |r: &mut Registry, x: &str| r.strings.intern(x);
        let (c, n, d) = (
            s(&mut f.reg, "Missing"),
            s(&mut f.reg, "area"),
            s(&mut f.reg, "()V"),
        );
        let t = targets(&f.reg, BOOTSTRAP, CallKind::Virtual, c, n, d);
        assert_eq!(t, Targets::default());
    }
}
