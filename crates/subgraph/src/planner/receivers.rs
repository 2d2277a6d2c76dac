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
//! Only under `lazy`: `eager` and `total` choose up front by design.

use std::collections::HashMap;

use ferrofluid_classfile::CallSite as ProbeCall;

use super::{Planner, Scheme};
use crate::cha;
use crate::error::SubgraphError;
use crate::model::CallKind;
use crate::registry::{Call, LoaderId};
use crate::Batch;

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
    /// Site id -> the call.
    sites: Vec<(LoaderId, Call)>,
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
}

impl Planner {
    /// Turns receiver sites on or off (on by default under `lazy`; off, every virtual call is
    /// followed by CHA as in JFluid's Scheme B). Takes effect for calls not decided yet.
    pub fn set_receiver_sites(&mut self, on: bool) {
        self.receivers.enabled = on && self.scheme == Scheme::Lazy;
    }

    /// The receiver-site id of `call`, made by code of `loader`, or `None` when CHA covers it
    /// (fewer than [`MIN_TARGETS`] possible targets, already followed, or receiver sites off).
    /// A call naming a class not loaded yet is a receiver site.
    /// The class-file engine asks this while instrumenting a chosen method.
    pub fn receiver_site(&mut self, loader: LoaderId, call: &ProbeCall<'_>) -> Option<u32> {
        if !self.receivers.enabled {
            return None;
        }
        let r = &self.registry;
        let key = (
            r.strings.get(call.class)?,
            r.strings.get(call.name)?,
            r.strings.get(call.descriptor)?,
        );
        let kind = if call.interface {
            CallKind::Interface
        } else {
            CallKind::Virtual
        };
        let call = Call {
            kind,
            target: self.registry.reference_to(key),
        };
        if let Some(&decided) = self.receivers.decided.get(&(loader, call)) {
            return decided;
        }
        let decision = self.decide(loader, call);
        self.receivers.decided.insert((loader, call), decision);
        decision
    }

    fn decide(&mut self, loader: LoaderId, call: Call) -> Option<u32> {
        let (class, name, descriptor) = self.registry.reference(call.target);
        // A class not loaded yet may have any number of implementations by the time the call
        // runs (the method is instrumented before its first invocation): let receivers decide.
        if let Some((cid, true)) = self.registry.resolve_class_how(loader, class) {
            if self.followed.contains(&(cid, call)) {
                return None;
            }
            let targets = cha::targets(&self.registry, loader, call.kind, class, name, descriptor);
            if targets.methods.len() < MIN_TARGETS {
                return None;
            }
        }
        let id = u32::try_from(self.receivers.sites.len()).ok()?;
        self.receivers.sites.push((loader, call));
        Some(id)
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
        let &(site_loader, call) = self
            .receivers
            .sites
            .get(site as usize)
            .ok_or(SubgraphError::UnknownSite(site))?;
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
