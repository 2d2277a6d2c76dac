//! The agent option string: comma-separated `key=value` pairs (see `docs/agent-options.md`).
//!
//! `FromStr` and `Display` are inverse: `s.parse::<AgentOptions>()?.to_string()` is the canonical form of
//! `s`, and parsing a canonical form gives back the same value. Values can therefore contain neither `,`
//! nor a leading/trailing space; paths with commas are rejected with an error saying so.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::duration::{format_duration, parse_duration};

/// Every accepted key, in the canonical order `Display` writes them.
pub const KEYS: &[&str] = &["root", "scheme", "file", "duration", "log", "socket"];

/// Parsed agent options. `Default` is the empty option string: no roots (nothing instrumented until the
/// tool asks), lazy scheme, no output file, no time limit, default log and socket locations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentOptions {
    /// Root methods of the profiled call subgraph (`root=` may be given several times). If any is given
    /// the agent starts instrumenting at load.
    pub roots: Vec<MethodPattern>,
    /// How the call subgraph under the roots is instrumented.
    pub scheme: Scheme,
    /// Where the agent writes the profile when profiling stops (JSON).
    pub file: Option<PathBuf>,
    /// Stop profiling this long after it started.
    pub duration: Option<Duration>,
    /// The agent's log file (default: `agent.log` in the agent's private directory).
    pub log: Option<PathBuf>,
    /// Path of the control socket (default: `control.sock` in a fresh private directory under /tmp).
    pub socket: Option<PathBuf>,
}

/// JFluid's instrumentation schemes for the call subgraph of the roots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// Instrument a method when it is first reached from a root (JFluid's default).
    #[default]
    Lazy,
    /// Instrument everything statically reachable from the roots up front.
    Eager,
    /// Instrument every method of every loaded class.
    Total,
}

impl Scheme {
    pub const NAMES: &'static [&'static str] = &["lazy", "eager", "total"];

    pub fn name(self) -> &'static str {
        match self {
            Scheme::Lazy => "lazy",
            Scheme::Eager => "eager",
            Scheme::Total => "total",
        }
    }
}

impl FromStr for Scheme {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "lazy" => Ok(Scheme::Lazy),
            "eager" => Ok(Scheme::Eager),
            "total" => Ok(Scheme::Total),
            _ => Err(()),
        }
    }
}

/// A method selected by class (binary name, dots) and method name, optionally narrowed by descriptor:
/// `com.acme.Foo::bar`, `com.acme.Foo::bar(I)V`, `com.acme.Foo::*` (every method of the class).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MethodPattern {
    pub class: String,
    /// A method name, `<init>`, or `*`.
    pub method: String,
    pub descriptor: Option<String>,
}

impl MethodPattern {
    /// Whether this pattern selects the method `name` with `descriptor` of class `class` (binary name
    /// with dots).
    pub fn matches(&self, class: &str, name: &str, descriptor: &str) -> bool {
        self.class == class
            && (self.method == "*" || self.method == name)
            && self.descriptor.as_deref().is_none_or(|d| d == descriptor)
    }
}

impl FromStr for MethodPattern {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        let (class, rest) = s.split_once("::").ok_or(())?;
        let (method, descriptor) = match rest.find('(') {
            Some(i) => (&rest[..i], Some(&rest[i..])),
            None => (rest, None),
        };
        let identifier = |p: &str| {
            !p.is_empty()
                && !p.starts_with(|c: char| c.is_ascii_digit())
                && p.chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        };
        let class_ok = class.split('.').all(identifier);
        let method_ok =
            method == "*" || method == "<init>" || method == "<clinit>" || identifier(method);
        let descriptor_ok = descriptor.is_none_or(|d| {
            d.len() >= 3 && d.contains(')') && !d.contains(|c: char| c.is_whitespace() || c == '.')
        });
        if !(class_ok && method_ok && descriptor_ok) {
            return Err(());
        }
        Ok(MethodPattern {
            class: class.to_owned(),
            method: method.to_owned(),
            descriptor: descriptor.map(str::to_owned),
        })
    }
}

impl fmt::Display for MethodPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}::{}{}",
            self.class,
            self.method,
            self.descriptor.as_deref().unwrap_or("")
        )
    }
}

/// Why an option string was rejected. Messages name the key and what it accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    #[error("unknown agent option `{key}`{}; accepted: {}", suggestion(.key), KEYS.join(", "))]
    UnknownKey { key: String },
    #[error("agent option `{key}` needs a value: `{key}=...`")]
    MissingValue { key: String },
    #[error("bad value `{value}` for agent option `{key}`: expected {expected}")]
    BadValue {
        key: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("agent option `{key}` given twice")]
    Duplicate { key: &'static str },
}

/// What each key accepts, for error messages (and the documentation).
fn expected(key: &str) -> &'static str {
    match key {
        "root" => "a method `package.Class::method`, `package.Class::method(descriptor)` or `package.Class::*`",
        "scheme" => "one of lazy, eager, total",
        "duration" => "a positive whole number with unit ms, s, m or h (e.g. 30s)",
        _ => "a non-empty path without commas",
    }
}

/// ` (did you mean `scheme`?)` for a key within two edits of an accepted one.
fn suggestion(key: &str) -> String {
    KEYS.iter()
        .map(|k| (edit_distance(key, k), k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

impl FromStr for AgentOptions {
    type Err = OptionsError;

    fn from_str(s: &str) -> Result<Self, OptionsError> {
        let mut opts = AgentOptions::default();
        let mut seen_scheme = false;
        // The JVM passes NULL or "" for no options; stray empty items (`a=1,,b=2`) are tolerated.
        for item in s.split(',').filter(|i| !i.is_empty()) {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            let key: &'static str = KEYS.iter().find(|k| **k == key).copied().ok_or_else(|| {
                OptionsError::UnknownKey {
                    key: key.to_owned(),
                }
            })?;
            if value.is_empty() {
                return Err(OptionsError::MissingValue {
                    key: key.to_owned(),
                });
            }
            let bad = || OptionsError::BadValue {
                key,
                value: value.to_owned(),
                expected: expected(key),
            };
            let path = |slot: &mut Option<PathBuf>| {
                if slot.is_some() {
                    return Err(OptionsError::Duplicate { key });
                }
                if value.trim() != value {
                    return Err(bad());
                }
                *slot = Some(PathBuf::from(value));
                Ok(())
            };
            match key {
                "root" => opts.roots.push(value.parse().map_err(|()| bad())?),
                "scheme" => {
                    if std::mem::replace(&mut seen_scheme, true) {
                        return Err(OptionsError::Duplicate { key });
                    }
                    opts.scheme = value.parse().map_err(|()| bad())?;
                }
                "duration" => {
                    if opts.duration.is_some() {
                        return Err(OptionsError::Duplicate { key });
                    }
                    opts.duration = Some(parse_duration(value).ok_or_else(bad)?);
                }
                "file" => path(&mut opts.file)?,
                "log" => path(&mut opts.log)?,
                "socket" => path(&mut opts.socket)?,
                _ => unreachable!("every key of KEYS is handled"),
            }
        }
        Ok(opts)
    }
}

impl fmt::Display for AgentOptions {
    /// The canonical form: keys in [`KEYS`] order, defaults omitted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut items: Vec<String> = self.roots.iter().map(|r| format!("root={r}")).collect();
        if self.scheme != Scheme::default() {
            items.push(format!("scheme={}", self.scheme.name()));
        }
        if let Some(p) = &self.file {
            items.push(format!("file={}", p.display()));
        }
        if let Some(d) = self.duration {
            items.push(format!("duration={}", format_duration(d)));
        }
        if let Some(p) = &self.log {
            items.push(format!("log={}", p.display()));
        }
        if let Some(p) = &self.socket {
            items.push(format!("socket={}", p.display()));
        }
        f.write_str(&items.join(","))
    }
}

impl AgentOptions {
    /// Checks that `Display` will round-trip: paths must be valid UTF-8 without commas or edge spaces.
    /// The CLI calls this before building an option string from user-supplied paths.
    pub fn validate(&self) -> Result<(), OptionsError> {
        let check = |key: &'static str, p: &Option<PathBuf>| match p {
            Some(p) => match p.to_str() {
                Some(s) if !s.is_empty() && !s.contains(',') && s.trim() == s => Ok(()),
                _ => Err(OptionsError::BadValue {
                    key,
                    value: p.display().to_string(),
                    expected: expected(key),
                }),
            },
            None => Ok(()),
        };
        check("file", &self.file)?;
        check("log", &self.log)?;
        check("socket", &self.socket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(class: &str, method: &str, descriptor: Option<&str>) -> MethodPattern {
        MethodPattern {
            class: class.into(),
            method: method.into(),
            descriptor: descriptor.map(Into::into),
        }
    }

    /// (input, parsed value, canonical form)
    fn valid_cases() -> Vec<(&'static str, AgentOptions, &'static str)> {
        let d = AgentOptions::default;
        vec![
            ("", d(), ""),
            (",,", d(), ""),
            ("scheme=lazy", d(), ""),
            (
                "root=com.acme.Foo::bar,scheme=eager,file=out.json,duration=30s,log=/tmp/x.log,socket=/tmp/ff/s",
                AgentOptions {
                    roots: vec![root("com.acme.Foo", "bar", None)],
                    scheme: Scheme::Eager,
                    file: Some("out.json".into()),
                    duration: Some(Duration::from_secs(30)),
                    log: Some("/tmp/x.log".into()),
                    socket: Some("/tmp/ff/s".into()),
                },
                "root=com.acme.Foo::bar,scheme=eager,file=out.json,duration=30s,log=/tmp/x.log,socket=/tmp/ff/s",
            ),
            (
                "socket=/s,root=A::*,root=p.B$Inner::<init>(ILjava/lang/String;)V,scheme=total,duration=1500ms",
                AgentOptions {
                    roots: vec![root("A", "*", None), root("p.B$Inner", "<init>", Some("(ILjava/lang/String;)V"))],
                    scheme: Scheme::Total,
                    duration: Some(Duration::from_millis(1500)),
                    socket: Some("/s".into()),
                    ..d()
                },
                "root=A::*,root=p.B$Inner::<init>(ILjava/lang/String;)V,scheme=total,duration=1500ms,socket=/s",
            ),
            ("duration=120s", AgentOptions { duration: Some(Duration::from_secs(120)), ..d() }, "duration=2m"),
        ]
    }

    #[test]
    fn parses_and_prints_canonically() {
        for (input, value, canonical) in valid_cases() {
            let parsed: AgentOptions = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(parsed, value, "{input}");
            assert_eq!(parsed.to_string(), canonical, "{input}");
            assert_eq!(
                canonical.parse::<AgentOptions>().unwrap(),
                value,
                "canonical form round-trips"
            );
            assert_eq!(value.validate(), Ok(()));
        }
    }

    #[test]
    fn errors_name_the_key_and_accepted_values() {
        let cases = [
            ("sceme=lazy", "unknown agent option `sceme` (did you mean `scheme`?); accepted: root, scheme, file, duration, log, socket"),
            ("verbose", "unknown agent option `verbose`; accepted: root, scheme, file, duration, log, socket"),
            ("file=", "agent option `file` needs a value: `file=...`"),
            ("root", "agent option `root` needs a value: `root=...`"),
            ("scheme=fast", "bad value `fast` for agent option `scheme`: expected one of lazy, eager, total"),
            ("duration=30", "bad value `30` for agent option `duration`: expected a positive whole number with unit ms, s, m or h (e.g. 30s)"),
            ("root=com.acme.Foo.bar", "bad value `com.acme.Foo.bar` for agent option `root`: expected a method `package.Class::method`, `package.Class::method(descriptor)` or `package.Class::*`"),
            ("root=com/acme/Foo::bar", "bad value `com/acme/Foo::bar` for agent option `root`: expected a method `package.Class::method`, `package.Class::method(descriptor)` or `package.Class::*`"),
            ("root=Foo::bar(I", "bad value `Foo::bar(I` for agent option `root`: expected a method `package.Class::method`, `package.Class::method(descriptor)` or `package.Class::*`"),
            ("file= out.json", "bad value ` out.json` for agent option `file`: expected a non-empty path without commas"),
            ("file=a,file=b", "agent option `file` given twice"),
            ("scheme=lazy,scheme=eager", "agent option `scheme` given twice"),
            ("duration=1s,duration=2s", "agent option `duration` given twice"),
        ];
        for (input, message) in cases {
            let err = input.parse::<AgentOptions>().unwrap_err();
            assert_eq!(err.to_string(), message, "{input}");
        }
    }

    #[test]
    fn validate_rejects_paths_that_would_not_round_trip() {
        let opts = AgentOptions {
            file: Some("a,b.json".into()),
            ..Default::default()
        };
        assert_eq!(
            opts.validate().unwrap_err().to_string(),
            "bad value `a,b.json` for agent option `file`: expected a non-empty path without commas"
        );
    }

    #[test]
    fn patterns_match_methods() {
        let any = root("com.acme.Foo", "*", None);
        let exact = root("com.acme.Foo", "bar", Some("(I)V"));
        assert!(any.matches("com.acme.Foo", "baz", "()V"));
        assert!(!any.matches("com.acme.Fo", "baz", "()V"));
        assert!(exact.matches("com.acme.Foo", "bar", "(I)V"));
        assert!(!exact.matches("com.acme.Foo", "bar", "(J)V"));
    }
}
