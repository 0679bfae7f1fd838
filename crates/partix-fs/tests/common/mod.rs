//! Shared harness: a veth pair between two namespaces, the server as a real process in one,
//! clients in the other.
#![allow(dead_code)]

use partix_fs::client::{Client, ClientConfig};
use partix_fs::fault::{FaultConfig, FaultInjector};
use partix_fs::netns::{in_netns, VethPair};
use partix_fs::transport::{
    PacketTransport, PeerAddr, RecvMode, RingTransport, Transport, UdpTransport,
};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A veth pair (client end `a`, server end `b`) and a scratch export directory.
pub struct Net {
    pub pair: VethPair,
    pub root: PathBuf,
}

impl Net {
    pub fn new() -> Net {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let prefix = format!("pfs{}x{n}", std::process::id() % 100_000);
        let pair = VethPair::create(&prefix).expect("create veth pair (needs root)");
        let root = std::env::temp_dir().join(format!("{prefix}-root"));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        Net { pair, root }
    }

    /// Start the server on the `b` end (AF_PACKET) with extra arguments.
    pub fn serve(&self, extra: &[&str]) -> ServerProc {
        let mut args = vec![
            "serve".to_string(),
            "--iface".into(),
            self.pair.if_b.clone(),
            "--root".into(),
            self.root.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        ServerProc::start(&self.pair.ns_b, &args)
    }

    /// Start the server on UDP port 5640 of the `b` end.
    pub fn serve_udp(&self, extra: &[&str]) -> ServerProc {
        let mut args = vec![
            "serve".to_string(),
            "--udp".into(),
            format!("{}:5640", self.pair.ip_b),
            "--root".into(),
            self.root.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        ServerProc::start(&self.pair.ns_b, &args)
    }

    pub fn server_mac(&self) -> PeerAddr {
        PeerAddr::Mac(self.pair.mac_b)
    }

    /// Open a packet transport on the client end.
    pub fn client_transport(&self) -> Box<dyn Transport> {
        let ifa = self.pair.if_a.clone();
        let t = in_netns(&self.pair.ns_a, move || {
            PacketTransport::open(&ifa, RecvMode::Block)
        })
        .unwrap()
        .unwrap();
        Box::new(t)
    }

    /// Open a receive-ring transport on the client end.
    pub fn ring_transport(&self, mode: RecvMode) -> Box<dyn Transport> {
        let ifa = self.pair.if_a.clone();
        let t = in_netns(&self.pair.ns_a, move || RingTransport::open(&ifa, mode))
            .unwrap()
            .expect("open a PACKET_RX_RING socket");
        Box::new(t)
    }

    /// Connect a client through a receive ring in `mode`.
    pub fn ring_client(&self, mode: RecvMode) -> Client {
        let cfg = ClientConfig {
            mode,
            ..ClientConfig::default()
        };
        self.ring_client_with(cfg, None)
    }

    /// Connect a client through a receive ring waiting in `cfg.mode`, optionally behind a
    /// fault injector.
    pub fn ring_client_with(&self, cfg: ClientConfig, fault: Option<FaultConfig>) -> Client {
        let mut t = self.ring_transport(cfg.mode);
        if let Some(f) = fault {
            t = Box::new(FaultInjector::new(t, f));
        }
        connect_retrying(t, self.server_mac(), cfg).expect("connect through the ring")
    }

    pub fn client_with(
        &self,
        cfg: ClientConfig,
        fault: Option<FaultConfig>,
    ) -> Result<Client, partix_fs::FsError> {
        let mut t = self.client_transport();
        if let Some(f) = fault {
            t = Box::new(FaultInjector::new(t, f));
        }
        connect_retrying(t, self.server_mac(), cfg)
    }

    pub fn client(&self) -> Client {
        self.client_with(ClientConfig::default(), None)
            .expect("connect")
    }

    pub fn udp_client(&self) -> Client {
        let t = in_netns(&self.pair.ns_a, || {
            UdpTransport::bind("0.0.0.0:0".parse().unwrap(), RecvMode::Block)
        })
        .unwrap()
        .unwrap();
        let server = PeerAddr::Udp(format!("{}:5640", self.pair.ip_b).parse().unwrap());
        connect_retrying(Box::new(t), server, ClientConfig::default()).expect("connect udp")
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The server may still be starting: the handshake's own retransmissions cover that, and one
/// more attempt covers a slow first start.
pub fn connect_retrying(
    t: Box<dyn Transport>,
    server: PeerAddr,
    cfg: ClientConfig,
) -> Result<Client, partix_fs::FsError> {
    Client::connect(t, server, cfg)
}

pub fn tool() -> &'static str {
    env!("CARGO_BIN_EXE_partix-fs-tool")
}

/// A process started in a network namespace with `nsenter --net` (same mount namespace as the
/// test), killed by pid on drop.
pub struct ServerProc {
    child: Option<Child>,
}

impl ServerProc {
    pub fn start(ns: &str, args: &[String]) -> ServerProc {
        let child = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{ns}"))
            .arg(tool())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn server");
        // Wait until the server printed its banner (it is then reading its socket).
        let mut s = ServerProc { child: Some(child) };
        s.wait_banner();
        s
    }

    fn wait_banner(&mut self) {
        // The client's handshake retransmits until the server reads its socket; here only make
        // sure the process did not fail at once (bad root, bad interface).
        std::thread::sleep(Duration::from_millis(100));
        if let Some(c) = self.child.as_mut() {
            if let Ok(Some(st)) = c.try_wait() {
                let mut e = String::new();
                let _ = c.stderr.take().map(|mut s| s.read_to_string(&mut e));
                panic!("server exited early ({st}): {e}");
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// Return whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Stop with SIGTERM and return its stderr (the counters line is at the end).
    pub fn stop(mut self) -> String {
        let mut c = self.child.take().unwrap();
        // nsenter execs the tool, so the pid is the server's.
        unsafe_kill(c.id(), libc::SIGTERM);
        let mut e = String::new();
        if let Some(mut s) = c.stderr.take() {
            let _ = s.read_to_string(&mut e);
        }
        let _ = c.wait();
        e
    }
}

fn unsafe_kill(pid: u32, sig: i32) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status();
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Parse `name=value` from the server's counters line.
pub fn counter(stderr: &str, name: &str) -> u64 {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.contains("counters:"))
        .unwrap_or_else(|| panic!("no counters line in: {stderr}"));
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no counter {name} in {line}"))
}

pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32 * 31 + u32::from(seed) * 7 + (i as u32 >> 8)) as u8)
        .collect()
}

pub fn path_in(root: &Path, p: &str) -> PathBuf {
    root.join(p)
}
