//! The server: exports one directory tree (files or device nodes) to clients.
//!
//! Each incoming message goes through [`Server::handle`]:
//! 1. Runt, reply-opcode, oversized and unknown-opcode frames are counted; the first two kinds
//!    are dropped (a Reply is never answered, whatever its size), the last two get an error
//!    reply.
//! 2. The sender must have a session (a Version handshake); otherwise the reply is `NOTCONN`.
//! 3. A tag already answered is answered again from the session's reply cache (the operation is
//!    not repeated); a tag older than the cache window, or too far ahead of the highest seen
//!    (counted from the Version's tag), is not the session's: counted as stale, `NOTCONN`; a
//!    retransmission of a request still parked gets the interim reply `INPROGRESS`.
//! 4. The opcode indexes a table of handlers, as in the paper's server (`HANDLERS`).
//!
//! Bounded work: one message costs at most one system call on the exported file plus a reply
//! cache insert (no allocation once the cache is warm), except Readdir (reads the whole
//! directory) and Commit (one write of up to the staging limit).

use crate::confine;
use crate::transport::{PeerAddr, Transport};
use partix_wire::fs::{
    commit_flags, max_read_data, open_flags, write_flags, AttrPacket, AttrRepr, ClosePacket,
    CloseRepr, CommitPacket, CommitRepr, DirEntryRepr, ErrorCode, FileKind, FlushPacket, FlushRepr,
    FsPacket, Opcode, OpenPacket, ReadPacket, ReadRepr, ReaddirPacket, ReplyPacket, StatPacket,
    VersionPacket, VersionRepr, WritePacket, WriteRepr, HEADER_LEN, MIN_MSIZE, PROTOCOL_VERSION,
    TAG_CHANNEL_SHIFT,
};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Descriptor value that names the session itself: Close of it ends the session.
pub const SESSION_FD: u32 = u32::MAX;

/// Server limits and parameters.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Exported directory.
    pub root: PathBuf,
    /// Largest message accepted and sent (capped by the transport's maximum).
    pub msize: u32,
    /// Outstanding requests granted to each client.
    pub outstanding: u32,
    /// Open descriptors per client.
    pub max_fds: u32,
    /// Clients with a session at the same time.
    pub max_clients: usize,
    /// A session idle this long may be evicted to make room for a new client.
    pub idle_timeout: Duration,
    /// Largest atomic write (bytes staged per descriptor).
    pub staging_limit: usize,
    /// Bytes staged by one session over all its descriptors.
    pub session_staging_limit: usize,
    /// Bytes staged by all sessions together.
    pub total_staging_limit: usize,
    /// Log every request to stderr.
    pub verbose: bool,
}

impl ServerConfig {
    /// Return the defaults for `root`.
    pub fn new(root: impl Into<PathBuf>) -> ServerConfig {
        ServerConfig {
            root: root.into(),
            msize: partix_wire::fs::DEFAULT_MSIZE,
            outstanding: 16,
            max_fds: 64,
            max_clients: 16,
            idle_timeout: Duration::from_secs(60),
            staging_limit: 16 << 20,
            session_staging_limit: 16 << 20,
            total_staging_limit: 64 << 20,
            verbose: false,
        }
    }
}

/// Server counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Messages received (any kind).
    pub frames: u64,
    /// Requests dispatched to a handler.
    pub requests: u64,
    /// Replies sent (including replies from the cache and interim `INPROGRESS` replies; not
    /// the `CANCELED` replies a Flush leaves in the cache, unless a late copy fetches them).
    pub replies: u64,
    /// Replies carrying an error code, counted once when produced and sent (not counting
    /// interim `INPROGRESS` replies nor copies from the cache).
    pub errors: u64,
    /// Retransmitted requests answered from the reply cache, or (still parked) with the
    /// interim `INPROGRESS` reply.
    pub duplicates: u64,
    /// Requests of a session whose tag is outside its window (more than the cache window
    /// behind the highest tag seen, or too far ahead): not executed, answered `NOTCONN` (not
    /// cached); they do not count as activity of the session.
    pub stale: u64,
    /// Frames too short for a header, replies sent to the server, and frames from a group
    /// (multicast or broadcast) source MAC: dropped.
    pub drops: u64,
    /// Frames longer than the negotiated message size.
    pub oversized: u64,
    /// Requests with an unknown opcode.
    pub unknown_opcode: u64,
    /// Requests whose body did not parse.
    pub malformed: u64,
    /// Reads parked until data arrives, writes parked until there is room.
    pub parked: u64,
    /// Parked requests canceled: by a Flush, by the cap on parked requests per session, or by
    /// the Close of their descriptor.
    pub flushed: u64,
    /// Version handshakes refused because the client table was full.
    pub refused_clients: u64,
}

impl std::fmt::Display for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "frames={} requests={} replies={} errors={} duplicates={} stale={} drops={} oversized={} unknown_opcode={} malformed={} parked={} flushed={} refused_clients={}",
            self.frames, self.requests, self.replies, self.errors, self.duplicates, self.stale,
            self.drops, self.oversized, self.unknown_opcode, self.malformed, self.parked,
            self.flushed, self.refused_clients
        )
    }
}

/// A session: the sender's address and the channel the server assigned in the Version reply
/// (carried in the top 8 bits of every tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionKey {
    /// Sender address.
    pub addr: PeerAddr,
    /// Channel.
    pub channel: u8,
}

impl SessionKey {
    /// Return the session a request with `tag` from `addr` belongs to.
    pub fn of(addr: PeerAddr, tag: u32) -> SessionKey {
        SessionKey {
            addr,
            channel: (tag >> TAG_CHANNEL_SHIFT) as u8,
        }
    }
}

impl std::fmt::Display for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}", self.addr, self.channel)
    }
}

/// Replies kept per client, oldest evicted first.
#[derive(Debug)]
struct ReplyCache {
    entries: VecDeque<(u32, Vec<u8>)>,
    cap: usize,
}

impl ReplyCache {
    fn new(cap: usize) -> ReplyCache {
        ReplyCache {
            entries: VecDeque::with_capacity(cap),
            cap,
        }
    }

    fn get(&self, tag: u32) -> Option<&[u8]> {
        self.entries
            .iter()
            .rev()
            .find(|(t, _)| *t == tag)
            .map(|(_, r)| r.as_slice())
    }

    fn insert(&mut self, tag: u32, reply: &[u8]) {
        let mut buf = if self.entries.len() >= self.cap {
            self.entries.pop_front().map(|(_, b)| b).unwrap_or_default()
        } else {
            Vec::new()
        };
        buf.clear();
        buf.extend_from_slice(reply);
        self.entries.push_back((tag, buf));
    }
}

/// Data staged for an atomic write on one descriptor.
#[derive(Debug, Default)]
struct Staging {
    /// Staged bytes (gaps not yet staged are zeros); its length is charged to the budgets.
    buf: Vec<u8>,
    /// Disjoint staged ranges, start -> end, merged when they touch.
    ranges: BTreeMap<u64, u64>,
}

impl Staging {
    /// Return whether `start..end` overlaps a staged range.
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.ranges
            .range(..end)
            .next_back()
            .is_some_and(|(_, &e)| e > start)
    }

    /// Return how many disjoint ranges there would be with `start..end` added.
    fn ranges_with(&self, start: u64, end: u64) -> usize {
        let joins_left = self
            .ranges
            .range(..=start)
            .next_back()
            .is_some_and(|(_, &e)| e == start);
        let joins_right = self.ranges.contains_key(&end);
        self.ranges.len() + 1 - usize::from(joins_left) - usize::from(joins_right)
    }

    /// Record `start..end` (not overlapping), merged with the ranges it touches.
    fn add(&mut self, mut start: u64, mut end: u64) {
        if let Some((&s, &e)) = self.ranges.range(..=start).next_back() {
            if e == start {
                self.ranges.remove(&s);
                start = s;
            }
        }
        if let Some(e) = self.ranges.remove(&end) {
            end = e;
        }
        self.ranges.insert(start, end);
    }
}

#[derive(Debug)]
struct OpenFile {
    fd: OwnedFd,
    /// The client asked never to wait (its reads fail with AGAIN instead of parking).
    nonblocking: bool,
    /// Regular file (reads never park).
    regular: bool,
    /// FIFO: a read of 0 bytes before any writer has come parks instead of meaning end of
    /// file.
    fifo: bool,
    /// Opened with O_APPEND: every write goes to the end, whatever its offset, so writes with
    /// an explicit offset (pipelined pieces, which may arrive in any order) are refused.
    append: bool,
    staging: Option<Staging>,
}

#[derive(Debug)]
struct Session {
    fds: Vec<Option<OpenFile>>,
    cache: ReplyCache,
    /// Highest sequence number seen (starts at the Version's).
    highest_tag: u32,
    last_seen: Instant,
    version_tag: u32,
    /// Bytes staged on this session's descriptors.
    staged: usize,
    /// Outstanding requests granted (also the most reads parked at once).
    outstanding: u32,
    /// Message size granted: no reply is larger.
    msize: u32,
}

/// A read waiting for data, or a write waiting for room, on a device or pipe.
#[derive(Debug)]
struct Parked {
    client: SessionKey,
    tag: u32,
    op: ParkedOp,
}

#[derive(Debug)]
enum ParkedOp {
    Read(ReadRepr),
    /// A Write (`whole == false`: replies with what the first write that takes anything
    /// takes) or a Commit (`whole == true`: waits until all of `data` is written, as `write(2)`
    /// on a blocking descriptor does).
    Write {
        fd: u32,
        /// Where `data` starts (`None` = the current position).
        offset: Option<u64>,
        data: Vec<u8>,
        /// Bytes of `data` already written.
        done: usize,
        whole: bool,
        /// Staging budget still held by the data (a parked Commit's buffer), given back when
        /// the request leaves the parked list.
        charged: usize,
    },
}

impl Parked {
    /// Return the descriptor (in the session's table) the request waits on.
    fn fd(&self) -> u32 {
        match &self.op {
            ParkedOp::Read(r) => r.fd,
            ParkedOp::Write { fd, .. } => *fd,
        }
    }

    /// Return the bytes already written and the staging budget held.
    fn progress(&self) -> (usize, usize) {
        match self.op {
            ParkedOp::Read(_) => (0, 0),
            ParkedOp::Write { done, charged, .. } => (done, charged),
        }
    }

    /// Return the poll(2) events that let the request go on.
    fn events(&self) -> i16 {
        match self.op {
            ParkedOp::Read(_) => libc::POLLIN,
            ParkedOp::Write { .. } => libc::POLLOUT,
        }
    }
}

/// A request handler: parse the body, do the work, write the reply body into `out`; return
/// the reply body length or `None` to park the request.
type Handler = fn(&mut Server, &SessionKey, u32, &[u8], &mut [u8]) -> Option<usize>;

/// Dispatch table indexed by opcode, as in the paper's server proxy.
const HANDLERS: [Handler; Opcode::COUNT] = [
    Server::op_close,   // 0 Close
    Server::op_open,    // 1 Open
    Server::op_read,    // 2 Read
    Server::op_reply,   // 3 Reply (never valid towards the server)
    Server::op_write,   // 4 Write
    Server::op_version, // 5 Version (handled before dispatch; kept for the table's shape)
    Server::op_stat,    // 6 Stat
    Server::op_readdir, // 7 Readdir
    Server::op_flush,   // 8 Flush
    Server::op_commit,  // 9 Commit
];

/// Write a reply body (result, error, no data) into `out`; return its length.
/// Write the OK reply body granting `granted` after the header already in `out`; return the
/// message length.
fn version_reply(granted: &VersionRepr, out: &mut [u8]) -> usize {
    let body_out = &mut out[HEADER_LEN..];
    let mut rp = ReplyPacket::new_unchecked(&mut body_out[..]);
    rp.set_fixed(granted.msize, ErrorCode::OK, 16);
    granted.emit(&mut VersionPacket::new_unchecked(
        &mut rp.data_area_mut()[..16],
    ));
    HEADER_LEN + ReplyPacket::<&[u8]>::FIXED_LEN + 16
}

fn reply(out: &mut [u8], result: u32, error: ErrorCode) -> usize {
    ReplyPacket::new_unchecked(&mut out[..]).set_fixed(result, error, 0);
    ReplyPacket::<&[u8]>::FIXED_LEN
}

/// Return the wire error code of a system call's errno: the errno itself, except `EINPROGRESS`
/// (`IO`: the wire's `INPROGRESS` is the interim reply to a parked request, never a final one).
fn wire_error(errno: i32) -> ErrorCode {
    match errno {
        libc::EINPROGRESS => ErrorCode::IO,
        e => ErrorCode(e as u32),
    }
}

/// Return a whole reply message (header and body, no data) for `tag`.
fn reply_message(tag: u32, result: u32, e: ErrorCode) -> Vec<u8> {
    let mut m = vec![0u8; HEADER_LEN + ReplyPacket::<&[u8]>::FIXED_LEN];
    let mut h = FsPacket::new_unchecked(&mut m[..]);
    h.set_opcode(Opcode::Reply);
    h.set_tag(tag);
    reply(&mut m[HEADER_LEN..], result, e);
    m
}

/// Return how far sequence number `a` is ahead of `b` in the 24-bit sequence space of tags
/// (negative: behind).
fn seq_distance(a: u32, b: u32) -> i32 {
    (a.wrapping_sub(b) << 8) as i32 >> 8
}

fn errno_reply(out: &mut [u8], errno: i32) -> usize {
    reply(out, 0, wire_error(errno))
}

/// A server over one transport.
pub struct Server {
    cfg: ServerConfig,
    root: OwnedFd,
    sessions: HashMap<SessionKey, Session>,
    /// Version tags already answered: (address, tag) -> channel assigned.
    versions: HashMap<(PeerAddr, u32), u8>,
    parked: Vec<Parked>,
    counters: Counters,
    /// Replies produced outside the request path (completed or canceled parked requests).
    pending_out: Vec<(SessionKey, Vec<u8>)>,
    /// poll(2) set of the parked requests, rebuilt on each retry (kept to reuse its allocation).
    pollfds: Vec<libc::pollfd>,
    /// Reply area of parked-request retries (one, reused).
    scratch: Vec<u8>,
    /// Bytes staged by all sessions.
    staged: usize,
    /// Where the search for a free channel starts: channels rotate, so a channel just freed
    /// is not handed out again until 255 other sessions were started.
    channel_cursor: u8,
}

impl Server {
    /// Open the export root and return a server with no clients.
    ///
    /// # Errors
    /// The root cannot be opened as a directory.
    pub fn new(mut cfg: ServerConfig) -> io::Result<Server> {
        let root = confine::open_root(&cfg.root).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot export {}: {e}", cfg.root.display()),
            )
        })?;
        cfg.msize = cfg.msize.max(MIN_MSIZE);
        // The cache window (4 x outstanding + 16) must stay far below the 24-bit tag space.
        cfg.outstanding = cfg.outstanding.clamp(1, 4096);
        Ok(Server {
            cfg,
            root,
            sessions: HashMap::new(),
            versions: HashMap::new(),
            parked: Vec::new(),
            counters: Counters::default(),
            pending_out: Vec::new(),
            channel_cursor: 0,
            staged: 0,
            pollfds: Vec::new(),
            scratch: Vec::new(),
        })
    }

    /// Return the counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Return the configuration in force.
    pub fn config(&self) -> &ServerConfig {
        &self.cfg
    }

    /// Return the number of clients with a session.
    pub fn clients(&self) -> usize {
        self.sessions.len()
    }

    fn cache_window(&self) -> u32 {
        4 * self.cfg.outstanding + 16
    }

    /// How far ahead of the highest tag seen a request may be: `16 x` the cache window. A
    /// client never runs ahead of what the server saw by more than its window, except after
    /// calls it gave up on (an outage); a tag of another (ended) session using the same channel
    /// starts at an independent random point of the 2^24 sequence space and is refused.
    fn ahead_limit(&self) -> u32 {
        16 * self.cache_window()
    }

    /// Serve on `transport` until `stop` is set.
    ///
    /// # Errors
    /// A transport error other than an interrupted wait.
    pub fn run(&mut self, transport: &mut dyn Transport, stop: &AtomicBool) -> io::Result<()> {
        self.cfg.msize = self.cfg.msize.min(transport.max_message() as u32);
        let mut rx = vec![0u8; self.cfg.msize as usize + 1];
        let mut tx = vec![0u8; self.cfg.msize as usize];
        while !stop.load(Ordering::Relaxed) {
            let wait = if self.parked.is_empty() {
                Duration::from_millis(50)
            } else {
                Duration::from_millis(1)
            };
            let received = match transport.recv(&mut rx, wait) {
                Ok(r) => r,
                // The interface is gone or the socket is broken: stop with the error.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ENODEV | libc::ENXIO | libc::EBADF)
                    ) =>
                {
                    return Err(e)
                }
                // A link flap (ENETDOWN) or a full buffer passes: log, wait a little, go on.
                Err(e) => {
                    eprintln!("partix-fs: receive error (continuing): {e}");
                    std::thread::sleep(Duration::from_millis(10));
                    None
                }
            };
            if let Some(r) = received {
                let n = r.len.min(rx.len());
                if let Some(len) = self.handle(&r.from, &rx[..n], r.len, &mut tx) {
                    if let Err(e) = transport.send(&r.from, &tx[..len]) {
                        if self.cfg.verbose {
                            eprintln!("partix-fs: send to {} failed: {e}", r.from);
                        }
                    }
                }
            }
            if !self.parked.is_empty() {
                self.retry_parked();
            }
            for (to, m) in self.pending_out.drain(..) {
                let _ = transport.send(&to.addr, &m);
            }
        }
        Ok(())
    }

    /// Handle one received message of wire length `wire_len` (`msg` may be cut to the receive
    /// buffer); write the reply message into `out` and return its length, or `None` when
    /// nothing is to be sent.
    ///
    /// Never panics, whatever `msg` holds. `out` must hold at least the negotiated msize.
    pub fn handle(
        &mut self,
        from: &PeerAddr,
        msg: &[u8],
        wire_len: usize,
        out: &mut [u8],
    ) -> Option<usize> {
        self.counters.frames += 1;
        if matches!(from, PeerAddr::Mac(m) if m.is_group()) {
            // A group source address is forged (no station sends from one); a reply would go
            // to every host on the segment.
            self.counters.drops += 1;
            return None;
        }
        let Ok(pkt) = FsPacket::new_checked(msg) else {
            self.counters.drops += 1;
            return None;
        };
        let tag = pkt.tag();
        let opcode = pkt.opcode();
        if opcode == Opcode::Reply {
            // Never answer a reply, whatever its size: two servers must not ping-pong errors
            // forever.
            self.counters.drops += 1;
            return None;
        }
        if out.len() < HEADER_LEN + ReplyPacket::<&[u8]>::FIXED_LEN {
            self.counters.drops += 1;
            return None;
        }
        let out_cap = out.len().min(self.cfg.msize as usize);
        let out = &mut out[..out_cap];
        let mut hdr = FsPacket::new_unchecked(&mut out[..]);
        hdr.set_opcode(Opcode::Reply);
        hdr.set_tag(tag);
        if wire_len > self.cfg.msize as usize || msg.len() < wire_len {
            self.counters.oversized += 1;
            let key = SessionKey::of(*from, tag);
            // Not cached: the frame was never checked against the session's tag window (a
            // stale frame must not leave a reply for a tag its session has yet to use).
            return Some(self.finish_uncached(&key, tag, out, ErrorCode::MSGSIZE));
        }
        let Some(index) = opcode.index() else {
            self.counters.unknown_opcode += 1;
            if self.cfg.verbose {
                eprintln!("partix-fs: {from}: unknown opcode {}", u16::from(opcode));
            }
            let key = SessionKey::of(*from, tag);
            return Some(self.finish_uncached(&key, tag, out, ErrorCode::NOSYS));
        };
        if opcode == Opcode::Version {
            return self.version(from, tag, pkt.body(), out);
        }
        let window = self.cache_window();
        let ahead_limit = self.ahead_limit();
        let key = SessionKey::of(*from, tag);
        let from = &key;
        let Some(s) = self.sessions.get_mut(from) else {
            // A retransmitted end of session whose first copy ended it (the client timed out
            // waiting for that reply): the session is gone, as asked. Answer OK, not NOTCONN,
            // so a slow reply never turns a clean disconnect into an error.
            let ends_session = opcode == Opcode::Close
                && ClosePacket::new_checked(pkt.body())
                    .and_then(|p| CloseRepr::parse(&p))
                    .is_ok_and(|r| r.fd == SESSION_FD);
            if ends_session {
                self.counters.replies += 1;
                return Some(HEADER_LEN + reply(&mut out[HEADER_LEN..], 0, ErrorCode::OK));
            }
            return Some(self.finish(from, tag, out, None, ErrorCode::NOTCONN));
        };
        if let Some(cached) = s.cache.get(tag) {
            self.counters.duplicates += 1;
            self.counters.replies += 1;
            let n = cached.len().min(out.len());
            out[..n].copy_from_slice(&cached[..n]);
            s.last_seen = Instant::now();
            return Some(n);
        }
        let msize = s.msize as usize;
        let ahead = seq_distance(tag, s.highest_tag);
        if ahead <= -(window as i32) || ahead > ahead_limit as i32 {
            // Not a request of this session: a stale frame, or one of an ended session whose
            // channel was given to another. Answer NOTCONN (not cached: the tag is not this
            // session's) so an old client learns its session is gone.
            self.counters.stale += 1;
            if self.cfg.verbose {
                eprintln!("partix-fs: {from}: tag {tag:#x} outside the session's window");
            }
            return Some(self.finish_uncached(from, tag, out, ErrorCode::NOTCONN));
        }
        // A request of this session (only those keep it from being replaced when idle).
        s.last_seen = Instant::now();
        if self
            .parked
            .iter()
            .any(|p| p.client == *from && p.tag == tag)
        {
            // A retransmission of a request still waiting for data or room: not executed
            // again, answered "in progress" (not cached: the final reply takes the tag) so the
            // client knows it was not lost and keeps waiting.
            self.counters.duplicates += 1;
            self.counters.replies += 1;
            return Some(HEADER_LEN + reply(&mut out[HEADER_LEN..], 0, ErrorCode::INPROGRESS));
        }
        // Replies, like requests, fit the msize granted to this session (a client drops larger
        // ones).
        let cap = msize
            .max(HEADER_LEN + ReplyPacket::<&[u8]>::FIXED_LEN)
            .min(out.len());
        let out = &mut out[..cap];
        if wire_len > msize {
            self.counters.oversized += 1;
            return Some(self.finish(from, tag, out, None, ErrorCode::MSGSIZE));
        }
        if ahead > 0 {
            if let Some(s) = self.sessions.get_mut(from) {
                s.highest_tag = tag;
            }
        }
        self.counters.requests += 1;
        let body_out = &mut out[HEADER_LEN..];
        let handler = HANDLERS[index];
        handler(self, from, tag, pkt.body(), body_out)
            .map(|n| self.cache_and_count(from, tag, out, HEADER_LEN + n))
    }

    /// Write an error reply with no data, count it, cache it when the client has a session.
    fn finish(
        &mut self,
        from: &SessionKey,
        tag: u32,
        out: &mut [u8],
        result: Option<u32>,
        e: ErrorCode,
    ) -> usize {
        let n = reply(&mut out[HEADER_LEN..], result.unwrap_or(0), e);
        self.cache_and_count(from, tag, out, HEADER_LEN + n)
    }

    fn cache_and_count(&mut self, from: &SessionKey, tag: u32, out: &[u8], n: usize) -> usize {
        self.counters.replies += 1;
        let body = &out[HEADER_LEN..n];
        let err = ReplyPacket::new_checked(body)
            .map(|p| p.error())
            .unwrap_or(ErrorCode::IO);
        if !err.is_ok() {
            self.counters.errors += 1;
            if self.cfg.verbose {
                eprintln!("partix-fs: {from}: tag {tag}: error {}", err.0);
            }
        }
        if let Some(s) = self.sessions.get_mut(from) {
            s.cache.insert(tag, &out[..n]);
        }
        n
    }

    fn version(&mut self, from: &PeerAddr, tag: u32, body: &[u8], out: &mut [u8]) -> Option<usize> {
        if let Some(&ch) = self.versions.get(&(*from, tag)) {
            let key = SessionKey {
                addr: *from,
                channel: ch,
            };
            if let Some(s) = self.sessions.get(&key).filter(|s| s.version_tag == tag) {
                self.counters.duplicates += 1;
                self.counters.replies += 1;
                if let Some(cached) = s.cache.get(tag) {
                    let n = cached.len().min(out.len());
                    out[..n].copy_from_slice(&cached[..n]);
                    return Some(n);
                }
                // A copy delayed past the reply cache's window: the session it opened is still
                // there, so answer from its granted values (not cached: the tag is far behind
                // the session's sequence) and open no second session (rule 1).
                let granted = VersionRepr {
                    version: PROTOCOL_VERSION,
                    channel: u16::from(ch),
                    msize: s.msize,
                    outstanding: s.outstanding,
                    max_fds: self.cfg.max_fds,
                };
                return Some(version_reply(&granted, out));
            }
        }
        self.counters.requests += 1;
        // Error replies to a Version are not cached (there is no session to cache them in).
        let nosession = SessionKey {
            addr: *from,
            channel: 0xff,
        };
        let req = match VersionPacket::new_checked(body).and_then(|p| VersionRepr::parse(&p)) {
            Ok(r) if r.version == PROTOCOL_VERSION => r,
            Ok(_) => return Some(self.finish_uncached(&nosession, tag, out, ErrorCode::PROTO)),
            Err(_) => {
                self.counters.malformed += 1;
                return Some(self.finish_uncached(&nosession, tag, out, ErrorCode::INVAL));
            }
        };
        if self.sessions.len() >= self.cfg.max_clients {
            let idle = self.cfg.idle_timeout;
            let victim = self
                .sessions
                .iter()
                .filter(|(_, s)| s.last_seen.elapsed() >= idle)
                .min_by_key(|(_, s)| s.last_seen)
                .map(|(a, _)| *a);
            match victim {
                Some(v) => {
                    self.end_session(&v);
                    if self.cfg.verbose {
                        eprintln!("partix-fs: evicted idle client {v}");
                    }
                }
                None => {
                    self.counters.refused_clients += 1;
                    return Some(self.finish_uncached(&nosession, tag, out, ErrorCode::BUSY));
                }
            }
        }
        // The next channel not in use by this address, from a cursor that moves on with every
        // session: a channel just freed is not handed out again at once, so frames of the
        // ended session still in flight (or retransmitted by a client that did not learn of
        // the end) reach no session and get NOTCONN.
        let cursor = self.channel_cursor;
        let Some(channel) = (0..=u8::MAX).map(|i| cursor.wrapping_add(i)).find(|c| {
            !self.sessions.contains_key(&SessionKey {
                addr: *from,
                channel: *c,
            })
        }) else {
            self.counters.refused_clients += 1;
            return Some(self.finish_uncached(&nosession, tag, out, ErrorCode::BUSY));
        };
        self.channel_cursor = channel.wrapping_add(1);
        let key = SessionKey {
            addr: *from,
            channel,
        };
        let window = self.cache_window() as usize;
        self.sessions.insert(
            key,
            Session {
                fds: Vec::new(),
                cache: ReplyCache::new(window),
                highest_tag: tag,
                last_seen: Instant::now(),
                version_tag: tag,
                staged: 0,
                outstanding: req.outstanding.min(self.cfg.outstanding),
                msize: req.msize.min(self.cfg.msize),
            },
        );
        self.versions.insert((*from, tag), channel);
        if self.cfg.verbose {
            eprintln!("partix-fs: {key}: session start (msize {})", req.msize);
        }
        let granted = VersionRepr {
            version: PROTOCOL_VERSION,
            channel: u16::from(channel),
            msize: req.msize.min(self.cfg.msize),
            outstanding: req.outstanding.min(self.cfg.outstanding),
            max_fds: self.cfg.max_fds,
        };
        let n = version_reply(&granted, out);
        Some(self.cache_and_count(&key, tag, out, n))
    }

    /// Write an error reply that is not cached: to a Version that opened no session, or to a
    /// frame that is not (or was not checked to be) a request of the session its tag names.
    fn finish_uncached(
        &mut self,
        from: &SessionKey,
        tag: u32,
        out: &mut [u8],
        e: ErrorCode,
    ) -> usize {
        let n = reply(&mut out[HEADER_LEN..], 0, e);
        self.counters.replies += 1;
        self.counters.errors += 1;
        if self.cfg.verbose {
            eprintln!(
                "partix-fs: {}: tag {tag:#x}: error {} (not cached)",
                from.addr, e.0
            );
        }
        HEADER_LEN + n
    }

    /// End a session: close its files, cancel its parked reads, forget its Version tag.
    fn end_session(&mut self, key: &SessionKey) {
        if let Some(s) = self.sessions.remove(key) {
            self.versions.remove(&(key.addr, s.version_tag));
            self.staged -= s.staged;
        }
        self.parked.retain(|p| p.client != *key);
    }

    fn session(&mut self, from: &SessionKey) -> &mut Session {
        // Handlers run only for clients with a session (checked in `handle`).
        self.sessions
            .get_mut(from)
            .expect("handler called without a session")
    }

    fn file(&mut self, from: &SessionKey, fd: u32) -> Option<&mut OpenFile> {
        self.session(from)
            .fds
            .get_mut(fd as usize)
            .and_then(|f| f.as_mut())
    }

    /// Give back `bytes` of staging budget taken by `from`.
    /// (Nothing when the session is gone: its end gave back all it held.)
    fn release_staging(&mut self, from: &SessionKey, bytes: usize) {
        if let Some(s) = self.sessions.get_mut(from) {
            s.staged -= bytes;
            self.staged -= bytes;
        }
    }

    fn malformed(&mut self, out: &mut [u8]) -> Option<usize> {
        self.counters.malformed += 1;
        Some(reply(out, 0, ErrorCode::INVAL))
    }

    fn op_reply(&mut self, _: &SessionKey, _: u32, _: &[u8], out: &mut [u8]) -> Option<usize> {
        Some(reply(out, 0, ErrorCode::PROTO))
    }

    fn op_version(&mut self, _: &SessionKey, _: u32, _: &[u8], out: &mut [u8]) -> Option<usize> {
        Some(reply(out, 0, ErrorCode::PROTO))
    }

    fn op_open(&mut self, from: &SessionKey, _: u32, body: &[u8], out: &mut [u8]) -> Option<usize> {
        let Ok(p) = OpenPacket::new_checked(body) else {
            return self.malformed(out);
        };
        let (flags, mode) = (p.flags(), p.mode());
        if flags & !open_flags::ALLOWED != 0 || flags & open_flags::ACCMODE == 3 {
            return Some(reply(out, 0, ErrorCode::INVAL));
        }
        let max_fds = self.cfg.max_fds as usize;
        let s = self.session(from);
        let slot = match s.fds.iter().position(|f| f.is_none()) {
            Some(i) => i,
            None if s.fds.len() < max_fds => {
                s.fds.push(None);
                s.fds.len() - 1
            }
            None => return Some(reply(out, 0, ErrorCode::MFILE)),
        };
        let os_flags = flags as i32 | libc::O_NONBLOCK | libc::O_NOCTTY;
        let fd = match confine::open_beneath(&self.root, p.path(), os_flags, mode) {
            Ok(fd) => fd,
            Err(e) => return Some(errno_reply(out, e)),
        };
        let fmt = confine::fstat(&fd).map_or(0, |st| st.st_mode & libc::S_IFMT);
        let regular = fmt == libc::S_IFREG;
        let fifo = fmt == libc::S_IFIFO;
        self.session(from).fds[slot] = Some(OpenFile {
            fd,
            nonblocking: flags & open_flags::NONBLOCK != 0,
            regular,
            fifo,
            append: flags & open_flags::APPEND != 0,
            staging: None,
        });
        Some(reply(out, slot as u32, ErrorCode::OK))
    }

    fn op_close(
        &mut self,
        from: &SessionKey,
        _: u32,
        body: &[u8],
        out: &mut [u8],
    ) -> Option<usize> {
        let Ok(r) = ClosePacket::new_checked(body).and_then(|p| CloseRepr::parse(&p)) else {
            return self.malformed(out);
        };
        if r.fd == SESSION_FD {
            // End of session: close everything, free the slot in the client table.
            self.end_session(from);
            if self.cfg.verbose {
                eprintln!("partix-fs: {from}: session end");
            }
            return Some(reply(out, 0, ErrorCode::OK));
        }
        let s = self.session(from);
        match s.fds.get_mut(r.fd as usize).and_then(|f| f.take()) {
            Some(file) => {
                let staged = file.staging.as_ref().map_or(0, |st| st.buf.len());
                self.release_staging(from, staged);
                let from = *from;
                let canceled: Vec<u32> = self
                    .parked
                    .iter()
                    .filter(|p| p.client == from && p.fd() == r.fd)
                    .map(|p| p.tag)
                    .collect();
                for t in canceled {
                    self.cancel_parked(&from, t, ErrorCode::BADF, true);
                }
                Some(reply(out, 0, ErrorCode::OK))
            }
            None => Some(reply(out, 0, ErrorCode::BADF)),
        }
    }

    fn op_read(
        &mut self,
        from: &SessionKey,
        tag: u32,
        body: &[u8],
        out: &mut [u8],
    ) -> Option<usize> {
        let Ok(r) = ReadPacket::new_checked(body).and_then(|p| ReadRepr::parse(&p)) else {
            return self.malformed(out);
        };
        let max = max_read_data(self.cfg.msize).min(out.len() - ReplyPacket::<&[u8]>::FIXED_LEN);
        let Some(f) = self.file(from, r.fd) else {
            return Some(reply(out, 0, ErrorCode::BADF));
        };
        let want = (r.len as usize).min(max);
        let mut rp = ReplyPacket::new_unchecked(&mut out[..]);
        match confine::read_at(&f.fd, &mut rp.data_area_mut()[..want], r.offset) {
            // A FIFO no writer has opened yet: the server's O_NONBLOCK open did not wait for
            // one, and the kernel reports 0 (not EAGAIN) while there is no writer. A blocking
            // read waits for data, as a local blocking open and read would. Once a writer has
            // come and gone the FIFO reports POLLHUP, and 0 means end of file.
            Ok(0) if want > 0 && f.fifo && !f.nonblocking && !confine::hung_up(&f.fd) => {
                self.park(from, tag, ParkedOp::Read(r));
                None
            }
            Ok(n) => {
                rp.set_fixed(n as u32, ErrorCode::OK, n as u32);
                Some(ReplyPacket::<&[u8]>::FIXED_LEN + n)
            }
            Err(e) if e == libc::EAGAIN && !f.nonblocking && !f.regular => {
                self.park(from, tag, ParkedOp::Read(r));
                None
            }
            Err(e) => Some(errno_reply(out, e)),
        }
    }

    /// Park a request that would block until its descriptor is ready.
    fn park(&mut self, from: &SessionKey, tag: u32, op: ParkedOp) {
        self.counters.parked += 1;
        // At most the granted outstanding requests wait per session: a client never has more
        // in flight, so the oldest beyond that was given up by its client (its Flush lost):
        // cancel it as a Flush would.
        let cap = self.session(from).outstanding.max(1) as usize;
        let mine = self.parked.iter().filter(|p| p.client == *from).count();
        if mine >= cap {
            if let Some(old) = self.parked.iter().find(|p| p.client == *from) {
                let old = old.tag;
                self.cancel_parked(from, old, ErrorCode::CANCELED, true);
            }
        }
        self.parked.push(Parked {
            client: *from,
            tag,
            op,
        });
    }

    fn op_write(
        &mut self,
        from: &SessionKey,
        tag: u32,
        body: &[u8],
        out: &mut [u8],
    ) -> Option<usize> {
        let Ok(p) = WritePacket::new_checked(body) else {
            return self.malformed(out);
        };
        let Ok(w) = WriteRepr::parse(&p) else {
            return self.malformed(out);
        };
        if w.flags & write_flags::STAGE != 0 {
            return Some(self.stage(from, &w, out));
        }
        let Some(f) = self.file(from, w.fd) else {
            return Some(reply(out, 0, ErrorCode::BADF));
        };
        if f.append && w.offset.is_some() {
            // The kernel would append it wherever it lands in arrival order.
            return Some(reply(out, 0, ErrorCode::INVAL));
        }
        match confine::write_all_at(&f.fd, w.data, w.offset) {
            // A write that fits only in part reports what it wrote, as write(2).
            (n, None) => Some(reply(out, n as u32, ErrorCode::OK)),
            (n, Some(_)) if n > 0 => Some(reply(out, n as u32, ErrorCode::OK)),
            (_, Some(e)) if e == libc::EAGAIN && !f.nonblocking && !f.regular => {
                // No room in the pipe or device: wait like a read waits for data.
                let op = ParkedOp::Write {
                    fd: w.fd,
                    offset: w.offset,
                    data: w.data.to_vec(),
                    done: 0,
                    whole: false,
                    charged: 0,
                };
                self.park(from, tag, op);
                None
            }
            (_, Some(e)) => Some(errno_reply(out, e)),
        }
    }

    /// Stage one piece of an atomic write. Pieces must be non-empty and must not overlap what is
    /// staged; the staging buffer grows to the piece's end, charged to the session's and the
    /// server's budgets (`NOBUFS` when either is spent); at most a cache window of separate
    /// ranges (`INVAL` beyond: a client never has more pieces missing than it has in flight).
    fn stage(&mut self, from: &SessionKey, w: &WriteRepr<'_>, out: &mut [u8]) -> usize {
        let limit = self.cfg.staging_limit;
        let max_ranges = self.cache_window() as usize;
        let session_room = self
            .cfg
            .session_staging_limit
            .saturating_sub(self.session(from).staged);
        let total_room = self.cfg.total_staging_limit.saturating_sub(self.staged);
        let Some(f) = self.file(from, w.fd) else {
            return reply(out, 0, ErrorCode::BADF);
        };
        let start = w.offset.unwrap_or(0);
        let end = start.saturating_add(w.data.len() as u64);
        if w.data.is_empty() {
            return reply(out, 0, ErrorCode::INVAL);
        }
        if end > limit as u64 {
            return reply(out, 0, ErrorCode::FBIG);
        }
        let (start, end) = (start as usize, end as usize);
        let st = f.staging.get_or_insert_with(Staging::default);
        if st.overlaps(start as u64, end as u64)
            || st.ranges_with(start as u64, end as u64) > max_ranges
        {
            return reply(out, 0, ErrorCode::INVAL);
        }
        let growth = end.saturating_sub(st.buf.len());
        if growth > session_room || growth > total_room {
            if st.ranges.is_empty() {
                f.staging = None;
            }
            return reply(out, 0, ErrorCode::NOBUFS);
        }
        if growth > 0 {
            st.buf.reserve_exact(growth);
            st.buf.resize(end, 0);
        }
        st.buf[start..end].copy_from_slice(w.data);
        st.add(start as u64, end as u64);
        self.session(from).staged += growth;
        self.staged += growth;
        reply(out, w.data.len() as u32, ErrorCode::OK)
    }

    fn op_commit(
        &mut self,
        from: &SessionKey,
        tag: u32,
        body: &[u8],
        out: &mut [u8],
    ) -> Option<usize> {
        let Ok(c) = CommitPacket::new_checked(body).and_then(|p| CommitRepr::parse(&p)) else {
            return self.malformed(out);
        };
        let Some(f) = self.file(from, c.fd) else {
            return Some(reply(out, 0, ErrorCode::BADF));
        };
        let Some(st) = f.staging.take() else {
            return Some(reply(out, 0, ErrorCode::INVAL));
        };
        let (abort, append) = (c.flags & commit_flags::ABORT != 0, f.append);
        let (nonblocking, regular) = (f.nonblocking, f.regular);
        let staged = st.buf.len();
        if abort {
            self.release_staging(from, staged);
            return Some(reply(out, 0, ErrorCode::OK));
        }
        // The staged pieces must cover exactly 0..len with no gap.
        let whole = st.ranges.len() == 1 && st.ranges.get(&0) == Some(&u64::from(c.len));
        if (append && c.offset.is_some()) || !whole || st.buf.len() != c.len as usize {
            self.release_staging(from, staged);
            return Some(reply(out, 0, ErrorCode::INVAL));
        }
        let Some(f) = self.file(from, c.fd) else {
            self.release_staging(from, staged);
            return Some(reply(out, 0, ErrorCode::BADF));
        };
        let (n, err) = confine::write_all_at(&f.fd, &st.buf, c.offset);
        match err {
            None => {
                self.release_staging(from, staged);
                // Short without an error (a device that took nothing more): the count with IO.
                let e = if n == staged {
                    ErrorCode::OK
                } else {
                    ErrorCode::IO
                };
                Some(reply(out, n as u32, e))
            }
            Some(e) if e == libc::EAGAIN && !nonblocking && !regular => {
                // A pipe or device with less room than the data, opened without O_NONBLOCK:
                // the rest waits for room like a parked Write (rule 6), and the reply comes
                // when all is written. The buffer keeps its staging budget until then.
                let op = ParkedOp::Write {
                    fd: c.fd,
                    offset: c.offset,
                    data: st.buf,
                    done: n,
                    whole: true,
                    charged: staged,
                };
                self.park(from, tag, op);
                None
            }
            // Cut short (no room on an O_NONBLOCK pipe, no space, file size limit): report
            // the bytes applied with the errno that stopped the write.
            Some(e) => {
                self.release_staging(from, staged);
                Some(reply(out, n as u32, wire_error(e)))
            }
        }
    }

    fn op_stat(&mut self, _: &SessionKey, _: u32, body: &[u8], out: &mut [u8]) -> Option<usize> {
        let Ok(p) = StatPacket::new_checked(body) else {
            return self.malformed(out);
        };
        let fd = match confine::open_beneath(&self.root, p.path(), libc::O_PATH, 0) {
            Ok(fd) => fd,
            Err(e) => return Some(errno_reply(out, e)),
        };
        let st = match confine::fstat(&fd) {
            Ok(st) => st,
            Err(e) => return Some(errno_reply(out, e)),
        };
        let attr = AttrRepr {
            kind: kind_of_mode(st.st_mode),
            perm: (st.st_mode & 0o7777) as u16,
            nlink: st.st_nlink as u32,
            size: st.st_size.max(0) as u64,
            mtime_sec: st.st_mtime.max(0) as u64,
            mtime_nsec: st.st_mtime_nsec.clamp(0, 999_999_999) as u32,
            rdev: st.st_rdev as u32,
            ino: st.st_ino,
        };
        let mut rp = ReplyPacket::new_unchecked(&mut out[..]);
        rp.set_fixed(0, ErrorCode::OK, AttrRepr::LEN as u32);
        attr.emit(&mut AttrPacket::new_unchecked(
            &mut rp.data_area_mut()[..AttrRepr::LEN],
        ));
        Some(ReplyPacket::<&[u8]>::FIXED_LEN + AttrRepr::LEN)
    }

    fn op_readdir(&mut self, _: &SessionKey, _: u32, body: &[u8], out: &mut [u8]) -> Option<usize> {
        let Ok(p) = ReaddirPacket::new_checked(body) else {
            return self.malformed(out);
        };
        let fd = match confine::open_beneath(
            &self.root,
            p.path(),
            libc::O_RDONLY | libc::O_DIRECTORY,
            0,
        ) {
            Ok(fd) => fd,
            Err(e) => return Some(errno_reply(out, e)),
        };
        use std::os::fd::AsRawFd;
        let dir = match std::fs::read_dir(format!("/proc/self/fd/{}", fd.as_raw_fd())) {
            Ok(d) => d,
            Err(e) => return Some(errno_reply(out, e.raw_os_error().unwrap_or(libc::EIO))),
        };
        let mut names: Vec<(Vec<u8>, FileKind)> = dir
            .filter_map(|e| e.ok())
            .map(|e| {
                use std::os::unix::ffi::OsStrExt;
                let kind = e
                    .file_type()
                    .map(|t| kind_of_type(&t))
                    .unwrap_or(FileKind::Unknown(0));
                (e.file_name().as_bytes().to_vec(), kind)
            })
            .collect();
        names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut rp = ReplyPacket::new_unchecked(&mut out[..]);
        let area = rp.data_area_mut();
        let mut used = 0usize;
        let mut count = 0u32;
        for (name, kind) in names.iter().skip(p.cookie() as usize) {
            match (DirEntryRepr { kind: *kind, name }).emit(&mut area[used..]) {
                Ok(n) => {
                    used += n;
                    count += 1;
                }
                // The first entry left does not fit in a reply at this session's msize: an
                // error, not an empty reply (which would mean the end of the directory).
                Err(_) if count == 0 => return Some(reply(out, 0, ErrorCode::NAMETOOLONG)),
                Err(_) => break,
            }
        }
        rp.set_fixed(count, ErrorCode::OK, used as u32);
        Some(ReplyPacket::<&[u8]>::FIXED_LEN + used)
    }

    fn op_flush(
        &mut self,
        from: &SessionKey,
        tag: u32,
        body: &[u8],
        out: &mut [u8],
    ) -> Option<usize> {
        let Ok(f) = FlushPacket::new_checked(body).and_then(|p| FlushRepr::parse(&p)) else {
            return self.malformed(out);
        };
        if self.cancel_parked(from, f.oldtag, ErrorCode::CANCELED, false) {
            return Some(reply(out, 1, ErrorCode::OK));
        }
        // Not parked: either answered already (its cached reply stays), or not arrived yet
        // (delayed or lost). Its client gave up on it, so a late copy must not run: leave a
        // CANCELED reply for its tag, when the tag is one of this session's, sent before this
        // Flush and not behind the cache window (where a late copy is refused as stale).
        let window = self.cache_window() as i32;
        let s = self.session(from);
        let same_session = SessionKey::of(from.addr, f.oldtag) == *from;
        let before_flush = seq_distance(tag, f.oldtag) > 0;
        let in_window = seq_distance(f.oldtag, s.highest_tag) > -window;
        if same_session && before_flush && in_window && s.cache.get(f.oldtag).is_none() {
            // Cached, not sent (and not counted as a reply sent): no one waits for it.
            let m = reply_message(f.oldtag, 0, ErrorCode::CANCELED);
            s.cache.insert(f.oldtag, &m);
        }
        Some(reply(out, 0, ErrorCode::OK))
    }

    /// Remove a parked read; cache an error reply for its tag (and send it when `send`).
    fn cancel_parked(&mut self, from: &SessionKey, tag: u32, e: ErrorCode, send: bool) -> bool {
        let Some(i) = self
            .parked
            .iter()
            .position(|p| p.client == *from && p.tag == tag)
        else {
            return false;
        };
        let p = self.parked.remove(i);
        self.counters.flushed += 1;
        let (done, charged) = p.progress();
        self.release_staging(from, charged);
        // A Commit parked after writing part of its data reports that part.
        let m = reply_message(tag, done as u32, e);
        if send {
            let n = m.len();
            self.cache_and_count(from, tag, &m, n);
            self.pending_out.push((*from, m));
        } else if let Some(s) = self.sessions.get_mut(from) {
            // Cached for a late retransmission, not sent: not counted as a reply.
            s.cache.insert(tag, &m);
        }
        true
    }

    /// Retry the parked requests whose descriptors poll(2) reports ready (readable for a read,
    /// writable for a write, or hung up, or in error); the others stay parked, in order, without
    /// a system call each.
    fn retry_parked(&mut self) {
        use std::os::fd::AsRawFd;
        let parked = std::mem::take(&mut self.parked);
        let mut pollfds = std::mem::take(&mut self.pollfds);
        pollfds.clear();
        for p in &parked {
            let fd = self
                .file(&p.client, p.fd())
                .map_or(-1, |f| f.fd.as_raw_fd());
            pollfds.push(libc::pollfd {
                fd,
                events: p.events(),
                revents: 0,
            });
        }
        let r = confine::poll_now(&mut pollfds);
        if r == 0 {
            // Nothing ready (or an error, then retried on the next round).
            self.parked = parked;
            self.pollfds = pollfds;
            return;
        }
        let mut m = std::mem::take(&mut self.scratch);
        m.resize(self.cfg.msize as usize, 0);
        for (mut p, pfd) in parked.into_iter().zip(pollfds.iter()) {
            if pfd.fd >= 0 && pfd.revents == 0 {
                self.parked.push(p);
                continue;
            }
            let session_msize = self.sessions.get(&p.client).map_or(0, |s| s.msize);
            let max = max_read_data(session_msize.min(self.cfg.msize));
            let (_, charged) = p.progress();
            let Some(f) = self.file(&p.client, p.fd()) else {
                self.release_staging(&p.client, charged);
                continue;
            };
            let mut h = FsPacket::new_unchecked(&mut m[..]);
            h.set_opcode(Opcode::Reply);
            h.set_tag(p.tag);
            let body = &mut m[HEADER_LEN..];
            let done = match &mut p.op {
                ParkedOp::Read(req) => {
                    let want = (req.len as usize).min(max);
                    let mut rp = ReplyPacket::new_unchecked(&mut body[..]);
                    match confine::read_at(&f.fd, &mut rp.data_area_mut()[..want], req.offset) {
                        // Still no writer on a FIFO (a writer that left between the poll and
                        // the read shows POLLHUP on the next round): wait on (as `op_read`).
                        Ok(0) if want > 0 && f.fifo && pfd.revents & libc::POLLHUP == 0 => {
                            Err(libc::EAGAIN)
                        }
                        Ok(n) => {
                            rp.set_fixed(n as u32, ErrorCode::OK, n as u32);
                            Ok(ReplyPacket::<&[u8]>::FIXED_LEN + n)
                        }
                        Err(e) => Err(e),
                    }
                }
                ParkedOp::Write {
                    offset,
                    data,
                    done,
                    whole,
                    ..
                } => {
                    let at = offset.map(|o| o + *done as u64);
                    let (n, err) = confine::write_all_at(&f.fd, &data[*done..], at);
                    *done += n;
                    match err {
                        // A Commit short without an error (a device that took nothing more).
                        None if *whole && *done < data.len() => {
                            Ok(reply(body, *done as u32, ErrorCode::IO))
                        }
                        None => Ok(reply(body, *done as u32, ErrorCode::OK)),
                        // A Commit goes on waiting until all of it is written.
                        Some(e) if e == libc::EAGAIN && *whole => Err(e),
                        // A Write replies with what it wrote, as write(2).
                        Some(_) if n > 0 && !*whole => Ok(reply(body, n as u32, ErrorCode::OK)),
                        Some(e) if *whole => Ok(reply(body, *done as u32, wire_error(e))),
                        Some(e) => Err(e),
                    }
                }
            };
            let n = match done {
                Ok(n) => HEADER_LEN + n,
                Err(e) if e == libc::EAGAIN => {
                    // Another parked request on the same descriptor took the data or the room
                    // (or a Commit took what room there was and waits for more).
                    self.parked.push(p);
                    continue;
                }
                Err(e) => HEADER_LEN + errno_reply(&mut m[HEADER_LEN..], e),
            };
            self.release_staging(&p.client, charged);
            self.cache_and_count(&p.client, p.tag, &m, n);
            self.pending_out.push((p.client, m[..n].to_vec()));
        }
        self.scratch = m;
        self.pollfds = pollfds;
    }

    /// Retry the parked requests now (as [`Server::run`] does between messages); return the
    /// replies produced since the last call (completed or canceled parked requests) with their
    /// destinations, for callers that drive [`Server::handle`] themselves.
    pub fn poll_parked(&mut self) -> Vec<(PeerAddr, Vec<u8>)> {
        if !self.parked.is_empty() {
            self.retry_parked();
        }
        self.pending_out
            .drain(..)
            .map(|(k, m)| (k.addr, m))
            .collect()
    }
}

fn kind_of_mode(mode: u32) -> FileKind {
    match mode & libc::S_IFMT {
        libc::S_IFREG => FileKind::File,
        libc::S_IFDIR => FileKind::Dir,
        libc::S_IFCHR => FileKind::CharDevice,
        libc::S_IFBLK => FileKind::BlockDevice,
        libc::S_IFLNK => FileKind::Symlink,
        libc::S_IFIFO => FileKind::Fifo,
        libc::S_IFSOCK => FileKind::Socket,
        _ => FileKind::Unknown(0),
    }
}

fn kind_of_type(t: &std::fs::FileType) -> FileKind {
    use std::os::unix::fs::FileTypeExt;
    if t.is_file() {
        FileKind::File
    } else if t.is_dir() {
        FileKind::Dir
    } else if t.is_symlink() {
        FileKind::Symlink
    } else if t.is_char_device() {
        FileKind::CharDevice
    } else if t.is_block_device() {
        FileKind::BlockDevice
    } else if t.is_fifo() {
        FileKind::Fifo
    } else if t.is_socket() {
        FileKind::Socket
    } else {
        FileKind::Unknown(0)
    }
}
