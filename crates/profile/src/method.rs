//! The method table: the small integer ids that probes carry, mapped to names.

use std::collections::HashMap;
use std::fmt;

/// Identifier of an instrumented method, as hard-coded into its probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MethodId(pub u32);

impl MethodId {
    /// The id as an index into the method table.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Name of a method. `class` is a binary name with dots (`com.acme.Foo$Bar`), the way
/// Java programmers read it; `descriptor` is the JVM descriptor (`(I)V`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MethodInfo {
    /// Dotted binary class name.
    pub class: String,
    /// Method name (`<init>` for constructors).
    pub method: String,
    /// JVM method descriptor.
    pub descriptor: String,
}

impl MethodInfo {
    /// Builds a method name from its three parts.
    pub fn new(
        class: impl Into<String>,
        method: impl Into<String>,
        descriptor: impl Into<String>,
    ) -> Self {
        Self {
            class: class.into(),
            method: method.into(),
            descriptor: descriptor.into(),
        }
    }

    /// Builds a method name from a class-file internal class name (`com/acme/Foo`).
    pub fn from_internal(class: &str, method: &str, descriptor: &str) -> Self {
        Self::new(class.replace('/', "."), method, descriptor)
    }

    /// `com.acme.Foo.bar`: the frame name used by flame graphs and folded stacks.
    /// An entry with an empty method name is a class alone (the `alloc` mode's allocated
    /// class, last frame of an allocation path).
    pub fn frame_name(&self) -> String {
        if self.method.is_empty() {
            return self.class.clone();
        }
        format!("{}.{}", self.class, self.method)
    }
}

impl fmt::Display for MethodInfo {
    /// `com.acme.Foo.bar(I)V`, unambiguous even for overloads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.method.is_empty() {
            return f.write_str(&self.class);
        }
        write!(f, "{}.{}{}", self.class, self.method, self.descriptor)
    }
}

/// Method id -> name. Ids are dense and handed out in insertion order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodTable {
    methods: Vec<MethodInfo>,
    index: HashMap<MethodInfo, MethodId>,
}

impl MethodTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns the id of `info`, adding it if it is new.
    pub fn intern(&mut self, info: MethodInfo) -> MethodId {
        if let Some(&id) = self.index.get(&info) {
            return id;
        }
        let id = MethodId(u32::try_from(self.methods.len()).expect("more than 2^32 methods"));
        self.methods.push(info.clone());
        self.index.insert(info, id);
        id
    }

    /// Shorthand for [`MethodTable::intern`] from the three name parts.
    pub fn insert(&mut self, class: &str, method: &str, descriptor: &str) -> MethodId {
        self.intern(MethodInfo::new(class, method, descriptor))
    }

    /// The name of `id`, if it was handed out by this table.
    pub fn get(&self, id: MethodId) -> Option<&MethodInfo> {
        self.methods.get(id.index())
    }

    /// The id of a method, if present.
    pub fn lookup(&self, info: &MethodInfo) -> Option<MethodId> {
        self.index.get(info).copied()
    }

    /// Number of methods.
    pub fn len(&self) -> usize {
        self.methods.len()
    }

    /// True when no method was added.
    pub fn is_empty(&self) -> bool {
        self.methods.is_empty()
    }

    /// All methods with their ids, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (MethodId, &MethodInfo)> {
        self.methods
            .iter()
            .enumerate()
            .map(|(i, m)| (MethodId(i as u32), m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intern_is_idempotent_and_dense() {
        let mut t = MethodTable::new();
        let a = t.insert("A", "f", "()V");
        let b = t.insert("A", "f", "(I)V");
        assert_eq!((a, b), (MethodId(0), MethodId(1)));
        assert_eq!(t.insert("A", "f", "()V"), a);
        assert_eq!(t.len(), 2);
        assert_eq!(t.get(b).unwrap().to_string(), "A.f(I)V");
        assert_eq!(t.get(MethodId(2)), None);
    }

    #[test]
    fn internal_names_become_dotted() {
        let m = MethodInfo::from_internal("com/acme/Foo$Bar", "run", "()V");
        assert_eq!(m.class, "com.acme.Foo$Bar");
        assert_eq!(m.frame_name(), "com.acme.Foo$Bar.run");
    }
}
