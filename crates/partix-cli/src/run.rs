//! `partix run FILE` and the default demo.

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `partix run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The module configuration (ARINC_653_Module XML).
    pub file: PathBuf,
    /// Stop after this many major frames (default: run until Ctrl-C).
    #[arg(long)]
    pub frames: Option<u64>,
    /// Write the schedule trace (Chrome/Perfetto trace-event JSON) to this file.
    #[arg(long)]
    pub trace: Option<PathBuf>,
}

/// Arguments of `partix demo`.
#[derive(Args, Debug, Default)]
pub struct DemoArgs {
    /// Stop after this many major frames.
    #[arg(long)]
    pub frames: Option<u64>,
    /// Write the schedule trace (Chrome/Perfetto trace-event JSON) to this file.
    #[arg(long)]
    pub trace: Option<PathBuf>,
}

/// Run a module.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("partix run: the module executive is being written (issue 2)")
}

/// Run the default demo module.
pub fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("partix demo: the module executive is being written (issue 2)")
}
