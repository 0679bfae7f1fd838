//! `partix check FILE`.

use partix_config::ConfigErrors;
use std::path::Path;
use std::process::ExitCode;

/// Check a module configuration: print a summary and exit 0, or print located errors and exit 1.
///
/// Besides the configuration's own checks, it refuses what `partix run` refuses on any machine:
/// a partition without `partix:Executable`, an executable path or C source where there is no
/// file ([`crate::run::program_errors`]). What only this machine lacks (a program named bare
/// and found neither beside `partix` nor in `PATH`) ends the summary, under `on this machine:`,
/// without changing the exit status.
pub fn check(file: &Path) -> anyhow::Result<ExitCode> {
    let errors = match partix_config::load(file) {
        Ok(module) => match ConfigErrors::new(crate::run::program_errors(&module)) {
            None => {
                print!("{}", partix_config::summary(&module));
                let here = crate::run::programs_not_found_here(&module);
                if !here.is_empty() {
                    println!("\non this machine (`partix run` here would refuse them):");
                    for n in here {
                        println!("  {n}");
                    }
                }
                return Ok(ExitCode::SUCCESS);
            }
            Some(errors) => errors,
        },
        Err(errors) => errors,
    };
    print_errors("partix check", &errors);
    Ok(ExitCode::from(1))
}

/// Print located configuration errors as `partix check` does, for `command` (`partix check`,
/// `partix run`): every error (`FILE:LINE:COL: error: ...` and its `help:` line), then the count.
pub fn print_errors(command: &str, errors: &ConfigErrors) {
    eprintln!("{errors}");
    let n = errors.len();
    eprintln!(
        "{command}: {n} error{} in {}",
        if n == 1 { "" } else { "s" },
        errors.first().file_display()
    );
}
