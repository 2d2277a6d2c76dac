//! The constant pools of the checkpoint event: the threads, stack traces, methods, classes,
//! packages and symbols the events refer to, each value once.

use std::collections::HashMap;
use std::hash::Hash;

use ferrofluid_profile::{NodeKind, Profile};

use crate::jfr::encode::{Buf, CHECKPOINT_EVENT};
use crate::jfr::metadata::id;

/// Interned values of one constant pool; keys start at 1 (0 is null).
pub(crate) struct Pool<K> {
    keys: HashMap<K, u64>,
    values: Vec<K>,
}

impl<K> Default for Pool<K> {
    fn default() -> Self {
        Self {
            keys: HashMap::new(),
            values: Vec::new(),
        }
    }
}

impl<K: Hash + Eq + Clone> Pool<K> {
    pub(crate) fn key(&mut self, value: K) -> u64 {
        if let Some(&k) = self.keys.get(&value) {
            return k;
        }
        self.values.push(value.clone());
        let k = self.values.len() as u64;
        self.keys.insert(value, k);
        k
    }

    fn entries(&self) -> impl Iterator<Item = (u64, &K)> {
        self.values
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64 + 1, v))
    }
}

/// The constant pools, filled while the events are written.
#[derive(Default)]
pub(crate) struct Pools {
    pub(crate) symbols: Pool<String>,
    /// Package name symbol.
    pub(crate) packages: Pool<u64>,
    /// (name symbol, package key or 0).
    pub(crate) classes: Pool<(u64, u64)>,
    /// (class key, name symbol, descriptor symbol).
    pub(crate) methods: Pool<(u64, u64, u64)>,
    /// Method keys, innermost frame first.
    pub(crate) stacks: Pool<Vec<u64>>,
    /// (name, id, virtual).
    pub(crate) threads: Vec<(String, u64, bool)>,
}

/// The one frame type: the profile does not know how a frame ran.
pub(crate) const FRAME_TYPE_JAVA: u64 = 1;
/// The one thread state of execution samples.
pub(crate) const STATE_RUNNABLE: u64 = 1;

impl Pools {
    pub(crate) fn symbol(&mut self, s: &str) -> u64 {
        self.symbols.key(s.to_owned())
    }

    /// The class named `dotted` (`com.acme.Foo`, `long[]`), stored in the JVM's internal form.
    pub(crate) fn class(&mut self, dotted: &str) -> u64 {
        let internal = internal_class_name(dotted);
        let package = match internal.rsplit_once('/') {
            Some((p, _)) if !internal.starts_with('[') => {
                let sym = self.symbol(p);
                self.packages.key(sym)
            }
            _ => 0,
        };
        let name = self.symbol(&internal);
        self.classes.key((name, package))
    }

    pub(crate) fn method(&mut self, class: &str, name: &str, descriptor: &str) -> u64 {
        let class = self.class(class);
        let name = self.symbol(name);
        let descriptor = self.symbol(descriptor);
        self.methods.key((class, name, descriptor))
    }

    pub(crate) fn frame(&mut self, profile: &Profile, kind: NodeKind) -> u64 {
        match kind {
            NodeKind::Method(m) => match profile.methods.get(m) {
                Some(info) => self.method(&info.class, &info.method, &info.descriptor),
                None => self.method("ferrofluid", &format!("<method {}>", m.0), "()V"),
            },
            NodeKind::Overflow | NodeKind::Thread => self.method("ferrofluid", "[overflow]", "()V"),
        }
    }

    /// The checkpoint event holding every non-empty pool.
    pub(crate) fn checkpoint(&self) -> Vec<u8> {
        let mut pools: Vec<(u64, Buf, usize)> = Vec::new();
        let mut add = |type_id: u64, count: usize, body: Buf| {
            if count > 0 {
                pools.push((type_id, body, count));
            }
        };
        let mut b = Buf::default();
        for (i, (name, tid, virt)) in self.threads.iter().enumerate() {
            b.varint(i as u64 + 1)
                .string(Some(name))
                .long(*tid as i64)
                .string(Some(name))
                .long(*tid as i64)
                .boolean(*virt);
        }
        add(id::THREAD, self.threads.len(), b);
        let mut b = Buf::default();
        for (k, frames) in self.stacks.entries() {
            b.varint(k).boolean(false).varint(frames.len() as u64);
            for &m in frames {
                b.varint(m).int(-1).int(-1).varint(FRAME_TYPE_JAVA);
            }
        }
        add(id::STACK_TRACE, self.stacks.values.len(), b);
        let mut b = Buf::default();
        for (k, &(class, name, descriptor)) in self.methods.entries() {
            b.varint(k)
                .varint(class)
                .varint(name)
                .varint(descriptor)
                .int(0)
                .boolean(false);
        }
        add(id::METHOD, self.methods.values.len(), b);
        let mut b = Buf::default();
        for (k, &(name, package)) in self.classes.entries() {
            b.varint(k)
                .varint(name)
                .varint(package)
                .int(0)
                .boolean(false);
        }
        add(id::CLASS, self.classes.values.len(), b);
        let mut b = Buf::default();
        for (k, &name) in self.packages.entries() {
            b.varint(k).varint(name).boolean(true);
        }
        add(id::PACKAGE, self.packages.values.len(), b);
        let mut b = Buf::default();
        for (k, s) in self.symbols.entries() {
            b.varint(k).string(Some(s));
        }
        add(id::SYMBOL, self.symbols.values.len(), b);
        let mut b = Buf::default();
        b.varint(FRAME_TYPE_JAVA).string(Some("Java"));
        add(id::FRAME_TYPE, 1, b);
        let mut b = Buf::default();
        b.varint(STATE_RUNNABLE).string(Some("STATE_RUNNABLE"));
        add(id::THREAD_STATE, 1, b);

        let mut body = Buf::default();
        // start, duration, delta to the next checkpoint (none), type (generic), pools.
        body.varint(CHECKPOINT_EVENT)
            .long(0)
            .long(0)
            .long(0)
            .boolean(false)
            .varint(pools.len() as u64);
        for (type_id, entries, count) in pools {
            body.varint(type_id).varint(count as u64);
            body.0.extend_from_slice(&entries.0);
        }
        let mut out = Buf::default();
        out.event(&body.0);
        out.0
    }
}

/// `com/acme/Foo` for `com.acme.Foo`; `[J` for `long[]`, `[Ljava/lang/String;` for
/// `java.lang.String[]`, as the JVM names classes.
pub(crate) fn internal_class_name(dotted: &str) -> String {
    let mut base = dotted;
    let mut dims = 0;
    while let Some(b) = base.strip_suffix("[]") {
        base = b;
        dims += 1;
    }
    if dims == 0 {
        return dotted.replace('.', "/");
    }
    let element = match base {
        "boolean" => "Z".to_owned(),
        "byte" => "B".to_owned(),
        "char" => "C".to_owned(),
        "short" => "S".to_owned(),
        "int" => "I".to_owned(),
        "long" => "J".to_owned(),
        "float" => "F".to_owned(),
        "double" => "D".to_owned(),
        other => format!("L{};", other.replace('.', "/")),
    };
    format!("{}{element}", "[".repeat(dims))
}
