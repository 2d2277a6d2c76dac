//! The profile page's thread views in headless Chromium (chromedriver and fantoccini), on the
//! `.html` report of a saved profile: threads grouped by name put a pool's threads in one
//! tower (`pool-1-thread-*`), beside the merged and one-tower-per-thread views.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{ClientBuilder, Locator};
use serde_json::json;

mod common;
use common::ferrofluid;

/// chromedriver on a free loopback port, ended when dropped.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start() -> Driver {
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
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A thread of a count profile running `class.method` `calls` times for `bytecodes`.
fn thread(name: &str, id: u64, class: &str, calls: u64, bytecodes: u64) -> serde_json::Value {
    json!({
        "name": name, "id": id,
        "root": {
            "kind": "thread", "class": "", "method": "<thread>", "descriptor": "",
            "calls": 0, "bytecodes": 0,
            "children": [{
                "class": class, "method": "run", "descriptor": "()V",
                "calls": calls, "bytecodes": bytecodes, "children": []
            }]
        }
    })
}

/// The call tree's rows below the root: (name, total bytecodes), in the page's order.
async fn rows(page: &fantoccini::Client) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for row in page
        .find_all(Locator::Css("#ff-tree tbody tr"))
        .await
        .unwrap()
    {
        let name = row.attr("data-name").await.unwrap().unwrap();
        let total = row.attr("data-total-bytecodes").await.unwrap().unwrap();
        out.push((name, total.parse().unwrap()));
    }
    out
}

#[test]
fn threads_grouped_by_name_share_one_tower_per_pool() {
    let dir = ferrofluid_testkit::scratch_dir(Path::new(env!("CARGO_TARGET_TMPDIR")), "ui-threads");
    let doc = json!({
        "format": "ferrofluid", "version": 1, "mode": "count",
        "metrics": [{"name": "calls", "unit": "count"}, {"name": "bytecodes", "unit": "count"}],
        "methods": {"instrumented": 2, "called": 2},
        "threads": [
            thread("pool-1-thread-7", 21, "demo.Task", 3, 30),
            thread("main", 1, "demo.Main", 1, 5),
            thread("pool-1-thread-9", 23, "demo.Task", 4, 40),
        ]
    });
    let json = dir.join("threads.json");
    std::fs::write(&json, serde_json::to_vec(&doc).unwrap()).unwrap();
    let html = dir.join("threads.html");
    let out = ferrofluid()
        .arg("report")
        .arg(&json)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let driver = Driver::start();
    let profile = dir.join("chromium-profile");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({ "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1400,900",
                format!("--user-data-dir={}", profile.display()),
            ]}),
        );
        let page = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", driver.port))
            .await
            .expect("chromedriver session");
        page.goto(&format!("file://{}", html.display()))
            .await
            .unwrap();
        page.find(Locator::Css(".ffapp .tab[data-view=\"tree\"]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let select = page.find(Locator::Css("#ff-threads")).await.unwrap();
        let options: Vec<String> = {
            let mut v = Vec::new();
            for o in select.find_all(Locator::Css("option")).await.unwrap() {
                v.push(o.attr("value").await.unwrap().unwrap());
            }
            v
        };
        assert_eq!(options, ["merged", "groups", "each", "0", "1", "2"]);

        // Merged (the default): one root, both methods under it.
        assert_eq!(
            rows(&page).await,
            [
                ("all threads".to_owned(), 75),
                ("Task.run".to_owned(), 70),
                ("Main.run".to_owned(), 5)
            ]
        );
        select.select_by_value("groups").await.unwrap();
        assert_eq!(
            rows(&page).await,
            [
                ("all threads".to_owned(), 75),
                ("pool-1-thread-*".to_owned(), 70),
                ("main".to_owned(), 5)
            ]
        );
        let group = page
            .find(Locator::Css("#ff-tree tr[data-name=\"pool-1-thread-*\"]"))
            .await
            .unwrap();
        assert_eq!(
            group.attr("data-full").await.unwrap().unwrap(),
            "threads pool-1-thread-* (2, merged)"
        );
        select.select_by_value("each").await.unwrap();
        assert_eq!(
            rows(&page).await,
            [
                ("all threads".to_owned(), 75),
                ("pool-1-thread-9".to_owned(), 40),
                ("pool-1-thread-7".to_owned(), 30),
                ("main".to_owned(), 5)
            ]
        );
        page.close().await.unwrap();
    });
}
