//! Every error class: each fixture in `tests/bad/` must produce exactly the errors rendered in its
//! `.expected` file (file:line:col, message, help). Regenerate after an intended wording change
//! with `PARTIX_BLESS=1 cargo test -p partix-config --test errors` and review the diff.

use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/bad exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    v.sort();
    v
}

/// Render the errors of one fixture as `partix check` prints them, with the bare file name.
fn render(path: &Path) -> String {
    let name = path.file_name().expect("file name");
    let text = std::fs::read_to_string(path).expect("fixture is UTF-8");
    match partix_config::parse_str(&text, Some(Path::new(name))) {
        Ok(_) => "(no error)\n".to_string(),
        Err(e) => format!("{e}\n"),
    }
}

#[test]
fn every_bad_fixture_reports_its_located_errors() {
    let bless = std::env::var_os("PARTIX_BLESS").is_some();
    let fixtures = fixtures();
    assert!(fixtures.len() >= 50, "fixtures missing: {}", fixtures.len());
    let mut failures = Vec::new();
    for path in &fixtures {
        let got = render(path);
        assert!(
            got != "(no error)\n",
            "{} parsed without error",
            path.display()
        );
        for line in got.lines().filter(|l| !l.starts_with("  help: ")) {
            // FILE:LINE:COL: error: ...
            let mut parts = line.splitn(4, ':');
            let (_, l, c) = (parts.next(), parts.next(), parts.next());
            let l: u32 = l.and_then(|s| s.parse().ok()).unwrap_or(0);
            let c: u32 = c.and_then(|s| s.parse().ok()).unwrap_or(0);
            assert!(
                l >= 1 && c >= 1,
                "{}: unlocated error: {line}",
                path.display()
            );
        }
        for e in partix_config::parse_str(&std::fs::read_to_string(path).unwrap(), None)
            .unwrap_err()
            .iter()
        {
            assert!(
                !e.help.is_empty(),
                "{}: error without help: {e}",
                path.display()
            );
        }
        let expected_path = path.with_extension("expected");
        if bless {
            std::fs::write(&expected_path, &got).expect("write .expected");
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if got != expected {
            failures.push(format!(
                "{}:\n--- expected\n{expected}--- got\n{got}",
                path.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The error of `fixture` (exactly one expected) at `line:col`, whose message contains `what`.
fn one_error(fixture: &str, line: u32, col: u32, what: &str, help: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/bad")
        .join(fixture);
    let errs = partix_config::load(&path).expect_err(fixture);
    let e = errs
        .iter()
        .find(|e| e.message.contains(what))
        .unwrap_or_else(|| panic!("{fixture}: no error containing {what:?} in:\n{errs}"));
    assert_eq!(
        (e.location.line, e.location.col),
        (line, col),
        "{fixture}: {e}"
    );
    assert!(e.help.contains(help), "{fixture}: help {:?}", e.help);
    assert_eq!(e.file.as_deref(), Some(path.as_path()));
}

#[test]
fn malformed_xml_is_located() {
    one_error(
        "xml_unclosed_tag.xml",
        18,
        3,
        "malformed XML",
        "closing tag",
    );
    one_error("xml_truncated.xml", 39, 1, "never closed", "ends early");
    one_error("xml_bad_attribute_quote.xml", 16, 46, "quote", "XML syntax");
    one_error("xml_dtd.xml", 2, 1, "DTD", "DOCTYPE");
}

#[test]
fn names_and_values_are_checked() {
    one_error(
        "unknown_element.xml",
        10,
        3,
        "<Module_HM_Tabel>",
        "did you mean <Module_HM_Table>?",
    );
    one_error(
        "unknown_attribute.xml",
        28,
        67,
        "unknown attribute `PeriodSecond`",
        "did you mean `PeriodSeconds`?",
    );
    one_error(
        "unprefixed_extension.xml",
        19,
        74,
        "without its namespace",
        "urn:partix:config:1",
    );
    one_error(
        "missing_attribute.xml",
        16,
        5,
        "MaxMessageSize",
        "add MaxMessageSize=",
    );
    one_error("bad_number.xml", 16, 47, "16k", "hex");
    one_error(
        "bad_duration_negative.xml",
        26,
        65,
        "negative",
        "decimal seconds",
    );
    one_error(
        "bad_duration_decimals.xml",
        26,
        94,
        "more than 9 decimals",
        "decimal seconds",
    );
    one_error(
        "bad_enum_typo.xml",
        16,
        62,
        "SORCE",
        "did you mean `SOURCE`?",
    );
    one_error("bad_transport.xml", 44, 72, "rdma", "one-sided");
    one_error(
        "bad_delivery.xml",
        44,
        100,
        "unknown delivery `manger`",
        "did you mean `manager`?",
    );
}

#[test]
fn ids_and_names_are_checked() {
    one_error(
        "duplicate_partition_id.xml",
        19,
        35,
        "duplicate PartitionIdentifier 1 (first used at 15:35)",
        "its own",
    );
    one_error(
        "duplicate_partition_name.xml",
        19,
        53,
        "duplicate PartitionName `A`",
        "its own",
    );
    one_error(
        "partition_name_mismatch.xml",
        28,
        64,
        "does not match partition 2",
        "PartitionName=\"B\"",
    );
    one_error(
        "unknown_partition_in_schedule.xml",
        28,
        46,
        "unknown partition 7",
        "PartitionIdentifier=\"2\"",
    );
    one_error(
        "duplicate_port_name.xml",
        17,
        5,
        "duplicate port name `out`",
        "its own Name",
    );
}

#[test]
fn schedules_are_checked() {
    one_error(
        "window_overlap.xml",
        30,
        7,
        "window 4 of `B` [12 ms, 17 ms) overlaps window 3 of `A` [10 ms, 15 ms) at 26:7",
        "must not overlap",
    );
    one_error(
        "window_exceeds_frame.xml",
        30,
        7,
        "ends after the major frame",
        "<= MajorFrameSeconds",
    );
    one_error("window_zero_length.xml", 30, 95, "length 0", "positive");
    one_error(
        "period_not_dividing.xml",
        24,
        82,
        "does not divide the major frame",
        "divides",
    );
    one_error(
        "period_duration_unmet.xml",
        24,
        5,
        "gets 3 ms in period 1 [10 ms, 20 ms)",
        "[10 ms, 20 ms)",
    );
    one_error(
        "period_duration_unmet.xml",
        24,
        5,
        "2 ms missing",
        "PeriodDurationSeconds",
    );
    one_error(
        "schedule_without_windows.xml",
        28,
        5,
        "no <Window_Schedule>",
        "Window_Schedule",
    );
    one_error(
        "no_schedule.xml",
        2,
        1,
        "no <Module_Schedule>",
        "add <Module_Schedule",
    );
    one_error(
        "no_initial_schedule.xml",
        23,
        3,
        "InitialModuleSchedule",
        "exactly one",
    );
    one_error(
        "schedule_unreachable.xml",
        33,
        3,
        "schedule `degraded` can never run",
        "SystemPartition=\"true\", or remove schedule `degraded`",
    );
    one_error(
        "two_initial_schedules.xml",
        33,
        87,
        "second schedule is marked initial",
        "exactly one",
    );
}

#[test]
fn channels_are_checked() {
    // partix:Delivery only on a two-sided channel (default transport, then udp).
    one_error(
        "channel_delivery_not_two_sided.xml",
        40,
        72,
        "the default (one-sided): only a two-sided channel",
        "add partix:Transport=\"two-sided\"",
    );
    one_error(
        "channel_unknown_partition.xml",
        42,
        61,
        "unknown partition 5",
        "1 (A), 2 (B)",
    );
    one_error(
        "channel_unknown_port.xml",
        42,
        74,
        "no port named `inn`",
        "did you mean `in`?",
    );
    one_error(
        "channel_wrong_direction.xml",
        41,
        15,
        "is a DESTINATION port",
        "swap",
    );
    one_error(
        "channel_kind_mix.xml",
        42,
        20,
        "sampling port `out` to queuing port `q_in`",
        "both",
    );
    one_error(
        "channel_size_mismatch.xml",
        42,
        20,
        "(32 B) differs from the source `out` (16 B)",
        "same MaxMessageSize",
    );
    one_error(
        "port_in_two_channels.xml",
        49,
        15,
        "already connected",
        "at most one channel",
    );
    one_error(
        "queuing_multicast.xml",
        48,
        20,
        "2 destinations",
        "sampling channel",
    );
}

#[test]
fn hm_tables_are_checked() {
    one_error(
        "hm_unknown_error_id.xml",
        36,
        41,
        "unknown error identifier 9",
        "System_HM_Table",
    );
    one_error("hm_unknown_action.xml", 36, 52, "REBOOT", "COLD_START");
    one_error(
        "hm_unknown_error_code.xml",
        5,
        54,
        "DEADLINE_MISS",
        "did you mean `DEADLINE_MISSED`?",
    );
    one_error(
        "hm_unknown_partition.xml",
        33,
        44,
        "unknown partition 4",
        "1 (A), 2 (B)",
    );
    one_error(
        "hm_module_wrong_level.xml",
        12,
        41,
        "PARTITION level",
        "MODULE",
    );
    // The runtime knows one system state and goes by error code (first entry per code).
    one_error(
        "hm_two_system_states.xml",
        14,
        38,
        "SystemState 2 differs from SystemState 1",
        "SystemState=\"1\"",
    );
    one_error(
        "hm_code_two_identifiers.xml",
        8,
        54,
        "ErrorCode DEADLINE_MISSED is already given identifier 1 at 5:54",
        "one Error_ID_Level",
    );
    one_error(
        "hm_partition_code_twice.xml",
        37,
        41,
        "DEADLINE_MISSED already has an action in this Partition_HM_Table (identifier 1 at 35:41)",
        "one Error_ID_Action",
    );
    one_error(
        "hm_partition_code_at_module_level.xml",
        37,
        41,
        "INIT_TIMEOUT (System_HM_Table identifier 3) is handled at MODULE level",
        "Module_HM_Table",
    );
    one_error(
        "hm_code_disagrees.xml",
        35,
        55,
        "disagrees",
        "DEADLINE_MISSED",
    );
}

#[test]
fn all_errors_of_a_stage_are_reported() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad/multiple_errors.xml");
    let errs = partix_config::load(&path).unwrap_err();
    assert_eq!(errs.len(), 3, "{errs}");
    let lines: Vec<u32> = errs.iter().map(|e| e.location.line).collect();
    assert_eq!(lines, vec![10, 16, 36]);
}

#[test]
fn display_format() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad/window_overlap.xml");
    let errs = partix_config::load(&path).unwrap_err();
    let text = errs.to_string();
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("{}:30:7: error: window 4", path.display())),
        "{first}"
    );
    assert!(
        text.lines().nth(1).unwrap().starts_with("  help: "),
        "{text}"
    );
}

#[test]
fn io_errors_are_located_at_the_file() {
    let errs = partix_config::load(Path::new("/nonexistent/partix/module.xml")).unwrap_err();
    assert_eq!(errs.len(), 1);
    let e = errs.first();
    assert_eq!(e.location.line, 0);
    assert!(
        e.to_string()
            .starts_with("/nonexistent/partix/module.xml: error: cannot read"),
        "{e}"
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let errs = partix_config::load(dir).unwrap_err();
    assert!(errs.first().message.contains("directory"));
    // An endless character device is cut off, not read forever.
    let errs = partix_config::load(Path::new("/dev/zero")).unwrap_err();
    assert!(errs.first().message.contains("larger than"), "{errs}");
}

#[test]
fn non_utf8_is_located() {
    let dir = std::env::temp_dir().join(format!("partix-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("latin1.xml");
    std::fs::write(
        &f,
        b"<ARINC_653_Module>\n  <!-- caf\xe9 -->\n</ARINC_653_Module>",
    )
    .unwrap();
    let errs = partix_config::load(&f).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        (errs.first().location.line, errs.first().location.col),
        (2, 11)
    );
    assert!(errs.first().message.contains("UTF-8"));
}

/// A byte-order mark is no column (as for the other errors on line 1): an invalid byte after
/// one was reported one column to the right (review 27).
#[test]
fn non_utf8_after_a_bom_is_located_without_it() {
    let dir = std::env::temp_dir().join(format!("partix-config-bom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bom.xml");
    std::fs::write(&f, b"\xef\xbb\xbf<ARINC_653_Module ModuleName=\"\xff\"/>").unwrap();
    let errs = partix_config::load(&f).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    let e = errs.first();
    assert!(e.message.contains("UTF-8"), "{e}");
    assert_eq!((e.location.line, e.location.col), (1, 31), "{e}");
}

/// A module of partition 1 with `ports` sampling ports `port_0`, ..., and one channel per
/// (source, destination) port name pair of `ends`.
fn ports_and_channels(ports: usize, ends: &[(String, String)]) -> String {
    let ports: String = (0..ports)
        .map(|i| format!("<Sampling_Port Name=\"port_{i}\" MaxMessageSize=\"8\" Direction=\"SOURCE\" RefreshRateSeconds=\"1\"/>\n"))
        .collect();
    let channels: String = ends
        .iter()
        .enumerate()
        .map(|(i, (s, d))| format!("<Channel ChannelIdentifier=\"{}\"><Source><Standard_Partition PartitionIdentifier=\"1\" PortName=\"{s}\"/></Source><Destination><Standard_Partition PartitionIdentifier=\"1\" PortName=\"{d}\"/></Destination></Channel>\n", i + 1))
        .collect();
    format!(
        "<ARINC_653_Module>\n<Partition PartitionIdentifier=\"1\" PartitionName=\"P\">\n{ports}</Partition>\n\
         <Module_Schedule MajorFrameSeconds=\"1\"><Partition_Schedule PartitionIdentifier=\"1\" PeriodSeconds=\"1\" PeriodDurationSeconds=\"1\">\
         <Window_Schedule WindowIdentifier=\"1\" WindowStartSeconds=\"0\" WindowDurationSeconds=\"1\"/></Partition_Schedule></Module_Schedule>\n\
         <Connection_Table>\n{channels}</Connection_Table>\n</ARINC_653_Module>\n"
    )
}

/// "Did you mean" for a channel end compares its name with every port of the partition: it is
/// skipped beyond 256 ports, and over a module at most 20000 names are compared, so a hostile
/// file with many unknown names against many ports does not take minutes. The help then lists
/// the ports, at most 12 of them.
#[test]
fn port_hints_are_bounded() {
    let ends = vec![("port_1".to_string(), "porr_1".to_string())];
    let errs = partix_config::parse_str(&ports_and_channels(10, &ends), None).unwrap_err();
    assert_eq!(errs.first().help, "did you mean `port_1`?", "{errs}");
    let errs = partix_config::parse_str(&ports_and_channels(300, &ends), None).unwrap_err();
    let e = errs.first();
    assert!(e.message.contains("no port named `porr_1`"), "{e}");
    assert!(!e.help.contains("did you mean"), "{e}");
    assert!(e.help.ends_with("and 288 more"), "{e}");

    // 200 ports and 180 distinct unknown names close to them (`port_3ab`: 2 edits from
    // `port_3`): the first 100 (20000 / 200) get a hint. (It was 10 ports and 3000 names, but
    // only the first MAX_REPORTED_ERRORS errors are kept since review 27.)
    let close = |i: usize, base: u8| {
        let k = i / 10;
        format!(
            "port_{}{}{}",
            i % 10,
            char::from(base + (k / 26) as u8),
            char::from(base + (k % 26) as u8)
        )
    };
    let ends: Vec<(String, String)> = (0..90).map(|i| (close(i, b'a'), close(i, b'A'))).collect();
    let errs = partix_config::parse_str(&ports_and_channels(200, &ends), None).unwrap_err();
    assert_eq!(errs.len(), 180);
    assert!(errs.len() <= partix_config::MAX_REPORTED_ERRORS);
    let hinted = errs
        .iter()
        .filter(|e| e.help.starts_with("did you mean"))
        .count();
    assert_eq!(hinted, 100);
    assert!(errs
        .iter()
        .last()
        .unwrap()
        .help
        .starts_with("the ports of `P` are: port_0, port_1"));
}
