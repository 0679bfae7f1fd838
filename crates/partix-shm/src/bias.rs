//! The protocol of a lock biased to one thread: the owner's fast path and the revocation, over
//! two words ([`BiasView`]). `partix-runtime`'s port lock (`partition::biased::BiasedLock`)
//! puts a priority-inheritance mutex around it for the slow path; the loom model in
//! `tests/loom.rs` puts a loom mutex around the same code and checks mutual exclusion.
//!
//! # Protocol
//! - `bias` names the thread the lock is biased to (a non-zero id), or 0; it changes only under
//!   the slow path's lock.
//! - **Fast path** ([`BiasView::enter`], the owner `me`): `inside = me`; [`barrier::light`]; if
//!   `bias` still is `me` it is in, else it leaves ([`BiasView::leave`]) and takes the slow path.
//!   To leave: `inside = 0` (`Release`); [`barrier::light`]; if `bias` is no longer `me`, hand
//!   `inside` over to the revoker (below).
//! - **Revocation** ([`BiasView::revoke`], under the slow lock, by a thread other than the
//!   owner): `bias = 0`; [`barrier::heavy_private`]; if `inside` is not 0, wait until it is, by
//!   taking `inside` as a priority-inheritance lock (below).
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
//!   `inside`, its `inside = 0` would then clear it, and a third thread would revoke and
//!   enter while the second one is inside. The loom model `bias_moving_between_threads_*` of
//!   `tests/loom.rs` found exactly this interleaving in a first version that re-biased to any
//!   thread. A dead thread cannot be in that window; neither can the designated thread be
//!   there while it is inside.
//!
//! # Priority inheritance for the revoker
//! A revoker that waits for the owner to leave must not wait on a low-priority owner that a
//! medium-priority thread keeps from running (unbounded priority inversion). So `inside` holds
//! the owner's thread id while it is inside: to the kernel, that is a priority-inheritance
//! futex (`FUTEX_LOCK_PI`) held by the owner. The revoker takes it ([`PiFutex::lock_pi`]): the
//! kernel raises the owner to the revoker's priority until it lets go, and the revoker gets
//! the word only once it is 0, that is once the owner is out. It lets go at once
//! ([`PiFutex::unlock_pi`]).
//! - The owner leaves with a plain store of 0, not the compare-and-swap of a PI unlock (no
//!   locked instruction on the fast path). That store may overwrite the `FUTEX_WAITERS` bit the
//!   kernel set for a revoker it has queued; the kernel does not look at the word again until
//!   someone unlocks it. So an owner that finds the bias gone on its way out (the revoker's
//!   barrier guarantees it does whenever the revoker found it inside) *hands over*
//!   ([`BiasView::leave`]): it puts `me | FUTEX_WAITERS` back if the word is still 0 (a
//!   compare-and-swap) and unlocks it, and the kernel passes the word to the queued revoker or,
//!   if none is queued yet, clears it. If the word is no longer 0, the revoker already took it.
//! - An owner that never comes back leaves `inside = 0`, and the revoker does not wait.
//! - The loom model of `tests/loom.rs` runs the protocol against a model of the kernel's PI
//!   futex (`ModelPiFutex`), in which a queued waiter only ever gets the word by a hand-over.

use crate::barrier;
use crate::sync::{AtomicU32, Ordering};

/// The kernel's "waiters queued" bit of a priority-inheritance futex word.
pub const FUTEX_WAITERS: u32 = 0x8000_0000;
/// The owner's thread id in a priority-inheritance futex word.
pub const FUTEX_TID_MASK: u32 = 0x3fff_ffff;

/// A priority-inheritance futex (`FUTEX_LOCK_PI` / `FUTEX_UNLOCK_PI`): the word holds 0 or its
/// owner's thread id, plus [`FUTEX_WAITERS`] while the kernel queues waiters.
pub trait PiFutex {
    /// Take `word` for `me`: at once if its owner id is 0, else queue behind its owner, which
    /// runs at `me`'s priority meanwhile, until the owner hands it over.
    fn lock_pi(&self, word: &AtomicU32, me: u32);
    /// Let go of `word`, which holds `me` (and maybe [`FUTEX_WAITERS`]): hand it to the first
    /// queued waiter, or clear it.
    fn unlock_pi(&self, word: &AtomicU32, me: u32);
}

/// The two words of a biased lock (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct BiasView<'a> {
    bias: &'a AtomicU32,
    inside: &'a AtomicU32,
    designated: &'a AtomicU32,
}

impl<'a> BiasView<'a> {
    /// Make a view of the bias word, the owner's `inside` word (a priority-inheritance futex
    /// word) and the designated owner (only used under the slow lock).
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

    /// Fast path: enter if the lock is biased to `me` (a thread id, non-zero, at most
    /// [`FUTEX_TID_MASK`]); `false` means take the slow path.
    #[inline(always)]
    pub fn enter(&self, me: u32, futex: &impl PiFutex) -> bool {
        if self.bias.load(Ordering::Relaxed) != me {
            return false;
        }
        self.store_inside(me, Ordering::Relaxed);
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
    #[inline(always)]
    pub fn leave(&self, me: u32, futex: &impl PiFutex) {
        // SYNC POINT: Release pairs with the revoker's Acquire load of `inside` (or with the
        // kernel's taking of the word for it).
        self.store_inside(0, Ordering::Release);
        // SYNC POINT: the owner's store-load barrier, as on entry.
        barrier::light();
        if self.bias.load(Ordering::Relaxed) != me {
            Self::hand_over(self.inside, me, futex);
        }
    }

    /// The owner's store to `inside`. Under loom it is a swap: loom orders a plain store and
    /// another thread's read-modify-write of the same word (the kernel's compare-and-swap on
    /// the PI word) only partially, and then lets a later compare-and-swap read a value that
    /// store had already overwritten, which the total modification order of C++ (and x86)
    /// rules out. As a swap the store takes its place in that order.
    #[inline(always)]
    fn store_inside(&self, v: u32, order: Ordering) {
        #[cfg(loom)]
        self.inside.swap(v, order);
        #[cfg(not(loom))]
        self.inside.store(v, order);
    }

    /// The bias is gone: a revoker may be queued on `inside` behind `me`, with our store of 0
    /// having overwritten the kernel's waiters bit. Restore the word as the kernel left it and
    /// unlock it (module docs, "Priority inheritance").
    /// (A function of the word, not of the view: the fast path then never needs the view in
    /// memory.)
    #[cold]
    #[inline(never)]
    fn hand_over(inside: &AtomicU32, me: u32, futex: &impl PiFutex) {
        if inside
            .compare_exchange(0, me | FUTEX_WAITERS, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            futex.unlock_pi(inside, me);
        }
    }

    /// Slow path, under the slow lock, by `me`: if the lock is biased to another thread, revoke
    /// the bias and wait, with priority inheritance, until that thread is not inside; return
    /// whether it revoked.
    pub fn revoke(&self, me: u32, futex: &impl PiFutex) -> bool {
        let b = self.bias.load(Ordering::Relaxed);
        if b == 0 || b == me {
            // (`b == me` cannot be: only a thread on the slow path biases the lock, to itself,
            // and its fast path failed only because the bias was gone.)
            return false;
        }
        self.bias.store(0, Ordering::Relaxed);
        // SYNC POINT: the revoker's store-load barrier (pairs with the owner's light ones). When
        // every `membarrier` fails it switches the process to symmetric barriers and pauses
        // before returning false (see `crate::barrier`): the load below comes late enough.
        let _ = barrier::heavy_private();
        // SYNC POINT: Acquire pairs with the owner's Release store of `inside = 0`.
        if self.inside.load(Ordering::Acquire) != 0 {
            // The owner is inside (or on its way out): the kernel raises it to our priority
            // and gives us the word once it is out.
            futex.lock_pi(self.inside, me);
            futex.unlock_pi(self.inside, me);
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
