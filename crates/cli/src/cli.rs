//! Command-line grammar. Each subcommand's arguments live in its own module under
//! `commands/`; this file only lists them.

use clap::{Parser, Subcommand};

use crate::commands;

/// ferrofluid: exact profiles of running JVMs by on-the-fly bytecode instrumentation.
#[derive(Debug, Parser)]
#[command(name = "ferrofluid", version, about, long_about = None)]
pub struct Opt {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Statically instrument a .class, directory, .jar or .jmod with a probe.
    Instrument(commands::instrument::InstrumentArgs),
    /// List the running JVMs you may attach to (pid, main class, JVM version, arguments).
    List(commands::list::ListArgs),
    /// Load the agent into a running JVM (or reconnect to it) and show its status; --detach to detach.
    Attach(commands::attach::AttachArgs),
    /// Start a JVM with the agent loaded from its first class: ferrofluid run [FLAGS] -- java ARGS...
    Run(commands::run::RunArgs),
    /// Convert a saved JSON profile to text, HTML, folded stacks or JSON.
    Report(commands::report::ReportArgs),
    /// Compare two profiles of the same mode; exit 1 when something changed beyond the thresholds (a CI gate).
    Diff(commands::diff::DiffArgs),
    /// A live terminal table of a running JVM's hottest methods, refreshed every second.
    Top(commands::top::TopArgs),
}
