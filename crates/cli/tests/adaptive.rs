//! `ferrofluid run --adaptive` in a real JVM: the probes of a method called often and shorter
//! than its probes are removed while the program runs; the rest of the tree keeps exact counts
//! and every frame closes.

use serde_json::Value;

mod common;
use common::{compile, run_java, thread};
use ferrofluid_testkit::read_profile_json;

#[test]
fn short_frequent_methods_lose_their_probes_as_the_program_runs() {
    let dir = compile("Adaptive.java", "adaptive");
    let out = dir.join("adaptive.json");
    let log = dir.join("agent.log");
    let flags = [
        "--root",
        "Adaptive::round",
        "--include",
        "Adaptive",
        "--adaptive",
        "--log",
        log.to_str().unwrap(),
    ];
    let output = run_java(&flags, &out, &dir, "Adaptive");
    let rounds: u64 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap();
    let doc = read_profile_json(&out);
    assert_eq!(doc["methods"]["probes_dropped"], 1, "{}", doc["methods"]);
    let main = thread(&doc, "main");
    assert!(main.get("unmatched_exits").is_none(), "{main}");
    assert!(main.get("dropped_events").is_none(), "{main}");
    let roots = main["root"]["children"].as_array().unwrap();
    assert_eq!(roots.len(), 1, "{main}");
    let round = &roots[0];
    assert_eq!(round["calls"], rounds);
    let child = |name: &str| -> &Value {
        round["children"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["method"] == name)
            .unwrap_or_else(|| panic!("no {name} under round: {round}"))
    };
    // `big` keeps its probes: one exact call per round.
    assert_eq!(child("big")["calls"], rounds);
    assert!(child("big").get("probes_dropped").is_none());
    // `small` lost them after at least 10000 calls, before the program ended.
    let small = child("small");
    assert_eq!(small["probes_dropped"], true, "{small}");
    let calls = small["calls"].as_u64().unwrap();
    assert!(
        (10_000..rounds * 20_000).contains(&calls),
        "{calls} of {} calls",
        rounds * 20_000
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains(
            "adaptive: removed the probes of 1 methods called at least 10000 times and shorter \
             than their probes (found in "
        ) && log.contains(" ms): Adaptive.small(I)I\n"),
        "{log}"
    );
    // Dropped in Java (`Hooks.dropped`): entries at once, exits once no call of `small` entered
    // before the drop could still be running.
    assert!(
        log.contains("adaptive: the exits of 1 dropped methods now end in Java\n"),
        "{log}"
    );
}
