//! Fuzz the udp/tcp channel endpoints with whatever a broken or hostile peer partition can put
//! on their sockets: a sampling destination, a queuing destination (data frames) and a queuing
//! source (acknowledgements), over UDP datagrams and a TCP stream. Nothing may panic, and what
//! comes out must respect the port's limits.
//!
//! Input: byte 0 picks the endpoint (mod 6); the rest is raw bytes for the peer's end. Over UDP
//! they are cut into datagrams by one length byte each; over TCP they are written as they are
//! (the stream, and any desynchronisation, carries over to the next input).
#![no_main]

use libfuzzer_sys::fuzz_target;
use partix_runtime::transport::socket::{
    socket_pair, FrameSocket, QueueRx, QueueTx, SampleRx, SocketKind,
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
}

fn pair(which: usize) -> Pair {
    let kind = if which % 2 == 0 {
        SocketKind::Udp
    } else {
        SocketKind::Tcp
    };
    let (src, dst) = socket_pair(kind, MAX, LIMIT).expect("loopback sockets");
    match which / 2 {
        0 => Pair {
            victim: Victim::Sample(SampleRx::new(FrameSocket::new(dst, kind, MAX))),
            peer: Peer::new(src, kind),
        },
        1 => Pair {
            victim: Victim::QueueRx(QueueRx::new(FrameSocket::new(dst, kind, MAX), LIMIT)),
            peer: Peer::new(src, kind),
        },
        _ => Pair {
            victim: Victim::QueueTx(QueueTx::new(FrameSocket::new(src, kind, MAX), LIMIT)),
            peer: Peer::new(dst, kind),
        },
    }
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
    p.peer.put(bytes);
    let mut buf = [0u8; MAX as usize];
    match &mut p.victim {
        Victim::Sample(rx) => {
            if let Ok(ok) = rx.read(&mut buf) {
                assert!(ok.len >= 1 && ok.len <= MAX as usize, "{ok:?}");
            }
        }
        Victim::QueueRx(rx) => {
            for _ in 0..4 * LIMIT {
                match rx.try_recv(&mut buf) {
                    Ok(n) => assert!(n >= 1 && n <= MAX as usize, "{n}"),
                    Err(_) => break,
                }
            }
            assert!(rx.len() <= LIMIT as usize);
        }
        Victim::QueueTx(tx) => {
            for _ in 0..2 {
                let _ = tx.try_send(&[1, 2, 3]);
            }
            assert!(tx.len() <= LIMIT as usize, "{}", tx.len());
        }
    }
    p.peer.drain();
});
