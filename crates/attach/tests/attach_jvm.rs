//! Attaching to real JVMs: discovery, `jcmd`, agent loading, and every error path.

mod common;

use std::process::Command;
use std::time::Duration;

use common::Jvm;
use ferrofluid_attach::{describe, list_jvms, AttachError, VirtualMachine};

fn is_root() -> bool {
    ferrofluid_attach::procfs::info(std::process::id())
        .unwrap()
        .euid
        == 0
}

#[test]
fn discovers_and_runs_jcmd_without_disturbing_output() {
    let mut jvm = Jvm::start("jcmd", None);
    let pid = jvm.java_pid();

    let info = describe(pid).unwrap().expect("hsperfdata of the test JVM");
    assert_eq!(
        (info.main.as_str(), info.args.as_str()),
        ("Checksum", "alpha beta")
    );
    assert_eq!(info.spec_version, "17");
    assert!(info.vm_version.starts_with("17."), "{}", info.vm_version);
    assert!(list_jvms().iter().any(|j| j.pid == pid));

    let vm = VirtualMachine::attach(pid).unwrap();
    let version = vm.jcmd("VM.version").unwrap();
    assert!(version.contains("JDK 17."), "{version}");
    // Second attach reuses the running listener; a bad command is a typed refusal.
    let vm = VirtualMachine::attach(pid).unwrap();
    let props = vm.jcmd("VM.system_properties").unwrap();
    assert!(props.contains("java.vm.specification.version=17"));
    match vm.jcmd("No.such.command") {
        Err(AttachError::CommandFailed { code, message, .. }) => {
            assert_ne!(code, 0);
            assert_eq!(
                message,
                "java.lang.IllegalArgumentException: Unknown diagnostic command"
            );
        }
        other => panic!("expected CommandFailed, got {other:?}"),
    }
    // SIGQUIT with the trigger file must not have printed a thread dump into the program's output.
    jvm.expect_lines(10);
    assert!(jvm.alive());
}

#[test]
fn load_failures_carry_the_jvm_message() {
    let mut jvm = Jvm::start("load", None);
    let vm = VirtualMachine::attach(jvm.java_pid()).unwrap();
    match vm.load_agent(std::path::Path::new("/nonexistent/libnothing.so"), "") {
        Err(AttachError::AgentLoadFailed { message, .. }) => {
            assert!(message.contains("/nonexistent/libnothing.so"), "{message}")
        }
        other => panic!("expected AgentLoadFailed, got {other:?}"),
    }
    jvm.expect_lines(5);
}

#[test]
fn dead_pid_is_no_such_process() {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let err = VirtualMachine::attach(pid).unwrap_err();
    assert!(
        matches!(err, AttachError::NoSuchProcess(p) if p == pid),
        "{err:?}"
    );
    assert_eq!(err.to_string(), format!("no process with pid {pid}"));
}

#[test]
fn non_java_process_is_refused_and_left_alive() {
    let mut sleep = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleep.id();
    // A dead JVM that had this pid left its socket behind (as a killed JVM does): refused all
    // the same. CI once failed this way, on the socket of an earlier test's JVM.
    let stale = std::path::PathBuf::from(format!("/tmp/.java_pid{pid}"));
    let made = !stale.exists() && std::os::unix::net::UnixListener::bind(&stale).is_ok();
    let err = VirtualMachine::attach_with_timeout(pid, Duration::from_secs(1)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("process {pid} is not a Java virtual machine (it does not map libjvm.so)")
    );
    assert!(
        sleep.try_wait().unwrap().is_none(),
        "sleep must not have been signalled"
    );
    if made {
        let _ = std::fs::remove_file(&stale);
    }
    sleep.kill().unwrap();
    sleep.wait().unwrap();
}

const OTHER_USER: &str = "ffattachtest";

fn ensure_user() {
    if Command::new("id")
        .arg(OTHER_USER)
        .output()
        .unwrap()
        .status
        .success()
    {
        return;
    }
    let ok = Command::new("useradd")
        .args(["--system", "--no-create-home", OTHER_USER])
        .status();
    // Two tests may race to create it; either way it must exist now.
    let _ = ok;
    assert!(Command::new("id")
        .arg(OTHER_USER)
        .output()
        .unwrap()
        .status
        .success());
}

#[test]
fn root_attaches_to_another_users_jvm() {
    if !is_root() {
        eprintln!("skipped: creating a user and running its JVM needs root");
        return;
    }
    ensure_user();
    let mut jvm = Jvm::start("otheruser", Some(OTHER_USER));
    let pid = jvm.java_pid();
    let vm =
        VirtualMachine::attach(pid).unwrap_or_else(|e| panic!("{e}\n{}", credentials_in_play(pid)));
    assert!(vm.jcmd("VM.version").unwrap().contains("JDK 17."));
    jvm.expect_lines(5);
}

/// What decides whether root may act on another user's process, for a failure message (this test
/// once failed in CI, on a machine other than the one it was written on, and passed here).
fn credentials_in_play(pid: u32) -> String {
    let status = |p: &str| {
        std::fs::read_to_string(format!("/proc/{p}/status"))
            .unwrap_or_default()
            .lines()
            .filter(|l| ["Uid:", "Gid:", "CapEff:"].iter().any(|k| l.starts_with(k)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let sysctl = |k: &str| {
        std::fs::read_to_string(k)
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    format!(
        "jvm: {}\nus: {}\nptrace_scope={} protected_regular={}",
        status(&pid.to_string()),
        status("self"),
        sysctl("/proc/sys/kernel/yama/ptrace_scope"),
        sysctl("/proc/sys/fs/protected_regular"),
    )
}

/// Run by `other_user_is_permission_denied` as a non-root user: attaching to `FF_ATTACH_TARGET` fails.
#[test]
fn child_attach_as_unprivileged_user() {
    let Ok(target) = std::env::var("FF_ATTACH_TARGET") else {
        return;
    };
    let err = VirtualMachine::attach(target.parse().unwrap()).unwrap_err();
    assert!(
        matches!(err, AttachError::PermissionDenied { owner: 0, .. }),
        "{err:?}"
    );
    println!("CHILD-OK: {err}");
}

#[test]
fn other_user_is_permission_denied() {
    if !is_root() {
        eprintln!("skipped: running the test binary as another user needs root");
        return;
    }
    ensure_user();
    let mut jvm = Jvm::start("denied", None);
    let pid = jvm.java_pid();
    let out = Command::new("runuser")
        .args(["-u", OTHER_USER, "--"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_attach_as_unprivileged_user",
            "--nocapture",
        ])
        .env("FF_ATTACH_TARGET", pid.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "CHILD-OK: permission denied: process {pid} belongs to uid 0; run ferrofluid as that user or as root"
        )),
        "{stdout}"
    );
    jvm.expect_lines(3);
}

#[test]
fn attaches_into_other_pid_and_mount_namespaces() {
    if !is_root() {
        eprintln!("skipped: unshare needs root");
        return;
    }
    // A private /tmp (tmpfs) and a new PID namespace, as in a container: the JVM is pid 1 inside.
    let script = "mount -t tmpfs none /tmp && exec \"$0\" \"$@\"";
    let mut jvm = Jvm::start_under(
        "ns",
        &[
            "unshare",
            "--fork",
            "--pid",
            "--mount",
            "--mount-proc",
            "sh",
            "-c",
            script,
        ],
    );
    let pid = jvm.java_pid();
    let info = describe(pid)
        .unwrap()
        .expect("hsperfdata through /proc/PID/root");
    assert_eq!(info.nspid, 1);
    assert_ne!(info.pid, 1);
    assert_eq!(info.main, "Checksum");
    let vm = VirtualMachine::attach(pid).unwrap();
    assert!(vm.jcmd("VM.version").unwrap().contains("JDK 17."));
    assert!(
        !std::path::Path::new("/tmp/.java_pid1").exists(),
        "socket must be in the JVM's own /tmp"
    );
    jvm.expect_lines(5);
}
