//! The labels every pushed profile carries: what a backend's queries select series by.
//!
//! `service_name` (the program: by default its main class or jar), `host` (the machine),
//! `pid` (the JVM's process id), `mode` (the profiling mode), and the user's own `k=v`
//! pairs, which may also replace the first four. After a push had to drop profiles, the
//! next one adds `dropped_profiles=N` ([`DROPPED`]).
//!
//! Names follow Prometheus' label syntax (`[a-zA-Z_][a-zA-Z0-9_]*`, none starting with `__`,
//! which the backends reserve), the one all three backends accept. Values are any text
//! without `{`, `}`, `,`, `=` or control characters and without surrounding spaces: Pyroscope's
//! `/ingest` carries labels in its `name=service{k=v,...}` query parameter, where those
//! characters cannot be escaped. The service name is stricter still (Pyroscope's service
//! names: letters, digits, `_`, `.`, `-`, `/`).

use std::fmt;

/// The service name label.
pub const SERVICE_NAME: &str = "service_name";
/// The host label.
pub const HOST: &str = "host";
/// The process id label.
pub const PID: &str = "pid";
/// The profiling mode label.
pub const MODE: &str = "mode";
/// The label a push carries after profiles had to be dropped: how many since the last push
/// that arrived.
pub const DROPPED: &str = "dropped_profiles";

/// Why a label was refused: one line saying what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// Not `KEY=VALUE`.
    #[error("label `{0}`: expected KEY=VALUE (e.g. env=prod)")]
    NotAPair(String),
    /// A name outside Prometheus' label syntax, or a reserved one.
    #[error(
        "label name `{0}`: expected letters, digits and `_`, not starting with a digit or `__`"
    )]
    BadName(String),
    /// [`DROPPED`] is ferrofluid's to set.
    #[error("label name `{0}` is set by ferrofluid itself")]
    Reserved(String),
    /// A value a backend could not carry.
    #[error("label {name}: value `{value}` may not contain `{{`, `}}`, `,`, `=` or control characters, nor start or end with a space")]
    BadValue {
        /// The label.
        name: String,
        /// Its value.
        value: String,
    },
    /// A service name outside Pyroscope's service-name characters.
    #[error("service name `{0}`: expected letters, digits, `_`, `.`, `-` and `/`")]
    BadService(String),
}

/// An ordered set of labels, each name once: `service_name`, `host`, `pid`, `mode` first, then
/// the user's in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labels {
    pairs: Vec<(String, String)>,
}

impl Labels {
    /// The four standard labels. `service` is made a valid service name ([`service_name`]).
    pub fn new(service: &str, host: &str, pid: u32, mode: &str) -> Labels {
        let host = sanitize_value(host);
        Labels {
            pairs: vec![
                (SERVICE_NAME.into(), service_name(service)),
                (
                    HOST.into(),
                    if host.is_empty() {
                        "unknown".into()
                    } else {
                        host
                    },
                ),
                (PID.into(), pid.to_string()),
                (MODE.into(), mode.into()),
            ],
        }
    }

    /// Adds or replaces the label `name` (checked).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), LabelError> {
        check_name(name)?;
        if name == DROPPED {
            return Err(LabelError::Reserved(name.into()));
        }
        check_value(name, value)?;
        if name == SERVICE_NAME && !value.chars().all(service_char) {
            return Err(LabelError::BadService(value.into()));
        }
        match self.pairs.iter_mut().find(|(k, _)| k == name) {
            Some(pair) => pair.1 = value.into(),
            None => self.pairs.push((name.into(), value.into())),
        }
        Ok(())
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The service name.
    pub fn service(&self) -> &str {
        self.get(SERVICE_NAME).unwrap_or("java")
    }

    /// The labels in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// These labels with [`DROPPED`] added when `dropped` is not 0.
    pub fn with_dropped(&self, dropped: u64) -> Labels {
        let mut out = self.clone();
        if dropped > 0 {
            out.pairs.push((DROPPED.into(), dropped.to_string()));
        }
        out
    }
}

impl fmt::Display for Labels {
    /// `service{k=v,...}`, as Pyroscope's `/ingest` takes it (`service_name` is the part
    /// before the braces).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{{", self.service())?;
        let mut first = true;
        for (k, v) in self.iter().filter(|(k, _)| *k != SERVICE_NAME) {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            write!(f, "{k}={v}")?;
        }
        f.write_str("}")
    }
}

/// `KEY=VALUE` of a `--label` flag, checked.
pub fn parse_pair(s: &str) -> Result<(String, String), LabelError> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| LabelError::NotAPair(s.into()))?;
    check_name(k)?;
    if k == DROPPED {
        return Err(LabelError::Reserved(k.into()));
    }
    check_value(k, v)?;
    if k == SERVICE_NAME && !v.chars().all(service_char) {
        return Err(LabelError::BadService(v.into()));
    }
    Ok((k.into(), v.into()))
}

/// The service name of a JVM launched with `main` (a main class, or the path of the jar it
/// ran with `-jar`): the class's name, or the jar's file name without `.jar`; characters a
/// service name may not have become `_`. `java` when nothing is known.
pub fn service_name(main: &str) -> String {
    let main = main.trim();
    let base = if main.ends_with(".jar") || main.contains('/') {
        let file = main.rsplit('/').next().unwrap_or(main);
        file.strip_suffix(".jar").unwrap_or(file)
    } else {
        main
    };
    let name: String = base
        .chars()
        .map(|c| if service_char(c) { c } else { '_' })
        .collect();
    if name.is_empty() {
        "java".into()
    } else {
        name
    }
}

/// This machine's host name (`/proc/sys/kernel/hostname`), `unknown` if it cannot be read.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

fn check_name(name: &str) -> Result<(), LabelError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok
        || name.starts_with("__")
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(LabelError::BadName(name.into()));
    }
    Ok(())
}

fn check_value(name: &str, value: &str) -> Result<(), LabelError> {
    let bad = value.trim() != value
        || value
            .chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '=') || c.is_control());
    if bad {
        return Err(LabelError::BadValue {
            name: name.into(),
            value: value.into(),
        });
    }
    Ok(())
}

/// A value made acceptable: forbidden characters become `_`, surrounding spaces go.
fn sanitize_value(value: &str) -> String {
    value
        .trim()
        .chars()
        .map(|c| {
            if matches!(c, '{' | '}' | ',' | '=') || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

fn service_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_names_come_from_the_main_class_or_jar() {
        for (main, service) in [
            ("com.acme.Main", "com.acme.Main"),
            ("/opt/app/billing-2.1.jar", "billing-2.1"),
            ("app.jar", "app"),
            ("demo.Outer$Inner", "demo.Outer_Inner"),
            ("", "java"),
        ] {
            assert_eq!(service_name(main), service, "{main}");
        }
    }

    #[test]
    fn labels_print_as_pyroscope_ingest_names_them() {
        let mut l = Labels::new("com.acme.Main", "web-1", 4242, "cpu");
        l.set("env", "prod").unwrap();
        l.set("host", "web-2").unwrap();
        assert_eq!(
            l.to_string(),
            "com.acme.Main{host=web-2,pid=4242,mode=cpu,env=prod}"
        );
        assert_eq!(
            l.with_dropped(3).to_string(),
            "com.acme.Main{host=web-2,pid=4242,mode=cpu,env=prod,dropped_profiles=3}"
        );
        assert_eq!(l.with_dropped(0), l);
    }

    #[test]
    fn bad_labels_are_one_line_errors() {
        let err = |s: &str| parse_pair(s).unwrap_err().to_string();
        assert_eq!(
            err("env"),
            "label `env`: expected KEY=VALUE (e.g. env=prod)"
        );
        assert_eq!(
            err("9x=1"),
            "label name `9x`: expected letters, digits and `_`, not starting with a digit or `__`"
        );
        assert_eq!(
            err("__name__=x"),
            "label name `__name__`: expected letters, digits and `_`, not starting with a digit or `__`"
        );
        assert_eq!(
            err("k.v=1"),
            "label name `k.v`: expected letters, digits and `_`, not starting with a digit or `__`"
        );
        assert_eq!(
            err("env=a,b"),
            "label env: value `a,b` may not contain `{`, `}`, `,`, `=` or control characters, nor start or end with a space"
        );
        assert_eq!(
            err("dropped_profiles=1"),
            "label name `dropped_profiles` is set by ferrofluid itself"
        );
        assert_eq!(
            err("service_name=my app"),
            "service name `my app`: expected letters, digits, `_`, `.`, `-` and `/`"
        );
        assert_eq!(parse_pair("region=eu-west 1").unwrap().1, "eu-west 1");
        assert_eq!(parse_pair("empty=").unwrap().1, "");
    }
}
