//! Wrapping native methods as their classes load: the `native` probe of the class-file engine
//! (IPA's wrappers, docs/classfile.md "The native probe") applied from the class file load hook,
//! from the primordial phase on, to every class the load options select. Ids are handed out
//! here, one per wrapped native and one per Java method an upcall calls, from [`FIRST_ID`] up,
//! above every id a session hands out; a class redefined later is wrapped again with the same
//! ids (a redefinition may not add or remove methods).
//!
//! The wrappers outlive every session (methods cannot be removed): so do their ids and names,
//! kept here for the JVM's life.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use ferrofluid_classfile::{instrument, MethodSite, ProbeKind, ProbeOptions, SkipReason};
use ferrofluid_profile::native::{reason, NotMeasured};
use ferrofluid_subgraph::ClassFilter;

use crate::engine::MethodName;

/// The first id of a wrapped native or upcall target: far above the sessions' ids, which start
/// at 2 and grow by each session's methods.
pub const FIRST_ID: u32 = 1 << 30;

/// Internal name of the hooks class the wrappers call: in `java.base`'s exported package
/// `java.lang`, so that the wrappers of every module can call it from the first native call on
/// (docs/decisions/0055-native-mode.md, 7).
pub const HOOKS_CLASS: &str = "java/lang/FerrofluidNativeHooks";

/// Prefix of the renamed natives (`SetNativeMethodPrefix`).
pub const PREFIX: &str = "ferrofluid$$";

/// At most this many natives are listed as not measured (the count goes on).
const MAX_NOT_MEASURED: usize = 10_000;

/// What the wrapping did over the JVM's life.
#[derive(Default)]
pub struct Wrapped {
    /// Method (internal class, name, descriptor) -> id.
    ids: BTreeMap<MethodName, u32>,
    /// Id - FIRST_ID -> method.
    names: Vec<MethodName>,
    /// Per id - FIRST_ID: a wrapped native (else an upcall target).
    native: Vec<bool>,
    /// Classes with wrapped natives.
    pub classes: u64,
    /// Natives left unwrapped, and why.
    pub not_measured: Vec<NotMeasured>,
    /// Natives left unwrapped beyond [`MAX_NOT_MEASURED`].
    pub not_measured_dropped: u64,
}

impl Wrapped {
    /// The id of `method` (a new one the first time).
    pub fn id(&mut self, method: MethodName, native: bool) -> u32 {
        if let Some(&id) = self.ids.get(&method) {
            if native {
                self.native[(id - FIRST_ID) as usize] = true;
            }
            return id;
        }
        let id = FIRST_ID + self.names.len() as u32;
        self.names.push(method.clone());
        self.native.push(native);
        self.ids.insert(method, id);
        id
    }

    /// The method of `id`, if it is one of these.
    pub fn name(&self, id: u32) -> Option<&MethodName> {
        self.names.get(id.checked_sub(FIRST_ID)? as usize)
    }

    /// Whether `id` is a wrapped native.
    pub fn is_native(&self, id: u32) -> bool {
        id.checked_sub(FIRST_ID)
            .and_then(|i| self.native.get(i as usize))
            .copied()
            .unwrap_or(false)
    }

    /// The wrapped natives' names.
    pub fn natives(&self) -> impl Iterator<Item = &MethodName> {
        self.names
            .iter()
            .zip(&self.native)
            .filter_map(|(n, &native)| native.then_some(n))
    }

    fn not_measured(&mut self, class: &str, name: &str, descriptor: &str, why: &SkipReason) {
        let (reason, detail) = match why {
            SkipReason::Intrinsic => (reason::INTRINSIC, None),
            SkipReason::SignaturePolymorphic => (reason::SIGNATURE_POLYMORPHIC, None),
            SkipReason::NativeBinding => (reason::NATIVE_BINDING, None),
            SkipReason::FrameSensitive => (reason::FRAME_SENSITIVE, None),
            SkipReason::RunsJava => (reason::RUNS_JAVA, None),
            SkipReason::NotNative => return,
            other => (reason::NOT_WRAPPED, Some(format!("{other:?}"))),
        };
        self.listed(class, name, descriptor, reason, detail);
    }

    /// Whether `method` has a wrapper.
    pub fn is_wrapped(&self, method: &MethodName) -> bool {
        self.ids.get(method).is_some_and(|&id| self.is_native(id))
    }

    /// Lists a native as not measured (`class` internal name) for `reason`.
    pub fn listed(
        &mut self,
        class: &str,
        name: &str,
        descriptor: &str,
        reason: &str,
        detail: Option<String>,
    ) {
        if self.not_measured.len() >= MAX_NOT_MEASURED {
            self.not_measured_dropped += 1;
            return;
        }
        self.not_measured.push(NotMeasured {
            class: class.replace('/', "."),
            method: name.to_owned(),
            descriptor: descriptor.to_owned(),
            reason: reason.to_owned(),
            detail,
        });
    }
}

/// The wrapping's state: off until the load options ask for the `native` mode.
pub struct Wrapping {
    /// Wrapping classes as they load.
    pub on: AtomicBool,
    /// The classes the session's options select.
    filter: Mutex<ClassFilter>,
    pub wrapped: Mutex<Wrapped>,
}

impl Wrapping {
    pub const fn new() -> Wrapping {
        Wrapping {
            on: AtomicBool::new(false),
            filter: Mutex::new(ClassFilter {
                include: Vec::new(),
                exclude: Vec::new(),
            }),
            wrapped: Mutex::new(Wrapped {
                ids: BTreeMap::new(),
                names: Vec::new(),
                native: Vec::new(),
                classes: 0,
                not_measured: Vec::new(),
                not_measured_dropped: 0,
            }),
        }
    }

    /// Whether wrapping would select class `name` (internal name).
    pub fn selects(&self, name: &str) -> bool {
        name != HOOKS_CLASS
            && !name.starts_with(ferrofluid_subgraph::AGENT_PACKAGE)
            && lock(&self.filter).allows(name)
    }

    /// Starts wrapping the classes `filter` selects.
    pub fn start(&self, filter: ClassFilter) {
        *lock(&self.filter) = filter;
        self.on.store(true, Ordering::SeqCst);
    }

    pub fn wrapped(&self) -> MutexGuard<'_, Wrapped> {
        lock(&self.wrapped)
    }

    /// The bytes of class `name` with its natives wrapped, or `None` (wrapping off, a class not
    /// selected or the agent's own, no native wrapped, or bytes the class-file engine cannot
    /// read: the class loads as it was, logged).
    ///
    /// `by_name(class, method, descriptor)`: a native that must stay unwrapped because it is
    /// resolved by its JNI name too early ([`super::transform`]).
    pub fn transform(
        &self,
        boot: bool,
        name: &str,
        bytes: &[u8],
        by_name: &dyn Fn(&str, &str, &str) -> bool,
    ) -> Option<Vec<u8>> {
        if !self.on.load(Ordering::Relaxed) || !self.selects(name) {
            return None;
        }
        let mut options = ProbeOptions::new(ProbeKind::Native);
        HOOKS_CLASS.clone_into(&mut options.hooks.native_class);
        PREFIX.clone_into(&mut options.hooks.native_prefix);
        let mut wrapped = self.wrapped();
        let mut early = Vec::new();
        let mut select = |m: &MethodSite<'_>| {
            if m.access & 0x0100 == 0 {
                return None;
            }
            if boot && by_name(m.class, m.name, m.descriptor) {
                early.push((m.name.to_owned(), m.descriptor.to_owned()));
                return None;
            }
            let method = (m.class.to_owned(), m.name.to_owned(), m.descriptor.to_owned());
            Some(wrapped.id(method, true))
        };
        let out = match instrument(bytes, &options, &mut select) {
            Ok(out) => out,
            Err(e) => {
                log::warn!("native: {name}: {e}; its natives run unwrapped");
                return None;
            }
        };
        for m in &out.methods {
            if let Err(why) = &m.result {
                wrapped.not_measured(name, &m.name, &m.descriptor, why);
            }
        }
        for (method, descriptor) in early {
            wrapped.listed(name, &method, &descriptor, reason::EARLY_BOOT, None);
        }
        let patched = out.bytes?;
        wrapped.classes += 1;
        Some(patched)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_handed_out_once_above_the_sessions() {
        let mut w = Wrapped::default();
        let m = |n: &str| ("A".to_owned(), n.to_owned(), "()V".to_owned());
        let a = w.id(m("a"), true);
        let b = w.id(m("b"), false);
        assert_eq!((a, b), (FIRST_ID, FIRST_ID + 1));
        assert_eq!(w.id(m("a"), false), a);
        assert!(w.is_native(a) && !w.is_native(b));
        assert_eq!(w.name(b), Some(&m("b")));
        assert_eq!(w.name(1), None);
        // An upcall target that turns out to be a wrapped native.
        w.id(m("b"), true);
        assert_eq!(w.natives().count(), 2);
    }
}
