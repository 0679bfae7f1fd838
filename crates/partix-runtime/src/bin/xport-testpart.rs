//! `xport-testpart`: the APEX partition programs of the transport conformance suite
//! (`tests/conformance.rs`, module `tests/ports/conformance.xml.in`). The same programs run over
//! every transport: nothing here names one.
//!
//! ```text
//! xport-testpart ROLE OUT [N]
//!   conf-src    SRC:  sampling sizes 1..=64 (multicast), queue sizes 1..=64, then the full
//!               queue (timeout 0 / finite, WAITING while blocked), then a send after CLEAR;
//!               a second process sends N checksummed stress messages on Z_OUT
//!   conf-dst1   DST1: reads the sampling sizes (latest wins, never older), validity fresh and
//!               after the refresh period, wait timeouts 0 / finite, queue sizes in order,
//!               empty (timeout 0 / finite, WAITING while blocked), status, CLEAR
//!   conf-dst2   DST2: the sampling sizes (second multicast destination) and the N stress
//!               messages (no loss, duplicate, reordering or corruption)
//! ```
//! Results are appended to OUT, one line each: `PASS what`, `FAIL what: detail`, `END role`.

#[path = "testpart_common/mod.rs"]
mod testpart_common;

use partix_runtime::partition::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use testpart_common::{expect, idle_forever, new_process, normal, out, MS};

static N: OnceLock<u64> = OnceLock::new();
/// Processes still running in this partition (the last one writes `END`).
static RUNNING: AtomicU32 = AtomicU32::new(0);
/// Set by `main` just before it blocks with a timeout; the watcher then checks WAITING.
static BLOCKING: AtomicU32 = AtomicU32::new(0);
/// Set by the watcher once it checked the state after the wait (`main` spins until then, so it
/// does not start its next wait first).
static CHECKED: AtomicU32 = AtomicU32::new(0);
static ROLE: OnceLock<String> = OnceLock::new();

const MAX: usize = 64;

fn process(name: &str, entry: EntryPoint, prio: Priority) {
    let pid = new_process(name, entry, prio);
    RUNNING.fetch_add(1, Ordering::SeqCst);
    start(pid).expect("start");
}

/// The calling process is done: the last one of the partition writes `END`.
fn done() -> ! {
    if RUNNING.fetch_sub(1, Ordering::SeqCst) == 1 {
        out(&format!("END {}", ROLE.get().expect("role")));
    }
    idle_forever();
}

fn sid(name: &str) -> SamplingPortId {
    get_sampling_port_id(name).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

fn qid(name: &str) -> QueuingPortId {
    get_queuing_port_id(name).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

/// Wait on sampling port `port` until it holds `want`.
fn await_control(port: &str, want: &[u8]) {
    let id = sid(port);
    let mut buf = [0u8; 16];
    loop {
        match wait_sampling_message(id, 30_000 * MS, &mut buf) {
            Ok((n, _)) if &buf[..n] == want => return,
            Ok(_) => {}
            Err(e) => {
                out(&format!(
                    "FAIL waiting for {:?} on {port}: {e:?}",
                    String::from_utf8_lossy(want)
                ));
                return;
            }
        }
    }
}

/// End a watched wait: let the watcher check the state before going on (busy: no APEX wait).
fn unwatch() {
    BLOCKING.store(0, Ordering::SeqCst);
    while CHECKED.load(Ordering::SeqCst) == 0 {
        std::hint::spin_loop();
    }
}

/// The time-out of the waits the watcher looks at: it looks 100 ms into them, so they must
/// last well beyond that on a loaded machine.
const WATCHED_TIMEOUT: SystemTime = 1_000 * MS;

/// The watcher: while `main` is blocked (flag set), its state must be WAITING.
extern "C" fn watch_process() {
    let main = get_process_id("main").expect("main");
    let mut checked = 0;
    while checked < 1 {
        if BLOCKING.load(Ordering::SeqCst) == 1 {
            let _ = timed_wait(100 * MS);
            let st = get_process_status(main).map(|s| s.process_state);
            expect(
                "a process blocked on a port is WAITING",
                st == Ok(ProcessState::Waiting),
                format!("{st:?}"),
            );
            while BLOCKING.load(Ordering::SeqCst) == 1 {
                let _ = timed_wait(5 * MS);
            }
            let st = get_process_status(main).map(|s| s.process_state);
            expect(
                "after the wait the process is no longer WAITING",
                st != Ok(ProcessState::Waiting),
                format!("{st:?}"),
            );
            CHECKED.store(1, Ordering::SeqCst);
            checked += 1;
        } else {
            let _ = timed_wait(5 * MS);
        }
    }
    done();
}

// ------------------------------------------------------------------------------------- stress

fn fnv(b: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &x in b {
        h ^= u32::from(x);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn stress_message(i: u64) -> Vec<u8> {
    let len = 12 + (i as usize * 7) % (MAX - 11);
    let mut m = i.to_le_bytes().to_vec();
    m.extend((8..len - 4).map(|j| (i as usize * 31 + j) as u8));
    let c = fnv(&m);
    m.extend_from_slice(&c.to_le_bytes());
    m
}

extern "C" fn stress_src() {
    let id = qid("Z_OUT");
    let n = *N.get().expect("N");
    let mut failed = None;
    for i in 0..n {
        if let Err(e) = send_queuing_message(id, &stress_message(i), INFINITE_TIME_VALUE) {
            failed = Some((i, e));
            break;
        }
    }
    expect(
        &format!("stress: {n} messages sent"),
        failed.is_none(),
        format!("{failed:?}"),
    );
    done();
}

extern "C" fn stress_dst() {
    let id = qid("Z_IN");
    let n = *N.get().expect("N");
    let mut buf = [0u8; MAX];
    let (mut bad, mut first_bad) = (0u64, None);
    for i in 0..n {
        match receive_queuing_message(id, &mut buf, 30_000 * MS) {
            Ok(len) => {
                let m = &buf[..len];
                let ok = len >= 12
                    && fnv(&m[..len - 4]).to_le_bytes() == m[len - 4..]
                    && m[..8] == i.to_le_bytes()
                    && m == &stress_message(i)[..];
                if !ok {
                    bad += 1;
                    first_bad.get_or_insert((i, m.to_vec()));
                }
            }
            Err(e) => {
                out(&format!("FAIL stress: receive {i}: {e:?}"));
                done();
            }
        }
    }
    expect(
        &format!("stress: {n} messages in order, checksums good, none lost or duplicated"),
        bad == 0,
        format!("{bad} bad, first {first_bad:?}"),
    );
    let extra = receive_queuing_message(id, &mut buf, 100 * MS);
    expect(
        "stress: no extra message",
        extra == Err(ApexError::TimedOut),
        format!("{extra:?}"),
    );
    done();
}

// ---------------------------------------------------------------------------------- sampling

/// Read the sampling sizes 1..=64 as they come: each whole, never older than the last one.
fn sampling_sizes(who: &str) {
    let id = sid("S_IN");
    let mut buf = [0u8; MAX];
    let (mut last, mut seen, mut bad) = (0usize, 0u32, Vec::new());
    // Every message has at least one byte: a first wait with an empty buffer answers
    // INVALID_PARAM, and so does a read; the message they could not return is still newer than
    // any returned (a look with a whole buffer gets it at once).
    let short = wait_sampling_message(id, 30_000 * MS, &mut buf[..0]);
    let short_read = read_sampling_message(id, &mut buf[..0]);
    let again = wait_sampling_message(id, 0, &mut buf);
    expect(
        &format!("{who}: a wait with a buffer too short answers INVALID_PARAM and does not consume the message"),
        short == Err(ApexError::InvalidParam)
            && short_read == Err(ApexError::InvalidParam)
            && again.is_ok(),
        format!("short wait {short:?}, short read {short_read:?}, then {again:?}"),
    );
    if let Ok((n, _)) = again {
        last = n;
    }
    while last < MAX {
        match wait_sampling_message(id, 30_000 * MS, &mut buf) {
            Ok((n, _)) => {
                seen += 1;
                if n <= last || buf[..n].iter().any(|&b| b as usize != n) {
                    bad.push((n, buf[0]));
                }
                last = last.max(n);
            }
            Err(e) => {
                bad.push((0, 0));
                out(&format!("FAIL {who}: wait_sampling_message: {e:?}"));
                break;
            }
        }
    }
    expect(
        &format!("{who}: sampling sizes 1..=64 whole, latest wins, never older"),
        bad.is_empty() && last == MAX,
        format!("bad {bad:?}, last {last}, seen {seen}"),
    );
    let r = read_sampling_message(id, &mut buf).map(|(n, v)| (n, v, buf[0]));
    expect(
        &format!("{who}: the last message stays (not consumed) and is VALID while fresh"),
        r == Ok((MAX, Validity::Valid, MAX as u8)),
        format!("{r:?}"),
    );
}

// ---------------------------------------------------------------------------------- SRC main

extern "C" fn src_main() {
    let s = sid("S_OUT");
    let q = qid("Q_OUT");
    let down = sid("CTL_DOWN");
    // Sampling: sizes 1..=64 (multicast to DST1 and DST2).
    let mut ok = true;
    for k in 1..=MAX {
        ok &= write_sampling_message(s, &[k as u8; MAX][..k]).is_ok();
        let _ = timed_wait(2 * MS);
    }
    expect("sampling writes 1..=64 bytes", ok, "a write failed");
    let big = write_sampling_message(s, &[0u8; MAX + 1]);
    expect(
        "sampling write longer than the maximum: INVALID_CONFIG",
        big == Err(ApexError::InvalidConfig),
        format!("{big:?}"),
    );
    // Queuing: sizes 1..=64 in order (the queue holds 4: the sender waits for room).
    let mut fails = Vec::new();
    for k in 1..=MAX {
        if let Err(e) = send_queuing_message(q, &[k as u8; MAX][..k], INFINITE_TIME_VALUE) {
            fails.push((k, e));
        }
    }
    expect(
        "queue sends of 1..=64 bytes",
        fails.is_empty(),
        format!("{fails:?}"),
    );
    // Full: DST1 stops receiving.
    await_control("CTL_UP", b"full");
    let mut codes = Vec::new();
    for i in 0..5u8 {
        let t = if i == 0 { 1_000 * MS } else { 0 };
        codes.push(send_queuing_message(q, &[b'f', i], t));
    }
    expect(
        "queue accepts MaxNbMessages (5) messages",
        codes.iter().all(Result::is_ok),
        format!("{codes:?}"),
    );
    let r = send_queuing_message(q, b"x", 0);
    expect(
        "queue full, timeout 0: NOT_AVAILABLE",
        r == Err(ApexError::NotAvailable),
        format!("{r:?}"),
    );
    let r = send_queuing_message(q, b"x", 50 * MS);
    expect(
        "queue full, timeout 50 ms: TIMED_OUT",
        r == Err(ApexError::TimedOut),
        format!("{r:?}"),
    );
    BLOCKING.store(1, Ordering::SeqCst);
    let r = send_queuing_message(q, b"x", WATCHED_TIMEOUT);
    unwatch();
    expect(
        "queue full, timeout 1 s (watched): TIMED_OUT",
        r == Err(ApexError::TimedOut),
        format!("{r:?}"),
    );
    let st = get_queuing_port_status(q);
    expect(
        "source status: 5 messages, max 5, SOURCE",
        matches!(
            st,
            Ok(QueuingPortStatus {
                nb_message: 5,
                max_nb_message: 5,
                max_message_size: 64,
                port_direction: PortDirection::Source,
                ..
            })
        ),
        format!("{st:?}"),
    );
    let _ = write_sampling_message(down, b"full-done");
    // CLEAR on DST1 returns the room.
    await_control("CTL_UP", b"cleared");
    let r = send_queuing_message(q, b"after-clear", 5_000 * MS);
    expect("send after CLEAR", r.is_ok(), format!("{r:?}"));
    done();
}

// --------------------------------------------------------------------------------- DST1 main

extern "C" fn dst1_main() {
    let s = sid("S_IN");
    let q = qid("Q_IN");
    let up = sid("CTL_UP");
    let mut buf = [0u8; MAX];
    sampling_sizes("DST1");
    let r = wait_sampling_message(s, 0, &mut buf);
    expect(
        "wait for a newer sampling message, timeout 0: NOT_AVAILABLE",
        r == Err(ApexError::NotAvailable),
        format!("{r:?}"),
    );
    let r = wait_sampling_message(s, 50 * MS, &mut buf);
    expect(
        "wait for a newer sampling message, timeout 50 ms: TIMED_OUT",
        r == Err(ApexError::TimedOut),
        format!("{r:?}"),
    );
    // Queue sizes 1..=64 in order.
    let mut bad = Vec::new();
    for k in 1..=MAX {
        match receive_queuing_message(q, &mut buf, 30_000 * MS) {
            Ok(n) if n == k && buf[..n].iter().all(|&b| b as usize == k) => {}
            other => bad.push((k, other)),
        }
    }
    expect(
        "queue sizes 1..=64 received in order",
        bad.is_empty(),
        format!("{bad:?}"),
    );
    let r = receive_queuing_message(q, &mut buf, 0);
    expect(
        "queue empty, timeout 0: NOT_AVAILABLE",
        r == Err(ApexError::NotAvailable),
        format!("{r:?}"),
    );
    let r = receive_queuing_message(q, &mut buf, 50 * MS);
    expect(
        "queue empty, timeout 50 ms: TIMED_OUT",
        r == Err(ApexError::TimedOut),
        format!("{r:?}"),
    );
    BLOCKING.store(1, Ordering::SeqCst);
    let r = receive_queuing_message(q, &mut buf, WATCHED_TIMEOUT);
    unwatch();
    expect(
        "queue empty, timeout 1 s (watched): TIMED_OUT",
        r == Err(ApexError::TimedOut),
        format!("{r:?}"),
    );
    // Validity after the refresh period (0.5 s), after all this time.
    let _ = timed_wait(600 * MS);
    let r = read_sampling_message(s, &mut buf);
    expect(
        "sampling INVALID after the refresh period",
        matches!(r, Ok((MAX, Validity::Invalid))),
        format!("{r:?}"),
    );
    let _ = write_sampling_message(up, b"full");
    await_control("CTL_DOWN", b"full-done");
    // The 5 messages arrive (a manager thread or the loopback may take a moment).
    let t0 = get_time();
    let mut st = get_queuing_port_status(q);
    while !matches!(st, Ok(QueuingPortStatus { nb_message: 5, .. })) && get_time() - t0 < 5_000 * MS
    {
        let _ = timed_wait(5 * MS);
        st = get_queuing_port_status(q);
    }
    expect(
        "destination status: 5 messages, max 5, DESTINATION",
        matches!(
            st,
            Ok(QueuingPortStatus {
                nb_message: 5,
                max_nb_message: 5,
                max_message_size: 64,
                port_direction: PortDirection::Destination,
                ..
            })
        ),
        format!("{st:?}"),
    );
    let r = clear_queuing_port(q);
    expect("CLEAR_QUEUING_PORT", r.is_ok(), format!("{r:?}"));
    let r = receive_queuing_message(q, &mut buf, 0);
    expect(
        "after CLEAR the queue is empty",
        r == Err(ApexError::NotAvailable),
        format!("{r:?}"),
    );
    let _ = write_sampling_message(up, b"cleared");
    let r = receive_queuing_message(q, &mut buf, 10_000 * MS).map(|n| buf[..n].to_vec());
    expect(
        "the message sent after CLEAR arrives",
        r == Ok(b"after-clear".to_vec()),
        format!("{r:?}"),
    );
    done();
}

extern "C" fn dst2_main() {
    sampling_sizes("DST2");
    done();
}

fn main() {
    let (role, rest) = testpart_common::init();
    N.set(testpart_common::number(rest.first(), 2000))
        .expect("once");
    ROLE.set(role.clone()).expect("once");
    let src = PortDirection::Source;
    let dst = PortDirection::Destination;
    let fifo = QueuingDiscipline::Fifo;
    let refresh = 500 * MS;
    let ctl = 10_000 * MS;
    match role.as_str() {
        "conf-src" => {
            create_sampling_port("S_OUT", 64, src, refresh).expect("S_OUT");
            create_sampling_port("CTL_DOWN", 16, src, ctl).expect("CTL_DOWN");
            create_sampling_port("CTL_UP", 16, dst, ctl).expect("CTL_UP");
            create_queuing_port("Q_OUT", 64, 5, src, fifo).expect("Q_OUT");
            let z = create_queuing_port("Z_OUT", 64, 13, src, fifo).expect("Z_OUT");
            set_queuing_port_recv_mode(z, RecvMode::SpinThenPark { spins: 500 }).expect("mode");
            process("main", src_main, 10);
            process("watch", watch_process, 20);
            process("stress", stress_src, 5);
        }
        "conf-dst1" => {
            create_sampling_port("S_IN", 64, dst, refresh).expect("S_IN");
            create_sampling_port("CTL_DOWN", 16, dst, ctl).expect("CTL_DOWN");
            create_sampling_port("CTL_UP", 16, src, ctl).expect("CTL_UP");
            let q = create_queuing_port("Q_IN", 64, 5, dst, fifo).expect("Q_IN");
            set_queuing_port_recv_mode(q, RecvMode::Blocking).expect("mode");
            process("main", dst1_main, 10);
            process("watch", watch_process, 20);
        }
        "conf-dst2" => {
            let s = create_sampling_port("S_IN", 64, dst, refresh).expect("S_IN");
            set_sampling_port_recv_mode(s, RecvMode::Blocking).expect("mode");
            let z = create_queuing_port("Z_IN", 64, 13, dst, fifo).expect("Z_IN");
            set_queuing_port_recv_mode(z, RecvMode::Spin).expect("mode");
            process("main", dst2_main, 10);
            process("stress", stress_dst, 5);
        }
        other => {
            eprintln!("xport-testpart: unknown role {other:?}");
            std::process::exit(2);
        }
    }
    normal();
}
