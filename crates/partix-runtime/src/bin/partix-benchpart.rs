//! `partix-benchpart`: the APEX partition `partix bench sched` runs.
//!
//! `partix-benchpart [--processes K] [--work-us W]` creates K periodic APEX processes whose period
//! is the partition's period (so every job is released when a window opens, the paper's
//! scenario for TmrO + PtswO + CtswO), each spinning W µs per job (default 1 process, 10 µs),
//! with priorities 60, 59, ... (so at most 60; more is refused) and enters NORMAL. CtswO per job is recorded by the partition
//! runtime in the process slots, which the executive samples.
#![deny(unsafe_code)]

use partix_runtime::partition::*;
use std::sync::atomic::{AtomicU64, Ordering};

static WORK_NS: AtomicU64 = AtomicU64::new(10_000);

fn now_ns() -> u64 {
    partix_runtime::attach::monotonic_ns()
}

extern "C" fn job() {
    loop {
        let end = now_ns() + WORK_NS.load(Ordering::Relaxed);
        while now_ns() < end {
            std::hint::spin_loop();
        }
        if periodic_wait().is_err() {
            stop_self();
        }
    }
}

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Priorities 60, 59, ..., 1: at most 60 processes (`partix bench sched --processes` takes
    // no more). More is refused, not clamped: a clamp measured fewer processes than the report
    // said.
    let k = arg(&args, "--processes", 1);
    if !(1..=60).contains(&k) {
        eprintln!("partix-benchpart: --processes {k}: 1 to 60 (priorities 60, 59, ..., 1)");
        std::process::exit(2);
    }
    let k = k as usize;
    WORK_NS.store(arg(&args, "--work-us", 10) * 1000, Ordering::Relaxed);
    let period = get_partition_status().period;
    let period = if period == INFINITE_TIME_VALUE {
        10_000_000
    } else {
        period
    };
    let run = || -> ApexResult<()> {
        for i in 0..k {
            let pid = create_process(&ProcessAttributes {
                name: format!("job{i}"),
                entry_point: job,
                stack_size: 64 * 1024,
                base_priority: 60 - i as Priority,
                period,
                time_capacity: period,
                deadline: Deadline::Soft,
            })?;
            start(pid)?;
        }
        set_partition_mode(OperatingMode::Normal)
    };
    if let Err(e) = run() {
        eprintln!(
            "partix-benchpart: APEX error {e:?} (RETURN_CODE {})",
            e.return_code()
        );
        std::process::exit(1);
    }
}
