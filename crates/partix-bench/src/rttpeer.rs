//! The processes of `partix bench rtt`: one end of a ping-pong (or of a one-way stream), started
//! twice by the bench, pinned to CPU 0 and CPU 1.
//!
//! ```text
//! partix-rttpart KIND ROLE --cpu N [--size S] [--iters N] [--warmup W]
//!                [--mode spin|poll|park|block] [--gap-us G]
//!   KIND apex   sampling ports PING (A→B) and PONG (B→A) through `partix_runtime::partition`
//!               services only (the transport is whatever the configuration says)
//!        apexc  the `apex` ping-pong through the C API: the `extern "C"` services of
//!               `partix-apex` that a C partition calls (WRITE_SAMPLING_MESSAGE,
//!               PARTIX_WAIT_SAMPLING_MESSAGE, READ_SAMPLING_MESSAGE)
//!        cache  one shared-memory line each way (a region inherited on descriptor 600)
//!        copy   a flag word and the message each way, copied in and out (region on 600)
//!        futex  `copy` with a futex flag word: the receiver of the park and block classes
//!               sleeps in FUTEX_WAIT, the sender wakes it (the raw baseline of those classes)
//!        slot   the one-sided protocol without the port layer: a `partix_shm::sampling` slot
//!               each way (SamplingWriter / SamplingReader, begin/end flags, stamp) in a region
//!               on descriptor 600, each slot on a page of its own (as each channel has its own
//!               region)
//!        udp    a connected UDP socket on descriptor 600 (loopback)
//!        tcp    a connected TCP socket (TCP_NODELAY) on descriptor 600 (loopback)
//!        qrtt   queuing ports QPING (A→B) and QPONG (B→A): the ping-pong of `apex` through
//!               SEND/RECEIVE_QUEUING_MESSAGE
//!        qapex  a queuing port QOUT (send) / QIN (recv) of 64 B messages, one way
//!        qraw   an SPSC ring (partix-shm) in a region on descriptor 600, one way (`qrawb`: in
//!               batches; `qrawk`: the consumer pauses QUEUE_BACKOFF times after an empty look;
//!               `qrawf`: the producer fences after every push; `qraws`: it makes
//!               QUEUE_EXTRA_STORES stores to its stack before every push)
//!        qudp   the raw baseline of the udp queuing port: 64 B messages one way, one `send` /
//!               `recv` each on a connected UDP socket on descriptor 600, with the port's flow
//!               control (at most QUEUE_DEPTH messages in flight; the receiver returns an 8-byte
//!               cumulative count every QUEUE_DEPTH / 2 messages on the same socket)
//!        qtcp   the same over a TCP connection (TCP_NODELAY); the receiver reads the stream in
//!               64 KiB pieces and takes the messages from them
//!   ROLE ping | pong      (qapex, qraw, qudp, qtcp: send | recv)
//! ```
//! `ping` prints one round-trip time in nanoseconds per line (the measured iterations only), then
//! `# nvcsw N`: the voluntary context switches of the measuring thread meanwhile (whether its
//! waits slept in the kernel); `pong` prints its own `# nvcsw N` (over the same rounds) when done;
//! `recv` prints `rate <messages per second>`. Every role ends with `# fifo 1` if its measuring
//! (echoing, sending) thread ran under SCHED_FIFO, `# fifo 0` if the priority was refused
//! ([`fifo_line`]). Errors go to stderr with exit status 2.
//!
//! A round-trip message carries its sequence number (little endian) in its first 8 bytes and in
//! its last 8 bytes ([`stamp`]; below 16 bytes the two overlap); the ping side counts 1, 2, ...
//! and waits for the echo of exactly that number. Both ends check every message they receive
//! ([`check_msg`]: exactly the message size, both words), in every round-trip kind, so a port
//! that delivers part of a message, or a copy whose first word is right and whose tail is
//! another message's, fails the class (exit status 2, the error on stderr) instead of giving
//! timings. A sampling port may return the message before the awaited one again (it still holds
//! it): that one, whole, is waited past ([`fresh_or_previous`]); the `cache` kind's message is
//! its 8-byte flag. In the `apex` kind, `pong` first writes sequence 0 on PONG and `ping` waits
//! for it: both partitions are then up.
//!
//! Waiting classes: `spin` busy-waits (a non-blocking `recv` in a loop; for ports the partix
//! extension `wait_sampling_message` with the port in `RecvMode::Spin`); `poll` (ports only)
//! calls the standard READ_SAMPLING_MESSAGE in a loop until the sequence number changes; `block`
//! sleeps in the kernel (a blocking `recv`; for ports `wait_sampling_message` with the port in
//! `RecvMode::Blocking`); `park` spins a while, then sleeps (ports: the runtime's default
//! [`DEFAULT_RECV_MODE`], spin-then-park with [`PARK_SPINS`] polls; raw sockets:
//! [`PARK_SPINS`] non-blocking receives, then a blocking one). The raw kinds treat `poll` like
//! `spin`. With `--gap-us G` the ping side sleeps `G` µs before every round trip (not timed),
//! so the pong side waits that long for each message: traffic that comes sporadically, where a
//! spin-then-park receiver has parked by the time the message arrives.
//!
//! The raw kinds run at SCHED_FIFO [`PEER_FIFO`], the priority of the APEX process of the `apex`
//! kind (APEX priority [`APEX_PRIORITY`] runs at FIFO priority + 1), so every class competes with
//! the rest of the machine the same way, where the kernel allows it (root or CAP_SYS_NICE); the
//! `# fifo` line says whether it did.
#![allow(unsafe_code)]

use partix_runtime::partition::*;
use partix_shm::ring::{PushError, RingConsumer, RingProducer};
use partix_shm::{Access, Region};
use std::io::Write;
use std::net::{TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Descriptor on which a raw peer inherits its region or socket (kinds `udp2` / `tcp2`: the
/// socket it sends on).
pub const PEER_FD: i32 = 600;
/// Kinds `udp2` / `tcp2`: the socket a raw peer receives on (one connection per direction, the
/// topology of two one-way channels).
pub const PEER_RX_FD: i32 = 601;
/// APEX priority of the partition's communicating process.
pub const APEX_PRIORITY: Priority = 50;
/// SCHED_FIFO priority of the raw peers (that of the APEX process).
pub const PEER_FIFO: i32 = APEX_PRIORITY + 1;
/// Refresh period of the bench's sampling ports (ns): 1 s, so every message read is valid.
pub const REFRESH_NS: SystemTime = 1_000_000_000;
/// Messages queued at most in the throughput channel (the raw ring has as many slots).
pub const QUEUE_DEPTH: u32 = 512;
/// Message size of the throughput classes.
pub const QUEUE_MSG: usize = 64;
/// Offset of the pong line in the cache-line region (another cache line, not adjacent).
pub const PONG_LINE: usize = 128;
/// `MaxNbMessages` of the queuing ping-pong's ports (`qrtt`; one message is in flight at a time).
pub const QRTT_DEPTH: u32 = 8;
/// Messages per call of the batched throughput classes (`qrawb`, `qapexb`).
pub const QUEUE_BATCH: usize = 32;
/// `spin_loop` hints (x86 `pause`, ~25 ns each on the AMD EPYC VM) the `qrawk` consumer waits
/// after a look that found the ring empty, before it reads `tail` again: meanwhile the producer
/// stores `tail` into a line the consumer does not hold, and several messages queue up.
pub const QUEUE_BACKOFF: u32 = 64;
/// Stores to the producer's own stack that the `qraws` producer makes before every push: what
/// a call path that saves registers and spills a few values adds per message (session 9).
pub const QUEUE_EXTRA_STORES: usize = 20;

/// Bytes of the `copy` (and `futex`) kind's region for messages of `size` bytes: per direction a
/// flag line and the data, each block 64-byte aligned.
pub fn copy_region_len(size: usize) -> usize {
    2 * copy_block(size)
}

fn copy_block(size: usize) -> usize {
    64 + size.div_ceil(64) * 64
}

/// How a peer waits for the next message (the bench's classes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Busy-wait (ports: WAIT_SAMPLING_MESSAGE in [`RecvMode::Spin`]; sockets: non-blocking
    /// `recv` in a loop).
    Spin,
    /// Ports: READ_SAMPLING_MESSAGE in a loop (raw kinds: as `Spin`).
    Poll,
    /// Spin [`PARK_SPINS`] times, then sleep in the kernel (ports: [`DEFAULT_RECV_MODE`]).
    Park,
    /// Sleep in the kernel at once (ports: [`RecvMode::Blocking`]; sockets: blocking `recv`).
    Block,
}

/// Polls of the `park` class before it sleeps: those of the runtime's default receive mode.
pub const PARK_SPINS: u32 = match DEFAULT_RECV_MODE {
    RecvMode::SpinThenPark { spins } => spins,
    _ => 2000,
};

impl Wait {
    /// The class's name on the command line and in the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Wait::Spin => "spin",
            Wait::Poll => "poll",
            Wait::Park => "park",
            Wait::Block => "block",
        }
    }

    /// Parse a class name.
    ///
    /// # Errors
    /// A message naming the classes.
    pub fn parse(v: &str) -> Result<Wait, String> {
        Ok(match v {
            "spin" => Wait::Spin,
            "poll" => Wait::Poll,
            "park" => Wait::Park,
            "block" => Wait::Block,
            _ => return Err(format!("--mode {v}: spin, poll, park or block")),
        })
    }

    /// Whether a socket of this class stays in blocking mode (its spinning receives pass
    /// `MSG_DONTWAIT`).
    fn blocking_socket(self) -> bool {
        matches!(self, Wait::Park | Wait::Block)
    }

    /// The `recv` flags of the `k`-th receive attempt of one wait (0, 1, ...).
    fn recv_flags(self, k: u64) -> libc::c_int {
        match self {
            Wait::Spin | Wait::Poll => libc::MSG_DONTWAIT,
            Wait::Park if k < u64::from(PARK_SPINS) => libc::MSG_DONTWAIT,
            Wait::Park | Wait::Block => 0,
        }
    }
}

/// What one peer process does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerArgs {
    /// `apex`, `apexc`, `cache`, `copy`, `futex`, `slot`, `udp`, `tcp`, `qapex`, `qapexb`, `qraw`, `qrawb`,
    /// `qrawk`, `qrawf`, `qraws`, `qudp`, `qtcp`.
    pub kind: String,
    /// `ping`/`pong` or `send`/`recv`.
    pub role: String,
    /// CPU to pin to.
    pub cpu: usize,
    /// Message size in bytes (at least 8).
    pub size: usize,
    /// Measured iterations (throughput: messages).
    pub iters: u64,
    /// Unmeasured iterations first.
    pub warmup: u64,
    /// How to wait for a message.
    pub wait: Wait,
    /// Ping: µs to sleep before every round trip (0: back to back).
    pub gap_us: u64,
}

impl PeerArgs {
    /// Return the command-line arguments that [`parse_args`] reads back.
    pub fn to_args(&self) -> Vec<String> {
        vec![
            self.kind.clone(),
            self.role.clone(),
            "--cpu".into(),
            self.cpu.to_string(),
            "--size".into(),
            self.size.to_string(),
            "--iters".into(),
            self.iters.to_string(),
            "--warmup".into(),
            self.warmup.to_string(),
            "--mode".into(),
            self.wait.as_str().into(),
            "--gap-us".into(),
            self.gap_us.to_string(),
        ]
    }
}

/// Parse the arguments of a peer (without the program name).
///
/// # Errors
/// A message naming the bad argument.
pub fn parse_args(args: &[String]) -> Result<PeerArgs, String> {
    let [kind, role, rest @ ..] = args else {
        return Err(
            "usage: KIND ROLE --cpu N [--size S] [--iters N] [--warmup W] \
             [--mode spin|poll|park|block] [--gap-us G]"
                .into(),
        );
    };
    let mut p = PeerArgs {
        kind: kind.clone(),
        role: role.clone(),
        cpu: 0,
        size: 16,
        iters: 1000,
        warmup: 100,
        wait: Wait::Spin,
        gap_us: 0,
    };
    let mut it = rest.iter();
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        let num = || {
            v.parse::<u64>()
                .map_err(|_| format!("{k} {v}: not a number"))
        };
        match k.as_str() {
            "--cpu" => p.cpu = num()? as usize,
            "--size" => p.size = num()? as usize,
            "--iters" => p.iters = num()?,
            "--warmup" => p.warmup = num()?,
            "--mode" => p.wait = Wait::parse(v)?,
            "--gap-us" => p.gap_us = num()?,
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if p.size < 8 {
        return Err(format!("--size {}: at least 8 bytes", p.size));
    }
    Ok(p)
}

/// Pin the calling thread (and the threads it creates later) to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> Result<(), String> {
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET writes inside it;
    // sched_setaffinity(0, ...) reads it for the calling thread only.
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(format!(
            "cannot pin to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// Whether the calling thread runs under SCHED_FIFO (whatever was asked: the kernel refuses it
/// without root or CAP_SYS_NICE).
pub fn on_fifo() -> bool {
    // SAFETY: sched_getscheduler(0) only reads the calling thread's policy.
    unsafe { libc::sched_getscheduler(0) == libc::SCHED_FIFO }
}

/// The line with which a peer says whether its measuring (or echoing) thread ran under
/// SCHED_FIFO: `# fifo 1`, or `# fifo 0` when the priority was refused. The bench's header
/// says what was applied from these, not what was asked.
pub fn fifo_line() -> String {
    format!("# fifo {}\n", u8::from(on_fifo()))
}

/// Best effort: run the calling thread at SCHED_FIFO `prio` (needs root or CAP_SYS_NICE);
/// whether it did ([`on_fifo`] tells it later, [`fifo_line`] reports it).
pub fn set_fifo(prio: i32) -> bool {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: p is a valid sched_param; pid 0 = the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

fn seq_of(b: &[u8]) -> u64 {
    b.get(..8)
        .and_then(|s| s.try_into().ok())
        .map_or(u64::MAX, u64::from_le_bytes)
}

/// The first word only: the messages of the throughput classes (their receivers check the order).
fn put_seq(b: &mut [u8], seq: u64) {
    b[..8].copy_from_slice(&seq.to_le_bytes());
}

/// Stamp a round-trip message `b` (at least 8 bytes) with sequence number `seq`: little endian
/// in its first 8 bytes and in its last 8 bytes, so a message cut short or a copy whose tail is
/// another message's shows. Below 16 bytes the two words overlap: the last is written first and
/// the first over it, so the first word is whole (at 8 bytes they are one word).
///
/// # Panics
/// If `b` is shorter than 8 bytes (every size the bench allows has 8).
pub fn stamp(b: &mut [u8], seq: u64) {
    let n = b.len();
    b[n - 8..].copy_from_slice(&seq.to_le_bytes());
    b[..8].copy_from_slice(&seq.to_le_bytes());
}

/// The last 8 bytes of an `n`-byte message stamped with `seq` (`n` at least 8).
fn last_word(seq: u64, n: usize) -> [u8; 8] {
    if n >= 16 {
        return seq.to_le_bytes();
    }
    let mut m = [0u8; 16];
    stamp(&mut m[..n], seq);
    let mut w = [0u8; 8];
    w.copy_from_slice(&m[n - 8..n]);
    w
}

/// Check that `b` is the whole round-trip message `seq` of `size` bytes: exactly `size` bytes,
/// `seq` in its first and its last word ([`stamp`]). O(1): two words, whatever the size.
///
/// # Errors
/// What is wrong with the message: its length, its first word or its last word.
pub fn check_msg(b: &[u8], size: usize, seq: u64) -> Result<(), String> {
    if b.len() != size || size < 8 {
        return Err(format!(
            "message {seq}: {} bytes received, the message has {size}",
            b.len()
        ));
    }
    let first = seq_of(b);
    if first != seq {
        return Err(format!("message {seq}: its first word carries {first}"));
    }
    if b[size - 8..] != last_word(seq, size) {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[size - 8..]);
        return Err(format!(
            "message {seq}: its last word carries {:#x}, not {:#x} (a torn or stale copy)",
            u64::from_le_bytes(w),
            u64::from_le_bytes(last_word(seq, size))
        ));
    }
    Ok(())
}

/// What a sampling port returns while the echo is awaited: `Ok(true)` for the whole message
/// `want`, `Ok(false)` for the whole message before it (the port still holds it: wait on).
///
/// # Errors
/// Anything else ([`check_msg`] of the message it claims to be).
pub fn fresh_or_previous(b: &[u8], size: usize, want: u64) -> Result<bool, String> {
    if want > 0 && b.len() >= 8 && seq_of(b) == want - 1 {
        return check_msg(b, size, want - 1).map(|()| false);
    }
    check_msg(b, size, want).map(|()| true)
}

/// Check the value of a flag word that hands message `want` over: `Ok(true)` at `want`,
/// `Ok(false)` at `want - 1` (not yet).
///
/// # Errors
/// Any other value.
fn flag_at(v: u64, want: u64) -> Result<bool, String> {
    if v == want {
        Ok(true)
    } else if want > 0 && v == want - 1 {
        Ok(false)
    } else {
        Err(format!("message {want}: the flag word carries {v}"))
    }
}

/// Voluntary context switches of the calling thread so far (the thread slept in the kernel).
pub fn voluntary_switches() -> u64 {
    // SAFETY: an all-zero rusage is a valid out-parameter; RUSAGE_THREAD reads the caller's.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid out-pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0 {
        ru.ru_nvcsw as u64
    } else {
        0
    }
}

/// Print the samples (one per line), then `# nvcsw N` (voluntary context switches of the
/// measuring thread during the measured rounds), and flush.
fn print_samples(samples: &[u64]) -> Result<(), String> {
    let mut s = String::with_capacity(samples.len() * 7 + 32);
    for v in samples {
        s.push_str(&v.to_string());
        s.push('\n');
    }
    s.push_str(&format!(
        "# nvcsw {}\n",
        MEASURED_SWITCHES.load(Ordering::Relaxed)
    ));
    emit(&s)
}

/// Write `s` to stdout and flush (in the unit tests, which run peers in threads, through the
/// test harness's capture).
fn emit(s: &str) -> Result<(), String> {
    if cfg!(test) {
        print!("{s}");
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    out.write_all(s.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| format!("stdout: {e}"))
}

/// Voluntary context switches of the measuring thread during the measured rounds.
static MEASURED_SWITCHES: AtomicU64 = AtomicU64::new(0);

/// The echo side's count of its own voluntary context switches over the measured rounds
/// (whether its waits slept), printed as `# nvcsw N` when it is done.
struct EchoSwitches {
    first_measured: u64,
    start: Option<u64>,
}

impl EchoSwitches {
    fn new(a: &PeerArgs) -> EchoSwitches {
        EchoSwitches {
            first_measured: a.warmup + 1,
            start: None,
        }
    }

    /// Call before waiting for message `i` (1, 2, ...).
    fn before(&mut self, i: u64) {
        if i == self.first_measured {
            self.start = Some(voluntary_switches());
        }
    }

    /// Print the count (after the last echo went out).
    fn print(self) -> Result<(), String> {
        let n = self
            .start
            .map_or(0, |s| voluntary_switches().saturating_sub(s));
        emit(&format!("# nvcsw {n}\n"))
    }
}

/// Time `total = warmup + iters` round trips of `round(seq)`; keep the measured ones.
fn time_rounds(
    a: &PeerArgs,
    mut round: impl FnMut(u64) -> Result<(), String>,
) -> Result<Vec<u64>, String> {
    let mut samples = Vec::with_capacity(a.iters as usize);
    let mut switches0 = voluntary_switches();
    let gap = std::time::Duration::from_micros(a.gap_us);
    // Switches of the gaps' sleeps (measured rounds), which are not waits for a message.
    let mut gap_switches = 0;
    for i in 1..=a.warmup + a.iters {
        if i == a.warmup + 1 {
            switches0 = voluntary_switches();
        }
        if !gap.is_zero() {
            // Not timed: the other side waits this long for the message.
            let s0 = voluntary_switches();
            std::thread::sleep(gap);
            if i > a.warmup {
                gap_switches += voluntary_switches().saturating_sub(s0);
            }
        }
        let t = Instant::now();
        round(i)?;
        let dt = t.elapsed().as_nanos() as u64;
        if i > a.warmup {
            samples.push(dt);
        }
    }
    MEASURED_SWITCHES.store(
        voluntary_switches()
            .saturating_sub(switches0)
            .saturating_sub(gap_switches),
        Ordering::Relaxed,
    );
    Ok(samples)
}

/// Run a peer; return the process exit status.
pub fn main(args: &[String]) -> i32 {
    let a = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("partix-rttpart: {e}");
            return 2;
        }
    };
    let r = pin_to_cpu(a.cpu).and_then(|()| match a.kind.as_str() {
        "apex" | "apexc" | "qrtt" | "qapex" | "qapexb" => apex_main(a.clone()),
        "cache" => raw_prelude().and_then(|()| cache(&a, &*inherited_region()?)),
        "copy" => raw_prelude().and_then(|()| copy(&a, &*inherited_region()?)),
        "futex" => raw_prelude().and_then(|()| futex(&a, &*inherited_region()?)),
        "slot" | "slot-rw" => raw_prelude().and_then(|()| slot(&a, inherited_region()?)),
        "udp" | "udp2" | "udpmt" => raw_prelude().and_then(|()| udp(&a)),
        "tcp" | "tcp2" => raw_prelude().and_then(|()| tcp(&a)),
        "qraw" | "qrawb" | "qrawk" | "qrawf" | "qraws" => raw_prelude().and_then(|()| qraw(&a)),
        "qudp" | "qtcp" => raw_prelude().and_then(|()| qsock(&a)),
        k => Err(format!("unknown kind {k}")),
    });
    // Last, `# fifo 0|1`: whether this (the measuring or echoing) thread ran under SCHED_FIFO.
    match r.and_then(|()| emit(&fifo_line())) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("partix-rttpart {} {}: {e}", a.kind, a.role);
            2
        }
    }
}

/// The raw peers ask for SCHED_FIFO [`PEER_FIFO`]; a refusal is not an error (the peer reports
/// it with [`fifo_line`], and the bench's header says so).
fn raw_prelude() -> Result<(), String> {
    let _applied = set_fifo(PEER_FIFO);
    Ok(())
}

fn inherited_region() -> Result<Arc<Region>, String> {
    // SAFETY: the bench hands descriptor PEER_FD to this process for this purpose only; nothing
    // else in this process owns it.
    unsafe { partix_runtime::channels::map_fd(PEER_FD, Access::ReadWrite) }.map(Arc::new)
}

/// One `AtomicU64` each way in `r` (at 0 and [`PONG_LINE`]): the message is the sequence number
/// itself (8 bytes: its first and last word are one), so a flag at neither the awaited number
/// nor the one before is an error.
fn cache(a: &PeerArgs, r: &Region) -> Result<(), String> {
    if r.len() < PONG_LINE + 8 {
        return Err("region too small".into());
    }
    // SAFETY: the region is page-aligned, shared, at least PONG_LINE + 8 bytes long, and lives as
    // long as `r`; offsets 0 and PONG_LINE are 8-aligned; both processes only use atomics there.
    let (ping, pong) = unsafe {
        (
            &*r.as_ptr().cast::<AtomicU64>(),
            &*r.as_ptr().add(PONG_LINE).cast::<AtomicU64>(),
        )
    };
    let total = a.warmup + a.iters;
    match a.role.as_str() {
        "ping" => {
            let s = time_rounds(a, |i| {
                ping.store(i, Ordering::Release);
                while !flag_at(pong.load(Ordering::Acquire), i)? {
                    std::hint::spin_loop();
                }
                Ok(())
            })?;
            print_samples(&s)
        }
        "pong" => {
            let mut sw = EchoSwitches::new(a);
            for i in 1..=total {
                sw.before(i);
                while !flag_at(ping.load(Ordering::Acquire), i)? {
                    std::hint::spin_loop();
                }
                pong.store(i, Ordering::Release);
            }
            sw.print()
        }
        r => Err(format!("unknown role {r}")),
    }
}

/// Bytes of the region of the `slot` kind: one page-aligned slot of `size` bytes per direction.
pub fn slot_region_len(size: usize) -> usize {
    2 * slot_stride(size)
}

fn slot_stride(size: usize) -> usize {
    partix_shm::sampling::SamplingLayout::new(size as u32)
        .map_or(4096, |l| l.size_bytes())
        .div_ceil(4096)
        * 4096
}

/// The one-sided protocol without the port layer: the ping writes its slot (`write_stamped`,
/// stamped with the clock the ports use), the pong waits for a newer message in it
/// (`wait_newer`, spinning) and writes it back in its own slot. What the APEX services add on
/// top (port lookup, lock, the last good copy, validity) is the difference to the one-sided
/// port's class.
///
/// Kind `slot`: each end reads the other's slot through a read-only mapping of the region, as a
/// destination port maps its slot. Kind `slot-rw`: through the writable mapping it writes its
/// own slot with; the difference between the two is what the destination's read-only mapping
/// costs (on the 2-vCPU AMD EPYC VM, the writer's 4 KiB copy into a slot that a read-only
/// mapping read last took about 2.5 times as long, and a second writable mapping did not slow
/// it: scratch measurements in `docs/bench-rtt.md`, session 30).
fn slot(a: &PeerArgs, r: Arc<Region>) -> Result<(), String> {
    use partix_shm::sampling::{SamplingLayout, SamplingReader, SamplingWriter};
    use partix_shm::RecvMode;
    let stride = slot_stride(a.size);
    if r.len() < 2 * stride {
        return Err("region too small".into());
    }
    let layout = SamplingLayout::new(a.size as u32).map_err(|e| format!("slot: {e}"))?;
    // The ports' clock, calibrated as the partition runtime does at its start.
    partix_shm::clock::calibrate();
    let (mine, theirs) = if a.role == "ping" {
        (0, stride)
    } else {
        (stride, 0)
    };
    let mut w = SamplingWriter::init(r.clone(), mine, layout).map_err(|e| format!("slot: {e}"))?;
    let view = if a.kind == "slot-rw" {
        r.clone()
    } else {
        let fd = r.read_only_fd().map_err(|e| format!("slot: {e}"))?;
        // SAFETY: `fd` was just opened for this mapping and is owned by nothing else.
        let ro = unsafe { Region::from_raw_fd(fd.into_raw_fd(), r.len(), Access::ReadOnly) };
        Arc::new(ro.map_err(|e| format!("slot: {e}"))?)
    };
    let started = Instant::now();
    let rd = loop {
        // The other end initialises its slot when it starts.
        match SamplingReader::attach(view.clone(), theirs) {
            Ok(rd) => break rd,
            Err(_) if started.elapsed().as_secs() < 10 => std::thread::yield_now(),
            Err(e) => return Err(format!("slot: {e}")),
        }
    };
    let mut msg = vec![0x5au8; a.size];
    let mut buf = vec![0u8; a.size];
    let mut last: Option<u32> = None;
    // Every message is newer than the last one returned: the awaited one, whole, or an error.
    let recv = |buf: &mut [u8], last: &mut Option<u32>, i: u64| -> Result<usize, String> {
        let ok = rd
            .wait_newer(buf, *last, RecvMode::Spin, None)
            .map_err(|e| format!("slot: {e}"))?;
        *last = Some(ok.seq);
        let got = buf
            .get(..ok.len)
            .ok_or_else(|| format!("slot: a message of {} bytes", ok.len))?;
        check_msg(got, a.size, i)?;
        Ok(ok.len)
    };
    let write = |w: &mut SamplingWriter, m: &[u8]| {
        w.write_stamped(m, partix_shm::clock::now_ns())
            .map(|_| ())
            .map_err(|e| format!("slot: {e}"))
    };
    match a.role.as_str() {
        "ping" => {
            let s = time_rounds(a, |i| {
                stamp(&mut msg, i);
                write(&mut w, &msg)?;
                recv(&mut buf, &mut last, i).map(|_| ())
            })?;
            print_samples(&s)
        }
        "pong" => {
            let mut sw = EchoSwitches::new(a);
            for i in 1..=a.warmup + a.iters {
                sw.before(i);
                let n = recv(&mut buf, &mut last, i)?;
                write(&mut w, &buf[..n])?;
            }
            sw.print()
        }
        r => Err(format!("unknown role {r}")),
    }
}

/// The floor of a shared-memory round trip of `size` bytes: per direction a flag word and
/// `size` bytes in their own lines; the sender copies the message in (plain `memcpy`) and stores
/// the flag (`Release`), the receiver spins on the flag (`Acquire`) and copies the message out;
/// both ends check the copy ([`check_msg`]).
fn copy(a: &PeerArgs, r: &Region) -> Result<(), String> {
    if r.len() < copy_region_len(a.size) {
        return Err("region too small".into());
    }
    let blk = copy_block(a.size);
    let size = a.size;
    // SAFETY: the region is page-aligned, shared, at least 2 * blk bytes long and lives as long as
    // `r`; offsets 0 and blk are 64-aligned. The flags are only used as atomics; the data bytes
    // are written by one side and read by the other only in the window the flags hand over (the
    // Release store / Acquire load pair orders them), so there is no data race.
    let (ping_flag, pong_flag, ping_data, pong_data) = unsafe {
        (
            &*r.as_ptr().cast::<AtomicU64>(),
            &*r.as_ptr().add(blk).cast::<AtomicU64>(),
            r.as_ptr().add(64),
            r.as_ptr().add(blk + 64),
        )
    };
    let mut local = vec![0u8; size];
    let total = a.warmup + a.iters;
    let send = |data: *mut u8, flag: &AtomicU64, local: &[u8], i: u64| {
        // SAFETY: `data` has `size` bytes in the region (see above), `local` has `size` bytes.
        unsafe { std::ptr::copy_nonoverlapping(local.as_ptr(), data, size) };
        flag.store(i, Ordering::Release);
    };
    let recv = |data: *mut u8, flag: &AtomicU64, local: &mut [u8], i: u64| {
        while !flag_at(flag.load(Ordering::Acquire), i)? {
            std::hint::spin_loop();
        }
        // SAFETY: as in `send`.
        unsafe { std::ptr::copy_nonoverlapping(data, local.as_mut_ptr(), size) };
        check_msg(local, size, i)
    };
    match a.role.as_str() {
        "ping" => {
            let s = time_rounds(a, |i| {
                stamp(&mut local, i);
                send(ping_data, ping_flag, &local, i);
                recv(pong_data, pong_flag, &mut local, i)
            })?;
            print_samples(&s)
        }
        "pong" => {
            let mut sw = EchoSwitches::new(a);
            for i in 1..=total {
                sw.before(i);
                recv(ping_data, ping_flag, &mut local, i)?;
                send(pong_data, pong_flag, &local, i);
            }
            sw.print()
        }
        r => Err(format!("unknown role {r}")),
    }
}

/// The bit of a `futex` kind's flag word that says its receiver sleeps (or is about to) in
/// `FUTEX_WAIT` on it; the sequence number is the other 31 bits.
const FUTEX_WAITING: u32 = 1 << 31;

/// The floor of a shared-memory round trip whose receiver sleeps in the kernel (the raw
/// baseline of the park and block classes): the `copy` kind's region and copies (per direction
/// a flag word in its own line and `size` bytes after it; `memcpy` in, `memcpy` out, both ends
/// check the copy), with a 32-bit flag word that is also a futex. The sender copies the message
/// in, swaps the flag to the sequence number (`Release`) and calls `FUTEX_WAKE` only if the old
/// value had [`FUTEX_WAITING`]. The receiver looks at the flag (`Acquire`), in the park class
/// [`PARK_SPINS`] times first (block: at once; spin and poll: it never sleeps), then sets
/// [`FUTEX_WAITING`] in the word (compare-and-swap from the value it saw) and sleeps in
/// `FUTEX_WAIT` while the word holds that; the sender's swap either comes first (the
/// compare-and-swap fails, the receiver looks again) or sees the bit (and wakes it), since
/// both change the one word.
fn futex(a: &PeerArgs, r: &Region) -> Result<(), String> {
    if r.len() < copy_region_len(a.size) {
        return Err("region too small".into());
    }
    let total = a.warmup + a.iters;
    if total >= u64::from(FUTEX_WAITING) {
        return Err(format!("{total} round trips: fewer than 2^31"));
    }
    let blk = copy_block(a.size);
    let size = a.size;
    // SAFETY: the region is page-aligned, shared, at least 2 * blk bytes long and lives as long as
    // `r`; offsets 0 and blk are 64-aligned. The flags are only used as atomics (and as futex
    // words, which the kernel reads); the data bytes are handed over by the flags as in `copy`.
    let (ping_flag, pong_flag, ping_data, pong_data) = unsafe {
        (
            &*r.as_ptr().cast::<AtomicU32>(),
            &*r.as_ptr().add(blk).cast::<AtomicU32>(),
            r.as_ptr().add(64),
            r.as_ptr().add(blk + 64),
        )
    };
    let spins = match a.wait {
        Wait::Park => u64::from(PARK_SPINS),
        Wait::Block => 0,
        Wait::Spin | Wait::Poll => u64::MAX,
    };
    let mut local = vec![0u8; size];
    let send = |data: *mut u8, flag: &AtomicU32, local: &[u8], i: u64| {
        // SAFETY: `data` has `size` bytes in the region (see above), `local` has `size` bytes.
        unsafe { std::ptr::copy_nonoverlapping(local.as_ptr(), data, size) };
        if flag.swap(i as u32, Ordering::Release) & FUTEX_WAITING != 0 {
            partix_shm::futex::wake(flag, 1);
        }
    };
    let recv = |data: *mut u8, flag: &AtomicU32, local: &mut [u8], i: u64| {
        let mut k = 0u64;
        loop {
            let v = flag.load(Ordering::Acquire);
            if flag_at(u64::from(v & !FUTEX_WAITING), i)? {
                break;
            }
            if k < spins {
                k += 1;
                std::hint::spin_loop();
                continue;
            }
            let asleep = v | FUTEX_WAITING;
            if v & FUTEX_WAITING == 0
                && flag
                    .compare_exchange(v, asleep, Ordering::Acquire, Ordering::Acquire)
                    .is_err()
            {
                continue;
            }
            // Returns when woken, or at once if the word changed meanwhile (or spuriously: it
            // looks again). No time-out: a lost wake-up would hang the pair and fail the class
            // at its time-out, not pass as one slow round trip.
            partix_shm::futex::wait(flag, asleep, None);
        }
        // SAFETY: as in `send`.
        unsafe { std::ptr::copy_nonoverlapping(data, local.as_mut_ptr(), size) };
        check_msg(local, size, i)
    };
    match a.role.as_str() {
        "ping" => {
            let s = time_rounds(a, |i| {
                stamp(&mut local, i);
                send(ping_data, ping_flag, &local, i);
                recv(pong_data, pong_flag, &mut local, i)
            })?;
            print_samples(&s)
        }
        "pong" => {
            let mut sw = EchoSwitches::new(a);
            for i in 1..=total {
                sw.before(i);
                recv(ping_data, ping_flag, &mut local, i)?;
                send(pong_data, pong_flag, &local, i);
            }
            sw.print()
        }
        r => Err(format!("unknown role {r}")),
    }
}

/// One `recv(2)` on `fd` with `flags` (`MSG_DONTWAIT`: a look that never sleeps, whatever the
/// descriptor's mode).
fn recv_flags(fd: i32, buf: &mut [u8], flags: libc::c_int) -> std::io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the duration of the call.
    let r = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

fn io_err(what: &str) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

fn udp(a: &PeerArgs) -> Result<(), String> {
    if a.kind == "udpmt" {
        // A second thread that never runs (kind `udpmt`): the process is multi-threaded, as
        // every partition is, so the kernel takes a file reference in each socket call.
        std::thread::Builder::new()
            .name("idle".into())
            .spawn(|| loop {
                std::thread::park();
            })
            .map_err(io_err("spawn the idle thread"))?;
    }
    // SAFETY: the bench hands descriptor PEER_FD (a connected UDP socket), and for `udp2`
    // PEER_RX_FD (another one), to this process only.
    let s = unsafe { UdpSocket::from_raw_fd(PEER_FD) };
    let rx = if a.kind == "udp2" {
        // SAFETY: as above.
        unsafe { UdpSocket::from_raw_fd(PEER_RX_FD) }
    } else {
        s.try_clone().map_err(io_err("dup"))?
    };
    udp_on(a, &s, &rx)
}

/// The UDP ping-pong: send on `s`, receive on `rx` (the same socket, or one per direction).
/// Every datagram must be the awaited message, whole ([`check_msg`]).
fn udp_on(a: &PeerArgs, s: &UdpSocket, rx: &UdpSocket) -> Result<(), String> {
    let nonblocking = !a.wait.blocking_socket();
    s.set_nonblocking(nonblocking)
        .map_err(io_err("nonblocking"))?;
    rx.set_nonblocking(nonblocking)
        .map_err(io_err("nonblocking"))?;
    let mut msg = vec![0x5au8; a.size];
    // Room for more than a message: a longer datagram shows as longer, not cut to the size.
    let mut buf = vec![0u8; a.size + 8];
    let recv = |buf: &mut [u8]| -> Result<usize, String> {
        let mut k = 0;
        loop {
            match recv_flags(rx.as_raw_fd(), buf, a.wait.recv_flags(k)) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("recv: {e}")),
            }
            k += 1;
        }
    };
    match a.role.as_str() {
        "ping" => {
            let samples = time_rounds(a, |i| {
                stamp(&mut msg, i);
                s.send(&msg).map_err(io_err("send"))?;
                let n = recv(&mut buf)?;
                check_msg(&buf[..n], a.size, i)
            })?;
            print_samples(&samples)
        }
        "pong" => {
            let mut sw = EchoSwitches::new(a);
            for i in 1..=a.warmup + a.iters {
                sw.before(i);
                let n = recv(&mut buf)?;
                check_msg(&buf[..n], a.size, i)?;
                s.send(&buf[..n]).map_err(io_err("send"))?;
            }
            sw.print()
        }
        r => Err(format!("unknown role {r}")),
    }
}

fn tcp(a: &PeerArgs) -> Result<(), String> {
    // SAFETY: the bench hands descriptor PEER_FD (a connected TCP socket), and for `tcp2`
    // PEER_RX_FD (another one), to this process only.
    let s = unsafe { TcpStream::from_raw_fd(PEER_FD) };
    let rx = if a.kind == "tcp2" {
        // SAFETY: as above.
        unsafe { TcpStream::from_raw_fd(PEER_RX_FD) }
    } else {
        s.try_clone().map_err(io_err("dup"))?
    };
    tcp_on(a, s, rx)
}

/// The TCP ping-pong: write on `s`, read on `rx` (the same connection, or one per direction);
/// every message read must be the awaited one ([`check_msg`]).
fn tcp_on(a: &PeerArgs, mut s: TcpStream, mut rx: TcpStream) -> Result<(), String> {
    s.set_nodelay(true).map_err(io_err("nodelay"))?;
    let nonblocking = !a.wait.blocking_socket();
    s.set_nonblocking(nonblocking)
        .map_err(io_err("nonblocking"))?;
    rx.set_nonblocking(nonblocking)
        .map_err(io_err("nonblocking"))?;
    let mut msg = vec![0x5au8; a.size];
    let mut buf = vec![0u8; a.size];
    let read_msg = |s: &mut TcpStream, buf: &mut [u8]| -> Result<(), String> {
        let mut got = 0;
        let mut k = 0;
        while got < buf.len() {
            match recv_flags(s.as_raw_fd(), &mut buf[got..], a.wait.recv_flags(k)) {
                Ok(0) => return Err("peer closed".into()),
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read: {e}")),
            }
            k += 1;
        }
        Ok(())
    };
    let write_msg = |s: &mut TcpStream, msg: &[u8]| -> Result<(), String> {
        let mut put = 0;
        while put < msg.len() {
            match s.write(&msg[put..]) {
                Ok(n) => put += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("write: {e}")),
            }
        }
        Ok(())
    };
    match a.role.as_str() {
        "ping" => {
            let samples = time_rounds(a, |i| {
                stamp(&mut msg, i);
                write_msg(&mut s, &msg)?;
                read_msg(&mut rx, &mut buf)?;
                check_msg(&buf, a.size, i)
            })?;
            print_samples(&samples)
        }
        "pong" => {
            let mut sw = EchoSwitches::new(a);
            for i in 1..=a.warmup + a.iters {
                sw.before(i);
                read_msg(&mut rx, &mut buf)?;
                check_msg(&buf, a.size, i)?;
                write_msg(&mut s, &buf)?;
            }
            sw.print()
        }
        r => Err(format!("unknown role {r}")),
    }
}

fn qraw(a: &PeerArgs) -> Result<(), String> {
    let r = inherited_region()?;
    let n = a.iters;
    match a.role.as_str() {
        "send" => {
            let mut p = RingProducer::attach(r, 0).map_err(|e| format!("ring: {e}"))?;
            if a.kind == "qrawb" {
                return batch_send(n, |msgs| {
                    // Stamp 0: no clock read (a port's push reads one: part of what it adds).
                    match p.push_many_quiet_stamped(msgs, QUEUE_DEPTH as usize, 0) {
                        Ok(k) => Ok(k),
                        Err(PushError::Full) => Ok(0),
                        Err(e) => Err(format!("push: {e}")),
                    }
                });
            }
            let mut msg = [7u8; QUEUE_MSG];
            // `qrawf`: a full fence after every push (what a port call's lock, unlock or wake-up
            // check costs the stream: x86 drains its store buffer); `qraws`: stores to a local
            // array before every push (L1 hits, but x86 commits stores in order).
            let fence = a.kind == "qrawf";
            let stores = if a.kind == "qraws" {
                QUEUE_EXTRA_STORES
            } else {
                0
            };
            let mut scratch = [0u64; QUEUE_EXTRA_STORES];
            for i in 0..n {
                put_seq(&mut msg, i);
                for w in scratch.iter_mut().take(stores) {
                    // SAFETY: `w` is a valid, aligned `&mut u64`; volatile so the stores stay.
                    unsafe { std::ptr::write_volatile(w, i) };
                }
                loop {
                    match p.try_push_quiet_stamped(&msg, 0) {
                        Ok(()) => break,
                        Err(PushError::Full) => std::hint::spin_loop(),
                        Err(e) => return Err(format!("push: {e}")),
                    }
                }
                if fence {
                    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
                }
            }
            Ok(())
        }
        "recv" => {
            let mut c = RingConsumer::attach(r, 0).map_err(|e| format!("ring: {e}"))?;
            if a.kind == "qrawb" {
                let rate = batch_recv(n, |out, lens| match c.try_pop_many(out, QUEUE_MSG, lens) {
                    Ok(k) => Ok(k),
                    Err(partix_shm::ring::PopError::Empty) => Ok(0),
                    Err(e) => Err(format!("pop: {e}")),
                })?;
                println!("rate {rate}");
                return Ok(());
            }
            let mut buf = [0u8; QUEUE_MSG];
            let pauses = if a.kind == "qrawk" { QUEUE_BACKOFF } else { 1 };
            let rate = receive_rate(n, |i| {
                loop {
                    match c.try_pop(&mut buf) {
                        Ok(_) => break,
                        Err(partix_shm::ring::PopError::Empty) => {
                            for _ in 0..pauses {
                                std::hint::spin_loop();
                            }
                        }
                        Err(e) => return Err(format!("pop: {e}")),
                    }
                }
                check_order(&buf, i)
            })?;
            println!("rate {rate}");
            Ok(())
        }
        r => Err(format!("unknown role {r}")),
    }
}

/// One non-blocking `send(2)` of `b` on `fd`; return the bytes taken (0: the socket is full).
fn send_some(fd: i32, b: &[u8]) -> Result<usize, String> {
    loop {
        // SAFETY: `b` is valid for reads of `b.len()` bytes for the duration of the call.
        let r = unsafe {
            libc::send(
                fd,
                b.as_ptr().cast(),
                b.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if r >= 0 {
            return Ok(r as usize);
        }
        match std::io::Error::last_os_error() {
            e if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(0),
            e if e.kind() == std::io::ErrorKind::Interrupted => {}
            e => return Err(format!("send: {e}")),
        }
    }
}

/// Send all of `b` on `fd`, spinning while the socket is full (a datagram goes whole or not at
/// all; a stream may take part of it).
fn send_all(fd: i32, b: &[u8]) -> Result<(), String> {
    let mut off = 0;
    while off < b.len() {
        match send_some(fd, &b[off..])? {
            0 => std::hint::spin_loop(),
            n => off += n,
        }
    }
    Ok(())
}

/// Receive what is there on `fd` into `buf` without waiting; return its length (0: nothing).
fn recv_some(fd: i32, buf: &mut [u8]) -> Result<usize, String> {
    loop {
        match recv_flags(fd, buf, libc::MSG_DONTWAIT) {
            Ok(0) if !buf.is_empty() => return Err("the peer closed the connection".into()),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(0),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("recv: {e}")),
        }
    }
}

/// The raw socket baselines of the udp and tcp queuing ports (kinds `qudp`, `qtcp`): the same
/// flow control as the ports' (credit of [`QUEUE_DEPTH`] messages, a cumulative count back
/// every half of it), with plain 64-byte messages and no framing.
fn qsock(a: &PeerArgs) -> Result<(), String> {
    let fd = PEER_FD;
    let tcp = a.kind == "qtcp";
    if tcp {
        // SAFETY: the bench hands descriptor PEER_FD (a connected TCP socket) to this process
        // only; `ManuallyDrop` leaves it open.
        let s = std::mem::ManuallyDrop::new(unsafe { TcpStream::from_raw_fd(fd) });
        s.set_nodelay(true).map_err(io_err("nodelay"))?;
    }
    let n = a.iters;
    let half = u64::from(QUEUE_DEPTH / 2);
    match a.role.as_str() {
        "send" => {
            let mut msg = [7u8; QUEUE_MSG];
            let (mut sent, mut acked) = (0u64, 0u64);
            // Counts coming back: datagrams of 8 bytes, or 8-byte words in the stream.
            let mut acks = [0u8; 4096];
            let mut have = 0usize;
            for i in 0..n {
                put_seq(&mut msg, i);
                while sent - acked >= u64::from(QUEUE_DEPTH) {
                    let got = recv_some(fd, &mut acks[have..])?;
                    if got == 0 {
                        std::hint::spin_loop();
                        continue;
                    }
                    have += got;
                    let whole = have - have % 8;
                    for w in acks[..whole].chunks_exact(8) {
                        acked = acked.max(seq_of(w));
                    }
                    acks.copy_within(whole..have, 0);
                    have -= whole;
                }
                send_all(fd, &msg)?;
                sent += 1;
            }
            Ok(())
        }
        "recv" => {
            // A datagram is one message; the stream is read in large pieces, as a raw reader
            // of a stream would.
            let mut buf = vec![0u8; if tcp { 64 << 10 } else { QUEUE_MSG }];
            let (mut off, mut len) = (0usize, 0usize);
            let mut consumed = 0u64;
            let rate = receive_rate(n, |i| {
                let msg = if tcp {
                    while len - off < QUEUE_MSG {
                        buf.copy_within(off..len, 0);
                        len -= off;
                        off = 0;
                        let got = recv_some(fd, &mut buf[len..])?;
                        if got == 0 {
                            std::hint::spin_loop();
                        }
                        len += got;
                    }
                    off += QUEUE_MSG;
                    &buf[off - QUEUE_MSG..off]
                } else {
                    loop {
                        match recv_some(fd, &mut buf)? {
                            0 => std::hint::spin_loop(),
                            QUEUE_MSG => break,
                            k => return Err(format!("a datagram of {k} bytes")),
                        }
                    }
                    &buf[..]
                };
                check_order(msg, i)?;
                consumed += 1;
                if consumed.is_multiple_of(half) {
                    send_all(fd, &consumed.to_le_bytes())?;
                }
                Ok(())
            })?;
            println!("rate {rate}");
            Ok(())
        }
        r => Err(format!("unknown role {r}")),
    }
}

fn check_order(buf: &[u8], i: u64) -> Result<(), String> {
    if seq_of(buf) == i {
        Ok(())
    } else {
        Err(format!("message {i} carries {}", seq_of(buf)))
    }
}

/// Send messages `0..n` (sequence numbers in the first word) in batches of up to
/// [`QUEUE_BATCH`] with `send(batch)`, which returns how many it took (0: full, try again).
fn batch_send(
    n: u64,
    mut send: impl FnMut(&[&[u8]]) -> Result<usize, String>,
) -> Result<(), String> {
    let mut msgs = vec![[7u8; QUEUE_MSG]; QUEUE_BATCH];
    let mut next = 0u64;
    while next < n {
        let k = (n - next).min(QUEUE_BATCH as u64) as usize;
        for (j, m) in msgs.iter_mut().take(k).enumerate() {
            put_seq(m, next + j as u64);
        }
        let refs: Vec<&[u8]> = msgs[..k].iter().map(|m| &m[..]).collect();
        let mut off = 0;
        while off < k {
            match send(&refs[off..])? {
                0 => std::hint::spin_loop(),
                got => off += got,
            }
        }
        next += k as u64;
    }
    Ok(())
}

/// Receive `n` messages in batches of up to [`QUEUE_BATCH`] with `recv(out, lens)` (message `i`
/// at `out[i * QUEUE_MSG..]`; returns how many, 0 when empty), checking their order; return
/// messages per second from the first to the last.
fn batch_recv(
    n: u64,
    mut recv: impl FnMut(&mut [u8], &mut [usize]) -> Result<usize, String>,
) -> Result<f64, String> {
    let mut out = vec![0u8; QUEUE_BATCH * QUEUE_MSG];
    let mut lens = [0usize; QUEUE_BATCH];
    let mut i = 0u64;
    let mut start = None;
    while i < n {
        let k = recv(&mut out, &mut lens)?;
        if k == 0 {
            std::hint::spin_loop();
            continue;
        }
        if start.is_none() {
            start = Some(Instant::now());
        }
        for j in 0..k {
            check_order(&out[j * QUEUE_MSG..j * QUEUE_MSG + lens[j]], i)?;
            i += 1;
        }
    }
    let secs = start.map_or(0.0, |s| s.elapsed().as_secs_f64());
    Ok(if n > 1 && secs > 0.0 {
        (n - 1) as f64 / secs
    } else {
        0.0
    })
}

/// Receive `n` messages with `one(i)`; return messages per second from the first to the last.
fn receive_rate(n: u64, mut one: impl FnMut(u64) -> Result<(), String>) -> Result<f64, String> {
    let mut start = None;
    for i in 0..n {
        one(i)?;
        if i == 0 {
            start = Some(Instant::now());
        }
    }
    let secs = start.map_or(0.0, |s| s.elapsed().as_secs_f64());
    Ok(if n > 1 && secs > 0.0 {
        (n - 1) as f64 / secs
    } else {
        0.0
    })
}

// ------------------------------------------------------------------------------------ APEX kinds

static ARGS: OnceLock<PeerArgs> = OnceLock::new();

fn apex_err(what: &str) -> impl Fn(ApexError) -> String + '_ {
    move |e| format!("{what}: {e:?} (RETURN_CODE {})", e.return_code())
}

fn apex_main(a: PeerArgs) -> Result<(), String> {
    let _ = ARGS.set(a.clone());
    let q = a.kind.starts_with("qapex");
    if a.kind == "qrtt" {
        return qrtt_main(a);
    }
    match (q, a.role.as_str()) {
        (false, "ping") => {
            create_sampling_port("PING", a.size as u32, PortDirection::Source, REFRESH_NS)
                .map_err(apex_err("CREATE_SAMPLING_PORT PING"))?;
            create_sampling_port(
                "PONG",
                a.size as u32,
                PortDirection::Destination,
                REFRESH_NS,
            )
            .map_err(apex_err("CREATE_SAMPLING_PORT PONG"))?;
        }
        (false, "pong") => {
            create_sampling_port(
                "PING",
                a.size as u32,
                PortDirection::Destination,
                REFRESH_NS,
            )
            .map_err(apex_err("CREATE_SAMPLING_PORT PING"))?;
            create_sampling_port("PONG", a.size as u32, PortDirection::Source, REFRESH_NS)
                .map_err(apex_err("CREATE_SAMPLING_PORT PONG"))?;
        }
        (true, "send") => {
            create_queuing_port(
                "QOUT",
                QUEUE_MSG as u32,
                QUEUE_DEPTH,
                PortDirection::Source,
                QueuingDiscipline::Fifo,
            )
            .map_err(apex_err("CREATE_QUEUING_PORT QOUT"))?;
        }
        (true, "recv") => {
            let id = create_queuing_port(
                "QIN",
                QUEUE_MSG as u32,
                QUEUE_DEPTH,
                PortDirection::Destination,
                QueuingDiscipline::Fifo,
            )
            .map_err(apex_err("CREATE_QUEUING_PORT QIN"))?;
            set_queuing_port_recv_mode(id, RecvMode::Spin)
                .map_err(apex_err("set_queuing_port_recv_mode"))?;
        }
        (_, r) => return Err(format!("unknown role {r}")),
    }
    if !q && a.wait != Wait::Poll {
        // The block class sleeps in the kernel while it waits, the spin class busy-waits, the
        // park class uses the runtime's default (spin, then park).
        let dest = if a.role == "ping" { "PONG" } else { "PING" };
        let id = get_sampling_port_id(dest).map_err(apex_err("GET_SAMPLING_PORT_ID"))?;
        let mode = match a.wait {
            Wait::Block => RecvMode::Blocking,
            Wait::Park => DEFAULT_RECV_MODE,
            Wait::Spin | Wait::Poll => RecvMode::Spin,
        };
        set_sampling_port_recv_mode(id, mode).map_err(apex_err("set_sampling_port_recv_mode"))?;
    }
    start_process_and_run()
}

/// Create and start the partition's communicating process, then enter NORMAL (returns only on
/// failure).
fn start_process_and_run() -> Result<(), String> {
    let pid = create_process(&ProcessAttributes {
        name: "rtt".into(),
        entry_point: apex_process,
        stack_size: 0,
        base_priority: APEX_PRIORITY,
        period: INFINITE_TIME_VALUE,
        time_capacity: INFINITE_TIME_VALUE,
        deadline: Deadline::Soft,
    })
    .map_err(apex_err("CREATE_PROCESS"))?;
    start(pid).map_err(apex_err("START"))?;
    Err(set_partition_mode(OperatingMode::Normal)
        .map_err(apex_err("SET_PARTITION_MODE(NORMAL)"))
        .err()
        .unwrap_or_else(|| "SET_PARTITION_MODE(NORMAL) returned".into()))
}

/// The partition's aperiodic communicating process.
extern "C" fn apex_process() {
    let a = ARGS.get().expect("set before NORMAL").clone();
    let r = match (a.kind.as_str(), a.role.as_str()) {
        ("apex", "ping") => apex_ping(&a, Api::Rust).and_then(|s| print_samples(&s)),
        ("apex", "pong") => apex_pong(&a, Api::Rust),
        ("apexc", "ping") => apex_ping(&a, Api::C).and_then(|s| print_samples(&s)),
        ("apexc", "pong") => apex_pong(&a, Api::C),
        ("qrtt", "ping") => qrtt_ping(&a).and_then(|s| print_samples(&s)),
        ("qrtt", "pong") => qrtt_pong(&a),
        ("qapex", "send") => apex_send(&a),
        ("qapex", "recv") => apex_recv(&a).map(|rate| println!("rate {rate}")),
        ("qapexb", "send") => apex_send_batched(&a),
        ("qapexb", "recv") => apex_recv_batched(&a).map(|rate| println!("rate {rate}")),
        (k, r) => Err(format!("unknown kind/role {k} {r}")),
    };
    // Last, whether the process (this thread) ran under SCHED_FIFO (APEX priority + 1).
    let r = r.and_then(|()| emit(&fifo_line()));
    let _ = std::io::stdout().flush();
    match r {
        Ok(()) => {
            let _ = set_partition_mode(OperatingMode::Idle);
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!("partix-rttpart {} {}: {e}", a.kind, a.role);
            std::process::exit(2);
        }
    }
}

/// Which API a partition's process calls the port services through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    /// `partix_runtime::partition` (what a Rust partition calls).
    Rust,
    /// The `extern "C"` functions of `partix-apex` (what a C partition calls).
    C,
}

/// The C API's sampling services, called as a C partition calls them: through the `extern "C"`
/// functions of `partix-apex` (`include/arinc653/sampling.h`, `partix_ports.h`), which check
/// their arguments, map the errors to return codes and catch panics.
mod c_api {
    use partix_apex as _;

    /// `RETURN_CODE_TYPE` values the ping-pong expects.
    pub const NO_ERROR: u32 = 0;
    pub const NO_ACTION: u32 = 1;
    pub const TIMED_OUT: u32 = 6;

    extern "C" {
        fn WRITE_SAMPLING_MESSAGE(id: i32, addr: *mut u8, len: i32, rc: *mut u32);
        fn READ_SAMPLING_MESSAGE(
            id: i32,
            addr: *mut u8,
            len: *mut i32,
            validity: *mut u32,
            rc: *mut u32,
        );
        fn PARTIX_WAIT_SAMPLING_MESSAGE(
            id: i32,
            timeout: i64,
            addr: *mut u8,
            len: *mut i32,
            validity: *mut u32,
            rc: *mut u32,
        );
    }

    /// WRITE_SAMPLING_MESSAGE; the return code.
    pub fn write(id: i32, msg: &[u8]) -> u32 {
        let mut rc = u32::MAX;
        // SAFETY: the service reads `msg.len()` bytes of `msg` (it does not write through the
        // pointer: the C prototype's MESSAGE_ADDR_TYPE is not const) and writes `rc`.
        unsafe { WRITE_SAMPLING_MESSAGE(id, msg.as_ptr().cast_mut(), msg.len() as i32, &mut rc) };
        rc
    }

    /// READ_SAMPLING_MESSAGE (`timeout` None) or PARTIX_WAIT_SAMPLING_MESSAGE into `buf`,
    /// which holds the port's maximum message size; the length, or the return code.
    pub fn read(id: i32, timeout: Option<i64>, buf: &mut [u8]) -> Result<usize, u32> {
        let (mut rc, mut len, mut validity) = (u32::MAX, 0i32, 0u32);
        // SAFETY: `buf` holds the port's maximum message size (the bench creates the port with
        // the buffer's size), which is all the service writes; the out-parameters are valid.
        unsafe {
            match timeout {
                None => {
                    READ_SAMPLING_MESSAGE(id, buf.as_mut_ptr(), &mut len, &mut validity, &mut rc)
                }
                Some(t) => PARTIX_WAIT_SAMPLING_MESSAGE(
                    id,
                    t,
                    buf.as_mut_ptr(),
                    &mut len,
                    &mut validity,
                    &mut rc,
                ),
            }
        }
        if rc == NO_ERROR {
            Ok(len as usize)
        } else {
            Err(rc)
        }
    }
}

/// WRITE_SAMPLING_MESSAGE through `api`.
fn port_write(api: Api, port: SamplingPortId, msg: &[u8]) -> Result<(), String> {
    match api {
        Api::Rust => write_sampling_message(port, msg).map_err(apex_err("WRITE_SAMPLING_MESSAGE")),
        Api::C => match c_api::write(port.0, msg) {
            c_api::NO_ERROR => Ok(()),
            rc => Err(format!("WRITE_SAMPLING_MESSAGE (C): RETURN_CODE {rc}")),
        },
    }
}

/// Wait for a message on `port` whose sequence number is `want`: READ_SAMPLING_MESSAGE in a loop
/// (`poll`), or the runtime's wait in the port's mode (`spin`, `block`), through `api`.
fn await_seq(
    a: &PeerArgs,
    api: Api,
    port: SamplingPortId,
    buf: &mut [u8],
    want: u64,
) -> Result<usize, String> {
    loop {
        let r = match api {
            Api::Rust => {
                let r = if a.wait == Wait::Poll {
                    read_sampling_message(port, buf).map(|(n, _)| n)
                } else {
                    wait_read(port, buf)
                };
                match r {
                    Ok(n) => Ok(n),
                    Err(ApexError::NoAction) | Err(ApexError::TimedOut) => Err(None),
                    Err(e) => Err(Some(apex_err("READ_SAMPLING_MESSAGE")(e))),
                }
            }
            Api::C => {
                let timeout = (a.wait != Wait::Poll).then_some(WAIT_TIMEOUT_NS);
                match c_api::read(port.0, timeout, buf) {
                    Ok(n) => Ok(n),
                    Err(c_api::NO_ACTION | c_api::TIMED_OUT) => Err(None),
                    Err(rc) => Err(Some(format!("READ_SAMPLING_MESSAGE (C): RETURN_CODE {rc}"))),
                }
            }
        };
        // The port may still hold the message before the awaited one (a READ_SAMPLING_MESSAGE
        // returns it again): wait on. Anything but the two, whole, fails the class.
        match r {
            Ok(n) => {
                let got = buf
                    .get(..n)
                    .ok_or_else(|| format!("a read returned {n} bytes"))?;
                if fresh_or_previous(got, a.size, want)? {
                    return Ok(n);
                }
                std::hint::spin_loop();
            }
            Err(None) => std::hint::spin_loop(),
            Err(Some(e)) => return Err(e),
        }
    }
}

/// Time-out of one wait of the `spin`, `park` and `block` classes.
const WAIT_TIMEOUT_NS: i64 = 1_000_000_000;

/// The `spin` and `block` classes on ports: the partix extension WAIT_SAMPLING_MESSAGE (a message
/// newer than the last one returned) in the port's receive mode ([`RecvMode::Spin`] or
/// [`RecvMode::Blocking`], so the caller sleeps in the kernel meanwhile), 1 s timeout per call.
fn wait_read(port: SamplingPortId, buf: &mut [u8]) -> ApexResult<usize> {
    wait_sampling_message(port, WAIT_TIMEOUT_NS, buf).map(|(n, _)| n)
}

fn apex_ping(a: &PeerArgs, api: Api) -> Result<Vec<u64>, String> {
    let ping = get_sampling_port_id("PING").map_err(apex_err("GET_SAMPLING_PORT_ID"))?;
    let pong = get_sampling_port_id("PONG").map_err(apex_err("GET_SAMPLING_PORT_ID"))?;
    let mut msg = vec![0x5au8; a.size];
    let mut buf = vec![0u8; a.size];
    await_seq(a, api, pong, &mut buf, 0)?;
    time_rounds(a, |i| {
        stamp(&mut msg, i);
        port_write(api, ping, &msg)?;
        await_seq(a, api, pong, &mut buf, i).map(|_| ())
    })
}

fn apex_pong(a: &PeerArgs, api: Api) -> Result<(), String> {
    let ping = get_sampling_port_id("PING").map_err(apex_err("GET_SAMPLING_PORT_ID"))?;
    let pong = get_sampling_port_id("PONG").map_err(apex_err("GET_SAMPLING_PORT_ID"))?;
    let mut buf = vec![0u8; a.size];
    stamp(&mut buf, 0);
    port_write(api, pong, &buf)?;
    let mut sw = EchoSwitches::new(a);
    for i in 1..=a.warmup + a.iters {
        sw.before(i);
        let n = await_seq(a, api, ping, &mut buf, i)?;
        port_write(api, pong, &buf[..n])?;
    }
    sw.print()
}

/// The queuing ping-pong's ports: QPING (ping → pong) and QPONG (pong → ping) of `a.size`-byte
/// messages, [`QRTT_DEPTH`] deep; the receiving port waits in the class's mode.
fn qrtt_main(a: PeerArgs) -> Result<(), String> {
    let ping_side = match a.role.as_str() {
        "ping" => true,
        "pong" => false,
        r => return Err(format!("unknown role {r}")),
    };
    let dir = |source: bool| {
        if source {
            PortDirection::Source
        } else {
            PortDirection::Destination
        }
    };
    for (name, source) in [("QPING", ping_side), ("QPONG", !ping_side)] {
        let id = create_queuing_port(
            name,
            a.size as u32,
            QRTT_DEPTH,
            dir(source),
            QueuingDiscipline::Fifo,
        )
        .map_err(apex_err("CREATE_QUEUING_PORT"))?;
        let mode = match a.wait {
            Wait::Spin => Some(RecvMode::Spin),
            Wait::Park => Some(DEFAULT_RECV_MODE),
            Wait::Block => Some(RecvMode::Blocking),
            Wait::Poll => None,
        };
        if let (false, Some(m)) = (source, mode) {
            set_queuing_port_recv_mode(id, m).map_err(apex_err("set_queuing_port_recv_mode"))?;
        }
    }
    start_process_and_run()
}

/// Receive the next message of a queuing port: RECEIVE_QUEUING_MESSAGE with time-out 0 in a loop
/// (`poll`), or one call that waits (up to 1 s) in the port's mode.
fn qrtt_recv(a: &PeerArgs, port: QueuingPortId, buf: &mut [u8]) -> Result<usize, String> {
    loop {
        let timeout = if a.wait == Wait::Poll {
            0
        } else {
            1_000_000_000
        };
        match receive_queuing_message(port, buf, timeout) {
            Ok(n) => return Ok(n),
            Err(ApexError::NotAvailable) | Err(ApexError::TimedOut) => std::hint::spin_loop(),
            Err(e) => return Err(apex_err("RECEIVE_QUEUING_MESSAGE")(e)),
        }
    }
}

fn qrtt_send(port: QueuingPortId, msg: &[u8]) -> Result<(), String> {
    // Never full (one message in flight); the time-out only covers a slow credit return.
    send_queuing_message(port, msg, 1_000_000_000).map_err(apex_err("SEND_QUEUING_MESSAGE"))
}

fn qrtt_ping(a: &PeerArgs) -> Result<Vec<u64>, String> {
    let ping = get_queuing_port_id("QPING").map_err(apex_err("GET_QUEUING_PORT_ID"))?;
    let pong = get_queuing_port_id("QPONG").map_err(apex_err("GET_QUEUING_PORT_ID"))?;
    let mut msg = vec![0x5au8; a.size];
    let mut buf = vec![0u8; a.size];
    time_rounds(a, |i| {
        stamp(&mut msg, i);
        qrtt_send(ping, &msg)?;
        let n = qrtt_recv(a, pong, &mut buf)?;
        check_msg(&buf[..n], a.size, i)
    })
}

fn qrtt_pong(a: &PeerArgs) -> Result<(), String> {
    let ping = get_queuing_port_id("QPING").map_err(apex_err("GET_QUEUING_PORT_ID"))?;
    let pong = get_queuing_port_id("QPONG").map_err(apex_err("GET_QUEUING_PORT_ID"))?;
    let mut buf = vec![0u8; a.size];
    let mut sw = EchoSwitches::new(a);
    for i in 1..=a.warmup + a.iters {
        sw.before(i);
        let n = qrtt_recv(a, ping, &mut buf)?;
        check_msg(&buf[..n], a.size, i)?;
        qrtt_send(pong, &buf[..n])?;
    }
    sw.print()
}

fn apex_send(a: &PeerArgs) -> Result<(), String> {
    let id = get_queuing_port_id("QOUT").map_err(apex_err("GET_QUEUING_PORT_ID"))?;
    let mut msg = [7u8; QUEUE_MSG];
    for i in 0..a.iters {
        put_seq(&mut msg, i);
        loop {
            match send_queuing_message(id, &msg, 0) {
                Ok(()) => break,
                Err(ApexError::NotAvailable) => std::hint::spin_loop(),
                Err(e) => return Err(apex_err("SEND_QUEUING_MESSAGE")(e)),
            }
        }
    }
    Ok(())
}

fn apex_send_batched(a: &PeerArgs) -> Result<(), String> {
    let id = get_queuing_port_id("QOUT").map_err(apex_err("GET_QUEUING_PORT_ID"))?;
    batch_send(a.iters, |msgs| match send_queuing_messages(id, msgs, 0) {
        Ok(k) => Ok(k),
        Err(ApexError::NotAvailable) => Ok(0),
        Err(e) => Err(apex_err("send_queuing_messages")(e)),
    })
}

fn apex_recv_batched(a: &PeerArgs) -> Result<f64, String> {
    let id = get_queuing_port_id("QIN").map_err(apex_err("GET_QUEUING_PORT_ID"))?;
    batch_recv(a.iters, |out, lens| {
        match receive_queuing_messages(id, out, lens, 0) {
            Ok(k) => Ok(k),
            Err(ApexError::NotAvailable) => Ok(0),
            Err(e) => Err(apex_err("receive_queuing_messages")(e)),
        }
    })
}

fn apex_recv(a: &PeerArgs) -> Result<f64, String> {
    let id = get_queuing_port_id("QIN").map_err(apex_err("GET_QUEUING_PORT_ID"))?;
    let mut buf = [0u8; QUEUE_MSG];
    receive_rate(a.iters, |i| {
        loop {
            match receive_queuing_message(id, &mut buf, 0) {
                Ok(_) => break,
                Err(ApexError::NotAvailable) => std::hint::spin_loop(),
                Err(e) => return Err(apex_err("RECEIVE_QUEUING_MESSAGE")(e)),
            }
        }
        check_order(&buf, i)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_round_trip_and_bad_ones_are_refused() {
        let a = PeerArgs {
            kind: "udp".into(),
            role: "ping".into(),
            cpu: 1,
            size: 64,
            iters: 10,
            warmup: 2,
            wait: Wait::Block,
            gap_us: 0,
        };
        assert_eq!(parse_args(&a.to_args()).unwrap(), a);
        for wait in [Wait::Spin, Wait::Poll, Wait::Park] {
            let p = PeerArgs {
                wait,
                gap_us: 250,
                ..a.clone()
            };
            assert_eq!(parse_args(&p.to_args()).unwrap(), p);
        }
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(parse_args(&s(&["udp"])).is_err());
        assert!(parse_args(&s(&["udp", "ping", "--size", "4"])).is_err());
        assert!(parse_args(&s(&["udp", "ping", "--mode", "nap"])).is_err());
        assert!(parse_args(&s(&["udp", "ping", "--gap-us", "soon"])).is_err());
        assert!(parse_args(&s(&["udp", "ping", "--cpu"])).is_err());
        assert!(parse_args(&s(&["udp", "ping", "--bogus", "1"])).is_err());
    }

    /// The park class looks without sleeping for its first `PARK_SPINS` receives, then sleeps
    /// (blocking `recv`); spin and poll never sleep, block always does.
    #[test]
    fn park_receives_spin_first_then_block() {
        let n = u64::from(PARK_SPINS);
        assert_eq!(PARK_SPINS, 2000, "the runtime's default spin budget");
        assert_eq!(Wait::Park.recv_flags(0), libc::MSG_DONTWAIT);
        assert_eq!(Wait::Park.recv_flags(n - 1), libc::MSG_DONTWAIT);
        assert_eq!(Wait::Park.recv_flags(n), 0);
        assert_eq!(Wait::Block.recv_flags(0), 0);
        for k in [0, n, 10 * n] {
            assert_eq!(Wait::Spin.recv_flags(k), libc::MSG_DONTWAIT);
            assert_eq!(Wait::Poll.recv_flags(k), libc::MSG_DONTWAIT);
        }
        assert!(Wait::Park.blocking_socket() && Wait::Block.blocking_socket());
        assert!(!Wait::Spin.blocking_socket() && !Wait::Poll.blocking_socket());
    }

    /// A park-class receive on a real socket: a datagram that is already there comes back
    /// without sleeping; one that comes later wakes the blocking `recv` the look ends in.
    #[test]
    fn a_park_receive_sleeps_only_after_its_spins() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 16];
        let spun = std::sync::atomic::AtomicBool::new(false);
        let recv = |buf: &mut [u8]| {
            let mut k = 0;
            loop {
                let flags = Wait::Park.recv_flags(k);
                if flags == 0 {
                    spun.store(true, Ordering::Release);
                }
                match recv_flags(b.as_raw_fd(), buf, flags) {
                    Ok(n) => return (n, k),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => panic!("{e}"),
                }
                k += 1;
            }
        };
        a.send(b"now").unwrap();
        // Loopback delivers at once: the first look finds it.
        assert_eq!(recv(&mut buf), (3, 0));
        assert!(!spun.load(Ordering::Acquire));
        let (n, looks) = std::thread::scope(|sc| {
            // Sent once the receiver has spun its looks: it then sleeps in `recv` (or is about
            // to), and that receive returns the datagram.
            sc.spawn(|| {
                while !spun.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
                a.send(b"later").unwrap();
            });
            recv(&mut buf)
        });
        assert_eq!(&buf[..n], b"later");
        assert_eq!(looks, u64::from(PARK_SPINS));
    }

    /// Every size the bench allows (8 up) and then some: a stamped message passes, one cut
    /// short, one longer, one with another first word and one with another last word do not.
    #[test]
    fn a_message_is_checked_by_its_length_and_both_words() {
        for size in (8..=40).chain([56, 64, 4096]) {
            for seq in [0u64, 1, 7, 0x0102_0304_0506_0708, u64::MAX - 1] {
                let mut m = vec![0x5au8; size];
                stamp(&mut m, seq);
                assert_eq!(seq_of(&m), seq, "{size}");
                check_msg(&m, size, seq).unwrap_or_else(|e| panic!("{size} {seq}: {e}"));
                assert!(check_msg(&m, size, seq + 1).is_err(), "{size}");
                // Cut short (the first 8 bytes only, or one byte less) or longer.
                let short = check_msg(&m[..8.max(size - 1)], size, seq);
                if size > 8 {
                    assert!(short.unwrap_err().contains("bytes received"), "{size}");
                }
                assert!(check_msg(&m[..8], size, seq).is_err() || size == 8);
                let mut long = m.clone();
                long.push(0);
                assert!(check_msg(&long, size, seq).is_err(), "{size}");
                // A tail that is another message's (a torn or stale copy): every size over 8
                // has a byte of the last word outside the first.
                if size > 8 {
                    let mut torn = m.clone();
                    torn[size - 1] ^= 0xff;
                    let e = check_msg(&torn, size, seq).unwrap_err();
                    assert!(e.contains("last word"), "{size}: {e}");
                }
                let mut bad_first = m.clone();
                bad_first[0] ^= 1;
                assert!(check_msg(&bad_first, size, seq).is_err(), "{size}");
            }
        }
        // Message 2 with the tail of message 1 (the first word overwritten, the rest stale).
        let mut m = vec![0u8; 64];
        stamp(&mut m, 1);
        m[..8].copy_from_slice(&2u64.to_le_bytes());
        assert!(check_msg(&m, 64, 2)
            .unwrap_err()
            .contains("its last word carries 0x1"));
    }

    /// A sampling port's read returns the awaited message or the one before it (waited past);
    /// anything else fails, whole or not.
    #[test]
    fn a_sampling_read_may_return_the_previous_message_whole_and_nothing_else() {
        let msg = |seq: u64, len: usize| {
            let mut m = vec![0u8; len];
            stamp(&mut m, seq);
            m
        };
        assert_eq!(fresh_or_previous(&msg(5, 64), 64, 5), Ok(true));
        assert_eq!(fresh_or_previous(&msg(4, 64), 64, 5), Ok(false));
        assert_eq!(fresh_or_previous(&msg(0, 16), 16, 0), Ok(true));
        assert!(fresh_or_previous(&msg(3, 64), 64, 5).is_err());
        assert!(fresh_or_previous(&msg(6, 64), 64, 5).is_err());
        // The previous message cut short, or the awaited one with a stale tail.
        assert!(fresh_or_previous(&msg(4, 63), 64, 5).is_err());
        let mut torn = msg(4, 64);
        torn[..8].copy_from_slice(&5u64.to_le_bytes());
        assert!(fresh_or_previous(&torn, 64, 5)
            .unwrap_err()
            .contains("last word"));
        assert!(fresh_or_previous(&msg(5, 8)[..8], 64, 5).is_err());
        // The flag word of the cache-line and copy kinds: the awaited number or the one before.
        assert_eq!(flag_at(5, 5), Ok(true));
        assert_eq!(flag_at(4, 5), Ok(false));
        assert!(flag_at(3, 5).is_err() && flag_at(6, 5).is_err() && flag_at(1, 0).is_err());
    }

    fn peer(kind: &str, role: &str, size: usize) -> PeerArgs {
        PeerArgs {
            kind: kind.into(),
            role: role.into(),
            cpu: 0,
            size,
            iters: 3,
            warmup: 0,
            wait: Wait::Spin,
            gap_us: 0,
        }
    }

    /// Run one end in a thread; its result comes on the receiver.
    fn run_end(
        f: impl FnOnce() -> Result<(), String> + Send + 'static,
    ) -> std::sync::mpsc::Receiver<Result<(), String>> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx
    }

    /// The end's error (a guard against a peer that waits on forever, as one that retried a bad
    /// message did: not a timing).
    fn failure(rx: std::sync::mpsc::Receiver<Result<(), String>>) -> String {
        match rx.recv_timeout(std::time::Duration::from_secs(60)) {
            Ok(r) => r.expect_err("the end must fail"),
            Err(_) => panic!("the end did not report the bad message"),
        }
    }

    fn udp_pair() -> (UdpSocket, UdpSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        (a, b)
    }

    /// The udp pong gets message 1 with a stale last word, or cut to its first 8 bytes: it fails
    /// naming what is wrong (it used to take any datagram with the right first word).
    #[test]
    fn a_udp_pong_fails_on_a_wrong_last_word_or_a_short_datagram() {
        for short in [false, true] {
            let (a, b) = udp_pair();
            let end = run_end(move || {
                let rx = b.try_clone().unwrap();
                udp_on(&peer("udp", "pong", 64), &b, &rx)
            });
            let mut m = vec![0u8; 64];
            stamp(&mut m, 1);
            if short {
                a.send(&m[..8]).unwrap();
            } else {
                m[56..].copy_from_slice(&0u64.to_le_bytes());
                a.send(&m).unwrap();
            }
            let e = failure(end);
            let want = if short {
                "message 1: 8 bytes received, the message has 64"
            } else {
                "message 1: its last word carries 0x0, not 0x1"
            };
            assert!(e.contains(want), "{e}");
        }
    }

    /// The udp ping stamps both words of its message, and fails on an echo with a stale tail.
    #[test]
    fn a_udp_ping_stamps_both_words_and_fails_on_a_torn_echo() {
        let (a, b) = udp_pair();
        let end = run_end(move || {
            let rx = a.try_clone().unwrap();
            udp_on(&peer("udp", "ping", 24), &a, &rx)
        });
        let mut buf = [0u8; 64];
        let n = b.recv(&mut buf).unwrap();
        check_msg(&buf[..n], 24, 1).unwrap();
        assert_eq!(&buf[16..24], &1u64.to_le_bytes());
        buf[20] = 0xee;
        b.send(&buf[..n]).unwrap();
        let e = failure(end);
        assert!(e.contains("message 1: its last word carries"), "{e}");
    }

    /// The tcp pong reads a whole message whose tail is stale and fails.
    #[test]
    fn a_tcp_pong_fails_on_a_wrong_last_word() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let end = run_end(move || {
            let rx = b.try_clone().unwrap();
            tcp_on(&peer("tcp", "pong", 4096), b, rx)
        });
        let mut m = vec![0u8; 4096];
        stamp(&mut m, 1);
        m[4088..].copy_from_slice(&9u64.to_le_bytes());
        a.write_all(&m).unwrap();
        let e = failure(end);
        assert!(e.contains("message 1: its last word carries 0x9"), "{e}");
    }

    /// The shared-memory kinds: a copy whose first word is right and whose tail is stale fails
    /// the copy pong; a flag word at neither the awaited number nor the one before fails the
    /// cache-line pong; a message of 10 bytes in a 64-byte slot fails the slot pong.
    #[test]
    fn shared_memory_pongs_fail_on_a_torn_copy_a_wrong_flag_or_a_short_message() {
        // copy: ping's flag at 0, its data at 64.
        let r = Arc::new(Region::create("partix-rtt-test-copy", copy_region_len(64)).unwrap());
        let end = run_end({
            let r = r.clone();
            move || copy(&peer("copy", "pong", 64), &r)
        });
        let mut m = vec![0u8; 64];
        stamp(&mut m, 1);
        m[60] = 0x42;
        // SAFETY: the region has copy_region_len(64) bytes; the data of the ping direction
        // starts at 64, its flag (an AtomicU64, only used as one) at 0.
        let flag = unsafe {
            std::ptr::copy_nonoverlapping(m.as_ptr(), r.as_ptr().add(64), 64);
            &*r.as_ptr().cast::<AtomicU64>()
        };
        flag.store(1, Ordering::Release);
        let e = failure(end);
        assert!(e.contains("message 1: its last word carries"), "{e}");

        // cache: the ping word jumps to 5 while the pong awaits 1.
        let r = Arc::new(Region::create("partix-rtt-test-cache", 4096).unwrap());
        let end = run_end({
            let r = r.clone();
            move || cache(&peer("cache", "pong", 8), &r)
        });
        // SAFETY: offset 0 of the page-aligned region, only used as an AtomicU64.
        unsafe { &*r.as_ptr().cast::<AtomicU64>() }.store(5, Ordering::Release);
        let e = failure(end);
        assert!(e.contains("message 1: the flag word carries 5"), "{e}");

        // slot: the ping's slot (offset 0) holds message 1 cut to 10 bytes.
        use partix_shm::sampling::{SamplingLayout, SamplingWriter};
        let r = Arc::new(Region::create("partix-rtt-test-slot", slot_region_len(64)).unwrap());
        let mut w = SamplingWriter::init(r.clone(), 0, SamplingLayout::new(64).unwrap()).unwrap();
        let end = run_end({
            let r = r.clone();
            move || slot(&peer("slot", "pong", 64), r)
        });
        let mut m = vec![0u8; 10];
        stamp(&mut m, 1);
        w.write_stamped(&m, partix_shm::clock::now_ns()).unwrap();
        let e = failure(end);
        assert!(
            e.contains("message 1: 10 bytes received, the message has 64"),
            "{e}"
        );
    }

    /// The raw futex ping-pong between two threads over a region: in the block class every wait
    /// goes to sleep unless the message is already there, and the park class spins first; both
    /// deliver every message whole (each end checks it), in both sizes whose words overlap or
    /// not. A pong given a torn copy fails.
    #[test]
    fn the_futex_ping_pong_delivers_and_refuses_a_torn_copy() {
        for (wait, size) in [(Wait::Block, 12), (Wait::Park, 64), (Wait::Block, 4096)] {
            let r =
                Arc::new(Region::create("partix-rtt-test-futex", copy_region_len(size)).unwrap());
            let args = |role: &str| PeerArgs {
                iters: 300,
                warmup: 10,
                wait,
                ..peer("futex", role, size)
            };
            let pong = run_end({
                let (r, a) = (r.clone(), args("pong"));
                move || futex(&a, &r)
            });
            let ping = run_end({
                let (r, a) = (r.clone(), args("ping"));
                move || futex(&a, &r)
            });
            for end in [ping, pong] {
                match end.recv_timeout(std::time::Duration::from_secs(120)) {
                    Ok(r) => r.unwrap_or_else(|e| panic!("{wait:?} {size}: {e}")),
                    Err(_) => panic!("{wait:?} {size}: the ping-pong did not finish"),
                }
            }
        }
        let r = Arc::new(Region::create("partix-rtt-test-futex", copy_region_len(64)).unwrap());
        let end = run_end({
            let r = r.clone();
            move || {
                futex(
                    &PeerArgs {
                        wait: Wait::Block,
                        ..peer("futex", "pong", 64)
                    },
                    &r,
                )
            }
        });
        let mut m = vec![0u8; 64];
        stamp(&mut m, 1);
        m[63] = 0x77;
        // SAFETY: the region has copy_region_len(64) bytes; the ping direction's data starts at
        // 64, its flag (an AtomicU32, only used as one and as a futex word) at 0.
        let flag = unsafe {
            std::ptr::copy_nonoverlapping(m.as_ptr(), r.as_ptr().add(64), 64);
            &*r.as_ptr().cast::<AtomicU32>()
        };
        if flag.swap(1, Ordering::Release) & FUTEX_WAITING != 0 {
            partix_shm::futex::wake(flag, 1);
        }
        let e = failure(end);
        assert!(e.contains("message 1: its last word carries"), "{e}");
    }

    /// A peer's `# fifo` line says what its thread runs under: 0 for a thread that never asked
    /// (or was refused), 1 once SCHED_FIFO applied.
    #[test]
    fn the_fifo_line_tells_what_applied() {
        let (other, asked, fifo) = std::thread::spawn(|| {
            let p = libc::sched_param { sched_priority: 0 };
            // SAFETY: p is a valid sched_param; pid 0 = this (new) thread.
            let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) };
            assert_eq!(r, 0);
            let other = fifo_line();
            let asked = set_fifo(1);
            (other, asked, fifo_line())
        })
        .join()
        .unwrap();
        assert_eq!(other, "# fifo 0\n");
        assert_eq!(fifo, format!("# fifo {}\n", u8::from(asked)));
    }

    #[test]
    fn sequence_numbers_are_little_endian_in_the_first_word() {
        let mut b = [0u8; 16];
        put_seq(&mut b, 0x0102);
        assert_eq!(b[0], 2);
        assert_eq!(seq_of(&b), 0x0102);
        assert_eq!(seq_of(&b[..4]), u64::MAX);
    }
}
