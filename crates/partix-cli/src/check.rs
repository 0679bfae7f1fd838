//! `partix check FILE`.

use std::path::Path;
use std::process::ExitCode;

/// Check a module configuration: print a summary and exit 0, or print located errors and exit 1.
pub fn check(file: &Path) -> anyhow::Result<ExitCode> {
    let _ = file;
    anyhow::bail!("partix check: the configuration pipeline is being written (issue 2)")
}
