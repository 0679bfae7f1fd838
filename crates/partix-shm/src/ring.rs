//! A single-producer single-consumer queue of fixed-size slots: the one-sided queuing channel
//! (the writer pushes straight into the destination's ring; no daemon in between).
//!
//! # Layout (at a 64-byte aligned offset of a region; native-endian words)
//! ```text
//!  0    +--------------------------------------------------------------+
//!       | magic "PXRING01" u64 | version u32 | capacity u32 | max u32 |  header
//!       | slot_words u32                                                |
//!  64   +--------------------------------------------------------------+
//!       | notifier: epoch u32 | stamps u32 | waiters u64 | note  (consumer parks here) |
//!  128  +--------------------------------------------------------------+
//!       | head u64   written by the consumer only (own cache line)      |
//!  192  +--------------------------------------------------------------+
//!       | tail u64   written by the producer only (own cache line)      |
//!  256  +--------------------------------------------------------------+
//!       | slot 0: len+stamp u64 | payload (slot_words - 1) x u64        |
//!       | slot 1: ...                                  capacity slots    |
//!       +--------------------------------------------------------------+
//! ```
//! A slot's first word holds the message's length in its low [`LEN_BITS`] bits and, above
//! them, the time the producer pushed it: `CLOCK_MONOTONIC` in units of 1024 ns, modulo 2^39
//! (6.4 days), never 0; or 0, **not stamped**. The stamp costs the push one clock read
//! ([`crate::clock::stamp_ns`]) and no store of its own, and lets the consumer tell whether a
//! message came before or after a given time ([`RingConsumer::sent_by`]): whether a queuing
//! waiter whose time-out expired while its partition did not run was due it. A mover keeps a
//! message's stamp ([`RingView::pop_stamped`], [`RingView::push_stamped`]).
//!
//! The clock read is the dearest part of a push (a bare ring did 30-36 M msg/s with it against
//! 43-46 M without; the one-sided queuing port's ring, pushed in a loop under one lock, 18.8-19.0
//! M against 33-36 M, session 38), so a
//! producer may push unstamped while nobody asks for times ([`RingView::push_within_if`]): the
//! queuing ports stamp once their destination has waited with a time-out
//! ([`crate::notifier::Notifier::want_stamps`]). [`RingView::sent_by`] counts an unstamped
//! message as sent by any time asked about: it was pushed before the times were asked for,
//! which is before any deadline they are asked for. The benchmark's raw ring pushes unstamped.
//!
//! `head` and `tail` are free-running 64-bit counters (they never wrap in practice); message `i`
//! lives in slot `i & (capacity - 1)`; `tail - head` is the number of queued messages.
//!
//! **Split layout** ([`RingLayout::init_split`], magic `"PXRINGS1"`): the same data area (its
//! `head` and notifier lines unused), plus a separate control area owned by the consumer:
//! ```text
//!  0    notifier (consumer parks here)     64   (free: partix puts the "space" notifier here)
//!  128  head u64 (consumer only)           192
//! ```
//! The consumer then stores nothing in the data area, so it maps it **read-only**: a consumer
//! (destination partition) cannot corrupt queued messages, only its own `head`. The algorithm
//! ([`RingView`]) is the same; it takes `head`, `tail` and the slots wherever they live.
//!
//! # Protocol and proof sketch
//! ```text
//! producer (try_push):                          consumer (try_pop):
//!   if tail - cached_head == cap:                 if head == cached_tail:
//!     cached_head = head.load(Acquire)  (P1)        cached_tail = tail.load(Acquire)  (C1)*
//!     if still full: Full                           if still equal: Empty
//!   slot[tail]: len, payload (Relaxed)            len, payload of slot[head] (Relaxed)
//!   tail.store(tail + 1, Release)       (P2)      head.store(head + 1, Release)       (C2)
//! ```
//!
//! (*) A `Relaxed` load followed by an `Acquire` fence, which orders the same way: the consumer
//! of a split ring maps `tail` and the slots read-only (see `RingView::load_tail`).
//!
//! - *No loss, no torn message:* the consumer reads slot `i` only after C1 read a `tail > i`;
//!   P2 (Release) → C1 (Acquire) makes all of message `i`'s stores happen-before the reads.
//! - *No overwrite of unread data:* the producer writes message `i + cap` (same slot as `i`) only
//!   after P1 read a `head > i`; C2 (Release) → P1 (Acquire) makes the consumer's reads of slot
//!   `i` happen-before the new stores (the reads cannot see them).
//! - *No duplication, FIFO order:* each side is the only writer of its counter and advances it by
//!   one per message, in order.
//!
//! The payload uses `Relaxed` `AtomicU64` words like the sampling slot: correct use never races,
//! but the queue lives in memory another process can write, and atomics keep even a broken peer
//! from causing undefined behaviour here. A broken peer can only produce
//! [`PopError::Corrupt`] (impossible length or counters), never a panic.
//!
//! # Who may call what
//! One producer and one consumer at a time (`&mut self` on both handles). [`RingConsumer::clear`]
//! is the consumer's: it discards every message published so far by moving `head` to `tail` (the
//! producer may keep pushing concurrently; later messages stay). The producer cannot clear:
//! it does not own `head`.

use crate::sync::{copy_in, copy_out, fence, AtomicU64, Ordering};

/// Failure of a push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushError {
    /// All slots hold unread messages.
    Full,
    /// The message is longer than the slot.
    TooLarge,
    /// Queued messages have at least one byte.
    ZeroLength,
}

/// Failure of a pop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PopError {
    /// No message is queued.
    Empty,
    /// The buffer is shorter than the next message (which stays queued).
    BufferTooSmall {
        /// Length of the next message.
        needed: usize,
    },
    /// The producer wrote an impossible length (the message was dropped) or impossible counters.
    Corrupt,
}

impl std::fmt::Display for PushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PushError::Full => "queue is full",
            PushError::TooLarge => "message is larger than the queue's maximum message size",
            PushError::ZeroLength => "message is empty",
        })
    }
}

impl std::error::Error for PushError {}

impl std::fmt::Display for PopError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PopError::Empty => f.write_str("queue is empty"),
            PopError::BufferTooSmall { needed } => {
                write!(f, "buffer too small: the next message has {needed} bytes")
            }
            PopError::Corrupt => f.write_str("queue holds an impossible length or counters"),
        }
    }
}

impl std::error::Error for PopError {}

/// Bits of a slot's first word that hold the message's length (up to 32 MiB - 1); the bits
/// above hold its stamp (see the module docs).
pub const LEN_BITS: u32 = 25;
const LEN_MASK: u64 = (1 << LEN_BITS) - 1;
/// The largest message a ring carries (its length field's limit).
pub const MAX_RING_MESSAGE: usize = LEN_MASK as usize;
// `RingLayout::new` takes messages of up to 16 MiB (the configuration's queuing limit).
const _: () = assert!(16 << 20 <= MAX_RING_MESSAGE);
/// A stamp's unit: 2^STAMP_SHIFT ns.
const STAMP_SHIFT: u32 = 10;
const STAMP_BITS: u32 = 64 - LEN_BITS;
const STAMP_MASK: u64 = (1 << STAMP_BITS) - 1;

/// The stamp of `ns` (`CLOCK_MONOTONIC` nanoseconds): its 1024-ns units modulo 2^39, the unit
/// 0 taken as 1 (0 is [`NOT_STAMPED`]; one unit off, once every 6.4 days).
#[inline(always)]
fn stamp_of(ns: u64) -> u64 {
    ((ns >> STAMP_SHIFT) & STAMP_MASK).max(1)
}

/// The stamp of a message pushed without a time (see the module docs): sent by any time.
pub const NOT_STAMPED: u64 = 0;

/// The stamp of the present, for a push (under loom, which has no clock, [`NOT_STAMPED`]: every
/// push there counts as sent by any time).
#[inline(always)]
fn stamp_now() -> u64 {
    #[cfg(not(loom))]
    {
        stamp_of(crate::clock::stamp_ns())
    }
    #[cfg(loom)]
    {
        0
    }
}

/// Whether `stamp` is later than `at` (both stamps): their difference modulo 2^39 is in the
/// later half (so the answer holds for times less than 3.2 days apart). The same 1024-ns unit
/// counts as not later.
#[inline]
fn stamp_later(stamp: u64, at: u64) -> bool {
    let d = stamp.wrapping_sub(at) & STAMP_MASK;
    d != 0 && d < (1 << (STAMP_BITS - 1))
}

/// The producer's private state (its own copy of `tail` and a cached `head`).
#[derive(Debug, Clone, Copy)]
pub struct ProducerState {
    tail: u64,
    cached_head: u64,
}

/// The consumer's private state (its own copy of `head` and a cached `tail`).
#[derive(Debug, Clone, Copy)]
pub struct ConsumerState {
    head: u64,
    cached_tail: u64,
}

/// The algorithm's view of a ring: references to its words, wherever they live.
#[derive(Debug, Clone, Copy)]
pub struct RingView<'a> {
    head: &'a AtomicU64,
    tail: &'a AtomicU64,
    slots: &'a [AtomicU64],
    capacity: u64,
    stride: usize,
    /// The largest message in bytes (at most the slot's payload, `(stride - 1) * 8`): a length
    /// word above it is impossible (the message is dropped as corrupt).
    max: usize,
}

impl<'a> RingView<'a> {
    /// Make a view of `capacity` slots (a power of two) laid out in `slots`, each
    /// `slots.len() / capacity` words: a length word and the payload. Messages may fill the
    /// payload; [`RingView::with_max_message_size`] sets a smaller maximum.
    ///
    /// # Panics
    /// If `capacity` is not a power of two or the slots are not at least 2 words each.
    pub fn new(
        head: &'a AtomicU64,
        tail: &'a AtomicU64,
        slots: &'a [AtomicU64],
        capacity: usize,
    ) -> RingView<'a> {
        assert!(
            capacity.is_power_of_two(),
            "capacity must be a power of two"
        );
        let stride = slots.len() / capacity;
        assert!(stride >= 2, "slots need a length word and a payload word");
        RingView {
            head,
            tail,
            slots,
            capacity: capacity as u64,
            stride,
            max: ((stride - 1) * 8).min(MAX_RING_MESSAGE),
        }
    }

    /// Return this view with messages of at most `max` bytes, the ring's configured maximum
    /// (the slots hold it rounded up to whole words): a push of more is refused, and a queued
    /// length word above it is impossible, so that message is dropped with
    /// [`PopError::Corrupt`] rather than kept for a buffer of the maximum that it never fits.
    ///
    /// # Panics
    /// If `max` is 0 or larger than a slot's payload.
    pub fn with_max_message_size(self, max: usize) -> RingView<'a> {
        assert!(
            max > 0 && max <= (self.stride - 1) * 8 && max <= MAX_RING_MESSAGE,
            "the maximum must fit a slot (and at most MAX_RING_MESSAGE)"
        );
        RingView { max, ..self }
    }

    /// Make a view whose shape was validated already (no division on the hot path).
    #[cfg(not(loom))]
    #[inline]
    fn with_stride(
        head: &'a AtomicU64,
        tail: &'a AtomicU64,
        slots: &'a [AtomicU64],
        capacity: usize,
        stride: usize,
        max: usize,
    ) -> RingView<'a> {
        debug_assert!(capacity.is_power_of_two() && stride >= 2);
        debug_assert_eq!(slots.len(), capacity * stride);
        debug_assert!(max > 0 && max <= (stride - 1) * 8 && max <= MAX_RING_MESSAGE);
        RingView {
            head,
            tail,
            slots,
            capacity: capacity as u64,
            stride,
            max,
        }
    }

    /// Return the largest message in bytes.
    pub fn max_message_size(&self) -> usize {
        self.max
    }

    /// Return the number of slots.
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// Return a producer state starting from the shared counters (a new or restarted producer).
    pub fn producer_state(&self) -> ProducerState {
        ProducerState {
            tail: self.tail.load(Ordering::Relaxed),
            cached_head: self.head.load(Ordering::Acquire),
        }
    }

    /// Return a consumer state starting from the shared counters.
    pub fn consumer_state(&self) -> ConsumerState {
        ConsumerState {
            head: self.head.load(Ordering::Relaxed),
            cached_tail: self.load_tail(),
        }
    }

    /// Load `tail` with acquire semantics: a `Relaxed` load followed by an `Acquire` fence, not
    /// an `Acquire` load. The consumer of a split ring maps `tail` and the slots **read-only**,
    /// where only `Relaxed` atomic loads of at most 8 bytes are guaranteed to work (std docs,
    /// "Atomic accesses to read-only memory"), as the sampling reader does. The fence gives the
    /// same ordering: a `Release` store read by a load sequenced before an `Acquire` fence
    /// synchronises with the fence (C++ \[atomics.fences\]), and the fence orders every later
    /// load after it. On x86-64 both forms are a plain load; on AArch64 a load and `dmb ishld`
    /// rather than `ldar`.
    #[inline(always)]
    fn load_tail(&self) -> u64 {
        let tail = self.tail.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        tail
    }

    /// Return the number of queued messages (a snapshot when the other side is active).
    pub fn len(&self) -> usize {
        let head = self.head.load(Ordering::Acquire);
        let tail = self.load_tail();
        tail.wrapping_sub(head).min(self.capacity) as usize
    }

    /// Return whether no message is queued (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    fn slot(&self, i: u64) -> &'a [AtomicU64] {
        let start = (i & (self.capacity - 1)) as usize * self.stride;
        &self.slots[start..start + self.stride]
    }

    /// Append `data` (producer only).
    ///
    /// # Errors
    /// [`PushError::Full`], [`PushError::TooLarge`], [`PushError::ZeroLength`]; nothing changes.
    #[inline]
    pub fn push(&self, st: &mut ProducerState, data: &[u8]) -> Result<(), PushError> {
        self.push_within(st, data, self.capacity)
    }

    /// Append `data` if fewer than `limit` messages (at most the capacity) are queued
    /// (producer only). The consumer's `head` is read only when the cached copy says the ring is
    /// full, so a producer that is not blocked never touches the consumer's cache line.
    ///
    /// # Errors
    /// As [`RingView::push`].
    #[inline(always)]
    pub fn push_within(
        &self,
        st: &mut ProducerState,
        data: &[u8],
        limit: u64,
    ) -> Result<(), PushError> {
        self.push_at(st, data, limit, stamp_now)
    }

    /// [`RingView::push_within`], stamped only if `stamped` ([`NOT_STAMPED`] otherwise: no
    /// clock read; see the module docs).
    ///
    /// # Errors
    /// As [`RingView::push`].
    #[inline(always)]
    pub fn push_within_if(
        &self,
        st: &mut ProducerState,
        data: &[u8],
        limit: u64,
        stamped: bool,
    ) -> Result<(), PushError> {
        self.push_at(st, data, limit, || {
            if stamped {
                stamp_now()
            } else {
                NOT_STAMPED
            }
        })
    }

    /// The push, its stamp read only once there is room (a sender spinning on a full ring reads
    /// no clock).
    #[inline(always)]
    fn push_at(
        &self,
        st: &mut ProducerState,
        data: &[u8],
        limit: u64,
        stamp: impl FnOnce() -> u64,
    ) -> Result<(), PushError> {
        self.check_push(data)?;
        self.room(st, limit.min(self.capacity))?;
        self.write_slot(st.tail, data, stamp() & STAMP_MASK);
        st.tail = st.tail.wrapping_add(1);
        // SYNC POINT: P2, pairs with the consumer's Acquire load C1 of `tail`.
        self.tail.store(st.tail, Ordering::Release);
        Ok(())
    }

    /// Append `data` with the stamp `stamp` (as [`RingView::pop_stamped`] returned it) instead
    /// of the present's: a mover that carries a message from one ring to another keeps the time
    /// it was first pushed (producer only). Stamp 0 for a ring whose messages' times nobody
    /// asks about (the benchmark's raw ring: the clock read is part of what a port pays).
    ///
    /// # Errors
    /// As [`RingView::push`].
    #[inline]
    pub fn push_stamped(
        &self,
        st: &mut ProducerState,
        data: &[u8],
        stamp: u64,
    ) -> Result<(), PushError> {
        self.push_at(st, data, self.capacity, || stamp)
    }

    /// Append as many of `msgs` as fit below `limit` queued messages, publishing `tail` once
    /// (producer only); return how many were appended. Stops before the first message that is
    /// empty or too large.
    ///
    /// # Errors
    /// When not even the first message could be appended: [`PushError::Full`],
    /// [`PushError::TooLarge`] or [`PushError::ZeroLength`] (nothing changes).
    #[inline]
    pub fn push_many(
        &self,
        st: &mut ProducerState,
        msgs: &[&[u8]],
        limit: u64,
    ) -> Result<usize, PushError> {
        self.push_many_stamped(st, msgs, limit, stamp_now())
    }

    /// [`RingView::push_many`] with the stamp `stamp` on every message (see
    /// [`RingView::push_stamped`]).
    ///
    /// # Errors
    /// As [`RingView::push_many`].
    #[inline]
    pub fn push_many_stamped(
        &self,
        st: &mut ProducerState,
        msgs: &[&[u8]],
        limit: u64,
        stamp: u64,
    ) -> Result<usize, PushError> {
        let stamp = stamp & STAMP_MASK;
        let limit = limit.min(self.capacity);
        let mut n = 0usize;
        let mut tail = st.tail;
        for m in msgs {
            let r = self
                .check_push(m)
                .and_then(|()| self.room_at(tail, &mut st.cached_head, limit));
            if let Err(e) = r {
                if n == 0 {
                    return Err(e);
                }
                break;
            }
            self.write_slot(tail, m, stamp);
            tail = tail.wrapping_add(1);
            n += 1;
        }
        st.tail = tail;
        // SYNC POINT: P2 for every message of the batch.
        self.tail.store(st.tail, Ordering::Release);
        Ok(n)
    }

    #[inline]
    fn check_push(&self, data: &[u8]) -> Result<(), PushError> {
        if data.is_empty() {
            return Err(PushError::ZeroLength);
        }
        if data.len() > self.max_message_size() {
            return Err(PushError::TooLarge);
        }
        Ok(())
    }

    /// Check that slot `st.tail` may be written with fewer than `limit` messages queued.
    #[inline]
    fn room(&self, st: &mut ProducerState, limit: u64) -> Result<(), PushError> {
        self.room_at(st.tail, &mut st.cached_head, limit)
    }

    /// Check that slot `tail` may be written with fewer than `limit` messages queued, refreshing
    /// `cached_head` only when it says no.
    #[inline]
    fn room_at(&self, tail: u64, cached_head: &mut u64, limit: u64) -> Result<(), PushError> {
        if tail.wrapping_sub(*cached_head) >= limit {
            // SYNC POINT: P1, pairs with the consumer's Release store C2 of `head`.
            *cached_head = self.head.load(Ordering::Acquire);
            if tail.wrapping_sub(*cached_head) >= limit {
                return Err(PushError::Full);
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn write_slot(&self, i: u64, data: &[u8], stamp: u64) {
        let slot = self.slot(i);
        // `check_push` bounds the length by `max` (at most MAX_RING_MESSAGE).
        slot[0].store(data.len() as u64 | (stamp << LEN_BITS), Ordering::Relaxed);
        copy_in(&slot[1..], data);
    }

    /// Remove the oldest message into `buf`; return its length (consumer only).
    ///
    /// # Errors
    /// [`PopError::Empty`], [`PopError::BufferTooSmall`] (message kept), [`PopError::Corrupt`]
    /// (an impossible length: that message is dropped; impossible counters: nothing changes).
    #[inline(always)]
    pub fn pop(&self, st: &mut ConsumerState, buf: &mut [u8]) -> Result<usize, PopError> {
        self.pop_stamped(st, buf).map(|(n, _)| n)
    }

    /// [`RingView::pop`], also returning the message's stamp (for [`RingView::push_stamped`]).
    ///
    /// # Errors
    /// As [`RingView::pop`].
    #[inline(always)]
    pub fn pop_stamped(
        &self,
        st: &mut ConsumerState,
        buf: &mut [u8],
    ) -> Result<(usize, u64), PopError> {
        if st.head == st.cached_tail {
            // SYNC POINT: C1, pairs with the producer's Release store P2 of `tail` (a load and an
            // Acquire fence: the data may be mapped read-only).
            st.cached_tail = self.load_tail();
            if st.head == st.cached_tail {
                self.repair_head(st);
                return Err(PopError::Empty);
            }
        }
        if st.cached_tail.wrapping_sub(st.head) > self.capacity {
            return Err(self.impossible_tail(st));
        }
        let slot = self.slot(st.head);
        let word = slot[0].load(Ordering::Relaxed);
        let len = word & LEN_MASK;
        if len == 0 || len > self.max_message_size() as u64 {
            self.advance(st);
            return Err(PopError::Corrupt);
        }
        let len = len as usize;
        if len > buf.len() {
            return Err(PopError::BufferTooSmall { needed: len });
        }
        copy_out(&slot[1..], &mut buf[..len]);
        self.advance(st);
        Ok((len, word >> LEN_BITS))
    }

    /// Remove up to `lens.len()` messages, message `i` into `out[i * stride..]` (its length into
    /// `lens[i]`), publishing `head` once (consumer only); return how many. Stops at the end of
    /// `out`, or before a message longer than `stride` or with an impossible length.
    ///
    /// # Errors
    /// When not even the first message could be taken: as [`RingView::pop`].
    #[inline]
    pub fn pop_many(
        &self,
        st: &mut ConsumerState,
        out: &mut [u8],
        stride: usize,
        lens: &mut [usize],
    ) -> Result<usize, PopError> {
        let room = out
            .len()
            .checked_div(stride)
            .map_or(0, |k| k.min(lens.len()));
        if room == 0 {
            return self.pop(st, &mut []).map(|_| 0);
        }
        if st.cached_tail.wrapping_sub(st.head) < room as u64 {
            // SYNC POINT: C1, pairs with the producer's Release store P2 of `tail` (a load and an
            // Acquire fence: the data may be mapped read-only).
            st.cached_tail = self.load_tail();
        }
        let avail = st.cached_tail.wrapping_sub(st.head);
        if avail == 0 {
            self.repair_head(st);
            return Err(PopError::Empty);
        }
        if avail > self.capacity {
            return Err(self.impossible_tail(st));
        }
        let want = room.min(avail as usize);
        let mut head = st.head;
        let mut n = 0usize;
        let mut err = None;
        while n < want {
            let slot = self.slot(head);
            let len = slot[0].load(Ordering::Relaxed) & LEN_MASK;
            if len == 0 || len > self.max_message_size() as u64 {
                if n == 0 {
                    head = head.wrapping_add(1);
                    err = Some(PopError::Corrupt);
                }
                break;
            }
            let len = len as usize;
            if len > stride {
                if n == 0 {
                    err = Some(PopError::BufferTooSmall { needed: len });
                }
                break;
            }
            copy_out(&slot[1..], &mut out[n * stride..n * stride + len]);
            lens[n] = len;
            head = head.wrapping_add(1);
            n += 1;
        }
        if head != st.head {
            st.head = head;
            // SYNC POINT: C2 for every message taken (or the one corrupt message dropped).
            self.head.store(st.head, Ordering::Release);
        }
        match err {
            Some(e) => Err(e),
            None => Ok(n),
        }
    }

    /// The tail just loaded is impossible (more than a ring ahead of the head, or behind it: a
    /// broken producer): forget it, so that the next pop loads the tail again, and report
    /// [`PopError::Corrupt`]. (Kept in `cached_tail`, it no longer equalled the head, so no pop
    /// reloaded it and the ring answered Corrupt for good, even after the producer's next push
    /// stored a correct tail; found by review.)
    #[cold]
    fn impossible_tail(&self, st: &mut ConsumerState) -> PopError {
        st.cached_tail = st.head;
        PopError::Corrupt
    }

    #[inline]
    fn advance(&self, st: &mut ConsumerState) {
        st.head = st.head.wrapping_add(1);
        // SYNC POINT: C2, pairs with the producer's Acquire load P1 of `head`.
        self.head.store(st.head, Ordering::Release);
    }

    /// Store the consumer's own head back into the shared `head` if something else changed it
    /// (an empty pop, the cold path). Only the consumer writes `head`, but where its word shares
    /// a region the producer may write (the control line of a split ring), a broken producer
    /// could store another value: lock-free readiness probes that count from the shared words
    /// ([`RingView::len`]) then said "a message is there" to a pop that found none, and a
    /// waiting receiver spun instead of parking (found by review).
    #[cold]
    fn repair_head(&self, st: &ConsumerState) {
        if self.head.load(Ordering::Relaxed) != st.head {
            self.head.store(st.head, Ordering::Release);
        }
    }

    /// Whether a message is queued that was pushed at or before `ns` (`CLOCK_MONOTONIC`
    /// nanoseconds), by the oldest one's stamp (consumer only; to the stamp's 1024-ns unit: a
    /// push in the same unit as `ns` counts as at it; an unstamped one, [`NOT_STAMPED`], as
    /// before it: see the module docs). `false` when nothing is queued, or when
    /// the oldest was pushed later: what the next pop takes is then not due a waiter whose
    /// time-out expired at `ns`. (One answer for both, so that a message pushed between this
    /// look and a pop cannot slip in as "not later": found by review.)
    pub fn sent_by(&self, st: &mut ConsumerState, ns: u64) -> bool {
        if st.head == st.cached_tail {
            // SYNC POINT: C1, as in `pop`: the slot's stores happen-before the read below.
            st.cached_tail = self.load_tail();
        }
        let queued = st.cached_tail.wrapping_sub(st.head);
        if queued == 0 || queued > self.capacity {
            return false;
        }
        let word = self.slot(st.head)[0].load(Ordering::Relaxed);
        let stamp = word >> LEN_BITS;
        stamp == NOT_STAMPED || !stamp_later(stamp, stamp_of(ns))
    }

    /// Return whether a message is ready for the consumer (one load of `tail`, acquiring).
    #[inline]
    pub fn has_message(&self, st: &ConsumerState) -> bool {
        self.load_tail() != st.head
    }

    /// Discard every message published so far (consumer only; see the module docs); return
    /// how many.
    pub fn clear(&self, st: &mut ConsumerState) -> u64 {
        let tail = self.load_tail();
        // A broken producer may have published an impossible tail (more than a ring ahead, or
        // behind the head): then discard nothing. (Clamped to the capacity, a tail behind the
        // head moved the head a whole ring past it, and the ring answered Corrupt / Full for
        // good; found by review.)
        let n = tail.wrapping_sub(st.head);
        if n > self.capacity {
            return 0;
        }
        st.head = st.head.wrapping_add(n);
        st.cached_tail = tail;
        // SYNC POINT: C2 for every discarded message.
        self.head.store(st.head, Ordering::Release);
        n
    }
}

#[cfg(not(loom))]
pub use shm::*;

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::area::{line_up, Area, AreaError};
    use crate::notifier::{wait_with, Notifier, RecvMode, NOTIFIER_LEN};
    use crate::region::Region;
    use std::fmt;
    use std::sync::Arc;
    use std::time::Duration;

    const MAGIC: u64 = u64::from_le_bytes(*b"PXRING01");
    /// A ring whose `head` lives in a separate control area ([`RingLayout::init_split`]).
    const MAGIC_SPLIT: u64 = u64::from_le_bytes(*b"PXRINGS1");
    /// Offsets in the control area of a split ring.
    const CTRL_NOTIFIER: usize = 0;
    const CTRL_HEAD: usize = 2 * 64;
    /// Bytes of the control area of a split ring: the data notifier, a line the channel may use
    /// (partix: the "space" notifier), and `head` on its own line.
    pub const CONTROL_LEN: usize = 3 * 64;
    /// 2: a slot's first word holds the stamp above the length (session 34).
    const VERSION: u32 = 2;
    const HDR_MAGIC: usize = 0;
    const HDR_VERSION: usize = 8;
    const HDR_CAPACITY: usize = 12;
    const HDR_MAX: usize = 16;
    const HDR_STRIDE: usize = 20;
    const NOTIFIER: usize = 64;
    /// Offsets of `head`, `tail` and slot 0 in a ring's area (`crate::twoqueue`'s manager
    /// addresses them itself; its unit test checks its copies against these).
    pub(crate) const HEAD: usize = 128;
    pub(crate) const TAIL: usize = 192;
    pub(crate) const SLOTS: usize = 256;

    /// Shape of a ring: `capacity` slots of up to `max_message_size` bytes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct RingLayout {
        capacity: u32,
        max_message_size: u32,
    }

    impl RingLayout {
        /// Describe a ring.
        ///
        /// # Errors
        /// [`AreaError::BadParameter`] unless `capacity` is a power of two in 1..=2^24 and
        /// `max_message_size` is in 1..=16 MiB.
        pub fn new(capacity: u32, max_message_size: u32) -> Result<RingLayout, AreaError> {
            if !capacity.is_power_of_two() || capacity > 1 << 24 {
                return Err(AreaError::BadParameter(
                    "ring capacity must be a power of two in 1..=16777216",
                ));
            }
            if max_message_size == 0 || max_message_size > 16 << 20 {
                return Err(AreaError::BadParameter(
                    "ring max_message_size must be 1..=16777216",
                ));
            }
            Ok(RingLayout {
                capacity,
                max_message_size,
            })
        }

        fn stride(&self) -> usize {
            1 + (self.max_message_size as usize).div_ceil(8)
        }

        fn slot_words(&self) -> usize {
            self.stride() * self.capacity as usize
        }

        /// Return the bytes the ring occupies in a region (a multiple of 64).
        pub fn size_bytes(&self) -> usize {
            line_up(SLOTS + 8 * self.slot_words())
        }

        /// Initialise an empty ring at `offset` of `region` (discarding previous content).
        ///
        /// # Errors
        /// [`AreaError::ReadOnly`], [`AreaError::Misaligned`], [`AreaError::TooSmall`].
        pub fn init(&self, region: &Arc<Region>, offset: usize) -> Result<(), AreaError> {
            let area = Area::new(region.clone(), offset, self.size_bytes())?;
            if !area.writable() {
                return Err(AreaError::ReadOnly);
            }
            area.u64_at(HDR_MAGIC).store(0, Ordering::Relaxed);
            area.u64_at(HEAD).store(0, Ordering::Relaxed);
            area.u64_at(TAIL).store(0, Ordering::Relaxed);
            // The whole notifier line (epoch and both waiter counts), as `init_split` does.
            for w in area.words(NOTIFIER, NOTIFIER_LEN / 8) {
                w.store(0, Ordering::Relaxed);
            }
            area.u32_at(HDR_VERSION).store(VERSION, Ordering::Relaxed);
            area.u32_at(HDR_CAPACITY)
                .store(self.capacity, Ordering::Relaxed);
            area.u32_at(HDR_MAX)
                .store(self.max_message_size, Ordering::Relaxed);
            area.u32_at(HDR_STRIDE)
                .store(self.stride() as u32, Ordering::Relaxed);
            // SYNC POINT: publishes the header; pairs with the Acquire magic load in `open`.
            area.u64_at(HDR_MAGIC).store(MAGIC, Ordering::Release);
            Ok(())
        }

        /// Initialise an empty **split** ring: the header, `tail` and the slots at `offset` of
        /// `data` ([`RingLayout::size_bytes`]), and the consumer's `head` plus the notifier in
        /// the [`CONTROL_LEN`] bytes at `ctrl_offset` of `ctrl`. The consumer then needs only a
        /// read-only mapping of `data` (it writes nothing there) and a read-write one of `ctrl`.
        ///
        /// # Errors
        /// [`AreaError::ReadOnly`], [`AreaError::Misaligned`], [`AreaError::TooSmall`].
        pub fn init_split(
            &self,
            data: &Arc<Region>,
            offset: usize,
            ctrl: &Arc<Region>,
            ctrl_offset: usize,
        ) -> Result<(), AreaError> {
            let c = Area::new(ctrl.clone(), ctrl_offset, CONTROL_LEN)?;
            if !c.writable() {
                return Err(AreaError::ReadOnly);
            }
            for w in c.words(0, CONTROL_LEN / 8) {
                w.store(0, Ordering::Relaxed);
            }
            self.init(data, offset)?;
            let area = Area::new(data.clone(), offset, SLOTS)?;
            // SYNC POINT: republishes the header as split; pairs with the Acquire magic load.
            area.u64_at(HDR_MAGIC).store(MAGIC_SPLIT, Ordering::Release);
            Ok(())
        }
    }

    #[derive(Debug, Clone)]
    struct Ring {
        area: Area,
        /// The area holding `head` at `head_off` (the ring's own area, or the control area).
        head: Area,
        head_off: usize,
        capacity: usize,
        max: u32,
        words: usize,
        stride: usize,
        notifier: Notifier,
    }

    impl Ring {
        fn open(
            region: Arc<Region>,
            offset: usize,
            expect: Option<RingLayout>,
        ) -> Result<Ring, AreaError> {
            Self::open_with(region, offset, None, expect)
        }

        /// Open a split ring; `data_rw`: whether this role stores into the data area.
        fn open_split(
            data: Arc<Region>,
            offset: usize,
            ctrl: Arc<Region>,
            ctrl_offset: usize,
            data_rw: bool,
            expect: Option<RingLayout>,
        ) -> Result<Ring, AreaError> {
            let c = Area::new(ctrl, ctrl_offset, CONTROL_LEN)?;
            if !c.writable() {
                return Err(AreaError::ReadOnly);
            }
            let r = Self::open_with(data, offset, Some(c), expect)?;
            if data_rw && !r.area.writable() {
                return Err(AreaError::ReadOnly);
            }
            Ok(r)
        }

        /// With `expect`, the ring is laid out as that says and its header is not read: the
        /// header lies where the other side may store (a split ring's data area is the
        /// producer's; a two-sided queue's TX region is mapped read-write by both sides), and
        /// a side told the layout by whoever made the ring does not depend on it.
        fn open_with(
            region: Arc<Region>,
            offset: usize,
            ctrl: Option<Area>,
            expect: Option<RingLayout>,
        ) -> Result<Ring, AreaError> {
            let hdr = Area::new(region, offset, SLOTS)?;
            if ctrl.is_none() && !hdr.writable() {
                return Err(AreaError::ReadOnly);
            }
            let layout = match expect {
                Some(layout) => layout,
                None => {
                    // SYNC POINT: pairs with the Release magic store of `init` / `init_split`: a
                    // load and an Acquire fence, the data area may be mapped read-only (see
                    // `RingView::load_tail`).
                    let magic = hdr.u64_at(HDR_MAGIC).load(Ordering::Relaxed);
                    fence(Ordering::Acquire);
                    let want = if ctrl.is_some() { MAGIC_SPLIT } else { MAGIC };
                    if magic != want {
                        return Err(AreaError::BadMagic { found: magic });
                    }
                    let version = hdr.u32_at(HDR_VERSION).load(Ordering::Relaxed);
                    if version != VERSION {
                        return Err(AreaError::BadVersion { found: version });
                    }
                    let layout = RingLayout::new(
                        hdr.u32_at(HDR_CAPACITY).load(Ordering::Relaxed),
                        hdr.u32_at(HDR_MAX).load(Ordering::Relaxed),
                    )?;
                    if hdr.u32_at(HDR_STRIDE).load(Ordering::Relaxed) as usize != layout.stride() {
                        return Err(AreaError::BadParameter("ring header slot_words mismatch"));
                    }
                    layout
                }
            };
            let area = hdr.resized(layout.size_bytes())?;
            let (head, head_off, notifier) = match ctrl {
                None => (
                    area.clone(),
                    HEAD,
                    Notifier::from_area(Area::new(
                        area.region().clone(),
                        area.offset() + NOTIFIER,
                        64,
                    )?),
                ),
                Some(c) => {
                    let n = Area::new(c.region().clone(), c.offset() + CTRL_NOTIFIER, 64)?;
                    (c, CTRL_HEAD, Notifier::from_area(n))
                }
            };
            Ok(Ring {
                area,
                head,
                head_off,
                capacity: layout.capacity as usize,
                max: layout.max_message_size,
                words: layout.slot_words(),
                stride: layout.stride(),
                notifier,
            })
        }

        #[inline(always)]
        fn view(&self) -> RingView<'_> {
            RingView::with_stride(
                self.head.u64_at(self.head_off),
                self.area.u64_at(TAIL),
                self.area.words(SLOTS, self.words),
                self.capacity,
                self.stride,
                self.max as usize,
            )
        }
    }

    /// The producer handle of a ring in a region (needs a read-write mapping).
    #[derive(Debug)]
    pub struct RingProducer {
        ring: Ring,
        st: ProducerState,
    }

    impl RingProducer {
        /// Open the ring initialised ([`RingLayout::init`]) at `offset` of `region`; a restarted
        /// producer continues after the last message it published.
        ///
        /// # Errors
        /// [`AreaError::BadMagic`], [`AreaError::BadVersion`], [`AreaError::BadParameter`],
        /// [`AreaError::ReadOnly`], [`AreaError::Misaligned`], [`AreaError::TooSmall`].
        pub fn attach(region: Arc<Region>, offset: usize) -> Result<RingProducer, AreaError> {
            let ring = Ring::open(region, offset, None)?;
            let st = ring.view().producer_state();
            Ok(RingProducer { ring, st })
        }

        /// Open the ring at `offset` of `region` laid out as `layout` (the layout it was
        /// initialised with, as its maker says), without reading its header, which the other
        /// side may overwrite.
        ///
        /// # Errors
        /// [`AreaError::ReadOnly`], [`AreaError::Misaligned`], [`AreaError::TooSmall`].
        pub fn attach_expecting(
            region: Arc<Region>,
            offset: usize,
            layout: RingLayout,
        ) -> Result<RingProducer, AreaError> {
            let ring = Ring::open(region, offset, Some(layout))?;
            let st = ring.view().producer_state();
            Ok(RingProducer { ring, st })
        }

        /// Open a split ring ([`RingLayout::init_split`]): `data` read-write, `ctrl` read-write
        /// (the producer reads `head` there and wakes the consumer through its notifier).
        ///
        /// # Errors
        /// As [`RingProducer::attach`].
        pub fn attach_split(
            data: Arc<Region>,
            offset: usize,
            ctrl: Arc<Region>,
            ctrl_offset: usize,
        ) -> Result<RingProducer, AreaError> {
            let ring = Ring::open_split(data, offset, ctrl, ctrl_offset, true, None)?;
            let st = ring.view().producer_state();
            Ok(RingProducer { ring, st })
        }

        /// As [`RingProducer::attach_split`], laid out as `layout` without reading the header
        /// (see [`RingProducer::attach_expecting`]).
        ///
        /// # Errors
        /// [`AreaError::ReadOnly`], [`AreaError::Misaligned`], [`AreaError::TooSmall`].
        pub fn attach_split_expecting(
            data: Arc<Region>,
            offset: usize,
            ctrl: Arc<Region>,
            ctrl_offset: usize,
            layout: RingLayout,
        ) -> Result<RingProducer, AreaError> {
            let ring = Ring::open_split(data, offset, ctrl, ctrl_offset, true, Some(layout))?;
            let st = ring.view().producer_state();
            Ok(RingProducer { ring, st })
        }

        /// Return the number of messages published since the ring was initialised (the shared
        /// `tail`, acquiring).
        pub fn pushed(&self) -> u64 {
            self.ring.view().load_tail()
        }

        /// Return the number of messages consumed (or cleared) since the ring was initialised
        /// (the shared `head`, `Acquire`): the consumer's cumulative acknowledgement.
        pub fn popped(&self) -> u64 {
            self.ring
                .head
                .u64_at(self.ring.head_off)
                .load(Ordering::Acquire)
        }

        /// Return the largest message size.
        pub fn max_message_size(&self) -> u32 {
            self.ring.max
        }

        /// Return the number of slots.
        pub fn capacity(&self) -> usize {
            self.ring.capacity
        }

        /// Return the number of queued messages (a snapshot).
        pub fn len(&self) -> usize {
            self.ring.view().len()
        }

        /// Return the number of messages this producer published (its own count: the shared
        /// `tail` is only ever written by the producer, but may lie in a region the consumer
        /// can write too).
        pub fn published(&self) -> u64 {
            self.st.tail
        }

        /// Store this producer's own count back into the shared `tail` if something else
        /// changed it (see [`RingProducer::published`]): lock-free probes that count from the
        /// shared words then agree with what a push finds.
        pub fn repair_tail(&self) {
            let v = self.ring.view();
            if v.tail.load(Ordering::Relaxed) != self.st.tail {
                v.tail.store(self.st.tail, Ordering::Release);
            }
        }

        /// Return whether no message is queued (a snapshot).
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// Append `data` and wake a parked consumer, if any.
        ///
        /// # Errors
        /// [`PushError::Full`], [`PushError::TooLarge`] (also when longer than the configured
        /// maximum), [`PushError::ZeroLength`].
        #[inline]
        pub fn try_push(&mut self, data: &[u8]) -> Result<(), PushError> {
            self.try_push_quiet(data)?;
            self.ring.notifier.notify();
            Ok(())
        }

        /// Append `data` without waking a parked consumer; call [`RingProducer::notify`] after
        /// a batch (a consumer that only spins never needs it).
        ///
        /// # Errors
        /// As [`RingProducer::try_push`].
        #[inline]
        pub fn try_push_quiet(&mut self, data: &[u8]) -> Result<(), PushError> {
            self.try_push_quiet_if(data, true)
        }

        /// [`RingProducer::try_push_quiet`], stamped only if `stamped` (see
        /// [`RingView::push_within_if`]).
        ///
        /// # Errors
        /// As [`RingProducer::try_push`].
        #[inline(always)]
        pub fn try_push_quiet_if(&mut self, data: &[u8], stamped: bool) -> Result<(), PushError> {
            self.try_push_quiet_within_if(data, self.ring.capacity, stamped)
        }

        /// [`RingProducer::try_push_quiet`] with the stamp `stamp` (see
        /// [`RingView::push_stamped`]).
        ///
        /// # Errors
        /// As [`RingProducer::try_push`].
        #[inline]
        pub fn try_push_quiet_stamped(&mut self, data: &[u8], stamp: u64) -> Result<(), PushError> {
            if data.len() > self.ring.max as usize {
                return Err(PushError::TooLarge);
            }
            self.ring.view().push_stamped(&mut self.st, data, stamp)
        }

        /// Append `data` without waking anyone if fewer than `limit` messages are queued (a bound
        /// below the capacity, e.g. `MaxNbMessages`); the consumer's counter is read only when
        /// the cached one says the bound is reached.
        ///
        /// # Errors
        /// As [`RingProducer::try_push`] ([`PushError::Full`] at `limit`).
        #[inline(always)]
        pub fn try_push_quiet_within(
            &mut self,
            data: &[u8],
            limit: usize,
        ) -> Result<(), PushError> {
            self.try_push_quiet_within_if(data, limit, true)
        }

        /// [`RingProducer::try_push_quiet_within`], stamped only if `stamped` (see
        /// [`RingView::push_within_if`]).
        ///
        /// # Errors
        /// As [`RingProducer::try_push`] ([`PushError::Full`] at `limit`).
        #[inline(always)]
        pub fn try_push_quiet_within_if(
            &mut self,
            data: &[u8],
            limit: usize,
            stamped: bool,
        ) -> Result<(), PushError> {
            if data.len() > self.ring.max as usize {
                return Err(PushError::TooLarge);
            }
            self.ring
                .view()
                .push_within_if(&mut self.st, data, limit as u64, stamped)
        }

        /// Append as many of `msgs` as fit below `limit` queued messages, publishing them with
        /// one store and waking nobody (call [`RingProducer::notify`] once after); return how
        /// many. Stops before the first message that is empty or too large.
        ///
        /// # Errors
        /// When not even the first message was appended: as [`RingProducer::try_push`].
        #[inline]
        pub fn push_many_quiet(
            &mut self,
            msgs: &[&[u8]],
            limit: usize,
        ) -> Result<usize, PushError> {
            self.push_many_quiet_if(msgs, limit, true)
        }

        /// [`RingProducer::push_many_quiet`], stamped only if `stamped` (see
        /// [`RingView::push_within_if`]).
        ///
        /// # Errors
        /// As [`RingProducer::push_many_quiet`].
        #[inline]
        pub fn push_many_quiet_if(
            &mut self,
            msgs: &[&[u8]],
            limit: usize,
            stamped: bool,
        ) -> Result<usize, PushError> {
            let stamp = if stamped { stamp_now() } else { NOT_STAMPED };
            self.push_many_quiet_stamped(msgs, limit, stamp)
        }

        /// [`RingProducer::push_many_quiet`] with the stamp `stamp` on every message (see
        /// [`RingView::push_stamped`]).
        ///
        /// # Errors
        /// As [`RingProducer::push_many_quiet`].
        #[inline]
        pub fn push_many_quiet_stamped(
            &mut self,
            msgs: &[&[u8]],
            limit: usize,
            stamp: u64,
        ) -> Result<usize, PushError> {
            let max = self.ring.max as usize;
            let ok = msgs.iter().take_while(|m| m.len() <= max).count();
            if ok == 0 && !msgs.is_empty() {
                return Err(PushError::TooLarge);
            }
            self.ring
                .view()
                .push_many_stamped(&mut self.st, &msgs[..ok], limit as u64, stamp)
        }

        /// Wake a parked consumer, if any.
        pub fn notify(&self) {
            self.ring.notifier.notify();
        }
    }

    /// Failure of [`RingConsumer::pop_wait`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum PopWaitError {
        /// Nothing arrived in time.
        TimedOut,
        /// A message arrived but popping it failed.
        Pop(PopError),
    }

    impl fmt::Display for PopWaitError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                PopWaitError::TimedOut => f.write_str("no message before the timeout"),
                PopWaitError::Pop(e) => e.fmt(f),
            }
        }
    }

    impl std::error::Error for PopWaitError {}

    /// The consumer handle of a ring in a region (needs a read-write mapping: it writes `head`).
    #[derive(Debug)]
    pub struct RingConsumer {
        ring: Ring,
        st: ConsumerState,
    }

    impl RingConsumer {
        /// The consumer of `ring`. The consumer parks on the ring's notifier: a predecessor
        /// killed while parked there leaves nothing behind ([`Notifier::adopt`]).
        fn over(ring: Ring) -> RingConsumer {
            ring.notifier.adopt();
            let st = ring.view().consumer_state();
            RingConsumer { ring, st }
        }

        /// Open the ring initialised at `offset` of `region`.
        ///
        /// # Errors
        /// As [`RingProducer::attach`].
        pub fn attach(region: Arc<Region>, offset: usize) -> Result<RingConsumer, AreaError> {
            let ring = Ring::open(region, offset, None)?;
            Ok(RingConsumer::over(ring))
        }

        /// As [`RingConsumer::attach`], laid out as `layout` without reading the header (see
        /// [`RingProducer::attach_expecting`]).
        ///
        /// # Errors
        /// [`AreaError::ReadOnly`], [`AreaError::Misaligned`], [`AreaError::TooSmall`].
        pub fn attach_expecting(
            region: Arc<Region>,
            offset: usize,
            layout: RingLayout,
        ) -> Result<RingConsumer, AreaError> {
            let ring = Ring::open(region, offset, Some(layout))?;
            Ok(RingConsumer::over(ring))
        }

        /// Open a split ring ([`RingLayout::init_split`]): `data` may be mapped **read-only**
        /// (the consumer only loads `tail` and the slots), `ctrl` read-write (it stores `head`).
        ///
        /// # Errors
        /// As [`RingProducer::attach`].
        pub fn attach_split(
            data: Arc<Region>,
            offset: usize,
            ctrl: Arc<Region>,
            ctrl_offset: usize,
        ) -> Result<RingConsumer, AreaError> {
            let ring = Ring::open_split(data, offset, ctrl, ctrl_offset, false, None)?;
            Ok(RingConsumer::over(ring))
        }

        /// As [`RingConsumer::attach_split`], laid out as `layout` without reading the header,
        /// which lies in the producer's data area (see [`RingProducer::attach_expecting`]).
        ///
        /// # Errors
        /// [`AreaError::ReadOnly`] (`ctrl`), [`AreaError::Misaligned`], [`AreaError::TooSmall`].
        pub fn attach_split_expecting(
            data: Arc<Region>,
            offset: usize,
            ctrl: Arc<Region>,
            ctrl_offset: usize,
            layout: RingLayout,
        ) -> Result<RingConsumer, AreaError> {
            let ring = Ring::open_split(data, offset, ctrl, ctrl_offset, false, Some(layout))?;
            Ok(RingConsumer::over(ring))
        }

        /// Return the number of messages published since the ring was initialised (the shared
        /// `tail`, acquiring).
        pub fn pushed(&self) -> u64 {
            self.ring.view().load_tail()
        }

        /// Return the number of messages consumed (or cleared) since the ring was initialised
        /// (the shared `head`, `Acquire`): the consumer's cumulative acknowledgement.
        pub fn popped(&self) -> u64 {
            self.ring
                .head
                .u64_at(self.ring.head_off)
                .load(Ordering::Acquire)
        }

        /// Return the largest message size.
        pub fn max_message_size(&self) -> u32 {
            self.ring.max
        }

        /// Return the number of slots.
        pub fn capacity(&self) -> usize {
            self.ring.capacity
        }

        /// Return the number of queued messages (a snapshot).
        pub fn len(&self) -> usize {
            self.ring.view().len()
        }

        /// Return whether no message is queued (a snapshot).
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// Remove the oldest message into `buf`; return its length.
        ///
        /// # Errors
        /// [`PopError::Empty`], [`PopError::BufferTooSmall`] (kept), [`PopError::Corrupt`].
        #[inline(always)]
        pub fn try_pop(&mut self, buf: &mut [u8]) -> Result<usize, PopError> {
            self.ring.view().pop(&mut self.st, buf)
        }

        /// Whether a message is queued that was pushed at or before `ns` (`CLOCK_MONOTONIC`
        /// nanoseconds, to 1024 ns): see [`RingView::sent_by`].
        pub fn sent_by(&mut self, ns: u64) -> bool {
            self.ring.view().sent_by(&mut self.st, ns)
        }

        /// The ring's notifier, on which the consumer parks and whose "stamps wanted" word
        /// the producers of a queuing channel read
        /// ([`crate::notifier::Notifier::want_stamps`]).
        pub fn notifier(&self) -> &Notifier {
            &self.ring.notifier
        }

        /// Remove up to `lens.len()` messages at once, message `i` into `out[i * stride..]` and
        /// its length into `lens[i]`, publishing `head` once; return how many (see
        /// [`RingView::pop_many`]).
        ///
        /// # Errors
        /// When not even one message was taken: as [`RingConsumer::try_pop`].
        #[inline]
        pub fn try_pop_many(
            &mut self,
            out: &mut [u8],
            stride: usize,
            lens: &mut [usize],
        ) -> Result<usize, PopError> {
            self.ring.view().pop_many(&mut self.st, out, stride, lens)
        }

        /// Wait (spinning and/or parking per `mode`) for a message, then pop it.
        ///
        /// # Errors
        /// [`PopWaitError::TimedOut`] or [`PopWaitError::Pop`].
        pub fn pop_wait(
            &mut self,
            buf: &mut [u8],
            mode: RecvMode,
            timeout: Option<Duration>,
        ) -> Result<usize, PopWaitError> {
            let view = self.ring.view();
            let st = self.st;
            if !wait_with(mode, Some(&self.ring.notifier), timeout, || {
                view.has_message(&st)
            }) {
                return Err(PopWaitError::TimedOut);
            }
            self.try_pop(buf).map_err(PopWaitError::Pop)
        }

        /// Discard every message published so far (see the module docs); return how many.
        pub fn clear(&mut self) -> u64 {
            self.ring.view().clear(&mut self.st)
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn ring(cap: u32, max: u32) -> (RingProducer, RingConsumer) {
            let l = RingLayout::new(cap, max).unwrap();
            let r = Arc::new(Region::create("partix-shm-ring-test", 256 + l.size_bytes()).unwrap());
            l.init(&r, 256).unwrap();
            (
                RingProducer::attach(r.clone(), 256).unwrap(),
                RingConsumer::attach(r, 256).unwrap(),
            )
        }

        #[test]
        fn fifo_full_empty_and_sizes() {
            let (mut p, mut c) = ring(4, 20);
            let mut buf = [0u8; 20];
            assert_eq!(c.try_pop(&mut buf), Err(PopError::Empty));
            assert_eq!(p.try_push(b""), Err(PushError::ZeroLength));
            assert_eq!(p.try_push(&[1; 21]), Err(PushError::TooLarge));
            // 20 rounds up to 24 bytes of slot; the configured maximum still applies.
            assert_eq!(p.try_push(&[1; 24]), Err(PushError::TooLarge));
            for i in 1..=4u8 {
                p.try_push(&vec![i; i as usize * 5]).unwrap();
            }
            assert_eq!(p.try_push(b"x"), Err(PushError::Full));
            assert_eq!((p.len(), c.len()), (4, 4));
            assert_eq!(
                c.try_pop(&mut [0u8; 3]),
                Err(PopError::BufferTooSmall { needed: 5 })
            );
            for i in 1..=4u8 {
                let n = c.try_pop(&mut buf).unwrap();
                assert_eq!(&buf[..n], &vec![i; i as usize * 5][..]);
            }
            assert_eq!(c.try_pop(&mut buf), Err(PopError::Empty));
            assert!(c.is_empty());
            // Wrap around many times.
            for i in 0..1000u32 {
                p.try_push(&i.to_le_bytes()).unwrap();
                let n = c.try_pop(&mut buf).unwrap();
                assert_eq!(&buf[..n], &i.to_le_bytes());
            }
        }

        /// Each message carries the time its push read (`arrived_after`), to 1024 ns; the
        /// length beside it is untouched.
        #[test]
        fn messages_carry_the_time_they_were_pushed() {
            let (mut p, mut c) = ring(4, 20);
            let mut buf = [0u8; 20];
            assert!(!c.sent_by(u64::MAX / 2), "nothing queued");
            p.try_push(&[1; 20]).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(5));
            let between = crate::clock::now_ns();
            std::thread::sleep(std::time::Duration::from_millis(5));
            p.try_push(&[2; 3]).unwrap();
            assert!(c.sent_by(between), "the first came before");
            assert!(
                !c.sent_by(between - 50_000_000),
                "and not before a time before it"
            );
            assert_eq!(c.try_pop(&mut buf), Ok(20));
            assert!(!c.sent_by(between), "the second came after");
            assert!(c.sent_by(crate::clock::now_ns()), "and before now");
            assert_eq!(c.try_pop(&mut buf), Ok(3));
            assert_eq!(&buf[..3], &[2; 3]);
            assert!(!c.sent_by(crate::clock::now_ns()), "nothing queued");
        }

        /// A push that is not asked to stamp reads no clock and leaves the stamp 0
        /// (`NOT_STAMPED`), which counts as sent by any time; one asked to stamps as `push`.
        /// Batches alike.
        #[test]
        fn an_unstamped_message_counts_as_sent_by_any_time() {
            let (mut p, mut c) = ring(4, 20);
            let mut buf = [0u8; 20];
            let before = crate::clock::now_ns();
            std::thread::sleep(std::time::Duration::from_millis(2));
            p.try_push_quiet_if(&[1; 20], false).unwrap();
            assert!(c.sent_by(before), "unstamped");
            assert!(c.sent_by(1 << 20), "by any time");
            let word = c.ring.view().slot(0)[0].load(Ordering::Relaxed);
            assert_eq!(word, 20, "the length alone");
            assert_eq!(c.try_pop(&mut buf), Ok(20));
            p.try_push_quiet_within_if(&[2; 3], 4, true).unwrap();
            assert!(!c.sent_by(before), "stamped");
            let word = c.ring.view().slot(1)[0].load(Ordering::Relaxed);
            assert_ne!(word >> LEN_BITS, NOT_STAMPED);
            assert_eq!(c.try_pop(&mut buf), Ok(3));
            assert_eq!(p.push_many_quiet_if(&[b"ab", b"cd"], 4, false), Ok(2));
            assert!(c.sent_by(before));
            assert_eq!(c.try_pop(&mut buf), Ok(2));
            assert_eq!(c.try_pop(&mut buf), Ok(2));
            assert_eq!(p.push_many_quiet_if(&[b"ef"], 4, true), Ok(1));
            assert!(!c.sent_by(before));
            assert!(c.sent_by(crate::clock::now_ns()));
        }

        /// A mover's push keeps the stamp its pop returned, whatever it is; a stamp never
        /// changes a length (the largest one included).
        #[test]
        fn a_moved_message_keeps_its_stamp() {
            let (head, tail) = (AtomicU64::new(0), AtomicU64::new(0));
            let slots: Vec<AtomicU64> = (0..4 * 3).map(|_| AtomicU64::new(0)).collect();
            let v = RingView::new(&head, &tail, &slots, 4);
            let (mut ps, mut cs) = (v.producer_state(), v.consumer_state());
            let mut buf = [0u8; 16];
            for stamp in [0, 1, 123_456, STAMP_MASK, u64::MAX] {
                v.push_stamped(&mut ps, &[9; 16], stamp).unwrap();
                assert_eq!(
                    v.pop_stamped(&mut cs, &mut buf),
                    Ok((16, stamp & STAMP_MASK))
                );
            }
            assert_eq!(
                v.push_stamped(&mut ps, &[1; 17], 7),
                Err(PushError::TooLarge)
            );
        }

        /// Later is decided modulo 2^39 units, by the shorter way round.
        #[test]
        fn later_stamps_wrap() {
            assert!(stamp_later(5, 3));
            assert!(!stamp_later(3, 5));
            assert!(!stamp_later(4, 4), "the same unit is not later");
            assert!(stamp_later(1, STAMP_MASK), "just after the wrap");
            assert!(!stamp_later(STAMP_MASK, 1), "just before it");
            let half = 1 << (STAMP_BITS - 1);
            assert!(stamp_later(half - 1, 0) && !stamp_later(0, half - 1));
            assert!(
                !stamp_later(half, 0) && !stamp_later(0, half),
                "half the range apart: neither is later"
            );
            assert_eq!(stamp_of(1 << 10), 1);
            assert_eq!(stamp_of(u64::MAX), STAMP_MASK);
            assert_eq!(stamp_of(0), 1, "0 is NOT_STAMPED");
            assert_eq!(
                stamp_of((STAMP_MASK + 1) << STAMP_SHIFT),
                1,
                "nor after a wrap"
            );
        }

        #[test]
        fn batches_respect_the_limit_order_and_lengths() {
            let (mut p, mut c) = ring(8, 16);
            let msgs: Vec<Vec<u8>> = (1..=10u8).map(|i| vec![i; i as usize]).collect();
            let refs: Vec<&[u8]> = msgs.iter().map(|m| &m[..]).collect();
            // At most 5 queued: the first batch stops there.
            assert_eq!(p.push_many_quiet(&refs, 5), Ok(5));
            assert_eq!(p.push_many_quiet(&refs[5..], 5), Err(PushError::Full));
            assert_eq!(p.try_push_quiet_within(b"x", 5), Err(PushError::Full));
            let mut out = [0u8; 3 * 16];
            let mut lens = [0usize; 3];
            assert_eq!(c.try_pop_many(&mut out, 16, &mut lens), Ok(3));
            for (i, &len) in lens.iter().enumerate() {
                assert_eq!(&out[i * 16..i * 16 + len], &msgs[i][..]);
            }
            // Room again: the producer refreshes its cached head.
            assert_eq!(p.push_many_quiet(&refs[5..], 5), Ok(3));
            // A message longer than the stride stops a batch before it.
            let mut out = [0u8; 8 * 6];
            let mut lens = [0usize; 8];
            assert_eq!(c.try_pop_many(&mut out, 6, &mut lens), Ok(3));
            assert_eq!(lens[..3], [4, 5, 6]);
            assert_eq!(
                c.try_pop_many(&mut out, 6, &mut lens),
                Err(PopError::BufferTooSmall { needed: 7 })
            );
            let mut out = [0u8; 8 * 16];
            assert_eq!(c.try_pop_many(&mut out, 16, &mut lens), Ok(2));
            assert_eq!(lens[..2], [7, 8]);
            assert_eq!(
                c.try_pop_many(&mut out, 16, &mut lens),
                Err(PopError::Empty)
            );
            // Bad messages: an empty one stops the batch; a batch starting with one fails.
            assert_eq!(p.push_many_quiet(&[b"ab", b"", b"c"], 8), Ok(1));
            assert_eq!(
                p.push_many_quiet(&[b"", b"c"], 8),
                Err(PushError::ZeroLength)
            );
            assert_eq!(
                p.push_many_quiet(&[&[0u8; 17][..]], 8),
                Err(PushError::TooLarge)
            );
            assert_eq!(c.try_pop_many(&mut out, 16, &mut lens), Ok(1));
            assert_eq!(&out[..2], b"ab");
        }

        #[test]
        fn clear_discards_published_messages_only() {
            let (mut p, mut c) = ring(8, 8);
            for i in 0..5u8 {
                p.try_push(&[i]).unwrap();
            }
            c.clear();
            assert!(c.is_empty());
            p.try_push(&[9]).unwrap();
            let mut buf = [0u8; 8];
            assert_eq!(c.try_pop(&mut buf), Ok(1));
            assert_eq!(buf[0], 9);
        }

        #[test]
        fn restarted_handles_continue() {
            let l = RingLayout::new(4, 8).unwrap();
            let r = Arc::new(Region::create("partix-shm-ring-restart", l.size_bytes()).unwrap());
            l.init(&r, 0).unwrap();
            let mut p = RingProducer::attach(r.clone(), 0).unwrap();
            p.try_push(b"a").unwrap();
            drop(p);
            let mut p = RingProducer::attach(r.clone(), 0).unwrap();
            p.try_push(b"b").unwrap();
            let mut c = RingConsumer::attach(r.clone(), 0).unwrap();
            let mut buf = [0u8; 8];
            assert_eq!(c.try_pop(&mut buf), Ok(1));
            drop(c);
            let mut c = RingConsumer::attach(r, 0).unwrap();
            assert_eq!(c.try_pop(&mut buf), Ok(1));
            assert_eq!(buf[0], b'b');
        }

        #[test]
        fn corrupt_length_is_dropped_and_reported() {
            let l = RingLayout::new(2, 8).unwrap();
            let r = Arc::new(Region::create("partix-shm-ring-corrupt", l.size_bytes()).unwrap());
            l.init(&r, 0).unwrap();
            let mut p = RingProducer::attach(r.clone(), 0).unwrap();
            let mut c = RingConsumer::attach(r.clone(), 0).unwrap();
            p.try_push(b"ok").unwrap();
            p.try_push(b"ok2").unwrap();
            // A broken producer scribbles an impossible length into slot 0.
            let ring = Ring::open(r.clone(), 0, None).unwrap();
            // (A length above the maximum in the low LEN_BITS, a stamp above them.)
            ring.area
                .u64_at(SLOTS)
                .store((1 << 40) | 9, Ordering::Relaxed);
            let mut buf = [0u8; 8];
            assert_eq!(c.try_pop(&mut buf), Err(PopError::Corrupt));
            assert_eq!(c.try_pop(&mut buf), Ok(3));
            // Impossible counters.
            ring.area.u64_at(TAIL).store(1000, Ordering::Release);
            assert_eq!(c.try_pop(&mut buf), Err(PopError::Corrupt));
            assert_eq!(c.len(), 2);
        }

        /// An impossible tail (a broken producer's wild store, more than a ring ahead or behind
        /// the head) makes a pop answer Corrupt, but only until the producer stores a correct
        /// tail again: the consumer reloads the tail at its next pop. (It cached the impossible
        /// tail, which no longer equalled its head, so no pop ever reloaded it and the ring
        /// answered Corrupt for good; found by review.) The same for a batch.
        #[test]
        fn a_consumer_recovers_from_an_impossible_tail_at_the_next_push() {
            for batch in [false, true] {
                for wild in [1000u64, u64::MAX] {
                    let l = RingLayout::new(4, 8).unwrap();
                    let r =
                        Arc::new(Region::create("partix-shm-ring-wild", l.size_bytes()).unwrap());
                    l.init(&r, 0).unwrap();
                    let mut p = RingProducer::attach(r.clone(), 0).unwrap();
                    let mut c = RingConsumer::attach(r.clone(), 0).unwrap();
                    let ring = Ring::open(r.clone(), 0, None).unwrap();
                    let mut buf = [0u8; 8];
                    let mut lens = [0usize; 2];
                    let mut pop = |c: &mut RingConsumer, buf: &mut [u8; 8]| {
                        if batch {
                            c.try_pop_many(&mut buf[..], 4, &mut lens).map(|n| {
                                assert_eq!(n, 1);
                                lens[0]
                            })
                        } else {
                            c.try_pop(buf)
                        }
                    };
                    assert_eq!(pop(&mut c, &mut buf), Err(PopError::Empty));
                    // The producer's wild store (ahead of the ring, or behind the head).
                    ring.area.u64_at(TAIL).store(wild, Ordering::Release);
                    assert_eq!(pop(&mut c, &mut buf), Err(PopError::Corrupt));
                    assert_eq!(pop(&mut c, &mut buf), Err(PopError::Corrupt), "still wild");
                    // Its next push stores a correct tail again.
                    p.try_push(b"ok").unwrap();
                    assert_eq!(c.len(), 1);
                    assert_eq!(pop(&mut c, &mut buf), Ok(2), "batch {batch}, tail {wild}");
                    assert_eq!(&buf[..2], b"ok");
                    assert_eq!(pop(&mut c, &mut buf), Err(PopError::Empty));
                }
            }
        }

        /// A broken producer that stores a `head` (the consumer's word, in the control line it
        /// may write): the consumer's next empty pop puts its own head back, so the probes that
        /// count from the shared words agree that the ring is empty. (A waiting receiver's probe
        /// said "a message" to pops that found none, and it spun.) And CLEAR after a `tail`
        /// behind the head discards nothing (it moved the head a whole ring past the tail).
        #[test]
        fn a_rewritten_head_is_put_back_and_a_clear_behind_the_head_moves_nothing() {
            let l = RingLayout::new(4, 8).unwrap();
            let r = Arc::new(Region::create("partix-shm-ring-head", l.size_bytes()).unwrap());
            l.init(&r, 0).unwrap();
            let mut p = RingProducer::attach(r.clone(), 0).unwrap();
            let mut c = RingConsumer::attach(r.clone(), 0).unwrap();
            let ring = Ring::open(r.clone(), 0, None).unwrap();
            p.try_push(b"a").unwrap();
            let mut buf = [0u8; 8];
            assert_eq!(c.try_pop(&mut buf), Ok(1));
            ring.area.u64_at(HEAD).store(3, Ordering::Release);
            assert!(!c.is_empty(), "the rewritten head fools the count");
            assert_eq!(c.try_pop(&mut buf), Err(PopError::Empty));
            assert!(c.is_empty());
            assert_eq!(ring.area.u64_at(HEAD).load(Ordering::Acquire), 1);
            // A tail behind the head: CLEAR leaves the head where it is.
            ring.area.u64_at(TAIL).store(0, Ordering::Release);
            c.clear();
            assert_eq!(ring.area.u64_at(HEAD).load(Ordering::Acquire), 1);
            ring.area.u64_at(TAIL).store(1, Ordering::Release);
            p = RingProducer::attach(r.clone(), 0).unwrap();
            p.try_push(b"b").unwrap();
            assert_eq!(c.try_pop(&mut buf), Ok(1));
            assert_eq!(buf[0], b'b');
        }

        /// A length word above the configured maximum but within the slot (13 bytes round up to
        /// 16) is impossible: the message is dropped, not kept for a buffer it never fits.
        #[test]
        fn a_length_above_the_configured_maximum_is_dropped() {
            let l = RingLayout::new(4, 13).unwrap();
            let r = Arc::new(Region::create("partix-shm-ring-max", l.size_bytes()).unwrap());
            l.init(&r, 0).unwrap();
            let mut p = RingProducer::attach(r.clone(), 0).unwrap();
            let mut c = RingConsumer::attach(r.clone(), 0).unwrap();
            let ring = Ring::open(r.clone(), 0, None).unwrap();
            let stride = 8 * ring.stride;
            for len in 14..=16u64 {
                p.try_push(b"bad").unwrap();
                p.try_push(b"next").unwrap();
                let slot = SLOTS + stride * ((p.pushed() as usize - 2) % 4);
                ring.area.u64_at(slot).store(len, Ordering::Relaxed);
                // The C API's buffer is exactly the maximum.
                let mut buf = [0u8; 13];
                assert_eq!(c.try_pop(&mut buf), Err(PopError::Corrupt), "length {len}");
                assert_eq!(c.try_pop(&mut buf), Ok(4));
                assert_eq!(&buf[..4], b"next");
            }
            // The same in a batch: dropped when first, and a batch stops before it.
            p.try_push(b"bad").unwrap();
            p.try_push(b"next").unwrap();
            let slot = SLOTS + stride * ((p.pushed() as usize - 2) % 4);
            ring.area.u64_at(slot).store(14, Ordering::Relaxed);
            let mut out = [0u8; 2 * 13];
            let mut lens = [0usize; 2];
            assert_eq!(
                c.try_pop_many(&mut out, 13, &mut lens),
                Err(PopError::Corrupt)
            );
            assert_eq!(c.try_pop_many(&mut out, 13, &mut lens), Ok(1));
            assert_eq!(&out[..4], b"next");
            assert!(c.is_empty());
        }

        /// `init` discards previous content, the notifier's waiter counts included: it cleared
        /// the epoch and the old 4-byte count at `NOTIFIER + 4`, not the 8-byte counts at
        /// `NOTIFIER + 8`, so a ring initialised again over a used region kept a stale count
        /// (needless wake-ups for every push, and one `adopt` cannot discard, being of this
        /// same process). Found by review.
        #[test]
        fn init_over_a_used_ring_clears_its_waiter_counts() {
            let l = RingLayout::new(4, 8).unwrap();
            let r =
                Arc::new(Region::create("partix-shm-ring-reinit", 256 + l.size_bytes()).unwrap());
            l.init(&r, 256).unwrap();
            let c = RingConsumer::attach(r.clone(), 256).unwrap();
            let n = c.ring.notifier.clone();
            // A parker of this process registers; in its check after fence Y (still
            // registered) the ring is initialised again under it.
            let (mut checks, mut while_parked, mut after_init) = (0, 0, 0);
            assert!(n.park_until(None, || {
                checks += 1;
                if checks == 2 {
                    while_parked = n.registered();
                    l.init(&r, 256).unwrap();
                    after_init = n.registered();
                }
                checks == 2
            }));
            assert_eq!(while_parked, 1, "the parker was registered");
            assert_eq!(after_init, 0, "init left the parker's count");
            assert_eq!(n.registered(), 0);
            assert_eq!(n.wakes(), 0);
        }

        #[test]
        fn pop_wait_wakes_on_push() {
            let (mut p, mut c) = ring(4, 8);
            assert_eq!(
                c.pop_wait(
                    &mut [0u8; 8],
                    RecvMode::Blocking,
                    Some(Duration::from_millis(5))
                ),
                Err(PopWaitError::TimedOut)
            );
            let t = std::thread::spawn(move || {
                let mut buf = [0u8; 8];
                let mut got = Vec::new();
                for mode in [
                    RecvMode::Blocking,
                    RecvMode::SpinThenPark { spins: 50 },
                    RecvMode::Spin,
                ] {
                    let n = c
                        .pop_wait(&mut buf, mode, Some(Duration::from_secs(20)))
                        .unwrap();
                    got.push((buf[..n].to_vec(), std::time::Instant::now()));
                }
                got
            });
            let mut pushed = Vec::new();
            for i in 0..3u8 {
                std::thread::sleep(Duration::from_millis(10));
                pushed.push(std::time::Instant::now());
                p.try_push(&[i]).unwrap();
            }
            let got = t.join().unwrap();
            let msgs: Vec<Vec<u8>> = got.iter().map(|(m, _)| m.clone()).collect();
            assert_eq!(msgs, vec![vec![0], vec![1], vec![2]]);
            // Woken by the push, not by the end of a park's slice (MAX_PARK).
            for ((_, back), at) in got.iter().zip(&pushed) {
                assert!(
                    back.saturating_duration_since(*at) < crate::test_util::WAKE_BOUND,
                    "woken {:?} after the push",
                    back.saturating_duration_since(*at)
                );
            }
        }

        /// A time-out too long to add to the clock (`Duration::MAX`) means no deadline: the
        /// wait returns the queued message, in every mode. (`Instant + Duration` panicked,
        /// "overflow when adding duration to instant", before `ready()` was even checked;
        /// found by review.)
        #[test]
        fn a_time_out_past_the_clock_s_range_is_no_deadline() {
            let (mut p, mut c) = ring(4, 8);
            let mut buf = [0u8; 8];
            for mode in [
                RecvMode::Spin,
                RecvMode::SpinThenPark { spins: 10 },
                RecvMode::Blocking,
            ] {
                p.try_push(b"max").unwrap();
                assert_eq!(
                    c.pop_wait(&mut buf, mode, Some(Duration::MAX)),
                    Ok(3),
                    "{mode:?}"
                );
            }
        }

        #[test]
        #[allow(unsafe_code)]
        fn split_ring_consumer_works_on_a_read_only_data_mapping() {
            let l = RingLayout::new(4, 16).unwrap();
            let data = Arc::new(Region::create("partix-ring-data", l.size_bytes()).unwrap());
            let ctrl = Arc::new(Region::create("partix-ring-ctrl", CONTROL_LEN).unwrap());
            l.init_split(&data, 0, &ctrl, 0).unwrap();
            // SAFETY: dup returns a fresh descriptor that nothing else owns.
            let fd = unsafe { libc::dup(data.raw_fd()) };
            // SAFETY: fd is fresh and unowned.
            let ro = Arc::new(
                unsafe { Region::from_raw_fd(fd, data.len(), crate::Access::ReadOnly) }.unwrap(),
            );
            let mut p = RingProducer::attach_split(data.clone(), 0, ctrl.clone(), 0).unwrap();
            let mut c = RingConsumer::attach_split(ro.clone(), 0, ctrl.clone(), 0).unwrap();
            let mut buf = [0u8; 16];
            for round in 0..3u8 {
                for i in 0..4u8 {
                    p.try_push(&[round, i]).unwrap();
                }
                assert_eq!(p.try_push(b"x"), Err(PushError::Full));
                for i in 0..4u8 {
                    assert_eq!(c.try_pop(&mut buf), Ok(2));
                    assert_eq!(buf[..2], [round, i]);
                }
            }
            assert_eq!((p.pushed(), c.popped()), (12, 12));
            // A producer needs the data read-write; the plain attach refuses a split ring.
            assert_eq!(
                RingProducer::attach_split(ro.clone(), 0, ctrl.clone(), 0).unwrap_err(),
                AreaError::ReadOnly
            );
            assert!(matches!(
                RingConsumer::attach(data.clone(), 0),
                Err(AreaError::BadMagic { .. })
            ));
            assert_eq!(
                RingConsumer::attach_split(ro.clone(), 0, ro, 0).unwrap_err(),
                AreaError::ReadOnly
            );
        }

        #[test]
        fn bad_layouts_are_refused() {
            assert!(RingLayout::new(3, 8).is_err());
            assert!(RingLayout::new(4, 0).is_err());
            let r = Arc::new(Region::create("partix-shm-ring-bad", 4096).unwrap());
            assert!(matches!(
                RingConsumer::attach(r.clone(), 0),
                Err(AreaError::BadMagic { .. })
            ));
            assert!(matches!(
                RingLayout::new(1024, 64).unwrap().init(&r, 0),
                Err(AreaError::TooSmall { .. })
            ));
        }

        /// A split ring's header lies in the producer's data area: a consumer told the layout
        /// opens the ring without it after the producer overwrote it, and so does a producer
        /// (of a ring whose header the other side can write).
        #[test]
        #[allow(unsafe_code)]
        fn sides_told_the_layout_open_a_ring_whose_header_was_overwritten() {
            let l = RingLayout::new(4, 16).unwrap();
            let data = Arc::new(Region::create("partix-ring-data", l.size_bytes()).unwrap());
            let ctrl = Arc::new(Region::create("partix-ring-ctrl", CONTROL_LEN).unwrap());
            l.init_split(&data, 0, &ctrl, 0).unwrap();
            let mut p = RingProducer::attach_split(data.clone(), 0, ctrl.clone(), 0).unwrap();
            p.try_push(b"one").unwrap();
            let hdr = Area::new(data.clone(), 0, 64).unwrap();
            for off in [0, 8, 16] {
                hdr.u64_at(off)
                    .store(0x5a5a_5a5a_5a5a_5a5a, Ordering::Relaxed);
            }
            assert!(RingConsumer::attach_split(data.clone(), 0, ctrl.clone(), 0).is_err());
            let mut c =
                RingConsumer::attach_split_expecting(data.clone(), 0, ctrl.clone(), 0, l).unwrap();
            p.try_push(b"two").unwrap();
            let mut buf = [0u8; 16];
            let n = c.try_pop(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"one");
            let n = c.try_pop(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"two");
            // An unsplit ring: both sides told the layout.
            let r = Arc::new(Region::create("partix-ring-one", l.size_bytes()).unwrap());
            l.init(&r, 0).unwrap();
            Area::new(r.clone(), 0, 64)
                .unwrap()
                .u64_at(0)
                .store(7, Ordering::Relaxed);
            assert!(RingProducer::attach(r.clone(), 0).is_err());
            let mut p = RingProducer::attach_expecting(r.clone(), 0, l).unwrap();
            let mut c = RingConsumer::attach_expecting(r, 0, l).unwrap();
            p.try_push(b"three").unwrap();
            let n = c.try_pop(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"three");
        }
    }
}
