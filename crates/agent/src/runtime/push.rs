//! Continuous profiling from the agent itself (`push=URL`, `every=`, `label=`): a JVM started
//! with `-agentpath:…=push=URL` sends, every interval, the profile collected since the last
//! push to Pyroscope, Parca or an OTLP receiver, with no `ferrofluid` process (docs/push.md).
//!
//! Two threads of the agent's own do the work: `ferrofluid-push` takes the snapshot (attached
//! to the JVM only while the snapshot reads thread states and Java-side counts, as the control
//! thread does for `ferrofluid attach`), keeps what it adds to the last one
//! ([`Profile::since`]) and encodes it; the [`Pusher`]'s `ferrofluid-send` delivers it, retrying
//! into a bounded queue and counting what it drops. No Java thread does either: the one that
//! ends profiling (the JVM's exit, a tool's stop) hands over the last snapshot, as it writes
//! `file=`, and waits at most [`FLUSH`] for the last pushes.
//!
//! The state lives in a [`Push`] value held by the running agent (`lifecycle`), made at load,
//! when the URL, the credentials and the CA certificates are checked.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use ferrofluid_jvmti::Jvmti;
use ferrofluid_profile::Profile;
use ferrofluid_protocol::control::PushStatus;
use ferrofluid_protocol::AgentOptions;
use ferrofluid_push::{Auth, Endpoint, Event, Interval, Labels, PushConfig, Pusher, Summary};

use crate::probe::collector;
use crate::runtime::snapshot;

/// How long the last pushes may take once profiling has ended (a JVM's exit waits for them).
pub const FLUSH: Duration = Duration::from_secs(5);
/// After the first failure of a series, every how many failures one is logged.
const LOG_EVERY: u32 = 10;

/// Why pushing could not be set up: the load is refused, in one line.
#[derive(Debug, thiserror::Error)]
pub enum PushSetupError {
    #[error("{0}")]
    Endpoint(#[from] ferrofluid_push::EndpointError),
    #[error("{0}")]
    Auth(#[from] ferrofluid_push::AuthError),
    #[error("agent option `label`: {0}")]
    Label(#[from] ferrofluid_push::LabelError),
    #[error("push: {0}")]
    Start(#[from] ferrofluid_push::PushError),
}

/// The agent's pushing: cheap to clone (one shared state).
#[derive(Clone)]
pub struct Push {
    shared: Arc<Shared>,
}

struct Shared {
    inner: Mutex<Inner>,
    /// Wakes the ticker (the end) and `end`'s caller (the ticker finished).
    wake: Condvar,
    every: Duration,
    url: String,
}

struct Inner {
    /// `None` once finished.
    pusher: Option<Pusher>,
    /// The last snapshot of the recording (cumulative): the next interval is what the next one
    /// adds to it.
    baseline: Profile,
    /// When it was taken: the next interval's start.
    since: SystemTime,
    /// Collection has started: intervals are taken.
    started: bool,
    /// Set by [`Push::end`]: the last snapshot, if there is one to push.
    end: Option<Option<Profile>>,
    /// The ticker has pushed what was left and stopped.
    finished: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every update keeps the state consistent: a panicking holder leaves a usable value.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Push {
    /// Sets up pushing for the load options `opts`, if they ask for it: the backend's URL, the
    /// credentials of the environment, the CA certificates for `https://`, the labels; starts
    /// the sender and the ticker, which wait for collection to [`begin`](Push::begin).
    pub fn start(opts: &AgentOptions, jvmti: Jvmti) -> Result<Option<Push>, PushSetupError> {
        let Some(url) = &opts.push.url else {
            return Ok(None);
        };
        let endpoint: Endpoint = url.parse()?;
        let auth = Auth::from_env()?;
        let labels = labels(opts, jvmti)?;
        if auth.is_set() && !endpoint.tls() {
            log::warn!(
                "push: credentials from FERROFLUID_PUSH_* go unencrypted to {}; use https:// \
                 beyond a trusted network",
                endpoint.url
            );
        }
        log::info!(
            "push: every {} to {endpoint} as {labels}",
            ferrofluid_protocol::format_duration(opts.push.every())
        );
        let pusher = Pusher::start(PushConfig::new(endpoint.clone(), labels, auth), log_event())?;
        let push = Push {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    pusher: Some(pusher),
                    baseline: Profile::default(),
                    since: SystemTime::now(),
                    started: false,
                    end: None,
                    finished: false,
                }),
                wake: Condvar::new(),
                every: opts.push.every(),
                url: endpoint.url.clone(),
            }),
        };
        let ticker = Arc::clone(&push.shared);
        std::thread::Builder::new()
            .name("ferrofluid-push".into())
            .spawn(move || {
                if std::panic::catch_unwind(|| tick_loop(&ticker)).is_err() {
                    log::error!("push: the push thread failed; pushing stopped");
                }
                ticker.lock().finished = true;
                ticker.wake.notify_all();
            })
            .map_err(ferrofluid_push::PushError::Thread)?;
        Ok(Some(push))
    }

    /// What was pushed so far, while pushing goes on.
    pub fn status(&self) -> Option<PushStatus> {
        let inner = self.shared.lock();
        let s = inner.pusher.as_ref()?.summary();
        Some(PushStatus {
            url: self.shared.url.clone(),
            every_ms: u64::try_from(self.shared.every.as_millis()).unwrap_or(u64::MAX),
            sent: s.sent,
            bytes: s.bytes,
            dropped: s.dropped,
            failures: s.failures,
            pending: s.pending,
            last_failure: s.last_failure,
        })
    }

    /// Collection (of a fresh recording) has started: intervals run from now.
    pub fn begin(&self) {
        let mut inner = self.shared.lock();
        inner.baseline = Profile::default();
        inner.since = SystemTime::now();
        inner.started = true;
    }

    /// Pushes the interval until now, then runs `restart` (which discards the recording and
    /// goes on collecting), after which intervals count from an empty recording. Returns what
    /// `restart` returns.
    pub fn rebase(&self, restart: impl FnOnce() -> bool) -> bool {
        let mut inner = self.shared.lock();
        if inner.started && inner.end.is_none() && collector::collecting() {
            if let Some((profile, _)) = snapshot::snapshot() {
                push_until(&mut inner, profile, SystemTime::now());
            }
        }
        let restarted = restart();
        inner.baseline = Profile::default();
        inner.since = SystemTime::now();
        restarted
    }

    /// Profiling has ended: pushes what `last` (the final snapshot, when collection ran) adds to
    /// the last push, sends what is queued, and waits for that at most [`FLUSH`] and a second.
    /// Later calls do nothing.
    pub fn end(&self, last: Option<Profile>) {
        let mut inner = self.shared.lock();
        if inner.end.is_some() || inner.finished {
            return;
        }
        inner.end = Some(last);
        self.shared.wake.notify_all();
        let deadline = Instant::now() + FLUSH + Duration::from_secs(1);
        while !inner.finished {
            let now = Instant::now();
            if now >= deadline {
                log::warn!("push: the last push did not finish in time; not waiting for it");
                return;
            }
            inner = self
                .shared
                .wake
                .wait_timeout(inner, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// The labels of every push: the service (the main class or jar, from `sun.java.command`),
/// this machine, this process, the mode, and the user's.
fn labels(opts: &AgentOptions, jvmti: Jvmti) -> Result<Labels, ferrofluid_push::LabelError> {
    let command = jvmti
        .system_property("sun.java.command")
        .unwrap_or_default();
    let main = command.split_whitespace().next().unwrap_or_default();
    let mut labels = Labels::new(
        main,
        &ferrofluid_push::labels::hostname(),
        std::process::id(),
        opts.mode().name(),
    );
    for (k, v) in &opts.push.labels {
        labels.set(k, v)?;
    }
    Ok(labels)
}

/// The ticker: an interval every `every` while collection runs, until the end.
fn tick_loop(shared: &Shared) {
    let mut next = Instant::now() + shared.every;
    let mut inner = shared.lock();
    loop {
        if let Some(last) = inner.end.take() {
            // Marks the end as taken, for a second `end`.
            inner.end = Some(None);
            if let (Some(profile), true) = (last, inner.started) {
                push_until(&mut inner, profile, SystemTime::now());
            }
            let pusher = inner.pusher.take();
            drop(inner);
            if let Some(pusher) = pusher {
                log_summary(&pusher.finish(FLUSH), &shared.url);
            }
            return;
        }
        let now = Instant::now();
        if now < next {
            inner = shared
                .wake
                .wait_timeout(inner, next - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
            continue;
        }
        next = now + shared.every;
        if !inner.started || !collector::collecting() {
            continue;
        }
        let until = SystemTime::now();
        match snapshot::snapshot() {
            Some((profile, _)) => push_until(&mut inner, profile, until),
            None => log::warn!("push: no snapshot this interval: collection was never started"),
        }
    }
}

/// Queues what `profile` (cumulative, taken at `until`) adds to the last snapshot.
fn push_until(inner: &mut Inner, profile: Profile, until: SystemTime) {
    let interval = Interval::new(&profile.since(&inner.baseline), inner.since, until);
    if let Some(pusher) = &inner.pusher {
        pusher.push(interval);
    }
    inner.baseline = profile;
    inner.since = until;
}

fn log_summary(s: &Summary, url: &str) {
    let line = format!(
        "push: {} profiles ({} KiB) sent to {url}, {} dropped, {} failed attempts",
        s.sent,
        s.bytes.div_ceil(1024),
        s.dropped,
        s.failures
    );
    if s.dropped > 0 {
        log::warn!("{line}");
    } else {
        log::info!("{line}");
    }
}

/// The push events in the agent log: drops always (a warning: the log is kept), failures the
/// first time and every [`LOG_EVERY`]-th after, the recovery.
fn log_event() -> impl Fn(&Event) + Send + Sync + 'static {
    move |event| match event {
        Event::Failed {
            failures,
            reason,
            wait,
        } => {
            if *failures == 1 || failures % LOG_EVERY == 0 {
                log::warn!(
                    "push: {reason} (attempt {failures}); retrying in {:.1} s",
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
                log::info!(
                    "push: delivered again after {failures} failed attempts, labelled \
                     dropped_profiles={dropped_before}"
                );
            }
            if let Some(note) = note {
                log::info!("push: {note}");
            }
        }
        Event::Dropped { count, reason } => log::warn!(
            "push: dropped {count} profiles: {reason} (the next push that arrives says how \
             many, as dropped_profiles)"
        ),
    }
}
