//! Running `partition-probe <scenario>` (src/bin/partition-probe.rs) as a child process in
//! standalone mode, for the test binaries of the partition's services.
#![allow(dead_code)] // not every test binary uses every helper

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Run {
    pub status: i32,
    pub lines: Vec<String>,
    pub stderr: String,
}

/// Scenarios that keep a CPU busy at a real-time priority for a while (`stop-beside-busy`
/// spins a process at SCHED_FIFO 31 for 200 ms on the CPU the probe started on): they run
/// alone, since a probe of a parallel test on that CPU would be starved meanwhile, and its
/// timing (a job's deadline of 100 ms) would fail for it (found by review).
const HOGS: &[&str] = &["stop-beside-busy"];

static HOG: std::sync::RwLock<()> = std::sync::RwLock::new(());

pub fn probe_with(scenario: &str, env: &[(&str, &str)]) -> Run {
    let (_alone, _beside);
    if HOGS.contains(&scenario) {
        _alone = HOG.write().unwrap_or_else(|e| e.into_inner());
    } else {
        _beside = HOG.read().unwrap_or_else(|e| e.into_inner());
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_partition-probe"));
    cmd.arg(scenario)
        .env_remove("PARTIX_MODULE_FD")
        .env_remove("PARTIX_PARTITION_FD")
        .env_remove("PARTIX_CONFIG")
        .env_remove("PARTIX_STANDALONE_RESTART")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn partition-probe");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill(); // this child only, by its pid
            let _ = child.wait();
            panic!("scenario {scenario} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut out = String::new();
    let mut err = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    Run {
        status: status.code().unwrap_or(-1),
        lines: out.lines().map(str::to_string).collect(),
        stderr: err,
    }
}

pub fn probe(scenario: &str) -> Run {
    probe_with(scenario, &[])
}

impl Run {
    pub fn ok(self, scenario: &str) -> Run {
        assert_eq!(
            self.status,
            0,
            "{scenario}: exit status {}\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.lines.join("\n"),
            self.stderr
        );
        self
    }

    pub fn assert_lines(&self, expected: &[&str]) {
        assert_eq!(self.lines, expected, "stderr:\n{}", self.stderr);
    }

    /// Return the value printed as `key=value`.
    pub fn value(&self, key: &str) -> &str {
        let prefix = format!("{key}=");
        self.lines
            .iter()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no line {key}=… in\n{}", self.lines.join("\n")))
    }
}
