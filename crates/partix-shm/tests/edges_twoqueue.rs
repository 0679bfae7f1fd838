//! The two-sided queue survives its network manager being killed (docs/shm-channels.md,
//! "Crash-safe move"): the manager runs in a child process that the test SIGKILLs at random
//! points of a stream and replaces, while the sender and the receiver (threads of the test
//! process) keep going. Every message the sender sent must arrive exactly once, whole and in
//! order. Some replaced managers are stopped deterministically in the middle of a move
//! (`QueueManager::abandon_after`): after the copy, or after the RX publish and before the TX
//! commit (the manager that replaces the latter must report one recovered move).
//!
//! The manager child is this test binary run again (`<exe> <test> --exact`) with its role in
//! `PARTIX_SHM_ROLE` and the two regions on descriptors 3 and 4.
#![allow(unsafe_code)]
#![cfg(not(loom))]

use partix_shm::twoqueue::{
    run_manager, wait_delivered, MovePhase, QueueManager, QueueReceiver, QueueSender,
    QueueSenderProbe, QueueShape,
};
use partix_shm::{Access, Notifier, RecvMode, Region};
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ROLE: &str = "PARTIX_SHM_ROLE";
const LEN: &str = "PARTIX_SHM_LEN";
const CHILD_FD: i32 = 3;
const TEST: &str = "edges_two_sided_queue_survives_manager_kills";
/// Messages in the stream.
const N: u32 = 10_000;
/// Largest message: large copies make the manager spend its time inside moves.
const MAX: usize = 16 * 1024;
const LIMIT: u32 = 8;

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Message `seq`: a pseudo-random length in 8..=MAX, the sequence number, then bytes that
/// depend on `seq` and their position (a mix of two messages is detected).
fn message(seq: u32, out: &mut Vec<u8>) {
    let len = 8 + (splitmix(u64::from(seq)) % (MAX as u64 - 7)) as usize;
    out.clear();
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&(len as u32).to_le_bytes());
    let salt = splitmix(u64::from(seq) ^ 0x5eed) as u8;
    out.extend((8..len).map(|i| (i as u8) ^ salt));
}

/// Run this test in a child as `role`, with the regions on descriptors 3 and 4; its stdout is
/// piped.
fn spawn_manager(role: &str, regions: &[&Region; 2]) -> Child {
    let fds: Vec<i32> = regions.iter().map(|r| r.raw_fd()).collect();
    let lens: Vec<String> = regions.iter().map(|r| r.len().to_string()).collect();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(LEN, lens.join(","))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: the closure only calls async-signal-safe functions (prctl, fcntl, dup2) between
    // fork and exec, and allocates nothing; the descriptors stay open in the parent.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut moved = [0i32; 2];
            for (slot, &fd) in moved.iter_mut().zip(&fds) {
                *slot = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 100);
                if *slot < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (i, &fd) in moved.iter().enumerate() {
                if libc::dup2(fd, CHILD_FD + i as i32) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    cmd.spawn().expect("spawn the manager process")
}

fn inherited(i: usize) -> Arc<Region> {
    let lens = std::env::var(LEN).unwrap();
    let len: usize = lens.split(',').nth(i).unwrap().parse().unwrap();
    // SAFETY: descriptor 3 + i was set up by `spawn_manager` for this process, nobody else owns it.
    Arc::new(
        unsafe { Region::from_raw_fd(CHILD_FD + i as i32, len, Access::ReadWrite) }
            .expect("map inherited region"),
    )
}

/// The child: attach a manager (reporting what it recovered), then either run until killed
/// (`manager`) or move a few messages and stop in the middle of the next move
/// (`halfway-peeked` / `halfway-delivered`), then wait to be killed.
fn manager_child(role: &str) -> ! {
    use std::io::Write;
    let m = QueueManager::attach(inherited(0), inherited(1)).expect("attach manager");
    let mut out = std::io::stdout();
    writeln!(out, "RECOVERED {}", m.recovered()).unwrap();
    out.flush().unwrap();
    let phase = match role {
        "halfway-peeked" => Some(MovePhase::Peeked),
        "halfway-delivered" => Some(MovePhase::Delivered),
        _ => None,
    };
    match phase {
        None => {
            let never = AtomicBool::new(false);
            run_manager(&Mutex::new(m), &never);
        }
        Some(phase) => {
            let mut m = m;
            // A few whole moves, then the cut one.
            let t0 = Instant::now();
            while m.moved() < 3 && t0.elapsed() < Duration::from_secs(20) {
                if m.run_once() == 0 {
                    std::thread::sleep(Duration::from_micros(100));
                }
            }
            while !m.has_work() && t0.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_micros(100));
            }
            let cut = m.abandon_after(phase);
            writeln!(out, "HALTED {cut}").unwrap();
            out.flush().unwrap();
        }
    }
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn edges_two_sided_queue_survives_manager_kills() {
    if let Ok(role) = std::env::var(ROLE) {
        manager_child(&role);
    }
    let shape = QueueShape::new(MAX as u32, LIMIT).unwrap();
    let tx = Arc::new(Region::create("partix-edges-twoq-tx", shape.tx_size_bytes()).unwrap());
    let rx = Arc::new(Region::create("partix-edges-twoq-rx", shape.rx_size_bytes()).unwrap());
    shape.init(&tx, &rx).unwrap();
    let received = Arc::new(AtomicU32::new(0));
    let failed = Arc::new(Mutex::new(None::<String>));
    let done = Arc::new(AtomicBool::new(false));

    let sender = {
        let (tx, done) = (tx.clone(), done.clone());
        std::thread::spawn(move || {
            let mut s = QueueSender::attach(tx.clone(), LIMIT).unwrap();
            let probe = QueueSenderProbe::attach(tx, LIMIT).unwrap();
            let mut msg = Vec::with_capacity(MAX);
            for seq in 0..N {
                message(seq, &mut msg);
                loop {
                    match s.try_send(&msg) {
                        Ok(()) => break,
                        Err(partix_shm::ring::PushError::Full) => {
                            if done.load(Ordering::Relaxed) {
                                return seq;
                            }
                            probe.space().park_until(
                                Some(Instant::now() + Duration::from_millis(50)),
                                || probe.has_credit(),
                            );
                        }
                        Err(e) => panic!("send {seq}: {e}"),
                    }
                }
            }
            N
        })
    };
    let receiver = {
        let (tx, rx) = (tx.clone(), rx.clone());
        let (received, failed, done) = (received.clone(), failed.clone(), done.clone());
        std::thread::spawn(move || {
            let mut r = QueueReceiver::attach(tx, rx).unwrap();
            let mut buf = vec![0u8; MAX];
            let mut want = Vec::with_capacity(MAX);
            let mut next = 0u32;
            while next < N && !done.load(Ordering::Relaxed) {
                if !wait_delivered(&r, RecvMode::Blocking, Duration::from_millis(50)) {
                    continue;
                }
                let n = r.try_recv(&mut buf).expect("delivered message");
                let seq = u32::from_le_bytes(buf[..4].try_into().unwrap());
                message(next, &mut want);
                if seq != next || buf[..n] != want[..] {
                    *failed.lock().unwrap() = Some(format!(
                        "expected message {next} ({} bytes), got seq {seq} ({n} bytes){}",
                        want.len(),
                        if seq < next { ": a duplicate" } else { "" }
                    ));
                    return;
                }
                next += 1;
                received.store(next, Ordering::Release);
            }
        })
    };

    // The killer: replace the manager at random points until the stream is through.
    let mut x = 0x1234_5678_9abc_def0u64 ^ u64::from(std::process::id());
    let (mut kills, mut halted_delivered, mut recovered_total) = (0u64, 0u64, 0u64);
    let mut expect_recovery = false;
    let t0 = Instant::now();
    let mut child = spawn_manager("manager", &[&tx, &rx]);
    let mut child_role = "manager";
    let outcome = loop {
        if failed.lock().unwrap().is_some() {
            break "failed";
        }
        if received.load(Ordering::Acquire) == N {
            break "done";
        }
        if t0.elapsed() > Duration::from_secs(300) {
            break "timeout";
        }
        x = splitmix(x);
        // A manager is killed at a random point of its run, timed from when it attached (its
        // RECOVERED line): timed from the spawn, a loaded machine killed most managers while they
        // were still starting, and the stream hardly moved. One manager in eight is killed
        // 0..6 ms after its spawn still, wherever it is (starting up, or recovering in attach);
        // never one that must report a recovery, which is awaited first.
        let early = child_role == "manager" && !expect_recovery && (x >> 32).is_multiple_of(8);
        if !early {
            wait_said(&mut child, "RECOVERED");
        }
        if child_role == "manager" {
            // Let it run 0..6 ms, then kill it wherever it is.
            std::thread::sleep(Duration::from_micros(x % 6000));
        } else {
            // Wait (bounded) until it stopped in the middle of its move.
            wait_said(&mut child, "HALTED");
        }
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "the manager died early"
        );
        let (recovered, halted, text) = child_report(&mut child);
        if expect_recovery {
            assert_eq!(
                recovered,
                Some(1),
                "the manager after a halt between RX publish and TX commit must recover it \
                 (its output: {text:?})"
            );
        }
        recovered_total += recovered.unwrap_or(0);
        expect_recovery = child_role == "halfway-delivered" && halted == Some(true);
        halted_delivered += u64::from(expect_recovery);
        kills += 1;
        child_role = if kills % 8 == 1 {
            // Every eighth manager from the second on (the stream has just begun) stops between
            // RX publish and TX commit, whatever the draw.
            "halfway-delivered"
        } else {
            match x % 8 {
                0 => "halfway-peeked",
                1 => "halfway-delivered",
                _ => "manager",
            }
        };
        child = spawn_manager(child_role, &[&tx, &rx]);
    };
    done.store(true, Ordering::Relaxed);
    child.kill().unwrap();
    let _ = child.wait();
    let sent = sender.join().unwrap();
    receiver.join().unwrap();
    if let Some(f) = failed.lock().unwrap().take() {
        panic!("after {kills} manager kills: {f}");
    }
    assert_eq!(
        outcome,
        "done",
        "received {} of {N}",
        received.load(Ordering::Acquire)
    );
    assert_eq!(sent, N);
    eprintln!(
        "two-sided queue: {N} messages, {kills} manager kills ({halted_delivered} between RX \
         publish and TX commit), {recovered_total} moves recovered"
    );
    assert!(kills >= 20, "too few kills to mean anything: {kills}");
    assert!(
        halted_delivered > 0,
        "no manager was stopped between publish and commit"
    );
}

/// Wait until the child said `what`, or it did not within a minute (a manager that never
/// attached is killed all the same; one expected to report a recovery then fails the test).
fn wait_said(child: &mut Child, what: &str) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(60) && !child_said(child, what) {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Read what is available of the child's stdout (it is blocked or dead) and return whether it
/// contains `what`. Keeps what was read for [`child_report`].
fn child_said(child: &mut Child, what: &str) -> bool {
    let Some(out) = child.stdout.as_mut() else {
        return false;
    };
    set_nonblocking(out);
    let mut b = [0u8; 256];
    let mut seen = SEEN.lock().unwrap();
    while let Ok(n) = out.read(&mut b) {
        if n == 0 {
            break;
        }
        seen.push_str(&String::from_utf8_lossy(&b[..n]));
    }
    seen.contains(what)
}

/// Output of the current child collected so far (cleared by [`child_report`]).
static SEEN: Mutex<String> = Mutex::new(String::new());

fn set_nonblocking(out: &std::process::ChildStdout) {
    use std::os::fd::AsRawFd;
    let fd = out.as_raw_fd();
    // SAFETY: fcntl on a descriptor this process owns.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
}

/// After the child died: its `RECOVERED n` and `HALTED b` lines.
fn child_report(child: &mut Child) -> (Option<u64>, Option<bool>, String) {
    let _ = child_said(child, "");
    let text = std::mem::take(&mut *SEEN.lock().unwrap());
    let (mut recovered, mut halted) = (None, None);
    // The harness prints its own text on the same lines.
    let after = |key: &str| {
        text.find(key).map(|i| {
            text[i + key.len()..]
                .split_whitespace()
                .next()
                .unwrap_or("")
        })
    };
    if let Some(v) = after("RECOVERED ") {
        recovered = v.parse().ok();
    }
    if let Some(v) = after("HALTED ") {
        halted = v.parse().ok();
    }
    (recovered, halted, text)
}

/// A destination killed while its manager idles parked on the doorbell (its normal state: a
/// partition restart or a health-monitor kill finds it there) left its registration in the TX
/// region for good, and every later send of the source bumped the doorbell's `epoch` and made
/// a `futex_wake` system call, for the rest of the run (found by review). The replacement
/// manager discards it when it attaches (`Notifier::adopt`): 1000 sends to a destination that
/// never parks make no wake-up (there were 1000).
#[test]
fn edges_a_manager_killed_while_parked_leaves_the_sender_no_wake_ups() {
    let shape = QueueShape::new(64, LIMIT).unwrap();
    let tx = Arc::new(Region::create("partix-edges-twoq-tx", shape.tx_size_bytes()).unwrap());
    let rx = Arc::new(Region::create("partix-edges-twoq-rx", shape.rx_size_bytes()).unwrap());
    shape.init(&tx, &rx).unwrap();
    // The doorbell is the TX region's first line (module docs of `twoqueue`).
    let doorbell = Notifier::new(tx.clone(), 0).unwrap();
    let mut s = QueueSender::attach(tx.clone(), LIMIT).unwrap();
    let mut child = spawn_manager("manager", &[&tx, &rx]);
    let t0 = Instant::now();
    while doorbell.registered() == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the manager never parked"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap();
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
    assert_eq!(doorbell.registered(), 1, "the dead manager's registration");
    // The restarted destination: its manager and receiver attach, and it polls (the runtime's
    // helped manager), so nobody parks on the doorbell.
    let mut m = QueueManager::attach(tx.clone(), rx.clone()).unwrap();
    let mut r = QueueReceiver::attach(tx, rx).unwrap();
    let before = doorbell.wakes();
    let mut buf = [0u8; 64];
    for i in 0..1000u32 {
        s.try_send(&i.to_le_bytes()).unwrap();
        assert_eq!(m.run_once(), 1);
        assert_eq!(r.try_recv(&mut buf), Ok(4));
        assert_eq!(buf[..4], i.to_le_bytes());
    }
    assert_eq!(
        doorbell.wakes().wrapping_sub(before),
        0,
        "sends woke a dead manager"
    );
    assert_eq!(doorbell.registered(), 0);
}
