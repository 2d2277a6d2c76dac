//! Each backend's request, as a receiver gets it, read with the backends' own definitions: the
//! pprof each carries read by `go tool pprof` with the same per-function values and totals as
//! the pprof file export of the same profile, every sample type; OTLP bodies read by
//! OpenTelemetry's Python definitions (PyPI's `opentelemetry-proto`) with the same values; and
//! each request's method, path, query and headers as the backend's API documents them. The
//! envelopes of Pyroscope's and Parca's protobuf APIs are read field by field with a protobuf
//! wire reader written here, against the field numbers of their `.proto` files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

use base64::Engine;
use ferrofluid_profile::Profile;
use ferrofluid_push::{Auth, Endpoint, Interval, Labels, PushConfig, Pusher};
use ferrofluid_report::Format;
use ferrofluid_testkit::receiver::{Answer, Receiver, Request};
use ferrofluid_testkit::{fresh_dir, pprof};

/// The golden profiles of the report tests: every mode.
const CASES: [&str; 7] = [
    "fig4",
    "sample",
    "count",
    "alloc",
    "allocpaths",
    "idle",
    "region",
];

fn golden(case: &str) -> Profile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../report/tests/data")
        .join(case)
        .join("input.json");
    Profile::from_json_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn dir(name: &str) -> PathBuf {
    fresh_dir(std::env::temp_dir().join(format!("ferrofluid-push-{name}-{}", std::process::id())))
}

const FROM_S: u64 = 1_700_000_000;

/// Each golden profile pushed to `path` on a fresh receiver, with credentials; the requests in
/// case order.
fn push_all(path: &str) -> Vec<(String, Interval, Request)> {
    push_all_answered(path, Answer::status(200))
}

/// [`push_all`] to a receiver that answers `ok`.
fn push_all_answered(path: &str, ok: Answer) -> Vec<(String, Interval, Request)> {
    let receiver = Receiver::start();
    receiver.script(Vec::new(), ok);
    let endpoint: Endpoint = receiver.url(path).parse().unwrap();
    let mut labels = Labels::new("demo.Fig4", "build-7", 4242, "cpu");
    labels.set("env", "ci").unwrap();
    let auth = Auth::from_lookup(|name| match name {
        "FERROFLUID_PUSH_BEARER_TOKEN" => Some("s3cret".into()),
        "FERROFLUID_PUSH_TENANT" => Some("team-a".into()),
        _ => None,
    })
    .unwrap();
    let pusher = Pusher::start(PushConfig::new(endpoint, labels, auth), |_| {}).unwrap();
    let mut sent = Vec::new();
    for (i, case) in CASES.iter().enumerate() {
        let from = UNIX_EPOCH + Duration::from_secs(FROM_S + 60 * i as u64);
        let interval = Interval::new(&golden(case), from, from + Duration::from_secs(60));
        pusher.push(interval.clone());
        sent.push((case.to_string(), interval));
    }
    let summary = pusher.finish(Duration::from_secs(60));
    assert_eq!(summary.sent, CASES.len() as u64, "{summary:?}");
    let got = receiver.received();
    assert_eq!(got.len(), CASES.len());
    sent.into_iter()
        .zip(got)
        .map(|((case, interval), request)| (case, interval, request))
        .collect()
}

/// Checks the headers every push carries.
fn common_headers(r: &Request, content_type: &str) {
    assert_eq!(r.method, "POST");
    assert_eq!(r.header("content-type"), Some(content_type));
    assert_eq!(r.header("authorization"), Some("Bearer s3cret"));
    assert_eq!(r.header("x-scope-orgid"), Some("team-a"));
    assert!(r.header("user-agent").unwrap().starts_with("ferrofluid/"));
}

/// Per sample type (name, unit): `go tool pprof -top`'s rows and total of a gzipped pprof.
type Tops = BTreeMap<String, (BTreeMap<String, (u64, u64)>, u64)>;

fn tops(go: &Path, gz: &[u8], types: &[(String, String)], work: &Path, name: &str) -> Tops {
    let file = work.join(format!("{name}.pb.gz"));
    std::fs::write(&file, gz).unwrap();
    types
        .iter()
        .map(|(t, unit)| {
            let top = pprof::top(go, &file, t, pprof::display_unit(unit), work);
            (t.clone(), top)
        })
        .collect()
}

/// The pprof file export of `case`, read by `go tool pprof` for each sample type.
fn file_export(go: &Path, case: &str, types: &[(String, String)], work: &Path) -> Tops {
    let mut gz = Vec::new();
    Format::Pprof
        .writer()
        .write(&golden(case), &mut gz)
        .unwrap();
    tops(go, &gz, types, work, &format!("{case}-file"))
}

/// Checks that the pprof `gz` pushed for `case` reads as the file export does.
fn same_as_file_export(go: Option<&Path>, case: &str, interval: &Interval, gz: &[u8], work: &Path) {
    assert_eq!(
        gz,
        &interval.pprof[..],
        "{case}: the body carries the interval's pprof"
    );
    let Some(go) = go else { return };
    let pushed = tops(go, gz, &interval.sample_types, work, case);
    let file = file_export(go, case, &interval.sample_types, work);
    assert_eq!(pushed, file, "{case}");
    assert!(
        pushed.values().any(|(_, total)| *total > 0),
        "{case}: empty"
    );
}

fn go_or_skip() -> Option<PathBuf> {
    let go = pprof::go();
    if go.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "`go` not found (Debian's golang-go, which .ci/run installs)"
        );
        eprintln!("SKIPPED: `go` not found: pushed pprof not read by go tool pprof");
    }
    go
}

#[test]
fn pyroscope_ingest_takes_the_pprof_with_labels_and_times_in_the_query() {
    let go = go_or_skip();
    let work = dir("ingest");
    for (i, (case, interval, r)) in push_all("/ingest").into_iter().enumerate() {
        common_headers(&r, "application/octet-stream");
        assert_eq!(r.path(), "/ingest");
        let from = FROM_S + 60 * i as u64;
        assert_eq!(
            r.query(),
            [
                (
                    "name".to_owned(),
                    "demo.Fig4{host=build-7,pid=4242,mode=cpu,env=ci}".to_owned()
                ),
                ("from".into(), from.to_string()),
                ("until".into(), (from + 60).to_string()),
                ("format".into(), "pprof".into()),
                ("spyName".into(), "ferrofluid".into()),
            ],
            "{case}"
        );
        same_as_file_export(go.as_deref(), &case, &interval, &r.body, &work);
        // The message's own time and duration are the interval's.
        let m = interval.decode().unwrap();
        assert_eq!(
            (m.time_nanos, m.duration_nanos),
            (from as i64 * 1_000_000_000, 60_000_000_000)
        );
    }
}

/// A protobuf field as the wire encodes it.
#[derive(Debug, Clone, PartialEq)]
enum Field {
    Varint(u64),
    Bytes(Vec<u8>),
}

/// The fields of a protobuf message, in order (wire types 0 and 2 only: the envelopes have no
/// others).
fn fields(mut buf: &[u8]) -> Vec<(u32, Field)> {
    fn varint(buf: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = buf[0];
            *buf = &buf[1..];
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
        }
        v
    }
    let mut out = Vec::new();
    while !buf.is_empty() {
        let key = varint(&mut buf);
        let (number, wire) = ((key >> 3) as u32, key & 7);
        let field = match wire {
            0 => Field::Varint(varint(&mut buf)),
            2 => {
                let len = varint(&mut buf) as usize;
                let (bytes, rest) = buf.split_at(len);
                buf = rest;
                Field::Bytes(bytes.to_vec())
            }
            other => panic!("wire type {other} in an envelope"),
        };
        out.push((number, field));
    }
    out
}

fn bytes(f: &Field) -> &[u8] {
    match f {
        Field::Bytes(b) => b,
        other => panic!("not length-delimited: {other:?}"),
    }
}

fn text(f: &Field) -> String {
    String::from_utf8(bytes(f).to_vec()).unwrap()
}

/// `types.v1.LabelPair`s (name = 1, value = 2).
fn label_pairs<'a>(pairs: impl Iterator<Item = &'a Field>) -> Vec<(String, String)> {
    pairs
        .map(|p| {
            let f = fields(bytes(p));
            assert_eq!(f.len(), 2);
            assert_eq!((f[0].0, f[1].0), (1, 2));
            (text(&f[0].1), text(&f[1].1))
        })
        .collect()
}

fn expected_labels(name: &str) -> Vec<(String, String)> {
    [
        ("__name__", name),
        ("service_name", "demo.Fig4"),
        ("host", "build-7"),
        ("pid", "4242"),
        ("mode", "cpu"),
        ("env", "ci"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The `__name__` Pyroscope's `/ingest` would give each case's sample types.
fn series_name(case: &str) -> &'static str {
    match case {
        "alloc" | "allocpaths" => "memory",
        "count" => "bytecodes",
        // A CPU profile with thread CPU times.
        "sample" => "process_cpu",
        _ => "time",
    }
}

#[test]
fn pyroscope_push_api_takes_a_push_request_with_the_series_labels() {
    let go = go_or_skip();
    let work = dir("connect");
    for (case, interval, r) in push_all("/push.v1.PusherService/Push") {
        common_headers(&r, "application/proto");
        assert_eq!(r.header("connect-protocol-version"), Some("1"));
        assert_eq!(r.target, "/push.v1.PusherService/Push");
        // PushRequest: series = 1.
        let request = fields(&r.body);
        assert_eq!(request.len(), 1);
        assert_eq!(request[0].0, 1);
        // RawProfileSeries: labels = 1, samples = 2.
        let series = fields(bytes(&request[0].1));
        let labels = label_pairs(series.iter().filter(|(n, _)| *n == 1).map(|(_, f)| f));
        let mut want = expected_labels(series_name(&case));
        want.push(("__delta__".into(), "false".into()));
        assert_eq!(labels, want, "{case}");
        let samples: Vec<&Field> = series
            .iter()
            .filter(|(n, _)| *n == 2)
            .map(|(_, f)| f)
            .collect();
        assert_eq!(samples.len(), 1);
        assert_eq!(series.len(), labels.len() + 1);
        // RawSample: raw_profile = 1, ID = 2 (a UUID).
        let sample = fields(bytes(samples[0]));
        assert_eq!(sample[0].0, 1);
        assert_eq!(sample[1].0, 2);
        let id = text(&sample[1].1);
        assert_eq!((id.len(), &id[14..15]), (36, "4"), "{id}");
        same_as_file_export(go.as_deref(), &case, &interval, bytes(&sample[0].1), &work);
    }
}

#[test]
fn parca_http_takes_write_raw_as_json() {
    let go = go_or_skip();
    let work = dir("parca-http");
    for (case, interval, r) in push_all("/api/profiles/writeraw") {
        common_headers(&r, "application/json");
        assert_eq!(r.target, "/api/profiles/writeraw");
        let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body["normalized"], true);
        let series = &body["series"].as_array().unwrap()[..];
        assert_eq!(series.len(), 1);
        let labels: Vec<(String, String)> = series[0]["labels"]["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["name"].as_str().unwrap().to_owned(),
                    l["value"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(labels, expected_labels(series_name(&case)), "{case}");
        let raw = base64::engine::general_purpose::STANDARD
            .decode(series[0]["samples"][0]["rawProfile"].as_str().unwrap())
            .unwrap();
        same_as_file_export(go.as_deref(), &case, &interval, &raw, &work);
    }
}

#[test]
fn parca_grpc_web_takes_a_framed_write_raw_request() {
    let go = go_or_skip();
    let work = dir("parca-grpc");
    let path = "/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw";
    // As gRPC-Web answers: an empty WriteRawResponse, then the trailers with the status.
    let trailers = b"grpc-status:0\r\ngrpc-message:\r\n";
    let mut ok = vec![0, 0, 0, 0, 0, 0x80];
    ok.extend_from_slice(&(trailers.len() as u32).to_be_bytes());
    ok.extend_from_slice(trailers);
    let headers = vec![("Content-Type".into(), "application/grpc-web+proto".into())];
    for (case, interval, r) in push_all_answered(path, Answer::Status(200, headers, ok)) {
        common_headers(&r, "application/grpc-web+proto");
        assert_eq!(r.target, path);
        // One uncompressed message frame.
        assert_eq!(r.body[0], 0);
        let len = u32::from_be_bytes(r.body[1..5].try_into().unwrap()) as usize;
        assert_eq!(len, r.body.len() - 5);
        // WriteRawRequest: series = 2, normalized = 3.
        let request = fields(&r.body[5..]);
        assert_eq!(request.len(), 2);
        assert_eq!(request[0].0, 2);
        assert_eq!(request[1], (3, Field::Varint(1)));
        // RawProfileSeries: labels = 1 (a LabelSet: labels = 1), samples = 2.
        let series = fields(bytes(&request[0].1));
        assert_eq!(series.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1, 2]);
        let set = fields(bytes(&series[0].1));
        assert!(set.iter().all(|(n, _)| *n == 1));
        let labels = label_pairs(set.iter().map(|(_, f)| f));
        assert_eq!(labels, expected_labels(series_name(&case)), "{case}");
        // RawSample: raw_profile = 1.
        let sample = fields(bytes(&series[1].1));
        assert_eq!(sample.len(), 1);
        assert_eq!(sample[0].0, 1);
        same_as_file_export(go.as_deref(), &case, &interval, bytes(&sample[0].1), &work);
    }
}

/// A Python with PyPI's `opentelemetry-proto` (`.ci/run` installs it into its venv), or `None`.
fn otlp_python() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("FERROFLUID_OTLP_PYTHON").map(PathBuf::from),
        Some(PathBuf::from("/opt/ferrofluid-otlp-venv/bin/python")),
    ];
    candidates.into_iter().flatten().find(|p| {
        Command::new(p)
            .args([
                "-c",
                "import opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn otlp_bodies_read_with_opentelemetrys_definitions_carry_the_profiles_values() {
    let Some(python) = otlp_python() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no Python with opentelemetry-proto (.ci/run installs it into its venv)"
        );
        eprintln!(
            "SKIPPED: no Python with opentelemetry-proto (set FERROFLUID_OTLP_PYTHON): OTLP bodies not decoded"
        );
        return;
    };
    let go = go_or_skip();
    let work = dir("otlp");
    let pushed = push_all("/v1development/profiles");
    let mut files = Vec::new();
    for (case, _, r) in &pushed {
        common_headers(r, "application/x-protobuf");
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        assert_eq!(r.target, "/v1development/profiles");
        let file = work.join(format!("{case}.otlp.gz"));
        std::fs::write(&file, &r.body).unwrap();
        files.push(file);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/otlp_totals.py");
    let out = Command::new(python)
        .arg(script)
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decoded: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    for (i, ((case, interval, _), body)) in pushed.iter().zip(&decoded).enumerate() {
        let resource = &body["resources"][0];
        assert_eq!(
            resource["attributes"],
            serde_json::json!({
                "service.name": "demo.Fig4",
                "host.name": "build-7",
                "process.pid": 4242,
                "ferrofluid.mode": "cpu",
                "env": "ci",
            }),
            "{case}"
        );
        let scope = &resource["scopes"][0];
        assert_eq!(scope["name"], "ferrofluid");
        let profiles = scope["profiles"].as_array().unwrap();
        // One OTLP profile per pprof sample type, in order.
        let types: Vec<(String, String)> = profiles
            .iter()
            .map(|p| {
                (
                    p["type"].as_str().unwrap().to_owned(),
                    p["unit"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(types, interval.sample_types, "{case}");
        let from_ns = (FROM_S + 60 * i as u64) * 1_000_000_000;
        for p in profiles {
            assert_eq!(p["period_type"], p["type"]);
            assert_eq!(p["period_unit"], p["unit"]);
            assert_eq!(p["period"], 1);
            assert_eq!(p["time_unix_nano"], from_ns);
            assert_eq!(p["duration_nano"], 60_000_000_000u64);
            assert_eq!(p["profile_id_len"], 16);
        }
        let Some(go) = go.as_deref() else { continue };
        let file = file_export(go, case, &interval.sample_types, &work);
        for p in profiles {
            let (rows, total) = &file[p["type"].as_str().unwrap()];
            assert_eq!(p["total"].as_u64().unwrap(), *total, "{case} {}", p["type"]);
            let functions: BTreeMap<String, (u64, u64)> = p["functions"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(name, v)| {
                    (
                        name.clone(),
                        (v[0].as_u64().unwrap(), v[1].as_u64().unwrap()),
                    )
                })
                .filter(|(_, v)| *v != (0, 0))
                .collect();
            assert_eq!(&functions, rows, "{case} {}", p["type"]);
        }
    }
}

#[test]
fn otlp_conversion_keeps_every_sample_of_the_pprof() {
    // Independent of Python: the OTLP request's values per sample type sum to pprof's.
    let labels = Labels::new("demo.App", "h", 1, "cpu");
    for case in CASES {
        let from = UNIX_EPOCH + Duration::from_secs(FROM_S);
        let interval = Interval::new(&golden(case), from, from + Duration::from_secs(1));
        let m = interval.decode().unwrap();
        let request = ferrofluid_push::otlp::request(&interval, &labels).unwrap();
        let profiles = &request.resource_profiles[0].scope_profiles[0].profiles;
        assert_eq!(profiles.len(), m.sample_type.len());
        for (k, p) in profiles.iter().enumerate() {
            let otlp: i64 = p.samples.iter().map(|s| s.values[0]).sum();
            let pprof: i64 = m.sample.iter().map(|s| s.value[k]).sum();
            assert_eq!(otlp, pprof, "{case} {k}");
        }
    }
}
