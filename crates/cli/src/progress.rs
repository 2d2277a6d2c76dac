//! A spinner with the elapsed time on stderr while a long step runs (loading the agent into a
//! JVM with many classes, the first instrumentation, the snapshot of a large profile, writing a
//! large report). Nothing is drawn when stderr is not a terminal, so piped output stays clean.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Shown while alive; cleared when dropped.
pub struct Spinner(Option<ProgressBar>);

/// A spinner saying `what` (e.g. "instrumenting") until dropped.
pub fn spinner(what: &str) -> Spinner {
    if !std::io::stderr().is_terminal() {
        return Spinner(None);
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("ferrofluid: {spinner} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(what.to_owned());
    bar.enable_steady_tick(Duration::from_millis(120));
    Spinner(Some(bar))
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
