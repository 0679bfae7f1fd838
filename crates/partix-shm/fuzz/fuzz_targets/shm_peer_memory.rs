//! Fuzz what a partition reads from shared memory another partition writes: the one-sided queuing
//! ring (consumer), the one-sided sampling slot (reader), and both two-sided channels (the
//! network manager reads the source's TX area; the destination reads the RX area the manager
//! fills). A broken or hostile peer can write any bytes there; the reading side must answer with
//! an error (empty, corrupt, contended, too small) and never panic, loop forever or return more
//! bytes than the caller's buffer or the channel's maximum.
//!
//! Input: byte 0 selects the channel (low 2 bits) and whether the header is overwritten too
//! (bit 2; otherwise the bytes land after the first header line, so the area still opens and the
//! counters, flags, lengths and payloads are what is fuzzed); byte 1 sizes the receive buffer;
//! the rest is written over the area (and, for the two-sided channels, alternately over TX and
//! RX). The two-sided queue case also has the source look at the note the destination writes in
//! the space notifier.
#![no_main]

use libfuzzer_sys::fuzz_target;
use partix_shm::region::Region;
use partix_shm::ring::{RingConsumer, RingLayout};
use partix_shm::sampling::{SamplingLayout, SamplingReader, SamplingWriter};
use partix_shm::twoqueue::{QueueManager, QueueReceiver, QueueSenderProbe, QueueShape};
use partix_shm::twosided::{NetworkManager, RingShape, TwoSidedReceiver, TwoSidedSender};
use std::sync::Arc;
use std::time::Duration;

/// The channels' maximum message size.
const MAX: usize = 64;

fn region(len: usize) -> Arc<Region> {
    Arc::new(Region::create("partix-fuzz", len).expect("memfd region"))
}

/// Write `bytes` over `r` from `start` (clipped to the region).
fn scribble(r: &Region, start: usize, bytes: &[u8]) {
    let n = bytes.len().min(r.len().saturating_sub(start));
    // SAFETY: the region is mapped read-write for `r.len()` bytes; nothing else uses it (the
    // readers below run on this thread, after the write).
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), r.as_ptr().add(start), n) };
}

fn start_of(keep_header: bool) -> usize {
    if keep_header {
        64
    } else {
        0
    }
}

fn check_len(n: usize, buf: &[u8]) {
    assert!(
        n <= buf.len() && n <= MAX,
        "returned {n} bytes into {}",
        buf.len()
    );
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (sel, keep_header) = (data[0] & 3, data[0] & 4 == 0);
    let mut buf = vec![0u8; usize::from(data[1]) % (MAX + 16)];
    let body = &data[2..];
    let start = start_of(keep_header);
    match sel {
        0 => {
            let layout = RingLayout::new(8, MAX as u32).expect("layout");
            let r = region(layout.size_bytes());
            layout.init(&r, 0).expect("init");
            scribble(&r, start, body);
            let Ok(mut c) = RingConsumer::attach(r, 0) else {
                return;
            };
            for i in 0..20u64 {
                // Any stamp is some time: the look at it never fails.
                let _ = c.sent_by(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                if let Ok(n) = c.try_pop(&mut buf) {
                    check_len(n, &buf);
                }
            }
            let mut out = vec![0u8; 4 * MAX];
            let mut lens = [0usize; 4];
            if let Ok(k) = c.try_pop_many(&mut out, MAX, &mut lens) {
                assert!(k <= 4);
                assert!(lens[..k].iter().all(|&l| l <= MAX));
            }
            let _ = c.len();
            c.clear();
            let _ = c.try_pop(&mut buf);
        }
        1 => {
            // Both slot shapes: a compact one (the whole message in one line) and one with
            // `end` in a line of its own.
            let max = if data[0] & 8 == 0 { MAX } else { 16 };
            let layout = SamplingLayout::new(max as u32).expect("layout");
            let r = region(layout.size_bytes());
            drop(SamplingWriter::init(r.clone(), 0, layout).expect("init"));
            scribble(&r, start, body);
            let Ok(rd) = SamplingReader::attach(r, 0) else {
                return;
            };
            for _ in 0..3 {
                if let Ok(ok) = rd.read(&mut buf) {
                    check_len(ok.len, &buf);
                }
            }
        }
        2 => {
            let shape = RingShape::new(MAX as u32, 4).expect("shape");
            let (tx, rx) = (region(shape.tx_size_bytes()), region(shape.rx_size_bytes()));
            drop(TwoSidedSender::init(tx.clone(), 0, shape).expect("init tx"));
            drop(TwoSidedReceiver::init(rx.clone(), 0, shape).expect("init rx"));
            let (a, b) = body.split_at(body.len() / 2);
            scribble(&tx, start, a);
            let Ok(mut m) = NetworkManager::attach(tx, 0, rx.clone(), 0) else {
                return;
            };
            for _ in 0..6 {
                let _ = m.run_once();
            }
            let _ = m.stats();
            scribble(&rx, start, b);
            let Ok(mut d) = TwoSidedReceiver::attach(rx, 0) else {
                return;
            };
            for _ in 0..3 {
                if let Ok(ok) = d.read(&mut buf) {
                    check_len(ok.len, &buf);
                }
            }
        }
        _ => {
            let shape = QueueShape::new(MAX as u32, 4).expect("shape");
            let (tx, rx) = (region(shape.tx_size_bytes()), region(shape.rx_size_bytes()));
            shape.init(&tx, &rx).expect("init");
            let (a, b) = body.split_at(body.len() / 2);
            scribble(&tx, start, a);
            // The source's look at the space notifier's note (the destination writes it): any
            // head answers, reading no time past the note's.
            if let Ok(p) = QueueSenderProbe::attach(tx.clone(), 4) {
                for room in [0, 1, 4, 5, 1 << 39, u64::MAX] {
                    let _ = p.space().noted_after(room, Duration::ZERO);
                }
            }
            let Ok(mut m) = QueueManager::attach(tx.clone(), rx.clone()) else {
                return;
            };
            for _ in 0..6 {
                let _ = m.run_once();
            }
            let _ = (m.moved(), m.recovered(), m.undelivered(), m.has_work());
            scribble(&rx, start, b);
            let Ok(mut d) = QueueReceiver::attach(tx, rx) else {
                return;
            };
            for _ in 0..8 {
                if let Ok(n) = d.try_recv(&mut buf) {
                    check_len(n, &buf);
                }
            }
            let _ = d.len();
            d.clear();
        }
    }
});
