//! STOP and SUSPEND of a process in the middle of a port operation (docs/ports.md, "Port locks
//! and STOP / SUSPEND"): the module template `tests/edges/stop.xml.in`, instantiated per
//! transport, runs two `edges-testpart` partitions under the real executive. In each, a victim
//! process loops on 16 KiB port operations (so it is mostly copying under a port lock), a
//! stopper process STOPs/STARTs and SUSPENDs/RESUMEs it thousands of times at pseudo-random
//! points, and after each STOP or SUSPEND a third process must be able to use the same ports
//! (bounded wait, else `FAIL port stuck`).

mod common;

use std::time::Duration;

/// STOP + SUSPEND requests per partition (half each).
const ROUNDS: &str = "2000";

/// Run the module over `transport` until both partitions wrote `END` (or 240 s pass); return
/// each partition's output lines.
fn run(transport: &str) -> Vec<Vec<String>> {
    let dir = common::out_dir(&format!("edges-stop-{transport}"));
    let m = common::instantiate("tests/edges/stop.xml.in", "edges-stop", transport, &dir);
    common::run_roles(
        transport,
        m,
        env!("CARGO_BIN_EXE_edges-testpart"),
        &dir,
        &[("stop-src", &[ROUNDS], true), ("stop-dst", &[ROUNDS], true)],
        100_000,
        Duration::from_secs(240),
    )
}

fn stop_and_suspend_inside_port_operations(transport: &str) {
    let out = run(transport);
    for (who, lines) in ["EA (source)", "EB (destination)"].iter().zip(&out) {
        let who = format!("{transport} {who}");
        let passes = common::pass_lines(&who, lines).len();
        common::print_info(&who, lines);
        assert_eq!(passes, 3, "{who}: {lines:#?}");
    }
}

#[test]
fn edges_stop_suspend_one_sided() {
    stop_and_suspend_inside_port_operations("one-sided");
}

#[test]
fn edges_stop_suspend_two_sided() {
    stop_and_suspend_inside_port_operations("two-sided");
}
