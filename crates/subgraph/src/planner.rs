//! The planner: which methods to instrument, as classes load and methods first run.
//!
//! The agent reports events; each returns a [`Batch`] of methods that must be
//! instrumented now, grouped by class so the agent retransforms each class once:
//!
//! - [`Planner::add_class`] (then [`Planner::plan`]) or [`Planner::class_loaded`]: a class
//!   was loaded, or is in the initial list of loaded classes.
//! - [`Planner::first_invocation`]: an instrumented method ran for the first time (the
//!   hook saw its `methodInvoked[id]` flag unset). Under `lazy` this reveals its callees.
//! - [`Planner::reveal`]: a method is about to be called through a call static analysis
//!   cannot see (reflection, method handles, native callbacks).
//! - [`Planner::follow_upcall`]: a method the JVM itself calls (class loading, `invokedynamic`
//!   linkage) is to be followed like a call site naming it.
//! - [`Planner::class_not_initialized`], [`Planner::initializing_by_name`]: a class's static
//!   initialiser has not run yet; reflection may run one by the class's name.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::cha;
use crate::error::SubgraphError;
use crate::intern::Sym;
use crate::model::{CallSite, ClassModel};
use crate::pattern::MethodPattern;
use crate::registry::{Call, ClassId, LoaderId, MethodKey, Registry, BOOTSTRAP};

mod batch;
mod config;
mod follow;
mod receivers;
#[cfg(test)]
mod tests;

pub use batch::{Batch, ClassBatch, Counters, MethodInfo};
pub use config::{
    Initialization, PlanConfig, Scheme, UnknownScheme, AGENT_PACKAGE, NEVER_INSTRUMENTED,
};
pub use receivers::MIN_TARGETS;

/// A method id: what the probes pass to the hooks. Dense, from 0, in the order methods
/// were chosen, never reused.
pub type MethodId = u32;

/// Decides what to instrument. Not thread-safe by itself: the agent serialises events
/// (as JFluid does with a lock around its class-load hook), e.g. with a `Mutex`.
#[derive(Debug)]
pub struct Planner {
    config: PlanConfig,
    scheme: Scheme,
    registry: Registry,
    /// `MethodId` → method.
    ids: Vec<MethodKey>,
    id_of: HashMap<MethodKey, MethodId>,
    invoked: Vec<bool>,
    invoked_count: usize,
    /// Methods left out as trivial.
    trivial_skipped: HashSet<MethodKey>,
    /// Chosen methods whose probes were removed ([`Planner::drop_probes`]): they keep their
    /// ids (and are never chosen again) but are no longer selected.
    dropped: HashSet<MethodId>,
    /// Methods whose call sites were followed.
    scanned: HashSet<MethodKey>,
    /// Methods whose certain calls were followed ahead of their first invocation (lazy).
    looked_ahead: HashSet<MethodKey>,
    /// Call sites already followed, by the class their reference resolved to: CHA over
    /// later classes is done by `reachable_virtual`, so a site needs following only once.
    followed: HashSet<(ClassId, Call)>,
    /// Call sites whose class is not loaded, by that class's name. (Ordered sets keep
    /// the order of ids, and so of batches, the same from run to run.)
    pending: HashMap<Sym, BTreeSet<(LoaderId, Call)>>,
    pending_count: usize,
    /// Static field accesses whose class is not loaded, by that class's name: the loaders of
    /// the code making them.
    pending_fields: HashMap<Sym, BTreeSet<LoaderId>>,
    /// Virtual methods `(name, descriptor)` called on a class of this name: overrides in
    /// subclasses loaded later are reachable too.
    reachable_virtual: HashMap<Sym, BTreeSet<(Sym, Sym)>>,
    /// Interface methods `(interface, name)` followed under `eager`: lambdas of them, made
    /// anywhere, run their implementation methods (a hidden class no CHA sees).
    lambda_calls: HashSet<(Sym, Sym)>,
    /// Whether each root pattern matched a method of a loaded class.
    root_hits: Vec<bool>,
    /// Registered classes not yet planned.
    unplanned: Vec<ClassId>,
    /// Classes whose initialiser has not run, waiting for a followed call or static field
    /// access that initialises them ([`Initialization::OnCall`]).
    uninitialized: HashSet<ClassId>,
    /// Classes a followed call or static field access initialises: a supertype reported
    /// uninitialised later (a class's load hook runs before its supertypes load) is initialised
    /// with them.
    initializing: HashSet<ClassId>,
    /// Chosen but not scanned yet (eager).
    work: Vec<MethodKey>,
    /// The batch being built.
    out: BTreeMap<ClassId, Vec<MethodId>>,
    /// Virtual calls narrowed by their receivers at run time instead of CHA.
    pub(crate) receivers: receivers::ReceiverSites,
}

impl Planner {
    /// A planner with nothing loaded.
    pub fn new(config: PlanConfig) -> Self {
        let root_hits = vec![false; config.roots.len()];
        let scheme = config.effective_scheme();
        Planner {
            receivers: receivers::ReceiverSites::new(scheme),
            scheme,
            config,
            registry: Registry::new(),
            ids: Vec::new(),
            id_of: HashMap::new(),
            invoked: Vec::new(),
            invoked_count: 0,
            trivial_skipped: HashSet::new(),
            dropped: HashSet::new(),
            scanned: HashSet::new(),
            looked_ahead: HashSet::new(),
            followed: HashSet::new(),
            pending: HashMap::new(),
            pending_count: 0,
            pending_fields: HashMap::new(),
            reachable_virtual: HashMap::new(),
            lambda_calls: HashSet::new(),
            root_hits,
            unplanned: Vec::new(),
            uninitialized: HashSet::new(),
            initializing: HashSet::new(),
            work: Vec::new(),
            out: BTreeMap::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &PlanConfig {
        &self.config
    }

    /// The scheme in effect (`total` when there are no roots).
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// Records that class loader `loader` delegates to `parent` (see
    /// [`crate::registry`] for how names are resolved across loaders).
    pub fn set_loader_parent(&mut self, loader: LoaderId, parent: LoaderId) {
        self.registry.set_loader_parent(loader, parent);
    }

    /// Registers a class from its bytes without planning (for the initial list of loaded
    /// classes: register all, then [`Planner::plan`] once). Returns false when the class
    /// was already registered for this loader.
    pub fn add_class(&mut self, loader: LoaderId, bytes: &[u8]) -> Result<bool, SubgraphError> {
        let model = ClassModel::parse(bytes)?;
        Ok(self.add_model(loader, &model))
    }

    /// Registers a class model without planning. Returns false when already registered.
    pub fn add_model(&mut self, loader: LoaderId, model: &ClassModel<'_>) -> bool {
        match self.registry.add(loader, model) {
            Some(id) => {
                self.unplanned.push(id);
                true
            }
            None => false,
        }
    }

    /// Plans every class registered since the last call: the methods to instrument now.
    pub fn plan(&mut self) -> Batch {
        for class in std::mem::take(&mut self.unplanned) {
            self.on_loaded(class);
        }
        self.finish()
    }

    /// A class was loaded: registers and plans it.
    pub fn class_loaded(&mut self, loader: LoaderId, bytes: &[u8]) -> Result<Batch, SubgraphError> {
        self.add_class(loader, bytes)?;
        Ok(self.plan())
    }

    /// Class `class` of `loader` (registered) has not been initialised yet: its static
    /// initialiser `<clinit>` will run at the class's first active use (JVMS 5.5), called by
    /// the JVM, not by a call site, so no analysis of callers finds it. Under `lazy` and
    /// `eager` it is chosen (now, or when a call or static field access would initialise the
    /// class, see [`Initialization`]), so that an initialisation inside a root's extent is
    /// counted, with its callees (revealed at its first invocation), as under `total`.
    pub fn class_not_initialized(
        &mut self,
        loader: LoaderId,
        class: &str,
        when: Initialization,
    ) -> Batch {
        if let Some(cid) = self.registry.lookup(loader, class) {
            match when {
                Initialization::Now => self.select_initializer(cid),
                Initialization::OnCall => {
                    let subtypes = if self.initializing.is_empty() {
                        Vec::new()
                    } else {
                        self.registry.subtypes_of(cid)
                    };
                    if subtypes.iter().any(|s| self.initializing.contains(s)) {
                        self.select_initializer(cid);
                    } else {
                        self.uninitialized.insert(cid);
                    }
                }
            }
        }
        self.finish()
    }

    /// A class named `class`, of a loader not known, may be initialised now by a means no call
    /// site shows: reflection running its static initialiser from native code
    /// (`Class.forName(name, true, loader)`). The initialisers of the registered classes of that
    /// name that wait for a use that runs them ([`Initialization::OnCall`]) are chosen, with
    /// their superclasses'; one that does not run after all (another loader's class, or
    /// `initialize` false) costs an instrumented method never called.
    pub fn initializing_by_name(&mut self, class: &str) -> Batch {
        let found = self
            .registry
            .strings
            .get(class)
            .map(|name| self.registry.classes_named(name))
            .unwrap_or_default();
        for cid in found {
            self.initializes(cid);
        }
        self.finish()
    }

    /// The first invocation of `id`. Under `lazy`, its callees (all possible targets of
    /// its call sites among loaded classes), and the static initialisers its static field
    /// accesses may run, are returned for instrumentation before the method proceeds.
    pub fn first_invocation(&mut self, id: MethodId) -> Result<Batch, SubgraphError> {
        let key = *self
            .ids
            .get(id as usize)
            .ok_or(SubgraphError::UnknownId(id))?;
        if !std::mem::replace(&mut self.invoked[id as usize], true) {
            self.invoked_count += 1;
        }
        if self.scheme == Scheme::Lazy {
            self.scan(key);
            let loader = self.registry.class(key.class).loader;
            let calls = self.registry.method(key).calls.clone();
            self.look_ahead(loader, &calls);
        }
        Ok(self.finish())
    }

    /// Chooses now the methods that will run whenever `calls` run, transitively: the one target
    /// of each call that has exactly one, then the one target of each of that method's certain
    /// calls (entry straight line, blocks post-dominating the entry), and so on. Scheme B would
    /// reveal them at those methods' own first invocations, a moment later, each one a
    /// retransformation (a safepoint of milliseconds); revealing them together makes one. Precision barely moves, since these methods run as surely as the calls that reach
    /// them; a call with several possible targets or a receiver site stops the walk, as its
    /// target would be a guess.
    ///
    /// Only certain calls with one target are followed ahead: the deferred calls of a method
    /// looked ahead get their sites, and its virtual calls their receiver sites, when it is
    /// instrumented (in this batch), and its first invocation's scan follows the rest, as for
    /// any method.
    fn look_ahead(&mut self, loader: LoaderId, calls: &[Call]) {
        let mut work: Vec<MethodKey> = calls
            .iter()
            .filter_map(|&call| self.single_target(loader, call))
            .collect();
        while let Some(target) = work.pop() {
            if !self.id_of.contains_key(&target)
                || self.scanned.contains(&target)
                || !self.looked_ahead.insert(target)
            {
                continue;
            }
            let loader = self.registry.class(target.class).loader;
            let certain = self.registry.method(target).calls.clone();
            // Its field accesses, deferred or not: an initialiser that does not run costs nothing,
            // and its first invocation would choose them anyway.
            for class in self.registry.static_fields(target) {
                self.follow_static_field(loader, class);
            }
            for &call in certain.iter() {
                // A call with several targets waits for the target's first invocation: by then
                // the engine has asked whether it is a receiver site.
                if let Some(next) = self.single_target(loader, call) {
                    self.follow(loader, call);
                    work.push(next);
                }
            }
        }
    }

    /// The one method `call` can reach among loaded classes, if exactly one (and no receiver
    /// site decides).
    fn single_target(&self, loader: LoaderId, call: Call) -> Option<MethodKey> {
        if self.receivers.is_site(loader, call) {
            return None;
        }
        let (class, name, descriptor) = self.registry.reference(call.target);
        let targets = cha::targets(&self.registry, loader, call.kind, class, name, descriptor);
        match targets.methods[..] {
            [one] => Some(one),
            _ => None,
        }
    }

    /// A method about to be called although static analysis could not see the call (through
    /// reflection, a method handle or native code): instruments it, and under `eager` what
    /// it reaches. A virtual method (not static, private or a constructor) is treated as a
    /// call site naming it, since the receiver decides what runs: its implementations in
    /// loaded subtypes are chosen too (class-hierarchy analysis), and those in subtypes
    /// loaded later. Methods the filters exclude or without bytecode are not instrumented.
    pub fn reveal(
        &mut self,
        loader: LoaderId,
        class: &str,
        name: &str,
        descriptor: &str,
    ) -> Result<Batch, SubgraphError> {
        let unknown = || SubgraphError::UnknownMethod {
            class: class.to_owned(),
            name: name.to_owned(),
            descriptor: descriptor.to_owned(),
        };
        let r = &self.registry;
        let cid = r.resolve_class_str(loader, class).ok_or_else(unknown)?;
        let (n, d) = (r.strings.get(name), r.strings.get(descriptor));
        let key = n
            .zip(d)
            .and_then(|(n, d)| r.declared(cid, n, d))
            .ok_or_else(unknown)?;
        let rec = self.registry.method(key);
        let is_init = r.strings.resolve(rec.name) == "<init>";
        if rec.is_virtual() && !is_init {
            let (loader, call) = self.virtual_call_of(key);
            // Not narrowed by receivers even if a call site of it is: the call being revealed
            // has no receiver probe.
            self.follow_cha(loader, call);
        } else {
            self.select(key);
            if self.may_initialize(key) {
                self.initializes(key.class);
            }
        }
        Ok(self.finish())
    }

    /// A method the JVM itself calls on a thread inside a root's extent, named by no call site
    /// (bootstrap loader): e.g. `ClassLoader.loadClass(String)` (virtual), which the JVM calls to
    /// resolve a class of a non-bootstrap loader, or `MethodHandleNatives.linkCallSite` (static),
    /// which it calls to link an `invokedynamic`. `upcall` is followed like a call site of its
    /// kind naming it, now if its class is loaded and otherwise when it loads: the static
    /// method, or the implementations in loaded subtypes and in those loaded later (the filters
    /// apply), so that its invocations inside a root are counted where they happen, with their
    /// callees revealed at their first invocation.
    pub fn follow_upcall(&mut self, upcall: &CallSite<'_>) -> Batch {
        let target = self
            .registry
            .intern_ref(&upcall.class, &upcall.name, &upcall.descriptor);
        let call = Call {
            kind: upcall.kind,
            target,
        };
        self.follow_cha(BOOTSTRAP, call);
        self.finish()
    }

    /// The id of a chosen method, if chosen.
    pub fn id_of(
        &self,
        loader: LoaderId,
        class: &str,
        name: &str,
        descriptor: &str,
    ) -> Option<MethodId> {
        let r = &self.registry;
        let cid = r.lookup(loader, class)?;
        let key = r.declared(cid, r.strings.get(name)?, r.strings.get(descriptor)?)?;
        self.id_of.get(&key).copied()
    }

    /// The method behind `id`.
    pub fn method(&self, id: MethodId) -> Option<MethodInfo<'_>> {
        let key = *self.ids.get(id as usize)?;
        let class = self.registry.class(key.class);
        let m = self.registry.method(key);
        let s = |sym| self.registry.strings.resolve(sym);
        Some(MethodInfo {
            id,
            loader: class.loader,
            class: s(class.name),
            name: s(m.name),
            descriptor: s(m.descriptor),
            access: m.access,
            invoked: self.invoked[id as usize],
        })
    }

    /// Removes the probes of chosen method `id` from the next retransformation of its class,
    /// for good (it is never chosen again): the agent found it called often and shorter than its
    /// probes. Returns the class to retransform (loader, internal name); `None` for a root, an
    /// unknown id or one already dropped. Calls it makes that were not revealed yet stay so.
    pub fn drop_probes(&mut self, id: MethodId) -> Option<(LoaderId, String)> {
        let key = *self.ids.get(id as usize)?;
        let class = self.registry.class(key.class);
        let m = self.registry.method(key);
        let s = |sym| self.registry.strings.resolve(sym);
        let (name, method, descriptor) = (s(class.name), s(m.name), s(m.descriptor));
        let root = self
            .config
            .roots
            .iter()
            .any(|r| r.matches(name, method, descriptor));
        if root || !self.dropped.insert(id) {
            return None;
        }
        Some((class.loader, name.to_owned()))
    }

    /// Methods whose probes were dropped ([`Planner::drop_probes`]), in no particular order.
    pub fn dropped(&self) -> impl Iterator<Item = MethodId> + '_ {
        self.dropped.iter().copied()
    }

    /// Root patterns that have not matched any method of a loaded class yet (worth a
    /// warning: a typo, or a class not loaded so far).
    pub fn unmatched_roots(&self) -> Vec<&MethodPattern> {
        self.config
            .roots
            .iter()
            .zip(&self.root_hits)
            .filter(|(_, &hit)| !hit)
            .map(|(p, _)| p)
            .collect()
    }

    /// Up to `max` loaded methods whose names come close to `pattern` (a root that matched
    /// nothing: a typo, a class without its package), closest first, as `pkg.Class::method`.
    pub fn near_names(&self, pattern: &MethodPattern, max: usize) -> Vec<String> {
        crate::near::near_names(&self.registry, pattern, max)
    }

    /// Whether the agent reported `id` as invoked.
    pub fn is_invoked(&self, id: MethodId) -> bool {
        self.invoked.get(id as usize).copied().unwrap_or(false)
    }

    /// Counters, at any time.
    pub fn counters(&self) -> Counters {
        Counters {
            instrumented: self.ids.len(),
            invoked: self.invoked_count,
            trivial_skipped: self.trivial_skipped.len(),
            pending_call_sites: self.pending_count,
            receiver_sites: self.receivers.count(),
            deferred_sites: self.receivers.deferred_count(),
            registry: self.registry.stats(),
        }
    }

    /// The selection for retransforming the class `class` (internal name) defined by
    /// `loader`: every method of it chosen so far, with its id. `None` when the class is
    /// not registered.
    pub fn selection_for(
        &mut self,
        loader: LoaderId,
        class: &str,
    ) -> Option<crate::ClassSelection<'_>> {
        let cid = self.registry.lookup(loader, class)?;
        Some(crate::ClassSelection::new(self, cid))
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The id of `key` if it is chosen and keeps its probes.
    pub(crate) fn chosen(&self, key: MethodKey) -> Option<MethodId> {
        self.id_of
            .get(&key)
            .copied()
            .filter(|id| !self.dropped.contains(id))
    }
}
