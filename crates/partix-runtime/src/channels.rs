//! The channels of a module: the shared regions and sockets the executive creates once per run
//! for each channel's transport ([`crate::transport`]), how each partition inherits exactly its
//! ports' descriptors, and the partition-side mapping by port name.
//!
//! # Descriptors per port and transport (see `docs/ports.md`)
//! - **one-sided sampling**: per destination a sampling slot ([`partix_shm::sampling`]) and a
//!   notifier region (a blocked reader parks there). The source maps every slot read-write and
//!   writes each message into each (multicast is done by the writer: no daemon, no receiver
//!   CPU); each destination maps *its own* slot read-only, so a store by the destination faults.
//!   Source: `slot, notifier` per destination; destination: `slot (r), notifier`.
//! - **one-sided queuing**: a data region holding a split SPSC ring ([`partix_shm::ring`],
//!   header, `tail` and slots) that the source maps read-write and the destination
//!   **read-only**, and a control region (both read-write) holding the "data" notifier (parks
//!   the receiver), the "space" notifier (parks the sender) and the consumer's `head` counter.
//!   Both ends: `data, control`.
//! - **two-sided**: per destination a TX region (source and destination) and an RX region
//!   (destination only); the destination runs the network manager thread. Source: the TX
//!   regions; destination: `TX, RX`.
//! - **udp / tcp**: per destination a connected socket pair on 127.0.0.1
//!   ([`crate::transport::socket::socket_pair`]); each end gets its socket. A queuing channel's
//!   ends also get a small region each, their *books* (`socket::QueueTx::with_book`,
//!   `socket::QueueRx::with_book`): counts that outlive the partition's restarts. Source:
//!   `socket, book`; destination: `socket, book`.
//!   **Opposite tcp sampling channels share one connection** ([`reverse_tcp_pairs`]): a
//!   sampling channel `P/X -> Q/Y` and one `Q/V -> P/W` (one destination each, both `tcp`) are
//!   carried by the two directions of one connection, so each direction holds exactly one
//!   channel's frames and the acknowledgement of a request rides on the reply. On a one-way
//!   connection every small segment is answered by a pure ACK of its own (4 segments per round
//!   trip against 2), which made a tcp request/reply round trip ~1.6x raw TCP's
//!   (`docs/bench-rtt.md`, session 7). Queuing channels are not paired (their destination
//!   sends credits back on the connection), nor is udp (no ACKs to save; measured no gain).
//! - **Unconnected port**: a port of the configuration that no channel uses gets a private
//!   one-sided region of its kind (writes go nowhere; reads find nothing), so creating it still
//!   succeeds.
//!
//! The regions are created once per run by [`ChannelSet::create`] and survive partition restarts:
//! a restarted destination reads the last message, a restarted sampling writer continues the
//! sequence numbers, a restarted queuing end continues at the ring's counters.
//!
//! # Hand-over
//! The executive duplicates partition `p`'s regions to descriptors [`PORT_FD_BASE`],
//! `PORT_FD_BASE + 1`, ... in the child and sets [`ENV_PORT_FDS`] to
//! [`ChannelSet::env_value`]`(p)`: one entry per port, separated by `,`, each
//! `kind:name:direction:max_message_size:param:fds` where `kind` is `s` (sampling, `param` =
//! refresh period in ns) or `q` (queuing, `param` = max number of messages), `direction` is
//! `src` or `dst`, `name` is percent-encoded (bytes other than `A-Z a-z 0-9 _ - .`), and `fds` is
//! `+`-separated `FD` + `r`/`w` (read-only / read-write mapping; sockets are `w`), optionally
//! followed by `:transport` when it is not `one-sided`, then by `:mgr` on a two-sided channel
//! with `partix:Delivery="manager"` ([`PortDesc::delivery`]), then by `:recv=MODE` when the
//! configuration gives the port a `partix:ReceiveMode` (`spin`, `block`, `parkN`), then by
//! `:nb=N` on both ends of a connected queuing channel (its capacity, [`PortDesc::capacity`]),
//! e.g.
//! `s:SENSOR:src:64:100000000:600w+601w,q:CMD:dst:32:8:602w+603w:two-sided:recv=block:nb=8`. A
//! partition only
//! ever sees the ports of its own configuration entry, so it cannot open another partition's
//! port.
//!
//! The partition takes the variable out of its environment when it attaches and makes those
//! descriptors close-on-exec ([`inherited_ports_value`]), as it does the module and partition
//! state descriptors: a program the partition runs inherits none of them.
//!
//! A region granted `r` is handed over as an `O_RDONLY` descriptor of the memfd
//! ([`Region::read_only_fd`]), not the memfd itself: the destination can neither map it writable
//! nor `mprotect` its mapping to writable (`EACCES`), nor `ftruncate` it. Every region's size is
//! sealed when it is created ([`partix_shm::region::REGION_SEALS`]), so no partition, not even
//! one holding a region read-write, can shrink it under another partition's mapping (SIGBUS) or
//! grow it.
//!
//! # Transports
//! `partix:Transport` = `one-sided` (the default), `two-sided`, `udp` or `tcp`;
//! [`ChannelSet::create`] refuses any other value (possible only for a module built in memory),
//! naming the channel and its location.
#![allow(unsafe_code)]

use crate::transport::{socket, Transport};
pub use crate::transport::{CONTROL_OFFSET, DATA_NOTIFIER, RING_OFFSET, SPACE_NOTIFIER};
use partix_config::model::{
    Channel, ChannelKind, Delivery, Location, Module, PartitionId, PortDirection, PortRef,
    ReceiveMode,
};
use partix_shm::notifier::NOTIFIER_LEN;
use partix_shm::ring::{RingLayout, CONTROL_LEN};
use partix_shm::sampling::{SamplingLayout, SamplingWriter};
use partix_shm::twoqueue::QueueShape;
use partix_shm::twosided::{RingShape, TwoSidedReceiver, TwoSidedSender};
use partix_shm::{Access, AreaError, RecvMode, Region, RegionError, Words};
use std::fmt;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::{Arc, OnceLock};

/// Environment variable listing a partition's ports and their inherited descriptors.
pub const ENV_PORT_FDS: &str = "PARTIX_PORT_FDS";
/// First descriptor number of the port regions in a partition process.
pub const PORT_FD_BASE: RawFd = 600;

/// The lowest descriptor number above every target of `fds` (`(source, target)` pairs, as
/// [`ChannelSet::child_fds`] gives them) and above [`PORT_FD_BASE`]: where a child puts its
/// descriptors before it moves them onto their targets, so that no source numbered like a
/// target is overwritten first. Just above, not far above: `fcntl(F_DUPFD)` refuses a floor at
/// or above the soft descriptor limit (often 1024).
pub fn above_port_targets(fds: &[(RawFd, RawFd)]) -> RawFd {
    fds.iter()
        .map(|&(_, dst)| dst)
        .max()
        .unwrap_or(PORT_FD_BASE)
        .max(PORT_FD_BASE)
        + 1
}
/// The default transport.
pub const ONE_SIDED: &str = "one-sided";
/// Buffers of a two-sided sampling TX or RX ring.
pub const TWO_SIDED_SAMPLING_SLOTS: u32 = 4;

/// Failure to build the channels of a module.
#[derive(Debug)]
pub enum ChannelError {
    /// A channel asks for a transport this build does not provide.
    Transport {
        /// The configuration file (or `<configuration>` for a module built in memory).
        file: String,
        /// `ChannelName` or `channel <id>`.
        channel: String,
        /// The transport asked for.
        transport: String,
        /// Where the channel starts in the configuration.
        location: Location,
    },
    /// A port's sizes do not fit the shared-memory structures.
    Layout {
        /// `partition/port`.
        port: String,
        /// Why.
        error: AreaError,
    },
    /// A region could not be created.
    Region {
        /// `partition/port`.
        port: String,
        /// Why.
        error: RegionError,
    },
    /// A socket pair could not be created.
    Socket {
        /// `partition/port`.
        port: String,
        /// Why.
        error: std::io::Error,
    },
    /// The kernel gave a `udp` queuing channel's sockets less receive buffer than its capacity
    /// needs: datagrams beyond it would be dropped, messages lost silently.
    SocketBuffers {
        /// `ChannelName` or `channel <id>`.
        channel: String,
        /// The source port, `partition/port`.
        port: String,
        /// The channel's capacity (messages) and `MaxMessageSize`.
        capacity: u32,
        /// `MaxMessageSize`.
        max_message_size: u32,
        /// What is short.
        shortfall: socket::BufferShortfall,
    },
}

impl fmt::Display for ChannelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChannelError::Transport {
                file,
                channel,
                transport,
                location,
            } => write!(
                f,
                "{file}:{}:{}: {channel}: transport \"{transport}\" is not available in this build; \
                 use partix:Transport=\"{ONE_SIDED}\", \"two-sided\", \"udp\" or \"tcp\" (or leave it out)",
                location.line, location.col
            ),
            ChannelError::Layout { port, error } => write!(f, "port {port}: {error}"),
            ChannelError::Region { port, error } => {
                write!(f, "port {port}: cannot create its shared region: {error}")
            }
            ChannelError::Socket { port, error } => {
                write!(f, "port {port}: cannot create its loopback socket pair: {error}")
            }
            ChannelError::SocketBuffers {
                channel,
                port,
                capacity,
                max_message_size,
                shortfall,
            } => {
                // SO_RCVBUF asked without CAP_NET_ADMIN is capped at rmem_max, then doubled.
                let rmem_max = shortfall.needed.div_ceil(2);
                let what = match shortfall.end {
                    "source" => "acknowledgements",
                    _ => "messages",
                };
                write!(
                    f,
                    "{channel} (udp, source {port}): the {} socket needs {} bytes of receive \
                     buffer to hold {capacity} {what} (MaxMessageSize {max_message_size}), but \
                     the kernel granted {} bytes, and it drops the datagrams that do not fit; \
                     run the executive as root (CAP_NET_ADMIN lets it force the size), raise \
                     net.core.rmem_max to at least {rmem_max} (sysctl -w \
                     net.core.rmem_max={rmem_max}), lower the ports' MaxNbMessages or \
                     MaxMessageSize, or use partix:Transport=\"tcp\", \"one-sided\" or \
                     \"two-sided\"",
                    shortfall.end, shortfall.needed, shortfall.granted
                )
            }
        }
    }
}

impl std::error::Error for ChannelError {}

/// What a partition is told about one of its ports (the decoded form of one [`ENV_PORT_FDS`]
/// entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortDesc {
    /// Port name.
    pub name: String,
    /// Sampling or queuing.
    pub kind: ChannelKind,
    /// Source or destination.
    pub direction: PortDirection,
    /// Largest message in bytes.
    pub max_message_size: u32,
    /// Sampling: refresh period in ns; queuing: max number of messages.
    pub param: u64,
    /// Descriptors (in the partition process) and how to map them (sockets: `ReadWrite`).
    pub fds: Vec<(RawFd, Access)>,
    /// The channel's transport (one-sided for an unconnected port).
    pub transport: Transport,
    /// A `two-sided` channel's `partix:Delivery` (the default, `helped`, elsewhere): who moves
    /// its messages from the TX ring to the RX ring (the destination's business; the source
    /// carries it too).
    pub delivery: Delivery,
    /// The port's `partix:ReceiveMode` (`None`: the runtime's default).
    pub recv_mode: Option<RecvMode>,
    /// A connected queuing port: the channel's capacity, the smaller of its two ports'
    /// `MaxNbMessages` (ARINC 653 lets them differ). The source never queues more (its bound
    /// on a ring, its credit otherwise); over `udp`/`tcp` the destination's acknowledgement
    /// batches go by it, and the sockets hold that many frames, so none is ever lost. `None`
    /// elsewhere.
    pub capacity: Option<u32>,
    /// A shared-memory port: the (largest message, message count; 0 for sampling) its
    /// channel's regions were laid out with ([`sampling_layout`], [`queuing_layout`],
    /// [`two_sided_sampling_shape`], [`two_sided_queue_shape`]). The port attaches with that
    /// layout and never reads the regions' headers, which the other side can overwrite
    /// (`docs/shm-channels.md`, "Headers the peer can write"). `None`: read the headers.
    pub layout: Option<(u32, u32)>,
}

/// The runtime's mode for a configured `partix:ReceiveMode` (`spin-then-park` without a count:
/// the default's polls).
pub fn recv_mode_of(m: ReceiveMode) -> RecvMode {
    match m {
        ReceiveMode::Spin => RecvMode::Spin,
        ReceiveMode::Blocking => RecvMode::Blocking,
        ReceiveMode::SpinThenPark { spins } => RecvMode::SpinThenPark {
            spins: spins.unwrap_or(crate::partition::DEFAULT_RECV_MODE_SPINS),
        },
    }
}

/// One port grant of a partition, on the executive side: the description and region indices.
#[derive(Debug)]
struct Grant {
    desc: PortDesc,
    regions: Vec<(usize, Access)>,
}

/// One connected port end: (partition index, port name, region indices and mappings).
type End = (usize, String, Vec<(usize, Access)>);

/// A shared region or a socket of a channel (executive side).
#[derive(Debug)]
enum Resource {
    /// A region, with its read-only descriptor ([`Region::read_only_fd`]) once a grant maps it
    /// read-only.
    Region {
        region: Region,
        read_only: Option<OwnedFd>,
    },
    Socket(OwnedFd),
}

impl Resource {
    fn region(region: Region) -> Resource {
        Resource::Region {
            region,
            read_only: None,
        }
    }

    /// Return the descriptor to hand to a partition that maps this resource with `access`: for
    /// a read-only grant of a region, the read-only descriptor (so the partition cannot map the
    /// region writable, nor `mprotect` its mapping to writable); otherwise the memfd or socket.
    ///
    /// # Panics
    /// For a read-only grant of a region whose read-only descriptor was not opened
    /// ([`ChannelSet::create`] opens one for every read-only grant).
    fn fd_for(&self, access: Access) -> RawFd {
        match (self, access) {
            (Resource::Region { region, .. }, Access::ReadWrite) => region.raw_fd(),
            (Resource::Region { read_only, .. }, Access::ReadOnly) => read_only
                .as_ref()
                .expect(
                    "ChannelSet::create opens the read-only descriptor of every read-only grant",
                )
                .as_raw_fd(),
            (Resource::Socket(s), _) => s.as_raw_fd(),
        }
    }
}

/// The regions and sockets of all channels of a module, created once per run, and who gets
/// which.
#[derive(Debug)]
pub struct ChannelSet {
    regions: Vec<Resource>,
    grants: Vec<Vec<Grant>>,
}

fn channel_label(c: &Channel) -> String {
    match &c.name {
        Some(n) => format!("channel {} ({n})", c.id.0),
        None => format!("channel {}", c.id.0),
    }
}

/// The layout of a one-sided sampling slot for messages of up to `max` bytes (made by the
/// executive, and attached to with it: [`PortDesc::layout`]).
///
/// # Errors
/// As [`SamplingLayout::new`].
pub fn sampling_layout(max: u32) -> Result<SamplingLayout, AreaError> {
    SamplingLayout::new(max)
}

/// The layout of a one-sided queuing ring for `nb` messages of up to `max` bytes.
///
/// # Errors
/// As [`RingLayout::new`].
pub fn queuing_layout(max: u32, nb: u32) -> Result<RingLayout, AreaError> {
    RingLayout::new(ring_capacity(nb), max)
}

/// The shape of a two-sided sampling channel's areas for messages of up to `max` bytes.
///
/// # Errors
/// As [`RingShape::new`].
pub fn two_sided_sampling_shape(max: u32) -> Result<RingShape, AreaError> {
    RingShape::new(max, TWO_SIDED_SAMPLING_SLOTS)
}

/// The shape of a two-sided queuing channel's regions for `nb` messages of up to `max` bytes.
///
/// # Errors
/// As [`QueueShape::new`].
pub fn two_sided_queue_shape(max: u32, nb: u32) -> Result<QueueShape, AreaError> {
    QueueShape::new(max, nb.max(1))
}

fn sampling_region(name: &str, port: &str, max: u32) -> Result<Region, ChannelError> {
    let layout = sampling_layout(max).map_err(|error| ChannelError::Layout {
        port: port.into(),
        error,
    })?;
    let region = Arc::new(Region::create(name, layout.size_bytes()).map_err(|error| {
        ChannelError::Region {
            port: port.into(),
            error,
        }
    })?);
    SamplingWriter::init(region.clone(), 0, layout).map_err(|error| ChannelError::Layout {
        port: port.into(),
        error,
    })?;
    Ok(Arc::try_unwrap(region).expect("the writer was dropped"))
}

/// Return the ring capacity (a power of two) for `max_nb_messages`, or 0 above 2^31, where no
/// power of two fits a `u32` (any ring refuses 0, as every capacity above 2^24; rounding up
/// overflowed, a panic in a debug build).
pub fn ring_capacity(max_nb_messages: u32) -> u32 {
    max_nb_messages
        .max(1)
        .checked_next_power_of_two()
        .unwrap_or(0)
}

/// Create the data region (the split ring) and the control region (notifiers and the
/// consumer's `head`) of a one-sided queuing channel.
fn queuing_regions(
    name: &str,
    port: &str,
    max: u32,
    nb: u32,
) -> Result<(Region, Region), ChannelError> {
    let layout = queuing_layout(max, nb).map_err(layout_err(port))?;
    let data = Arc::new(Region::create(name, layout.size_bytes()).map_err(region_err(port))?);
    let ctrl =
        Arc::new(Region::create(&format!("{name}-ctl"), CONTROL_LEN).map_err(region_err(port))?);
    layout
        .init_split(&data, RING_OFFSET, &ctrl, CONTROL_OFFSET)
        .map_err(layout_err(port))?;
    Ok((
        Arc::try_unwrap(data).expect("no other handle"),
        Arc::try_unwrap(ctrl).expect("no other handle"),
    ))
}

fn region_err(port: &str) -> impl Fn(RegionError) -> ChannelError + '_ {
    move |error| ChannelError::Region {
        port: port.into(),
        error,
    }
}

fn layout_err(port: &str) -> impl Fn(AreaError) -> ChannelError + '_ {
    move |error| ChannelError::Layout {
        port: port.into(),
        error,
    }
}

fn notifier_region(name: &str, port: &str) -> Result<Region, ChannelError> {
    Region::create(name, NOTIFIER_LEN).map_err(region_err(port))
}

fn two_sided_sampling(name: &str, port: &str, max: u32) -> Result<(Region, Region), ChannelError> {
    let shape = two_sided_sampling_shape(max).map_err(layout_err(port))?;
    let tx = Arc::new(
        Region::create(&format!("{name}-tx"), shape.tx_size_bytes()).map_err(region_err(port))?,
    );
    let rx = Arc::new(
        Region::create(&format!("{name}-rx"), shape.rx_size_bytes()).map_err(region_err(port))?,
    );
    TwoSidedSender::init(tx.clone(), 0, shape).map_err(layout_err(port))?;
    TwoSidedReceiver::init(rx.clone(), 0, shape).map_err(layout_err(port))?;
    Ok((
        Arc::try_unwrap(tx).expect("the sender was dropped"),
        Arc::try_unwrap(rx).expect("the receiver was dropped"),
    ))
}

fn two_sided_queuing(
    name: &str,
    port: &str,
    max: u32,
    nb: u32,
) -> Result<(Region, Region), ChannelError> {
    let shape = two_sided_queue_shape(max, nb).map_err(layout_err(port))?;
    let tx = Arc::new(
        Region::create(&format!("{name}-tx"), shape.tx_size_bytes()).map_err(region_err(port))?,
    );
    let rx = Arc::new(
        Region::create(&format!("{name}-rx"), shape.rx_size_bytes()).map_err(region_err(port))?,
    );
    shape.init(&tx, &rx).map_err(layout_err(port))?;
    Ok((
        Arc::try_unwrap(tx).expect("no other handle"),
        Arc::try_unwrap(rx).expect("no other handle"),
    ))
}

/// Return, per channel of `module` (same order), the index of the channel whose connection it
/// shares, if any: sampling channels with one destination, both `tcp`, going opposite ways
/// between the same two partitions, paired in configuration order (each channel at most once).
pub fn reverse_tcp_pairs(module: &Module, transports: &[Transport]) -> Vec<Option<usize>> {
    let pairable = |i: usize| {
        let c = &module.channels[i];
        transports[i] == Transport::Tcp
            && c.kind == ChannelKind::Sampling
            && c.destinations.len() == 1
            && module.partition_index(c.source.partition).is_some()
            && module
                .partition_index(c.destinations[0].partition)
                .is_some()
    };
    let mut partner = vec![None; module.channels.len()];
    for i in 0..module.channels.len() {
        if partner[i].is_some() || !pairable(i) {
            continue;
        }
        let a = &module.channels[i];
        let found = (i + 1..module.channels.len()).find(|&j| {
            let b = &module.channels[j];
            partner[j].is_none()
                && pairable(j)
                && b.source.partition == a.destinations[0].partition
                && b.destinations[0].partition == a.source.partition
        });
        if let Some(j) = found {
            partner[i] = Some(j);
            partner[j] = Some(i);
        }
    }
    partner
}

/// The largest message of sampling channel `c`: its source port's, else a destination's.
fn sampling_max(module: &Module, c: &Channel) -> u32 {
    module
        .partition(c.source.partition)
        .and_then(|p| p.sampling_port(&c.source.port))
        .map(|p| p.max_message_size)
        .or_else(|| {
            c.destinations.iter().find_map(|d| {
                module
                    .partition(d.partition)
                    .and_then(|p| p.sampling_port(&d.port))
                    .map(|p| p.max_message_size)
            })
        })
        .unwrap_or(1)
}

impl ChannelSet {
    fn push(&mut self, r: Resource) -> usize {
        self.regions.push(r);
        self.regions.len() - 1
    }

    /// Open the read-only descriptor of every region that `regions` grants read-only (once per
    /// region; `port` names the port in an error).
    fn open_read_only(
        &mut self,
        regions: &[(usize, Access)],
        port: &str,
    ) -> Result<(), ChannelError> {
        for &(ri, access) in regions {
            if let (
                Access::ReadOnly,
                Resource::Region {
                    region,
                    read_only: ro @ None,
                },
            ) = (access, &mut self.regions[ri])
            {
                *ro = Some(region.read_only_fd().map_err(region_err(port))?);
            }
        }
        Ok(())
    }

    /// Create the regions and sockets of every channel (and of every unconnected port) of
    /// `module`.
    ///
    /// # Errors
    /// [`ChannelError::Transport`] for a channel whose transport is unknown;
    /// [`ChannelError::Layout`] / [`ChannelError::Region`] / [`ChannelError::Socket`] if a
    /// region or socket cannot be made.
    pub fn create(module: &Module) -> Result<ChannelSet, ChannelError> {
        let mut transports = Vec::with_capacity(module.channels.len());
        for c in &module.channels {
            let t = match &c.transport {
                None => Transport::OneSided,
                Some(t) => Transport::parse(t).ok_or_else(|| ChannelError::Transport {
                    file: module
                        .source
                        .as_ref()
                        .map_or_else(|| "<configuration>".to_owned(), |p| p.display().to_string()),
                    channel: channel_label(c),
                    transport: t.clone(),
                    location: c.location,
                })?,
            };
            transports.push(t);
        }
        let mut set = ChannelSet {
            regions: Vec::new(),
            grants: module.partitions.iter().map(|_| Vec::new()).collect(),
        };
        let pname = |id: PartitionId| {
            module
                .partition(id)
                .map_or_else(|| format!("partition{}", id.0), |p| p.name.clone())
        };
        let label = |r: &PortRef| format!("{}/{}", pname(r.partition), r.port);
        // Resource indices of each (partition index, port name) end, with its transport.
        let mut ends: Vec<(End, Transport)> = Vec::new();
        // The capacity of each udp/tcp queuing end ([`PortDesc::capacity`]).
        let mut capacities: Vec<((usize, String), u32)> = Vec::new();
        // The layout of each shared-memory end's regions ([`PortDesc::layout`]).
        let mut layouts: Vec<((usize, String), (u32, u32))> = Vec::new();
        let partner = reverse_tcp_pairs(module, &transports);
        // For the second channel of a pair: (its source's socket, its destination's socket),
        // made with the first.
        let mut shared: Vec<Option<(usize, usize)>> = vec![None; module.channels.len()];
        for (ci, (c, &transport)) in module.channels.iter().zip(&transports).enumerate() {
            let src = &c.source;
            let src_idx = module.partition_index(src.partition);
            match c.kind {
                ChannelKind::Sampling => {
                    let max = sampling_max(module, c);
                    let mut src_res = Vec::new();
                    for d in &c.destinations {
                        let name = format!("partix-ch{}-{}", c.id.0, label(d));
                        let port = label(d);
                        let dst_res = match transport {
                            Transport::OneSided => {
                                let slot = sampling_region(&name, &port, max)?;
                                let n = notifier_region(&format!("{name}-wake"), &port)?;
                                let si = set.push(Resource::region(slot));
                                let ni = set.push(Resource::region(n));
                                src_res.push((si, Access::ReadWrite));
                                src_res.push((ni, Access::ReadWrite));
                                vec![(si, Access::ReadOnly), (ni, Access::ReadWrite)]
                            }
                            Transport::TwoSided => {
                                let (tx, rx) = two_sided_sampling(&name, &port, max)?;
                                let ti = set.push(Resource::region(tx));
                                let ri = set.push(Resource::region(rx));
                                src_res.push((ti, Access::ReadWrite));
                                vec![(ti, Access::ReadWrite), (ri, Access::ReadWrite)]
                            }
                            Transport::Udp | Transport::Tcp => {
                                let (ai, bi) =
                                    match shared[ci] {
                                        Some(made) => made,
                                        None => {
                                            // The first of a pair sizes the buffers for both.
                                            let max = partner[ci].map_or(max, |j| {
                                                max.max(sampling_max(module, &module.channels[j]))
                                            });
                                            let kind =
                                                transport.socket_kind().expect("socket transport");
                                            let (a, b) = socket::socket_pair(kind, max, 4)
                                                .map_err(|error| ChannelError::Socket {
                                                    port: port.clone(),
                                                    error,
                                                })?;
                                            let ai = set.push(Resource::Socket(a));
                                            let bi = set.push(Resource::Socket(b));
                                            if let Some(j) = partner[ci] {
                                                // The reverse channel: its source holds `b`.
                                                shared[j] = Some((bi, ai));
                                            }
                                            (ai, bi)
                                        }
                                    };
                                src_res.push((ai, Access::ReadWrite));
                                vec![(bi, Access::ReadWrite)]
                            }
                        };
                        if let Some(di) = module.partition_index(d.partition) {
                            if transport.is_shared_memory() {
                                layouts.push(((di, d.port.clone()), (max, 0)));
                            }
                            ends.push(((di, d.port.clone(), dst_res), transport));
                        }
                    }
                    if let Some(si) = src_idx {
                        if transport.is_shared_memory() {
                            layouts.push(((si, src.port.clone()), (max, 0)));
                        }
                        ends.push(((si, src.port.clone(), src_res), transport));
                    }
                }
                ChannelKind::Queuing => {
                    let port = module
                        .partition(src.partition)
                        .and_then(|p| p.queuing_port(&src.port));
                    let dst_port = c.destinations.first().and_then(|d| {
                        module
                            .partition(d.partition)
                            .and_then(|p| p.queuing_port(&d.port))
                    });
                    let max = port.or(dst_port).map(|p| p.max_message_size).unwrap_or(1);
                    let nb = dst_port.or(port).map(|p| p.max_nb_messages).unwrap_or(1);
                    // The source's bound is the channel's capacity, the smaller of the two ends'
                    // MaxNbMessages (udp/tcp: credit beyond what the destination's sockets were
                    // sized for overflowed them, and udp lost datagrams silently).
                    let capacity = match (port, dst_port) {
                        (Some(s), Some(d)) => s.max_nb_messages.min(d.max_nb_messages),
                        _ => nb,
                    };
                    // Every transport: the source never queues more than the channel's capacity
                    // (a shared-memory ring sized for a destination of 5 has 8 slots, and a
                    // two-sided source's credit was its own MaxNbMessages: a destination held
                    // more than it declared).
                    if let Some(si) = src_idx {
                        capacities.push(((si, src.port.clone()), capacity));
                    }
                    if let Some(d) = c.destinations.first() {
                        if let Some(di) = module.partition_index(d.partition) {
                            capacities.push(((di, d.port.clone()), capacity));
                        }
                    }
                    let name = format!("partix-ch{}-{}", c.id.0, label(src));
                    let plabel = label(src);
                    let (src_res, dst_res) = match transport {
                        Transport::OneSided => {
                            let (data, ctrl) = queuing_regions(&name, &plabel, max, nb)?;
                            let di = set.push(Resource::region(data));
                            let ci = set.push(Resource::region(ctrl));
                            (
                                vec![(di, Access::ReadWrite), (ci, Access::ReadWrite)],
                                vec![(di, Access::ReadOnly), (ci, Access::ReadWrite)],
                            )
                        }
                        Transport::TwoSided => {
                            let (tx, rx) = two_sided_queuing(&name, &plabel, max, nb)?;
                            let ti = set.push(Resource::region(tx));
                            let ri = set.push(Resource::region(rx));
                            (
                                vec![(ti, Access::ReadWrite)],
                                vec![(ti, Access::ReadWrite), (ri, Access::ReadWrite)],
                            )
                        }
                        Transport::Udp | Transport::Tcp => {
                            let kind = transport.socket_kind().expect("socket transport");
                            let sock_err = |error| ChannelError::Socket {
                                port: plabel.clone(),
                                error,
                            };
                            let (a, b) =
                                socket::socket_pair(kind, max, capacity).map_err(sock_err)?;
                            // A udp queue loses what its receive buffers cannot hold: refuse
                            // one whose buffers the kernel capped below its capacity.
                            if kind == socket::SocketKind::Udp {
                                if let Some(shortfall) =
                                    socket::udp_queue_shortfall(&a, &b, max, capacity)
                                        .map_err(sock_err)?
                                {
                                    return Err(ChannelError::SocketBuffers {
                                        channel: channel_label(c),
                                        port: plabel,
                                        capacity,
                                        max_message_size: max,
                                        shortfall,
                                    });
                                }
                            }
                            let ai = set.push(Resource::Socket(a));
                            let bi = set.push(Resource::Socket(b));
                            // The source's counts of frames in flight, kept across its
                            // restarts (`socket::QueueTx::with_book`).
                            let book = Region::create(
                                &format!("{name}-book"),
                                Words::bytes(socket::BOOK_WORDS),
                            )
                            .map_err(region_err(&plabel))?;
                            let ki = set.push(Resource::region(book));
                            // The destination's identity and count of frames taken, kept
                            // across its restarts (`socket::QueueRx::with_book`).
                            let dbook = Region::create(
                                &format!("{name}-dbook"),
                                Words::bytes(socket::DEST_BOOK_WORDS),
                            )
                            .map_err(region_err(&plabel))?;
                            let dki = set.push(Resource::region(dbook));
                            (
                                vec![(ai, Access::ReadWrite), (ki, Access::ReadWrite)],
                                vec![(bi, Access::ReadWrite), (dki, Access::ReadWrite)],
                            )
                        }
                    };
                    if let Some(si) = src_idx {
                        if transport.is_shared_memory() {
                            layouts.push(((si, src.port.clone()), (max, nb)));
                        }
                        ends.push(((si, src.port.clone(), src_res), transport));
                    }
                    // A queuing channel has one destination (the configuration checks it).
                    if let Some(d) = c.destinations.first() {
                        if let Some(di) = module.partition_index(d.partition) {
                            if transport.is_shared_memory() {
                                layouts.push(((di, d.port.clone()), (max, nb)));
                            }
                            ends.push(((di, d.port.clone(), dst_res), transport));
                        }
                    }
                }
            }
        }
        for (pi, part) in module.partitions.iter().enumerate() {
            let find = |name: &str| {
                ends.iter()
                    .find(|((i, n, _), _)| *i == pi && n == name)
                    .map(|((_, _, r), t)| (r.clone(), *t))
            };
            let layout_of = |name: &str| {
                layouts
                    .iter()
                    .find(|((i, n), _)| *i == pi && n == name)
                    .map(|&(_, l)| l)
            };
            for sp in &part.sampling_ports {
                let (regions, transport, layout) = match find(&sp.name) {
                    Some((r, t)) => (r, t, layout_of(&sp.name)),
                    None => {
                        let name = format!("partix-unconnected-{}/{}", part.name, sp.name);
                        let r = sampling_region(&name, &sp.name, sp.max_message_size)?;
                        let n = notifier_region(&format!("{name}-wake"), &sp.name)?;
                        let ri = set.push(Resource::region(r));
                        let ni = set.push(Resource::region(n));
                        let access = match sp.direction {
                            PortDirection::Source => Access::ReadWrite,
                            PortDirection::Destination => Access::ReadOnly,
                        };
                        (
                            vec![(ri, access), (ni, Access::ReadWrite)],
                            Transport::OneSided,
                            Some((sp.max_message_size, 0)),
                        )
                    }
                };
                set.open_read_only(&regions, &format!("{}/{}", part.name, sp.name))?;
                set.grants[pi].push(Grant {
                    desc: PortDesc {
                        name: sp.name.clone(),
                        kind: ChannelKind::Sampling,
                        direction: sp.direction,
                        max_message_size: sp.max_message_size,
                        param: sp.refresh_period.as_nanos().min(u64::MAX as u128) as u64,
                        fds: Vec::new(),
                        transport,
                        delivery: delivery_of(module, part.id, &sp.name),
                        recv_mode: sp.receive_mode.map(recv_mode_of),
                        capacity: None,
                        layout,
                    },
                    regions,
                });
            }
            for qp in &part.queuing_ports {
                let (regions, transport, layout) = match find(&qp.name) {
                    Some((r, t)) => (r, t, layout_of(&qp.name)),
                    None => {
                        let name = format!("partix-unconnected-{}/{}", part.name, qp.name);
                        let (data, ctrl) = queuing_regions(
                            &name,
                            &qp.name,
                            qp.max_message_size,
                            qp.max_nb_messages,
                        )?;
                        let di = set.push(Resource::region(data));
                        let ci = set.push(Resource::region(ctrl));
                        let access = match qp.direction {
                            PortDirection::Source => Access::ReadWrite,
                            PortDirection::Destination => Access::ReadOnly,
                        };
                        (
                            vec![(di, access), (ci, Access::ReadWrite)],
                            Transport::OneSided,
                            Some((qp.max_message_size, qp.max_nb_messages)),
                        )
                    }
                };
                set.open_read_only(&regions, &format!("{}/{}", part.name, qp.name))?;
                set.grants[pi].push(Grant {
                    desc: PortDesc {
                        name: qp.name.clone(),
                        kind: ChannelKind::Queuing,
                        direction: qp.direction,
                        max_message_size: qp.max_message_size,
                        param: u64::from(qp.max_nb_messages),
                        fds: Vec::new(),
                        transport,
                        delivery: delivery_of(module, part.id, &qp.name),
                        recv_mode: qp.receive_mode.map(recv_mode_of),
                        capacity: capacities
                            .iter()
                            .find(|((i, n), _)| *i == pi && *n == qp.name)
                            .map(|&(_, c)| c),
                        layout,
                    },
                    regions,
                });
            }
        }
        Ok(set)
    }

    /// Return the number of regions and sockets created.
    pub fn region_count(&self) -> usize {
        self.regions.len()
    }

    /// Return the descriptors partition `p` inherits: `(descriptor in the executive, descriptor
    /// number in the partition)`, numbered from [`PORT_FD_BASE`]. A region granted read-only is
    /// handed over as its `O_RDONLY` descriptor ([`Region::read_only_fd`]), never as the
    /// read-write memfd.
    pub fn child_fds(&self, p: usize) -> Vec<(RawFd, RawFd)> {
        let mut out = Vec::new();
        for g in self.grants.get(p).map(Vec::as_slice).unwrap_or(&[]) {
            for &(ri, access) in &g.regions {
                let n = PORT_FD_BASE + out.len() as RawFd;
                out.push((self.regions[ri].fd_for(access), n));
            }
        }
        out
    }

    /// Return the ports of partition `p` with the descriptor numbers of [`ChannelSet::child_fds`].
    pub fn ports_of(&self, p: usize) -> Vec<PortDesc> {
        let mut n = PORT_FD_BASE;
        let mut out = Vec::new();
        for g in self.grants.get(p).map(Vec::as_slice).unwrap_or(&[]) {
            let mut d = g.desc.clone();
            for &(_, access) in &g.regions {
                d.fds.push((n, access));
                n += 1;
            }
            out.push(d);
        }
        out
    }

    /// Return the value of [`ENV_PORT_FDS`] for partition `p`.
    pub fn env_value(&self, p: usize) -> String {
        encode_ports(&self.ports_of(p))
    }
}

fn encode_name(name: &str) -> String {
    let mut s = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.' {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

fn decode_name(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The `partix:Delivery` of the channel that has partition `part`'s port `port` at one of its
/// ends (the default when none does, or the channel does not say).
fn delivery_of(module: &Module, part: PartitionId, port: &str) -> Delivery {
    module
        .channels
        .iter()
        .find(|c| {
            std::iter::once(&c.source)
                .chain(&c.destinations)
                .any(|e| e.partition == part && e.port == port)
        })
        .and_then(|c| c.delivery)
        .unwrap_or_default()
}

/// Encode port descriptions as an [`ENV_PORT_FDS`] value.
pub fn encode_ports(ports: &[PortDesc]) -> String {
    let mut entries = Vec::with_capacity(ports.len());
    for p in ports {
        let fds: Vec<String> = p
            .fds
            .iter()
            .map(|(fd, a)| match a {
                Access::ReadOnly => format!("{fd}r"),
                Access::ReadWrite => format!("{fd}w"),
            })
            .collect();
        let mut transport = match p.transport {
            Transport::OneSided => String::new(),
            t => format!(":{t}"),
        };
        if p.delivery == Delivery::Manager {
            transport.push_str(":mgr");
        }
        match p.recv_mode {
            None => {}
            Some(RecvMode::Spin) => transport.push_str(":recv=spin"),
            Some(RecvMode::Blocking) => transport.push_str(":recv=block"),
            Some(RecvMode::SpinThenPark { spins }) => {
                transport.push_str(&format!(":recv=park{spins}"));
            }
        }
        if let Some(c) = p.capacity {
            transport.push_str(&format!(":nb={c}"));
        }
        if let Some((max, nb)) = p.layout {
            transport.push_str(&format!(":lay={max}x{nb}"));
        }
        entries.push(format!(
            "{}:{}:{}:{}:{}:{}{transport}",
            match p.kind {
                ChannelKind::Sampling => "s",
                ChannelKind::Queuing => "q",
            },
            encode_name(&p.name),
            match p.direction {
                PortDirection::Source => "src",
                PortDirection::Destination => "dst",
            },
            p.max_message_size,
            p.param,
            fds.join("+")
        ));
    }
    entries.join(",")
}

/// Decode an [`ENV_PORT_FDS`] value.
///
/// # Errors
/// A message naming the malformed entry.
pub fn decode_ports(s: &str) -> Result<Vec<PortDesc>, String> {
    let mut out = Vec::new();
    for entry in s.split(',').filter(|e| !e.is_empty()) {
        let bad = || format!("{ENV_PORT_FDS}: malformed entry {entry:?}");
        let f: Vec<&str> = entry.split(':').collect();
        let [kind, name, dir, max, param, fds, ref extra @ ..] = f[..] else {
            return Err(bad());
        };
        // Optional, in this order: the transport (absent: one-sided), `mgr` (two-sided only:
        // `partix:Delivery="manager"`), `recv=MODE`, `nb=N`, `lay=MAXxNB`.
        let (mut transport, mut recv_mode, mut capacity, mut layout) = (None, None, None, None);
        let mut delivery = Delivery::Helped;
        for x in extra {
            if layout.is_some() {
                return Err(bad());
            }
            if *x == "mgr" {
                if transport != Some(Transport::TwoSided)
                    || delivery != Delivery::Helped
                    || recv_mode.is_some()
                    || capacity.is_some()
                {
                    return Err(bad());
                }
                delivery = Delivery::Manager;
                continue;
            }
            if let Some(l) = x.strip_prefix("lay=") {
                let (max, nb) = l.split_once('x').ok_or_else(bad)?;
                layout = Some((
                    max.parse().map_err(|_| bad())?,
                    nb.parse().map_err(|_| bad())?,
                ));
                continue;
            }
            if let Some(n) = x.strip_prefix("nb=") {
                if capacity.is_some() {
                    return Err(bad());
                }
                capacity = Some(n.parse().map_err(|_| bad())?);
                continue;
            }
            if capacity.is_some() {
                return Err(bad());
            }
            match x.strip_prefix("recv=") {
                Some(m) if recv_mode.is_none() => {
                    recv_mode = Some(match m {
                        "spin" => RecvMode::Spin,
                        "block" => RecvMode::Blocking,
                        _ => RecvMode::SpinThenPark {
                            spins: m
                                .strip_prefix("park")
                                .and_then(|n| n.parse().ok())
                                .ok_or_else(bad)?,
                        },
                    });
                }
                None if transport.is_none() && recv_mode.is_none() => {
                    transport = Some(Transport::parse(x).ok_or_else(bad)?);
                }
                _ => return Err(bad()),
            }
        }
        let transport = transport.unwrap_or(Transport::OneSided);
        let kind = match kind {
            "s" => ChannelKind::Sampling,
            "q" => ChannelKind::Queuing,
            _ => return Err(bad()),
        };
        let direction = match dir {
            "src" => PortDirection::Source,
            "dst" => PortDirection::Destination,
            _ => return Err(bad()),
        };
        let mut fdv = Vec::new();
        for fd in fds.split('+').filter(|f| !f.is_empty()) {
            let (num, access) = match fd.as_bytes().last() {
                Some(b'r') => (&fd[..fd.len() - 1], Access::ReadOnly),
                Some(b'w') => (&fd[..fd.len() - 1], Access::ReadWrite),
                _ => return Err(bad()),
            };
            fdv.push((num.parse().map_err(|_| bad())?, access));
        }
        out.push(PortDesc {
            name: decode_name(name).ok_or_else(bad)?,
            kind,
            direction,
            max_message_size: max.parse().map_err(|_| bad())?,
            param: param.parse().map_err(|_| bad())?,
            fds: fdv,
            transport,
            delivery,
            recv_mode,
            capacity,
            layout,
        });
    }
    Ok(out)
}

/// A port of this partition with its regions mapped (partition side).
#[derive(Debug)]
pub struct MappedPort {
    /// What the executive said about the port.
    pub desc: PortDesc,
    /// The mapped regions, in the order of `desc.fds` (shared-memory transports).
    pub regions: Vec<Arc<Region>>,
    /// The sockets, in the order of `desc.fds` (`udp` / `tcp`).
    pub sockets: Vec<OwnedFd>,
}

/// Map the inherited region `fd` (taking ownership of it) with `access`.
///
/// # Errors
/// A message if the descriptor is not open or cannot be mapped.
///
/// # Safety
/// `fd` must be an open descriptor that nothing else in this process owns.
pub unsafe fn map_fd(fd: RawFd, access: Access) -> Result<Region, String> {
    // SAFETY: an all-zero stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat only writes into st; a bad fd yields EBADF.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(format!(
            "port descriptor {fd}: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the caller guarantees fd is open and unowned.
    unsafe { Region::from_raw_fd(fd, st.st_size as usize, access) }
        .map_err(|e| format!("port descriptor {fd}: {e}"))
}

/// Return whether `fd` is a socket (a `udp`/`tcp` port's descriptors are sockets and, for a
/// queuing source, the region of its book).
pub fn is_socket(fd: RawFd) -> bool {
    // SAFETY: an all-zero stat is a valid out-parameter; fstat only writes into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above; a bad fd yields EBADF.
    unsafe { libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFSOCK }
}

/// Set (`on`) or clear close-on-exec on descriptor `fd` (`FIOCLEX` / `FIONCLEX`: one system
/// call); a descriptor that is not open is left alone.
fn set_cloexec(fd: RawFd, on: bool) {
    let op = if on { libc::FIOCLEX } else { libc::FIONCLEX };
    // SAFETY: FIOCLEX/FIONCLEX change the descriptor's flags only; no memory is passed.
    unsafe { libc::ioctl(fd, op) };
}

/// Return the value of [`ENV_PORT_FDS`] this process was started with (`None`: no ports).
///
/// The first call takes the variable out of the environment and makes every descriptor it
/// lists close-on-exec (the executive's `dup2` onto [`PORT_FD_BASE`], ... leaves them without,
/// so that the partition's program gets them): a program the partition runs in turn inherits
/// neither its ports' regions and sockets nor their description.
/// The descriptors stay open in the partition ([`map_inherited`] maps copies of them). The
/// partition runtime calls this when it attaches to its regions
/// ([`crate::attach::PartitionContext::get`]), before it starts any thread; later calls return
/// the same value.
pub fn inherited_ports_value() -> Option<&'static str> {
    static TAKEN: OnceLock<Option<String>> = OnceLock::new();
    TAKEN
        .get_or_init(|| {
            let v = std::env::var(ENV_PORT_FDS).ok()?;
            std::env::remove_var(ENV_PORT_FDS);
            // A malformed value is reported by `map_inherited`; its descriptors are not known.
            for d in decode_ports(&v).unwrap_or_default() {
                for (fd, _) in d.fds {
                    set_cloexec(fd, true);
                }
            }
            Some(v)
        })
        .as_deref()
}

/// Hand this process's inherited ports on to the program it is about to execute in its place
/// (a standalone partition's restart, `partition::standalone_reexec`): clear close-on-exec on
/// the descriptors [`inherited_ports_value`] set it on, and return the variable's value to
/// put back into the new program's environment.
pub(crate) fn hand_on_ports_for_exec() -> Option<&'static str> {
    let v = inherited_ports_value()?;
    for d in decode_ports(v).unwrap_or_default() {
        for (fd, _) in d.fds {
            set_cloexec(fd, false);
        }
    }
    Some(v)
}

/// Decode [`ENV_PORT_FDS`] of this process ([`inherited_ports_value`]) and map every port's
/// regions (partition side). No variable means no ports. Every call maps copies of its own.
///
/// # Errors
/// A message if the variable is malformed or a descriptor cannot be mapped.
pub fn map_inherited() -> Result<Vec<MappedPort>, String> {
    let Some(v) = inherited_ports_value() else {
        return Ok(Vec::new());
    };
    let descs = decode_ports(v)?;
    // Above every inherited number (not a fixed offset, which the usual soft limit on open
    // descriptors of 1024 refused).
    let floor = descs
        .iter()
        .flat_map(|d| d.fds.iter().map(|&(fd, _)| fd))
        .max()
        .map_or(PORT_FD_BASE, |m| m + 1);
    let mut out = Vec::with_capacity(descs.len());
    for desc in descs {
        let mut fds = Vec::with_capacity(desc.fds.len());
        for &(fd, _) in &desc.fds {
            // Each call owns copies of its own (the port registry; a test's raw look at a slot),
            // which it may drop: the inherited numbers stay open, close-on-exec (set by
            // `inherited_ports_value`), for the next call and for a standalone restart, which
            // hands them on (`hand_on_ports_for_exec`). Under an executive a restart is a kill
            // and a fresh process.
            // SAFETY: fcntl(F_DUPFD_CLOEXEC) has no memory preconditions.
            let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, floor) };
            if dup < 0 {
                return Err(format!(
                    "port {}: inherited descriptor {fd}: {}",
                    desc.name,
                    std::io::Error::last_os_error()
                ));
            }
            // SAFETY: dup is fresh and owned by nobody else.
            fds.push(unsafe { OwnedFd::from_raw_fd(dup) });
        }
        out.push(map_port(desc, fds)?);
    }
    Ok(out)
}

/// Map the port `desc` from `fds`, its descriptors in the order of `desc.fds`: sockets are
/// kept as they are, regions mapped with the access `desc.fds` gives them.
///
/// # Errors
/// A message if the counts differ or a region cannot be mapped.
pub fn map_port(desc: PortDesc, fds: Vec<OwnedFd>) -> Result<MappedPort, String> {
    if fds.len() != desc.fds.len() {
        return Err(format!(
            "port {}: {} descriptors for {}",
            desc.name,
            fds.len(),
            desc.fds.len()
        ));
    }
    let mut regions = Vec::with_capacity(desc.fds.len());
    let mut sockets = Vec::new();
    for (fd, &(_, access)) in fds.into_iter().zip(&desc.fds) {
        if desc.transport.socket_kind().is_some() && is_socket(fd.as_raw_fd()) {
            sockets.push(fd);
        } else {
            // SAFETY: `into_raw_fd` hands over the descriptor, owned by nobody else now.
            regions.push(Arc::new(unsafe { map_fd(fd.into_raw_fd(), access) }?));
        }
    }
    Ok(MappedPort {
        desc,
        regions,
        sockets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use partix_config::model::*;
    use partix_shm::ring::{RingConsumer, RingProducer};
    use partix_shm::sampling::SamplingReader;
    use std::time::Duration;

    fn part(id: u32, name: &str) -> Partition {
        Partition::program(id, name, None, Vec::new())
    }

    fn sp(name: &str, dir: PortDirection) -> SamplingPortConfig {
        SamplingPortConfig {
            name: name.into(),
            max_message_size: 40,
            direction: dir,
            refresh_period: Duration::from_millis(100),
            receive_mode: None,
            location: Location::default(),
        }
    }

    fn qp(name: &str, dir: PortDirection) -> QueuingPortConfig {
        QueuingPortConfig {
            name: name.into(),
            max_message_size: 16,
            direction: dir,
            max_nb_messages: 5,
            receive_mode: None,
            location: Location::default(),
        }
    }

    fn pref(p: u32, port: &str) -> PortRef {
        PortRef {
            partition: PartitionId(p),
            port: port.into(),
        }
    }

    fn module() -> Module {
        let mut a = part(1, "A");
        a.sampling_ports.push(sp("OUT", PortDirection::Source));
        a.queuing_ports.push(qp("Q OUT", PortDirection::Source));
        a.sampling_ports
            .push(sp("LONELY", PortDirection::Destination));
        let mut b = part(2, "B");
        b.sampling_ports.push(sp("IN", PortDirection::Destination));
        b.queuing_ports.push(qp("QIN", PortDirection::Destination));
        let mut c = part(3, "C");
        c.sampling_ports.push(sp("IN", PortDirection::Destination));
        Module {
            name: "t".into(),
            version: None,
            source: None,
            partitions: vec![a, b, c],
            schedules: Vec::new(),
            initial_schedule: 0,
            channels: vec![
                Channel {
                    id: ChannelId(1),
                    name: Some("S".into()),
                    source: pref(1, "OUT"),
                    destinations: vec![pref(2, "IN"), pref(3, "IN")],
                    kind: ChannelKind::Sampling,
                    transport: None,
                    delivery: None,
                    location: Location::default(),
                },
                Channel {
                    id: ChannelId(2),
                    name: None,
                    source: pref(1, "Q OUT"),
                    destinations: vec![pref(2, "QIN")],
                    kind: ChannelKind::Queuing,
                    transport: Some("one-sided".into()),
                    delivery: None,
                    location: Location::default(),
                },
            ],
            system_hm: Vec::new(),
            module_hm: Vec::new(),
        }
    }

    /// Map `(executive fd, access)` as a partition would (through a dup).
    fn map(fd: RawFd, access: Access) -> Arc<Region> {
        // SAFETY: dup returns a fresh descriptor nothing else owns.
        let d = unsafe { libc::dup(fd) };
        // SAFETY: d is fresh and unowned.
        Arc::new(unsafe { map_fd(d, access) }.unwrap())
    }

    #[test]
    fn sampling_multicast_queuing_and_unconnected_ports_get_their_regions() {
        let m = module();
        let set = ChannelSet::create(&m).unwrap();
        // 2 sampling slots + 2 notifiers, 1 ring (data + control), 1 unconnected slot + notifier.
        assert_eq!(set.region_count(), 8);
        let a = set.ports_of(0);
        let names: Vec<&str> = a.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["OUT", "LONELY", "Q OUT"]);
        let rw = Access::ReadWrite;
        assert_eq!(a[0].fds, vec![(600, rw), (601, rw), (602, rw), (603, rw)]);
        assert_eq!(a[1].fds, vec![(604, Access::ReadOnly), (605, rw)]);
        assert_eq!(a[2].fds, vec![(606, rw), (607, rw)]);
        assert_eq!(a[0].param, 100_000_000);
        assert_eq!(a[2].param, 5);
        let b = set.ports_of(1);
        assert_eq!(b[0].fds, vec![(600, Access::ReadOnly), (601, rw)]);
        assert_eq!(b[1].kind, ChannelKind::Queuing);
        // The destination maps the queued data read-only, its control region read-write.
        assert_eq!(b[1].fds, vec![(602, Access::ReadOnly), (603, rw)]);
        assert_eq!(set.child_fds(1).len(), 4);
        assert_eq!(set.child_fds(2).len(), 2);

        // The source writes both slots; each destination reads its own through a read-only map.
        let src = set.child_fds(0);
        for (i, dst) in [(0usize, 1usize), (2, 2)] {
            let mut w = SamplingWriter::attach(map(src[i].0, Access::ReadWrite), 0).unwrap();
            w.write(format!("to {dst}").as_bytes()).unwrap();
            let ro = map(set.child_fds(dst)[0].0, Access::ReadOnly);
            let r = SamplingReader::attach(ro, 0).unwrap();
            let mut buf = [0u8; 40];
            let ok = r.read(&mut buf).unwrap();
            assert_eq!(&buf[..ok.len], format!("to {dst}").as_bytes());
        }
        // The ring: producer in A, consumer in B, capacity rounded up to a power of two.
        let mut p = RingProducer::attach_split(
            map(src[6].0, Access::ReadWrite),
            RING_OFFSET,
            map(src[7].0, Access::ReadWrite),
            CONTROL_OFFSET,
        )
        .unwrap();
        let b = set.child_fds(1);
        let mut c = RingConsumer::attach_split(
            map(b[2].0, Access::ReadOnly),
            RING_OFFSET,
            map(b[3].0, Access::ReadWrite),
            CONTROL_OFFSET,
        )
        .unwrap();
        assert_eq!(p.capacity(), 8);
        p.try_push(b"hello").unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(c.try_pop(&mut buf).unwrap(), 5);
    }

    #[test]
    fn env_value_round_trips_with_odd_names() {
        let mut m = module();
        m.channels[1].transport = Some("udp".into());
        let set = ChannelSet::create(&m).unwrap();
        let v = set.env_value(0);
        // A udp queuing source: its socket and its book (a region); its destination too.
        assert!(v.contains("q:Q%20OUT:src:16:5:606w+607w:udp"), "{v}");
        let w = set.env_value(1);
        assert!(w.contains("q:QIN:dst:16:5:602w+603w:udp:nb=5"), "{w}");
        assert!(
            v.contains("s:OUT:src:40:100000000:600w+601w+602w+603w:lay=40x0,"),
            "{v}"
        );
        assert_eq!(decode_ports(&v).unwrap(), set.ports_of(0));
        assert_eq!(decode_ports("").unwrap(), Vec::new());
        // Receive modes from the configuration travel with the port.
        m.partitions[0].sampling_ports[0].receive_mode = Some(ReceiveMode::Spin);
        m.partitions[0].queuing_ports[0].receive_mode =
            Some(ReceiveMode::SpinThenPark { spins: Some(7) });
        m.partitions[0].sampling_ports[1].receive_mode =
            Some(ReceiveMode::SpinThenPark { spins: None });
        m.partitions[1].queuing_ports[0].receive_mode = Some(ReceiveMode::Blocking);
        let set = ChannelSet::create(&m).unwrap();
        let v = set.env_value(0);
        assert!(
            v.contains("q:Q%20OUT:src:16:5:606w+607w:udp:recv=park7:nb=5"),
            "{v}"
        );
        assert!(
            v.contains(":600w+601w+602w+603w:recv=spin:lay=40x0,"),
            "{v}"
        );
        assert!(v.contains(":604r+605w:recv=park2000:lay=40x0,"), "{v}");
        for p in 0..3 {
            assert_eq!(decode_ports(&set.env_value(p)).unwrap(), set.ports_of(p));
        }
        let b = set.ports_of(1);
        assert_eq!(b[1].recv_mode, Some(RecvMode::Blocking));
        assert_eq!(b[0].recv_mode, None);
        // partix:Delivery="manager" travels with both ends of its two-sided channel only.
        m.channels[0].transport = Some("two-sided".into());
        m.channels[0].delivery = Some(Delivery::Manager);
        let set = ChannelSet::create(&m).unwrap();
        let (a, b) = (set.ports_of(0), set.ports_of(1));
        assert_eq!(
            (a[0].delivery, b[0].delivery),
            (Delivery::Manager, Delivery::Manager)
        );
        assert_eq!(b[1].delivery, Delivery::Helped);
        assert!(
            set.env_value(1).contains(":two-sided:mgr:lay="),
            "{}",
            set.env_value(1)
        );
        for p in 0..3 {
            assert_eq!(decode_ports(&set.env_value(p)).unwrap(), set.ports_of(p));
        }
        for bad in [
            "s:A:src:1:1:600w:mgr",
            "s:A:src:1:1:600w:udp:mgr",
            "s:A:src:1:1:600w:two-sided:mgr:mgr",
            "s:A:src:1:1:600w:two-sided:recv=spin:mgr",
            "s:A:src:1:1:600w:recv=parkX",
            "s:A:src:1:1:600w:recv=",
            "s:A:src:1:1:600w:recv=spin:recv=block",
            "s:A:src:1:1:600w:recv=spin:udp",
            "s:A:src:1:1:600w:udp:tcp",
            "q:A:src:1:1:600w:udp:nb=x",
            "q:A:src:1:1:600w:udp:nb=1:nb=2",
            "q:A:src:1:1:600w:nb=1:udp",
            "q:A:src:1:1:600w:udp:nb=1:recv=spin",
            "x:A:src:1:1:600w",
            "s:A:up:1:1:600w",
            "s:A:src:1:1:600x",
            "s:A:src",
            "s:%G1:src:1:1:600w",
            "s:A:src:-1:1:600w",
            "s:A:src:1:1:600w:carrier-pigeon",
            "s:A:src:1:1:600w:lay=16",
            "s:A:src:1:1:600w:lay=16xq",
            "s:A:src:1:1:600w:lay=16x0:recv=spin",
            "s:A:src:1:1:600w:lay=16x0:lay=16x0",
        ] {
            assert!(decode_ports(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_transports_are_refused_naming_the_channel() {
        let mut m = module();
        m.channels[1].transport = Some("carrier-pigeon".into());
        m.channels[1].location = Location { line: 40, col: 5 };
        let e = ChannelSet::create(&m).unwrap_err().to_string();
        assert!(e.contains("<configuration>:40:5: channel 2"), "{e}");
        assert!(e.contains("\"carrier-pigeon\""), "{e}");
        assert!(e.contains("one-sided"), "{e}");
    }

    /// Attach partition `p`'s ports as the partition would (through dups of the executive's
    /// descriptors).
    fn mapped(set: &ChannelSet, p: usize) -> Vec<MappedPort> {
        let mut fds = set.child_fds(p).into_iter();
        set.ports_of(p)
            .into_iter()
            .map(|desc| {
                let own = (&mut fds)
                    .take(desc.fds.len())
                    // SAFETY: dup returns a fresh descriptor nothing else owns.
                    .map(|(fd, _)| unsafe { OwnedFd::from_raw_fd(libc::dup(fd)) })
                    .collect();
                map_port(desc, own).unwrap()
            })
            .collect()
    }

    /// A sampling wait with a time-out too long to add to the clock (`Duration::MAX`) waits
    /// without a deadline on every transport and returns the message (the two-sided and
    /// socket waits computed `Instant::now() + timeout`, which panics on overflow; found by
    /// review of `partix-shm`, whose waits did the same).
    #[test]
    fn a_sampling_wait_takes_a_time_out_past_the_clock_s_range_for_none() {
        use crate::transport::{SamplingDestination, SamplingSource, Transport};
        use partix_shm::RecvMode;
        for t in Transport::ALL {
            let mut m = module();
            for c in &mut m.channels {
                c.transport = Some(t.name().into());
            }
            let set = ChannelSet::create(&m).unwrap();
            let (a, b) = (mapped(&set, 0), mapped(&set, 1));
            let mut w = SamplingSource::attach(&a[0]).unwrap();
            let mut r = SamplingDestination::attach(&b[0]).unwrap();
            w.write_with(b"max", || 1);
            let mut buf = [0u8; 40];
            for mode in [RecvMode::Spin, RecvMode::Blocking] {
                let ok = r
                    .wait_newer(&mut buf, None, mode, Some(Duration::MAX))
                    .unwrap();
                assert_eq!(&buf[..ok.len], b"max", "{t} {mode:?}");
            }
        }
    }

    /// Fork a child that parks on `n` for ever; return its pid once it registered.
    #[allow(unsafe_code)]
    fn fork_a_parker(n: &partix_shm::Notifier) -> libc::pid_t {
        // SAFETY: the child only parks (atomics and system calls; no allocation, no lock) and
        // never returns.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            loop {
                n.park_until(None, || false);
            }
        }
        let t0 = std::time::Instant::now();
        while n.registered() == 0 {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the child never parked"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        pid
    }

    /// A queuing port's side killed while a thread of it was parked on a notifier left its
    /// registration there for good, and the other partition's every send or receive then made
    /// a `futex_wake` (found by review of `partix-shm`). The restarted partition's attach
    /// discards it: a one-sided source's waiter (space notifier, in the control region) and
    /// destination (data notifier), a two-sided source's waiter (space notifier, TX region).
    /// (The two-sided destination's manager does the same for the doorbell: `partix-shm`'s
    /// `edges_a_manager_killed_while_parked_leaves_the_sender_no_wake_ups`.)
    #[test]
    #[allow(unsafe_code)]
    fn a_restarted_port_discards_the_registration_of_its_killed_predecessor() {
        use crate::transport::{QueueDestination, QueueSource, Transport};
        use partix_shm::Notifier;
        for t in [Transport::OneSided, Transport::TwoSided] {
            let mut m = module();
            for c in &mut m.channels {
                c.transport = Some(t.name().into());
            }
            let set = ChannelSet::create(&m).unwrap();
            let (a, b) = (mapped(&set, 0), mapped(&set, 1));
            let (space, data) = match t {
                Transport::OneSided => (
                    Notifier::new(a[2].regions[1].clone(), SPACE_NOTIFIER).unwrap(),
                    Some(Notifier::new(b[1].regions[1].clone(), DATA_NOTIFIER).unwrap()),
                ),
                // The TX region's second line (`partix_shm::twoqueue`'s layout).
                _ => (
                    Notifier::new(a[2].regions[0].clone(), NOTIFIER_LEN).unwrap(),
                    None,
                ),
            };
            for n in std::iter::once(&space).chain(&data) {
                let child = fork_a_parker(n);
                // SAFETY: our own child, not yet reaped.
                unsafe {
                    libc::kill(child, libc::SIGKILL);
                    libc::waitpid(child, std::ptr::null_mut(), 0);
                }
                assert_eq!(n.registered(), 1, "{t}: the dead child's registration");
            }
            let q = QueueSource::attach(&a[2]).unwrap();
            let _qw = q.waiter(&a[2]).unwrap();
            assert_eq!(space.registered(), 0, "{t}: space notifier");
            if let Some(data) = &data {
                let d = QueueDestination::attach(&b[1]).unwrap();
                let _dw = d.waiter(&b[1]).unwrap();
                assert_eq!(data.registered(), 0, "{t}: data notifier");
            }
        }
    }

    /// The same checks for every transport, in one process (the multi-process suite is
    /// `tests/conformance.rs`).
    #[test]
    fn every_transport_delivers_sampling_multicast_and_bounded_queues() {
        use crate::transport::{
            QueueDestination, QueueSource, SamplingDestination, SamplingSource, Transport,
        };
        use partix_shm::ring::{PopError, PushError};
        use partix_shm::RecvMode;
        for t in Transport::ALL {
            let mut m = module();
            for c in &mut m.channels {
                c.transport = Some(t.name().into());
            }
            let set = ChannelSet::create(&m).unwrap();
            let (a, b, c) = (mapped(&set, 0), mapped(&set, 1), mapped(&set, 2));
            assert!(a
                .iter()
                .all(|p| p.desc.transport == t || p.desc.name == "LONELY"));
            let mut w = SamplingSource::attach(&a[0]).unwrap();
            let mut r1 = SamplingDestination::attach(&b[0]).unwrap();
            let mut r2 = SamplingDestination::attach(&c[0]).unwrap();
            let mut buf = [0u8; 40];
            assert!(r1.read(&mut buf).is_err(), "{t}: nothing written yet");
            w.write_with(b"first", || 1);
            w.write_with(b"second", || 2);
            for r in [&mut r1, &mut r2] {
                let ok = r
                    .wait_newer(
                        &mut buf,
                        None,
                        RecvMode::Blocking,
                        Some(Duration::from_secs(10)),
                    )
                    .unwrap();
                // The newest may need a moment (manager thread, loopback): wait for it.
                let ok = if &buf[..ok.len] == b"second" {
                    ok
                } else {
                    r.wait_newer(
                        &mut buf,
                        Some(ok.seq),
                        RecvMode::Blocking,
                        Some(Duration::from_secs(10)),
                    )
                    .unwrap()
                };
                assert_eq!(&buf[..ok.len], b"second", "{t}");
                assert_eq!(ok.written_at_ns, 2, "{t}");
                let again = r.read(&mut buf).unwrap();
                assert_eq!(
                    (again.seq, &buf[..again.len]),
                    (ok.seq, &b"second"[..]),
                    "{t}"
                );
            }
            // Queuing: 5 messages fit, the 6th does not; order kept; consuming frees room.
            let mut q = QueueSource::attach(&a[2]).unwrap();
            let qw = q.waiter(&a[2]).unwrap();
            let mut d = QueueDestination::attach(&b[1]).unwrap();
            let dw = d.waiter(&b[1]).unwrap();
            for i in 0..5u8 {
                q.try_send(&[i; 3]).unwrap();
            }
            assert_eq!(q.try_send(b"x"), Err(PushError::Full), "{t}");
            assert!(!qw.ready(), "{t}");
            let mut qb = [0u8; 16];
            for i in 0..5u8 {
                let deadline = Some(std::time::Instant::now() + Duration::from_secs(10));
                assert!(dw.park_until(deadline, || dw.ready()) || dw.ready(), "{t}");
                let mut n = d.try_recv(&mut qb);
                while n == Err(PopError::Empty) {
                    dw.park_until(deadline, || dw.ready());
                    n = d.try_recv(&mut qb);
                }
                assert_eq!(n, Ok(3), "{t}");
                assert_eq!(qb[..3], [i; 3], "{t}");
            }
            assert_eq!(d.try_recv(&mut qb), Err(PopError::Empty), "{t}");
            let deadline = Some(std::time::Instant::now() + Duration::from_secs(10));
            qw.park_until(deadline, || qw.ready());
            q.try_send(b"again").unwrap();
            // CLEAR drops it and returns the room.
            std::thread::sleep(Duration::from_millis(50));
            d.clear();
            let deadline = Some(std::time::Instant::now() + Duration::from_secs(10));
            qw.park_until(deadline, || qw.ready());
            for i in 0..5u8 {
                q.try_send(&[i])
                    .unwrap_or_else(|e| panic!("{t}: after clear, send {i}: {e}"));
            }
        }
    }

    /// ARINC 653 lets the two ports of a queuing channel declare different `MaxNbMessages`; a
    /// queue must still never lose a message, nor hold more than either end declared. A
    /// source that sends as fast as it may (8 KiB messages, until the port answers full) loses
    /// none, on every transport, whichever end declares more, and queues exactly the channel's
    /// capacity, the smaller of the two. (Over udp, the source of 64 used to send 64 datagrams
    /// into sockets sized for the destination's 4: the kernel dropped what its receive buffer
    /// could not hold. Until session 34, over shared memory a source of 64 queued 8 into a
    /// destination of 5, its ring's slots, and 16 over two-sided, TX and RX rings; found by
    /// review.)
    #[test]
    fn a_queue_whose_ends_differ_in_max_nb_messages_loses_nothing() {
        use crate::transport::{QueueDestination, QueueSource, Transport};
        use partix_shm::ring::{PopError, PushError};
        for t in Transport::ALL {
            for (src_nb, dst_nb) in [(64, 5), (5, 64), (64, 4)] {
                let mut m = module();
                m.partitions[0].queuing_ports[0].max_nb_messages = src_nb;
                m.partitions[1].queuing_ports[0].max_nb_messages = dst_nb;
                for p in 0..2 {
                    m.partitions[p].queuing_ports[0].max_message_size = 8192;
                }
                m.channels[1].transport = Some(t.name().into());
                let set = ChannelSet::create(&m).unwrap();
                let (a, b) = (mapped(&set, 0), mapped(&set, 1));
                let mut q = QueueSource::attach(&a[2]).unwrap();
                let mut d = QueueDestination::attach(&b[1]).unwrap();
                let dw = d.waiter(&b[1]).unwrap();
                let mut sent = 0u32;
                loop {
                    let mut msg = [sent as u8; 8192];
                    msg[..4].copy_from_slice(&sent.to_le_bytes());
                    match q.try_send(&msg) {
                        Ok(()) => sent += 1,
                        Err(PushError::Full) => break,
                        Err(e) => panic!("{t}: {e}"),
                    }
                    assert!(
                        sent <= src_nb,
                        "{t} {src_nb}/{dst_nb}: more than the source's"
                    );
                }
                assert_eq!(sent, src_nb.min(dst_nb), "{t} {src_nb}/{dst_nb}");
                // Receive until nothing more comes for 300 ms.
                let mut got = 0u32;
                let mut buf = [0u8; 8192];
                loop {
                    match d.try_recv(&mut buf) {
                        Ok(n) => {
                            assert_eq!(n, 8192);
                            let seq = u32::from_le_bytes(buf[..4].try_into().unwrap());
                            assert_eq!(seq, got, "{t} {src_nb}/{dst_nb}: lost or out of order");
                            got += 1;
                        }
                        Err(PopError::Empty) => {
                            let deadline = std::time::Instant::now() + Duration::from_millis(300);
                            while !dw.park_until(Some(deadline), || dw.ready())
                                && std::time::Instant::now() < deadline
                            {
                            }
                            if !dw.ready() {
                                break;
                            }
                        }
                        Err(e) => panic!("{t}: {e}"),
                    }
                }
                assert_eq!(got, sent, "{t} {src_nb}/{dst_nb}: messages lost");
            }
        }
    }

    /// Drop `CAP_NET_ADMIN` from the calling thread's capabilities (only this thread: Linux
    /// keeps capabilities per thread), as an executive that is not root runs: it cannot force
    /// socket buffers past `net.core.rmem_max`.
    fn drop_net_admin_in_this_thread() {
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        const CAP_NET_ADMIN: u32 = 12;
        let mut h = Header {
            version: 0x2008_0522,
            pid: 0,
        };
        let mut d = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        // SAFETY: capget writes the header and two data structs of version 3.
        let r = unsafe { libc::syscall(libc::SYS_capget, &mut h, d.as_mut_ptr()) };
        assert_eq!(r, 0);
        d[0].effective &= !(1 << CAP_NET_ADMIN);
        d[0].permitted &= !(1 << CAP_NET_ADMIN);
        // SAFETY: capset reads the header and two data structs of version 3; a thread may
        // always drop capabilities.
        let r = unsafe { libc::syscall(libc::SYS_capset, &h, d.as_ptr()) };
        assert_eq!(r, 0);
    }

    /// A udp queuing channel whose sockets the kernel gives less receive buffer than its
    /// capacity needs (an executive without `CAP_NET_ADMIN`: `net.core.rmem_max` caps them) is
    /// refused when the channels are made, with a message that names the channel, what was
    /// needed, what was granted and what to do; a channel that is made loses nothing. (It used
    /// to be made: the source's credit was the whole capacity, the kernel dropped the datagrams
    /// past the buffer, and the credit they took was lost for good.)
    #[test]
    fn a_udp_queue_whose_sockets_cannot_hold_its_capacity_is_refused_not_lossy() {
        use crate::transport::{QueueDestination, QueueSource};
        use partix_shm::ring::{PopError, PushError};
        std::thread::spawn(|| {
            drop_net_admin_in_this_thread();
            let rmem_max: usize = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            // The kernel grants twice what it is asked, asked at most rmem_max (and the
            // executive asks at most MAX_SOCKET_BUFFER); the kernel charges an 8 KiB datagram
            // about 16.6 KiB. Ask for a capacity a quarter beyond what fits.
            let granted = 2 * rmem_max.min(partix_config::MAX_SOCKET_BUFFER);
            let nb = (granted * 5 / 4 / 16_000) as u32 + 1;
            let mut m = module();
            m.channels[1].transport = Some("udp".into());
            for p in 0..2 {
                m.partitions[p].queuing_ports[0].max_nb_messages = nb;
                m.partitions[p].queuing_ports[0].max_message_size = 8192;
            }
            let set = match ChannelSet::create(&m) {
                Err(e) => {
                    let needed = socket::buffer_bytes(8192, nb);
                    let e = e.to_string();
                    for part in [
                        "channel 2 (udp, source A/Q OUT): the destination socket".to_string(),
                        format!("needs {needed} bytes of receive buffer"),
                        format!("to hold {nb} messages (MaxMessageSize 8192)"),
                        format!("granted {granted} bytes"),
                        "run the executive as root".into(),
                        format!("net.core.rmem_max to at least {}", needed.div_ceil(2)),
                    ] {
                        assert!(e.contains(&part), "{part:?} not in: {e}");
                    }
                    return;
                }
                Ok(set) => set,
            };
            // Made: the source fills its credit while the destination does not read, then
            // every message must arrive, in order, and the credit come back.
            let (a, b) = (mapped(&set, 0), mapped(&set, 1));
            let mut q = QueueSource::attach(&a[2]).unwrap();
            let mut d = QueueDestination::attach(&b[1]).unwrap();
            let mut sent = 0u32;
            let mut msg = [0u8; 8192];
            loop {
                msg[..4].copy_from_slice(&sent.to_le_bytes());
                match q.try_send(&msg) {
                    Ok(()) => sent += 1,
                    Err(PushError::Full) => break,
                    Err(e) => panic!("{e}"),
                }
            }
            assert_eq!(sent, nb);
            std::thread::sleep(Duration::from_millis(50));
            let mut got = 0u32;
            let mut buf = [0u8; 8192];
            loop {
                match d.try_recv(&mut buf) {
                    Ok(_) => {
                        let seq = u32::from_le_bytes(buf[..4].try_into().unwrap());
                        assert_eq!(seq, got, "message {got} lost ({sent} sent, credit {nb})");
                        got += 1;
                    }
                    Err(PopError::Empty) => break,
                    Err(e) => panic!("{e}"),
                }
            }
            assert_eq!(got, sent, "messages lost");
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(q.len(), 0, "credit not returned");
        })
        .join()
        .unwrap();
    }

    /// A full source whose MaxNbMessages (64) exceeds the destination's (4) waits for room
    /// without spinning, on every transport: its waiter says "not ready" while every send
    /// answers Full, and a timed wait sleeps until its deadline. (One-sided: the ring is sized
    /// for the destination, and the waiter compared the queued count with the source's 64, so
    /// it was always ready: a 200 ms wait looked 700 000 times in a debug build, at 100 % CPU.)
    #[test]
    fn a_full_source_that_declares_more_messages_than_its_ring_holds_sleeps_while_it_waits() {
        use crate::transport::{QueueSource, Transport};
        use partix_shm::ring::PushError;
        for t in Transport::ALL {
            let mut m = module();
            m.partitions[0].queuing_ports[0].max_nb_messages = 64;
            m.partitions[1].queuing_ports[0].max_nb_messages = 4;
            m.channels[1].transport = Some(t.name().into());
            let set = ChannelSet::create(&m).unwrap();
            let (a, _b) = (mapped(&set, 0), mapped(&set, 1));
            let mut q = QueueSource::attach(&a[2]).unwrap();
            let w = q.waiter(&a[2]).unwrap();
            let mut sent = 0;
            while q.try_send(&[1u8; 8]).is_ok() {
                sent += 1;
                assert!(sent <= 64, "{t}");
            }
            assert!(sent >= 4, "{t}: only {sent} sent");
            assert!(
                !w.ready(),
                "{t}: full ({sent} sent) but the waiter says ready"
            );
            // Wait 200 ms as a sender with a time-out does (sockets park in slices).
            let t0 = std::time::Instant::now();
            let deadline = t0 + Duration::from_millis(200);
            let (mut looks, mut ready) = (0u32, 0u32);
            while std::time::Instant::now() < deadline {
                w.park_until(Some(deadline), || {
                    looks += 1;
                    let r = w.ready();
                    ready += u32::from(r);
                    r
                });
                assert_eq!(q.try_send(&[1u8; 8]), Err(PushError::Full), "{t}");
            }
            assert!(t0.elapsed() >= Duration::from_millis(190), "{t}");
            assert_eq!(
                ready, 0,
                "{t}: ready {ready} times out of {looks} while full"
            );
            assert!(looks < 100, "{t}: {looks} looks in 200 ms");
        }
    }

    /// Headers the peer can write: a broken partition that overwrote the header of a region
    /// its peer maps (the one-sided slot and ring, which the source writes; a two-sided TX
    /// region, which both sides map read-write) made the peer's next attach fail, so a
    /// partition restarted after that could not create its port again. Both sides now attach
    /// with the layout the executive gives them (`PortDesc::layout`) and never read those
    /// headers.
    #[test]
    fn ports_attach_to_channels_whose_shared_headers_were_overwritten() {
        use crate::transport::{
            QueueDestination, QueueSource, SamplingDestination, SamplingSource, Transport,
        };
        let scribble = |r: &Arc<Region>, off: usize| {
            let hdr = Words::attach(r.clone(), off, 3).unwrap();
            for i in 0..3 {
                hdr.get(i)
                    .store(0x5a5a_5a5a_5a5a_5a5a, std::sync::atomic::Ordering::Relaxed);
            }
        };
        // CPU ticks of this process's threads named `name` (the managers of this test's ports).
        let ticks = |name: &str| -> u64 { thread_usage(name).0 };
        for t in [Transport::OneSided, Transport::TwoSided] {
            let mut m = module();
            for c in &mut m.channels {
                c.transport = Some(t.name().into());
            }
            // Names of their own for the managers' threads ("partix-netmgr-" + the port).
            m.partitions[1].queuing_ports[0].name = "HQ".into();
            m.channels[1].destinations[0].port = "HQ".into();
            let set = ChannelSet::create(&m).unwrap();
            let (a, b) = (mapped(&set, 0), mapped(&set, 1));
            assert!(
                a[0].desc.layout.is_some() && b[1].desc.layout.is_some(),
                "{t}"
            );
            // The source's first region: the first destination's slot or TX area (sampling),
            // the ring's data or TX region (queuing).
            let ring = match t {
                Transport::TwoSided => partix_shm::twoqueue::TX_RING_OFFSET,
                _ => crate::transport::RING_OFFSET,
            };
            scribble(&a[0].regions[0], 0);
            scribble(&a[2].regions[0], ring);
            let mut w = SamplingSource::attach(&a[0]).expect("sampling source");
            let mut r = SamplingDestination::attach(&b[0]).expect("sampling destination");
            let mut q = QueueSource::attach(&a[2]).expect("queuing source");
            let mut d = QueueDestination::attach(&b[1]).expect("queuing destination");
            w.write_with(b"sample", || 1);
            q.try_send(b"queued").unwrap();
            let mut buf = [0u8; 64];
            let t0 = std::time::Instant::now();
            let got = loop {
                if let Ok(ok) = r.read(&mut buf) {
                    break buf[..ok.len].to_vec();
                }
                assert!(t0.elapsed() < Duration::from_secs(5), "{t}: no sample");
                std::thread::sleep(Duration::from_millis(1));
            };
            assert_eq!(got, b"sample", "{t}");
            let n = loop {
                if let Ok(n) = d.try_recv(&mut buf) {
                    break n;
                }
                assert!(t0.elapsed() < Duration::from_secs(5), "{t}: no message");
                std::thread::sleep(Duration::from_millis(1));
            };
            assert_eq!(&buf[..n], b"queued", "{t}");
            // The two-sided queue manager sleeps: a probe of the TX ring made from its header
            // could not attach, and the manager's park then spun at 100 % CPU.
            if t == Transport::TwoSided {
                std::thread::sleep(Duration::from_millis(50));
                let before = ticks("partix-netmgr-H");
                std::thread::sleep(Duration::from_millis(500));
                let spent = ticks("partix-netmgr-H") - before;
                assert!(spent < 10, "the idle manager used {spent} ticks in 500 ms");
            }
            drop((w, r, q, d));
        }
    }

    /// (CPU ticks, voluntary context switches) summed over this process's threads named
    /// `name` (a manager's thread is `partix-netmgr-` + its port, cut to 15 bytes).
    fn thread_usage(name: &str) -> (u64, u64) {
        let (mut ticks, mut switches) = (0, 0);
        for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if comm.trim_end() != name {
                continue;
            }
            let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
            let rest = stat.rsplit_once(") ").map_or("", |(_, r)| r);
            let f: Vec<u64> = rest
                .split_whitespace()
                .map(|v| v.parse().unwrap_or(0))
                .collect();
            // utime and stime: fields 14 and 15, 12 and 13 after the state.
            ticks += f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
            let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
            switches += status
                .lines()
                .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0);
        }
        (ticks, switches)
    }

    /// Wait until every thread of this process named `name` sleeps (state `S`: a manager parked
    /// on its futex), so that the next message is what wakes it.
    fn wait_asleep(name: &str) {
        let t0 = std::time::Instant::now();
        loop {
            let mut all = true;
            for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
                let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                if comm.trim_end() == name {
                    let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
                    let state = stat.rsplit_once(") ").map_or("", |(_, r)| r);
                    all &= state.starts_with('S');
                }
            }
            if all {
                return;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "{name} never slept");
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// The two-sided managers, sampling and queuing, in both deliveries (audit 27, G1/G2):
    /// idle, neither uses CPU nor wakes (the helped managers used to sleep in 500 µs slices
    /// while a reader was active; the sampling manager's idleness was not tested at all).
    /// With `partix:Delivery="manager"` the manager thread wakes about once per message (it
    /// delivers each one, woken by the doorbell: each message is sent once it sleeps, since a
    /// manager that finds the next message before it parks rightly does not sleep) and the
    /// readers never move a message (their help count stays 0); helped, the readers move them
    /// and the manager sleeps meanwhile.
    #[test]
    fn two_sided_managers_are_event_driven_in_both_deliveries() {
        use crate::transport::{
            QueueDestination, QueueSource, SamplingDestination, SamplingSource,
        };
        use partix_shm::RecvMode;
        const N: u64 = 40;
        // Thread names of their own per delivery: the threads of the first round live on.
        for (delivery, sname, qname) in [
            (Delivery::Helped, "JS", "KQ"),
            (Delivery::Manager, "VS", "WQ"),
        ] {
            let (sthread, qthread) = (
                format!("partix-netmgr-{}", &sname[..1]),
                format!("partix-netmgr-{}", &qname[..1]),
            );
            let mut m = module();
            for c in &mut m.channels {
                c.transport = Some("two-sided".into());
                c.delivery = Some(delivery);
            }
            m.partitions[1].sampling_ports[0].name = sname.into();
            m.channels[0].destinations[0].port = sname.into();
            m.partitions[1].queuing_ports[0].name = qname.into();
            m.channels[1].destinations[0].port = qname.into();
            let set = ChannelSet::create(&m).unwrap();
            let (a, b) = (mapped(&set, 0), mapped(&set, 1));
            assert_eq!(b[0].desc.delivery, delivery);
            let mut w = SamplingSource::attach(&a[0]).unwrap();
            let mut r = SamplingDestination::attach(&b[0]).unwrap();
            let mut q = QueueSource::attach(&a[2]).unwrap();
            let mut d = QueueDestination::attach(&b[1]).unwrap();
            let waiter = d.waiter(&b[1]).unwrap();
            let silence = |what: &str| {
                std::thread::sleep(Duration::from_millis(50));
                let (s0, q0) = (thread_usage(&sthread), thread_usage(&qthread));
                std::thread::sleep(Duration::from_millis(500));
                let (s1, q1) = (thread_usage(&sthread), thread_usage(&qthread));
                for (who, u0, u1) in [("sampling", s0, s1), ("queuing", q0, q1)] {
                    // A helped manager that a reader just left naps once more (its watchdog).
                    assert!(
                        u1.0 - u0.0 < 10 && u1.1 - u0.1 <= 3,
                        "{delivery:?} {what}: the idle {who} manager used {} ticks and woke {} \
                         times in 500 ms",
                        u1.0 - u0.0,
                        u1.1 - u0.1
                    );
                }
            };
            silence("before the messages");
            let (s0, q0) = (thread_usage(&sthread), thread_usage(&qthread));
            let mut buf = [0u8; 64];
            let mut last = None;
            for i in 0..N {
                if delivery == Delivery::Manager {
                    wait_asleep(&sthread);
                }
                w.write_with(&i.to_le_bytes(), || i + 1);
                let ok = r
                    .wait_newer(
                        &mut buf,
                        last,
                        RecvMode::Blocking,
                        Some(Duration::from_secs(5)),
                    )
                    .unwrap_or_else(|e| panic!("{delivery:?}: sample {i}: {e:?}"));
                assert_eq!(&buf[..ok.len], &i.to_le_bytes(), "{delivery:?}");
                last = Some(ok.seq);
            }
            for i in 0..N {
                if delivery == Delivery::Manager {
                    wait_asleep(&qthread);
                }
                q.try_send(&i.to_le_bytes()).unwrap();
                let deadline = std::time::Instant::now() + Duration::from_secs(5);
                let n = loop {
                    match d.try_recv(&mut buf) {
                        Ok(n) => break n,
                        Err(_) => {
                            assert!(std::time::Instant::now() < deadline, "message {i}");
                            waiter.park_until(Some(deadline), || waiter.ready());
                        }
                    }
                };
                assert_eq!(&buf[..n], &i.to_le_bytes(), "{delivery:?}");
            }
            let (s1, q1) = (thread_usage(&sthread), thread_usage(&qthread));
            let (swakes, qwakes) = (s1.1 - s0.1, q1.1 - q0.1);
            match delivery {
                Delivery::Manager => {
                    assert_eq!((r.reader_moves(), d.reader_moves()), (0, 0));
                    for (who, wakes) in [("sampling", swakes), ("queuing", qwakes)] {
                        assert!(
                            (N / 2..=2 * N + 5).contains(&wakes),
                            "the {who} manager woke {wakes} times for {N} messages"
                        );
                    }
                }
                Delivery::Helped => {
                    assert!(r.reader_moves() > 0 && d.reader_moves() > 0);
                    assert!(
                        swakes < N / 2,
                        "the helped sampling manager woke {swakes} times for {N} messages"
                    );
                    // A reader polling READ for 300 ms: the manager sleeps until its watchdog
                    // (100 ms), not in 500 µs slices (about 600 wake-ups before session 27).
                    let (s0, _) = (thread_usage(&sthread), ());
                    let t0 = std::time::Instant::now();
                    while t0.elapsed() < Duration::from_millis(300) {
                        let _ = r.read(&mut buf);
                        std::hint::spin_loop();
                    }
                    let wakes = thread_usage(&sthread).1 - s0.1;
                    assert!(
                        wakes <= 8,
                        "a polled helped manager woke {wakes} times in 300 ms"
                    );
                }
            }
            silence("after the messages");
            drop((w, r, q, d));
        }
    }

    /// A udp/tcp sampling destination that nobody reads while its source writes far more frames
    /// than its socket holds still reads the message written last: its receiving agent keeps
    /// the socket drained. (Without the agent, udp read a frame from when the socket filled,
    /// about the 130th of 20 000.)
    #[test]
    fn an_unread_socket_sampling_destination_still_reads_the_newest_message() {
        use crate::transport::{SamplingDestination, SamplingSource, Transport};
        const N: u32 = 20_000;
        for t in [Transport::Udp, Transport::Tcp] {
            let mut m = module();
            for c in &mut m.channels {
                c.transport = Some(t.name().into());
            }
            let set = ChannelSet::create(&m).unwrap();
            let (a, b, c) = (mapped(&set, 0), mapped(&set, 1), mapped(&set, 2));
            let mut w = SamplingSource::attach(&a[0]).unwrap();
            let mut r1 = SamplingDestination::attach(&b[0]).unwrap();
            let mut r2 = SamplingDestination::attach(&c[0]).unwrap();
            let mut msg = [7u8; 40];
            for i in 1..=N {
                msg[..4].copy_from_slice(&i.to_le_bytes());
                w.write_with(&msg, || u64::from(i));
                if i % 50 == 0 {
                    // Bursts well below what a socket holds (about 150 frames), each followed by
                    // room for the agents to run, even on a loaded CPU: the agent need not keep
                    // up within a burst. Without an agent the socket fills all the same.
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            let mut buf = [0u8; 40];
            for r in [&mut r1, &mut r2] {
                // The last frames may still be on their way through loopback.
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                let got = loop {
                    r.new_call();
                    let ok = r.read(&mut buf).unwrap();
                    let got = u32::from_le_bytes(buf[..4].try_into().unwrap());
                    if got == N || std::time::Instant::now() >= deadline {
                        break (got, ok.written_at_ns, ok.len);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                };
                assert_eq!(got, (N, u64::from(N), 40), "{t}: not the newest message");
            }
        }
    }

    /// A request/reply pair of tcp sampling channels rides one connection, both ways.
    #[test]
    fn opposite_tcp_sampling_channels_share_one_connection() {
        use crate::transport::{SamplingDestination, SamplingSource};
        use partix_shm::RecvMode;
        let pair_module = |t: &str| {
            let mut m = module();
            m.partitions[1]
                .sampling_ports
                .push(sp("BACK", PortDirection::Source));
            m.partitions[0]
                .sampling_ports
                .push(sp("BACKIN", PortDirection::Destination));
            m.channels[0].destinations.truncate(1);
            m.channels.push(Channel {
                id: ChannelId(3),
                name: None,
                source: pref(2, "BACK"),
                destinations: vec![pref(1, "BACKIN")],
                kind: ChannelKind::Sampling,
                transport: None,
                delivery: None,
                location: Location::default(),
            });
            for c in &mut m.channels {
                c.transport = Some(t.into());
            }
            m
        };
        let (tcp, udp) = (pair_module("tcp"), pair_module("udp"));
        let ts = [Transport::Tcp; 3];
        // The queuing channel (index 1) is never paired.
        assert_eq!(reverse_tcp_pairs(&tcp, &ts), [Some(2), None, Some(0)]);
        assert_eq!(
            reverse_tcp_pairs(&udp, &[Transport::Udp; 3]),
            [None, None, None]
        );
        // Two destinations: no longer a pair.
        let mut multi = pair_module("tcp");
        multi.channels[0].destinations.push(pref(3, "IN"));
        assert_eq!(reverse_tcp_pairs(&multi, &ts), [None, None, None]);

        let set = ChannelSet::create(&tcp).unwrap();
        let udp_set = ChannelSet::create(&udp).unwrap();
        assert_eq!(set.region_count() + 2, udp_set.region_count());
        let names =
            |p: usize| -> Vec<String> { set.ports_of(p).into_iter().map(|d| d.name).collect() };
        assert_eq!(names(0), ["OUT", "LONELY", "BACKIN", "Q OUT"]);
        assert_eq!(names(1), ["IN", "BACK", "QIN"]);
        // A's OUT (600) and BACKIN (603) are the same socket (executive side), and so are B's
        // IN and BACK.
        let (fa, fb) = (set.child_fds(0), set.child_fds(1));
        assert_eq!(fa[0].0, fa[3].0);
        assert_eq!(fb[0].0, fb[1].0);
        assert_ne!(fa[0].0, fb[0].0);

        let (a, b) = (mapped(&set, 0), mapped(&set, 1));
        let mut out = SamplingSource::attach(&a[0]).unwrap();
        let mut back_in = SamplingDestination::attach(&a[2]).unwrap();
        let mut inp = SamplingDestination::attach(&b[0]).unwrap();
        let mut back = SamplingSource::attach(&b[1]).unwrap();
        let (mut buf, mut last_in, mut last_back) = ([0u8; 40], None, None);
        let t = Some(Duration::from_secs(10));
        for i in 0..200u32 {
            let ping = format!("ping {i}");
            out.write_with(ping.as_bytes(), || u64::from(i));
            let ok = inp
                .wait_newer(&mut buf, last_in, RecvMode::Spin, t)
                .unwrap();
            assert_eq!(&buf[..ok.len], ping.as_bytes());
            last_in = Some(ok.seq);
            let pong = format!("pong {i} {}", "x".repeat(i as usize % 30));
            back.write_with(pong.as_bytes(), || u64::from(i));
            let ok = back_in
                .wait_newer(&mut buf, last_back, RecvMode::Spin, t)
                .unwrap();
            assert_eq!(&buf[..ok.len], pong.as_bytes());
            last_back = Some(ok.seq);
        }
        // Each end still reads only its own channel's newest message.
        let n = inp.read(&mut buf).unwrap().len;
        assert_eq!(&buf[..n], b"ping 199");
    }

    /// The descriptors handed over for read-only grants are `O_RDONLY` (so the partition can
    /// never map them writable), those for read-write grants `O_RDWR`; every region's size is
    /// sealed.
    #[test]
    fn read_only_grants_are_read_only_descriptors_and_sizes_are_sealed() {
        let mut m = module();
        m.channels.push(Channel {
            id: ChannelId(3),
            name: None,
            source: pref(2, "BACK"),
            destinations: vec![pref(1, "BACKIN")],
            kind: ChannelKind::Sampling,
            transport: Some("two-sided".into()),
            delivery: None,
            location: Location::default(),
        });
        m.partitions[1]
            .sampling_ports
            .push(sp("BACK", PortDirection::Source));
        m.partitions[0]
            .sampling_ports
            .push(sp("BACKIN", PortDirection::Destination));
        let set = ChannelSet::create(&m).unwrap();
        let (mut ro, mut rw) = (0, 0);
        for p in 0..m.partitions.len() {
            let grants = set.ports_of(p).into_iter().flat_map(|d| d.fds);
            for (&(fd, _), (_, access)) in set.child_fds(p).iter().zip(grants) {
                // SAFETY: fd is open in this process; F_GETFL takes no argument.
                let mode = unsafe { libc::fcntl(fd, libc::F_GETFL) } & libc::O_ACCMODE;
                // SAFETY: as above, with F_GET_SEALS.
                let seals = unsafe { libc::fcntl(fd, libc::F_GET_SEALS) };
                assert_eq!(
                    seals,
                    partix_shm::region::REGION_SEALS,
                    "partition {p} fd {fd}"
                );
                match access {
                    Access::ReadOnly => {
                        assert_eq!(mode, libc::O_RDONLY, "partition {p} fd {fd}");
                        ro += 1;
                    }
                    Access::ReadWrite => {
                        assert_eq!(mode, libc::O_RDWR, "partition {p} fd {fd}");
                        rw += 1;
                    }
                }
            }
        }
        // B's and C's slots, B's queued data, A's unconnected LONELY slot.
        assert_eq!(ro, 4);
        // A: 2 slots + 2 notifiers, ring data + control, LONELY's notifier, BACKIN's TX + RX;
        // B: IN's notifier, QIN's control, BACK's TX; C: IN's notifier.
        assert_eq!(rw, 9 + 3 + 1);
    }

    /// The limits partix-config enforces (`partix_config::MAX_*`) are the runtime's: each
    /// maximum is accepted by what it sizes, and one more is refused, so they cannot drift apart.
    #[test]
    fn the_configuration_limits_are_the_runtimes() {
        use partix_config::{
            MAX_NB_MESSAGES, MAX_PORTS_PER_KIND, MAX_QUEUING_MESSAGE_SIZE,
            MAX_SAMPLING_MESSAGE_SIZE, MAX_TWO_SIDED_MESSAGE_SIZE, MAX_UDP_MESSAGE_SIZE,
        };
        // Queuing: one-sided rings and two-sided queues hold ring_capacity(MaxNbMessages).
        let (max_q, max_nb) = (MAX_QUEUING_MESSAGE_SIZE, MAX_NB_MESSAGES);
        assert!(RingLayout::new(ring_capacity(max_nb), max_q).is_ok());
        assert!(RingLayout::new(ring_capacity(max_nb + 1), 8).is_err());
        assert!(RingLayout::new(ring_capacity(u32::MAX), 8).is_err());
        assert!(RingLayout::new(1, max_q + 1).is_err());
        assert!(QueueShape::new(max_q, max_nb).is_ok());
        assert!(QueueShape::new(8, max_nb + 1).is_err());
        assert!(QueueShape::new(max_q + 1, 1).is_err());
        // Sampling: one-sided slots, and two-sided rings.
        assert!(SamplingLayout::new(MAX_SAMPLING_MESSAGE_SIZE).is_ok());
        assert!(SamplingLayout::new(MAX_SAMPLING_MESSAGE_SIZE + 1).is_err());
        let slots = TWO_SIDED_SAMPLING_SLOTS;
        assert!(RingShape::new(MAX_TWO_SIDED_MESSAGE_SIZE, slots).is_ok());
        assert!(RingShape::new(MAX_TWO_SIDED_MESSAGE_SIZE + 1, slots).is_err());
        // Ports per partition and kind.
        assert_eq!(MAX_PORTS_PER_KIND, crate::partition::MAX_NUMBER_OF_PORTS);
        // Socket buffers are computed exactly (no saturation, no overflow) at the limits: a
        // queuing channel's frames are its MaxNbMessages, a sampling channel's 4.
        let exact = |max: u32, frames: u32| {
            (u128::from(max) + socket::HEADER_LEN as u128 + 1024) * (u128::from(frames) + 2) * 2
        };
        for (max, frames) in [
            (max_q, max_nb),
            (MAX_SAMPLING_MESSAGE_SIZE, 4),
            (MAX_UDP_MESSAGE_SIZE, max_nb),
        ] {
            assert_eq!(
                socket::buffer_bytes(max, frames) as u128,
                exact(max, frames)
            );
        }
        // udp: the frame of the largest message is one datagram; a byte more is not.
        let (a, _b) =
            socket::socket_pair(socket::SocketKind::Udp, MAX_UDP_MESSAGE_SIZE, 4).unwrap();
        let a = std::net::UdpSocket::from(a);
        let frame = vec![0u8; socket::HEADER_LEN + MAX_UDP_MESSAGE_SIZE as usize];
        assert_eq!(a.send(&frame).unwrap(), frame.len());
        let e = a.send(&[0u8; 1][..].repeat(frame.len() + 1)).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EMSGSIZE), "{e}");
    }

    #[test]
    fn a_read_only_slot_refuses_a_writer() {
        let m = module();
        let set = ChannelSet::create(&m).unwrap();
        let ro = map(set.child_fds(1)[0].0, Access::ReadOnly);
        assert_eq!(
            SamplingWriter::attach(ro, 0).unwrap_err(),
            AreaError::ReadOnly
        );
    }
}
