//! The control protocol between the tool and the agent, over the agent's UNIX socket.
//!
//! **Framing**: each message is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON
//! (serde_json of [`Request`] or [`Response`], internally tagged by `"type"`). JSON keeps the channel
//! debuggable (`socat` shows it) and cheap for control traffic; bulk profile data does not travel here.
//! Frames over [`MAX_FRAME`] are refused before allocating.
//!
//! **Versioning**: the client's first frame is [`Request::Hello`] with [`PROTOCOL_VERSION`]; the agent
//! answers [`Response::Hello`] if it speaks that version, or [`Response::Error`] and closes. New optional
//! fields may be added within a version (unknown fields are ignored); anything else bumps the version.
//! After the handshake every request gets exactly one response, in order.

use std::io::{self, Read, Write};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::options::AgentOptions;

/// Version of the messages below (4: an `instrument` may ask for `mode=alloc`, which an agent
/// of version 3 would take for `cpu`).
pub const PROTOCOL_VERSION: u32 = 4;
/// The oldest version an agent still serves: a version-2 tool knows neither `wait` nor
/// ownership, and is served as before (its `instrument` claims the session all the same).
pub const MIN_PROTOCOL_VERSION: u32 = 2;
/// Largest accepted frame (bytes of JSON): snapshots of big call trees fit, garbage lengths do not.
pub const MAX_FRAME: u32 = 64 << 20;

/// Tool → agent.
// `Instrument` carries the whole options struct; a request is built once per control message,
// so its size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// First frame of every connection.
    Hello { version: u32 },
    /// What the agent is doing.
    Status,
    /// Start a profiling session of `mode` with these options (replaces any previous
    /// selection): on the wire, the fields of [`AgentOptions`] that describe what to measure
    /// (`roots`, `include`, `exclude`, `scheme`, `region`, `region_last`, `cpu`,
    /// `skip_trivial`, `adaptive`, `reveal`, `track_every`, `stack_depth`, `alloc_classes`,
    /// `mode`), patterns as their canonical strings;
    /// `file`, `duration`, `log` and `socket` are load options and do not travel. Fields at
    /// their default are left out, and an absent field is its default: a request without
    /// `mode` is a `cpu` request, or a `region` one if it names region methods.
    Instrument(AgentOptions),
    /// Restore every instrumented class to its original bytes.
    Deinstrument,
    /// Start collecting (counters reset).
    Start,
    /// Stop collecting; collected data stays available to `snapshot`.
    Stop,
    /// The data collected so far, without stopping.
    Snapshot,
    /// Discard the data collected so far and go on collecting (a warm-up left out): calls in
    /// flight count their time from now on, not their call. Added in version 2.
    Reset,
    /// Remove all instrumentation and events, stop the agent's threads, close this connection; the
    /// library stays loaded and dormant until the next attach.
    Detach,
    /// Narrow the running `alloc` session to the sites that allocate `alloc_classes`
    /// (patterns as their canonical strings; empty: every class again): the classes whose
    /// probes change are retransformed; counts, tracked objects and generation history are
    /// kept. Served to any connection (it claims no session); refused when no `alloc` session
    /// is collecting. An agent without it answers `malformed request`.
    Narrow {
        #[serde(with = "crate::serde_str::as_strings")]
        alloc_classes: Vec<crate::options::AllocClassPattern>,
    },
    /// Wait up to `timeout_ms` for the JVM to exit, from the connection that owns the session:
    /// `ok` if it did not; if it did, [`Response::Exited`] with the profile collected until then.
    /// Added in version 3.
    Wait { timeout_ms: u64 },
}

/// Agent → tool.
// One response per request on a control socket: its size in memory does not matter, and a
// boxed status would only make every reader unbox it.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Response {
    Hello {
        version: u32,
        agent_version: String,
        pid: u32,
    },
    Status(Status),
    /// The request was carried out.
    Ok,
    /// A profile snapshot; its schema is the profile crate's JSON document.
    Snapshot {
        profile: serde_json::Value,
    },
    /// The request failed; the agent and the JVM are unharmed.
    Error {
        message: String,
    },
    /// Answer to `narrow`: the selection in force, the classes retransformed for it, and the
    /// allocation sites seen so far that keep or lose (or regain) their probes.
    Narrowed {
        alloc_classes: Vec<String>,
        classes: u64,
        sites_probed: u64,
        sites_unprobed: u64,
    },
    /// Answer to `wait`: the JVM is exiting; collection stopped and this is what it collected.
    Exited {
        profile: serde_json::Value,
    },
}

/// The agent's state, as `ferrofluid status` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    pub pid: u32,
    pub agent_version: String,
    /// `java.vm.version` of the JVM the agent is in.
    pub vm_version: String,
    /// The option string the agent was (last) loaded with, canonical form.
    pub options: String,
    /// Whether data is being collected.
    pub collecting: bool,
    pub instrumented_classes: u64,
    pub instrumented_methods: u64,
    /// Events lost because a bounded buffer was full (never silently dropped).
    pub dropped_events: u64,
    /// How many times the agent has been attached (1 for the first `load`).
    pub attach_count: u64,
    /// Classes the current (or last) session could not instrument or restore, or left alone
    /// as none of their code can run: after `deinstrument`, its restore failures too. Absent
    /// when none (and from older agents).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_classes: Vec<ferrofluid_profile::FailedClass>,
    /// The tool whose connection started the session, while it lasts (absent for a session
    /// started by the agent's own options, `ferrofluid run` or `-agentpath`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    /// The mode of the session running (instrumented and collecting), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_mode: Option<String>,
    /// The allocated classes the running `alloc` session probes (`alloc-class`, or a
    /// `narrow`); absent: every class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alloc_classes: Vec<String>,
    /// Root (or region) patterns of the session that match no method of a loaded class yet,
    /// with the names of loaded methods that come close.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmatched_roots: Vec<Unmatched>,
    /// The agent's own pushing to a backend (`push=`), if its options ask for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<PushStatus>,
}

/// What the agent's pushing (`push=`) has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushStatus {
    /// The backend's URL (credentials come from the environment, never in it).
    pub url: String,
    /// The interval, in ms.
    pub every_ms: u64,
    /// Profiles that arrived, and their bodies' bytes.
    pub sent: u64,
    pub bytes: u64,
    /// Profiles dropped (queue full, rejected by the backend).
    pub dropped: u64,
    /// Failed attempts, each retried.
    pub failures: u64,
    /// Profiles waiting to be sent.
    pub pending: u64,
    /// Why the last attempt failed, while no later one has arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<String>,
}

/// The tool that owns a profiling session: the connection that sent its `instrument`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// The tool's process id as the agent sees it (`SO_PEERCRED`; 0 outside its pid namespace).
    pub pid: u32,
    /// When it sent `instrument`, in ms since the Unix epoch.
    pub since_ms: u64,
    /// What it profiles (`root com.acme.Report::render`, `region ...`, `the whole program`).
    pub what: String,
    /// Its connection closed without ending the session: the agent removes the probes and goes
    /// dormant [`ORPHAN_GRACE_SECS`] after that, unless a tool takes the session over.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub orphaned: bool,
}

/// How long the agent keeps a session whose owning connection closed without ending it.
pub const ORPHAN_GRACE_SECS: u64 = 5;

/// A root pattern no loaded method matches, and loaded methods whose names come close.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unmatched {
    pub pattern: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub near: Vec<String>,
}

/// Why another tool may not touch a session `owner` drives in JVM `pid`: one line, saying what
/// to do.
pub fn busy_message(pid: u32, owner: &Owner) -> String {
    let by = if owner.pid == 0 {
        "another ferrofluid".to_owned()
    } else {
        format!("another ferrofluid (pid {})", owner.pid)
    };
    format!(
        "JVM {pid} is already being profiled by {by}, since {} UTC ({}); stop it first, or run \
         `ferrofluid attach {pid}` for its status",
        utc_time(owner.since_ms),
        owner.what
    )
}

/// Why a new profile may not start in JVM `pid`: the session the agent's own options started
/// (`options`, from `ferrofluid run` or `-agentpath`) is collecting and writes its profile when it
/// ends; replacing it would lose that profile.
pub fn started_session_message(pid: u32, options: &str) -> String {
    let with = if options.is_empty() {
        String::new()
    } else {
        format!(" (agent options `{options}`)")
    };
    format!(
        "JVM {pid} is already being profiled by the session it was started with{with}, which \
         writes its own profile when it ends; `ferrofluid attach {pid} --reset` restarts its \
         collection, `ferrofluid attach {pid} --detach` ends it (its data is lost) so that \
         another profile can start"
    )
}

/// Whether an agent's error `message` refuses the request to a tool that does not own the
/// session ([`busy_message`]) or because the JVM is exiting, rather than reporting a failure.
pub fn is_refusal(message: &str) -> bool {
    message.contains(" is already being profiled by ") || message.ends_with(" is exiting")
}

/// `HH:MM:SS` of a time in ms since the Unix epoch, in UTC.
pub fn utc_time(ms: u64) -> String {
    let s = ms / 1000 % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("control connection closed")]
    Closed,
    #[error("control frame of {len} bytes exceeds the {max}-byte limit")]
    TooLarge { len: u32, max: u32 },
    #[error("malformed control message: {0}")]
    Malformed(#[from] serde_json::Error),
    #[error("control connection: {0}")]
    Io(#[from] io::Error),
    #[error("agent refused the connection: {0}")]
    Refused(String),
}

/// The agent's control socket when the `socket` option is not given: `<tmp>/.ferrofluid-<pid>/control.sock`,
/// with the JVM's pid *in its own namespace* and its own `/tmp` (so the tool reaches it through
/// `/proc/<pid>/root`). Fixed, like HotSpot's `.java_pid<pid>`, so a tool can find an agent loaded earlier.
pub fn default_socket_path(tmp: &std::path::Path, nspid: u32) -> std::path::PathBuf {
    tmp.join(format!(".ferrofluid-{nspid}"))
        .join("control.sock")
}

/// A connection to an agent's control socket, after a successful handshake.
#[derive(Debug)]
pub struct Client {
    stream: std::os::unix::net::UnixStream,
    /// The agent's `Hello`.
    pub agent_version: String,
    pub pid: u32,
}

impl Client {
    /// Connects and performs the version handshake.
    pub fn connect(path: &std::path::Path) -> Result<Client, FrameError> {
        let mut stream = crate::socket_path::connect(path)?;
        // A wedged agent must not hang the tool forever.
        stream.set_read_timeout(Some(std::time::Duration::from_secs(60)))?;
        write_frame(
            &mut stream,
            &Request::Hello {
                version: PROTOCOL_VERSION,
            },
        )?;
        match read_frame(&mut stream)? {
            Response::Hello {
                version: PROTOCOL_VERSION,
                agent_version,
                pid,
            } => Ok(Client {
                stream,
                agent_version,
                pid,
            }),
            Response::Error { message } => Err(FrameError::Refused(message)),
            other => Err(FrameError::Refused(format!(
                "unexpected handshake reply {other:?}"
            ))),
        }
    }

    /// Sends one request and waits for its response.
    pub fn request(&mut self, request: &Request) -> Result<Response, FrameError> {
        write_frame(&mut self.stream, request)?;
        read_frame(&mut self.stream)
    }
}

/// Writes one frame holding `message`.
pub fn write_frame<W: Write, T: Serialize>(w: &mut W, message: &T) -> Result<(), FrameError> {
    // A snapshot carries a profile tree ~2,000 levels deep: serialize on a stack that
    // grows on the heap rather than recursing on the caller's (a JVM-owned thread).
    let mut body = Vec::new();
    message.serialize(serde_stacker::Serializer::new(
        &mut serde_json::Serializer::new(&mut body),
    ))?;
    let len = u32::try_from(body.len())
        .ok()
        .filter(|&l| l <= MAX_FRAME)
        .ok_or(FrameError::TooLarge {
            len: u32::try_from(body.len()).unwrap_or(u32::MAX),
            max: MAX_FRAME,
        })?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&body);
    w.write_all(&frame)?;
    w.flush()?;
    Ok(())
}

/// Reads one frame and decodes it. [`FrameError::Closed`] on a clean end of stream before the frame.
pub fn read_frame<R: Read, T: DeserializeOwned>(r: &mut R) -> Result<T, FrameError> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_be_bytes(len);
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge {
            len,
            max: MAX_FRAME,
        });
    }
    let mut body = vec![0; len as usize];
    r.read_exact(&mut body)?;
    // No nesting limit (serde_json's 128 rejects a snapshot's deep tree); the frame size
    // bounds the depth, and the stack grows on the heap instead of overflowing.
    let mut json = serde_json::Deserializer::from_slice(&body);
    json.disable_recursion_limit();
    let message = T::deserialize(serde_stacker::Deserializer::new(&mut json))?;
    json.end()?;
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{ClassFilter, Mode, Scheme};

    #[test]
    fn deep_snapshots_cross_the_wire() {
        // serde_json recurses per level, and unoptimised builds take kilobytes of stack per
        // level: more than a test thread's 2 MiB (the CLI's main thread has 8 MiB, and
        // release builds need a fraction of this).
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(deep_snapshot_round_trip)
            .unwrap()
            .join()
            .unwrap();
    }

    fn deep_snapshot_round_trip() {
        // Deeper than any agent tree (1,025 levels, two JSON levels each).
        let levels = 1_500;
        let mut profile = serde_json::json!({});
        for _ in 0..levels {
            profile = serde_json::json!({ "children": [profile] });
        }
        let mut wire = Vec::new();
        write_frame(&mut wire, &Response::Snapshot { profile }).unwrap();
        let back: Response = read_frame(&mut wire.as_slice()).unwrap();
        let Response::Snapshot { profile } = back else {
            panic!("not a snapshot: {back:?}")
        };
        let mut depth = 0;
        let mut at = &profile;
        while let Some(child) = at.get("children").and_then(|c| c.get(0)) {
            depth += 1;
            at = child;
        }
        assert_eq!(depth, levels);
    }

    fn roundtrip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(m: &T) -> Vec<u8> {
        let mut buf = Vec::new();
        write_frame(&mut buf, m).unwrap();
        let back: T = read_frame(&mut buf.as_slice()).unwrap();
        assert_eq!(&back, m);
        buf
    }

    #[test]
    fn frames_are_length_prefixed_json() {
        let bytes = roundtrip(&Request::Status);
        assert_eq!(bytes, b"\0\0\0\x11{\"type\":\"status\"}");
        let bytes = roundtrip(&Request::Hello { version: 1 });
        assert_eq!(&bytes[4..], br#"{"type":"hello","version":1}"#);
    }

    #[test]
    fn instrument_without_region_fields_still_parses() {
        let r: Request = serde_json::from_str(
            r#"{"type":"instrument","roots":["A::b"],"include":[],"exclude":[],"scheme":"lazy"}"#,
        )
        .unwrap();
        let Request::Instrument(AgentOptions {
            region,
            region_last,
            cpu,
            skip_trivial,
            adaptive,
            ..
        }) = r
        else {
            panic!("not instrument: {r:?}");
        };
        assert!(region.is_empty());
        assert_eq!(region_last, None);
        assert!(!cpu);
        assert!(!skip_trivial);
        assert!(!adaptive);
    }

    #[test]
    fn every_message_round_trips() {
        let requests = [
            Request::Hello {
                version: PROTOCOL_VERSION,
            },
            Request::Status,
            Request::Instrument(AgentOptions {
                roots: vec!["com.acme.Foo::bar(I)V".parse().unwrap()],
                filter: ClassFilter {
                    include: vec!["com.acme.**".parse().unwrap()],
                    exclude: vec![],
                },
                scheme: Scheme::Eager,
                ..AgentOptions::default()
            }),
            Request::Instrument(AgentOptions {
                scheme: Scheme::Lazy,
                region: vec!["demo.Work::step".parse().unwrap()],
                region_last: Some(10),
                ..AgentOptions::default()
            }),
            Request::Deinstrument,
            Request::Start,
            Request::Stop,
            Request::Snapshot,
            Request::Reset,
            Request::Detach,
            Request::Wait { timeout_ms: 200 },
        ];
        for r in &requests {
            roundtrip(r);
        }
        let responses = [
            Response::Hello {
                version: 1,
                agent_version: "0.1.0".into(),
                pid: 42,
            },
            Response::Status(Status {
                pid: 42,
                collecting: true,
                dropped_events: 3,
                ..Default::default()
            }),
            Response::Status(Status {
                failed_classes: vec![ferrofluid_profile::FailedClass::new(
                    "a/B",
                    ferrofluid_profile::ClassPhase::Restore,
                    "JVMTI RetransformClasses failed: JVMTI_ERROR_INVALID_CLASS (21)",
                    false,
                )],
                ..Default::default()
            }),
            Response::Ok,
            Response::Snapshot {
                profile: serde_json::json!({"threads": []}),
            },
            Response::Error {
                message: "no such class".into(),
            },
            Response::Exited {
                profile: serde_json::json!({"threads": []}),
            },
            Response::Status(Status {
                owner: Some(Owner {
                    pid: 7,
                    since_ms: 1_000,
                    what: "root A::b".into(),
                    orphaned: true,
                }),
                unmatched_roots: vec![Unmatched {
                    pattern: "A::c".into(),
                    near: vec!["A::b".into()],
                }],
                ..Default::default()
            }),
        ];
        for r in &responses {
            roundtrip(r);
        }
        let instrument = serde_json::to_string(&requests[2]).unwrap();
        assert_eq!(
            instrument,
            r#"{"type":"instrument","roots":["com.acme.Foo::bar(I)V"],"include":["com.acme.**"],"exclude":[],"scheme":"eager"}"#
        );
        let Request::Instrument(options) = requests[2].clone() else {
            unreachable!()
        };
        let with_cpu = Request::Instrument(AgentOptions {
            cpu: true,
            skip_trivial: true,
            adaptive: true,
            reveal: crate::options::Reveal::Async,
            ..options
        });
        roundtrip(&with_cpu);
        assert!(serde_json::to_string(&with_cpu).unwrap().ends_with(
            r#""scheme":"eager","cpu":true,"skip_trivial":true,"adaptive":true,"reveal":"async"}"#
        ));
    }

    #[test]
    fn instrument_carries_the_mode_and_leaves_load_options_out() {
        let request = Request::Instrument(AgentOptions {
            mode: Some(Mode::Count),
            roots: vec!["A::b".parse().unwrap()],
            file: Some("p.json".into()),
            log: Some("/l".into()),
            ..AgentOptions::default()
        });
        let json = serde_json::to_string(&request).unwrap();
        assert_eq!(
            json,
            r#"{"type":"instrument","roots":["A::b"],"include":[],"exclude":[],"scheme":"lazy","mode":"count"}"#
        );
        let back: Request = serde_json::from_str(&json).unwrap();
        let Request::Instrument(options) = back else {
            panic!("not instrument: {back:?}")
        };
        assert_eq!(
            (options.mode(), options.file, options.log),
            (Mode::Count, None, None)
        );
        // Without `mode`, a request naming region methods is a region request.
        let old: Request = serde_json::from_str(
            r#"{"type":"instrument","roots":[],"include":[],"exclude":[],"scheme":"lazy","region":["A::b"]}"#,
        )
        .unwrap();
        let Request::Instrument(old) = old else {
            panic!()
        };
        assert_eq!(old.mode(), Mode::Region);
    }

    #[test]
    fn a_busy_session_is_refused_in_one_line() {
        let owner = Owner {
            pid: 77,
            since_ms: (7 * 3600 + 41 * 60 + 2) * 1000 + 999 + 86_400_000 * 3,
            what: "root com.acme.Server::handle".into(),
            orphaned: false,
        };
        assert_eq!(
            busy_message(123, &owner),
            "JVM 123 is already being profiled by another ferrofluid (pid 77), since 07:41:02 UTC \
             (root com.acme.Server::handle); stop it first, or run `ferrofluid attach 123` for its status"
        );
        let unseen = Owner { pid: 0, ..owner };
        assert!(busy_message(1, &unseen)
            .starts_with("JVM 1 is already being profiled by another ferrofluid, since"));
        // A version-2 status (no owner, no unmatched roots) still parses.
        let old: Response = serde_json::from_str(
            r#"{"type":"status","pid":1,"agent_version":"0.1.0","vm_version":"17","options":"","collecting":false,"instrumented_classes":0,"instrumented_methods":0,"dropped_events":0,"attach_count":1}"#,
        )
        .unwrap();
        let Response::Status(old) = old else { panic!() };
        assert_eq!((old.owner, old.unmatched_roots.len()), (None, 0));
    }

    #[test]
    fn several_frames_on_one_stream_and_clean_close() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &Request::Start).unwrap();
        write_frame(&mut buf, &Request::Stop).unwrap();
        let mut r = buf.as_slice();
        assert_eq!(read_frame::<_, Request>(&mut r).unwrap(), Request::Start);
        assert_eq!(read_frame::<_, Request>(&mut r).unwrap(), Request::Stop);
        assert!(matches!(
            read_frame::<_, Request>(&mut r),
            Err(FrameError::Closed)
        ));
    }

    #[test]
    fn rejects_bad_frames() {
        let huge = (MAX_FRAME + 1).to_be_bytes();
        let err = read_frame::<_, Request>(&mut huge.as_slice()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "control frame of {} bytes exceeds the {MAX_FRAME}-byte limit",
                MAX_FRAME + 1
            )
        );
        let mut unknown = 14u32.to_be_bytes().to_vec();
        unknown.extend_from_slice(br#"{"type":"xyz"}"#);
        assert!(matches!(
            read_frame::<_, Request>(&mut unknown.as_slice()),
            Err(FrameError::Malformed(_))
        ));
        let truncated = [0, 0, 0, 10, b'{'];
        assert!(matches!(
            read_frame::<_, Request>(&mut truncated.as_slice()),
            Err(FrameError::Io(_))
        ));
        // A pattern that does not parse is a malformed message, named.
        let body =
            br#"{"type":"instrument","roots":["nope"],"include":[],"exclude":[],"scheme":"lazy"}"#;
        let mut bad_root = (body.len() as u32).to_be_bytes().to_vec();
        bad_root.extend_from_slice(body);
        let err = read_frame::<_, Request>(&mut bad_root.as_slice()).unwrap_err();
        assert!(err.to_string().contains("invalid pattern `nope`"), "{err}");
        // Fields added later by a newer peer are ignored.
        let mut newer = Vec::new();
        let body = br#"{"type":"hello","version":1,"features":["x"]}"#;
        newer.extend_from_slice(&(body.len() as u32).to_be_bytes());
        newer.extend_from_slice(body);
        assert_eq!(
            read_frame::<_, Request>(&mut newer.as_slice()).unwrap(),
            Request::Hello { version: 1 }
        );
    }

    #[test]
    fn narrow_travels_as_canonical_patterns() {
        let narrow = Request::Narrow {
            alloc_classes: vec![
                "com.acme.Cache$Entry".parse().unwrap(),
                "byte[]".parse().unwrap(),
            ],
        };
        let json = serde_json::to_string(&narrow).unwrap();
        assert_eq!(
            json,
            r#"{"type":"narrow","alloc_classes":["com.acme.Cache$Entry","byte[]"]}"#
        );
        assert_eq!(serde_json::from_str::<Request>(&json).unwrap(), narrow);
        let reply = Response::Narrowed {
            alloc_classes: vec!["com.acme.Cache$Entry".into()],
            classes: 2,
            sites_probed: 1,
            sites_unprobed: 3,
        };
        let json = serde_json::to_string(&reply).unwrap();
        assert_eq!(serde_json::from_str::<Response>(&json).unwrap(), reply);
        let status = Status {
            session_mode: Some("alloc".into()),
            alloc_classes: vec!["byte[]".into()],
            ..Default::default()
        };
        let json = serde_json::to_string(&Response::Status(status.clone())).unwrap();
        assert_eq!(
            serde_json::from_str::<Response>(&json).unwrap(),
            Response::Status(status)
        );
    }
}
