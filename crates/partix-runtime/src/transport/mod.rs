//! Channel transports behind one interface: the port services ([`crate::partition::ports`])
//! talk only to the endpoint types here and never name a transport.
//!
//! | transport   | sampling                                   | queuing                                     |
//! |-------------|--------------------------------------------|---------------------------------------------|
//! | `one-sided` | the writer stores into each destination's read-only slot | SPSC ring the destination maps read-only (its `head` in a control region); the source pushes straight into it |
//! | `two-sided` | TX ring → manager thread → RX ring, newest overwrites unsent | TX ring → manager thread → RX ring, cumulative-ack credits |
//! | `udp`/`tcp` | a connected socket pair per destination; the reader drains to the newest | frames + cumulative-ack credits |
//!
//! Each endpoint is an enum with one variant per transport: one `match` per message, no
//! allocation and no dynamic call on the path (the one-sided variants call the same
//! `partix-shm` functions the ports used before). A queuing endpoint also hands out a
//! [`QueueWaiter`]: the lock-free side that says whether the operation may succeed now and parks
//! the caller (futex notifier for shared memory, `poll(2)` for sockets).
//!
//! Endpoints are attached partition-side from a [`MappedPort`] (the inherited descriptors);
//! the executive side creates the regions and sockets in [`crate::channels::ChannelSet`].

pub mod socket;

use crate::channels::{self, MappedPort};
use partix_config::model::{ChannelKind, Delivery, PortDirection};
use partix_shm::futex;
use partix_shm::notifier::{deadline_after, Note, NOTIFIER_LEN};
use partix_shm::ring::{PopError, PushError, RingConsumer, RingProducer};
use partix_shm::sampling::{
    Flags, ReadError, ReadOk, SamplingLayout, SamplingReader, SamplingWriter, WaitError,
};
use partix_shm::twoqueue::{
    run_manager_until, QueueManager, QueueReceiver, QueueSender, QueueSenderProbe,
};
use partix_shm::twosided::{
    run_shared_observed, NetworkManager, Progress, RingShape, TwoSidedReceiver, TwoSidedSender,
};
use partix_shm::{AreaError, Notifier, RecvMode, Region, Words};
use socket::{FrameSocket, SocketKind, SocketWaiter};
use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A channel transport (`partix:Transport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Shared memory, the writer stores into the reader's memory (the default).
    OneSided,
    /// Shared memory, TX ring → network manager thread → RX ring.
    TwoSided,
    /// UDP datagrams over loopback.
    Udp,
    /// TCP over loopback.
    Tcp,
}

impl Transport {
    /// Every transport, in documentation order.
    pub const ALL: [Transport; 4] = [
        Transport::OneSided,
        Transport::TwoSided,
        Transport::Udp,
        Transport::Tcp,
    ];

    /// Parse a `partix:Transport` value.
    pub fn parse(s: &str) -> Option<Transport> {
        Some(match s {
            "one-sided" => Transport::OneSided,
            "two-sided" => Transport::TwoSided,
            "udp" => Transport::Udp,
            "tcp" => Transport::Tcp,
            _ => return None,
        })
    }

    /// Return the configuration name.
    pub fn name(self) -> &'static str {
        match self {
            Transport::OneSided => "one-sided",
            Transport::TwoSided => "two-sided",
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
        }
    }

    /// Whether the channel is made of shared-memory regions (one-sided, two-sided).
    pub fn is_shared_memory(self) -> bool {
        matches!(self, Transport::OneSided | Transport::TwoSided)
    }

    /// Return the socket kind, for the socket transports.
    pub fn socket_kind(self) -> Option<SocketKind> {
        match self {
            Transport::Udp => Some(SocketKind::Udp),
            Transport::Tcp => Some(SocketKind::Tcp),
            _ => None,
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Offset of the ring in the data region of a one-sided queuing channel (a split ring,
/// [`partix_shm::ring::RingLayout::init_split`]: the destination maps this region read-only).
pub const RING_OFFSET: usize = 0;
/// Offset of the "data" notifier (the sender wakes a parked receiver) in the control region of a
/// one-sided queuing channel (it is also the split ring's own notifier).
pub const DATA_NOTIFIER: usize = 0;
/// Offset of the "space" notifier (the receiver wakes a parked sender) in the control region.
pub const SPACE_NOTIFIER: usize = NOTIFIER_LEN;
/// Offset of the split ring's control area (head counter) in the control region.
pub const CONTROL_OFFSET: usize = 0;

/// Failure to attach an endpoint to the inherited descriptors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachError(pub String);

impl fmt::Display for AttachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot attach the port: {}", self.0)
    }
}

impl std::error::Error for AttachError {}

fn err(port: &MappedPort, e: impl fmt::Display) -> AttachError {
    AttachError(format!("{} ({}): {e}", port.desc.name, port.desc.transport))
}

/// Attach a shared-memory structure: with the layout the executive gave the port
/// (`PortDesc::layout`, made into `L` by `layout`) through `told`, which does not read the
/// regions' headers (the other side can overwrite them); without one, through `plain`.
fn attach_with<L, T>(
    port: &MappedPort,
    layout: fn(u32, u32) -> Result<L, AreaError>,
    told: impl FnOnce(L) -> Result<T, AreaError>,
    plain: impl FnOnce() -> Result<T, AreaError>,
) -> Result<T, AttachError> {
    match port.desc.layout {
        Some((max, nb)) => layout(max, nb).and_then(told),
        None => plain(),
    }
    .map_err(|e| err(port, e))
}

fn sampling_layout(max: u32, _: u32) -> Result<SamplingLayout, AreaError> {
    channels::sampling_layout(max)
}

fn two_sided_sampling_shape(max: u32, _: u32) -> Result<RingShape, AreaError> {
    channels::two_sided_sampling_shape(max)
}

fn sampling_reader(port: &MappedPort, r: Arc<Region>) -> Result<SamplingReader, AttachError> {
    attach_with(
        port,
        sampling_layout,
        |l| SamplingReader::attach_expecting(r.clone(), 0, l),
        || SamplingReader::attach(r.clone(), 0),
    )
}

fn sampling_writer(port: &MappedPort, r: Arc<Region>) -> Result<SamplingWriter, AttachError> {
    attach_with(
        port,
        sampling_layout,
        |l| SamplingWriter::attach_expecting(r.clone(), 0, l),
        || SamplingWriter::attach(r.clone(), 0),
    )
}

fn two_sided_sender(port: &MappedPort, r: Arc<Region>) -> Result<TwoSidedSender, AttachError> {
    attach_with(
        port,
        two_sided_sampling_shape,
        |s| TwoSidedSender::attach_expecting(r.clone(), 0, s),
        || TwoSidedSender::attach(r.clone(), 0),
    )
}

fn network_manager(
    port: &MappedPort,
    tx: Arc<Region>,
    rx: Arc<Region>,
) -> Result<NetworkManager, AttachError> {
    attach_with(
        port,
        two_sided_sampling_shape,
        |s| NetworkManager::attach_expecting(tx.clone(), 0, rx.clone(), 0, s),
        || NetworkManager::attach(tx.clone(), 0, rx.clone(), 0),
    )
}

fn queue_sender(port: &MappedPort, limit: u32) -> Result<QueueSender, AttachError> {
    let tx = region(port, 0)?;
    attach_with(
        port,
        channels::two_sided_queue_shape,
        |s| QueueSender::attach_expecting(tx.clone(), s, limit),
        || QueueSender::attach(tx.clone(), limit),
    )
}

fn queue_sender_probe(port: &MappedPort, limit: u32) -> Result<QueueSenderProbe, AttachError> {
    let tx = region(port, 0)?;
    attach_with(
        port,
        channels::two_sided_queue_shape,
        |s| QueueSenderProbe::attach_expecting(tx.clone(), s, limit),
        || QueueSenderProbe::attach(tx.clone(), limit),
    )
}

fn queue_manager(
    port: &MappedPort,
    tx: Arc<Region>,
    rx: Arc<Region>,
) -> Result<QueueManager, AttachError> {
    attach_with(
        port,
        channels::two_sided_queue_shape,
        |s| QueueManager::attach_expecting(tx.clone(), rx.clone(), s),
        || QueueManager::attach(tx.clone(), rx.clone()),
    )
}

fn ring_producer(
    port: &MappedPort,
    data: Arc<Region>,
    ctrl: Arc<Region>,
) -> Result<RingProducer, AttachError> {
    attach_with(
        port,
        channels::queuing_layout,
        |l| {
            RingProducer::attach_split_expecting(
                data.clone(),
                RING_OFFSET,
                ctrl.clone(),
                CONTROL_OFFSET,
                l,
            )
        },
        || RingProducer::attach_split(data.clone(), RING_OFFSET, ctrl.clone(), CONTROL_OFFSET),
    )
}

fn ring_consumer(
    port: &MappedPort,
    data: Arc<Region>,
    ctrl: Arc<Region>,
) -> Result<RingConsumer, AttachError> {
    attach_with(
        port,
        channels::queuing_layout,
        |l| {
            RingConsumer::attach_split_expecting(
                data.clone(),
                RING_OFFSET,
                ctrl.clone(),
                CONTROL_OFFSET,
                l,
            )
        },
        || RingConsumer::attach_split(data.clone(), RING_OFFSET, ctrl.clone(), CONTROL_OFFSET),
    )
}

fn region(port: &MappedPort, i: usize) -> Result<Arc<Region>, AttachError> {
    port.regions
        .get(i)
        .cloned()
        .ok_or_else(|| err(port, format!("region {i} missing")))
}

fn sockets(port: &MappedPort, kind: SocketKind) -> Result<Vec<FrameSocket>, AttachError> {
    let mut v = Vec::with_capacity(port.sockets.len());
    for s in &port.sockets {
        let fd = s.try_clone().map_err(|e| err(port, e))?;
        // Sized for the way its frames go: a source's end receives only acknowledgements, a
        // destination's sends only those.
        v.push(
            FrameSocket::try_for(fd, kind, port.desc.max_message_size, port.desc.direction)
                .map_err(|e| err(port, e))?,
        );
    }
    if v.is_empty() && port.desc.direction == PortDirection::Destination {
        return Err(err(port, "no socket"));
    }
    Ok(v)
}

fn check(port: &MappedPort, kind: ChannelKind, dir: PortDirection) -> Result<(), AttachError> {
    if port.desc.kind != kind || port.desc.direction != dir {
        return Err(err(port, "kind or direction mismatch"));
    }
    Ok(())
}

/// SCHED_FIFO priority of a network manager thread: above every APEX process (a process that
/// spins on the port must not starve the manager that feeds it), below the partition runtime's
/// preemption-lock, error-handler and monitor threads (97, 98).
pub const MANAGER_FIFO_PRIORITY: i32 = 96;

/// Put the calling thread at [`MANAGER_FIFO_PRIORITY`] (SCHED_FIFO); failure leaves it as is.
#[allow(unsafe_code)]
fn become_manager_priority() {
    let param = libc::sched_param {
        sched_priority: MANAGER_FIFO_PRIORITY,
    };
    // SAFETY: param is a valid sched_param; 0 names the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
}

/// Start the network manager thread of a two-sided destination, at [`MANAGER_FIFO_PRIORITY`]
/// when the process may use SCHED_FIFO (else under the default policy). It parks whenever
/// there is nothing to move, so it takes the CPU only to move messages.
fn spawn_manager(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), String> {
    std::thread::Builder::new()
        .name(format!("partix-netmgr-{name}"))
        .spawn(move || {
            crate::attach::register_thread();
            become_manager_priority();
            f();
            crate::attach::leave_thread_table();
        })
        .map(|_| ())
        .map_err(|e| format!("cannot start the network manager thread: {e}"))
}

/// A two-sided manager (sampling: [`NetworkManager`]; queuing: [`QueueManager`]) shared by its
/// thread and the port's receiver, which helps it unless the channel says
/// `partix:Delivery="manager"` ([`Delivery::Manager`]: the thread alone delivers, parked on the
/// doorbell; the receiver reads the RX ring only and waits on its data notifier; its one move
/// is a queuing receiver's past its deadline, `Helped::move_late`).
///
/// While the receiver polls (it calls `Helped::help` on every poll), the manager thread does not
/// park on the doorbell but sleeps locally on its kick word, looking again only after
/// [`HELPED_WATCHDOG`]: the sender then finds nobody parked on the doorbell and makes no system
/// call, and the receiver moves each message itself (no thread hop). A receiver that goes to
/// sleep without watching kicks the manager back onto the doorbell at once (`Helped::asleep`,
/// the fallback below); a receiver that stops polling is noticed at the next watchdog (a
/// watchdog without help): the manager then parks on the doorbell again, and messages are
/// delivered event-driven, by the manager.
///
/// A two-sided sampling reader that waits in a parking mode *watches* the doorbell in the
/// manager's place (`Helped::watch`): the sender's doorbell wakes the reader itself, which
/// moves the message and reads it, so a hop costs one wake-up, not two in a row (the manager's,
/// then the reader's). The manager meanwhile sleeps locally, as while a reader polls.
#[derive(Debug)]
pub struct Helped<M> {
    manager: Mutex<M>,
    /// The sender's doorbell (a copy of the manager's).
    doorbell: Notifier,
    /// Help calls so far.
    helps: AtomicU64,
    /// Readers asleep in a blocking wait (the manager must watch the doorbell).
    parked: AtomicU32,
    /// Readers watching the doorbell in the manager's place.
    watching: AtomicU32,
    /// Local futex word the helped manager sleeps on; a reader going to sleep bumps it.
    kick: AtomicU32,
    /// Who delivers: with [`Delivery::Manager`] the receiver never helps, watches or kicks.
    delivery: Delivery,
    /// Whether the manager's last round found no credit (a newer TX message waits for the
    /// receiver's cumulative ack); set by the manager thread after each round.
    starved: AtomicBool,
    /// Local sleeps of the manager thread while helped (diagnostics, tests).
    naps: AtomicU64,
    /// Moves made for receivers past their deadline (`Helped::move_late`; diagnostics, tests).
    late_moves: AtomicU64,
}

/// The first nap of a socket destination's receiving agent while a reader is active
/// ([`SocketAgent`]; it doubles up to [`AGENT_NAP_MAX`]). (Until session 27 the two-sided
/// managers slept in slices of this length while helped: a 2 kHz timer.)
pub const HELPED_SLICE: Duration = Duration::from_micros(500);

/// How long a helped manager sleeps locally (on its kick word) before it looks whether a reader
/// still polls or watches (session 27: it slept 500 µs, 20 ms while watched).
///
/// Nothing waits for this watchdog: every read and every wait of a helped port moves what the
/// sender published before it looks, a reader that goes to sleep without watching kicks the
/// manager at once, and CLEAR and the status take the manager's lock. It only bounds how long
/// messages sent after the last reader left stay in the TX ring before the manager parks on
/// the doorbell again and delivers them itself (a READ poll loop cannot tell that it stopped,
/// and kicking on every return would cost each read a system call). So while a reader stays
/// active, the manager wakes 10 times a second, not 2000.
pub const HELPED_WATCHDOG: Duration = Duration::from_millis(100);

/// How long a reader of a [`Delivery::Manager`] sampling port that just returned credit to a
/// starved manager waits for it to deliver the newest message (it is woken by that delivery;
/// the bound only covers a manager that cannot move it, e.g. a sender lapping every copy).
pub const CATCH_UP_BOUND: Duration = Duration::from_millis(20);

/// The manager's one round of moving, which a helping receiver runs too.
pub trait MoveOnce {
    /// Move what can be moved now; return whether everything sent so far was moved (else the
    /// manager waits for the receiver's credit, or the sender kept overwriting the message).
    fn move_once(&mut self) -> bool;
    /// The sender's doorbell.
    fn doorbell(&self) -> &Notifier;
}

impl MoveOnce for NetworkManager {
    #[inline]
    fn move_once(&mut self) -> bool {
        self.run_once() == Progress::Idle
    }
    fn doorbell(&self) -> &Notifier {
        NetworkManager::doorbell(self)
    }
}

impl MoveOnce for QueueManager {
    #[inline]
    fn move_once(&mut self) -> bool {
        self.run_once();
        !self.rx_full()
    }
    fn doorbell(&self) -> &Notifier {
        QueueManager::doorbell(self)
    }
}

impl<M: MoveOnce> Helped<M> {
    fn new(manager: M, delivery: Delivery) -> Helped<M> {
        Helped {
            doorbell: manager.doorbell().clone(),
            manager: Mutex::new(manager),
            helps: AtomicU64::new(0),
            parked: AtomicU32::new(0),
            watching: AtomicU32::new(0),
            kick: AtomicU32::new(0),
            delivery,
            starved: AtomicBool::new(false),
            naps: AtomicU64::new(0),
            late_moves: AtomicU64::new(0),
        }
    }

    /// Whether only the manager thread delivers ([`Delivery::Manager`]).
    #[inline]
    fn manager_only(&self) -> bool {
        self.delivery == Delivery::Manager
    }

    /// Moves (helps) made by the port's receivers so far: 0 for ever with
    /// [`Delivery::Manager`].
    pub fn helps(&self) -> u64 {
        self.helps.load(Ordering::Relaxed)
    }

    /// Local sleeps of the manager thread while receivers helped or watched.
    pub fn naps(&self) -> u64 {
        self.naps.load(Ordering::Relaxed)
    }

    /// The manager thread's idle hook: with [`Delivery::Manager`] never (it parks on the
    /// doorbell at once), else [`Helped::idle`].
    fn idle_hook(&self, seen: &mut u64) -> bool {
        !self.manager_only() && self.idle(seen)
    }

    /// For a receiver whose deadline passed and for which the RX ring holds nothing sent by
    /// it: move what the sender queued, waiting for the manager's lock if its thread is moving
    /// (a helping receiver's `help` gives up then, and might look before the thread has
    /// published its move), with [`Delivery::Manager`] too (the one move a receiver makes
    /// there). A deadline that passed while the partition's window was closed is looked at when
    /// the window opens, maybe before the manager thread has run: what was sent before the
    /// deadline is the receiver's all the same (docs/ports.md, "What came when"). Any other
    /// expired wait's last look moves the same way. Counted apart from the helps.
    fn move_late(&self) {
        self.move_locked(&self.late_moves);
    }

    /// Moves made for receivers past their deadline (`Helped::move_late`).
    pub fn late_moves(&self) -> u64 {
        self.late_moves.load(Ordering::Relaxed)
    }

    /// Move what can be moved now, waiting for the manager's lock if its thread is moving;
    /// return [`MoveOnce::move_once`]'s answer. After it, whatever was sent before is in the RX
    /// ring (unless it returned `false`).
    fn help_locked(&self) -> bool {
        self.move_locked(&self.helps)
    }

    /// [`Helped::help_locked`]'s move, counted in `count`.
    fn move_locked(&self, count: &AtomicU64) -> bool {
        count.fetch_add(1, Ordering::Relaxed);
        let _section = crate::partition::defer_control();
        let mut m = self.manager.lock().unwrap_or_else(|e| e.into_inner());
        m.move_once()
    }

    /// Run `wait`, a reader's wait that parks on the doorbell and moves messages itself, with
    /// the manager thread sleeping locally meanwhile (it need not watch the doorbell too).
    fn watch<T>(&self, wait: impl FnOnce() -> T) -> T {
        self.watching.fetch_add(1, Ordering::SeqCst);
        let r = wait();
        self.watching.fetch_sub(1, Ordering::SeqCst);
        r
    }

    /// Move what can be moved now, if the manager's lock is free.
    ///
    /// Inside a critical section of the partition runtime (control signals deferred): a
    /// receiver's waiter helps outside the port's lock, and a process stopped (APEX STOP) while
    /// it held the manager's lock would stop the manager thread for good.
    #[inline]
    fn help(&self) {
        self.helps.fetch_add(1, Ordering::Relaxed);
        let _section = crate::partition::defer_control();
        if let Ok(mut m) = self.manager.try_lock() {
            m.move_once();
        }
    }

    /// Run `sleep` (a receiver's blocking wait) with the manager watching the doorbell
    /// meanwhile: a receiver going to sleep no longer helps.
    fn asleep<T>(&self, sleep: impl FnOnce() -> T) -> T {
        self.parked.fetch_add(1, Ordering::SeqCst);
        self.kick.fetch_add(1, Ordering::SeqCst);
        futex::wake_all(&self.kick);
        let r = sleep();
        self.parked.fetch_sub(1, Ordering::SeqCst);
        r
    }

    /// The manager's idle hook: sleep locally (until kicked, or the [`HELPED_WATCHDOG`]) while
    /// a reader polls and helps, or watches the doorbell.
    fn idle(&self, seen: &mut u64) -> bool {
        let now = self.helps.load(Ordering::Relaxed);
        let watched = self.watching.load(Ordering::SeqCst) != 0;
        if (now == *seen && !watched) || self.parked.load(Ordering::SeqCst) != 0 {
            *seen = now;
            return false;
        }
        *seen = now;
        let k = self.kick.load(Ordering::SeqCst);
        if self.parked.load(Ordering::SeqCst) != 0 {
            return false;
        }
        self.naps.fetch_add(1, Ordering::Relaxed);
        futex::wait(&self.kick, k, Some(HELPED_WATCHDOG));
        true
    }
}

/// A page: the slack of a buffer in which [`far_from`] places a copy's destination.
pub(crate) const PAGE: usize = 4096;

/// The offset from `base` (in `[0, PAGE)`) at which a copy of a payload from `src` runs at
/// full speed: the destination a multiple of 64 bytes away from the source, and half a page
/// away modulo a page. A destination a few bytes ahead of its source modulo 4 KiB makes every
/// load of the copy look as if it depended on a store just made ("4K aliasing"), and wide
/// moves that straddle lines differently on the two sides split: measured on the 2-vCPU AMD
/// EPYC VM, a 4 KiB `memcpy` takes 57–95 ns mutually line-aligned and 200–320 ns with the
/// destination 8 to 24 bytes ahead (`docs/bench-rtt.md`, session 14).
#[inline]
pub(crate) fn far_from(src: *const u8, base: *const u8) -> usize {
    (src as usize)
        .wrapping_add(PAGE / 2)
        .wrapping_sub(base as usize)
        % PAGE
}

/// Never set: the manager threads run as long as their partition.
static NEVER: AtomicBool = AtomicBool::new(false);

// ------------------------------------------------------------------------------------------
// Sampling

/// The source end of a sampling channel.
#[derive(Debug)]
pub enum SamplingSource {
    /// One slot per destination.
    OneSided(Vec<SamplingWriter>),
    /// One TX ring per destination.
    TwoSided(Vec<TwoSidedSender>),
    /// One socket per destination.
    Socket(socket::SampleTx),
}

impl SamplingSource {
    /// Attach to a source port's descriptors.
    ///
    /// # Errors
    /// [`AttachError`] when a region or socket is missing or not initialised.
    pub fn attach(port: &MappedPort) -> Result<SamplingSource, AttachError> {
        check(port, ChannelKind::Sampling, PortDirection::Source)?;
        Ok(match port.desc.transport {
            Transport::OneSided => {
                // Per destination: the slot, then its notifier region.
                let mut v = Vec::new();
                for pair in port.regions.chunks(2) {
                    let mut w = sampling_writer(port, pair[0].clone())?;
                    if let Some(n) = pair.get(1) {
                        w = w.with_notifier(Notifier::new(n.clone(), 0).map_err(|e| err(port, e))?);
                    }
                    v.push(w);
                }
                SamplingSource::OneSided(v)
            }
            Transport::TwoSided => SamplingSource::TwoSided(
                port.regions
                    .iter()
                    .map(|r| two_sided_sender(port, r.clone()))
                    .collect::<Result<_, _>>()?,
            ),
            t @ (Transport::Udp | Transport::Tcp) => SamplingSource::Socket(socket::SampleTx::new(
                sockets(port, t.socket_kind().expect("socket"))?,
            )),
        })
    }

    /// Write `data` to every destination, stamped with the time it is written
    /// ([`partix_shm::clock::now_ns`], `CLOCK_MONOTONIC`). Never waits.
    ///
    /// The caller checks the length (1..=max) first, and holds the port lock (with control
    /// signals deferred); a message the transport refuses is dropped.
    #[inline]
    pub fn write(&mut self, data: &[u8]) {
        self.write_with(data, partix_shm::clock::now_ns);
    }

    /// [`SamplingSource::write`] with the stamp from `stamp` (unit tests give marks of their
    /// own), called once per message, inside the section a closing gate does not cut.
    ///
    /// The stamp is the time the message is written into the port: it is read after the port
    /// lock was taken (by the caller) and after the park hold-off began, right before the first
    /// destination's copy. A writer that waited for the lock, was preempted or suspended, or
    /// was parked at a window's end before that does not publish an old stamp (a message that
    /// would look stale, `INVALID`, to a reader right after it appears; and with two writers,
    /// stamps that went backwards: review 25). One clock read per message, as before; every
    /// destination of a multicast gets the same stamp.
    #[inline(always)]
    pub(crate) fn write_with(&mut self, data: &[u8], stamp: impl FnOnce() -> u64) {
        // The shared-memory writes are bounded copies, and a socket send does not block: a
        // closing gate parks this thread after them, not between a slot's `begin` and `end`,
        // nor between the stamp and the message it stamps (see `attach::ParkHoldOff`).
        let _held = crate::attach::hold_off_park();
        let stamp_ns = stamp();
        match self {
            // One destination (the usual case): no loop.
            SamplingSource::OneSided(ws) if ws.len() == 1 => {
                let _ = ws[0].write_stamped(data, stamp_ns);
            }
            SamplingSource::OneSided(ws) => {
                for w in ws {
                    let _ = w.write_stamped(data, stamp_ns);
                }
            }
            SamplingSource::TwoSided(ws) => {
                for w in ws {
                    let _ = w.write_stamped(data, stamp_ns);
                }
            }
            SamplingSource::Socket(s) => s.write(data, stamp_ns),
        }
    }
}

/// The destination end of a sampling channel.
#[derive(Debug)]
pub enum SamplingDestination {
    /// The port's read-only slot.
    OneSided(SamplingReader),
    /// The RX ring and its manager (the manager thread runs in this partition; a polling reader
    /// helps it unless the channel's delivery is [`Delivery::Manager`], see
    /// [`SamplingDestination::read`]).
    TwoSided(TwoSidedReceiver, Arc<Helped<NetworkManager>>),
    /// The port's socket, shared with its receiving agent ([`SocketAgent`]).
    Socket(Arc<SocketAgent>),
}

/// The receiving agent of a `udp` / `tcp` sampling destination: a thread of the destination
/// partition that keeps the socket drained while no process reads the port.
///
/// **Why.** A socket that nobody reads fills up, and the kernel then drops the *newest* frames:
/// a destination reading far less often than its source writes (a source at 1 kHz, a reader at
/// 5 Hz; the socket holds 100-170 small frames) would read a message from when its buffer
/// filled, not the latest one. The agent takes every frame as it arrives (one `poll(2)` wake-up
/// and one drain per frame) into the port's newest-frame buffer, so a read returns the message
/// last written.
///
/// **Not on the message path of a reader.** Like the two-sided manager ([`Helped`]): while a
/// process is inside a read or a wait of the port (it holds the receiver), or has called one
/// since the agent last looked, the agent does not watch the socket but sleeps (from a
/// [`HELPED_SLICE`], doubling up to [`AGENT_NAP_MAX`]); the reader takes its frames itself, with
/// no thread hop.
pub type SocketAgent = Agent<socket::SampleRx>;

/// A socket destination's receiver, shared by the processes that call the port and an agent
/// thread of the partition ([`SocketAgent`], [`QueueAgent`]) that acts for them only while
/// none calls: each call is counted, and a round of the agent that sees the count changed
/// since its last round, or the receiver locked, does nothing.
#[derive(Debug)]
pub struct Agent<R> {
    rx: Mutex<R>,
    /// Calls of the port so far.
    calls: AtomicU64,
}

impl<R> Agent<R> {
    fn new(rx: R) -> Agent<R> {
        Agent {
            rx: Mutex::new(rx),
            calls: AtomicU64::new(0),
        }
    }

    /// The receiver, for a call of the port (counted: the agent then stays away).
    #[inline]
    fn receiver(&self) -> std::sync::MutexGuard<'_, R> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.rx.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The receiver for a round of the agent, unless a process called the port since the last
    /// round (`seen`, updated) or holds the receiver now.
    fn idle(&self, seen: &mut u64) -> Option<std::sync::MutexGuard<'_, R>> {
        let now = self.calls.load(Ordering::Relaxed);
        if now != *seen {
            *seen = now;
            return None;
        }
        match self.rx.try_lock() {
            Ok(rx) => Some(rx),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

/// Longest sleep of a receiving agent while a reader is active: it doubles from
/// [`HELPED_SLICE`] up to this. A reader that stops is noticed within it; a UDP socket holds
/// about 150 small frames, so a source writing more than 7.5 kHz may lose frames meanwhile
/// (the newest is still taken once the agent drains).
pub const AGENT_NAP_MAX: Duration = Duration::from_millis(20);

/// Longest `poll(2)` of an idle receiving agent (it re-checks whether a reader came).
pub const AGENT_POLL: Duration = Duration::from_millis(100);

impl SocketAgent {
    /// One round of the agent: drain the socket unless a reader is inside a call of the port or
    /// made one since the last round (`None`); return how many frames it took, and whether the
    /// socket may poll readable with nothing the agent can take ([`socket::SampleRx::stuck`]).
    fn round(&self, seen: &mut u64) -> Option<(usize, bool)> {
        self.idle(seen).map(|mut rx| (rx.drain(), rx.stuck()))
    }
}

/// The receiving agent's thread: drain, wait for the socket (`fd`, a duplicate of the port's) to
/// become readable, drain again; while a reader is active, sleep (from a [`HELPED_SLICE`],
/// doubling up to [`AGENT_NAP_MAX`]).
/// Ends when the port is gone.
///
/// A drain after a wake-up that took no frame is normal over TCP: the bytes were the source's
/// padding (at every start of a source), or the first piece of a frame larger than a segment.
/// They are in the stream buffer now, so the socket no longer polls readable, and the agent
/// polls again at once. Only a socket that may poll readable for good with nothing to take (a
/// TCP peer that closed or a dead connection: [`socket::SampleRx::stuck`]; or a drain cut at its
/// bound by a flood) is looked at again after [`AGENT_POLL`]: the agent never spins. (It slept
/// [`AGENT_POLL`] after every wake-up without a frame, so a TCP destination stopped draining
/// for 100 ms at each start of its source and at nearly every frame of over 64 KiB, and its
/// socket, sized for 4 frames, filled.)
fn run_socket_agent(agent: &std::sync::Weak<SocketAgent>, fd: &OwnedFd) {
    let Some(mut seen) = agent.upgrade().map(|a| a.calls.load(Ordering::Relaxed)) else {
        return;
    };
    let mut woke = false;
    let mut nap = HELPED_SLICE;
    loop {
        let Some(a) = agent.upgrade() else {
            return;
        };
        let r = a.round(&mut seen);
        drop(a);
        match r {
            None => {
                // A reader is active: check again later, less often the longer it stays active
                // (every wake-up would preempt it on the partition's CPU).
                woke = false;
                std::thread::sleep(nap);
                nap = (nap * 2).min(AGENT_NAP_MAX);
            }
            Some((0, true)) if woke => {
                woke = false;
                std::thread::sleep(AGENT_POLL);
            }
            Some(_) => {
                nap = HELPED_SLICE;
                woke = socket::readable(fd, AGENT_POLL);
            }
        }
    }
}

/// The acknowledging agent of a `udp` / `tcp` queuing destination: a thread of the destination
/// partition that returns the source's credit while no process calls the port.
///
/// **Why.** The destination acknowledges consumed messages in batches (a system call per
/// batch, not per message: `socket::QueueRx::try_recv`), and at once only when the source may
/// be out of credit as far as a receive can see. A source that used its last credit *after*
/// the destination's last receive was told the queue was full (`NOT_AVAILABLE`, or `TIMED_OUT`
/// after waiting) while the destination had room for the messages it had consumed and not
/// acknowledged, until the destination's next call of the port: for ever if it made none.
/// One-sided and two-sided queues return credit with every receive.
///
/// **Not on the message path.** While a process calls the port (receives, status, CLEAR), the
/// agent only sleeps ([`AGENT_NAP_MAX`]); a round that finds no call since the last one
/// acknowledges what is owed (`socket::QueueRx::idle`), so a source waits for credit the
/// destination has at most about two naps after the destination's last call. With nothing
/// owed the agent sleeps longer (doubling up to [`AGENT_POLL`]), repeating a udp ack now and
/// then (one lost to a full socket is made up for although nobody calls).
pub type QueueAgent = Agent<socket::QueueRx>;

impl QueueAgent {
    /// One round of the agent: `None` when a process called the port since the last round (or
    /// holds it now), else whether something was owed and acknowledged.
    fn round(&self, seen: &mut u64) -> Option<bool> {
        self.idle(seen).map(|mut rx| rx.idle())
    }
}

/// The acknowledging agent's thread ([`QueueAgent`]). Ends when the port is gone.
fn run_queue_agent(agent: &std::sync::Weak<QueueAgent>) {
    let Some(mut seen) = agent.upgrade().map(|a| a.calls.load(Ordering::Relaxed)) else {
        return;
    };
    let mut nap = AGENT_NAP_MAX;
    loop {
        let Some(a) = agent.upgrade() else {
            return;
        };
        let r = a.round(&mut seen);
        drop(a);
        nap = match r {
            // Active, or something was owed: look again within a short nap.
            None | Some(true) => nap.min(AGENT_NAP_MAX),
            // Idle and nothing owed: less often the longer it stays so.
            Some(false) => (nap * 2).min(AGENT_POLL),
        };
        std::thread::sleep(nap);
    }
}

impl SamplingDestination {
    /// Attach to a destination port's descriptors; for `two-sided`, start the manager thread.
    ///
    /// # Errors
    /// [`AttachError`] when a region or socket is missing or not initialised.
    pub fn attach(port: &MappedPort) -> Result<SamplingDestination, AttachError> {
        check(port, ChannelKind::Sampling, PortDirection::Destination)?;
        Ok(match port.desc.transport {
            Transport::OneSided => {
                let mut r = sampling_reader(port, region(port, 0)?)?;
                if let Some(n) = port.regions.get(1) {
                    r = r.with_notifier(Notifier::new(n.clone(), 0).map_err(|e| err(port, e))?);
                }
                SamplingDestination::OneSided(r)
            }
            Transport::TwoSided => {
                let (tx, rx) = (region(port, 0)?, region(port, 1)?);
                let h = Arc::new(Helped::new(
                    network_manager(port, tx, rx.clone())?,
                    port.desc.delivery,
                ));
                let r = TwoSidedReceiver::attach(rx, 0).map_err(|e| err(port, e))?;
                let h2 = h.clone();
                // Parks without a time-out: the thread runs as long as the partition, and the
                // doorbell, the ack notifier or a kick wakes it.
                spawn_manager(&port.desc.name, move || {
                    let mut seen = h2.helps.load(Ordering::Relaxed);
                    run_shared_observed(
                        &h2.manager,
                        &NEVER,
                        None,
                        || h2.idle_hook(&mut seen),
                        |p| h2.starved.store(p == Progress::Starved, Ordering::SeqCst),
                    )
                })
                .map_err(|e| err(port, e))?;
                SamplingDestination::TwoSided(r, h)
            }
            t @ (Transport::Udp | Transport::Tcp) => {
                let s = sockets(port, t.socket_kind().expect("socket"))?
                    .into_iter()
                    .next()
                    .ok_or_else(|| err(port, "no socket"))?;
                let fd = s.try_clone_fd().map_err(|e| err(port, e))?;
                let a = Arc::new(SocketAgent::new(
                    socket::SampleRx::try_new(s).map_err(|e| err(port, e))?,
                ));
                let weak = Arc::downgrade(&a);
                spawn_manager(&port.desc.name, move || run_socket_agent(&weak, &fd))
                    .map_err(|e| err(port, e))?;
                SamplingDestination::Socket(a)
            }
        })
    }

    /// Copy the newest message into `buf` (it stays readable).
    ///
    /// Two-sided: the reader first *helps* the manager (if its lock is free, it moves the newest
    /// TX message itself), so a polling reader needs no thread hop; the manager thread delivers
    /// when nobody polls. With [`Delivery::Manager`] it reads the RX ring only (after waiting
    /// for a manager it gave credit to, see `docs/ports.md`, "Delivery").
    ///
    /// # Errors
    /// [`ReadError`] (`Contended` and `Corrupt`: the caller keeps its last good copy).
    #[inline]
    pub fn read(&mut self, buf: &mut [u8]) -> Result<ReadOk, ReadError> {
        match self {
            SamplingDestination::OneSided(r) => r.read(buf),
            SamplingDestination::TwoSided(r, h) if h.manager_only() => {
                catch_up(r, h);
                r.read(buf)
            }
            SamplingDestination::TwoSided(r, h) => {
                // Credit for the newest TX message first: the ring may hold what was delivered
                // just after the last read (see `TwoSidedReceiver::ack_newest`).
                r.ack_newest();
                h.help();
                r.read(buf)
            }
            SamplingDestination::Socket(a) => a.receiver().read(buf),
        }
    }

    /// Return the sequence number of the newest message in the channel (written, or delivered
    /// for two-sided), whether or not it can be read now; `None` when there is none, or for the
    /// socket transports (whose reads never fail that way).
    pub fn newest_seq(&self) -> Option<u32> {
        match self {
            SamplingDestination::OneSided(r) => r.latest_flags().map(|f| f.seq()),
            SamplingDestination::TwoSided(r, _) => r.newest_seq(),
            SamplingDestination::Socket(_) => None,
        }
    }

    /// Two-sided: the moves the port's readers made in the manager's place so far (always 0 with
    /// [`Delivery::Manager`]); 0 for the other transports (diagnostics, tests).
    pub fn reader_moves(&self) -> u64 {
        match self {
            SamplingDestination::TwoSided(_, h) => h.helps(),
            _ => 0,
        }
    }

    /// Two-sided: move the newest message the source wrote into the RX ring if the manager has
    /// not (returning the credit of every delivered message but the newest first), waiting for
    /// the manager's lock, whatever the delivery (`Helped::move_late`); nothing on the other
    /// transports, whose newest message is there for a look. For a wait past its deadline only:
    /// its last look then finds what was written by the deadline, though the manager thread
    /// (with [`Delivery::Manager`]) has not run since (its partition's window was closed).
    pub fn move_late(&mut self) {
        if let SamplingDestination::TwoSided(r, h) = self {
            r.ack_newest();
            h.move_late();
        }
    }

    /// Two-sided: the moves made for waits past their deadline
    /// ([`SamplingDestination::move_late`]); 0 for the other transports (diagnostics, tests).
    pub fn late_moves(&self) -> u64 {
        match self {
            SamplingDestination::TwoSided(_, h) => h.late_moves(),
            _ => 0,
        }
    }

    /// Two-sided: the copies of the TX slot that the manager (or a reader helping it) made
    /// again because the source's next write of the slot overlapped them (diagnostics; takes the
    /// manager's lock). 0 for the other transports.
    pub fn manager_retries(&self) -> u64 {
        match self {
            SamplingDestination::TwoSided(_, h) => {
                let _section = crate::partition::defer_control();
                let m = h.manager.lock().unwrap_or_else(|e| e.into_inner());
                m.stats().retries
            }
            _ => 0,
        }
    }

    /// Start a new read or wait of the port's service: forget what earlier calls learnt about the
    /// channel (a socket found empty then may hold several frames now; only the newest is the
    /// sampling message).
    #[inline]
    pub fn new_call(&mut self) {
        if let SamplingDestination::Socket(a) = self {
            a.receiver().new_call();
        }
    }

    /// Return whether the transport keeps the newest message itself and never tears it (sockets:
    /// the last frame received), so that a read may go straight into the caller's buffer with
    /// no last good copy kept by the port.
    #[inline]
    pub fn keeps_last(&self) -> bool {
        matches!(self, SamplingDestination::Socket(_))
    }

    /// The address a read copies the payload from, where it is fixed (one-sided: the slot's
    /// payload), so that the port can place its private copy well against it.
    #[inline]
    pub fn source_addr(&self) -> Option<usize> {
        match self {
            SamplingDestination::OneSided(r) => Some(r.payload_addr()),
            _ => None,
        }
    }

    /// Return whether the newest message is known to be the one of flags `(seq, len)` without
    /// reading it: one-sided, one load of the slot's `end` word; other transports cannot tell
    /// without receiving, and answer `false`.
    #[inline]
    pub fn unchanged(&self, seq: u32, len: usize) -> bool {
        match self {
            SamplingDestination::OneSided(r) => {
                r.latest_flags() == Some(Flags::new(seq, len as u32))
            }
            _ => false,
        }
    }

    /// Wait per `mode` until a message other than `last_seq` arrives (at most `timeout`), then
    /// read it.
    ///
    /// # Errors
    /// [`WaitError::TimedOut`], [`WaitError::Read`], [`WaitError::NoNotifier`].
    pub fn wait_newer(
        &mut self,
        buf: &mut [u8],
        last_seq: Option<u32>,
        mode: RecvMode,
        timeout: Option<Duration>,
    ) -> Result<ReadOk, WaitError> {
        self.wait_newer_or(buf, last_seq, mode, timeout, || false)
    }

    /// [`SamplingDestination::wait_newer`] that also gives up early, with
    /// [`WaitError::TimedOut`], once `stop()` returns true: checked after every poll that found
    /// nothing newer and before every park (a park interrupted by a signal whose handler made it
    /// true does not park again), on every transport.
    ///
    /// # Errors
    /// As [`SamplingDestination::wait_newer`].
    // Inline, with the socket wait and its receive (`SampleRx::wait_newer_or`,
    // `FrameSocket::recv_frame`): after a system call, each return into a frame made before it
    // costs a mispredicted return on this VM (the kernel leaves the return stack buffer filled
    // for itself: SRSO "Safe RET", RSB filling), about 20 cycles; a udp message came back from
    // its `recv` through six returns to the caller (`docs/bench-rtt.md`, session 16).
    #[inline(always)]
    pub fn wait_newer_or(
        &mut self,
        buf: &mut [u8],
        last_seq: Option<u32>,
        mode: RecvMode,
        timeout: Option<Duration>,
        mut stop: impl FnMut() -> bool,
    ) -> Result<ReadOk, WaitError> {
        match self {
            SamplingDestination::OneSided(r) => r.wait_newer_or(buf, last_seq, mode, timeout, stop),
            SamplingDestination::TwoSided(r, h) if h.manager_only() => {
                // The paper's path: the manager thread delivers and wakes the RX ring's data
                // notifier; the reader spins on the RX tail and/or parks on that notifier.
                catch_up(r, h);
                r.wait_newer_or(buf, last_seq, mode, timeout, stop)
            }
            SamplingDestination::TwoSided(r, h) => {
                // Credit for the newest TX message first (as in `read`).
                r.ack_newest();
                if timeout.is_some_and(|t| t.is_zero()) {
                    // A probe: one look, no spinning, no parking.
                    h.help();
                    return match r.read(buf) {
                        Ok(ok) if Some(ok.seq) != last_seq => Ok(ok),
                        Ok(_) | Err(ReadError::Empty) => Err(WaitError::TimedOut),
                        Err(e) => Err(WaitError::Read(e)),
                    };
                }
                // Spin (helping the manager), then park: the manager thread delivers and wakes.
                // (A time-out past the clock's range is none: `Instant + Duration` panics.)
                let deadline = deadline_after(timeout);
                let spins = match mode {
                    RecvMode::Spin => u64::MAX,
                    RecvMode::SpinThenPark { spins } => u64::from(spins),
                    RecvMode::Blocking => 0,
                };
                let mut i = 0u64;
                loop {
                    h.help();
                    // A look at the newest slot's flags first: copying the message it already
                    // returned on every poll (4 KiB: ~0.3 µs) delayed seeing the next one.
                    if r.has_newer(last_seq) {
                        match r.read(buf) {
                            Ok(ok) if Some(ok.seq) != last_seq => return Ok(ok),
                            Ok(_) | Err(ReadError::Empty) => {}
                            Err(e) => return Err(WaitError::Read(e)),
                        }
                    }
                    if stop() {
                        return Err(WaitError::TimedOut);
                    }
                    if i >= spins {
                        return wait_watching(r, h, buf, last_seq, deadline, stop);
                    }
                    i += 1;
                    if i.is_multiple_of(1024) && deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(WaitError::TimedOut);
                    }
                    std::hint::spin_loop();
                }
            }
            SamplingDestination::Socket(a) => a
                .receiver()
                .wait_newer_or(buf, last_seq, mode, timeout, stop),
        }
    }
}

/// Start a read or wait of a [`Delivery::Manager`] sampling port: return the credit for every
/// delivered message but the newest (as the helped read does), and if that credit is what a
/// starved manager waited for, wait (at most [`CATCH_UP_BOUND`]) until it delivered once more:
/// it then moves the newest message written so far. Without this, a reader that reads rarely
/// found the RX ring as its last read left it (full of the messages delivered just after that
/// read) and returned one of those, while the source's newest waited in the TX ring for the
/// credit this read had just returned. Only the RX ring and the manager's own flag are looked
/// at: the reader never moves a message.
fn catch_up(r: &mut TwoSidedReceiver, h: &Helped<NetworkManager>) {
    let before = r.delivered();
    if r.ack_newest() && h.starved.load(Ordering::SeqCst) {
        let deadline = deadline_after(Some(CATCH_UP_BOUND));
        r.data().park_until(deadline, || {
            r.delivered() != before || !h.starved.load(Ordering::SeqCst)
        });
    }
}

/// The parking part of a two-sided sampling reader's wait: it parks on the sender's doorbell in
/// the manager's place ([`Helped::watch`]) and, woken, moves the message itself and reads it
/// (one wake-up per message). If the manager cannot move everything (no credit: the RX ring is
/// full of messages not yet acknowledged; or a sender overwriting the message being copied), the
/// reader leaves delivery to the manager thread and parks on the RX ring's data notifier, as a
/// reader that does not watch does.
fn wait_watching(
    r: &mut TwoSidedReceiver,
    h: &Helped<NetworkManager>,
    buf: &mut [u8],
    last_seq: Option<u32>,
    deadline: Option<Instant>,
    mut stop: impl FnMut() -> bool,
) -> Result<ReadOk, WaitError> {
    let watched = h.watch(|| loop {
        let moved_all = h.help_locked();
        match r.read(buf) {
            Ok(ok) if Some(ok.seq) != last_seq => return Some(Ok(ok)),
            Ok(_) | Err(ReadError::Empty) => {}
            Err(e) => return Some(Err(WaitError::Read(e))),
        }
        // The read may have made room (its cumulative ack); a manager still stuck after it is
        // left to its thread.
        if !moved_all {
            if !h.help_locked() {
                return None;
            }
            continue;
        }
        // Woken (or a move left something behind, which the next round sees), go round again.
        let ready = || !h.help_locked() || r.has_newer(last_seq);
        if !h.doorbell.park_until_or(deadline, ready, &mut stop) {
            return Some(Err(WaitError::TimedOut));
        }
    });
    match watched {
        Some(r) => r,
        None => {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            // The manager must watch the doorbell again, and the ack notifier.
            h.asleep(|| r.wait_newer_or(buf, last_seq, RecvMode::Blocking, left, stop))
        }
    }
}

// ------------------------------------------------------------------------------------------
// Queuing

/// Longest park of a two-sided queuing waiter that watches the doorbell: its caller re-checks
/// and parks again (a park must have a time-out for a control signal to interrupt it).
const WATCH_SLICE: Duration = Duration::from_millis(20);

/// The park of a two-sided queuing port's head waiter: it watches the doorbell in the manager's
/// place ([`Helped::watch`], as a two-sided sampling reader does in [`wait_watching`]): its
/// readiness check moves what the sender pushed, so the sender's doorbell wakes the waiter
/// itself, one wake-up per message. The watch runs in a critical section of the partition
/// runtime, so that a STOP or SUSPEND takes effect only after it ends (the park gives up at
/// once on one, and the section's end honours it) and never leaves a watcher counted. A waiter
/// already inside a section (it could not honour a request at once), or one whose move cannot
/// complete (the RX ring full), parks on the RX ring's notifier with the manager watching.
fn park_watching(
    helped: &Helped<QueueManager>,
    notifier: &Notifier,
    deadline: Option<Instant>,
    mut ready: impl FnMut() -> bool,
) -> bool {
    if crate::partition::outside_sections() {
        let _section = crate::partition::defer_control();
        let slice_end = Instant::now() + WATCH_SLICE;
        let until = Some(deadline.map_or(slice_end, |d| d.min(slice_end)));
        let mut stuck = false;
        let got = helped.watch(|| {
            helped.doorbell.park_until_or(
                until,
                || {
                    stuck = !helped.help_locked();
                    stuck || ready()
                },
                crate::partition::control_pending,
            )
        });
        if !stuck {
            return got;
        }
        // Going to sleep, still inside the section: a STOP must not end this thread while
        // `asleep` counts it (the manager would count a parked reader for ever); the park gives
        // up at once on a control request, which the section's end then honours.
        return helped
            .asleep(|| notifier.park_until_or(deadline, ready, crate::partition::control_pending));
    }
    // Going to sleep: the manager must watch the doorbell again.
    helped.asleep(|| notifier.park_until(deadline, ready))
}

/// The source end of a queuing channel.
#[derive(Debug)]
pub enum QueueSource {
    /// The producer of the ring, the data notifier, and the most messages it may queue:
    /// `MaxNbMessages`, or the ring's capacity if that is smaller.
    OneSided(RingProducer, Notifier, usize),
    /// The TX ring within the credit.
    TwoSided(QueueSender),
    /// Frames within the credit.
    Socket(socket::QueueTx),
}

/// The most a source port queues: its `MaxNbMessages`, or the channel's capacity
/// ([`crate::channels::PortDesc::capacity`], the smaller of the two ends') when that is smaller.
fn source_limit(port: &MappedPort) -> u32 {
    let own = port.desc.param.min(u64::from(u32::MAX)) as u32;
    port.desc.capacity.map_or(own, |c| c.min(own))
}

impl QueueSource {
    /// Attach to a source port's descriptors.
    ///
    /// # Errors
    /// [`AttachError`] when a region or socket is missing or not initialised.
    pub fn attach(port: &MappedPort) -> Result<QueueSource, AttachError> {
        check(port, ChannelKind::Queuing, PortDirection::Source)?;
        let limit = source_limit(port);
        Ok(match port.desc.transport {
            Transport::OneSided => {
                let (data, ctrl) = (region(port, 0)?, region(port, 1)?);
                let p = ring_producer(port, data, ctrl.clone())?;
                // The ring is sized for the destination: a source that declares more
                // MaxNbMessages than the ring holds can never queue more than the ring does, and
                // its waiter must compare with that bound (with the source's own, it said "room"
                // while every push answered Full, and a waiting sender spun).
                let limit = (limit as usize).min(p.capacity());
                QueueSource::OneSided(
                    p,
                    Notifier::new(ctrl, DATA_NOTIFIER).map_err(|e| err(port, e))?,
                    limit,
                )
            }
            Transport::TwoSided => QueueSource::TwoSided(queue_sender(port, limit)?),
            t @ (Transport::Udp | Transport::Tcp) => {
                let s = sockets(port, t.socket_kind().expect("socket"))?
                    .into_iter()
                    .next()
                    .ok_or_else(|| err(port, "no socket"))?;
                // (`limit` is the channel's capacity when the destination's MaxNbMessages is
                // smaller: the sockets hold that many frames.)
                let tx = socket::QueueTx::try_new(s, limit).map_err(|e| err(port, e))?;
                // The executive gives the source its book, a region that outlives the
                // partition's restarts (`QueueTx::with_book`).
                QueueSource::Socket(match port.regions.first() {
                    Some(r) => tx.with_book(
                        Words::attach(r.clone(), 0, socket::BOOK_WORDS)
                            .map_err(|e| err(port, e))?,
                    ),
                    None => tx,
                })
            }
        })
    }

    /// Return the waiting side of this endpoint.
    ///
    /// # Errors
    /// [`AttachError`] if it cannot be made.
    pub fn waiter(&self, port: &MappedPort) -> Result<QueueWaiter, AttachError> {
        Ok(match self {
            QueueSource::OneSided(_, _, limit) => {
                let (data, ctrl) = (region(port, 0)?, region(port, 1)?);
                // The source's waiting senders park on the space notifier: a predecessor
                // killed while parked there leaves nothing behind (`Notifier::adopt`; the
                // destination's ring consumer does the same for the data notifier).
                let notifier =
                    Notifier::new(ctrl.clone(), SPACE_NOTIFIER).map_err(|e| err(port, e))?;
                notifier.adopt();
                QueueWaiter::Ring {
                    probe: RingProbe::Producer(ring_producer(port, data, ctrl.clone())?),
                    notifier,
                    limit: *limit,
                }
            }
            QueueSource::TwoSided(_) => {
                QueueWaiter::Credit(queue_sender_probe(port, source_limit(port))?)
            }
            QueueSource::Socket(s) => QueueWaiter::Socket(s.waiter().map_err(|e| err(port, e))?),
        })
    }

    /// Send `data` if there is room (never waits).
    ///
    /// # Errors
    /// [`PushError::Full`] (`MaxNbMessages` queued or no credit), [`PushError::TooLarge`],
    /// [`PushError::ZeroLength`].
    #[inline(always)]
    pub fn try_send(&mut self, data: &[u8]) -> Result<(), PushError> {
        match self {
            QueueSource::OneSided(p, data_notifier, limit) => {
                // The ring may be larger (a power of two): never queue more than MaxNbMessages.
                // The receiver's counter is read only when the cached one says "full". Stamped
                // only once the destination asked (`QueueDestination::want_stamps`): the
                // clock read halved the rate per call (session 38).
                p.try_push_quiet_within_if(data, *limit, data_notifier.stamps_wanted())?;
                data_notifier.notify();
                Ok(())
            }
            QueueSource::TwoSided(s) => s.try_send(data),
            QueueSource::Socket(s) => s.try_send(data),
        }
    }

    /// The channel was found full and a sender waits: ask when room next comes (shared memory:
    /// the destination notes it, [`QueueWaiter::ask_room_note`] on this source's `waiter`;
    /// sockets: the next ack that gives room says, [`socket::QueueTx::ask_room_note`]).
    pub fn ask_room_note(&mut self, waiter: &QueueWaiter) {
        match self {
            QueueSource::Socket(s) => s.ask_room_note(),
            _ => waiter.ask_room_note(),
        }
    }

    /// Messages sent so far (a free-running count; differences count the rooms sends took).
    pub fn sent(&self) -> u64 {
        match self {
            QueueSource::OneSided(p, _, _) => p.pushed(),
            QueueSource::TwoSided(s) => s.pushed(),
            QueueSource::Socket(s) => s.sent(),
        }
    }

    /// There is room: whether the room the next send takes (room number `sent - limit` in the
    /// destination's count of messages consumed) was made by `ns` (`CLOCK_MONOTONIC` ns), by
    /// what was noted since [`QueueSource::ask_room_note`], which was made at `asked`
    /// ([`QueueWaiter::room_by`], [`socket::QueueTx::room_by`]); true when nothing tells.
    pub fn room_by(&mut self, waiter: &QueueWaiter, ns: u64, asked: u64) -> bool {
        let limit = match self {
            QueueSource::Socket(s) => return s.room_by(ns),
            QueueSource::OneSided(_, _, limit) => *limit as u64,
            QueueSource::TwoSided(s) => s.limit(),
        };
        waiter.room_by(ns, self.sent().wrapping_sub(limit), asked)
    }

    /// Send as many of `msgs` as there is room for now, in order (never waits); return how
    /// many. One-sided: one publication and one wake-up check for the whole batch. Stops before
    /// a message the transport refuses.
    ///
    /// # Errors
    /// When not even the first message was sent: as [`QueueSource::try_send`].
    pub fn try_send_many(&mut self, msgs: &[&[u8]]) -> Result<usize, PushError> {
        match self {
            QueueSource::OneSided(p, data_notifier, limit) => {
                let n = p.push_many_quiet_if(msgs, *limit, data_notifier.stamps_wanted())?;
                data_notifier.notify();
                Ok(n)
            }
            _ => {
                let mut n = 0;
                for m in msgs {
                    match self.try_send(m) {
                        Ok(()) => n += 1,
                        Err(e) if n == 0 => return Err(e),
                        Err(_) => break,
                    }
                }
                Ok(n)
            }
        }
    }

    /// Return the messages queued and not yet consumed (as this side knows it).
    pub fn len(&mut self) -> usize {
        match self {
            QueueSource::OneSided(p, _, _) => p.len(),
            QueueSource::TwoSided(s) => s.in_flight() as usize,
            QueueSource::Socket(s) => s.len(),
        }
    }

    /// Return whether nothing is queued.
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }
}

/// A one-sided pop failed with `e`: if it dropped a message (an impossible length, which the
/// pop skips: [`PopError::Corrupt`]), the slot is free and the source may wait for it, so wake
/// `space` as after a message taken (only a successful pop did, and a source waiting for room
/// slept on until its time-out; found by review). Impossible counters answer `Corrupt` too,
/// without moving the head: a needless wake-up then, on a broken channel only.
#[cold]
fn dropped_wakes(e: PopError, space: &Notifier, popped: impl FnOnce() -> u64) -> PopError {
    if e == PopError::Corrupt {
        space.notify_noting(1, popped);
    }
    e
}

/// The destination end of a queuing channel.
#[derive(Debug)]
pub enum QueueDestination {
    /// The consumer of the ring and the space notifier.
    OneSided(RingConsumer, Notifier),
    /// The RX ring and the manager, shared with its thread: the receiver helps it (moves the
    /// TX messages itself while it polls; not with [`Delivery::Manager`]) and uses it for
    /// CLEAR.
    TwoSided(QueueReceiver, Arc<Helped<QueueManager>>),
    /// Frames, acknowledged in batches, shared with the acknowledging agent ([`QueueAgent`]).
    Socket(Arc<QueueAgent>),
}

impl QueueDestination {
    /// Attach to a destination port's descriptors; for `two-sided`, start the manager thread.
    ///
    /// # Errors
    /// [`AttachError`] when a region or socket is missing or not initialised.
    pub fn attach(port: &MappedPort) -> Result<QueueDestination, AttachError> {
        check(port, ChannelKind::Queuing, PortDirection::Destination)?;
        let limit = port.desc.param.min(u64::from(u32::MAX)) as u32;
        Ok(match port.desc.transport {
            Transport::OneSided => {
                let (data, ctrl) = (region(port, 0)?, region(port, 1)?);
                QueueDestination::OneSided(
                    ring_consumer(port, data, ctrl.clone())?,
                    Notifier::new(ctrl, SPACE_NOTIFIER).map_err(|e| err(port, e))?,
                )
            }
            Transport::TwoSided => {
                let (tx, rx) = (region(port, 0)?, region(port, 1)?);
                let h = Arc::new(Helped::new(
                    queue_manager(port, tx.clone(), rx.clone())?,
                    port.desc.delivery,
                ));
                let r = QueueReceiver::attach(tx, rx).map_err(|e| err(port, e))?;
                let h2 = h.clone();
                // Parks without a time-out, as the sampling manager.
                spawn_manager(&port.desc.name, move || {
                    let mut seen = h2.helps.load(Ordering::Relaxed);
                    run_manager_until(&h2.manager, &NEVER, None, || h2.idle_hook(&mut seen))
                })
                .map_err(|e| err(port, e))?;
                QueueDestination::TwoSided(r, h)
            }
            t @ (Transport::Udp | Transport::Tcp) => {
                let s = sockets(port, t.socket_kind().expect("socket"))?
                    .into_iter()
                    .next()
                    .ok_or_else(|| err(port, "no socket"))?;
                // The executive gives the destination its book, a region that outlives the
                // partition's restarts (`QueueRx::with_book`).
                let rx = match port.regions.first() {
                    Some(r) => socket::QueueRx::try_with_book(
                        s,
                        limit,
                        Words::attach(r.clone(), 0, socket::DEST_BOOK_WORDS)
                            .map_err(|e| err(port, e))?,
                    ),
                    None => socket::QueueRx::try_new(s, limit),
                }
                .map_err(|e| err(port, e))?;
                let rx = match port.desc.capacity {
                    Some(c) => rx.with_credit(c),
                    None => rx,
                };
                let a = Arc::new(QueueAgent::new(rx));
                let weak = Arc::downgrade(&a);
                spawn_manager(&port.desc.name, move || run_queue_agent(&weak))
                    .map_err(|e| err(port, e))?;
                QueueDestination::Socket(a)
            }
        })
    }

    /// Return the waiting side of this endpoint.
    ///
    /// # Errors
    /// [`AttachError`] if it cannot be made.
    pub fn waiter(&self, port: &MappedPort) -> Result<QueueWaiter, AttachError> {
        Ok(match self {
            QueueDestination::OneSided(..) => {
                let (data, ctrl) = (region(port, 0)?, region(port, 1)?);
                QueueWaiter::Ring {
                    probe: RingProbe::Consumer(ring_consumer(port, data, ctrl.clone())?),
                    notifier: Notifier::new(ctrl, DATA_NOTIFIER).map_err(|e| err(port, e))?,
                    limit: 0,
                }
            }
            // Only the manager thread delivers: wait for the RX ring as a one-sided receiver
            // waits for its ring (its data notifier, which the manager wakes).
            QueueDestination::TwoSided(r, h) if h.manager_only() => QueueWaiter::Ring {
                probe: RingProbe::Consumer(r.probe().map_err(|e| err(port, e))?),
                notifier: r.data().clone(),
                limit: 0,
            },
            QueueDestination::TwoSided(r, h) => QueueWaiter::Helped {
                probe: r.probe().map_err(|e| err(port, e))?,
                notifier: r.data().clone(),
                helped: h.clone(),
            },
            QueueDestination::Socket(a) => QueueWaiter::Socket(
                a.rx.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .waiter()
                    .map_err(|e| err(port, e))?,
            ),
        })
    }

    /// Take the oldest message into `buf`; return its length (never waits).
    ///
    /// # Errors
    /// [`PopError::Empty`], [`PopError::BufferTooSmall`] (the message stays),
    /// [`PopError::Corrupt`].
    #[inline(always)]
    pub fn try_recv(&mut self, buf: &mut [u8]) -> Result<usize, PopError> {
        match self {
            QueueDestination::OneSided(c, space) => match c.try_pop(buf) {
                Ok(n) => {
                    space.notify_noting(1, || c.popped());
                    Ok(n)
                }
                Err(e) => Err(dropped_wakes(e, space, || c.popped())),
            },
            QueueDestination::TwoSided(r, h) => {
                // Move what the sender queued (the manager thread does when nobody polls, and
                // alone with `Delivery::Manager`).
                if !h.manager_only() {
                    h.help();
                }
                r.try_recv(buf)
            }
            QueueDestination::Socket(a) => a.receiver().try_recv(buf),
        }
    }

    /// Whether a message is there that was sent at or before `ns` (`CLOCK_MONOTONIC`
    /// nanoseconds), by the stamp the sender gave the oldest one (one-sided, to 1024 ns;
    /// two-sided, whose move keeps it; udp and tcp, whose frames carry it, after taking the
    /// next frame off the socket if none is buffered): `false` when nothing is there or the
    /// oldest was sent later. Two-sided, when the RX ring holds nothing sent by `ns`, first
    /// moves what the sender queued, waiting for the manager's lock, whatever the delivery
    /// (`Helped::move_late`: it is asked for receivers past their deadline only).
    pub fn sent_by(&mut self, ns: u64) -> bool {
        match self {
            QueueDestination::OneSided(c, _) => c.sent_by(ns),
            QueueDestination::TwoSided(r, h) => {
                r.sent_by(ns) || {
                    h.move_late();
                    r.sent_by(ns)
                }
            }
            QueueDestination::Socket(a) => a.receiver().sent_by(ns),
        }
    }

    /// Ask the source to stamp its messages from now on, for good (shared memory: the
    /// channel's data notifier, or the two-sided doorbell, says so; `Notifier::want_stamps`),
    /// so that [`QueueDestination::sent_by`] can tell what came after a deadline. A receiver
    /// calls it when it first waits with a time-out, before it takes its deadline. udp and tcp
    /// frames always carry their send time.
    pub fn want_stamps(&self) {
        match self {
            QueueDestination::OneSided(c, _) => c.notifier().want_stamps(),
            QueueDestination::TwoSided(_, h) => h.doorbell.want_stamps(),
            QueueDestination::Socket(_) => {}
        }
    }

    /// Take up to `lens.len()` of the oldest messages at once, message `i` into
    /// `out[i * stride..]` and its length into `lens[i]`; return how many (never waits).
    /// One-sided: one publication of the consumed count and one wake-up check for the batch.
    /// Stops at the end of `out` or before a message longer than `stride` (it stays queued).
    ///
    /// # Errors
    /// When not even one message was taken: as [`QueueDestination::try_recv`].
    pub fn try_recv_many(
        &mut self,
        out: &mut [u8],
        stride: usize,
        lens: &mut [usize],
    ) -> Result<usize, PopError> {
        match self {
            QueueDestination::OneSided(c, space) => match c.try_pop_many(out, stride, lens) {
                Ok(n) => {
                    space.notify_noting(n as u64, || c.popped());
                    Ok(n)
                }
                Err(e) => Err(dropped_wakes(e, space, || c.popped())),
            },
            _ => {
                let room = out
                    .len()
                    .checked_div(stride)
                    .map_or(0, |k| k.min(lens.len()));
                if room == 0 {
                    return self.try_recv(&mut []).map(|_| 0);
                }
                let mut n = 0;
                while n < room {
                    match self.try_recv(&mut out[n * stride..(n + 1) * stride]) {
                        Ok(len) => {
                            lens[n] = len;
                            n += 1;
                        }
                        Err(e) if n == 0 => return Err(e),
                        Err(_) => break,
                    }
                }
                Ok(n)
            }
        }
    }

    /// Two-sided: the moves the port's receivers made in the manager's place so far (always 0
    /// with [`Delivery::Manager`]); 0 for the other transports (diagnostics, tests). The moves
    /// for receivers past their deadline are counted apart: [`QueueDestination::late_moves`].
    pub fn reader_moves(&self) -> u64 {
        match self {
            QueueDestination::TwoSided(_, h) => h.helps(),
            _ => 0,
        }
    }

    /// Two-sided: the moves made for receivers past their deadline (`Helped::move_late`);
    /// 0 for the other transports (diagnostics, tests).
    pub fn late_moves(&self) -> u64 {
        match self {
            QueueDestination::TwoSided(_, h) => h.late_moves(),
            _ => 0,
        }
    }

    /// Return the messages that arrived and were not consumed.
    pub fn len(&mut self) -> usize {
        match self {
            QueueDestination::OneSided(c, _) => c.len(),
            QueueDestination::TwoSided(r, h) => {
                let held = h.manager.lock().map(|m| m.undelivered()).unwrap_or(0);
                r.len() + held
            }
            QueueDestination::Socket(a) => a.receiver().len(),
        }
    }

    /// Return whether nothing waits.
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    /// Discard every queued message and return the room to the source.
    pub fn clear(&mut self) {
        match self {
            QueueDestination::OneSided(c, space) => {
                let n = c.clear();
                space.notify_noting(n, || c.popped());
            }
            QueueDestination::TwoSided(r, h) => {
                let mut m = h.manager.lock().unwrap_or_else(|e| e.into_inner());
                m.clear();
                r.clear();
            }
            QueueDestination::Socket(a) => a.receiver().clear(),
        }
    }
}

/// A ring handle used only to count messages.
#[derive(Debug)]
pub enum RingProbe {
    /// Counts from the producer side.
    Producer(RingProducer),
    /// Counts from the consumer side.
    Consumer(RingConsumer),
}

/// How long [`QueueWaiter::room_by`] waits for a destination that made room to note when: it
/// notes a few stores after its publication, unless it is stopped in between.
pub const ROOM_NOTE_PATIENCE: Duration = Duration::from_micros(20);

/// The lock-free waiting side of a queuing endpoint.
#[derive(Debug)]
pub enum QueueWaiter {
    /// A shared-memory ring: a counting probe and the notifier to park on; `limit` > 0 for a
    /// source (ready while fewer messages are queued), 0 for a destination (ready when one is).
    Ring {
        /// Counts the queued messages.
        probe: RingProbe,
        /// Where the waiter parks.
        notifier: Notifier,
        /// `MaxNbMessages` (source) or 0 (destination).
        limit: usize,
    },
    /// A two-sided destination: the RX ring's probe and data notifier, and the manager, which a
    /// polling waiter helps (it moves the TX messages itself).
    Helped {
        /// Counts the delivered messages.
        probe: RingConsumer,
        /// Where the waiter parks.
        notifier: Notifier,
        /// The manager shared with its thread.
        helped: Arc<Helped<QueueManager>>,
    },
    /// A two-sided source waiting for credit.
    Credit(QueueSenderProbe),
    /// A socket endpoint.
    Socket(SocketWaiter),
}

impl QueueWaiter {
    /// Return whether the endpoint's operation may succeed now.
    #[inline]
    pub fn ready(&self) -> bool {
        match self {
            QueueWaiter::Ring {
                probe: RingProbe::Producer(p),
                limit,
                ..
            } => p.len() < *limit,
            QueueWaiter::Ring {
                probe: RingProbe::Consumer(c),
                ..
            } => !c.is_empty(),
            QueueWaiter::Helped { probe, helped, .. } => {
                helped.help();
                !probe.is_empty()
            }
            QueueWaiter::Credit(p) => p.has_credit(),
            QueueWaiter::Socket(s) => s.ready(),
        }
    }

    /// Return the number of messages in the channel as this side sees it (no lock).
    pub fn len(&self) -> usize {
        match self {
            QueueWaiter::Ring {
                probe: RingProbe::Producer(p),
                ..
            } => p.len(),
            QueueWaiter::Ring {
                probe: RingProbe::Consumer(c),
                ..
            } => c.len(),
            QueueWaiter::Helped { probe, .. } => probe.len(),
            QueueWaiter::Credit(p) => p.in_flight() as usize,
            QueueWaiter::Socket(s) => s.len(),
        }
    }

    /// Return whether the channel looks empty from this side.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Park until `ready()` holds or `deadline` passes (sockets: or a slice of
    /// [`socket::PARK_SLICE`] passes); return whether `ready()` held.
    pub fn park_until(&self, deadline: Option<Instant>, ready: impl FnMut() -> bool) -> bool {
        match self {
            QueueWaiter::Ring { notifier, .. } => notifier.park_until(deadline, ready),
            QueueWaiter::Helped {
                notifier, helped, ..
            } => park_watching(helped, notifier, deadline, ready),
            QueueWaiter::Credit(p) => p.space().park_until(deadline, ready),
            QueueWaiter::Socket(s) => s.park_until(deadline, ready),
        }
    }

    /// A source that found the channel full and has a sender waiting: ask the destination to
    /// note when it next makes room (the space notifier's note, `Notifier::ask_note`), so that
    /// [`QueueWaiter::room_by`] can tell a sender past its deadline whether the room it finds
    /// was made by then. Shared-memory sources only (a socket source asks its own end:
    /// [`QueueSource::ask_room_note`]); nothing for destinations.
    ///
    /// Room that is there right after the request, or that the destination made without
    /// seeing it, is numbered before the first room it notes ([`Note::Before`]).
    pub fn ask_room_note(&self) {
        match self {
            QueueWaiter::Ring {
                probe: RingProbe::Producer(_),
                notifier,
                ..
            } => notifier.ask_note(),
            QueueWaiter::Credit(p) => p.space().ask_note(),
            _ => {}
        }
    }

    /// A source that finds room: whether room number `room` (in the destination's count of
    /// messages consumed; the next send needs room `sent - limit`) was made by `ns`
    /// (`clock::stamp_ns` time), by the destination's note since the channel was last found
    /// full ([`QueueWaiter::ask_room_note`], at `asked`, same clock). A room the destination
    /// made before it saw the request ([`Note::Before`]) and after the look that found the
    /// channel full (the only such rooms a send after that look needs) was made about when
    /// the request was: by `ns` if `asked` is. True when it was not
    /// noted: it is between its publication and its note and does not note within
    /// [`ROOM_NOTE_PATIENCE`] (stopped there), or it is beyond the note's
    /// [`partix_shm::notifier::NOTE_ROOMS`]. True for sockets (their acks say:
    /// [`QueueSource::room_by`]) and for destinations.
    pub fn room_by(&self, ns: u64, room: u64, asked: u64) -> bool {
        let n = match self {
            QueueWaiter::Ring {
                probe: RingProbe::Producer(_),
                notifier,
                ..
            } => notifier.noted_after(room, ROOM_NOTE_PATIENCE),
            QueueWaiter::Credit(p) => p.space().noted_after(room, ROOM_NOTE_PATIENCE),
            _ => return true,
        };
        match n {
            Note::At(t) => t <= ns,
            Note::Before => asked <= ns,
            Note::Asked | Note::Never => true,
        }
    }

    /// Wake a parked waiter of this side so it re-checks (sockets re-check every slice).
    pub fn kick(&self) {
        match self {
            QueueWaiter::Ring { notifier, .. } => notifier.notify(),
            // The head waiter parks on the doorbell while it watches ([`park_watching`]).
            QueueWaiter::Helped {
                notifier, helped, ..
            } => {
                notifier.notify();
                helped.doorbell.notify();
            }
            QueueWaiter::Credit(p) => p.space().notify(),
            QueueWaiter::Socket(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use partix_shm::twoqueue::{run_manager_with, QueueShape};
    use partix_shm::twosided::run_shared_with;
    use partix_shm::twosided::RingShape;

    /// A one-sided queue of `MaxNbMessages` 1 laid out as the executive makes it (a split
    /// ring, the space notifier in the control region): its source, its destination, the
    /// source's waiter, and the data region.
    fn one_sided_queue_of_one(
        max: u32,
    ) -> (QueueSource, QueueDestination, QueueWaiter, Arc<Region>) {
        use partix_shm::ring::{RingLayout, CONTROL_LEN};
        let l = RingLayout::new(1, max).unwrap();
        let data = Arc::new(Region::create("partix-one-data", l.size_bytes()).unwrap());
        let ctrl = Arc::new(Region::create("partix-one-ctl", CONTROL_LEN).unwrap());
        l.init_split(&data, RING_OFFSET, &ctrl, CONTROL_OFFSET)
            .unwrap();
        let producer = || {
            RingProducer::attach_split(data.clone(), RING_OFFSET, ctrl.clone(), CONTROL_OFFSET)
                .unwrap()
        };
        let notifier = |off| Notifier::new(ctrl.clone(), off).unwrap();
        let c = RingConsumer::attach_split(data.clone(), RING_OFFSET, ctrl.clone(), CONTROL_OFFSET)
            .unwrap();
        (
            QueueSource::OneSided(producer(), notifier(DATA_NOTIFIER), 1),
            QueueDestination::OneSided(c, notifier(SPACE_NOTIFIER)),
            QueueWaiter::Ring {
                probe: RingProbe::Producer(producer()),
                notifier: notifier(SPACE_NOTIFIER),
                limit: 1,
            },
            data,
        )
    }

    /// A source that found its channel full asks the destination to note when it makes room;
    /// `room_by` then tells room made by a time from room made after it, for the room the
    /// next send takes (by number, as the destination counts what it consumed), and says true
    /// when nothing was asked. A room the destination made without seeing the request (the
    /// store-buffer race of `Notifier`'s "The note") is told apart from the next one, which it
    /// notes: each sender is judged by its own. One-sided (the receive notes) and two-sided
    /// (the receiver's ack notes).
    #[test]
    fn a_source_past_its_deadline_can_tell_when_room_was_made() {
        let stamp = partix_shm::clock::stamp_ns;
        // One-sided, MaxNbMessages 1: send number n needs room number n - 1.
        let (mut s, mut d, w, _data) = one_sided_queue_of_one(8);
        s.try_send(b"one").unwrap();
        assert_eq!(s.try_send(b"two"), Err(PushError::Full));
        assert!(s.room_by(&w, 0, 0), "nothing asked");
        s.ask_room_note(&w);
        let before = stamp();
        std::thread::sleep(Duration::from_millis(2));
        let mut buf = [0u8; 8];
        assert_eq!(d.try_recv(&mut buf), Ok(3));
        let after = stamp();
        assert!(w.ready());
        assert!(!s.room_by(&w, before, 0), "room made 2 ms after `before`");
        assert!(s.room_by(&w, after, 0));
        // The next send needs the next room: a second receive's, 2 ms after `after`.
        s.try_send(b"two").unwrap();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(d.try_recv(&mut buf), Ok(3));
        assert!(w.room_by(after, 0, 0), "room 0 keeps its time");
        assert!(!s.room_by(&w, after, 0));
        assert!(s.room_by(&w, stamp(), 0));
        // Asked again; the destination makes room without seeing the request (its look at the
        // note came before the request: a pop without its note), then more, which it notes.
        s.try_send(b"three").unwrap();
        assert_eq!(s.try_send(b"four"), Err(PushError::Full));
        let asked = stamp();
        s.ask_room_note(&w);
        let QueueDestination::OneSided(c, _) = &mut d else {
            unreachable!()
        };
        assert_eq!(c.try_pop(&mut buf), Ok(5), "room 2, not noted");
        let t = Instant::now();
        assert!(s.room_by(&w, 0, asked), "nothing noted: in time");
        assert!(
            t.elapsed() >= ROOM_NOTE_PATIENCE,
            "waited for a note in flight"
        );
        s.try_send(b"four").unwrap();
        let later = stamp();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(d.try_recv(&mut buf), Ok(4), "room 3, noted");
        let QueueWaiter::Ring { notifier, .. } = &w else {
            unreachable!()
        };
        assert_eq!(
            notifier.noted(2),
            Note::Before,
            "made without seeing the request"
        );
        // Room 2 was made after the look that asked: about when the request was made.
        assert!(
            w.room_by(asked, 2, asked),
            "made by a deadline the request was made by"
        );
        assert!(
            !w.room_by(asked - 1, 2, asked),
            "not by one before the request"
        );
        assert!(
            !s.room_by(&w, later, asked),
            "the next send's room is room 3, 2 ms after"
        );
        assert!(s.room_by(&w, stamp(), asked));

        // Two-sided, MaxNbMessages 4: the credit comes back with the receiver's ack.
        let shape = QueueShape::new(64, 4).unwrap();
        let tx = Arc::new(Region::create("partix-note-tx", shape.tx_size_bytes()).unwrap());
        let rx = Arc::new(Region::create("partix-note-rx", shape.rx_size_bytes()).unwrap());
        shape.init(&tx, &rx).unwrap();
        let h = Arc::new(Helped::new(
            QueueManager::attach(tx.clone(), rx.clone()).unwrap(),
            Delivery::Helped,
        ));
        let mut d =
            QueueDestination::TwoSided(QueueReceiver::attach(tx.clone(), rx).unwrap(), h.clone());
        let mut s = QueueSource::TwoSided(QueueSender::attach(tx.clone(), 4).unwrap());
        let w = QueueWaiter::Credit(QueueSenderProbe::attach(tx, 4).unwrap());
        for _ in 0..4 {
            s.try_send(b"m").unwrap();
        }
        assert!(!w.ready());
        s.ask_room_note(&w);
        let before = stamp();
        // The manager's move returns no credit: it does not answer the request.
        h.manager.lock().unwrap().run_once();
        let QueueWaiter::Credit(p) = &w else {
            unreachable!()
        };
        assert_eq!(p.space().noted(0), Note::Asked, "a move is no room");
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(d.try_recv(&mut buf), Ok(1));
        let after = stamp();
        assert!(w.ready());
        assert!(!s.room_by(&w, before, 0));
        assert!(s.room_by(&w, after, 0));
        // The fifth send took room 0; the sixth needs room 1, made 2 ms after `after`.
        s.try_send(b"m").unwrap();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(d.try_recv(&mut buf), Ok(1));
        assert!(!s.room_by(&w, after, 0));
        assert!(s.room_by(&w, stamp(), 0));
    }

    /// A one-sided receive that drops a message with an impossible length frees its slot, and
    /// wakes a source parked for room as a successful receive does (only a successful one woke
    /// it, and the source slept on until its time-out with the queue empty). Both the single
    /// and the batched receive.
    #[test]
    fn a_one_sided_receive_that_drops_a_corrupt_message_wakes_a_source_waiting_for_room() {
        for batch in [false, true] {
            let (mut s, mut d, w, data) = one_sided_queue_of_one(8);
            s.try_send(b"bad").unwrap();
            assert_eq!(s.try_send(b"next"), Err(PushError::Full));
            // The source's broken predecessor wrote an impossible length (slot 0's length word,
            // after the ring's 256-byte header).
            Words::attach(data, RING_OFFSET, 33)
                .unwrap()
                .get(32)
                .store(9, Ordering::Relaxed);
            let parked = std::thread::spawn(move || {
                // Generous: only a lost wake-up lets the park run into it.
                let deadline = Instant::now() + Duration::from_secs(5);
                let ready = w.park_until(Some(deadline), || w.ready());
                (ready, Instant::now() < deadline - Duration::from_secs(1))
            });
            // Let it park (a waiter that found room at once would not tell anything).
            std::thread::sleep(Duration::from_millis(100));
            let mut buf = [0u8; 8];
            let got = if batch {
                let mut lens = [0usize; 2];
                d.try_recv_many(&mut [0u8; 16], 8, &mut lens)
            } else {
                d.try_recv(&mut buf)
            };
            assert_eq!(got, Err(PopError::Corrupt), "batch {batch}");
            assert_eq!(
                parked.join().unwrap(),
                (true, true),
                "batch {batch}: the source waiting for room was not woken"
            );
            s.try_send(b"next").unwrap();
            assert_eq!(d.try_recv(&mut buf), Ok(4));
            assert_eq!(&buf[..4], b"next");
        }
    }

    /// A source stamps its messages only once its destination asked (`want_stamps`, for good).
    /// Until then a message counts as sent by any time
    /// (unstamped: pushed before the times were asked for); after it, a message sent after a
    /// time is not sent by it. One-sided and two-sided (whose move keeps the sender's stamp,
    /// or its absence), batches included.
    #[test]
    fn a_source_stamps_its_messages_once_the_destination_asks() {
        let stamp = partix_shm::clock::stamp_ns;
        let mut buf = [0u8; 64];
        // One-sided, MaxNbMessages 1.
        let (mut s, mut d, _, _data) = one_sided_queue_of_one(8);
        let before = stamp();
        std::thread::sleep(Duration::from_millis(2));
        s.try_send(b"early").unwrap();
        assert!(d.sent_by(before), "unstamped: sent by any time");
        assert_eq!(d.try_recv(&mut buf), Ok(5));
        let QueueDestination::OneSided(c, _) = &d else {
            unreachable!()
        };
        assert!(!c.notifier().stamps_wanted());
        d.want_stamps();
        let before = stamp();
        std::thread::sleep(Duration::from_millis(2));
        s.try_send(b"late").unwrap();
        assert!(!d.sent_by(before), "stamped 2 ms after `before`");
        assert!(d.sent_by(stamp()));
        assert_eq!(d.try_recv(&mut buf), Ok(4));
        assert_eq!(s.try_send_many(&[b"batch"]), Ok(1));
        assert!(!d.sent_by(before), "a batch is stamped too");
        assert_eq!(d.try_recv(&mut buf), Ok(5));
        // Two-sided, the receiver's help moving.
        let (mut s, mut d, _) = unmanaged_two_sided_queue();
        let before = stamp();
        std::thread::sleep(Duration::from_millis(2));
        s.try_send(b"early").unwrap();
        assert!(d.sent_by(before), "unstamped, and moved unstamped");
        assert_eq!(d.try_recv(&mut buf), Ok(5));
        d.want_stamps();
        d.want_stamps();
        let before = stamp();
        std::thread::sleep(Duration::from_millis(2));
        s.try_send(b"late").unwrap();
        assert!(!d.sent_by(before), "stamped, and the move kept it");
        assert_eq!(d.try_recv(&mut buf), Ok(4));
        let mut s = QueueSource::TwoSided(s);
        assert_eq!(s.try_send_many(&[b"batch", b"more"]), Ok(2));
        assert!(!d.sent_by(before), "a batch is stamped too");
        assert_eq!(d.try_recv(&mut buf), Ok(5));
        assert_eq!(d.try_recv(&mut buf), Ok(4));
        // (The word is in the channel's shared memory: a source in another process, or
        // restarted, reads the same; the closed-window test of `tests/ports.rs` runs the
        // request across processes.)
    }

    /// A two-sided queue's regions, its source, and its destination with a manager that no
    /// thread runs: whatever moves a message must be the receiver's own help.
    fn unmanaged_two_sided_queue() -> (QueueSender, QueueDestination, QueueWaiter) {
        unmanaged_two_sided_queue_with(Delivery::Helped)
    }

    fn unmanaged_two_sided_queue_with(
        delivery: Delivery,
    ) -> (QueueSender, QueueDestination, QueueWaiter) {
        let shape = QueueShape::new(64, 4).unwrap();
        let tx = Arc::new(Region::create("partix-helped-tx", shape.tx_size_bytes()).unwrap());
        let rx = Arc::new(Region::create("partix-helped-rx", shape.rx_size_bytes()).unwrap());
        shape.init(&tx, &rx).unwrap();
        let h = Arc::new(Helped::new(
            QueueManager::attach(tx.clone(), rx.clone()).unwrap(),
            delivery,
        ));
        let r = QueueReceiver::attach(tx.clone(), rx).unwrap();
        let w = QueueWaiter::Helped {
            probe: r.probe().unwrap(),
            notifier: r.data().clone(),
            helped: h.clone(),
        };
        (
            QueueSender::attach(tx, 4).unwrap(),
            QueueDestination::TwoSided(r, h),
            w,
        )
    }

    /// With `Delivery::Manager` a receiver never moves a message, but one past its deadline for
    /// which the RX ring holds nothing sent by it has what the manager (here: no thread) did
    /// not move yet looked at (`Helped::move_late`): a message sent by the deadline is there
    /// after it, one sent later is not the receiver's (and stays); the receiver's helps stay 0.
    #[test]
    fn a_manager_delivered_message_sent_by_a_deadline_is_there_for_a_late_look() {
        let (mut s, mut d, _) = unmanaged_two_sided_queue_with(Delivery::Manager);
        // A receiver that waits with a time-out asks for the stamps first.
        d.want_stamps();
        // Later than every send here (the ring's stamps wrap: u64::MAX is no "end of time").
        let soon = || partix_shm::clock::stamp_ns() + 1_000_000_000;
        let before = partix_shm::clock::stamp_ns();
        std::thread::sleep(Duration::from_millis(2));
        s.try_send(b"late").unwrap();
        // Sent 2 ms after `before`: not by it, and nothing moved for it.
        assert!(!d.sent_by(before));
        let mut buf = [0u8; 64];
        assert_eq!(
            d.try_recv(&mut buf),
            Ok(4),
            "moved, and kept for the next receive"
        );
        assert_eq!(&buf[..4], b"late");
        s.try_send(b"due").unwrap();
        // The RX ring is empty: a look by a time after the send moves it and finds it.
        assert!(d.sent_by(partix_shm::clock::stamp_ns() + 1_000_000));
        assert_eq!(d.late_moves(), 2);
        // With one sent by the time in the RX ring, a look moves nothing more.
        s.try_send(b"next").unwrap();
        assert!(d.sent_by(soon()));
        assert_eq!(d.late_moves(), 2);
        assert_eq!(d.try_recv(&mut buf), Ok(3));
        assert_eq!(&buf[..3], b"due");
        assert_eq!(
            d.try_recv(&mut buf),
            Err(PopError::Empty),
            "`next` was not moved"
        );
        assert!(d.sent_by(soon()), "moved for the look");
        assert_eq!(d.try_recv(&mut buf), Ok(4));
        assert_eq!(&buf[..4], b"next");
        assert!(!d.sent_by(soon()), "empty");
        assert_eq!(d.reader_moves(), 0);
        assert_eq!(d.late_moves(), 4);
    }

    /// A two-sided sampling channel's sender and its destination, with a manager that no thread
    /// runs (whatever moves a message is the reader's own work).
    fn unmanaged_two_sided_sampling() -> (
        TwoSidedSender,
        SamplingDestination,
        Arc<Helped<NetworkManager>>,
    ) {
        let shape = RingShape::new(64, 4).unwrap();
        let tx = Arc::new(Region::create("partix-watch-tx", shape.tx_size_bytes()).unwrap());
        let rx = Arc::new(Region::create("partix-watch-rx", shape.rx_size_bytes()).unwrap());
        let s = TwoSidedSender::init(tx.clone(), 0, shape).unwrap();
        let r = TwoSidedReceiver::init(rx.clone(), 0, shape).unwrap();
        let h = Arc::new(Helped::new(
            NetworkManager::attach(tx, 0, rx, 0).unwrap(),
            Delivery::Helped,
        ));
        (s, SamplingDestination::TwoSided(r, h.clone()), h)
    }

    /// With `Delivery::Manager`, readers never move a message: with no manager thread running,
    /// a sampling read finds the RX ring empty and a wait times out in every mode, a queuing
    /// receive and its waiter find nothing, and no help is counted; once the manager moves
    /// (its round, run by hand here), they find the messages.
    #[test]
    fn manager_delivered_readers_never_move_messages() {
        let (mut s, d, h) = unmanaged_two_sided_sampling();
        let SamplingDestination::TwoSided(r, inner) = d else {
            unreachable!()
        };
        drop(inner);
        let h = Arc::new(Helped::new(
            Arc::into_inner(h).unwrap().manager.into_inner().unwrap(),
            Delivery::Manager,
        ));
        let mut d = SamplingDestination::TwoSided(r, h.clone());
        s.write(b"one").unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(d.read(&mut buf), Err(ReadError::Empty));
        for mode in [
            RecvMode::Spin,
            RecvMode::SpinThenPark { spins: 10 },
            RecvMode::Blocking,
        ] {
            let e = d.wait_newer(&mut buf, None, mode, Some(Duration::from_millis(20)));
            assert!(matches!(e, Err(WaitError::TimedOut)), "{mode:?}: {e:?}");
        }
        assert_eq!(h.manager.lock().unwrap().run_once(), Progress::Idle);
        let ok = d
            .wait_newer(
                &mut buf,
                None,
                RecvMode::Blocking,
                Some(Duration::from_secs(5)),
            )
            .unwrap();
        assert_eq!(&buf[..ok.len], b"one");
        assert_eq!((h.helps(), d.reader_moves()), (0, 0));
        // A wait past its deadline has its last look move what the manager did not: the newest.
        s.write(b"two").unwrap();
        s.write(b"three").unwrap();
        let e = d.wait_newer(&mut buf, Some(ok.seq), RecvMode::Spin, Some(Duration::ZERO));
        assert!(matches!(e, Err(WaitError::TimedOut)), "{e:?}");
        d.move_late();
        let late = d
            .wait_newer(&mut buf, Some(ok.seq), RecvMode::Spin, Some(Duration::ZERO))
            .unwrap();
        assert_eq!(&buf[..late.len], b"three");
        assert_eq!((d.late_moves(), d.reader_moves()), (1, 0));

        let (mut s, d, w) = unmanaged_two_sided_queue();
        let QueueDestination::TwoSided(r, h) = d else {
            unreachable!()
        };
        // The waiter holds the other reference.
        drop(w);
        let h = Arc::new(Helped::new(
            Arc::into_inner(h).unwrap().manager.into_inner().unwrap(),
            Delivery::Manager,
        ));
        let mut d = QueueDestination::TwoSided(r, h.clone());
        s.try_send(b"queued").unwrap();
        assert_eq!(d.try_recv(&mut buf), Err(PopError::Empty));
        h.manager.lock().unwrap().run_once();
        assert_eq!(d.try_recv(&mut buf), Ok(6));
        assert_eq!(d.reader_moves(), 0);
    }

    /// Stop a manager thread that a test started with `stop` and wait for it to end.
    fn stop_manager<M>(h: &Helped<M>, stop: &AtomicBool, thread: std::thread::JoinHandle<()>) {
        stop.store(true, Ordering::Release);
        h.kick.fetch_add(1, Ordering::SeqCst);
        futex::wake_all(&h.kick);
        h.doorbell.notify();
        thread.join().unwrap();
    }

    /// Gaps between a stress test's sends: none, a short spin, or a sleep (long enough for the
    /// receiver to park and the manager's slices to come and go); xorshift, fixed seed.
    struct Gaps(u64);

    impl Gaps {
        fn next(&mut self) {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            match self.0 % 8 {
                0..=2 => {}
                3..=5 => {
                    let t0 = Instant::now();
                    let spin = Duration::from_micros(self.0 >> 8 & 31);
                    while t0.elapsed() < spin {
                        std::hint::spin_loop();
                    }
                }
                _ => std::thread::sleep(Duration::from_micros(self.0 >> 8 & 255)),
            }
        }
    }

    /// Messages per stress test.
    const STRESS_N: u32 = 8000;

    /// A blocked reader watching the doorbell, the manager thread running beside it (as
    /// `attach` starts it), and a sender that sends the next message at a random gap after the
    /// reader took the last one, the reader pausing at random gaps too (so the manager is found
    /// sleeping locally, parked on the doorbell, or moving): no wake-up is lost (every message is
    /// taken well before the 5 s time-outs of both sides) and each comes once, in order. A
    /// stress test: a readiness check that only tries the manager's lock (and so may park while
    /// the manager thread delivers) failed it in 2 of 5 runs.
    #[test]
    fn watching_readers_and_the_manager_thread_lose_no_wake_up() {
        for mode in [RecvMode::Blocking, RecvMode::SpinThenPark { spins: 50 }] {
            let (mut s, mut d, h) = unmanaged_two_sided_sampling();
            let stop = Arc::new(AtomicBool::new(false));
            let (h2, stop2) = (h.clone(), stop.clone());
            let manager = std::thread::spawn(move || {
                let mut seen = h2.helps.load(Ordering::Relaxed);
                run_shared_with(&h2.manager, &stop2, Duration::from_millis(10), || {
                    h2.idle(&mut seen)
                })
            });
            let taken = Arc::new(AtomicU32::new(0));
            let taken2 = taken.clone();
            let sender = std::thread::spawn(move || {
                let mut gaps = Gaps(0x9e37_79b9_7f4a_7c15);
                for i in 1..=STRESS_N {
                    gaps.next();
                    s.write(&i.to_le_bytes()).unwrap();
                    let t0 = Instant::now();
                    while taken2.load(Ordering::Acquire) < i {
                        assert!(
                            t0.elapsed() < Duration::from_secs(5),
                            "message {i} not taken"
                        );
                        std::thread::yield_now();
                    }
                }
            });
            let mut gaps = Gaps(0x2545_f491_4f6c_dd1d);
            let mut buf = [0u8; 64];
            let mut last = None;
            for i in 1..=STRESS_N {
                let ok = d
                    .wait_newer(&mut buf, last, mode, Some(Duration::from_secs(5)))
                    .unwrap_or_else(|e| panic!("{mode:?}: message {i}: {e:?}"));
                let v = u32::from_le_bytes(buf[..4].try_into().unwrap());
                assert_eq!((v, ok.seq), (i, i), "{mode:?}");
                last = Some(ok.seq);
                taken.store(i, Ordering::Release);
                gaps.next();
            }
            sender.join().unwrap();
            stop_manager(&h, &stop, manager);
            assert_eq!(h.watching.load(Ordering::SeqCst), 0, "{mode:?}");
        }
    }

    /// The queuing version: a parking head waiter watching the doorbell, the manager thread
    /// moving beside it and a sender at random gaps: every message arrives once and in order.
    /// (A wake-up lost here would cost at most one 20 ms park, `WATCH_SLICE`, which a test
    /// cannot tell from a slow machine; the sampling test above is the one that would hang.)
    #[test]
    fn a_watching_queuing_waiter_and_the_manager_thread_lose_no_wake_up() {
        let (mut s, mut d, w) = unmanaged_two_sided_queue();
        let QueueWaiter::Helped { helped, .. } = &w else {
            unreachable!()
        };
        let (h, stop) = (helped.clone(), Arc::new(AtomicBool::new(false)));
        let (h2, stop2) = (h.clone(), stop.clone());
        let manager = std::thread::spawn(move || {
            let mut seen = h2.helps.load(Ordering::Relaxed);
            run_manager_with(&h2.manager, &stop2, || h2.idle(&mut seen))
        });
        let sender = std::thread::spawn(move || {
            let mut gaps = Gaps(0x2545_f491_4f6c_dd1d);
            for i in 1..=STRESS_N {
                gaps.next();
                let t0 = Instant::now();
                // The credit comes back as the receiver pops.
                while s.try_send(&i.to_le_bytes()).is_err() {
                    assert!(t0.elapsed() < Duration::from_secs(5), "no credit for {i}");
                    std::thread::yield_now();
                }
            }
        });
        let mut buf = [0u8; 64];
        for i in 1..=STRESS_N {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                match d.try_recv(&mut buf) {
                    Ok(n) => {
                        assert_eq!(n, 4);
                        assert_eq!(u32::from_le_bytes(buf[..4].try_into().unwrap()), i);
                        break;
                    }
                    Err(PopError::Empty) => {
                        assert!(Instant::now() < deadline, "message {i} never came");
                        w.park_until(Some(deadline), || w.ready());
                    }
                    Err(e) => panic!("message {i}: {e:?}"),
                }
            }
        }
        sender.join().unwrap();
        stop_manager(&h, &stop, manager);
        assert_eq!(h.watching.load(Ordering::SeqCst), 0);
    }

    /// Send messages 1..=20 with `send`, each only once the reader took the one before (it
    /// stores its number in `taken`) and watches `h` again (then 2 ms later), so that what
    /// wakes the reader is the doorbell, and a reader slowed down by a loaded machine never
    /// finds two new messages at once.
    fn send_when_watched<M>(h: &Helped<M>, taken: &AtomicU32, mut send: impl FnMut(u8)) {
        for i in 1..=20u8 {
            let t0 = Instant::now();
            while taken.load(Ordering::SeqCst) + 1 != u32::from(i)
                || h.watching.load(Ordering::SeqCst) == 0
            {
                assert!(t0.elapsed() < Duration::from_secs(10), "never watched");
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(2));
            send(i);
        }
    }

    /// A reader blocked in a parking mode is woken by the sender's doorbell itself and moves
    /// the message (no manager thread runs here: a reader parked on the RX ring's notifier, as
    /// before, would time out); it watches only while it waits.
    #[test]
    fn a_blocked_two_sided_sampling_reader_watches_the_doorbell_in_the_managers_place() {
        for mode in [RecvMode::Blocking, RecvMode::SpinThenPark { spins: 10 }] {
            let (mut s, mut d, h) = unmanaged_two_sided_sampling();
            let mut buf = [0u8; 64];
            let mut last = None;
            let taken = AtomicU32::new(0);
            std::thread::scope(|sc| {
                let (watcher, taken) = (h.clone(), &taken);
                let writer = sc.spawn(move || {
                    send_when_watched(&watcher, taken, |i| {
                        s.write(&[i; 20]).unwrap();
                    })
                });
                for i in 1..=20u8 {
                    let ok = d
                        .wait_newer(&mut buf, last, mode, Some(Duration::from_secs(10)))
                        .unwrap_or_else(|e| panic!("{mode:?}, message {i}: {e:?}"));
                    assert_eq!(&buf[..ok.len], &[i; 20], "{mode:?}");
                    last = Some(ok.seq);
                    taken.store(u32::from(i), Ordering::SeqCst);
                }
                writer.join().unwrap();
            });
            assert_eq!(h.watching.load(Ordering::SeqCst), 0, "{mode:?}");
            assert_eq!(h.parked.load(Ordering::SeqCst), 0, "{mode:?}");
            // A time-out while watching leaves the count as it was.
            let e = d.wait_newer(&mut buf, last, mode, Some(Duration::from_millis(20)));
            assert!(matches!(e, Err(WaitError::TimedOut)), "{mode:?}: {e:?}");
            assert_eq!(h.watching.load(Ordering::SeqCst), 0, "{mode:?}");
        }
    }

    /// A two-sided sampling reader that reads rarely gets the newest message. The RX ring holds
    /// four; while nobody read, the manager delivered the messages written just after the last
    /// read and then had no credit, so without acknowledging first a read (or a wait) returned
    /// a message from long ago, not the newest.
    #[test]
    fn a_rare_two_sided_sampling_read_gets_the_newest_message() {
        let (mut s, mut d, h) = unmanaged_two_sided_sampling();
        let mut buf = [0u8; 64];
        for round in 0..3u8 {
            // The writer writes 20 messages; the manager (its help, here) delivers what it can.
            let mut write = |v: u8| {
                s.write(&[v; 8]).unwrap();
                h.help();
            };
            for i in 1..=20u8 {
                write(round * 20 + i);
            }
            let ok = d.read(&mut buf).unwrap();
            assert_eq!(&buf[..ok.len], &[round * 20 + 20; 8], "read, round {round}");
            for i in 1..=20u8 {
                write(100 + round * 20 + i);
            }
            let ok = d
                .wait_newer(
                    &mut buf,
                    Some(ok.seq),
                    RecvMode::Spin,
                    Some(Duration::from_secs(5)),
                )
                .unwrap();
            assert_eq!(
                &buf[..ok.len],
                &[100 + round * 20 + 20; 8],
                "wait, round {round}"
            );
        }
    }

    /// While a reader watches the doorbell, the manager thread sleeps locally and does not move
    /// what the reader moves; once nobody watches or helps, it parks on the doorbell again.
    #[test]
    fn the_manager_sleeps_locally_while_a_reader_watches() {
        let (_s, _d, h) = unmanaged_two_sided_sampling();
        let mut seen = h.helps.load(Ordering::Relaxed);
        // No help and nobody watching: park on the doorbell.
        assert!(!h.idle(&mut seen));
        let slept = h.watch(|| {
            let t0 = Instant::now();
            let local = h.idle(&mut seen);
            (local, t0.elapsed())
        });
        assert!(slept.0, "watched: the manager must sleep locally");
        // Until its watchdog (nobody kicks it here), counted as a nap.
        assert!(slept.1 >= HELPED_WATCHDOG / 2, "slept {:?}", slept.1);
        assert_eq!(h.naps(), 1);
        assert!(!h.idle(&mut seen), "nobody watches any more");
    }

    /// A receive moves what the sender queued itself (no thread hop to the manager), in order,
    /// and returns the credit.
    #[test]
    fn a_two_sided_queuing_receive_helps_the_manager() {
        let (mut s, mut d, _) = unmanaged_two_sided_queue();
        let mut buf = [0u8; 64];
        assert_eq!(d.try_recv(&mut buf), Err(PopError::Empty));
        for i in 0..4u8 {
            s.try_send(&[i; 10]).unwrap();
        }
        assert_eq!(s.try_send(&[9; 10]), Err(PushError::Full));
        for i in 0..4u8 {
            assert_eq!(d.try_recv(&mut buf), Ok(10));
            assert_eq!(buf[..10], [i; 10]);
        }
        assert_eq!(d.try_recv(&mut buf), Err(PopError::Empty));
        // The receives returned the credit.
        s.try_send(&[5; 3]).unwrap();
        assert_eq!(d.len(), 1);
    }

    /// A waiter polling a two-sided destination sees a message the manager thread never moved
    /// (its readiness check helps), and a waiter going to sleep tells the manager to watch the
    /// doorbell again while it sleeps.
    #[test]
    fn a_polling_two_sided_queuing_waiter_helps_and_a_sleeping_one_does_not() {
        let (mut s, mut d, w) = unmanaged_two_sided_queue();
        assert!(!w.ready());
        s.try_send(b"hello").unwrap();
        assert!(w.ready());
        assert_eq!(w.len(), 1);
        let mut buf = [0u8; 64];
        assert_eq!(d.try_recv(&mut buf), Ok(5));
        let QueueWaiter::Helped { helped, .. } = &w else {
            unreachable!()
        };
        let parked_meanwhile = helped.asleep(|| helped.parked.load(Ordering::SeqCst));
        assert_eq!(parked_meanwhile, 1);
        assert_eq!(helped.parked.load(Ordering::SeqCst), 0);
        // Nothing came: a park with a deadline returns false, and leaves no sleeper counted.
        let t0 = Instant::now();
        assert!(!w.park_until(Some(t0 + Duration::from_millis(20)), || w.ready()));
        assert_eq!(helped.parked.load(Ordering::SeqCst), 0);
        assert_eq!(helped.watching.load(Ordering::SeqCst), 0);
    }

    /// A parking two-sided queuing waiter is woken by the sender's doorbell itself and moves the
    /// messages (no manager thread runs here: a waiter parked on the RX ring's notifier, as
    /// before, would never see them), in order, and is counted as a watcher only while it parks.
    #[test]
    fn a_parked_two_sided_queuing_waiter_watches_the_doorbell_in_the_managers_place() {
        let (mut s, mut d, w) = unmanaged_two_sided_queue();
        let QueueWaiter::Helped { helped, .. } = &w else {
            unreachable!()
        };
        let watcher = helped.clone();
        let mut buf = [0u8; 64];
        let taken = AtomicU32::new(0);
        std::thread::scope(|sc| {
            let taken = &taken;
            let sender = sc.spawn(move || {
                send_when_watched(&watcher, taken, |i| s.try_send(&[i; 10]).unwrap())
            });
            for i in 1..=20u8 {
                let deadline = Instant::now() + Duration::from_secs(10);
                // As the port's head waiter does: park (a slice at a time) until ready.
                while !w.park_until(Some(deadline), || w.ready()) {
                    assert!(Instant::now() < deadline, "message {i} never came");
                }
                assert_eq!(d.try_recv(&mut buf), Ok(10));
                assert_eq!(&buf[..10], &[i; 10]);
                taken.store(u32::from(i), Ordering::SeqCst);
            }
            sender.join().unwrap();
        });
        assert_eq!(helped.watching.load(Ordering::SeqCst), 0);
        assert_eq!(helped.parked.load(Ordering::SeqCst), 0);
    }
}
