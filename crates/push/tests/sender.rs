//! The pusher against a receiver that fails, stalls and comes back: retries with backoff, the
//! bounded queue, what is dropped counted in the next push's labels, `finish`'s deadline, and
//! a push that never waits for the network.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrofluid_profile::{CallTree, Mode, NodeId, NodeKind, Profile, ThreadProfile};
use ferrofluid_push::{Auth, Backoff, Event, Interval, Labels, PushConfig, Pusher};
use ferrofluid_testkit::receiver::{Answer, Receiver};

/// An interval of a count profile whose one method ran `calls` times, `i` seconds after a fixed
/// start (so that each interval is told apart by its `from`).
fn interval(i: u64, calls: u64) -> Interval {
    let mut p = Profile::new(Mode::Count);
    p.extra_metrics
        .push(ferrofluid_profile::Metric::new("bytecodes", "count"));
    let f = p.methods.insert("demo.App", "work", "()V");
    let mut t = CallTree::with_width(1);
    let n = t.add_child(NodeId::ROOT, NodeKind::Method(f));
    t.node_mut(n).calls = calls;
    t.extra_mut(n)[0] = 7 * calls;
    p.threads.push(ThreadProfile::new("main", 1, t));
    let from = UNIX_EPOCH + Duration::from_secs(1_700_000_000 + 10 * i);
    Interval::new(&p, from, from + Duration::from_secs(10))
}

fn config(receiver: &Receiver, queue: usize, timeout: Duration) -> PushConfig {
    PushConfig {
        queue,
        timeout,
        backoff: Backoff {
            first: Duration::from_millis(40),
            max: Duration::from_millis(160),
        },
        ..PushConfig::new(
            receiver.url("/ingest").parse().unwrap(),
            Labels::new("demo.App", "test-host", 42, "count"),
            Auth::default(),
        )
    }
}

/// A pusher whose events are kept.
fn start(config: PushConfig) -> (Pusher, Arc<Mutex<Vec<Event>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    let pusher = Pusher::start(config, move |e| log.lock().unwrap().push(e.clone())).unwrap();
    (pusher, events)
}

fn from_of(r: &ferrofluid_testkit::receiver::Request) -> u64 {
    r.param("from").unwrap().parse().unwrap()
}

const LONG: Duration = Duration::from_secs(60);

#[test]
fn failures_are_retried_with_growing_jittered_waits() {
    let receiver = Receiver::start();
    receiver.script(
        vec![
            Answer::status(503),
            Answer::status(500),
            Answer::Status(429, vec![("Retry-After".into(), "1".into())], Vec::new()),
        ],
        Answer::status(200),
    );
    let (pusher, events) = start(config(&receiver, 4, LONG));
    pusher.push(interval(0, 3));
    let got = receiver.wait_for(4, LONG);
    let summary = pusher.finish(LONG);
    assert_eq!(got.len(), 4);
    // The same interval each time.
    assert!(got
        .iter()
        .all(|r| r.body == got[0].body && from_of(r) == 1_700_000_000));
    let events = events.lock().unwrap().clone();
    let waits: Vec<(u32, Duration)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Failed { failures, wait, .. } => Some((*failures, *wait)),
            _ => None,
        })
        .collect();
    assert_eq!(waits.len(), 3, "{events:?}");
    // 40 ms doubling, each drawn from its upper half; then the server's Retry-After.
    assert!((20..=40).contains(&waits[0].1.as_millis()), "{waits:?}");
    assert!((40..=80).contains(&waits[1].1.as_millis()), "{waits:?}");
    assert_eq!(waits[2], (3, Duration::from_secs(1)));
    // Each attempt came no sooner than its wait.
    for (pair, (_, wait)) in got.windows(2).zip(&waits) {
        assert!(pair[1].at - pair[0].at >= *wait);
    }
    assert!(matches!(
        &events[0],
        Event::Failed { reason, .. } if reason == "HTTP 503"
    ));
    assert!(matches!(
        events.last(),
        Some(Event::Sent {
            failures: 3,
            dropped_before: 0,
            ..
        })
    ));
    assert_eq!((summary.sent, summary.failures, summary.dropped), (1, 3, 0));
}

#[test]
fn a_stalled_backend_times_out_and_is_retried() {
    let receiver = Receiver::start();
    receiver.script(
        vec![Answer::Stall(Duration::from_secs(5))],
        Answer::status(200),
    );
    let (pusher, events) = start(config(&receiver, 4, Duration::from_millis(500)));
    pusher.push(interval(0, 1));
    let got = receiver.wait_for(2, LONG);
    let summary = pusher.finish(LONG);
    assert_eq!(got.len(), 2);
    let events = events.lock().unwrap().clone();
    assert!(
        matches!(&events[0], Event::Failed { failures: 1, reason, .. } if reason == "no answer within the timeout"),
        "{events:?}"
    );
    assert_eq!((summary.sent, summary.failures), (1, 1));
}

#[test]
fn a_full_queue_drops_the_oldest_and_the_next_push_counts_them() {
    let receiver = Receiver::start();
    receiver.script(Vec::new(), Answer::status(503));
    let (pusher, events) = start(config(&receiver, 2, LONG));
    // The first is being retried while four more come: the queue of 2 keeps the newest.
    pusher.push(interval(0, 1));
    receiver.wait_for(1, LONG);
    for i in 1..5 {
        pusher.push(interval(i, 1));
    }
    assert_eq!(pusher.pending(), 2);
    assert_eq!(pusher.summary().dropped, 3);
    // The backend comes back.
    receiver.script(Vec::new(), Answer::status(200));
    let summary = pusher.finish(LONG);
    assert_eq!((summary.sent, summary.dropped), (2, 3));
    let delivered: Vec<_> = receiver
        .received()
        .into_iter()
        .filter(|r| r.param("name").is_some())
        .collect();
    // The last two requests are the two deliveries; the first carries the count.
    let last_two = &delivered[delivered.len() - 2..];
    assert_eq!(
        last_two[0].param("name").unwrap(),
        "demo.App{host=test-host,pid=42,mode=count,dropped_profiles=3}"
    );
    assert_eq!(
        last_two[1].param("name").unwrap(),
        "demo.App{host=test-host,pid=42,mode=count}"
    );
    assert_eq!(from_of(&last_two[1]), 1_700_000_040);
    let dropped: u64 = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::Dropped { count, .. } => Some(*count),
            _ => None,
        })
        .sum();
    assert_eq!(dropped, 3);
}

#[test]
fn a_rejected_profile_is_dropped_at_once_and_counted() {
    let receiver = Receiver::start();
    receiver.script(
        vec![Answer::Status(
            400,
            Vec::new(),
            b"invalid label name".to_vec(),
        )],
        Answer::status(200),
    );
    let (pusher, events) = start(config(&receiver, 4, LONG));
    pusher.push(interval(0, 1));
    receiver.wait_for(1, LONG);
    pusher.push(interval(1, 1));
    let summary = pusher.finish(LONG);
    let got = receiver.received();
    assert_eq!(got.len(), 2);
    assert!(got[1]
        .param("name")
        .unwrap()
        .ends_with(",dropped_profiles=1}"));
    assert_eq!((summary.sent, summary.dropped, summary.failures), (1, 1, 0));
    let events = events.lock().unwrap().clone();
    assert_eq!(
        events[0],
        Event::Dropped {
            count: 1,
            reason: "rejected: HTTP 400: invalid label name".into()
        }
    );
}

#[test]
fn finish_gives_up_at_its_deadline_and_counts_what_is_left() {
    let receiver = Receiver::start();
    receiver.script(Vec::new(), Answer::Close);
    let (pusher, events) = start(config(&receiver, 8, LONG));
    for i in 0..3 {
        pusher.push(interval(i, 1));
    }
    let summary = pusher.finish(Duration::from_millis(300));
    assert_eq!((summary.sent, summary.dropped), (0, 3));
    assert!(events.lock().unwrap().iter().any(|e| matches!(
        e,
        Event::Dropped { count: 3, reason } if reason.starts_with("3 profiles were not delivered within 300ms")
    )));
}

#[test]
fn pushing_never_waits_for_the_network() {
    let receiver = Receiver::start();
    // Every request hangs for a minute: only the sender thread waits.
    receiver.script(Vec::new(), Answer::Stall(LONG));
    let (pusher, _) = start(config(&receiver, 4, LONG));
    let (done, pushed) = mpsc::channel();
    let pusher = Arc::new(pusher);
    let p = Arc::clone(&pusher);
    std::thread::spawn(move || {
        for i in 0..100 {
            p.push(interval(i, 1));
        }
        done.send(()).unwrap();
    });
    receiver.wait_for(1, LONG);
    pushed
        .recv_timeout(Duration::from_secs(30))
        .expect("push blocked while the backend stalled");
    // The queue holds 4, the one in flight among them.
    assert_eq!(pusher.pending(), 4);
    assert_eq!(pusher.summary().dropped, 96);
}

#[test]
fn empty_intervals_are_not_sent() {
    let receiver = Receiver::start();
    let (pusher, _) = start(config(&receiver, 4, LONG));
    let now = SystemTime::now();
    pusher.push(Interval::new(&Profile::new(Mode::Cpu), now, now));
    pusher.push(interval(1, 2));
    let summary = pusher.finish(LONG);
    assert_eq!((summary.sent, summary.empty), (1, 1));
    assert_eq!(receiver.received().len(), 1);
}
