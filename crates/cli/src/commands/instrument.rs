//! `ferrofluid instrument` (being written).

use std::process::ExitCode;

/// Arguments of `ferrofluid instrument`.
#[derive(Debug, clap::Args)]
pub struct InstrumentArgs {}

/// Runs `ferrofluid instrument`.
pub fn run(_args: InstrumentArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    Ok(ExitCode::SUCCESS)
}
