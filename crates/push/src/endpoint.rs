//! The backends and their wire formats, chosen by the URL's path; building each request and
//! reading each answer, apart from the network (the sender does that).
//!
//! | URL path ends with | backend | body |
//! |---|---|---|
//! | `/ingest` | Pyroscope's `/ingest` | the gzipped pprof; labels and times in the query |
//! | `/push.v1.PusherService/Push` | Pyroscope's Connect API | `push.v1.PushRequest`, binary (`application/proto`) |
//! | `/profiles/writeraw` | Parca's HTTP API (grpc-gateway) | `WriteRawRequest` as JSON |
//! | `/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw` | Parca's gRPC `WriteRaw`, as gRPC-Web | `WriteRawRequest`, gRPC-Web framed |
//! | `/v1development/profiles` | OTLP/HTTP profiles (OpenTelemetry Collector, Pyroscope, ...) | `ExportProfilesServiceRequest`, gzipped protobuf |
//!
//! Parca's gRPC service is reached through gRPC-Web, which Parca's server accepts on the same
//! port over HTTP/1.1 (plain gRPC needs HTTP/2, and an HTTP/2 stack for one call is not worth
//! its weight here).
//!
//! Answers: success is HTTP 2xx (and, for gRPC-Web, `grpc-status` 0). HTTP 408, 429, 500, 502,
//! 503 and 504, and gRPC's `UNAVAILABLE`, `RESOURCE_EXHAUSTED` and `DEADLINE_EXCEEDED`, are
//! worth retrying (after the server's `Retry-After` when it sends one); anything else rejects
//! the profile, with the server's message.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use base64::Engine;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use prost::Message;

use crate::interval::Interval;
use crate::labels::Labels;

/// The messages of Pyroscope's push API (`push.v1`, `types.v1.LabelPair`) and of Parca's
/// profile store (`parca.profilestore.v1alpha1`) that a push uses, field numbers as in their
/// `.proto` files; and gRPC's `google.rpc.Status`, which error answers carry.
pub mod wire {
    #![allow(missing_docs)]

    /// `push.v1.PushRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PushRequest {
        #[prost(message, repeated, tag = "1")]
        pub series: Vec<RawProfileSeries>,
    }

    /// `push.v1.RawProfileSeries`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct RawProfileSeries {
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<LabelPair>,
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<RawSample>,
    }

    /// `types.v1.LabelPair`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct LabelPair {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub value: String,
    }

    /// `push.v1.RawSample`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct RawSample {
        #[prost(bytes = "vec", tag = "1")]
        pub raw_profile: Vec<u8>,
        #[prost(string, tag = "2")]
        pub id: String,
    }

    /// `parca.profilestore.v1alpha1.WriteRawRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct WriteRawRequest {
        #[prost(message, repeated, tag = "2")]
        pub series: Vec<ParcaSeries>,
        #[prost(bool, tag = "3")]
        pub normalized: bool,
    }

    /// `parca.profilestore.v1alpha1.RawProfileSeries`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ParcaSeries {
        #[prost(message, optional, tag = "1")]
        pub labels: Option<LabelSet>,
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<ParcaSample>,
    }

    /// `parca.profilestore.v1alpha1.LabelSet`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct LabelSet {
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<LabelPair>,
    }

    /// `parca.profilestore.v1alpha1.RawSample`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ParcaSample {
        #[prost(bytes = "vec", tag = "1")]
        pub raw_profile: Vec<u8>,
    }

    /// `google.rpc.Status` (details left out).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Status {
        #[prost(int32, tag = "1")]
        pub code: i32,
        #[prost(string, tag = "2")]
        pub message: String,
    }
}

/// A backend's API, as the URL names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Grafana Pyroscope's `POST /ingest?name=…&from=…&until=…&format=pprof`.
    PyroscopeIngest,
    /// Grafana Pyroscope's Connect API, `push.v1.PusherService/Push`.
    PyroscopeConnect,
    /// Parca's `POST /profiles/writeraw` (JSON).
    ParcaHttp,
    /// Parca's gRPC `ProfileStoreService/WriteRaw`, over gRPC-Web.
    ParcaGrpcWeb,
    /// OTLP/HTTP `POST /v1development/profiles`.
    Otlp,
}

/// The path endings that name each backend.
const PATHS: [(&str, Backend); 5] = [
    ("/ingest", Backend::PyroscopeIngest),
    ("/push.v1.PusherService/Push", Backend::PyroscopeConnect),
    ("/profiles/writeraw", Backend::ParcaHttp),
    (
        "/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw",
        Backend::ParcaGrpcWeb,
    ),
    ("/v1development/profiles", Backend::Otlp),
];

impl Backend {
    /// What it is, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Backend::PyroscopeIngest => "Pyroscope /ingest",
            Backend::PyroscopeConnect => "Pyroscope push API",
            Backend::ParcaHttp => "Parca /profiles/writeraw",
            Backend::ParcaGrpcWeb => "Parca gRPC WriteRaw (gRPC-Web)",
            Backend::Otlp => "OTLP/HTTP profiles",
        }
    }
}

/// Why a push URL was refused: one line saying what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// Not a URL.
    #[error("push URL `{0}`: not a URL (e.g. http://pyroscope:4040/ingest)")]
    NotAUrl(String),
    /// Neither http nor https.
    #[error("push URL `{0}`: expected http:// or https://")]
    Scheme(String),
    /// Credentials in the URL, which the command line would show to every user.
    #[error("push URL `{0}`: credentials do not go in the URL (the command line is visible to every user); set FERROFLUID_PUSH_BASIC_AUTH=user:password or another FERROFLUID_PUSH_* variable")]
    Credentials(String),
    /// A query string.
    #[error("push URL `{0}`: no query string (labels go in --label KEY=VALUE)")]
    Query(String),
    /// A path that names no backend.
    #[error("push URL `{0}`: the path names no backend; expected one ending in /ingest or /push.v1.PusherService/Push (Pyroscope), /profiles/writeraw or /parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw (Parca), /v1development/profiles (OpenTelemetry)")]
    Path(String),
}

/// Where pushes go: a backend's endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The backend's API.
    pub backend: Backend,
    /// The URL as given.
    pub url: String,
}

impl Endpoint {
    /// Whether the connection is TLS (`https://`).
    pub fn tls(&self) -> bool {
        self.url.starts_with("https://")
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}", self.backend.describe(), self.url)
    }
}

impl FromStr for Endpoint {
    type Err = EndpointError;

    fn from_str(s: &str) -> Result<Endpoint, EndpointError> {
        let (scheme, rest) = s
            .split_once("://")
            .ok_or_else(|| EndpointError::NotAUrl(s.into()))?;
        if scheme != "http" && scheme != "https" {
            return Err(EndpointError::Scheme(s.into()));
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.chars().any(|c| c.is_whitespace()) {
            return Err(EndpointError::NotAUrl(s.into()));
        }
        if authority.contains('@') {
            return Err(EndpointError::Credentials(redact(s)));
        }
        if path.contains('?') || path.contains('#') {
            return Err(EndpointError::Query(s.into()));
        }
        let path = path.trim_end_matches('/');
        let backend = PATHS
            .iter()
            .find(|(end, _)| path.ends_with(end))
            .map(|&(_, b)| b)
            .ok_or_else(|| EndpointError::Path(s.into()))?;
        Ok(Endpoint {
            backend,
            url: format!("{scheme}://{authority}{path}"),
        })
    }
}

/// `s` with the user information of its authority replaced, for messages.
fn redact(s: &str) -> String {
    match (s.find("://"), s.find('@')) {
        (Some(a), Some(b)) if a < b => format!("{}://…{}", &s[..a], &s[b..]),
        _ => s.into(),
    }
}

/// One HTTP request, ready to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpRequest {
    /// The full URL, query included.
    pub url: String,
    /// Headers besides those of the HTTP layer itself.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// What a backend's answer means for the profile sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Stored. `note`: what the backend said it did not keep (OTLP's partial success).
    Accepted {
        /// The backend's words.
        note: Option<String>,
    },
    /// Not stored, worth sending again: the backend is down, overloaded or slow.
    Retry {
        /// What happened.
        reason: String,
        /// How long the backend asked to wait (`Retry-After`).
        after: Option<Duration>,
    },
    /// Refused; sending it again would be refused again.
    Rejected {
        /// What the backend said.
        reason: String,
    },
}

/// Characters of a query value left as they are: RFC 3986's unreserved ones.
const QUERY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The `__name__` Pyroscope's `/ingest` gives a pprof profile with these sample types (its
/// `metricName`): `process_cpu` if one is about CPU, `memory` for allocation profiles, else
/// the last sample type's name. The push API gets the same, so that the two endpoints make the
/// same series.
pub fn pyroscope_name(sample_types: &[(String, String)]) -> String {
    for (t, _) in sample_types {
        if t == "wall" {
            return t.clone();
        }
    }
    for (t, _) in sample_types {
        if t.contains("cpu") {
            return "process_cpu".into();
        }
        if t.contains("alloc_") || t.contains("inuse_") || t == "space" || t == "objects" {
            return "memory".into();
        }
    }
    sample_types
        .last()
        .map_or_else(|| "profile".into(), |(t, _)| t.clone())
}

/// A random UUID (version 4) in its text form: the id of a pushed profile.
fn uuid() -> String {
    let v = fastrand::u128(..);
    let v = (v & !(0xf << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
    let h = format!("{v:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

impl Endpoint {
    /// The request that pushes `interval` with `labels`.
    pub fn request(
        &self,
        interval: &Interval,
        labels: &Labels,
    ) -> Result<HttpRequest, crate::otlp::ConvertError> {
        let pairs = |name: String| -> Vec<wire::LabelPair> {
            std::iter::once(("__name__".to_owned(), name))
                .chain(labels.iter().map(|(k, v)| (k.to_owned(), v.to_owned())))
                .map(|(name, value)| wire::LabelPair { name, value })
                .collect()
        };
        let name = pyroscope_name(&interval.sample_types);
        Ok(match self.backend {
            Backend::PyroscopeIngest => {
                let (from, until) = interval.unix_seconds();
                // A profile shorter than a second still spans one.
                let until = until.max(from + 1);
                let name = labels.to_string();
                HttpRequest {
                    url: format!(
                        "{}?name={}&from={from}&until={until}&format=pprof&spyName=ferrofluid",
                        self.url,
                        utf8_percent_encode(&name, QUERY)
                    ),
                    headers: vec![("Content-Type", "application/octet-stream".into())],
                    body: interval.pprof.to_vec(),
                }
            }
            Backend::PyroscopeConnect => {
                let mut labels = pairs(name);
                // Already a delta: the profile of one interval, not a cumulative one.
                labels.push(wire::LabelPair {
                    name: "__delta__".into(),
                    value: "false".into(),
                });
                let request = wire::PushRequest {
                    series: vec![wire::RawProfileSeries {
                        labels,
                        samples: vec![wire::RawSample {
                            raw_profile: interval.pprof.to_vec(),
                            id: uuid(),
                        }],
                    }],
                };
                HttpRequest {
                    url: self.url.clone(),
                    headers: vec![
                        ("Content-Type", "application/proto".into()),
                        ("Connect-Protocol-Version", "1".into()),
                    ],
                    body: request.encode_to_vec(),
                }
            }
            Backend::ParcaHttp => {
                let b64 = base64::engine::general_purpose::STANDARD;
                let labels: Vec<serde_json::Value> = pairs(name)
                    .into_iter()
                    .map(|l| serde_json::json!({ "name": l.name, "value": l.value }))
                    .collect();
                let body = serde_json::json!({
                    "series": [{
                        "labels": { "labels": labels },
                        "samples": [{ "rawProfile": b64.encode(&interval.pprof) }],
                    }],
                    "normalized": true,
                });
                HttpRequest {
                    url: self.url.clone(),
                    headers: vec![("Content-Type", "application/json".into())],
                    body: body.to_string().into_bytes(),
                }
            }
            Backend::ParcaGrpcWeb => {
                let request = parca_request(interval, pairs(name));
                let message = request.encode_to_vec();
                // gRPC framing: a flag byte (0: uncompressed message) and the length.
                let mut body = Vec::with_capacity(5 + message.len());
                body.push(0);
                body.extend_from_slice(&(message.len() as u32).to_be_bytes());
                body.extend_from_slice(&message);
                HttpRequest {
                    url: self.url.clone(),
                    headers: vec![
                        ("Content-Type", "application/grpc-web+proto".into()),
                        ("X-Grpc-Web", "1".into()),
                    ],
                    body,
                }
            }
            Backend::Otlp => {
                let request = crate::otlp::request(interval, labels)?;
                let mut gz =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                // Writing into a Vec cannot fail.
                let _ = std::io::Write::write_all(&mut gz, &request.encode_to_vec());
                HttpRequest {
                    url: self.url.clone(),
                    headers: vec![
                        ("Content-Type", "application/x-protobuf".into()),
                        ("Content-Encoding", "gzip".into()),
                    ],
                    body: gz.finish().unwrap_or_default(),
                }
            }
        })
    }

    /// What an answer with HTTP `status`, headers (`header(name)` looks one up) and `body`
    /// means.
    pub fn outcome(
        &self,
        status: u16,
        header: &dyn Fn(&str) -> Option<String>,
        body: &[u8],
    ) -> Outcome {
        let after = header("retry-after").and_then(|v| retry_after(&v));
        if !(200..300).contains(&status) {
            let message = self.error_message(body);
            let reason = if message.is_empty() {
                format!("HTTP {status}")
            } else {
                format!("HTTP {status}: {message}")
            };
            return if matches!(status, 408 | 429 | 500 | 502 | 503 | 504) {
                Outcome::Retry { reason, after }
            } else if (300..400).contains(&status) {
                Outcome::Rejected {
                    reason: format!(
                        "HTTP {status}: redirected to {}; push to that URL",
                        header("location").unwrap_or_default()
                    ),
                }
            } else {
                Outcome::Rejected { reason }
            };
        }
        match self.backend {
            Backend::ParcaGrpcWeb => {
                let (code, message) = match header("grpc-status") {
                    Some(code) => (code, header("grpc-message").unwrap_or_default()),
                    None => grpc_web_trailers(body)
                        .unwrap_or_else(|| ("2".into(), "answer without grpc-status".into())),
                };
                let message = percent_encoding::percent_decode_str(&message)
                    .decode_utf8_lossy()
                    .into_owned();
                match code.trim().parse::<i32>() {
                    Ok(0) => Outcome::Accepted { note: None },
                    // UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED.
                    Ok(c @ (14 | 8 | 4)) => Outcome::Retry {
                        reason: format!("gRPC status {c}: {message}"),
                        after,
                    },
                    _ => Outcome::Rejected {
                        reason: format!("gRPC status {}: {message}", code.trim()),
                    },
                }
            }
            Backend::Otlp => {
                let note = crate::otlp::proto::ExportProfilesServiceResponse::decode(body)
                    .ok()
                    .and_then(|r| r.partial_success)
                    .filter(|p| p.rejected_profiles > 0 || !p.error_message.is_empty())
                    .map(|p| {
                        format!(
                            "the receiver rejected {} of the profiles: {}",
                            p.rejected_profiles, p.error_message
                        )
                    });
                Outcome::Accepted { note }
            }
            _ => Outcome::Accepted { note: None },
        }
    }

    /// The message of an error answer's body, as each backend words it.
    fn error_message(&self, body: &[u8]) -> String {
        let text = || String::from_utf8_lossy(body).trim().to_owned();
        let message = match self.backend {
            // Connect's and grpc-gateway's JSON errors: {"code": …, "message": "…"}.
            Backend::PyroscopeConnect | Backend::ParcaHttp => {
                serde_json::from_slice::<serde_json::Value>(body)
                    .ok()
                    .and_then(|v| v.get("message")?.as_str().map(str::to_owned))
                    .unwrap_or_else(text)
            }
            // OTLP/HTTP: a google.rpc.Status.
            Backend::Otlp => wire::Status::decode(body)
                .ok()
                .map(|s| s.message)
                .filter(|m| !m.is_empty())
                .unwrap_or_else(text),
            _ => text(),
        };
        let mut message: String = message.chars().filter(|c| !c.is_control()).collect();
        if message.len() > 300 {
            let mut end = 300;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
            message.push('…');
        }
        message
    }
}

fn parca_request(interval: &Interval, labels: Vec<wire::LabelPair>) -> wire::WriteRawRequest {
    wire::WriteRawRequest {
        series: vec![wire::ParcaSeries {
            labels: Some(wire::LabelSet { labels }),
            samples: vec![wire::ParcaSample {
                raw_profile: interval.pprof.to_vec(),
            }],
        }],
        // No addresses to adjust: the frames are named.
        normalized: true,
    }
}

/// `Retry-After` in seconds (an HTTP date is not worth parsing here: the backoff applies).
fn retry_after(v: &str) -> Option<Duration> {
    v.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// The `grpc-status` and `grpc-message` of a gRPC-Web body's trailer frame (flag 0x80).
fn grpc_web_trailers(body: &[u8]) -> Option<(String, String)> {
    let mut at = 0;
    while at + 5 <= body.len() {
        let flag = body[at];
        let len = u32::from_be_bytes(body[at + 1..at + 5].try_into().ok()?) as usize;
        let frame = body.get(at + 5..at + 5 + len)?;
        if flag & 0x80 != 0 {
            let text = String::from_utf8_lossy(frame);
            let mut code = None;
            let mut message = String::new();
            for line in text.split("\r\n") {
                if let Some((k, v)) = line.split_once(':') {
                    match k.trim().to_ascii_lowercase().as_str() {
                        "grpc-status" => code = Some(v.trim().to_owned()),
                        "grpc-message" => message = v.trim().to_owned(),
                        _ => {}
                    }
                }
            }
            return code.map(|c| (c, message));
        }
        at += 5 + len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_chooses_the_backend() {
        for (url, backend) in [
            ("http://pyroscope:4040/ingest", Backend::PyroscopeIngest),
            (
                "https://p.example/pyroscope/ingest/",
                Backend::PyroscopeIngest,
            ),
            (
                "http://pyroscope:4040/push.v1.PusherService/Push",
                Backend::PyroscopeConnect,
            ),
            (
                "http://parca:7070/api/profiles/writeraw",
                Backend::ParcaHttp,
            ),
            (
                "http://parca:7070/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw",
                Backend::ParcaGrpcWeb,
            ),
            (
                "http://collector:4318/v1development/profiles",
                Backend::Otlp,
            ),
        ] {
            let e: Endpoint = url.parse().unwrap();
            assert_eq!(e.backend, backend, "{url}");
            assert_eq!(e.url, url.trim_end_matches('/'));
        }
        assert!("https://x/ingest".parse::<Endpoint>().unwrap().tls());
    }

    #[test]
    fn bad_urls_say_what_is_accepted() {
        let err = |s: &str| s.parse::<Endpoint>().unwrap_err().to_string();
        assert_eq!(
            err("pyroscope:4040"),
            "push URL `pyroscope:4040`: not a URL (e.g. http://pyroscope:4040/ingest)"
        );
        assert_eq!(
            err("grpc://parca:7070/x"),
            "push URL `grpc://parca:7070/x`: expected http:// or https://"
        );
        assert!(err("http://pyroscope:4040")
            .contains("the path names no backend; expected one ending in /ingest"));
        assert_eq!(
            err("http://u:secret@p:4040/ingest"),
            "push URL `http://…@p:4040/ingest`: credentials do not go in the URL (the command line is visible to every user); set FERROFLUID_PUSH_BASIC_AUTH=user:password or another FERROFLUID_PUSH_* variable"
        );
        assert_eq!(
            err("http://p:4040/ingest?name=x"),
            "push URL `http://p:4040/ingest?name=x`: no query string (labels go in --label KEY=VALUE)"
        );
    }

    #[test]
    fn uuids_are_version_4() {
        let u = uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "{u}");
    }

    #[test]
    fn pyroscope_names_series_by_sample_types() {
        let types = |t: &[&str]| -> Vec<(String, String)> {
            t.iter().map(|t| (t.to_string(), "count".into())).collect()
        };
        assert_eq!(pyroscope_name(&types(&["calls", "time"])), "time");
        assert_eq!(
            pyroscope_name(&types(&["calls", "time", "cpu_time"])),
            "process_cpu"
        );
        assert_eq!(pyroscope_name(&types(&["calls", "bytecodes"])), "bytecodes");
        assert_eq!(
            pyroscope_name(&types(&["alloc_objects", "alloc_space"])),
            "memory"
        );
    }

    #[test]
    fn answers_are_read_as_each_backend_words_them() {
        let none = |_: &str| None;
        let otlp: Endpoint = "http://c/v1development/profiles".parse().unwrap();
        let status = wire::Status {
            code: 3,
            message: "bad profile".into(),
        }
        .encode_to_vec();
        assert_eq!(
            otlp.outcome(400, &none, &status),
            Outcome::Rejected {
                reason: "HTTP 400: bad profile".into()
            }
        );
        let retry_after = |name: &str| (name == "retry-after").then(|| "7".to_owned());
        assert_eq!(
            otlp.outcome(503, &retry_after, b""),
            Outcome::Retry {
                reason: "HTTP 503".into(),
                after: Some(Duration::from_secs(7))
            }
        );
        let connect: Endpoint = "http://p/push.v1.PusherService/Push".parse().unwrap();
        assert_eq!(
            connect.outcome(
                429,
                &none,
                br#"{"code":"resource_exhausted","message":"ingestion rate limit"}"#
            ),
            Outcome::Retry {
                reason: "HTTP 429: ingestion rate limit".into(),
                after: None
            }
        );
        let grpc: Endpoint =
            "http://parca/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw"
                .parse()
                .unwrap();
        let trailer = b"grpc-status: 3\r\ngrpc-message: missing%20__name__%20label\r\n";
        let mut body = vec![0x80];
        body.extend_from_slice(&(trailer.len() as u32).to_be_bytes());
        body.extend_from_slice(trailer);
        assert_eq!(
            grpc.outcome(200, &none, &body),
            Outcome::Rejected {
                reason: "gRPC status 3: missing __name__ label".into()
            }
        );
        let headers = |name: &str| (name == "grpc-status").then(|| "14".to_owned());
        assert!(matches!(
            grpc.outcome(200, &headers, b""),
            Outcome::Retry { .. }
        ));
        let mut ok = vec![0, 0, 0, 0, 0, 0x80];
        let t = b"grpc-status:0\r\n";
        ok.extend_from_slice(&(t.len() as u32).to_be_bytes());
        ok.extend_from_slice(t);
        assert_eq!(
            grpc.outcome(200, &none, &ok),
            Outcome::Accepted { note: None }
        );
        assert_eq!(
            connect.outcome(
                307,
                &|n: &str| (n == "location").then(|| "http://q/x".into()),
                b""
            ),
            Outcome::Rejected {
                reason: "HTTP 307: redirected to http://q/x; push to that URL".into()
            }
        );
    }
}
