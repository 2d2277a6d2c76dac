//! A test program run from its start with the agent: `ferrofluid run` or `-agentpath`.

use std::path::Path;
use std::process::{Command, Output};

use super::{agent, ferrofluid, java, succeeds};
use ferrofluid_testkit::JDK17_HOME;

/// `ferrofluid run --agent AGENT FLAGS -o OUT -- java -cp DIR MAIN` on JDK 17; panics with its
/// stderr unless it succeeds.
pub fn run_java(flags: &[&str], out: &Path, dir: &Path, main: &str) -> Output {
    run_java_with(flags, out, dir, main, &[])
}

/// [`run_java`] with the program's arguments `args`.
pub fn run_java_with(flags: &[&str], out: &Path, dir: &Path, main: &str, args: &[&str]) -> Output {
    run_java_on(Path::new(JDK17_HOME), flags, out, dir, main, args)
}

/// [`run_java_with`] on the JDK at `home`.
pub fn run_java_on(
    home: &Path,
    flags: &[&str],
    out: &Path,
    dir: &Path,
    main: &str,
    args: &[&str],
) -> Output {
    succeeds(run_command(home, flags, out, dir, main).args(args))
}

/// `ferrofluid run --agent AGENT FLAGS -o OUT -- java -cp DIR MAIN` on the JDK at `home`, to
/// give the program its arguments and run.
pub fn run_command(home: &Path, flags: &[&str], out: &Path, dir: &Path, main: &str) -> Command {
    let mut run = ferrofluid();
    run.arg("run")
        .arg("--agent")
        .arg(agent())
        .args(flags)
        .arg("-o")
        .arg(out)
        .arg("--")
        .arg(home.join("bin/java"))
        .arg("-cp")
        .arg(dir)
        .arg(main);
    run
}

/// `java -agentpath:AGENT=OPTIONS -cp DIR ARGS...` on the JDK at `home`; panics with its stderr
/// unless it succeeds.
pub fn agentpath(home: &Path, options: &str, dir: &Path, args: &[&str]) -> Output {
    succeeds(
        java(home)
            .arg(format!("-agentpath:{}={options}", agent().display()))
            .arg("-cp")
            .arg(dir)
            .args(args),
    )
}
