//! The receiving agent of a `udp` / `tcp` sampling destination (`transport::SocketAgent`) costs
//! no CPU when there is nothing to receive, also once its peer has closed the connection (a TCP
//! socket then polls readable for good: an agent that drained and polled again at once would
//! spin at SCHED_FIFO priority 96 and starve the partition), and its thread ends with the port.
//!
//! Alone in its test binary: it measures the process's CPU time.

use partix_runtime::channels::{map_fd, ChannelSet, MappedPort};
use partix_runtime::transport::SamplingDestination;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

const XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ARINC_653_Module xmlns:partix="urn:partix:config:1" ModuleName="socket-agent">
  <Partition PartitionIdentifier="1" PartitionName="SRC" partix:Executable="none">
    <Sampling_Port Name="OUT" MaxMessageSize="32" Direction="SOURCE" RefreshRateSeconds="0.1"/>
  </Partition>
  <Partition PartitionIdentifier="2" PartitionName="DST" partix:Executable="none">
    <Sampling_Port Name="IN" MaxMessageSize="32" Direction="DESTINATION" RefreshRateSeconds="0.1"/>
  </Partition>
  <Module_Schedule ScheduleIdentifier="1" ScheduleName="s" InitialModuleSchedule="true" MajorFrameSeconds="0.02">
    <Partition_Schedule PartitionIdentifier="1" PartitionName="SRC" PeriodSeconds="0.02" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="1" WindowStartSeconds="0.0" WindowDurationSeconds="0.01" PartitionPeriodStart="true"/>
    </Partition_Schedule>
    <Partition_Schedule PartitionIdentifier="2" PartitionName="DST" PeriodSeconds="0.02" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="2" WindowStartSeconds="0.01" WindowDurationSeconds="0.01" PartitionPeriodStart="true"/>
    </Partition_Schedule>
  </Module_Schedule>
  <Connection_Table>
    <Channel ChannelIdentifier="1" ChannelName="c" partix:Transport="TRANSPORT">
      <Source><Standard_Partition PartitionIdentifier="1" PartitionName="SRC" PortName="OUT"/></Source>
      <Destination><Standard_Partition PartitionIdentifier="2" PartitionName="DST" PortName="IN"/></Destination>
    </Channel>
  </Connection_Table>
</ARINC_653_Module>
"#;

/// Partition `p`'s ports, attached as the partition would (dups of the executive's descriptors).
fn mapped(set: &ChannelSet, p: usize) -> Vec<MappedPort> {
    let fds = set.child_fds(p);
    let mut k = 0;
    set.ports_of(p)
        .into_iter()
        .map(|desc| {
            let mut regions = Vec::new();
            let mut sockets = Vec::new();
            for &(_, access) in &desc.fds {
                // SAFETY: dup returns a fresh descriptor nothing else owns.
                let fd = unsafe { libc::dup(fds[k].0) };
                k += 1;
                if desc.transport.socket_kind().is_some() {
                    // SAFETY: as above.
                    sockets.push(unsafe { OwnedFd::from_raw_fd(fd) });
                } else {
                    // SAFETY: as above.
                    regions.push(Arc::new(unsafe { map_fd(fd, access) }.unwrap()));
                }
            }
            MappedPort {
                desc,
                regions,
                sockets,
            }
        })
        .collect()
}

/// CPU time of this process (all threads), user + system.
fn cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
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
        let set = ChannelSet::create(&m).unwrap();
        let (src, dst) = (mapped(&set, 0), mapped(&set, 1));
        let mut r = SamplingDestination::attach(&dst[0]).unwrap();
        assert_eq!(
            threads(),
            before + 1,
            "{t}: one agent thread per destination"
        );
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
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while threads() > before && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(threads(), before, "{t}: the agent thread outlived its port");
    }
}
