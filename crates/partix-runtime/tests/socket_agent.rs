//! The receiving agent of a `udp` / `tcp` sampling destination (`transport::SocketAgent`) costs
//! no CPU when there is nothing to receive, also once its peer has closed the connection (a TCP
//! socket then polls readable for good: an agent that drained and polled again at once would
//! spin at SCHED_FIFO priority 96 and starve the partition), and its thread ends with the port.
//!
//! The CPU time measured is the agent thread's own: what other threads of the process use does
//! not count against it (an idle agent runs about 0.3 ms in 300 ms, a spinning one all of them).

use partix_runtime::channels::ChannelSet;
use partix_runtime::transport::SamplingDestination;
use std::time::{Duration, Instant};

mod socket_agent_util;
use socket_agent_util::{mapped, XML};

/// Ids of this process's threads.
fn tids() -> Vec<u32> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_str().unwrap().parse().unwrap())
        .collect()
}

/// CPU time of thread `tid` of this process: the time it ran on a CPU (the first field of its
/// `schedstat`, in ns), else its user + system time in clock ticks (`stat`).
fn thread_cpu(tid: u32) -> Duration {
    let task = format!("/proc/self/task/{tid}");
    if let Some(ns) = std::fs::read_to_string(format!("{task}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
    {
        return Duration::from_nanos(ns);
    }
    let stat = std::fs::read_to_string(format!("{task}/stat")).unwrap();
    // After the command name in parentheses: state (field 3), ..., utime (14), stime (15).
    let f: Vec<u64> = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .skip(11)
        .take(2)
        .map(|v| v.parse().unwrap())
        .collect();
    // SAFETY: sysconf has no memory arguments.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_nanos((f[0] + f[1]) * 1_000_000_000 / hz)
}

/// The name of thread `tid` of this process.
fn thread_name(tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .unwrap()
        .trim_end()
        .to_owned()
}

/// Threads of this process (the `Threads:` line of /proc/self/status).
fn threads() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

#[test]
fn an_idle_or_orphaned_socket_agent_uses_no_cpu_and_ends_with_its_port() {
    for t in ["udp", "tcp"] {
        let m = partix_config::parse_str(&XML.replace("TRANSPORT", t), None).unwrap();
        let before = threads();
        let old = tids();
        let set = ChannelSet::create(&m).unwrap();
        let (src, dst) = (mapped(&set, 0), mapped(&set, 1));
        let mut r = SamplingDestination::attach(&dst[0]).unwrap();
        assert_eq!(
            threads(),
            before + 1,
            "{t}: one agent thread per destination"
        );
        let new: Vec<u32> = tids().into_iter().filter(|t| !old.contains(t)).collect();
        let [agent] = new[..] else {
            panic!("{t}: one agent thread per destination, new threads {new:?}")
        };
        // The network manager's name, "partix-netmgr-IN" cut to the kernel's 15 bytes: the
        // thread names itself once it runs (until then it has its creator's).
        let named = Instant::now() + Duration::from_secs(10);
        while !thread_name(agent).starts_with("partix-netmgr") && Instant::now() < named {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            thread_name(agent).starts_with("partix-netmgr"),
            "{t}: the new thread {agent} is {:?}",
            thread_name(agent)
        );
        let cpu = || thread_cpu(agent);
        let mut buf = [0u8; 32];
        // Nothing to receive: the agent waits in poll(2).
        let c0 = cpu();
        std::thread::sleep(Duration::from_millis(300));
        let idle = cpu() - c0;
        // The peer closes: every descriptor of the source end (the executive's and the
        // partition's) goes away; a TCP socket now polls readable (end of stream) for good.
        drop(src);
        drop(set);
        let c1 = cpu();
        std::thread::sleep(Duration::from_millis(300));
        let orphaned = cpu() - c1;
        assert!(
            idle < Duration::from_millis(30) && orphaned < Duration::from_millis(30),
            "{t}: the agent used CPU: {idle:?} idle, {orphaned:?} after the peer closed"
        );
        assert!(r.read(&mut buf).is_err(), "{t}: nothing was ever written");
        // The port goes: its agent ends (within a poll of AGENT_POLL).
        drop(r);
        drop(dst);
        let deadline = Instant::now() + Duration::from_secs(5);
        while threads() > before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(threads(), before, "{t}: the agent thread outlived its port");
    }
}
