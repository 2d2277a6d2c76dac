//! ferrofluid's profile model: per-thread calling context trees (CCTs) whose nodes carry the
//! metrics of the profile's mode ([`metric`]), built from probe events in the CPU mode;
//! JFluid's probe-overhead compensation, hot spots, and the JSON document.
//!
//! ```
//! use ferrofluid_profile::{Calibration, Profile, Stamp, ThreadProfile, ThreadRecorder};
//!
//! let mut profile = Profile::default();
//! let f = profile.methods.insert("com.acme.Fig4", "f", "()V");
//! let h = profile.methods.insert("com.acme.Fig4", "h", "()V");
//! let mut rec = ThreadRecorder::default();
//! rec.enter(f, Stamp::wall(0));
//! rec.enter(h, Stamp::wall(100));
//! rec.exit(h, Stamp::wall(150)).unwrap();
//! rec.exit(f, Stamp::wall(400)).unwrap();
//! profile.threads.push(ThreadProfile::new("main", 1, rec.finish(Stamp::wall(400))));
//! profile.calibration = Some(Calibration { inner_ns: 10.0, outer_ns: 5.0 });
//!
//! // f: self measured 350, minus its own inner cost 10 and h's outer cost 5.
//! let spots = profile.hot_spots();
//! assert_eq!((spots[0].self_ns, spots[0].calls), (335, 1));
//!
//! // The JSON document reads back into the same profile.
//! let mut json = Vec::new();
//! profile.write_json(&mut json).unwrap();
//! let back = Profile::from_json_slice(&json).unwrap();
//! assert_eq!(back, profile);
//! ```
#![deny(missing_docs)]

pub mod alloc;
pub mod calibration;
pub mod compensation;
pub mod delta;
pub mod error;
pub mod failed;
pub mod json;
pub mod method;
pub mod metric;
pub mod mode;
pub mod native;
mod native_view;
pub mod profile;
pub mod recorder;
pub mod recording;
pub mod region;
pub mod sampling;
pub mod totals;
pub mod tree;

pub use alloc::{AllocSummary, ClassAlloc, SiteAlloc, Suspect, SuspectPath};
pub use calibration::{
    compensate, node_cpu_times, node_times, probe_dominated, rest_dominated, Calibration,
    CalibrationBatch, CpuTimes, Times, PROBE_SPREAD, REST_SPREAD, UNCERTAIN_SHARE,
};
pub use compensation::{CalibrationStats, Calibrator, Unreliable};
pub use error::{DocumentError, EventError};
pub use failed::{merge_failed, ClassPhase, FailedClass};
pub use json::Document;
pub use method::{MethodId, MethodInfo, MethodTable};
pub use metric::{Metric, MetricSpot, MetricTotals, Slot, Value};
pub use mode::{Mode, UnknownMode};
pub use native::{NativeRow, NativeSummary, NotMeasured, Split};
pub use profile::{hot_spots, hot_spots_with_cpu, Alive, HotSpot, Profile, ThreadProfile, Waiting};
pub use recorder::{Stamp, ThreadRecorder, DEFAULT_MAX_NODES, MAX_DEPTH};
pub use recording::{merged_virtual_name, Recording, DEFAULT_MAX_VIRTUAL_THREADS};
pub use region::{RegionStats, MODE_REGION};
pub use sampling::Sampling;
pub use totals::{IdleSpot, MethodTotals, ProfileTotals, ThreadTimes, TreeTotals};
pub use tree::{CallTree, Node, NodeId, NodeKind};
