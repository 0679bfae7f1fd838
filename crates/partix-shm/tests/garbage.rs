//! Bad input never panics: every handle attached to (or reading from) a region full of garbage —
//! with valid or invalid headers — returns errors or results within bounds, never panics. A
//! length returned is at least 1 and fits both the caller's buffer and the maximum the handle
//! was attached with; a length a too-short buffer is refused for exceeds that buffer. The bytes
//! of a message read from garbage are not checked (garbage in a payload is a valid message),
//! except that a sampling slot a writer still attaches to and writes returns that message, byte
//! for byte.
#![cfg(not(loom))]

use partix_shm::ring::{PopError, RingConsumer, RingLayout, RingProducer};
use partix_shm::sampling::{ReadError, SamplingLayout, SamplingReader, SamplingWriter};
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
        // A message before the garbage (also for the slot's header to describe a full slot).
        let _ = SamplingWriter::init(r.clone(), 0, layout)
            .unwrap()
            .write(b"before the garbage");
        // Later rounds also corrupt the header.
        scribble(
            &r,
            layout.size_bytes(),
            &mut rng,
            1 + round % 4,
            round < 1500,
        );
        if let Ok(rd) = SamplingReader::attach(r.clone(), 0) {
            let max = rd.max_message_size() as usize;
            if let Ok(ok) = rd.read(&mut buf) {
                assert!(
                    (1..=max.min(buf.len())).contains(&ok.len),
                    "round {round}: {ok:?}"
                );
            }
            match rd.read(&mut buf[..3]) {
                Ok(ok) => assert!((1..=3).contains(&ok.len), "round {round}: {ok:?}"),
                Err(ReadError::BufferTooSmall { needed }) => {
                    assert!(needed > 3 && needed <= max, "round {round}: needs {needed}")
                }
                Err(_) => {}
            }
            let _ = rd.latest_seq();
            let _ = rd.write_in_progress();
        }
        if let Ok(mut w) = SamplingWriter::attach(r.clone(), 0) {
            if w.write(b"still works").is_ok() {
                let rd = SamplingReader::attach(r.clone(), 0).expect("the writer attached");
                let ok = rd.read(&mut buf);
                assert!(
                    matches!(ok, Ok(ok) if &buf[..ok.len] == b"still works"),
                    "round {round}: read after a write: {ok:?}"
                );
            }
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
            let max = c.max_message_size() as usize;
            for _ in 0..12 {
                match c.try_pop(&mut buf) {
                    Ok(n) => assert!((1..=max.min(buf.len())).contains(&n), "round {round}: {n}"),
                    Err(PopError::BufferTooSmall { needed }) => {
                        assert!(needed > buf.len(), "round {round}: needs {needed}")
                    }
                    Err(_) => {}
                }
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
            // The largest message is the slot capacity of the receiver's (maybe scribbled)
            // header; the buffer holds 64 bytes.
            // While the header is intact (the first 1500 rounds), that is the shape's 48 bytes
            // (the bound was the buffer's only; found by review).
            let max = if round < 1500 { 48 } else { buf.len() };
            if let Ok(ok) = r.read(&mut buf) {
                assert!((1..=max).contains(&ok.len), "round {round}: {ok:?}");
            }
            match r.read(&mut buf[..2]) {
                Ok(ok) => assert!((1..=2).contains(&ok.len), "round {round}: {ok:?}"),
                Err(ReadError::BufferTooSmall { needed }) => {
                    assert!(needed > 2, "round {round}: needs {needed}")
                }
                Err(_) => {}
            }
        }
        if let Ok(mut s) = TwoSidedSender::attach(tx.clone(), 0) {
            let _ = s.write(b"after");
        }
    }
}
