//! The ids the planner hands out, shifted by the session's bases, as the class-file engine asks
//! for them (`ferrofluid_classfile::Selection`).

use ferrofluid_classfile::{CallSite, MethodSite, Selection};
use ferrofluid_subgraph::ClassSelection;

use crate::engine::Capability;
use crate::probe::flags;
use crate::runtime::jvm;
use crate::runtime::threads::THREAD_START_SITE;

/// The ids the planner hands out, shifted by the session's base.
pub(super) struct Offset<'p> {
    pub(super) selection: ClassSelection<'p>,
    pub(super) base: u32,
    pub(super) site_base: u32,
    /// The engine's methods alone: no thread-start site.
    pub(super) methods_only: bool,
    /// Trivial methods take the leaf probe ([`crate::engine::Instrumentation::leaves`]).
    pub(super) leaves: bool,
}

impl Selection for Offset<'_> {
    /// Roots (whose flags `apply` set before any class is instrumented) are passed as
    /// [`crate::probe::thread::always_native`]: their probes reach the agent while no thread is inside a root.
    fn method_id(&mut self, method: &MethodSite<'_>) -> Option<u32> {
        let id = self.selection.method_id(method)? + self.base;
        Some(if flags::get(id) & flags::ROOT != 0 {
            crate::probe::thread::always_native(id)
        } else {
            id
        })
    }

    fn wants_receiver_sites(&self) -> bool {
        self.selection.wants_receiver_sites()
    }

    /// Trivial methods but roots (passed as `always_native`: the agent sees their entries and
    /// exits).
    fn leaf(&mut self, method_id: u32, method: &MethodSite<'_>) -> bool {
        self.leaves
            && crate::probe::thread::method_id(method_id) == method_id
            && flags::get(method_id) & flags::ROOT == 0
            && method_id
                .checked_sub(self.base)
                .is_some_and(|local| self.selection.leaf(local, method))
    }

    fn receiver_site(&mut self, method_id: u32, call: &CallSite<'_>) -> Option<u32> {
        let site = self
            .selection
            .receiver_site(crate::probe::thread::method_id(method_id), call)?;
        site.checked_add(self.site_base)
            .filter(|&s| s != THREAD_START_SITE)
    }

    fn deferred_site(&mut self, method_id: u32, call: &CallSite<'_>) -> Option<u32> {
        let local = crate::probe::thread::method_id(method_id).checked_sub(self.base)?;
        let site = self.selection.deferred_site(local, call)?;
        // `Hooks.site` indexes `fired` with its int: never a negative one. (Unreachable in
        // practice: it would take 2^31 sites over the agent's life.)
        site.checked_add(self.site_base)
            .filter(|&s| i32::try_from(s).is_ok())
    }

    /// `Thread.start()` passes the thread it starts, so that a thread started inside a root
    /// (and only that one) is profiled as its own tree.
    fn entry_site(&mut self, _method_id: u32, m: &MethodSite<'_>) -> Option<u32> {
        let start = (m.class, m.name, m.descriptor) == ("java/lang/Thread", "start", "()V");
        (start
            && !self.methods_only
            && jvm::granted().is_some_and(|g| g.has(Capability::TagObjects)))
        .then_some(THREAD_START_SITE)
    }
}
