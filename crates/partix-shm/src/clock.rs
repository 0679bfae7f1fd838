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
//! - **Pairs.** An anchor's (TSC, `CLOCK_MONOTONIC`) pair is read again, up to three times, when
//!   its two TSC reads around the clock read are more than 10 000 ticks apart (an interrupt or a
//!   preemption between them): the closest try is taken (session 34, found by review).
//! - **Suspend.** A rate more than 1 % from the thread's current one is refused once (the
//!   anchor still moves): across a suspend to idle the TSC counts on while `CLOCK_MONOTONIC`
//!   stands still, and such a rate made the clock crawl for hours (`advance`).
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
    /// The last rate measured was refused ([`advance`]).
    doubt: bool,
}

thread_local! {
    /// Changed only when a new anchor is taken: a read stores nothing to it.
    static ANCHOR: Cell<Anchor> = const {
        Cell::new(Anchor { tsc: 0, ns: 0, rate: 0, span: 0, doubt: false })
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

/// [`now_ns`] without its per-thread monotonic clamp: no store at all on the common path (a
/// stamp on a path that is bound by its stores: the queuing ring's push). Within the error of
/// the anchors' rates (see the module docs) of `now_ns`; two reads on a thread may go back by
/// that much across a new anchor.
#[inline(always)]
pub fn stamp_ns() -> u64 {
    if source() != TSC {
        return monotonic_ns();
    }
    tsc_ns()
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
    let ns = tsc_ns();
    // (`with`, not `LocalKey::set`, which is a call of its own.)
    LAST.with(|last| {
        let ns = ns.max(last.get());
        last.set(ns);
        ns
    })
}

/// The TSC read through this thread's anchor (the TSC is the source), taking a new anchor when
/// one is due.
#[inline(always)]
fn tsc_ns() -> u64 {
    let a = ANCHOR.get();
    let d = tsc().wrapping_sub(a.tsc);
    if a.rate != 0 && d < a.span {
        a.ns + ((u128::from(d) * u128::from(a.rate)) >> 32) as u64
    } else {
        now_reanchored()
    }
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

/// Reads of a clock pair ([`clock_pair`]) before the best one is taken.
const PAIR_TRIES: u32 = 3;
/// A clock pair whose two TSC reads are at most this many ticks apart is taken at once (a few
/// µs at 2-3 GHz; a `clock_gettime` between them takes about 100 ticks here).
const PAIR_GAP_TICKS: u64 = 10_000;

/// A (TSC, `CLOCK_MONOTONIC`) pair read together by `read` (TSC, clock, TSC): the TSC read
/// closest to the clock read, the middle of the two around it, from the try whose two TSC
/// reads are closest, up to [`PAIR_TRIES`] tries (stopping at one within [`PAIR_GAP_TICKS`]). A
/// thread interrupted or preempted between the reads would otherwise take a pair off by half
/// the stall, for its whole next span (and a rate off by as much over the interval).
fn clock_pair(mut read: impl FnMut() -> (u64, u64, u64)) -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..PAIR_TRIES {
        let (t0, ns, t1) = read();
        let gap = t1.wrapping_sub(t0);
        if gap < best.0 {
            best = (gap, t0.wrapping_add(gap / 2), ns);
        }
        if gap <= PAIR_GAP_TICKS {
            break;
        }
    }
    (best.1, best.2)
}

/// Take a new anchor (and, once the interval is long enough, a new rate); return the clock.
#[cold]
fn reanchor(a: &mut Anchor) -> u64 {
    let (t, ns) = clock_pair(|| {
        let t0 = tsc();
        let ns = monotonic_ns();
        (t0, ns, tsc())
    });
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
    if advance(a, t, ns) && a.rate != 0 {
        let _ = RATE.compare_exchange(0, a.rate, Ordering::Relaxed, Ordering::Relaxed);
    }
    ns
}

/// How far a rate measured over an interval may be from the thread's current one and still be
/// taken: 1 %. The kernel's own rate moves by NTP's slewing, at most 500 ppm.
const RATE_TOLERANCE: u64 = 100;

/// Move the anchor `a` to the clock pair (`t` ticks, `ns`), taking the rate measured over the
/// interval since the last anchor if it is long enough and can be trusted; return whether the
/// anchor moved (it stays while a thread without a rate calibrates, until [`CALIBRATE_NS`]).
///
/// A rate far from the current one is refused (kept, and the anchor moved), once: after a
/// suspend to idle the invariant TSC counted on while `CLOCK_MONOTONIC` stood still, and a
/// rate measured across it (an hour of ticks for the 20 ms of monotonic time before the
/// suspend) made that thread's clock crawl, its span stretched to hours at that rate: a sampling
/// reader saw stale messages as fresh, a writer stamped fresh ones with old times, for one to
/// four times the suspend (found by review). A second far rate in a row, over an interval not
/// much longer than the span (no gap a suspend could hide in), is taken: then the current rate
/// was the wrong one (a calibration that a suspend spanned).
fn advance(a: &mut Anchor, t: u64, ns: u64) -> bool {
    let dt = t.wrapping_sub(a.tsc);
    let dns = ns.saturating_sub(a.ns);
    if dns >= CALIBRATE_NS && dt > 0 {
        let (rate, span) = rate_and_span(dns, dt);
        let close = a.rate.abs_diff(rate) <= a.rate / RATE_TOLERANCE;
        if a.rate == 0 || close || (a.doubt && dt <= a.span.saturating_mul(2)) {
            (a.rate, a.span, a.doubt) = (rate, span, false);
        } else {
            a.doubt = true;
        }
    } else if a.rate == 0 {
        // Still calibrating: keep the first anchor until the interval is long enough.
        return false;
    }
    a.tsc = t;
    a.ns = ns;
    true
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A 3 GHz TSC: its rate, and the ticks in `ns` nanoseconds.
    const GHZ3: u64 = (1 << 32) / 3;
    fn ticks(ns: u64) -> u64 {
        ns * 3
    }

    /// A thread anchored at (1 000 s of ticks, 1 000 s) with the 3 GHz rate, its span after a
    /// full [`REANCHOR_NS`] interval.
    fn anchored() -> Anchor {
        Anchor {
            tsc: ticks(1_000_000_000_000),
            ns: 1_000_000_000_000,
            rate: GHZ3,
            span: span_of(REANCHOR_NS, GHZ3),
            doubt: false,
        }
    }

    /// A pair read across a stall is not taken when a closer one can be had: the try whose two
    /// TSC reads are closest wins, and a close one ends the tries.
    #[test]
    fn a_clock_pair_split_by_a_stall_is_read_again() {
        // (t0, ns, t1) per try: the first stalled 3 ms (9 M ticks at 3 GHz) between its reads.
        let tries = [
            (1_000, 5_000, 9_001_000),
            (9_002_000, 8_000_000, 9_002_300),
            (0, 0, 0),
        ];
        let mut i = 0;
        let pair = clock_pair(|| {
            i += 1;
            tries[i - 1]
        });
        assert_eq!(pair, (9_002_150, 8_000_000));
        assert_eq!(i, 2, "the close second try ends the tries");
        // Every try stalled: the least stalled one.
        let tries = [
            (0, 10, 90_000),
            (100_000, 20, 130_000),
            (200_000, 30, 250_000),
        ];
        let mut i = 0;
        let pair = clock_pair(|| {
            i += 1;
            tries[i - 1]
        });
        assert_eq!((pair, i), ((115_000, 20), 3));
    }

    /// The stamp clock reads what `now_ns` reads, without its clamp: each stamp lies between
    /// the `CLOCK_MONOTONIC` reads around it, give or take the anchors' error (a few µs here).
    #[test]
    fn stamps_follow_the_monotonic_clock() {
        calibrate();
        for _ in 0..1000 {
            let before = monotonic_ns();
            let s = stamp_ns();
            let after = monotonic_ns();
            assert!(
                s + 50_000 >= before && s <= after + 50_000,
                "stamp {s} outside [{before}, {after}] by more than 50 µs"
            );
        }
    }

    /// After a suspend to idle (an hour of TSC ticks, 20 ms of `CLOCK_MONOTONIC`) the rate is
    /// kept and only the anchor moves; the next interval, which agrees, is taken again. (The
    /// rate of the suspended interval, 1/180 000 of the true one, was taken, and that thread's
    /// clock advanced 50 ms in the next 2.5 h; found by review.)
    #[test]
    fn a_rate_measured_across_a_suspend_is_refused_and_the_anchor_moves() {
        let mut a = anchored();
        let (t, ns) = (a.tsc + ticks(3_600_000_000_000), a.ns + 20_000_000);
        assert!(advance(&mut a, t, ns));
        assert_eq!((a.tsc, a.ns), (t, ns), "the anchor moves");
        assert_eq!(a.rate, GHZ3, "the rate across the suspend was taken");
        assert!(a.doubt);
        // 10 ms later by both clocks: the extrapolation is right at once.
        let d = ticks(10_000_000);
        let now = a.ns + ((u128::from(d) * u128::from(a.rate)) >> 32) as u64;
        assert!(now.abs_diff(ns + 10_000_000) < 1_000, "{now}");
        // The next interval agrees (3 GHz, 0.05 % faster as NTP may slew): taken.
        let (t2, ns2) = (
            t + ticks(REANCHOR_NS),
            ns + REANCHOR_NS + REANCHOR_NS / 2000,
        );
        assert!(advance(&mut a, t2, ns2));
        assert_ne!(a.rate, GHZ3);
        assert!(a.rate.abs_diff(GHZ3) <= GHZ3 / 1000);
        assert!(!a.doubt);
    }

    /// Two suspends with one read between them: the second far rate comes after a gap, and is
    /// refused too.
    #[test]
    fn a_second_suspend_in_a_row_is_refused_too() {
        let mut a = anchored();
        let (t, ns) = (a.tsc + ticks(3_600_000_000_000), a.ns + 20_000_000);
        assert!(advance(&mut a, t, ns));
        let (t2, ns2) = (t + ticks(600_000_000_000), ns + 5_000_000);
        assert!(advance(&mut a, t2, ns2));
        assert_eq!(a.rate, GHZ3);
        assert_eq!((a.tsc, a.ns), (t2, ns2));
    }

    /// A rate that was wrong (calibrated across a suspend, 1.5 times the true one) is
    /// replaced by the second interval in a row that disagrees with it without a gap: refusing
    /// far rates for ever would keep a wrong one for ever.
    #[test]
    fn a_wrong_rate_is_replaced_after_two_intervals_that_disagree() {
        let mut a = anchored();
        a.rate = GHZ3 + GHZ3 / 2;
        a.span = span_of(REANCHOR_NS, a.rate);
        let (mut t, mut ns) = (a.tsc, a.ns);
        for taken in [false, true] {
            // Each interval read at its span (at the old rate: 2/3 of REANCHOR_NS).
            t += a.span;
            ns += a.span / 3;
            assert!(advance(&mut a, t, ns));
            assert_eq!(a.rate.abs_diff(GHZ3) <= GHZ3 / 1000, taken, "{}", a.rate);
        }
    }

    /// The same on the real clocks (the review's test): a thread whose anchor is an hour of
    /// ticks but 20 ms of `CLOCK_MONOTONIC` old keeps the process's calibrated rate.
    #[test]
    fn a_reanchor_after_an_hour_of_ticks_keeps_the_calibrated_rate() {
        if !uses_tsc() {
            eprintln!("skipped: the kernel's clocksource is not the TSC, now_ns is clock_gettime");
            return;
        }
        calibrate();
        let r = RATE.load(Ordering::Relaxed);
        let ticks_per_s = ((1_000_000_000u128 << 32) / u128::from(r)) as u64;
        let mut a = Anchor {
            // Wrapping: the TSC counts from boot, and the machine may be up for less than an hour
            // (CI on a fresh VM overflowed here).
            tsc: tsc().wrapping_sub(3600 * ticks_per_s),
            ns: monotonic_ns() - 20_000_000,
            rate: r,
            span: 1,
            doubt: false,
        };
        reanchor(&mut a);
        assert!(a.rate.abs_diff(r) <= r / 100, "rate {} for {r}", a.rate);
    }

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
