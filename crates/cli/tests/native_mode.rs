//! The `native` mode end to end on a program of known native and bytecode work
//! (`tests/java/NativeExact.java` with its JNI library `tests/native/native_exact.c`, built with
//! the system C compiler): a native bound with `RegisterNatives` that busy-waits 0.5 ms per
//! call in 4 parts with 3 JNI upcalls in between, each running ~0.1 ms of bytecode, on two
//! threads; a native bound by name that spins 1 ms; 20 sleeps of 10 ms. Calls and upcalls must
//! be exact; native times within 5% of the natives' own clocks around their spinning (the
//! sleeps': of the caller's clock around each sleep); the callbacks' time bytecode. `attach`
//! wraps the classes loaded after it and lists the others.

use std::path::Path;

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
/// Calls of the native that does nothing: one per thread, and `NOPS` more on main.
const NOPS: u64 = 100_000;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

const SLEEP_NS: u64 = 10_000_000;

/// `floor <= measured <= ceiling`.
fn between(what: &str, measured: u64, floor: u64, ceiling: u64) {
    assert!(
        (floor..=ceiling).contains(&measured),
        "{what}: {measured} ns native, expected {floor}..={ceiling} ns"
    );
}

/// `measured` within 5% of `known`, either way: what the agent's probes add is compensated.
fn within_5_percent(what: &str, measured: u64, known: u64) {
    between(what, measured, known * 95 / 100, known * 105 / 100);
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

/// `Class.method` of a `natives` or `not_measured` entry.
fn class_method(n: &Value) -> String {
    format!(
        "{}.{}",
        n["class"].as_str().unwrap(),
        n["method"].as_str().unwrap()
    )
}

/// The program's own measurements
/// (`slept S callbacks C checksum K busy M W spin P pure T U L joined J`).
struct Said {
    slept_ns: u64,
    callbacks_ns: u64,
    main_busy_ns: u64,
    worker_busy_ns: u64,
    spin_ns: u64,
    /// The bytecode thread's loop, elapsed and CPU, and its life by main's clock (main waits
    /// for it in `join`).
    pure_ns: u64,
    pure_cpu_ns: u64,
    pure_life_ns: u64,
    /// Main's wait for the worker at the end.
    joined_ns: u64,
}

fn program_says(stdout: &str) -> Said {
    let f: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(
        (f[0], f[2], f[4], f[6], f[9], f[11], f[15]),
        (
            "slept",
            "callbacks",
            "checksum",
            "busy",
            "spin",
            "pure",
            "joined"
        ),
        "{stdout}"
    );
    let n = |i: usize| f[i].parse::<u64>().unwrap();
    Said {
        slept_ns: n(1),
        callbacks_ns: n(3),
        main_busy_ns: n(7),
        worker_busy_ns: n(8),
        spin_ns: n(10),
        pure_ns: n(12),
        pure_cpu_ns: n(13),
        pure_life_ns: n(14),
        joined_ns: n(16),
    }
}

fn check(doc: &Value, stdout: &str, cpu: bool) {
    let said = program_says(stdout);
    let (slept_ns, callbacks_ns) = (said.slept_ns, said.callbacks_ns);
    assert_eq!(doc["mode"], "native");

    // RegisterNatives-bound, on both threads: calls and upcalls exact, native time the spins
    // alone (within 5% of the native's own clock around them), not the callbacks'.
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
    assert!(callbacks_ns > busy_ns / 10, "callbacks {callbacks_ns} ns");
    within_5_percent("busy", u(&busy["native_ns"]), busy_ns);

    // Bound by name, no upcalls.
    let spin = natives(doc, "NativeExact", "spin")[0];
    assert_eq!((u(&spin["calls"]), u(&spin["upcalls"])), (SPIN_CALLS, 0));
    assert!(said.spin_ns >= SPIN_CALLS * SPIN_NS);
    within_5_percent("spin", u(&spin["native_ns"]), said.spin_ns);

    // A native that does nothing: its calls exact, its time compensated for the wrapper's cost
    // as this JVM measured it when the session started.
    let warm = natives(doc, "NativeExact", "warm")[0];
    assert_eq!(u(&warm["calls"]), NOPS + 2);
    let calibration = &doc["calibration"];
    let inner = calibration["inner_ns"].as_f64().unwrap();
    assert!(
        inner > 0.0 && inner < 1000.0 && calibration["outer_ns"].as_f64() == Some(inner),
        "{calibration}"
    );
    let (measured, compensated) = common::thread(doc, "main")["root"]["children"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["method"] == "warm")
        .fold((0, 0), |(m, c), n| {
            (m + u(&n["measured_self_ns"]), c + u(&n["self_ns"]))
        });
    // Each call's inner share of the wrapper is taken off (and what its probe measured itself).
    assert!(
        compensated == 0
            || compensated as f64 <= measured as f64 - 0.99 * inner * (NOPS + 1) as f64,
        "warm: {compensated} ns compensated of {measured} ns measured, inner {inner} ns"
    );

    // Thread.sleep: native time, as long as the program saw it.
    let sleep = natives(doc, "java.lang.Thread", "sleep");
    let sleep_calls: u64 = sleep.iter().map(|n| u(&n["calls"])).sum();
    let sleep_ns: u64 = sleep.iter().map(|n| u(&n["native_ns"])).sum();
    assert_eq!(sleep_calls, SLEEPS);
    between("sleep", sleep_ns, SLEEPS * SLEEP_NS, slept_ns * 105 / 100);

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
    // Main's natives: its spins, sleeps and the waits in `join` for the two other threads. The
    // JDK's own (loading the libraries, reading class files) add a few ms.
    let main_native =
        said.main_busy_ns + said.spin_ns + slept_ns + said.pure_life_ns + said.joined_ns;
    between(
        "main",
        u(&main["native_ns"]),
        main_native * 95 / 100,
        main_native * 105 / 100 + 50_000_000,
    );
    let worker = common::thread(doc, "worker");
    between(
        "worker",
        u(&worker["native_ns"]),
        said.worker_busy_ns * 95 / 100,
        said.worker_busy_ns * 105 / 100 + 10_000_000,
    );
    assert_eq!(
        u(&doc["native_ns"]),
        doc["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| u(&t["native_ns"]))
            .sum::<u64>()
    );

    // A thread of bytecode but for its two CPU clock reads: its time alive less theirs, at least
    // its loop's, within its life by main's clock; the JVM's threads that only wait are left out.
    let pure = common::thread(doc, "bytecode");
    let reads = &pure["root"]["children"];
    assert_eq!(reads.as_array().map(Vec::len), Some(1), "{pure}");
    assert_eq!(
        (&reads[0]["method"], u(&reads[0]["calls"])),
        (&serde_json::json!("getThreadTotalCpuTime0"), 2),
        "{pure}"
    );
    assert!(
        (said.pure_ns..=said.pure_life_ns).contains(&u(&pure["bytecode_ns"])),
        "bytecode thread: {} ns bytecode, its loop {} ns, its life {} ns",
        pure["bytecode_ns"],
        said.pure_ns,
        said.pure_life_ns
    );
    assert_eq!(
        u(&pure["alive_ns"]),
        u(&pure["bytecode_ns"]) + u(&pure["native_ns"])
    );
    assert!(
        !common::thread_names(doc).contains(&"Signal Dispatcher"),
        "{:?}",
        common::thread_names(doc)
    );
    // Each thread once, with its Java id: the launcher's `DestroyJavaVM` thread too, whose
    // first native runs before its `Thread` has an id.
    let mut ids: Vec<(u64, &str)> = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (u(&t["id"]), t["name"].as_str().unwrap()))
        .collect();
    assert!(ids.iter().all(|&(id, _)| id < 1 << 62), "{ids:?}");
    let threads = ids.len();
    ids.sort_unstable_by_key(|&(_, name)| name);
    ids.dedup_by_key(|&mut (_, name)| name);
    assert_eq!(ids.len(), threads, "{:?}", common::thread_names(doc));
    // Main's bytecode includes what it ran between its native calls: the callbacks' and the
    // loops around them at least.
    assert!(u(&main["bytecode_ns"]) > 0);

    if cpu {
        // The bytecode thread's CPU time covers its loop's and not more than its elapsed time.
        let pure_cpu = u(&pure["bytecode_cpu_ns"]);
        assert!(
            (said.pure_cpu_ns..=u(&pure["bytecode_ns"])).contains(&pure_cpu),
            "bytecode thread: {pure_cpu} ns CPU, its loop {} ns",
            said.pure_cpu_ns
        );
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
    run_with(home, tag, if cpu { &["--cpu"] } else { &[] })
}

/// `ferrofluid run --mode native FLAGS -o out.json -- java -cp DIR NativeExact LIB` on `home`.
fn run_with(home: &Path, tag: &str, more: &[&str]) -> (Value, String) {
    let dir = compile("NativeExact.java", tag);
    let lib = common::jni_library(&dir, "native_exact.c", "nativeexact")
        .display()
        .to_string();
    let out = dir.join("out.json");
    let mut flags = vec!["--mode", "native"];
    flags.extend_from_slice(more);
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

/// With a root, only what runs inside it is recorded: each thread's tree is rooted at the root's
/// calls, the natives they make under them with their upcalls, nothing else (not the spins,
/// sleeps and thread starts outside it); the root's own time is bytecode.
#[test]
fn with_a_root_only_the_natives_inside_it_are_recorded() {
    let (doc, stdout) = run_with(
        Path::new(JDK17_HOME),
        "native-root",
        &["--root", "NativeExact::timedBusy"],
    );
    let said = program_says(&stdout);
    let names: Vec<_> = doc["natives"]
        .as_array()
        .unwrap()
        .iter()
        .map(class_method)
        .collect();
    assert_eq!(names, ["NativeExact.busy"], "{doc}");
    let busy = &doc["natives"][0];
    let calls = MAIN_BUSY_CALLS + WORKER_BUSY_CALLS;
    assert_eq!(
        (u(&busy["calls"]), u(&busy["upcalls"]), u(&busy["threads"])),
        (calls, calls * BUSY_UPCALLS, 2)
    );
    within_5_percent(
        "busy inside the root",
        u(&busy["native_ns"]),
        said.main_busy_ns + said.worker_busy_ns,
    );
    let mut threads = common::thread_names(&doc);
    threads.sort_unstable();
    assert_eq!(threads, ["main", "worker"]);
    for (name, root_calls) in [("main", MAIN_BUSY_CALLS), ("worker", WORKER_BUSY_CALLS)] {
        let t = common::thread(&doc, name);
        assert_eq!(t.get("alive_ns"), None, "{t}");
        let roots = t["root"]["children"].as_array().unwrap();
        assert_eq!(roots.len(), 1, "{t}");
        let root = &roots[0];
        assert_eq!(
            (&root["method"], u(&root["calls"])),
            (&Value::from("timedBusy"), root_calls)
        );
        let inside = root["children"].as_array().unwrap();
        assert_eq!(inside.len(), 1, "{root}");
        assert_eq!(
            (&inside[0]["method"], u(&inside[0]["calls"])),
            (&Value::from("busy"), root_calls)
        );
        let callbacks = &inside[0]["children"];
        assert_eq!(callbacks.as_array().map(Vec::len), Some(1), "{root}");
        assert_eq!(
            (&callbacks[0]["method"], u(&callbacks[0]["calls"])),
            (&Value::from("callback"), root_calls * BUSY_UPCALLS)
        );
        // The thread's time is its root's: native inside `busy`, the rest bytecode.
        assert_eq!(
            u(&t["bytecode_ns"]) + u(&t["native_ns"]),
            u(&t["root"]["total_ns"])
        );
        assert!(u(&t["bytecode_ns"]) >= u(&callbacks[0]["total_ns"]), "{t}");
    }
}

/// `attach --mode native` to a JVM started without the agent: the classes loaded after the
/// attach get wrappers (here `NativeExact`, which loads only once the program is told to go),
/// their calls and upcalls exact and their times within 5% as from the JVM's start; the natives of the classes loaded
/// before (`Thread.sleep`, `Object.wait`) are listed as not measured, `loaded-before-agent`, and
/// the report says so.
#[test]
fn an_attach_wraps_the_classes_loaded_after_it_and_lists_the_others() {
    let dir = compile("NativeExact.java", "native-attach");
    ferrofluid_testkit::javac(
        Path::new(JDK17_HOME),
        &["--release", "17", "-cp", dir.to_str().unwrap()],
        &dir,
        [common::source_path("NativeLate.java")],
    );
    let lib = common::jni_library(&dir, "native_exact.c", "nativeexact")
        .display()
        .to_string();
    let doc = common::attach_while_running(
        Path::new(JDK17_HOME),
        &dir,
        &["NativeLate", &lib],
        &["--mode", "native"],
    );
    let said = program_says(&std::fs::read_to_string(dir.join("go.out")).unwrap());
    assert_eq!(doc["mode"], "native");
    let calls = |method: &str| {
        natives(&doc, "NativeExact", method)
            .first()
            .map(|n| u(&n["calls"]))
    };
    let busy = natives(&doc, "NativeExact", "busy")[0];
    assert_eq!(
        (u(&busy["calls"]), u(&busy["upcalls"])),
        (
            MAIN_BUSY_CALLS + WORKER_BUSY_CALLS,
            (MAIN_BUSY_CALLS + WORKER_BUSY_CALLS) * BUSY_UPCALLS
        )
    );
    within_5_percent(
        "busy after an attach",
        u(&busy["native_ns"]),
        said.main_busy_ns + said.worker_busy_ns,
    );
    assert_eq!(calls("spin"), Some(SPIN_CALLS));
    within_5_percent(
        "spin after an attach",
        u(&natives(&doc, "NativeExact", "spin")[0]["native_ns"]),
        said.spin_ns,
    );
    assert_eq!(calls("warm"), Some(NOPS + 2));
    assert!(
        natives(&doc, "java.lang.Thread", "sleep").is_empty(),
        "{}",
        doc["natives"]
    );
    let before: Vec<String> = doc["not_measured"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["reason"] == "loaded-before-agent")
        .map(class_method)
        .collect();
    assert!(
        before
            .iter()
            .any(|m| m.starts_with("java.lang.Thread.sleep"))
            && before.contains(&"java.lang.Object.wait".to_string()),
        "{before:?}"
    );
    assert!(
        !before.iter().any(|m| m.starts_with("NativeExact.")),
        "{before:?}"
    );
    let text = common::report_stdout(&dir.join("out.json"), &[]);
    assert!(
        text.contains(&format!(
            "! attached to a running JVM: no wrapper for {} natives of classes loaded before the \
             agent, whose time is their callers' bytecode (start the JVM with the agent to \
             measure them)\n",
            before.len()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "{} loaded before the agent (a wrapper can be added only as a class first loads)",
            before.len()
        )),
        "{text}"
    );
}
