//! Shared-memory building blocks for partix.
//!
//! - [`region`]: a memfd-backed shared region, created by one process and mapped by others
//!   (read-write or read-only) from an inherited file descriptor.
//! - [`futex`]: wait/wake on a 32-bit word in shared memory (process-shared futexes).
//! - [`sampling`]: the one-sided sampling slot (begin/end flags, seqlock-style reads, the reader
//!   never writes).
//! - [`ring`]: a single-producer single-consumer queue of fixed-size slots (one-sided queuing).
//! - [`twosided`]: the two-sided design: TX ring, RX ring, and an event-driven
//!   [`twosided::NetworkManager`] with cumulative acknowledgements.
//! - [`twoqueue`]: the two-sided design for queuing channels (TX ring, manager, RX ring,
//!   cumulative acknowledgements as credits).
//! - [`notifier`]: wake-ups for parked receivers and the [`RecvMode`] wait strategies.
//! - [`barrier`]: asymmetric store-load barriers (a compiler fence on the message path, a
//!   `membarrier(2)` on the side about to sleep).
//! - [`bias`]: the protocol of a lock biased to one thread (the port lock's fast path and its
//!   revocation).
//! - [`sync`]: the atomics the algorithms use (`std`, or `loom` under `--cfg loom`).
//!
//! The memory-level algorithms are written against [`sync`] views of atomic words
//! ([`sampling::SlotView`], [`ring::RingView`], [`twosided::TxView`], [`twosided::RxView`]) so
//! the loom models in `tests/loom.rs` check the same code that runs over shared memory. See
//! `docs/shm-channels.md` for the layouts and ordering proofs.
//!
//! # Example: a one-sided sampling slot
//! ```
//! use partix_shm::sampling::{SamplingLayout, SamplingReader, SamplingWriter};
//! use partix_shm::Region;
//! use std::sync::Arc;
//!
//! let layout = SamplingLayout::new(64).unwrap();
//! let region = Arc::new(Region::create("doc-slot", layout.size_bytes()).unwrap());
//! let mut writer = SamplingWriter::init(region.clone(), 0, layout).unwrap();
//! // In another process: map the memfd read-only and attach a reader.
//! let reader = SamplingReader::attach(region, 0).unwrap();
//! writer.write(b"altitude 1200").unwrap();
//! writer.write(b"altitude 1210").unwrap();
//! let mut buf = [0u8; 64];
//! let ok = reader.read(&mut buf).unwrap();
//! assert_eq!(&buf[..ok.len], b"altitude 1210"); // only the latest message is kept
//! assert_eq!(ok.seq, 2);
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod sync;

pub mod barrier;
pub mod bias;

pub mod ring;
pub mod sampling;
pub mod twosided;

#[cfg(not(loom))]
mod area;
#[cfg(not(loom))]
pub mod clock;
#[cfg(not(loom))]
pub mod futex;
pub mod notifier;
#[cfg(not(loom))]
pub mod region;
#[cfg(not(loom))]
pub mod twoqueue;

#[cfg(all(test, not(loom)))]
mod test_util;

#[cfg(not(loom))]
pub use area::{AreaError, Words};
#[cfg(not(loom))]
pub use notifier::{Note, Notifier, RecvMode};
#[cfg(not(loom))]
pub use region::{Access, Region, RegionError};
