//! The atomics the lock-free algorithms are written against.
//!
//! Normal builds use `std::sync::atomic`; builds with `RUSTFLAGS="--cfg loom"` use
//! `loom::sync::atomic`, so the very same algorithm code ([`crate::sampling::SlotView`],
//! [`crate::ring::RingView`], [`crate::twosided::TxView`] / [`crate::twosided::RxView`]) is
//! explored by the loom models in `tests/loom.rs` (run by `scripts/loom.sh`).
//!
//! Only the algorithm words go through this module. Region headers and the futex-backed
//! [`crate::notifier::Notifier`] use `std` atomics directly and are not compiled under loom.

#[cfg(loom)]
pub use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// Tell the CPU (or, under loom, the model scheduler) that this thread is spinning.
#[inline]
pub fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// Store `data` into consecutive words with `Relaxed` stores (native byte order, the tail of the
/// last word zero-padded).
///
/// # Panics
/// If `words` is shorter than `data.len().div_ceil(8)` (callers check lengths first).
#[inline]
pub(crate) fn copy_in(words: &[AtomicU64], data: &[u8]) {
    let mut chunks = data.chunks_exact(8);
    let mut i = 0;
    for c in &mut chunks {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        words[i].store(u64::from_ne_bytes(a), Ordering::Relaxed);
        i += 1;
    }
    let rem = chunks.remainder();
    if !rem.is_empty() {
        let mut a = [0u8; 8];
        a[..rem.len()].copy_from_slice(rem);
        words[i].store(u64::from_ne_bytes(a), Ordering::Relaxed);
    }
}

/// Load `buf.len()` bytes from consecutive words with `Relaxed` loads.
///
/// # Panics
/// If `words` is shorter than `buf.len().div_ceil(8)` (callers check lengths first).
#[inline]
pub(crate) fn copy_out(words: &[AtomicU64], buf: &mut [u8]) {
    let mut chunks = buf.chunks_exact_mut(8);
    let mut i = 0;
    for c in &mut chunks {
        c.copy_from_slice(&words[i].load(Ordering::Relaxed).to_ne_bytes());
        i += 1;
    }
    let rem = chunks.into_remainder();
    if !rem.is_empty() {
        let n = rem.len();
        rem.copy_from_slice(&words[i].load(Ordering::Relaxed).to_ne_bytes()[..n]);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn copy_round_trips_every_length() {
        let words: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(u64::MAX)).collect();
        for len in 0..=32usize {
            let data: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(7) + 1).collect();
            copy_in(&words, &data);
            let mut out = vec![0u8; len];
            copy_out(&words, &mut out);
            assert_eq!(out, data, "len {len}");
        }
    }
}
