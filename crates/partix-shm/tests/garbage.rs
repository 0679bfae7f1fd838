//! Bad input never panics: every handle attached to (or reading from) a region full of garbage —
//! with valid or invalid headers — returns errors or garbage-free results, never panics.
#![cfg(not(loom))]

use partix_shm::ring::{RingConsumer, RingLayout, RingProducer};
use partix_shm::sampling::{SamplingLayout, SamplingReader, SamplingWriter};
use partix_shm::twosided::{NetworkManager, RingShape, TwoSidedReceiver, TwoSidedSender};
use partix_shm::Region;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const LEN: usize = 1 << 16;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn words(r: &Region) -> &[AtomicU64] {
    // The region is LEN bytes, page-aligned, and only accessed atomically here.
    let p = r.as_ptr().cast::<AtomicU64>();
    #[allow(unsafe_code)]
    // SAFETY: LEN / 8 aligned u64 words lie inside the mapping, which lives as long as `r`.
    unsafe {
        std::slice::from_raw_parts(p, LEN / 8)
    }
}

/// Overwrite `n` random words among the first `bytes` of the region with random values (small
/// values half the time, so lengths and counters are sometimes plausible).
fn scribble(r: &Region, bytes: usize, rng: &mut Rng, n: usize, skip_header: bool) {
    let w = &words(r)[..bytes / 8];
    for _ in 0..n {
        let i = (rng.next() as usize) % w.len();
        if skip_header && i < 8 {
            continue;
        }
        let v = if rng.next().is_multiple_of(2) {
            rng.next() % 300
        } else {
            rng.next()
        };
        w[i].store(v, Ordering::Relaxed);
    }
}

#[test]
fn sampling_reader_survives_garbage() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut buf = vec![0u8; 512];
    for round in 0..3000 {
        let r = Arc::new(Region::create("partix-shm-garbage", LEN).unwrap());
        let layout = SamplingLayout::new(200).unwrap();
        SamplingWriter::init(r.clone(), 0, layout).unwrap();
        // Later rounds also corrupt the header.
        scribble(
            &r,
            layout.size_bytes(),
            &mut rng,
            1 + round % 4,
            round < 1500,
        );
        if let Ok(rd) = SamplingReader::attach(r.clone(), 0) {
            let _ = rd.read(&mut buf);
            let _ = rd.read(&mut buf[..3]);
            let _ = rd.latest_seq();
            let _ = rd.write_in_progress();
        }
        if let Ok(mut w) = SamplingWriter::attach(r.clone(), 0) {
            let _ = w.write(b"still works");
        }
    }
}

#[test]
fn ring_consumer_survives_garbage() {
    let mut rng = Rng(0x0bad_cafe_f00d_1234);
    let mut buf = vec![0u8; 64];
    for round in 0..3000 {
        let r = Arc::new(Region::create("partix-shm-garbage", LEN).unwrap());
        let layout = RingLayout::new(8, 40).unwrap();
        layout.init(&r, 0).unwrap();
        scribble(
            &r,
            layout.size_bytes(),
            &mut rng,
            1 + round % 4,
            round < 1500,
        );
        if let Ok(mut c) = RingConsumer::attach(r.clone(), 0) {
            for _ in 0..12 {
                let _ = c.try_pop(&mut buf);
            }
            let _ = c.len();
            c.clear();
        }
        if let Ok(mut p) = RingProducer::attach(r.clone(), 0) {
            for _ in 0..12 {
                let _ = p.try_push(b"x");
            }
        }
    }
}

#[test]
fn two_sided_survives_garbage() {
    let mut rng = Rng(0x5eed_5eed_5eed_5eed);
    let shape = RingShape::new(48, 4).unwrap();
    let mut buf = vec![0u8; 64];
    for round in 0..3000 {
        let tx = Arc::new(Region::create("partix-shm-garbage-tx", LEN).unwrap());
        let rx = Arc::new(Region::create("partix-shm-garbage-rx", LEN).unwrap());
        let mut s = TwoSidedSender::init(tx.clone(), 0, shape).unwrap();
        TwoSidedReceiver::init(rx.clone(), 0, shape).unwrap();
        let _ = s.write(b"before");
        scribble(
            &tx,
            shape.tx_size_bytes(),
            &mut rng,
            1 + round % 3,
            round < 1500,
        );
        scribble(
            &rx,
            shape.rx_size_bytes(),
            &mut rng,
            1 + round % 3,
            round < 1500,
        );
        if let Ok(mut m) = NetworkManager::attach(tx.clone(), 0, rx.clone(), 0) {
            let _ = m.run_once();
            let _ = m.stats();
        }
        if let Ok(mut r) = TwoSidedReceiver::attach(rx.clone(), 0) {
            let _ = r.read(&mut buf);
            let _ = r.read(&mut buf[..2]);
        }
        if let Ok(mut s) = TwoSidedSender::attach(tx.clone(), 0) {
            let _ = s.write(b"after");
        }
    }
}
