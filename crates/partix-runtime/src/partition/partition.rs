//! Partition services: GET_PARTITION_STATUS, SET_PARTITION_MODE, and the module schedule
//! services of ARINC 653 Part 2 (SET_MODULE_SCHEDULE, GET_MODULE_SCHEDULE_STATUS,
//! GET_MODULE_SCHEDULE_ID).
//!
//! Status services are plain loads from the shared `PartitionState` / `ModuleState`.
//!
//! # Standalone mode
//! A partition program run by hand (no executive) is a module of one partition: entering NORMAL
//! proceeds at once (the partition is always inside its window, the release anchor is the time of
//! the transition); IDLE exits the process with status 0; COLD_START and WARM_START re-execute the
//! program (`/proc/self/exe` with the same arguments) with the new mode and start condition passed
//! in [`ENV_STANDALONE_RESTART`].

use super::error::{ApexError, ApexResult};
use super::hm;
use super::process::LockLevel;
use super::rt::{self, rt, FIFO_MONITOR, W_RELEASE};
use super::time::{SystemTime, INFINITE_TIME_VALUE};
use crate::state::{mode, start_condition, NO_REQUEST};
use partix_shm::futex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Environment variable through which a standalone restart passes
/// `"<operating mode>,<start condition>,<restarts>"` to the re-executed program.
pub const ENV_STANDALONE_RESTART: &str = "PARTIX_STANDALONE_RESTART";

/// `OPERATING_MODE_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperatingMode {
    /// `IDLE` (0).
    Idle,
    /// `COLD_START` (1).
    ColdStart,
    /// `WARM_START` (2).
    WarmStart,
    /// `NORMAL` (3).
    Normal,
}

impl OperatingMode {
    /// Return the mode for a `state::mode` value.
    pub fn from_raw(v: u32) -> Option<OperatingMode> {
        match v {
            mode::IDLE => Some(OperatingMode::Idle),
            mode::COLD_START => Some(OperatingMode::ColdStart),
            mode::WARM_START => Some(OperatingMode::WarmStart),
            mode::NORMAL => Some(OperatingMode::Normal),
            _ => None,
        }
    }

    /// Return the `state::mode` value.
    pub fn raw(self) -> u32 {
        match self {
            OperatingMode::Idle => mode::IDLE,
            OperatingMode::ColdStart => mode::COLD_START,
            OperatingMode::WarmStart => mode::WARM_START,
            OperatingMode::Normal => mode::NORMAL,
        }
    }
}

/// `START_CONDITION_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartCondition {
    /// `NORMAL_START` (0).
    NormalStart,
    /// `PARTITION_RESTART` (1).
    PartitionRestart,
    /// `HM_MODULE_RESTART` (2).
    HmModuleRestart,
    /// `HM_PARTITION_RESTART` (3).
    HmPartitionRestart,
}

impl StartCondition {
    fn from_raw(v: u32) -> StartCondition {
        match v {
            start_condition::PARTITION_RESTART => StartCondition::PartitionRestart,
            start_condition::HM_MODULE_RESTART => StartCondition::HmModuleRestart,
            start_condition::HM_PARTITION_RESTART => StartCondition::HmPartitionRestart,
            _ => StartCondition::NormalStart,
        }
    }
}

/// `PARTITION_STATUS_TYPE`.
#[derive(Debug, Clone)]
pub struct PartitionStatus {
    /// Partition period in the current module schedule (ns); `INFINITE_TIME_VALUE` standalone.
    pub period: SystemTime,
    /// Partition duration per period (ns); `INFINITE_TIME_VALUE` standalone.
    pub duration: SystemTime,
    /// `PartitionIdentifier`.
    pub identifier: i32,
    /// Preemption lock level.
    pub lock_level: LockLevel,
    /// Operating mode.
    pub operating_mode: OperatingMode,
    /// Start condition of the current start.
    pub start_condition: StartCondition,
    /// Cores assigned to the partition (the executive pins it to one).
    pub num_assigned_cores: i32,
}

/// Return the partition's status (`GET_PARTITION_STATUS`): plain loads from shared memory.
pub fn get_partition_status() -> PartitionStatus {
    let p = rt().ctx.partition();
    let t = |v: u64| {
        if v == 0 {
            INFINITE_TIME_VALUE
        } else {
            v as SystemTime
        }
    };
    PartitionStatus {
        period: t(p.period_ns.load(Ordering::Relaxed)),
        duration: t(p.duration_ns.load(Ordering::Relaxed)),
        identifier: p.partition_id as i32,
        lock_level: p.lock_level.load(Ordering::Relaxed) as LockLevel,
        operating_mode: OperatingMode::from_raw(p.operating_mode.load(Ordering::Acquire))
            .unwrap_or(OperatingMode::Idle),
        start_condition: StartCondition::from_raw(p.start_condition.load(Ordering::Relaxed)),
        num_assigned_cores: 1,
    }
}

/// Change the partition's operating mode (`SET_PARTITION_MODE`).
///
/// - NORMAL (from COLD_START or WARM_START): the calling thread becomes the partition's deadline
///   monitor and HM thread (SCHED_FIFO 98) and **never returns**; the processes started during
///   initialisation are released from the partition's next periodic processing start: its next
///   window that starts a period of it, opened after the transition (standalone: at once).
/// - IDLE, COLD_START, WARM_START: every other process stops at once, and the partition is shut
///   down or restarted by the executive (standalone: exit or re-execution); the call never
///   returns.
///
/// So it returns only with an error.
///
/// # Errors
/// - `NoAction`: NORMAL asked for in NORMAL mode.
/// - `InvalidMode`: WARM_START asked for in COLD_START mode.
pub fn set_partition_mode(mode_req: OperatingMode) -> ApexResult<()> {
    let r = rt();
    let cur = r.mode();
    match mode_req {
        OperatingMode::Normal if cur == mode::NORMAL => Err(ApexError::NoAction),
        OperatingMode::WarmStart if cur == mode::COLD_START => Err(ApexError::InvalidMode),
        OperatingMode::Normal => enter_normal(),
        other => change_mode(other, start_condition::PARTITION_RESTART),
    }
}

/// Enter NORMAL mode and run the deadline monitor in the calling thread (never returns).
fn enter_normal() -> ! {
    let r = rt();
    r.set_fifo(0, FIFO_MONITOR);
    r.ctx.set_normal();
    let anchor = if r.ctx.is_standalone() {
        r.now()
    } else {
        next_period_start()
    };
    r.with_inner(|inner| {
        r.anchor_ns.store(anchor, Ordering::Release);
        for idx in 0..inner.procs.len() {
            let p = &mut inner.procs[idx];
            if !p.dormant && p.release_ns.is_none() {
                let release = anchor.saturating_add(p.start_delay);
                p.release_ns = Some(release);
                if p.reasons & W_RELEASE != 0 {
                    p.wait_for(W_RELEASE, Some(release));
                }
                // A deadline past SYSTEM_TIME's range (a delay and a capacity near it, checked
                // only against "now" at the START) is none: as a SYSTEM_TIME it would read
                // negative in GET_PROCESS_STATUS.
                p.deadline_ns = if p.attrs.time_capacity == INFINITE_TIME_VALUE {
                    u64::MAX
                } else {
                    release
                        .checked_add(p.attrs.time_capacity as u64)
                        .filter(|&d| d <= i64::MAX as u64)
                        .unwrap_or(u64::MAX)
                };
                r.publish(idx, p);
            }
        }
        r.gate.store(1, Ordering::Release);
    });
    futex::wake_all(&r.gate);
    hm::monitor_loop()
}

/// Wait for the partition's next periodic processing start after the transition to NORMAL and
/// return its planned start (module ns): the start of the next window of the partition that
/// opens after the transition and starts a period of it (`window_period_start`: marked
/// `PartitionPeriodStart`, or any window when the schedule marks none).
///
/// A partition that enters NORMAL inside one of its windows (respawned there after a restart,
/// or still initialising in its windows after an INIT_TIMEOUT that was ignored) does not take
/// that window's start, which lies before the transition: releases there would be in the past
/// and deadlines perhaps passed already (found by review: a spurious DEADLINE_MISSED after
/// every restart). It waits for the next window instead: the close parks this thread, and it
/// resumes when a window opens again.
fn next_period_start() -> u64 {
    let r = rt();
    let p = r.ctx.partition();
    // The window open at the transition, if any (the sequence read first: a window that opens
    // between the two loads has another number and counts as the next one).
    let seq0 = p.window_seq.load(Ordering::Acquire);
    let mut current = (p.window_active.load(Ordering::Acquire) != 0).then_some(seq0);
    loop {
        let active = p.window_active.load(Ordering::Acquire);
        let seq = p.window_seq.load(Ordering::Acquire);
        if active == 0 {
            current = None;
            // Woken by the executive at the first window of the process; a later open finds
            // this thread parked by the close before it (or stopped), which ends the wait.
            futex::wait(&p.window_active, 0, None);
            continue;
        }
        if current != Some(seq) {
            if p.window_period_start.load(Ordering::Acquire) != 0 {
                // SYNC POINT: window_active's Acquire load pairs with the executive's Release
                // store after window_start_ns.
                return p.window_start_ns.load(Ordering::Acquire);
            }
            // Not a period start: wait through this window too.
            current = Some(seq);
        }
        // Inside a window that does not count: wait for its end (the close parks this thread;
        // it runs again when the next window opens), then for the close itself.
        let end = p.window_end_ns.load(Ordering::Acquire);
        if r.now() < end {
            rt::sleep_until(r.ctx, end);
        } else {
            futex::wait(
                &p.window_active,
                1,
                Some(std::time::Duration::from_micros(500)),
            );
        }
    }
}

/// Carry out IDLE / COLD_START / WARM_START with `cond` as the next start condition (and the
/// request's origin: see [`crate::state::PartitionState::requested_condition`]).
///
/// Under the executive, process scheduling stops at once: every other process and the error
/// handler are stopped (`Runtime::stop_all_processes`) before the request is made, so
/// none of them runs (or writes a port) for the rest of the window; the executive carries the
/// request out at its next scheduling point (the window's close at the latest). Only the first
/// mode change counts: a thread that asks for another one meanwhile (the deadline monitor,
/// the error handler) ends or parks without a request.
pub(crate) fn change_mode(m: OperatingMode, cond: u32) -> ! {
    static CHANGING: AtomicBool = AtomicBool::new(false);
    let r = rt();
    if CHANGING.swap(true, Ordering::AcqRel) {
        // A mode change is under way: this thread is stopped with the rest.
        rt::end_incarnation()
    }
    if r.ctx.is_standalone() {
        match m {
            OperatingMode::Idle | OperatingMode::Normal => {
                r.ctx
                    .partition()
                    .operating_mode
                    .store(mode::IDLE, Ordering::Release);
                std::process::exit(0)
            }
            OperatingMode::ColdStart | OperatingMode::WarmStart => standalone_reexec(m, cond),
        }
    }
    r.stop_all_processes();
    r.ctx.request_mode_for(m.raw(), cond);
    // The executive kills and (for restarts) respawns the partition; nothing runs meanwhile.
    rt::park_forever()
}

fn standalone_reexec(m: OperatingMode, cond: u32) -> ! {
    use std::os::unix::process::CommandExt;
    let restarts = rt().ctx.partition().restarts.load(Ordering::Relaxed) + 1;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let mut cmd = std::process::Command::new("/proc/self/exe");
    cmd.arg0(std::env::args_os().next().unwrap_or_default())
        .args(args)
        .env(
            ENV_STANDALONE_RESTART,
            format!("{},{},{}", m.raw(), cond, restarts),
        );
    // Ports handed to a standalone program by hand (`partix bench rtt`): the runtime took their
    // variable and made their descriptors close-on-exec; the program it becomes gets them back.
    if let Some(v) = crate::channels::hand_on_ports_for_exec() {
        cmd.env(crate::channels::ENV_PORT_FDS, v);
    }
    // Its configuration likewise (`PARTIX_CONFIG`, and a descriptor if it was given one).
    for (k, v) in crate::partition::hm::hand_on_config_for_exec() {
        cmd.env(k, v);
    }
    let err = cmd.exec();
    eprintln!("partix partition: cannot restart the partition program: {err}");
    std::process::exit(71)
}

/// `SCHEDULE_ID_TYPE` (ARINC 653 Part 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleId(pub i32);

/// `SCHEDULE_STATUS_TYPE` (ARINC 653 Part 2).
#[derive(Debug, Clone)]
pub struct ModuleScheduleStatus {
    /// Module time of the last schedule switch (0 = none yet).
    pub time_of_last_schedule_switch: SystemTime,
    /// The running schedule.
    pub current_schedule: ScheduleId,
    /// The schedule at the next major-frame boundary (= current if no switch is pending).
    pub next_schedule: ScheduleId,
}

/// Ask for module schedule `id` from the next major frame on (`SET_MODULE_SCHEDULE`).
///
/// # Errors
/// - `InvalidMode`: the partition is not a system partition (standalone partitions never are
///   unless `PARTIX_CONFIG` says so).
/// - `InvalidParam`: the configuration has no schedule `id`.
pub fn set_module_schedule(id: ScheduleId) -> ApexResult<()> {
    let r = rt();
    let Some(module) = hm::config() else {
        return Err(ApexError::InvalidMode);
    };
    let pid = r.ctx.partition().partition_id;
    let system = module
        .partitions
        .iter()
        .any(|p| p.id.0 == pid && p.system_partition);
    if !system {
        return Err(ApexError::InvalidMode);
    }
    let Ok(raw) = u32::try_from(id.0) else {
        return Err(ApexError::InvalidParam);
    };
    if module
        .schedule(partix_config::model::ScheduleId(raw))
        .is_none()
    {
        return Err(ApexError::InvalidParam);
    }
    r.ctx.request_schedule(raw);
    Ok(())
}

/// Return the module schedule status (`GET_MODULE_SCHEDULE_STATUS`): plain loads.
///
/// The next schedule is this partition's own SET_MODULE_SCHEDULE request while the executive
/// has not taken it yet (it takes requests when the partition's window closes and near a
/// frame boundary), so a SET is seen at once. The executive stores the module's next schedule
/// before it clears the request: once the request is gone, the module's value includes it.
pub fn get_module_schedule_status() -> ModuleScheduleStatus {
    let ctx = &rt().ctx;
    let m = ctx.module();
    let own = ctx.partition().requested_schedule.load(Ordering::Acquire);
    let next = if own != NO_REQUEST {
        own
    } else {
        m.next_schedule()
    };
    ModuleScheduleStatus {
        time_of_last_schedule_switch: m.last_schedule_switch_ns() as SystemTime,
        current_schedule: ScheduleId(m.current_schedule() as i32),
        next_schedule: ScheduleId(next as i32),
    }
}

/// Return the id of the module schedule named `name` (`GET_MODULE_SCHEDULE_ID`).
///
/// # Errors
/// - `InvalidConfig`: no schedule has this name (standalone without `PARTIX_CONFIG`: none has).
pub fn get_module_schedule_id(name: &str) -> ApexResult<ScheduleId> {
    hm::config()
        .and_then(|m| m.schedules.iter().find(|s| s.name.as_deref() == Some(name)))
        .map(|s| ScheduleId(s.id.0 as i32))
        .ok_or(ApexError::InvalidConfig)
}
