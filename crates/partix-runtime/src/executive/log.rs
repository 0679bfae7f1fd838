//! The executive's log lines (HM events, mode changes), off the scheduling thread.
//!
//! A scheduling point must neither block on its log output nor fail because of it: a `write`
//! to a stderr nobody reads (a stalled pager, a terminal paused with Ctrl-S, a slow ssh link)
//! blocked the SCHED_FIFO 99 thread inside a point, which stopped every window of the module,
//! and a write to a closed one (`partix run … | head`) made `eprintln!` panic the executive
//! (found by review). So a point only pushes a fixed-size [`LogLine`] into a bounded
//! single-producer single-consumer ring ([`LogRing`]: no allocation, no lock, no system call
//! but one `FUTEX_WAKE`); a line that does not fit is dropped and counted. A thread of normal
//! priority ([`Logger`]) formats the lines and writes them to stderr, ignoring its errors;
//! only that thread ever waits for stderr.
#![allow(unsafe_code)]

use super::hm::{self, Death, Decision};
use super::mode_name;
use partix_shm::futex;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Lines the ring holds: at three lines per frame of a crash-looping partition, some frames'
/// worth while stderr is slow.
pub const LOG_RING_LINES: usize = 256;

/// Bytes of a spawn error kept in a [`LogLine::SpawnFailed`] (longer ones are cut).
pub const SPAWN_ERROR_BYTES: usize = 160;

/// One line of the executive's log, fixed-size (no allocation to make or pass it on).
#[derive(Debug, Clone, Copy)]
pub enum LogLine {
    /// Partition `p` went to mode `mode` because of `cause`.
    Mode {
        /// The partition (index).
        p: u32,
        /// The new mode.
        mode: u32,
        /// Why.
        cause: &'static str,
    },
    /// An HM event of partition `p`: its death (`None`: it did not reach NORMAL in time) and
    /// the decision.
    Hm {
        /// The partition (index).
        p: u32,
        /// How its process ended.
        death: Option<Death>,
        /// What the HM decided.
        decision: Decision,
    },
    /// Partition `p`'s health monitor asked for a module shutdown.
    ShutdownAsked {
        /// The partition (index).
        p: u32,
    },
    /// Partition `p`'s restart waits for its killed process to end.
    RestartWaits {
        /// The partition (index).
        p: u32,
    },
    /// Partition `p`'s process could not be started (the error, cut to
    /// [`SPAWN_ERROR_BYTES`]); it is IDLE.
    SpawnFailed {
        /// The partition (index).
        p: u32,
        /// The error's bytes.
        text: [u8; SPAWN_ERROR_BYTES],
        /// How many of them are used.
        len: u8,
    },
}

impl LogLine {
    /// A [`LogLine::SpawnFailed`] of partition `p` with `error` (formatted into the record
    /// without allocating, cut at a character boundary).
    pub fn spawn_failed(p: usize, error: &dyn std::fmt::Display) -> LogLine {
        /// Writes into a fixed buffer, dropping what does not fit.
        struct Cut {
            text: [u8; SPAWN_ERROR_BYTES],
            len: usize,
        }
        impl std::fmt::Write for Cut {
            fn write_str(&mut self, s: &str) -> std::fmt::Result {
                let room = SPAWN_ERROR_BYTES - self.len;
                let mut n = s.len().min(room);
                while !s.is_char_boundary(n) {
                    n -= 1;
                }
                self.text[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
                self.len += n;
                if n < s.len() {
                    // Full: stop (nothing may follow a cut).
                    return Err(std::fmt::Error);
                }
                Ok(())
            }
        }
        let mut cut = Cut {
            text: [0; SPAWN_ERROR_BYTES],
            len: 0,
        };
        let _ = std::fmt::write(&mut cut, format_args!("{error}"));
        LogLine::SpawnFailed {
            p: p as u32,
            text: cut.text,
            len: cut.len as u8,
        }
    }

    /// The line as the executive prints it (`names`: the partitions' names), without newline.
    pub fn render(&self, names: &[String]) -> String {
        let name = |p: u32| names.get(p as usize).map_or("?", String::as_str);
        match *self {
            LogLine::Mode { p, mode, cause } => {
                format!(
                    "partix: partition {} -> {} ({cause})",
                    name(p),
                    mode_name(mode)
                )
            }
            LogLine::Hm { p, death, decision } => {
                let what = death.map_or_else(
                    || "did not reach NORMAL in time".to_string(),
                    |d| d.to_string(),
                );
                format!(
                    "partix: HM: partition {} {what}: {} (level {}) -> {}{}",
                    name(p),
                    hm::code_name(decision.code),
                    hm::level_name(decision.level),
                    decision.action.name(),
                    if decision.from_table {
                        ""
                    } else {
                        " (no HM table entry: default)"
                    }
                )
            }
            LogLine::ShutdownAsked { p } => format!(
                "partix: HM: partition {}: module SHUTDOWN asked for by its health monitor",
                name(p)
            ),
            LogLine::RestartWaits { p } => format!(
                "partix: partition {}: its killed process has not ended yet; its restart waits \
                 for that",
                name(p)
            ),
            LogLine::SpawnFailed { text, len, .. } => format!(
                "partix: {}; the partition is IDLE",
                String::from_utf8_lossy(&text[..len as usize])
            ),
        }
    }
}

/// A bounded ring of [`LogLine`]s: one producer (the scheduling thread), one consumer (the
/// [`Logger`] thread).
pub struct LogRing {
    slots: Box<[UnsafeCell<MaybeUninit<LogLine>>]>,
    /// Lines pushed (the producer's index; only the producer stores it).
    head: AtomicU64,
    /// Lines taken (the consumer's index; only the consumer stores it).
    tail: AtomicU64,
    /// Lines dropped because the ring was full.
    dropped: AtomicU64,
    /// Bumped at every push and at close: the consumer's futex word.
    bell: AtomicU32,
    /// No more lines come: the consumer drains what is left and ends.
    closed: AtomicBool,
}

// SAFETY: a slot is written only by the single producer while it is outside [tail, head) and
// read only by the single consumer while inside it; head and tail are published with
// Release and read with Acquire, so each slot access happens-after the other side's last one.
unsafe impl Sync for LogRing {}
// SAFETY: as for Sync; LogLine is Send.
unsafe impl Send for LogRing {}

impl LogRing {
    /// A ring of `capacity` lines (allocated now, once).
    pub fn new(capacity: usize) -> LogRing {
        LogRing {
            slots: (0..capacity.max(1))
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            bell: AtomicU32::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// Push `line` (producer only): never blocks, never allocates; a line that does not fit is
    /// dropped and counted. Wakes the consumer.
    pub fn push(&self, line: LogLine) {
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        if head - tail >= self.slots.len() as u64 {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let slot = &self.slots[(head % self.slots.len() as u64) as usize];
        // SAFETY: the slot is outside [tail, head): the consumer does not read it (see Sync).
        unsafe { (*slot.get()).write(line) };
        self.head.store(head + 1, Ordering::Release);
        self.bell.fetch_add(1, Ordering::Release);
        futex::wake(&self.bell, 1);
    }

    /// Take the oldest line (consumer only).
    fn pop(&self) -> Option<LogLine> {
        let tail = self.tail.load(Ordering::Relaxed);
        if tail == self.head.load(Ordering::Acquire) {
            return None;
        }
        let slot = &self.slots[(tail % self.slots.len() as u64) as usize];
        // SAFETY: the slot is inside [tail, head): written by the producer before its Release
        // store of head, and not written again until tail moves past it.
        let line = unsafe { (*slot.get()).assume_init_read() };
        self.tail.store(tail + 1, Ordering::Release);
        Some(line)
    }

    /// Lines dropped so far because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// No more lines will be pushed.
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.bell.fetch_add(1, Ordering::Release);
        futex::wake(&self.bell, 1);
    }
}

/// Write `bytes` to descriptor 2, whatever it is; errors (a closed pipe, a full
/// non-blocking one) are ignored. A raw `write`, not `std::io::stderr()`: its lock, held by a
/// write that blocks here, would also block every other thread's `eprintln!`.
fn write_stderr(mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: a valid buffer of its length.
        let n = unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
        if n > 0 {
            bytes = &bytes[n as usize..];
        } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {
            continue;
        } else {
            return;
        }
    }
}

/// The thread that writes the executive's log lines to stderr.
pub struct Logger {
    ring: Arc<LogRing>,
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Logger {
    /// Start the thread for `ring` (`names`: the partitions' names). Start it before the
    /// calling thread becomes real-time: it should be a normal task (it also makes itself one).
    pub fn start(ring: Arc<LogRing>, names: Vec<String>) -> Logger {
        let done = Arc::new(AtomicBool::new(false));
        let (r, d) = (ring.clone(), done.clone());
        let thread = std::thread::Builder::new()
            .name("partix-log".into())
            .spawn(move || {
                super::os::become_normal_task();
                loop {
                    let bell = r.bell.load(Ordering::Acquire);
                    while let Some(line) = r.pop() {
                        let mut s = line.render(&names);
                        s.push('\n');
                        write_stderr(s.as_bytes());
                    }
                    if r.closed.load(Ordering::Acquire) {
                        break;
                    }
                    futex::wait(&r.bell, bell, Some(Duration::from_millis(200)));
                }
                d.store(true, Ordering::Release);
            })
            .ok();
        Logger { ring, done, thread }
    }

    /// End the thread once it has written what is left, waiting for that at most `limit` (a
    /// stderr nobody reads keeps it blocked: it is then left behind, and the process's end
    /// ends it). Return the number of lines dropped because the ring was full.
    pub fn finish(mut self, limit: Duration) -> u64 {
        self.ring.close();
        let t0 = std::time::Instant::now();
        while !self.done.load(Ordering::Acquire) && t0.elapsed() < limit {
            if self.thread.is_none() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if self.done.load(Ordering::Acquire) {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
        self.ring.dropped()
    }
}

impl Drop for Logger {
    /// The thread ends once it has written what is left (a run that ended early, without
    /// [`Logger::finish`]); it is not waited for.
    fn drop(&mut self) {
        self.ring.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_ring_drops_and_counts_and_keeps_order() {
        let ring = LogRing::new(4);
        for p in 0..6 {
            ring.push(LogLine::RestartWaits { p });
        }
        assert_eq!(ring.dropped(), 2);
        let got: Vec<u32> = std::iter::from_fn(|| ring.pop())
            .map(|l| match l {
                LogLine::RestartWaits { p } => p,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(got, [0, 1, 2, 3]);
        // Room again.
        ring.push(LogLine::RestartWaits { p: 9 });
        assert!(matches!(ring.pop(), Some(LogLine::RestartWaits { p: 9 })));
        assert!(ring.pop().is_none());
    }

    #[test]
    fn lines_render_as_before() {
        let names = vec!["A".to_string()];
        let l = LogLine::Mode {
            p: 0,
            mode: crate::state::mode::IDLE,
            cause: "HM",
        };
        assert_eq!(l.render(&names), "partix: partition A -> IDLE (HM)");
        let long = "é".repeat(200);
        let LogLine::SpawnFailed { len, .. } = LogLine::spawn_failed(0, &long) else {
            unreachable!()
        };
        assert_eq!(len as usize, SPAWN_ERROR_BYTES);
        let l = LogLine::spawn_failed(0, &"fork failed: EAGAIN");
        assert_eq!(
            l.render(&names),
            "partix: fork failed: EAGAIN; the partition is IDLE"
        );
    }
}
