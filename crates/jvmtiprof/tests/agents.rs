//! The example agents against real JVMs: the stack sampler's attribution (a 3:1 pair of hot
//! methods, a hot loop without safepoint poll, sleeping threads on the wall clock), a clean stop,
//! crash containment under class loading and compilation churn, and the method-latency agent's
//! exact call counts at startup and after an attach.
//!
//! The agents are the crate's `cdylib` examples: `cargo test -p jvmtiprof` builds them into
//! `target/<profile>/examples/` (`cargo test --test agents` alone does not: build them first
//! with `cargo build --release -p jvmtiprof --examples`).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ferrofluid_testkit::{javac, jdk21_or_skip, scratch_dir, Lines, JDK17_HOME};

fn jdk17() -> PathBuf {
    PathBuf::from(JDK17_HOME)
}

/// `target/<profile>/examples/lib<name>.so`.
fn agent(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().join("examples");
    let lib = dir.join(format!("lib{name}.so"));
    let built = std::fs::metadata(&lib)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| {
            panic!(
                "{} not built: cargo build --release -p jvmtiprof --examples",
                lib.display()
            )
        });
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let newest = ["src", "src/ffi", "src/sampler", "src/intercept", "csrc"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).into_iter().flatten())
        .filter_map(|e| Some(e.ok()?.path()))
        .chain([root.join(format!("examples/{name}.rs"))])
        .filter(|p| p.is_file())
        .filter_map(|p| p.metadata().ok()?.modified().ok())
        .max()
        .unwrap();
    assert!(
        built >= newest,
        "{} is older than the crate's sources: cargo build --release -p jvmtiprof --examples \
         (`cargo test -p jvmtiprof` builds them; `--test agents` alone does not)",
        lib.display()
    );
    lib
}

/// A scratch directory with the test programs compiled by `jdk`'s javac (`Payload` apart, in
/// `payload/`, so that only Churn's own loaders define it).
fn programs(jdk: &Path, name: &str) -> PathBuf {
    let dir = scratch_dir(Path::new(env!("CARGO_TARGET_TMPDIR")), name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java");
    let sources: Vec<PathBuf> = ["Ratio", "CountedLoop", "Latency", "Churn", "Waits"]
        .iter()
        .map(|c| src.join(format!("{c}.java")))
        .collect();
    javac(jdk, &["--release", "17"], &dir, &sources);
    javac(
        jdk,
        &["--release", "17"],
        &dir.join("payload"),
        [src.join("payload/Payload.java")],
    );
    dir
}

/// Waits for `child` up to `timeout`, killing it then.
fn wait(mut child: Child, timeout: Duration, what: &str) -> std::process::Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} still running after {timeout:?}; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `java JVM_ARGS -agentpath:LIB=OPTIONS -cp DIR MAIN ARGS` to its end; panics unless it
/// succeeds.
fn run(
    jdk: &Path,
    dir: &Path,
    jvm_args: &[&str],
    agent_lib: &Path,
    options: &str,
    main: &[&str],
    timeout: Duration,
) -> String {
    let child = Command::new(jdk.join("bin/java"))
        .args(jvm_args)
        .arg(format!("-agentpath:{}={options}", agent_lib.display()))
        .arg("-cp")
        .arg(dir)
        .args(main)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait(child, timeout, main[0]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{main:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The stack sampler's report.
#[derive(Debug, Default)]
struct Report {
    header: HashMap<String, String>,
    samples: u64,
    self_counts: HashMap<String, u64>,
    stacks: Vec<(u64, String)>,
    states: HashMap<String, u64>,
    kinds: HashMap<String, u64>,
    text: String,
}

fn key_values(s: &str) -> HashMap<String, String> {
    s.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn report(path: &Path) -> Report {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = Report {
        text: text.clone(),
        ..Default::default()
    };
    for line in text.lines() {
        let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
        match kind {
            "samples" => {
                let (n, kv) = rest.split_once(' ').unwrap_or((rest, ""));
                r.samples = n.parse().unwrap();
                r.header = key_values(kv);
            }
            "self" | "stack" => {
                let (n, name) = rest.split_once(' ').unwrap();
                let n: u64 = n.parse().unwrap();
                if kind == "self" {
                    r.self_counts.insert(name.to_owned(), n);
                } else {
                    r.stacks.push((n, name.to_owned()));
                }
            }
            "states" => {
                r.states = key_values(rest)
                    .into_iter()
                    .map(|(k, v)| (k, v.parse().unwrap()))
                    .collect()
            }
            "kinds" => {
                r.kinds = key_values(rest)
                    .into_iter()
                    .map(|(k, v)| (k, v.parse().unwrap()))
                    .collect()
            }
            _ => {}
        }
    }
    r
}

impl Report {
    fn self_of(&self, method: &str) -> u64 {
        self.self_counts.get(method).copied().unwrap_or(0)
    }

    fn header_u64(&self, key: &str) -> u64 {
        self.header
            .get(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in the report:\n{}", self.text))
    }
}

fn three_to_one(jdk: &Path, name: &str) {
    let dir = programs(jdk, name);
    let out = dir.join("report.txt");
    run(
        jdk,
        &dir,
        &[],
        &agent("stack_sampler"),
        &format!("interval=1ms,top=20,out={}", out.display()),
        &["Ratio", "400"],
        Duration::from_secs(600),
    );
    let r = report(&out);
    let (three, one) = (r.self_of("Ratio.threeParts"), r.self_of("Ratio.onePart"));
    eprintln!("{}", r.text);
    assert!(one >= 500, "too few samples to judge:\n{}", r.text);
    let ratio = three as f64 / one as f64;
    assert!(
        (2.7..=3.3).contains(&ratio),
        "threeParts:onePart = {three}:{one} = {ratio:.3}, not 3 within 10%:\n{}",
        r.text
    );
    assert_eq!(r.header_u64("lost"), 0);
    assert_eq!(r.header_u64("faults"), 0);
    // The innermost frames are typed from where the signal landed.
    assert!(
        r.kinds.get("compiled").copied().unwrap_or(0) > (three + one) / 2,
        "{:?}",
        r.kinds
    );
}

/// Two methods of the same loop, one run three times as long: their self samples are 3:1
/// within 10%.
#[test]
fn two_hot_methods_of_three_to_one_cost() {
    three_to_one(&jdk17(), "ratio17");
}

#[test]
fn two_hot_methods_of_three_to_one_cost_on_jdk25() {
    if let Some(jdk) = jdk21_or_skip() {
        three_to_one(&jdk, "ratio25");
    }
}

/// A hot counted loop without a safepoint poll (the Parallel collector asks for none in counted
/// loops) is where the asynchronous walk places the samples; `GetAllStackTraces` from a thread
/// sees the thread only at the poll of the loop that calls it.
#[test]
fn a_loop_without_safepoint_poll_is_charged_to_its_own_method() {
    let jdk = jdk17();
    let dir = programs(&jdk, "counted");
    let sampler = agent("stack_sampler");
    let asynchronous = dir.join("async.txt");
    let safepoint = dir.join("safepoint.txt");
    for (walker, out) in [("async", &asynchronous), ("safepoint", &safepoint)] {
        run(
            &jdk,
            &dir,
            &["-XX:+UseParallelGC"],
            &sampler,
            &format!("interval=1ms,walker={walker},top=20,out={}", out.display()),
            &["CountedLoop", "20000"],
            Duration::from_secs(600),
        );
    }
    let a = report(&asynchronous);
    let s = report(&safepoint);
    eprintln!("async:\n{}\nsafepoint:\n{}", a.text, s.text);
    let (sum, run) = (a.self_of("CountedLoop.sum"), a.self_of("CountedLoop.run"));
    assert!(sum >= 500, "too few samples:\n{}", a.text);
    assert!(
        sum as f64 >= 0.95 * (sum + run) as f64,
        "async: sum {sum}, run {run}"
    );
    let (sum, run) = (s.self_of("CountedLoop.sum"), s.self_of("CountedLoop.run"));
    assert!(
        run > 3 * sum,
        "the safepoint sampler was expected to charge the loop to run(): sum {sum}, run {run}"
    );
}

/// Wall clock: a thread asleep for the whole run gets a sample each interval (repeats of its
/// one stack, marked idle), a spinning one too.
#[test]
fn the_wall_clock_samples_a_sleeping_thread_every_interval() {
    let jdk = jdk17();
    let dir = programs(&jdk, "wall");
    let out = dir.join("report.txt");
    run(
        &jdk,
        &dir,
        &[],
        &agent("stack_sampler"),
        &format!("clock=wall,interval=10ms,top=100,out={}", out.display()),
        &["Waits", "wall", "3000"],
        Duration::from_secs(600),
    );
    let r = report(&out);
    eprintln!("{}", r.text);
    let sleeping: u64 = r
        .stacks
        .iter()
        .filter(|(_, s)| s.ends_with("Waits.sleeper;java.lang.Thread.sleep"))
        .map(|(n, _)| n)
        .sum();
    // 3 s at 10 ms: 300 intervals (the thread starts a little after the sampler).
    assert!(
        (240..=330).contains(&sleeping),
        "sleeping thread: {sleeping} intervals"
    );
    assert!(r.self_of("Waits.spin") > 0, "{}", r.text);
    assert!(
        r.states.get("idle").copied().unwrap_or(0) > sleeping / 2,
        "{:?}",
        r.states
    );
    assert!(
        r.header_u64("signals") < r.samples,
        "idle threads are not signalled"
    );
}

fn signal_caught(pid: u32, signal: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .unwrap_or(0);
    mask & 1 << (signal - 1) != 0
}

fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
                .map(|s| s.trim().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Stopping leaves nothing behind: the sampler's thread is gone and the profiling signal's
/// handler is back to the JVM's (none: the default), while the program runs on.
#[test]
fn stopping_removes_the_thread_and_the_signal_handler() {
    let jdk = jdk17();
    let dir = programs(&jdk, "stop");
    let out = dir.join("report.txt");
    let stop = dir.join("stop-now");
    let mut child = Command::new(jdk.join("bin/java"))
        .arg(format!(
            "-agentpath:{}=interval=1ms,cpu=perf,out={},stop_file={}",
            agent("stack_sampler").display(),
            out.display(),
            stop.display()
        ))
        .arg("-cp")
        .arg(&dir)
        .args(["Waits", "stop"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let lines = Lines::spawn(child.stdout.take().unwrap());
    assert_eq!(lines.next_within(Duration::from_secs(300)), "ready");
    assert!(
        signal_caught(pid, libc::SIGPROF),
        "sampling: SIGPROF is caught"
    );
    assert!(thread_names(pid).iter().any(|n| n == "jvmtiprof-cpu"));
    std::fs::write(&stop, "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while signal_caught(pid, libc::SIGPROF)
        || thread_names(pid).iter().any(|n| n.starts_with("jvmtiprof"))
    {
        assert!(
            Instant::now() < deadline,
            "still sampling: {:?}",
            thread_names(pid)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        signal_caught(pid, libc::SIGSEGV),
        "the JVM's own handler stays"
    );
    writeln!(child.stdin.take().unwrap(), "go").unwrap();
    assert_eq!(lines.next_within(Duration::from_secs(60)), "done true");
    let status = wait(child, Duration::from_secs(60), "Waits").status;
    assert!(status.success());
    let r = report(&out);
    assert!(r.samples > 100, "{}", r.text);
    assert_eq!(r.header["source"], "perf");
}

/// Sampling at 1 kHz while classes are loaded and unloaded and compiled all the time: the JVM
/// survives, and what the walk could not do is counted.
#[test]
fn sampling_survives_class_churn_at_one_kilohertz() {
    let seconds: u64 = std::env::var("JVMTIPROF_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let jdk = jdk17();
    let dir = programs(&jdk, "churn");
    let out = dir.join("report.txt");
    let payload = dir.join("payload/Payload.class");
    let stdout = run(
        &jdk,
        &dir,
        &["-Xmx256m"],
        &agent("stack_sampler"),
        &format!("interval=1ms,top=5,out={}", out.display()),
        &["Churn", payload.to_str().unwrap(), &seconds.to_string()],
        Duration::from_secs(seconds * 10 + 300),
    );
    let loaded: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("loaded "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no 'loaded' line:\n{stdout}"));
    let r = report(&out);
    eprintln!("loaded {loaded} classes\n{}", r.text);
    assert!(loaded > 50, "the program did little: {loaded}");
    assert!(r.samples > 1000, "{}", r.text);
    assert_eq!(r.header_u64("lost"), 0);
    // Every sample is delivered with a stack or a counted reason.
    let walked = r.header_u64("walked");
    let without: u64 = ["faults", "busy", "not_java", "vm_errors"]
        .iter()
        .map(|k| r.header_u64(k))
        .sum();
    assert_eq!(walked + without, r.header_u64("signals"), "{}", r.text);
}

/// The method-latency agent's `method ...` lines by `Class.name descriptor`.
fn latency_report(path: &Path) -> HashMap<String, HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    eprintln!("{text}");
    text.lines()
        .filter_map(|l| l.strip_prefix("method "))
        .map(|l| {
            let mut words = l.splitn(3, ' ');
            let name = format!("{} {}", words.next().unwrap(), words.next().unwrap());
            (name, key_values(words.next().unwrap_or("")))
        })
        .collect()
}

fn assert_exact_latency_counts(path: &Path) {
    let r = latency_report(path);
    let calls = |m: &str, k: &str| -> u64 {
        r.get(m)
            .unwrap_or_else(|| panic!("no {m} in {r:?}"))
            .get(k)
            .unwrap()
            .parse()
            .unwrap()
    };
    let expect = [
        ("Latency$Work.fast (I)I", 2000, 2000, 0),
        ("Latency$Work.twice (I)I", 500, 500, 0),
        ("Latency$Work.slow ()V", 50, 50, 0),
        ("Latency$Work.fails (I)V", 30, 0, 30),
        ("Latency$Work.<init> (I)V", 7, 7, 0),
    ];
    for (m, n, returns, throws) in expect {
        assert_eq!(
            (calls(m, "calls"), calls(m, "returns"), calls(m, "throws")),
            (n, returns, throws),
            "{m}"
        );
    }
    assert_eq!(r.len(), expect.len(), "{r:?}");
    // Thread.sleep(1) takes at least a millisecond.
    assert!(calls("Latency$Work.slow ()V", "p50_ns") >= 1_000_000);
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("removed restored=1 not_restored=0"), "{text}");
}

const LATENCY_OPTIONS: &str = "method=Latency$Work::*,method=Latency$Work::<init>";

/// Exact counts of calls, returns and exceptions for methods intercepted from startup (classes
/// instrumented as they load).
#[test]
fn method_latency_counts_are_exact() {
    for jdk in std::iter::once(jdk17()).chain(jdk21_or_skip()) {
        let dir = programs(&jdk, "latency");
        let out = dir.join("latency.txt");
        let stdout = run(
            &jdk,
            &dir,
            &[],
            &agent("method_latency"),
            &format!("{LATENCY_OPTIONS},out={}", out.display()),
            &["Latency"],
            Duration::from_secs(300),
        );
        assert_eq!(stdout.trim(), "done true");
        assert_exact_latency_counts(&out);
    }
}

/// The same counts when the agent is attached to a running JVM whose class is loaded and
/// compiled already (retransformed), and nothing of the calls before the attach.
#[test]
fn method_latency_counts_are_exact_after_an_attach() {
    let jdk = jdk17();
    let dir = programs(&jdk, "latency-attach");
    let out = dir.join("latency.txt");
    let mut child = Command::new(jdk.join("bin/java"))
        .arg("-XX:+EnableDynamicAgentLoading")
        .arg("-cp")
        .arg(&dir)
        .args(["Latency", "wait"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = Lines::spawn(child.stdout.take().unwrap());
    assert_eq!(lines.next_within(Duration::from_secs(300)), "ready");
    let vm = ferrofluid_attach::VirtualMachine::attach(child.id()).unwrap();
    let answer = vm
        .load_agent(
            &agent("method_latency"),
            &format!("{LATENCY_OPTIONS},out={}", out.display()),
        )
        .unwrap();
    eprintln!("attach: {answer}");
    writeln!(child.stdin.take().unwrap(), "go").unwrap();
    assert_eq!(lines.next_within(Duration::from_secs(300)), "done true");
    assert!(wait(child, Duration::from_secs(60), "Latency")
        .status
        .success());
    assert_exact_latency_counts(&out);
}

/// Attached to a running JVM whose hot loop is compiled already, with `recompile=true`: the
/// classes of the code compiled before the attach are retransformed, the JIT compiles them
/// again with debug information at every instruction (HotSpot records it while an environment
/// has `CompiledMethodLoad` on), and the loop is charged to its own method. (Without it, code
/// compiled before the attach keeps debug information only at safepoints, and a sample inside
/// an inlined loop is charged to the next place that has some: docs/jvmtiprof.md, "Attaching".)
#[test]
fn an_attached_sampler_recompiles_what_was_compiled_before() {
    let jdk = jdk17();
    let dir = programs(&jdk, "counted-attach");
    let out = dir.join("report.txt");
    let mut child = Command::new(jdk.join("bin/java"))
        .args(["-XX:+UseParallelGC", "-cp"])
        .arg(&dir)
        .args(["CountedLoop", "20000", "wait"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = Lines::spawn(child.stdout.take().unwrap());
    assert_eq!(lines.next_within(Duration::from_secs(300)), "ready");
    let vm = ferrofluid_attach::VirtualMachine::attach(child.id()).unwrap();
    let answer = vm
        .load_agent(
            &agent("stack_sampler"),
            &format!("interval=1ms,top=20,recompile=true,out={}", out.display()),
        )
        .unwrap();
    assert!(answer.contains("return code: 0"), "{answer}");
    writeln!(child.stdin.take().unwrap(), "go").unwrap();
    assert_eq!(lines.next_within(Duration::from_secs(600)), "done true");
    assert!(wait(child, Duration::from_secs(60), "CountedLoop")
        .status
        .success());
    let r = report(&out);
    eprintln!("{}", r.text);
    assert!(r.header_u64("recompiled") > 0, "{}", r.text);
    let (sum, run) = (r.self_of("CountedLoop.sum"), r.self_of("CountedLoop.run"));
    assert!(sum + run >= 500, "too few samples: sum {sum} run {run}");
    assert!(
        sum as f64 >= 0.95 * (sum + run) as f64,
        "sum {sum} run {run}"
    );
}
