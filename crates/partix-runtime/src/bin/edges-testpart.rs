//! `edges-testpart`: APEX partition programs for `tests/edges_stop.rs` — STOP and SUSPEND of a
//! process that is inside a port operation must not leave the port locked.
//!
//! ```text
//! edges-testpart ROLE OUT N
//!   stop-src N   ports S_OUT (sampling) and Q_OUT (queuing), 16 KiB messages
//!   stop-dst N   ports S_IN and Q_IN
//! ```
//! Each partition runs three processes:
//! - `victim` (priority 10) loops on port operations with 16 KiB messages (source: WRITE and
//!   SEND with a 1 ms timeout; destination: READ, a 1 ms WAIT for a newer sampling message, and
//!   RECEIVE with a 1 ms timeout), so most of its time is spent copying under a port lock;
//! - `checker` (priority 20) uses the same ports (timeouts 0) and the port status services every
//!   200 µs and counts its rounds;
//! - `stopper` (priority 30) N times: sleeps a pseudo-random 0..300 µs (preempting the victim
//!   wherever it is), then alternately STOPs it or SUSPENDs it, waits until the checker has done
//!   two more rounds (at most 3 s, else `FAIL ... port stuck`), and STARTs or RESUMEs it.
//!
//! Results are appended to OUT: `PASS what`, `FAIL what: detail`, `INFO ...`, `END role`.

#[path = "testpart_common/mod.rs"]
mod testpart_common;

use partix_runtime::partition::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use testpart_common::{idle_forever, normal, out, spawn, MS, US};

static N: OnceLock<u64> = OnceLock::new();
static SOURCE: AtomicBool = AtomicBool::new(false);
/// Rounds completed by the checker.
static CHECKS: AtomicU64 = AtomicU64::new(0);
/// Port operations completed by the victim (all incarnations).
static VICTIM_OPS: AtomicU64 = AtomicU64::new(0);
/// The victim is inside its port calls. Read by the stopper, which runs only when it preempted
/// the victim (one CPU, higher priority): it tells where the victim was hit.
static IN_OP: AtomicBool = AtomicBool::new(false);

/// Message size of both channels.
const BIG: usize = 16 * 1024;
/// How long the stopper waits for the checker before it calls the port stuck.
const STUCK: Duration = Duration::from_secs(3);

fn ports() -> (SamplingPortId, QueuingPortId) {
    if SOURCE.load(Ordering::Relaxed) {
        (
            get_sampling_port_id("S_OUT").expect("S_OUT"),
            get_queuing_port_id("Q_OUT").expect("Q_OUT"),
        )
    } else {
        (
            get_sampling_port_id("S_IN").expect("S_IN"),
            get_queuing_port_id("Q_IN").expect("Q_IN"),
        )
    }
}

extern "C" fn victim() {
    let (s, q) = ports();
    let mut buf = [7u8; BIG];
    let mut i = 0u32;
    loop {
        // Every 16th round also waits (the waiting paths), the others only copy.
        let wait = if i % 16 == 15 { MS } else { 0 };
        i = i.wrapping_add(1);
        IN_OP.store(true, Ordering::Relaxed);
        if SOURCE.load(Ordering::Relaxed) {
            let _ = write_sampling_message(s, &buf);
            let _ = send_queuing_message(q, &buf, wait);
        } else {
            let _ = read_sampling_message(s, &mut buf);
            if wait != 0 {
                let _ = wait_sampling_message(s, wait, &mut buf);
            }
            let _ = receive_queuing_message(q, &mut buf, wait);
        }
        IN_OP.store(false, Ordering::Relaxed);
        VICTIM_OPS.fetch_add(1, Ordering::Relaxed);
    }
}

extern "C" fn checker() {
    let (s, q) = ports();
    let mut buf = vec![0u8; BIG];
    loop {
        if SOURCE.load(Ordering::Relaxed) {
            let _ = write_sampling_message(s, &buf[..64]);
            let _ = send_queuing_message(q, &buf[..64], 0);
        } else {
            let _ = read_sampling_message(s, &mut buf);
            let _ = receive_queuing_message(q, &mut buf, 0);
        }
        let _ = get_sampling_port_status(s);
        let _ = get_queuing_port_status(q);
        CHECKS.fetch_add(1, Ordering::Release);
        let _ = timed_wait(200 * US);
    }
}

/// Wait until the checker completed two more rounds; `false` after [`STUCK`].
fn checker_moves() -> bool {
    let c0 = CHECKS.load(Ordering::Acquire);
    let t0 = Instant::now();
    while CHECKS.load(Ordering::Acquire) < c0 + 2 {
        if t0.elapsed() > STUCK {
            return false;
        }
        let _ = timed_wait(100 * US);
    }
    true
}

extern "C" fn stopper() {
    let role = if SOURCE.load(Ordering::Relaxed) {
        "stop-src"
    } else {
        "stop-dst"
    };
    let n = *N.get().expect("N");
    let victim = get_process_id("victim").expect("victim");
    // Let the victim and the checker get going.
    while VICTIM_OPS.load(Ordering::Relaxed) == 0 || CHECKS.load(Ordering::Relaxed) == 0 {
        let _ = timed_wait(MS);
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id());
    let (mut stops, mut suspends, mut hits) = (0u64, 0u64, 0u64);
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let _ = timed_wait((x % 300) as SystemTime * US);
        if IN_OP.swap(false, Ordering::Relaxed) {
            hits += 1;
        }
        let what = if i % 2 == 0 {
            if let Err(e) = stop(victim) {
                out(&format!("FAIL STOP {i}: {e:?}"));
                break;
            }
            stops += 1;
            "STOP"
        } else {
            if let Err(e) = suspend(victim) {
                out(&format!("FAIL SUSPEND {i}: {e:?}"));
                break;
            }
            suspends += 1;
            "SUSPEND"
        };
        if !checker_moves() {
            out(&format!(
                "FAIL port stuck: after {what} number {i} of the victim, another process \
                 could not use the ports for {STUCK:?}"
            ));
            break;
        }
        let r = if what == "STOP" {
            start(victim)
        } else {
            resume(victim)
        };
        if let Err(e) = r {
            out(&format!("FAIL restart after {what} {i}: {e:?}"));
            break;
        }
    }
    // The victim keeps working after the last START / RESUME.
    let v0 = VICTIM_OPS.load(Ordering::Relaxed);
    let t0 = Instant::now();
    while VICTIM_OPS.load(Ordering::Relaxed) <= v0 && t0.elapsed() < STUCK {
        let _ = timed_wait(MS);
    }
    let v1 = VICTIM_OPS.load(Ordering::Relaxed);
    if v1 > v0 {
        out("PASS the victim works after the last START/RESUME");
    } else {
        out("FAIL the victim made no progress after the last START/RESUME");
    }
    if stops + suspends == n {
        out(&format!(
            "PASS {stops} STOPs and {suspends} SUSPENDs, the ports stayed usable"
        ));
    }
    if hits > 0 {
        out(&format!(
            "PASS {hits} of the STOPs/SUSPENDs hit the victim inside its port calls"
        ));
    } else {
        out("FAIL no STOP/SUSPEND hit the victim inside its port calls (nothing was tested)");
    }
    out(&format!(
        "INFO victim_ops={v1} checks={} hits={hits}",
        CHECKS.load(Ordering::Relaxed)
    ));
    out(&format!("END {role}"));
    idle_forever();
}

fn main() {
    let (role, rest) = testpart_common::init();
    N.set(testpart_common::number(rest.first(), 1000))
        .expect("once");
    let big = BIG as u32;
    match role.as_str() {
        "stop-src" => {
            SOURCE.store(true, Ordering::Relaxed);
            let d = PortDirection::Source;
            create_sampling_port("S_OUT", big, d, 1_000 * MS).expect("S_OUT");
            create_queuing_port("Q_OUT", big, 4, d, QueuingDiscipline::Fifo).expect("Q_OUT");
        }
        "stop-dst" => {
            let d = PortDirection::Destination;
            create_sampling_port("S_IN", big, d, 1_000 * MS).expect("S_IN");
            create_queuing_port("Q_IN", big, 4, d, QueuingDiscipline::Fifo).expect("Q_IN");
        }
        other => {
            eprintln!("edges-testpart: unknown role {other:?}");
            std::process::exit(2);
        }
    }
    spawn("victim", victim, 10);
    spawn("checker", checker, 20);
    spawn("stopper", stopper, 30);
    normal();
}
