//! [`JvmtiCell`]: a JVMTI environment kept in a `static`, for callbacks and hooks that get no
//! environment of their own.

use std::sync::atomic::{AtomicPtr, Ordering};

use crate::{sys, Jvmti};

/// An atomically replaceable `Option<Jvmti>`. Whoever disposes of the environment clears the cell
/// first.
#[derive(Debug)]
pub struct JvmtiCell(AtomicPtr<sys::jvmtiEnv>);

impl JvmtiCell {
    /// An empty cell.
    pub const fn new() -> Self {
        JvmtiCell(AtomicPtr::new(std::ptr::null_mut()))
    }

    /// The environment stored, if any.
    #[inline]
    pub fn get(&self) -> Option<Jvmti> {
        // SAFETY: the cell holds null or a pointer taken from a `Jvmti`, which is a live
        // environment for as long as any copy of it is used (the `Jvmti` invariant).
        unsafe { Jvmti::from_raw(self.0.load(Ordering::Acquire)) }
    }

    /// Stores `jvmti` (`None`: empties the cell).
    pub fn set(&self, jvmti: Option<Jvmti>) {
        let raw = jvmti.map_or(std::ptr::null_mut(), Jvmti::as_raw);
        self.0.store(raw, Ordering::Release);
    }
}

impl Default for JvmtiCell {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_cell_holds_nothing() {
        static CELL: JvmtiCell = JvmtiCell::new();
        assert!(CELL.get().is_none());
        CELL.set(None);
        assert!(CELL.get().is_none());
    }
}
