//! Internal: the wait queues and the common machinery of the intra-partition services
//! (blackboards, buffers, semaphores, events).
//!
//! # Design
//! Intra-partition objects are plain process-local memory (the processes are threads of one
//! process). All of them live in one [`Objects`] table that is only touched inside
//! [`Runtime::with_inner`](super::rt::Runtime::with_inner), i.e. under the runtime's
//! priority-inheritance lock. That gives, for free:
//! - control signals (SUSPEND/STOP of the caller) are deferred while an object is being changed,
//!   so no object is ever left half-updated by a parked thread;
//! - a process is marked WAITING (`W_RESOURCE`) in the same critical section that queues it, and
//!   READY in the one that hands it the resource, so GET_PROCESS_STATUS never shows a stale state;
//!   a time-out that expires makes it READY at once too (the queue entry records the deadline,
//!   the published slot its end: `ProcessSlot::wait_ends_ns`), before its thread runs to leave;
//! - the PRIORITY discipline reads the waiters' *current* priorities from the process table at the
//!   moment of release.
//!
//! A process that must wait is queued ([`WaitQueue::enqueue`]) and parks on its own futex word
//! ([`WAKE`]), never spinning. Releasing a waiter is a hand-off ([`WaitQueue::grant_next`]): the
//! resource (a semaphore unit, a message, the event) is given to the waiter inside the critical
//! section, its entry is marked granted and its futex word bumped; the waiter collects the result
//! when it runs. So the release order is exactly the queue's discipline, whatever the threads'
//! scheduling afterwards. The released processes are woken before the lock is released, highest
//! priority first, so that they run in priority order ([`with_objects`]).
//!
//! # No allocation while waiting
//! The partition's memory is its configured memory (`RLIMIT_DATA`), and a failed allocation
//! aborts the partition process, so waiting allocates nothing: each queue has one slot per
//! process, allocated when its object is created (INVALID_CONFIG if it cannot be), and a message
//! is never copied into the queue: the entry of a reader or receiver lends the caller's own
//! buffer ([`Inbox`]), that of a sender its own message ([`Outbox`]), both borrowed by the call
//! for as long as it waits. The releaser copies under the runtime lock, only into or out of the
//! entry of a live incarnation (a stopped one's thread may be gone with its stack).
//!
//! # STOP, SUSPEND and time-outs of waiting processes
//! - STOP gives the process a new incarnation: its entry (tagged with the old one) is dead,
//!   skipped by every release and dropped by the next operation on the queue.
//! - SUSPEND of a waiting process parks its thread in the control-signal handler; its entry stays
//!   queued, so it may still be released (it then stays WAITING, suspended, until RESUME and
//!   returns `NO_ERROR`). An entry whose time-out has expired is never released: after RESUME
//!   the process returns `TIMED_OUT`.

use super::blackboard::Blackboard;
use super::buffer::Buffer;
use super::error::{ApexError, ApexResult};
use super::event::Event;
use super::ports::QueuingDiscipline;
use super::process::MAX_NAME_LENGTH;
use super::rt::{self, rt, Inner, EH_INDEX, W_RESOURCE};
use super::semaphore::Semaphore;
use super::time::{SystemTime, INFINITE_TIME_VALUE};
use crate::state::{mode, MAX_PROCESSES};
use partix_shm::futex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

const _: () = assert!(MAX_PROCESSES <= 64, "the wake set is a u64 bit mask");

/// One futex word per process: bumped when its queue entry is granted.
static WAKE: [AtomicU32; MAX_PROCESSES] = [const { AtomicU32::new(0) }; MAX_PROCESSES];

/// Every intra-partition object of the partition (ids are index + 1, in creation order).
pub(crate) struct Objects {
    pub blackboards: Vec<Blackboard>,
    pub buffers: Vec<Buffer>,
    pub semaphores: Vec<Semaphore>,
    pub events: Vec<Event>,
    /// Ticket source for every queue (unique tickets: a waiter finds its entry by ticket).
    next_ticket: u64,
}

static OBJECTS: Mutex<Objects> = Mutex::new(Objects {
    blackboards: Vec::new(),
    buffers: Vec::new(),
    semaphores: Vec::new(),
    events: Vec::new(),
    next_ticket: 0,
});

/// Lock the object table. Only ever called inside `with_inner` (so never contended and never
/// held by a thread parked by a control signal); poisoning is ignored.
fn objects() -> MutexGuard<'static, Objects> {
    OBJECTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The processes one operation released, in the order it released them; woken by
/// [`WakeSet::wake`] before the runtime lock is released.
#[derive(Clone, Copy)]
pub(crate) struct WakeSet {
    n: usize,
    order: [u8; MAX_PROCESSES],
}

impl Default for WakeSet {
    fn default() -> WakeSet {
        WakeSet {
            n: 0,
            order: [0; MAX_PROCESSES],
        }
    }
}

impl WakeSet {
    fn add(&mut self, idx: usize) {
        // A process waits on one object at a time and a granted entry is not released again:
        // an operation releases each process at most once.
        debug_assert!(self.n < MAX_PROCESSES && !self.order[..self.n].contains(&(idx as u8)));
        if self.n < MAX_PROCESSES {
            self.order[self.n] = idx as u8;
            self.n += 1;
        }
    }

    /// The processes of the set by descending `prio`, in release order among equals.
    fn by_priority(&mut self, prio: impl Fn(usize) -> i32) -> &[u8] {
        let list = &mut self.order[..self.n];
        // Insertion sort: stable, allocates nothing, at most 64 entries.
        for k in 1..list.len() {
            let mut j = k;
            while j > 0 && prio(list[j - 1] as usize) < prio(list[j] as usize) {
                list.swap(j - 1, j);
                j -= 1;
            }
        }
        list
    }

    /// Wake every process of the set, highest current priority first (release order among
    /// equals). Called with the runtime lock held (see [`with_objects`]).
    pub fn wake(mut self, inner: &Inner) {
        let prio = |i: usize| inner.procs.get(i).map_or(0, |p| p.current_priority);
        for &i in self.by_priority(prio) {
            futex::wake_all(&WAKE[i as usize]);
        }
    }
}

/// The indices of the bits set in `m`, lowest first.
fn bits(mut m: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (m != 0).then(|| {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            i
        })
    })
}

/// A queued process (the entry of process `i` is slot `i` of its queue).
pub(crate) struct Waiter<P> {
    ticket: u64,
    incarnation: u32,
    /// Module time (ns) at which the wait times out; `None` = never.
    deadline: Option<u64>,
    granted: bool,
    /// What the waiter brings (a message to send) or receives (a message read).
    payload: P,
}

impl<P> Waiter<P> {
    /// Whether the entry belongs to the current incarnation of its process `i` (not stopped).
    fn alive(&self, i: usize) -> bool {
        rt().ctl[i].incarnation.load(Ordering::Acquire) == self.incarnation
    }

    /// Whether the entry of process `i` may still be released at module time `now`.
    fn eligible(&self, i: usize, now: u64) -> bool {
        !self.granted && self.deadline.is_none_or(|d| now < d) && self.alive(i)
    }
}

/// The processes waiting on one object, released in FIFO or PRIORITY order.
///
/// It has one slot per process, allocated when the object is created ([`WaitQueue::try_new`]),
/// so queueing never allocates: a process (an incarnation) waits on one object at a time, and
/// the slot of a stopped incarnation is dead (skipped, then emptied or reused).
pub(crate) struct WaitQueue<P> {
    discipline: QueuingDiscipline,
    /// Bit `i`: `slots[i]` holds an entry (so a queue without entries costs one test).
    used: u64,
    /// The entry of process `i`, if any (`MAX_PROCESSES` slots).
    slots: Vec<Option<Waiter<P>>>,
}

impl<P> WaitQueue<P> {
    /// Return an empty queue with this discipline, its slots allocated now (part of the object's
    /// storage, a few KiB).
    ///
    /// # Errors
    /// `InvalidConfig`: the memory cannot be allocated (see [`try_capacity`]).
    pub fn try_new(discipline: QueuingDiscipline) -> ApexResult<WaitQueue<P>> {
        let mut slots = try_capacity(MAX_PROCESSES)?;
        // Within the capacity: no allocation.
        slots.resize_with(MAX_PROCESSES, || None);
        Ok(WaitQueue {
            discipline,
            used: 0,
            slots,
        })
    }

    /// The entries, with their process index.
    fn entries(&self) -> impl Iterator<Item = (usize, &Waiter<P>)> {
        bits(self.used).filter_map(|i| self.slots[i].as_ref().map(|w| (i, w)))
    }

    /// Empty slot `i`; return its entry.
    fn take(&mut self, i: usize) -> Option<Waiter<P>> {
        self.used &= !(1 << i);
        self.slots[i].take()
    }

    /// Drop the entries of stopped processes.
    fn purge(&mut self) {
        for i in bits(self.used) {
            if !self.slots[i].as_ref().is_some_and(|w| w.alive(i)) {
                self.take(i);
            }
        }
    }

    /// Return `WAITING_PROCESSES`: entries that are neither released, timed out nor stopped.
    pub fn waiting(&self, now: u64) -> u32 {
        self.entries().filter(|&(i, w)| w.eligible(i, now)).count() as u32
    }

    /// Return the process index of the next entry to release at `now`: FIFO by arrival, or
    /// PRIORITY by the waiter's current priority (FIFO among equals).
    fn head(&self, inner: &Inner, now: u64) -> Option<usize> {
        let it = self.entries().filter(|&(i, w)| w.eligible(i, now));
        match self.discipline {
            QueuingDiscipline::Fifo => it.min_by_key(|(_, w)| w.ticket).map(|(i, _)| i),
            QueuingDiscipline::Priority => it
                .min_by_key(|&(i, w)| {
                    let prio = inner.procs.get(i).map_or(0, |p| p.current_priority);
                    (std::cmp::Reverse(prio), w.ticket)
                })
                .map(|(i, _)| i),
        }
    }

    /// Release the next waiter (the discipline's head), letting `give` fill or take its payload;
    /// return whether there was one. `give` runs under the runtime lock, on the entry of a live
    /// incarnation that is blocked in [`block`] (so a borrowed [`Inbox`] or [`Outbox`] is valid).
    pub fn grant_next(
        &mut self,
        inner: &mut Inner,
        now: u64,
        wake: &mut WakeSet,
        give: impl FnOnce(&mut P),
    ) -> bool {
        if self.used == 0 {
            return false;
        }
        self.purge();
        let Some(i) = self.head(inner, now) else {
            return false;
        };
        let Some(w) = self.slots[i].as_mut() else {
            return false;
        };
        give(&mut w.payload);
        w.granted = true;
        if let Some(p) = inner.procs.get_mut(i) {
            p.reasons &= !W_RESOURCE;
            rt().publish(i, p);
        }
        // SYNC POINT: Release pairs with the waiter's Acquire load of its word before it checks
        // its entry (under the lock, which orders the entry itself).
        WAKE[i].fetch_add(1, Ordering::Release);
        wake.add(i);
        true
    }

    /// Release every eligible waiter (in the discipline's order), `give` filling each payload.
    pub fn grant_all(
        &mut self,
        inner: &mut Inner,
        now: u64,
        wake: &mut WakeSet,
        mut give: impl FnMut(&mut P),
    ) {
        while self.grant_next(inner, now, wake, &mut give) {}
    }

    /// Queue the calling process (`me`, from [`may_wait`]) with `payload`; mark it WAITING.
    /// Allocates nothing: the caller's slot exists (a previous entry in it, if any, is of a
    /// stopped incarnation: a live one leaves it before it returns from [`block`]).
    pub fn enqueue(
        &mut self,
        objs_ticket: &mut u64,
        inner: &mut Inner,
        me: Caller,
        payload: P,
    ) -> Ticket {
        self.purge();
        debug_assert!(
            self.slots[me.index].is_none(),
            "a live process queued twice"
        );
        let ticket = *objs_ticket;
        *objs_ticket += 1;
        self.slots[me.index] = Some(Waiter {
            ticket,
            incarnation: me.incarnation,
            deadline: me.deadline,
            granted: false,
            payload,
        });
        self.used |= 1 << me.index;
        if let Some(p) = inner.procs.get_mut(me.index) {
            p.wait_for(W_RESOURCE, me.deadline);
            rt().publish(me.index, p);
        }
        Ticket {
            ticket,
            index: me.index,
            deadline: me.deadline,
        }
    }

    /// The waiter's check: `Some(Ok(payload))` once granted, `Some(Err(TimedOut))` (entry
    /// removed) once the deadline passed, `None` to keep waiting.
    fn collect(&mut self, inner: &mut Inner, t: &Ticket, now: u64) -> Option<ApexResult<P>> {
        let w = self.slots.get(t.index)?.as_ref()?;
        if w.ticket != t.ticket {
            return None;
        }
        if w.granted {
            return self.take(t.index).map(|w| Ok(w.payload));
        }
        if t.deadline.is_some_and(|d| now >= d) {
            self.take(t.index);
            if let Some(p) = inner.procs.get_mut(t.index) {
                p.reasons &= !W_RESOURCE;
                rt().publish(t.index, p);
            }
            return Some(Err(ApexError::TimedOut));
        }
        None
    }
}

/// The message buffer of a waiting reader or receiver (READ_BLACKBOARD, RECEIVE_BUFFER): the
/// caller's own `buf`, borrowed for the whole call. The releaser copies the message straight
/// into it under the runtime lock, so waiting needs no memory of its own.
pub(crate) struct Inbox {
    ptr: *mut u8,
    cap: usize,
    len: usize,
}

// SAFETY: an Inbox is only dereferenced (`fill`) under the runtime lock, while the thread that
// owns the buffer is blocked in `block` and does not touch it (see `Inbox::new`); the lock
// orders the copy before the owner's `collect`.
unsafe impl Send for Inbox {}

impl Inbox {
    /// Lend `buf` to the queue entry of the calling process.
    ///
    /// # Safety
    /// `buf` must stay valid, and untouched by the caller, until the entry holding the inbox
    /// leaves its queue (`block` returns it, or returns `TimedOut`) or the caller's incarnation
    /// ends. STOP changes the incarnation under the runtime lock before the thread may end, and
    /// an entry whose incarnation is stopped is never given anything ([`WaitQueue::grant_next`]
    /// checks it under the same lock): so a stopped process's stack is never written.
    pub unsafe fn new(buf: &mut [u8]) -> Inbox {
        Inbox {
            ptr: buf.as_mut_ptr(),
            cap: buf.len(),
            len: 0,
        }
    }

    /// Copy `msg` (at most the buffer's length) into the waiter's buffer.
    pub fn fill(&mut self, msg: &[u8]) {
        let n = msg.len().min(self.cap);
        // SAFETY: only called by a `give` of `WaitQueue::grant_next`, under the runtime lock,
        // on the entry of a live incarnation blocked in `block`: the buffer is valid for `cap`
        // bytes and nobody else accesses it (`Inbox::new`). `copy` allows an overlap (a C
        // sender's message may overlap the one receiver it fills). A release of several
        // readers (DISPLAY_BLACKBOARD) copies from the stored message, not from the caller's:
        // copied into one reader, an overlapping source would change for the next.
        unsafe { std::ptr::copy(msg.as_ptr(), self.ptr, n) };
        self.len = n;
    }

    /// The length of the message copied in.
    pub fn len(&self) -> usize {
        self.len
    }
}

/// The message of a waiting sender (SEND_BUFFER to a full buffer): the caller's own
/// `message`, borrowed for the whole call. The receiver that frees a place copies it into the
/// buffer under the runtime lock, so waiting needs no copy of it.
pub(crate) struct Outbox {
    ptr: *const u8,
    len: usize,
}

// SAFETY: as for `Inbox`: only read (`message`) under the runtime lock while the owner is
// blocked in `block`.
unsafe impl Send for Outbox {}

impl Outbox {
    /// Lend `message` to the queue entry of the calling process.
    ///
    /// # Safety
    /// As for [`Inbox::new`]: `message` must stay valid until the entry leaves its queue or
    /// the caller's incarnation ends.
    pub unsafe fn new(message: &[u8]) -> Outbox {
        Outbox {
            ptr: message.as_ptr(),
            len: message.len(),
        }
    }

    /// The waiting sender's message.
    pub fn message(&self) -> &[u8] {
        // SAFETY: only called by a `give` of `WaitQueue::grant_next`, under the runtime lock, on
        // the entry of a live incarnation blocked in `block`: its message is valid and unchanged
        // (`Outbox::new`).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A queued wait, held by the waiting process.
pub(crate) struct Ticket {
    ticket: u64,
    index: usize,
    deadline: Option<u64>,
}

/// The calling process, allowed to wait.
#[derive(Clone, Copy)]
pub(crate) struct Caller {
    index: usize,
    incarnation: u32,
    deadline: Option<u64>,
}

/// Check that the caller may wait with `timeout` (≠ 0) at module time `now`: it must be a
/// process, not the error handler, and not hold the preemption lock.
///
/// # Errors
/// `InvalidMode` otherwise.
pub(crate) fn may_wait(inner: &Inner, timeout: SystemTime, now: u64) -> ApexResult<Caller> {
    match rt::self_index() {
        None | Some(EH_INDEX) => Err(ApexError::InvalidMode),
        Some(index) if inner.lock_owner == Some(index) => Err(ApexError::InvalidMode),
        Some(index) => Ok(Caller {
            index,
            incarnation: rt().ctl[index].incarnation.load(Ordering::Acquire),
            deadline: (timeout != INFINITE_TIME_VALUE).then(|| now.saturating_add(timeout as u64)),
        }),
    }
}

/// The maximum message sizes of one kind of intra-partition object (entry `id - 1`), readable
/// without the runtime lock: each entry is written once, under the lock, when its object is
/// created (0: no such object). For a caller that checks a message's length on every message
/// (the C API's wrappers), where the status call would take the runtime lock a second time.
pub(crate) struct MaxSizes<const N: usize>([AtomicU32; N]);

impl<const N: usize> MaxSizes<N> {
    pub(crate) const fn new() -> Self {
        MaxSizes([const { AtomicU32::new(0) }; N])
    }

    /// Record the maximum of object `id` (1..=N), just created.
    pub(crate) fn set(&self, id: i32, max: u32) {
        if let Some(e) = Self::index(id).map(|i| &self.0[i]) {
            e.store(max, Ordering::Release);
        }
    }

    /// The maximum of object `id`.
    ///
    /// # Errors
    /// `InvalidParam`: no such object.
    pub(crate) fn get(&self, id: i32) -> ApexResult<u32> {
        match Self::index(id).map(|i| self.0[i].load(Ordering::Acquire)) {
            Some(m) if m != 0 => Ok(m),
            _ => Err(ApexError::InvalidParam),
        }
    }

    fn index(id: i32) -> Option<usize> {
        usize::try_from(id)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .filter(|&i| i < N)
    }
}

/// Return the object of id `id` (index + 1) in `v`.
///
/// # Errors
/// `InvalidParam`: no such object.
pub(crate) fn by_id<T>(v: &mut [T], id: i32) -> ApexResult<&mut T> {
    usize::try_from(id)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| v.get_mut(i))
        .ok_or(ApexError::InvalidParam)
}

/// Check a time-out: 0, positive ns, or `INFINITE_TIME_VALUE`.
///
/// # Errors
/// `InvalidParam` for any other negative value.
pub(crate) fn check_timeout(t: SystemTime) -> ApexResult<()> {
    if t < 0 && t != INFINITE_TIME_VALUE {
        Err(ApexError::InvalidParam)
    } else {
        Ok(())
    }
}

/// Check an object name: 1..=[`MAX_NAME_LENGTH`] bytes without NUL.
///
/// # Errors
/// `InvalidParam` otherwise.
pub(crate) fn check_name(name: &str) -> ApexResult<()> {
    if name.is_empty() || name.len() > MAX_NAME_LENGTH || name.contains('\0') {
        Err(ApexError::InvalidParam)
    } else {
        Ok(())
    }
}

/// An empty vector with room for `n` elements (the storage of a new object), allocated now but
/// not written: the caller fills it (a buffer's message array) only once the creation is sure to
/// succeed, after the mode check, so a creation refused in NORMAL mode costs no page faults.
///
/// The partition's memory is limited (`RLIMIT_DATA` = its configured memory, set by the
/// executive, which counts the allocation when it is made, written or not), and an allocation
/// that fails would abort the whole partition process; ARINC 653 answers "insufficient storage
/// capacity" with INVALID_CONFIG instead.
///
/// # Errors
/// `InvalidConfig`: the memory cannot be allocated.
pub(crate) fn try_capacity<T>(n: usize) -> ApexResult<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| ApexError::InvalidConfig)?;
    Ok(v)
}

/// A copy of a new object's name (checked by [`check_name`]: at most 30 bytes).
///
/// # Errors
/// `InvalidConfig`: the memory cannot be allocated (see [`try_capacity`]).
pub(crate) fn try_name(name: &str) -> ApexResult<String> {
    let mut s = String::new();
    s.try_reserve_exact(name.len())
        .map_err(|_| ApexError::InvalidConfig)?;
    s.push_str(name);
    Ok(s)
}

/// Make room for one more object in its table, so that the `push` that adds it allocates
/// nothing.
///
/// # Errors
/// `InvalidConfig`: the memory cannot be allocated (see [`try_capacity`]).
pub(crate) fn try_room<T>(table: &mut Vec<T>) -> ApexResult<()> {
    table.try_reserve(1).map_err(|_| ApexError::InvalidConfig)
}

/// Fail with `InvalidMode` in NORMAL mode (objects are created during initialisation only).
pub(crate) fn creation_mode() -> ApexResult<()> {
    if rt().mode() == mode::NORMAL {
        Err(ApexError::InvalidMode)
    } else {
        Ok(())
    }
}

/// What the first step of a service gave: done, or queued.
pub(crate) enum Step<T> {
    /// The service completed without waiting.
    Done(T),
    /// The caller was queued.
    Wait(Ticket),
}

/// Run `f` on the object table and the process table under the runtime lock, at module time
/// `now` (read under the lock); wake the processes it released before the lock is released,
/// highest priority first ([`WakeSet::wake`]).
///
/// Woken under the lock, the released processes run in priority order, as ARINC 653 has it
/// (every released process READY, then the highest-priority ready process runs). The first
/// one woken that outranks the caller preempts it, finds the lock taken (its `block` takes it
/// to collect what it was given) and so boosts the caller (priority inheritance), which wakes
/// the others without being preempted again and then hands the lock over to the highest
/// waiter. So every released thread is runnable once the lock is free, and SCHED_FIFO runs them
/// by priority, the caller going on only when none of them outranks it. Woken after the unlock,
/// one by one in process-index order, the first released process of higher priority than the
/// caller ran its whole job before the others were even woken, and a ready process of middle
/// priority could run while a released one of higher priority slept (review 27, findings 1
/// and 2). Woken before a STOP or SUSPEND of the caller takes effect, too (the section defers
/// them).
///
/// The clock is read under the lock: read before it, a releaser preempted on its way to the
/// lock could hand the resource to a waiter whose time-out had expired meanwhile (review 27,
/// finding 3).
pub(crate) fn with_objects<R>(
    f: impl FnOnce(&mut Objects, &mut Inner, u64, &mut WakeSet) -> R,
) -> R {
    let r = rt();
    r.with_inner(|inner| {
        let now = r.now();
        let mut wake = WakeSet::default();
        let out = f(&mut objects(), inner, now, &mut wake);
        // The object table is unlocked first: nobody waits for it, but a woken thread must
        // not find it held (it takes the runtime lock first anyway).
        wake.wake(inner);
        out
    })
}

impl Objects {
    /// Queue the caller on the queue `q` picks, with `payload`.
    pub fn enqueue<P>(
        &mut self,
        inner: &mut Inner,
        me: Caller,
        payload: P,
        q: impl FnOnce(&mut Objects) -> &mut WaitQueue<P>,
    ) -> Ticket {
        let mut next = self.next_ticket;
        let t = q(self).enqueue(&mut next, inner, me, payload);
        self.next_ticket = next;
        t
    }
}

/// Park the caller until its queued wait `t` (on the queue `q` picks) is granted or times out;
/// return the granted payload.
///
/// # Errors
/// `TimedOut` when the deadline passed first.
pub(crate) fn block<P>(t: Ticket, q: impl Fn(&mut Objects) -> &mut WaitQueue<P>) -> ApexResult<P> {
    let r = rt();
    let word = &WAKE[t.index];
    loop {
        // SYNC POINT: Acquire pairs with the Release bump of `WaitQueue::grant`; loaded before
        // the check so a grant after the check changes the word and the futex wait returns.
        let seen = word.load(Ordering::Acquire);
        let now = r.now();
        let got = r.with_inner(|inner| {
            let mut objs = objects();
            q(&mut objs).collect(inner, &t, now)
        });
        // The entry stays queued while this incarnation lives (only `collect` removes a live
        // entry; a stopped incarnation ends inside `with_inner`).
        if let Some(res) = got {
            return res;
        }
        let left = t
            .deadline
            .map(|d| Duration::from_nanos(d.saturating_sub(r.now()).max(1)));
        futex::wait(word, seen, left);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_sizes_answer_only_for_created_objects() {
        let t: MaxSizes<3> = MaxSizes::new();
        for id in [-1, 0, 1, 3, 4, i32::MAX] {
            assert_eq!(t.get(id), Err(ApexError::InvalidParam), "{id}");
        }
        t.set(1, 64);
        t.set(3, 8);
        // Out of range: ignored (creation refuses more objects than the table holds).
        t.set(4, 9);
        t.set(0, 9);
        assert_eq!(t.get(1), Ok(64));
        assert_eq!(t.get(2), Err(ApexError::InvalidParam));
        assert_eq!(t.get(3), Ok(8));
        assert_eq!(t.get(4), Err(ApexError::InvalidParam));
    }

    #[test]
    fn ids_names_and_timeouts_are_checked() {
        let mut v = vec![10, 20];
        assert_eq!(by_id(&mut v, 1).copied(), Ok(10));
        assert_eq!(by_id(&mut v, 2).copied(), Ok(20));
        for bad in [0, 3, -1, i32::MIN] {
            assert_eq!(by_id(&mut v, bad), Err(ApexError::InvalidParam), "{bad}");
        }
        assert!(check_name("S").is_ok() && check_name(&"x".repeat(30)).is_ok());
        for bad in ["", "a\0b"] {
            assert_eq!(check_name(bad), Err(ApexError::InvalidParam));
        }
        assert_eq!(check_name(&"x".repeat(31)), Err(ApexError::InvalidParam));
        for ok in [0, 1, INFINITE_TIME_VALUE, i64::MAX] {
            assert!(check_timeout(ok).is_ok(), "{ok}");
        }
        for bad in [-2, i64::MIN] {
            assert_eq!(check_timeout(bad), Err(ApexError::InvalidParam));
        }
    }

    #[test]
    fn bits_lists_the_set_bits_lowest_first() {
        assert_eq!(bits(0).count(), 0);
        assert_eq!(bits(0b1010_0001).collect::<Vec<_>>(), [0, 5, 7]);
        assert_eq!(bits(1 << 63).collect::<Vec<_>>(), [63]);
        assert_eq!(bits(u64::MAX).count(), 64);
    }

    #[test]
    fn wake_set_holds_every_process_index() {
        let mut w = WakeSet::default();
        for i in [0, 5, MAX_PROCESSES - 1] {
            w.add(i);
        }
        assert_eq!(w.by_priority(|_| 1), [0, 5, MAX_PROCESSES as u8 - 1]);
        let mut all = WakeSet::default();
        for i in (0..MAX_PROCESSES).rev() {
            all.add(i);
        }
        assert_eq!(all.by_priority(|i| i as i32).len(), MAX_PROCESSES);
    }

    #[test]
    fn wake_set_wakes_by_priority_then_release_order() {
        // Priorities of processes 0..=5 (creation order), released in the order 3, 0, 4, 1, 5, 2.
        let prio = [7, 5, 10, 15, 10, 7];
        let mut w = WakeSet::default();
        for i in [3, 0, 4, 1, 5, 2] {
            w.add(i);
        }
        // 10: 4 before 2 and 7: 0 before 5 (release order), not index order.
        assert_eq!(w.by_priority(|i| prio[i]), [3, 4, 2, 0, 5, 1]);
    }
}
