//! Health monitor and mode requests with real partition processes: crashing partitions are
//! restarted or idled per their HM tables while another partition keeps all its windows;
//! SET_PARTITION_MODE and SET_MODULE_SCHEDULE requests take effect.

mod exec_util;

use exec_util::*;
use partix_config::model::{
    ErrorCode, ErrorLevel, ModuleAction, ModuleHmEntry, PartitionAction, SystemHmEntry,
};
use partix_runtime::executive::hm::{Action, Death};
use partix_runtime::executive::{EndReason, SwitchMechanism};
use partix_runtime::state::mode;
use partix_runtime::trace::RecordKind;

#[test]
fn crashing_partitions_are_handled_per_table_while_another_keeps_running() {
    if !is_root() {
        eprintln!("SKIPPED crashing_partitions_are_handled_per_table_while_another_keeps_running: needs root");
        return;
    }
    let tp = Some(testpart());
    let mut p1 = partition(
        1,
        "SEGV",
        tp.clone(),
        &["crash", "--how", "segv", "--after-ms", "30", "--first-only"],
    );
    p1.hm = vec![hm(ErrorCode::MemoryViolation, PartitionAction::ColdStart)];
    let p2 = partition(2, "STEADY", tp.clone(), &["sleep"]);
    // No HM table entry: the default is IDLE.
    let p3 = partition(
        3,
        "KILL9",
        tp.clone(),
        &["crash", "--how", "kill", "--after-ms", "30"],
    );
    let mut p4 = partition(
        4,
        "ABORT",
        tp.clone(),
        &[
            "crash",
            "--how",
            "abort",
            "--after-ms",
            "30",
            "--first-only",
        ],
    );
    p4.hm = vec![hm(ErrorCode::PartitionCrash, PartitionAction::WarmStart)];
    let m = module(
        vec![p1, p2, p3, p4],
        vec![schedule(
            1,
            20,
            &[
                (1, 1, 0.0, 3.0),
                (2, 2, 4.0, 4.0),
                (3, 3, 9.0, 3.0),
                (4, 4, 13.0, 3.0),
            ],
        )],
    );
    // 60 frames (1.2 s): the restarted partitions must be NORMAL again by the end, after a
    // crash 30 ms into each start, on a machine that may be loaded.
    const FRAMES: u64 = 60;
    let r = run_frames(&m, FRAMES, SwitchMechanism::default());
    assert_eq!(r.end, EndReason::Frames);
    let ev = |p: usize| r.hm_events.iter().filter(move |e| e.partition == p);
    // SEGV: MEMORY_VIOLATION → COLD_START, restarted once, NORMAL again.
    let e: Vec<_> = ev(0).collect();
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].death, Some(Death::Signaled(libc::SIGSEGV)));
    assert_eq!(e[0].decision.code, ErrorCode::MemoryViolation);
    assert_eq!(e[0].decision.action, Action::ColdStart);
    assert_eq!(r.partitions[0].restarts, 1);
    assert_eq!(r.partitions[0].mode, mode::NORMAL);
    // KILL9: PARTITION_CRASH, no table → IDLE; its later windows are skipped.
    let e: Vec<_> = ev(2).collect();
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].death, Some(Death::Signaled(libc::SIGKILL)));
    assert_eq!(e[0].decision.action, Action::Idle);
    assert!(!e[0].decision.from_table);
    assert_eq!(r.partitions[2].mode, mode::IDLE);
    assert!(
        r.partitions[2].stats.skipped >= 20,
        "{:?}",
        r.partitions[2].stats
    );
    // ABORT: SIGABRT → PARTITION_CRASH → WARM_START from its table.
    let e: Vec<_> = ev(3).collect();
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].death, Some(Death::Signaled(libc::SIGABRT)));
    assert_eq!(e[0].decision.action, Action::WarmStart);
    assert_eq!(r.partitions[3].restarts, 1);
    assert_eq!(r.partitions[3].mode, mode::NORMAL);
    // STEADY had every window, no HM event.
    assert_eq!(ev(1).count(), 0);
    assert_eq!(r.partitions[1].stats.windows, FRAMES);
    let steady = r
        .trace
        .records()
        .iter()
        .filter(|x| x.kind == RecordKind::Window && x.partition == 1)
        .count();
    assert_eq!(steady as u64, FRAMES);
    // HM events are in the trace too.
    assert_eq!(
        r.trace
            .records()
            .iter()
            .filter(|x| x.kind == RecordKind::Hm)
            .count(),
        3
    );
}

#[test]
fn module_level_hm_shutdown_ends_the_run() {
    if !is_root() {
        eprintln!("SKIPPED module_level_hm_shutdown_ends_the_run: needs root");
        return;
    }
    let tp = Some(testpart());
    let mut m = module(
        vec![
            partition(
                1,
                "FPE",
                tp.clone(),
                &["crash", "--how", "fpe", "--after-ms", "10"],
            ),
            partition(2, "OTHER", tp, &["sleep"]),
        ],
        vec![schedule(1, 10, &[(1, 1, 0.0, 3.0), (2, 2, 4.0, 3.0)])],
    );
    m.system_hm = vec![SystemHmEntry {
        system_state: 1,
        error_id: 7,
        code: ErrorCode::NumericError,
        level: ErrorLevel::Module,
    }];
    m.module_hm = vec![ModuleHmEntry {
        system_state: 1,
        error_id: 7,
        action: ModuleAction::Shutdown,
    }];
    let r = run_frames(&m, 500, SwitchMechanism::default());
    assert_eq!(r.end, EndReason::HmShutdown);
    assert!(r.frames < 100, "{}", r.frames);
    assert_eq!(r.hm_events.len(), 1);
    assert_eq!(r.hm_events[0].decision.level, ErrorLevel::Module);
    assert_eq!(r.hm_events[0].decision.code, ErrorCode::NumericError);
}

#[test]
fn mode_requests_idle_and_restart_partitions() {
    if !is_root() {
        eprintln!("SKIPPED mode_requests_idle_and_restart_partitions: needs root");
        return;
    }
    let tp = Some(testpart());
    let m = module(
        vec![
            partition(
                1,
                "TOIDLE",
                tp.clone(),
                &["request", "--mode", "idle", "--after-ms", "20"],
            ),
            partition(
                2,
                "COLD",
                tp.clone(),
                &[
                    "request",
                    "--mode",
                    "cold",
                    "--after-ms",
                    "20",
                    "--first-only",
                ],
            ),
            partition(
                3,
                "WARM",
                tp,
                &[
                    "request",
                    "--mode",
                    "warm",
                    "--after-ms",
                    "20",
                    "--first-only",
                ],
            ),
        ],
        vec![schedule(
            1,
            15,
            &[(1, 1, 0.0, 4.0), (2, 2, 5.0, 4.0), (3, 3, 10.0, 4.0)],
        )],
    );
    // 60 frames (0.9 s): the requests come 20 ms after each start, but starting three
    // processes took longer than 20 frames (0.3 s) once under a heavy load (TOIDLE not IDLE
    // yet, session 18).
    let r = run_frames(&m, 60, SwitchMechanism::default());
    assert!(r.hm_events.is_empty(), "{:?}", r.hm_events);
    assert_eq!(r.partitions[0].mode, mode::IDLE);
    assert!(r.partitions[0].stats.skipped >= 10);
    assert_eq!(r.partitions[1].restarts, 1);
    assert_eq!(r.partitions[1].mode, mode::NORMAL);
    assert_eq!(r.partitions[2].restarts, 1);
    assert_eq!(r.partitions[2].mode, mode::NORMAL);
    let modes: Vec<_> = r
        .trace
        .records()
        .iter()
        .filter(|x| x.kind == RecordKind::Mode && x.partition == 2)
        .map(|x| x.text)
        .collect();
    assert_eq!(
        modes,
        ["COLD_START", "NORMAL", "WARM_START", "WARM_START", "NORMAL"]
    );
}

/// A restart asked for during the initialisation (SET_PARTITION_MODE COLD_START or WARM_START
/// before NORMAL) is carried out then. The request used to be dropped: the process that asked
/// waited for it until the init time-out, which idled the partition.
#[test]
fn a_restart_asked_for_during_the_initialisation_is_carried_out() {
    if !is_root() {
        eprintln!(
            "SKIPPED a_restart_asked_for_during_the_initialisation_is_carried_out: needs root"
        );
        return;
    }
    let tp = Some(testpart());
    let m = module(
        vec![
            partition(1, "COLD", tp.clone(), &["sleep", "--init-request", "cold"]),
            partition(2, "WARM", tp, &["sleep", "--init-request", "warm"]),
        ],
        vec![schedule(1, 10, &[(1, 1, 0.0, 4.0), (2, 2, 5.0, 4.0)])],
    );
    let r = run_frames(&m, 10, SwitchMechanism::default());
    assert!(r.hm_events.is_empty(), "{:?}", r.hm_events);
    for p in 0..2 {
        assert_eq!(r.partitions[p].mode, mode::NORMAL, "P{}", p + 1);
        assert_eq!(r.partitions[p].stats.restarts, 1, "P{}", p + 1);
        assert_eq!(r.partitions[p].stats.windows, 10, "P{}", p + 1);
    }
}

#[test]
fn system_partition_switches_the_module_schedule_at_a_frame_boundary() {
    if !is_root() {
        eprintln!(
            "SKIPPED system_partition_switches_the_module_schedule_at_a_frame_boundary: needs root"
        );
        return;
    }
    let tp = Some(testpart());
    let mut sys = partition(
        1,
        "SYS",
        tp.clone(),
        &["schedule", "--id", "2", "--after-ms", "25"],
    );
    sys.system_partition = true;
    // A non-system partition asking for a switch is ignored.
    let user = partition(2, "USER", tp, &["schedule", "--id", "3", "--after-ms", "5"]);
    let m = module(
        vec![sys, user],
        vec![
            schedule(1, 20, &[(11, 1, 0.0, 5.0), (12, 2, 10.0, 5.0)]),
            schedule(2, 10, &[(21, 1, 0.0, 2.0), (22, 2, 5.0, 2.0)]),
            schedule(3, 10, &[(31, 2, 0.0, 2.0)]),
        ],
    );
    // 40 frames: the request comes 25 ms after the start, which may take a while under load.
    let r = run_frames(&m, 40, SwitchMechanism::default());
    let recs = r.trace.records();
    let req = recs
        .iter()
        .find(|x| x.kind == RecordKind::ScheduleRequest)
        .expect("request recorded");
    assert_eq!(req.window, 2);
    assert_eq!(req.partition, 0);
    let sw: Vec<_> = recs
        .iter()
        .filter(|x| x.kind == RecordKind::ScheduleSwitch)
        .collect();
    assert_eq!(sw.len(), 1);
    assert_eq!((sw[0].detail, sw[0].window), (1, 2));
    // The switch happens at a frame start of schedule 1 (a multiple of 20 ms after frame 0).
    let first = recs
        .iter()
        .find(|x| x.kind == RecordKind::Point)
        .unwrap()
        .planned_start;
    let at = recs
        .iter()
        .find(|x| x.kind == RecordKind::Point && x.schedule == 2)
        .unwrap()
        .planned_start;
    assert_eq!((at - first) % 20_000_000, 0);
    assert!(at > req.actual_start);
    // Windows of schedule 3 never opened.
    assert!(!recs
        .iter()
        .any(|x| x.kind == RecordKind::Window && x.window == 31));
    assert!(recs
        .iter()
        .any(|x| x.kind == RecordKind::Window && x.window == 21));
}

/// Give partition `p` one DATA region of 32 MiB: a memory limit of 32 MiB.
fn limit_32_mib(p: &mut partix_config::model::Partition) {
    use partix_config::model::{MemoryAccess, MemoryKind, MemoryRequirement};
    p.memory = vec![MemoryRequirement {
        name: Some("data".into()),
        kind: MemoryKind::Data,
        size_bytes: 32 << 20,
        access: MemoryAccess::ReadWrite,
    }];
}

#[test]
fn memory_limit_from_the_config_is_applied() {
    if !is_root() {
        eprintln!("SKIPPED memory_limit_from_the_config_is_applied: needs root");
        return;
    }
    let tp = Some(testpart());
    let limit = limit_32_mib;
    let mut small = partition(
        1,
        "SMALL",
        tp.clone(),
        &["alloc", "--mb", "4", "--after-ms", "5"],
    );
    limit(&mut small);
    let mut big = partition(2, "BIG", tp, &["alloc", "--mb", "256", "--after-ms", "5"]);
    limit(&mut big);
    let m = module(
        vec![small, big],
        vec![schedule(1, 10, &[(1, 1, 0.0, 4.0), (2, 2, 5.0, 4.0)])],
    );
    let r = run_frames(&m, 60, SwitchMechanism::default());
    // 4 MiB fit in 32 MiB; 256 MiB do not: the allocation fails and the program aborts.
    assert!(
        r.hm_events.iter().all(|e| e.partition == 1),
        "{:?}",
        r.hm_events
    );
    assert_eq!(r.partitions[0].mode, mode::NORMAL);
    let e = r.hm_events.first().expect("BIG failed");
    assert_eq!(e.death, Some(Death::Signaled(libc::SIGABRT)));
    assert_eq!(r.partitions[1].mode, mode::IDLE);
}

/// Shared memory the partition creates itself (a memfd, mapped shared) is not private data, so
/// `RLIMIT_DATA` does not count it; the partition's memory cgroup does: 256 MiB of it in a
/// partition of 32 MiB ends with the kernel killing the partition (SIGKILL, PARTITION_CRASH,
/// IDLE by default), while 4 MiB in another are fine.
#[test]
fn shared_memory_over_the_limit_is_stopped_by_the_memory_cgroup() {
    if !is_root() {
        eprintln!(
            "SKIPPED shared_memory_over_the_limit_is_stopped_by_the_memory_cgroup: needs root"
        );
        return;
    }
    let tp = Some(testpart());
    let limit = limit_32_mib;
    let args = |mb: &'static str| ["alloc", "--shm", "--mb", mb, "--after-ms", "5"];
    let mut small = partition(1, "SMALL", tp.clone(), &args("4"));
    limit(&mut small);
    let mut big = partition(2, "BIG", tp, &args("256"));
    limit(&mut big);
    let m = module(
        vec![small, big],
        vec![schedule(1, 10, &[(1, 1, 0.0, 4.0), (2, 2, 5.0, 4.0)])],
    );
    let r = run_frames(&m, 120, SwitchMechanism::default());
    if let Some(why) = &r.memory_error {
        eprintln!(
            "SKIPPED shared_memory_over_the_limit_is_stopped_by_the_memory_cgroup: no memory \
             cgroup ({why})"
        );
        return;
    }
    eprintln!(
        "memory cgroups {:?}, OOM kills {:?}, HM {:?}",
        r.partitions
            .iter()
            .map(|p| p.memory_cgroup)
            .collect::<Vec<_>>(),
        r.partitions.iter().map(|p| p.oom_kills).collect::<Vec<_>>(),
        r.hm_events
    );
    assert!(r.partitions.iter().all(|p| p.memory_cgroup.is_some()));
    assert!(
        r.hm_events.iter().all(|e| e.partition == 1),
        "{:?}",
        r.hm_events
    );
    assert_eq!(r.partitions[0].mode, mode::NORMAL);
    assert_eq!(r.partitions[0].oom_kills, 0);
    let e = r.hm_events.first().expect("BIG was not stopped");
    assert_eq!(e.death, Some(Death::Signaled(libc::SIGKILL)));
    assert_eq!(r.partitions[1].oom_kills, 1);
    assert_eq!(r.partitions[1].mode, mode::IDLE);
}
