//! A concurrent stress through the runtime's port path, on every transport: the two partitions
//! of a channel run at the same time, each pinned to a CPU of its own, so that reads race with
//! writes (and receives with sends) through the port services, the transports' endpoints, the
//! two-sided managers and the socket agents. Under the executive every partition of a test runs
//! on one CPU in turns, and a source and its destination never overlap.
//!
//! The partitions are `stress-testpart` programs run standalone (no executive, no time windows)
//! with the channel resources of [`ChannelSet::create`] for a generated module, handed over as
//! the executive hands them over (descriptors from [`PORT_FD_BASE`], `PARTIX_PORT_FDS`), and
//! started on their CPU (a standalone partition pins itself to the CPU it starts on), as
//! `partix bench rtt` runs its ports classes. See `src/bin/stress-testpart.rs` for what each side
//! checks.
//!
//! - **Sampling**: a writer writes variable-length messages (sequence number, length, seeded
//!   noise, checksum) back to back; the reader reads with READ_SAMPLING_MESSAGE, then waits with
//!   the port in each receive mode, checks every answer, and on the shared-memory transports goes
//!   on until [`MIN_OVERLAPS`] of its reads per phase met a write in progress
//!   (`sampling_port_counters`).
//! - **Queuing**: [`queue_messages`] messages over a queue of MaxNbMessages 5 (not a power of
//!   two: the one-sided ring has 8 slots), one at a time and in batches, with and without
//!   waiting, in every receive mode: exactly once, in order, whole; the sender found the queue
//!   full many times (the receiver pauses now and then), and never more than 5 messages queued.

use partix_runtime::channels::{above_port_targets, ChannelSet, ENV_PORT_FDS};
use partix_shm::Region;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Reads per sampling phase that must have met a write in progress (shared-memory transports).
const MIN_OVERLAPS: u64 = 200;
/// Messages of the queuing stress over `transport` (`PARTIX_STRESS_QUEUE` to change): what an
/// idle 2-CPU machine moves in a few seconds in the tests' debug build (one-sided about 200 000
/// a second, two-sided 150 000, udp and tcp 80 000: system calls for every frame and
/// acknowledgement). A loaded machine takes many times longer.
fn queue_messages(transport: &str) -> u64 {
    std::env::var("PARTIX_STRESS_QUEUE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(match transport {
            "one-sided" => 1_000_000,
            "two-sided" => 300_000,
            _ => 100_000,
        })
}

/// One stress at a time: each takes both CPUs.
static SERIAL: Mutex<()> = Mutex::new(());

fn module_xml(transport: &str, ports_w: &str, ports_r: &str, channel: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<ARINC_653_Module xmlns:partix="urn:partix:config:1" ModuleName="ports-stress">
  <Partition PartitionIdentifier="1" PartitionName="W" partix:Executable="stress-testpart">
    {ports_w}
  </Partition>
  <Partition PartitionIdentifier="2" PartitionName="R" partix:Executable="stress-testpart">
    {ports_r}
  </Partition>
  <Module_Schedule ScheduleIdentifier="1" ScheduleName="s" InitialModuleSchedule="true" MajorFrameSeconds="0.02">
    <Partition_Schedule PartitionIdentifier="1" PartitionName="W" PeriodSeconds="0.02" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="1" WindowStartSeconds="0.0" WindowDurationSeconds="0.01" PartitionPeriodStart="true"/>
    </Partition_Schedule>
    <Partition_Schedule PartitionIdentifier="2" PartitionName="R" PeriodSeconds="0.02" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="2" WindowStartSeconds="0.01" WindowDurationSeconds="0.01" PartitionPeriodStart="true"/>
    </Partition_Schedule>
  </Module_Schedule>
  <Connection_Table>
    <Channel ChannelIdentifier="1" ChannelName="{channel}" partix:Transport="{transport}">
      <Source><Standard_Partition PartitionIdentifier="1" PartitionName="W" PortName="{channel}"/></Source>
      <Destination><Standard_Partition PartitionIdentifier="2" PartitionName="R" PortName="{channel}"/></Destination>
    </Channel>
  </Connection_Table>
</ARINC_653_Module>
"#
    )
}

/// The sampling module: S (4096 B, refresh 10 s) from W to R over `transport`.
fn sampling_module(transport: &str) -> String {
    module_xml(
        transport,
        r#"<Sampling_Port Name="S" MaxMessageSize="4096" Direction="SOURCE" RefreshRateSeconds="10"/>"#,
        r#"<Sampling_Port Name="S" MaxMessageSize="4096" Direction="DESTINATION" RefreshRateSeconds="10"/>"#,
        "S",
    )
}

/// The queuing module: Q (64 B, MaxNbMessages 5) from W to R over `transport`.
fn queuing_module(transport: &str) -> String {
    module_xml(
        transport,
        r#"<Queuing_Port Name="Q" MaxMessageSize="64" Direction="SOURCE" MaxNbMessages="5"/>"#,
        r#"<Queuing_Port Name="Q" MaxMessageSize="64" Direction="DESTINATION" MaxNbMessages="5"/>"#,
        "Q",
    )
}

/// The two CPUs, or `None` when this process may use only one.
fn two_cpus() -> Option<(usize, usize)> {
    let cpus = partix_runtime::executive::os::allowed_cpus();
    (cpus.len() >= 2).then(|| (cpus[0], cpus[1]))
}

/// Where the queuing partitions find their shared count (`COUNT_FD` of stress-testpart).
const COUNT_FD: RawFd = 599;

/// Start partition `p` of `set` as `stress-testpart ARGS`, on `cpu`, with its port descriptors
/// (and `count` on [`COUNT_FD`]).
fn start(set: &ChannelSet, p: usize, cpu: usize, args: &[String], count: Option<&Region>) -> Child {
    let mut fds: Vec<(RawFd, RawFd)> = set.child_fds(p);
    fds.extend(count.map(|r| (r.raw_fd(), COUNT_FD)));
    assert!(fds.len() <= 32, "at most 32 descriptors");
    // Just above every target (`F_DUPFD` refuses a floor at or above the soft limit; a fixed
    // 4696 failed every start under 1024).
    let high = above_port_targets(&fds);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_stress-testpart"));
    cmd.args(args)
        .env(ENV_PORT_FDS, set.env_value(p))
        .env_remove(partix_runtime::state::ENV_MODULE_FD)
        .env_remove(partix_runtime::state::ENV_PARTITION_FD)
        .env_remove(partix_runtime::state::ENV_DESCRIPTOR_TABLE)
        .env_remove("PARTIX_CONFIG")
        .env_remove("PARTIX_CONFIG_FD")
        .env_remove("PARTIX_STANDALONE_RESTART")
        .stdin(Stdio::null());
    // SAFETY: between fork and exec the closure only makes async-signal-safe system calls
    // (prctl, sched_setaffinity, fcntl, dup2, close) on values captured before the fork, with no
    // allocation (a fixed array).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The standalone partition pins itself to the CPU it starts on.
            let mut cpus: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut cpus);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &cpus) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // First above every target number, then onto the targets (as the executive does).
            let mut tmp = [0 as RawFd; 32];
            for (i, &(src, _)) in fds.iter().enumerate() {
                tmp[i] = libc::fcntl(src, libc::F_DUPFD_CLOEXEC, high);
                if tmp[i] < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (i, &(_, dst)) in fds.iter().enumerate() {
                if libc::dup2(tmp[i], dst) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(tmp[i]);
            }
            Ok(())
        });
    }
    cmd.spawn().expect("start stress-testpart")
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Wait until every file of `outs` has its `END` line (or `limit` passes, or a child exits:
/// they idle once done), then stop the children; return each file's lines.
fn finish(children: &mut [Child], outs: &[PathBuf], limit: Duration) -> Vec<Vec<String>> {
    let t0 = Instant::now();
    let mut exited = None;
    while t0.elapsed() < limit {
        if outs
            .iter()
            .all(|o| lines(o).iter().any(|l| l.starts_with("END")))
        {
            break;
        }
        if let Some((i, s)) = children
            .iter_mut()
            .enumerate()
            .find_map(|(i, c)| c.try_wait().ok().flatten().map(|s| (i, s)))
        {
            exited = Some(format!("partition {i} exited: {s}"));
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for c in children.iter_mut() {
        let _ = c.kill(); // our own child, by its pid
        let _ = c.wait();
    }
    let out: Vec<Vec<String>> = outs.iter().map(|o| lines(o)).collect();
    if let Some(e) = exited {
        panic!("{e}: {out:#?}");
    }
    out
}

/// Assert `END` and no `FAIL` in `l`; print its `INFO` lines; return its `PASS` count.
fn passes(who: &str, l: &[String]) -> usize {
    for i in l.iter().filter(|x| x.starts_with("INFO")) {
        println!("{who}: {i}");
    }
    let fails: Vec<&String> = l.iter().filter(|x| x.starts_with("FAIL")).collect();
    assert!(fails.is_empty(), "{who}: {fails:#?}\nall: {l:#?}");
    assert!(
        l.iter().any(|x| x.starts_with("END")),
        "{who}: no END: {l:#?}"
    );
    l.iter().filter(|x| x.starts_with("PASS")).count()
}

fn out_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("partix-stress-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn channels(xml: &str) -> ChannelSet {
    let module = partix_config::parse_str(xml, None).expect("module");
    ChannelSet::create(&module).expect("channels")
}

/// A seed per run (printed, so a failing run can be repeated with `PARTIX_STRESS_SEED`).
fn seed() -> u64 {
    std::env::var("PARTIX_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            t ^ u64::from(std::process::id()) << 32
        })
}

fn stress(transport: &str) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Under the usual soft limit on open descriptors, as a login shell has it: the partitions'
    // descriptor moves must fit below it (`start`).
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: l is a valid rlimit for getrlimit and setrlimit.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut l), 0);
        l.rlim_cur = l.rlim_cur.min(1024);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &l), 0);
    }
    let Some((c0, c1)) = two_cpus() else {
        eprintln!("ports_stress {transport}: skipped, this process may use only one CPU");
        return;
    };
    let seed = seed();
    println!("{transport}: seed {seed} (PARTIX_STRESS_SEED), CPUs {c0} and {c1}");
    let dir = out_dir(transport);
    let shm = matches!(transport, "one-sided" | "two-sided");

    // Sampling: writer on the first CPU, reader on the second.
    let t = Instant::now();
    let set = channels(&sampling_module(transport));
    let outs = [dir.join("s-writer.out"), dir.join("s-reader.out")];
    let arg = |role: &str, out: &Path, extra: u64| {
        vec![
            role.to_string(),
            out.display().to_string(),
            seed.to_string(),
            extra.to_string(),
        ]
    };
    let min = if shm { MIN_OVERLAPS } else { 0 };
    let mut kids = vec![
        start(&set, 1, c1, &arg("s-reader", &outs[1], min), None),
        start(&set, 0, c0, &arg("s-writer", &outs[0], 0), None),
    ];
    // The writer never ends: wait for the reader's END only.
    let out = finish(&mut kids, &outs[1..], Duration::from_secs(90));
    let w = lines(&outs[0]);
    assert!(
        !w.iter().any(|l| l.starts_with("FAIL")),
        "{transport} writer: {w:#?}"
    );
    assert_eq!(passes(&format!("{transport} S"), &out[0]), 12);
    drop(set);
    println!("{transport}: sampling {:?}", t.elapsed());

    // Queuing: sender on the first CPU, receiver on the second.
    let t = Instant::now();
    let set = channels(&queuing_module(transport));
    let outs = [dir.join("q-sender.out"), dir.join("q-receiver.out")];
    let n = queue_messages(transport);
    let count = Region::create("partix-stress-count", 4096).expect("count region");
    let mut kids = vec![
        start(&set, 1, c1, &arg("q-receiver", &outs[1], n), Some(&count)),
        start(&set, 0, c0, &arg("q-sender", &outs[0], n), Some(&count)),
    ];
    let out = finish(&mut kids, &outs, Duration::from_secs(180));
    assert_eq!(passes(&format!("{transport} QSRC"), &out[0]), 3);
    assert_eq!(passes(&format!("{transport} QDST"), &out[1]), 4);
    println!("{transport}: queuing {:?}", t.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concurrent_stress_one_sided() {
    stress("one-sided");
}

#[test]
fn concurrent_stress_two_sided() {
    stress("two-sided");
}

#[test]
fn concurrent_stress_udp() {
    stress("udp");
}

#[test]
fn concurrent_stress_tcp() {
    stress("tcp");
}
