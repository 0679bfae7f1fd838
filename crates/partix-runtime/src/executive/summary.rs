//! The end-of-run summary of `partix run` (and the demo).

use super::hm;
use super::os::RunReport;
use super::{HmEvent, HmEvents};
use crate::state::mode;
use hdrhistogram::Histogram;
use std::fmt::Write as _;

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// Return one line of percentiles (µs) of a histogram: n, p50, p90, p99, max, jitter (max − min).
pub fn percentile_line(name: &str, h: &Histogram<u64>) -> String {
    if h.is_empty() {
        return format!("  {name:<7} n=0 (not observed)");
    }
    format!(
        "  {name:<7} n={:<7} p50={:>7} p90={:>7} p99={:>7} max={:>8} jitter={:>8} µs",
        h.len(),
        us(h.value_at_quantile(0.5)),
        us(h.value_at_quantile(0.9)),
        us(h.value_at_quantile(0.99)),
        us(h.max()),
        us(h.max() - h.min()),
    )
}

fn mode_name(m: u32) -> &'static str {
    match m {
        mode::IDLE => "IDLE",
        mode::COLD_START => "COLD_START",
        mode::WARM_START => "WARM_START",
        mode::NORMAL => "NORMAL",
        _ => "?",
    }
}

/// Render the summary's HM events (nothing when there were none; `names` by partition index):
/// the kept events ([`HmEvents`]: the first and the last [`super::HM_EVENTS_KEPT`]), a line
/// `… K more HM events` where those between them were left out, and then the exact counts per
/// partition and error code.
pub fn render_hm_events(events: &HmEvents, names: &[&str]) -> String {
    let mut s = String::new();
    if events.is_empty() {
        return s;
    }
    let line = |s: &mut String, e: &HmEvent| {
        let _ = writeln!(
            s,
            "  t={:.3}ms {} {}: {} level={} -> {}",
            e.at_ns as f64 / 1e6,
            names.get(e.partition).copied().unwrap_or("?"),
            e.death
                .map_or_else(|| "init timeout".to_string(), |d| d.to_string()),
            hm::code_name(e.decision.code),
            hm::level_name(e.decision.level),
            e.decision.action.name()
        );
    };
    let _ = writeln!(s, "HM events:");
    for e in events.head() {
        line(&mut s, e);
    }
    if events.omitted() > 0 {
        let _ = writeln!(
            s,
            "  … {} more HM events (not kept: the first and the last {} are)",
            events.omitted(),
            super::HM_EVENTS_KEPT
        );
    }
    for e in events.tail() {
        line(&mut s, e);
    }
    if events.omitted() > 0 {
        let _ = writeln!(
            s,
            "HM events by partition and code ({} in all):",
            events.total()
        );
        for (p, code, n) in events.counts() {
            let _ = writeln!(
                s,
                "  {:<16} {:<17} {n}",
                names.get(p).copied().unwrap_or("?"),
                hm::code_name(code)
            );
        }
    }
    s
}

/// Render the summary of a run.
pub fn render(r: &RunReport) -> String {
    let mut s = String::new();
    let windows: u64 = r.partitions.iter().map(|p| p.stats.windows).sum();
    let late: u64 = r.partitions.iter().map(|p| p.stats.late).sum();
    let over: u64 = r.partitions.iter().map(|p| p.stats.overruns).sum();
    let _ = writeln!(
        s,
        "partix run summary: {} major frames, {} windows opened, {} late, {} overruns (threshold {} µs), ended: {:?}",
        r.frames,
        windows,
        late,
        over,
        r.late_threshold.as_micros(),
        r.end
    );
    let _ = writeln!(
        s,
        "  launch to all partitions NORMAL: {:.2} ms; executive on CPU {} ({})",
        r.launch_to_normal_ns as f64 / 1e6,
        r.cpu,
        if r.realtime {
            "SCHED_FIFO 99"
        } else {
            "not real-time"
        }
    );
    let _ = writeln!(
        s,
        "  partition switch: {}{}",
        r.switch.name(),
        if r.switch == super::SwitchMechanism::Gate {
            format!(
                " ({} closes, {} with parks still pending ({} partitions with them turned off), \
                 {} backstops ({}), {} partitions distrusted by the CPU-time audit, {} closes \
                 with a forked process)",
                r.parks,
                r.partitions.iter().map(|p| p.pending_parks).sum::<u64>(),
                r.partitions.iter().filter(|p| p.pending_off).count(),
                r.backstops,
                match &r.cgroup_error {
                    None => "cgroup freezes".to_string(),
                    Some(e) => format!("SIGSTOPs: no partition cgroups: {e}"),
                },
                r.partitions.iter().filter(|p| p.distrusted).count(),
                r.partitions.iter().map(|p| p.strays).sum::<u64>()
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(s, "overheads (paper table V, user level: TmrO 28/50, PtswO 38/58, CtswO 40/20 µs avg/jitter):");
    let _ = writeln!(s, "{}", percentile_line("TmrO", &r.overheads.tmro));
    let _ = writeln!(s, "{}", percentile_line("PtswO", &r.overheads.ptswo));
    let _ = writeln!(s, "{}", percentile_line("CtswO", &r.overheads.ctswo_switch));
    // Start − max(release, resume): for a process released behind higher-priority ones it also
    // holds their run time, so it is not compared with the paper's CtswO.
    let _ = writeln!(
        s,
        "{}",
        percentile_line("release delay (queueing)", &r.overheads.ctswo)
    );
    let _ = writeln!(s, "partitions:");
    for p in &r.partitions {
        let _ = writeln!(
            s,
            "  {:<16} mode={:<10} windows={:<6} skipped={:<5} late={:<4} overruns={:<4} restarts={:<3} hm_events={:<3} backstops={}",
            p.name,
            mode_name(p.mode),
            p.stats.windows,
            p.stats.skipped,
            p.stats.late,
            p.stats.overruns,
            p.restarts,
            p.stats.hm_events,
            p.backstops
        );
        if p.stats.starved > 0 {
            let _ = writeln!(
                s,
                "    {} windows without a resume: its woken thread waited for a CPU the whole window \
                 (a CPU taken from it: on a VM, a stalled virtual CPU)",
                p.stats.starved
            );
        }
        if p.stats.deferred > 0 {
            let _ = writeln!(
                s,
                "    restart deferred for {} windows: its killed process took that long to end",
                p.stats.deferred
            );
        }
        if let Some(how) = p.memory_cgroup {
            let _ = writeln!(
                s,
                "  {:<16} memory limit held by the kernel ({how}); processes killed for it: {}",
                "", p.oom_kills
            );
        }
    }
    if r.log_dropped > 0 {
        let _ = writeln!(
            s,
            "  log: {} lines dropped (stderr did not keep up; the HM events and mode changes are \
             in the trace)",
            r.log_dropped
        );
    }
    if let Some(e) = &r.rt_restore_error {
        let _ = writeln!(s, "  warning: {e}");
    }
    if let Some(e) = &r.memory_error {
        let _ = writeln!(
            s,
            "  memory limits: RLIMIT_DATA only (shared memory and forked processes not counted): {e}"
        );
    }
    if let Some(e) = &r.cpuset_error {
        let _ = writeln!(
            s,
            "  CPUs: sched_setaffinity only (a partition may move its threads to other CPUs): {e}"
        );
    }
    if let Some(e) = &r.users_keep_nice {
        let _ = writeln!(
            s,
            "  partix:User partitions keep CAP_SYS_NICE for SCHED_FIFO, so they can still change any thread's scheduling, the executive's too: {e}"
        );
    }
    if let Some(e) = &r.users_no_fifo {
        let _ = writeln!(
            s,
            "  partix:User partitions ran their processes under SCHED_OTHER (no priority preemption among them): {e}"
        );
    }
    if !r.confined {
        let _ = writeln!(
            s,
            "  debuggable (--debuggable): partitions without partix:User could open the executive's and each other's descriptors and memory through /proc"
        );
    }
    if let Some(e) = &r.confine_error {
        let _ = writeln!(s, "  confinement against /proc incomplete: {e}");
    }
    let names: Vec<&str> = r.partitions.iter().map(|p| p.name.as_str()).collect();
    s += &render_hm_events(&r.hm_events, &names);
    if !r.processes.is_empty() {
        let _ = writeln!(s, "processes:");
        for p in &r.processes {
            let _ = writeln!(
                s,
                "  {:<16} {:<20} jobs={:<7} deadline_misses={:<4} response avg/worst={}/{} µs  CtswO avg/worst={}/{} µs",
                r.partitions
                    .get(p.partition)
                    .map_or("?", |p| p.name.as_str()),
                p.name,
                p.jobs,
                p.deadline_misses,
                us(p.mean_response_ns),
                us(p.worst_response_ns),
                us(p.mean_ctsw_ns),
                us(p.worst_ctsw_ns)
            );
        }
    }
    if r.trace.dropped() > 0 {
        let _ = writeln!(
            s,
            "trace: {} records did not fit the buffer",
            r.trace.dropped()
        );
    }
    s
}
