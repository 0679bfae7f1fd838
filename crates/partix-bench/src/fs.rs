//! `partix bench fs`.

use clap::Args;
use std::process::ExitCode;

/// Arguments of `partix bench fs`.
#[derive(Args, Debug)]
pub struct FsBenchArgs {}

/// Run the benchmark.
pub fn run(args: FsBenchArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("partix bench fs: being written")
}
