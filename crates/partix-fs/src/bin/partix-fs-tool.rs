//! `partix-fs-tool`: the `partix fs` subcommands as a binary of this crate (used by the tests).

use clap::Parser;
use std::process::ExitCode;

/// Remote file and device access over raw Ethernet frames.
#[derive(Parser, Debug)]
#[command(name = "partix-fs-tool", version)]
struct Cli {
    #[command(subcommand)]
    cmd: partix_fs::cli::FsCommand,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match partix_fs::cli::main(cli.cmd) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("partix-fs-tool: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
