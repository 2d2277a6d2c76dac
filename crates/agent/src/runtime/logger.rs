//! The agent's log: a file, never the application's stdout/stderr. `log` allows one logger per process
//! and the library outlives attach/detach cycles, so the logger is installed once and its file swapped.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// The log: its file, and the warnings and errors logged since the file was last opened.
struct FileLogger {
    file: Mutex<Option<File>>,
    troubles: AtomicU64,
}

// Process-wide: `log` takes one logger for the process, for its life.
static LOGGER: FileLogger = FileLogger {
    file: Mutex::new(None),
    troubles: AtomicU64::new(0),
};

impl log::Log for FileLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Info
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        if record.level() <= log::Level::Warn {
            self.troubles.fetch_add(1, Ordering::Relaxed);
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let line = format!(
            "{}.{:03} {} [{}] {}\n",
            now.as_secs(),
            now.subsec_millis(),
            record.level(),
            shown_target(record.target()),
            record.args()
        );
        // A poisoned lock only means a panic while writing a line; keep logging.
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = file.as_mut() {
            let _ = f.write_all(line.as_bytes());
        }
    }

    fn flush(&self) {
        if let Some(f) = self.file.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            let _ = f.flush();
        }
    }
}

/// The layers of the agent's module paths (`ferrofluid_agent::runtime::session`).
const LAYERS: [&str; 4] = ["runtime", "engine", "probe", "ffi"];

/// A record's target as a log line shows it: the module without its layer
/// (`ferrofluid_agent::session` for `ferrofluid_agent::runtime::session`), shorter, and the same
/// wherever the layers put a module.
fn shown_target(target: &str) -> std::borrow::Cow<'_, str> {
    let mut parts = target.splitn(3, "::");
    match (parts.next(), parts.next(), parts.next()) {
        (Some(krate), Some(layer), Some(rest)) if LAYERS.contains(&layer) => {
            format!("{krate}::{rest}").into()
        }
        _ => target.into(),
    }
}

/// Directs the log to `path` (appending), installing the logger and a panic hook on first use. The
/// panic hook writes to the log instead of the JVM's stderr; `ffi_guard` then recovers.
pub fn open(path: &Path) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    *LOGGER.file.lock().unwrap_or_else(|p| p.into_inner()) = Some(file);
    LOGGER.troubles.store(0, Ordering::Relaxed);
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
        std::panic::set_hook(Box::new(
            |info| log::error!(target: "ferrofluid::panic", "{info}"),
        ));
    }
    Ok(())
}

/// Warnings and errors logged since the log was opened (by this attach).
pub fn troubles() -> u64 {
    LOGGER.troubles.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::shown_target;

    #[test]
    fn log_lines_name_modules_without_their_layer() {
        assert_eq!(
            shown_target("ferrofluid_agent::runtime::session"),
            "ferrofluid_agent::session"
        );
        assert_eq!(
            shown_target("ferrofluid_agent::engine::alloc::narrow"),
            "ferrofluid_agent::alloc::narrow"
        );
        assert_eq!(
            shown_target("ferrofluid_agent::runtime"),
            "ferrofluid_agent::runtime"
        );
        assert_eq!(shown_target("ferrofluid::panic"), "ferrofluid::panic");
    }
}
