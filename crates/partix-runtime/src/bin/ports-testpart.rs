//! `ports-testpart`: APEX partition programs for the port tests (`tests/ports.rs`).
//!
//! ```text
//! ports-testpart ROLE OUT [N]
//!   codes          every return code of every port service (ports of tests/ports/codes.xml),
//!                  also from the error handler (a wait with a time-out: INVALID_MODE)
//!   idle           create nothing, enter NORMAL
//!   sampling-src   write "first" at init, then "tick K" (K = 0..19) each period, then "final";
//!                  no region descriptor it holds can be resized
//!   sampling-dst   read until "final": latest wins, reads do not consume, validity turns
//!                  INVALID after the refresh period; the slot is mapped read-only (a write
//!                  faults) and cannot be made writable (mprotect, a new writable mapping of its
//!                  descriptor); no region descriptor it holds can be resized
//!   queue-src N    send N numbered messages (INFINITE timeout); no region descriptor it holds
//!                  can be resized
//!   queue-dst N    receive N messages, check order and content (no loss, no duplicate); the
//!                  queued data is mapped read-only (a store faults) and cannot be made writable;
//!                  no region descriptor it holds can be resized
//!   kill-src       write 64 KiB messages in a loop ([`build_big`]: sequence number, length,
//!                  a fill byte that is never the forged one, checksum); a higher-priority
//!                  process, 300 ms in (first start only), writes one more complete message
//!                  straight into the slot, leaves the slot mid-write (a forged `begin`, half the
//!                  payload 0xEE) and SIGKILLs the partition
//!   stuck-dst      without reading, wait until the slot stays mid-write (the writer died inside
//!                  a write), then wait for a newer message: TIMED_OUT, a look NOT_AVAILABLE,
//!                  and READ NO_ACTION (no good message was ever read)
//!   kill-dst       read every 0.5 ms for 1.5 s and until the slot has stayed mid-write, with
//!                  the same last complete message, for 1.3 s (the refresh period is 1 s; at
//!                  most 25 s): every message read is whole ([`check_big`]); every read after
//!                  the death returns exactly the (sequence number, length) of the read before
//!                  it, through the fallback path (`sampling_port_counters`: the newest message
//!                  is the killer's, never read, and unreadable); it is VALID at first, then
//!                  INVALID for good
//!   kill2-src      (kill.xml with a two-sided or tcp channel) write 64 KiB messages for
//!                  300 ms, then message 2^40, then leave the channel mid-write (two-sided: the
//!                  next TX slot's `begin` and half its payload; tcp: a 64 KiB frame's header
//!                  and half its payload on the socket) and SIGKILL the partition
//!   kill2-dst      read every 0.5 ms until 1.3 s after message 2^40 came: every read whole,
//!                  every read from then on returns 2^40, VALID then INVALID for good;
//!                  two-sided: the network manager thread runs, the TX slot stays mid-write
//!   window-src     write 64 KiB messages back to back, without a pause, in every window
//!   window-dst     read 300 times (at most 20 s) in its own windows: no message is torn; a slot
//!                  stuck mid-write (a write its window ended inside of) is counted in an INFO line,
//!                  which the test compares with the writer's backstops; every
//!                  read returns the newest message in the slot
//!   restart-dst    read until "final", restart the partition (COLD_START); after the restart,
//!                  the first read at initialisation returns "final" again (regions survive)
//!   order-src      wait for "ready" on sampling port RDY, then send 3 messages on QOUT
//!   order-dst D    processes of priority 7, 5, 10, 15 wait on QIN (discipline D: fifo|priority)
//!                  in that order; when all 4 wait, STOP the first, write "ready" on RDY; report
//!                  who got what
//!   stale-dst      process "w" waits on QIN and is stopped there; when the 3 messages of
//!                  order-src are queued, RECEIVE with TIME_OUT 0, and with a time-out under the
//!                  preemption lock, return them (the stopped process holds no place in line)
//!   fds-dst MODE   (MODE: per-process | shared, the partition's partix:DescriptorTable) a
//!                  descriptor opened at init; in NORMAL mode process "opener" opens another and
//!                  closes the first, then process "checker" looks at both: per-process, it
//!                  still has the first and not the second; shared, the other way round. The
//!                  checker then receives on the udp port IN (its socket was inherited)
//!   closed-src     (closed.xml) for each step CD asks on ASK (step, deadline): step 1 sends,
//!                  30 ms after the deadline, a message carrying its send time; step 2 sends at
//!                  once
//!   closed-dst     (closed.xml) at the start of its window (50 ms of 300), a receiver whose
//!                  deadline falls in the closed window that follows: step 1, a message sent
//!                  after the deadline is not its (TIMED_OUT, then TIME_OUT 0 takes it); step 2,
//!                  one sent before the deadline is (though it runs only after the deadline);
//!                  steps 3 and 4, the same for a sampling wait (closed-src writes on SOUT);
//!                  steps 5 and 6, for a sender waiting for room on QBACK (closed-src
//!                  receives, and says when on POPPED); step 7, two senders (s1, s2) waiting
//!                  on QBACK2 (MaxNbMessages 2) with one deadline, room made once before it
//!                  and once after it: s1 sends, s2 times out
//!   suspend-dst    processes r1 then r2 wait on QIN (FIFO); r1 is SUSPENDed, then "ready" on RDY
//!                  makes order-src send 3 messages: r2 gets message 1 while r1 stays suspended
//!                  (WAITING, not returned: it was handed message 0), a TIME_OUT 0 receive gets
//!                  message 2, and r1, resumed, returns message 0
//!   suspend-src    (tests/ports/suspend_send.xml) fills QOUT (8), then processes s1 then s2 wait
//!                  to send "A" and "B"; s1 is SUSPENDed and "go" written on GO: s2's send
//!                  returns while s1 stays suspended (WAITING, not returned: its message was sent
//!                  in its place), and s1, resumed, returns NO_ERROR
//!   drain-dst      waits for "go" on GO, then receives 10 messages: the 8 of the fill, then "A",
//!                  then "B"
//!   serve-src      (tests/ports/serve.xml) for each new step [k, n, tag] on ASK, sends
//!                  [tag + i; 4] (i < n) on QOUT, then writes [k] on DONE
//!   serve-dst      receivers r0..r6 (priority 10) wait in turn on QIN (PRIORITY); in each
//!                  step serve-src sends while one waits, and the controller (priority 20),
//!                  which has not let it run since, uses the port: CLEAR_QUEUING_PORT (the
//!                  receiver running, then suspended), a RECEIVE with a time-out, a TIME_OUT 0
//!                  RECEIVE and the status with more messages than waiters, a RECEIVE under the
//!                  preemption lock, a TIME_OUT 0 RECEIVE after the receiver's time-out
//!                  passed (it came before); each time the waiting receiver gets the first
//!                  message, and returns after the controller's call (else FAIL: it ran)
//!   mirror-src     (tests/ports/serve.xml) fills QOUT (PRIORITY, 8); l (priority 10) waits to
//!                  send 0xA0; mirror-dst takes one message, and the controller (priority 20),
//!                  which has not let l run since, sends 0xB0 with a time-out: TIMED_OUT, and l
//!                  returns NO_ERROR, after the controller's call (else FAIL: it ran)
//!   mirror-dst     takes one message when asked, then the rest: the 8 of the fill, then 0xA0
//!                  (also the partner of expired-src)
//!   expired-dst    (tests/ports/serve.xml, with serve-src) r1 (a 4-byte buffer, shorter than
//!                  QIN's largest message, so it cannot be handed one in its place; 1 s) waits
//!                  on QIN (FIFO) and is SUSPENDed, r2 (3 s) waits behind it, one message comes:
//!                  until r1's time-out it is queued for r1 (status {1, 2}, TIME_OUT 0
//!                  NOT_AVAILABLE); then r2 gets it, and r1, resumed, returns TIMED_OUT
//!   expired-src    the senders' mirror (with mirror-dst): QOUT (FIFO) full, s1 (a batch send,
//!                  never sent in its place; 1 s) waits and is SUSPENDed, s2 (3 s) behind it,
//!                  mirror-dst takes one message: until s1's time-out the room is its; then s2
//!                  sends 0xA0, s1, resumed, returns TIMED_OUT
//!   bigsamp-src B M  (tests/ports/sampling_memory.xml.in) creates source sampling ports of B
//!                  (half its memory) and M bytes (NO_ERROR), writes "mid" on the second
//!   bigsamp-dst H M W  creates a destination sampling port of H bytes: W = invalid,
//!                  INVALID_CONFIG (its buffers do not fit the memory) and the partition goes
//!                  on; W = ok, NO_ERROR (a socket destination needs none); then one of M
//!                  bytes, which reads "mid"
//!   mem-dst        (tests/ports/memory.xml, one malloc arena) CREATE_QUEUING_PORT with the
//!                  memory full is INVALID_CONFIG; then, with the memory full again, a receive on
//!                  the empty QIN times out (10 ms), a waiting receive is released by mem-src's
//!                  message, a suspended waiting receiver keeps its place (no buffer to hand it
//!                  the message: it stays in the channel) and returns it when resumed; it then
//!                  takes messages while mem-src's senders wait, and gets every message once, in
//!                  order
//!   mem-src        the same on QOUT: a send to the full port times out (10 ms), a waiting send
//!                  is released when mem-dst takes a message, a suspended waiting sender keeps
//!                  its place (its message cannot be copied: the room stays for it) and sends
//!                  when resumed
//!   book-src       (tests/ports/book.xml) fills QOUT (4) with messages 0..3, then in each of
//!                  its incarnations (it restarts itself twice, COLD_START) finds it full
//!                  (TIME_OUT 0: NOT_AVAILABLE; NB_MESSAGE 4); the last writes "go" on GO and
//!                  sends 4..7, waiting for room
//!   book-dst       waits for "go" on GO, then receives 0..7, each once, in order, and no more
//!   dbook-src      (tests/ports/dbook.xml) fills QOUT (4) with messages 0..3, then for each
//!                  incarnation k of the destination ("up k" on BACK) finds it full (TIME_OUT 0:
//!                  NOT_AVAILABLE; NB_MESSAGE 4) and answers "ok k" on GO; then sends 4..7,
//!                  waiting for room
//!   dbook-dst      in each incarnation k, makes QIN, writes "up k" on BACK, waits for "ok k" on
//!                  GO and restarts itself (COLD_START) twice without reading; the last receives
//!                  0..7, each once, in order, and no more
//!   stamp          (tests/ports/stamp.xml) process l (priority 5) writes one 32 MiB message on
//!                  S; h (priority 10), started 1 ms into it, writes 1 byte, waiting for the port
//!                  lock meanwhile; r (priority 20) reads every message of D (S's loopback,
//!                  refresh 5 ms) as it comes: h's is VALID
//!   exec-child     (tests/ports/exec.xml) creates its ports (one-sided sampling S -> D, tcp
//!                  queuing QO -> QI, to itself), runs `sh -c 'ls /proc/self/fd; printenv
//!                  PARTIX_PORT_FDS'`: the program got no descriptor >= 600, neither state
//!                  descriptor (500, 501) and no PARTIX_PORT_FDS; the partition keeps them all,
//!                  close-on-exec; both ports still carry a message
//!   affinity       asks for every online CPU (sched_setaffinity), then for each CPU alone; writes
//!                  `INFO widened <cpus it then has>` and `INFO alone <cpu> <errno or 0>`, and
//!                  the test compares them with the partition's partix:Affinity
//!   creds UID GID  (a partition under partix:User="UID:GID") it runs as UID/GID with no
//!                  supplementary groups, NO_NEW_PRIVS, its process SCHED_FIFO; with
//!                  RLIMIT_RTPRIO 98 no capabilities and SCHED_FIFO 99 refused, else only
//!                  CAP_SYS_NICE; it cannot signal the executive,
//!                  open the executive's /proc/PID/fd, re-open a read-only region read-write
//!                  through /proc/self/fd or write its cgroup's cgroup.freeze (INFO when it has
//!                  no partix cgroup); it cannot open its configuration by path (the test puts it
//!                  in a private directory) but reads it through the executive's descriptor; it
//!                  reads a valid message on sampling port IN
//! ```
//! Results are appended to OUT, one line each: `PASS what`, `FAIL what: detail`, `END role`.
#![allow(unsafe_code)]

#[path = "testpart_common/mod.rs"]
mod testpart_common;

use partix_runtime::partition::*;
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::OnceLock;
use testpart_common::{
    attrs, check, create_with, exhaust_memory, expect, expect_dbg, idle_forever, memory_full,
    normal, out, MS,
};

static N: OnceLock<u64> = OnceLock::new();

/// Create and start a process of period `period` (its time capacity) or aperiodic.
fn process(name: &str, entry: EntryPoint, prio: Priority, period: SystemTime) {
    let pid = create_with(&ProcessAttributes {
        period,
        time_capacity: if period == INFINITE_TIME_VALUE {
            INFINITE_TIME_VALUE
        } else {
            period
        },
        ..attrs(name, entry, prio)
    });
    start(pid).expect("start");
}

// ------------------------------------------------------------------------------------- closed

/// `closed-dst`'s two waiting senders of step 7 (s1, s2), their common deadline, what each
/// SEND returned (1: NO_ERROR, 2: TIMED_OUT, 3: another error; 0: not yet) and when.
static CLOSED_SENDERS: OnceLock<(ProcessId, ProcessId)> = OnceLock::new();
static CLOSED_DEADLINE: AtomicI64 = AtomicI64::new(0);
static CLOSED_SENT: [AtomicI32; 2] = [AtomicI32::new(0), AtomicI32::new(0)];
static CLOSED_BACK: [AtomicI64; 2] = [AtomicI64::new(0), AtomicI64::new(0)];

/// Step 7's sender `i`: send on QBACK2 with a time-out ending at the common deadline.
fn closed_sender(i: usize) {
    let q = get_queuing_port_id("QBACK2").expect("QBACK2");
    let deadline = CLOSED_DEADLINE.load(Ordering::Acquire);
    let r = send_queuing_message(q, &[70 + i as u8; 8], (deadline - get_time()).max(1));
    CLOSED_BACK[i].store(get_time(), Ordering::Release);
    let code = match r {
        Ok(()) => 1,
        Err(ApexError::TimedOut) => 2,
        Err(_) => 3,
    };
    CLOSED_SENT[i].store(code, Ordering::Release);
    idle_forever();
}

extern "C" fn closed_s1() {
    closed_sender(0);
}

extern "C" fn closed_s2() {
    closed_sender(1);
}

/// A wait longer than CD's window (50 ms) and shorter than the closed window after it (250 ms):
/// the process runs again at the start of CD's next window.
const CLOSED_TO_NEXT_WINDOW: SystemTime = 60 * MS;

/// `closed-src`: for each new step on ASK (step, deadline), send (steps 1, 2, on QOUT) or write
/// (steps 3, 4, on SOUT) a message carrying its send time, or (steps 5, 6) receive one message
/// from QBACK and write the time on POPPED: steps 1, 3 and 5 30 ms after the deadline, steps 2,
/// 4 and 6 at once. CS runs only while CD's window is closed.
extern "C" fn closed_src() {
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let sout = get_sampling_port_id("SOUT").expect("SOUT");
    let qback = get_queuing_port_id("QBACK").expect("QBACK");
    let qback2 = get_queuing_port_id("QBACK2").expect("QBACK2");
    let popped = get_sampling_port_id("POPPED").expect("POPPED");
    let ask = get_sampling_port_id("ASK").expect("ASK");
    let mut buf = [0u8; 16];
    let mut last = 0u8;
    // Take one message off `q` (room for CD's waiting senders) and say when (`at`).
    let take = |q: QueuingPortId| {
        let mut m = [0u8; 8];
        receive_queuing_message(q, &mut m, 0).map(|_| get_time())
    };
    let tell = |step: u8, first: i64, second: i64| {
        let mut p = [0u8; 24];
        p[0] = step;
        p[8..16].copy_from_slice(&first.to_ne_bytes());
        p[16..].copy_from_slice(&second.to_ne_bytes());
        write_sampling_message(popped, &p)
    };
    let until = |t: i64| {
        while get_time() < t {
            let _ = timed_wait((t - get_time()).max(MS / 10));
        }
    };
    loop {
        if matches!(read_sampling_message(ask, &mut buf), Ok((16, _))) && buf[0] != last {
            last = buf[0];
            let deadline = i64::from_ne_bytes(buf[8..16].try_into().expect("8 bytes"));
            if last % 2 == 1 && last < 7 {
                until(deadline + 30 * MS);
            }
            let sent = get_time();
            let r = match last {
                1 | 2 => send_queuing_message(q, &sent.to_ne_bytes(), 1_000 * MS),
                3 | 4 => write_sampling_message(sout, &sent.to_ne_bytes()),
                // Make room for CD's waiting sender, and say when.
                5 | 6 => take(qback).and_then(|t| tell(last, t, 0)),
                // Room for the first of CD's two waiting senders at once, for the second 30 ms
                // after their deadline.
                _ => take(qback2).and_then(|a| {
                    until(deadline + 30 * MS);
                    take(qback2).and_then(|b| tell(last, a, b))
                }),
            };
            if let Err(e) = r {
                out(&format!("FAIL closed-src step {last}: send: {e:?}"));
            }
        }
        let _ = timed_wait(MS);
    }
}

/// `closed-dst`: at the start of its window, wait on QIN with a time-out whose deadline falls in
/// the closed window that follows (CD runs 0-50 ms of every 300), and have CS send during that
/// closed window: after the deadline (step 1), before it (step 2). ARINC 653 decides the
/// time-out at the deadline, whether the partition runs then or not: the message sent after it
/// is not the receiver's (TIMED_OUT; it stays queued), the one sent before it is.
extern "C" fn closed_dst() {
    use ApexError::*;
    let q = get_queuing_port_id("QIN").expect("QIN");
    let ask = get_sampling_port_id("ASK").expect("ASK");
    let mut buf = [0u8; 8];
    let sent_of = |b: &[u8; 8]| i64::from_ne_bytes(*b);
    // Each step starts at the start of CD's window: tell CS the step and the deadline.
    let begin = |n: u8, timeout: SystemTime| {
        let _ = timed_wait(CLOSED_TO_NEXT_WINDOW);
        let call = get_time();
        let deadline = call + timeout;
        let mut ask_msg = [0u8; 16];
        ask_msg[0] = n;
        ask_msg[8..].copy_from_slice(&deadline.to_ne_bytes());
        write_sampling_message(ask, &ask_msg).expect("ASK");
        (call, deadline)
    };
    let step = |n: u8, timeout: SystemTime, buf: &mut [u8; 8]| {
        let (call, deadline) = begin(n, timeout);
        let r = receive_queuing_message(q, buf, timeout);
        (call, deadline, r, get_time())
    };

    // Step 1: the deadline (120 ms after the call, in the closed window), then the message.
    let (call, deadline, r, back) = step(1, 120 * MS, &mut buf);
    let timed_out = r == Err(TimedOut);
    let first = buf;
    let later = receive_queuing_message(q, &mut buf, 0);
    let sent = if timed_out {
        sent_of(&buf)
    } else {
        sent_of(&first)
    };
    // The premise: the message was sent after the deadline, and the receiver did not run from
    // the deadline until then (its window was closed).
    expect(
        "step 1 premise: sent after the deadline, in the closed window",
        sent > deadline && back > sent,
        format!("call {call}, deadline {deadline}, sent {sent}, back {back} (ns)"),
    );
    expect_dbg(
        "a message sent after a receiver's deadline, in its closed window, is not its: \
         TIMED_OUT, and the next RECEIVE (TIME_OUT 0) takes it",
        timed_out && later == Ok(8),
        (r, later),
    );

    // Step 2: the message (at once, in the closed window), then the deadline (240 ms after the
    // call, before the window opens again at 300 ms).
    let (call, deadline, r, back) = step(2, 240 * MS, &mut buf);
    let sent = sent_of(&buf);
    expect(
        "step 2 premise: sent before the deadline, the receiver back only after it",
        sent < deadline && back > deadline,
        format!("call {call}, deadline {deadline}, sent {sent}, back {back} (ns)"),
    );
    expect_dbg(
        "a message sent before a receiver's deadline, in its closed window, is its though it \
         runs only after the deadline",
        r == Ok(8),
        r,
    );

    // Steps 3 and 4: the same for a sampling wait (`wait_sampling_message`, a partix extension):
    // it returns a message newer than the last one returned, written by its deadline.
    let sin = get_sampling_port_id("SIN").expect("SIN");
    let wait = |n: u8, timeout: SystemTime, buf: &mut [u8; 8]| {
        let (call, deadline) = begin(n, timeout);
        let r = wait_sampling_message(sin, timeout, buf).map(|(n, _)| n);
        (call, deadline, r, get_time())
    };
    // Step 3: the deadline, then the message.
    let (call, deadline, r, back) = wait(3, 120 * MS, &mut buf);
    let first = buf;
    let later = wait_sampling_message(sin, 0, &mut buf).map(|(n, _)| n);
    let sent = if r.is_ok() {
        sent_of(&first)
    } else {
        sent_of(&buf)
    };
    expect(
        "step 3 premise: written after the deadline, in the closed window",
        sent > deadline && back > sent,
        format!("call {call}, deadline {deadline}, sent {sent}, back {back} (ns)"),
    );
    expect_dbg(
        "a sampling message written after a waiting reader's deadline, in its closed window, \
         is not its: TIMED_OUT, and the next wait (TIME_OUT 0) returns it",
        r == Err(TimedOut) && later == Ok(8),
        (r, later),
    );
    let c = sampling_port_counters(sin).expect("counters");
    expect_dbg(
        "the wait counted the message it found written after its deadline",
        c.written_after_deadline == 1,
        c,
    );
    // Step 4: the message, then the deadline.
    let (call, deadline, r, back) = wait(4, 240 * MS, &mut buf);
    let sent = sent_of(&buf);
    expect(
        "step 4 premise: written before the deadline, the reader back only after it",
        sent < deadline && back > deadline,
        format!("call {call}, deadline {deadline}, sent {sent}, back {back} (ns)"),
    );
    expect_dbg(
        "a sampling message written before a waiting reader's deadline, in its closed window, \
         is its though it runs only after the deadline",
        r == Ok(8),
        r,
    );

    // Steps 5 and 6: the same for a waiting sender: QBACK (MaxNbMessages 1) is full, and CS
    // makes room during the closed window after the deadline (step 5), before it (step 6).
    let qback = get_queuing_port_id("QBACK").expect("QBACK");
    let popped = get_sampling_port_id("POPPED").expect("POPPED");
    send_queuing_message(qback, &[4; 8], 0).expect("QBACK: the fill");
    let made_at = |n: u8| {
        let mut p = [0u8; 24];
        match read_sampling_message(popped, &mut p) {
            Ok((24, _)) if p[0] == n => (
                i64::from_ne_bytes(p[8..16].try_into().expect("8 bytes")),
                i64::from_ne_bytes(p[16..].try_into().expect("8 bytes")),
            ),
            _ => (-1, -1),
        }
    };
    let send = |n: u8, timeout: SystemTime| {
        let (call, deadline) = begin(n, timeout);
        let r = send_queuing_message(qback, &[n; 8], timeout);
        let back = get_time();
        (call, deadline, r, back, made_at(n).0)
    };
    // Step 5: the deadline, then the room.
    let (call, deadline, r, back, made) = send(5, 120 * MS);
    let later = send_queuing_message(qback, &[55; 8], 0);
    expect(
        "step 5 premise: room made after the deadline, in the closed window",
        made > deadline && back > made,
        format!("call {call}, deadline {deadline}, room {made}, back {back} (ns)"),
    );
    expect_dbg(
        "room made after a waiting sender's deadline, in its closed window, is not its: \
         TIMED_OUT, and the next SEND (TIME_OUT 0) takes it",
        r == Err(TimedOut) && later == Ok(()),
        (r, later),
    );
    // Step 6: the room (at once), then the deadline. The port is full again (step 5's second
    // send).
    let (call, deadline, r, back, made) = send(6, 240 * MS);
    expect(
        "step 6 premise: room made before the deadline, the sender back only after it",
        made > 0 && made < deadline && back > deadline,
        format!("call {call}, deadline {deadline}, room {made}, back {back} (ns)"),
    );
    expect_dbg(
        "room made before a waiting sender's deadline, in its closed window, is its though it \
         runs only after the deadline",
        r == Ok(()),
        r,
    );

    // Step 7: two senders, s1 then s2, wait on QBACK2 (MaxNbMessages 2, full) until one
    // deadline; CS makes room for one before it (at once) and for another after it (30 ms
    // later), while CD's window is closed. The first room is s1's, the second is not s2's:
    // each is judged by the room that was its own.
    let qback2 = get_queuing_port_id("QBACK2").expect("QBACK2");
    for m in [72u8, 73] {
        send_queuing_message(qback2, &[m; 8], 0).expect("QBACK2: the fill");
    }
    let (s1, s2) = *CLOSED_SENDERS.get().expect("set at init");
    let _ = timed_wait(CLOSED_TO_NEXT_WINDOW);
    let deadline = get_time() + 120 * MS;
    CLOSED_DEADLINE.store(deadline, Ordering::Release);
    let waiting = |n: u32| get_queuing_port_status(qback2).map(|st| st.waiting_processes) == Ok(n);
    start(s1).expect("start s1");
    let lined = within_5s(|| waiting(1));
    start(s2).expect("start s2");
    let lined = lined && within_5s(|| waiting(2));
    let mut ask_msg = [0u8; 16];
    ask_msg[0] = 7;
    ask_msg[8..].copy_from_slice(&deadline.to_ne_bytes());
    write_sampling_message(ask, &ask_msg).expect("ASK");
    // Both return when CD's window opens again.
    let done = |i: usize| CLOSED_SENT[i].load(Ordering::Acquire) != 0;
    let t0 = get_time();
    while !(done(0) && done(1)) && get_time() - t0 < 5_000 * MS {
        let _ = timed_wait(MS);
    }
    let (a, b) = made_at(7);
    let back = |i: usize| CLOSED_BACK[i].load(Ordering::Acquire);
    expect(
        "step 7 premise: both senders in line, room made once before the deadline and once \
         after it, both back only after that",
        lined && a > 0 && a < deadline && b > deadline && back(0) > b && back(1) > b,
        format!(
            "lined {lined}, deadline {deadline}, rooms {a} and {b}, back {} and {} (ns)",
            back(0),
            back(1)
        ),
    );
    let code = |i: usize| CLOSED_SENT[i].load(Ordering::Acquire);
    let later = send_queuing_message(qback2, &[79; 8], 0);
    expect_dbg(
        "of two senders waiting through a closed window, the first takes the room made before \
         their deadline (NO_ERROR), the second times out on the room made after it, which the \
         next SEND (TIME_OUT 0) takes",
        code(0) == 1 && code(1) == 2 && later == Ok(()),
        (code(0), code(1), later),
    );
    out("END closed-dst");
    idle_forever();
}

// ---------------------------------------------------------------------------------------- codes

fn codes_init() {
    use ApexError::*;
    let d = 100 * MS;
    check(
        "create sampling unknown name",
        create_sampling_port("NOPE", 16, PortDirection::Source, d),
        Err(InvalidConfig),
    );
    check(
        "create sampling port of another partition",
        create_sampling_port("OTHER_PORT", 16, PortDirection::Source, d),
        Err(InvalidConfig),
    );
    check(
        "create sampling wrong size",
        create_sampling_port("S_SRC", 17, PortDirection::Source, d),
        Err(InvalidConfig),
    );
    check(
        "create sampling wrong direction",
        create_sampling_port("S_SRC", 16, PortDirection::Destination, d),
        Err(InvalidConfig),
    );
    check(
        "create sampling wrong period",
        create_sampling_port("S_SRC", 16, PortDirection::Source, 99 * MS),
        Err(InvalidConfig),
    );
    let s1 = create_sampling_port("S_SRC", 16, PortDirection::Source, d);
    check("create sampling source", s1, Ok(()));
    check(
        "create sampling twice",
        create_sampling_port("S_SRC", 16, PortDirection::Source, d),
        Err(NoAction),
    );
    let s2 = create_sampling_port("S_DST", 16, PortDirection::Destination, d);
    check("create sampling destination", s2, Ok(()));
    let (Ok(s1), Ok(s2)) = (s1, s2) else {
        return;
    };
    // codes.xml gives S_DST partix:ReceiveMode="spin-then-park:500", S_SRC none.
    let m = sampling_port_recv_mode(s2);
    expect_dbg(
        "sampling recv mode from the configuration",
        m == Ok(RecvMode::SpinThenPark { spins: 500 }),
        m,
    );
    let m = sampling_port_recv_mode(s1);
    expect_dbg("sampling recv mode default", m == Ok(DEFAULT_RECV_MODE), m);
    let bad = SamplingPortId(99);
    check(
        "write bad id",
        write_sampling_message(bad, b"x"),
        Err(InvalidParam),
    );
    check(
        "write empty",
        write_sampling_message(s1, b""),
        Err(InvalidParam),
    );
    check(
        "write too long",
        write_sampling_message(s1, &[0; 17]),
        Err(InvalidConfig),
    );
    check(
        "write on destination",
        write_sampling_message(s2, b"x"),
        Err(InvalidMode),
    );
    check("write", write_sampling_message(s1, b"hello"), Ok(()));
    let mut buf = [0u8; 16];
    check(
        "read bad id",
        read_sampling_message(bad, &mut buf),
        Err(InvalidParam),
    );
    check(
        "read on source",
        read_sampling_message(s1, &mut buf),
        Err(InvalidMode),
    );
    check(
        "read empty",
        read_sampling_message(s2, &mut buf),
        Err(NoAction),
    );
    let id = get_sampling_port_id("S_DST");
    expect("get sampling port id", id == Ok(s2), format!("{id:?}"));
    check(
        "get sampling port id unknown",
        get_sampling_port_id("NOPE"),
        Err(InvalidConfig),
    );
    let st = get_sampling_port_status(s1);
    expect(
        "sampling status",
        st == Ok(SamplingPortStatus {
            refresh_period: d,
            max_message_size: 16,
            port_direction: PortDirection::Source,
            last_msg_validity: Validity::Invalid,
        }),
        format!("{st:?}"),
    );
    check(
        "sampling status bad id",
        get_sampling_port_status(bad),
        Err(InvalidParam),
    );

    let fifo = QueuingDiscipline::Fifo;
    check(
        "create queuing unknown name",
        create_queuing_port("NOPE", 8, 4, PortDirection::Source, fifo),
        Err(InvalidConfig),
    );
    check(
        "create queuing wrong size",
        create_queuing_port("Q_SRC", 9, 4, PortDirection::Source, fifo),
        Err(InvalidConfig),
    );
    check(
        "create queuing wrong nb",
        create_queuing_port("Q_SRC", 8, 5, PortDirection::Source, fifo),
        Err(InvalidConfig),
    );
    check(
        "create queuing wrong direction",
        create_queuing_port("Q_SRC", 8, 4, PortDirection::Destination, fifo),
        Err(InvalidConfig),
    );
    let q1 = create_queuing_port("Q_SRC", 8, 4, PortDirection::Source, fifo);
    check("create queuing source", q1, Ok(()));
    check(
        "create queuing twice",
        create_queuing_port("Q_SRC", 8, 4, PortDirection::Source, fifo),
        Err(NoAction),
    );
    let q2 = create_queuing_port(
        "Q_DST",
        8,
        4,
        PortDirection::Destination,
        QueuingDiscipline::Priority,
    );
    check("create queuing destination", q2, Ok(()));
    let (Ok(q1), Ok(q2)) = (q1, q2) else {
        return;
    };
    // codes.xml gives Q_SRC partix:ReceiveMode="spin" (a sender waiting for room spins).
    let m = queuing_port_recv_mode(q1);
    expect_dbg(
        "queuing recv mode from the configuration",
        m == Ok(RecvMode::Spin),
        m,
    );
    let m = queuing_port_recv_mode(q2);
    expect_dbg("queuing recv mode default", m == Ok(DEFAULT_RECV_MODE), m);
    let qbad = QueuingPortId(99);
    check(
        "send bad id",
        send_queuing_message(qbad, b"x", 0),
        Err(InvalidParam),
    );
    check(
        "send bad timeout",
        send_queuing_message(q1, b"x", -5),
        Err(InvalidParam),
    );
    check(
        "send too long",
        send_queuing_message(q1, &[0; 9], 0),
        Err(InvalidConfig),
    );
    check(
        "send empty",
        send_queuing_message(q1, b"", 0),
        Err(InvalidParam),
    );
    check(
        "send on destination",
        send_queuing_message(q2, b"x", 0),
        Err(InvalidMode),
    );
    for i in 0..4u8 {
        check(
            &format!("send {i}"),
            send_queuing_message(q1, &[i; 8], 0),
            Ok(()),
        );
    }
    check(
        "send full, timeout 0",
        send_queuing_message(q1, b"x", 0),
        Err(NotAvailable),
    );
    check(
        "send full from initialisation, timeout 10 ms",
        send_queuing_message(q1, b"x", 10 * MS),
        Err(InvalidMode),
    );
    let st = get_queuing_port_status(q1);
    expect(
        "queuing status",
        st == Ok(QueuingPortStatus {
            nb_message: 4,
            max_nb_message: 4,
            max_message_size: 8,
            port_direction: PortDirection::Source,
            waiting_processes: 0,
        }),
        format!("{st:?}"),
    );
    check(
        "queuing status bad id",
        get_queuing_port_status(qbad),
        Err(InvalidParam),
    );
    check(
        "receive bad id",
        receive_queuing_message(qbad, &mut buf, 0),
        Err(InvalidParam),
    );
    check(
        "receive on source",
        receive_queuing_message(q1, &mut buf, 0),
        Err(InvalidMode),
    );
    check(
        "receive bad timeout",
        receive_queuing_message(q2, &mut buf, -7),
        Err(InvalidParam),
    );
    check(
        "receive empty, timeout 0",
        receive_queuing_message(q2, &mut buf, 0),
        Err(NotAvailable),
    );
    check(
        "receive empty from initialisation, timeout 10 ms",
        receive_queuing_message(q2, &mut buf, 10 * MS),
        Err(InvalidMode),
    );
    check("clear source", clear_queuing_port(q1), Err(InvalidMode));
    check("clear bad id", clear_queuing_port(qbad), Err(InvalidParam));
    check("clear destination", clear_queuing_port(q2), Ok(()));
    let id = get_queuing_port_id("Q_DST");
    expect("get queuing port id", id == Ok(q2), format!("{id:?}"));
    check(
        "get queuing port id unknown",
        get_queuing_port_id("NOPE"),
        Err(InvalidConfig),
    );
    check(
        "recv mode bad id",
        set_queuing_port_recv_mode(qbad, RecvMode::Blocking),
        Err(InvalidParam),
    );
}

extern "C" fn codes_process() {
    use ApexError::*;
    check(
        "create sampling in NORMAL",
        create_sampling_port("S_LATE", 8, PortDirection::Source, 100 * MS),
        Err(InvalidMode),
    );
    check(
        "create queuing in NORMAL",
        create_queuing_port(
            "Q_LATE",
            8,
            4,
            PortDirection::Destination,
            QueuingDiscipline::Fifo,
        ),
        Err(InvalidMode),
    );
    let q1 = get_queuing_port_id("Q_SRC").expect("Q_SRC");
    let q2 = get_queuing_port_id("Q_DST").expect("Q_DST");
    let mut buf = [0u8; 8];
    check(
        "send full, timeout 30 ms",
        send_queuing_message(q1, b"x", 30 * MS),
        Err(TimedOut),
    );
    check(
        "receive empty, timeout 30 ms",
        receive_queuing_message(q2, &mut buf, 30 * MS),
        Err(TimedOut),
    );
    set_queuing_port_recv_mode(q2, RecvMode::Blocking).expect("recv mode");
    check(
        "receive empty, blocking mode, timeout 20 ms",
        receive_queuing_message(q2, &mut buf, 20 * MS),
        Err(TimedOut),
    );
    lock_preemption().expect("lock");
    check(
        "send full with preemption locked",
        send_queuing_message(q1, b"x", 30 * MS),
        Err(InvalidMode),
    );
    check(
        "receive empty with preemption locked",
        receive_queuing_message(q2, &mut buf, 30 * MS),
        Err(InvalidMode),
    );
    unlock_preemption().expect("unlock");
    // The error handler may not wait either: with a time-out it answers INVALID_MODE, with
    // time-out 0 the same as any process (the queue Q_SRC is still full, Q_DST empty).
    check(
        "raise_application_error",
        raise_application_error(ErrorCode::ApplicationError, b"ports"),
        Ok(()),
    );
    let mut done = false;
    for _ in 0..5_000 {
        if CODES_EH_DONE.load(Ordering::Acquire) {
            done = true;
            break;
        }
        let _ = timed_wait(MS);
    }
    expect(
        "the error handler ran",
        done,
        "it did not finish within 5 s",
    );
    for (what, got, want) in CODES_EH.lock().unwrap().iter() {
        expect(
            &format!("{what} from the error handler"),
            got == want,
            format!("got {got:?}, want {want:?}"),
        );
    }
    out("END codes");
    idle_forever();
}

/// What the error handler of `codes` got: (call, result, expected result).
type EhCodes = Vec<(&'static str, Result<(), ApexError>, Result<(), ApexError>)>;
static CODES_EH: std::sync::Mutex<EhCodes> = std::sync::Mutex::new(Vec::new());
static CODES_EH_DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The error handler of `codes` (raised by `codes_process`): the port waits it may not make.
extern "C" fn codes_error_handler() {
    use ApexError::*;
    let _ = get_error_status();
    let q1 = get_queuing_port_id("Q_SRC").expect("Q_SRC");
    let q2 = get_queuing_port_id("Q_DST").expect("Q_DST");
    let mut buf = [0u8; 8];
    let codes: EhCodes = vec![
        (
            "send full, timeout 10 ms",
            send_queuing_message(q1, b"x", 10 * MS),
            Err(InvalidMode),
        ),
        (
            "send full, infinite timeout",
            send_queuing_message(q1, b"x", INFINITE_TIME_VALUE),
            Err(InvalidMode),
        ),
        (
            "send full, timeout 0",
            send_queuing_message(q1, b"x", 0),
            Err(NotAvailable),
        ),
        (
            "receive empty, timeout 10 ms",
            receive_queuing_message(q2, &mut buf, 10 * MS).map(|_| ()),
            Err(InvalidMode),
        ),
        (
            "receive empty, infinite timeout",
            receive_queuing_message(q2, &mut buf, INFINITE_TIME_VALUE).map(|_| ()),
            Err(InvalidMode),
        ),
        (
            "receive empty, timeout 0",
            receive_queuing_message(q2, &mut buf, 0).map(|_| ()),
            Err(NotAvailable),
        ),
    ];
    *CODES_EH.lock().unwrap() = codes;
    CODES_EH_DONE.store(true, Ordering::Release);
}

// ------------------------------------------------------------------------------------- sampling

extern "C" fn sampling_src_process() {
    let id = get_sampling_port_id("OUT").expect("OUT");
    for k in 0..20 {
        write_sampling_message(id, format!("tick {k}").as_bytes()).expect("write");
        let _ = periodic_wait();
    }
    write_sampling_message(id, b"final").expect("write final");
    check_regions_refuse_resizing();
    out("END sampling-src");
    idle_forever();
}

/// The CPUs the calling thread may run on.
fn own_cpus() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is the empty set; sched_getaffinity only writes it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid out-parameter of its size.
    unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    // SAFETY: CPU_ISSET reads the set within its size.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Ask for `cpus` (sched_setaffinity of the calling thread); return 0 or the errno.
fn ask_cpus(cpus: impl IntoIterator<Item = usize>) -> i32 {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for c in cpus {
        // SAFETY: c is below CPU_SETSIZE (an online CPU number).
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: set is a valid cpu_set_t of its size.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } == 0 {
        0
    } else {
        errno()
    }
}

/// Role `affinity`.
extern "C" fn affinity_process() {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    let own = own_cpus();
    let rc = ask_cpus(0..n);
    out(&format!("INFO widened {:?} rc {rc}", own_cpus()));
    for c in 0..n {
        let rc = ask_cpus([c]);
        out(&format!("INFO alone {c} {rc}"));
    }
    let _ = ask_cpus(own);
    out("END affinity");
    idle_forever();
}

/// The user and group role `creds` expects to run as.
static CREDS: OnceLock<(u32, u32)> = OnceLock::new();

/// Role `creds`: a partition under its own user has lost what would let it harm the executive
/// or other partitions, and still has what the runtime and its ports need.
extern "C" fn creds_process() {
    let (uid, gid) = *CREDS.get().expect("set at init");
    let (mut r, mut e, mut sv) = (0, 0, 0);
    // SAFETY: getresuid/getresgid only write the three out-parameters.
    unsafe { libc::getresuid(&mut r, &mut e, &mut sv) };
    expect_dbg(
        "runs as its user",
        (r, e, sv) == (uid, uid, uid),
        (r, e, sv),
    );
    // SAFETY: as above.
    unsafe { libc::getresgid(&mut r, &mut e, &mut sv) };
    expect_dbg(
        "runs as its group",
        (r, e, sv) == (gid, gid, gid),
        (r, e, sv),
    );
    // SAFETY: getgroups with size 0 only counts.
    let groups = unsafe { libc::getgroups(0, std::ptr::null_mut()) };
    expect_dbg("has no supplementary groups", groups == 0, groups);
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let cap_eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .map(str::trim)
        .unwrap_or("?")
        .to_owned();
    let caps = u64::from_str_radix(&cap_eff, 16);
    // SAFETY: PR_GET_NO_NEW_PRIVS takes no pointer.
    let nnp = unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) };
    expect_dbg("has NO_NEW_PRIVS", nnp == 1, nnp);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes lim.
    unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut lim) };
    // SAFETY: sched_getscheduler of the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    let fifo = |why: &str| {
        expect_dbg(
            "its APEX process runs SCHED_FIFO without root",
            policy == libc::SCHED_FIFO,
            (policy, why),
        )
    };
    if lim.rlim_max == 98 {
        fifo("RLIMIT_RTPRIO 98");
        // The executive could give it RLIMIT_RTPRIO 98: no capability at all.
        expect_dbg("RLIMIT_RTPRIO is 98", lim.rlim_cur == 98, lim.rlim_cur);
        expect_dbg("has no capabilities", caps == Ok(0), &cap_eff);
        let p99 = libc::sched_param { sched_priority: 99 };
        // SAFETY: a refused change changes nothing; a granted one is reported as a failure
        // (and the partition would then run at the executive's priority until it ends).
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p99) };
        expect_dbg(
            "cannot take SCHED_FIFO 99 (the executive's)",
            rc != 0 && errno() == libc::EPERM,
            (rc, errno()),
        );
    } else if caps != Ok(0) {
        // It could not (no CAP_SYS_RESOURCE): CAP_SYS_NICE only, for SCHED_FIFO.
        fifo("CAP_SYS_NICE");
        expect_dbg(
            "keeps CAP_SYS_NICE and no other capability",
            caps == Ok(1 << 23),
            (&cap_eff, lim.rlim_cur, lim.rlim_max),
        );
    } else {
        // Neither (the executive had no CAP_SYS_NICE either): SCHED_OTHER.
        expect_dbg("has no capabilities", caps == Ok(0), &cap_eff);
        out(&format!(
            "INFO neither RLIMIT_RTPRIO 98 nor CAP_SYS_NICE: policy {policy}"
        ));
    }
    // SAFETY: getppid has no preconditions; signal 0 only checks permission.
    let executive = unsafe { libc::getppid() };
    // SAFETY: signal 0 sends nothing.
    let rc = unsafe { libc::kill(executive, 0) };
    expect_dbg(
        "cannot signal the executive",
        rc != 0 && errno() == libc::EPERM,
        (executive, rc, errno()),
    );
    let fds = std::fs::read_dir(format!("/proc/{executive}/fd")).map(|_| ());
    expect_dbg(
        "cannot list the executive's descriptors",
        fds.as_ref().err().and_then(std::io::Error::raw_os_error) == Some(libc::EACCES),
        &fds,
    );
    match region_fds() {
        Ok(fds) => {
            let ro: Vec<i32> = fds
                .iter()
                .filter(|(_, a)| *a == partix_shm::Access::ReadOnly)
                .map(|(fd, _)| *fd)
                .collect();
            // (descriptor, the open's result, errno) of each that did not fail with EACCES.
            let reopened: Vec<(i32, i32, i32)> = ro
                .iter()
                .filter_map(|&fd| {
                    let path = std::ffi::CString::new(format!("/proc/self/fd/{fd}")).unwrap();
                    // SAFETY: path is a valid C string; a descriptor opened is closed at once.
                    let r = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
                    let e = errno();
                    if r >= 0 {
                        // SAFETY: r was just opened here.
                        unsafe { libc::close(r) };
                    }
                    (r >= 0 || e != libc::EACCES).then_some((fd, r, e))
                })
                .collect();
            expect(
                "no read-only region re-opens read-write through /proc/self/fd",
                !ro.is_empty() && reopened.is_empty(),
                format!(
                    "read-only {ro:?}; (fd, open, errno) not refused with EACCES: {reopened:?}"
                ),
            );
        }
        Err(e) => expect("read-only regions found", false, e),
    }
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    match cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .filter(|p| p.contains("partix-"))
    {
        Some(p) => {
            // The unified hierarchy's mount point (/sys/fs/cgroup, or
            // /sys/fs/cgroup/unified on a hybrid host).
            let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
            let root = mounts
                .lines()
                .find(|l| {
                    l.split(" - ")
                        .nth(1)
                        .is_some_and(|t| t.starts_with("cgroup2 "))
                })
                .and_then(|l| l.split_whitespace().nth(4))
                .unwrap_or("/sys/fs/cgroup");
            let freeze = format!("{root}{p}/cgroup.freeze");
            let w = std::fs::OpenOptions::new().write(true).open(&freeze);
            expect_dbg(
                "cannot write its cgroup.freeze",
                w.as_ref().err().and_then(std::io::Error::raw_os_error) == Some(libc::EACCES),
                (&freeze, &w),
            );
        }
        None => out(&format!(
            "INFO no partix cgroup v2 to check: {:?}",
            cgroup.trim()
        )),
    }
    // Its program and configuration are in a directory only root may enter: it was run
    // through a descriptor, and reads its configuration through one.
    let path = partix_runtime::partition::hm::configuration_path()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let by_path = std::fs::read(&path).map(|_| ());
    expect_dbg(
        "cannot open its configuration by path (a private directory)",
        by_path
            .as_ref()
            .err()
            .and_then(std::io::Error::raw_os_error)
            == Some(libc::EACCES),
        (&path, &by_path),
    );
    let name = partix_runtime::partition::hm::configuration().map(|m| m.name.as_str());
    expect_dbg(
        "reads its configuration through the executive's descriptor",
        name == Some("ports-users"),
        name,
    );
    let id = get_sampling_port_id("IN").expect("IN");
    let mut buf = [0u8; 32];
    let t0 = get_time();
    let mut got = None;
    while got.is_none() && get_time() - t0 < 10_000 * MS {
        match read_sampling_message(id, &mut buf) {
            Ok((n, Validity::Valid)) => got = Some(buf[..n].to_vec()),
            _ => {
                let _ = timed_wait(10 * MS);
            }
        }
    }
    expect_dbg(
        "reads a valid message from another user's partition",
        got.is_some(),
        &got,
    );
    out("END creds");
    idle_forever();
}

/// The capability sets (`CapEff`, `CapPrm`, `CapBnd`) of `/proc/self/status`.
fn own_capability_sets() -> Vec<(String, Option<u64>)> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    ["CapEff:", "CapPrm:", "CapBnd:"]
        .iter()
        .map(|k| {
            let v = status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok());
            (k.trim_end_matches(':').to_owned(), v)
        })
        .collect()
}

/// The other processes whose parent is `parent` (its other partitions, for the executive).
fn children_of(parent: i32) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|st| {
                    let rest = &st[st.rfind(')')? + 2..];
                    rest.split_whitespace().nth(1)?.parse::<i32>().ok()
                })
                == Some(parent)
        })
        .collect()
}

/// What opening a `/proc` path read-write and read-only gave.
#[derive(Debug, PartialEq)]
enum ProcOpen {
    /// Both refused with `EACCES` or `EPERM`.
    Refused,
    /// Not there (`ENOENT`: a descriptor closed since it was listed is no way in).
    Missing,
    /// Anything else: the opens that succeeded, or the other errors.
    Reached(String),
}

/// Try to open `path` read-write and read-only.
fn open_proc(path: &str) -> ProcOpen {
    let c = std::ffi::CString::new(path).unwrap();
    let mut got = Vec::new();
    let mut missing = 0;
    for (flags, name) in [(libc::O_RDWR, "O_RDWR"), (libc::O_RDONLY, "O_RDONLY")] {
        // SAFETY: c is a valid C string; a descriptor opened is closed at once.
        let r = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
        let e = errno();
        if r >= 0 {
            // SAFETY: r was just opened here.
            unsafe { libc::close(r) };
            got.push(format!("{name} opened"));
        } else if e == libc::ENOENT {
            missing += 1;
        } else if e != libc::EACCES && e != libc::EPERM {
            got.push(format!("{name}: {}", std::io::Error::from_raw_os_error(e)));
        }
    }
    if !got.is_empty() {
        ProcOpen::Reached(format!("{path}: {}", got.join(", ")))
    } else if missing == 2 {
        ProcOpen::Missing
    } else {
        ProcOpen::Refused
    }
}

/// Try every descriptor of process `pid` through `/proc/PID/fd` (`known`: numbers it has for
/// sure, tried whether or not the directory can be listed, and which must be refused) and its
/// `/proc/PID/mem`. Return the descriptors refused and what was not refused.
fn reach_through_proc(pid: i32, known: &[i32]) -> (Vec<i32>, Vec<String>) {
    let mut fds: Vec<i32> = match std::fs::read_dir(format!("/proc/{pid}/fd")) {
        Ok(d) => d
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect(),
        Err(e) => {
            out(&format!("INFO /proc/{pid}/fd cannot be listed: {e}"));
            Vec::new()
        }
    };
    for k in known {
        if !fds.contains(k) {
            fds.push(*k);
        }
    }
    fds.sort_unstable();
    let mut refused = Vec::new();
    let mut reached = Vec::new();
    for fd in fds {
        match open_proc(&format!("/proc/{pid}/fd/{fd}")) {
            ProcOpen::Refused => refused.push(fd),
            ProcOpen::Missing if known.contains(&fd) => {
                reached.push(format!("/proc/{pid}/fd/{fd}: ENOENT, not EACCES"));
            }
            ProcOpen::Missing => {}
            ProcOpen::Reached(what) => reached.push(what),
        }
    }
    match open_proc(&format!("/proc/{pid}/mem")) {
        ProcOpen::Refused => {}
        ProcOpen::Missing => reached.push(format!("/proc/{pid}/mem: ENOENT")),
        ProcOpen::Reached(what) => reached.push(what),
    }
    (refused, reached)
}

/// Role `probe`: a partition without `partix:User`, so root like the executive, cannot open the
/// executive's or the other partitions' descriptors (their channel regions read-write, a channel
/// it is not on) through `/proc/PID/fd`, nor their memory through `/proc/PID/mem`; and it still
/// runs `SCHED_FIFO` and reads its own port.
extern "C" fn probe_process() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    expect_dbg("runs as root (no partix:User)", euid == 0, euid);
    let sets = own_capability_sets();
    let ptrace = 1u64 << 19;
    expect_dbg(
        "has no CAP_SYS_PTRACE (effective, permitted, bounding)",
        sets.iter().all(|(_, v)| v.is_some_and(|v| v & ptrace == 0)),
        &sets,
    );
    out(&format!("INFO capability sets {sets:x?}"));
    // SAFETY: sched_getscheduler of the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    expect_dbg(
        "its APEX process runs SCHED_FIFO",
        policy == libc::SCHED_FIFO,
        policy,
    );
    // SAFETY: PR_GET_DUMPABLE takes no pointer.
    let dumpable = unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) };
    expect_dbg("is not dumpable", dumpable == 0, dumpable);
    // SAFETY: getppid has no preconditions.
    let executive = unsafe { libc::getppid() };
    let (fds, reached) = reach_through_proc(executive, &[]);
    out(&format!(
        "INFO the executive's descriptors refused: {}",
        fds.len()
    ));
    expect(
        "cannot open the executive's descriptors or memory through /proc",
        !fds.is_empty() && reached.is_empty(),
        format!("{} descriptors; not refused: {reached:#?}", fds.len()),
    );
    let peers = children_of(executive);
    expect_dbg("finds its three peer partitions", peers.len() == 3, &peers);
    for peer in peers {
        // The module, its own region, and its first port's (OUT or IN; Q's QIN, on the channel
        // PROBE is not on; SRC has QOUT at 601).
        let (fds, reached) = reach_through_proc(peer, &[500, 501, 600]);
        expect(
            "cannot open a peer partition's descriptors or memory through /proc",
            reached.is_empty(),
            format!("peer {peer}, {fds:?}; not refused: {reached:#?}"),
        );
    }
    let id = get_sampling_port_id("IN").expect("IN");
    let mut buf = [0u8; 32];
    let t0 = get_time();
    let mut got = None;
    while got.is_none() && get_time() - t0 < 10_000 * MS {
        match read_sampling_message(id, &mut buf) {
            Ok((n, Validity::Valid)) => got = Some(buf[..n].to_vec()),
            _ => {
                let _ = timed_wait(10 * MS);
            }
        }
    }
    expect_dbg("reads a valid message on its own port", got.is_some(), &got);
    out("END probe");
    idle_forever();
}

/// Return the `/proc/self/maps` lines of this process's channel mappings.
fn channel_maps() -> Vec<String> {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("partix-ch"))
        .map(str::to_owned)
        .collect()
}

/// Return the address range of a `/proc/self/maps` line.
fn maps_range(line: &str) -> Option<(usize, usize)> {
    let (a, b) = line.split_whitespace().next()?.split_once('-')?;
    Some((
        usize::from_str_radix(a, 16).ok()?,
        usize::from_str_radix(b, 16).ok()?,
    ))
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Return the descriptors of this partition's shared-memory regions and how the executive
/// granted each: the module region (read-only), the partition's own region (read-write), and the
/// regions of every shared-memory port (as listed in `PARTIX_PORT_FDS`, which must have been
/// there: the runtime took it out of the environment, `inherited_ports_value`).
fn region_fds() -> Result<Vec<(i32, partix_shm::Access)>, String> {
    use partix_runtime::channels::{decode_ports, inherited_ports_value, ENV_PORT_FDS};
    use partix_runtime::executive::os::{MODULE_FD_NUM, PARTITION_FD_NUM};
    let mut fds = vec![
        (MODULE_FD_NUM, partix_shm::Access::ReadOnly),
        (PARTITION_FD_NUM, partix_shm::Access::ReadWrite),
    ];
    let v = inherited_ports_value().ok_or_else(|| format!("no {ENV_PORT_FDS}"))?;
    for p in decode_ports(v)? {
        if p.transport.socket_kind().is_none() {
            fds.extend(p.fds);
        }
    }
    Ok(fds)
}

/// Check that no region descriptor this partition holds, read-only or read-write, can be
/// resized (a shrink would make the other partitions' accesses past the new end die of
/// SIGBUS): growing it by a page and shrinking it by a byte fail with EPERM (the size seals), or
/// with EINVAL / EBADF on a read-only descriptor. (If one can be resized, its size is put back.)
fn check_regions_refuse_resizing() {
    let fds = match region_fds() {
        Ok(fds) => fds,
        Err(e) => return expect("no region descriptor can be resized", false, e),
    };
    let mut bad = Vec::new();
    for &(fd, _) in &fds {
        // SAFETY: an all-zero stat is a valid out-parameter.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat only writes into st; a bad fd yields EBADF.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            bad.push(format!("fd {fd}: fstat: errno {}", errno()));
            continue;
        }
        // SAFETY: F_GETFL on a descriptor takes no argument.
        let read_only =
            unsafe { libc::fcntl(fd, libc::F_GETFL) } & libc::O_ACCMODE == libc::O_RDONLY;
        for len in [st.st_size + 4096, st.st_size - 1] {
            // SAFETY: ftruncate of a descriptor of this process; if it succeeds, the size is
            // put back at once.
            if unsafe { libc::ftruncate(fd, len) } == 0 {
                bad.push(format!("fd {fd}: resized from {} to {len}", st.st_size));
                // SAFETY: as above.
                unsafe { libc::ftruncate(fd, st.st_size) };
                continue;
            }
            let e = errno();
            if !(e == libc::EPERM || (read_only && (e == libc::EINVAL || e == libc::EBADF))) {
                bad.push(format!("fd {fd}: resize to {len}: errno {e}"));
            }
        }
    }
    expect(
        "no region descriptor can be resized",
        bad.is_empty(),
        format!("{fds:?}: {bad:?}"),
    );
}

/// Check that the read-only mapping `line` (of `/proc/self/maps`) cannot be made writable with
/// `mprotect` (EACCES), and that no region descriptor granted read-only can be mapped shared and
/// writable (EACCES). (A mapping that could be made writable is put back to read-only.)
fn check_read_only_stays_read_only(what: &str, line: Option<&String>) {
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    let protect = match line.and_then(|l| maps_range(l)) {
        None => Err(format!("no mapping in {line:?}")),
        Some((start, end)) => {
            // SAFETY: exactly one of this process's own read-only mappings; if the call succeeds
            // the protection is put back at once and nothing stores meanwhile.
            if unsafe { libc::mprotect(start as *mut libc::c_void, end - start, rw) } == 0 {
                // SAFETY: as above.
                unsafe { libc::mprotect(start as *mut libc::c_void, end - start, libc::PROT_READ) };
                Err("mprotect to PROT_READ|PROT_WRITE succeeded".to_owned())
            } else {
                match errno() {
                    libc::EACCES => Ok(()),
                    e => Err(format!("mprotect: errno {e}")),
                }
            }
        }
    };
    expect(
        &format!("{what}: mprotect of the read-only mapping to writable fails with EACCES"),
        protect.is_ok(),
        format!("{protect:?}"),
    );
    // The module region is read-only as well, but only the ports' descriptors count here.
    let ro: Vec<i32> = region_fds()
        .unwrap_or_default()
        .into_iter()
        .skip(2)
        .filter(|&(_, a)| a == partix_shm::Access::ReadOnly)
        .map(|(fd, _)| fd)
        .collect();
    let mut bad = Vec::new();
    for &fd in &ro {
        // SAFETY: a new mapping request of one page of an open descriptor; a mapping made is
        // unmapped at once.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), 4096, rw, libc::MAP_SHARED, fd, 0) };
        if p != libc::MAP_FAILED {
            bad.push(format!("fd {fd}: mapped writable"));
            // SAFETY: p is the page just mapped, used by nothing.
            unsafe { libc::munmap(p, 4096) };
        } else {
            let e = errno();
            if e != libc::EACCES {
                bad.push(format!("fd {fd}: mmap: errno {e}"));
            }
        }
    }
    expect(
        &format!("{what}: a writable shared mapping of a read-only descriptor fails with EACCES"),
        !ro.is_empty() && bad.is_empty(),
        format!("{ro:?}: {bad:?}"),
    );
}

/// Fork a child that stores into `addr`; return whether it died of SIGSEGV.
fn store_faults(addr: usize) -> bool {
    // SAFETY: the child only does one volatile store and _exit (async-signal-safe); the parent
    // waits for it.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            std::ptr::write_volatile(addr as *mut u8, 1);
            libc::_exit(0);
        }
        let mut st = 0;
        libc::waitpid(pid, &mut st, 0);
        libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGSEGV
    }
}

extern "C" fn sampling_dst_process() {
    let id = get_sampling_port_id("IN").expect("IN");
    let mut buf = [0u8; 32];
    let refresh = get_sampling_port_status(id).expect("status").refresh_period;
    let t0 = get_time();
    let mut last_tick: i64 = -2;
    let mut seen = 0u32;
    let mut order_ok = true;
    let mut got_final = false;
    while get_time() - t0 < 20_000 * MS {
        match read_sampling_message(id, &mut buf) {
            Ok((n, _)) => {
                seen += 1;
                let s = String::from_utf8_lossy(&buf[..n]).into_owned();
                let k = if s == "first" {
                    -1
                } else if s == "final" {
                    got_final = true;
                    break;
                } else if let Some(k) = s.strip_prefix("tick ").and_then(|k| k.parse().ok()) {
                    k
                } else {
                    out(&format!("FAIL unexpected message {s:?}"));
                    order_ok = false;
                    -3
                };
                if k < last_tick {
                    order_ok = false;
                }
                last_tick = k;
            }
            Err(ApexError::NoAction) => {}
            Err(e) => {
                out(&format!("FAIL read: {e:?}"));
                break;
            }
        }
        let _ = timed_wait(MS);
    }
    expect(
        "sampling got final",
        got_final,
        format!("after {seen} reads"),
    );
    expect(
        "sampling order (latest wins, never older)",
        order_ok,
        "went back",
    );
    let a = read_sampling_message(id, &mut buf);
    let again = a.map(|(n, v)| (buf[..n].to_vec(), v));
    expect(
        "sampling read does not consume, VALID while fresh",
        again == Ok((b"final".to_vec(), Validity::Valid)),
        format!("{again:?}"),
    );
    let _ = timed_wait(refresh + 100 * MS);
    let b = read_sampling_message(id, &mut buf).map(|(n, v)| (buf[..n].to_vec(), v));
    expect(
        "sampling INVALID after the refresh period",
        b == Ok((b"final".to_vec(), Validity::Invalid)),
        format!("{b:?}"),
    );
    let st = get_sampling_port_status(id).map(|s| s.last_msg_validity);
    expect(
        "sampling status LAST_MSG_VALIDITY",
        st == Ok(Validity::Invalid),
        format!("{st:?}"),
    );
    // The wake-up notifier of a blocked reader is a separate region ("-wake"): it holds no data.
    let maps: Vec<String> = channel_maps()
        .into_iter()
        .filter(|l| !l.contains("-wake"))
        .collect();
    expect(
        "destination maps its slot read-only and nothing writable",
        !maps.is_empty()
            && maps
                .iter()
                .all(|l| l.split_whitespace().nth(1) == Some("r--s")),
        format!("{maps:?}"),
    );
    if let Some(addr) = maps
        .first()
        .and_then(|l| l.split('-').next())
        .and_then(|a| usize::from_str_radix(a, 16).ok())
    {
        expect(
            "a store into the slot faults",
            store_faults(addr + 64),
            "no SIGSEGV",
        );
    }
    check_read_only_stays_read_only("sampling slot", maps.first());
    check_regions_refuse_resizing();
    out("END sampling-dst");
    idle_forever();
}

// -------------------------------------------------------------------------------------- queuing

fn queue_message(i: u64) -> Vec<u8> {
    let len = 8 + (i % 25) as usize;
    let mut m = i.to_le_bytes().to_vec();
    m.extend((8..len).map(|j| (i as usize + j) as u8));
    m
}

extern "C" fn queue_src_process() {
    let id = get_queuing_port_id("QOUT").expect("QOUT");
    let n = *N.get().expect("N");
    for i in 0..n {
        if let Err(e) = send_queuing_message(id, &queue_message(i), INFINITE_TIME_VALUE) {
            out(&format!("FAIL send {i}: {e:?}"));
            break;
        }
    }
    check_regions_refuse_resizing();
    out(&format!("END queue-src {n}"));
    idle_forever();
}

extern "C" fn queue_dst_process() {
    let id = get_queuing_port_id("QIN").expect("QIN");
    let n = *N.get().expect("N");
    let mut buf = [0u8; 32];
    let mut bad = 0u64;
    for i in 0..n {
        match receive_queuing_message(id, &mut buf, 30_000 * MS) {
            Ok(len) => {
                if buf[..len] != queue_message(i)[..] {
                    bad += 1;
                    if bad < 5 {
                        out(&format!("FAIL message {i}: {:?}", &buf[..len]));
                    }
                }
            }
            Err(e) => {
                out(&format!("FAIL receive {i}: {e:?}"));
                return;
            }
        }
    }
    expect(
        &format!("queue {n} messages in order, none lost or duplicated"),
        bad == 0,
        format!("{bad} bad"),
    );
    let extra = receive_queuing_message(id, &mut buf, 50 * MS);
    expect(
        "queue no extra message",
        extra == Err(ApexError::TimedOut),
        format!("{extra:?}"),
    );
    // The queued data is mapped read-only here (only the control region, "-ctl", is writable).
    let maps = channel_maps();
    let data: Vec<&String> = maps.iter().filter(|l| !l.contains("-ctl")).collect();
    expect(
        "queue destination maps the queued data read-only",
        !data.is_empty()
            && data
                .iter()
                .all(|l| l.split_whitespace().nth(1) == Some("r--s")),
        format!("{maps:?}"),
    );
    if let Some(addr) = data
        .first()
        .and_then(|l| l.split('-').next())
        .and_then(|a| usize::from_str_radix(a, 16).ok())
    {
        expect(
            "a store into the queued data faults",
            store_faults(addr + 256),
            "no SIGSEGV",
        );
    }
    check_read_only_stays_read_only("queued data", data.first().copied());
    check_regions_refuse_resizing();
    out(&format!("END queue-dst {n}"));
    idle_forever();
}

// ----------------------------------------------------------------------------------------- kill

const BIG: usize = 65536;
/// The byte the killer forges half a payload with: no message of the writers holds it.
const FORGED: u8 = 0xEE;
/// Header of a BIG message: its number (u64) and its length (u32); trailer: its checksum (u64).
const BIG_HEAD: usize = 12;

/// The fill byte of BIG message `k`: `k as u8`, but never [`FORGED`].
fn big_tag(k: u64) -> u8 {
    match k as u8 {
        FORGED => FORGED + 1,
        t => t,
    }
}

/// The checksum of a BIG message: the sum of its bytes before the trailer, each weighted by its
/// position + 1 (wrapping): a byte moved, lost or changed changes it.
fn big_checksum(body: &[u8]) -> u64 {
    body.iter().enumerate().fold(0u64, |s, (i, &b)| {
        s.wrapping_add(u64::from(b).wrapping_mul(i as u64 + 1))
    })
}

/// Build BIG message `k` into `msg` (at least BIG bytes); return its length, BIG - k % 1000.
/// The checksum of its run of fill bytes is computed in closed form, so that a writer writes
/// back to back even in a debug build ([`check_big`] sums the bytes one by one).
fn build_big(k: u64, msg: &mut [u8]) -> usize {
    let len = BIG - (k as usize % 1000);
    msg[..8].copy_from_slice(&k.to_le_bytes());
    msg[8..BIG_HEAD].copy_from_slice(&(len as u32).to_le_bytes());
    let tag = big_tag(k);
    msg[BIG_HEAD..len - 8].fill(tag);
    // Positions BIG_HEAD..len - 8 weigh BIG_HEAD + 1 ..= len - 8.
    let sum_to = |n: u64| n * (n + 1) / 2;
    let run = sum_to((len - 8) as u64) - sum_to(BIG_HEAD as u64);
    let check = big_checksum(&msg[..BIG_HEAD]).wrapping_add(u64::from(tag).wrapping_mul(run));
    msg[len - 8..len].copy_from_slice(&check.to_le_bytes());
    len
}

/// Check a BIG message read: its length is the one its header says and its number gives, every
/// fill byte is its tag, and its checksum agrees; return (number, length).
fn check_big(b: &[u8]) -> Result<(u64, usize), String> {
    let n = b.len();
    if n < BIG_HEAD + 8 {
        return Err(format!("{n} bytes: shorter than any message"));
    }
    let k = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
    let len = u32::from_le_bytes(b[8..BIG_HEAD].try_into().expect("4 bytes")) as usize;
    if len != n || len != BIG - (k as usize % 1000) {
        return Err(format!("message {k}: {n} bytes, its header says {len}"));
    }
    let tag = big_tag(k);
    if let Some(at) = b[BIG_HEAD..n - 8].iter().position(|&x| x != tag) {
        return Err(format!(
            "message {k}: byte {} is {:#x}, not its tag {tag:#x}",
            BIG_HEAD + at,
            b[BIG_HEAD + at]
        ));
    }
    let check = u64::from_le_bytes(b[n - 8..].try_into().expect("8 bytes"));
    if check != big_checksum(&b[..n - 8]) {
        return Err(format!("message {k}: checksum differs"));
    }
    Ok((k, len))
}

/// Write BIG messages 1, 2, ... on port BIG forever ([`build_big`]), waiting `pause` ns after
/// each (0: none).
fn write_big_messages(pause: SystemTime) -> ! {
    let id = get_sampling_port_id("BIG").expect("BIG");
    let mut msg = vec![0u8; BIG];
    let mut k: u64 = 0;
    loop {
        k += 1;
        let len = build_big(k, &mut msg);
        let _ = write_sampling_message(id, &msg[..len]);
        if pause > 0 {
            let _ = timed_wait(pause);
        }
    }
}

extern "C" fn kill_writer() {
    // A pause between writes, as a periodic writer has; the killer leaves the slot mid-write
    // itself before the partition dies.
    write_big_messages(MS / 2)
}

extern "C" fn killer() {
    let _ = timed_wait(300 * MS);
    out("END kill-src (killing)");
    // Make the death land mid-write for sure, after a message no reader has read: write one
    // more complete message straight into the slot (on our own read-write mapping, outside the
    // port: the writer, preempted by this process, may hold the port), then start a write the
    // way the writer does (a new `begin` flag, then part of the payload) and die before the
    // `end` flag. A destination that read before then holds an older message than the slot's
    // newest: each of its later reads tries the slot, finds it mid-write, and answers with its
    // last good copy (the fallback path, not the poll that finds the message it holds).
    if let Ok(ports) = partix_runtime::channels::map_inherited() {
        if let Some(p) = ports.into_iter().find(|p| p.desc.name == "BIG") {
            let mut msg = vec![0u8; BIG];
            let len = build_big(1 << 40, &mut msg);
            if let Ok(mut w) = partix_shm::sampling::SamplingWriter::attach(p.regions[0].clone(), 0)
            {
                let _ = w.write_stamped(&msg[..len], partix_shm::clock::now_ns());
            }
            let base = p.regions[0].as_ptr();
            let layout = partix_shm::sampling::SamplingLayout::new(BIG as u32).expect("layout");
            assert!(p.regions[0].len() >= layout.size_bytes());
            // SAFETY: `begin` and the payload lie inside the slot at the start of the region
            // (checked above), which is mapped read-write here; `begin` is 8-byte aligned.
            unsafe {
                let begin = base.add(layout.begin_offset()).cast::<u64>();
                std::ptr::write_volatile(begin, (0xdead_u64 << 32) | BIG as u64);
                std::ptr::write_bytes(base.add(layout.payload_offset()), FORGED, BIG / 2);
            }
        }
    }
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
}

/// A raw reader of port BIG's slot (its own mapping of the inherited region), to look at the
/// slot's flags beside the port's services.
fn big_slot() -> partix_shm::sampling::SamplingReader {
    partix_runtime::channels::map_inherited()
        .ok()
        .and_then(|ps| {
            let p = ps.into_iter().find(|p| p.desc.name == "BIG")?;
            partix_shm::sampling::SamplingReader::attach(p.regions[0].clone(), 0).ok()
        })
        .expect("map the BIG slot")
}

extern "C" fn window_writer() {
    write_big_messages(0)
}

extern "C" fn window_dst_process() {
    let id = get_sampling_port_id("BIG").expect("BIG");
    let slot = big_slot();
    let mut buf = vec![0u8; BIG];
    let t0 = get_time();
    let (mut reads, mut mid_write, mut torn, mut not_newest) = (0u64, 0u64, 0u64, 0u64);
    // Slot states (by the last complete message) found stuck mid-write: each is a write the
    // writer's window ended inside of, found at one or more reads.
    let (mut stuck_states, mut last_stuck) = (0u64, None);
    // 300 reads (about 0.6 s on an idle machine), or 20 s on a loaded one.
    while reads < 300 && get_time() - t0 < 20_000 * MS {
        // At a window's start the writer (on another CPU) may still be finishing the write
        // it was in when its window ended: a mid-write slot counts only if it stays so, with
        // the same last complete message, for 1 ms, while a running writer writes a message
        // every few tens of µs.
        let before = slot.latest_flags();
        if slot.write_in_progress() {
            let _ = timed_wait(MS);
            if slot.write_in_progress() && slot.latest_flags() == before {
                mid_write += 1;
                if last_stuck != Some(before) {
                    stuck_states += 1;
                    last_stuck = Some(before);
                }
            }
            continue;
        }
        if let Ok((n, _)) = read_sampling_message(id, &mut buf) {
            reads += 1;
            if check_big(&buf[..n]).is_err() {
                torn += 1;
            }
            // The newest complete message in the slot is the one returned, unless the slot
            // changed during the read (the writer finishing, as above).
            let after = slot.latest_flags();
            if after == before && after.map(|f| f.len() as usize) != Some(n) {
                not_newest += 1;
            }
        }
        let _ = timed_wait(MS / 2);
    }
    expect("window: no torn message", torn == 0, format!("{torn} torn"));
    expect(
        "window: reads happened",
        reads > 100,
        format!("{reads} reads"),
    );
    // Only a writer held by the executive's backstop (it did not park within the park bound
    // of its window's end, e.g. it did not get the CPU on a loaded machine) may be stopped
    // inside a write; the test compares this count with the executive's report.
    out(&format!(
        "INFO window: stuck_states={stuck_states} mid_write_reads={mid_write} reads={reads}"
    ));
    expect(
        "window: every read returned the newest message in the slot",
        not_newest == 0,
        format!("{not_newest} of {reads} reads returned an older message"),
    );
    out("END window-dst");
    idle_forever();
}

/// One read of `kill-dst`: its answer (message number, length, validity, or why not) and
/// whether the port answered it with its last good copy because the slot's newest message could
/// not be read (`sampling_port_counters`).
struct KillRead {
    answer: Result<(u64, usize, Validity), String>,
    fallback: bool,
}

extern "C" fn kill_dst_process() {
    let id = get_sampling_port_id("BIG").expect("BIG");
    let mut buf = vec![0u8; BIG];
    let t0 = get_time();
    let slot = big_slot();
    let fallbacks = || {
        sampling_port_counters(id)
            .expect("counters")
            .fallback_answers
    };
    let mut seen_fallbacks = fallbacks();
    let mut reads: Vec<KillRead> = Vec::new();
    // The slot found mid-write with the same last complete message since: (when, the index of
    // the first read after that look, the flags of that message).
    let mut stuck = None;
    // Read for at least 1.5 s, and on (up to 25 s, on a loaded machine) until the slot has been
    // mid-write for 1.3 s (more than the refresh period): the writer died in the middle of a
    // write (its killer leaves the slot so about 300 ms in), and these reads come after that.
    loop {
        let r = read_sampling_message(id, &mut buf);
        let f = fallbacks();
        let fallback = f > seen_fallbacks;
        seen_fallbacks = f;
        let answer = match r {
            Ok((n, v)) => check_big(&buf[..n]).map(|(k, len)| (k, len, v)),
            Err(e) => Err(format!("{e:?}")),
        };
        reads.push(KillRead { answer, fallback });
        let now = get_time();
        let flags = slot.latest_flags();
        if slot.write_in_progress() {
            match stuck {
                Some((_, _, f)) if f == flags => {}
                _ => stuck = Some((now, reads.len(), flags)),
            }
        } else {
            stuck = None;
        }
        let dead_for = stuck.map_or(0, |(since, _, _)| now - since);
        if (now - t0 >= 1_500 * MS && dead_for >= 1_300 * MS) || now - t0 >= 25_000 * MS {
            break;
        }
        let _ = timed_wait(MS / 2);
    }
    let torn: Vec<&String> = reads
        .iter()
        .filter_map(|r| r.answer.as_ref().err())
        .filter(|e| !e.starts_with("NoAction"))
        .collect();
    expect(
        "kill: every message read is whole (number, length, fill bytes and checksum agree)",
        torn.is_empty(),
        format!(
            "{} of {} reads: {:?}",
            torn.len(),
            reads.len(),
            torn.first()
        ),
    );
    let dead_for = stuck.map_or(0, |(since, _, _)| get_time() - since);
    expect(
        "kill: the slot stayed mid-write with the same last message for 1.3 s (the writer died)",
        dead_for >= 1_300 * MS,
        format!("{} ms", dead_for / MS),
    );
    let first_after = stuck.map_or(reads.len(), |(_, i, _)| i);
    let before = first_after
        .checked_sub(1)
        .and_then(|i| reads[i].answer.clone().ok());
    expect(
        "kill: a good message was read before the death",
        before.is_some(),
        format!("{:?}", first_after.checked_sub(1).map(|i| &reads[i].answer)),
    );
    let after = &reads[first_after..];
    let last = before.map(|(k, len, _)| (k, len));
    let other = after
        .iter()
        .position(|r| r.answer.as_ref().ok().map(|&(k, len, _)| (k, len)) != last);
    expect(
        "kill: every read after the death returns exactly the last message read before it",
        !after.is_empty() && other.is_none(),
        format!(
            "{} reads after, last good {last:?}, read {:?}: {:?}",
            after.len(),
            other,
            other.map(|i| &after[i].answer)
        ),
    );
    let direct = after.iter().filter(|r| !r.fallback).count();
    expect(
        "kill: every read after the death was answered with the last good copy (fallback path)",
        !after.is_empty() && direct == 0,
        format!("{direct} of {} answered otherwise", after.len()),
    );
    let validity: Vec<Validity> = after
        .iter()
        .filter_map(|r| r.answer.as_ref().ok().map(|&(_, _, v)| v))
        .collect();
    expect_valid_then_invalid(
        "kill: the last good message is VALID at first, then INVALID for good past the refresh period",
        &validity,
    );
    // Whether the slot was really left mid-write.
    let mid = Some(slot.write_in_progress());
    out(&format!(
        "INFO kill: reads={} after_death={} slot_left_mid_write={mid:?}",
        reads.len(),
        after.len()
    ));
    out("END kill-dst");
    idle_forever();
}

// ------------------------------------------------------------ kill: two-sided and tcp (kill2)

/// The number of the last complete message `kill2-src` writes before it dies.
const KILL2_LAST: u64 = 1 << 40;

/// The words of region `r` (mapped for as long as `r` lives).
fn region_words(r: &partix_shm::Region) -> &[std::sync::atomic::AtomicU64] {
    // SAFETY: the region is mapped, page-aligned, for as long as `r` lives, and its words are
    // only accessed atomically here.
    unsafe { std::slice::from_raw_parts(r.as_ptr().cast(), r.len() / 8) }
}

/// The two-sided TX ring of port BIG (`partix_shm::twosided`: `tail` at byte 128, 4 slots of
/// `begin | stamp | payload | end` words from byte 192): its tail and slot `k`.
struct TxRing<'a> {
    words: &'a [std::sync::atomic::AtomicU64],
    stride: usize,
}

impl<'a> TxRing<'a> {
    fn new(r: &'a partix_shm::Region) -> TxRing<'a> {
        let stride = BIG.div_ceil(8) + 3;
        let slots = partix_runtime::channels::TWO_SIDED_SAMPLING_SLOTS as usize;
        assert!(r.len() >= 192 + 8 * stride * slots, "TX region too small");
        TxRing {
            words: region_words(r),
            stride,
        }
    }

    fn tail(&self) -> u64 {
        self.words[16].load(Ordering::Acquire)
    }

    fn slot(&self, p: u64) -> &'a [std::sync::atomic::AtomicU64] {
        let k = (p % u64::from(partix_runtime::channels::TWO_SIDED_SAMPLING_SLOTS)) as usize;
        &self.words[24 + k * self.stride..24 + (k + 1) * self.stride]
    }

    /// Whether the slot of message `p` is mid-write (`begin` != `end`).
    fn mid_write(&self, p: u64) -> bool {
        let v = partix_shm::sampling::SlotView::from_words(self.slot(p));
        v.begin() != v.end()
    }
}

/// `kill2-src`: write BIG messages 1, 2, ... for 300 ms (0.5 ms apart on two-sided; 20 ms
/// apart on tcp, so that the socket never holds back part of a frame), then message
/// [`KILL2_LAST`], then leave the channel mid-write the way a writer killed inside its next
/// write does, and SIGKILL the partition. Two-sided: the next TX slot gets its `begin` flag
/// (the next sequence number, 64 KiB) and half a payload of [`FORGED`] bytes, no `end`, and the
/// tail is not moved (the sender moves it after `end`). tcp: a valid header of a 64 KiB frame
/// and half its payload go on the socket, and nothing more.
extern "C" fn kill2_src_process() {
    let id = get_sampling_port_id("BIG").expect("BIG");
    let port = partix_runtime::channels::map_inherited()
        .expect("map_inherited")
        .into_iter()
        .find(|p| p.desc.name == "BIG")
        .expect("port BIG");
    let transport = port.desc.transport;
    let tcp = transport == partix_runtime::transport::Transport::Tcp;
    let pause = if tcp { 20 * MS } else { MS / 2 };
    let mut msg = vec![0u8; BIG];
    let t0 = get_time();
    let mut k = 0;
    while get_time() - t0 < 300 * MS {
        k += 1;
        let len = build_big(k, &mut msg);
        let _ = write_sampling_message(id, &msg[..len]);
        let _ = timed_wait(pause);
    }
    let sock = port.sockets.first().map(std::os::fd::AsRawFd::as_raw_fd);
    // tcp: everything sent so far has left the socket (SIOCOUTQ: bytes not yet acknowledged
    // by the peer's kernel), so the frames before are whole in the stream.
    let unsent = |fd: i32| {
        let mut n: libc::c_int = 0;
        // SAFETY: SIOCOUTQ (= TIOCOUTQ) writes one int.
        unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut n) };
        n
    };
    let drained = |fd: i32| {
        let t = get_time();
        while unsent(fd) > 0 && get_time() - t < 2_000 * MS {
            let _ = timed_wait(MS);
        }
        unsent(fd)
    };
    let before = sock.map(drained);
    let len = build_big(KILL2_LAST, &mut msg);
    let r = write_sampling_message(id, &msg[..len]);
    let after = sock.map(drained);
    let forged = match transport {
        partix_runtime::transport::Transport::TwoSided => {
            let tx = TxRing::new(&port.regions[0]);
            let p = tx.tail();
            let last_whole = p > 0 && !tx.mid_write(p - 1);
            let slot = tx.slot(p);
            // As TxView::send would start message p: begin = (seq p + 1, length), a payload.
            let seq = (p as u32).wrapping_add(1);
            slot[0].store(u64::from(seq) << 32 | BIG as u64, Ordering::Release);
            let fill = u64::from_ne_bytes([FORGED; 8]);
            for w in &slot[2..2 + BIG / 16] {
                w.store(fill, Ordering::Relaxed);
            }
            format!(
                "tx tail {p}, message {k} + 1 whole in its slot {last_whole}, slot of {p} mid-write {}",
                tx.mid_write(p)
            )
        }
        partix_runtime::transport::Transport::Tcp => {
            let fd = sock.expect("a tcp port has its socket");
            let mut frame = vec![FORGED; partix_runtime::transport::socket::HEADER_LEN + BIG / 2];
            // Where the endpoint would send its next frame: where the stream stands.
            let at = partix_runtime::transport::socket::stream_positions(&port.sockets[0])
                .expect("stream positions")
                .1;
            partix_runtime::transport::socket::FrameRepr {
                seq: 0x7fff_0000,
                len: BIG as u32,
                stamp: partix_shm::clock::now_ns(),
            }
            .emit_at(&mut frame, at);
            let mut off = 0;
            let t = get_time();
            while off < frame.len() && get_time() - t < 2_000 * MS {
                // SAFETY: writes from frame[off..], which is in bounds.
                let n = unsafe {
                    libc::send(
                        fd,
                        frame[off..].as_ptr().cast(),
                        frame.len() - off,
                        libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                    )
                };
                if n > 0 {
                    off += n as usize;
                } else {
                    let _ = timed_wait(MS);
                }
            }
            format!("frame bytes sent {off} of {}", frame.len())
        }
        other => format!("transport {other:?}: nothing forged"),
    };
    out(&format!(
        "INFO kill2: {transport:?}: {k} messages, then {KILL2_LAST}: {r:?}; unsent before {before:?}, after {after:?}; {forged}"
    ));
    out("END kill2-src (killing)");
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
}

/// Whether a thread of this process is named `partix-netmgr-*` (a two-sided destination's
/// network manager).
fn manager_thread_runs() -> bool {
    std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
        .any(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.starts_with("partix-netmgr"))
        })
}

/// `kill2-dst`: read every 0.5 ms until message [`KILL2_LAST`] was read and 1.3 s after (the
/// refresh period is 1 s; at most 25 s): every message read is whole ([`check_big`]); from the
/// first read of [`KILL2_LAST`] on, every read returns it (the channel's cut-off message is never
/// delivered), `VALID` at first, then `INVALID` for good. Two-sided: the destination's network
/// manager thread runs, and the TX slot after the last message stays mid-write.
extern "C" fn kill2_dst_process() {
    let id = get_sampling_port_id("BIG").expect("BIG");
    let port = partix_runtime::channels::map_inherited()
        .expect("map_inherited")
        .into_iter()
        .find(|p| p.desc.name == "BIG")
        .expect("port BIG");
    let two_sided = port.desc.transport == partix_runtime::transport::Transport::TwoSided;
    if two_sided {
        expect(
            "kill2: the destination's network manager thread runs",
            manager_thread_runs(),
            "no partix-netmgr thread",
        );
    }
    let mut buf = vec![0u8; BIG];
    let t0 = get_time();
    let mut reads: Vec<Result<(u64, usize, Validity), String>> = Vec::new();
    let mut first_last: Option<(SystemTime, usize)> = None;
    loop {
        let answer = match read_sampling_message(id, &mut buf) {
            Ok((n, v)) => check_big(&buf[..n]).map(|(k, len)| (k, len, v)),
            Err(e) => Err(format!("{e:?}")),
        };
        let now = get_time();
        if first_last.is_none() && matches!(answer, Ok((k, _, _)) if k == KILL2_LAST) {
            first_last = Some((now, reads.len()));
        }
        reads.push(answer);
        let since = first_last.map_or(0, |(t, _)| now - t);
        if since >= 1_300 * MS || now - t0 >= 25_000 * MS {
            break;
        }
        let _ = timed_wait(MS / 2);
    }
    let torn: Vec<&String> = reads
        .iter()
        .filter_map(|r| r.as_ref().err())
        .filter(|e| !e.starts_with("NoAction"))
        .collect();
    expect(
        "kill2: every message read is whole (number, length, fill bytes and checksum agree)",
        torn.is_empty(),
        format!(
            "{} of {} reads: {:?}",
            torn.len(),
            reads.len(),
            torn.first()
        ),
    );
    let from = first_last.map_or(reads.len(), |(_, i)| i);
    expect(
        "kill2: messages before the last one were read, then the last complete one",
        from > 0 && reads[..from].iter().any(Result::is_ok) && first_last.is_some(),
        format!(
            "{} reads, the last message first at {first_last:?}",
            reads.len()
        ),
    );
    let after = &reads[from..];
    let last = Some((KILL2_LAST, build_big(KILL2_LAST, &mut buf)));
    let other = after
        .iter()
        .position(|r| r.as_ref().ok().map(|&(k, len, _)| (k, len)) != last);
    expect(
        "kill2: every read from then on returns the last complete message (never the cut-off one)",
        !after.is_empty() && other.is_none(),
        format!(
            "{} reads, want {last:?}, read {other:?}: {:?}",
            after.len(),
            other.map(|i| &after[i])
        ),
    );
    let validity: Vec<Validity> = after
        .iter()
        .filter_map(|r| r.as_ref().ok().map(|&(_, _, v)| v))
        .collect();
    expect_valid_then_invalid(
        "kill2: the last message is VALID at first, then INVALID for good past the refresh period",
        &validity,
    );
    if two_sided {
        let tx = TxRing::new(&port.regions[0]);
        let p = tx.tail();
        expect(
            "kill2: the TX slot after the last message is still mid-write (the writer died in it)",
            tx.mid_write(p),
            format!("tail {p}"),
        );
        expect(
            "kill2: the manager thread still runs",
            manager_thread_runs(),
            "no partix-netmgr thread",
        );
    }
    out(&format!(
        "INFO kill2: {:?}: reads={} after={}",
        port.desc.transport,
        reads.len(),
        after.len()
    ));
    out("END kill2-dst");
    idle_forever();
}

/// Without reading the port, wait (up to 20 s) until its slot has stayed mid-write for 200 ms
/// (the writer was killed inside a write), then wait for a message: there is a message newer
/// than any this port returned (none), but it cannot be read, so the wait must time out, not
/// answer at once (it answered NO_ACTION, or the last good copy, and a waiting loop spun).
extern "C" fn stuck_dst_process() {
    let id = get_sampling_port_id("BIG").expect("BIG");
    let slot = big_slot();
    let t0 = get_time();
    let mut stuck_since = None;
    while get_time() - t0 < 20_000 * MS {
        let now = get_time();
        if slot.write_in_progress() && slot.latest_flags().is_some() {
            if now - *stuck_since.get_or_insert(now) >= 200 * MS {
                break;
            }
        } else {
            stuck_since = None;
        }
        let _ = timed_wait(MS);
    }
    expect(
        "stuck: the writer died inside a write, after a complete message",
        stuck_since.is_some(),
        "the slot never stayed mid-write",
    );
    let mut buf = vec![0u8; BIG];
    let r = wait_sampling_message(id, 100 * MS, &mut buf);
    expect(
        "stuck: a wait for a newer message that cannot be read times out",
        r == Err(ApexError::TimedOut),
        format!("{r:?}"),
    );
    let r = wait_sampling_message(id, 0, &mut buf);
    expect(
        "stuck: a look for it answers NOT_AVAILABLE",
        r == Err(ApexError::NotAvailable),
        format!("{r:?}"),
    );
    // No good message was ever read: READ has no last good copy to answer with.
    let r = read_sampling_message(id, &mut buf);
    expect(
        "stuck: READ answers NO_ACTION",
        r == Err(ApexError::NoAction),
        format!("{r:?}"),
    );
    out("END stuck-dst");
    idle_forever();
}

// ------------------------------------------------------------------------------------ restart

extern "C" fn restart_dst_process() {
    let id = get_sampling_port_id("IN").expect("IN");
    let mut buf = [0u8; 32];
    loop {
        if let Ok((n, _)) = read_sampling_message(id, &mut buf) {
            if &buf[..n] == b"final" {
                break;
            }
        }
        let _ = timed_wait(MS);
    }
    out("PASS read final before the restart");
    let e = set_partition_mode(OperatingMode::ColdStart);
    out(&format!("FAIL set_partition_mode(ColdStart): {e:?}"));
    idle_forever();
}

// ------------------------------------------------ a queuing source restarted while it is full

/// How often `book-src` restarts itself.
const BOOK_RESTARTS: usize = 2;

extern "C" fn book_src_process() {
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let go = get_sampling_port_id("GO").expect("GO");
    let k = testpart_common::out_lines()
        .iter()
        .filter(|l| l.starts_with("INFO incarnation"))
        .count();
    out(&format!("INFO incarnation {k}"));
    if k == 0 {
        for i in 0..4u8 {
            check(
                &format!("send {i}"),
                send_queuing_message(q, &[i], 0),
                Ok(()),
            );
        }
    }
    // The messages of the earlier incarnations are still in flight: no room.
    check(
        &format!("incarnation {k}: full"),
        send_queuing_message(q, &[9], 0),
        Err(ApexError::NotAvailable),
    );
    let st = get_queuing_port_status(q);
    expect_dbg(
        &format!("incarnation {k}: 4 in flight"),
        st.as_ref().is_ok_and(|s| s.nb_message == 4),
        st,
    );
    if k < BOOK_RESTARTS {
        let e = set_partition_mode(OperatingMode::ColdStart);
        out(&format!("FAIL set_partition_mode(ColdStart): {e:?}"));
        idle_forever();
    }
    write_sampling_message(go, b"go").expect("GO");
    for i in 4..8u8 {
        check(
            &format!("send {i} once there is room"),
            send_queuing_message(q, &[i], 5_000 * MS),
            Ok(()),
        );
    }
    out("END book-src");
    idle_forever();
}

extern "C" fn book_dst_process() {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let go = get_sampling_port_id("GO").expect("GO");
    let mut buf = [0u8; 8];
    loop {
        if let Ok((n, _)) = read_sampling_message(go, &mut buf) {
            if &buf[..n] == b"go" {
                break;
            }
        }
        let _ = timed_wait(MS);
    }
    let mut got = Vec::new();
    for _ in 0..8 {
        match receive_queuing_message(q, &mut buf, 5_000 * MS) {
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => {
                out(&format!("FAIL receive: {e:?} after {got:?}"));
                break;
            }
        }
    }
    expect_dbg(
        "every message, once, in order",
        got == [0, 1, 2, 3, 4, 5, 6, 7],
        &got,
    );
    check(
        "nothing more",
        receive_queuing_message(q, &mut buf, 0),
        Err(ApexError::NotAvailable),
    );
    out("END book-dst");
    idle_forever();
}

// ------------------------------------------- a queuing destination restarted while it is full

/// Wait until sampling port `port` holds `want` (polling every millisecond).
fn await_sampling(port: SamplingPortId, want: &[u8]) {
    let mut buf = [0u8; 8];
    loop {
        if let Ok((n, _)) = read_sampling_message(port, &mut buf) {
            if &buf[..n] == want {
                return;
            }
        }
        let _ = timed_wait(MS);
    }
}

extern "C" fn dbook_src_process() {
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let go = get_sampling_port_id("GO").expect("GO");
    let back = get_sampling_port_id("BACK").expect("BACK");
    for i in 0..4u8 {
        check(
            &format!("send {i}"),
            send_queuing_message(q, &[i], 0),
            Ok(()),
        );
    }
    for k in 0..=BOOK_RESTARTS {
        // Destination incarnation k has made its port (and so announced itself).
        await_sampling(back, format!("up {k}").as_bytes());
        check(
            &format!("destination incarnation {k}: full"),
            send_queuing_message(q, &[9], 0),
            Err(ApexError::NotAvailable),
        );
        let st = get_queuing_port_status(q);
        expect_dbg(
            &format!("destination incarnation {k}: 4 in flight"),
            st.as_ref().is_ok_and(|s| s.nb_message == 4),
            st,
        );
        write_sampling_message(go, format!("ok {k}").as_bytes()).expect("GO");
    }
    for i in 4..8u8 {
        check(
            &format!("send {i} once there is room"),
            send_queuing_message(q, &[i], 5_000 * MS),
            Ok(()),
        );
    }
    out("END dbook-src");
    idle_forever();
}

extern "C" fn dbook_dst_process() {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let go = get_sampling_port_id("GO").expect("GO");
    let back = get_sampling_port_id("BACK").expect("BACK");
    let k = testpart_common::out_lines()
        .iter()
        .filter(|l| l.starts_with("INFO incarnation"))
        .count();
    out(&format!("INFO incarnation {k}"));
    write_sampling_message(back, format!("up {k}").as_bytes()).expect("BACK");
    await_sampling(go, format!("ok {k}").as_bytes());
    if k < BOOK_RESTARTS {
        // Restart without having read anything: the source's messages stay in flight.
        let e = set_partition_mode(OperatingMode::ColdStart);
        out(&format!("FAIL set_partition_mode(ColdStart): {e:?}"));
        idle_forever();
    }
    let mut buf = [0u8; 8];
    let mut got = Vec::new();
    for _ in 0..8 {
        match receive_queuing_message(q, &mut buf, 5_000 * MS) {
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => {
                out(&format!("FAIL receive: {e:?} after {got:?}"));
                break;
            }
        }
    }
    expect_dbg(
        "every message, once, in order",
        got == [0, 1, 2, 3, 4, 5, 6, 7],
        &got,
    );
    check(
        "nothing more",
        receive_queuing_message(q, &mut buf, 0),
        Err(ApexError::NotAvailable),
    );
    out("END dbook-dst");
    idle_forever();
}

// ------------------------------------------------------------------------------ waiting order

static GOT: std::sync::Mutex<Vec<(i32, u8)>> = std::sync::Mutex::new(Vec::new());

fn order_receive(prio: i32, ahead: u32) {
    let id = get_queuing_port_id("QIN").expect("QIN");
    // Arrive after the `ahead` processes that must wait first (deterministic arrival order).
    while get_queuing_port_status(id)
        .expect("status")
        .waiting_processes
        < ahead
    {
        let _ = timed_wait(MS);
    }
    let mut buf = [0u8; 8];
    match receive_queuing_message(id, &mut buf, INFINITE_TIME_VALUE) {
        Ok(_) => {
            let mut g = GOT.lock().unwrap();
            g.push((prio, buf[0]));
            if g.len() == 3 {
                g.sort();
                for (p, m) in g.iter() {
                    out(&format!("GOT priority {p} message {m}"));
                }
                out("END order-dst");
            }
        }
        Err(e) => out(&format!("FAIL receive at priority {prio}: {e:?}")),
    }
    idle_forever();
}

extern "C" fn order_r7() {
    order_receive(7, 0);
}

extern "C" fn order_r5() {
    order_receive(5, 1);
}

extern "C" fn order_r10() {
    order_receive(10, 2);
}

extern "C" fn order_r15() {
    order_receive(15, 3);
}

extern "C" fn order_watch() {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let s = get_sampling_port_id("RDY").expect("RDY");
    while get_queuing_port_status(q)
        .expect("status")
        .waiting_processes
        < 4
    {
        let _ = timed_wait(MS);
    }
    // r7 waits first (at the head with FIFO): stop it; its place must not block the others.
    stop(get_process_id("r7").expect("r7")).expect("stop r7");
    let n = get_queuing_port_status(q)
        .expect("status")
        .waiting_processes;
    expect("a stopped process no longer counts as waiting", n == 3, n);
    // While they wait, r15 (the head with PRIORITY, parked on the channel: QIN blocks) is
    // lowered to 12 and r5 raised to 10, r10's priority: a PRIORITY line keeps r15 first and
    // puts r5, which came before r10, ahead of it (FIFO among equals); a FIFO line keeps them
    // all in place.
    let r15 = get_process_id("r15").expect("r15");
    set_priority(r15, 12).expect("set_priority r15");
    let r5 = get_process_id("r5").expect("r5");
    set_priority(r5, 10).expect("set_priority r5");
    write_sampling_message(s, b"ready").expect("write ready");
    idle_forever();
}

extern "C" fn order_send() {
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let s = get_sampling_port_id("RDY").expect("RDY");
    let mut buf = [0u8; 8];
    while read_sampling_message(s, &mut buf).is_err() {
        let _ = timed_wait(MS);
    }
    for m in 0..3u8 {
        if let Err(e) = send_queuing_message(q, &[m; 4], 0) {
            out(&format!("FAIL send {m}: {e:?}"));
        }
    }
    out("END order-src");
    idle_forever();
}

// ------------------------------------------------------------------ a waiter suspended in line

/// r1 and r2 of role `suspend-dst`.
static SUSPEND_PIDS: OnceLock<(ProcessId, ProcessId)> = OnceLock::new();
/// What r1 and r2 received: the message's first byte, 100 + the error's index, or -1 (not yet).
static SUSPEND_GOT: [AtomicI32; 2] = [AtomicI32::new(-1), AtomicI32::new(-1)];

fn suspend_receiver(i: usize) {
    receive_into(&SUSPEND_GOT[i], 8);
}

/// One message from QIN (20 s time-out) into a buffer of `cap` bytes; store into `got` the
/// message's first byte (a 4-byte message), 50 + its length (another), or 100 + the error's
/// index; then idle.
fn receive_into(got: &AtomicI32, cap: usize) {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let mut buf = [0u8; 8];
    let v = match receive_queuing_message(q, &mut buf[..cap], 20_000 * MS) {
        Ok(4) => i32::from(buf[0]),
        Ok(n) => 50 + n as i32,
        Err(e) => 100 + e as i32,
    };
    got.store(v, Ordering::Release);
    idle_forever();
}

extern "C" fn suspend_r1() {
    suspend_receiver(0);
}

extern "C" fn suspend_r2() {
    suspend_receiver(1);
}

/// Poll `cond` every millisecond for up to 5 s.
fn within_5s(mut cond: impl FnMut() -> bool) -> bool {
    let t0 = get_time();
    while !cond() {
        if get_time() - t0 > 5_000 * MS {
            return false;
        }
        let _ = timed_wait(MS);
    }
    true
}

/// Start `first`, let it wait on queuing port `q`, then `second` behind it, then SUSPEND
/// `first`; return whether both waited in line.
fn line_up_and_suspend_first(q: QueuingPortId, first: ProcessId, second: ProcessId) -> bool {
    let waiting = |n: u32| get_queuing_port_status(q).map(|st| st.waiting_processes) == Ok(n);
    start(first).expect("start the first");
    let ok = within_5s(|| waiting(1));
    start(second).expect("start the second");
    let ok = ok && within_5s(|| waiting(2));
    suspend(first).expect("suspend the first");
    ok
}

/// Check (as `expect`, under `label`) that the validities of a series of reads start VALID
/// and, once INVALID, stay INVALID (the last message aging past the refresh period).
fn expect_valid_then_invalid(label: &str, validity: &[Validity]) {
    let turned = validity.iter().position(|&v| v == Validity::Invalid);
    expect(
        label,
        validity.first() == Some(&Validity::Valid)
            && turned.is_some_and(|t| validity[t..].iter().all(|&v| v == Validity::Invalid)),
        format!(
            "{} reads: first {:?}, INVALID from {turned:?}, last {:?}",
            validity.len(),
            validity.first(),
            validity.last()
        ),
    );
}

/// Check that `first` (its result in `SUSPEND_GOT[0]`) has not returned and is WAITING.
fn expect_first_still_suspended(first: ProcessId) {
    let got = SUSPEND_GOT[0].load(Ordering::Acquire);
    let st = get_process_status(first).map(|st| st.process_state);
    expect_dbg(
        "the suspended first in line has not returned and is WAITING",
        got == -1 && st == Ok(ProcessState::Waiting),
        (got, st),
    );
}

extern "C" fn suspend_ctl() {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let s = get_sampling_port_id("RDY").expect("RDY");
    let (r1, r2) = *SUSPEND_PIDS.get().expect("set at init");
    let ok = line_up_and_suspend_first(q, r1, r2);
    expect("both receivers wait in line", ok, "not 2 waiting");
    write_sampling_message(s, b"ready").expect("write ready");
    let got = |i: usize| SUSPEND_GOT[i].load(Ordering::Acquire);
    let r2_done = within_5s(|| got(1) >= 0);
    expect_dbg(
        "the second in line gets message 1 while the first is suspended",
        r2_done && got(1) == 1,
        (got(0), got(1)),
    );
    expect_first_still_suspended(r1);
    let three = within_5s(|| {
        get_queuing_port_status(q).map(|st| (st.nb_message, st.waiting_processes)) == Ok((1, 0))
    });
    let mut buf = [0u8; 8];
    let r = receive_queuing_message(q, &mut buf, 0);
    expect_dbg(
        "a TIME_OUT 0 receive then gets message 2 (message 0 went to the suspended process)",
        three && r == Ok(4) && buf[0] == 2,
        (three, r, buf[0]),
    );
    resume(r1).expect("resume r1");
    let r1_done = within_5s(|| got(0) >= 0);
    expect_dbg(
        "resumed, the first in line returns message 0",
        r1_done && got(0) == 0,
        got(0),
    );
    out("END suspend-dst");
    idle_forever();
}

// ---------------------------------------------------- SET_PRIORITY of a waiter in a long window

/// w and h of role `reprio-dst`.
static REPRIO_PIDS: OnceLock<(ProcessId, ProcessId)> = OnceLock::new();
/// What w and h received: the message's first byte, 100 + the error's index, or -1 (not yet).
static REPRIO_GOT: [AtomicI32; 2] = [AtomicI32::new(-1), AtomicI32::new(-1)];

/// A receiver of `reprio-dst` with a 4-byte buffer, shorter than QIN's largest message (8): it
/// is never served in its place, so it takes its message only when it looks itself.
fn reprio_receiver(i: usize) {
    receive_into(&REPRIO_GOT[i], 4);
}

extern "C" fn reprio_w() {
    reprio_receiver(0);
}

extern "C" fn reprio_h() {
    reprio_receiver(1);
}

/// `reprio-dst` (tests/ports/reprio.xml, with `order-src`; QIN PRIORITY, OD's window 490 ms of
/// every 500): h (priority 15) waits on QIN and is SUSPENDed; w (5) waits behind it. OS's three
/// messages come while OD's window is closed and stay queued: h, at the head, cannot be served
/// in its place (its buffer is short) and does not run; w is not the head. SET_PRIORITY then
/// raises w to 20, inside OD's window: w, now the head, must take message 0 at once, woken by
/// the SET_PRIORITY (`ports::priority_changed`), not at its next check of the line (every
/// 50 ms from its last look, made 5 ms before, after the window's opening interrupted its
/// wait; the next window boundary is at least ~400 ms away). Asserted: within 25 ms. Then h,
/// resumed, gets message 1, and a TIME_OUT 0 receive message 2.
extern "C" fn reprio_ctl() {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let s = get_sampling_port_id("RDY").expect("RDY");
    let (w, h) = *REPRIO_PIDS.get().expect("set at init");
    let got = |i: usize| REPRIO_GOT[i].load(Ordering::Acquire);
    start(h).expect("start h");
    let lined = within_5s(|| nb_and_waiting(q) == Ok((0, 1)));
    let suspended = suspend(h);
    start(w).expect("start w");
    let lined = lined && within_5s(|| nb_and_waiting(q) == Ok((0, 2)));
    write_sampling_message(s, b"ready").expect("write ready");
    let queued = within_5s(|| nb_and_waiting(q) == Ok((3, 2)));
    expect_dbg(
        "three messages queued while a suspended head that cannot be served in its place and \
         a waiter behind it wait",
        lined && suspended.is_ok() && queued && got(0) == -1 && got(1) == -1,
        (lined, suspended, nb_and_waiting(q), got(0), got(1)),
    );
    // The window's opening interrupted every wait: let w look again (it runs once this sleeps)
    // and go back to sleep, so that nothing but the SET_PRIORITY's wake makes it look now.
    let _ = timed_wait(5 * MS);
    let t0 = get_time();
    let raised = set_priority(w, 20);
    let mut took = None;
    while get_time() - t0 < 25 * MS {
        if got(0) >= 0 {
            took = Some(get_time() - t0);
            break;
        }
        let _ = timed_wait(MS / 10);
    }
    if let Some(t) = took {
        out(&format!(
            "INFO the raised waiter took its message {} us after SET_PRIORITY",
            t / 1_000
        ));
    }
    expect_dbg(
        "raised above the suspended head, the waiter behind it takes message 0 within 25 ms",
        raised.is_ok() && took.is_some() && got(0) == 0,
        (raised, took, got(0)),
    );
    resume(h).expect("resume h");
    let h_done = within_5s(|| got(1) >= 0);
    let mut buf = [0u8; 8];
    let r = receive_queuing_message(q, &mut buf, 0);
    expect_dbg(
        "resumed, the head gets message 1; a TIME_OUT 0 receive then gets message 2",
        h_done && got(1) == 1 && r == Ok(4) && buf[0] == 2,
        (h_done, got(1), r, buf[0]),
    );
    out("END reprio-dst");
    idle_forever();
}

// ------------------------------------------------------------ a sender suspended in line

fn suspend_sender(i: usize, tag: u8) {
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let v = match send_queuing_message(q, &[tag; 4], 20_000 * MS) {
        Ok(()) => 0,
        Err(e) => 100 + e as i32,
    };
    SUSPEND_GOT[i].store(v, Ordering::Release);
    idle_forever();
}

extern "C" fn suspend_s1() {
    suspend_sender(0, 0xA0);
}

extern "C" fn suspend_s2() {
    suspend_sender(1, 0xB0);
}

extern "C" fn suspend_send_ctl() {
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let go = get_sampling_port_id("GO").expect("GO");
    let (s1, s2) = *SUSPEND_PIDS.get().expect("set at init");
    let filled = (0..8u8).all(|k| send_queuing_message(q, &[k; 4], 0).is_ok());
    let ok = line_up_and_suspend_first(q, s1, s2);
    expect(
        "QOUT full, both senders wait in line",
        filled && ok,
        "not full, or not 2 waiting",
    );
    write_sampling_message(go, b"go").expect("write go");
    let got = |i: usize| SUSPEND_GOT[i].load(Ordering::Acquire);
    let s2_done = within_5s(|| got(1) >= 0);
    expect_dbg(
        "the second in line sends while the first is suspended",
        s2_done && got(1) == 0,
        (got(0), got(1)),
    );
    expect_first_still_suspended(s1);
    resume(s1).expect("resume s1");
    let s1_done = within_5s(|| got(0) >= 0);
    expect_dbg(
        "resumed, the first in line returns NO_ERROR (its message was sent in its place)",
        s1_done && got(0) == 0,
        got(0),
    );
    out("END suspend-src");
    idle_forever();
}

extern "C" fn drain_process() {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let go = get_sampling_port_id("GO").expect("GO");
    let mut buf = [0u8; 8];
    while !matches!(read_sampling_message(go, &mut buf), Ok((2, _))) {
        let _ = timed_wait(MS);
    }
    let mut got = Vec::new();
    for _ in 0..10 {
        match receive_queuing_message(q, &mut buf, 5_000 * MS) {
            Ok(4) => got.push(buf[0]),
            other => {
                out(&format!("INFO drain: {other:?} after {got:?}"));
                break;
            }
        }
    }
    let want: Vec<u8> = (0..8).chain([0xA0, 0xB0]).collect();
    expect_dbg(
        "the 8 queued, then the suspended sender's message, then the second's",
        got == want,
        &got,
    );
    out("END drain-dst");
    idle_forever();
}

// ------------------------------------------- waiters served in their place by other calls

/// What r0..r6 of `serve-dst` got: the first byte of their message, 100 + the error's index,
/// or -1 (not returned yet).
static SERVE_GOT: [AtomicI32; 7] = [const { AtomicI32::new(-1) }; 7];
/// When they returned (`get_time`), or -1.
static SERVE_AT: [AtomicI64; 7] = [const { AtomicI64::new(-1) }; 7];
/// Their time-outs.
const SERVE_TIMEOUT: [SystemTime; 7] = [
    2_000 * MS,
    3_000 * MS,
    1_000 * MS,
    2_000 * MS,
    2_000 * MS,
    2_000 * MS,
    1_000 * MS,
];

fn serve_receiver(i: usize) {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let mut buf = [0u8; 8];
    let v = match receive_queuing_message(q, &mut buf, SERVE_TIMEOUT[i]) {
        Ok(4) => i32::from(buf[0]),
        Ok(n) => 50 + n as i32,
        Err(e) => 100 + e as i32,
    };
    SERVE_AT[i].store(get_time(), Ordering::Release);
    SERVE_GOT[i].store(v, Ordering::Release);
    idle_forever();
}

extern "C" fn serve_r0() {
    serve_receiver(0);
}
extern "C" fn serve_r1() {
    serve_receiver(1);
}
extern "C" fn serve_r2() {
    serve_receiver(2);
}
extern "C" fn serve_r3() {
    serve_receiver(3);
}
extern "C" fn serve_r4() {
    serve_receiver(4);
}
extern "C" fn serve_r5() {
    serve_receiver(5);
}
extern "C" fn serve_r6() {
    serve_receiver(6);
}

/// What a receive of a message `[tag; 4]` gave: `tag`, 50 + another length, or 100 + the
/// error's index.
fn tag4(r: ApexResult<usize>, buf: &[u8]) -> i32 {
    match r {
        Ok(4) => i32::from(buf[0]),
        Ok(n) => 50 + n as i32,
        Err(e) => 100 + e as i32,
    }
}

/// Stay on the CPU for `ns`, calling nothing that lets a process of lower priority run.
fn busy(ns: SystemTime) {
    let t0 = get_time();
    while get_time() - t0 < ns {
        std::hint::spin_loop();
    }
}

/// Write `msg` (a step: its number first, then its arguments) on `tell`, then wait on the CPU,
/// calling nothing that lets a process of lower priority run, until the other partition has
/// written the step's number on `hear` (at most 5 s), and 100 ms more, so that what it sent or
/// took has reached this partition's port (a two-sided manager, a socket's acks). Processes of
/// lower priority waiting on the port have then not run since: only a call of the caller's
/// can act for them. Return whether the step was done.
fn step_busily(tell: SamplingPortId, hear: SamplingPortId, msg: &[u8]) -> bool {
    write_sampling_message(tell, msg).expect("write step");
    let mut buf = [0u8; 8];
    let t0 = get_time();
    while !matches!(read_sampling_message(hear, &mut buf), Ok((1, _)) if buf[0] == msg[0]) {
        if get_time() - t0 > 5_000 * MS {
            return false;
        }
    }
    busy(100 * MS);
    true
}

/// The scheduling policy of the calling thread, for a failure's detail.
fn policy() -> &'static str {
    // SAFETY: sched_getscheduler has no preconditions.
    match unsafe { libc::sched_getscheduler(0) } {
        libc::SCHED_FIFO => "SCHED_FIFO",
        libc::SCHED_RR => "SCHED_RR",
        libc::SCHED_OTHER => "SCHED_OTHER",
        _ => "another policy",
    }
}

/// The premise of a step of `serve-dst` / `mirror-src`: the waiting process `who` had not run
/// since its message (room) came, so had not returned before the controller's call at `call`
/// (`returned`: when it returned, -1 if not yet). Otherwise it took its message (room) itself
/// and the step would pass with the hand-over or without: write a FAIL saying so (the waiter
/// runs when the controller's busy wait does not keep it off the CPU, without SCHED_FIFO).
fn not_run_before(who: &str, call: SystemTime, returned: SystemTime) -> bool {
    let ok = returned < 0 || returned >= call;
    if !ok {
        out(&format!(
            "FAIL {who} returned {} us before the controller's call, so it ran and took its \
             message or room itself: this step cannot show the hand-over (the controller runs \
             {}; it must keep {who} off the CPU)",
            (call - returned) / 1000,
            policy()
        ));
    }
    ok
}

/// `serve-src`: for each new step `[k, n, tag]` on ASK, send `[tag + i; 4]` for i in 0..n on
/// QOUT, then write `[k]` on DONE.
extern "C" fn serve_feed() {
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let ask = get_sampling_port_id("ASK").expect("ASK");
    let done = get_sampling_port_id("DONE").expect("DONE");
    let mut buf = [0u8; 8];
    let mut last = 0u8;
    loop {
        if matches!(read_sampling_message(ask, &mut buf), Ok((3, _))) && buf[0] != last {
            last = buf[0];
            for i in 0..buf[1] {
                let m = buf[2] + i;
                if let Err(e) = send_queuing_message(q, &[m; 4], 1_000 * MS) {
                    out(&format!("FAIL step {last}: send {m}: {e:?}"));
                }
            }
            write_sampling_message(done, &[last]).expect("DONE");
        }
        let _ = timed_wait(MS);
    }
}

/// `serve-dst`: the controller (priority 20) and receivers r0..r6 (priority 10) on QIN
/// (PRIORITY). In each step a receiver waits, SS sends while it waits, and the controller,
/// which has not let the receiver run since, then uses the port: the message is the
/// receiver's, whatever the controller's call.
extern "C" fn serve_ctl() {
    use ApexError::*;
    let q = get_queuing_port_id("QIN").expect("QIN");
    let ask = get_sampling_port_id("ASK").expect("ASK");
    let done = get_sampling_port_id("DONE").expect("DONE");
    let r = |i: usize| get_process_id(&format!("r{i}")).expect("r");
    let got = |i: usize| SERVE_GOT[i].load(Ordering::Acquire);
    // Each step's premise: r_i had not returned when the controller called (see
    // `not_run_before`), checked once r_i has returned.
    let fresh = |i: usize, call: SystemTime| {
        not_run_before(&format!("r{i}"), call, SERVE_AT[i].load(Ordering::Acquire))
    };
    let line_up = |i: usize| {
        start(r(i)).expect("start");
        within_5s(|| nb_and_waiting(q) == Ok((0, 1)))
    };
    let mut buf = [0u8; 8];

    // Finding 1: CLEAR_QUEUING_PORT while a receiver waits and its message is there.
    let lined = line_up(0);
    let stepped = step_busily(ask, done, &[1, 1, 10]);
    let call = get_time();
    let cleared = clear_queuing_port(q);
    // Served in its place, it is READY before it runs (ARINC 653: it leaves the wait with its
    // message). Before session 34 it showed WAITING until its thread ran.
    let ready0 = testpart_common::state(r(0));
    let returned = within_5s(|| got(0) >= 0);
    let fresh0 = fresh(0, call);
    expect_dbg(
        "CLEAR_QUEUING_PORT leaves a waiting receiver the message that came for it, and READY",
        lined
            && stepped
            && cleared.is_ok()
            && ready0 == ProcessState::Ready
            && returned
            && fresh0
            && got(0) == 10,
        (lined, stepped, cleared, ready0, fresh0, got(0)),
    );

    // The same with the receiver suspended, resumed after the CLEAR.
    let lined = line_up(1);
    let suspended = suspend(r(1));
    let stepped = step_busily(ask, done, &[2, 1, 20]);
    let call = get_time();
    let cleared = clear_queuing_port(q);
    let before = got(1);
    // Served in its place but suspended: WAITING (for its RESUME).
    let waiting1 = testpart_common::state(r(1));
    let resumed = resume(r(1));
    let returned = within_5s(|| got(1) >= 0);
    let fresh1 = fresh(1, call);
    expect_dbg(
        "CLEAR_QUEUING_PORT leaves a suspended waiting receiver its message, returned when resumed",
        lined
            && suspended.is_ok()
            && stepped
            && cleared.is_ok()
            && before == -1
            && waiting1 == ProcessState::Waiting
            && resumed.is_ok()
            && returned
            && fresh1
            && got(1) == 20,
        (
            lined,
            suspended,
            stepped,
            cleared,
            before,
            waiting1,
            resumed,
            got(1),
        ),
    );

    // Finding 2: PRIORITY, a higher-priority receive called after the message came.
    let lined = line_up(2);
    let stepped = step_busily(ask, done, &[3, 1, 30]);
    let call = get_time();
    let mine = receive_queuing_message(q, &mut buf, 300 * MS);
    let returned = within_5s(|| got(2) >= 0);
    let fresh2 = fresh(2, call);
    expect_dbg(
        "PRIORITY: a later higher-priority receive times out, the waiting receiver gets the message",
        lined && stepped && mine == Err(TimedOut) && returned && fresh2 && got(2) == 30,
        (lined, stepped, mine, fresh2, got(2)),
    );

    // Finding 3: more messages than waiters, a receive that does not wait.
    let lined = line_up(3);
    let stepped = step_busily(ask, done, &[4, 3, 40]);
    let call = get_time();
    let r = receive_queuing_message(q, &mut buf, 0);
    let zero = tag4(r, &buf);
    let status = nb_and_waiting(q);
    let r = receive_queuing_message(q, &mut buf, 0);
    let last = tag4(r, &buf);
    let returned = within_5s(|| got(3) >= 0);
    let fresh3 = fresh(3, call);
    expect_dbg(
        "3 messages, 1 waiting receiver: TIME_OUT 0 gets the second, the waiter the first",
        lined
            && stepped
            && zero == 41
            && status == Ok((1, 0))
            && last == 42
            && returned
            && fresh3
            && got(3) == 40,
        (lined, stepped, zero, status, last, fresh3, got(3)),
    );

    // GET_QUEUING_PORT_STATUS never shows a message queued while a receiver waits for one.
    let lined = line_up(4);
    let stepped = step_busily(ask, done, &[5, 2, 50]);
    let call = get_time();
    let status = nb_and_waiting(q);
    let ready4 = testpart_common::state(get_process_id("r4").expect("r4"));
    let returned = within_5s(|| got(4) >= 0);
    let fresh4 = fresh(4, call);
    let r = receive_queuing_message(q, &mut buf, 0);
    let rest = tag4(r, &buf);
    expect_dbg(
        "2 messages, 1 waiting receiver: the status shows 1 message and no waiter, the \
         receiver READY",
        lined
            && stepped
            && status == Ok((1, 0))
            && ready4 == ProcessState::Ready
            && returned
            && fresh4
            && got(4) == 50
            && rest == 51,
        (lined, stepped, status, ready4, fresh4, got(4), rest),
    );

    // Under the preemption lock (the waiter cannot run at all): a receive with a time-out gets
    // the message the waiter was not due.
    let lined = line_up(5);
    let stepped = step_busily(ask, done, &[6, 2, 60]);
    let call = get_time();
    lock_preemption().expect("lock");
    let r = receive_queuing_message(q, &mut buf, 10 * MS);
    unlock_preemption().expect("unlock");
    let locked = tag4(r, &buf);
    let returned = within_5s(|| got(5) >= 0);
    let fresh5 = fresh(5, call);
    expect_dbg(
        "2 messages, 1 waiting receiver: a receive under the preemption lock gets the second",
        lined && stepped && locked == 61 && returned && fresh5 && got(5) == 60,
        (lined, stepped, locked, fresh5, got(5)),
    );
    // A waiter whose time-out passed after its message came, before any call on the port: the
    // first look serves it, as its own look would have. Since session 31 that look is the
    // deadline monitor's, just after the deadline (`ports::look_at_expired_wait`), and the
    // TIME_OUT 0 receive then finds the message handed to the waiter already.
    let t0 = get_time();
    let lined = line_up(6);
    let stepped = step_busily(ask, done, &[7, 1, 70]);
    busy(t0 + 1_300 * MS - get_time());
    let call = get_time();
    let r = receive_queuing_message(q, &mut buf, 0);
    let look = tag4(r, &buf);
    let returned = within_5s(|| got(6) >= 0);
    let fresh6 = fresh(6, call);
    expect_dbg(
        "a waiter whose time-out passed after its message came gets it at the first look",
        lined && stepped && look == 100 + NotAvailable as i32 && returned && fresh6 && got(6) == 70,
        (lined, stepped, look, fresh6, got(6)),
    );
    check(
        "then QIN is empty",
        receive_queuing_message(q, &mut buf, 0),
        Err(NotAvailable),
    );
    out("END serve-dst");
    idle_forever();
}

/// What l of `mirror-src` got: 0 (NO_ERROR), 100 + the error's index, or -1 (not returned yet).
static MIRROR_GOT: AtomicI32 = AtomicI32::new(-1);
/// When l returned (`get_time`), or -1.
static MIRROR_AT: AtomicI64 = AtomicI64::new(-1);

extern "C" fn mirror_l() {
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let v = match send_queuing_message(q, &[0xA0; 4], 2_000 * MS) {
        Ok(()) => 0,
        Err(e) => 100 + e as i32,
    };
    MIRROR_AT.store(get_time(), Ordering::Release);
    MIRROR_GOT.store(v, Ordering::Release);
    idle_forever();
}

/// `mirror-src`: QOUT (PRIORITY) is full and l (priority 10) waits to send 0xA0; SD takes one
/// message (step 1), and the controller (priority 20), which has not let l run since, sends
/// 0xB0 with a time-out: the room was l's, so the controller times out, l returns NO_ERROR,
/// and SD gets 0xA0 after the 8 of the fill (step 2, checked by `mirror-dst`).
extern "C" fn mirror_src_ctl() {
    use ApexError::*;
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let ask = get_sampling_port_id("ASK").expect("ASK");
    let done = get_sampling_port_id("DONE").expect("DONE");
    let filled = (0..8u8).all(|k| send_queuing_message(q, &[k; 4], 0).is_ok());
    start(get_process_id("l").expect("l")).expect("start l");
    let lined = within_5s(|| nb_and_waiting(q) == Ok((8, 1)));
    let stepped = step_busily(done, ask, &[1]);
    let call = get_time();
    // The status call sends l's message in its place (the port full again, l out of the
    // line), and l is READY before it runs (before session 34 it showed WAITING).
    let status = nb_and_waiting(q);
    let ready_l = testpart_common::state(get_process_id("l").expect("l"));
    let mine = send_queuing_message(q, &[0xB0; 4], 300 * MS);
    let got = || MIRROR_GOT.load(Ordering::Acquire);
    let returned = within_5s(|| got() >= 0);
    let fresh = not_run_before("l", call, MIRROR_AT.load(Ordering::Acquire));
    expect_dbg(
        "PRIORITY: a later higher-priority send times out, the waiting sender's message is sent \
         (READY before it runs)",
        filled
            && lined
            && stepped
            && status == Ok((8, 0))
            && ready_l == ProcessState::Ready
            && mine == Err(TimedOut)
            && returned
            && fresh
            && got() == 0,
        (filled, lined, stepped, status, ready_l, mine, fresh, got()),
    );
    write_sampling_message(done, &[2]).expect("DONE");
    out("END mirror-src");
    idle_forever();
}

/// `mirror-dst`: takes one message at step 1, the rest at step 2.
extern "C" fn mirror_dst_process() {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let ask = get_sampling_port_id("ASK").expect("ASK");
    let done = get_sampling_port_id("DONE").expect("DONE");
    let mut buf = [0u8; 8];
    await_sampling(done, &[1]);
    let r = receive_queuing_message(q, &mut buf, 5_000 * MS);
    let mut got = vec![tag4(r, &buf)];
    write_sampling_message(ask, &[1]).expect("ASK");
    await_sampling(done, &[2]);
    for _ in 0..8 {
        let r = receive_queuing_message(q, &mut buf, 5_000 * MS);
        got.push(tag4(r, &buf));
    }
    let more = receive_queuing_message(q, &mut buf, 0);
    let want: Vec<i32> = (0..8).chain([0xA0]).collect();
    expect_dbg(
        "the 8 of the fill, then the waiting sender's message, and no more",
        got == want && more == Err(ApexError::NotAvailable),
        (&got, more),
    );
    out("END mirror-dst");
    idle_forever();
}

// ------------------------- an expired waiter that cannot be served in its place

/// The first (r1 / s1) and the second (r2 / s2) of `expired-dst` / `expired-src`.
static EXPIRED_PIDS: OnceLock<(ProcessId, ProcessId)> = OnceLock::new();
/// What they got (as [`tag4`]; a sender 0 for NO_ERROR), or -1 (not returned yet).
static EXPIRED_GOT: [AtomicI32; 2] = [const { AtomicI32::new(-1) }; 2];
/// When they returned (`get_time`), or -1.
static EXPIRED_AT: [AtomicI64; 2] = [const { AtomicI64::new(-1) }; 2];
/// The first's time-out: the message (or room) comes well before it.
const EXPIRED_FIRST: SystemTime = 1_000 * MS;
/// The second's: it must get the message (or room) at the first's time-out, not time out.
const EXPIRED_SECOND: SystemTime = 3_000 * MS;

fn expired_done(i: usize, v: i32) -> ! {
    EXPIRED_AT[i].store(get_time(), Ordering::Release);
    EXPIRED_GOT[i].store(v, Ordering::Release);
    idle_forever();
}

/// r1: a buffer shorter than QIN's largest message, so it cannot be handed one in its place.
extern "C" fn expired_r1() {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let mut buf = [0u8; 4];
    let r = receive_queuing_message(q, &mut buf, EXPIRED_FIRST);
    expired_done(0, tag4(r, &buf));
}

extern "C" fn expired_r2() {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let mut buf = [0u8; 8];
    let r = receive_queuing_message(q, &mut buf, EXPIRED_SECOND);
    expired_done(1, tag4(r, &buf));
}

/// Start `first`, let it wait on `q`, SUSPEND it, then start `second` behind it; return whether
/// both waited in line (`nb` messages queued meanwhile).
fn expired_line_up(q: QueuingPortId, nb: u32, first: ProcessId, second: ProcessId) -> bool {
    let waiting = |n: u32| nb_and_waiting(q) == Ok((nb, n));
    start(first).expect("start the first");
    let ok = within_5s(|| waiting(1));
    suspend(first).expect("suspend the first");
    start(second).expect("start the second");
    ok && within_5s(|| waiting(2))
}

/// `expired-dst` (tests/ports/serve.xml, with `serve-src`): r1 (a 4-byte buffer, 1 s) waits on
/// QIN (FIFO, largest message 8) and is SUSPENDed; r2 (8 bytes, 3 s) waits behind it; one
/// message comes well before r1's time-out. Until then it is r1's: the status shows it queued
/// with 2 waiting, a TIME_OUT 0 receive answers NOT_AVAILABLE. At r1's time-out r1 leaves the
/// line (the first look after it takes it out: the deadline monitor's since session 31, r2's
/// 50 ms check before) and r2 gets the message; r1, resumed, returns TIMED_OUT.
extern "C" fn expired_dst_ctl() {
    use ApexError::*;
    let q = get_queuing_port_id("QIN").expect("QIN");
    let ask = get_sampling_port_id("ASK").expect("ASK");
    let done = get_sampling_port_id("DONE").expect("DONE");
    let (r1, r2) = *EXPIRED_PIDS.get().expect("set at init");
    let got = |i: usize| EXPIRED_GOT[i].load(Ordering::Acquire);
    let ms = |t: SystemTime| t / MS;
    let t0 = get_time();
    let lined = expired_line_up(q, 0, r1, r2);
    expect(
        "r1 (a buffer shorter than the largest message) waits, suspended, and r2 behind it",
        lined,
        "not 2 waiting",
    );
    write_sampling_message(ask, &[1, 1, 0x30]).expect("ASK");
    await_sampling(done, &[1]);
    // The message reaches QIN (a two-sided manager, a socket).
    let _ = timed_wait(100 * MS);
    let status = nb_and_waiting(q);
    let mut buf = [0u8; 8];
    let look = receive_queuing_message(q, &mut buf, 0);
    let at = get_time() - t0;
    expect_dbg(
        "before r1's time-out the message is queued for it: status {1, 2}, TIME_OUT 0 NOT_AVAILABLE",
        at < EXPIRED_FIRST && status == Ok((1, 2)) && look == Err(NotAvailable),
        (ms(at), status, look),
    );
    let r2_done = within_5s(|| got(1) >= 0);
    let when = EXPIRED_AT[1].load(Ordering::Acquire) - t0;
    expect_dbg(
        "at r1's time-out r2 gets the message (r1 suspended, not returned)",
        r2_done && got(1) == 0x30 && got(0) == -1,
        (got(0), got(1), ms(when)),
    );
    out(&format!("INFO r2 returned {} ms in", ms(when)));
    let after = nb_and_waiting(q);
    expect_dbg(
        "then QIN holds nothing and nobody waits",
        after == Ok((0, 0)),
        after,
    );
    resume(r1).expect("resume r1");
    let r1_done = within_5s(|| got(0) >= 0);
    expect_dbg(
        "resumed, r1 returns TIMED_OUT",
        r1_done && got(0) == 100 + TimedOut as i32,
        got(0),
    );
    check(
        "then QIN is empty",
        receive_queuing_message(q, &mut buf, 0),
        Err(NotAvailable),
    );
    out("END expired-dst");
    idle_forever();
}

/// s1: a batch send (SEND_QUEUING_MESSAGES), which is never sent in its place.
extern "C" fn expired_s1() {
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let m = [0xC0u8; 4];
    let v = match send_queuing_messages(q, &[&m], EXPIRED_FIRST) {
        Ok(1) => 0,
        Ok(n) => 50 + n as i32,
        Err(e) => 100 + e as i32,
    };
    expired_done(0, v);
}

extern "C" fn expired_s2() {
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let v = match send_queuing_message(q, &[0xA0; 4], EXPIRED_SECOND) {
        Ok(()) => 0,
        Err(e) => 100 + e as i32,
    };
    expired_done(1, v);
}

/// `expired-src` (tests/ports/serve.xml, with `mirror-dst`): the senders' mirror of
/// `expired-dst`. QOUT (FIFO, 8) is full; s1 (a batch send, 1 s) waits and is SUSPENDed, s2
/// (3 s) waits behind it; `mirror-dst` takes one message well before s1's time-out. Until then
/// the room is s1's (a TIME_OUT 0 send answers NOT_AVAILABLE); at s1's time-out s2 sends, and s1,
/// resumed, returns TIMED_OUT: `mirror-dst` gets the 8 of the fill, then s2's 0xA0, and no more.
extern "C" fn expired_src_ctl() {
    use ApexError::*;
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let ask = get_sampling_port_id("ASK").expect("ASK");
    let done = get_sampling_port_id("DONE").expect("DONE");
    let (s1, s2) = *EXPIRED_PIDS.get().expect("set at init");
    let got = |i: usize| EXPIRED_GOT[i].load(Ordering::Acquire);
    let ms = |t: SystemTime| t / MS;
    let filled = (0..8u8).all(|k| send_queuing_message(q, &[k; 4], 0).is_ok());
    let t0 = get_time();
    let lined = expired_line_up(q, 8, s1, s2);
    expect(
        "QOUT full, s1 (a batch send) waits, suspended, and s2 behind it",
        filled && lined,
        "not full, or not 2 waiting",
    );
    write_sampling_message(done, &[1]).expect("DONE");
    await_sampling(ask, &[1]);
    // The room reaches QOUT (a two-sided manager, a socket's ack).
    let _ = timed_wait(100 * MS);
    let status = nb_and_waiting(q);
    let look = send_queuing_message(q, &[0xB0; 4], 0);
    let at = get_time() - t0;
    expect_dbg(
        "before s1's time-out the room is its: status {7, 2}, TIME_OUT 0 NOT_AVAILABLE",
        at < EXPIRED_FIRST && status == Ok((7, 2)) && look == Err(NotAvailable),
        (ms(at), status, look),
    );
    let s2_done = within_5s(|| got(1) >= 0);
    let when = EXPIRED_AT[1].load(Ordering::Acquire) - t0;
    expect_dbg(
        "at s1's time-out s2 sends (s1 suspended, not returned)",
        s2_done && got(1) == 0 && got(0) == -1,
        (got(0), got(1), ms(when)),
    );
    out(&format!("INFO s2 returned {} ms in", ms(when)));
    resume(s1).expect("resume s1");
    let s1_done = within_5s(|| got(0) >= 0);
    expect_dbg(
        "resumed, s1 returns TIMED_OUT",
        s1_done && got(0) == 100 + TimedOut as i32,
        got(0),
    );
    write_sampling_message(done, &[2]).expect("DONE");
    out("END expired-src");
    idle_forever();
}

// ------------------------- a time-out decided at the deadline, not at the next look

/// r1 / r2 of `late-dst`, s1 of `late-src`.
static LATE_PIDS: OnceLock<(ProcessId, ProcessId)> = OnceLock::new();
/// r3 / r4 of `late-dst`.
static LATE_PIDS2: OnceLock<(ProcessId, ProcessId)> = OnceLock::new();
/// `late-dst priority`: QIN has the PRIORITY discipline.
static LATE_PRIORITY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// What r1..r5 (s1) got (as [`tag4`]; a sender 0 for NO_ERROR), or -1 (not returned yet).
static LATE_GOT: [AtomicI32; 5] = [const { AtomicI32::new(-1) }; 5];
/// When they returned (`get_time`), or -1.
static LATE_AT: [AtomicI64; 5] = [const { AtomicI64::new(-1) }; 5];
/// r5 of `late-dst`, and how often it started.
static LATE_R5: OnceLock<ProcessId> = OnceLock::new();
static LATE_R5_RUNS: AtomicI32 = AtomicI32::new(0);
/// Their time-out. The message (or room) comes 300 ms after it.
const LATE_TIMEOUT: SystemTime = 500 * MS;

fn late_done(i: usize, v: i32) -> ! {
    LATE_AT[i].store(get_time(), Ordering::Release);
    LATE_GOT[i].store(v, Ordering::Release);
    idle_forever();
}

fn late_receive(i: usize) -> ! {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let mut buf = [0u8; 8];
    let r = receive_queuing_message(q, &mut buf, LATE_TIMEOUT);
    late_done(i, tag4(r, &buf));
}

extern "C" fn late_r1() {
    late_receive(0)
}

extern "C" fn late_r2() {
    late_receive(1)
}

/// r3: the head of the third case, without a time-out.
extern "C" fn late_r3() {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let mut buf = [0u8; 8];
    let r = receive_queuing_message(q, &mut buf, INFINITE_TIME_VALUE);
    late_done(2, tag4(r, &buf));
}

extern "C" fn late_r4() {
    late_receive(3)
}

/// r5: waits 500 ms the first time it runs (and is STOPped while it waits), 3 s the second.
extern "C" fn late_r5() {
    let first = LATE_R5_RUNS.fetch_add(1, Ordering::AcqRel) == 0;
    let q = get_queuing_port_id("QIN").expect("QIN");
    let mut buf = [0u8; 8];
    let t = if first { LATE_TIMEOUT } else { 3_000 * MS };
    let r = receive_queuing_message(q, &mut buf, t);
    late_done(4, tag4(r, &buf));
}

/// s1: one message on the full QOUT (it can be sent in its place).
extern "C" fn late_s1() {
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let v = match send_queuing_message(q, &[0xC0; 4], LATE_TIMEOUT) {
        Ok(()) => 0,
        Err(e) => 100 + e as i32,
    };
    late_done(0, v);
}

/// `late-dst` (tests/ports/serve.xml, with `serve-src`): ARINC 653 decides a time-out at the
/// deadline, so a message that comes after a waiting receiver's time-out is not its, even when
/// the receiver has not run since (`ports::look_at_expired_wait`). Four cases, nothing calling
/// QIN between the deadline and the message (such a call took the expired waiter out of the
/// line before too). Each message comes 300 ms after the waiter's deadline, timed from when the
/// waiter was seen in the line (it joined before that):
/// 1. r1 (500 ms) waits on QIN and is SUSPENDed; 800 ms in, a message comes; r1, resumed,
///    returns TIMED_OUT and the message stays queued (before: r1 returned it).
/// 2. r2 (500 ms) waits and the controller (priority 20) keeps it off the CPU, spinning, past
///    its deadline and until a message has come; r2 then runs and returns TIMED_OUT, and the
///    message stays queued (before: r2 returned it).
/// 3. r3 (no time-out) waits at the head and r4 (500 ms) behind it, SUSPENDed; 800 ms in, two
///    messages come: r3 gets the first, and r4, resumed, returns TIMED_OUT, the second staying
///    queued (a waiter behind the head taken out at its deadline; before: r4 returned it).
/// 4. r5 waits (500 ms) and is STOPped in the line, then STARTed again at once: its new wait
///    (3 s) is not ended at the old one's deadline (the old wait's word for the deadline
///    monitor is another's now): a message that comes 300 ms after that deadline is its.
///
/// With the argument `priority`, QIN has the PRIORITY discipline, and in the third case r4
/// joins first and r3, of priority 12, joins ahead of it.
extern "C" fn late_dst_ctl() {
    use ApexError::*;
    let q = get_queuing_port_id("QIN").expect("QIN");
    let ask = get_sampling_port_id("ASK").expect("ASK");
    let done = get_sampling_port_id("DONE").expect("DONE");
    let (r1, r2) = *LATE_PIDS.get().expect("set at init");
    let got = |i: usize| LATE_GOT[i].load(Ordering::Acquire);
    let waiting = || nb_and_waiting(q) == Ok((0, 1));
    let mut buf = [0u8; 8];

    start(r1).expect("start r1");
    let lined = within_5s(waiting);
    let t0 = get_time();
    let suspended = suspend(r1);
    // Past r1's deadline, with no call on QIN.
    let _ = timed_wait(LATE_TIMEOUT + 300 * MS - (get_time() - t0));
    write_sampling_message(ask, &[1, 1, 0x50]).expect("ASK");
    await_sampling(done, &[1]);
    // The message reaches QIN (a two-sided manager, a socket).
    let _ = timed_wait(100 * MS);
    let before = got(0);
    let resumed = resume(r1);
    let returned = within_5s(|| got(0) >= 0);
    expect_dbg(
        "a suspended receiver whose time-out passed before a message came returns TIMED_OUT \
         when resumed",
        lined
            && suspended.is_ok()
            && before == -1
            && resumed.is_ok()
            && returned
            && got(0) == 100 + TimedOut as i32,
        (lined, suspended, before, resumed, got(0)),
    );
    let left = receive_queuing_message(q, &mut buf, 0).map(|n| (n, buf[0]));
    expect_dbg(
        "the message that came after its time-out stays queued",
        left == Ok((4, 0x50)),
        left,
    );

    start(r2).expect("start r2");
    let lined = within_5s(waiting);
    let t1 = get_time();
    // From here on the CPU is the controller's (r2 has priority 10) until r2's deadline has
    // passed and a message has come.
    busy(LATE_TIMEOUT + 300 * MS - (get_time() - t1));
    let stepped = step_busily(ask, done, &[2, 1, 0x60]);
    let call = get_time();
    let returned = within_5s(|| got(1) >= 0);
    let fresh = not_run_before("r2", call, LATE_AT[1].load(Ordering::Acquire));
    expect_dbg(
        "a receiver kept off the CPU past its time-out, until a message came, returns TIMED_OUT",
        lined && stepped && returned && fresh && got(1) == 100 + TimedOut as i32,
        (lined, stepped, fresh, got(1)),
    );
    let left = receive_queuing_message(q, &mut buf, 0).map(|n| (n, buf[0]));
    expect_dbg("that message stays queued too", left == Ok((4, 0x60)), left);

    let (r3, r4) = *LATE_PIDS2.get().expect("set at init");
    // PRIORITY: r4 joins first and r3 (priority 12) joins ahead of it.
    let (first, second) = if LATE_PRIORITY.load(Ordering::Acquire) {
        (r4, r3)
    } else {
        (r3, r4)
    };
    start(first).expect("start");
    let lined = within_5s(waiting);
    start(second).expect("start");
    let lined = lined && within_5s(|| nb_and_waiting(q) == Ok((0, 2)));
    let t2 = get_time();
    let suspended = suspend(r4);
    let _ = timed_wait(LATE_TIMEOUT + 300 * MS - (get_time() - t2));
    write_sampling_message(ask, &[3, 2, 0x70]).expect("ASK");
    await_sampling(done, &[3]);
    let _ = timed_wait(100 * MS);
    let head = within_5s(|| got(2) >= 0);
    let resumed = resume(r4);
    let returned = within_5s(|| got(3) >= 0);
    expect_dbg(
        "a suspended receiver behind the head, past its time-out, returns TIMED_OUT when \
         resumed; the head got the first message",
        lined
            && suspended.is_ok()
            && head
            && got(2) == 0x70
            && resumed.is_ok()
            && returned
            && got(3) == 100 + TimedOut as i32,
        (lined, suspended, got(2), resumed, got(3)),
    );
    let left = receive_queuing_message(q, &mut buf, 0).map(|n| (n, buf[0]));
    expect_dbg(
        "the second message stays queued",
        left == Ok((4, 0x71)),
        left,
    );

    let r5 = *LATE_R5.get().expect("set at init");
    start(r5).expect("start r5");
    let lined = within_5s(waiting);
    let t3 = get_time();
    let stopped = stop(r5);
    let restarted = start(r5);
    let relined = within_5s(|| LATE_R5_RUNS.load(Ordering::Acquire) == 2 && waiting());
    let _ = timed_wait(LATE_TIMEOUT + 300 * MS - (get_time() - t3));
    let before = got(4);
    write_sampling_message(ask, &[4, 1, 0x80]).expect("ASK");
    await_sampling(done, &[4]);
    let returned = within_5s(|| got(4) >= 0);
    expect_dbg(
        "a receiver STOPped in the line and STARTed again waits anew: a message that comes \
         after its first wait's deadline is its second wait's",
        lined
            && stopped.is_ok()
            && restarted.is_ok()
            && relined
            && before == -1
            && returned
            && got(4) == 0x80,
        (lined, stopped, restarted, relined, before, got(4)),
    );
    out("END late-dst");
    idle_forever();
}

/// `late-src` (tests/ports/serve.xml, with `mirror-dst`): the senders' mirror of the first case
/// of `late-dst`. QOUT (FIFO, 8) is full; s1 (500 ms) waits for room and is SUSPENDed; 800 ms
/// in, `mirror-dst` takes one message. s1, resumed, returns TIMED_OUT and its message is not
/// sent; the room is still there for a TIME_OUT 0 send of 0xA0, so `mirror-dst` gets the 8 of
/// the fill, then 0xA0, and no more (before: s1 sent 0xC0 into the room that came after its
/// time-out, and the 0xA0 send answered NOT_AVAILABLE).
extern "C" fn late_src_ctl() {
    use ApexError::*;
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let ask = get_sampling_port_id("ASK").expect("ASK");
    let done = get_sampling_port_id("DONE").expect("DONE");
    let (s1, _) = *LATE_PIDS.get().expect("set at init");
    let got = |i: usize| LATE_GOT[i].load(Ordering::Acquire);
    let filled = (0..8u8).all(|k| send_queuing_message(q, &[k; 4], 0).is_ok());
    start(s1).expect("start s1");
    let lined = within_5s(|| nb_and_waiting(q) == Ok((8, 1)));
    let t0 = get_time();
    let suspended = suspend(s1);
    let _ = timed_wait(LATE_TIMEOUT + 300 * MS - (get_time() - t0));
    write_sampling_message(done, &[1]).expect("DONE");
    await_sampling(ask, &[1]);
    // The room reaches QOUT (a two-sided manager, a socket's ack).
    let _ = timed_wait(100 * MS);
    let before = got(0);
    let resumed = resume(s1);
    let returned = within_5s(|| got(0) >= 0);
    expect_dbg(
        "a suspended sender whose time-out passed before room came returns TIMED_OUT when \
         resumed",
        filled
            && lined
            && suspended.is_ok()
            && before == -1
            && resumed.is_ok()
            && returned
            && got(0) == 100 + TimedOut as i32,
        (filled, lined, suspended, before, resumed, got(0)),
    );
    check(
        "the room that came after its time-out is still there",
        send_queuing_message(q, &[0xA0; 4], 0),
        Ok(()),
    );
    write_sampling_message(done, &[2]).expect("DONE");
    out("END late-src");
    idle_forever();
}

// ------------------------------------------- large sampling ports in a partition's memory

/// `bigsamp-src` (tests/ports/sampling_memory.xml.in): creates two source sampling ports at
/// initialisation, the first of half its memory (a source keeps no private buffer), then
/// writes "mid" on MID.
extern "C" fn bigsamp_src_process() {
    let mid = get_sampling_port_id("MID").expect("MID");
    check(
        "write on the smaller source",
        write_sampling_message(mid, b"mid"),
        Ok(()),
    );
    out("END bigsamp-src");
    idle_forever();
}

/// `bigsamp-dst`: reads "mid" on the destination MID it created at initialisation.
extern "C" fn bigsamp_dst_process() {
    let mid = get_sampling_port_id("MID").expect("MID");
    let mut buf = vec![0u8; 16];
    let got = within_5s(|| {
        matches!(read_sampling_message(mid, &mut buf), Ok((3, _))) && &buf[..3] == b"mid"
    });
    expect(
        "the smaller destination reads the source's message",
        got,
        "",
    );
    out("END bigsamp-dst");
    idle_forever();
}

// --------------------------------------------------------------- waiting with the memory full

/// The queuing ports' maximum message size in `tests/ports/memory.xml`: above the sizes glibc
/// keeps in per-thread caches, so a copy comes from the (one) arena or not at all.
const MEM_MAX: usize = 2048;

/// One malloc arena for the whole partition (set in `main`, before any thread is made): the
/// memory the controlling process fills is then the memory every process allocates from. With
/// an arena per thread, another thread's arena could still hold free blocks.
fn one_arena() {
    // SAFETY: mallopt has no preconditions; no other thread runs yet.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) };
}

/// Wait until sampling port `port` holds a step of at least `k` (polling every millisecond, at
/// most 10 s); allocates nothing.
fn await_step(port: SamplingPortId, k: u8) -> bool {
    let mut buf = [0u8; 8];
    for _ in 0..10_000 {
        if matches!(read_sampling_message(port, &mut buf), Ok((n, _)) if n >= 1 && buf[0] >= k) {
            return true;
        }
        let _ = timed_wait(MS);
    }
    false
}

/// What a receive of a message `[tag; MEM_MAX]` gave: `tag` if the message is whole, else
/// 1000 + its length, or 100 + the error's index.
fn tag_of(r: ApexResult<usize>, buf: &[u8]) -> i32 {
    match r {
        Ok(n) if n == MEM_MAX && buf.iter().all(|&b| b == buf[0]) => i32::from(buf[0]),
        Ok(n) => 1000 + n as i32,
        Err(e) => 100 + e as i32,
    }
}

/// `(NB_MESSAGE, WAITING_PROCESSES)` of queuing port `q`.
fn nb_and_waiting(q: QueuingPortId) -> ApexResult<(u32, u32)> {
    get_queuing_port_status(q).map(|st| (st.nb_message, st.waiting_processes))
}

/// What r1 or s1 got: -1 (not returned yet), else as [`tag_of`] (s1: 0 for NO_ERROR).
static MEM_GOT: AtomicI32 = AtomicI32::new(-1);

/// CREATE_QUEUING_PORT of `name` with the partition's memory full: INVALID_CONFIG (insufficient
/// storage for its waiting machinery), and the partition goes on; with the memory back, the
/// port is created.
fn mem_create_port(name: &str, direction: PortDirection) {
    let mut blocks = Vec::with_capacity(1 << 14);
    let reserved = exhaust_memory(&mut blocks);
    let full = memory_full();
    let disc = QueuingDiscipline::Fifo;
    let r = create_queuing_port(name, MEM_MAX as u32, 4, direction, disc);
    drop(blocks);
    expect_dbg(
        "create_queuing_port with the memory full: INVALID_CONFIG",
        full && reserved > 0 && r == Err(ApexError::InvalidConfig),
        (full, reserved, r),
    );
    check(
        "create_queuing_port with the memory back",
        create_queuing_port(name, MEM_MAX as u32, 4, direction, disc),
        Ok(()),
    );
}

/// r1 of `mem-dst`: released by "go" (the memory is full then), receives on QIN.
extern "C" fn mem_receiver() {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let go = get_semaphore_id("go").expect("go");
    let mut buf = [0u8; MEM_MAX];
    let _ = wait_semaphore(go, INFINITE_TIME_VALUE);
    let r = receive_queuing_message(q, &mut buf, 20_000 * MS);
    MEM_GOT.store(tag_of(r, &buf), Ordering::Release);
    idle_forever();
}

/// s1 of `mem-src`: released by "go" (the memory is full then), sends message 7 on QOUT.
extern "C" fn mem_sender() {
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let go = get_semaphore_id("go").expect("go");
    let _ = wait_semaphore(go, INFINITE_TIME_VALUE);
    let r = send_queuing_message(q, &[7; MEM_MAX], 20_000 * MS);
    MEM_GOT.store(r.map_or_else(|e| 100 + e as i32, |()| 0), Ordering::Release);
    idle_forever();
}

/// Wait (at most 5 s) until semaphore "go" has a waiter; return its id and whether it has.
fn mem_go() -> (SemaphoreId, bool) {
    let go = get_semaphore_id("go").expect("go");
    let waits = within_5s(|| get_semaphore_status(go).map(|s| s.waiting_processes) == Ok(1));
    (go, waits)
}

/// `mem-dst`: with the partition's memory full, a receive on the empty QIN times out, a
/// waiting receive is released by MS's message, and a receiver (r1) suspended while it waits
/// keeps its place: no buffer can be had to hand it the message in its place, so the message
/// stays in the channel for it (a TIME_OUT 0 receive does not take it), and r1, resumed, returns
/// it. Then MD takes messages while MS's senders wait (see `mem_src_ctl`), and finally gets
/// the rest, each once, in order. Before, the first wait aborted the partition (an allocation
/// failure on the waiting path).
extern "C" fn mem_dst_ctl() {
    use ApexError::*;
    let q = get_queuing_port_id("QIN").expect("QIN");
    let s2d = get_sampling_port_id("S2D").expect("S2D");
    let d2s = get_sampling_port_id("D2S").expect("D2S");
    let r1 = get_process_id("r1").expect("r1");
    let (go, go_waits) = mem_go();
    let got = || MEM_GOT.load(Ordering::Acquire);
    let mut buf = [0u8; MEM_MAX];
    let mut blocks = Vec::with_capacity(1 << 14);

    // From here until the blocks are dropped: no allocation (the results are plain values; no
    // GET_PROCESS_STATUS either, whose answer holds a copy of the process's name).
    let reserved = exhaust_memory(&mut blocks);
    let was_full = memory_full();
    let timed = receive_queuing_message(q, &mut buf, 10 * MS);
    // MS sends message 0 50 ms after step 1.
    let _ = write_sampling_message(d2s, &[1]);
    let r = receive_queuing_message(q, &mut buf, 5_000 * MS);
    let released = tag_of(r, &buf);
    // r1 waits and is suspended; MS sends message 1 at step 2.
    let _ = signal_semaphore(go);
    let lined_up = within_5s(|| nb_and_waiting(q) == Ok((0, 1)));
    let suspended = suspend(r1);
    let _ = write_sampling_message(d2s, &[2]);
    let arrived = await_step(s2d, 2) && within_5s(|| nb_and_waiting(q) == Ok((1, 1)));
    // A call on the port tries to hand the message to the suspended receiver.
    let look = receive_queuing_message(q, &mut buf, 0);
    let _ = timed_wait(50 * MS);
    let kept = nb_and_waiting(q);
    let r1_before = got();
    let full_then = memory_full();
    let resumed = resume(r1);
    let r1_done = within_5s(|| got() >= 0);
    let r1_got = got();
    // Nothing more (udp and tcp: finding the queue empty returns MS its credit at once).
    let empty = receive_queuing_message(q, &mut buf, 0);
    // MS fills the queue (messages 2..5) and waits to send 6: take 2.
    let _ = write_sampling_message(d2s, &[3]);
    let filled = await_step(s2d, 3);
    let _ = timed_wait(50 * MS);
    let r = receive_queuing_message(q, &mut buf, 0);
    let second = tag_of(r, &buf);
    // MS's s1 waits to send 7 and is suspended: take 3.
    let s1_suspended = await_step(s2d, 4);
    let r = receive_queuing_message(q, &mut buf, 0);
    let third = tag_of(r, &buf);
    let _ = write_sampling_message(d2s, &[4]);
    let src_done = await_step(s2d, 5);
    let mut rest = [-1i32; 5];
    for slot in &mut rest {
        let r = receive_queuing_message(q, &mut buf, 0);
        *slot = tag_of(r, &buf);
    }
    let still_full = memory_full();
    let blocks_kept = blocks.len();
    drop(blocks);

    out(&format!(
        "INFO memory full: {reserved} bytes reserved in {blocks_kept} blocks (full {was_full}, \
         {full_then}, still {still_full})"
    ));
    expect_dbg(
        "the partition's memory is full while the waits go on",
        go_waits && was_full && full_then && still_full && reserved > 0,
        (go_waits, was_full, full_then, still_full, reserved),
    );
    check(
        "receive_queuing_message on an empty port times out with the memory full",
        timed,
        Err(TimedOut),
    );
    expect_dbg(
        "a waiting receive released by the other partition gets its message",
        released == 0,
        released,
    );
    expect_dbg(
        "r1 waits in line, is suspended, and message 1 arrives",
        lined_up && suspended.is_ok() && arrived,
        (lined_up, suspended, arrived),
    );
    check(
        "a TIME_OUT 0 receive does not take the suspended receiver's message",
        look,
        Err(NotAvailable),
    );
    expect_dbg(
        "no buffer to be had: the message stays in the channel for the suspended receiver",
        kept == Ok((1, 1)) && r1_before == -1,
        (kept, r1_before),
    );
    expect_dbg(
        "resumed, the receiver returns its message whole",
        resumed.is_ok() && r1_done && r1_got == 1,
        (resumed, r1_got),
    );
    check("then QIN is empty", empty, Err(NotAvailable));
    expect_dbg(
        "messages 2 and 3 taken while the sender partition waits",
        filled && second == 2 && s1_suspended && third == 3,
        (filled, second, s1_suspended, third),
    );
    let want = [4, 5, 6, 7, 100 + NotAvailable as i32];
    expect_dbg(
        "then messages 4 to 7, each once, in order, and no more",
        src_done && rest == want,
        (src_done, rest),
    );
    out("END mem-dst");
    idle_forever();
}

/// `mem-src`: with the partition's memory full, a send to the full QOUT times out, a waiting
/// send is released when MD takes a message, and a sender (s1) suspended while it waits keeps
/// its place: its message cannot be copied to be sent in its place, so the room MD makes stays
/// for it (a TIME_OUT 0 send does not take it), and s1, resumed, sends. Before, the first wait
/// aborted the partition.
extern "C" fn mem_src_ctl() {
    use ApexError::*;
    let q = get_queuing_port_id("QOUT").expect("QOUT");
    let s2d = get_sampling_port_id("S2D").expect("S2D");
    let d2s = get_sampling_port_id("D2S").expect("D2S");
    let s1 = get_process_id("s1").expect("s1");
    let (go, go_waits) = mem_go();
    let got = || MEM_GOT.load(Ordering::Acquire);
    let mut blocks = Vec::with_capacity(1 << 14);

    // From here until the blocks are dropped: no allocation (the results are plain values; no
    // GET_PROCESS_STATUS either, whose answer holds a copy of the process's name).
    let reserved = exhaust_memory(&mut blocks);
    let was_full = memory_full();
    // Message 0 for MD's waiting receive, message 1 for its suspended receiver.
    let step1 = await_step(d2s, 1);
    let _ = timed_wait(50 * MS);
    let sent0 = send_queuing_message(q, &[0; MEM_MAX], 0);
    let step2 = await_step(d2s, 2);
    let sent1 = send_queuing_message(q, &[1; MEM_MAX], 0);
    let _ = write_sampling_message(s2d, &[2]);
    // Once MD took both: fill QOUT (2..5), then wait to send 6.
    let step3 = await_step(d2s, 3);
    let mut filled = [Ok(()); 4];
    for (k, r) in filled.iter_mut().enumerate() {
        *r = send_queuing_message(q, &[k as u8 + 2; MEM_MAX], 0);
    }
    let timed = send_queuing_message(q, &[6; MEM_MAX], 10 * MS);
    let _ = write_sampling_message(s2d, &[3]);
    let released = send_queuing_message(q, &[6; MEM_MAX], 5_000 * MS);
    // s1 waits to send 7 and is suspended; MD then takes a message.
    let _ = signal_semaphore(go);
    let lined_up = within_5s(|| nb_and_waiting(q) == Ok((4, 1)));
    let suspended = suspend(s1);
    let _ = write_sampling_message(s2d, &[4]);
    let room = await_step(d2s, 4) && within_5s(|| nb_and_waiting(q) == Ok((3, 1)));
    // A call on the port tries to send s1's message in its place.
    let look = send_queuing_message(q, &[8; MEM_MAX], 0);
    let _ = timed_wait(50 * MS);
    let kept = nb_and_waiting(q);
    let s1_before = got();
    let full_then = memory_full();
    let resumed = resume(s1);
    let s1_done = within_5s(|| got() >= 0);
    let s1_got = got();
    let after = nb_and_waiting(q);
    let _ = write_sampling_message(s2d, &[5]);
    let still_full = memory_full();
    let blocks_kept = blocks.len();
    drop(blocks);

    out(&format!(
        "INFO memory full: {reserved} bytes reserved in {blocks_kept} blocks (full {was_full}, \
         {full_then}, still {still_full})"
    ));
    expect_dbg(
        "the partition's memory is full while the waits go on",
        go_waits && was_full && full_then && still_full && reserved > 0,
        (go_waits, was_full, full_then, still_full, reserved),
    );
    expect_dbg(
        "messages 0 and 1 sent to MD's receivers",
        step1 && sent0.is_ok() && step2 && sent1.is_ok(),
        (step1, sent0, step2, sent1),
    );
    expect_dbg(
        "QOUT filled",
        step3 && filled.iter().all(Result::is_ok),
        (step3, filled),
    );
    check(
        "send_queuing_message to a full port times out with the memory full",
        timed,
        Err(TimedOut),
    );
    check(
        "a waiting send released by the other partition sends",
        released,
        Ok(()),
    );
    expect_dbg(
        "s1 waits in line, is suspended, and MD makes room",
        lined_up && suspended.is_ok() && room,
        (lined_up, suspended, room),
    );
    check(
        "a TIME_OUT 0 send does not take the suspended sender's room",
        look,
        Err(NotAvailable),
    );
    expect_dbg(
        "no copy of its message to be had: the room stays for the suspended sender",
        kept == Ok((3, 1)) && s1_before == -1,
        (kept, s1_before),
    );
    expect_dbg(
        "resumed, the sender returns NO_ERROR and its message is queued",
        resumed.is_ok() && s1_done && s1_got == 0 && after == Ok((4, 0)),
        (resumed, s1_got, after),
    );
    out("END mem-src");
    idle_forever();
}

// --------------------------------------------------------------------- a waiter stopped in line

extern "C" fn stale_waiter() {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let mut buf = [0u8; 8];
    let r = receive_queuing_message(q, &mut buf, INFINITE_TIME_VALUE);
    out(&format!("FAIL the stopped waiter returned: {r:?}"));
    idle_forever();
}

extern "C" fn stale_check() {
    let q = get_queuing_port_id("QIN").expect("QIN");
    let s = get_sampling_port_id("RDY").expect("RDY");
    while get_queuing_port_status(q)
        .expect("status")
        .waiting_processes
        < 1
    {
        let _ = timed_wait(MS);
    }
    stop(get_process_id("w").expect("w")).expect("stop w");
    write_sampling_message(s, b"ready").expect("write ready");
    while get_queuing_port_status(q).expect("status").nb_message < 3 {
        let _ = timed_wait(MS);
    }
    let mut buf = [0u8; 8];
    let got = receive_queuing_message(q, &mut buf, 0);
    expect_dbg(
        "TIME_OUT 0 receives past a waiter stopped in line",
        got == Ok(4) && buf[0] == 0,
        (got, buf[0]),
    );
    lock_preemption().expect("lock");
    let got = receive_queuing_message(q, &mut buf, 10 * MS);
    unlock_preemption().expect("unlock");
    expect_dbg(
        "a time-out under the preemption lock receives a queued message",
        got == Ok(4) && buf[0] == 1,
        (got, buf[0]),
    );
    let got = receive_queuing_message(q, &mut buf, 0);
    expect_dbg(
        "the third message",
        got == Ok(4) && buf[0] == 2,
        (got, buf[0]),
    );
    out("END stale-dst");
    idle_forever();
}

// --------------------------------------------------------------------------------------- stamp

/// The message size of `tests/ports/stamp.xml` (32 MiB).
const STAMP_BIG: usize = 32 << 20;
/// D's refresh period in `tests/ports/stamp.xml`.
const STAMP_REFRESH: SystemTime = 5 * MS;
/// Process h of role `stamp` (l starts it).
static STAMP_H: OnceLock<ProcessId> = OnceLock::new();
/// How long h's 1-byte write took (ns; 0: not returned yet).
static STAMP_H_NS: AtomicI64 = AtomicI64::new(0);
/// How long l's 32 MiB write took (ns; 0: not returned yet).
static STAMP_L_NS: AtomicI64 = AtomicI64::new(0);

/// Process r (priority 20) of role `stamp`: waits on D for every message; h's (1 byte), read as
/// soon as it is there, must be VALID.
extern "C" fn stamp_reader() {
    let d = get_sampling_port_id("D").expect("D");
    let mut buf = vec![0u8; STAMP_BIG];
    let got = loop {
        match wait_sampling_message(d, INFINITE_TIME_VALUE, &mut buf) {
            Ok((1, v)) => break Ok(v),
            Ok(_) => {}
            Err(e) => break Err(e),
        }
    };
    // h returns from its write after this process read the message (it runs at a lower
    // priority on the same CPU).
    let mut h = STAMP_H_NS.load(Ordering::Acquire);
    for _ in 0..5_000 {
        if h != 0 {
            break;
        }
        let _ = timed_wait(MS);
        h = STAMP_H_NS.load(Ordering::Acquire);
    }
    let l = STAMP_L_NS.load(Ordering::Acquire);
    out(&format!(
        "INFO the 1-byte write took {} us, the 32 MiB write {} us",
        h / 1_000,
        l / 1_000
    ));
    expect(
        "the 1-byte write waited behind the 32 MiB write for longer than D's refresh period",
        h > STAMP_REFRESH,
        format!("it took {h} ns (the scenario did not happen: the test proves nothing)"),
    );
    expect_dbg(
        "a message read right after it was written is VALID (stamped when written into the \
         port, not when its write was called)",
        got == Ok(Validity::Valid),
        got,
    );
    out("END stamp");
    idle_forever();
}

/// Process l (priority 5) of role `stamp`: starts h 1 ms from now, then writes one 32 MiB
/// message (h's write waits for the port lock until this one is done).
extern "C" fn stamp_big_writer() {
    let s = get_sampling_port_id("S").expect("S");
    let msg = vec![0x5Au8; STAMP_BIG];
    let h = *STAMP_H.get().expect("set at init");
    delayed_start(h, MS).expect("DELAYED_START h");
    let t = get_time();
    write_sampling_message(s, &msg).expect("write 32 MiB");
    STAMP_L_NS.store((get_time() - t).max(1), Ordering::Release);
    idle_forever();
}

/// Process h (priority 10) of role `stamp`: writes one 1-byte message.
extern "C" fn stamp_small_writer() {
    let s = get_sampling_port_id("S").expect("S");
    let t = get_time();
    write_sampling_message(s, b"h").expect("write 1 byte");
    STAMP_H_NS.store((get_time() - t).max(1), Ordering::Release);
    idle_forever();
}

// ---------------------------------------------------------------------------------------- exec

/// Process "exec" of role `exec-child`: runs `sh -c 'ls /proc/self/fd; printenv PARTIX_PORT_FDS
/// PARTIX_CONFIG_FD PARTIX_CONFIG'`
/// and checks what the program inherited; then that the ports still work.
extern "C" fn exec_child_process() {
    use partix_runtime::channels::{inherited_ports_value, ENV_PORT_FDS, PORT_FD_BASE};
    use partix_runtime::executive::os::{CONFIG_FD_NUM, MODULE_FD_NUM, PARTITION_FD_NUM};
    use partix_runtime::partition::hm::{ENV_CONFIG, ENV_CONFIG_FD};
    let r = std::process::Command::new("sh")
        .args([
            "-c",
            "ls /proc/self/fd; echo ENV; printenv PARTIX_PORT_FDS PARTIX_CONFIG_FD PARTIX_CONFIG",
        ])
        .output();
    let out_text = match &r {
        Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
        Err(e) => {
            expect("sh runs", false, e);
            out("END exec-child");
            idle_forever();
        }
    };
    let (ls, env) = out_text.split_once("ENV\n").unwrap_or((&out_text, ""));
    let fds: Vec<i32> = ls.lines().filter_map(|l| l.trim().parse().ok()).collect();
    let rest: Vec<&str> = ls
        .lines()
        .filter(|l| l.trim().parse::<i32>().is_err())
        .chain(env.lines())
        .collect();
    out(&format!("INFO the child's descriptors: {fds:?}"));
    expect_dbg(
        "a program the partition runs inherits no port descriptor (>= 600)",
        fds.iter().all(|&fd| fd < PORT_FD_BASE),
        &fds,
    );
    expect_dbg(
        "a program the partition runs inherits neither the module nor the partition state descriptor",
        !fds.contains(&MODULE_FD_NUM) && !fds.contains(&PARTITION_FD_NUM),
        &fds,
    );
    expect_dbg(
        "a program the partition runs inherits no module configuration descriptor (502)",
        !fds.contains(&CONFIG_FD_NUM),
        &fds,
    );
    let vars = [ENV_PORT_FDS, ENV_CONFIG_FD, ENV_CONFIG].map(|k| (k, std::env::var_os(k)));
    expect_dbg(
        "a program the partition runs gets none of PARTIX_PORT_FDS, PARTIX_CONFIG_FD, PARTIX_CONFIG",
        rest.is_empty() && vars.iter().all(|(_, v)| v.is_none()),
        (&rest, &vars),
    );
    // The partition itself keeps them, close-on-exec.
    let mut own = vec![MODULE_FD_NUM, PARTITION_FD_NUM, CONFIG_FD_NUM];
    if let Some(v) = inherited_ports_value() {
        for p in partix_runtime::channels::decode_ports(v).expect("decode") {
            own.extend(p.fds.iter().map(|&(fd, _)| fd));
        }
    }
    let not_cloexec: Vec<(i32, i32)> = own
        .iter()
        .map(|&fd| {
            // SAFETY: F_GETFD reads the descriptor's flags; no memory is passed.
            (fd, unsafe { libc::fcntl(fd, libc::F_GETFD) })
        })
        .filter(|&(_, f)| f < 0 || f & libc::FD_CLOEXEC == 0)
        .collect();
    expect_dbg(
        "the partition keeps its inherited descriptors open, close-on-exec",
        own.len() > 3 && not_cloexec.is_empty(),
        (&own, &not_cloexec),
    );
    let (s, d) = (
        get_sampling_port_id("S").expect("S"),
        get_sampling_port_id("D").expect("D"),
    );
    let (qo, qi) = (
        get_queuing_port_id("QO").expect("QO"),
        get_queuing_port_id("QI").expect("QI"),
    );
    let _ = write_sampling_message(s, b"after");
    let _ = send_queuing_message(qo, b"after", 1_000 * MS);
    let mut buf = [0u8; 16];
    let got = wait_sampling_message(d, 1_000 * MS, &mut buf).map(|(n, _)| buf[..n].to_vec());
    expect_dbg(
        "the sampling port still works",
        got == Ok(b"after".to_vec()),
        &got,
    );
    let got = receive_queuing_message(qi, &mut buf, 1_000 * MS).map(|n| buf[..n].to_vec());
    expect_dbg(
        "the queuing port still works",
        got == Ok(b"after".to_vec()),
        &got,
    );
    out("END exec-child");
    idle_forever();
}

// ----------------------------------------------------------------------------------------- fds

static FDS_PER_PROCESS: OnceLock<bool> = OnceLock::new();
/// The descriptor opened at initialisation, before NORMAL mode.
static FDS_INIT: AtomicI32 = AtomicI32::new(-1);
/// The descriptor the opener process opened in NORMAL mode (-1: not yet).
static FDS_LATE: AtomicI32 = AtomicI32::new(-1);

fn open_dev_null() -> i32 {
    // SAFETY: a NUL-terminated path; the descriptor is the test's (never closed but by the test).
    let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    assert!(
        fd >= 0,
        "open /dev/null: {}",
        std::io::Error::last_os_error()
    );
    fd
}

/// Whether `fd` is open in the calling thread's descriptor table.
fn is_open(fd: i32) -> bool {
    // SAFETY: F_GETFD reads the descriptor's flags; no memory is passed.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// Open a descriptor, close the one opened at initialisation, then publish the new one. Writes
/// nothing (a write to OUT opens a file, which could take the closed descriptor's number).
extern "C" fn fds_opener() {
    let late = open_dev_null();
    // SAFETY: closes the test's own descriptor.
    unsafe { libc::close(FDS_INIT.load(Ordering::Acquire)) };
    FDS_LATE.store(late, Ordering::Release);
    idle_forever();
}

extern "C" fn fds_checker() {
    let per_process = *FDS_PER_PROCESS.get().expect("set at init");
    let mut late = FDS_LATE.load(Ordering::Acquire);
    for _ in 0..2_000 {
        if late >= 0 {
            break;
        }
        let _ = timed_wait(MS);
        late = FDS_LATE.load(Ordering::Acquire);
    }
    // Both looks first: a write to OUT opens a file.
    let init = FDS_INIT.load(Ordering::Acquire);
    let (init_open, late_open) = (is_open(init), is_open(late));
    expect(
        "the opener ran",
        late >= 0,
        "no descriptor published in 2 s",
    );
    if per_process {
        expect(
            "per-process: a descriptor another process opened in NORMAL mode is not in this one's table",
            !late_open,
            format!("descriptor {late} is open here"),
        );
        expect(
            "per-process: a descriptor another process closed in NORMAL mode stays open in this one's table",
            init_open,
            format!("descriptor {init} is closed here"),
        );
    } else {
        expect(
            "shared: a descriptor another process opened is in this one's table",
            late_open,
            format!("descriptor {late} is not open here"),
        );
        expect(
            "shared: a descriptor another process closed is closed here",
            !init_open,
            format!("descriptor {init} is open here"),
        );
    }
    let id = get_sampling_port_id("IN").expect("IN");
    let mut buf = [0u8; 32];
    let r = wait_sampling_message(id, 2_000 * MS, &mut buf).map(|(n, _)| buf[..n].to_vec());
    expect_dbg(
        "a message arrives on the udp port (its socket was inherited)",
        r.as_ref()
            .is_ok_and(|m| m.starts_with(b"tick") || m == b"final" || m == b"first"),
        &r,
    );
    out("END fds-dst");
    idle_forever();
}

fn main() {
    if std::env::args()
        .nth(1)
        .is_some_and(|r| r.starts_with("mem-"))
    {
        one_arena();
    }
    let (role, rest) = testpart_common::init();
    N.set(testpart_common::number(rest.first(), 1000))
        .expect("once");
    let d = PortDirection::Destination;
    let s = PortDirection::Source;
    match role.as_str() {
        "codes" => {
            codes_init();
            create_error_handler(codes_error_handler, 0).expect("error handler");
            process("codes", codes_process, 10, INFINITE_TIME_VALUE);
        }
        "idle" => {}
        "sampling-src" => {
            let id = create_sampling_port("OUT", 32, s, 500 * MS).expect("create OUT");
            write_sampling_message(id, b"first").expect("write first");
            process("src", sampling_src_process, 10, 30 * MS);
        }
        "sampling-dst" => {
            create_sampling_port("IN", 32, d, 500 * MS).expect("create IN");
            process("dst", sampling_dst_process, 10, INFINITE_TIME_VALUE);
        }
        "queue-src" => {
            create_queuing_port("QOUT", 32, 64, s, QueuingDiscipline::Fifo).expect("QOUT");
            process("src", queue_src_process, 10, INFINITE_TIME_VALUE);
        }
        "queue-dst" => {
            create_queuing_port("QIN", 32, 64, d, QueuingDiscipline::Fifo).expect("QIN");
            process("dst", queue_dst_process, 10, INFINITE_TIME_VALUE);
        }
        "kill-src" => {
            create_sampling_port("BIG", BIG as u32, s, 1_000 * MS).expect("BIG");
            if get_partition_status().start_condition == StartCondition::NormalStart {
                process("writer", kill_writer, 10, INFINITE_TIME_VALUE);
                process("killer", killer, 20, INFINITE_TIME_VALUE);
            }
        }
        "window-src" => {
            create_sampling_port("BIG", BIG as u32, s, 1_000 * MS).expect("BIG");
            process("writer", window_writer, 10, INFINITE_TIME_VALUE);
        }
        "window-dst" => {
            create_sampling_port("BIG", BIG as u32, d, 1_000 * MS).expect("BIG");
            process("dst", window_dst_process, 10, INFINITE_TIME_VALUE);
        }
        "kill-dst" => {
            create_sampling_port("BIG", BIG as u32, d, 1_000 * MS).expect("BIG");
            process("dst", kill_dst_process, 10, INFINITE_TIME_VALUE);
        }
        "kill2-src" => {
            create_sampling_port("BIG", BIG as u32, s, 1_000 * MS).expect("BIG");
            if get_partition_status().start_condition == StartCondition::NormalStart {
                process("writer", kill2_src_process, 10, INFINITE_TIME_VALUE);
            }
        }
        "kill2-dst" => {
            create_sampling_port("BIG", BIG as u32, d, 1_000 * MS).expect("BIG");
            process("dst", kill2_dst_process, 10, INFINITE_TIME_VALUE);
        }
        "stuck-dst" => {
            create_sampling_port("BIG", BIG as u32, d, 1_000 * MS).expect("BIG");
            process("dst", stuck_dst_process, 10, INFINITE_TIME_VALUE);
        }
        "restart-dst" => {
            let id = create_sampling_port("IN", 32, d, 500 * MS).expect("create IN");
            if get_partition_status().start_condition == StartCondition::NormalStart {
                process("dst", restart_dst_process, 10, INFINITE_TIME_VALUE);
            } else {
                let mut buf = [0u8; 32];
                let r = read_sampling_message(id, &mut buf).map(|(n, _)| buf[..n].to_vec());
                expect(
                    "after the restart the port still holds the last message",
                    r == Ok(b"final".to_vec()),
                    format!("{r:?}"),
                );
                out("END restart-dst");
            }
        }
        "book-src" => {
            create_queuing_port("QOUT", 8, 4, s, QueuingDiscipline::Fifo).expect("QOUT");
            create_sampling_port("GO", 8, s, 1_000 * MS).expect("GO");
            process("src", book_src_process, 10, INFINITE_TIME_VALUE);
        }
        "book-dst" => {
            create_queuing_port("QIN", 8, 4, d, QueuingDiscipline::Fifo).expect("QIN");
            create_sampling_port("GO", 8, d, 1_000 * MS).expect("GO");
            process("dst", book_dst_process, 10, INFINITE_TIME_VALUE);
        }
        "dbook-src" => {
            create_queuing_port("QOUT", 8, 4, s, QueuingDiscipline::Fifo).expect("QOUT");
            create_sampling_port("GO", 8, s, 1_000 * MS).expect("GO");
            create_sampling_port("BACK", 8, d, 1_000 * MS).expect("BACK");
            process("src", dbook_src_process, 10, INFINITE_TIME_VALUE);
        }
        "dbook-dst" => {
            create_queuing_port("QIN", 8, 4, d, QueuingDiscipline::Fifo).expect("QIN");
            create_sampling_port("GO", 8, d, 1_000 * MS).expect("GO");
            create_sampling_port("BACK", 8, s, 1_000 * MS).expect("BACK");
            process("dst", dbook_dst_process, 10, INFINITE_TIME_VALUE);
        }
        "order-src" => {
            create_queuing_port("QOUT", 8, 8, s, QueuingDiscipline::Fifo).expect("QOUT");
            create_sampling_port("RDY", 8, d, 1_000 * MS).expect("RDY");
            process("send", order_send, 10, INFINITE_TIME_VALUE);
        }
        "order-dst" => {
            let disc = match rest.first().map(String::as_str) {
                Some("priority") => QueuingDiscipline::Priority,
                _ => QueuingDiscipline::Fifo,
            };
            create_queuing_port("QIN", 8, 8, d, disc).expect("QIN");
            create_sampling_port("RDY", 8, s, 1_000 * MS).expect("RDY");
            let q = get_queuing_port_id("QIN").expect("QIN");
            set_queuing_port_recv_mode(q, RecvMode::Blocking).expect("mode");
            process("r7", order_r7, 7, INFINITE_TIME_VALUE);
            process("r5", order_r5, 5, INFINITE_TIME_VALUE);
            process("r10", order_r10, 10, INFINITE_TIME_VALUE);
            process("r15", order_r15, 15, INFINITE_TIME_VALUE);
            process("watch", order_watch, 20, INFINITE_TIME_VALUE);
        }
        "stale-dst" => {
            create_queuing_port("QIN", 8, 8, d, QueuingDiscipline::Fifo).expect("QIN");
            create_sampling_port("RDY", 8, s, 1_000 * MS).expect("RDY");
            let q = get_queuing_port_id("QIN").expect("QIN");
            set_queuing_port_recv_mode(q, RecvMode::Blocking).expect("mode");
            process("w", stale_waiter, 10, INFINITE_TIME_VALUE);
            process("check", stale_check, 20, INFINITE_TIME_VALUE);
        }
        "stamp" => {
            create_sampling_port("S", STAMP_BIG as u32, s, STAMP_REFRESH).expect("S");
            create_sampling_port("D", STAMP_BIG as u32, d, STAMP_REFRESH).expect("D");
            STAMP_H
                .set(testpart_common::new_process("h", stamp_small_writer, 10))
                .expect("once");
            process("r", stamp_reader, 20, INFINITE_TIME_VALUE);
            process("l", stamp_big_writer, 5, INFINITE_TIME_VALUE);
        }
        "exec-child" => {
            create_sampling_port("S", 16, s, 1_000 * MS).expect("S");
            create_sampling_port("D", 16, d, 1_000 * MS).expect("D");
            create_queuing_port("QO", 16, 4, s, QueuingDiscipline::Fifo).expect("QO");
            create_queuing_port("QI", 16, 4, d, QueuingDiscipline::Fifo).expect("QI");
            process("exec", exec_child_process, 10, INFINITE_TIME_VALUE);
        }
        "fds-dst" => {
            let per_process = match rest.first().map(String::as_str) {
                Some("per-process") => true,
                Some("shared") => false,
                m => panic!("fds-dst: mode {m:?} is not per-process or shared"),
            };
            create_sampling_port("IN", 32, d, 500 * MS).expect("create IN");
            FDS_PER_PROCESS.set(per_process).expect("once");
            FDS_INIT.store(open_dev_null(), Ordering::Release);
            process("opener", fds_opener, 20, INFINITE_TIME_VALUE);
            process("checker", fds_checker, 10, INFINITE_TIME_VALUE);
        }
        "reprio-dst" => {
            create_queuing_port("QIN", 8, 8, d, QueuingDiscipline::Priority).expect("QIN");
            create_sampling_port("RDY", 8, s, 1_000 * MS).expect("RDY");
            let w = testpart_common::new_process("w", reprio_w, 5);
            let h = testpart_common::new_process("h", reprio_h, 15);
            REPRIO_PIDS.set((w, h)).expect("once");
            process("ctl", reprio_ctl, 30, INFINITE_TIME_VALUE);
        }
        "suspend-dst" => {
            create_queuing_port("QIN", 8, 8, d, QueuingDiscipline::Fifo).expect("QIN");
            create_sampling_port("RDY", 8, s, 1_000 * MS).expect("RDY");
            let r1 = testpart_common::new_process("r1", suspend_r1, 10);
            let r2 = testpart_common::new_process("r2", suspend_r2, 10);
            SUSPEND_PIDS.set((r1, r2)).expect("once");
            process("ctl", suspend_ctl, 20, INFINITE_TIME_VALUE);
        }
        "suspend-src" => {
            create_queuing_port("QOUT", 8, 8, s, QueuingDiscipline::Fifo).expect("QOUT");
            create_sampling_port("GO", 8, s, 1_000 * MS).expect("GO");
            let s1 = testpart_common::new_process("s1", suspend_s1, 10);
            let s2 = testpart_common::new_process("s2", suspend_s2, 10);
            SUSPEND_PIDS.set((s1, s2)).expect("once");
            process("ctl", suspend_send_ctl, 20, INFINITE_TIME_VALUE);
        }
        "drain-dst" => {
            create_queuing_port("QIN", 8, 8, d, QueuingDiscipline::Fifo).expect("QIN");
            create_sampling_port("GO", 8, d, 1_000 * MS).expect("GO");
            process("drain", drain_process, 10, INFINITE_TIME_VALUE);
        }
        "serve-src" => {
            create_queuing_port("QOUT", 8, 8, s, QueuingDiscipline::Fifo).expect("QOUT");
            create_sampling_port("ASK", 8, d, 1_000 * MS).expect("ASK");
            create_sampling_port("DONE", 8, s, 1_000 * MS).expect("DONE");
            process("feed", serve_feed, 10, INFINITE_TIME_VALUE);
        }
        "serve-dst" => {
            create_queuing_port("QIN", 8, 8, d, QueuingDiscipline::Priority).expect("QIN");
            create_sampling_port("ASK", 8, s, 1_000 * MS).expect("ASK");
            create_sampling_port("DONE", 8, d, 1_000 * MS).expect("DONE");
            let entries: [EntryPoint; 7] = [
                serve_r0, serve_r1, serve_r2, serve_r3, serve_r4, serve_r5, serve_r6,
            ];
            for (i, e) in entries.into_iter().enumerate() {
                testpart_common::new_process(&format!("r{i}"), e, 10);
            }
            process("ctl", serve_ctl, 20, INFINITE_TIME_VALUE);
        }
        "mirror-src" => {
            create_queuing_port("QOUT", 8, 8, s, QueuingDiscipline::Priority).expect("QOUT");
            create_sampling_port("ASK", 8, d, 1_000 * MS).expect("ASK");
            create_sampling_port("DONE", 8, s, 1_000 * MS).expect("DONE");
            testpart_common::new_process("l", mirror_l, 10);
            process("ctl", mirror_src_ctl, 20, INFINITE_TIME_VALUE);
        }
        "mirror-dst" => {
            create_queuing_port("QIN", 8, 8, d, QueuingDiscipline::Fifo).expect("QIN");
            create_sampling_port("ASK", 8, s, 1_000 * MS).expect("ASK");
            create_sampling_port("DONE", 8, d, 1_000 * MS).expect("DONE");
            process("drain", mirror_dst_process, 10, INFINITE_TIME_VALUE);
        }
        "expired-dst" => {
            create_queuing_port("QIN", 8, 8, d, QueuingDiscipline::Fifo).expect("QIN");
            create_sampling_port("ASK", 8, s, 1_000 * MS).expect("ASK");
            create_sampling_port("DONE", 8, d, 1_000 * MS).expect("DONE");
            let r1 = testpart_common::new_process("r1", expired_r1, 10);
            let r2 = testpart_common::new_process("r2", expired_r2, 10);
            EXPIRED_PIDS.set((r1, r2)).expect("once");
            process("ctl", expired_dst_ctl, 20, INFINITE_TIME_VALUE);
        }
        "expired-src" => {
            create_queuing_port("QOUT", 8, 8, s, QueuingDiscipline::Fifo).expect("QOUT");
            create_sampling_port("ASK", 8, d, 1_000 * MS).expect("ASK");
            create_sampling_port("DONE", 8, s, 1_000 * MS).expect("DONE");
            let s1 = testpart_common::new_process("s1", expired_s1, 10);
            let s2 = testpart_common::new_process("s2", expired_s2, 10);
            EXPIRED_PIDS.set((s1, s2)).expect("once");
            process("ctl", expired_src_ctl, 20, INFINITE_TIME_VALUE);
        }
        "late-dst" => {
            // `late-dst priority`: QIN with the PRIORITY discipline, and in the third case the
            // head (r3, priority 12) joins after the waiter behind it.
            let priority = rest.first().is_some_and(|a| a == "priority");
            LATE_PRIORITY.store(priority, Ordering::Release);
            let discipline = if priority {
                QueuingDiscipline::Priority
            } else {
                QueuingDiscipline::Fifo
            };
            create_queuing_port("QIN", 8, 8, d, discipline).expect("QIN");
            create_sampling_port("ASK", 8, s, 1_000 * MS).expect("ASK");
            create_sampling_port("DONE", 8, d, 1_000 * MS).expect("DONE");
            let r1 = testpart_common::new_process("r1", late_r1, 10);
            let r2 = testpart_common::new_process("r2", late_r2, 10);
            LATE_PIDS.set((r1, r2)).expect("once");
            let r3 = testpart_common::new_process("r3", late_r3, if priority { 12 } else { 10 });
            let r4 = testpart_common::new_process("r4", late_r4, 10);
            LATE_PIDS2.set((r3, r4)).expect("once");
            let r5 = testpart_common::new_process("r5", late_r5, 10);
            LATE_R5.set(r5).expect("once");
            process("ctl", late_dst_ctl, 20, INFINITE_TIME_VALUE);
        }
        "closed-src" => {
            create_queuing_port("QOUT", 8, 8, s, QueuingDiscipline::Fifo).expect("QOUT");
            create_sampling_port("ASK", 16, d, 1_000 * MS).expect("ASK");
            create_sampling_port("SOUT", 8, s, 1_000 * MS).expect("SOUT");
            create_queuing_port("QBACK", 8, 1, d, QueuingDiscipline::Fifo).expect("QBACK");
            create_queuing_port("QBACK2", 8, 2, d, QueuingDiscipline::Fifo).expect("QBACK2");
            create_sampling_port("POPPED", 24, s, 1_000 * MS).expect("POPPED");
            process("src", closed_src, 10, INFINITE_TIME_VALUE);
        }
        "closed-dst" => {
            create_queuing_port("QIN", 8, 8, d, QueuingDiscipline::Fifo).expect("QIN");
            create_sampling_port("ASK", 16, s, 1_000 * MS).expect("ASK");
            create_sampling_port("SIN", 8, d, 1_000 * MS).expect("SIN");
            create_queuing_port("QBACK", 8, 1, s, QueuingDiscipline::Fifo).expect("QBACK");
            create_queuing_port("QBACK2", 8, 2, s, QueuingDiscipline::Fifo).expect("QBACK2");
            create_sampling_port("POPPED", 24, d, 1_000 * MS).expect("POPPED");
            let s1 = testpart_common::new_process("s1", closed_s1, 10);
            let s2 = testpart_common::new_process("s2", closed_s2, 10);
            CLOSED_SENDERS.set((s1, s2)).expect("once");
            process("dst", closed_dst, 10, INFINITE_TIME_VALUE);
        }
        "late-src" => {
            create_queuing_port("QOUT", 8, 8, s, QueuingDiscipline::Fifo).expect("QOUT");
            create_sampling_port("ASK", 8, d, 1_000 * MS).expect("ASK");
            create_sampling_port("DONE", 8, s, 1_000 * MS).expect("DONE");
            let s1 = testpart_common::new_process("s1", late_s1, 10);
            LATE_PIDS.set((s1, s1)).expect("once");
            process("ctl", late_src_ctl, 20, INFINITE_TIME_VALUE);
        }
        "bigsamp-src" => {
            let size = |i: usize| testpart_common::number(rest.get(i), 0u32);
            check(
                &format!("create a source sampling port of {} bytes", size(0)),
                create_sampling_port("BIG", size(0), s, 1_000 * MS),
                Ok(()),
            );
            check(
                "create a smaller source sampling port",
                create_sampling_port("MID", size(1), s, 1_000 * MS),
                Ok(()),
            );
            process("src", bigsamp_src_process, 10, INFINITE_TIME_VALUE);
        }
        "bigsamp-dst" => {
            let size = |i: usize| testpart_common::number(rest.get(i), 0u32);
            let want = match rest.get(2).map(String::as_str) {
                Some("invalid") => Err(ApexError::InvalidConfig),
                _ => Ok(()),
            };
            check(
                &format!(
                    "create a destination sampling port of {} bytes: {want:?}",
                    size(0)
                ),
                create_sampling_port("HUGE", size(0), d, 1_000 * MS),
                want,
            );
            check(
                "create a smaller destination sampling port",
                create_sampling_port("MID", size(1), d, 1_000 * MS),
                Ok(()),
            );
            process("dst", bigsamp_dst_process, 10, INFINITE_TIME_VALUE);
        }
        "mem-src" | "mem-dst" => {
            let src = role == "mem-src";
            let (mine, theirs) = if src { (s, d) } else { (d, s) };
            // First (the port registry is made on the first use of a port service).
            create_sampling_port("S2D", 8, mine, 1_000 * MS).expect("S2D");
            create_sampling_port("D2S", 8, theirs, 1_000 * MS).expect("D2S");
            mem_create_port(if src { "QOUT" } else { "QIN" }, mine);
            create_semaphore("go", 0, 1, QueuingDiscipline::Fifo).expect("go");
            if src {
                start(testpart_common::new_process("s1", mem_sender, 10)).expect("s1");
                process("ctl", mem_src_ctl, 20, INFINITE_TIME_VALUE);
            } else {
                start(testpart_common::new_process("r1", mem_receiver, 10)).expect("r1");
                process("ctl", mem_dst_ctl, 20, INFINITE_TIME_VALUE);
            }
        }
        "affinity" => {
            process("aff", affinity_process, 10, INFINITE_TIME_VALUE);
        }
        "creds" => {
            let id = |i: usize| -> u32 {
                rest.get(i)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("creds: give UID and GID"))
            };
            CREDS.set((id(0), id(1))).expect("once");
            create_sampling_port("IN", 32, d, 500 * MS).expect("create IN");
            process("creds", creds_process, 10, INFINITE_TIME_VALUE);
        }
        "probe" => {
            create_sampling_port("IN", 32, d, 500 * MS).expect("create IN");
            process("probe", probe_process, 10, INFINITE_TIME_VALUE);
        }
        other => {
            eprintln!("ports-testpart: unknown role {other:?}");
            std::process::exit(2);
        }
    }
    normal();
}
