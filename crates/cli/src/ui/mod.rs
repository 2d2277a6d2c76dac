//! The live web UI (`--ui [ADDR]`): an HTTP server on its own thread serving one page (its
//! script and style compiled into the binary, so it works offline) and the JSON endpoints the page
//! reads (docs/ui.md). Every request must carry the session's random token; the server binds
//! loopback unless the user names another address.
//!
//! The server never talks to the agent itself: a live profile's requests go as [`Job`]s to the
//! thread that owns the control connection, which answers them between its waits.

use std::net::{SocketAddr, TcpListener};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use ferrofluid_protocol::control::{Client, Request as AgentRequest, Response as AgentResponse};
use serde_json::{json, Value};

/// The address `--ui` binds without a value: loopback, a port the system picks.
pub const DEFAULT_ADDR: &str = "127.0.0.1:0";

/// The token every request must carry: 128 random bits, hex.
fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// What the page asks of a live profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// The profile so far (the agent's `snapshot`), without stopping.
    Snapshot,
    /// The agent's status.
    Status,
    /// Discard what was collected and go on (the agent's `reset`).
    Reset,
    /// End profiling and write the report; answered once it is written.
    Stop,
    /// Remove the probes and detach without a report.
    Detach,
}

/// One request of the page, to be answered by the thread that owns the agent connection.
pub struct Job {
    pub ask: Ask,
    reply: tokio::sync::oneshot::Sender<Result<Value, String>>,
}

impl Job {
    /// Answers the page: `Ok` with the JSON it gets, or `Err` with one line.
    pub fn answer(self, result: Result<Value, String>) {
        // The page may have gone away meanwhile: nobody to tell.
        let _ = self.reply.send(result);
    }
}

/// Answers `job` through the agent connection `client` if it only reads or resets the
/// profile; hands Stop and Detach back, which end the session the caller runs.
pub fn serve_job(client: &mut Client, job: Job) -> Option<Job> {
    let reply = |r: Result<AgentResponse, ferrofluid_protocol::control::FrameError>| match r {
        Ok(AgentResponse::Snapshot { profile }) => Ok(profile),
        Ok(AgentResponse::Status(status)) => {
            serde_json::to_value(status).map_err(|e| e.to_string())
        }
        Ok(AgentResponse::Ok) => Ok(json!({
            "message": "the data collected so far was discarded; profiling goes on"
        })),
        Ok(AgentResponse::Error { message }) => Err(format!("agent: {message}")),
        Ok(other) => Err(format!("unexpected agent reply {other:?}")),
        Err(e) => Err(e.to_string()),
    };
    let request = match job.ask {
        Ask::Snapshot => AgentRequest::Snapshot,
        Ask::Status => AgentRequest::Status,
        Ask::Reset => AgentRequest::Reset,
        Ask::Stop | Ask::Detach => return Some(job),
    };
    job.answer(reply(client.request(&request)));
    None
}

/// Where the page's data comes from.
enum Source {
    /// A running profile, through the connection's owner.
    Live(Mutex<mpsc::Sender<Job>>),
    /// A saved profile (`ferrofluid report FILE --ui`), already in view form.
    Saved(Value),
}

struct Shared {
    token: String,
    source: Source,
    /// What the page shows next to the agent's status: summary of the last snapshot served.
    last: Mutex<Value>,
    /// Set when the session has ended (stopped, detached): control requests are refused.
    ended: Mutex<Option<String>>,
    /// What the page shows as the program profiled (pid, options).
    about: Value,
}

/// A running UI server.
pub struct Server {
    url: String,
    jobs: Option<mpsc::Receiver<Job>>,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Why the UI could not start.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    #[error("cannot serve the UI on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot start the UI: {0}")]
    Start(#[from] std::io::Error),
}

impl Server {
    /// Serves a live profile on `addr`; its requests arrive through [`Server::next_job`].
    pub fn live(addr: SocketAddr, about: Value) -> Result<Server, UiError> {
        let (tx, rx) = mpsc::channel();
        let mut server = Server::start(addr, Source::Live(Mutex::new(tx)), about)?;
        server.jobs = Some(rx);
        Ok(server)
    }

    /// Serves the saved `profile`.
    pub fn saved(
        addr: SocketAddr,
        profile: &ferrofluid_profile::Profile,
        about: Value,
    ) -> Result<Server, UiError> {
        Server::start(addr, Source::Saved(view(profile)), about)
    }

    fn start(addr: SocketAddr, source: Source, about: Value) -> Result<Server, UiError> {
        let listener = TcpListener::bind(addr).map_err(|source| UiError::Bind { addr, source })?;
        listener.set_nonblocking(true)?;
        let local = listener.local_addr()?;
        let token = new_token()?;
        let shared = Arc::new(Shared {
            token: token.clone(),
            source,
            last: Mutex::new(Value::Null),
            ended: Mutex::new(None),
            about,
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = router(Arc::clone(&shared));
        let thread = std::thread::Builder::new()
            .name("ferrofluid-ui".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async move {
                            let _ = stopped.await;
                        })
                        .await;
                });
            })?;
        Ok(Server {
            url: format!("http://{local}/?token={token}"),
            jobs: None,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// The page's URL, token included.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The page's next request of a live profile, if one is waiting.
    pub fn next_job(&self) -> Option<Job> {
        self.jobs.as_ref()?.try_recv().ok()
    }

    /// Marks the session ended with `why` (the page shows it; control requests are refused).
    pub fn end(&self, why: impl Into<String>) {
        *lock(&self.shared.ended) = Some(why.into());
    }

    /// Answers what is still queued (the session is over) and stops serving once the responses
    /// in flight are sent.
    pub fn close(mut self) {
        self.shutdown_now();
    }

    fn shutdown_now(&mut self) {
        let why = lock(&self.shared.ended)
            .clone()
            .unwrap_or_else(|| "profiling has ended".into());
        if let Some(jobs) = &self.jobs {
            while let Ok(job) = jobs.try_recv() {
                job.answer(Err(why.clone()));
            }
        }
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        // Responses in flight are sent; a page that keeps a request open does not hold the
        // tool's exit for more than a moment.
        if let Some(thread) = self.thread.take() {
            let until = std::time::Instant::now() + Duration::from_secs(2);
            while !thread.is_finished() && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}

/// Ends the UI of a session: control requests are refused from now on with `said`, the page's
/// request `job` (Stop, Detach) gets `said` as its answer, and the server stops.
pub fn finish(server: Option<Server>, job: Option<Job>, said: String) {
    if let Some(s) = &server {
        s.end(said.clone());
    }
    if let Some(job) = job {
        job.answer(Ok(json!({ "message": said })));
    }
    if let Some(s) = server {
        s.close();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown_now();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panicked handler leaves the data as it was: still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/status", get(status))
        .route("/api/profile", get(profile))
        .route("/api/reset", post(reset))
        .route("/api/stop", post(stop))
        .route("/api/detach", post(detach))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&shared),
            require_token,
        ))
        .with_state(shared)
}

/// The token of a request: `?token=` in its URL or an `X-Ferrofluid-Token` header.
fn request_token(request: &Request) -> Option<String> {
    if let Some(v) = request.headers().get("x-ferrofluid-token") {
        return v.to_str().ok().map(str::to_owned);
    }
    request
        .uri()
        .query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token=").map(str::to_owned))
}

/// Equal strings, in a time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Refuses, before any handler runs, every request without the session's token.
async fn require_token(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    match request_token(&request) {
        Some(t) if same(&t, &shared.token) => {
            let mut response = next.run(request).await;
            let headers = response.headers_mut();
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
            response
        }
        _ => {
            let status = if *request.method() == Method::GET || *request.method() == Method::POST {
                StatusCode::UNAUTHORIZED
            } else {
                StatusCode::FORBIDDEN
            };
            (
                status,
                "ferrofluid: this URL needs the token printed when the UI started\n",
            )
                .into_response()
        }
    }
}

async fn page() -> Response {
    let html = ferrofluid_report::app::page();
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:",
            ),
        ],
        Body::from(html),
    )
        .into_response()
}

/// Sends `ask` to the connection's owner and waits for its answer.
async fn ask(shared: &Shared, ask: Ask) -> Result<Value, (StatusCode, String)> {
    let Source::Live(jobs) = &shared.source else {
        return Err((
            StatusCode::CONFLICT,
            "a saved profile: there is no program to control".into(),
        ));
    };
    if let Some(why) = lock(&shared.ended).clone() {
        return Err((StatusCode::CONFLICT, why));
    }
    let (reply, answer) = tokio::sync::oneshot::channel();
    lock(jobs)
        .send(Job { ask, reply })
        .map_err(|_| (StatusCode::CONFLICT, "profiling has ended".to_owned()))?;
    // Large snapshots take seconds to build; a stuck agent must not hold the page forever.
    match tokio::time::timeout(Duration::from_secs(120), answer).await {
        Ok(Ok(Ok(v))) => Ok(v),
        Ok(Ok(Err(e))) => Err((StatusCode::BAD_GATEWAY, e)),
        Ok(Err(_)) => Err((StatusCode::CONFLICT, "profiling has ended".into())),
        Err(_) => Err((
            StatusCode::GATEWAY_TIMEOUT,
            "the agent did not answer within 120 s".into(),
        )),
    }
}

fn error(status: StatusCode, message: String) -> Response {
    (status, axum::Json(json!({ "error": message }))).into_response()
}

async fn status(State(shared): State<Arc<Shared>>) -> Response {
    let ended = lock(&shared.ended).clone();
    let agent = match (&shared.source, &ended) {
        (Source::Live(_), None) => match ask(&shared, Ask::Status).await {
            Ok(v) => v,
            Err((s, m)) => return error(s, m),
        },
        _ => Value::Null,
    };
    let state = match (&shared.source, &ended) {
        (Source::Saved(_), _) => "saved",
        (Source::Live(_), Some(_)) => "ended",
        (Source::Live(_), None) => "profiling",
    };
    let last = match &shared.source {
        Source::Saved(v) => summary(v),
        Source::Live(_) => lock(&shared.last).clone(),
    };
    axum::Json(json!({
        "state": state,
        "ended": ended,
        "about": shared.about,
        "agent": agent,
        "profile": last,
    }))
    .into_response()
}

async fn profile(State(shared): State<Arc<Shared>>) -> Response {
    let doc = match &shared.source {
        Source::Saved(v) => v.clone(),
        Source::Live(_) => {
            let raw = match ask(&shared, Ask::Snapshot).await {
                Ok(v) => v,
                Err((s, m)) => return error(s, m),
            };
            // Parsing a large snapshot is work: off the async thread.
            let converted = tokio::task::spawn_blocking(move || {
                ferrofluid_profile::Profile::from_json_slice(
                    &serde_json::to_vec(&raw).unwrap_or_default(),
                )
                .map(|p| view(&p))
                .map_err(|e| format!("the agent's snapshot: {e}"))
            })
            .await;
            match converted {
                Ok(Ok(v)) => {
                    *lock(&shared.last) = summary(&v);
                    v
                }
                Ok(Err(e)) => return error(StatusCode::BAD_GATEWAY, e),
                Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
            }
        }
    };
    axum::Json(doc).into_response()
}

async fn control(shared: Arc<Shared>, what: Ask) -> Response {
    match ask(&shared, what).await {
        Ok(v) => axum::Json(v).into_response(),
        Err((s, m)) => error(s, m),
    }
}

async fn reset(State(shared): State<Arc<Shared>>) -> Response {
    control(shared, Ask::Reset).await
}

async fn stop(State(shared): State<Arc<Shared>>) -> Response {
    control(shared, Ask::Stop).await
}

async fn detach(State(shared): State<Arc<Shared>>) -> Response {
    control(shared, Ask::Detach).await
}

/// The profile as the page reads it (`ferrofluid_report::app::document`).
pub fn view(profile: &ferrofluid_profile::Profile) -> Value {
    ferrofluid_report::app::document(profile)
}

/// Counts the status shows of a profile in view form: methods called, threads.
fn summary(doc: &Value) -> Value {
    json!({
        "mode": doc["mode"],
        "instrumented": doc["methods"]["instrumented"],
        "called": doc["methods"]["called"],
        "threads": doc["threads"].as_array().map_or(0, Vec::len),
        "regions": doc["regions"].as_array().map(Vec::len),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// One HTTP/1.1 request to `addr`; the status code and body.
    fn http(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let code = text[9..12].parse().unwrap();
        let body = text.split_once("\r\n\r\n").unwrap().1.to_owned();
        (code, body)
    }

    /// The address a server listens on, from its URL.
    fn addr(s: &Server) -> SocketAddr {
        s.url()["http://".len()..]
            .split_once('/')
            .unwrap()
            .0
            .parse()
            .unwrap()
    }

    fn saved() -> Server {
        let p = ferrofluid_profile::Profile::default();
        Server::saved(DEFAULT_ADDR.parse().unwrap(), &p, json!({"what": "test"})).unwrap()
    }

    #[test]
    fn the_default_address_is_loopback_and_the_url_carries_the_token() {
        let s = saved();
        assert!(addr(&s).ip().is_loopback());
        assert_ne!(addr(&s).port(), 0);
        let token = s.url().rsplit_once("?token=").unwrap().1;
        assert_eq!(token.len(), 32);
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(
            s.url(),
            format!("http://127.0.0.1:{}/?token={token}", addr(&s).port())
        );
        // Two servers, two tokens.
        assert_ne!(saved().url().rsplit_once('=').unwrap().1, token);
    }

    #[test]
    fn nothing_is_served_without_the_token() {
        let s = saved();
        let token = s.url().rsplit_once("?token=").unwrap().1.to_owned();
        for path in [
            "/",
            "/api/status",
            "/api/profile",
            "/?token=",
            "/?token=0123",
        ] {
            let (code, body) = http(addr(&s), "GET", path);
            assert_eq!(code, 401, "{path}");
            assert_eq!(
                body,
                "ferrofluid: this URL needs the token printed when the UI started\n"
            );
        }
        let wrong = format!("/api/profile?token={}", "0".repeat(32));
        assert_eq!(http(addr(&s), "GET", &wrong).0, 401);
        let (code, body) = http(addr(&s), "GET", &format!("/?token={token}"));
        assert_eq!(code, 200);
        assert!(body.contains("<title>ferrofluid</title>"), "{body}");
        assert!(!body.contains("/*SCRIPT*/"));
        let (code, body) = http(addr(&s), "GET", &format!("/api/profile?token={token}"));
        assert_eq!(code, 200);
        let doc: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(doc["format"], "ferrofluid");
        assert_eq!(
            doc["metrics"],
            json!([{"name": "calls", "unit": "count"}, {"name": "time", "unit": "nanoseconds"}])
        );
        let (code, body) = http(addr(&s), "GET", &format!("/api/status?token={token}"));
        assert_eq!(code, 200);
        let status: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(status["state"], "saved");
        assert_eq!(status["about"]["what"], "test");
        assert_eq!(status["profile"]["threads"], 0);
        // A saved profile has nothing to control.
        let (code, body) = http(addr(&s), "POST", &format!("/api/reset?token={token}"));
        assert_eq!(code, 409);
        assert_eq!(
            body,
            r#"{"error":"a saved profile: there is no program to control"}"#
        );
    }

    #[test]
    fn live_requests_reach_the_owner_only_with_the_token() {
        let s = Server::live(DEFAULT_ADDR.parse().unwrap(), json!({})).unwrap();
        let token = s.url().rsplit_once("?token=").unwrap().1.to_owned();
        let addr = addr(&s);
        for path in ["/api/reset", "/api/stop", "/api/detach"] {
            assert_eq!(http(addr, "POST", path).0, 401);
        }
        assert!(
            s.next_job().is_none(),
            "a request without the token got through"
        );
        let page =
            std::thread::spawn(move || http(addr, "POST", &format!("/api/reset?token={token}")));
        let job = loop {
            if let Some(job) = s.next_job() {
                break job;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(job.ask, Ask::Reset);
        job.answer(Ok(json!({"ok": true})));
        assert_eq!(page.join().unwrap(), (200, r#"{"ok":true}"#.to_owned()));
        s.end("stopped: report written to out.html");
        let token = s.url().rsplit_once("?token=").unwrap().1.to_owned();
        let (code, body) = http(addr, "POST", &format!("/api/stop?token={token}"));
        assert_eq!(code, 409);
        assert_eq!(body, r#"{"error":"stopped: report written to out.html"}"#);
    }
}
