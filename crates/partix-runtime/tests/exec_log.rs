//! The executive's log output (HM events, mode changes) cannot hold up or end the schedule: a
//! crash-looping partition logs a few lines per frame, and the run goes on, frame by frame, with
//! stderr a pipe nobody reads (full after 4 KiB) or one whose reader is gone (review 26 #1:
//! the scheduling thread wrote them itself, blocking at FIFO 99 inside a scheduling point on
//! the full pipe, and panicking on the closed one).

mod exec_util;

use exec_util::*;
use partix_config::model::{ErrorCode, PartitionAction};
use partix_runtime::executive::SwitchMechanism;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Frames of the child's run (20 ms each).
const FRAMES: u64 = 150;

/// Set (to anything) in the child process: [`crash_looping_run`] runs the module.
const CHILD: &str = "PARTIX_TEST_LOG_CHILD";

/// The run of the child process (this test binary, run again with [`CHILD`] set; a no-op
/// otherwise): P1 exits at once at every start and is restarted (PARTITION_CRASH →
/// COLD_START: an HM line and a mode line per frame), P2 sleeps. Prints one line
/// "RESULT end=… frames=… p2_windows=… dropped=…".
#[test]
fn crash_looping_run() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let tp = Some(testpart());
    let mut p1 = partition(
        1,
        "LOOP",
        tp.clone(),
        &["crash", "--how", "exit", "--after-ms", "0"],
    );
    p1.hm = vec![hm(ErrorCode::PartitionCrash, PartitionAction::ColdStart)];
    let p2 = partition(2, "STEADY", tp, &["sleep"]);
    let m = module(
        vec![p1, p2],
        vec![schedule(1, 20, &[(1, 1, 0.0, 5.0), (2, 2, 10.0, 5.0)])],
    );
    let r = run_frames(&m, FRAMES, SwitchMechanism::Gate);
    println!(
        "RESULT end={:?} frames={} p2_windows={} p1_restarts={} dropped={}",
        r.end, r.frames, r.partitions[1].stats.windows, r.partitions[0].restarts, r.log_dropped
    );
}

/// Run [`crash_looping_run`] in a child process whose stderr is the write end of a pipe
/// (4 KiB) whose read end the test keeps unread (`keep_reader`) or has closed; return its
/// exit status and stdout, or `None` if it did not end within the run's time and a margin.
fn run_child(keep_reader: bool) -> Option<(std::process::ExitStatus, String)> {
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid array of two descriptors for pipe2.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both were just made and are owned by nothing else.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: F_SETPIPE_SZ takes an integer; the smallest size is a page.
    unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, 4096) };
    let reader = keep_reader.then_some(reader);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_looping_run", "--nocapture"])
        .env(CHILD, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(writer))
        .spawn()
        .unwrap();
    let limit = Duration::from_millis(FRAMES * 20) + Duration::from_secs(30);
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(reader);
    let mut out = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut out);
    status.map(|st| (st, out))
}

/// Assert the child's run ended normally with every frame and every window of P2.
fn assert_ran(what: &str, res: Option<(std::process::ExitStatus, String)>) {
    let Some((status, out)) = res else {
        panic!("{what}: the run did not end (the schedule was held up by its log output)");
    };
    assert!(status.success(), "{what}: {status}\n{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .unwrap_or_else(|| panic!("{what}: no result\n{out}"));
    eprintln!("{what}: {line}");
    assert!(line.contains("end=Frames"), "{what}: {line}");
    assert!(
        line.contains(&format!("frames={FRAMES} ")),
        "{what}: {line}"
    );
    assert!(
        line.contains(&format!("p2_windows={FRAMES} ")),
        "{what}: {line}"
    );
    // The partition really crash-looped (it logged).
    let restarts: u64 = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("p1_restarts="))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(restarts >= FRAMES / 2, "{what}: {line}");
}

#[test]
fn a_crash_loop_logging_to_a_stderr_nobody_reads_holds_up_no_window() {
    let _one = serial();
    assert_ran("unread stderr", run_child(true));
}

#[test]
fn a_crash_loop_logging_to_a_closed_stderr_ends_the_run_normally() {
    let _one = serial();
    assert_ran("closed stderr", run_child(false));
}

/// One child executive at a time (each runs SCHED_FIFO 99 on the same CPU).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}
