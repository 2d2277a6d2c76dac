//! The agent in real JVMs: loaded by attach into a JVM started without options, and at startup; status,
//! detach, re-attach cycles; option typos; the control socket's protection.

#[path = "../../attach/tests/common/mod.rs"]
mod common;
mod harness;

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::Jvm;
use ferrofluid_attach::{AttachError, VirtualMachine};
use ferrofluid_protocol::control::{Client, FrameError, Request, Response};
use ferrofluid_testkit::{agent_library_beside_test as agent_so, jdk25_or_skip};
use harness::socket_of;

/// Removes the agent's private directory (with its log) when the test ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn status(client: &mut Client) -> ferrofluid_protocol::control::Status {
    match client.request(&Request::Status).unwrap() {
        Response::Status(s) => s,
        other => panic!("expected status, got {other:?}"),
    }
}

#[test]
fn attach_status_detach_twenty_cycles_leave_the_program_undisturbed() {
    let mut jvm = Jvm::start("agent-cycles", None);
    let pid = jvm.java_pid();
    let vm = VirtualMachine::attach(pid).unwrap();
    let socket = socket_of(pid);
    // Detach removes the default log with the control directory: this one outlives the cycles.
    let log_path = std::env::temp_dir().join(format!("ff-agent-cycles-{pid}.log"));
    let _ = std::fs::remove_file(&log_path);
    let options = format!("log={}", log_path.display());
    let mut loads = 0;
    for cycle in 1..=20u64 {
        vm.load_agent(&agent_so(), &options).unwrap();
        loads += 1;
        let mut client = Client::connect(&socket).unwrap();
        assert_eq!(client.pid, pid);
        let s = status(&mut client);
        assert_eq!(
            (s.pid, s.attach_count, s.options.as_str()),
            (pid, loads, options.as_str()),
            "cycle {cycle}"
        );
        assert!(s.vm_version.starts_with("17."), "{}", s.vm_version);
        if cycle == 1 {
            let dir = socket.parent().unwrap();
            assert_eq!(std::fs::metadata(dir).unwrap().mode() & 0o777, 0o700);
            assert_eq!(std::fs::metadata(&socket).unwrap().mode() & 0o777, 0o600);
            // Attaching while the agent runs reconnects to it: same socket, one more attach.
            vm.load_agent(&agent_so(), &options).unwrap();
            loads += 1;
            let mut again = Client::connect(&socket).unwrap();
            assert_eq!(status(&mut again).attach_count, loads);
        }
        assert_eq!(client.request(&Request::Detach).unwrap(), Response::Ok);
        assert!(!socket.exists(), "detach removes the socket");
        assert!(
            !socket.parent().unwrap().exists(),
            "and the control directory"
        );
        assert!(
            Client::connect(&socket).is_err(),
            "dormant agent serves nothing"
        );
        jvm.expect_lines(2);
    }
    let log = std::fs::read_to_string(&log_path).unwrap();
    let _ = std::fs::remove_file(&log_path);
    assert_eq!(log.matches("detached; agent dormant").count(), 20);
    assert_eq!(log.matches("agent already running").count(), 1);
    assert!(
        !log.contains("panic") && !log.contains("WARN") && !log.contains("ERROR"),
        "{log}"
    );
    jvm.expect_lines(5);
    assert!(jvm.alive());
    let _ = std::fs::remove_dir_all(socket.parent().unwrap());
}

/// A log kept (for its warnings) by an earlier process with the same pid does not outlive this
/// process's first attach: detach leaves no directory behind.
#[test]
fn a_log_left_by_an_earlier_process_with_the_pid_goes_at_detach() {
    let mut jvm = Jvm::start("agent-stale-log", None);
    let pid = jvm.java_pid();
    let socket = socket_of(pid);
    let dir = socket.parent().unwrap().to_path_buf();
    let _cleanup = RemoveOnDrop(dir.clone());
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&dir)
        .unwrap();
    std::fs::write(dir.join("agent.log"), "WARN an earlier process\n").unwrap();
    // The log of this process elsewhere: detach has no log of its own to remove in the directory.
    let log = std::env::temp_dir().join(format!("ff-agent-stale-{pid}.log"));
    let vm = VirtualMachine::attach(pid).unwrap();
    vm.load_agent(&agent_so(), &format!("log={}", log.display()))
        .unwrap();
    let mut client = Client::connect(&socket).unwrap();
    assert_eq!(status(&mut client).pid, pid);
    assert_eq!(client.request(&Request::Detach).unwrap(), Response::Ok);
    let _ = std::fs::remove_file(&log);
    assert!(
        !dir.exists(),
        "{:?}",
        std::fs::read_dir(&dir).map(|d| d.count())
    );
    assert!(jvm.alive());
}

#[test]
fn requests_are_checked() {
    let mut jvm = Jvm::start("agent-requests", None);
    let pid = jvm.java_pid();
    let vm = VirtualMachine::attach(pid).unwrap();
    vm.load_agent(&agent_so(), "scheme=eager,duration=2m")
        .unwrap();
    let socket = socket_of(pid);
    let _cleanup = RemoveOnDrop(socket.parent().unwrap().to_path_buf());

    // Without the handshake every request is refused.
    let mut raw = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    ferrofluid_protocol::control::write_frame(&mut raw, &Request::Status).unwrap();
    let reply: Response = ferrofluid_protocol::control::read_frame(&mut raw).unwrap();
    assert_eq!(
        reply,
        Response::Error {
            message: "the first request must be `hello`".into()
        }
    );

    let mut client = Client::connect(&socket).unwrap();
    assert_eq!(status(&mut client).options, "scheme=eager,duration=2m");
    assert_eq!(
        client.request(&Request::Snapshot).unwrap(),
        Response::Error {
            message: "collection was never started".into()
        }
    );
    assert_eq!(client.request(&Request::Detach).unwrap(), Response::Ok);
    jvm.expect_lines(3);
}

#[test]
fn option_typo_fails_the_load_and_leaves_the_jvm_alone() {
    let mut jvm = Jvm::start("agent-typo", None);
    let pid = jvm.java_pid();
    let vm = VirtualMachine::attach(pid).unwrap();
    match vm.load_agent(&agent_so(), "sceme=lazy") {
        Err(AttachError::AgentLoadFailed { message, .. }) => {
            assert_eq!(message, "Agent_OnAttach returned -1")
        }
        other => panic!("expected AgentLoadFailed, got {other:?}"),
    }
    assert!(!socket_of(pid).exists());
    let _cleanup = RemoveOnDrop(socket_of(pid).parent().unwrap().to_path_buf());
    // The same JVM then takes a correct load. HotSpot unloaded the library after the failed
    // Agent_OnAttach, so this is a fresh copy: attach count 1 shows nothing of the failed one remained.
    vm.load_agent(&agent_so(), "").unwrap();
    let mut client = Client::connect(&socket_of(pid)).unwrap();
    assert_eq!(status(&mut client).attach_count, 1);
    assert_eq!(client.request(&Request::Detach).unwrap(), Response::Ok);
    jvm.expect_lines(3);
}

#[test]
fn loads_at_startup_with_options() {
    let outer = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ff-startup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&outer);
    std::fs::create_dir_all(&outer).unwrap();
    // Longer than `sockaddr_un` holds wherever the checkout is: bound and reached all the same.
    let socket = outer.join("d".repeat(100)).join("ctl.sock");
    assert!(socket.as_os_str().len() > 108);
    let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ff-startup-{}.log", std::process::id()));
    let arg = format!(
        "-agentpath:{}=socket={},log={}",
        agent_so().display(),
        socket.display(),
        log.display()
    );
    let mut jvm = Jvm::launch("agent-startup", &[], &[&arg]);
    let mut client = Client::connect(&socket).unwrap();
    let s = status(&mut client);
    assert_eq!(s.attach_count, 1);
    assert_eq!(
        s.options,
        format!("log={},socket={}", log.display(), socket.display())
    );
    assert_eq!(client.request(&Request::Detach).unwrap(), Response::Ok);
    jvm.expect_lines(3);
    drop(jvm);
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("detached; agent dormant"));
    let _ = std::fs::remove_dir_all(&outer);
    let _ = std::fs::remove_file(&log);
}

#[test]
fn startup_option_typo_stops_the_jvm_with_one_line() {
    let out = Command::new("java")
        .arg(format!("-agentpath:{}=duration=30", agent_so().display()))
        .arg("-version")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "ferrofluid agent: bad value `30` for agent option `duration`: expected a positive whole number with unit ms, s, m or h (e.g. 30s)\n"
        ),
        "{stderr}"
    );
}

const OTHER_USER: &str = "ffattachtest";

/// Run by `other_users_cannot_reach_the_socket` as another user.
#[test]
fn child_connect_as_other_user() {
    let Ok(socket) = std::env::var("FF_AGENT_SOCKET") else {
        return;
    };
    match Client::connect(Path::new(&socket)) {
        Err(FrameError::Io(e)) => println!("CHILD-REFUSED: {:?}", e.kind()),
        other => panic!("connected: {other:?}"),
    }
}

#[test]
fn other_users_cannot_reach_the_socket() {
    if ferrofluid_attach::procfs::info(std::process::id())
        .unwrap()
        .euid
        != 0
    {
        eprintln!("skipped: running as another user needs root");
        return;
    }
    if !Command::new("id")
        .arg(OTHER_USER)
        .output()
        .unwrap()
        .status
        .success()
    {
        let _ = Command::new("useradd")
            .args(["--system", "--no-create-home", OTHER_USER])
            .status();
    }
    let mut jvm = Jvm::start("agent-other-user", None);
    let pid = jvm.java_pid();
    VirtualMachine::attach(pid)
        .unwrap()
        .load_agent(&agent_so(), "")
        .unwrap();
    let socket = socket_of(pid);
    let _cleanup = RemoveOnDrop(socket.parent().unwrap().to_path_buf());
    let out = Command::new("runuser")
        .args(["-u", OTHER_USER, "--"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "child_connect_as_other_user", "--nocapture"])
        .env("FF_AGENT_SOCKET", &socket)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("CHILD-REFUSED: PermissionDenied"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The agent still serves its owner.
    let mut client = Client::connect(&socket).unwrap();
    assert_eq!(client.request(&Request::Detach).unwrap(), Response::Ok);
    jvm.expect_lines(3);
}

#[test]
fn attach_cycles_on_jdk25() {
    let Some(jdk25) = jdk25_or_skip() else {
        return;
    };
    // `env PATH=...` makes the harness's `java` the JDK 25 one (classes compiled by javac 17 run on 25).
    let path = format!("PATH={}:/usr/bin:/bin", jdk25.join("bin").display());
    let mut jvm = Jvm::launch("agent-jdk25", &["env", &path], &[]);
    let pid = jvm.java_pid();
    let vm = VirtualMachine::attach(pid).unwrap();
    assert!(vm.jcmd("VM.version").unwrap().contains("JDK 25"));
    let socket = socket_of(pid);
    for cycle in 1..=3u64 {
        vm.load_agent(&agent_so(), "").unwrap();
        let mut client = Client::connect(&socket).unwrap();
        let s = status(&mut client);
        assert_eq!(s.attach_count, cycle);
        assert!(s.vm_version.starts_with("25"), "{}", s.vm_version);
        assert_eq!(client.request(&Request::Detach).unwrap(), Response::Ok);
        jvm.expect_lines(2);
    }
    let _ = std::fs::remove_dir_all(socket.parent().unwrap());
}
