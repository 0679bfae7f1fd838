//! The client library: session handshake, tags, retransmission with an adaptive timeout, a cap
//! on outstanding requests, reads and writes split over several frames, atomic writes.
//!
//! Rules (see `docs/fs-protocol.md`):
//! - Tags increase by one per request, starting from a random value, and are never reused.
//! - A request is retransmitted, unchanged and with the same tag, when its reply does not arrive
//!   within the retransmission timeout (RTO). The RTO follows Jacobson/Karels (RFC 6298):
//!   `srtt + 4·rttvar`, doubled after each timeout, sampled only from requests sent once (Karn).
//! - At most `outstanding` requests (granted by the server) are in flight, and no request is sent
//!   whose tag is more than `4·outstanding` ahead of the oldest request in flight, so every
//!   retransmission falls inside the server's reply-cache window.

use crate::transport::{PeerAddr, RecvMode, Transport};
use partix_wire::fs::{
    commit_flags, max_read_data, max_write_data, open_flags, write_flags, AttrPacket, AttrRepr,
    BodyRepr, CloseRepr, CommitRepr, DirEntryRepr, ErrorCode, FileKind, FlushRepr, FsPacket,
    MessageRepr, Opcode, OpenRepr, ReadRepr, ReaddirRepr, ReplyPacket, StatRepr, VersionPacket,
    VersionRepr, WriteRepr, DEFAULT_MSIZE, HEADER_LEN, PROTOCOL_VERSION, TAG_CHANNEL_SHIFT,
    TAG_SEQ_MASK,
};
use std::io;
use std::time::{Duration, Instant};

/// Largest Linux errno value (`EHWPOISON`): a server's error code above it is passed on as
/// `EIO`.
const MAX_ERRNO: i32 = libc::EHWPOISON;

/// Failure of a client operation.
#[derive(Debug)]
pub enum FsError {
    /// The transport failed.
    Io(io::Error),
    /// The server answered with an error code (a Linux errno value).
    Remote(ErrorCode),
    /// No reply after every retransmission.
    Timeout,
    /// The server's reply did not parse or did not match the request.
    Protocol(&'static str),
    /// An argument cannot be sent (path too long for one frame, NUL in a path, ...).
    Invalid(&'static str),
    /// The answer exceeds a limit of the client (a directory listing over
    /// [`ClientConfig::max_dir_bytes`]).
    TooLarge(&'static str),
}

impl FsError {
    /// Return the errno value closest to this error (for the C API and FUSE).
    pub fn errno(&self) -> i32 {
        match self {
            FsError::Io(e) => e.raw_os_error().unwrap_or(libc::EIO),
            // The server's value as is when it is a Linux errno; a value no errno has (0, past
            // the last, negative as an i32) must not reach FUSE or the C API: EIO.
            FsError::Remote(c) => match i32::try_from(c.0) {
                Ok(e) if (1..=MAX_ERRNO).contains(&e) => e,
                _ => libc::EIO,
            },
            FsError::Timeout => libc::ETIMEDOUT,
            FsError::Protocol(_) => libc::EPROTO,
            FsError::Invalid(_) => libc::EINVAL,
            FsError::TooLarge(_) => libc::EOVERFLOW,
        }
    }
}

impl std::fmt::Display for FsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FsError::Io(e) => write!(f, "transport error: {e}"),
            FsError::Remote(c) if *c == ErrorCode::XDEV => {
                write!(f, "server refused: path escapes the exported root (EXDEV)")
            }
            FsError::Remote(c) => write!(
                f,
                "server error: {} (errno {})",
                io::Error::from_raw_os_error(c.0 as i32),
                c.0
            ),
            FsError::Timeout => write!(
                f,
                "no reply from the server (check the interface, the server address and that `partix fs serve` runs)"
            ),
            FsError::Protocol(m) => write!(f, "protocol error: {m}"),
            FsError::Invalid(m) => write!(f, "invalid argument: {m}"),
            FsError::TooLarge(m) => write!(f, "too large: {m}"),
        }
    }
}

impl std::error::Error for FsError {}

impl From<io::Error> for FsError {
    fn from(e: io::Error) -> Self {
        FsError::Io(e)
    }
}

/// Most outstanding requests a client asks for.
pub const MAX_OUTSTANDING: u32 = 4096;

/// Client parameters.
#[derive(Debug, Clone, Copy)]
pub struct ClientConfig {
    /// Largest message wanted (capped by the transport and the server).
    pub msize: u32,
    /// Outstanding requests wanted (1 to [`MAX_OUTSTANDING`]; capped by the server).
    pub outstanding: u32,
    /// How receives wait.
    pub mode: RecvMode,
    /// RTO before the first RTT sample.
    pub rto_initial: Duration,
    /// Smallest RTO.
    pub rto_min: Duration,
    /// Largest RTO.
    pub rto_max: Duration,
    /// Retransmissions of one request before giving up with [`FsError::Timeout`].
    pub max_retries: u32,
    /// Most memory one directory listing may take, counted as the bytes of the names plus 32
    /// per entry; beyond it [`Client::readdir`] fails with [`FsError::TooLarge`] (`EOVERFLOW`),
    /// so a server that never ends a listing cannot exhaust the client's memory.
    pub max_dir_bytes: usize,
}

/// Default [`ClientConfig::max_dir_bytes`]: 64 MiB (over a million entries with short names).
pub const MAX_DIR_BYTES: usize = 64 << 20;

/// Bytes [`ClientConfig::max_dir_bytes`] counts per directory entry besides its name.
const DIR_ENTRY_COST: usize = 32;

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            msize: DEFAULT_MSIZE,
            outstanding: 16,
            mode: RecvMode::Block,
            rto_initial: Duration::from_millis(50),
            rto_min: Duration::from_millis(2),
            rto_max: Duration::from_secs(1),
            max_retries: 10,
            max_dir_bytes: MAX_DIR_BYTES,
        }
    }
}

/// Client counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCounters {
    /// Requests sent (first transmissions).
    pub requests: u64,
    /// Retransmissions.
    pub retransmits: u64,
    /// Replies that matched no request in flight (late duplicates), ignored.
    pub stray_replies: u64,
    /// Directory entries left out of a listing because their name fits no reply at the
    /// session's msize (the server's `NAMETOOLONG`).
    pub dir_entries_skipped: u64,
}

/// Jacobson/Karels retransmission timeout estimator.
#[derive(Debug, Clone, Copy)]
pub struct Rto {
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    min: Duration,
    max: Duration,
}

impl Rto {
    /// Return an estimator with no samples.
    pub fn new(initial: Duration, min: Duration, max: Duration) -> Rto {
        Rto {
            srtt: None,
            rttvar: Duration::ZERO,
            rto: initial.clamp(min, max),
            min,
            max,
        }
    }

    /// Take one round-trip sample.
    pub fn sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let diff = s.abs_diff(r);
                self.rttvar = (self.rttvar * 3 + diff) / 4;
                self.srtt = Some((s * 7 + r) / 8);
            }
        }
        let s = self.srtt.unwrap_or(r);
        self.rto = (s + self.rttvar * 4).clamp(self.min, self.max);
    }

    /// Double the timeout after a loss.
    pub fn back_off(&mut self) {
        self.rto = (self.rto * 2).min(self.max);
    }

    /// Return the current timeout.
    pub fn get(&self) -> Duration {
        self.rto
    }
}

/// Attributes of a remote file.
pub type Attr = AttrRepr;

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Name.
    pub name: String,
    /// File type.
    pub kind: FileKind,
}

/// A request in flight.
struct Slot {
    index: usize,
    tag: u32,
    msg: Vec<u8>,
    sent_at: Instant,
    deadline: Instant,
    /// Retransmissions in a row without an answer.
    retries: u32,
    /// Sent more than once (no RTT sample: Karn).
    resent: bool,
}

/// A session with one server.
pub struct Client {
    tr: Box<dyn Transport>,
    server: PeerAddr,
    cfg: ClientConfig,
    next_tag: u32,
    msize: u32,
    outstanding: u32,
    max_fds: u32,
    rto: Rto,
    tx: Vec<u8>,
    rx: Vec<u8>,
    counters: ClientCounters,
    ended: bool,
    /// Descriptors opened with O_APPEND: written at the current position, one piece at a time.
    append_fds: std::collections::HashSet<u32>,
}

/// Where the data of the last reply lies in the receive buffer.
#[derive(Debug, Clone)]
struct ReplyInfo {
    result: u32,
    data: std::ops::Range<usize>,
}

fn initial_tag() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut rng = crate::fault::Rng::new(t ^ (u64::from(std::process::id()) << 32));
    rng.next_u64() as u32
}

impl Client {
    /// Start a session with `server` over `transport` (Version handshake).
    ///
    /// # Errors
    /// [`FsError::Timeout`] when the server does not answer; [`FsError::Remote`] with `BUSY`
    /// when its client table is full.
    pub fn connect(
        mut transport: Box<dyn Transport>,
        server: PeerAddr,
        cfg: ClientConfig,
    ) -> Result<Client, FsError> {
        transport.set_mode(cfg.mode);
        let msize = cfg.msize.min(transport.max_message() as u32);
        let mut c = Client {
            tr: transport,
            server,
            cfg,
            next_tag: initial_tag(),
            msize,
            outstanding: 1,
            max_fds: 0,
            rto: Rto::new(cfg.rto_initial, cfg.rto_min, cfg.rto_max),
            tx: vec![0u8; msize as usize],
            rx: vec![0u8; msize as usize + 1],
            counters: ClientCounters::default(),
            // No session yet: nothing to end if the handshake fails.
            ended: true,
            append_fds: std::collections::HashSet::new(),
        };
        // The server caps at most 4096 (its cache window must stay far below the tag space).
        let wanted_outstanding = cfg.outstanding.clamp(1, MAX_OUTSTANDING);
        let info = c.call(BodyRepr::Version(VersionRepr {
            version: PROTOCOL_VERSION,
            channel: 0,
            msize,
            outstanding: wanted_outstanding,
            max_fds: 0,
        }))?;
        let v = VersionPacket::new_checked(&c.rx[info.data.clone()])
            .and_then(|p| VersionRepr::parse(&p))
            .map_err(|_| FsError::Protocol("bad Version reply"))?;
        if v.version != PROTOCOL_VERSION || v.msize > msize {
            return Err(FsError::Protocol("server offered an unusable version"));
        }
        c.msize = v.msize;
        // Later tags carry the assigned channel in their top bits.
        c.next_tag = (u32::from(v.channel) << TAG_CHANNEL_SHIFT) | (c.next_tag & TAG_SEQ_MASK);
        // Never more than asked for, whatever the reply says (the window is allocated).
        c.outstanding = v.outstanding.clamp(1, wanted_outstanding);
        c.max_fds = v.max_fds;
        c.ended = false;
        Ok(c)
    }

    /// Return the negotiated message size.
    pub fn msize(&self) -> u32 {
        self.msize
    }

    /// Return the outstanding-request cap granted by the server.
    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }

    /// Return the server's per-client descriptor limit.
    pub fn max_fds(&self) -> u32 {
        self.max_fds
    }

    /// Return the counters.
    pub fn counters(&self) -> ClientCounters {
        self.counters
    }

    /// Return the current retransmission timeout.
    pub fn rto(&self) -> Duration {
        self.rto.get()
    }

    /// Choose how receives wait.
    pub fn set_mode(&mut self, mode: RecvMode) {
        self.tr.set_mode(mode);
    }

    fn take_tag(&mut self) -> u32 {
        let t = self.next_tag;
        self.next_tag = (t & !TAG_SEQ_MASK) | (t.wrapping_add(1) & TAG_SEQ_MASK);
        t
    }

    /// Return the reply info when `rx[..n]` is a reply with tag `tag` from the server.
    fn match_reply(&self, n: usize, from: &PeerAddr) -> Option<(u32, ReplyInfo, ErrorCode)> {
        if *from != self.server || n > self.msize as usize {
            return None;
        }
        let p = FsPacket::new_checked(&self.rx[..n]).ok()?;
        if p.opcode() != Opcode::Reply {
            return None;
        }
        let rp = ReplyPacket::new_checked(p.body()).ok()?;
        let start = HEADER_LEN + ReplyPacket::<&[u8]>::FIXED_LEN;
        let info = ReplyInfo {
            result: rp.result(),
            data: start..start + rp.datalen() as usize,
        };
        Some((p.tag(), info, rp.error()))
    }

    /// Send one request and wait for its reply (retransmitting as needed); an error reply is
    /// [`FsError::Remote`].
    fn call(&mut self, body: BodyRepr<'_>) -> Result<ReplyInfo, FsError> {
        match self.call_reply(body)? {
            (info, err) if err.is_ok() => Ok(info),
            (_, err) => Err(FsError::Remote(err)),
        }
    }

    /// Send one request and wait for its reply (retransmitting as needed); return the reply
    /// with its error code (an error reply may count bytes applied, as a Commit cut short).
    fn call_reply(&mut self, body: BodyRepr<'_>) -> Result<(ReplyInfo, ErrorCode), FsError> {
        let tag = self.take_tag();
        let n = MessageRepr { tag, body }
            .emit(&mut self.tx)
            .map_err(|_| FsError::Invalid("request does not fit in one message"))?;
        self.counters.requests += 1;
        let mut sent_at = Instant::now();
        self.tr.send(&self.server, &self.tx[..n])?;
        // Retransmissions in a row without an answer; whether it was ever sent again (Karn).
        let mut retries = 0u32;
        let mut resent = false;
        let mut deadline = sent_at + self.rto.get();
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            if let Some(r) = self.tr.recv(&mut self.rx, wait)? {
                let len = r.len.min(self.rx.len());
                match self.match_reply(len, &r.from) {
                    Some((t, _, err)) if t == tag && err == ErrorCode::INPROGRESS => {
                        // Parked on the server (a blocking read or write): not lost. Wait
                        // for the final reply, probing now and then so that a lost reply
                        // is resent from the server's cache and a dead server is noticed.
                        retries = 0;
                        deadline = Instant::now() + self.probe_interval();
                    }
                    Some((t, info, err)) if t == tag => {
                        if !resent {
                            self.rto.sample(sent_at.elapsed());
                        }
                        return Ok((info, err));
                    }
                    _ => self.counters.stray_replies += 1,
                }
            }
            // Checked after every receive, not only after an empty one: a steady stream of
            // stray frames must not hold off retransmission and the time-out.
            if Instant::now() < deadline {
                continue;
            }
            if retries >= self.cfg.max_retries {
                self.abandon(tag);
                return Err(FsError::Timeout);
            }
            retries += 1;
            resent = true;
            self.counters.retransmits += 1;
            self.rto.back_off();
            sent_at = Instant::now();
            deadline = sent_at + self.rto.get();
            self.tr.send(&self.server, &self.tx[..n])?;
        }
    }

    /// Return how long to wait for a request the server answered "in progress" (parked) before
    /// probing it again: the largest RTO.
    fn probe_interval(&self) -> Duration {
        self.cfg.rto_max.max(self.rto.get())
    }

    /// Tell the server to cancel `tag` (best effort, no wait).
    fn abandon(&mut self, tag: u32) {
        let ftag = self.take_tag();
        let mut buf = [0u8; 16];
        if let Ok(n) = (MessageRepr {
            tag: ftag,
            body: BodyRepr::Flush(FlushRepr { oldtag: tag }),
        })
        .emit(&mut buf)
        {
            let _ = self.tr.send(&self.server, &buf[..n]);
        }
    }

    /// Cancel the outstanding request `oldtag` (e.g. a read parked on a device with no data).
    /// Return whether the server had it pending.
    ///
    /// # Errors
    /// Transport errors and timeouts.
    pub fn flush(&mut self, oldtag: u32) -> Result<bool, FsError> {
        let info = self.call(BodyRepr::Flush(FlushRepr { oldtag }))?;
        Ok(info.result != 0)
    }

    /// Run `count` requests with up to `outstanding` in flight. `build(i, tag, buf)` writes
    /// request `i` into `buf` and returns its length; `on_reply(i, result, data)` takes its
    /// reply. The first error reply stops sending new requests; replies in flight are awaited.
    fn pipeline(
        &mut self,
        count: usize,
        mut build: impl FnMut(usize, u32, &mut [u8]) -> Result<usize, FsError>,
        mut on_reply: impl FnMut(usize, u32, &[u8]),
    ) -> Result<(), FsError> {
        let window = self.outstanding as usize;
        let span = 4 * self.outstanding;
        let mut slots: Vec<Slot> = Vec::with_capacity(window);
        let mut next = 0usize;
        let mut first_err: Option<FsError> = None;
        let mut spare: Vec<Vec<u8>> = Vec::new();
        loop {
            // Fill the window.
            while first_err.is_none() && next < count && slots.len() < window {
                let oldest_dist = slots
                    .iter()
                    .map(|s| self.next_tag.wrapping_sub(s.tag) & TAG_SEQ_MASK)
                    .max()
                    .unwrap_or(0);
                if oldest_dist >= span {
                    break;
                }
                let tag = self.take_tag();
                let mut msg = spare.pop().unwrap_or_default();
                msg.resize(self.msize as usize, 0);
                let n = build(next, tag, &mut msg)?;
                msg.truncate(n);
                self.counters.requests += 1;
                let now = Instant::now();
                self.tr.send(&self.server, &msg)?;
                slots.push(Slot {
                    index: next,
                    tag,
                    msg,
                    sent_at: now,
                    deadline: now + self.rto.get(),
                    retries: 0,
                    resent: false,
                });
                next += 1;
            }
            if slots.is_empty() {
                break;
            }
            let earliest = slots
                .iter()
                .map(|s| s.deadline)
                .min()
                .unwrap_or_else(Instant::now);
            let wait = earliest.saturating_duration_since(Instant::now());
            if let Some(r) = self.tr.recv(&mut self.rx, wait)? {
                let len = r.len.min(self.rx.len());
                let m = self.match_reply(len, &r.from);
                let pos = m
                    .as_ref()
                    .and_then(|(t, _, _)| slots.iter().position(|s| s.tag == *t));
                match (m, pos) {
                    (Some((_, _, err)), Some(i)) if err == ErrorCode::INPROGRESS => {
                        // Parked on the server: wait for the final reply (as `call`).
                        let probe = self.probe_interval();
                        let s = &mut slots[i];
                        s.retries = 0;
                        s.deadline = Instant::now() + probe;
                    }
                    (Some((_, info, err)), Some(i)) => {
                        let s = slots.swap_remove(i);
                        if !s.resent {
                            self.rto.sample(s.sent_at.elapsed());
                        }
                        if err.is_ok() {
                            on_reply(s.index, info.result, &self.rx[info.data]);
                        } else if first_err.is_none() {
                            first_err = Some(FsError::Remote(err));
                        }
                        spare.push(s.msg);
                    }
                    _ => self.counters.stray_replies += 1,
                }
            }
            // The expiry scan runs after every receive, not only after an empty one: a steady
            // stream of stray frames must not hold off retransmission and the time-out.
            let now = Instant::now();
            let mut backed_off = false;
            if slots
                .iter()
                .any(|s| s.deadline <= now && s.retries >= self.cfg.max_retries)
            {
                // Give up on every request still in flight and, as `call` does (rule
                // 5), ask the server to cancel each, so that a late copy does not run
                // (or a STAGE piece hold staging budget) after this call failed.
                for s in &slots {
                    self.abandon(s.tag);
                }
                return Err(FsError::Timeout);
            }
            for s in slots.iter_mut().filter(|s| s.deadline <= now) {
                if !backed_off {
                    self.rto.back_off();
                    backed_off = true;
                }
                s.retries += 1;
                s.resent = true;
                self.counters.retransmits += 1;
                s.sent_at = now;
                s.deadline = now + self.rto.get();
                self.tr.send(&self.server, &s.msg)?;
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Open `path` (relative to the exported root) with [`partix_wire::fs::open_flags`].
    ///
    /// # Errors
    /// [`FsError::Remote`] with the server's errno (`XDEV` for a path escaping the root, `MFILE`
    /// when the descriptor table is full).
    pub fn open(&mut self, path: &str, flags: u32, mode: u32) -> Result<u32, FsError> {
        let path = clean_path(path)?;
        let info = self.call(BodyRepr::Open(OpenRepr {
            flags,
            mode,
            path: path.as_bytes(),
        }))?;
        if flags & open_flags::APPEND != 0 {
            self.append_fds.insert(info.result);
        } else {
            self.append_fds.remove(&info.result);
        }
        Ok(info.result)
    }

    /// Close a descriptor.
    ///
    /// # Errors
    /// [`FsError::Remote`] with `BADF` for an unknown descriptor.
    pub fn close(&mut self, fd: u32) -> Result<(), FsError> {
        self.append_fds.remove(&fd);
        self.call(BodyRepr::Close(CloseRepr { fd }))?;
        Ok(())
    }

    /// Read up to one frame's worth at `offset` (`None` = current position) into `buf`.
    ///
    /// # Errors
    /// Transport errors, timeouts, the server's errno.
    pub fn read_once(
        &mut self,
        fd: u32,
        offset: Option<u64>,
        buf: &mut [u8],
    ) -> Result<usize, FsError> {
        let want = buf.len().min(max_read_data(self.msize));
        let info = self.call(BodyRepr::Read(ReadRepr {
            fd,
            len: want as u32,
            offset,
        }))?;
        let data = &self.rx[info.data];
        let n = data.len().min(want);
        buf[..n].copy_from_slice(&data[..n]);
        Ok(n)
    }

    /// Read into `buf` from `offset`, split over as many frames as needed and pipelined.
    /// Return the bytes read (fewer than `buf.len()` only at end of file).
    ///
    /// With `offset == None` (devices, pipes) a single frame is read, like `read(2)`.
    ///
    /// # Errors
    /// Transport errors, timeouts, the server's errno.
    pub fn read(&mut self, fd: u32, offset: Option<u64>, buf: &mut [u8]) -> Result<usize, FsError> {
        let chunk = max_read_data(self.msize);
        let Some(base) = offset else {
            return self.read_once(fd, None, buf);
        };
        if base.checked_add(buf.len() as u64).is_none() {
            return Err(FsError::Invalid("read beyond the largest offset"));
        }
        if buf.len() <= chunk {
            return self.read_once(fd, offset, buf);
        }
        let count = buf.len().div_ceil(chunk);
        let total = buf.len();
        let mut got = vec![usize::MAX; count];
        self.pipeline(
            count,
            |i, tag, out| {
                let len = chunk.min(total - i * chunk) as u32;
                MessageRepr {
                    tag,
                    body: BodyRepr::Read(ReadRepr {
                        fd,
                        len,
                        offset: Some(base + (i * chunk) as u64),
                    }),
                }
                .emit(out)
                .map_err(|_| FsError::Invalid("read request"))
            },
            |i, _, data| {
                let start = i * chunk;
                let n = data.len().min(total - start).min(chunk);
                buf[start..start + n].copy_from_slice(&data[..n]);
                got[i] = n;
            },
        )?;
        // The result is the contiguous prefix: stop at the first short chunk.
        let mut n = 0usize;
        for (i, &g) in got.iter().enumerate() {
            let want = chunk.min(total - i * chunk);
            n += g.min(want);
            if g < want {
                break;
            }
        }
        Ok(n)
    }

    /// Write `data` at `offset` (`None` = current position), split over frames. Pieces at
    /// explicit offsets are pipelined; at the current position they are sent one by one, in
    /// order. On a descriptor opened with `O_APPEND` the offset is ignored (as `pwrite(2)` does
    /// on Linux) and the pieces go one by one to the end, in order. A failure may leave earlier
    /// pieces applied: use [`Client::write_atomic`] for all-or-nothing. As with `write(2)`, an
    /// error after some bytes were written returns the count of those bytes instead; for
    /// pipelined pieces that is the contiguous prefix written (pieces after a short or failed
    /// one may have been written too).
    ///
    /// # Errors
    /// Transport errors, timeouts, the server's errno (when nothing was written).
    pub fn write(&mut self, fd: u32, offset: Option<u64>, data: &[u8]) -> Result<usize, FsError> {
        let chunk = max_write_data(self.msize);
        let offset = if self.append_fds.contains(&fd) {
            None
        } else {
            offset
        };
        match offset {
            None => {
                let mut done = 0;
                for piece in data.chunks(chunk.max(1)) {
                    let r = self.call(BodyRepr::Write(WriteRepr {
                        fd,
                        flags: 0,
                        offset: None,
                        data: piece,
                    }));
                    let info = match r {
                        Ok(info) => info,
                        // As write(2): an error after some bytes were written reports those.
                        Err(_) if done > 0 => return Ok(done),
                        Err(e) => return Err(e),
                    };
                    let n = (info.result as usize).min(piece.len());
                    done += n;
                    if n < piece.len() {
                        break;
                    }
                }
                Ok(done)
            }
            Some(base) if base.checked_add(data.len() as u64).is_none() => {
                Err(FsError::Invalid("write beyond the largest offset"))
            }
            Some(base) if data.len() <= chunk => {
                let info = self.call(BodyRepr::Write(WriteRepr {
                    fd,
                    flags: 0,
                    offset: Some(base),
                    data,
                }))?;
                Ok((info.result as usize).min(data.len()))
            }
            Some(base) => {
                let count = data.len().div_ceil(chunk);
                let mut wrote = vec![usize::MAX; count];
                let r = self.pipeline(
                    count,
                    |i, tag, out| {
                        let piece = &data[i * chunk..((i + 1) * chunk).min(data.len())];
                        MessageRepr {
                            tag,
                            body: BodyRepr::Write(WriteRepr {
                                fd,
                                flags: 0,
                                offset: Some(base + (i * chunk) as u64),
                                data: piece,
                            }),
                        }
                        .emit(out)
                        .map_err(|_| FsError::Invalid("write request"))
                    },
                    |i, result, _| wrote[i] = result as usize,
                );
                // The result is the contiguous prefix written: stop at the first short piece
                // (or the first without a reply), as read() does.
                let mut done = 0usize;
                for (i, &w) in wrote.iter().enumerate() {
                    let want = chunk.min(data.len() - i * chunk);
                    if w == usize::MAX {
                        break;
                    }
                    done += w.min(want);
                    if w < want {
                        break;
                    }
                }
                match r {
                    Ok(()) => Ok(done),
                    Err(_) if done > 0 => Ok(done),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Write `data` at `offset` (`None` = current position) in one piece: the pieces are staged
    /// on the server and applied by one Commit, one `write` of the whole buffer.
    ///
    /// On a regular file with space for the data, either all of it is applied or none. A
    /// write cut short after some bytes were applied (no space left, the file size limit, a
    /// pipe or device opened with `O_NONBLOCK` with less room than the data) returns the count
    /// of those bytes, as `write(2)` does; on a pipe or device opened without `O_NONBLOCK` the
    /// server waits for room until all is written.
    ///
    /// # Errors
    /// Transport errors, timeouts, the server's errno (`FBIG` above its staging limit) when
    /// nothing was written (the staged data is then aborted or discarded).
    pub fn write_atomic(
        &mut self,
        fd: u32,
        offset: Option<u64>,
        data: &[u8],
    ) -> Result<usize, FsError> {
        if data.is_empty() {
            return Ok(0);
        }
        let len =
            u32::try_from(data.len()).map_err(|_| FsError::Invalid("atomic write over 4 GiB"))?;
        let offset = if self.append_fds.contains(&fd) {
            None
        } else {
            offset
        };
        let chunk = max_write_data(self.msize);
        let count = data.len().div_ceil(chunk);
        let staged = self.pipeline(
            count,
            |i, tag, out| {
                let piece = &data[i * chunk..((i + 1) * chunk).min(data.len())];
                MessageRepr {
                    tag,
                    body: BodyRepr::Write(WriteRepr {
                        fd,
                        flags: write_flags::STAGE,
                        offset: Some((i * chunk) as u64),
                        data: piece,
                    }),
                }
                .emit(out)
                .map_err(|_| FsError::Invalid("write request"))
            },
            |_, _, _| {},
        );
        let flags = if staged.is_ok() {
            0
        } else {
            commit_flags::ABORT
        };
        let commit = self.call_reply(BodyRepr::Commit(CommitRepr {
            fd,
            flags,
            offset,
            len,
        }));
        staged?;
        match commit? {
            (info, err) if err.is_ok() || info.result > 0 => {
                Ok((info.result as usize).min(data.len()))
            }
            (_, err) => Err(FsError::Remote(err)),
        }
    }

    /// Return the attributes of `path`.
    ///
    /// # Errors
    /// Transport errors, timeouts, the server's errno.
    pub fn stat(&mut self, path: &str) -> Result<Attr, FsError> {
        let path = clean_path(path)?;
        let info = self.call(BodyRepr::Stat(StatRepr {
            path: path.as_bytes(),
        }))?;
        AttrPacket::new_checked(&self.rx[info.data])
            .and_then(|p| AttrRepr::parse(&p))
            .map_err(|_| FsError::Protocol("bad Stat reply"))
    }

    /// Return the entries of directory `path` (sorted by name, without `.` and `..`). An entry
    /// whose name fits no reply at the session's msize (`NAMETOOLONG` from the server) is left
    /// out, counted in [`ClientCounters::dir_entries_skipped`]; the listing goes on after it.
    ///
    /// # Errors
    /// Transport errors, timeouts, the server's errno; [`FsError::TooLarge`] for a listing
    /// larger than [`ClientConfig::max_dir_bytes`].
    pub fn readdir(&mut self, path: &str) -> Result<Vec<DirEntry>, FsError> {
        let path = clean_path(path)?;
        let mut out = Vec::new();
        let mut taken = 0usize;
        // Entries of the directory passed so far (listed or skipped): the next cookie.
        let mut cookie = 0u32;
        loop {
            let r = self.call(BodyRepr::Readdir(ReaddirRepr {
                cookie,
                path: path.as_bytes(),
            }));
            let info = match r {
                Ok(info) => info,
                Err(FsError::Remote(ErrorCode::NAMETOOLONG)) => {
                    // The entry at `cookie` fits no reply: go on from the one after it. Each
                    // skip counts against the listing's limit (a server may say it forever).
                    self.counters.dir_entries_skipped += 1;
                    taken = taken.saturating_add(DIR_ENTRY_COST);
                    if taken > self.cfg.max_dir_bytes {
                        return Err(FsError::TooLarge("directory listing over max_dir_bytes"));
                    }
                    cookie = cookie
                        .checked_add(1)
                        .ok_or(FsError::TooLarge("directory listing over 2^32 entries"))?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            if info.result == 0 {
                return Ok(out);
            }
            let before = out.len();
            for e in DirEntryRepr::iter(&self.rx[info.data.clone()]) {
                let e = e.map_err(|_| FsError::Protocol("bad Readdir reply"))?;
                taken = taken.saturating_add(e.name.len() + DIR_ENTRY_COST);
                if taken > self.cfg.max_dir_bytes {
                    return Err(FsError::TooLarge("directory listing over max_dir_bytes"));
                }
                out.push(DirEntry {
                    name: String::from_utf8_lossy(e.name).into_owned(),
                    kind: e.kind,
                });
            }
            // The count must match the entries carried: the next cookie is the count so far, and
            // a reply counting entries it does not carry would be asked for again forever.
            if out.len() - before != info.result as usize {
                return Err(FsError::Protocol(
                    "Readdir reply counts other entries than it carries",
                ));
            }
            cookie = cookie
                .checked_add(info.result)
                .ok_or(FsError::TooLarge("directory listing over 2^32 entries"))?;
        }
    }

    /// Send a raw, already encoded message and wait for the reply with the same tag (for tests
    /// and tools that probe the server with hand-made frames). Return the reply's error code.
    ///
    /// # Errors
    /// Transport errors and timeouts.
    pub fn raw_call(
        &mut self,
        msg: &[u8],
        tag: u32,
        timeout: Duration,
    ) -> Result<ErrorCode, FsError> {
        self.tr.send(&self.server, msg)?;
        let deadline = Instant::now() + timeout;
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            match self.tr.recv(&mut self.rx, wait)? {
                Some(r) => {
                    let len = r.len.min(self.rx.len());
                    if let Some((t, _, err)) = self.match_reply(len, &r.from) {
                        if t == tag {
                            return Ok(err);
                        }
                    }
                }
                None => return Err(FsError::Timeout),
            }
        }
    }

    /// Return the next tag this client will use.
    pub fn peek_tag(&self) -> u32 {
        self.next_tag
    }

    /// Skip `n` tags (so hand-made frames from [`Client::raw_call`] can use them). The
    /// sequence number wraps within its 24 bits; the channel stays.
    pub fn skip_tags(&mut self, n: u32) {
        let t = self.next_tag;
        self.next_tag = (t & !TAG_SEQ_MASK) | (t.wrapping_add(n) & TAG_SEQ_MASK);
    }
}

impl Client {
    /// End the session on the server (closes every descriptor, frees the client slot). Also
    /// done, best effort, when the client is dropped.
    ///
    /// # Errors
    /// Transport errors and timeouts.
    pub fn disconnect(mut self) -> Result<(), FsError> {
        let r = self.end_session();
        self.ended = true;
        r
    }

    fn end_session(&mut self) -> Result<(), FsError> {
        self.call(BodyRepr::Close(CloseRepr {
            fd: crate::server::SESSION_FD,
        }))
        .map(|_| ())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if !self.ended {
            // Bounded: at most three short tries when the server is gone.
            self.cfg.max_retries = 2;
            let _ = self.end_session();
        }
    }
}

/// Turn a user path into a root-relative one: strip leading `/`, map `""` to the root.
fn clean_path(p: &str) -> Result<String, FsError> {
    if p.contains('\0') {
        return Err(FsError::Invalid("path holds a NUL byte"));
    }
    Ok(p.trim_start_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rto_follows_samples_and_backs_off() {
        let mut r = Rto::new(
            Duration::from_millis(50),
            Duration::from_micros(200),
            Duration::from_secs(1),
        );
        assert_eq!(r.get(), Duration::from_millis(50));
        for _ in 0..50 {
            r.sample(Duration::from_micros(100));
        }
        assert!(r.get() <= Duration::from_micros(300), "{:?}", r.get());
        r.back_off();
        r.back_off();
        assert!(r.get() >= Duration::from_micros(800));
        for _ in 0..20 {
            r.back_off();
        }
        assert_eq!(r.get(), Duration::from_secs(1));
    }

    /// A transport whose queue is never empty: every `recv` returns at once with a Reply
    /// from the server address bearing a tag no request uses (a stream of stray frames).
    /// Sends are swallowed (the server is dead).
    struct Strays {
        frame: Vec<u8>,
        server: PeerAddr,
        sent: std::sync::Arc<std::sync::atomic::AtomicU64>,
    }

    impl Strays {
        fn new(server: PeerAddr, sent: std::sync::Arc<std::sync::atomic::AtomicU64>) -> Strays {
            let mut frame = vec![0u8; 64];
            let n = MessageRepr {
                tag: 0x00ab_cdef,
                body: BodyRepr::Reply(partix_wire::fs::ReplyRepr {
                    result: 0,
                    error: ErrorCode::OK,
                    data: &[],
                }),
            }
            .emit(&mut frame)
            .unwrap();
            frame.truncate(n);
            Strays {
                frame,
                server,
                sent,
            }
        }
    }

    impl Transport for Strays {
        fn send(&mut self, _: &PeerAddr, _: &[u8]) -> io::Result<()> {
            self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        }
        fn recv(
            &mut self,
            buf: &mut [u8],
            _: Duration,
        ) -> io::Result<Option<crate::transport::Received>> {
            let n = self.frame.len().min(buf.len());
            buf[..n].copy_from_slice(&self.frame[..n]);
            Ok(Some(crate::transport::Received {
                len: self.frame.len(),
                from: self.server,
            }))
        }
        fn max_message(&self) -> usize {
            1500
        }
        fn local_addr(&self) -> PeerAddr {
            PeerAddr::Udp("127.0.0.1:1".parse().unwrap())
        }
        fn set_mode(&mut self, _: RecvMode) {}
    }

    fn short_timeouts() -> ClientConfig {
        ClientConfig {
            rto_initial: Duration::from_millis(1),
            rto_min: Duration::from_millis(1),
            rto_max: Duration::from_millis(10),
            max_retries: 3,
            ..ClientConfig::default()
        }
    }

    /// Run `f` on a thread; fail if it does not finish within `limit` (the thread is left
    /// spinning: the test process ends soon after).
    fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(limit)
            .expect("no time-out within the limit: stray frames held off the deadline")
    }

    #[test]
    fn call_times_out_under_a_stream_of_stray_frames() {
        let server = PeerAddr::Udp("127.0.0.1:2".parse().unwrap());
        let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let tr = Strays::new(server, sent.clone());
        let r = within(Duration::from_secs(5), move || {
            Client::connect(Box::new(tr), server, short_timeouts()).map(|_| ())
        });
        assert!(matches!(r, Err(FsError::Timeout)), "{r:?}");
        // The first send, three retransmissions and the Flush.
        assert_eq!(sent.load(std::sync::atomic::Ordering::Relaxed), 5);
    }

    #[test]
    fn pipeline_times_out_under_a_stream_of_stray_frames() {
        let server = PeerAddr::Udp("127.0.0.1:2".parse().unwrap());
        let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let tr = Strays::new(server, sent.clone());
        let r = within(Duration::from_secs(5), move || {
            let cfg = short_timeouts();
            // A session as `connect` leaves it (the handshake itself is `call`, tested above).
            let mut c = Client {
                tr: Box::new(tr),
                server,
                cfg,
                next_tag: 1,
                msize: 1500,
                outstanding: 4,
                max_fds: 16,
                rto: Rto::new(cfg.rto_initial, cfg.rto_min, cfg.rto_max),
                tx: vec![0u8; 1500],
                rx: vec![0u8; 1501],
                counters: ClientCounters::default(),
                ended: true,
                append_fds: std::collections::HashSet::new(),
            };
            c.pipeline(
                3,
                |_, tag, buf| {
                    MessageRepr {
                        tag,
                        body: BodyRepr::Stat(StatRepr { path: b"f" }),
                    }
                    .emit(buf)
                    .map_err(|_| FsError::Invalid("emit"))
                },
                |_, _, _| {},
            )
        });
        assert!(matches!(r, Err(FsError::Timeout)), "{r:?}");
    }

    #[test]
    fn paths_are_made_root_relative() {
        assert_eq!(clean_path("/a/b").unwrap(), "a/b");
        assert_eq!(clean_path("/").unwrap(), "");
        assert!(clean_path("a\0b").is_err());
    }
}
