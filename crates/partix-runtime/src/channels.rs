//! The channels of a module over the one-sided shared-memory transport: the regions the executive
//! creates once per run, how each partition inherits exactly its ports' regions, and the
//! partition-side mapping by port name.
//!
//! # Regions (one memfd each; see `docs/ports.md`)
//! - **Sampling channel**: one sampling slot ([`partix_shm::sampling`]) *per destination*. The
//!   source maps every slot read-write and writes each message into each of them (multicast is
//!   done by the writer, as in the one-sided RDMA design: no daemon, no receiver CPU); each
//!   destination maps *its own* slot read-only, so a store by the destination faults.
//! - **Queuing channel**: one region holding a control line (two notifiers: "data" parks the
//!   receiver, "space" parks the sender) at offset 0 and an SPSC ring ([`partix_shm::ring`]) at
//!   offset [`RING_OFFSET`]. Both ends map it read-write: the ring's consumer owns the `head`
//!   counter, which lives in the same region as the slots (a split is asked of `partix-shm`).
//! - **Unconnected port**: a port of the configuration that no channel uses gets a private region
//!   of its kind (writes go nowhere; reads find nothing), so creating it still succeeds.
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
//! `+`-separated `FD` + `r`/`w` (read-only / read-write mapping), e.g.
//! `s:SENSOR:src:64:100000000:600w+601w,q:CMD:dst:32:8:602w`. A partition only ever sees the
//! ports of its own configuration entry, so it cannot open another partition's port.
//!
//! # Transports
//! Only `partix:Transport="one-sided"` (also the default when the attribute is absent) is built
//! here; [`ChannelSet::create`] refuses any other transport, naming the channel and its location.
#![allow(unsafe_code)]

use partix_config::model::{
    Channel, ChannelKind, Location, Module, PartitionId, PortDirection, PortRef,
};
use partix_shm::notifier::NOTIFIER_LEN;
use partix_shm::ring::RingLayout;
use partix_shm::sampling::{SamplingLayout, SamplingWriter};
use partix_shm::{Access, AreaError, Region, RegionError};
use std::fmt;
use std::os::fd::RawFd;
use std::sync::Arc;

/// Environment variable listing a partition's ports and their inherited descriptors.
pub const ENV_PORT_FDS: &str = "PARTIX_PORT_FDS";
/// First descriptor number of the port regions in a partition process.
pub const PORT_FD_BASE: RawFd = 600;
/// Offset of the ring in a queuing channel's region (after the control line's two notifiers).
pub const RING_OFFSET: usize = 2 * NOTIFIER_LEN;
/// Offset of the "data" notifier (the sender wakes a parked receiver) in a queuing region.
pub const DATA_NOTIFIER: usize = 0;
/// Offset of the "space" notifier (the receiver wakes a parked sender) in a queuing region.
pub const SPACE_NOTIFIER: usize = NOTIFIER_LEN;
/// The transport built here (and the default).
pub const ONE_SIDED: &str = "one-sided";

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
                 use partix:Transport=\"{ONE_SIDED}\" (or leave it out)",
                location.line, location.col
            ),
            ChannelError::Layout { port, error } => write!(f, "port {port}: {error}"),
            ChannelError::Region { port, error } => {
                write!(f, "port {port}: cannot create its shared region: {error}")
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
    /// Descriptors (in the partition process) and how to map them.
    pub fds: Vec<(RawFd, Access)>,
}

/// One port grant of a partition, on the executive side: the description and region indices.
#[derive(Debug)]
struct Grant {
    desc: PortDesc,
    regions: Vec<(usize, Access)>,
}

/// One connected port end: (partition index, port name, region indices and mappings).
type End = (usize, String, Vec<(usize, Access)>);

/// The regions of all channels of a module, created once per run, and who gets which.
#[derive(Debug)]
pub struct ChannelSet {
    regions: Vec<Region>,
    grants: Vec<Vec<Grant>>,
}

fn channel_label(c: &Channel) -> String {
    match &c.name {
        Some(n) => format!("channel {} ({n})", c.id.0),
        None => format!("channel {}", c.id.0),
    }
}

fn sampling_region(name: &str, port: &str, max: u32) -> Result<Region, ChannelError> {
    let layout = SamplingLayout::new(max).map_err(|error| ChannelError::Layout {
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

/// Return the ring capacity (a power of two) for `max_nb_messages`.
pub fn ring_capacity(max_nb_messages: u32) -> u32 {
    max_nb_messages.max(1).next_power_of_two()
}

fn queuing_region(name: &str, port: &str, max: u32, nb: u32) -> Result<Region, ChannelError> {
    let layout = RingLayout::new(ring_capacity(nb), max).map_err(|error| ChannelError::Layout {
        port: port.into(),
        error,
    })?;
    let region = Arc::new(
        Region::create(name, RING_OFFSET + layout.size_bytes()).map_err(|error| {
            ChannelError::Region {
                port: port.into(),
                error,
            }
        })?,
    );
    layout
        .init(&region, RING_OFFSET)
        .map_err(|error| ChannelError::Layout {
            port: port.into(),
            error,
        })?;
    Ok(Arc::try_unwrap(region).expect("no other handle"))
}

impl ChannelSet {
    /// Create the regions of every channel (and of every unconnected port) of `module`.
    ///
    /// # Errors
    /// [`ChannelError::Transport`] for a channel whose transport is not one-sided;
    /// [`ChannelError::Layout`] / [`ChannelError::Region`] if a region cannot be made.
    pub fn create(module: &Module) -> Result<ChannelSet, ChannelError> {
        for c in &module.channels {
            if let Some(t) = &c.transport {
                if t != ONE_SIDED {
                    return Err(ChannelError::Transport {
                        file: module.source.as_ref().map_or_else(
                            || "<configuration>".to_owned(),
                            |p| p.display().to_string(),
                        ),
                        channel: channel_label(c),
                        transport: t.clone(),
                        location: c.location,
                    });
                }
            }
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
        // Region indices of each (partition index, port name) end.
        let mut ends: Vec<End> = Vec::new();
        for c in &module.channels {
            let src = &c.source;
            let src_idx = module.partition_index(src.partition);
            match c.kind {
                ChannelKind::Sampling => {
                    let max = module
                        .partition(src.partition)
                        .and_then(|p| p.sampling_port(&src.port))
                        .map(|p| p.max_message_size)
                        .or_else(|| {
                            c.destinations.iter().find_map(|d| {
                                module
                                    .partition(d.partition)
                                    .and_then(|p| p.sampling_port(&d.port))
                                    .map(|p| p.max_message_size)
                            })
                        })
                        .unwrap_or(1);
                    let mut src_regions = Vec::new();
                    for d in &c.destinations {
                        let name = format!("partix-ch{}-{}", c.id.0, label(d));
                        let r = sampling_region(&name, &label(d), max)?;
                        set.regions.push(r);
                        let ri = set.regions.len() - 1;
                        src_regions.push((ri, Access::ReadWrite));
                        if let Some(di) = module.partition_index(d.partition) {
                            ends.push((di, d.port.clone(), vec![(ri, Access::ReadOnly)]));
                        }
                    }
                    if let Some(si) = src_idx {
                        ends.push((si, src.port.clone(), src_regions));
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
                    let name = format!("partix-ch{}-{}", c.id.0, label(src));
                    let r = queuing_region(&name, &label(src), max, nb)?;
                    set.regions.push(r);
                    let ri = set.regions.len() - 1;
                    if let Some(si) = src_idx {
                        ends.push((si, src.port.clone(), vec![(ri, Access::ReadWrite)]));
                    }
                    for d in &c.destinations {
                        if let Some(di) = module.partition_index(d.partition) {
                            ends.push((di, d.port.clone(), vec![(ri, Access::ReadWrite)]));
                        }
                    }
                }
            }
        }
        for (pi, part) in module.partitions.iter().enumerate() {
            let find = |name: &str| {
                ends.iter()
                    .find(|(i, n, _)| *i == pi && n == name)
                    .map(|(_, _, r)| r.clone())
            };
            for sp in &part.sampling_ports {
                let regions = match find(&sp.name) {
                    Some(r) => r,
                    None => {
                        let name = format!("partix-unconnected-{}/{}", part.name, sp.name);
                        let r = sampling_region(&name, &sp.name, sp.max_message_size)?;
                        set.regions.push(r);
                        let access = match sp.direction {
                            PortDirection::Source => Access::ReadWrite,
                            PortDirection::Destination => Access::ReadOnly,
                        };
                        vec![(set.regions.len() - 1, access)]
                    }
                };
                set.grants[pi].push(Grant {
                    desc: PortDesc {
                        name: sp.name.clone(),
                        kind: ChannelKind::Sampling,
                        direction: sp.direction,
                        max_message_size: sp.max_message_size,
                        param: sp.refresh_period.as_nanos().min(u64::MAX as u128) as u64,
                        fds: Vec::new(),
                    },
                    regions,
                });
            }
            for qp in &part.queuing_ports {
                let regions = match find(&qp.name) {
                    Some(r) => r,
                    None => {
                        let name = format!("partix-unconnected-{}/{}", part.name, qp.name);
                        let r = queuing_region(
                            &name,
                            &qp.name,
                            qp.max_message_size,
                            qp.max_nb_messages,
                        )?;
                        set.regions.push(r);
                        vec![(set.regions.len() - 1, Access::ReadWrite)]
                    }
                };
                set.grants[pi].push(Grant {
                    desc: PortDesc {
                        name: qp.name.clone(),
                        kind: ChannelKind::Queuing,
                        direction: qp.direction,
                        max_message_size: qp.max_message_size,
                        param: u64::from(qp.max_nb_messages),
                        fds: Vec::new(),
                    },
                    regions,
                });
            }
        }
        Ok(set)
    }

    /// Return the number of regions created.
    pub fn region_count(&self) -> usize {
        self.regions.len()
    }

    /// Return the descriptors partition `p` inherits: `(descriptor in the executive, descriptor
    /// number in the partition)`, numbered from [`PORT_FD_BASE`].
    pub fn child_fds(&self, p: usize) -> Vec<(RawFd, RawFd)> {
        let mut out = Vec::new();
        for g in self.grants.get(p).map(Vec::as_slice).unwrap_or(&[]) {
            for &(ri, _) in &g.regions {
                let n = PORT_FD_BASE + out.len() as RawFd;
                out.push((self.regions[ri].raw_fd(), n));
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
        entries.push(format!(
            "{}:{}:{}:{}:{}:{}",
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
        let [kind, name, dir, max, param, fds] = f[..] else {
            return Err(bad());
        };
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
        });
    }
    Ok(out)
}

/// A port of this partition with its regions mapped (partition side).
#[derive(Debug)]
pub struct MappedPort {
    /// What the executive said about the port.
    pub desc: PortDesc,
    /// The mapped regions, in the order of `desc.fds`.
    pub regions: Vec<Arc<Region>>,
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

/// Decode [`ENV_PORT_FDS`] of this process and map every port's regions (partition side).
/// No variable means no ports.
///
/// # Errors
/// A message if the variable is malformed or a descriptor cannot be mapped.
pub fn map_inherited() -> Result<Vec<MappedPort>, String> {
    let Ok(v) = std::env::var(ENV_PORT_FDS) else {
        return Ok(Vec::new());
    };
    let descs = decode_ports(&v)?;
    let mut out = Vec::with_capacity(descs.len());
    for desc in descs {
        let mut regions = Vec::with_capacity(desc.fds.len());
        for &(fd, access) in &desc.fds {
            // SAFETY: the executive handed these descriptors to this process for this purpose
            // only, and `map_inherited` is called once per process (the port registry is a
            // OnceLock), so nothing else owns them. A descriptor dup'ed to a fresh number avoids
            // closing it on drop if the program is re-executed in place (restart): the original
            // numbers stay open for the next image.
            let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, PORT_FD_BASE + 1000) };
            if dup < 0 {
                return Err(format!(
                    "port {}: inherited descriptor {fd}: {}",
                    desc.name,
                    std::io::Error::last_os_error()
                ));
            }
            // SAFETY: dup is fresh and owned by nobody else.
            regions.push(Arc::new(unsafe { map_fd(dup, access) }?));
        }
        out.push(MappedPort { desc, regions });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use partix_config::model::*;
    use partix_shm::ring::{RingConsumer, RingProducer};
    use partix_shm::sampling::SamplingReader;
    use std::time::Duration;

    fn part(id: u32, name: &str) -> Partition {
        Partition {
            id: PartitionId(id),
            name: name.into(),
            criticality: Criticality::LevelA,
            system_partition: false,
            entry_point: "main".into(),
            executable: None,
            args: Vec::new(),
            affinity: None,
            memory: Vec::new(),
            sampling_ports: Vec::new(),
            queuing_ports: Vec::new(),
            hm: Vec::new(),
            location: Location::default(),
        }
    }

    fn sp(name: &str, dir: PortDirection) -> SamplingPortConfig {
        SamplingPortConfig {
            name: name.into(),
            max_message_size: 40,
            direction: dir,
            refresh_period: Duration::from_millis(100),
            location: Location::default(),
        }
    }

    fn qp(name: &str, dir: PortDirection) -> QueuingPortConfig {
        QueuingPortConfig {
            name: name.into(),
            max_message_size: 16,
            direction: dir,
            max_nb_messages: 5,
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
                    location: Location::default(),
                },
                Channel {
                    id: ChannelId(2),
                    name: None,
                    source: pref(1, "Q OUT"),
                    destinations: vec![pref(2, "QIN")],
                    kind: ChannelKind::Queuing,
                    transport: Some("one-sided".into()),
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
        // 2 sampling slots, 1 ring, 1 unconnected slot.
        assert_eq!(set.region_count(), 4);
        let a = set.ports_of(0);
        let names: Vec<&str> = a.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["OUT", "LONELY", "Q OUT"]);
        assert_eq!(
            a[0].fds,
            vec![(600, Access::ReadWrite), (601, Access::ReadWrite)]
        );
        assert_eq!(a[1].fds, vec![(602, Access::ReadOnly)]);
        assert_eq!(a[2].fds, vec![(603, Access::ReadWrite)]);
        assert_eq!(a[0].param, 100_000_000);
        assert_eq!(a[2].param, 5);
        let b = set.ports_of(1);
        assert_eq!(b[0].fds, vec![(600, Access::ReadOnly)]);
        assert_eq!(b[1].kind, ChannelKind::Queuing);
        assert_eq!(set.child_fds(1).len(), 2);
        assert_eq!(set.child_fds(2).len(), 1);

        // The source writes both slots; each destination reads its own through a read-only map.
        let src = set.child_fds(0);
        for (i, dst) in [(0usize, 1usize), (1, 2)] {
            let mut w = SamplingWriter::attach(map(src[i].0, Access::ReadWrite), 0).unwrap();
            w.write(format!("to {dst}").as_bytes()).unwrap();
            let ro = map(set.child_fds(dst)[0].0, Access::ReadOnly);
            let r = SamplingReader::attach(ro, 0).unwrap();
            let mut buf = [0u8; 40];
            let ok = r.read(&mut buf).unwrap();
            assert_eq!(&buf[..ok.len], format!("to {dst}").as_bytes());
        }
        // The ring: producer in A, consumer in B, capacity rounded up to a power of two.
        let mut p = RingProducer::attach(map(src[3].0, Access::ReadWrite), RING_OFFSET).unwrap();
        let mut c =
            RingConsumer::attach(map(set.child_fds(1)[1].0, Access::ReadWrite), RING_OFFSET)
                .unwrap();
        assert_eq!(p.capacity(), 8);
        p.try_push(b"hello").unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(c.try_pop(&mut buf).unwrap(), 5);
    }

    #[test]
    fn env_value_round_trips_with_odd_names() {
        let m = module();
        let set = ChannelSet::create(&m).unwrap();
        let v = set.env_value(0);
        assert!(v.contains("q:Q%20OUT:src:16:5:603w"), "{v}");
        assert_eq!(decode_ports(&v).unwrap(), set.ports_of(0));
        assert_eq!(decode_ports("").unwrap(), Vec::new());
        for bad in [
            "x:A:src:1:1:600w",
            "s:A:up:1:1:600w",
            "s:A:src:1:1:600x",
            "s:A:src",
            "s:%G1:src:1:1:600w",
            "s:A:src:-1:1:600w",
        ] {
            assert!(decode_ports(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn other_transports_are_refused_naming_the_channel() {
        let mut m = module();
        m.channels[1].transport = Some("udp".into());
        m.channels[1].location = Location { line: 40, col: 5 };
        let e = ChannelSet::create(&m).unwrap_err().to_string();
        assert!(e.contains("<configuration>:40:5: channel 2"), "{e}");
        assert!(e.contains("\"udp\""), "{e}");
        assert!(e.contains("one-sided"), "{e}");
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
