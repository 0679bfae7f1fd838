//! loom models of the lock-free algorithms: every interleaving (up to the preemption bound set by
//! `LOOM_MAX_PREEMPTIONS`) and every weak-memory outcome loom models is explored.
//!
//! Run with `scripts/loom.sh` (`RUSTFLAGS="--cfg loom" cargo test -p partix-shm --release --test
//! loom`). Without `--cfg loom` this file compiles to nothing.
#![cfg(loom)]

use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;
use partix_shm::notifier::{Futex, NotifierView};
use partix_shm::ring::{PopError, PushError, RingView};
use partix_shm::sampling::{Flags, ReadError, ReadOk, SlotView};
use partix_shm::twosided::{
    ManagerState, Move, QueueMoveViews, ReceiverState, RxError, RxView, TxView,
};

/// Payload of message `seq`: `WORDS` words, each equal to `seq` (a torn copy mixes values).
const WORDS: usize = 2;

fn payload(seq: u32) -> Vec<u8> {
    (0..WORDS)
        .flat_map(|_| u64::from(seq).to_ne_bytes())
        .collect()
}

fn assert_whole(buf: &[u8], seq: u32) {
    for w in buf.chunks_exact(8) {
        let v = u64::from_ne_bytes(w.try_into().unwrap());
        assert_eq!(v, u64::from(seq), "torn message: a word of another message");
    }
}

fn words(n: usize) -> Vec<AtomicU64> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}

/// Length of sampling message `seq` in the model: 8, 16, 8, ... bytes (odd `seq`: one word).
fn sampling_len(seq: u32) -> usize {
    if seq % 2 == 1 {
        8
    } else {
        8 * WORDS
    }
}

/// Word of sampling message `seq`: its sequence number and its length, so a copy of another
/// message, or of the right message with another message's length, shows.
fn sampling_word(seq: u32) -> u64 {
    (u64::from(seq) << 32) | sampling_len(seq) as u64
}

/// Payload of sampling message `seq`: [`sampling_len`] bytes of [`sampling_word`]s.
fn sampling_payload(seq: u32) -> Vec<u8> {
    (0..sampling_len(seq) / 8)
        .flat_map(|_| sampling_word(seq).to_ne_bytes())
        .collect()
}

/// A read `r` into `buf` is one whole message: its length is the length of its `seq`, every
/// word of it is that message's, its stamp is that message's.
fn assert_sampling_read(r: &ReadOk, buf: &[u8]) {
    assert_eq!(r.len, sampling_len(r.seq), "length of another message");
    for w in buf[..r.len].chunks_exact(8) {
        let v = u64::from_ne_bytes(w.try_into().unwrap());
        assert_eq!(
            v,
            sampling_word(r.seq),
            "torn message: a word of another message"
        );
    }
    assert_eq!(r.written_at_ns, u64::from(r.seq) * 10, "torn stamp");
}

/// The begin/end protocol: one writer writing `n` messages of lengths 8, 16, 8, ... bytes; one
/// reader reading twice with the production bounded retry (`SlotView::read`, 2 attempts); a
/// successful read is always one whole message, with its own length and stamp, reads never go
/// back, and a failed one is `Empty` or `Contended` (both attempts overlapped a write).
fn sampling_model(n: u32) {
    loom::model(move || {
        // [begin, stamp, payload.., end]
        let slot = Arc::new(words(WORDS + 3));
        let w = slot.clone();
        let writer = thread::spawn(move || {
            let view = SlotView::from_words(&w);
            for seq in 1..=n {
                let data = sampling_payload(seq);
                view.publish(
                    Flags::new(seq, data.len() as u32),
                    u64::from(seq) * 10,
                    &data,
                );
            }
        });
        let view = SlotView::from_words(&slot);
        let mut last = 0;
        for _ in 0..2 {
            let mut buf = [0u8; 8 * WORDS];
            match view.read(&mut buf, 2) {
                Ok(r) => {
                    assert_sampling_read(&r, &buf);
                    assert!(r.seq >= last, "went back in time");
                    assert!((1..=2).contains(&r.attempts));
                    last = r.seq;
                }
                Err(ReadError::Empty | ReadError::Contended { attempts: 2 }) => {}
                Err(e) => panic!("unexpected {e:?}"),
            }
        }
        writer.join().unwrap();
        // After the writer is done, a read must succeed with the last message, at once.
        let mut buf = [0u8; 8 * WORDS];
        match view.read(&mut buf, 2) {
            Ok(r) => {
                assert_eq!((r.seq, r.attempts), (n, 1));
                assert_sampling_read(&r, &buf);
            }
            other => panic!("quiescent read failed: {other:?}"),
        }
    });
}

#[test]
fn sampling_two_messages_never_torn() {
    sampling_model(2);
}

#[test]
fn sampling_three_messages_never_torn() {
    sampling_model(3);
}

/// The SPSC ring: capacity 2, three messages; no loss, no duplication, FIFO order.
#[test]
fn ring_no_loss_no_duplication_in_order() {
    loom::model(|| {
        const CAP: usize = 2;
        const N: u32 = 3;
        let stride = 1 + WORDS;
        let mem = Arc::new((AtomicU64::new(0), AtomicU64::new(0), words(CAP * stride)));
        let m = mem.clone();
        let producer = thread::spawn(move || {
            let view = RingView::new(&m.0, &m.1, &m.2, CAP);
            let mut st = view.producer_state();
            for seq in 1..=N {
                loop {
                    match view.push(&mut st, &payload(seq)) {
                        Ok(()) => break,
                        Err(PushError::Full) => thread::yield_now(),
                        Err(e) => panic!("{e:?}"),
                    }
                }
            }
        });
        let view = RingView::new(&mem.0, &mem.1, &mem.2, CAP);
        let mut st = view.consumer_state();
        let mut got = Vec::new();
        while got.len() < N as usize {
            let mut buf = [0u8; 8 * WORDS];
            match view.pop(&mut st, &mut buf) {
                Ok(len) => {
                    assert_eq!(len, 8 * WORDS);
                    let seq = u64::from_ne_bytes(buf[..8].try_into().unwrap()) as u32;
                    assert_whole(&buf, seq);
                    got.push(seq);
                }
                Err(PopError::Empty) => thread::yield_now(),
                Err(e) => panic!("{e:?}"),
            }
        }
        producer.join().unwrap();
        assert_eq!(got, (1..=N).collect::<Vec<_>>());
        let mut buf = [0u8; 8 * WORDS];
        assert_eq!(view.pop(&mut st, &mut buf), Err(PopError::Empty));
    });
}

/// The SPSC ring's batch operations: capacity 2, three messages pushed in batches of up to 2
/// (`push_many`, one `tail` publication per batch) and popped in batches of up to 2
/// (`pop_many`, one `head` publication per batch); no loss, no duplication, FIFO order, no
/// torn message.
#[test]
fn ring_batches_no_loss_in_order() {
    loom::model(|| {
        const CAP: usize = 2;
        const N: u32 = 3;
        let stride = 1 + WORDS;
        let mem = Arc::new((AtomicU64::new(0), AtomicU64::new(0), words(CAP * stride)));
        let m = mem.clone();
        let producer = thread::spawn(move || {
            let view = RingView::new(&m.0, &m.1, &m.2, CAP);
            let mut st = view.producer_state();
            let msgs: Vec<Vec<u8>> = (1..=N).map(payload).collect();
            let refs: Vec<&[u8]> = msgs.iter().map(|v| &v[..]).collect();
            let mut next = 0;
            while next < refs.len() {
                let end = (next + 2).min(refs.len());
                match view.push_many(&mut st, &refs[next..end], CAP as u64) {
                    Ok(k) => next += k,
                    Err(PushError::Full) => thread::yield_now(),
                    Err(e) => panic!("{e:?}"),
                }
            }
        });
        let view = RingView::new(&mem.0, &mem.1, &mem.2, CAP);
        let mut st = view.consumer_state();
        let mut got = Vec::new();
        let m = 8 * WORDS;
        while got.len() < N as usize {
            let mut out = vec![0u8; 2 * m];
            let mut lens = [0usize; 2];
            match view.pop_many(&mut st, &mut out, m, &mut lens) {
                Ok(k) => {
                    for (i, &len) in lens.iter().enumerate().take(k) {
                        assert_eq!(len, m);
                        let b = &out[i * m..(i + 1) * m];
                        let seq = u64::from_ne_bytes(b[..8].try_into().unwrap()) as u32;
                        assert_whole(b, seq);
                        got.push(seq);
                    }
                }
                Err(PopError::Empty) => thread::yield_now(),
                Err(e) => panic!("{e:?}"),
            }
        }
        producer.join().unwrap();
        assert_eq!(got, (1..=N).collect::<Vec<_>>());
    });
}

/// The two-sided design: sender → TX ring (2 buffers) → manager → RX ring (2 buffers) →
/// receiver with cumulative acks. While all three run concurrently (bounded steps each), the
/// receiver never sees a torn or older message and the manager never has more buffers in flight
/// than the receiver acknowledged; afterwards the newest message is delivered.
fn two_sided_model(n: u32, manager_steps: usize, reads: usize) {
    loom::model(move || {
        const SLOTS: usize = 2;
        let tx_stride = WORDS + 3;
        let rx_stride = WORDS + 2;
        // (tx tail, tx slots, rx tail, rx head, rx slots)
        let mem = Arc::new((
            AtomicU64::new(0),
            words(SLOTS * tx_stride),
            AtomicU64::new(0),
            AtomicU64::new(0),
            words(SLOTS * rx_stride),
        ));
        let m = mem.clone();
        let sender = thread::spawn(move || {
            let tx = TxView::new(&m.0, &m.1, SLOTS);
            for p in 0..n {
                tx.send(u64::from(p), u64::from(p + 1) * 10, &payload(p + 1));
            }
        });
        let m = mem.clone();
        let manager = thread::spawn(move || {
            let tx = TxView::new(&m.0, &m.1, SLOTS);
            let rx = RxView::new(&m.2, &m.3, &m.4, SLOTS);
            let mut st = ManagerState::resume(&tx, &rx);
            for _ in 0..manager_steps {
                st.move_once(&tx, &rx);
                // Flow control: never more buffers in flight than the receiver has.
                assert!(st.rx_tail - rx.acked() <= SLOTS as u64, "receiver overrun");
            }
            st
        });
        let rx = RxView::new(&mem.2, &mem.3, &mem.4, SLOTS);
        let mut rst = ReceiverState::resume(&rx);
        let mut last = 0;
        let check = |rst: &mut ReceiverState, last: &mut u32| {
            let mut buf = [0u8; 8 * WORDS];
            match rst.read(&rx, &mut buf) {
                Ok(r) => {
                    let seq = r.flags.seq();
                    assert_whole(&buf, seq);
                    assert_eq!(r.stamp, u64::from(seq) * 10, "torn stamp");
                    assert!(seq >= *last, "went back in time");
                    *last = seq;
                }
                Err(RxError::Empty) => {}
                Err(e) => panic!("{e:?}"),
            }
        };
        for _ in 0..reads {
            check(&mut rst, &mut last);
        }
        sender.join().unwrap();
        let mut st = manager.join().unwrap();
        // Quiescent phase: alternate manager and receiver until the newest is delivered.
        let tx = TxView::new(&mem.0, &mem.1, SLOTS);
        for _ in 0..2 * n + 2 {
            st.move_once(&tx, &rx);
            check(&mut rst, &mut last);
        }
        assert_eq!(
            last,
            n,
            "newest message not delivered: {st:?} acked {}",
            rx.acked()
        );
        assert_eq!(st.move_once(&tx, &rx), Move::Idle);
    });
}

#[test]
fn two_sided_two_messages() {
    two_sided_model(2, 3, 2);
}

#[test]
fn two_sided_three_messages_with_credit_starvation() {
    two_sided_model(3, 3, 1);
}

/// A futex for the model: the kernel checks the word and queues the waiter atomically with respect
/// to wakers (its hash-bucket lock); here a mutex plays that lock and a condvar the queue.
///
/// The first `time_outs` waits return without blocking, whatever the word, as a wait whose
/// time-out (a `MAX_PARK` slice) passed before any wake-up; the model's interleavings place that
/// return anywhere among the writer's steps. Only the parking thread touches the count, so it is
/// a plain (not modelled) atomic.
struct ModelFutex {
    lock: Mutex<()>,
    queue: Condvar,
    time_outs: std::sync::atomic::AtomicU32,
}

impl ModelFutex {
    fn new(time_outs: u32) -> ModelFutex {
        ModelFutex {
            lock: Mutex::new(()),
            queue: Condvar::new(),
            time_outs: std::sync::atomic::AtomicU32::new(time_outs),
        }
    }
}

impl Futex for ModelFutex {
    fn wait(&self, word: &AtomicU32, expected: u32, _deadline: Option<std::time::Instant>) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.time_outs.load(Relaxed) != 0 {
            self.time_outs.fetch_sub(1, Relaxed);
            return;
        }
        let guard = self.lock.lock().unwrap();
        if word.load(Ordering::Relaxed) == expected {
            drop(self.queue.wait(guard).unwrap());
        }
    }

    fn wake_all(&self, _word: &AtomicU32) {
        let _guard = self.lock.lock().unwrap();
        self.queue.notify_all();
    }
}

/// The kernel's priority-inheritance futex, as the biased lock's revoker and owner see it
/// (`kernel/futex/pi.c`): `lock_pi` takes a word whose owner id is 0 with a compare-and-swap,
/// else sets `FUTEX_WAITERS` (compare-and-swap) and queues; a queued waiter gets the word only
/// from `unlock_pi`, never by the word changing under it (the kernel does not look at the word
/// of a queued waiter). `unlock_pi` fails (here: panics) unless the word holds the caller's id.
/// A mutex plays the futex hash-bucket lock.
struct ModelPiFutex {
    lock: Mutex<PiQueue>,
    queue: Condvar,
}

#[derive(Default)]
struct PiQueue {
    waiters: std::collections::VecDeque<u32>,
    handed_to: Option<u32>,
}

impl partix_shm::bias::PiFutex for ModelPiFutex {
    fn lock_pi(&self, word: &AtomicU32, me: u32) {
        use partix_shm::bias::{FUTEX_TID_MASK, FUTEX_WAITERS};
        let mut q = self.lock.lock().unwrap();
        loop {
            let v = word.load(Ordering::Relaxed);
            if v & FUTEX_TID_MASK == 0 {
                let w = if q.waiters.is_empty() {
                    0
                } else {
                    FUTEX_WAITERS
                };
                if word
                    .compare_exchange(v, me | w, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
            } else if word
                .compare_exchange(v, v | FUTEX_WAITERS, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                break;
            }
        }
        q.waiters.push_back(me);
        loop {
            q = self.queue.wait(q).unwrap();
            if q.handed_to == Some(me) {
                q.handed_to = None;
                return;
            }
        }
    }

    fn unlock_pi(&self, word: &AtomicU32, me: u32) {
        use partix_shm::bias::{FUTEX_TID_MASK, FUTEX_WAITERS};
        let mut q = self.lock.lock().unwrap();
        loop {
            let v = word.load(Ordering::Relaxed);
            assert_eq!(
                v & FUTEX_TID_MASK,
                me,
                "unlock_pi of a word the caller does not hold"
            );
            let (next, to) = match q.waiters.front() {
                Some(&w) if q.waiters.len() > 1 => (w | FUTEX_WAITERS, Some(w)),
                Some(&w) => (w, Some(w)),
                None => (0, None),
            };
            if word
                .compare_exchange(v, next, Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                if to.is_some() {
                    q.waiters.pop_front();
                    q.handed_to = to;
                    self.queue.notify_all();
                }
                return;
            }
        }
    }
}

/// The notifier never loses a wake-up: a receiver parking while the writer publishes and
/// notifies always returns (a lost wake-up leaves it blocked forever, which loom reports as a
/// deadlock). The writer publishes `n` values; the receiver waits for each in turn. Its first
/// `time_outs` waits time out (see `ModelFutex`): a slice that ends with `epoch` unchanged stays
/// registered under the same fence Y, and one that ends after a bump goes back round.
fn notifier_model(n: u64, time_outs: u32) {
    loom::model(move || {
        let shared = Arc::new((
            AtomicU64::new(0),
            AtomicU32::new(0),
            AtomicU64::new(0),
            ModelFutex::new(time_outs),
        ));
        let s = shared.clone();
        let writer = thread::spawn(move || {
            let view = NotifierView::new(&s.1, &s.2);
            for v in 1..=n {
                s.0.store(v, Ordering::Release);
                view.notify(&s.3);
            }
        });
        let view = NotifierView::new(&shared.1, &shared.2);
        for v in 1..=n {
            assert!(view.park_until(&shared.3, None, || shared.0.load(Ordering::Acquire) >= v));
        }
        writer.join().unwrap();
        assert_eq!(shared.2.load(Ordering::Relaxed), 0, "waiter count leaked");
    });
}

#[test]
fn notifier_never_loses_a_wakeup() {
    notifier_model(1, 0);
}

#[test]
fn notifier_never_loses_a_wakeup_twice() {
    notifier_model(2, 0);
}

/// A park whose slices time out stays registered across them without a new fence Y (review 26,
/// finding 2): no interleaving of the time-outs with the writer loses the wake-up. Checked
/// mutations of `park_until_or_with`: taking the registration back at a time-out without
/// registering again fails this model (and the two-message ones: a late wake-up of the first
/// round ends a wait of the second with `epoch` unchanged); staying registered also after a
/// bump, with a `Relaxed` reload of `epoch`, fails it too (`ready()` misses the data of a bump
/// the reload saw). With two time-outs in a row the first mutation is caught by the parker's
/// check that its count still holds (it goes back round), hence the one-time-out model.
#[test]
fn notifier_never_loses_a_wakeup_across_a_time_out() {
    notifier_model(1, 1);
}

#[test]
fn notifier_never_loses_a_wakeup_across_time_outs() {
    notifier_model(1, 2);
}

#[test]
fn notifier_never_loses_a_wakeup_twice_across_a_time_out() {
    notifier_model(2, 1);
}

/// The one-sided ring with the **split** layout: `head` lives in the consumer's control area,
/// `tail` and the slots in the data area the consumer maps read-only. The algorithm is the same
/// `RingView` over words that live apart; the consumer stores only to the control area.
#[test]
fn ring_split_control_area_no_loss_in_order() {
    loom::model(|| {
        const CAP: usize = 2;
        const N: u32 = 3;
        let stride = 1 + WORDS;
        // Data area: tail and slots. Control area: head (separate allocation).
        let data = Arc::new((AtomicU64::new(0), words(CAP * stride)));
        let ctrl = Arc::new(AtomicU64::new(0));
        let (d, c) = (data.clone(), ctrl.clone());
        let producer = thread::spawn(move || {
            let view = RingView::new(&c, &d.0, &d.1, CAP);
            let mut st = view.producer_state();
            for seq in 1..=N {
                while view.push(&mut st, &payload(seq)) == Err(PushError::Full) {
                    thread::yield_now();
                }
            }
        });
        let view = RingView::new(&ctrl, &data.0, &data.1, CAP);
        let mut st = view.consumer_state();
        let mut got = Vec::new();
        while got.len() < N as usize {
            let mut buf = [0u8; 8 * WORDS];
            match view.pop(&mut st, &mut buf) {
                Ok(_) => {
                    let seq = u64::from_ne_bytes(buf[..8].try_into().unwrap()) as u32;
                    assert_whole(&buf, seq);
                    got.push(seq);
                }
                Err(PopError::Empty) => thread::yield_now(),
                Err(e) => panic!("{e:?}"),
            }
        }
        producer.join().unwrap();
        assert_eq!(got, (1..=N).collect::<Vec<_>>());
    });
}

/// Payload words of a message in the two-sided queue model (one: a whole-message check needs
/// more, and the ring's own model checks that; the queue model is about the wake-ups).
const QUEUE_WORDS: usize = 1;

fn queue_payload(seq: u32) -> [u8; 8 * QUEUE_WORDS] {
    u64::from(seq).to_ne_bytes()
}

/// A notifier's words and the model futex it parks on.
struct ModelNotifier {
    epoch: AtomicU32,
    waiters: AtomicU64,
    futex: ModelFutex,
}

impl ModelNotifier {
    fn new() -> ModelNotifier {
        ModelNotifier {
            epoch: AtomicU32::new(0),
            waiters: AtomicU64::new(0),
            futex: ModelFutex::new(0),
        }
    }

    fn view(&self) -> NotifierView<'_> {
        NotifierView::new(&self.epoch, &self.waiters)
    }

    fn notify(&self) {
        self.view().notify(&self.futex);
    }

    /// Park until `ready()` (no time-out: a lost wake-up is a deadlock, which loom reports).
    fn park_until(&self, ready: impl FnMut() -> bool) {
        assert!(self.view().park_until(&self.futex, None, ready));
    }
}

/// The shared words of a two-sided queuing channel (`partix_shm::twoqueue`'s regions).
struct QueueChan {
    tx_head: AtomicU64,
    tx_tail: AtomicU64,
    tx_slots: Vec<AtomicU64>,
    rx_head: AtomicU64,
    rx_tail: AtomicU64,
    rx_slots: Vec<AtomicU64>,
    /// The receiver's cumulative ack (RX messages consumed).
    ack: AtomicU64,
    /// TX messages dropped undelivered (the manager's; the sender's credit adds it to the ack).
    dropped: AtomicU64,
    /// The manager parks here; the sender rings it.
    doorbell: ModelNotifier,
    /// The sender parks here for credit and TX room; the receiver and the manager wake it.
    space: ModelNotifier,
    /// The receiver parks here; the manager wakes it.
    data: ModelNotifier,
    cap: usize,
}

impl QueueChan {
    fn new(cap: usize) -> QueueChan {
        QueueChan {
            tx_head: AtomicU64::new(0),
            tx_tail: AtomicU64::new(0),
            tx_slots: words(cap * (1 + QUEUE_WORDS)),
            rx_head: AtomicU64::new(0),
            rx_tail: AtomicU64::new(0),
            rx_slots: words(cap * (1 + QUEUE_WORDS)),
            ack: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            doorbell: ModelNotifier::new(),
            space: ModelNotifier::new(),
            data: ModelNotifier::new(),
            cap,
        }
    }

    fn tx(&self) -> RingView<'_> {
        RingView::new(&self.tx_head, &self.tx_tail, &self.tx_slots, self.cap)
    }

    fn rx(&self) -> RingView<'_> {
        RingView::new(&self.rx_head, &self.rx_tail, &self.rx_slots, self.cap)
    }

    /// The manager's views (`QueueManager`'s), with its private peek word.
    fn manager<'a>(&'a self, peek_head: &'a AtomicU64) -> QueueMoveViews<'a> {
        QueueMoveViews {
            peek: RingView::new(peek_head, &self.tx_tail, &self.tx_slots, self.cap),
            peek_head,
            tx_head: &self.tx_head,
            tx_tail: &self.tx_tail,
            rx: self.rx(),
            rx_tail: &self.rx_tail,
            dropped: &self.dropped,
        }
    }
}

/// The two-sided queuing design (`partix_shm::twoqueue`) with the production manager step
/// (`QueueMoveViews::move_all`: peek, deliver, commit, then wake the sender's space notifier)
/// and the production credit (the receiver's ack `RX popped`, Release, then the space notifier;
/// the sender counts `ack + dropped`). Three threads, each parking on its notifier as in
/// partix:
/// - the sender (`QueueSender::try_send`; waiting: `QueueSenderProbe::has_credit` on the space
///   notifier) sends `n` messages within `limit` messages in flight, ringing the doorbell;
/// - the manager (`run_manager`) runs rounds, waking the receiver after a move, and parks on
///   the doorbell while the TX ring is empty;
/// - the receiver (`QueueReceiver::try_recv`) pops, acks, and parks on the data notifier.
///
/// No torn message, no loss, no duplication, FIFO order, the manager never finds the RX ring
/// full (the credit rule bounds the messages in flight by `limit <= cap`), the sender finds the
/// TX ring full within its credit only while a move is delivered and not committed, and nobody
/// is left parked: a lost wake-up is a deadlock, which loom reports. Without the manager's
/// wake-up after its commit the model deadlocks (`limit = cap = 1`: the receiver takes and acks
/// the message between its deliver and its commit; the sender, woken by the ack, finds the TX
/// slot still occupied and parks again).
///
/// The first `queued` messages are sent before the threads start (fewer interleavings: the
/// ring's own models check a concurrent push). With `drop_first`, the first of them has an
/// impossible length (a broken sender): the manager drops it, and its credit must come back
/// without the receiver, which never sees it (with `limit = 1` the sender waits for exactly
/// that credit; when only the receiver's ack counted drops, after its next pop, the model
/// deadlocked).
fn two_sided_queue_model(cap: usize, limit: u64, queued: u32, n: u32, drop_first: bool) {
    assert!(u64::from(queued) <= limit);
    assert!(!drop_first || queued >= 1);
    let dropped = u32::from(drop_first);
    loom::model(move || {
        let c = Arc::new(QueueChan::new(cap));
        let mut st = c.tx().producer_state();
        for seq in 1..=queued {
            c.tx().push(&mut st, &queue_payload(seq)).unwrap();
        }
        if drop_first {
            // Message 1's length word (slot 0): 0 is impossible.
            c.tx_slots[0].store(0, Ordering::Relaxed);
        }

        let c1 = c.clone();
        let sender = thread::spawn(move || {
            let c = &*c1;
            let tx = c.tx();
            // The credit (`twoqueue::consumed`: the receiver's ack plus the manager's drops).
            let consumed = || {
                c.ack
                    .load(Ordering::Acquire)
                    .wrapping_add(c.dropped.load(Ordering::Acquire))
            };
            // The count as last read (`QueueSender::acked`): read again only when it leaves no
            // credit.
            let mut acked = 0u64;
            let has_credit = || {
                let in_flight = c.tx_tail.load(Ordering::Acquire).wrapping_sub(consumed());
                in_flight < limit && tx.len() < tx.capacity()
            };
            for seq in queued + 1..=n {
                let sent = u64::from(seq - 1);
                loop {
                    if sent - acked >= limit {
                        acked = consumed();
                    }
                    if sent - acked < limit {
                        let head_before = c.tx_head.load(Ordering::Acquire);
                        match tx.push(&mut st, &queue_payload(seq)) {
                            Ok(()) => {
                                c.doorbell.notify();
                                break;
                            }
                            Err(PushError::Full) => {
                                // Within the credit only while a move is delivered and not
                                // committed.
                                let accounted = c.rx_tail.load(Ordering::Acquire)
                                    + c.dropped.load(Ordering::Relaxed);
                                assert!(accounted > head_before, "TX ring full within the credit");
                            }
                            Err(e) => panic!("{e:?}"),
                        }
                    }
                    c.space.park_until(has_credit);
                }
            }
        });

        let c2 = c.clone();
        let manager = thread::spawn(move || {
            let c = &*c2;
            let peek_head = AtomicU64::new(0);
            let v = c.manager(&peek_head);
            v.recover();
            let mut st = v.state();
            let mut scratch = [0u8; 8 * QUEUE_WORDS];
            let tx = c.tx();
            let (mut moved, mut dropped_seen) = (0, 0);
            loop {
                let round = v.move_all(
                    &mut st,
                    &mut scratch,
                    c.cap,
                    &c.space.view(),
                    &c.space.futex,
                );
                assert!(!round.rx_full, "manager starved");
                assert!(!round.corrupt, "{round:?}");
                if round.moved > 0 {
                    c.data.notify();
                }
                moved += round.moved;
                dropped_seen += round.dropped;
                if moved + dropped_seen == n as usize {
                    assert_eq!(dropped_seen, dropped as usize);
                    break;
                }
                c.doorbell.park_until(|| !tx.is_empty());
            }
        });

        let c = &*c;
        let rx = c.rx();
        let mut st = rx.consumer_state();
        let mut got = Vec::new();
        while got.len() < (n - dropped) as usize {
            let mut buf = [0u8; 8 * QUEUE_WORDS];
            match rx.pop(&mut st, &mut buf) {
                Ok(len) => {
                    assert_eq!(len, 8 * QUEUE_WORDS);
                    let seq = u64::from_ne_bytes(buf[..8].try_into().unwrap()) as u32;
                    assert_whole(&buf, seq);
                    got.push(seq);
                    // The cumulative ack: RX messages consumed, Release after the copy.
                    c.ack.store(got.len() as u64, Ordering::Release);
                    c.space.notify();
                }
                Err(PopError::Empty) => c.data.park_until(|| !rx.is_empty()),
                Err(e) => panic!("{e:?}"),
            }
        }
        sender.join().unwrap();
        manager.join().unwrap();
        assert_eq!(got, (1 + dropped..=n).collect::<Vec<_>>());
    });
}

/// `MaxNbMessages = 1` (one TX slot), two messages: the lost wake-up between the manager's
/// deliver and commit.
#[test]
fn two_sided_queue_credits_no_loss_in_order() {
    two_sided_queue_model(1, 1, 1, 2, false);
}

/// `MaxNbMessages = 1`, two messages, the first with an impossible length: the manager drops
/// it, and the sender, parked for credit, gets it back without the receiver (which only ever
/// sees the second).
#[test]
fn two_sided_queue_a_dropped_message_returns_its_credit() {
    two_sided_queue_model(1, 1, 1, 2, true);
}

/// The biased lock (`partix_shm::bias`, the port lock of `partix-runtime`): its slow path is a
/// mutex, its fast path the owner's `inside` flag. Two threads each take the lock `ops` times;
/// inside, each counts itself in (a second thread inside fails the model) and increments a
/// counter in a `loom` cell (a lost increment or an unordered access fails it too). Thread 1 starts as the owner, and thread 2 revokes the bias on its first slow path.
/// With `dead_owner`, the designated owner is a third thread that has ended: thread 2 then takes
/// the bias at the end of its slow path, and thread 1 must revoke it in turn. Without it,
/// thread 2's `give_to` must be refused (thread 1, the designated owner, is alive): a first
/// version that gave the bias to any thread failed this model (thread 1, preempted between
/// its first load of `bias` and its store to `inside`, overwrote thread 2's `inside`).
fn bias_model(ops: usize, dead_owner: bool) {
    use loom::cell::UnsafeCell;
    use partix_shm::bias::BiasView;
    loom::model(move || {
        struct Lock {
            bias: AtomicU32,
            inside: AtomicU32,
            designated: AtomicU32,
            slow: Mutex<()>,
            futex: ModelPiFutex,
            count: UnsafeCell<usize>,
            /// Threads inside, counted with `Relaxed` read-modify-writes (a total order per
            /// word, and no happens-before edge that could hide a missing one).
            in_cs: AtomicU32,
        }
        let (bias, designated) = if dead_owner { (0, 3) } else { (1, 1) };
        let lock = Arc::new(Lock {
            bias: AtomicU32::new(bias),
            inside: AtomicU32::new(0),
            designated: AtomicU32::new(designated),
            slow: Mutex::new(()),
            futex: ModelPiFutex {
                lock: Mutex::new(PiQueue::default()),
                queue: Condvar::new(),
            },
            count: UnsafeCell::new(0),
            in_cs: AtomicU32::new(0),
        });
        let critical = |l: &Lock| {
            assert_eq!(
                l.in_cs.fetch_add(1, Ordering::Relaxed),
                0,
                "two threads inside"
            );
            // SAFETY: the lock makes this the only access (what the model checks).
            l.count.with_mut(|c| unsafe { *c += 1 });
            l.in_cs.fetch_sub(1, Ordering::Relaxed);
        };
        let run = move |l: Arc<Lock>, me: u32| {
            let view = BiasView::new(&l.bias, &l.inside, &l.designated);
            for _ in 0..ops {
                if view.enter(me, &l.futex) {
                    critical(&l);
                    view.leave(me, &l.futex);
                } else {
                    let g = l.slow.lock().unwrap();
                    view.revoke(me, &l.futex);
                    critical(&l);
                    if me == 2 && view.owner() == 0 {
                        // Thread 3 is the dead one.
                        let given = view.give_to(me, |t| t != 3);
                        assert_eq!(given, dead_owner);
                    }
                    drop(g);
                }
            }
        };
        let l2 = lock.clone();
        let t = thread::spawn(move || run(l2, 2));
        run(lock.clone(), 1);
        t.join().unwrap();
        // SAFETY: both threads have been joined.
        assert_eq!(lock.count.with(|c| unsafe { *c }), 2 * ops);
    });
}

#[test]
fn bias_revocation_keeps_mutual_exclusion() {
    bias_model(2, false);
}

#[test]
fn bias_moving_between_threads_keeps_mutual_exclusion() {
    bias_model(2, true);
}
