//! `partix bench ...` subcommands.

use clap::Subcommand;
use std::process::ExitCode;

/// `partix bench` subcommands.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Partition scheduling overheads TmrO, PtswO, CtswO (paper table V, figs. 6/7, 15).
    Sched(crate::sched::SchedArgs),
    /// APEX call overheads (paper table VI).
    Apex(crate::apex::ApexArgs),
    /// Startup time to NORMAL for 1..16 partitions (paper fig. 20).
    Startup(crate::startup::StartupArgs),
    /// What a partition restart costs the next window: respawn born in its cgroup vs fork and
    /// move, against a raw fork.
    Restart(crate::restart::RestartArgs),
    /// File protocol latency vs raw AF_PACKET ping-pong and 9P/diod (paper table 7).
    Fs(crate::fs::FsBenchArgs),
    /// Sampling-port round trips per transport vs raw baselines and iceoryx2, queuing throughput
    /// (RDMA sampling-port paper, fig. 2).
    Rtt(crate::rtt::RttArgs),
    /// One end of a `bench rtt` ping-pong (started by `bench rtt` when `partix-rttpart` is not
    /// beside this program).
    #[command(hide = true)]
    RttPeer {
        /// The peer's arguments (see `partix_bench::rttpeer`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// Run a `partix bench` subcommand.
pub fn main(cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        BenchCommand::Sched(a) => crate::sched::run(a),
        BenchCommand::Apex(a) => crate::apex::run(a),
        BenchCommand::Startup(a) => crate::startup::run(a),
        BenchCommand::Fs(a) => crate::fs::run(a),
        BenchCommand::Restart(a) => crate::restart::run(a),
        BenchCommand::Rtt(a) => crate::rtt::run(a),
        BenchCommand::RttPeer { args } => {
            let code = crate::rttpeer::main(&args);
            Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
    }
}
