//! String interning: every class, method and descriptor name is stored once and
//! referred to by a 4-byte [`Sym`], so the registry of ~25k JDK classes stays compact.

use std::collections::HashMap;
use std::sync::Arc;

/// An interned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Sym(u32);

/// Strings by [`Sym`]; the map and the table share one allocation per string.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    strings: Vec<Arc<str>>,
    ids: HashMap<Arc<str>, Sym>,
    bytes: usize,
}

impl Interner {
    pub(crate) fn intern(&mut self, s: &str) -> Sym {
        if let Some(&sym) = self.ids.get(s) {
            return sym;
        }
        let sym = Sym(u32::try_from(self.strings.len()).expect("fewer than 2^32 strings"));
        let shared: Arc<str> = Arc::from(s);
        self.bytes += s.len();
        self.strings.push(shared.clone());
        self.ids.insert(shared, sym);
        sym
    }

    pub(crate) fn get(&self, s: &str) -> Option<Sym> {
        self.ids.get(s).copied()
    }

    pub(crate) fn resolve(&self, sym: Sym) -> &str {
        &self.strings[sym.0 as usize]
    }

    pub(crate) fn len(&self) -> usize {
        self.strings.len()
    }

    /// Bytes of string data held (not counting table overhead).
    pub(crate) fn string_bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_string_same_sym() {
        let mut i = Interner::default();
        let a = i.intern("java/lang/Object");
        let b = i.intern("run");
        assert_eq!(i.intern("java/lang/Object"), a);
        assert_ne!(a, b);
        assert_eq!(i.resolve(b), "run");
        assert_eq!(i.get("run"), Some(b));
        assert_eq!(i.get("walk"), None);
        assert_eq!((i.len(), i.string_bytes()), (2, 19));
    }
}
