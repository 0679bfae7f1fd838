//! Temporal isolation with real processes: two busy-looping partitions record when they run;
//! neither runs outside its windows beyond [`TOLERANCE_NS`], and each gets most of its windows.
//!
//! Tolerance: a partition may still run up to 2 ms after its planned window end (the
//! executive's timer overhead plus the SIGSTOP hand-off measure tens of µs here; 2 ms absorbs a
//! noisy VM). It may never run before its planned start (SIGCONT is sent after the wake-up).
//! Coverage: in at least 90 % of the windows the partition runs ≥ 50 % of the window, counting
//! only the windows the executive itself opened and closed within 1 ms of plan (a window the
//! executive could not serve — a stalled vCPU, RT throttling — says nothing about the switch).
//! The partitions spin at SCHED_FIFO 1 (so other load on the CPU, e.g. a parallel build, does not
//! take their windows) and the schedule keeps the CPU ≤ 80 % busy, below the kernel's RT
//! throttling limit (95 %).

mod exec_util;

use exec_util::*;
use partix_runtime::executive::os::RunReport;
use partix_runtime::executive::{EndReason, SwitchMechanism};
use partix_runtime::trace::RecordKind;

const TOLERANCE_NS: u64 = 2_000_000;

/// The tests of this file each run an executive on the same CPU: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn segments(path: &std::path::Path) -> Vec<(u64, u64)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace().map(|v| v.parse::<u64>().ok());
            Some((it.next()??, it.next()??))
        })
        .collect()
}

/// Planned windows of partition `p` in CLOCK_MONOTONIC ns.
fn windows(r: &RunReport, p: u32) -> Vec<(u64, u64)> {
    r.trace
        .records()
        .iter()
        .filter(|x| x.kind == RecordKind::Window && x.partition == p)
        .map(|x| (r.epoch_ns + x.planned_start, r.epoch_ns + x.planned_end))
        .collect()
}

/// The window records of partition `p`.
fn window_records(r: &RunReport, p: u32) -> Vec<&partix_runtime::trace::Record> {
    r.trace
        .records()
        .iter()
        .filter(|x| x.kind == RecordKind::Window && x.partition == p)
        .collect()
}

/// Check isolation and coverage of one partition; return (violations, windows well covered).
fn check(r: &RunReport, p: u32, segs: &[(u64, u64)]) -> (Vec<String>, usize, usize) {
    let wins = windows(r, p);
    let first = wins.first().expect("windows opened").0;
    let mut bad = Vec::new();
    for &(s, e) in segs.iter().filter(|&&(_, e)| e >= first) {
        let inside = wins
            .iter()
            .any(|&(ws, we)| s >= ws && e <= we + TOLERANCE_NS);
        if !inside {
            let near = wins.iter().min_by_key(|&&(ws, _)| ws.abs_diff(s)).map_or(
                (0.0, 0.0),
                |&(ws, we)| {
                    (
                        (ws - r.epoch_ns) as f64 / 1e6,
                        (we - r.epoch_ns) as f64 / 1e6,
                    )
                },
            );
            bad.push(format!(
                "segment [{:.3}, {:.3}] ms of P{} is outside its windows (nearest [{:.3}, {:.3}])",
                (s - r.epoch_ns) as f64 / 1e6,
                (e - r.epoch_ns) as f64 / 1e6,
                p + 1,
                near.0,
                near.1
            ));
        }
    }
    // Coverage (the last window's final segment is never written: skip the last window).
    let mut good = 0;
    let considered = wins.len().saturating_sub(1);
    let stalled: Vec<(u64, u64)> = r
        .trace
        .records()
        .iter()
        .filter(|x| x.kind == RecordKind::Window && x.partition == p)
        .filter(|x| {
            x.actual_start > x.planned_start + 1_000_000 || x.actual_end > x.planned_end + 1_000_000
        })
        .map(|x| (r.epoch_ns + x.planned_start, r.epoch_ns + x.planned_end))
        .collect();
    for &(ws, we) in &wins[..considered] {
        if stalled.contains(&(ws, we)) {
            // Not served on time by the executive: counted as covered (see the module docs).
            good += 1;
            continue;
        }
        let ran: u64 = segs
            .iter()
            .map(|&(s, e)| e.min(we).saturating_sub(s.max(ws)))
            .sum();
        if ran * 2 >= we - ws {
            good += 1;
        }
    }
    let n_stalled = stalled.len();
    if n_stalled * 4 > considered {
        // The windows the executive served late count as covered, so the coverage checks of
        // the callers say little here; that no partition ran outside its windows (`bad`) is
        // judged all the same.
        eprintln!(
            "NOT JUDGED: coverage of P{}: the executive was more than 1 ms late in {n_stalled} \
             of its {considered} windows (the machine is too loaded)",
            p + 1
        );
    }
    (bad, good, considered)
}

#[test]
fn busy_partitions_never_run_outside_their_windows() {
    if !is_root() {
        eprintln!(
            "SKIPPED busy_partitions_never_run_outside_their_windows: needs root for SCHED_FIFO"
        );
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("exec-iso-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (f1, f2) = (dir.join("p1.txt"), dir.join("p2.txt"));
    let m = module(
        vec![
            partition(
                1,
                "P1",
                Some(testpart()),
                &["busy", "--fifo", "--out", f1.to_str().unwrap()],
            ),
            partition(
                2,
                "P2",
                Some(testpart()),
                &["busy", "--fifo", "--out", f2.to_str().unwrap()],
            ),
        ],
        // 50 ms frame: P1 twice (two windows per frame), P2 once; 80 % of the CPU.
        vec![schedule(
            1,
            50,
            &[(1, 1, 0.0, 10.0), (2, 2, 12.0, 20.0), (3, 1, 35.0, 10.0)],
        )],
    );
    let r = run_frames(&m, 20, SwitchMechanism::default());
    assert_eq!(r.end, EndReason::Frames);
    assert!(r.realtime);
    let (s1, s2) = (segments(&f1), segments(&f2));
    let _ = std::fs::remove_dir_all(&dir);
    let (b1, g1, n1) = check(&r, 0, &s1);
    let (b2, g2, n2) = check(&r, 1, &s2);
    assert!(b1.is_empty() && b2.is_empty(), "{b1:#?}\n{b2:#?}");
    assert_eq!(n1, 39);
    assert_eq!(n2, 19);
    assert!(g1 * 10 >= n1 * 9, "P1 ran ≥ 50 % in only {g1}/{n1} windows");
    assert!(g2 * 10 >= n2 * 9, "P2 ran ≥ 50 % in only {g2}/{n2} windows");
    assert!(r.partitions.iter().all(|p| p.stats.windows >= 19));
    assert!(!r.overheads.ptswo.is_empty());
}

/// Run P1 (`partix-testpart` with `p1_args` and `--out`) and a single-threaded busy P2
/// (SCHED_FIFO 1) back to back in 40 ms frames, 20 frames; return the report and the segments
/// both recorded, and P1's whole output. Every open is also the other partition's close.
fn back_to_back(tag: &str, p1_args: &[&str]) -> (RunReport, [Vec<(u64, u64)>; 2], String) {
    back_to_back_with(tag, p1_args, &["busy", "--fifo"])
}

/// [`back_to_back`] with P2 running `partix-testpart` with `p2_args` (and `--out`).
fn back_to_back_with(
    tag: &str,
    p1_args: &[&str],
    p2_args: &[&str],
) -> (RunReport, [Vec<(u64, u64)>; 2], String) {
    let dir = std::env::temp_dir().join(format!("exec-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (f1, f2) = (dir.join("p1.txt"), dir.join("p2.txt"));
    let (o1, o2) = (f1.to_str().unwrap(), f2.to_str().unwrap());
    let mut a1 = p1_args.to_vec();
    a1.extend(["--out", o1]);
    let mut a2 = p2_args.to_vec();
    a2.extend(["--out", o2]);
    let m = module(
        vec![
            partition(1, "P1", Some(testpart()), &a1),
            partition(2, "P2", Some(testpart()), &a2),
        ],
        vec![schedule(1, 40, &[(1, 1, 0.0, 20.0), (2, 2, 20.0, 20.0)])],
    );
    let r = run_frames(&m, 20, SwitchMechanism::Gate);
    let segs = [segments(&f1), segments(&f2)];
    let text = std::fs::read_to_string(&f1).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    for (i, p) in r.partitions.iter().enumerate() {
        eprintln!(
            "P{}: direct closes {} backstops {} strays {} segments {}",
            i + 1,
            p.direct_closes,
            p.backstops,
            p.strays,
            segs[i].len()
        );
    }
    (r, segs, text)
}

/// Both partitions of a [`back_to_back`] run stayed inside their windows and were not starved
/// by the parks (a looser coverage bound than the busy test's: back to back, a window starts
/// with the other partition's park).
fn assert_isolated(r: &RunReport, segs: &[Vec<(u64, u64)>; 2]) {
    assert_eq!(r.end, EndReason::Frames);
    for (p, seg) in segs.iter().enumerate() {
        let (bad, good, n) = check(r, p as u32, seg);
        assert!(bad.is_empty(), "{bad:#?}");
        assert!(
            good * 2 >= n,
            "P{} ran ≥ 50 % in only {good}/{n} windows",
            p + 1
        );
    }
}

/// A partition of many spinning threads: P1's 12 threads (all at SCHED_FIFO 1, all in the
/// runtime's thread table) get the park signal from the executive one by one at every close and
/// stay inside their windows, back to back with a single-threaded P2. Along the handlers' chain
/// a close of such a partition waits for each thread in turn.
#[test]
fn a_partition_of_many_threads_is_signalled_thread_by_thread() {
    if !is_root() {
        eprintln!("SKIPPED a_partition_of_many_threads_is_signalled_thread_by_thread: needs root");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (r, segs, _) = back_to_back(
        "threads",
        &["busy", "--fifo", "--threads", "12", "--register"],
    );
    assert_isolated(&r, &segs);
    // P1: 12 threads, all in the table (its main thread entered at attach): signalled one by
    // one at its closes (all but the first, before the executive had counted them).
    assert!(
        r.partitions[0].direct_closes >= 15,
        "P1 closes signalled directly: {}",
        r.partitions[0].direct_closes
    );
}

/// A partition whose threads wait for the CPU at the close: P2 spins at SCHED_FIFO 50 through
/// its whole window, so P1's thread (FIFO 1), signalled at its close, cannot run to park before
/// the verification. Its park signal is still pending then, which proves it has not run since:
/// the close is accepted (a pending park, under the CPU-time audit), not held. Before, every
/// close of P1 ended in the backstop (as every close of the demo's VSP partition did).
#[test]
fn threads_waiting_for_the_cpu_at_a_close_are_not_held() {
    if !is_root() {
        eprintln!("SKIPPED threads_waiting_for_the_cpu_at_a_close_are_not_held: needs root");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (r, segs, _) = back_to_back_with(
        "pending",
        &["busy", "--fifo"],
        &["busy", "--fifo", "--prio", "50"],
    );
    let p1 = &r.partitions[0];
    eprintln!(
        "P1: pending parks {} backstops {} distrusted {}",
        p1.pending_parks, p1.backstops, p1.distrusted
    );
    assert_isolated(&r, &segs);
    // Held: the stop at the end of its initialisation, and the first close it waited at (the
    // executive reads the CPU time at a close only for a partition seen waiting before); on a
    // loaded machine some more (4 seen once, with both CPUs compiling beside the test), each a
    // close that is then no pending park. Before, every close was held (about 20 here) and
    // none was a pending park.
    assert!(
        p1.pending_parks >= 10 && p1.backstops <= 2 + p1.pending_parks / 2,
        "pending parks {}, backstops {}",
        p1.pending_parks,
        p1.backstops
    );
    assert!(
        !p1.distrusted,
        "P1 parked when it got the CPU: the audit must not object"
    );
}

/// A partition whose park handler does nothing (the signal is taken, the thread runs on) and
/// whose thread waits for the CPU at its closes: P2 (FIFO 50) spins 0.7 ms of every 1 ms, from
/// the start of its window, so P1's close is accepted as a pending park, and P1 then runs in
/// P2's idle time. The audit before P1's next open finds that CPU time and turns pending parks
/// off for P1 (not distrust: see `OsSwitcher::audit`); its later closes are held.
#[test]
fn a_pending_park_that_runs_on_turns_pending_parks_off() {
    if !is_root() {
        eprintln!("SKIPPED a_pending_park_that_runs_on_turns_pending_parks_off: needs root");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (r, _, _) = back_to_back_with(
        "noop",
        &["busy", "--fifo", "--park", "noop"],
        &[
            "periodic",
            "--threads",
            "1",
            "--period-us",
            "1000",
            "--work-us",
            "700",
            "--fifo",
            "--prio",
            "50",
        ],
    );
    let p1 = &r.partitions[0];
    eprintln!(
        "P1: pending parks {} off {} backstops {} distrusted {}",
        p1.pending_parks, p1.pending_off, p1.backstops, p1.distrusted
    );
    assert_eq!(r.end, EndReason::Frames);
    assert!(p1.pending_parks >= 1, "no close of P1 was a pending park");
    assert!(p1.pending_off, "P1 ran on after a pending park, unnoticed");
    assert!(!p1.distrusted);
    assert!(p1.backstops >= 10, "P1's closes held: {}", p1.backstops);
}

/// A partition whose thread is inside long system calls at its closes (faulting in 256 MiB,
/// which a pending signal does not interrupt) also has its park signal pending, but it runs, in
/// the kernel: it is held, not accepted as waiting for the CPU, and so not distrusted by the
/// CPU-time audit for time it could not have been stopped in anyway.
#[test]
fn a_thread_in_a_long_system_call_at_a_close_is_held_not_distrusted() {
    if !is_root() {
        eprintln!(
            "SKIPPED a_thread_in_a_long_system_call_at_a_close_is_held_not_distrusted: needs root"
        );
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let m = module(
        vec![
            partition(
                1,
                "P1",
                Some(testpart()),
                &["populate", "--fifo", "--mb", "256"],
            ),
            partition(2, "P2", Some(testpart()), &["sleep"]),
        ],
        vec![schedule(1, 40, &[(1, 1, 0.0, 20.0), (2, 2, 20.0, 20.0)])],
    );
    let r = run_frames(&m, 20, SwitchMechanism::Gate);
    let p1 = &r.partitions[0];
    eprintln!(
        "P1: pending parks {} backstops {} distrusted {}",
        p1.pending_parks, p1.backstops, p1.distrusted
    );
    assert_eq!(r.end, EndReason::Frames);
    assert!(
        !p1.distrusted,
        "P1 was distrusted for its time in the kernel"
    );
    assert!(p1.backstops >= 5, "P1's closes held: {}", p1.backstops);
}

/// Threads the application started itself, outside the runtime's thread table: the executive
/// signals the process, and the backstop holds every thread, the ones the signal never reached
/// included. (A process-directed `SIGSTOP` alone did not: it is taken by one thread, which never
/// runs behind a spinning one of its priority.)
#[test]
fn threads_outside_the_thread_table_stay_in_their_windows() {
    if !is_root() {
        eprintln!("SKIPPED threads_outside_the_thread_table_stay_in_their_windows: needs root");
        return;
    }
    if let Some(why) = no_cgroups() {
        eprintln!("SKIPPED threads_outside_the_thread_table_stay_in_their_windows: {why}");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (r, segs, _) = back_to_back("unregistered", &["busy", "--fifo", "--threads", "12"]);
    if let Some(why) = &r.cgroup_error {
        eprintln!("SKIPPED threads_outside_the_thread_table_stay_in_their_windows: {why}");
        return;
    }
    assert_isolated(&r, &segs);
    // Signalled thread by thread only before its extra threads existed (the table then held
    // the one thread the executive counted).
    assert!(
        r.partitions[0].direct_closes <= 2,
        "P1's extra threads are not in its table, yet {} closes were direct",
        r.partitions[0].direct_closes
    );
}

/// A process the partition forked (an application's worker, spinning at the partition's
/// SCHED_FIFO priority): not a thread of the partition's process, so neither the park signal nor
/// the thread count reaches it; it is held outside the partition's windows all the same.
#[test]
fn a_process_forked_by_a_partition_stays_in_its_windows() {
    if !is_root() {
        eprintln!("SKIPPED a_process_forked_by_a_partition_stays_in_its_windows: needs root");
        return;
    }
    if let Some(why) = no_cgroups() {
        eprintln!("SKIPPED a_process_forked_by_a_partition_stays_in_its_windows: {why}");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (r, segs, text) = back_to_back("fork", &["busy", "--fifo", "--fork"]);
    if let Some(why) = &r.cgroup_error {
        eprintln!("SKIPPED a_process_forked_by_a_partition_stays_in_its_windows: {why}");
        return;
    }
    // The child ignores the module's shutdown and does not die with its parent: the end of the
    // run (the partition's cgroup killed) ends it.
    let child: i32 = text
        .lines()
        .find_map(|l| l.strip_prefix("child ")?.trim().parse().ok())
        .expect("the forked child never wrote its pid");
    let alive = || {
        std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, r)| !r.starts_with('Z'))
        })
    };
    let mut waited = 0;
    while alive() && waited < 2000 {
        std::thread::sleep(std::time::Duration::from_millis(1));
        waited += 1;
    }
    assert!(!alive(), "the forked child {child} outlived the run");
    assert_isolated(&r, &segs);
    // The child was found at (nearly) every verified close of P1 and held with it.
    assert!(
        r.partitions[0].strays >= 15,
        "P1's forked process was seen at {} closes",
        r.partitions[0].strays
    );
    assert_eq!(r.partitions[1].strays, 0);
}

/// Why partitions cannot run in cgroups of their own here (`None`: they can), in which case the
/// executive's holds are SIGSTOPs and the two tests above would show the holes the cgroup closes.
fn no_cgroups() -> Option<String> {
    partix_runtime::executive::cgroup::PartitionCgroup::create(0)
        .err()
        .map(|e| format!("no writable cgroup v2 hierarchy ({e})"))
}

/// The gate's backstop: partitions that block or ignore the park signal are still kept out of
/// other partitions' windows (SIGSTOP at most `park_bound` after their close), while a
/// cooperating partition parks on its gate.
#[test]
fn partitions_ignoring_the_park_request_are_stopped_in_time() {
    if !is_root() {
        eprintln!("SKIPPED partitions_ignoring_the_park_request_are_stopped_in_time: needs root");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("exec-park-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files: Vec<_> = (1..=3).map(|i| dir.join(format!("p{i}.txt"))).collect();
    let busy = |id: u32, f: &std::path::Path, park: Option<&str>| {
        let mut args = vec!["busy", "--fifo", "--out", f.to_str().unwrap()];
        if let Some(how) = park {
            args.extend(["--park", how]);
        }
        partition(id, &format!("P{id}"), Some(testpart()), &args)
    };
    let m = module(
        vec![
            busy(1, &files[0], Some("block")),
            busy(2, &files[1], Some("ignore")),
            busy(3, &files[2], None),
        ],
        // 50 ms frame, 60 % busy, gaps between the windows.
        vec![schedule(
            1,
            50,
            &[(1, 1, 0.0, 10.0), (2, 2, 15.0, 10.0), (3, 3, 30.0, 10.0)],
        )],
    );
    let r = run_frames(&m, 20, SwitchMechanism::Gate);
    let segs: Vec<_> = files.iter().map(|f| segments(f)).collect();
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "end {:?} frames {} startup {} ms parks {} backstops {}",
        r.end,
        r.frames,
        r.startup_ns / 1_000_000,
        r.parks,
        r.backstops
    );
    for (i, p) in r.partitions.iter().enumerate() {
        eprintln!(
            "P{}: mode {} {:?} segments {}",
            i + 1,
            p.mode,
            p.stats,
            segs[i].len()
        );
    }
    assert_eq!(r.end, EndReason::Frames);
    assert!(r.realtime);
    for (p, seg) in segs.iter().enumerate() {
        let (bad, good, n) = check(&r, p as u32, seg);
        assert!(bad.is_empty(), "{bad:#?}");
        assert_eq!(n, 19);
        assert!(
            good * 10 >= n * 9,
            "P{} ran ≥ 50 % in only {good}/{n} windows ({} segments; mode {}, {:?}; HM {:?})",
            p + 1,
            seg.len(),
            r.partitions[p].mode,
            r.partitions[p].stats,
            r.hm_events
        );
    }
    // Every close of P1 and P2 needed the backstop (except the startup stop, a hold before the
    // gate is known to work); P3 parked on its gate.
    let b: Vec<u64> = r.partitions.iter().map(|p| p.backstops).collect();
    assert!(b[0] >= 18 && b[1] >= 18, "backstops per partition: {b:?}");
    // (A close the executive itself served late may end in a hold too: a few are allowed.)
    assert!(
        b[2] <= 4,
        "the cooperating partition needed the backstop: {b:?}"
    );
    assert!(r.parks >= 3 * 19, "gate closes: {}", r.parks);
    // The windows that open after a hold still measure their PtswO (the thaw is followed by a
    // SIGCONT whose handler stamps the resume): about one sample per window of every partition.
    let opens: u64 = r.partitions.iter().map(|p| p.stats.windows).sum();
    assert!(
        r.overheads.ptswo.len() + 6 >= opens,
        "PtswO samples {} for {opens} windows",
        r.overheads.ptswo.len()
    );
    // P1 blocks the park signal: after the first, each close finds it still queued and sends
    // none (real-time signals would pile up, one per close). P2 ignores it: nothing queues.
    let w: Vec<u64> = r.partitions.iter().map(|p| p.withheld_signals).collect();
    assert!(w[0] >= 15, "park signals withheld per partition: {w:?}");
    assert_eq!(
        (w[1], w[2]),
        (0, 0),
        "park signals withheld per partition: {w:?}"
    );
}

/// The gate's CPU-time audit: a partition that claims to be parked (forges the acknowledgement)
/// but keeps running is caught before its next window and stopped with SIGSTOP from then on.
#[test]
fn a_partition_forging_its_park_is_caught_by_the_audit() {
    if !is_root() {
        eprintln!("SKIPPED a_partition_forging_its_park_is_caught_by_the_audit: needs root");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("exec-forge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (f1, f2) = (dir.join("p1.txt"), dir.join("p2.txt"));
    let m = module(
        vec![
            partition(
                1,
                "P1",
                Some(testpart()),
                &[
                    "busy",
                    "--fifo",
                    "--park",
                    "forge",
                    "--out",
                    f1.to_str().unwrap(),
                ],
            ),
            partition(
                2,
                "P2",
                Some(testpart()),
                &["busy", "--fifo", "--out", f2.to_str().unwrap()],
            ),
        ],
        vec![schedule(1, 50, &[(1, 1, 0.0, 10.0), (2, 2, 20.0, 10.0)])],
    );
    let r = run_frames(&m, 20, SwitchMechanism::Gate);
    let (s1, s2) = (segments(&f1), segments(&f2));
    let forged_at = std::fs::read_to_string(&f1)
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("forged ")
                .and_then(|v| v.trim().parse::<u64>().ok())
        });
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(r.end, EndReason::Frames);
    assert!(
        r.partitions[0].distrusted,
        "the forging partition was not caught"
    );
    assert!(
        !r.partitions[1].distrusted,
        "the cooperating partition was distrusted"
    );
    // P1 may run outside its windows only until the audit before its first or second window
    // (after the forged startup stop or the forged close of its first window); then SIGSTOP
    // holds it.
    let wins = windows(&r, 0);
    let second = wins[1].0;
    let outside = |&(s, e): &(u64, u64)| {
        e >= wins[0].0
            && !wins
                .iter()
                .any(|&(ws, we)| s >= ws && e <= we + TOLERANCE_NS)
    };
    // It forged its first park (the stop at the end of its initialisation) and ran on (at least
    // 100 µs) until an audit caught it: the one the executive runs while the others initialise,
    // or the one before its first window.
    let forged_at = forged_at.expect("the forging partition never forged a park");
    assert!(
        s1.iter()
            .any(|&(_, e)| e > forged_at + 100_000 && e <= wins[0].0),
        "the forging partition did not run while it claimed to be parked: the test proves nothing"
    );
    let late: Vec<_> = s1
        .iter()
        .filter(|&&(s, e)| s >= second && outside(&(s, e)))
        .collect();
    assert!(
        late.is_empty(),
        "P1 still ran outside its windows after the audit: {late:#?}"
    );
    // P2 gets its windows (the first one may be lost to P1 spinning at the same priority).
    let (b2, g2, n2) = check(&r, 1, &s2);
    assert!(b2.is_empty(), "{b2:#?}");
    assert!(g2 + 2 >= n2, "P2 ran ≥ 50 % in only {g2}/{n2} windows");
}

/// A thread that the executive wakes ahead of an open (the lead of a point, without the early
/// switch) and that runs on another CPU finds the gate still closed and waits again: the open
/// must wake it. It did not (the open skipped its wake after a pre-wake), so such a partition
/// slept through its windows and was held by the backstop at their closes.
#[test]
fn a_thread_woken_ahead_of_the_open_on_another_cpu_still_gets_its_window() {
    if !is_root() {
        eprintln!("SKIPPED a_thread_woken_ahead_of_the_open_on_another_cpu_still_gets_its_window: needs root");
        return;
    }
    if partix_runtime::executive::os::allowed_cpus().len() < 2 {
        eprintln!("SKIPPED a_thread_woken_ahead_of_the_open_on_another_cpu_still_gets_its_window: needs 2 CPUs");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cpus = partix_runtime::executive::os::allowed_cpus();
    // SCHED_FIFO 1, so that other work on the machine (SCHED_OTHER) cannot keep the thread
    // from its window and pass for a wake the open skipped. (It did not remove the residue
    // counted below: with three CPU-bound processes beside the test, 2 of 8 runs lost a window
    // without it and 1 of 12 with it.)
    let mut p = partition(1, "ANYCPU", Some(testpart()), &["sleep", "--fifo"]);
    p.affinity = Some(cpus.clone());
    let m = module(vec![p], vec![schedule(1, 10, &[(1, 1, 2.0, 5.0)])]);
    let programs = vec![partix_runtime::executive::os::resolve_program(&m, 0).unwrap()];
    let cfg = partix_runtime::executive::os::RunConfig {
        programs,
        cpu: None,
        options: partix_runtime::executive::Options {
            max_frames: Some(400),
            early_switch: false,
            ..partix_runtime::executive::Options::default()
        },
        rt_unthrottle: false,
    };
    let r = partix_runtime::executive::os::run_module(
        &m,
        cfg,
        &std::sync::atomic::AtomicBool::new(false),
    )
    .unwrap();
    let windows = window_records(&r, 0);
    let missed = windows.iter().filter(|w| w.ptswo_ns == u64::MAX).count();
    // A window lost because the woken thread waited for a CPU the whole window (on this VM: the
    // virtual CPU it was queued on stalled; ftrace showed one 13 ms inside a tick interrupt)
    // is the machine's, not a missing wake: the executive tells them apart at the close.
    let starved: Vec<_> = windows
        .iter()
        .filter(|w| w.ptswo_ns == u64::MAX && w.text == partix_runtime::executive::STARVED)
        .collect();
    let p = &r.partitions[0];
    eprintln!(
        "windows {} without a resume {missed} (the woken thread waited for a CPU in {}), backstops {}",
        windows.len(),
        starved.len(),
        p.backstops
    );
    assert_eq!(p.stats.starved, starved.len() as u64);
    assert!(windows.len() >= 390, "{} windows", windows.len());
    // At most 3 were seen in a run beside three CPU burners; more would say the state check
    // has begun to take missing wakes for stalls.
    assert!(starved.len() <= 10, "{} starved windows", starved.len());
    // Without the wake, 1 to 7 in 100 windows were lost this way (the thread does not always
    // run on the other CPU before the open): 4 to 28 in these 400, every one with the thread
    // asleep on the gate, so none counted as waiting for a CPU.
    // A window that the executive opened less than 1 ms before its close is too short to judge
    // (seen once with the wake in place, open for 34 µs): left out too, and shown.
    let (short, long): (Vec<&&partix_runtime::trace::Record>, Vec<_>) = windows
        .iter()
        .filter(|w| w.ptswo_ns == u64::MAX && w.text != partix_runtime::executive::STARVED)
        .partition(|w| w.actual_end.saturating_sub(w.actual_start) < 1_000_000);
    let show = |ws: &[&&partix_runtime::trace::Record]| -> Vec<String> {
        ws.iter()
            .map(|w| {
                format!(
                    "frame {}: planned {}..{} µs, opened at {} µs, closed at {} µs (module time)",
                    w.frame,
                    w.planned_start / 1000,
                    w.planned_end / 1000,
                    w.actual_start / 1000,
                    w.actual_end / 1000
                )
            })
            .collect()
    };
    assert!(short.len() <= 2, "{} short windows", short.len());
    for w in &short {
        // Short because the executive opened it late (its own CPU stalled), not closed early.
        assert!(
            w.actual_start >= w.planned_start + 1_000_000,
            "a window closed early: {:?}",
            show(&[w])
        );
    }
    if !short.is_empty() {
        eprintln!(
            "windows without a resume that the executive opened less than 1 ms before their close: {:?}",
            show(&short)
        );
    }
    let detail = show(&long);
    assert!(
        detail.is_empty(),
        "windows without a resume whose thread was not waiting for a CPU: {} of {} (backstops {}): {detail:?}",
        detail.len(),
        windows.len(),
        p.backstops
    );
}

/// A window in which the partition's woken thread never gets a CPU is counted as starved
/// (`PartitionStats::starved`, the window's trace text `STARVED`), not as a missing wake. The
/// test takes the partition's only CPU with a SCHED_FIFO 98 thread of its own (above the
/// partition's SCHED_FIFO 1) for 45 ms, which covers at least three whole 5 ms windows; the
/// executive runs on the other CPU. On this VM a host that stalls the virtual CPU does the same
/// (`a_thread_woken_ahead_of_the_open_on_another_cpu_still_gets_its_window`).
#[test]
fn a_window_whose_woken_thread_never_gets_a_cpu_is_counted_as_starved() {
    if !is_root() {
        eprintln!("SKIPPED a_window_whose_woken_thread_never_gets_a_cpu_is_counted_as_starved: needs root");
        return;
    }
    let cpus = partix_runtime::executive::os::allowed_cpus();
    if cpus.len() < 2 {
        eprintln!("SKIPPED a_window_whose_woken_thread_never_gets_a_cpu_is_counted_as_starved: needs 2 CPUs");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (part_cpu, exec_cpu) = (cpus[0], cpus[1]);
    let mut p = partition(1, "STARVED", Some(testpart()), &["sleep", "--fifo"]);
    p.affinity = Some(vec![part_cpu]);
    let m = module(vec![p], vec![schedule(1, 10, &[(1, 1, 2.0, 5.0)])]);
    let programs = vec![partix_runtime::executive::os::resolve_program(&m, 0).unwrap()];
    let cfg = partix_runtime::executive::os::RunConfig {
        programs,
        cpu: Some(exec_cpu),
        options: partix_runtime::executive::Options {
            max_frames: Some(100),
            ..partix_runtime::executive::Options::default()
        },
        rt_unthrottle: false,
    };
    // The hog: pinned to the partition's CPU, SCHED_FIFO 98, for 45 ms from 200 ms after the
    // partition's process appeared (its initialisation and some windows are over by then).
    let hog = std::thread::spawn(move || {
        // SAFETY: a zeroed cpu_set_t filled with CPU_SET; sched_param is plain data; both
        // calls act on this thread only (pid 0).
        let (pinned, fifo) = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(part_cpu, &mut set);
            let pinned =
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0;
            let sp = libc::sched_param { sched_priority: 98 };
            (
                pinned,
                libc::sched_setscheduler(0, libc::SCHED_FIFO, &sp) == 0,
            )
        };
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !has_child() && std::time::Instant::now() < give_up {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        let end = std::time::Instant::now() + std::time::Duration::from_millis(45);
        while std::time::Instant::now() < end {
            std::hint::spin_loop();
        }
        pinned && fifo
    });
    let r = partix_runtime::executive::os::run_module(
        &m,
        cfg,
        &std::sync::atomic::AtomicBool::new(false),
    )
    .unwrap();
    assert!(
        hog.join().unwrap(),
        "the hog could not pin itself or take SCHED_FIFO"
    );
    let windows = window_records(&r, 0);
    let lost: Vec<_> = windows.iter().filter(|w| w.ptswo_ns == u64::MAX).collect();
    let starved = lost
        .iter()
        .filter(|w| w.text == partix_runtime::executive::STARVED)
        .count();
    let p = &r.partitions[0];
    eprintln!(
        "windows {}, without a resume {} ({starved} starved), backstops {}",
        windows.len(),
        lost.len(),
        p.backstops
    );
    assert_eq!(p.stats.starved, starved as u64);
    assert!(
        starved >= 3,
        "{starved} starved windows, {} lost",
        lost.len()
    );
    // Every window lost to the hog is told apart, bar perhaps the one in which it ends (the
    // partition may run a little there).
    assert!(
        lost.len() - starved <= 1,
        "{} lost windows not counted as starved",
        lost.len() - starved
    );
    assert!(
        render_summary(&r).contains("windows without a resume: its woken thread waited for a CPU"),
        "the run summary does not say so"
    );
}

/// Return whether a thread of this process has a child (the executive's partition process).
fn has_child() -> bool {
    std::fs::read_dir("/proc/self/task").is_ok_and(|d| {
        d.flatten().any(|t| {
            std::fs::read_to_string(t.path().join("children")).is_ok_and(|c| !c.trim().is_empty())
        })
    })
}

fn render_summary(r: &RunReport) -> String {
    partix_runtime::executive::summary::render(r)
}
