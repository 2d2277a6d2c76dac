//! The `sample` mode end to end in a real JVM (`tests/java/Sampled.java`): two hot methods of
//! 3:1 cost sampled 3:1; a counted loop without a safepoint poll charged to its own method; the
//! hybrid (`--root`): no sample outside the root, the root's calls exact; the document's
//! sampling summary and frame types; the wall clock's sleeping and blocked threads shown waiting
//! (`tests/java/Waits.java`); attach and detach; a class loaded while sampling instrumented by
//! the next session (`tests/java/LoadedLate.java`); JDK 25 and its virtual threads.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

mod common;
use common::{agent, attach_profiling, call_paths, compile, ferrofluid, java as java_on, scratch};
use ferrofluid_testkit::{javac, read_profile_json, Program, JDK17_HOME};

/// `ferrofluid run --mode sample FLAGS -o OUT -- java JAVA -cp DIR Sampled ARGS`.
fn run(dir: &Path, flags: &[&str], java: &[&str], args: &[&str]) -> Value {
    run_main(dir, flags, java, "Sampled", args).0
}

/// [`run`] of class `main`; also its stdout.
fn run_main(
    dir: &Path,
    flags: &[&str],
    java: &[&str],
    main: &str,
    args: &[&str],
) -> (Value, String) {
    run_on(Path::new(JDK17_HOME), dir, flags, java, main, args)
}

/// [`run_main`] on the JDK at `home`.
fn run_on(
    home: &Path,
    dir: &Path,
    flags: &[&str],
    java: &[&str],
    main: &str,
    args: &[&str],
) -> (Value, String) {
    let out = dir.join(format!("{main}.json"));
    let output: Output = ferrofluid()
        .arg("run")
        .arg("--agent")
        .arg(agent())
        .args(["--mode", "sample"])
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg(home.join("bin/java"))
        .args(java)
        .arg("-cp")
        .arg(dir)
        .arg(main)
        .args(args)
        .output()
        .expect("ferrofluid runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (
        read_profile_json(&out),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Own samples per `Class.method` over every thread's tree.
fn self_samples(doc: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for t in doc["threads"].as_array().unwrap() {
        let mut stack = vec![&t["root"]];
        while let Some(n) = stack.pop() {
            let name = format!(
                "{}.{}",
                n["class"].as_str().unwrap(),
                n["method"].as_str().unwrap()
            );
            *out.entry(name).or_default() += u(&n["self_samples"]);
            stack.extend(n["children"].as_array().into_iter().flatten());
        }
    }
    out
}

/// Over the nodes at or below any frame of `class.method` (every thread): own samples, and of
/// them those that ran and those that waited (wall clock).
fn below(doc: &Value, class: &str, method: &str) -> (u64, u64, u64) {
    let (mut own, mut running, mut waiting) = (0, 0, 0);
    for t in doc["threads"].as_array().unwrap() {
        let mut stack = vec![(&t["root"], false)];
        while let Some((n, inside)) = stack.pop() {
            let inside = inside || (n["class"] == class && n["method"] == method);
            if inside {
                own += u(&n["self_samples"]);
                running += u(&n["self_running"]);
                waiting += u(&n["self_waiting"]);
            }
            for c in n["children"].as_array().into_iter().flatten() {
                stack.push((c, inside));
            }
        }
    }
    (own, running, waiting)
}

fn check_document(doc: &Value) {
    check_document_at(doc, "cpu", 1_000_000);
}

/// [`check_document`] of a profile sampled on `clock` every `interval_ns`.
fn check_document_at(doc: &Value, clock: &str, interval_ns: u64) {
    assert_eq!(doc["mode"], "sample");
    // A hybrid's roots count their calls first.
    let metrics = doc["metrics"].as_array().unwrap();
    let sampled = if doc["sampling"]["roots"] == true {
        assert_eq!(
            metrics[0],
            serde_json::json!({"name": "calls", "unit": "count"})
        );
        &metrics[1..]
    } else {
        &metrics[..]
    };
    assert_eq!(
        sampled,
        [
            serde_json::json!({"name": "samples", "unit": "count"}),
            serde_json::json!({"name": "estimated_time", "unit": "nanoseconds"})
        ]
    );
    let s = &doc["sampling"];
    assert_eq!(s["clock"], clock);
    assert_eq!(s["interval_ns"], interval_ns);
    // The samples in the trees are the summary's.
    let in_trees: u64 = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| u(&t["root"]["samples"]))
        .sum();
    assert_eq!(in_trees, u(&s["samples"]));
    let without: u64 = s["without_stack"]
        .as_object()
        .map_or(0, |m| m.values().map(u).sum());
    assert_eq!(u(&s["walked"]) + without, u(&s["samples"]));
}

/// Two methods of the same loop, one run three times as long: their own samples are 3:1
/// within 10%, and the hot frames are compiled code.
#[test]
fn two_hot_methods_of_three_to_one_cost() {
    let dir = compile("Sampled.java", "sample-ratio");
    let doc = run(&dir, &["--interval", "1ms"], &[], &["ratio", "150"]);
    check_document(&doc);
    let own = self_samples(&doc);
    let (three, one) = (own["Sampled.threeParts"], own["Sampled.onePart"]);
    assert!(three + one >= 1000, "too few samples: {own:?}");
    let ratio = three as f64 / one as f64;
    assert!(
        (2.7..=3.3).contains(&ratio),
        "3:1 expected, got {three}:{one}"
    );
    assert_eq!(doc["threads"].as_array().unwrap().len(), 1, "merged");
    assert_eq!(doc["threads"][0]["name"], "all threads");
    // Its own samples by frame type: the loops ran compiled (or inlined) nearly always.
    let mut compiled = 0;
    let mut stack = vec![&doc["threads"][0]["root"]];
    while let Some(n) = stack.pop() {
        if n["method"] == "threeParts" {
            compiled += u(&n["self_compiled"]) + u(&n["self_inlined"]);
        }
        stack.extend(n["children"].as_array().into_iter().flatten());
    }
    assert!(
        compiled as f64 >= 0.9 * three as f64,
        "{compiled} of {three}"
    );
}

/// A hot counted loop without a safepoint poll (the Parallel collector asks for none in counted
/// loops) is charged to its own method, not to the loop around it that polls.
#[test]
fn a_loop_without_safepoint_poll_is_charged_to_its_own_method() {
    let dir = compile("Sampled.java", "sample-counted");
    let doc = run(
        &dir,
        &["--interval", "1ms", "--threads"],
        &["-XX:+UseParallelGC"],
        &["counted", "20000"],
    );
    check_document(&doc);
    let own = self_samples(&doc);
    let (sum, counted) = (own["Sampled.sum"], own["Sampled.counted"]);
    assert!(sum >= 500, "too few samples: {own:?}");
    assert!(
        sum as f64 >= 0.95 * (sum + counted) as f64,
        "sum {sum}, counted {counted}"
    );
    let main = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "main")
        .expect("a tree per thread, main's among them");
    assert!(u(&main["id"]) > 0);
}

/// With a root: the samples are those inside its invocations, their stacks start at it, and its
/// calls are counted exactly; the work outside it is in no tree.
#[test]
fn the_hybrid_samples_only_inside_the_root_and_counts_its_calls() {
    let dir = compile("Sampled.java", "sample-hybrid");
    let doc = run(
        &dir,
        &["--interval", "1ms", "--root", "Sampled::root"],
        &[],
        &["hybrid", "40"],
    );
    assert_eq!(doc["sampling"]["roots"], true);
    check_document(&doc);
    assert!(u(&doc["sampling"]["outside_roots"]) > 0);
    let root = &doc["threads"][0]["root"];
    let children = root["children"].as_array().unwrap();
    // Samples inside the root whose stack the JVM could not walk are `[reason]` nodes.
    let (reasons, methods): (Vec<&Value>, Vec<&Value>) = children
        .iter()
        .partition(|c| c["class"].as_str().unwrap().starts_with('['));
    let names: Vec<&str> = methods
        .iter()
        .map(|c| c["method"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["root"], "every walked sample starts at the root");
    for r in &reasons {
        assert_eq!(r["method"], "");
        assert_eq!(r["children"].as_array().map(Vec::len), Some(0));
    }
    let r = methods[0];
    assert_eq!(u(&r["calls"]), 40);
    let own = self_samples(&doc);
    assert!(!own.contains_key("Sampled.outside"), "{own:?}");
    assert!(!own.contains_key("Sampled.main"), "{own:?}");
    assert!(u(&r["samples"]) >= 100, "too few samples: {own:?}");
    // The text report weighs by samples.
    let text = Command::new(env!("CARGO_BIN_EXE_ferrofluid"))
        .arg("report")
        .arg(dir.join("Sampled.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("ferrofluid sample profile"), "{text}");
    assert!(text.contains("Sampled.threeParts"), "{text}");
}

/// Crash containment: a minute (`FERROFLUID_STRESS_SECS`) of sampling at 1 kHz a program that
/// loads and unloads classes all the time (each compiled by the JIT and thrown away), throws and
/// recurses on several threads: the JVM finishes, and every sample is in the profile with a
/// stack or a counted reason.
#[test]
fn sampling_survives_class_churn_for_a_minute() {
    let seconds: u64 = std::env::var("FERROFLUID_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    // The churn program of the jvmtiprof crate's own crash-containment test.
    let java = Path::new(env!("CARGO_MANIFEST_DIR")).join("../jvmtiprof/tests/java");
    let dir = scratch("sample-churn");
    javac(
        Path::new(JDK17_HOME),
        &["--release", "17"],
        &dir,
        [java.join("Churn.java")],
    );
    // Beside the class path, so that only Churn's own loaders define it.
    javac(
        Path::new(JDK17_HOME),
        &["--release", "17"],
        &dir.join("payload"),
        [java.join("payload/Payload.java")],
    );
    let payload = dir.join("payload/Payload.class");
    let (doc, stdout) = run_main(
        &dir,
        &["--interval", "1ms"],
        &["-Xmx256m"],
        "Churn",
        &[payload.to_str().unwrap(), &seconds.to_string()],
    );
    let loaded: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("loaded "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no 'loaded' line:\n{stdout}"));
    let s = &doc["sampling"];
    eprintln!("loaded {loaded} classes; sampling {s}");
    assert!(loaded > 50, "the program did little: {loaded}");
    assert!(u(&s["samples"]) > 1000, "{s}");
    assert!(s.get("lost").is_none(), "{s}");
    // The JIT compiled all the while: its compiler threads' samples are named as such.
    assert!(u(&s["without_stack"]["jit_compiler"]) > 0, "{s}");
    let in_trees: u64 = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| u(&t["root"]["samples"]))
        .sum();
    assert_eq!(in_trees, u(&s["samples"]));
}

/// `Waits` started on JDK 17 without the agent, its three threads in place.
fn start_waits(dir: &Path) -> Program {
    Program::started(
        java_on(Path::new(JDK17_HOME))
            .arg("-cp")
            .arg(dir)
            .arg("Waits")
            .arg(dir.join("stop"))
            .arg("60000"),
        "ready",
    )
}

/// One `ferrofluid attach PID --mode sample FLAGS --duration 2s -o DIR/NAME.json` session,
/// which must succeed; its profile.
fn attach_session(pid: u32, dir: &Path, name: &str, flags: &[&str]) -> Value {
    let out = dir.join(format!("{name}.json"));
    let mut args = vec!["--mode", "sample"];
    args.extend(flags);
    args.extend(["--duration", "2s", "-o", out.to_str().unwrap()]);
    let (mut cli, said, mut stderr) = attach_profiling(pid, &args);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let status = cli.wait().unwrap();
    assert!(status.success(), "{name}: {said:?} {rest}");
    read_profile_json(&out)
}

/// Lets `Waits` end, and checks that it ended well.
fn stop_waits(dir: &Path, mut java: Program) {
    std::fs::write(dir.join("stop"), "").unwrap();
    assert_eq!(java.rest(), "done\n");
    java.succeeds();
}

/// The wall clock samples every thread, running or not, and says which samples waited: the
/// sleeping and the blocked thread's samples (attached once both wait) all waited, the spinning
/// thread's mostly ran.
#[test]
fn the_wall_clock_shows_sleeping_and_blocked_threads_waiting() {
    let dir = compile("Waits.java", "sample-wall");
    let java = start_waits(&dir);
    let wall = attach_session(
        java.pid(),
        &dir,
        "wall",
        &["--wall", "--interval", "10ms", "--threads"],
    );
    stop_waits(&dir, java);
    check_document_at(&wall, "wall", 10_000_000);
    assert_eq!(wall["sampling"]["source"], "wall_thread");
    for method in ["sleeper", "blocked"] {
        let (own, running, waiting) = below(&wall, "Waits", method);
        // ~200 samples in 2 s; fewer on a busy machine, never none.
        assert!(own >= 20, "{method}: {own} samples");
        assert_eq!(running + waiting, own, "{method}");
        // Nearly all: each signal wakes the thread from its futex, and a thread blocked on a
        // monitor retries it (spinning a moment) before it parks again; a sample that lands
        // then finds it running.
        assert!(
            waiting as f64 >= 0.9 * own as f64,
            "{method}: {running} running, {waiting} waiting"
        );
    }
    let (own, running, waiting) = below(&wall, "Waits", "spin");
    assert!(own >= 20, "spin: {own} samples");
    assert_eq!(running + waiting, own);
    // A thread that spins waits only while the machine gives it no core.
    assert!(
        running > waiting,
        "spin: {running} running, {waiting} waiting"
    );
    // Each thread's own tree; the sleeper's innermost frame is Thread.sleep, the blocked
    // thread's its own method (at the monitor it waits for).
    let sleeper = &ferrofluid_testkit::thread(&wall, "sleeper")["root"];
    let (own, _, _) = below(&wall, "Waits", "sleeper");
    let in_sleep: u64 = {
        let mut n = 0;
        let mut stack = vec![sleeper];
        while let Some(node) = stack.pop() {
            if node["class"] == "java.lang.Thread" && node["method"] == "sleep" {
                n += u(&node["self_samples"]);
            }
            stack.extend(node["children"].as_array().into_iter().flatten());
        }
        n
    };
    assert_eq!(in_sleep, own);
    assert_eq!(
        self_samples(&wall)["Waits.blocked"],
        below(&wall, "Waits", "blocked").0
    );
}

/// `jcmd PID Thread.print` on JDK 17: the JVM's threads.
fn thread_dump(pid: u32) -> String {
    let out = Command::new(Path::new(JDK17_HOME).join("bin/jcmd"))
        .arg(pid.to_string())
        .arg("Thread.print")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `ferrofluid attach PID --mode sample` to a JVM started without the agent, twice: each
/// session's profile has the spinning thread's CPU samples and none of the waiting threads';
/// after each detach the sampler's thread is gone and the JVM keeps running; at the end it exits
/// well.
#[test]
fn attach_samples_detaches_and_attaches_again() {
    let dir = compile("Waits.java", "sample-attach");
    let java = start_waits(&dir);
    let pid = java.pid();
    for session in 1..=2 {
        let doc = attach_session(
            pid,
            &dir,
            &format!("attach-{session}"),
            &["--interval", "1ms", "--threads"],
        );
        check_document(&doc);
        let (own, running, waiting) = below(&doc, "Waits", "spin");
        assert!(own >= 20, "session {session}: spin {own} samples");
        // CPU samples carry no thread state: they all ran.
        assert_eq!((running, waiting), (0, 0));
        assert_eq!(below(&doc, "Waits", "sleeper"), (0, 0, 0));
        assert_eq!(below(&doc, "Waits", "blocked"), (0, 0, 0));
        let names: Vec<&str> = doc["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"spinner"), "{names:?}");
        assert!(!names.contains(&"sleeper"), "{names:?}");
        assert!(!names.contains(&"blocked"), "{names:?}");
        // Detached: the sampler's drain thread has ended, the program runs on.
        let mut dump = thread_dump(pid);
        for _ in 0..50 {
            if !dump.contains("\"ferrofluid-sampler\"") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            dump = thread_dump(pid);
        }
        assert!(!dump.contains("\"ferrofluid-sampler\""), "{dump}");
        assert!(dump.contains("\"spinner\""), "{dump}");
    }
    stop_waits(&dir, java);
}

/// A sampling session changes no class, so the agent turns the class file load hook off while
/// it runs (HotSpot would read every shared class's bytes to post it): a class loaded meanwhile
/// is unknown to the agent, and the next session, a CPU profile rooted in it, retransforms it
/// to see its bytes and counts its calls exactly.
#[test]
fn a_class_loaded_while_sampling_is_instrumented_by_the_next_session() {
    let dir = compile("LoadedLate.java", "sample-loaded-late");
    let (log, sampled, cpu) = (
        dir.join("agent.log"),
        dir.join("sampled.json"),
        dir.join("cpu.json"),
    );
    let mut java = Program::started(
        java_on(Path::new(JDK17_HOME))
            .arg("-cp")
            .arg(&dir)
            .arg("LoadedLate")
            .stdin(Stdio::piped()),
        "ready",
    );
    let pid = java.pid();
    let mut stdin = java.child().stdin.take().unwrap();
    let (log_arg, sampled_arg, cpu_arg) = (
        log.to_str().unwrap(),
        sampled.to_str().unwrap(),
        cpu.to_str().unwrap(),
    );
    let (cli, _, stderr) = attach_profiling(
        pid,
        &["--mode", "sample", "--log", log_arg, "-o", sampled_arg],
    );
    writeln!(stdin, "load").unwrap();
    java.expect("loaded");
    common::interrupt(cli, stderr);
    let (cli, _, stderr) = attach_profiling(
        pid,
        // Revealed before the first call returns, so its callees' calls count exactly.
        &[
            "--root",
            "LoadedLate$Late::tick",
            "--reveal",
            "sync",
            "--log",
            log_arg,
            "-o",
            cpu_arg,
        ],
    );
    writeln!(stdin, "call").unwrap();
    java.expect("called 42");
    common::interrupt(cli, stderr);
    writeln!(stdin, "quit").unwrap();
    java.expect("done");
    java.succeeds();

    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("class file load hook off while this session runs"),
        "{log}"
    );
    assert!(
        log.contains("loaded classes whose bytes were unknown"),
        "{log}"
    );
    check_document_at(&read_profile_json(&sampled), "cpu", 10_000_000);
    let doc = read_profile_json(&cpu);
    assert_eq!(
        call_paths(&doc),
        [
            ("LoadedLate$Late.tick".to_owned(), 1),
            ("LoadedLate$Late.tick/LoadedLate$Late.leaf".to_owned(), 7),
        ],
        "{doc}"
    );
}

/// On JDK 25 (when one is installed): the 3:1 loops sampled 3:1, and virtual threads' samples
/// in their own stacks (from `VirtualThread.run` in), grouped as `virtual threads`, none in a
/// carrier's stack.
#[test]
fn sampling_on_jdk25_with_virtual_threads() {
    let Some(home) = ferrofluid_testkit::jdk21_or_skip() else {
        return;
    };
    let dir = compile("Sampled.java", "sample-jdk25");
    let (doc, _) = run_on(
        &home,
        &dir,
        &["--interval", "1ms"],
        &[],
        "Sampled",
        &["ratio", "150"],
    );
    check_document(&doc);
    let own = self_samples(&doc);
    let (three, one) = (own["Sampled.threeParts"], own["Sampled.onePart"]);
    assert!(three + one >= 1000, "too few samples: {own:?}");
    let ratio = three as f64 / one as f64;
    assert!(
        (2.7..=3.3).contains(&ratio),
        "3:1 expected, got {three}:{one}"
    );

    let dir = compile("Waits.java", "sample-jdk25-virtual");
    let (doc, out) = run_on(
        &home,
        &dir,
        &["--interval", "1ms", "--threads"],
        &[],
        "Waits",
        &["virtual", "1000"],
    );
    assert_eq!(out, "done\n");
    check_document(&doc);
    let threads = doc["threads"].as_array().unwrap();
    let virtual_threads = threads
        .iter()
        .find(|t| t["name"] == "virtual threads")
        .unwrap_or_else(|| panic!("no virtual threads group: {threads:?}"));
    let outer: Vec<String> = virtual_threads["root"]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}.{}",
                c["class"].as_str().unwrap(),
                c["method"].as_str().unwrap()
            )
        })
        .filter(|n| !n.starts_with('['))
        .collect();
    assert_eq!(outer, ["java.lang.VirtualThread.run"]);
    let vthreads = serde_json::json!({"threads": [virtual_threads]});
    let (in_vthreads, _, _) = below(&vthreads, "Waits", "vwork");
    assert!(in_vthreads >= 100, "vwork: {in_vthreads} samples");
    let (everywhere, _, _) = below(&doc, "Waits", "vwork");
    assert_eq!(
        everywhere, in_vthreads,
        "no vwork sample in a carrier's tree"
    );
}
