//! partix runtime: the module executive and the partition-side runtime.
#![warn(missing_docs)]

pub mod state;
