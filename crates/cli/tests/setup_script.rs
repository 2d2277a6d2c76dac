//! The README's two commands are all a newcomer types: its test command, `tools/test.sh`, sets
//! up what the tests need (`tools/setup.sh`) and runs the whole suite, as `.ci/run` does. The
//! set-up runs here against stand-ins for `dpkg-query`, `apt-get` and `sudo`, which record what
//! it would install.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::scratch;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap()
}

/// Writes an executable shell script.
fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A directory of stand-ins: `dpkg-query` says every package is (or none is) installed,
/// `apt-get` and `sudo` write their arguments to `log`, `javac` exists if asked for.
fn stand_ins(dir: &Path, installed: bool, javac: bool) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("log");
    let status = if installed {
        "printf 'install ok installed'"
    } else {
        "exit 1"
    };
    script(&bin.join("dpkg-query"), status);
    script(
        &bin.join("apt-get"),
        &format!("echo \"apt-get $*\" >> {}", log.display()),
    );
    script(
        &bin.join("sudo"),
        &format!("echo \"sudo $*\" >> {}; shift; exec \"$@\"", log.display()),
    );
    if javac {
        script(&bin.join("javac"), "exit 0");
    }
    log
}

/// `source tools/setup.sh ARG`, then the JDKs it exported, with the stand-ins first on PATH.
fn setup(dir: &Path, arg: &str) -> Output {
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -euo pipefail; source tools/setup.sh {arg}; echo \"JAVA_HOME=${{JAVA_HOME:-}}\"; \
             echo \"JDK25=${{FERROFLUID_JDK25:-}}\""
        ))
        .current_dir(repo())
        .env("PATH", path)
        .env_remove("JAVA_HOME")
        .env("FERROFLUID_JDK25", "/opt/jdk-25")
        .output()
        .unwrap()
}

/// The Debian packages the README names for the tests.
fn readme_packages() -> Vec<String> {
    let readme = read("README.md");
    let at = readme
        .find("the Debian packages the tests read (`")
        .expect("README names the tests' packages");
    let list = &readme[at..];
    let list = &list[list.find('`').unwrap() + 1..];
    let list = &list[..list.find('`').unwrap()];
    list.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn the_test_command_sets_up_a_fresh_machine_and_ci_runs_it() {
    let dir = scratch("setup-fresh");
    let log = stand_ins(&dir, false, false);
    let out = setup(&dir, "all");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut packages = vec!["openjdk-17-jdk-headless".to_owned()];
    packages.extend(readme_packages());
    let wanted = packages.join(" ");
    // As root it asks apt-get itself, else through `sudo -n`: apt-get's lines either way.
    let logged = std::fs::read_to_string(&log).unwrap();
    let logged: Vec<&str> = logged
        .lines()
        .filter(|l| l.starts_with("apt-get"))
        .collect();
    assert_eq!(
        logged,
        [
            "apt-get update".to_owned(),
            format!("apt-get install -y --no-install-recommends {wanted}")
        ]
    );
    assert!(
        said.starts_with(&format!("tools/setup.sh: installing {wanted}\n")),
        "{said}"
    );
    assert!(
        said.ends_with(
            "tools/setup.sh: JDK 25 for the virtual-thread tests: /opt/jdk-25\nJAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64\nJDK25=/opt/jdk-25\n"
        ),
        "{said}"
    );

    // README's second command is the test script, which sets up, then runs the whole suite;
    // CI runs the same script.
    let readme = read("README.md");
    assert!(
        readme.contains("```sh\ncargo build --release && demo/run.sh\ntools/test.sh\n```"),
        "README's two commands"
    );
    let test = read("tools/test.sh");
    assert!(test.contains("\nsource tools/setup.sh all\n"), "{test}");
    assert!(
        test.ends_with(
            "\nexec cargo test --workspace --release --no-fail-fast \"$@\" </dev/null\n"
        ),
        "{test}"
    );
    let mode = std::fs::metadata(repo().join("tools/test.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "tools/test.sh is executable");
    assert!(read(".ci/run").ends_with("\nexec tools/test.sh\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_machine_set_up_already_installs_nothing_and_the_demo_takes_its_own_jdk() {
    let dir = scratch("setup-ready");
    let log = stand_ins(&dir, true, false);
    let out = setup(&dir, "all");
    assert!(out.status.success());
    assert!(!log.exists(), "{}", std::fs::read_to_string(&log).unwrap());
    let dir2 = scratch("setup-demo");
    let log2 = stand_ins(&dir2, false, true);
    let out = setup(&dir2, "jdk");
    assert!(out.status.success());
    assert!(!log2.exists(), "a javac on PATH is enough for the demo");
    // An argument always: a sourced script sees its caller's (`tools/test.sh -p X`) otherwise.
    let out = setup(&dir, "-p");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "tools/setup.sh: say what to set up: `source tools/setup.sh all` (the tests) or `jdk` \
         (the demo)\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}
