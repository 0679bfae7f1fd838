//! `partix bench sched`.

use clap::Args;
use std::process::ExitCode;

/// Arguments of `partix bench sched`.
#[derive(Args, Debug)]
pub struct SchedArgs {}

/// Run the benchmark.
pub fn run(args: SchedArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("partix bench sched: being written")
}
