//! `waitstop-testpart`: APEX partition programs for `tests/edges_wait.rs` — STOP and SUSPEND of a
//! process blocked in WAIT_SAMPLING_MESSAGE must take effect at once, not when its wait (or its
//! slice of holding the port) ends.
//!
//! ```text
//! waitstop-testpart ROLE OUT
//!   wait-src   ports S_OUT (source) and REQ_IN: writes to S_OUT every message asked for on REQ_IN
//!   wait-dst   ports S_IN (destination) and REQ_OUT: the test below
//! ```
//! `wait-dst` runs three processes:
//! - `waiter` (priority 10, aperiodic, started by the stopper): one WAIT_SAMPLING_MESSAGE on S_IN
//!   with a 30 s time-out, then it records what it got and returns;
//! - `checker` (priority 20): on request, uses S_IN (READ, a zero-time-out WAIT, status);
//! - `stopper` (priority 30): S_IN's wait slice is set to 60 s (longer than the waiter's
//!   time-out: a port lock kept by a waiting process until its slice ends would stay held for the
//!   whole wait). For each receive mode (Spin, SpinThenPark, Blocking) it starts the waiter, lets it
//!   block, then STOPs it (respectively SUSPENDs it) and asks the checker to use S_IN: the checker
//!   must get through (at most 3 s, else `FAIL ... port stuck`), while the waiter must not have
//!   returned. After a STOP it STARTs the waiter again; after a SUSPEND it has a message written
//!   while the waiter is suspended and RESUMEs it; either way the waiter must get exactly the
//!   message asked for (nothing lost or half-taken). Then, in the same mode, it lets the
//!   waiter block and asks the checker for GET_SAMPLING_PORT_STATUS alone: it must return (at
//!   most 3 s) while the waiter still waits (the status does not take the port).
//!
//! Results are appended to OUT: `PASS what`, `FAIL what: detail`, `INFO ...`, `END role`.

#[path = "testpart_common/mod.rs"]
mod testpart_common;

use partix_runtime::partition::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use testpart_common::{idle_forever, new_process, normal, out, spawn, state, MS, US};

/// Rounds the stopper asked the checker for, and rounds it completed.
static CHECK_REQ: AtomicU64 = AtomicU64::new(0);
static CHECK_DONE: AtomicU64 = AtomicU64::new(0);
/// Status-only rounds the stopper asked the checker for, and rounds it completed.
static STATUS_REQ: AtomicU64 = AtomicU64::new(0);
static STATUS_DONE: AtomicU64 = AtomicU64::new(0);
/// Waits the waiter returned from (all incarnations), and the message of the last one (0: none,
/// or an error).
static RETURNS: AtomicU64 = AtomicU64::new(0);
static RESULT: AtomicU64 = AtomicU64::new(0);

/// The waiter's time-out.
const WAIT: SystemTime = 30_000 * MS;
/// S_IN's wait slice: longer than the waiter's whole wait.
const SLICE: SystemTime = 60_000 * MS;
/// How long the stopper waits for something that must happen at once before it fails: under
/// the notifier's `MAX_PARK` (1 s), at whose end every park of the shared-memory transports
/// looks again anyway, so that a STOP or SUSPEND honoured only then fails (3 s before; found by
/// review).
const STUCK: Duration = Duration::from_millis(700);

extern "C" fn writer() {
    let req = get_sampling_port_id("REQ_IN").expect("REQ_IN");
    let s = get_sampling_port_id("S_OUT").expect("S_OUT");
    let mut buf = [0u8; 16];
    loop {
        if let Ok((n, _)) = wait_sampling_message(req, INFINITE_TIME_VALUE, &mut buf) {
            let _ = write_sampling_message(s, &buf[..n]);
        }
    }
}

extern "C" fn waiter() {
    let s = get_sampling_port_id("S_IN").expect("S_IN");
    let mut buf = [0u8; 16];
    let v = match wait_sampling_message(s, WAIT, &mut buf) {
        Ok((8, _)) => u64::from_le_bytes(buf[..8].try_into().expect("8 bytes")),
        Ok((n, _)) => {
            out(&format!("INFO waiter: a message of {n} bytes"));
            0
        }
        Err(e) => {
            out(&format!("INFO waiter: {e:?}"));
            0
        }
    };
    RESULT.store(v, Ordering::Relaxed);
    RETURNS.fetch_add(1, Ordering::Release);
}

extern "C" fn checker() {
    let s = get_sampling_port_id("S_IN").expect("S_IN");
    let mut buf = [0u8; 16];
    loop {
        let want = CHECK_REQ.load(Ordering::Acquire);
        if want > CHECK_DONE.load(Ordering::Relaxed) {
            let _ = read_sampling_message(s, &mut buf);
            let _ = wait_sampling_message(s, 0, &mut buf);
            let _ = get_sampling_port_status(s);
            CHECK_DONE.store(want, Ordering::Release);
        } else if STATUS_REQ.load(Ordering::Acquire) > STATUS_DONE.load(Ordering::Relaxed) {
            let want = STATUS_REQ.load(Ordering::Acquire);
            let _ = get_sampling_port_status(s);
            STATUS_DONE.store(want, Ordering::Release);
        } else {
            let _ = timed_wait(200 * US);
        }
    }
}

/// Poll `cond` every millisecond; `false` if it does not hold within [`STUCK`].
fn within_stuck(mut cond: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while !cond() {
        if t0.elapsed() > STUCK {
            return false;
        }
        let _ = timed_wait(MS);
    }
    true
}

/// Start the waiter and let it block in its wait (holding S_IN while it waits).
fn start_waiting(w: ProcessId, tag: &str) -> Result<(), String> {
    let r0 = RETURNS.load(Ordering::Acquire);
    start(w).map_err(|e| format!("{tag}: START: {e:?}"))?;
    if !within_stuck(|| state(w) == ProcessState::Waiting) {
        return Err(format!("{tag}: the waiter never showed WAITING"));
    }
    // WAITING is published right before the wait takes the port: let it get there.
    let _ = timed_wait(20 * MS);
    if RETURNS.load(Ordering::Acquire) != r0 {
        return Err(format!("{tag}: the waiter's wait returned early"));
    }
    Ok(())
}

/// Ask WA for message `k`.
fn request(req: SamplingPortId, k: u64) {
    write_sampling_message(req, &k.to_le_bytes()).expect("write REQ_OUT");
}

/// One round: block the waiter in mode `mname`, STOP or SUSPEND it, check the port, finish.
fn round(
    s: SamplingPortId,
    req: SamplingPortId,
    w: ProcessId,
    k: u64,
    mname: &str,
    stop_it: bool,
) -> Result<(), String> {
    let action = if stop_it { "STOP" } else { "SUSPEND" };
    let tag = format!("{mname} {action}");
    start_waiting(w, &tag)?;
    let r0 = RETURNS.load(Ordering::Acquire);
    if stop_it {
        stop(w).map_err(|e| format!("{tag}: {e:?}"))?;
    } else {
        suspend(w).map_err(|e| format!("{tag}: {e:?}"))?;
    }
    // Another process of the partition can use the port at once: the request reached the
    // waiter inside its wait, which released the port.
    let c = CHECK_REQ.fetch_add(1, Ordering::AcqRel) + 1;
    if !within_stuck(|| CHECK_DONE.load(Ordering::Acquire) >= c) {
        return Err(format!(
            "{tag}: port stuck: after {action} of the process waiting on S_IN, another process \
             could not use S_IN for {STUCK:?} (the waiter's time-out is 30 s)"
        ));
    }
    if RETURNS.load(Ordering::Acquire) != r0 {
        return Err(format!(
            "{tag}: the waiter returned from its wait after {action}"
        ));
    }
    let want = if stop_it {
        ProcessState::Dormant
    } else {
        ProcessState::Waiting
    };
    if state(w) != want {
        return Err(format!("{tag}: the waiter is {:?}, not {want:?}", state(w)));
    }
    if stop_it {
        // Started again, it waits anew and gets the next message.
        start_waiting(w, &tag)?;
        request(req, k);
    } else {
        // A message that arrives while it is suspended is the one it gets once resumed.
        request(req, k);
        let mut buf = [0u8; 16];
        let arrived = within_stuck(|| {
            matches!(read_sampling_message(s, &mut buf), Ok((8, _)))
                && u64::from_le_bytes(buf[..8].try_into().expect("8 bytes")) == k
        });
        if !arrived {
            return Err(format!("{tag}: message {k} never arrived"));
        }
        if RETURNS.load(Ordering::Acquire) != r0 {
            return Err(format!(
                "{tag}: the suspended waiter returned from its wait"
            ));
        }
        resume(w).map_err(|e| format!("{tag}: RESUME: {e:?}"))?;
    }
    waiter_got(w, r0, k, &tag)?;
    out(&format!(
        "PASS {tag}: a process blocked in WAIT_SAMPLING_MESSAGE released the port at once, \
         then got message {k}"
    ));
    Ok(())
}

/// Check that the waiter `w` returned from its wait (after `r0` returns) with message `k` and
/// is DORMANT again.
fn waiter_got(w: ProcessId, r0: u64, k: u64, tag: &str) -> Result<(), String> {
    if !within_stuck(|| RETURNS.load(Ordering::Acquire) > r0) {
        return Err(format!("{tag}: the waiter did not get message {k}"));
    }
    let got = RESULT.load(Ordering::Relaxed);
    if got != k {
        return Err(format!("{tag}: the waiter got {got}, not message {k}"));
    }
    if !within_stuck(|| state(w) == ProcessState::Dormant) {
        return Err(format!("{tag}: the waiter did not return to DORMANT"));
    }
    Ok(())
}

/// A status round: block the waiter in mode `mname`; another process's GET_SAMPLING_PORT_STATUS
/// on S_IN gets through while it waits (the waiter still waits afterwards), then message `k`
/// ends the wait.
fn status_round(req: SamplingPortId, w: ProcessId, k: u64, mname: &str) -> Result<(), String> {
    let tag = format!("{mname} status");
    start_waiting(w, &tag)?;
    let r0 = RETURNS.load(Ordering::Acquire);
    let c = STATUS_REQ.fetch_add(1, Ordering::AcqRel) + 1;
    if !within_stuck(|| STATUS_DONE.load(Ordering::Acquire) >= c) {
        return Err(format!(
            "{tag}: GET_SAMPLING_PORT_STATUS on S_IN did not return for {STUCK:?} while a process \
             waited on S_IN (its time-out is 30 s)"
        ));
    }
    if RETURNS.load(Ordering::Acquire) != r0 || state(w) != ProcessState::Waiting {
        return Err(format!(
            "{tag}: the waiter is not waiting any more ({:?}): the check proves nothing",
            state(w)
        ));
    }
    request(req, k);
    waiter_got(w, r0, k, &tag)?;
    out(&format!(
        "PASS {tag}: GET_SAMPLING_PORT_STATUS returned while another process waited on the port, \
         which then got message {k}"
    ));
    Ok(())
}

extern "C" fn stopper() {
    let s = get_sampling_port_id("S_IN").expect("S_IN");
    let req = get_sampling_port_id("REQ_OUT").expect("REQ_OUT");
    let w = get_process_id("waiter").expect("waiter");
    set_sampling_port_wait_slice(s, SLICE).expect("wait slice");
    let modes = [
        ("Spin", RecvMode::Spin),
        ("SpinThenPark", RecvMode::SpinThenPark { spins: 2000 }),
        ("Blocking", RecvMode::Blocking),
    ];
    let mut k = 0u64;
    'all: for (mname, mode) in modes {
        set_sampling_port_recv_mode(s, mode).expect("recv mode");
        for stop_it in [true, false] {
            k += 1;
            if let Err(e) = round(s, req, w, k, mname, stop_it) {
                out(&format!("FAIL {e}"));
                break 'all;
            }
        }
        k += 1;
        if let Err(e) = status_round(req, w, k, mname) {
            out(&format!("FAIL {e}"));
            break 'all;
        }
    }
    out("END wait-dst");
    idle_forever();
}

fn main() {
    let (role, _) = testpart_common::init();
    let refresh = 10_000 * MS;
    match role.as_str() {
        "wait-src" => {
            create_sampling_port("S_OUT", 16, PortDirection::Source, refresh).expect("S_OUT");
            create_sampling_port("REQ_IN", 16, PortDirection::Destination, refresh)
                .expect("REQ_IN");
            spawn("writer", writer, 10);
            out("INFO wait-src up");
        }
        "wait-dst" => {
            create_sampling_port("S_IN", 16, PortDirection::Destination, refresh).expect("S_IN");
            create_sampling_port("REQ_OUT", 16, PortDirection::Source, refresh).expect("REQ_OUT");
            new_process("waiter", waiter, 10);
            spawn("checker", checker, 20);
            spawn("stopper", stopper, 30);
        }
        other => {
            eprintln!("waitstop-testpart: unknown role {other:?}");
            std::process::exit(2);
        }
    }
    normal();
}
