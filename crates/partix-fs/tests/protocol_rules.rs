//! Protocol rules of the server and the client (docs/fs-protocol.md), checked request by request
//! through the server's dispatch on a real export directory, and end to end through a server
//! running over UDP on the loopback interface.
#![allow(dead_code)]

use partix_fs::client::{Client, ClientConfig, FsError};
use partix_fs::server::{Server, ServerConfig, SESSION_FD};
use partix_fs::transport::{PeerAddr, RecvMode, Transport, UdpTransport};
use partix_wire::ethernet::EthernetAddress;
use partix_wire::fs::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A scratch export directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let root =
            std::env::temp_dir().join(format!("pfs-rules-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        Scratch(root)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One reply, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Answer {
    error: ErrorCode,
    result: u32,
    data: Vec<u8>,
}

/// Requests straight into [`Server::handle`] from one peer address.
struct Dispatch {
    server: Server,
    peer: PeerAddr,
    out: Vec<u8>,
    /// Length of the last reply message.
    last_len: usize,
}

impl Dispatch {
    fn new(cfg: ServerConfig) -> Dispatch {
        Dispatch {
            server: Server::new(cfg).unwrap(),
            peer: PeerAddr::Mac(EthernetAddress([2, 0, 0, 0, 0, 9])),
            out: vec![0u8; 1500],
            last_len: 0,
        }
    }

    /// Send one message; return the decoded reply, or `None` when nothing is sent back.
    fn raw(&mut self, tag: u32, body: BodyRepr<'_>) -> Option<Answer> {
        let m = MessageRepr { tag, body };
        let mut b = vec![0u8; m.buffer_len()];
        m.emit(&mut b).unwrap();
        let n = self.server.handle(&self.peer, &b, b.len(), &mut self.out)?;
        self.last_len = n;
        let p = FsPacket::new_checked(&self.out[..n]).expect("reply header");
        assert_eq!(p.opcode(), Opcode::Reply);
        assert_eq!(p.tag(), tag, "reply carries the request's tag");
        let rp = ReplyPacket::new_checked(p.body()).expect("whole reply");
        Some(Answer {
            error: rp.error(),
            result: rp.result(),
            data: rp.data().to_vec(),
        })
    }

    fn call(&mut self, tag: u32, body: BodyRepr<'_>) -> Answer {
        self.raw(tag, body).expect("a reply")
    }

    /// Start a session with Version tag `tag`; return the granted Version body.
    fn version(&mut self, tag: u32, msize: u32, outstanding: u32) -> VersionRepr {
        let a = self.call(
            tag,
            BodyRepr::Version(VersionRepr {
                version: PROTOCOL_VERSION,
                channel: 0,
                msize,
                outstanding,
                max_fds: 0,
            }),
        );
        assert_eq!(a.error, ErrorCode::OK, "Version refused");
        VersionRepr::parse(&VersionPacket::new_checked(&a.data[..]).unwrap()).unwrap()
    }
}

/// Tag `seq` on `channel`.
fn tag(channel: u16, seq: u32) -> u32 {
    (u32::from(channel) << TAG_CHANNEL_SHIFT) | (seq & TAG_SEQ_MASK)
}

fn open_body(path: &[u8], flags: u32, mode: u32) -> BodyRepr<'_> {
    BodyRepr::Open(OpenRepr { flags, mode, path })
}

fn write_body(fd: u32, flags: u32, offset: Option<u64>, data: &[u8]) -> BodyRepr<'_> {
    BodyRepr::Write(WriteRepr {
        fd,
        flags,
        offset,
        data,
    })
}

/// A server running [`Server::run`] over UDP on 127.0.0.1 in a thread, stopped on drop.
struct LoopServer {
    addr: PeerAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Server>>,
}

impl LoopServer {
    fn start(cfg: ServerConfig) -> LoopServer {
        let mut t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), RecvMode::Block).unwrap();
        let addr = t.local_addr();
        let mut server = Server::new(cfg).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let thread = std::thread::spawn(move || {
            server.run(&mut t, &s2).unwrap();
            server
        });
        LoopServer {
            addr,
            stop,
            thread: Some(thread),
        }
    }

    fn client(&self, cfg: ClientConfig) -> Client {
        let t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), cfg.mode).unwrap();
        Client::connect(Box::new(t), self.addr, cfg).expect("connect over loopback UDP")
    }

    /// Stop the server; return it (for its counters).
    fn stop(mut self) -> Server {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for LoopServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A channel freed by the end of a session is not handed to the next session at once, and a
/// session accepts only tags near its own sequence (from its Version's tag on): frames of an
/// ended session, retransmitted late, get NOTCONN and never run in another session.
#[test]
fn an_ended_sessions_frames_never_run_in_a_new_session() {
    let dir = Scratch::new("channels");
    std::fs::write(dir.path().join("old"), b"").unwrap();
    std::fs::write(dir.path().join("new"), b"").unwrap();
    let mut cfg = ServerConfig::new(dir.path());
    cfg.max_clients = 4;
    cfg.outstanding = 4;
    let mut d = Dispatch::new(cfg);

    // Session A opens "old" and ends.
    let a = d.version(0x100, 1500, 4).channel;
    let open = d.call(tag(a, 0x101), open_body(b"old", open_flags::WRONLY, 0));
    assert_eq!((open.error, open.result), (ErrorCode::OK, 0));
    let end = d.call(tag(a, 0x102), BodyRepr::Close(CloseRepr { fd: SESSION_FD }));
    assert_eq!(end.error, ErrorCode::OK);

    // Session B, from the same address, opens "new" (also descriptor 0).
    let b = d.version(0x50_0000, 1500, 4).channel;
    assert_ne!(a, b, "the channel just freed was handed out again at once");
    let open = d.call(tag(b, 0x50_0001), open_body(b"new", open_flags::WRONLY, 0));
    assert_eq!((open.error, open.result), (ErrorCode::OK, 0));

    // A's write, sent late: no session on A's channel.
    let late = d.call(tag(a, 0x103), write_body(0, 0, Some(0), b"stale"));
    assert_eq!(late.error, ErrorCode::NOTCONN);

    // Channels rotate: after enough sessions A's channel is in use again (by C). A's frames
    // are still refused: C's sequence starts at its own Version's tag.
    let mut c = None;
    for i in 0..300u32 {
        let v = d.version(0x70_0000 + i * 0x100, 1500, 4).channel;
        if v == a {
            c = Some(0x70_0000 + i * 0x100);
            break;
        }
        d.call(
            tag(v, 0x70_0001 + i * 0x100),
            BodyRepr::Close(CloseRepr { fd: SESSION_FD }),
        );
    }
    let c_version = c.expect("channel reused after a full turn");
    let open = d.call(
        tag(a, c_version + 1),
        open_body(b"new", open_flags::WRONLY, 0),
    );
    assert_eq!((open.error, open.result), (ErrorCode::OK, 0));
    for seq in [
        0x103,
        0x104,
        c_version.wrapping_sub(200),
        c_version + 100_000,
    ] {
        let late = d.call(tag(a, seq), write_body(0, 0, Some(0), b"stale"));
        assert_eq!(late.error, ErrorCode::NOTCONN, "seq {seq:#x}");
    }
    // C's own next request still runs (the refused tags moved nothing).
    let w = d.call(tag(a, c_version + 2), write_body(0, 0, Some(0), b"c"));
    assert_eq!((w.error, w.result), (ErrorCode::OK, 1));
    assert_eq!(std::fs::read(dir.path().join("old")).unwrap(), b"");
    assert_eq!(std::fs::read(dir.path().join("new")).unwrap(), b"c");
    assert!(d.server.counters().stale >= 4);
}

/// On an O_APPEND descriptor the server refuses writes and commits at explicit offsets (the
/// kernel would append pipelined pieces in arrival order); at the current position they append.
#[test]
fn explicit_offsets_on_append_descriptors_are_refused() {
    let dir = Scratch::new("append-server");
    std::fs::write(dir.path().join("log"), b"head.").unwrap();
    let mut d = Dispatch::new(ServerConfig::new(dir.path()));
    let ch = d.version(0x10, 1500, 4).channel;
    let t = |seq| tag(ch, seq);
    let open = d.call(
        t(0x11),
        open_body(b"log", open_flags::WRONLY | open_flags::APPEND, 0),
    );
    assert_eq!(open.error, ErrorCode::OK);
    let fd = open.result;
    let w = d.call(t(0x12), write_body(fd, 0, Some(0), b"BAD"));
    assert_eq!(w.error, ErrorCode::INVAL);
    let w = d.call(t(0x13), write_body(fd, 0, None, b"one."));
    assert_eq!((w.error, w.result), (ErrorCode::OK, 4));
    // Staged pieces carry offsets into the staging buffer: allowed. The Commit must append.
    let s = d.call(
        t(0x14),
        write_body(fd, write_flags::STAGE, Some(0), b"two."),
    );
    assert_eq!(s.error, ErrorCode::OK);
    let commit = |offset| {
        BodyRepr::Commit(CommitRepr {
            fd,
            flags: 0,
            offset,
            len: 4,
        })
    };
    assert_eq!(d.call(t(0x15), commit(Some(0))).error, ErrorCode::INVAL);
    let s = d.call(
        t(0x16),
        write_body(fd, write_flags::STAGE, Some(0), b"two."),
    );
    assert_eq!(s.error, ErrorCode::OK);
    let c = d.call(t(0x17), commit(None));
    assert_eq!((c.error, c.result), (ErrorCode::OK, 4));
    assert_eq!(
        std::fs::read(dir.path().join("log")).unwrap(),
        b"head.one.two."
    );
}

/// The client writes to a descriptor it opened with O_APPEND at the current position, one piece
/// after the other, whatever offset it is given: a write over several frames appends in order.
#[test]
fn client_appends_split_writes_in_order() {
    let dir = Scratch::new("append-client");
    std::fs::write(dir.path().join("log"), b"start\n").unwrap();
    let server = LoopServer::start(ServerConfig::new(dir.path()));
    let mut c = server.client(ClientConfig::default());
    let fd = c
        .open("log", open_flags::WRONLY | open_flags::APPEND, 0)
        .unwrap();
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    // FUSE passes the file offset it believes in; the client must not use it.
    assert_eq!(c.write(fd, Some(3), &data).unwrap(), data.len());
    assert_eq!(c.write_atomic(fd, Some(0), b"atomic").unwrap(), 6);
    c.close(fd).unwrap();
    // The same descriptor number opened without O_APPEND writes at offsets again.
    let fd2 = c.open("log", open_flags::WRONLY, 0).unwrap();
    assert_eq!(fd2, fd);
    assert_eq!(c.write(fd2, Some(0), b"START").unwrap(), 5);
    let mut want = b"START\n".to_vec();
    want.extend_from_slice(&data);
    want.extend_from_slice(b"atomic");
    assert_eq!(std::fs::read(dir.path().join("log")).unwrap(), want);
    c.disconnect().unwrap();
    let counters = server.stop().counters();
    assert_eq!(counters.errors, 0, "{counters}");
}

/// Staged atomic writes are bounded: empty and overlapping pieces are refused, a descriptor
/// keeps at most a cache window of separate ranges, and the buffers count against a
/// per-session and a server-wide budget, given back by Commit, ABORT, Close and session end.
#[test]
fn staging_is_bounded_per_session_and_in_total() {
    let dir = Scratch::new("staging");
    for f in ["a", "b", "c"] {
        std::fs::write(dir.path().join(f), b"").unwrap();
    }
    let mut cfg = ServerConfig::new(dir.path());
    cfg.outstanding = 1; // cache window: 4 + 16 = 20 ranges
    cfg.staging_limit = 4096;
    cfg.session_staging_limit = 8192;
    cfg.total_staging_limit = 12288;
    cfg.max_clients = 4;
    let mut d = Dispatch::new(cfg);
    let one = d.version(0x1000, 1500, 1).channel;
    let mut seq1 = 0x1000u32;
    let mut t1 = || {
        seq1 += 1;
        tag(one, seq1)
    };
    let mut fds = Vec::new();
    for f in [&b"a"[..], b"b", b"c"] {
        let o = d.call(t1(), open_body(f, open_flags::RDWR, 0));
        assert_eq!(o.error, ErrorCode::OK);
        fds.push(o.result);
    }
    let stage = |fd, off, data: &'static [u8]| write_body(fd, write_flags::STAGE, Some(off), data);

    // An empty piece far out allocates nothing: refused.
    assert_eq!(
        d.call(t1(), stage(fds[0], 4000, b"")).error,
        ErrorCode::INVAL
    );
    assert_eq!(
        d.call(t1(), stage(fds[0], 4096, b"x")).error,
        ErrorCode::FBIG
    );
    // A piece overlapping staged bytes (a duplicate under another tag) is refused.
    assert_eq!(
        d.call(t1(), stage(fds[0], 10, b"abcd")).error,
        ErrorCode::OK
    );
    assert_eq!(
        d.call(t1(), stage(fds[0], 12, b"zz")).error,
        ErrorCode::INVAL
    );
    assert_eq!(
        d.call(t1(), stage(fds[0], 10, b"abcd")).error,
        ErrorCode::INVAL
    );
    // Touching pieces merge; at most 20 separate ranges.
    assert_eq!(d.call(t1(), stage(fds[0], 14, b"ef")).error, ErrorCode::OK);
    for i in 0..19u64 {
        let a = d.call(t1(), stage(fds[0], 100 + 2 * i, b"g"));
        assert_eq!(a.error, ErrorCode::OK, "range {i}");
    }
    assert_eq!(
        d.call(t1(), stage(fds[0], 200, b"h")).error,
        ErrorCode::INVAL
    );
    let abort = |fd| {
        BodyRepr::Commit(CommitRepr {
            fd,
            flags: commit_flags::ABORT,
            offset: Some(0),
            len: 0,
        })
    };
    assert_eq!(d.call(t1(), abort(fds[0])).error, ErrorCode::OK);

    // Session budget (8192): two full descriptors, the third refused.
    assert_eq!(d.call(t1(), stage(fds[0], 4095, b"1")).error, ErrorCode::OK);
    assert_eq!(d.call(t1(), stage(fds[1], 4095, b"1")).error, ErrorCode::OK);
    assert_eq!(
        d.call(t1(), stage(fds[2], 0, b"1")).error,
        ErrorCode::NOBUFS
    );

    // Server budget (12288): another session gets 4096, then no more.
    let two = d.version(0x9000, 1500, 1).channel;
    let o = d.call(tag(two, 0x9001), open_body(b"c", open_flags::RDWR, 0));
    let fd_two = o.result;
    let o = d.call(tag(two, 0x9002), open_body(b"c", open_flags::RDWR, 0));
    let fd_two_b = o.result;
    assert_eq!(
        d.call(tag(two, 0x9003), stage(fd_two, 4095, b"2")).error,
        ErrorCode::OK
    );
    assert_eq!(
        d.call(tag(two, 0x9004), stage(fd_two_b, 0, b"2")).error,
        ErrorCode::NOBUFS
    );
    // ABORT gives session one's first descriptor back; Close its second.
    assert_eq!(d.call(t1(), abort(fds[0])).error, ErrorCode::OK);
    let close = d.call(t1(), BodyRepr::Close(CloseRepr { fd: fds[1] }));
    assert_eq!(close.error, ErrorCode::OK);
    assert_eq!(
        d.call(tag(two, 0x9005), stage(fd_two_b, 0, b"2")).error,
        ErrorCode::OK
    );
    // A whole atomic write still goes through within the budgets.
    assert_eq!(d.call(t1(), stage(fds[2], 3, b"def")).error, ErrorCode::OK);
    assert_eq!(d.call(t1(), stage(fds[2], 0, b"abc")).error, ErrorCode::OK);
    let commit = d.call(
        t1(),
        BodyRepr::Commit(CommitRepr {
            fd: fds[2],
            flags: 0,
            offset: Some(0),
            len: 6,
        }),
    );
    assert_eq!((commit.error, commit.result), (ErrorCode::OK, 6));
    assert_eq!(std::fs::read(dir.path().join("c")).unwrap(), b"abcdef");
    // The end of session one gives back the rest: session two can stage 4096 more.
    let end = d.call(t1(), BodyRepr::Close(CloseRepr { fd: SESSION_FD }));
    assert_eq!(end.error, ErrorCode::OK);
    let o = d.call(tag(two, 0x9006), open_body(b"c", open_flags::RDWR, 0));
    assert_eq!(
        d.call(tag(two, 0x9007), stage(o.result, 4095, b"2")).error,
        ErrorCode::NOBUFS,
        "session two's own budget (8192) is full"
    );
    assert_eq!(d.call(tag(two, 0x9008), abort(fd_two)).error, ErrorCode::OK);
    assert_eq!(
        d.call(tag(two, 0x9009), stage(o.result, 4095, b"2")).error,
        ErrorCode::OK
    );
}

fn mkfifo(path: &Path) {
    assert!(std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap()
        .success());
}

/// A session has at most its granted outstanding reads parked: one more cancels the oldest
/// (which its client must have given up on), as a Flush would.
#[test]
fn parked_reads_per_session_are_capped_at_the_granted_outstanding() {
    let dir = Scratch::new("parked");
    mkfifo(&dir.path().join("fifo"));
    let mut d = Dispatch::new(ServerConfig::new(dir.path()));
    let v = d.version(0x500, 1500, 2);
    assert_eq!(v.outstanding, 2);
    let t = |seq| tag(v.channel, seq);
    let rd = d.call(t(0x501), open_body(b"fifo", open_flags::RDONLY, 0));
    assert_eq!(rd.error, ErrorCode::OK);
    let wr = d.call(t(0x502), open_body(b"fifo", open_flags::WRONLY, 0));
    assert_eq!(wr.error, ErrorCode::OK);
    let read = BodyRepr::Read(ReadRepr {
        fd: rd.result,
        len: 16,
        offset: None,
    });
    for seq in 0x503..0x506 {
        assert_eq!(d.raw(t(seq), read), None, "read {seq:#x} parks");
    }
    // The first of three was canceled when the third parked: its retransmission is answered
    // from the cache; the two later ones still wait (a retransmission gets "in progress", not
    // cached: it is asked again with the same answer, and not executed again).
    assert_eq!(d.raw(t(0x503), read).unwrap().error, ErrorCode::CANCELED);
    for _ in 0..2 {
        let a = d.call(t(0x504), read);
        assert_eq!((a.error, a.result), (ErrorCode::INPROGRESS, 0));
        assert_eq!(d.call(t(0x505), read).error, ErrorCode::INPROGRESS);
    }
    let flush = |old| BodyRepr::Flush(FlushRepr { oldtag: old });
    assert_eq!(d.call(t(0x506), flush(t(0x503))).result, 0);
    assert_eq!(d.call(t(0x507), flush(t(0x504))).result, 1);
    assert_eq!(d.call(t(0x508), flush(t(0x505))).result, 1);
    let c = d.server.counters();
    assert_eq!(c.parked, 3);
    // Canceled: one by the cap, two by Flush.
    assert_eq!(c.flushed, 3);
    // Replies sent: Version, two opens, the canceled read's (sent when the cap canceled it)
    // and its copy from the cache, four INPROGRESS, three Flushes. The CANCELED replies the
    // Flushes leave in the cache are not sent: not counted.
    assert_eq!(c.replies, 12, "{c}");
}

/// Replies fit the msize granted to the session, not the server's own: Readdir returns fewer
/// entries per reply, Read fewer bytes, and an entry that fits no reply is an error, not the end
/// of the directory.
#[test]
fn replies_fit_the_sessions_msize() {
    let dir = Scratch::new("msize");
    std::fs::create_dir(dir.path().join("many")).unwrap();
    for i in 0..40 {
        std::fs::write(dir.path().join(format!("many/entry-{i:03}")), b"").unwrap();
    }
    std::fs::create_dir(dir.path().join("long")).unwrap();
    std::fs::write(dir.path().join("long").join("a".repeat(60)), b"").unwrap();
    std::fs::write(dir.path().join("long/b"), b"").unwrap();
    std::fs::write(dir.path().join("big"), vec![7u8; 4000]).unwrap();
    let mut d = Dispatch::new(ServerConfig::new(dir.path()));
    let v = d.version(0x700, 128, 4);
    assert_eq!(v.msize, 128);
    let mut seq = 0x700;
    let mut t = || {
        seq += 1;
        tag(v.channel, seq)
    };
    let mut names = Vec::new();
    loop {
        let a = d.call(
            t(),
            BodyRepr::Readdir(ReaddirRepr {
                cookie: names.len() as u32,
                path: b"many",
            }),
        );
        assert_eq!(a.error, ErrorCode::OK);
        assert!(d.last_len <= 128, "Readdir reply of {} bytes", d.last_len);
        if a.result == 0 {
            break;
        }
        for e in DirEntryRepr::iter(&a.data) {
            names.push(String::from_utf8(e.unwrap().name.to_vec()).unwrap());
        }
    }
    assert_eq!(names.len(), 40);
    let open = d.call(t(), open_body(b"big", open_flags::RDONLY, 0));
    let r = d.call(
        t(),
        BodyRepr::Read(ReadRepr {
            fd: open.result,
            len: 1000,
            offset: Some(0),
        }),
    );
    assert_eq!(r.error, ErrorCode::OK);
    assert!(d.last_len <= 128, "Read reply of {} bytes", d.last_len);
    assert_eq!(r.result as usize, 128 - HEADER_LEN - 12);

    // At the smallest msize a 60-byte name fits no reply: NAMETOOLONG, not "end".
    let mut small = Dispatch::new(ServerConfig::new(dir.path()));
    let v = small.version(0x900, MIN_MSIZE, 4);
    assert_eq!(v.msize, MIN_MSIZE);
    let a = small.call(
        tag(v.channel, 0x901),
        BodyRepr::Readdir(ReaddirRepr {
            cookie: 0,
            path: b"long",
        }),
    );
    assert_eq!(a.error, ErrorCode::NAMETOOLONG);
    // The entries after it are still listed.
    let a = small.call(
        tag(v.channel, 0x902),
        BodyRepr::Readdir(ReaddirRepr {
            cookie: 1,
            path: b"long",
        }),
    );
    assert_eq!((a.error, a.result), (ErrorCode::OK, 1));
    assert!(small.last_len <= MIN_MSIZE as usize);
}

/// End to end: a client that asked for a small msize lists a large directory.
#[test]
fn a_small_msize_client_lists_a_large_directory() {
    let dir = Scratch::new("msize-client");
    for i in 0..60 {
        std::fs::write(dir.path().join(format!("file-number-{i:03}")), b"").unwrap();
    }
    let server = LoopServer::start(ServerConfig::new(dir.path()));
    let mut c = server.client(ClientConfig {
        msize: 200,
        ..ClientConfig::default()
    });
    assert_eq!(c.msize(), 200);
    let entries = c.readdir("").unwrap();
    assert_eq!(entries.len(), 60);
    assert_eq!(entries[59].name, "file-number-059");
    c.disconnect().unwrap();
}

/// A server that lies in its replies, over UDP on the loopback: grants 2^32 - 1 outstanding
/// requests, reports a modification time of 2^64 - 1 s, and answers every Readdir with "5
/// entries" and none (after 50 of them, with "end"); a Readdir of "endless" gets one more
/// entry every time, for 20 000 entries (over 700 KB of listing), then the end. Writes at the current position succeed but every third
/// fails with EIO; a write at offset 1446 (the second piece of a split write over UDP) writes
/// 10 bytes. An Open of "errno-N" fails with error N.
struct LyingServer {
    addr: PeerAddr,
    stop: Arc<AtomicBool>,
    readdirs: Arc<AtomicU32>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LyingServer {
    fn start() -> LyingServer {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let addr = PeerAddr::Udp(sock.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let readdirs = Arc::new(AtomicU32::new(0));
        let (stop2, readdirs2) = (stop.clone(), readdirs.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            let mut out = [0u8; 2048];
            let mut current_writes = 0u32;
            while !stop2.load(Ordering::Relaxed) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                let Ok(p) = FsPacket::new_checked(&buf[..n]) else {
                    continue;
                };
                let Ok(m) = MessageRepr::parse(&p) else {
                    continue;
                };
                let mut data = [0u8; 64];
                let mut error = ErrorCode::OK;
                let (result, dlen) = match m.body {
                    BodyRepr::Version(v) => {
                        let g = VersionRepr {
                            version: PROTOCOL_VERSION,
                            channel: 3,
                            msize: v.msize,
                            outstanding: u32::MAX,
                            max_fds: 8,
                        };
                        g.emit(&mut VersionPacket::new_unchecked(&mut data[..16]));
                        (v.msize, 16)
                    }
                    BodyRepr::Stat(_) => {
                        let a = AttrRepr {
                            kind: FileKind::File,
                            perm: 0o644,
                            nlink: 1,
                            size: 1,
                            mtime_sec: u64::MAX,
                            mtime_nsec: 999_999_999,
                            rdev: 0,
                            ino: 9,
                        };
                        a.emit(&mut AttrPacket::new_unchecked(&mut data[..AttrRepr::LEN]));
                        (0, AttrRepr::LEN)
                    }
                    BodyRepr::Readdir(r) if r.path == b"endless" && r.cookie >= 20_000 => (0, 0),
                    BodyRepr::Readdir(r) if r.path == b"endless" => {
                        let name = format!("e{}", r.cookie);
                        let e = DirEntryRepr {
                            kind: FileKind::File,
                            name: name.as_bytes(),
                        };
                        (1, e.emit(&mut data).unwrap())
                    }
                    BodyRepr::Readdir(_) => {
                        let k = readdirs2.fetch_add(1, Ordering::Relaxed);
                        (if k < 50 { 5 } else { 0 }, 0)
                    }
                    BodyRepr::Open(o) if o.path.starts_with(b"errno-") => {
                        let n = std::str::from_utf8(&o.path[6..]).unwrap().parse().unwrap();
                        error = ErrorCode(n);
                        (0, 0)
                    }
                    BodyRepr::Write(w) if w.offset.is_none() => {
                        current_writes += 1;
                        if current_writes.is_multiple_of(3) {
                            error = ErrorCode::IO;
                            (0, 0)
                        } else {
                            (w.data.len() as u32, 0)
                        }
                    }
                    BodyRepr::Write(w) if w.offset == Some(1446) => (10, 0),
                    BodyRepr::Write(w) => (w.data.len() as u32, 0),
                    _ => (0, 0),
                };
                let reply = MessageRepr {
                    tag: m.tag,
                    body: BodyRepr::Reply(ReplyRepr {
                        result,
                        error,
                        data: &data[..dlen],
                    }),
                };
                let len = reply.emit(&mut out).unwrap();
                let _ = sock.send_to(&out[..len], from);
            }
        });
        LyingServer {
            addr,
            stop,
            readdirs,
            thread: Some(thread),
        }
    }
}

impl Drop for LyingServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The client does not trust reply fields: the granted outstanding is never above what it asked
/// for, and a Readdir reply counting entries it does not carry is a protocol error (not a loop).
#[test]
fn client_does_not_trust_reply_fields() {
    let liar = LyingServer::start();
    let t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), RecvMode::Block).unwrap();
    let cfg = ClientConfig {
        outstanding: 8,
        ..ClientConfig::default()
    };
    let mut c = Client::connect(Box::new(t), liar.addr, cfg).unwrap();
    assert_eq!(c.outstanding(), 8);
    // A pipelined read allocates its window from the granted value.
    let fd = 0;
    let mut buf = vec![0u8; 5000];
    c.read(fd, Some(0), &mut buf).unwrap();
    // The attributes come through as sent (FUSE turns the time into the epoch).
    assert_eq!(c.stat("f").unwrap().mtime_sec, u64::MAX);
    match c.readdir("") {
        Err(FsError::Protocol(_)) => {}
        other => panic!("Readdir with a lying count: {other:?}"),
    }
    assert_eq!(liar.readdirs.load(Ordering::Relaxed), 1);
    // Asking for more than the most a server grants asks for that most.
    let t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), RecvMode::Block).unwrap();
    let cfg = ClientConfig {
        outstanding: u32::MAX,
        ..ClientConfig::default()
    };
    let c = Client::connect(Box::new(t), liar.addr, cfg).unwrap();
    assert_eq!(c.outstanding(), partix_fs::client::MAX_OUTSTANDING);
}

/// A write that fails after some pieces were written reports those bytes, as write(2) does.
#[test]
fn client_write_reports_the_bytes_written_before_an_error() {
    let liar = LyingServer::start();
    let t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), RecvMode::Block).unwrap();
    let mut c = Client::connect(Box::new(t), liar.addr, ClientConfig::default()).unwrap();
    let chunk = max_write_data(c.msize());
    assert_eq!(chunk, 1446);
    let data = vec![1u8; 4 * chunk];
    // Pieces one and two are written, piece three fails: two pieces' worth.
    assert_eq!(c.write(0, None, &data).unwrap(), 2 * chunk);
    // Nothing written: the error itself.
    assert_eq!(c.write(0, None, &data[..10]).unwrap(), 10);
    assert_eq!(c.write(0, None, &data[..10]).unwrap(), 10);
    assert!(matches!(
        c.write(0, None, &data[..10]),
        Err(FsError::Remote(ErrorCode::IO))
    ));
}

/// A split write reports the contiguous prefix written (a short middle piece ends it), and
/// offsets whose sum with the length overflows are refused before anything is sent.
#[test]
fn split_write_reports_the_contiguous_prefix_and_refuses_overflowing_offsets() {
    let liar = LyingServer::start();
    let t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), RecvMode::Block).unwrap();
    let mut c = Client::connect(Box::new(t), liar.addr, ClientConfig::default()).unwrap();
    let chunk = max_write_data(c.msize());
    assert_eq!(chunk, 1446);
    let data = vec![1u8; 3 * chunk];
    // The piece at offset 1446 writes 10 bytes: 1446 + 10 are contiguous.
    assert_eq!(c.write(0, Some(0), &data).unwrap(), chunk + 10);
    let near_end = u64::MAX - 100;
    assert!(matches!(
        c.write(0, Some(near_end), &data),
        Err(FsError::Invalid(_))
    ));
    assert!(matches!(
        c.write(0, Some(near_end), &data[..200]),
        Err(FsError::Invalid(_))
    ));
    let mut buf = vec![0u8; 3000];
    assert!(matches!(
        c.read(0, Some(near_end), &mut buf),
        Err(FsError::Invalid(_))
    ));
}

/// A write to a full FIFO opened without O_NONBLOCK waits on the server (like a read with no
/// data) and completes once a reader makes room; with O_NONBLOCK it gets AGAIN.
#[test]
fn writes_to_a_full_fifo_park_until_there_is_room() {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = Scratch::new("parked-write");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    // The reader is local: the server's end opens for writing only.
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let mut d = Dispatch::new(ServerConfig::new(dir.path()));
    let v = d.version(0xa00, 1500, 4);
    let mut seq = 0xa00;
    let mut t = || {
        seq += 1;
        tag(v.channel, seq)
    };
    let wr = d.call(t(), open_body(b"fifo", open_flags::WRONLY, 0));
    assert_eq!(wr.error, ErrorCode::OK);
    let nb = d.call(
        t(),
        open_body(b"fifo", open_flags::WRONLY | open_flags::NONBLOCK, 0),
    );
    assert_eq!(nb.error, ErrorCode::OK);
    let piece = vec![b'p'; 1000];
    // Fill the pipe (64 KiB by default; at most 1 MiB here) until a write parks.
    let mut written = 0usize;
    let mut parked_tag = None;
    for _ in 0..2000 {
        let tg = t();
        match d.raw(tg, write_body(wr.result, 0, None, &piece)) {
            Some(a) => {
                assert_eq!(a.error, ErrorCode::OK, "a blocking write must not fail");
                written += a.result as usize;
            }
            None => {
                parked_tag = Some(tg);
                break;
            }
        }
    }
    let parked_tag = parked_tag.expect("a write to the full pipe parks");
    // Not ready: nothing completes; a retransmission is answered "in progress", not written.
    assert!(d.server.poll_parked().is_empty());
    let again = d.call(parked_tag, write_body(wr.result, 0, None, &piece));
    assert_eq!(again.error, ErrorCode::INPROGRESS);
    // The non-blocking descriptor gets AGAIN at once.
    let a = d.call(t(), write_body(nb.result, 0, None, &piece));
    assert_eq!(a.error, ErrorCode::AGAIN);
    // Make room: the parked write completes with its whole piece.
    let mut buf = vec![0u8; 1 << 20];
    let mut drained = 0usize;
    while drained < written {
        drained += reader.read(&mut buf).unwrap();
    }
    let replies = d.server.poll_parked();
    assert_eq!(replies.len(), 1);
    let p = FsPacket::new_checked(&replies[0].1[..]).unwrap();
    assert_eq!(p.tag(), parked_tag);
    let rp = ReplyPacket::new_checked(p.body()).unwrap();
    assert_eq!((rp.error(), rp.result()), (ErrorCode::OK, 1000));
    assert_eq!(reader.read(&mut buf).unwrap(), 1000);
    // Its retransmission is answered from the cache, not written again.
    let again = d.call(parked_tag, write_body(wr.result, 0, None, &piece));
    assert_eq!((again.error, again.result), (ErrorCode::OK, 1000));
    assert!(matches!(
        reader.read(&mut buf),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
    ));
}

/// Error replies to frames refused before their tag was checked against the session's window
/// (unknown opcode, oversized) are not cached: they never take the place of the reply to a
/// later request with the same tag.
#[test]
fn early_error_replies_leave_nothing_in_the_reply_cache() {
    let dir = Scratch::new("early-errors");
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    let mut d = Dispatch::new(ServerConfig::new(dir.path()));
    let v = d.version(0x40, 512, 4);
    let t = |seq| tag(v.channel, seq);
    // An unknown opcode and an oversized Stat, with tags the session has not used yet.
    let mut m = vec![0x77, 0x77];
    m.extend_from_slice(&t(0x42).to_be_bytes());
    let n = d.server.handle(&d.peer, &m, m.len(), &mut d.out).unwrap();
    let p = FsPacket::new_checked(&d.out[..n]).unwrap();
    assert_eq!(
        ReplyPacket::new_checked(p.body()).unwrap().error(),
        ErrorCode::NOSYS
    );
    let mut big = vec![0u8, 6];
    big.extend_from_slice(&t(0x43).to_be_bytes());
    big.extend_from_slice(b"f\0");
    let n = d.server.handle(&d.peer, &big, 5000, &mut d.out).unwrap();
    let p = FsPacket::new_checked(&d.out[..n]).unwrap();
    assert_eq!(
        ReplyPacket::new_checked(p.body()).unwrap().error(),
        ErrorCode::MSGSIZE
    );
    // The session's own requests with those tags run.
    let open = d.call(t(0x41), open_body(b"f", open_flags::RDONLY, 0));
    assert_eq!(open.error, ErrorCode::OK);
    let stat = d.call(t(0x42), BodyRepr::Stat(StatRepr { path: b"f" }));
    assert_eq!(stat.error, ErrorCode::OK);
    let stat = d.call(t(0x43), BodyRepr::Stat(StatRepr { path: b"f" }));
    assert_eq!(stat.error, ErrorCode::OK);
}

/// Decode a reply message produced outside the request path ([`Server::poll_parked`]).
fn decode(m: &[u8]) -> (u32, Answer) {
    let p = FsPacket::new_checked(m).expect("reply header");
    assert_eq!(p.opcode(), Opcode::Reply);
    let rp = ReplyPacket::new_checked(p.body()).expect("whole reply");
    (
        p.tag(),
        Answer {
            error: rp.error(),
            result: rp.result(),
            data: rp.data().to_vec(),
        },
    )
}

/// Read what `reader` holds now (non-blocking) into `into`; return the bytes read.
fn drain(reader: &mut std::fs::File, into: &mut Vec<u8>) -> usize {
    use std::io::Read;
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0;
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return total,
            Ok(n) => {
                into.extend_from_slice(&buf[..n]);
                total += n;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return total,
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// A Commit larger than the room in a pipe: on a descriptor opened without O_NONBLOCK it is
/// parked until all of its data is written (rule 6: a blocking write waits), then replies with
/// the whole length; with O_NONBLOCK it writes what fits and reports that count with AGAIN.
/// Never "nothing applied" (result 0) when bytes reached the pipe.
#[test]
fn a_commit_larger_than_the_room_in_a_pipe_reports_what_it_wrote() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = Scratch::new("commit-pipe");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let mut d = Dispatch::new(ServerConfig::new(dir.path()));
    let v = d.version(0xb00, 1500, 4);
    let mut seq = 0xb00;
    let mut t = || {
        seq += 1;
        tag(v.channel, seq)
    };
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    for nonblocking in [false, true] {
        let flags = open_flags::WRONLY | if nonblocking { open_flags::NONBLOCK } else { 0 };
        let wr = d.call(t(), open_body(b"fifo", flags, 0));
        assert_eq!(wr.error, ErrorCode::OK);
        for (i, piece) in data.chunks(1400).enumerate() {
            let off = (i * 1400) as u64;
            let s = d.call(
                t(),
                write_body(wr.result, write_flags::STAGE, Some(off), piece),
            );
            assert_eq!(s.error, ErrorCode::OK);
        }
        let commit_tag = t();
        let commit = BodyRepr::Commit(CommitRepr {
            fd: wr.result,
            flags: 0,
            offset: None,
            len: data.len() as u32,
        });
        let mut reply = d.raw(commit_tag, commit);
        if reply.is_none() {
            // While it waits, the parked Commit's buffer still counts against the budget.
            let other = d.call(
                t(),
                open_body(b"other", open_flags::WRONLY | open_flags::CREAT, 0o600),
            );
            let s = d.call(
                t(),
                write_body(other.result, write_flags::STAGE, Some((16 << 20) - 1), b"x"),
            );
            assert_eq!(s.error, ErrorCode::NOBUFS);
            let close = d.call(t(), BodyRepr::Close(CloseRepr { fd: other.result }));
            assert_eq!(close.error, ErrorCode::OK);
        }
        let mut got = Vec::new();
        let mut rounds = 0;
        while reply.is_none() {
            rounds += 1;
            assert!(rounds < 100_000, "the parked Commit never completed");
            drain(&mut reader, &mut got);
            for (_, m) in d.server.poll_parked() {
                let (tg, a) = decode(&m);
                assert_eq!(tg, commit_tag);
                reply = Some(a);
            }
        }
        drain(&mut reader, &mut got);
        let c = reply.unwrap();
        assert!(
            got.is_empty() || c.result != 0,
            "Commit reported nothing applied (error {}) but {} bytes reached the pipe",
            c.error.0,
            got.len()
        );
        assert_eq!(
            c.result as usize,
            got.len(),
            "the reply counts the bytes written"
        );
        assert_eq!(got[..], data[..got.len()]);
        if nonblocking {
            assert_eq!(c.error, ErrorCode::AGAIN);
            assert!(got.len() < data.len());
        } else {
            assert!(rounds > 0, "the blocking Commit waited for room");
            assert_eq!((c.error, c.result as usize), (ErrorCode::OK, data.len()));
        }
        // The budget is given back: the session can stage the whole limit again.
        let big = d.call(
            t(),
            write_body(wr.result, write_flags::STAGE, Some((16 << 20) - 1), b"x"),
        );
        assert_eq!(big.error, ErrorCode::OK);
        let close = d.call(t(), BodyRepr::Close(CloseRepr { fd: wr.result }));
        assert_eq!(close.error, ErrorCode::OK);
    }
}

/// End to end: an atomic write that a non-blocking pipe takes only in part returns the bytes
/// it wrote (as write(2)), not an error claiming nothing was written.
#[test]
fn write_atomic_reports_a_partial_commit() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = Scratch::new("commit-client");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let server = LoopServer::start(ServerConfig::new(dir.path()));
    let mut c = server.client(ClientConfig::default());
    let fd = c
        .open("fifo", open_flags::WRONLY | open_flags::NONBLOCK, 0)
        .unwrap();
    let data = vec![7u8; 200_000];
    let r = c.write_atomic(fd, None, &data);
    let mut got = Vec::new();
    drain(&mut reader, &mut got);
    assert!(!got.is_empty());
    match r {
        Ok(n) => assert_eq!(n, got.len()),
        Err(e) => panic!("{} bytes written, but write_atomic failed: {e}", got.len()),
    }
    // Nothing fits in a full pipe: the error itself.
    drain(&mut reader, &mut got);
    c.write(fd, None, &vec![1u8; 1 << 16]).unwrap();
    assert!(matches!(
        c.write_atomic(fd, None, &data),
        Err(FsError::Remote(ErrorCode::AGAIN))
    ));
    c.disconnect().unwrap();
}

/// A blocking read of a quiet FIFO waits as long as the server holds it parked (its
/// retransmissions are answered "in progress"), and returns the data once some arrives; it
/// does not time out after the retransmissions a lost reply would get.
#[test]
fn a_parked_read_waits_for_data_instead_of_timing_out() {
    use std::io::Write;
    let dir = Scratch::new("parked-wait");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let server = LoopServer::start(ServerConfig::new(dir.path()));
    // Retransmissions of an unanswered request end within 11 x 200 ms, whatever the RTT.
    let mut c = server.client(ClientConfig {
        rto_max: Duration::from_millis(200),
        ..ClientConfig::default()
    });
    let fd = c.open("fifo", open_flags::RDONLY, 0).unwrap();
    // A local writer holds the FIFO open: no end of file, no data.
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let r = c.read(fd, None, &mut buf).map(|n| buf[..n].to_vec());
        tx.send(r.map_err(|e| e.errno())).unwrap();
        c
    });
    // Longer than the client's retransmissions of an unanswered request take.
    match rx.recv_timeout(Duration::from_secs(5)) {
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        other => panic!("the read of a quiet FIFO ended: {other:?}"),
    }
    writer.write_all(b"late data").unwrap();
    let got = rx.recv_timeout(Duration::from_secs(8)).expect("read done");
    assert_eq!(got, Ok(b"late data".to_vec()));
    let c = reader.join().unwrap();
    c.disconnect().unwrap();
    let counters = server.stop().counters();
    assert!(counters.duplicates > 0, "{counters}");
}

/// A server that stops answering while a read is parked is still noticed: the client times out
/// (and sends a Flush) once its probes get no answer.
#[test]
fn a_parked_read_times_out_when_the_server_is_gone() {
    let dir = Scratch::new("parked-lost");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let mut t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), RecvMode::Block).unwrap();
    let addr = t.local_addr();
    let mut server = Server::new(ServerConfig::new(dir.path())).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    // The server's socket stays open (returned by the thread) but nobody reads it.
    let thread = std::thread::spawn(move || {
        server.run(&mut t, &s2).unwrap();
        (server, t)
    });
    let ct = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), RecvMode::Block).unwrap();
    let cfg = ClientConfig {
        rto_max: Duration::from_millis(100),
        max_retries: 5,
        ..ClientConfig::default()
    };
    let mut c = Client::connect(Box::new(ct), addr, cfg).unwrap();
    let fd = c.open("fifo", open_flags::RDONLY, 0).unwrap();
    let _writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let r = c.read(fd, None, &mut buf).map_err(|e| e.errno());
        tx.send(r).unwrap();
    });
    // Parked and probed for a while (well past 5 retransmission timeouts).
    assert!(rx.recv_timeout(Duration::from_secs(2)).is_err());
    stop.store(true, Ordering::Relaxed);
    let (_server, _socket) = thread.join().unwrap();
    let r = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the read gave up");
    assert_eq!(r, Err(libc::ETIMEDOUT));
    reader.join().unwrap();
}

/// A Flush of a request that has not arrived (delayed in the network) leaves a CANCELED reply
/// for its tag: the late copy is answered from the cache and never runs (its client already
/// reported it as failed). A Flush of a request already answered changes nothing.
#[test]
fn a_flush_before_its_request_cancels_the_late_copy() {
    let dir = Scratch::new("flush-early");
    std::fs::write(dir.path().join("f"), b"").unwrap();
    let mut d = Dispatch::new(ServerConfig::new(dir.path()));
    let v = d.version(0xc00, 1500, 4);
    let t = |seq| tag(v.channel, seq);
    let open = d.call(t(0xc01), open_body(b"f", open_flags::RDWR, 0));
    assert_eq!(open.error, ErrorCode::OK);
    let fd = open.result;
    let flush = |old| BodyRepr::Flush(FlushRepr { oldtag: old });
    let f = d.call(t(0xc03), flush(t(0xc02)));
    assert_eq!((f.error, f.result), (ErrorCode::OK, 0));
    let late = d.call(t(0xc02), write_body(fd, 0, Some(0), b"late"));
    assert_eq!(late.error, ErrorCode::CANCELED);
    assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"");
    // The Flush's own retransmission gets its reply again.
    let f = d.call(t(0xc03), flush(t(0xc02)));
    assert_eq!((f.error, f.result), (ErrorCode::OK, 0));
    // A request already answered keeps its reply.
    let w = d.call(t(0xc04), write_body(fd, 0, Some(0), b"ok"));
    assert_eq!((w.error, w.result), (ErrorCode::OK, 2));
    let f = d.call(t(0xc05), flush(t(0xc04)));
    assert_eq!((f.error, f.result), (ErrorCode::OK, 0));
    let again = d.call(t(0xc04), write_body(fd, 0, Some(0), b"ok"));
    assert_eq!((again.error, again.result), (ErrorCode::OK, 2));
    // A tag of another channel, or far behind the session's window, is not this session's:
    // nothing is recorded for it.
    let f = d.call(
        t(0xc06),
        flush(tag(v.channel.wrapping_add(1) & 0xff, 0xc07)),
    );
    assert_eq!((f.error, f.result), (ErrorCode::OK, 0));
    let f = d.call(t(0xc07), flush(t(0x10)));
    assert_eq!((f.error, f.result), (ErrorCode::OK, 0));
    let w = d.call(t(0xc08), write_body(fd, 0, Some(2), b"!"));
    assert_eq!((w.error, w.result), (ErrorCode::OK, 1));
    assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"ok!");
    // The CANCELED reply was cached, not sent: the replies counted are the 11 sent.
    let c = d.server.counters();
    assert_eq!(c.replies, 11, "{c}");
}

/// Skipping tags wraps in the 24-bit sequence number and keeps the session's channel bits.
#[test]
fn skip_tags_wraps_within_the_sequence_number() {
    let dir = Scratch::new("skip-tags");
    let server = LoopServer::start(ServerConfig::new(dir.path()));
    let mut c = server.client(ClientConfig::default());
    let start = c.peek_tag();
    let channel = start & !TAG_SEQ_MASK;
    // To the last sequence number, then three past it.
    c.skip_tags(TAG_SEQ_MASK - (start & TAG_SEQ_MASK));
    assert_eq!(c.peek_tag(), channel | TAG_SEQ_MASK);
    c.skip_tags(3);
    assert_eq!(
        c.peek_tag(),
        channel | 2,
        "the wrap carried into the channel"
    );
    // A whole turn of the sequence space comes back to the same tag.
    c.skip_tags(TAG_SEQ_MASK + 1);
    assert_eq!(c.peek_tag(), channel | 2);
}

/// A Reply sent to the server is dropped and counted as a drop, whatever its size: an
/// oversized one gets no MSGSIZE reply either (a Reply is never answered).
#[test]
fn replies_sent_to_the_server_are_never_answered() {
    let dir = Scratch::new("reply-drop");
    let mut d = Dispatch::new(ServerConfig::new(dir.path()));
    let v = d.version(0xd00, 1500, 4);
    let mut m = vec![0u8; 64];
    let n = MessageRepr {
        tag: tag(v.channel, 0xd01),
        body: BodyRepr::Reply(ReplyRepr {
            result: 0,
            error: ErrorCode::IO,
            data: b"",
        }),
    }
    .emit(&mut m)
    .unwrap();
    let before = d.server.counters();
    // Of its own size, then claiming a wire length over the msize (cut to the buffer).
    assert_eq!(d.server.handle(&d.peer, &m[..n], n, &mut d.out), None);
    assert_eq!(d.server.handle(&d.peer, &m[..n], 5000, &mut d.out), None);
    // From an address with no session, too.
    let stranger = PeerAddr::Mac(EthernetAddress([2, 0, 0, 0, 0, 0x77]));
    assert_eq!(d.server.handle(&stranger, &m[..n], 5000, &mut d.out), None);
    let after = d.server.counters();
    assert_eq!(after.drops - before.drops, 3, "{after}");
    assert_eq!(after.oversized, before.oversized, "{after}");
    assert_eq!(after.replies, before.replies, "{after}");
}

/// A request as a [`SilentServer`] saw it: opcode, tag, and the old tag of a Flush.
type Seen = (Opcode, u32, Option<u32>);

/// A server that answers the Version handshake and nothing else, over UDP on the loopback;
/// it records the opcode, tag and (for a Flush) old tag of every other request it receives.
struct SilentServer {
    addr: PeerAddr,
    stop: Arc<AtomicBool>,
    seen: Arc<std::sync::Mutex<Vec<Seen>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SilentServer {
    fn start() -> SilentServer {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let addr = PeerAddr::Udp(sock.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (stop2, seen2) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            let mut out = [0u8; 2048];
            while !stop2.load(Ordering::Relaxed) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                let Ok(p) = FsPacket::new_checked(&buf[..n]) else {
                    continue;
                };
                let Ok(m) = MessageRepr::parse(&p) else {
                    continue;
                };
                let BodyRepr::Version(v) = m.body else {
                    let old = match m.body {
                        BodyRepr::Flush(f) => Some(f.oldtag),
                        _ => None,
                    };
                    seen2.lock().unwrap().push((p.opcode(), m.tag, old));
                    continue;
                };
                let mut data = [0u8; 16];
                VersionRepr {
                    version: PROTOCOL_VERSION,
                    channel: 5,
                    msize: v.msize,
                    outstanding: v.outstanding,
                    max_fds: 8,
                }
                .emit(&mut VersionPacket::new_unchecked(&mut data[..]));
                let reply = MessageRepr {
                    tag: m.tag,
                    body: BodyRepr::Reply(ReplyRepr {
                        result: v.msize,
                        error: ErrorCode::OK,
                        data: &data,
                    }),
                };
                let len = reply.emit(&mut out).unwrap();
                let _ = sock.send_to(&out[..len], from);
            }
        });
        SilentServer {
            addr,
            stop,
            seen,
            thread: Some(thread),
        }
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A pipelined read or write that gives up (no reply after every retransmission) sends a Flush
/// for every request it still had in flight, as a single call does (rule 5): a late copy of
/// any of them is then canceled instead of run (or, for STAGE pieces, instead of holding
/// staging budget after the client aborted).
#[test]
fn a_pipeline_that_gives_up_flushes_its_requests() {
    let silent = SilentServer::start();
    let t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), RecvMode::Block).unwrap();
    let cfg = ClientConfig {
        outstanding: 4,
        rto_initial: Duration::from_millis(5),
        rto_max: Duration::from_millis(20),
        max_retries: 2,
        ..ClientConfig::default()
    };
    let mut c = Client::connect(Box::new(t), silent.addr, cfg).unwrap();
    let mut buf = vec![0u8; 10_000];
    assert!(matches!(
        c.read(0, Some(0), &mut buf),
        Err(FsError::Timeout)
    ));
    let data = vec![1u8; 10_000];
    assert!(matches!(
        c.write_atomic(0, None, &data),
        Err(FsError::Timeout)
    ));
    // The Flushes are sent without waiting: give them a moment to land.
    let wanted = |seen: &[Seen]| {
        let sent: std::collections::BTreeSet<u32> = seen
            .iter()
            .filter(|(op, _, _)| matches!(op, Opcode::Read | Opcode::Write))
            .map(|(_, t, _)| *t)
            .collect();
        let flushed: std::collections::BTreeSet<u32> =
            seen.iter().filter_map(|(_, _, old)| *old).collect();
        (sent, flushed)
    };
    let mut last = (Default::default(), Default::default());
    for _ in 0..200 {
        last = wanted(&silent.seen.lock().unwrap());
        if !last.0.is_empty() && last.0.is_subset(&last.1) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let (sent, flushed) = last;
    assert!(sent.len() >= 4, "pipelined requests: {sent:?}");
    let missing: Vec<_> = sent.difference(&flushed).collect();
    assert!(missing.is_empty(), "not flushed: {missing:x?}");
}

/// Frames refused as outside a session's tag window (stale or far ahead) are not the session's
/// requests: they do not keep an idle session from being replaced by a new client.
#[test]
fn stale_frames_do_not_keep_an_idle_session_alive() {
    let dir = Scratch::new("idle-stale");
    let mut cfg = ServerConfig::new(dir.path());
    cfg.max_clients = 1;
    cfg.idle_timeout = Duration::from_millis(500);
    let mut d = Dispatch::new(cfg);
    let v = d.version(0xe00, 1500, 4);
    let stat = BodyRepr::Stat(StatRepr { path: b"" });
    assert_eq!(d.call(tag(v.channel, 0xe01), stat).error, ErrorCode::OK);
    std::thread::sleep(Duration::from_millis(600));
    // Far behind and far ahead of the session's tags: refused, counted as stale.
    let before = d.server.counters().stale;
    for seq in [0x10, 0x80_0000] {
        assert_eq!(d.call(tag(v.channel, seq), stat).error, ErrorCode::NOTCONN);
    }
    assert_eq!(d.server.counters().stale, before + 2);
    // The session is idle all the same: a new client replaces it.
    d.peer = PeerAddr::Mac(EthernetAddress([2, 0, 0, 0, 0, 0x10]));
    let a = d.call(
        0x7000,
        BodyRepr::Version(VersionRepr {
            version: PROTOCOL_VERSION,
            channel: 0,
            msize: 1500,
            outstanding: 4,
            max_fds: 0,
        }),
    );
    assert_eq!(a.error, ErrorCode::OK, "the idle session was kept");
    assert_eq!(d.server.clients(), 1);
}

/// The errno a client error gives the C API and FUSE is a valid one whatever the server sent:
/// an error code that is no Linux errno (0, negative as an i32, huge) becomes EIO.
#[test]
fn client_errno_is_valid_whatever_the_server_sends() {
    let liar = LyingServer::start();
    let t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), RecvMode::Block).unwrap();
    let mut c = Client::connect(Box::new(t), liar.addr, ClientConfig::default()).unwrap();
    for (sent, want) in [
        (2u32, libc::ENOENT),
        (125, libc::ECANCELED),
        (133, 133),
        (134, libc::EIO),
        (4000, libc::EIO),
        (0x8000_0000, libc::EIO),
        (u32::MAX, libc::EIO),
    ] {
        let e = c
            .open(&format!("errno-{sent}"), open_flags::RDONLY, 0)
            .unwrap_err();
        assert!(
            matches!(e, FsError::Remote(ErrorCode(x)) if x == sent),
            "{e:?}"
        );
        assert_eq!(e.errno(), want, "server sent {sent}");
        let _ = e.to_string();
    }
    assert_eq!(FsError::Remote(ErrorCode::OK).errno(), libc::EIO);
}
/// A server that goes on and on with a directory listing does not make the client's memory grow
/// without bound: the listing stops at the client's limit with EOVERFLOW.
#[test]
fn an_endless_directory_listing_is_bounded() {
    let liar = LyingServer::start();
    let t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), RecvMode::Block).unwrap();
    let cfg = ClientConfig {
        max_dir_bytes: 8192,
        ..ClientConfig::default()
    };
    let mut c = Client::connect(Box::new(t), liar.addr, cfg).unwrap();
    match c.readdir("endless") {
        Err(e) => assert_eq!(e.errno(), libc::EOVERFLOW, "{e:?}"),
        Ok(v) => panic!("a listing of {} entries taken", v.len()),
    }
}
/// End to end: an entry whose name fits no reply at the session's msize is left out of the
/// listing; the entries after it are listed (from the cookie after it), not lost with it.
#[test]
fn readdir_goes_on_after_a_name_too_long_for_the_msize() {
    let dir = Scratch::new("readdir-long");
    std::fs::write(dir.path().join("a".repeat(60)), b"").unwrap();
    std::fs::write(dir.path().join("b"), b"").unwrap();
    std::fs::write(dir.path().join("c".repeat(60)), b"").unwrap();
    std::fs::write(dir.path().join("d"), b"").unwrap();
    let server = LoopServer::start(ServerConfig::new(dir.path()));
    let mut c = server.client(ClientConfig {
        msize: MIN_MSIZE,
        ..ClientConfig::default()
    });
    assert_eq!(c.msize(), MIN_MSIZE);
    let names: Vec<String> = c.readdir("").unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["b", "d"]);
    assert_eq!(c.counters().dir_entries_skipped, 2);
}

/// A Commit parked on a full pipe after writing part of its data can be flushed: its reply
/// becomes CANCELED with the bytes already written, and its buffer's staging budget is given
/// back.
#[test]
fn a_flushed_commit_reports_the_bytes_it_wrote_and_gives_its_budget_back() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = Scratch::new("commit-flush");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let mut d = Dispatch::new(ServerConfig::new(dir.path()));
    let v = d.version(0xf00, 1500, 4);
    let mut seq = 0xf00;
    let mut t = || {
        seq += 1;
        tag(v.channel, seq)
    };
    let wr = d.call(t(), open_body(b"fifo", open_flags::WRONLY, 0));
    let data = vec![3u8; 200_000];
    for (i, piece) in data.chunks(1400).enumerate() {
        let s = d.call(
            t(),
            write_body(
                wr.result,
                write_flags::STAGE,
                Some((i * 1400) as u64),
                piece,
            ),
        );
        assert_eq!(s.error, ErrorCode::OK);
    }
    let commit_tag = t();
    let commit = BodyRepr::Commit(CommitRepr {
        fd: wr.result,
        flags: 0,
        offset: None,
        len: data.len() as u32,
    });
    assert_eq!(d.raw(commit_tag, commit), None, "the Commit parks");
    let f = d.call(t(), BodyRepr::Flush(FlushRepr { oldtag: commit_tag }));
    assert_eq!((f.error, f.result), (ErrorCode::OK, 1));
    let mut got = Vec::new();
    drain(&mut reader, &mut got);
    assert!(!got.is_empty());
    let again = d.call(commit_tag, commit);
    assert_eq!(again.error, ErrorCode::CANCELED);
    assert_eq!(
        again.result as usize,
        got.len(),
        "the bytes written before the Flush"
    );
    // Nothing more is written; the budget is free again.
    assert!(d.server.poll_parked().is_empty());
    assert_eq!(drain(&mut reader, &mut got), 0);
    let big = d.call(
        t(),
        write_body(wr.result, write_flags::STAGE, Some((16 << 20) - 1), b"x"),
    );
    assert_eq!(big.error, ErrorCode::OK);
}

/// An empty Write writes nothing and succeeds, at an offset or at the current position.
#[test]
fn an_empty_write_succeeds_with_nothing_written() {
    let dir = Scratch::new("empty-write");
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    let mut d = Dispatch::new(ServerConfig::new(dir.path()));
    let v = d.version(0x1100, 1500, 4);
    let t = |seq| tag(v.channel, seq);
    let open = d.call(t(0x1101), open_body(b"f", open_flags::WRONLY, 0));
    assert_eq!(open.error, ErrorCode::OK);
    for (seq, off) in [(0x1102, Some(0)), (0x1103, None)] {
        let w = d.call(t(seq), write_body(open.result, 0, off, b""));
        assert_eq!((w.error, w.result), (ErrorCode::OK, 0), "offset {off:?}");
    }
    assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"x");
}

/// A copy of a Version delayed until its reply has left the session's reply cache is answered
/// from the session it opened (same channel and grants) and opens no second session (rule 1).
#[test]
fn a_late_duplicate_version_opens_no_second_session() {
    let dir = Scratch::new("late-version");
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    let mut cfg = ServerConfig::new(dir.path());
    cfg.outstanding = 4;
    let mut d = Dispatch::new(cfg);
    let first = d.version(0x300, 1500, 4);
    // Far more requests than the reply cache holds (4 x 4 + 16).
    for i in 1..=100u32 {
        let a = d.call(
            tag(first.channel, 0x300 + i),
            BodyRepr::Stat(StatRepr { path: b"f" }),
        );
        assert_eq!(a.error, ErrorCode::OK);
    }
    let again = d.version(0x300, 1500, 4);
    assert_eq!(
        again, first,
        "the late copy is answered from the first session"
    );
    assert_eq!(d.server.clients(), 1, "a second session was opened");
    // The session still works, and ending it leaves nothing behind.
    let a = d.call(
        tag(first.channel, 0x300 + 101),
        BodyRepr::Stat(StatRepr { path: b"f" }),
    );
    assert_eq!(a.error, ErrorCode::OK);
    let end = d.call(
        tag(first.channel, 0x300 + 102),
        BodyRepr::Close(CloseRepr { fd: SESSION_FD }),
    );
    assert_eq!(end.error, ErrorCode::OK);
    assert_eq!(d.server.clients(), 0);
}

/// Frames from a group (broadcast or multicast) source MAC are dropped and counted: a reply
/// would go to every host on the segment.
#[test]
fn frames_from_group_source_addresses_are_dropped() {
    let dir = Scratch::new("group-src");
    let mut d = Dispatch::new(ServerConfig::new(dir.path()));
    for src in [
        [0xff; 6],
        [0x01, 0x00, 0x5e, 0, 0, 1],
        [0x33, 0x33, 0, 0, 0, 1],
    ] {
        d.peer = PeerAddr::Mac(EthernetAddress(src));
        let before = d.server.counters();
        let v = d.raw(
            0x400,
            BodyRepr::Version(VersionRepr {
                version: PROTOCOL_VERSION,
                channel: 0,
                msize: 1500,
                outstanding: 4,
                max_fds: 0,
            }),
        );
        assert_eq!(v, None, "a Version from {src:x?} was answered");
        let s = d.raw(0x401, BodyRepr::Stat(StatRepr { path: b"" }));
        assert_eq!(s, None, "a Stat from {src:x?} was answered");
        let after = d.server.counters();
        assert_eq!(after.drops - before.drops, 2, "{after}");
        assert_eq!(d.server.clients(), 0);
    }
    // A unicast source still gets its session.
    d.peer = PeerAddr::Mac(EthernetAddress([2, 0, 0, 0, 0, 9]));
    d.version(0x500, 1500, 4);
    assert_eq!(d.server.clients(), 1);
}

/// A FIFO opened for reading before any writer: the read waits for a writer's data (a local
/// blocking `open` + `read` would), it does not report end of file at once. Once that writer
/// has come and gone, a read reports end of file.
#[test]
fn a_fifo_read_before_any_writer_waits_for_data() {
    use std::io::Write;
    let dir = Scratch::new("fifo-nowriter");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let server = LoopServer::start(ServerConfig::new(dir.path()));
    let mut c = server.client(ClientConfig::default());
    let fd = c.open("fifo", open_flags::RDONLY, 0).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let r = c.read(fd, None, &mut buf).map(|n| buf[..n].to_vec());
        tx.send(r.map_err(|e| e.errno())).unwrap();
        c
    });
    match rx.recv_timeout(Duration::from_millis(300)) {
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        other => panic!("a read of a FIFO with no writer yet ended: {other:?}"),
    }
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    writer.write_all(b"x").unwrap();
    let got = rx.recv_timeout(Duration::from_secs(8)).expect("read done");
    assert_eq!(got, Ok(b"x".to_vec()));
    let mut c = reader.join().unwrap();
    // The writer leaves: end of file, at once.
    drop(writer);
    let mut buf = [0u8; 64];
    assert_eq!(c.read(fd, None, &mut buf).unwrap(), 0);
    c.disconnect().unwrap();
}
