//! Thread CPU time (`ferrofluid run --cpu`) end to end in a real JVM: a method that spins has
//! CPU time close to its wall time, one that sleeps almost none, the counts stay exact, the
//! text report shows it, and without `--cpu` no CPU time appears anywhere.

use std::path::Path;

use serde_json::Value;

mod common;
use common::{child, compile, read_profile_json, report, run_java, thread, u};
use ferrofluid_testkit::cpu_fits_wall;

/// The profile of `Cpu` run with `flags`, and the program's own (CPU, wall) ns of `spin()`.
fn profile(dir: &Path, flags: &[&str], name: &str) -> (Value, (u64, u64)) {
    let out = dir.join(name);
    let mut all = vec!["--root", "Cpu::root", "--include", "Cpu"];
    all.extend_from_slice(flags);
    let output = run_java(&all, &out, dir, "Cpu");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(
        (words[0], words[1], words[3]),
        ("spin", "cpu", "wall"),
        "{stdout}"
    );
    let spin = (words[2].parse().unwrap(), words[4].parse().unwrap());
    (read_profile_json(&out), spin)
}

fn root(doc: &Value) -> &Value {
    child(&thread(doc, "main")["root"], "root")
}

#[test]
fn cpu_time_of_spinning_and_sleeping() {
    let dir = compile("Cpu.java", "cpu");
    let (doc, (java_cpu, java_wall)) = profile(&dir, &["--cpu"], "cpu.json");
    let root = root(&doc);
    let (spin, sleep, tiny) = (
        child(root, "spin"),
        child(root, "sleep"),
        child(root, "tiny"),
    );
    assert_eq!(
        (u(&spin["calls"]), u(&sleep["calls"]), u(&tiny["calls"])),
        (1, 1, 10_000)
    );
    assert!(
        doc["cpu_calibration"]["inner_ns"].as_f64().unwrap() > 0.0,
        "{doc}"
    );
    let (spin_wall, spin_cpu) = (u(&spin["total_ns"]), u(&spin["cpu_ns"]));
    let (sleep_wall, sleep_cpu) = (u(&sleep["total_ns"]), u(&sleep["cpu_ns"]));
    assert!(
        spin_wall >= 50_000_000 && sleep_wall >= 50_000_000,
        "{spin} {sleep}"
    );
    // spin() ran until its thread had 50 ms of CPU time.
    assert!(spin_cpu >= 48_000_000, "{spin}");
    assert!(
        cpu_fits_wall(spin_cpu, u(&spin["measured_total_ns"])),
        "{spin}"
    );
    // At least 0.8 of its wall time, or of the share of it the program itself measured on a
    // CPU (a busy machine takes the CPU away from a spinning thread).
    let share = java_cpu as f64 / java_wall as f64;
    assert!(
        spin_cpu as f64 >= 0.8 * share.min(1.0) * spin_wall as f64,
        "spin {spin_cpu} of {spin_wall} ns on a CPU; the program measured {java_cpu} of {java_wall}"
    );
    assert!(sleep_cpu < 10_000_000, "{sleep}");
    // Compensated: the 10,000 calls' clock reads (µs each) are not charged to tiny().
    assert!(u(&tiny["cpu_ns"]) <= u(&tiny["measured_cpu_ns"]), "{tiny}");
    // Most of it subtracted: under 5 ms left, or (the calibration landed on a fast level of the
    // clock read, docs/decisions/0004-calibration.md) under half of the measured 10-20 ms. Failed
    // once in about ten runs with the 5 ms bound alone.
    let (cpu, measured_cpu) = (u(&tiny["cpu_ns"]), u(&tiny["measured_cpu_ns"]));
    assert!(cpu < 5_000_000 || cpu * 2 < measured_cpu, "{tiny}");
    // What is left of tiny's CPU time is mostly probe cost, and marked so; the 50 ms spin's is
    // not (its 4 clock reads are µs).
    assert_eq!(tiny["cpu_self_uncertain"], true, "{tiny}");
    assert!(spin.get("cpu_self_uncertain").is_none(), "{spin}");
    let thread_cpu = thread(&doc, "main")["cpu_ns"].as_u64().unwrap();
    assert!(thread_cpu >= spin_cpu + sleep_cpu, "{thread_cpu}");

    // The text report shows CPU times per thread, in the hot spots and in the call tree.
    let text = report(&dir.join("cpu.json"), &dir.join("cpu.txt"), &[]);
    assert!(text.contains("thread CPU"), "{text}");
    assert!(text.contains("CPU ms"), "{text}");

    // Without --cpu: no CPU time anywhere, same counts.
    let (doc, _) = profile(&dir, &[], "wall.json");
    let json = doc.to_string();
    assert!(!json.contains("cpu_"), "{json}");
    let root = self::root(&doc);
    assert_eq!(u(&child(root, "tiny")["calls"]), 10_000);
    assert!(u(&child(root, "sleep")["total_ns"]) >= 50_000_000);
}
