//! The protocol of a lock biased to one thread: the owner's fast path and the revocation, over
//! two words ([`BiasView`]). `partix-runtime`'s port lock (`partition::biased::BiasedLock`)
//! puts a priority-inheritance mutex around it for the slow path; the loom model in
//! `tests/loom.rs` puts a loom mutex around the same code and checks mutual exclusion.
//!
//! # Protocol
//! - `bias` names the thread the lock is biased to (a non-zero id), or 0; it changes only under
//!   the slow path's lock.
//! - **Fast path** ([`BiasView::enter`], the owner `me`): `inside = 1`; [`barrier::light`]; if
//!   `bias` still is `me` it is in, else it leaves ([`BiasView::leave`]) and takes the slow path.
//!   To leave: `inside = 0` (`Release`); [`barrier::light`]; if `bias` is no longer `me`, wake
//!   the revoker.
//! - **Revocation** ([`BiasView::revoke`], under the slow lock, by a thread other than the
//!   owner): `bias = 0`; [`barrier::heavy_private`]; wait until `inside` is 0 (`Acquire`).
//! - **Dekker**: the owner stores `inside` and then loads `bias`; the revoker stores `bias` and
//!   then loads `inside`, with a store-load barrier on each side (a compiler fence on the owner's
//!   side and a `membarrier` on the revoker's with asymmetric barriers, `SeqCst` fences
//!   otherwise). Either the revoker sees the owner inside and waits for it, or the owner sees the
//!   bias gone and does not enter. The owner's `Release` store of `inside = 0` and the revoker's
//!   `Acquire` load of it order the owner's critical section before the revoker's.
//! - **Bias** ([`BiasView::give_to`], under the slow lock, while the bias is 0): nobody is
//!   inside by the fast path, and the new owner's critical sections follow its own slow one in
//!   program order.
//! - **One owner at a time, for good**: the bias only ever goes to the lock's *designated*
//!   thread, the first to earn it, or to another thread once the designated one is dead
//!   (`alive` answers false). Why: `inside` is one word that every owner stores to. An owner
//!   whose bias was revoked may be anywhere between its first load of `bias` (still its own)
//!   and its store to `inside`, preempted there for as long as the scheduler likes. Had the
//!   bias moved on to a second thread meanwhile, that store would overwrite the second thread's
//!   `inside = 1`, its `inside = 0` would then clear it, and a third thread would revoke and
//!   enter while the second one is inside. The loom model `bias_moving_between_threads_*` of
//!   `tests/loom.rs` found exactly this interleaving in a first version that re-biased to any
//!   thread. A dead thread cannot be in that window; neither can the designated thread be
//!   there while it is inside.

use crate::barrier;
use crate::notifier::Futex;
use crate::sync::{AtomicU32, Ordering};

/// The two words of a biased lock (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct BiasView<'a> {
    bias: &'a AtomicU32,
    inside: &'a AtomicU32,
    designated: &'a AtomicU32,
}

impl<'a> BiasView<'a> {
    /// Make a view of the bias word, the owner's `inside` word (also a futex word) and the
    /// designated owner (only used under the slow lock).
    pub fn new(
        bias: &'a AtomicU32,
        inside: &'a AtomicU32,
        designated: &'a AtomicU32,
    ) -> BiasView<'a> {
        BiasView {
            bias,
            inside,
            designated,
        }
    }

    /// Fast path: enter if the lock is biased to `me` (non-zero); `false` means take the slow
    /// path.
    #[inline]
    pub fn enter(&self, me: u32, futex: &impl Futex) -> bool {
        if self.bias.load(Ordering::Relaxed) != me {
            return false;
        }
        self.inside.store(1, Ordering::Relaxed);
        // SYNC POINT: the owner's store-load barrier (pairs with the revoker's in `revoke`).
        barrier::light();
        // SYNC POINT: Acquire keeps the critical section's accesses after the check.
        if self.bias.load(Ordering::Acquire) == me {
            return true;
        }
        self.leave(me, futex);
        false
    }

    /// Leave after a successful [`BiasView::enter`] by `me`.
    #[inline]
    pub fn leave(&self, me: u32, futex: &impl Futex) {
        // SYNC POINT: Release pairs with the revoker's Acquire load of `inside`.
        self.inside.store(0, Ordering::Release);
        // SYNC POINT: the owner's store-load barrier, as on entry.
        barrier::light();
        if self.bias.load(Ordering::Relaxed) != me {
            futex.wake_all(self.inside);
        }
    }

    /// Slow path, under the slow lock, by `me`: if the lock is biased to another thread, revoke
    /// the bias and wait until that thread is not inside; return whether it revoked.
    /// `slice` bounds each futex wait (a wake-up lost to a bug then costs a slice, not a hang).
    pub fn revoke(&self, me: u32, futex: &impl Futex, slice: Option<std::time::Duration>) -> bool {
        let b = self.bias.load(Ordering::Relaxed);
        if b == 0 || b == me {
            // (`b == me` cannot be: only a thread on the slow path biases the lock, to itself,
            // and its fast path failed only because the bias was gone.)
            return false;
        }
        self.bias.store(0, Ordering::Relaxed);
        // SYNC POINT: the revoker's store-load barrier (pairs with the owner's light ones).
        barrier::heavy_private();
        // SYNC POINT: Acquire pairs with the owner's Release store of `inside = 0`.
        while self.inside.load(Ordering::Acquire) != 0 {
            futex.wait(self.inside, 1, slice.map(|s| std::time::Instant::now() + s));
        }
        true
    }

    /// Under the slow lock, while the lock is not biased: bias it to `me` (non-zero) if `me` is
    /// its designated owner, or there is none yet, or `alive` says the designated one is dead
    /// (then `me` becomes the designated owner). Return whether it did.
    pub fn give_to(&self, me: u32, alive: impl FnOnce(u32) -> bool) -> bool {
        debug_assert_eq!(self.bias.load(Ordering::Relaxed), 0);
        let d = self.designated.load(Ordering::Relaxed);
        if d != 0 && d != me && alive(d) {
            return false;
        }
        self.designated.store(me, Ordering::Relaxed);
        self.bias.store(me, Ordering::Release);
        true
    }

    /// Return the thread the lock is biased to, or 0.
    pub fn owner(&self) -> u32 {
        self.bias.load(Ordering::Relaxed)
    }
}
