//! partix frame formats (smoltcp-style Packet/Repr pairs).
#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]
