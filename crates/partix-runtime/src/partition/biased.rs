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
//!   private `membarrier`; then, if the owner is inside, take its `inside` word as a
//!   priority-inheritance futex, which the kernel gives us once the owner is out, running the
//!   owner at our priority meanwhile).
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
use partix_shm::bias::{BiasView, PiFutex};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering};

/// Slow-path acquisitions in a row by one thread after which the lock is biased to it.
pub(crate) const REBIAS_AFTER: u32 = 256;

/// The kernel's priority-inheritance futexes, private to this process (a port lock lives in
/// the partition's own memory).
struct SysPiFutex;

/// `futex(2)` with operation `op` on `word`, no timeout; return the raw result.
fn futex_pi(word: &AtomicU32, op: i32) -> libc::c_long {
    // SAFETY: the word is a live, aligned u32 used only with the PI futex protocol; no timeout
    // and no second word are passed.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            0u32,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    }
}

impl PiFutex for SysPiFutex {
    fn lock_pi(&self, word: &AtomicU32, me: u32) {
        // SYNC POINT: Acquire on taking the word pairs with the owner's Release of `inside = 0`.
        while word
            .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            if futex_pi(word, libc::FUTEX_LOCK_PI) == 0 {
                return;
            }
            // EINTR / EAGAIN (the owner was leaving): look again. ESRCH, an owner that no
            // longer exists, should not be (an owner is never stopped inside: control signals
            // are deferred there); should it be, the word is ours to take.
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
                let v = word.load(Ordering::Relaxed);
                if v != 0
                    && word
                        .compare_exchange(v, me, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                {
                    return;
                }
            }
            std::hint::spin_loop();
        }
    }

    fn unlock_pi(&self, word: &AtomicU32, me: u32) {
        if word
            .compare_exchange(me, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // Waiters queued (FUTEX_WAITERS): the kernel hands the word over.
            futex_pi(word, libc::FUTEX_UNLOCK_PI);
        }
    }
}

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
    /// The owner's thread id while it is inside by the fast path, else 0 (a priority-inheritance
    /// futex word for the revoker).
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
    #[inline(always)]
    pub(crate) fn lock(&self) -> BiasedGuard<'_, T> {
        let tid = cached_tid();
        if self.view().enter(tid, &SysPiFutex) {
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
        if self.view().revoke(tid, &SysPiFutex) {
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
    #[inline(always)]
    fn drop(&mut self) {
        match self.slow.as_mut() {
            None => self.lock.view().leave(cached_tid(), &SysPiFutex),
            Some(_) => self.unlock_slow(),
        }
    }
}

impl<T> BiasedGuard<'_, T> {
    /// Unlock now, inline (what dropping does; the compiler keeps drop glue out of line).
    #[inline(always)]
    pub(crate) fn release(mut self) {
        if self.slow.is_none() {
            self.lock.view().leave(cached_tid(), &SysPiFutex);
        } else {
            self.unlock_slow();
        }
        std::mem::forget(self);
    }

    /// Unlock the slow path (out of line: the fast path's frame stays small).
    #[cold]
    #[inline(never)]
    fn unlock_slow(&mut self) {
        if let Some(mut g) = self.slow.take() {
            if g.n >= REBIAS_AFTER && self.lock.view().owner() == 0 {
                // We hold `inner` and nobody is inside by the fast path (the bias is 0): the
                // bias can go to us if we are the designated owner or it is dead. Our critical
                // section is ordered before our own later fast paths by program order, and
                // every other thread's before ours by `inner`. Refused or not, the next try
                // comes after another streak.
                self.lock.view().give_to(g.tid, thread_alive);
                g.n = 0;
            }
            // Dropping `g` unlocks `inner`.
            drop(g);
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
    use std::time::Duration;

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
        let (done, owned) = std::sync::mpsc::channel::<(bool, u32)>();
        let owner = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                for _ in 0..2 * REBIAS_AFTER {
                    *lock.lock() += 1;
                }
                done.send((lock.biased_to_me(), crate::partition::rt::gettid() as u32))
                    .unwrap();
                // Alive, not using the lock, until told to end.
                wait.recv().unwrap();
            })
        };
        let (biased, tid) = owned.recv().unwrap();
        assert!(biased, "the first thread did not get the bias");
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
        // The join returns when the thread's tid word is cleared, which the kernel does before
        // it has released the thread: `tgkill` may still find it for a moment (seen once in CI,
        // on a loaded VM). The bias moves once the kernel says the owner is gone.
        let t0 = std::time::Instant::now();
        while thread_alive(tid) {
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(10),
                "the owner's thread still exists 10 s after its join"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        for _ in 0..2 * REBIAS_AFTER {
            *lock.lock() += 1;
        }
        assert!(
            lock.biased_to_me(),
            "the bias did not move after its owner ended"
        );
        assert_eq!(*lock.lock(), 8 * u64::from(REBIAS_AFTER));
    }

    /// Put the calling thread under SCHED_FIFO at `prio` (first, so that it preempts whatever
    /// runs there), then on CPU `cpu` alone; return whether both worked.
    fn fifo_on(cpu: usize, prio: i32) -> bool {
        let param = libc::sched_param {
            sched_priority: prio,
        };
        // SAFETY: valid sched_param and cpu_set_t; 0 names the calling thread.
        unsafe {
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
                return false;
            }
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }

    /// Spin until `flag` is set, at most `limit`; return whether it was.
    fn wait_flag(flag: &AtomicU32, limit: Duration) -> bool {
        let t0 = std::time::Instant::now();
        while flag.load(Ordering::Acquire) == 0 {
            if t0.elapsed() > limit {
                return false;
            }
            std::hint::spin_loop();
        }
        true
    }

    /// Priority inheritance for the revoker: a low-priority owner inside, a middle-priority
    /// thread spinning on the same CPU, and a high-priority revoker. The kernel must run the
    /// owner at the revoker's priority, ahead of the spinner, so the revoker gets in while the
    /// spinner still spins. Without inheritance the owner cannot run until the spinner gives
    /// up (after 3 s here), and the spinner never sees the revoker in.
    #[test]
    fn a_revoker_is_not_held_up_by_a_thread_of_middle_priority() {
        partix_shm::barrier::enable();
        // SAFETY: no arguments.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        if cpus < 2 {
            eprintln!("skipped a_revoker_is_not_held_up_by_a_thread_of_middle_priority: one CPU");
            return;
        }
        let lock = Arc::new(BiasedLock::new(0u64));
        // inside, spinning, revoking, revoker in, owner refused (no SCHED_FIFO)
        let flags: Arc<[AtomicU32; 5]> = Arc::new(Default::default());
        let (inside, spinning, revoking, revoker_in, refused) = (0, 1, 2, 3, 4);
        let owner = {
            let (lock, flags) = (lock.clone(), flags.clone());
            std::thread::spawn(move || {
                if !fifo_on(0, 10) {
                    flags[refused].store(1, Ordering::Release);
                    return;
                }
                for _ in 0..=REBIAS_AFTER {
                    *lock.lock() += 1;
                }
                assert!(lock.biased_to_me());
                let mut g = lock.lock();
                *g += 1;
                flags[inside].store(1, Ordering::Release);
                // Inside until the revoker has started; from then on only inheritance lets
                // this thread run.
                assert!(wait_flag(&flags[revoking], Duration::from_secs(10)));
                drop(g);
            })
        };
        while flags[inside].load(Ordering::Acquire) == 0 {
            if flags[refused].load(Ordering::Acquire) != 0 {
                owner.join().unwrap();
                eprintln!(
                    "skipped a_revoker_is_not_held_up_by_a_thread_of_middle_priority: \
                     SCHED_FIFO or CPU affinity refused"
                );
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let spinner = {
            let flags = flags.clone();
            std::thread::spawn(move || {
                assert!(fifo_on(0, 20));
                flags[spinning].store(1, Ordering::Release);
                // Whether the revoker got in while this thread was still spinning.
                wait_flag(&flags[revoker_in], Duration::from_secs(3))
            })
        };
        while flags[spinning].load(Ordering::Acquire) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let revoker = {
            let (lock, flags) = (lock.clone(), flags.clone());
            std::thread::spawn(move || {
                assert!(fifo_on(0, 30));
                flags[revoking].store(1, Ordering::Release);
                *lock.lock() += 1;
                flags[revoker_in].store(1, Ordering::Release);
            })
        };
        revoker.join().unwrap();
        let in_time = spinner.join().unwrap();
        owner.join().unwrap();
        assert!(
            in_time,
            "the revoker got in only after the middle-priority thread stopped spinning"
        );
        assert_eq!(lock.revocations(), 1);
        assert_eq!(*lock.lock(), u64::from(REBIAS_AFTER) + 3);
    }

    #[test]
    fn threads_that_take_turns_lose_no_update() {
        partix_shm::barrier::enable();
        let lock = Arc::new(BiasedLock::new(0u64));
        let per = 50_000;
        assert_eq!(hammer(&lock, 4, per, 1), 4 * per);
    }
}
