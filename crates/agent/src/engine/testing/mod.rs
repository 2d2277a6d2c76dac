//! A test engine, registered only in the agent's unit tests (in the slot of a mode this agent
//! has no engine for: `sample`): it counts the entries of the methods it selects, per method,
//! and reports them as region counts. It shows what a new engine takes: this module and its
//! line in the registry, no other file.

use std::collections::BTreeMap;
use std::sync::Mutex;

use ferrofluid_classfile::ProbeKind;
use ferrofluid_jvmti::{sys, JniEnv};
use ferrofluid_profile::region::RegionStats;
use ferrofluid_profile::{Mode, Profile};
use ferrofluid_protocol::AgentOptions;
use ferrofluid_subgraph::{PlanConfig, Scheme};

use crate::engine::{Capability, Engine, Instrumentation, Needs, Selection, Units};
use crate::probe::{collector, flags, hooks};

/// Entries per global method id (a test engine: a lock per probe is fine here).
static COUNTS: Mutex<BTreeMap<u32, u64>> = Mutex::new(BTreeMap::new());

fn counts() -> std::sync::MutexGuard<'static, BTreeMap<u32, u64>> {
    COUNTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Counts method entries.
pub struct Entries;

impl Engine for Entries {
    fn mode(&self) -> Mode {
        Mode::Sample
    }

    fn units(&self) -> Units {
        Units::Counts
    }

    fn needs(&self) -> Needs {
        Needs {
            capabilities: &[Capability::RetransformClasses],
            ..Needs::default()
        }
    }

    fn instruments(&self) -> Option<Instrumentation> {
        Some(Instrumentation {
            probes: ProbeKind::EntryExit,
            selection: Selection::Methods,
        })
    }

    fn plan(&self, options: &AgentOptions) -> PlanConfig {
        PlanConfig {
            roots: options.roots.clone(),
            scheme: Scheme::Lazy,
            filter: options.filter.clone(),
            skip_trivial: false,
            adaptive: false,
        }
    }

    fn configure(&self, _options: &AgentOptions) {
        counts().clear();
    }

    fn method_chosen(&self, id: u32) {
        counts().insert(id, 0);
    }

    fn start(&self, _env: &JniEnv<'_>) {
        self.reset();
        collector::start(None, None, None);
    }

    fn reset(&self) {
        counts().values_mut().for_each(|n| *n = 0);
    }

    fn snapshot(&self, profile: &mut Profile) {
        let stats = counts()
            .iter()
            .map(|(&id, &count)| {
                let (class, method, descriptor) =
                    crate::runtime::session::method_name(id).unwrap_or_else(|| (id.to_string(), String::new(), String::new()));
                RegionStats {
                    class,
                    method,
                    descriptor,
                    count,
                    ..RegionStats::default()
                }
            })
            .collect();
        profile.regions = Some(stats);
    }

    fn enter(_env: *mut sys::JNIEnv, id: i32, _start: u64) {
        let id = hooks::method_id(id as u32);
        if flags::get(id) & flags::ACTIVE != 0 {
            if let Some(n) = counts().get_mut(&id) {
                *n += 1;
            }
        }
    }

    fn exit(_env: *mut sys::JNIEnv, _id: i32, _start: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine;

    /// The engine is found by its mode, made active, and its probes are reached through the
    /// same dispatch as the natives' (`hooks::bench_pair`).
    #[test]
    fn a_registered_engine_gets_the_probes() {
        let _lock = engine::TEST_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let options: AgentOptions = "mode=sample,root=demo.Work::step".parse().unwrap();
        let chosen = engine::select(&options).expect("the test engine is registered");
        assert_eq!((chosen.mode(), chosen.units()), (Mode::Sample, Units::Counts));
        let (counted, other) = (8_000_001, 8_000_002);
        engine::activate(chosen, &options);
        chosen.method_chosen(counted);
        flags::set(counted, flags::ACTIVE | flags::ROOT | flags::INVOKED);
        flags::set(other, flags::ACTIVE | flags::INVOKED);
        for _ in 0..5 {
            hooks::bench_pair(counted);
            hooks::bench_pair(hooks::always_native(counted));
            hooks::bench_pair(other);
        }
        let mut profile = Profile::default();
        engine::current().snapshot(&mut profile);
        chosen.reset();
        let mut after_reset = Profile::default();
        chosen.snapshot(&mut after_reset);
        // Back to the default engine before anything else runs probes.
        engine::activate(engine::find(Mode::Cpu).expect("cpu engine"), &AgentOptions::default());
        flags::clear(counted);
        flags::clear(other);
        let regions = profile.regions.expect("counts");
        assert_eq!(regions.len(), 1);
        assert_eq!((regions[0].class.as_str(), regions[0].count), ("8000001", 10));
        assert_eq!(after_reset.regions.expect("counts")[0].count, 0);
    }
}
