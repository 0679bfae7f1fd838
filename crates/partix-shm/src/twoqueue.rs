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
//!  128  ack u64: messages consumed (receiver),     128  SPSC ring (crate::ring), capacity C
//!       dropped u64: TX messages cleared undelivered
//!  192  SPSC ring (crate::ring), capacity C
//! ```
//! Both rings have the same capacity `C >= limit` (a power of two); `limit` is the channel's
//! `MaxNbMessages`.
//!
//! # Protocol
//! - **Sender**: may push message `p` only while `p - ack < limit` (`ack` read with `Acquire`);
//!   otherwise the channel is full. After a push it rings the doorbell.
//! - **Manager**: on each doorbell it pops every TX message and pushes it into the RX ring, then
//!   wakes the receiver. It never starves: the credit rule bounds the messages in flight (TX +
//!   RX) by `limit <= C`, so the RX ring always has room.
//! - **Receiver**: pops from the RX ring, then stores `ack = RX head + dropped` (`Release`) and
//!   wakes a sender parked for space. Every TX message is either moved to the RX ring, in order,
//!   or discarded undelivered by CLEAR (counted in `dropped`), so `ack` counts the TX messages
//!   consumed since initialisation.
//!
//! The ring's own proofs ([`crate::ring`]) cover each hop; the ack is a second consumer counter
//! that only grows and only frees credit after the consumer's reads (`Release` → the sender's
//! `Acquire`).
//!
//! A manager killed between a TX pop and the RX push (the destination partition dies in that
//! instant) loses that one message; a restarted destination continues at the rings' counters.

use crate::area::{Area, AreaError};
use crate::notifier::{Notifier, RecvMode, NOTIFIER_LEN};
use crate::region::Region;
use crate::ring::{PopError, PushError, RingConsumer, RingLayout, RingProducer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TX_DOORBELL: usize = 0;
const TX_SPACE: usize = NOTIFIER_LEN;
const TX_ACK: usize = 2 * NOTIFIER_LEN;
const TX_RING: usize = 3 * NOTIFIER_LEN;
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
        Ok(QueueShape {
            ring: RingLayout::new(limit.next_power_of_two(), max_message_size)?,
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
}

impl QueueSender {
    /// Attach to an initialised TX region; `limit` is the channel's `MaxNbMessages`.
    ///
    /// # Errors
    /// [`AreaError`] when the region is missing, incompatible or read-only.
    pub fn attach(tx: Arc<Region>, limit: u32) -> Result<QueueSender, AreaError> {
        Ok(QueueSender {
            prod: RingProducer::attach(tx.clone(), TX_RING)?,
            ack: ack_area(&tx)?,
            doorbell: Notifier::new(tx, TX_DOORBELL)?,
            limit: u64::from(limit),
        })
    }

    /// Return the messages sent but not yet consumed by the receiver.
    #[inline]
    pub fn in_flight(&self) -> u64 {
        // SYNC POINT: pairs with the receiver's Release store of the ack.
        let acked = self.ack.u64_at(0).load(Ordering::Acquire);
        self.prod.pushed().wrapping_sub(acked)
    }

    /// Push `data` if the credit allows, and ring the manager.
    ///
    /// # Errors
    /// [`PushError::Full`] (no credit), [`PushError::TooLarge`], [`PushError::ZeroLength`].
    #[inline]
    pub fn try_send(&mut self, data: &[u8]) -> Result<(), PushError> {
        if self.in_flight() >= self.limit {
            return Err(PushError::Full);
        }
        self.prod.try_push_quiet(data)?;
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
        Ok(QueueSenderProbe {
            prod: Arc::new(RingProducer::attach(tx.clone(), TX_RING)?),
            ack: ack_area(&tx)?,
            space: Notifier::new(tx.clone(), TX_SPACE)?,
            tx,
            limit: u64::from(limit),
        })
    }

    /// Return the messages sent but not yet consumed.
    #[inline]
    pub fn in_flight(&self) -> u64 {
        let acked = self.ack.u64_at(0).load(Ordering::Acquire);
        self.prod.pushed().wrapping_sub(acked)
    }

    /// Return whether a send would find credit now.
    #[inline]
    pub fn has_credit(&self) -> bool {
        self.in_flight() < self.limit
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

/// The network manager of one channel: moves TX messages into the RX ring.
#[derive(Debug)]
pub struct QueueManager {
    tx_region: Arc<Region>,
    tx: RingConsumer,
    rx: RingProducer,
    doorbell: Notifier,
    data: Notifier,
    scratch: Vec<u8>,
    /// A popped message the RX ring had no room for (only with a sender ignoring the credits).
    pending: Option<usize>,
    moved: u64,
}

impl QueueManager {
    /// Attach to both initialised regions (both read-write).
    ///
    /// # Errors
    /// [`AreaError`] when a region is missing, incompatible or read-only, or the rings differ.
    pub fn attach(tx: Arc<Region>, rx: Arc<Region>) -> Result<QueueManager, AreaError> {
        let txc = RingConsumer::attach(tx.clone(), TX_RING)?;
        let rxp = RingProducer::attach(rx.clone(), RX_RING)?;
        if txc.max_message_size() > rxp.max_message_size() {
            return Err(AreaError::BadParameter(
                "TX max_message_size exceeds the RX buffers",
            ));
        }
        let scratch = vec![0u8; txc.max_message_size() as usize];
        Ok(QueueManager {
            tx_region: tx.clone(),
            tx: txc,
            rx: rxp,
            doorbell: Notifier::new(tx, TX_DOORBELL)?,
            data: Notifier::new(rx, RX_DATA)?,
            scratch,
            pending: None,
            moved: 0,
        })
    }

    /// Move every message the TX ring holds (bounded by the ring's capacity); return how many.
    pub fn run_once(&mut self) -> usize {
        let mut n = 0;
        let cap = self.tx.capacity();
        while n < cap {
            let len = match self.pending.take() {
                Some(len) => len,
                None => match self.tx.try_pop(&mut self.scratch) {
                    Ok(len) => len,
                    Err(PopError::Corrupt) => continue,
                    Err(_) => break,
                },
            };
            match self.rx.try_push_quiet(&self.scratch[..len]) {
                Ok(()) => n += 1,
                Err(_) => {
                    self.pending = Some(len);
                    break;
                }
            }
        }
        if n > 0 {
            self.moved += n as u64;
            self.data.notify();
        }
        n
    }

    /// Return the messages moved so far by this handle.
    pub fn moved(&self) -> u64 {
        self.moved
    }

    /// Discard every message still in the TX ring (CLEAR on the destination); return how many
    /// (pass it to [`QueueReceiver::clear`]).
    pub fn clear(&mut self) -> u64 {
        let held = u64::from(self.pending.take().is_some());
        let before = self.tx.popped();
        self.tx.clear();
        held + self.tx.popped().wrapping_sub(before)
    }

    /// Return whether the TX ring holds a message (or a message waits for RX room).
    pub fn has_work(&self) -> bool {
        self.pending.is_some() || !self.tx.is_empty()
    }

    /// Return the messages sent but not yet moved to the RX ring.
    pub fn undelivered(&self) -> usize {
        usize::from(self.pending.is_some()) + self.tx.len()
    }
}

/// Run `manager` until `stop`: move, then park on the doorbell (no polling while idle; a
/// message held back for lack of RX room is retried every millisecond).
pub fn run_manager(manager: &Mutex<QueueManager>, stop: &AtomicBool) {
    let (doorbell, probe) = {
        let m = manager.lock().unwrap_or_else(|e| e.into_inner());
        // A second consumer handle that never pops: it only reads the counters.
        let probe = RingConsumer::attach(m.tx_region.clone(), TX_RING).ok();
        (m.doorbell.clone(), probe)
    };
    while !stop.load(Ordering::Acquire) {
        let pending = {
            let mut m = manager.lock().unwrap_or_else(|e| e.into_inner());
            m.run_once();
            m.pending.is_some()
        };
        if pending {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        doorbell.park_until(Some(Instant::now() + Duration::from_secs(1)), || {
            probe.as_ref().is_none_or(|p| !p.is_empty()) || stop.load(Ordering::Acquire)
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
    pub fn attach(tx: Arc<Region>, rx: Arc<Region>) -> Result<QueueReceiver, AreaError> {
        Ok(QueueReceiver {
            rx_region: rx.clone(),
            rx: RingConsumer::attach(rx.clone(), RX_RING)?,
            ack: ack_area(&tx)?,
            space: Notifier::new(tx, TX_SPACE)?,
            data: Notifier::new(rx, RX_DATA)?,
        })
    }

    fn publish_ack(&self) {
        let dropped = self.ack.u64_at(8).load(Ordering::Relaxed);
        // SYNC POINT: the cumulative ack; pairs with the sender's Acquire load in `in_flight`.
        self.ack
            .u64_at(0)
            .store(self.rx.popped().wrapping_add(dropped), Ordering::Release);
        self.space.notify();
    }

    /// Pop the oldest message into `buf`; return its length.
    ///
    /// # Errors
    /// As [`RingConsumer::try_pop`].
    #[inline]
    pub fn try_recv(&mut self, buf: &mut [u8]) -> Result<usize, PopError> {
        let n = self.rx.try_pop(buf)?;
        self.publish_ack();
        Ok(n)
    }

    /// Return the number of delivered, unconsumed messages.
    pub fn len(&self) -> usize {
        self.rx.len()
    }

    /// Return whether no delivered message waits.
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// Discard the delivered messages and return the credit of those and of the `undelivered`
    /// ones the manager discarded ([`QueueManager::clear`], called first).
    pub fn clear(&mut self, undelivered: u64) {
        let d = self.ack.u64_at(8);
        d.store(
            d.load(Ordering::Relaxed).wrapping_add(undelivered),
            Ordering::Relaxed,
        );
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
pub fn wait_delivered(r: &QueueReceiver, mode: RecvMode, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
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
        if Instant::now() >= deadline {
            return false;
        }
        i += 1;
    }
    r.data.park_until(Some(deadline), || !r.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        r.clear(undelivered);
        assert_eq!(s.in_flight(), 0);
        let mut buf = [0u8; 8];
        assert_eq!(r.try_recv(&mut buf), Err(PopError::Empty));
        s.try_send(b"d").unwrap();
        m.lock().unwrap().run_once();
        assert_eq!(r.try_recv(&mut buf), Ok(1));
        assert_eq!(&buf[..1], b"d");
    }

    /// CPU time (user + system, clock ticks) of thread `tid` of this process.
    fn thread_ticks(tid: i32) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        // Fields after the parenthesised name: state is field 3; utime 14, stime 15.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
    }

    #[test]
    #[allow(unsafe_code)]
    fn an_idle_manager_thread_sleeps_instead_of_polling() {
        let (s, _r, m) = chan(8, 4);
        let stop = Arc::new(AtomicBool::new(false));
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let t = {
            let (m, stop) = (m.clone(), stop.clone());
            std::thread::spawn(move || {
                // SAFETY: gettid has no preconditions.
                tid_tx.send(unsafe { libc::gettid() }).unwrap();
                run_manager(&m, &stop)
            })
        };
        let tid = tid_rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let before = thread_ticks(tid);
        std::thread::sleep(Duration::from_millis(500));
        let used = thread_ticks(tid) - before;
        // A polling thread would use ~50 ticks (100 Hz) in 500 ms; a parked one none.
        assert!(used <= 10, "the idle manager used {used} ticks in 500 ms");
        stop.store(true, Ordering::Release);
        s.doorbell.notify();
        t.join().unwrap();
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
            assert!(wait_delivered(
                &r,
                RecvMode::Blocking,
                Duration::from_secs(20)
            ));
            assert_eq!(r.try_recv(&mut buf), Ok(4));
            assert_eq!(u32::from_le_bytes(buf[..4].try_into().unwrap()), i);
        }
        stop.store(true, Ordering::Release);
        s.try_send(b"x").unwrap();
        t.join().unwrap();
        assert!(m.lock().unwrap().moved() >= 1000);
    }
}
