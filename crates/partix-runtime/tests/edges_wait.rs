//! STOP and SUSPEND of a process blocked in WAIT_SAMPLING_MESSAGE (docs in
//! `src/partition/ports.rs`, "Port locks and STOP / SUSPEND"): the wait holds the port lock,
//! which defers control signals, so the request must end the wait at once rather than when the
//! wait (or its slice) ends. The module template `tests/edges/wait.xml.in`, instantiated per
//! transport, runs two `waitstop-testpart` partitions under the real executive; in WB a process
//! blocks in a 30 s wait on a port whose wait slice is 60 s, in each receive mode, and is STOPped
//! or SUSPENDed: another process must then be able to use the port (bounded wait of 3 s, else
//! `FAIL ... port stuck`), and the waiter, started again or resumed, must get exactly the next
//! message.

mod common;

use std::time::Duration;

/// Run the module over `transport` until WB wrote `END` (or 120 s pass); return each
/// partition's output lines.
fn run(transport: &str) -> Vec<Vec<String>> {
    let dir = common::out_dir(&format!("edges-wait-{transport}"));
    let m = common::instantiate("tests/edges/wait.xml.in", "edges-wait", transport, &dir);
    common::run_roles(
        transport,
        m,
        env!("CARGO_BIN_EXE_waitstop-testpart"),
        &dir,
        &[("wait-src", &[], false), ("wait-dst", &[], true)],
        6_000,
        Duration::from_secs(120),
    )
}

fn stop_and_suspend_inside_sampling_wait(transport: &str) {
    let out = run(transport);
    for (who, lines) in ["WA (writer)", "WB (waiter)"].iter().zip(&out) {
        let who = format!("{transport} {who}");
        common::assert_no_fail(&who, lines);
        common::print_info(&who, lines);
    }
    let wb = &out[1];
    assert!(
        wb.iter().any(|l| l.starts_with("END")),
        "{transport} WB did not finish: {wb:#?}"
    );
    // Three receive modes, STOP, SUSPEND and a status call each (keep in step with
    // waitstop-testpart.rs).
    let passes = wb.iter().filter(|l| l.starts_with("PASS")).count();
    assert_eq!(passes, 9, "{transport} WB: {wb:#?}");
}

#[test]
fn edges_wait_stop_suspend_one_sided() {
    stop_and_suspend_inside_sampling_wait("one-sided");
}

#[test]
fn edges_wait_stop_suspend_two_sided() {
    stop_and_suspend_inside_sampling_wait("two-sided");
}

#[test]
fn edges_wait_stop_suspend_udp() {
    stop_and_suspend_inside_sampling_wait("udp");
}

#[test]
fn edges_wait_stop_suspend_tcp() {
    stop_and_suspend_inside_sampling_wait("tcp");
}
