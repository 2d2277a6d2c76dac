//! The live web UI against a real attached JVM: headless Chromium (through chromedriver and
//! fantoccini) sees the call tree's root, numbers that grow, Reset emptying them and Stop writing
//! the report; plain HTTP checks the token rule, the loopback default and Detach.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::Locator;
use serde_json::{json, Value};

mod browser;
use browser::Driver;
mod common;
use common::{agent, attach, calls, child, read_profile_json, Program, Rounds};

/// A running `Rounds` (`tag` names its directory DIR) and `ferrofluid attach PID --root
/// Rounds::round --include Rounds --timing probes --ui -o DIR/out.json` once it printed the UI's
/// URL: the target, the report's path, the CLI's process and the URL. Per-call timing: every
/// method has a time of its own (a method that runs a few µs per round may take no sample).
fn ui_session(tag: &str) -> (Rounds, PathBuf, Program, String) {
    let target = Rounds::start(tag);
    let out = target.dir.join("out.json");
    // What it prints after the URL is read (and dropped) by `Program`: it never blocks on a full
    // pipe.
    let cli = Program::spawn(
        attach(target.pid())
            .args(common::args(
                "--root Rounds::round --include Rounds --timing probes --ui -o",
            ))
            .arg(&out)
            .stdin(Stdio::null())
            .stderr(Stdio::piped()),
    );
    let url = loop {
        let line = cli.line();
        if let Some(url) = line.trim().strip_prefix("ferrofluid: live UI at ") {
            break url.to_owned();
        }
    };
    (target, out, cli, url)
}

/// Waits up to a minute for `cli` to exit; its exit status and stderr.
fn exit_of(cli: &mut Child) -> (bool, String) {
    let until = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = cli.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < until, "ferrofluid did not exit");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    cli.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (status.success(), err)
}

/// One HTTP/1.1 request; the status code and body.
fn http(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let code = text[9..12].parse().unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    // Bodies of JSON answers may come chunked.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (code, body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((len, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(len.trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

/// The address and token of a UI URL `http://ADDR/?token=T`.
fn parts(url: &str) -> (SocketAddr, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, token) = rest.split_once("/?token=").unwrap();
    (addr.parse().unwrap(), token.to_owned())
}

#[test]
fn requests_without_the_token_get_nothing_and_change_nothing() {
    let (target, out, mut cli, url) = ui_session("ui-token");
    let (addr, token) = parts(&url);
    // Loopback unless the user names another address.
    assert_eq!(addr.ip().to_string(), "127.0.0.1");
    let refused = "ferrofluid: this URL needs the token printed when the UI started\n";
    for (method, path) in [
        ("GET", "/".to_owned()),
        ("GET", "/api/profile".to_owned()),
        ("GET", "/api/status?token=".to_owned()),
        ("POST", "/api/reset".to_owned()),
        ("POST", "/api/stop".to_owned()),
        ("POST", format!("/api/detach?token={}", "f".repeat(32))),
    ] {
        assert_eq!(
            http(addr, method, &path),
            (401, refused.to_owned()),
            "{method} {path}"
        );
    }
    // Neither stop nor detach happened: the session goes on, and answers the token.
    assert!(cli.child().try_wait().unwrap().is_none());
    let (code, body) = http(addr, "GET", &format!("/api/status?token={token}"));
    assert_eq!(code, 200, "{body}");
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["state"], "profiling");
    assert_eq!(status["agent"]["collecting"], true);
    assert_eq!(
        status["about"],
        json!({"pid": target.pid(), "command": "attach"})
    );
    let (code, body) = http(addr, "GET", &format!("/api/profile?token={token}"));
    assert_eq!(code, 200, "{body}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["mode"], "cpu");
    assert_eq!(
        doc["metrics"],
        json!([{"name": "calls", "unit": "count"}, {"name": "time", "unit": "nanoseconds"}])
    );
    // Detach: the probes go, the JVM runs on, no report is written.
    let (code, body) = http(addr, "POST", &format!("/api/detach?token={token}"));
    let said = format!(
        "detached: the agent in JVM {} removed its probes and is dormant; no report was written",
        target.pid()
    );
    assert_eq!((code, body), (200, json!({ "message": said }).to_string()));
    let (ok, err) = exit_of(cli.child());
    assert!(ok, "{err}");
    assert!(err.contains(&said), "{err}");
    assert!(!out.exists());
    target.finish();
}

#[test]
fn a_non_loopback_address_is_served_only_when_named() {
    let (target, out, mut cli, url) = ui_session("ui-loopback");
    let (addr, token) = parts(&url);
    // Every other address of this machine refuses the UI's port.
    let others = Command::new("hostname").arg("-I").output().unwrap();
    for ip in String::from_utf8_lossy(&others.stdout).split_whitespace() {
        let ip: std::net::IpAddr = ip.parse().unwrap();
        if !ip.is_loopback() {
            let other = SocketAddr::new(ip, addr.port());
            assert!(
                TcpStream::connect_timeout(&other, Duration::from_secs(2)).is_err(),
                "the UI answers on {other}"
            );
        }
    }
    let (code, _) = http(addr, "POST", &format!("/api/stop?token={token}"));
    assert_eq!(code, 200);
    let (ok, err) = exit_of(cli.child());
    assert!(ok, "{err}");
    assert!(out.exists());
    target.finish();
}

/// The `data-ATTR` of the call tree's row for `name`, as a number, if the page shows it now.
async fn tree_value(page: &fantoccini::Client, name: &str, attr: &str) -> Option<u64> {
    let css = format!("#ff-tree tr[data-name=\"{name}\"]");
    // The rows are redrawn on every refresh: one found may be gone when read.
    let row = page.find(Locator::Css(&css)).await.ok()?;
    row.attr(attr).await.ok()??.parse().ok()
}

/// Waits (up to a minute) until the tree's row for `name` shows a `data-ATTR` that satisfies
/// `ok`; the value.
async fn tree_until(
    page: &fantoccini::Client,
    name: &str,
    attr: &str,
    ok: impl Fn(u64) -> bool,
) -> u64 {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = tree_value(page, name, attr).await {
            if ok(v) {
                return v;
            }
        }
        assert!(
            Instant::now() < until,
            "the tree's {name} {attr} never became as expected"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn round_calls_until(page: &fantoccini::Client, ok: impl Fn(u64) -> bool) -> u64 {
    tree_until(page, "Rounds.round", "data-calls", ok).await
}

#[test]
fn chromium_sees_the_tree_grow_reset_and_stop_write_the_report() {
    let (target, out, mut cli, url) = ui_session("ui-browser");
    let driver = Driver::start();
    let profile = target.dir.join("chromium-profile");
    let runtime = browser::runtime();
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-browser.png");
    let message = runtime.block_on(async {
        let page = driver.session(&profile).await;
        page.goto(&url).await.unwrap();
        browser::show_tree(&page).await;
        // The root: all threads merged, their root method below it.
        tree_until(&page, "all threads", "data-total-time", |_| true).await;
        let first = round_calls_until(&page, |v| v > 0).await;
        let grown = round_calls_until(&page, |v| v > first).await;
        // Search: the matched share of `step` is part of the whole, not all of it.
        page.find(Locator::Css("#ff-search"))
            .await
            .unwrap()
            .send_keys("Rounds.step")
            .await
            .unwrap();
        let share: f64 = page
            .find(Locator::Css("#ff-matched"))
            .await
            .unwrap()
            .attr("data-share")
            .await
            .unwrap()
            .unwrap()
            .parse()
            .unwrap();
        assert!(share > 0.0 && share < 1.0, "{share}");
        let _ = page
            .screenshot()
            .await
            .map(|png| std::fs::write(&shot, png));
        // Reset: what was counted is gone; what follows is counted from zero.
        let before = round_calls_until(&page, |v| v > grown).await;
        browser::click(&page, Locator::Id("ff-reset")).await;
        round_calls_until(&page, |v| v < before).await;
        browser::click(&page, Locator::Id("ff-stop")).await;
        let until = Instant::now() + Duration::from_secs(60);
        let message = loop {
            let text = page
                .find(Locator::Id("ff-message"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            if text.starts_with("stopped") || Instant::now() > until {
                break text;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let _ = page.close().await;
        message
    });
    assert_eq!(
        message,
        format!("stopped: report written to {}", out.display())
    );
    let (ok, err) = exit_of(cli.child());
    assert!(ok, "{err}");
    let doc = read_profile_json(&out);
    let main = &doc["threads"][0]["root"];
    let round = child(main, "round");
    assert!(calls(round) > 0, "{doc}");
    let work = calls(child(round, "work"));
    // A round in flight at the reset counts its time but not its call.
    assert!(
        work + 1 >= calls(round) && work <= calls(round) + 1,
        "{doc}"
    );
    drop(driver);
    target.finish();
}

/// `ferrofluid top` on a pseudo-terminal (`script`): it shows the program's methods, quits on
/// `q`, and leaves the agent dormant with every probe removed.
#[test]
fn top_shows_the_methods_and_leaves_the_jvm_as_it_was() {
    let target = Rounds::start("ui-top");
    let pid = target.pid().to_string();
    // `script` gives it a terminal; the terminal has no size until one is set.
    let command = format!(
        "stty rows 30 cols 120; exec {} top {pid} --agent {} --root Rounds::round --include Rounds",
        env!("CARGO_BIN_EXE_ferrofluid"),
        agent().display()
    );
    let mut top = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux)");
    let screen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut out = top.stdout.take().unwrap();
    let seen = std::sync::Arc::clone(&screen);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(&buf[..n]);
        }
    });
    let text =
        || String::from_utf8_lossy(&screen.lock().unwrap_or_else(|e| e.into_inner())).into_owned();
    let shows = |what: &str| text().contains(what);
    let until = Instant::now() + Duration::from_secs(60);
    while !(shows("Rounds.step") && shows("%SELF")) {
        assert!(
            Instant::now() < until,
            "top never showed Rounds.step: {}",
            text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    top.stdin.as_mut().unwrap().write_all(b"q").unwrap();
    let (ok, err) = exit_of(&mut top);
    assert!(ok, "{err}");
    assert!(
        shows(&format!(
            "detached; the agent in JVM {pid} removed its probes and is dormant"
        )),
        "{}",
        text()
    );
    let status = attach(target.pid()).output().unwrap();
    let stderr = String::from_utf8_lossy(&status.stderr).into_owned();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("collecting:     no\n"), "{status}{stderr}");
    assert!(
        status.contains("instrumented:   0 classes, 0 methods\n"),
        "{status}"
    );
    target.finish();
}
