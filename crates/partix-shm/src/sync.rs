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
#[inline(always)]
pub(crate) fn copy_in(words: &[AtomicU64], data: &[u8]) {
    let full = data.len() / 8;
    let (words, rest) = words.split_at(full);
    for (w, c) in words.iter().zip(data.chunks_exact(8)) {
        // A fixed-size conversion (never fails for chunks of 8): one 8-byte load, no memcpy call.
        let a: [u8; 8] = c.try_into().unwrap_or_default();
        w.store(u64::from_ne_bytes(a), Ordering::Relaxed);
    }
    let tail = &data[full * 8..];
    if !tail.is_empty() {
        let mut a = [0u8; 8];
        a[..tail.len()].copy_from_slice(tail);
        rest[0].store(u64::from_ne_bytes(a), Ordering::Relaxed);
    }
}

/// Load `buf.len()` bytes from consecutive words with `Relaxed` loads.
///
/// # Panics
/// If `words` is shorter than `buf.len().div_ceil(8)` (callers check lengths first).
#[inline(always)]
pub(crate) fn copy_out(words: &[AtomicU64], buf: &mut [u8]) {
    let full = buf.len() / 8;
    let (words, rest) = words.split_at(full);
    let (head, tail) = buf.split_at_mut(full * 8);
    for (w, c) in words.iter().zip(head.chunks_exact_mut(8)) {
        // A fixed-size view (never fails for chunks of 8): one 8-byte store, no memcpy call.
        if let Ok(a) = <&mut [u8; 8]>::try_from(c) {
            *a = w.load(Ordering::Relaxed).to_ne_bytes();
        }
    }
    if !tail.is_empty() {
        let n = tail.len();
        tail.copy_from_slice(&rest[0].load(Ordering::Relaxed).to_ne_bytes()[..n]);
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
