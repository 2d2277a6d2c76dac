//! The difference between two profiles of the same mode, per calling context and per method,
//! judged against thresholds (`ferrofluid diff`, a CI gate).
//!
//! Both profiles' threads are merged first (thread names and ids differ between runs), and
//! contexts and methods are matched by name (class, method and descriptor), not by id. Every
//! metric of the base profile that the new one also has is compared on self values: a
//! context's own calls, its own time, its own bytecodes. Counts are exact. A time's change
//! is given with its noise: the compensation's uncertainty in both profiles (the calibrated
//! probe cost subtracted, times [`REST_SPREAD`]); the variation between runs is not in a
//! profile and is not included. A time change within its noise is no change.
//!
//! ```
//! use ferrofluid_profile::{Mode, Profile};
//! use ferrofluid_report::diff::{ProfileDiff, Thresholds};
//!
//! let base = Profile::new(Mode::Cpu);
//! let diff = ProfileDiff::new(&base, &base.clone()).unwrap();
//! assert!(diff.exceeding(&Thresholds::default()).is_empty());
//! ```

//!
//! [`compare`] makes the [`ProfileDiff`] (over [`side`], one profile's merged tree) and judges it
//! against the [`thresholds`]; [`text`], [`json`] and [`html`] write it.

mod compare;
mod html;
mod json;
mod side;
#[cfg(test)]
mod tests;
mod text;
mod thresholds;

pub use compare::{Change, ContextDiff, DiffError, Exceeding, MethodDiff, Presence, ProfileDiff};
pub use html::{differential_lines, write_html};
pub use json::write_json;
pub use text::{describe, moved_line, write_text, MOST_MOVED};
pub use thresholds::{BadThreshold, Threshold, Thresholds};
