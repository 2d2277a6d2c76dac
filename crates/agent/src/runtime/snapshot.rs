//! Snapshots: the collector's calling-context trees (threads, calibration, blocked threads)
//! with the session's figures, completed by the active engine, as the control protocol carries
//! them or as the `file` option writes them.

use std::path::Path;
use std::sync::atomic::Ordering;

use serde::Serialize;

use ferrofluid_profile::Profile;

use crate::probe::collector;
use crate::probe::thread::SWITCHES;
use crate::runtime::context::{self, Runtime};
use crate::runtime::{jvm, session};

/// The profile so far, and the events dropped since collection started; `None` if collection
/// never started.
pub fn snapshot() -> Option<(Profile, u64)> {
    let dropped_ids = session::dropped_ids();
    let (mut profile, dropped) = collector::snapshot(jvm::blocked_threads_now, &dropped_ids)?;
    profile.instrumented = session::methods_instrumented();
    profile.trivial_skipped = session::trivial_skipped();
    profile.failed_classes = session::failed_classes();
    profile.inlined_left_alone = session::left_alone();
    if let Some(active) = context::active() {
        active.session.snapshot(&Runtime::detached(), &mut profile);
    }
    Some((profile, dropped))
}

/// The snapshot as the JSON value the control protocol carries: the profile document plus
/// `dropped_events` (non-zero: some thread's tree is inexact).
pub fn json() -> Result<serde_json::Value, String> {
    let (profile, dropped) = snapshot().ok_or("collection was never started")?;
    // Trees are up to 1025 levels deep: serialize on a heap-grown stack, not the control
    // thread's own (serde recurses once per JSON nesting level).
    let stacked = serde_stacker::Serializer::new(serde_json::value::Serializer);
    let mut value = profile
        .to_document()
        .serialize(stacked)
        .map_err(|e| e.to_string())?;
    if let Some(obj) = value.as_object_mut() {
        obj.insert("dropped_events".into(), dropped.into());
        let unrevealed = SWITCHES.unrevealed.load(Ordering::Relaxed);
        if unrevealed > 0 {
            obj.insert("unrevealed_calls".into(), unrevealed.into());
        }
    }
    Ok(value)
}

/// Writes the profile to `path` (JSON document): to a file beside it first, renamed to `path`
/// once whole, so that whoever waits for `path` to appear never reads half a profile; to
/// `path` directly where that is something else than a regular file or nothing (a device, a
/// pipe, a symbolic link) or the directory takes no other file.
pub fn write_file(path: &Path) -> Result<(), String> {
    let (profile, dropped) = snapshot().ok_or("collection was never started")?;
    let replaceable = std::fs::symlink_metadata(path).map_or(true, |m| m.file_type().is_file());
    let name = path
        .file_name()
        .filter(|_| replaceable)
        .map(|n| n.to_string_lossy().into_owned());
    let partial = name.map(|n| path.with_file_name(format!(".{n}.{}.partial", std::process::id())));
    let (file, written) = match partial
        .as_deref()
        .and_then(|p| std::fs::File::create(p).ok().map(|f| (f, p)))
    {
        Some((f, p)) => (f, p),
        None => (
            std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?,
            path,
        ),
    };
    let done = profile
        .write_json(std::io::BufWriter::new(file))
        .map_err(|e| format!("{}: {e}", path.display()))
        .and_then(|()| {
            if written == path {
                return Ok(());
            }
            std::fs::rename(written, path).map_err(|e| format!("{}: {e}", path.display()))
        });
    if done.is_err() && written != path {
        let _ = std::fs::remove_file(written);
    }
    done?;
    if dropped > 0 {
        log::warn!("{dropped} events were dropped: the profile is inexact");
    }
    log::info!("profile written to {}", path.display());
    Ok(())
}
