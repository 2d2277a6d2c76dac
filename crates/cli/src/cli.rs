//! Command-line grammar. Each subcommand's arguments live in its own module under
//! `commands/`; this file only lists them.

use clap::{Parser, Subcommand};

use crate::commands;

/// ferrofluid: exact profiles of running JVMs by on-the-fly bytecode instrumentation.
#[derive(Debug, Parser)]
#[command(name = "ferrofluid", version, about, long_about = None)]
pub struct Opt {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Statically instrument a .class, directory, .jar or .jmod with a probe.
    Instrument(commands::instrument::InstrumentArgs),
    /// List the running JVMs you may attach to (pid, main class, JVM version, arguments).
    List(commands::list::ListArgs),
    /// Load the agent into a running JVM (or reconnect to it) and show its status; --detach to detach.
    Attach(commands::attach::AttachArgs),
    /// Start a JVM with the agent loaded from its first class: ferrofluid run [FLAGS] -- java ARGS...
    Run(commands::run::RunArgs),
    #[command(about = commands::formats::report_about())]
    Report(commands::report::ReportArgs),
    /// Compare two profiles of the same mode; exit 1 when something changed beyond the thresholds (a CI gate).
    Diff(commands::diff::DiffArgs),
    /// A live terminal table of a running JVM's hottest methods, refreshed every second.
    Top(commands::top::TopArgs),
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::Opt;

    /// The first line of the error parsing `argv` gives (`None`: it parsed).
    fn error(argv: &[&str]) -> Option<String> {
        let argv = std::iter::once("ferrofluid").chain(argv.iter().copied());
        Opt::try_parse_from(argv)
            .err()
            .map(|e| e.to_string().lines().next().unwrap_or_default().to_owned())
    }

    /// The value names of numbers, durations and thresholds: their flags take `-5` and `0` as
    /// values and say what is wrong with them.
    const NUMERIC: &[&str] = &["N", "D", "SIZE", "DURATION", "SECS", "T", "METRIC=T", "PID"];
    /// Every other value name, none of which reads as a number.
    const OTHER: &[&str] = &[
        "MODE",
        "METHOD",
        "CLASSES",
        "SCHEME",
        "TIMING",
        "WHICH",
        "BLOCKS",
        "WHEN",
        "PATH",
        "FILE",
        "ADDR",
        "COMMAND",
        "F",
        "METRIC",
        "ORDER",
        "HOW",
        "INPUT",
        "OUTPUT",
        "PROBE",
        "INCLUDE",
        "BASE",
        "NEW",
        "URL",
        "KEY=VALUE",
    ];

    fn value(flag: &str, v: &str, reason: &str) -> String {
        format!("error: invalid value '{v}' for '{flag}': {reason}")
    }

    const DURATION: &str = "expected a positive whole number with unit ms, s, m or h (e.g. 30s)";
    const INTERVAL: &str = "expected a whole number of ms, s or m from 1ms to 1m (e.g. 10ms)";
    const SIZE: &str =
        "expected a size from 1 byte to 1g: a whole number of bytes, or with unit k, m or g (e.g. 512k)";

    /// The agent flags' numeric values on `attach`, `run` and `top`, and what each gives.
    fn agent_flag_cases(cases: &mut Vec<(Vec<&'static str>, Option<String>)>) {
        for command in ["attach", "run", "top"] {
            let pre = |rest: &[&'static str]| -> Vec<&'static str> {
                let mut argv = vec![command];
                if command != "run" {
                    argv.push("4242");
                }
                argv.extend_from_slice(rest);
                if command == "run" {
                    argv.extend_from_slice(&["--", "java"]);
                }
                argv
            };
            for (flag, v, reason) in [
                (
                    "--region-last <N>",
                    "-5",
                    Some("expected a whole number from 0 to 100000"),
                ),
                ("--region-last <N>", "0", None),
                (
                    "--track-every <N>",
                    "-5",
                    Some("expected a whole number (0: count only)"),
                ),
                ("--track-every <N>", "0", None),
                ("--track-bytes <SIZE>", "-5", Some(SIZE)),
                ("--track-bytes <SIZE>", "0", Some(SIZE)),
                (
                    "--stack-depth <D>",
                    "-5",
                    Some("expected a whole number from 1 to 1024"),
                ),
                (
                    "--stack-depth <D>",
                    "0",
                    Some("expected a whole number from 1 to 1024"),
                ),
                ("--duration <DURATION>", "-5s", Some(DURATION)),
                ("--duration <DURATION>", "0s", Some(DURATION)),
                ("--every <DURATION>", "-5s", Some(DURATION)),
                ("--every <DURATION>", "0s", Some(DURATION)),
                ("--interval <DURATION>", "-5ms", Some(INTERVAL)),
                ("--interval <DURATION>", "0ms", Some(INTERVAL)),
            ] {
                let name = flag.split(' ').next().unwrap();
                cases.push((pre(&[name, v]), reason.map(|r| value(flag, v, r))));
            }
        }
    }

    /// Every numeric flag of every command, with a negative and a zero value, and the first
    /// line of its error (the flag's own), or `None` where the value is valid.
    fn cases() -> Vec<(Vec<&'static str>, Option<String>)> {
        let seconds = "expected a whole number of seconds, at least 1";
        let pid = "expected a process id, a positive whole number (see `ferrofluid list`)";
        let threshold = |v: &str| {
            format!(
                "invalid threshold \"{v}\": give a number of units (0: any change), a percentage like 5%, or none"
            )
        };
        let mut cases = Vec::new();
        agent_flag_cases(&mut cases);
        for command in ["attach", "top"] {
            for v in ["-5", "0"] {
                cases.push((
                    vec![command, "4242", "--timeout", v],
                    Some(value("--timeout <SECS>", v, seconds)),
                ));
                cases.push((vec![command, v], Some(value("<PID>", v, pid))));
            }
        }
        for v in ["-5s", "0s"] {
            cases.push((
                vec!["attach", "4242", "-o", "p.json", "--warmup", v],
                Some(value("--warmup <DURATION>", v, DURATION)),
            ));
        }
        for flag in [
            "--max-calls-change",
            "--max-time-change",
            "--max-bytecodes-change",
        ] {
            cases.push((
                vec!["diff", "a.json", "b.json", flag, "-5"],
                Some(value(&format!("{flag} <T>"), "-5", &threshold("-5"))),
            ));
            cases.push((vec!["diff", "a.json", "b.json", flag, "0"], None));
        }
        cases.push((
            vec!["diff", "a.json", "b.json", "--max-change", "-5"],
            Some(value(
                "--max-change <METRIC=T>",
                "-5",
                "\"-5\": give METRIC=T, e.g. bytes=5%",
            )),
        ));
        cases.push((
            vec!["diff", "a.json", "b.json", "--max-change", "bytes=-5"],
            Some(value(
                "--max-change <METRIC=T>",
                "bytes=-5",
                &threshold("-5"),
            )),
        ));
        cases
    }

    /// Fails unless `cases` hold every numeric flag the commands have.
    fn assert_every_numeric_flag_has_a_case(cases: &[(Vec<&'static str>, Option<String>)]) {
        let mut top = Opt::command();
        top.build();
        for sub in top.get_subcommands() {
            for arg in sub
                .get_arguments()
                .filter(|a| a.get_action().takes_values())
            {
                let Some(names) = arg.get_value_names() else {
                    continue;
                };
                let name = names[0].as_str();
                assert!(
                    NUMERIC.contains(&name) || OTHER.contains(&name),
                    "{} {:?}: is <{name}> a number? Put it in NUMERIC or OTHER",
                    sub.get_name(),
                    arg.get_id()
                );
                if !NUMERIC.contains(&name) {
                    continue;
                }
                let shown = match arg.get_long() {
                    Some(long) => format!("--{long} <{name}>"),
                    None => format!("<{name}>"),
                };
                assert!(
                    cases.iter().any(|(argv, e)| argv[0] == sub.get_name()
                        && e.as_deref()
                            .is_some_and(|e| e.contains(&format!("'{shown}'")))),
                    "{} {shown}: no case",
                    sub.get_name()
                );
            }
        }
    }

    #[test]
    fn negative_and_zero_values_get_each_flags_own_error() {
        let cases = cases();
        for (argv, expected) in &cases {
            assert_eq!(error(argv), *expected, "{argv:?}");
        }
        assert_every_numeric_flag_has_a_case(&cases);
    }
}
