//! `partix`: the command-line front end.
//!
//! With no arguments it runs the default demo module (`examples/uav`).

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

mod check;
mod run;

/// partix: ARINC 653-style partitioning for networked embedded Linux.
#[derive(Parser, Debug)]
#[command(name = "partix", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check a module configuration and print a summary, or located errors.
    Check {
        /// The module configuration (ARINC_653_Module XML).
        file: PathBuf,
    },
    /// Run a module: start its partitions and schedule them.
    Run(run::RunArgs),
    /// Run the default demo module (the same as running `partix` with no arguments).
    Demo(run::DemoArgs),
    /// Remote file and device access over raw Ethernet frames.
    #[command(subcommand)]
    Fs(partix_fs::cli::FsCommand),
    /// Measurements: sched (scheduling overheads), apex (APEX calls), startup (time to NORMAL),
    /// restart (a partition's respawn), fs (file protocol), rtt (port round trips).
    #[command(subcommand)]
    Bench(partix_bench::cli::BenchCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The command named in the count line of configuration errors.
    let command = match &cli.command {
        None => "partix",
        Some(Command::Demo(_)) => "partix demo",
        Some(Command::Run(_)) => "partix run",
        Some(_) => "partix",
    };
    let result = match cli.command {
        None => run::demo(run::DemoArgs::default()),
        Some(Command::Demo(a)) => run::demo(a),
        Some(Command::Check { file }) => check::check(&file),
        Some(Command::Run(a)) => run::run(a),
        Some(Command::Fs(c)) => partix_fs::cli::main(c),
        Some(Command::Bench(c)) => partix_bench::cli::main(c),
    };
    match result {
        Ok(code) => code,
        // Located configuration errors print as `partix check` prints them (editors' quickfix
        // parsers read `FILE:LINE:COL:` at the start of a line).
        Err(e) => match e.downcast_ref::<partix_config::ConfigErrors>() {
            Some(errors) => {
                check::print_errors(command, errors);
                ExitCode::FAILURE
            }
            None => {
                eprintln!("partix: error: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Executive options are bounded where they are parsed: a value near `u64::MAX` overflowed
    /// the executive's time arithmetic (a panic in debug builds, a wrapped deadline in release).
    #[test]
    fn executive_options_out_of_range_are_refused_at_the_command_line() {
        for (flag, bad) in [
            ("--park-bound-us", "18446744073709551615"),
            ("--park-bound-us", "0"),
            ("--lead-us", "1000001"),
            ("--prewarm-us", "99999999999"),
            ("--init-timeout-ms", "0"),
            ("--init-timeout-ms", "86400001"),
        ] {
            let e = Cli::try_parse_from(["partix", "run", "m.xml", flag, bad])
                .expect_err(&format!("{flag} {bad}"));
            assert!(e.to_string().contains(flag), "{flag} {bad}: {e}");
        }
        for (flag, good) in [
            ("--park-bound-us", "1000000"),
            ("--lead-us", "0"),
            ("--init-timeout-ms", "86400000"),
        ] {
            Cli::try_parse_from(["partix", "run", "m.xml", flag, good])
                .unwrap_or_else(|e| panic!("{flag} {good}: {e}"));
        }
    }

    /// `partix bench`'s summary (in `partix --help` and `partix bench --help`) names every bench
    /// (it named 4 of the 6: no restart, no rtt).
    #[test]
    fn the_bench_summary_names_every_bench() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let bench = cli.find_subcommand("bench").expect("bench");
        let about = bench.get_about().expect("an about line").to_string();
        let benches: Vec<&str> = bench
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name())
            .collect();
        assert!(benches.len() >= 6, "{benches:?}");
        for name in benches {
            assert!(
                about
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|w| w == name),
                "`{name}` missing from: {about}"
            );
        }
    }

    /// The benches that run the executive bound their options as `partix run` does: larger
    /// values wrapped the module's arithmetic in release builds (`seconds × 1000`,
    /// `(frames + 2) × 12`, µs × 1000).
    #[test]
    fn bench_options_out_of_range_are_refused_at_the_command_line() {
        for (bench, flag, bad) in [
            ("sched", "--seconds", "0"),
            ("sched", "--seconds", "18446744073709551615"),
            ("sched", "--lead-us", "18446744073709551615"),
            ("sched", "--window-us", "0"),
            ("sched", "--gap-us", "1000001"),
            ("sched", "--work-us", "1000001"),
            ("sched", "--prewarm-us", "300,99999999999"),
            ("sched", "--processes", "1,65"),
            // partix-benchpart gives its processes priorities 60, 59, ...: 61 and more it
            // refuses (it clamped to 60, so a "K=64" row measured 60).
            ("sched", "--processes", "61"),
            ("sched", "--processes", "1,64"),
            ("restart", "--seconds", "3601"),
            ("restart", "--rounds", "0"),
            ("restart", "--after-ms", "60001"),
            ("restart", "--restart-window-us", "99"),
            ("startup", "--max", "0"),
            ("startup", "--runs", "1001"),
        ] {
            let e = Cli::try_parse_from(["partix", "bench", bench, flag, bad])
                .expect_err(&format!("{bench} {flag} {bad}"));
            assert!(e.to_string().contains(flag), "{bench} {flag} {bad}: {e}");
        }
        for (bench, flag, good) in [
            ("sched", "--seconds", "3600"),
            ("sched", "--processes", "1,60"),
            ("sched", "--gap-us", "0"),
            ("restart", "--restart-window-us", "10000"),
            ("startup", "--max", "64"),
        ] {
            Cli::try_parse_from(["partix", "bench", bench, flag, good])
                .unwrap_or_else(|e| panic!("{bench} {flag} {good}: {e}"));
        }
    }
}
