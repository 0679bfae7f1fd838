//! Real cross-process tests: writer and reader are different processes sharing a memfd.
//!
//! Each test re-runs this test binary as its peer (`<exe> <test name> --exact`) with the role in
//! `PARTIX_SHM_ROLE` and the memfd on descriptor 3; the test function sees the role and plays it.
#![allow(unsafe_code)]
#![cfg(not(loom))]

use partix_shm::ring::{PopError, PushError, RingConsumer, RingLayout, RingProducer};
use partix_shm::sampling::{
    ReadError, SamplingLayout, SamplingReader, SamplingWriter, SlotView, WaitError,
};
use partix_shm::twosided::{NetworkManager, RingShape, TwoSidedReceiver, TwoSidedSender};
use partix_shm::{Access, Notifier, RecvMode, Region};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROLE: &str = "PARTIX_SHM_ROLE";
const LEN: &str = "PARTIX_SHM_LEN";
const CHILD_FD: i32 = 3;

fn role() -> Option<String> {
    std::env::var(ROLE).ok()
}

/// Run `test` of this binary in a child process as `role`, with `region`'s memfd on fd 3.
fn spawn(test: &str, role: &str, region: &Region) -> Child {
    spawn_with(test, role, &[region])
}

/// Run `test` of this binary in a child process as `role`, with the memfds of `regions` on
/// descriptors 3, 4, ... (lengths in `PARTIX_SHM_LEN`, comma-separated).
fn spawn_with(test: &str, role: &str, regions: &[&Region]) -> Child {
    assert!(regions.len() <= 8, "at most 8 regions");
    let fds: Vec<i32> = regions.iter().map(|r| r.raw_fd()).collect();
    let lens: Vec<String> = regions.iter().map(|r| r.len().to_string()).collect();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(LEN, lens.join(","))
        .stdout(Stdio::piped());
    // SAFETY: the closure only calls async-signal-safe functions (prctl, fcntl, dup2) between
    // fork and exec; the descriptors stay open in the parent for the duration of spawn().
    unsafe {
        cmd.pre_exec(move || {
            // First move every source out of the target range so no dup2 clobbers a source.
            // The peer dies with the test thread that spawned it, even when that thread panics
            // before waiting for it (no orphan spinning forever).
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // (No allocation here: a fixed array.)
            let mut moved = [0i32; 8];
            for (slot, &fd) in moved.iter_mut().zip(&fds) {
                *slot = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 100);
                if *slot < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (i, &fd) in moved[..fds.len()].iter().enumerate() {
                if libc::dup2(fd, CHILD_FD + i as i32) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    cmd.spawn().expect("spawn peer process")
}

/// Map the region inherited on fd 3 (in a child).
fn inherited(access: Access) -> Arc<Region> {
    inherited_nth(0, access)
}

/// Map the `i`-th region inherited (fd 3 + i) in a child.
fn inherited_nth(i: usize, access: Access) -> Arc<Region> {
    let lens = std::env::var(LEN).unwrap();
    let len: usize = lens.split(',').nth(i).unwrap().parse().unwrap();
    // SAFETY: fd 3 + i was set up by `spawn_with` for this process and nothing else owns it.
    Arc::new(
        unsafe { Region::from_raw_fd(CHILD_FD + i as i32, len, access) }
            .expect("map inherited region"),
    )
}

/// The stop word of the stress test: the 8 bytes after its sampling slot.
fn stop_word(r: &Region) -> &AtomicU64 {
    let off = r.len() - 64;
    // SAFETY: the region is at least 64 bytes and page-aligned, `off` is a multiple of 64 within
    // it, and the word is only ever accessed atomically (by the parent and the writer child).
    unsafe { &*r.as_ptr().add(off).cast::<AtomicU64>() }
}

/// A second, read-only mapping of `r` in this process.
fn read_only(r: &Region) -> Arc<Region> {
    // SAFETY: dup returns a fresh descriptor that nothing else owns.
    let fd = unsafe { libc::dup(r.raw_fd()) };
    assert!(fd >= 0);
    // SAFETY: fd is fresh and unowned.
    Arc::new(unsafe { Region::from_raw_fd(fd, r.len(), Access::ReadOnly) }.unwrap())
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// 8 KiB of pseudo-random bytes, the same in every process.
fn noise() -> &'static [u8] {
    static NOISE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    NOISE.get_or_init(|| {
        (0..1024u64)
            .flat_map(|k| splitmix(k).to_ne_bytes())
            .collect()
    })
}

/// The message with sequence number `seq`: a pseudo-random length in 1..=max (at most 4 KiB),
/// the sequence number, then noise starting at a `seq`-dependent offset, so a mix of two
/// messages is detected (and cheap to build even in debug builds).
fn message(seq: u32, max: usize, out: &mut Vec<u8>) {
    let len = 1 + (splitmix(u64::from(seq)) % max as u64) as usize;
    let mut head = [0u8; 8];
    head[..4].copy_from_slice(&seq.to_le_bytes());
    head[4..].copy_from_slice(&(len as u32).to_le_bytes());
    out.clear();
    out.extend_from_slice(&head[..len.min(8)]);
    if len > 8 {
        let off = (splitmix(u64::from(seq) ^ 0xABCD) % 4096) as usize;
        out.extend_from_slice(&noise()[off..off + len - 8]);
    }
}

/// Messages of 1..=4096 bytes: the slot layout whose payload starts a line of its own.
#[test]
fn torn_read_stress_between_processes() {
    torn_read_stress("torn_read_stress_between_processes", 4096);
}

/// Messages of 1..=56 bytes: the slot layout whose `begin` and payload share one line.
#[test]
fn torn_read_stress_between_processes_one_data_line() {
    torn_read_stress("torn_read_stress_between_processes_one_data_line", 56);
}

/// Messages of 1..=40 bytes: the compact slot layout, the whole message in one line.
#[test]
fn torn_read_stress_between_processes_compact() {
    torn_read_stress("torn_read_stress_between_processes_compact", 40);
}

/// Reads that must have overlapped a write (retried, or `Contended`) before the torn-read stress
/// stops: one overlap in a few thousand reads says little about the `begin == end` check.
const MIN_OVERLAPS: u64 = 500;
/// ... and of them, reads of each way (`read`, and `wait_newer` in each receive mode).
const MIN_OVERLAPS_PER_WAY: u64 = 50;

/// How the torn-read stress's reader takes a message: the four take turns, [`MODE_BLOCK`]
/// calls each.
const READ_MODES: [Option<RecvMode>; 4] = [
    None,
    Some(RecvMode::Spin),
    Some(RecvMode::SpinThenPark { spins: 16 }),
    Some(RecvMode::Blocking),
];
const MODE_BLOCK: u64 = 64;

/// A writer process writes checksummable messages of up to `max` bytes as fast as it can while
/// this process reads through a read-only mapping and checks every message it gets, taking turns
/// between `read` and `wait_newer` in each receive mode (the parking ones park on the slot's
/// notifier, which the writer wakes). It stops after a second with enough verified reads per
/// way and [`MIN_OVERLAPS`] reads that overlapped a write ([`MIN_OVERLAPS_PER_WAY`] of each
/// way), and fails if 20 s were not enough.
fn torn_read_stress(test: &str, max: usize) {
    let layout = SamplingLayout::new(max as u32).unwrap();
    // The slot, a line for its notifier, then one line holding the stop word (written by the
    // reader only).
    let notifier_at = layout.size_bytes();
    // The barriers of partitions (`partix_shm::barrier`): the writer's wake-up check a compiler
    // fence, the parker's a `membarrier`. (Without them, a parker whose `membarrier` fails
    // parks 1 ms at a time, and a lost wake-up would only slow the test down.)
    let asymmetric = partix_shm::barrier::enable();
    if role().as_deref() == Some("writer") {
        let region = inherited(Access::ReadWrite);
        let stop = stop_word(&region);
        let mut w = SamplingWriter::attach(region.clone(), 0)
            .unwrap()
            .with_notifier(Notifier::new(region.clone(), notifier_at).unwrap());
        let mut msg = Vec::with_capacity(max);
        let start = Instant::now();
        let mut n = 0u64;
        // Write as fast as possible until the reader has seen enough (at most 60 s); sequence
        // numbers start at 1. After every fourth write, pause for twice that write's duration:
        // back-to-back writes of a slow (debug) build would otherwise leave a reader almost no
        // window to complete a copy, while three writes in four still go back to back. After
        // every 64th, sleep a little: a reader waiting in a parking mode then parks, and only
        // the writer's wake-up gets it going again (a lost one shows as a time-out).
        while stop.load(Ordering::Acquire) == 0 && start.elapsed() < Duration::from_secs(60) {
            n += 1;
            message(n as u32, max, &mut msg);
            let t = Instant::now();
            w.write(&msg).unwrap();
            if n.is_multiple_of(64) {
                std::thread::sleep(Duration::from_micros(200));
            } else if n.is_multiple_of(4) {
                let pause = t.elapsed() * 2;
                let t = Instant::now();
                while t.elapsed() < pause {
                    std::hint::spin_loop();
                }
            }
        }
        println!("writes {n}");
        std::process::exit(0);
    }
    let region = Arc::new(Region::create("partix-shm-stress", notifier_at + 128).unwrap());
    SamplingWriter::init(region.clone(), 0, layout).unwrap();
    let stop = stop_word(&region);
    // The slot read-only, the notifier read-write (a parked reader counts itself there).
    let reader = SamplingReader::attach(read_only(&region), 0)
        .unwrap()
        .with_notifier(Notifier::new(region.clone(), notifier_at).unwrap());
    let mut child = spawn(test, "writer", &region);
    let started = Instant::now();
    // Per way of reading: verified reads, and reads that overlapped a write.
    let (mut reads, mut overlapped) = ([0u64; 4], [0u64; 4]);
    let (mut calls, mut empty) = (0u64, 0u64);
    let mut buf = vec![0u8; max];
    let mut expect = Vec::with_capacity(max);
    let mut last_seq = None;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut stopped = false;
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "writer did not finish");
        let elapsed = started.elapsed();
        let enough = elapsed > Duration::from_secs(1)
            && reads.iter().all(|&r| r >= 500)
            && overlapped.iter().all(|&o| o >= MIN_OVERLAPS_PER_WAY)
            && overlapped.iter().sum::<u64>() >= MIN_OVERLAPS;
        if enough || elapsed > Duration::from_secs(20) {
            stop.store(1, Ordering::Release);
            stopped = true;
        }
        let way = (calls / MODE_BLOCK % 4) as usize;
        calls += 1;
        let r = match READ_MODES[way] {
            None => reader.read(&mut buf).map_err(WaitError::Read),
            Some(mode) => reader.wait_newer(&mut buf, last_seq, mode, Some(Duration::from_secs(2))),
        };
        match r {
            Ok(ok) => {
                message(ok.seq, max, &mut expect);
                assert_eq!(ok.len, expect.len(), "torn read: length of seq {}", ok.seq);
                assert!(
                    buf[..ok.len] == expect[..],
                    "torn read: payload of seq {}",
                    ok.seq
                );
                assert!(last_seq.is_none_or(|l| ok.seq >= l), "sequence went back");
                if READ_MODES[way].is_some() {
                    assert_ne!(Some(ok.seq), last_seq, "a wait returned the same message");
                }
                last_seq = Some(ok.seq);
                reads[way] += 1;
                if ok.attempts > 1 {
                    overlapped[way] += 1;
                }
            }
            Err(WaitError::Read(ReadError::Contended { .. })) => overlapped[way] += 1,
            Err(WaitError::Read(ReadError::Empty)) => empty += 1,
            Err(WaitError::TimedOut) if stopped => {}
            Err(e) => panic!("unexpected {e} ({:?})", READ_MODES[way]),
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "writer failed: {:?}", out.status);
    let writes = String::from_utf8_lossy(&out.stdout);
    eprintln!(
        "reads {reads:?} overlapped {overlapped:?} (read, spin, spin-then-park, blocking) \
         empty {empty} in {:?}, asymmetric barriers {asymmetric}; {writes}",
        started.elapsed()
    );
    for (way, r) in reads.iter().enumerate() {
        assert!(
            *r >= 500,
            "too few verified reads {:?}: {r}",
            READ_MODES[way]
        );
    }
    let total: u64 = overlapped.iter().sum();
    assert!(
        total >= MIN_OVERLAPS,
        "only {total} reads overlapped a write in 20 s (at least {MIN_OVERLAPS} needed)"
    );
    for (way, o) in overlapped.iter().enumerate() {
        assert!(
            *o >= MIN_OVERLAPS_PER_WAY,
            "only {o} reads {:?} overlapped a write (at least {MIN_OVERLAPS_PER_WAY} needed)",
            READ_MODES[way]
        );
    }
}

#[test]
fn spsc_queue_million_messages_between_processes() {
    const TEST: &str = "spsc_queue_million_messages_between_processes";
    const N: u64 = 1_000_000;
    const MAX: usize = 64;
    let body = |i: u64, out: &mut [u8; MAX]| -> usize {
        let len = 8 + (i % (MAX as u64 - 7)) as usize;
        out[..8].copy_from_slice(&i.to_le_bytes());
        for (k, b) in out[8..len].iter_mut().enumerate() {
            *b = (i as u8).wrapping_add(k as u8);
        }
        len
    };
    if role().as_deref() == Some("producer") {
        let mut p = RingProducer::attach(inherited(Access::ReadWrite), 0).unwrap();
        let mut msg = [0u8; MAX];
        for i in 0..N {
            let len = body(i, &mut msg);
            loop {
                match p.try_push(&msg[..len]) {
                    Ok(()) => break,
                    Err(PushError::Full) => std::hint::spin_loop(),
                    Err(e) => panic!("{e}"),
                }
            }
        }
        std::process::exit(0);
    }
    let layout = RingLayout::new(1024, MAX as u32).unwrap();
    let region = Arc::new(Region::create("partix-shm-spsc", layout.size_bytes()).unwrap());
    layout.init(&region, 0).unwrap();
    let mut c = RingConsumer::attach(region.clone(), 0).unwrap();
    let mut child = spawn(TEST, "producer", &region);
    let mut buf = [0u8; MAX];
    let mut expect = [0u8; MAX];
    for i in 0..N {
        let n = match c.pop_wait(
            &mut buf,
            RecvMode::SpinThenPark { spins: 10_000 },
            Some(Duration::from_secs(30)),
        ) {
            Ok(n) => n,
            Err(e) => panic!("message {i}: {e} (producer {:?})", child.try_wait()),
        };
        let got = u64::from_le_bytes(buf[..8].try_into().unwrap());
        assert_eq!(got, i, "lost, duplicated or reordered message");
        let len = body(i, &mut expect);
        assert_eq!(&buf[..n], &expect[..len], "message {i} corrupted");
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(c.try_pop(&mut buf), Err(PopError::Empty), "extra message");
}

/// The one-sided queue as a partix port builds it: a split ring (data region read-only for the
/// consumer, `head` and the notifier in a control region), a capacity of 4 slots of which the
/// producer may fill only 3 (the `_within` limit: `MaxNbMessages` 3 rounds up to a 4-slot
/// ring), single pushes and batches (`push_many_quiet`, then one wake-up), single pops that
/// park and batch pops. 300 000 messages (a debug build moves about 50 000 a second through a
/// ring this small) arrive once each, in order, whole; the producer found the ring full many
/// times; and the consumer never saw more than 3 queued, but saw 3.
#[test]
fn spsc_split_queue_within_limit_between_processes() {
    const TEST: &str = "spsc_split_queue_within_limit_between_processes";
    const N: u64 = 300_000;
    const MAX: usize = 64;
    const LIMIT: usize = 3;
    const CHUNK: u64 = 1000;
    // Message `i`: 8..=64 bytes, `i` first, then noise from an `i`-dependent offset (a copy:
    // cheap in a debug build).
    let body = |i: u64, out: &mut [u8]| -> usize {
        let len = 8 + (splitmix(i) % (MAX as u64 - 7)) as usize;
        out[..8].copy_from_slice(&i.to_le_bytes());
        let off = (splitmix(i ^ 0x5eed) % 4096) as usize;
        out[8..len].copy_from_slice(&noise()[off..off + len - 8]);
        len
    };
    let layout = RingLayout::new(4, MAX as u32).unwrap();
    if role().as_deref() == Some("producer") {
        let mut p = RingProducer::attach_split(
            inherited_nth(0, Access::ReadWrite),
            0,
            inherited_nth(1, Access::ReadWrite),
            0,
        )
        .unwrap();
        let mut msgs = [[0u8; MAX]; 5];
        let (mut i, mut full) = (0u64, 0u64);
        while i < N {
            // Chunks take turns: single pushes, then batches of up to 5.
            let r = if (i / CHUNK).is_multiple_of(2) {
                let len = body(i, &mut msgs[0]);
                p.try_push_quiet_within(&msgs[0][..len], LIMIT).map(|()| 1)
            } else {
                let k = (N - i).min(5) as usize;
                let mut lens = [0usize; 5];
                for (j, m) in msgs.iter_mut().take(k).enumerate() {
                    lens[j] = body(i + j as u64, m);
                }
                let mut batch: [&[u8]; 5] = [&[]; 5];
                for ((b, m), &l) in batch.iter_mut().zip(&msgs).zip(&lens).take(k) {
                    *b = &m[..l];
                }
                p.push_many_quiet(&batch[..k], LIMIT)
            };
            match r {
                Ok(k) => {
                    i += k as u64;
                    p.notify();
                }
                Err(PushError::Full) => {
                    full += 1;
                    std::hint::spin_loop();
                }
                Err(e) => panic!("{e}"),
            }
        }
        println!("full {full}");
        std::process::exit(0);
    }
    let data = Arc::new(Region::create("partix-shm-spsc-data", layout.size_bytes()).unwrap());
    let ctrl = Arc::new(Region::create("partix-shm-spsc-ctrl", 4096).unwrap());
    layout.init_split(&data, 0, &ctrl, 0).unwrap();
    let mut c = RingConsumer::attach_split(read_only(&data), 0, ctrl.clone(), 0).unwrap();
    let child = spawn_with(TEST, "producer", &[&data, &ctrl]);
    let mut buf = [0u8; MAX * 3];
    let mut lens = [0usize; 3];
    let mut expect = [0u8; MAX];
    let (mut i, mut most, mut over) = (0u64, 0usize, 0u64);
    while i < N {
        let got = if (i / (CHUNK - 223)).is_multiple_of(2) {
            match c.pop_wait(
                &mut buf[..MAX],
                RecvMode::SpinThenPark { spins: 100 },
                Some(Duration::from_secs(30)),
            ) {
                Ok(n) => {
                    lens[0] = n;
                    1
                }
                Err(e) => panic!("message {i}: {e}"),
            }
        } else {
            match c.try_pop_many(&mut buf, MAX, &mut lens) {
                Ok(k) => k,
                Err(PopError::Empty) => {
                    std::hint::spin_loop();
                    0
                }
                Err(e) => panic!("message {i}: {e}"),
            }
        };
        for (k, &n) in lens.iter().take(got).enumerate() {
            let m = &buf[k * MAX..k * MAX + n];
            let seq = u64::from_le_bytes(m[..8].try_into().unwrap());
            assert_eq!(seq, i, "lost, duplicated or reordered message");
            let len = body(i, &mut expect);
            assert_eq!(m, &expect[..len], "message {i} corrupted");
            i += 1;
        }
        // The consumer's own head is current, and the producer fills below head + LIMIT.
        let q = c.len();
        most = most.max(q);
        if q > LIMIT {
            over += 1;
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "producer: {:?}", out.status);
    assert_eq!(c.try_pop(&mut buf), Err(PopError::Empty), "extra message");
    let text = String::from_utf8_lossy(&out.stdout);
    let full: u64 = text
        .split_once("full ")
        .and_then(|(_, v)| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no full count in {text:?}"));
    eprintln!("full {full}, most queued {most}");
    assert_eq!(
        over, 0,
        "more than {LIMIT} queued {over} times (up to {most})"
    );
    assert_eq!(most, LIMIT, "the ring never held its limit");
    assert!(
        full >= 1000,
        "the producer found the ring full only {full} times"
    );
}

/// One side of the ping-pong of `asymmetric_barriers_lose_no_wake_up_between_processes`: wait
/// for message `i` on `rx` with a random number of spins before parking (so the park lands
/// before, at and after the moment the peer publishes), then answer on `tx`. A wake-up lost
/// shows as a 5 s time-out. Return how many waits parked (took longer than `PARKED`).
fn ping_pong_side(
    rx: &mut RingConsumer,
    tx: &mut RingProducer,
    n: u64,
    first: bool,
    seed: u64,
) -> u64 {
    const PARKED: Duration = Duration::from_micros(15);
    let mut buf = [0u8; 8];
    let mut parked = 0;
    for i in 0..n {
        if first {
            tx.try_push(&i.to_le_bytes()).unwrap();
        }
        // A quarter parks at once; the rest spin up to 255 times first.
        let r = splitmix(seed ^ i);
        let spins = if r.is_multiple_of(4) {
            0
        } else {
            (r >> 8) as u32 % 256
        };
        let t = Instant::now();
        match rx.pop_wait(
            &mut buf,
            RecvMode::SpinThenPark { spins },
            Some(Duration::from_secs(5)),
        ) {
            Ok(8) => {}
            r => panic!("round trip {i}: {r:?} (a lost wake-up times out)"),
        }
        if t.elapsed() > PARKED {
            parked += 1;
        }
        assert_eq!(u64::from_le_bytes(buf), i, "lost or reordered message");
        if !first {
            tx.try_push(&i.to_le_bytes()).unwrap();
        }
    }
    parked
}

/// The notifier with asymmetric barriers (`partix_shm::barrier`: the writer's fence a compiler
/// fence, the parker's a `membarrier`) between two processes: a ping-pong in which both sides
/// park at random moments around the other's publication loses no wake-up.
#[test]
fn asymmetric_barriers_lose_no_wake_up_between_processes() {
    const TEST: &str = "asymmetric_barriers_lose_no_wake_up_between_processes";
    const N: u64 = 20_000;
    let layout = RingLayout::new(4, 8).unwrap();
    let ring = layout.size_bytes().next_multiple_of(4096);
    if role().as_deref() == Some("pong") {
        let asym = partix_shm::barrier::enable();
        let r = inherited(Access::ReadWrite);
        let mut rx = RingConsumer::attach(r.clone(), 0).unwrap();
        let mut tx = RingProducer::attach(r, ring).unwrap();
        let parked = ping_pong_side(&mut rx, &mut tx, N, false, 2);
        println!("pong parked {parked} asymmetric {asym}");
        std::process::exit(0);
    }
    let asym = partix_shm::barrier::enable();
    let region = Arc::new(Region::create("partix-shm-asym", 2 * ring).unwrap());
    layout.init(&region, 0).unwrap();
    layout.init(&region, ring).unwrap();
    let mut tx = RingProducer::attach(region.clone(), 0).unwrap();
    let mut rx = RingConsumer::attach(region.clone(), ring).unwrap();
    let mut child = spawn(TEST, "pong", &region);
    let parked = ping_pong_side(&mut rx, &mut tx, N, true, 1);
    let status = child.wait().unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(status.success(), "pong: {status:?} {out}");
    println!("ping parked {parked} asymmetric {asym}; {}", out.trim());
    assert_eq!(asym, partix_shm::barrier::asymmetric());
}

#[test]
fn writer_killed_mid_write_never_yields_a_torn_message() {
    const TEST: &str = "writer_killed_mid_write_never_yields_a_torn_message";
    const MAX: usize = 1 << 20;
    let fill = |seq: u32, buf: &mut [u8]| {
        buf.fill(seq as u8);
    };
    if role().as_deref() == Some("writer") {
        let mut w = SamplingWriter::attach(inherited(Access::ReadWrite), 0).unwrap();
        let mut msg = vec![0u8; MAX];
        let start = Instant::now();
        // Large messages back to back until killed (gives up after 60 s if nobody kills it).
        while start.elapsed() < Duration::from_secs(60) {
            let seq = w.write(&msg).unwrap();
            fill(seq.wrapping_add(1), &mut msg);
        }
        std::process::exit(3);
    }
    let layout = SamplingLayout::new(MAX as u32).unwrap();
    let region = Arc::new(Region::create("partix-shm-kill", layout.size_bytes()).unwrap());
    let mut buf = vec![0u8; MAX];
    let mut mid_write_kills = 0;
    for trial in 0..10u64 {
        SamplingWriter::init(region.clone(), 0, layout).unwrap();
        let reader = SamplingReader::attach(read_only(&region), 0)
            .unwrap()
            .with_max_attempts(3);
        let mut child = spawn(TEST, "writer", &region);
        let deadline = Instant::now() + Duration::from_secs(30);
        while reader.latest_seq().unwrap_or(0) < 3 {
            assert!(Instant::now() < deadline, "writer never wrote");
            std::thread::sleep(Duration::from_micros(200));
        }
        std::thread::sleep(Duration::from_micros(37 * trial));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        if reader.write_in_progress() {
            mid_write_kills += 1;
        }
        match reader.read(&mut buf) {
            Ok(ok) => {
                // Message `seq` is filled with the byte `seq as u8`; message 1 is all zeroes.
                let expect = if ok.seq == 1 { 0 } else { ok.seq as u8 };
                assert_eq!(ok.len, MAX);
                assert!(
                    buf.iter().all(|&b| b == expect),
                    "torn message after kill (seq {})",
                    ok.seq
                );
            }
            Err(ReadError::Contended { .. }) => {
                assert!(
                    reader.write_in_progress(),
                    "contended without a cut-off write"
                );
            }
            Err(e) => panic!("unexpected {e}"),
        }
        // A restarted writer makes the slot readable again.
        let mut w = SamplingWriter::attach(region.clone(), 0).unwrap();
        let seq = w.write(b"after restart").unwrap();
        let ok = reader.read(&mut buf).unwrap();
        assert_eq!((&buf[..ok.len], ok.seq), (&b"after restart"[..], seq));
    }
    assert!(
        mid_write_kills > 0,
        "no kill landed in the middle of a write in 10 trials"
    );
}

/// The two-sided counterpart of `writer_killed_mid_write_never_yields_a_torn_message`: a sender
/// process writing 1 MiB messages back to back into its TX ring is SIGKILLed at varying moments;
/// the manager then delivers the last complete message, whole, never the one cut off, and a
/// restarted sender continues. At least one kill of ten must land in the middle of a write (a TX
/// slot left with `begin != end`).
#[test]
fn two_sided_sender_killed_mid_write_never_yields_a_torn_message() {
    const TEST: &str = "two_sided_sender_killed_mid_write_never_yields_a_torn_message";
    const MAX: usize = 1 << 20;
    const SLOTS: u32 = 4;
    // Message `seq`: MAX - seq % 4096 bytes, its sequence number first, then `seq as u8`.
    let fill = |seq: u32, buf: &mut [u8]| -> usize {
        let len = MAX - (seq as usize % 4096);
        buf[..8].copy_from_slice(&u64::from(seq).to_le_bytes());
        buf[8..len].fill(seq as u8);
        len
    };
    if role().as_deref() == Some("writer") {
        let mut s = TwoSidedSender::attach(inherited(Access::ReadWrite), 0).unwrap();
        let mut msg = vec![0u8; MAX];
        let start = Instant::now();
        let mut next = s.write(b"first").unwrap() + 1;
        // Large messages back to back until killed (gives up after 60 s if nobody kills it).
        while start.elapsed() < Duration::from_secs(60) {
            let len = fill(next, &mut msg);
            assert_eq!(s.write(&msg[..len]).unwrap(), next);
            next += 1;
        }
        std::process::exit(3);
    }
    let shape = RingShape::new(MAX as u32, SLOTS).unwrap();
    let txr = Arc::new(Region::create("partix-shm-2s-kill-tx", shape.tx_size_bytes()).unwrap());
    let rxr = Arc::new(Region::create("partix-shm-2s-kill-rx", shape.rx_size_bytes()).unwrap());
    // The TX ring's words (`tail` at 128, slots of begin | stamp | payload | end from 192; see
    // partix_shm::twosided), to see whether the sender died inside a write.
    let stride = MAX / 8 + 3;
    // SAFETY: the region is mapped for as long as `txr` lives (this function), page-aligned, at
    // least 192 + 8 * stride * SLOTS bytes (tx_size_bytes), and its words are only accessed
    // atomically here (loads).
    let words: &[AtomicU64] =
        unsafe { std::slice::from_raw_parts(txr.as_ptr().cast::<AtomicU64>(), txr.len() / 8) };
    let slot = |k: usize| SlotView::from_words(&words[24 + k * stride..24 + (k + 1) * stride]);
    let tail = &words[16];
    let mut buf = vec![0u8; MAX];
    let mut expect = vec![0u8; MAX];
    let mut mid_write_kills = 0;
    for trial in 0..10u64 {
        TwoSidedSender::init(txr.clone(), 0, shape).unwrap();
        let mut r = TwoSidedReceiver::init(rxr.clone(), 0, shape).unwrap();
        let mut child = spawn(TEST, "writer", &txr);
        let deadline = Instant::now() + Duration::from_secs(30);
        while tail.load(Ordering::Acquire) < 3 {
            assert!(Instant::now() < deadline, "writer never wrote");
            std::thread::sleep(Duration::from_micros(200));
        }
        std::thread::sleep(Duration::from_micros(37 * trial));
        child.kill().unwrap(); // SIGKILL, our own child
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        let written = tail.load(Ordering::Acquire);
        let cut = (0..SLOTS as usize)
            .filter(|&k| slot(k).begin() != slot(k).end())
            .count();
        assert!(cut <= 1, "{cut} TX slots mid-write");
        if cut == 1 {
            // The slot of the message being written, the one after the last complete.
            let k = (written % u64::from(SLOTS)) as usize;
            assert_ne!(slot(k).begin(), slot(k).end(), "another slot is mid-write");
            mid_write_kills += 1;
        }
        // A manager attached after the death delivers the last complete message, whole.
        let mut m = NetworkManager::attach(txr.clone(), 0, rxr.clone(), 0).unwrap();
        m.run_once();
        let ok = r.read(&mut buf).unwrap();
        assert_eq!(u64::from(ok.seq), written, "not the last complete message");
        let len = fill(ok.seq, &mut expect);
        assert_eq!(ok.len, len, "length of message {}", ok.seq);
        assert!(buf[..len] == expect[..len], "torn message {}", ok.seq);
        // A restarted sender makes the next message deliverable.
        let mut s = TwoSidedSender::attach(txr.clone(), 0).unwrap();
        let seq = s.write(b"after restart").unwrap();
        m.run_once();
        let ok = r.read(&mut buf).unwrap();
        assert_eq!((&buf[..ok.len], ok.seq), (&b"after restart"[..], seq));
    }
    eprintln!("two-sided: {mid_write_kills} of 10 kills landed mid-write");
    assert!(
        mid_write_kills > 0,
        "no kill landed in the middle of a write in 10 trials"
    );
}

#[test]
fn reader_mapping_is_read_only() {
    const TEST: &str = "reader_mapping_is_read_only";
    if role().as_deref() == Some("reader") {
        let region = inherited(Access::ReadOnly);
        let reader = SamplingReader::attach(region.clone(), 0).unwrap();
        let mut buf = [0u8; 16];
        let ok = reader.read(&mut buf).unwrap();
        println!("read ok {}", String::from_utf8_lossy(&buf[..ok.len]));
        // Any store through the read-only mapping must fault.
        // SAFETY: deliberately storing into a PROT_READ mapping to check that it faults; the
        // process dies with SIGSEGV before anything else observes the store.
        unsafe { region.as_ptr().add(64).write_volatile(1) };
        println!("store went through");
        std::process::exit(0);
    }
    let layout = SamplingLayout::new(16).unwrap();
    let region = Arc::new(Region::create("partix-shm-ro", layout.size_bytes()).unwrap());
    let mut w = SamplingWriter::init(region.clone(), 0, layout).unwrap();
    w.write(b"hello").unwrap();
    let out = spawn(TEST, "reader", &region).wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("read ok hello"), "child output: {stdout}");
    assert!(
        !stdout.contains("store went through"),
        "child output: {stdout}"
    );
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{:?}", out.status);
    // The slot is untouched.
    let mut buf = [0u8; 16];
    let ok = SamplingReader::attach(region, 0)
        .unwrap()
        .read(&mut buf)
        .unwrap();
    assert_eq!(&buf[..ok.len], b"hello");
}

#[test]
fn two_sided_sender_manager_receiver_in_three_processes() {
    const TEST: &str = "two_sided_sender_manager_receiver_in_three_processes";
    const N: u32 = 50_000;
    const MAX: usize = 256;
    match role().as_deref() {
        Some("sender") => {
            let mut s = TwoSidedSender::attach(inherited(Access::ReadWrite), 0).unwrap();
            let mut msg = Vec::with_capacity(MAX);
            for seq in 1..=N {
                message(seq, MAX, &mut msg);
                assert_eq!(s.write(&msg).unwrap(), seq);
                if seq % 64 == 0 {
                    // Let the receiver catch up now and then, so both "every message" and
                    // "overwritten before sent" happen.
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
            std::process::exit(0);
        }
        Some("manager") => {
            let mut m = NetworkManager::attach(
                inherited_nth(0, Access::ReadWrite),
                0,
                inherited_nth(1, Access::ReadWrite),
                0,
            )
            .unwrap();
            // A daemon: runs (parked on futexes when idle) until killed.
            let never = std::sync::atomic::AtomicBool::new(false);
            m.run_until(&never, Duration::from_secs(1));
            std::process::exit(4);
        }
        _ => {}
    }
    let shape = RingShape::new(MAX as u32, 4).unwrap();
    let txr = Arc::new(Region::create("partix-shm-2s-tx", shape.tx_size_bytes()).unwrap());
    let rxr = Arc::new(Region::create("partix-shm-2s-rx", shape.rx_size_bytes()).unwrap());
    TwoSidedSender::init(txr.clone(), 0, shape).unwrap();
    let mut r = TwoSidedReceiver::init(rxr.clone(), 0, shape).unwrap();
    let mut manager = spawn_with(TEST, "manager", &[&txr, &rxr]);
    let mut sender = spawn(TEST, "sender", &txr);
    let mut buf = [0u8; MAX];
    let mut expect = Vec::with_capacity(MAX);
    let (mut last, mut reads) = (None, 0u64);
    while last != Some(N) {
        let ok = match r.wait_newer(
            &mut buf,
            last,
            RecvMode::Blocking,
            Some(Duration::from_secs(30)),
        ) {
            Ok(ok) => ok,
            Err(e) => panic!(
                "after seq {last:?}: {e} (sender {:?}, manager {:?})",
                sender.try_wait(),
                manager.try_wait()
            ),
        };
        message(ok.seq, MAX, &mut expect);
        assert!(buf[..ok.len] == expect[..], "torn message {}", ok.seq);
        assert!(
            last.is_none_or(|l| ok.seq > l),
            "not newer: {} after {last:?}",
            ok.seq
        );
        last = Some(ok.seq);
        reads += 1;
    }
    assert!(sender.wait().unwrap().success());
    manager.kill().unwrap();
    assert_eq!(
        manager.wait().unwrap().signal(),
        Some(libc::SIGKILL),
        "manager died early"
    );
    eprintln!("two-sided: {reads} distinct messages read of {N}");
    assert!(reads > 10, "too few deliveries: {reads}");
}
