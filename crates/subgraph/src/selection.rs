//! The per-class view the class-file engine asks while retransforming a class.

use ferrofluid_classfile::{CallSite, MethodSite, Selection};

use crate::planner::{MethodId, Planner};
use crate::registry::ClassId;

/// Selects, in one class, every method the planner has chosen so far, with its id, and
/// decides which of their calls are receiver sites (see [`Planner::receiver_site`]).
/// Pass it to `ferrofluid_classfile::instrument`; build it with
/// [`Planner::selection_for`].
#[derive(Debug)]
pub struct ClassSelection<'p> {
    planner: &'p mut Planner,
    class: ClassId,
}

impl<'p> ClassSelection<'p> {
    pub(crate) fn new(planner: &'p mut Planner, class: ClassId) -> Self {
        ClassSelection { planner, class }
    }

    /// The chosen methods of this class and their ids, in declaration order.
    pub fn chosen(&self) -> Vec<(MethodId, &str, &str)> {
        let reg = self.planner.registry();
        let rec = reg.class(self.class);
        (0..rec.methods.len() as u32)
            .filter_map(|index| {
                let key = crate::registry::MethodKey {
                    class: self.class,
                    index,
                };
                let id = self.planner.chosen(key)?;
                let m = reg.method(key);
                Some((
                    id,
                    reg.strings.resolve(m.name),
                    reg.strings.resolve(m.descriptor),
                ))
            })
            .collect()
    }
}

impl Selection for ClassSelection<'_> {
    fn method_id(&mut self, method: &MethodSite<'_>) -> Option<u32> {
        let reg = self.planner.registry();
        let name = reg.strings.get(method.name)?;
        let descriptor = reg.strings.get(method.descriptor)?;
        let key = reg.declared(self.class, name, descriptor)?;
        self.planner.chosen(key)
    }

    fn wants_receiver_sites(&self) -> bool {
        self.planner.receivers.enabled
    }

    /// Trivial methods ([`crate::model::is_trivial`]): straight-line code that calls nothing.
    fn leaf(&mut self, _method_id: u32, method: &MethodSite<'_>) -> bool {
        let reg = self.planner.registry();
        let (Some(name), Some(descriptor)) = (
            reg.strings.get(method.name),
            reg.strings.get(method.descriptor),
        ) else {
            return false;
        };
        reg.declared(self.class, name, descriptor)
            .is_some_and(|key| reg.method(key).trivial)
    }

    fn receiver_site(&mut self, _method_id: u32, call: &CallSite<'_>) -> Option<u32> {
        let loader = self.planner.registry().class(self.class).loader;
        self.planner.receiver_site(loader, call)
    }

    fn deferred_site(&mut self, method_id: u32, call: &CallSite<'_>) -> Option<u32> {
        self.planner.deferred_site(method_id, call)
    }
}
