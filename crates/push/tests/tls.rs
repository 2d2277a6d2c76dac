//! `https://` URLs: rustls with the CA certificates of the system store, which
//! `SSL_CERT_FILE` names here (a test CA made by `openssl`). A receiver whose certificate the
//! store does not vouch for is refused (retried, never sent to), one it does gets the profile and
//! the credentials. One test: the process environment is its setting.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use ferrofluid_profile::{CallTree, Mode, NodeId, NodeKind, Profile, ThreadProfile};
use ferrofluid_push::{Auth, Backoff, Event, Interval, Labels, PushConfig, Pusher};
use ferrofluid_testkit::receiver::{test_certificates, Receiver};

fn interval() -> Interval {
    let mut p = Profile::new(Mode::Cpu);
    let f = p.methods.insert("demo.App", "work", "()V");
    let mut t = CallTree::new();
    let n = t.add_child(NodeId::ROOT, NodeKind::Method(f));
    t.node_mut(n).calls = 3;
    t.node_mut(n).total_ns = 900;
    p.threads.push(ThreadProfile::new("main", 1, t));
    let now = SystemTime::now();
    Interval::new(&p, now - Duration::from_secs(10), now)
}

fn config(receiver: &Receiver) -> PushConfig {
    let auth = Auth::from_lookup(|name| {
        (name == "FERROFLUID_PUSH_BEARER_TOKEN").then(|| "s3cret".to_owned())
    })
    .unwrap();
    PushConfig {
        backoff: Backoff {
            first: Duration::from_millis(40),
            max: Duration::from_millis(80),
        },
        timeout: Duration::from_secs(10),
        ..PushConfig::new(
            receiver.url("/ingest").parse().unwrap(),
            Labels::new("demo.App", "test-host", 42, "cpu"),
            auth,
        )
    }
}

fn start(config: PushConfig) -> (Pusher, Arc<Mutex<Vec<Event>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    let pusher = Pusher::start(config, move |e| log.lock().unwrap().push(e.clone())).unwrap();
    (pusher, events)
}

#[test]
fn https_is_verified_against_the_system_store() {
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tls-{}", std::process::id()));
    let (Some((ca, chain, key)), Some((other_ca, _, _))) = (
        test_certificates(&work.join("a")),
        test_certificates(&work.join("b")),
    ) else {
        assert!(std::env::var_os("CI").is_none(), "`openssl` not found");
        eprintln!("SKIPPED: no `openssl` to make test certificates");
        return;
    };
    let receiver = Receiver::start_tls(&chain, &key);
    assert!(receiver.url("/ingest").starts_with("https://127.0.0.1:"));

    // A store without the receiver's CA: the handshake fails, nothing is sent, it is retried.
    std::env::set_var("SSL_CERT_FILE", &other_ca);
    let (pusher, events) = start(config(&receiver));
    pusher.push(interval());
    std::thread::sleep(Duration::from_millis(500));
    let summary = pusher.finish(Duration::from_millis(100));
    assert!(receiver.received().is_empty());
    assert_eq!((summary.sent, summary.dropped), (0, 1));
    let events = events.lock().unwrap();
    let Some(Event::Failed { reason, .. }) = events.first() else {
        panic!("{events:?}");
    };
    assert!(reason.contains("UnknownIssuer"), "{reason}");

    // With it: delivered, credentials and all.
    std::env::set_var("SSL_CERT_FILE", &ca);
    let (pusher, events) = start(config(&receiver));
    let sent = interval();
    pusher.push(sent.clone());
    let summary = pusher.finish(Duration::from_secs(20));
    assert_eq!((summary.sent, summary.dropped), (1, 0), "{events:?}");
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("authorization"), Some("Bearer s3cret"));
    assert_eq!(got[0].body, &sent.pprof[..]);
}
