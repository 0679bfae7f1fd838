//! Module builders shared by the executive's tests.
#![allow(dead_code)]

use partix_config::model::*;
use partix_runtime::executive::os::{resolve_program, run_module, RunConfig, RunReport};
use partix_runtime::executive::{Options, SwitchMechanism};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A partition with no ports; `exe` and `args` as given.
pub fn partition(id: u32, name: &str, exe: Option<PathBuf>, args: &[&str]) -> Partition {
    Partition::program(id, name, exe, args.iter().map(|s| s.to_string()).collect())
}

/// A schedule with windows `(window id, partition id, offset ms, duration ms)`.
pub fn schedule(id: u32, major_ms: u64, windows: &[(u32, u32, f64, f64)]) -> ModuleSchedule {
    let ms = |v: f64| Duration::from_nanos((v * 1e6).round() as u64);
    let mut parts: Vec<PartitionSchedule> = Vec::new();
    for &(_, p, _, d) in windows {
        match parts.iter_mut().find(|s| s.partition == PartitionId(p)) {
            Some(s) => s.duration += ms(d),
            None => parts.push(PartitionSchedule {
                partition: PartitionId(p),
                period: Duration::from_millis(major_ms),
                duration: ms(d),
            }),
        }
    }
    let mut ws: Vec<Window> = windows
        .iter()
        .map(|&(id, p, o, d)| Window {
            id,
            partition: PartitionId(p),
            offset: ms(o),
            duration: ms(d),
            period_start: true,
        })
        .collect();
    ws.sort_by_key(|w| w.offset);
    ModuleSchedule {
        id: ScheduleId(id),
        name: Some(format!("S{id}")),
        major_frame: Duration::from_millis(major_ms),
        partitions: parts,
        windows: ws,
        location: Location::default(),
    }
}

/// A module of these partitions and schedules (the first schedule is the initial one).
pub fn module(partitions: Vec<Partition>, schedules: Vec<ModuleSchedule>) -> Module {
    Module {
        name: "test".into(),
        version: None,
        source: None,
        partitions,
        schedules,
        initial_schedule: 0,
        channels: Vec::new(),
        system_hm: Vec::new(),
        module_hm: Vec::new(),
    }
}

/// A partition HM table entry: `code` → `action`.
pub fn hm(code: ErrorCode, action: PartitionAction) -> PartitionHmEntry {
    PartitionHmEntry {
        system_state: 1,
        error_id: 0,
        code,
        action,
    }
}

/// Make error `code` module level in `m`, handled by the module HM table with `action` (one
/// system HM entry and one module HM entry, error id 7).
pub fn module_level(m: &mut Module, code: ErrorCode, action: ModuleAction) {
    m.system_hm = vec![SystemHmEntry {
        system_state: 1,
        error_id: 7,
        code,
        level: ErrorLevel::Module,
    }];
    m.module_hm = vec![ModuleHmEntry {
        system_state: 1,
        error_id: 7,
        action,
    }];
}

/// The test partition program built with this crate.
pub fn testpart() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_partix-testpart"))
}

/// Return whether the test runs as root (SCHED_FIFO, rlimits, RT throttling).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Run module `m` (every partition's program resolved from it) for `frames` major frames on
/// the default CPU with switch mechanism `switch`.
pub fn run_frames(m: &Module, frames: u64, switch: SwitchMechanism) -> RunReport {
    run_with(
        m,
        Options {
            max_frames: Some(frames),
            switch,
            ..Options::default()
        },
        &AtomicBool::new(false),
    )
    .unwrap()
}

/// Run module `m` (every partition's program resolved from it) on the default CPU with
/// `options` until `stop` or the options end it.
///
/// # Errors
/// As [`run_module`].
#[allow(dead_code)] // not used by every test binary
pub fn run_with(
    m: &Module,
    options: Options,
    stop: &AtomicBool,
) -> Result<RunReport, partix_runtime::executive::os::RunError> {
    // One executive at a time: each runs SCHED_FIFO 99 on the same CPU with its partitions, so
    // two tests of one binary running at once would take each other's windows (and interleave
    // their saves and restores of the process's RLIMIT_RTTIME). Every run of this module's
    // helpers comes here (`run_frames` too: a test that called `run_with` directly ran beside
    // them; found by review).
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let programs = (0..m.partitions.len())
        .map(|p| resolve_program(m, p).unwrap())
        .collect();
    let cfg = RunConfig {
        programs,
        cpu: None,
        options,
        rt_unthrottle: false,
    };
    run_module(m, cfg, stop)
}
