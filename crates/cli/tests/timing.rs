//! CPU mode's sampled timing end to end (`tests/java/Timed.java`): the calls per context are
//! exact, as with per-call timing, from `run`, `-agentpath` and `attach` (whose default it is);
//! two methods of 3:1 CPU cost share the time 3:1; a method blocked in a socket read gets
//! almost no CPU time, and with `--wall` its blocked time is under a `[blocked: native]` frame.

use std::path::Path;

use serde_json::Value;

mod common;
use common::{
    agentpath, attach_while_running, call_paths, compile, contexts, frame, run_java_with,
};
use ferrofluid_testkit::{read_profile_json, JDK17_HOME};

/// Fig. 4's calls, three times over: `f` 3, `h` 10 per `f`, `g` 10 per `f`, `h` in `g`
/// 0 + 1 + ... + 9 = 45 per `f`.
fn assert_fig4(doc: &Value) {
    assert_eq!(doc["mode"], "cpu");
    assert_eq!(doc["sampling"]["source"], "thread_clocks", "{doc}");
    assert_eq!(doc["sampling"]["roots"], true, "{}", doc["sampling"]);
    assert_eq!(
        call_paths(doc),
        [
            ("Timed.f".to_owned(), 3),
            ("Timed.f/Timed.g".to_owned(), 30),
            ("Timed.f/Timed.g/Timed.h".to_owned(), 135),
            ("Timed.f/Timed.h".to_owned(), 30),
        ]
    );
}

#[test]
fn run_counts_every_call_exactly() {
    let dir = compile("Timed.java", "timing-run");
    let out = dir.join("out.json");
    run_java_with(
        &["--timing", "sampled", "--root", "Timed::f"],
        &out,
        &dir,
        "Timed",
        &["counts"],
    );
    assert_fig4(&read_profile_json(&out));
}

/// A thread another thread joins (its `Thread`'s monitor inflated all along) counts as any other;
/// the probes find it by its id, not by an identity hash that would call into the VM.
#[test]
fn a_joined_thread_counts_every_call_and_is_found_by_id() {
    let dir = compile("Timed.java", "timing-joined");
    let (out, log) = (dir.join("out.json"), dir.join("agent.log"));
    let log_flag = log.display().to_string();
    run_java_with(
        &[
            "--timing", "sampled", "--root", "Timed::f", "--log", &log_flag,
        ],
        &out,
        &dir,
        "Timed",
        &["joined"],
    );
    let doc = read_profile_json(&out);
    assert_fig4(&doc);
    assert_eq!(doc["threads"][0]["name"], "worker", "{doc}");
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("ferrofluid/Counts: probes find threads by id"),
        "{log}"
    );
}

#[test]
fn agentpath_counts_every_call_exactly() {
    let dir = compile("Timed.java", "timing-agentpath");
    let out = dir.join("out.json");
    let options = format!("timing=sampled,root=Timed::f,file={}", out.display());
    agentpath(Path::new(JDK17_HOME), &options, &dir, &["Timed", "counts"]);
    assert_fig4(&read_profile_json(&out));
}

/// `attach` times by sampling unless told otherwise. `eager`: the subgraph is instrumented
/// before profiling starts (attach reveals asynchronously).
#[test]
fn attach_samples_by_default_and_counts_every_call_exactly() {
    let dir = compile("Timed.java", "timing-attach");
    let flags = ["--scheme", "eager", "--root", "Timed::f"];
    let doc = attach_while_running(Path::new(JDK17_HOME), &dir, &["Timed", "attach"], &flags);
    assert_fig4(&doc);
    // The recording share is attach's default, and records every invocation at first.
    let record = &doc["sampling"]["record"];
    assert_eq!(record["policy"], "auto", "{record}");
    assert_eq!(
        (
            record["root_invocations"].as_u64(),
            record["recorded"].as_u64()
        ),
        (Some(3), Some(3)),
        "{record}"
    );
}

/// `--record 20%`: only roots entered in the first fifth of each half second are recorded, each
/// one whole: the calls per recorded invocation are Fig. 4's exactly, and the profile and its
/// text say how many were recorded of how many.
#[test]
fn a_recording_share_records_whole_invocations_and_says_how_many() {
    let dir = compile("Timed.java", "timing-share");
    let flags = ["--scheme", "eager", "--root", "Timed::f", "--record", "20%"];
    let doc = attach_while_running(Path::new(JDK17_HOME), &dir, &["Timed", "repeat"], &flags);
    let record = &doc["sampling"]["record"];
    assert_eq!(record["policy"], "20%", "{record}");
    assert_eq!(record["open_per_mille"], 200, "{record}");
    let seen = record["root_invocations"].as_u64().unwrap();
    let recorded = record["recorded"].as_u64().unwrap();
    // About 2,000 invocations over five windows, a fifth of each recorded.
    assert!(seen > 500, "{record}");
    assert!(recorded > 0 && recorded * 2 < seen, "{record}");
    let calls: std::collections::BTreeMap<String, u64> = call_paths(&doc).into_iter().collect();
    assert_eq!(calls["Timed.f"], recorded, "{calls:?}");
    assert_eq!(calls["Timed.f/Timed.h"], 10 * recorded, "{calls:?}");
    assert_eq!(calls["Timed.f/Timed.g"], 10 * recorded, "{calls:?}");
    assert_eq!(calls["Timed.f/Timed.g/Timed.h"], 45 * recorded, "{calls:?}");
    let text = common::ferrofluid()
        .arg("report")
        .arg(dir.join("out.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("recorded {recorded} of {seen} root invocations")),
        "{text}"
    );
}

/// The nodes of `name` (`Class.method`) over every thread.
fn nodes<'a>(doc: &'a Value, name: &str) -> Vec<&'a Value> {
    contexts(doc)
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| n.get("class").is_some() && frame(n) == name)
        .collect()
}

fn sum(nodes: &[&Value], key: &str) -> u64 {
    nodes.iter().map(|n| n[key].as_u64().unwrap_or(0)).sum()
}

/// `ferrofluid run` of `Timed WHAT` with sampled timing every 1 ms under `root`: the profile.
fn sampled_every_ms(tag: &str, root: &str, what: &str) -> Value {
    let dir = compile("Timed.java", tag);
    let out = dir.join("out.json");
    run_java_with(
        &["--timing", "sampled", "--interval", "1ms", "--root", root],
        &out,
        &dir,
        "Timed",
        &[what],
    );
    read_profile_json(&out)
}

/// With no root every thread counts, and the profile says it has no roots.
#[test]
fn a_whole_program_profile_counts_every_call_and_has_no_roots() {
    let dir = compile("Timed.java", "timing-no-root");
    let out = dir.join("out.json");
    run_java_with(
        &[
            "--timing",
            "sampled",
            "--scheme",
            "total",
            "--include",
            "Timed",
        ],
        &out,
        &dir,
        "Timed",
        &["counts"],
    );
    let doc = read_profile_json(&out);
    assert_eq!(doc["sampling"].get("roots"), None, "{}", doc["sampling"]);
    assert_eq!(sum(&nodes(&doc, "Timed.f"), "calls"), 3, "{doc}");
    assert_eq!(sum(&nodes(&doc, "Timed.g"), "calls"), 30, "{doc}");
    assert_eq!(sum(&nodes(&doc, "Timed.h"), "calls"), 165, "{doc}");
}

/// `heavy` spins three times as long as `light`: 75% of their CPU time, within 5 points, from
/// their samples, with exact calls. Sampled every 1 ms (about 1,500 samples) so that 5 points
/// are four standard deviations of the estimate; at the default 10 ms they are little more than
/// one.
#[test]
fn two_methods_of_three_to_one_cost_share_their_time_three_to_one() {
    let doc = sampled_every_ms("timing-shares", "Timed::mix", "shares");
    let (heavy, light) = (nodes(&doc, "Timed.heavy"), nodes(&doc, "Timed.light"));
    let calls = sum(&heavy, "calls");
    assert!(calls > 0 && calls == sum(&light, "calls"), "{doc}");
    let (h, l) = (sum(&heavy, "total_ns"), sum(&light, "total_ns"));
    let share = h as f64 * 100.0 / (h + l) as f64;
    assert!(
        (70.0..=80.0).contains(&share),
        "heavy {h} ns, light {l} ns: {share:.1}%"
    );
    assert_eq!(doc["sampling"]["clock"], "cpu");
    assert!(
        doc["sampling"]["samples"].as_u64().unwrap() >= 1000,
        "{}",
        doc["sampling"]
    );
}

/// `squeeze` compresses with `Deflater`, whose work is a native method (no probes there): the
/// CPU time is in a frame of that method below its Java caller, as a stack sampler names it,
/// not the caller's own time; the frame has samples and no calls.
#[test]
fn cpu_time_in_a_native_method_is_its_frames() {
    let doc = sampled_every_ms("timing-native", "Timed::compress", "deflate");
    let native = nodes(&doc, "java.util.zip.Deflater.deflateBytesBytes");
    assert!(!native.is_empty(), "{doc}");
    assert_eq!(sum(&native, "calls"), 0, "{doc}");
    assert!(
        native
            .iter()
            .all(|n| n["children"].as_array().is_none_or(|c| c.is_empty())),
        "{doc}"
    );
    let (root, time) = (
        sum(&nodes(&doc, "Timed.compress"), "total_ns"),
        sum(&native, "total_ns"),
    );
    assert!(
        time * 10 > root * 7,
        "deflateBytesBytes {time} ns of the root's {root} ns"
    );
    assert!(sum(&native, "self_samples") > 500, "{doc}");
}

/// `serve` reads 40 bytes arriving every 60 ms and spins about 22 ms between them: `readOne` is
/// blocked most of its wall time and gets under 5% of the root's CPU time; with `--wall` most of
/// its time is in a `[blocked: native]` frame below it, none of it busy self time. `readOne`'s
/// own CPU time, timed by `--cpu` probes, is about 1.2% of `serve` (the kernel's reads and polls;
/// 5% when the JDK's read path still ran interpreted, before the warm-up reads outside the root).
#[test]
fn a_method_blocked_in_a_socket_read_gets_no_cpu_time_and_shows_blocked_with_wall() {
    let dir = compile("Timed.java", "timing-socket");
    let out = dir.join("cpu.json");
    // The JDK's socket code uninstrumented: it runs as it would without the profiler.
    let flags = [
        "--timing",
        "sampled",
        "--interval",
        "1ms",
        "--root",
        "Timed::serve",
        "--exclude",
        "java.**",
        "--exclude",
        "sun.**",
    ];
    run_java_with(&flags, &out, &dir, "Timed", &["socket"]);
    let doc = read_profile_json(&out);
    let read = nodes(&doc, "Timed.readOne");
    assert_eq!(sum(&read, "calls"), 40, "{doc}");
    let all = sum(&nodes(&doc, "Timed.serve"), "total_ns");
    let reading = sum(&read, "total_ns");
    assert!(
        all > 0 && reading * 20 < all,
        "readOne {reading} of {all} ns of CPU"
    );

    let out = dir.join("wall.json");
    let mut wall = flags.to_vec();
    wall.push("--wall");
    run_java_with(&wall, &out, &dir, "Timed", &["socket"]);
    let doc = read_profile_json(&out);
    let read = nodes(&doc, "Timed.readOne");
    let wall_ns = sum(&read, "total_ns");
    let blocked: u64 = contexts(&doc)
        .into_iter()
        .filter(|(n, _)| n["class"] == "[blocked: native]")
        .map(|(n, _)| n["total_ns"].as_u64().unwrap_or(0))
        .sum();
    // 40 reads 60 ms apart: 2.4 s, most of it waiting for the peer.
    assert!(wall_ns > 500_000_000, "readOne {wall_ns} ns of wall time");
    assert!(
        blocked * 10 > wall_ns * 8,
        "blocked {blocked} of readOne's {wall_ns} ns"
    );
    assert!(sum(&read, "cpu_ns") * 20 < wall_ns, "{doc}");
    assert_eq!(doc["sampling"]["clock"], "wall");
}
