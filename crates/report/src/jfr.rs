//! A JFR recording (`.jfr`) as JDK Mission Control, IntelliJ and the JDK's `jfr` tool read it:
//! one chunk whose metadata event describes every type the file uses, one checkpoint event
//! with the constant pools (threads, stack traces, methods, classes, packages, symbols, frame
//! types, thread states), and the events (docs/exports.md, "JFR").
//!
//! - **`jdk.ExecutionSample`** for profiles with times: each calling context's exact self
//!   time (compensated wall time for CPU, a region method's time outside nested regions)
//!   becomes `round(self / period)` samples of its stack, [`SAMPLE_PERIOD_NS`] by default, so
//!   the flame graphs and hot-method views of JMC and `jfr view hot-methods` show the profile.
//!   A `sample` profile has one execution sample per sample taken.
//! - **`jdk.ObjectAllocationSample`** for allocation profiles: one per allocation path, its
//!   weight the path's exact bytes, its object class the path's allocated class.
//! - **`ferrofluid.CallingContext`**: one per calling context of every thread, with its stack
//!   and the exact values of every metric of the profile (`calls`; `selfTime`/`totalTime`,
//!   `selfBytecodes`/`totalBytecodes`, `selfObjects`, `selfBytes`...), defined in the file's
//!   metadata like the JDK's own events.
//! - **`ferrofluid.Region`**: one per region method of a code-region profile, with its
//!   invocations, time, extremes and percentiles.
//!
//! The profile keeps no timestamps: the chunk starts at the epoch (or
//! [`JfrReport::start_nanos`]) and each thread's samples follow its call tree depth first,
//! `period` apart, so the file is the same bytes for the same profile. Frames carry no line
//! numbers or bytecode indexes (-1) and the frame type `Java`.

mod encode;
mod events;
mod metadata;
mod pools;

use std::io::Write;

use ferrofluid_profile::{Mode, Profile};

use crate::jfr::encode::ChunkTimes;
use crate::jfr::events::{Events, Weights};
use crate::jfr::metadata::metadata;
use crate::jfr::pools::Pools;
use crate::{Report, ReportError};

/// Self time one synthesised `jdk.ExecutionSample` stands for: 1 ms.
pub const SAMPLE_PERIOD_NS: u64 = 1_000_000;

/// Options of the JFR writer.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct JfrReport {
    /// Self time per synthesised execution sample, ns (at least 1).
    pub period_ns: u64,
    /// The chunk's start, ns since the epoch.
    pub start_nanos: i64,
}

impl Default for JfrReport {
    fn default() -> Self {
        Self {
            period_ns: SAMPLE_PERIOD_NS,
            start_nanos: 0,
        }
    }
}

impl JfrReport {
    /// Sets the self time per execution sample.
    pub fn with_period_ns(mut self, period_ns: u64) -> Self {
        self.period_ns = period_ns.max(1);
        self
    }
}

impl Report for JfrReport {
    fn write(&self, profile: &Profile, out: &mut dyn Write) -> Result<(), ReportError> {
        out.write_all(&self.encode(profile))?;
        Ok(())
    }
}

impl JfrReport {
    /// The bytes of the recording of `profile`.
    pub fn encode(&self, profile: &Profile) -> Vec<u8> {
        let period = self.period_ns.max(1);
        let mut pools = Pools::default();
        let mut events = Events::default();
        let alloc = profile.mode == Mode::Alloc;
        let metrics = if profile.mode == Mode::Region {
            Vec::new()
        } else {
            profile.metrics()
        };
        if let Some(regions) = &profile.regions {
            events.regions(&mut pools, regions, period);
        }
        if profile.mode != Mode::Region {
            let weights = Weights::of(profile, &metrics);
            for t in 0..profile.threads.len() {
                events.thread(&mut pools, profile, t, &metrics, &weights, period);
            }
        }
        let times = ChunkTimes {
            start_nanos: self.start_nanos,
            duration_nanos: i64::try_from(events.end_tick).unwrap_or(i64::MAX),
        };
        encode::chunk(
            &events.out.0,
            &pools.checkpoint(),
            &metadata(&metrics, alloc),
            &times,
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::jfr::events::samples;
    use crate::jfr::metadata::{label_of, metric_fields};
    use crate::jfr::pools::internal_class_name;
    use ferrofluid_profile::Metric;

    #[test]
    fn class_names_in_the_jvms_internal_form() {
        assert_eq!(internal_class_name("com.acme.Foo$Bar"), "com/acme/Foo$Bar");
        assert_eq!(internal_class_name("long[]"), "[J");
        assert_eq!(internal_class_name("int[][]"), "[[I");
        assert_eq!(
            internal_class_name("java.lang.String[]"),
            "[Ljava/lang/String;"
        );
    }

    #[test]
    fn context_fields_per_metric() {
        let f = |n: &str| metric_fields(&Metric::new(n, "count"));
        assert_eq!(f("calls"), ("calls".to_owned(), None));
        assert_eq!(
            f("cpu_time"),
            ("selfCpuTime".to_owned(), Some("totalCpuTime".to_owned()))
        );
        assert_eq!(label_of("selfCpuTime"), "Self Cpu Time");
    }

    #[test]
    fn samples_round_to_the_nearest_period() {
        assert_eq!(samples(0, 1_000), 0);
        assert_eq!(samples(499, 1_000), 0);
        assert_eq!(samples(500, 1_000), 1);
        assert_eq!(samples(1_499, 1_000), 1);
        assert_eq!(samples(2_500, 1_000), 3);
        assert_eq!(samples(7, 1), 7);
    }
}
