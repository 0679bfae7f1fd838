//! What the executive leaves behind and what its report claims: processes a partition forked
//! do not outlive it (after a restart, after the run, after an executive that was SIGKILLed),
//! and a partition cgroup given up during the run takes its memory limit and cpuset from the
//! report.

mod exec_util;

use exec_util::*;
use partix_config::model::{MemoryAccess, MemoryKind, MemoryRequirement};
use partix_runtime::attach::monotonic_ns;
use partix_runtime::executive::hm::Death;
use partix_runtime::executive::os::{default_cpu, resolve_program, OsSwitcher};
use partix_runtime::executive::shared::SharedState;
use partix_runtime::executive::{SwitchMechanism, Switcher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The tests of this file each run partitions on the same CPU: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A test's own temporary directory, removed at its end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("exec-cleanup-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, r)| !r.starts_with('Z'))
    })
}

/// Wait up to `limit` for process `pid` to end; return whether it did.
fn ends_within(pid: i32, limit: Duration) -> bool {
    let t0 = Instant::now();
    while alive(pid) {
        if t0.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// The pid in the first "child PID" line of `file`, waiting up to `limit` for it.
fn child_pid(file: &Path, limit: Duration) -> Option<i32> {
    let t0 = Instant::now();
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let pid = text.lines().find_map(|l| {
            l.strip_prefix("child ")
                .unwrap_or(l)
                .trim()
                .parse::<i32>()
                .ok()
        });
        if pid.is_some() || t0.elapsed() > limit {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The cgroup directories named after executive `pid` (`partix-PID-…`) anywhere under
/// `/sys/fs/cgroup` (a few levels deep: the hierarchies' roots and the test's own cgroups).
fn cgroups_of(pid: u32) -> Vec<PathBuf> {
    fn walk(dir: &Path, prefix: &str, depth: u32, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = e.path();
            if e.file_name().to_string_lossy().starts_with(prefix) {
                found.push(path);
            } else if depth > 0 {
                walk(&path, prefix, depth - 1, found);
            }
        }
    }
    let mut found = Vec::new();
    walk(
        Path::new("/sys/fs/cgroup"),
        &format!("partix-{pid}-"),
        6,
        &mut found,
    );
    found
}

/// A partition's cgroup that cannot take its new process (here: removed under the executive)
/// is given up, and with it the memory limit and the cpuset it held: the report must say so.
/// Before, `memory_cgroups[p]` still named the cgroup's control file, and no `cpuset_error`
/// was set (review 26 #5).
#[test]
fn a_cgroup_given_up_at_a_spawn_is_no_longer_reported_as_a_memory_limit() {
    const TEST: &str = "a_cgroup_given_up_at_a_spawn_is_no_longer_reported_as_a_memory_limit";
    if !is_root() {
        eprintln!("SKIPPED {TEST}: needs root");
        return;
    }
    let _one = serial();
    let mut p = partition(1, "P1", Some(testpart()), &["sleep"]);
    p.memory = vec![MemoryRequirement {
        name: Some("data".into()),
        kind: MemoryKind::Data,
        size_bytes: 32 << 20,
        access: MemoryAccess::ReadWrite,
    }];
    let m = module(vec![p], vec![schedule(1, 40, &[(1, 1, 0.0, 20.0)])]);
    let shared = SharedState::create(&m, monotonic_ns()).unwrap();
    let programs = vec![resolve_program(&m, 0).unwrap()];
    let mut sw = OsSwitcher::new(&m, &shared, &programs, &[default_cpu()])
        .unwrap()
        .with_spawn_into_cgroup(false);
    let Some(dir) = sw.cgroup_path(0).map(std::path::Path::to_path_buf) else {
        eprintln!(
            "SKIPPED {TEST}: no partition cgroup ({:?})",
            sw.cgroup_error
        );
        return;
    };
    if sw.memory_cgroups[0].is_none() {
        eprintln!("SKIPPED {TEST}: no memory cgroup ({:?})", sw.memory_error);
        return;
    }
    // Empty: it can be removed, and the process forked next cannot be moved into it.
    std::fs::remove_dir(&dir).unwrap();
    sw.spawn(0).unwrap();
    assert!(sw.cgroup_path(0).is_none());
    assert!(sw.cgroup_error.is_some());
    assert_eq!(
        sw.memory_cgroups[0], None,
        "the memory limit is still claimed"
    );
    assert!(sw.memory_error.is_some());
    assert!(sw.cpuset_error.is_some());
    sw.kill(0);
    drop(sw);
}

/// Without a cgroup (here: the partition's removed under the executive, so that it is given
/// up; as a non-root user there is none), a process the partition forked is in the
/// partition's process group, and ends with the partition: when the executive kills it (an HM
/// restart or IDLE, the run's end) and when it dies by itself. Before, nothing ended it: it
/// ran on beside the restarted partition and after the run (review 26 #2).
#[test]
fn a_process_a_partition_forked_ends_with_it_without_a_cgroup() {
    let _one = serial();
    let dir = Scratch::new("pgroup");
    let (f1, f2) = (dir.0.join("killed"), dir.0.join("died"));
    let script = |file: &Path, end: &str| {
        format!("sleep 1000 & echo \"child $!\" > {}; {end}", file.display())
    };
    for (file, end) in [(&f1, "wait"), (&f2, "exit 3")] {
        let s = script(file, end);
        let m = module(
            vec![partition(1, "P1", Some("/bin/sh".into()), &["-c", &s])],
            vec![schedule(1, 40, &[(1, 1, 0.0, 20.0)])],
        );
        let shared = SharedState::create(&m, monotonic_ns()).unwrap();
        let programs = vec![resolve_program(&m, 0).unwrap()];
        let mut sw = OsSwitcher::new(&m, &shared, &programs, &[default_cpu()])
            .unwrap()
            .with_spawn_into_cgroup(false)
            .with_mechanism(SwitchMechanism::Signals, Duration::from_millis(1));
        if let Some(cg) = sw.cgroup_path(0) {
            std::fs::remove_dir(cg).unwrap();
        }
        sw.spawn(0).unwrap();
        assert!(sw.cgroup_path(0).is_none(), "the partition has a cgroup");
        sw.cont(0);
        let child = child_pid(file, Duration::from_secs(10)).expect("no child pid");
        assert!(alive(child));
        if end == "wait" {
            // The executive kills the partition (as for an HM restart).
            sw.kill(0);
        } else {
            // The partition dies by itself; the executive finds it dead.
            let t0 = Instant::now();
            let death = loop {
                if let Some(d) = sw.poll_death() {
                    break d;
                }
                assert!(t0.elapsed() < Duration::from_secs(10), "no death seen");
                std::thread::sleep(Duration::from_millis(1));
            };
            assert_eq!(death, (0, Death::Exited(3)));
        }
        let gone = ends_within(child, Duration::from_secs(2));
        if !gone {
            // SAFETY: kill has no memory preconditions; the test's own leftover.
            unsafe { libc::kill(child, libc::SIGKILL) };
        }
        assert!(gone, "{end}: the process the partition forked outlived it");
        drop(sw);
    }
}

/// The executive of [`a_process_forked_before_the_executive_was_killed_is_ended_by_the_next_run`],
/// in a process of its own (this test binary, run again with [`KILLED_OUT`] set); a no-op
/// otherwise.
#[test]
fn executive_to_be_killed() {
    let Ok(out) = std::env::var(KILLED_OUT) else {
        return;
    };
    let m = module(
        vec![partition(
            1,
            "P1",
            Some(testpart()),
            &["sleep", "--fork-sleeper", "--out", &out],
        )],
        vec![schedule(1, 40, &[(1, 1, 0.0, 20.0)])],
    );
    let _ = run_frames(&m, 100_000, SwitchMechanism::Gate);
}

/// See [`executive_to_be_killed`]: where its partition writes the pid of the process it forks.
const KILLED_OUT: &str = "PARTIX_TEST_KILLED_EXECUTIVE_OUT";

/// An executive killed without cleaning up (SIGKILL: the OOM killer, `kill -9`, a CI
/// time-out) leaves its partitions' cgroups behind, with the processes a partition forked
/// still in them (the parent-death signal its own process had is not inherited across fork).
/// The next run ends them and removes the cgroups. Before, its sweep only tried `rmdir`, which
/// fails on a populated cgroup: process and directories stayed (review 26 #2).
#[test]
fn a_process_forked_before_the_executive_was_killed_is_ended_by_the_next_run() {
    const TEST: &str = "a_process_forked_before_the_executive_was_killed_is_ended_by_the_next_run";
    if !is_root() {
        eprintln!("SKIPPED {TEST}: needs root (partition cgroups)");
        return;
    }
    if let Err(e) = partix_runtime::executive::cgroup::PartitionCgroup::create(0) {
        eprintln!("SKIPPED {TEST}: no writable cgroup v2 hierarchy ({e})");
        return;
    }
    let _one = serial();
    let dir = Scratch::new("killed");
    let out = dir.0.join("p1.txt");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut exec = Kill(
        std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "executive_to_be_killed", "--nocapture"])
            .env(KILLED_OUT, &out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let exec_pid = exec.0.id();
    let child = child_pid(&out, Duration::from_secs(30)).expect("no child pid");
    // Into the run, then killed.
    std::thread::sleep(Duration::from_millis(300));
    exec.0.kill().unwrap();
    exec.0.wait().unwrap();
    let result = std::panic::catch_unwind(|| {
        assert!(alive(child), "the forked process died with the executive");
        let stale = cgroups_of(exec_pid);
        assert!(!stale.is_empty(), "the killed executive left no cgroup");
        // A new run, of another module.
        let m = module(
            vec![partition(1, "P1", Some(testpart()), &["sleep"])],
            vec![schedule(1, 40, &[(1, 1, 0.0, 20.0)])],
        );
        let r = run_frames(&m, 3, SwitchMechanism::Gate);
        assert_eq!(r.partitions[0].stats.windows, 3);
        assert!(
            ends_within(child, Duration::from_secs(1)),
            "the process forked under the killed executive outlived the next run"
        );
        let left = cgroups_of(exec_pid);
        assert!(
            left.is_empty(),
            "stale cgroups left: {left:?} (were {stale:?})"
        );
    });
    if alive(child) {
        // SAFETY: kill has no memory preconditions; the test's own leftover.
        unsafe { libc::kill(child, libc::SIGKILL) };
    }
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
