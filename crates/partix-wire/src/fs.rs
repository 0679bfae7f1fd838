//! The remote file/device protocol: one message per Ethernet frame (or UDP datagram).
//!
//! Every message starts with the 6-byte header of Usher and Audsley's file protocol: a 16-bit
//! opcode and a 32-bit tag (big-endian). After a 14-byte Ethernet header the opcode ends on a
//! 32-bit boundary, so every following field is aligned. The body depends on the opcode; each body
//! has a zero-copy view (`XxxPacket`) and a high-level representation (`XxxRepr`) with
//! `parse`/`emit`/`buffer_len`. [`MessageRepr`] ties header and body together.
//!
//! Variable-length data always carries an explicit length (paths are NUL-terminated as in the
//! paper), so the zero padding of short Ethernet frames is never mistaken for data.
//!
//! ```
//! use partix_wire::fs::{BodyRepr, FsPacket, MessageRepr, ReadRepr};
//! let msg = MessageRepr { tag: 7, body: BodyRepr::Read(ReadRepr { fd: 3, len: 1024, offset: Some(0) }) };
//! let mut buf = [0u8; 64];
//! let n = msg.emit(&mut buf).unwrap();
//! let pkt = FsPacket::new_checked(&buf[..n]).unwrap();
//! assert_eq!(MessageRepr::parse(&pkt).unwrap(), msg);
//! ```

use crate::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64, Field, Rest, WireError};

/// EtherType of the protocol (IEEE 802 local experimental EtherType 1).
pub const ETHERTYPE: u16 = 0x88b5;
/// Protocol version carried in [`VersionRepr`].
pub const PROTOCOL_VERSION: u16 = 1;
/// Length of the message header (opcode + tag).
pub const HEADER_LEN: usize = 6;
/// Default maximum message size: an Ethernet payload of a 1500-byte MTU.
pub const DEFAULT_MSIZE: u32 = 1500;
/// Smallest maximum message size a peer may negotiate.
pub const MIN_MSIZE: u32 = 64;
/// Bits of a tag that carry the session's channel (the rest is the sequence number).
pub const TAG_CHANNEL_SHIFT: u32 = 24;
/// Mask of a tag's sequence number.
pub const TAG_SEQ_MASK: u32 = (1 << TAG_CHANNEL_SHIFT) - 1;
/// Offset value meaning "the file's current position" (plain `read`/`write`, for devices).
pub const OFFSET_CURRENT: u64 = u64::MAX;

/// Message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// Close a file descriptor.
    Close,
    /// Open a path.
    Open,
    /// Read from a descriptor.
    Read,
    /// Reply to any request.
    Reply,
    /// Write to a descriptor (or stage part of an atomic write).
    Write,
    /// Version and message-size handshake; resets the client's session.
    Version,
    /// Attributes of a path.
    Stat,
    /// Entries of a directory.
    Readdir,
    /// Cancel an outstanding request.
    Flush,
    /// Apply (or abort) a staged atomic write.
    Commit,
    /// An opcode this implementation does not know (kept for the error reply).
    Unknown(u16),
}

impl Opcode {
    /// Number of known opcodes; known opcodes are `0..COUNT`.
    pub const COUNT: usize = 10;

    /// Return the index of a known opcode in a dispatch table, `None` for unknown ones.
    pub fn index(self) -> Option<usize> {
        match self {
            Opcode::Unknown(_) => None,
            o => Some(u16::from(o) as usize),
        }
    }
}

impl From<u16> for Opcode {
    fn from(v: u16) -> Opcode {
        match v {
            0 => Opcode::Close,
            1 => Opcode::Open,
            2 => Opcode::Read,
            3 => Opcode::Reply,
            4 => Opcode::Write,
            5 => Opcode::Version,
            6 => Opcode::Stat,
            7 => Opcode::Readdir,
            8 => Opcode::Flush,
            9 => Opcode::Commit,
            x => Opcode::Unknown(x),
        }
    }
}

impl From<Opcode> for u16 {
    fn from(o: Opcode) -> u16 {
        match o {
            Opcode::Close => 0,
            Opcode::Open => 1,
            Opcode::Read => 2,
            Opcode::Reply => 3,
            Opcode::Write => 4,
            Opcode::Version => 5,
            Opcode::Stat => 6,
            Opcode::Readdir => 7,
            Opcode::Flush => 8,
            Opcode::Commit => 9,
            Opcode::Unknown(x) => x,
        }
    }
}

/// Error code of a reply: a Linux errno value (0 = success). Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub u32);

impl ErrorCode {
    /// Success.
    pub const OK: ErrorCode = ErrorCode(0);
    /// Operation not permitted.
    pub const PERM: ErrorCode = ErrorCode(1);
    /// No such file or directory.
    pub const NOENT: ErrorCode = ErrorCode(2);
    /// I/O error.
    pub const IO: ErrorCode = ErrorCode(5);
    /// Bad file descriptor (not open in this client's table).
    pub const BADF: ErrorCode = ErrorCode(9);
    /// Resource temporarily unavailable.
    pub const AGAIN: ErrorCode = ErrorCode(11);
    /// Permission denied.
    pub const ACCES: ErrorCode = ErrorCode(13);
    /// Server busy: the client table is full.
    pub const BUSY: ErrorCode = ErrorCode(16);
    /// File exists.
    pub const EXIST: ErrorCode = ErrorCode(17);
    /// The path escapes the exported root (`..`, absolute path or symlink pointing out).
    pub const XDEV: ErrorCode = ErrorCode(18);
    /// Not a directory.
    pub const NOTDIR: ErrorCode = ErrorCode(20);
    /// Is a directory.
    pub const ISDIR: ErrorCode = ErrorCode(21);
    /// Invalid argument (bad flags, malformed body).
    pub const INVAL: ErrorCode = ErrorCode(22);
    /// Too many open files in this client's table.
    pub const MFILE: ErrorCode = ErrorCode(24);
    /// File too large (atomic write larger than the staging limit).
    pub const FBIG: ErrorCode = ErrorCode(27);
    /// Illegal seek.
    pub const SPIPE: ErrorCode = ErrorCode(29);
    /// Name too long.
    pub const NAMETOOLONG: ErrorCode = ErrorCode(36);
    /// Function not implemented (unknown opcode).
    pub const NOSYS: ErrorCode = ErrorCode(38);
    /// Protocol error (malformed body, reply sent to the server).
    pub const PROTO: ErrorCode = ErrorCode(71);
    /// Message too long (larger than the negotiated msize).
    pub const MSGSIZE: ErrorCode = ErrorCode(90);
    /// No buffer space: the session's or the server's staging budget for atomic writes is
    /// spent.
    pub const NOBUFS: ErrorCode = ErrorCode(105);
    /// No session: the client did not start with a Version handshake.
    pub const NOTCONN: ErrorCode = ErrorCode(107);
    /// Operation now in progress: an interim reply, never the final one. A retransmission of a
    /// request the server holds parked (a blocking read with no data, a blocking write with no
    /// room) gets it, uncached, so the client keeps waiting instead of giving up on a request
    /// that was not lost. The server never passes a system call's `EINPROGRESS` on as a final
    /// reply (it sends `IO` instead).
    pub const INPROGRESS: ErrorCode = ErrorCode(115);
    /// Operation canceled (by a Flush).
    pub const CANCELED: ErrorCode = ErrorCode(125);

    /// Return whether this code means success.
    pub fn is_ok(self) -> bool {
        self.0 == 0
    }
}

mod field {
    use super::{Field, Rest};
    pub const OPCODE: Field = 0..2;
    pub const TAG: Field = 2..6;
    pub const BODY: Rest = 6..;
}

/// A zero-copy view of a whole message (header + body).
#[derive(Debug, Clone)]
pub struct FsPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> FsPacket<T> {
    /// Wrap `buffer` without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        FsPacket { buffer }
    }

    /// Wrap `buffer`, checking that the header is whole.
    ///
    /// # Errors
    /// [`WireError::Truncated`] when shorter than [`HEADER_LEN`].
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(FsPacket { buffer })
    }

    /// Return the opcode.
    pub fn opcode(&self) -> Opcode {
        Opcode::from(get_u16(self.buffer.as_ref(), field::OPCODE))
    }

    /// Return the tag.
    pub fn tag(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::TAG)
    }

    /// Return the body.
    pub fn body(&self) -> &[u8] {
        &self.buffer.as_ref()[field::BODY]
    }

    /// Return the inner buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> FsPacket<T> {
    /// Set the opcode.
    pub fn set_opcode(&mut self, o: Opcode) {
        put_u16(self.buffer.as_mut(), field::OPCODE, o.into());
    }

    /// Set the tag.
    pub fn set_tag(&mut self, t: u32) {
        put_u32(self.buffer.as_mut(), field::TAG, t);
    }

    /// Return the body, mutably.
    pub fn body_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::BODY]
    }
}

/// Return the bytes up to the first NUL, or `Malformed` when there is none.
fn nul_terminated(b: &[u8]) -> Result<&[u8], WireError> {
    match b.iter().position(|&c| c == 0) {
        Some(n) => Ok(&b[..n]),
        None => Err(WireError::Truncated),
    }
}

fn check_len(b: &[u8], min: usize) -> Result<(), WireError> {
    if b.len() < min {
        Err(WireError::Truncated)
    } else {
        Ok(())
    }
}

fn emit_path(dst: &mut [u8], path: &[u8]) -> Result<(), WireError> {
    if path.contains(&0) {
        return Err(WireError::Malformed);
    }
    if dst.len() < path.len() + 1 {
        return Err(WireError::BufferTooSmall);
    }
    dst[..path.len()].copy_from_slice(path);
    dst[path.len()] = 0;
    Ok(())
}

/// Define a fixed-layout body view with `new_checked` and the listed getters/setters.
macro_rules! fixed_body {
    ($(#[$m:meta])* $name:ident, $len:expr, { $($(#[$fm:meta])* $get:ident / $set:ident : $ty:ident @ $range:expr),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        #[allow(clippy::len_without_is_empty)]
        impl<T: AsRef<[u8]>> $name<T> {
            /// Length of the fixed part of this body.
            pub const FIXED_LEN: usize = $len;

            /// Wrap `buffer` without checking it.
            pub const fn new_unchecked(buffer: T) -> Self {
                $name { buffer }
            }

            /// Wrap `buffer`, checking that the fixed part is whole.
            ///
            /// # Errors
            /// [`WireError::Truncated`] when shorter than the fixed part.
            pub fn new_checked(buffer: T) -> Result<Self, WireError> {
                check_len(buffer.as_ref(), $len)?;
                Ok($name { buffer })
            }

            /// Return the inner buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            $(
                $(#[$fm])*
                pub fn $get(&self) -> $ty {
                    fixed_body!(@get $ty, self.buffer.as_ref(), $range)
                }
            )*
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $name<T> {
            $(
                /// Set the field of the same name.
                pub fn $set(&mut self, v: $ty) {
                    fixed_body!(@put $ty, self.buffer.as_mut(), $range, v)
                }
            )*
        }
    };
    (@get u16, $b:expr, $r:expr) => { get_u16($b, $r) };
    (@get u32, $b:expr, $r:expr) => { get_u32($b, $r) };
    (@get u64, $b:expr, $r:expr) => { get_u64($b, $r) };
    (@put u16, $b:expr, $r:expr, $v:expr) => { put_u16($b, $r, $v) };
    (@put u32, $b:expr, $r:expr, $v:expr) => { put_u32($b, $r, $v) };
    (@put u64, $b:expr, $r:expr, $v:expr) => { put_u64($b, $r, $v) };
}

mod version_field {
    use super::Field;
    pub const VERSION: Field = 0..2;
    pub const CHANNEL: Field = 2..4;
    pub const MSIZE: Field = 4..8;
    pub const OUTSTANDING: Field = 8..12;
    pub const MAX_FDS: Field = 12..16;
}

fixed_body!(
    /// Body of a Version request, and data of its reply: the negotiated parameters.
    VersionPacket, 16, {
    /// Return the protocol version.
    version / set_version: u16 @ version_field::VERSION,
    /// Return the channel (request: 0; reply: the channel the server assigned).
    channel / set_channel: u16 @ version_field::CHANNEL,
    /// Return the maximum message size in bytes (header included).
    msize / set_msize: u32 @ version_field::MSIZE,
    /// Return the maximum number of outstanding requests.
    outstanding / set_outstanding: u32 @ version_field::OUTSTANDING,
    /// Return the maximum number of open descriptors per client.
    max_fds / set_max_fds: u32 @ version_field::MAX_FDS,
});

/// Version handshake parameters (request body and reply data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRepr {
    /// Protocol version ([`PROTOCOL_VERSION`]).
    pub version: u16,
    /// Channel: 0 in a request; in the reply, the channel the server assigned to this session.
    /// The client puts it in the top 8 bits of every later tag, so several clients behind one
    /// MAC address have separate sessions.
    pub channel: u16,
    /// Maximum message size (header included) the sender can handle.
    pub msize: u32,
    /// Maximum outstanding requests (client: wish; server: granted cap).
    pub outstanding: u32,
    /// Maximum open descriptors per client (client: 0; server: the limit).
    pub max_fds: u32,
}

impl VersionRepr {
    /// Parse a body.
    ///
    /// # Errors
    /// [`WireError::Malformed`] when `msize` is below [`MIN_MSIZE`] or `outstanding` is 0.
    pub fn parse<T: AsRef<[u8]>>(p: &VersionPacket<T>) -> Result<Self, WireError> {
        if p.msize() < MIN_MSIZE || p.outstanding() == 0 || p.channel() > 0xff {
            return Err(WireError::Malformed);
        }
        Ok(VersionRepr {
            version: p.version(),
            channel: p.channel(),
            msize: p.msize(),
            outstanding: p.outstanding(),
            max_fds: p.max_fds(),
        })
    }

    /// Return the body length.
    pub fn buffer_len(&self) -> usize {
        16
    }

    /// Emit into a checked body view.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut VersionPacket<T>) {
        p.set_version(self.version);
        p.set_channel(self.channel);
        p.set_msize(self.msize);
        p.set_outstanding(self.outstanding);
        p.set_max_fds(self.max_fds);
    }
}

mod open_field {
    use super::{Field, Rest};
    pub const FLAGS: Field = 0..4;
    pub const MODE: Field = 4..8;
    pub const PATH: Rest = 8..;
}

/// Open flags (Linux values; the server accepts only these bits).
pub mod open_flags {
    /// Read only.
    pub const RDONLY: u32 = 0;
    /// Write only.
    pub const WRONLY: u32 = 1;
    /// Read and write.
    pub const RDWR: u32 = 2;
    /// Access mode mask.
    pub const ACCMODE: u32 = 3;
    /// Create if missing.
    pub const CREAT: u32 = 0o100;
    /// Fail if it exists (with CREAT).
    pub const EXCL: u32 = 0o200;
    /// Truncate to zero length.
    pub const TRUNC: u32 = 0o1000;
    /// Append on each write.
    pub const APPEND: u32 = 0o2000;
    /// Never wait: a read with no data fails with AGAIN instead of waiting on the server.
    pub const NONBLOCK: u32 = 0o4000;
    /// Must be a directory.
    pub const DIRECTORY: u32 = 0o200000;
    /// Every bit the server accepts.
    pub const ALLOWED: u32 = ACCMODE | CREAT | EXCL | TRUNC | APPEND | NONBLOCK | DIRECTORY;
}

/// A zero-copy view of an Open body: flags, mode, NUL-terminated path.
#[derive(Debug, Clone)]
pub struct OpenPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> OpenPacket<T> {
    /// Wrap `buffer`, checking the fixed part and the path's NUL terminator.
    ///
    /// # Errors
    /// [`WireError::Truncated`] when too short or the path has no NUL.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        check_len(buffer.as_ref(), open_field::PATH.start)?;
        nul_terminated(&buffer.as_ref()[open_field::PATH])?;
        Ok(OpenPacket { buffer })
    }

    /// Return the open flags ([`open_flags`]).
    pub fn flags(&self) -> u32 {
        get_u32(self.buffer.as_ref(), open_field::FLAGS)
    }

    /// Return the creation mode.
    pub fn mode(&self) -> u32 {
        get_u32(self.buffer.as_ref(), open_field::MODE)
    }

    /// Return the path bytes (without the NUL).
    pub fn path(&self) -> &[u8] {
        nul_terminated(&self.buffer.as_ref()[open_field::PATH]).unwrap_or(&[])
    }
}

/// An Open request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenRepr<'a> {
    /// Open flags ([`open_flags`]).
    pub flags: u32,
    /// Creation mode (permission bits).
    pub mode: u32,
    /// Path relative to the exported root.
    pub path: &'a [u8],
}

impl<'a> OpenRepr<'a> {
    /// Parse a checked body.
    ///
    /// # Errors
    /// Never fails today; the signature leaves room for validation.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &'a OpenPacket<&'a T>) -> Result<Self, WireError> {
        Ok(OpenRepr {
            flags: p.flags(),
            mode: p.mode(),
            path: p.path(),
        })
    }

    /// Return the body length.
    pub fn buffer_len(&self) -> usize {
        open_field::PATH.start + self.path.len() + 1
    }

    /// Emit into `buf` (at least [`OpenRepr::buffer_len`] bytes).
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`], or [`WireError::Malformed`] when the path holds a NUL.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        check_len(buf, open_field::PATH.start).map_err(|_| WireError::BufferTooSmall)?;
        put_u32(buf, open_field::FLAGS, self.flags);
        put_u32(buf, open_field::MODE, self.mode);
        emit_path(&mut buf[open_field::PATH], self.path)
    }
}

mod close_field {
    use super::Field;
    pub const FD: Field = 0..4;
}

fixed_body!(
    /// A zero-copy view of a Close body.
    ClosePacket, 4, {
    /// Return the descriptor.
    fd / set_fd: u32 @ close_field::FD,
});

/// A Close request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloseRepr {
    /// Descriptor from an Open reply.
    pub fd: u32,
}

impl CloseRepr {
    /// Parse a checked body.
    ///
    /// # Errors
    /// Never fails.
    pub fn parse<T: AsRef<[u8]>>(p: &ClosePacket<T>) -> Result<Self, WireError> {
        Ok(CloseRepr { fd: p.fd() })
    }

    /// Return the body length.
    pub fn buffer_len(&self) -> usize {
        4
    }

    /// Emit into a checked body view.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut ClosePacket<T>) {
        p.set_fd(self.fd);
    }
}

mod read_field {
    use super::Field;
    pub const FD: Field = 0..4;
    pub const LEN: Field = 4..8;
    pub const OFFSET: Field = 8..16;
}

fixed_body!(
    /// A zero-copy view of a Read body.
    ReadPacket, 16, {
    /// Return the descriptor.
    fd / set_fd: u32 @ read_field::FD,
    /// Return the number of bytes wanted.
    len / set_len: u32 @ read_field::LEN,
    /// Return the offset ([`OFFSET_CURRENT`] = current position).
    offset / set_offset: u64 @ read_field::OFFSET,
});

/// A Read request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRepr {
    /// Descriptor.
    pub fd: u32,
    /// Bytes wanted (the server caps it at what fits one reply).
    pub len: u32,
    /// Offset, or `None` for the current position (devices, pipes).
    pub offset: Option<u64>,
}

fn offset_from_wire(v: u64) -> Option<u64> {
    (v != OFFSET_CURRENT).then_some(v)
}

impl ReadRepr {
    /// Parse a checked body.
    ///
    /// # Errors
    /// Never fails.
    pub fn parse<T: AsRef<[u8]>>(p: &ReadPacket<T>) -> Result<Self, WireError> {
        Ok(ReadRepr {
            fd: p.fd(),
            len: p.len(),
            offset: offset_from_wire(p.offset()),
        })
    }

    /// Return the body length.
    pub fn buffer_len(&self) -> usize {
        16
    }

    /// Emit into a checked body view.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut ReadPacket<T>) {
        p.set_fd(self.fd);
        p.set_len(self.len);
        p.set_offset(self.offset.unwrap_or(OFFSET_CURRENT));
    }
}

mod write_field {
    use super::{Field, Rest};
    pub const FD: Field = 0..4;
    pub const FLAGS: Field = 4..8;
    pub const OFFSET: Field = 8..16;
    pub const DATALEN: Field = 16..20;
    pub const DATA: Rest = 20..;
}

/// Write flags.
pub mod write_flags {
    /// Stage the data for an atomic write instead of applying it: `offset` is relative to the
    /// start of the atomic write; a later Commit applies all staged data at once.
    pub const STAGE: u32 = 1;
}

/// A zero-copy view of a Write body: fd, flags, offset, datalen, data.
#[derive(Debug, Clone)]
pub struct WritePacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> WritePacket<T> {
    /// Length of the fixed part.
    pub const FIXED_LEN: usize = write_field::DATA.start;

    /// Wrap `buffer` without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        WritePacket { buffer }
    }

    /// Wrap `buffer`, checking the fixed part and that `datalen` bytes follow.
    ///
    /// # Errors
    /// [`WireError::Truncated`].
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        check_len(b, write_field::DATA.start)?;
        let n = get_u32(b, write_field::DATALEN) as usize;
        check_len(&b[write_field::DATA], n)?;
        Ok(WritePacket { buffer })
    }

    /// Return the descriptor.
    pub fn fd(&self) -> u32 {
        get_u32(self.buffer.as_ref(), write_field::FD)
    }

    /// Return the flags ([`write_flags`]).
    pub fn flags(&self) -> u32 {
        get_u32(self.buffer.as_ref(), write_field::FLAGS)
    }

    /// Return the offset.
    pub fn offset(&self) -> u64 {
        get_u64(self.buffer.as_ref(), write_field::OFFSET)
    }

    /// Return the data length.
    pub fn datalen(&self) -> u32 {
        get_u32(self.buffer.as_ref(), write_field::DATALEN)
    }

    /// Return the data.
    pub fn data(&self) -> &[u8] {
        let d = &self.buffer.as_ref()[write_field::DATA];
        &d[..(self.datalen() as usize).min(d.len())]
    }
}

/// A Write request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteRepr<'a> {
    /// Descriptor.
    pub fd: u32,
    /// Flags ([`write_flags`]).
    pub flags: u32,
    /// Offset, or `None` for the current position.
    pub offset: Option<u64>,
    /// Data.
    pub data: &'a [u8],
}

impl<'a> WriteRepr<'a> {
    /// Length of the fixed part of a Write body.
    pub const FIXED_LEN: usize = write_field::DATA.start;

    /// Parse a checked body.
    ///
    /// # Errors
    /// [`WireError::Malformed`] when unknown flag bits are set.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &'a WritePacket<&'a T>) -> Result<Self, WireError> {
        if p.flags() & !write_flags::STAGE != 0 {
            return Err(WireError::Malformed);
        }
        Ok(WriteRepr {
            fd: p.fd(),
            flags: p.flags(),
            offset: offset_from_wire(p.offset()),
            data: p.data(),
        })
    }

    /// Return the body length.
    pub fn buffer_len(&self) -> usize {
        Self::FIXED_LEN + self.data.len()
    }

    /// Emit into `buf` (at least [`WriteRepr::buffer_len`] bytes).
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        check_len(buf, self.buffer_len()).map_err(|_| WireError::BufferTooSmall)?;
        put_u32(buf, write_field::FD, self.fd);
        put_u32(buf, write_field::FLAGS, self.flags);
        put_u64(
            buf,
            write_field::OFFSET,
            self.offset.unwrap_or(OFFSET_CURRENT),
        );
        put_u32(buf, write_field::DATALEN, self.data.len() as u32);
        buf[write_field::DATA][..self.data.len()].copy_from_slice(self.data);
        Ok(())
    }
}

mod reply_field {
    use super::{Field, Rest};
    pub const RESULT: Field = 0..4;
    pub const ERROR: Field = 4..8;
    pub const DATALEN: Field = 8..12;
    pub const DATA: Rest = 12..;
}

/// A zero-copy view of a Reply body: result, error, datalen, data.
#[derive(Debug, Clone)]
pub struct ReplyPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ReplyPacket<T> {
    /// Length of the fixed part.
    pub const FIXED_LEN: usize = reply_field::DATA.start;

    /// Wrap `buffer` without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        ReplyPacket { buffer }
    }

    /// Wrap `buffer`, checking the fixed part and that `datalen` bytes follow.
    ///
    /// # Errors
    /// [`WireError::Truncated`].
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        check_len(b, reply_field::DATA.start)?;
        let n = get_u32(b, reply_field::DATALEN) as usize;
        check_len(&b[reply_field::DATA], n)?;
        Ok(ReplyPacket { buffer })
    }

    /// Return the result (fd for Open, byte count for Read/Write, entry count for Readdir).
    pub fn result(&self) -> u32 {
        get_u32(self.buffer.as_ref(), reply_field::RESULT)
    }

    /// Return the error code.
    pub fn error(&self) -> ErrorCode {
        ErrorCode(get_u32(self.buffer.as_ref(), reply_field::ERROR))
    }

    /// Return the data length.
    pub fn datalen(&self) -> u32 {
        get_u32(self.buffer.as_ref(), reply_field::DATALEN)
    }

    /// Return the data.
    pub fn data(&self) -> &[u8] {
        let d = &self.buffer.as_ref()[reply_field::DATA];
        &d[..(self.datalen() as usize).min(d.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ReplyPacket<T> {
    /// Set result, error and data length.
    pub fn set_fixed(&mut self, result: u32, error: ErrorCode, datalen: u32) {
        let b = self.buffer.as_mut();
        put_u32(b, reply_field::RESULT, result);
        put_u32(b, reply_field::ERROR, error.0);
        put_u32(b, reply_field::DATALEN, datalen);
    }

    /// Return the data area (everything after the fixed part), mutably, so a server can read a
    /// file straight into the reply.
    pub fn data_area_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[reply_field::DATA]
    }
}

/// A Reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyRepr<'a> {
    /// Result value.
    pub result: u32,
    /// Error code ([`ErrorCode::OK`] on success).
    pub error: ErrorCode,
    /// Returned data.
    pub data: &'a [u8],
}

impl<'a> ReplyRepr<'a> {
    /// Length of the fixed part of a Reply body.
    pub const FIXED_LEN: usize = reply_field::DATA.start;

    /// Parse a checked body.
    ///
    /// # Errors
    /// Never fails.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &'a ReplyPacket<&'a T>) -> Result<Self, WireError> {
        Ok(ReplyRepr {
            result: p.result(),
            error: p.error(),
            data: p.data(),
        })
    }

    /// Return the body length.
    pub fn buffer_len(&self) -> usize {
        Self::FIXED_LEN + self.data.len()
    }

    /// Emit into `buf`.
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        check_len(buf, self.buffer_len()).map_err(|_| WireError::BufferTooSmall)?;
        let mut p = ReplyPacket::new_unchecked(&mut buf[..]);
        p.set_fixed(self.result, self.error, self.data.len() as u32);
        p.data_area_mut()[..self.data.len()].copy_from_slice(self.data);
        Ok(())
    }
}

/// A zero-copy view of a Stat body: a NUL-terminated path.
#[derive(Debug, Clone)]
pub struct StatPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> StatPacket<T> {
    /// Wrap `buffer`, checking the path's NUL terminator.
    ///
    /// # Errors
    /// [`WireError::Truncated`] when there is no NUL.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        nul_terminated(buffer.as_ref())?;
        Ok(StatPacket { buffer })
    }

    /// Return the path (without the NUL).
    pub fn path(&self) -> &[u8] {
        nul_terminated(self.buffer.as_ref()).unwrap_or(&[])
    }
}

/// A Stat request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatRepr<'a> {
    /// Path relative to the exported root.
    pub path: &'a [u8],
}

impl<'a> StatRepr<'a> {
    /// Parse a checked body.
    ///
    /// # Errors
    /// Never fails.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &'a StatPacket<&'a T>) -> Result<Self, WireError> {
        Ok(StatRepr { path: p.path() })
    }

    /// Return the body length.
    pub fn buffer_len(&self) -> usize {
        self.path.len() + 1
    }

    /// Emit into `buf`.
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`] or [`WireError::Malformed`] (NUL in the path).
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        emit_path(buf, self.path)
    }
}

mod readdir_field {
    use super::{Field, Rest};
    pub const COOKIE: Field = 0..4;
    pub const PATH: Rest = 4..;
}

/// A zero-copy view of a Readdir body: cookie, NUL-terminated path.
#[derive(Debug, Clone)]
pub struct ReaddirPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ReaddirPacket<T> {
    /// Wrap `buffer`, checking the cookie and the path's NUL terminator.
    ///
    /// # Errors
    /// [`WireError::Truncated`].
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        check_len(buffer.as_ref(), readdir_field::PATH.start)?;
        nul_terminated(&buffer.as_ref()[readdir_field::PATH])?;
        Ok(ReaddirPacket { buffer })
    }

    /// Return the cookie: the number of entries to skip.
    pub fn cookie(&self) -> u32 {
        get_u32(self.buffer.as_ref(), readdir_field::COOKIE)
    }

    /// Return the path (without the NUL).
    pub fn path(&self) -> &[u8] {
        nul_terminated(&self.buffer.as_ref()[readdir_field::PATH]).unwrap_or(&[])
    }
}

/// A Readdir request. The reply's result is the number of entries in its data (0 = end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaddirRepr<'a> {
    /// Entries to skip (the sum of the previous replies' results).
    pub cookie: u32,
    /// Directory path relative to the exported root.
    pub path: &'a [u8],
}

impl<'a> ReaddirRepr<'a> {
    /// Parse a checked body.
    ///
    /// # Errors
    /// Never fails.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &'a ReaddirPacket<&'a T>) -> Result<Self, WireError> {
        Ok(ReaddirRepr {
            cookie: p.cookie(),
            path: p.path(),
        })
    }

    /// Return the body length.
    pub fn buffer_len(&self) -> usize {
        readdir_field::PATH.start + self.path.len() + 1
    }

    /// Emit into `buf`.
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`] or [`WireError::Malformed`] (NUL in the path).
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        check_len(buf, readdir_field::PATH.start).map_err(|_| WireError::BufferTooSmall)?;
        put_u32(buf, readdir_field::COOKIE, self.cookie);
        emit_path(&mut buf[readdir_field::PATH], self.path)
    }
}

mod flush_field {
    use super::Field;
    pub const OLDTAG: Field = 0..4;
}

fixed_body!(
    /// A zero-copy view of a Flush body.
    FlushPacket, 4, {
    /// Return the tag of the request to cancel.
    oldtag / set_oldtag: u32 @ flush_field::OLDTAG,
});

/// A Flush request: cancel the outstanding request `oldtag` (a parked read, or a staged write).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushRepr {
    /// Tag of the request to cancel.
    pub oldtag: u32,
}

impl FlushRepr {
    /// Parse a checked body.
    ///
    /// # Errors
    /// Never fails.
    pub fn parse<T: AsRef<[u8]>>(p: &FlushPacket<T>) -> Result<Self, WireError> {
        Ok(FlushRepr { oldtag: p.oldtag() })
    }

    /// Return the body length.
    pub fn buffer_len(&self) -> usize {
        4
    }

    /// Emit into a checked body view.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut FlushPacket<T>) {
        p.set_oldtag(self.oldtag);
    }
}

mod commit_field {
    use super::Field;
    pub const FD: Field = 0..4;
    pub const FLAGS: Field = 4..8;
    pub const OFFSET: Field = 8..16;
    pub const LEN: Field = 16..20;
}

/// Commit flags.
pub mod commit_flags {
    /// Discard the staged data instead of applying it.
    pub const ABORT: u32 = 1;
}

fixed_body!(
    /// A zero-copy view of a Commit body.
    CommitPacket, 20, {
    /// Return the descriptor.
    fd / set_fd: u32 @ commit_field::FD,
    /// Return the flags ([`commit_flags`]).
    flags / set_flags: u32 @ commit_field::FLAGS,
    /// Return the file offset to apply at ([`OFFSET_CURRENT`] = current position).
    offset / set_offset: u64 @ commit_field::OFFSET,
    /// Return the total length that must be staged.
    len / set_len: u32 @ commit_field::LEN,
});

/// A Commit request: apply the staged data of `fd` whole (exactly `len` bytes, no gaps), or
/// nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitRepr {
    /// Descriptor.
    pub fd: u32,
    /// Flags ([`commit_flags`]).
    pub flags: u32,
    /// File offset, or `None` for the current position.
    pub offset: Option<u64>,
    /// Total staged length expected.
    pub len: u32,
}

impl CommitRepr {
    /// Parse a checked body.
    ///
    /// # Errors
    /// [`WireError::Malformed`] when unknown flag bits are set.
    pub fn parse<T: AsRef<[u8]>>(p: &CommitPacket<T>) -> Result<Self, WireError> {
        if p.flags() & !commit_flags::ABORT != 0 {
            return Err(WireError::Malformed);
        }
        Ok(CommitRepr {
            fd: p.fd(),
            flags: p.flags(),
            offset: offset_from_wire(p.offset()),
            len: p.len(),
        })
    }

    /// Return the body length.
    pub fn buffer_len(&self) -> usize {
        20
    }

    /// Emit into a checked body view.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut CommitPacket<T>) {
        p.set_fd(self.fd);
        p.set_flags(self.flags);
        p.set_offset(self.offset.unwrap_or(OFFSET_CURRENT));
        p.set_len(self.len);
    }
}

mod attr_field {
    use super::Field;
    pub const KIND: Field = 0..2;
    pub const PERM: Field = 2..4;
    pub const NLINK: Field = 4..8;
    pub const SIZE: Field = 8..16;
    pub const MTIME_SEC: Field = 16..24;
    pub const MTIME_NSEC: Field = 24..28;
    pub const RDEV: Field = 28..32;
    pub const INO: Field = 32..40;
}

/// Type of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Character device.
    CharDevice,
    /// Block device.
    BlockDevice,
    /// Symbolic link.
    Symlink,
    /// FIFO.
    Fifo,
    /// Socket.
    Socket,
    /// A code this implementation does not know.
    Unknown(u16),
}

impl From<u16> for FileKind {
    fn from(v: u16) -> FileKind {
        match v {
            1 => FileKind::File,
            2 => FileKind::Dir,
            3 => FileKind::CharDevice,
            4 => FileKind::BlockDevice,
            5 => FileKind::Symlink,
            6 => FileKind::Fifo,
            7 => FileKind::Socket,
            x => FileKind::Unknown(x),
        }
    }
}

impl From<FileKind> for u16 {
    fn from(k: FileKind) -> u16 {
        match k {
            FileKind::File => 1,
            FileKind::Dir => 2,
            FileKind::CharDevice => 3,
            FileKind::BlockDevice => 4,
            FileKind::Symlink => 5,
            FileKind::Fifo => 6,
            FileKind::Socket => 7,
            FileKind::Unknown(x) => x,
        }
    }
}

fixed_body!(
    /// A zero-copy view of the attributes in a Stat reply's data.
    AttrPacket, 40, {
    /// Return the file kind code.
    kind / set_kind: u16 @ attr_field::KIND,
    /// Return the permission bits.
    perm / set_perm: u16 @ attr_field::PERM,
    /// Return the link count.
    nlink / set_nlink: u32 @ attr_field::NLINK,
    /// Return the size in bytes.
    size / set_size: u64 @ attr_field::SIZE,
    /// Return the modification time, seconds since the epoch.
    mtime_sec / set_mtime_sec: u64 @ attr_field::MTIME_SEC,
    /// Return the nanoseconds of the modification time.
    mtime_nsec / set_mtime_nsec: u32 @ attr_field::MTIME_NSEC,
    /// Return the device number of a device node.
    rdev / set_rdev: u32 @ attr_field::RDEV,
    /// Return the inode number on the server.
    ino / set_ino: u64 @ attr_field::INO,
});

/// File attributes (data of a Stat reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttrRepr {
    /// File type.
    pub kind: FileKind,
    /// Permission bits (`mode & 0o7777`).
    pub perm: u16,
    /// Link count.
    pub nlink: u32,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, seconds since the epoch.
    pub mtime_sec: u64,
    /// Nanoseconds of the modification time.
    pub mtime_nsec: u32,
    /// Device number (device nodes).
    pub rdev: u32,
    /// Inode number on the server.
    pub ino: u64,
}

impl AttrRepr {
    /// Length of the attributes.
    pub const LEN: usize = 40;

    /// Parse a checked view.
    ///
    /// # Errors
    /// [`WireError::Malformed`] when `mtime_nsec` is not below one second.
    pub fn parse<T: AsRef<[u8]>>(p: &AttrPacket<T>) -> Result<Self, WireError> {
        if p.mtime_nsec() >= 1_000_000_000 {
            return Err(WireError::Malformed);
        }
        Ok(AttrRepr {
            kind: FileKind::from(p.kind()),
            perm: p.perm(),
            nlink: p.nlink(),
            size: p.size(),
            mtime_sec: p.mtime_sec(),
            mtime_nsec: p.mtime_nsec(),
            rdev: p.rdev(),
            ino: p.ino(),
        })
    }

    /// Return the length.
    pub fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Emit into a checked view.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut AttrPacket<T>) {
        p.set_kind(self.kind.into());
        p.set_perm(self.perm);
        p.set_nlink(self.nlink);
        p.set_size(self.size);
        p.set_mtime_sec(self.mtime_sec);
        p.set_mtime_nsec(self.mtime_nsec);
        p.set_rdev(self.rdev);
        p.set_ino(self.ino);
    }
}

/// One directory entry in a Readdir reply's data: kind (u16), name length (u16), name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirEntryRepr<'a> {
    /// File type.
    pub kind: FileKind,
    /// Name (no `/`, no NUL).
    pub name: &'a [u8],
}

impl<'a> DirEntryRepr<'a> {
    /// Return the encoded length.
    pub fn buffer_len(&self) -> usize {
        4 + self.name.len()
    }

    /// Emit into the front of `buf`; return the bytes written.
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`], [`WireError::Malformed`] for names longer than 65535.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let n = self.buffer_len();
        if self.name.len() > u16::MAX as usize {
            return Err(WireError::Malformed);
        }
        check_len(buf, n).map_err(|_| WireError::BufferTooSmall)?;
        put_u16(buf, 0..2, self.kind.into());
        put_u16(buf, 2..4, self.name.len() as u16);
        buf[4..n].copy_from_slice(self.name);
        Ok(n)
    }

    /// Parse every entry of `data`, in order.
    pub fn iter(data: &'a [u8]) -> DirEntryIter<'a> {
        DirEntryIter { rest: data }
    }
}

/// Iterator over the entries of a Readdir reply; yields `Err` once and stops on a truncated entry.
#[derive(Debug, Clone)]
pub struct DirEntryIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for DirEntryIter<'a> {
    type Item = Result<DirEntryRepr<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        if self.rest.len() < 4 {
            self.rest = &[];
            return Some(Err(WireError::Truncated));
        }
        let kind = FileKind::from(get_u16(self.rest, 0..2));
        let n = get_u16(self.rest, 2..4) as usize;
        if self.rest.len() < 4 + n {
            self.rest = &[];
            return Some(Err(WireError::Truncated));
        }
        let name = &self.rest[4..4 + n];
        self.rest = &self.rest[4 + n..];
        Some(Ok(DirEntryRepr { kind, name }))
    }
}

/// The body of any message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyRepr<'a> {
    /// Close.
    Close(CloseRepr),
    /// Open.
    Open(OpenRepr<'a>),
    /// Read.
    Read(ReadRepr),
    /// Reply.
    Reply(ReplyRepr<'a>),
    /// Write.
    Write(WriteRepr<'a>),
    /// Version.
    Version(VersionRepr),
    /// Stat.
    Stat(StatRepr<'a>),
    /// Readdir.
    Readdir(ReaddirRepr<'a>),
    /// Flush.
    Flush(FlushRepr),
    /// Commit.
    Commit(CommitRepr),
}

impl BodyRepr<'_> {
    /// Return the opcode of this body.
    pub fn opcode(&self) -> Opcode {
        match self {
            BodyRepr::Close(_) => Opcode::Close,
            BodyRepr::Open(_) => Opcode::Open,
            BodyRepr::Read(_) => Opcode::Read,
            BodyRepr::Reply(_) => Opcode::Reply,
            BodyRepr::Write(_) => Opcode::Write,
            BodyRepr::Version(_) => Opcode::Version,
            BodyRepr::Stat(_) => Opcode::Stat,
            BodyRepr::Readdir(_) => Opcode::Readdir,
            BodyRepr::Flush(_) => Opcode::Flush,
            BodyRepr::Commit(_) => Opcode::Commit,
        }
    }

    /// Return the body length.
    pub fn buffer_len(&self) -> usize {
        match self {
            BodyRepr::Close(r) => r.buffer_len(),
            BodyRepr::Open(r) => r.buffer_len(),
            BodyRepr::Read(r) => r.buffer_len(),
            BodyRepr::Reply(r) => r.buffer_len(),
            BodyRepr::Write(r) => r.buffer_len(),
            BodyRepr::Version(r) => r.buffer_len(),
            BodyRepr::Stat(r) => r.buffer_len(),
            BodyRepr::Readdir(r) => r.buffer_len(),
            BodyRepr::Flush(r) => r.buffer_len(),
            BodyRepr::Commit(r) => r.buffer_len(),
        }
    }
}

/// A whole message: tag and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageRepr<'a> {
    /// Tag chosen by the client; a reply carries the tag of its request.
    pub tag: u32,
    /// Body.
    pub body: BodyRepr<'a>,
}

impl<'a> MessageRepr<'a> {
    /// Parse a checked message.
    ///
    /// # Errors
    /// [`WireError::Malformed`] for unknown opcodes; the body's errors otherwise.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &'a FsPacket<&'a T>) -> Result<Self, WireError> {
        let tag = p.tag();
        let b: &'a [u8] = &p.buffer.as_ref()[field::BODY];
        let body = match p.opcode() {
            Opcode::Close => BodyRepr::Close(CloseRepr::parse(&ClosePacket::new_checked(b)?)?),
            Opcode::Open => {
                let v = OpenPacket::new_checked(b)?;
                BodyRepr::Open(OpenRepr {
                    flags: v.flags(),
                    mode: v.mode(),
                    path: nul_terminated(&b[open_field::PATH])?,
                })
            }
            Opcode::Read => BodyRepr::Read(ReadRepr::parse(&ReadPacket::new_checked(b)?)?),
            Opcode::Reply => {
                let v = ReplyPacket::new_checked(b)?;
                let n = v.datalen() as usize;
                BodyRepr::Reply(ReplyRepr {
                    result: v.result(),
                    error: v.error(),
                    data: &b[reply_field::DATA][..n],
                })
            }
            Opcode::Write => {
                let v = WritePacket::new_checked(b)?;
                if v.flags() & !write_flags::STAGE != 0 {
                    return Err(WireError::Malformed);
                }
                let n = v.datalen() as usize;
                BodyRepr::Write(WriteRepr {
                    fd: v.fd(),
                    flags: v.flags(),
                    offset: offset_from_wire(v.offset()),
                    data: &b[write_field::DATA][..n],
                })
            }
            Opcode::Version => {
                BodyRepr::Version(VersionRepr::parse(&VersionPacket::new_checked(b)?)?)
            }
            Opcode::Stat => {
                StatPacket::new_checked(b)?;
                BodyRepr::Stat(StatRepr {
                    path: nul_terminated(b)?,
                })
            }
            Opcode::Readdir => {
                let v = ReaddirPacket::new_checked(b)?;
                BodyRepr::Readdir(ReaddirRepr {
                    cookie: v.cookie(),
                    path: nul_terminated(&b[readdir_field::PATH])?,
                })
            }
            Opcode::Flush => BodyRepr::Flush(FlushRepr::parse(&FlushPacket::new_checked(b)?)?),
            Opcode::Commit => BodyRepr::Commit(CommitRepr::parse(&CommitPacket::new_checked(b)?)?),
            Opcode::Unknown(_) => return Err(WireError::Malformed),
        };
        Ok(MessageRepr { tag, body })
    }

    /// Return the message length (header + body).
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.body.buffer_len()
    }

    /// Emit into the front of `buf`; return the message length.
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`], or [`WireError::Malformed`] for a path holding a NUL.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let n = self.buffer_len();
        if buf.len() < n {
            return Err(WireError::BufferTooSmall);
        }
        let mut p = FsPacket::new_unchecked(&mut buf[..n]);
        p.set_opcode(self.body.opcode());
        p.set_tag(self.tag);
        let b = p.body_mut();
        match &self.body {
            BodyRepr::Close(r) => r.emit(&mut ClosePacket::new_unchecked(b)),
            BodyRepr::Open(r) => r.emit(b)?,
            BodyRepr::Read(r) => r.emit(&mut ReadPacket::new_unchecked(b)),
            BodyRepr::Reply(r) => r.emit(b)?,
            BodyRepr::Write(r) => r.emit(b)?,
            BodyRepr::Version(r) => r.emit(&mut VersionPacket::new_unchecked(b)),
            BodyRepr::Stat(r) => r.emit(b)?,
            BodyRepr::Readdir(r) => r.emit(b)?,
            BodyRepr::Flush(r) => r.emit(&mut FlushPacket::new_unchecked(b)),
            BodyRepr::Commit(r) => r.emit(&mut CommitPacket::new_unchecked(b)),
        }
        Ok(n)
    }
}

/// Return the largest data payload of a Read reply within a message size.
pub fn max_read_data(msize: u32) -> usize {
    (msize as usize).saturating_sub(HEADER_LEN + ReplyRepr::FIXED_LEN)
}

/// Return the largest data payload of a Write request within a message size.
pub fn max_write_data(msize: u32) -> usize {
    (msize as usize).saturating_sub(HEADER_LEN + WriteRepr::FIXED_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> [MessageRepr<'static>; 12] {
        [
            MessageRepr {
                tag: 1,
                body: BodyRepr::Close(CloseRepr { fd: 3 }),
            },
            MessageRepr {
                tag: 2,
                body: BodyRepr::Open(OpenRepr {
                    flags: open_flags::RDWR | open_flags::CREAT,
                    mode: 0o644,
                    path: b"dir/file",
                }),
            },
            MessageRepr {
                tag: 3,
                body: BodyRepr::Read(ReadRepr {
                    fd: 1,
                    len: 1024,
                    offset: Some(4096),
                }),
            },
            MessageRepr {
                tag: 4,
                body: BodyRepr::Read(ReadRepr {
                    fd: 1,
                    len: 16,
                    offset: None,
                }),
            },
            MessageRepr {
                tag: 5,
                body: BodyRepr::Reply(ReplyRepr {
                    result: 5,
                    error: ErrorCode::OK,
                    data: b"hello",
                }),
            },
            MessageRepr {
                tag: 6,
                body: BodyRepr::Write(WriteRepr {
                    fd: 2,
                    flags: write_flags::STAGE,
                    offset: Some(8),
                    data: b"abc",
                }),
            },
            MessageRepr {
                tag: 7,
                body: BodyRepr::Version(VersionRepr {
                    version: 1,
                    channel: 0,
                    msize: 1500,
                    outstanding: 8,
                    max_fds: 0,
                }),
            },
            MessageRepr {
                tag: 8,
                body: BodyRepr::Stat(StatRepr { path: b"a" }),
            },
            MessageRepr {
                tag: 9,
                body: BodyRepr::Readdir(ReaddirRepr {
                    cookie: 4,
                    path: b"",
                }),
            },
            MessageRepr {
                tag: 10,
                body: BodyRepr::Flush(FlushRepr { oldtag: 9 }),
            },
            MessageRepr {
                tag: 11,
                body: BodyRepr::Commit(CommitRepr {
                    fd: 2,
                    flags: 0,
                    offset: None,
                    len: 3000,
                }),
            },
            MessageRepr {
                tag: u32::MAX,
                body: BodyRepr::Reply(ReplyRepr {
                    result: 0,
                    error: ErrorCode::XDEV,
                    data: b"",
                }),
            },
        ]
    }

    #[test]
    fn every_message_round_trips() {
        for m in samples() {
            let mut buf = [0u8; 128];
            let n = m.emit(&mut buf).unwrap();
            assert_eq!(n, m.buffer_len());
            let p = FsPacket::new_checked(&buf[..n]).unwrap();
            assert_eq!(p.opcode(), m.body.opcode());
            assert_eq!(MessageRepr::parse(&p).unwrap(), m);
            // Ethernet padding after the message does not change what is parsed.
            let p = FsPacket::new_checked(&buf[..n + 20]).unwrap();
            assert_eq!(MessageRepr::parse(&p).unwrap(), m);
        }
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        for m in samples() {
            let mut buf = [0u8; 128];
            let n = m.emit(&mut buf).unwrap();
            for cut in 0..n {
                match FsPacket::new_checked(&buf[..cut]) {
                    Err(e) => assert_eq!(e, WireError::Truncated),
                    Ok(p) => assert!(MessageRepr::parse(&p).is_err(), "{m:?} cut at {cut}"),
                }
            }
        }
    }

    #[test]
    fn header_is_six_bytes_and_big_endian() {
        let m = MessageRepr {
            tag: 0x01020304,
            body: BodyRepr::Close(CloseRepr { fd: 0x0a0b0c0d }),
        };
        let mut buf = [0u8; 10];
        assert_eq!(m.emit(&mut buf).unwrap(), 10);
        assert_eq!(buf, [0, 0, 1, 2, 3, 4, 0x0a, 0x0b, 0x0c, 0x0d]);
    }

    #[test]
    fn unknown_opcode_is_kept_and_refused() {
        let buf = [0x12, 0x34, 0, 0, 0, 9, 1, 2, 3];
        let p = FsPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(p.opcode(), Opcode::Unknown(0x1234));
        assert_eq!(u16::from(p.opcode()), 0x1234);
        assert_eq!(p.opcode().index(), None);
        assert_eq!(p.tag(), 9);
        assert_eq!(MessageRepr::parse(&p), Err(WireError::Malformed));
        for v in 0..Opcode::COUNT as u16 {
            assert_eq!(Opcode::from(v).index(), Some(v as usize));
        }
    }

    #[test]
    fn bad_fields_are_malformed() {
        // Version with msize 0.
        let m = MessageRepr {
            tag: 1,
            body: BodyRepr::Version(VersionRepr {
                version: 1,
                channel: 0,
                msize: 0,
                outstanding: 1,
                max_fds: 0,
            }),
        };
        let mut buf = [0u8; 64];
        let n = m.emit(&mut buf).unwrap();
        assert_eq!(
            MessageRepr::parse(&FsPacket::new_checked(&buf[..n]).unwrap()),
            Err(WireError::Malformed)
        );
        // Write with unknown flag bits.
        let m = MessageRepr {
            tag: 1,
            body: BodyRepr::Write(WriteRepr {
                fd: 1,
                flags: 0x80,
                offset: None,
                data: b"x",
            }),
        };
        let n = m.emit(&mut buf).unwrap();
        assert_eq!(
            MessageRepr::parse(&FsPacket::new_checked(&buf[..n]).unwrap()),
            Err(WireError::Malformed)
        );
        // Path with an embedded NUL cannot be emitted.
        let m = MessageRepr {
            tag: 1,
            body: BodyRepr::Stat(StatRepr { path: b"a\0b" }),
        };
        assert_eq!(m.emit(&mut buf), Err(WireError::Malformed));
        // A datalen larger than the frame is truncated.
        let mut buf = [0u8; 18];
        let mut p = FsPacket::new_unchecked(&mut buf[..]);
        p.set_opcode(Opcode::Reply);
        ReplyPacket::new_unchecked(p.body_mut()).set_fixed(0, ErrorCode::OK, 1000);
        assert_eq!(
            MessageRepr::parse(&FsPacket::new_checked(&buf[..]).unwrap()),
            Err(WireError::Truncated)
        );
    }

    #[test]
    fn attrs_and_dir_entries_round_trip() {
        let a = AttrRepr {
            kind: FileKind::CharDevice,
            perm: 0o666,
            nlink: 1,
            size: 0,
            mtime_sec: 1_700_000_000,
            mtime_nsec: 5,
            rdev: 0x0103,
            ino: 42,
        };
        let mut buf = [0u8; AttrRepr::LEN];
        a.emit(&mut AttrPacket::new_checked(&mut buf[..]).unwrap());
        assert_eq!(
            AttrRepr::parse(&AttrPacket::new_checked(&buf[..]).unwrap()).unwrap(),
            a
        );
        assert!(AttrPacket::new_checked(&buf[..39]).is_err());

        let mut data = [0u8; 64];
        let mut n = 0;
        for (k, name) in [
            (FileKind::File, &b"a.txt"[..]),
            (FileKind::Dir, b"sub"),
            (FileKind::Unknown(99), b""),
        ] {
            n += DirEntryRepr { kind: k, name }.emit(&mut data[n..]).unwrap();
        }
        let v = DirEntryRepr::iter(&data[..n]);
        let names: usize = v.clone().filter(|e| e.is_ok()).count();
        assert_eq!(names, 3);
        let first = DirEntryRepr::iter(&data[..n]).next().unwrap().unwrap();
        assert_eq!(
            first,
            DirEntryRepr {
                kind: FileKind::File,
                name: b"a.txt"
            }
        );
        let mut cut = DirEntryRepr::iter(&data[..n - 1]);
        assert!(cut.by_ref().take(2).all(|e| e.is_ok()));
        assert_eq!(cut.next(), Some(Err(WireError::Truncated)));
        assert_eq!(cut.next(), None);
    }

    #[test]
    fn size_limits_follow_msize() {
        assert_eq!(max_read_data(1500), 1500 - 6 - 12);
        assert_eq!(max_write_data(1500), 1500 - 6 - 20);
        assert_eq!(max_read_data(0), 0);
    }
}
