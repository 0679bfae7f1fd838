//! Fuzz the udp/tcp channel endpoints with whatever a broken or hostile peer partition can put
//! on their sockets: a sampling destination, a queuing destination (data frames) and a queuing
//! source (acknowledgements), over UDP datagrams and a TCP stream. Nothing may panic, and what
//! comes out must respect the port's limits.
//!
//! Input: byte 0 picks the endpoint (mod 6) and, over TCP, whether the frames in the input get
//! their checks made good (`(byte / 6) % 2 == 1`); the rest is raw bytes for the peer's end. Over
//! UDP they are cut into datagrams by one length byte each; over TCP they are written as they
//! are (the stream, and any desynchronisation, carries over to the next input). A TCP frame's
//! check covers its stream position, which a hand-made input cannot know, so with the fix-up each
//! `PXF1` header in the input (and its trailer, where one follows) gets the check of the position
//! it lands at: the fuzzer reaches the paths of well-formed frames, nested and torn ones too.
//!
//! Over TCP the destinations must also recover: after the garbage, a well-behaved sending end
//! that starts as every sending end does (a new end on the peer's socket, as a restarted
//! partition makes: its positions from the kernel, then `resync_peer`: zeros completing
//! whatever frame the garbage left open) and then sends one good frame must get that frame
//! through, whatever came before it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use partix_runtime::transport::socket::{
    socket_pair, stream_positions, FrameRepr, FrameSocket, QueueRx, QueueTx, SampleRx, SocketKind,
    ACK_LEN, HEADER_LEN, TRAILER_LEN,
};
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::os::fd::OwnedFd;
use std::sync::Mutex;

const MAX: u32 = 64;
const LIMIT: u32 = 8;

enum Peer {
    Udp(UdpSocket),
    Tcp(TcpStream),
}

impl Peer {
    fn new(fd: OwnedFd, kind: SocketKind) -> Peer {
        match kind {
            SocketKind::Udp => Peer::Udp(UdpSocket::from(fd)),
            SocketKind::Tcp => Peer::Tcp(TcpStream::from(fd)),
        }
    }

    /// Put the bytes on the wire (UDP: datagrams of one length byte each).
    fn put(&mut self, mut bytes: &[u8]) {
        match self {
            Peer::Udp(s) => {
                while let Some((&n, rest)) = bytes.split_first() {
                    let n = (n as usize).min(rest.len());
                    let _ = s.send(&rest[..n]);
                    bytes = &rest[n..];
                }
            }
            Peer::Tcp(s) => {
                let _ = s.write(bytes);
            }
        }
    }

    /// Throw away whatever the endpoint sent (so its socket never fills up).
    fn drain(&mut self) {
        let mut b = [0u8; 4096];
        match self {
            Peer::Udp(s) => while s.recv(&mut b).is_ok() {},
            Peer::Tcp(s) => while s.read(&mut b).is_ok_and(|n| n > 0) {},
        }
    }
}

enum Victim {
    Sample(SampleRx),
    QueueRx(QueueRx),
    QueueTx(QueueTx),
}

struct Pair {
    victim: Victim,
    peer: Peer,
    /// TCP destinations: the peer's socket for a well-behaved sending end, and the frames such
    /// ends sent so far.
    good: Option<(OwnedFd, u64)>,
}

/// Give each `PXF1` header in `b` (and its trailer, where one follows) the check of the TCP
/// stream position it lands at, `base` being the position of `b[0]`.
fn make_checks_good(b: &mut [u8], base: u64) {
    for i in 0..b.len().saturating_sub(HEADER_LEN - 1) {
        if b[i..i + 4] != *b"PXF1" {
            continue;
        }
        let word = |k: usize| u32::from_le_bytes(b[i + k..i + k + 4].try_into().unwrap());
        let h = FrameRepr {
            seq: word(4),
            len: word(8),
            stamp: u64::from_le_bytes(b[i + 16..i + 24].try_into().unwrap()),
        };
        let check = h.check_at(base + i as u64).to_le_bytes();
        b[i + 12..i + 16].copy_from_slice(&check);
        let t = i + HEADER_LEN + h.len as usize;
        if t + TRAILER_LEN <= b.len() && b[t + 4..t + 8] == *b"PXFE" {
            b[t..t + 4].copy_from_slice(&check);
        }
    }
}

/// The payload of the good frame number `n`: a value the garbage is most unlikely to hold.
fn good_payload(n: u64) -> [u8; 8] {
    (0x6f6f_6420_0000_0000u64 | n).to_le_bytes()
}

/// A destination's end, sized as a port's: messages in, acknowledgements (their time) out.
fn dest_end(fd: OwnedFd, kind: SocketKind) -> FrameSocket {
    FrameSocket::try_sized(fd, kind, ACK_LEN as u32, MAX).expect("destination end")
}

fn pair(which: usize) -> Pair {
    let kind = if which % 2 == 0 {
        SocketKind::Udp
    } else {
        SocketKind::Tcp
    };
    let (src, dst) = socket_pair(kind, MAX, LIMIT).expect("loopback sockets");
    // The peer's socket again, for the recovery check (TCP destinations).
    let good = |fd: &OwnedFd| (kind == SocketKind::Tcp).then(|| (fd.try_clone().expect("dup"), 0));
    match which / 2 {
        0 => Pair {
            victim: Victim::Sample(SampleRx::new(dest_end(dst, kind))),
            good: good(&src),
            peer: Peer::new(src, kind),
        },
        1 => Pair {
            victim: Victim::QueueRx(QueueRx::new(dest_end(dst, kind), LIMIT)),
            good: good(&src),
            peer: Peer::new(src, kind),
        },
        _ => Pair {
            // Sized as a port's source end: messages out, acknowledgements (their time) in.
            victim: Victim::QueueTx(QueueTx::new(
                FrameSocket::try_sized(src, kind, MAX, ACK_LEN as u32).expect("source end"),
                LIMIT,
            )),
            peer: Peer::new(dst, kind),
            good: None,
        },
    }
}

/// A TCP destination after garbage: a good end starts (as a restarted partition's: a new end on
/// the socket, then its zeros) and sends one frame, which the destination must deliver within a
/// bounded number of looks.
fn recovers(victim: &mut Victim, good: &mut (OwnedFd, u64), peer: &mut Peer) {
    let (fd, n) = good;
    *n += 1;
    let payload = good_payload(*n);
    let mut sock = FrameSocket::new(fd.try_clone().expect("dup"), SocketKind::Tcp, MAX);
    sock.resync_peer();
    let hdr = FrameRepr {
        seq: *n as u32,
        len: payload.len() as u32,
        stamp: *n,
    };
    let mut sent = false;
    let mut buf = [0u8; MAX as usize];
    for _ in 0..10_000 {
        if !sent {
            sent = sock.flush() && sock.send_frame(hdr, &payload);
        } else {
            sock.flush();
        }
        let got = match victim {
            Victim::Sample(rx) => rx.read(&mut buf).is_ok_and(|ok| buf[..ok.len] == payload),
            Victim::QueueRx(rx) => {
                let mut got = false;
                while let Ok(len) = rx.try_recv(&mut buf) {
                    if buf[..len] == payload {
                        got = true;
                        break;
                    }
                }
                got
            }
            Victim::QueueTx(_) => return,
        };
        if got {
            return;
        }
        peer.drain();
    }
    panic!("a good frame after garbage and the resync padding was not delivered");
}

static PAIRS: Mutex<Vec<Pair>> = Mutex::new(Vec::new());

fuzz_target!(|data: &[u8]| {
    let Some((&sel, bytes)) = data.split_first() else {
        return;
    };
    let mut pairs = PAIRS.lock().unwrap_or_else(|e| e.into_inner());
    if pairs.is_empty() {
        *pairs = (0..6).map(pair).collect();
    }
    let p = &mut pairs[sel as usize % 6];
    let fixed;
    let bytes = match (&p.peer, (sel / 6) % 2 == 1) {
        (Peer::Tcp(s), true) => {
            let mut b = bytes.to_vec();
            make_checks_good(&mut b, stream_positions(s).expect("stream positions").1);
            fixed = b;
            &fixed[..]
        }
        _ => bytes,
    };
    p.peer.put(bytes);
    let mut buf = [0u8; MAX as usize];
    match &mut p.victim {
        Victim::Sample(rx) => {
            if let Ok(ok) = rx.read(&mut buf) {
                assert!(ok.len >= 1 && ok.len <= MAX as usize, "{ok:?}");
            }
        }
        Victim::QueueRx(rx) => {
            // A frame's send time is the peer's input too: judged by any deadline, it decides
            // nothing but the answer.
            let by = u64::from_le_bytes([bytes.len() as u8, sel, 0, 0, 0, 0, 0, 1]);
            let _ = rx.sent_by(by);
            // Whatever the stamps, a message sent by the end of time is one that is there.
            if rx.sent_by(u64::MAX) {
                assert!(rx.len() > 0, "sent_by saw a message that is not there");
            }
            for _ in 0..4 * LIMIT {
                match rx.try_recv(&mut buf) {
                    Ok(n) => assert!(n >= 1 && n <= MAX as usize, "{n}"),
                    Err(_) => break,
                }
            }
            assert!(rx.len() <= LIMIT as usize);
        }
        Victim::QueueTx(tx) => {
            // Acks with any time (or none) are taken; asking when room came answers anything.
            tx.ask_room_note();
            for _ in 0..2 {
                let _ = tx.try_send(&[1, 2, 3]);
            }
            let _ = tx.room_by(u64::from(sel));
            assert!(tx.len() <= LIMIT as usize, "{}", tx.len());
        }
    }
    p.peer.drain();
    if let Some(good) = p.good.as_mut() {
        recovers(&mut p.victim, good, &mut p.peer);
    }
});
