//! The `native` mode end to end on a program of known native and bytecode work
//! (`tests/java/NativeExact.java` with its JNI library `tests/native/native_exact.c`, built with
//! the system C compiler): a native bound with `RegisterNatives` that busy-waits 0.5 ms per
//! call in 4 parts with 3 JNI upcalls in between, each running ~0.1 ms of bytecode, on two
//! threads; a native bound by name that spins 1 ms; 20 sleeps of 10 ms. Calls and upcalls must
//! be exact, native times within 10% of what the program measured itself (its clock around each
//! native call less the JNI calls inside it: a loaded machine stretches both alike), the
//! callbacks' time bytecode. `attach` is
//! refused in one line.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::compile;
use ferrofluid_testkit::{read_profile_json, JDK17_HOME};

const BUSY_NS: u64 = 500_000;
const BUSY_UPCALLS: u64 = 3;
const MAIN_BUSY_CALLS: u64 = 200;
const WORKER_BUSY_CALLS: u64 = 50;
const SPIN_NS: u64 = 1_000_000;
const SPIN_CALLS: u64 = 100;
const SLEEPS: u64 = 20;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// `dir/libnativeexact.so`, built from `tests/native/native_exact.c` with `cc`.
fn native_library(dir: &Path) -> PathBuf {
    let out = dir.join("libnativeexact.so");
    let include = Path::new(JDK17_HOME).join("include");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&out)
        .arg(format!("-I{}", include.display()))
        .arg(format!("-I{}", include.join("linux").display()))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native/native_exact.c"))
        .status()
        .expect("a C compiler `cc` on PATH");
    assert!(status.success(), "cc native_exact.c");
    out
}

/// `|measured - expected| <= 10%` of expected: the native times are not yet compensated for
/// the probes' own cost, which runs them 5-9% over on a busy machine.
fn within_5_percent(what: &str, measured: u64, expected: u64) {
    let diff = measured.abs_diff(expected) as f64;
    assert!(
        diff <= 0.10 * expected as f64,
        "{what}: {measured} ns, expected {expected} ns ± 10%"
    );
}

/// The `natives` entry of `class.method`, or the sum of those whose name starts with `method`
/// (`Thread.sleep` is `sleep` on JDK 17, `sleep0` under a Java `sleep` on JDK 21+).
fn natives<'a>(doc: &'a Value, class: &str, method: &str) -> Vec<&'a Value> {
    doc["natives"]
        .as_array()
        .expect("a native profile has `natives`")
        .iter()
        .filter(|n| n["class"] == class && n["method"].as_str().unwrap().starts_with(method))
        .collect()
}

/// The program's own measurements (`slept S callbacks C checksum K busy M W spin P`).
struct Said {
    slept_ns: u64,
    callbacks_ns: u64,
    main_busy_ns: u64,
    worker_busy_ns: u64,
    spin_ns: u64,
}

fn program_says(stdout: &str) -> Said {
    let f: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(
        (f[0], f[2], f[4], f[6], f[9]),
        ("slept", "callbacks", "checksum", "busy", "spin"),
        "{stdout}"
    );
    let n = |i: usize| f[i].parse::<u64>().unwrap();
    Said {
        slept_ns: n(1),
        callbacks_ns: n(3),
        main_busy_ns: n(7),
        worker_busy_ns: n(8),
        spin_ns: n(10),
    }
}

fn check(doc: &Value, stdout: &str, cpu: bool) {
    let said = program_says(stdout);
    let (slept_ns, callbacks_ns) = (said.slept_ns, said.callbacks_ns);
    assert_eq!(doc["mode"], "native");

    // RegisterNatives-bound, on both threads: calls and upcalls exact, native time the spins
    // alone, not the callbacks'.
    let busy = natives(doc, "NativeExact", "busy");
    assert_eq!(busy.len(), 1);
    let busy = busy[0];
    let calls = MAIN_BUSY_CALLS + WORKER_BUSY_CALLS;
    assert_eq!(u(&busy["calls"]), calls);
    assert_eq!(u(&busy["upcalls"]), calls * BUSY_UPCALLS);
    assert_eq!(u(&busy["threads"]), 2);
    assert_eq!(
        busy["upcall_targets"],
        serde_json::json!([{"class": "NativeExact", "method": "callback",
                            "descriptor": "(I)I", "calls": calls * BUSY_UPCALLS}])
    );
    let busy_ns = said.main_busy_ns + said.worker_busy_ns;
    assert!(busy_ns >= calls * BUSY_NS, "busy spun {busy_ns} ns");
    // The callbacks are long enough that counting them as native would break the 5%.
    assert!(callbacks_ns > busy_ns / 10, "callbacks {callbacks_ns} ns");
    within_5_percent("busy", u(&busy["native_ns"]), busy_ns);

    // Bound by name, no upcalls.
    let spin = natives(doc, "NativeExact", "spin")[0];
    assert_eq!((u(&spin["calls"]), u(&spin["upcalls"])), (SPIN_CALLS, 0));
    assert!(said.spin_ns >= SPIN_CALLS * SPIN_NS);
    within_5_percent("spin", u(&spin["native_ns"]), said.spin_ns);

    // Thread.sleep: native time, as long as the program saw it.
    let sleep = natives(doc, "java.lang.Thread", "sleep");
    let sleep_calls: u64 = sleep.iter().map(|n| u(&n["calls"])).sum();
    let sleep_ns: u64 = sleep.iter().map(|n| u(&n["native_ns"])).sum();
    assert_eq!(sleep_calls, SLEEPS);
    within_5_percent("sleep", sleep_ns, slept_ns);

    // The callbacks' time is bytecode, under the native that called them.
    let bytecode: u64 = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| u(&t["bytecode_ns"]))
        .sum();
    assert!(
        bytecode >= callbacks_ns * 95 / 100,
        "{bytecode} < {callbacks_ns}"
    );
    let main = common::thread(doc, "main");
    let main_native = said.main_busy_ns + said.spin_ns + slept_ns;
    let got = u(&main["native_ns"]);
    // At least the known work; at most 5% more and the few ms of the JDK's own natives
    // (loading the library, reading class files).
    assert!(
        got * 100 >= main_native * 95 && got <= main_native * 105 / 100 + 50_000_000,
        "main: {got} ns native, expected {main_native}"
    );
    let worker = common::thread(doc, "worker");
    within_5_percent("worker", u(&worker["native_ns"]), said.worker_busy_ns);
    assert_eq!(
        u(&doc["native_ns"]),
        doc["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| u(&t["native_ns"]))
            .sum::<u64>()
    );

    if cpu {
        // Spinning is on the CPU, as much as the machine's load lets it; sleeping is not.
        let (busy_cpu, busy_wall) = (u(&busy["native_cpu_ns"]), u(&busy["native_ns"]));
        assert!(
            busy_cpu > 0 && busy_cpu <= busy_wall * 105 / 100,
            "busy CPU {busy_cpu} ns, wall {busy_wall} ns"
        );
        let sleep_cpu: u64 = sleep.iter().map(|n| u(&n["native_cpu_ns"])).sum();
        assert!(sleep_cpu < sleep_ns / 20, "sleep CPU {sleep_cpu} ns");
    }
}

/// `ferrofluid run --mode native [--cpu] -o out.json -- java -cp DIR NativeExact LIB` on `home`.
fn run(home: &Path, tag: &str, cpu: bool) -> (Value, String) {
    let dir = compile("NativeExact.java", tag);
    let lib = native_library(&dir).display().to_string();
    let out = dir.join("out.json");
    let mut flags = vec!["--mode", "native"];
    if cpu {
        flags.push("--cpu");
    }
    let output = common::run_java_on(home, &flags, &out, &dir, "NativeExact", &[&lib]);
    (
        read_profile_json(&out),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn native_time_calls_and_upcalls_are_exact() {
    let (doc, stdout) = run(Path::new(JDK17_HOME), "native-exact", false);
    check(&doc, &stdout, false);
    let (doc, stdout) = run(Path::new(JDK17_HOME), "native-exact-cpu", true);
    check(&doc, &stdout, true);
    if let Some(home) = ferrofluid_testkit::jdk21_or_skip() {
        let (doc, stdout) = run(&home, "native-exact-21", false);
        check(&doc, &stdout, false);
    }
}

/// `attach --mode native` is refused in one line, before any JVM is touched: wrappers can only
/// be added as classes first load.
#[test]
fn attach_is_refused_in_one_line() {
    let out = common::ferrofluid()
        .args(["attach", "1", "--mode", "native", "-o", "/dev/null"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "ferrofluid: error: mode native wraps native methods as their classes first load, which \
         only an agent loaded with the JVM can do: start the JVM with \
         -agentpath:<libferrofluid_agent.so>=mode=native,file=F (`ferrofluid run --mode native \
         -o F -- java ...`)\n"
    );
}
