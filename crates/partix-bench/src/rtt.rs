//! `partix bench rtt`: round-trip time of sampling ports per transport (the RDMA sampling-port
//! paper's fig. 2a, RTT vs message size, and fig. 2b, the RTT CDF at 16 B), beside raw baselines
//! and iceoryx2 measured in the same run; and the throughput of a queuing port vs a raw SPSC ring.
//!
//! Every class is a ping-pong between two processes pinned to CPU 0 and CPU 1 (see
//! [`crate::rttpeer`]):
//! - **ports**: two partition processes running the partix partition runtime standalone (no time
//!   windows), with the channel resources of [`ChannelSet::create`] for a module generated per
//!   (transport, size) with `partix:Transport` on both channels (PING: A→B, PONG: B→A), handed
//!   over as the executive does (descriptors from
//!   [`PORT_FD_BASE`](partix_runtime::channels::PORT_FD_BASE), `PARTIX_PORT_FDS`). The
//!   application code only calls CREATE/WRITE/READ_SAMPLING_MESSAGE (and the partix wait
//!   extension); it never names a transport. Waiting classes ([`MODES`]): `spin` waits for the
//!   next message in the port's spinning wait (WAIT_SAMPLING_MESSAGE, `RecvMode::Spin`), `poll`
//!   calls READ_SAMPLING_MESSAGE in a loop, `park` waits in the runtime's default mode
//!   (spin-then-park: 2000 polls, then a sleep in the kernel), `block` sleeps in the port's
//!   blocking wait. `--gap-us G` makes the ping side sleep `G` µs before every round trip, so the
//!   other side waits that long for each message (sporadic traffic: a `park` receiver has parked
//!   by the time it comes).
//! - **raw cache-line**: one shared-memory line each way, spin (the floor of any shared-memory RTT);
//! - **raw futex** (park and block classes): the raw copy with a futex flag word per direction,
//!   the receiver sleeping in `FUTEX_WAIT` (park: after 2000 looks), the sender waking it (the
//!   floor of a shared-memory round trip whose waits sleep);
//! - **raw UDP** / **raw TCP** (TCP_NODELAY) over loopback at the same payload sizes: busy-polled
//!   non-blocking sockets (spin class), blocking sockets (block class), and 2000 non-blocking
//!   receives before a blocking one (park class);
//! - **iceoryx2** publish/subscribe (spin on receive), by the example `iceoryx2_rtt` of this crate
//!   (a dev-dependency, so not in the `partix` binary), if it is built.
//!
//! Ratios are printed against each transport's baseline (one-sided and two-sided vs raw
//! cache-line in the spin and poll classes and vs raw futex in the park and block classes, udp
//! vs raw UDP, tcp vs raw TCP, every transport vs iceoryx2) with the targets of the issue, met
//! or missed.
//!
//! **Rounds** (`--rounds`, default 4): the classes of one message size run once per round, each
//! next to its baseline, in alternating order (A B C, then C B A, ...), every launch measuring
//! its share of `--iters`. The table rows pool the rounds. Every ratio also shows the median and
//! range of the per-round ratios (the class's and its baseline's p50 of the same round), and
//! the p50 targets are judged on that median (the p99 target on the pooled p99, whose tail a
//! median of rounds would drop): the host moves this VM's vCPUs between placements whose
//! raw cache-line round trip differs by 3x within seconds, so a pooled p50 mixes placements
//! in whatever proportion the run happened to see, while a per-round ratio compares two classes
//! measured seconds apart, and the median over rounds ignores a round that straddled a switch.

use crate::report::{header, machine_line, Recorder, Summary};
use crate::rttpeer::{
    PeerArgs, Wait, PEER_FD, PEER_RX_FD, QRTT_DEPTH, QUEUE_BACKOFF, QUEUE_BATCH, QUEUE_DEPTH,
    QUEUE_EXTRA_STORES, QUEUE_MSG,
};
use anyhow::{bail, Context};
use clap::Args;
use partix_runtime::channels::{above_port_targets, ChannelSet, ENV_PORT_FDS};
use partix_runtime::state::ENV_DESCRIPTOR_TABLE;
use partix_runtime::transport::socket::{socket_pair, SocketKind};
use partix_shm::ring::RingLayout;
use partix_shm::Region;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The suffix of the classes measured through the C API (`--c-api`).
pub const C_API: &str = "(C API)";

/// The class of the one-sided protocol without the port layer (`rttpeer` kind `slot`): each
/// reader on a read-only mapping, as a destination port's.
pub const RAW_SLOT: &str = "raw one-sided slot";

/// [`RAW_SLOT`] with each reader on a writable mapping (`rttpeer` kind `slot-rw`): the
/// difference is what the destination's read-only mapping costs.
pub const RAW_SLOT_RW: &str = "raw one-sided slot, writable reader";

/// The raw shared-memory baseline of the park and block classes (`rttpeer` kind `futex`): the
/// raw copy with a futex flag word, the receiver sleeping in `FUTEX_WAIT` (park: after 2000
/// looks), the sender waking it.
pub const RAW_FUTEX: &str = "raw futex";

/// The transports a channel can name (`partix:Transport`), and `two-sided-manager`: the
/// two-sided transport with `partix:Delivery="manager"` (only the destination's network manager
/// thread delivers, the paper's design; `two-sided` is the default, helped delivery, where the
/// reading process moves the message itself).
pub const TRANSPORTS: &[&str] = &["one-sided", "two-sided", "two-sided-manager", "udp", "tcp"];

/// The two-sided transport with `partix:Delivery="manager"` (see [`TRANSPORTS`]).
pub const TWO_SIDED_MANAGER: &str = "two-sided-manager";

/// The channel attributes of a [`TRANSPORTS`] name.
pub fn transport_attrs(transport: &str) -> String {
    if transport == TWO_SIDED_MANAGER {
        r#"partix:Transport="two-sided" partix:Delivery="manager""#.into()
    } else {
        format!(r#"partix:Transport="{transport}""#)
    }
}

/// Whether `t` is one of the two-sided rows (helped or manager-delivered).
fn is_two_sided(t: &str) -> bool {
    t == "two-sided" || t == TWO_SIDED_MANAGER
}

/// The waiting classes: `spin` (busy-wait: the ports' WAIT_SAMPLING_MESSAGE in `RecvMode::Spin`,
/// a non-blocking `recv` loop for the raw sockets), `poll` (ports: the standard
/// READ_SAMPLING_MESSAGE called in a loop; the raw peers have no such class and are compared
/// with their `spin` rows), `park` (spin-then-park: the ports' default receive mode, 2000 polls
/// then a sleep; the raw sockets likewise), `block` (sleep in the kernel).
pub const MODES: &[&str] = &["spin", "poll", "park", "block"];

/// Arguments of `partix bench rtt`.
#[derive(Args, Debug, Clone)]
pub struct RttArgs {
    /// Message sizes in bytes (at least 8: the sequence number, which every message carries in
    /// its first and its last 8 bytes).
    #[arg(long, value_delimiter = ',', default_value = "16,56,64,256,1024,4096")]
    pub sizes: Vec<usize>,
    /// Measured round trips per class.
    #[arg(long, default_value_t = 20_000)]
    pub iters: u64,
    /// Unmeasured round trips before each class.
    #[arg(long, default_value_t = 2_000)]
    pub warmup: u64,
    /// Channel transports to measure.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "one-sided,two-sided,two-sided-manager,udp,tcp"
    )]
    pub transports: Vec<String>,
    /// Waiting classes: spin (busy-wait in the port's wait), poll (READ_SAMPLING_MESSAGE in a
    /// loop), park (spin-then-park, the ports' default: 2000 polls, then sleep in the kernel)
    /// and block (sleep in the kernel).
    #[arg(long, value_delimiter = ',', default_value = "spin,poll,park,block")]
    pub modes: Vec<String>,
    /// Microseconds the measuring side sleeps before every round trip (not timed), so the
    /// other side waits that long for each message: sporadic traffic, under which a park-class
    /// receiver has parked when the message comes (0: back to back).
    #[arg(long, default_value_t = 0)]
    pub gap_us: u64,
    /// Also measure every transport's round trip through queuing ports (SEND and
    /// RECEIVE_QUEUING_MESSAGE; rows `<transport> queuing`), in every class.
    #[arg(long)]
    pub queuing_rtt: bool,
    /// Also measure every transport's sampling ping-pong through the C API (the `extern "C"`
    /// services a C partition calls: WRITE_SAMPLING_MESSAGE, PARTIX_WAIT_SAMPLING_MESSAGE,
    /// READ_SAMPLING_MESSAGE; rows `<transport> (C API)`), in every class.
    #[arg(long)]
    pub c_api: bool,
    /// Write the RTT-vs-size plot and the 16 B CDF (SVG) into this directory.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Skip the iceoryx2 comparison.
    #[arg(long)]
    pub no_iceoryx2: bool,
    /// Messages per queuing-throughput class and round (0: skip the throughput part).
    #[arg(long, default_value_t = 2_000_000)]
    pub queue_messages: u64,
    /// Rounds per message size: every class of a size runs once per round, in alternating order
    /// (A B C, C B A, ...), measuring its share of `--iters` each time; the rows pool the
    /// rounds, and every ratio also shows its range over the rounds.
    #[arg(long, default_value_t = 4)]
    pub rounds: u64,
    /// How the partitions' processes hold file descriptors (`partix:DescriptorTable`):
    /// `per-process` (each process its own copy of the table: no file reference per socket
    /// call) or `shared` (one table, the configuration's default).
    #[arg(long, default_value = "per-process", value_parser = ["per-process", "shared"])]
    pub descriptor_table: String,
    /// The peer program (default: `partix-rttpart` beside this program, `PARTIX_RTTPART`, or
    /// this program's hidden `bench rtt-peer` subcommand).
    #[arg(long, hide = true)]
    pub peer_exe: Option<PathBuf>,
}

impl Default for RttArgs {
    fn default() -> Self {
        RttArgs {
            sizes: vec![16, 56, 64, 256, 1024, 4096],
            iters: 20_000,
            warmup: 2_000,
            transports: TRANSPORTS.iter().map(|s| s.to_string()).collect(),
            modes: MODES.iter().map(|s| s.to_string()).collect(),
            gap_us: 0,
            queuing_rtt: false,
            c_api: false,
            plot: None,
            no_iceoryx2: false,
            queue_messages: 2_000_000,
            rounds: 4,
            descriptor_table: "per-process".into(),
            peer_exe: None,
        }
    }
}

/// How to start a peer process.
#[derive(Debug, Clone)]
struct Peer {
    program: PathBuf,
    prefix: Vec<String>,
}

fn find_peer(args: &RttArgs) -> anyhow::Result<Peer> {
    let explicit = args
        .peer_exe
        .clone()
        .or_else(|| std::env::var_os("PARTIX_RTTPART").map(PathBuf::from));
    if let Some(p) = explicit {
        if !p.is_file() {
            bail!("peer program {} not found", p.display());
        }
        return Ok(Peer {
            program: p,
            prefix: Vec::new(),
        });
    }
    let exe = std::env::current_exe().context("current_exe")?;
    if let Some(beside) = exe.parent().map(|d| d.join("partix-rttpart")) {
        if beside.is_file() {
            return Ok(Peer {
                program: beside,
                prefix: Vec::new(),
            });
        }
    }
    Ok(Peer {
        program: exe,
        prefix: vec!["bench".into(), "rtt-peer".into()],
    })
}

/// Two CPUs to pin the ends to (both 0 on a uniprocessor).
fn cpus() -> (usize, usize) {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0, if n > 1 { 1 } else { 0 })
}

#[allow(unsafe_code)]
fn spawn_peer(
    peer: &Peer,
    a: &PeerArgs,
    fds: Vec<(RawFd, RawFd)>,
    env: Vec<(&str, String)>,
) -> anyhow::Result<Child> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(&peer.program);
    cmd.args(&peer.prefix)
        .args(a.to_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    // The moves below use a fixed array (no allocation after the fork).
    const MAX_FDS: usize = 16;
    anyhow::ensure!(
        fds.len() <= MAX_FDS,
        "{} descriptors for {}: at most {MAX_FDS}",
        fds.len(),
        peer.program.display()
    );
    // Just above every target (`F_DUPFD` refuses a floor at or above the soft limit).
    let high = above_port_targets(&fds);
    // SAFETY: between fork and exec the closure only calls async-signal-safe functions (prctl,
    // fcntl, dup2, close) on the descriptor numbers captured before the fork. (Left alone: the
    // pipe std's spawn reports an exec failure through is the child's too, and one numbered
    // like a target would be replaced; that takes some 600 descriptors open in the bench.)
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // First above every target number, then onto the targets (as the executive does).
            let mut tmp = [0 as RawFd; MAX_FDS];
            for (i, &(src, _)) in fds.iter().enumerate().take(tmp.len()) {
                tmp[i] = libc::fcntl(src, libc::F_DUPFD_CLOEXEC, high);
                if tmp[i] < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (i, &(_, dst)) in fds.iter().enumerate().take(tmp.len()) {
                if libc::dup2(tmp[i], dst) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(tmp[i]);
            }
            Ok(())
        });
    }
    cmd.spawn()
        .with_context(|| format!("cannot start {}", peer.program.display()))
}

fn read_all(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        s
    })
}

/// One end of a pair: its arguments, the descriptors it inherits (`(ours, its number)`) and its
/// environment variables.
struct End<'a> {
    args: &'a PeerArgs,
    fds: Vec<(RawFd, RawFd)>,
    env: Vec<(&'a str, String)>,
}

impl<'a> End<'a> {
    fn raw(args: &'a PeerArgs, fd: RawFd) -> End<'a> {
        End {
            args,
            fds: vec![(fd, PEER_FD)],
            env: Vec::new(),
        }
    }

    /// A raw peer that sends on `tx` and receives on `rx` (one socket per direction).
    fn raw2(args: &'a PeerArgs, tx: RawFd, rx: RawFd) -> End<'a> {
        End {
            args,
            fds: vec![(tx, PEER_FD), (rx, PEER_RX_FD)],
            env: Vec::new(),
        }
    }

    /// Partition `p` of `set`, its processes holding descriptors as `table` says
    /// (`partix:DescriptorTable`).
    fn partition(args: &'a PeerArgs, set: &ChannelSet, p: usize, table: &str) -> End<'a> {
        End {
            args,
            fds: set.child_fds(p),
            env: vec![
                (ENV_PORT_FDS, set.env_value(p)),
                (ENV_DESCRIPTOR_TABLE, table.to_string()),
            ],
        }
    }
}

/// Start `b` then `a` (the measuring end); return `a`'s stdout followed by `b`'s `# nvcsw N`
/// and `# fifo F` lines as `# echo nvcsw N` and `# echo fifo F`, or an error with both stderrs. An echo side that fails (a message
/// that is not the awaited one, whole) stops the measuring side at once, which would otherwise
/// wait for its echo until the time-out.
fn run_pair(peer: &Peer, a: End<'_>, b: End<'_>, timeout: Duration) -> Result<String, String> {
    let mut cb = spawn_peer(peer, b.args, b.fds, b.env).map_err(|e| format!("{e:#}"))?;
    let b_out = read_all(cb.stdout.take().expect("piped"));
    let b_err = read_all(cb.stderr.take().expect("piped"));
    let mut ca = match spawn_peer(peer, a.args, a.fds, a.env) {
        Ok(c) => c,
        Err(e) => {
            let _ = cb.kill();
            let _ = cb.wait();
            return Err(format!("{e:#}"));
        }
    };
    let a_out = read_all(ca.stdout.take().expect("piped"));
    let a_err = read_all(ca.stderr.take().expect("piped"));
    let deadline = Instant::now() + timeout;
    let mut echo_failed = None;
    let status = loop {
        match ca.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < deadline => {
                if let Ok(Some(s)) = cb.try_wait() {
                    if !s.success() {
                        echo_failed = Some(s);
                        let _ = ca.kill();
                        let _ = ca.wait();
                        break None;
                    }
                }
                std::thread::sleep(Duration::from_millis(5))
            }
            _ => {
                let _ = ca.kill();
                let _ = ca.wait();
                break None;
            }
        }
    };
    // The echo side ends by itself after the last round; give it a moment, then stop it.
    let b_deadline = Instant::now() + Duration::from_secs(2);
    let b_status = loop {
        match cb.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < b_deadline => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = cb.kill();
                let _ = cb.wait();
                break None;
            }
        }
    };
    let mut out = a_out.join().unwrap_or_default();
    let b_out = b_out.join().unwrap_or_default();
    for key in ["nvcsw", "fifo"] {
        let prefix = format!("# {key} ");
        if let Some(n) = b_out.lines().find_map(|l| l.strip_prefix(&prefix)) {
            out += &format!("# echo {key} {}\n", n.trim());
        }
    }
    let errs = format!(
        "{}{}",
        a_err.join().unwrap_or_default(),
        b_err.join().unwrap_or_default()
    );
    let errs = errs.trim();
    if let Some(s) = echo_failed {
        return Err(format!(
            "the echo side exited with {s}{}",
            if errs.is_empty() {
                String::new()
            } else {
                format!(": {errs}")
            }
        ));
    }
    match status {
        Some(s) if s.success() && b_status.is_some_and(|s| s.success()) => Ok(out),
        Some(s) => Err(format!(
            "peer exited with {s}{}",
            if errs.is_empty() {
                String::new()
            } else {
                format!(": {errs}")
            }
        )),
        None => Err(format!(
            "no result within {} s (stopped){}",
            timeout.as_secs(),
            if errs.is_empty() {
                String::new()
            } else {
                format!(": {errs}")
            }
        )),
    }
}

fn parse_samples(out: &str) -> Recorder {
    let mut r = Recorder::new();
    for v in out.lines().filter_map(|l| l.trim().parse::<u64>().ok()) {
        r.record(v);
    }
    r
}

fn pair_args(kind: &str, size: usize, args: &RttArgs, mode: &str) -> (PeerArgs, PeerArgs) {
    let (c0, c1) = cpus();
    let a = PeerArgs {
        kind: kind.into(),
        role: "ping".into(),
        cpu: c0,
        size,
        iters: args.iters,
        warmup: args.warmup,
        wait: Wait::parse(mode).unwrap_or(Wait::Spin),
        gap_us: args.gap_us,
    };
    let b = PeerArgs {
        role: "pong".into(),
        cpu: c1,
        ..a.clone()
    };
    (a, b)
}

fn pair_timeout(args: &RttArgs) -> Duration {
    // Each round trip also waits the gap (plus the sleep's lateness): without it, a run with
    // --gap-us of a millisecond or more timed every class out (found by review).
    let per_trip = Duration::from_micros(200 + 2 * args.gap_us);
    Duration::from_secs(10) + per_trip * (args.iters + args.warmup) as u32
}

/// One `<Channel>` of a generated module: port `name` of partition `src` (identifier, name) to
/// the port of the same name of `dst`, over `transport`.
fn channel_xml(transport: &str, id: u32, name: &str, src: (u32, &str), dst: (u32, &str)) -> String {
    let attrs = transport_attrs(transport);
    format!(
        r#"    <Channel ChannelIdentifier="{id}" ChannelName="{name}" {attrs}>
      <Source><Standard_Partition PartitionIdentifier="{}" PartitionName="{}" PortName="{name}"/></Source>
      <Destination><Standard_Partition PartitionIdentifier="{}" PartitionName="{}" PortName="{name}"/></Destination>
    </Channel>
"#,
        src.0, src.1, dst.0, dst.1
    )
}

/// The module configuration of one (transport, size) ping-pong: partitions A and B, channels
/// PING (A→B) and PONG (B→A) with `partix:Transport`.
pub fn sampling_module_xml(transport: &str, size: usize) -> String {
    let chan = |id, name, src, dst| channel_xml(transport, id, name, src, dst);
    let ports_a = format!(
        r#"    <Sampling_Port Name="PING" MaxMessageSize="{size}" Direction="SOURCE" RefreshRateSeconds="1"/>
    <Sampling_Port Name="PONG" MaxMessageSize="{size}" Direction="DESTINATION" RefreshRateSeconds="1"/>
"#
    );
    let ports_b = format!(
        r#"    <Sampling_Port Name="PING" MaxMessageSize="{size}" Direction="DESTINATION" RefreshRateSeconds="1"/>
    <Sampling_Port Name="PONG" MaxMessageSize="{size}" Direction="SOURCE" RefreshRateSeconds="1"/>
"#
    );
    let channels = chan(1, "PING", (1, "A"), (2, "B")) + &chan(2, "PONG", (2, "B"), (1, "A"));
    module_xml("bench-rtt", &ports_a, &ports_b, &channels)
}

/// The module configuration of one (transport, size) queuing ping-pong: partitions A and B,
/// channels QPING (A→B) and QPONG (B→A) between queuing ports of [`QRTT_DEPTH`] messages.
pub fn queuing_rtt_module_xml(transport: &str, size: usize) -> String {
    let port = |name: &str, dir: &str| {
        format!(
            r#"    <Queuing_Port Name="{name}" MaxMessageSize="{size}" Direction="{dir}" MaxNbMessages="{QRTT_DEPTH}"/>
"#
        )
    };
    let chan = |id, name, src, dst| channel_xml(transport, id, name, src, dst);
    let ports_a = port("QPING", "SOURCE") + &port("QPONG", "DESTINATION");
    let ports_b = port("QPING", "DESTINATION") + &port("QPONG", "SOURCE");
    let channels = chan(1, "QPING", (1, "A"), (2, "B")) + &chan(2, "QPONG", (2, "B"), (1, "A"));
    module_xml("bench-qrtt", &ports_a, &ports_b, &channels)
}

/// Row of the raw UDP stream that the udp queuing port is compared with.
const RAW_UDP_QUEUE: &str = "raw UDP stream, credit 512";
/// Row of the raw TCP stream that the tcp queuing port is compared with.
const RAW_TCP_QUEUE: &str = "raw TCP stream, credit 512";
// The two rows' names say the credit.
const _: () = assert!(QUEUE_DEPTH == 512);

/// The module configuration of the queuing throughput: QOUT (A) → QIN (B) over `transport`.
pub fn queuing_module_xml(transport: &str) -> String {
    let ports_a = format!(
        r#"    <Queuing_Port Name="QOUT" MaxMessageSize="{QUEUE_MSG}" Direction="SOURCE" MaxNbMessages="{QUEUE_DEPTH}"/>
"#
    );
    let ports_b = format!(
        r#"    <Queuing_Port Name="QIN" MaxMessageSize="{QUEUE_MSG}" Direction="DESTINATION" MaxNbMessages="{QUEUE_DEPTH}"/>
"#
    );
    let attrs = transport_attrs(transport);
    let channels = format!(
        r#"    <Channel ChannelIdentifier="1" ChannelName="Q" {attrs}>
      <Source><Standard_Partition PartitionIdentifier="1" PartitionName="A" PortName="QOUT"/></Source>
      <Destination><Standard_Partition PartitionIdentifier="2" PartitionName="B" PortName="QIN"/></Destination>
    </Channel>
"#
    );
    module_xml("bench-queue", &ports_a, &ports_b, &channels)
}

fn module_xml(name: &str, ports_a: &str, ports_b: &str, channels: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<ARINC_653_Module xmlns:partix="urn:partix:config:1" ModuleName="{name}">
  <Partition PartitionIdentifier="1" PartitionName="A" partix:Executable="partix-rttpart">
{ports_a}  </Partition>
  <Partition PartitionIdentifier="2" PartitionName="B" partix:Executable="partix-rttpart">
{ports_b}  </Partition>
  <Module_Schedule ScheduleIdentifier="1" ScheduleName="s" InitialModuleSchedule="true" MajorFrameSeconds="0.02">
    <Partition_Schedule PartitionIdentifier="1" PartitionName="A" PeriodSeconds="0.02" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="1" WindowStartSeconds="0.0" WindowDurationSeconds="0.01" PartitionPeriodStart="true"/>
    </Partition_Schedule>
    <Partition_Schedule PartitionIdentifier="2" PartitionName="B" PeriodSeconds="0.02" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="2" WindowStartSeconds="0.01" WindowDurationSeconds="0.01" PartitionPeriodStart="true"/>
    </Partition_Schedule>
  </Module_Schedule>
  <Connection_Table>
{channels}  </Connection_Table>
</ARINC_653_Module>
"#
    )
}

/// Build the channel resources of `xml` (the executive's step before spawning partitions).
fn channels_of(xml: &str) -> Result<ChannelSet, String> {
    let module = partix_config::parse_str(xml, None).map_err(|e| format!("configuration: {e}"))?;
    ChannelSet::create(&module).map_err(|e| e.to_string())
}

/// Run a ping-pong between the two partitions of `xml`.
fn apex_pair(
    peer: &Peer,
    args: &RttArgs,
    xml: &str,
    kind: &str,
    size: usize,
    mode: &str,
) -> Result<String, String> {
    let set = channels_of(xml)?;
    if kind.starts_with("qapex") {
        let (a, b) = queue_pair_args(kind, args);
        // The receiver measures; the sender must run too: A (partition 1) sends, B receives.
        let (recv_p, send_p) = (1, 0);
        return run_pair(
            peer,
            End::partition(&a, &set, recv_p, &args.descriptor_table),
            End::partition(&b, &set, send_p, &args.descriptor_table),
            pair_timeout(args) + Duration::from_secs(30),
        );
    }
    let (a, b) = pair_args(kind, size, args, mode);
    run_pair(
        peer,
        End::partition(&a, &set, 0, &args.descriptor_table),
        End::partition(&b, &set, 1, &args.descriptor_table),
        pair_timeout(args),
    )
}

/// The two ends of a throughput class of `kind`: the receiver, which measures (`recv`, on the
/// first CPU of [`cpus`]), and the sender (`send`, on the second); `--queue-messages` each.
fn queue_pair_args(kind: &str, args: &RttArgs) -> (PeerArgs, PeerArgs) {
    let (mut recv, mut send) = pair_args(kind, QUEUE_MSG, args, "spin");
    recv.role = "recv".into();
    recv.iters = args.queue_messages;
    send.role = "send".into();
    send.iters = args.queue_messages;
    (recv, send)
}

fn raw_cache(peer: &Peer, args: &RttArgs) -> Result<String, String> {
    raw_shm_pair(peer, args, "cache", 8, 4096)
}

fn raw_copy(peer: &Peer, args: &RttArgs, size: usize) -> Result<String, String> {
    let len = crate::rttpeer::copy_region_len(size).div_ceil(4096) * 4096;
    raw_shm_pair(peer, args, "copy", size, len)
}

/// The raw futex ping-pong ([`RAW_FUTEX`]) in `mode` (park or block).
fn raw_futex(peer: &Peer, args: &RttArgs, size: usize, mode: &str) -> Result<String, String> {
    let len = crate::rttpeer::copy_region_len(size).div_ceil(4096) * 4096;
    let r = Region::create("partix-rtt-futex", len).map_err(|e| e.to_string())?;
    let (a, b) = pair_args("futex", size, args, mode);
    let fd = r.raw_fd();
    run_pair(peer, End::raw(&a, fd), End::raw(&b, fd), pair_timeout(args))
}

/// The one-sided protocol without the port layer (kind `slot`, or `slot-rw` with `writable`
/// readers).
fn raw_slot(peer: &Peer, args: &RttArgs, size: usize, writable: bool) -> Result<String, String> {
    raw_shm_pair(
        peer,
        args,
        if writable { "slot-rw" } else { "slot" },
        size,
        crate::rttpeer::slot_region_len(size),
    )
}

/// A raw pair of `kind` at `size` sharing a fresh memfd region of `len` bytes (descriptor
/// `PEER_FD` in both).
fn raw_shm_pair(
    peer: &Peer,
    args: &RttArgs,
    kind: &str,
    size: usize,
    len: usize,
) -> Result<String, String> {
    let r = Region::create(&format!("partix-rtt-{kind}"), len).map_err(|e| e.to_string())?;
    let (a, b) = pair_args(kind, size, args, "spin");
    let fd = r.raw_fd();
    run_pair(peer, End::raw(&a, fd), End::raw(&b, fd), pair_timeout(args))
}

fn udp_pair() -> Result<(UdpSocket, UdpSocket), String> {
    let e = |e: std::io::Error| format!("udp sockets: {e}");
    let sa = UdpSocket::bind("127.0.0.1:0").map_err(e)?;
    let sb = UdpSocket::bind("127.0.0.1:0").map_err(e)?;
    sa.connect(sb.local_addr().map_err(e)?).map_err(e)?;
    sb.connect(sa.local_addr().map_err(e)?).map_err(e)?;
    Ok((sa, sb))
}

fn tcp_pair() -> Result<(TcpStream, TcpStream), String> {
    let e = |e: std::io::Error| format!("tcp sockets: {e}");
    let l = TcpListener::bind("127.0.0.1:0").map_err(e)?;
    let sa = TcpStream::connect(l.local_addr().map_err(e)?).map_err(e)?;
    let (sb, _) = l.accept().map_err(e)?;
    Ok((sa, sb))
}

/// A raw socket ping-pong (`kind` `udp` / `tcp`: one socket pair both ways; `udp2` / `tcp2`: one
/// pair per direction, as two one-way channels are).
fn raw_socket(
    peer: &Peer,
    args: &RttArgs,
    kind: &str,
    size: usize,
    mode: &str,
) -> Result<String, String> {
    let pair = || -> Result<(OwnedFd, OwnedFd), String> {
        if kind.starts_with("udp") {
            udp_pair().map(|(a, b)| (a.into(), b.into()))
        } else {
            tcp_pair().map(|(a, b)| (a.into(), b.into()))
        }
    };
    let ping = pair()?;
    let pong;
    let (a, b) = pair_args(kind, size, args, mode);
    let (ea, eb) = if kind.ends_with('2') {
        pong = pair()?;
        // A sends on PING and receives on PONG; B the other way round.
        (
            End::raw2(&a, ping.0.as_raw_fd(), pong.0.as_raw_fd()),
            End::raw2(&b, pong.1.as_raw_fd(), ping.1.as_raw_fd()),
        )
    } else {
        (
            End::raw(&a, ping.0.as_raw_fd()),
            End::raw(&b, ping.1.as_raw_fd()),
        )
    };
    run_pair(peer, ea, eb, pair_timeout(args))
}

/// The raw socket stream that a udp or tcp queuing port is compared with (`kind` `qudp` /
/// `qtcp`): a socket pair made as the port's channel is (`socket_pair`: connected,
/// non-blocking, buffers for [`QUEUE_DEPTH`] frames), the same flow control, no framing.
fn raw_socket_queue(peer: &Peer, args: &RttArgs, kind: &str) -> Result<String, String> {
    let sk = if kind == "qudp" {
        SocketKind::Udp
    } else {
        SocketKind::Tcp
    };
    let (sa, sb) =
        socket_pair(sk, QUEUE_MSG as u32, QUEUE_DEPTH).map_err(|e| format!("socket pair: {e}"))?;
    let (a, b) = queue_pair_args(kind, args);
    run_pair(
        peer,
        End::raw(&a, sb.as_raw_fd()),
        End::raw(&b, sa.as_raw_fd()),
        pair_timeout(args) + Duration::from_secs(30),
    )
}

fn raw_queue(peer: &Peer, args: &RttArgs, kind: &str) -> Result<String, String> {
    let layout = RingLayout::new(QUEUE_DEPTH, QUEUE_MSG as u32).map_err(|e| e.to_string())?;
    let r = Arc::new(
        Region::create("partix-rtt-ring", layout.size_bytes()).map_err(|e| e.to_string())?,
    );
    layout.init(&r, 0).map_err(|e| e.to_string())?;
    let (a, b) = queue_pair_args(kind, args);
    let fd = r.raw_fd();
    run_pair(
        peer,
        End::raw(&a, fd),
        End::raw(&b, fd),
        pair_timeout(args) + Duration::from_secs(30),
    )
}

/// Where the built iceoryx2 example is, if anywhere.
fn find_iceoryx2() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PARTIX_ICEORYX2_RTT") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [
        dir.join("examples/iceoryx2_rtt"),
        dir.join("../examples/iceoryx2_rtt"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// Run the iceoryx2 example; return one recorder per size, and whether its two processes ran
/// under SCHED_FIFO (its `# fifo` and `# echo fifo` lines).
fn run_iceoryx2(
    exe: &Path,
    args: &RttArgs,
    size: usize,
) -> Result<(BTreeMap<usize, Recorder>, FifoEnds), String> {
    let mut child = Command::new(exe)
        .args([
            "--sizes",
            &size.to_string(),
            "--iters",
            &args.iters.to_string(),
            "--warmup",
            &args.warmup.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let out = read_all(child.stdout.take().expect("piped"));
    let err = read_all(child.stderr.take().expect("piped"));
    let deadline = Instant::now() + pair_timeout(args) * (args.sizes.len() as u32).max(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    match status {
        Some(s) if s.success() => {}
        Some(s) => return Err(format!("iceoryx2_rtt exited with {s}: {}", err.trim())),
        None => {
            return Err(format!(
                "iceoryx2_rtt gave no result in time: {}",
                err.trim()
            ))
        }
    }
    let mut by_size: BTreeMap<usize, Recorder> = BTreeMap::new();
    for l in out.lines() {
        let mut f = l.split_whitespace();
        if let (Some(s), Some(v)) = (f.next(), f.next()) {
            if let (Ok(s), Ok(v)) = (s.parse::<usize>(), v.parse::<u64>()) {
                by_size.entry(s).or_default().record(v);
            }
        }
    }
    Ok((by_size, FifoEnds::of(&out)))
}

/// One measured class (or why it could not be measured).
#[derive(Debug, Clone)]
pub struct Class {
    /// e.g. `one-sided`, `raw UDP`.
    pub name: String,
    /// `spin` or `block`.
    pub mode: String,
    /// Message size in bytes.
    pub size: usize,
    /// The samples, or why there are none.
    pub result: Result<Recorder, String>,
    /// Voluntary context switches of the measuring thread per measured round trip (whether its
    /// waits slept in the kernel), when the peer reported them.
    pub switches_per_round: Option<f64>,
    /// The same for the echo side's waiting thread.
    pub echo_switches_per_round: Option<f64>,
    /// The p50 of each round (ns), in round order.
    pub round_p50: Vec<u64>,
    /// The p99 of each round (ns), in round order.
    pub round_p99: Vec<u64>,
    /// Its peer processes that ran under SCHED_FIFO, and that were refused it (over the rounds).
    pub fifo: FifoEnds,
}

/// A queuing-throughput class: messages per second, over the rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueRate {
    /// The median of the rounds' rates.
    pub median: f64,
    /// The slowest round.
    pub min: f64,
    /// The fastest round.
    pub max: f64,
    /// How many rounds.
    pub rounds: usize,
}

impl QueueRate {
    fn of(v: Vec<f64>) -> QueueRate {
        let rounds = v.len();
        let s = Spread::any(v).unwrap_or(Spread {
            median: 0.0,
            lo: 0.0,
            hi: 0.0,
        });
        QueueRate {
            median: s.median,
            min: s.lo,
            max: s.hi,
            rounds,
        }
    }
}

/// The raw UDP baseline with one socket pair per direction.
pub const RAW_UDP2: &str = "raw UDP 2 pairs";
/// The raw TCP baseline with one connection per direction.
pub const RAW_TCP2: &str = "raw TCP 2 conns";
/// The raw UDP baseline (one socket pair both ways) between peers that have a second, idle
/// thread, as a partition always has: the kernel then takes a file reference in every socket
/// call (the file table is shared), which a single-threaded peer skips. Spin class only.
pub const RAW_UDP_MT: &str = "raw UDP, threaded peers";

/// Whether `t` is a socket transport (compared with raw sockets, not shared memory).
fn is_socket(t: &str) -> bool {
    t == "udp" || t == "tcp"
}

/// A statistic over the rounds of a size (a ratio or a difference of their p50s).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Spread {
    median: f64,
    lo: f64,
    hi: f64,
}

impl Spread {
    /// Median and range of two or more values (`None` with fewer: no spread to show).
    fn of(v: Vec<f64>) -> Option<Spread> {
        if v.len() < 2 {
            return None;
        }
        Spread::any(v)
    }

    /// Median and range of one or more values.
    fn any(mut v: Vec<f64>) -> Option<Spread> {
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            lo: v[0],
            hi: v[n - 1],
        })
    }

    /// `; rounds: median +0.31 µs, +0.20…+0.45` (differences in µs), or nothing.
    fn diff_text(s: Option<Spread>) -> String {
        s.map_or(String::new(), |s| {
            format!(
                "; rounds: median {:+.2} µs, {:+.2}…{:+.2}",
                s.median, s.lo, s.hi
            )
        })
    }

    /// ` (rounds: median 1.71x, 1.60–1.93x)`, or nothing.
    fn ratio_text(s: Option<Spread>) -> String {
        s.map_or(String::new(), |s| {
            format!(
                " (rounds: median {:.2}x, {:.2}–{:.2}x)",
                s.median, s.lo, s.hi
            )
        })
    }
}

/// What one launch of a class measured: its samples, the voluntary context switches of the
/// measuring thread and of the echo side's waiting thread, where the peers reported them, and
/// whether the ends ran under SCHED_FIFO.
type Samples = (Recorder, Switches, FifoEnds);

/// Voluntary context switches during the measured round trips: (measuring side, echo side).
type Switches = (Option<u64>, Option<u64>);

/// Peer processes (ends, over the rounds) that reported running under SCHED_FIFO, and that
/// reported it refused (`# fifo 1` / `# fifo 0`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FifoEnds {
    /// Ends under SCHED_FIFO.
    pub on: u32,
    /// Ends whose SCHED_FIFO was refused.
    pub off: u32,
}

impl FifoEnds {
    /// Count the `# fifo F` and `# echo fifo F` lines of a pair's output.
    fn of(out: &str) -> FifoEnds {
        let mut f = FifoEnds::default();
        for l in out.lines() {
            match l
                .strip_prefix("# fifo ")
                .or_else(|| l.strip_prefix("# echo fifo "))
                .map(str::trim)
            {
                Some("1") => f.on += 1,
                Some("0") => f.off += 1,
                _ => {}
            }
        }
        f
    }

    fn add(&mut self, o: FifoEnds) {
        self.on += o.on;
        self.off += o.off;
    }

    /// What was applied, for the report's header: `SCHED_FIFO <prio>`, that it was refused, or
    /// in how many ends.
    fn text(self, prio: i32) -> String {
        match (self.on, self.off) {
            (0, 0) => format!("SCHED_FIFO {prio} asked (no end reported whether it applied)"),
            (_, 0) => format!("SCHED_FIFO {prio}"),
            (0, _) => {
                format!("SCHED_OTHER: SCHED_FIFO {prio} was refused (not root, no CAP_SYS_NICE)")
            }
            (on, off) => format!(
                "SCHED_FIFO {prio} in {on} of {} processes (refused in the others)",
                on + off
            ),
        }
    }
}

/// Parse a peer's output into [`Samples`].
fn samples_of(r: Result<String, String>) -> Result<Samples, String> {
    let out = r?;
    let count = |prefix: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let switches = (count("# nvcsw "), count("# echo nvcsw "));
    let rec = parse_samples(&out);
    if rec.is_empty() {
        return Err("the measuring end printed no sample".to_string());
    }
    Ok((rec, switches, FifoEnds::of(&out)))
}

/// A class's rounds so far.
struct Acc {
    result: Result<Recorder, String>,
    switches: Option<u64>,
    echo_switches: Option<u64>,
    round_p50: Vec<u64>,
    round_p99: Vec<u64>,
    fifo: FifoEnds,
}

impl Acc {
    /// Pool one round into the class (a failed round fails the class).
    fn add(&mut self, r: Result<Samples, String>) {
        let Ok(pooled) = &mut self.result else {
            return;
        };
        match r {
            Ok((rec, (sw, echo), fifo)) => {
                self.fifo.add(fifo);
                let sum = rec.summary("");
                self.round_p50.push(sum.p50);
                self.round_p99.push(sum.p99);
                pooled.merge(&rec);
                // A count is kept only while every round reported it.
                let first = self.round_p50.len() == 1;
                let add = |acc: Option<u64>, s: Option<u64>| match (acc, s) {
                    (None, s) if first => s,
                    (Some(a), Some(b)) => Some(a + b),
                    _ => None,
                };
                self.switches = add(self.switches, sw);
                self.echo_switches = add(self.echo_switches, echo);
            }
            Err(e) => self.result = Err(e),
        }
    }
}

/// Run one round of a class with the round's arguments.
type RunFn<'a> = Box<dyn Fn(&RttArgs) -> Result<Samples, String> + 'a>;

/// One class of a message size, run once per round.
struct Job<'a> {
    name: String,
    mode: String,
    size: usize,
    /// Whether it runs partitions (its failure marks the transport unavailable).
    apex: bool,
    run: RunFn<'a>,
    acc: Acc,
}

impl<'a> Job<'a> {
    fn new(
        name: &str,
        mode: &str,
        size: usize,
        run: impl Fn(&RttArgs) -> Result<Samples, String> + 'a,
    ) -> Job<'a> {
        Job {
            name: name.into(),
            mode: mode.into(),
            size,
            apex: false,
            run: Box::new(run),
            acc: Acc {
                result: Ok(Recorder::new()),
                switches: None,
                echo_switches: None,
                round_p50: Vec::new(),
                round_p99: Vec::new(),
                fifo: FifoEnds::default(),
            },
        }
    }

    fn into_class(self) -> Class {
        let per_round = |n: Option<u64>| match (&self.acc.result, n) {
            (Ok(rec), Some(n)) => Some(n as f64 / rec.len().max(1) as f64),
            _ => None,
        };
        let switches_per_round = per_round(self.acc.switches);
        let echo_switches_per_round = per_round(self.acc.echo_switches);
        Class {
            name: self.name,
            mode: self.mode,
            size: self.size,
            result: self.acc.result,
            switches_per_round,
            echo_switches_per_round,
            round_p50: self.acc.round_p50,
            round_p99: self.acc.round_p99,
            fifo: self.acc.fifo,
        }
    }
}

impl Class {
    fn label(&self) -> String {
        format!("{} {} {} B", self.name, self.mode, self.size)
    }
}

/// Everything `partix bench rtt` measured, and the report text.
#[derive(Debug, Default)]
pub struct RttReport {
    /// Every class.
    pub classes: Vec<Class>,
    /// Throughput classes: (name, messages per second or why not).
    pub queue: Vec<(String, Result<QueueRate, String>)>,
    /// Throughput classes: (name, whether their processes ran under SCHED_FIFO).
    pub queue_fifo: Vec<(String, FifoEnds)>,
    /// The report printed on stdout.
    pub text: String,
    /// Targets met / missed / not judged (a baseline missing, or a udp block class or its raw
    /// baseline whose waits slept in at most half of its round trips; the targets of a
    /// `--gap-us` run are stated but not counted).
    pub targets: (u32, u32, u32),
}

impl RttReport {
    fn class(&self, name: &str, mode: &str, size: usize) -> Option<&Class> {
        self.classes
            .iter()
            .find(|c| c.name == name && c.mode == mode && c.size == size && c.result.is_ok())
    }

    /// `f` of the per-round p50s of `name` and `base` (`None`: a class's own p50s), paired by
    /// round; `None` with fewer than two rounds.
    fn rounds(
        &self,
        name: (&str, &str),
        base: Option<(&str, &str)>,
        size: usize,
        f: impl Fn(u64, u64) -> f64,
    ) -> Option<Spread> {
        let a = self.class(name.0, name.1, size)?;
        let v: Vec<f64> = match base {
            Some((n, m)) => {
                let b = self.class(n, m, size)?;
                a.round_p50
                    .iter()
                    .zip(&b.round_p50)
                    .map(|(&x, &y)| f(x, y))
                    .collect()
            }
            None => a.round_p50.iter().map(|&x| f(x, 0)).collect(),
        };
        Spread::of(v)
    }

    /// The per-round p99s of a class.
    fn rounds_p99(&self, name: &str, mode: &str, size: usize) -> Option<Spread> {
        let c = self.class(name, mode, size)?;
        Spread::of(c.round_p99.iter().map(|&x| x as f64).collect())
    }

    fn get(&self, name: &str, mode: &str, size: usize) -> Option<&Recorder> {
        self.classes
            .iter()
            .find(|c| c.name == name && c.mode == mode && c.size == size)
            .and_then(|c| c.result.as_ref().ok())
    }
}

fn progress(step: &mut usize, total: usize, what: &str) {
    *step += 1;
    eprintln!("[{step}/{total}] {what}");
}

/// Measure every class of `args`, then build the report (nothing printed on stdout).
///
/// # Errors
/// Bad arguments; a class that cannot run is reported in its row instead.
pub fn measure(args: &RttArgs) -> anyhow::Result<RttReport> {
    if args.sizes.is_empty() || args.sizes.iter().any(|&s| s < 8) {
        bail!("--sizes: at least one size, each at least 8 bytes (the sequence number)");
    }
    if args.iters == 0 {
        bail!("--iters: at least 1");
    }
    for t in &args.transports {
        if !TRANSPORTS.contains(&t.as_str()) {
            bail!("--transports: unknown transport {t:?} (one of {TRANSPORTS:?})");
        }
    }
    for m in &args.modes {
        if !MODES.contains(&m.as_str()) {
            bail!("--modes: unknown mode {m:?} (one of {MODES:?})");
        }
    }
    let peer = &find_peer(args)?;
    let mut rep = RttReport::default();
    // The busy-waiting baselines (cache line, copy, iceoryx2) serve the spin and poll classes.
    let spin = args.modes.iter().any(|m| m == "spin" || m == "poll");
    // Not with --gap-us: the example runs back to back, and its rows would be compared with
    // sporadic round trips (found by review).
    let ice = if args.no_iceoryx2 || !spin || args.gap_us > 0 {
        None
    } else {
        find_iceoryx2()
    };
    let n_sizes = args.sizes.len();
    let n_modes = args.modes.len();
    let spin_mode = args.modes.iter().any(|m| m == "spin");
    // The raw socket peers have no `poll` class (a non-blocking `recv` loop is their `spin`): a
    // poll class is compared with their spin rows, which run when poll is asked for even if spin
    // is not (as the busy-waiting shared-memory baselines do).
    let raw_socket_mode = |mode: &str| -> Option<String> {
        match mode {
            "poll" if spin_mode => None,
            "poll" => Some("spin".into()),
            m => Some(m.into()),
        }
    };
    let n_raw_modes = args
        .modes
        .iter()
        .filter(|m| raw_socket_mode(m).is_some())
        .count();
    // The raw futex baseline runs in the classes that sleep.
    let sleeping = |mode: &str| mode == "park" || mode == "block";
    let n_futex_modes = args.modes.iter().filter(|m| sleeping(m)).count();
    let batched = args.transports.iter().any(|t| t == "one-sided");
    let one_sided = batched;
    // The raw ring rows of the queuing throughput (`qraw`, `qrawb`, `qrawk`, `qrawf`, `qraws`).
    const RAW_QUEUE_ROWS: usize = 5;
    // Spin baselines: raw cache-line, raw copy, and with one-sided the two raw slots.
    let total = usize::from(spin) * (2 + 2 * usize::from(one_sided)) * n_sizes
        + n_sizes * n_futex_modes
        + n_sizes * n_raw_modes * 4
        + usize::from(spin_mode) * n_sizes
        + n_sizes
            * args.transports.len()
            * n_modes
            * (1 + usize::from(args.queuing_rtt) + usize::from(args.c_api))
        + usize::from(ice.is_some()) * n_sizes
        + if args.queue_messages > 0 {
            let socket_rows = args
                .transports
                .iter()
                .filter(|t| *t == "udp" || *t == "tcp")
                .count();
            RAW_QUEUE_ROWS + socket_rows + args.transports.len() + usize::from(batched)
        } else {
            0
        };
    let rounds = args.rounds.max(1);
    // Every launch measures its share of the round trips (and warms up in full).
    let per_round = RttArgs {
        iters: args.iters.div_ceil(rounds),
        ..args.clone()
    };
    let total = total * rounds as usize;
    let mut step = 0;
    // One size at a time, its baselines next to its port classes and iceoryx2, in `rounds`
    // rounds whose order alternates (A B C, C B A, ...): this VM has phases (the raw cache-line
    // round trip is 0.19 µs in some, 0.55–0.70 µs in others, switching within seconds), so a
    // baseline measured far from the class it is compared with gives a ratio of two different
    // machines; alternating rounds expose every class of a size to the same phases, and the
    // per-round ratios show how much a verdict owes to them.
    let mut unavailable: BTreeMap<(String, String), String> = BTreeMap::new();
    for &size in &args.sizes {
        let mut jobs: Vec<Job<'_>> = Vec::new();
        if spin {
            jobs.push(Job::new("raw cache-line", "spin", size, move |a| {
                samples_of(raw_cache(peer, a))
            }));
            jobs.push(Job::new("raw copy", "spin", size, move |a| {
                samples_of(raw_copy(peer, a, size))
            }));
            if one_sided {
                jobs.push(Job::new(RAW_SLOT, "spin", size, move |a| {
                    samples_of(raw_slot(peer, a, size, false))
                }));
                jobs.push(Job::new(RAW_SLOT_RW, "spin", size, move |a| {
                    samples_of(raw_slot(peer, a, size, true))
                }));
            }
        }
        // Each port class sits next to its baseline: shared memory (raw cache-line, raw copy,
        // then per mode raw futex for park and block, one-sided, two-sided; iceoryx2), then per
        // mode raw UDP and udp, raw TCP and tcp.
        // `queuing`: the same ping-pong through queuing ports (class `<transport> queuing`).
        // `c_api`: the sampling ping-pong through the C API (class `<transport> (C API)`).
        let port_job = |t: &str, mode: &str, queuing: bool, c_api: bool| {
            let name = if queuing {
                format!("{t} queuing")
            } else if c_api {
                format!("{t} {C_API}")
            } else {
                t.to_string()
            };
            let mut job = Job::new(&name, mode, size, {
                let (t, m) = (t.to_string(), mode.to_string());
                move |a: &RttArgs| {
                    let (xml, kind) = if queuing {
                        (queuing_rtt_module_xml(&t, size), "qrtt")
                    } else if c_api {
                        (sampling_module_xml(&t, size), "apexc")
                    } else {
                        (sampling_module_xml(&t, size), "apex")
                    };
                    samples_of(apex_pair(peer, a, &xml, kind, size, &m))
                }
            });
            job.apex = true;
            // A transport this build refuses (or a class that hangs) fails the same way at
            // every size: do not wait for it again.
            if let Some(e) = unavailable.get(&(name, mode.to_string())) {
                job.acc.result = Err(e.clone());
            }
            job
        };
        let apex_jobs = |t: &str, mode: &str| {
            let mut v = vec![port_job(t, mode, false, false)];
            if args.queuing_rtt {
                v.push(port_job(t, mode, true, false));
            }
            if args.c_api {
                v.push(port_job(t, mode, false, true));
            }
            v
        };
        for mode in &args.modes {
            // The park and block classes of the shared-memory transports sit next to the raw
            // futex ping-pong of their mode (the spin and poll classes next to the raw
            // cache-line and copy above).
            if sleeping(mode) {
                let m = mode.clone();
                jobs.push(Job::new(RAW_FUTEX, mode, size, move |a| {
                    samples_of(raw_futex(peer, a, size, &m))
                }));
            }
            for t in args.transports.iter().filter(|t| !is_socket(t)) {
                jobs.extend(apex_jobs(t, mode));
            }
        }
        if let Some(exe) = &ice {
            let exe = exe.clone();
            jobs.push(Job::new("iceoryx2", "spin", size, move |a| {
                run_iceoryx2(&exe, a, size).and_then(|(mut by, fifo)| {
                    by.remove(&size)
                        .map(|r| (r, (None, None), fifo))
                        .ok_or_else(|| "no samples for this size".to_string())
                })
            }));
        }
        for (raw, raw2, t) in [("raw UDP", RAW_UDP2, "udp"), ("raw TCP", RAW_TCP2, "tcp")] {
            for mode in &args.modes {
                if let Some(rm) = raw_socket_mode(mode) {
                    let m = rm.clone();
                    jobs.push(Job::new(raw, &rm, size, move |a| {
                        samples_of(raw_socket(peer, a, t, size, &m))
                    }));
                    let m = rm.clone();
                    jobs.push(Job::new(raw2, &rm, size, move |a| {
                        samples_of(raw_socket(peer, a, &format!("{t}2"), size, &m))
                    }));
                }
                if t == "udp" && mode == "spin" {
                    jobs.push(Job::new(RAW_UDP_MT, mode, size, move |a| {
                        samples_of(raw_socket(peer, a, "udpmt", size, "spin"))
                    }));
                }
                if args.transports.iter().any(|x| x == t) {
                    jobs.extend(apex_jobs(t, mode));
                }
            }
        }
        for round in 0..rounds {
            let order: Vec<usize> = if round % 2 == 0 {
                (0..jobs.len()).collect()
            } else {
                (0..jobs.len()).rev().collect()
            };
            for i in order {
                let job = &mut jobs[i];
                progress(
                    &mut step,
                    total,
                    &format!(
                        "{} {} {size} B{}, round {}/{rounds}",
                        job.name,
                        job.mode,
                        if job.apex { " (partitions)" } else { "" },
                        round + 1
                    ),
                );
                if job.acc.result.is_err() {
                    continue;
                }
                let r = (job.run)(&per_round);
                job.acc.add(r);
                if let (true, Err(e)) = (job.apex, &job.acc.result) {
                    eprintln!("    {} {} {size} B: not available: {e}", job.name, job.mode);
                    unavailable.insert(
                        (job.name.clone(), job.mode.clone()),
                        format!("not run, {size} B failed: {e}"),
                    );
                } else if let Err(e) = &job.acc.result {
                    eprintln!("    {} {} {size} B: not available: {e}", job.name, job.mode);
                }
            }
        }
        for job in jobs {
            rep.classes.push(job.into_class());
        }
    }
    if args.queue_messages > 0 {
        let rate = |r: Result<String, String>| -> Result<(f64, FifoEnds), String> {
            let out = r?;
            out.lines()
                .find_map(|l| l.strip_prefix("rate ").and_then(|v| v.trim().parse().ok()))
                .map(|r| (r, FifoEnds::of(&out)))
                .ok_or_else(|| "the receiver printed no rate".into())
        };
        type QueueJob<'a> = (String, Box<dyn Fn() -> Result<String, String> + 'a>);
        // RAW_QUEUE_ROWS of them (the progress total counts on it).
        let mut qjobs: Vec<QueueJob<'_>> = vec![
            (
                "raw SPSC ring".into(),
                Box::new(|| raw_queue(peer, args, "qraw")),
            ),
            (
                format!("raw SPSC ring, batches of {QUEUE_BATCH}"),
                Box::new(|| raw_queue(peer, args, "qrawb")),
            ),
            (
                format!("raw SPSC ring, consumer backoff {QUEUE_BACKOFF}"),
                Box::new(|| raw_queue(peer, args, "qrawk")),
            ),
            (
                "raw SPSC ring, fence per push".into(),
                Box::new(|| raw_queue(peer, args, "qrawf")),
            ),
            (
                format!("raw SPSC ring, {QUEUE_EXTRA_STORES} stack stores per push"),
                Box::new(|| raw_queue(peer, args, "qraws")),
            ),
        ];
        debug_assert_eq!(qjobs.len(), RAW_QUEUE_ROWS);
        // The socket transports' own baselines (one row each, counted in the total with
        // `socket_rows`).
        for (t, kind, name) in [
            ("udp", "qudp", RAW_UDP_QUEUE),
            ("tcp", "qtcp", RAW_TCP_QUEUE),
        ] {
            if args.transports.iter().any(|x| x == t) {
                qjobs.push((
                    name.into(),
                    Box::new(move || raw_socket_queue(peer, args, kind)),
                ));
            }
        }
        for t in &args.transports {
            let t = t.clone();
            qjobs.push((
                format!("{t} queuing port"),
                Box::new(move || {
                    apex_pair(
                        peer,
                        args,
                        &queuing_module_xml(&t),
                        "qapex",
                        QUEUE_MSG,
                        "spin",
                    )
                }),
            ));
        }
        if batched {
            qjobs.push((
                format!("one-sided queuing port, batches of {QUEUE_BATCH}"),
                Box::new(|| {
                    apex_pair(
                        peer,
                        args,
                        &queuing_module_xml("one-sided"),
                        "qapexb",
                        QUEUE_MSG,
                        "spin",
                    )
                }),
            ));
        }
        let mut rates: Vec<Result<Vec<f64>, String>> = vec![Ok(Vec::new()); qjobs.len()];
        let mut fifo = vec![FifoEnds::default(); qjobs.len()];
        for round in 0..rounds {
            let order: Vec<usize> = if round % 2 == 0 {
                (0..qjobs.len()).collect()
            } else {
                (0..qjobs.len()).rev().collect()
            };
            for i in order {
                progress(
                    &mut step,
                    total,
                    &format!("queue: {}, 64 B, round {}/{rounds}", qjobs[i].0, round + 1),
                );
                let Ok(v) = &mut rates[i] else { continue };
                match rate((qjobs[i].1)()) {
                    Ok((r, f)) => {
                        v.push(r);
                        fifo[i].add(f);
                    }
                    Err(e) => rates[i] = Err(e),
                }
            }
        }
        for (((name, _), r), f) in qjobs.into_iter().zip(rates).zip(fifo) {
            rep.queue_fifo.push((name.clone(), f));
            rep.queue.push((name, r.map(QueueRate::of)));
        }
    }
    let (text, tally) = render(args, &rep, ice.is_some());
    rep.text = text;
    rep.targets = tally;
    Ok(rep)
}

/// Targets met, missed and not judged so far; `skip`: judge none now (they are stated for
/// back-to-back round trips, and a `--gap-us` run is not that; such targets are not counted).
#[derive(Debug, Default)]
struct Tally {
    met: u32,
    missed: u32,
    not_judged: u32,
    skip: bool,
}

/// The targets of the issue, as the report names them.
const T_CACHE: &str = "p50 ≤ 1.6x raw cache-line";
const T_P99: &str = "p99 ≤ 700 ns";
const T_4K: &str = "4 KiB p50 ≤ 2 µs";
const T_ICE: &str = "≤ 0.6x iceoryx2";
const T_TWO: &str = "≤ 2x one-sided";
const T_UDP: &str = "p50 ≤ raw UDP + 0.3 µs";
const T_QUEUE: &str = "≥ 30 M msg/s";

/// The targets of transport `t`'s sampling class in `mode` at `size`: one-sided spin ≤ 56 B
/// p50 and p99, one-sided spin 4 KiB p50, one-sided spin against iceoryx2 (unless the run
/// skips iceoryx2), two-sided against one-sided in every mode, udp against raw UDP in spin and
/// block.
fn class_targets(t: &str, mode: &str, size: usize, iceoryx2: bool) -> Vec<&'static str> {
    let mut v = Vec::new();
    match (t, mode) {
        ("one-sided", "spin") => {
            if size <= 56 {
                v.extend([T_CACHE, T_P99]);
            }
            if size == 4096 {
                v.push(T_4K);
            }
            if iceoryx2 {
                v.push(T_ICE);
            }
        }
        ("two-sided" | TWO_SIDED_MANAGER, _) => v.push(T_TWO),
        ("udp", "spin" | "block") => v.push(T_UDP),
        _ => {}
    }
    v
}

/// One target line: `[target ...: met]`, counted into `tally` (or `not judged` while
/// `tally.skip`).
fn target(tally: &mut Tally, desc: &str, ok: bool, detail: &str) -> String {
    if tally.skip {
        return format!("[target {desc}: not judged with --gap-us]");
    }
    if ok {
        tally.met += 1;
    } else {
        tally.missed += 1;
    }
    format!(
        "[target {desc}: {}{}]",
        if ok { "met" } else { "MISSED" },
        if detail.is_empty() {
            String::new()
        } else {
            format!(", {detail}")
        }
    )
}

impl Tally {
    /// `[target ...: not judged, <why>]`, counted as not judged (or not judged with `--gap-us`
    /// while `skip`).
    fn not_judged(&mut self, desc: &str, why: &str) -> String {
        if self.skip {
            return format!("[target {desc}: not judged with --gap-us]");
        }
        self.not_judged += 1;
        format!("[target {desc}: not judged, {why}]")
    }

    /// A target whose baseline has no result: not judged.
    fn no_baseline(&mut self, desc: &str) -> String {
        self.not_judged(desc, "baseline missing")
    }

    /// A target whose measured class has no result (it failed): missed.
    fn unavailable(&mut self, desc: &str) -> String {
        if self.skip {
            return format!("[target {desc}: not judged with --gap-us]");
        }
        self.missed += 1;
        format!("[target {desc}: MISSED, class not available]")
    }
}

/// Voluntary context switches per round trip below which a side's waits "did not sleep": each
/// side waits once per round trip, and a wait that sleeps switches once, so this is the share of
/// its waits that slept; under one in twenty (a timer tick, a page fault now and then) the
/// class is a spin.
pub const SLEPT_NONE: f64 = 0.05;

/// Voluntary context switches per round trip above which more than half of a side's waits
/// slept: only then is the class's p50 the round trip of a wait that slept, which is what a
/// block-class target judged on the p50 compares (at 0.47 the p50 is a wait that spun).
pub const SLEPT_MOST: f64 = 0.5;

/// The share of waits that slept, in percent, from voluntary context switches per round trip
/// (one wait per round trip and side; a wait that slept more than once counts once).
fn slept_pct(v: f64) -> f64 {
    (v * 100.0).clamp(0.0, 100.0)
}

/// The note after a park or block class's context switches (`v` on the measuring side, `echo`
/// on the other): how many of its waits slept ("did not sleep" below [`SLEPT_NONE`]).
fn wait_note(mode: &str, v: f64, echo: Option<f64>) -> String {
    match mode {
        "block" if v < SLEPT_NONE => " (its waits did not sleep: this is a spin)".into(),
        "block" if v <= SLEPT_MOST => format!(
            " (it slept in {:.0} % of its waits: its p50 is a wait that did not sleep)",
            slept_pct(v)
        ),
        "block" => format!(" (it slept in {:.0} % of its waits)", slept_pct(v)),
        "park" => {
            let mut parked = Vec::new();
            if v >= SLEPT_NONE {
                parked.push(format!("it parked in {:.0} % of its waits", slept_pct(v)));
            }
            if let Some(e) = echo.filter(|&e| e >= SLEPT_NONE) {
                parked.push(format!(
                    "the echo side parked in {:.0} % of its waits",
                    slept_pct(e)
                ));
            }
            if parked.is_empty() {
                " (the messages came within the spins)".into()
            } else {
                format!(
                    " ({}: those messages came after the spins)",
                    parked.join(", ")
                )
            }
        }
        _ => String::new(),
    }
}

/// Why the udp target cannot be judged in the block class of `size`, if it cannot: it compares
/// two waits that sleep in the kernel on their p50s, so more than half the waits of both the
/// udp port's and raw UDP's measuring side must have slept (more than [`SLEPT_MOST`] voluntary
/// context switches per round trip); otherwise a p50 is a wait that spun, a spin-class number.
fn udp_block_unjudged(rep: &RttReport, size: usize) -> Option<String> {
    let switches = |name: &str| {
        rep.class(name, "block", size)
            .and_then(|c| c.switches_per_round)
    };
    match (switches("udp"), switches("raw UDP")) {
        (Some(u), Some(r)) if u > SLEPT_MOST && r > SLEPT_MOST => None,
        (Some(u), Some(r)) => Some(format!(
            "the udp port slept in {:.0} % of its waits, raw UDP in {:.0} % (more than half \
             needed: the target is on the p50)",
            slept_pct(u),
            slept_pct(r)
        )),
        (None, _) => Some("the udp port reported no context switches".into()),
        (_, None) => Some("raw UDP reported no context switches".into()),
    }
}

/// Whether the peers ran under SCHED_FIFO, as they reported it: (raw peers and iceoryx2, the
/// partitions' processes), over every class and throughput class.
fn fifo_applied(rep: &RttReport) -> (FifoEnds, FifoEnds) {
    let (mut raw, mut part) = (FifoEnds::default(), FifoEnds::default());
    let is_raw = |name: &str| name.starts_with("raw") || name == "iceoryx2";
    let classes = rep.classes.iter().map(|c| (c.name.as_str(), c.fifo));
    let queues = rep.queue_fifo.iter().map(|(n, f)| (n.as_str(), *f));
    for (name, f) in classes.chain(queues) {
        if is_raw(name) {
            raw.add(f);
        } else {
            part.add(f);
        }
    }
    (raw, part)
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        a as f64 / b as f64
    }
}

fn render(args: &RttArgs, rep: &RttReport, ice_built: bool) -> (String, (u32, u32, u32)) {
    let mut o = String::new();
    let mut tally = Tally {
        skip: args.gap_us > 0,
        ..Tally::default()
    };
    let _ = writeln!(
        o,
        "# partix bench rtt: sampling-port round trips (paper fig. 2)"
    );
    let _ = writeln!(o, "{}", machine_line());
    let (c0, c1) = cpus();
    // What the peers reported (`# fifo`), not what they asked for.
    let (raw_fifo, part_fifo) = fifo_applied(rep);
    let _ = writeln!(
        o,
        "ping-pong between two processes pinned to CPU {c0} and CPU {c1}; {} measured round trips per class, in {} rounds \
         of alternating order per size, each after {} warm-up; raw peers at {}, partition processes' APEX process at priority {} ({})",
        args.iters.div_ceil(args.rounds.max(1)) * args.rounds.max(1),
        args.rounds.max(1),
        args.warmup,
        raw_fifo.text(crate::rttpeer::PEER_FIFO),
        crate::rttpeer::APEX_PRIORITY,
        part_fifo.text(crate::rttpeer::APEX_PRIORITY + 1)
    );
    let _ = writeln!(
        o,
        "partition processes' descriptor tables: {} (partix:DescriptorTable; `--descriptor-table {}` for the other)",
        args.descriptor_table,
        if args.descriptor_table == "shared" { "per-process" } else { "shared" }
    );
    if args.gap_us > 0 {
        let _ = writeln!(
            o,
            "gap: the measuring side sleeps {} µs before every round trip (not timed); the other side waits that long for each message",
            args.gap_us
        );
    }
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        let _ = writeln!(o, "load average at the end: {}", l.trim());
    }
    if args.gap_us > 0 && !args.no_iceoryx2 {
        let _ = writeln!(
            o,
            "iceoryx2: not run with --gap-us (its example runs its round trips back to back)"
        );
    } else if !ice_built && !args.no_iceoryx2 {
        let _ = writeln!(
            o,
            "iceoryx2: not built; build it with `cargo build --release -p partix-bench --examples` \
             (or set PARTIX_ICEORYX2_RTT to the example's path)"
        );
    }
    for mode in &args.modes {
        for &size in &args.sizes {
            let _ = writeln!(o);
            let _ = writeln!(o, "## {mode}, {size} B");
            let _ = writeln!(o, "{}", header());
            // The poll table shows the busy-waiting baselines (spin rows) too.
            let baseline = |c: &Class| c.name.starts_with("raw") || c.name == "iceoryx2";
            let rows = rep.classes.iter().filter(|c| {
                c.size == size
                    && (&c.mode == mode || (mode == "poll" && c.mode == "spin" && baseline(c)))
            });
            for c in rows {
                match &c.result {
                    Ok(r) => {
                        let _ = writeln!(o, "{}", r.summary(&c.label()).row());
                    }
                    Err(e) => {
                        let _ = writeln!(o, "{:<34} not available: {e}", c.label());
                    }
                }
            }
            // Did the block (park) class sleep? A park wait sleeps only when the message comes
            // after its spins: with back-to-back round trips it spins (~0 switches).
            if mode == "block" || mode == "park" {
                for c in rep
                    .classes
                    .iter()
                    .filter(|c| &c.mode == mode && c.size == size)
                {
                    if let Some(v) = c.switches_per_round {
                        let echo = c
                            .echo_switches_per_round
                            .map_or(String::new(), |e| format!(", {e:.2} on the echo side"));
                        let note = wait_note(mode, v, c.echo_switches_per_round);
                        let _ = writeln!(
                            o,
                            "  {}: {v:.2} voluntary context switches per round trip on the measuring side{echo}{note}",
                            c.label(),
                        );
                    }
                }
            }
            // Ratios and targets (targets are judged on the spin class, and udp's also on block).
            let s = |name: &str| {
                let m = if name.starts_with("raw") && mode == "poll" {
                    "spin"
                } else {
                    mode.as_str()
                };
                rep.get(name, m, size).map(|r| r.summary(name))
            };
            let ice = rep
                .get("iceoryx2", "spin", size)
                .map(|r| r.summary("iceoryx2"));
            let cache = rep
                .get("raw cache-line", "spin", size)
                .map(|r| r.summary("raw cache-line"));
            let copy = rep
                .get("raw copy", "spin", size)
                .map(|r| r.summary("raw copy"));
            let slot = rep.get(RAW_SLOT, "spin", size).map(|r| r.summary(RAW_SLOT));
            // What the destination's read-only mapping costs the protocol: once per size, in
            // the first busy-waiting mode's section (the raw slots run for spin and poll).
            let slot_rw = rep
                .get(RAW_SLOT_RW, "spin", size)
                .map(|r| r.summary(RAW_SLOT_RW));
            let first_busy =
                mode == "spin" || (mode == "poll" && !args.modes.iter().any(|m| m == "spin"));
            if let (Some(ro), Some(rw), true) = (&slot, &slot_rw, first_busy) {
                let _ = writeln!(
                    o,
                    "  {RAW_SLOT} {size} B vs {RAW_SLOT_RW} (what the readers' read-only mappings cost): p50 {:+.2} µs{}, p99 {:+.2} µs",
                    (ro.p50 as f64 - rw.p50 as f64) / 1000.0,
                    Spread::diff_text(rep.rounds(
                        (RAW_SLOT, "spin"),
                        Some((RAW_SLOT_RW, "spin")),
                        size,
                        |x, y| (x as f64 - y as f64) / 1000.0
                    )),
                    (ro.p99 as f64 - rw.p99 as f64) / 1000.0
                );
            }
            for t in &args.transports {
                let Some(ts) = s(t) else {
                    // The class failed (its row says why): each of its targets is missed, but
                    // the iceoryx2 target is not judged without iceoryx2 (it was missed).
                    let v: Vec<String> = class_targets(t, mode, size, !args.no_iceoryx2)
                        .into_iter()
                        .map(|d| {
                            if d == T_ICE && !ice_built {
                                tally.no_baseline(d)
                            } else {
                                tally.unavailable(d)
                            }
                        })
                        .collect();
                    if !v.is_empty() {
                        let _ = writeln!(o, "  {t} {mode} {size} B:  {}", v.join("  "));
                    }
                    continue;
                };
                let mut lines = Vec::new();
                // A target is judged on the median over the rounds of the per-round p50 ratio
                // (or difference) when there are rounds, else on the pooled p50s.
                let by_ratio = |x: u64, y: u64| ratio(x, y);
                let by_diff = |x: u64, y: u64| (x as f64 - y as f64) / 1000.0;
                if t == "one-sided" || is_two_sided(t) {
                    let judged = t == "one-sided" && mode == "spin" && size <= 56;
                    // The pooled p99 (the table's): a median of per-round p99s would drop the
                    // bad round this target is there to catch.
                    let p99_target = |tally: &mut Tally| {
                        let p99 = rep.rounds_p99(t, mode, size);
                        target(
                            tally,
                            T_P99,
                            ts.p99 <= 700,
                            &format!(
                                "pooled p99 {} ns{}",
                                ts.p99,
                                p99.map_or(String::new(), |s| format!(
                                    " (rounds' p99 {:.0}–{:.0} ns)",
                                    s.lo, s.hi
                                ))
                            ),
                        )
                    };
                    if let (None, true) = (&cache, judged) {
                        lines.push(format!(
                            "{t} {mode} {size} B vs raw cache-line: baseline not available  {}  {}",
                            tally.no_baseline(T_CACHE),
                            p99_target(&mut tally)
                        ));
                    }
                    // The classes that sleep are compared with the raw futex ping-pong of their
                    // mode (a spinning baseline gave them ratios of their wake-ups, such as 201x);
                    // the busy-waiting ones with the raw cache line and the raw copy.
                    let sleeps = mode == "park" || mode == "block";
                    if let (Some(f), true) = (s(RAW_FUTEX), sleeps) {
                        lines.push(format!(
                            "{t} {mode} {size} B vs {RAW_FUTEX}: p50 {:.2}x{}, p99 {:.2}x",
                            ratio(ts.p50, f.p50),
                            Spread::ratio_text(rep.rounds(
                                (t, mode),
                                Some((RAW_FUTEX, mode)),
                                size,
                                by_ratio
                            )),
                            ratio(ts.p99, f.p99)
                        ));
                    }
                    if let (Some(c), false) = (&cache, sleeps) {
                        let rr =
                            rep.rounds((t, mode), Some(("raw cache-line", "spin")), size, by_ratio);
                        let mut l = format!(
                            "{t} {mode} {size} B vs raw cache-line: p50 {:.2}x{}, p99 {:.2}x",
                            ratio(ts.p50, c.p50),
                            Spread::ratio_text(rr),
                            ratio(ts.p99, c.p99)
                        );
                        if judged {
                            let r = rr.map_or(ratio(ts.p50, c.p50), |s| s.median);
                            l += &format!(
                                "  {}  {}",
                                target(&mut tally, T_CACHE, r <= 1.6, ""),
                                p99_target(&mut tally)
                            );
                        }
                        lines.push(l);
                    }
                    if let (Some(c), "one-sided", false) = (&copy, t.as_str(), sleeps) {
                        lines.push(format!(
                            "{t} {mode} {size} B vs raw copy: p50 {:.2}x{}, p99 {:.2}x",
                            ratio(ts.p50, c.p50),
                            Spread::ratio_text(rep.rounds(
                                (t, mode),
                                Some(("raw copy", "spin")),
                                size,
                                by_ratio
                            )),
                            ratio(ts.p99, c.p99)
                        ));
                    }
                    // A busy-waiting class only: a blocking wait adds its wake-up, which is not
                    // the services' cost.
                    if let (Some(c), "one-sided", false) = (&slot, t.as_str(), mode == "block") {
                        lines.push(format!(
                            "{t} {mode} {size} B vs {RAW_SLOT} (what the APEX services add): p50 {:+.2} µs{}, p99 {:+.2} µs",
                            (ts.p50 as f64 - c.p50 as f64) / 1000.0,
                            Spread::diff_text(rep.rounds(
                                (t, mode),
                                Some((RAW_SLOT, "spin")),
                                size,
                                by_diff
                            )),
                            (ts.p99 as f64 - c.p99 as f64) / 1000.0
                        ));
                    }
                    if t == "one-sided" && size == 4096 && mode == "spin" {
                        let own = rep.rounds((t, mode), None, size, |x, _| x as f64);
                        let p50 = own.map_or(ts.p50 as f64, |s| s.median);
                        lines.push(format!(
                            "{t} {mode} {size} B: p50 {} ns{}  {}",
                            ts.p50,
                            own.map_or(String::new(), |s| format!(
                                " (rounds: median {:.0} ns, {:.0}–{:.0})",
                                s.median, s.lo, s.hi
                            )),
                            target(&mut tally, T_4K, p50 <= 2000.0, "")
                        ));
                    }
                }
                if is_two_sided(t) {
                    if let Some(one) = s("one-sided") {
                        let rr = rep.rounds((t, mode), Some(("one-sided", mode)), size, by_ratio);
                        let r = rr.map_or(ratio(ts.p50, one.p50), |s| s.median);
                        lines.push(format!(
                            "{t} {mode} {size} B vs one-sided: p50 {:.2}x{}  {}",
                            ratio(ts.p50, one.p50),
                            Spread::ratio_text(rr),
                            target(&mut tally, T_TWO, r <= 2.0, "")
                        ));
                    } else {
                        lines.push(format!(
                            "{t} {mode} {size} B vs one-sided: baseline not available  {}",
                            tally.no_baseline(T_TWO)
                        ));
                    }
                }
                if t == "udp" || t == "tcp" {
                    let base = if t == "udp" { "raw UDP" } else { "raw TCP" };
                    if let (None, true) = (
                        s(base),
                        class_targets(t, mode, size, false).contains(&T_UDP),
                    ) {
                        lines.push(format!(
                            "{t} {mode} {size} B vs {base}: baseline not available  {}",
                            tally.no_baseline(T_UDP)
                        ));
                    }
                    if let Some(b) = s(base) {
                        let d = ts.p50 as i64 - b.p50 as i64;
                        let bm = if mode == "poll" {
                            "spin"
                        } else {
                            mode.as_str()
                        };
                        let rd = rep.rounds((t, mode), Some((base, bm)), size, by_diff);
                        let mut l = format!(
                            "{t} {mode} {size} B vs {base}: p50 {:.2}x ({:+.2} µs{}), p99 {:.2}x",
                            ratio(ts.p50, b.p50),
                            d as f64 / 1000.0,
                            Spread::diff_text(rd),
                            ratio(ts.p99, b.p99)
                        );
                        // The issue's udp target is for spin; partix also holds its block class
                        // to it (park is spin or block, depending on the gap).
                        if t == "udp" && (mode == "spin" || mode == "block") {
                            let desc = T_UDP;
                            let why_not = if mode == "block" {
                                udp_block_unjudged(rep, size)
                            } else {
                                None
                            };
                            let dd = rd.map_or(d as f64 / 1000.0, |s| s.median);
                            l += &format!(
                                "  {}",
                                match why_not {
                                    Some(why) => tally.not_judged(desc, &why),
                                    None => target(&mut tally, desc, dd <= 0.3, ""),
                                }
                            );
                        }
                        lines.push(l);
                    }
                    // Informational baselines (no target): the raw pair per direction, and for
                    // udp spin the raw pair between multi-threaded peers.
                    let bm = if mode == "poll" {
                        "spin"
                    } else {
                        mode.as_str()
                    };
                    let base2 = if t == "udp" { RAW_UDP2 } else { RAW_TCP2 };
                    // Opposite tcp sampling channels share one connection (the channel set
                    // pairs them); udp channels each have their pair.
                    let how2 = if t == "udp" {
                        "one per direction, as two udp channels"
                    } else {
                        "one per direction, as unpaired tcp channels"
                    };
                    let mut extra = vec![];
                    if t == "udp" && mode == "spin" {
                        extra.push((
                            RAW_UDP_MT,
                            "multi-threaded: one descriptor table for two threads",
                        ));
                    }
                    extra.push((base2, how2));
                    for (base, how) in extra {
                        let Some(b) = s(base) else { continue };
                        let rd = rep.rounds((t, mode), Some((base, bm)), size, by_diff);
                        lines.push(format!(
                            "{t} {mode} {size} B vs {base} ({how}): p50 {:.2}x ({:+.2} µs{})",
                            ratio(ts.p50, b.p50),
                            (ts.p50 as f64 - b.p50 as f64) / 1000.0,
                            Spread::diff_text(rd)
                        ));
                    }
                }
                if let (Some(i), "spin" | "poll") = (&ice, mode.as_str()) {
                    let rr = rep.rounds((t, mode), Some(("iceoryx2", "spin")), size, by_ratio);
                    let r = rr.map_or(ratio(ts.p50, i.p50), |s| s.median);
                    let mut l = format!(
                        "{t} {mode} {size} B vs iceoryx2: p50 {:.2}x{}, p99 {:.2}x",
                        ratio(ts.p50, i.p50),
                        Spread::ratio_text(rr),
                        ratio(ts.p99, i.p99)
                    );
                    if t == "one-sided" && mode == "spin" {
                        l += &format!("  {}", target(&mut tally, T_ICE, r <= 0.6, ""));
                    }
                    lines.push(l);
                } else if class_targets(t, mode, size, !args.no_iceoryx2).contains(&T_ICE) {
                    lines.push(format!(
                        "{t} {mode} {size} B vs iceoryx2: baseline not available  {}",
                        tally.no_baseline(T_ICE)
                    ));
                }
                // The same ping-pong through queuing ports: against the sampling class and
                // against the transport's raw baseline (same rounds).
                let qn = format!("{t} queuing");
                if let Some(q) = s(&qn) {
                    let rr = rep.rounds((&qn, mode), Some((t, mode)), size, by_ratio);
                    lines.push(format!(
                        "{qn} {mode} {size} B vs {t} (sampling): p50 {:.2}x{}, p99 {:.2}x",
                        ratio(q.p50, ts.p50),
                        Spread::ratio_text(rr),
                        ratio(q.p99, ts.p99)
                    ));
                    let base = match t.as_str() {
                        "udp" => Some(("raw UDP", if mode == "poll" { "spin" } else { mode })),
                        "tcp" => Some(("raw TCP", if mode == "poll" { "spin" } else { mode })),
                        _ if mode == "park" || mode == "block" => Some((RAW_FUTEX, mode.as_str())),
                        _ => Some(("raw cache-line", "spin")),
                    };
                    if let Some((bn, bm)) = base {
                        if let Some(b) = rep.get(bn, bm, size).map(|r| r.summary(bn)) {
                            let rr = rep.rounds((&qn, mode), Some((bn, bm)), size, by_ratio);
                            lines.push(format!(
                                "{qn} {mode} {size} B vs {bn}: p50 {:.2}x{}, p99 {:.2}x",
                                ratio(q.p50, b.p50),
                                Spread::ratio_text(rr),
                                ratio(q.p99, b.p99)
                            ));
                        }
                    }
                }
                // The same ping-pong through the C API: against the Rust API's class.
                let cn = format!("{t} {C_API}");
                if let Some(c) = s(&cn) {
                    let rd = rep.rounds((&cn, mode), Some((t, mode)), size, by_diff);
                    lines.push(format!(
                        "{cn} {mode} {size} B vs {t} (Rust API): p50 {:.2}x ({:+.2} µs{}), p99 {:.2}x",
                        ratio(c.p50, ts.p50),
                        (c.p50 as f64 - ts.p50 as f64) / 1000.0,
                        Spread::diff_text(rd),
                        ratio(c.p99, ts.p99)
                    ));
                }
                for l in lines {
                    let _ = writeln!(o, "  {l}");
                }
            }
        }
    }
    if !rep.queue.is_empty() {
        // The throughput classes never pause: their target is judged whatever `--gap-us`.
        tally.skip = false;
        let _ = writeln!(o);
        // From the sender's CPU to the receiver's (the receiver measures).
        let (recv, send) = queue_pair_args("qraw", args);
        let _ = writeln!(
            o,
            "## queuing throughput: {QUEUE_MSG} B messages one way, cross-process (CPU {} → CPU {}), {} messages, depth {QUEUE_DEPTH}",
            send.cpu,
            recv.cpu,
            args.queue_messages
        );
        // A port row is compared with the raw ring that moves messages the same way: one per
        // call with `raw SPSC ring`, batches with the ring in batches of the same size.
        let batches = format!(", batches of {QUEUE_BATCH}");
        let raw_rate = |n: &str| {
            rep.queue
                .iter()
                .find(|(name, _)| name == n)
                .and_then(|(_, r)| r.as_ref().ok().map(|q| q.median))
        };
        let raw = raw_rate("raw SPSC ring");
        let raw_batched = raw_rate(&format!("raw SPSC ring{batches}"));
        for (name, r) in &rep.queue {
            match r {
                Ok(q) => {
                    let mut l = format!(
                        "{name:<39} {:>8.2} M msg/s (median of {} rounds, {:.2}–{:.2})",
                        q.median / 1e6,
                        q.rounds,
                        q.min / 1e6,
                        q.max / 1e6
                    );
                    // The shared-memory ring is no baseline for a port over sockets (its rate
                    // is the system calls'): udp and tcp are compared with the raw socket
                    // stream with the same flow control.
                    let (base, what) = if name.starts_with("udp") {
                        (raw_rate(RAW_UDP_QUEUE), "raw UDP stream".to_string())
                    } else if name.starts_with("tcp") {
                        (raw_rate(RAW_TCP_QUEUE), "raw TCP stream".to_string())
                    } else if name.ends_with(&batches) {
                        (raw_batched, format!("raw ring{batches}"))
                    } else {
                        (raw, "raw ring".to_string())
                    };
                    if let (Some(b), false) = (base, name.starts_with("raw")) {
                        l += &format!("  ({:.2}x {what})", q.median / b);
                    }
                    // The target needs no baseline: judged whether or not the raw ring ran. One
                    // target, judged once: on a queuing call per message (the batched row is
                    // shown beside it; counting both added a "met" the target does not have).
                    if name.starts_with("one-sided") && !name.ends_with(&batches) {
                        l += &format!("  {}", target(&mut tally, T_QUEUE, q.median >= 30e6, ""));
                    } else if name.starts_with("one-sided") {
                        l += &format!("  [target {T_QUEUE}: judged per call, above]");
                    }
                    let _ = writeln!(o, "{l}");
                }
                Err(e) => {
                    let mut l = format!("{name:<34} not available: {e}");
                    if name.starts_with("one-sided") && !name.ends_with(&batches) {
                        l += &format!("  {}", tally.unavailable(T_QUEUE));
                    }
                    let _ = writeln!(o, "{l}");
                }
            }
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "targets: {} met, {} missed, {} not judged",
        tally.met, tally.missed, tally.not_judged
    );
    (o, (tally.met, tally.missed, tally.not_judged))
}

/// Write fig. 2a (p50 RTT vs size, p99 as error bars) and fig. 2b (RTT CDF at the smallest size).
///
/// # Errors
/// An I/O or drawing error.
pub fn plot(dir: &Path, args: &RttArgs, rep: &RttReport) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut names: Vec<String> = args.transports.clone();
    if args.queuing_rtt {
        names.extend(args.transports.iter().map(|t| format!("{t} queuing")));
    }
    if args.c_api {
        names.extend(args.transports.iter().map(|t| format!("{t} {C_API}")));
    }
    names.extend(
        [
            "raw cache-line",
            "raw copy",
            RAW_SLOT,
            RAW_SLOT_RW,
            RAW_FUTEX,
            "raw UDP",
            "raw TCP",
            "iceoryx2",
        ]
        .map(String::from),
    );
    // In order of size, whatever the order of `--sizes` (the lines join the points in order).
    let mut sizes = args.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    let mut out = Vec::new();
    for mode in &args.modes {
        // The class of `n` drawn in `mode`'s plots, and its legend: the busy-waiting baselines
        // (and every raw baseline in `poll`) are their spin rows, labelled so.
        let class_mode = |n: &str| {
            if n == "iceoryx2"
                || n == "raw cache-line"
                || n == "raw copy"
                || n == RAW_SLOT
                || n == RAW_SLOT_RW
                || (mode == "poll" && n.starts_with("raw"))
            {
                "spin"
            } else {
                mode.as_str()
            }
        };
        let legend = |n: &str| {
            if class_mode(n) == mode {
                n.to_string()
            } else {
                format!("{n} (spin)")
            }
        };
        let series: Vec<(String, Vec<(usize, Summary)>)> = names
            .iter()
            .map(|n| {
                let m = class_mode(n);
                let pts = sizes
                    .iter()
                    .filter_map(|&s| rep.get(n, m, s).map(|r| (s, r.summary(n))))
                    .collect();
                (legend(n), pts)
            })
            .filter(|(_, p): &(String, Vec<_>)| !p.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        let path = dir.join(format!("rtt-vs-size-{mode}.svg"));
        crate::report::plot_vs_size(
            &path,
            &format!("Round-trip time vs message size ({mode}; p50, bars to p99)"),
            &series,
        )?;
        out.push(path);
        let small = args.sizes.iter().copied().min().unwrap_or(16);
        let cdf: Vec<(String, &Recorder)> = names
            .iter()
            .filter_map(|n| rep.get(n, class_mode(n), small).map(|r| (legend(n), r)))
            .collect();
        let refs: Vec<(&str, &Recorder)> = cdf.iter().map(|(n, r)| (n.as_str(), *r)).collect();
        let path = dir.join(format!("rtt-cdf-{small}B-{mode}.svg"));
        crate::report::plot_cdf(
            &path,
            &format!("CDF of RTT of {small}-byte messages ({mode})"),
            "round-trip time (µs)",
            &refs,
            0.999,
        )?;
        out.push(path);
    }
    Ok(out)
}

/// `partix bench rtt`.
///
/// # Errors
/// Bad arguments, or a plot that cannot be written.
pub fn run(args: RttArgs) -> anyhow::Result<ExitCode> {
    let rep = measure(&args)?;
    print!("{}", rep.text);
    if let Some(dir) = &args.plot {
        for p in plot(dir, &args, &rep)? {
            println!("plot: {}", p.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_modules_parse_with_the_transport_on_every_channel() {
        use partix_config::model::Delivery;
        for t in TRANSPORTS {
            // `two-sided-manager` is two-sided with partix:Delivery="manager".
            let (want, delivery) = if *t == TWO_SIDED_MANAGER {
                ("two-sided", Some(Delivery::Manager))
            } else {
                (*t, None)
            };
            let m = partix_config::parse_str(&sampling_module_xml(t, 56), None).unwrap();
            assert_eq!(m.channels.len(), 2);
            assert!(m
                .channels
                .iter()
                .all(|c| c.transport.as_deref() == Some(want) && c.delivery == delivery));
            assert_eq!(m.partitions[0].sampling_ports[0].max_message_size, 56);
            let q = partix_config::parse_str(&queuing_module_xml(t), None).unwrap();
            assert_eq!(q.channels.len(), 1);
            assert_eq!(
                q.partitions[1].queuing_ports[0].max_nb_messages,
                QUEUE_DEPTH
            );
            let r = partix_config::parse_str(&queuing_rtt_module_xml(t, 56), None).unwrap();
            assert_eq!(r.channels.len(), 2);
            assert!(r
                .channels
                .iter()
                .all(|c| c.transport.as_deref() == Some(want) && c.delivery == delivery));
            assert!(q.channels[0].delivery == delivery);
            for p in &r.partitions {
                assert_eq!(p.queuing_ports.len(), 2);
                assert!(p
                    .queuing_ports
                    .iter()
                    .all(|q| q.max_message_size == 56 && q.max_nb_messages == QRTT_DEPTH));
            }
        }
    }

    /// An echo side that finds a bad message exits with an error; the pair reports that error
    /// at once, as a failed class, instead of leaving the measuring side waiting for an echo
    /// until the time-out. (The peers are a shell script: the echo side fails at once, the
    /// measuring side would wait a minute.)
    #[test]
    fn a_failing_echo_side_fails_the_pair_with_its_error() {
        let peer = Peer {
            program: PathBuf::from("/bin/sh"),
            prefix: vec![
                "-c".into(),
                // $0 is the kind, $1 the role.
                r#"if [ "$1" = pong ]; then
                     echo "partix-rttpart udp pong: message 1: its last word carries 0x0, not 0x1" >&2
                     exit 2
                   fi
                   exec sleep 60"#
                    .into(),
            ],
        };
        let args = RttArgs::default();
        let (a, b) = pair_args("udp", 16, &args, "spin");
        let end = |p| End {
            args: p,
            fds: Vec::new(),
            env: Vec::new(),
        };
        let e = run_pair(&peer, end(&a), end(&b), Duration::from_secs(300)).unwrap_err();
        assert_eq!(
            e,
            "the echo side exited with exit status: 2: partix-rttpart udp pong: message 1: its \
             last word carries 0x0, not 0x1"
        );
        // In the report: the class's row says why it is not available.
        let mut job = Job::new("raw UDP", "spin", 16, |_| unreachable!());
        job.acc.add(samples_of(Err(e)));
        let c = job.into_class();
        let text = {
            let rep = RttReport {
                classes: vec![c],
                ..RttReport::default()
            };
            render(&rtt_args(&[16], &["udp"], &["spin"]), &rep, false).0
        };
        assert!(
            line(&text, "raw UDP spin 16 B").ends_with(
                "not available: the echo side exited with exit status: 2: partix-rttpart udp \
                 pong: message 1: its last word carries 0x0, not 0x1"
            ),
            "{text}"
        );
    }

    #[test]
    fn one_sided_channels_are_built_and_handed_over_per_partition() {
        let set = channels_of(&sampling_module_xml("one-sided", 64)).unwrap();
        let env_a = set.env_value(0);
        assert!(env_a.contains("s:PING:src:64:1000000000:"), "{env_a}");
        assert!(env_a.contains("s:PONG:dst:64:1000000000:"), "{env_a}");
        assert_eq!(set.ports_of(0).len(), 2);
        assert!(!set.child_fds(0).is_empty() && !set.child_fds(1).is_empty());
    }

    #[test]
    fn bad_arguments_are_refused_before_anything_runs() {
        let mut a = RttArgs {
            sizes: vec![4],
            ..RttArgs::default()
        };
        assert!(measure(&a).unwrap_err().to_string().contains("at least 8"));
        a.sizes = vec![16];
        a.transports = vec!["carrier-pigeon".into()];
        assert!(measure(&a)
            .unwrap_err()
            .to_string()
            .contains("unknown transport"));
        a.transports = vec!["one-sided".into()];
        a.modes = vec!["nap".into()];
        assert!(measure(&a)
            .unwrap_err()
            .to_string()
            .contains("unknown mode"));
    }

    #[test]
    fn targets_are_counted_from_the_report() {
        let mut t = Tally::default();
        let a = target(&mut t, "x", true, "");
        let b = target(&mut t, "y", false, "p99 9 ns");
        assert_eq!((t.met, t.missed), (1, 1));
        assert!(a.ends_with(": met]"), "{a}");
        assert!(b.contains("MISSED, p99 9 ns"), "{b}");
        // A `--gap-us` run states the targets but counts none.
        t.skip = true;
        let c = target(&mut t, "z", false, "");
        assert_eq!((t.met, t.missed), (1, 1));
        assert!(c.contains("not judged"), "{c}");
    }

    /// A class measured in one round per element of `rounds`, each round's samples given as
    /// `(ns, count)` pairs: the pooled recorder and the per-round p50 / p99, as `measure` builds
    /// them.
    fn class(name: &str, mode: &str, size: usize, rounds: &[&[(u64, u64)]]) -> Class {
        let mut pooled = Recorder::new();
        let (mut round_p50, mut round_p99) = (Vec::new(), Vec::new());
        for round in rounds {
            let mut rec = Recorder::new();
            for &(ns, n) in *round {
                for _ in 0..n {
                    rec.record(ns);
                }
            }
            let sum = rec.summary("");
            round_p50.push(sum.p50);
            round_p99.push(sum.p99);
            pooled.merge(&rec);
        }
        Class {
            name: name.into(),
            mode: mode.into(),
            size,
            result: Ok(pooled),
            switches_per_round: None,
            echo_switches_per_round: None,
            round_p50,
            round_p99,
            fifo: FifoEnds::default(),
        }
    }

    /// A class of four rounds of 100 samples of `ns` each.
    fn flat(name: &str, mode: &str, size: usize, ns: u64) -> Class {
        let round: &[(u64, u64)] = &[(ns, 100)];
        class(name, mode, size, &[round; 4])
    }

    /// A class that failed.
    fn failed(name: &str, mode: &str, size: usize) -> Class {
        Class {
            result: Err("peer exited with exit status: 1".into()),
            round_p50: Vec::new(),
            round_p99: Vec::new(),
            ..flat(name, mode, size, 1)
        }
    }

    fn rtt_args(sizes: &[usize], transports: &[&str], modes: &[&str]) -> RttArgs {
        RttArgs {
            sizes: sizes.to_vec(),
            transports: transports.iter().map(|t| t.to_string()).collect(),
            modes: modes.iter().map(|m| m.to_string()).collect(),
            no_iceoryx2: true,
            ..RttArgs::default()
        }
    }

    fn rendered(
        args: &RttArgs,
        classes: Vec<Class>,
        queue: Vec<(&str, Result<f64, &str>)>,
    ) -> (String, (u32, u32, u32)) {
        let rep = RttReport {
            classes,
            queue: queue
                .into_iter()
                .map(|(n, r)| {
                    let r = r.map(|v| QueueRate::of(vec![v; 4])).map_err(String::from);
                    (n.to_string(), r)
                })
                .collect(),
            ..RttReport::default()
        };
        render(args, &rep, false)
    }

    /// The report's line that starts with `start` (after its indentation).
    fn line<'a>(text: &'a str, start: &str) -> &'a str {
        text.lines()
            .map(str::trim)
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line {start:?} in\n{text}"))
    }

    #[test]
    fn the_p99_target_is_judged_on_the_pooled_p99_so_one_bad_round_misses_it() {
        let a = rtt_args(&[16], &["one-sided"], &["spin"]);
        let good: &[(u64, u64)] = &[(300, 100)];
        // Half the samples of the last round at 2 µs: its p99 is 2000 ns, the pooled p99 too
        // (50 of 400 samples), while the median of the rounds' p99s is 300 ns.
        let bad: &[(u64, u64)] = &[(300, 50), (2000, 50)];
        let classes = vec![
            flat("raw cache-line", "spin", 16, 250),
            class("one-sided", "spin", 16, &[good, good, good, bad]),
        ];
        let (text, tally) = rendered(&a, classes, vec![]);
        assert_eq!(
            line(&text, "one-sided spin 16 B vs raw cache-line:"),
            "one-sided spin 16 B vs raw cache-line: p50 1.20x (rounds: median 1.20x, 1.20–1.20x), \
             p99 8.00x  [target p50 ≤ 1.6x raw cache-line: met]  [target p99 ≤ 700 ns: MISSED, \
             pooled p99 2000 ns (rounds' p99 300–2000 ns)]"
        );
        assert_eq!(tally, (1, 1, 0));
        assert!(
            text.ends_with("targets: 1 met, 1 missed, 0 not judged\n"),
            "{text}"
        );
        // Only the sizes asked for have targets: no 4 KiB one here.
        assert!(!text.contains(T_4K), "{text}");
    }

    /// A pair's time-out allows the gap of every round trip: with the defaults and a 5 ms gap
    /// the round trips alone take (iters + warm-up) × 5 ms, far beyond the 11.4 s it was.
    #[test]
    fn a_pairs_time_out_allows_the_gap_of_every_round_trip() {
        let a = RttArgs {
            gap_us: 5000,
            ..RttArgs::default()
        };
        let trips = (a.iters + a.warmup) as u32;
        assert!(pair_timeout(&a) > Duration::from_millis(5) * trips);
        let b = RttArgs::default();
        assert!(pair_timeout(&b) < Duration::from_secs(60));
    }

    /// A one-sided class that failed while iceoryx2 is not built: its iceoryx2 target is not
    /// judged (no baseline), not missed as the class's other targets are.
    #[test]
    fn a_failed_class_without_iceoryx2_leaves_its_iceoryx2_target_not_judged() {
        let a = RttArgs {
            no_iceoryx2: false,
            ..rtt_args(&[16], &["one-sided"], &["spin"])
        };
        let classes = vec![
            flat("raw cache-line", "spin", 16, 250),
            failed("one-sided", "spin", 16),
        ];
        let (text, tally) = rendered(&a, classes, vec![]);
        assert!(
            line(&text, "one-sided spin 16 B:")
                .ends_with("[target ≤ 0.6x iceoryx2: not judged, baseline missing]"),
            "{text}"
        );
        assert_eq!(tally, (0, 2, 1));
    }

    #[test]
    fn a_missing_baseline_is_not_judged_and_counted_apart() {
        let a = RttArgs {
            no_iceoryx2: false,
            ..rtt_args(&[16], &["one-sided", "two-sided"], &["spin"])
        };
        let classes = vec![
            failed("raw cache-line", "spin", 16),
            flat("one-sided", "spin", 16, 400),
            flat("two-sided", "spin", 16, 600),
        ];
        // iceoryx2 was asked for but is not there (not built).
        let (text, tally) = rendered(&a, classes, vec![]);
        assert_eq!(
            line(&text, "one-sided spin 16 B vs raw cache-line:"),
            "one-sided spin 16 B vs raw cache-line: baseline not available  [target p50 ≤ 1.6x \
             raw cache-line: not judged, baseline missing]  [target p99 ≤ 700 ns: met, pooled \
             p99 400 ns (rounds' p99 400–400 ns)]"
        );
        assert_eq!(
            line(&text, "one-sided spin 16 B vs iceoryx2:"),
            "one-sided spin 16 B vs iceoryx2: baseline not available  [target ≤ 0.6x iceoryx2: \
             not judged, baseline missing]"
        );
        assert_eq!(
            line(&text, "two-sided spin 16 B vs one-sided:"),
            "two-sided spin 16 B vs one-sided: p50 1.50x (rounds: median 1.50x, 1.50–1.50x)  \
             [target ≤ 2x one-sided: met]"
        );
        assert_eq!(tally, (2, 0, 2));
        assert!(
            text.ends_with("targets: 2 met, 0 missed, 2 not judged\n"),
            "{text}"
        );
    }

    /// Both two-sided rows, helped and manager-delivered, are judged against one-sided, each
    /// on its own line: the manager row missing the target does not hide behind the other.
    #[test]
    fn both_two_sided_rows_are_judged_against_one_sided() {
        let a = rtt_args(
            &[16],
            &["one-sided", "two-sided", TWO_SIDED_MANAGER],
            &["spin"],
        );
        let classes = vec![
            flat("raw cache-line", "spin", 16, 250),
            flat("one-sided", "spin", 16, 400),
            flat("two-sided", "spin", 16, 600),
            flat(TWO_SIDED_MANAGER, "spin", 16, 36_000),
        ];
        let (text, _) = rendered(&a, classes, vec![]);
        assert_eq!(
            line(&text, "two-sided spin 16 B vs one-sided:"),
            "two-sided spin 16 B vs one-sided: p50 1.50x (rounds: median 1.50x, 1.50–1.50x)  \
             [target ≤ 2x one-sided: met]"
        );
        assert_eq!(
            line(&text, "two-sided-manager spin 16 B vs one-sided:"),
            "two-sided-manager spin 16 B vs one-sided: p50 90.08x (rounds: median 90.08x, \
             90.08–90.08x)  [target ≤ 2x one-sided: MISSED]"
        );
    }

    #[test]
    fn a_failed_class_misses_its_targets() {
        let a = rtt_args(&[16, 4096], &["one-sided", "two-sided"], &["spin"]);
        let classes = vec![
            flat("raw cache-line", "spin", 16, 250),
            failed("one-sided", "spin", 16),
            flat("two-sided", "spin", 16, 600),
            flat("raw cache-line", "spin", 4096, 250),
            failed("one-sided", "spin", 4096),
            failed("two-sided", "spin", 4096),
        ];
        let queue = vec![
            ("raw SPSC ring", Ok(20e6)),
            (
                "one-sided queuing port",
                Err("peer exited with exit status: 1"),
            ),
        ];
        let (text, tally) = rendered(&a, classes.clone(), queue.clone());
        assert_eq!(
            line(&text, "one-sided spin 16 B:"),
            "one-sided spin 16 B:  [target p50 ≤ 1.6x raw cache-line: MISSED, class not \
             available]  [target p99 ≤ 700 ns: MISSED, class not available]"
        );
        assert_eq!(
            line(&text, "one-sided spin 4096 B:"),
            "one-sided spin 4096 B:  [target 4 KiB p50 ≤ 2 µs: MISSED, class not available]"
        );
        assert_eq!(
            line(&text, "two-sided spin 4096 B:"),
            "two-sided spin 4096 B:  [target ≤ 2x one-sided: MISSED, class not available]"
        );
        // Its baseline failed, not the class: not judged.
        assert_eq!(
            line(&text, "two-sided spin 16 B vs one-sided:"),
            "two-sided spin 16 B vs one-sided: baseline not available  [target ≤ 2x one-sided: \
             not judged, baseline missing]"
        );
        assert!(
            line(&text, "one-sided queuing port ")
                .ends_with("not available: peer exited with exit status: 1  [target ≥ 30 M msg/s: MISSED, class not available]"),
            "{text}"
        );
        assert_eq!(tally, (0, 5, 1));
        assert!(
            text.ends_with("targets: 0 met, 5 missed, 1 not judged\n"),
            "{text}"
        );
        // With --gap-us the round-trip targets are stated, not judged, and not counted; the
        // throughput target is judged whatever the gap.
        let gap = RttArgs { gap_us: 100, ..a };
        let (text, tally) = rendered(&gap, classes, queue);
        assert_eq!(
            line(&text, "one-sided spin 4096 B:"),
            "one-sided spin 4096 B:  [target 4 KiB p50 ≤ 2 µs: not judged with --gap-us]"
        );
        assert_eq!(tally, (0, 1, 0));
    }

    /// The throughput header names the sender's CPU first: the receiver (which measures) runs
    /// on the first CPU, the sender on the second (it said the opposite).
    #[test]
    fn the_throughput_direction_is_from_the_senders_cpu_to_the_receivers() {
        let a = rtt_args(&[16], &["one-sided"], &[]);
        for kind in ["qraw", "qapex", "qudp"] {
            let (recv, send) = queue_pair_args(kind, &a);
            assert_eq!((recv.role.as_str(), send.role.as_str()), ("recv", "send"));
            assert_eq!((recv.cpu, send.cpu), cpus(), "{kind}");
        }
        let (c0, c1) = cpus();
        let (text, _) = rendered(&a, vec![], vec![("raw SPSC ring", Ok(20e6))]);
        assert!(
            line(&text, "## queuing throughput:").contains(&format!(
                "cross-process (CPU {c1} → CPU {c0}), 2000000 messages"
            )),
            "{text}"
        );
    }

    #[test]
    fn the_batched_queuing_port_is_compared_with_the_batched_raw_ring() {
        // The throughput rows only: no round-trip class.
        let a = rtt_args(&[16], &["one-sided"], &[]);
        let batched_port = format!("one-sided queuing port, batches of {QUEUE_BATCH}");
        let batched_ring = format!("raw SPSC ring, batches of {QUEUE_BATCH}");
        let queue = vec![
            ("raw SPSC ring", Ok(20e6)),
            (batched_ring.as_str(), Ok(60e6)),
            ("one-sided queuing port", Ok(10e6)),
            (batched_port.as_str(), Ok(45e6)),
        ];
        let (text, tally) = rendered(&a, vec![], queue.clone());
        assert!(
            line(&text, "one-sided queuing port ")
                .ends_with("(0.50x raw ring)  [target ≥ 30 M msg/s: MISSED]"),
            "{text}"
        );
        assert!(
            line(&text, &batched_port).ends_with(&format!(
                "(0.75x raw ring, batches of {QUEUE_BATCH})  [target ≥ 30 M msg/s: judged per call, above]"
            )),
            "{text}"
        );
        // One target, judged once (per call).
        assert_eq!(tally, (0, 1, 0));
        // Without the raw rings there is no ratio, but the rate is still judged.
        let queue = vec![
            ("raw SPSC ring", Err("no")),
            (batched_ring.as_str(), Err("no")),
            ("one-sided queuing port", Ok(10e6)),
            (batched_port.as_str(), Ok(45e6)),
        ];
        let (text, tally) = rendered(&a, vec![], queue);
        assert!(
            line(&text, &batched_port)
                .ends_with(")  [target ≥ 30 M msg/s: judged per call, above]"),
            "{text}"
        );
        assert!(!text.contains("x raw ring"), "{text}");
        assert_eq!(tally, (0, 1, 0));
    }

    #[test]
    fn the_udp_block_target_is_judged_only_when_both_waits_slept() {
        let a = rtt_args(&[16], &["udp"], &["spin", "block"]);
        let with = |udp: f64, raw: f64| {
            let sw = |mut c: Class, v: f64| {
                c.switches_per_round = Some(v);
                c
            };
            vec![
                // The spin class never sleeps, and its target is judged.
                sw(flat("raw UDP", "spin", 16, 9_800), 0.0),
                sw(flat("udp", "spin", 16, 10_000), 0.0),
                sw(flat("raw UDP", "block", 16, 19_000), raw),
                sw(flat("udp", "block", 16, 19_500), udp),
            ]
        };
        let block = "udp block 16 B vs raw UDP:";
        let judged = "p50 1.03x (+0.50 µs; rounds: median +0.50 µs, +0.50…+0.50), p99 1.03x  \
                      [target p50 ≤ raw UDP + 0.3 µs: MISSED]";
        let (text, tally) = rendered(&a, with(1.0, 1.0), vec![]);
        assert_eq!(line(&text, block), format!("{block} {judged}"));
        assert!(
            line(&text, "udp spin 16 B vs raw UDP:")
                .ends_with("[target p50 ≤ raw UDP + 0.3 µs: met]"),
            "{text}"
        );
        assert_eq!(tally, (1, 1, 0));
        for (udp, raw, why) in [
            (
                1.0,
                0.0,
                "the udp port slept in 100 % of its waits, raw UDP in 0 %",
            ),
            (
                0.0,
                1.0,
                "the udp port slept in 0 % of its waits, raw UDP in 100 %",
            ),
            (
                0.2,
                0.3,
                "the udp port slept in 20 % of its waits, raw UDP in 30 %",
            ),
            // Half is not more than half: the p50 may be a wait that spun.
            (
                0.5,
                0.9,
                "the udp port slept in 50 % of its waits, raw UDP in 90 %",
            ),
            (
                0.9,
                0.47,
                "the udp port slept in 90 % of its waits, raw UDP in 47 %",
            ),
        ] {
            let why = format!("{why} (more than half needed: the target is on the p50)");
            let (text, tally) = rendered(&a, with(udp, raw), vec![]);
            assert!(
                line(&text, block).ends_with(&format!(
                    "p99 1.03x  [target p50 ≤ raw UDP + 0.3 µs: not judged, {why}]"
                )),
                "{text}"
            );
            assert_eq!(tally, (1, 0, 1), "{udp} {raw}");
        }
        // Raw UDP failed in the block class: the udp block target has no baseline.
        let mut classes = with(1.0, 1.0);
        classes[2] = failed("raw UDP", "block", 16);
        let (text, tally) = rendered(&a, classes, vec![]);
        assert_eq!(
            line(&text, block),
            format!("{block} baseline not available  [target p50 ≤ raw UDP + 0.3 µs: not judged, baseline missing]")
        );
        assert_eq!(tally, (1, 0, 1));
    }

    /// The park and block classes of the shared-memory transports (sampling and queuing) are
    /// compared with the raw futex ping-pong of their mode, not with the spinning raw cache
    /// line or raw copy; the spin class keeps the cache line and the copy.
    #[test]
    fn sleeping_classes_are_compared_with_the_raw_futex_of_their_mode() {
        let a = RttArgs {
            queuing_rtt: true,
            ..rtt_args(
                &[16],
                &["one-sided", "two-sided"],
                &["spin", "park", "block"],
            )
        };
        let classes = vec![
            flat("raw cache-line", "spin", 16, 100),
            flat("raw copy", "spin", 16, 200),
            flat(RAW_FUTEX, "park", 16, 1_000),
            flat(RAW_FUTEX, "block", 16, 10_000),
            flat("one-sided", "spin", 16, 400),
            flat("one-sided", "park", 16, 1_500),
            flat("one-sided", "block", 16, 20_000),
            flat("one-sided queuing", "block", 16, 30_000),
            flat("two-sided", "spin", 16, 500),
            flat("two-sided", "block", 16, 25_000),
        ];
        let (text, _) = rendered(&a, classes, vec![]);
        assert!(
            line(&text, "one-sided spin 16 B vs raw cache-line:").starts_with(
                "one-sided spin 16 B vs raw cache-line: p50 4.00x (rounds: median 4.00x"
            ),
            "{text}"
        );
        assert!(line(&text, "one-sided spin 16 B vs raw copy:").contains("p50 2.00x"));
        assert_eq!(
            line(&text, "one-sided park 16 B vs raw futex:"),
            "one-sided park 16 B vs raw futex: p50 1.50x (rounds: median 1.50x, 1.50–1.50x), \
             p99 1.50x"
        );
        assert!(line(&text, "one-sided block 16 B vs raw futex:").contains("p50 2.00x"));
        assert!(line(&text, "two-sided block 16 B vs raw futex:").contains("p50 2.50x"));
        assert!(
            line(&text, "one-sided queuing block 16 B vs raw futex:").contains("p50 3.00x"),
            "{text}"
        );
        for m in ["park", "block"] {
            for base in ["raw cache-line", "raw copy"] {
                assert!(
                    !text.contains(&format!("{m} 16 B vs {base}")),
                    "{m} vs {base} in\n{text}"
                );
            }
            // The baseline's rows are in its mode's table.
            assert!(
                text.lines()
                    .any(|l| l.starts_with(&format!("{RAW_FUTEX} {m} 16 B "))),
                "{text}"
            );
        }
    }

    /// Sizes given out of order are plotted in order: every series' line runs left to right.
    #[test]
    fn sizes_are_plotted_in_order_whatever_the_order_given() {
        let a = rtt_args(&[4096, 16, 64], &["one-sided"], &["spin"]);
        let mut classes = Vec::new();
        for size in [4096, 16, 64] {
            classes.extend([
                flat("raw cache-line", "spin", size, 250),
                flat("one-sided", "spin", size, 400 + size as u64),
            ]);
        }
        let rep = RttReport {
            classes,
            ..RttReport::default()
        };
        let dir = std::env::temp_dir().join(format!("partix-rtt-order-{}", std::process::id()));
        let files = plot(&dir, &a, &rep).unwrap();
        let svg = std::fs::read_to_string(dir.join("rtt-vs-size-spin.svg")).unwrap();
        // The series' lines: polylines of three points (one per size).
        let lines: Vec<Vec<f64>> = svg
            .split("points=\"")
            .skip(1)
            .filter_map(|r| r.split('"').next())
            .map(|p| {
                p.split_whitespace()
                    .filter_map(|xy| xy.split(',').next()?.parse().ok())
                    .collect::<Vec<f64>>()
            })
            .filter(|xs| xs.len() == 3)
            .collect();
        assert_eq!(lines.len(), 2, "{svg}");
        for xs in &lines {
            assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
        }
        // The CDF is of the smallest size.
        assert!(
            files.iter().any(|f| f.ends_with("rtt-cdf-16B-spin.svg")),
            "{files:?}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A block class that slept in 47 % of its waits says so (it used to read "did not sleep:
    /// this is a spin"); "did not sleep" is kept for under 5 %; a park class says which side
    /// parked, how often.
    #[test]
    fn the_wait_note_says_how_many_waits_slept() {
        let a = rtt_args(&[16], &["one-sided"], &["park", "block"]);
        let sw = |mut c: Class, v: f64, e: f64| {
            c.switches_per_round = Some(v);
            c.echo_switches_per_round = Some(e);
            c
        };
        let classes = vec![
            sw(flat(RAW_FUTEX, "block", 16, 9_000), 0.99, 1.0),
            sw(flat("one-sided", "block", 16, 9_000), 0.47, 0.5),
            sw(flat(RAW_UDP2, "block", 16, 9_000), 0.04, 0.0),
            sw(flat(RAW_FUTEX, "park", 16, 900), 0.0, 0.03),
            sw(flat("one-sided", "park", 16, 900), 0.0, 0.98),
            sw(flat(RAW_UDP2, "park", 16, 900), 0.25, 0.5),
        ];
        let (text, _) = rendered(&a, classes, vec![]);
        let note = |label: &str| line(&text, &format!("{label}: ")).to_string();
        assert_eq!(
            note("raw futex block 16 B"),
            "raw futex block 16 B: 0.99 voluntary context switches per round trip on the \
             measuring side, 1.00 on the echo side (it slept in 99 % of its waits)"
        );
        assert!(
            note("one-sided block 16 B")
                .ends_with("(it slept in 47 % of its waits: its p50 is a wait that did not sleep)"),
            "{text}"
        );
        assert!(
            note("raw UDP 2 pairs block 16 B")
                .ends_with("(its waits did not sleep: this is a spin)"),
            "{text}"
        );
        assert!(
            note("raw futex park 16 B").ends_with("(the messages came within the spins)"),
            "{text}"
        );
        assert!(
            note("one-sided park 16 B").ends_with(
                "(the echo side parked in 98 % of its waits: those messages came after the \
                 spins)"
            ),
            "{text}"
        );
        assert!(
            note("raw UDP 2 pairs park 16 B").ends_with(
                "(it parked in 25 % of its waits, the echo side parked in 50 % of its waits: \
                 those messages came after the spins)"
            ),
            "{text}"
        );
    }

    /// The header says what the peers reported applied (`# fifo 1|0`), not what they asked:
    /// it said "raw peers at SCHED_FIFO 51" when that was refused.
    #[test]
    fn the_header_says_whether_sched_fifo_applied() {
        assert_eq!(
            FifoEnds::of("12\n# nvcsw 0\n# fifo 1\n# echo nvcsw 3\n# echo fifo 0\n"),
            FifoEnds { on: 1, off: 1 }
        );
        let a = rtt_args(&[16], &["one-sided"], &["spin"]);
        let with = |raw: FifoEnds, ports: FifoEnds| {
            let mut cache = flat("raw cache-line", "spin", 16, 250);
            cache.fifo = raw;
            let mut port = flat("one-sided", "spin", 16, 400);
            port.fifo = ports;
            let rep = RttReport {
                classes: vec![cache, port],
                ..RttReport::default()
            };
            render(&a, &rep, false).0
        };
        let head = |text: &str| line(text, "ping-pong between").to_string();
        let (on, off) = (FifoEnds { on: 8, off: 0 }, FifoEnds { on: 0, off: 8 });
        let t = with(on, on);
        assert!(
            head(&t).ends_with(
                "raw peers at SCHED_FIFO 51, partition processes' APEX process at priority 50 \
                 (SCHED_FIFO 51)"
            ),
            "{t}"
        );
        let t = with(off, off);
        assert!(
            head(&t).ends_with(
                "raw peers at SCHED_OTHER: SCHED_FIFO 51 was refused (not root, no \
                 CAP_SYS_NICE), partition processes' APEX process at priority 50 (SCHED_OTHER: \
                 SCHED_FIFO 51 was refused (not root, no CAP_SYS_NICE))"
            ),
            "{t}"
        );
        let t = with(FifoEnds { on: 6, off: 2 }, FifoEnds::default());
        assert!(
            head(&t).contains(
                "raw peers at SCHED_FIFO 51 in 6 of 8 processes (refused in the others), \
                 partition processes' APEX process at priority 50 (SCHED_FIFO 51 asked (no end \
                 reported whether it applied))"
            ),
            "{t}"
        );
        // The throughput classes count too (a raw ring is a raw peer).
        let rep = RttReport {
            queue_fifo: vec![
                ("raw SPSC ring".into(), off),
                ("one-sided queuing port".into(), on),
            ],
            ..RttReport::default()
        };
        assert_eq!(fifo_applied(&rep), (off, on));
    }

    #[test]
    fn the_spin_baselines_are_labelled_spin_in_the_other_modes_plots() {
        let a = rtt_args(&[16, 64], &["one-sided"], &["spin", "block"]);
        let mut classes = Vec::new();
        for size in [16, 64] {
            classes.extend([
                flat("raw cache-line", "spin", size, 250),
                flat("raw copy", "spin", size, 260),
                flat(RAW_SLOT, "spin", size, 280),
                flat(RAW_SLOT_RW, "spin", size, 270),
                flat("iceoryx2", "spin", size, 900),
                flat("one-sided", "spin", size, 400),
                flat("one-sided", "block", size, 9_000),
                flat(RAW_FUTEX, "block", size, 4_000),
                flat("raw UDP", "block", size, 19_000),
            ]);
        }
        let rep = RttReport {
            classes,
            ..RttReport::default()
        };
        let dir = std::env::temp_dir().join(format!("partix-rtt-labels-{}", std::process::id()));
        let files = plot(&dir, &a, &rep).unwrap();
        assert_eq!(files.len(), 4, "{files:?}");
        for f in &files {
            let svg = std::fs::read_to_string(f).unwrap();
            let block = f.to_string_lossy().contains("block");
            for n in [
                "raw cache-line",
                "raw copy",
                RAW_SLOT,
                RAW_SLOT_RW,
                "iceoryx2",
            ] {
                assert_eq!(
                    svg.contains(&format!("{n} (spin)")),
                    block,
                    "{n} in {}",
                    f.display()
                );
                assert!(svg.contains(n), "{n} in {}", f.display());
            }
            // A block-class row keeps its name.
            assert!(!svg.contains("raw UDP (spin)"), "{}", f.display());
            assert_eq!(svg.contains("raw UDP"), block, "{}", f.display());
            // The raw futex baseline is drawn in its own mode's plots only.
            assert!(!svg.contains("raw futex (spin)"), "{}", f.display());
            assert_eq!(svg.contains(RAW_FUTEX), block, "{}", f.display());
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
