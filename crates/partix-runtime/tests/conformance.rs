//! One conformance suite over every channel transport and every receive mode: the module
//! template `tests/ports/conformance.xml.in` is instantiated per transport (`@TRANSPORT@`; and
//! `two-sided-manager`, two-sided with `partix:Delivery="manager"`) and
//! receive mode (`partix:ReceiveMode` on every port), run by the real executive with the
//! `xport-testpart` partitions (real processes, real shared memory, real loopback sockets), and
//! the same checks must pass for each: port semantics, multicast to two destinations, validity,
//! full / empty with timeouts 0, finite and infinite (each timed call bracketed with GET_TIME:
//! never early, never much late; time-out 0 never leaves the CPU), ordering, message sizes
//! 1 B..64 B and the size sweep 1 B..max (max 40, 56 and the transport's large maximum: 65483 B
//! on udp, 1 MiB elsewhere, byte-exact, max + 1 refused), CLEAR_QUEUING_PORT, WAITING while
//! blocked, the mode in effect (the CPU time of a 200 ms wait), port confinement, a
//! checksummed queuing stress between processes of two partitions, LAST_MSG_VALIDITY from
//! GET_SAMPLING_PORT_STATUS, RECEIVE_QUEUING_MESSAGE with INFINITE_TIME_VALUE, and the PRIORITY
//! discipline (three waiting receivers of priorities 5, 15, 10 on a destination port, the one
//! of 5 raised to 20 while it waits: released 20, 15, 10; three waiting senders on a full
//! source port, the one of 15 lowered to 1: released 10, 5, 1).
//!
//! Every transport runs here (no RDMA device is involved), so none is skipped.

mod common;

use std::path::Path;
use std::time::Duration;

/// The receive modes (`partix:ReceiveMode`) the suite runs in, each on every port.
const MODES: [&str; 3] = ["spin", "spin-then-park", "blocking"];

/// Stress messages: 3000 in the default mode, 1000 in the others (the stress takes turns with
/// the receiver window by window, so the run time grows with the count).
fn stress(mode: &str) -> &'static str {
    if mode == "spin-then-park" {
        "3000"
    } else {
        "1000"
    }
}

/// The large maximum of the size sweep: the largest udp message, else 1 MiB.
fn big(transport: &str) -> u32 {
    if transport == "udp" {
        partix_config::MAX_UDP_MESSAGE_SIZE
    } else {
        1 << 20
    }
}

/// The module of `transport` in `mode`, written as `dir/conformance-<transport>-<mode>.xml`.
fn module(transport: &str, mode: &str, dir: &Path) -> partix_config::model::Module {
    let tpl = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ports/conformance.xml.in");
    // `two-sided-manager`: the two-sided transport with `partix:Delivery="manager"` (only the
    // network manager thread delivers: the paper's design).
    let attrs = match transport {
        "two-sided-manager" => r#"partix:Transport="two-sided" partix:Delivery="manager""#.into(),
        t => format!(r#"partix:Transport="{t}""#),
    };
    let text = std::fs::read_to_string(tpl)
        .unwrap()
        .replace(r#"partix:Transport="@TRANSPORT@""#, &attrs)
        .replace("@TRANSPORT@", transport)
        .replace("@BIG@", &big(transport).to_string());
    let with = text
        .replace(
            "<Sampling_Port ",
            &format!(r#"<Sampling_Port partix:ReceiveMode="{mode}" "#),
        )
        .replace(
            "<Queuing_Port ",
            &format!(r#"<Queuing_Port partix:ReceiveMode="{mode}" "#),
        );
    let path = dir.join(format!("conformance-{transport}-{mode}.xml"));
    std::fs::write(&path, with).unwrap();
    partix_config::load(&path).unwrap_or_else(|e| panic!("{transport} {mode}: {e}"))
}

/// Run the conformance module over `transport` in `mode`; return each partition's output lines.
fn run(transport: &str, mode: &str) -> Vec<Vec<String>> {
    let dir = common::out_dir(&format!("xport-conf-{transport}-{mode}"));
    let m = module(transport, mode, &dir);
    let big = big(transport).to_string();
    let args: &[&str] = &[stress(mode), mode, &big];
    common::run_roles(
        &format!("{transport} {mode}"),
        m,
        env!("CARGO_BIN_EXE_xport-testpart"),
        &dir,
        &[
            ("conf-src", args, true),
            ("conf-dst1", args, true),
            ("conf-dst2", args, true),
        ],
        100_000,
        Duration::from_secs(300),
    )
}

/// The one test body, for every transport and mode.
fn conformance(transport: &str, mode: &str) {
    assert!(MODES.contains(&mode));
    let out = run(transport, mode);
    let who = format!("{transport} {mode}");
    // Every partition's INFO and FAIL lines first (the asserts below stop at the first).
    for (name, lines) in ["SRC", "DST1", "DST2"].iter().zip(&out) {
        common::print_info(&format!("{who} {name}"), lines);
        for l in lines.iter().filter(|l| l.starts_with("FAIL")) {
            println!("{who} {name}: {l}");
        }
    }
    let src = common::pass_lines(&format!("{who} SRC"), &out[0]);
    let dst1 = common::pass_lines(&format!("{who} DST1"), &out[1]);
    let dst2 = common::pass_lines(&format!("{who} DST2"), &out[2]);
    // Every check ran (keep in step with xport-testpart.rs).
    assert_eq!(src.len(), 24, "{who} SRC: {src:#?}");
    assert_eq!(dst1.len(), 35, "{who} DST1: {dst1:#?}");
    assert_eq!(dst2.len(), 14, "{who} DST2: {dst2:#?}");
    let n = stress(mode);
    for (name, lines, what) in [
        ("SRC", &src, "a process blocked on a port is WAITING"),
        ("DST1", &dst1, "a process blocked on a port is WAITING"),
        ("DST2", &dst2, &format!("stress: {n} messages in order")),
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
        ("SRC", &src, "shows its receive mode"),
        ("DST1", &dst1, "a sampling wait of 200 ms: the waiting"),
        ("DST1", &dst1, "a receiver waiting 200 ms for a message"),
        ("SRC", &src, "queue full, timeout 0: NotAvailable at once"),
        ("DST1", &dst1, "sampling sizes 1 B .. max on SBIG"),
        ("DST1", &dst1, "queuing sizes 1 B .. max on QBIG"),
        ("DST2", &dst2, "another partition (DST1's Q_IN)"),
        (
            "DST1",
            &dst1,
            "waiting receivers get the messages in priority order",
        ),
        (
            "DST1",
            &dst1,
            "waiting senders are released in priority order",
        ),
        ("DST1", &dst1, "SET_PRIORITY raises the waiting receiver"),
        ("SRC", &src, "SET_PRIORITY lowers the waiting sender"),
        ("DST1", &dst1, "LAST_MSG_VALIDITY VALID"),
        ("DST2", &dst2, "LAST_MSG_VALIDITY VALID"),
        ("DST1", &dst1, "LAST_MSG_VALIDITY INVALID"),
        (
            "DST1",
            &dst1,
            "with INFINITE_TIME_VALUE returns each message",
        ),
    ] {
        assert!(
            lines.iter().any(|l| l.contains(what)),
            "{who} {name}: no {what:?} in {lines:#?}"
        );
    }
}

/// One `#[test]` per transport and mode.
macro_rules! conformance_tests {
    ($($name:ident: $transport:literal, $mode:literal;)*) => {
        $(
            #[test]
            fn $name() {
                conformance($transport, $mode);
            }
        )*
    };
}

conformance_tests! {
    conformance_one_sided_spin: "one-sided", "spin";
    conformance_one_sided_spin_then_park: "one-sided", "spin-then-park";
    conformance_one_sided_blocking: "one-sided", "blocking";
    conformance_two_sided_spin: "two-sided", "spin";
    conformance_two_sided_spin_then_park: "two-sided", "spin-then-park";
    conformance_two_sided_blocking: "two-sided", "blocking";
    conformance_two_sided_manager_spin: "two-sided-manager", "spin";
    conformance_two_sided_manager_spin_then_park: "two-sided-manager", "spin-then-park";
    conformance_two_sided_manager_blocking: "two-sided-manager", "blocking";
    conformance_udp_spin: "udp", "spin";
    conformance_udp_spin_then_park: "udp", "spin-then-park";
    conformance_udp_blocking: "udp", "blocking";
    conformance_tcp_spin: "tcp", "spin";
    conformance_tcp_spin_then_park: "tcp", "spin-then-park";
    conformance_tcp_blocking: "tcp", "blocking";
}
