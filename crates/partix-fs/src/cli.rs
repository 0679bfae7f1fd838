//! `partix fs ...` subcommands.

use clap::Subcommand;
use std::process::ExitCode;

/// `partix fs` subcommands.
#[derive(Subcommand, Debug)]
pub enum FsCommand {
    /// Export a directory over raw Ethernet frames.
    Serve {
        /// Interface to serve on.
        #[arg(long)]
        iface: String,
    },
}

/// Run a `partix fs` subcommand.
pub fn main(cmd: FsCommand) -> anyhow::Result<ExitCode> {
    let _ = cmd;
    anyhow::bail!("partix fs: being written (issue 4)")
}
