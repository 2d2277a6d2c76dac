//! `ferrofluid attach PID --push URL --every 1s` against a real JVM (`tests/java/Push.java`)
//! and a receiver standing in for Pyroscope's `/ingest`: a push every interval while profiling
//! goes on, what is left pushed when it ends (Ctrl-C, the JVM's exit), and nothing lost: the
//! pushed intervals add up, method by method, to the profile of the whole session (`-o`).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod common;
use common::{attach_profiling, compile};
use ferrofluid_profile::Profile;
use ferrofluid_report::pprof::proto;
use ferrofluid_testkit::receiver::{Answer, Receiver, Request};
use ferrofluid_testkit::JDK17_HOME;

/// `Push MS`, once it said "ready".
fn java(dir: &Path, ms: u64) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut java = Command::new(Path::new(JDK17_HOME).join("bin/java"))
        .arg("-cp")
        .arg(dir)
        .arg("Push")
        .arg(ms.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(java.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    (java, out)
}

/// Per (sample type, function): the flat values of a pprof message.
fn flat(m: &proto::Profile) -> BTreeMap<(String, String), i64> {
    let s = |i: i64| m.string_table[i as usize].clone();
    let mut out = BTreeMap::new();
    for sample in &m.sample {
        let Some(&leaf) = sample.location_id.first() else {
            continue;
        };
        let function = &m.function[leaf as usize - 1];
        for (t, v) in m.sample_type.iter().zip(&sample.value) {
            *out.entry((s(t.r#type), s(function.name))).or_insert(0) += v;
        }
    }
    out
}

/// The pushed intervals summed, against the session's whole profile in `out`: equal.
fn intervals_add_up(pushes: &[Request], out: &Path) {
    let mut sum: BTreeMap<(String, String), i64> = BTreeMap::new();
    for r in pushes {
        let m = ferrofluid_push::interval::decode(&r.body).unwrap();
        for (k, v) in flat(&m) {
            *sum.entry(k).or_insert(0) += v;
        }
    }
    sum.retain(|_, v| *v != 0);
    let whole = Profile::from_json_slice(&std::fs::read(out).unwrap()).unwrap();
    let want = flat(&ferrofluid_report::pprof::encode(&whole));
    assert!(
        want.contains_key(&("calls".into(), "Push.h".into())),
        "{want:?}"
    );
    assert_eq!(sum, want);
}

/// Checks the requests' endpoint, labels and times, and returns them.
fn check_requests(got: Vec<Request>, pid: u32) -> Vec<Request> {
    let mut last_until = 0u64;
    for r in &got {
        assert_eq!((r.method.as_str(), r.path()), ("POST", "/ingest"));
        let name = r.param("name").unwrap();
        assert!(name.starts_with("Push{host="), "{name}");
        assert!(
            name.ends_with(&format!(",pid={pid},mode=count,env=test}}")),
            "{name}"
        );
        assert_eq!(r.param("format").as_deref(), Some("pprof"));
        let from: u64 = r.param("from").unwrap().parse().unwrap();
        let until: u64 = r.param("until").unwrap().parse().unwrap();
        assert!(
            from >= last_until.saturating_sub(1) && until > from,
            "{from} {until}"
        );
        last_until = until;
    }
    got
}

#[test]
fn ctrl_c_pushes_what_is_left_and_the_intervals_add_up_to_the_profile() {
    let dir = compile("Push.java", "push-sigint");
    let receiver = Receiver::start();
    let (mut java, _out) = java(&dir, 0);
    let out = dir.join("out.json");
    let url = receiver.url("/ingest");
    let (mut cli, lines, stderr) = attach_profiling(
        java.id(),
        &[
            "--mode",
            "count",
            "--root",
            "Push::work",
            "--push",
            &url,
            "--every",
            "1s",
            "--label",
            "env=test",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        lines[0].starts_with(&format!(
            "ferrofluid: pushing every 1s to Pyroscope /ingest at {url} as Push{{host="
        )),
        "{lines:?}"
    );
    // Three pushes while profiling goes on, then Ctrl-C.
    receiver.wait_for(3, Duration::from_secs(120));
    common::kill("INT", &cli.id().to_string());
    let status = cli.wait().unwrap();
    let rest = common::rest(stderr);
    let _ = java.kill();
    let _ = java.wait();
    assert!(status.success(), "{lines:?}{rest}");
    let got = check_requests(receiver.received(), java.id());
    assert!(got.len() >= 4, "{}", got.len());
    assert!(
        rest.contains(&format!("ferrofluid: pushed {} profiles (", got.len())),
        "{rest}"
    );
    intervals_add_up(&got, &out);
}

#[test]
fn the_jvms_exit_pushes_what_is_left() {
    let dir = compile("Push.java", "push-exit");
    let receiver = Receiver::start();
    let (mut java, mut java_out) = java(&dir, 3_000);
    let out = dir.join("out.json");
    let url = receiver.url("/ingest");
    let (mut cli, lines, stderr) = attach_profiling(
        java.id(),
        &[
            "--mode",
            "count",
            "--root",
            "Push::work",
            "--push",
            &url,
            "--every",
            "1s",
            "--label",
            "env=test",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let mut line = String::new();
    java_out.read_line(&mut line).unwrap();
    assert_eq!(line, "done\n");
    assert!(java.wait().unwrap().success());
    let status = cli.wait().unwrap();
    let rest = common::rest(stderr);
    assert!(status.success(), "{lines:?}{rest}");
    assert!(rest.contains("exited while profiling"), "{rest}");
    let got = check_requests(receiver.received(), java.id());
    assert!(!got.is_empty());
    intervals_add_up(&got, &out);
}

/// `java -agentpath:AGENT=OPTIONS -cp DIR Push MS`, once it said "ready".
fn java_with_agent(
    dir: &Path,
    options: &str,
    ms: u64,
) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut java = Command::new(Path::new(JDK17_HOME).join("bin/java"))
        .arg(format!(
            "-agentpath:{}={options}",
            common::agent().display()
        ))
        .arg("-cp")
        .arg(dir)
        .arg("Push")
        .arg(ms.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(java.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    (java, out)
}

/// The agent options of a count session under `Push::work` pushed to `url` every second,
/// its log to `dir/agent.log`.
fn push_options(dir: &Path, url: &str) -> String {
    format!(
        "mode=count,root=Push::work,push={url},every=1s,label=env=test,log={}",
        dir.join("agent.log").display()
    )
}

fn agent_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("agent.log")).unwrap()
}

#[test]
fn a_jvm_started_with_the_agent_pushes_with_no_ferrofluid_process() {
    let dir = compile("Push.java", "push-agent");
    let receiver = Receiver::start();
    let url = receiver.url("/ingest");
    let out = dir.join("out.json");
    let options = format!("{},file={}", push_options(&dir, &url), out.display());
    let (mut java, _out) = java_with_agent(&dir, &options, 2_500);
    assert!(java.wait().unwrap().success());
    // Pushes at about 1 s and 2 s, and what is left at the JVM's exit.
    let got = check_requests(receiver.received(), java.id());
    assert!(got.len() >= 2, "{}", got.len());
    intervals_add_up(&got, &out);
    let log = agent_log(&dir);
    assert!(
        log.contains(&format!(
            "push: every 1s to Pyroscope /ingest at {url} as Push{{host="
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!("push: {} profiles (", got.len()))
            && log.contains(&format!("sent to {url}, 0 dropped, 0 failed attempts")),
        "{log}"
    );
}

#[test]
fn the_agent_counts_a_refused_push_in_the_next_one_and_its_log() {
    let dir = compile("Push.java", "push-agent-refused");
    let receiver = Receiver::start();
    receiver.script(
        vec![Answer::Status(400, Vec::new(), b"bad profile".to_vec())],
        Answer::status(200),
    );
    let url = receiver.url("/ingest");
    let out = dir.join("out.json");
    let options = format!("{},file={}", push_options(&dir, &url), out.display());
    let (mut java, _out) = java_with_agent(&dir, &options, 3_500);
    assert!(java.wait().unwrap().success());
    let got = receiver.received();
    assert!(got.len() >= 3, "{}", got.len());
    let pid = java.id();
    let names: Vec<String> = got.iter().map(|r| r.param("name").unwrap()).collect();
    let plain = format!(",pid={pid},mode=count,env=test}}");
    let counted = format!(",pid={pid},mode=count,env=test,dropped_profiles=1}}");
    // The refused one, the next carrying the count, the rest without it.
    assert!(names[0].ends_with(&plain), "{names:?}");
    assert!(names[1].ends_with(&counted), "{names:?}");
    assert!(names[2..].iter().all(|n| n.ends_with(&plain)), "{names:?}");
    // Every interval was sent once: all of them add up to the whole.
    intervals_add_up(&got, &out);
    let log = agent_log(&dir);
    assert!(
        log.contains("push: dropped 1 profiles: rejected: HTTP 400"),
        "{log}"
    );
    assert!(
        log.contains(&format!("sent to {url}, 1 dropped, 0 failed attempts")),
        "{log}"
    );
}

#[test]
fn detach_pushes_what_is_left_and_pushing_stops() {
    let dir = compile("Push.java", "push-agent-detach");
    let receiver = Receiver::start();
    let url = receiver.url("/ingest");
    let (mut java, _out) = java_with_agent(&dir, &push_options(&dir, &url), 0);
    receiver.wait_for(2, Duration::from_secs(60));
    let detached = common::ferrofluid()
        .args(["attach", &java.id().to_string(), "--detach"])
        .output()
        .unwrap();
    assert!(
        detached.status.success(),
        "{}",
        String::from_utf8_lossy(&detached.stderr)
    );
    // The last push arrived before the detach was answered; none after.
    let at_detach = receiver.received().len();
    std::thread::sleep(Duration::from_millis(2_500));
    let got = check_requests(receiver.received(), java.id());
    let _ = java.kill();
    let _ = java.wait();
    assert_eq!(got.len(), at_detach);
    assert!(
        agent_log(&dir).contains(&format!("push: {at_detach} profiles (")),
        "{}",
        agent_log(&dir)
    );
}

#[test]
fn a_jvm_started_with_a_push_url_naming_no_backend_does_not_start() {
    let output = Command::new(Path::new(JDK17_HOME).join("bin/java"))
        .arg(format!(
            "-agentpath:{}=push=http://127.0.0.1:4040/api",
            common::agent().display()
        ))
        .arg("-version")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(
            "ferrofluid agent: push URL `http://127.0.0.1:4040/api`: the path names no backend; \
             expected one ending in /ingest or /push.v1.PusherService/Push (Pyroscope), \
             /profiles/writeraw or /parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw \
             (Parca), /v1development/profiles (OpenTelemetry)\n"
        ),
        "{stderr}"
    );
}

#[test]
fn status_shows_the_agents_pushing_and_its_last_failure() {
    let dir = compile("Push.java", "push-agent-status");
    let receiver = Receiver::start();
    // The first push arrives, every later attempt fails and is retried.
    receiver.script(vec![Answer::status(200)], Answer::status(503));
    let url = receiver.url("/ingest");
    let (mut java, _out) = java_with_agent(&dir, &push_options(&dir, &url), 0);
    receiver.wait_for(2, Duration::from_secs(60));
    let status = common::ferrofluid()
        .args(["attach", &java.id().to_string()])
        .output()
        .unwrap();
    let _ = java.kill();
    let _ = java.wait();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == format!("pushing:        every 1s to {url}"))
        .unwrap_or_else(|| panic!("{text}"));
    // One arrived; the attempts after it failed (how many by now depends on the backoff).
    let counts = lines[at + 1].trim_start();
    assert!(
        counts.starts_with("1 profiles sent (") && counts.contains(" KiB), 0 dropped, "),
        "{text}"
    );
    assert!(!counts.contains(", 0 failed attempts"), "{text}");
    assert_eq!(
        lines[at + 2].trim_start(),
        "last attempt failed: HTTP 503",
        "{text}"
    );
}
