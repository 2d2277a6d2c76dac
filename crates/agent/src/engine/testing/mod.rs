//! A test engine, registered only in the agent's unit tests, in a slot of its own (it measures
//! no mode of the protocol: the tests make it active): it counts the entries of the methods it
//! selects, per method, and reports them as region counts. It shows what a new engine takes:
//! this folder and its line in the registry, no other file.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use ferrofluid_classfile::ProbeKind;
use ferrofluid_jvmti::{sys, JavaVm, JniEnv, Jvmti};
use ferrofluid_profile::region::RegionStats;
use ferrofluid_profile::{Mode, Profile};
use ferrofluid_protocol::AgentOptions;
use ferrofluid_subgraph::{PlanConfig, Scheme};

use crate::engine::{
    Capability, ClassKey, Context, Engine, EngineSession, Instrumentation, MethodName, Needs,
    Selection, Units,
};
use crate::probe::thread::method_id;
use crate::probe::{collector, flags};

// Process-wide: the probes, JVM natives without user data, count into it (a test engine: a
// lock per probe is fine here).
/// Entries per global method id.
static COUNTS: Mutex<BTreeMap<u32, u64>> = Mutex::new(BTreeMap::new());

fn counts() -> std::sync::MutexGuard<'static, BTreeMap<u32, u64>> {
    COUNTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Counts method entries.
pub struct Entries;

impl Engine for Entries {
    /// The mode its profiles claim: region, whose counts it reports (`find` still gives the
    /// region engine for it: the test engine has a slot, not a mode).
    fn mode(&self) -> Mode {
        Mode::Region
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

    fn plan(&self, options: &AgentOptions) -> PlanConfig {
        PlanConfig {
            roots: options.roots.clone(),
            scheme: Scheme::Lazy,
            filter: options.filter.clone(),
            skip_trivial: false,
            adaptive: false,
        }
    }

    fn open(&self, _ctx: &dyn Context, _options: &AgentOptions) -> Box<dyn EngineSession> {
        counts().clear();
        Box::new(EntriesSession)
    }

    fn enter(_env: *mut sys::JNIEnv, id: i32, _start: u64) {
        let id = method_id(id as u32);
        if flags::get(id) & flags::ACTIVE != 0 {
            if let Some(n) = counts().get_mut(&id) {
                *n += 1;
            }
        }
    }

    fn exit(_env: *mut sys::JNIEnv, _id: i32, _start: u64) {}
}

/// A session of the test engine.
struct EntriesSession;

impl EngineSession for EntriesSession {
    fn instruments(&self) -> Option<Instrumentation> {
        Some(Instrumentation {
            probes: ProbeKind::EntryExit,
            selection: Selection::Methods,
            leaves: false,
        })
    }

    fn method_chosen(&self, id: u32) {
        counts().insert(id, 0);
    }

    fn start(&self, ctx: &dyn Context, _env: &JniEnv<'_>) {
        self.reset(ctx);
        collector::start(None, None, None);
    }

    fn reset(&self, _ctx: &dyn Context) {
        counts().values_mut().for_each(|n| *n = 0);
    }

    fn snapshot(&self, ctx: &dyn Context, profile: &mut Profile) {
        let stats = counts()
            .iter()
            .map(|(&id, &count)| {
                let (class, method, descriptor) = ctx
                    .method_name(id)
                    .unwrap_or_else(|| (id.to_string(), String::new(), String::new()));
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
}

/// A runtime without a JVM, for the engines' unit tests: nothing attached, no session.
pub struct NoJvm;

impl Context for NoJvm {
    fn vm(&self) -> Option<JavaVm> {
        None
    }

    fn jvmti(&self) -> Option<Jvmti> {
        None
    }

    fn method_name(&self, _id: u32) -> Option<MethodName> {
        None
    }

    fn instrumented(&self) -> bool {
        false
    }

    fn dropped_ids(&self) -> Vec<u32> {
        Vec::new()
    }

    fn drops_in_java(&self) -> bool {
        false
    }

    fn drop_probes(&self, _drop: &[u32], _quiet: &[u32], _retransform: &[u32]) -> Vec<u32> {
        Vec::new()
    }

    fn jdk_classes_inlined(&self, _share: f64) -> Option<HashMap<String, usize>> {
        None
    }

    fn replan(&self, _plan: &mut dyn FnMut() -> Vec<ClassKey>) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{self, bench, Selected, Slot};

    /// The engine is made active in its slot, and its probes are reached through the same
    /// dispatch as the natives' (`bench::bench_pair`).
    #[test]
    fn a_registered_engine_gets_the_probes() {
        let _lock = crate::testing::SERIAL
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let options: AgentOptions = "root=demo.Work::step".parse().unwrap();
        let chosen = Selected {
            slot: Slot::Testing,
            engine: &Entries,
        };
        assert_eq!((chosen.mode(), chosen.units()), (Mode::Region, Units::Counts));
        let (counted, other) = (8_000_001, 8_000_002);
        let session = chosen.open(&NoJvm, &options);
        engine::activate(chosen);
        session.method_chosen(counted);
        flags::set(counted, flags::ACTIVE | flags::ROOT | flags::INVOKED);
        flags::set(other, flags::ACTIVE | flags::INVOKED);
        for _ in 0..5 {
            bench::bench_pair(counted);
            bench::bench_pair(crate::probe::thread::always_native(counted));
            bench::bench_pair(other);
        }
        let mut profile = Profile::default();
        session.snapshot(&NoJvm, &mut profile);
        session.reset(&NoJvm);
        let mut after_reset = Profile::default();
        session.snapshot(&NoJvm, &mut after_reset);
        // Back to the default engine before anything else runs probes.
        engine::activate(engine::find(Mode::Cpu).expect("cpu engine"));
        flags::clear(counted);
        flags::clear(other);
        let regions = profile.regions.expect("counts");
        assert_eq!(regions.len(), 1);
        assert_eq!((regions[0].class.as_str(), regions[0].count), ("8000001", 10));
        assert_eq!(after_reset.regions.expect("counts")[0].count, 0);
    }
}
