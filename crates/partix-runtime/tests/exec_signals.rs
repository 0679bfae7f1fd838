//! Job control: `Ctrl-Z` (SIGTSTP) ends the run cleanly, as Ctrl-C does. Its default action
//! stopped the executive alone (the partitions are in process groups of their own): the window
//! open at that moment never closed, the partition ran on without limit, and at `fg` every
//! missed scheduling point ran back to back (review 26 #3).

mod exec_util;

use exec_util::*;
use partix_runtime::executive::os::stop_on_signals;
use partix_runtime::executive::{Options, SwitchMechanism};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the child process to the file it creates once its signal handlers are installed.
const CHILD_READY: &str = "PARTIX_TEST_SIGNALS_READY";

/// The child's run (this test binary, run again with [`CHILD_READY`] set; a no-op otherwise):
/// the handlers of `partix run`, then a run of two partitions until a signal stops it.
#[test]
fn run_until_a_signal() {
    let Some(ready) = std::env::var_os(CHILD_READY) else {
        return;
    };
    let stop = stop_on_signals();
    let m = module(
        vec![
            partition(1, "P1", Some(testpart()), &["sleep"]),
            partition(2, "P2", Some(testpart()), &["sleep"]),
        ],
        vec![schedule(1, 20, &[(1, 1, 0.0, 8.0), (2, 2, 10.0, 8.0)])],
    );
    std::fs::write(ready, "").unwrap();
    let r = run_with(
        &m,
        Options {
            max_frames: Some(3000),
            switch: SwitchMechanism::Gate,
            ..Options::default()
        },
        stop,
    )
    .unwrap();
    println!("RESULT end={:?} frames={}", r.end, r.frames);
}

/// The state letter of process `pid` (`/proc/PID/stat`), if it exists.
fn state(pid: u32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit_once(") ")?.1.chars().next()
}

#[test]
fn ctrl_z_ends_the_run_instead_of_stopping_the_executive_alone() {
    let ready = std::env::temp_dir().join(format!("exec-signals-ready-{}", std::process::id()));
    let _ = std::fs::remove_file(&ready);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "run_until_a_signal", "--nocapture"])
        .env(CHILD_READY, &ready)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let t0 = Instant::now();
    while !ready.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the child never got ready"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = std::fs::remove_file(&ready);
    // Into the run (the startup takes some ms), then Ctrl-Z.
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill has no memory preconditions; pid is our child.
    unsafe { libc::kill(pid as i32, libc::SIGTSTP) };
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if t0.elapsed() > Duration::from_secs(10) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let Some(status) = status else {
        let st = state(pid);
        let _ = child.kill();
        let _ = child.wait();
        panic!("SIGTSTP did not end the run (the executive's state: {st:?})");
    };
    let mut out = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut out);
    assert!(status.success(), "{status}\n{out}");
    assert!(out.contains("RESULT end=Stopped"), "{out}");
}
