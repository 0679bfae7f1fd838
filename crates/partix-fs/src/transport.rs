//! Message transports: raw Ethernet frames on an interface (AF_PACKET, read through the socket
//! or through a receive ring mapped into the process) and UDP datagrams.
//!
//! A transport moves whole protocol messages (header + body, no Ethernet header). One message is
//! one frame or one datagram. Receive has three classes: [`RecvMode::Busy`] polls without
//! pause (lowest latency when the two ends run on different CPUs, burns a core),
//! [`RecvMode::Spin`] polls with a `sched_yield` between polls (for ends that may share a CPU),
//! [`RecvMode::Block`] sleeps in the kernel until a frame arrives (one wake-up, ~20–35 µs on the
//! reference VM).
//!
//! Implementations: [`PacketTransport`] (AF_PACKET, one `recvmsg` per poll),
//! [`RingTransport`] (AF_PACKET with a `PACKET_RX_RING`: a poll is one load from shared
//! memory, no system call), [`UdpTransport`].
#![allow(unsafe_code)]

use partix_wire::ethernet::{EthernetAddress, HEADER_LEN as ETH_HEADER_LEN, MIN_FRAME_LEN};
use partix_wire::fs::ETHERTYPE;
use std::fmt;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

mod ring;
pub use ring::RingTransport;

/// Address of a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeerAddr {
    /// A MAC address on the transport's interface.
    Mac(EthernetAddress),
    /// A UDP socket address.
    Udp(SocketAddr),
}

impl fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerAddr::Mac(m) => write!(f, "{m}"),
            PeerAddr::Udp(a) => write!(f, "udp:{a}"),
        }
    }
}

/// How a receive waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecvMode {
    /// Poll in a loop without pause for up to [`SPIN_BUDGET`] per receive, then sleep in the
    /// kernel. The lowest latency when the two ends run on different CPUs (pinned threads,
    /// different machines): the sender's system call delivers the frame to the receiver's
    /// socket itself (veth runs the receive softirq synchronously in `sendmsg`), so the frame
    /// is there as soon as the send returns. Two busy ends on *one* CPU only take turns when a
    /// budget runs out (p50 ~420 µs measured): use [`RecvMode::Spin`] there.
    Busy,
    /// Poll like [`RecvMode::Busy`], with a `sched_yield` between polls: a peer (or a
    /// softirq thread) sharing this CPU gets to run, at the cost of one system call per poll
    /// and of the whole time slice of any other runnable thread on a loaded CPU.
    Spin,
    /// Sleep in the kernel until a frame arrives or the timeout passes.
    #[default]
    Block,
}

impl RecvMode {
    /// Return the mode's name as used on the command line (`busy`, `spin`, `block`).
    pub fn name(self) -> &'static str {
        match self {
            RecvMode::Busy => "busy",
            RecvMode::Spin => "spin",
            RecvMode::Block => "block",
        }
    }

    /// Parse a mode name (`busy`, `spin`, `block`).
    pub fn from_name(name: &str) -> Option<RecvMode> {
        match name {
            "busy" => Some(RecvMode::Busy),
            "spin" => Some(RecvMode::Spin),
            "block" => Some(RecvMode::Block),
            _ => None,
        }
    }

    /// Wait between two polls that found nothing, `start` being when the receive began.
    /// Return `false` when the poll budget is spent and the caller should sleep in the kernel.
    fn pause(self, start: Instant, now: Instant) -> bool {
        match self {
            RecvMode::Busy if now - start < SPIN_BUDGET => {
                std::hint::spin_loop();
                true
            }
            RecvMode::Spin if now - start < SPIN_BUDGET => {
                std::thread::yield_now();
                true
            }
            RecvMode::Busy | RecvMode::Spin | RecvMode::Block => false,
        }
    }
}

/// How long a [`RecvMode::Busy`] or [`RecvMode::Spin`] receive polls before it sleeps in the
/// kernel.
pub const SPIN_BUDGET: Duration = Duration::from_micros(200);

/// One message received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Length of the message on the wire; larger than the buffer when it was truncated.
    pub len: usize,
    /// Sender.
    pub from: PeerAddr,
}

/// Moves whole messages to and from peers.
pub trait Transport: Send {
    /// Send one message to `to`.
    ///
    /// # Errors
    /// The socket's error; `InvalidInput` when `to` is of the wrong address family or `msg` is
    /// larger than [`Transport::max_message`].
    fn send(&mut self, to: &PeerAddr, msg: &[u8]) -> io::Result<()>;

    /// Wait up to `timeout` for one message and copy it into `buf`.
    ///
    /// Return `None` when the timeout passed. A message longer than `buf` is cut; its real length
    /// is reported in [`Received::len`] so the caller can refuse it.
    ///
    /// # Errors
    /// The socket's error.
    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<Received>>;

    /// Return the largest message this transport carries (the MTU for Ethernet).
    fn max_message(&self) -> usize;

    /// Return this end's address.
    fn local_addr(&self) -> PeerAddr;

    /// Choose how [`Transport::recv`] waits.
    fn set_mode(&mut self, mode: RecvMode);
}

impl<T: Transport + ?Sized> Transport for Box<T> {
    fn send(&mut self, to: &PeerAddr, msg: &[u8]) -> io::Result<()> {
        (**self).send(to, msg)
    }
    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<Received>> {
        (**self).recv(buf, timeout)
    }
    fn max_message(&self) -> usize {
        (**self).max_message()
    }
    fn local_addr(&self) -> PeerAddr {
        (**self).local_addr()
    }
    fn set_mode(&mut self, mode: RecvMode) {
        (**self).set_mode(mode)
    }
}

/// The receive loop of a frame transport: try, then pause per `mode` (spin, yield or `poll(2)` on
/// `fd`) until a frame arrives or `timeout` passes. `try_recv` never blocks.
pub(crate) fn recv_polling(
    fd: i32,
    mode: RecvMode,
    timeout: Duration,
    mut try_recv: impl FnMut() -> io::Result<Option<Received>>,
) -> io::Result<Option<Received>> {
    let start = Instant::now();
    let deadline = start + timeout;
    loop {
        if let Some(r) = try_recv()? {
            return Ok(Some(r));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        // For a receive ring, poll(2) reports POLLIN once the slot at the user's position
        // belongs to user space.
        if !mode.pause(start, now) && !wait_readable(fd, deadline - now)? {
            return try_recv();
        }
    }
}

/// Wait until `fd` is readable or `timeout` passes; return whether it is readable.
pub(crate) fn wait_readable(fd: i32, timeout: Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `pfd` and `ts` are valid for the duration of the call; nfds = 1 matches `pfd`.
    let r = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(r > 0)
}

/// Return the index of a network interface.
///
/// # Errors
/// `NotFound` when there is no such interface.
pub fn interface_index(iface: &str) -> io::Result<u32> {
    let name = std::ffi::CString::new(iface)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name holds a NUL"))?;
    // SAFETY: `name` is a valid NUL-terminated string.
    let idx = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if idx == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no network interface named {iface:?} (see `ip link`)"),
        ));
    }
    Ok(idx)
}

/// Issue an interface ioctl on `fd` with a raw `struct ifreq` (name at 0..16, union at 16..).
fn ifreq_ioctl(fd: i32, iface: &str, req: libc::c_ulong) -> io::Result<[u8; 40]> {
    let mut ifr = [0u8; 40];
    let name = iface.as_bytes();
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "interface name too long",
        ));
    }
    ifr[..name.len()].copy_from_slice(name);
    // SAFETY: `ifr` is 40 bytes, the size of `struct ifreq` on Linux; the kernel writes only
    // inside it for SIOCGIFHWADDR and SIOCGIFMTU.
    let r = unsafe { libc::ioctl(fd, req as _, ifr.as_mut_ptr()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ifr)
}

/// Return the MAC address and MTU of `iface`, asked through socket `fd` (so the answer comes
/// from the socket's network namespace, not from the mounted /sys).
pub(crate) fn interface_mac_mtu(fd: i32, iface: &str) -> io::Result<(EthernetAddress, usize)> {
    let hw = ifreq_ioctl(fd, iface, libc::SIOCGIFHWADDR)?;
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&hw[18..24]);
    let m = ifreq_ioctl(fd, iface, libc::SIOCGIFMTU)?;
    let mtu = i32::from_ne_bytes([m[16], m[17], m[18], m[19]]);
    Ok((EthernetAddress(mac), mtu.max(0) as usize))
}

/// Create an AF_PACKET raw socket for `ethertype` (0 = receive nothing until bound).
pub(crate) fn packet_socket(ethertype: u16) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the result is checked below.
    let raw = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            i32::from(ethertype.to_be()),
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a freshly created descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Bind a packet socket to interface `ifindex` and the protocol's EtherType: from here on it
/// receives the protocol's frames.
pub(crate) fn bind_packet_socket(fd: &OwnedFd, ifindex: u32) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETHERTYPE.to_be();
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: `sll` is a valid sockaddr_ll and the length matches its size.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Send `msg` to `to` as one Ethernet frame from `src` (padded to the Ethernet minimum).
pub(crate) fn send_frame(
    fd: &OwnedFd,
    src: EthernetAddress,
    mtu: usize,
    to: &PeerAddr,
    msg: &[u8],
) -> io::Result<()> {
    let PeerAddr::Mac(dst) = to else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a packet transport sends to MAC addresses",
        ));
    };
    if msg.len() > mtu {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "message larger than the MTU",
        ));
    }
    let mut hdr = [0u8; ETH_HEADER_LEN];
    hdr[0..6].copy_from_slice(&dst.0);
    hdr[6..12].copy_from_slice(&src.0);
    hdr[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
    let pad = [0u8; MIN_FRAME_LEN];
    let pad_len = MIN_FRAME_LEN.saturating_sub(ETH_HEADER_LEN + msg.len());
    let iov = [
        libc::iovec {
            iov_base: hdr.as_ptr() as *mut libc::c_void,
            iov_len: hdr.len(),
        },
        libc::iovec {
            iov_base: msg.as_ptr() as *mut libc::c_void,
            iov_len: msg.len(),
        },
        libc::iovec {
            iov_base: pad.as_ptr() as *mut libc::c_void,
            iov_len: pad_len,
        },
    ];
    // SAFETY: msghdr is plain old data; all-zero is valid.
    let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
    m.msg_iov = iov.as_ptr() as *mut libc::iovec;
    m.msg_iovlen = iov.len();
    loop {
        // SAFETY: `m` points at live, read-only buffers of the stated sizes; sendmsg does not
        // write through `msg_iov`.
        let r = unsafe { libc::sendmsg(fd.as_raw_fd(), &m, 0) };
        if r >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Raw Ethernet frames with the protocol's EtherType on one interface (AF_PACKET, SOCK_RAW).
#[derive(Debug)]
pub struct PacketTransport {
    fd: OwnedFd,
    mac: EthernetAddress,
    mtu: usize,
    mode: RecvMode,
}

impl PacketTransport {
    /// Open a packet socket bound to `iface` for the protocol's EtherType.
    ///
    /// # Errors
    /// `PermissionDenied` without CAP_NET_RAW; `NotFound` for an unknown interface.
    pub fn open(iface: &str, mode: RecvMode) -> io::Result<PacketTransport> {
        let ifindex = interface_index(iface)?;
        let fd = packet_socket(ETHERTYPE)?;
        let (mac, mtu) = interface_mac_mtu(fd.as_raw_fd(), iface)?;
        let rcvbuf: libc::c_int = 4 << 20;
        // SAFETY: `rcvbuf` is a valid c_int and its size is passed; failure only leaves the
        // default buffer size.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&rcvbuf as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as u32,
            );
        }
        bind_packet_socket(&fd, ifindex)?;
        Ok(PacketTransport { fd, mac, mtu, mode })
    }

    /// Return the interface's MAC address.
    pub fn mac(&self) -> EthernetAddress {
        self.mac
    }

    /// Send `frame` exactly as given (Ethernet header included, no padding): for tools and tests
    /// that probe a server with malformed frames.
    ///
    /// # Errors
    /// The socket's error.
    pub fn send_raw_frame(&mut self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: `frame` is valid for `frame.len()` readable bytes.
        let r = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Receive one frame without waiting; `Ok(None)` when none is queued.
    fn try_recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        loop {
            let mut hdr = [0u8; ETH_HEADER_LEN];
            let mut iov = [
                libc::iovec {
                    iov_base: hdr.as_mut_ptr().cast(),
                    iov_len: hdr.len(),
                },
                libc::iovec {
                    iov_base: buf.as_mut_ptr().cast(),
                    iov_len: buf.len(),
                },
            ];
            // SAFETY: sockaddr_ll and msghdr are plain old data; all-zero is valid.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            // SAFETY: as above.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_name = (&mut sll as *mut libc::sockaddr_ll).cast();
            msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            msg.msg_iov = iov.as_mut_ptr();
            msg.msg_iovlen = iov.len();
            // SAFETY: `msg` points at live buffers (`hdr`, `buf`, `sll`) of the stated sizes.
            let n = unsafe {
                libc::recvmsg(
                    self.fd.as_raw_fd(),
                    &mut msg,
                    libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            if sll.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            let n = n as usize;
            if n < ETH_HEADER_LEN {
                // A runt frame: hand it up as an empty message so the server counts it.
                return Ok(Some(Received {
                    len: 0,
                    from: PeerAddr::Mac(EthernetAddress(hdr[6..12].try_into().unwrap_or([0; 6]))),
                }));
            }
            let mut src = [0u8; 6];
            src.copy_from_slice(&hdr[6..12]);
            let mut dst = [0u8; 6];
            dst.copy_from_slice(&hdr[0..6]);
            let dst = EthernetAddress(dst);
            if dst != self.mac && !dst.is_broadcast() {
                continue;
            }
            return Ok(Some(Received {
                len: n - ETH_HEADER_LEN,
                from: PeerAddr::Mac(EthernetAddress(src)),
            }));
        }
    }
}

impl Transport for PacketTransport {
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

/// UDP datagrams, for routed networks.
#[derive(Debug)]
pub struct UdpTransport {
    sock: UdpSocket,
    local: SocketAddr,
    mode: RecvMode,
}

/// Largest message carried over UDP (an Ethernet MTU's worth, so both transports negotiate alike).
pub const UDP_MAX_MESSAGE: usize = 1472;

impl UdpTransport {
    /// Bind a UDP socket to `addr` (port 0 picks a free port).
    ///
    /// # Errors
    /// The bind error.
    pub fn bind(addr: SocketAddr, mode: RecvMode) -> io::Result<UdpTransport> {
        let sock = UdpSocket::bind(addr)?;
        sock.set_nonblocking(true)?;
        let local = sock.local_addr()?;
        Ok(UdpTransport { sock, local, mode })
    }
}

impl Transport for UdpTransport {
    fn send(&mut self, to: &PeerAddr, msg: &[u8]) -> io::Result<()> {
        let PeerAddr::Udp(a) = to else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a UDP transport sends to socket addresses",
            ));
        };
        loop {
            match self.sock.send_to(msg, a) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::yield_now();
                }
                // An ICMP port unreachable from an earlier datagram surfaces here; the request is
                // simply lost and the retransmission rules apply.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<Received>> {
        let start = Instant::now();
        let deadline = start + timeout;
        loop {
            match self.sock.recv_from(buf) {
                Ok((n, from)) => {
                    return Ok(Some(Received {
                        len: n,
                        from: PeerAddr::Udp(from),
                    }))
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionRefused
                    ) => {}
                Err(e) => return Err(e),
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            if !self.mode.pause(start, now) {
                wait_readable(self.sock.as_raw_fd(), deadline - now)?;
            }
        }
    }

    fn max_message(&self) -> usize {
        UDP_MAX_MESSAGE
    }

    fn local_addr(&self) -> PeerAddr {
        PeerAddr::Udp(self.local)
    }

    fn set_mode(&mut self, mode: RecvMode) {
        self.mode = mode;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_moves_messages_both_ways_in_every_mode() {
        for mode in [RecvMode::Busy, RecvMode::Spin, RecvMode::Block] {
            let mut a = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), mode).unwrap();
            let mut b = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), mode).unwrap();
            a.send(&b.local_addr(), b"ping").unwrap();
            let mut buf = [0u8; 16];
            let r = b.recv(&mut buf, Duration::from_secs(5)).unwrap().unwrap();
            assert_eq!(&buf[..r.len], b"ping");
            assert_eq!(r.from, a.local_addr());
            assert!(b
                .recv(&mut buf, Duration::from_millis(1))
                .unwrap()
                .is_none());
            assert!(a
                .send(&PeerAddr::Mac(EthernetAddress::BROADCAST), b"x")
                .is_err());
        }
    }

    #[test]
    fn mode_names_round_trip() {
        for m in [RecvMode::Busy, RecvMode::Spin, RecvMode::Block] {
            assert_eq!(RecvMode::from_name(m.name()), Some(m));
        }
        assert_eq!(RecvMode::from_name("fast"), None);
        assert_eq!(RecvMode::default(), RecvMode::Block);
    }

    #[test]
    fn unknown_interface_is_a_clear_error() {
        let e = PacketTransport::open("pfs-nonexist0", RecvMode::Block).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("pfs-nonexist0"));
    }
}
