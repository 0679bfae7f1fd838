//! `xport-testpart`: the APEX partition programs of the transport conformance suite
//! (`tests/conformance.rs`, module `tests/ports/conformance.xml.in`). The same programs run over
//! every transport and in every receive mode: nothing here names a transport, and every port has
//! the mode the configuration gives it (`partix:ReceiveMode`, the same on every port).
//!
//! ```text
//! xport-testpart ROLE OUT [N [MODE [BIG]]]
//!   conf-src    SRC:  sampling sizes 1..=64 (multicast), queue sizes 1..=64, then the full
//!               queue (timeout 0 / 200 ms / watched 1 s, WAITING while blocked), then a send
//!               after CLEAR; a second process sends N checksummed stress messages on Z_OUT; a
//!               third sends the size sweep (1 B .. max on S40/Q40, S56/Q56, SBIG/QBIG)
//!   conf-dst1   DST1: reads the sampling sizes (latest wins, never older), validity fresh and
//!               after the refresh period, wait timeouts 0 / 200 ms, queue sizes in order,
//!               empty (timeout 0 / 200 ms / watched 1 s, WAITING while blocked), status,
//!               CLEAR; a second process checks the size sweep byte by byte
//!   conf-dst2   DST2: port confinement (another partition's queuing port, a name of the other
//!               port kind), the sampling sizes (second multicast destination) and the N stress
//!               messages (no loss, duplicate, reordering or corruption)
//! ```
//! Before those, SRC and DST1 run the PRIORITY phase (processes `prio`, priority 30; the others
//! start when it is done): three receivers of DST1 of priorities 5, 15, 10 wait on the empty
//! PRIORITY port QP_IN, the one of 5 is raised to 20 while it waits (SET_PRIORITY), and they
//! get SRC's m0, m1, m2 in the order of their current priorities (20, 15, 10); then three
//! senders of SRC of priorities 5, 15, 10 wait on the full PRIORITY port QP_OUT (one message
//! fills it), the one of 15 is lowered to 1, and DST1 receives their messages in the order of
//! their current priorities (10, 5, 1). In spin mode they join in the order 5, 10, 15 (the
//! spinning head would keep a lower priority from running to join).
//!
//! MODE is the receive mode of every port (`spin`, `spin-then-park`, `blocking`; default
//! `spin-then-park`), BIG the largest message of SBIG/QBIG (default 65483).
//!
//! Every timed call is bracketed with GET_TIME: one that timed out did not return before its
//! time-out, and none returned later than its time-out + a major frame + 100 ms. A call with
//! time-out 0 must return without leaving the CPU: a process of lower priority (`observe`)
//! spins meanwhile and would run, and see the caller WAITING, if it did. A 200 ms wait that times
//! out shows the mode: its thread's CPU time is more than half of the partition's window time
//! during the wait when spinning, less than half when parking.
//!
//! Results are appended to OUT, one line each: `PASS what`, `FAIL what: detail`, `INFO ...`,
//! `END role`.

#[path = "testpart_common/mod.rs"]
mod testpart_common;

use partix_runtime::partition::*;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use testpart_common::{check, expect, idle_forever, new_process, normal, out, MS};

static N: OnceLock<u64> = OnceLock::new();
/// Processes still running in this partition (the last one writes `END`).
static RUNNING: AtomicU32 = AtomicU32::new(0);
/// Set by `main` just before it blocks with a timeout; the watcher then checks WAITING.
static BLOCKING: AtomicU32 = AtomicU32::new(0);
/// Set by the watcher once it checked the state after the wait (`main` spins until then, so it
/// does not start its next wait first).
static CHECKED: AtomicU32 = AtomicU32::new(0);
static ROLE: OnceLock<String> = OnceLock::new();
/// The receive mode of every port (from the configuration; MODE names it).
static MODE: OnceLock<RecvMode> = OnceLock::new();
/// The largest message of SBIG and QBIG.
static BIG: OnceLock<usize> = OnceLock::new();

/// While non-zero, the number of the current observation: `observe` spins.
static OBSERVE: AtomicU32 = AtomicU32::new(0);
/// The observation `observe` spins for (it set it right before its spin loop).
static READY: AtomicU32 = AtomicU32::new(0);
/// Set by `main` for the duration of a call with time-out 0.
static INSIDE: AtomicU32 = AtomicU32::new(0);
/// Calls with time-out 0 during which `observe` ran (`main` had left the CPU).
static RAN_INSIDE: AtomicU32 = AtomicU32::new(0);
/// ... and found `main` WAITING.
static SAW_WAITING: AtomicU32 = AtomicU32::new(0);

const MAX: usize = 64;

/// The major frame of conformance.xml.in (`MajorFrameSeconds`).
const FRAME: SystemTime = 30 * MS;
/// How late a timed call may return after its time-out: the time-out may fall outside the
/// partition's windows (a major frame), plus 100 ms for a loaded machine.
const LATE: SystemTime = FRAME + 100 * MS;
/// The time-out of the waits that show the receive mode (they time out).
const MODE_WAIT: SystemTime = 200 * MS;
/// The time-out of a wait for a message or room from a peer that is running.
const WAIT: SystemTime = 30_000 * MS;
/// The time-out of the first wait of the sweep and of the stress receiver: in spin mode their
/// senders start only once the spinning processes above them in their partition are done
/// (seconds, many more on a loaded machine).
const FIRST_WAIT: SystemTime = 120_000 * MS;

fn process(name: &str, entry: EntryPoint, prio: Priority) {
    let pid = new_process(name, entry, prio);
    RUNNING.fetch_add(1, Ordering::SeqCst);
    start_or_defer(pid);
}

/// Processes created at initialisation whose start waits for the end of the PRIORITY phase
/// ([`prio_src`], [`prio_dst1`]; empty in DST2, which has no such phase).
static LATER: Mutex<Vec<ProcessId>> = Mutex::new(Vec::new());
/// Set at initialisation in the partitions that run the PRIORITY phase first.
static DEFER: AtomicBool = AtomicBool::new(false);

/// START `pid` now, or at the end of the PRIORITY phase.
fn start_or_defer(pid: ProcessId) {
    if DEFER.load(Ordering::SeqCst) {
        LATER.lock().unwrap().push(pid);
    } else {
        start(pid).expect("start");
    }
}

/// The PRIORITY phase is over: start the processes of the rest of the suite.
fn start_later() {
    for pid in LATER.lock().unwrap().drain(..) {
        start(pid).expect("start");
    }
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

// ------------------------------------------------------------------------ time, mode, zero

/// The result of a call with its elapsed time (GET_TIME) and its thread's CPU time.
struct Timed<T> {
    r: ApexResult<T>,
    elapsed: SystemTime,
    cpu: u64,
}

/// Run `f`, bracketed with GET_TIME and the thread's CPU clock.
fn timed<T>(f: impl FnOnce() -> ApexResult<T>) -> Timed<T> {
    let (t0, c0) = (get_time(), thread_cpu_ns());
    let r = f();
    let (t1, c1) = (get_time(), thread_cpu_ns());
    Timed {
        r,
        elapsed: t1 - t0,
        cpu: c1.saturating_sub(c0),
    }
}

/// A call with time-out `timeout` returned in time: not before its time-out if it timed out,
/// not later than the time-out + [`LATE`] in any case.
fn check_time<T: std::fmt::Debug>(what: &str, timeout: SystemTime, t: &Timed<T>) {
    let timed_out = matches!(t.r, Err(ApexError::TimedOut));
    expect(
        &format!("{what}: returns no earlier than its time-out when it times out, and no later than a major frame + 100 ms after it"),
        (!timed_out || t.elapsed >= timeout) && t.elapsed <= timeout + LATE,
        format!(
            "{:?} after {} us, time-out {} us",
            t.r,
            t.elapsed / 1000,
            timeout / 1000
        ),
    );
}

/// A wait that timed out spent the CPU time of its receive mode: spinning, more than half of
/// the partition's window time during the wait (it can run only in its windows: `duration` of
/// each `period`); parking, less than half.
fn check_mode_cpu<T>(what: &str, t: &Timed<T>) {
    let mode = *MODE.get().expect("mode");
    let st = get_partition_status();
    let window = u128::from(t.elapsed as u64) * st.duration as u128 / st.period.max(1) as u128;
    let half = (window / 2) as u64;
    let (ok, want) = match mode {
        RecvMode::Spin => (t.cpu > half, "more"),
        _ => (t.cpu < half, "less"),
    };
    out(&format!(
        "INFO {what}: {mode:?}: CPU {} us in a wait of {} us, about {} us of it in the partition's windows",
        t.cpu / 1000,
        t.elapsed / 1000,
        window / 1000
    ));
    expect(
        &format!("{what}: the waiting process's CPU time shows its receive mode"),
        ok,
        format!(
            "{mode:?}: CPU {} us, want {want} than half of the {} us of windows in the {} us wait",
            t.cpu / 1000,
            window / 1000,
            t.elapsed / 1000
        ),
    );
}

/// Have `observe` spin (it runs only while every process of higher priority is blocked).
fn start_observing() {
    static SESSION: AtomicU32 = AtomicU32::new(0);
    let n = SESSION.fetch_add(1, Ordering::SeqCst) + 1;
    RAN_INSIDE.store(0, Ordering::SeqCst);
    SAW_WAITING.store(0, Ordering::SeqCst);
    OBSERVE.store(n, Ordering::SeqCst);
    while READY.load(Ordering::SeqCst) != n {
        let _ = timed_wait(MS);
    }
}

/// `observe`, one priority below `main`: while an observation is on, it spins; each time it
/// finds `main` inside a call with time-out 0, `main` has left the CPU during that call.
extern "C" fn observe_process() {
    let main = get_process_id("main").expect("main");
    loop {
        let n = OBSERVE.load(Ordering::SeqCst);
        if n == 0 {
            let _ = timed_wait(2 * MS);
            continue;
        }
        READY.store(n, Ordering::SeqCst);
        while OBSERVE.load(Ordering::SeqCst) == n {
            if INSIDE.load(Ordering::SeqCst) == 1 {
                RAN_INSIDE.fetch_add(1, Ordering::SeqCst);
                let st = get_process_status(main).map(|s| s.process_state);
                if st == Ok(ProcessState::Waiting) {
                    SAW_WAITING.fetch_add(1, Ordering::SeqCst);
                }
                while INSIDE.load(Ordering::SeqCst) == 1 && OBSERVE.load(Ordering::SeqCst) == n {
                    std::hint::spin_loop();
                }
            }
            std::hint::spin_loop();
        }
    }
}

/// A call with time-out 0 answers `want` at once: within [`LATE`], and without leaving the CPU
/// (`observe`, one priority below, never runs during it), so it never waits. A window that ends
/// during the call parks `main` and may let `observe` run before it parks too, so a call that
/// left the CPU is tried again, up to 3 times (one that waits does so every time).
fn zero<T: std::fmt::Debug>(what: &str, want: ApexError, mut f: impl FnMut() -> ApexResult<T>) {
    let mut tries = Vec::new();
    let mut ok = false;
    for _ in 0..3 {
        start_observing();
        INSIDE.store(1, Ordering::SeqCst);
        let t = timed(&mut f);
        INSIDE.store(0, Ordering::SeqCst);
        let ran = RAN_INSIDE.load(Ordering::SeqCst);
        let waiting = SAW_WAITING.load(Ordering::SeqCst);
        OBSERVE.store(0, Ordering::SeqCst);
        let code = matches!(&t.r, Err(e) if *e == want);
        tries.push(format!(
            "{:?} after {} us, observer ran {ran} times during it, saw WAITING {waiting} times",
            t.r,
            t.elapsed / 1000
        ));
        if code && ran == 0 && t.elapsed <= LATE {
            ok = true;
            break;
        }
        if !code {
            break;
        }
    }
    expect(
        &format!("{what}: {want:?} at once, without leaving the CPU (never WAITING)"),
        ok,
        tries.join("; "),
    );
}

/// `MODE` as the configuration spells it.
fn parse_mode(s: &str) -> RecvMode {
    match s {
        "spin" => RecvMode::Spin,
        "spin-then-park" => RecvMode::SpinThenPark {
            spins: DEFAULT_RECV_MODE_SPINS,
        },
        "blocking" => RecvMode::Blocking,
        other => panic!("xport-testpart: unknown receive mode {other:?}"),
    }
}

/// Every port of the partition (these names) has the configured mode (`partix:ReceiveMode`).
fn check_modes(sampling: &[&str], queuing: &[&str]) {
    let want = *MODE.get().expect("mode");
    let mut bad = Vec::new();
    for &name in sampling {
        let m = sampling_port_recv_mode(sid(name));
        if m != Ok(want) {
            bad.push(format!("sampling {name}: {m:?}"));
        }
    }
    for &name in queuing {
        let m = queuing_port_recv_mode(qid(name));
        if m != Ok(want) {
            bad.push(format!("queuing {name}: {m:?}"));
        }
    }
    expect(
        "every port has the receive mode of the configuration",
        bad.is_empty(),
        format!("want {want:?}: {bad:?}"),
    );
}

// -------------------------------------------------------------------------------- size sweep

/// The channels of the size sweep: sampling port, queuing port, largest message.
fn sweep_channels() -> [(&'static str, &'static str, usize); 3] {
    [
        ("S40", "Q40", 40),
        ("S56", "Q56", 56),
        ("SBIG", "QBIG", *BIG.get().expect("BIG")),
    ]
}

/// The sizes sent on a channel whose largest message is `max` (those of at most `max` bytes).
fn sweep_sizes(max: usize) -> Vec<usize> {
    let mut v: Vec<usize> = [1, 7, 8, 9, 39, 40, 41, 55, 56, 57, 4095, 4096, max - 1, max]
        .into_iter()
        .filter(|&k| (1..=max).contains(&k))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The message of `k` bytes on channel `chan` (0 = sampling, 1 = queuing, times 8, plus the
/// channel's index): 64-bit words of a stream seeded by both, so a message of another size or
/// channel, a shifted copy or a stale tail differ from it.
fn sweep_message(chan: u64, k: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(k + 8);
    let mut x = (chan << 40) ^ k as u64;
    while v.len() < k {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        v.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    v.truncate(k);
    v
}

/// SRC's sweep: one byte too many is INVALID_CONFIG on every port; then each sampling size,
/// acknowledged by DST1 (on SZ_ACK) before the next; then each queuing size in order.
extern "C" fn sweep_src() {
    let ack = sid("SZ_ACK");
    let (mut too_long_s, mut too_long_q) = (Vec::new(), Vec::new());
    for (s, q, max) in sweep_channels() {
        let big = vec![1u8; max + 1];
        too_long_s.push((s, write_sampling_message(sid(s), &big)));
        too_long_q.push((q, send_queuing_message(qid(q), &big, 0)));
    }
    for (what, r) in [("sampling write", too_long_s), ("queue send", too_long_q)] {
        expect(
            &format!(
                "sweep: a {what} one byte longer than the maximum (40, 56, BIG) is INVALID_CONFIG"
            ),
            r.iter().all(|(_, r)| *r == Err(ApexError::InvalidConfig)),
            format!("{r:?}"),
        );
    }
    let mut acked = 0u32;
    let mut fails = Vec::new();
    'sampling: for (c, (s, _, max)) in sweep_channels().into_iter().enumerate() {
        let id = sid(s);
        for k in sweep_sizes(max) {
            if let Err(e) = write_sampling_message(id, &sweep_message(c as u64, k)) {
                fails.push(format!("{s} {k} B: {e:?}"));
            }
            acked += 1;
            let mut buf = [0u8; 16];
            loop {
                match wait_sampling_message(ack, WAIT, &mut buf) {
                    Ok((4, _)) if buf[..4] == acked.to_le_bytes() => break,
                    Ok(_) => {}
                    Err(e) => {
                        fails.push(format!("no acknowledgement of {s} {k} B: {e:?}"));
                        break 'sampling;
                    }
                }
            }
        }
    }
    expect(
        "sweep: every sampling size written and acknowledged",
        fails.is_empty(),
        format!("{fails:?}"),
    );
    let mut fails = Vec::new();
    for (c, (_, q, max)) in sweep_channels().into_iter().enumerate() {
        let id = qid(q);
        for k in sweep_sizes(max) {
            let m = sweep_message(8 + c as u64, k);
            if let Err(e) = send_queuing_message(id, &m, WAIT) {
                fails.push(format!("{q} {k} B: {e:?}"));
            }
        }
    }
    expect(
        "sweep: every queuing size sent",
        fails.is_empty(),
        format!("{fails:?}"),
    );
    done();
}

/// DST1's sweep: each sampling size arrives whole (length and every byte), is acknowledged;
/// then each queuing size, in order.
extern "C" fn sweep_dst() {
    let ack = sid("SZ_ACK");
    let mut acked = 0u32;
    for (c, (s, _, max)) in sweep_channels().into_iter().enumerate() {
        let id = sid(s);
        let mut buf = vec![0u8; max];
        let mut bad = Vec::new();
        let sizes = sweep_sizes(max);
        for &k in &sizes {
            let t = if acked == 0 { FIRST_WAIT } else { WAIT };
            match wait_sampling_message(id, t, &mut buf) {
                Ok((n, _)) => {
                    if n != k || buf[..n] != sweep_message(c as u64, k)[..] {
                        bad.push(format!(
                            "{k} B: got {n} B, {}",
                            first_diff(&buf[..n], c as u64, k)
                        ));
                    }
                }
                Err(e) => {
                    bad.push(format!("{k} B: {e:?}"));
                    break;
                }
            }
            acked += 1;
            let _ = write_sampling_message(ack, &acked.to_le_bytes());
        }
        expect(
            &format!("sweep: sampling sizes 1 B .. max on {s} arrive byte-exact"),
            bad.is_empty(),
            format!("sizes {sizes:?}: {bad:?}"),
        );
    }
    for (c, (_, q, max)) in sweep_channels().into_iter().enumerate() {
        let id = qid(q);
        let mut buf = vec![0u8; max];
        let mut bad = Vec::new();
        let sizes = sweep_sizes(max);
        for &k in &sizes {
            match receive_queuing_message(id, &mut buf, WAIT) {
                Ok(n) => {
                    if n != k || buf[..n] != sweep_message(8 + c as u64, k)[..] {
                        bad.push(format!(
                            "{k} B: got {n} B, {}",
                            first_diff(&buf[..n], 8 + c as u64, k)
                        ));
                    }
                }
                Err(e) => {
                    bad.push(format!("{k} B: {e:?}"));
                    break;
                }
            }
        }
        expect(
            &format!("sweep: queuing sizes 1 B .. max on {q} arrive in order, byte-exact"),
            bad.is_empty(),
            format!("sizes {sizes:?}: {bad:?}"),
        );
    }
    done();
}

/// Where `got` first differs from the sweep message `(chan, k)`.
fn first_diff(got: &[u8], chan: u64, k: usize) -> String {
    let want = sweep_message(chan, k);
    match got.iter().zip(&want).position(|(a, b)| a != b) {
        Some(i) => format!("first difference at byte {i}: {} != {}", got[i], want[i]),
        None => "same bytes up to the shorter length".into(),
    }
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
        let t = if i == 0 { FIRST_WAIT } else { WAIT };
        match receive_queuing_message(id, &mut buf, t) {
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
    let extra = timed(|| receive_queuing_message(id, &mut buf, 100 * MS));
    expect(
        "stress: no extra message",
        extra.r == Err(ApexError::TimedOut),
        format!("{:?}", extra.r),
    );
    check_time("stress: the receive of no extra message", 100 * MS, &extra);
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
    let st = get_sampling_port_status(id).map(|s| s.last_msg_validity);
    expect(
        &format!("{who}: GET_SAMPLING_PORT_STATUS after a fresh read: LAST_MSG_VALIDITY VALID"),
        st == Ok(Validity::Valid),
        format!("{st:?}"),
    );
}

// ------------------------------------------------------------------------ PRIORITY discipline

/// The priorities of the three waiting processes, in the order they join the line of a PRIORITY
/// port. In spin mode the head of the line spins at its priority, so a process of lower
/// priority could not run to join after it: there they join in rising priority (still the
/// reverse of the order they are served in); in the other modes 5, 15, 10 (served in neither
/// the order they came, nor its reverse).
fn prio_join_order() -> [Priority; 3] {
    if *MODE.get().expect("mode") == RecvMode::Spin {
        [5, 10, 15]
    } else {
        [5, 15, 10]
    }
}

/// What each waiting receiver (DST1) or sender (SRC) of the PRIORITY phase got: (its priority,
/// its result: the message received, or the send's outcome).
static PRIO_GOT: Mutex<Vec<(Priority, ApexResult<Vec<u8>>)>> = Mutex::new(Vec::new());

/// The calling process's current priority.
fn my_priority() -> Priority {
    let me = get_my_id().expect("get_my_id");
    get_process_status(me).expect("status").current_priority
}

/// A receiver of the PRIORITY phase: one message from QP_IN, recorded with its priority. The
/// receiver of priority 5, which is raised to 20 while it waits, has a buffer shorter than the
/// port's largest message, so it is never served in its place: at the head of the line after
/// the SET_PRIORITY, it takes its message itself.
extern "C" fn prio_receiver() {
    let p = my_priority();
    let mut buf = [0u8; 8];
    let cap = if p == 5 { 4 } else { 8 };
    let r = receive_queuing_message(qid("QP_IN"), &mut buf[..cap], WAIT).map(|n| buf[..n].to_vec());
    PRIO_GOT.lock().unwrap().push((p, r));
    idle_forever();
}

/// A sender of the PRIORITY phase: its priority on the full QP_OUT (it waits for room).
extern "C" fn prio_sender() {
    let p = my_priority();
    let r = send_queuing_message(qid("QP_OUT"), &[b's', p as u8], WAIT).map(|()| Vec::new());
    PRIO_GOT.lock().unwrap().push((p, r));
    idle_forever();
}

/// Poll `cond` every millisecond for up to 10 s.
fn poll_until(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..10_000 {
        if cond() {
            return true;
        }
        let _ = timed_wait(MS);
    }
    cond()
}

/// Start the processes `pids` (priorities `prios`) one at a time, each once the ones before it
/// wait on the port: `waiting` reads the port's WAITING_PROCESSES. Report whether they did.
fn join_in_order(
    what: &str,
    pids: &[(Priority, ProcessId)],
    waiting: impl Fn() -> ApexResult<u32>,
) {
    let mut seen = Vec::new();
    for (k, &(_, pid)) in pids.iter().enumerate() {
        start(pid).expect("start");
        let ok = poll_until(|| waiting() == Ok(k as u32 + 1));
        seen.push(waiting());
        if !ok {
            break;
        }
    }
    let prios: Vec<Priority> = pids.iter().map(|&(p, _)| p).collect();
    expect(
        &format!(
            "PRIORITY: {what} of priorities {prios:?} wait on the port, joining in that order"
        ),
        seen.iter().enumerate().all(|(k, w)| *w == Ok(k as u32 + 1)) && seen.len() == 3,
        format!("WAITING_PROCESSES after each start: {seen:?}"),
    );
}

/// SET_PRIORITY of the waiting process that started at priority `from` (in `pids`) to `to`;
/// report it, that GET_PROCESS_STATUS shows it still WAITING at its new priority, and that the
/// port (`waiting`: its WAITING_PROCESSES) still has all three waiting and nobody has returned.
fn reprioritise(
    what: &str,
    pids: &[(Priority, ProcessId)],
    from: Priority,
    to: Priority,
    waiting: impl Fn() -> ApexResult<u32>,
) {
    let pid = pids
        .iter()
        .find(|&&(p, _)| p == from)
        .map(|&(_, pid)| pid)
        .expect("a waiting process of that priority");
    let r = set_priority(pid, to);
    // A spinning head shows WAITING once it has spun a while (20 µs).
    let status = || get_process_status(pid).map(|s| (s.current_priority, s.process_state));
    poll_until(|| status() == Ok((to, ProcessState::Waiting)));
    let st = status();
    let n = waiting();
    let returned = PRIO_GOT.lock().unwrap().len();
    expect(
        &format!("PRIORITY: SET_PRIORITY {what}"),
        r.is_ok() && st == Ok((to, ProcessState::Waiting)) && n == Ok(3) && returned == 0,
        format!("{r:?}, status {st:?}, WAITING_PROCESSES {n:?}, returned {returned}"),
    );
}

/// The waiting processes of the phase (created at initialisation, in join order).
static PRIO_PIDS: Mutex<Vec<(Priority, ProcessId)>> = Mutex::new(Vec::new());

/// Create the three waiting processes of the PRIORITY phase (not started).
fn prio_processes(kind: &str, entry: EntryPoint) {
    let mut pids = PRIO_PIDS.lock().unwrap();
    for p in prio_join_order() {
        pids.push((p, new_process(&format!("{kind}{p}"), entry, p)));
    }
}

/// SRC's PRIORITY phase (before the rest of the suite starts): once DST1's three receivers wait
/// on its PRIORITY port QP_IN, send them m0, m1, m2; then fill QP_OUT (MaxNbMessages 1) with
/// "f", have three senders of priorities 5, 15, 10 wait for room on it (PRIORITY), lower the
/// sender of priority 15 to 1 while it waits (SET_PRIORITY), and tell DST1, which receives and
/// checks the order they were released in.
extern "C" fn prio_src() {
    let q = qid("QP_OUT");
    let down = sid("PCTL_DOWN");
    await_control("PCTL_UP", b"receivers");
    let mut fails = Vec::new();
    for i in 0..3u8 {
        if let Err(e) = send_queuing_message(q, &[b'm', b'0' + i], WAIT) {
            fails.push((i, e));
        }
    }
    let r = send_queuing_message(q, b"f", WAIT);
    expect(
        "PRIORITY: m0, m1, m2 sent to the waiting receivers, then f fills the port",
        fails.is_empty() && r.is_ok(),
        format!("{fails:?}, f: {r:?}"),
    );
    let pids = PRIO_PIDS.lock().unwrap().clone();
    join_in_order("3 senders on the full source port", &pids, || {
        get_queuing_port_status(q).map(|s| s.waiting_processes)
    });
    reprioritise(
        "lowers the waiting sender of priority 15 to 1",
        &pids,
        15,
        1,
        || get_queuing_port_status(q).map(|s| s.waiting_processes),
    );
    let _ = write_sampling_message(down, b"senders");
    let all = poll_until(|| PRIO_GOT.lock().unwrap().len() == 3)
        || poll_until(|| PRIO_GOT.lock().unwrap().len() == 3)
        || poll_until(|| PRIO_GOT.lock().unwrap().len() == 3);
    let got = PRIO_GOT.lock().unwrap().clone();
    expect(
        "PRIORITY: the 3 waiting senders each sent once room came",
        all && got.iter().all(|(_, r)| r.is_ok()),
        format!("{got:?}"),
    );
    start_later();
    done();
}

/// DST1's PRIORITY phase: three receivers of priorities 5, 15, 10 wait on the empty PRIORITY
/// port QP_IN (joining in that order), and the one of priority 5 is raised to 20 while it waits
/// (SET_PRIORITY: the line follows the current priority); SRC then sends m0, m1, m2: the raised
/// one gets m0, 15 m1, 10 m2. Then SRC's three senders wait on its full PRIORITY port, and the
/// one of priority 15 is lowered to 1: after f, their messages arrive from 10, 5, then the
/// lowered one (MaxNbMessages 1: each room goes to one sender, the head of the line).
extern "C" fn prio_dst1() {
    let t0 = get_time();
    let q = qid("QP_IN");
    let up = sid("PCTL_UP");
    let pids = PRIO_PIDS.lock().unwrap().clone();
    join_in_order("3 receivers on the empty destination port", &pids, || {
        get_queuing_port_status(q).map(|s| s.waiting_processes)
    });
    reprioritise(
        "raises the waiting receiver of priority 5 to 20",
        &pids,
        5,
        20,
        || get_queuing_port_status(q).map(|s| s.waiting_processes),
    );
    let _ = write_sampling_message(up, b"receivers");
    let all = poll_until(|| PRIO_GOT.lock().unwrap().len() == 3)
        || poll_until(|| PRIO_GOT.lock().unwrap().len() == 3)
        || poll_until(|| PRIO_GOT.lock().unwrap().len() == 3);
    let mut got = PRIO_GOT.lock().unwrap().clone();
    got.sort_by_key(|&(p, _)| std::cmp::Reverse(p));
    // Keyed by the priority each had when it started.
    let want: Vec<(Priority, ApexResult<Vec<u8>>)> = vec![
        (15, Ok(b"m1".to_vec())),
        (10, Ok(b"m2".to_vec())),
        (5, Ok(b"m0".to_vec())),
    ];
    expect(
        "PRIORITY: waiting receivers get the messages in priority order, the current one (5 raised to 20 m0, 15 m1, 10 m2)",
        all && got == want,
        format!("{got:?}"),
    );
    await_control("PCTL_DOWN", b"senders");
    let mut order = Vec::new();
    let mut buf = [0u8; 8];
    for _ in 0..4 {
        match receive_queuing_message(q, &mut buf, WAIT) {
            Ok(n) => order.push(buf[..n].to_vec()),
            Err(e) => {
                order.push(format!("{e:?}").into_bytes());
                break;
            }
        }
    }
    let want: Vec<Vec<u8>> = vec![b"f".to_vec(), vec![b's', 10], vec![b's', 5], vec![b's', 15]];
    expect(
        "PRIORITY: waiting senders are released in priority order, the current one (f, then 10, 5, 15 lowered to 1)",
        order == want,
        format!("{order:?}"),
    );
    out(&format!(
        "INFO PRIORITY phase: {} ms",
        (get_time() - t0) / MS
    ));
    start_later();
    done();
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
    // Queuing: sizes 1..=64 in order (the queue holds 5: the sender waits for room).
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
    zero("queue full, timeout 0", ApexError::NotAvailable, || {
        send_queuing_message(q, b"x", 0)
    });
    let t = timed(|| send_queuing_message(q, b"x", MODE_WAIT));
    expect(
        "queue full, timeout 200 ms: TIMED_OUT",
        t.r == Err(ApexError::TimedOut),
        format!("{:?}", t.r),
    );
    check_time("queue full, timeout 200 ms", MODE_WAIT, &t);
    check_mode_cpu("a sender waiting 200 ms for room", &t);
    BLOCKING.store(1, Ordering::SeqCst);
    let t = timed(|| send_queuing_message(q, b"x", WATCHED_TIMEOUT));
    unwatch();
    expect(
        "queue full, timeout 1 s (watched): TIMED_OUT",
        t.r == Err(ApexError::TimedOut),
        format!("{:?}", t.r),
    );
    check_time("queue full, timeout 1 s (watched)", WATCHED_TIMEOUT, &t);
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
    zero(
        "wait for a newer sampling message, timeout 0",
        ApexError::NotAvailable,
        || wait_sampling_message(s, 0, &mut buf),
    );
    let t = timed(|| wait_sampling_message(s, MODE_WAIT, &mut buf));
    expect(
        "wait for a newer sampling message, timeout 200 ms: TIMED_OUT",
        t.r == Err(ApexError::TimedOut),
        format!("{:?}", t.r),
    );
    check_time(
        "wait for a newer sampling message, timeout 200 ms",
        MODE_WAIT,
        &t,
    );
    check_mode_cpu("a sampling wait of 200 ms", &t);
    // Queue sizes 1..=64 in order; the odd sizes with an INFINITE time-out (a hang there runs
    // into the test's time limit), the even ones with 30 s.
    let mut bad = Vec::new();
    let mut infinite = 0;
    for k in 1..=MAX {
        let t = if k % 2 == 1 {
            INFINITE_TIME_VALUE
        } else {
            30_000 * MS
        };
        match receive_queuing_message(q, &mut buf, t) {
            Ok(n) if n == k && buf[..n].iter().all(|&b| b as usize == k) => {
                infinite += u32::from(t == INFINITE_TIME_VALUE);
            }
            other => bad.push((k, other)),
        }
    }
    expect(
        "queue sizes 1..=64 received in order",
        bad.is_empty(),
        format!("{bad:?}"),
    );
    expect(
        "RECEIVE_QUEUING_MESSAGE with INFINITE_TIME_VALUE returns each message (32 sizes)",
        infinite == 32,
        format!("{infinite} of 32"),
    );
    zero("queue empty, timeout 0", ApexError::NotAvailable, || {
        receive_queuing_message(q, &mut buf, 0)
    });
    let t = timed(|| receive_queuing_message(q, &mut buf, MODE_WAIT));
    expect(
        "queue empty, timeout 200 ms: TIMED_OUT",
        t.r == Err(ApexError::TimedOut),
        format!("{:?}", t.r),
    );
    check_time("queue empty, timeout 200 ms", MODE_WAIT, &t);
    check_mode_cpu("a receiver waiting 200 ms for a message", &t);
    BLOCKING.store(1, Ordering::SeqCst);
    let t = timed(|| receive_queuing_message(q, &mut buf, WATCHED_TIMEOUT));
    unwatch();
    expect(
        "queue empty, timeout 1 s (watched): TIMED_OUT",
        t.r == Err(ApexError::TimedOut),
        format!("{:?}", t.r),
    );
    check_time("queue empty, timeout 1 s (watched)", WATCHED_TIMEOUT, &t);
    // Validity after the refresh period (0.5 s), after all this time.
    let _ = timed_wait(600 * MS);
    let r = read_sampling_message(s, &mut buf);
    expect(
        "sampling INVALID after the refresh period",
        matches!(r, Ok((MAX, Validity::Invalid))),
        format!("{r:?}"),
    );
    let st = get_sampling_port_status(s).map(|s| s.last_msg_validity);
    expect(
        "GET_SAMPLING_PORT_STATUS after a read past the refresh period: LAST_MSG_VALIDITY INVALID",
        st == Ok(Validity::Invalid),
        format!("{st:?}"),
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
    zero(
        "after CLEAR the queue is empty",
        ApexError::NotAvailable,
        || receive_queuing_message(q, &mut buf, 0),
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

/// DST2 may not create another partition's queuing port, nor one of its ports as the other
/// kind (with the parameters of the port it is: only the kind differs), and GET_*_PORT_ID does
/// not find a port under the other kind.
fn confinement(dst: PortDirection, refresh: SystemTime) {
    let fifo = QueuingDiscipline::Fifo;
    let src = PortDirection::Source;
    check(
        "create the queuing port of another partition (DST1's Q_IN): INVALID_CONFIG",
        create_queuing_port("Q_IN", 64, 5, dst, fifo),
        Err(ApexError::InvalidConfig),
    );
    check(
        "create the queuing port of another partition (SRC's Q_OUT): INVALID_CONFIG",
        create_queuing_port("Q_OUT", 64, 5, src, fifo),
        Err(ApexError::InvalidConfig),
    );
    check(
        "create a sampling port's name (S_IN) as a queuing port: INVALID_CONFIG",
        create_queuing_port("S_IN", 64, refresh as u32, dst, fifo),
        Err(ApexError::InvalidConfig),
    );
    check(
        "create a queuing port's name (Z_IN) as a sampling port: INVALID_CONFIG",
        create_sampling_port("Z_IN", 64, dst, 16),
        Err(ApexError::InvalidConfig),
    );
}

fn main() {
    let (role, rest) = testpart_common::init();
    N.set(testpart_common::number(rest.first(), 2000))
        .expect("once");
    ROLE.set(role.clone()).expect("once");
    MODE.set(parse_mode(
        rest.get(1).map_or("spin-then-park", String::as_str),
    ))
    .expect("once");
    BIG.set(testpart_common::number(rest.get(2), 65_483))
        .expect("once");
    let big = *BIG.get().expect("BIG") as u32;
    let src = PortDirection::Source;
    let dst = PortDirection::Destination;
    let fifo = QueuingDiscipline::Fifo;
    let prio = QueuingDiscipline::Priority;
    let refresh = 500 * MS;
    let ctl = 10_000 * MS;
    match role.as_str() {
        "conf-src" => {
            create_sampling_port("S_OUT", 64, src, refresh).expect("S_OUT");
            create_sampling_port("CTL_DOWN", 16, src, ctl).expect("CTL_DOWN");
            create_sampling_port("CTL_UP", 16, dst, ctl).expect("CTL_UP");
            create_queuing_port("Q_OUT", 64, 5, src, fifo).expect("Q_OUT");
            create_queuing_port("Z_OUT", 64, 13, src, fifo).expect("Z_OUT");
            create_queuing_port("QP_OUT", 8, 1, src, prio).expect("QP_OUT");
            create_sampling_port("PCTL_DOWN", 16, src, ctl).expect("PCTL_DOWN");
            create_sampling_port("PCTL_UP", 16, dst, ctl).expect("PCTL_UP");
            sweep_ports(src, dst, big);
            check_modes(
                &[
                    "S_OUT", "CTL_DOWN", "CTL_UP", "S40", "S56", "SBIG", "SZ_ACK",
                ],
                &["Q_OUT", "Z_OUT", "Q40", "Q56", "QBIG", "QP_OUT"],
            );
            // The PRIORITY phase first; it starts the others when it is done.
            DEFER.store(true, Ordering::SeqCst);
            prio_processes("s", prio_sender);
            RUNNING.fetch_add(1, Ordering::SeqCst);
            start(new_process("prio", prio_src, 30)).expect("start");
            process("main", src_main, 10);
            process("watch", watch_process, 20);
            observer();
            process("sweep", sweep_src, 7);
            process("stress", stress_src, 5);
        }
        "conf-dst1" => {
            create_sampling_port("S_IN", 64, dst, refresh).expect("S_IN");
            create_sampling_port("CTL_DOWN", 16, dst, ctl).expect("CTL_DOWN");
            create_sampling_port("CTL_UP", 16, src, ctl).expect("CTL_UP");
            create_queuing_port("Q_IN", 64, 5, dst, fifo).expect("Q_IN");
            create_queuing_port("QP_IN", 8, 1, dst, prio).expect("QP_IN");
            create_sampling_port("PCTL_DOWN", 16, dst, ctl).expect("PCTL_DOWN");
            create_sampling_port("PCTL_UP", 16, src, ctl).expect("PCTL_UP");
            sweep_ports(dst, src, big);
            check_modes(
                &["S_IN", "CTL_DOWN", "CTL_UP", "S40", "S56", "SBIG", "SZ_ACK"],
                &["Q_IN", "Q40", "Q56", "QBIG", "QP_IN"],
            );
            // The PRIORITY phase first; it starts the others when it is done.
            DEFER.store(true, Ordering::SeqCst);
            prio_processes("r", prio_receiver);
            RUNNING.fetch_add(1, Ordering::SeqCst);
            start(new_process("prio", prio_dst1, 30)).expect("start");
            process("main", dst1_main, 10);
            process("watch", watch_process, 20);
            observer();
            process("sweep", sweep_dst, 7);
        }
        "conf-dst2" => {
            confinement(dst, refresh);
            create_sampling_port("S_IN", 64, dst, refresh).expect("S_IN");
            create_queuing_port("Z_IN", 64, 13, dst, fifo).expect("Z_IN");
            for (what, found) in [
                (
                    "GET_QUEUING_PORT_ID of a sampling port (S_IN): INVALID_CONFIG",
                    get_queuing_port_id("S_IN").map(|_| ()),
                ),
                (
                    "GET_SAMPLING_PORT_ID of a queuing port (Z_IN): INVALID_CONFIG",
                    get_sampling_port_id("Z_IN").map(|_| ()),
                ),
            ] {
                check(what, found, Err(ApexError::InvalidConfig));
            }
            check_modes(&["S_IN"], &["Z_IN"]);
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

/// Create the size sweep's ports: S40/S56/SBIG and Q40/Q56/QBIG in direction `dir`, SZ_ACK in
/// direction `ack`.
fn sweep_ports(dir: PortDirection, ack: PortDirection, big: u32) {
    for (name, max) in [("S40", 40), ("S56", 56), ("SBIG", big)] {
        create_sampling_port(name, max, dir, 10_000 * MS).expect(name);
    }
    create_sampling_port("SZ_ACK", 16, ack, 10_000 * MS).expect("SZ_ACK");
    for (name, max) in [("Q40", 40), ("Q56", 56), ("QBIG", big)] {
        create_queuing_port(name, max, 3, dir, QueuingDiscipline::Fifo).expect(name);
    }
}

/// Start `observe` (one priority below `main`; not counted in RUNNING: it never ends).
fn observer() {
    let pid = new_process("observe", observe_process, 9);
    start_or_defer(pid);
}
