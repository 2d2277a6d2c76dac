//! The labels every pushed profile carries: what a backend's queries select series by.
//!
//! `service_name` (the program: by default its main class or jar), `host` (the machine),
//! `pid` (the JVM's process id), `mode` (the profiling mode), and the user's own `k=v`
//! pairs, which may also replace the first four. After a push had to drop profiles, the
//! next one adds `dropped_profiles=N` ([`DROPPED`]).
//!
//! The label grammar (names, values, the service name's characters) is the option grammar's,
//! [`ferrofluid_protocol::push`], so that `label=` in an agent option string and `--label`
//! are checked alike.

use std::fmt;

use ferrofluid_protocol::push::{check_label, forbidden_in_value, service_char};
pub use ferrofluid_protocol::push::{parse_label as parse_pair, LabelError, DROPPED, SERVICE_NAME};

/// The host label.
pub const HOST: &str = "host";
/// The process id label.
pub const PID: &str = "pid";
/// The profiling mode label.
pub const MODE: &str = "mode";

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
        check_label(name, value)?;
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

/// A value made acceptable: forbidden characters become `_`, surrounding spaces go.
fn sanitize_value(value: &str) -> String {
    value
        .trim()
        .chars()
        .map(|c| if forbidden_in_value(c) { '_' } else { c })
        .collect()
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
}
