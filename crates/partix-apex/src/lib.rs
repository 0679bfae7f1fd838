//! The APEX API for partition code.
//!
//! Rust partitions use the items re-exported at the root of this crate: the idiomatic APEX API of
//! `partix_runtime::partition` (processes, time, partition modes, health monitor), where every
//! service returns `ApexResult<T>` and ids are newtypes (`ProcessId`, `ScheduleId`). See
//! `docs/apex.md` for the process model, the priority mapping and the standalone mode.
#![warn(missing_docs)]
#![deny(unsafe_code)]

pub use partix_runtime::partition::*;

pub mod c_headers;
// The C ABI (`#[no_mangle] extern "C"` services of include/arinc653/*.h). Private: its functions
// take raw pointers from C and are not meant to be called from Rust (use the API above).
mod ffi;
