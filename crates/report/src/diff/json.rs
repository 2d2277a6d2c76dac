//! The diff as JSON.

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use crate::diff::compare::{Exceeding, ProfileDiff};
use crate::diff::thresholds::Thresholds;
use crate::ReportError;

/// The diff as JSON: the whole [`ProfileDiff`] plus the thresholds and what exceeds them.
pub fn write_json(
    diff: &ProfileDiff,
    thresholds: &Thresholds,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    #[derive(Serialize)]
    struct Doc<'a> {
        format: &'static str,
        version: u32,
        thresholds: BTreeMap<&'a str, String>,
        exceeding: Vec<Exceeding>,
        #[serde(flatten)]
        diff: &'a ProfileDiff,
    }
    let doc = Doc {
        format: "ferrofluid-diff",
        version: 1,
        thresholds: diff
            .metrics
            .iter()
            .map(|m| (m.name.as_str(), thresholds.of(&m.name).to_string()))
            .collect(),
        exceeding: diff.exceeding(thresholds),
        diff,
    };
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    Ok(())
}
