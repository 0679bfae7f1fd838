//! The Berkeley-sockets baseline: `udp` and `tcp` channels over loopback.
//!
//! The executive creates one connected socket pair per (source, destination) before forking
//! ([`socket_pair`]); each side inherits its end. Every message travels as one frame:
//! ```text
//!  0        4        8        12       16               24
//!  +--------+--------+--------+--------+----------------+---------------------+
//!  | "PXF1" | seq u32| len u32| check  | stamp u64      | payload (len bytes) |   little-endian
//!  +--------+--------+--------+--------+----------------+---------------------+
//!  TCP only, after the payload: | check u32 | "PXFE" |   (the trailer)
//! ```
//! `check` is a hash of `seq`, `len` and `stamp` ([`FrameRepr::check`]), and over TCP of the
//! frame's **stream position** too, the bytes sent on the connection before it
//! ([`FrameRepr::check_at`]). A UDP datagram holds exactly one frame; over TCP the `len` field
//! delimits frames in the stream, and the magic, the check and the trailer let a receiver find
//! them again after a partition restarted in the middle of one (the sockets outlive the
//! processes, a partly sent or partly read frame does not). Each end counts the stream's
//! positions from the kernel's counts when it is made ([`stream_positions`]: what earlier
//! incarnations sent and took is counted too), so a header is valid only where its sender put
//! it: bytes that do not begin a valid header are skipped up to the next magic, and a frame that
//! lies inside another one's payload is not taken (unless it was made, by chance, 1 in 2^32,
//! or on purpose, for the very position where it lands), wherever a restarted destination
//! starts reading. A valid header whose trailer is not where its `len` says begins a frame a
//! killed source tore: it is dropped whole. Every tcp end that sends starts with `tx_max + 32`
//! zero bytes ([`FrameSocket::resync_peer`]; a destination's `tx_max` is [`ACK_LEN`], its
//! acks' payload), which complete whatever frame a killed incarnation left partly sent so that its
//! trailer check fails, and are then skipped (see `FrameSocket::tcp_frame` and
//! `docs/ports.md`). Each [`FrameSocket`] on a socket uses one direction of it (a port's end
//! sends or receives payloads, never both; the tcp sampling channels that share a connection
//! each have their own end), so what it counts itself and what the kernel counts agree.
//!
//! A queuing message's frame carries its send time in `stamp` (`CLOCK_MONOTONIC` ns of the
//! source's node, [`QueueRx::sent_by`]); a sampling message's, its write time (the validity).
//! A frame going back from the destination is a **cumulative acknowledgement** (queuing):
//! `seq` = the destination's identity, `stamp` = messages it consumed so far, and a payload of
//! [`ACK_LEN`] bytes, two times (`CLOCK_MONOTONIC` ns of the destination's node, u64
//! little-endian): of the first and of the last consumption it acknowledges that no earlier ack
//! did, when the rooms it gives the source were made ([`QueueTx::room_by`]: the first room
//! then, the others by the last; 0: not known). A source also takes an ack with no payload
//! (`len = 0`, the times not known). A destination announces each incarnation with an ack when it starts: with
//! its book ([`QueueRx::with_book`]) the identity and the count go on across its restarts (and
//! an incarnation whose count the last ack already carried announces nothing); without, each
//! incarnation has an identity of its own and starts at 0. A udp ack lost to a full socket is
//! made up for by the next one; a udp destination that keeps finding nothing repeats its last
//! (`QueueRx::ACK_AGAIN`), so a source is not left full by a lost one.
//!
//! - **Sampling**: the source sends one frame per destination and never waits (a frame the
//!   socket cannot take now is dropped: a newer one replaces it anyway); the destination drains
//!   the socket to the newest frame on every read (at most what can have been queued when the
//!   read started, see `SampleRx::drain`) and keeps it with its time stamp.
//! - **Queuing**: credits. The source may send while `sent - acked < MaxNbMessages`; the
//!   destination buffers what it drained (at most `MaxNbMessages` messages, allocated once) and
//!   acknowledges consumed messages in batches of half the credit, always before it reports an
//!   empty queue, and at once whenever the source may have used its whole credit (what it
//!   consumed and did not acknowledge, what it buffers and what the socket still holds reach the
//!   credit: [`QueueRx::try_recv`] looks at the socket that far). A source that used its last
//!   credit after the destination's last receive is acknowledged by the destination's agent
//!   (`transport::QueueAgent`, `QueueRx::idle`) once no process calls the port, so a sender
//!   is not told the queue is full, nor left waiting, for long while the destination has room.
//!   The socket buffers are sized for `MaxNbMessages` frames, so no frame is ever lost.
//!   The source keeps its counts in a region that outlives its restarts ([`QueueTx::with_book`]):
//!   a restarted source goes on with the messages its earlier incarnations left in flight, so
//!   however often it restarts, at most `MaxNbMessages` are. The destination keeps its identity
//!   and its count of frames taken off the socket in one too ([`QueueRx::with_book`]), so a
//!   restarted destination leaves a full source full.
//!
//! No send waits: over TCP a frame the socket takes only part of is committed, and its rest
//! waits in the endpoint's buffer until a later call of that endpoint sends it (meanwhile new
//! frames are refused: Full); a hard error (`EPIPE`, `ECONNRESET`, ...) is counted and marks the
//! connection dead for good (sends answer Full, receives nothing); the end of a TCP stream (a
//! `recv` of 0: the peer shut its side down) is latched too. The waiters poll for what the
//! endpoint can still get (room to send the rest of a frame, acks, messages), and sleep their
//! slice when that is nothing (a dead connection, or an ended stream, polls ready for ever).
//!
//! Waiting maps to `poll(2)` on the socket (bounded slices of [`PARK_SLICE`] so a process that
//! joins the port's wait queue is noticed); spinning polls it with a zero timeout. A udp sampling
//! destination with at least four kernel ticks to wait waits in `recv` itself instead
//! ([`FrameSocket::recv_frame_wait`]: one system call per wake-up instead of two).
#![allow(unsafe_code)]

use partix_config::model::PortDirection;
use partix_shm::ring::{PopError, PushError};
use partix_shm::sampling::{ReadError, ReadOk, WaitError};
use partix_shm::{RecvMode, Words};
use std::io;
use std::net::{Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::{far_from, PAGE};

/// Bytes of an acknowledgement's payload: the time the room it gives was made (see the module
/// docs).
pub const ACK_LEN: usize = 16;

/// Bytes of a frame header.
pub const HEADER_LEN: usize = 24;

/// Bytes of the trailer that ends a TCP frame.
pub const TRAILER_LEN: usize = 8;

/// The first bytes of every header.
const MAGIC: [u8; 4] = *b"PXF1";

/// The last bytes of every TCP trailer (after the header's check).
const END: [u8; 4] = *b"PXFE";

/// Longest single `poll(2)` of a parked waiter.
pub const PARK_SLICE: Duration = Duration::from_millis(20);

/// Receives (system calls) that one [`FrameSocket::recv_frame`], or one look of a queuing
/// destination, makes at most: a peer that floods malformed datagrams, frames that are not
/// messages, or stream bytes without a frame cannot keep a call inside the endpoint. The call
/// then answers as if nothing had come, with [`FrameSocket::cut`] set: input is left on the
/// socket (so it polls readable and the waiters wake for it), and the next call goes on. Frames
/// already read into a tcp end's stream buffer are parsed whatever the bound (the buffer bounds
/// them), so a complete frame is never left there unseen.
pub const RECV_ROUNDS: u32 = 64;

/// What a sampling read's drain charges a udp datagram beyond its frame bytes, against the
/// socket's receive buffer: less than the kernel charges for one (about 1 KiB for a small
/// datagram), so all that was queued when the read started fits in the budget, and a read
/// under a flood still ends after a few buffers' worth.
const UDP_DRAIN_CHARGE: usize = 256;

/// The header of a frame (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRepr {
    /// Sequence number (sampling: 1, 2, ... per source incarnation, which a destination
    /// renumbers as it receives them, see `SampleRx::keep`; queuing: the source's count of
    /// frames sent, this one included; ack: the destination's identity).
    pub seq: u32,
    /// Payload length (0: an acknowledgement).
    pub len: u32,
    /// Sampling: the write time (ns, `CLOCK_MONOTONIC`); queuing: the send time (the same
    /// clock, [`QueueRx::sent_by`]); ack: messages consumed.
    pub stamp: u64,
}

impl FrameRepr {
    /// The header's check: a hash of its fields (two multiply-xorshift rounds), so that bytes
    /// that are not a header (the middle of a frame, after a restart) pass for one only by a
    /// 1 in 2^64 chance (the magic and the check).
    ///
    /// This is the check of a UDP datagram's header, and of a TCP frame at stream offset 0:
    /// [`FrameRepr::check_at`].
    pub fn check(&self) -> u32 {
        self.check_at(0)
    }

    /// The check of this header in a frame that begins `pos` bytes into its TCP stream (the
    /// stream position is part of what the check covers, see the module docs: a frame is
    /// taken only where its sender put it, so a frame that lies inside another one's payload
    /// never passes for one of the stream). `check_at(0)` is [`FrameRepr::check`].
    pub fn check_at(&self, pos: u64) -> u32 {
        const K: u64 = 0x9E37_79B9_7F4A_7C15;
        // Odd, so distinct positions stay distinct before the last rounds.
        const KP: u64 = 0xC2B2_AE3D_27D4_EB4F;
        let mut h = (u64::from(self.seq) << 32 | u64::from(self.len)) ^ 0x5158_4631;
        h = h.wrapping_mul(K);
        h ^= h >> 29;
        h ^= self.stamp ^ pos.wrapping_mul(KP);
        h = h.wrapping_mul(K);
        h ^= h >> 32;
        h as u32
    }

    /// Parse a header from the first [`HEADER_LEN`] bytes of `b`; `None` if there are fewer, or
    /// the magic or the check is wrong. (A UDP datagram's header; [`FrameRepr::parse_at`] for
    /// a TCP frame.)
    pub fn parse(b: &[u8]) -> Option<FrameRepr> {
        FrameRepr::parse_at(b, 0)
    }

    /// [`FrameRepr::parse`] for a frame that begins `pos` bytes into its TCP stream: the check
    /// must be [`FrameRepr::check_at`] `pos`.
    pub fn parse_at(b: &[u8], pos: u64) -> Option<FrameRepr> {
        let h = b.get(..HEADER_LEN)?;
        let f = FrameRepr {
            seq: u32::from_le_bytes(h[4..8].try_into().ok()?),
            len: u32::from_le_bytes(h[8..12].try_into().ok()?),
            stamp: u64::from_le_bytes(h[16..24].try_into().ok()?),
        };
        (h[0..4] == MAGIC && u32::from_le_bytes(h[12..16].try_into().ok()?) == f.check_at(pos))
            .then_some(f)
    }

    /// Emit the header into `b[..HEADER_LEN]` (a UDP datagram's; [`FrameRepr::emit_at`] for a
    /// TCP frame).
    pub fn emit(&self, b: &mut [u8]) {
        self.emit_at(b, 0);
    }

    /// Emit the header of a frame that begins `pos` bytes into its TCP stream into
    /// `b[..HEADER_LEN]`.
    pub fn emit_at(&self, b: &mut [u8], pos: u64) {
        b[0..4].copy_from_slice(&MAGIC);
        b[4..8].copy_from_slice(&self.seq.to_le_bytes());
        b[8..12].copy_from_slice(&self.len.to_le_bytes());
        b[12..16].copy_from_slice(&self.check_at(pos).to_le_bytes());
        b[16..24].copy_from_slice(&self.stamp.to_le_bytes());
    }

    /// The whole TCP frame of this header and `payload` (`len` is taken from the header; the
    /// payload is cut or zero-padded to it), for a frame that begins `pos` bytes into its
    /// stream: what a sending end writes, for tests and tools that write frames themselves
    /// ([`stream_positions`] tells where a socket's stream is).
    pub fn tcp_frame_at(&self, payload: &[u8], pos: u64) -> Vec<u8> {
        let n = HEADER_LEN + self.len as usize;
        let mut f = vec![0u8; n + TRAILER_LEN];
        self.emit_at(&mut f, pos);
        let k = payload.len().min(self.len as usize);
        f[HEADER_LEN..HEADER_LEN + k].copy_from_slice(&payload[..k]);
        f[n..].copy_from_slice(&self.trailer_at(pos));
        f
    }

    /// The TCP trailer of this frame, which begins `pos` bytes into its stream.
    fn trailer_at(&self, pos: u64) -> [u8; TRAILER_LEN] {
        let mut t = [0u8; TRAILER_LEN];
        t[..4].copy_from_slice(&self.check_at(pos).to_le_bytes());
        t[4..].copy_from_slice(&END);
        t
    }
}

/// Where the TCP stream of the connected socket `fd` stands: `(read, written)`, the bytes all
/// readers of this socket have taken off it so far, and the bytes all writers have put into it,
/// counted from the connection's start, whatever process did it (the kernel's counts:
/// `tcpi_bytes_received` less what waits to be read, `SIOCINQ`; `tcpi_bytes_acked` plus what
/// is not yet acknowledged or not yet sent, `SIOCOUTQ`, less the SYN that the connecting end
/// counts there: for a pair made by [`socket_pair`], the end whose port is the greater). A new
/// incarnation of a partition starts its endpoint there, so its frames' positions continue its
/// earlier incarnations'.
///
/// A FIN takes a sequence number but is no byte of the stream: once the peer has shut its side
/// down (`shutdown(2)`, the kernel's state `CLOSE_WAIT`, `LAST_ACK` or `CLOSING`), the count
/// received holds its FIN, and once this end has (`FIN_WAIT1`, `FIN_WAIT2`, `CLOSING`,
/// `LAST_ACK`), the count sent holds its own; both are taken off. A connection closed both
/// ways (`CLOSE`) has no peer address: an error, as for a reset one.
///
/// # Errors
/// The system error of `getsockopt` or `ioctl` (`fd` is not a TCP socket, ...), or `Other`
/// when the counts kept moving (the peer sending, or acknowledging, all along).
pub fn stream_positions(fd: &impl AsRawFd) -> io::Result<(u64, u64)> {
    let fd = fd.as_raw_fd();
    // The kernel's `struct tcp_info` (232 bytes on this kernel): `tcpi_bytes_acked` at 120,
    // `tcpi_bytes_received` at 128 (both since Linux 4.1); the `libc` crate's struct stops
    // before them.
    const ACKED: usize = 120;
    const RECEIVED: usize = 128;
    // `tcpi_state`, the first byte: the states after a FIN of the peer (received) and after
    // one of this end (queued or sent), Linux's `enum tcp_state` (include/net/tcp_states.h).
    const FIN_WAIT1: u8 = 4;
    const FIN_WAIT2: u8 = 5;
    const CLOSE: u8 = 7;
    const CLOSE_WAIT: u8 = 8;
    const LAST_ACK: u8 = 9;
    const CLOSING: u8 = 11;
    let info = || -> io::Result<(u8, u64, u64)> {
        let mut b = [0u64; 40];
        let mut len = std::mem::size_of_val(&b) as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `b`.
        let r = unsafe {
            libc::getsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                b.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        if (len as usize) < RECEIVED + 8 {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the kernel's TCP_INFO has no byte counts (Linux 4.1 or later needed)",
            ));
        }
        Ok((b[0].to_ne_bytes()[0], b[RECEIVED / 8], b[ACKED / 8]))
    };
    let queued = |req| -> io::Result<u64> {
        let mut v: libc::c_int = 0;
        // SAFETY: SIOCINQ / SIOCOUTQ write one c_int into `v`.
        if unsafe { libc::ioctl(fd, req, &mut v) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(u64::try_from(v).unwrap_or(0))
    };
    // The end that connected counts its SYN among the bytes acknowledged (its peer counts
    // none): [`socket_pair`] connects from a port above the listener's.
    let syn = {
        use std::os::fd::FromRawFd;
        // std's own address calls on the borrowed descriptor (never closed here).
        // SAFETY: `fd` stays open for this call (the caller holds it); ManuallyDrop keeps the
        // TcpStream from closing it.
        let s = std::mem::ManuallyDrop::new(unsafe { TcpStream::from_raw_fd(fd) });
        u64::from(s.local_addr()?.port() > s.peer_addr()?.port())
    };
    // Each count is read between two readings of the kernel's count it depends on, until both
    // agree (bytes arriving, or acknowledged, in between would skew it).
    for _ in 0..1000 {
        let (state0, rx0, ack0) = info()?;
        let inq = queued(libc::FIONREAD)?;
        let outq = queued(libc::TIOCOUTQ)?;
        let (state1, rx1, ack1) = info()?;
        if rx0 == rx1 && ack0 == ack1 && state0 == state1 {
            // Closed both ways (or reset) after the peer's address was read above: whether
            // the FINs are in the counts is unknown, as it is when the address cannot be read.
            if state0 == CLOSE {
                return Err(io::Error::from(io::ErrorKind::NotConnected));
            }
            let fin_in = u64::from(matches!(state0, CLOSE_WAIT | LAST_ACK | CLOSING));
            let fin_out = u64::from(matches!(state0, FIN_WAIT1 | FIN_WAIT2 | CLOSING | LAST_ACK));
            return Ok((
                rx0.wrapping_sub(inq).wrapping_sub(fin_in),
                ack0.wrapping_add(outq)
                    .wrapping_sub(syn)
                    .wrapping_sub(fin_out),
            ));
        }
    }
    Err(io::Error::other("the stream's counts did not settle"))
}

/// Socket kind of a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketKind {
    /// Datagrams.
    Udp,
    /// A stream with length framing, `TCP_NODELAY`.
    Tcp,
}

/// `len` zero bytes from the process's memory, or `OutOfMemory` when it cannot hold them: an
/// endpoint of a large port that does not fit the partition's memory (`RLIMIT_DATA`) makes its
/// CREATE answer `INVALID_CONFIG`, not abort the partition. Zeroed by the allocator, as
/// `vec![0; len]` is (a large block comes from `mmap` and is not written here).
pub fn zeroed(len: usize) -> io::Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    // No message: formatting one allocates, and with the partition's memory exhausted that
    // allocation would abort the process this function exists to keep alive.
    let short = || io::Error::from(io::ErrorKind::OutOfMemory);
    let layout = std::alloc::Layout::array::<u8>(len).map_err(|_| short())?;
    // SAFETY: `layout` has a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return Err(short());
    }
    // SAFETY: `p` was allocated by the global allocator with the layout of `[u8; len]` (the
    // layout of a `Vec<u8>` of capacity `len`), and its `len` bytes are initialised (zero).
    Ok(unsafe { Vec::from_raw_parts(p, len, len) })
}

fn set_buffers(fd: &impl AsRawFd, bytes: usize) {
    let v = bytes.clamp(64 << 10, partix_config::MAX_SOCKET_BUFFER) as libc::c_int;
    for (force, plain) in [
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
    ] {
        for opt in [force, plain] {
            // SAFETY: setsockopt reads a c_int of the given size; a failure leaves the default.
            let r = unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    (&v as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if r == 0 {
                break;
            }
        }
    }
}

/// Return the bytes [`socket_pair`] asks of each socket buffer for `frames` frames of
/// `max_message_size` bytes (before the kernel's bounds; saturating, so a module built in code
/// with sizes past the configuration's limits cannot overflow it).
pub fn buffer_bytes(max_message_size: u32, frames: u32) -> usize {
    // One formula with the configuration's check of udp queuing channels.
    partix_config::socket_buffer_bytes(max_message_size, frames)
}

/// Read back the receive and send buffers of socket `fd` (`SO_RCVBUF`, `SO_SNDBUF`, bytes): what
/// the kernel granted, in its own accounting (twice what was asked, the doubling being its
/// allowance for its bookkeeping; bounded by `net.core.rmem_max` / `wmem_max` unless the
/// process may force the size, `CAP_NET_ADMIN`).
///
/// # Errors
/// The system error of `getsockopt`.
pub fn granted_buffers(fd: &impl AsRawFd) -> io::Result<(usize, usize)> {
    let get = |opt| {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into the c_int `v`.
        let r = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if r == 0 {
            Ok(usize::try_from(v).unwrap_or(0))
        } else {
            Err(io::Error::last_os_error())
        }
    };
    Ok((get(libc::SO_RCVBUF)?, get(libc::SO_SNDBUF)?))
}

/// A udp queuing channel whose sockets the kernel gave less receive buffer than its capacity
/// needs ([`udp_queue_shortfall`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferShortfall {
    /// Which end's receive buffer is short: `"destination"` (the messages) or `"source"` (the
    /// acknowledgements).
    pub end: &'static str,
    /// Bytes of receive buffer needed, in the kernel's accounting (as `SO_RCVBUF` reports it).
    pub needed: usize,
    /// Bytes granted (`SO_RCVBUF` read back).
    pub granted: usize,
}

/// Check that the receive buffers of a udp queuing channel's sockets (`src`, `dst`, made by
/// [`socket_pair`] for `frames` frames of `max_message_size` bytes) hold what its credit lets
/// into them: `frames` messages at the destination, as many acknowledgements at the source.
/// `None` when they do.
///
/// The kernel charges a datagram its buffer's whole allocation (for a small frame about 800
/// bytes, and up to twice the frame for a large one, rounded to a power of two), and drops a
/// datagram that finds the receive buffer full: a channel whose credit exceeds what fits would
/// lose messages silently, and the credit they took would be lost for good. [`buffer_bytes`] is
/// that need (1 KiB of overhead and the header on each frame, for `frames` + 2 frames, twice);
/// the executive asks it of the kernel, which grants twice that when the executive may force the
/// size (`SO_RCVBUFFORCE`, `CAP_NET_ADMIN`), and otherwise at most twice `net.core.rmem_max`.
/// (The send buffers need no check: loopback hands a datagram on as it is sent, so a send
/// buffer holds one datagram at most, and a send that does not fit fails, counting nothing.)
///
/// # Errors
/// The system error of `getsockopt`.
pub fn udp_queue_shortfall(
    src: &impl AsRawFd,
    dst: &impl AsRawFd,
    max_message_size: u32,
    frames: u32,
) -> io::Result<Option<BufferShortfall>> {
    // Acknowledgements: one per message consumed at most between two drains of the source,
    // and the destination's announcements; each a frame with ACK_LEN bytes of payload.
    for (end, fd, needed) in [
        (
            "destination",
            dst.as_raw_fd(),
            buffer_bytes(max_message_size, frames),
        ),
        ("source", src.as_raw_fd(), buffer_bytes(0, frames)),
    ] {
        let (granted, _) = granted_buffers(&fd)?;
        if granted < needed {
            return Ok(Some(BufferShortfall {
                end,
                needed,
                granted,
            }));
        }
    }
    Ok(None)
}

/// Create a connected, non-blocking socket pair on 127.0.0.1 (executive side) whose buffers
/// hold `frames` frames of `max_message_size` bytes; return (source end, destination end).
///
/// Each end is connected to the other one only: a local process may send to, or connect to,
/// a fresh port in the moment before that (see `udp_pair_of` and `tcp_pair_on`).
///
/// # Errors
/// The system error.
pub fn socket_pair(
    kind: SocketKind,
    max_message_size: u32,
    frames: u32,
) -> io::Result<(OwnedFd, OwnedFd)> {
    let bytes = buffer_bytes(max_message_size, frames);
    match kind {
        SocketKind::Udp => {
            let (a, b) = udp_pair_of(
                UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?,
                UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?,
            )?;
            for s in [&a, &b] {
                set_buffers(s, bytes);
            }
            Ok((a.into(), b.into()))
        }
        SocketKind::Tcp => {
            let (a, b) = tcp_pair()?;
            // Both ends must start at 0: the rule that tells the connecting end
            // (`stream_positions`) rests on the kernel counting the SYN on that end only. A
            // kernel that counts otherwise is refused here, not discovered as frames that
            // every receiver drops.
            for s in [&a, &b] {
                if stream_positions(s)? != (0, 0) {
                    return Err(io::Error::other(format!(
                        "this kernel's TCP byte counts of a new connection are not 0 (read, \
                         written: {:?} and {:?}): tcp channels cannot tell stream positions",
                        stream_positions(&a)?,
                        stream_positions(&b)?
                    )));
                }
            }
            for s in [&a, &b] {
                s.set_nodelay(true)?;
                s.set_nonblocking(true)?;
                set_buffers(s, bytes);
            }
            Ok((a.into(), b.into()))
        }
    }
}

/// Connect the bound UDP sockets `a` and `b` to each other, make them non-blocking, and empty
/// them: a connected UDP socket receives only from its peer, but datagrams that any local
/// process sent to it before (between its `bind` and its `connect`) stay queued, and a receive
/// does not check where a datagram came from (a forged frame would be delivered: its check is
/// no secret).
fn udp_pair_of(a: UdpSocket, b: UdpSocket) -> io::Result<(UdpSocket, UdpSocket)> {
    a.connect(b.local_addr()?)?;
    b.connect(a.local_addr()?)?;
    let mut buf = [0u8; 64];
    for s in [&a, &b] {
        s.set_nonblocking(true)?;
        // What can be queued is bounded by the receive buffer (nothing more can come in but
        // from the peer, which sends nothing yet); the bound only guards against a surprise.
        for _ in 0..1 << 16 {
            match s.recv(&mut buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                // A datagram (cut to the buffer), or an error reported for an earlier one.
                _ => {}
            }
        }
    }
    Ok((a, b))
}

/// Connect a stream to the listener `l` and accept it; return (the connecting end, the accepted
/// end). Connections that another local process made to `l` first are accepted and closed: the
/// first one in the queue is not necessarily ours.
///
/// The connecting end's port is greater than the listener's (see [`tcp_pair`]).
#[cfg(test)]
fn tcp_pair_on(l: TcpListener) -> io::Result<(TcpStream, TcpStream)> {
    let a = connect_from_above(l.local_addr()?)?
        .ok_or_else(|| io::Error::other("no free loopback port above the listener's"))?;
    tcp_pair_accept(l, a)
}

/// Accept the connection `a` made to the listener `l` (those of others before it are accepted
/// and closed); return (`a`, the accepted end).
fn tcp_pair_accept(l: TcpListener, a: TcpStream) -> io::Result<(TcpStream, TcpStream)> {
    let me = a.local_addr()?;
    // Ours is in the accept queue (its connect returned), behind at most a queue's worth of
    // others; the bound only guards against a surprise.
    for _ in 0..1 << 16 {
        let (b, peer) = l.accept()?;
        if peer == me {
            return Ok((a, b));
        }
    }
    Err(io::Error::other(
        "the loopback connection was not found in the accept queue",
    ))
}

/// A connected loopback TCP pair (the connecting end, the accepted end) whose connecting end has
/// the greater port, so that [`stream_positions`] can tell it: its kernel count of bytes
/// acknowledged includes its SYN. A listener on a port so high that no free port above it
/// comes up is dropped for another.
fn tcp_pair() -> io::Result<(TcpStream, TcpStream)> {
    for _ in 0..16 {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        if let Some(a) = connect_from_above(l.local_addr()?)? {
            return tcp_pair_accept(l, a);
        }
    }
    Err(io::Error::other(
        "no loopback listener with free ports above its own",
    ))
}

/// Connect a new TCP socket to `to` from a loopback port above `to`'s (the kernel picks a
/// random free port for each `bind` to port 0; a few tries are made); `None` when none came up.
///
/// # Errors
/// The system error of `socket`, `bind` or `connect`.
fn connect_from_above(to: std::net::SocketAddr) -> io::Result<Option<TcpStream>> {
    use std::os::fd::FromRawFd;
    let std::net::SocketAddr::V4(to) = to else {
        return Err(io::Error::other("an IPv4 loopback address is needed"));
    };
    let sin = |a: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(a).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    for _ in 0..64 {
        // SAFETY: plain system call; a descriptor it returns is ours.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let here = sin(Ipv4Addr::LOCALHOST, 0);
        // SAFETY: `here` is a sockaddr_in of `len` bytes.
        if unsafe { libc::bind(fd, (&here as *const libc::sockaddr_in).cast(), len) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let s = TcpStream::from(owned);
        if s.local_addr()?.port() <= to.port() {
            continue;
        }
        let there = sin(*to.ip(), to.port());
        loop {
            // SAFETY: `there` is a sockaddr_in of `len` bytes.
            if unsafe { libc::connect(fd, (&there as *const libc::sockaddr_in).cast(), len) } == 0 {
                return Ok(Some(s));
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                // A connect interrupted by a signal goes on in the kernel: asking again
                // answers that it is still under way, or that it is done.
                Some(libc::EINTR | libc::EALREADY) => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Some(libc::EISCONN) => return Ok(Some(s)),
                _ => return Err(e),
            }
        }
    }
    Ok(None)
}

/// Poll `fd` for input for at most `timeout` (zero: just look); return whether it is readable.
pub fn readable(fd: &impl AsFd, timeout: Duration) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = if timeout.is_zero() {
        0
    } else {
        timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int
    };
    // SAFETY: one valid pollfd, nfds = 1.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    r > 0 && p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0
}

/// Poll `fd` for `events` for at most `timeout` (zero: just look); return the events that
/// occurred (`POLLERR` and `POLLHUP` are reported whatever `events` asks), 0 when none did.
fn poll_events(fd: &impl AsFd, events: libc::c_short, timeout: Duration) -> libc::c_short {
    let mut p = libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events,
        revents: 0,
    };
    let ms = if timeout.is_zero() {
        0
    } else {
        timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int
    };
    // SAFETY: one valid pollfd, nfds = 1.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r > 0 {
        p.revents
    } else {
        0
    }
}

/// [`FrameSocket`] state bits, mirrored into [`Link`] for the waiters.
mod link {
    /// The unsent rest of a frame this side committed waits in its buffer (TCP).
    pub const PENDING: u32 = 1;
    /// The last send found the socket full and sent nothing of its frame.
    pub const REFUSED: u32 = 2;
    /// TCP: a hard error (`EPIPE`, `ECONNRESET`, ...): the connection is dead for good.
    pub const DEAD: u32 = 4;
    /// TCP: the peer shut its sending side down (a `recv` returned 0): nothing more will come,
    /// and the socket polls readable for ever.
    pub const EOF: u32 = 8;
}

/// The state bits of one end ([`link`]), shared by its [`FrameSocket`] (which writes them, only
/// when they change: never on the path of a message that goes through) and its waiters, which
/// poll only for what the endpoint can still get: nothing once the connection is dead (a dead
/// connection polls ready at once, for ever), no input after the end of the stream (which polls
/// readable for ever), room to send while a frame waits for it.
type Link = Arc<std::sync::atomic::AtomicU32>;

/// One end of a channel's socket with its framing buffers (allocated once).
#[derive(Debug)]
pub struct FrameSocket {
    io: Io,
    /// Outgoing frame (and, over TCP, the unsent rest of a partial write: `tx_off..tx_len`).
    tx: Vec<u8>,
    tx_off: usize,
    tx_len: usize,
    /// TCP: the stream position of the next byte this end sends (`tx[tx_off]` while the rest
    /// of a frame waits), counted from the connection's start across incarnations
    /// ([`stream_positions`]); a frame's check covers where it begins ([`FrameRepr::check_at`]).
    tx_pos: u64,
    /// TCP: received stream bytes not yet parsed (`rx_off..rx_len`). Frames are taken from the
    /// front by moving `rx_off`; the rest moves to the start of the buffer only before the next
    /// `recv` (once per read, not once per frame: a read of many small frames would otherwise
    /// move the whole buffer for each).
    rx: Vec<u8>,
    rx_len: usize,
    rx_off: usize,
    /// TCP: the stream position of `rx[0]` (so `rx[p]` is at `rx_pos + p`), counted as
    /// `tx_pos` is.
    rx_pos: u64,
    /// Unit tests: stream bytes moved to the front of `rx`.
    #[cfg(test)]
    moved: u64,
    /// Unit tests: frames visited by [`FrameSocket::frames_begun`].
    #[cfg(test)]
    walked: u64,
    /// TCP: the last `read` returned less than it had room for (the socket was drained then).
    short_read: bool,
    /// The longest payload this end sends, and the longest it takes (a longer frame is
    /// malformed): a source sends messages and takes acknowledgements ([`ACK_LEN`] of
    /// payload), a destination the other way round ([`FrameSocket::try_for`]).
    tx_max: usize,
    rx_max: usize,
    /// Malformed frames dropped.
    pub dropped: u64,
    /// TCP: bytes skipped while looking for the next frame (zeros not counted).
    pub skipped: u64,
    /// Hard socket errors met (TCP; the first marks the connection dead).
    pub failures: u64,
    /// The [`link`] bits (this side's copy; `link` holds the shared one).
    st: u32,
    link: Link,
    /// UDP: [`FrameSocket::recv_frame_wait`] switched the descriptor to blocking mode.
    blocking: bool,
    /// UDP: the receive time-out last set (`SO_RCVTIMEO`).
    rcvtimeo: Duration,
    /// The socket's receive buffer (`SO_RCVBUF`, bytes): the most that can be queued when a
    /// sampling read starts, and so (with what the stream buffer holds) what one read drains
    /// at most ([`SampleRx::drain`]).
    rcvbuf: usize,
    /// The last [`FrameSocket::recv_frame_within`] stopped at its receive bound, with input
    /// perhaps left on the socket.
    cut: bool,
    /// Unit tests: non-blocking `recv` system calls made (looks), and parks in `poll`.
    #[cfg(test)]
    looks: u64,
    #[cfg(test)]
    polls: u64,
}

#[derive(Debug)]
enum Io {
    Udp(UdpSocket),
    Tcp(TcpStream),
}

impl AsFd for FrameSocket {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match &self.io {
            Io::Udp(s) => s.as_fd(),
            Io::Tcp(s) => s.as_fd(),
        }
    }
}

/// What [`FrameSocket::recv_frame`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recv {
    /// A frame: its header; the payload is `out[HEADER_LEN..HEADER_LEN + len]`.
    Frame(FrameRepr),
    /// Nothing complete now (or the call's receive bound was reached: [`FrameSocket::cut`]).
    Nothing,
}

impl FrameSocket {
    /// Wrap an inherited socket of `kind` for frames of up to `max` payload bytes both ways (at
    /// least [`ACK_LEN`]: either way may carry a queuing channel's acks). A port's end is made
    /// by [`FrameSocket::try_for`], sized for the way its frames go.
    ///
    /// # Panics
    /// When the process's memory cannot hold the buffers ([`FrameSocket::try_new`] does not).
    pub fn new(fd: OwnedFd, kind: SocketKind, max: u32) -> FrameSocket {
        FrameSocket::try_new(fd, kind, max).unwrap_or_else(|e| panic!("socket buffers: {e}"))
    }

    /// [`FrameSocket::new`], or the error ([`zeroed`]) when the process's memory cannot hold
    /// the buffers (about `max` to send, twice `max` to receive over TCP).
    ///
    /// # Errors
    /// `OutOfMemory`.
    pub fn try_new(fd: OwnedFd, kind: SocketKind, max: u32) -> io::Result<FrameSocket> {
        let max = max.max(ACK_LEN as u32);
        FrameSocket::try_sized(fd, kind, max, max)
    }

    /// The end of a port of `max`-byte messages in direction `dir`: a source sends frames of up
    /// to `max` bytes and receives only acknowledgements ([`ACK_LEN`] of payload), a destination
    /// the other way round; its buffers are sized so ([`FrameSocket::try_sized`]).
    ///
    /// # Errors
    /// As [`FrameSocket::try_sized`].
    pub fn try_for(
        fd: OwnedFd,
        kind: SocketKind,
        max: u32,
        dir: PortDirection,
    ) -> io::Result<FrameSocket> {
        match dir {
            PortDirection::Source => FrameSocket::try_sized(fd, kind, max, ACK_LEN as u32),
            PortDirection::Destination => FrameSocket::try_sized(fd, kind, ACK_LEN as u32, max),
        }
    }

    /// Wrap an inherited socket of `kind` that sends frames of up to `tx_max` payload bytes and
    /// receives frames of up to `rx_max` (a longer one is malformed): buffers of about `tx_max`
    /// to send, and over TCP twice `rx_max` (at least 64 KiB) to receive. Both ends of a
    /// direction must agree on its maximum: the receiver drops longer frames, and a sender's
    /// restart padding ([`FrameSocket::resync_peer`]) covers a frame of its `tx_max`. A TCP end
    /// starts at the stream positions the kernel reports ([`stream_positions`]); one whose
    /// positions cannot be read (a reset connection) is made dead at once.
    ///
    /// # Errors
    /// `OutOfMemory`.
    pub fn try_sized(
        fd: OwnedFd,
        kind: SocketKind,
        tx_max: u32,
        rx_max: u32,
    ) -> io::Result<FrameSocket> {
        let (tx_max, rx_max) = (tx_max as usize, rx_max as usize);
        let (io, rx) = match kind {
            SocketKind::Udp => (Io::Udp(UdpSocket::from(fd)), Vec::new()),
            SocketKind::Tcp => (
                Io::Tcp(TcpStream::from(fd)),
                zeroed((2 * (rx_max + HEADER_LEN + TRAILER_LEN)).max(64 << 10))?,
            ),
        };
        // A connection whose positions cannot be read (reset: no peer name any more) carries
        // no frame again: it is made dead (a send or receive would have found that out).
        let (rx_pos, tx_pos, dead) = match &io {
            Io::Udp(_) => (0, 0, false),
            Io::Tcp(s) => match stream_positions(s) {
                Ok((r, w)) => (r, w, false),
                Err(_) => (0, 0, true),
            },
        };
        let tx = zeroed(tx_max + HEADER_LEN + PAGE)?;
        let rcvbuf = {
            let fd = match &io {
                Io::Udp(s) => s.as_raw_fd(),
                Io::Tcp(s) => s.as_raw_fd(),
            };
            let mut v: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: getsockopt writes at most `len` bytes into the c_int `v`.
            let r = unsafe {
                libc::getsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_RCVBUF,
                    (&mut v as *mut libc::c_int).cast(),
                    &mut len,
                )
            };
            if r == 0 && v > 0 {
                v as usize
            } else {
                16 << 20
            }
        };
        let mut sock = FrameSocket {
            io,
            rcvbuf,
            cut: false,
            tx,
            tx_off: 0,
            tx_len: 0,
            tx_pos,
            rx,
            rx_len: 0,
            rx_off: 0,
            rx_pos,
            #[cfg(test)]
            moved: 0,
            #[cfg(test)]
            walked: 0,
            short_read: false,
            tx_max,
            rx_max,
            dropped: 0,
            skipped: 0,
            failures: 0,
            st: 0,
            link: Link::default(),
            blocking: false,
            rcvtimeo: Duration::ZERO,
            #[cfg(test)]
            looks: 0,
            #[cfg(test)]
            polls: 0,
        };
        if dead {
            sock.failures += 1;
            sock.set_state(link::DEAD, true);
        }
        Ok(sock)
    }

    /// Set the [`link`] bits `bits` to `on` (and publish them to the waiters if they changed).
    #[cold]
    fn set_state(&mut self, bits: u32, on: bool) {
        let st = if on { self.st | bits } else { self.st & !bits };
        if st != self.st {
            self.st = st;
            self.link.store(st, Ordering::Release);
        }
    }

    /// Handle the error `e` of a `send` or `recv`: a socket that is full (or empty) or a
    /// transient shortage changes nothing; any other error over TCP is counted and marks the
    /// connection dead (it never recovers: loopback has no route to lose). UDP: the error is
    /// the datagram's alone (an `ECONNREFUSED` is reported once per ICMP error).
    #[cold]
    fn failed(&mut self, e: i32) {
        if matches!(e, libc::EAGAIN | libc::EINTR | libc::ENOBUFS | libc::ENOMEM) {
            return;
        }
        self.failures += 1;
        if matches!(self.io, Io::Tcp(_)) {
            self.set_state(link::DEAD, true);
        }
    }

    /// Return whether the connection is dead (TCP, after a hard error).
    pub fn is_dead(&self) -> bool {
        self.st & link::DEAD != 0
    }

    /// Return whether nothing can come in any more (TCP: the peer shut its side down, or the
    /// connection is dead): a wait for input has nothing to poll for.
    pub fn input_ended(&self) -> bool {
        self.st & (link::DEAD | link::EOF) != 0
    }

    /// Return whether the rest of a committed TCP frame waits to be sent ([`FrameSocket::flush`]).
    pub fn pending(&self) -> bool {
        self.tx_off < self.tx_len
    }

    /// Try to send the unsent rest of a committed TCP frame; return whether nothing is left.
    /// Never waits.
    pub fn flush(&mut self) -> bool {
        if self.tx_off >= self.tx_len {
            return true;
        }
        if self.is_dead() {
            return false;
        }
        while self.tx_off < self.tx_len {
            let Io::Tcp(s) = &mut self.io else {
                self.tx_off = self.tx_len;
                break;
            };
            match sys::send(
                s.as_raw_fd(),
                &self.tx[self.tx_off..self.tx_len],
                libc::MSG_NOSIGNAL,
            ) {
                Ok(0) => return false,
                Ok(n) => {
                    self.tx_off += n;
                    self.tx_pos += n as u64;
                }
                Err(libc::EINTR) => {}
                Err(e) => {
                    self.failed(e);
                    return false;
                }
            }
        }
        self.set_state(link::PENDING | link::REFUSED, false);
        true
    }

    /// Send one frame without waiting; return whether it was committed (false: the socket is
    /// full or dead, and nothing of it was sent). Over TCP the socket may take only part of
    /// it: the rest stays in this side's buffer (state `PENDING`) and goes out first on its
    /// next send or [`FrameSocket::flush`] (until then a new frame is refused; the waiters
    /// wait for room to send it).
    pub fn send_frame(&mut self, hdr: FrameRepr, payload: &[u8]) -> bool {
        if payload.len() > self.tx_max || !self.flush() {
            // (Longer than this end sends: its callers check the port's maximum first.)
            return false;
        }
        let mut n = HEADER_LEN + payload.len();
        let r = match &mut self.io {
            Io::Udp(s) => {
                // Header and payload copied into one buffer and sent with `send`: a `sendmsg` of
                // two pieces (no copy) costs 200-280 ns more per datagram on this VM (the
                // message header and the iovec array are copied in and checked), more than the
                // copy even of a 4 KiB payload. Session 5, whole udp round trips, alternated:
                // `sendmsg` for payloads of 1 KiB and more cost +1.2 µs at 1 KiB and +1.0 µs at
                // 4 KiB against the copy (the datagram is built from two pieces).
                // The payload goes where the copy runs fast (see `far_from`); the header right
                // before it.
                let at = far_from(payload.as_ptr(), self.tx[HEADER_LEN..].as_ptr());
                let frame = &mut self.tx[at..at + n];
                hdr.emit(&mut frame[..HEADER_LEN]);
                frame[HEADER_LEN..].copy_from_slice(payload);
                loop {
                    match sys::send(s.as_raw_fd(), &self.tx[at..at + n], libc::MSG_NOSIGNAL) {
                        Err(libc::EINTR) => {}
                        r => break r,
                    }
                }
            }
            Io::Tcp(s) => {
                if self.st & link::DEAD != 0 {
                    return false;
                }
                hdr.emit_at(&mut self.tx[..HEADER_LEN], self.tx_pos);
                self.tx[HEADER_LEN..n].copy_from_slice(payload);
                self.tx[n..n + TRAILER_LEN].copy_from_slice(&hdr.trailer_at(self.tx_pos));
                n += TRAILER_LEN;
                loop {
                    match sys::send(s.as_raw_fd(), &self.tx[..n], libc::MSG_NOSIGNAL) {
                        Err(libc::EINTR) => {}
                        r => break r,
                    }
                }
            }
        };
        match r {
            // (A datagram is sent whole or not at all.)
            Ok(k) if k > 0 => {
                // (Over UDP nothing reads it.)
                self.tx_pos += k as u64;
                if k < n {
                    self.tx_off = k;
                    self.tx_len = n;
                    self.set_state(link::PENDING, true);
                }
                if self.st & link::REFUSED != 0 {
                    self.set_state(link::REFUSED, false);
                }
                true
            }
            Ok(_) => {
                self.set_state(link::REFUSED, true);
                false
            }
            Err(e) => {
                self.failed(e);
                if !self.is_dead() {
                    self.set_state(link::REFUSED, true);
                }
                false
            }
        }
    }

    /// Receive one frame into `out` (at least `HEADER_LEN + max` bytes) without waiting.
    // Inline (see `SamplingDestination::wait_newer_or`): fewer returns after the `recv`.
    #[inline(always)]
    pub fn recv_frame(&mut self, out: &mut [u8]) -> Recv {
        let mut budget = RECV_ROUNDS;
        self.recv_frame_within(out, &mut budget)
    }

    /// Whether the last receive stopped at its bound ([`RECV_ROUNDS`]) rather than finding the
    /// socket empty: input may be left on the socket.
    pub fn cut(&self) -> bool {
        self.cut
    }

    /// [`FrameSocket::recv_frame`] that makes at most `budget` receives (system calls),
    /// counting them down: at 0 it answers Nothing, with [`FrameSocket::cut`] set, before a
    /// receive it would need. Frames already in the stream buffer are taken whatever the budget.
    /// A loop that takes several frames in one call passes one budget to all of them.
    #[inline(always)]
    pub fn recv_frame_within(&mut self, out: &mut [u8], budget: &mut u32) -> Recv {
        self.cut = false;
        loop {
            match &mut self.io {
                Io::Udp(s) => {
                    if *budget == 0 {
                        // Malformed datagrams (or frames the caller skips) all along.
                        self.cut = true;
                        return Recv::Nothing;
                    }
                    *budget -= 1;
                    // MSG_DONTWAIT: the descriptor may have been switched to blocking mode by
                    // `recv_frame_wait`.
                    #[cfg(test)]
                    {
                        self.looks += 1;
                    }
                    let n = match recv_flags(s, out, libc::MSG_DONTWAIT) {
                        Ok(n) => n,
                        Err(libc::EINTR) => continue,
                        Err(_) => return Recv::Nothing,
                    };
                    if let Some(h) = self.datagram(out, n) {
                        return Recv::Frame(h);
                    }
                }
                Io::Tcp(s) => {
                    let fd = s.as_raw_fd();
                    if let Some(h) = self.tcp_frame() {
                        let n = HEADER_LEN + h.len as usize;
                        let at = self.rx_off;
                        out[..n].copy_from_slice(&self.rx[at..at + n]);
                        self.rx_off = at + n + TRAILER_LEN;
                        if self.rx_off == self.rx_len {
                            self.rx_pos += self.rx_len as u64;
                            (self.rx_off, self.rx_len) = (0, 0);
                        }
                        return Recv::Frame(h);
                    }
                    if self.st & (link::DEAD | link::EOF) != 0 {
                        return Recv::Nothing;
                    }
                    // What is left (at most the beginning of a frame) moves to the front.
                    if self.rx_off > 0 {
                        #[cfg(test)]
                        {
                            self.moved += (self.rx_len - self.rx_off) as u64;
                        }
                        self.rx.copy_within(self.rx_off..self.rx_len, 0);
                        self.rx_pos += self.rx_off as u64;
                        self.rx_len -= self.rx_off;
                        self.rx_off = 0;
                    }
                    if *budget == 0 {
                        // Stream bytes without a frame (or frames the caller skips) all along;
                        // the buffer holds at most the beginning of one now.
                        self.cut = true;
                        return Recv::Nothing;
                    }
                    *budget -= 1;
                    // Never 0: the buffer holds two frames, and at most the beginning of one is
                    // left in it.
                    let room = self.rx.len() - self.rx_len;
                    #[cfg(test)]
                    {
                        self.looks += 1;
                    }
                    match sys::recv(fd, &mut self.rx[self.rx_len..], 0) {
                        Ok(0) => {
                            self.set_state(link::EOF, true);
                            return Recv::Nothing;
                        }
                        Ok(k) => {
                            self.rx_len += k;
                            self.short_read = k < room;
                        }
                        Err(libc::EINTR) => {}
                        Err(libc::EAGAIN) => return Recv::Nothing,
                        Err(e) => {
                            self.failed(e);
                            return Recv::Nothing;
                        }
                    }
                }
            }
        }
    }

    /// TCP: the complete, well-formed frame at the start of the stream buffer, if there is one
    /// (it stays there), after dropping what cannot be one: bytes that do not begin a valid
    /// header (counted in `skipped`, zeros excepted: [`FrameSocket::resync_peer`]'s padding),
    /// and frames whose trailer is not where their `len` says or whose `len` exceeds the maximum
    /// (counted in `dropped`). `None`: the buffer holds at most the beginning of a frame. Each
    /// byte is looked at a bounded number of times, whatever the peer sends.
    ///
    /// A header is valid only at the stream position its sender wrote it at (its check covers
    /// the position, [`FrameRepr::check_at`]), so a frame that lies inside another one's
    /// payload never passes for a frame of the stream, wherever this end starts reading (a new
    /// incarnation may start inside a frame, or inside the payload of one that holds a frame).
    /// A valid header whose trailer fails begins a frame a killed source tore: its whole extent
    /// is dropped (from where it was cut to where its trailer should be, the bytes are the
    /// restarted source's padding, which then goes on to the next frame).
    #[inline]
    fn tcp_frame(&mut self) -> Option<FrameRepr> {
        let mut p = self.rx_off;
        let found = loop {
            let b = &self.rx[p..self.rx_len];
            if b.len() < HEADER_LEN {
                // The beginning of a header waits for the rest.
                let k = b.len().min(MAGIC.len());
                if b[..k] == MAGIC[..k] {
                    break None;
                }
            } else {
                match FrameRepr::parse_at(b, self.rx_pos + p as u64) {
                    Some(h) if h.len as usize <= self.rx_max => {
                        let n = HEADER_LEN + h.len as usize;
                        if b.len() < n + TRAILER_LEN {
                            break None;
                        }
                        // The trailer: the header's check, then the end mark.
                        if b[n..n + 4] == b[12..16] && b[n + 4..n + TRAILER_LEN] == END {
                            break Some(h);
                        }
                        // Cut short: a killed source's frame (its padding covers the rest up to
                        // the trailer, `resync_peer`: more than a frame's length from the cut).
                        self.dropped += 1;
                        let end = p + n + TRAILER_LEN;
                        self.skipped += nonzero(&self.rx[p..end]);
                        p = end;
                        continue;
                    }
                    // A header claiming more than the port's maximum: a broken peer.
                    Some(_) => self.dropped += 1,
                    None => {}
                }
            }
            // Skip to the next byte that may begin a header (zeros are padding).
            let next = self.rx[p + 1..self.rx_len]
                .iter()
                .position(|&x| x == MAGIC[0])
                .map_or(self.rx_len, |i| p + 1 + i);
            self.skipped += nonzero(&self.rx[p..next]);
            p = next;
        };
        self.rx_off = p;
        found
    }

    /// TCP: send `tx_max + HEADER_LEN + TRAILER_LEN` zero bytes, ahead of this end's first frame
    /// (call it once, when the endpoint that sends on this socket is made; UDP: nothing to do).
    /// A previous incarnation of this end may have been killed in the middle of a frame (its
    /// rest died with the process, the socket lives on): the zeros complete that frame, whose
    /// trailer then does not match, so the peer drops it, skips the zeros and finds this
    /// incarnation's first header. Goes out like the rest of a frame ([`FrameSocket::flush`]).
    pub fn resync_peer(&mut self) {
        if !matches!(self.io, Io::Tcp(_)) || self.tx_off < self.tx_len {
            return;
        }
        let n = self.tx_max + HEADER_LEN + TRAILER_LEN;
        self.tx[..n].fill(0);
        self.tx_off = 0;
        self.tx_len = n;
        self.set_state(link::PENDING, true);
        self.flush();
    }

    /// The header of the datagram of `n` bytes received into `out`, if it is a well-formed
    /// frame (a malformed one is counted in `dropped`). `n` is the datagram's real length
    /// ([`recv_flags`]): one longer than `out` was cut, and is malformed whatever its header
    /// says.
    fn datagram(&mut self, out: &[u8], n: usize) -> Option<FrameRepr> {
        let frame = if n <= out.len() {
            Some(&out[..n])
        } else {
            None
        };
        match frame.and_then(FrameRepr::parse) {
            Some(h) if h.len as usize == n - HEADER_LEN && n - HEADER_LEN <= self.rx_max => Some(h),
            _ => {
                self.dropped += 1;
                None
            }
        }
    }

    /// UDP: wait up to `timeout` (rounded up to the kernel's tick and expiring up to a tick late,
    /// so callers leave a margin) for one datagram in a blocking `recv`, and return it as
    /// [`FrameSocket::recv_frame`] would; `Nothing` when the time-out passed, a signal
    /// interrupted the wait (`SO_RCVTIMEO` waits are never restarted, whatever `SA_RESTART`) or
    /// the datagram was malformed. `None` over TCP (wait with [`readable`] instead).
    ///
    /// One system call per wake-up where `poll` then `recv` makes two: measured, udp block class
    /// +2.5…2.9 µs → +1.3…1.6 µs per round trip over raw UDP's blocking `recv`. The first call
    /// switches the descriptor to blocking mode (every other receive passes `MSG_DONTWAIT`).
    pub fn recv_frame_wait(&mut self, out: &mut [u8], timeout: Duration) -> Option<Recv> {
        let Io::Udp(s) = &self.io else {
            return None;
        };
        let fd = s.as_raw_fd();
        if !self.blocking {
            // SAFETY: fcntl on a descriptor this socket owns; no memory is passed.
            let ok = unsafe {
                let fl = libc::fcntl(fd, libc::F_GETFL);
                fl >= 0 && libc::fcntl(fd, libc::F_SETFL, fl & !libc::O_NONBLOCK) == 0
            };
            if !ok {
                return None;
            }
            self.blocking = true;
        }
        // A zero SO_RCVTIMEO means "no time-out".
        let t = timeout.max(Duration::from_micros(1));
        if self.rcvtimeo != t {
            let tv = libc::timeval {
                tv_sec: t.as_secs() as libc::time_t,
                tv_usec: t.subsec_micros() as libc::suseconds_t,
            };
            // SAFETY: setsockopt reads a timeval of the given size.
            let r = unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_RCVTIMEO,
                    (&tv as *const libc::timeval).cast(),
                    std::mem::size_of::<libc::timeval>() as libc::socklen_t,
                )
            };
            if r != 0 {
                return None;
            }
            self.rcvtimeo = t;
        }
        Some(match recv_flags(s, out, 0) {
            Ok(n) => self.datagram(out, n).map_or(Recv::Nothing, Recv::Frame),
            Err(_) => Recv::Nothing,
        })
    }

    /// Return whether another [`FrameSocket::recv_frame`] right after one that returned a frame
    /// may find something: always over UDP; over TCP only if a complete frame is buffered or the
    /// last `read` filled the buffer (a short read drained the socket, so asking again would
    /// only cost a system call that answers `EAGAIN`).
    fn may_have_more(&mut self) -> bool {
        match &self.io {
            Io::Udp(_) => true,
            Io::Tcp(_) => !self.short_read || self.tcp_frame().is_some(),
        }
    }

    /// TCP: return whether a complete frame is already in this side's stream buffer (read from
    /// the socket, so invisible to `poll`); UDP: never.
    fn frame_buffered(&mut self) -> bool {
        match &self.io {
            Io::Udp(_) => false,
            Io::Tcp(_) => self.tcp_frame().is_some(),
        }
    }

    /// TCP: the frames begun in this side's stream buffer (read from the socket, not yet
    /// taken): the complete ones, and one of which only the beginning is there (bytes that may
    /// begin one count as one); UDP: 0. They die with the process, and with them what the peer
    /// counted for them.
    fn frames_begun(&mut self) -> u64 {
        if matches!(self.io, Io::Udp(_)) || self.rx_off == self.rx_len {
            return 0;
        }
        // Skip what cannot begin a frame first (as taking the next frame would).
        self.tcp_frame();
        let mut n = 0;
        let mut p = self.rx_off;
        while p < self.rx_len {
            n += 1;
            #[cfg(test)]
            {
                self.walked += 1;
            }
            match FrameRepr::parse_at(&self.rx[p..self.rx_len], self.rx_pos + p as u64) {
                Some(h) if h.len as usize <= self.rx_max => {
                    p += HEADER_LEN + h.len as usize + TRAILER_LEN;
                }
                _ => break,
            }
        }
        n
    }

    /// Unit tests: take this end's sending position from the kernel again, after a test wrote
    /// raw bytes on its socket behind its back (as a killed incarnation of the same end would
    /// have).
    #[cfg(test)]
    fn tx_pos_from_kernel(&mut self) {
        assert!(!self.pending());
        self.tx_pos = stream_positions(&self.as_fd()).unwrap().1;
    }

    /// Return a second handle on the socket (for waiting without the endpoint).
    ///
    /// # Errors
    /// The system error of `dup`.
    pub fn try_clone_fd(&self) -> io::Result<OwnedFd> {
        self.as_fd().try_clone_to_owned()
    }
}

/// The bytes of `b` that are not zero.
fn nonzero(b: &[u8]) -> u64 {
    b.iter().filter(|&&x| x != 0).count() as u64
}

/// The kernel's tick (the resolution of `CLOCK_MONOTONIC_COARSE`, 1 / `CONFIG_HZ`; 4 ms here),
/// to which socket time-outs are rounded.
fn kernel_tick() -> Duration {
    static TICK: OnceLock<Duration> = OnceLock::new();
    *TICK.get_or_init(|| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is a valid out-pointer.
        let r = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
        if r == 0 && (ts.tv_sec > 0 || ts.tv_nsec > 0) {
            Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
        } else {
            // The slowest tick Linux has (HZ = 100).
            Duration::from_millis(10)
        }
    })
}

/// `recv(2)` of one datagram with `flags` into `out`: the datagram's real length, which exceeds
/// `out.len()` when it was cut to fit (`MSG_TRUNC`: no extra system call); the error is the
/// `errno` value.
#[inline(always)]
fn recv_flags(s: &UdpSocket, out: &mut [u8], flags: libc::c_int) -> Result<usize, i32> {
    sys::recv(s.as_raw_fd(), out, flags | libc::MSG_TRUNC)
}

/// `recv(2)` and `send(2)` on the message path, as system calls made right here.
///
/// glibc's `recv` and `send` are cancellation points: each call sets and clears the thread's
/// asynchronous-cancellation state with an atomic compare-and-swap before and after the system
/// call (partix never cancels a thread: STOP has its own signal), its failure goes through the
/// thread-local `errno` into an `io::Error`, and the wrapper is one more frame to return from
/// after the system call, a mispredicted return on this VM (see `SampleRx::wait_newer_or`). A
/// spinning udp wait makes one such call per look, and every message one `send` and one `recv`
/// that returns it. On x86-64 these are the `syscall` instruction inline, answering `-errno`;
/// elsewhere the libc functions.
mod sys {
    /// Receive into `buf` from descriptor `fd`: the length, or the `errno` value.
    #[inline(always)]
    pub(super) fn recv(fd: i32, buf: &mut [u8], flags: libc::c_int) -> Result<usize, i32> {
        // SAFETY: `buf` is writable for `buf.len()` bytes for the duration of the call; the
        // kernel writes at most that many.
        unsafe { transfer(libc::SYS_recvfrom, fd, buf.as_mut_ptr(), buf.len(), flags) }
    }

    /// Send `buf` on the connected descriptor `fd`: the length sent, or the `errno` value.
    #[inline(always)]
    pub(super) fn send(fd: i32, buf: &[u8], flags: libc::c_int) -> Result<usize, i32> {
        // SAFETY: `buf` is readable for `buf.len()` bytes for the duration of the call.
        unsafe { transfer(libc::SYS_sendto, fd, buf.as_ptr(), buf.len(), flags) }
    }

    /// `recvfrom` or `sendto` (`nr`) of `len` bytes at `buf` with no address (a connected
    /// socket): the length, or the `errno` value.
    ///
    /// # Safety
    /// `buf` must be valid for `len` bytes as call `nr` uses them (written by `recvfrom`, read
    /// by `sendto`) for the duration of the call.
    #[inline(always)]
    unsafe fn transfer(
        nr: libc::c_long,
        fd: i32,
        buf: *const u8,
        len: usize,
        flags: libc::c_int,
    ) -> Result<usize, i32> {
        // SAFETY: as the caller guarantees; the two address arguments are null.
        let r = unsafe { syscall6(nr, [fd as usize, buf as usize, len, flags as usize, 0, 0]) };
        if r < 0 {
            Err((-r) as i32)
        } else {
            Ok(r as usize)
        }
    }

    /// A system call of six arguments; the result is `-errno` on failure.
    ///
    /// # Safety
    /// The arguments must be valid for system call `nr` (pointers to memory the kernel may
    /// read or write as that call does).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn syscall6(nr: libc::c_long, a: [usize; 6]) -> isize {
        let r: isize;
        // SAFETY: the x86-64 Linux system call convention: number in rax, arguments in rdi,
        // rsi, rdx, r10, r8, r9, result in rax; the instruction clobbers rcx and r11. Memory is
        // not marked untouched: the kernel may write the buffer. No stack is used.
        unsafe {
            core::arch::asm!(
                "syscall",
                inlateout("rax") nr as isize => r,
                in("rdi") a[0],
                in("rsi") a[1],
                in("rdx") a[2],
                in("r10") a[3],
                in("r8") a[4],
                in("r9") a[5],
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        r
    }

    /// Elsewhere: through libc (`-errno` on failure, as the instruction answers).
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    unsafe fn syscall6(nr: libc::c_long, a: [usize; 6]) -> isize {
        // SAFETY: as the caller guarantees.
        let r = unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) };
        if r < 0 {
            -(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO) as isize)
        } else {
            r as isize
        }
    }
}

fn spins_of(mode: RecvMode) -> u64 {
    match mode {
        RecvMode::Spin => u64::MAX,
        RecvMode::SpinThenPark { spins } => u64::from(spins),
        RecvMode::Blocking => 0,
    }
}

// ------------------------------------------------------------------------------------------
// Sampling

/// Sampling source over sockets: one socket per destination.
#[derive(Debug)]
pub struct SampleTx {
    socks: Vec<FrameSocket>,
    seq: u32,
}

impl SampleTx {
    /// Use the inherited sockets.
    pub fn new(mut socks: Vec<FrameSocket>) -> SampleTx {
        for s in &mut socks {
            s.resync_peer();
        }
        SampleTx { socks, seq: 0 }
    }

    /// Send `data` stamped `stamp` to every destination (a full socket drops it).
    pub fn write(&mut self, data: &[u8], stamp: u64) {
        self.seq = self.seq.wrapping_add(1).max(1);
        let hdr = FrameRepr {
            seq: self.seq,
            len: data.len() as u32,
            stamp,
        };
        for s in &mut self.socks {
            s.send_frame(hdr, data);
        }
    }
}

/// Sampling destination over a socket: keeps the newest frame.
#[derive(Debug)]
pub struct SampleRx {
    sock: FrameSocket,
    scratch: Vec<u8>,
    last: Vec<u8>,
    /// Where the newest frame starts in `last` (frames are received at an offset that makes
    /// the copy into the caller's buffer fast, see [`far_from`]).
    last_at: usize,
    /// The address of the caller's buffer in the latest call (a placement hint only), or 0.
    dst: usize,
    /// The newest frame's header, its `seq` replaced by this destination's own number for it
    /// ([`SampleRx::keep`]).
    have: Option<FrameRepr>,
    /// The number of the last frame kept: this destination numbers the frames it receives
    /// itself, 1, 2, ... (wrapping, never 0).
    numbered: u32,
    /// A look of the current call found the socket empty (see [`SampleRx::wait_newer_or`]);
    /// cleared by [`SampleRx::new_call`] and whenever a frame is taken without draining.
    looked_empty: bool,
}

impl SampleRx {
    /// Use the inherited socket.
    ///
    /// # Panics
    /// When the process's memory cannot hold the buffers ([`SampleRx::try_new`] does not).
    pub fn new(sock: FrameSocket) -> SampleRx {
        SampleRx::try_new(sock).unwrap_or_else(|e| panic!("sampling buffers: {e}"))
    }

    /// [`SampleRx::new`], or the error ([`zeroed`]) when the process's memory cannot hold its
    /// two buffers of about `max` bytes.
    ///
    /// # Errors
    /// `OutOfMemory`.
    pub fn try_new(sock: FrameSocket) -> io::Result<SampleRx> {
        let n = sock.rx_max + HEADER_LEN + PAGE;
        Ok(SampleRx {
            scratch: zeroed(n)?,
            last: zeroed(n)?,
            sock,
            last_at: 0,
            dst: 0,
            have: None,
            numbered: 0,
            looked_empty: false,
        })
    }

    /// Start a new call of the port's service: frames may have queued up since the last look.
    #[inline]
    pub fn new_call(&mut self) {
        self.looked_empty = false;
    }

    /// Take every waiting frame, keep the newest; return how many frames it took (the receiving
    /// agent drains with it between the port's calls). UDP: `recv` until `EAGAIN` (an empty poll
    /// is one cheap `recv`; a `recvmmsg` of several datagrams per poll was measured slower, see
    /// `docs/bench-rtt.md`). TCP: stops after a short `read` (no extra call that would answer
    /// `EAGAIN`).
    ///
    /// At most what can have been queued when it started per drain (the socket's receive
    /// buffer, and over tcp what the stream buffer already holds), so the newest frame then is
    /// taken, but not the frames of a source that writes as fast as this side takes them (the
    /// call would never end). A udp datagram is charged [`UDP_DRAIN_CHARGE`] more than its
    /// frame bytes. A drain stopped by this budget or by a receive's bound ([`RECV_ROUNDS`])
    /// does not count as a look that found the socket empty.
    pub(super) fn drain(&mut self) -> usize {
        let mut n = 0;
        let (mut budget, extra) = match self.sock.io {
            Io::Udp(_) => (self.sock.rcvbuf, UDP_DRAIN_CHARGE),
            Io::Tcp(_) => (self.sock.rcvbuf + (self.sock.rx_len - self.sock.rx_off), 0),
        };
        loop {
            let at = self.place();
            let Recv::Frame(h) = self.sock.recv_frame(&mut self.scratch[at..]) else {
                if self.sock.cut() {
                    self.looked_empty = false;
                    return n;
                }
                break;
            };
            n += 1;
            if h.len != 0 {
                self.keep(h, at);
            }
            budget = budget.saturating_sub(HEADER_LEN + h.len as usize + extra);
            if budget == 0 {
                // Stopped with frames perhaps left: the socket was not found empty.
                self.looked_empty = false;
                return n;
            }
            if !self.sock.may_have_more() {
                break;
            }
        }
        self.looked_empty = true;
        n
    }

    /// Whether the socket may poll readable with nothing for this destination to take: the
    /// input ended (TCP: the peer closed, or the connection is dead: it polls readable for
    /// ever), or the last receive stopped at its bound (a flood of what is not a frame). The
    /// receiving agent then sleeps before it polls again, rather than spin.
    pub(super) fn stuck(&self) -> bool {
        self.sock.input_ended() || self.sock.cut()
    }

    /// Drain to the newest frame and copy it into `buf`.
    ///
    /// # Errors
    /// [`ReadError::Empty`] or [`ReadError::BufferTooSmall`].
    pub fn read(&mut self, buf: &mut [u8]) -> Result<ReadOk, ReadError> {
        self.dst = buf.as_ptr() as usize;
        self.drain();
        self.copy_newest(buf)
    }

    /// Where in `scratch` to receive the next frame: so that its payload lies half a page away
    /// from the caller's buffer (the copy then runs at full speed, [`far_from`]); at the start
    /// without a caller.
    #[inline]
    fn place(&self) -> usize {
        if self.dst == 0 {
            0
        } else {
            far_from(self.dst as *const u8, self.scratch[HEADER_LEN..].as_ptr())
        }
    }

    /// Keep the frame `h` just received at `at` in `scratch` as the newest, numbered with the
    /// next number of this destination; return that number.
    ///
    /// The number the waits compare (`last_seq`) is this destination's, not the source's: every
    /// frame taken from the socket is a write of the source (a socket neither repeats nor
    /// reorders frames), so each is newer than the one before it. The source's own numbers
    /// start again at 1 when its partition restarts (the socket outlives it, its count does
    /// not): a destination whose last message was the source's number n took the restarted
    /// source's n-th write for the message it already had, and `wait_sampling_message` slept
    /// through it (a source writing once per incarnation was never seen again).
    #[inline]
    fn keep(&mut self, h: FrameRepr, at: usize) -> u32 {
        std::mem::swap(&mut self.scratch, &mut self.last);
        self.last_at = at;
        self.numbered = self.numbered.wrapping_add(1).max(1);
        self.have = Some(FrameRepr {
            seq: self.numbered,
            ..h
        });
        self.numbered
    }

    /// Copy the newest frame already taken into `buf`.
    fn copy_newest(&self, buf: &mut [u8]) -> Result<ReadOk, ReadError> {
        let h = self.have.ok_or(ReadError::Empty)?;
        let len = h.len as usize;
        if buf.len() < len {
            return Err(ReadError::BufferTooSmall { needed: len });
        }
        let at = self.last_at + HEADER_LEN;
        buf[..len].copy_from_slice(&self.last[at..at + len]);
        Ok(ReadOk {
            len,
            seq: h.seq,
            written_at_ns: h.stamp,
            attempts: 1,
        })
    }

    /// Wait until a message other than `last_seq` arrived, then read it.
    ///
    /// # Errors
    /// [`WaitError::TimedOut`] or [`WaitError::Read`].
    pub fn wait_newer(
        &mut self,
        buf: &mut [u8],
        last_seq: Option<u32>,
        mode: RecvMode,
        timeout: Option<Duration>,
    ) -> Result<ReadOk, WaitError> {
        self.wait_newer_or(buf, last_seq, mode, timeout, || false)
    }

    /// [`SampleRx::wait_newer`] that also gives up early, with [`WaitError::TimedOut`], once
    /// `stop()` returns true: checked after every look that found nothing newer, so also right
    /// after a `poll(2)` interrupted by a signal (`EINTR`) whose handler made it true.
    ///
    /// # Errors
    /// [`WaitError::TimedOut`] or [`WaitError::Read`].
    // Inline (see `SamplingDestination::wait_newer_or`): fewer returns after the `recv`.
    #[inline(always)]
    pub fn wait_newer_or(
        &mut self,
        buf: &mut [u8],
        last_seq: Option<u32>,
        mode: RecvMode,
        timeout: Option<Duration>,
        mut stop: impl FnMut() -> bool,
    ) -> Result<ReadOk, WaitError> {
        // A zero time-out is one look (and no clock read).
        let probe = timeout.is_some_and(|t| t.is_zero());
        // (A time-out past the clock's range is none: `Instant + Duration` panics.)
        let deadline = partix_shm::notifier::deadline_after(timeout.filter(|_| !probe));
        let spins = spins_of(mode);
        let mut i = 0u64;
        // The first look drains to the newest frame. Once a look found the socket empty, every
        // frame received later in this call arrived during the call, so the first one is
        // returned at once: at the moment it arrived it was the newest message, a moment inside
        // this call (the read is linearizable there); a frame queued behind it is newer still
        // and is what the next read returns. This saves the receive that would only answer
        // `EAGAIN` on the path of every delivered message. The knowledge carries over between
        // the waits of one call of the service (its first look, then its slices) until
        // `new_call`; a frame taken without draining ends it.
        let mut seen_empty = self.looked_empty;
        self.dst = buf.as_ptr() as usize;
        // Parking after a look that found the socket empty (in this wait or earlier in the
        // call), no look is made before the park: it would only answer `EAGAIN`, a system call
        // more per message received. A park returns at once when a frame is queued: udp's
        // blocking `recv` takes the datagram itself, and after a `poll` the next look takes what
        // `poll` saw.
        let mut after_poll = false;
        loop {
            if seen_empty && i >= spins && !probe && !after_poll {
                // The park below is the look.
            } else if seen_empty {
                after_poll = false;
                let at = self.place();
                match self.sock.recv_frame(&mut self.scratch[at..]) {
                    Recv::Frame(h) => {
                        self.looked_empty = false;
                        seen_empty = false;
                        if h.len != 0 {
                            self.keep(h, at);
                        }
                    }
                    // Stopped at its bound: the socket was not found empty (drain next).
                    Recv::Nothing if self.sock.cut() => {
                        self.looked_empty = false;
                        seen_empty = false;
                    }
                    Recv::Nothing => {}
                }
            } else {
                self.drain();
                seen_empty = self.looked_empty;
            }
            if let Some(h) = self.have {
                if Some(h.seq) != last_seq {
                    return self.copy_newest(buf).map_err(WaitError::Read);
                }
            }
            if probe || stop() {
                return Err(WaitError::TimedOut);
            }
            if i < spins {
                // Spinning: the clock is read every 16th look only (a look is a system call of
                // several hundred ns; the clock read would lengthen every one by 10 %).
                if i.is_multiple_of(16) && deadline.is_some_and(|d| Instant::now() >= d) {
                    return Err(WaitError::TimedOut);
                }
                i += 1;
                std::hint::spin_loop();
            } else {
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) {
                    return Err(WaitError::TimedOut);
                }
                let left = deadline.map_or(PARK_SLICE, |d| (d - now).min(PARK_SLICE));
                // udp, with at least four kernel ticks left: wait in `recv` itself for two ticks
                // and return the datagram it brings (the first to arrive after a look found the
                // socket empty). `SO_RCVTIMEO` is rounded up to a tick and expires up to a tick
                // late, so such a wait ends before `left` does; shorter waits use `poll`, whose
                // time-out is in milliseconds.
                let tick = kernel_tick();
                let at = self.place();
                let got = if left >= 4 * tick {
                    self.sock.recv_frame_wait(&mut self.scratch[at..], 2 * tick)
                } else {
                    None
                };
                match got {
                    Some(Recv::Frame(h)) => {
                        self.looked_empty = false;
                        if h.len != 0 && Some(self.keep(h, at)) != last_seq {
                            return self.copy_newest(buf).map_err(WaitError::Read);
                        }
                    }
                    Some(Recv::Nothing) => {}
                    None if self.sock.input_ended() => {
                        // Nothing can come (and the socket would poll readable at once, for
                        // ever): sleep the slice.
                        std::thread::sleep(left);
                    }
                    None => {
                        readable(&self.sock, left);
                        after_poll = true;
                        #[cfg(test)]
                        {
                            self.sock.polls += 1;
                        }
                    }
                }
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Queuing

/// Counters a queuing endpoint shares with its [`SocketWaiter`].
#[derive(Debug, Default)]
pub struct Counters {
    /// Source: frames sent. Destination: messages buffered locally.
    pub a: AtomicU64,
    /// Source: cumulative ack received.
    pub b: AtomicU64,
}

/// Queuing source over a socket.
#[derive(Debug)]
pub struct QueueTx {
    sock: FrameSocket,
    limit: u64,
    sent: u64,
    acked: u64,
    /// The destination incarnation whose acks `acked` counts (0: none seen yet).
    peer: u32,
    scratch: Vec<u8>,
    counters: Arc<Counters>,
    /// Where `sent`, `acked` and `peer` are kept for the next incarnation of this source (a
    /// region that outlives restarts; [`QueueTx::with_book`]).
    book: Option<Words>,
    /// Whether the rest of the last frame counted in `sent` waits in `sock` (the rest pending
    /// there may also be [`FrameSocket::resync_peer`]'s padding, which is no frame).
    partial: bool,
    /// When the rooms asked about came ([`QueueTx::ask_room_note`]).
    room: RoomNote,
    /// Unit tests: where [`QueueTx::try_send`] stops as if the process were killed there.
    #[cfg(test)]
    die: Option<Die>,
}

/// What a socket queuing source knows of when rooms came ([`QueueTx::room_by`]): since the
/// last request, the times of the first [`ROOM_TIMES`] rooms the acks gave (each ack's time
/// for every credit it returned: the first of them was made then, the others by then or
/// later; 0: not known), how many of them there are, and the number of the first (the
/// cumulative ack when asked: rooms are numbered as the acks count consumed messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RoomNote {
    asked: bool,
    first: u64,
    count: usize,
    times: [u64; ROOM_TIMES],
}

/// How many rooms after a request a socket source keeps the time of (as the shared-memory
/// note's `NOTE_ROOMS`).
const ROOM_TIMES: usize = 5;

impl RoomNote {
    const IDLE: RoomNote = RoomNote {
        asked: false,
        first: 0,
        count: 0,
        times: [0; ROOM_TIMES],
    };
}

/// Where a unit test's [`QueueTx::try_send`] stops, storing nothing more, as a process killed
/// there would.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Die {
    /// Right before the frame's send.
    BeforeSend,
    /// Right after it.
    AfterSend,
}

/// The words of a socket queuing source's book ([`QueueTx::with_book`]).
pub const BOOK_WORDS: usize = 4;
/// Frames sent (as `QueueTx::sent`).
const BOOK_SENT: usize = 0;
/// Cumulative ack received (as `QueueTx::acked`).
const BOOK_ACKED: usize = 1;
/// The destination incarnation `BOOK_ACKED` counts for.
const BOOK_PEER: usize = 2;
/// 1 while the last frame counted in `BOOK_SENT` may not have reached the socket whole (a TCP
/// frame whose rest waits in the process, or a send under way: a frame is counted before its
/// send): a process killed then lost it, or sent it just before it died.
const BOOK_PARTIAL: usize = 3;

impl QueueTx {
    /// Use the inherited socket; `limit` is `MaxNbMessages`.
    ///
    /// # Panics
    /// When the process's memory cannot hold the buffer ([`QueueTx::try_new`] does not).
    pub fn new(sock: FrameSocket, limit: u32) -> QueueTx {
        QueueTx::try_new(sock, limit).unwrap_or_else(|e| panic!("queuing buffer: {e}"))
    }

    /// [`QueueTx::new`], or the error ([`zeroed`]) when the process's memory cannot hold its
    /// buffer of about `max` bytes.
    ///
    /// # Errors
    /// `OutOfMemory`.
    pub fn try_new(mut sock: FrameSocket, limit: u32) -> io::Result<QueueTx> {
        // For the acknowledgements (a source takes nothing else).
        let scratch = zeroed(sock.rx_max + HEADER_LEN)?;
        sock.resync_peer();
        Ok(QueueTx {
            scratch,
            sock,
            limit: u64::from(limit),
            sent: 0,
            acked: 0,
            peer: 0,
            counters: Arc::new(Counters::default()),
            book: None,
            partial: false,
            room: RoomNote::IDLE,
            #[cfg(test)]
            die: None,
        })
    }

    /// Keep this source's counts in `book` ([`BOOK_WORDS`] words of a region that outlives the
    /// process; zeros the first time), and go on from what an earlier incarnation kept there.
    ///
    /// Without it a restarted source started from nothing in flight while the frames of its
    /// earlier incarnations still waited in the socket for a destination that did not read: k
    /// restarts let (k + 1) · `MaxNbMessages` frames into buffers sized for two, and a UDP
    /// socket drops what does not fit. A frame the book marks partial (a TCP frame whose rest
    /// died with the process, which [`FrameSocket::resync_peer`] makes the destination drop;
    /// or a frame whose send was under way) is not counted: the count is exact, or, for an
    /// incarnation killed right after a send went through, one frame short, never more (see
    /// [`QueueTx::try_send`]). A book that counts more than `MaxNbMessages` in flight (which
    /// this code never writes) is taken as nothing in flight, as without a book.
    pub fn with_book(mut self, book: Words) -> QueueTx {
        let partial = book.get(BOOK_PARTIAL).load(Ordering::Acquire) != 0;
        let sent = book
            .get(BOOK_SENT)
            .load(Ordering::Acquire)
            .saturating_sub(u64::from(partial));
        let acked = book.get(BOOK_ACKED).load(Ordering::Acquire);
        let peer = book.get(BOOK_PEER).load(Ordering::Acquire);
        if sent.wrapping_sub(acked) <= self.limit {
            self.sent = sent;
            self.acked = acked;
            self.peer = peer as u32;
        } else {
            self.sent = sent;
            self.acked = sent;
            self.peer = 0;
        }
        self.book = Some(book);
        self.keep();
        self
    }

    /// Publish the counts to the waiter and the book.
    fn keep(&self) {
        self.counters.a.store(self.sent, Ordering::Release);
        self.counters.b.store(self.acked, Ordering::Release);
        if let Some(b) = &self.book {
            b.get(BOOK_SENT).store(self.sent, Ordering::Release);
            b.get(BOOK_ACKED).store(self.acked, Ordering::Release);
            b.get(BOOK_PEER)
                .store(u64::from(self.peer), Ordering::Release);
            b.get(BOOK_PARTIAL).store(
                u64::from(self.partial && self.sock.pending()),
                Ordering::Release,
            );
        }
    }

    fn drain_acks(&mut self) {
        // The destination sends only acks (their time, or no payload); anything else is
        // dropped. At most
        // `limit` + RECV_ROUNDS receives per drain (a destination sends at most one ack per
        // message it consumes, and the announcement): one that floods acks cannot keep the
        // source here; a later drain takes the rest (the socket polls readable for it).
        let mut budget = u32::try_from(self.limit)
            .unwrap_or(u32::MAX)
            .saturating_add(RECV_ROUNDS);
        loop {
            match self.sock.recv_frame_within(&mut self.scratch, &mut budget) {
                Recv::Frame(h) if h.len == 0 || h.len as usize == ACK_LEN => {
                    // When the first room this ack gives was made, and the last (0: not known).
                    let word = |i: usize| {
                        let at = HEADER_LEN + 8 * i;
                        match self.scratch.get(at..at + 8) {
                            Some(b) if h.len as usize == ACK_LEN => {
                                u64::from_le_bytes(b.try_into().expect("8 bytes"))
                            }
                            _ => 0,
                        }
                    };
                    let (first, last) = (word(0), word(1));
                    let before = self.acked;
                    if self.peer == 0 && h.stamp <= self.sent {
                        // The first ack (normally the destination's announcement, of 0): learn
                        // the destination's incarnation.
                        self.peer = h.seq;
                    }
                    if h.seq != self.peer || h.stamp > self.sent {
                        // A restart on one side: a destination identity this source has not
                        // seen (its count started again: a destination without a book, or one
                        // killed inside a tcp read), or an ack of more than this source
                        // counted (a source without a book was restarted, or one counted a
                        // frame too few, or the destination one too many). Continue from the
                        // destination's count with nothing in flight.
                        self.peer = h.seq;
                        self.sent = h.stamp;
                        self.acked = h.stamp;
                        // Rooms are numbered from the new count on (those of the jump: not
                        // known).
                        self.room.first = h.stamp;
                        self.room.count = 0;
                    } else if h.stamp > self.acked {
                        self.acked = h.stamp;
                    }
                    // Each credit the ack returned is a room: the first made at `first`, the
                    // others by `last`. Rooms `room.first..` in order, as the acks count them.
                    let rooms = self.acked.wrapping_sub(before).min(self.limit);
                    let numbered = self.room.first.wrapping_add(self.room.count as u64) == before;
                    if self.room.asked && self.acked != before && numbered {
                        let r = &mut self.room;
                        for j in 0..rooms {
                            if r.count == ROOM_TIMES {
                                break;
                            }
                            r.times[r.count] = if j == 0 { first } else { last.max(first) };
                            r.count += 1;
                        }
                    }
                }
                Recv::Frame(_) => self.sock.dropped += 1,
                Recv::Nothing => break,
            }
        }
        self.keep();
    }

    /// Frames this source counted as sent (across its restarts, with a book).
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// The source found no credit and a sender waits: note when the rooms the next acks give
    /// were made, as their payload says ([`QueueTx::room_by`]): a new request.
    pub fn ask_room_note(&mut self) {
        self.room = RoomNote {
            asked: true,
            first: self.acked,
            ..RoomNote::IDLE
        };
    }

    /// A source that has credit: whether the room the next send takes (the credit of
    /// consumed message number `sent - limit`) was made by `ns` (`CLOCK_MONOTONIC` ns), by the
    /// ack that gave it (the acks are taken off the socket first). True when nothing was asked
    /// or noted, or the ack did not say (credit this end had before the request, an ack with
    /// no time, or a count that jumped: a restart). The time is the destination's clock: over
    /// loopback the same; a channel between nodes needs a common time base, as the frames'
    /// send times do.
    pub fn room_by(&mut self, ns: u64) -> bool {
        self.drain_acks();
        let i = self
            .sent
            .wrapping_sub(self.limit)
            .wrapping_sub(self.room.first);
        match usize::try_from(i) {
            Ok(i) if i < self.room.count => self.room.times[i] <= ns,
            _ => true,
        }
    }

    /// Send `data` if the credit allows and the socket takes it; never waits.
    ///
    /// # Errors
    /// [`PushError::Full`] (no credit, the socket is full, the rest of an earlier frame still
    /// waits for room, or the connection is dead), [`PushError::ZeroLength`],
    /// [`PushError::TooLarge`].
    pub fn try_send(&mut self, data: &[u8]) -> Result<(), PushError> {
        if data.is_empty() {
            return Err(PushError::ZeroLength);
        }
        if data.len() > self.sock.tx_max {
            return Err(PushError::TooLarge);
        }
        // Free-running counters (wrapping): an ack is another partition's input, and one of
        // u64::MAX must not overflow them (found by the `socket_frames` fuzz target).
        if self.sent.wrapping_sub(self.acked) >= self.limit {
            self.drain_acks();
            // The rest of the last frame goes out even without credit (its destination may be
            // waiting for it to acknowledge anything).
            if self.sock.pending() && self.sock.flush() {
                self.keep();
            }
            if self.sent.wrapping_sub(self.acked) >= self.limit {
                return Err(PushError::Full);
            }
        }
        if self.sock.pending() {
            // The rest of an earlier frame (or the padding) goes out first, and the book
            // learns that it did before the next frame is counted.
            if !self.sock.flush() {
                self.keep();
                return Err(PushError::Full);
            }
            self.keep();
        }
        let hdr = FrameRepr {
            seq: (self.sent as u32).wrapping_add(1),
            len: data.len() as u32,
            // The send time, by which a receiver past its deadline is served
            // (`QueueRx::sent_by`).
            stamp: partix_shm::clock::stamp_ns(),
        };
        if let Some(b) = &self.book {
            // The frame is counted, marked partial, before its send (the mark first): an
            // incarnation killed before the send or in its middle (a TCP frame torn: the
            // destination drops it) is counted exactly by the next one, which does not count a
            // partial frame; killed after the send went through and before the mark is cleared,
            // it is counted one frame short. One short lets one frame more than the credit into
            // the sockets (sized for capacity + 2 frames) until the destination has consumed
            // everything and acknowledges more than the source counted, which re-bases it; one
            // too many would be credit lost for good. (The mark alone, with the frame counted
            // only after the send, made that two or three short.)
            b.get(BOOK_PARTIAL).store(1, Ordering::Release);
            b.get(BOOK_SENT)
                .store(self.sent.wrapping_add(1), Ordering::Release);
        }
        #[cfg(test)]
        if self.die == Some(Die::BeforeSend) {
            return Err(PushError::Full);
        }
        if !self.sock.send_frame(hdr, data) {
            // Nothing of it went out: the book counts it no more.
            self.keep();
            return Err(PushError::Full);
        }
        #[cfg(test)]
        if self.die == Some(Die::AfterSend) {
            return Ok(());
        }
        self.sent = self.sent.wrapping_add(1);
        self.partial = self.sock.pending();
        self.keep();
        Ok(())
    }

    /// Return the messages sent and not yet acknowledged.
    pub fn len(&mut self) -> usize {
        self.drain_acks();
        if self.sock.pending() && self.sock.flush() {
            self.keep();
        }
        self.sent.wrapping_sub(self.acked) as usize
    }

    /// Return whether every message sent was acknowledged.
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    /// Return the lock-free waiting side.
    ///
    /// # Errors
    /// The system error of `dup`.
    pub fn waiter(&self) -> io::Result<SocketWaiter> {
        Ok(SocketWaiter {
            fd: self.sock.try_clone_fd()?,
            counters: self.counters.clone(),
            link: self.sock.link.clone(),
            limit: self.limit,
            source: true,
        })
    }
}

/// Queuing destination over a socket: a local buffer of `MaxNbMessages` messages.
#[derive(Debug)]
pub struct QueueRx {
    /// Identifies this destination's count in its acks (`seq`), so that a source notices a
    /// destination whose count started again: a new one per incarnation without a book, the
    /// book's own (kept across restarts) with one ([`QueueRx::with_book`]).
    incarnation: u32,
    sock: FrameSocket,
    limit: usize,
    slots: Vec<u8>,
    lens: Vec<u32>,
    /// The send time each buffered message's frame carries (`CLOCK_MONOTONIC` ns of the
    /// source's node; [`QueueRx::sent_by`]).
    stamps: Vec<u64>,
    head: usize,
    count: usize,
    consumed: u64,
    /// The count last acknowledged; [`QueueRx::UNANNOUNCED`] until this incarnation's first
    /// ack (its announcement) went out.
    acked_sent: u64,
    /// The time of the first consumption no ack sent so far covers (0: none), and of the
    /// last consumption: the times the next ack carries ([`ACK_LEN`]).
    unacked_since: u64,
    last_consumed_at: u64,
    /// The times the last ack sent carried (an ack sent again carries them again).
    ack_times: (u64, u64),
    batch: u64,
    /// The source's credit (the channel's capacity; at most `limit`).
    credit: u64,
    scratch: Vec<u8>,
    counters: Arc<Counters>,
    /// Where this destination keeps its identity and its count of frames taken off the socket
    /// for its next incarnation ([`QueueRx::with_book`]).
    book: Option<Words>,
    /// TCP with a book: the count the book was last given unmarked ([`QueueRx::note_taken`]),
    /// which stays exact until the next read off the socket.
    noted: u64,
    /// `consumed` when the current run of receives that found nothing began, and the length
    /// of that run: a udp ack is sent again when it reaches [`QueueRx::ACK_AGAIN`] and every
    /// power of two after it ([`QueueRx::found_empty`]).
    idle_from: u64,
    empties: u32,
}

/// The words of a socket queuing destination's book ([`QueueRx::with_book`]).
pub const DEST_BOOK_WORDS: usize = 4;
/// The identity the destination's acks carry (`seq`), kept across its restarts; 0: none yet.
const DEST_BOOK_ID: usize = 0;
/// Twice the frames of messages taken off the socket (consumed, buffered, or begun in a tcp
/// stream buffer), in the numbering of the acks; plus 1 while a receive may have taken one
/// that is not counted yet.
const DEST_BOOK_TAKEN: usize = 1;
/// 1 + the count the last ack sent carried (0: none yet): a new incarnation whose count is that
/// one does not announce itself (the source was told), so a destination that restarts again
/// and again without taking a frame does not fill the source's socket with announcements.
const DEST_BOOK_ACKED: usize = 2;
/// TCP: the stream position (bytes read off the socket by every incarnation) at which the count
/// in `DEST_BOOK_TAKEN` was exact: a marked count whose position the kernel still reports was
/// left by a receive that read nothing, and is exact.
const DEST_BOOK_POS: usize = 3;

impl QueueRx {
    /// `acked_sent` before the announcement went out: differs from every count `consumed` takes
    /// (so [`QueueRx::send_ack`] sends it), and `consumed - UNANNOUNCED` (wrapping) is
    /// `consumed + 1`, so a receive retries it within a batch.
    const UNANNOUNCED: u64 = u64::MAX;

    /// Receives in a row that find nothing (no message consumed meanwhile) after which a udp
    /// destination sends its cumulative ack again; again after twice as many, and so on.
    ///
    /// An ack datagram that finds the source's receive buffer full is dropped while `send`
    /// succeeds, and acks are cumulative: any later one makes up for it, but a destination
    /// that consumed everything sends no later one. A source left full by such a loss waits
    /// for ever while the queue is empty. A waiting receive looks every [`PARK_SLICE`], so the
    /// first repeat comes after about 160 ms, and the gaps double from there (a destination
    /// that stays empty sends a few dozen at most, whatever its callers do); the count starts
    /// again with every message consumed, so a receive that finds nothing once per message
    /// (a ping-pong) never repeats. A source's waiting sender drains its socket every slice,
    /// so a repeat gets through once what filled it is drained. TCP loses no ack: never.
    const ACK_AGAIN: u32 = 8;

    /// Use the inherited socket; `limit` is `MaxNbMessages`.
    ///
    /// Announces the new incarnation at once: an ack of 0 messages with its `seq`. The socket
    /// outlives a restart, so the source may be waiting for credit that a killed incarnation
    /// owed it (messages it had taken from the socket but not yet acknowledged die with it, and
    /// this one may find the socket empty and never consume, so never ack); an ack from an
    /// incarnation it has not seen re-bases the source on that count, with nothing in flight.
    /// (An announcement the socket cannot take now is sent by a later call.)
    ///
    /// # Panics
    /// When the process's memory cannot hold the buffers ([`QueueRx::try_new`] does not).
    pub fn new(sock: FrameSocket, limit: u32) -> QueueRx {
        QueueRx::try_new(sock, limit).unwrap_or_else(|e| panic!("queuing buffers: {e}"))
    }

    /// [`QueueRx::new`], or the error ([`zeroed`]) when the process's memory cannot hold its
    /// buffers (`limit` messages of `max` bytes, and one more).
    ///
    /// # Errors
    /// `OutOfMemory` (nothing was sent).
    pub fn try_new(sock: FrameSocket, limit: u32) -> io::Result<QueueRx> {
        Ok(QueueRx::make(sock, limit, None)?.start())
    }

    /// [`QueueRx::new`] that keeps this destination's identity and its count of frames taken
    /// off the socket in `book` ([`DEST_BOOK_WORDS`] words of a region that outlives the
    /// process; zeros the first time), and goes on from what an earlier incarnation kept there.
    ///
    /// Without it each incarnation started its count at 0 with an identity of its own, and its
    /// announcement made the source start again with nothing in flight, while the frames its
    /// earlier incarnations had not read were still in the socket: k restarts let (k + 1) ·
    /// `MaxNbMessages` frames into buffers sized for one, and a UDP socket drops what does not
    /// fit. With it, the new incarnation announces, under the same identity, every frame its
    /// earlier incarnations took off the socket (those it had not consumed died with it): the
    /// source's count of frames in flight is then what the socket still holds.
    ///
    /// The count is kept after each receive, and marked just before it: a UDP receive takes one
    /// frame at most, so an incarnation killed in between is counted one frame more (one too
    /// many is corrected by the source, which starts again from an ack of more than it sent;
    /// one too few would be credit lost for good). A TCP read may bring many frames, so the
    /// book also keeps the stream position at which its count was exact: an incarnation killed
    /// inside a receive that read nothing off the socket (the kernel's position is still the
    /// book's, [`stream_positions`]) left an exact count. One killed after a read brought
    /// bytes leaves an unknown count, and the next one takes a new identity, so the source
    /// starts again with nothing in flight, as without a book (tcp loses nothing by it; the
    /// bound is exceeded for a while).
    ///
    /// # Panics
    /// When the process's memory cannot hold the buffers ([`QueueRx::try_with_book`] does
    /// not).
    pub fn with_book(sock: FrameSocket, limit: u32, book: Words) -> QueueRx {
        QueueRx::try_with_book(sock, limit, book).unwrap_or_else(|e| panic!("queuing buffers: {e}"))
    }

    /// [`QueueRx::with_book`], or the error ([`zeroed`]) when the process's memory cannot hold
    /// its buffers.
    ///
    /// # Errors
    /// `OutOfMemory` (nothing was sent, the book is as it was).
    pub fn try_with_book(sock: FrameSocket, limit: u32, book: Words) -> io::Result<QueueRx> {
        let mut rx = QueueRx::make(sock, limit, Some(book))?;
        if let Some(b) = &rx.book {
            let id = b.get(DEST_BOOK_ID).load(Ordering::Acquire) as u32;
            let taken = b.get(DEST_BOOK_TAKEN).load(Ordering::Acquire);
            let marked = taken & 1;
            let tcp = matches!(rx.sock.io, Io::Tcp(_));
            // TCP: nothing read off the socket since the count was exact.
            let unread = tcp && b.get(DEST_BOOK_POS).load(Ordering::Acquire) == rx.sock.rx_pos;
            if id != 0 && (marked == 0 || unread) {
                rx.incarnation = id;
                rx.consumed = taken >> 1;
            } else if id != 0 && !tcp {
                rx.incarnation = id;
                rx.consumed = (taken >> 1).wrapping_add(marked);
            } else {
                // First incarnation, or an unknown count: a new identity, from the count kept.
                rx.consumed = taken >> 1;
            }
            b.get(DEST_BOOK_ID)
                .store(u64::from(rx.incarnation), Ordering::Release);
            if id != 0
                && rx.incarnation == id
                && b.get(DEST_BOOK_ACKED).load(Ordering::Acquire) == rx.consumed.wrapping_add(1)
            {
                // The source was told this count under this identity: nothing to announce.
                rx.acked_sent = rx.consumed;
            }
        }
        rx.note_taken();
        Ok(rx.start())
    }

    /// A destination with a new identity, counting from 0, that has announced nothing yet.
    fn make(sock: FrameSocket, limit: u32, book: Option<Words>) -> io::Result<QueueRx> {
        let limit = limit.max(1) as usize;
        let max = sock.rx_max;
        let slots = zeroed(limit.checked_mul(max).ok_or_else(|| {
            io::Error::new(io::ErrorKind::OutOfMemory, "a queue larger than memory")
        })?)?;
        let mut lens = Vec::new();
        lens.try_reserve_exact(limit)
            .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e))?;
        lens.resize(limit, 0);
        let mut stamps = Vec::new();
        stamps
            .try_reserve_exact(limit)
            .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e))?;
        stamps.resize(limit, 0);
        let scratch = zeroed(max + HEADER_LEN)?;
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() } as u32;
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        Ok(QueueRx {
            incarnation: (pid.rotate_left(16) ^ t) | 1,
            slots,
            lens,
            stamps,
            head: 0,
            count: 0,
            consumed: 0,
            acked_sent: QueueRx::UNANNOUNCED,
            unacked_since: 0,
            last_consumed_at: 0,
            ack_times: (0, 0),
            batch: (limit as u64 / 2).max(1),
            credit: limit as u64,
            scratch,
            counters: Arc::new(Counters::default()),
            limit,
            sock,
            book,
            noted: 0,
            idle_from: 0,
            empties: 0,
        })
    }

    /// Pad the stream for the source (tcp) and announce this incarnation.
    fn start(mut self) -> QueueRx {
        self.sock.resync_peer();
        self.send_ack();
        self
    }

    /// Mark the book: a receive may take a frame now. (UDP: the count of frames taken so far;
    /// TCP: the count last kept, exact at the stream position kept with it, until a read.)
    #[inline]
    fn note_taking(&self) {
        if let Some(b) = &self.book {
            let taken = match self.sock.io {
                Io::Udp(_) => self.consumed.wrapping_add(self.count as u64),
                Io::Tcp(_) => self.noted,
            };
            b.get(DEST_BOOK_TAKEN)
                .store(taken << 1 | 1, Ordering::Release);
        }
    }

    /// Keep in the book the frames taken off the socket (unmarked): those consumed, those
    /// buffered, and over TCP those begun in the stream buffer (a frame of which only the
    /// beginning was read is lost with this process too: the next incarnation skips its rest).
    #[inline]
    fn note_taken(&mut self) {
        if self.book.is_some() {
            let taken = self
                .consumed
                .wrapping_add(self.count as u64)
                .wrapping_add(self.sock.frames_begun());
            self.noted = taken;
            if let Some(b) = &self.book {
                // The count first, unmarked: a kill before the position's store leaves a count
                // the next incarnation trusts whatever the position (a position stored first
                // would pair with the marked count before it, which it does not belong to).
                b.get(DEST_BOOK_TAKEN).store(taken << 1, Ordering::Release);
                if matches!(self.sock.io, Io::Tcp(_)) {
                    let pos = self.sock.rx_pos + self.sock.rx_len as u64;
                    b.get(DEST_BOOK_POS).store(pos, Ordering::Release);
                }
            }
        }
    }

    /// Acknowledge for a source whose credit is `credit` messages (the channel's capacity, when
    /// it is below this port's `MaxNbMessages`): in batches of half of it, and at once when the
    /// source may have used it all ([`QueueRx::try_recv`]).
    pub fn with_credit(mut self, credit: u32) -> QueueRx {
        self.credit = u64::from(credit).clamp(1, self.limit as u64);
        self.batch = (self.credit / 2).max(1);
        self
    }

    fn drain(&mut self) {
        while self.count < self.limit && self.take_frame() {}
        self.note_stream();
        self.counters.a.store(self.count as u64, Ordering::Release);
    }

    /// Buffer the next message waiting on the socket, if any; return whether there may be more
    /// (false once a receive found nothing, or the look's receive bound was reached). Over TCP
    /// the book stays marked: the caller counts what the stream buffer holds once its takes
    /// are done ([`QueueRx::note_stream`]).
    fn take_frame(&mut self) -> bool {
        let max = self.sock.rx_max;
        // One bound on receives for the whole look, frames that are not messages included.
        let mut budget = RECV_ROUNDS;
        self.note_taking();
        let took = loop {
            match self.sock.recv_frame_within(&mut self.scratch, &mut budget) {
                Recv::Frame(h) if h.len > 0 => {
                    let i = (self.head + self.count) % self.limit;
                    let len = h.len as usize;
                    self.slots[i * max..i * max + len]
                        .copy_from_slice(&self.scratch[HEADER_LEN..HEADER_LEN + len]);
                    self.lens[i] = h.len;
                    self.stamps[i] = h.stamp;
                    self.count += 1;
                    break true;
                }
                Recv::Frame(_) => self.sock.dropped += 1,
                // Empty, or the bound (input left on the socket: it polls readable).
                Recv::Nothing => break false,
            }
        };
        if matches!(self.sock.io, Io::Udp(_)) {
            self.note_taken();
        }
        took
    }

    /// TCP: keep in the book what the takes just made left (the frames begun in the stream
    /// buffer are counted by a walk over it: once per call, not once per frame taken, which
    /// made a read of n frames cost n²/2 header parses). UDP: each take kept its count.
    #[inline]
    fn note_stream(&mut self) {
        if matches!(self.sock.io, Io::Tcp(_)) {
            self.note_taken();
        }
    }

    /// Acknowledge what was consumed, if not done yet, and send the rest of an ack the socket
    /// took only part of; never waits (what the socket cannot take now goes out on a later
    /// call: the waiter wakes for room to send it).
    fn send_ack(&mut self) {
        if self.acked_sent != self.consumed {
            self.ack_now();
        } else {
            self.sock.flush();
        }
    }

    /// A message was consumed (or several, by CLEAR): its time is the last the next ack
    /// carries, and the first if no ack covers an earlier one (a clock read per message, on a
    /// path of a system call per message or batch).
    #[inline]
    fn note_consumed(&mut self) {
        let now = partix_shm::clock::stamp_ns().max(1);
        self.last_consumed_at = now;
        if self.unacked_since == 0 {
            self.unacked_since = now;
        }
    }

    /// Send the cumulative ack (whether or not it was sent already); keep what it carried.
    /// Its payload is the times of the first and the last consumption it covers that no ack
    /// sent before did (an ack sent again carries the times it carried); an end sized without
    /// room for them (`tx_max` below [`ACK_LEN`]) sends the ack without them.
    fn ack_now(&mut self) {
        let times = if self.unacked_since != 0 {
            (self.unacked_since, self.last_consumed_at)
        } else if self.consumed != self.acked_sent {
            // A count no ack carried with nothing consumed since: an incarnation's
            // announcement (its book's count may return the credit of frames that died with
            // the one before it): the rooms are made now.
            let now = partix_shm::clock::stamp_ns().max(1);
            (now, now)
        } else {
            self.ack_times
        };
        let timed = self.sock.tx_max >= ACK_LEN;
        let hdr = FrameRepr {
            seq: self.incarnation,
            len: if timed { ACK_LEN as u32 } else { 0 },
            stamp: self.consumed,
        };
        let mut payload = [0u8; ACK_LEN];
        payload[..8].copy_from_slice(&times.0.to_le_bytes());
        payload[8..].copy_from_slice(&times.1.to_le_bytes());
        if self
            .sock
            .send_frame(hdr, if timed { &payload[..] } else { &[] })
        {
            self.ack_times = times;
            self.unacked_since = 0;
            self.acked_sent = self.consumed;
            if let Some(b) = &self.book {
                b.get(DEST_BOOK_ACKED)
                    .store(self.consumed.wrapping_add(1), Ordering::Release);
            }
        }
    }

    /// A receive found nothing: count it, and over udp send the ack again when the run of
    /// such receives reaches [`QueueRx::ACK_AGAIN`] and every power of two after it.
    #[inline]
    fn found_empty(&mut self) {
        if self.idle_from != self.consumed {
            self.idle_from = self.consumed;
            self.empties = 0;
        }
        self.empties = self.empties.wrapping_add(1);
        if self.empties >= QueueRx::ACK_AGAIN && self.empties.is_power_of_two() {
            self.ack_again();
        }
    }

    /// A round of the destination's agent (`transport::QueueAgent`) that found no call of the
    /// port since its last round: acknowledge what was consumed and not acknowledged yet (a
    /// batch not full, the source not out of credit as far as the last receive could see), and
    /// send the rest of an ack the socket took only part of. Return whether anything was owed.
    ///
    /// Without it a source that used its last credit after the destination's last receive
    /// waited (or was answered `NOT_AVAILABLE`) while the destination had room, until the
    /// destination next called its port, and for ever if it never did. A round that finds
    /// nothing owed counts as a look that found nothing ([`QueueRx::found_empty`]): over udp
    /// the ack is repeated now and then, so one lost to a full socket is made up for although
    /// nobody calls the port.
    pub(super) fn idle(&mut self) -> bool {
        if self.acked_sent != self.consumed {
            self.ack_now();
            true
        } else {
            self.sock.flush();
            self.found_empty();
            false
        }
    }

    /// [`QueueRx::found_empty`]'s repeat (udp only).
    #[cold]
    fn ack_again(&mut self) {
        if matches!(self.sock.io, Io::Udp(_)) {
            self.ack_now();
        }
    }

    /// Take the oldest message into `buf`; return its length.
    ///
    /// # Errors
    /// [`PopError::Empty`] or [`PopError::BufferTooSmall`] (the message stays).
    pub fn try_recv(&mut self, buf: &mut [u8]) -> Result<usize, PopError> {
        // Whether this call found the socket drained (what the source sent is all here).
        let mut drained = false;
        if self.count == 0 {
            drained = self.refill();
            if self.count == 0 {
                self.send_ack();
                self.found_empty();
                return Err(PopError::Empty);
            }
        }
        let len = self.lens[self.head] as usize;
        if buf.len() < len {
            return Err(PopError::BufferTooSmall { needed: len });
        }
        let max = self.sock.rx_max;
        buf[..len].copy_from_slice(&self.slots[self.head * max..self.head * max + len]);
        self.head = (self.head + 1) % self.limit;
        self.count -= 1;
        self.counters.a.store(self.count as u64, Ordering::Release);
        self.consumed += 1;
        self.note_consumed();
        let owed = self.consumed.wrapping_sub(self.acked_sent);
        if owed >= self.batch || owed + self.count as u64 >= self.credit {
            // A batch, or the source has used its whole credit (it may be waiting for it).
            self.send_ack();
        } else if !drained {
            self.look_ahead(owed);
        }
        Ok(len)
    }

    /// With nothing buffered: take the next message off the socket; return whether the socket
    /// was found drained (what the source sent is all here).
    ///
    /// One message is all a receive needs (FIFO: whatever comes next is next in order): no
    /// receive that would only answer EAGAIN on the path of every message. Over TCP a read may
    /// have brought more frames into the stream buffer, where the waiter (which polls the
    /// socket) cannot see them: those are taken too (no system call).
    #[inline]
    fn refill(&mut self) -> bool {
        let mut drained = false;
        if self.take_frame() {
            while self.count < self.limit && self.sock.frame_buffered() && self.take_frame() {}
            // TCP: a read shorter than its room drained the socket.
            drained = !self.sock.may_have_more();
        }
        self.note_stream();
        self.counters.a.store(self.count as u64, Ordering::Release);
        drained
    }

    /// Whether a message is there that was sent at or before `ns` (`CLOCK_MONOTONIC`
    /// nanoseconds), by the send time its frame carries ([`QueueTx::try_send`]): `false` when
    /// nothing is there (looked for on the socket, as a receive would) or the oldest was sent
    /// later. Consumes nothing; a look that finds nothing acknowledges and counts as a receive
    /// that finds nothing does.
    pub fn sent_by(&mut self, ns: u64) -> bool {
        if self.count == 0 {
            self.refill();
            if self.count == 0 {
                self.send_ack();
                self.found_empty();
                return false;
            }
        }
        self.stamps[self.head] <= ns
    }

    /// After a receive that owes the source `owed` messages (fewer than a batch): find out
    /// whether the source may have used its whole credit, and acknowledge at once if so.
    ///
    /// The source is out of credit when the messages it sent and this side has not
    /// acknowledged, those consumed (`owed`), those buffered and those still in the socket,
    /// reach its credit; one-sided and two-sided queues return credit with every receive, and a
    /// sender must not be told NOT_AVAILABLE (or time out) while the destination has room.
    /// What the socket holds is seen only by taking it: the frames are taken into the buffer
    /// until they reach the credit's boundary or the socket is found empty (a look that the next
    /// receive would have made anyway, unless it answers EAGAIN: then it is one receive more
    /// for this message).
    #[cold]
    fn look_ahead(&mut self, owed: u64) {
        while owed + (self.count as u64) < self.credit
            && self.count < self.limit
            && self.take_frame()
        {
            while self.count < self.limit && self.sock.frame_buffered() && self.take_frame() {}
        }
        self.note_stream();
        self.counters.a.store(self.count as u64, Ordering::Release);
        if owed + self.count as u64 >= self.credit {
            self.send_ack();
        }
    }

    /// Return the number of messages that arrived and were not consumed.
    pub fn len(&mut self) -> usize {
        self.drain();
        self.sock.flush();
        self.count
    }

    /// Return whether no message waits.
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    /// Discard every message that arrived, and return their credit.
    pub fn clear(&mut self) {
        loop {
            self.drain();
            if self.count == 0 {
                break;
            }
            self.consumed += self.count as u64;
            self.count = 0;
            self.note_consumed();
        }
        self.counters.a.store(0, Ordering::Release);
        self.send_ack();
    }

    /// Return the lock-free waiting side.
    ///
    /// # Errors
    /// The system error of `dup`.
    pub fn waiter(&self) -> io::Result<SocketWaiter> {
        Ok(SocketWaiter {
            fd: self.sock.try_clone_fd()?,
            counters: self.counters.clone(),
            link: self.sock.link.clone(),
            limit: self.limit as u64,
            source: false,
        })
    }
}

/// The waiting side of a socket queuing endpoint (no lock needed).
#[derive(Debug)]
pub struct SocketWaiter {
    fd: OwnedFd,
    counters: Arc<Counters>,
    /// The endpoint's [`link`] bits.
    link: Link,
    limit: u64,
    source: bool,
}

impl SocketWaiter {
    /// Return whether the endpoint's operation may succeed now (one `poll` with zero timeout
    /// when the counters alone do not tell; none once the connection is dead).
    pub fn ready(&self) -> bool {
        let quick = self.quick();
        let st = self.link.load(Ordering::Acquire);
        if st == 0 {
            return quick || readable(&self.fd, Duration::ZERO);
        }
        self.ready_when(st, quick, Duration::ZERO)
    }

    /// Whether the counters alone say ready: a source has credit, a destination messages.
    fn quick(&self) -> bool {
        let a = self.counters.a.load(Ordering::Acquire);
        if self.source {
            // Wrapping: the two loads are not one snapshot, and the endpoint's counters wrap.
            a.wrapping_sub(self.counters.b.load(Ordering::Acquire)) < self.limit
        } else {
            a > 0
        }
    }

    /// The events to poll for in state `st` ([`link`]) with credit / messages `quick`: acks or
    /// messages (`POLLIN`) until the end of the stream; room to send (`POLLOUT`) while the rest
    /// of a frame waits for it, or, after the socket refused a frame, while there is one to
    /// send (a source with credit; a destination always has its ack); nothing once the
    /// connection is dead. 0: nothing to wait for.
    fn interest(&self, st: u32, quick: bool) -> libc::c_short {
        if st & link::DEAD != 0 {
            return 0;
        }
        let out = st & link::PENDING != 0 || (st & link::REFUSED != 0 && (quick || !self.source));
        let input = if st & link::EOF == 0 { libc::POLLIN } else { 0 };
        input | if out { libc::POLLOUT } else { 0 }
    }

    /// [`SocketWaiter::ready`] in the uncommon state `st` (non-zero), polling up to `timeout`
    /// (sleeping it when there is nothing to poll for): ready for whatever the endpoint's
    /// operation can make progress with. `POLLERR` and `POLLHUP` count as ready: the operation
    /// then meets the error and marks the connection dead, so that is polled no more.
    fn ready_when(&self, st: u32, quick: bool, timeout: Duration) -> bool {
        if quick && (!self.source || st & (link::PENDING | link::REFUSED | link::DEAD) == 0) {
            // A destination with messages; a source with credit and nothing stuck.
            return true;
        }
        let events = self.interest(st, quick);
        if events == 0 {
            if !timeout.is_zero() {
                std::thread::sleep(timeout);
            }
            return false;
        }
        poll_events(&self.fd, events, timeout) != 0
    }

    /// Return the messages in flight (source) or buffered (destination) as last seen.
    pub fn len(&self) -> usize {
        let a = self.counters.a.load(Ordering::Acquire);
        if self.source {
            (a.wrapping_sub(self.counters.b.load(Ordering::Acquire)) as usize)
                .min(self.limit as usize)
        } else {
            a as usize
        }
    }

    /// Return whether nothing is in flight / buffered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Wait until `ready()` or `deadline`, in slices of at most [`PARK_SLICE`]. Polls only for
    /// what the endpoint can still get ([`SocketWaiter::ready`]): on a dead connection it sleeps
    /// the slice.
    pub fn park_until(&self, deadline: Option<Instant>, mut ready: impl FnMut() -> bool) -> bool {
        loop {
            if ready() {
                return true;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return false;
            }
            let left = deadline.map_or(PARK_SLICE, |d| (d - now).min(PARK_SLICE));
            let st = self.link.load(Ordering::Acquire);
            let woke = if st == 0 {
                readable(&self.fd, left)
            } else {
                self.ready_when(st, self.quick(), left)
            };
            if !woke {
                // A slice passed: let the caller re-check its wait queue.
                return ready();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(kind: SocketKind, max: u32, n: u32) -> (FrameSocket, FrameSocket) {
        let (a, b) = socket_pair(kind, max, n).unwrap();
        // Sized as the ports size them: `a` a source's end, `b` a destination's.
        (
            FrameSocket::try_for(a, kind, max, PortDirection::Source).unwrap(),
            FrameSocket::try_for(b, kind, max, PortDirection::Destination).unwrap(),
        )
    }

    /// The CPU time the calling thread has used.
    fn thread_cpu() -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is a valid out-pointer; the thread CPU clock always exists on Linux.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    /// Run `f` on a thread and return its result; fail if it has not returned after `limit`
    /// (a call that waits for ever never does; the thread is left behind).
    fn returns_within<T: Send + 'static>(
        limit: Duration,
        what: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (done, result) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let _ = done.send(f());
        });
        match result.recv_timeout(limit) {
            Ok(r) => r,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                panic!("{what}: no return after {limit:?}")
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                std::panic::resume_unwind(t.join().expect_err("ended without a result"))
            }
        }
    }

    /// A valid frame of 3 bytes (as a peer would send it over udp).
    fn udp_frame(seq: u32) -> Vec<u8> {
        let mut f = vec![seq as u8; HEADER_LEN + 3];
        FrameRepr {
            seq,
            len: 3,
            stamp: 1,
        }
        .emit(&mut f);
        f
    }

    /// A datagram another local process sends to the destination's socket between its `bind`
    /// and its `connect` is not delivered: the pair is emptied once connected. (It stayed
    /// queued, and the destination received it as a message.)
    #[test]
    fn a_udp_pair_drops_what_a_stranger_sent_before_it_was_connected() {
        let a = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let b = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let stranger = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        for s in [&a, &b] {
            stranger
                .send_to(&udp_frame(66), s.local_addr().unwrap())
                .unwrap();
        }
        let (a, b) = udp_pair_of(a, b).unwrap();
        let to_b = b.local_addr().unwrap();
        let (mut a, mut b) = (
            FrameSocket::new(a.into(), SocketKind::Udp, 16),
            FrameSocket::new(b.into(), SocketKind::Udp, 16),
        );
        let mut out = [0u8; HEADER_LEN + 16];
        assert_eq!(b.recv_frame(&mut out), Recv::Nothing);
        assert_eq!(a.recv_frame(&mut out), Recv::Nothing);
        // After the connect the stranger's datagrams do not get in; the peer's do.
        stranger.send_to(&udp_frame(67), to_b).unwrap();
        let h = FrameRepr {
            seq: 1,
            len: 3,
            stamp: 1,
        };
        assert!(a.send_frame(h, &[1, 2, 3]));
        assert_eq!(b.recv_frame(&mut out), Recv::Frame(h));
        assert_eq!(b.recv_frame(&mut out), Recv::Nothing);
        assert_eq!(b.dropped, 0);
    }

    /// A connection another local process makes to the listener before ours is not taken for
    /// ours: the accepted end is the one whose peer is the connecting end, and a frame crosses
    /// the pair. (The first connection in the queue was taken: the destination read the
    /// stranger's stream, and the source's end was left unaccepted.)
    #[test]
    fn a_tcp_pair_is_not_connected_to_a_stranger() {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let mut stranger = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (a, b) = tcp_pair_on(l).unwrap();
        assert_eq!(b.peer_addr().unwrap(), a.local_addr().unwrap());
        // The stranger's connection was closed.
        stranger
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut byte = [0u8; 1];
        assert!(matches!(
            std::io::Read::read(&mut stranger, &mut byte),
            Ok(0) | Err(_)
        ));
        for s in [&a, &b] {
            s.set_nonblocking(true).unwrap();
        }
        let (mut a, mut b) = (
            FrameSocket::new(a.into(), SocketKind::Tcp, 16),
            FrameSocket::new(b.into(), SocketKind::Tcp, 16),
        );
        let h = FrameRepr {
            seq: 1,
            len: 3,
            stamp: 1,
        };
        assert!(a.send_frame(h, &[1, 2, 3]));
        let mut out = [0u8; HEADER_LEN + 16];
        let mut got = Recv::Nothing;
        for _ in 0..1000 {
            got = b.recv_frame(&mut out);
            if got != Recv::Nothing {
                break;
            }
            readable(&b, Duration::from_millis(10));
        }
        assert_eq!(got, Recv::Frame(h));
    }

    /// The direct system calls answer as `recv(2)` and `send(2)` do, with `errno` as the error.
    #[test]
    fn direct_system_calls_answer_as_recv_and_send() {
        let a = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let b = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(
            sys::recv(b.as_raw_fd(), &mut buf, libc::MSG_DONTWAIT),
            Err(libc::EAGAIN)
        );
        assert_eq!(
            sys::send(a.as_raw_fd(), b"seventeen", libc::MSG_NOSIGNAL),
            Ok(9)
        );
        b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(sys::recv(b.as_raw_fd(), &mut buf, 0), Ok(9));
        assert_eq!(&buf[..9], b"seventeen");
        // A datagram longer than the buffer is cut to it, as recv(2) does.
        assert_eq!(sys::send(a.as_raw_fd(), &[7u8; 40], 0), Ok(40));
        assert_eq!(sys::recv(b.as_raw_fd(), &mut buf[..16], 0), Ok(16));
        assert_eq!(sys::recv(-1, &mut buf, 0), Err(libc::EBADF));
        assert_eq!(sys::send(-1, b"x", 0), Err(libc::EBADF));
        // A read time-out ends a blocking receive with EAGAIN.
        b.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        assert_eq!(sys::recv(b.as_raw_fd(), &mut buf, 0), Err(libc::EAGAIN));
    }

    #[test]
    fn a_copy_destination_is_placed_half_a_page_from_its_source() {
        let buf = vec![0u8; 3 * PAGE];
        let base = buf.as_ptr();
        for src in [0usize, 1, 8, 16, 63, 64, 2047, 2048, 4095, 4096, 123_457] {
            let src = src as *const u8;
            let k = far_from(src, base);
            assert!(k < PAGE);
            let gap = (base as usize + k).wrapping_sub(src as usize) % PAGE;
            assert_eq!(gap, PAGE / 2, "src {src:?} k {k}");
        }
    }

    #[test]
    fn frames_round_trip_over_both_kinds() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (mut a, mut b) = pair(kind, 100, 4);
            let mut out = [0u8; 116];
            assert_eq!(b.recv_frame(&mut out), Recv::Nothing);
            for i in 1..=3u32 {
                let h = FrameRepr {
                    seq: i,
                    len: i * 10,
                    stamp: 7,
                };
                assert!(a.send_frame(h, &vec![i as u8; i as usize * 10]));
            }
            for i in 1..=3u32 {
                let mut got = Recv::Nothing;
                for _ in 0..1000 {
                    got = b.recv_frame(&mut out);
                    if got != Recv::Nothing {
                        break;
                    }
                    readable(&b, Duration::from_millis(10));
                }
                let Recv::Frame(h) = got else {
                    panic!("{kind:?}: frame {i} missing")
                };
                assert_eq!((h.seq, h.len), (i, i * 10));
                assert!(out[HEADER_LEN..HEADER_LEN + h.len as usize]
                    .iter()
                    .all(|&x| x == i as u8));
            }
        }
    }

    #[test]
    fn a_wait_returns_the_newest_of_the_frames_queued_before_it() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, b) = pair(kind, 64, 8);
            let mut tx = SampleTx::new(vec![a]);
            let mut rx = SampleRx::new(b);
            for i in 1..=5u8 {
                tx.write(&[i; 20], u64::from(i));
            }
            // Let loopback deliver all five before the wait looks.
            std::thread::sleep(Duration::from_millis(50));
            let mut buf = [0u8; 64];
            let ok = rx
                .wait_newer(&mut buf, None, RecvMode::Spin, Some(Duration::from_secs(5)))
                .unwrap();
            assert_eq!((ok.seq, ok.len, ok.written_at_ns), (5, 20, 5), "{kind:?}");
            assert_eq!(buf[..20], [5u8; 20]);
            // Nothing newer: a bounded wait times out and a read still answers the newest.
            assert!(matches!(
                rx.wait_newer(
                    &mut buf,
                    Some(5),
                    RecvMode::Spin,
                    Some(Duration::from_millis(20))
                ),
                Err(WaitError::TimedOut)
            ));
            assert_eq!(rx.read(&mut buf).unwrap().seq, 5);
            // A frame sent while the wait runs is returned by it, header and payload whole.
            let t = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                tx.write(&[6; 33], 6);
            });
            let ok = rx
                .wait_newer(
                    &mut buf,
                    Some(5),
                    RecvMode::Spin,
                    Some(Duration::from_secs(5)),
                )
                .unwrap();
            assert_eq!((ok.seq, ok.len), (6, 33), "{kind:?}");
            assert_eq!(buf[..33], [6u8; 33]);
            t.join().unwrap();
        }
    }

    /// A sampling source restarted (its partition restarts, the socket lives on) numbers its
    /// writes from 1 again; a destination waiting past the message it read last, the old
    /// incarnation's third, gets the new incarnation's third, which carries the same number.
    /// (It used to compare the source's numbers and took that message for the one it had: the
    /// wait timed out, and a source writing once per incarnation was never seen again.)
    #[test]
    fn a_wait_returns_a_restarted_sources_message_that_carries_the_number_of_the_last_one() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, b) = pair(kind, 16, 4);
            let afd = a.try_clone_fd().unwrap();
            let mut tx = SampleTx::new(vec![a]);
            let mut rx = SampleRx::new(b);
            let mut buf = [0u8; 16];
            for i in 1..=3u8 {
                tx.write(&[i; 4], u64::from(i));
            }
            std::thread::sleep(Duration::from_millis(20));
            let ok = rx
                .wait_newer(&mut buf, None, RecvMode::Spin, Some(Duration::from_secs(5)))
                .unwrap();
            assert_eq!(buf[..4], [3; 4], "{kind:?}");
            let last = Some(ok.seq);
            // The source partition restarts: a new incarnation on the same socket.
            drop(tx);
            let mut tx = SampleTx::new(vec![FrameSocket::new(afd, kind, 16)]);
            for i in 11..=13u8 {
                tx.write(&[i; 4], u64::from(i));
            }
            for mode in [RecvMode::Blocking, RecvMode::Spin] {
                rx.new_call();
                let r = rx.wait_newer(&mut buf, last, mode, Some(Duration::from_secs(5)));
                let ok = r.unwrap_or_else(|e| panic!("{kind:?} {mode:?}: {e:?}"));
                assert_ne!(Some(ok.seq), last, "{kind:?}");
                assert_eq!(
                    (&buf[..4], ok.written_at_ns),
                    (&[13u8; 4][..], 13),
                    "{kind:?} {mode:?}"
                );
            }
        }
    }

    /// What one call learnt (the socket was empty) does not carry into the next: frames that
    /// queue up between two calls are drained to the newest by the next call, and within one call
    /// the first look's emptiness lets a later wait return the first frame at once.
    #[test]
    fn a_blocking_wait_returns_the_datagram_that_wakes_it_and_looks_never_block() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, b) = pair(kind, 64, 8);
            let mut rx = SampleRx::new(b);
            let mut buf = [0u8; 64];
            // Frame 8 is sent only once the probes below are done (they must find nothing).
            let (go, went) = std::sync::mpsc::channel::<()>();
            let sender = std::thread::spawn(move || {
                let mut tx = SampleTx::new(vec![a]);
                std::thread::sleep(Duration::from_millis(30));
                tx.write(&[7; 20], 7);
                went.recv().unwrap();
                // Mostly while the wait below parks (it returns the frame either way).
                std::thread::sleep(Duration::from_millis(30));
                tx.write(&[8; 21], 8);
                tx
            });
            // Parks for whole slices (udp: in `recv` itself) until the frame comes.
            rx.new_call();
            let ok = rx
                .wait_newer(
                    &mut buf,
                    None,
                    RecvMode::Blocking,
                    Some(Duration::from_secs(5)),
                )
                .unwrap();
            assert_eq!((ok.seq, ok.len, buf[0]), (1, 20, 7), "{kind:?}");
            // A zero time-out is one look, and a short time-out (a partial slice) times out.
            rx.new_call();
            let probe = rx.wait_newer(&mut buf, Some(1), RecvMode::Spin, Some(Duration::ZERO));
            assert!(matches!(probe, Err(WaitError::TimedOut)), "{kind:?}");
            let r = rx.wait_newer(
                &mut buf,
                Some(1),
                RecvMode::Blocking,
                Some(Duration::from_millis(5)),
            );
            assert!(matches!(r, Err(WaitError::TimedOut)), "{kind:?}");
            go.send(()).unwrap();
            let ok = rx
                .wait_newer(
                    &mut buf,
                    Some(1),
                    RecvMode::Blocking,
                    Some(Duration::from_secs(5)),
                )
                .unwrap();
            assert_eq!((ok.seq, ok.len, buf[0]), (2, 21, 8), "{kind:?}");
            drop(sender.join().unwrap());
        }
    }

    /// A tcp read of many small frames hands them out without moving the rest of the buffer for
    /// each (which made a burst of n frames cost n²/2 frame copies): the bytes moved to the
    /// front stay below one frame per read.
    #[test]
    fn small_tcp_frames_are_taken_without_moving_the_buffer_each_time() {
        let (a, b) = pair(SocketKind::Tcp, 64, 512);
        let mut tx = a;
        let mut rx = b;
        let hdr = |seq| FrameRepr {
            seq,
            len: 8,
            stamp: 0,
        };
        let n = 500u32;
        for seq in 1..=n {
            assert!(tx.send_frame(hdr(seq), &seq.to_le_bytes().repeat(2)));
        }
        std::thread::sleep(Duration::from_millis(50));
        let mut out = vec![0u8; 64 + HEADER_LEN];
        let mut got = 0u32;
        let mut reads = 0u64;
        let mut idle = 0;
        while got < n && idle < 1000 {
            let before = rx.looks;
            match rx.recv_frame(&mut out) {
                Recv::Frame(h) => {
                    got += 1;
                    assert_eq!(h.seq, got);
                    idle = 0;
                }
                Recv::Nothing => {
                    idle += 1;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            reads += rx.looks - before;
        }
        assert_eq!(got, n);
        let frame = (HEADER_LEN + 8 + TRAILER_LEN) as u64;
        assert!(
            rx.moved <= reads * frame,
            "{} bytes moved over {reads} reads of {n} frames",
            rx.moved
        );
    }

    #[test]
    fn a_park_after_an_empty_look_makes_no_look_before_it() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, b) = pair(kind, 64, 8);
            let mut rx = SampleRx::new(b);
            let mut buf = [0u8; 64];
            let (go, went) = std::sync::mpsc::channel::<Duration>();
            // Made here: over tcp its padding (`resync_peer`) is in the socket before the first
            // look, which skips it.
            let mut tx = SampleTx::new(vec![a]);
            let sender = std::thread::spawn(move || {
                for (i, pause) in went.iter().enumerate() {
                    std::thread::sleep(pause);
                    tx.write(&[i as u8 + 1; 10], 1);
                }
            });
            let blocking = |rx: &mut SampleRx, buf: &mut [u8], last, t| {
                rx.wait_newer(buf, last, RecvMode::Blocking, Some(t))
            };
            // The looks a wait made beyond one per `poll` it parked in: udp parks in `recv`,
            // which takes the datagram itself (no look at all); tcp parks in `poll`, and the
            // look after each takes what it saw.
            let extra_looks =
                |rx: &SampleRx, (l0, p0): (u64, u64)| (rx.sock.looks - l0) - (rx.sock.polls - p0);
            let counts = |rx: &SampleRx| (rx.sock.looks, rx.sock.polls);
            for (call, pause) in [Duration::from_millis(5), Duration::ZERO]
                .into_iter()
                .enumerate()
            {
                let last = (call > 0).then_some(call as u32);
                // The call's first look finds the socket empty (a zero time-out is that look
                // alone).
                rx.new_call();
                let probe = blocking(&mut rx, &mut buf, last, Duration::ZERO);
                assert!(matches!(probe, Err(WaitError::TimedOut)), "{kind:?}");
                // Call 0: the frame comes while the wait parks; call 1: it is queued before.
                go.send(pause).unwrap();
                if pause.is_zero() {
                    std::thread::sleep(Duration::from_millis(30));
                }
                let c = counts(&rx);
                let ok = blocking(&mut rx, &mut buf, last, Duration::from_secs(5)).unwrap();
                assert_eq!(
                    (ok.seq, ok.len, buf[0]),
                    (call as u32 + 1, 10, call as u8 + 1)
                );
                assert_eq!(
                    extra_looks(&rx, c),
                    0,
                    "{kind:?} call {call}: a look before a park"
                );
                if kind == SocketKind::Udp {
                    assert_eq!(rx.sock.polls, c.1, "udp parks in recv");
                }
            }
            // A time-out under four kernel ticks parks in `poll` over udp too; the look after it
            // takes the datagram `poll` saw.
            rx.new_call();
            let probe = blocking(&mut rx, &mut buf, Some(2), Duration::ZERO);
            assert!(matches!(probe, Err(WaitError::TimedOut)), "{kind:?}");
            go.send(Duration::from_millis(1)).unwrap();
            // The sender may not run within the three ticks (a loaded machine): a wait that
            // times out is made again, each one parking at once (its call's looks found the
            // socket empty) and looking only after each `poll`.
            let deadline = Instant::now() + Duration::from_secs(5);
            let (ok, polls) = loop {
                let c = counts(&rx);
                match blocking(&mut rx, &mut buf, Some(2), 3 * kernel_tick()) {
                    Ok(ok) => {
                        assert_eq!(extra_looks(&rx, c), 0, "{kind:?}: a look before a park");
                        break (ok, rx.sock.polls - c.1);
                    }
                    Err(WaitError::TimedOut) if Instant::now() < deadline => {
                        assert_eq!(extra_looks(&rx, c), 0, "{kind:?}: a look before a park");
                    }
                    Err(e) => panic!("{kind:?}: frame 3 missing: {e:?}"),
                }
            };
            assert_eq!((ok.seq, buf[0]), (3, 3), "{kind:?}");
            assert!(polls > 0, "{kind:?}: the wait did not park in poll");
            drop(go);
            sender.join().unwrap();
        }
    }

    #[test]
    fn an_ack_of_u64_max_from_a_broken_destination_breaks_nothing() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, mut b) = pair(kind, 64, 4);
            let mut tx = QueueTx::new(a, 4);
            tx.try_send(&[1]).unwrap();
            // A destination claiming u64::MAX consumed messages (the source re-bases on it).
            let ack = FrameRepr {
                seq: 7,
                len: 0,
                stamp: u64::MAX,
            };
            assert!(b.send_frame(ack, &[]));
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(tx.len(), 0, "{kind:?}");
            // The counters wrap instead of overflowing (this panicked in debug builds).
            for i in 0..4u8 {
                tx.try_send(&[i + 2]).unwrap();
            }
            assert_eq!(tx.len(), 4, "{kind:?}");
            assert_eq!(tx.try_send(&[9]), Err(PushError::Full), "{kind:?}");
            let w = tx.waiter().unwrap();
            assert!(w.len() <= 4 && !w.ready(), "{kind:?}");
        }
    }

    #[test]
    fn a_look_never_blocks_once_the_descriptor_waits_in_recv() {
        let (mut a, mut b) = pair(SocketKind::Udp, 64, 8);
        let hdr = FrameRepr {
            seq: 1,
            len: 3,
            stamp: 1,
        };
        assert!(a.send_frame(hdr, &[1, 2, 3]));
        let mut out = vec![0u8; 64 + HEADER_LEN];
        // The datagram is there: returns at once, leaving the descriptor in blocking mode with a
        // 30 s receive time-out.
        let got = b.recv_frame_wait(&mut out, Duration::from_secs(30));
        assert_eq!(got, Some(Recv::Frame(hdr)));
        // A look on the empty socket must answer at once, not after the 30 s.
        let t = Instant::now();
        assert_eq!(b.recv_frame(&mut out), Recv::Nothing);
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "a look waited {:?}",
            t.elapsed()
        );
        // TCP never waits in `recv`.
        let (_, mut c) = pair(SocketKind::Tcp, 64, 8);
        assert_eq!(c.recv_frame_wait(&mut out, Duration::from_secs(30)), None);
    }

    #[test]
    fn an_empty_look_counts_only_within_one_call() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, b) = pair(kind, 64, 8);
            let mut tx = SampleTx::new(vec![a]);
            let mut rx = SampleRx::new(b);
            let mut buf = [0u8; 64];
            // Call 1: its first look finds the socket empty.
            rx.new_call();
            let probe = rx.wait_newer(&mut buf, None, RecvMode::Spin, Some(Duration::ZERO));
            assert!(matches!(probe, Err(WaitError::TimedOut)), "{kind:?}");
            // Three frames queue up before call 2.
            for i in 1..=3u8 {
                tx.write(&[i; 12], u64::from(i));
            }
            std::thread::sleep(Duration::from_millis(50));
            rx.new_call();
            let ok = rx
                .wait_newer(&mut buf, None, RecvMode::Spin, Some(Duration::from_secs(5)))
                .unwrap();
            assert_eq!(
                (ok.seq, ok.len),
                (3, 12),
                "{kind:?}: call 2 must drain to the newest"
            );
            // Call 3: an empty first look, then a frame arriving during its wait is returned.
            rx.new_call();
            let probe = rx.wait_newer(&mut buf, Some(3), RecvMode::Spin, Some(Duration::ZERO));
            assert!(matches!(probe, Err(WaitError::TimedOut)), "{kind:?}");
            tx.write(&[4; 9], 4);
            let ok = rx
                .wait_newer(
                    &mut buf,
                    Some(3),
                    RecvMode::Spin,
                    Some(Duration::from_secs(5)),
                )
                .unwrap();
            assert_eq!((ok.seq, ok.len), (4, 9), "{kind:?}");
        }
    }

    /// Move every message that is in flight from `tx` to `rx` (acks included); return them.
    fn pump(tx: &mut QueueTx, rx: &mut QueueRx) -> Vec<u8> {
        let mut got = Vec::new();
        let mut buf = [0u8; 8];
        for _ in 0..200 {
            match rx.try_recv(&mut buf) {
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(_) => {
                    if tx.is_empty() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        got
    }

    #[test]
    fn a_restarted_source_or_destination_gets_credit_again() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, b) = pair(kind, 8, 4);
            // The partition processes inherit their socket ends from the executive, which keeps
            // them: a restarted process gets the same socket.
            let (a2, b2) = (a.try_clone_fd().unwrap(), b.try_clone_fd().unwrap());
            let mut tx = QueueTx::new(a, 4);
            let mut rx = QueueRx::new(b, 4);
            for round in 0..3u8 {
                for i in 0..4 {
                    tx.try_send(&[round * 10 + i]).unwrap();
                }
                let got = pump(&mut tx, &mut rx);
                assert_eq!(got, (0..4).map(|i| round * 10 + i).collect::<Vec<_>>());
            }
            // The source restarts: its counts start at 0, the destination's acks continue at 12.
            drop(tx);
            let mut tx = QueueTx::new(FrameSocket::new(a2, kind, 8), 4);
            for round in 3..6u8 {
                for i in 0..4 {
                    tx.try_send(&[round * 10 + i])
                        .unwrap_or_else(|e| panic!("{kind:?} round {round}: {e:?}"));
                }
                let got = pump(&mut tx, &mut rx);
                assert_eq!(got, (0..4).map(|i| round * 10 + i).collect::<Vec<_>>());
            }
            // The destination restarts: its count starts again at 0.
            drop(rx);
            let mut rx = QueueRx::new(FrameSocket::new(b2, kind, 8), 4);
            for round in 6..9u8 {
                for i in 0..4 {
                    tx.try_send(&[round * 10 + i])
                        .unwrap_or_else(|e| panic!("{kind:?} round {round}: {e:?}"));
                }
                let got = pump(&mut tx, &mut rx);
                assert_eq!(got, (0..4).map(|i| round * 10 + i).collect::<Vec<_>>());
            }
        }
    }

    /// A queuing frame carries its send time, and `sent_by` judges the oldest message by it:
    /// empty is "not by then"; a message is by its send time and after, not before; the look
    /// takes the frame off the socket and consumes nothing (the receive after it gets the
    /// message); a later message behind it is judged only once it is the oldest.
    #[test]
    fn queuing_frames_carry_their_send_time() {
        // Sends and marks 2 ms apart, judged 1 ms off: far from the clock's error.
        let ms = |n: u64| n * 1_000_000;
        let gap = || std::thread::sleep(Duration::from_millis(2));
        let came = |rx: &mut QueueRx, by: u64, what: &str| {
            let t0 = Instant::now();
            while !rx.sent_by(by) {
                assert!(t0.elapsed() < Duration::from_secs(5), "{what} never came");
            }
        };
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            // Room for 2: the third message's stamp goes where the first one's was (the wrap).
            let (a, b) = pair(kind, 8, 2);
            let mut tx = QueueTx::new(a, 2);
            let mut rx = QueueRx::new(b, 2);
            assert!(!rx.sent_by(u64::MAX), "{kind:?}: empty");
            let mut buf = [0u8; 8];
            let mut marks = vec![partix_shm::clock::stamp_ns()];
            for m in 1..=3u8 {
                gap();
                tx.try_send(&[m])
                    .unwrap_or_else(|e| panic!("{kind:?} {m}: {e:?}"));
                gap();
                marks.push(partix_shm::clock::stamp_ns());
                // Message m was sent between marks m-1 and m; the oldest there is judged.
                came(&mut rx, marks[m as usize], &format!("{kind:?} {m}"));
                // (Message 1 is taken after the second look of round 2.)
                let oldest = if m <= 2 { 1 } else { 2 };
                assert!(
                    !rx.sent_by(marks[oldest - 1] + ms(1)),
                    "{kind:?} {m}: judged sent before it was"
                );
                if m == 2 {
                    // Judged by the oldest's stamp, not the newest's.
                    assert!(rx.sent_by(marks[1]), "{kind:?}");
                    assert_eq!(rx.try_recv(&mut buf), Ok(1), "{kind:?}");
                    assert_eq!(buf[0], 1, "{kind:?}: the looks consumed nothing");
                }
            }
            // Oldest first: 2, then 3 (whose stamp lies in the first one's place).
            for m in 2..=3u8 {
                assert!(rx.sent_by(marks[m as usize]), "{kind:?} {m}");
                assert!(!rx.sent_by(marks[m as usize - 1] + ms(1)), "{kind:?} {m}");
                assert_eq!(rx.try_recv(&mut buf), Ok(1), "{kind:?}");
                assert_eq!(buf[0], m, "{kind:?}");
            }
            assert!(!rx.sent_by(u64::MAX), "{kind:?}: empty again");
        }
    }

    /// An ack carries the time of the first consumption it acknowledges that no ack before it
    /// did, and a source that asked keeps the time of each room the acks after its request
    /// give: `room_by` tells whether the room the next send takes (by number, as the acks
    /// count consumed messages) was made by a time (udp and tcp, ends sized as a port's).
    /// Without a request it answers true.
    #[test]
    fn acks_say_when_the_room_they_give_was_made() {
        let stamp = partix_shm::clock::stamp_ns;
        let gap = || std::thread::sleep(Duration::from_millis(2));
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, b) = socket_pair(kind, 8, 2).unwrap();
            let src = FrameSocket::try_for(a, kind, 8, PortDirection::Source).unwrap();
            let dst = FrameSocket::try_for(b, kind, 8, PortDirection::Destination).unwrap();
            let mut tx = QueueTx::new(src, 2);
            let mut rx = QueueRx::new(dst, 2);
            let mut buf = [0u8; 8];
            for m in 1..=2u8 {
                tx.try_send(&[m]).unwrap();
            }
            assert_eq!(tx.try_send(&[3]), Err(PushError::Full), "{kind:?}");
            assert!(tx.room_by(0), "{kind:?}: nothing asked");
            tx.ask_room_note();
            let before = stamp();
            gap();
            // The credit is used up: the receive acknowledges at once; the source waits for
            // the ack.
            let took = |rx: &mut QueueRx, tx: &mut QueueTx, buf: &mut [u8; 8]| {
                let t0 = Instant::now();
                while rx.try_recv(buf) != Ok(1) {
                    assert!(
                        t0.elapsed() < Duration::from_secs(5),
                        "{kind:?}: nothing came"
                    );
                }
                while tx.len() == 2 {
                    assert!(t0.elapsed() < Duration::from_secs(5), "{kind:?}: no ack");
                }
            };
            took(&mut rx, &mut tx, &mut buf);
            let after = stamp();
            gap();
            // The third send needs room 0 (the first consumption).
            assert!(
                !tx.room_by(before),
                "{kind:?}: room made 2 ms after `before`"
            );
            assert!(tx.room_by(after), "{kind:?}");
            tx.try_send(&[3]).unwrap();
            // The fourth needs room 1, which a later ack gives.
            took(&mut rx, &mut tx, &mut buf);
            let after2 = stamp();
            assert!(
                !tx.room_by(after),
                "{kind:?}: room 1 made 2 ms after `after`"
            );
            assert!(tx.room_by(after2), "{kind:?}");
            // A new request numbers from the acks counted then: room 2's ack is its first.
            tx.try_send(&[4]).unwrap();
            tx.ask_room_note();
            let asked = stamp();
            gap();
            took(&mut rx, &mut tx, &mut buf);
            assert!(!tx.room_by(asked), "{kind:?}");
            assert!(tx.room_by(stamp()), "{kind:?}");
        }
    }

    /// A source's rooms are numbered from its cumulative ack at the request, ack by ack in
    /// order; a destination restart (an ack of a new identity: the source continues from its
    /// count) numbers them afresh. Acks written by hand (identity, count, times), so each
    /// room's time is known: the restart's ack gives no room its time (its count went back to
    /// 0), and the next ack's time is the room the next send needs. Checked to fail without
    /// the restart's renumbering and without the check that rooms are numbered in order
    /// (`numbered` in `drain_acks`). udp and tcp.
    #[test]
    fn a_destination_restart_numbers_the_rooms_afresh() {
        let ack = |dst: &mut FrameSocket, id: u32, count: u64, at: u64| {
            let mut times = [0u8; ACK_LEN];
            times[..8].copy_from_slice(&at.to_le_bytes());
            times[8..].copy_from_slice(&at.to_le_bytes());
            let hdr = FrameRepr {
                seq: id,
                len: ACK_LEN as u32,
                stamp: count,
            };
            assert!(dst.send_frame(hdr, &times));
        };
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (src, mut dst) = pair(kind, 8, 16);
            let mut tx = QueueTx::new(src, 4);
            let wait_acked = |tx: &mut QueueTx, n: usize| {
                let t0 = Instant::now();
                while tx.len() != n {
                    assert!(t0.elapsed() < Duration::from_secs(5), "{kind:?}: no ack");
                }
            };
            // The destination's announcement, then four sends: full.
            ack(&mut dst, 7, 0, 100);
            for m in 0..4u8 {
                tx.try_send(&[m]).unwrap();
            }
            assert_eq!(tx.try_send(&[4]), Err(PushError::Full), "{kind:?}");
            ack(&mut dst, 7, 2, 200);
            wait_acked(&mut tx, 2);
            for m in 4..6u8 {
                tx.try_send(&[m]).unwrap();
            }
            assert_eq!(tx.try_send(&[6]), Err(PushError::Full), "{kind:?}");
            tx.ask_room_note();
            // A new identity whose count starts again (a destination without a book): the
            // source goes on from 0, nothing in flight.
            ack(&mut dst, 9, 0, 300);
            wait_acked(&mut tx, 0);
            for m in 0..4u8 {
                tx.try_send(&[m]).unwrap();
            }
            assert_eq!(tx.try_send(&[4]), Err(PushError::Full), "{kind:?}");
            // Room 0 (the next send's, send 4 with MaxNbMessages 4) made at 5000.
            ack(&mut dst, 9, 1, 5000);
            wait_acked(&mut tx, 3);
            assert!(!tx.room_by(4999), "{kind:?}: room 0 was made at 5000");
            assert!(tx.room_by(5000), "{kind:?}");
        }
    }

    /// A source's book: a fresh region, as the executive makes one per socket queuing source.
    fn book() -> Words {
        let r = partix_shm::Region::create("book-test", Words::bytes(BOOK_WORDS)).unwrap();
        Words::attach(Arc::new(r), 0, BOOK_WORDS).unwrap()
    }

    /// A source restarted while its destination does not read goes on with the frames its
    /// earlier incarnations left in flight: it stays full, however often it restarts (each
    /// restart gave it `MaxNbMessages` more, and a UDP socket drops what does not fit), and its
    /// credit comes back as the destination consumes them, all of them, in order.
    #[test]
    fn a_restarted_source_goes_on_with_the_frames_its_earlier_incarnations_left_in_flight() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, b) = pair(kind, 8, 4);
            let book = book();
            let mut rx = QueueRx::new(b, 4);
            let mut tx = QueueTx::new(
                a.try_clone_fd()
                    .map(|f| FrameSocket::new(f, kind, 8))
                    .unwrap(),
                4,
            )
            .with_book(book.clone());
            for i in 0..4 {
                tx.try_send(&[i]).unwrap();
            }
            for restart in 1..=3 {
                assert_eq!(tx.try_send(&[9]), Err(PushError::Full), "{kind:?}");
                drop(tx);
                tx = QueueTx::new(FrameSocket::new(a.try_clone_fd().unwrap(), kind, 8), 4)
                    .with_book(book.clone());
                assert_eq!(tx.len(), 4, "{kind:?} after restart {restart}");
            }
            assert_eq!(tx.try_send(&[9]), Err(PushError::Full), "{kind:?}");
            let got = pump(&mut tx, &mut rx);
            assert_eq!(got, [0, 1, 2, 3], "{kind:?}");
            for i in 4..8 {
                tx.try_send(&[i])
                    .unwrap_or_else(|e| panic!("{kind:?} message {i}: {e:?}"));
            }
            assert_eq!(pump(&mut tx, &mut rx), [4, 5, 6, 7], "{kind:?}");
        }
    }

    /// A source killed inside a send is counted by its next incarnation exactly (killed before
    /// the send) or one frame short (killed after it), never more: here over udp, with 3 frames
    /// sent and a fourth under way, the next incarnation counts 3 frames in flight (3 are, or
    /// 4) and may send 1 more into a channel of 4 (4 in flight, or 5: the one short). With the
    /// frame counted only after its send, it counted 2 in both cases and sent 2 more: 5 or 6.
    #[test]
    fn a_source_killed_inside_a_send_is_counted_at_most_one_frame_short() {
        for (die, in_flight) in [(Die::BeforeSend, 3), (Die::AfterSend, 4)] {
            let (a, _b) = pair(SocketKind::Udp, 16, 4);
            let a2 = a.try_clone_fd().unwrap();
            let book = book();
            let mut tx = QueueTx::new(a, 4).with_book(book.clone());
            for i in 0..3u8 {
                tx.try_send(&[i]).unwrap();
            }
            tx.die = Some(die);
            let _ = tx.try_send(&[3]);
            drop(tx);
            let mut tx = QueueTx::new(FrameSocket::new(a2, SocketKind::Udp, 16), 4).with_book(book);
            let counted = tx.len();
            let mut more = 0;
            while tx.try_send(&[9]).is_ok() {
                more += 1;
                assert!(more <= 4, "{die:?}: the credit never ran out");
            }
            assert_eq!(
                (counted, more),
                (3, 1),
                "{die:?}: counted in flight, then sent ({in_flight} were in flight)"
            );
        }
    }

    /// A tcp source killed with the rest of a frame still in its buffer: that frame never
    /// arrives (the next incarnation's padding makes the destination drop it), and the book
    /// does not count it, so no credit is lost for good. The destination gets every whole
    /// frame, in order, and then the source has its whole credit again.
    #[test]
    fn a_frame_a_killed_tcp_source_left_partly_sent_is_not_counted() {
        const CREDIT: u32 = 400;
        let (a, b) = pair(SocketKind::Tcp, 4096, 4);
        let book = book();
        let mut rx = QueueRx::new(b, CREDIT);
        let a2 = a.try_clone_fd().unwrap();
        let (tx, n) = fill(QueueTx::new(a, CREDIT).with_book(book.clone()), 0);
        assert!(
            n < CREDIT,
            "the socket took {n} frames: the credit filled first"
        );
        assert!(
            tx.sock.pending(),
            "no frame was left partly sent ({n} sent)"
        );
        drop(tx);
        let mut tx =
            QueueTx::new(FrameSocket::new(a2, SocketKind::Tcp, 4096), CREDIT).with_book(book);
        assert_eq!(tx.sent, u64::from(n) - 1);
        let mut buf = vec![0u8; 4096];
        let mut got = 0u32;
        let deadline = Instant::now() + Duration::from_secs(30);
        while !(got == n - 1 && tx.is_empty()) {
            match rx.try_recv(&mut buf) {
                Ok(len) => {
                    assert_eq!(len, 4096);
                    assert!(buf.iter().all(|&x| x == got as u8), "frame {got}");
                    got += 1;
                }
                Err(_) => {
                    assert!(
                        Instant::now() < deadline,
                        "{got} of {} frames arrived; {} in flight",
                        n - 1,
                        tx.len()
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        assert_eq!(rx.try_recv(&mut buf), Err(PopError::Empty));
        assert_eq!(tx.len(), 0);
    }

    /// A queuing channel over `kind` with messages 0, 1, 2 sent and, by the time this returns,
    /// delivered to the destination's socket (loopback delivers long before the 50 ms pause).
    fn three_queued(kind: SocketKind) -> (QueueRx, QueueTx, SocketWaiter) {
        let (a, b) = pair(kind, 8, 4);
        let mut tx = QueueTx::new(a, 4);
        let rx = QueueRx::new(b, 4);
        for i in 0..3u8 {
            tx.try_send(&[i]).unwrap();
        }
        let w = rx.waiter().unwrap();
        assert!(w.park_until(Some(Instant::now() + Duration::from_secs(10)), || w.ready()));
        std::thread::sleep(Duration::from_millis(50));
        (rx, tx, w)
    }

    /// A udp queuing receive takes the datagram of the message it returns, and looks at the
    /// socket beyond it only as far as it must to tell whether the source may be out of credit
    /// (then it acknowledges at once): up to the credit's boundary, or until the socket is
    /// empty. A receive that acknowledges (a batch) looks no further. Order is kept, and the
    /// status counts every message.
    #[test]
    fn a_udp_queuing_receive_looks_past_its_message_only_as_far_as_the_credit_needs() {
        let (mut rx, mut tx, _) = three_queued(SocketKind::Udp);
        let mut buf = [0u8; 8];
        // Credit 4, 3 in flight: the receive takes 0, then 1 and 2, and finds the socket empty
        // (3 < 4: the source has credit left, no ack).
        let looks = rx.sock.looks;
        assert_eq!((rx.try_recv(&mut buf), buf[0]), (Ok(1), 0));
        assert_eq!((rx.count, rx.sock.looks - looks), (2, 4));
        assert_eq!(tx.len(), 3);
        assert_eq!(rx.len(), 2);
        // The next receive completes a batch (2): it acknowledges and looks no further.
        let looks = rx.sock.looks;
        assert_eq!((rx.try_recv(&mut buf), buf[0]), (Ok(1), 1));
        assert_eq!(rx.sock.looks, looks);
        assert_eq!(tx.len(), 1);
        // Four more make the source full: the receive that takes the next one sees it (its
        // look reaches the credit's boundary) and acknowledges at once.
        for i in 3..6u8 {
            tx.try_send(&[i]).unwrap();
        }
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!((rx.try_recv(&mut buf), buf[0]), (Ok(1), 2));
        assert_eq!(tx.len(), 3);
        for i in 3..6u8 {
            assert_eq!((rx.try_recv(&mut buf), buf[0]), (Ok(1), i));
        }
        assert_eq!(rx.try_recv(&mut buf), Err(PopError::Empty));
        assert_eq!(tx.len(), 0);
    }

    /// Over TCP one read can bring several frames into the stream buffer, where the waiter
    /// (which polls the socket) cannot see them: a receive takes them all, so a waiter never
    /// sleeps while a message waits in the buffer.
    #[test]
    fn a_tcp_queuing_receive_leaves_no_frame_unseen_by_the_waiter() {
        let (mut rx, _tx, w) = three_queued(SocketKind::Tcp);
        let mut buf = [0u8; 8];
        assert_eq!((rx.try_recv(&mut buf), buf[0]), (Ok(1), 0));
        for i in 1..3u8 {
            assert!(
                w.ready(),
                "message {i} waits where the waiter cannot see it"
            );
            assert_eq!((rx.try_recv(&mut buf), buf[0]), (Ok(1), i));
        }
        assert!(!w.ready());
    }

    /// A destination restarted after it took messages from the socket but before it
    /// acknowledged them (tcp: one read brought all four frames into its stream buffer; udp: a
    /// status query drained them) must not leave the source without credit for good: the new
    /// incarnation finds the socket empty, consumes nothing, and so never acks on its own.
    #[test]
    fn a_destination_restarted_before_it_acked_gives_the_source_credit_again() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, b) = pair(kind, 8, 4);
            let b2 = b.try_clone_fd().unwrap();
            let mut tx = QueueTx::new(a, 4);
            let mut rx = QueueRx::new(b, 4);
            for i in 0..4u8 {
                tx.try_send(&[i]).unwrap();
            }
            assert_eq!(tx.try_send(&[9]), Err(PushError::Full), "{kind:?}");
            let w = rx.waiter().unwrap();
            assert!(w.park_until(Some(Instant::now() + Duration::from_secs(10)), || w.ready()));
            std::thread::sleep(Duration::from_millis(50));
            if kind == SocketKind::Udp {
                assert_eq!(rx.len(), 4);
            }
            let mut buf = [0u8; 8];
            assert_eq!((rx.try_recv(&mut buf), buf[0]), (Ok(1), 0), "{kind:?}");
            // The other three are in the destination's memory (below the ack batch of 2: no ack).
            assert_eq!(rx.count, 3, "{kind:?}");
            drop(rx);
            let mut rx = QueueRx::new(FrameSocket::new(b2, kind, 8), 4);
            assert_eq!(rx.try_recv(&mut buf), Err(PopError::Empty), "{kind:?}");
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                match tx.try_send(&[9]) {
                    Ok(()) => break,
                    Err(PushError::Full) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(e) => panic!("{kind:?}: the source never got credit again: {e:?}"),
                }
            }
            assert_eq!(pump(&mut tx, &mut rx), [9], "{kind:?}");
        }
    }

    /// A destination's book: a fresh region, as the executive makes one per socket queuing
    /// destination.
    fn dest_book() -> Words {
        let r = partix_shm::Region::create("dbook-test", Words::bytes(DEST_BOOK_WORDS)).unwrap();
        Words::attach(Arc::new(r), 0, DEST_BOOK_WORDS).unwrap()
    }

    /// Receive from `rx` until nothing more comes for 50 ms; return the first word of each
    /// message.
    fn receive_all(rx: &mut QueueRx, max: u32) -> Vec<u32> {
        let mut buf = vec![0u8; max as usize];
        let mut got = Vec::new();
        let mut idle = Instant::now();
        while idle.elapsed() < Duration::from_millis(50) {
            if rx.try_recv(&mut buf).is_ok() {
                got.push(u32::from_le_bytes(buf[..4].try_into().unwrap()));
                idle = Instant::now();
            } else {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        got
    }

    /// Try `tx.try_send` for up to `limit` (calling `between` after each refusal); return
    /// whether one succeeded.
    fn sends_within(tx: &mut QueueTx, limit: Duration, mut between: impl FnMut()) -> bool {
        let t = Instant::now();
        while t.elapsed() < limit {
            if tx.try_send(&[9]).is_ok() {
                return true;
            }
            between();
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    /// A udp destination restarted again and again without taking a frame announces itself
    /// once, not once per incarnation: its count is the one it last acknowledged under the same
    /// identity. (2000 incarnations each announced themselves; the announcements filled the
    /// source's receive buffer, where the acks of the final incarnation, which consumed every
    /// message, were dropped: the source stayed full for good, the queue empty.)
    #[test]
    fn a_destination_restarted_often_without_reading_does_not_fill_its_sources_socket() {
        let (a, b) = pair(SocketKind::Udp, 16, 4);
        let bfd = b.try_clone_fd().unwrap();
        drop(b);
        let dbook = dest_book();
        let mut tx = QueueTx::new(a, 4).with_book(book());
        for i in 0..4u8 {
            tx.try_send(&[i]).unwrap();
        }
        let incarnation = || {
            let s = FrameSocket::new(bfd.try_clone().unwrap(), SocketKind::Udp, 16);
            QueueRx::with_book(s, 4, dbook.clone())
        };
        for _ in 0..2000 {
            drop(incarnation());
        }
        let mut rx = incarnation();
        let got = receive_all(&mut rx, 16);
        assert_eq!(got.len(), 4);
        assert!(
            sends_within(&mut tx, Duration::from_secs(1), || {}),
            "the source stayed full (the queue is empty)"
        );
    }

    /// A udp ack that the source's full receive buffer drops (its `send` succeeds) is sent
    /// again: a destination that keeps finding nothing repeats its cumulative ack, so a source
    /// left full by the loss gets its credit once its socket has room. (The destination never
    /// acked again, and both sides waited for ever while the queue was empty.)
    #[test]
    fn a_lost_udp_ack_is_sent_again() {
        let (a, b) = pair(SocketKind::Udp, 16, 4);
        let bfd = b.try_clone_fd().unwrap();
        let mut tx = QueueTx::new(a, 4);
        for i in 0..4u8 {
            tx.try_send(&[i]).unwrap();
        }
        let mut rx = QueueRx::new(b, 4);
        // Fill the source's socket with stale acks of this destination (the source takes them
        // only when it looks full): the acks of what it consumes next are dropped.
        let stale = {
            let mut f = [0u8; HEADER_LEN];
            FrameRepr {
                seq: rx.incarnation,
                len: 0,
                stamp: 0,
            }
            .emit(&mut f);
            f
        };
        for _ in 0..2000 {
            assert_eq!(sys::send(bfd.as_raw_fd(), &stale, 0), Ok(HEADER_LEN));
        }
        let mut buf = [0u8; 16];
        let mut got = 0;
        while got < 4 {
            match rx.try_recv(&mut buf) {
                Ok(_) => got += 1,
                Err(e) => panic!("message {got}: {e:?}"),
            }
        }
        // Until empty: the ack of all four goes out (and is dropped) then at the latest.
        assert_eq!(rx.try_recv(&mut buf), Err(PopError::Empty));
        assert_eq!(rx.acked_sent, 4);
        // The destination waits (a waiting receive looks every slice), the source tries.
        assert!(
            sends_within(&mut tx, Duration::from_secs(2), || {
                let _ = rx.try_recv(&mut buf);
            }),
            "the source stayed full (the queue is empty)"
        );
    }

    /// A destination restarted again and again while its source keeps the queue full goes on
    /// with its book: each incarnation announces what its earlier ones took off the socket
    /// (nothing here), so the source stays full and at most `MaxNbMessages` are ever in flight;
    /// then every message arrives once, in order. Messages an incarnation had taken off the
    /// socket but not consumed die with it, and their credit comes back, no more. (Each
    /// incarnation used to announce a count of 0 under a new identity, and the source started
    /// again with nothing in flight: k restarts let (k + 1) · `MaxNbMessages` frames into the
    /// sockets, and udp lost those that did not fit: 46 of 192 frames of 8 KiB after two
    /// restarts.)
    #[test]
    fn a_destination_restarted_while_its_source_keeps_the_queue_full_keeps_it_full() {
        for (kind, max, limit, restarts) in [
            (SocketKind::Udp, 8192u32, 64u32, 2usize),
            (SocketKind::Udp, 1024, 16, 4),
            (SocketKind::Tcp, 8192, 64, 6),
        ] {
            let (a, b) = pair(kind, max, limit);
            let bfd = b.try_clone_fd().unwrap();
            let dbook = dest_book();
            let mut tx = QueueTx::new(a, limit).with_book(book());
            let mut rx = QueueRx::with_book(b, limit, dbook.clone());
            let restart = |rx: QueueRx| {
                drop(rx);
                let s = FrameSocket::new(bfd.try_clone().unwrap(), kind, max);
                QueueRx::with_book(s, limit, dbook.clone())
            };
            let msg = |i: u32| {
                let mut v = vec![i as u8; max as usize];
                v[..4].copy_from_slice(&i.to_le_bytes());
                v
            };
            let mut sent = 0u32;
            while tx.try_send(&msg(sent)).is_ok() {
                sent += 1;
            }
            assert_eq!(sent, limit, "{kind:?}");
            for r in 1..=restarts {
                rx = restart(rx);
                std::thread::sleep(Duration::from_millis(2));
                assert_eq!(
                    tx.try_send(&msg(sent)),
                    Err(PushError::Full),
                    "{kind:?}: room after destination restart {r}"
                );
                assert_eq!(tx.len(), limit as usize, "{kind:?} restart {r}");
            }
            let got = receive_all(&mut rx, max);
            assert_eq!(got, (0..sent).collect::<Vec<_>>(), "{kind:?}");
            // The credit came back whole: `limit` more, and no more.
            while tx.try_send(&msg(sent)).is_ok() {
                sent += 1;
            }
            assert_eq!(sent, 2 * limit, "{kind:?}");
            // An incarnation takes the first into its memory (a status query takes them all
            // over udp; over tcp one read brings them) and dies with them: their credit comes
            // back, and the rest arrive, once, in order.
            let mut buf = vec![0u8; max as usize];
            rx.try_recv(&mut buf).unwrap();
            assert_eq!(u32::from_le_bytes(buf[..4].try_into().unwrap()), limit);
            let held = rx.len() as u32;
            assert!(held > 0, "{kind:?}: nothing held");
            rx = restart(rx);
            std::thread::sleep(Duration::from_millis(2));
            assert_eq!(tx.len(), (limit - 1 - held) as usize, "{kind:?}");
            let first = sent;
            while tx.try_send(&msg(sent)).is_ok() {
                sent += 1;
            }
            assert_eq!(sent - first, 1 + held, "{kind:?}");
            let got = receive_all(&mut rx, max);
            let want: Vec<u32> = (limit + 1 + held..sent).collect();
            assert_eq!(got, want, "{kind:?}");
            assert_eq!(tx.len(), 0, "{kind:?}");
        }
    }

    /// A tcp destination with a book counts the frames left in its stream buffer once per call,
    /// not once per frame taken: 500 small frames that a few reads bring in are walked about
    /// once each (a walk after every frame taken visited 125 000), and the book counts them all.
    #[test]
    fn a_tcp_destination_counts_its_stream_buffer_once_per_call() {
        let (a, b) = pair(SocketKind::Tcp, 64, 512);
        let dbook = dest_book();
        let mut tx = QueueTx::new(a, 512);
        let mut rx = QueueRx::with_book(b, 512, dbook.clone());
        for i in 0..500u32 {
            tx.try_send(&i.to_le_bytes().repeat(2)).unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
        let deadline = Instant::now() + Duration::from_secs(10);
        while rx.len() < 500 {
            assert!(Instant::now() < deadline, "{} of 500 arrived", rx.count);
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(dbook.get(DEST_BOOK_TAKEN).load(Ordering::Acquire), 500 << 1);
        assert!(rx.sock.walked <= 1000, "{} frames walked", rx.sock.walked);
        let got = receive_all(&mut rx, 64);
        assert_eq!(got, (0..500).collect::<Vec<_>>());
    }

    /// A udp destination killed inside a receive, after the frame left the socket and before
    /// its book counted it, is counted one frame more by its next incarnation: the source's
    /// credit comes back whole (one frame too few would be credit lost for good).
    #[test]
    fn a_udp_destination_killed_inside_a_receive_loses_no_credit() {
        let (a, b) = pair(SocketKind::Udp, 8, 4);
        let bfd = b.try_clone_fd().unwrap();
        let dbook = dest_book();
        let mut tx = QueueTx::new(a, 4).with_book(book());
        let mut rx = QueueRx::with_book(b, 4, dbook.clone());
        for i in 0..4u8 {
            tx.try_send(&[i]).unwrap();
        }
        std::thread::sleep(Duration::from_millis(2));
        assert!(rx.take_frame());
        // What a kill between the receive and the count leaves: the mark, the old count.
        dbook.get(DEST_BOOK_TAKEN).store(1, Ordering::Release);
        drop(rx);
        let mut rx = QueueRx::with_book(FrameSocket::new(bfd, SocketKind::Udp, 8), 4, dbook);
        assert_eq!(tx.len(), 3);
        tx.try_send(&[4]).unwrap();
        assert_eq!(tx.try_send(&[5]), Err(PushError::Full));
        assert_eq!(receive_all(&mut rx, 8), [1, 2, 3, 4]);
        assert_eq!(tx.len(), 0);
    }

    /// A tcp destination killed inside a receive (its book marked) that had read nothing off
    /// the socket yet keeps its identity and its count: the kernel's stream position is still
    /// the one its book kept with the count. The source then stays exactly as full as the
    /// socket is (two frames still in it: two more fit, the next is refused), and those frames
    /// arrive. (Such a kill gave the next incarnation a new identity, and the source started
    /// again with nothing in flight: four more fit beside the two.) Killed after a read brought
    /// bytes, it still takes a new identity: its count is unknown.
    #[test]
    fn a_tcp_destination_killed_inside_a_receive_that_read_nothing_keeps_its_count() {
        for read in [false, true] {
            let (a, b) = pair(SocketKind::Tcp, 8, 4);
            let bfd = b.try_clone_fd().unwrap();
            let dbook = dest_book();
            let mut tx = QueueTx::new(a, 4).with_book(book());
            let mut rx = QueueRx::with_book(b, 4, dbook.clone());
            let id = rx.incarnation;
            for i in 1..=2u8 {
                tx.try_send(&[i]).unwrap();
            }
            assert_eq!(receive_all(&mut rx, 8), [1, 2], "read {read}");
            for i in 3..=4u8 {
                tx.try_send(&[i]).unwrap();
            }
            std::thread::sleep(Duration::from_millis(20));
            // Killed inside its next receive: marked, and (`read`) a read brought bytes.
            rx.note_taking();
            if read {
                let mut some = [0u8; 10];
                assert_eq!(sys::recv(bfd.as_raw_fd(), &mut some, 0), Ok(10));
            }
            drop(rx);
            let sock = FrameSocket::try_for(bfd, SocketKind::Tcp, 8, PortDirection::Destination);
            let mut rx = QueueRx::with_book(sock.unwrap(), 4, dbook);
            if read {
                assert_ne!(rx.incarnation, id, "an unknown count kept its identity");
                continue;
            }
            assert_eq!((rx.incarnation, rx.consumed), (id, 2));
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(tx.len(), 2);
            tx.try_send(&[5]).unwrap();
            tx.try_send(&[6]).unwrap();
            assert_eq!(
                tx.try_send(&[7]),
                Err(PushError::Full),
                "more than the credit"
            );
            assert_eq!(receive_all(&mut rx, 8), [3, 4, 5, 6]);
        }
    }

    /// A source out of credit gets it back as soon as its destination takes a message, as over
    /// shared memory: the destination acknowledges at once whenever the source may have used
    /// its whole credit (here: 4 sent, 1 received; then, with a credit of 8, 5 sent, 1
    /// received, 3 more sent, 1 more received), and a sender waiting for room is woken. (The
    /// destination acknowledged in batches of half the credit, so the source stayed full with
    /// room at the destination: NOT_AVAILABLE, or TIMED_OUT for a sender that waits.)
    #[test]
    fn a_full_source_can_send_again_as_soon_as_its_destination_takes_a_message() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, b) = pair(kind, 8, 4);
            let mut tx = QueueTx::new(a, 4);
            let mut rx = QueueRx::new(b, 4).with_credit(4);
            for i in 0..4u8 {
                tx.try_send(&[i]).unwrap();
            }
            assert_eq!(tx.try_send(&[9]), Err(PushError::Full), "{kind:?}");
            std::thread::sleep(Duration::from_millis(5));
            let w = tx.waiter().unwrap();
            assert!(!w.ready(), "{kind:?}");
            let mut buf = [0u8; 8];
            assert_eq!((rx.try_recv(&mut buf), buf[0]), (Ok(1), 0), "{kind:?}");
            // The waiter of a sender with a time-out wakes for the acknowledgement.
            assert!(
                w.park_until(Some(Instant::now() + Duration::from_secs(1)), || w.ready()),
                "{kind:?}: a waiting sender is not woken"
            );
            assert_eq!(tx.try_send(&[4]), Ok(()), "{kind:?}: full with room");
            assert_eq!(tx.try_send(&[9]), Err(PushError::Full), "{kind:?}");
            assert_eq!(receive_all(&mut rx, 8), [1, 2, 3, 4], "{kind:?}");

            // Credit 8: what the destination learnt about the socket in one call is stale in the
            // next; the source fills up in between.
            let (a, b) = pair(kind, 8, 8);
            let mut tx = QueueTx::new(a, 8);
            let mut rx = QueueRx::new(b, 8).with_credit(8);
            for i in 0..5u8 {
                tx.try_send(&[i]).unwrap();
            }
            std::thread::sleep(Duration::from_millis(5));
            assert_eq!((rx.try_recv(&mut buf), buf[0]), (Ok(1), 0), "{kind:?}");
            for i in 5..8u8 {
                tx.try_send(&[i]).unwrap();
            }
            assert_eq!(tx.try_send(&[9]), Err(PushError::Full), "{kind:?}");
            std::thread::sleep(Duration::from_millis(5));
            assert_eq!((rx.try_recv(&mut buf), buf[0]), (Ok(1), 1), "{kind:?}");
            // Both messages taken are acknowledged.
            assert_eq!(tx.try_send(&[8]), Ok(()), "{kind:?}: full with room");
            assert_eq!(tx.try_send(&[9]), Ok(()), "{kind:?}: full with room");
            assert_eq!(tx.try_send(&[10]), Err(PushError::Full), "{kind:?}");
            assert_eq!(
                receive_all(&mut rx, 8),
                [2, 3, 4, 5, 6, 7, 8, 9],
                "{kind:?}"
            );
        }
    }

    /// Park on `w` for `time` (in slices, as a waiting process does; never ready); return the
    /// CPU time and the wall time that took.
    fn park_for(w: &SocketWaiter, time: Duration) -> (Duration, Duration) {
        let cpu = thread_cpu();
        let t = Instant::now();
        while t.elapsed() < time {
            assert!(!w.park_until(Some(t + time), || w.ready()));
        }
        (thread_cpu() - cpu, t.elapsed())
    }

    /// Send 4 KiB messages from `tx` until it answers Full (on a thread: fails if a send never
    /// returns); return it with the number sent.
    fn fill(mut tx: QueueTx, first: u32) -> (QueueTx, u32) {
        returns_within(Duration::from_secs(60), "try_send", move || {
            let mut n = first;
            let e = loop {
                match tx.try_send(&[n as u8; 4096]) {
                    Ok(()) => n += 1,
                    Err(e) => break e,
                }
                assert!(n - first < 100_000, "the connection never filled");
            };
            assert_eq!(e, PushError::Full);
            // Still full, and still no wait.
            assert_eq!(tx.try_send(&[0; 4096]), Err(PushError::Full));
            (tx, n)
        })
    }

    /// A queuing send never waits: a tcp destination that does not read fills the connection
    /// (here its credit exceeds what the socket buffers hold, as one that acknowledged what it
    /// never read would give), and the send answers Full instead of blocking until it reads.
    /// The frame the socket took only part of goes out whole, in order, once there is room
    /// (the waiter wakes for that room). Then the destination's end goes away with unread data
    /// (a reset): the send answers Full at once instead of spinning on `EPIPE`, and a waiter
    /// sleeps instead of polling a socket that is ready for ever.
    #[test]
    fn a_tcp_queuing_send_never_waits_for_a_destination_that_does_not_read() {
        let (a, mut b) = pair(SocketKind::Tcp, 4096, 4);
        let (mut tx, n) = fill(QueueTx::new(a, 1 << 20), 0);
        let w = tx.waiter().unwrap();
        let mut out = vec![0u8; 4096 + HEADER_LEN];
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut got = 0u32;
        while got < n {
            match b.recv_frame(&mut out) {
                Recv::Frame(h) => {
                    assert_eq!(h.len, 4096);
                    let payload = &out[HEADER_LEN..HEADER_LEN + 4096];
                    assert!(payload.iter().all(|&x| x == got as u8), "frame {got}");
                    got += 1;
                }
                Recv::Nothing => {
                    assert!(Instant::now() < deadline, "{got} of {n} frames arrived");
                    if w.ready() {
                        // A status query on the source sends what waits.
                        tx.len();
                    }
                    readable(&b, Duration::from_millis(10));
                }
            }
        }
        let (mut tx, _) = fill(tx, n);
        assert!(!tx.sock.is_dead());
        // Unread data in the receive queue: closing the end resets the connection.
        drop(b);
        std::thread::sleep(Duration::from_millis(20));
        let mut tx = returns_within(
            Duration::from_secs(60),
            "try_send after a reset",
            move || {
                for _ in 0..3 {
                    assert_eq!(tx.try_send(&[1; 4096]), Err(PushError::Full));
                }
                tx
            },
        );
        assert!(
            tx.sock.is_dead() && tx.sock.failures >= 1,
            "{:?}",
            tx.sock.failures
        );
        assert!(!w.ready());
        let (cpu, wall) = park_for(&w, Duration::from_millis(300));
        assert!(wall >= Duration::from_millis(300), "{wall:?}");
        assert!(
            cpu < Duration::from_millis(100),
            "a park on a dead connection used {cpu:?} of CPU in {wall:?}"
        );
        assert_eq!(tx.len(), tx.sent.wrapping_sub(tx.acked) as usize);
    }

    /// Wait on `w` for `time` as a waiting process does: park in slices, and whenever the park
    /// says ready, try the operation (`op`, which must fail: nothing can succeed). Return the
    /// CPU time and the wall time that took.
    fn wait_as_a_process(
        w: &SocketWaiter,
        time: Duration,
        mut op: impl FnMut() -> bool,
    ) -> (Duration, Duration) {
        let cpu = thread_cpu();
        let t = Instant::now();
        while t.elapsed() < time {
            if w.park_until(Some(t + time), || w.ready()) {
                assert!(!op(), "the operation succeeded");
            }
        }
        (thread_cpu() - cpu, t.elapsed())
    }

    /// Shut down the sending side of a socket (the peer then reads the end of the stream).
    fn shut_wr(s: &FrameSocket) {
        // SAFETY: shutdown on a descriptor the socket owns; no memory is passed.
        let r = unsafe { libc::shutdown(s.as_fd().as_raw_fd(), libc::SHUT_WR) };
        assert_eq!(r, 0);
    }

    /// A tcp peer that shuts its sending side down (the stream ends; the socket then polls
    /// readable for ever) must not make waits spin: a queuing destination waiting for a
    /// message, a queuing source waiting for credit (the acks' stream ended) and a blocking
    /// sampling wait each use a small part of their 300 ms in CPU.
    #[test]
    fn waits_sleep_after_the_peer_ends_its_stream() {
        const WAIT: Duration = Duration::from_millis(300);
        const CPU: Duration = Duration::from_millis(100);
        // Queuing destination.
        let (a, b) = pair(SocketKind::Tcp, 8, 4);
        let mut rx = QueueRx::new(b, 4);
        shut_wr(&a);
        let w = rx.waiter().unwrap();
        let mut buf = [0u8; 8];
        let (cpu, wall) = wait_as_a_process(&w, WAIT, || rx.try_recv(&mut buf).is_ok());
        assert!(
            wall >= WAIT && cpu < CPU,
            "destination: {cpu:?} of CPU in {wall:?}"
        );
        assert!(rx.sock.input_ended() && !rx.sock.is_dead());
        // Queuing source without credit.
        let (a, b) = pair(SocketKind::Tcp, 8, 1);
        let mut tx = QueueTx::new(a, 1);
        tx.try_send(&[1]).unwrap();
        shut_wr(&b);
        let w = tx.waiter().unwrap();
        let (cpu, wall) = wait_as_a_process(&w, WAIT, || tx.try_send(&[2]).is_ok());
        assert!(
            wall >= WAIT && cpu < CPU,
            "source: {cpu:?} of CPU in {wall:?}"
        );
        // Sampling destination, blocking wait.
        let (a, b) = pair(SocketKind::Tcp, 8, 4);
        let mut rx = SampleRx::new(b);
        shut_wr(&a);
        let cpu = thread_cpu();
        let t = Instant::now();
        rx.new_call();
        let r = rx.wait_newer(&mut buf, None, RecvMode::Blocking, Some(WAIT));
        let (cpu, wall) = (thread_cpu() - cpu, t.elapsed());
        assert!(matches!(r, Err(WaitError::TimedOut)), "{r:?}");
        assert!(
            wall >= WAIT && cpu < CPU,
            "sampling: {cpu:?} of CPU in {wall:?}"
        );
    }

    /// TCP frame alignment survives a partition restarted in the middle of a frame (the socket
    /// outlives the process; the rest of the frame, in its memory, does not). A source killed
    /// after `cut` bytes of a frame: its next incarnation's messages all arrive (its padding
    /// completes the cut frame, whose trailer then fails, even when it sends less than the cut
    /// frame's length). A destination killed after reading `cut` bytes of a frame: its next
    /// incarnation skips the rest and receives every later message.
    #[test]
    fn a_tcp_stream_resynchronises_after_an_end_restarts_mid_frame() {
        const MAX: u32 = 256;
        // A frame of MAX bytes of 1s, as the killed incarnation sent it on `fd` (where the
        // stream stands).
        let frame = |fd: &OwnedFd| {
            let h = FrameRepr {
                seq: 9,
                len: MAX,
                stamp: 0,
            };
            h.tcp_frame_at(&[1u8; MAX as usize], written(fd))
        };
        let raw = |fd: &OwnedFd, b: &[u8]| {
            assert_eq!(sys::send(fd.as_raw_fd(), b, 0), Ok(b.len()));
        };
        let messages = |round: u8| (0..5u8).map(move |i| vec![round * 10 + i; 7]);
        let expected = |round: u8| messages(round).flatten().collect::<Vec<u8>>();
        for cut in [
            3,
            HEADER_LEN - 1,
            HEADER_LEN + 10,
            HEADER_LEN + MAX as usize + 4,
        ] {
            // The source.
            let (a, b) = pair(SocketKind::Tcp, MAX, 8);
            let a2 = a.try_clone_fd().unwrap();
            let mut rx = QueueRx::new(b, 8);
            let mut tx = QueueTx::new(a, 8);
            for m in messages(1) {
                tx.try_send(&m).unwrap();
            }
            assert_eq!(pump(&mut tx, &mut rx), expected(1), "cut {cut}");
            raw(&a2, &frame(&a2)[..cut]);
            drop(tx);
            let mut tx = QueueTx::new(FrameSocket::new(a2, SocketKind::Tcp, MAX), 8);
            for m in messages(2) {
                tx.try_send(&m).unwrap();
            }
            assert_eq!(pump(&mut tx, &mut rx), expected(2), "source, cut {cut}");
            assert!(rx.sock.dropped + rx.sock.skipped > 0, "cut {cut}");
            // The destination.
            let (a, b) = pair(SocketKind::Tcp, MAX, 8);
            let (a2, b2) = (a.try_clone_fd().unwrap(), b.try_clone_fd().unwrap());
            let mut tx = QueueTx::new(a, 8);
            let mut rx = QueueRx::new(b, 8);
            let frame = frame(&a2);
            raw(&a2, &frame[..cut]);
            std::thread::sleep(Duration::from_millis(20));
            let mut buf = [0u8; MAX as usize];
            assert_eq!(rx.try_recv(&mut buf), Err(PopError::Empty));
            assert_eq!(
                rx.sock.rx_len - rx.sock.rx_off,
                cut,
                "the killed incarnation read the cut frame"
            );
            drop(rx);
            raw(&a2, &frame[cut..]);
            // The frame went on the source's stream as if the source had sent it.
            tx.sock.tx_pos_from_kernel();
            let mut rx = QueueRx::new(FrameSocket::new(b2, SocketKind::Tcp, MAX), 8);
            for m in messages(3) {
                tx.try_send(&m).unwrap();
            }
            assert_eq!(
                pump(&mut tx, &mut rx),
                expected(3),
                "destination, cut {cut}"
            );
        }
    }

    /// A tcp frame (header, `payload`, trailer) as a queuing source sends it at stream
    /// position `pos` (send time 0: sent by any deadline).
    fn tcp_frame_bytes(seq: u32, payload: &[u8], pos: u64) -> Vec<u8> {
        let h = FrameRepr {
            seq,
            len: payload.len() as u32,
            stamp: 0,
        };
        h.tcp_frame_at(payload, pos)
    }

    /// The bytes written on the stream of `fd` so far (where the next frame sent on it begins).
    fn written(fd: &OwnedFd) -> u64 {
        stream_positions(fd).unwrap().1
    }

    /// A tcp frame of `MAX` bytes, sent at stream position `pos`, whose payload holds at `at` a
    /// complete frame F' of 8 bytes of 0x77, as it was sent at stream position `inner_pos` of
    /// its own stream (a gateway partition's messages may hold frames it saw); F' alone.
    fn frame_holding_a_frame(
        max: usize,
        at: usize,
        pos: u64,
        inner_pos: u64,
    ) -> (Vec<u8>, Vec<u8>) {
        let inner = tcp_frame_bytes(7, &[0x77; 8], inner_pos);
        let mut payload = vec![0xAA; max];
        payload[at..at + inner.len()].copy_from_slice(&inner);
        (tcp_frame_bytes(3, &payload, pos), inner)
    }

    /// Send all of `b` on the socket `fd` (raw bytes on the stream).
    fn raw_send(fd: &OwnedFd, b: &[u8]) {
        assert_eq!(sys::send(fd.as_raw_fd(), b, 0), Ok(b.len()));
    }

    /// An end's buffers are sized for the way its frames go: a source's end holds a message to
    /// send and receives only acknowledgements (their payload: [`ACK_LEN`]), a destination's the
    /// other way round (both held
    /// buffers for the largest message both ways: a tcp source of M bytes took about 3M). A
    /// message of the maximum still goes through, acks come back, and an end refuses to send
    /// a frame longer than it was sized for instead of failing on its buffer.
    #[test]
    fn ends_are_sized_for_the_way_their_frames_go() {
        const M: u32 = 1 << 20;
        let (a, b) = pair(SocketKind::Tcp, M, 4);
        assert!(a.tx.len() >= M as usize && a.tx.len() < M as usize + 2 * PAGE);
        assert_eq!(a.rx.len(), 64 << 10);
        assert!(b.rx.len() >= 2 * M as usize && b.rx.len() < 2 * M as usize + PAGE);
        assert_eq!(b.tx.len(), HEADER_LEN + ACK_LEN + PAGE);
        let mut tx = QueueTx::new(a, 4);
        assert_eq!(tx.scratch.len(), HEADER_LEN + ACK_LEN);
        let mut rx = QueueRx::new(b, 4);
        let big = vec![0x5a; M as usize];
        for _ in 0..6 {
            // Four fit; the rest only as acks come back.
            let t = Instant::now();
            while tx.try_send(&big).is_err() {
                assert!(t.elapsed() < Duration::from_secs(10), "no credit came back");
                let mut buf = vec![0u8; M as usize];
                if let Ok(n) = rx.try_recv(&mut buf) {
                    assert_eq!(n, M as usize);
                    assert!(buf.iter().all(|&x| x == 0x5a));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        assert_eq!(
            tx.try_send(&vec![1; M as usize + 1]),
            Err(PushError::TooLarge)
        );
        let hdr = FrameRepr {
            seq: 1,
            len: ACK_LEN as u32 + 1,
            stamp: 0,
        };
        assert!(
            !rx.sock.send_frame(hdr, &[0; ACK_LEN + 1]),
            "a destination's end sent more than an ack's payload"
        );
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (_a, mut b) = pair(kind, 64, 4);
            let hdr = FrameRepr {
                seq: 1,
                len: 64,
                stamp: 0,
            };
            assert!(!b.send_frame(hdr, &[0; 64]), "{kind:?}");
        }
    }

    /// The kernel's stream counts are where each end stands, whatever handle or process moved
    /// them: bytes written by any writer, bytes taken off by any reader (not those that arrived
    /// and wait). A new end made on a socket starts its positions there.
    #[test]
    fn stream_positions_count_what_any_handle_wrote_and_took() {
        let (a, b) = socket_pair(SocketKind::Tcp, 64, 4).unwrap();
        assert_eq!(stream_positions(&a).unwrap(), (0, 0));
        assert_eq!(stream_positions(&b).unwrap(), (0, 0));
        let a2 = a.try_clone().unwrap();
        raw_send(&a, &[1; 100]);
        raw_send(&a2, &[2; 23]);
        // Arrived, not taken: the reader's position stays.
        readable(&b, Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(stream_positions(&b).unwrap().0, 0);
        let mut buf = [0u8; 50];
        assert_eq!(sys::recv(b.as_raw_fd(), &mut buf, 0), Ok(50));
        assert_eq!(stream_positions(&a).unwrap(), (0, 123));
        assert_eq!(stream_positions(&b).unwrap(), (50, 0));
        let e = FrameSocket::new(b.try_clone().unwrap(), SocketKind::Tcp, 64);
        assert_eq!((e.rx_pos, e.tx_pos), (50, 0));
        // A UDP socket has none.
        let (u, _) = socket_pair(SocketKind::Udp, 64, 4).unwrap();
        assert!(stream_positions(&u).is_err());
        // A reset connection has none either: an end made on it is dead at once.
        let (a, b) = socket_pair(SocketKind::Tcp, 64, 4).unwrap();
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: setsockopt reads one `linger` of the size given.
        let r = unsafe {
            libc::setsockopt(
                a.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0);
        drop(a);
        std::thread::sleep(Duration::from_millis(20));
        assert!(stream_positions(&b).is_err());
        let e = FrameSocket::new(b, SocketKind::Tcp, 64);
        assert!(e.is_dead() && e.failures == 1);
    }

    /// A FIN takes a sequence number but is no byte of the stream. A destination restarted after
    /// its source shut its side down (`shutdown(2)` on its socket: the kernel then counts the
    /// FIN among the bytes received) still takes every frame left in the socket; it started one
    /// byte late and dropped them all. Both ends' positions leave the FINs out, one way and both.
    #[test]
    fn a_destination_restarted_after_its_source_shut_down_takes_what_is_left() {
        const MAX: u32 = 64;
        let shut = |fd: &OwnedFd| {
            // SAFETY: `fd` is an open socket for the call.
            assert_eq!(unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_WR) }, 0);
        };
        let (a, b) = pair(SocketKind::Tcp, MAX, 8);
        let (a2, b2) = (a.try_clone_fd().unwrap(), b.try_clone_fd().unwrap());
        let mut tx = QueueTx::new(a, 8);
        let messages = (1..=3u8).map(|i| vec![i; 7]).collect::<Vec<_>>();
        for m in &messages {
            tx.try_send(m).unwrap();
        }
        // Until `fd` has had its peer's FIN (`POLLRDHUP`; the data alone makes it readable).
        let fin_came = |fd: &OwnedFd| {
            let mut p = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLRDHUP,
                revents: 0,
            };
            // SAFETY: one valid pollfd, nfds = 1.
            let r = unsafe { libc::poll(&mut p, 1, 5000) };
            assert!(r == 1 && p.revents & libc::POLLRDHUP != 0, "no FIN came");
        };
        let sent = written(&a2);
        assert!(sent > 0);
        shut(&a2);
        fin_came(&b2);
        assert_eq!(stream_positions(&a2).unwrap(), (0, sent));
        assert_eq!(stream_positions(&b2).unwrap(), (0, 0));
        // The destination's first incarnation took nothing; the next one is made after the FIN.
        drop(b);
        let mut rx = QueueRx::new(
            FrameSocket::new(b2.try_clone().unwrap(), SocketKind::Tcp, MAX),
            8,
        );
        assert_eq!(pump(&mut tx, &mut rx), messages.concat());
        assert_eq!(rx.sock.dropped, 0);
        // A source restarted after its own shutdown continues its count too.
        assert_eq!(
            FrameSocket::new(a2.try_clone().unwrap(), SocketKind::Tcp, MAX).tx_pos,
            sent
        );
        // Closed both ways, the connection has no peer, and no positions: an end made on it is
        // dead at once, as on a reset one.
        shut(&b2);
        fin_came(&a2);
        let deadline = Instant::now() + Duration::from_secs(5);
        while stream_positions(&b2).is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(stream_positions(&b2).is_err());
        assert!(FrameSocket::new(b2, SocketKind::Tcp, MAX).is_dead());
    }

    /// After a tcp source was killed inside a frame whose payload holds a complete frame F', the
    /// destination drops the torn frame whole and delivers only the next incarnation's messages.
    /// (It searched the torn frame's payload for a header and delivered F'.) F' here is even
    /// valid where it lies in the stream (as if made to be): dropping the torn frame's extent,
    /// not the position check, keeps it out.
    #[test]
    fn a_frame_inside_the_payload_of_a_torn_tcp_frame_is_not_delivered() {
        const MAX: u32 = 256;
        let messages = |round: u8| (0..5u8).map(move |i| vec![round * 10 + i; 7]);
        let expected = |round: u8| messages(round).flatten().collect::<Vec<u8>>();
        let (a, b) = pair(SocketKind::Tcp, MAX, 8);
        let a2 = a.try_clone_fd().unwrap();
        let mut rx = QueueRx::new(b, 8);
        let mut tx = QueueTx::new(a, 8);
        for m in messages(1) {
            tx.try_send(&m).unwrap();
        }
        assert_eq!(pump(&mut tx, &mut rx), expected(1));
        let pos = written(&a2);
        let (outer, inner) =
            frame_holding_a_frame(MAX as usize, 40, pos, pos + (HEADER_LEN + 40) as u64);
        // Killed after F' and two bytes more.
        raw_send(&a2, &outer[..HEADER_LEN + 40 + inner.len() + 2]);
        drop(tx);
        let mut tx = QueueTx::new(FrameSocket::new(a2, SocketKind::Tcp, MAX), 8);
        for m in messages(2) {
            tx.try_send(&m).unwrap();
        }
        assert_eq!(pump(&mut tx, &mut rx), expected(2), "F' delivered");
        assert_eq!(rx.sock.dropped, 1);
    }

    /// A tcp destination restarted after reading half of a frame whose payload holds a complete
    /// frame F' (in the half it did not read) does not deliver F': F' is not valid where it
    /// lies in the stream (it was made for position 0 of its own stream, or for where the
    /// frame holding it begins). Then the source's next messages arrive. (F' was delivered.)
    #[test]
    fn a_frame_inside_a_payload_is_not_delivered_to_a_destination_restarted_inside_it() {
        for from_start in [true, false] {
            a_frame_inside_a_payload_is_not_delivered_after_a_restart(from_start);
        }
    }

    fn a_frame_inside_a_payload_is_not_delivered_after_a_restart(from_start: bool) {
        const MAX: u32 = 256;
        let messages = (0..5u8).map(|i| vec![30 + i; 7]).collect::<Vec<_>>();
        let (a, b) = pair(SocketKind::Tcp, MAX, 8);
        let (a2, b2) = (a.try_clone_fd().unwrap(), b.try_clone_fd().unwrap());
        // Padding first (skipped), so that the frame's position is not 0.
        raw_send(&a2, &[0; 100]);
        let pos = written(&a2);
        assert_eq!(pos, 100);
        let inner_pos = if from_start { 0 } else { pos };
        let (outer, _) = frame_holding_a_frame(MAX as usize, 200, pos, inner_pos);
        raw_send(&a2, &outer);
        // The killed incarnation read the padding and the first part of the frame (F' is in
        // the rest).
        let half = outer.len() / 2;
        let mut buf = vec![0u8; half];
        let mut read = 0;
        while read < half {
            readable(&b2, Duration::from_secs(5));
            if let Ok(k) = sys::recv(b2.as_raw_fd(), &mut buf[read..], libc::MSG_DONTWAIT) {
                read += k;
            }
        }
        // The restarted destination, and a source (the frame's source restarted too).
        drop((a, b));
        let mut rx = QueueRx::new(FrameSocket::new(b2, SocketKind::Tcp, MAX), 8);
        let mut tx = QueueTx::new(FrameSocket::new(a2, SocketKind::Tcp, MAX), 8);
        for m in &messages {
            tx.try_send(m).unwrap();
        }
        assert_eq!(
            pump(&mut tx, &mut rx),
            messages.concat(),
            "F' delivered, or a message lost"
        );
    }

    /// A tcp destination restarted inside a frame whose payload holds a complete frame F' does
    /// not deliver F' even when the bytes it can read end right after F' (the rest of the
    /// payload around it not arrived yet), where nothing that follows F' tells it from a frame
    /// of the stream: F' is not valid where it lies. When the rest comes, so do the source's
    /// next messages. (Until the stream positions, F' was taken: the known limitation this
    /// test pinned.)
    #[test]
    fn a_frame_ending_where_the_bytes_read_end_is_not_taken_after_a_restart() {
        const MAX: u32 = 256;
        let (a, b) = pair(SocketKind::Tcp, MAX, 8);
        let a2 = a.try_clone_fd().unwrap();
        let (outer, inner) = frame_holding_a_frame(MAX as usize, 200, written(&a2), 0);
        let end = HEADER_LEN + 200 + inner.len();
        // A killed incarnation read the first 100 bytes; the rest comes up to F's end only.
        raw_send(&a2, &outer[..end]);
        let mut buf = [0u8; 100];
        let b2 = b.try_clone_fd().unwrap();
        let mut read = 0;
        while read < 100 {
            readable(&b2, Duration::from_secs(5));
            if let Ok(k) = sys::recv(b2.as_raw_fd(), &mut buf[read..], libc::MSG_DONTWAIT) {
                read += k;
            }
        }
        // The restarted destination.
        drop(b);
        let mut rx = QueueRx::new(FrameSocket::new(b2, SocketKind::Tcp, MAX), 8);
        std::thread::sleep(Duration::from_millis(20));
        let mut got = [0u8; MAX as usize];
        assert_eq!(rx.try_recv(&mut got), Err(PopError::Empty), "F' was taken");
        raw_send(&a2, &outer[end..]);
        let messages = (0..5u8).map(|i| vec![40 + i; 7]).collect::<Vec<_>>();
        drop(a);
        let mut tx = QueueTx::new(FrameSocket::new(a2, SocketKind::Tcp, MAX), 8);
        for m in &messages {
            tx.try_send(m).unwrap();
        }
        assert_eq!(pump(&mut tx, &mut rx), messages.concat());
    }

    /// A udp datagram longer than the receive buffer (which holds a frame of `max` bytes) is
    /// malformed whatever its header says: dropped and counted, not cut to a frame of `max`
    /// bytes; the next good frame is received. Both receives: the look and the blocking one.
    #[test]
    fn an_oversized_udp_datagram_is_dropped_not_cut() {
        let bad = |max: u32| {
            let mut d = vec![7u8; max as usize + HEADER_LEN + 1];
            let h = FrameRepr {
                seq: 1,
                len: max,
                stamp: 1,
            };
            h.emit(&mut d);
            d
        };
        let good = FrameRepr {
            seq: 2,
            len: 3,
            stamp: 2,
        };
        let (mut a, b) = pair(SocketKind::Udp, 64, 4);
        let mut rx = QueueRx::new(b, 4);
        let fd = a.as_fd().as_raw_fd();
        assert_eq!(sys::send(fd, &bad(64), 0), Ok(64 + HEADER_LEN + 1));
        assert!(a.send_frame(good, &[1, 2, 3]));
        let w = rx.waiter().unwrap();
        assert!(w.park_until(Some(Instant::now() + Duration::from_secs(10)), || w.ready()));
        std::thread::sleep(Duration::from_millis(20));
        let mut buf = [0u8; 64];
        assert_eq!(rx.try_recv(&mut buf), Ok(3));
        assert_eq!(buf[..3], [1, 2, 3]);
        assert_eq!(rx.sock.dropped, 1);
        // The blocking receive, into a buffer of exactly one frame of `max`.
        let (mut a, mut b) = pair(SocketKind::Udp, 64, 4);
        let fd = a.as_fd().as_raw_fd();
        let mut out = vec![0u8; 64 + HEADER_LEN];
        assert_eq!(sys::send(fd, &bad(64), 0), Ok(64 + HEADER_LEN + 1));
        assert!(a.send_frame(good, &[4, 5, 6]));
        let t = Duration::from_secs(5);
        assert_eq!(b.recv_frame_wait(&mut out, t), Some(Recv::Nothing));
        assert_eq!(b.dropped, 1);
        assert_eq!(b.recv_frame_wait(&mut out, t), Some(Recv::Frame(good)));
        assert_eq!(out[HEADER_LEN..HEADER_LEN + 3], [4, 5, 6]);
    }

    #[test]
    fn queue_credits_block_the_source_until_acks_arrive() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, b) = pair(kind, 8, 4);
            let mut tx = QueueTx::new(a, 4);
            let mut rx = QueueRx::new(b, 4);
            for i in 0..4u8 {
                tx.try_send(&[i]).unwrap();
            }
            assert_eq!(tx.try_send(&[9]), Err(PushError::Full));
            let mut buf = [0u8; 8];
            let w = rx.waiter().unwrap();
            assert!(w.park_until(Some(Instant::now() + Duration::from_secs(10)), || w.ready()));
            for i in 0..4u8 {
                let mut n = rx.try_recv(&mut buf);
                while n == Err(PopError::Empty) {
                    readable(&w.fd, Duration::from_millis(10));
                    n = rx.try_recv(&mut buf);
                }
                assert_eq!((n, buf[0]), (Ok(1), i), "{kind:?}");
            }
            assert_eq!(rx.try_recv(&mut buf), Err(PopError::Empty));
            let tw = tx.waiter().unwrap();
            assert!(
                tw.park_until(Some(Instant::now() + Duration::from_secs(10)), || tw
                    .ready())
            );
            tx.try_send(&[5]).unwrap();
            assert_eq!(tx.len(), 1, "{kind:?}");
        }
    }

    /// A peer that floods malformed datagrams cannot keep a receive inside the endpoint: one
    /// `recv_frame` takes at most RECV_ROUNDS of them and answers Nothing; later calls go on,
    /// drop the rest and return the good frame behind them.
    #[test]
    fn a_flood_of_malformed_datagrams_does_not_hold_a_receive() {
        let (a, mut b) = pair(SocketKind::Udp, 64, 256);
        let fd = a.as_fd().as_raw_fd();
        let bad = 100u32;
        for _ in 0..bad {
            assert_eq!(sys::send(fd, b"junk!", 0), Ok(5));
        }
        let good = FrameRepr {
            seq: 1,
            len: 3,
            stamp: 1,
        };
        let mut a = a;
        assert!(a.send_frame(good, &[1, 2, 3]));
        let mut out = vec![0u8; 64 + HEADER_LEN];
        assert_eq!(b.recv_frame(&mut out), Recv::Nothing);
        assert_eq!(b.dropped, u64::from(RECV_ROUNDS));
        // Not empty: input is left, and the socket polls readable for it.
        assert!(b.cut());
        assert!(readable(&b, Duration::ZERO));
        let mut calls = 1;
        let got = loop {
            calls += 1;
            if let Recv::Frame(h) = b.recv_frame(&mut out) {
                break h;
            }
            assert!(calls < 10, "no frame after {calls} calls");
        };
        assert_eq!(got, good);
        assert_eq!(b.dropped, u64::from(bad));
    }

    /// A sampling read drains at most what can have been queued when it started (the socket's
    /// receive buffer), so a source that writes as fast as the reader takes frames cannot keep
    /// a read from returning. Here the budget is cut to two frames: a read takes two of five,
    /// the next ones go on to the newest.
    #[test]
    fn a_sampling_read_drains_at_most_its_budget() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, mut b) = pair(kind, 8, 16);
            let charge = if kind == SocketKind::Udp {
                UDP_DRAIN_CHARGE
            } else {
                0
            };
            b.rcvbuf = 2 * (HEADER_LEN + 8 + charge);
            let mut tx = SampleTx::new(vec![a]);
            let mut rx = SampleRx::new(b);
            for i in 1..=5u8 {
                tx.write(&[i; 8], u64::from(i));
            }
            std::thread::sleep(Duration::from_millis(20));
            let mut buf = [0u8; 8];
            rx.new_call();
            let first = rx.read(&mut buf).map(|ok| ok.len);
            assert_eq!((first, buf[0]), (Ok(8), 2), "{kind:?}");
            let mut newest = buf[0];
            for _ in 0..5 {
                rx.new_call();
                if rx.read(&mut buf).is_ok() {
                    newest = buf[0];
                }
            }
            assert_eq!(newest, 5, "{kind:?}");
        }
    }

    /// Over tcp, frames already read into the stream buffer (by a wait that took one frame and
    /// left the rest there) come on top of the socket's budget: a read still returns the newest
    /// frame queued when it started, however small the socket's buffer.
    #[test]
    fn a_tcp_sampling_read_drains_what_its_stream_buffer_holds() {
        let (a, mut b) = pair(SocketKind::Tcp, 8, 16);
        b.rcvbuf = 1;
        let mut tx = SampleTx::new(vec![a]);
        let mut rx = SampleRx::new(b);
        for i in 1..=5u8 {
            tx.write(&[i; 8], u64::from(i));
        }
        std::thread::sleep(Duration::from_millis(20));
        // One frame taken; one read brought all five into the stream buffer.
        let mut out = vec![0u8; 8 + HEADER_LEN];
        assert!(matches!(rx.sock.recv_frame(&mut out), Recv::Frame(_)));
        assert_eq!(
            rx.sock.rx_len - rx.sock.rx_off,
            4 * (HEADER_LEN + 8 + TRAILER_LEN)
        );
        let mut buf = [0u8; 8];
        rx.new_call();
        assert_eq!(rx.read(&mut buf).map(|ok| ok.len), Ok(8));
        assert_eq!(buf[0], 5);
    }

    /// A destination's look makes at most RECV_ROUNDS receives, frames that are not messages
    /// (a broken source sending zero-length frames) included, and then answers Empty with the
    /// rest left on the socket, which polls readable (a waiter wakes for it); later looks go
    /// on to the message. Over tcp the frames a read brought into the stream buffer are all
    /// parsed (no receive is needed for them): the message behind them comes in the same look.
    #[test]
    fn a_queuing_look_skips_a_bounded_number_of_frames_that_are_not_messages() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (mut a, b) = pair(kind, 8, 512);
            let mut rx = QueueRx::new(b, 512);
            let junk = FrameRepr {
                seq: 1,
                len: 0,
                stamp: 0,
            };
            for _ in 0..100 {
                assert!(a.send_frame(junk, &[]), "{kind:?}");
            }
            let msg = FrameRepr {
                seq: 1,
                len: 1,
                stamp: 0,
            };
            assert!(a.send_frame(msg, &[7]), "{kind:?}");
            std::thread::sleep(Duration::from_millis(20));
            let mut buf = [0u8; 8];
            let mut looks = 1;
            if kind == SocketKind::Udp {
                assert_eq!(rx.try_recv(&mut buf), Err(PopError::Empty));
                assert_eq!(rx.sock.dropped, u64::from(RECV_ROUNDS));
                assert!(
                    rx.waiter().unwrap().ready(),
                    "the waiter must see what is left"
                );
                looks += 1;
            }
            while rx.try_recv(&mut buf) != Ok(1) {
                looks += 1;
                assert!(looks < 10, "{kind:?}: no message after {looks} looks");
            }
            assert_eq!((buf[0], rx.sock.dropped), (7, 100), "{kind:?}");
        }
    }

    /// A source's drain of acks takes at most `limit` + RECV_ROUNDS frames: a destination that
    /// floods acks cannot keep a send inside the endpoint; the credit comes with later sends.
    #[test]
    fn a_flood_of_acks_does_not_hold_a_send() {
        for kind in [SocketKind::Udp, SocketKind::Tcp] {
            let (a, mut b) = pair(kind, 8, 512);
            let mut tx = QueueTx::new(a, 4);
            for i in 0..4u8 {
                tx.try_send(&[i]).unwrap();
            }
            // The destination's incarnation announces itself, acks nothing 200 times, then
            // acknowledges all four.
            let ack = |stamp| FrameRepr {
                seq: 5,
                len: 0,
                stamp,
            };
            for _ in 0..200 {
                assert!(b.send_frame(ack(0), &[]), "{kind:?}");
            }
            assert!(b.send_frame(ack(4), &[]), "{kind:?}");
            std::thread::sleep(Duration::from_millis(20));
            let mut sends = 1;
            if kind == SocketKind::Udp {
                // 4 + RECV_ROUNDS receives: the last ack is not reached in one drain. (Over
                // tcp one read brings every ack into the stream buffer, all parsed.)
                assert_eq!(tx.try_send(&[9]), Err(PushError::Full));
                assert!(
                    tx.waiter().unwrap().ready(),
                    "the waiter must see what is left"
                );
                sends += 1;
            }
            while tx.try_send(&[9]).is_err() {
                sends += 1;
                assert!(sends < 10, "{kind:?}: no credit after {sends} sends");
            }
        }
    }
}
