//! partix as an [`a653rs`] hypervisor.
//!
//! [`a653rs`] is the Rust APEX API of DLR's ARINC 653 work (`a653rs-linux`, XNG): a partition is
//! written against its traits (`ApexSamplingPortP4`, `ApexProcessP4`, ...) and its abstractions
//! (`SamplingPortSource<H>`, `StartContext<H>`, `Partition<H>`), generic over the hypervisor
//! `H`. [`Partix`] is that hypervisor here: each trait function is the partix APEX service of
//! the same name ([`partix_runtime::partition`]; the exceptions are listed below), so such a
//! partition runs on partix with `H = Partix`, its channels on whatever transport the module
//! configuration gives them; so does one written with a653rs's `#[partition(...)]` macro, given
//! `partix_a653rs::Partix` as its hypervisor (the `partix-a653rs-hello` program of this crate).
//!
//! Implemented: `ApexPartitionP4`, `ApexProcessP4` and `ApexProcessP1`, `ApexTimeP4` and
//! `ApexTimeP1`, `ApexErrorP4`, `ApexSamplingPortP4` and `ApexSamplingPortP1`,
//! `ApexQueuingPortP4` and `ApexQueuingPortP1`, and the intra-partition objects'
//! `ApexBlackboardP1`, `ApexBufferP1`, `ApexSemaphoreP1` and `ApexEventP1`, and Part 2's
//! `ApexScheduleP2` (module schedules). Not: the
//! error handler's `ApexErrorP1` (a653rs's `ErrorStatus` holds the failed address as a
//! function pointer, `extern "C" fn()`, which is never null in Rust, and partix has no address
//! for most errors: an application error, a deadline miss), and the other Part 2 services
//! (memory blocks, mutexes: partix has none).
//!
//! Where the two differ:
//! - **Names** are `[u8; 32]` in a653rs, NUL-padded; partix takes at most 30 bytes of UTF-8.
//!   A name that is not UTF-8 names nothing: `INVALID_CONFIG` when a port is created and at
//!   every `GET_*_ID`, `INVALID_PARAM` when a process or an intra-partition object is created
//!   (after the check partix makes first: a full table is `INVALID_CONFIG`).
//! - **A sampling source's refresh period.** a653rs's `StartContext` creates a source with a
//!   refresh period of 1 ns ("ignored for the source"); partix checks every port's parameters
//!   against the configuration. A source created with 1 ns is therefore created with the
//!   configured period ([`partix_runtime::partition::sampling_port_refresh_period`]); any other
//!   period, and a destination's, must match the configuration, as ARINC 653 says.
//! - **Queue overflow.** `RECEIVE_QUEUING_MESSAGE`'s overflow flag is always false: a partix
//!   queuing channel loses nothing (a full channel refuses the send).
//! - **Priorities** go up to 94 on partix (priority p runs at SCHED_FIFO p + 1, below the
//!   partition's monitor), not 239: a higher one is `INVALID_PARAM` at CREATE_PROCESS or
//!   SET_PRIORITY.
//! - **Cores.** A partix partition runs on one CPU: `GET_MY_PROCESSOR_CORE_ID` is 0, and a core
//!   affinity other than 0 or `CORE_AFFINITY_NO_PREFERENCE` is `INVALID_CONFIG`.
//! - **Process indexes** (`GET_MY_INDEX`) are the process's id: partix numbers processes 1, 2,
//!   ... in the order they are created.
//! - **SET_PARTITION_MODE never returns** unless it fails: NORMAL makes the calling thread the
//!   partition's deadline monitor; IDLE, COLD_START and WARM_START stop the partition's
//!   processes and hand the partition to the executive (a653rs's `PartitionExt::run` never
//!   reaches its idle loop).
#![allow(unsafe_code)]

use a653rs::bindings::*;
use partix_runtime::partition as px;

/// The partix hypervisor, for a653rs's generic abstractions: `SamplingPortSource<Partix>`,
/// `StartContext<Partix>`, `impl Partition<Partix> for MyPartition`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Partix;

/// a653rs's return code of a partix failure (the same six `RETURN_CODE_TYPE` values).
fn rc(e: px::ApexError) -> ErrorReturnCode {
    match e {
        px::ApexError::NoAction => ErrorReturnCode::NoAction,
        px::ApexError::NotAvailable => ErrorReturnCode::NotAvailable,
        px::ApexError::InvalidParam => ErrorReturnCode::InvalidParam,
        px::ApexError::InvalidConfig => ErrorReturnCode::InvalidConfig,
        px::ApexError::InvalidMode => ErrorReturnCode::InvalidMode,
        px::ApexError::TimedOut => ErrorReturnCode::TimedOut,
    }
}

/// The text of an a653rs name (up to its first NUL), or `bad` when it is not UTF-8.
fn name_of(n: &ApexName, bad: ErrorReturnCode) -> Result<&str, ErrorReturnCode> {
    let end = n.iter().position(|&c| c == 0).unwrap_or(n.len());
    std::str::from_utf8(&n[..end]).map_err(|_| bad)
}

/// An a653rs name holding `s` (cut at [`MAX_NAME_LENGTH`] bytes, NUL-padded).
fn apex_name(s: &str) -> ApexName {
    let mut n = [0u8; MAX_NAME_LENGTH];
    let b = s.as_bytes();
    let k = b.len().min(MAX_NAME_LENGTH);
    n[..k].copy_from_slice(&b[..k]);
    n
}

/// A partix id from an a653rs one (a653rs ids are 64-bit): out of range is no id at all.
fn id32(id: i64) -> Result<i32, ErrorReturnCode> {
    i32::try_from(id).map_err(|_| ErrorReturnCode::InvalidParam)
}

fn direction(d: PortDirection) -> px::PortDirection {
    match d {
        PortDirection::Source => px::PortDirection::Source,
        PortDirection::Destination => px::PortDirection::Destination,
    }
}

fn apex_direction(d: px::PortDirection) -> PortDirection {
    match d {
        px::PortDirection::Source => PortDirection::Source,
        px::PortDirection::Destination => PortDirection::Destination,
    }
}

fn validity(v: px::Validity) -> Validity {
    match v {
        px::Validity::Valid => Validity::Valid,
        px::Validity::Invalid => Validity::Invalid,
    }
}

impl ApexPartitionP4 for Partix {
    fn get_partition_status() -> ApexPartitionStatus {
        let s = px::get_partition_status();
        ApexPartitionStatus {
            period: s.period,
            duration: s.duration,
            identifier: i64::from(s.identifier),
            lock_level: s.lock_level,
            operating_mode: match s.operating_mode {
                px::OperatingMode::Idle => OperatingMode::Idle,
                px::OperatingMode::ColdStart => OperatingMode::ColdStart,
                px::OperatingMode::WarmStart => OperatingMode::WarmStart,
                px::OperatingMode::Normal => OperatingMode::Normal,
            },
            start_condition: match s.start_condition {
                px::StartCondition::NormalStart => StartCondition::NormalStart,
                px::StartCondition::PartitionRestart => StartCondition::PartitionRestart,
                px::StartCondition::HmModuleRestart => StartCondition::HmModuleRestart,
                px::StartCondition::HmPartitionRestart => StartCondition::HmPartitionRestart,
            },
            num_assigned_cores: s.num_assigned_cores.max(1) as NumCores,
        }
    }

    /// Returns only with an error on partix (module docs): NORMAL makes the calling thread the
    /// partition's deadline monitor, the other modes end or restart the partition.
    fn set_partition_mode(operating_mode: OperatingMode) -> Result<(), ErrorReturnCode> {
        px::set_partition_mode(match operating_mode {
            OperatingMode::Idle => px::OperatingMode::Idle,
            OperatingMode::ColdStart => px::OperatingMode::ColdStart,
            OperatingMode::WarmStart => px::OperatingMode::WarmStart,
            OperatingMode::Normal => px::OperatingMode::Normal,
        })
        .map_err(rc)
    }
}

fn deadline(d: Deadline) -> px::Deadline {
    match d {
        Deadline::Soft => px::Deadline::Soft,
        Deadline::Hard => px::Deadline::Hard,
    }
}

fn pid(id: ProcessId) -> Result<px::ProcessId, ErrorReturnCode> {
    id32(id).map(px::ProcessId)
}

impl ApexProcessP4 for Partix {
    fn create_process(attributes: &ApexProcessAttribute) -> Result<ProcessId, ErrorReturnCode> {
        // A name that is not UTF-8 is INVALID_PARAM after partix's own first checks, as the C
        // API reports an invalid parameter (`create_process_with`).
        let name = name_of(&attributes.name, ErrorReturnCode::InvalidParam);
        let attr = px::ProcessAttributes {
            name: name.unwrap_or("").to_owned(),
            entry_point: attributes.entry_point,
            stack_size: attributes.stack_size,
            base_priority: attributes.base_priority,
            period: attributes.period,
            time_capacity: attributes.time_capacity,
            deadline: deadline(attributes.deadline),
        };
        px::create_process_with(&attr, name.is_err())
            .map(|p| ProcessId::from(p.0))
            .map_err(rc)
    }

    fn start(process_id: ProcessId) -> Result<(), ErrorReturnCode> {
        px::start(pid(process_id)?).map_err(rc)
    }
}

impl ApexProcessP1 for Partix {
    fn set_priority(process_id: ProcessId, priority: Priority) -> Result<(), ErrorReturnCode> {
        px::set_priority(pid(process_id)?, priority).map_err(rc)
    }

    fn suspend_self(time_out: ApexSystemTime) -> Result<(), ErrorReturnCode> {
        px::suspend_self(time_out).map_err(rc)
    }

    fn suspend(process_id: ProcessId) -> Result<(), ErrorReturnCode> {
        px::suspend(pid(process_id)?).map_err(rc)
    }

    fn resume(process_id: ProcessId) -> Result<(), ErrorReturnCode> {
        px::resume(pid(process_id)?).map_err(rc)
    }

    fn stop_self() {
        px::stop_self()
    }

    fn stop(process_id: ProcessId) -> Result<(), ErrorReturnCode> {
        px::stop(pid(process_id)?).map_err(rc)
    }

    fn delayed_start(
        process_id: ProcessId,
        delay_time: ApexSystemTime,
    ) -> Result<(), ErrorReturnCode> {
        px::delayed_start(pid(process_id)?, delay_time).map_err(rc)
    }

    fn lock_preemption() -> Result<LockLevel, ErrorReturnCode> {
        px::lock_preemption().map_err(rc)
    }

    fn unlock_preemption() -> Result<LockLevel, ErrorReturnCode> {
        px::unlock_preemption().map_err(rc)
    }

    fn get_my_id() -> Result<ProcessId, ErrorReturnCode> {
        px::get_my_id().map(|p| ProcessId::from(p.0)).map_err(rc)
    }

    fn get_process_id(process_name: ProcessName) -> Result<ProcessId, ErrorReturnCode> {
        let name = name_of(&process_name, ErrorReturnCode::InvalidConfig)?;
        px::get_process_id(name)
            .map(|p| ProcessId::from(p.0))
            .map_err(rc)
    }

    fn get_process_status(process_id: ProcessId) -> Result<ApexProcessStatus, ErrorReturnCode> {
        let s = px::get_process_status(pid(process_id)?).map_err(rc)?;
        Ok(ApexProcessStatus {
            deadline_time: s.deadline_time,
            current_priority: s.current_priority,
            process_state: match s.process_state {
                px::ProcessState::Dormant => ProcessState::Dormant,
                px::ProcessState::Ready => ProcessState::Ready,
                px::ProcessState::Running => ProcessState::Running,
                px::ProcessState::Waiting => ProcessState::Waiting,
                px::ProcessState::Faulted => ProcessState::Faulted,
            },
            attributes: ApexProcessAttribute {
                period: s.attributes.period,
                time_capacity: s.attributes.time_capacity,
                entry_point: s.attributes.entry_point,
                stack_size: s.attributes.stack_size,
                base_priority: s.attributes.base_priority,
                deadline: match s.attributes.deadline {
                    px::Deadline::Soft => Deadline::Soft,
                    px::Deadline::Hard => Deadline::Hard,
                },
                name: apex_name(&s.attributes.name),
            },
        })
    }

    /// One CPU per partition: core 0, or no preference, for a process that exists (during
    /// initialisation, as ARINC 653 allows it).
    fn initialize_process_core_affinity(
        process_id: ProcessId,
        processor_core_id: ProcessorCoreId,
    ) -> Result<(), ErrorReturnCode> {
        px::get_process_status(pid(process_id)?).map_err(rc)?;
        if processor_core_id != 0 && processor_core_id != CORE_AFFINITY_NO_PREFERENCE {
            return Err(ErrorReturnCode::InvalidConfig);
        }
        match px::get_partition_status().operating_mode {
            px::OperatingMode::Normal => Err(ErrorReturnCode::InvalidMode),
            _ => Ok(()),
        }
    }

    fn get_my_processor_core_id() -> ProcessorCoreId {
        0
    }

    /// The caller's id (module docs): `INVALID_MODE` for initialisation code and the error
    /// handler.
    fn get_my_index() -> Result<ProcessIndex, ErrorReturnCode> {
        px::get_my_id().map(|p| p.0).map_err(rc)
    }
}

impl ApexTimeP4 for Partix {
    fn periodic_wait() -> Result<(), ErrorReturnCode> {
        px::periodic_wait().map_err(rc)
    }

    fn get_time() -> ApexSystemTime {
        px::get_time()
    }
}

impl ApexTimeP1 for Partix {
    fn timed_wait(delay_time: ApexSystemTime) -> Result<(), ErrorReturnCode> {
        px::timed_wait(delay_time).map_err(rc)
    }

    fn replenish(budget_time: ApexSystemTime) -> Result<(), ErrorReturnCode> {
        px::replenish(budget_time).map_err(rc)
    }
}

impl ApexErrorP4 for Partix {
    fn report_application_message(message: &[ApexByte]) -> Result<(), ErrorReturnCode> {
        px::report_application_message(message).map_err(rc)
    }

    fn raise_application_error(
        error_code: ErrorCode,
        message: &[ApexByte],
    ) -> Result<(), ErrorReturnCode> {
        let code = match error_code {
            ErrorCode::DeadlineMissed => px::ErrorCode::DeadlineMissed,
            ErrorCode::ApplicationError => px::ErrorCode::ApplicationError,
            ErrorCode::NumericError => px::ErrorCode::NumericError,
            ErrorCode::IllegalRequest => px::ErrorCode::IllegalRequest,
            ErrorCode::StackOverflow => px::ErrorCode::StackOverflow,
            ErrorCode::MemoryViolation => px::ErrorCode::MemoryViolation,
            ErrorCode::HardwareFault => px::ErrorCode::HardwareFault,
            ErrorCode::PowerFail => px::ErrorCode::PowerFail,
        };
        px::raise_application_error(code, message).map_err(rc)
    }
}

/// The refresh period a653rs's `StartContext::create_sampling_port_source` gives a source: 1 ns.
const SOURCE_REFRESH_PLACEHOLDER: ApexSystemTime = 1;

fn sampling_id(id: SamplingPortId) -> Result<px::SamplingPortId, ErrorReturnCode> {
    id32(id).map(px::SamplingPortId)
}

impl ApexSamplingPortP4 for Partix {
    fn create_sampling_port(
        sampling_port_name: SamplingPortName,
        max_message_size: MessageSize,
        port_direction: PortDirection,
        refresh_period: ApexSystemTime,
    ) -> Result<SamplingPortId, ErrorReturnCode> {
        let name = name_of(&sampling_port_name, ErrorReturnCode::InvalidConfig)?;
        let refresh = match port_direction {
            // a653rs's placeholder for a source (module docs).
            PortDirection::Source if refresh_period == SOURCE_REFRESH_PLACEHOLDER => {
                px::sampling_port_refresh_period(name).map_err(rc)?
            }
            _ => refresh_period,
        };
        px::create_sampling_port(name, max_message_size, direction(port_direction), refresh)
            .map(|p| SamplingPortId::from(p.0))
            .map_err(rc)
    }

    fn write_sampling_message(
        sampling_port_id: SamplingPortId,
        message: &[ApexByte],
    ) -> Result<(), ErrorReturnCode> {
        px::write_sampling_message(sampling_id(sampling_port_id)?, message).map_err(rc)
    }

    /// # Safety
    /// Safe for any `message` (partix checks its length: a buffer shorter than the message is
    /// `INVALID_PARAM`); `unsafe` in the trait only.
    unsafe fn read_sampling_message(
        sampling_port_id: SamplingPortId,
        message: &mut [ApexByte],
    ) -> Result<(Validity, MessageSize), ErrorReturnCode> {
        let (n, v) =
            px::read_sampling_message(sampling_id(sampling_port_id)?, message).map_err(rc)?;
        Ok((validity(v), n as MessageSize))
    }
}

impl ApexSamplingPortP1 for Partix {
    fn get_sampling_port_id(
        sampling_port_name: SamplingPortName,
    ) -> Result<SamplingPortId, ErrorReturnCode> {
        let name = name_of(&sampling_port_name, ErrorReturnCode::InvalidConfig)?;
        px::get_sampling_port_id(name)
            .map(|p| SamplingPortId::from(p.0))
            .map_err(rc)
    }

    fn get_sampling_port_status(
        sampling_port_id: SamplingPortId,
    ) -> Result<ApexSamplingPortStatus, ErrorReturnCode> {
        let s = px::get_sampling_port_status(sampling_id(sampling_port_id)?).map_err(rc)?;
        Ok(ApexSamplingPortStatus {
            refresh_period: s.refresh_period,
            max_message_size: s.max_message_size,
            port_direction: apex_direction(s.port_direction),
            last_msg_validity: validity(s.last_msg_validity),
        })
    }
}

fn queuing_id(id: QueuingPortId) -> Result<px::QueuingPortId, ErrorReturnCode> {
    id32(id).map(px::QueuingPortId)
}

impl ApexQueuingPortP4 for Partix {
    fn create_queuing_port(
        queuing_port_name: QueuingPortName,
        max_message_size: MessageSize,
        max_nb_message: MessageRange,
        port_direction: PortDirection,
        queuing_discipline: QueuingDiscipline,
    ) -> Result<QueuingPortId, ErrorReturnCode> {
        let name = name_of(&queuing_port_name, ErrorReturnCode::InvalidConfig)?;
        px::create_queuing_port(
            name,
            max_message_size,
            max_nb_message,
            direction(port_direction),
            discipline(queuing_discipline),
        )
        .map(|p| QueuingPortId::from(p.0))
        .map_err(rc)
    }

    fn send_queuing_message(
        queuing_port_id: QueuingPortId,
        message: &[ApexByte],
        time_out: ApexSystemTime,
    ) -> Result<(), ErrorReturnCode> {
        px::send_queuing_message(queuing_id(queuing_port_id)?, message, time_out).map_err(rc)
    }

    /// # Safety
    /// Safe for any `message` (partix checks its length: a buffer shorter than the message is
    /// `INVALID_PARAM`, and the message stays queued); `unsafe` in the trait only.
    unsafe fn receive_queuing_message(
        queuing_port_id: QueuingPortId,
        time_out: ApexSystemTime,
        message: &mut [ApexByte],
    ) -> Result<(MessageSize, QueueOverflow), ErrorReturnCode> {
        let n = px::receive_queuing_message(queuing_id(queuing_port_id)?, message, time_out)
            .map_err(rc)?;
        // A partix channel never overflows (module docs).
        Ok((n as MessageSize, false))
    }

    fn get_queuing_port_status(
        queuing_port_id: QueuingPortId,
    ) -> Result<QueuingPortStatus, ErrorReturnCode> {
        let s = px::get_queuing_port_status(queuing_id(queuing_port_id)?).map_err(rc)?;
        Ok(QueuingPortStatus {
            nb_message: s.nb_message,
            max_nb_message: s.max_nb_message,
            max_message_size: s.max_message_size,
            port_direction: apex_direction(s.port_direction),
            waiting_processes: s.waiting_processes as WaitingRange,
        })
    }

    fn clear_queuing_port(queuing_port_id: QueuingPortId) -> Result<(), ErrorReturnCode> {
        px::clear_queuing_port(queuing_id(queuing_port_id)?).map_err(rc)
    }
}

impl ApexQueuingPortP1 for Partix {
    fn get_queuing_port_id(
        queuing_port_name: QueuingPortName,
    ) -> Result<QueuingPortId, ErrorReturnCode> {
        let name = name_of(&queuing_port_name, ErrorReturnCode::InvalidConfig)?;
        px::get_queuing_port_id(name)
            .map(|p| QueuingPortId::from(p.0))
            .map_err(rc)
    }
}

fn discipline(d: QueuingDiscipline) -> px::QueuingDiscipline {
    match d {
        QueuingDiscipline::Fifo => px::QueuingDiscipline::Fifo,
        QueuingDiscipline::Priority => px::QueuingDiscipline::Priority,
    }
}

fn blackboard_id(id: BlackboardId) -> Result<px::BlackboardId, ErrorReturnCode> {
    id32(id).map(px::BlackboardId)
}

impl ApexBlackboardP1 for Partix {
    fn create_blackboard(
        blackboard_name: BlackboardName,
        max_message_size: MessageSize,
    ) -> Result<BlackboardId, ErrorReturnCode> {
        // A name that is not UTF-8 is "": partix refuses it after its table check.
        let name = name_of(&blackboard_name, ErrorReturnCode::InvalidParam).unwrap_or("");
        px::create_blackboard(name, max_message_size)
            .map(|b| BlackboardId::from(b.0))
            .map_err(rc)
    }

    fn display_blackboard(
        blackboard_id: BlackboardId,
        message: &[ApexByte],
    ) -> Result<(), ErrorReturnCode> {
        px::display_blackboard(self::blackboard_id(blackboard_id)?, message).map_err(rc)
    }

    /// # Safety
    /// Safe for any `message` (partix checks its length); `unsafe` in the trait only.
    unsafe fn read_blackboard(
        blackboard_id: BlackboardId,
        time_out: ApexSystemTime,
        message: &mut [ApexByte],
    ) -> Result<MessageSize, ErrorReturnCode> {
        px::read_blackboard(self::blackboard_id(blackboard_id)?, time_out, message)
            .map(|n| n as MessageSize)
            .map_err(rc)
    }

    fn clear_blackboard(blackboard_id: BlackboardId) -> Result<(), ErrorReturnCode> {
        px::clear_blackboard(self::blackboard_id(blackboard_id)?).map_err(rc)
    }

    fn get_blackboard_id(blackboard_name: BlackboardName) -> Result<BlackboardId, ErrorReturnCode> {
        let name = name_of(&blackboard_name, ErrorReturnCode::InvalidConfig)?;
        px::get_blackboard_id(name)
            .map(|b| BlackboardId::from(b.0))
            .map_err(rc)
    }

    fn get_blackboard_status(
        blackboard_id: BlackboardId,
    ) -> Result<BlackboardStatus, ErrorReturnCode> {
        let s = px::get_blackboard_status(self::blackboard_id(blackboard_id)?).map_err(rc)?;
        Ok(BlackboardStatus {
            empty_indicator: match s.empty_indicator {
                px::EmptyIndicator::Empty => EmptyIndicator::Empty,
                px::EmptyIndicator::Occupied => EmptyIndicator::Occupied,
            },
            max_message_size: s.max_message_size,
            waiting_processes: s.waiting_processes as WaitingRange,
        })
    }
}

fn buffer_id(id: BufferId) -> Result<px::BufferId, ErrorReturnCode> {
    id32(id).map(px::BufferId)
}

impl ApexBufferP1 for Partix {
    fn create_buffer(
        buffer_name: BufferName,
        max_message_size: MessageSize,
        max_nb_message: MessageRange,
        queuing_discipline: QueuingDiscipline,
    ) -> Result<BufferId, ErrorReturnCode> {
        let name = name_of(&buffer_name, ErrorReturnCode::InvalidParam).unwrap_or("");
        px::create_buffer(
            name,
            max_message_size,
            max_nb_message,
            discipline(queuing_discipline),
        )
        .map(|b| BufferId::from(b.0))
        .map_err(rc)
    }

    fn send_buffer(
        buffer_id: BufferId,
        message: &[ApexByte],
        time_out: ApexSystemTime,
    ) -> Result<(), ErrorReturnCode> {
        px::send_buffer(self::buffer_id(buffer_id)?, message, time_out).map_err(rc)
    }

    /// # Safety
    /// Safe for any `message` (partix checks its length); `unsafe` in the trait only.
    unsafe fn receive_buffer(
        buffer_id: BufferId,
        time_out: ApexSystemTime,
        message: &mut [ApexByte],
    ) -> Result<MessageSize, ErrorReturnCode> {
        px::receive_buffer(self::buffer_id(buffer_id)?, time_out, message)
            .map(|n| n as MessageSize)
            .map_err(rc)
    }

    fn get_buffer_id(buffer_name: BufferName) -> Result<BufferId, ErrorReturnCode> {
        let name = name_of(&buffer_name, ErrorReturnCode::InvalidConfig)?;
        px::get_buffer_id(name)
            .map(|b| BufferId::from(b.0))
            .map_err(rc)
    }

    fn get_buffer_status(buffer_id: BufferId) -> Result<BufferStatus, ErrorReturnCode> {
        let s = px::get_buffer_status(self::buffer_id(buffer_id)?).map_err(rc)?;
        Ok(BufferStatus {
            nb_message: s.nb_message,
            max_nb_message: s.max_nb_message,
            max_message_size: s.max_message_size,
            waiting_processes: s.waiting_processes as WaitingRange,
        })
    }
}

fn semaphore_id(id: SemaphoreId) -> Result<px::SemaphoreId, ErrorReturnCode> {
    id32(id).map(px::SemaphoreId)
}

impl ApexSemaphoreP1 for Partix {
    fn create_semaphore(
        semaphore_name: SemaphoreName,
        current_value: SemaphoreValue,
        maximum_value: SemaphoreValue,
        queuing_discipline: QueuingDiscipline,
    ) -> Result<SemaphoreId, ErrorReturnCode> {
        let name = name_of(&semaphore_name, ErrorReturnCode::InvalidParam).unwrap_or("");
        px::create_semaphore(
            name,
            current_value,
            maximum_value,
            discipline(queuing_discipline),
        )
        .map(|b| SemaphoreId::from(b.0))
        .map_err(rc)
    }

    fn wait_semaphore(
        semaphore_id: SemaphoreId,
        time_out: ApexSystemTime,
    ) -> Result<(), ErrorReturnCode> {
        px::wait_semaphore(self::semaphore_id(semaphore_id)?, time_out).map_err(rc)
    }

    fn signal_semaphore(semaphore_id: SemaphoreId) -> Result<(), ErrorReturnCode> {
        px::signal_semaphore(self::semaphore_id(semaphore_id)?).map_err(rc)
    }

    fn get_semaphore_id(semaphore_name: SemaphoreName) -> Result<SemaphoreId, ErrorReturnCode> {
        let name = name_of(&semaphore_name, ErrorReturnCode::InvalidConfig)?;
        px::get_semaphore_id(name)
            .map(|b| SemaphoreId::from(b.0))
            .map_err(rc)
    }

    fn get_semaphore_status(semaphore_id: SemaphoreId) -> Result<SemaphoreStatus, ErrorReturnCode> {
        let s = px::get_semaphore_status(self::semaphore_id(semaphore_id)?).map_err(rc)?;
        Ok(SemaphoreStatus {
            current_value: s.current_value,
            maximum_value: s.maximum_value,
            waiting_processes: s.waiting_processes as WaitingRange,
        })
    }
}

fn event_id(id: EventId) -> Result<px::EventId, ErrorReturnCode> {
    id32(id).map(px::EventId)
}

impl ApexEventP1 for Partix {
    fn create_event(event_name: EventName) -> Result<EventId, ErrorReturnCode> {
        let name = name_of(&event_name, ErrorReturnCode::InvalidParam).unwrap_or("");
        px::create_event(name)
            .map(|e| EventId::from(e.0))
            .map_err(rc)
    }

    fn set_event(event_id: EventId) -> Result<(), ErrorReturnCode> {
        px::set_event(self::event_id(event_id)?).map_err(rc)
    }

    fn reset_event(event_id: EventId) -> Result<(), ErrorReturnCode> {
        px::reset_event(self::event_id(event_id)?).map_err(rc)
    }

    fn wait_event(event_id: EventId, time_out: ApexSystemTime) -> Result<(), ErrorReturnCode> {
        px::wait_event(self::event_id(event_id)?, time_out).map_err(rc)
    }

    fn get_event_id(event_name: EventName) -> Result<EventId, ErrorReturnCode> {
        let name = name_of(&event_name, ErrorReturnCode::InvalidConfig)?;
        px::get_event_id(name)
            .map(|e| EventId::from(e.0))
            .map_err(rc)
    }

    fn get_event_status(event_id: EventId) -> Result<EventStatus, ErrorReturnCode> {
        let s = px::get_event_status(self::event_id(event_id)?).map_err(rc)?;
        Ok(EventStatus {
            event_state: match s.event_state {
                px::EventState::Down => EventState::Down,
                px::EventState::Up => EventState::Up,
            },
            waiting_processes: s.waiting_processes as WaitingRange,
        })
    }
}

/// A partix schedule id: out of range is an id no schedule has (-1), so partix's own checks
/// answer in their order (the mode first).
fn schedule_id(id: ScheduleId) -> px::ScheduleId {
    px::ScheduleId(i32::try_from(id).unwrap_or(-1))
}

impl ApexScheduleP2 for Partix {
    fn set_module_schedule(schedule_id: ScheduleId) -> Result<(), ErrorReturnCode> {
        px::set_module_schedule(self::schedule_id(schedule_id)).map_err(rc)
    }

    fn get_module_schedule_status() -> Result<ApexScheduleStatus, ErrorReturnCode> {
        let s = px::get_module_schedule_status();
        Ok(ApexScheduleStatus {
            time_of_last_schedule_switch: s.time_of_last_schedule_switch,
            current_schedule: ScheduleId::from(s.current_schedule.0),
            next_schedule: ScheduleId::from(s.next_schedule.0),
        })
    }

    fn get_module_schedule_id(schedule_name: ScheduleName) -> Result<ScheduleId, ErrorReturnCode> {
        let name = name_of(&schedule_name, ErrorReturnCode::InvalidConfig)?;
        px::get_module_schedule_id(name)
            .map(|s| ScheduleId::from(s.0))
            .map_err(rc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_convert_both_ways_and_bad_ones_are_refused() {
        let n = apex_name("order-q");
        assert_eq!(name_of(&n, ErrorReturnCode::InvalidParam), Ok("order-q"));
        let long = "x".repeat(40);
        assert_eq!(apex_name(&long), [b'x'; MAX_NAME_LENGTH]);
        assert_eq!(
            name_of(&[b'x'; MAX_NAME_LENGTH], ErrorReturnCode::InvalidParam),
            Ok("x".repeat(MAX_NAME_LENGTH).as_str())
        );
        let mut bad = [0u8; MAX_NAME_LENGTH];
        bad[0] = 0xff;
        assert_eq!(
            name_of(&bad, ErrorReturnCode::InvalidConfig),
            Err(ErrorReturnCode::InvalidConfig)
        );
        assert_eq!(
            id32(i64::from(i32::MAX) + 1),
            Err(ErrorReturnCode::InvalidParam)
        );
        assert_eq!(id32(7), Ok(7));
    }

    #[test]
    fn every_return_code_maps_to_its_namesake() {
        use px::ApexError::*;
        for (e, want) in [
            (NoAction, 1),
            (NotAvailable, 2),
            (InvalidParam, 3),
            (InvalidConfig, 4),
            (InvalidMode, 5),
            (TimedOut, 6),
        ] {
            assert_eq!(rc(e) as u32, want);
            assert_eq!(e.return_code(), want);
        }
    }
}
