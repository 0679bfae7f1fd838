//! Health monitor services: RAISE_APPLICATION_ERROR, CREATE_ERROR_HANDLER, GET_ERROR_STATUS,
//! REPORT_APPLICATION_MESSAGE; and the partition's deadline monitor.
//!
//! # How an error is handled
//! 1. Its level comes from the configuration's `System_HM_Table` (first entry with the error's
//!    code); a code it does not list, or any code without a configuration, is process-level.
//! 2. Process level, with an error handler created and the error not raised by the handler
//!    itself: the error is queued and the error handler process runs (SCHED_FIFO 97, above every
//!    process); it reads the errors with [`get_error_status`] and may STOP/START processes.
//! 3. Otherwise the partition's `Partition_HM_Table` action for the code applies: IGNORE (logged),
//!    STOP_PROCESS, RESTART_PROCESS, IDLE, WARM_START, COLD_START (through the executive, with
//!    the start condition `HM_PARTITION_RESTART` in `requested_condition`, or standalone by exit
//!    / re-execution).
//! 4. Module level: the `Module_HM_Table` action: IGNORE (logged), SHUTDOWN (the partition asks
//!    for IDLE with `HM_MODULE_RESTART`: the executive shuts the module down), RESET (the
//!    partition asks for COLD_START with `HM_MODULE_RESTART`: the executive restarts every
//!    partition with it). The executive carries out a module action only if its configuration's
//!    module HM table has it; standalone, SHUTDOWN exits and RESET re-executes the program.
//!
//! The configuration is read from the file named by `PARTIX_CONFIG` (set by the executive); the
//! table is chosen by the partition's identifier. Without it the built-in defaults apply: every
//! error is process-level, and the partition action is IGNORE (counted and logged on stderr).
//! System states are not modelled: the first entry for a code applies.
//!
//! Every error counts in `PartitionState::hm_errors`; deadline misses also in
//! `PartitionState::deadline_misses` and the process slot's `deadline_misses`.

use super::error::{ApexError, ApexResult};
use super::partition::{change_mode, OperatingMode};
use super::process::{EntryPoint, ProcessId};
use super::rt::{self, rt, Proc, EH_INDEX, FIFO_ERROR_HANDLER};
use crate::state::{mode, start_condition, MAX_PROCESSES};
use partix_config::model::{
    ErrorCode as CfgCode, ErrorLevel, Module, ModuleAction, PartitionAction,
};
use partix_shm::futex;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Duration;

/// Environment variable naming the module configuration file (set by the executive).
pub const ENV_CONFIG: &str = "PARTIX_CONFIG";

/// Environment variable: the descriptor of the module configuration the executive passed
/// (read-only; `PARTIX_CONFIG` still names the file, for messages). Read first: a partition
/// under its own user (`partix:User`) may not be able to open the path.
pub const ENV_CONFIG_FD: &str = "PARTIX_CONFIG_FD";
/// `MAX_ERROR_MESSAGE_SIZE`.
pub const MAX_ERROR_MESSAGE_SIZE: usize = 128;
/// Errors kept for the error handler; older ones are dropped when more arrive.
pub const MAX_PENDING_ERRORS: usize = 64;

/// `ERROR_CODE_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// `DEADLINE_MISSED` (0).
    DeadlineMissed,
    /// `APPLICATION_ERROR` (1).
    ApplicationError,
    /// `NUMERIC_ERROR` (2).
    NumericError,
    /// `ILLEGAL_REQUEST` (3).
    IllegalRequest,
    /// `STACK_OVERFLOW` (4).
    StackOverflow,
    /// `MEMORY_VIOLATION` (5).
    MemoryViolation,
    /// `HARDWARE_FAULT` (6).
    HardwareFault,
    /// `POWER_FAIL` (7).
    PowerFail,
}

impl ErrorCode {
    fn config_code(self) -> CfgCode {
        match self {
            ErrorCode::DeadlineMissed => CfgCode::DeadlineMissed,
            ErrorCode::ApplicationError => CfgCode::ApplicationError,
            ErrorCode::NumericError => CfgCode::NumericError,
            ErrorCode::IllegalRequest => CfgCode::IllegalRequest,
            ErrorCode::StackOverflow => CfgCode::StackOverflow,
            ErrorCode::MemoryViolation => CfgCode::MemoryViolation,
            ErrorCode::HardwareFault => CfgCode::HardwareFault,
            ErrorCode::PowerFail => CfgCode::PowerFail,
        }
    }
}

/// `ERROR_STATUS_TYPE`.
#[derive(Debug, Clone)]
pub struct ErrorStatus {
    /// The error.
    pub error_code: ErrorCode,
    /// The message given with it (at most [`MAX_ERROR_MESSAGE_SIZE`] bytes).
    pub message: Vec<u8>,
    /// The process that failed (`ProcessId(0)` when none: initialisation code).
    pub failed_process_id: ProcessId,
    /// Address of the fault (0: not known).
    pub failed_address: usize,
}

/// Return the module configuration the partition's HM tables come from: read through the
/// descriptor of `PARTIX_CONFIG_FD`, else from the file `PARTIX_CONFIG` names (read once; `None`:
/// neither, and the built-in HM defaults apply).
pub fn configuration() -> Option<&'static Module> {
    config()
}

/// The configuration this process was started with: the path of `PARTIX_CONFIG` and the
/// descriptor of `PARTIX_CONFIG_FD`.
struct Inherited {
    path: Option<std::ffi::OsString>,
    fd: Option<i32>,
}

/// Take `PARTIX_CONFIG` and `PARTIX_CONFIG_FD` out of the environment and make the descriptor
/// close-on-exec (the executive's `dup2` onto it leaves it without, for the partition's
/// program), once; later calls return the same. A program the partition runs in turn gets
/// neither the module configuration's descriptor nor its variables (they reached it: review
/// 26). The descriptor stays open in the partition, for [`configuration`]. The partition
/// runtime calls this when it attaches to its regions, before it starts any thread.
fn inherited() -> &'static Inherited {
    static TAKEN: OnceLock<Inherited> = OnceLock::new();
    TAKEN.get_or_init(|| {
        let path = std::env::var_os(ENV_CONFIG);
        let fd = std::env::var(ENV_CONFIG_FD)
            .ok()
            .and_then(|v| v.parse::<i32>().ok())
            .filter(|&fd| fd >= 0);
        std::env::remove_var(ENV_CONFIG);
        std::env::remove_var(ENV_CONFIG_FD);
        if let Some(fd) = fd {
            // SAFETY: FIOCLEX changes the descriptor's flags only; no memory is passed.
            unsafe { libc::ioctl(fd, libc::FIOCLEX) };
        }
        Inherited { path, fd }
    })
}

/// Return the path of the module configuration this process was started with
/// (`PARTIX_CONFIG`, which the runtime takes out of the environment when it attaches).
pub fn configuration_path() -> Option<&'static std::path::Path> {
    inherited().path.as_deref().map(std::path::Path::new)
}

/// See [`inherited`]: called by the runtime when it attaches.
pub(crate) fn take_config_env() {
    let _ = inherited();
}

/// Hand the inherited configuration on to the program this process is about to execute in its
/// place (a standalone partition's restart): clear close-on-exec on its descriptor and return
/// the variables to put back into the new program's environment.
pub(crate) fn hand_on_config_for_exec() -> Vec<(&'static str, std::ffi::OsString)> {
    let inh = inherited();
    let mut vars = Vec::new();
    if let Some(path) = &inh.path {
        vars.push((ENV_CONFIG, path.clone()));
    }
    if let Some(fd) = inh.fd {
        // SAFETY: FIONCLEX changes the descriptor's flags only; no memory is passed.
        unsafe { libc::ioctl(fd, libc::FIONCLEX) };
        vars.push((ENV_CONFIG_FD, fd.to_string().into()));
    }
    vars
}

/// The text of the configuration through the descriptor of `PARTIX_CONFIG_FD` (from its
/// start, whatever its offset; the descriptor stays open).
fn config_through_fd() -> Option<String> {
    use std::os::fd::FromRawFd;
    use std::os::unix::fs::FileExt;
    let fd = inherited().fd?;
    // SAFETY: F_DUPFD_CLOEXEC of a descriptor number has no memory preconditions; the copy is
    // owned by the File below (the inherited descriptor itself stays open).
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return None;
    }
    // SAFETY: dup was just made and is owned by nothing else.
    let f = unsafe { std::fs::File::from_raw_fd(dup) };
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match f.read_at(&mut chunk, bytes.len() as u64) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    String::from_utf8(bytes).ok()
}

/// See [`configuration`].
pub(crate) fn config() -> Option<&'static Module> {
    static CONFIG: OnceLock<Option<Module>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let path = std::path::Path::new(inherited().path.as_ref()?);
            let loaded = match config_through_fd() {
                Some(text) => partix_config::parse_str(&text, Some(path)),
                None => partix_config::load(path),
            };
            match loaded {
                Ok(m) => Some(m),
                Err(e) => {
                    eprintln!(
                        "partix partition: {ENV_CONFIG}: {e}; using the built-in HM defaults"
                    );
                    None
                }
            }
        })
        .as_ref()
}

/// What to do with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    ErrorHandler,
    Partition(PartitionAction),
    Module(ModuleAction),
}

/// Look up the handling of `code` (the HM tables, or the built-in defaults).
fn decide(code: ErrorCode, process_level_possible: bool, eh_available: bool) -> Decision {
    decide_in(
        config(),
        rt().ctx.partition().partition_id,
        code,
        process_level_possible,
        eh_available,
    )
}

/// [`decide`] for partition `pid` of `module` (`None`: no configuration, the built-in
/// defaults). A code the `System_HM_Table` does not list (or every code, without a
/// configuration) is PROCESS level: ARINC 653 hands the errors of a process to the partition's
/// error handler first, and these codes are raised in a process. The executive's default for
/// the errors it detects itself is PARTITION (`executive::hm::decide`).
fn decide_in(
    module: Option<&Module>,
    pid: u32,
    code: ErrorCode,
    process_level_possible: bool,
    eh_available: bool,
) -> Decision {
    let cfg_code = code.config_code();
    let level = module
        .and_then(|m| m.system_hm.iter().find(|e| e.code == cfg_code))
        .map(|e| e.level)
        .unwrap_or(ErrorLevel::Process);
    match level {
        ErrorLevel::Module => {
            let action = module
                .and_then(|m| {
                    m.module_hm
                        .iter()
                        .find(|e| code_of_module_entry(m, e.error_id) == Some(cfg_code))
                })
                .map(|e| e.action)
                .unwrap_or(ModuleAction::Ignore);
            Decision::Module(action)
        }
        ErrorLevel::Process if process_level_possible && eh_available => Decision::ErrorHandler,
        _ => {
            let action = module
                .and_then(|m| m.partitions.iter().find(|p| p.id.0 == pid))
                .and_then(|p| p.hm.iter().find(|e| e.code == cfg_code))
                .map(|e| e.action)
                .unwrap_or(PartitionAction::Ignore);
            Decision::Partition(action)
        }
    }
}

fn code_of_module_entry(m: &Module, error_id: u32) -> Option<CfgCode> {
    m.system_hm
        .iter()
        .find(|e| e.error_id == error_id)
        .map(|e| e.code)
}

/// Write one HM log line on stderr: `write(2)` on descriptor 2, no lock a suspended or stopped
/// process could hold. (It was `std::io::stderr().write_all`, under std's stderr lock: a process
/// suspended or stopped inside REPORT_APPLICATION_MESSAGE kept that lock, and every later log
/// line blocked, the deadline monitor's too; found by review.)
fn log(line: &str) {
    let mut rest = line.as_bytes();
    // A short write (a pipe near full) goes on with the rest; a few tries at most.
    for _ in 0..8 {
        if rest.is_empty() {
            return;
        }
        // SAFETY: `rest` is a valid byte slice; descriptor 2 may be closed (EBADF, ignored).
        let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        match n {
            n if n > 0 => rest = &rest[n as usize..],
            -1 if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return,
        }
    }
}

/// Raise `code` for process `failed` (index; `None` = initialisation code), from the error handler
/// if `from_eh`. Returns normally unless the action stops or restarts the caller.
pub(crate) fn raise(code: ErrorCode, msg: &[u8], failed: Option<usize>, from_eh: bool) {
    let r = rt();
    let p = r.ctx.partition();
    p.hm_errors.fetch_add(1, Ordering::AcqRel);
    let eh_available = r.with_inner(|inner| inner.eh.is_some());
    let decision = decide(
        code,
        failed.is_some() && !from_eh && r.mode() == mode::NORMAL,
        eh_available,
    );
    let name = failed
        .and_then(|i| r.attrs.get(i))
        .and_then(|a| a.get())
        .map_or("-", |a| a.name.as_str());
    let text = String::from_utf8_lossy(msg);
    match decision {
        Decision::ErrorHandler => {
            let status = ErrorStatus {
                error_code: code,
                message: msg.to_vec(),
                failed_process_id: ProcessId(failed.map_or(0, |i| i as i32 + 1)),
                failed_address: 0,
            };
            // Before the unlock (the error handler preempts the caller there, then waits for the
            // lock, handed over at once: `Runtime::with_inner_then`), so before a STOP or SUSPEND
            // of the caller takes effect.
            r.with_inner_then(
                |inner| {
                    if inner.errors.len() >= MAX_PENDING_ERRORS {
                        inner.errors.pop_front();
                        inner.errors_dropped += 1;
                    }
                    inner.errors.push_back(status);
                    if let Some(eh) = inner.eh.as_mut() {
                        // A handler whose last STOP_SELF could not make its next thread gets
                        // one now; failing again, the error waits in the queue for the next.
                        let ready = r.ctl[EH_INDEX].thread.load(Ordering::Relaxed) != 0
                            || r.spawn_incarnation(
                                EH_INDEX,
                                eh.attrs.stack_size as usize,
                                rt::FIFO_ERROR_HANDLER,
                            )
                            .is_ok();
                        if eh.dormant && ready {
                            eh.dormant = false;
                            r.ctl[EH_INDEX].gen.fetch_add(1, Ordering::AcqRel);
                        }
                    }
                },
                |()| {
                    futex::wake_all(&r.ctl[EH_INDEX].gen);
                },
            );
        }
        Decision::Partition(action) => {
            log(&format!(
                "partix-hm: partition {}: {code:?} in process {name}: {text}: {action:?}\n",
                p.partition_id
            ));
            partition_action(action, failed);
        }
        Decision::Module(action) => {
            log(&format!(
                "partix-hm: partition {}: {code:?} in process {name}: {text}: module {action:?}\n",
                p.partition_id
            ));
            match action {
                ModuleAction::Ignore => {}
                ModuleAction::Shutdown => {
                    change_mode(OperatingMode::Idle, start_condition::HM_MODULE_RESTART)
                }
                ModuleAction::Reset => {
                    change_mode(OperatingMode::ColdStart, start_condition::HM_MODULE_RESTART)
                }
            }
        }
    }
}

fn partition_action(action: PartitionAction, failed: Option<usize>) {
    let me = rt::self_index();
    match action {
        PartitionAction::Ignore => {}
        PartitionAction::StopProcess | PartitionAction::RestartProcess => {
            let Some(idx) = failed.filter(|&i| i < MAX_PROCESSES) else {
                return;
            };
            let pid = ProcessId(idx as i32 + 1);
            if me == Some(idx) {
                if action == PartitionAction::RestartProcess {
                    restart_self(idx);
                }
                super::process::stop_self();
            }
            let _ = super::process::stop(pid);
            if action == PartitionAction::RestartProcess {
                let _ = super::process::start(pid);
            }
        }
        PartitionAction::Idle => {
            change_mode(OperatingMode::Idle, start_condition::HM_PARTITION_RESTART)
        }
        PartitionAction::WarmStart => change_mode(
            OperatingMode::WarmStart,
            start_condition::HM_PARTITION_RESTART,
        ),
        PartitionAction::ColdStart => change_mode(
            OperatingMode::ColdStart,
            start_condition::HM_PARTITION_RESTART,
        ),
    }
}

/// Stop the calling process and start its next incarnation at once (RESTART_PROCESS on itself).
fn restart_self(idx: usize) -> ! {
    let r = rt();
    r.with_inner(|inner| {
        r.make_dormant(inner, idx);
        // The clock is read once the new incarnation exists (its thread's creation waits for
        // it to start): the restart's release and deadline count from now, not from before.
        if r.replace_incarnation(inner, idx).is_ok()
            && super::process::start_locked(inner, idx, 0, r.now()).is_ok()
        {
            // Inside the lock: leaving it ends this (stopped) incarnation.
            futex::wake_all(&r.ctl[idx].gen);
            r.kick_monitor(r.slot(idx).deadline_ns.load(Ordering::SeqCst));
        }
    });
    rt::end_incarnation()
}

/// Count a deadline miss of process `idx` (its deadline `deadline`) once and raise
/// DEADLINE_MISSED.
pub(crate) fn report_deadline_miss(idx: usize, deadline: u64) {
    if claim_deadline(idx, deadline) {
        raise_deadline_miss(idx);
    }
}

/// Mark deadline `deadline` of process `idx` as dealt with; return whether this call did (false:
/// it was already).
pub(crate) fn claim_deadline(idx: usize, deadline: u64) -> bool {
    let c = &rt().ctl[idx];
    let prev = c.reported_deadline.load(Ordering::Acquire);
    prev != deadline
        && c.reported_deadline
            .compare_exchange(prev, deadline, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
}

/// Count a deadline miss of process `idx` and raise DEADLINE_MISSED (its deadline claimed by
/// the caller, [`claim_deadline`]).
pub(crate) fn raise_deadline_miss(idx: usize) {
    let r = rt();
    r.slot(idx).deadline_misses.fetch_add(1, Ordering::AcqRel);
    r.ctx
        .partition()
        .deadline_misses
        .fetch_add(1, Ordering::AcqRel);
    raise(
        ErrorCode::DeadlineMissed,
        b"deadline missed",
        Some(idx),
        false,
    );
}

/// How long after a queuing wait's deadline the deadline monitor looks at the port (ns). A
/// waiter that is free to run times itself out first (its own wake-up takes tens of µs here),
/// and the monitor then finds it gone without taking the port's lock (which would revoke the
/// lock's bias from the process that uses the port: a `membarrier`, and the slow path for
/// the next 256 calls). Only a waiter kept from running (suspended, or kept off the CPU) is
/// looked at; what comes in this half millisecond after its deadline is still its.
pub(crate) const PORT_WAIT_GRACE_NS: u64 = 500_000;

/// The deadline monitor: sleep until the earliest unreported deadline, report the missed ones.
pub(crate) fn monitor_loop() -> ! {
    let r = rt();
    loop {
        let seen = r.kick.load(Ordering::SeqCst);
        r.monitor_until.store(0, Ordering::SeqCst);
        let now = r.now();
        let n = r.ctx.partition().n_processes.load(Ordering::Acquire) as usize;
        let mut earliest = u64::MAX;
        for idx in 0..n.min(MAX_PROCESSES) {
            let d = r.slot(idx).deadline_ns.load(Ordering::Acquire);
            if d == u64::MAX
                || r.attrs[idx].get().is_none()
                || r.ctl[idx].reported_deadline.load(Ordering::Acquire) == d
            {
                continue;
            }
            if d <= now {
                report_deadline_miss(idx, d);
            } else {
                earliest = earliest.min(d);
            }
        }
        // The time-outs of queuing port waits: a look at the port at each, PORT_WAIT_GRACE
        // after it (`ports::look_at_expired_wait`), so that what comes after a waiter's
        // deadline is not its, whether or not it runs then.
        for idx in 0..n.min(MAX_PROCESSES) {
            let word = r.ctl[idx].port_wait.load(Ordering::SeqCst);
            if word == 0 {
                continue;
            }
            let at = r.ctl[idx]
                .port_wait_until
                .load(Ordering::Relaxed)
                .saturating_add(PORT_WAIT_GRACE_NS);
            if at > now {
                earliest = earliest.min(at);
                continue;
            }
            super::ports::look_at_expired_wait(idx, word);
            if r.ctl[idx].port_wait.load(Ordering::SeqCst) == word {
                // Not expected: the time is written before the word and read after it, so it is
                // this wait's, and the look took the waiter out. Defensive: look again in a
                // while rather than at once.
                earliest = earliest.min(now.saturating_add(1_000_000));
            }
        }
        r.monitor_until.store(earliest, Ordering::SeqCst);
        // From the time now, not the scan's start: the looks above may have waited for port
        // locks, and the deadline-miss reports must not come that much later.
        let timeout =
            (earliest != u64::MAX).then(|| Duration::from_nanos(earliest.saturating_sub(r.now())));
        futex::wait(&r.kick, seen, timeout);
    }
}

/// Report an application message to the HM log (`REPORT_APPLICATION_MESSAGE`).
///
/// # Errors
/// - `InvalidParam`: `msg` is longer than [`MAX_ERROR_MESSAGE_SIZE`].
pub fn report_application_message(msg: &[u8]) -> ApexResult<()> {
    if msg.len() > MAX_ERROR_MESSAGE_SIZE {
        return Err(ApexError::InvalidParam);
    }
    let r = rt();
    let name = rt::self_index()
        .and_then(|i| r.attrs.get(i))
        .and_then(|a| a.get())
        .map_or("-", |a| a.name.as_str());
    log(&format!(
        "partix-hm: partition {}: message from {name}: {}\n",
        r.ctx.partition().partition_id,
        String::from_utf8_lossy(msg)
    ));
    Ok(())
}

/// Create the partition's error handler process (`CREATE_ERROR_HANDLER`). It runs, above every
/// process, whenever a process-level error is pending; it ends an activation by returning from
/// `entry` or by [`super::process::stop_self`] (returning is cheaper: STOP_SELF ends the thread
/// and makes a new one).
///
/// # Errors
/// In the standard's order:
/// - `NoAction`: the error handler exists already.
/// - `InvalidConfig`: `stack_size` is larger than [`super::process::MAX_STACK_SIZE`].
/// - `InvalidMode`: the partition is in NORMAL mode.
/// - `InvalidConfig`: the thread cannot be created.
pub fn create_error_handler(entry: EntryPoint, stack_size: u32) -> ApexResult<()> {
    create_error_handler_with(entry, stack_size, false)
}

/// [`create_error_handler`] with an entry point a C caller got wrong (`c_invalid`: a null
/// ENTRY_POINT, for which the C API passes a placeholder), refused with `InvalidParam` after the
/// standard's `NoAction` check and before the others, as [`super::process::create_process_with`]
/// places its C-only errors among the parameter checks (partix extension: INVALID_PARAM is not
/// one of the standard's codes for this service; review 27, finding 2).
///
/// # Errors
/// Those of [`create_error_handler`]; `InvalidParam` also for `c_invalid`, after `NoAction`.
pub fn create_error_handler_with(
    entry: EntryPoint,
    stack_size: u32,
    c_invalid: bool,
) -> ApexResult<()> {
    let r = rt();
    let stack = if stack_size == 0 {
        super::process::DEFAULT_STACK_SIZE
    } else {
        stack_size
    };
    r.with_inner(|inner| {
        if inner.eh.is_some() {
            return Err(ApexError::NoAction);
        }
        if c_invalid {
            return Err(ApexError::InvalidParam);
        }
        if stack_size > super::process::MAX_STACK_SIZE {
            return Err(ApexError::InvalidConfig);
        }
        if r.mode() == mode::NORMAL {
            return Err(ApexError::InvalidMode);
        }
        r.spawn_incarnation(EH_INDEX, stack as usize, FIFO_ERROR_HANDLER)?;
        inner.eh = Some(Proc {
            attrs: super::process::ProcessAttributes {
                name: "ERROR_HANDLER".into(),
                entry_point: entry,
                stack_size: stack,
                base_priority: super::process::MAX_PRIORITY_VALUE,
                period: super::time::INFINITE_TIME_VALUE,
                time_capacity: super::time::INFINITE_TIME_VALUE,
                deadline: super::process::Deadline::Soft,
            },
            dormant: true,
            reasons: 0,
            timed: 0,
            wait_ends: 0,
            self_suspend_timed_out: false,
            current_priority: super::process::MAX_PRIORITY_VALUE,
            applied_fifo: FIFO_ERROR_HANDLER,
            release_ns: None,
            start_delay: 0,
            deadline_ns: u64::MAX,
        });
        Ok(())
    })
}

/// Return the oldest pending error (`GET_ERROR_STATUS`), removing it from the queue.
///
/// # Errors
/// - `InvalidConfig`: the caller is not the error handler.
/// - `NoAction`: no error is pending.
pub fn get_error_status() -> ApexResult<ErrorStatus> {
    if rt::self_index() != Some(EH_INDEX) {
        return Err(ApexError::InvalidConfig);
    }
    rt().with_inner(|inner| inner.errors.pop_front())
        .ok_or(ApexError::NoAction)
}

/// Raise an application error (`RAISE_APPLICATION_ERROR`) for the calling process; the HM
/// handles it (error handler or HM table action; from the error handler itself or from
/// initialisation code it is partition-level). May not return if the action stops or restarts
/// the caller or the partition.
///
/// # Errors
/// - `InvalidParam`: `code` is not `ApplicationError`, or `msg` is longer than
///   [`MAX_ERROR_MESSAGE_SIZE`].
pub fn raise_application_error(code: ErrorCode, msg: &[u8]) -> ApexResult<()> {
    if code != ErrorCode::ApplicationError || msg.len() > MAX_ERROR_MESSAGE_SIZE {
        return Err(ApexError::InvalidParam);
    }
    let me = rt::self_index();
    let from_eh = me == Some(EH_INDEX);
    raise(code, msg, me.filter(|&i| i != EH_INDEX), from_eh);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module whose `System_HM_Table` does not list APPLICATION_ERROR, and whose partition 1
    /// names it (by `ErrorCode`) in its `Partition_HM_Table`.
    const UNLISTED: &str = r#"<ARINC_653_Module ModuleName="hm-default">
  <System_HM_Table>
    <System_State_Entry SystemState="1">
      <Error_ID_Level ErrorIdentifier="1" ErrorCode="DEADLINE_MISSED" ErrorLevel="PARTITION"/>
    </System_State_Entry>
  </System_HM_Table>
  <Partition PartitionIdentifier="1" PartitionName="P1"/>
  <Module_Schedule MajorFrameSeconds="0.02">
    <Partition_Schedule PartitionIdentifier="1" PeriodSeconds="0.02" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="1" WindowStartSeconds="0" WindowDurationSeconds="0.01"/>
    </Partition_Schedule>
  </Module_Schedule>
  <Partition_HM_Table PartitionIdentifier="1">
    <System_State_Entry SystemState="1">
      <Error_ID_Action ErrorIdentifier="9" ErrorCode="APPLICATION_ERROR" Action="COLD_START"/>
      <Error_ID_Action ErrorIdentifier="1" Action="IDLE"/>
    </System_State_Entry>
  </Partition_HM_Table>
</ARINC_653_Module>"#;

    /// Pins the default level of a code the system table does not list, inside a partition:
    /// PROCESS (the error handler first, then the partition's action), as docs/config.md and
    /// docs/apex.md say (review 27 found config.md saying PARTITION).
    #[test]
    fn an_unlisted_code_is_process_level_in_the_partition() {
        let m = partix_config::parse_str(UNLISTED, None).expect("valid module");
        let app = ErrorCode::ApplicationError;
        // A process raised it in NORMAL mode and there is an error handler: the handler.
        assert_eq!(
            decide_in(Some(&m), 1, app, true, true),
            Decision::ErrorHandler
        );
        // No handler (or not raised by a process): the partition's action for the code.
        assert_eq!(
            decide_in(Some(&m), 1, app, true, false),
            Decision::Partition(PartitionAction::ColdStart)
        );
        assert_eq!(
            decide_in(Some(&m), 1, app, false, true),
            Decision::Partition(PartitionAction::ColdStart)
        );
        // A listed code keeps its level: PARTITION, the handler is not called.
        assert_eq!(
            decide_in(Some(&m), 1, ErrorCode::DeadlineMissed, true, true),
            Decision::Partition(PartitionAction::Idle)
        );
        // Without a configuration: PROCESS level, then IGNORE.
        assert_eq!(decide_in(None, 1, app, true, true), Decision::ErrorHandler);
        assert_eq!(
            decide_in(None, 1, app, true, false),
            Decision::Partition(PartitionAction::Ignore)
        );
    }
}
