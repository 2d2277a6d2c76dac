//! Recording of a whole program: one [`ThreadRecorder`] per thread, plus the method
//! table, turned into a [`Profile`] at the end or as a snapshot at any moment.

use std::collections::HashMap;

use crate::calibration::Calibration;
use crate::method::{MethodId, MethodTable};
use crate::profile::{Profile, ThreadProfile};
use crate::recorder::{Stamp, ThreadRecorder};
use crate::totals::MethodTotals;
use crate::tree::CallTree;

#[derive(Clone, Debug)]
struct ThreadSlot {
    name: String,
    /// The recorder's key.
    key: u64,
    /// The thread id reported.
    id: u64,
    recorder: ThreadRecorder,
    virtual_thread: bool,
}

/// Virtual threads a recording keeps a tree of each by default ([`Recording::max_virtual_threads`]).
pub const DEFAULT_MAX_VIRTUAL_THREADS: usize = 10_000;

/// The trees of the virtual threads merged past the cap, and how many.
#[derive(Clone, Debug, Default)]
struct MergedVirtual {
    tree: CallTree,
    threads: u64,
    overflow_calls: u64,
    unmatched_exits: u64,
}

/// Collects the trees of every profiled thread.
#[derive(Clone, Debug)]
pub struct Recording {
    /// Names of the instrumented methods.
    pub methods: MethodTable,
    /// Number of methods that carry probes.
    pub instrumented: u64,
    /// Probe costs, once calibrated.
    pub calibration: Option<Calibration>,
    /// The probes' thread CPU costs, once calibrated (`cpu` option).
    pub cpu_calibration: Option<Calibration>,
    /// What the calibration saw ([`crate::CalibrationStats`]).
    pub calibration_stats: Option<crate::compensation::CalibrationStats>,
    max_nodes: usize,
    threads: Vec<ThreadSlot>,
    by_id: HashMap<u64, usize>,
    /// Virtual threads kept as one tree each; past it, a virtual thread outside every frame
    /// when its events pause ([`Recording::virtual_paused`]) is merged into one entry, so that
    /// millions of them take bounded memory.
    pub max_virtual_threads: usize,
    /// Slots of virtual threads.
    virtual_threads: usize,
    merged_virtual: Option<MergedVirtual>,
}

impl Recording {
    /// A recording whose threads may each create `max_nodes` method nodes.
    pub fn new(max_nodes: usize) -> Self {
        Self {
            methods: MethodTable::new(),
            instrumented: 0,
            calibration: None,
            cpu_calibration: None,
            calibration_stats: None,
            max_nodes,
            threads: Vec::new(),
            by_id: HashMap::new(),
            max_virtual_threads: DEFAULT_MAX_VIRTUAL_THREADS,
            virtual_threads: 0,
            merged_virtual: None,
        }
    }

    /// The recorder of thread `id`, created on first use with `name` (threads are
    /// reported in order of first use).
    pub fn thread(&mut self, id: u64, name: &str) -> &mut ThreadRecorder {
        self.thread_of(id, id, name)
    }

    /// The recorder keyed `key`, created on first use for the thread `id` named `name`: one
    /// thread may have several keys (the agent gives a thread a new key per session).
    pub fn thread_of(&mut self, key: u64, id: u64, name: &str) -> &mut ThreadRecorder {
        let index = match self.by_id.get(&key) {
            Some(&i) => i,
            None => {
                self.threads.push(ThreadSlot {
                    name: name.to_owned(),
                    key,
                    id,
                    recorder: ThreadRecorder::new(self.max_nodes),
                    virtual_thread: false,
                });
                self.by_id.insert(key, self.threads.len() - 1);
                self.threads.len() - 1
            }
        };
        &mut self.threads[index].recorder
    }

    /// Marks thread `key` (already recorded) as a virtual thread.
    pub fn mark_virtual(&mut self, key: u64) {
        if let Some(&i) = self.by_id.get(&key) {
            let slot = &mut self.threads[i];
            if !slot.virtual_thread {
                slot.virtual_thread = true;
                self.virtual_threads += 1;
            }
        }
    }

    /// Virtual thread `key`'s events pause (it parked or ended). Past
    /// [`Recording::max_virtual_threads`], if it is outside every frame, its tree is merged into
    /// the one entry of the virtual threads merged, and its recorder let go (events it records
    /// later start a new one). Returns whether it was merged.
    pub fn virtual_paused(&mut self, key: u64) -> bool {
        let Some(&i) = self.by_id.get(&key) else {
            return false;
        };
        let slot = &self.threads[i];
        if !slot.virtual_thread
            || slot.recorder.depth() > 0
            || self.virtual_threads <= self.max_virtual_threads
        {
            return false;
        }
        let slot = self.threads.swap_remove(i);
        self.by_id.remove(&key);
        if let Some(moved) = self.threads.get(i) {
            self.by_id.insert(moved.key, i);
        }
        self.virtual_threads -= 1;
        let merged = self
            .merged_virtual
            .get_or_insert_with(MergedVirtual::default);
        merged.threads += 1;
        merged.overflow_calls += slot.recorder.overflow_calls();
        merged.unmatched_exits += slot.recorder.unmatched_exits();
        let last = Stamp::wall(slot.recorder.last_wall_ns());
        merged.tree.merge(&slot.recorder.finish(last));
        true
    }

    /// Whether thread `id` has a recorder.
    pub fn has_thread(&self, id: u64) -> bool {
        self.by_id.contains_key(&id)
    }

    /// The tree so far of the `index`th thread recorded (open frames not counted yet);
    /// `None` past the last.
    pub fn thread_tree(&self, index: usize) -> Option<&CallTree> {
        Some(self.threads.get(index)?.recorder.tree())
    }

    /// Per thread recorded, in the order of the profile's threads: its key, its id and the node
    /// of its innermost open frame ([`ThreadRecorder::innermost`]).
    pub fn open_frames(&self) -> Vec<(u64, u64, Option<crate::tree::NodeId>)> {
        self.threads
            .iter()
            .map(|s| (s.key, s.id, s.recorder.innermost()))
            .collect()
    }

    /// Whether no invocation of `method` entered before wall time `since` can still open or
    /// close unseen: every thread is either outside every frame, or has an event at or after
    /// `since` and no open frame of `method`. (A thread's events arrive in time order, so an
    /// entry stamped before `since` arrived before such an event. A thread outside every frame
    /// would have entered a root first, before `since` as well.) `method`: `None` when no event
    /// of it was ever seen.
    pub fn quiet_since(&self, method: Option<MethodId>, since: u64) -> bool {
        self.threads.iter().all(|slot| {
            let r = &slot.recorder;
            r.depth() == 0 || (r.last_wall_ns() >= since && method.is_none_or(|m| !r.is_open(m)))
        })
    }

    /// [`MethodTotals::short_and_frequent`] over every thread.
    pub fn short_and_frequent(&self, min_calls: u64) -> Vec<(MethodId, u64)> {
        let mut totals = MethodTotals::default();
        for slot in &self.threads {
            totals.add(MethodTotals::of_tree(
                slot.recorder.tree(),
                self.calibration.as_ref(),
            ));
        }
        totals.short_and_frequent(self.calibration.as_ref(), min_calls)
    }

    /// Forgets what was recorded before `at` ([`ThreadRecorder::restart`]): threads outside
    /// every frame are dropped, the others keep only their open frames, timed from `at`. The
    /// method table and the calibrations stay.
    pub fn restart(&mut self, at: Stamp) {
        self.threads.retain(|slot| slot.recorder.depth() > 0);
        self.virtual_threads = self.threads.iter().filter(|s| s.virtual_thread).count();
        self.merged_virtual = None;
        for slot in &mut self.threads {
            slot.recorder.restart(at);
        }
        self.by_id = self
            .threads
            .iter()
            .enumerate()
            .map(|(i, slot)| (slot.key, i))
            .collect();
    }

    /// The profile as if every open frame ended at `at`; recording continues.
    pub fn snapshot(&self, at: Stamp) -> Profile {
        self.clone().finish(at)
    }

    /// Closes every open frame at `at` and returns the profile. Frames still open get the
    /// wall time up to `at` and, unless `at` carries a CPU clock (which is one thread's), the
    /// CPU time up to their thread's last probe ([`ThreadRecorder::finish`]). The calibration
    /// is capped by what the probes measured of themselves ([`Profile::cap_calibration`]).
    pub fn finish(self, at: Stamp) -> Profile {
        let merged = self.merged_virtual.map(|m| {
            let cpu_ns = m.tree.node(m.tree.root()).cpu_ns;
            ThreadProfile {
                cpu_ns,
                overflow_calls: m.overflow_calls,
                unmatched_exits: m.unmatched_exits,
                virtual_thread: true,
                ..ThreadProfile::new(merged_virtual_name(m.threads), 0, m.tree)
            }
        });
        let threads = self
            .threads
            .into_iter()
            .map(|slot| {
                let overflow_calls = slot.recorder.overflow_calls();
                let unmatched_exits = slot.recorder.unmatched_exits();
                let tree = slot.recorder.finish(at);
                let cpu_ns = tree.node(tree.root()).cpu_ns;
                ThreadProfile {
                    name: slot.name,
                    id: slot.id,
                    cpu_ns,
                    tree,
                    overflow_calls,
                    unmatched_exits,
                    dropped_events: 0,
                    waiting: None,
                    virtual_thread: slot.virtual_thread,
                    alive: None,
                }
            })
            .chain(merged)
            .collect();
        let mut profile = Profile {
            mode: crate::Mode::Cpu,
            extra_metrics: Vec::new(),
            methods: self.methods,
            instrumented: self.instrumented,
            trivial_skipped: 0,
            inlined_left_alone: Vec::new(),
            probes_dropped: Default::default(),
            calibration: self.calibration,
            cpu_calibration: self.cpu_calibration,
            calibration_stats: self.calibration_stats,
            threads,
            regions: None,
            failed_classes: Vec::new(),
            alloc: None,
            native: None,
            sampling: None,
        };
        profile.cap_calibration();
        profile
    }
}

/// The name of the entry of `n` virtual threads merged past a recording's cap.
pub fn merged_virtual_name(n: u64) -> String {
    format!("virtual threads merged past the cap ({n})")
}
