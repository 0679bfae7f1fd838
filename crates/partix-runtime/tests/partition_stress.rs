//! Races of the APEX runtime's services under load, run as real partition processes in
//! standalone mode (`partition-probe <scenario>`). In a test binary of their own, one at a time:
//! their processes keep a CPU busy at SCHED_FIFO, which would disturb the timing-sensitive
//! scenarios of `partition_services` if they ran beside them. They assert behaviour (no
//! violation seen in 2000 rounds), never timings.

mod probe_util;
use std::sync::Mutex;

/// One scenario at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Run `partition-probe scenario` alone; return its stdout lines (after checking it exited 0).
fn probe(scenario: &str) -> Vec<String> {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    probe_util::probe(scenario).ok(scenario).lines
}

/// SUSPEND of a process while the caller is itself being suspended (by a third process): the
/// target parks. The signal used to go out after the caller's critical section, so a caller
/// suspended there parked first, and the target, shown WAITING, ran on (14 to 23 times in 2000
/// rounds before the fix).
#[test]
fn a_suspend_whose_caller_is_suspended_meanwhile_still_parks_its_target() {
    let lines = probe("suspend-race");
    assert_eq!(
        lines,
        [
            "suspend_race:rounds=2000",
            "suspend_race:b_suspended_seen=true",
            "suspend_race:ran_while_suspended=0"
        ]
    );
}

/// A process suspended inside REPORT_APPLICATION_MESSAGE (inside its log write) does not block
/// the next log line of another process: std's stderr lock was held by the suspended one, and
/// every later HM log line (the deadline monitor's too) blocked.
#[test]
fn a_process_suspended_inside_its_log_write_does_not_block_the_log() {
    assert_eq!(probe("hm-log"), ["hm_log:done=2000"]);
}
