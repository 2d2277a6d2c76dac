//! Credentials for the backend, read from the environment only: a command line is visible to
//! every user of the machine (`ps`), an environment is not.
//!
//! | variable | header |
//! |---|---|
//! | `FERROFLUID_PUSH_AUTHORIZATION` | `Authorization: <value as given>` |
//! | `FERROFLUID_PUSH_BASIC_AUTH` (`user:password`) | `Authorization: Basic <base64>` |
//! | `FERROFLUID_PUSH_BEARER_TOKEN` | `Authorization: Bearer <token>` |
//! | `FERROFLUID_PUSH_TENANT` | `X-Scope-OrgID: <tenant>` (Pyroscope's and Grafana Cloud's tenant) |
//!
//! At most one of the three `Authorization` variables may be set.

use std::fmt;

use base64::Engine;

/// `Authorization` as given.
pub const ENV_AUTHORIZATION: &str = "FERROFLUID_PUSH_AUTHORIZATION";
/// `user:password` for HTTP basic authentication.
pub const ENV_BASIC_AUTH: &str = "FERROFLUID_PUSH_BASIC_AUTH";
/// A bearer token.
pub const ENV_BEARER_TOKEN: &str = "FERROFLUID_PUSH_BEARER_TOKEN";
/// The tenant (`X-Scope-OrgID`).
pub const ENV_TENANT: &str = "FERROFLUID_PUSH_TENANT";
/// The tenant header of Pyroscope (and Grafana's other multi-tenant databases).
pub const TENANT_HEADER: &str = "X-Scope-OrgID";

/// Why the credentials in the environment were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// Two ways of saying `Authorization`.
    #[error("set only one of {0} and {1}")]
    Both(&'static str, &'static str),
    /// `FERROFLUID_PUSH_BASIC_AUTH` without the colon.
    #[error("{ENV_BASIC_AUTH} must be user:password")]
    NotUserPassword,
    /// A value that cannot be an HTTP header (a line break, say).
    #[error("{0} holds characters an HTTP header cannot carry")]
    NotAHeader(&'static str),
}

/// The headers that authenticate a push. Its `Debug` shows no secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Auth {
    authorization: Option<String>,
    tenant: Option<String>,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field("authorization", &self.authorization.as_ref().map(|_| "…"))
            .field("tenant", &self.tenant)
            .finish()
    }
}

impl Auth {
    /// The credentials the process environment holds.
    pub fn from_env() -> Result<Auth, AuthError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The credentials `lookup` gives for the variables' names (empty values count as unset).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Auth, AuthError> {
        let get = |name: &'static str| -> Result<Option<String>, AuthError> {
            match lookup(name).filter(|v| !v.is_empty()) {
                Some(v) if v.chars().any(|c| c.is_control()) => Err(AuthError::NotAHeader(name)),
                other => Ok(other),
            }
        };
        let given = [
            (ENV_AUTHORIZATION, get(ENV_AUTHORIZATION)?),
            (ENV_BASIC_AUTH, get(ENV_BASIC_AUTH)?),
            (ENV_BEARER_TOKEN, get(ENV_BEARER_TOKEN)?),
        ];
        let set: Vec<&(&'static str, Option<String>)> =
            given.iter().filter(|(_, v)| v.is_some()).collect();
        if let [a, b, ..] = set[..] {
            return Err(AuthError::Both(a.0, b.0));
        }
        let authorization = match set.first() {
            None => None,
            Some((name, Some(v))) if *name == ENV_BASIC_AUTH => {
                if !v.contains(':') {
                    return Err(AuthError::NotUserPassword);
                }
                Some(format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(v)
                ))
            }
            Some((name, Some(v))) if *name == ENV_BEARER_TOKEN => Some(format!("Bearer {v}")),
            Some((_, v)) => v.clone(),
        };
        Ok(Auth {
            authorization,
            tenant: get(ENV_TENANT)?,
        })
    }

    /// Whether any credential is set.
    pub fn is_set(&self) -> bool {
        self.authorization.is_some() || self.tenant.is_some()
    }

    /// The headers to send.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(a) = &self.authorization {
            out.push(("Authorization", a.clone()));
        }
        if let Some(t) = &self.tenant {
            out.push((TENANT_HEADER, t.clone()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(vars: &[(&str, &str)]) -> Result<Auth, AuthError> {
        Auth::from_lookup(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn credentials_become_headers() {
        assert_eq!(auth(&[]).unwrap().headers(), []);
        assert_eq!(
            auth(&[(ENV_BASIC_AUTH, "123456:glc_token"), (ENV_TENANT, "team-a")])
                .unwrap()
                .headers(),
            [
                ("Authorization", "Basic MTIzNDU2OmdsY190b2tlbg==".to_owned()),
                ("X-Scope-OrgID", "team-a".to_owned())
            ]
        );
        assert_eq!(
            auth(&[(ENV_BEARER_TOKEN, "abc")]).unwrap().headers(),
            [("Authorization", "Bearer abc".to_owned())]
        );
        assert_eq!(
            auth(&[(ENV_AUTHORIZATION, "Token xyz")]).unwrap().headers(),
            [("Authorization", "Token xyz".to_owned())]
        );
        assert!(!format!("{:?}", auth(&[(ENV_BEARER_TOKEN, "abc")]).unwrap()).contains("abc"));
    }

    #[test]
    fn conflicting_or_malformed_credentials_are_refused() {
        assert_eq!(
            auth(&[(ENV_AUTHORIZATION, "x"), (ENV_BEARER_TOKEN, "y")])
                .unwrap_err()
                .to_string(),
            "set only one of FERROFLUID_PUSH_AUTHORIZATION and FERROFLUID_PUSH_BEARER_TOKEN"
        );
        assert_eq!(
            auth(&[(ENV_BASIC_AUTH, "token")]).unwrap_err().to_string(),
            "FERROFLUID_PUSH_BASIC_AUTH must be user:password"
        );
        assert_eq!(
            auth(&[(ENV_TENANT, "a\r\nX-Evil: 1")])
                .unwrap_err()
                .to_string(),
            "FERROFLUID_PUSH_TENANT holds characters an HTTP header cannot carry"
        );
    }
}
