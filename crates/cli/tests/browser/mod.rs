//! Headless Chromium for the page tests: chromedriver on a free loopback port, and a browser
//! session with a profile directory of the test's own.

#![allow(dead_code)] // each test binary uses its own part

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

/// chromedriver on a free loopback port, ended when dropped.
pub struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    pub fn start() -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver (Debian's chromium-driver; .ci/run installs it)");
        let until = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < until, "chromedriver does not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Driver { child, port }
    }

    /// A headless Chromium of 1400x900 with its profile in `profile`, offline services off.
    pub async fn session(&self, profile: &Path) -> Client {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({ "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1400,900",
                format!("--user-data-dir={}", profile.display()),
            ]}),
        );
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("chromedriver session")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The runtime the tests drive their browser sessions on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Clicks the element `locator` finds on `page`.
pub async fn click(page: &Client, locator: Locator<'_>) {
    page.find(locator).await.unwrap().click().await.unwrap();
}

/// Shows the profile page's call tree.
pub async fn show_tree(page: &Client) {
    click(page, Locator::Css(".ffapp .tab[data-view=\"tree\"]")).await;
}
