//! The acknowledging agent of a `udp` / `tcp` queuing destination (`transport::QueueAgent`):
//! a source that used its last credit after the destination's last receive gets the credit
//! the destination has back although the destination makes no further call of its port, and
//! no more than that. (Its own test binary: `socket_agent.rs` counts this process's threads.)

use partix_runtime::channels::ChannelSet;
use partix_runtime::transport::{QueueDestination, QueueSource};
use partix_shm::ring::PushError;
use std::time::{Duration, Instant};

// The ports attached as a partition attaches them (its sampling module `XML` is not used here).
#[allow(dead_code)]
mod socket_agent_util;
use socket_agent_util::mapped;

/// A queuing channel of 8 messages (the source's credit; acks in batches of 4).
const XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ARINC_653_Module xmlns:partix="urn:partix:config:1" ModuleName="queue-agent">
  <Partition PartitionIdentifier="1" PartitionName="SRC" partix:Executable="none">
    <Queuing_Port Name="OUT" MaxMessageSize="16" Direction="SOURCE" MaxNbMessages="8"/>
  </Partition>
  <Partition PartitionIdentifier="2" PartitionName="DST" partix:Executable="none">
    <Queuing_Port Name="IN" MaxMessageSize="16" Direction="DESTINATION" MaxNbMessages="8"/>
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

fn msg(i: u8) -> [u8; 16] {
    [i; 16]
}

/// Send message `i`, retrying for up to `limit` while the source has no credit; return whether
/// it went.
fn send_within(tx: &mut QueueSource, i: u8, limit: Duration) -> bool {
    let t = Instant::now();
    loop {
        match tx.try_send(&msg(i)) {
            Ok(()) => return true,
            Err(PushError::Full) if t.elapsed() < limit => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(PushError::Full) => return false,
            Err(e) => panic!("send {i}: {e:?}"),
        }
    }
}

/// Receive the next message, waiting up to 10 s for it to arrive.
fn receive(rx: &mut QueueDestination) -> u8 {
    let mut buf = [0u8; 16];
    let t = Instant::now();
    loop {
        match rx.try_recv(&mut buf) {
            Ok(16) => {
                assert!(buf.iter().all(|&b| b == buf[0]), "torn message {buf:?}");
                return buf[0];
            }
            Ok(n) => panic!("a message of {n} bytes"),
            Err(_) if t.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_micros(200))
            }
            Err(e) => panic!("nothing arrived: {e:?}"),
        }
    }
}

#[test]
fn a_full_source_gets_the_credit_its_idle_destination_has_and_no_more() {
    for t in ["udp", "tcp"] {
        let m = partix_config::parse_str(&XML.replace("TRANSPORT", t), None).unwrap();
        let set = ChannelSet::create(&m).unwrap();
        let (src, dst) = (mapped(&set, 0), mapped(&set, 1));
        let mut tx = QueueSource::attach(&src[0]).unwrap();
        let mut rx = QueueDestination::attach(&dst[0]).unwrap();
        // One message sent and consumed: the destination owes the source one credit, less than
        // a batch, and saw no sign of the source running out (the socket was empty).
        assert!(send_within(&mut tx, 0, Duration::from_secs(10)), "{t}");
        assert_eq!(receive(&mut rx), 0, "{t}");
        // The source fills what it thinks it has (7 more, or 8 if the agent was quick), and
        // the destination makes no call from here on.
        let mut next = 1u8;
        while tx.try_send(&msg(next)).is_ok() {
            next += 1;
            assert!(
                next <= 9,
                "{t}: the source sent past the queue's 8 messages"
            );
        }
        // The destination holds next - 1 messages of 8: the credit of the rest comes back
        // without a call of the port (it waited for the destination's next call, for ever).
        while next <= 8 {
            assert!(
                send_within(&mut tx, next, Duration::from_secs(3)),
                "{t}: the source was left full with {} of 8 messages queued",
                next - 1
            );
            next += 1;
        }
        // Now the queue is full: no credit comes back, however long the source waits.
        assert!(
            !send_within(&mut tx, 9, Duration::from_millis(300)),
            "{t}: the source sent a 9th message into a queue of 8"
        );
        // The destination gets all of them, in order, and then the source has room again.
        let got: Vec<u8> = (0..8).map(|_| receive(&mut rx)).collect();
        assert_eq!(got, (1..=8).collect::<Vec<u8>>(), "{t}");
        assert!(send_within(&mut tx, 9, Duration::from_secs(3)), "{t}");
        assert_eq!(receive(&mut rx), 9, "{t}");
    }
}
