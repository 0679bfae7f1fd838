//! `partix bench startup`.

use clap::Args;
use std::process::ExitCode;

/// Arguments of `partix bench startup`.
#[derive(Args, Debug)]
pub struct StartupArgs {}

/// Run the benchmark.
pub fn run(args: StartupArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("partix bench startup: being written")
}
