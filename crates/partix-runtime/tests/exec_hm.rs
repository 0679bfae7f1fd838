//! Health monitor and mode requests with real partition processes: crashing partitions are
//! restarted or idled per their HM tables while another partition keeps all its windows;
//! SET_PARTITION_MODE and SET_MODULE_SCHEDULE requests take effect.

mod exec_util;

use exec_util::*;
use partix_config::model::{ErrorCode, ErrorLevel, ModuleAction, PartitionAction};
use partix_runtime::executive::hm::{Action, Death};
use partix_runtime::executive::{EndReason, Options, SwitchMechanism};
use partix_runtime::state::mode;
use partix_runtime::trace::RecordKind;
use std::sync::atomic::AtomicBool;

#[test]
fn crashing_partitions_are_handled_per_table_while_another_keeps_running() {
    if !is_root() {
        eprintln!("SKIPPED crashing_partitions_are_handled_per_table_while_another_keeps_running: needs root");
        return;
    }
    let tp = Some(testpart());
    let mut p1 = partition(
        1,
        "SEGV",
        tp.clone(),
        &["crash", "--how", "segv", "--after-ms", "30", "--first-only"],
    );
    p1.hm = vec![hm(ErrorCode::MemoryViolation, PartitionAction::ColdStart)];
    let p2 = partition(2, "STEADY", tp.clone(), &["sleep"]);
    // No HM table entry: the default is IDLE.
    let p3 = partition(
        3,
        "KILL9",
        tp.clone(),
        &["crash", "--how", "kill", "--after-ms", "30"],
    );
    let mut p4 = partition(
        4,
        "ABORT",
        tp.clone(),
        &[
            "crash",
            "--how",
            "abort",
            "--after-ms",
            "30",
            "--first-only",
        ],
    );
    p4.hm = vec![hm(ErrorCode::PartitionCrash, PartitionAction::WarmStart)];
    let m = module(
        vec![p1, p2, p3, p4],
        vec![schedule(
            1,
            20,
            &[
                (1, 1, 0.0, 3.0),
                (2, 2, 4.0, 4.0),
                (3, 3, 9.0, 3.0),
                (4, 4, 13.0, 3.0),
            ],
        )],
    );
    // 60 frames (1.2 s): the restarted partitions must be NORMAL again by the end, after a
    // crash 30 ms into each start, on a machine that may be loaded.
    const FRAMES: u64 = 60;
    let r = run_frames(&m, FRAMES, SwitchMechanism::default());
    assert_eq!(r.end, EndReason::Frames);
    let ev = |p: usize| r.hm_events.iter().filter(move |e| e.partition == p);
    // SEGV: MEMORY_VIOLATION → COLD_START, restarted once, NORMAL again.
    let e: Vec<_> = ev(0).collect();
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].death, Some(Death::Signaled(libc::SIGSEGV)));
    assert_eq!(e[0].decision.code, ErrorCode::MemoryViolation);
    assert_eq!(e[0].decision.action, Action::ColdStart);
    assert_eq!(r.partitions[0].restarts, 1);
    assert_eq!(r.partitions[0].mode, mode::NORMAL);
    // KILL9: PARTITION_CRASH, no table → IDLE; its later windows are skipped.
    let e: Vec<_> = ev(2).collect();
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].death, Some(Death::Signaled(libc::SIGKILL)));
    assert_eq!(e[0].decision.action, Action::Idle);
    assert!(!e[0].decision.from_table);
    assert_eq!(r.partitions[2].mode, mode::IDLE);
    assert!(
        r.partitions[2].stats.skipped >= 20,
        "{:?}",
        r.partitions[2].stats
    );
    // ABORT: SIGABRT → PARTITION_CRASH → WARM_START from its table.
    let e: Vec<_> = ev(3).collect();
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].death, Some(Death::Signaled(libc::SIGABRT)));
    assert_eq!(e[0].decision.action, Action::WarmStart);
    assert_eq!(r.partitions[3].restarts, 1);
    assert_eq!(r.partitions[3].mode, mode::NORMAL);
    // STEADY had every window, no HM event.
    assert_eq!(ev(1).count(), 0);
    assert_eq!(r.partitions[1].stats.windows, FRAMES);
    let steady = r
        .trace
        .records()
        .iter()
        .filter(|x| x.kind == RecordKind::Window && x.partition == 1)
        .count();
    assert_eq!(steady as u64, FRAMES);
    // HM events are in the trace too.
    assert_eq!(
        r.trace
            .records()
            .iter()
            .filter(|x| x.kind == RecordKind::Hm)
            .count(),
        3
    );
}

#[test]
fn module_level_hm_shutdown_ends_the_run() {
    if !is_root() {
        eprintln!("SKIPPED module_level_hm_shutdown_ends_the_run: needs root");
        return;
    }
    let tp = Some(testpart());
    let mut m = module(
        vec![
            partition(
                1,
                "FPE",
                tp.clone(),
                &["crash", "--how", "fpe", "--after-ms", "10"],
            ),
            partition(2, "OTHER", tp, &["sleep"]),
        ],
        vec![schedule(1, 10, &[(1, 1, 0.0, 3.0), (2, 2, 4.0, 3.0)])],
    );
    module_level(&mut m, ErrorCode::NumericError, ModuleAction::Shutdown);
    let r = run_frames(&m, 500, SwitchMechanism::default());
    assert_eq!(r.end, EndReason::HmShutdown);
    assert!(r.frames < 100, "{}", r.frames);
    assert_eq!(r.hm_events.len(), 1);
    assert_eq!(r.hm_events[0].decision.level, ErrorLevel::Module);
    assert_eq!(r.hm_events[0].decision.code, ErrorCode::NumericError);
}

/// A module-level SHUTDOWN decided during the initialisation (here on INIT_TIMEOUT) ends the
/// run as one during the run does: a report with `EndReason::HmShutdown` (so the CLI prints
/// the summary and exits with status 3), not a failure to start. And a stop (Ctrl-C) during
/// the initialisation ends it at once, not at the init time-out.
#[test]
fn a_shutdown_or_a_stop_during_the_initialisation_ends_the_run_with_its_report() {
    if !is_root() {
        eprintln!(
            "SKIPPED a_shutdown_or_a_stop_during_the_initialisation_ends_the_run_with_its_report: \
             needs root"
        );
        return;
    }
    let tp = Some(testpart());
    let m = |shutdown: bool| {
        let mut m = module(
            vec![
                partition(1, "SLOW", tp.clone(), &["sleep", "--init-ms", "60000"]),
                partition(2, "OTHER", tp.clone(), &["sleep"]),
            ],
            vec![schedule(1, 10, &[(1, 1, 0.0, 4.0), (2, 2, 5.0, 4.0)])],
        );
        if shutdown {
            module_level(&mut m, ErrorCode::InitTimeout, ModuleAction::Shutdown);
        }
        m
    };
    let run = |m: &partix_config::model::Module, init_timeout_ms: u64, stop_after: Option<u64>| {
        let options = Options {
            max_frames: Some(10),
            init_timeout: std::time::Duration::from_millis(init_timeout_ms),
            ..Options::default()
        };
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        if let Some(ms) = stop_after {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(ms));
                stop.store(true, std::sync::atomic::Ordering::Release);
            });
        }
        run_with(m, options, &stop)
    };
    let r = run(&m(true), 200, None).expect("a report, not a failure to start");
    assert_eq!(r.end, EndReason::HmShutdown);
    assert_eq!(r.frames, 0);
    assert_eq!(r.hm_events.len(), 1, "{:?}", r.hm_events);
    assert_eq!(r.hm_events[0].decision.code, ErrorCode::InitTimeout);
    // Stopped 300 ms into an initialisation allowed 20 s: no INIT_TIMEOUT was reached.
    let r = run(&m(false), 20_000, Some(300)).expect("a report");
    assert_eq!(r.end, EndReason::Stopped);
    assert_eq!(r.frames, 0);
    assert!(r.hm_events.is_empty(), "{:?}", r.hm_events);
}

#[test]
fn mode_requests_idle_and_restart_partitions() {
    if !is_root() {
        eprintln!("SKIPPED mode_requests_idle_and_restart_partitions: needs root");
        return;
    }
    let tp = Some(testpart());
    let m = module(
        vec![
            partition(
                1,
                "TOIDLE",
                tp.clone(),
                &["request", "--mode", "idle", "--after-ms", "20"],
            ),
            partition(
                2,
                "COLD",
                tp.clone(),
                &[
                    "request",
                    "--mode",
                    "cold",
                    "--after-ms",
                    "20",
                    "--first-only",
                ],
            ),
            partition(
                3,
                "WARM",
                tp,
                &[
                    "request",
                    "--mode",
                    "warm",
                    "--after-ms",
                    "20",
                    "--first-only",
                ],
            ),
        ],
        vec![schedule(
            1,
            15,
            &[(1, 1, 0.0, 4.0), (2, 2, 5.0, 4.0), (3, 3, 10.0, 4.0)],
        )],
    );
    // 60 frames (0.9 s): the requests come 20 ms after each start, but starting three
    // processes took longer than 20 frames (0.3 s) once under a heavy load (TOIDLE not IDLE
    // yet, session 18).
    let r = run_frames(&m, 60, SwitchMechanism::default());
    assert!(r.hm_events.is_empty(), "{:?}", r.hm_events);
    assert_eq!(r.partitions[0].mode, mode::IDLE);
    assert!(r.partitions[0].stats.skipped >= 10);
    assert_eq!(r.partitions[1].restarts, 1);
    assert_eq!(r.partitions[1].mode, mode::NORMAL);
    assert_eq!(r.partitions[2].restarts, 1);
    assert_eq!(r.partitions[2].mode, mode::NORMAL);
    let modes: Vec<_> = r
        .trace
        .records()
        .iter()
        .filter(|x| x.kind == RecordKind::Mode && x.partition == 2)
        .map(|x| x.text)
        .collect();
    assert_eq!(
        modes,
        ["COLD_START", "NORMAL", "WARM_START", "WARM_START", "NORMAL"]
    );
}

/// A restart asked for during the initialisation (SET_PARTITION_MODE COLD_START or WARM_START
/// before NORMAL) is carried out then. The request used to be dropped: the process that asked
/// waited for it until the init time-out, which idled the partition.
#[test]
fn a_restart_asked_for_during_the_initialisation_is_carried_out() {
    if !is_root() {
        eprintln!(
            "SKIPPED a_restart_asked_for_during_the_initialisation_is_carried_out: needs root"
        );
        return;
    }
    let tp = Some(testpart());
    let m = module(
        vec![
            partition(1, "COLD", tp.clone(), &["sleep", "--init-request", "cold"]),
            partition(2, "WARM", tp, &["sleep", "--init-request", "warm"]),
        ],
        vec![schedule(1, 10, &[(1, 1, 0.0, 4.0), (2, 2, 5.0, 4.0)])],
    );
    let r = run_frames(&m, 10, SwitchMechanism::default());
    assert!(r.hm_events.is_empty(), "{:?}", r.hm_events);
    for p in 0..2 {
        assert_eq!(r.partitions[p].mode, mode::NORMAL, "P{}", p + 1);
        assert_eq!(r.partitions[p].stats.restarts, 1, "P{}", p + 1);
        assert_eq!(r.partitions[p].stats.windows, 10, "P{}", p + 1);
    }
}

#[test]
fn system_partition_switches_the_module_schedule_at_a_frame_boundary() {
    if !is_root() {
        eprintln!(
            "SKIPPED system_partition_switches_the_module_schedule_at_a_frame_boundary: needs root"
        );
        return;
    }
    let tp = Some(testpart());
    let mut sys = partition(
        1,
        "SYS",
        tp.clone(),
        &["schedule", "--id", "2", "--after-ms", "25"],
    );
    sys.system_partition = true;
    // A non-system partition asking for a switch is ignored.
    let user = partition(2, "USER", tp, &["schedule", "--id", "3", "--after-ms", "5"]);
    let m = module(
        vec![sys, user],
        vec![
            schedule(1, 20, &[(11, 1, 0.0, 5.0), (12, 2, 10.0, 5.0)]),
            schedule(2, 10, &[(21, 1, 0.0, 2.0), (22, 2, 5.0, 2.0)]),
            schedule(3, 10, &[(31, 2, 0.0, 2.0)]),
        ],
    );
    // 40 frames: the request comes 25 ms after the start, which may take a while under load.
    let r = run_frames(&m, 40, SwitchMechanism::default());
    let recs = r.trace.records();
    let req = recs
        .iter()
        .find(|x| x.kind == RecordKind::ScheduleRequest)
        .expect("request recorded");
    assert_eq!(req.window, 2);
    assert_eq!(req.partition, 0);
    let sw: Vec<_> = recs
        .iter()
        .filter(|x| x.kind == RecordKind::ScheduleSwitch)
        .collect();
    assert_eq!(sw.len(), 1);
    assert_eq!((sw[0].detail, sw[0].window), (1, 2));
    // The switch happens at a frame start of schedule 1 (a multiple of 20 ms after frame 0).
    let first = recs
        .iter()
        .find(|x| x.kind == RecordKind::Point)
        .unwrap()
        .planned_start;
    let at = recs
        .iter()
        .find(|x| x.kind == RecordKind::Point && x.schedule == 2)
        .unwrap()
        .planned_start;
    assert_eq!((at - first) % 20_000_000, 0);
    assert!(at > req.actual_start);
    // Windows of schedule 3 never opened.
    assert!(!recs
        .iter()
        .any(|x| x.kind == RecordKind::Window && x.window == 31));
    assert!(recs
        .iter()
        .any(|x| x.kind == RecordKind::Window && x.window == 21));
}

/// Give partition `p` one DATA region of 32 MiB: a memory limit of 32 MiB.
fn limit_32_mib(p: &mut partix_config::model::Partition) {
    use partix_config::model::{MemoryAccess, MemoryKind, MemoryRequirement};
    p.memory = vec![MemoryRequirement {
        name: Some("data".into()),
        kind: MemoryKind::Data,
        size_bytes: 32 << 20,
        access: MemoryAccess::ReadWrite,
    }];
}

#[test]
fn memory_limit_from_the_config_is_applied() {
    if !is_root() {
        eprintln!("SKIPPED memory_limit_from_the_config_is_applied: needs root");
        return;
    }
    let tp = Some(testpart());
    let limit = limit_32_mib;
    let mut small = partition(
        1,
        "SMALL",
        tp.clone(),
        &["alloc", "--mb", "4", "--after-ms", "5"],
    );
    limit(&mut small);
    let mut big = partition(2, "BIG", tp, &["alloc", "--mb", "256", "--after-ms", "5"]);
    limit(&mut big);
    let m = module(
        vec![small, big],
        vec![schedule(1, 10, &[(1, 1, 0.0, 4.0), (2, 2, 5.0, 4.0)])],
    );
    let r = run_frames(&m, 60, SwitchMechanism::default());
    // 4 MiB fit in 32 MiB; 256 MiB do not: the allocation fails and the program aborts.
    assert!(
        r.hm_events.iter().all(|e| e.partition == 1),
        "{:?}",
        r.hm_events
    );
    assert_eq!(r.partitions[0].mode, mode::NORMAL);
    let e = r.hm_events.first().expect("BIG failed");
    assert_eq!(e.death, Some(Death::Signaled(libc::SIGABRT)));
    assert_eq!(r.partitions[1].mode, mode::IDLE);
}

/// Shared memory the partition creates itself (a memfd, mapped shared) is not private data, so
/// `RLIMIT_DATA` does not count it; the partition's memory cgroup does: 256 MiB of it in a
/// partition of 32 MiB ends with the kernel killing the partition (SIGKILL, PARTITION_CRASH,
/// IDLE by default), while 4 MiB in another are fine.
#[test]
fn shared_memory_over_the_limit_is_stopped_by_the_memory_cgroup() {
    if !is_root() {
        eprintln!(
            "SKIPPED shared_memory_over_the_limit_is_stopped_by_the_memory_cgroup: needs root"
        );
        return;
    }
    let tp = Some(testpart());
    let limit = limit_32_mib;
    let args = |mb: &'static str| ["alloc", "--shm", "--mb", mb, "--after-ms", "5"];
    let mut small = partition(1, "SMALL", tp.clone(), &args("4"));
    limit(&mut small);
    let mut big = partition(2, "BIG", tp, &args("256"));
    limit(&mut big);
    let m = module(
        vec![small, big],
        vec![schedule(1, 10, &[(1, 1, 0.0, 4.0), (2, 2, 5.0, 4.0)])],
    );
    let r = run_frames(&m, 120, SwitchMechanism::default());
    if let Some(why) = &r.memory_error {
        eprintln!(
            "SKIPPED shared_memory_over_the_limit_is_stopped_by_the_memory_cgroup: no memory \
             cgroup ({why})"
        );
        return;
    }
    eprintln!(
        "memory cgroups {:?}, OOM kills {:?}, HM {:?}",
        r.partitions
            .iter()
            .map(|p| p.memory_cgroup)
            .collect::<Vec<_>>(),
        r.partitions.iter().map(|p| p.oom_kills).collect::<Vec<_>>(),
        r.hm_events
    );
    assert!(r.partitions.iter().all(|p| p.memory_cgroup.is_some()));
    assert!(
        r.hm_events.iter().all(|e| e.partition == 1),
        "{:?}",
        r.hm_events
    );
    assert_eq!(r.partitions[0].mode, mode::NORMAL);
    assert_eq!(r.partitions[0].oom_kills, 0);
    let e = r.hm_events.first().expect("BIG was not stopped");
    assert_eq!(e.death, Some(Death::Signaled(libc::SIGKILL)));
    assert_eq!(r.partitions[1].oom_kills, 1);
    assert_eq!(r.partitions[1].mode, mode::IDLE);
}

/// A FUSE file system of one file, `slow`, opened for direct I/O: a read of it is answered
/// only `hold` after it arrived. A process reading it cannot end, even by SIGKILL, until then
/// (the kernel waits for a request the server has taken without letting a signal interrupt
/// it). It records the id of every reading process (thread group), and shows a second file,
/// `slow.taken`, once it has taken a read (`partix-testpart --read` waits for it).
struct SlowFs {
    hold: std::time::Duration,
    readers: std::sync::Arc<std::sync::Mutex<Vec<i32>>>,
}

impl SlowFs {
    const FILE: u64 = 2;
    const TAKEN: u64 = 3;

    fn attr(ino: u64) -> fuser::FileAttr {
        let t = std::time::UNIX_EPOCH;
        let dir = ino == fuser::FUSE_ROOT_ID;
        fuser::FileAttr {
            ino,
            size: if dir { 0 } else { 4096 },
            blocks: 0,
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            kind: if dir {
                fuser::FileType::Directory
            } else {
                fuser::FileType::RegularFile
            },
            perm: if dir { 0o755 } else { 0o444 },
            nlink: 1,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }
}

impl fuser::Filesystem for SlowFs {
    fn lookup(
        &mut self,
        _req: &fuser::Request<'_>,
        parent: u64,
        name: &std::ffi::OsStr,
        reply: fuser::ReplyEntry,
    ) {
        if parent == fuser::FUSE_ROOT_ID && name == "slow" {
            reply.entry(&std::time::Duration::ZERO, &Self::attr(Self::FILE), 0);
        } else if parent == fuser::FUSE_ROOT_ID
            && name == "slow.taken"
            && !self.readers.lock().unwrap().is_empty()
        {
            reply.entry(&std::time::Duration::ZERO, &Self::attr(Self::TAKEN), 0);
        } else {
            reply.error(libc::ENOENT);
        }
    }

    fn getattr(
        &mut self,
        _req: &fuser::Request<'_>,
        ino: u64,
        _fh: Option<u64>,
        reply: fuser::ReplyAttr,
    ) {
        if ino == fuser::FUSE_ROOT_ID || ino == Self::FILE || ino == Self::TAKEN {
            reply.attr(&std::time::Duration::ZERO, &Self::attr(ino));
        } else {
            reply.error(libc::ENOENT);
        }
    }

    fn open(&mut self, _req: &fuser::Request<'_>, _ino: u64, _flags: i32, reply: fuser::ReplyOpen) {
        // Direct I/O: the reader itself waits for the server's answer (with the page cache it
        // would wait for a page lock, which a SIGKILL interrupts).
        reply.opened(0, fuser::consts::FOPEN_DIRECT_IO);
    }

    #[allow(clippy::too_many_arguments)]
    fn read(
        &mut self,
        req: &fuser::Request<'_>,
        _ino: u64,
        _fh: u64,
        _offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: fuser::ReplyData,
    ) {
        // The request names the reading thread; its process is its thread group.
        let tgid = std::fs::read_to_string(format!("/proc/{}/status", req.pid()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Tgid:"))
                    .and_then(|v| v.trim().parse().ok())
            })
            .unwrap_or(0);
        self.readers.lock().unwrap().push(tgid);
        let hold = self.hold;
        std::thread::spawn(move || {
            std::thread::sleep(hold);
            reply.data(&vec![0u8; size.min(4096) as usize]);
        });
    }
}

/// A mounted [`SlowFs`] (unmounted on drop), if this host can mount one.
struct SlowMount {
    dir: std::path::PathBuf,
    session: Option<fuser::BackgroundSession>,
    readers: std::sync::Arc<std::sync::Mutex<Vec<i32>>>,
}

impl SlowMount {
    /// Mount a [`SlowFs`] that answers reads `hold` late; `None` (and a SKIPPED line naming
    /// `test`) where this host has no FUSE.
    fn new(test: &str, hold: std::time::Duration) -> Option<SlowMount> {
        if !std::path::Path::new("/dev/fuse").exists() {
            eprintln!("SKIPPED {test}: no /dev/fuse");
            return None;
        }
        let dir = std::env::temp_dir().join(format!("partix-slowfs-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let readers = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let fs = SlowFs {
            hold,
            readers: readers.clone(),
        };
        let session = match fuser::spawn_mount2(
            fs,
            &dir,
            &[fuser::MountOption::FSName("partix-slowfs".into())],
        ) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("SKIPPED {test}: cannot mount a FUSE file system ({e})");
                let _ = std::fs::remove_dir(&dir);
                return None;
            }
        };
        Some(SlowMount {
            dir,
            session: Some(session),
            readers,
        })
    }

    /// The file whose reads are answered late.
    fn file(&self) -> String {
        self.dir.join("slow").to_str().unwrap().to_owned()
    }

    /// The processes that read the file, in order.
    fn readers(&self) -> Vec<i32> {
        self.readers.lock().unwrap().clone()
    }
}

impl Drop for SlowMount {
    fn drop(&mut self) {
        // Detached first: a reader still waiting (a failed test) must not keep the mount.
        if let Ok(c) = std::ffi::CString::new(self.dir.as_os_str().as_encoded_bytes()) {
            // SAFETY: a valid path string; umount2 has no other memory preconditions.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        drop(self.session.take());
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// A module of two partitions: partition 1 `slow.0` runs `partix-testpart` with arguments
/// `slow.1` and `--read` of a [`SlowFs`] file answered `hold` late, partition 2 `STEADY` sleeps;
/// one schedule of major frame `sched.0` ms and windows `sched.1`. `None` (after a SKIPPED
/// line naming `test`) where the test cannot run here.
#[allow(clippy::type_complexity)]
fn slow_and_steady(
    test: &str,
    hold: std::time::Duration,
    slow: (&str, &[&str]),
    sched: (u64, &[(u32, u32, f64, f64)]),
) -> Option<(SlowMount, partix_config::model::Module)> {
    if !is_root() {
        eprintln!("SKIPPED {test}: needs root");
        return None;
    }
    let mount = SlowMount::new(test, hold)?;
    let file = mount.file();
    let mut args = slow.1.to_vec();
    args.extend(["--read", &file]);
    let tp = Some(testpart());
    let m = module(
        vec![
            partition(1, slow.0, tp.clone(), &args),
            partition(2, "STEADY", tp, &["sleep"]),
        ],
        vec![schedule(1, sched.0, sched.1)],
    );
    Some((mount, m))
}

/// Assert that process `pid` was reaped (within 5 s): a killed partition process is not left
/// a zombie.
fn assert_reaped(pid: i32) {
    let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
    let t0 = std::time::Instant::now();
    while proc.exists() && t0.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!proc.exists(), "the old process {pid} was not reaped");
}

/// A partition whose process a SIGKILL cannot end at once (one of its threads waits for a
/// FUSE read that its server answers only 800 ms after it came) asks for a COLD_START. The
/// executive used to wait for the old process to end at that scheduling point (up to 2 s), so
/// every other partition's windows waited with it (a window 552 ms late). Now the kill returns
/// at once; the partition's windows are skipped until its old process has ended, then it
/// starts again; the old process is reaped; and the other partition keeps every window on
/// time.
#[test]
fn a_process_slow_to_die_holds_up_no_other_partition() {
    let Some((slow, m)) = slow_and_steady(
        "a_process_slow_to_die_holds_up_no_other_partition",
        std::time::Duration::from_millis(800),
        (
            "SLOW_TO_DIE",
            &[
                "request",
                "--mode",
                "cold",
                "--after-ms",
                "30",
                "--first-only",
            ],
        ),
        (20, &[(1, 1, 0.0, 5.0), (2, 2, 10.0, 5.0)]),
    ) else {
        return;
    };
    // 100 frames (2 s): the old process ends 800 ms after its read began (in its
    // initialisation), and the restarted one must be NORMAL by the end.
    const FRAMES: u64 = 100;
    let r = run_frames(&m, FRAMES, SwitchMechanism::default());
    assert_eq!(r.end, EndReason::Frames);
    assert!(r.hm_events.is_empty(), "{:?}", r.hm_events);
    let readers = slow.readers();
    assert_eq!(readers.len(), 1, "one read of the slow file: {readers:?}");
    // STEADY: every window, none of them held up by the kill.
    let steady: Vec<_> = r
        .trace
        .records()
        .iter()
        .filter(|x| x.kind == RecordKind::Window && x.partition == 1)
        .map(|x| x.actual_start.saturating_sub(x.planned_start))
        .collect();
    assert_eq!(steady.len() as u64, FRAMES);
    let worst = steady.iter().max().copied().unwrap_or(0);
    let p = &r.partitions[0];
    eprintln!(
        "STEADY's latest window opened {} µs late; SLOW_TO_DIE's restart waited {} windows",
        worst / 1000,
        p.stats.deferred
    );
    assert!(
        worst < 100_000_000,
        "a STEADY window opened {} ms late: the kill held up the schedule",
        worst / 1_000_000
    );
    // SLOW_TO_DIE: restarted once, after windows skipped while its old process was ending.
    assert_eq!(p.restarts, 1, "{p:?}");
    assert_eq!(p.mode, mode::NORMAL, "{p:?}");
    assert!(
        p.stats.deferred >= 5,
        "windows skipped while the old process was ending: {:?}",
        p.stats
    );
    let ending = r
        .trace
        .records()
        .iter()
        .filter(|x| x.kind == RecordKind::Skipped && x.partition == 0 && x.text == "ENDING")
        .count();
    assert_eq!(ending as u64, p.stats.deferred);
    assert_reaped(readers[0]);
}

/// The same during the initialisation: a partition asks for a COLD_START while one of its
/// threads waits for the slow read. The new process starts only once the old one has ended
/// (the initialisation waits for it), and the run goes on with both partitions NORMAL.
#[test]
fn a_restart_during_the_initialisation_waits_for_the_old_process_to_end() {
    const HOLD: std::time::Duration = std::time::Duration::from_millis(500);
    let Some((slow, m)) = slow_and_steady(
        "a_restart_during_the_initialisation_waits_for_the_old_process_to_end",
        HOLD,
        ("SLOW_IN_INIT", &["sleep", "--init-request", "cold"]),
        (10, &[(1, 1, 0.0, 4.0), (2, 2, 5.0, 4.0)]),
    ) else {
        return;
    };
    let r = run_frames(&m, 10, SwitchMechanism::default());
    assert!(r.hm_events.is_empty(), "{:?}", r.hm_events);
    let readers = slow.readers();
    assert_eq!(readers.len(), 1, "one read of the slow file: {readers:?}");
    for p in 0..2 {
        assert_eq!(r.partitions[p].mode, mode::NORMAL, "P{}", p + 1);
        assert_eq!(r.partitions[p].stats.windows, 10, "P{}", p + 1);
    }
    assert_eq!(r.partitions[0].stats.restarts, 1);
    // The initialisation lasted until the read was answered: the new process did not start
    // beside the old one.
    assert!(
        r.startup_ns >= (HOLD / 2).as_nanos() as u64,
        "startup took {} ms",
        r.startup_ns / 1_000_000
    );
    assert_reaped(readers[0]);
}

/// The partition-probe test program built with this crate.
fn probe() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_partition-probe"))
}

/// A fresh directory for one test's files.
fn test_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("exec-hm-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Write `xml` as `module.xml` in `dir` and load it (the partitions read their HM tables from
/// the file, as under `partix run`).
fn load_config(dir: &std::path::Path, xml: &str) -> partix_config::model::Module {
    let path = dir.join("module.xml");
    std::fs::write(&path, xml).unwrap();
    partix_config::load(&path).unwrap_or_else(|e| panic!("{xml}\n{e:?}"))
}

/// One or two `partition-probe` partitions in a 20 ms frame (windows of 8 ms), with `hm`
/// (System_HM_Table, Module_HM_Table and Partition_HM_Table elements) and each partition's
/// scenario, its events appended to `out_N` in `dir`.
fn probe_config(dir: &std::path::Path, hm: &str, scenarios: &[&str]) -> String {
    let exe = probe();
    let mut parts = String::new();
    let mut sched = String::new();
    for (i, sc) in scenarios.iter().enumerate() {
        let id = i + 1;
        let out = dir.join(format!("out_{id}"));
        parts += &format!(
            "  <Partition PartitionIdentifier=\"{id}\" PartitionName=\"P{id}\" EntryPoint=\"main\" \
             partix:Executable=\"{}\" partix:Arguments=\"{sc} --out {}\"/>\n",
            exe.display(),
            out.display()
        );
        sched += &format!(
            "    <Partition_Schedule PartitionIdentifier=\"{id}\" PeriodSeconds=\"0.02\" \
             PeriodDurationSeconds=\"0.008\">\n      <Window_Schedule WindowIdentifier=\"{id}\" \
             WindowStartSeconds=\"{}\" WindowDurationSeconds=\"0.008\"/>\n    \
             </Partition_Schedule>\n",
            0.01 * i as f64
        );
    }
    format!(
        "<ARINC_653_Module xmlns:partix=\"urn:partix:config:1\" ModuleName=\"hm\">\n{hm}{parts}  \
         <Module_Schedule MajorFrameSeconds=\"0.02\">\n{sched}  </Module_Schedule>\n\
         </ARINC_653_Module>\n"
    )
}

fn read_lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A COLD_START ordered by the partition's own HM table (APPLICATION_ERROR → COLD_START, raised
/// by a process in NORMAL mode) restarts it under the executive with the start condition
/// HM_PARTITION_RESTART, counted as an HM event of the partition and recorded with the cause
/// `partition HM`. The request used to carry only the mode: the executive restarted it with
/// PARTITION_RESTART, as for SET_PARTITION_MODE, and counted no HM event (found by review; only
/// the standalone test, where the condition goes through the environment, saw the right one).
#[test]
fn an_hm_ordered_cold_start_restarts_with_hm_partition_restart() {
    if !is_root() {
        eprintln!(
            "SKIPPED an_hm_ordered_cold_start_restarts_with_hm_partition_restart: needs root"
        );
        return;
    }
    let dir = test_dir("cold");
    let hm = r#"  <System_HM_Table>
    <System_State_Entry SystemState="1">
      <Error_ID_Level ErrorIdentifier="2" ErrorCode="APPLICATION_ERROR" ErrorLevel="PROCESS"/>
    </System_State_Entry>
  </System_HM_Table>
  <Partition_HM_Table PartitionIdentifier="1" PartitionName="P1">
    <System_State_Entry SystemState="1">
      <Error_ID_Action ErrorIdentifier="2" Action="COLD_START"/>
    </System_State_Entry>
  </Partition_HM_Table>
"#;
    let m = load_config(&dir, &probe_config(&dir, hm, &["hm-cold-start"]));
    let r = run_frames(&m, 25, SwitchMechanism::default());
    assert_eq!(r.end, EndReason::Frames);
    assert_eq!(
        read_lines(&dir.join("out_1")),
        [
            "init:ColdStart NormalStart",
            "init:ColdStart HmPartitionRestart"
        ]
    );
    let p = &r.partitions[0];
    assert_eq!(p.restarts, 1, "{p:?}");
    assert_eq!(p.stats.hm_events, 1, "{p:?}");
    assert_eq!(p.mode, mode::IDLE, "{p:?}");
    let causes: Vec<_> = r
        .trace
        .records()
        .iter()
        .filter(|x| x.kind == RecordKind::Mode)
        .map(|x| (x.text, x.text2))
        .collect();
    assert!(
        causes.contains(&("COLD_START", "partition HM")),
        "{causes:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A module-level error raised in a partition whose Module_HM_Table action is RESET restarts
/// every partition with HM_MODULE_RESTART; with SHUTDOWN, the run ends as for an HM shutdown
/// the executive decides. The partition used to ask for its own COLD_START (RESET) or IDLE
/// (SHUTDOWN) only, which the executive carried out as SET_PARTITION_MODE.
#[test]
fn a_module_action_ordered_by_a_partition_applies_to_the_module() {
    if !is_root() {
        eprintln!(
            "SKIPPED a_module_action_ordered_by_a_partition_applies_to_the_module: needs root"
        );
        return;
    }
    for action in ["RESET", "SHUTDOWN"] {
        let dir = test_dir(&action.to_lowercase());
        let hm = format!(
            r#"  <System_HM_Table>
    <System_State_Entry SystemState="1">
      <Error_ID_Level ErrorIdentifier="2" ErrorCode="APPLICATION_ERROR" ErrorLevel="MODULE"/>
    </System_State_Entry>
  </System_HM_Table>
  <Module_HM_Table>
    <System_State_Entry SystemState="1">
      <Error_ID_Action ErrorIdentifier="2" Action="{action}"/>
    </System_State_Entry>
  </Module_HM_Table>
"#
        );
        let m = load_config(
            &dir,
            &probe_config(&dir, &hm, &["hm-cold-start", "start-report"]),
        );
        let r = run_frames(&m, 25, SwitchMechanism::default());
        let (p1, p2) = (
            read_lines(&dir.join("out_1")),
            read_lines(&dir.join("out_2")),
        );
        if action == "RESET" {
            assert_eq!(r.end, EndReason::Frames);
            assert_eq!(
                p1,
                [
                    "init:ColdStart NormalStart",
                    "init:ColdStart HmModuleRestart"
                ]
            );
            assert_eq!(
                p2,
                [
                    "init:ColdStart NormalStart",
                    "init:ColdStart HmModuleRestart"
                ]
            );
            assert_eq!(r.partitions[0].restarts, 1);
            assert_eq!(r.partitions[1].restarts, 1);
            assert_eq!(r.partitions[0].stats.hm_events, 1);
        } else {
            assert_eq!(r.end, EndReason::HmShutdown);
            assert!(r.frames < 20, "{}", r.frames);
            assert_eq!(p1, ["init:ColdStart NormalStart"]);
            assert_eq!(r.partitions[0].stats.hm_events, 1);
            assert!(r.partitions.iter().all(|p| p.restarts == 0));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// After a restart, the releases are anchored at the partition's next window, not at the start
/// of the window it was respawned in: the restarted incarnation initialises for 16 ms of that
/// window and enters NORMAL there, and its periodic process (capacity 12 ms) had its first
/// deadline before the transition: a DEADLINE_MISSED after every restart (found by review).
#[test]
fn releases_after_a_restart_start_after_the_transition_to_normal() {
    if !is_root() {
        eprintln!(
            "SKIPPED releases_after_a_restart_start_after_the_transition_to_normal: needs root"
        );
        return;
    }
    let dir = test_dir("anchor");
    let out = dir.join("out");
    let m = module(
        vec![partition(
            1,
            "RA",
            Some(probe()),
            &["exec-restart-anchor", "--out", out.to_str().unwrap()],
        )],
        vec![schedule(1, 40, &[(1, 1, 0.0, 20.0)])],
    );
    let r = run_frames(&m, 15, SwitchMechanism::default());
    assert_eq!(r.end, EndReason::Frames);
    assert_eq!(
        read_lines(&out),
        [
            "init:NormalStart",
            "init:PartitionRestart",
            "ra:first-release>=normal=true first-job>=release=true",
            "ra:done"
        ]
    );
    assert_eq!(r.partitions[0].restarts, 1);
    assert_eq!(r.partitions[0].mode, mode::IDLE);
    let misses: u64 = r.processes.iter().map(|p| p.deadline_misses).sum();
    assert_eq!(misses, 0, "{:?}", r.processes);
    let _ = std::fs::remove_dir_all(&dir);
}
