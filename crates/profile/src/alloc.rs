//! What the `alloc` mode measures beyond its trees: per allocated class, exact allocation counts
//! and what the tracked objects say about the live ones (ages, surviving generations), the
//! allocation sites, and the leak suspects (docs/modes/alloc.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metric::{Metric, BYTES, COUNT};
use crate::tree::NodeId;

/// Metric of an allocation-path leaf: objects allocated (exact).
pub const OBJECTS: &str = "objects";
/// Metric of an allocation-path leaf: live objects (estimated from the tracked ones).
pub const LIVE: &str = "live";
/// Metric of an allocation-path leaf: live bytes (estimated).
pub const LIVE_BYTES: &str = "live_bytes";
/// Metric of an allocation-path leaf: objects that survived a GC (estimated, as
/// [`ClassAlloc::survived`]).
pub const SURVIVED: &str = "survived";
/// Metric of an allocation-path leaf: bytes of the objects that survived a GC (estimated).
pub const SURVIVED_BYTES: &str = "survived_bytes";

/// The metrics of the allocation paths of a profile made by the `alloc` engine: `objects` and
/// `bytes` allocated (exact), `live`, `live_bytes`, `survived` and `survived_bytes`
/// (estimated). Each is the value of the leaf naming the allocated class; the methods above it
/// carry none of their own.
pub fn path_metrics() -> Vec<Metric> {
    vec![
        Metric::new(OBJECTS, COUNT),
        Metric::new(BYTES, BYTES),
        Metric::new(LIVE, COUNT),
        Metric::new(LIVE_BYTES, BYTES),
        Metric::new(SURVIVED, COUNT),
        Metric::new(SURVIVED_BYTES, BYTES),
    ]
}

/// Whether path metric `name` is a gauge (what is live or survived when the profile was
/// taken) rather than a count that only grows.
pub fn is_gauge(name: &str) -> bool {
    [LIVE, LIVE_BYTES, SURVIVED, SURVIVED_BYTES].contains(&name)
}

/// What a method allocates in one calling context: the document's `allocations` entry, a
/// class leaf of the tree in memory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocation {
    /// The allocated class, as [`ClassAlloc::class`].
    pub class: String,
    /// Objects allocated (the site's exact count shared out over its paths in proportion to
    /// the objects tracked on each).
    pub allocated: u64,
    /// Bytes allocated, shared out the same way.
    pub bytes: u64,
    /// Live objects, estimated: the path's live tracked objects scaled by the site's
    /// allocated / tracked.
    pub live: u64,
    /// Live bytes, estimated the same way.
    #[serde(default)]
    pub live_bytes: u64,
    /// Objects that survived a GC, estimated: the path's live tracked objects of age 1 or
    /// more, scaled as `live` is.
    #[serde(default)]
    pub survived: u64,
    /// Their bytes, estimated the same way.
    #[serde(default)]
    pub survived_bytes: u64,
    /// Surviving generations: distinct ages among the path's live tracked objects.
    #[serde(default)]
    pub generations: u32,
}

/// The `alloc` mode's tables ([`crate::Profile::alloc`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AllocSummary {
    /// Every how many allocations of a site one object is tracked (0: none).
    pub track_every: u64,
    /// Or, when positive: one object each time about this many more bytes were allocated at a
    /// site (the first of each site too).
    #[serde(default)]
    pub track_bytes: u64,
    /// Garbage collections finished while profiling.
    pub gc_count: u64,
    /// Objects that would have been tracked but were not: the cap on tracked objects was
    /// reached. Ages and live estimates leave them out.
    pub untracked: u64,
    /// Allocation stacks not kept (the cap on distinct stacks was reached): their objects are
    /// tracked under their allocating method alone.
    pub stacks_dropped: u64,
    /// Per allocated class, by allocated bytes.
    pub classes: Vec<ClassAlloc>,
    /// Per allocation site, by allocated bytes.
    pub sites: Vec<SiteAlloc>,
    /// Leak suspects, the strongest first.
    pub suspects: Vec<Suspect>,
    /// Surviving generations of the allocation-path leaves, by (thread index in
    /// [`crate::Profile::threads`], leaf node); leaves not listed have none. Not additive,
    /// hence beside the trees' metrics rather than one of them.
    #[serde(skip)]
    pub path_generations: BTreeMap<(usize, NodeId), u32>,
    /// The allocated classes whose sites were probed when the profile was taken, as the
    /// `alloc-class` option spells them (empty: every class). Sites of other classes keep
    /// the counts they had when a narrowing took their probes out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alloc_classes: Vec<String>,
}

/// One allocated class. `allocated` and `allocated_bytes` are exact counts (bytes: measured
/// object sizes; for arrays, an estimate from their lengths); `live`, `live_bytes`,
/// `survived`, `survived_bytes`, `avg_age` and `generations` are estimated from the tracked
/// objects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassAlloc {
    /// As `Class.getName()` prints it, arrays as Java writes them (`long[]`).
    pub class: String,
    /// Objects allocated.
    pub allocated: u64,
    /// Bytes allocated.
    pub allocated_bytes: u64,
    /// Objects tracked.
    pub tracked: u64,
    /// Live objects, estimated: live tracked ones scaled by allocated / tracked. Live is not
    /// yet freed by a GC, garbage not collected yet included.
    pub live: u64,
    /// Live bytes, estimated the same way.
    pub live_bytes: u64,
    /// Objects that survived a GC, estimated: the live tracked objects of age 1 or more (a GC
    /// that finished after their allocation did not free them), scaled as `live` is. Unlike
    /// `live`, no garbage allocated since the last GC is in it.
    #[serde(default)]
    pub survived: u64,
    /// Their bytes, estimated the same way.
    #[serde(default)]
    pub survived_bytes: u64,
    /// Average age of the live tracked objects, in garbage collections survived.
    pub avg_age: f64,
    /// Surviving generations: distinct ages among the live tracked objects.
    pub generations: u32,
}

/// One allocation site: a bytecode offset of a method allocating one class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteAlloc {
    /// The allocating method, `com.acme.Foo.bar(I)V`.
    pub method: String,
    /// Bytecode offset of the allocating instruction.
    pub bci: u32,
    /// The allocated class.
    pub class: String,
    /// Objects allocated there (exact).
    pub allocated: u64,
    /// Bytes allocated there.
    pub bytes: u64,
    /// Objects allocated there that survived a GC, estimated: the site's live tracked objects
    /// of age 1 or more scaled by its allocated / tracked.
    #[serde(default)]
    pub survived: u64,
    /// Their bytes, estimated the same way.
    #[serde(default)]
    pub survived_bytes: u64,
    /// How the objects were allocated: `new` (the instruction at `bci`, inner arrays of a
    /// `multianewarray` included), `reflect` (the reflective call at `bci`), `clone` (the
    /// `clone()` call at `bci`), `jni` (a JNI function called by the native method `method`;
    /// `bci` is 0).
    #[serde(default = "new_kind", skip_serializing_if = "is_new")]
    pub kind: String,
}

fn new_kind() -> String {
    "new".to_owned()
}

fn is_new(kind: &String) -> bool {
    kind == "new"
}

/// A class whose surviving generations keep growing: allocated on and on and never let go.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Suspect {
    /// The class.
    pub class: String,
    /// Its surviving generations at the end.
    pub generations: u32,
    /// How many generations it gained over the sampled history.
    pub growth: u32,
    /// Its generation count, sampled about every second.
    pub history: Vec<u32>,
    /// Its allocation paths with live tracked objects, the most live first (at most 5).
    pub paths: Vec<SuspectPath>,
}

/// An allocation path of a suspect.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuspectPath {
    /// Frames, outermost first (`com.acme.Foo.bar`).
    pub frames: Vec<String>,
    /// Live tracked objects allocated on it.
    pub live: u64,
    /// Those of them that survived a GC (age 1 or more), tracked objects as `live` counts.
    #[serde(default)]
    pub survived: u64,
    /// Their bytes.
    #[serde(default)]
    pub survived_bytes: u64,
    /// Distinct ages of the live tracked objects.
    pub generations: u32,
}

/// The Java name of an internal class name or array descriptor: `java/lang/String` →
/// `java.lang.String`, `[J` → `long[]`, `[[Ljava/lang/String;` → `java.lang.String[][]`.
pub fn java_name(internal: &str) -> String {
    let dims = internal.bytes().take_while(|&b| b == b'[').count();
    if dims == 0 {
        return internal.replace('/', ".");
    }
    let element = &internal[dims..];
    let base = match element {
        "Z" => "boolean".to_owned(),
        "B" => "byte".to_owned(),
        "C" => "char".to_owned(),
        "S" => "short".to_owned(),
        "I" => "int".to_owned(),
        "J" => "long".to_owned(),
        "F" => "float".to_owned(),
        "D" => "double".to_owned(),
        e => e
            .strip_prefix('L')
            .and_then(|e| e.strip_suffix(';'))
            .unwrap_or(e)
            .replace('/', "."),
    };
    format!("{base}{}", "[]".repeat(dims))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_names_of_classes_and_arrays() {
        for (internal, java) in [
            ("java/lang/String", "java.lang.String"),
            ("com/acme/Cache$Entry", "com.acme.Cache$Entry"),
            ("[J", "long[]"),
            ("[Z", "boolean[]"),
            ("[[I", "int[][]"),
            ("[[Ljava/lang/String;", "java.lang.String[][]"),
            ("[Lcom/acme/A;", "com.acme.A[]"),
        ] {
            assert_eq!(java_name(internal), java);
        }
    }
}
