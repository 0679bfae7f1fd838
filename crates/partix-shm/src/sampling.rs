//! The one-sided sampling slot: one writer overwrites a single buffer, any number of readers copy
//! the latest message out of it without ever writing, and no daemon or receiver CPU takes part in
//! delivery (the one-sided design of the RDMA sampling-port paper, over shared memory).
//!
//! # Layout (at a 64-byte aligned offset of a region; all words native-endian)
//! Messages of up to 40 bytes (`payload_words` ≤ 5) lie in one line with both flags and the
//! stamp (a *compact* slot):
//! ```text
//!  offset            field
//!  0    +---------------------------------------------+  header line (written once by init)
//!       | magic "PXSAMPL1" u64 | version u32 | max u32 |
//!       | payload_words u32 | reserved                |
//!  64   +---------------------------------------------+
//!       | begin  u64                                  |
//!  72   | payload      payload_words x u64            |
//!  E    | end    u64 | stamp  u64    (E = 72 + 8w)    |
//!  128  +---------------------------------------------+
//! ```
//! Messages of 41 to 56 bytes (`payload_words` 6 or 7) share one line with `begin`, and `end`
//! has a line of its own:
//! ```text
//!  64   +---------------------------------------------+
//!       | begin  u64   flags of the message being written / last written
//!  72   | payload      payload_words x u64 (max message size rounded up to 8)
//!  128  +---------------------------------------------+
//!       | end    u64   flags of the last completely written message
//!  136  | stamp  u64   CLOCK_MONOTONIC ns at write time
//!  192  +---------------------------------------------+
//! ```
//! Larger messages start on a line of their own, and `begin` is the header line's last word:
//! ```text
//!  0    +---------------------------------------------+  header line
//!       | magic | version | max | payload_words | ... |
//!  56   | begin  u64                                  |
//!  64   +---------------------------------------------+
//!       | payload      payload_words x u64
//!  E    +---------------------------------------------+  E = 64 + 8w rounded up to 64
//!       | end    u64 | stamp u64                      |
//!       +---------------------------------------------+  E + 64
//! ```
//! **Compact slots (version 5).** A reader that sees a new `end` finds `begin`, the stamp and
//! the payload in the line it has just fetched: one line moves per message, as in a raw
//! cache-line hand-over, instead of the `end` line and then the data line one after the other.
//! The writer's stores (`begin`, payload, stamp, `end`) wait in its store buffer for that one
//! line and commit together once it arrives, so a polling reader rarely takes the line back in
//! the middle of a write (when it does, it sees `begin != end` and retries). Measured on the
//! AMD EPYC VM of session 10, alternated runs of one build with a temporary switch, 16 B
//! one-sided round trip p50 / p99 round medians: 0.59–0.61 / 0.62–0.65 µs against 0.62–0.63 /
//! 0.77–0.78 µs with `end` in a line of its own (VM slow phase, raw cache-line 0.50 µs); in a
//! fast phase (raw 0.10 µs) 1.74 / 1.74x against 1.91 / 1.82x the raw cache-line p50
//! (`docs/shm-channels.md`).
//! Version 2 had put `end` in a line of its own because the polling reader pulled the data
//! line from the writer between its stores (16 B 0.61–0.70 µs → 0.51 µs then). That was
//! measured against a writer that copied word by word with atomic stores and stored the stamp
//! before the payload; the writer now copies with one `memcpy` and stores the stamp and `end`
//! right after it, and the measurement above is what holds today.
//!
//! A line-aligned payload is copied by whole lines and wide aligned moves: with the payload at
//! offset 72 (versions 1-3) a 1 KiB message spanned 17 lines and every other 32-byte move of
//! the copies straddled two lines (measured, Intel Xeon VM, alternated builds: one-sided 1 KiB
//! round trip 1.12-1.15 µs against 1.23-1.29 µs with the payload at 72). At ≤ 56 B `begin` stays
//! in the data line (one line fewer for the reader to fetch); above, the header line holding
//! `begin` costs the reader one more line, fetched in parallel with the payload's.
//!
//! In slots that are not compact, `end` has a cache line apart from the data: a spinning reader
//! polls only that line, which the writer stores to twice per message, back to back (the stamp,
//! then `end`), so the reader's polling never takes the line holding `begin` and the payload
//! away from a writer in the middle of a long write (with `end` in the same line as the data,
//! the line could move between the two cores once per store of the copy). A message of 41 to
//! 56 bytes is then one data line plus the `end` line, like a raw "flag + data" hand-over.
//! (Version 2 had the stamp after `begin`, in the data line, so 56 B took two data lines: one-sided
//! 56 B round trips were 0.42–0.44 µs against 0.36 µs at 16 B; version 3 moved it next to `end`;
//! version 4 aligns payloads above 56 B to a line; version 5 puts messages of up to 40 B in one
//! line.)
//! `flags = (seq << 32) | len` ([`Flags`]): a 32-bit sequence number (incremented per write,
//! wrapping) and the message length, 1..=max. Because a message is never empty, valid flags are
//! never 0, and `end == 0` means "nothing was ever written" ([`ReadError::Empty`]).
//! The fields lie in address order begin → data → end, as an RDMA write would land them; over
//! shared memory the order is enforced by fences, not by addresses.
//!
//! # Protocol
//! ```text
//! writer (single):                     reader (any number, read-only mapping):
//!   begin.store(F, Relaxed)              e = end.load(Relaxed)
//!                                        fence(Acquire)                 (R1)
//!   fence(Release)            (W1)       if e == 0 { Empty }
//!   payload, stamp: Relaxed stores       stamp, payload: Relaxed loads  (R2)
//!   end.store(F, Release)     (W2)       fence(Acquire)                 (R3)
//!                                        b = begin.load(Relaxed)
//!                                        if b == e { done } else { retry }
//! ```
//! # Why a successful read is never torn (seqlock argument, Boehm 2012)
//! Let `e = F_n`, the flags of message `n` (R1 reads from the `end` store W2 of message `n`).
//! 1. *No word is older than `n`.* W2(n) is a `Release` store read by the load of R1, which the
//!    `Acquire` fence of R1 follows (release-store / acquire-fence synchronisation), so
//!    every payload store of message `n` happens-before R2. By read-write coherence each R2 load
//!    returns the value of message `n` or of a later message `m > n`.
//! 2. *If some word is newer, the check fails.* Suppose an R2 load reads a store of message
//!    `m > n`. That store is sequenced after the `Release` fence W1(m), which is sequenced after
//!    `begin.store(F_m)`; R2 is sequenced before the `Acquire` fence R3. Fence-to-fence
//!    synchronisation makes `begin.store(F_m)` happen-before the `begin` load, which therefore
//!    returns `F_m` or a later value `F_k`, `k >= m > n`, all different from `F_n`; so `b != e`.
//! 3. Hence `b == e` implies every stamp and payload word came from message `n`, and the length
//!    comes from `e` itself.
//!
//! Flags repeat only after 2^32 writes with the same length; a reader would have to be stalled in
//! the middle of one copy for exactly that many writes to be fooled (the usual seqlock caveat).
//!
//! # The payload copies
//! The reader's copy races with the writer's by design. The slot's words are `AtomicU64`s, and
//! the stamp and flags are always accessed atomically. The payload copies differ per build:
//! - **Loom builds** (`--cfg loom`) copy with `Relaxed` 8-byte atomic loads and stores
//!   (`copy_in` / `copy_out`), so the models in `tests/loom.rs` check the protocol with every
//!   payload access visible to the model checker.
//! - **Normal builds** copy with one `memcpy` each way (`racy_copy_in` / `racy_copy_out`), which
//!   uses wide moves (measured, 4 KiB one-sided round trip: 4.1–4.7 µs against 5.9 µs with the
//!   512 scalar atomic loads and stores per direction, in the same noisy session; 1 KiB 1.65 µs
//!   against 2.0–2.6 µs). This is the classic seqlock copy: by the letter of the Rust/C++
//!   memory model a racing non-atomic access is a data race (Rust has no atomic `memcpy` yet),
//!   and that holds whether the racing side is another process or, on a loopback channel
//!   (source and destination ports in one partition), another thread of this one. What the
//!   argument rests on: the copy is one opaque `copy_nonoverlapping` of memory reachable only
//!   through atomics (`UnsafeCell`s the compiler must assume others change), placed between the
//!   fences of the protocol (W1..W2 on the writer, R1..R3 on the reader), which the compiler
//!   does not move memory accesses across; the bytes are `u8` (no invalid values); and a copy
//!   that overlapped a write is detected by the `begin` check after R3 and discarded before
//!   anyone looks at it. That a peer is another process gives no extra guarantee (until
//!   review 26 this comment said it did). Plain loads are also valid on the readers' read-only
//!   mappings.
//!
//! # Bounded work
//! A read copies at most `max` bytes per attempt and makes at most `max_attempts` attempts
//! (default [`DEFAULT_MAX_ATTEMPTS`]) before giving up with [`ReadError::Contended`]: a writer
//! writing faster than a reader can copy, or a writer killed in the middle of a write, never
//! makes a reader spin forever nor return a mixed message. A killed writer leaves `begin != end`;
//! readers report `Contended` until a restarted writer ([`SamplingWriter::attach`]) writes again.
#![allow(unsafe_code)]

#[cfg(loom)]
use crate::sync::{copy_in, copy_out};
use crate::sync::{fence, AtomicU64, Ordering};

/// Default number of copy attempts of [`SamplingReader::read`] before [`ReadError::Contended`].
pub const DEFAULT_MAX_ATTEMPTS: u32 = 64;

/// The begin/end flag word: `(seq << 32) | len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Flags(pub u64);

impl Flags {
    /// Combine a sequence number and a length.
    pub const fn new(seq: u32, len: u32) -> Flags {
        Flags(((seq as u64) << 32) | len as u64)
    }

    /// Return the sequence number.
    pub const fn seq(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// Return the message length in bytes.
    pub const fn len(self) -> u32 {
        self.0 as u32
    }

    /// Return whether the length is 0 (true only for the "never written" value 0).
    pub const fn is_empty(self) -> bool {
        self.len() == 0
    }
}

/// Outcome of one copy attempt ([`SlotView::try_read`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// Nothing was ever completely written.
    Empty,
    /// The writer changed the slot during the copy; the buffer content is garbage, retry.
    Torn,
    /// The message does not fit in the buffer.
    TooSmall {
        /// Length of the latest message.
        needed: usize,
    },
    /// The `end` flags claim a length larger than the slot (a broken writer); nothing copied.
    Corrupt,
    /// A consistent copy of message `flags` (written at `stamp`) is in `buf[..flags.len()]`.
    Done {
        /// The message's flags.
        flags: Flags,
        /// The writer's timestamp.
        stamp: u64,
    },
}

/// The algorithm's view of one slot: references to its words, wherever they live (a shared
/// region in production, heap-allocated loom atomics in the models).
#[derive(Debug, Clone, Copy)]
pub struct SlotView<'a> {
    begin: &'a AtomicU64,
    stamp: &'a AtomicU64,
    payload: &'a [AtomicU64],
    end: &'a AtomicU64,
    /// The longest message a reader accepts (the slot's configured maximum; the payload may be
    /// up to 7 bytes longer, rounded up to whole words).
    max: usize,
}

impl<'a> SlotView<'a> {
    /// Make a view from the slot's words.
    pub fn new(
        begin: &'a AtomicU64,
        stamp: &'a AtomicU64,
        payload: &'a [AtomicU64],
        end: &'a AtomicU64,
    ) -> SlotView<'a> {
        SlotView {
            begin,
            stamp,
            payload,
            end,
            max: payload.len() * 8,
        }
    }

    /// Return the view accepting messages of at most `max` bytes (at most the capacity): a
    /// length between the configured maximum and the rounded-up capacity is as impossible as
    /// one beyond it. (Taken for a message too long for the reader's buffer of `max` bytes, it
    /// made a waiting reader return its last good copy again and again.)
    pub fn with_max(mut self, max: usize) -> SlotView<'a> {
        self.max = max.min(self.payload.len() * 8);
        self
    }

    /// Make a view from `[begin, stamp, payload.., end]` laid out consecutively (at least 3 words).
    ///
    /// # Panics
    /// If `words` has fewer than 3 words.
    #[inline]
    pub fn from_words(words: &'a [AtomicU64]) -> SlotView<'a> {
        let n = words.len();
        assert!(n >= 3, "a slot needs at least 3 words");
        SlotView::new(&words[0], &words[1], &words[2..n - 1], &words[n - 1])
    }

    /// Return the payload capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.payload.len() * 8
    }

    /// Return the `begin`, `stamp` and payload words (for copies that do their own checks).
    pub(crate) fn parts(&self) -> (&'a AtomicU64, &'a AtomicU64, &'a [AtomicU64]) {
        (self.begin, self.stamp, self.payload)
    }

    /// Return the `begin` flags (diagnostics; `Relaxed`).
    pub fn begin(&self) -> Flags {
        Flags(self.begin.load(Ordering::Relaxed))
    }

    /// Return the `end` flags, with acquire semantics (0 when never written).
    ///
    /// A `Relaxed` load followed by an `Acquire` fence rather than an `Acquire` load: only
    /// `Relaxed` loads of at most 8 bytes are guaranteed to work on read-only mappings (std docs,
    /// "Atomic accesses to read-only memory"), and readers map the slot read-only.
    #[inline]
    pub fn end(&self) -> Flags {
        let e = Flags(self.end.load(Ordering::Relaxed));
        fence(Ordering::Acquire);
        e
    }

    /// Write one message (single writer only).
    ///
    /// # Panics
    /// If `data.len() != flags.len()` or the data exceeds the capacity (callers check first).
    #[inline]
    pub fn publish(&self, flags: Flags, stamp: u64, data: &[u8]) {
        assert!(data.len() == flags.len() as usize && data.len() <= self.capacity());
        self.begin.store(flags.0, Ordering::Relaxed);
        // SYNC POINT: W1, pairs with the reader's Acquire fence R3 (a reader that sees any of the
        // data below also sees this begin value).
        fence(Ordering::Release);
        racy_copy_in(self.payload, data);
        // The stamp after the payload, right before `end` in the same line: the line is taken
        // from a reader polling `end` once per write, not once for the stamp and again for
        // `end` after the payload (measured, Intel VM: one-sided 1 KiB round trip 1.20-1.31 µs
        // against 1.30-1.35 µs with the stamp stored before the payload).
        self.stamp.store(stamp, Ordering::Relaxed);
        // SYNC POINT: W2, pairs with the reader's load + Acquire fence R1 of `end`.
        self.end.store(flags.0, Ordering::Release);
    }

    /// Make one copy attempt into `buf`.
    #[inline]
    pub fn try_read(&self, buf: &mut [u8]) -> Attempt {
        // SYNC POINT: R1, pairs with the writer's Release store W2.
        let e = self.end();
        if e.0 == 0 {
            return Attempt::Empty;
        }
        let len = e.len() as usize;
        if len == 0 || len > self.max {
            return Attempt::Corrupt;
        }
        if len > buf.len() {
            return Attempt::TooSmall { needed: len };
        }
        let stamp = self.stamp.load(Ordering::Relaxed);
        racy_copy_out(self.payload, &mut buf[..len]);
        // SYNC POINT: R3, pairs with the writer's Release fence W1.
        fence(Ordering::Acquire);
        let b = self.begin.load(Ordering::Relaxed);
        if b == e.0 {
            Attempt::Done { flags: e, stamp }
        } else {
            Attempt::Torn
        }
    }

    /// Copy the latest message into `buf`, in at most `max_attempts` (at least 1) copy
    /// attempts of at most `max` bytes each (the bounded retry of `SamplingReader::read`).
    ///
    /// # Errors
    /// [`ReadError::Empty`], [`ReadError::Contended`] (every attempt overlapped a write; `buf`
    /// holds garbage), [`ReadError::BufferTooSmall`], [`ReadError::Corrupt`].
    #[inline]
    pub fn read(&self, buf: &mut [u8], max_attempts: u32) -> Result<ReadOk, ReadError> {
        let max_attempts = max_attempts.max(1);
        for attempt in 1..=max_attempts {
            match self.try_read(buf) {
                Attempt::Done { flags, stamp } => {
                    return Ok(ReadOk {
                        len: flags.len() as usize,
                        seq: flags.seq(),
                        written_at_ns: stamp,
                        attempts: attempt,
                    })
                }
                Attempt::Torn => std::hint::spin_loop(),
                Attempt::Empty => return Err(ReadError::Empty),
                Attempt::TooSmall { needed } => return Err(ReadError::BufferTooSmall { needed }),
                Attempt::Corrupt => return Err(ReadError::Corrupt),
            }
        }
        Err(ReadError::Contended {
            attempts: max_attempts,
        })
    }
}

/// A successful [`SlotView::read`] (and `SamplingReader::read`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOk {
    /// Message length; the message is `buf[..len]`.
    pub len: usize,
    /// Sequence number given by the writer.
    pub seq: u32,
    /// The writer's `CLOCK_MONOTONIC` timestamp in ns (the port layer derives validity).
    pub written_at_ns: u64,
    /// Copy attempts made (1 = no retry).
    pub attempts: u32,
}

/// Failure of [`SamplingReader::read`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// No message was ever completely written.
    Empty,
    /// Every one of `attempts` copies overlapped a write (a very fast writer, or a writer
    /// that died in the middle of a write); `buf` holds garbage.
    Contended {
        /// Attempts made.
        attempts: u32,
    },
    /// `buf` is shorter than the latest message.
    BufferTooSmall {
        /// Length of the latest message.
        needed: usize,
    },
    /// The slot's flags are impossible (written by something that is not a
    /// [`SamplingWriter`]).
    Corrupt,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Empty => write!(f, "no sampling message written yet"),
            ReadError::Contended { attempts } => write!(
                f,
                "sampling slot changed during each of {attempts} copies; retry later"
            ),
            ReadError::BufferTooSmall { needed } => {
                write!(f, "buffer too small: the message has {needed} bytes")
            }
            ReadError::Corrupt => write!(f, "sampling slot holds impossible flags"),
        }
    }
}

impl std::error::Error for ReadError {}

/// The writer's payload copy. Loom builds: `Relaxed` atomic word stores, so the models check the
/// protocol with every access visible to the model checker.
#[cfg(loom)]
#[inline]
fn racy_copy_in(words: &[AtomicU64], data: &[u8]) {
    copy_in(words, data);
}

/// The reader's payload copy (loom builds: `Relaxed` atomic word loads).
#[cfg(loom)]
#[inline]
fn racy_copy_out(words: &[AtomicU64], buf: &mut [u8]) {
    copy_out(words, buf);
}

/// The writer's payload copy in normal builds: one `memcpy` (wide moves) into the slot.
///
/// # Panics
/// If `data` is longer than the payload (callers check first).
#[cfg(not(loom))]
#[inline]
fn racy_copy_in(words: &[AtomicU64], data: &[u8]) {
    assert!(data.len() <= words.len() * 8);
    // SAFETY: the destination is `data.len()` bytes inside `words` (checked above), derived from
    // the whole slice (so the pointer may cover all of it), and `AtomicU64` is an `UnsafeCell`, so
    // writing through a pointer obtained from `&[AtomicU64]` is allowed; `data` is a distinct
    // `&[u8]`, so the ranges do not overlap. The mapping is writable (only the writer calls
    // this). Concurrent readers are the seqlock race described in the module docs: this copy lies
    // between the `Release` fence W1 and the `Release` store W2, which order it against the
    // readers' `Acquire` fences exactly like the word stores they replace; a reader that
    // overlaps it sees `begin != end` after its own copy and discards what it copied. By the
    // letter of the memory model the overlap is still a data race, with a reader in another
    // process or, on a loopback channel, in another thread of this one: the argument rests on
    // the fences and on this being one opaque copy of memory the compiler must assume shared
    // (module docs), not on the reader's being out of the compiler's sight.
    unsafe {
        std::ptr::copy_nonoverlapping(data.as_ptr(), words.as_ptr() as *mut u8, data.len());
    }
}

/// The reader's payload copy in normal builds: one `memcpy` (wide moves) out of the slot.
///
/// # Panics
/// If `buf` is longer than the payload (callers check first).
#[cfg(not(loom))]
#[inline]
fn racy_copy_out(words: &[AtomicU64], buf: &mut [u8]) {
    assert!(buf.len() <= words.len() * 8);
    // SAFETY: the source is `buf.len()` bytes inside `words` (checked above), read through a
    // pointer derived from the whole slice; plain loads are valid on read-only mappings (only
    // atomic read-modify-writes are not). `buf` is a distinct `&mut [u8]`. The bytes may be
    // changed by the writer during the copy (another process, or another thread of this one on
    // a loopback channel): this is the seqlock race of the module docs, a data race by the letter
    // of the memory model, resting on the fences, not on the writer's being out of sight; the copy lies between the `Acquire` fence R1 and the `Acquire` fence R3 (which
    // the compiler does not move memory accesses across), and the caller uses the bytes only if
    // the `begin` check after R3 shows that no write overlapped the copy. `u8` has no invalid
    // values, so even a torn copy is a valid (discarded) byte string.
    unsafe {
        std::ptr::copy_nonoverlapping(words.as_ptr() as *const u8, buf.as_mut_ptr(), buf.len());
    }
}

#[cfg(not(loom))]
pub use shm::*;

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::area::{line_up, Area, AreaError};
    use crate::notifier::{wait_with_or, Notifier, RecvMode};
    use crate::region::Region;
    use std::fmt;
    use std::sync::Arc;
    use std::time::Duration;

    const MAGIC: u64 = u64::from_le_bytes(*b"PXSAMPL1");
    const VERSION: u32 = 5;
    const HDR_MAGIC: usize = 0;
    const HDR_VERSION: usize = 8;
    const HDR_MAX: usize = 12;
    const HDR_WORDS: usize = 16;
    /// `begin` of a slot whose payload shares its line (at most [`INLINE_WORDS`] words).
    const BEGIN_INLINE: usize = 64;
    /// `begin` of a slot with a line-aligned payload: the header line's last word.
    const BEGIN_ALIGNED: usize = 56;
    /// Payload words that fit in the line after `begin`.
    const INLINE_WORDS: usize = 7;
    /// Payload words that fit in the line after `begin` with `end` and the stamp.
    const COMPACT_WORDS: usize = 5;
    /// The largest maximum message size of a compact slot (one line for the whole message).
    pub const COMPACT_MAX: u32 = 8 * COMPACT_WORDS as u32;

    /// Size of a sampling slot for messages of up to `max_message_size` bytes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct SamplingLayout {
        max_message_size: u32,
    }

    impl SamplingLayout {
        /// Describe a slot for messages of 1..=`max_message_size` bytes.
        ///
        /// # Errors
        /// [`AreaError::BadParameter`] if `max_message_size` is 0 or above 256 MiB.
        pub fn new(max_message_size: u32) -> Result<SamplingLayout, AreaError> {
            if max_message_size == 0 || max_message_size > (256 << 20) {
                return Err(AreaError::BadParameter(
                    "sampling max_message_size must be 1..=268435456",
                ));
            }
            Ok(SamplingLayout { max_message_size })
        }

        /// Return the largest message size.
        pub fn max_message_size(&self) -> u32 {
            self.max_message_size
        }

        fn payload_words(&self) -> usize {
            (self.max_message_size as usize).div_ceil(8)
        }

        /// Return the offset of the `begin` word from the slot's start, which the payload
        /// follows (see the module docs; for tools and tests that look at a slot's bytes).
        pub fn begin_offset(&self) -> usize {
            if self.payload_words() <= INLINE_WORDS {
                BEGIN_INLINE
            } else {
                BEGIN_ALIGNED
            }
        }

        /// Return the offset of the payload from the slot's start.
        pub fn payload_offset(&self) -> usize {
            self.begin_offset() + 8
        }

        /// Return whether the whole message (`begin`, payload, `end`, stamp) lies in one line:
        /// true for messages of up to [`COMPACT_MAX`] bytes.
        pub fn is_compact(&self) -> bool {
            self.payload_words() <= COMPACT_WORDS
        }

        /// Return the offset of the `end` word (then the stamp) from the slot's start: right
        /// after the payload in a compact slot, else at the start of a line of their own.
        pub fn end_offset(&self) -> usize {
            let after_payload = self.payload_offset() + 8 * self.payload_words();
            if self.is_compact() {
                after_payload
            } else {
                line_up(after_payload)
            }
        }

        /// Return the bytes the slot occupies in a region (a multiple of 64).
        pub fn size_bytes(&self) -> usize {
            line_up(self.end_offset() + 16)
        }
    }

    /// A sampling slot placed in a region (shared by the writer and reader handles).
    #[derive(Debug, Clone)]
    struct Slot {
        area: Area,
        max: u32,
        words: usize,
        begin: usize,
        end: usize,
    }

    impl Slot {
        fn open(region: Arc<Region>, offset: usize) -> Result<Slot, AreaError> {
            Self::open_expecting(region, offset, None)
        }

        /// Open the slot; with `expect`, laid out as that says and its header not read (the
        /// writer's side can overwrite the header: a reader told the layout by whoever made
        /// the slot does not depend on it).
        fn open_expecting(
            region: Arc<Region>,
            offset: usize,
            expect: Option<SamplingLayout>,
        ) -> Result<Slot, AreaError> {
            let hdr = Area::new(region, offset, 64)?;
            if let Some(layout) = expect {
                let area = hdr.resized(layout.size_bytes())?;
                return Ok(Slot {
                    area,
                    max: layout.max_message_size(),
                    words: layout.payload_words(),
                    begin: layout.begin_offset(),
                    end: layout.end_offset(),
                });
            }
            // Relaxed + fence: the mapping may be read-only (see `SlotView::end`).
            let magic = hdr.u64_at(HDR_MAGIC).load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            if magic != MAGIC {
                return Err(AreaError::BadMagic { found: magic });
            }
            let version = hdr.u32_at(HDR_VERSION).load(Ordering::Relaxed);
            if version != VERSION {
                return Err(AreaError::BadVersion { found: version });
            }
            let max = hdr.u32_at(HDR_MAX).load(Ordering::Relaxed);
            let layout = SamplingLayout::new(max)?;
            let words = hdr.u32_at(HDR_WORDS).load(Ordering::Relaxed) as usize;
            if words != layout.payload_words() {
                return Err(AreaError::BadParameter(
                    "sampling header payload_words mismatch",
                ));
            }
            let area = hdr.resized(layout.size_bytes())?;
            Ok(Slot {
                area,
                max,
                words,
                begin: layout.begin_offset(),
                end: layout.end_offset(),
            })
        }

        #[inline]
        fn view(&self) -> SlotView<'_> {
            let w = self.area.words(self.begin, self.words + 1);
            let e = self.area.words(self.end, 2);
            SlotView::new(&w[0], &e[1], &w[1..], &e[0]).with_max(self.max as usize)
        }
    }

    /// Failure of [`SamplingWriter::write`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum WriteError {
        /// A sampling message has at least one byte.
        ZeroLength,
        /// The message is longer than the slot's maximum.
        TooLarge {
            /// Length of the message.
            len: usize,
            /// The slot's maximum.
            max: u32,
        },
    }

    impl fmt::Display for WriteError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                WriteError::ZeroLength => write!(f, "sampling message is empty"),
                WriteError::TooLarge { len, max } => {
                    write!(
                        f,
                        "sampling message of {len} bytes exceeds the maximum of {max}"
                    )
                }
            }
        }
    }

    impl std::error::Error for WriteError {}

    /// The single writer of a sampling slot (needs a read-write mapping).
    ///
    /// There must be at most one writer per slot at a time (one process, or one thread holding
    /// `&mut`). Writing is wait-free: one `begin` store, a fence, the copy, one `end` store and,
    /// with a notifier, one fence and load.
    #[derive(Debug)]
    pub struct SamplingWriter {
        slot: Slot,
        next_seq: u32,
        notifier: Option<Notifier>,
    }

    impl SamplingWriter {
        /// Initialise a slot at `offset` of `region` (zeroing any previous content) and return
        /// its writer.
        ///
        /// # Errors
        /// [`AreaError::ReadOnly`] for a read-only mapping, [`AreaError::Misaligned`] or
        /// [`AreaError::TooSmall`] if the slot does not fit.
        pub fn init(
            region: Arc<Region>,
            offset: usize,
            layout: SamplingLayout,
        ) -> Result<SamplingWriter, AreaError> {
            let area = Area::new(region.clone(), offset, layout.size_bytes())?;
            if !area.writable() {
                return Err(AreaError::ReadOnly);
            }
            area.u64_at(HDR_MAGIC).store(0, Ordering::Relaxed);
            for w in area.words(layout.begin_offset(), layout.payload_words() + 1) {
                w.store(0, Ordering::Relaxed);
            }
            for w in area.words(layout.end_offset(), 2) {
                w.store(0, Ordering::Relaxed);
            }
            area.u32_at(HDR_VERSION).store(VERSION, Ordering::Relaxed);
            area.u32_at(HDR_MAX)
                .store(layout.max_message_size, Ordering::Relaxed);
            area.u32_at(HDR_WORDS)
                .store(layout.payload_words() as u32, Ordering::Relaxed);
            // SYNC POINT: publishes the header; pairs with the magic load + Acquire fence in
            // `Slot::open`.
            area.u64_at(HDR_MAGIC).store(MAGIC, Ordering::Release);
            Self::attach(region, offset)
        }

        /// Take over an initialised slot (a restarted writer): sequence numbers continue after the
        /// last write begun, even if the previous writer died in the middle of it.
        ///
        /// # Errors
        /// As [`SamplingReader::attach`], plus [`AreaError::ReadOnly`].
        pub fn attach(region: Arc<Region>, offset: usize) -> Result<SamplingWriter, AreaError> {
            Self::take_over(Slot::open(region, offset)?)
        }

        /// As [`SamplingWriter::attach`], laid out as `layout` without reading the header (see
        /// [`SamplingReader::attach_expecting`]).
        ///
        /// # Errors
        /// [`AreaError::ReadOnly`], [`AreaError::Misaligned`] or [`AreaError::TooSmall`].
        pub fn attach_expecting(
            region: Arc<Region>,
            offset: usize,
            layout: SamplingLayout,
        ) -> Result<SamplingWriter, AreaError> {
            Self::take_over(Slot::open_expecting(region, offset, Some(layout))?)
        }

        fn take_over(slot: Slot) -> Result<SamplingWriter, AreaError> {
            if !slot.area.writable() {
                return Err(AreaError::ReadOnly);
            }
            let next_seq = slot.view().begin().seq().wrapping_add(1);
            Ok(SamplingWriter {
                slot,
                next_seq,
                notifier: None,
            })
        }

        /// Wake parked readers through `notifier` after every write.
        pub fn with_notifier(mut self, notifier: Notifier) -> SamplingWriter {
            self.notifier = Some(notifier);
            self
        }

        /// Return the largest message size.
        pub fn max_message_size(&self) -> u32 {
            self.slot.max
        }

        /// Write `data` stamped with the current `CLOCK_MONOTONIC` time; return its sequence
        /// number.
        ///
        /// # Errors
        /// [`WriteError::ZeroLength`] or [`WriteError::TooLarge`]; the slot is unchanged.
        #[inline]
        pub fn write(&mut self, data: &[u8]) -> Result<u32, WriteError> {
            self.write_stamped(data, monotonic_ns())
        }

        /// Write `data` with the given timestamp (ns); return its sequence number.
        ///
        /// # Errors
        /// As [`SamplingWriter::write`].
        #[inline]
        pub fn write_stamped(&mut self, data: &[u8], stamp_ns: u64) -> Result<u32, WriteError> {
            if data.is_empty() {
                return Err(WriteError::ZeroLength);
            }
            if data.len() > self.slot.max as usize {
                return Err(WriteError::TooLarge {
                    len: data.len(),
                    max: self.slot.max,
                });
            }
            let seq = self.next_seq;
            self.slot
                .view()
                .publish(Flags::new(seq, data.len() as u32), stamp_ns, data);
            self.next_seq = seq.wrapping_add(1);
            if let Some(n) = &self.notifier {
                n.notify();
            }
            Ok(seq)
        }
    }

    /// Failure of [`SamplingReader::wait_newer`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum WaitError {
        /// No newer message arrived in time.
        TimedOut,
        /// A parking mode was asked for but the reader has no notifier
        /// ([`SamplingReader::with_notifier`]).
        NoNotifier,
        /// A newer message arrived but reading it failed.
        Read(ReadError),
    }

    impl fmt::Display for WaitError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                WaitError::TimedOut => write!(f, "no new sampling message before the timeout"),
                WaitError::NoNotifier => {
                    write!(
                        f,
                        "parking receive mode needs a notifier; use RecvMode::Spin or add one"
                    )
                }
                WaitError::Read(e) => e.fmt(f),
            }
        }
    }

    impl std::error::Error for WaitError {}

    /// A reader of a sampling slot. Never stores to the slot: a read-only mapping suffices.
    #[derive(Debug, Clone)]
    pub struct SamplingReader {
        slot: Slot,
        max_attempts: u32,
        notifier: Option<Notifier>,
    }

    impl SamplingReader {
        /// Open the slot initialised at `offset` of `region` (which may be mapped read-only).
        ///
        /// # Errors
        /// [`AreaError::BadMagic`] (not initialised), [`AreaError::BadVersion`],
        /// [`AreaError::BadParameter`], [`AreaError::Misaligned`] or [`AreaError::TooSmall`].
        pub fn attach(region: Arc<Region>, offset: usize) -> Result<SamplingReader, AreaError> {
            Ok(SamplingReader {
                slot: Slot::open(region, offset)?,
                max_attempts: DEFAULT_MAX_ATTEMPTS,
                notifier: None,
            })
        }

        /// Open the slot at `offset` of `region` laid out as `layout` (the layout it was
        /// initialised with, as its maker says), without reading its header: the writer can
        /// overwrite the header, and a reader that trusted it could not open the slot again.
        ///
        /// # Errors
        /// [`AreaError::Misaligned`] or [`AreaError::TooSmall`].
        pub fn attach_expecting(
            region: Arc<Region>,
            offset: usize,
            layout: SamplingLayout,
        ) -> Result<SamplingReader, AreaError> {
            Ok(SamplingReader {
                slot: Slot::open_expecting(region, offset, Some(layout))?,
                max_attempts: DEFAULT_MAX_ATTEMPTS,
                notifier: None,
            })
        }

        /// Give up after `n` (at least 1) copy attempts per read.
        pub fn with_max_attempts(mut self, n: u32) -> SamplingReader {
            self.max_attempts = n.max(1);
            self
        }

        /// Park on `notifier` in [`RecvMode::SpinThenPark`] / [`RecvMode::Blocking`] waits.
        /// The readers park on it: a predecessor killed while parked leaves nothing behind
        /// ([`Notifier::adopt`]).
        pub fn with_notifier(mut self, notifier: Notifier) -> SamplingReader {
            notifier.adopt();
            self.notifier = Some(notifier);
            self
        }

        /// Return the largest message size.
        pub fn max_message_size(&self) -> u32 {
            self.slot.max
        }

        /// Return the sequence number of the last complete write, if any (one load).
        #[inline]
        pub fn latest_seq(&self) -> Option<u32> {
            let e = self.slot.view().end();
            (e.0 != 0).then_some(e.seq())
        }

        /// Return the flags of the last complete write, if any: one load of the `end` word (one
        /// cache line, no payload touched), with acquire semantics. A poller compares them with
        /// the flags of the message it already holds and copies only when they differ.
        #[inline]
        pub fn latest_flags(&self) -> Option<Flags> {
            let e = self.slot.view().end();
            (e.0 != 0).then_some(e)
        }

        /// Return the address of the slot's payload (in this process's mapping), for a caller
        /// that places its own copy of it (see `partix-runtime`'s sampling port).
        #[inline]
        pub fn payload_addr(&self) -> usize {
            self.slot.view().payload.as_ptr() as usize
        }

        /// Return whether a write is in progress, or was cut off by the writer's death
        /// (`begin != end`; diagnostics).
        pub fn write_in_progress(&self) -> bool {
            let v = self.slot.view();
            let e = v.end();
            v.begin() != e
        }

        /// Copy the latest message into `buf`.
        ///
        /// Bounded: at most `max_attempts` copies of at most `max_message_size` bytes.
        ///
        /// # Errors
        /// [`ReadError::Empty`], [`ReadError::Contended`], [`ReadError::BufferTooSmall`],
        /// [`ReadError::Corrupt`].
        #[inline]
        pub fn read(&self, buf: &mut [u8]) -> Result<ReadOk, ReadError> {
            self.slot.view().read(buf, self.max_attempts)
        }

        /// Wait until a message other than `last_seq` (any message when `None`) is complete, then
        /// read it.
        ///
        /// # Errors
        /// [`WaitError::TimedOut`], [`WaitError::NoNotifier`] (parking mode without notifier),
        /// [`WaitError::Read`].
        #[inline]
        pub fn wait_newer(
            &self,
            buf: &mut [u8],
            last_seq: Option<u32>,
            mode: RecvMode,
            timeout: Option<Duration>,
        ) -> Result<ReadOk, WaitError> {
            self.wait_newer_or(buf, last_seq, mode, timeout, || false)
        }

        /// [`SamplingReader::wait_newer`] that also gives up early, with
        /// [`WaitError::TimedOut`], once `stop()` returns true. `stop` is checked after every
        /// poll that found nothing newer and before every park, so a park interrupted by a
        /// signal whose handler made `stop()` true does not park again (a caller uses it to
        /// leave a wait at once when a request to its thread arrives; it tells this apart from a
        /// time-out itself).
        ///
        /// # Errors
        /// As [`SamplingReader::wait_newer`].
        #[inline]
        pub fn wait_newer_or(
            &self,
            buf: &mut [u8],
            last_seq: Option<u32>,
            mode: RecvMode,
            timeout: Option<Duration>,
            stop: impl FnMut() -> bool,
        ) -> Result<ReadOk, WaitError> {
            if mode.parks() && self.notifier.is_none() {
                return Err(WaitError::NoNotifier);
            }
            let view = self.slot.view();
            let ready = || {
                let e = view.end();
                e.0 != 0 && Some(e.seq()) != last_seq
            };
            if !wait_with_or(mode, self.notifier.as_ref(), timeout, ready, stop) {
                return Err(WaitError::TimedOut);
            }
            self.read(buf).map_err(WaitError::Read)
        }
    }

    pub use crate::clock::monotonic_ns;

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::region::Access;

        fn region(len: usize) -> Arc<Region> {
            Arc::new(Region::create("partix-shm-sampling-test", len).unwrap())
        }

        fn read_only(r: &Region) -> Arc<Region> {
            // SAFETY: dup returns a fresh descriptor nothing else owns.
            let fd = unsafe { libc::dup(r.raw_fd()) };
            // SAFETY: fd is fresh and unowned.
            Arc::new(unsafe { Region::from_raw_fd(fd, r.len(), Access::ReadOnly) }.unwrap())
        }

        #[test]
        fn layout_sizes() {
            // Header line, begin/payload lines, end/stamp line.
            assert_eq!(SamplingLayout::new(48).unwrap().size_bytes(), 192);
            assert_eq!(SamplingLayout::new(56).unwrap().size_bytes(), 192);
            // Above 56 B the payload starts a line (begin is the header line's last word).
            assert_eq!(SamplingLayout::new(57).unwrap().size_bytes(), 192);
            assert_eq!(SamplingLayout::new(64).unwrap().size_bytes(), 192);
            assert_eq!(SamplingLayout::new(65).unwrap().size_bytes(), 256);
            // Up to 40 B: header line and one line for the whole message.
            assert_eq!(SamplingLayout::new(1).unwrap().size_bytes(), 128);
            assert_eq!(SamplingLayout::new(40).unwrap().size_bytes(), 128);
            assert_eq!(SamplingLayout::new(41).unwrap().size_bytes(), 192);
            assert_eq!(
                SamplingLayout::new(4096).unwrap().size_bytes(),
                64 + 4096 + 64
            );
            assert!(SamplingLayout::new(0).is_err());
        }

        #[test]
        fn messages_up_to_40_bytes_lie_in_one_line() {
            for max in 1..=COMPACT_MAX {
                let l = SamplingLayout::new(max).unwrap();
                assert!(l.is_compact());
                assert_eq!(l.begin_offset(), 64);
                // `end` and the stamp follow the payload, all in the line at 64.
                assert_eq!(l.end_offset(), 72 + 8 * l.payload_words());
                assert!(l.end_offset() + 16 <= 128, "max {max}");
            }
            for max in [41, 48, 56, 57, 4096] {
                let l = SamplingLayout::new(max).unwrap();
                assert!(!l.is_compact());
                assert_eq!(
                    l.end_offset() % 64,
                    0,
                    "max {max}: end in a line of its own"
                );
            }
            // Every size of a compact slot goes through a read-only mapping intact, with its
            // stamp, after a longer message (the shorter one must not show the longer's tail),
            // and `begin == end` after each write.
            let r = region(16384);
            for max in [1, 8, 16, 33, 40] {
                let layout = SamplingLayout::new(max).unwrap();
                let mut w = SamplingWriter::init(r.clone(), 1024, layout).unwrap();
                let rd = SamplingReader::attach(read_only(&r), 1024).unwrap();
                let mut buf = vec![0u8; max as usize];
                for len in (1..=max).rev() {
                    let msg: Vec<u8> = (0..len).map(|i| (i * 5 + len) as u8).collect();
                    w.write_stamped(&msg, u64::from(len) * 1000).unwrap();
                    let ok = rd.read(&mut buf).unwrap();
                    assert_eq!(
                        (ok.len, ok.written_at_ns),
                        (len as usize, u64::from(len) * 1000)
                    );
                    assert_eq!(buf[..len as usize], msg[..]);
                    assert!(!rd.write_in_progress());
                }
            }
        }

        #[test]
        fn payloads_above_56_bytes_start_a_line() {
            for max in [1, 8, 56] {
                let l = SamplingLayout::new(max).unwrap();
                assert_eq!(
                    l.begin_offset() + 8,
                    72,
                    "max {max}: begin and payload share a line"
                );
            }
            for max in [57, 64, 100, 1024, 4096, 5000] {
                let l = SamplingLayout::new(max).unwrap();
                assert_eq!(
                    l.begin_offset() + 8,
                    64,
                    "max {max}: payload at the second line"
                );
                // `begin` lies after the header's fields and before the payload.
                assert!(l.begin_offset() >= HDR_WORDS + 4);
                assert!(l.end_offset() >= 64 + 8 * l.payload_words());
                assert_eq!(l.end_offset() % 64, 0);
            }
            // A message of the maximum size goes through a read-only mapping intact at both
            // layouts' edges, and `begin == end` after the write.
            for max in [56, 57, 4096] {
                let r = region(16384);
                let layout = SamplingLayout::new(max).unwrap();
                let mut w = SamplingWriter::init(r.clone(), 192, layout).unwrap();
                let rd = SamplingReader::attach(read_only(&r), 192).unwrap();
                let msg: Vec<u8> = (0..max).map(|i| (i * 7 + 3) as u8).collect();
                w.write_stamped(&msg, 11).unwrap();
                let mut buf = vec![0u8; max as usize];
                let ok = rd.read(&mut buf).unwrap();
                assert_eq!((ok.len, ok.written_at_ns), (max as usize, 11));
                assert_eq!(buf, msg);
                assert!(!rd.write_in_progress());
            }
        }

        #[test]
        fn empty_then_latest_wins_through_read_only_mapping() {
            let r = region(8192);
            let mut w =
                SamplingWriter::init(r.clone(), 128, SamplingLayout::new(100).unwrap()).unwrap();
            let rd = SamplingReader::attach(read_only(&r), 128).unwrap();
            let mut buf = [0u8; 100];
            assert_eq!(rd.read(&mut buf), Err(ReadError::Empty));
            assert_eq!(rd.latest_seq(), None);
            w.write_stamped(b"first", 7).unwrap();
            let s2 = w.write_stamped(b"second message", 9).unwrap();
            let ok = rd.read(&mut buf).unwrap();
            assert_eq!(&buf[..ok.len], b"second message");
            assert_eq!((ok.seq, ok.written_at_ns, ok.attempts), (s2, 9, 1));
            // Reading does not consume.
            assert_eq!(rd.read(&mut buf).unwrap().seq, s2);
            assert!(!rd.write_in_progress());
        }

        #[test]
        fn bad_input_is_refused() {
            let r = region(4096);
            let mut w =
                SamplingWriter::init(r.clone(), 0, SamplingLayout::new(8).unwrap()).unwrap();
            assert_eq!(w.write(b""), Err(WriteError::ZeroLength));
            assert_eq!(
                w.write(&[0; 9]),
                Err(WriteError::TooLarge { len: 9, max: 8 })
            );
            w.write(b"12345678").unwrap();
            let rd = SamplingReader::attach(r.clone(), 0).unwrap();
            assert_eq!(
                rd.read(&mut [0u8; 4]),
                Err(ReadError::BufferTooSmall { needed: 8 })
            );
            assert_eq!(
                SamplingReader::attach(r.clone(), 32).unwrap_err(),
                AreaError::Misaligned { offset: 32 }
            );
            assert!(matches!(
                SamplingReader::attach(r.clone(), 1024).unwrap_err(),
                AreaError::BadMagic { .. }
            ));
            assert!(matches!(
                SamplingWriter::init(read_only(&r), 0, SamplingLayout::new(8).unwrap()),
                Err(AreaError::ReadOnly)
            ));
            assert!(matches!(
                SamplingReader::attach(r, 4096 - 64).unwrap_err(),
                AreaError::BadMagic { .. }
            ));
        }

        #[test]
        fn half_written_slot_is_contended_until_a_new_writer_writes() {
            let r = region(4096);
            let mut w =
                SamplingWriter::init(r.clone(), 0, SamplingLayout::new(16).unwrap()).unwrap();
            w.write(b"good").unwrap();
            // Simulate a writer that died after storing `begin` of message 2.
            let slot = Slot::open(r.clone(), 0).unwrap();
            slot.view()
                .begin
                .store(Flags::new(2, 16).0, Ordering::Relaxed);
            let rd = SamplingReader::attach(r.clone(), 0)
                .unwrap()
                .with_max_attempts(5);
            assert!(rd.write_in_progress());
            assert_eq!(
                rd.read(&mut [0u8; 16]),
                Err(ReadError::Contended { attempts: 5 })
            );
            let mut w2 = SamplingWriter::attach(r, 0).unwrap();
            assert_eq!(w2.write(b"again").unwrap(), 3);
            let mut buf = [0u8; 16];
            let ok = rd.read(&mut buf).unwrap();
            assert_eq!((&buf[..ok.len], ok.seq), (&b"again"[..], 3));
        }

        #[test]
        fn corrupt_flags_are_reported() {
            let r = region(4096);
            SamplingWriter::init(r.clone(), 0, SamplingLayout::new(16).unwrap()).unwrap();
            let slot = Slot::open(r.clone(), 0).unwrap();
            slot.view()
                .end
                .store(Flags::new(1, 999).0, Ordering::Release);
            let rd = SamplingReader::attach(r, 0).unwrap();
            assert_eq!(rd.read(&mut [0u8; 2000]), Err(ReadError::Corrupt));
        }

        /// A length above the configured maximum (13) but within the slot's rounded-up capacity
        /// (16) is impossible, not a message too long for a buffer of the maximum: taken for
        /// the latter, a waiting port answered its last good copy again and again.
        #[test]
        fn a_length_above_the_configured_maximum_is_corrupt() {
            let r = region(4096);
            SamplingWriter::init(r.clone(), 0, SamplingLayout::new(13).unwrap()).unwrap();
            let slot = Slot::open(r.clone(), 0).unwrap();
            slot.view().publish(Flags::new(1, 16), 0, &[1u8; 16]);
            let rd = SamplingReader::attach(r, 0).unwrap();
            assert_eq!(rd.read(&mut [0u8; 13]), Err(ReadError::Corrupt));
            slot.view().publish(Flags::new(2, 13), 0, &[2u8; 13]);
            assert_eq!(rd.read(&mut [0u8; 13]).map(|ok| ok.len), Ok(13));
        }

        #[test]
        fn waiting_reader_is_woken_by_the_writer() {
            let r = region(8192);
            let mut w = SamplingWriter::init(r.clone(), 0, SamplingLayout::new(32).unwrap())
                .unwrap()
                .with_notifier(Notifier::new(r.clone(), 4096).unwrap());
            let rd = SamplingReader::attach(read_only(&r), 0).unwrap();
            let mut buf = [0u8; 32];
            assert_eq!(
                rd.wait_newer(&mut buf, None, RecvMode::Blocking, None),
                Err(WaitError::NoNotifier)
            );
            assert_eq!(
                rd.wait_newer(
                    &mut buf,
                    None,
                    RecvMode::Spin,
                    Some(Duration::from_millis(2))
                ),
                Err(WaitError::TimedOut)
            );
            let rd = rd.with_notifier(Notifier::new(r.clone(), 4096).unwrap());
            for mode in [
                RecvMode::Blocking,
                RecvMode::SpinThenPark { spins: 100 },
                RecvMode::Spin,
            ] {
                let last = rd.latest_seq();
                let rd2 = rd.clone();
                let t = std::thread::spawn(move || {
                    let mut buf = [0u8; 32];
                    let ok = rd2
                        .wait_newer(&mut buf, last, mode, Some(Duration::from_secs(20)))
                        .unwrap();
                    (buf[..ok.len].to_vec(), std::time::Instant::now())
                });
                std::thread::sleep(Duration::from_millis(20));
                let sent = std::time::Instant::now();
                w.write(format!("{mode:?}").as_bytes()).unwrap();
                let (got, back) = t.join().unwrap();
                assert_eq!(got, format!("{mode:?}").into_bytes());
                // Woken by the write, not by the end of a park's slice (MAX_PARK).
                assert!(
                    back.duration_since(sent) < crate::test_util::WAKE_BOUND,
                    "{mode:?}: woken {:?} after the write",
                    back.duration_since(sent)
                );
            }
        }

        /// The writer's side can overwrite the slot's header (it maps the slot read-write): a
        /// reader told the layout opens the slot without it, and reads the next message.
        #[test]
        fn a_reader_told_the_layout_opens_a_slot_whose_header_was_overwritten() {
            let layout = SamplingLayout::new(24).unwrap();
            let r = region(layout.size_bytes());
            let mut w = SamplingWriter::init(r.clone(), 0, layout).unwrap();
            w.write(b"before").unwrap();
            let hdr = Area::new(r.clone(), 0, 64).unwrap();
            for off in [0, 8, 16] {
                hdr.u64_at(off)
                    .store(0x5a5a_5a5a_5a5a_5a5a, Ordering::Relaxed);
            }
            let ro = read_only(&r);
            assert!(SamplingReader::attach(ro.clone(), 0).is_err());
            let reader = SamplingReader::attach_expecting(ro, 0, layout).unwrap();
            let mut buf = [0u8; 24];
            let n = reader.read(&mut buf).unwrap().len;
            assert_eq!(&buf[..n], b"before");
            w.write(b"after").unwrap();
            let n = reader.read(&mut buf).unwrap().len;
            assert_eq!(&buf[..n], b"after");
        }
    }
}
