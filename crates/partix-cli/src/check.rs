//! `partix check FILE`.

use std::path::Path;
use std::process::ExitCode;

/// Check a module configuration: print a summary and exit 0, or print located errors and exit 1.
pub fn check(file: &Path) -> anyhow::Result<ExitCode> {
    match partix_config::load(file) {
        Ok(module) => {
            print!("{}", partix_config::summary(&module));
            Ok(ExitCode::SUCCESS)
        }
        Err(errors) => {
            eprintln!("{errors}");
            let n = errors.len();
            eprintln!(
                "partix check: {n} error{} in {}",
                if n == 1 { "" } else { "s" },
                file.display()
            );
            Ok(ExitCode::from(1))
        }
    }
}
