//! How the planner chooses methods and follows their calls: classes as they load, roots,
//! static initialisers, calls resolved by class-hierarchy analysis and lambdas, the eager
//! closure.

use crate::cha;
use crate::intern::Sym;
use crate::model::CallKind;
use crate::registry::{Call, ClassId, LoaderId, MethodKey};

use super::{Batch, ClassBatch, MethodId, Planner, Scheme, AGENT_PACKAGE, NEVER_INSTRUMENTED};

impl Planner {
    pub(super) fn on_loaded(&mut self, cid: ClassId) {
        let count = self.registry.class(cid).methods.len() as u32;
        let keys = (0..count).map(|index| MethodKey { class: cid, index });
        if self.scheme == Scheme::Total {
            keys.for_each(|k| self.select(k));
            return;
        }
        let name = self.registry.class(cid).name;
        let class = self.registry.strings.resolve(name);
        let roots: Vec<usize> = (0..self.config.roots.len())
            .filter(|&i| self.config.roots[i].class().matches(class))
            .collect();
        let mut matching = Vec::new();
        for key in keys {
            let rec = self.registry.method(key);
            let s = |sym| self.registry.strings.resolve(sym);
            let (method, descriptor) = (s(rec.name), s(rec.descriptor));
            let mut hit = false;
            for &i in &roots {
                if self.config.roots[i].matches(class, method, descriptor) {
                    self.root_hits[i] = true;
                    hit = true;
                }
            }
            if hit {
                matching.push(key);
            }
        }
        for key in matching {
            self.select_root(key);
        }
        if self.scheme == Scheme::Eager && !self.lambda_calls.is_empty() {
            self.lambdas_made(cid);
        }
        // Call sites and static field accesses that named this class before it was loaded.
        if let Some(sites) = self.pending.remove(&name) {
            self.pending_count -= sites.len();
            for (loader, call) in sites {
                self.follow(loader, call);
            }
        }
        if let Some(loaders) = self.pending_fields.remove(&name) {
            for loader in loaders {
                self.follow_static_field(loader, name);
            }
        }
        // Overrides of virtual methods already called on a supertype, in this class and in its
        // subclasses registered before it: a class's ClassFileLoadHook runs before its
        // supertypes load, so when a subclass was planned, the supertype through which it
        // overrides a called method may have been unknown (Batik's `SAXSVGDocumentFactory`
        // loads before `SAXDocumentFactory`, which links it to `DocumentFactory`).
        if self.reachable_virtual.is_empty() {
            return;
        }
        for class in self.registry.subtypes_of(cid) {
            for sup in self.registry.supertypes_of(class) {
                let sup_name = self.registry.class(sup).name;
                let Some(sigs) = self.reachable_virtual.get(&sup_name) else {
                    continue;
                };
                let found: Vec<MethodKey> = sigs
                    .iter()
                    .filter_map(|&(n, d)| cha::receiver_target(&self.registry, class, n, d))
                    .collect();
                found.into_iter().for_each(|k| self.select(k));
            }
        }
    }

    /// Chooses the static initialiser of `class`, if it has one.
    pub(super) fn select_initializer(&mut self, class: ClassId) {
        let r = &self.registry;
        let clinit = r
            .strings
            .get("<clinit>")
            .zip(r.strings.get("()V"))
            .and_then(|(n, d)| r.declared(class, n, d));
        if let Some(key) = clinit {
            self.select(key);
        }
    }

    /// A followed call (of a static method or constructor of `class`) or static field access
    /// (naming `class`) initialises `class` and its superclasses (JVMS 5.5), and possibly
    /// superinterfaces: those with default methods, or the one declaring the field. Their
    /// initialisers are chosen if they wait for it; one that does not run costs nothing.
    pub(super) fn initializes(&mut self, class: ClassId) {
        if !self.initializing.insert(class) || self.uninitialized.is_empty() {
            // Supertypes reported later are handled by `class_not_initialized`.
            return;
        }
        for c in std::iter::once(class).chain(self.registry.supertypes_of(class)) {
            if self.uninitialized.remove(&c) {
                self.select_initializer(c);
            }
        }
    }

    /// A static field access naming `class`, in code of `loader`, will run: the class it
    /// resolves to is initialised. Waits for a class of that name when none visible is loaded,
    /// as a call site does (one not loaded yet is not initialised yet).
    pub(super) fn follow_static_field(&mut self, loader: LoaderId, class: Sym) {
        let resolved = self.registry.resolve_class_how(loader, class);
        if resolved.is_none_or(|(_, visible)| !visible) {
            self.pending_fields.entry(class).or_default().insert(loader);
        }
        if let Some((cid, _)) = resolved {
            self.initializes(cid);
        }
    }

    /// Whether calling `key` may initialise its class: a static method or a constructor.
    pub(super) fn may_initialize(&self, key: MethodKey) -> bool {
        let rec = self.registry.method(key);
        rec.access & ferrofluid_classfile::class::access::STATIC != 0
            || self.registry.strings.resolve(rec.name) == "<init>"
    }

    /// Chooses a method matching a root. An abstract root (an interface or abstract
    /// method) stands for its implementations: those loaded now and later.
    pub(super) fn select_root(&mut self, key: MethodKey) {
        let rec = self.registry.method(key);
        if rec.has_code() || !rec.is_virtual() {
            self.choose(key);
            return;
        }
        let (loader, call) = self.virtual_call_of(key);
        self.follow(loader, call);
    }

    /// A virtual (or interface) call naming method `key`, as code of its class's loader would
    /// make it: what dispatches to `key` and its overrides.
    pub(super) fn virtual_call_of(&mut self, key: MethodKey) -> (LoaderId, Call) {
        let rec = self.registry.method(key);
        let class = self.registry.class(key.class);
        let kind = if class.is_interface() {
            CallKind::Interface
        } else {
            CallKind::Virtual
        };
        let (loader, target) = (class.loader, (class.name, rec.name, rec.descriptor));
        let target = self.registry.reference_to(target);
        (loader, Call { kind, target })
    }

    /// Chooses `key` if allowed and new, unless it is trivial and those are skipped.
    pub(super) fn select(&mut self, key: MethodKey) {
        if self.config.skip_trivial && self.registry.method(key).trivial {
            if !self.id_of.contains_key(&key) && self.allowed(key) {
                self.trivial_skipped.insert(key);
            }
            return;
        }
        self.choose(key);
    }

    /// Chooses `key` if allowed and new.
    pub(super) fn choose(&mut self, key: MethodKey) {
        if self.id_of.contains_key(&key) || !self.allowed(key) {
            return;
        }
        let id = MethodId::try_from(self.ids.len()).expect("fewer than 2^32 methods");
        self.ids.push(key);
        self.invoked.push(false);
        self.id_of.insert(key, id);
        self.out.entry(key.class).or_default().push(id);
        if self.scheme == Scheme::Eager {
            self.work.push(key);
        }
    }

    pub(super) fn allowed(&self, key: MethodKey) -> bool {
        let class = self
            .registry
            .strings
            .resolve(self.registry.class(key.class).name);
        self.registry.method(key).has_code()
            && !class.starts_with(AGENT_PACKAGE)
            && class != NEVER_INSTRUMENTED
            && self.config.filter.allows(class)
    }

    /// Follows the call sites and static field accesses of `key` once.
    pub(super) fn scan(&mut self, key: MethodKey) {
        if !self.scanned.insert(key) {
            return;
        }
        let loader = self.registry.class(key.class).loader;
        let rec = self.registry.method(key);
        let (calls, deferred) = (rec.calls.clone(), rec.deferred_calls.clone());
        for class in self.registry.static_fields(key) {
            self.follow_static_field(loader, class);
        }
        for call in calls.iter() {
            self.follow(loader, *call);
        }
        for &call in deferred.iter() {
            // A deferred call with a site is revealed by it, the first time it runs.
            if !self.receivers.is_deferred_site(key, call) {
                self.follow(loader, call);
            }
        }
    }

    /// Chooses every possible target of `call` made from code of `loader`.
    pub(super) fn follow(&mut self, loader: LoaderId, call: Call) {
        let (class, _, _) = self.registry.reference(call.target);
        if self.registry.strings.resolve(class).starts_with('[') {
            // `array.clone()`: no class to load, no bytecode to instrument.
            return;
        }
        if self.receivers.is_site(loader, call) {
            // Its targets are chosen by the receivers that reach it.
            return;
        }
        self.follow_cha(loader, call);
    }

    /// Chooses every target class-hierarchy analysis finds for `call`, now and in classes
    /// loaded later.
    pub(super) fn follow_cha(&mut self, loader: LoaderId, call: Call) {
        let (class, name, descriptor) = self.registry.reference(call.target);
        if call.kind.is_virtual() {
            self.reachable_virtual
                .entry(class)
                .or_default()
                .insert((name, descriptor));
        }
        let resolved = self.registry.resolve_class_how(loader, class);
        if resolved.is_none_or(|(_, visible)| !visible) {
            // Not loaded, or found only by name in an unrelated loader: follow again when
            // a class of this name loads.
            if self
                .pending
                .entry(class)
                .or_default()
                .insert((loader, call))
            {
                self.pending_count += 1;
            }
        }
        let Some((cid, _)) = resolved else {
            return;
        };
        if !self.followed.insert((cid, call)) {
            return;
        }
        let targets = cha::targets(&self.registry, loader, call.kind, class, name, descriptor);
        for k in targets.methods {
            self.select(k);
            if !call.kind.is_virtual() && self.may_initialize(k) {
                self.initializes(k.class);
            }
        }
        if self.scheme == Scheme::Eager && call.kind == CallKind::Interface {
            self.follow_lambdas(cid, name);
        }
    }

    /// Under `eager`, an interface call of `method` on `interface` (loaded) also reaches the
    /// lambdas made of it, or of its subinterfaces, anywhere, even in code outside the
    /// closure (a `static final` comparator made at startup): their implementation methods
    /// are followed as calls from the classes making them. (Under `lazy` such a call is a
    /// receiver site, which sees the hidden class when it runs.) Lambdas registered later
    /// are followed when their class loads ([`Planner::lambdas_made`]).
    pub(super) fn follow_lambdas(&mut self, interface: ClassId, method: Sym) {
        for t in self.registry.subtypes_of(interface) {
            let name = self.registry.class(t).name;
            if !self.registry.is_lambda_interface(name) || !self.lambda_calls.insert((name, method))
            {
                continue;
            }
            for (loader, call) in self.registry.lambdas(name, method).to_vec() {
                self.follow(loader, call);
            }
        }
    }

    /// Under `eager`: the lambdas class `cid` makes of interface methods already followed.
    pub(super) fn lambdas_made(&mut self, cid: ClassId) {
        let c = self.registry.class(cid);
        let (loader, lambdas) = (c.loader, c.lambdas.to_vec());
        for (interface, method, call) in lambdas {
            let followed = self.lambda_calls.contains(&(interface, method))
                || self
                    .registry
                    .resolve_class(loader, interface)
                    .is_some_and(|i| {
                        self.registry.supertypes_of(i).iter().any(|&s| {
                            let name = self.registry.class(s).name;
                            self.lambda_calls.contains(&(name, method))
                        })
                    });
            if followed {
                self.follow(loader, call);
            }
        }
    }

    /// Runs the eager closure, then hands out the batch built so far.
    pub(super) fn finish(&mut self) -> Batch {
        while let Some(key) = self.work.pop() {
            self.scan(key);
        }
        let out = std::mem::take(&mut self.out);
        Batch {
            classes: out
                .into_iter()
                .map(|(cid, methods)| {
                    let c = self.registry.class(cid);
                    ClassBatch {
                        loader: c.loader,
                        class: self.registry.strings.resolve(c.name).to_owned(),
                        methods,
                    }
                })
                .collect(),
        }
    }
}
