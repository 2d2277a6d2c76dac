//! Planning sampled timing from samples: before a `cpu` session with sampled timing, one second
//! of stack samples under the roots (a `sample` session: only the roots carry probes) names the
//! classes the roots' threads run; the session then instruments only those classes. A live
//! server's request path reaches thousands of classes, and lazy revelation retransforms them in
//! hundreds of batches, each sending the compiled code that inlined them back to the
//! interpreter: tens of seconds at a fraction of the throughput (decision 0057). The classes a
//! second of samples sees are the hot path's; calls into the others count as their callers'
//! time, as uninstrumented code does.

use std::collections::BTreeSet;
use std::time::Duration;

use ferrofluid_protocol::control::{Client, Request, Response};
use ferrofluid_protocol::{AgentOptions, ClassPattern, Mode, Scheme, Timing};

use super::super::connect::expect_ok;

/// How long the stacks are sampled.
pub(super) const LENGTH: Duration = Duration::from_secs(1);
/// Their interval: 500 samples per second of a thread's CPU.
const INTERVAL: Duration = Duration::from_millis(2);

/// Whether `options` is a session to plan from samples: `cpu`, sampled timing, roots, and no
/// `--include` of the user's.
pub(super) fn applies(options: &AgentOptions) -> bool {
    options.mode() == Mode::Cpu
        && options.timing == Timing::Sampled
        && !options.roots.is_empty()
        && options.filter.include.is_empty()
}

/// `options` narrowed to the classes `length` of samples under its roots saw; `None` when the
/// samples saw none (the roots did not run), and the session goes on unnarrowed.
pub(super) fn narrowed(
    client: &mut Client,
    options: &AgentOptions,
    length: Duration,
) -> Result<Option<AgentOptions>, String> {
    let sampling = AgentOptions {
        mode: Some(Mode::Sample),
        roots: options.roots.clone(),
        filter: options.filter.clone(),
        reveal: options.reveal,
        interval: Some(INTERVAL),
        ..AgentOptions::default()
    };
    match client
        .request(&Request::Instrument(sampling))
        .map_err(|e| e.to_string())?
    {
        Response::Ok => {}
        Response::Error { message } => return Err(message),
        other => return Err(format!("unexpected agent reply {other:?}")),
    }
    expect_ok(client, &Request::Start)?;
    std::thread::sleep(length);
    expect_ok(client, &Request::Stop)?;
    let snapshot = client
        .request(&Request::Snapshot)
        .map_err(|e| e.to_string())?;
    expect_ok(client, &Request::Deinstrument)?;
    let profile = match snapshot {
        Response::Snapshot { profile } => profile,
        Response::Error { message } => return Err(message),
        other => return Err(format!("unexpected agent reply {other:?}")),
    };
    let classes = classes(&profile);
    if classes.is_empty() {
        return Ok(None);
    }
    eprintln!(
        "ferrofluid: {} classes ran under the roots in {length:?} of samples: instrumenting those",
        classes.len()
    );
    let mut narrowed = options.clone();
    narrowed.filter.include = classes;
    // Their closure up front, in a few retransformations: no receiver sites (an agent call per
    // polymorphic call), no revelation batches while the server runs.
    if narrowed.scheme == Scheme::Lazy {
        narrowed.scheme = Scheme::Eager;
    }
    Ok(Some(narrowed))
}

/// The classes of the frames of a sample profile document, as exact patterns (bracketed
/// reasons and hidden classes, which no pattern names, left out).
fn classes(profile: &serde_json::Value) -> Vec<ClassPattern> {
    let mut names = BTreeSet::new();
    let mut stack: Vec<&serde_json::Value> = profile["threads"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| &t["root"])
        .collect();
    while let Some(node) = stack.pop() {
        if let Some(class) = node["class"].as_str() {
            if !class.is_empty() && !class.starts_with('[') && !class.contains('/') {
                names.insert(class.to_owned());
            }
        }
        stack.extend(node["children"].as_array().into_iter().flatten());
    }
    names.iter().filter_map(|n| n.parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classes_of_the_frames_become_exact_patterns() {
        let doc = serde_json::json!({"threads": [{"root": {"class": "", "children": [
            {"class": "a.Root", "children": [
                {"class": "a.B$C", "children": []},
                {"class": "[gc_active]", "children": []},
                {"class": "a.D$$Lambda/0x0000000800c0b000", "children": []},
                {"class": "a.B$C", "children": []}
            ]}
        ]}}]});
        let names: Vec<String> = classes(&doc).iter().map(ToString::to_string).collect();
        assert_eq!(names, ["a.B$C", "a.Root"]);
    }
}
