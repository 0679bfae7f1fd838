//! The APEX runtime's services, run as real partition processes in standalone mode.
//!
//! Each test runs `partition-probe <scenario>` (src/bin/partition-probe.rs) as a child process
//! and asserts its exit status and the order of the events it prints (never timings).

mod probe_util;
use probe_util::{probe, probe_with};
use std::process::Command;

#[test]
fn higher_priority_process_started_by_lower_one_runs_first() {
    probe("order")
        .ok("order")
        .assert_lines(&["low:begin", "high:run", "low:after-start"]);
}

#[test]
fn process_state_machine() {
    probe("states").ok("states").assert_lines(&[
        "init:a=Dormant",
        "init:a-started=Waiting", // started during COLD_START: waits for NORMAL
        "a:self=Running",
        "a:b=Ready",   // lower priority, preempted by the caller
        "b:a=Waiting", // a is in TIMED_WAIT
        "b:a-suspended=Waiting",
        "b:a-resumed=Waiting", // still in its TIMED_WAIT
        "b:self=Running",
        "a:back self=Running", // preempts b when its wait ends
        "a:b=Dormant",
    ]);
}

#[test]
fn lock_preemption_defers_a_higher_priority_process() {
    probe("lock").ok("lock").assert_lines(&[
        "lock1=NO_ERROR",
        "lock2=NO_ERROR",
        "low:locked-after-start",
        "timed_wait_locked=INVALID_MODE",
        "suspend_self_locked=INVALID_MODE",
        "unlock1=NO_ERROR",
        "low:still-locked",
        "high:run", // preempts inside UNLOCK_PREEMPTION at level 0
        "unlock0=NO_ERROR",
        "low:unlocked",
        "unlock_again=NO_ACTION",
    ]);
}

#[test]
fn suspend_and_resume() {
    probe("suspend").ok("suspend").assert_lines(&[
        "low:begin",
        "suspend_low=NO_ERROR",
        "suspend_low_again=NO_ACTION",
        "high:low=Waiting",
        "high:resuming", // low did not run while suspended, though high waited
        "resume_low=NO_ERROR",
        "resume_low_again=NO_ACTION",
        "low:after",
        "selfsus:suspending",
        "suspend_self=NO_ERROR", // the higher-priority process runs as soon as it is resumed
        "selfsus:resumed",
        "resume_selfsus=NO_ERROR",
        "low:after-resume",
    ]);
}

#[test]
fn stop_then_start_runs_the_entry_point_from_the_beginning() {
    probe("restart-process")
        .ok("restart-process")
        .assert_lines(&[
            "worker:begin#1",
            "boss:worker=Waiting",
            "stop_worker=NO_ERROR",
            "boss:worker=Dormant",
            "stop_worker_again=NO_ACTION",
            "worker:begin#2", // higher priority: runs inside START
            "start_worker=NO_ERROR",
            "stop_worker2=NO_ERROR",
            "quitter:begin false", // STOP_SELF
            "boss:quitter=Dormant",
            "quitter:begin true", // returns from its entry point
            "start_quitter=NO_ERROR",
            "boss:quitter=Dormant",
        ]);
}

/// SET_PRIORITY puts the process behind the processes already READY at its new priority, when
/// it lowers another process and when a process lowers itself. (Linux puts a thread whose
/// priority is lowered at the head of its new list: c ran before b, and a went on at once.)
#[test]
fn a_process_given_a_priority_goes_behind_the_ready_processes_of_that_priority() {
    probe("set-priority").ok("set-priority").assert_lines(&[
        "set_c=NO_ERROR",
        "b:run", // inside a's SET_PRIORITY of itself
        "c:run",
        "set_self=NO_ERROR",
        "a:after-set",
    ]);
}

/// LOCK_PREEMPTION by a process that runs while the holder is blocked outside APEX waits for
/// the holder's UNLOCK. (It took the lock over: the holder's UNLOCK answered NO_ACTION.)
#[test]
fn a_preemption_lock_is_not_taken_from_a_holder_blocked_outside_apex() {
    probe("lock-blocked").ok("lock-blocked").assert_lines(&[
        "lock_h=NO_ERROR",
        "o:locking",
        "unlock_h=NO_ERROR",
        "lock_o=NO_ERROR",
        "unlock_o=NO_ERROR",
    ]);
}

/// A STOP whose next thread cannot be made (no address space for its stack) still stops the
/// process; START then makes the thread, refusing while it cannot (INVALID_CONFIG), and the
/// process runs once it can. (STOP answered INVALID_CONFIG, and a START with no thread answered
/// NO_ERROR and ran nothing.)
#[test]
fn a_process_whose_next_thread_could_not_be_made_gets_one_at_its_start() {
    probe("spawn-fails").ok("spawn-fails").assert_lines(&[
        "w:begin#1",
        "stop_w=NO_ERROR",
        "start_w_no_room=INVALID_CONFIG",
        "boss:w=Dormant",
        "w:begin#2", // higher priority: runs inside START
        "start_w=NO_ERROR",
    ]);
}

/// CREATE_PROCESS, CREATE_ERROR_HANDLER and SUSPEND_SELF check in the standard's order: an
/// existing name before bad parameters, parameters before the mode, the preemption lock before
/// the time-out. (The mode and the parameters came first.)
#[test]
fn creation_and_suspension_errors_come_in_the_standards_order() {
    probe("create-order").ok("create-order").assert_lines(&[
        "create_same_name_bad_priority=NO_ACTION",
        "create_error_handler_again_huge_stack=NO_ACTION",
        "create_in_normal=INVALID_MODE",
        "create_in_normal_same_name=NO_ACTION",
        "create_in_normal_bad_priority=INVALID_PARAM",
        "suspend_self_locked_bad_timeout=INVALID_MODE",
    ]);
}

/// A process that suspended itself and is then stopped by a lower-priority process never
/// returns from SUSPEND_SELF: it is DORMANT. (The STOP woke it before signalling it, so it
/// preempted the stopper and returned NO_ERROR to its application code.)
#[test]
fn a_process_stopped_while_suspended_by_itself_never_returns() {
    probe("stop-suspended").ok("stop-suspended").assert_lines(&[
        "t:suspending",
        "stop_t=NO_ERROR",
        "p:t=Dormant",
        "p:done",
    ]);
}

/// A STOP returns at once, though a CPU-bound process of middle priority is READY: the stopped
/// process's new thread registers at its creator's priority and gets its own after. (It lowered
/// itself first, then waited behind the busy process while the stopper, holding the runtime
/// lock, waited for it: `stop_t` came after `m:done`, 200 ms later.)
#[test]
fn a_stop_returns_before_a_busy_process_of_middle_priority_runs() {
    probe("stop-beside-busy")
        .ok("stop-beside-busy")
        .assert_lines(&["stop_t=NO_ERROR", "s:after-stop", "m:done"]);
}

/// SUSPENDs that reach a process inside SIGNAL_SEMAPHORE take effect at the end of the call:
/// the process it handed the semaphore to must have been woken by then (300 SUSPENDs at
/// pseudo-random moments; before the fix some left the taker READY and asleep for good).
#[test]
fn a_releaser_suspended_inside_the_release_has_woken_the_released() {
    let run = probe("released").ok("released");
    assert_eq!(
        run.value("released:trials"),
        "300 stuck=0",
        "{}",
        run.stderr
    );
    assert_eq!(run.value("released:takes_grew"), "true");
}

#[test]
fn periodic_releases_follow_the_grid_and_jobs_are_recorded() {
    let run = probe("periodic").ok("periodic");
    let mut expect: Vec<String> = (1..=5)
        .map(|k| {
            format!(
                "job{k}: release=first+{k}*period start>=release:true \
                 response=completion-prev_release:true deadline=release+capacity:true \
                 jobs={k} releases={}",
                k + 1
            )
        })
        .collect();
    expect.push("worst<=total:true worst*5>=total:true ctsw_worst<=total:true".into());
    assert_eq!(run.lines, expect, "stderr:\n{}", run.stderr);
}

#[test]
fn deadline_miss_goes_to_the_error_handler() {
    probe("deadline").ok("deadline").assert_lines(&[
        "create_error_handler=NO_ERROR",
        "create_error_handler_again=NO_ACTION",
        "eh_get_my_id=INVALID_MODE",
        "eh_timed_wait=INVALID_MODE",
        "eh_lock=NO_ACTION",
        "eh:DeadlineMissed failed_is_job=true msg=deadline missed",
        "eh_stop_job=NO_ERROR",
        "eh:job=Dormant misses=1",
        "eh_get_error_status_empty=NO_ACTION",
    ]);
}

#[test]
fn deadline_miss_without_handler_is_counted_and_ignored() {
    let run = probe("deadline-ignore").ok("deadline-ignore");
    run.assert_lines(&["job:misses=1 partition_misses=1 jobs=3"]);
    assert!(
        run.stderr.contains("DeadlineMissed in process job"),
        "{}",
        run.stderr
    );
}

#[test]
fn application_error_goes_to_the_error_handler() {
    // Also from a process of the highest priority, which the handler preempts too (with
    // MAX_PRIORITY_VALUE 96 it ran at the handler's SCHED_FIFO 97, and went on first).
    for scenario in ["app-error", "app-error-top"] {
        probe(scenario).ok(scenario).assert_lines(&[
            "raise_bad_code=INVALID_PARAM",
            "raise_too_long=INVALID_PARAM",
            "eh:ApplicationError msg=boom", // the handler preempts the raising process
            "raise=NO_ERROR",
            "proc:after-raise",
        ]);
    }
}

#[test]
fn error_handler_queues_errors_and_restarts_after_stop_self() {
    probe("eh-queue").ok("eh-queue").assert_lines(&[
        "raise1=NO_ERROR", // preemption locked: the handler waits
        "raise2=NO_ERROR",
        "proc:unlocking",
        "eh#1:one", // one activation reads both errors, then STOP_SELF
        "eh#1:two",
        "proc:after-unlock",
        "eh#2:three", // a fresh incarnation for the next error
        "raise3=NO_ERROR",
        "proc:done",
    ]);
}

#[test]
fn partition_restarts_in_standalone_mode() {
    probe("modes").ok("modes").assert_lines(&[
        "init:ColdStart NormalStart id=1 lock=0 cores=1 period=-1",
        "warm_from_cold=INVALID_MODE",
        "init:ColdStart PartitionRestart id=1 lock=0 cores=1 period=-1",
        "init:WarmStart PartitionRestart id=1 lock=0 cores=1 period=-1",
    ]);
}

const HM_CONFIG: &str = r#"<ARINC_653_Module ModuleName="hm-test">
  <System_HM_Table>
    <System_State_Entry SystemState="1">
      <Error_ID_Level ErrorIdentifier="1" ErrorCode="DEADLINE_MISSED" ErrorLevel="PROCESS"/>
      <Error_ID_Level ErrorIdentifier="2" ErrorCode="APPLICATION_ERROR" ErrorLevel="PROCESS"/>
    </System_State_Entry>
  </System_HM_Table>
  <Partition PartitionIdentifier="1" PartitionName="P1" EntryPoint="main"/>
  <Partition PartitionIdentifier="2" PartitionName="P2" EntryPoint="main"/>
  <Module_Schedule MajorFrameSeconds="0.02">
    <Partition_Schedule PartitionIdentifier="1" PeriodSeconds="0.02" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="1" WindowStartSeconds="0" WindowDurationSeconds="0.01"/>
    </Partition_Schedule>
    <Partition_Schedule PartitionIdentifier="2" PeriodSeconds="0.02" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="2" WindowStartSeconds="0.01" WindowDurationSeconds="0.01"/>
    </Partition_Schedule>
  </Module_Schedule>
  <Partition_HM_Table PartitionIdentifier="1" PartitionName="P1">
    <System_State_Entry SystemState="1">
      <Error_ID_Action ErrorIdentifier="2" Action="RESTART_PROCESS"/>
    </System_State_Entry>
  </Partition_HM_Table>
  <Partition_HM_Table PartitionIdentifier="2" PartitionName="P2">
    <System_State_Entry SystemState="1">
      <Error_ID_Action ErrorIdentifier="2" Action="COLD_START"/>
    </System_State_Entry>
  </Partition_HM_Table>
</ARINC_653_Module>
"#;

/// The HM configuration's file, written once per test process: the tests that use it run in
/// parallel threads, and a rewrite (truncate, then write) could be read half done by the other
/// test's probe.
fn hm_config() -> std::path::PathBuf {
    static PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        // Under the build's own temporary directory (not the system's, where one directory
        // per test run was left behind).
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("partix-hm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("module.xml");
        std::fs::write(&path, HM_CONFIG).unwrap();
        path
    })
    .clone()
}

#[test]
fn hm_table_restart_process_action() {
    let cfg = hm_config();
    let run = probe_with(
        "hm-restart-process",
        &[
            ("PARTIX_CONFIG", cfg.to_str().unwrap()),
            ("PARTIX_PARTITION_ID", "1"),
        ],
    )
    .ok("hm-restart-process");
    run.assert_lines(&["proc:run#1", "proc:run#2"]);
    assert!(run.stderr.contains("RestartProcess"), "{}", run.stderr);
}

#[test]
fn hm_table_cold_start_action() {
    let cfg = hm_config();
    let run = probe_with(
        "hm-cold-start",
        &[
            ("PARTIX_CONFIG", cfg.to_str().unwrap()),
            ("PARTIX_PARTITION_ID", "2"),
        ],
    )
    .ok("hm-cold-start");
    run.assert_lines(&[
        "init:ColdStart NormalStart",
        "init:ColdStart HmPartitionRestart",
    ]);
}

/// Every return code of every service, in the order the probe calls them.
#[test]
fn every_return_code() {
    let run = probe("codes").ok("codes");
    let expect = [
        // Initialisation code is not a process.
        ("init_get_my_id", "INVALID_MODE"),
        ("init_timed_wait", "INVALID_MODE"),
        ("init_periodic_wait", "INVALID_MODE"),
        ("init_replenish", "NO_ACTION"),
        ("init_lock", "NO_ACTION"),
        ("init_unlock", "NO_ACTION"),
        ("init_suspend_self", "INVALID_MODE"),
        ("init_get_error_status", "INVALID_CONFIG"),
        ("init_report_message", "NO_ERROR"),
        ("set_module_schedule", "INVALID_MODE"),
        ("get_module_schedule_id", "INVALID_CONFIG"),
        ("module_schedule_current", "0"),
        // CREATE_PROCESS.
        ("create_name_long", "INVALID_PARAM"),
        ("create_name_empty", "INVALID_PARAM"),
        ("create_prio_low", "INVALID_PARAM"),
        ("create_prio_high", "INVALID_PARAM"),
        ("create_stack_huge", "INVALID_PARAM"),
        ("create_period_zero", "INVALID_PARAM"),
        ("create_capacity_zero", "INVALID_PARAM"),
        ("create_capacity_gt_period", "INVALID_PARAM"),
        ("create_periodic_infinite_capacity", "INVALID_PARAM"),
        ("create", "NO_ERROR"),
        ("create_same_name", "NO_ACTION"),
        ("create_capacity_overflow", "NO_ERROR"),
        ("create_64th", "true"),
        ("create_65th", "INVALID_CONFIG"),
        // Lookups.
        ("get_process_id_unknown", "INVALID_CONFIG"),
        ("get_process_status_zero", "INVALID_PARAM"),
        ("get_process_status_65", "INVALID_PARAM"),
        ("get_process_status_negative", "INVALID_PARAM"),
        ("get_process_status", "NO_ERROR"),
        // START family with bad arguments.
        ("start_unknown", "INVALID_PARAM"),
        ("delayed_start_negative", "INVALID_PARAM"),
        ("delayed_start_periodic_delay_ge_period", "INVALID_PARAM"),
        ("start_capacity_overflow", "INVALID_CONFIG"),
        ("stop_unknown", "INVALID_PARAM"),
        ("suspend_unknown", "INVALID_PARAM"),
        ("resume_unknown", "INVALID_PARAM"),
        ("set_priority_unknown", "INVALID_PARAM"),
        ("start", "NO_ERROR"),
        ("start_again", "NO_ACTION"),
        ("delayed_start_per", "NO_ERROR"),
        ("start_sleeper", "NO_ERROR"),
        ("init:main", "Waiting"),
        ("create_error_handler_huge_stack", "INVALID_CONFIG"),
        ("warm_start_from_cold_start", "INVALID_MODE"),
        ("raise_in_init", "NO_ERROR"),
        // In NORMAL mode, from a process.
        ("get_my_id_is_main", "true"),
        // The table is full: that comes before the mode (the standard's order).
        ("create_in_normal", "INVALID_CONFIG"),
        ("create_error_handler_in_normal", "INVALID_MODE"),
        ("set_normal_in_normal", "NO_ACTION"),
        ("stop_self_pid", "INVALID_PARAM"),
        ("suspend_self_pid", "INVALID_PARAM"),
        ("resume_self_pid", "INVALID_PARAM"),
        ("suspend_periodic", "INVALID_MODE"),
        ("resume_periodic", "INVALID_MODE"),
        ("suspend_dormant", "INVALID_MODE"),
        ("resume_dormant", "INVALID_MODE"),
        ("set_priority_dormant", "INVALID_MODE"),
        ("set_priority_bad", "INVALID_PARAM"),
        ("set_priority_zero", "INVALID_PARAM"),
        ("set_priority", "NO_ERROR"),
        ("current_priority", "40"),
        ("resume_not_suspended", "NO_ACTION"),
        ("suspend_sleeper", "NO_ERROR"),
        ("suspend_sleeper_again", "NO_ACTION"),
        ("resume_sleeper", "NO_ERROR"),
        ("suspend_self_negative", "INVALID_PARAM"),
        ("suspend_self_zero", "NO_ERROR"),
        ("suspend_self_timeout", "TIMED_OUT"),
        ("timed_wait_negative", "INVALID_PARAM"),
        ("timed_wait_infinite", "INVALID_PARAM"),
        ("timed_wait_zero", "NO_ERROR"),
        ("timed_wait", "NO_ERROR"),
        ("periodic_wait_aperiodic", "INVALID_MODE"),
        ("replenish_negative", "INVALID_PARAM"),
        ("replenish_beyond_system_time", "INVALID_PARAM"),
        ("replenish", "NO_ERROR"),
        ("deadline_stays_infinite", "true"),
        ("replenish_infinite", "NO_ERROR"),
        ("deadline_infinite", "true"),
        ("start_running", "NO_ACTION"),
        ("start_per_running", "NO_ACTION"),
        ("delayed_start_running_bad_delay", "NO_ACTION"),
        ("delayed_start_per_running_delay_ge_period", "NO_ACTION"),
        ("lock16", "Ok(16)"),
        ("lock_max", "INVALID_CONFIG"),
        ("unlock16", "Ok(0)"),
        ("unlock_zero", "NO_ACTION"),
        ("get_error_status_not_eh", "INVALID_CONFIG"),
        ("report_message", "NO_ERROR"),
        ("report_message_too_long", "INVALID_PARAM"),
        ("replenish_past_next_release", "INVALID_MODE"),
        ("replenish_periodic", "NO_ERROR"),
        ("periodic_deadline_moved", "true"),
        ("suspend_self_periodic_bad_timeout", "INVALID_PARAM"),
        ("suspend_self_periodic", "INVALID_MODE"),
        ("stop_per", "NO_ERROR"),
        ("stop_dormant", "NO_ACTION"),
    ];
    for (k, v) in expect {
        assert_eq!(run.value(k), v, "{k}");
    }
    assert_eq!(
        run.lines.len(),
        expect.len(),
        "unexpected extra lines:\n{}",
        run.lines.join("\n")
    );
}

/// Without CAP_SYS_NICE the runtime falls back to SCHED_OTHER with one warning and still runs.
#[test]
fn sched_fifo_fallback_warns_once() {
    let setpriv = std::path::Path::new("/usr/bin/setpriv");
    if !setpriv.exists() {
        eprintln!("SKIPPED sched_fifo_fallback_warns_once: /usr/bin/setpriv (util-linux) missing");
        return;
    }
    let out = Command::new(setpriv)
        .args(["--bounding-set=-sys_nice", "--inh-caps=-sys_nice"])
        .arg(env!("CARGO_BIN_EXE_partition-probe"))
        .arg("order")
        .env_remove("PARTIX_MODULE_FD")
        .env_remove("PARTIX_PARTITION_FD")
        .output()
        .expect("run setpriv");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(
        stderr.matches("no permission for SCHED_FIFO").count(),
        1,
        "{stderr}"
    );
    assert!(stdout.starts_with("low:begin\n"), "{stdout}");
}
