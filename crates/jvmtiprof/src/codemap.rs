//! Where the JVM's code is: generated code such as the interpreter (from `DynamicCodeGenerated`)
//! and, on a JVM whose own structures cannot say it, compiled methods (from
//! `CompiledMethodLoad`/`Unload`), by address, to tell what kind of frame a sample's interrupted
//! program counter was in.

use std::collections::BTreeMap;
use std::sync::RwLock;

/// What lives at an address range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blob {
    /// The code the JIT compiled for a method (the `jmethodID` as an address), with what it inlined.
    Compiled(usize),
    /// The template interpreter.
    Interpreter,
    /// Other generated code (stubs, adapters).
    Stub,
}

#[derive(Default)]
pub(crate) struct CodeMap {
    blobs: RwLock<BTreeMap<usize, (usize, Blob)>>,
}

impl CodeMap {
    pub fn add(&self, start: usize, size: usize, blob: Blob) {
        if size == 0 {
            return;
        }
        let mut blobs = self.blobs.write().unwrap_or_else(|p| p.into_inner());
        // A range reused by new code replaces what overlapped it.
        let overlapping: Vec<usize> = blobs
            .range(..start + size)
            .rev()
            .take_while(|(&s, &(end, _))| end > start || s >= start)
            .filter(|(&s, &(end, _))| s < start + size && end > start)
            .map(|(&s, _)| s)
            .collect();
        for s in overlapping {
            blobs.remove(&s);
        }
        blobs.insert(start, (start + size, blob));
    }

    pub fn remove(&self, start: usize) {
        self.blobs
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&start);
    }

    /// What contains `pc`.
    pub fn find(&self, pc: usize) -> Option<Blob> {
        let blobs = self.blobs.read().unwrap_or_else(|p| p.into_inner());
        let (_, &(end, blob)) = blobs.range(..=pc).next_back()?;
        (pc < end).then_some(blob)
    }

    /// Compiled methods and generated-code ranges known.
    pub fn len(&self) -> usize {
        self.blobs.read().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_and_replacement() {
        let map = CodeMap::default();
        map.add(100, 50, Blob::Compiled(7));
        map.add(200, 10, Blob::Interpreter);
        assert_eq!(map.find(99), None);
        assert_eq!(map.find(100), Some(Blob::Compiled(7)));
        assert_eq!(map.find(149), Some(Blob::Compiled(7)));
        assert_eq!(map.find(150), None);
        assert_eq!(map.find(205), Some(Blob::Interpreter));
        map.add(120, 100, Blob::Compiled(8));
        assert_eq!(map.find(100), None, "replaced");
        assert_eq!(map.find(205), Some(Blob::Compiled(8)));
        assert_eq!(map.len(), 1);
        map.remove(120);
        assert_eq!(map.find(205), None);
    }
}
