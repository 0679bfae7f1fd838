//! Sampling and queuing ports across real partition processes: the modules of `tests/ports/*.xml`
//! run by the real executive (`run_module`) with the `ports-testpart` programs, which append
//! `PASS`/`FAIL`/`END` lines to a file per partition.

mod common;

use common::all_pass;
use partix_config::model::Module;
use std::time::Duration;

fn load(name: &str) -> Module {
    common::load(&format!("tests/ports/{name}"))
}

/// Run `module` with `roles[i]` = (role, extra args) for partition `i` until every partition
/// that is expected to finish wrote its `END` line (or `limit` passes); return each partition's
/// output lines.
fn run(
    module: &Module,
    tag: &str,
    roles: &[(&str, &[&str], bool)],
    limit: Duration,
) -> Vec<Vec<String>> {
    let dir = common::out_dir(&format!("ports-{tag}"));
    common::run_roles(
        tag,
        module.clone(),
        env!("CARGO_BIN_EXE_ports-testpart"),
        &dir,
        roles,
        100_000,
        limit,
    )
}

/// Assert that role `role`'s output `lines` over `transport` has exactly `n` PASS lines (and no
/// FAIL), printing the whole output otherwise.
fn assert_passes(transport: &str, role: &str, lines: &[String], n: usize) {
    assert_eq!(
        all_pass(&format!("{transport} {role}"), lines),
        n,
        "{transport}: {lines:#?}"
    );
}

#[test]
fn every_port_service_return_code_from_rust() {
    let m = load("codes.xml");
    let out = run(
        &m,
        "codes",
        &[("codes", &[], true), ("idle", &[], false)],
        Duration::from_secs(60),
    );
    let passes = all_pass("CODES", &out[0]);
    // Every check of codes_init and codes_process ran (keep in step with ports-testpart.rs).
    assert_eq!(passes, 70, "{:#?}", out[0]);
}

#[test]
fn sampling_latest_wins_not_consumed_turns_invalid_multicast_read_only() {
    let m = load("sampling.xml");
    let out = run(
        &m,
        "sampling",
        &[
            ("sampling-src", &[], true),
            ("sampling-dst", &[], true),
            ("sampling-dst", &[], true),
        ],
        Duration::from_secs(90),
    );
    // The source: its regions cannot be resized.
    assert_eq!(all_pass("SRC", &out[0]), 1, "{:#?}", out[0]);
    for (i, who) in [(1, "DST1"), (2, "DST2")] {
        let n = all_pass(who, &out[i]);
        assert_eq!(n, 10, "{who}: {:#?}", out[i]);
    }
}

/// `partix:User`: the sampling channel of `sampling.xml` with each partition under a user of
/// its own. Source and first destination behave exactly as as root (the same checks pass); the
/// second destination finds it runs as its user and group with no capabilities (or only
/// `CAP_SYS_NICE`, see `RunReport::users_keep_nice`), cannot take the executive's priority (when
/// it has no capability), signal it, list its descriptors, re-open a read-only region
/// read-write or write its cgroup's freeze file, and still reads the source's messages.
#[test]
fn partitions_under_their_own_users_keep_their_ports_and_lose_root() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "partitions_under_their_own_users_keep_their_ports_and_lose_root: skipped (needs root)"
        );
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    // The program and the configuration are in a directory only root may enter: the executive
    // runs the program through a descriptor, and hands the partitions the configuration as
    // one. Their output files are in a directory they may write.
    let dir = common::out_dir("ports-users");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let private = common::out_dir("ports-users-private");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let exe = private.join("ports-testpart");
    std::fs::copy(env!("CARGO_BIN_EXE_ports-testpart"), &exe).unwrap();
    let cfg = private.join("users.xml");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ports/users.xml"),
        &cfg,
    )
    .unwrap();
    let m = partix_config::load(&cfg).unwrap_or_else(|e| panic!("users.xml: {e}"));
    let (out, report) = common::run_roles_report(
        "users",
        m,
        exe.to_str().unwrap(),
        &dir,
        &[
            ("sampling-src", &[], true),
            ("sampling-dst", &[], true),
            ("creds", &["61003", "61013"], true),
        ],
        100_000,
        Duration::from_secs(90),
    );
    assert_eq!(all_pass("SRC", &out[0]), 1, "{:#?}", out[0]);
    assert_eq!(all_pass("DST1", &out[1]), 10, "{:#?}", out[1]);
    let passes = common::pass_lines("DST2", &out[2]);
    common::print_info("DST2", &out[2]);
    // Where the executive can give partitions RLIMIT_RTPRIO 98 they have no capability left;
    // where it cannot (no CAP_SYS_RESOURCE, as in some containers), only CAP_SYS_NICE.
    let priority_checks: &[&str] = match (&report.users_keep_nice, &report.users_no_fifo) {
        (None, None) => &[
            "RLIMIT_RTPRIO is 98",
            "has no capabilities",
            "cannot take SCHED_FIFO 99 (the executive's)",
            "its APEX process runs SCHED_FIFO without root",
        ],
        (Some(why), _) => {
            println!("partitions keep CAP_SYS_NICE: {why}");
            &[
                "keeps CAP_SYS_NICE and no other capability",
                "its APEX process runs SCHED_FIFO without root",
            ]
        }
        (None, Some(why)) => {
            println!("partitions run SCHED_OTHER: {why}");
            &["has no capabilities"]
        }
    };
    for what in priority_checks.iter().copied().chain([
        "runs as its user",
        "runs as its group",
        "has no supplementary groups",
        "has NO_NEW_PRIVS",
        "cannot signal the executive",
        "cannot list the executive's descriptors",
        "no read-only region re-opens read-write through /proc/self/fd",
        "reads a valid message from another user's partition",
        "cannot open its configuration by path (a private directory)",
        "reads its configuration through the executive's descriptor",
    ]) {
        assert!(
            passes.iter().any(|l| l == &format!("PASS {what}")),
            "DST2: no PASS {what}: {:#?}",
            out[2]
        );
    }
    let _ = std::fs::remove_dir_all(&private);
    assert!(
        passes
            .iter()
            .any(|l| l == "PASS cannot write its cgroup.freeze")
            || out[2]
                .iter()
                .any(|l| l.starts_with("INFO no partix cgroup")),
        "{:#?}",
        out[2]
    );
}

/// Run `proc.xml` (no partition has a `partix:User`: all are root, as the executive) with the
/// `probe` role in PROBE; return the outputs and the report.
fn run_proc(debuggable: bool) -> (Vec<Vec<String>>, partix_runtime::executive::os::RunReport) {
    let tag = if debuggable {
        "proc-debuggable"
    } else {
        "proc"
    };
    common::run_roles_with(
        tag,
        load("proc.xml"),
        env!("CARGO_BIN_EXE_ports-testpart"),
        &common::out_dir(&format!("ports-{tag}")),
        &[
            ("sampling-src", &[], true),
            ("sampling-dst", &[], true),
            ("probe", &[], true),
            ("idle", &[], false),
        ],
        partix_runtime::executive::Options {
            max_frames: Some(100_000),
            debuggable,
            ..Default::default()
        },
        Duration::from_secs(90),
    )
}

/// Region isolation without `partix:User` (audit 27, G7): PROBE runs as root like the executive,
/// and still cannot open the executive's descriptors (every channel region read-write), nor the
/// other partitions' (the source's read-write slot of its own channel, and both ends of a
/// queuing channel it is not on, the destination's idle), through `/proc/PID/fd/N`, nor their memory through
/// `/proc/PID/mem`: `EACCES`/`EPERM`. The executive and the partitions are non-dumpable, and
/// partitions have no `CAP_SYS_PTRACE`, not even in their bounding set. PROBE still runs its
/// APEX process `SCHED_FIFO` and reads its port; the other partitions pass as in `sampling.xml`.
/// Under `--debuggable` the same probe does reach them (so the checks can fail).
#[test]
fn a_partition_without_a_user_cannot_reach_other_regions_through_proc() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "a_partition_without_a_user_cannot_reach_other_regions_through_proc: skipped (needs root)"
        );
        return;
    }
    let (out, report) = run_proc(false);
    assert!(report.confined);
    assert_eq!(report.confine_error, None);
    assert_eq!(all_pass("SRC", &out[0]), 1, "{:#?}", out[0]);
    assert_eq!(all_pass("DST1", &out[1]), 10, "{:#?}", out[1]);
    let passes = common::pass_lines("PROBE", &out[2]);
    common::print_info("PROBE", &out[2]);
    for what in [
        "runs as root (no partix:User)",
        "has no CAP_SYS_PTRACE (effective, permitted, bounding)",
        "its APEX process runs SCHED_FIFO",
        "is not dumpable",
        "cannot open the executive's descriptors or memory through /proc",
        "finds its three peer partitions",
        "reads a valid message on its own port",
    ] {
        assert!(
            passes.iter().any(|l| l == &format!("PASS {what}")),
            "PROBE: no PASS {what}: {:#?}",
            out[2]
        );
    }
    let peers = passes
        .iter()
        .filter(|l| *l == "PASS cannot open a peer partition's descriptors or memory through /proc")
        .count();
    assert_eq!(peers, 3, "{:#?}", out[2]);

    // The opt-out: everything the probe tried is open to it.
    let (out, report) = run_proc(true);
    assert!(!report.confined);
    let fails: Vec<&String> = out[2].iter().filter(|l| l.starts_with("FAIL")).collect();
    for what in [
        "FAIL has no CAP_SYS_PTRACE",
        "FAIL is not dumpable",
        "FAIL cannot open the executive's descriptors or memory through /proc",
        "FAIL cannot open a peer partition's descriptors or memory through /proc",
    ] {
        assert!(
            fails.iter().any(|l| l.starts_with(what)),
            "debuggable PROBE: no {what}: {:#?}",
            out[2]
        );
    }
    assert!(
        out[2]
            .iter()
            .any(|l| l == "PASS reads a valid message on its own port"),
        "{:#?}",
        out[2]
    );
}

/// The kernel holds a partition to its CPUs (`partix:Affinity`; a cpuset), not only its first
/// `sched_setaffinity`: asking for every CPU leaves it on its own, and asking for another CPU
/// alone is refused (`EINVAL`).
#[test]
fn a_partition_cannot_move_its_threads_off_its_cpus() {
    let cpu = common::test_cpu();
    let dir = common::out_dir("ports-affinity");
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<ARINC_653_Module xmlns:partix="urn:partix:config:1" ModuleName="ports-affinity">
  <Partition PartitionIdentifier="1" PartitionName="AFF" partix:Executable="ports-testpart" partix:Affinity="@CPU@"/>
  <Module_Schedule ScheduleIdentifier="1" ScheduleName="s" InitialModuleSchedule="true" MajorFrameSeconds="0.02">
    <Partition_Schedule PartitionIdentifier="1" PartitionName="AFF" PeriodSeconds="0.02" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="1" WindowStartSeconds="0.0" WindowDurationSeconds="0.01" PartitionPeriodStart="true"/>
    </Partition_Schedule>
  </Module_Schedule>
</ARINC_653_Module>
"#
    .replace("@CPU@", &cpu.to_string());
    let path = dir.join("affinity.xml");
    std::fs::write(&path, xml).unwrap();
    let m = partix_config::load(&path).unwrap_or_else(|e| panic!("affinity.xml: {e}"));
    let (out, report) = common::run_roles_report(
        "affinity",
        m,
        env!("CARGO_BIN_EXE_ports-testpart"),
        &dir,
        &[("affinity", &[], true)],
        100_000,
        Duration::from_secs(60),
    );
    let lines = &out[0];
    common::assert_no_fail("AFF", lines);
    assert!(lines.iter().any(|l| l == "END affinity"), "{lines:#?}");
    if let Some(why) = &report.cpuset_error {
        // Only where no cpuset controller is there to use (or without root).
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let v1 = mounts.lines().any(|l| {
            l.split_once(" - ").is_some_and(|(_, r)| {
                r.starts_with("cgroup ")
                    && r.split_whitespace()
                        .nth(2)
                        .is_some_and(|o| o.split(',').any(|c| c == "cpuset"))
            })
        });
        assert!(
            !root || !v1,
            "a v1 cpuset hierarchy is mounted, yet the run had no cpuset: {why}"
        );
        eprintln!("a_partition_cannot_move_its_threads_off_its_cpus: not judged, no cpuset: {why}");
        return;
    }
    assert!(
        lines
            .iter()
            .any(|l| l == &format!("INFO widened [{cpu}] rc 0")),
        "asking for every CPU must leave it on CPU {cpu}: {lines:#?}"
    );
    let alone: Vec<(usize, i32)> = lines
        .iter()
        .filter_map(|l| {
            let mut it = l.strip_prefix("INFO alone ")?.split(' ');
            Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
        })
        .collect();
    assert!(!alone.is_empty(), "{lines:#?}");
    for (c, rc) in alone {
        let want = if c == cpu { 0 } else { libc::EINVAL };
        assert_eq!(rc, want, "CPU {c} alone: {lines:#?}");
    }
}

/// `partix:DescriptorTable="per-process"`: each process of DST1 copies the partition's
/// descriptor table when it first runs in NORMAL mode (what it opens or closes later is its
/// own), and its udp port, whose socket came before, still receives; DST2 (the default) keeps
/// one table for all its processes.
#[test]
fn per_process_descriptor_tables_keep_the_ports_and_separate_later_descriptors() {
    let m = load("fds.xml");
    let out = run(
        &m,
        "fds",
        &[
            ("sampling-src", &[], true),
            ("fds-dst", &["per-process"], true),
            ("fds-dst", &["shared"], true),
        ],
        Duration::from_secs(90),
    );
    all_pass("SRC", &out[0]);
    for (i, who) in [(1, "DST1"), (2, "DST2")] {
        let n = all_pass(who, &out[i]);
        assert_eq!(n, 4, "{who}: {:#?}", out[i]);
    }
}

#[test]
fn queuing_thousands_of_messages_in_order_without_loss_or_duplicates() {
    let m = load("queue.xml");
    let out = run(
        &m,
        "queue",
        &[
            ("queue-src", &["5000"], true),
            ("queue-dst", &["5000"], true),
        ],
        Duration::from_secs(120),
    );
    assert_eq!(all_pass("QSRC", &out[0]), 1, "{:#?}", out[0]);
    assert_eq!(all_pass("QDST", &out[1]), 7, "{:#?}", out[1]);
}

/// A source SIGKILLed inside a write (its killer first writes one more complete message, which
/// the destination never reads, then leaves the slot mid-write): every message read is whole
/// (number, length, fill and checksum agree); every read after the death returns exactly the
/// message read before it, through the fallback path (the port's counters), `VALID` at first
/// and `INVALID` for good once older than the refresh period (reads go on 1.3 s).
#[test]
fn a_source_killed_mid_write_leaves_the_last_good_message() {
    let m = load("kill.xml");
    let out = run(
        &m,
        "kill",
        &[("kill-src", &[], false), ("kill-dst", &[], true)],
        Duration::from_secs(90),
    );
    assert!(
        out[0].iter().any(|l| l.starts_with("END kill-src")),
        "{:#?}",
        out[0]
    );
    assert_eq!(all_pass("KDST", &out[1]), 6, "{:#?}", out[1]);
    let info = out[1].iter().find(|l| l.starts_with("INFO")).cloned();
    println!("{info:?}");
    assert!(
        info.as_deref()
            .is_some_and(|l| l.ends_with("slot_left_mid_write=Some(true)")),
        "the slot should be left mid-write: {info:?}"
    );
}

/// `kill.xml` over two-sided (the destination's network manager thread running) and tcp: a
/// source that wrote 64 KiB messages, then a last one (number 2^40), leaves the channel
/// mid-write (two-sided: the next TX slot's `begin` flag and half its payload, forged bytes;
/// tcp: a 64 KiB frame's header and half its payload on the socket) and is SIGKILLed. The
/// destination: every message read is whole; from the first read of the last message on,
/// every read returns it, `VALID` at first, `INVALID` for good past the refresh period (1 s);
/// two-sided: the manager thread runs and the TX slot stays mid-write; the same with
/// `partix:Delivery="manager"` (the manager thread alone delivers). (Audit 27, G4.)
#[test]
fn a_source_killed_mid_write_leaves_the_last_good_message_two_sided_and_tcp() {
    use partix_config::model::Delivery;
    for (t, delivery, checks) in [
        ("two-sided", None, 7),
        ("two-sided", Some(Delivery::Manager), 7),
        ("tcp", None, 4),
    ] {
        let mut m = load("kill.xml");
        for c in &mut m.channels {
            c.transport = Some(t.into());
            c.delivery = delivery;
        }
        let name = match delivery {
            Some(Delivery::Manager) => "manager",
            _ => t,
        };
        let out = run(
            &m,
            &format!("kill2-{name}"),
            &[("kill2-src", &[], false), ("kill2-dst", &[], true)],
            Duration::from_secs(90),
        );
        let info = out[0].iter().find(|l| l.starts_with("INFO kill2")).cloned();
        println!("{t}: {info:?}");
        assert!(
            out[0].iter().any(|l| l.starts_with("END kill2-src")),
            "{t}: {:#?}",
            out[0]
        );
        let forged = if t == "tcp" {
            "frame bytes sent 32792 of 32792"
        } else {
            "whole in its slot true, slot of"
        };
        assert!(
            info.as_deref().is_some_and(
                |l| l.contains(forged) && (t == "tcp" || l.ends_with("mid-write true"))
            ),
            "{t}: the channel should be left mid-write ({forged:?}): {info:?}"
        );
        println!("{t}: {:?}", out[1].iter().find(|l| l.starts_with("INFO")));
        assert_eq!(all_pass("KDST", &out[1]), checks, "{t}: {:#?}", out[1]);
    }
}

/// A reader that never read waits for a message after its writer died inside a write: the
/// newer message cannot be read, so the wait times out (it answered at once before).
#[test]
fn a_wait_past_a_message_its_writer_died_writing_times_out() {
    let m = load("kill.xml");
    let out = run(
        &m,
        "stuck",
        &[("kill-src", &[], false), ("stuck-dst", &[], true)],
        Duration::from_secs(90),
    );
    assert_eq!(all_pass("STUCK", &out[1]), 4, "{:#?}", out[1]);
}

/// WRITE_SAMPLING_MESSAGE stamps a message when it writes it into the port (under the port lock),
/// not when it was called: a 1-byte write that waited for the lock behind a 32 MiB write of
/// another process (longer than the destination's 5 ms refresh period) is VALID for a reader
/// that reads it as soon as it is there. (Stamped at the call, it was INVALID: review 25,
/// finding 1.)
#[test]
fn a_sampling_message_is_stamped_when_written_not_when_its_write_was_called() {
    let m = load("stamp.xml");
    let out = run(
        &m,
        "stamp",
        &[("stamp", &[], true)],
        Duration::from_secs(60),
    );
    common::print_info("STAMP", &out[0]);
    assert_eq!(all_pass("STAMP", &out[0]), 2, "{:#?}", out[0]);
}

/// A program a partition runs (`sh`, then `ls`) inherits none of the partition's descriptors:
/// no port region or socket (600...), neither the module nor the partition state region
/// (500, 501), nor the module configuration (502), and none of `PARTIX_PORT_FDS`,
/// `PARTIX_CONFIG_FD`, `PARTIX_CONFIG`; the partition keeps them (close-on-exec) and its ports
/// still work. (It inherited them all: review 25, finding 4; 502 and the configuration's
/// variables still: review 26, finding 4.)
#[test]
fn a_program_a_partition_runs_inherits_none_of_its_descriptors() {
    let m = load("exec.xml");
    let out = run(
        &m,
        "exec",
        &[("exec-child", &[], true)],
        Duration::from_secs(60),
    );
    common::print_info("EXEC", &out[0]);
    assert_eq!(all_pass("EXEC", &out[0]), 7, "{:#?}", out[0]);
}

/// A writer that writes 64 KiB messages back to back is parked at the end of every window of
/// its partition: between two writes, never inside one, so a reader partition never finds the
/// slot mid-write and always reads the newest message (the park signal waits for the write in
/// progress).
///
/// The park waits for the write only within the executive's park bound: a writer that has not
/// parked by then (it did not get the CPU, on a loaded machine) is held where it is, by the
/// backstop, and may be held mid-write. So each write found cut must match a backstop of the
/// writer's partition in the executive's report. A writer partition the executive distrusted
/// (held at every close from then on) fails the test: that run says nothing of the gate.
#[test]
fn a_window_never_ends_inside_a_sampling_write() {
    let m = load("window.xml");
    let dir = common::out_dir("ports-window");
    let (out, report) = common::run_roles_report(
        "window",
        m,
        env!("CARGO_BIN_EXE_ports-testpart"),
        &dir,
        &[("window-src", &[], false), ("window-dst", &[], true)],
        100_000,
        Duration::from_secs(60),
    );
    assert_eq!(all_pass("WDST", &out[1]), 3, "{:#?}", out[1]);
    let info = out[1]
        .iter()
        .find(|l| l.starts_with("INFO window:"))
        .unwrap_or_else(|| panic!("no INFO line: {:#?}", out[1]));
    let stuck: u64 = info
        .split_whitespace()
        .find_map(|w| w.strip_prefix("stuck_states="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no stuck_states in {info}"));
    let src = &report.partitions[0];
    println!(
        "{info}; writer backstops={} pending_parks={} distrusted={}",
        src.backstops, src.pending_parks, src.distrusted
    );
    // A distrusted writer (it used CPU time while parked: the gate failed it) is held at
    // every close from then on, so the run no longer shows what the gate does at a close.
    assert!(
        !src.distrusted,
        "the writer partition was distrusted by the CPU-time audit (backstops {}): every close \
         after that was a hold, so this run cannot show that a window never ends inside a \
         write ({info})",
        src.backstops
    );
    assert!(
        stuck <= src.backstops,
        "the writer was found stopped inside a write {stuck} times, but held by the backstop \
         only {} times ({info})",
        src.backstops
    );
}

fn waiting_order(discipline: &str) -> Vec<String> {
    let m = load("order.xml");
    let out = run(
        &m,
        discipline,
        &[("order-src", &[], true), ("order-dst", &[discipline], true)],
        Duration::from_secs(60),
    );
    all_pass("ORDER_SRC", &out[0]);
    assert_eq!(all_pass("ORDER_DST", &out[1]), 1, "{:#?}", out[1]);
    out[1]
        .iter()
        .filter(|l| l.starts_with("GOT"))
        .cloned()
        .collect()
}

#[test]
fn waiting_receivers_get_messages_in_fifo_or_priority_order() {
    // Priorities 7, 5, 10, 15 start waiting in that order; 7 is then stopped (STOP) while
    // waiting, and its place must not hold up the others; then, while they wait, 15 is lowered
    // to 12 and 5 raised to 10 (SET_PRIORITY): the FIFO line keeps them in place; the PRIORITY
    // line keeps 15 first and puts 5, which came before 10, ahead of it (FIFO among equals;
    // until session 32 the line kept the priorities they joined with: 15, 10, 5). Lines by the
    // priority each started with.
    assert_eq!(
        waiting_order("fifo"),
        [
            "GOT priority 5 message 0",
            "GOT priority 10 message 1",
            "GOT priority 15 message 2"
        ]
    );
    assert_eq!(
        waiting_order("priority"),
        [
            "GOT priority 5 message 1",
            "GOT priority 10 message 2",
            "GOT priority 15 message 0"
        ]
    );
}

#[test]
fn a_process_stopped_while_waiting_holds_no_place_in_line() {
    // Nobody else waits on the port after the STOP, so only the calls that must not wait
    // (TIME_OUT 0, the preemption lock) meet the stopped process's entry.
    let m = load("order.xml");
    let out = run(
        &m,
        "stale",
        &[("order-src", &[], true), ("stale-dst", &[], true)],
        Duration::from_secs(60),
    );
    all_pass("ORDER_SRC", &out[0]);
    assert_eq!(all_pass("STALE_DST", &out[1]), 3, "{:#?}", out[1]);
}

/// ARINC 653 gives a queued message to the first waiting receiver even while it is suspended:
/// the second in line is not held up by it (it was, when the head had to take the message
/// itself), and the suspended one returns its message when resumed.
/// On every transport (the hand-over is the port's, above the channel).
#[test]
fn a_suspended_receiver_first_in_line_is_handed_its_message_and_holds_up_nobody() {
    let dir = common::out_dir("ports-suspend-cfg");
    for transport in ["one-sided", "two-sided", "udp", "tcp"] {
        let m = common::on_transport("order.xml", transport, &dir);
        let out = run(
            &m,
            &format!("suspend-{transport}"),
            &[("order-src", &[], true), ("suspend-dst", &[], true)],
            Duration::from_secs(60),
        );
        all_pass(&format!("{transport} ORDER_SRC"), &out[0]);
        assert_passes(transport, "SUSPEND_DST", &out[1], 5);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// SET_PRIORITY of a waiting process wakes its PRIORITY line: inside a long window (490 ms of
/// every 500), a waiter raised above the suspended head, which cannot be served in its place,
/// takes the message that was waiting for the head at once (asserted: within 25 ms), not at its
/// next check of the line (every 50 ms; window boundaries also interrupt every wait, which is
/// why the shorter windows of the other modules cannot show it). On every transport.
#[test]
fn a_waiter_raised_to_the_head_of_its_line_is_woken_at_once() {
    let dir = common::out_dir("ports-reprio-cfg");
    for transport in ["one-sided", "two-sided", "udp", "tcp"] {
        let m = common::on_transport("reprio.xml", transport, &dir);
        let out = run(
            &m,
            &format!("reprio-{transport}"),
            &[("order-src", &[], true), ("reprio-dst", &[], true)],
            Duration::from_secs(60),
        );
        all_pass(&format!("{transport} ORDER_SRC"), &out[0]);
        common::print_info(&format!("{transport} REPRIO_DST"), &out[1]);
        assert_passes(transport, "REPRIO_DST", &out[1], 3);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same for senders waiting for room: the message of a suspended sender at the head of
/// the line is sent in its place (in its turn), and the next sender is not held up.
#[test]
fn a_suspended_sender_first_in_line_has_its_message_sent_and_holds_up_nobody() {
    let dir = common::out_dir("ports-suspend-send-cfg");
    for transport in ["one-sided", "two-sided", "udp", "tcp"] {
        let m = common::on_transport("suspend_send.xml", transport, &dir);
        let out = run(
            &m,
            &format!("suspend-send-{transport}"),
            &[("suspend-src", &[], true), ("drain-dst", &[], true)],
            Duration::from_secs(60),
        );
        common::print_info(&format!("{transport} DRAIN_DST"), &out[1]);
        assert_passes(transport, "SUSPEND_SRC", &out[0], 4);
        assert_passes(transport, "DRAIN_DST", &out[1], 1);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The queuing ports' waits with the partition's memory full (`RLIMIT_DATA`, 64 MiB, reserved
/// down to blocks of 64 B): a send to a full port and a receive on an empty one time out, a
/// waiting send or receive is released by the other partition, and a waiter suspended in line
/// keeps its place (the copy of the message that would serve it in its place cannot be had) and
/// is served when resumed. CREATE_QUEUING_PORT with the memory full is INVALID_CONFIG. Before,
/// the first wait (or the creation) aborted the partition: an allocation failed on its path.
/// On every transport.
#[test]
fn queuing_waits_with_the_partition_memory_full_time_out_or_are_served() {
    let dir = common::out_dir("ports-memory-cfg");
    for transport in ["one-sided", "two-sided", "udp", "tcp"] {
        let m = common::on_transport("memory.xml", transport, &dir);
        let out = run(
            &m,
            &format!("memory-{transport}"),
            &[("mem-src", &[], true), ("mem-dst", &[], true)],
            Duration::from_secs(60),
        );
        common::print_info(&format!("{transport} MEM_SRC"), &out[0]);
        common::print_info(&format!("{transport} MEM_DST"), &out[1]);
        assert_eq!(
            all_pass(&format!("{transport} MEM_SRC"), &out[0]),
            2 + 9,
            "{transport}: {:#?}",
            out[0]
        );
        assert_eq!(
            all_pass(&format!("{transport} MEM_DST"), &out[1]),
            2 + 10,
            "{transport}: {:#?}",
            out[1]
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A queuing source restarted while its queue is full goes on with the messages its earlier
/// incarnations left in flight: it stays full however often it restarts, and the destination
/// gets every message once, in order. On every transport (udp and tcp keep the source's counts
/// in a region for that: without it, each restart gave the source 4 more messages).
#[test]
fn a_queuing_source_restarted_while_full_stays_full_and_loses_nothing() {
    let dir = common::out_dir("ports-book-cfg");
    for transport in ["one-sided", "two-sided", "udp", "tcp"] {
        let m = common::on_transport("book.xml", transport, &dir);
        let out = run(
            &m,
            &format!("book-{transport}"),
            &[("book-src", &[], true), ("book-dst", &[], true)],
            Duration::from_secs(60),
        );
        assert_eq!(
            all_pass(&format!("{transport} BOOK_SRC"), &out[0]),
            4 + 2 * 3 + 4,
            "{transport}: {:#?}",
            out[0]
        );
        assert_passes(transport, "BOOK_DST", &out[1], 2);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The destination's counterpart: a queuing destination restarted (twice, without reading)
/// while its source keeps the queue full leaves the source full, and then gets every message
/// once, in order. On every transport (udp and tcp keep the destination's count of frames taken
/// in a region for that: without it, each restart made the source start again with nothing in
/// flight, and it sent 4 more).
#[test]
fn a_queuing_destination_restarted_while_full_keeps_its_source_full_and_loses_nothing() {
    let dir = common::out_dir("ports-dbook-cfg");
    for transport in ["one-sided", "two-sided", "udp", "tcp"] {
        let m = common::on_transport("dbook.xml", transport, &dir);
        let out = run(
            &m,
            &format!("dbook-{transport}"),
            &[("dbook-src", &[], true), ("dbook-dst", &[], true)],
            Duration::from_secs(60),
        );
        assert_eq!(
            all_pass(&format!("{transport} DBOOK_SRC"), &out[0]),
            4 + 3 * 2 + 4,
            "{transport}: {:#?}",
            out[0]
        );
        assert_passes(transport, "DBOOK_DST", &out[1], 2);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_restarted_partition_sees_the_last_message() {
    let m = load("restart.xml");
    let out = run(
        &m,
        "restart",
        &[("sampling-src", &[], true), ("restart-dst", &[], true)],
        Duration::from_secs(60),
    );
    all_pass("SRC", &out[0]);
    assert_eq!(all_pass("DST", &out[1]), 2, "{:#?}", out[1]);
}

/// ARINC 653 gives a message that arrives while a receiver waits to that receiver, whether it
/// runs then or not; a later call on the port by another process of the partition must not take
/// it, discard it or count it as queued. Here a receiver of priority 10 waits while a process
/// of priority 20, which does not let it run, uses the port after the message came (review 26,
/// findings 1-3): CLEAR_QUEUING_PORT (receiver running, then suspended), a PRIORITY receive
/// with a time-out, a TIME_OUT 0 receive and GET_QUEUING_PORT_STATUS with more messages than
/// waiters, a receive under the preemption lock, a TIME_OUT 0 receive after the receiver's
/// time-out passed (the message came before it). The receiver gets the message each time.
/// Before, the CLEAR discarded it (the receiver timed out), the later receive took it, the
/// TIME_OUT 0 receive answered NOT_AVAILABLE, the status showed {3, 1}, and the receive under
/// the preemption lock INVALID_MODE. On every transport. Each step also fails if the receiver
/// returned before the controller's call (it ran and took the message itself: no SCHED_FIFO),
/// where it would otherwise pass with or without the hand-over.
#[test]
fn a_message_that_came_for_a_waiting_receiver_is_its_whatever_the_next_call() {
    let dir = common::out_dir("ports-serve-cfg");
    for transport in ["one-sided", "two-sided", "udp", "tcp"] {
        let m = common::on_transport("serve.xml", transport, &dir);
        let out = run(
            &m,
            &format!("serve-{transport}"),
            &[("serve-src", &[], false), ("serve-dst", &[], true)],
            Duration::from_secs(90),
        );
        common::assert_no_fail(&format!("{transport} SERVE_SRC"), &out[0]);
        assert_passes(transport, "SERVE_DST", &out[1], 8);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The senders' mirror: room that appears while a sender waits on a full PRIORITY port is that
/// sender's; a higher-priority send called after it appeared waits (and times out), and the
/// destination gets the waiting sender's message. Before, the later send took the room: the
/// destination got its message, and the waiting sender timed out. On every transport. Fails
/// too if the waiting sender returned before the later send (it ran and sent itself).
#[test]
fn room_that_came_for_a_waiting_sender_is_its_whatever_the_next_call() {
    let dir = common::out_dir("ports-mirror-cfg");
    for transport in ["one-sided", "two-sided", "udp", "tcp"] {
        let m = common::on_transport("serve.xml", transport, &dir);
        let out = run(
            &m,
            &format!("mirror-{transport}"),
            &[("mirror-src", &[], true), ("mirror-dst", &[], true)],
            Duration::from_secs(60),
        );
        assert_passes(transport, "MIRROR_SRC", &out[0], 1);
        assert_passes(transport, "MIRROR_DST", &out[1], 1);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A waiter at the head of the line that cannot be served in its place (a receiver whose buffer
/// is shorter than the port's largest message; a batch send) and is suspended holds its place
/// until its time-out, then no longer: the waiter behind it gets the message (the room) that
/// came before that time-out, and the suspended one, resumed, returns TIMED_OUT. Before (review
/// of session 26, finding 1), another caller removed an expired head only while the channel was
/// not ready: the second waiter timed out after its own 3 s with the message still queued for
/// the suspended one, which took it when resumed. On every transport.
#[test]
fn an_expired_waiter_that_cannot_be_served_in_its_place_does_not_hold_the_line() {
    let dir = common::out_dir("ports-expired-cfg");
    for transport in ["one-sided", "two-sided", "udp", "tcp"] {
        let m = common::on_transport("serve.xml", transport, &dir);
        let out = run(
            &m,
            &format!("expired-dst-{transport}"),
            &[("serve-src", &[], false), ("expired-dst", &[], true)],
            Duration::from_secs(60),
        );
        common::assert_no_fail(&format!("{transport} SERVE_SRC"), &out[0]);
        common::print_info(&format!("{transport} EXPIRED_DST"), &out[1]);
        assert_passes(transport, "EXPIRED_DST", &out[1], 6);
        let out = run(
            &m,
            &format!("expired-src-{transport}"),
            &[("expired-src", &[], true), ("mirror-dst", &[], true)],
            Duration::from_secs(60),
        );
        common::print_info(&format!("{transport} EXPIRED_SRC"), &out[0]);
        assert_passes(transport, "EXPIRED_SRC", &out[0], 4);
        assert_passes(transport, "MIRROR_DST", &out[1], 1);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// ARINC 653 decides a queuing wait's time-out at its deadline: a message (or room) that comes
/// after it is not the waiter's, even if the waiter has not run since. Receivers: one suspended
/// past its time-out, one kept off the CPU by a process of higher priority, one suspended behind
/// a head that waits without a time-out; a sender suspended past its time-out. And a receiver
/// STOPped in the line and STARTed again: its new, longer wait is not ended at the old one's
/// deadline. Each returns TIMED_OUT when it runs, and what came after its deadline is
/// still there for the next call. Before (review 26, finding 5, left until session 31), the
/// time-out was decided at the first look at the port after the deadline, and each of them
/// took the message (or the room): the partition's deadline monitor now looks at the port at
/// each waiter's deadline (`ports::look_at_expired_wait`). On every transport, with the
/// receivers on a FIFO port and again on a PRIORITY one (where the head of the third case
/// joined after the waiter behind it).
#[test]
fn what_comes_after_a_queuing_waiters_time_out_is_not_its_whatever_it_was_doing() {
    let dir = common::out_dir("ports-late-cfg");
    for transport in ["one-sided", "two-sided", "udp", "tcp"] {
        let m = common::on_transport("serve.xml", transport, &dir);
        // FIFO, then PRIORITY (whose head in the third case joined after the waiter behind it).
        for (discipline, args) in [("fifo", &[][..]), ("priority", &["priority"][..])] {
            let who = format!("{transport} {discipline}");
            let out = run(
                &m,
                &format!("late-dst-{discipline}-{transport}"),
                &[("serve-src", &[], false), ("late-dst", args, true)],
                Duration::from_secs(60),
            );
            common::assert_no_fail(&format!("{who} SERVE_SRC"), &out[0]);
            assert_passes(&who, "LATE_DST", &out[1], 7);
        }
        let out = run(
            &m,
            &format!("late-src-{transport}"),
            &[("late-src", &[], true), ("mirror-dst", &[], true)],
            Duration::from_secs(60),
        );
        assert_passes(transport, "LATE_SRC", &out[0], 2);
        assert_passes(transport, "MIRROR_DST", &out[1], 1);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A queuing wait whose deadline falls while its partition's window is closed: what was sent
/// before the deadline is the receiver's, what was sent after it is not (ARINC 653 decides the
/// time-out at the deadline, whether the partition runs then or not). closed.xml: the
/// destination runs the first 50 ms of every 300; its receiver waits from the start of its
/// window, with its deadline 120 ms (then 240 ms) later, and the source sends 30 ms after the
/// deadline (then at once). Before (sessions 31-33), the receiver took both: the first look at
/// the port when the window opened could not tell when a message had come. Messages now carry
/// their send time (`ring` module docs; two-sided moves keep it); since session 35 over udp and
/// tcp too, in their frames' stamp (before, a socket channel's receiver took both). Two-sided
/// with `partix:Delivery="manager"` too (session 35): the look at the expired receiver moves
/// what the manager thread has not (before, the second step timed out: the receiver looked
/// before the manager thread had run when the window opened). Steps 3 and 4 (session 36): the
/// same for a sampling wait (`wait_sampling_message`), which returned the message written after
/// its deadline on every transport before; steps 5 and 6 for a sender waiting for room, which
/// took room made after its deadline (one-sided and two-sided now ask the destination to note
/// when it makes room; over udp and tcp the acks carry the time of the room they give).
#[test]
fn a_deadline_in_a_closed_window_divides_what_came_before_it_from_what_came_after() {
    let dir = common::out_dir("ports-closed-cfg");
    for transport in ["one-sided", "two-sided", "two-sided-manager", "udp", "tcp"] {
        let m = common::on_transport("closed.xml", transport, &dir);
        let out = run(
            &m,
            &format!("closed-{transport}"),
            &[("closed-src", &[], false), ("closed-dst", &[], true)],
            Duration::from_secs(60),
        );
        common::assert_no_fail(&format!("{transport} CLOSED_SRC"), &out[0]);
        assert_passes(transport, "CLOSED_DST", &out[1], 15);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// CREATE_SAMPLING_PORT takes the private buffers of a read (2 × (MAX_MESSAGE_SIZE + 4 KiB))
/// only for a shared-memory destination, and fallibly. In partitions of M bytes
/// (`RLIMIT_DATA`): a source port of M/2 is created (it needs no buffer); a shared-memory
/// destination whose buffers exceed M is `INVALID_CONFIG` and the partition goes on; a smaller
/// destination is created and reads. Before (review 26, finding 4), every sampling port took
/// both buffers with an infallible allocation: both partitions aborted at the creation ("memory
/// allocation of ... failed"). One-sided with M = 64 MiB (ports of 32, 40 and 16 MiB);
/// two-sided, whose sampling messages are at most 16 MiB, with M = 32 MiB (16, 16 and 4 MiB).
/// Over tcp (session 26) with M = 64 MiB (ports of 24, 16 and 2 MiB): the socket endpoint's
/// buffers are taken fallibly too (`FrameSocket::try_new`, `SampleRx::try_new`); before, the
/// destination aborted. Since session 29 an endpoint is sized for the way its frames go
/// (`FrameSocket::try_for`): the 24 MiB source fits (it took 72 MiB for receive buffers it
/// never uses, and its CREATE was `INVALID_CONFIG`). Not over udp, which carries at most 64 KiB
/// per message.
#[test]
fn large_sampling_ports_take_their_buffers_fallibly_and_only_where_a_read_needs_them() {
    let dir = common::out_dir("ports-sampling-memory-cfg");
    const MIB: u32 = 1 << 20;
    for (transport, mem, big, huge, mid, want) in [
        (
            "one-sided",
            64 * MIB,
            32 * MIB,
            40 * MIB,
            16 * MIB,
            "invalid",
        ),
        (
            "two-sided",
            32 * MIB,
            16 * MIB,
            16 * MIB,
            4 * MIB,
            "invalid",
        ),
        // A tcp source's end: about `max` to send (acks come into 64 KiB); a destination's:
        // twice `max` to receive, and two of `max` (the last frame, the scratch): 24 MiB for
        // the 24 MiB source, 64 MiB for the 16 MiB destination, which does not fit its 64 MiB
        // beside the program.
        ("tcp", 64 * MIB, 24 * MIB, 16 * MIB, 2 * MIB, "invalid"),
    ] {
        let tpl = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/ports/sampling_memory.xml.in");
        let text = std::fs::read_to_string(tpl)
            .unwrap()
            .replace("@TRANSPORT@", transport)
            .replace("@MEM@", &mem.to_string())
            .replace("@BIG@", &big.to_string())
            .replace("@HUGE@", &huge.to_string())
            .replace("@MID@", &mid.to_string());
        let path = dir.join(format!("sampling-memory-{transport}.xml"));
        std::fs::write(&path, text).unwrap();
        let m = partix_config::load(&path).unwrap_or_else(|e| panic!("{transport}: {e}"));
        let (big, huge, mid) = (big.to_string(), huge.to_string(), mid.to_string());
        let out = run(
            &m,
            &format!("sampling-memory-{transport}"),
            &[
                ("bigsamp-src", &[big.as_str(), mid.as_str()], true),
                ("bigsamp-dst", &[huge.as_str(), mid.as_str(), want], true),
            ],
            Duration::from_secs(60),
        );
        assert_passes(transport, "BIGSAMP_SRC", &out[0], 3);
        assert_passes(transport, "BIGSAMP_DST", &out[1], 3);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
