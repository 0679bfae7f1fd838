//! Health monitor decisions of the executive: how a partition's death (or a failed start) maps
//! to an error code, a level and a recovery action, from the configuration's HM tables. Pure.

use partix_config::model::{ErrorCode, ErrorLevel, Module, ModuleAction, PartitionAction};

/// How a partition process ended, as seen by `waitpid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Death {
    /// It called `exit(code)`.
    Exited(i32),
    /// It was killed by this signal.
    Signaled(i32),
}

impl Death {
    /// Return the HM error code of this death (SIGSEGV/SIGBUS → MEMORY_VIOLATION, SIGFPE →
    /// NUMERIC_ERROR, SIGILL → ILLEGAL_REQUEST, anything else → PARTITION_CRASH).
    pub fn error_code(self) -> ErrorCode {
        match self {
            Death::Signaled(libc::SIGSEGV) | Death::Signaled(libc::SIGBUS) => {
                ErrorCode::MemoryViolation
            }
            Death::Signaled(libc::SIGFPE) => ErrorCode::NumericError,
            Death::Signaled(libc::SIGILL) => ErrorCode::IllegalRequest,
            _ => ErrorCode::PartitionCrash,
        }
    }

    /// Decode a `waitpid` status; `None` if the process did not end (stopped or continued).
    pub fn from_wait_status(status: i32) -> Option<Death> {
        if libc::WIFEXITED(status) {
            Some(Death::Exited(libc::WEXITSTATUS(status)))
        } else if libc::WIFSIGNALED(status) {
            Some(Death::Signaled(libc::WTERMSIG(status)))
        } else {
            None
        }
    }
}

impl std::fmt::Display for Death {
    /// `exited with status C`; `killed by SIGSEGV` for the signals a partition usually dies of
    /// ([`COMMON_SIGNALS`]); `killed by signal N (NAME)` for the others (`NAME` from
    /// [`signal_name`], `SIGRTMIN+k` for a real-time signal; none for a number Linux does not
    /// define). Other signals used to read only "killed by a signal".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Death::Exited(c) => write!(f, "exited with status {c}"),
            Death::Signaled(s) => match signal_name(s) {
                Some(name) if COMMON_SIGNALS.contains(&s) => write!(f, "killed by {name}"),
                Some(name) => write!(f, "killed by signal {s} ({name})"),
                None if (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&s) => {
                    write!(
                        f,
                        "killed by signal {s} (SIGRTMIN+{})",
                        s - libc::SIGRTMIN()
                    )
                }
                None => write!(f, "killed by signal {s}"),
            },
        }
    }
}

/// The signals a [`Death`] names without their number ("killed by SIGSEGV").
pub const COMMON_SIGNALS: [i32; 9] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
    libc::SIGKILL,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGXCPU,
];

/// Return the conventional name of a signal number (`None` for a real-time signal or a number
/// Linux does not define).
pub fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}

/// Every error code, in the order of [`code_index`].
pub const ERROR_CODES: [ErrorCode; 10] = [
    ErrorCode::DeadlineMissed,
    ErrorCode::ApplicationError,
    ErrorCode::NumericError,
    ErrorCode::IllegalRequest,
    ErrorCode::StackOverflow,
    ErrorCode::MemoryViolation,
    ErrorCode::HardwareFault,
    ErrorCode::PowerFail,
    ErrorCode::PartitionCrash,
    ErrorCode::InitTimeout,
];

/// Return the index of `code` in [`ERROR_CODES`].
pub fn code_index(code: ErrorCode) -> usize {
    match code {
        ErrorCode::DeadlineMissed => 0,
        ErrorCode::ApplicationError => 1,
        ErrorCode::NumericError => 2,
        ErrorCode::IllegalRequest => 3,
        ErrorCode::StackOverflow => 4,
        ErrorCode::MemoryViolation => 5,
        ErrorCode::HardwareFault => 6,
        ErrorCode::PowerFail => 7,
        ErrorCode::PartitionCrash => 8,
        ErrorCode::InitTimeout => 9,
    }
}

/// Return the standard's name of an error code.
pub fn code_name(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::DeadlineMissed => "DEADLINE_MISSED",
        ErrorCode::ApplicationError => "APPLICATION_ERROR",
        ErrorCode::NumericError => "NUMERIC_ERROR",
        ErrorCode::IllegalRequest => "ILLEGAL_REQUEST",
        ErrorCode::StackOverflow => "STACK_OVERFLOW",
        ErrorCode::MemoryViolation => "MEMORY_VIOLATION",
        ErrorCode::HardwareFault => "HARDWARE_FAULT",
        ErrorCode::PowerFail => "POWER_FAIL",
        ErrorCode::PartitionCrash => "PARTITION_CRASH",
        ErrorCode::InitTimeout => "INIT_TIMEOUT",
    }
}

/// What the executive does about an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The partition gets no more windows (its process is gone or killed).
    Idle,
    /// Restart the partition in COLD_START inside its next window.
    ColdStart,
    /// Restart the partition in WARM_START inside its next window.
    WarmStart,
    /// Log only (for a partition whose process is gone this is [`Action::Idle`]).
    Ignore,
    /// Stop the module.
    ModuleShutdown,
    /// Restart every partition (COLD_START, `HM_MODULE_RESTART`) inside its next window.
    ModuleReset,
}

impl Action {
    /// Return the name used in logs and traces.
    pub fn name(self) -> &'static str {
        match self {
            Action::Idle => "IDLE",
            Action::ColdStart => "COLD_START",
            Action::WarmStart => "WARM_START",
            Action::Ignore => "IGNORE",
            Action::ModuleShutdown => "SHUTDOWN",
            Action::ModuleReset => "RESET",
        }
    }
}

/// The outcome of looking an error up in the HM tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The error code.
    pub code: ErrorCode,
    /// The level from the system HM table (`Partition` when the table has no entry).
    pub level: ErrorLevel,
    /// The action.
    pub action: Action,
    /// Whether the action came from a table (false: the default, IDLE).
    pub from_table: bool,
}

/// Return the level name.
pub fn level_name(l: ErrorLevel) -> &'static str {
    match l {
        ErrorLevel::Module => "MODULE",
        ErrorLevel::Partition => "PARTITION",
        ErrorLevel::Process => "PROCESS",
    }
}

/// Decide what to do about error `code` of partition `pidx` (index in `module.partitions`).
///
/// The level comes from the system HM table (first entry with this code); the action from the
/// module HM table (module level, by error identifier) or the partition's HM table (partition and
/// process level, by code). A process-level action (STOP/RESTART_PROCESS) cannot apply to a dead
/// partition process and becomes IDLE. With no applicable entry the default is IDLE.
pub fn decide(module: &Module, pidx: usize, code: ErrorCode) -> Decision {
    let sys = module.system_hm.iter().find(|e| e.code == code);
    let level = sys.map_or(
        if code == ErrorCode::InitTimeout {
            ErrorLevel::Module
        } else {
            ErrorLevel::Partition
        },
        |e| e.level,
    );
    let idle = Decision {
        code,
        level,
        action: Action::Idle,
        from_table: false,
    };
    if level == ErrorLevel::Module {
        let Some(sys) = sys else { return idle };
        return match module.module_hm.iter().find(|e| e.error_id == sys.error_id) {
            Some(e) => Decision {
                action: match e.action {
                    ModuleAction::Ignore => Action::Ignore,
                    ModuleAction::Shutdown => Action::ModuleShutdown,
                    ModuleAction::Reset => Action::ModuleReset,
                },
                from_table: true,
                ..idle
            },
            None => idle,
        };
    }
    let Some(part) = module.partitions.get(pidx) else {
        return idle;
    };
    match part.hm.iter().find(|e| e.code == code) {
        Some(e) => Decision {
            action: match e.action {
                PartitionAction::Ignore => Action::Ignore,
                PartitionAction::Idle
                | PartitionAction::StopProcess
                | PartitionAction::RestartProcess => Action::Idle,
                PartitionAction::WarmStart => Action::WarmStart,
                PartitionAction::ColdStart => Action::ColdStart,
            },
            from_table: true,
            ..idle
        },
        None => idle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A death by a signal other than the common ones gives its number and name (it read
    /// "killed by a signal"); the common ones read as before.
    #[test]
    fn a_death_by_any_signal_gives_the_signal() {
        assert_eq!(
            Death::Signaled(libc::SIGPIPE).to_string(),
            "killed by signal 13 (SIGPIPE)"
        );
        assert_eq!(
            Death::Signaled(libc::SIGUSR1).to_string(),
            format!("killed by signal {} (SIGUSR1)", libc::SIGUSR1)
        );
        let rt = libc::SIGRTMIN() + 2;
        assert_eq!(
            Death::Signaled(rt).to_string(),
            format!("killed by signal {rt} (SIGRTMIN+2)")
        );
        assert_eq!(Death::Signaled(99).to_string(), "killed by signal 99");
        assert_eq!(
            Death::Signaled(libc::SIGSEGV).to_string(),
            "killed by SIGSEGV"
        );
        assert_eq!(
            Death::Signaled(libc::SIGKILL).to_string(),
            "killed by SIGKILL"
        );
        assert_eq!(Death::Exited(3).to_string(), "exited with status 3");
        for s in COMMON_SIGNALS {
            let text = Death::Signaled(s).to_string();
            assert!(!text.contains("signal "), "{text}");
        }
    }

    #[test]
    fn error_codes_are_indexed_in_order() {
        for (i, c) in ERROR_CODES.iter().enumerate() {
            assert_eq!(code_index(*c), i, "{c:?}");
        }
    }

    #[test]
    fn signals_map_to_codes() {
        assert_eq!(
            Death::Signaled(libc::SIGSEGV).error_code(),
            ErrorCode::MemoryViolation
        );
        assert_eq!(
            Death::Signaled(libc::SIGBUS).error_code(),
            ErrorCode::MemoryViolation
        );
        assert_eq!(
            Death::Signaled(libc::SIGFPE).error_code(),
            ErrorCode::NumericError
        );
        assert_eq!(
            Death::Signaled(libc::SIGILL).error_code(),
            ErrorCode::IllegalRequest
        );
        assert_eq!(
            Death::Signaled(libc::SIGKILL).error_code(),
            ErrorCode::PartitionCrash
        );
        assert_eq!(
            Death::Signaled(libc::SIGABRT).error_code(),
            ErrorCode::PartitionCrash
        );
        assert_eq!(Death::Exited(0).error_code(), ErrorCode::PartitionCrash);
    }
}
