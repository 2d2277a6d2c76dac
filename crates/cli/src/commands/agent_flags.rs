//! The agent flags `ferrofluid run`, `attach` and `top` share: one per agent option of
//! [`ferrofluid_protocol::OPTIONS`], translated one to one into the agent option string
//! (docs/agent-options.md), each value checked by the option grammar itself; and `--agent`.

use std::path::PathBuf;
use std::time::Duration;

use ferrofluid_protocol::{
    AgentOption, AgentOptions, ClassPattern, MethodPattern, Mode as ProfileMode, OptionsError,
    Reveal, Scheme, Takes, Timing, OPTIONS,
};

/// Agent flags: one per agent option (`--KEY VALUE`, or `--KEY` for a boolean, with the help
/// declared there); and `--agent`.
#[derive(Debug, Clone, Default)]
pub struct AgentFlags {
    /// The options given: `(key, value)` in the order of `OPTIONS`, a repeated flag's values in
    /// command-line order, each spelt as the option string spells it.
    given: Vec<(&'static str, String)>,
    /// `--reveal`, if given (`run` and `attach` default differently).
    pub reveal: Option<Reveal>,
    /// `--timing`, if given (`attach` defaults to sampled, `run` to probes).
    pub timing: Option<Timing>,
    /// The agent library (default: libferrofluid_agent.so next to the ferrofluid executable).
    pub agent: Option<PathBuf>,
}

const AGENT_HELP: &str =
    "The agent library (default: libferrofluid_agent.so next to the ferrofluid executable; \
     a JVM that has the agent loaded already keeps its own)";

/// The agent options whose value is a number or a duration: a negative or zero value must reach
/// the option's own check, not be taken for a flag.
pub const NUMERIC_OPTIONS: &[&str] = &[
    "region-last",
    "track-every",
    "track-bytes",
    "stack-depth",
    "duration",
    "every",
    "interval",
];

impl clap::Args for AgentFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        OPTIONS.iter().fold(cmd, |cmd, o| cmd.arg(flag(o))).arg(
            clap::Arg::new("agent")
                .long("agent")
                .value_name("PATH")
                .value_parser(clap::value_parser!(PathBuf))
                .help(AGENT_HELP),
        )
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for AgentFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = AgentFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.given.clear();
        for o in OPTIONS {
            if o.takes == Takes::Flag {
                if matches.get_flag(o.key) {
                    self.given.push((o.key, "true".to_owned()));
                }
            } else if let Some(values) = matches.get_many::<String>(o.key) {
                self.given.extend(values.map(|v| (o.key, v.clone())));
            }
        }
        self.reveal = self
            .given
            .iter()
            .find(|(key, _)| *key == "reveal")
            .and_then(|(_, v)| v.parse().ok());
        self.timing = self
            .given
            .iter()
            .find(|(key, _)| *key == "timing")
            .and_then(|(_, v)| v.parse().ok());
        self.agent = matches.get_one::<PathBuf>("agent").cloned();
        Ok(())
    }
}

/// The flag of agent option `o`.
fn flag(o: &'static AgentOption) -> clap::Arg {
    let arg = clap::Arg::new(o.key).long(o.key).help(o.help);
    let value = |arg: clap::Arg| {
        arg.value_name(o.value_name)
            .value_parser(move |s: &str| canonical(o.key, s))
            // `--region-last -5`, `--duration -1s`: the option's own error, not clap's
            // "unexpected argument".
            .allow_hyphen_values(NUMERIC_OPTIONS.contains(&o.key))
            .allow_negative_numbers(true)
    };
    match o.takes {
        Takes::Flag => arg.action(clap::ArgAction::SetTrue),
        Takes::Value => value(arg).action(clap::ArgAction::Set),
        Takes::Values => value(arg).action(clap::ArgAction::Append),
    }
}

/// The value of a `--KEY` flag as the option string spells it, checked here where the command
/// line says what it expects in its own words: patterns, modes and durations by their parsers,
/// every other value by the option grammar (a path's commas, which only the whole option string
/// cannot hold, by [`AgentFlags::options`]).
fn canonical(key: &str, s: &str) -> Result<String, String> {
    match key {
        "mode" => parse_mode(s).map(|m| m.name().to_owned()),
        "root" | "region" => parse_root(s).map(|p| p.to_string()),
        "include" | "exclude" => parse_class(s).map(|p| p.to_string()),
        "alloc-class" => s
            .parse::<ferrofluid_protocol::AllocClassPattern>()
            .map(|p| p.to_string())
            .map_err(|e| e.kind.to_string()),
        "scheme" => s
            .parse::<Scheme>()
            .map(|x| x.name().to_owned())
            .map_err(|e| e.to_string()),
        "reveal" => parse_reveal(s).map(|r| r.name().to_owned()),
        "duration" => parse_duration(s).map(ferrofluid_protocol::format_duration),
        "push" => crate::push::parse_endpoint(s).map(|_| s.to_owned()),
        "every" => crate::push::parse_every(s).map(ferrofluid_protocol::format_duration),
        "label" => ferrofluid_protocol::push::parse_label(s)
            .map(|_| s.to_owned())
            .map_err(|e| e.to_string()),
        _ => match AgentOptions::from_pairs([(key, s)]) {
            Ok(_) => Ok(s.to_owned()),
            Err(OptionsError::BadValue { reason, .. }) => Err(reason),
            Err(e) => Err(e.to_string()),
        },
    }
}

fn parse_root(s: &str) -> Result<MethodPattern, String> {
    s.parse()
        .map_err(|e: ferrofluid_protocol::PatternError| e.kind.to_string())
}

fn parse_class(s: &str) -> Result<ClassPattern, String> {
    s.parse()
        .map_err(|e: ferrofluid_protocol::PatternError| e.kind.to_string())
}

fn parse_mode(s: &str) -> Result<ProfileMode, String> {
    s.parse()
        .map_err(|e: ferrofluid_profile::UnknownMode| e.to_string())
}

fn parse_reveal(s: &str) -> Result<Reveal, String> {
    s.parse()
}

/// A positive duration with its unit, as the option grammar reads `duration=` (and says why
/// not, in its words).
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    match AgentOptions::from_pairs([("duration", s)]) {
        Ok(options) => options
            .duration
            .ok_or_else(|| "expected a duration".to_owned()),
        Err(OptionsError::BadValue { reason, .. }) => Err(reason),
        Err(e) => Err(e.to_string()),
    }
}

/// Why agent flags were refused: one line.
#[derive(Debug, thiserror::Error)]
pub enum FlagsError {
    #[error(transparent)]
    Options(#[from] ferrofluid_protocol::OptionsError),
    #[error("{}", ferrofluid_protocol::mode_unavailable(*.0))]
    Unavailable(ProfileMode),
}

impl AgentFlags {
    /// The options these flags stand for, checked to survive the trip through the option string
    /// and to name a mode the agent has.
    pub fn options(&self) -> Result<AgentOptions, FlagsError> {
        self.options_timed(Timing::Probes)
    }

    /// [`AgentFlags::options`], with `timing` for a `cpu` session whose flags name no timing
    /// and no option of per-call timing (`--cpu`, `--adaptive`).
    pub fn options_timed(&self, timing: Timing) -> Result<AgentOptions, FlagsError> {
        let mut options =
            AgentOptions::from_pairs(self.given.iter().map(|(key, v)| (*key, v.as_str())))?;
        if options.mode() == ProfileMode::Cpu
            && self.timing.is_none()
            && !options.cpu
            && !options.adaptive
        {
            options.timing = timing;
        }
        // Where sampled timing is the default (attach), so is recording a share of the roots'
        // invocations when recording all of them costs the program much.
        if timing == Timing::Sampled
            && options.timing == Timing::Sampled
            && options.record.is_none()
            && !options.roots.is_empty()
        {
            options.record = Some(ferrofluid_protocol::Record::Auto);
        }
        options.validate()?;
        if !ferrofluid_protocol::AGENT_MODES.contains(&options.mode()) {
            return Err(FlagsError::Unavailable(options.mode()));
        }
        Ok(options)
    }

    /// The agent library to load, which must exist.
    pub fn agent_library(&self) -> Result<PathBuf, String> {
        let path = match &self.agent {
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .map_err(|e| format!("cannot locate the ferrofluid executable: {e}"))?
                .with_file_name("libferrofluid_agent.so"),
        };
        let path = std::path::absolute(&path).unwrap_or(path);
        if !path.is_file() {
            return Err(format!(
                "agent library {} not found (build it with `cargo build -p ferrofluid-agent` or pass --agent)",
                path.display()
            ));
        }
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        flags: AgentFlags,
    }

    fn options(argv: &[&str]) -> Result<String, String> {
        let w = Wrapper::try_parse_from(std::iter::once("t").chain(argv.iter().copied()))
            .map_err(|e| e.to_string().lines().next().unwrap_or_default().to_owned())?;
        w.flags
            .options()
            .map(|o| o.to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn flags_translate_into_the_one_option_grammar() {
        let cases: &[(&[&str], &str)] = &[
            (&[], ""),
            (&["--scheme", "lazy"], ""),
            (
                &[
                    "--root",
                    "com.acme.Foo::bar",
                    "--root",
                    "A::*",
                    "--scheme",
                    "total",
                    "--duration",
                    "90s",
                    "--file",
                    "out.json",
                ],
                "root=com.acme.Foo::bar,root=A::*,scheme=total,file=out.json,duration=90s",
            ),
            (
                &["--log", "/tmp/a.log", "--socket", "/tmp/ff/s"],
                "log=/tmp/a.log,socket=/tmp/ff/s",
            ),
            (
                &[
                    "--exclude",
                    "java.**",
                    "--include",
                    "com/acme/**",
                    "--root",
                    "*::main",
                ],
                "root=*::main,include=com.acme.**,exclude=java.**",
            ),
            (
                &["--region", "demo.Work::step", "--region-last", "5"],
                "region=demo.Work::step,region-last=5",
            ),
            (
                &["--region", "demo.Work::step", "--region-last", "0"],
                "region=demo.Work::step,region-last=0",
            ),
            (
                &["--mode", "alloc", "--track-every", "0"],
                "mode=alloc,track-every=0",
            ),
            (
                &[
                    "--label",
                    "env=prod",
                    "--push",
                    "http://pyroscope:4040/ingest",
                    "--every",
                    "120s",
                    "--label",
                    "service_name=billing",
                ],
                "push=http://pyroscope:4040/ingest,every=2m,label=env=prod,label=service_name=billing",
            ),
        ];
        for (argv, expected) in cases {
            assert_eq!(options(argv).as_deref(), Ok(*expected), "{argv:?}");
        }
    }

    #[test]
    fn bad_push_flags_are_one_line_errors() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["--push", "http://pyroscope:4040/"],
                "error: invalid value 'http://pyroscope:4040/' for '--push <URL>': the path names no backend; expected one ending in /ingest or /push.v1.PusherService/Push (Pyroscope), /profiles/writeraw or /parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw (Parca), /v1development/profiles (OpenTelemetry)",
            ),
            (
                &["--push", "http://p/ingest", "--every", "500ms"],
                "error: invalid value '500ms' for '--every <DURATION>': at least 1s",
            ),
            (
                &["--push", "http://p/ingest", "--label", "a b=c"],
                "error: invalid value 'a b=c' for '--label <KEY=VALUE>': label name `a b`: expected letters, digits and `_`, not starting with a digit or `__`",
            ),
            (&["--every", "10s"], "agent option `every` needs `push`"),
            (&["--label", "env=prod"], "agent option `label` needs `push`"),
        ];
        for (argv, expected) in cases {
            assert_eq!(options(argv).unwrap_err(), *expected, "{argv:?}");
        }
    }

    #[test]
    fn bad_flags_are_one_line_errors() {
        let cases = [
            (["--scheme", "fast"], "error: invalid value 'fast' for '--scheme <SCHEME>': unknown scheme `fast` (expected lazy, eager or total)"),
            (["--duration", "30"], "error: invalid value '30' for '--duration <DURATION>': expected a positive whole number with unit ms, s, m or h (e.g. 30s)"),
            (["--root", "Foo.bar"], "error: invalid value 'Foo.bar' for '--root <METHOD>': expected CLASS::METHOD (e.g. com.acme.Report::render)"),
            (["--exclude", "java..lang"], "error: invalid value 'java..lang' for '--exclude <CLASSES>': empty package or class name between separators"),
        ];
        for (argv, message) in cases {
            assert_eq!(options(&argv), Err(message.to_owned()));
        }
        assert_eq!(
            options(&["--root", "A::b", "--region", "C::d"]),
            Err("agent options `root` and `region` exclude each other: `region` measures only its own methods, `root` profiles a call subgraph".into())
        );
        assert_eq!(
            options(&["--region-last", "3"]),
            Err("agent option `region-last` needs `region`".into())
        );
        assert_eq!(
            options(&["--file", "a,b.json"]),
            Err("bad value `a,b.json` for agent option `file`: expected a non-empty path without commas".into())
        );
    }

    #[test]
    fn mode_is_one_flag_and_options_outside_the_mode_are_refused() {
        assert_eq!(
            options(&["--mode", "cpu", "--root", "A::b"]).as_deref(),
            Ok("mode=cpu,root=A::b")
        );
        assert_eq!(
            options(&["--mode", "region", "--region", "demo.Work::step"]).as_deref(),
            Ok("mode=region,region=demo.Work::step")
        );
        // `--region P` is short for `--mode region` with P.
        assert_eq!(
            options(&["--region", "demo.Work::step"]).as_deref(),
            Ok("region=demo.Work::step")
        );
        assert_eq!(options(&["--mode", "native"]).as_deref(), Ok("mode=native"));
        assert_eq!(
            options(&["--mode", "count", "--root", "A::f", "--blocks", "precise"]).as_deref(),
            Ok("mode=count,root=A::f,blocks=precise")
        );
        assert_eq!(
            options(&["--mode", "cpu", "--blocks", "precise"]),
            Err("agent option `blocks` does not apply to mode cpu; mode cpu takes root, include, exclude, scheme, cpu, skip-trivial, adaptive, reveal, timing, record, interval, wall, instrument-inlined".into())
        );
        assert_eq!(
            options(&["--mode", "heap"]),
            Err("error: invalid value 'heap' for '--mode <MODE>': unknown mode `heap` (expected one of cpu, region, alloc, count, native, sample)".into())
        );
        assert_eq!(
            options(&["--mode", "cpu", "--region", "A::b"]),
            Err("agent option `region` does not apply to mode cpu; mode cpu takes root, include, exclude, scheme, cpu, skip-trivial, adaptive, reveal, timing, record, interval, wall, instrument-inlined".into())
        );
        assert_eq!(
            options(&["--mode", "region", "--region", "A::b", "--cpu"]),
            Err("agent options `cpu` and `region` exclude each other: code-region mode measures wall time only".into())
        );
    }

    /// Every agent option whose value is a number or a duration is in [`NUMERIC_OPTIONS`]: a
    /// value the grammar takes as `5` or `5s` marks it.
    #[test]
    fn every_numeric_option_is_known_as_one() {
        for o in OPTIONS.iter().filter(|o| o.takes != Takes::Flag) {
            let numeric = ["5", "5s"]
                .iter()
                .any(|v| AgentOptions::from_pairs([(o.key, *v)]).is_ok())
                && AgentOptions::from_pairs([(o.key, "x")]).is_err();
            assert_eq!(numeric, NUMERIC_OPTIONS.contains(&o.key), "{}", o.key);
        }
    }
}
