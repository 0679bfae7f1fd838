//! Cross-process round trips over shared memory, compared with a raw cache-line ping-pong.
//!
//! ```text
//! cargo run --release -p partix-shm --example pingpong [-- iterations]
//! ```
//! Two processes (this one and a forked child) pinned to CPUs 0 and 1:
//! - `raw`: an `AtomicU64` bounced between the processes (the floor for any shared-memory RTT),
//!   and `raw two-line`: ping stores word A, pong answers in word B on another page — the same
//!   two-line topology as a ping-pong through two slots or two channels (ratios are printed
//!   against both);
//! - `one-sided`: a message written into sampling slot A→B, read (spin mode) and echoed through
//!   slot B→A — write + read both ways per round trip — at 16 B, 56 B and 4 KiB;
//! - `one-sided blocking`: the same with both sides parked on futexes (`RecvMode::Blocking`);
//! - `two-sided`: sender → TX ring → network manager (a thread of the receiving process, parked on
//!   its doorbell between messages) → RX ring → receiver, both ways, receivers blocking — the
//!   paper's comparison of the two designs;
//! - `spsc`: 64-byte messages through a ring from one process to the other (throughput), with
//!   `try_push` (notifier check per push) and `try_push_quiet`.
//!
//! Prints n, min, p50, p90, p99, p99.9, p99.99, max (ns, HdrHistogram) and the ratio of each
//! p50 to the raw p50 of the same run.
//!
//! On a busy machine the two processes are time-sliced with everything else and the numbers
//! measure the scheduler. Run as root, the program first moves itself into a new session whose
//! autogroup it sets to nice -20 (and renices itself to -20), which keeps both CPUs mostly its own
//! without SCHED_FIFO; it says when that is not possible. (Being in its own session, it does not
//! see Ctrl-C from the terminal; it finishes by itself in about half a minute.)
#![allow(unsafe_code)]

use hdrhistogram::Histogram;
use partix_shm::ring::{PushError, RingConsumer, RingLayout, RingProducer};
use partix_shm::sampling::{SamplingLayout, SamplingReader, SamplingWriter};
use partix_shm::twosided::{NetworkManager, RingShape, TwoSidedReceiver, TwoSidedSender};
use partix_shm::{Notifier, RecvMode, Region};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

/// Best effort: a new session (so a new autogroup) at nice -20.
fn prioritise() {
    // SAFETY: setsid and setpriority have no memory-safety preconditions.
    let sid = unsafe { libc::setsid() };
    let autogroup = sid >= 0 && std::fs::write("/proc/self/autogroup", "-20").is_ok();
    // SAFETY: as above; `who` 0 = this process.
    let nice = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -20) } == 0;
    if !(autogroup && nice) {
        println!(
            "note: could not raise priority (autogroup {autogroup}, nice {nice}); on a busy machine the numbers include time slicing"
        );
    }
}

fn pin(cpu: usize) {
    // SAFETY: an all-zero cpu_set_t is valid; CPU_SET writes inside it; sched_setaffinity reads
    // it for the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            eprintln!(
                "warning: cannot pin to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// Run `child` in a forked process pinned to CPU 1 while `parent` runs here on CPU 0.
fn in_two_processes<T>(child: impl FnOnce(), parent: impl FnOnce() -> T) -> T {
    // SAFETY: this program is single-threaded when it forks; the child only runs `child` and
    // leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        pin(1);
        child();
        // SAFETY: _exit ends the child without running the parent's destructors twice.
        unsafe { libc::_exit(0) };
    }
    pin(0);
    let out = parent();
    let mut status = 0;
    // SAFETY: pid is our child; status is a valid out-pointer.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child failed"
    );
    out
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).unwrap()
}

fn report(name: &str, h: &Histogram<u64>, baselines: &[(&str, u64)]) {
    let ratio: String = baselines
        .iter()
        .map(|(b, r)| {
            format!(
                "  p50/{b} {:.2}x",
                h.value_at_quantile(0.5) as f64 / *r as f64
            )
        })
        .collect();
    println!(
        "{name:<24} n {:>8}  min {:>6}  p50 {:>6}  p90 {:>6}  p99 {:>6}  p99.9 {:>7}  p99.99 {:>7}  max {:>8}{ratio}",
        h.len(),
        h.min(),
        h.value_at_quantile(0.5),
        h.value_at_quantile(0.9),
        h.value_at_quantile(0.99),
        h.value_at_quantile(0.999),
        h.value_at_quantile(0.9999),
        h.max()
    );
}

fn raw(iters: u64, warmup: u64, two_lines: bool) -> Histogram<u64> {
    let r = Region::create("partix-pingpong-raw", 8192).unwrap();
    // SAFETY: the region is 8192 bytes, page-aligned, and shared (MAP_SHARED) with the child;
    // offsets 0 and 4096 are 8-aligned and in bounds.
    let (ab, ba) = unsafe {
        (
            &*r.as_ptr().cast::<AtomicU64>(),
            &*r.as_ptr()
                .add(if two_lines { 4096 } else { 0 })
                .cast::<AtomicU64>(),
        )
    };
    let total = iters + warmup;
    in_two_processes(
        || {
            for i in 0..total {
                while ab.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                ba.store(2 * i + 2, Ordering::Release);
            }
        },
        || {
            let mut h = hist();
            for i in 0..total {
                let t = Instant::now();
                ab.store(2 * i + 1, Ordering::Release);
                while ba.load(Ordering::Acquire) != 2 * i + 2 {
                    std::hint::spin_loop();
                }
                let dt = t.elapsed().as_nanos() as u64;
                if i >= warmup {
                    h.record(dt.max(1)).unwrap();
                }
            }
            h
        },
    )
}

/// `stamp`: take the `CLOCK_MONOTONIC` stamp per write as the port layer will (`write`), or
/// pass a constant (`write_stamped`) to show the cost of the clock read.
fn one_sided(size: usize, iters: u64, warmup: u64, stamp: bool, mode: RecvMode) -> Histogram<u64> {
    let layout = SamplingLayout::new(size as u32).unwrap();
    // Each slot on its own pages, as two ports of two partitions would be; the notifiers after.
    let slot = layout.size_bytes().div_ceil(4096) * 4096;
    let r = Arc::new(Region::create("partix-pingpong-slots", 3 * slot).unwrap());
    let n_ab = Notifier::new(r.clone(), 2 * slot).unwrap();
    let n_ba = Notifier::new(r.clone(), 2 * slot + 64).unwrap();
    let mut ab = SamplingWriter::init(r.clone(), 0, layout)
        .unwrap()
        .with_notifier(n_ab.clone());
    let mut ba = SamplingWriter::init(r.clone(), slot, layout)
        .unwrap()
        .with_notifier(n_ba.clone());
    let ab_r = SamplingReader::attach(r.clone(), 0)
        .unwrap()
        .with_notifier(n_ab);
    let ba_r = SamplingReader::attach(r.clone(), slot)
        .unwrap()
        .with_notifier(n_ba);
    let total = iters + warmup;
    in_two_processes(
        move || {
            let mut buf = vec![0u8; size];
            let mut last = None;
            for _ in 0..total {
                let ok = ab_r.wait_newer(&mut buf, last, mode, None).unwrap();
                last = Some(ok.seq);
                if stamp {
                    ba.write(&buf[..ok.len]).unwrap();
                } else {
                    ba.write_stamped(&buf[..ok.len], 1).unwrap();
                }
            }
        },
        move || {
            let msg: Vec<u8> = (0..size).map(|i| i as u8).collect();
            let mut buf = vec![0u8; size];
            let mut h = hist();
            let mut last = None;
            for i in 0..total {
                let t = Instant::now();
                if stamp {
                    ab.write(&msg).unwrap();
                } else {
                    ab.write_stamped(&msg, 1).unwrap();
                }
                let ok = ba_r.wait_newer(&mut buf, last, mode, None).unwrap();
                let dt = t.elapsed().as_nanos() as u64;
                last = Some(ok.seq);
                assert_eq!(ok.len, size);
                if i >= warmup {
                    h.record(dt.max(1)).unwrap();
                }
            }
            h
        },
    )
}

/// A manager thread that runs until the returned flag is set (then join the handle).
fn manager_thread(mut m: NetworkManager) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let h = std::thread::spawn(move || m.run_until(&s, Duration::from_millis(5)));
    (stop, h)
}

fn two_sided(size: usize, iters: u64, warmup: u64, mode: RecvMode) -> Histogram<u64> {
    let shape = RingShape::new(size as u32, 4).unwrap();
    let page = |n: usize| n.div_ceil(4096) * 4096;
    let (tx, rx) = (page(shape.tx_size_bytes()), page(shape.rx_size_bytes()));
    let r = Arc::new(Region::create("partix-pingpong-2s", 2 * (tx + rx)).unwrap());
    // A→B: TX at 0, RX at tx; B→A: TX at tx + rx, RX at 2 tx + rx.
    let (ab_tx, ab_rx, ba_tx, ba_rx) = (0, tx, tx + rx, 2 * tx + rx);
    let mut ab_s = TwoSidedSender::init(r.clone(), ab_tx, shape).unwrap();
    let mut ab_r = TwoSidedReceiver::init(r.clone(), ab_rx, shape).unwrap();
    let mut ba_s = TwoSidedSender::init(r.clone(), ba_tx, shape).unwrap();
    let mut ba_r = TwoSidedReceiver::init(r.clone(), ba_rx, shape).unwrap();
    let ab_m = NetworkManager::attach(r.clone(), ab_tx, r.clone(), ab_rx).unwrap();
    let ba_m = NetworkManager::attach(r.clone(), ba_tx, r.clone(), ba_rx).unwrap();
    let total = iters + warmup;
    in_two_processes(
        move || {
            let (stop, h) = manager_thread(ab_m);
            let mut buf = vec![0u8; size];
            let mut last = None;
            for _ in 0..total {
                let ok = ab_r.wait_newer(&mut buf, last, mode, None).unwrap();
                last = Some(ok.seq);
                ba_s.write(&buf[..ok.len]).unwrap();
            }
            stop.store(true, Ordering::Release);
            h.join().unwrap();
        },
        move || {
            let (stop, h) = manager_thread(ba_m);
            let msg: Vec<u8> = (0..size).map(|i| i as u8).collect();
            let mut buf = vec![0u8; size];
            let mut hist = hist();
            let mut last = None;
            for i in 0..total {
                let t = Instant::now();
                ab_s.write(&msg).unwrap();
                let ok = ba_r.wait_newer(&mut buf, last, mode, None).unwrap();
                let dt = t.elapsed().as_nanos() as u64;
                last = Some(ok.seq);
                assert_eq!(ok.len, size);
                if i >= warmup {
                    hist.record(dt.max(1)).unwrap();
                }
            }
            stop.store(true, Ordering::Release);
            h.join().unwrap();
            hist
        },
    )
}

fn spsc(messages: u64, quiet: bool) -> f64 {
    let layout = RingLayout::new(4096, 64).unwrap();
    let r = Arc::new(Region::create("partix-pingpong-ring", layout.size_bytes()).unwrap());
    layout.init(&r, 0).unwrap();
    let mut p = RingProducer::attach(r.clone(), 0).unwrap();
    let mut c = RingConsumer::attach(r.clone(), 0).unwrap();
    in_two_processes(
        move || {
            let mut msg = [7u8; 64];
            for i in 0..messages {
                msg[..8].copy_from_slice(&i.to_le_bytes());
                loop {
                    let r = if quiet {
                        p.try_push_quiet(&msg)
                    } else {
                        p.try_push(&msg)
                    };
                    match r {
                        Ok(()) => break,
                        Err(PushError::Full) => std::hint::spin_loop(),
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        },
        move || {
            let mut buf = [0u8; 64];
            let mut start = None;
            for i in 0..messages {
                loop {
                    match c.try_pop(&mut buf) {
                        Ok(_) => break,
                        Err(_) => std::hint::spin_loop(),
                    }
                }
                if i == 0 {
                    start = Some(Instant::now());
                }
                assert_eq!(u64::from_le_bytes(buf[..8].try_into().unwrap()), i);
            }
            (messages - 1) as f64 / start.unwrap().elapsed().as_secs_f64()
        },
    )
}

fn main() {
    prioritise();
    let iters: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let warmup = iters / 10;
    let clock = {
        let t = Instant::now();
        for _ in 0..1_000_000 {
            std::hint::black_box(Instant::now());
        }
        t.elapsed().as_nanos() as f64 / 1e6
    };
    println!(
        "partix-shm pingpong: {} CPUs, clock read {clock:.1} ns, {iters} round trips per class (+{warmup} warm-up), CPUs 0 and 1, spin mode; times in ns",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let raw_h = raw(iters, warmup, false);
    let raw_p50 = raw_h.value_at_quantile(0.5);
    report("raw cache-line RTT", &raw_h, &[]);
    let raw2_h = raw(iters, warmup, true);
    let raw2_p50 = raw2_h.value_at_quantile(0.5);
    report("raw two-line RTT", &raw2_h, &[("raw", raw_p50)]);
    let base = [("raw", raw_p50), ("raw2", raw2_p50)];
    for size in [16usize, 56, 4096] {
        let h = one_sided(size, iters, warmup, true, RecvMode::Spin);
        report(&format!("one-sided {size} B RTT"), &h, &base);
    }
    for size in [16usize, 56, 4096] {
        let h = one_sided(size, iters, warmup, false, RecvMode::Spin);
        report(&format!("  same, no clock {size} B"), &h, &base);
    }
    // The event-driven classes park on futexes: fewer round trips. (No two-sided spin class:
    // with 2 CPUs the manager thread would share its CPU with a spinning receiver.)
    let (bi, bw) = (iters / 10, warmup / 10);
    println!("blocking classes (receivers and managers park on futexes):");
    for size in [16usize, 56, 4096] {
        let h = one_sided(size, bi, bw, true, RecvMode::Blocking);
        report(&format!("one-sided {size} B block"), &h, &base);
        let h = two_sided(size, bi, bw, RecvMode::Blocking);
        report(&format!("two-sided {size} B block"), &h, &base);
    }
    for quiet in [false, true] {
        let rate = spsc(20_000_000, quiet);
        println!(
            "spsc 64 B {:<14} {:>6.1} M msg/s (cross-process, 4096 slots)",
            if quiet { "try_push_quiet" } else { "try_push" },
            rate / 1e6
        );
    }
}
