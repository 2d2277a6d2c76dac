//! Receiver sites: lazy revelation for calls that class-hierarchy analysis cannot narrow.
//!
//! A call like `Object.toString()` or `Object.equals(Object)` has hundreds of possible targets
//! among loaded classes; plain CHA instruments them all although a call site usually meets a
//! handful. Instead, when a chosen method is instrumented, each of its virtual and interface
//! calls with at least [`MIN_TARGETS`] possible targets (or naming a class not loaded yet, whose
//! implementations are unknown) becomes a *receiver site*: the probe
//! passes the receiver to the agent just before the call, and only the implementation the
//! receiver's class runs is chosen ([`Planner::receiver_seen`]), before the call proceeds.
//! Such a call is no longer followed by CHA, nor by the overrides of classes loaded later.
//!
//! *Deferred sites* extend lazy revelation from methods to call sites: a call that an invocation
//! of its method may not make (`ferrofluid_classfile::code::cold::deferred_instructions`: neither
//! on the entry straight line nor in a basic block that every path to a `return` runs) is not
//! followed at the method's first invocation. The calls of one basic block share a site, whose
//! probe before the first of them passes the site id to `Hooks.site`; the first time it runs
//! inside a root's extent, [`Planner::site_reached`] follows every call of the block (by CHA)
//! before they proceed. Callees on branches a run never takes (exception constructors, message
//! formatting, slow paths) are never instrumented, which was most of Scheme B's surplus. A
//! virtual call that is a receiver site anyway stays one.
//!
//! Calls a class-hierarchy count would leave alone are receiver sites too: a call on an
//! interface some class makes lambdas of (its hidden implementations are invisible to CHA; the
//! agent reads a hidden receiver's method, [`Planner::hidden_receiver_seen`]), and
//! `MethodHandle.invokeExact`/`invoke` ([`Planner::is_handle_site`]). A call whose every target is
//! chosen already or never will be is none: it would reveal nothing.
//!
//! Only under `lazy`: `eager` and `total` choose up front by design.

use std::collections::{HashMap, HashSet};

use ferrofluid_classfile::CallSite as ProbeCall;

use super::{MethodId, Planner, Scheme, NEVER_INSTRUMENTED};
use crate::cha;
use crate::error::SubgraphError;
use crate::model::CallKind;
use crate::registry::{Call, LoaderId, MethodKey};
use crate::Batch;

/// `java.lang.invoke.MethodHandle`, whose `invokeExact` and `invoke` run what the handle names.
const METHOD_HANDLE: &str = "java/lang/invoke/MethodHandle";

/// A call becomes a receiver site from this many possible targets; below it CHA instruments
/// them all, which costs less than a hook on every call.
pub const MIN_TARGETS: usize = 3;

/// The decisions taken so far.
#[derive(Debug, Default)]
pub(crate) struct ReceiverSites {
    /// Whether calls may become receiver sites at all.
    pub(crate) enabled: bool,
    /// Every call asked about, by the loader of the code that makes it: its site id, or
    /// `None` when CHA follows it. Decided once, so that every method making the call agrees.
    decided: HashMap<(LoaderId, Call), Option<u32>>,
    /// Site id -> what it reveals.
    sites: Vec<Site>,
    /// Deferred sites by method and basic block (offset of its first instruction).
    blocks: HashMap<(MethodKey, u32), u32>,
    /// Deferred calls covered by a site, by the method making them (a method's first
    /// invocation follows its other deferred calls, as Scheme B does).
    deferred: HashSet<(MethodKey, Call)>,
    /// How many of `sites` are deferred sites.
    deferred_count: usize,
}

/// What a site id stands for.
#[derive(Debug)]
enum Site {
    /// A virtual call narrowed by the receivers that reach it, made by code of the loader.
    Receiver(LoaderId, Call),
    /// Deferred calls of one basic block, made by code of the loader: followed when reached.
    Deferred(LoaderId, Vec<Call>),
}

impl ReceiverSites {
    pub(crate) fn new(scheme: Scheme) -> Self {
        ReceiverSites {
            enabled: scheme == Scheme::Lazy,
            ..Default::default()
        }
    }

    /// Whether `call` from `loader` is a receiver site (and so not followed by CHA).
    pub(crate) fn is_site(&self, loader: LoaderId, call: Call) -> bool {
        matches!(self.decided.get(&(loader, call)), Some(Some(_)))
    }

    pub(crate) fn count(&self) -> usize {
        self.sites.len()
    }

    pub(crate) fn deferred_count(&self) -> usize {
        self.deferred_count
    }

    /// Whether deferred call `call` of `method` has a site (and so is left to it).
    pub(crate) fn is_deferred_site(&self, method: MethodKey, call: Call) -> bool {
        self.enabled && self.deferred.contains(&(method, call))
    }
}

impl Planner {
    /// Turns receiver sites on or off (on by default under `lazy`; off, every virtual call is
    /// followed by CHA as in JFluid's Scheme B). Takes effect for calls not decided yet.
    pub fn set_receiver_sites(&mut self, on: bool) {
        self.receivers.enabled = on && self.scheme == Scheme::Lazy;
    }

    /// The receiver-site id of `call`, made by code of `loader`, or `None` when CHA covers it
    /// (fewer than [`MIN_TARGETS`] possible targets, all of them chosen already or never to be,
    /// already followed, or receiver sites off).
    /// A call naming a class not loaded yet is a receiver site.
    /// The class-file engine asks this while instrumenting a chosen method.
    pub fn receiver_site(&mut self, loader: LoaderId, call: &ProbeCall<'_>) -> Option<u32> {
        if !self.receivers.enabled {
            return None;
        }
        let call = self.stored_call(call)?;
        if let Some(&decided) = self.receivers.decided.get(&(loader, call)) {
            return decided;
        }
        let decision = self.decide(loader, call);
        self.receivers.decided.insert((loader, call), decision);
        decision
    }

    /// The deferred-site id of `call`, a deferred call of method `method` (see the module's
    /// doc), or `None` when the method also makes the call where it is certain (its first
    /// invocation follows it), when it is a receiver site (the engine then asks
    /// [`Planner::receiver_site`]), when nothing could be instrumented there (the call is then
    /// followed at once), or when sites are off. The deferred calls of one basic block (`call.block`) share one id. The class-file
    /// engine asks this while instrumenting a chosen method, before its first invocation.
    pub fn deferred_site(&mut self, method: MethodId, probe: &ProbeCall<'_>) -> Option<u32> {
        if !self.receivers.enabled || probe.class.starts_with('[') {
            // `array.clone()`: no bytecode to instrument.
            return None;
        }
        let key = *self.ids.get(method as usize)?;
        if !probe.invoke.is_virtual()
            && (!self.config.filter.allows(probe.class) || probe.class == NEVER_INSTRUMENTED)
        {
            // Nothing would be instrumented there: no probe needed. (A virtual call named on an
            // excluded class may still reach included overrides.)
            return None;
        }
        let call = self.stored_call(probe)?;
        if self
            .registry
            .method(key)
            .deferred_calls
            .binary_search(&call)
            .is_err()
        {
            return None;
        }
        let loader = self.registry.class(key.class).loader;
        if call.kind.is_virtual() && self.receiver_site(loader, probe).is_some() {
            return None;
        }
        if self.nothing_to_reveal(loader, call) {
            // Followed now instead: a class loaded later may still bring a target to choose.
            self.follow(loader, call);
            return None;
        }
        let id = match self.receivers.blocks.get(&(key, probe.block)) {
            Some(&id) => id,
            None => {
                let id = u32::try_from(self.receivers.sites.len()).ok()?;
                self.receivers
                    .sites
                    .push(Site::Deferred(loader, Vec::new()));
                self.receivers.deferred_count += 1;
                self.receivers.blocks.insert((key, probe.block), id);
                id
            }
        };
        if let Some(Site::Deferred(_, calls)) = self.receivers.sites.get_mut(id as usize) {
            if !calls.contains(&call) {
                calls.push(call);
            }
        }
        self.receivers.deferred.insert((key, call));
        Some(id)
    }

    /// Whether following `call` now would choose nothing, then or when it runs: its class is
    /// loaded and initialised, and each of its targets is chosen already or never will be
    /// (trivial and skipped, excluded, without bytecode). A site there would cost a check on
    /// every pass for nothing: `tiny()` called in a loop with `--skip-trivial` ran at 2.4 ns per
    /// iteration instead of 0.9.
    fn nothing_to_reveal(&self, loader: LoaderId, call: Call) -> bool {
        let (class, name, descriptor) = self.registry.reference(call.target);
        let Some((cid, true)) = self.registry.resolve_class_how(loader, class) else {
            return false;
        };
        if !self.registry.hierarchy_linked(cid) {
            // A supertype's bytes are still to come: CHA cannot see what it declares.
            return false;
        }
        let waits_for_initialiser = |c| self.uninitialized.contains(&c);
        if waits_for_initialiser(cid)
            || self
                .registry
                .supertypes_of(cid)
                .into_iter()
                .any(waits_for_initialiser)
        {
            return false;
        }
        let targets = cha::targets(&self.registry, loader, call.kind, class, name, descriptor);
        targets.methods.iter().all(|&k| self.settled(k))
    }

    /// Whether `key` is chosen already or never will be (trivial and skipped, excluded, without
    /// bytecode): no revelation has anything to do for it.
    fn settled(&self, key: MethodKey) -> bool {
        self.id_of.contains_key(&key)
            || !self.allowed(key)
            || (self.config.skip_trivial && self.registry.method(key).trivial)
    }

    /// Site `site` was reached with no receiver to look at: a deferred site's calls are
    /// followed (their targets chosen, to instrument before the calls proceed). A receiver site
    /// reached with `null` (about to throw) chooses nothing.
    pub fn site_reached(&mut self, site: u32) -> Result<Batch, SubgraphError> {
        let (loader, calls) = match self.receivers.sites.get(site as usize) {
            Some(Site::Deferred(loader, calls)) => (*loader, calls.clone()),
            Some(Site::Receiver(..)) => return Ok(self.finish()),
            None => return Err(SubgraphError::UnknownSite(site)),
        };
        for &call in calls.iter() {
            self.follow(loader, call);
        }
        // The block's calls run now: what certainly runs with them comes too.
        self.look_ahead(loader, &calls);
        Ok(self.finish())
    }

    /// The registry's form of an engine call (`None`: names the registry never saw, so no
    /// method it knows makes the call).
    fn stored_call(&mut self, call: &ProbeCall<'_>) -> Option<Call> {
        let r = &self.registry;
        let target = (
            r.strings.get(call.class)?,
            r.strings.get(call.name)?,
            r.strings.get(call.descriptor)?,
        );
        Some(Call {
            kind: call_kind(call.invoke),
            target: self.registry.reference_to(target),
        })
    }

    fn decide(&mut self, loader: LoaderId, call: Call) -> Option<u32> {
        let (class, name, descriptor) = self.registry.reference(call.target);
        if self.registry.strings.resolve(class).starts_with('[') {
            // A method of an array (`clone()`): nothing to instrument.
            return None;
        }
        if self.is_handle_invocation(call) {
            // No bytecode behind it: the receiver, a method handle, names what runs.
            let id = u32::try_from(self.receivers.sites.len()).ok()?;
            self.receivers.sites.push(Site::Receiver(loader, call));
            return Some(id);
        }
        // A class not loaded yet may have any number of implementations by the time the call
        // runs (the method is instrumented before its first invocation): let receivers decide.
        if let Some((cid, true)) = self.registry.resolve_class_how(loader, class) {
            if self.followed.contains(&(cid, call)) {
                return None;
            }
            let targets = cha::targets(&self.registry, loader, call.kind, class, name, descriptor);
            // A lambda of the interface is a hidden class, which CHA does not see: only its
            // receivers tell what runs (`hidden_receiver_seen`).
            let lambda =
                call.kind == CallKind::Interface && self.registry.is_lambda_interface(class);
            if targets.methods.len() < MIN_TARGETS && !lambda {
                return None;
            }
            if !lambda && targets.methods.iter().all(|&k| self.settled(k)) {
                // Every target is decided (`Iterator.hasNext()` with `--skip-trivial`, say): a
                // receiver probe on each call would choose nothing. Followed by CHA like a call
                // with few targets, so overrides loaded later are chosen when they load.
                return None;
            }
        }
        let id = u32::try_from(self.receivers.sites.len()).ok()?;
        self.receivers.sites.push(Site::Receiver(loader, call));
        Some(id)
    }

    /// The method receiver site `site` calls: its name and descriptor, which the agent looks
    /// for in a receiver class the planner does not know. `None` for another kind of site.
    pub fn receiver_site_call(&self, site: u32) -> Option<(&str, &str)> {
        let Some(&Site::Receiver(_, call)) = self.receivers.sites.get(site as usize) else {
            return None;
        };
        let (_, name, descriptor) = self.registry.reference(call.target);
        let s = &self.registry.strings;
        Some((s.resolve(name), s.resolve(descriptor)))
    }

    /// Whether receiver site `site` invokes a method handle (`MethodHandle.invokeExact` or
    /// `invoke`): what runs depends on the handle, not on its class, so the agent reveals the
    /// handle's target at every invocation it has not seen (a handle made inside a root is
    /// revealed when it is made; this covers one made outside).
    pub fn is_handle_site(&self, site: u32) -> bool {
        matches!(
            self.receivers.sites.get(site as usize),
            Some(&Site::Receiver(_, call)) if self.is_handle_invocation(call)
        )
    }

    fn is_handle_invocation(&self, call: Call) -> bool {
        let (class, name, _) = self.registry.reference(call.target);
        let s = &self.registry.strings;
        call.kind == CallKind::Virtual
            && s.resolve(class) == METHOD_HANDLE
            && matches!(s.resolve(name), "invokeExact" | "invoke")
    }

    /// A receiver of a class the planner cannot know, a hidden class (a lambda proxy, say), whose
    /// loader is `loader`, reached receiver site `site`, and the method it runs there makes
    /// `calls` (read by the agent from the running JVM: `crate::model::calls_in_code`). Each is
    /// followed as a call made by code of `loader`, so what the hidden method calls (the lambda's
    /// body, the method a method reference names) is chosen before the call proceeds.
    pub fn hidden_receiver_seen(
        &mut self,
        site: u32,
        loader: LoaderId,
        calls: &[crate::model::CallSite<'_>],
    ) -> Result<Batch, SubgraphError> {
        if self.receivers.sites.get(site as usize).is_none() {
            return Err(SubgraphError::UnknownSite(site));
        }
        for c in calls {
            if c.class.starts_with('[') {
                continue;
            }
            let target = self.registry.intern_ref(&c.class, &c.name, &c.descriptor);
            let call = Call {
                kind: c.kind,
                target,
            };
            self.follow_cha(loader, call);
        }
        Ok(self.finish())
    }

    /// A receiver of class `class` (internal name, defined by `loader`) reached receiver site
    /// `site`: chooses the method it runs there, to instrument before the call proceeds. A
    /// receiver class the planner does not know (a hidden class, say) gets every possible
    /// target, as CHA would.
    pub fn receiver_seen(
        &mut self,
        site: u32,
        loader: LoaderId,
        class: &str,
    ) -> Result<Batch, SubgraphError> {
        let (site_loader, call) = match self.receivers.sites.get(site as usize) {
            Some(&Site::Receiver(loader, call)) => (loader, call),
            // A deferred site passes no receiver: nothing to narrow.
            Some(Site::Deferred(..)) => return self.site_reached(site),
            None => return Err(SubgraphError::UnknownSite(site)),
        };
        let (named, name, descriptor) = self.registry.reference(call.target);
        let chosen = match self.registry.lookup(loader, class) {
            Some(cid) => cha::receiver_target(&self.registry, cid, name, descriptor)
                .into_iter()
                .collect(),
            None => {
                let r = &self.registry;
                cha::targets(r, site_loader, call.kind, named, name, descriptor).methods
            }
        };
        chosen.into_iter().for_each(|k| self.select(k));
        Ok(self.finish())
    }
}

/// The planner's dispatch kind of an engine call.
fn call_kind(invoke: ferrofluid_classfile::Invoke) -> CallKind {
    use ferrofluid_classfile::Invoke;
    match invoke {
        Invoke::Static => CallKind::Static,
        Invoke::Special => CallKind::Special,
        Invoke::Virtual => CallKind::Virtual,
        Invoke::Interface => CallKind::Interface,
    }
}
