//! The JSON profile document (`docs/json-schema.md`), pretty-printed.

use std::io::Write;

use ferrofluid_profile::Profile;

use crate::{Report, ReportError};

/// Options of the JSON writer.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct JsonReport {}

impl Report for JsonReport {
    fn write(&self, profile: &Profile, out: &mut dyn Write) -> Result<(), ReportError> {
        profile.write_json(out)?;
        Ok(())
    }
}
