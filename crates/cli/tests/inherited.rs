//! Attaching shows the planner the loaded classes in no particular order: a class may be planned
//! before the superclass it inherits a method from. `tests/java/inherited/Inherited.java` calls
//! an inherited method on a branch of its root (a deferred call), as Jetty's `Server.handle`
//! calls the `handle` it inherits from `HandlerWrapper`; the call must still be revealed.

use std::path::Path;
use std::process::Stdio;

mod common;
use common::{attach, call_paths, compile, java, read_profile_json, Program, JDK17_HOME};

/// The root runs all along, as a server's request path does while the profiler attaches.
#[test]
fn an_inherited_method_called_on_a_branch_of_an_attached_root_is_revealed() {
    let dir = compile("inherited/Inherited.java", "inherited");
    let out = dir.join("out.json");
    let mut program = Program::spawn(
        java(Path::new(JDK17_HOME))
            .arg("-cp")
            .arg(&dir)
            .arg("Inherited")
            .arg(dir.join("end")),
    );
    let ready = program.line();
    let pid: u32 = ready.strip_prefix("ready ").unwrap_or("0").parse().unwrap();
    let attached = attach(pid)
        .args(["--root", "InhServer::handle(I)V", "--include", "Inh*"])
        .args(["--reveal", "sync", "--duration", "2s", "-o"])
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    std::fs::write(dir.join("end"), "").unwrap();
    let worked = program.rest();
    program.succeeds();

    assert!(worked.starts_with("worked "), "{worked}");
    let said = String::from_utf8_lossy(&attached.stderr);
    assert!(attached.status.success(), "{said}");
    let doc = read_profile_json(&out);
    let paths = call_paths(&doc);
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
