//! partix runtime: the module executive and the partition-side runtime.
//!
//! - [`state`]: the module state in shared memory, the contract between both sides.
//! - [`attach`]: the partition side's mapping of that state (or a standalone one).
#![warn(missing_docs)]

pub mod attach;
pub mod state;
