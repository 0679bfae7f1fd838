//! The video streaming partition (VSP) of the UAV demo, written in Rust against the APEX API.
//!
//! One periodic process, `VdoStrming` (the partitioning paper's table III, execution time halved):
//! period 80 ms, time capacity 80 ms, ≈17.5 ms of busy work per job. The work is measured in the
//! thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`), so time spent stopped outside the partition's
//! windows or preempted does not count. It uses no port: the module's channels (`nav_state` from
//! OFP, `video_cmd` to OFP) are configured in `module.xml`, but neither demo partition reads or
//! writes them (`docs/ports.md` shows the port API).
//!
//! Usage: `uav-vsp [--jobs N] [--quiet]`: stop (partition IDLE) after N jobs; without `--quiet`
//! print one line per 12 jobs (about a second) with the job count, response times and misses.
//! Run by `partix run` (the default demo) or by hand: `cargo run --bin uav-vsp -- --jobs 25`.
#![deny(unsafe_code)]

use partix_apex::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// Job period and time capacity (ns).
const PERIOD: SystemTime = 80_000_000;
/// CPU time one job burns (ns).
const WORK_NS: u64 = 17_500_000;

/// Jobs after which the partition goes IDLE (0 = run forever).
static MAX_JOBS: AtomicU64 = AtomicU64::new(0);
/// 1 to print progress.
static VERBOSE: AtomicU64 = AtomicU64::new(1);

/// Spin until this thread has used `ns` more nanoseconds of CPU time.
fn burn_cpu(ns: u64) {
    let start = thread_cpu_ns();
    let mut x = 0u64;
    while thread_cpu_ns().saturating_sub(start) < ns {
        for i in 0..256u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        std::hint::black_box(x);
    }
}

extern "C" fn vdo_strming() {
    let me = get_my_id().expect("VdoStrming is a process");
    let mut jobs = 0u64;
    loop {
        burn_cpu(WORK_NS);
        jobs += 1;
        if periodic_wait().is_err() {
            let _ = report_application_message(b"VdoStrming: PERIODIC_WAIT failed");
            stop_self();
        }
        let max = MAX_JOBS.load(Ordering::Relaxed);
        if VERBOSE.load(Ordering::Relaxed) == 1 && (jobs.is_multiple_of(12) || jobs == max) {
            if let Ok(st) = get_process_status(me) {
                let ctx = partix_runtime::attach::PartitionContext::get().ok();
                let slot = ctx.map(|c| &c.partition().processes[(me.0 - 1) as usize]);
                let (n, worst, total, misses) = slot.map_or((0, 0, 0, 0), |s| {
                    (
                        s.jobs.load(Ordering::Relaxed),
                        s.worst_response_ns.load(Ordering::Relaxed),
                        s.total_response_ns.load(Ordering::Relaxed),
                        s.deadline_misses.load(Ordering::Relaxed),
                    )
                });
                println!(
                    "VSP VdoStrming: jobs={n} mean_response={:.2} ms worst_response={:.2} ms \
                     deadline_misses={misses} next_deadline={:.1} ms",
                    total as f64 / n.max(1) as f64 / 1e6,
                    worst as f64 / 1e6,
                    st.deadline_time as f64 / 1e6,
                );
            }
        }
        if max != 0 && jobs >= max {
            let _ = set_partition_mode(OperatingMode::Idle);
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--jobs" => {
                let n = args.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
                    eprintln!("uav-vsp: --jobs needs a number");
                    std::process::exit(2)
                });
                MAX_JOBS.store(n, Ordering::Relaxed);
            }
            "--quiet" => VERBOSE.store(0, Ordering::Relaxed),
            other => {
                eprintln!(
                    "uav-vsp: unknown argument {other:?} (usage: uav-vsp [--jobs N] [--quiet])"
                );
                std::process::exit(2)
            }
        }
    }
    let attrs = ProcessAttributes {
        name: "VdoStrming".into(),
        entry_point: vdo_strming,
        stack_size: 256 * 1024,
        base_priority: 10,
        period: PERIOD,
        time_capacity: PERIOD,
        deadline: Deadline::Soft,
    };
    let run = || -> ApexResult<()> {
        let pid = create_process(&attrs)?;
        start(pid)?;
        set_partition_mode(OperatingMode::Normal) // does not return on success
    };
    if let Err(e) = run() {
        eprintln!("uav-vsp: APEX error {e} (RETURN_CODE {})", e.return_code());
        std::process::exit(1);
    }
}
