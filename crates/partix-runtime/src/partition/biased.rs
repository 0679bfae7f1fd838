//! A lock biased to the thread that uses it: the port lock.
//!
//! A port is shared by every process of its partition, so its calls lock it; but a port is
//! nearly always used by one process. A priority-inheritance mutex costs two locked
//! instructions per call, and on x86 each waits for the caller's earlier stores to reach memory:
//! for a queuing port those are the ring's stores, whose lines the other side keeps reading.
//! Measured on a 2-vCPU AMD EPYC VM, 64 B one way, one message per call: 19 M msg/s with the
//! mutex and the notifier's fence, 51 M without (`docs/bench-rtt.md`, session 13).
//!
//! # Protocol
//! The fast path and the revocation are `partix_shm::bias::BiasView` (module docs there: the
//! Dekker pairs, and a loom model of this lock in `partix-shm`'s `tests/loom.rs`). Here:
//! - `bias` and `inside` are the view's words; `inner`, a [`PiMutex`], is the slow path's lock,
//!   under which `bias` changes.
//! - **Fast path**: the bias owner enters with a store, a compiler fence and a load, and leaves
//!   with a store and a load.
//! - **Slow path**: lock `inner`; if the lock is biased to another thread, revoke the bias (a
//!   private `membarrier`, then a futex wait with a 1 ms slice until the owner is out).
//! - **Bias**: a thread that takes the slow path [`REBIAS_AFTER`] times in a row, with no
//!   other thread between, gets the bias (under `inner`, where it is the only one in) if it is
//!   the lock's designated owner: the first thread to earn the bias, or any thread once the
//!   designated one is dead (`tgkill` with signal 0 answers `ESRCH`). The bias never moves
//!   between two live threads (`partix_shm::bias` says why). A revocation costs a `membarrier`
//!   (0.3 µs here with the other CPU idle, about 9.5 µs when it runs a process of this
//!   partition), so two threads that take turns never bias the lock, and its owner pays at most
//!   one revocation per [`REBIAS_AFTER`] calls when another thread uses the port meanwhile
//!   (a status call, say). A port that a second live process takes over for good stays on the
//!   slow path.
//!
//! Control signals stay deferred inside the lock ([`crate::partition::ports`] wraps it), so a
//! process is never stopped while it is inside.
#![allow(unsafe_code)]

use super::rt::{cached_tid, PiGuard, PiMutex};
use partix_shm::bias::BiasView;
use partix_shm::notifier::SysFutex;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Slow-path acquisitions in a row by one thread after which the lock is biased to it.
pub(crate) const REBIAS_AFTER: u32 = 256;

/// How long a revoker waits on `inside` before it looks again.
const REVOKE_SLICE: Duration = Duration::from_millis(1);

/// The slow path's bookkeeping (under `inner`): who took the slow path last, how many times
/// in a row.
struct Streak {
    tid: u32,
    n: u32,
}

/// A lock biased to the thread that uses it (see the module docs).
pub(crate) struct BiasedLock<T> {
    bias: AtomicU32,
    /// The only thread the lock may be biased to while it lives (`partix_shm::bias`).
    designated: AtomicU32,
    /// 1 while the owner is inside by the fast path (a futex word for the revoker).
    inside: AtomicU32,
    inner: PiMutex<Streak>,
    data: UnsafeCell<T>,
    /// Revocations so far (for tests and diagnostics).
    revocations: AtomicU32,
}

// SAFETY: `data` is only reached through a guard, and guards are mutually exclusive by the
// protocol of the module docs.
unsafe impl<T: Send> Sync for BiasedLock<T> {}

/// Exclusive access to a [`BiasedLock`]'s data; unlocks on drop.
pub(crate) struct BiasedGuard<'a, T> {
    lock: &'a BiasedLock<T>,
    /// `Some` on the slow path (dropping it unlocks `inner`), `None` on the fast path.
    slow: Option<PiGuard<'a, Streak>>,
    // No narrower field (e.g. the thread id): the guard is moved by 8-byte words, and a 4-byte
    // store read back by an 8-byte load cannot be forwarded from the store buffer, so that load
    // waits until every earlier store has reached the cache, the ring's stores included. That
    // stall cost the queuing port a third of its rate (perf: 82 % of the port's samples on it).
}

impl<T> BiasedLock<T> {
    /// Return an unlocked, unbiased lock holding `v`.
    pub(crate) fn new(v: T) -> BiasedLock<T> {
        BiasedLock {
            bias: AtomicU32::new(0),
            designated: AtomicU32::new(0),
            inside: AtomicU32::new(0),
            inner: PiMutex::new(Streak { tid: 0, n: 0 }),
            data: UnsafeCell::new(v),
            revocations: AtomicU32::new(0),
        }
    }

    fn view(&self) -> BiasView<'_> {
        BiasView::new(&self.bias, &self.inside, &self.designated)
    }

    /// Lock: the fast path for the bias owner, the slow path otherwise.
    #[inline]
    pub(crate) fn lock(&self) -> BiasedGuard<'_, T> {
        let tid = cached_tid();
        if self.view().enter(tid, &SysFutex) {
            return BiasedGuard {
                lock: self,
                slow: None,
            };
        }
        self.lock_slow(tid)
    }

    #[cold]
    fn lock_slow(&self, tid: u32) -> BiasedGuard<'_, T> {
        let mut g = self.inner.lock();
        if self.view().revoke(tid, &SysFutex, Some(REVOKE_SLICE)) {
            self.revocations.fetch_add(1, Ordering::Relaxed);
        }
        if g.tid == tid {
            g.n = g.n.saturating_add(1);
        } else {
            g.tid = tid;
            g.n = 1;
        }
        BiasedGuard {
            lock: self,
            slow: Some(g),
        }
    }

    /// Return how many times the bias was revoked.
    #[cfg(test)]
    pub(crate) fn revocations(&self) -> u32 {
        self.revocations.load(Ordering::Relaxed)
    }

    /// Return whether the lock is biased to the calling thread.
    #[cfg(test)]
    pub(crate) fn biased_to_me(&self) -> bool {
        self.view().owner() == cached_tid()
    }
}

impl<T> Drop for BiasedGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        match self.slow.as_mut() {
            None => self.lock.view().leave(cached_tid(), &SysFutex),
            Some(g) => {
                if g.n >= REBIAS_AFTER && self.lock.view().owner() == 0 {
                    // We hold `inner` and nobody is inside by the fast path (the bias is 0):
                    // the bias can go to us if we are the designated owner or it is dead. Our
                    // critical section is ordered before our own later fast paths by program
                    // order, and every other thread's before ours by `inner`. Refused or not,
                    // the next try comes after another streak.
                    self.lock.view().give_to(g.tid, thread_alive);
                    g.n = 0;
                }
                // Dropping `g` unlocks `inner`.
            }
        }
    }
}

/// Return whether thread `tid` of this process still exists (`tgkill` with signal 0).
fn thread_alive(tid: u32) -> bool {
    // SAFETY: signal 0 only checks that the thread exists; no memory is passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            libc::getpid(),
            tid as libc::pid_t,
            0 as libc::c_int,
        )
    };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

impl<T> std::ops::Deref for BiasedGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the guard proves this thread is inside (module docs).
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> std::ops::DerefMut for BiasedGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves this thread is inside, and `&mut self` is unique.
        unsafe { &mut *self.lock.data.get() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A counter incremented without atomics inside the lock: a lost update shows a broken
    /// exclusion.
    fn hammer(lock: &Arc<BiasedLock<u64>>, threads: usize, per: u64, run: u64) -> u64 {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    let mut i = 0;
                    while i < per {
                        // Runs of `run` acquisitions in a row: the first thread to make a run
                        // longer than REBIAS_AFTER gets the bias, and the others revoke it,
                        // sometimes while it is inside.
                        for _ in 0..run.min(per - i) {
                            let mut g = lock.lock();
                            let v = std::hint::black_box(*g);
                            if (i + t as u64).is_multiple_of(7) {
                                std::hint::spin_loop();
                            }
                            *g = v + 1;
                            i += 1;
                        }
                        std::thread::yield_now();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        *lock.lock()
    }

    #[test]
    fn one_thread_gets_the_bias_and_keeps_its_count() {
        partix_shm::barrier::enable();
        let lock = BiasedLock::new(0u64);
        for _ in 0..REBIAS_AFTER + 10 {
            *lock.lock() += 1;
        }
        assert!(lock.biased_to_me());
        assert_eq!(*lock.lock(), u64::from(REBIAS_AFTER) + 10);
        assert_eq!(lock.revocations(), 0);
    }

    #[test]
    fn a_revocation_while_the_owner_is_inside_loses_no_update() {
        partix_shm::barrier::enable();
        let lock = Arc::new(BiasedLock::new(0u64));
        let stop = Arc::new(AtomicU32::new(0));
        // The owner: long critical sections back to back, so it is inside most of the time
        // and gets the bias back after each revocation.
        let owner = {
            let (lock, stop) = (lock.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while stop.load(Ordering::Relaxed) == 0 || n < 10_000 {
                    let mut g = lock.lock();
                    let v = std::hint::black_box(*g);
                    for _ in 0..50 {
                        std::hint::spin_loop();
                    }
                    *g = v + 1;
                    n += 1;
                }
                n
            })
        };
        // The other thread: one increment now and then, each a revocation when the owner has
        // the bias.
        let mut mine = 0u64;
        while lock.revocations() < 50 && mine < 20_000 {
            let mut g = lock.lock();
            let v = std::hint::black_box(*g);
            *g = v + 1;
            drop(g);
            mine += 1;
            std::thread::sleep(Duration::from_micros(200));
        }
        stop.store(1, Ordering::Relaxed);
        let theirs = owner.join().unwrap();
        assert_eq!(*lock.lock(), mine + theirs);
        assert!(
            lock.revocations() >= 10,
            "{} revocations",
            lock.revocations()
        );
    }

    #[test]
    fn threads_that_take_the_lock_over_lose_no_update() {
        partix_shm::barrier::enable();
        let lock = Arc::new(BiasedLock::new(0u64));
        // Long runs (each longer than REBIAS_AFTER): the first thread to finish one owns the
        // bias, the others revoke it and it comes back.
        let per = 20_000;
        assert_eq!(hammer(&lock, 3, per, 2_000), 3 * per);
    }

    #[test]
    fn the_bias_moves_to_another_thread_only_once_its_owner_is_dead() {
        partix_shm::barrier::enable();
        let lock = Arc::new(BiasedLock::new(0u64));
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let (done, owned) = std::sync::mpsc::channel::<bool>();
        let owner = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                for _ in 0..2 * REBIAS_AFTER {
                    *lock.lock() += 1;
                }
                done.send(lock.biased_to_me()).unwrap();
                // Alive, not using the lock, until told to end.
                wait.recv().unwrap();
            })
        };
        assert!(
            owned.recv().unwrap(),
            "the first thread did not get the bias"
        );
        for _ in 0..4 * REBIAS_AFTER {
            *lock.lock() += 1;
        }
        assert!(
            !lock.biased_to_me(),
            "the bias moved to a second live thread"
        );
        assert_eq!(lock.revocations(), 1);
        go.send(()).unwrap();
        owner.join().unwrap();
        for _ in 0..2 * REBIAS_AFTER {
            *lock.lock() += 1;
        }
        assert!(
            lock.biased_to_me(),
            "the bias did not move after its owner ended"
        );
        assert_eq!(*lock.lock(), 8 * u64::from(REBIAS_AFTER));
    }

    #[test]
    fn threads_that_take_turns_lose_no_update() {
        partix_shm::barrier::enable();
        let lock = Arc::new(BiasedLock::new(0u64));
        let per = 50_000;
        assert_eq!(hammer(&lock, 4, per, 1), 4 * per);
    }
}
