//! `--cpu` on many more virtual threads than carriers, each calling a short CPU-bound root
//! between parks: the root's CPU time, compensated as its wall time is, does not exceed its
//! wall time. Each call begins a new recording, for which the agent gives the virtual thread a
//! ring (a virtual thread parked outside every root holds none): that work is the agent's, and
//! is in neither the method's wall time (it is measured and subtracted with the probe) nor its
//! CPU time.

use serde_json::Value;

mod common;
use common::{child, compile, run_java_on};
use ferrofluid_testkit::{jdk21_or_skip, read_profile_json};

fn u(node: &Value, key: &str) -> u64 {
    node[key].as_u64().unwrap_or(0)
}

#[test]
fn a_short_root_in_virtual_threads_uses_no_more_cpu_than_wall_time() {
    let Some(jdk) = jdk21_or_skip() else {
        return;
    };
    let dir = compile("VtCompute.java", "vthread-cpu-root");
    let out = dir.join("out.json");
    let output = run_java_on(
        &jdk,
        &[
            "--root",
            "VtCompute::compute",
            "--include",
            "VtCompute",
            "--cpu",
        ],
        &out,
        &dir,
        "VtCompute",
        &[],
    );
    assert!(String::from_utf8_lossy(&output.stdout).ends_with("done\n"));
    let doc = read_profile_json(&out);
    let _ = std::fs::remove_dir_all(&dir);
    let (mut calls, mut wall, mut cpu, mut measured_wall, mut measured_cpu) = (0, 0, 0, 0, 0);
    for t in doc["threads"].as_array().unwrap() {
        if t["virtual"] != true {
            continue;
        }
        let compute = child(&t["root"], "compute");
        calls += u(compute, "calls");
        wall += u(compute, "self_ns");
        cpu += u(compute, "cpu_self_ns");
        measured_wall += u(compute, "measured_self_ns");
        measured_cpu += u(compute, "measured_cpu_ns");
    }
    // Exact unless events were dropped (each loses at most one call).
    let dropped = doc["dropped_events"].as_u64().unwrap_or(0);
    assert!(
        calls <= 2_000 * 20 && calls + dropped >= 2_000 * 20,
        "{calls} calls, {dropped} events dropped"
    );
    let ms = |ns: u64| ns as f64 / 1e6;
    let said = format!(
        "compute: self {:.1} ms, self CPU {:.1} ms (measured {:.1} and {:.1} ms)",
        ms(wall),
        ms(cpu),
        ms(measured_wall),
        ms(measured_cpu)
    );
    eprintln!("{said}");
    assert!(measured_cpu <= measured_wall, "{said}");
    // On a busy machine the wall time grows with time off the CPU; never the other way round.
    assert!(cpu <= wall + wall / 20, "{said}");
}
