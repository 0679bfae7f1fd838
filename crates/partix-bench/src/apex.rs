//! `partix bench apex`.

use clap::Args;
use std::process::ExitCode;

/// Arguments of `partix bench apex`.
#[derive(Args, Debug)]
pub struct ApexArgs {}

/// Run the benchmark.
pub fn run(args: ApexArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("partix bench apex: being written")
}
