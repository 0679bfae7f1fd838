//! `partix fs ...` subcommands (also used by the `partix-fs-server` binary).

use crate::client::{Client, ClientConfig};
use crate::fault::{FaultConfig, FaultInjector};
use crate::server::{Server, ServerConfig};
use crate::transport::{
    PacketTransport, PeerAddr, RecvMode, RingTransport, Transport, UdpTransport,
};
use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use partix_wire::ethernet::EthernetAddress;
use partix_wire::fs::{open_flags, FileKind};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// `partix fs` subcommands.
#[derive(Subcommand, Debug)]
pub enum FsCommand {
    /// Export a directory (files or device nodes) over raw Ethernet frames or UDP.
    Serve(ServeArgs),
    /// List a remote directory.
    Ls {
        /// Server to talk to.
        #[command(flatten)]
        target: Target,
        /// Directory, relative to the exported root.
        #[arg(default_value = "/")]
        path: String,
    },
    /// Print a remote file to standard output.
    Cat {
        /// Server to talk to.
        #[command(flatten)]
        target: Target,
        /// File, relative to the exported root.
        path: String,
    },
    /// Copy a local file (or standard input with `-`) to a remote path.
    Put {
        /// Server to talk to.
        #[command(flatten)]
        target: Target,
        /// Local file, or `-` for standard input.
        local: PathBuf,
        /// Remote path, relative to the exported root.
        remote: String,
        /// Apply the whole file in one write (staged, then committed): all or nothing where
        /// there is space for it.
        #[arg(long)]
        atomic: bool,
    },
    /// Show the attributes of a remote path.
    Stat {
        /// Server to talk to.
        #[command(flatten)]
        target: Target,
        /// Path, relative to the exported root.
        path: String,
    },
    /// Mount a server's export with FUSE so unmodified programs use remote files and devices.
    Mount(MountArgs),
}

/// Where the server is.
#[derive(Args, Debug, Clone)]
pub struct Target {
    /// Local interface to send raw Ethernet frames on (with --server MAC).
    #[arg(long, requires = "server", conflicts_with = "udp")]
    pub iface: Option<String>,
    /// Server MAC address (with --iface).
    #[arg(long)]
    pub server: Option<String>,
    /// Server UDP address HOST:PORT (instead of --iface/--server).
    #[arg(long)]
    pub udp: Option<SocketAddr>,
    /// Poll receives with a `sched_yield` between polls (same as `--mode spin`).
    #[arg(long, conflicts_with = "mode")]
    pub spin: bool,
    /// How receives wait: `busy` (poll without pause; ends on different CPUs), `spin` (poll
    /// and yield), `block` (sleep in the kernel, the default).
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<RecvMode>,
    /// Receive through a memory-mapped PACKET_RX_RING (with --iface): a poll reads shared
    /// memory instead of making a system call.
    #[arg(long, conflicts_with = "udp")]
    pub ring: bool,
    /// Inject faults into what this client sends, e.g. `drop=0.1,dup=0.1,seed=7`.
    #[arg(long)]
    pub fault: Option<String>,
}

/// Arguments of `partix fs mount`.
#[derive(Args, Debug, Clone)]
pub struct MountArgs {
    /// Local interface towards the server (or `udp` to use UDP, then SERVER is HOST:PORT).
    pub iface: String,
    /// Server MAC address (or HOST:PORT with `udp`).
    pub server: String,
    /// Empty local directory to mount on.
    pub mountpoint: PathBuf,
    /// Poll receives with a `sched_yield` between polls (same as `--mode spin`).
    #[arg(long, conflicts_with = "mode")]
    pub spin: bool,
    /// How receives wait: `busy`, `spin` or `block` (default).
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<RecvMode>,
    /// Receive through a memory-mapped PACKET_RX_RING (not with `udp`).
    #[arg(long)]
    pub ring: bool,
}

/// Arguments of `partix fs serve`.
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Interface to serve raw Ethernet frames on.
    #[arg(long, required_unless_present = "udp", conflicts_with = "udp")]
    pub iface: Option<String>,
    /// UDP address to serve on instead, e.g. 0.0.0.0:5640.
    #[arg(long)]
    pub udp: Option<SocketAddr>,
    /// Directory to export; paths never escape it.
    #[arg(long)]
    pub root: PathBuf,
    /// Largest message in bytes (capped by the MTU).
    #[arg(long, default_value_t = partix_wire::fs::DEFAULT_MSIZE)]
    pub msize: u32,
    /// Outstanding requests granted per client.
    #[arg(long, default_value_t = 16)]
    pub outstanding: u32,
    /// Open descriptors per client.
    #[arg(long, default_value_t = 64)]
    pub max_fds: u32,
    /// Clients with a session at the same time.
    #[arg(long, default_value_t = 16)]
    pub max_clients: usize,
    /// Seconds after which an idle client may be evicted for a new one.
    #[arg(long, default_value_t = 60)]
    pub idle_secs: u64,
    /// Poll receives with a `sched_yield` between polls (same as `--mode spin`).
    #[arg(long, conflicts_with = "mode")]
    pub spin: bool,
    /// How receives wait: `busy` (poll without pause: lowest latency, one core at 100 %, for a
    /// server pinned away from its clients), `spin` (poll and yield), `block` (the default).
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<RecvMode>,
    /// Receive through a memory-mapped PACKET_RX_RING (with --iface): a poll reads shared
    /// memory instead of making a system call.
    #[arg(long, conflicts_with = "udp")]
    pub ring: bool,
    /// Inject faults into the replies, e.g. `drop=0.1,dup=0.1,reorder=0.1,delay=0.1,seed=7`.
    #[arg(long)]
    pub fault: Option<String>,
    /// Log every error reply and session change.
    #[arg(short, long)]
    pub verbose: bool,
}

static STOP: AtomicBool = AtomicBool::new(false);

#[allow(unsafe_code)]
mod signals {
    extern "C" fn on_signal(_: libc::c_int) {
        super::STOP.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Set STOP on SIGINT and SIGTERM.
    pub fn install() {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: sigaction is plain old data; all-zero is valid.
            let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
            sa.sa_sigaction = on_signal as *const () as usize;
            // SAFETY: the handler only stores to an atomic (async-signal-safe); `sa` is valid.
            unsafe {
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
    }
}

/// Parse `--mode`.
fn parse_mode(s: &str) -> Result<RecvMode, String> {
    RecvMode::from_name(s).ok_or_else(|| format!("unknown mode {s:?}: use busy, spin or block"))
}

fn mode(spin: bool, mode: Option<RecvMode>) -> RecvMode {
    match (spin, mode) {
        (_, Some(m)) => m,
        (true, None) => RecvMode::Spin,
        (false, None) => RecvMode::Block,
    }
}

/// Open the raw-Ethernet transport on `iface`: a receive ring or plain socket reads.
fn open_ethernet(
    iface: &str,
    ring: bool,
    m: RecvMode,
) -> anyhow::Result<(Box<dyn Transport>, EthernetAddress)> {
    let what = if ring {
        "a packet socket with a receive ring"
    } else {
        "a packet socket"
    };
    let ctx = || format!("opening {what} on {iface} (needs root or CAP_NET_RAW)");
    Ok(if ring {
        let t = RingTransport::open(iface, m).with_context(ctx)?;
        let mac = t.mac();
        (Box::new(t), mac)
    } else {
        let t = PacketTransport::open(iface, m).with_context(ctx)?;
        let mac = t.mac();
        (Box::new(t), mac)
    })
}

fn wrap_fault(t: Box<dyn Transport>, spec: &Option<String>) -> anyhow::Result<Box<dyn Transport>> {
    Ok(match spec {
        Some(s) => Box::new(FaultInjector::new(
            t,
            FaultConfig::parse(s).context("--fault")?,
        )),
        None => t,
    })
}

/// Run the server described by `a` until SIGINT/SIGTERM; print the counters at exit.
///
/// # Errors
/// The root or the interface cannot be opened.
pub fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut cfg = ServerConfig::new(&a.root);
    cfg.msize = a.msize;
    cfg.outstanding = a.outstanding;
    cfg.max_fds = a.max_fds;
    cfg.max_clients = a.max_clients;
    cfg.idle_timeout = Duration::from_secs(a.idle_secs);
    cfg.verbose = a.verbose;
    let mut server = Server::new(cfg)?;
    let (t, addr): (Box<dyn Transport>, String) = match (&a.iface, a.udp) {
        (_, Some(u)) => {
            let t = UdpTransport::bind(u, mode(a.spin, a.mode))
                .with_context(|| format!("binding UDP {u}"))?;
            let addr = t.local_addr().to_string();
            (Box::new(t), addr)
        }
        (Some(i), None) => {
            let (t, mac) = open_ethernet(i, a.ring, mode(a.spin, a.mode))?;
            let how = if a.ring { ", receive ring" } else { "" };
            (t, format!("{mac} on {i}{how}"))
        }
        (None, None) => bail!("give --iface IF or --udp ADDR"),
    };
    let mut t = wrap_fault(t, &a.fault)?;
    signals::install();
    eprintln!(
        "partix-fs: serving {} at {addr} (msize {}, {} clients x {} fds)",
        a.root.display(),
        a.msize.min(t.max_message() as u32),
        a.max_clients,
        a.max_fds
    );
    server.run(t.as_mut(), &STOP)?;
    eprintln!("partix-fs: stopped; counters: {}", server.counters());
    Ok(ExitCode::SUCCESS)
}

/// Connect a client as `t` describes.
///
/// # Errors
/// Bad addresses, the socket cannot be opened, or the server does not answer.
pub fn connect(t: &Target) -> anyhow::Result<Client> {
    let cfg = ClientConfig {
        mode: mode(t.spin, t.mode),
        ..ClientConfig::default()
    };
    let (tr, server): (Box<dyn Transport>, PeerAddr) = match (&t.iface, &t.server, t.udp) {
        (_, _, Some(u)) => {
            if t.ring {
                bail!("--ring reads raw Ethernet frames: use it with --iface, not UDP");
            }
            let local: SocketAddr = if u.is_ipv4() {
                "0.0.0.0:0".parse()?
            } else {
                "[::]:0".parse()?
            };
            (
                Box::new(UdpTransport::bind(local, cfg.mode)?),
                PeerAddr::Udp(u),
            )
        }
        (Some(i), Some(s), None) => {
            let mac = EthernetAddress::parse(s).with_context(|| {
                format!("--server {s:?} is not a MAC address like 02:00:00:00:00:01")
            })?;
            let (tr, _) = open_ethernet(i, t.ring, cfg.mode)?;
            (tr, PeerAddr::Mac(mac))
        }
        _ => bail!("give --iface IF --server MAC, or --udp HOST:PORT"),
    };
    let tr = wrap_fault(tr, &t.fault)?;
    Client::connect(tr, server, cfg).with_context(|| format!("connecting to {server}"))
}

fn kind_char(k: FileKind) -> char {
    match k {
        FileKind::File => '-',
        FileKind::Dir => 'd',
        FileKind::CharDevice => 'c',
        FileKind::BlockDevice => 'b',
        FileKind::Symlink => 'l',
        FileKind::Fifo => 'p',
        FileKind::Socket => 's',
        FileKind::Unknown(_) => '?',
    }
}

/// Run a `partix fs` subcommand.
///
/// # Errors
/// Any failure, with what to do about it.
pub fn main(cmd: FsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        FsCommand::Serve(a) => serve(a),
        FsCommand::Ls { target, path } => {
            let mut c = connect(&target)?;
            let entries = c
                .readdir(&path)
                .with_context(|| format!("listing {path}"))?;
            let mut out = std::io::stdout().lock();
            for e in entries {
                writeln!(out, "{} {}", kind_char(e.kind), e.name)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        FsCommand::Cat { target, path } => {
            let mut c = connect(&target)?;
            let fd = c
                .open(&path, open_flags::RDONLY, 0)
                .with_context(|| format!("opening {path}"))?;
            let mut buf = vec![0u8; 64 * 1024];
            let mut off = 0u64;
            let mut out = std::io::stdout().lock();
            loop {
                let n = c
                    .read(fd, Some(off), &mut buf)
                    .with_context(|| format!("reading {path}"))?;
                if n == 0 {
                    break;
                }
                out.write_all(&buf[..n])?;
                off += n as u64;
            }
            c.close(fd)?;
            Ok(ExitCode::SUCCESS)
        }
        FsCommand::Put {
            target,
            local,
            remote,
            atomic,
        } => {
            let mut data = Vec::new();
            if local.as_os_str() == "-" {
                std::io::stdin().read_to_end(&mut data)?;
            } else {
                data = std::fs::read(&local)
                    .with_context(|| format!("reading {}", local.display()))?;
            }
            let mut c = connect(&target)?;
            let fd = c
                .open(
                    &remote,
                    open_flags::WRONLY | open_flags::CREAT | open_flags::TRUNC,
                    0o644,
                )
                .with_context(|| format!("creating {remote}"))?;
            let n = if atomic {
                c.write_atomic(fd, Some(0), &data)
            } else {
                c.write(fd, Some(0), &data)
            }
            .with_context(|| format!("writing {remote}"))?;
            c.close(fd)?;
            if n != data.len() {
                bail!("short write: {n} of {} bytes", data.len());
            }
            Ok(ExitCode::SUCCESS)
        }
        FsCommand::Stat { target, path } => {
            let mut c = connect(&target)?;
            let a = c.stat(&path).with_context(|| format!("stat {path}"))?;
            println!(
                "{path}: {}{:04o} size {} nlink {} ino {} rdev {:#x} mtime {}.{:09}",
                kind_char(a.kind),
                a.perm,
                a.size,
                a.nlink,
                a.ino,
                a.rdev,
                a.mtime_sec,
                a.mtime_nsec
            );
            Ok(ExitCode::SUCCESS)
        }
        FsCommand::Mount(m) => crate::fuse::mount(m),
    }
}

/// Return whether a stop signal arrived (for long-running subcommands).
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}
