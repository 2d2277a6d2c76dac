//! A scripted HTTP/1.1 receiver on 127.0.0.1 for the push tests: it records every request and
//! answers as told (a status, a stall without answer, a dropped connection), standing in for a
//! profiling backend that fails, stalls and comes back; over TLS too ([`Receiver::start_tls`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How the receiver answers a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// HTTP `status` with these headers and body.
    Status(u16, Vec<(String, String)>, Vec<u8>),
    /// No answer for this long, then the connection is closed.
    Stall(Duration),
    /// The connection is closed at once, without an answer.
    Close,
}

impl Answer {
    /// `status` with an empty body.
    pub fn status(status: u16) -> Answer {
        Answer::Status(status, Vec::new(), Vec::new())
    }
}

/// One request as received.
#[derive(Clone, Debug)]
pub struct Request {
    /// `POST`, ...
    pub method: String,
    /// The path and query, as sent.
    pub target: String,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// When its body had arrived.
    pub at: Instant,
}

impl Request {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path, without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The query's parameters, percent-decoded.
    pub fn query(&self) -> Vec<(String, String)> {
        let Some((_, q)) = self.target.split_once('?') else {
            return Vec::new();
        };
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (decode(k), decode(v)))
            .collect()
    }

    /// The value of query parameter `name`.
    pub fn param(&self, name: &str) -> Option<String> {
        self.query()
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[derive(Default)]
struct State {
    /// Answers for the next requests, in order; when empty, `default`.
    script: Vec<Answer>,
    default: Option<Answer>,
    received: Vec<Request>,
}

/// The receiver; it stops accepting when dropped (connections in progress finish).
pub struct Receiver {
    addr: SocketAddr,
    state: Arc<(Mutex<State>, Condvar)>,
    tls: bool,
}

impl Receiver {
    /// Listens on a free loopback port; answers 200 until told otherwise.
    pub fn start() -> Receiver {
        Self::listen(None)
    }

    /// As [`Receiver::start`], over TLS with the certificate chain and key of these PEM files
    /// (a certificate for the IP address 127.0.0.1: see [`test_certificates`]).
    pub fn start_tls(chain: &std::path::Path, key: &std::path::Path) -> Receiver {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(chain)
            .expect("certificate chain")
            .map(|c| c.expect("a PEM certificate"))
            .collect();
        let key = PrivateKeyDer::from_pem_file(key).expect("private key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server certificate");
        Self::listen(Some(Arc::new(config)))
    }

    fn listen(tls: Option<Arc<rustls::ServerConfig>>) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new((
            Mutex::new(State {
                default: Some(Answer::status(200)),
                ..State::default()
            }),
            Condvar::new(),
        ));
        let shared = Arc::clone(&state);
        let config = tls.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                // The test ended: the receiver is dropped, nobody reads what comes.
                if Arc::strong_count(&shared) == 1 {
                    return;
                }
                let shared = Arc::clone(&shared);
                let tls = config.clone();
                std::thread::spawn(move || match tls {
                    None => serve(stream, &shared),
                    Some(config) => {
                        if let Ok(conn) = rustls::ServerConnection::new(config) {
                            serve(rustls::StreamOwned::new(conn, stream), &shared);
                        }
                    }
                });
            }
        });
        Receiver {
            addr,
            state,
            tls: tls.is_some(),
        }
    }

    /// `http://127.0.0.1:PORT` (`https://` over TLS) followed by `path`.
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}{path}", self.addr)
    }

    /// The address listened on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answers the next requests with `answers`, in order, then with `then`.
    pub fn script(&self, answers: Vec<Answer>, then: Answer) {
        let mut s = self.state.0.lock().unwrap();
        s.script = answers;
        s.script.reverse();
        s.default = Some(then);
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Request> {
        self.state.0.lock().unwrap().received.clone()
    }

    /// Waits until `n` requests were received (at most `timeout`); returns them.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> Vec<Request> {
        let deadline = Instant::now() + timeout;
        let (lock, cond) = &*self.state;
        let mut s = lock.lock().unwrap();
        while s.received.len() < n {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            s = cond.wait_timeout(s, deadline - now).unwrap().0;
        }
        s.received.clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        // Wakes the accept loop so that it sees it is alone and ends.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Serves the requests of one connection (clients keep connections alive).
fn serve(stream: impl Read + Write, state: &(Mutex<State>, Condvar)) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_owned();
        let target = parts.next().unwrap_or("").to_owned();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let (lock, cond) = state;
        let answer = {
            let mut s = lock.lock().unwrap();
            s.received.push(Request {
                method,
                target,
                headers,
                body,
                at: Instant::now(),
            });
            cond.notify_all();
            s.script
                .pop()
                .or_else(|| s.default.clone())
                .unwrap_or(Answer::status(200))
        };
        match answer {
            Answer::Status(status, headers, body) => {
                let mut head = format!(
                    "HTTP/1.1 {status} Status\r\nContent-Length: {}\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    head += &format!("{k}: {v}\r\n");
                }
                head += "\r\n";
                let writer = reader.get_mut();
                if writer.write_all(head.as_bytes()).is_err()
                    || writer.write_all(&body).is_err()
                    || writer.flush().is_err()
                {
                    return;
                }
            }
            Answer::Stall(d) => {
                std::thread::sleep(d);
                return;
            }
            Answer::Close => return,
        }
    }
}

/// A certificate authority and a server certificate it signed for the IP address 127.0.0.1,
/// made by `openssl` in `dir`: `(ca.pem, chain.pem, key.pem)`, or `None` without `openssl`.
pub fn test_certificates(dir: &std::path::Path) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let openssl = |args: &[&str]| {
        std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .map(|o| {
                assert!(
                    o.status.success(),
                    "openssl {args:?}: {}",
                    String::from_utf8_lossy(&o.stderr)
                )
            })
            .is_ok()
    };
    std::fs::create_dir_all(dir).ok()?;
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    // Each directory's CA has a name of its own: one CA is not taken for another's issuer.
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let subject = format!("/CN=ferrofluid test CA {name}");
    let made = openssl(
        &[
            &["req", "-x509", "-days", "2", "-subj", &subject][..],
            &ec,
            &["-keyout", "ca.key", "-out", "ca.pem"],
        ]
        .concat(),
    );
    if !made {
        return None;
    }
    openssl(
        &[
            &["req", "-subj", "/CN=127.0.0.1"][..],
            &ec,
            &["-keyout", "key.pem", "-out", "server.csr"],
        ]
        .concat(),
    );
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n\
         extendedKeyUsage=serverAuth\n",
    )
    .ok()?;
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        "-out",
        "server.pem",
    ]);
    let chain = [
        std::fs::read_to_string(dir.join("server.pem")).ok()?,
        std::fs::read_to_string(dir.join("ca.pem")).ok()?,
    ]
    .concat();
    std::fs::write(dir.join("chain.pem"), chain).ok()?;
    Some((
        dir.join("ca.pem"),
        dir.join("chain.pem"),
        dir.join("key.pem"),
    ))
}
