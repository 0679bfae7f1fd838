//! partix measurements: every benchmark prints HdrHistogram percentiles through [`report`] and
//! compares against a raw baseline measured in the same run.
#![warn(missing_docs)]

pub mod apex;
pub mod cli;
pub mod fs;
pub mod raw;
pub mod report;
pub mod restart;
pub mod rtt;
pub mod rttpeer;
pub mod sched;
pub mod startup;
