//! One conformance suite over every channel transport: the module template
//! `tests/ports/conformance.xml.in` is instantiated per transport (`@TRANSPORT@`), run by the
//! real executive with the `xport-testpart` partitions (real processes, real shared memory, real
//! loopback sockets), and the same checks must pass for each: port semantics, multicast to two
//! destinations, validity, full / empty with timeouts 0, finite and infinite, ordering, message
//! sizes 1 B..max, CLEAR_QUEUING_PORT, WAITING while blocked, and a checksummed queuing stress
//! between processes of two partitions.
//!
//! Every transport runs here (no RDMA device is involved), so none is skipped.

mod common;

use std::time::Duration;

/// Stress messages per transport.
const STRESS: &str = "3000";

/// Run the conformance module over `transport`; return each partition's output lines.
fn run(transport: &str) -> Vec<Vec<String>> {
    let dir = common::out_dir(&format!("xport-conf-{transport}"));
    let m = common::instantiate(
        "tests/ports/conformance.xml.in",
        "conformance",
        transport,
        &dir,
    );
    common::run_roles(
        transport,
        m,
        env!("CARGO_BIN_EXE_xport-testpart"),
        &dir,
        &[
            ("conf-src", &[STRESS], true),
            ("conf-dst1", &[STRESS], true),
            ("conf-dst2", &[STRESS], true),
        ],
        100_000,
        Duration::from_secs(120),
    )
}

/// The one test body, for every transport.
fn conformance(transport: &str) {
    let out = run(transport);
    let src = common::pass_lines(&format!("{transport} SRC"), &out[0]);
    let dst1 = common::pass_lines(&format!("{transport} DST1"), &out[1]);
    let dst2 = common::pass_lines(&format!("{transport} DST2"), &out[2]);
    // Every check ran (keep in step with xport-testpart.rs).
    assert_eq!(src.len(), 12, "{transport} SRC: {src:#?}");
    assert_eq!(dst1.len(), 16, "{transport} DST1: {dst1:#?}");
    assert_eq!(dst2.len(), 5, "{transport} DST2: {dst2:#?}");
    for (who, lines, what) in [
        ("SRC", &src, "a process blocked on a port is WAITING"),
        ("DST1", &dst1, "a process blocked on a port is WAITING"),
        ("DST2", &dst2, "stress: 3000 messages in order"),
        ("DST2", &dst2, "DST2: sampling sizes 1..=64"),
        (
            "DST1",
            &dst1,
            "a wait with a buffer too short answers INVALID_PARAM",
        ),
        (
            "DST2",
            &dst2,
            "a wait with a buffer too short answers INVALID_PARAM",
        ),
    ] {
        assert!(
            lines.iter().any(|l| l.contains(what)),
            "{transport} {who}: no {what:?} in {lines:#?}"
        );
    }
}

#[test]
fn conformance_one_sided() {
    conformance("one-sided");
}

#[test]
fn conformance_two_sided() {
    conformance("two-sided");
}

#[test]
fn conformance_udp() {
    conformance("udp");
}

#[test]
fn conformance_tcp() {
    conformance("tcp");
}
