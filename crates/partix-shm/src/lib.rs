//! Shared-memory building blocks for partix.
//!
//! - [`region`]: a memfd-backed shared region, created by one process and mapped by others
//!   (read-write or read-only) from an inherited file descriptor.
//! - [`futex`]: wait/wake on a 32-bit word in shared memory (process-shared futexes).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod futex;
pub mod region;

pub use region::{Access, Region, RegionError};
