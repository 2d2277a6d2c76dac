//! The `ferrofluid` command-line tool.

mod cli;
mod commands;
mod interrupt;
mod progress;
mod push;
mod stale;
mod ui;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let opt = cli::Opt::parse();
    match commands::run(opt.command) {
        Ok(code) => code,
        Err(err) => {
            // One clear line, never a backtrace: the error says what to do.
            eprintln!("ferrofluid: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
