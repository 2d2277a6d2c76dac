//! Attaching shows the planner the loaded classes in no particular order: a class may be planned
//! before the superclass it inherits a method from. `tests/java/inherited/Inherited.java` calls
//! an inherited method on a branch of its root (a deferred call), as Jetty's `Server.handle`
//! calls the `handle` it inherits from `HandlerWrapper`; the call must still be revealed.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

mod common;
use common::{agent, ferrofluid};
use ferrofluid_testkit::{javac, read_profile_json, scratch_dir, JDK17_HOME};

/// Calls per call path under the `main` thread, e.g. `InhServer.handle/InhBase.handle`.
fn paths(doc: &Value) -> Vec<(String, u64)> {
    let threads = doc["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{doc}");
    let mut out = Vec::new();
    let mut stack = vec![(&threads[0]["root"], String::new())];
    while let Some((node, prefix)) = stack.pop() {
        for child in node["children"].as_array().into_iter().flatten() {
            let name = format!(
                "{}.{}",
                child["class"].as_str().unwrap(),
                child["method"].as_str().unwrap()
            );
            let path = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            out.push((path.clone(), child["calls"].as_u64().unwrap()));
            stack.push((child, path));
        }
    }
    out.sort();
    out
}

/// The root runs all along, as a server's request path does while the profiler attaches.
#[test]
fn an_inherited_method_called_on_a_branch_of_an_attached_root_is_revealed() {
    let dir = scratch_dir(Path::new(env!("CARGO_TARGET_TMPDIR")), "inherited");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/inherited/Inherited.java");
    javac(Path::new(JDK17_HOME), &["--release", "17"], &dir, [src]);
    let out = dir.join("out.json");
    let mut program = Command::new(Path::new(JDK17_HOME).join("bin/java"))
        .arg("-cp")
        .arg(&dir)
        .arg("Inherited")
        .arg(dir.join("end"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(program.stdout.take().unwrap());
    let mut ready = String::new();
    stdout.read_line(&mut ready).unwrap();
    let pid = ready
        .trim()
        .strip_prefix("ready ")
        .unwrap_or("0")
        .to_owned();
    let attached = ferrofluid()
        .args(["attach", &pid, "--agent"])
        .arg(agent())
        .args(["--root", "InhServer::handle(I)V", "--include", "Inh*"])
        .args(["--reveal", "sync", "--duration", "2s", "-o"])
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    std::fs::write(dir.join("end"), "").unwrap();
    let mut worked = String::new();
    stdout.read_to_string(&mut worked).unwrap();
    assert!(program.wait().unwrap().success());

    assert!(worked.starts_with("worked "), "{worked}");
    let said = String::from_utf8_lossy(&attached.stderr);
    assert!(attached.status.success(), "{said}");
    let doc = read_profile_json(&out);
    let paths = paths(&doc);
    let names: Vec<&str> = paths.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "InhServer.handle",
            "InhServer.handle/InhBase.handle",
            "InhServer.handle/InhBase.handle/InhBase.leaf",
        ],
        "{doc}"
    );
    // Every call of the root after the first made the inherited call; the first may have been
    // running already when the probes went in.
    let calls: Vec<u64> = paths.iter().map(|(_, n)| *n).collect();
    assert!(calls[0] > 0 && calls[1] == calls[2], "{paths:?}");
    assert!(calls[0] - calls[1] <= 1, "{paths:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
