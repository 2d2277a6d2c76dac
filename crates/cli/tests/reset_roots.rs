//! Every thread's tree is rooted where the root scheme says, whatever was in flight when
//! collecting started or was reset: busy threads deep inside a root (a tiny method called
//! millions of times a second under it) when `ferrofluid attach` starts collecting and when
//! its `--warmup` resets, and when `attach --reset` resets a `ferrofluid run` profile.
//! Six busy threads on a small machine often fill their rings faster than the collector empties
//! them and some events are dropped (the profile says how many): the trees stay rooted then
//! too. Drops on demand are tested against real rings in the agent's `collector` tests.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

mod common;
use common::{agent, child_names, compile, ferrofluid};
use ferrofluid_testkit::{read_profile_json, JDK17_HOME};

const WORKERS: usize = 6;

/// `java -cp DIR Busy STOP WORKERS`, once it said it is ready.
fn busy(dir: &Path, stop: &Path) -> Child {
    let mut java = Command::new(Path::new(JDK17_HOME).join("bin/java"))
        .arg("-cp")
        .arg(dir)
        .arg("Busy")
        .arg(stop)
        .arg(WORKERS.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(java.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("ready "), "{first}");
    java
}

fn calls(node: &Value) -> u64 {
    node["calls"].as_u64().unwrap_or(0)
}

/// Every worker's tree: `serve` alone at the top, then `chain` three deep, then `tiny`, and
/// every exit matched; `tiny` 200 times per innermost `chain` (give or take the calls in flight
/// when collecting began, was reset or ended, and those a loss of events left out).
fn assert_rooted(doc: &Value) {
    let workers: Vec<&Value> = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"].as_str().unwrap_or("").starts_with("worker-"))
        .collect();
    assert_eq!(workers.len(), WORKERS, "{doc}");
    for t in workers {
        let name = &t["name"];
        assert_eq!(t.get("unmatched_exits"), None, "{name}: {t}");
        assert_eq!(child_names(&t["root"]), ["serve"], "{name}: {t}");
        let serve = &t["root"]["children"][0];
        assert!(calls(serve) > 0, "{name}: {t}");
        let mut node = serve;
        for _ in 0..4 {
            assert_eq!(child_names(node), ["chain"], "{name}: {t}");
            node = &node["children"][0];
        }
        assert_eq!(child_names(node), ["tiny"], "{name}: {t}");
        let (innermost, tiny) = (calls(node), calls(&node["children"][0]));
        // A recording that lost events ends there: the `tiny` calls after the loss, up to 200
        // of the innermost `chain` in flight, are not counted.
        let lost = 200 * t["dropped_events"].as_u64().unwrap_or(0);
        assert!(
            tiny + 400 + lost >= innermost * 200 && tiny <= innermost * 200 + 400,
            "{name}: {innermost} innermost chains, {tiny} tiny calls: {t}"
        );
    }
}

/// Two `ferrofluid attach` sessions with a warm-up, one after the other, to busy threads: each
/// starts collecting while the workers are deep in `serve` and resets while they are.
#[test]
fn attach_and_its_warmup_leave_every_tree_rooted_at_the_root() {
    let dir = compile("Busy.java", "reset-roots-attach");
    let stop = dir.join("stop");
    let mut java = busy(&dir, &stop);
    let mut docs = Vec::new();
    for session in 0..2 {
        let out = dir.join(format!("out{session}.json"));
        let attach = ferrofluid()
            .arg("attach")
            .arg(java.id().to_string())
            .arg("--agent")
            .arg(agent())
            .args(["--root", "Busy::serve", "--include", "Busy"])
            .args(["--warmup", "300ms", "--duration", "1s", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        if !attach.status.success() {
            std::fs::write(&stop, "").unwrap();
            let _ = java.wait();
            panic!("{}", String::from_utf8_lossy(&attach.stderr));
        }
        docs.push(read_profile_json(&out));
    }
    std::fs::write(&stop, "").unwrap();
    assert!(java.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(&dir);
    for doc in &docs {
        assert_rooted(doc);
    }
}

/// `ferrofluid run` on busy threads, reset three times by `attach --reset` while they are deep
/// in `serve`.
#[test]
fn resets_of_a_run_leave_every_tree_rooted_at_the_root() {
    let dir = compile("Busy.java", "reset-roots-run");
    let (stop, out) = (dir.join("stop"), dir.join("out.json"));
    let mut run = ferrofluid()
        .arg("run")
        .arg("--agent")
        .arg(agent())
        .args(["--root", "Busy::serve", "--include", "Busy", "-o"])
        .arg(&out)
        .arg("--")
        .arg(Path::new(JDK17_HOME).join("bin/java"))
        .arg("-cp")
        .arg(&dir)
        .arg("Busy")
        .arg(&stop)
        .arg(WORKERS.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(run.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let pid = first
        .trim()
        .strip_prefix("ready ")
        .unwrap_or("?")
        .to_owned();
    let mut said = Vec::new();
    for _ in 0..3 {
        std::thread::sleep(std::time::Duration::from_millis(300));
        said.push(ferrofluid().args(["attach", &pid, "--reset"]).output());
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    std::fs::write(&stop, "").unwrap();
    let status = run.wait().unwrap();
    assert!(status.success(), "{first}");
    for out in said {
        let out = out.unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "attach --reset: {err}");
    }
    let doc = read_profile_json(&out);
    let _ = std::fs::remove_dir_all(&dir);
    assert_rooted(&doc);
}
