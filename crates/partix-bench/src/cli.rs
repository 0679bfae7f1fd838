//! `partix bench ...` subcommands.

use clap::Subcommand;
use std::process::ExitCode;

/// `partix bench` subcommands.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Partition scheduling overheads (TmrO, PtswO, CtswO).
    Sched,
}

/// Run a `partix bench` subcommand.
pub fn main(cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    let _ = cmd;
    anyhow::bail!("partix bench: being written (issue 2)")
}
