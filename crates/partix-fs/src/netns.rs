//! Network namespaces joined by a veth pair, for tests and benchmarks.
//!
//! [`VethPair::create`] makes two namespaces and one veth pair between them (with fixed MACs and
//! IPv4 addresses); dropping it deletes both namespaces, which deletes the pair. Code runs in a
//! namespace through [`in_netns`], which moves a fresh thread into it: sockets created there stay
//! in that namespace for their whole life, whichever thread uses them later.
#![allow(unsafe_code)]

use partix_wire::ethernet::EthernetAddress;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::process::Command;

/// Two namespaces `a` and `b` joined by a veth pair.
#[derive(Debug)]
pub struct VethPair {
    /// Namespace of end `a`.
    pub ns_a: String,
    /// Namespace of end `b`.
    pub ns_b: String,
    /// Interface name of end `a` (inside `ns_a`).
    pub if_a: String,
    /// Interface name of end `b` (inside `ns_b`).
    pub if_b: String,
    /// MAC of end `a`.
    pub mac_a: EthernetAddress,
    /// MAC of end `b`.
    pub mac_b: EthernetAddress,
    /// IPv4 address of end `a`.
    pub ip_a: Ipv4Addr,
    /// IPv4 address of end `b`.
    pub ip_b: Ipv4Addr,
}

fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip").args(args).output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

impl VethPair {
    /// Create namespaces `<prefix>a`/`<prefix>b` and interfaces `<prefix>a`/`<prefix>b`
    /// (`prefix` at most 12 characters, unique among concurrent users).
    ///
    /// # Errors
    /// The failing `ip` command and its message (needs root / CAP_NET_ADMIN).
    pub fn create(prefix: &str) -> io::Result<VethPair> {
        if prefix.len() > 12 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "prefix longer than 12",
            ));
        }
        let p = VethPair {
            ns_a: format!("{prefix}a"),
            ns_b: format!("{prefix}b"),
            if_a: format!("{prefix}a"),
            if_b: format!("{prefix}b"),
            mac_a: EthernetAddress([0x02, 0x70, 0x66, 0x73, 0x00, 0x0a]),
            mac_b: EthernetAddress([0x02, 0x70, 0x66, 0x73, 0x00, 0x0b]),
            ip_a: Ipv4Addr::new(10, 77, 0, 1),
            ip_b: Ipv4Addr::new(10, 77, 0, 2),
        };
        // One `ip netns add` at a time in this process: the first on a fresh machine makes
        // `/run/netns` a shared mount of itself, and two at once can stack those mounts and
        // hide each other's namespace files (found by review).
        static ADD: std::sync::Mutex<()> = std::sync::Mutex::new(());
        {
            let _one = ADD.lock().unwrap_or_else(|e| e.into_inner());
            // Remove leftovers of a crashed run with the same names.
            let _ = ip(&["netns", "del", &p.ns_a]);
            let _ = ip(&["netns", "del", &p.ns_b]);
            ip(&["netns", "add", &p.ns_a])?;
            // From here on, Drop cleans up whatever was made.
            ip(&["netns", "add", &p.ns_b])?;
        }
        let (ma, mb) = (p.mac_a.to_string(), p.mac_b.to_string());
        ip(&[
            "link", "add", &p.if_a, "netns", &p.ns_a, "address", &ma, "type", "veth", "peer",
            "name", &p.if_b, "netns", &p.ns_b, "address", &mb,
        ])?;
        for (ns, ifn, addr) in [
            (&p.ns_a, &p.if_a, format!("{}/24", p.ip_a)),
            (&p.ns_b, &p.if_b, format!("{}/24", p.ip_b)),
        ] {
            ip(&["-n", ns, "addr", "add", &addr, "dev", ifn])?;
            ip(&["-n", ns, "link", "set", ifn, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(p)
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.ns_a]);
        let _ = ip(&["netns", "del", &self.ns_b]);
    }
}

/// Move the calling thread into network namespace `ns` (as made by `ip netns add`).
///
/// # Errors
/// The namespace does not exist, or `setns` is not permitted.
pub fn enter_netns(ns: &str) -> io::Result<()> {
    let f = std::fs::File::open(format!("/run/netns/{ns}"))?;
    // SAFETY: `f` is an open namespace file; setns only changes this thread's namespace.
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Run `f` on a new thread inside network namespace `ns` and return its result.
///
/// # Errors
/// Entering the namespace failed.
///
/// # Panics
/// When `f` panics (the panic is propagated).
pub fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> io::Result<T> {
    let ns = ns.to_string();
    let h = std::thread::spawn(move || -> io::Result<T> {
        enter_netns(&ns)?;
        Ok(f())
    });
    match h.join() {
        Ok(r) => r,
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// Spawn a thread inside network namespace `ns` running `f`.
pub fn spawn_in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<io::Result<T>> {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        enter_netns(&ns)?;
        Ok(f())
    })
}
