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
use partix_shm::sampling::{Attempt, Flags, SlotView};
use partix_shm::twosided::{ManagerState, Move, ReceiverState, RxError, RxView, TxView};

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

/// The begin/end protocol: one writer writing `n` messages, one reader reading twice; a
/// successful read is always one whole message, its stamp included, and reads never go back.
fn sampling_model(n: u32) {
    loom::model(move || {
        // [begin, stamp, payload.., end]
        let slot = Arc::new(words(WORDS + 3));
        let w = slot.clone();
        let writer = thread::spawn(move || {
            let view = SlotView::from_words(&w);
            for seq in 1..=n {
                let data = payload(seq);
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
            match view.try_read(&mut buf) {
                Attempt::Done { flags, stamp } => {
                    assert_eq!(flags.len() as usize, 8 * WORDS);
                    assert_whole(&buf, flags.seq());
                    assert_eq!(stamp, u64::from(flags.seq()) * 10, "torn stamp");
                    assert!(flags.seq() >= last, "went back in time");
                    last = flags.seq();
                }
                Attempt::Empty | Attempt::Torn => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        writer.join().unwrap();
        // After the writer is done, a read must succeed with the last message.
        let mut buf = [0u8; 8 * WORDS];
        match view.try_read(&mut buf) {
            Attempt::Done { flags, .. } => assert_eq!(flags.seq(), n),
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
struct ModelFutex {
    lock: Mutex<()>,
    queue: Condvar,
}

impl Futex for ModelFutex {
    fn wait(&self, word: &AtomicU32, expected: u32, _deadline: Option<std::time::Instant>) {
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
/// deadlock). The writer publishes `n` values; the receiver waits for each in turn.
fn notifier_model(n: u64) {
    loom::model(move || {
        let shared = Arc::new((
            AtomicU64::new(0),
            AtomicU32::new(0),
            AtomicU32::new(0),
            ModelFutex {
                lock: Mutex::new(()),
                queue: Condvar::new(),
            },
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
    notifier_model(1);
}

#[test]
fn notifier_never_loses_a_wakeup_twice() {
    notifier_model(2);
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

/// The two-sided queuing design (`partix_shm::twoqueue`): sender → TX ring → manager → RX ring
/// → receiver, with the receiver's cumulative ack as the sender's credit (`LIMIT` messages in
/// flight). The three run concurrently for a bounded number of steps each (a sender without
/// credit stops instead of spinning), then the rest of the stream is run to the end: no torn
/// message, no loss, no duplication, FIFO order, and neither ring is ever found full by the side
/// the credit rule says always has room (the manager never starves).
#[test]
fn two_sided_queue_credits_no_loss_in_order() {
    loom::model(|| {
        const CAP: usize = 2;
        const LIMIT: u64 = 2;
        const N: u32 = 3;
        let stride = 1 + WORDS;
        let tx = Arc::new((AtomicU64::new(0), AtomicU64::new(0), words(CAP * stride)));
        let rx = Arc::new((AtomicU64::new(0), AtomicU64::new(0), words(CAP * stride)));
        let ack = Arc::new(AtomicU64::new(0));
        let send = |view: &RingView<'_>,
                    st: &mut _,
                    sent: &mut u64,
                    acked: &mut u64,
                    ack: &AtomicU64|
         -> bool {
            // The credit check on the ack as last read (`QueueSender::acked`), read again
            // (Acquire) only when that leaves no credit.
            if *sent - *acked >= LIMIT {
                *acked = ack.load(Ordering::Acquire);
                if *sent - *acked >= LIMIT {
                    return false;
                }
            }
            let seq = *sent as u32 + 1;
            assert_eq!(
                view.push(st, &payload(seq)),
                Ok(()),
                "TX full within credit"
            );
            *sent += 1;
            true
        };
        let step = |txv: &RingView<'_>, cs: &mut _, rxv: &RingView<'_>, ps: &mut _| -> bool {
            let mut buf = [0u8; 8 * WORDS];
            match txv.pop(cs, &mut buf) {
                Ok(n) => {
                    assert_eq!(rxv.push(ps, &buf[..n]), Ok(()), "manager starved");
                    true
                }
                Err(PopError::Empty) => false,
                Err(e) => panic!("{e:?}"),
            }
        };
        let take = |rxv: &RingView<'_>, st: &mut _, got: &mut Vec<u32>, ack: &AtomicU64| -> bool {
            let mut buf = [0u8; 8 * WORDS];
            match rxv.pop(st, &mut buf) {
                Ok(_) => {
                    let seq = u64::from_ne_bytes(buf[..8].try_into().unwrap()) as u32;
                    assert_whole(&buf, seq);
                    got.push(seq);
                    // The cumulative ack: messages consumed, Release after the copy.
                    ack.store(got.len() as u64, Ordering::Release);
                    true
                }
                Err(PopError::Empty) => false,
                Err(e) => panic!("{e:?}"),
            }
        };
        let (t, a) = (tx.clone(), ack.clone());
        let sender = thread::spawn(move || {
            let view = RingView::new(&t.0, &t.1, &t.2, CAP);
            let mut st = view.producer_state();
            let (mut sent, mut acked) = (0u64, 0u64);
            while sent < u64::from(N) && send(&view, &mut st, &mut sent, &mut acked, &a) {}
            sent
        });
        let (t, r) = (tx.clone(), rx.clone());
        let manager = thread::spawn(move || {
            let txv = RingView::new(&t.0, &t.1, &t.2, CAP);
            let rxv = RingView::new(&r.0, &r.1, &r.2, CAP);
            let (mut cs, mut ps) = (txv.consumer_state(), rxv.producer_state());
            let _ = step(&txv, &mut cs, &rxv, &mut ps);
            let _ = step(&txv, &mut cs, &rxv, &mut ps);
        });
        let rxv = RingView::new(&rx.0, &rx.1, &rx.2, CAP);
        let mut st = rxv.consumer_state();
        let mut got = Vec::new();
        let _ = take(&rxv, &mut st, &mut got, &ack);
        let mut sent = sender.join().unwrap();
        manager.join().unwrap();
        // Run the rest sequentially (fresh handles continue at the shared counters).
        let txv = RingView::new(&tx.0, &tx.1, &tx.2, CAP);
        let (mut sst, mut cs, mut ps) = (
            txv.producer_state(),
            txv.consumer_state(),
            rxv.producer_state(),
        );
        // A fresh sender handle has read no ack yet (`QueueSender::attach`).
        let mut acked = 0u64;
        while got.len() < N as usize {
            let progress = (sent < u64::from(N)
                && send(&txv, &mut sst, &mut sent, &mut acked, &ack))
                | step(&txv, &mut cs, &rxv, &mut ps)
                | take(&rxv, &mut st, &mut got, &ack);
            assert!(progress, "stuck with {got:?} received, {sent} sent");
        }
        assert_eq!(got, (1..=N).collect::<Vec<_>>());
    });
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
