//! What the socket-agent test binaries share: the two-partition module whose one sampling
//! channel uses the transport named in place of `TRANSPORT`, and its ports attached as a
//! partition attaches them.

use partix_runtime::channels::{map_port, ChannelSet, MappedPort};
use std::os::fd::{FromRawFd, OwnedFd};

/// The module (replace `TRANSPORT` with `udp` or `tcp`).
pub const XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
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
pub fn mapped(set: &ChannelSet, p: usize) -> Vec<MappedPort> {
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
