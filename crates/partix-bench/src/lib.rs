//! partix measurements.
#![warn(missing_docs)]

pub mod cli;
