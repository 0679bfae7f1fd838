//! The two-sided design for **queuing** channels over shared memory: the sender pushes into a
//! pre-allocated TX ring, an event-driven network manager (a thread of the destination) moves
//! each message into the receiver's RX ring, and the receiver returns a **cumulative
//! acknowledgement** (messages consumed so far) that is the sender's credit.
//!
//! # Layouts (two regions; native-endian words)
//! ```text
//! TX region (source RW, destination RW)          RX region (destination only)
//!  0    doorbell notifier (manager parks)          0    data notifier (receiver parks)
//!  64   space notifier (sender parks)              64   (unused)
//!  128  ack u64: RX messages consumed (receiver),  128  SPSC ring (crate::ring), capacity C
//!       dropped u64: TX messages discarded
//!       undelivered (manager)
//!  192  SPSC ring (crate::ring), capacity C
//! ```
//! Both rings have the same capacity `C >= limit` (a power of two); `limit` is the channel's
//! `MaxNbMessages`.
//!
//! # Protocol
//! - **Sender**: may push message `p` only while `p - (ack + dropped) < limit` (both read with
//!   `Acquire`); otherwise the channel is full. After a push it rings the doorbell.
//! - **Manager**: on each doorbell it moves every TX message into the RX ring (crash-safely,
//!   below), then wakes the receiver. It never starves: the credit rule bounds the messages in flight (TX +
//!   RX) by `limit <= C`, so the RX ring always has room.
//! - **Receiver**: pops from the RX ring, then stores `ack = RX head` (`Release`) and wakes a
//!   sender parked for space. Every TX message is either moved to the RX ring, in order, or
//!   discarded undelivered by CLEAR or for an impossible length (counted in `dropped`, which the
//!   manager stores, `Release`, before it commits the discarded messages, then it wakes the
//!   sender), so `ack + dropped` counts the TX messages consumed since initialisation.
//!
//! The ring's own proofs ([`crate::ring`]) cover each hop; the ack is a second consumer counter
//! that only grows and only frees credit after the consumer's reads (`Release` → the sender's
//! `Acquire`). Each of the two words has one writer and the sender adds them: until a review of
//! 2026-11-27 the receiver stored `ack = RX head + dropped`, so the credit of a message the
//! manager dropped came back only with the receiver's next pop, never when that message was
//! the last in flight (`MaxNbMessages` 1: full for good). A manager storing the sum as well
//! would have raced with the receiver's store (each may miss the other's newest count).
//!
//! # Crash safety
//! The manager publishes a message in the RX ring before it advances the TX head (it peeks at
//! the TX head, delivers, then commits), and keeps `TX head == RX tail + dropped` at rest
//! (`dropped`: TX messages discarded undelivered, written by the manager). A manager killed
//! between its RX publish and its TX commit leaves `RX tail + dropped == TX head + 1`; the next
//! [`QueueManager::attach`] commits that move instead of delivering the message again. So a
//! destination killed at any point neither loses nor duplicates a message; a restarted
//! destination continues at the rings' counters. See [`crate::twosided::QueueMoveViews`] and
//! `docs/shm-channels.md` ("Crash-safe move").

use crate::area::{Area, AreaError};
use crate::notifier::{Notifier, RecvMode, Side, SysFutex, NOTIFIER_LEN};
use crate::region::Region;
use crate::ring::{PopError, PushError, RingConsumer, RingLayout, RingProducer, RingView};
use crate::twosided::{QueueMoveState, QueueMoveViews};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TX_DOORBELL: usize = 0;
const TX_SPACE: usize = NOTIFIER_LEN;
const TX_ACK: usize = 2 * NOTIFIER_LEN;
const TX_RING: usize = 3 * NOTIFIER_LEN;

/// Where the TX ring (and its header) starts in the TX region.
pub const TX_RING_OFFSET: usize = TX_RING;
const RX_DATA: usize = 0;
const RX_RING: usize = 2 * NOTIFIER_LEN;

/// Shape of a two-sided queuing channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueShape {
    ring: RingLayout,
    limit: u32,
}

impl QueueShape {
    /// Describe a channel of at most `limit` (1..=2^24) queued messages of up to
    /// `max_message_size` bytes.
    ///
    /// # Errors
    /// [`AreaError::BadParameter`].
    pub fn new(max_message_size: u32, limit: u32) -> Result<QueueShape, AreaError> {
        if limit == 0 {
            return Err(AreaError::BadParameter("queue limit must be at least 1"));
        }
        // Above 2^31 no power of two fits a `u32` (rounding up overflowed, a panic in a debug
        // build); the ring refuses any capacity above 2^24 anyway.
        let capacity = limit
            .checked_next_power_of_two()
            .ok_or(AreaError::BadParameter("queue limit must be 1..=16777216"))?;
        Ok(QueueShape {
            ring: RingLayout::new(capacity, max_message_size)?,
            limit,
        })
    }

    /// Return the bytes of the TX region.
    pub fn tx_size_bytes(&self) -> usize {
        TX_RING + self.ring.size_bytes()
    }

    /// Return the bytes of the RX region.
    pub fn rx_size_bytes(&self) -> usize {
        RX_RING + self.ring.size_bytes()
    }

    /// Initialise both regions (empty rings, ack 0, idle notifiers).
    ///
    /// # Errors
    /// [`AreaError`] when a region is too small or read-only.
    pub fn init(&self, tx: &Arc<Region>, rx: &Arc<Region>) -> Result<(), AreaError> {
        let a = Area::new(tx.clone(), 0, TX_RING)?;
        if !a.writable() {
            return Err(AreaError::ReadOnly);
        }
        for w in a.words(0, TX_RING / 8) {
            w.store(0, Ordering::Relaxed);
        }
        let b = Area::new(rx.clone(), 0, RX_RING)?;
        if !b.writable() {
            return Err(AreaError::ReadOnly);
        }
        for w in b.words(0, RX_RING / 8) {
            w.store(0, Ordering::Relaxed);
        }
        self.ring.init(tx, TX_RING)?;
        self.ring.init(rx, RX_RING)
    }

    /// Return the channel's limit (`MaxNbMessages`).
    pub fn limit(&self) -> u32 {
        self.limit
    }
}

fn ack_area(tx: &Arc<Region>) -> Result<Area, AreaError> {
    let a = Area::new(tx.clone(), TX_ACK, NOTIFIER_LEN)?;
    if !a.writable() {
        return Err(AreaError::ReadOnly);
    }
    Ok(a)
}

/// The source side: pushes into the TX ring within its credit.
#[derive(Debug)]
pub struct QueueSender {
    prod: RingProducer,
    ack: Area,
    doorbell: Notifier,
    limit: u64,
    /// The messages consumed or dropped as last read ([`consumed`]; it only grows): a send reads
    /// the shared words again only when this count leaves no credit, so the ack's line, which
    /// the receiver stores to on every message, is not pulled across on every send.
    acked: u64,
}

/// Return the TX messages consumed (the receiver's cumulative ack) or dropped undelivered (the
/// manager's count), read with `Acquire` from the ack line `ack`: the sender's credit. Each
/// word has a single writer and only grows, so the sum never exceeds the true count.
#[inline]
fn consumed(ack: &Area) -> u64 {
    // SYNC POINT: pairs with the receiver's Release store of the ack and the manager's Release
    // store of `dropped`.
    let acked = ack.u64_at(0).load(Ordering::Acquire);
    acked.wrapping_add(ack.u64_at(ACK_DROPPED).load(Ordering::Acquire))
}

impl QueueSender {
    /// Return the messages this TX ring took since it was initialised (the shared tail).
    pub fn pushed(&self) -> u64 {
        self.prod.pushed()
    }

    /// Return the most messages in flight (`MaxNbMessages`): send number `n` needs the
    /// `n - limit`-th consumption.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Attach to an initialised TX region; `limit` is the channel's `MaxNbMessages`.
    ///
    /// # Errors
    /// [`AreaError`] when the region is missing, incompatible or read-only.
    pub fn attach(tx: Arc<Region>, limit: u32) -> Result<QueueSender, AreaError> {
        Self::with_producer(RingProducer::attach(tx.clone(), TX_RING)?, tx, limit)
    }

    /// Attach to a TX region initialised with `shape`, without reading the ring's header: the
    /// destination maps the TX region read-write, and a sender that trusted the header could
    /// not attach again after the destination overwrote it.
    ///
    /// # Errors
    /// [`AreaError`] when the region is too small or read-only.
    pub fn attach_expecting(
        tx: Arc<Region>,
        shape: QueueShape,
        limit: u32,
    ) -> Result<QueueSender, AreaError> {
        Self::with_producer(
            RingProducer::attach_expecting(tx.clone(), TX_RING, shape.ring)?,
            tx,
            limit,
        )
    }

    fn with_producer(
        prod: RingProducer,
        tx: Arc<Region>,
        limit: u32,
    ) -> Result<QueueSender, AreaError> {
        Ok(QueueSender {
            prod,
            ack: ack_area(&tx)?,
            doorbell: Notifier::new(tx, TX_DOORBELL)?,
            limit: u64::from(limit),
            acked: 0,
        })
    }

    /// Return the messages sent but not yet consumed by the receiver.
    #[inline]
    pub fn in_flight(&self) -> u64 {
        self.prod.pushed().wrapping_sub(consumed(&self.ack))
    }

    /// Push `data` if the credit allows, and ring the manager.
    ///
    /// # Errors
    /// [`PushError::Full`] (no credit), [`PushError::TooLarge`], [`PushError::ZeroLength`].
    #[inline]
    pub fn try_send(&mut self, data: &[u8]) -> Result<(), PushError> {
        // Its own count, not the shared tail: the destination maps the TX region read-write.
        let pushed = self.prod.published();
        if pushed.wrapping_sub(self.acked) >= self.limit {
            self.acked = consumed(&self.ack);
            if pushed.wrapping_sub(self.acked) >= self.limit {
                self.prod.repair_tail();
                return Err(PushError::Full);
            }
        }
        // Stamped only once the destination asked (see `Notifier::want_stamps`).
        let stamped = self.doorbell.stamps_wanted();
        if let Err(e) = self.prod.try_push_quiet_if(data, stamped) {
            // A waiter's probe ([`QueueSenderProbe::has_credit`]) counts from the shared tail: a
            // broken destination that rewrote it made the probe say "credit" to a send that
            // found none, and a waiting sender spun (found by review).
            self.prod.repair_tail();
            return Err(e);
        }
        self.doorbell.notify();
        Ok(())
    }
}

/// A lock-free view of a sender's credit, for waiting without the sender handle.
#[derive(Debug, Clone)]
pub struct QueueSenderProbe {
    tx: Arc<Region>,
    ack: Area,
    space: Notifier,
    limit: u64,
    /// Never pushes: reads the shared tail only.
    prod: Arc<RingProducer>,
}

impl QueueSenderProbe {
    /// Attach to an initialised TX region.
    ///
    /// # Errors
    /// [`AreaError`] when the region is missing, incompatible or read-only.
    pub fn attach(tx: Arc<Region>, limit: u32) -> Result<QueueSenderProbe, AreaError> {
        Self::with_producer(RingProducer::attach(tx.clone(), TX_RING)?, tx, limit)
    }

    /// As [`QueueSender::attach_expecting`].
    ///
    /// # Errors
    /// [`AreaError`] when the region is too small or read-only.
    pub fn attach_expecting(
        tx: Arc<Region>,
        shape: QueueShape,
        limit: u32,
    ) -> Result<QueueSenderProbe, AreaError> {
        Self::with_producer(
            RingProducer::attach_expecting(tx.clone(), TX_RING, shape.ring)?,
            tx,
            limit,
        )
    }

    fn with_producer(
        prod: RingProducer,
        tx: Arc<Region>,
        limit: u32,
    ) -> Result<QueueSenderProbe, AreaError> {
        // The source's waiting senders park on the space notifier's first side: a predecessor
        // killed while parked there leaves nothing behind ([`Notifier::adopt`]).
        let space = Notifier::new(tx.clone(), TX_SPACE)?;
        space.adopt();
        Ok(QueueSenderProbe {
            prod: Arc::new(prod),
            ack: ack_area(&tx)?,
            space,
            tx,
            limit: u64::from(limit),
        })
    }

    /// Return the messages sent but not yet consumed.
    #[inline]
    pub fn in_flight(&self) -> u64 {
        self.prod.pushed().wrapping_sub(consumed(&self.ack))
    }

    /// Return whether a send would find credit, and room in the TX ring, now. (Within the
    /// credit the TX ring has room, except while a move is delivered and consumed but not yet
    /// committed: the manager wakes [`QueueSenderProbe::space`] after its commit, and a manager
    /// that replaces a killed one after committing its predecessor's last move.)
    #[inline]
    pub fn has_credit(&self) -> bool {
        self.in_flight() < self.limit && self.prod.len() < self.prod.capacity()
    }

    /// Return the notifier a sender waiting for credit parks on.
    pub fn space(&self) -> &Notifier {
        &self.space
    }

    /// Return the TX region.
    pub fn region(&self) -> &Arc<Region> {
        &self.tx
    }
}

/// Offsets inside a ring of [`crate::ring`] (its `head`, `tail` and slots), which the manager
/// addresses itself to peek at the TX head and commit separately. [`QueueManager::attach`]
/// opens both rings with [`RingConsumer`] / [`RingProducer`] first (header validation) and
/// checks these offsets against their counters; the unit test
/// `the_manager_offsets_match_the_ring_layout` checks them against `ring`'s own constants and
/// against counters and slots that differ (head != tail on both rings).
const RING_HEAD: usize = 128;
const RING_TAIL: usize = 192;
const RING_SLOTS: usize = 256;
/// Offset of `dropped` in the ack line.
const ACK_DROPPED: usize = 8;

/// Where [`QueueManager::abandon_after`] stops a move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MovePhase {
    /// The message was copied out of the TX ring (nothing shared changed).
    Peeked,
    /// The message was also published in the RX ring (the TX head not yet advanced).
    Delivered,
}

/// The network manager of one channel: moves TX messages into the RX ring, crash-safely (see
/// [`QueueMoveViews`]: the RX ring is published before the TX head moves, and a new manager
/// completes a move its killed predecessor left half-done).
#[derive(Debug)]
pub struct QueueManager {
    tx_region: Arc<Region>,
    tx_ring: Area,
    rx_ring: Area,
    ack: Area,
    capacity: usize,
    /// Words of slots of each ring (capacity x stride).
    tx_words: usize,
    rx_words: usize,
    /// The rings' configured maximum message sizes.
    tx_max: usize,
    rx_max: usize,
    /// The head of the manager's peek view of the TX ring (private; boxed so its address is
    /// stable if the manager moves).
    peek_head: Box<AtomicU64>,
    st: QueueMoveState,
    /// The last move found the RX ring full (only with a sender ignoring its credits).
    rx_full: bool,
    /// The last round found impossible TX counters (a broken sender).
    tx_corrupt: bool,
    /// Rounds that found impossible TX counters.
    corrupt_rounds: u64,
    doorbell: Notifier,
    data: Notifier,
    /// The sender's space notifier: woken after every round that committed a TX message.
    space: Notifier,
    scratch: Vec<u8>,
    moved: u64,
    recovered: u64,
    /// Calls of [`QueueManager::run_once`].
    rounds: u64,
}

/// Build the move views over the rings (a free function so that the caller can borrow the
/// manager's state mutably meanwhile).
#[allow(clippy::too_many_arguments)]
fn move_views<'a>(
    tx_ring: &'a Area,
    rx_ring: &'a Area,
    ack: &'a Area,
    peek_head: &'a AtomicU64,
    capacity: usize,
    (tx_words, tx_max): (usize, usize),
    (rx_words, rx_max): (usize, usize),
) -> QueueMoveViews<'a> {
    QueueMoveViews {
        peek: RingView::new(
            peek_head,
            tx_ring.u64_at(RING_TAIL),
            tx_ring.words(RING_SLOTS, tx_words),
            capacity,
        )
        .with_max_message_size(tx_max),
        peek_head,
        tx_head: tx_ring.u64_at(RING_HEAD),
        tx_tail: tx_ring.u64_at(RING_TAIL),
        rx: RingView::new(
            rx_ring.u64_at(RING_HEAD),
            rx_ring.u64_at(RING_TAIL),
            rx_ring.words(RING_SLOTS, rx_words),
            capacity,
        )
        .with_max_message_size(rx_max),
        rx_tail: rx_ring.u64_at(RING_TAIL),
        dropped: ack.u64_at(ACK_DROPPED),
    }
}

impl QueueManager {
    /// Attach to both initialised regions (both read-write). A manager that replaces a killed
    /// one first completes the move it may have left half-done ([`QueueManager::recovered`]).
    ///
    /// # Errors
    /// [`AreaError`] when a region is missing, incompatible or read-only, or the rings differ.
    pub fn attach(tx: Arc<Region>, rx: Arc<Region>) -> Result<QueueManager, AreaError> {
        Self::open(tx, rx, None)
    }

    /// As [`QueueManager::attach`], with both regions initialised with `shape`: the TX ring's
    /// header, which the source may overwrite (it maps the TX region read-write), is not read;
    /// the RX ring (the destination's alone) must say `shape`.
    ///
    /// # Errors
    /// [`AreaError`] when a region is too small or read-only, or the RX ring is missing or of
    /// another shape.
    pub fn attach_expecting(
        tx: Arc<Region>,
        rx: Arc<Region>,
        shape: QueueShape,
    ) -> Result<QueueManager, AreaError> {
        Self::open(tx, rx, Some(shape))
    }

    fn open(
        tx: Arc<Region>,
        rx: Arc<Region>,
        expect: Option<QueueShape>,
    ) -> Result<QueueManager, AreaError> {
        let rxp = RingProducer::attach(rx.clone(), RX_RING)?;
        let txc = match expect {
            Some(shape) => {
                if RingLayout::new(rxp.capacity() as u32, rxp.max_message_size())? != shape.ring {
                    return Err(AreaError::BadParameter(
                        "the RX ring was not initialised with the expected shape",
                    ));
                }
                RingConsumer::attach_expecting(tx.clone(), TX_RING, shape.ring)?
            }
            None => RingConsumer::attach(tx.clone(), TX_RING)?,
        };
        if txc.max_message_size() > rxp.max_message_size() || txc.capacity() != rxp.capacity() {
            return Err(AreaError::BadParameter(
                "TX and RX rings differ in capacity or the TX messages exceed the RX buffers",
            ));
        }
        let capacity = txc.capacity();
        let tx_layout = RingLayout::new(capacity as u32, txc.max_message_size())?;
        let rx_layout = RingLayout::new(capacity as u32, rxp.max_message_size())?;
        let tx_ring = Area::new(tx.clone(), TX_RING, tx_layout.size_bytes())?;
        let rx_ring = Area::new(rx.clone(), RX_RING, rx_layout.size_bytes())?;
        if !tx_ring.writable() || !rx_ring.writable() {
            return Err(AreaError::ReadOnly);
        }
        let stride = |max: u32| 1 + (max as usize).div_ceil(8);
        let tx_words = capacity * stride(txc.max_message_size());
        let rx_words = capacity * stride(rxp.max_message_size());
        if RING_SLOTS + 8 * tx_words > tx_layout.size_bytes()
            || RING_SLOTS + 8 * rx_words > rx_layout.size_bytes()
            || tx_ring.u64_at(RING_HEAD).load(Ordering::Acquire) != txc.popped()
            || rx_ring.u64_at(RING_TAIL).load(Ordering::Acquire) != rxp.pushed()
        {
            return Err(AreaError::BadParameter(
                "the ring layout does not match the queue manager's offsets",
            ));
        }
        let scratch = vec![0u8; txc.max_message_size() as usize];
        let ack = ack_area(&tx)?;
        let peek_head = Box::new(AtomicU64::new(0));
        let tx_max = txc.max_message_size() as usize;
        let rx_max = rxp.max_message_size() as usize;
        let (recovered, st) = {
            let v = move_views(
                &tx_ring,
                &rx_ring,
                &ack,
                &peek_head,
                capacity,
                (tx_words, tx_max),
                (rx_words, rx_max),
            );
            (v.recover(), v.state())
        };
        let m = QueueManager {
            tx_region: tx.clone(),
            tx_ring,
            rx_ring,
            ack,
            capacity,
            tx_words,
            rx_words,
            tx_max,
            rx_max,
            peek_head,
            st,
            rx_full: false,
            tx_corrupt: false,
            corrupt_rounds: 0,
            doorbell: Notifier::new(tx.clone(), TX_DOORBELL)?,
            data: Notifier::new(rx, RX_DATA)?,
            // Its own side: the source's waiting senders park on the first, in another
            // partition (see `crate::notifier`, "Parkers that die").
            space: Notifier::new(tx, TX_SPACE)?.on_side(Side::Second),
            scratch,
            moved: 0,
            recovered,
            rounds: 0,
        };
        // The manager parks on the doorbell and (RX full) on its side of the space notifier:
        // a predecessor killed while parked leaves nothing behind.
        m.doorbell.adopt();
        m.space.adopt();
        if recovered > 0 {
            // The receiver may have a message; a sender may wait for the TX slot.
            m.data.notify();
            m.space.notify();
        }
        Ok(m)
    }

    /// The move views over this manager's rings.
    fn views(&self) -> QueueMoveViews<'_> {
        move_views(
            &self.tx_ring,
            &self.rx_ring,
            &self.ack,
            &self.peek_head,
            self.capacity,
            (self.tx_words, self.tx_max),
            (self.rx_words, self.rx_max),
        )
    }

    /// The TX ring's doorbell, which the sender rings after every push.
    pub fn doorbell(&self) -> &Notifier {
        &self.doorbell
    }

    /// Whether the last [`QueueManager::run_once`] stopped at a full RX ring (messages left in
    /// TX that only a pop makes room for).
    pub fn rx_full(&self) -> bool {
        self.rx_full
    }

    /// Whether the last [`QueueManager::run_once`] stopped at impossible TX counters (the tail
    /// more than the ring's capacity ahead of the head, or behind it: a broken sender). Nothing
    /// moves until the sender stores another tail; [`run_manager`] parks until then.
    pub fn tx_corrupt(&self) -> bool {
        self.tx_corrupt
    }

    /// Return the TX position this manager has taken messages up to (its private peek head):
    /// there is something to move when the sender's tail differs from it.
    pub fn peek_position(&self) -> u64 {
        self.peek_head.load(Ordering::Relaxed)
    }

    /// Return the rounds ([`QueueManager::run_once`]) that found impossible TX counters.
    pub fn corrupt_rounds(&self) -> u64 {
        self.corrupt_rounds
    }

    /// Move every message the TX ring holds (bounded by the ring's capacity); return how many.
    /// Wakes the receiver when it moved one, and a sender waiting for TX room when it committed
    /// one ([`QueueMoveViews::move_all`] says why the latter is needed).
    pub fn run_once(&mut self) -> usize {
        self.run_once_with(|| {})
    }

    /// [`QueueManager::run_once`] calling `delivered()` between each move's RX publish and its TX
    /// commit (for tests).
    fn run_once_with(&mut self, delivered: impl FnMut()) -> usize {
        self.rounds += 1;
        let cap = self.capacity;
        let v = move_views(
            &self.tx_ring,
            &self.rx_ring,
            &self.ack,
            &self.peek_head,
            cap,
            (self.tx_words, self.tx_max),
            (self.rx_words, self.rx_max),
        );
        let round = v.move_all_with(
            &mut self.st,
            &mut self.scratch,
            cap,
            &self.space.view(),
            &SysFutex,
            delivered,
        );
        if round.dropped > 0 {
            // Messages of an impossible length, dropped: their credit is back (`dropped`).
            // (Numbered as the sender counts what was consumed: `consumed`.)
            self.space
                .note_rooms(round.dropped as u64, || consumed(&self.ack));
        }
        self.rx_full = round.rx_full;
        self.tx_corrupt = round.corrupt;
        if round.corrupt {
            self.corrupt_rounds += 1;
        }
        let n = round.moved;
        if n > 0 {
            // (No note for a waiting sender here: a move frees TX slots but returns no credit,
            // `ack + dropped`; the receiver's ack does, `publish_ack`.)
            self.moved += n as u64;
            self.data.notify();
        }
        n
    }

    /// Move one message but stop after `phase`, as a manager killed at that point would, and
    /// drop this handle (its process is gone in the scenario; a new manager attaches next).
    /// Return whether a message was there. For crash tests.
    pub fn abandon_after(mut self, phase: MovePhase) -> bool {
        let v = move_views(
            &self.tx_ring,
            &self.rx_ring,
            &self.ack,
            &self.peek_head,
            self.capacity,
            (self.tx_words, self.tx_max),
            (self.rx_words, self.rx_max),
        );
        let Ok(n) = v.peek(&mut self.st, &mut self.scratch) else {
            return false;
        };
        if phase == MovePhase::Delivered {
            let _ = v.deliver(&mut self.st, &self.scratch[..n]);
        }
        true
    }

    /// Return the messages moved so far by this handle.
    pub fn moved(&self) -> u64 {
        self.moved
    }

    /// Return the rounds ([`QueueManager::run_once`]) made so far by this handle.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Return the messages a killed predecessor had delivered but not committed, which this
    /// manager committed at attach (0 or 1; more after a CLEAR cut short).
    pub fn recovered(&self) -> u64 {
        self.recovered
    }

    /// Discard every message still in the TX ring (CLEAR on the destination; they count as
    /// consumed through `dropped`, at once); return how many. Call [`QueueReceiver::clear`]
    /// next.
    pub fn clear(&mut self) -> u64 {
        let v = move_views(
            &self.tx_ring,
            &self.rx_ring,
            &self.ack,
            &self.peek_head,
            self.capacity,
            (self.tx_words, self.tx_max),
            (self.rx_words, self.rx_max),
        );
        let n = v.clear(&mut self.st);
        if n > 0 {
            // The TX slots are free, and their credit is back (`dropped`).
            self.space.notify_noting(n, || consumed(&self.ack));
        }
        n
    }

    /// Return whether the TX ring holds a message.
    pub fn has_work(&self) -> bool {
        self.undelivered() > 0
    }

    /// Return the messages sent but not yet moved to the RX ring.
    pub fn undelivered(&self) -> usize {
        self.views().undelivered(&self.st) as usize
    }
}

/// Run `manager` until `stop`: move, then park on the doorbell (no polling while idle; with a
/// message held back for lack of RX room (a sender ignoring its credits) it parks until the
/// receiver pops one; after impossible TX counters it parks until the sender stores another
/// tail).
pub fn run_manager(manager: &Mutex<QueueManager>, stop: &AtomicBool) {
    run_manager_with(manager, stop, || false)
}

/// [`run_manager`] with an idle hook: when there is nothing to move, `idle()` is called first; if
/// it returns true (it waited by other means, e.g. while the receiver polls and moves messages
/// itself under the lock), the manager runs again instead of parking on the doorbell. A parked
/// manager makes every send cost a `futex_wake`; one that is not parked costs the sender a fence
/// and a load.
pub fn run_manager_with(
    manager: &Mutex<QueueManager>,
    stop: &AtomicBool,
    idle: impl FnMut() -> bool,
) {
    run_manager_until(manager, stop, Some(Duration::from_secs(1)), idle);
}

/// [`run_manager_with`] whose parks end at least every `stop_poll` to look at `stop`, or never
/// time out (`None`: a manager that runs as long as its process wakes only on the doorbell or
/// the space notifier).
pub fn run_manager_until(
    manager: &Mutex<QueueManager>,
    stop: &AtomicBool,
    stop_poll: Option<Duration>,
    mut idle: impl FnMut() -> bool,
) {
    let park_deadline = || stop_poll.and_then(|d| Instant::now().checked_add(d));
    let (doorbell, space, ack, probe) = {
        let m = manager.lock().unwrap_or_else(|e| e.into_inner());
        // A second consumer handle that never pops: it only reads the counters. Laid out as the
        // manager's own (not from the TX ring's header, which the source can overwrite: a
        // probe that could not attach left the park below without a condition, and the
        // manager spun).
        let probe = RingLayout::new(m.capacity as u32, m.tx_max as u32)
            .and_then(|l| RingConsumer::attach_expecting(m.tx_region.clone(), TX_RING, l))
            .ok();
        let ack = ack_area(&m.tx_region).ok();
        (m.doorbell.clone(), m.space.clone(), ack, probe)
    };
    let acked = || ack.as_ref().map(|a| a.u64_at(0).load(Ordering::Acquire));
    while !stop.load(Ordering::Acquire) {
        // The TX tail before the round: if the round finds the counters impossible, nothing moves
        // until the sender stores another tail (one it stored since is seen at once).
        let tail = probe.as_ref().map(RingConsumer::pushed);
        // The ack before the round: if the round finds the RX ring full, room comes with the
        // receiver's next pop, whose ack store (after the round or not) differs from this one.
        let acked_before = acked();
        let (pending, corrupt, at) = {
            let mut m = manager.lock().unwrap_or_else(|e| e.into_inner());
            m.run_once();
            (m.rx_full, m.tx_corrupt, m.peek_position())
        };
        if pending {
            // A sender ignoring its credits filled the RX ring: wait for the receiver's pop (it
            // stores the ack and wakes the space notifier), not a retry every millisecond,
            // which woke the destination 1000 times a second for as long as the sender kept it
            // so. The deadline only bounds a missed stop.
            space.park_until(park_deadline(), || {
                acked() != acked_before || stop.load(Ordering::Acquire)
            });
            continue;
        }
        if idle() {
            continue;
        }
        doorbell.park_until(park_deadline(), || {
            // Until the sender's tail moves past what this manager took, not "the ring is not
            // empty": after impossible counters the ring never looks empty, and the shared TX
            // head, which the emptiness test reads, lies in a region the sender can write (one
            // that stored head != tail kept the manager spinning at its real-time priority;
            // found by review). Only the manager's own position counts.
            probe.as_ref().is_none_or(|p| {
                if corrupt {
                    Some(p.pushed()) != tail
                } else {
                    p.pushed() != at
                }
            }) || stop.load(Ordering::Acquire)
        });
    }
}

/// The destination side: pops from the RX ring and returns the cumulative ack.
#[derive(Debug)]
pub struct QueueReceiver {
    rx_region: Arc<Region>,
    rx: RingConsumer,
    ack: Area,
    space: Notifier,
    data: Notifier,
}

impl QueueReceiver {
    /// Attach to both initialised regions (both read-write).
    ///
    /// # Errors
    /// [`AreaError`] when a region is missing, incompatible or read-only.
    /// A receiver replacing a killed one republishes the ack (its predecessor may have died
    /// between a pop and the ack store).
    pub fn attach(tx: Arc<Region>, rx: Arc<Region>) -> Result<QueueReceiver, AreaError> {
        let r = QueueReceiver {
            rx_region: rx.clone(),
            rx: RingConsumer::attach(rx.clone(), RX_RING)?,
            ack: ack_area(&tx)?,
            space: Notifier::new(tx, TX_SPACE)?,
            data: Notifier::new(rx, RX_DATA)?,
        };
        // The receiver parks on the data notifier (a predecessor killed while parked there
        // leaves nothing behind).
        r.data.adopt();
        r.publish_ack();
        Ok(r)
    }

    /// Store the cumulative ack (the RX head: messages consumed) and wake a sender waiting for
    /// credit. The receiver is the ack's only writer; the messages the manager drops count
    /// through its own word, `dropped`, which the sender adds ([`consumed`]).
    fn publish_ack(&self) {
        let ack = self.ack.u64_at(0);
        let popped = self.rx.popped();
        // (The receiver is the ack's only writer: its own last store.)
        let grew = popped.wrapping_sub(ack.load(Ordering::Relaxed));
        // SYNC POINT: the cumulative ack; pairs with the sender's Acquire load in `consumed`.
        ack.store(popped, Ordering::Release);
        // Credit came back: a sender waiting for it may have asked when (`Notifier::note`).
        // (A count that went back, a predecessor's store, is no credit.)
        let rooms = if grew <= self.rx.capacity() as u64 {
            grew
        } else {
            0
        };
        self.space.notify_noting(rooms, || consumed(&self.ack));
    }

    /// Pop the oldest message into `buf`; return its length.
    ///
    /// # Errors
    /// As [`RingConsumer::try_pop`].
    #[inline]
    pub fn try_recv(&mut self, buf: &mut [u8]) -> Result<usize, PopError> {
        match self.rx.try_pop(buf) {
            Ok(n) => {
                self.publish_ack();
                Ok(n)
            }
            Err(e) => {
                // An impossible length was dropped (the head moved): its credit returns too.
                if e == PopError::Corrupt {
                    self.publish_ack();
                }
                Err(e)
            }
        }
    }

    /// Whether a delivered message is there that was sent at or before `ns` (`CLOCK_MONOTONIC`
    /// nanoseconds, to 1024 ns; [`RingConsumer::sent_by`]): the RX ring keeps the stamp the
    /// sender's push gave it, however late the manager moved it.
    pub fn sent_by(&mut self, ns: u64) -> bool {
        self.rx.sent_by(ns)
    }

    /// Return the number of delivered, unconsumed messages.
    pub fn len(&self) -> usize {
        self.rx.len()
    }

    /// Return whether no delivered message waits.
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// Discard the delivered messages and return their credit (the undelivered ones that
    /// [`QueueManager::clear`], called first, discarded count through `dropped`).
    pub fn clear(&mut self) {
        self.rx.clear();
        self.publish_ack();
    }

    /// Return the notifier the receiver parks on.
    pub fn data(&self) -> &Notifier {
        &self.data
    }

    /// Return a second consumer handle usable only to count queued messages (never pop with it).
    ///
    /// # Errors
    /// [`AreaError`] (cannot happen for an attached receiver).
    pub fn probe(&self) -> Result<RingConsumer, AreaError> {
        RingConsumer::attach(self.rx_region.clone(), RX_RING)
    }
}

/// Wait helper for tests: wait per `mode` for a delivered message.
///
/// A `timeout` too long to add to the clock is no deadline ([`crate::notifier::deadline_after`]).
pub fn wait_delivered(r: &QueueReceiver, mode: RecvMode, timeout: Duration) -> bool {
    let deadline = crate::notifier::deadline_after(Some(timeout));
    let spins = match mode {
        RecvMode::Spin => u64::MAX,
        RecvMode::SpinThenPark { spins } => u64::from(spins),
        RecvMode::Blocking => 0,
    };
    let mut i = 0u64;
    while i < spins {
        if !r.is_empty() {
            return true;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        i += 1;
    }
    r.data.park_until(deadline, || !r.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::spawn_and_count_ticks;

    fn chan(max: u32, limit: u32) -> (QueueSender, QueueReceiver, Arc<Mutex<QueueManager>>) {
        let shape = QueueShape::new(max, limit).unwrap();
        let tx = Arc::new(Region::create("partix-twoqueue-tx", shape.tx_size_bytes()).unwrap());
        let rx = Arc::new(Region::create("partix-twoqueue-rx", shape.rx_size_bytes()).unwrap());
        shape.init(&tx, &rx).unwrap();
        (
            QueueSender::attach(tx.clone(), limit).unwrap(),
            QueueReceiver::attach(tx.clone(), rx.clone()).unwrap(),
            Arc::new(Mutex::new(QueueManager::attach(tx, rx).unwrap())),
        )
    }

    /// A limit above 2^31 has no power of two in a `u32`: the shape is refused (rounding it up
    /// overflowed, a panic in a debug build).
    #[test]
    fn queue_limits_past_the_largest_ring_are_refused_not_overflowed() {
        assert!(QueueShape::new(16, 0).is_err());
        assert!(QueueShape::new(16, 1 << 24).is_ok());
        for limit in [(1 << 24) + 1, 1 << 31, (1 << 31) + 1, u32::MAX] {
            assert!(
                matches!(QueueShape::new(16, limit), Err(AreaError::BadParameter(_))),
                "limit {limit}"
            );
        }
    }

    #[test]
    fn credits_bound_in_flight_messages_and_acks_return_them() {
        let (mut s, mut r, m) = chan(16, 3);
        for i in 0..3u8 {
            s.try_send(&[i]).unwrap();
        }
        assert_eq!(s.try_send(&[9]), Err(PushError::Full));
        let mut buf = [0u8; 16];
        assert_eq!(r.try_recv(&mut buf), Err(PopError::Empty), "not moved yet");
        assert_eq!(m.lock().unwrap().run_once(), 3);
        assert_eq!(
            s.try_send(&[9]),
            Err(PushError::Full),
            "moved is not consumed"
        );
        assert_eq!(r.try_recv(&mut buf), Ok(1));
        assert_eq!(buf[0], 0);
        s.try_send(&[3]).unwrap();
        assert_eq!(s.in_flight(), 3);
        m.lock().unwrap().run_once();
        for want in 1..4u8 {
            assert_eq!(r.try_recv(&mut buf), Ok(1));
            assert_eq!(buf[0], want);
        }
        assert_eq!(s.in_flight(), 0);
        // The sender's ack as last read is stale (it read it with one message consumed): the
        // whole window is its again once it reads the ack anew, and not one message more.
        for i in 4..7u8 {
            s.try_send(&[i]).unwrap();
        }
        assert_eq!(s.try_send(&[9]), Err(PushError::Full));
        assert_eq!(s.in_flight(), 3);
    }

    /// A sender that ignores its credits fills the RX ring and keeps messages waiting in TX.
    /// The manager used to retry every millisecond for as long as that lasted (a destination
    /// woken 1000 times a second by another partition); it now sleeps until the receiver pops,
    /// then moves the next message at once.
    #[test]
    fn a_manager_behind_a_sender_ignoring_its_credits_sleeps_until_the_receiver_pops() {
        let shape = QueueShape::new(16, 4).unwrap();
        let tx = Arc::new(Region::create("partix-twoqueue-tx", shape.tx_size_bytes()).unwrap());
        let rx = Arc::new(Region::create("partix-twoqueue-rx", shape.rx_size_bytes()).unwrap());
        shape.init(&tx, &rx).unwrap();
        let mut rogue = QueueSender::attach(tx.clone(), u32::MAX).unwrap();
        let mut r = QueueReceiver::attach(tx.clone(), rx.clone()).unwrap();
        let m = Arc::new(Mutex::new(QueueManager::attach(tx.clone(), rx).unwrap()));
        let wake = QueueSenderProbe::attach(tx, 4).unwrap();
        // RX full, and as many more waiting in TX.
        let mut sent = 0u8;
        while rogue.try_send(&[sent]).is_ok() {
            sent += 1;
        }
        assert_eq!(m.lock().unwrap().run_once(), usize::from(sent));
        let in_rx = sent;
        while rogue.try_send(&[sent]).is_ok() {
            sent += 1;
        }
        assert!(sent > in_rx, "the rogue sender refilled TX");
        let stop = Arc::new(AtomicBool::new(false));
        let (m2, stop2) = (m.clone(), stop.clone());
        let t = std::thread::spawn(move || run_manager(&m2, &stop2));
        std::thread::sleep(Duration::from_millis(100));
        let (rounds0, moved0) = {
            let g = m.lock().unwrap();
            (g.rounds(), g.moved())
        };
        std::thread::sleep(Duration::from_millis(300));
        let rounds1 = m.lock().unwrap().rounds();
        assert!(
            rounds1 - rounds0 < 10,
            "{} rounds in 300 ms with the RX ring full",
            rounds1 - rounds0
        );
        // A pop makes room: the next message moves without waiting for the 1 s deadline.
        let mut buf = [0u8; 16];
        assert_eq!(r.try_recv(&mut buf), Ok(1));
        assert_eq!(buf[0], 0);
        let t0 = Instant::now();
        while m.lock().unwrap().moved() == moved0 && t0.elapsed() < Duration::from_millis(900) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            m.lock().unwrap().moved(),
            moved0 + 1,
            "the pop did not wake the manager"
        );
        // Everything arrives, in order.
        for want in 1..sent {
            let t0 = Instant::now();
            loop {
                match r.try_recv(&mut buf) {
                    Ok(1) => break,
                    _ if t0.elapsed() < Duration::from_secs(5) => {
                        std::thread::sleep(Duration::from_millis(1))
                    }
                    other => panic!("message {want}: {other:?}"),
                }
            }
            assert_eq!(buf[0], want);
        }
        stop.store(true, Ordering::Release);
        wake.space().notify();
        m.lock().unwrap().doorbell().notify();
        t.join().unwrap();
    }

    #[test]
    fn clear_drops_moved_and_unmoved_messages_and_frees_credit() {
        let (mut s, mut r, m) = chan(8, 4);
        s.try_send(b"a").unwrap();
        s.try_send(b"b").unwrap();
        m.lock().unwrap().run_once();
        s.try_send(b"c").unwrap();
        let undelivered = m.lock().unwrap().clear();
        assert_eq!(undelivered, 1);
        r.clear();
        assert_eq!(s.in_flight(), 0);
        let mut buf = [0u8; 8];
        assert_eq!(r.try_recv(&mut buf), Err(PopError::Empty));
        s.try_send(b"d").unwrap();
        m.lock().unwrap().run_once();
        assert_eq!(r.try_recv(&mut buf), Ok(1));
        assert_eq!(&buf[..1], b"d");
    }

    #[test]
    fn a_manager_killed_mid_move_neither_loses_nor_duplicates() {
        for phase in [MovePhase::Peeked, MovePhase::Delivered] {
            let (mut s, mut r, m) = chan(16, 4);
            let (tx, rx) = {
                let g = m.lock().unwrap();
                (g.tx_region.clone(), g.rx_ring.region().clone())
            };
            s.try_send(b"m0").unwrap();
            s.try_send(b"m1").unwrap();
            s.try_send(b"m2").unwrap();
            assert_eq!(m.lock().unwrap().run_once(), 3);
            let mut buf = [0u8; 16];
            assert_eq!(r.try_recv(&mut buf), Ok(2));
            s.try_send(b"m3").unwrap();
            s.try_send(b"m4").unwrap();
            // The manager dies in the middle of moving m3.
            let old = Arc::try_unwrap(m).unwrap().into_inner().unwrap();
            assert!(old.abandon_after(phase));
            let mut m2 = QueueManager::attach(tx.clone(), rx.clone()).unwrap();
            assert_eq!(
                m2.recovered(),
                u64::from(phase == MovePhase::Delivered),
                "{phase:?}"
            );
            m2.run_once();
            let mut got = Vec::new();
            while let Ok(n) = r.try_recv(&mut buf) {
                got.push(String::from_utf8(buf[..n].to_vec()).unwrap());
            }
            assert_eq!(got, ["m1", "m2", "m3", "m4"], "{phase:?}");
            assert_eq!(s.in_flight(), 0, "{phase:?}: every credit returned");
            // A restarted receiver republishes the ack; the channel keeps working.
            let mut r2 = QueueReceiver::attach(tx, rx).unwrap();
            s.try_send(b"m5").unwrap();
            m2.run_once();
            assert_eq!(r2.try_recv(&mut buf), Ok(2));
            assert_eq!(&buf[..2], b"m5");
        }
    }

    /// A TX length word above the configured maximum but within the slot (13 bytes round up
    /// to 16): the manager's scratch is the maximum, so the message could never move; it is
    /// dropped and counted, and the queue goes on.
    #[test]
    fn a_tx_length_above_the_configured_maximum_is_dropped() {
        let (mut s, mut r, m) = chan(13, 4);
        s.try_send(b"bad").unwrap();
        s.try_send(b"next").unwrap();
        let tx_ring = m.lock().unwrap().tx_ring.clone();
        tx_ring.u64_at(RING_SLOTS).store(14, Ordering::Relaxed);
        assert_eq!(m.lock().unwrap().run_once(), 1);
        let mut buf = [0u8; 13];
        assert_eq!(r.try_recv(&mut buf), Ok(4));
        assert_eq!(&buf[..4], b"next");
        assert_eq!(s.in_flight(), 0, "the dropped message's credit is back");
        assert_eq!(
            ack_area(&tx_ring.region().clone())
                .unwrap()
                .u64_at(ACK_DROPPED)
                .load(Ordering::Relaxed),
            1
        );
    }

    /// The manager drops the only message in flight (an impossible length) with
    /// `MaxNbMessages` 1: its credit comes back at once, to the sender and to a restarted one,
    /// with nothing for the receiver to pop. (The ack counted drops only when the receiver
    /// published it after a pop, so the credit of a drop that was the last in flight never
    /// came back: Full for good, also for a restarted source; found by review.) A sender parked
    /// for credit is woken.
    #[test]
    fn a_dropped_last_message_in_flight_returns_its_credit() {
        let (mut s, mut r, m) = chan(13, 1);
        s.try_send(b"bad").unwrap();
        assert_eq!(s.try_send(b"two"), Err(PushError::Full));
        let tx_ring = m.lock().unwrap().tx_ring.clone();
        tx_ring.u64_at(RING_SLOTS).store(14, Ordering::Relaxed);
        let probe = QueueSenderProbe::attach(tx_ring.region().clone(), 1).unwrap();
        assert!(!probe.has_credit());
        let waiter = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(20);
            let ok = probe
                .space()
                .park_until(Some(deadline), || probe.has_credit());
            (ok, Instant::now())
        });
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(m.lock().unwrap().run_once(), 0);
        let dropped = Instant::now();
        let mut buf = [0u8; 13];
        assert_eq!(r.try_recv(&mut buf), Err(PopError::Empty));
        let restarted = QueueSender::attach(tx_ring.region().clone(), 1).unwrap();
        assert_eq!(
            restarted.in_flight(),
            0,
            "the dropped message's credit is back"
        );
        // Woken by the drop's returned credit, not by the end of its park's slice (MAX_PARK).
        let (ok, back) = waiter.join().unwrap();
        let late = back.saturating_duration_since(dropped);
        assert!(
            ok && late < crate::test_util::WAKE_BOUND,
            "the waiting sender was not woken (back {late:?} after the drop)"
        );
        assert_eq!(s.try_send(b"ok"), Ok(()));
        assert_eq!(m.lock().unwrap().run_once(), 1);
        assert_eq!(r.try_recv(&mut buf), Ok(2));
        assert_eq!(&buf[..2], b"ok");
        assert_eq!(s.in_flight(), 0);
    }

    /// A receive that drops an impossible length from the RX ring (the destination's own
    /// region: only a broken destination writes one) moves the RX head: it returns that
    /// message's credit as a pop does (it returned nothing, and the credit was lost).
    #[test]
    fn a_receive_that_drops_an_impossible_rx_length_returns_its_credit() {
        let (mut s, mut r, m) = chan(13, 1);
        s.try_send(b"one").unwrap();
        assert_eq!(m.lock().unwrap().run_once(), 1);
        let rx_ring = m.lock().unwrap().rx_ring.clone();
        rx_ring.u64_at(RING_SLOTS).store(14, Ordering::Relaxed);
        let mut buf = [0u8; 13];
        assert_eq!(r.try_recv(&mut buf), Err(PopError::Corrupt));
        assert_eq!(s.in_flight(), 0);
        assert_eq!(s.try_send(b"two"), Ok(()));
    }

    #[test]
    fn a_clear_cut_short_is_completed_by_the_next_manager() {
        let (mut s, mut r, m) = chan(16, 4);
        s.try_send(b"a").unwrap();
        s.try_send(b"b").unwrap();
        let (tx, rx) = {
            let g = m.lock().unwrap();
            (g.tx_region.clone(), g.rx_ring.region().clone())
        };
        // A CLEAR that counted the two messages as dropped and died before committing them.
        let d = ack_area(&tx).unwrap();
        d.u64_at(ACK_DROPPED).store(2, Ordering::Relaxed);
        drop(m);
        let mut m2 = QueueManager::attach(tx, rx).unwrap();
        assert_eq!(m2.recovered(), 2);
        assert_eq!(m2.run_once(), 0, "nothing left to deliver");
        r.clear();
        assert_eq!(s.in_flight(), 0);
        s.try_send(b"c").unwrap();
        m2.run_once();
        let mut buf = [0u8; 16];
        assert_eq!(r.try_recv(&mut buf), Ok(1));
        assert_eq!(&buf[..1], b"c");
    }

    #[test]
    fn the_manager_offsets_match_the_ring_layout() {
        assert_eq!(
            (RING_HEAD, RING_TAIL, RING_SLOTS),
            (crate::ring::HEAD, crate::ring::TAIL, crate::ring::SLOTS)
        );
        let (mut s, mut r, m) = chan(24, 2);
        // Stamped (a receiver that waits with a time-out asks for it): the move below must keep
        // a stamp that is there.
        m.lock().unwrap().doorbell().want_stamps();
        let mut buf = [0u8; 24];
        // Non-zero counters on both rings, through several wraps.
        for i in 0..7u8 {
            s.try_send(&[i; 20]).unwrap();
            assert_eq!(m.lock().unwrap().run_once(), 1);
            assert_eq!(r.try_recv(&mut buf), Ok(20));
            assert_eq!(buf[..20], [i; 20]);
        }
        // Head != tail on both rings (swapped offsets would show): message 7 delivered and not
        // consumed, message 8 sent and not moved.
        s.try_send(&[7; 20]).unwrap();
        // Moved 2 ms later: the RX slot keeps the send's stamp, not the move's (below).
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_eq!(m.lock().unwrap().run_once(), 1);
        s.try_send(&[8; 19]).unwrap();
        let g = m.lock().unwrap();
        let txp = RingConsumer::attach(g.tx_region.clone(), TX_RING).unwrap();
        let rxp = RingConsumer::attach(g.rx_ring.region().clone(), RX_RING).unwrap();
        assert_eq!((txp.popped(), txp.pushed()), (8, 9));
        assert_eq!((rxp.popped(), rxp.pushed()), (7, 8));
        let word = |a: &Area, off: usize| a.u64_at(off).load(Ordering::Relaxed);
        assert_eq!(word(&g.tx_ring, RING_HEAD), 8);
        assert_eq!(word(&g.tx_ring, RING_TAIL), 9);
        assert_eq!(word(&g.rx_ring, RING_HEAD), 7);
        assert_eq!(word(&g.rx_ring, RING_TAIL), 8);
        // The length words of the queued messages: TX message 8 in slot 0, RX message 7 in
        // slot 1 (slots of 1 + 24 / 8 words).
        // (The bits above a length word's low LEN_BITS hold the message's stamp.)
        let slot = |k: usize| RING_SLOTS + 8 * 4 * k;
        let len = |w: u64| w & ((1 << crate::ring::LEN_BITS) - 1);
        assert_eq!(len(word(&g.tx_ring, slot(0))), 19);
        assert_eq!(len(word(&g.rx_ring, slot(1))), 20);
        // The move kept the sender's stamp (TX slot 1 still holds message 7's words).
        let txp_stamp = word(&g.tx_ring, slot(1)) >> crate::ring::LEN_BITS;
        assert_ne!(txp_stamp, crate::ring::NOT_STAMPED, "asked: stamped");
        assert_eq!(
            word(&g.rx_ring, slot(1)) >> crate::ring::LEN_BITS,
            txp_stamp
        );
    }

    /// The kernel's futex, recording each wait: how many so far and the epoch it expected.
    struct RecordingFutex {
        waits: std::sync::atomic::AtomicU32,
        expected: std::sync::atomic::AtomicU32,
    }

    impl crate::notifier::Futex for RecordingFutex {
        fn wait(
            &self,
            word: &std::sync::atomic::AtomicU32,
            expected: u32,
            deadline: Option<Instant>,
        ) {
            self.expected.store(expected, Ordering::SeqCst);
            self.waits.fetch_add(1, Ordering::SeqCst);
            SysFutex.wait(word, expected, deadline);
        }

        fn wake_all(&self, word: &std::sync::atomic::AtomicU32) {
            SysFutex.wake_all(word);
        }
    }

    /// The lost wake-up between a move's deliver and its commit: with `MaxNbMessages` 1 the
    /// sender waits for room; the receiver takes the delivered message and acks it before the
    /// manager commits, which wakes the sender to a full TX ring, so it parks again; the commit
    /// must wake it.
    #[test]
    fn a_sender_woken_before_the_commit_is_woken_again_by_it() {
        use std::sync::atomic::AtomicU32;
        let (mut s, mut r, m) = chan(8, 1);
        let tx = m.lock().unwrap().tx_region.clone();
        s.try_send(b"m0").unwrap();
        assert_eq!(s.try_send(b"m1"), Err(PushError::Full));
        let futex = Arc::new(RecordingFutex {
            waits: AtomicU32::new(0),
            expected: AtomicU32::new(0),
        });
        let space = Area::new(tx.clone(), TX_SPACE, NOTIFIER_LEN).unwrap();
        let epoch = || space.u32_at(0).load(Ordering::SeqCst);
        // Generous: only a lost wake-up lets the park run into it.
        let deadline = Instant::now() + Duration::from_secs(20);
        let sender = {
            let (futex, probe) = (
                futex.clone(),
                QueueSenderProbe::attach(tx.clone(), 1).unwrap(),
            );
            std::thread::spawn(move || {
                let ok = probe
                    .space()
                    .view()
                    .park_until(&*futex, Some(deadline), || probe.has_credit());
                (ok, Instant::now())
            })
        };
        // Wait until the sender sleeps on the current epoch (it found no credit).
        let asleep = |after: u32| loop {
            let (w, e) = (
                futex.waits.load(Ordering::SeqCst),
                futex.expected.load(Ordering::SeqCst),
            );
            if w > after && e == epoch() {
                return w;
            }
            std::thread::yield_now();
        };
        let waits = asleep(0);
        let probe = QueueSenderProbe::attach(tx, 1).unwrap();
        let mut buf = [0u8; 8];
        let moved = m.lock().unwrap().run_once_with(|| {
            // The manager published m0 in the RX ring and has not committed it.
            assert_eq!(r.try_recv(&mut buf), Ok(2));
            assert_eq!(probe.in_flight(), 0, "the credit is back");
            assert!(!probe.has_credit(), "the TX slot is not free yet");
            // The ack woke the sender; it found the TX ring full and sleeps again.
            asleep(waits);
        });
        let committed = Instant::now();
        assert_eq!(moved, 1);
        let (ok, back) = sender.join().unwrap();
        // Woken by the commit, not by the end of its park's slice (MAX_PARK).
        let late = back.saturating_duration_since(committed);
        assert!(
            ok && late < crate::test_util::WAKE_BOUND,
            "the commit did not wake the sender (back {late:?} after it)"
        );
        s.try_send(b"m1").unwrap();
    }

    #[test]
    fn an_idle_manager_thread_sleeps_instead_of_polling() {
        let (s, _r, m) = chan(8, 4);
        let stop = Arc::new(AtomicBool::new(false));
        let (t, used) = {
            let (m, stop) = (m.clone(), stop.clone());
            spawn_and_count_ticks(move || run_manager(&m, &stop))
        };
        // A polling thread would use ~50 ticks (100 Hz) in 500 ms; a parked one none.
        assert!(used <= 10, "the idle manager used {used} ticks in 500 ms");
        stop.store(true, Ordering::Release);
        s.doorbell.notify();
        t.join().unwrap();
    }

    /// A broken sender's TX tail more than the capacity ahead of the head: the manager cannot
    /// move anything and must sleep (not retry at full speed) until the tail changes.
    #[test]
    fn a_manager_facing_impossible_tx_counters_sleeps_until_the_tail_changes() {
        let (mut s, mut r, m) = chan(8, 4);
        s.try_send(b"m0").unwrap();
        let tx_ring = m.lock().unwrap().tx_ring.clone();
        // Head 0, capacity 4: a tail of 6 is impossible.
        tx_ring.u64_at(RING_TAIL).store(6, Ordering::Release);
        let stop = Arc::new(AtomicBool::new(false));
        let (t, used) = {
            let (m, stop) = (m.clone(), stop.clone());
            spawn_and_count_ticks(move || run_manager(&m, &stop))
        };
        // A spinning thread would use ~50 ticks (100 Hz) in 500 ms; a parked one none.
        assert!(used <= 10, "the manager used {used} ticks in 500 ms");
        {
            let g = m.lock().unwrap();
            assert!(g.tx_corrupt());
            assert!(g.corrupt_rounds() >= 1);
        }
        assert!(r.is_empty());
        // A valid tail again (and the doorbell): the manager wakes and moves the message.
        tx_ring.u64_at(RING_TAIL).store(1, Ordering::Release);
        s.doorbell.notify();
        assert!(wait_delivered(
            &r,
            RecvMode::Blocking,
            Duration::from_secs(20)
        ));
        let mut buf = [0u8; 8];
        assert_eq!(r.try_recv(&mut buf), Ok(2));
        assert_eq!(&buf[..2], b"m0");
        stop.store(true, Ordering::Release);
        s.doorbell.notify();
        t.join().unwrap();
    }

    /// `wait_delivered` with a time-out too long to add to the clock waits without a deadline
    /// (it panicked, "overflow when adding duration to instant"; found by review).
    #[test]
    fn wait_delivered_takes_a_time_out_past_the_clock_s_range_for_none() {
        let (mut s, r, m) = chan(8, 4);
        s.try_send(b"m0").unwrap();
        assert_eq!(m.lock().unwrap().run_once(), 1);
        for mode in [
            RecvMode::Spin,
            RecvMode::SpinThenPark { spins: 10 },
            RecvMode::Blocking,
        ] {
            assert!(wait_delivered(&r, mode, Duration::MAX), "{mode:?}");
        }
    }

    /// A broken sender that stores a TX head other than the tail (the head is the manager's
    /// word, in a region the sender maps read-write): the idle manager still sleeps, and moves
    /// the next message sent. (Its park waited for "not empty", which such a head made true at
    /// once: it spun.)
    #[test]
    fn an_idle_manager_sleeps_though_the_sender_rewrites_the_tx_head() {
        let (mut s, mut r, m) = chan(8, 4);
        let tx_ring = m.lock().unwrap().tx_ring.clone();
        tx_ring.u64_at(RING_HEAD).store(1, Ordering::Release);
        let stop = Arc::new(AtomicBool::new(false));
        let (t, used) = {
            let (m, stop) = (m.clone(), stop.clone());
            spawn_and_count_ticks(move || run_manager(&m, &stop))
        };
        // A spinning thread would use ~50 ticks (100 Hz) in 500 ms; a parked one none.
        assert!(used <= 10, "the manager used {used} ticks in 500 ms");
        assert!(m.lock().unwrap().rounds() < 10);
        s.try_send(b"m0").unwrap();
        assert!(wait_delivered(
            &r,
            RecvMode::Blocking,
            Duration::from_secs(20)
        ));
        let mut buf = [0u8; 8];
        assert_eq!(r.try_recv(&mut buf), Ok(2));
        stop.store(true, Ordering::Release);
        s.doorbell.notify();
        t.join().unwrap();
    }

    /// A broken destination that rewrites the TX tail (the sender's word, in a region the
    /// destination maps read-write): a full sender's send puts its own count back, so the
    /// waiters' probe agrees that there is no credit. (The probe said "credit" to a send that
    /// found none, and a waiting sender spun.)
    #[test]
    fn a_full_sender_puts_back_a_tx_tail_the_destination_rewrote() {
        let (mut s, _r, m) = chan(8, 2);
        let probe = QueueSenderProbe::attach(m.lock().unwrap().tx_region.clone(), 2).unwrap();
        s.try_send(b"a").unwrap();
        s.try_send(b"b").unwrap();
        assert!(!probe.has_credit());
        let tx_ring = m.lock().unwrap().tx_ring.clone();
        tx_ring.u64_at(RING_TAIL).store(0, Ordering::Release);
        assert!(probe.has_credit(), "the rewritten tail fools the probe");
        assert_eq!(s.try_send(b"c"), Err(PushError::Full));
        assert!(!probe.has_credit());
        assert_eq!(tx_ring.u64_at(RING_TAIL).load(Ordering::Acquire), 2);
    }

    #[test]
    fn manager_thread_parks_and_is_woken_by_the_doorbell() {
        let (mut s, mut r, m) = chan(8, 4);
        let stop = Arc::new(AtomicBool::new(false));
        let t = {
            let (m, stop) = (m.clone(), stop.clone());
            std::thread::spawn(move || run_manager(&m, &stop))
        };
        let mut buf = [0u8; 8];
        for i in 0..1000u32 {
            while s.try_send(&i.to_le_bytes()).is_err() {
                std::thread::yield_now();
            }
            // Within the wake bound: a manager the doorbell did not wake would move the
            // message only at the end of its park's slice (MAX_PARK).
            assert!(
                wait_delivered(&r, RecvMode::Blocking, crate::test_util::WAKE_BOUND),
                "message {i} was not delivered within {:?}",
                crate::test_util::WAKE_BOUND
            );
            assert_eq!(r.try_recv(&mut buf), Ok(4));
            assert_eq!(u32::from_le_bytes(buf[..4].try_into().unwrap()), i);
        }
        stop.store(true, Ordering::Release);
        s.try_send(b"x").unwrap();
        t.join().unwrap();
        assert!(m.lock().unwrap().moved() >= 1000);
    }

    /// The destination maps the TX region read-write and can overwrite the TX ring's header: a
    /// sender, a probe and a manager told the shape attach without it, and the queue goes on.
    #[test]
    fn sides_told_the_shape_attach_to_a_tx_ring_whose_header_was_overwritten() {
        let shape = QueueShape::new(16, 3).unwrap();
        let tx = Arc::new(Region::create("partix-twoqueue-tx", shape.tx_size_bytes()).unwrap());
        let rx = Arc::new(Region::create("partix-twoqueue-rx", shape.rx_size_bytes()).unwrap());
        shape.init(&tx, &rx).unwrap();
        let hdr = Area::new(tx.clone(), TX_RING, 64).unwrap();
        for off in [0, 8, 16] {
            hdr.u64_at(off)
                .store(0x5a5a_5a5a_5a5a_5a5a, Ordering::Relaxed);
        }
        assert!(QueueSender::attach(tx.clone(), 3).is_err());
        assert!(QueueManager::attach(tx.clone(), rx.clone()).is_err());
        let other = QueueShape::new(32, 3).unwrap();
        assert!(matches!(
            QueueManager::attach_expecting(tx.clone(), rx.clone(), other),
            Err(AreaError::BadParameter(_))
        ));
        let mut s = QueueSender::attach_expecting(tx.clone(), shape, 3).unwrap();
        let probe = QueueSenderProbe::attach_expecting(tx.clone(), shape, 3).unwrap();
        let mut m = QueueManager::attach_expecting(tx.clone(), rx.clone(), shape).unwrap();
        let mut r = QueueReceiver::attach(tx, rx).unwrap();
        for i in 0..3u8 {
            s.try_send(&[i]).unwrap();
        }
        assert_eq!(probe.in_flight(), 3);
        assert_eq!(s.try_send(&[9]), Err(PushError::Full));
        m.run_once();
        let mut buf = [0u8; 16];
        for i in 0..3u8 {
            assert_eq!(r.try_recv(&mut buf), Ok(1));
            assert_eq!(buf[0], i);
        }
        assert_eq!(probe.in_flight(), 0);
    }
}
