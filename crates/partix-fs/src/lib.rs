//! Remote file and device access over raw Ethernet frames.
#![warn(missing_docs)]

pub mod cli;
