//! The pusher: a bounded queue of intervals and one sender thread that delivers them, so that
//! pushing never waits for the network.
//!
//! [`Pusher::push`] only takes a lock the sender holds for a queue operation, never across a
//! request. The sender sends the oldest interval; an answer worth retrying (or no answer: the
//! backend down, slow past the timeout) is retried after an exponential backoff with jitter
//! (`Retry-After` when the backend sends one), while newer intervals queue behind it. When
//! the queue is full the oldest interval is dropped for the new one (the newest profiles are
//! the ones a user looks at when the backend is back); a profile the backend rejects is
//! dropped at once. Every drop is counted: in [`Summary::dropped`], in an [`Event`], and as the
//! `dropped_profiles` label of the next push that arrives.
//!
//! [`Pusher::finish`] sends what is left within a deadline and counts the rest as dropped.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::auth::Auth;
use crate::endpoint::{Endpoint, Outcome};
use crate::interval::Interval;
use crate::labels::Labels;

/// Intervals kept while the backend is unreachable, by default (ten minutes of one-minute
/// intervals, the time a backend restart or a network blip takes).
pub const DEFAULT_QUEUE: usize = 10;
/// How long one request may take, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long to wait before the attempts after a failure: `first`, doubling up to `max`,
/// each wait drawn between half and all of it (jitter keeps a fleet of JVMs whose backend
/// came back from retrying in step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first failure.
    pub first: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            first: Duration::from_secs(1),
            max: Duration::from_secs(60),
        }
    }
}

impl Backoff {
    /// The wait after `failures` failures in a row (1: the first), jittered.
    pub fn wait(&self, failures: u32) -> Duration {
        let exp = failures.saturating_sub(1).min(30);
        let full = self.first.saturating_mul(1 << exp).min(self.max);
        let half = full / 2;
        half + half.mul_f64(fastrand::f64())
    }
}

/// What the pusher is to do.
#[derive(Clone, Debug)]
pub struct PushConfig {
    /// Where to.
    pub endpoint: Endpoint,
    /// The labels of every push.
    pub labels: Labels,
    /// Credentials.
    pub auth: Auth,
    /// Intervals kept waiting at most (at least 1).
    pub queue: usize,
    /// How long one request may take.
    pub timeout: Duration,
    /// Waits between attempts.
    pub backoff: Backoff,
}

impl PushConfig {
    /// A configuration with the defaults.
    pub fn new(endpoint: Endpoint, labels: Labels, auth: Auth) -> PushConfig {
        PushConfig {
            endpoint,
            labels,
            auth,
            queue: DEFAULT_QUEUE,
            timeout: DEFAULT_TIMEOUT,
            backoff: Backoff::default(),
        }
    }
}

/// What happened to a push, for the host's log.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// An interval arrived.
    Sent {
        /// Its body's size.
        bytes: usize,
        /// Failed attempts before this one.
        failures: u32,
        /// Intervals dropped before it, reported in its labels.
        dropped_before: u64,
        /// What the backend said it did not keep, if anything.
        note: Option<String>,
    },
    /// An attempt failed; the interval is sent again after `wait`.
    Failed {
        /// Failed attempts in a row.
        failures: u32,
        /// What happened.
        reason: String,
        /// The wait before the next attempt.
        wait: Duration,
    },
    /// Intervals were dropped.
    Dropped {
        /// How many.
        count: u64,
        /// Why.
        reason: String,
    },
}

/// What the pusher did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Intervals that arrived.
    pub sent: u64,
    /// Their bodies' bytes.
    pub bytes: u64,
    /// Intervals dropped (queue full, rejected, or left at the end).
    pub dropped: u64,
    /// Failed attempts.
    pub failures: u64,
    /// Intervals without samples, not sent.
    pub empty: u64,
    /// Why the last attempt failed, while no later one has arrived.
    pub last_failure: Option<String>,
    /// Intervals waiting to be sent.
    pub pending: u64,
}

/// Why the pusher could not start.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// No CA certificates for an `https://` URL.
    #[error("no CA certificates found for {0} (install ca-certificates, or set SSL_CERT_FILE)")]
    NoRoots(String),
    /// The sender thread could not be started.
    #[error("cannot start the push thread: {0}")]
    Thread(#[from] std::io::Error),
}

struct Queued {
    seq: u64,
    interval: Interval,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Queued>,
    next_seq: u64,
    /// Dropped since the last interval that arrived: the next push's label.
    unreported: u64,
    summary: Summary,
    /// Set by `finish`: send what is left until then.
    deadline: Option<Instant>,
    /// The sequence number of the interval being sent: it stays at the queue's front.
    in_flight: Option<u64>,
    /// The sender has exited.
    done: bool,
}

type Log = Arc<dyn Fn(&Event) + Send + Sync>;

struct Shared {
    state: Mutex<State>,
    /// Wakes the sender (new interval, finish) and `finish` (sender done).
    wake: Condvar,
    log: Log,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn drop_counted(&self, state: &mut State, count: u64, reason: String) {
        state.summary.dropped += count;
        state.unreported += count;
        (self.log)(&Event::Dropped { count, reason });
    }
}

/// Delivers intervals to a backend from its own thread.
pub struct Pusher {
    shared: Arc<Shared>,
    capacity: usize,
}

impl Pusher {
    /// Starts the sender thread. `log` hears every [`Event`] (on the sender's thread, or the
    /// caller's for drops at [`Pusher::push`]).
    pub fn start(
        config: PushConfig,
        log: impl Fn(&Event) + Send + Sync + 'static,
    ) -> Result<Pusher, PushError> {
        let agent = crate::http::agent(&config)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            log: Arc::new(log),
        });
        let capacity = config.queue.max(1);
        let sender = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("ferrofluid-send".into())
            .spawn(move || {
                send_loop(&sender, &config, &agent);
                sender.lock().done = true;
                sender.wake.notify_all();
            })?;
        Ok(Pusher { shared, capacity })
    }

    /// Queues `interval` (an empty one is counted, not sent). Never waits for the network:
    /// when the queue is full, its oldest interval is dropped.
    pub fn push(&self, interval: Interval) {
        let mut state = self.shared.lock();
        if interval.is_empty() {
            state.summary.empty += 1;
            return;
        }
        // The oldest that is not being sent (a queue of one grows by one while it is).
        let oldest = usize::from(state.in_flight.is_some());
        if state.queue.len() >= self.capacity && oldest < state.queue.len() {
            state.queue.remove(oldest);
            let reason = format!(
                "the backend has not taken the last {} profiles; the oldest was dropped",
                self.capacity
            );
            self.shared.drop_counted(&mut state, 1, reason);
        }
        let seq = state.next_seq;
        state.next_seq += 1;
        state.queue.push_back(Queued { seq, interval });
        drop(state);
        self.shared.wake.notify_all();
    }

    /// What was done so far.
    pub fn summary(&self) -> Summary {
        let state = self.shared.lock();
        Summary {
            pending: state.queue.len() as u64,
            ..state.summary.clone()
        }
    }

    /// Intervals waiting to be sent.
    pub fn pending(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// Sends what is queued, trying for at most `within`; what is still queued then is dropped
    /// and counted. A request in flight at the deadline is abandoned to its own timeout.
    pub fn finish(self, within: Duration) -> Summary {
        let deadline = Instant::now() + within;
        let mut state = self.shared.lock();
        state.deadline = Some(deadline);
        self.shared.wake.notify_all();
        while !state.done {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = self
                .shared
                .wake
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        let left = state.queue.len() as u64;
        if left > 0 {
            state.queue.clear();
            let reason = format!(
                "{left} profiles were not delivered within {within:?} of the end of profiling"
            );
            self.shared.drop_counted(&mut state, left, reason);
        }
        state.summary.clone()
    }
}

impl Drop for Pusher {
    /// A pusher dropped without [`Pusher::finish`] (its host failed) stops its sender and
    /// counts what it had not sent.
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        if state.deadline.is_some() {
            return;
        }
        state.deadline = Some(Instant::now());
        let left = state.queue.len() as u64;
        if left > 0 {
            state.queue.clear();
            let reason = format!("{left} profiles were not sent: pushing stopped");
            self.shared.drop_counted(&mut state, left, reason);
        }
        drop(state);
        self.shared.wake.notify_all();
    }
}

/// The sender thread: sends the oldest interval until the queue is empty and `finish` was
/// called, or `finish`'s deadline passes.
fn send_loop(shared: &Shared, config: &PushConfig, agent: &ureq::Agent) {
    let mut failures: u32 = 0;
    let mut retry_at: Option<Instant> = None;
    loop {
        let (interval, unreported) = {
            let mut state = shared.lock();
            loop {
                let now = Instant::now();
                if state.deadline.is_some_and(|d| now >= d) {
                    return;
                }
                if state.queue.is_empty() {
                    if state.deadline.is_some() {
                        return;
                    }
                    state = shared.wake.wait(state).unwrap_or_else(|p| p.into_inner());
                    continue;
                }
                match retry_at {
                    Some(r) if r > now => {
                        let until = state.deadline.map_or(r, |d| d.min(r));
                        state = shared
                            .wake
                            .wait_timeout(state, until - now)
                            .unwrap_or_else(|p| p.into_inner())
                            .0;
                    }
                    _ => break,
                }
            }
            let front = state.queue.front().expect("a queued interval");
            let picked = (front.interval.clone(), state.unreported);
            state.in_flight = Some(front.seq);
            picked
        };
        retry_at = None;
        let labels = config.labels.with_dropped(unreported);
        let outcome = match config.endpoint.request(&interval, &labels) {
            Ok(request) => {
                let bytes = request.body.len();
                (crate::http::send(agent, config, &request), bytes)
            }
            Err(e) => (
                Outcome::Rejected {
                    reason: e.to_string(),
                },
                0,
            ),
        };
        let mut state = shared.lock();
        state.in_flight = None;
        match outcome {
            (Outcome::Accepted { note }, bytes) => {
                state.queue.pop_front();
                state.summary.sent += 1;
                state.summary.bytes += bytes as u64;
                state.summary.last_failure = None;
                state.unreported = state.unreported.saturating_sub(unreported);
                (shared.log)(&Event::Sent {
                    bytes,
                    failures,
                    dropped_before: unreported,
                    note,
                });
                failures = 0;
            }
            (Outcome::Rejected { reason }, _) => {
                state.queue.pop_front();
                shared.drop_counted(&mut state, 1, format!("rejected: {reason}"));
                failures = 0;
            }
            (Outcome::Retry { reason, after }, _) => {
                failures += 1;
                state.summary.failures += 1;
                state.summary.last_failure = Some(reason.clone());
                let wait = after
                    .map(|a| a.min(Duration::from_secs(300)))
                    .unwrap_or_else(|| config.backoff.wait(failures));
                retry_at = Some(Instant::now() + wait);
                (shared.log)(&Event::Failed {
                    failures,
                    reason,
                    wait,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_up_to_the_max() {
        let b = Backoff {
            first: Duration::from_millis(100),
            max: Duration::from_millis(1000),
        };
        for _ in 0..100 {
            let w = |n| b.wait(n).as_millis();
            assert!((50..=100).contains(&w(1)), "{}", w(1));
            assert!((100..=200).contains(&w(2)));
            assert!((400..=800).contains(&w(4)));
            assert!((500..=1000).contains(&w(5)));
            assert!((500..=1000).contains(&w(40)));
        }
    }
}
