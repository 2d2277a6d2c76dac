//! One module per subcommand.

pub mod agent_flags;
pub mod attach;
mod connect;
pub mod diff;
pub mod formats;
pub mod instrument;
pub mod list;
mod narrow;
mod output;
pub mod report;
pub mod run;
pub mod top;

use std::process::ExitCode;

use crate::cli::Command;

/// Runs a parsed command. `Err` is printed as one line by `main`.
pub fn run(command: Command) -> Result<ExitCode, Box<dyn std::error::Error>> {
    match command {
        Command::Instrument(args) => instrument::run(args),
        Command::List(args) => list::run(args),
        Command::Attach(args) => attach::run(args),
        Command::Run(args) => run::run(args),
        Command::Report(args) => report::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Top(args) => top::run(args),
    }
}
