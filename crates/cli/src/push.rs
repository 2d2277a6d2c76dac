//! `ferrofluid attach PID --push URL [--every 60s] [--label k=v]...`: continuous profiling.
//! Every interval the attach loop takes a snapshot of the agent's profile, keeps what was
//! collected since the last one ([`Profile::since`]) and hands it to the pusher's thread
//! (`ferrofluid-push`), which delivers it to the backend the URL names while collection goes
//! on; when profiling ends (Ctrl-C, SIGTERM, Enter, `--duration`, the UI, the JVM's exit), what
//! is left is pushed too, within [`FLUSH`]. docs/push.md.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use ferrofluid_profile::Profile;
use ferrofluid_protocol::control::{Client, Request, Response};
use ferrofluid_protocol::push::{PushOptions, MIN_EVERY};
use ferrofluid_push::{Auth, Endpoint, Event, Interval, Labels, PushConfig, Pusher};

/// How long the last pushes may take once profiling has ended.
pub const FLUSH: Duration = Duration::from_secs(10);
/// After the first failure of a series, every how many failures one is reported.
const REPORT_EVERY: u32 = 10;

/// `--push URL`: a URL naming a backend.
pub fn parse_endpoint(s: &str) -> Result<Endpoint, String> {
    s.parse().map_err(|e: ferrofluid_push::EndpointError| {
        // clap prefixes the flag and value.
        e.to_string()
            .split_once(": ")
            .map_or_else(|| e.to_string(), |(_, why)| why.to_owned())
    })
}

/// `--every DURATION`: at least [`MIN_EVERY`].
pub fn parse_every(s: &str) -> Result<Duration, String> {
    match ferrofluid_protocol::parse_duration(s) {
        Some(d) if d >= MIN_EVERY => Ok(d),
        Some(_) => Err("at least 1s".into()),
        None => Err("expected a positive whole number with unit ms, s, m or h (e.g. 30s)".into()),
    }
}

/// Which way the attach loop's wait ended, for [`collect`].
pub enum Wait {
    /// Its deadline passed.
    Elapsed,
    /// The session is about to be detached without a final profile (the UI's Detach).
    Detach,
    /// Anything else: profiling ends and its final profile follows.
    Other,
}

/// A push session: the pusher and what was pushed so far.
pub struct PushSession {
    pusher: Pusher,
    endpoint: Endpoint,
    every: Duration,
    /// The last snapshot, cumulative: the next interval is what the next one adds to it.
    baseline: Profile,
    /// When it was taken (the next interval's start).
    since: SystemTime,
    next: Instant,
}

impl PushSession {
    /// Starts the pusher for `args` (none without `--push`), labelled for JVM `pid` profiled
    /// in `mode`.
    pub fn start(
        args: &PushOptions,
        pid: u32,
        mode: &str,
    ) -> Result<Option<PushSession>, Box<dyn std::error::Error>> {
        let Some(url) = &args.url else {
            return Ok(None);
        };
        let endpoint: Endpoint = url.parse()?;
        let main = ferrofluid_attach::describe(pid)
            .ok()
            .flatten()
            .map(|j| j.main)
            .unwrap_or_default();
        let mut labels = Labels::new(&main, &ferrofluid_push::labels::hostname(), pid, mode);
        for (k, v) in &args.labels {
            labels.set(k, v)?;
        }
        let auth = Auth::from_env()?;
        if auth.is_set() && !endpoint.tls() {
            eprintln!(
                "ferrofluid: warning: credentials from FERROFLUID_PUSH_* go unencrypted to {}; \
                 use https:// beyond a trusted network",
                endpoint.url
            );
        }
        let every = args.every();
        eprintln!(
            "ferrofluid: pushing every {} to {endpoint} as {labels}",
            ferrofluid_protocol::format_duration(every)
        );
        let config = PushConfig::new(endpoint.clone(), labels, auth);
        let pusher = Pusher::start(config, reporter())?;
        Ok(Some(PushSession {
            pusher,
            endpoint,
            every,
            baseline: Profile::default(),
            since: SystemTime::now(),
            next: Instant::now() + every,
        }))
    }

    /// Takes a snapshot and pushes what it adds to the last one. A snapshot that cannot be
    /// taken is said once here and skipped: the next interval then covers this one too.
    fn tick(&mut self, client: &mut Client) {
        let now = SystemTime::now();
        self.next = Instant::now() + self.every;
        let value = match client.request(&Request::Snapshot) {
            Ok(Response::Snapshot { profile }) => profile,
            Ok(Response::Error { message }) => {
                eprintln!("ferrofluid: push: no snapshot this interval: agent: {message}");
                return;
            }
            Ok(other) => {
                eprintln!(
                    "ferrofluid: push: no snapshot this interval: unexpected agent reply {other:?}"
                );
                return;
            }
            // The attach loop sees a vanished JVM at its next request.
            Err(_) => return,
        };
        let profile = match serde_json::to_vec(&value)
            .map_err(|e| e.to_string())
            .and_then(|b| Profile::from_json_slice(&b).map_err(|e| e.to_string()))
        {
            Ok(p) => p,
            Err(e) => {
                eprintln!("ferrofluid: push: no snapshot this interval: {e}");
                return;
            }
        };
        self.push_until(profile, now);
    }

    /// Pushes what `profile` (cumulative, taken at `now`) adds to the last snapshot.
    fn push_until(&mut self, profile: Profile, now: SystemTime) {
        let interval = Interval::new(&profile.since(&self.baseline), self.since, now);
        self.pusher.push(interval);
        self.baseline = profile;
        self.since = now;
    }

    /// Pushes what the session's final profile adds, sends what is queued within [`FLUSH`] and
    /// says what was delivered.
    pub fn finish(mut self, last: Option<&Profile>) {
        if let Some(profile) = last {
            self.push_until(profile.clone(), SystemTime::now());
        }
        let pending = self.pusher.pending();
        if pending > 0 {
            eprintln!(
                "ferrofluid: push: sending the last {pending} profile{} (at most {} s)",
                plural(pending),
                FLUSH.as_secs()
            );
        }
        let s = self.pusher.finish(FLUSH);
        let dropped = if s.dropped > 0 {
            format!("; {} dropped", s.dropped)
        } else {
            String::new()
        };
        eprintln!(
            "ferrofluid: pushed {} profile{} ({} KiB) to {}{dropped}",
            s.sent,
            plural(s.sent as usize),
            s.bytes.div_ceil(1024),
            self.endpoint.url
        );
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The log of push events on stderr: drops always, failures the first time and every
/// [`REPORT_EVERY`]-th after, and the recovery.
fn reporter() -> impl Fn(&Event) + Send + Sync + 'static {
    let queue = ferrofluid_push::pusher::DEFAULT_QUEUE;
    let worst = Arc::new(AtomicU32::new(0));
    move |event| match event {
        Event::Failed {
            failures,
            reason,
            wait,
        } => {
            worst.store(*failures, Ordering::Relaxed);
            if *failures == 1 || failures % REPORT_EVERY == 0 {
                eprintln!(
                    "ferrofluid: push: {reason} (attempt {failures}); retrying in {:.1} s, \
                     keeping up to {queue} profiles meanwhile",
                    wait.as_secs_f64()
                );
            }
        }
        Event::Sent {
            failures,
            note,
            dropped_before,
            ..
        } => {
            if *failures > 0 {
                let dropped = if *dropped_before > 0 {
                    format!(", labelled dropped_profiles={dropped_before}")
                } else {
                    String::new()
                };
                eprintln!(
                    "ferrofluid: push: delivered again after {failures} failed attempt{}{dropped}",
                    plural(*failures as usize)
                );
            }
            if let Some(note) = note {
                eprintln!("ferrofluid: push: {note}");
            }
        }
        Event::Dropped { count, reason } => eprintln!(
            "ferrofluid: push: dropped {count} profile{}: {reason} (the next push that arrives \
             says how many, as dropped_profiles)",
            plural(*count as usize)
        ),
    }
}

/// Runs the attach loop's wait (`wait`, until a deadline) up to `deadline`, pushing every
/// interval when `push` is on. Returns how the last wait ended.
pub fn collect<R>(
    push: Option<&mut PushSession>,
    client: &mut Client,
    deadline: Option<Instant>,
    mut wait: impl FnMut(&mut Client, Option<Instant>) -> Result<R, String>,
    kind: impl Fn(&R) -> Wait,
) -> Result<R, String> {
    let Some(push) = push else {
        return wait(client, deadline);
    };
    push.since = SystemTime::now();
    push.next = Instant::now() + push.every;
    loop {
        let until = match deadline {
            Some(d) if d <= push.next => d,
            _ => push.next,
        };
        let r = wait(client, Some(until))?;
        match kind(&r) {
            Wait::Elapsed if deadline.is_none_or(|d| Instant::now() < d) => push.tick(client),
            Wait::Detach => {
                push.tick(client);
                return Ok(r);
            }
            _ => return Ok(r),
        }
    }
}
