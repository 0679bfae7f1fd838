//! `CLOCK_MONOTONIC` for the message path, read from the TSC when the kernel itself keeps time
//! with it.
//!
//! A sampling message is stamped when it is written and its age is checked against the port's
//! refresh period when it is read, so every one-way trip pays two clock reads. On the 2-vCPU AMD
//! EPYC VM this was measured on, `clock_gettime(CLOCK_MONOTONIC)` (vDSO) costs 37 ns and `rdtsc`
//! 16 ns; the two reads were the largest single cost of a 16 B one-sided round trip.
//!
//! [`now_ns`] extrapolates from a per-thread anchor, a pair (TSC, `CLOCK_MONOTONIC`) read
//! together, with the rate measured between the last two anchors:
//! ```text
//! now = anchor_ns + (tsc - anchor_tsc) * rate          rate = Δns / Δtsc of the last interval
//! ```
//! - **When.** Only when the kernel's clocksource is `tsc` (it then has checked that the TSC is
//!   invariant and synchronised across CPUs) on x86-64; otherwise, and during the process's
//!   first [`CALIBRATE_NS`], it is `clock_gettime` itself.
//! - **Calibration, once per process.** The first rate a thread of the process measures (over
//!   its first [`CALIBRATE_NS`]; [`calibrate`], which the partition runtime calls when it
//!   starts, does it and waits) is shared through one atomic word: a thread that starts later
//!   anchors at its first read and uses that rate at once. No lock: an APEX STOP parks a thread
//!   for good wherever it is, and a lock held there would stop every later thread at its first
//!   clock read. (Session 4 calibrated per thread: each new thread read `clock_gettime` plus two
//!   TSCs for its first millisecond, about 50 ns a read, which a benchmark of a few thousand
//!   round trips per process measured as +0.1 µs per one-sided
//!   round trip.) Later rates are measured per thread, between its own anchors.
//! - **Accuracy.** A new anchor is taken after at most [`SPAN_FACTOR`] times the interval the
//!   rate was measured over (4 ms after the first 1 ms, then 16 ms, then every [`REANCHOR_NS`]),
//!   and the rate follows the kernel's (NTP slewing included) with a lag of one interval. The
//!   error is then at most a few jitters of a `clock_gettime` read (hundreds of ns), plus, under
//!   NTP slewing at its 500 ppm maximum, 25 µs. Stamps are compared with refresh periods of
//!   milliseconds and more.
//! - **Monotonic** per thread (never below the last value it returned).
//!
//! The executive's scheduling keeps using `clock_gettime` directly.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// How long a thread reads `clock_gettime` before it trusts its measured TSC rate.
pub const CALIBRATE_NS: u64 = 1_000_000;
/// Longest TSC time between two anchors (in ns at the measured rate). An anchor is also taken
/// after [`SPAN_FACTOR`] times the interval the current rate was measured over, so the
/// extrapolation error stays within a few `clock_gettime` jitters while the thread's first
/// intervals are short.
pub const REANCHOR_NS: u64 = 50_000_000;
/// See [`REANCHOR_NS`].
pub const SPAN_FACTOR: u64 = 4;

/// Return `CLOCK_MONOTONIC` in nanoseconds (the system call, through the vDSO).
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[derive(Clone, Copy)]
struct Anchor {
    /// TSC and `CLOCK_MONOTONIC` of the current anchor (0: none yet).
    tsc: u64,
    ns: u64,
    /// ns per TSC tick, fixed point with 32 fraction bits (0: not calibrated yet).
    rate: u64,
    /// TSC ticks after `tsc` at which to take a new anchor.
    span: u64,
}

thread_local! {
    /// Changed only when a new anchor is taken: a read stores nothing to it.
    static ANCHOR: Cell<Anchor> = const {
        Cell::new(Anchor { tsc: 0, ns: 0, rate: 0, span: 0 })
    };
    /// The last value returned on this thread (monotonic per thread): a read's one store.
    static LAST: Cell<u64> = const { Cell::new(0) };
}

const UNKNOWN: u8 = 0;
const TSC: u8 = 1;
const SYSCALL: u8 = 2;
static SOURCE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Return whether [`now_ns`] reads the TSC on this machine.
pub fn uses_tsc() -> bool {
    source() == TSC
}

#[inline(always)]
fn source() -> u8 {
    match SOURCE.load(Ordering::Relaxed) {
        UNKNOWN => detect_source(),
        s => s,
    }
}

#[cold]
#[inline(never)]
fn detect_source() -> u8 {
    let s = if cfg!(target_arch = "x86_64") && kernel_uses_tsc() {
        TSC
    } else {
        SYSCALL
    };
    SOURCE.store(s, Ordering::Relaxed);
    s
}

fn kernel_uses_tsc() -> bool {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|s| s.trim() == "tsc")
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn tsc() -> u64 {
    // SAFETY: RDTSC has no memory effects and exists on every x86-64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn tsc() -> u64 {
    0
}

/// Return `CLOCK_MONOTONIC` in nanoseconds, from the TSC where the kernel keeps time with it
/// (see the module docs); never below the last value returned on this thread.
///
/// Inline, with one thread-local store: it is on every sampling message's path twice (the
/// writer's stamp, the reader's validity), and each call and each store there is time on the
/// round trip (session 14: the read had been a call of its own that stored the whole anchor).
#[inline(always)]
pub fn now_ns() -> u64 {
    if source() != TSC {
        return monotonic_ns();
    }
    let a = ANCHOR.get();
    let d = tsc().wrapping_sub(a.tsc);
    let ns = if a.rate != 0 && d < a.span {
        a.ns + ((u128::from(d) * u128::from(a.rate)) >> 32) as u64
    } else {
        now_reanchored()
    };
    // (`with`, not `LocalKey::set`, which is a call of its own.)
    LAST.with(|last| {
        let ns = ns.max(last.get());
        last.set(ns);
        ns
    })
}

/// [`now_ns`] when a new anchor is due (or there is no rate yet).
#[cold]
#[inline(never)]
fn now_reanchored() -> u64 {
    let mut a = ANCHOR.get();
    let ns = reanchor(&mut a);
    ANCHOR.set(a);
    ns
}

/// Measure the process's TSC rate now if that is not done yet (see the module docs): the
/// calling thread sleeps for about [`CALIBRATE_NS`] the first time. A process that calls this
/// when it starts (the partition runtime does) never pays `clock_gettime` on its message
/// paths; one that does not, pays it for its first millisecond.
pub fn calibrate() {
    if source() != TSC {
        return;
    }
    let start = monotonic_ns();
    now_ns();
    while RATE.load(Ordering::Relaxed) == 0 {
        let left = (start + CALIBRATE_NS).saturating_sub(monotonic_ns());
        std::thread::sleep(std::time::Duration::from_nanos(left.max(10_000)));
        now_ns();
    }
}

/// The first rate measured by a thread of this process (0: none yet), which later threads take
/// at their first read. One word, lock-free: a thread stopped for good (APEX STOP parks it
/// inside a signal handler) anywhere in here blocks nobody.
static RATE: AtomicU64 = AtomicU64::new(0);

/// A rate in ns per tick (32 fraction bits) measured over `dns` ns and `dt` ticks, and the span
/// in ticks after which to measure again.
fn rate_and_span(dns: u64, dt: u64) -> (u64, u64) {
    let rate = ((u128::from(dns) << 32) / u128::from(dt)) as u64;
    (rate, span_of(dns, rate))
}

/// The span in ticks after a rate measured over `dns` ns.
fn span_of(dns: u64, rate: u64) -> u64 {
    let span_ns = REANCHOR_NS.min(SPAN_FACTOR.saturating_mul(dns));
    ((u128::from(span_ns) << 32) / u128::from(rate.max(1))) as u64
}

/// Take a new anchor (and, once the interval is long enough, a new rate); return the clock.
#[cold]
fn reanchor(a: &mut Anchor) -> u64 {
    // The TSC read closest to the clock read: the middle of two reads around it.
    let t0 = tsc();
    let ns = monotonic_ns();
    let t1 = tsc();
    let t = t0 + t1.wrapping_sub(t0) / 2;
    if a.rate == 0 {
        // A thread without a rate: the process's, if a thread measured it already.
        let r = RATE.load(Ordering::Relaxed);
        if r != 0 {
            a.rate = r;
            a.span = span_of(CALIBRATE_NS, r);
            a.tsc = t;
            a.ns = ns;
            return ns;
        }
        if a.tsc == 0 {
            a.tsc = t;
            a.ns = ns;
            return ns;
        }
    }
    let dt = t.wrapping_sub(a.tsc);
    let dns = ns.saturating_sub(a.ns);
    if dns >= CALIBRATE_NS && dt > 0 {
        (a.rate, a.span) = rate_and_span(dns, dt);
        let _ = RATE.compare_exchange(0, a.rate, Ordering::Relaxed, Ordering::Relaxed);
    } else if a.rate == 0 {
        // Still calibrating: keep the first anchor until the interval is long enough.
        return ns;
    }
    a.tsc = t;
    a.ns = ns;
    ns
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_kernel_clock_and_never_goes_back() {
        let start = monotonic_ns();
        let mut last = 0u64;
        let mut worst = 0u64;
        // Past calibration and several anchors.
        while monotonic_ns() - start < 2 * CALIBRATE_NS + 3 * REANCHOR_NS {
            let before = monotonic_ns();
            let v = now_ns();
            let after = monotonic_ns();
            assert!(v >= last, "went back: {v} after {last}");
            last = v;
            // Outside [before, after] only by the extrapolation error (checked loosely: a
            // preemption between the reads only widens the window).
            let off = before.saturating_sub(v).max(v.saturating_sub(after));
            worst = worst.max(off);
        }
        assert!(
            worst < 1_000_000,
            "the TSC clock was {worst} ns away from CLOCK_MONOTONIC (uses TSC: {})",
            uses_tsc()
        );
    }

    #[test]
    fn a_thread_started_after_calibration_uses_the_rate_at_once() {
        if !uses_tsc() {
            eprintln!("skipped: the kernel's clocksource is not the TSC, now_ns is clock_gettime");
            return;
        }
        calibrate();
        assert_ne!(
            RATE.load(Ordering::Relaxed),
            0,
            "the process never calibrated"
        );
        // A new thread's first read anchors it with the process's rate: no millisecond of
        // clock_gettime per thread.
        let rate = std::thread::spawn(|| {
            let v = now_ns();
            let k = monotonic_ns();
            assert!(v <= k + 1_000_000);
            ANCHOR.with(|c| c.get().rate)
        })
        .join()
        .unwrap();
        assert_ne!(rate, 0);
    }

    #[test]
    fn every_thread_agrees() {
        let start = monotonic_ns();
        let hs: Vec<_> = (0..2)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut v = 0;
                    while monotonic_ns() - start < CALIBRATE_NS + REANCHOR_NS {
                        v = now_ns();
                    }
                    let k = monotonic_ns();
                    let w = now_ns();
                    assert!(w >= v);
                    k.abs_diff(w)
                })
            })
            .collect();
        for h in hs {
            assert!(h.join().unwrap() < 1_000_000);
        }
    }
}
