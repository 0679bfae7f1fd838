//! Valid configurations parse into the expected frozen model.

use std::path::{Path, PathBuf};
use std::time::Duration;

use partix_config::model::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn uav_example_parses_into_the_expected_model() {
    let path = repo().join("examples/uav/module.xml");
    let m = partix_config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.name, "uav");
    assert_eq!(m.version.as_deref(), Some("1"));
    assert_eq!(m.source.as_deref(), Some(path.as_path()));

    assert_eq!(m.partitions.len(), 2);
    let ofp = &m.partitions[0];
    assert_eq!((ofp.id, ofp.name.as_str()), (PartitionId(1), "OFP"));
    assert_eq!(ofp.criticality, Criticality::LevelA);
    assert!(ofp.system_partition);
    // A C source is resolved against the configuration's directory.
    assert_eq!(
        ofp.executable.as_deref(),
        Some(repo().join("examples/uav/ofp.c").as_path())
    );
    assert_eq!(ofp.sampling_ports.len(), 1);
    let nav = &ofp.sampling_ports[0];
    assert_eq!(nav.name, "nav_state");
    assert_eq!(nav.max_message_size, 64);
    assert_eq!(nav.direction, PortDirection::Source);
    assert_eq!(nav.refresh_period, ms(20));
    let cmd = &ofp.queuing_ports[0];
    assert_eq!(
        (cmd.name.as_str(), cmd.max_message_size, cmd.max_nb_messages),
        ("video_cmd", 32, 8)
    );
    assert_eq!(cmd.direction, PortDirection::Destination);
    assert!(ofp.location.line > 1);

    let vsp = &m.partitions[1];
    assert_eq!((vsp.id, vsp.name.as_str()), (PartitionId(2), "VSP"));
    assert_eq!(vsp.criticality, Criticality::LevelC);
    assert!(!vsp.system_partition);
    // A bare program name is kept for the runtime to look up beside `partix`.
    assert_eq!(vsp.executable.as_deref(), Some(Path::new("uav-vsp")));
    assert!(vsp.memory_limit_bytes().is_some());

    // Schedules.
    assert_eq!(m.schedules.len(), 2);
    assert_eq!(m.initial_schedule, 0);
    let normal = &m.schedules[0];
    assert_eq!(
        (normal.id, normal.name.as_deref()),
        (ScheduleId(1), Some("normal"))
    );
    assert_eq!(normal.major_frame, ms(80));
    let got: Vec<(u64, u64, u32)> = normal
        .windows
        .iter()
        .map(|w| {
            (
                w.offset.as_millis() as u64,
                w.duration.as_millis() as u64,
                w.partition.0,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (0, 10, 1),
            (10, 10, 2),
            (20, 10, 1),
            (30, 10, 2),
            (40, 10, 1),
            (50, 10, 2),
            (60, 10, 1),
            (70, 10, 2)
        ]
    );
    assert_eq!(
        normal.partitions,
        vec![
            PartitionSchedule {
                partition: PartitionId(1),
                period: ms(20),
                duration: ms(10)
            },
            PartitionSchedule {
                partition: PartitionId(2),
                period: ms(80),
                duration: ms(40)
            },
        ]
    );
    let video = m.schedule(ScheduleId(2)).expect("schedule 2");
    assert_eq!(video.name.as_deref(), Some("video-priority"));
    let got: Vec<(u64, u64, u32)> = video
        .windows
        .iter()
        .map(|w| {
            (
                w.offset.as_millis() as u64,
                w.duration.as_millis() as u64,
                w.partition.0,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (0, 8, 1),
            (8, 12, 2),
            (20, 8, 1),
            (28, 12, 2),
            (40, 8, 1),
            (48, 12, 2),
            (60, 8, 1),
            (68, 12, 2)
        ]
    );

    // Channels.
    assert_eq!(m.channels.len(), 2);
    let c = &m.channels[0];
    assert_eq!(
        (c.id, c.name.as_deref(), c.kind),
        (ChannelId(1), Some("nav_state"), ChannelKind::Sampling)
    );
    assert_eq!(
        c.source,
        PortRef {
            partition: PartitionId(1),
            port: "nav_state".into()
        }
    );
    assert_eq!(
        c.destinations,
        vec![PortRef {
            partition: PartitionId(2),
            port: "nav_state".into()
        }]
    );
    let c = &m.channels[1];
    assert_eq!((c.id, c.kind), (ChannelId(2), ChannelKind::Queuing));
    assert_eq!(
        c.source,
        PortRef {
            partition: PartitionId(2),
            port: "video_cmd".into()
        }
    );
    assert_eq!(c.transport, None);

    // Health monitor.
    let sys: Vec<(u32, ErrorCode, ErrorLevel)> = m
        .system_hm
        .iter()
        .map(|e| (e.error_id, e.code, e.level))
        .collect();
    assert_eq!(
        sys,
        vec![
            (1, ErrorCode::DeadlineMissed, ErrorLevel::Process),
            (2, ErrorCode::ApplicationError, ErrorLevel::Process),
            (3, ErrorCode::NumericError, ErrorLevel::Partition),
            (4, ErrorCode::MemoryViolation, ErrorLevel::Partition),
            (5, ErrorCode::PartitionCrash, ErrorLevel::Partition),
            (6, ErrorCode::InitTimeout, ErrorLevel::Module),
        ]
    );
    assert_eq!(
        m.module_hm,
        vec![ModuleHmEntry {
            system_state: 1,
            error_id: 6,
            action: ModuleAction::Shutdown
        }]
    );
    let ofp_hm: Vec<(ErrorCode, PartitionAction)> =
        ofp.hm.iter().map(|e| (e.code, e.action)).collect();
    assert_eq!(
        ofp_hm,
        vec![
            (ErrorCode::DeadlineMissed, PartitionAction::Ignore),
            (ErrorCode::ApplicationError, PartitionAction::RestartProcess),
            (ErrorCode::MemoryViolation, PartitionAction::ColdStart),
            (ErrorCode::PartitionCrash, PartitionAction::ColdStart),
        ]
    );
    let vsp_hm: Vec<(ErrorCode, PartitionAction)> =
        vsp.hm.iter().map(|e| (e.code, e.action)).collect();
    assert_eq!(
        vsp_hm,
        vec![(ErrorCode::PartitionCrash, PartitionAction::Idle)]
    );
}

#[test]
fn model_lookups() {
    let m = partix_config::load(&repo().join("examples/uav/module.xml")).unwrap();
    assert_eq!(m.initial().name.as_deref(), Some("normal"));
    let vsp = m.partition_by_name("VSP").expect("VSP");
    assert_eq!(vsp.id, PartitionId(2));
    assert!(m.partition_by_name("vsp").is_none());
    assert_eq!(
        vsp.sampling_port("nav_state").unwrap().direction,
        PortDirection::Destination
    );
    assert!(vsp.sampling_port("video_cmd").is_none());
    assert_eq!(vsp.queuing_port("video_cmd").unwrap().max_nb_messages, 8);
    assert_eq!(
        m.channel_of(PartitionId(2), "nav_state").unwrap().id,
        ChannelId(1)
    );
    assert_eq!(
        m.channel_of(PartitionId(1), "nav_state").unwrap().id,
        ChannelId(1)
    );
    assert_eq!(
        m.channel_of(PartitionId(1), "video_cmd").unwrap().id,
        ChannelId(2)
    );
    assert!(m.channel_of(PartitionId(1), "nope").is_none());
    assert_eq!(
        vsp.hm_action(1, ErrorCode::PartitionCrash),
        Some(PartitionAction::Idle)
    );
    assert_eq!(vsp.hm_action(1, ErrorCode::DeadlineMissed), None);
    let video = m.schedule(ScheduleId(2)).unwrap();
    assert_eq!(
        video.partition_schedule(PartitionId(2)).unwrap().duration,
        ms(48)
    );
    let starts: Vec<u128> = video
        .windows_of(PartitionId(2))
        .map(|w| w.offset.as_millis())
        .collect();
    assert_eq!(starts, vec![8, 28, 48, 68]);
}

#[test]
fn uav_summary_lists_everything() {
    let m = partix_config::load(&repo().join("examples/uav/module.xml")).unwrap();
    let s = partix_config::summary(&m);
    for needle in [
        "module `uav` version 1",
        "partitions (2)",
        "OFP",
        "VSP",
        "schedule 1 `normal`, major frame 80 ms (initial)",
        "schedule 2 `video-priority`, major frame 80 ms",
        "8       68 ms  80 ms  VSP",
        "idle per major frame: 0 ms",
        "1 nav_state: OFP.nav_state -> VSP.nav_state (sampling, transport default)",
        "2 video_cmd: VSP.video_cmd -> OFP.video_cmd (queuing, transport default)",
        "module: state 1 error 6 -> SHUTDOWN",
        "VSP: state 1 error 5 PARTITION_CRASH -> IDLE",
        "partition `VSP` reads one-sided channel nav_state and has no partix:User",
        "partition `OFP` reads one-sided channel video_cmd and has no partix:User",
    ] {
        assert!(s.contains(needle), "summary lacks {needle:?}:\n{s}");
    }
}

#[test]
fn a_note_names_the_partitions_without_a_user_that_read_one_sided_channels() {
    let mut m = partix_config::load(&repo().join("examples/uav/module.xml")).unwrap();
    assert_eq!(partix_config::notes(&m).len(), 2);
    // A user: no note for that partition.
    m.partitions[1].user = Some(partix_config::model::Credentials {
        uid: 61011,
        gid: 61011,
    });
    let notes = partix_config::notes(&m);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("`OFP`"), "{notes:?}");
    // A socket channel has no region to re-open.
    for c in &mut m.channels {
        c.transport = Some("udp".into());
    }
    assert!(partix_config::notes(&m).is_empty());
    assert!(!partix_config::summary(&m).contains("notes:"));
    // A two-sided destination holds its TX region read-write by design: nothing to re-open.
    for c in &mut m.channels {
        c.transport = Some("two-sided".into());
    }
    assert!(partix_config::notes(&m).is_empty());
    // The one-sided transport named, not defaulted, is the same as the default.
    for c in &mut m.channels {
        c.transport = Some("one-sided".into());
    }
    assert_eq!(partix_config::notes(&m).len(), 1);
}

#[test]
fn pok_style_configuration_is_accepted() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/good/pok_style.xml");
    let m = partix_config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        m.name, "pok_style",
        "the file stem names a module without ModuleName"
    );
    assert_eq!(m.version.as_deref(), Some("2.1"));
    assert_eq!(m.schedules.len(), 1);
    assert_eq!(m.schedules[0].id, ScheduleId(1));
    assert_eq!(m.initial_schedule, 0);
    // Windows are sorted by offset whatever the file order.
    let offs: Vec<Duration> = m.schedules[0].windows.iter().map(|w| w.offset).collect();
    assert_eq!(offs, vec![ms(0), ms(100), ms(500)]);
    assert!(m.schedules[0]
        .windows
        .iter()
        .filter(|w| w.partition == PartitionId(10))
        .all(|w| w.period_start));
    let sensors = m.partition(PartitionId(10)).unwrap();
    assert_eq!(sensors.entry_point, "sensors_main");
    assert_eq!(sensors.criticality, Criticality::LevelB);
    assert_eq!(sensors.executable, None);
    let logger = m.partition(PartitionId(11)).unwrap();
    assert_eq!(
        logger.executable.as_deref(),
        Some(Path::new("/usr/bin/logger-partition"))
    );
    assert_eq!(logger.args, vec!["--verbose", "--out", "/tmp/log"]);
    assert_eq!(logger.affinity, Some(vec![1, 0]));
    assert_eq!(logger.descriptor_table, DescriptorTable::PerProcess);
    assert_eq!(sensors.descriptor_table, DescriptorTable::Shared);
    assert_eq!(
        logger.user,
        Some(Credentials {
            uid: 61011,
            gid: 61011
        })
    );
    assert_eq!(sensors.user, None);
    assert_eq!(m.system_hm[1].code, ErrorCode::PowerFail);
    assert_eq!(m.system_hm[0].code, ErrorCode::NumericError);
    assert_eq!(m.system_hm[0].error_id, 16);
    let hm: Vec<(u32, ErrorCode, PartitionAction)> = sensors
        .hm
        .iter()
        .map(|e| (e.error_id, e.code, e.action))
        .collect();
    assert_eq!(
        hm,
        vec![
            (16, ErrorCode::NumericError, PartitionAction::WarmStart),
            (99, ErrorCode::StackOverflow, PartitionAction::StopProcess)
        ]
    );
    assert_eq!(m.module_hm[0].action, ModuleAction::Reset);
    assert_eq!(
        m.channels[0].destinations.len(),
        2,
        "a sampling channel may multicast"
    );
    assert_eq!(m.channels[0].name, None);
}

/// `partix:ReceiveMode` on ports: every value, and absent.
#[test]
fn receive_modes_come_from_the_ports() {
    use partix_config::model::ReceiveMode;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/good/base.xml");
    let text = std::fs::read_to_string(&path).unwrap();
    for (value, want) in [
        ("spin", ReceiveMode::Spin),
        ("blocking", ReceiveMode::Blocking),
        (
            " spin-then-park ",
            ReceiveMode::SpinThenPark { spins: None },
        ),
        (
            "spin-then-park:150",
            ReceiveMode::SpinThenPark { spins: Some(150) },
        ),
    ] {
        let t = text
            .replace(
                r#"<Sampling_Port Name="in" "#,
                &format!(r#"<Sampling_Port partix:ReceiveMode="{value}" Name="in" "#),
            )
            .replace(
                r#"<Queuing_Port Name="q_out" "#,
                &format!(r#"<Queuing_Port partix:ReceiveMode="{value}" Name="q_out" "#),
            );
        let m = partix_config::parse_str(&t, None).unwrap_or_else(|e| panic!("{value}: {e}"));
        assert_eq!(m.partitions[1].sampling_ports[0].receive_mode, Some(want));
        assert_eq!(m.partitions[1].queuing_ports[0].receive_mode, Some(want));
        assert_eq!(m.partitions[0].sampling_ports[0].receive_mode, None);
        assert_eq!(m.partitions[0].queuing_ports[0].receive_mode, None);
        let summary = partix_config::summary(&m);
        let shown = format!("receive mode {}", value.trim());
        assert_eq!(summary.matches(&shown).count(), 2, "{summary}");
    }
}

#[test]
fn base_fixture_is_valid_and_paths_resolve() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/good/base.xml");
    let m = partix_config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let a = &m.partitions[0];
    assert_eq!(
        a.executable.as_deref(),
        Some(path.parent().unwrap().join("bin/a").as_path())
    );
    assert_eq!(m.channels[1].transport.as_deref(), Some("two-sided"));
    // Without a source file, paths stay as written.
    let text = std::fs::read_to_string(&path).unwrap();
    let m = partix_config::parse_str(&text, None).unwrap();
    assert_eq!(
        m.partitions[0].executable.as_deref(),
        Some(Path::new("bin/a"))
    );
    assert_eq!(m.name, "base");
    assert_eq!(m.source, None);
}

#[test]
fn durations_convert_exactly() {
    // 0.1 + 0.2 == 0.3 in the model, unlike in floating point.
    let xml = r#"<ARINC_653_Module>
  <Partition PartitionIdentifier="1" PartitionName="P" EntryPoint="main"/>
  <Module_Schedule MajorFrameSeconds="0.3">
    <Partition_Schedule PartitionIdentifier="1" PeriodSeconds="0.3" PeriodDurationSeconds="0.3">
      <Window_Schedule WindowIdentifier="1" WindowStartSeconds="0" WindowDurationSeconds="0.1"/>
      <Window_Schedule WindowIdentifier="2" WindowStartSeconds="0.1" WindowDurationSeconds="0.2"/>
    </Partition_Schedule>
  </Module_Schedule>
</ARINC_653_Module>"#;
    let m = partix_config::parse_str(xml, None).unwrap_or_else(|e| panic!("{e}"));
    let s = &m.schedules[0];
    assert_eq!(s.windows[1].offset + s.windows[1].duration, s.major_frame);
    assert_eq!(s.major_frame, Duration::from_nanos(300_000_000));
}

/// A model built in code may hold sizes whose sum does not fit: the limit saturates (no limit)
/// instead of overflowing. (A loaded module's sum always fits: validation checks it.)
#[test]
fn memory_limit_saturates() {
    let region = |size_bytes| MemoryRequirement {
        name: None,
        kind: MemoryKind::Data,
        size_bytes,
        access: MemoryAccess::ReadWrite,
    };
    let mut p = Partition::program(1, "P", None, Vec::new());
    assert_eq!(p.memory_limit_bytes(), None);
    p.memory = vec![region(1 << 20), region(2 << 20)];
    assert_eq!(p.memory_limit_bytes(), Some(3 << 20));
    p.memory = vec![region(1 << 63), region(1 << 63)];
    assert_eq!(p.memory_limit_bytes(), Some(u64::MAX));
}

/// Identifiers go up to i32::MAX (APEX_INTEGER), which the runtime passes to APEX as is.
#[test]
fn identifiers_up_to_i32_max_are_accepted() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/good/base.xml");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace(
            "PartitionIdentifier=\"2\"",
            "PartitionIdentifier=\"2147483647\"",
        )
        .replace(
            "ScheduleIdentifier=\"1\"",
            "ScheduleIdentifier=\"0x7FFFFFFF\"",
        );
    let m = partix_config::parse_str(&text, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        m.partitions[1].id,
        PartitionId(partix_config::MAX_IDENTIFIER)
    );
    assert_eq!(m.schedules[0].id, ScheduleId(i32::MAX as u32));
}

/// Ports at the runtime's limits are accepted; one past each is refused (the fixtures
/// `port_*.xml`, `channel_udp_message_too_large.xml` and `channel_two_sided_sampling_too_large.xml`
/// show the errors).
#[test]
fn ports_at_the_runtime_limits_are_accepted() {
    use partix_config::*;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/good/base.xml");
    let base = std::fs::read_to_string(path).unwrap();
    let with = |sampling: u32, transport: &str, queuing: u32, nb: u32, extra: usize| {
        let extra: String = (0..extra)
            .map(|i| {
                format!(
                    "<Sampling_Port Name=\"s{i}\" MaxMessageSize=\"8\" Direction=\"SOURCE\" RefreshRateSeconds=\"1\"/>\n\
                     <Queuing_Port Name=\"q{i}\" MaxMessageSize=\"8\" Direction=\"SOURCE\" MaxNbMessages=\"1\"/>\n"
                )
            })
            .collect();
        base.replace(
            "<Sampling_Port Name=\"out\" MaxMessageSize=\"16\"",
            &format!("{extra}<Sampling_Port Name=\"out\" MaxMessageSize=\"{sampling}\""),
        )
        .replace(
            "<Sampling_Port Name=\"in\" MaxMessageSize=\"16\"",
            &format!("<Sampling_Port Name=\"in\" MaxMessageSize=\"{sampling}\""),
        )
        .replace(
            "ChannelName=\"data\">",
            &format!("ChannelName=\"data\" partix:Transport=\"{transport}\">"),
        )
        .replace(
            "MaxMessageSize=\"8\" Direction=\"DESTINATION\" MaxNbMessages=\"4\"",
            &format!(
                "MaxMessageSize=\"{queuing}\" Direction=\"DESTINATION\" MaxNbMessages=\"{nb}\""
            ),
        )
        .replace(
            "MaxMessageSize=\"8\" Direction=\"SOURCE\" MaxNbMessages=\"4\"",
            &format!("MaxMessageSize=\"{queuing}\" Direction=\"SOURCE\" MaxNbMessages=\"{nb}\""),
        )
    };
    let ok = |text: String| partix_config::parse_str(&text, None).unwrap_or_else(|e| panic!("{e}"));
    let m = ok(with(
        MAX_SAMPLING_MESSAGE_SIZE,
        "one-sided",
        MAX_QUEUING_MESSAGE_SIZE,
        MAX_NB_MESSAGES,
        MAX_PORTS_PER_KIND - 1,
    ));
    assert_eq!(m.partitions[0].sampling_ports.len(), MAX_PORTS_PER_KIND);
    assert_eq!(m.partitions[0].queuing_ports.len(), MAX_PORTS_PER_KIND);
    ok(with(MAX_UDP_MESSAGE_SIZE, "udp", 8, 4, 0));
    ok(with(MAX_TWO_SIDED_MESSAGE_SIZE, "two-sided", 8, 4, 0));
    ok(with(MAX_SAMPLING_MESSAGE_SIZE, "tcp", 8, 4, 0));
    let bad = |text: String| partix_config::parse_str(&text, None).unwrap_err().len();
    assert_eq!(
        bad(with(MAX_SAMPLING_MESSAGE_SIZE + 1, "one-sided", 8, 4, 0)),
        2
    );
    assert_eq!(
        bad(with(16, "one-sided", MAX_QUEUING_MESSAGE_SIZE + 1, 4, 0)),
        2
    );
    assert_eq!(bad(with(16, "one-sided", 8, MAX_NB_MESSAGES + 1, 0)), 2);
    assert_eq!(bad(with(16, "one-sided", 8, 4, MAX_PORTS_PER_KIND)), 2);
    assert_eq!(bad(with(MAX_UDP_MESSAGE_SIZE + 1, "udp", 8, 4, 0)), 1);
    assert_eq!(
        bad(with(MAX_TWO_SIDED_MESSAGE_SIZE + 1, "two-sided", 8, 4, 0)),
        1
    );
}

/// The model keeps where `partix:Executable` and `partix:Affinity` are written (the start of
/// their values, as parse errors point), so that what only the runtime can find wrong about them
/// (no such program on this machine, a CPU it may not use) is reported at them with
/// [`Module::error_at`], in the file's error format.
#[test]
fn executable_and_affinity_keep_their_locations() {
    let xml = r#"<ARINC_653_Module xmlns:partix="urn:partix:config:1">
  <Partition PartitionIdentifier="1" PartitionName="A" EntryPoint="main"
             partix:Executable="bin/a" partix:Affinity="0,1"/>
  <Partition PartitionIdentifier="2" PartitionName="B" EntryPoint="main"/>
  <Module_Schedule MajorFrameSeconds="0.02">
    <Partition_Schedule PartitionIdentifier="1" PeriodSeconds="0.02" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="1" WindowStartSeconds="0" WindowDurationSeconds="0.01"/>
    </Partition_Schedule>
    <Partition_Schedule PartitionIdentifier="2" PeriodSeconds="0.02" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="2" WindowStartSeconds="0.01" WindowDurationSeconds="0.01"/>
    </Partition_Schedule>
  </Module_Schedule>
</ARINC_653_Module>"#;
    let m = partix_config::parse_str(xml, Some(Path::new("m.xml"))).unwrap();
    let a = &m.partitions[0];
    let col = |needle: &str| xml.lines().nth(2).unwrap().find(needle).unwrap() as u32 + 1;
    assert_eq!(
        a.executable_location,
        Some(Location {
            line: 3,
            col: col("bin/a")
        })
    );
    assert_eq!(
        a.affinity_location,
        Some(Location {
            line: 3,
            col: col("0,1")
        })
    );
    let b = &m.partitions[1];
    assert_eq!((b.executable_location, b.affinity_location), (None, None));
    let e = m.error_at(
        a.executable_location.unwrap(),
        "no such program",
        "build it",
    );
    assert_eq!(
        e.to_string(),
        format!(
            "m.xml:3:{}: error: no such program\n  help: build it",
            col("bin/a")
        )
    );
    // A module built in code names no file and no place.
    let mut m = m;
    m.source = None;
    let e = m.error_at(Location::default(), "no such program", "build it");
    assert_eq!(e.to_string(), "error: no such program\n  help: build it");
}

/// The invariants the fuzz target and `no_panic` check hold for the good fixtures, and each kind
/// of break is caught (so the shared check cannot pass whatever the model).
#[test]
fn the_shared_invariants_hold_for_good_modules_and_catch_breaks() {
    use partix_config::invariants::check;
    for f in ["base.xml", "pok_style.xml"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/good")
            .join(f);
        let m = partix_config::load(&path).expect("a good fixture");
        check(&m).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/good/base.xml");
    let good = partix_config::load(&path).expect("base.xml");
    assert!(!good.channels.is_empty());
    type Break = (&'static str, fn(&mut Module));
    let breaks: [Break; 7] = [
        ("duplicate partition ids", |m| {
            m.partitions[1].id = m.partitions[0].id
        }),
        ("overlap", |m| {
            let w = m.schedules[0].windows[0].clone();
            m.schedules[0].windows.insert(1, w);
        }),
        ("major frame", |m| {
            m.schedules[0].major_frame += Duration::from_nanos(1)
        }),
        ("source is a destination", |m| {
            let c = m.channels[0].clone();
            let (p, name) = (c.source.partition, c.source.port.clone());
            let part = m.partitions.iter_mut().find(|x| x.id == p).unwrap();
            for s in &mut part.sampling_ports {
                if s.name == name {
                    s.direction = PortDirection::Destination;
                }
            }
            for q in &mut part.queuing_ports {
                if q.name == name {
                    q.direction = PortDirection::Destination;
                }
            }
        }),
        ("missing destination port", |m| {
            m.channels[0].destinations[0].port = "no-such-port".into()
        }),
        ("no destination", |m| m.channels[0].destinations.clear()),
        ("port on two channels", |m| {
            let c = m.channels[0].clone();
            m.channels.push(c);
        }),
    ];
    for (what, f) in breaks {
        let mut m = good.clone();
        f(&mut m);
        assert!(check(&m).is_err(), "{what}: not caught");
    }
}

/// `partix:Delivery` on a two-sided channel reaches the model (absent: `None`, the default
/// `helped`), and `partix check`'s summary shows it.
#[test]
fn delivery_comes_from_the_channel() {
    use partix_config::model::Delivery;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/good/base.xml");
    let base = std::fs::read_to_string(path).unwrap();
    for (attr, want) in [
        ("", None),
        (" partix:Delivery=\"helped\"", Some(Delivery::Helped)),
        (" partix:Delivery=\" manager \"", Some(Delivery::Manager)),
    ] {
        let text = base.replace(
            "ChannelName=\"data\">",
            &format!("ChannelName=\"data\" partix:Transport=\"two-sided\"{attr}>"),
        );
        let m = partix_config::parse_str(&text, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.channels[0].delivery, want, "{attr}");
        assert_eq!(m.channels[1].delivery, None);
        let summary = partix_config::summary(&m);
        assert_eq!(
            summary.contains("transport two-sided, delivery manager"),
            want == Some(Delivery::Manager),
            "{summary}"
        );
    }
}
