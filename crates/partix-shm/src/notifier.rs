//! Wake-ups for receivers that park: the [`Notifier`] word pair and the [`RecvMode`] wait
//! strategies.
//!
//! # Layout (one cache line, 64-byte aligned, zero-filled = valid)
//! ```text
//!  0        4          8                      16                  24                64
//!  +--------+----------+----------------------+-------------------+-----------------+
//!  | epoch  | stamps   | waiters              | note head         | note times      |
//!  | u32    | u32      | u64: side 1 | side 0 | u64: gen | rooms  | 5 × u64         |
//!  +--------+----------+----------------------+-------------------+-----------------+
//!  a side (32 bits): incarnation tag u16 (high) | count u16 (low); 0 = nobody registered
//! ```
//! `epoch` is the futex word; `waiters` counts receivers that are about to park or parked, in
//! two halves, one per parking side (see "Parkers that die" below). The writer only asks
//! whether the whole word is 0.
//!
//! # Protocol
//! A writer first publishes its data (a `Release` store the receiver's readiness check
//! acquires), then calls [`Notifier::notify`]:
//! ```text
//! writer:   publish data;  fence(SeqCst) [X];  if waiters != 0 { epoch += 1 (Release); futex_wake(epoch) }
//! receiver: waiters += 1;  fence(SeqCst) [Y];  e = epoch (Acquire);  if ready() { done }  else futex_wait(epoch, e)
//! ```
//! A spinning receiver never registers, so the writer pays one fence (or less, below) and one
//! load, never a system call. A parked receiver is never missed, unless the writer dies between
//! its bump and its wake (below): the two `SeqCst` fences are totally ordered.
//! - If X precedes Y, the receiver's `ready()` (after Y) observes the publication (C++
//!   \[atomics.fences\]: a store sequenced before X is visible to loads sequenced after Y).
//! - If Y precedes X, the writer's load of `waiters` (after X) observes the increment (before Y),
//!   so it bumps `epoch` and wakes. The receiver either loaded `e` before the bump (then
//!   `futex_wait` returns at once because the word changed, or the wake finds it queued) or after
//!   it (then, by the `Release` bump / `Acquire` load pair, `ready()` sees the publication).
//!
//! A park waits in slices of at most [`MAX_PARK`] (below). A slice that ends with `epoch`
//! unchanged leaves the registration and its fence Y in place and repeats only the rest:
//! ```text
//! receiver: ... futex_wait(epoch, e) returns, epoch == e:  e = epoch (Acquire);  if ready() { done }  else futex_wait(epoch, e)
//! ```
//! The two cases above hold for every wait of the span, since none of them needs the wait to be
//! the first after Y: the count stays raised until the receiver unregisters after its last
//! wait, every `e` is loaded after Y and every `ready()` after its `e`
//! (the doc comment of `NotifierView::park_until_or_with`).
//!
//! **Asymmetric fences** ([`crate::barrier`]). In a process that enabled them, X is a compiler
//! fence (no instruction on the message path) and Y is a `SeqCst` fence followed by an expedited
//! global `membarrier(2)`: every CPU that runs a registered process executes a full barrier
//! before it returns. The same two cases hold with that barrier in place of the fence order:
//! the writer's publication is either before the barrier on its CPU (so visible to the
//! receiver's `ready()` after Y) or its load of `waiters` is after it (so it sees the
//! increment). The loom model checks the symmetric form (`loom` has no `membarrier`); the
//! asymmetric form is exercised by `tests/cross_process.rs`
//! (`asymmetric_barriers_lose_no_wake_up_between_processes`: 20 000 round trips between two
//! registered processes that park after a random number of spins).
//!
//! **A writer killed between its bump and its wake** (a health-monitor kill, a partition
//! restart) sends no wake-up, and a receiver already asleep in `futex_wait` stays asleep: the
//! kernel compared `epoch` only when it went to sleep. So a park sleeps at most [`MAX_PARK`]
//! (1 s) at a time, also without a deadline, and then checks `ready()` again: such a lost
//! wake-up costs at most that long (unit test
//! `a_park_without_deadline_sees_data_whose_wake_up_was_lost`). The check stays registered
//! (above), so an idle parker pays a timer expiry and a check a second, and makes its fence Y
//! (a global expedited `membarrier`) once per park, not once per slice (unit test
//! `a_park_without_deadline_makes_one_barrier_over_several_slices`).
//!
//! # Parkers that die
//! A receiver killed while registered (a partition restart kills the manager threads of a
//! two-sided destination while they idle on the doorbell) leaves its count behind: every later
//! `notify` makes a needless `futex_wake` and bumps `epoch`, for the rest of the run, and each
//! such crash adds one (found by review: the sender's per-message cost after one restart of
//! the destination). No one can take a count back for a dead process by subtracting: nothing
//! tells how much of it was the dead one's, and a wrong subtraction is a lost wake-up. So each
//! count belongs to one *incarnation*, a process: a registration stores the registering
//! process's tag ([`incarnation`], 16 random bits drawn once per process, again after a
//! `fork`) with the count, and one from another incarnation first discards the count it finds,
//! as does [`Notifier::adopt`], which a parking side calls when it attaches. A live parker of
//! the same process is never discarded, however many handles the process attaches, or when.
//!
//! That is sound only if the threads that park on one count belong to one live process at a
//! time, which holds where each side of a channel is one partition and the executive starts a
//! partition again only after it reaped the old process. A notifier has two counts ([`Side`]),
//! because one has parkers in two partitions: the two-sided queue's space notifier (the
//! source's sender waiting for credit; the destination's manager behind a sender that ignores
//! its credits). Who parks where:
//!
//! | notifier | [`Side::First`] | [`Side::Second`] |
//! |---|---|---|
//! | two-sided doorbell, RX data, RX ack | destination (manager, receiver) | — |
//! | one-sided ring data, sampling notifier | destination | — |
//! | one-sided ring space | source | — |
//! | two-sided queue space | source | destination (manager) |
//!
//! A second live process that parks on a side another live process is registered on would
//! discard that one's count, and its parked threads could miss wake-ups until their next check
//! ([`MAX_PARK`]); a dead process whose tag the new one drew by chance (1 in 65 536) leaves its
//! count, as before. Unit test `a_count_left_by_a_killed_parker_is_discarded_by_the_next_process`
//! (a forked child killed while parked).
//!
//! # The note: when the first notify after a request came
//! `note` serves a waiter that must know *when* what it waits for came, not only that it came:
//! a queuing sender whose deadline passed while its partition's window was closed, and which
//! finds room when the window opens, is due that room only if it was made by its deadline
//! (ARINC 653 decides a time-out at the deadline). The waiter asks ([`Notifier::ask_note`])
//! when it finds nothing: a new request, a new generation in the note's head and no room noted.
//! A writer that calls [`Notifier::notify_noting`] after it published `n` rooms (a consumer
//! that took `n` messages, or returned `n` credits) stores its clock
//! ([`crate::clock::stamp_ns`]) as the time of the next of the request's first [`NOTE_ROOMS`]
//! rooms and advances the count with a compare-and-swap of the head (a request made meanwhile
//! fails it, and the writer notes nothing: the rooms were taken, and the channel found full
//! again; a second writer notes only rooms that are the next by number). The first writer to
//! note also stores in
//! the head the *number* of the first room it noted, in its count of rooms made (the
//! destination's count of messages consumed, which the source reads too). A waiter asks for a
//! room by that number ([`Notifier::noted`]): a queuing source's next send needs room number
//! `sent - limit`. So several senders waiting through one closed window are each judged by the
//! room that was theirs, and a room the writers made without seeing the request is told apart
//! from the rooms they noted ([`Note::Before`]): it was made about when the request was, or
//! earlier. A zero-filled head is "never asked". A writer pays one more load from this line,
//! which its `notify` loads anyway, unless a request's rooms are to be noted; only the
//! notifiers whose waiters ask are written with `notify_noting` (queuing channels' space
//! notifiers).
//!
//! Why numbers: the writer publishes a room and then loads the head with no barrier between
//! (its `notify` is a compiler fence, [`crate::barrier`]), and the waiter stores its request
//! and then looks for room; in the store-buffer litmus both can miss the other's store. The
//! waiter then waits, and the writer does not note that room; it notes the next one as the
//! first. Counted from the first noted room, the next sender would be judged by the time of
//! the room after its own (until session 37 the note counted rooms that way, and a waiter
//! that found room right after its request noted it itself).
//!
//! What a waiter that finds its room not noted yet ([`Note::Asked`]) can tell: the writer is
//! between its publication and its note (the note comes within a few stores:
//! [`Notifier::noted_after`] waits for it, briefly, and a writer frozen in between leaves the
//! room unnoted), or the writers made it without seeing the request and noted nothing since,
//! or the room is beyond [`NOTE_ROOMS`].
//!
//! # Stamps wanted
//! `stamps` (0: no, 1: yes; it never goes back) tells the writers of a queuing channel whether
//! to stamp their messages with the time they push them ([`crate::ring`], "not stamped"). The
//! destination asks once, when a receive first waits with a time-out
//! ([`Notifier::want_stamps`], before the wait's deadline is taken); a writer loads the word
//! from this line, which its `notify` loads anyway, before each push
//! ([`Notifier::stamps_wanted`]). A writer that loaded 0 did so before the request was visible,
//! so before any deadline of a wait that asked: its unstamped message counts as sent by such a
//! deadline, as a stamp read at that load would have. A clock read is the dearest part of a
//! push (half a one-sided queuing port's rate per call, session 38), and a destination that
//! never waits with a time-out never needs to know when a message came.
//!
//! The notifier needs a read-write mapping (receivers write `waiters`), so a one-sided sampling
//! reader that maps the slot read-only and wants to park gets its notifier in a separate region.
//!
//! The protocol is written once, in [`NotifierView`], against [`crate::sync`] atomics and a
//! [`Futex`] implementation: the shared-memory [`Notifier`] uses the kernel's futexes, and the
//! loom model in `tests/loom.rs` uses a mutex-and-condvar futex to check that no interleaving
//! loses a wake-up.
#![allow(unsafe_code)]

use crate::sync::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Longest a parker sleeps in one `futex_wait` before it checks its condition again, also
/// without a deadline: a writer killed between its `epoch` bump and its `futex_wake` never
/// sends the wake-up, and a receiver already asleep would otherwise sleep until the next
/// message, which may never come (see the module docs).
///
/// What the cap costs: each slice that ends without a wake-up is one timer expiry, a switch
/// into the parked thread and out again, a load of `epoch` and one call of `ready()`, on the
/// parked thread's own CPU, once a second per parked thread. The thread stays registered
/// across such slices, so it makes no new fence Y: no `membarrier`, no interrupt of other
/// CPUs. (As the cap was first written, in session 26, each slice registered again, and its
/// global expedited `membarrier` interrupted every CPU running a partition once a second per
/// idle parker; found by review.)
/// It goes back round, with a new fence Y, only when `epoch` changed (or another incarnation
/// discarded its count).
pub const MAX_PARK: Duration = Duration::from_secs(1);

/// The two futex operations the notifier needs.
pub trait Futex {
    /// Block while `*word == expected`, at most until `deadline`; may return spuriously.
    fn wait(&self, word: &AtomicU32, expected: u32, deadline: Option<Instant>);
    /// Wake every waiter blocked on `word`.
    fn wake_all(&self, word: &AtomicU32);
}

/// Which of a notifier's two waiter counts a handle parks on (see the module docs, "Parkers
/// that die": each must have parkers of one live process at a time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Side {
    /// The notifier's usual parking side (the low half of `waiters`).
    #[default]
    First,
    /// The other side, where parkers of a second partition wait on the same notifier (the
    /// two-sided queue manager on the space notifier).
    Second,
}

impl Side {
    fn shift(self) -> u32 {
        match self {
            Side::First => 0,
            Side::Second => 32,
        }
    }
}

/// Bits of a side's count (the low half of its 32 bits; the tag is the high half).
const COUNT: u32 = 0xFFFF;

/// The tag of this process's registrations (16 bits; see the module docs): drawn at the first
/// use and again in a child after `fork`, whose pid differs, so that a forked child that parks
/// is an incarnation of its own (a killed child's count must not pass for its parent's).
#[cfg(not(loom))]
pub fn incarnation() -> u32 {
    use std::sync::atomic::AtomicU64 as StdAtomicU64;
    /// pid (high 32 bits) | 1 << 16 | tag; 0: not drawn yet.
    static DRAWN: StdAtomicU64 = StdAtomicU64::new(0);
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as u32;
    let drawn = DRAWN.load(std::sync::atomic::Ordering::Relaxed);
    if drawn >> 32 == u64::from(pid) && drawn & (1 << 16) != 0 {
        return drawn as u32 & COUNT;
    }
    let mut tag = 0u16;
    // SAFETY: the buffer is 2 writable bytes.
    let n = unsafe {
        libc::getrandom(
            (&raw mut tag).cast::<libc::c_void>(),
            2,
            libc::GRND_NONBLOCK,
        )
    };
    if n != 2 {
        // No entropy yet (early boot): the clock's low bits and the pid differ between two
        // incarnations just as well.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        tag = (t ^ t >> 16 ^ pid.rotate_left(7)) as u16;
    }
    let new = u64::from(pid) << 32 | 1 << 16 | u64::from(tag);
    // Threads of one process must agree: the first to store wins.
    match DRAWN.compare_exchange(
        drawn,
        new,
        std::sync::atomic::Ordering::Relaxed,
        std::sync::atomic::Ordering::Relaxed,
    ) {
        Ok(_) => u32::from(tag),
        Err(_) => incarnation(),
    }
}

/// Under loom every thread is of one process.
#[cfg(loom)]
pub fn incarnation() -> u32 {
    1
}

/// The notifier protocol over two words, wherever they live (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct NotifierView<'a> {
    epoch: &'a AtomicU32,
    waiters: &'a AtomicU64,
    side: Side,
}

impl<'a> NotifierView<'a> {
    /// Make a view of the futex word `epoch` and the waiter counts `waiters`, parking on
    /// [`Side::First`].
    pub fn new(epoch: &'a AtomicU32, waiters: &'a AtomicU64) -> NotifierView<'a> {
        NotifierView {
            epoch,
            waiters,
            side: Side::First,
        }
    }

    /// This view, parking on `side`.
    pub fn on_side(self, side: Side) -> NotifierView<'a> {
        NotifierView { side, ..self }
    }

    /// Rewrite this side's 32 bits of `waiters` with `f` (compare-and-swap loop); `f` returns
    /// `None` to leave them. Return whether they were rewritten.
    fn update_side(&self, mut f: impl FnMut(u32) -> Option<u32>) -> bool {
        let shift = self.side.shift();
        let mut w = self.waiters.load(Ordering::Relaxed);
        loop {
            let Some(half) = f((w >> shift) as u32) else {
                return false;
            };
            let new = (w & !(u64::from(u32::MAX) << shift)) | u64::from(half) << shift;
            match self
                .waiters
                .compare_exchange(w, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
    }

    /// Register a parker of this process on this side: add one to its count, or replace a
    /// count of another incarnation (module docs). Return the tag it registered with, or
    /// `None` when the count is full (65 535 parkers of one process), in which case the caller
    /// parks only briefly at a time, as when its barrier failed.
    fn register(&self) -> Option<u32> {
        let me = incarnation();
        self.update_side(|half| {
            if half >> 16 == me && half & COUNT != 0 {
                (half & COUNT != COUNT).then_some(half + 1)
            } else {
                Some(me << 16 | 1)
            }
        })
        .then_some(me)
    }

    /// Undo [`NotifierView::register`]; a count that another incarnation took over is left
    /// alone (it is no longer ours to lower).
    fn unregister(&self, tag: Option<u32>) {
        let Some(me) = tag else {
            return;
        };
        self.update_side(|half| {
            (half >> 16 == me && half & COUNT != 0).then(|| {
                if half & COUNT == 1 {
                    0
                } else {
                    half - 1
                }
            })
        });
    }

    /// Discard this side's count if another incarnation left it (see the module docs): the
    /// parking side calls this when it attaches, so that a predecessor killed while parked no
    /// longer costs every `notify` a `futex_wake`, also while this process never parks.
    /// Parkers of this process are never discarded.
    pub fn adopt(&self) {
        let me = incarnation();
        self.update_side(|half| (half != 0 && half >> 16 != me).then_some(0));
    }

    /// The parkers registered on both sides now.
    pub fn registered(&self) -> u32 {
        let w = self.waiters.load(Ordering::Relaxed);
        (w as u32 & COUNT) + ((w >> 32) as u32 & COUNT)
    }

    /// Wake parked receivers, if any. Call after publishing data with a `Release` store.
    #[inline(always)]
    pub fn notify(&self, futex: &impl Futex) {
        // SYNC POINT: fence X of the protocol (pairs with fence Y in `park_until`): light, a
        // compiler fence where the receiver's fence Y is a `membarrier` (crate::barrier).
        crate::barrier::light();
        if self.waiters.load(Ordering::Relaxed) != 0 {
            // SYNC POINT: Release bump, acquired by the receiver's epoch load.
            self.epoch.fetch_add(1, Ordering::Release);
            futex.wake_all(self.epoch);
        }
    }

    /// Park until `ready()` returns true or `deadline` passes; return whether `ready()` held.
    ///
    /// `ready` must read the published data with `Acquire` loads.
    pub fn park_until(
        &self,
        futex: &impl Futex,
        deadline: Option<Instant>,
        ready: impl FnMut() -> bool,
    ) -> bool {
        self.park_until_or(futex, deadline, ready, || false)
    }

    /// [`NotifierView::park_until`] that also gives up (returns `false`) once `stop()` returns
    /// true. `stop` is called right before each park, so a park interrupted by a signal (whose
    /// handler made `stop()` true) does not park again; a `stop()` that becomes true while the
    /// thread is parked without a signal is noticed at the next wake-up only.
    pub fn park_until_or(
        &self,
        futex: &impl Futex,
        deadline: Option<Instant>,
        ready: impl FnMut() -> bool,
        stop: impl FnMut() -> bool,
    ) -> bool {
        self.park_until_or_with(futex, deadline, ready, stop, crate::barrier::heavy_global)
    }

    /// Whether this side's count still holds the registration made with `tag`: the count is
    /// this incarnation's and not 0 (another incarnation may have replaced it, module docs).
    fn holds(&self, tag: Option<u32>) -> bool {
        let half = (self.waiters.load(Ordering::Relaxed) >> self.side.shift()) as u32;
        tag.is_some_and(|me| half >> 16 == me && half & COUNT != 0)
    }

    /// [`NotifierView::park_until_or`] with `heavy` as fence Y (tests make it fail, or count
    /// it).
    ///
    /// One registration (and one fence Y) covers every [`MAX_PARK`] slice of the park until a
    /// writer bumps `epoch`: a slice that ends with `epoch` unchanged (its time-out, or a
    /// spurious or interrupted wait) reloads `epoch` (`Acquire`), checks `ready()`, `stop()`
    /// and the deadline again, and waits again, still registered, with no new barrier. That
    /// is the protocol's receiver step with the registration and fence Y left where they
    /// were, and the argument of the module docs holds for every wait of the span:
    /// - the count stays raised from the registration to the unregistration, which comes only
    ///   after the last wait returned (other parkers only add and take back their own ones);
    ///   so a writer whose X follows Y reads `waiters != 0` (it reads the increment or a later
    ///   value, and every value from the increment up to our unregistration is non-zero),
    ///   bumps `epoch` and wakes. (Another incarnation that discards the count breaks this
    ///   for the rest of the slice, as it did before; the check after the slice sees the
    ///   count gone and goes round to register again.)
    /// - a writer whose X precedes Y has its data visible to every `ready()` after Y, the
    ///   re-checks included;
    /// - each wait is on a value of `epoch` loaded after Y, each `ready()` follows that load:
    ///   a bump after the load makes the wait return at once or the wake find it queued; a
    ///   bump the load saw (`Acquire` of the `Release` bump) makes `ready()` see the data.
    ///
    /// Nothing in it asks that the wait be the first after Y. Re-registering each slice made
    /// a parker without a deadline on an idle channel issue a global expedited `membarrier`
    /// (an interrupt on every CPU running a partition) once a second (found by review).
    ///
    /// The parker goes back round (unregisters, and registers again with a new barrier when
    /// `ready()` is still false) only when `epoch` changed (a wake-up, or a writer killed
    /// between its bump and its wake) or its count no longer holds its tag (another
    /// incarnation discarded it); a parker whose barrier failed, or whose count was full,
    /// goes round after each short park as before.
    fn park_until_or_with(
        &self,
        futex: &impl Futex,
        deadline: Option<Instant>,
        mut ready: impl FnMut() -> bool,
        mut stop: impl FnMut() -> bool,
        mut heavy: impl FnMut() -> bool,
    ) -> bool {
        loop {
            if ready() {
                return true;
            }
            let tag = self.register();
            // SYNC POINT: fence Y of the protocol (pairs with fence X in `notify`): heavy, a
            // `SeqCst` fence and, where the kernel has it, an expedited global `membarrier`.
            // (Not registered, the count being full: no writer will wake us, park briefly.)
            let sure = tag.is_some() && heavy();
            // SYNC POINT: Acquire load of `epoch` after Y, pairs with the writer's Release
            // bump; every wait below is on a value loaded after this Y.
            let mut e = self.epoch.load(Ordering::Acquire);
            // The slices of one registration (see the doc comment).
            loop {
                if ready() {
                    self.unregister(tag);
                    return true;
                }
                if stop() || deadline.is_some_and(|d| Instant::now() >= d) {
                    self.unregister(tag);
                    return false;
                }
                let until = if sure {
                    // At most `MAX_PARK` at a time: a writer killed between its bump and its
                    // wake sends no wake-up, and then only the next check sees its data.
                    let cap = Instant::now() + MAX_PARK;
                    Some(deadline.map_or(cap, |d| d.min(cap)))
                } else {
                    // Every `membarrier` failed: a writer whose X is a compiler fence may miss
                    // our registration, and its wake-up with it. Park briefly, then check
                    // again (`crate::barrier`, "When a heavy barrier's `membarrier` fails").
                    let soon = Instant::now() + crate::barrier::DEGRADED_PARK;
                    Some(deadline.map_or(soon, |d| d.min(soon)))
                };
                futex.wait(self.epoch, e, until);
                if !sure {
                    break;
                }
                // SYNC POINT: Acquire reload of `epoch`, still after the Y of a registration
                // that stands (pairs with the writer's Release bump, as the load above).
                let now = self.epoch.load(Ordering::Acquire);
                if now != e || !self.holds(tag) {
                    // A writer bumped (woken, or its wake-up was lost), or our count was
                    // discarded: back round, registering again with a new Y if not ready.
                    break;
                }
                // A slice ended with `epoch` unchanged: stay registered, check again.
                e = now;
            }
            self.unregister(tag);
        }
    }
}

/// How a receiver waits for new data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvMode {
    /// Busy-poll the data until it changes (lowest latency, one core busy; needs no notifier).
    Spin,
    /// Busy-poll `spins` times, then park on the notifier's futex.
    SpinThenPark {
        /// Number of polls before parking.
        spins: u32,
    },
    /// Park on the notifier's futex at once (no CPU used while waiting).
    Blocking,
}

impl RecvMode {
    /// Return whether this mode may park (and so needs a [`Notifier`]).
    pub fn parks(self) -> bool {
        !matches!(self, RecvMode::Spin)
    }
}

#[cfg(not(loom))]
pub use shm::*;

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::area::{Area, AreaError, CACHE_LINE};
    use crate::futex;
    use crate::region::Region;
    use std::sync::Arc;

    /// Size in bytes of a notifier in a region.
    pub const NOTIFIER_LEN: usize = CACHE_LINE;

    /// The note's head (see the module docs, "The note"): the request's generation (bits
    /// 63..44; 0: never asked), the rooms noted since (bits 43..40), and the number of the
    /// first of them in the writers' count of rooms made (bits 39..0, modulo 2^40).
    const NOTE_HEAD: usize = 16;
    /// The stamps word (see the module docs, "Stamps wanted").
    const STAMPS: usize = 4;
    /// The rooms' times, [`NOTE_ROOMS`] of them.
    const NOTE_TIMES: usize = 24;
    /// How many rooms after a request a note holds the time of (the rest of the line).
    pub const NOTE_ROOMS: usize = 5;
    /// Where the head's generation starts.
    const NOTE_GEN_SHIFT: u32 = 44;
    /// Where the head's count of rooms noted starts (4 bits).
    const NOTE_COUNT_SHIFT: u32 = 40;
    /// The head's number of the first room noted.
    const NOTE_FIRST_MASK: u64 = (1 << NOTE_COUNT_SHIFT) - 1;
    /// The generations a request goes through (then round to 1: 0 is "never asked").
    const NOTE_GEN_MASK: u64 = (1 << (64 - NOTE_GEN_SHIFT)) - 1;

    /// A note head's fields: generation, rooms noted, number of the first of them.
    #[inline(always)]
    fn note_fields(h: u64) -> (u64, usize, u64) {
        (
            h >> NOTE_GEN_SHIFT,
            ((h >> NOTE_COUNT_SHIFT) & 0xf) as usize,
            h & NOTE_FIRST_MASK,
        )
    }

    /// What a notifier's note holds for a room ([`Notifier::noted`]).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Note {
        /// Nobody asked since the notifier was made.
        Never,
        /// Asked, and that room not noted: not made yet, or made and its note not stored yet
        /// (the writer is between its publication and its note), or made without seeing the
        /// request with nothing noted since, or beyond [`NOTE_ROOMS`].
        Asked,
        /// Made before the writers saw the request (so about when it was asked, or earlier:
        /// a waiter that asked when it found no room knows it was not made before the look
        /// that found none): the writers noted later rooms only.
        Before,
        /// The time (`clock::stamp_ns`, ns) the room was made.
        At(u64),
    }

    /// A futex-backed wake-up word pair in shared memory (see the module docs for the protocol).
    #[derive(Debug, Clone)]
    pub struct Notifier {
        area: Area,
        /// The waiter count this handle parks on.
        side: Side,
    }

    impl Notifier {
        /// Use the [`NOTIFIER_LEN`] bytes at `offset` of `region` as a notifier (a zero-filled area is
        /// a valid, idle notifier).
        ///
        /// # Errors
        /// [`AreaError::Misaligned`], [`AreaError::TooSmall`], or [`AreaError::ReadOnly`] (receivers
        /// and writers both store to the notifier).
        pub fn new(region: Arc<Region>, offset: usize) -> Result<Notifier, AreaError> {
            let area = Area::new(region, offset, NOTIFIER_LEN)?;
            if !area.writable() {
                return Err(AreaError::ReadOnly);
            }
            Ok(Notifier::from_area(area))
        }

        pub(crate) fn from_area(area: Area) -> Notifier {
            Notifier {
                area,
                side: Side::First,
            }
        }

        /// This handle, parking on `side` (see the module docs, "Parkers that die").
        pub fn on_side(self, side: Side) -> Notifier {
            Notifier { side, ..self }
        }

        /// Discard a waiter count that another incarnation (a process killed while parked)
        /// left on this handle's side; call it on the parking side when it attaches. Parkers
        /// of this process are never discarded, so it may be called any time, by every handle.
        /// See [`NotifierView::adopt`].
        pub fn adopt(&self) {
            self.view().adopt();
        }

        /// Return the parkers registered on both sides now (for tests and diagnostics).
        pub fn registered(&self) -> u32 {
            self.view().registered()
        }

        /// Return the wake-up rounds writers made so far (the futex word, wrapping; for tests
        /// and diagnostics): it changes only when a `notify` found someone registered.
        pub fn wakes(&self) -> u32 {
            self.epoch().load(Ordering::Relaxed)
        }

        #[inline]
        fn epoch(&self) -> &AtomicU32 {
            self.area.u32_at(0)
        }

        #[inline]
        fn waiters(&self) -> &AtomicU64 {
            self.area.u64_at(8)
        }

        #[inline]
        fn note_head(&self) -> &AtomicU64 {
            self.area.u64_at(NOTE_HEAD)
        }

        #[inline]
        fn note_time(&self, i: usize) -> &AtomicU64 {
            self.area.u64_at(NOTE_TIMES + 8 * i)
        }

        /// Ask the writers to stamp what they push from now on, for good (see the module docs,
        /// "Stamps wanted"); a store and a full fence the first time, one load after. Call it
        /// before the deadline that needs the stamps is taken: every writer that still pushes
        /// unstamped then loaded the word before that.
        pub fn want_stamps(&self) {
            let w = self.area.u32_at(STAMPS);
            if w.load(Ordering::Relaxed) == 0 {
                // SYNC POINT: SeqCst (`xchg` on x86, a full barrier), so that the word is
                // visible to every writer before the caller reads the clock for its deadline.
                // That clock read must not be taken early: `clock_gettime` (the ports' deadline,
                // `rt().now()`) reads the TSC ordered (`lfence; rdtsc` or `rdtscp` in the vDSO);
                // a bare `rdtsc` could run before the barrier.
                w.swap(1, Ordering::SeqCst);
            }
        }

        /// Whether the destination wants the messages stamped ([`Notifier::want_stamps`]):
        /// one load, from the line [`Notifier::notify`] loads anyway.
        #[inline(always)]
        pub fn stamps_wanted(&self) -> bool {
            self.area.u32_at(STAMPS).load(Ordering::Relaxed) != 0
        }

        /// Ask the writers that call [`Notifier::notify_noting`] to note when they next make
        /// room, room by room, the first [`NOTE_ROOMS`] of it (see the module docs, "The
        /// note"): a new request, whatever the note held.
        pub fn ask_note(&self) {
            let (generation, _, _) = note_fields(self.note_head().load(Ordering::Relaxed));
            let generation = (generation.wrapping_add(1) & NOTE_GEN_MASK).max(1);
            // SYNC POINT: SeqCst, so that a look after it (the waiter's check of what it
            // waits for) is ordered after the request for writers that fence (see "The
            // note": a room a writer made without seeing the request is numbered before the
            // first it notes).
            self.note_head()
                .store(generation << NOTE_GEN_SHIFT, Ordering::SeqCst);
        }

        /// What the note holds now for room number `room` of the writers' count (the room
        /// that `room + 1` in their count made: [`Notifier::notify_noting`]'s `made`).
        pub fn noted(&self, room: u64) -> Note {
            self.look(room).0
        }

        /// [`Notifier::noted`], and whether a note may still come for that room if it was
        /// made already (a writer between its publication and its note).
        fn look(&self, room: u64) -> (Note, bool) {
            // SYNC POINT: Acquire, pairs with the Release of `note_rooms`'s compare-and-swap
            // (the times are stored before it).
            let h = self.note_head().load(Ordering::Acquire);
            let (generation, count, first) = note_fields(h);
            if generation == 0 {
                return (Note::Never, false);
            }
            if count == 0 {
                // Nothing noted yet: which number the first noted room gets is not known.
                return (Note::Asked, true);
            }
            // Its place among the noted rooms, modulo 2^40; the upper half is before the
            // first. (The line is shared with another partition: a count past the times is
            // not believed.)
            let j = room.wrapping_sub(first) & NOTE_FIRST_MASK;
            if j > NOTE_FIRST_MASK / 2 {
                (Note::Before, false)
            } else if (j as usize) < count.min(NOTE_ROOMS) {
                (
                    Note::At(self.note_time(j as usize).load(Ordering::Relaxed)),
                    false,
                )
            } else {
                (Note::Asked, (j as usize) < NOTE_ROOMS && count < NOTE_ROOMS)
            }
        }

        /// [`Notifier::noted`] for a room the caller knows was made (it found it), and while it
        /// is [`Note::Asked`] and may still be noted, again for up to `patience`: a writer that
        /// published it and has not noted it yet is between the two (a few stores), unless it
        /// is stopped there, or it made it without seeing the request and makes no other.
        pub fn noted_after(&self, room: u64, patience: Duration) -> Note {
            let (n, may) = self.look(room);
            if !may {
                return n;
            }
            let until = Instant::now() + patience;
            loop {
                for _ in 0..64 {
                    std::hint::spin_loop();
                    let (n, may) = self.look(room);
                    if !may {
                        return n;
                    }
                }
                if Instant::now() >= until {
                    return Note::Asked;
                }
            }
        }

        /// [`Notifier::notify`], after noting the time of `rooms` rooms made (messages taken, or
        /// credit returned) if a request asked for them (see the module docs, "The note").
        /// `made()` is the writers' count of rooms made, these included (the destination's
        /// count of messages consumed, as the source reads it); it is called only when the
        /// rooms are noted. Call it after publishing, as `notify`.
        #[inline(always)]
        pub fn notify_noting(&self, rooms: u64, made: impl FnOnce() -> u64) {
            self.note_rooms(rooms, made);
            self.notify();
        }

        /// The note of [`Notifier::notify_noting`] without its `notify`: `rooms` rooms were made
        /// now, and `made()` counts them. One load when nothing is asked, or the request's
        /// [`NOTE_ROOMS`] are noted; otherwise a clock read, the times and a compare-and-swap.
        #[inline(always)]
        pub fn note_rooms(&self, rooms: u64, made: impl FnOnce() -> u64) {
            let h = self.note_head().load(Ordering::Relaxed);
            let (generation, k, _) = note_fields(h);
            if generation == 0 || k >= NOTE_ROOMS || rooms == 0 {
                return;
            }
            self.note_rooms_slow(h, rooms, made());
        }

        /// A head whose generation changed since the load is a new request: the waiter took
        /// these rooms and found the channel full again, so they are not the new request's,
        /// and they are not noted. A head of the same request with more rooms noted (another
        /// writer: a two-sided destination's receiver and manager both return credit) is
        /// tried again after them, if these rooms are the next by number; otherwise nothing is
        /// noted (and, as the count stays, no later room of that request either: they count
        /// as made in time).
        #[cold]
        fn note_rooms_slow(&self, mut h: u64, rooms: u64, made: u64) {
            let now = crate::clock::stamp_ns().max(1);
            let (generation, _, _) = note_fields(h);
            for _ in 0..4 {
                let (_, k, first) = note_fields(h);
                if k >= NOTE_ROOMS {
                    return;
                }
                // The first room noted is numbered as the writer counts: rooms made before it
                // (the writer did not see the request then) are [`Note::Before`]. The next
                // are noted only if they are the next by number: two writers (a two-sided
                // destination's receiver and manager) that each published before the other's
                // note would otherwise give a room a time it did not have yet (found by
                // review); they are left unnoted then, as rooms made without a request.
                let from = made.wrapping_sub(rooms) & NOTE_FIRST_MASK;
                let first = if k == 0 {
                    from
                } else if from == first.wrapping_add(k as u64) & NOTE_FIRST_MASK {
                    first
                } else {
                    return;
                };
                let m = (NOTE_ROOMS - k).min(usize::try_from(rooms).unwrap_or(NOTE_ROOMS));
                for i in k..k + m {
                    self.note_time(i).store(now, Ordering::Relaxed);
                }
                let new =
                    (generation << NOTE_GEN_SHIFT) | (((k + m) as u64) << NOTE_COUNT_SHIFT) | first;
                // SYNC POINT: Release, acquired by `noted`: the times above are the rooms' the
                // count now covers.
                match self.note_head().compare_exchange(
                    h,
                    new,
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return,
                    Err(seen) if note_fields(seen).0 == generation => h = seen,
                    Err(_) => return,
                }
            }
        }

        /// The protocol's view of this notifier's words (with [`SysFutex`]).
        #[inline(always)]
        pub(crate) fn view(&self) -> NotifierView<'_> {
            NotifierView::new(self.epoch(), self.waiters()).on_side(self.side)
        }

        /// Wake parked receivers, if any. Call after publishing data with a `Release` store.
        ///
        /// Costs a fence (a compiler fence with [`crate::barrier`] enabled) and a load when
        /// nobody is parked; a `futex_wake` system call otherwise.
        #[inline(always)]
        pub fn notify(&self) {
            self.view().notify(&SysFutex);
        }

        /// Park until `ready()` returns true or `deadline` passes; return whether `ready()` held.
        ///
        /// `ready` must read the published data with `Acquire` loads (or be followed by such reads).
        pub fn park_until(&self, deadline: Option<Instant>, ready: impl FnMut() -> bool) -> bool {
            self.view().park_until(&SysFutex, deadline, ready)
        }

        /// [`Notifier::park_until`] that also gives up (returns `false`) once `stop()` returns
        /// true (see [`NotifierView::park_until_or`]: checked before each park, so a park
        /// interrupted by a signal whose handler made it true does not park again).
        pub fn park_until_or(
            &self,
            deadline: Option<Instant>,
            ready: impl FnMut() -> bool,
            stop: impl FnMut() -> bool,
        ) -> bool {
            self.view().park_until_or(&SysFutex, deadline, ready, stop)
        }
    }

    /// The kernel's process-shared futexes ([`crate::futex`]).
    #[derive(Debug, Clone, Copy)]
    pub struct SysFutex;

    impl Futex for SysFutex {
        fn wait(&self, word: &AtomicU32, expected: u32, deadline: Option<Instant>) {
            let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if timeout.is_some_and(|t| t.is_zero()) {
                return;
            }
            futex::wait(word, expected, timeout);
        }

        fn wake_all(&self, word: &AtomicU32) {
            futex::wake_all(word);
        }
    }

    /// The deadline `timeout` from now; `None` (no deadline) for `None` and for a time-out too
    /// long to add to the clock (`Instant + Duration` panics on overflow, e.g. for
    /// `Duration::MAX`, which a caller may well pass for "very long"; no such time-out can
    /// expire anyway).
    #[inline]
    pub fn deadline_after(timeout: Option<Duration>) -> Option<Instant> {
        timeout.and_then(|t| Instant::now().checked_add(t))
    }

    /// Wait for `ready()` with the given mode; return whether it held before `timeout`.
    ///
    /// A zero `timeout` is a single check of `ready()` in every mode (no spinning, no clock read,
    /// no parking). Otherwise spinning checks the clock every 1024 polls only. [`RecvMode::Spin`]
    /// ignores `notifier`; the parking modes return `false` at once when `notifier` is `None` and
    /// `ready()` is false after spinning (callers turn that into a "no notifier" error before
    /// calling).
    pub(crate) fn wait_with(
        mode: RecvMode,
        notifier: Option<&Notifier>,
        timeout: Option<Duration>,
        ready: impl FnMut() -> bool,
    ) -> bool {
        wait_with_or(mode, notifier, timeout, ready, || false)
    }

    /// [`wait_with`] that also gives up (returns `false`) once `stop()` returns true: checked
    /// after every poll that found `ready()` false, and before every park (a park interrupted by
    /// a signal whose handler made `stop()` true does not park again). With a constant-false
    /// `stop` this is [`wait_with`] exactly.
    pub(crate) fn wait_with_or(
        mode: RecvMode,
        notifier: Option<&Notifier>,
        timeout: Option<Duration>,
        mut ready: impl FnMut() -> bool,
        mut stop: impl FnMut() -> bool,
    ) -> bool {
        if timeout.is_some_and(|t| t.is_zero()) {
            return ready();
        }
        let deadline = deadline_after(timeout);
        let spins = match mode {
            RecvMode::Spin => u64::MAX,
            RecvMode::SpinThenPark { spins } => u64::from(spins),
            RecvMode::Blocking => 0,
        };
        let mut i: u64 = 0;
        while i < spins {
            if ready() {
                return true;
            }
            if stop() {
                return false;
            }
            std::hint::spin_loop();
            i += 1;
            if i.is_multiple_of(1024) {
                if let Some(d) = deadline {
                    if Instant::now() >= d {
                        return false;
                    }
                }
            }
        }
        match notifier {
            Some(n) => n.park_until_or(deadline, ready, stop),
            None => ready(),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::test_util::WAKE_BOUND;
        use std::sync::atomic::AtomicU64;

        fn notifier() -> Notifier {
            let r = Arc::new(Region::create("partix-shm-notifier-test", 4096).unwrap());
            Notifier::new(r, 64).unwrap()
        }

        #[test]
        fn notify_without_waiters_changes_nothing() {
            let n = notifier();
            n.notify();
            assert_eq!(n.wakes(), 0);
        }

        /// The note answers a request room by room, by the rooms' numbers in the writer's
        /// count: each `notify_noting` after it notes the time of the rooms it made (several at
        /// once: the same time), up to `NOTE_ROOMS`; a plain `notify` notes nothing; rooms made
        /// before the first noted one are `Before`; a new request starts again; a room nobody
        /// notes stays `Asked` after `noted_after`'s patience.
        #[test]
        fn the_note_holds_the_times_of_the_rooms_made_after_a_request() {
            let stamp = crate::clock::stamp_ns;
            let n = notifier();
            // The writer's count of rooms made (as a ring's consumed count).
            let made = std::cell::Cell::new(1000u64);
            let make = |k: u64| {
                let m = made.get() + k;
                made.set(m);
                n.notify_noting(k, || m);
            };
            assert_eq!(n.noted(1000), Note::Never);
            make(1);
            assert_eq!(n.noted(1000), Note::Never, "nobody asked");
            n.ask_note();
            assert_eq!(n.noted(1001), Note::Asked);
            n.notify();
            assert_eq!(n.noted(1001), Note::Asked, "a plain notify does not note");
            // Room 1001 made, as a writer that missed the request makes it: no note.
            made.set(made.get() + 1);
            n.notify();
            let before = stamp();
            make(1); // room 1002
            let after = stamp();
            let Note::At(t0) = n.noted(1002) else {
                panic!("{:?}", n.noted(1002))
            };
            assert!(before <= t0 && t0 <= after, "{before} <= {t0} <= {after}");
            assert_eq!(
                n.noted(1001),
                Note::Before,
                "made before the writer saw the request"
            );
            assert_eq!(n.noted(1000), Note::Before);
            assert_eq!(n.noted(1003), Note::Asked);
            std::thread::sleep(Duration::from_millis(1));
            // Two rooms at once, then more than the note holds.
            make(2); // rooms 1003 and 1004
            let Note::At(t1) = n.noted(1003) else {
                panic!("{:?}", n.noted(1003))
            };
            assert!(t1 > t0);
            assert_eq!(n.noted(1004), Note::At(t1));
            assert_eq!(n.noted(1002), Note::At(t0), "room 1002 keeps its time");
            make(10); // rooms 1005.. (two of them noted)
            assert!(matches!(n.noted(1002 + NOTE_ROOMS as u64 - 1), Note::At(_)));
            assert_eq!(
                n.noted(1002 + NOTE_ROOMS as u64),
                Note::Asked,
                "beyond what the note holds"
            );
            let t = Instant::now();
            assert_eq!(
                n.noted_after(1002 + NOTE_ROOMS as u64, Duration::from_secs(5)),
                Note::Asked
            );
            assert!(
                t.elapsed() < Duration::from_secs(1),
                "no wait beyond the note"
            );
            // A new request starts again.
            n.ask_note();
            let next = made.get();
            assert_eq!(n.noted(next), Note::Asked);
            let t = Instant::now();
            assert_eq!(n.noted_after(next, Duration::from_millis(2)), Note::Asked);
            assert!(t.elapsed() >= Duration::from_millis(2));
            // Another handle (another process's mapping of the same line) notes the next room
            // while the waiter waits for its note.
            let other = n.clone();
            let th = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(5));
                other.notify_noting(1, || next + 1);
            });
            let got = n.noted_after(next, Duration::from_secs(10));
            th.join().unwrap();
            assert!(matches!(got, Note::At(t2) if t2 > t1), "{got:?}");
            // A writer whose compare-and-swap meets another writer's note (the same request)
            // notes after it; one that meets a new request notes nothing.
            n.ask_note();
            let h = n.note_head().load(Ordering::Relaxed);
            n.note_rooms(1, || 51);
            n.note_rooms_slow(h, 1, 52);
            assert!(matches!(n.noted(50), Note::At(_)), "{:?}", n.noted(50));
            assert!(matches!(n.noted(51), Note::At(_)), "{:?}", n.noted(51));
            n.ask_note();
            let h = n.note_head().load(Ordering::Relaxed);
            n.ask_note();
            n.note_rooms_slow(h, 1, 53);
            assert_eq!(n.noted(52), Note::Asked, "not the new request's room");
            // Two writers that both published before either noted: the second's rooms are not
            // the next by number, and are not noted (nor is anything after them).
            n.ask_note();
            n.note_rooms(1, || 62); // rooms 60 (the other writer's) and 61 made; 61 noted
            n.note_rooms(1, || 62); // room 60, noted late: not next to 61
            assert_eq!(n.noted(60), Note::Before);
            assert!(matches!(n.noted(61), Note::At(_)));
            assert_eq!(n.noted(62), Note::Asked);
            n.note_rooms(1, || 64); // room 63: not next to 61 either
            assert_eq!(n.noted(62), Note::Asked);
            assert_eq!(n.noted(63), Note::Asked);
            n.note_rooms(1, || 63); // room 62, the next
            assert!(matches!(n.noted(62), Note::At(_)));
            // Numbers wrap modulo 2^40, both ways.
            n.ask_note();
            n.note_rooms(2, || 1 << 40);
            assert!(matches!(n.noted((1 << 40) - 1), Note::At(_)));
            assert!(
                matches!(n.noted(u64::MAX), Note::At(_)),
                "the same, modulo 2^40"
            );
            assert_eq!(n.noted((1 << 40) - 3), Note::Before);
            // A head another partition wrote garbage into: no room past the times is read, and
            // nothing panics.
            for h in [
                u64::MAX,
                (7 << 44) | (15 << 40) | 1000,
                1 << 44,
                1 << 40 | 5,
            ] {
                n.note_head().store(h, Ordering::Relaxed);
                for room in (0..2 * NOTE_ROOMS as u64).chain([990, 1000, 1004, 1005, u64::MAX]) {
                    let (got, _) = n.look(room);
                    if let Note::At(_) = got {
                        let j = room.wrapping_sub(h & NOTE_FIRST_MASK) & NOTE_FIRST_MASK;
                        assert!((j as usize) < NOTE_ROOMS, "{h:#x} {room}: {got:?}");
                    }
                }
                n.notify_noting(3, || 7);
                n.notify_noting(3, || u64::MAX);
            }
        }

        #[test]
        fn parked_receiver_is_woken() {
            let n = notifier();
            let data = Arc::new(AtomicU64::new(0));
            let (n2, d2) = (n.clone(), data.clone());
            let t = std::thread::spawn(move || {
                let ok = n2.park_until(Some(Instant::now() + Duration::from_secs(20)), || {
                    d2.load(Ordering::Acquire) == 1
                });
                (ok, Instant::now())
            });
            // Wait until the receiver registered (so the wake really goes through the futex),
            // and a little more, so that it sleeps.
            while n.registered() == 0 {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(20));
            data.store(1, Ordering::Release);
            let sent = Instant::now();
            n.notify();
            let (ok, back) = t.join().unwrap();
            assert!(ok);
            assert!(
                back.duration_since(sent) < WAKE_BOUND,
                "woken {:?} after the notify",
                back.duration_since(sent)
            );
            assert_eq!(n.registered(), 0);
        }

        #[test]
        fn zero_timeout_is_a_single_check() {
            let mut polls = 0u32;
            for mode in [
                RecvMode::Spin,
                RecvMode::SpinThenPark { spins: 5000 },
                RecvMode::Blocking,
            ] {
                polls = 0;
                let ok = wait_with(mode, None, Some(Duration::ZERO), || {
                    polls += 1;
                    false
                });
                assert!(!ok);
                assert_eq!(polls, 1, "{mode:?}");
            }
            assert!(wait_with(
                RecvMode::Spin,
                None,
                Some(Duration::ZERO),
                || true
            ));
            assert_eq!(polls, 1);
        }

        /// Run `wait_with_or(mode, ..)` with no time-out on a fresh notifier until a waker thread
        /// sees the receiver parked (registered) and publishes (after 20 s without, it publishes
        /// anyway), or until `ready()` was polled `spin_polls` times. Return the receiver's count of
        /// registered parkers at each poll of `ready()`, and the result.
        fn polls_of(mode: RecvMode, spin_polls: usize) -> (Vec<u32>, bool) {
            use std::sync::atomic::AtomicBool;
            let n = notifier();
            let data = Arc::new(AtomicBool::new(false));
            let done = Arc::new(AtomicBool::new(false));
            let waker = {
                let (n, data, done) = (n.clone(), data.clone(), done.clone());
                std::thread::spawn(move || {
                    // (After 20 s without a parker, publish anyway: a receiver that never parks
                    // then fails the test instead of hanging it.)
                    let t0 = Instant::now();
                    while n.registered() == 0
                        && !done.load(Ordering::Acquire)
                        && t0.elapsed() < Duration::from_secs(20)
                    {
                        std::thread::yield_now();
                    }
                    data.store(true, Ordering::Release);
                    n.notify();
                })
            };
            let mut seen = Vec::new();
            let ok = wait_with_or(
                mode,
                Some(&n),
                None,
                || {
                    seen.push(n.registered());
                    data.load(Ordering::Acquire) || seen.len() >= spin_polls
                },
                || false,
            );
            done.store(true, Ordering::Release);
            waker.join().unwrap();
            assert_eq!(
                n.registered(),
                0,
                "{mode:?}: still registered after the wait"
            );
            (seen, ok)
        }

        /// The looks of a receiver from its registration on: the first registered (the waker
        /// publishes only once it sees the registration), and so every one after it, except
        /// the last (the one that found the data), which may follow the unregistration of a
        /// park the wake-up ended.
        fn parked(looks: &[u32]) -> bool {
            looks.first() == Some(&1) && looks[..looks.len() - 1].iter().all(|&r| r == 1)
        }

        /// Spin-then-park polls exactly its `spins` before it parks, and then parks: one more
        /// look before registering (the park's own first check), then registered until woken
        /// ([`parked`]).
        /// Blocking registers after that one look, without spinning; spinning never registers.
        /// (Audit 27, G8: the conformance suite's CPU check cannot tell spin-then-park from
        /// blocking.)
        #[test]
        fn spin_then_park_spins_its_polls_then_parks_and_blocking_does_not_spin() {
            for spins in [1u32, 777, 5000] {
                let mode = RecvMode::SpinThenPark { spins };
                let (seen, ok) = polls_of(mode, usize::MAX);
                assert!(ok, "{mode:?}");
                let unregistered = seen.iter().take_while(|&&r| r == 0).count();
                assert_eq!(
                    unregistered,
                    spins as usize + 1,
                    "{mode:?}: polls before registering: {seen:?}"
                );
                assert!(
                    parked(&seen[unregistered..]),
                    "{mode:?}: not registered after parking: {seen:?}"
                );
            }
            let (seen, ok) = polls_of(RecvMode::Blocking, usize::MAX);
            assert!(ok);
            assert_eq!(seen[0], 0, "blocking: {seen:?}");
            assert!(
                parked(&seen[1..]),
                "blocking spins or does not park: {seen:?}"
            );
            let (seen, ok) = polls_of(RecvMode::Spin, 200_000);
            assert!(ok);
            assert_eq!(seen.len(), 200_000);
            assert!(seen.iter().all(|&r| r == 0), "spin parked");
        }

        /// A parker whose heavy barrier failed (every `membarrier` refused) cannot count on the
        /// writer's wake-up: it parks only briefly at a time and sees data that came without
        /// one long before its time-out. (The failure was ignored, and such a park slept through
        /// a wake-up the writer never sent; found by review.)
        #[test]
        fn a_parker_whose_barrier_failed_parks_only_briefly() {
            use std::sync::atomic::AtomicBool;
            let n = notifier();
            let data = Arc::new(AtomicBool::new(false));
            let writer = {
                let data = data.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(50));
                    // As a writer whose load of `waiters` missed the parker: no wake-up.
                    data.store(true, Ordering::Release);
                })
            };
            let t0 = Instant::now();
            let ok = n.view().park_until_or_with(
                &SysFutex,
                Some(t0 + Duration::from_secs(5)),
                || data.load(Ordering::Acquire),
                || false,
                || false,
            );
            writer.join().unwrap();
            assert!(ok);
            assert!(
                t0.elapsed() < Duration::from_millis(50) + WAKE_BOUND,
                "parked {:?} for data that came after 50 ms",
                t0.elapsed()
            );
            assert_eq!(n.registered(), 0);
        }

        /// The kernel's futexes, except that a wake-up is never sent: a writer killed between
        /// its `epoch` bump and its `futex_wake`.
        struct LostWake;

        impl Futex for LostWake {
            fn wait(&self, word: &AtomicU32, expected: u32, deadline: Option<Instant>) {
                SysFutex.wait(word, expected, deadline);
            }

            fn wake_all(&self, _: &AtomicU32) {}
        }

        /// A writer killed between its `epoch` bump and its `futex_wake` (a health-monitor kill,
        /// a restart) leaves a receiver that was already asleep in `futex_wait` asleep: the
        /// kernel compared `epoch` when it went to sleep. A park without a deadline (an infinite
        /// APEX time-out) slept until another message came, which may never happen; it now
        /// sleeps at most [`MAX_PARK`] at a time and sees the published data then. (Found by
        /// review.)
        #[test]
        fn a_park_without_deadline_sees_data_whose_wake_up_was_lost() {
            use std::sync::atomic::AtomicBool;
            let n = notifier();
            let data = Arc::new(AtomicBool::new(false));
            let (done, got) = std::sync::mpsc::channel();
            {
                let (n, data) = (n.clone(), data.clone());
                std::thread::spawn(move || {
                    let ok = n
                        .view()
                        .park_until(&LostWake, None, || data.load(Ordering::Acquire));
                    let _ = done.send(ok);
                });
            }
            while n.registered() == 0 {
                std::thread::yield_now();
            }
            // Registered: give it time to fall asleep in `futex_wait`.
            std::thread::sleep(Duration::from_millis(50));
            let t0 = Instant::now();
            data.store(true, Ordering::Release);
            n.view().notify(&LostWake);
            assert_ne!(n.wakes(), 0, "the writer bumped");
            let waited = Duration::from_secs(5);
            assert_eq!(
                got.recv_timeout(waited),
                Ok(true),
                "the receiver slept through data published {waited:?} ago"
            );
            assert!(t0.elapsed() < MAX_PARK + Duration::from_millis(900));
            assert_eq!(n.registered(), 0);
        }

        /// A futex nobody wakes: `wait` returns once its time-out has passed (at once with
        /// `sleep` false, as if it had), as the kernel's does when no writer comes. It counts
        /// its waits, records at each how many parkers are registered on `n`, and runs `each`
        /// (with the number of the wait) before it returns.
        struct NobodyWakes<'a> {
            n: &'a Notifier,
            sleep: bool,
            each: &'a dyn Fn(u32),
            waits: std::cell::Cell<u32>,
            registered: std::cell::RefCell<Vec<u32>>,
        }

        impl<'a> NobodyWakes<'a> {
            fn new(n: &'a Notifier, sleep: bool, each: &'a dyn Fn(u32)) -> NobodyWakes<'a> {
                NobodyWakes {
                    n,
                    sleep,
                    each,
                    waits: std::cell::Cell::new(0),
                    registered: std::cell::RefCell::new(Vec::new()),
                }
            }
        }

        impl Futex for NobodyWakes<'_> {
            fn wait(&self, _: &AtomicU32, _: u32, deadline: Option<Instant>) {
                let deadline = deadline.expect("a park sleeps at most MAX_PARK at a time");
                assert!(deadline <= Instant::now() + MAX_PARK);
                self.registered.borrow_mut().push(self.n.registered());
                if self.sleep {
                    std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
                }
                (self.each)(self.waits.get());
                self.waits.set(self.waits.get() + 1);
            }

            fn wake_all(&self, _: &AtomicU32) {}
        }

        /// Park on `n` with `futex` and no deadline until `futex` has returned `waits` times;
        /// return how many heavy barriers (fence Y) the park made.
        fn barriers_over(n: &Notifier, futex: &NobodyWakes<'_>, waits: u32) -> u32 {
            let heavies = std::cell::Cell::new(0u32);
            let ok = n.view().park_until_or_with(
                futex,
                None,
                || futex.waits.get() >= waits,
                || false,
                || {
                    heavies.set(heavies.get() + 1);
                    true
                },
            );
            assert!(ok);
            assert_eq!(futex.waits.get(), waits);
            heavies.get()
        }

        /// A park without a deadline (an infinite APEX time-out) on an idle channel wakes every
        /// [`MAX_PARK`] to check again; it stays registered across those slices and makes its
        /// heavy barrier (fence Y: a global expedited `membarrier`, which interrupts every CPU
        /// running a partition) once, not once per slice. (Each slice unregistered and
        /// registered again, with a new barrier: one cross-partition interrupt round a second
        /// per idle parker, with no traffic at all; found by review.)
        #[test]
        fn a_park_without_deadline_makes_one_barrier_over_several_slices() {
            let n = notifier();
            let futex = NobodyWakes::new(&n, true, &|_| {});
            let t0 = Instant::now();
            let heavies = barriers_over(&n, &futex, 3);
            assert!(t0.elapsed() >= MAX_PARK * 3 - Duration::from_millis(50));
            assert_eq!(heavies, 1, "heavy barriers over 3 time-outs of MAX_PARK");
            assert_eq!(*futex.registered.borrow(), [1, 1, 1]);
            assert_eq!(n.registered(), 0);
        }

        /// A parker that stays registered across its slices registers again (with a new
        /// barrier) when it finds after a slice that another incarnation discarded its count
        /// (a second live process on its side, module docs): staying registered must not turn
        /// a wake-up missed for one slice into wake-ups missed for the rest of the park.
        #[test]
        fn a_parker_whose_count_was_discarded_registers_again_after_its_slice() {
            let n = notifier();
            let me = incarnation();
            let foreign: u32 = if me == 0xBEEF { 0xCAFE } else { 0xBEEF };
            let discard = |wait: u32| {
                if wait == 1 {
                    n.waiters()
                        .store(u64::from(foreign << 16 | 1), Ordering::Relaxed);
                }
            };
            let futex = NobodyWakes::new(&n, false, &discard);
            let heavies = barriers_over(&n, &futex, 4);
            assert_eq!(heavies, 2, "one barrier, then one after the count was lost");
            assert_eq!(*futex.registered.borrow(), [1, 1, 1, 1]);
            assert_eq!(
                n.waiters().load(Ordering::Relaxed),
                0,
                "our registration replaced the foreign count, and was taken back"
            );
        }

        /// Fork a child that parks on `n` (on `side`) for ever, wait until it registered, and
        /// return its pid.
        fn fork_a_parker(n: &Notifier, side: Side) -> libc::pid_t {
            let before = n.registered();
            // SAFETY: the child only parks (atomics and system calls: getpid, getrandom,
            // membarrier, futex, clock_gettime; no allocation, no lock) and never returns.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
            if pid == 0 {
                let n = n.clone().on_side(side);
                loop {
                    n.park_until(None, || false);
                }
            }
            let t0 = Instant::now();
            while n.registered() == before {
                assert!(
                    t0.elapsed() < Duration::from_secs(20),
                    "the child never parked"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            pid
        }

        fn kill_and_reap(pid: libc::pid_t) {
            // SAFETY: pid is our own child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }

        /// A parker killed while registered (a partition restart kills a two-sided
        /// destination's manager while it idles on the doorbell) left its count for good: every
        /// later `notify` of the source bumped `epoch` and made a `futex_wake`, for the rest of
        /// the run. The next process on that side discards it when it attaches (`adopt`), and
        /// `notify` is a fence and a load again. (Found by review.)
        #[test]
        fn a_count_left_by_a_killed_parker_is_discarded_by_the_next_process() {
            let n = notifier();
            let child = fork_a_parker(&n, Side::First);
            kill_and_reap(child);
            assert_eq!(n.registered(), 1, "the dead child's count is still there");
            // The restarted side attaches.
            n.adopt();
            assert_eq!(n.registered(), 0);
            let before = n.wakes();
            for _ in 0..1000 {
                n.notify();
            }
            assert_eq!(
                n.wakes(),
                before,
                "notify still bumps epoch for a dead parker"
            );
            // A process that parks without adopting first discards it too.
            let child = fork_a_parker(&n, Side::First);
            kill_and_reap(child);
            assert_eq!(n.registered(), 1);
            let (n2, data) = (n.clone(), Arc::new(AtomicU64::new(0)));
            let d2 = data.clone();
            let t = std::thread::spawn(move || {
                n2.park_until(Some(Instant::now() + Duration::from_secs(20)), || {
                    d2.load(Ordering::Acquire) == 1
                })
            });
            // Registered once the count is ours (it stays 1: ours replaced the dead one's).
            while (n.waiters().load(Ordering::Relaxed) as u32) >> 16 != incarnation() {
                std::thread::yield_now();
            }
            assert_eq!(n.registered(), 1);
            data.store(1, Ordering::Release);
            n.notify();
            assert!(t.join().unwrap());
            assert_eq!(
                n.registered(),
                0,
                "our parker's unregistration left the dead count"
            );
        }

        /// `adopt` never discards a parker of its own process (a port attached again, a
        /// separate waiter handle made while a thread parks: a lost wake-up would be worse than
        /// the needless `futex_wake` it saves), nor one of another live process on the other
        /// side (the two-sided queue's space notifier has a parker in each partition).
        #[test]
        fn adopt_keeps_live_parkers_of_this_process_and_of_the_other_side() {
            let n = notifier();
            let data = Arc::new(AtomicU64::new(0));
            let (n2, d2) = (n.clone(), data.clone());
            let t = std::thread::spawn(move || {
                n2.park_until(Some(Instant::now() + Duration::from_secs(20)), || {
                    d2.load(Ordering::Acquire) == 1
                })
            });
            while n.registered() == 0 {
                std::thread::yield_now();
            }
            n.clone().adopt();
            assert_eq!(
                n.registered(),
                1,
                "adopt discarded a live parker of this process"
            );
            let t0 = Instant::now();
            data.store(1, Ordering::Release);
            n.notify();
            assert!(t.join().unwrap());
            assert!(
                t0.elapsed() < Duration::from_millis(500),
                "{:?}",
                t0.elapsed()
            );
            // A live child parked on the second side: this process adopting the first side (and
            // a parker of its own coming and going there) leaves its count.
            let child = fork_a_parker(&n, Side::Second);
            n.adopt();
            assert!(!n.park_until(Some(Instant::now() + Duration::from_millis(5)), || false));
            assert_eq!(n.registered(), 1, "the live child's count was discarded");
            let before = n.wakes();
            n.notify();
            assert_ne!(n.wakes(), before, "the live child would not be woken");
            kill_and_reap(child);
            let second = n.clone().on_side(Side::Second);
            second.adopt();
            assert_eq!(n.registered(), 0);
        }

        #[test]
        fn park_times_out() {
            let n = notifier();
            let ok = wait_with(
                RecvMode::SpinThenPark { spins: 10 },
                Some(&n),
                Some(Duration::from_millis(5)),
                || false,
            );
            assert!(!ok);
            assert_eq!(n.registered(), 0);
        }

        /// A park that a signal interrupts, whose handler makes `stop()` true (as the partition
        /// runtime's control handler sets its per-thread flag), gives up at once instead of
        /// parking again until its deadline; the waiter count is left as it was.
        #[test]
        fn stop_set_by_a_signal_handler_ends_a_park() {
            static FLAG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            extern "C" fn on_signal(_: libc::c_int) {
                FLAG.store(true, Ordering::Relaxed);
            }
            // SAFETY: an all-zero sigaction is a valid start; the handler only stores an atomic.
            // SA_RESTART as in the runtime: a futex wait with a time-out is not restarted.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as *const () as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut());
            }
            let n = notifier();
            let n2 = n.clone();
            let tid = Arc::new(AtomicU32::new(0));
            let tid2 = tid.clone();
            let deadline = Instant::now() + Duration::from_secs(30);
            let t = std::thread::spawn(move || {
                // SAFETY: gettid has no preconditions.
                tid2.store(
                    unsafe { libc::syscall(libc::SYS_gettid) } as u32,
                    Ordering::Release,
                );
                let ok =
                    n2.park_until_or(Some(deadline), || false, || FLAG.load(Ordering::Relaxed));
                (ok, Instant::now())
            });
            while n.registered() == 0 {
                std::thread::yield_now();
            }
            // Registered: it parks right after (a signal that came before the park would be
            // seen by the check in front of it, which is what this test is not about).
            std::thread::sleep(Duration::from_millis(50));
            let sent = Instant::now();
            // SAFETY: tgkill to a live thread of this process, whose handler is installed.
            unsafe {
                libc::syscall(
                    libc::SYS_tgkill,
                    libc::getpid(),
                    tid.load(Ordering::Acquire) as libc::c_int,
                    libc::SIGUSR2,
                )
            };
            let (ok, back) = t.join().unwrap();
            assert!(!ok, "nothing was ready");
            // At once: not at the end of the park's slice (MAX_PARK), where it looks again.
            assert!(
                back.duration_since(sent) < WAKE_BOUND,
                "the park went on {:?} after the signal",
                back.duration_since(sent)
            );
            assert_eq!(n.registered(), 0);
        }

        #[test]
        fn read_only_region_is_refused() {
            let r = Region::create("partix-shm-notifier-ro", 4096).unwrap();
            // SAFETY: dup returns a fresh descriptor that nothing else owns.
            let fd = unsafe { libc::dup(r.raw_fd()) };
            // SAFETY: fd is fresh and unowned.
            let ro = unsafe { Region::from_raw_fd(fd, 4096, crate::Access::ReadOnly) }.unwrap();
            assert_eq!(
                Notifier::new(Arc::new(ro), 0).unwrap_err(),
                AreaError::ReadOnly
            );
        }
    }
}
