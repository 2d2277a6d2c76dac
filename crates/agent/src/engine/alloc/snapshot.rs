//! The allocation profile of a snapshot: the class and site tables, the leak suspects, and one
//! tree of allocation paths per thread (objects and bytes per path: the site's exact counts
//! shared out in proportion to its tracked objects on each path).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::Ordering;

use ferrofluid_profile::alloc::{
    java_name, AllocSummary, ClassAlloc, SiteAlloc, Suspect, SuspectPath,
};
use ferrofluid_profile::{CallTree, MethodId, Mode, NodeId, NodeKind, Profile, ThreadProfile};

use super::tracker::{self, lock, Tracker, SUSPECT_GENERATIONS, SUSPECT_GROWTH};
use super::{narrow, sites, vm, STATE};
use crate::engine::{Context, MethodName};

/// Adds the session's allocation profile to `profile`.
pub fn snapshot(ctx: &dyn Context, profile: &mut Profile) {
    profile.mode = Mode::Alloc;
    profile.extra_metrics = ferrofluid_profile::alloc::path_metrics();
    let tracking = &STATE.tracking;
    let live_counts = if tracking.on.load(Ordering::SeqCst) {
        tracker::flush_frees(ctx.vm());
        tracker::read_counts(ctx.vm())
    } else {
        None
    };
    let sites = sites::all();
    // Per site: its kind and the called method shown above its class on the paths.
    let vm_of = sites.iter().map(|s| s.vm.and_then(vm::site)).collect();
    let gc = tracking.gcs.load(Ordering::SeqCst);
    let every = tracking.every.load(Ordering::SeqCst);
    let track_bytes = tracking.bytes.load(Ordering::SeqCst);
    let t = lock(&tracking.tracker);
    let Some(t) = t.as_ref() else { return };
    let Some(counts) = live_counts.or_else(|| t.final_counts.clone()) else {
        log::warn!("alloc: the counters could not be read");
        return;
    };
    let frames = lock(&tracking.frames);
    let names = frames.as_ref().map(|f| f.names.as_slice()).unwrap_or(&[]);
    let view = View {
        ctx,
        sites: &sites,
        vm_of,
        counts,
        t,
        names,
        gc,
    };
    let (site_rows, bytes) = view.site_rows();
    let (classes, live_paths, live_by_path) = view.classes(&bytes);
    let class_rows = class_rows(classes);
    let suspects = view.suspects(&class_rows, &live_paths);
    let (trees, leaf_ages) = view.trees(profile, &bytes, live_by_path);
    let thread_names: Vec<(String, u64)> = trees.keys().cloned().collect();
    let path_generations = leaf_ages
        .into_iter()
        .filter_map(|((thread, leaf), ages)| {
            let i = thread_names.iter().position(|n| *n == thread)?;
            Some(((i, leaf), ages.len() as u32))
        })
        .collect();
    profile.threads = trees
        .into_iter()
        .map(|((name, id), tree)| {
            let virtual_thread = t.threads.iter().any(|v| v.0 == id && v.1 == name && v.2);
            ThreadProfile {
                virtual_thread,
                ..ThreadProfile::new(name, id, tree)
            }
        })
        .collect();
    profile.alloc = Some(AllocSummary {
        track_every: every,
        track_bytes,
        gc_count: gc,
        untracked: t.untracked,
        stacks_dropped: t.stacks_dropped,
        classes: class_rows,
        sites: site_rows,
        suspects,
        path_generations,
        alloc_classes: narrow::selection(),
    });
}

/// What a snapshot reads: every site, its counters, the tracked objects and the named frames.
struct View<'a> {
    ctx: &'a dyn Context,
    sites: &'a [sites::Site],
    vm_of: Vec<Option<vm::VmSite>>,
    /// Objects at `2*s`, array elements at `2*s+1` of site `s`.
    counts: Vec<i64>,
    t: &'a Tracker,
    names: &'a [MethodName],
    /// The GC count now.
    gc: u64,
}

/// A class's figures: allocated, its tracked objects alive and their ages.
#[derive(Default)]
struct Acc {
    allocated: u64,
    bytes: u64,
    tracked: u64,
    live: u64,
    live_bytes: u64,
    /// The live tracked objects of age 1 or more: a GC that finished after their allocation
    /// did not free them.
    survived: u64,
    survived_bytes: u64,
    ages: BTreeMap<u64, u64>,
}

/// Per (site, stack, thread) or (class, stack): live tracked objects, their bytes and ages,
/// and those of age 1 or more.
#[derive(Default)]
struct LivePath {
    objects: u64,
    bytes: u64,
    survived: u64,
    survived_bytes: u64,
    ages: BTreeSet<u64>,
}

/// The live tracked objects per (class, stack): the paths of leak suspects.
type LivePaths = HashMap<(String, u32), LivePath>;
/// The live tracked objects of each (site, stack, thread).
type LiveByPath = HashMap<(u32, u32, u32), LivePath>;
/// A thread of the trees: name and Java id (the sites with no tracked object: `all threads`,
/// id 0).
type ThreadKey = (String, u64);
/// Each thread's tree, and the ages of the live objects at each leaf.
type Trees = (
    BTreeMap<ThreadKey, CallTree>,
    BTreeMap<(ThreadKey, NodeId), BTreeSet<u64>>,
);

impl View<'_> {
    fn count_of(&self, s: usize) -> u64 {
        self.counts.get(2 * s).copied().unwrap_or(0).max(0) as u64
    }

    fn elements_of(&self, s: usize) -> u64 {
        self.counts.get(2 * s + 1).copied().unwrap_or(0).max(0) as u64
    }

    fn vm_site(&self, s: usize) -> Option<&vm::VmSite> {
        self.vm_of.get(s).and_then(Option::as_ref)
    }

    fn kind_of(&self, s: usize) -> &'static str {
        self.vm_site(s).map_or("new", |v| v.kind)
    }

    fn callee_of(&self, s: usize) -> Option<MethodName> {
        self.vm_site(s).and_then(|v| v.callee.clone())
    }

    /// The allocating method of site `s` (global method `id`), with Java class names, as the
    /// stack frames have them.
    fn method_of(&self, s: usize, id: u32) -> MethodName {
        // A JNI site's method is the native method that called the JNI function.
        if let Some(caller) = self.vm_site(s).and_then(|v| v.caller.clone()) {
            return caller;
        }
        self.ctx
            .method_name(id)
            .map(|(c, m, d)| (java_name(&c), m, d))
            .unwrap_or_else(|| (format!("<method {id}>"), String::new(), String::new()))
    }

    /// The age of tracked object `o`: the GCs finished since its allocation.
    fn age(&self, o: &tracker::Tracked) -> u64 {
        self.gc - o.gc.min(self.gc)
    }

    /// The site table, most bytes first, and each site's bytes.
    fn site_rows(&self) -> (Vec<SiteAlloc>, Vec<u64>) {
        let mut site_rows = Vec::new();
        let mut bytes = vec![0u64; self.sites.len()];
        // Per site: its live tracked objects of age 1 or more, and their bytes.
        let mut survived = vec![(0u64, 0u64); self.sites.len()];
        for o in self.t.slots.iter().flatten() {
            if let Some(v) = survived.get_mut(o.site as usize) {
                if self.age(o) > 0 {
                    *v = (v.0 + 1, v.1 + o.size);
                }
            }
        }
        for (s, site) in self.sites.iter().enumerate() {
            let n = self.count_of(s);
            if n == 0 {
                continue;
            }
            let size = self.t.sizes.get(&(s as u32)).copied();
            bytes[s] = site_bytes(&site.class, n, self.elements_of(s), size);
            let (c, m, d) = self.method_of(s, site.method);
            let tracked = self.t.tracked.get(&(s as u32)).copied().unwrap_or(0);
            let scale = |v: u64| scale(v, n, tracked);
            site_rows.push(SiteAlloc {
                method: format!("{c}.{m}{d}"),
                bci: site.bci,
                class: java_name(&site.class),
                allocated: n,
                bytes: bytes[s],
                survived: scale(survived[s].0).min(n),
                survived_bytes: scale(survived[s].1),
                kind: self.kind_of(s).to_owned(),
            });
        }
        site_rows.sort_by(|a, b| {
            b.bytes
                .cmp(&a.bytes)
                .then_with(|| a.method.cmp(&b.method))
                .then(a.bci.cmp(&b.bci))
        });
        (site_rows, bytes)
    }

    /// Each class's figures, and the live tracked objects by path.
    fn classes(&self, bytes: &[u64]) -> (BTreeMap<String, Acc>, LivePaths, LiveByPath) {
        let mut classes: BTreeMap<String, Acc> = BTreeMap::new();
        for (s, site) in self.sites.iter().enumerate() {
            let n = self.count_of(s);
            if n == 0 {
                continue;
            }
            let a = classes.entry(java_name(&site.class)).or_default();
            a.allocated += n;
            a.bytes += bytes[s];
            a.tracked += self.t.tracked.get(&(s as u32)).copied().unwrap_or(0);
        }
        let mut live_paths = LivePaths::new();
        let mut live_by_path = LiveByPath::new();
        for o in self.t.slots.iter().flatten() {
            let Some(site) = self.sites.get(o.site as usize) else {
                continue;
            };
            let name = java_name(&site.class);
            let age = self.age(o);
            let a = classes.entry(name.clone()).or_default();
            a.live += 1;
            a.live_bytes += o.size;
            if age > 0 {
                a.survived += 1;
                a.survived_bytes += o.size;
            }
            *a.ages.entry(age).or_insert(0) += 1;
            let p = live_paths.entry((name, o.stack)).or_default();
            p.objects += 1;
            p.ages.insert(age);
            let q = live_by_path.entry((o.site, o.stack, o.thread)).or_default();
            q.objects += 1;
            q.bytes += o.size;
            q.ages.insert(age);
            if age > 0 {
                p.survived += 1;
                p.survived_bytes += o.size;
                q.survived += 1;
                q.survived_bytes += o.size;
            }
        }
        (classes, live_paths, live_by_path)
    }

    /// The classes whose live objects span many surviving generations, and more of them over
    /// their history: each with its most common paths.
    fn suspects(&self, class_rows: &[ClassAlloc], live_paths: &LivePaths) -> Vec<Suspect> {
        let frame_name = |f: u32| {
            self.names
                .get(f as usize)
                .map_or_else(|| "<unknown>".to_owned(), |(c, m, _)| format!("{c}.{m}"))
        };
        let mut suspects: Vec<Suspect> = class_rows
            .iter()
            .filter(|c| c.generations >= SUSPECT_GENERATIONS)
            .filter_map(|c| {
                let history = self.t.history.get(&c.class).cloned().unwrap_or_default();
                let low = history
                    .iter()
                    .copied()
                    .filter(|&g| g > 0)
                    .min()
                    .unwrap_or(0);
                let growth = c.generations.saturating_sub(low);
                (growth >= SUSPECT_GROWTH).then(|| {
                    let mut paths: Vec<SuspectPath> = live_paths
                        .iter()
                        .filter(|((class, _), _)| *class == c.class)
                        .map(|((_, stack), p)| SuspectPath {
                            frames: self
                                .t
                                .stacks
                                .get(*stack as usize)
                                .map(|s| s.iter().rev().map(|&f| frame_name(f)).collect())
                                .unwrap_or_default(),
                            live: p.objects,
                            survived: p.survived,
                            survived_bytes: p.survived_bytes,
                            generations: p.ages.len() as u32,
                        })
                        .collect();
                    paths.sort_by(|a, b| {
                        b.live.cmp(&a.live).then_with(|| a.frames.cmp(&b.frames))
                    });
                    paths.truncate(5);
                    Suspect {
                        class: c.class.clone(),
                        generations: c.generations,
                        growth,
                        history,
                        paths,
                    }
                })
            })
            .collect();
        suspects.sort_by(|a, b| {
            b.generations
                .cmp(&a.generations)
                .then(b.growth.cmp(&a.growth))
                .then_with(|| a.class.cmp(&b.class))
        });
        suspects
    }

    /// Per thread, the tracked paths with the site's counts shared out; sites with no tracked
    /// object under "all threads", as their allocating method alone.
    fn trees(&self, profile: &mut Profile, bytes: &[u64], mut live: LiveByPath) -> Trees {
        let mut trees: BTreeMap<ThreadKey, CallTree> = BTreeMap::new();
        let mut leaf_ages = BTreeMap::new();
        let mut by_site: BTreeMap<u32, Vec<(u32, u32, u64)>> = BTreeMap::new();
        for (&(site, stack, thread), &n) in &self.t.paths {
            by_site.entry(site).or_default().push((stack, thread, n));
        }
        for (s, site) in self.sites.iter().enumerate() {
            let n = self.count_of(s);
            if n == 0 {
                continue;
            }
            let leaf = Leaf {
                site: s,
                method: site.method,
                class: profile.methods.insert(&java_name(&site.class), "", ""),
                callee: self
                    .callee_of(s)
                    .map(|(c, m, d)| profile.methods.insert(&c, &m, &d)),
                objects: n,
                bytes: bytes[s],
            };
            let paths = by_site.get(&(s as u32)).map(Vec::as_slice).unwrap_or(&[]);
            if paths.iter().map(|p| p.2).sum::<u64>() == 0 {
                self.untracked_site(profile, &mut trees, &leaf);
            } else {
                let mut tracked = Tracked {
                    trees: &mut trees,
                    leaf_ages: &mut leaf_ages,
                    live: &mut live,
                };
                self.tracked_site(profile, &mut tracked, &leaf, paths);
            }
        }
        (trees, leaf_ages)
    }

    /// A site no tracked object came from: under "all threads", its method (and callee) and
    /// class.
    fn untracked_site(
        &self,
        profile: &mut Profile,
        trees: &mut BTreeMap<ThreadKey, CallTree>,
        leaf: &Leaf,
    ) {
        let (c, m, d) = self.method_of(leaf.site, leaf.method);
        let tree = trees
            .entry(("all threads".into(), 0))
            .or_insert_with(|| CallTree::with_width(WIDTH));
        let m = tree.child_or_insert(
            NodeId::ROOT,
            NodeKind::Method(profile.methods.insert(&c, &m, &d)),
        );
        let m = match leaf.callee {
            Some(c) => tree.child_or_insert(m, NodeKind::Method(c)),
            None => m,
        };
        let node = tree.child_or_insert(m, NodeKind::Method(leaf.class));
        add(tree.extra_mut(node), [leaf.objects, leaf.bytes, 0, 0, 0, 0]);
    }

    /// A site's tracked paths (stack, thread, objects tracked): each gets its share of the
    /// site's counts, the last what is left.
    fn tracked_site(
        &self,
        profile: &mut Profile,
        out: &mut Tracked<'_>,
        leaf: &Leaf,
        paths: &[(u32, u32, u64)],
    ) {
        let tracked: u64 = paths.iter().map(|p| p.2).sum();
        let (n, site_bytes) = (leaf.objects, leaf.bytes);
        let mut given = (0u64, 0u64);
        let mut sorted = paths.to_vec();
        sorted.sort_unstable();
        for (i, &(stack, thread, k)) in sorted.iter().enumerate() {
            let (objects, b) = if i + 1 == sorted.len() {
                (n - given.0, site_bytes - given.1)
            } else {
                let share = |v: u64| (u128::from(v) * u128::from(k) / u128::from(tracked)) as u64;
                (share(n), share(site_bytes))
            };
            given = (given.0 + objects, given.1 + b);
            // Live: the path's live tracked objects scaled by the site's allocated / tracked.
            let live = out
                .live
                .remove(&(leaf.site as u32, stack, thread))
                .unwrap_or_default();
            let scale = |v: u64| scale(v, n, tracked);
            let thread = self
                .t
                .threads
                .get(thread as usize)
                .map(|(id, name, _)| (name.clone(), *id))
                .unwrap_or_default();
            let tree = out
                .trees
                .entry(thread.clone())
                .or_insert_with(|| CallTree::with_width(WIDTH));
            let node = self.path(profile, tree, leaf, stack);
            add(
                tree.extra_mut(node),
                [
                    objects,
                    b,
                    scale(live.objects).min(objects),
                    scale(live.bytes),
                    scale(live.survived).min(objects),
                    scale(live.survived_bytes),
                ],
            );
            if !live.ages.is_empty() {
                out.leaf_ages
                    .entry((thread, node))
                    .or_default()
                    .extend(live.ages);
            }
        }
    }

    /// The leaf of `leaf`'s site under `stack` in `tree`: the stack's frames (or the site's
    /// method, for an empty stack), the callee, the class.
    fn path(&self, profile: &mut Profile, tree: &mut CallTree, leaf: &Leaf, stack: u32) -> NodeId {
        let mut node = NodeId::ROOT;
        let stack_frames = self
            .t
            .stacks
            .get(stack as usize)
            .map(|s| &s[..])
            .unwrap_or(&[]);
        if stack_frames.is_empty() {
            let (c, m, d) = self.method_of(leaf.site, leaf.method);
            node = tree.child_or_insert(node, NodeKind::Method(profile.methods.insert(&c, &m, &d)));
        }
        for &f in stack_frames.iter().rev() {
            let (c, m, d) = self.names.get(f as usize).cloned().unwrap_or_default();
            node = tree.child_or_insert(node, NodeKind::Method(profile.methods.insert(&c, &m, &d)));
        }
        if let Some(c) = leaf.callee {
            node = tree.child_or_insert(node, NodeKind::Method(c));
        }
        tree.child_or_insert(node, NodeKind::Method(leaf.class))
    }
}

/// A site as its trees' leaves show it.
struct Leaf {
    site: usize,
    method: u32,
    /// The allocated class's frame and the called method's (a call the JVM allocates for).
    class: MethodId,
    callee: Option<MethodId>,
    /// The site's counts: objects and bytes.
    objects: u64,
    bytes: u64,
}

/// Where a site's tracked paths go: the trees, their leaves' ages, and the live objects left
/// to share out.
struct Tracked<'a> {
    trees: &'a mut BTreeMap<ThreadKey, CallTree>,
    leaf_ages: &'a mut BTreeMap<(ThreadKey, NodeId), BTreeSet<u64>>,
    live: &'a mut LiveByPath,
}

/// The class table, most bytes first: the live figures scaled from the tracked objects to all.
fn class_rows(classes: BTreeMap<String, Acc>) -> Vec<ClassAlloc> {
    let mut class_rows: Vec<ClassAlloc> = classes
        .iter()
        .map(|(name, a)| {
            let scale = |v: u64| scale(v, a.allocated, a.tracked);
            let aged: u64 = a.ages.iter().map(|(age, n)| age * n).sum();
            ClassAlloc {
                class: name.clone(),
                allocated: a.allocated,
                allocated_bytes: a.bytes,
                tracked: a.tracked,
                live: scale(a.live).min(a.allocated),
                live_bytes: scale(a.live_bytes),
                survived: scale(a.survived).min(a.allocated),
                survived_bytes: scale(a.survived_bytes),
                avg_age: if a.live == 0 {
                    0.0
                } else {
                    (aged as f64 / a.live as f64 * 100.0).round() / 100.0
                },
                generations: a.ages.len() as u32,
            }
        })
        .collect();
    class_rows.sort_by(|a, b| {
        b.allocated_bytes
            .cmp(&a.allocated_bytes)
            .then_with(|| a.class.cmp(&b.class))
    });
    class_rows
}

/// Bytes of `count` objects of a site allocating `class` (internal name) whose arrays held
/// `elements` elements in all, its first object measured at `size` bytes.
fn site_bytes(class: &str, count: u64, elements: u64, size: Option<u64>) -> u64 {
    let Some(element) = class.strip_prefix('[') else {
        return count * size.unwrap_or(0);
    };
    // An array: a 16-byte header (compressed class pointers) and its elements (references
    // compressed to 4 bytes); alignment padding is left out.
    let width = match element.as_bytes().first() {
        Some(b'Z' | b'B') => 1,
        Some(b'C' | b'S') => 2,
        Some(b'J' | b'D') => 8,
        _ => 4,
    };
    count * 16 + elements * width
}

/// The values of an allocation-path leaf: [`path_metrics`].
///
/// [`path_metrics`]: ferrofluid_profile::alloc::path_metrics
const WIDTH: usize = 6;

/// `v` of `tracked` objects scaled to all `allocated` (0 when none was tracked).
fn scale(v: u64, allocated: u64, tracked: u64) -> u64 {
    if tracked == 0 {
        0
    } else {
        (u128::from(v) * u128::from(allocated) / u128::from(tracked)) as u64
    }
}

/// Adds objects, bytes, live, live bytes, survived and survived bytes to a leaf's values
/// ([`path_metrics`]).
///
/// [`path_metrics`]: ferrofluid_profile::alloc::path_metrics
fn add(values: &mut [u64], add: [u64; WIDTH]) {
    for (v, a) in values.iter_mut().zip(add) {
        *v += a;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_bytes_count_header_and_elements() {
        assert_eq!(site_bytes("[J", 3, 30, Some(96)), 3 * 16 + 30 * 8);
        assert_eq!(
            site_bytes("[Ljava/lang/String;", 2, 10, None),
            2 * 16 + 10 * 4
        );
        assert_eq!(site_bytes("[Z", 1, 5, None), 16 + 5);
        assert_eq!(site_bytes("java/lang/Object", 7, 0, Some(16)), 112);
    }
}
