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
                });
                self.by_id.insert(key, self.threads.len() - 1);
                self.threads.len() - 1
            }
        };
        &mut self.threads[index].recorder
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
                }
            })
            .collect();
        let mut profile = Profile {
            mode: crate::Mode::Cpu,
            extra_metrics: Vec::new(),
            methods: self.methods,
            instrumented: self.instrumented,
            trivial_skipped: 0,
            probes_dropped: Default::default(),
            calibration: self.calibration,
            cpu_calibration: self.cpu_calibration,
            calibration_stats: self.calibration_stats,
            threads,
            regions: None,
            failed_classes: Vec::new(),
        };
        profile.cap_calibration();
        profile
    }
}
