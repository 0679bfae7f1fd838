//! [`RingTransport`]: AF_PACKET with a `PACKET_RX_RING` (TPACKET_V2) mapped into the process.
//!
//! The kernel copies each received frame into the next slot of a ring shared with this process
//! and sets the slot's `tp_status` to `TP_STATUS_USER`; the receiver reads the frame and hands
//! the slot back with `TP_STATUS_KERNEL`. A poll is one acquire-load of that word: no system
//! call, no copy through `recvmsg`. On a veth pair the frame is written into the ring by the
//! *sender's* `sendmsg` (the NET_RX softirq runs synchronously when the sender's system call
//! re-enables bottom halves), so a busy-polling receiver on another CPU sees it the moment it
//! lands. Measured on the 2-vCPU VM: raw ping-pong p50 3.6 µs with the ring vs 4.5–7.4 µs with
//! one `recvmsg(MSG_DONTWAIT)` per poll (see `docs/fs-protocol.md`).
//!
//! Sending is the same `sendmsg` as [`super::PacketTransport`] (a TX ring still needs one
//! `send` per frame to kick the kernel, so it saves nothing for one frame per request).
#![allow(unsafe_code)]

use super::{
    bind_packet_socket, interface_index, interface_mac_mtu, packet_socket, recv_polling,
    send_frame, PeerAddr, Received, RecvMode, Transport,
};
use partix_wire::ethernet::{EthernetAddress, HEADER_LEN as ETH_HEADER_LEN};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// `PACKET_VERSION` value for TPACKET_V2 (`enum tpacket_versions` in `linux/if_packet.h`).
const TPACKET_V2: libc::c_int = 1;
/// Slots in the ring: frames the kernel can queue while the receiver is busy elsewhere.
const RING_FRAMES: usize = 256;
/// Slots per ring block (a block must be a whole number of pages and hold whole slots).
const FRAMES_PER_BLOCK: usize = 16;
/// Offset of `struct sockaddr_ll` in a TPACKET_V2 slot: `TPACKET_ALIGN(sizeof(tpacket2_hdr))`.
const SLL_OFFSET: usize = align16(std::mem::size_of::<libc::tpacket2_hdr>());
/// Offset of `sll_pkttype` in `struct sockaddr_ll`.
const SLL_PKTTYPE: usize = 10;

const fn align16(x: usize) -> usize {
    (x + 15) & !15
}

/// The mapped receive ring.
#[derive(Debug)]
struct Ring {
    base: NonNull<u8>,
    len: usize,
    frame_size: usize,
    frames: usize,
    /// Next slot to read (the kernel fills slots in order).
    next: usize,
}

// SAFETY: the mapping is owned by this value alone (no aliases are handed out); moving it to
// another thread moves that ownership with it.
unsafe impl Send for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly the mapping made in `RingTransport::open`, and no
        // reference into it outlives `self`.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

impl Ring {
    /// Return the status word of slot `i` (`i < frames`).
    fn status(&self, i: usize) -> &AtomicU32 {
        debug_assert!(i < self.frames);
        // SAFETY: slot `i` lies inside the mapping (`i < frames`, `frames * frame_size <= len`);
        // `tp_status` is the first field of `tpacket2_hdr`, 4-aligned because every slot starts
        // at a multiple of 16 from a page-aligned base. The kernel writes the word concurrently,
        // which is what the atomic type is for; the reference lives no longer than `&self`.
        unsafe {
            &*self
                .base
                .as_ptr()
                .add(i * self.frame_size)
                .cast::<AtomicU32>()
        }
    }

    /// Return the bytes of slot `i`. Only meaningful while the slot belongs to user space
    /// (status `TP_STATUS_USER` seen with acquire ordering): the kernel then does not write it.
    fn slot(&self, i: usize) -> &[u8] {
        // SAFETY: as in `status`: the slot is inside the mapping. The caller reads it only
        // while it is owned by user space, so no concurrent kernel write races these reads.
        unsafe {
            std::slice::from_raw_parts(self.base.as_ptr().add(i * self.frame_size), self.frame_size)
        }
    }
}

/// Raw Ethernet frames with the protocol's EtherType on one interface, received through a
/// memory-mapped `PACKET_RX_RING` (TPACKET_V2); sent with `sendmsg` like
/// [`super::PacketTransport`]. Interoperates with it frame for frame (same wire format).
///
/// Memory: 256 slots of the next power of two above MTU + 128 bytes (512 KiB at
/// MTU 1500), locked to this socket. When the ring is full the kernel drops frames (counted by
/// [`RingTransport::kernel_drops`]); the protocol's retransmission recovers them.
#[derive(Debug)]
pub struct RingTransport {
    ring: Ring,
    fd: OwnedFd,
    mac: EthernetAddress,
    mtu: usize,
    mode: RecvMode,
    losing: u64,
}

impl RingTransport {
    /// Open a packet socket on `iface` with a receive ring for the protocol's EtherType.
    ///
    /// # Errors
    /// `PermissionDenied` without CAP_NET_RAW; `NotFound` for an unknown interface; the kernel's
    /// error when the ring cannot be set up or mapped (e.g. locked-memory limits).
    pub fn open(iface: &str, mode: RecvMode) -> io::Result<RingTransport> {
        let ifindex = interface_index(iface)?;
        // Protocol 0 until bound: no frame lands in the ordinary queue before the ring exists.
        let fd = packet_socket(0)?;
        let (mac, mtu) = interface_mac_mtu(fd.as_raw_fd(), iface)?;
        setsockopt_int(&fd, libc::PACKET_VERSION, TPACKET_V2)?;
        let frame_size = (mtu + ETH_HEADER_LEN + 128).next_power_of_two().max(2048);
        let block_size = frame_size * FRAMES_PER_BLOCK;
        let req = libc::tpacket_req {
            tp_block_size: u32::try_from(block_size)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "MTU too large"))?,
            tp_block_nr: (RING_FRAMES / FRAMES_PER_BLOCK) as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: RING_FRAMES as u32,
        };
        // SAFETY: `req` is a valid tpacket_req and its size is passed.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_RX_RING,
                (&req as *const libc::tpacket_req).cast(),
                std::mem::size_of::<libc::tpacket_req>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let len = block_size * (RING_FRAMES / FRAMES_PER_BLOCK);
        // SAFETY: mapping the ring the kernel just allocated for this socket, at offset 0 and
        // with its exact size (blocks are contiguous in the mapping for TPACKET_V2).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_LOCKED,
                fd.as_raw_fd(),
                0,
            )
        };
        // MAP_LOCKED may exceed RLIMIT_MEMLOCK for unprivileged users: retry unlocked.
        let p = if p == libc::MAP_FAILED {
            // SAFETY: as above, without MAP_LOCKED.
            unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
                    0,
                )
            }
        } else {
            p
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast::<u8>())
            .ok_or_else(|| io::Error::other("mmap of the packet ring returned NULL"))?;
        let ring = Ring {
            base,
            len,
            frame_size,
            frames: RING_FRAMES,
            next: 0,
        };
        bind_packet_socket(&fd, ifindex)?;
        Ok(RingTransport {
            ring,
            fd,
            mac,
            mtu,
            mode,
            losing: 0,
        })
    }

    /// Return the interface's MAC address.
    pub fn mac(&self) -> EthernetAddress {
        self.mac
    }

    /// Return how many times the kernel flagged a slot with `TP_STATUS_LOSING` (frames were
    /// dropped because the ring was full).
    pub fn kernel_drops(&self) -> u64 {
        self.losing
    }

    /// Take one frame from the ring without waiting; `Ok(None)` when the next slot is empty.
    fn try_recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        loop {
            let i = self.ring.next;
            // SYNC POINT: Acquire pairs with the kernel's release of the slot to user space
            // (`smp_wmb()` before `__packet_set_status(TP_STATUS_USER)`): the frame bytes and
            // the header written before it are visible once the status is.
            let status = self.ring.status(i).load(Ordering::Acquire);
            if status & libc::TP_STATUS_USER == 0 {
                return Ok(None);
            }
            if status & libc::TP_STATUS_LOSING != 0 {
                self.losing += 1;
            }
            let got = Self::parse_slot(self.ring.slot(i), self.mac, buf);
            // SYNC POINT: Release hands the slot back after all reads of it above.
            self.ring
                .status(i)
                .store(libc::TP_STATUS_KERNEL, Ordering::Release);
            self.ring.next = (i + 1) % self.ring.frames;
            if let Some(r) = got {
                return Ok(Some(r));
            }
        }
    }

    /// Copy the message of a user-owned slot into `buf`; `None` for frames to skip (our own
    /// outgoing frames, frames for another MAC).
    fn parse_slot(slot: &[u8], mac: EthernetAddress, buf: &mut [u8]) -> Option<Received> {
        let u32_at =
            |o: usize| u32::from_ne_bytes([slot[o], slot[o + 1], slot[o + 2], slot[o + 3]]);
        let u16_at = |o: usize| u16::from_ne_bytes([slot[o], slot[o + 1]]);
        // tpacket2_hdr: tp_status @0, tp_len @4, tp_snaplen @8, tp_mac @12.
        let wire_len = u32_at(4) as usize;
        let snaplen = u32_at(8) as usize;
        let mac_off = usize::from(u16_at(12));
        if slot[SLL_OFFSET + SLL_PKTTYPE] == libc::PACKET_OUTGOING {
            return None;
        }
        // The kernel keeps the frame inside the slot; refuse anything else rather than trust it.
        let frame = slot.get(mac_off..mac_off.checked_add(snaplen)?)?;
        if frame.len() < ETH_HEADER_LEN {
            // A runt frame: hand it up as an empty message so the server counts it.
            let mut src = [0u8; 6];
            if let Some(s) = frame.get(6..12) {
                src.copy_from_slice(s);
            }
            return Some(Received {
                len: 0,
                from: PeerAddr::Mac(EthernetAddress(src)),
            });
        }
        let mut dst = [0u8; 6];
        dst.copy_from_slice(&frame[0..6]);
        let dst = EthernetAddress(dst);
        if dst != mac && !dst.is_broadcast() {
            return None;
        }
        let mut src = [0u8; 6];
        src.copy_from_slice(&frame[6..12]);
        let payload = &frame[ETH_HEADER_LEN..];
        let n = payload.len().min(buf.len());
        buf[..n].copy_from_slice(&payload[..n]);
        Some(Received {
            len: wire_len.max(frame.len()) - ETH_HEADER_LEN,
            from: PeerAddr::Mac(EthernetAddress(src)),
        })
    }
}

fn setsockopt_int(fd: &OwnedFd, opt: libc::c_int, val: libc::c_int) -> io::Result<()> {
    // SAFETY: `val` is a valid c_int and its size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            opt,
            (&val as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Transport for RingTransport {
    fn send(&mut self, to: &PeerAddr, msg: &[u8]) -> io::Result<()> {
        send_frame(&self.fd, self.mac, self.mtu, to, msg)
    }

    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<Received>> {
        let (fd, mode) = (self.fd.as_raw_fd(), self.mode);
        recv_polling(fd, mode, timeout, || self.try_recv(buf))
    }

    fn max_message(&self) -> usize {
        self.mtu
    }

    fn local_addr(&self) -> PeerAddr {
        PeerAddr::Mac(self.mac)
    }

    fn set_mode(&mut self, mode: RecvMode) {
        self.mode = mode;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot_with(frame: &[u8], pkttype: u8, wire_len: u32) -> Vec<u8> {
        let mut s = vec![0u8; 2048];
        let mac_off = 80usize;
        s[4..8].copy_from_slice(&wire_len.to_ne_bytes());
        s[8..12].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
        s[12..14].copy_from_slice(&(mac_off as u16).to_ne_bytes());
        s[SLL_OFFSET + SLL_PKTTYPE] = pkttype;
        s[mac_off..mac_off + frame.len()].copy_from_slice(frame);
        s
    }

    const ME: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);

    #[test]
    fn slots_parse_and_filter() {
        let mut frame = vec![0u8; 60];
        frame[0..6].copy_from_slice(&ME.0);
        frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        frame[14..18].copy_from_slice(b"ping");
        let mut buf = [0u8; 64];
        let r = RingTransport::parse_slot(&slot_with(&frame, 0, 60), ME, &mut buf).unwrap();
        assert_eq!(r.len, 46);
        assert_eq!(&buf[..4], b"ping");
        assert_eq!(r.from, PeerAddr::Mac(EthernetAddress([2, 0, 0, 0, 0, 9])));
        // Our own outgoing frame, and a frame for another MAC, are skipped.
        assert!(RingTransport::parse_slot(
            &slot_with(&frame, libc::PACKET_OUTGOING, 60),
            ME,
            &mut buf
        )
        .is_none());
        frame[5] = 7;
        assert!(RingTransport::parse_slot(&slot_with(&frame, 0, 60), ME, &mut buf).is_none());
        // Truncated in the slot: the wire length is reported so the caller can refuse it.
        frame[5] = 1;
        let r = RingTransport::parse_slot(&slot_with(&frame, 0, 3000), ME, &mut buf).unwrap();
        assert_eq!(r.len, 3000 - ETH_HEADER_LEN);
        // Runts come up as empty messages; lying offsets are refused, never read past the slot.
        let r = RingTransport::parse_slot(&slot_with(&frame[..8], 0, 8), ME, &mut buf).unwrap();
        assert_eq!(r.len, 0);
        let mut bad = slot_with(&frame, 0, 60);
        bad[12..14].copy_from_slice(&2040u16.to_ne_bytes());
        assert!(RingTransport::parse_slot(&bad, ME, &mut buf).is_none());
    }

    #[test]
    fn unknown_interface_is_a_clear_error() {
        let e = RingTransport::open("pfx-nonexist0", RecvMode::Busy).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
