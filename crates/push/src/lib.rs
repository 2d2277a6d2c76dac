//! Continuous profiling: each interval's profile delivered to the backend a fleet already runs,
//! Grafana Pyroscope, Parca or an OpenTelemetry profiles receiver, chosen by the URL
//! ([`endpoint`]).
//!
//! The host (`ferrofluid attach --push`, or the agent's own thread) takes a snapshot of the
//! recording every interval, keeps what was collected since the last one
//! ([`ferrofluid_profile::Profile::since`]), encodes it ([`Interval`]: pprof, which all three
//! backends take) and hands it to a [`Pusher`], whose thread delivers it with the standard
//! labels ([`labels`]) and credentials from the environment ([`auth`]), retrying with backoff
//! into a bounded queue and counting what it had to drop ([`pusher`]).
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use ferrofluid_profile::{CallTree, Mode, NodeId, NodeKind, Profile, ThreadProfile};
//! use ferrofluid_push::{Endpoint, Interval, Labels};
//!
//! let mut profile = Profile::new(Mode::Cpu);
//! let f = profile.methods.insert("com.acme.App", "handle", "()V");
//! let mut tree = CallTree::new();
//! let n = tree.add_child(NodeId::ROOT, NodeKind::Method(f));
//! tree.node_mut(n).calls = 3;
//! tree.node_mut(n).total_ns = 900;
//! profile.threads.push(ThreadProfile::new("main", 1, tree));
//!
//! let from = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
//! let interval = Interval::new(&profile, from, from + Duration::from_secs(10));
//! let endpoint: Endpoint = "http://pyroscope:4040/ingest".parse().unwrap();
//! let labels = Labels::new("com.acme.App", "web-1", 4242, "cpu");
//! let request = endpoint.request(&interval, &labels).unwrap();
//! assert_eq!(
//!     request.url,
//!     "http://pyroscope:4040/ingest?name=com.acme.App%7Bhost%3Dweb-1%2Cpid%3D4242%2Cmode%3Dcpu%7D\
//!      &from=1700000000&until=1700000010&format=pprof&spyName=ferrofluid"
//! );
//! assert_eq!(request.body, &interval.pprof[..]);
//! ```
#![deny(missing_docs)]

pub mod auth;
pub mod endpoint;
mod http;
pub mod interval;
pub mod labels;
pub mod otlp;
pub mod pusher;

pub use auth::{Auth, AuthError};
pub use endpoint::{Backend, Endpoint, EndpointError, HttpRequest, Outcome};
pub use interval::Interval;
pub use labels::{LabelError, Labels};
pub use pusher::{Backoff, Event, PushConfig, PushError, Pusher, Summary};
