//! Continuous profiling's options (`push=URL`, `every=`, `label=KEY=VALUE`) and the label
//! grammar the backends share, for the agent (a JVM started with `-agentpath:…=push=URL`
//! pushes from the agent's own thread) and for `ferrofluid attach --push` (which pushes from
//! its own process). docs/push.md.
//!
//! Label names follow Prometheus' label syntax (`[a-zA-Z_][a-zA-Z0-9_]*`, none starting with
//! `__`, which the backends reserve), the one all three backends accept. Values are any text
//! without `{`, `}`, `,`, `=` or control characters and without surrounding spaces: Pyroscope's
//! `/ingest` carries labels in its `name=service{k=v,...}` query parameter, where those
//! characters cannot be escaped. The service name is stricter still (Pyroscope's service
//! names: letters, digits, `_`, `.`, `-`, `/`).

use std::time::Duration;

/// How often by default.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(60);
/// The shortest interval accepted.
pub const MIN_EVERY: Duration = Duration::from_secs(1);

/// The service name label.
pub const SERVICE_NAME: &str = "service_name";
/// The label a push carries after profiles had to be dropped: how many since the last push
/// that arrived. ferrofluid's own: a user may not set it.
pub const DROPPED: &str = "dropped_profiles";

/// Where and how often to push, with the user's labels.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushOptions {
    /// The backend's URL (`push=`): `http://` or `https://`; its path names the backend
    /// (checked by `ferrofluid_push::Endpoint`).
    pub url: Option<String>,
    /// How often (`every=`; default [`DEFAULT_EVERY`], at least [`MIN_EVERY`]).
    pub every: Option<Duration>,
    /// The user's labels (`label=KEY=VALUE`, repeatable), in the order given.
    pub labels: Vec<(String, String)>,
}

impl PushOptions {
    /// How often to push.
    pub fn every(&self) -> Duration {
        self.every.unwrap_or(DEFAULT_EVERY)
    }
}

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

/// `KEY=VALUE`, checked.
pub fn parse_label(s: &str) -> Result<(String, String), LabelError> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| LabelError::NotAPair(s.into()))?;
    check_label(k, v)?;
    Ok((k.into(), v.into()))
}

/// Whether `name=value` is a label a user may set.
pub fn check_label(name: &str, value: &str) -> Result<(), LabelError> {
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok
        || name.starts_with("__")
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(LabelError::BadName(name.into()));
    }
    if name == DROPPED {
        return Err(LabelError::Reserved(name.into()));
    }
    if value.trim() != value || value.chars().any(forbidden_in_value) {
        return Err(LabelError::BadValue {
            name: name.into(),
            value: value.into(),
        });
    }
    if name == SERVICE_NAME && !value.chars().all(service_char) {
        return Err(LabelError::BadService(value.into()));
    }
    Ok(())
}

/// A character no label value may hold.
pub fn forbidden_in_value(c: char) -> bool {
    matches!(c, '{' | '}' | ',' | '=') || c.is_control()
}

/// A character a service name may hold.
pub fn service_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/')
}

/// Why `push=` was refused: the grammar checks the scheme; the backend's path is checked by
/// whoever pushes (the CLI before the JVM is touched, the agent at load).
pub(crate) fn check_url(url: &str) -> Result<(), &'static str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or("expected an http:// or https:// URL")?;
    if rest.is_empty() || url.chars().any(|c| c.is_whitespace() || c == ',') {
        return Err("expected an http:// or https:// URL without spaces or commas");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_labels_are_one_line_errors() {
        let err = |s: &str| parse_label(s).unwrap_err().to_string();
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
        assert_eq!(parse_label("region=eu-west 1").unwrap().1, "eu-west 1");
        assert_eq!(parse_label("empty=").unwrap().1, "");
    }

    #[test]
    fn urls_need_a_scheme_and_no_separator() {
        assert_eq!(check_url("http://p:4040/ingest"), Ok(()));
        assert_eq!(check_url("https://p/v1development/profiles"), Ok(()));
        assert!(check_url("p:4040/ingest").is_err());
        assert!(check_url("http://").is_err());
        assert!(check_url("http://a b/ingest").is_err());
    }
}
