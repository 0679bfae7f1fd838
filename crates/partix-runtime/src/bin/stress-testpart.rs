//! `stress-testpart`: the partitions of `tests/ports_stress.rs`, a concurrent stress through the
//! port services. The test runs two of them standalone (no executive, no time windows), with the
//! channels of a module handed over as the executive hands them over (`PARTIX_PORT_FDS`), each
//! pinned to a CPU of its own: source and destination run at the same time, and reads race with
//! writes (under the executive, every partition of a test runs on one CPU, in turns).
//!
//! ```text
//! stress-testpart ROLE OUT SEED [ARG..]
//!   s-writer SEED        write messages on sampling port S back to back (a short sleep every
//!                        WRITER_BURST writes, so that parking waits park) until killed
//!   s-reader SEED MIN    read sampling port S in four phases: READ_SAMPLING_MESSAGE in a loop,
//!                        then WAIT_SAMPLING_MESSAGE (the partix wait) with the port in each
//!                        receive mode (spin, spin-then-park, blocking). Every answer is checked
//!                        (length, sequence number, noise and checksum; VALID; READ never goes
//!                        back, a wait returns a newer message). A phase lasts at least
//!                        PHASE_MIN, reads at least PHASE_READS new messages, and goes on (up to
//!                        PHASE_MAX) until MIN of its reads met a write in progress (the port's
//!                        counters, `sampling_port_counters`; MIN 0 for the socket transports,
//!                        whose frames are never torn)
//!   q-sender SEED N      send N messages on queuing port Q (MaxNbMessages Q_NB), in chunks that
//!                        take turns: one at a time with TIME_OUT 0 (spinning on NOT_AVAILABLE),
//!                        one at a time waiting, in batches (send_queuing_messages) with TIME_OUT
//!                        0, in batches waiting; the port's mode (for the waits) changes every
//!                        four chunks, and every other round of twelve chunks the waits have a
//!                        time-out of 20 µs (TIMED_OUT: the same message again; at least one
//!                        such wait must time out); it sleeps 20 µs every SENDER_PAUSE messages. It
//!                        publishes how many messages it sent in the test's shared word
//!                        (descriptor [`COUNT_FD`]); it must have found the queue full at least
//!                        1000 times
//!   q-receiver SEED N    receive the N messages on Q the same four ways, with the same short
//!                        waits (in chunks of another length), checking each (exactly the next
//!                        sequence number, its length,
//!                        noise and checksum), sleeping 20 µs every RECEIVER_PAUSE messages
//!                        (so that the sender finds the queue full, whatever the speeds); after
//!                        each call, the sender's count less the messages received is at most
//!                        Q_NB (never more queued: the count is published after the send
//!                        returns); then no further message comes
//! ```
//! (GET_QUEUING_PORT_STATUS cannot show more than `MaxNbMessages` queued: it reports at most
//! that, so the receiver compares counts.)
//! Results are appended to OUT: `PASS what`, `FAIL what: detail`, `INFO ...`, `END role`.
//!
//! The processes run SCHED_OTHER (they drop the FIFO priority the runtime gives them): two
//! FIFO processes busy on both CPUs of a small machine for seconds would starve everything else
//! on it, and the properties checked do not depend on the policy.
#![allow(unsafe_code)]

#[path = "testpart_common/mod.rs"]
mod testpart_common;

use partix_runtime::partition::*;
use partix_shm::{Access, Region};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use testpart_common::{check, expect, idle_forever, normal, number, out, spawn, MS};

/// Largest sampling message (bytes): the slot layout with a line-aligned payload, and udp
/// datagrams of a few KiB.
const S_MAX: usize = 4096;
/// Refresh period of S: every message read in the stress is VALID.
const S_REFRESH: SystemTime = 10_000 * MS;
/// Largest queuing message.
const Q_MAX: usize = 64;
/// MaxNbMessages of Q: not a power of two, so that the one-sided ring (8 slots) holds more
/// than the port may queue, and only the sender's bound keeps it at 5.
const Q_NB: u32 = 5;
/// The writer sleeps a little after this many writes.
const WRITER_BURST: u64 = 128;
/// Shortest phase of the reader.
const PHASE_MIN: SystemTime = 250 * MS;
/// Longest phase of the reader (a loaded machine gives few overlaps per second).
const PHASE_MAX: SystemTime = 15_000 * MS;
/// New messages a phase reads at least.
const PHASE_READS: u64 = 1000;
/// Time-out of every wait of the stress: the other side is always busy, so a wait that times
/// out lost a wake-up (or a message).
const WAIT_TIMEOUT: SystemTime = 5_000 * MS;
/// Time-out of the short waits (every other round of twelve chunks, the waiting ways): about
/// what the other side's pauses last, so that waits expire while messages (or room) come and
/// the expired waiter's last look races with them. A send that timed out is sent again, a
/// receive that timed out is made again: the receiver's checks (each message once, in order)
/// tell a timed-out send that went through, or a timed-out receive that took a message.
const SHORT_TIMEOUT: SystemTime = 20_000;
/// Messages per batch call (sender; the receiver takes at most [`RECV_BATCH`]).
const SEND_BATCH: usize = 7;
const RECV_BATCH: usize = 3;

static ARGS: OnceLock<(u64, u64)> = OnceLock::new();

/// Descriptor of the memfd the test hands both queuing partitions: its first word is the count
/// of messages the sender sent.
const COUNT_FD: i32 = 599;

/// The sender's count of messages sent (the first word of [`COUNT_FD`]'s region).
fn sent_count() -> &'static AtomicU64 {
    static R: OnceLock<Region> = OnceLock::new();
    let r = R.get_or_init(|| {
        // SAFETY: the test puts a region of at least a page on COUNT_FD for the queuing roles,
        // and nothing else in this process uses that descriptor.
        unsafe { Region::from_raw_fd(COUNT_FD, 4096, Access::ReadWrite) }
            .expect("the count region on descriptor 599")
    });
    // SAFETY: the mapping is page-aligned, at least 8 bytes long, lives as long as the process
    // (a static), and its first word is only ever accessed atomically (by both partitions).
    unsafe { &*r.as_ptr().cast::<AtomicU64>() }
}

fn seed() -> u64 {
    ARGS.get().expect("set in main").0
}

fn arg() -> u64 {
    ARGS.get().expect("set in main").1
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Header: sequence number (u64) and length (u32), little endian; trailer: the checksum (u64).
const HEAD: usize = 12;
const MIN_LEN: usize = HEAD + 8;
/// Distinct bodies.
const BODIES: u64 = 251;

/// The messages of one run: message `seq` carries its sequence number and its length, one of
/// [`BODIES`] seed-dependent noise bodies (of seed-dependent lengths, so messages are of
/// [`MIN_LEN`]..=`max` bytes), and a checksum of all of it (the body's hash, computed once,
/// mixed with the header's fields). Cheap to build (a copy) even in a debug build, so that the
/// writer writes back to back.
struct Msgs {
    seed: u64,
    bodies: Vec<(Vec<u8>, u64)>,
}

impl Msgs {
    fn new(seed: u64, max: usize) -> Msgs {
        let bodies = (0..BODIES)
            .map(|b| {
                let n = (splitmix(seed ^ (b << 8) ^ 0x5151) % (max - MIN_LEN + 1) as u64) as usize;
                let body: Vec<u8> = (0..n)
                    .map(|k| splitmix(seed ^ (b << 32) ^ k as u64) as u8)
                    .collect();
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                for &x in &body {
                    h = (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3);
                }
                (body, h)
            })
            .collect();
        Msgs { seed, bodies }
    }

    /// Build message `seq` into `out` (at least the maximum length); return its length.
    fn build(&self, seq: u64, out: &mut [u8]) -> usize {
        let b = (splitmix(self.seed ^ seq.wrapping_mul(0x2545_F491_4F6C_DD1D)) % BODIES) as usize;
        let (body, h) = &self.bodies[b];
        let len = MIN_LEN + body.len();
        out[..8].copy_from_slice(&seq.to_le_bytes());
        out[8..HEAD].copy_from_slice(&(len as u32).to_le_bytes());
        out[HEAD..HEAD + body.len()].copy_from_slice(body);
        let check = h ^ splitmix(self.seed ^ seq ^ ((len as u64) << 40));
        out[len - 8..len].copy_from_slice(&check.to_le_bytes());
        len
    }

    /// Check a message received: its header, its length and every byte; return its sequence
    /// number.
    fn check(&self, got: &[u8], scratch: &mut [u8]) -> Result<u64, String> {
        if got.len() < MIN_LEN {
            return Err(format!("{} bytes: shorter than any message", got.len()));
        }
        let seq = u64::from_le_bytes(got[..8].try_into().expect("8 bytes"));
        let len = u32::from_le_bytes(got[8..HEAD].try_into().expect("4 bytes")) as usize;
        if len != got.len() {
            return Err(format!(
                "seq {seq}: {} bytes, its header says {len}",
                got.len()
            ));
        }
        let want = self.build(seq, scratch);
        if want != len {
            return Err(format!("seq {seq}: {len} bytes, message {seq} has {want}"));
        }
        if got != &scratch[..want] {
            let at = got.iter().zip(&scratch[..want]).position(|(a, b)| a != b);
            return Err(format!(
                "seq {seq} ({len} bytes): content differs from byte {at:?} (torn or mixed)"
            ));
        }
        Ok(seq)
    }
}

/// Run the calling process under SCHED_OTHER (see the module docs).
fn leave_fifo() {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: p is a valid sched_param; 0 names the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) };
}

// ----------------------------------------------------------------------------------- sampling

extern "C" fn s_writer() {
    leave_fifo();
    let id = get_sampling_port_id("S").expect("S");
    let msgs = Msgs::new(seed(), S_MAX);
    let mut buf = vec![0u8; S_MAX];
    let mut seq = 0u64;
    loop {
        seq += 1;
        let n = msgs.build(seq, &mut buf);
        if let Err(e) = write_sampling_message(id, &buf[..n]) {
            out(&format!("FAIL write {seq}: {e:?}"));
            idle_forever();
        }
        if seq.is_multiple_of(WRITER_BURST) {
            let _ = timed_wait(50_000);
        }
    }
}

/// How a reader phase takes messages.
#[derive(Clone, Copy)]
enum How {
    Read,
    Wait(RecvMode),
}

fn overlaps(c: &SamplingPortCounters) -> u64 {
    c.retried_reads + c.fallback_answers + c.unreadable_waited_past + c.manager_retries
}

extern "C" fn s_reader() {
    leave_fifo();
    let id = get_sampling_port_id("S").expect("S");
    let min_overlaps = arg();
    let msgs = Msgs::new(seed(), S_MAX);
    let mut buf = vec![0u8; S_MAX];
    let mut scratch = vec![0u8; S_MAX];
    let mut last: Option<u64> = None;
    let phases = [
        ("READ", How::Read),
        ("WAIT spin", How::Wait(RecvMode::Spin)),
        (
            "WAIT spin-then-park",
            How::Wait(RecvMode::SpinThenPark { spins: 50 }),
        ),
        ("WAIT blocking", How::Wait(RecvMode::Blocking)),
    ];
    for (name, how) in phases {
        if let How::Wait(mode) = how {
            set_sampling_port_recv_mode(id, mode).expect("mode");
        }
        let c0 = sampling_port_counters(id).expect("counters");
        let t0 = get_time();
        let (mut calls, mut fresh, mut bad) = (0u64, 0u64, None);
        let mut got_overlaps = 0;
        loop {
            let elapsed = get_time() - t0;
            if calls.is_multiple_of(256) {
                let c = sampling_port_counters(id).expect("counters");
                got_overlaps = overlaps(&c) - overlaps(&c0);
                let enough =
                    elapsed >= PHASE_MIN && fresh >= PHASE_READS && got_overlaps >= min_overlaps;
                if enough || elapsed >= PHASE_MAX {
                    break;
                }
            }
            calls += 1;
            let r = match how {
                How::Read => read_sampling_message(id, &mut buf),
                How::Wait(_) => wait_sampling_message(id, WAIT_TIMEOUT, &mut buf),
            };
            let (n, validity) = match r {
                Ok(a) => a,
                // Before the first message only.
                Err(ApexError::NoAction) if last.is_none() => continue,
                Err(e) => {
                    bad = Some(format!("call {calls}: {e:?} (last seq {last:?})"));
                    break;
                }
            };
            let seq = match msgs.check(&buf[..n], &mut scratch) {
                Ok(s) => s,
                Err(e) => {
                    bad = Some(format!("call {calls}: {e}"));
                    break;
                }
            };
            if validity != Validity::Valid {
                bad = Some(format!("seq {seq}: {validity:?}"));
                break;
            }
            let newer = last.is_none_or(|l| seq > l);
            let ok = match how {
                How::Read => last.is_none_or(|l| seq >= l),
                How::Wait(_) => newer,
            };
            if !ok {
                bad = Some(format!("seq {seq} after {last:?}"));
                break;
            }
            if newer {
                fresh += 1;
            }
            last = Some(seq);
        }
        let c = sampling_port_counters(id).expect("counters");
        out(&format!(
            "INFO {name}: calls={calls} new={fresh} overlaps={got_overlaps} ms={} counters={c:?}",
            (get_time() - t0) / MS
        ));
        expect(
            &format!("{name}: every answer whole, VALID and in order"),
            bad.is_none(),
            bad.unwrap_or_default(),
        );
        expect(
            &format!("{name}: at least {PHASE_READS} new messages"),
            fresh >= PHASE_READS,
            format!("{fresh}"),
        );
        expect(
            &format!("{name}: at least {min_overlaps} reads met a write in progress"),
            got_overlaps >= min_overlaps,
            format!("{got_overlaps}"),
        );
    }
    out("END s-reader");
    idle_forever();
}

// ------------------------------------------------------------------------------------ queuing

/// Chunk lengths of the sender and the receiver (different, so that their ways of calling meet
/// in every combination).
const SEND_CHUNK: u64 = 1000;
const RECV_CHUNK: u64 = 777;
/// The sender sleeps [`PAUSE`] after every this many messages, so that the receiver's waits
/// park and its time-out-0 calls find the queue empty, whatever the two sides' speeds ...
const SENDER_PAUSE: u64 = 100;
/// ... and the receiver after every this many, so that the sender finds the queue full (and its
/// waits for room park).
const RECEIVER_PAUSE: u64 = 64;
const PAUSE: SystemTime = 20_000;

/// The way of calling and the port's receive mode for chunk `k`.
/// The time-out of a call of way `way` in chunk `k`: 0 (ways 0 and 2), else
/// [`SHORT_TIMEOUT`] in every other round of twelve chunks, [`WAIT_TIMEOUT`] in the others.
fn wait_time_out(way: u64, k: u64) -> SystemTime {
    if way.is_multiple_of(2) {
        0
    } else if !(k / 12).is_multiple_of(2) {
        SHORT_TIMEOUT
    } else {
        WAIT_TIMEOUT
    }
}

fn chunk_way(k: u64) -> (u64, RecvMode) {
    let modes = [
        RecvMode::Spin,
        RecvMode::SpinThenPark { spins: 50 },
        RecvMode::Blocking,
    ];
    (k % 4, modes[(k / 4 % 3) as usize])
}

extern "C" fn q_sender() {
    leave_fifo();
    let id = get_queuing_port_id("Q").expect("Q");
    let n = arg();
    let msgs = Msgs::new(seed(), Q_MAX);
    let mut bufs = vec![[0u8; Q_MAX]; SEND_BATCH];
    let sent = sent_count();
    let (mut full, mut timed_out) = (0u64, 0u64);
    let mut bad = None;
    let mut seq = 0u64;
    // Time per way of calling and receive mode (µs), for the INFO line.
    let mut us = [[0i64; 3]; 4];
    'outer: while seq < n {
        let (way, mode) = chunk_way(seq / SEND_CHUNK);
        let mi = (seq / SEND_CHUNK / 4 % 3) as usize;
        let tc = get_time();
        set_queuing_port_recv_mode(id, mode).expect("mode");
        let end = n.min((seq / SEND_CHUNK + 1) * SEND_CHUNK);
        while seq < end {
            let k = if way >= 2 {
                (end - seq).min(SEND_BATCH as u64) as usize
            } else {
                1
            };
            let mut lens = [0usize; SEND_BATCH];
            for (i, b) in bufs.iter_mut().take(k).enumerate() {
                lens[i] = msgs.build(seq + i as u64, b);
            }
            let mut batch: [&[u8]; SEND_BATCH] = [&[]; SEND_BATCH];
            for ((m, b), &l) in batch.iter_mut().zip(&bufs).zip(&lens).take(k) {
                *m = &b[..l];
            }
            let timeout = wait_time_out(way, seq / SEND_CHUNK);
            let r = if way >= 2 {
                send_queuing_messages(id, &batch[..k], timeout)
            } else {
                send_queuing_message(id, batch[0], timeout).map(|()| 1)
            };
            match r {
                Ok(m) if (1..=k).contains(&m) => {
                    let before = seq;
                    seq += m as u64;
                    sent.store(seq, Ordering::Release);
                    if seq / SENDER_PAUSE != before / SENDER_PAUSE {
                        // The receiver's waits park now and then.
                        let _ = timed_wait(PAUSE);
                    }
                }
                Err(ApexError::NotAvailable) if timeout == 0 => {
                    full += 1;
                    std::hint::spin_loop();
                }
                // Not sent: the same message again.
                Err(ApexError::TimedOut) if timeout == SHORT_TIMEOUT => timed_out += 1,
                other => {
                    bad = Some(format!("message {seq} (way {way}): {other:?}"));
                    break 'outer;
                }
            }
        }
        us[way as usize][mi] += (get_time() - tc) / 1000;
    }
    out(&format!(
        "INFO q-sender: sent={seq} full={full} timed_out={timed_out} \
         us_per_way_and_mode={us:?}"
    ));
    expect(
        &format!("{n} messages sent"),
        bad.is_none() && seq == n,
        bad.unwrap_or_default(),
    );
    expect(
        "the queue was found full (NOT_AVAILABLE) at least 1000 times",
        full >= 1000,
        format!("{full}"),
    );
    expect(
        "a short wait for room timed out at least once",
        timed_out >= 1,
        format!("{timed_out}"),
    );
    out("END q-sender");
    idle_forever();
}

extern "C" fn q_receiver() {
    leave_fifo();
    let id = get_queuing_port_id("Q").expect("Q");
    let n = arg();
    let msgs = Msgs::new(seed(), Q_MAX);
    let mut buf = vec![0u8; Q_MAX * RECV_BATCH];
    let mut scratch = [0u8; Q_MAX];
    let sent = sent_count();
    let (mut empty, mut max_queued, mut over, mut timed_out) = (0u64, 0u64, 0u64, 0u64);
    let mut bad = None;
    let mut next = 0u64;
    'outer: while next < n {
        let (way, mode) = chunk_way(next / RECV_CHUNK);
        set_queuing_port_recv_mode(id, mode).expect("mode");
        let end = n.min((next / RECV_CHUNK + 1) * RECV_CHUNK);
        while next < end {
            let timeout = wait_time_out(way, next / RECV_CHUNK);
            let mut lens = [0usize; RECV_BATCH];
            let r = if way >= 2 {
                receive_queuing_messages(id, &mut buf, &mut lens, timeout)
            } else {
                receive_queuing_message(id, &mut buf[..Q_MAX], timeout).map(|l| {
                    lens[0] = l;
                    1
                })
            };
            let got = match r {
                Ok(k) if (1..=RECV_BATCH).contains(&k) => k,
                Err(ApexError::NotAvailable) if timeout == 0 => {
                    empty += 1;
                    std::hint::spin_loop();
                    continue;
                }
                // Nothing taken: receive again.
                Err(ApexError::TimedOut) if timeout == SHORT_TIMEOUT => {
                    timed_out += 1;
                    continue;
                }
                other => {
                    bad = Some(format!("message {next} (way {way}): {other:?}"));
                    break 'outer;
                }
            };
            if (next + got as u64) / RECEIVER_PAUSE != next / RECEIVER_PAUSE {
                // The sender finds the queue full (and its waits for room park) now and then.
                let _ = timed_wait(PAUSE);
            }
            for (i, &l) in lens.iter().take(got).enumerate() {
                let m = &buf[i * Q_MAX..i * Q_MAX + l];
                match msgs.check(m, &mut scratch) {
                    Ok(s) if s == next => next += 1,
                    Ok(s) => {
                        bad = Some(format!("message {s} where {next} was due (lost/dup/order)"));
                        break 'outer;
                    }
                    Err(e) => {
                        bad = Some(format!("where {next} was due: {e}"));
                        break 'outer;
                    }
                }
            }
            // Queued now: at most what the sender sent by now (it publishes its count after
            // each send returns), less what was received.
            let q = sent.load(Ordering::Acquire).saturating_sub(next);
            max_queued = max_queued.max(q);
            if q > u64::from(Q_NB) {
                over += 1;
            }
        }
    }
    out(&format!(
        "INFO q-receiver: received={next} empty={empty} timed_out={timed_out} \
         max_queued={max_queued}"
    ));
    expect(
        &format!("{n} messages received, each once, in order, whole"),
        bad.is_none() && next == n,
        bad.unwrap_or_default(),
    );
    expect(
        &format!("never more than MaxNbMessages ({Q_NB}) queued"),
        over == 0,
        format!("{over} receives found more, up to {max_queued}"),
    );
    expect(
        "a short wait for a message timed out at least once",
        timed_out >= 1,
        format!("{timed_out}"),
    );
    let r = receive_queuing_message(id, &mut buf[..Q_MAX], 200 * MS);
    check(
        "no message after the last one",
        r.map(|_| ()),
        Err(ApexError::TimedOut),
    );
    out("END q-receiver");
    idle_forever();
}

fn main() {
    let (role, rest) = testpart_common::init();
    ARGS.set((number(rest.first(), 1), number(rest.get(1), 0)))
        .expect("once");
    let s = PortDirection::Source;
    let d = PortDirection::Destination;
    let fifo = QueuingDiscipline::Fifo;
    match role.as_str() {
        "s-writer" => {
            create_sampling_port("S", S_MAX as u32, s, S_REFRESH).expect("S");
            spawn("writer", s_writer, 10);
        }
        "s-reader" => {
            create_sampling_port("S", S_MAX as u32, d, S_REFRESH).expect("S");
            spawn("reader", s_reader, 10);
        }
        "q-sender" => {
            create_queuing_port("Q", Q_MAX as u32, Q_NB, s, fifo).expect("Q");
            spawn("sender", q_sender, 10);
        }
        "q-receiver" => {
            create_queuing_port("Q", Q_MAX as u32, Q_NB, d, fifo).expect("Q");
            spawn("receiver", q_receiver, 10);
        }
        other => {
            eprintln!("stress-testpart: unknown role {other:?}");
            std::process::exit(2);
        }
    }
    normal();
}
