//! Inter-partition communication: sampling and queuing ports (ARINC 653 Part 1) over the
//! channels of [`crate::channels`], whatever their transport: this module talks only to the
//! endpoints of [`crate::transport`] (one-sided, two-sided, udp, tcp).
//!
//! A partition can create only the ports its configuration entry lists: the executive hands it
//! exactly those (their regions and their configured attributes, in `PARTIX_PORT_FDS`), and
//! CREATE_*_PORT checks the caller's arguments against them. A partition run by hand (no
//! executive) has no ports: every CREATE answers `InvalidConfig`.
//!
//! # Sampling ports
//! WRITE_SAMPLING_MESSAGE sends the message to every destination with a `CLOCK_MONOTONIC` time
//! stamp (one-sided: into each destination's slot, multicast is the writer's job).
//! READ_SAMPLING_MESSAGE copies the latest message out (one-sided: of the port's read-only slot,
//! begin/end flags retried until they agree) and never consumes it; the message is `Valid` while
//! its age is at most the refresh period. [`wait_sampling_message`] (a partix extension) waits
//! for a newer message.
//! The destination keeps a private copy of the last good message: if the writer is killed in the
//! middle of a write (the slot's flags then disagree forever, until a restarted writer writes
//! again) or keeps the slot busy for longer than a read's bounded retries, the read returns that
//! copy (whose age keeps growing, so it turns `Invalid`), never a torn message.
//!
//! # Queuing ports
//! A queuing channel holds at most `MaxNbMessages` messages (one-sided: an SPSC ring; two-sided
//! and sockets: credits returned by cumulative acknowledgements). Several APEX processes of one partition may use one port: they are serialised by a
//! per-port lock and, when they must wait (full on send, empty on receive, timeout ≠ 0), queued
//! in FIFO or PRIORITY order (the port's queuing discipline; PRIORITY = the current priority,
//! FIFO among equals by arrival; a SET_PRIORITY while waiting moves the process, as in the
//! intra-partition objects' queues). Only the head of that queue waits on the channel; the
//! others wait in the partition. The head waits per the port's [`RecvMode`]:
//! - [`RecvMode::Spin`]: polls the channel (lowest latency, burns the partition's CPU in its
//!   window);
//! - [`RecvMode::SpinThenPark`] (the default, [`DEFAULT_RECV_MODE`]): polls a while, then parks
//!   (shared memory: on the channel's futex, the other side wakes it after each push or pop;
//!   sockets: in `poll(2)`);
//! - [`RecvMode::Blocking`]: parks at once.
//!
//! The configuration sets a port's initial mode (`partix:ReceiveMode` on `<Queuing_Port>` and
//! `<Sampling_Port>`; without it, the default); change it with [`set_queuing_port_recv_mode`]
//! and read it with [`queuing_port_recv_mode`] (partix extensions). The same modes apply to a
//! sender waiting for space.
//!
//! A process that waits (on a queuing port, or in [`wait_sampling_message`]) shows WAITING in
//! GET_PROCESS_STATUS for the duration of the wait.
//!
//! A failed allocation must never abort the partition (its memory is its configured memory,
//! `RLIMIT_DATA`): a queuing port's waiting line is made at creation (INVALID_CONFIG when the
//! memory cannot hold it), and the only allocations left on a waiting path are the copies that
//! serve a waiter in its place (another call on the port hands it its message or room, in line
//! order, while it does not run), tried fallibly: a waiter whose copy cannot be had is not
//! served in its place, and takes its message (or room) itself when it runs.
//!
//! # Port locks and STOP / SUSPEND
//! Every lock of a port (its state, its receive mode, the registry) is taken through `lock`,
//! which defers the runtime's control signal while the lock is held (`rt::Deferral`: a
//! per-thread counter, no system call). A process stopped (STOP) or suspended (SUSPEND) by another
//! one while it copies a message under the lock finishes the operation, releases the lock, and
//! parks right after it, so the port stays usable by the rest of the partition. Waiting is done
//! without the lock (queued processes wait on a futex word, the head on the channel), so a
//! waiting process is stopped or suspended at once. [`wait_sampling_message`] waits on the
//! channel under the port lock (in slices of [`DEFAULT_WAIT_SLICE`], see
//! [`set_sampling_port_wait_slice`]); a request reaching it there ends the wait at once (every
//! spin polls a per-thread flag the signal handler sets, and the signal interrupts a park), the
//! port is released and the request honoured; a resumed process waits again for the rest of its
//! time-out. In every receive mode and on every transport.

use super::biased::{BiasedGuard, BiasedLock};
use super::error::{ApexError, ApexResult};
use super::rt::{self, rt, Deferral, EH_INDEX, SUSP};
use super::time::{SystemTime, INFINITE_TIME_VALUE};
use super::waitq::try_capacity;
use crate::channels::{map_inherited, MappedPort};
use crate::state::{mode, MAX_PROCESSES};
use crate::transport::{
    far_from, QueueDestination, QueueSource, QueueWaiter, SamplingDestination, SamplingSource,
    Transport, PAGE,
};
use partix_config::model::{ChannelKind, PortDirection as CfgDirection};
use partix_shm::clock::now_ns;
use partix_shm::futex;
use partix_shm::ring::{PopError, PushError};
use partix_shm::sampling::{ReadError, ReadOk, WaitError};
pub use partix_shm::RecvMode;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// `PORT_DIRECTION_TYPE` (SOURCE = 0, DESTINATION = 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortDirection {
    /// `SOURCE`: the partition writes or sends.
    Source,
    /// `DESTINATION`: the partition reads or receives.
    Destination,
}

/// `VALIDITY_TYPE` (INVALID = 0, VALID = 1): whether a sampling message is younger than the
/// port's refresh period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    /// `INVALID`.
    Invalid,
    /// `VALID`.
    Valid,
}

/// `QUEUING_DISCIPLINE_TYPE` (FIFO = 0, PRIORITY = 1): the order in which the partition's waiting
/// processes get a queuing port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueuingDiscipline {
    /// `FIFO`: in order of arrival.
    Fifo,
    /// `PRIORITY`: highest current priority first (a SET_PRIORITY while waiting counts), FIFO
    /// among equals.
    Priority,
}

/// `SAMPLING_PORT_ID_TYPE` (1, 2, ... in creation order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SamplingPortId(pub i32);

/// `QUEUING_PORT_ID_TYPE` (1, 2, ... in creation order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QueuingPortId(pub i32);

/// `SAMPLING_PORT_STATUS_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamplingPortStatus {
    /// `REFRESH_PERIOD` (ns).
    pub refresh_period: SystemTime,
    /// `MAX_MESSAGE_SIZE` (bytes).
    pub max_message_size: u32,
    /// `PORT_DIRECTION`.
    pub port_direction: PortDirection,
    /// `LAST_MSG_VALIDITY`: validity of the last message read (`Invalid` before any read).
    pub last_msg_validity: Validity,
}

/// `QUEUING_PORT_STATUS_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueuingPortStatus {
    /// `NB_MESSAGE`: messages in the channel now.
    pub nb_message: u32,
    /// `MAX_NB_MESSAGE`.
    pub max_nb_message: u32,
    /// `MAX_MESSAGE_SIZE` (bytes).
    pub max_message_size: u32,
    /// `PORT_DIRECTION`.
    pub port_direction: PortDirection,
    /// `WAITING_PROCESSES`: processes of this partition waiting on the port.
    pub waiting_processes: u32,
}

/// The receive (and send) wait mode of a new queuing port.
pub const DEFAULT_RECV_MODE: RecvMode = RecvMode::SpinThenPark {
    spins: DEFAULT_RECV_MODE_SPINS,
};

/// The polls of [`DEFAULT_RECV_MODE`] (also of a configured `partix:ReceiveMode` of
/// `spin-then-park` without a count).
pub const DEFAULT_RECV_MODE_SPINS: u32 = 2000;

/// `MAX_NUMBER_OF_SAMPLING_PORTS` / `MAX_NUMBER_OF_QUEUING_PORTS` of this implementation
/// (per partition and kind).
pub const MAX_NUMBER_OF_PORTS: usize = 512;

struct SamplingInner {
    source: Option<SamplingSource>,
    dest: Option<SamplingDestination>,
    /// Where a read copies to before it is known to be good (`max` bytes from `scratch_at`;
    /// a page longer, see [`copy_offset`]).
    scratch: Vec<u8>,
    scratch_at: usize,
    /// The last good message read (private copy, `last_at..last_at + last_len`) and its write
    /// time. A good read into `scratch` is swapped in (no copy).
    last: Vec<u8>,
    last_at: usize,
    last_len: usize,
    /// The port's maximum message size.
    max: usize,
    /// Where reads copy from, where that is fixed (the one-sided slot's payload).
    from: Option<usize>,
    last_stamp: Option<u64>,
    /// Sequence number of the last good message (what [`wait_sampling_message`] waits past).
    last_seq: Option<u32>,
    /// What [`sampling_port_counters`] reports (counted under the port lock, off the fast path).
    counters: SamplingPortCounters,
}

/// Diagnostic counters of a destination sampling port since its creation (partix extension,
/// [`sampling_port_counters`]): how often a read or a wait met a write in progress. Tests use
/// them to show that a stress really overlapped reads with writes, and which path an answer
/// took; they cost nothing on a read that meets no write (a compare of a value the read returns
/// anyway).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SamplingPortCounters {
    /// Reads (READ_SAMPLING_MESSAGE, or the read that ends a wait) whose copy overlapped a write
    /// and was made again before it was good (one-sided: the slot's `begin` differed from its
    /// `end` after a copy).
    pub retried_reads: u64,
    /// READ_SAMPLING_MESSAGE calls that found the newest message unreadable (every copy of the
    /// bounded retries overlapped a write, its writer died inside the write, or the slot holds
    /// impossible flags) and answered with the last good copy (`NO_ACTION` without one).
    pub fallback_answers: u64,
    /// Newer messages that a wait found unreadable for the same reasons and waited past.
    pub unreadable_waited_past: u64,
    /// Newer messages that a wait found written after its deadline (its partition's window was
    /// closed from the deadline until then) and answered `TIMED_OUT` to.
    pub written_after_deadline: u64,
    /// Two-sided: copies of the TX slot by the destination's network manager (or by a reader
    /// helping it) that the source's next write of that slot overlapped, and that were made
    /// again (0 on the other transports).
    pub manager_retries: u64,
}

struct SamplingPort {
    name: String,
    direction: PortDirection,
    max: u32,
    refresh_ns: u64,
    /// How [`wait_sampling_message`] waits.
    mode: ModeCell,
    /// Longest time [`wait_sampling_message`] holds the port at a time (ns, positive).
    slice_ns: AtomicU64,
    /// The validity of the last message returned (GET_SAMPLING_PORT_STATUS's
    /// `LAST_MSG_VALIDITY`), outside the lock: a status call never waits behind a process that
    /// holds the port while it waits for a message.
    last_valid: AtomicBool,
    inner: BiasedLock<SamplingInner>,
}

struct Waiter {
    ticket: u64,
    /// The waiting process and its incarnation: a process stopped (STOP) while waiting gets a
    /// new incarnation, and its abandoned entry is then ignored and dropped.
    process: usize,
    incarnation: u32,
    /// Whether it can be served in its place by another call on the port
    /// ([`QueuingPort::serve_waiters`]): a receiver whose buffer holds the port's largest
    /// message, a sender whose message was copied (into `msg`). Cleared for the rest of the wait
    /// when the copy cannot be had (the partition's memory is full). A waiter that cannot be
    /// served in its place keeps its place until it takes its message or room itself, or until
    /// its time-out: then the first look at the port, its own, any other call's or the deadline
    /// monitor's (`look_at_expired_wait`), takes it out
    /// of the line (it returns `TIMED_OUT`), even with its message or room there, which only its
    /// own look could take.
    serve: bool,
    /// A sender's message (a copy, in a buffer of [`QueuingState::spare`]): a waiting sender's
    /// message can be sent in its place. `None` for receivers, for batch sends and when the
    /// copy could not be had.
    msg: Option<Vec<u8>>,
    /// When its time-out expires (`None`: never).
    deadline: Option<Instant>,
    /// The same in module time (ns; `u64::MAX`: never), as the deadline monitor sees it: the
    /// monitor's look at the port then takes the waiter out of the line unless it is served
    /// ([`look_at_expired_wait`]).
    deadline_ns: u64,
}

impl Waiter {
    fn alive(&self) -> bool {
        rt().ctl[self.process].incarnation.load(Ordering::Acquire) == self.incarnation
    }

    /// The process's current priority, read at every look at the line (PRIORITY discipline):
    /// a SET_PRIORITY while it waits moves it, as in the intra-partition objects' queues
    /// (`ports::priority_changed` wakes the line so that a new head takes its place).
    fn priority(&self) -> u32 {
        rt().slot(self.process)
            .current_priority
            .load(Ordering::Relaxed)
    }

    /// Whether the process is suspended (SUSPEND): its thread is parked in the control handler.
    fn suspended(&self) -> bool {
        rt().ctl[self.process].suspend.load(Ordering::Acquire) & SUSP != 0
    }
}

/// What was done for a waiter in its place (its queue entry is gone): it collects it when it
/// runs (or is resumed).
struct Handed {
    ticket: u64,
    process: usize,
    incarnation: u32,
    outcome: Outcome,
}

/// What a waiter was given in its place.
enum Outcome {
    /// A receiver: the message it receives, the first `.1` bytes of a buffer of the port's
    /// largest size (see [`QueuingState::spare`]).
    Received(Vec<u8>, usize),
    /// A sender: its message was sent (its length).
    Sent(usize),
    /// The error the waiter's own attempt would have met (a corrupt channel): it returns it,
    /// and the next waiter meets the channel itself, instead of a watcher polling a channel
    /// that stays ready for ever.
    Failed(ApexError),
}

/// How a caller of [`QueuingPort::wait_for`] can be served in its place.
enum Role<'m> {
    /// A receiver with a buffer of this length.
    Receive(usize),
    /// A sender of this one message.
    Send(&'m [u8]),
    /// Never (a batch send).
    Other,
}

/// A port's state. `waiters`, `handed` and `spare` have room for [`MAX_PROCESSES`] entries,
/// reserved at creation, and never grow (see [`QueuingPort::wait_for`]): waiting allocates
/// nothing but the copy of a message (fallibly, see [`Waiter::serve`]).
struct QueuingState {
    source: Option<QueueSource>,
    dest: Option<QueueDestination>,
    /// At most one entry per process once the dead are pruned (a process waits in one place).
    waiters: Vec<Waiter>,
    next_ticket: u64,
    /// A source: when the port last asked when room comes ([`QueuingPort::ask_room_note`];
    /// `clock::stamp_ns`): about when the rooms the destination made before it saw the
    /// request were made.
    room_asked_ns: u64,
    /// Messages handed to waiting receivers in their place, not yet collected (one per process
    /// at most: a process waits in one place, and the entries of stopped incarnations are
    /// dropped first).
    handed: Vec<Handed>,
    /// A handed message its receiver is collecting (as [`Outcome::Received`]): the receive
    /// operations copy it first.
    delivery: Option<(Vec<u8>, usize)>,
    /// Buffers for the copies of messages (waiting senders', those handed to waiting
    /// receivers), kept for reuse; never more than its capacity (the rest are freed). A port
    /// has one direction, so a destination's are all receive buffers: each is zero-filled to
    /// the port's largest size once, when it is made, and reused as it is (an earlier message's
    /// bytes past the new one's length are never read).
    spare: Vec<Vec<u8>>,
}

/// Keep `buf` for reuse in `spare` if there is room (no allocation), else free it.
fn recycle(spare: &mut Vec<Vec<u8>>, buf: Vec<u8>) {
    if spare.len() < spare.capacity() {
        spare.push(buf);
    }
}

struct QueuingPort {
    name: String,
    /// Its place in the registry's `queuing_by_id` (its id less 1).
    index: usize,
    direction: PortDirection,
    max: u32,
    max_nb: u32,
    discipline: QueuingDiscipline,
    /// The lock-free side of this port's endpoint: readiness, parking, counting.
    waiter: QueueWaiter,
    /// Changes whenever the set of waiters changes (a parked head re-checks its place).
    gen: AtomicU64,
    mode: ModeCell,
    state: BiasedLock<QueuingState>,
    /// Futex word the processes queued behind the head wait on (bumped when one leaves).
    wake: AtomicU32,
}

/// A port's [`RecvMode`], read without a lock on the message path (one load).
struct ModeCell(AtomicU64);

impl ModeCell {
    const SPIN: u64 = 0;
    const BLOCKING: u64 = 1;
    /// `SpinThenPark { spins }`: this tag, `spins` in the upper 32 bits.
    const SPIN_THEN_PARK: u64 = 2;

    fn new(mode: RecvMode) -> ModeCell {
        let c = ModeCell(AtomicU64::new(0));
        c.set(mode);
        c
    }

    fn set(&self, mode: RecvMode) {
        let v = match mode {
            RecvMode::Spin => Self::SPIN,
            RecvMode::Blocking => Self::BLOCKING,
            RecvMode::SpinThenPark { spins } => Self::SPIN_THEN_PARK | u64::from(spins) << 32,
        };
        self.0.store(v, Ordering::Relaxed);
    }

    #[inline]
    fn get(&self) -> RecvMode {
        let v = self.0.load(Ordering::Relaxed);
        match v & 0xffff_ffff {
            Self::SPIN => RecvMode::Spin,
            Self::BLOCKING => RecvMode::Blocking,
            _ => RecvMode::SpinThenPark {
                spins: (v >> 32) as u32,
            },
        }
    }
}

struct Registry {
    mapped: Result<Vec<MappedPort>, String>,
    /// Creation and lookups by name (serialised).
    sampling: Mutex<Vec<Arc<SamplingPort>>>,
    queuing: Mutex<Vec<Arc<QueuingPort>>>,
    /// Lookups by id on the message paths: set once per port, read without a lock.
    sampling_by_id: Box<[OnceLock<Arc<SamplingPort>>]>,
    queuing_by_id: Box<[OnceLock<Arc<QueuingPort>>]>,
}

fn registry() -> &'static Registry {
    static REG: OnceLock<Registry> = OnceLock::new();
    REG.get_or_init(|| {
        let mapped = map_inherited();
        if let Err(e) = &mapped {
            eprintln!("partix partition: ports unavailable: {e}");
        }
        Registry {
            mapped,
            sampling: Mutex::new(Vec::new()),
            queuing: Mutex::new(Vec::new()),
            sampling_by_id: (0..MAX_NUMBER_OF_PORTS).map(|_| OnceLock::new()).collect(),
            queuing_by_id: (0..MAX_NUMBER_OF_PORTS).map(|_| OnceLock::new()).collect(),
        }
    })
}

/// A port lock (or a registry lock) held with control signals deferred (see the module docs).
struct PortGuard<G> {
    /// Dropped first: the lock is released before the deferral ends.
    guard: G,
    defer: Deferral,
}

impl<T> PortGuard<BiasedGuard<'_, T>> {
    /// Unlock, then end the deferral, here and inline: the compiler keeps drop glue out of line,
    /// and every call on a port call's path is stores (see [`QueuingPort::wait_for`]).
    #[inline(always)]
    fn release(self) {
        let PortGuard { guard, defer } = self;
        guard.release();
        drop(defer);
    }
}

impl<G: std::ops::Deref> std::ops::Deref for PortGuard<G> {
    type Target = G::Target;
    #[inline]
    fn deref(&self) -> &G::Target {
        &self.guard
    }
}

impl<G: std::ops::DerefMut> std::ops::DerefMut for PortGuard<G> {
    #[inline]
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.guard
    }
}

/// Lock a port with control signals deferred until the lock is released. The port lock is
/// biased to the thread that uses the port ([`BiasedLock`]): its calls take no locked
/// instruction while no other thread uses the port.
#[inline(always)]
fn lock<T>(m: &BiasedLock<T>) -> PortGuard<BiasedGuard<'_, T>> {
    let defer = rt::defer_control();
    PortGuard {
        guard: m.lock(),
        defer,
    }
}

/// Lock a registry table with control signals deferred until the lock is released, ignoring
/// poisoning (a panicking process must not take the ports down).
fn lock_registry<T>(m: &Mutex<T>) -> PortGuard<MutexGuard<'_, T>> {
    let defer = rt::defer_control();
    PortGuard {
        guard: m.lock().unwrap_or_else(|e| e.into_inner()),
        defer,
    }
}

fn direction_of(d: CfgDirection) -> PortDirection {
    match d {
        CfgDirection::Source => PortDirection::Source,
        CfgDirection::Destination => PortDirection::Destination,
    }
}

fn configured(name: &str, kind: ChannelKind) -> ApexResult<&'static MappedPort> {
    let reg = registry();
    let ports = reg.mapped.as_ref().map_err(|_| ApexError::InvalidConfig)?;
    ports
        .iter()
        .find(|p| p.desc.kind == kind && p.desc.name == name)
        .ok_or(ApexError::InvalidConfig)
}

fn creation_mode_ok() -> ApexResult<()> {
    if rt().mode() == mode::NORMAL {
        Err(ApexError::InvalidMode)
    } else {
        Ok(())
    }
}

/// Check that the caller may wait: a process, not the error handler, not holding the
/// preemption lock. Return its index.
fn waiting_caller() -> ApexResult<usize> {
    let r = rt();
    match rt::self_index() {
        None | Some(EH_INDEX) => Err(ApexError::InvalidMode),
        Some(idx) => r.with_inner(|inner| {
            if inner.lock_owner == Some(idx) {
                return Err(ApexError::InvalidMode);
            }
            Ok(idx)
        }),
    }
}

/// SET_PRIORITY changed the priority of process `idx`: wake the waiters of the PRIORITY
/// queuing port whose line it is in ([`rt::ProcCtl::port_line`]), if any. The order is read at
/// every look at the line ([`Waiter::priority`]), so it is right at the next look anyway; what
/// this adds is that a waiter that has become the head (or the watcher), asleep on the port's
/// `wake` word until its 50 ms check, takes its place at once, and that an old head parked on
/// the channel steps back.
///
/// Called by `set_priority` with the runtime lock held (before a control request that reached
/// the caller is honoured, so a suspended or stopped caller cannot leave the wake undone), and
/// so without the port lock: lock-free, as a kick. A waiter takes its snapshots of `wake` and
/// `gen` before the look that decides whether and where it waits (`wait_queued`), so if its
/// snapshot misses these bumps its wait returns at once, and if it sees them (a SeqCst load of
/// a value of this release RMW or a later one) it reads the new priority, published before.
/// The word: the caller's fence comes after the priority is published, the joiner's after its
/// word is stored, so either this reads the word of the line the process joins or the joiner's
/// first look at its line reads the new priority.
pub(crate) fn priority_changed(idx: usize) {
    std::sync::atomic::fence(Ordering::SeqCst);
    let Some(ctl) = rt().ctl.get(idx) else {
        return;
    };
    let line = ctl.port_line.load(Ordering::SeqCst) as usize;
    let Some(port) = line
        .checked_sub(1)
        .and_then(|i| registry().queuing_by_id.get(i))
        .and_then(OnceLock::get)
    else {
        return;
    };
    if port.discipline != QueuingDiscipline::Priority {
        return;
    }
    port.gen.fetch_add(1, Ordering::SeqCst);
    port.wake.fetch_add(1, Ordering::SeqCst);
    futex::wake_all(&port.wake);
    port.waiter.kick();
}

/// Check a timeout: `INFINITE_TIME_VALUE`, 0, or positive ns.
fn check_timeout(t: SystemTime) -> ApexResult<()> {
    if t < 0 && t != INFINITE_TIME_VALUE {
        Err(ApexError::InvalidParam)
    } else {
        Ok(())
    }
}

fn deadline_of(t: SystemTime) -> Option<Instant> {
    if t == INFINITE_TIME_VALUE {
        None
    } else {
        Some(Instant::now() + Duration::from_nanos(t as u64))
    }
}

/// The word of a wait on the queuing port at `index` of the registry, with `ticket` in its line,
/// in [`rt::ProcCtl::port_wait`]: the index plus 1 in the top 16 bits, the ticket's low 48 bits
/// below (a port's tickets count its waits: 2^48 of them are never reached).
fn port_wait_word(index: usize, ticket: u64) -> u64 {
    ((index as u64 + 1) << 48) | (ticket & PORT_WAIT_TICKET)
}

const PORT_WAIT_TICKET: u64 = (1 << 48) - 1;

/// The deadline monitor's look at a queuing port when the time-out of a process's wait there
/// has expired (`word`: the process's [`rt::ProcCtl::port_wait`]; the monitor looks
/// `hm::PORT_WAIT_GRACE_NS` after the deadline): as ARINC 653 decides a time-out at the
/// deadline, not at the first call on the port after it. Under the port lock:
/// the waiters that the channel can serve in their place are served, in line order (so a
/// message or room that is there now, having come before the deadline, still goes to the
/// waiter, or to one ahead of it); then, if the process is still in the line, it is taken out,
/// and returns `TIMED_OUT` when it runs. A message or room that comes later is not its. Without
/// this look, a waiter kept from running past its deadline (suspended, or kept off the CPU by
/// a process of higher priority) took what came between its deadline and its own next look.
///
/// Called by the deadline monitor only (SCHED_FIFO 98, above every process of the partition:
/// the port lock's holder, if any, is out of it before the monitor's revocation returns, or
/// runs at the monitor's priority until it is). A receiver served here takes a message buffer
/// the port keeps: each receiver that can be served in its place made one when it joined the
/// line (`wait_for`), so the monitor allocates only if that allocation had failed.
pub(crate) fn look_at_expired_wait(process: usize, word: u64) {
    let ctl = &rt().ctl[process];
    let port = usize::try_from(word >> 48)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| registry().queuing_by_id.get(i))
        .and_then(OnceLock::get);
    let Some(port) = port else {
        let _ = ctl
            .port_wait
            .compare_exchange(word, 0, Ordering::AcqRel, Ordering::Relaxed);
        return;
    };
    let mut st = lock(&port.state);
    port.prune(&mut st);
    port.serve_waiters(&mut st, None);
    let me = st
        .waiters
        .iter()
        .find(|w| w.process == process && w.ticket & PORT_WAIT_TICKET == word & PORT_WAIT_TICKET)
        .map(|w| (w.ticket, w.deadline_ns));
    match me {
        Some((ticket, due)) if rt().now() >= due => {
            port.leave(&mut st, ticket);
            drop(st);
            // The process may be parked on the channel (the head) or on `wake`: it wakes, finds
            // itself out of the line past its deadline, and returns TIMED_OUT.
            futex::wake_all(&port.wake);
            port.waiter.kick();
        }
        Some(_) => {}
        None => {
            // Served, or gone: `leave` and `prune` cleared the word, unless it is another's now.
            let _ = ctl
                .port_wait
                .compare_exchange(word, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
    }
}

fn open_err<E>(_: E) -> ApexError {
    ApexError::InvalidConfig
}

// ------------------------------------------------------------------------------------------
// Sampling ports

/// The refresh period (ns) the configuration gives this partition's sampling port `name`
/// (partix extension: an API whose sampling sources do not name one, a653rs's, creates them
/// with it).
///
/// # Errors
/// `InvalidConfig`: the partition's configuration has no sampling port `name`.
pub fn sampling_port_refresh_period(name: &str) -> ApexResult<SystemTime> {
    let cfg = configured(name, ChannelKind::Sampling)?;
    SystemTime::try_from(cfg.desc.param).map_err(|_| ApexError::InvalidConfig)
}

/// Create a sampling port (`CREATE_SAMPLING_PORT`) in COLD_START or WARM_START mode.
///
/// A shared-memory destination keeps two private buffers of `max_message_size` + 4 KiB (a
/// read's copy and the last good message), taken here from the partition's memory; a source,
/// or a socket destination, none.
///
/// # Errors
/// - `InvalidConfig`: the partition's configuration has no sampling port `name`, or
///   `max_message_size`, `direction` or `refresh_period` (ns) differ from it; or the
///   partition's memory cannot hold the port's private buffers (insufficient storage; checked
///   after the parameters, before the mode).
/// - `NoAction`: the port was already created.
/// - `InvalidMode`: the partition is in NORMAL mode.
pub fn create_sampling_port(
    name: &str,
    max_message_size: u32,
    direction: PortDirection,
    refresh_period: SystemTime,
) -> ApexResult<SamplingPortId> {
    let cfg = configured(name, ChannelKind::Sampling)?;
    let mut ports = lock_registry(&registry().sampling);
    if ports.iter().any(|p| p.name == name) {
        return Err(ApexError::NoAction);
    }
    if ports.len() >= MAX_NUMBER_OF_PORTS
        || max_message_size != cfg.desc.max_message_size
        || direction != direction_of(cfg.desc.direction)
        || refresh_period < 0
        || refresh_period as u64 != cfg.desc.param
    {
        return Err(ApexError::InvalidConfig);
    }
    // The private copies a read goes through (`scratch`, `last`): only a shared-memory
    // destination has them. A source never reads, and a socket destination reads straight into
    // the caller's buffer (`SamplingDestination::keeps_last`). Insufficient storage is
    // INVALID_CONFIG, not an abort of the partition: after the parameter checks and before the
    // mode check, as for queuing ports.
    let copies = direction == PortDirection::Destination
        && !matches!(cfg.desc.transport, Transport::Udp | Transport::Tcp);
    let len = if copies {
        max_message_size as usize + PAGE
    } else {
        0
    };
    let scratch = zeroed(len)?;
    let last = zeroed(len)?;
    creation_mode_ok()?;
    let (source, dest) = match direction {
        PortDirection::Source => (Some(SamplingSource::attach(cfg).map_err(open_err)?), None),
        PortDirection::Destination => (
            None,
            Some(SamplingDestination::attach(cfg).map_err(open_err)?),
        ),
    };
    debug_assert_eq!(copies, dest.as_ref().is_some_and(|d| !d.keeps_last()));
    let from = dest.as_ref().and_then(SamplingDestination::source_addr);
    let port = Arc::new(SamplingPort {
        name: name.to_owned(),
        direction,
        max: max_message_size,
        refresh_ns: cfg.desc.param,
        mode: ModeCell::new(cfg.desc.recv_mode.unwrap_or(DEFAULT_RECV_MODE)),
        slice_ns: AtomicU64::new(DEFAULT_WAIT_SLICE as u64),
        last_valid: AtomicBool::new(false),
        inner: BiasedLock::new(SamplingInner {
            source,
            dest,
            scratch,
            scratch_at: 0,
            last,
            last_at: 0,
            last_len: 0,
            max: max_message_size as usize,
            from,
            last_stamp: None,
            last_seq: None,
            counters: SamplingPortCounters::default(),
        }),
    });
    let _ = registry().sampling_by_id[ports.len()].set(port.clone());
    ports.push(port);
    Ok(SamplingPortId(ports.len() as i32))
}

/// `len` zero bytes from the partition's memory, or `InvalidConfig` when it cannot hold them
/// (a failed allocation must not abort the partition; see `transport::socket::zeroed`).
fn zeroed(len: usize) -> ApexResult<Vec<u8>> {
    crate::transport::socket::zeroed(len).map_err(|_| ApexError::InvalidConfig)
}

/// Return the port of `id` (no lock: the table is filled once per port).
#[inline]
fn sampling(id: SamplingPortId) -> ApexResult<&'static SamplingPort> {
    id.0.checked_sub(1)
        .and_then(|i| usize::try_from(i).ok())
        .and_then(|i| registry().sampling_by_id.get(i))
        .and_then(OnceLock::get)
        .map(|p| &**p)
        .ok_or(ApexError::InvalidParam)
}

/// Write a message to a source sampling port (`WRITE_SAMPLING_MESSAGE`); it replaces the previous
/// one in every destination.
///
/// # Errors
/// - `InvalidParam`: no such port, or `message` is empty.
/// - `InvalidConfig`: `message` is longer than the port's maximum.
/// - `InvalidMode`: the port is a destination port.
pub fn write_sampling_message(id: SamplingPortId, message: &[u8]) -> ApexResult<()> {
    let port = sampling(id)?;
    if message.len() > port.max as usize {
        return Err(ApexError::InvalidConfig);
    }
    if message.is_empty() {
        return Err(ApexError::InvalidParam);
    }
    if port.direction != PortDirection::Source {
        return Err(ApexError::InvalidMode);
    }
    let mut inner = lock(&port.inner);
    let r = match inner.source.as_mut() {
        Some(source) => {
            // Stamped inside, under the lock and the park hold-off: when it is written.
            source.write(message);
            Ok(())
        }
        None => Err(ApexError::InvalidMode),
    };
    // Released inline (see [`PortGuard::release`]).
    inner.release();
    r
}

/// Read the latest message of a destination sampling port (`READ_SAMPLING_MESSAGE`) into `buf`
/// (which should hold the port's maximum message size); return its length and validity. The
/// message stays in the port.
///
/// # Errors
/// - `InvalidParam`: no such port, or `buf` is shorter than the message.
/// - `InvalidMode`: the port is a source port.
/// - `NoAction`: no message was ever written (or none was read before its writer died mid-write).
pub fn read_sampling_message(id: SamplingPortId, buf: &mut [u8]) -> ApexResult<(usize, Validity)> {
    let port = sampling(id)?;
    if port.direction != PortDirection::Destination {
        return Err(ApexError::InvalidMode);
    }
    let mut guard = lock(&port.inner);
    let r = read_locked(port, &mut guard, buf);
    // Released inline (see [`PortGuard::release`]).
    guard.release();
    r
}

/// [`read_sampling_message`] under the port lock.
#[inline(always)]
fn read_locked(
    port: &SamplingPort,
    inner: &mut SamplingInner,
    buf: &mut [u8],
) -> ApexResult<(usize, Validity)> {
    let at = inner.place(buf);
    let reader = inner.dest.as_mut().ok_or(ApexError::InvalidMode)?;
    // A poll that finds the message it already holds (one-sided: one load of the slot's `end`
    // word) answers from the private copy without touching the slot's payload lines, which the
    // writer may be filling.
    if let Some(seq) = inner.last_seq {
        if reader.unchanged(seq, inner.last_len) {
            return inner.answer_last(port, buf);
        }
    }
    if reader.keeps_last() {
        let r = reader.read(buf);
        return inner.answer_direct(port, r);
    }
    let r = reader.read(&mut inner.scratch[at..at + inner.max]);
    inner.answer(port, r, buf)
}

/// Where in a private buffer at `base` to put a copy that comes from `from` (if known) and goes
/// on to `to`, so that neither copy has its destination a few bytes ahead of its source modulo
/// 4 KiB. Such a destination makes the loads of a wide copy look as if they depended on the
/// stores just made ("4K aliasing"): a 4 KiB `memcpy` took 200–320 ns there against 57–95 ns
/// elsewhere on the 2-vCPU AMD EPYC VM (`docs/bench-rtt.md`, session 14), and where a buffer
/// lands relative to the slot and the caller's buffer is up to the heap. The copy from the
/// shared slot (another core's lines) is placed half a page from its source and line-aligned
/// with it; the local copy to `to` is then moved two lines if it would fall in the window.
#[inline]
fn copy_offset(base: *const u8, from: Option<usize>, to: usize) -> usize {
    let b = base as usize;
    match from {
        Some(src) => {
            let k = far_from(src as *const u8, base);
            let ahead = to.wrapping_sub(b.wrapping_add(k)) % PAGE;
            if ahead != 0 && ahead < 64 {
                (k + 128) % PAGE
            } else {
                k
            }
        }
        // Half a page from where the copy goes on to.
        None => far_from(to as *const u8, base),
    }
}

impl SamplingInner {
    /// Choose where in `scratch` the next read lands, for a caller reading into `buf`
    /// ([`copy_offset`]); return it.
    #[inline(always)]
    fn place(&mut self, buf: &[u8]) -> usize {
        self.scratch_at = copy_offset(self.scratch.as_ptr(), self.from, buf.as_ptr() as usize);
        self.scratch_at
    }

    /// The answer to a read that went straight into the caller's buffer: socket transports keep
    /// the newest frame themselves (a frame is never torn, so there is no last good copy to
    /// fall back on), and the port keeps only its flags and stamp. One copy of the payload less
    /// per message (udp 4 KiB round trip over raw UDP, alternated builds: +0.63/+0.75 µs with
    /// the port's copy, +0.44/+0.54 µs without).
    #[inline(always)]
    fn answer_direct(
        &mut self,
        port: &SamplingPort,
        r: Result<ReadOk, ReadError>,
    ) -> ApexResult<(usize, Validity)> {
        match r {
            Ok(ok) => {
                self.last_len = ok.len;
                self.last_stamp = Some(ok.written_at_ns);
                self.last_seq = Some(ok.seq);
                Ok((ok.len, self.validity(port, ok.written_at_ns)))
            }
            Err(ReadError::Empty) => Err(ApexError::NoAction),
            Err(ReadError::BufferTooSmall { .. }) => Err(ApexError::InvalidParam),
            // Never from a socket transport.
            Err(_) => Err(ApexError::InvalidConfig),
        }
    }

    /// The validity of a message written at `stamp`, now; kept for GET_SAMPLING_PORT_STATUS.
    #[inline]
    fn validity(&mut self, port: &SamplingPort, stamp: u64) -> Validity {
        let age = now_ns().saturating_sub(stamp);
        let validity = if age <= port.refresh_ns {
            Validity::Valid
        } else {
            Validity::Invalid
        };
        port.last_valid
            .store(validity == Validity::Valid, Ordering::Relaxed);
        validity
    }

    /// Keep a good read as the last message (a failed one leaves the last good copy), copy the
    /// last message into `buf`, and return its length and validity.
    #[inline(always)]
    fn answer(
        &mut self,
        port: &SamplingPort,
        r: Result<ReadOk, ReadError>,
        buf: &mut [u8],
    ) -> ApexResult<(usize, Validity)> {
        let inner = self;
        let returned = inner.last_seq;
        match r {
            Ok(ok) => {
                if ok.attempts > 1 {
                    inner.counters.retried_reads += 1;
                }
                std::mem::swap(&mut inner.scratch, &mut inner.last);
                std::mem::swap(&mut inner.scratch_at, &mut inner.last_at);
                inner.last_len = ok.len;
                inner.last_stamp = Some(ok.written_at_ns);
                inner.last_seq = Some(ok.seq);
            }
            Err(ReadError::Empty) => return Err(ApexError::NoAction),
            // The slot is mid-write (or was left so by a killed writer): the scratch copy is
            // garbage; answer with the last good copy, if any.
            Err(ReadError::Contended { .. } | ReadError::Corrupt) => {
                inner.counters.fallback_answers += 1;
            }
            Err(_) => {}
        }
        let a = inner.answer_last(port, buf);
        if a == Err(ApexError::InvalidParam) {
            // A buffer too short for the message: it still becomes the last good copy (a
            // later read with a buffer that fits returns it), but the caller did not get it,
            // so a wait after this call must not wait past it.
            inner.last_seq = returned;
        }
        a
    }

    /// Copy the last good message into `buf`; return its length and validity.
    #[inline(always)]
    fn answer_last(
        &mut self,
        port: &SamplingPort,
        buf: &mut [u8],
    ) -> ApexResult<(usize, Validity)> {
        let inner = self;
        let Some(stamp) = inner.last_stamp else {
            return Err(ApexError::NoAction);
        };
        let len = inner.last_len;
        if buf.len() < len {
            return Err(ApexError::InvalidParam);
        }
        let at = inner.last_at;
        buf[..len].copy_from_slice(&inner.last[at..at + len]);
        Ok((len, inner.validity(port, stamp)))
    }
}

/// Wait up to `timeout` ns (0: do not wait; `INFINITE_TIME_VALUE`: no limit) for a message newer
/// than the last one this port returned, then read it like [`read_sampling_message`] (partix
/// extension; the wait uses the mode set by [`set_sampling_port_recv_mode`],
/// [`DEFAULT_RECV_MODE`] by default; a zero `timeout` is a single look). The caller shows WAITING
/// while it waits.
///
/// # Errors
/// - `InvalidParam`: no such port, `timeout` out of range, or `buf` is shorter than the message
///   (which stays newer than the last one returned: a wait with a buffer that fits returns it).
/// - `InvalidMode`: the port is a source port; or `timeout` ≠ 0 and the caller is the error
///   handler, holds the preemption lock, or is not a process.
/// - `NotAvailable`: no newer message and `timeout` is 0.
/// - `TimedOut`: no newer message within `timeout`.
pub fn wait_sampling_message(
    id: SamplingPortId,
    timeout: SystemTime,
    buf: &mut [u8],
) -> ApexResult<(usize, Validity)> {
    let port = sampling(id)?;
    check_timeout(timeout)?;
    if port.direction != PortDirection::Destination {
        return Err(ApexError::InvalidMode);
    }
    let mode = port.mode.get();
    // First look without waiting.
    let mut last_seq = {
        let mut guard = lock(&port.inner);
        let mut last_seq = guard.last_seq;
        // A new call: what earlier calls saw of a socket says nothing about its queue now.
        if let Some(reader) = guard.dest.as_mut() {
            reader.new_call();
        }
        let got = look_once(port, &mut guard, buf, &mut last_seq, u64::MAX);
        guard.release();
        match got {
            Some(r) => return r,
            None if timeout == 0 => return Err(ApexError::NotAvailable),
            None => last_seq,
        }
    };
    waiting_caller()?;
    // The deadline on the clock of the messages' write times (`now_ns`): a message written after
    // it is not this wait's, though a wait resumed late (its partition's window closed at the
    // deadline) finds it (see `wait_slice`).
    let deadline =
        (timeout != INFINITE_TIME_VALUE).then(|| now_ns().saturating_add(timeout as u64));
    let due_ns = deadline.unwrap_or(u64::MAX);
    let max_slice = Duration::from_nanos(port.slice_ns.load(Ordering::Relaxed));
    // A control request (STOP / SUSPEND) reaching this thread while it waits under the port lock
    // is deferred by the lock's section: the wait gives up at once (one thread-local load per
    // poll; a park is interrupted by the request's signal), the end of this iteration releases
    // the port and honours the request (parks while suspended, ends the thread when stopped), and a
    // resumed process waits again for the rest of its time-out. Only when this call opens the
    // outermost section (always, for a process calling the service): otherwise the request
    // stays pending after the port is released and would end every slice at once.
    let interruptible = rt::outside_sections();
    let stop = move || interruptible && rt::control_pending();
    // A wait that spins first (Spin, and SpinThenPark, the default) spins for up to
    // UNMARKED_SPIN without showing WAITING: a message that comes that soon (a ping-pong, a
    // periodic writer just late) is returned without the two updates of the process table (the
    // runtime lock, twice) on its path. The caller runs meanwhile, like a process polling
    // READ_SAMPLING_MESSAGE. A SpinThenPark wait then shows WAITING and spins and parks as its
    // mode says (its spins come after the unmarked ones).
    let mut marked = mode == RecvMode::Blocking;
    // WAITING until the deadline, as an `Instant` (a clock read only on the way to a mark).
    let shown_until =
        || deadline.map(|d| Instant::now() + Duration::from_nanos(d.saturating_sub(now_ns())));
    if marked {
        rt().enter_resource_wait(shown_until());
    }
    // Wait in slices of at most `max_slice`, releasing the port between them, so that a process
    // reading the same port is never held up for longer than a slice. The first slice needs no
    // clock read (`deadline` was just taken); later ones are what is left of the time-out.
    let mut first = Some(if timeout == INFINITE_TIME_VALUE {
        max_slice
    } else {
        Duration::from_nanos(timeout as u64).min(max_slice)
    });
    let r = loop {
        let mut slice = first.take().unwrap_or_else(|| {
            deadline.map_or(max_slice, |d| {
                Duration::from_nanos(d.saturating_sub(now_ns())).min(max_slice)
            })
        });
        if !marked {
            slice = slice.min(UNMARKED_SPIN);
        }
        let slice_mode = if marked { mode } else { RecvMode::Spin };
        let mut guard = lock(&port.inner);
        let got = wait_slice(
            port,
            &mut guard,
            buf,
            &mut last_seq,
            slice_mode,
            slice,
            due_ns,
            &stop,
        );
        // Released inline (see [`PortGuard::release`]); a control request that came while
        // waiting is honoured here.
        guard.release();
        match got {
            Some(r) => break r,
            // The slice ended, or a control request came.
            None => {
                if deadline.is_some_and(|d| now_ns() >= d) {
                    // A last look, after moving what a two-sided manager thread has not (it
                    // may not have run since the deadline: the partition's window was closed):
                    // a message written by the deadline is the wait's.
                    let mut guard = lock(&port.inner);
                    if let Some(reader) = guard.dest.as_mut() {
                        reader.move_late();
                    }
                    let got = look_once(port, &mut guard, buf, &mut last_seq, due_ns);
                    guard.release();
                    break got.unwrap_or(Err(ApexError::TimedOut));
                }
            }
        }
        if !marked {
            // Outside the port lock (it takes the runtime lock).
            rt().enter_resource_wait(shown_until());
            marked = true;
        }
    };
    if marked {
        rt().leave_resource_wait();
    }
    r
}

/// One look of [`wait_sampling_message`] (a [`wait_slice`] of zero length), under the port
/// lock: the wait's first, and its last once its deadline (`due_ns`) passed.
#[inline(always)]
fn look_once(
    port: &SamplingPort,
    inner: &mut SamplingInner,
    buf: &mut [u8],
    last_seq: &mut Option<u32>,
    due_ns: u64,
) -> Option<ApexResult<(usize, Validity)>> {
    wait_slice(
        port,
        inner,
        buf,
        last_seq,
        RecvMode::Spin,
        Duration::ZERO,
        due_ns,
        &|| false,
    )
}

/// One slice of [`wait_sampling_message`]'s wait, under the port lock: the answer, or `None`
/// when the slice ended (or a control request came) with nothing newer.
///
/// A newer message whose read fails (the slot is mid-write for good: its writer was killed
/// inside a write, or a broken source holds it so) is not an answer: nothing newer can be read.
/// The wait goes on past it (`last_seq` becomes its sequence number, so the wait is ready again
/// only when the slot changes); before, it returned the last good copy at once, the message it
/// was asked to wait past, and a waiting loop spun on it.
///
/// A newer message written after `due_ns` (the wait's deadline, on the clock of
/// [`now_ns`]) is not the wait's: ARINC 653 decides a time-out at the deadline, whether the
/// partition runs then or not, and a wait whose partition's window closed while it waited finds,
/// when the window opens, what was written after its deadline. The answer is `TIMED_OUT`; the
/// message becomes the port's last one, as a read's, but stays newer than the last one returned
/// (the next wait returns it). Before (sessions 31-35), the wait returned it. A sampling port
/// keeps only its newest message: one written by the deadline and overwritten after it is gone,
/// and the wait times out.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn wait_slice(
    port: &SamplingPort,
    inner: &mut SamplingInner,
    buf: &mut [u8],
    last_seq: &mut Option<u32>,
    mode: RecvMode,
    slice: Duration,
    due_ns: u64,
    stop: &impl Fn() -> bool,
) -> Option<ApexResult<(usize, Validity)>> {
    let at = inner.place(buf);
    let max = inner.max;
    let Some(reader) = inner.dest.as_mut() else {
        return Some(Err(ApexError::InvalidMode));
    };
    let direct = reader.keeps_last();
    let into = if direct {
        &mut *buf
    } else {
        &mut inner.scratch[at..at + max]
    };
    Some(
        match reader.wait_newer_or(into, *last_seq, mode, Some(slice), stop) {
            // (Judged by the reader's own clock too: each partition's clock is its own
            // calibration of `CLOCK_MONOTONIC`, and a message stamped just after the deadline
            // by the writer's may come before it by the reader's.)
            Ok(ok) if ok.written_at_ns > due_ns && now_ns() >= due_ns => {
                let returned = inner.last_seq;
                let _ = if direct {
                    inner.answer_direct(port, Ok(ok))
                } else {
                    inner.answer(port, Ok(ok), buf)
                };
                inner.last_seq = returned;
                inner.counters.written_after_deadline += 1;
                Err(ApexError::TimedOut)
            }
            Ok(ok) if direct => inner.answer_direct(port, Ok(ok)),
            Err(WaitError::Read(e)) if direct => inner.answer_direct(port, Err(e)),
            Ok(ok) => inner.answer(port, Ok(ok), buf),
            Err(WaitError::TimedOut) => return None,
            Err(WaitError::Read(ReadError::Contended { .. } | ReadError::Corrupt)) => {
                if let Some(seq) = reader.newest_seq() {
                    *last_seq = Some(seq);
                }
                inner.counters.unreadable_waited_past += 1;
                return None;
            }
            Err(WaitError::Read(e)) => inner.answer(port, Err(e), buf),
            Err(_) => Err(ApexError::InvalidConfig),
        },
    )
}

/// How long a spinning [`wait_sampling_message`] spins before it shows the caller WAITING.
const UNMARKED_SPIN: Duration = Duration::from_micros(20);

/// Longest time [`wait_sampling_message`] holds a port while waiting, unless
/// [`set_sampling_port_wait_slice`] changed it for the port.
pub const DEFAULT_WAIT_SLICE: SystemTime = 20_000_000;

/// Set how long [`wait_sampling_message`] holds a destination sampling port at a time while it
/// waits (partix extension; [`DEFAULT_WAIT_SLICE`] by default): between slices it releases the
/// port, so another process of the partition reading the same port waits at most this long. A
/// longer slice costs fewer wake-ups to a waiter in a parking mode. STOP and SUSPEND of the
/// waiting process take effect at once whatever the slice.
///
/// # Errors
/// `InvalidParam`: no such port, or `slice` is not positive (`INFINITE_TIME_VALUE` included).
pub fn set_sampling_port_wait_slice(id: SamplingPortId, slice: SystemTime) -> ApexResult<()> {
    let port = sampling(id)?;
    if slice <= 0 {
        return Err(ApexError::InvalidParam);
    }
    port.slice_ns.store(slice as u64, Ordering::Relaxed);
    Ok(())
}

/// Set how [`wait_sampling_message`] waits on a destination sampling port (partix extension).
///
/// # Errors
/// `InvalidParam`: no such port.
pub fn set_sampling_port_recv_mode(id: SamplingPortId, mode: RecvMode) -> ApexResult<()> {
    let port = sampling(id)?;
    port.mode.set(mode);
    Ok(())
}

/// Return how [`wait_sampling_message`] waits on a sampling port (partix extension): the
/// configuration's `partix:ReceiveMode`, [`DEFAULT_RECV_MODE`] without it, or what
/// [`set_sampling_port_recv_mode`] set last.
///
/// # Errors
/// `InvalidParam`: no such port.
pub fn sampling_port_recv_mode(id: SamplingPortId) -> ApexResult<RecvMode> {
    Ok(sampling(id)?.mode.get())
}

/// Return the diagnostic counters of a destination sampling port (partix extension; see
/// [`SamplingPortCounters`]). Takes the port, so it waits for a process of the partition that
/// holds it (a wait holds it for up to its slice).
///
/// # Errors
/// - `InvalidParam`: no such port.
/// - `InvalidMode`: the port is a source port.
pub fn sampling_port_counters(id: SamplingPortId) -> ApexResult<SamplingPortCounters> {
    let port = sampling(id)?;
    if port.direction != PortDirection::Destination {
        return Err(ApexError::InvalidMode);
    }
    let inner = lock(&port.inner);
    let mut c = inner.counters;
    if let Some(d) = inner.dest.as_ref() {
        c.manager_retries = d.manager_retries();
    }
    inner.release();
    Ok(c)
}

/// Return the id of the created sampling port `name` (`GET_SAMPLING_PORT_ID`).
///
/// # Errors
/// `InvalidConfig`: no sampling port of that name was created.
pub fn get_sampling_port_id(name: &str) -> ApexResult<SamplingPortId> {
    let ports = lock_registry(&registry().sampling);
    ports
        .iter()
        .position(|p| p.name == name)
        .map(|i| SamplingPortId(i as i32 + 1))
        .ok_or(ApexError::InvalidConfig)
}

/// Return the status of a sampling port (`GET_SAMPLING_PORT_STATUS`).
///
/// # Errors
/// `InvalidParam`: no such port.
pub fn get_sampling_port_status(id: SamplingPortId) -> ApexResult<SamplingPortStatus> {
    let port = sampling(id)?;
    // Without the port lock: a process of the partition waiting on the port holds it for up
    // to its wait slice.
    let last_msg_validity = if port.last_valid.load(Ordering::Relaxed) {
        Validity::Valid
    } else {
        Validity::Invalid
    };
    Ok(SamplingPortStatus {
        refresh_period: port.refresh_ns.min(i64::MAX as u64) as SystemTime,
        max_message_size: port.max,
        port_direction: port.direction,
        last_msg_validity,
    })
}

/// The maximum message size of sampling port `id`: GET_SAMPLING_PORT_STATUS's
/// `MAX_MESSAGE_SIZE`, without taking the port (partix extension). For a caller that checks a
/// message's length on every message (the C API's WRITE / READ wrappers), where the status call
/// would lock the port a second time.
///
/// # Errors
/// `InvalidParam`: no such port.
#[inline]
pub fn sampling_port_max_message_size(id: SamplingPortId) -> ApexResult<u32> {
    Ok(sampling(id)?.max)
}

// ------------------------------------------------------------------------------------------
// Queuing ports

/// Create a queuing port (`CREATE_QUEUING_PORT`) in COLD_START or WARM_START mode.
///
/// The port's waiting machinery (room for [`MAX_PROCESSES`] waiters, messages handed to
/// waiting receivers and message buffers) is reserved here from the partition's memory, so
/// that waiting never allocates it.
///
/// # Errors
/// - `InvalidConfig`: the partition's configuration has no queuing port `name`, or
///   `max_message_size`, `max_nb_message` or `direction` differ from it; or the partition's
///   memory cannot hold the port's waiting machinery (insufficient storage; checked after the
///   parameters, before the mode).
/// - `NoAction`: the port was already created.
/// - `InvalidMode`: the partition is in NORMAL mode.
pub fn create_queuing_port(
    name: &str,
    max_message_size: u32,
    max_nb_message: u32,
    direction: PortDirection,
    discipline: QueuingDiscipline,
) -> ApexResult<QueuingPortId> {
    let cfg = configured(name, ChannelKind::Queuing)?;
    let mut ports = lock_registry(&registry().queuing);
    if ports.iter().any(|p| p.name == name) {
        return Err(ApexError::NoAction);
    }
    if ports.len() >= MAX_NUMBER_OF_PORTS
        || max_message_size != cfg.desc.max_message_size
        || u64::from(max_nb_message) != cfg.desc.param
        || direction != direction_of(cfg.desc.direction)
    {
        return Err(ApexError::InvalidConfig);
    }
    // Insufficient storage is INVALID_CONFIG, not an abort of the partition: reserved (not
    // written) after the parameter checks and before the mode check, as the intra-partition
    // objects' storage.
    let waiters = try_capacity(MAX_PROCESSES)?;
    let handed = try_capacity(MAX_PROCESSES)?;
    let spare = try_capacity(MAX_PROCESSES)?;
    creation_mode_ok()?;
    let (source, dest, waiter) = match direction {
        PortDirection::Source => {
            let s = QueueSource::attach(cfg).map_err(open_err)?;
            let w = s.waiter(cfg).map_err(open_err)?;
            (Some(s), None, w)
        }
        PortDirection::Destination => {
            let d = QueueDestination::attach(cfg).map_err(open_err)?;
            let w = d.waiter(cfg).map_err(open_err)?;
            (None, Some(d), w)
        }
    };
    let port = Arc::new(QueuingPort {
        name: name.to_owned(),
        index: ports.len(),
        direction,
        max: max_message_size,
        max_nb: max_nb_message,
        discipline,
        waiter,
        gen: AtomicU64::new(0),
        mode: ModeCell::new(cfg.desc.recv_mode.unwrap_or(DEFAULT_RECV_MODE)),
        state: BiasedLock::new(QueuingState {
            source,
            dest,
            waiters,
            next_ticket: 0,
            room_asked_ns: 0,
            handed,
            delivery: None,
            spare,
        }),
        wake: AtomicU32::new(0),
    });
    let _ = registry().queuing_by_id[ports.len()].set(port.clone());
    ports.push(port);
    Ok(QueuingPortId(ports.len() as i32))
}

/// Return the port of `id` (no lock: the table is filled once per port).
#[inline]
fn queuing(id: QueuingPortId) -> ApexResult<&'static QueuingPort> {
    id.0.checked_sub(1)
        .and_then(|i| usize::try_from(i).ok())
        .and_then(|i| registry().queuing_by_id.get(i))
        .and_then(OnceLock::get)
        .map(|p| &**p)
        .ok_or(ApexError::InvalidParam)
}

/// How often a process queued behind the head re-checks that the head is still alive.
const STALE_CHECK: Duration = Duration::from_millis(50);

/// What one attempt of a send or receive gave.
enum Try {
    Done(usize),
    Again,
    Fail(ApexError),
}

impl QueuingPort {
    /// Whether the operation of this port's side could succeed now (lock-free probe).
    #[inline]
    fn ready(&self) -> bool {
        self.waiter.ready()
    }

    fn head(&self, st: &QueuingState) -> Option<u64> {
        let w = match self.discipline {
            QueuingDiscipline::Fifo => st
                .waiters
                .iter()
                .filter(|w| w.alive())
                .min_by_key(|w| w.ticket),
            QueuingDiscipline::Priority => st
                .waiters
                .iter()
                .filter(|w| w.alive())
                .min_by_key(|w| (std::cmp::Reverse(w.priority()), w.ticket)),
        };
        w.map(|w| w.ticket)
    }

    /// Whether waiter `w` is served in its place and is suspended ([`Waiter::serve`]: not a
    /// receiver whose buffer is shorter than the port's largest message, which could not take
    /// every message, nor a waiter whose copy could not be had; these hold their place in line
    /// until they take their message or room themselves, or until their time-out): the waiter
    /// behind it watches the channel for it.
    fn servable(&self, w: &Waiter) -> bool {
        w.serve && w.suspended()
    }

    /// The waiter that watches the channel: the first in line that is not a suspended receiver
    /// this port can serve (that one is handed its message by the watcher, in line).
    fn watcher(&self, st: &QueuingState) -> Option<u64> {
        let live = st.waiters.iter().filter(|w| w.alive() && !self.servable(w));
        let w = match self.discipline {
            QueuingDiscipline::Fifo => live.min_by_key(|w| w.ticket),
            QueuingDiscipline::Priority => {
                live.min_by_key(|w| (std::cmp::Reverse(w.priority()), w.ticket))
            }
        };
        w.map(|w| w.ticket)
    }

    /// Whether a destination port holds no message that was sent at or before `deadline_ns`
    /// (module time; `u64::MAX`: never) for the next receive, by the stamp the sender's push
    /// gave it ([`QueueDestination::sent_by`]): then nothing there is due a receiver whose
    /// time-out expired at that deadline, though the receiver did not run since (its
    /// partition's window was closed, or it was suspended or kept off the CPU and the deadline
    /// monitor's look came in its grace after the deadline). True also for an empty channel,
    /// so that a message sent between this look and the receive is not taken for one sent in
    /// time. `false` for a source port.
    fn came_late(st: &mut QueuingState, deadline_ns: u64) -> bool {
        if deadline_ns == u64::MAX {
            return false;
        }
        let Some(d) = st.dest.as_mut() else {
            return false;
        };
        !d.sent_by(rt().ctx.to_monotonic_ns(deadline_ns))
    }

    /// Whether the room a source port has now for its next send was made after `deadline_ns`
    /// (module time; `u64::MAX`: never), by the note the destination made when it made room
    /// after the port was last found full with a sender waiting ([`QueuingPort::ask_room_note`],
    /// [`QueueWaiter::room_by`]; rooms go by number, as the destination counts what it
    /// consumed, so each sender is judged by the room its send takes, whichever sender took
    /// the rooms before it): then it is not due a sender whose time-out expired at that
    /// deadline, though the sender did not run since (its partition's window was closed, or it
    /// was suspended or kept off the CPU). Call it only when there is room. `false` for a
    /// destination port. Over sockets, the acks say ([`QueueSource::room_by`]).
    fn room_came_late(&self, st: &mut QueuingState, deadline_ns: u64) -> bool {
        if deadline_ns == u64::MAX {
            return false;
        }
        let Some(src) = st.source.as_mut() else {
            return false;
        };
        !src.room_by(
            &self.waiter,
            rt().ctx.to_monotonic_ns(deadline_ns),
            st.room_asked_ns,
        )
    }

    /// A source port found full while a sender waits: ask the destination to note when it
    /// next makes room ([`QueueWaiter::ask_room_note`]; a request pending stays). Made at every
    /// such look under the port lock (the head's failed send, a look at the head by another
    /// call, a send that leaves the port full behind it): the note holds the times of the
    /// first few rooms after a request (`NOTE_ROOMS`), and these are the rooms the senders
    /// waiting now will take.
    fn ask_room_note(&self, st: &mut QueuingState) {
        if let Some(src) = st.source.as_mut() {
            st.room_asked_ns = partix_shm::clock::stamp_ns();
            src.ask_room_note(&self.waiter);
        }
    }

    /// ARINC 653 gives a message that arrives while receivers wait to the first of them (and
    /// room that appears while senders wait to the first waiting sender): it leaves the port's
    /// waiting queue with it at once, whether it runs then or not (suspended, kept off the CPU
    /// by a higher-priority process, or its partition's window closed). Here each waiter takes
    /// its message (or room) itself when it runs, so any other call on the port (a caller that
    /// is not `me`, the waiter calling this, if any) first acts for the waiters ahead of it, in
    /// line order: while the head of the line is a waiter that can be served in its place
    /// ([`Waiter::serve`]) and a message is there, the message goes to the receiver's
    /// [`Handed`] slot; while it is a sender and there is room, its message (copied when it
    /// joined) is sent. Either way it leaves the line, and is woken: it returns what it was
    /// given when it runs (or is resumed). So no later caller takes what a waiter was due (a
    /// PRIORITY newcomer, CLEAR_QUEUING_PORT, a TIME_OUT 0 call), and the port never shows a
    /// message queued while a receiver that can be served waits. A head whose time-out has
    /// expired is served the same if what it is due is there (a receiver: a message sent by its
    /// deadline, [`QueuingPort::came_late`]; a sender: room), and otherwise leaves the line (it
    /// returns `TIMED_OUT`): what its own next look would do. An expired head that cannot be
    /// served in its place leaves the line even if the channel is ready: it cannot be given
    /// what is there, and it must not hold the line while it does not run. What was handed to
    /// stopped processes is dropped.
    ///
    /// Stops at `me` (which takes its message itself), at a waiter that cannot be served in its
    /// place and whose time-out has not passed, or when the channel is not ready. Costs nothing
    /// while nobody waits (not called), and per message handed to a receiver two copies (the
    /// channel to a kept buffer here, that buffer to the receiver's when it runs: [`deliver`]),
    /// with no memset: a kept buffer is zero-filled once, when it is made
    /// ([`QueuingState::spare`]). Allocates nothing but a receiver's message buffer, fallibly
    /// (one kept in `spare` when there is one): when it cannot be had, the receiver is not
    /// served in its place for the rest of its wait ([`Waiter::serve`]), and the message stays
    /// in the channel for it.
    fn serve_waiters(&self, st: &mut QueuingState, me: Option<u64>) {
        if !st.handed.is_empty() {
            st.handed.retain(|h| {
                rt().ctl[h.process].incarnation.load(Ordering::Acquire) == h.incarnation
            });
        }
        let mut served = false;
        while let Some(ticket) = self.head(st) {
            if me == Some(ticket) {
                break;
            }
            // A head whose time-out has passed and that can be served in its place is dealt
            // with as its own next look would: served if the channel is ready, else out of the
            // line with `TIMED_OUT` (`wait_queued` tries before it checks the deadline). So the
            // outcome does not depend on who looks first. The deadline monitor looks 0.5 ms
            // after the deadline if the waiter is still in the line (`look_at_expired_wait`), so
            // that what comes later is not the waiter's (docs/ports.md, "A time-out is decided
            // at its deadline"). One that cannot be served in its place
            // leaves the line whether the channel is ready or not, as ARINC times a waiter out at
            // its deadline: nobody else can give it what is there, and left in the line it would
            // hold every waiter and every call that does not wait for as long as it does not
            // run (suspended, or kept off the CPU by the very process that polls).
            // Ready first, then the clock (as before session 34): room made in between is not
            // given to a sender that had expired (a receiver is judged by the stamps).
            let ready = self.ready();
            let Some((serve, due, expired)) =
                st.waiters.iter().find(|w| w.ticket == ticket).map(|w| {
                    (
                        w.serve,
                        w.deadline_ns,
                        w.deadline.is_some_and(|d| Instant::now() >= d),
                    )
                })
            else {
                break;
            };
            // An expired receiver is due only what was sent before its deadline (a message that
            // came while its partition's window was closed, or in the monitor's grace, may be
            // later): `came_late`, which also answers for an empty channel, and for a
            // two-sided one first moves what the manager thread has not (the readiness, the RX
            // ring's, may not show it yet). An expired sender is due the room there is.
            let receiver = st.dest.is_some() && due != u64::MAX;
            if expired
                && (!serve
                    || if receiver {
                        Self::came_late(st, due)
                    } else {
                        !ready || self.room_came_late(st, due)
                    })
            {
                self.leave(st, ticket);
                continue;
            }
            // An expired receiver still here has a message sent by its deadline there.
            let ready = ready || (expired && receiver);
            let Some(w) = st.waiters.iter().find(|w| w.ticket == ticket) else {
                break;
            };
            // `handed` never grows: one entry per process at most (see `QueuingState`).
            if !w.serve || !ready || st.handed.len() == st.handed.capacity() {
                if !ready {
                    self.ask_room_note(st);
                }
                break;
            }
            let (process, incarnation) = (w.process, w.incarnation);
            let outcome = if let Some(m) = &w.msg {
                let Some(src) = st.source.as_mut() else {
                    break;
                };
                match src.try_send(m) {
                    Ok(()) => Outcome::Sent(m.len()),
                    Err(PushError::Full) => break,
                    // As `send_op` answers.
                    Err(_) => Outcome::Failed(ApexError::InvalidParam),
                }
            } else {
                if st.dest.is_none() {
                    break;
                }
                let max = self.max as usize;
                let mut message = st.spare.pop().unwrap_or_default();
                // A kept buffer is used as it is (no memset of `max` bytes per message); only a
                // new one is zero-filled, once (the endpoint writes into initialised bytes).
                let short = max.saturating_sub(message.len());
                if short > 0 && message.try_reserve_exact(short).is_err() {
                    // The partition's memory is full: this receiver takes its message itself
                    // when it runs. It no longer counts as served in its place, so the first
                    // waiter behind it does not watch the channel for it. Round again: if its
                    // time-out has passed it leaves the line (above), else this stops there.
                    recycle(&mut st.spare, message);
                    if let Some(w) = st.waiters.iter_mut().find(|w| w.ticket == ticket) {
                        w.serve = false;
                    }
                    self.gen.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                // Within the capacity: no allocation (nothing to do for a kept buffer).
                message.resize(max, 0);
                let Some(d) = st.dest.as_mut() else {
                    recycle(&mut st.spare, message);
                    break;
                };
                // `try_recv` writes the `n` bytes it returns; only those are read.
                match d.try_recv(&mut message) {
                    Ok(n) => Outcome::Received(message, n),
                    Err(e) => {
                        recycle(&mut st.spare, message);
                        match e {
                            PopError::Empty => break,
                            // As `receive_op` answers (a buffer of the largest size is never
                            // too short).
                            _ => Outcome::Failed(ApexError::InvalidConfig),
                        }
                    }
                }
            };
            st.handed.push(Handed {
                ticket,
                process,
                incarnation,
                outcome,
            });
            self.leave(st, ticket);
            // READY from now on in GET_PROCESS_STATUS (unless suspended), as ARINC 653 makes
            // a waiter that receives its message or room; its thread collects it when it runs.
            rt().ctl[process]
                .port_served
                .store(incarnation.wrapping_add(1), Ordering::Release);
            served = true;
        }
        if served {
            // The waiters that left may sleep on `wake` (`leave` wakes it only while others
            // wait) or, the head, park on the channel's notifier, where only the channel or a
            // kick wakes them (sockets: within `PARK_SLICE`, when the head re-checks `gen`).
            futex::wake_all(&self.wake);
            self.waiter.kick();
        }
    }

    /// Drop the entries of processes stopped while they waited (their threads ended without
    /// leaving the queue), and tell the remaining waiters when that changed the head: without
    /// this, a call that must not wait (`TIME_OUT` 0, the preemption lock held) would find the
    /// queue occupied by the dead and answer `NOT_AVAILABLE` or `INVALID_MODE` although a
    /// message or room is there.
    fn prune(&self, st: &mut QueuingState) {
        let n = st.waiters.len();
        st.waiters.retain(|w| {
            let alive = w.alive();
            if !alive {
                self.forget_wait(w);
            }
            alive
        });
        if st.waiters.len() != n {
            self.gen.fetch_add(1, Ordering::SeqCst);
            self.wake.fetch_add(1, Ordering::Release);
            if !st.waiters.is_empty() {
                futex::wake_all(&self.wake);
            }
        }
    }

    /// Clear the deadline monitor's word for `w`'s wait if it is still that wait's (the
    /// process may have gone on to another wait meanwhile, if `w` is a stopped incarnation's).
    fn forget_wait(&self, w: &Waiter) {
        if w.deadline_ns != u64::MAX {
            let _ = rt().ctl[w.process].port_wait.compare_exchange(
                port_wait_word(self.index, w.ticket),
                0,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
    }

    fn leave(&self, st: &mut QueuingState, ticket: u64) {
        if let Some(i) = st.waiters.iter().position(|w| w.ticket == ticket) {
            let w = st.waiters.swap_remove(i);
            self.forget_wait(&w);
            if let Some(m) = w.msg {
                recycle(&mut st.spare, m);
            }
        }
        self.gen.fetch_add(1, Ordering::SeqCst);
        // Under the port lock: a queued process reads `wake` under the lock before it waits, so
        // it either sees the new value or is woken.
        self.wake.fetch_add(1, Ordering::Release);
        if !st.waiters.is_empty() {
            futex::wake_all(&self.wake);
        }
    }

    /// Wait in this partition's order for `op` to succeed, until `deadline`.
    ///
    /// The services try once before they call this, inline, with no closure, no `dyn` call and
    /// no frame of their own (`send_queuing_message`): every push and call on the way is a
    /// store, and a producer whose store buffer is full of ring stores waits for each (see
    /// `docs/bench-rtt.md`, session 14). This tries again first.
    ///
    /// `role`: how the caller can be served in its place ([`QueuingPort::serve_waiters`]).
    ///
    /// Joining the line allocates nothing but the copy of a sender's message, fallibly: the
    /// queue has room for every process (reserved at creation) once the entries of stopped
    /// incarnations are pruned, and a sender whose message cannot be copied (the partition's
    /// memory is full) waits all the same, only it is not served in its place
    /// ([`Waiter::serve`]).
    fn wait_for(
        &self,
        timeout: SystemTime,
        role: Role<'_>,
        op: &mut dyn FnMut(&mut QueuingState) -> Try,
    ) -> ApexResult<usize> {
        let mut st = lock(&self.state);
        if !st.waiters.is_empty() {
            self.prune(&mut st);
            self.serve_waiters(&mut st, None);
        }
        if st.waiters.is_empty() {
            match op(&mut st) {
                Try::Done(n) => return Ok(n),
                Try::Fail(e) => return Err(e),
                Try::Again => {}
            }
        }
        if timeout == 0 {
            return Err(ApexError::NotAvailable);
        }
        if st.source.is_some() && !self.ready() {
            // A sender about to wait: ask when room comes from this look on (under its lock,
            // before the wait's deadline is taken), so that a sender stopped before its wait's
            // own first look (its partition's window closed) is not judged by a note an
            // earlier wait left. (Not when there is room: others wait, and that room is
            // theirs, or noted already.)
            self.ask_room_note(&mut st);
        }
        if timeout != INFINITE_TIME_VALUE {
            if let Some(d) = st.dest.as_ref() {
                // A receiver about to wait with a deadline: the source stamps its messages from
                // now on (once per channel), so that a look past the deadline can tell what
                // came after it (`came_late`). Before the deadline is taken: a message the
                // source still pushes unstamped was pushed before it (`ring::NOT_STAMPED`).
                d.want_stamps();
            }
        }
        drop(st);
        let process = waiting_caller()?;
        let incarnation = rt().ctl[process].incarnation.load(Ordering::Acquire);
        let deadline = deadline_of(timeout);
        let deadline_ns = if timeout == INFINITE_TIME_VALUE {
            u64::MAX
        } else {
            rt().now().saturating_add(timeout as u64)
        };
        // The caller shows WAITING from its first sleep, or once it has spun for UNMARKED_SPIN
        // (as `wait_sampling_message` does): a message or room that comes that soon costs no
        // update of the process table (the runtime lock, twice). Its place in the port's queue
        // is taken at once, so the queuing discipline is the same either way.
        let mut marked = false;
        let mut st = lock(&self.state);
        // Under the lock of the push: every entry left is a live process's other than the
        // caller's, so the push stays within the capacity reserved at creation.
        self.prune(&mut st);
        debug_assert!(st.waiters.len() < st.waiters.capacity());
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        let (serve, msg) = match role {
            Role::Receive(cap) if cap >= self.max as usize => {
                // One kept buffer of the port's largest size per receiver that can be served in
                // its place, made here, in the receiver's own thread: so the deadline monitor,
                // when its look serves one (`look_at_expired_wait`), takes a kept buffer and
                // allocates nothing (glibc's allocator lock has no priority inheritance). A
                // served receiver's buffer comes back to `spare` when it collects its message.
                let need = 1 + st
                    .waiters
                    .iter()
                    .filter(|w| w.serve && w.msg.is_none())
                    .count();
                if st.spare.len() < need && st.spare.len() < st.spare.capacity() {
                    // Fallible, and allocating nothing else on failure (the partition's memory
                    // may be full): without it, a serving look allocates as before.
                    let max = self.max as usize;
                    let mut v: Vec<u8> = Vec::new();
                    if v.try_reserve_exact(max).is_ok() {
                        // Within the capacity: no allocation.
                        v.extend(std::iter::repeat_n(0u8, max));
                        st.spare.push(v);
                    }
                }
                (true, None)
            }
            Role::Receive(_) => (false, None),
            Role::Send(m) => {
                let mut v = st.spare.pop().unwrap_or_default();
                v.clear();
                if v.try_reserve_exact(m.len()).is_ok() {
                    // Within the capacity: no allocation.
                    v.extend_from_slice(m);
                    (true, Some(v))
                } else {
                    recycle(&mut st.spare, v);
                    (false, None)
                }
            }
            Role::Other => (false, None),
        };
        st.waiters.push(Waiter {
            ticket,
            process,
            incarnation,
            serve,
            msg,
            deadline,
            deadline_ns,
        });
        if deadline_ns != u64::MAX {
            // For the deadline monitor's look just after its deadline (`look_at_expired_wait`):
            // the time first, then the word that makes the monitor read it (SeqCst, against the
            // monitor's `monitor_until`: see `Runtime::kick_monitor`). A kick wakes the monitor
            // only when the look is due before the time the monitor sleeps until (which counts
            // the grace too): a process that waits again and again with the same time-out costs
            // it about one wake-up per time-out.
            let ctl = &rt().ctl[process];
            ctl.port_wait_until.store(deadline_ns, Ordering::Relaxed);
            ctl.port_wait
                .store(port_wait_word(self.index, ticket), Ordering::SeqCst);
            rt().kick_monitor(deadline_ns.saturating_add(super::hm::PORT_WAIT_GRACE_NS));
        }
        // For SET_PRIORITY (`priority_changed`): the word, then a full fence before the line's
        // order is first read (against the setter's fence between its priority and the word).
        let line = &rt().ctl[process].port_line;
        rt().ctl[process].port_served.store(0, Ordering::Relaxed);
        line.store(self.index as u32 + 1, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        self.gen.fetch_add(1, Ordering::SeqCst);
        // A parked head re-checks whether it is still the head.
        self.waiter.kick();
        let r = self.wait_queued(st, ticket, deadline, op, &mut marked);
        // Out of the line: SET_PRIORITY has no line of the process's to wake.
        line.store(0, Ordering::Relaxed);
        if marked {
            rt().leave_resource_wait();
        }
        // After the state is READY again (a status read in between sees WAITING and served).
        rt().ctl[process].port_served.store(0, Ordering::Release);
        r
    }

    /// The waiting part of [`QueuingPort::wait_for`]: the caller holds `ticket` in the queue;
    /// `marked`: whether it shows WAITING yet (set before any sleep, and after UNMARKED_SPIN of
    /// spinning; only ever outside the port lock, since it takes the runtime lock).
    fn wait_queued<'a>(
        &'a self,
        mut st: PortGuard<BiasedGuard<'a, QueuingState>>,
        ticket: u64,
        deadline: Option<Instant>,
        op: &mut dyn FnMut(&mut QueuingState) -> Try,
        marked: &mut bool,
    ) -> ApexResult<usize> {
        let mark = |marked: &mut bool| {
            if !*marked {
                rt().enter_resource_wait(deadline);
                *marked = true;
            }
        };
        let spin_start = Instant::now();
        loop {
            // With `prune`, not a bare `retain`: a waiter that becomes head because a stopped
            // one left must be woken now, not at its next stale check.
            self.prune(&mut st);
            self.serve_waiters(&mut st, Some(ticket));
            if let Some(i) = st.handed.iter().position(|h| h.ticket == ticket) {
                // Served in its place (it is out of the line already).
                return match st.handed.swap_remove(i).outcome {
                    Outcome::Sent(n) => Ok(n),
                    Outcome::Failed(e) => Err(e),
                    Outcome::Received(m, n) => {
                        st.delivery = Some((m, n));
                        let r = op(&mut st);
                        if let Some((m, _)) = st.delivery.take() {
                            recycle(&mut st.spare, m);
                        }
                        match r {
                            Try::Done(n) => Ok(n),
                            Try::Fail(e) => Err(e),
                            Try::Again => Err(ApexError::InvalidConfig),
                        }
                    }
                };
            }
            // Snapshots before the look that decides whether and where to wait (under the lock,
            // as every bump but SET_PRIORITY's, `priority_changed`, which is lock-free): a bump
            // after them ends the waits below at once, and one they see was made after the new
            // priority was published.
            let w = self.wake.load(Ordering::SeqCst);
            let g = self.gen.load(Ordering::SeqCst);
            let is_head = self.head(&st) == Some(ticket);
            // Past its deadline, a receiver is due only what was sent before it (`came_late`):
            // the look below then finds its time-out.
            // (The waiter's module-time deadline is looked up only then.)
            // A sender is due only room made by its deadline (`room_came_late`).
            let late = is_head && deadline.is_some_and(|d| Instant::now() >= d) && {
                let due = st
                    .waiters
                    .iter()
                    .find(|w| w.ticket == ticket)
                    .map_or(u64::MAX, |w| w.deadline_ns);
                Self::came_late(&mut st, due)
                    || (st.source.is_some() && self.ready() && self.room_came_late(&mut st, due))
            };
            if is_head && !late {
                match op(&mut st) {
                    Try::Done(n) => {
                        self.leave(&mut st, ticket);
                        if st.source.is_some() && !st.waiters.is_empty() && !self.ready() {
                            self.ask_room_note(&mut st);
                        }
                        return Ok(n);
                    }
                    Try::Fail(e) => {
                        self.leave(&mut st, ticket);
                        return Err(e);
                    }
                    Try::Again => self.ask_room_note(&mut st),
                }
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                self.leave(&mut st, ticket);
                drop(st);
                self.waiter.kick();
                return Err(ApexError::TimedOut);
            }
            // The head watches the channel; so does the first waiter behind suspended receivers
            // at the head (it hands them their messages, above).
            if is_head || self.watcher(&st) == Some(ticket) {
                drop(st);
                let mode = self.mode.get();
                let ready = || self.ready() || self.gen.load(Ordering::SeqCst) != g;
                let spins = match mode {
                    RecvMode::Spin => u64::MAX,
                    RecvMode::SpinThenPark { spins } => u64::from(spins),
                    RecvMode::Blocking => 0,
                };
                let mut i = 0u64;
                let mut done = false;
                while i < spins {
                    if ready() {
                        done = true;
                        break;
                    }
                    std::hint::spin_loop();
                    i += 1;
                    if i.is_multiple_of(1024) {
                        let now = Instant::now();
                        if deadline.is_some_and(|d| now >= d) {
                            done = true;
                            break;
                        }
                        if now.duration_since(spin_start) >= UNMARKED_SPIN {
                            mark(marked);
                        }
                    }
                }
                if !done {
                    mark(marked);
                    self.waiter.park_until(deadline, ready);
                }
                st = lock(&self.state);
            } else {
                // Bounded slices: a head stopped while waiting notifies nobody; the next one
                // notices within a slice.
                let left = deadline.map_or(STALE_CHECK, |d| {
                    d.saturating_duration_since(now).min(STALE_CHECK)
                });
                // Wait without the lock (and so without deferring control signals).
                drop(st);
                mark(marked);
                futex::wait(&self.wake, w, Some(left));
                st = lock(&self.state);
            }
        }
    }
}

/// A queuing service's call: one attempt `op(state, args..)` inline, under the port lock and only
/// if no process waits once those a message or room came for are served in their place
/// ([`QueuingPort::serve_waiters`]; FIFO and PRIORITY order), then, if it must wait,
/// [`QueuingPort::wait_for`] with the same attempt. A macro, not a generic helper taking a
/// closure: the helper was not inlined, and the call then took six frames (session 14).
macro_rules! first_then_wait {
    ($port:expr, $timeout:expr, $role:expr, $op:ident($($arg:expr),*)) => {{
        let mut st = lock(&$port.state);
        if !st.waiters.is_empty() {
            $port.prune(&mut st);
            $port.serve_waiters(&mut st, None);
        }
        let first = if st.waiters.is_empty() {
            $op(&mut st, $($arg),*)
        } else {
            Try::Again
        };
        st.release();
        match first {
            Try::Done(n) => Ok(n),
            Try::Fail(e) => Err(e),
            Try::Again => $port.wait_for($timeout, $role, &mut |st| $op(st, $($arg),*)),
        }
    }};
}

/// Send a message on a source queuing port (`SEND_QUEUING_MESSAGE`), waiting up to `timeout` ns
/// for room (0: do not wait; `INFINITE_TIME_VALUE`: no limit).
///
/// # Errors
/// - `InvalidParam`: no such port, `timeout` out of range, or `message` is empty.
/// - `InvalidConfig`: `message` is longer than the port's maximum.
/// - `InvalidMode`: the port is a destination port; or the channel is full, `timeout` ≠ 0 and the
///   caller is the error handler, holds the preemption lock, or is not a process.
/// - `NotAvailable`: full and `timeout` is 0.
/// - `TimedOut`: still full after `timeout`.
// Inlined into its caller (the C wrapper, or a Rust process's loop): the call's own frame (six
// register pushes, its spills, the return address) was stores that wait behind the ring's
// stores in a producer's full store buffer. One-sided, 64 B one way, one message per call:
// 22-25 -> 32-33 M msg/s, alternated builds (`docs/bench-rtt.md`, session 16).
#[inline(always)]
pub fn send_queuing_message(
    id: QueuingPortId,
    message: &[u8],
    timeout: SystemTime,
) -> ApexResult<()> {
    let port = queuing(id)?;
    check_timeout(timeout)?;
    if message.len() > port.max as usize {
        return Err(ApexError::InvalidConfig);
    }
    if message.is_empty() {
        return Err(ApexError::InvalidParam);
    }
    if port.direction != PortDirection::Source {
        return Err(ApexError::InvalidMode);
    }
    first_then_wait!(port, timeout, Role::Send(message), send_op(message)).map(|_| ())
}

/// One attempt of [`send_queuing_message`].
#[inline(always)]
fn send_op(st: &mut QueuingState, message: &[u8]) -> Try {
    let Some(p) = st.source.as_mut() else {
        return Try::Fail(ApexError::InvalidMode);
    };
    // The endpoint never queues more than MaxNbMessages and wakes the receiver.
    match p.try_send(message) {
        Ok(()) => Try::Done(message.len()),
        Err(PushError::Full) => Try::Again,
        Err(_) => Try::Fail(ApexError::InvalidParam),
    }
}

/// Receive the oldest message of a destination queuing port (`RECEIVE_QUEUING_MESSAGE`) into
/// `buf` (which should hold the port's maximum message size), waiting up to `timeout` ns; return
/// its length.
///
/// # Errors
/// - `InvalidParam`: no such port, `timeout` out of range, or `buf` is shorter than the message
///   (which then stays queued).
/// - `InvalidMode`: the port is a source port; or the channel is empty, `timeout` ≠ 0 and the
///   caller is the error handler, holds the preemption lock, or is not a process.
/// - `NotAvailable`: empty and `timeout` is 0.
/// - `TimedOut`: still empty after `timeout`.
// Inlined into its caller, as `send_queuing_message` is.
#[inline(always)]
pub fn receive_queuing_message(
    id: QueuingPortId,
    buf: &mut [u8],
    timeout: SystemTime,
) -> ApexResult<usize> {
    let port = queuing(id)?;
    check_timeout(timeout)?;
    if port.direction != PortDirection::Destination {
        return Err(ApexError::InvalidMode);
    }
    first_then_wait!(port, timeout, Role::Receive(buf.len()), receive_op(buf))
}

/// One attempt of [`receive_queuing_message`].
#[inline(always)]
fn receive_op(st: &mut QueuingState, buf: &mut [u8]) -> Try {
    if let Some((m, n)) = &st.delivery {
        return deliver(&m[..*n], buf);
    }
    let Some(c) = st.dest.as_mut() else {
        return Try::Fail(ApexError::InvalidMode);
    };
    // The endpoint returns the room to the sender (and wakes it).
    match c.try_recv(buf) {
        Ok(n) => Try::Done(n),
        Err(PopError::Empty) => Try::Again,
        Err(PopError::BufferTooSmall { .. }) => Try::Fail(ApexError::InvalidParam),
        Err(_) => Try::Fail(ApexError::InvalidConfig),
    }
}

/// Copy a message handed to a waiting receiver into its buffer (which holds the port's
/// largest message: [`QueuingPort::servable`]).
#[cold]
fn deliver(m: &[u8], buf: &mut [u8]) -> Try {
    match buf.get_mut(..m.len()) {
        Some(b) => {
            b.copy_from_slice(m);
            Try::Done(m.len())
        }
        None => Try::Fail(ApexError::InvalidParam),
    }
}

/// Send several messages on a source queuing port in order (partix extension): as many as there
/// is room for, waiting up to `timeout` ns (as [`send_queuing_message`]) only while not even the
/// first fits; return how many were sent (at least 1). One lock, and on the one-sided transport
/// one publication and one wake-up check, for the whole batch.
///
/// # Errors
/// - `InvalidParam`: no such port, `timeout` out of range, `messages` is empty or holds an empty
///   message.
/// - `InvalidConfig`: a message is longer than the port's maximum (nothing is sent).
/// - otherwise as [`send_queuing_message`].
pub fn send_queuing_messages(
    id: QueuingPortId,
    messages: &[&[u8]],
    timeout: SystemTime,
) -> ApexResult<usize> {
    let port = queuing(id)?;
    check_timeout(timeout)?;
    if messages.iter().any(|m| m.len() > port.max as usize) {
        return Err(ApexError::InvalidConfig);
    }
    if messages.is_empty() || messages.iter().any(|m| m.is_empty()) {
        return Err(ApexError::InvalidParam);
    }
    if port.direction != PortDirection::Source {
        return Err(ApexError::InvalidMode);
    }
    let mut op = |st: &mut QueuingState| {
        let Some(p) = st.source.as_mut() else {
            return Try::Fail(ApexError::InvalidMode);
        };
        match p.try_send_many(messages) {
            Ok(n) => Try::Done(n),
            Err(PushError::Full) => Try::Again,
            Err(_) => Try::Fail(ApexError::InvalidParam),
        }
    };
    port.wait_for(timeout, Role::Other, &mut op)
}

/// Receive several of the oldest messages of a destination queuing port at once (partix
/// extension): message `i` goes to `buf[i * M..]`, `M` the port's maximum message size, and its
/// length to `lens[i]`; at most `min(lens.len(), buf.len() / M)` messages. Waits up to `timeout`
/// ns (as [`receive_queuing_message`]) only while the channel is empty; returns how many were
/// received (at least 1). One lock, and on the one-sided transport one publication of the
/// consumed count and one wake-up check, for the whole batch.
///
/// # Errors
/// - `InvalidParam`: no such port, `timeout` out of range, or room for no message.
/// - otherwise as [`receive_queuing_message`].
pub fn receive_queuing_messages(
    id: QueuingPortId,
    buf: &mut [u8],
    lens: &mut [usize],
    timeout: SystemTime,
) -> ApexResult<usize> {
    let port = queuing(id)?;
    check_timeout(timeout)?;
    if port.direction != PortDirection::Destination {
        return Err(ApexError::InvalidMode);
    }
    let stride = port.max as usize;
    if stride == 0 || lens.is_empty() || buf.len() < stride {
        return Err(ApexError::InvalidParam);
    }
    let mut op = |st: &mut QueuingState| {
        if let Some((m, n)) = &st.delivery {
            let r = deliver(&m[..*n], buf);
            if let Try::Done(n) = r {
                lens[0] = n;
                return Try::Done(1);
            }
            return r;
        }
        let Some(c) = st.dest.as_mut() else {
            return Try::Fail(ApexError::InvalidMode);
        };
        match c.try_recv_many(buf, stride, lens) {
            Ok(n) => Try::Done(n),
            Err(PopError::Empty) => Try::Again,
            Err(PopError::BufferTooSmall { .. }) => Try::Fail(ApexError::InvalidParam),
            Err(_) => Try::Fail(ApexError::InvalidConfig),
        }
    };
    port.wait_for(timeout, Role::Receive(stride), &mut op)
}

/// The maximum message size of queuing port `id`: GET_QUEUING_PORT_STATUS's
/// `MAX_MESSAGE_SIZE`, without taking the port (partix extension; see
/// [`sampling_port_max_message_size`]).
///
/// # Errors
/// `InvalidParam`: no such port.
#[inline]
pub fn queuing_port_max_message_size(id: QueuingPortId) -> ApexResult<u32> {
    Ok(queuing(id)?.max)
}

/// Return the id of the created queuing port `name` (`GET_QUEUING_PORT_ID`).
///
/// # Errors
/// `InvalidConfig`: no queuing port of that name was created.
pub fn get_queuing_port_id(name: &str) -> ApexResult<QueuingPortId> {
    let ports = lock_registry(&registry().queuing);
    ports
        .iter()
        .position(|p| p.name == name)
        .map(|i| QueuingPortId(i as i32 + 1))
        .ok_or(ApexError::InvalidConfig)
}

/// Return the status of a queuing port (`GET_QUEUING_PORT_STATUS`). While processes wait, it
/// first serves them in their place (`QueuingPort::serve_waiters`), so a message that a
/// waiting receiver is due counts as its, not as queued: NB_MESSAGE and WAITING_PROCESSES are
/// never both non-zero on a destination whose waiters can be served in their place.
///
/// # Errors
/// `InvalidParam`: no such port.
pub fn get_queuing_port_status(id: QueuingPortId) -> ApexResult<QueuingPortStatus> {
    let port = queuing(id)?;
    let mut st = lock(&port.state);
    if !st.waiters.is_empty() {
        port.prune(&mut st);
        port.serve_waiters(&mut st, None);
    }
    let waiting = st.waiters.iter().filter(|w| w.alive()).count() as u32;
    let n = if let Some(s) = st.source.as_mut() {
        s.len()
    } else if let Some(d) = st.dest.as_mut() {
        d.len()
    } else {
        port.waiter.len()
    };
    drop(st);
    Ok(QueuingPortStatus {
        nb_message: (n.min(u32::MAX as usize) as u32).min(port.max_nb),
        max_nb_message: port.max_nb,
        max_message_size: port.max,
        port_direction: port.direction,
        waiting_processes: waiting,
    })
}

/// Discard every message queued in a destination queuing port (`CLEAR_QUEUING_PORT`). A
/// message that a waiting receiver is due is not queued but its: the waiters are served in
/// their place first (`QueuingPort::serve_waiters`), one message each in line order, and only
/// the rest is discarded.
///
/// # Errors
/// - `InvalidParam`: no such port.
/// - `InvalidMode`: the port is a source port.
pub fn clear_queuing_port(id: QueuingPortId) -> ApexResult<()> {
    let port = queuing(id)?;
    if port.direction != PortDirection::Destination {
        return Err(ApexError::InvalidMode);
    }
    let mut st = lock(&port.state);
    if !st.waiters.is_empty() {
        port.prune(&mut st);
        port.serve_waiters(&mut st, None);
    }
    if let Some(c) = st.dest.as_mut() {
        c.clear();
    }
    Ok(())
}

/// Set how waiters of a queuing port wait (partix extension; see the module docs).
///
/// # Errors
/// `InvalidParam`: no such port.
pub fn set_queuing_port_recv_mode(id: QueuingPortId, mode: RecvMode) -> ApexResult<()> {
    let port = queuing(id)?;
    port.mode.set(mode);
    Ok(())
}

/// Return how waiters of a queuing port wait (partix extension): the configuration's
/// `partix:ReceiveMode`, [`DEFAULT_RECV_MODE`] without it, or what
/// [`set_queuing_port_recv_mode`] set last.
///
/// # Errors
/// `InvalidParam`: no such port.
pub fn queuing_port_recv_mode(id: QueuingPortId) -> ApexResult<RecvMode> {
    Ok(queuing(id)?.mode.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Neither copy of a read through the private buffer has its destination a few bytes ahead
    /// of its source modulo a page, and the copy from the slot is line-aligned with it.
    #[test]
    fn a_private_copy_is_placed_out_of_the_aliasing_window_of_both_copies() {
        let buf = vec![0u8; 2 * PAGE];
        let b = buf.as_ptr() as usize;
        for from in [0usize, 8, 64, 2048, 4040, 4096 + 24] {
            for to in (0..2 * PAGE).step_by(8) {
                let k = copy_offset(buf.as_ptr(), Some(from), to);
                assert!(k < PAGE);
                let first = (b + k).wrapping_sub(from) % PAGE;
                assert_eq!(first % 64, 0, "from {from} to {to}: not line-aligned");
                assert!(first >= 64, "from {from} to {to}: {first} B ahead");
                let second = to.wrapping_sub(b + k) % PAGE;
                assert!(
                    second == 0 || second >= 64,
                    "from {from} to {to}: {second} B ahead"
                );
            }
        }
        for to in (0..2 * PAGE).step_by(8) {
            let k = copy_offset(buf.as_ptr(), None, to);
            assert_eq!(to.wrapping_sub(b + k) % PAGE, PAGE / 2);
        }
    }
}
