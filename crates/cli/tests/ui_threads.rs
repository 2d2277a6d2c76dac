//! The profile page's thread views in headless Chromium (chromedriver and fantoccini), on the
//! `.html` report of a saved profile: threads grouped by name put a pool's threads in one
//! tower (`pool-1-thread-*`), beside the merged and one-tower-per-thread views.

use fantoccini::Locator;
use serde_json::json;

mod browser;
use browser::Driver;
mod common;

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
    let dir = common::scratch("ui-threads");
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
    common::write_report(&json, &html, &[]);

    let driver = Driver::start();
    let profile = dir.join("chromium-profile");
    let runtime = browser::runtime();
    runtime.block_on(async {
        let page = driver.session(&profile).await;
        page.goto(&format!("file://{}", html.display()))
            .await
            .unwrap();
        browser::show_tree(&page).await;
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
