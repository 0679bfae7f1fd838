//! partix frame formats (smoltcp-style Packet/Repr pairs).
//!
//! - [`ethernet`]: a zero-copy view of an Ethernet II header.
//! - [`fs`]: the remote file/device protocol (header, opcodes, one Packet/Repr pair per message).
//!
//! Every `new_checked` validates lengths once; after it succeeds no accessor panics. Every `parse`
//! returns [`WireError`] on truncated or malformed input and never panics.
#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod ethernet;
pub mod fs;

/// A byte range of a field inside a buffer.
pub type Field = core::ops::Range<usize>;
/// A field that runs from an offset to the end of the buffer.
pub type Rest = core::ops::RangeFrom<usize>;

/// Failure of a `new_checked` or `parse`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// The buffer is shorter than the fixed part or a declared length.
    Truncated,
    /// A field holds a value the format does not allow (missing NUL, wrong opcode, ...).
    Malformed,
    /// The emit buffer is too small for the representation.
    BufferTooSmall,
}

impl core::fmt::Display for WireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WireError::Truncated => f.write_str("truncated frame"),
            WireError::Malformed => f.write_str("malformed frame"),
            WireError::BufferTooSmall => f.write_str("emit buffer too small"),
        }
    }
}

pub(crate) fn get_u16(b: &[u8], f: Field) -> u16 {
    let s = &b[f];
    u16::from_be_bytes([s[0], s[1]])
}

pub(crate) fn get_u32(b: &[u8], f: Field) -> u32 {
    let s = &b[f];
    u32::from_be_bytes([s[0], s[1], s[2], s[3]])
}

pub(crate) fn get_u64(b: &[u8], f: Field) -> u64 {
    let s = &b[f];
    let mut a = [0u8; 8];
    a.copy_from_slice(&s[..8]);
    u64::from_be_bytes(a)
}

pub(crate) fn put_u16(b: &mut [u8], f: Field, v: u16) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_u32(b: &mut [u8], f: Field, v: u32) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_u64(b: &mut [u8], f: Field, v: u64) {
    b[f].copy_from_slice(&v.to_be_bytes());
}
