//! The HTTP client: ureq over rustls (ring), roots from the system's certificate store.

use std::sync::Arc;
use std::time::Duration;

use ureq::tls::{Certificate, RootCerts, TlsConfig, TlsProvider};

use crate::endpoint::{HttpRequest, Outcome};
use crate::pusher::{PushConfig, PushError};

/// Longest answer body read (error messages; success bodies are small).
const MAX_ANSWER: u64 = 1 << 20;

/// The client for `config`'s endpoint.
pub fn agent(config: &PushConfig) -> Result<ureq::Agent, PushError> {
    let mut builder = ureq::Agent::config_builder()
        .timeout_global(Some(config.timeout))
        .timeout_connect(Some(config.timeout.min(Duration::from_secs(10))))
        // Answers are read whatever their status: the backend's message says what went wrong.
        .http_status_as_error(false)
        // A redirected POST would lose its body: the user is told to push to the new URL.
        .max_redirects(0)
        .user_agent(concat!("ferrofluid/", env!("CARGO_PKG_VERSION")));
    if config.endpoint.tls() {
        let loaded = rustls_native_certs::load_native_certs();
        let roots: Vec<Certificate<'static>> = loaded
            .certs
            .iter()
            .map(|c| Certificate::from_der(c.as_ref()).to_owned())
            .collect();
        if roots.is_empty() {
            return Err(PushError::NoRoots(config.endpoint.url.clone()));
        }
        builder = builder.tls_config(
            TlsConfig::builder()
                .provider(TlsProvider::Rustls)
                .root_certs(RootCerts::Specific(Arc::new(roots)))
                .unversioned_rustls_crypto_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .build(),
        );
    }
    Ok(builder.build().new_agent())
}

/// Sends `request` and reads what the answer means.
pub fn send(agent: &ureq::Agent, config: &PushConfig, request: &HttpRequest) -> Outcome {
    let mut call = agent.post(&request.url);
    for (name, value) in request.headers.iter().chain(&config.auth.headers()) {
        call = call.header(*name, value);
    }
    match call.send(&request.body[..]) {
        Ok(mut response) => {
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let body = response
                .body_mut()
                .with_config()
                .limit(MAX_ANSWER)
                .read_to_vec()
                .unwrap_or_default();
            let header = |name: &str| {
                headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            config.endpoint.outcome(status, &header, &body)
        }
        Err(e) => Outcome::Retry {
            reason: transport_error(&e),
            after: None,
        },
    }
}

/// A transport failure in a few words.
fn transport_error(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "no answer within the timeout".into(),
        ureq::Error::Io(io) => io.to_string(),
        ureq::Error::HostNotFound => "host not found".into(),
        other => other.to_string(),
    }
}
