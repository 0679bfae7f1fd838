//! The partition-side APEX runtime: processes, time, partition modes and the health monitor
//! (ARINC 653 Part 1, plus the module schedule services of Part 2).
//!
//! Partition code calls these functions directly (Rust: [`partix_apex`](../../partix_apex/) re-exports
//! them) or through the C ABI of `partix-apex`. Every service returns [`ApexResult`]; the
//! `RETURN_CODE_TYPE` of an error comes from [`ApexError::return_code`].
//!
//! - [`error`]: [`ApexError`] (`RETURN_CODE_TYPE`).
//! - [`time`]: GET_TIME, TIMED_WAIT, PERIODIC_WAIT, REPLENISH.
//! - [`process`]: process creation, start/stop, suspension, priorities, preemption lock, status.
//! - [`partition`](mod@partition): partition status and mode, module schedules.
//! - [`hm`]: health monitor, error handler, deadline monitor.
//! - [`ports`]: sampling and queuing ports (inter-partition communication).
//! - [`blackboard`], [`buffer`], [`semaphore`], [`event`]: intra-partition communication and
//!   synchronisation between the processes of the partition (see `docs/intra.md`).
//!
//! # Process model
//! APEX processes are threads of the partition process, created by CREATE_PROCESS and parked until
//! START. Scheduling among them is the kernel's SCHED_FIFO on the one CPU the executive pins the
//! partition to: APEX priority p runs at FIFO p + 1 (2..97), a process holding the preemption lock
//! and the error handler at 97, the partition's deadline monitor at 98, the executive at 99.
//! The partition's initialisation code (the program's `main`) creates processes in COLD_START or
//! WARM_START mode and calls [`set_partition_mode`]`(Normal)`, which does not return: `main`
//! becomes the deadline monitor and the processes run.
//!
//! Periodic processes are released at `anchor + k·period`, where the anchor is the start of the
//! partition's first window in NORMAL mode; their deadline is release + time capacity. The monitor
//! detects missed deadlines and reports them to the HM.
//!
//! Status services (GET_PARTITION_STATUS, GET_PROCESS_STATUS, GET_MY_ID, GET_PROCESS_ID, GET_TIME)
//! are plain loads from shared memory and thread-locals: no lock and no system call.
//!
//! # Standalone mode
//! Run by hand (no `partix run`), a partition program gets a module of one partition: the process
//! is pinned to the CPU it started on, NORMAL mode proceeds at once (always in its window), IDLE
//! exits with status 0, and COLD_START/WARM_START re-execute the program.
//!
//! ```no_run
//! use partix_runtime::partition::*;
//!
//! extern "C" fn work() {
//!     loop {
//!         // ... one job ...
//!         periodic_wait().expect("a periodic process");
//!     }
//! }
//!
//! fn main() -> ApexResult<()> {
//!     let pid = create_process(&ProcessAttributes {
//!         name: "worker".into(),
//!         entry_point: work,
//!         stack_size: 0,
//!         base_priority: 10,
//!         period: 80_000_000,
//!         time_capacity: 80_000_000,
//!         deadline: Deadline::Hard,
//!     })?;
//!     start(pid)?;
//!     set_partition_mode(OperatingMode::Normal) // returns only on error
//! }
//! ```

mod biased;
pub mod blackboard;
pub mod buffer;
pub mod error;
pub mod event;
pub mod hm;
#[allow(clippy::module_inception)]
pub mod partition;
pub mod ports;
pub mod process;
mod rt;
pub mod semaphore;
pub mod time;
mod waitq;

pub use blackboard::{
    blackboard_max_message_size, clear_blackboard, create_blackboard, display_blackboard,
    get_blackboard_id, get_blackboard_status, read_blackboard, BlackboardId, BlackboardStatus,
    EmptyIndicator, MAX_INTRA_MESSAGE_SIZE, MAX_NUMBER_OF_BLACKBOARDS,
};
pub use buffer::{
    buffer_max_message_size, create_buffer, create_buffer_with, get_buffer_id, get_buffer_status,
    receive_buffer, send_buffer, BufferId, BufferStatus, MAX_NUMBER_OF_BUFFERS,
    MAX_NUMBER_OF_MESSAGES,
};
pub use error::{return_code_of, ApexError, ApexResult, NO_ERROR};
pub use event::{
    create_event, get_event_id, get_event_status, reset_event, set_event, wait_event, EventId,
    EventState, EventStatus, MAX_NUMBER_OF_EVENTS,
};
pub use hm::{
    create_error_handler, create_error_handler_with, get_error_status, raise_application_error,
    report_application_message, ErrorCode, ErrorStatus, MAX_ERROR_MESSAGE_SIZE,
};
pub use partition::{
    get_module_schedule_id, get_module_schedule_status, get_partition_status, set_module_schedule,
    set_partition_mode, ModuleScheduleStatus, OperatingMode, PartitionStatus, ScheduleId,
    StartCondition,
};
pub use ports::*;
pub use process::{
    create_process, create_process_with, delayed_start, get_my_id, get_process_id,
    get_process_status, lock_preemption, resume, set_priority, start, stop, stop_self, suspend,
    suspend_self, unlock_preemption, Deadline, EntryPoint, LockLevel, Priority, ProcessAttributes,
    ProcessId, ProcessState, ProcessStatus, MAX_LOCK_LEVEL, MAX_NAME_LENGTH, MAX_PRIORITY_VALUE,
    MIN_PRIORITY_VALUE,
};
pub use rt::control_signal;
pub(crate) use rt::{control_pending, defer_control, outside_sections};
pub use semaphore::{
    create_semaphore, create_semaphore_with, get_semaphore_id, get_semaphore_status,
    signal_semaphore, wait_semaphore, SemaphoreId, SemaphoreStatus, SemaphoreValue,
    MAX_NUMBER_OF_SEMAPHORES, MAX_SEMAPHORE_VALUE,
};
pub use time::{
    get_time, periodic_wait, replenish, thread_cpu_ns, timed_wait, SystemTime, INFINITE_TIME_VALUE,
};
