//! Compensation on a busy machine: calibration batches that lost their CPU left out, what is
//! subtracted bounded by what was measured and by the probes' own measured cost, and the
//! rules by which a profile says its compensation is unreliable. Exact numbers throughout.

use ferrofluid_profile::compensation::{
    calibration_verdict, mostly_estimate, CalibrationStats, DISTURBED_SHARE, MIN_KEPT, POOL,
};
use ferrofluid_profile::{
    Calibration, CalibrationBatch, Calibrator, MethodId, Profile, Recording, Stamp, ThreadProfile,
    ThreadRecorder, Unreliable,
};

/// A batch of 1,000 pairs costing `pair` ns each apart from what the probes measured, `inner`
/// of it inner, in `wall` ns of which `off_cpu` off its CPU.
fn batch(pair: u64, inner: u64, wall: u64, off_cpu: u64) -> CalibrationBatch {
    CalibrationBatch {
        pairs: 1_000,
        elapsed_ns: pair * 1_000,
        inner_ns: inner * 1_000,
        wall_ns: wall,
        off_cpu_ns: off_cpu,
    }
}

#[test]
fn batches_that_lost_their_cpu_are_left_out() {
    // 2% of 1 ms is 20 µs: 20 µs off CPU is undisturbed, 20.001 µs is not.
    assert!(!batch(20, 8, 1_000_000, 20_000).disturbed());
    assert!(batch(20, 8, 1_000_000, 20_001).disturbed());
    assert_eq!(DISTURBED_SHARE, 0.02);
    let mut c = Calibrator::new();
    assert_eq!(c.estimate(), None);
    // Ten quiet batches at 20-29 ns a pair (inner 8-17), and five that lost a time slice of
    // 3 ms each: 767 ns a pair, as on the busy machine where this was found.
    for i in 0..10 {
        c.add(batch(20 + i, 8 + i, 1_000_000, 1_000));
    }
    for _ in 0..5 {
        c.add(batch(767, 296, 4_000_000, 3_000_000));
    }
    // An empty batch is no batch.
    c.add(CalibrationBatch::default());
    assert_eq!(c.undisturbed(), 10);
    let (cal, stats) = c.estimate().unwrap();
    // Medians of the ten quiet ones: total (24 + 25) / 2, inner (12 + 13) / 2.
    assert_eq!(
        cal,
        Calibration {
            inner_ns: 12.5,
            outer_ns: 12.0
        }
    );
    assert_eq!(
        stats,
        CalibrationStats {
            batches: 15,
            disturbed: 5,
            // (10 * 1 µs + 5 * 3 ms) off CPU in (10 * 1 ms + 5 * 4 ms).
            descheduled_share: 15_010_000.0 / 30_000_000.0,
            kept: 10,
            // Quartiles of 20..=29 by linear interpolation: ranks 2.25, 4.5, 6.75.
            pair_ns: [22.25, 24.5, 26.75],
            calibrated: None,
        }
    );
    // Nothing wrong with this calibration.
    assert_eq!(calibration_verdict(&stats, Some(&cal), 40.0), []);
}

#[test]
fn too_few_quiet_batches_say_the_machine_was_loaded() {
    let mut c = Calibrator::new();
    // Five quiet batches at 20 ns a pair; then, with the CPU shared with two busy processes,
    // twenty that spent half their time off CPU: the first four lost it inside their probes'
    // own measured intervals (which the calibration subtracts: 21-24 ns a pair), the others
    // outside, so their pairs grew by 40 ns, 80 ns, ... (a slice or two spread over them).
    for _ in 0..5 {
        c.add(batch(20, 8, 1_000_000, 0));
    }
    for i in 1..=20u64 {
        let pair = if i <= 4 {
            20 + i
        } else {
            20 + 40 * (i % 3 + 1)
        };
        c.add(batch(pair, 8, 2_000_000, 1_000_000));
    }
    let (cal, stats) = c.estimate().unwrap();
    // Fewer than MIN_KEPT undisturbed: the eight cheapest, 20 x 5, 21, 22, 23.
    assert_eq!(MIN_KEPT, 8);
    assert_eq!(stats.kept, 8);
    assert_eq!((cal.inner_ns, cal.outer_ns), (8.0, 12.0));
    // Ranks 1.75, 3.5 and 5.25 of 20, 20, 20, 20, 20, 21, 22, 23.
    assert_eq!(stats.pair_ns, [20.0, 20.0, 21.25]);
    let verdict = calibration_verdict(&stats, Some(&cal), 40.0);
    assert_eq!(
        verdict,
        [Unreliable::Loaded {
            batches: 25,
            disturbed: 20,
            // 20 ms off CPU in 45 ms.
            descheduled_share: 20_000_000.0 / 45_000_000.0,
        }]
    );
    assert_eq!(
        verdict[0].to_string(),
        "the machine was busy while calibrating (20 of 25 calibration batches lost their CPU, \
         44% of their time off CPU)"
    );
    // With eight quiet batches the disturbed ones are left out and nothing is said.
    for _ in 0..3 {
        c.add(batch(20, 8, 1_000_000, 0));
    }
    let (cal, stats) = c.estimate().unwrap();
    assert_eq!((cal.inner_ns, cal.outer_ns, stats.kept), (8.0, 12.0, 8));
    assert_eq!(calibration_verdict(&stats, Some(&cal), 40.0), []);
}

#[test]
fn the_pool_keeps_the_most_recent_batches() {
    let mut c = Calibrator::new();
    // A slow start (interpreted code, say), then POOL quiet batches: the slow ones leave.
    for _ in 0..10 {
        c.add(batch(300, 100, 1_000_000, 0));
    }
    for _ in 0..POOL {
        c.add(batch(30, 10, 1_000_000, 0));
    }
    let (cal, stats) = c.estimate().unwrap();
    assert_eq!((cal.inner_ns, cal.outer_ns), (10.0, 20.0));
    assert_eq!((stats.batches, stats.kept), (POOL as u64 + 10, POOL as u64));
}

#[test]
fn interquartile_range_over_half_the_median_is_disagreement() {
    let disagree = Unreliable::Disagree {
        pair_ns: [20.0, 20.0, 32.5],
    };
    assert_eq!(
        disagree.to_string(),
        "the calibration batches disagree (probe pair's rest 20.0 / 20.0 / 32.5 ns per call, \
         quartiles)"
    );
    let stats = |pair_ns| CalibrationStats {
        batches: 24,
        kept: 24,
        pair_ns,
        ..CalibrationStats::default()
    };
    // 30 - 20 = 10 is exactly half of 20: agreement; 10.1 is not.
    assert_eq!(
        calibration_verdict(&stats([20.0, 20.0, 30.0]), None, 0.0),
        []
    );
    assert_eq!(
        calibration_verdict(&stats([20.0, 20.0, 30.1]), None, 0.0),
        [Unreliable::Disagree {
            pair_ns: [20.0, 20.0, 30.1]
        }]
    );
}

/// One thread: root `r` calls leaf `l` 10,000 times. Every probe measures 20 ns of itself but
/// `r`'s entry, 40 (`r`'s exit probe runs outside every measured interval: not counted);
/// each `l` call measures 100 ns and the loop around it 50.
fn busy_loop_profile(calibration: Calibration) -> Profile {
    let (r, l) = (MethodId(0), MethodId(1));
    let mut rec = ThreadRecorder::new(10);
    let at = |t| Stamp::wall(t).by_probe(20);
    rec.enter(r, Stamp::wall(0).by_probe(40));
    let mut t = 10;
    for _ in 0..10_000 {
        rec.enter(l, at(t));
        rec.exit(l, at(t + 100)).unwrap();
        t += 150;
    }
    rec.exit(r, at(1_500_000)).unwrap();
    let mut p = Profile::default();
    p.methods.insert("A", "r", "()V");
    p.methods.insert("A", "l", "()V");
    p.threads.push(ThreadProfile::new(
        "main",
        1,
        rec.finish(Stamp::wall(1_500_000)),
    ));
    p.calibration = Some(calibration);
    p
}

/// The calibration of the busy machine where this was found: 300 / 500 ns where the probes'
/// calls in and out cost ~20.
const BUSY: Calibration = Calibration {
    inner_ns: 300.0,
    outer_ns: 500.0,
};

#[test]
fn nothing_subtracted_exceeds_what_was_measured() {
    let p = busy_loop_profile(BUSY);
    let tree = &p.threads[0].tree;
    let times = p.times(tree);
    let (r, l) = (1, 2);
    // l: measured 1,000,000, probes 200,000 (its entries); 3,000,000 calibrated, 800,000 left.
    assert_eq!(
        (times[l].self_ns, times[l].probe_ns, times[l].overhead_ns),
        (0, 200_000, 800_000)
    );
    // r: measured self 500,000, probes 200,040 (its entry, l's exits); 5,000,300 calibrated,
    // 299,960 left.
    assert_eq!(
        (times[r].self_ns, times[r].probe_ns, times[r].overhead_ns),
        (0, 200_040, 299_960)
    );
    // The thread's header can no longer claim more than its 1.5 ms.
    let root = times[0];
    assert_eq!(root.total_overhead_ns + root.total_probe_ns, 1_500_000);
    assert_eq!(root.total_ns, 0);
    // 1,099,960 of 1,500,000 ns subtracted as calibrated cost: mostly estimate.
    assert_eq!(
        p.unreliable(),
        [Unreliable::MostlyEstimate {
            estimated_ns: 1_099_960,
            measured_ns: 1_500_000
        }]
    );
    assert_eq!(
        p.unreliable()[0].to_string(),
        "73% of the measured time (1.100 of 1.500 ms) was subtracted as calibrated probe cost"
    );
    assert!(mostly_estimate(750_001, 1_500_000));
    assert!(!mostly_estimate(750_000, 1_500_000));
}

#[test]
fn the_calibrated_rest_is_capped_by_what_the_probes_measured() {
    let mut p = busy_loop_profile(BUSY);
    p.cap_calibration();
    // The probes measured 400,040 ns over 10,001 pairs: 40 ns a pair, so the rest may be 60 ns
    // at most; 800 is scaled down to it, inner and outer in proportion.
    assert_eq!(
        p.calibration,
        Some(Calibration {
            inner_ns: 22.5,
            outer_ns: 37.5
        })
    );
    assert_eq!(p.calibration_stats.as_ref().unwrap().calibrated, Some(BUSY));
    let times = p.times(&p.threads[0].tree);
    // l: 1,000,000 - 200,000 - 10,000 * 22.5.
    assert_eq!((times[2].self_ns, times[2].overhead_ns), (575_000, 225_000));
    // r: 500,000 - 200,040 - 22.5 - 10,000 * 37.5 < 0: all of the 299,960 left.
    assert_eq!((times[1].self_ns, times[1].overhead_ns), (0, 299_960));
    let why = p.unreliable();
    assert_eq!(
        why,
        [Unreliable::Capped {
            calibrated_ns: 800.0,
            measured_ns: 40.0,
            applied_ns: 60.0
        }]
    );
    assert_eq!(
        why[0].to_string(),
        "the calibrated rest of a probe pair (800.0 ns) exceeded 1.5 times what the probes \
         measured of themselves (40.0 ns per pair): 60.0 ns subtracted instead"
    );
    // Within the cap nothing changes and nothing is said.
    let mut quiet = busy_loop_profile(Calibration {
        inner_ns: 20.0,
        outer_ns: 40.0,
    });
    quiet.cap_calibration();
    assert_eq!(quiet.calibration_stats, None);
    assert_eq!(quiet.unreliable(), []);
}

#[test]
fn a_recording_caps_its_calibration_and_the_document_says_why() {
    let mut rec = Recording::new(100);
    let (r, l) = (
        rec.methods.insert("A", "r", "()V"),
        rec.methods.insert("A", "l", "()V"),
    );
    rec.calibration = Some(BUSY);
    rec.calibration_stats = Some(CalibrationStats {
        batches: 30,
        disturbed: 6,
        descheduled_share: 0.25,
        kept: 24,
        pair_ns: [700.0, 800.0, 900.0],
        calibrated: None,
    });
    let t = rec.thread(1, "main");
    let at = |ns| Stamp::wall(ns).by_probe(20);
    t.enter(r, Stamp::wall(0).by_probe(40));
    t.enter(l, at(10));
    t.exit(l, at(110)).unwrap();
    t.exit(r, at(200)).unwrap();
    let p = rec.finish(Stamp::wall(200));
    // 80 ns measured over 2 pairs: the rest is capped at 60 ns.
    assert_eq!(
        p.calibration,
        Some(Calibration {
            inner_ns: 22.5,
            outer_ns: 37.5
        })
    );
    let doc = serde_json::to_value(p.to_document()).unwrap();
    let c = &doc["compensation"];
    assert_eq!(c["batches"], 30);
    assert_eq!(c["disturbed"], 6);
    assert_eq!(c["kept"], 24);
    assert_eq!(c["pair_ns"], serde_json::json!([700.0, 800.0, 900.0]));
    assert_eq!(
        c["calibrated"],
        serde_json::json!({"inner_ns": 300.0, "outer_ns": 500.0})
    );
    assert_eq!(
        c["unreliable"],
        serde_json::json!([
            "the calibrated rest of a probe pair (800.0 ns) exceeded 1.5 times what the probes \
             measured of themselves (40.0 ns per pair): 60.0 ns subtracted instead"
        ])
    );
    // Read back: the same profile, the same verdict.
    let mut json = Vec::new();
    p.write_json(&mut json).unwrap();
    let back = Profile::from_json_slice(&json).unwrap();
    assert_eq!(back, p);
    assert_eq!(back.unreliable(), p.unreliable());
}
