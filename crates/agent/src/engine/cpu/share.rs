//! The recording share's controller (`record=`): sets which share of each window begins
//! recordings (`probe::share`) from what recording costs the program. Decision 0081.
//!
//! `auto` records every root invocation for [`GRACE`], so that short runs keep exact totals.
//! Then it needs invocations of both kinds to see the cost, so it leaves half out (and never
//! less than a tenth); from the
//! thread CPU time of recorded and unrecorded invocations it takes their ratio `r` and opens
//! the share `d` of each window that keeps the roots' work near [`TARGET`] of its speed:
//! `1 / (1 + d (r - 1)) = TARGET`. A share grows at most by half a look, falls at once.

use std::time::{Duration, Instant};

use ferrofluid_protocol::Record;

use crate::probe::share::{self, Measured, ALL};

/// How long `auto` records every invocation.
pub const GRACE: Duration = Duration::from_secs(5);
/// Time between two looks.
pub const LOOK_EVERY: Duration = Duration::from_secs(1);
/// The speed `auto` keeps the roots' work at, against their unrecorded invocations.
pub const TARGET: f64 = 0.9;
/// The largest share `auto` opens once it measures: a tenth of the invocations stays
/// unrecorded, to go on measuring the cost.
pub const MAX_OPEN: u32 = 900;
/// The share `auto` opens when it starts measuring, after [`GRACE`]: half of each window
/// unrecorded, so that a look soon has enough invocations of each kind.
pub const FIRST_OPEN: u32 = 500;
/// The smallest share `auto` opens, thousandths.
pub const MIN_OPEN: u32 = 10;
/// Measured invocations of each kind a look needs to trust a ratio: a root's invocations
/// differ (a server's commands: a scan beside a close), and a few cheap ones alone would make
/// recording look hundreds of times dearer than it is.
const MIN_MEASURED: f64 = 20.0;
/// The weight of older looks' measurements in the running sums.
const DECAY: f64 = 0.7;

/// What the controller did, for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct State {
    /// The share open now, thousandths.
    pub open: u32,
    /// The last measured ratio of a recorded invocation's CPU time to an unrecorded one's.
    pub cost_ratio: Option<f64>,
}

#[derive(Debug)]
pub struct Control {
    record: Record,
    next_look: Instant,
    open: u32,
    /// Decayed sums: CPU ns and count, recorded and unrecorded.
    sums: [f64; 4],
    ratio: Option<f64>,
}

impl Control {
    /// Starts with a recording: every invocation recorded unless a fixed share is asked for.
    pub fn start(record: Record, now: Instant) -> Control {
        share::reset();
        let open = match record {
            Record::Share(m) => m.clamp(1, ALL),
            Record::All | Record::Auto => ALL,
        };
        share::set_open(open);
        share::set_measuring(record == Record::Auto);
        Control {
            record,
            next_look: now + GRACE,
            open,
            sums: [0.0; 4],
            ratio: None,
        }
    }

    pub fn state(&self) -> State {
        State {
            open: self.open,
            cost_ratio: self.ratio,
        }
    }

    /// Looks when due: takes what the probes measured and sets the share.
    pub fn tick(&mut self, now: Instant) {
        if self.record != Record::Auto || now < self.next_look {
            return;
        }
        self.next_look = now + LOOK_EVERY;
        let open = self.look(share::take());
        if open != self.open {
            log::info!(
                "cpu: recording {:.1}% of each window's root entries (cost ratio {})",
                f64::from(open) / 10.0,
                self.ratio
                    .map_or_else(|| "not measured".into(), |r| format!("{r:.2}"))
            );
            self.open = open;
            share::set_open(open);
        }
    }

    /// The share after a look that measured `m`.
    fn look(&mut self, m: Measured) -> u32 {
        let new = [
            m.recorded_cpu_ns as f64,
            m.recorded as f64,
            m.skipped_cpu_ns as f64,
            m.skipped as f64,
        ];
        for (s, n) in self.sums.iter_mut().zip(new) {
            *s = *s * DECAY + n;
        }
        let [rc, rn, sc, sn] = self.sums;
        if self.open >= ALL {
            // Nothing left out yet. Once invocations end (roots that never return are never
            // left out), leave some out, and weigh both kinds over the same seconds from now.
            if rn < MIN_MEASURED {
                return ALL;
            }
            self.sums = [0.0; 4];
            return FIRST_OPEN;
        }
        if rn < MIN_MEASURED || sn < MIN_MEASURED || sc <= 0.0 {
            return self.open;
        }
        let r = (rc / rn) / (sc / sn);
        self.ratio = Some(r);
        let wanted = if r <= 1.0 {
            MAX_OPEN
        } else {
            let d = (1.0 / TARGET - 1.0) / (r - 1.0);
            ((d * f64::from(ALL)).round() as u32).clamp(MIN_OPEN, MAX_OPEN)
        };
        wanted.min((self.open * 3 / 2).max(MIN_OPEN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control() -> Control {
        Control {
            record: Record::Auto,
            next_look: Instant::now(),
            open: ALL,
            sums: [0.0; 4],
            ratio: None,
        }
    }

    fn measured(recorded_ms: u64, recorded: u64, skipped_ms: u64, skipped: u64) -> Measured {
        Measured {
            recorded_cpu_ns: recorded_ms * 1_000_000,
            recorded,
            skipped_cpu_ns: skipped_ms * 1_000_000,
            skipped,
        }
    }

    #[test]
    fn auto_leaves_half_out_once_recorded_invocations_were_measured() {
        let mut c = control();
        assert_eq!(c.look(measured(0, 0, 0, 0)), ALL);
        assert_eq!(c.look(measured(30, 5, 0, 0)), ALL, "too few ended yet");
        c.open = c.look(measured(90, 30, 0, 0));
        assert_eq!(c.open, FIRST_OPEN);
        assert_eq!(c.sums, [0.0; 4], "the grace's measurements are not weighed");
    }

    #[test]
    fn auto_opens_the_share_that_keeps_the_target_speed() {
        let mut c = control();
        c.open = MAX_OPEN;
        // Recorded invocations cost 3.5 times the others: (1 / TARGET - 1) / 2.5.
        c.open = c.look(measured(350, 30, 100, 30));
        assert!((c.ratio.unwrap() - 3.5).abs() < 1e-9, "{:?}", c.ratio);
        let share = ((1.0 / TARGET - 1.0) / 2.5 * 1000.0).round() as u32;
        assert_eq!(c.open, share);
        // Cheap recording: the share grows back, at most by half a look.
        c.sums = [0.0; 4];
        c.open = c.look(measured(110, 30, 100, 30));
        assert_eq!(c.open, share * 3 / 2);
        c.sums = [0.0; 4];
        c.open = c.look(measured(100, 30, 100, 30));
        assert_eq!(c.open, share * 3 / 2 * 3 / 2);
    }

    #[test]
    fn auto_keeps_its_share_without_enough_measurements() {
        let mut c = control();
        c.open = 300;
        assert_eq!(c.look(measured(100, 5, 10, 30)), 300);
        assert_eq!(c.ratio, None);
    }

    #[test]
    fn a_very_costly_recording_keeps_the_least_share() {
        let mut c = control();
        c.open = MAX_OPEN;
        assert_eq!(c.look(measured(100_000, 30, 10, 30)), MIN_OPEN);
    }
}
