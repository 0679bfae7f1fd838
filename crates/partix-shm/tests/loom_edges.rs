//! loom models of the two-sided queue manager's crash-safe move
//! (`partix_shm::twosided::QueueMoveViews`, used by `partix_shm::twoqueue::QueueManager`): a
//! manager is "killed" (its thread ends, its private state is gone) after its copy of a message
//! or after publishing it in the RX ring but before committing the TX head, while the sender and
//! the receiver keep running; a new manager recovers and continues. Every interleaving must
//! deliver every message exactly once, whole and in order, and the sender's credits (the
//! receiver's cumulative ack plus the manager's drops) must never let it overwrite a message the
//! manager still needs.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p partix-shm --release --test loom_edges`
//! (as `scripts/loom.sh` does for `tests/loom.rs`). Without `--cfg loom` this file compiles to
//! nothing.
#![cfg(loom)]

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;
use partix_shm::ring::{PopError, ProducerState, PushError, RingView};
use partix_shm::twosided::{QueueMove, QueueMoveViews};

/// Payload words of a message (each equal to its sequence number: a torn copy mixes values).
const WORDS: usize = 2;
const CAP: usize = 2;
/// `MaxNbMessages`: messages in flight (sent, not consumed).
const LIMIT: u64 = 2;
/// Messages in the stream.
const N: u32 = 3;

fn payload(seq: u32) -> Vec<u8> {
    (0..WORDS)
        .flat_map(|_| u64::from(seq).to_ne_bytes())
        .collect()
}

fn seq_of(buf: &[u8]) -> u32 {
    let seq = u64::from_ne_bytes(buf[..8].try_into().unwrap());
    for w in buf.chunks_exact(8) {
        let v = u64::from_ne_bytes(w.try_into().unwrap());
        assert_eq!(v, seq, "torn message: a word of another message");
    }
    seq as u32
}

fn words(n: usize) -> Vec<AtomicU64> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}

/// The shared words of one channel.
struct Chan {
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
}

impl Chan {
    fn new() -> Chan {
        Chan {
            tx_head: AtomicU64::new(0),
            tx_tail: AtomicU64::new(0),
            tx_slots: words(CAP * (1 + WORDS)),
            rx_head: AtomicU64::new(0),
            rx_tail: AtomicU64::new(0),
            rx_slots: words(CAP * (1 + WORDS)),
            ack: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    fn tx(&self) -> RingView<'_> {
        RingView::new(&self.tx_head, &self.tx_tail, &self.tx_slots, CAP)
    }

    fn rx(&self) -> RingView<'_> {
        RingView::new(&self.rx_head, &self.rx_tail, &self.rx_slots, CAP)
    }

    /// A manager's views, with its private peek word.
    fn manager<'a>(&'a self, peek_head: &'a AtomicU64) -> QueueMoveViews<'a> {
        QueueMoveViews {
            peek: RingView::new(peek_head, &self.tx_tail, &self.tx_slots, CAP),
            peek_head,
            tx_head: &self.tx_head,
            tx_tail: &self.tx_tail,
            rx: self.rx(),
            rx_tail: &self.rx_tail,
            dropped: &self.dropped,
        }
    }
}

/// The sender: send the next message if the credit allows (`QueueSender::try_send`).
/// `acked`: the messages consumed or dropped as last read (`QueueSender::acked`,
/// `twoqueue::consumed`: the ack plus `dropped`), read again only when it leaves no credit.
fn send(c: &Chan, st: &mut ProducerState, sent: &mut u32, acked: &mut u64) -> bool {
    if *sent == N {
        return false;
    }
    if u64::from(*sent) - *acked >= LIMIT {
        *acked = c
            .ack
            .load(Ordering::Acquire)
            .wrapping_add(c.dropped.load(Ordering::Acquire));
        if u64::from(*sent) - *acked >= LIMIT {
            return false;
        }
    }
    let head_before = c.tx_head.load(Ordering::Acquire);
    match c.tx().push(st, &payload(*sent + 1)) {
        Ok(()) => {
            *sent += 1;
            true
        }
        Err(PushError::Full) => {
            // Within the credit the TX ring has room, except while a dead manager's last move
            // is delivered (and consumed) but not committed; the next manager commits it (the
            // run to the end below checks that the sender is not blocked for good).
            let accounted = c.rx_tail.load(Ordering::Acquire) + c.dropped.load(Ordering::Relaxed);
            assert!(accounted > head_before, "TX ring full within the credit");
            false
        }
        Err(e) => panic!("{e:?}"),
    }
}

/// The receiver: take one message and publish the cumulative ack (`QueueReceiver::try_recv`).
fn take(c: &Chan, st: &mut partix_shm::ring::ConsumerState, got: &mut Vec<u32>) -> bool {
    let mut buf = [0u8; 8 * WORDS];
    match c.rx().pop(st, &mut buf) {
        Ok(_) => {
            got.push(seq_of(&buf));
            c.ack.store(got.len() as u64, Ordering::Release);
            true
        }
        Err(PopError::Empty) => false,
        Err(e) => panic!("{e:?}"),
    }
}

/// Where the first manager dies.
#[derive(Clone, Copy)]
enum Crash {
    /// After copying the message at the TX head (nothing shared changed).
    Peeked,
    /// After publishing it in the RX ring, before committing the TX head.
    Delivered,
}

/// The first manager makes `whole` complete moves, then dies at `crash` in the next one, while
/// the sender sends and the receiver takes one message. A second manager then recovers and moves
/// one message concurrently with both again; the rest runs to the end sequentially.
fn crash_model(whole: usize, crash: Crash) {
    loom::model(move || {
        let c = Arc::new(Chan::new());
        let mut buf = [0u8; 8 * WORDS];

        let c1 = c.clone();
        let sender = thread::spawn(move || {
            let mut st = c1.tx().producer_state();
            let (mut sent, mut acked) = (0, 0);
            while send(&c1, &mut st, &mut sent, &mut acked) {}
            sent
        });
        let c2 = c.clone();
        let manager = thread::spawn(move || {
            let peek_head = AtomicU64::new(0);
            let v = c2.manager(&peek_head);
            v.recover();
            let mut st = v.state();
            let mut buf = [0u8; 8 * WORDS];
            for _ in 0..whole {
                let _ = v.move_one(&mut st, &mut buf);
            }
            if let Ok(n) = v.peek(&mut st, &mut buf) {
                if let Crash::Delivered = crash {
                    let _ = v.deliver(&mut st, &buf[..n]);
                }
            }
            // Killed here: the private state is lost.
        });
        let mut rst = c.rx().consumer_state();
        let mut got = Vec::new();
        let _ = take(&c, &mut rst, &mut got);
        let mut sent = sender.join().unwrap();
        manager.join().unwrap();

        // The replacement manager, concurrently with a sender and the receiver.
        let c3 = c.clone();
        let restarted = thread::spawn(move || {
            let peek_head = AtomicU64::new(0);
            let v = c3.manager(&peek_head);
            v.recover();
            let mut st = v.state();
            let mut buf = [0u8; 8 * WORDS];
            let _ = v.move_one(&mut st, &mut buf);
            // Hand the state on (the same process keeps running).
            st
        });
        let c4 = c.clone();
        let sender = thread::spawn(move || {
            let mut st = c4.tx().producer_state();
            // A fresh sender handle has read no ack yet (`QueueSender::attach`).
            let mut acked = 0;
            let _ = send(&c4, &mut st, &mut sent, &mut acked);
            (st, sent, acked)
        });
        let _ = take(&c, &mut rst, &mut got);
        let mut mst = restarted.join().unwrap();
        let (mut sst, mut sent, mut acked) = sender.join().unwrap();

        // The rest, sequentially.
        let peek_head = AtomicU64::new(0);
        let v = c.manager(&peek_head);
        // (A manager continuing: its peek word is where its state says.)
        peek_head.store(c.tx_head.load(Ordering::Relaxed), Ordering::Relaxed);
        while got.len() < N as usize {
            let moved = matches!(v.move_one(&mut mst, &mut buf), QueueMove::Moved(_));
            let progress =
                send(&c, &mut sst, &mut sent, &mut acked) | moved | take(&c, &mut rst, &mut got);
            assert!(progress, "stuck with {got:?} received, {sent} sent");
        }
        assert_eq!(
            got,
            (1..=N).collect::<Vec<_>>(),
            "lost, duplicated or reordered"
        );
    });
}

#[test]
fn queue_manager_killed_after_its_copy() {
    crash_model(0, Crash::Peeked);
}

#[test]
fn queue_manager_killed_between_rx_publish_and_tx_commit() {
    crash_model(0, Crash::Delivered);
}

#[test]
fn queue_manager_killed_mid_move_after_a_whole_move() {
    crash_model(1, Crash::Delivered);
}
